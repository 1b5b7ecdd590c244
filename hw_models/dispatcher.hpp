// hw_models/dispatcher.hpp: the expert-parallel token dispatchers, their names and their
// traits (one table, hw_models/system.cpp): whether a dispatcher is an EP library with
// kernels of its own (DeepEP, HybridEP: Megatron's flex dispatcher) or NCCL's collectives,
// and the SMs each holds. Their cost models: hw_models/ep_dispatch.hpp (NCCL's all-to-all
// and all-gather through the collective model) and hw_models/ep_flows.hpp (the libraries).
#pragma once

#include "sim_core/names.hpp"

namespace moesim::hw_models {

enum class Dispatcher { alltoall, allgather, deepep, hybridep };
const sim_core::NameTable<Dispatcher>& dispatcher_names();

struct DispatcherTraits {
  bool ep_library = false;  // DeepEP / HybridEP: fused kernels on SMs they hold, EP > 1 only
  int default_sms = 0;      // default_dispatcher_sms
  int nccl_sms = 0;         // nccl_dispatcher_sms
};
const DispatcherTraits& dispatcher_traits(Dispatcher d);
// DeepEP or HybridEP (Megatron-Core's flex dispatcher backends), not NCCL's collectives.
inline bool is_ep_library(Dispatcher d) {
  return dispatcher_traits(d).ep_library;
}

// SMs a dispatcher's kernels take when the scenario does not say; 0 = not configurable
// (NCCL picks its own channels). DeepEP: 20 SMs, as DeepSeek-V3 trained with (arXiv
// 2412.19437, section 3.2.2). HybridEP: 32 SMs, as in the GB200 journey's step 11.
inline int default_dispatcher_sms(Dispatcher d) {
  return dispatcher_traits(d).default_sms;
}

// SMs the NCCL dispatchers' kernels hold while they run: one CTA (one SM) per channel the
// collective spreads over. The all-to-all is NCCL's grouped send/recv over its p2p
// channels, pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS = 64))
// (NVIDIA/nccl src/graph/paths.cc ncclTopoComputeP2pChannels @ 5067397c), which 8-GPU
// H100 and B200 nodes report as "32 p2p channels" at init (NCCL_DEBUG=INFO logs in public
// issues): 32. The all-gather dispatcher's all-gather and reduce-scatter run on the
// collective channels, "24 coll channels" in the same H100 logs: 24. DeepEP and HybridEP: 0
// (their SMs are default_dispatcher_sms or the scenario's).
inline int nccl_dispatcher_sms(Dispatcher d) {
  return dispatcher_traits(d).nccl_sms;
}

}  // namespace moesim::hw_models
