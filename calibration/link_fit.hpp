// calibration/link_fit.hpp: the fraction of a link's capacity NCCL reaches, and NVLS's
// latency, each fitted from measured bus bandwidths.
//
// The collective model (hw_models/collectives.hpp) moves flows at eta x capacity on
// each link kind. For one measured point (op, ranks, bytes, busbw) the fitter finds the
// eta of the given link kind (or the all-to-all's factor) at which the model's bus bandwidth equals
// the measurement, by bisection on [0.01, 1] (busbw rises monotonically with eta). NVLS's latency
// is found the same way on [0, 1000] us (busbw falls as it grows). Several points of one
// parameter (measured by different tools) are fitted jointly:
//   eta = argmin sum_points ln^2(busbw_model(eta) / busbw_measured)
// by golden section on the same range. The points and which systems each fit applies to are
// in calibration/measurements/nccl-busbw.json; the network's also takes the rows of
// calibration/measurements/mcore-moe-ep-latency.json whose role is 'fit'.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw_models/collectives.hpp"
#include "hw_models/system.hpp"

namespace moesim::calibration {

struct BusbwPoint {
  hw_models::Collective op = hw_models::Collective::all_reduce;
  int ranks = 8;
  int gpus_per_domain = 0;  // 0: the system's
  double bytes = 0;
  double busbw_GBps = 0;
  // The algorithm the measurement ran; absent: NCCL's choice, the fastest.
  std::optional<hw_models::CollectiveAlgorithm> algorithm = hw_models::CollectiveAlgorithm::ring;
};

// The model's bus bandwidth for the point on system `s` as it is.
double model_busbw(const hw_models::SystemSpec& s, const BusbwPoint& p);

// nvlink and network: the links' efficiency for every NCCL transfer; alltoall: the
// all-to-all's fraction of it; nvls_latency: NVLS all-reduce's latency in us
// (SystemSpec::comm).
enum class LinkClass { nvlink, network, alltoall, nvls_latency };
// The parameter of `s.comm` that `link` names (nvls_latency: the latency in us).
std::optional<hw_models::Param>& link_param(hw_models::SystemSpec& s, LinkClass link);
const std::optional<hw_models::Param>& link_param(const hw_models::SystemSpec& s, LinkClass link);
// The value of `link` on `s` that reproduces the point. Throws std::invalid_argument
// when no value in range does (the point is not bound by that parameter).
double fit_link_efficiency(hw_models::SystemSpec s, LinkClass link, const BusbwPoint& p);
// Several points: the least-squares value in log space (one point: the bisection above).
// Throws std::invalid_argument without points or when the minimum is at the range's end.
double fit_link_efficiency(const hw_models::SystemSpec& s, LinkClass link,
                           const std::vector<BusbwPoint>& points);
// The bus bandwidth nccl-tests would report for one of Megatron's EP exchanges through NCCL's
// all-to-all: `bytes` sent by each of `ranks` ranks in `time_us` (busbw = S / t x (n-1)/n).
BusbwPoint alltoall_point(int ranks, int gpus_per_domain, double bytes, double time_us);

// The ring-group factor (SystemSpec::comm.ring_group_efficiency) at one group size from
// one table's measurements of the same collectives at that size and at the reference size
// the link efficiency holds for: the mean of busbw(n) / busbw(reference) over the pairs,
// a ratio inside one measurement so that the table's own level does not enter. Throws
// std::invalid_argument without pairs or for a bandwidth that is not positive.
double fit_ring_group_efficiency(const std::vector<std::pair<double, double>>& at_n_and_reference);

}  // namespace moesim::calibration
