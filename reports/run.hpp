// reports/run.hpp: `moesim run`: predict one scenario and report it.
//
//   TFLOPS/GPU = model FLOPs per step (Megatron accounting) / (step time x GPUs x 1e12)
//   MFU        = TFLOPS/GPU / dense BF16 peak
// Memory: per pipeline rank, weights (BF16) + main gradients (FP32) + optimizer (FP32
// master + two moments), the last two sharded by the distributed optimizer over DP
// (dense) and expert-DP (experts), all of them under Megatron-FSDP (plus two layers'
// gathered parameters and one layer's unsharded gradients); the optimizer in host memory
// with offload 'optimizer'; plus activations: the forward outputs of each layer kept for
// backward (recomputed modules keep only their input; offloaded modules' in host memory
// but for the two chunks being offloaded and reloaded) times the most forward work items
// in flight on that rank, counted from the rank's pipeline order, plus one layer's
// temporaries (NCCL dispatchers' permuted copies); CUDA graphs add their static
// input/output buffers for the items in flight (run.cpp, workload::CaptureSet); the EP
// library's preallocated buffers (hw_models/ep_buffers.hpp). Not modeled: allocator
// fragmentation, CUDA graph memory pools beyond the static buffers, NCCL's own buffers.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::reports {

struct Prediction {
  schedules::StepResult step;
  double flops_per_step = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  std::vector<double> rank_memory_gib;      // graph static buffers included
  std::vector<std::int64_t> cuda_graphs_per_rank;  // captured graphs (L x M x 2, or 1 full)
  std::vector<double> graph_static_gib;     // their static buffers at the memory peak
  double peak_memory_gib = 0;
  // The peak rank's memory by part (GiB): BF16 weights and FP32 gradients; FP32 main
  // weights and Adam moments (sharded by the distributed optimizer); activations in
  // flight at the peak; CUDA graph static buffers; the EP dispatcher's preallocated
  // buffers (hw_models/ep_buffers.hpp).
  struct MemoryParts {
    double weights_grads = 0, optimizer = 0, activations = 0, graph_buffers = 0, ep_buffers = 0;
  } peak_memory_parts;
  double reserved_memory_gib = 0;  // the peak with the allocator's fragmentation allowance
  bool fits_in_memory = true;
  double ep_load = 1;  // the hottest EP rank's routed tokens over the balanced (workload/routing.hpp)
  double wall_s = 0;  // simulation wall time
};

Prediction predict(const config::Scenario& sc, const schedules::StepOptions& opt = {});
nlohmann::ordered_json run_json(const config::Scenario& sc, const Prediction& p);
std::string run_text(const config::Scenario& sc, const Prediction& p);
// Chrome trace event format (chrome://tracing, ui.perfetto.dev): one process per
// simulated rank, one thread per GPU stream plus the host thread.
void write_trace(const Prediction& p, std::ostream& out);

// The measured metric's predicted value.
double predicted_metric(const config::Measured& m, const Prediction& p);

}  // namespace moesim::reports
