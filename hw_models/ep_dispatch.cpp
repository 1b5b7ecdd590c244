#include "hw_models/ep_dispatch.hpp"

#include <algorithm>
#include <stdexcept>

namespace moesim::hw_models {
double ep_comm_seconds(Dispatcher d, const SystemSpec&, const CommModel& comm, const EpQuery& q) {
  if (is_ep_library(d))
    throw std::invalid_argument(
        "ep_comm_seconds: DeepEP and HybridEP are priced by their kernels' flows "
        "(hw_models::ep_library_time)");
  if (q.group.size <= 1) return 0;
  // All-gather dispatching moves every token to every rank: priced as all-to-all until
  // the network issue models it.
  return comm.all_to_all(q.bytes, q.group);
}

namespace {
// C(n - m, k) / C(n, k): none of k draws without replacement from n hits m marked items.
double none_of(double n, double m, std::int64_t k) {
  double p = 1;
  for (std::int64_t i = 0; i < k; ++i)
    p *= std::max(0.0, n - m - static_cast<double>(i)) / (n - static_cast<double>(i));
  return p;
}
double choose(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (std::int64_t i = 1; i <= r; ++i)
    c = c * static_cast<double>(n - r + i) / static_cast<double>(i);
  return c;
}
}  // namespace

double expected_destination_ranks(std::int64_t experts, std::int64_t ranks, std::int64_t topk,
                                  std::int64_t groups, std::int64_t topk_groups) {
  if (ranks <= 1) return 1;
  const double e = static_cast<double>(experts), r = static_cast<double>(ranks);
  const bool limited = groups > 1 && topk_groups > 0 && topk_groups < groups &&
                       experts % groups == 0 && (ranks % groups == 0 || groups % ranks == 0);
  if (!limited) return r * (1 - none_of(e, e / r, topk));
  const double g = static_cast<double>(groups), pool = static_cast<double>(topk_groups) * e / g;
  if (ranks >= groups)
    return r * (static_cast<double>(topk_groups) / g) * (1 - none_of(pool, e / r, topk));
  const std::int64_t per_rank = groups / ranks;
  double p = 0;
  for (std::int64_t j = 1; j <= std::min(per_rank, topk_groups); ++j)
    p += choose(per_rank, j) * choose(groups - per_rank, topk_groups - j) /
         choose(groups, topk_groups) * (1 - none_of(pool, static_cast<double>(j) * e / g, topk));
  return r * p;
}

}  // namespace moesim::hw_models
