// hw_models/ep_dispatch.hpp: time of one expert-parallel dispatch or combine through
// NCCL (the all-to-all and all-gather dispatchers), and the routing statistics the EP
// libraries' flow model shares.
//
//   NCCL all-to-all: the collective as flows over the topology at NCCL's link
//   efficiencies (CommModel::all_to_all; comm.alltoall_efficiency and the link
//   efficiencies fitted across systems from nccl-busbw.json, calibration/link_fit.hpp).
// S is the bytes a rank sends: routed token copies x hidden x element size (one copy per
// expert); NCCL's all-to-all moves exactly that (the permute has made the copies).
// DeepEP and HybridEP are priced by their kernels' flows (hw_models/ep_flows.hpp,
// ep_library_time), in `moesim comm` and in the step simulation alike.
#pragma once

#include <cstdint>
#include <optional>

#include "hw_models/comm_cost.hpp"
#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"

namespace moesim::hw_models {

struct EpQuery {
  double bytes = 0;  // sent per rank
  CommGroup group;
  bool combine = false;
};

// NCCL's dispatchers only; throws std::invalid_argument for DeepEP and HybridEP, whose
// kernels are priced as flows (hw_models::ep_library_time).
double ep_comm_seconds(Dispatcher d, const SystemSpec& sys, const CommModel& comm,
                       const EpQuery& q);

// Expected number of distinct EP ranks a token is sent to, its own included, when its
// top-k experts are uniform over `experts` spread evenly on `ranks`:
//   D = R (1 - C(E - E/R, k) / C(E, k))        (E = 256, R = 32, k = 8: D = 7.27)
// With group-limited routing (Megatron-Core group_limited_topk, moe_utils.py 673-: the
// experts in `groups` contiguous blocks, a token's k experts from `topk_groups` of them;
// DeepSeek-V3: 8 and 4; random router logits, as forced balancing draws them (router.py
// 859-861 at d12f6c8c), make the chosen groups a uniform G'-subset S and the experts a
// uniform k-subset of their P = G' E / G): rank i, holding the contiguous experts
// [i E/R, (i+1) E/R), receives nothing with probability C(P - o_i(S), k) / C(P, k), o_i(S)
// its experts inside S, averaged over the C(G, G') subsets (counted group by group):
//   D = sum_i (1 - E_S[C(P - o_i(S), k)] / C(P, k))
// With R >= G and G | R this is R (G'/G) (1 - C(P - E/R, k) / C(P, k)) (EP32: D = 6.60);
// `ranks` may be NVLink domains, each holding E/N contiguous experts (the destination
// domains). DeepEP and HybridEP send a token once per destination rank, not once per
// expert, and their published bandwidths count exactly these bytes: a rank receives
// tokens x D x hidden x element size (docs/research/ep-benchmark-definitions.md).
double expected_destination_ranks(std::int64_t experts, std::int64_t ranks, std::int64_t topk,
                                  std::int64_t groups = 0, std::int64_t topk_groups = 0);

}  // namespace moesim::hw_models
