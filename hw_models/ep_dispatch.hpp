// hw_models/ep_dispatch.hpp: time of one expert-parallel dispatch or combine, per
// dispatcher, as registered implementations.
//
//   NCCL all-to-all:  t = alpha + S (n-1)/n / busbw           (measured all-to-all bus bandwidth)
//   DeepEP, HybridEP: t = alpha + S / (bw_measured x min(1, sms / sms_saturation) x tuned)
// S is the bytes a rank sends: routed token copies x hidden x element size (one copy per
// expert). NCCL's all-to-all moves exactly that (the permute has made the copies).
// DeepEP and HybridEP move one copy per destination rank, and their benchmarks count
// those bytes (expected_destination_ranks below: 6.6 instead of 8 at DeepSeek-V3's EP32),
// so charging 8 copies at the benchmark bandwidth makes the kernels 1.2x longer than the
// benchmark would; NVIDIA's training profiles show kernels that long (HybridEP dispatch
// 0.7 ms at journey step 11, DeepEP 1.0 / 2.1 ms at steps 6 and 10; docs/research/
// journey-residuals.md), so the step simulation keeps the per-expert count until the
// flow model of the dispatch kernels explains the gap. The
// libraries' figures are measured algorithm bandwidths at one SM count; below the SM
// count where the published benchmarks saturate, bandwidth falls in proportion (a per-SM
// throughput limit). Without a measurement for the system, the link-bandwidth
// alpha-beta model of CommModel applies. The network issue replaces these tables by a
// topology and flow model.
#pragma once

#include <cstdint>
#include <optional>

#include "hw_models/comm_cost.hpp"
#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"

namespace moesim::hw_models {

struct EpQuery {
  double bytes = 0;   // sent per rank
  CommGroup group;
  int sms = 0;        // SMs given to the dispatcher (DeepEP, HybridEP)
  bool combine = false;
  bool tuned = false; // the library is tuned for the system (EpBandwidth::tuned_factor)
};

double ep_comm_seconds(Dispatcher d, const SystemSpec& sys, const CommModel& comm, const EpQuery& q);

// The preset's entries of a dispatcher's library inside and across NVLink domains (both
// null for NCCL's dispatchers, which have no library entries).
struct EpEntries {
  const std::optional<EpBandwidth>* nvlink = nullptr;
  const std::optional<EpBandwidth>* network = nullptr;
};
EpEntries ep_entries(const SystemSpec& s, Dispatcher d);

// Expected number of distinct EP ranks a token is sent to, its own included, when its
// top-k experts are uniform over `experts` spread evenly on `ranks`:
//   D = R (1 - C(E - E/R, k) / C(E, k))        (E = 256, R = 32, k = 8: D = 7.27)
// With group-limited routing (DeepSeek-V3: n_group 8, topk_group 4; random router
// logits make the chosen groups a uniform choice) the k experts come from a pool of
// G' E / G experts in G' of the G groups. With R >= G each group spans R/G ranks:
//   D = R (G'/G) (1 - C(P - E/R, k) / C(P, k)),   P = G' E / G   (EP32: D = 6.60)
// and with fewer ranks than groups a rank holds g = G/R groups, j of which are chosen
// with the hypergeometric probability C(g, j) C(G - g, G' - j) / C(G, G'):
//   D = R sum_j h(j) (1 - C(P - j E/G, k) / C(P, k)).
// DeepEP and HybridEP send a token once per destination rank, not once per expert, and
// their published bandwidths count exactly these bytes: a rank receives
// tokens x D x hidden x element size (docs/research/ep-benchmark-definitions.md).
double expected_destination_ranks(std::int64_t experts, std::int64_t ranks, std::int64_t topk,
                                  std::int64_t groups = 0, std::int64_t topk_groups = 0);

}  // namespace moesim::hw_models
