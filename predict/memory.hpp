// predict/memory.hpp: memory per pipeline rank, without simulating.
//
// Per pipeline rank: weights (BF16) + main gradients (FP32, or BF16 with
// main_grads_dtype bf16) + optimizer (FP32 master + its states), the last two sharded by
// the distributed optimizer over DP x CP (dense) and expert-DP (experts), all of them
// under Megatron-FSDP (plus two units' gathered parameters and one unit's unsharded
// gradients); the optimizer in host memory with offload 'optimizer'; plus activations:
// what each layer's forward kernels save for backward (recomputed modules keep only their
// input; offloaded modules' in host memory but for the two chunks being offloaded and
// reloaded) times the forward work items in flight at the worst point of the rank's own
// pipeline order, plus one layer's temporaries (the NCCL dispatchers' permuted copies);
// CUDA graphs add their static input buffers for the items in flight
// (workload::CaptureSet); the EP library's preallocated buffers
// (hw_models/ep_buffers.hpp). fits_in_memory compares the peak times (1 + the
// allocator's fragmentation allowance) with the GPU's HBM. Not modeled: fragmentation
// beyond that allowance, CUDA graph memory pools beyond the static buffers, NCCL's
// own buffers. Checked against Megatron-Core's DeepSeek-V3 anatomy
// (docs/research/megatron-memory.md).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::predict {

// One rank's memory by part (GiB): BF16 weights and main gradients; FP32 main weights
// and optimizer states (sharded by the distributed optimizer); activations in flight at
// the peak; CUDA graph static buffers; the EP dispatcher's preallocated buffers.
struct MemoryParts {
  double weights_grads = 0, optimizer = 0, activations = 0, graph_buffers = 0, ep_buffers = 0;
  // The parts by name, as `run --json`'s peak_memory_parts_gib keys them, in its order.
  std::array<std::pair<const char*, double>, 5> named() const {
    return {{{"weights_grads", weights_grads},
             {"optimizer", optimizer},
             {"activations", activations},
             {"ep_buffers", ep_buffers},
             {"graph_buffers", graph_buffers}}};
  }
};

struct MemoryEstimate {
  std::vector<double> rank_memory_gib;             // per pipeline rank, graph buffers included
  std::vector<std::int64_t> cuda_graphs_per_rank;  // captured graphs (L x M x 2, or 1 full)
  std::vector<double> graph_static_gib;            // their static buffers at the memory peak
  double peak_memory_gib = 0;
  MemoryParts peak_parts;          // of the rank with the peak
  double reserved_memory_gib = 0;  // the peak with the allocator's fragmentation allowance
  bool fits_in_memory = true;
};

// The hottest EP rank's tokens over the balanced, for the scenario's routing
// (workload/routing.hpp): tokens per EP rank per microbatch are mbs x seq / cp.
double scenario_ep_load(const config::Scenario& sc);

// The memory estimate at a given EP load (scenario_ep_load(sc)); cheap next to a step
// simulation, so sweeps prune layouts that do not fit before simulating them.
MemoryEstimate estimate_memory(const config::Scenario& sc, double ep_load);

}  // namespace moesim::predict
