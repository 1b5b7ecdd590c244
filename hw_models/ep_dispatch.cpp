#include "hw_models/ep_dispatch.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

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
                       experts % groups == 0 && experts % ranks == 0;
  if (!limited) return r * (1 - none_of(e, e / r, topk));
  // Rank i holds experts [i E/R, (i+1) E/R), group g experts [g E/G, (g+1) E/G). For a
  // uniform choice S of G' groups, rank i receives nothing with probability
  // C(P - o_i(S), k) / C(P, k), o_i(S) its experts inside S; the subsets of j groups with
  // overlap o are counted group by group (ways[j][o]), exact for any alignment.
  const std::int64_t per_group = experts / groups, per_rank = experts / ranks;
  const double pool = static_cast<double>(topk_groups * per_group);
  const auto k = static_cast<std::size_t>(topk_groups);
  double d = 0;
  for (std::int64_t i = 0; i < ranks; ++i) {
    std::vector<std::vector<double>> ways(
        k + 1, std::vector<double>(static_cast<std::size_t>(per_rank) + 1));
    ways[0][0] = 1;
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t lo = std::max(i * per_rank, g * per_group),
                         hi = std::min((i + 1) * per_rank, (g + 1) * per_group);
      const auto c = static_cast<std::size_t>(std::max<std::int64_t>(0, hi - lo));
      for (std::size_t j = std::min<std::size_t>(k, static_cast<std::size_t>(g) + 1); j >= 1; --j)
        for (std::size_t o = ways[j].size(); o-- > c;) ways[j][o] += ways[j - 1][o - c];
    }
    double none = 0;
    for (std::size_t o = 0; o < ways[k].size(); ++o)
      none += ways[k][o] * none_of(pool, static_cast<double>(o), topk);
    d += 1 - none / choose(groups, topk_groups);
  }
  return d;
}

}  // namespace moesim::hw_models
