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
// (hw_models/ep_buffers.hpp).
//
// Two kinds of memory: what PyTorch's caching allocator holds (the tensors above but
// the EP buffers: its max_memory_allocated, times 1 + the fragmentation allowance for
// max_memory_reserved), and what lives beside it (cudaMalloc and cuMem outside the
// allocator: the EP library's buffers, the CUDA context, NCCL's per-communicator
// buffers, TransformerEngine's userbuffers; runtime_outside_allocator below).
// fits_in_memory compares reserved + beside with the capacity CUDA reports
// (gpu.usable_GiB). Not modeled: fragmentation beyond the allowance, CUDA graph
// memory pools beyond the static buffers. Checked against Megatron-Core's DeepSeek-V3
// anatomy (docs/research/megatron-memory.md) and the measured points of
// scenarios/memory/ (docs/research/memory-as-the-driver-counts-it.md).
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
// `runtime`: the CUDA context, NCCL's and TransformerEngine's communication buffers
// (outside the allocator, like ep_buffers).
struct MemoryParts {
  double weights_grads = 0, optimizer = 0, activations = 0, graph_buffers = 0, ep_buffers = 0,
         runtime = 0;
  // The parts by name, as `run --json`'s peak_memory_parts_gib keys them, in its order.
  std::array<std::pair<const char*, double>, 6> named() const {
    return {{{"weights_grads", weights_grads},
             {"optimizer", optimizer},
             {"activations", activations},
             {"ep_buffers", ep_buffers},
             {"graph_buffers", graph_buffers},
             {"runtime", runtime}}};
  }
  // Through PyTorch's caching allocator (its max_memory_allocated) and beside it.
  double allocated() const { return weights_grads + optimizer + activations + graph_buffers; }
  double outside_allocator() const { return ep_buffers + runtime; }
};

// Device memory outside PyTorch's allocator on every rank, bytes, by source:
//   context: the CUDA context with the kernels a training step loads lazily
//     (CUDA_MODULE_LOADING=LAZY, PyTorch's default since 1.13): 0.59 GiB outside
//     PyTorch after CUDA's initialisation (stas00/ml-engineering debug/pytorch.md); the
//     lazy modules of TE, cuDNN and cuBLAS add to it, so a floor;
//   nccl: per communicator the job uses, channels x the three protocols' buffers per
//     connection (LL 0.5 MiB + LL128 4.6875 MiB + Simple 4 MiB = 9.1875 MiB, NCCL
//     src/init.cc, src/include/device.h; 9.19 MiB a connection measured), 24 channels
//     (NCCL's choice on 8 H100, its INFO lines): 220.5 MiB a ring communicator; the
//     communicators: DP x CP (dense gradients), TP, CP, EP and expert-DP (MoE), the
//     model-parallel group of the gradient norm (TP x PP), the pipeline neighbours and
//     the embedding group (pp > 1); NCCL's all-to-all dispatcher adds its peer buffers,
//     3.28 GB over 7 NVLink peers on 8 H100 (NVIDIA/nccl issue 1685), per NVLink peer up
//     to those 7 (NCCL deals its p2p channels out over the peers: the bound assumed);
//   userbuffers (framework.tp_comm_overlap with TP > 1 and sequence parallelism):
//     TransformerEngine's 12 buffers of the
//     full (seq x mbs / cp) x hidden tensor (initialize_ub: 4 ring-exchange, 2 pipeline,
//     4 bulk, 2 external names), the 8 all-gather ones in FP8 (1 byte) under FP8
//     recipes, BF16 otherwise (docs/research/memory-as-the-driver-counts-it.md 3.5).
struct RuntimeMemory {
  double context = 0, nccl = 0, userbuffers = 0;
  double total() const { return context + nccl + userbuffers; }
};
RuntimeMemory runtime_outside_allocator(const config::Scenario& sc);

// The caching allocator's reserve beyond its peak as measured (max reserved over max
// allocated, less 1): Megatron-LM PR 1913's DeepSeek-V3 proxy on 64 H100 without
// offloading, its four pipeline ranks 74,306/65,204, 58,770/52,228, 51,772/45,201 and
// 56,328/48,166 MiB (docs/research/memory-as-the-driver-counts-it.md 5B; no
// expandable_segments stated). The only published points with both counters.
inline constexpr std::array<double, 4> kMeasuredAllocatorReserve{0.140, 0.125, 0.145, 0.169};

// How much the caching allocator may reserve beyond the peak's allocated part before the
// peak rank no longer fits: (capacity - memory beside the allocator) / allocated - 1.
inline double allocator_room(const MemoryParts& peak, double capacity_gib) {
  const double allocated = peak.allocated();
  return allocated > 0 ? (capacity_gib - peak.outside_allocator()) / allocated - 1 : 1e9;
}

struct MemoryEstimate {
  std::vector<double> rank_memory_gib;             // per pipeline rank, graph buffers included
  std::vector<MemoryParts> rank_parts;             // per pipeline rank, by part
  std::vector<std::int64_t> cuda_graphs_per_rank;  // captured graphs (L x M x 2, or 1 full)
  std::vector<double> graph_static_gib;            // their static buffers at the memory peak
  double peak_memory_gib = 0;
  MemoryParts peak_parts;  // of the rank with the peak
  // The largest rank's allocator segments (allocated x (1 + the fragmentation
  // allowance)) plus the memory beside the allocator: what must fit in gpu.usable_GiB.
  double reserved_memory_gib = 0;
  bool fits_in_memory = true;
  // A rank's figure as a PyTorch counter reports it (what measured.peak_memory_gib is).
  double counter_gib(std::size_t rank, bool reserved, double fragmentation) const {
    return rank_parts[rank].allocated() * (reserved ? 1 + fragmentation : 1);
  }
};

// The hottest EP rank's tokens over the balanced, for the scenario's routing
// (workload/routing.hpp): tokens per EP rank per microbatch are mbs x seq / cp.
double scenario_ep_load(const config::Scenario& sc);

// The memory estimate at a given EP load (scenario_ep_load(sc)); cheap next to a step
// simulation, so sweeps prune layouts that do not fit before simulating them.
MemoryEstimate estimate_memory(const config::Scenario& sc, double ep_load);

// Why a layout does not fit (fits_in_memory false): "pipeline rank R needs X GiB (Y with the
// fragmentation allowance), more than the Z GiB CUDA reports on a GPU", R the rank that needs
// the most; `run` warns with it and a sweep or plan row that does not fit carries it.
std::string memory_shortfall(const config::Scenario& sc, const std::vector<double>& rank_gib,
                             double reserved_gib);

}  // namespace moesim::predict
