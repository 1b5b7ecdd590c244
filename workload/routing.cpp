#include "workload/routing.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>

namespace moesim::workload {

double hottest_rank_load(const std::vector<double>& counts, std::int64_t ep) {
  const auto E = static_cast<std::int64_t>(counts.size());
  if (ep < 1 || E % ep != 0) throw std::invalid_argument("hottest_rank_load: experts must split over the EP ranks");
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (!(total > 0)) throw std::invalid_argument("hottest_rank_load: no tokens routed");
  const std::int64_t per = E / ep;
  double hottest = 0;
  for (std::int64_t r = 0; r < ep; ++r)
    hottest = std::max(hottest, std::accumulate(counts.begin() + r * per, counts.begin() + (r + 1) * per, 0.0));
  return hottest / (total / static_cast<double>(ep));
}

namespace {

// q_e = min(1, c p_e) with sum q_e = k (c by bisection; sum rises with c).
std::vector<double> selection_probabilities(const std::vector<double>& p, double k) {
  const auto sum_at = [&](double c) {
    double s = 0;
    for (double x : p) s += std::min(1.0, c * x);
    return s;
  };
  double lo = 0, hi = 1;
  while (sum_at(hi) < k) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (sum_at(mid) < k ? lo : hi) = mid;
  }
  std::vector<double> q(p.size());
  for (std::size_t e = 0; e < p.size(); ++e) q[e] = std::min(1.0, hi * p[e]);
  return q;
}

// A standard normal draw (Box-Muller on the engine's own bits: the same on every
// standard library, unlike std::normal_distribution).
double standard_normal(std::mt19937_64& g) {
  const double u1 = (static_cast<double>(g() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = static_cast<double>(g() >> 11) * 0x1.0p-53;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

std::vector<double> sampled_counts(const Routing& r, std::int64_t E, double k, double n, std::uint64_t layer) {
  std::mt19937_64 g(r.seed * 0x9E3779B97F4A7C15ULL + layer);
  std::vector<double> p(static_cast<std::size_t>(E), 1.0);
  if (r.distribution == RoutingDistribution::zipf) {
    std::vector<std::size_t> rank(p.size());
    std::iota(rank.begin(), rank.end(), std::size_t{0});
    // Fisher-Yates on the engine's bits (std::shuffle's algorithm is not specified).
    for (std::size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[g() % i]);
    for (std::size_t e = 0; e < p.size(); ++e) p[e] = std::pow(static_cast<double>(rank[e] + 1), -r.alpha);
  }
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  std::vector<double> counts;
  for (double q : selection_probabilities(p, k))
    counts.push_back(std::max(0.0, n * q + std::sqrt(n * q * (1 - q)) * standard_normal(g)));
  return counts;
}

}  // namespace

namespace {
// G after Megatron's token dropping: each expert keeps at most cf x its balanced count;
// the hottest rank's kept copies over the balanced (all routed copies / ep).
double capped_load(const std::vector<double>& counts, std::int64_t ep, std::optional<double> cf) {
  if (!cf) return hottest_rank_load(counts, ep);
  std::vector<double> kept = counts;
  const double mean = std::accumulate(counts.begin(), counts.end(), 0.0) / static_cast<double>(counts.size());
  for (double& c : kept) c = std::min(c, *cf * mean);
  const double share = std::accumulate(kept.begin(), kept.end(), 0.0) / (mean * static_cast<double>(counts.size()));
  return hottest_rank_load(kept, ep) * share;
}
}  // namespace

double ep_gating_load(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                      std::optional<double> capacity_factor) {
  if (!m.is_moe()) return 1;
  if (r.balance == RoutingBalance::forced) return capacity_factor ? std::min(1.0, *capacity_factor) : 1.0;
  const std::int64_t layers = std::max<std::int64_t>(1, m.num_moe_layers());
  double sum = 0;
  for (std::int64_t l = 0; l < layers; ++l) {
    if (r.balance == RoutingBalance::histogram) {
      if (r.histogram.empty()) throw std::invalid_argument("ep_gating_load: empty routing histogram");
      sum += capped_load(r.histogram[static_cast<std::size_t>(l) % r.histogram.size()], ep, capacity_factor);
    } else {
      sum += capped_load(sampled_counts(r, m.num_experts, static_cast<double>(m.topk),
                                        tokens * static_cast<double>(ep), static_cast<std::uint64_t>(l)),
                         ep, capacity_factor);
    }
  }
  return sum / static_cast<double>(layers);
}

}  // namespace moesim::workload
