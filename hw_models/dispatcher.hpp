// hw_models/dispatcher.hpp: names of the expert-parallel token dispatchers.
// Their cost models (NCCL all-to-all, DeepEP, HybridEP) arrive with the network issue;
// each will register beside this table.
#pragma once

#include "sim_core/names.hpp"

namespace moesim::hw_models {

enum class Dispatcher { alltoall, allgather, deepep, hybridep };
const sim_core::NameTable<Dispatcher>& dispatcher_names();

// SMs a dispatcher's kernels take when the scenario does not say; 0 = not configurable
// (NCCL picks its own channels). DeepEP: 20 SMs, as DeepSeek-V3 trained with (arXiv
// 2412.19437, section 3.2.2). HybridEP: 32 SMs, as in the GB200 journey's step 11.
int default_dispatcher_sms(Dispatcher d);

// SMs the NCCL dispatchers' kernels hold while they run: one CTA (one SM) per channel the
// collective spreads over. The all-to-all is NCCL's grouped send/recv over its p2p
// channels, pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS = 64))
// (NVIDIA/nccl src/graph/paths.cc ncclTopoComputeP2pChannels @ 5067397c), which 8-GPU
// H100 and B200 nodes report as "32 p2p channels" at init (NCCL_DEBUG=INFO logs in public
// issues): 32. The all-gather dispatcher's all-gather and reduce-scatter run on the
// collective channels, "24 coll channels" in the same H100 logs: 24. DeepEP and HybridEP: 0
// (their SMs are default_dispatcher_sms or the scenario's).
int nccl_dispatcher_sms(Dispatcher d);

}  // namespace moesim::hw_models
