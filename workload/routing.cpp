#include "workload/routing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string_view>

namespace moesim::workload {

double hottest_rank_load(const std::vector<double>& counts, std::int64_t ep) {
  const auto E = static_cast<std::int64_t>(counts.size());
  if (ep < 1 || E % ep != 0)
    throw std::invalid_argument("hottest_rank_load: experts must split over the EP ranks");
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (!(total > 0)) throw std::invalid_argument("hottest_rank_load: no tokens routed");
  const std::int64_t per = E / ep;
  double hottest = 0;
  for (std::int64_t r = 0; r < ep; ++r)
    hottest = std::max(
        hottest, std::accumulate(counts.begin() + r * per, counts.begin() + (r + 1) * per, 0.0));
  return hottest / (total / static_cast<double>(ep));
}

namespace {

struct FamilyBalance {
  std::string_view model_type;
  RoutingBalance balance;
  double coefficient;  // aux_loss only
  std::string_view source;
  bool global_batch = false;  // TrainedRouting::global_batch
};

// routing.hpp's table.
constexpr std::array<FamilyBalance, 8> kFamilyBalance{{
    {"deepseek_v3", RoutingBalance::loss_free, 0,
     "DeepSeek-V3's expert bias, as Megatron-MoE-ModelZoo's DeepSeek-V3.yaml trains it"},
    {"kimi_k2", RoutingBalance::loss_free, 0,
     "Kimi-K2's expert bias, as Megatron-MoE-ModelZoo's Kimi-K2.yaml trains it"},
    {"deepseek_v2", RoutingBalance::aux_loss, 1e-3, "Megatron-MoE-ModelZoo's DeepSeek-V2.yaml"},
    {"qwen3_moe", RoutingBalance::aux_loss, 1e-3,
     "Pai-Megatron-Patch's run_mcore_qwen3.sh and Megatron-LM's Qwen3 conf", true},
    {"qwen3_next", RoutingBalance::aux_loss, 1e-3,
     "Megatron-Bridge's qwen3_next_bridge.py 70-71 (global_aux_loss, 1e-3)", true},
    {"mixtral", RoutingBalance::aux_loss, 1e-2,
     "Megatron-LM's examples/mixtral and Megatron-MoE-ModelZoo's Mixtral-8x22B.yaml"},
    {"gpt_oss", RoutingBalance::aux_loss, 0.9, "the released config.json's router_aux_loss_coef"},
    {"nemotron_h", RoutingBalance::loss_free, 0,
     "Nemotron-H's expert bias (with a 1e-4 sequence aux loss), as Megatron-Bridge's "
     "nemotron_h_bridge.py 283-286 builds it"},
}};

std::string fmt_coefficient(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c);
  return buf;
}

}  // namespace

TrainedRouting trained_routing(const ModelConfig& m) {
  TrainedRouting t;
  if (!m.is_moe()) {
    t.what = "forced (no routed experts)";
    t.source = "the model has no router";
    return t;
  }
  const auto it =
      std::find_if(kFamilyBalance.begin(), kFamilyBalance.end(),
                   [&](const FamilyBalance& f) { return f.model_type == m.model_type; });
  const FamilyBalance f =
      it != kFamilyBalance.end()
          ? *it
          : FamilyBalance{m.model_type, RoutingBalance::aux_loss, 1e-2,
                          "Megatron-Core's MoE README (its recommended starting coefficient)"};
  t.family = it != kFamilyBalance.end();
  t.routing.balance = f.balance;
  if (f.balance == RoutingBalance::aux_loss) t.routing.aux_loss_coefficient = f.coefficient;
  t.what = f.balance == RoutingBalance::loss_free
               ? std::string("loss_free (expert bias)")
               : "aux_loss, coefficient " + fmt_coefficient(f.coefficient);
  t.source = std::string(f.source);
  t.global_batch = f.global_batch;
  return t;
}

double aux_loss_exponent() {
  return std::log(kAuxLossMaxVioLow / kAuxLossMaxVio1B) /
         std::log(kAuxLossCoefficient / kAuxLossCoefficientLow);
}

double trained_max_vio(const Routing& r) {
  switch (r.balance) {
    case RoutingBalance::loss_free:
      return kLossFreeMaxVio;
    case RoutingBalance::aux_loss:
      return kAuxLossMaxVio *
             std::pow(r.aux_loss_coefficient / kAuxLossCoefficient, -aux_loss_exponent());
    default:
      return 0;
  }
}

double routing_sigma(const Routing& r) {
  return r.popularity_sigma ? *r.popularity_sigma : popularity_sigma(trained_max_vio(r));
}

double expected_max_vio(double sigma, int experts) {
  // E[max_e X_e] / E[X] - 1 for X = exp(sigma z), z ~ N(0, 1), over `experts` draws:
  //   E[max] = integral exp(sigma z) n phi(z) Phi(z)^(n-1) dz.
  const double top = over_max_normal(
      experts, [sigma](double z) { return std::exp(sigma * z); }, 1000);
  return top / std::exp(0.5 * sigma * sigma) - 1;
}

double popularity_sigma(double max_vio) {
  if (!(max_vio > 0)) return 0;
  double lo = 0, hi = 4;
  for (int i = 0; i < 40; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected_max_vio(mid, kMaxVioExperts) < max_vio ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
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

// One layer's drawn counts and their expectation n q_e (what a balancer plans on).
struct LayerCounts {
  std::vector<double> drawn, expected;
};

// One layer's selection probabilities q_e (popularity drawn from `g`, which then goes on
// to draw counts). `sigma`: the lognormal dispersion of trained routing's popularity
// (popularity_sigma).
std::vector<double> layer_selection(const Routing& r, std::int64_t E, double k, double sigma,
                                    std::mt19937_64& g) {
  std::vector<double> p(static_cast<std::size_t>(E), 1.0);
  if (r.trained()) {
    for (double& x : p) x = std::exp(sigma * standard_normal(g));
  } else if (r.distribution == RoutingDistribution::zipf) {
    std::vector<std::size_t> rank(p.size());
    std::iota(rank.begin(), rank.end(), std::size_t{0});
    // Fisher-Yates on the engine's bits (std::shuffle's algorithm is not specified).
    for (std::size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[g() % i]);
    for (std::size_t e = 0; e < p.size(); ++e)
      p[e] = std::pow(static_cast<double>(rank[e] + 1), -r.alpha);
  }
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  return selection_probabilities(p, k);
}

std::mt19937_64 layer_engine(const Routing& r, std::uint64_t layer) {
  return std::mt19937_64(r.seed * 0x9E3779B97F4A7C15ULL + layer);
}

// One microbatch's counts over n token copies: Binomial(n, q_e), normal approximation.
std::vector<double> draw_counts(const std::vector<double>& q, double n, std::mt19937_64& g) {
  std::vector<double> c;
  for (double x : q)
    c.push_back(std::max(0.0, n * x + std::sqrt(n * x * (1 - x)) * standard_normal(g)));
  return c;
}

LayerCounts sampled_counts(const Routing& r, std::int64_t E, double k, double n,
                           std::uint64_t layer, double sigma) {
  std::mt19937_64 g = layer_engine(r, layer);
  const std::vector<double> q = layer_selection(r, E, k, sigma, g);
  LayerCounts c;
  for (double x : q) c.expected.push_back(n * x);
  c.drawn = draw_counts(q, n, g);
  return c;
}

}  // namespace

namespace {
// Each expert keeps at most cf x its balanced count (Megatron's token dropping).
std::vector<double> kept_counts(const std::vector<double>& counts, std::optional<double> cf) {
  std::vector<double> kept = counts;
  if (!cf) return kept;
  const double mean =
      std::accumulate(counts.begin(), counts.end(), 0.0) / static_cast<double>(counts.size());
  for (double& c : kept) c = std::min(c, *cf * mean);
  return kept;
}

// G after token dropping and, with EPLB, replication planned on `plan_on`: the hottest
// rank's kept copies over the balanced (all routed copies / ep).
double dropped_load(const std::vector<double>& counts, const std::vector<double>& plan_on,
                    std::int64_t ep, std::optional<double> cf,
                    const std::optional<EplbSetup>& eplb) {
  const std::vector<double> kept = kept_counts(counts, cf);
  const double all = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (!eplb) {
    if (!cf) return hottest_rank_load(counts, ep);
    const double mean = all / static_cast<double>(counts.size());
    const double share = std::accumulate(kept.begin(), kept.end(), 0.0) /
                         (mean * static_cast<double>(counts.size()));
    return hottest_rank_load(kept, ep) * share;
  }
  const EplbPlan plan = rebalance_experts({plan_on}, eplb->replicas, eplb->groups, eplb->nodes,
                                          eplb->gpus, eplb->policy);
  const auto loads = gpu_loads(plan, 0, kept, eplb->gpus);
  return *std::max_element(loads.begin(), loads.end()) / (all / static_cast<double>(ep));
}

// The same under the rank's dispatch budget (HybridEP's rank capacity factor).
double layer_load(const std::vector<double>& counts, const std::vector<double>& plan_on,
                  std::int64_t ep, std::optional<double> cf, const std::optional<EplbSetup>& eplb,
                  std::optional<double> rank_cap) {
  const double g = dropped_load(counts, plan_on, ep, cf, eplb);
  return rank_cap ? std::min(g, *rank_cap) : g;
}
}  // namespace

double ep_gating_load(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                      std::optional<double> capacity_factor, const std::optional<EplbSetup>& eplb,
                      std::optional<double> rank_capacity) {
  if (!m.is_moe()) return 1;
  if (r.balance == RoutingBalance::forced && !eplb)
    return std::min({1.0, capacity_factor.value_or(1.0), rank_capacity.value_or(1.0)});
  const std::int64_t layers = std::max<std::int64_t>(1, m.num_moe_layers());
  const double sigma = routing_sigma(r);
  double sum = 0;
  for (std::int64_t l = 0; l < layers; ++l) {
    switch (r.balance) {
      case RoutingBalance::forced: {
        const std::vector<double> even(static_cast<std::size_t>(m.num_experts), 1.0);
        sum += layer_load(even, even, ep, capacity_factor, eplb, rank_capacity);
        break;
      }
      case RoutingBalance::histogram: {
        if (r.histogram.empty())
          throw std::invalid_argument("ep_gating_load: empty routing histogram");
        const auto& row = r.histogram[static_cast<std::size_t>(l) % r.histogram.size()];
        sum += layer_load(row, row, ep, capacity_factor, eplb, rank_capacity);
        break;
      }
      case RoutingBalance::sampled:
      case RoutingBalance::aux_loss:
      case RoutingBalance::loss_free: {
        const LayerCounts c =
            sampled_counts(r, m.num_experts, static_cast<double>(m.topk),
                           tokens * static_cast<double>(ep), static_cast<std::uint64_t>(l), sigma);
        sum += layer_load(c.drawn, c.expected, ep, capacity_factor, eplb, rank_capacity);
        break;
      }
    }
  }
  return sum / static_cast<double>(layers);
}

double ep_load_cv(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                  std::optional<double> capacity_factor, const std::optional<EplbSetup>& eplb,
                  std::optional<double> rank_capacity) {
  if (!m.is_moe() || r.balance == RoutingBalance::forced || r.balance == RoutingBalance::histogram)
    return 0;
  const std::int64_t layers = std::max<std::int64_t>(1, m.num_moe_layers());
  const double sigma = routing_sigma(r);
  const double n = tokens * static_cast<double>(ep);
  double sum = 0, within = 0;
  std::int64_t count = 0;
  for (std::int64_t l = 0; l < layers; ++l) {
    std::mt19937_64 g = layer_engine(r, static_cast<std::uint64_t>(l));
    const std::vector<double> q =
        layer_selection(r, m.num_experts, static_cast<double>(m.topk), sigma, g);
    std::vector<double> expected;
    for (double x : q) expected.push_back(n * x);
    // kLoadDraws microbatches of the same layer, each from an engine of its own.
    std::vector<double> loads;
    for (int d = 0; d < kLoadDraws; ++d) {
      std::mt19937_64 gd = layer_engine(
          r, static_cast<std::uint64_t>(l) + (static_cast<std::uint64_t>(d) + 1) * 0x100000001ULL);
      loads.push_back(
          layer_load(draw_counts(q, n, gd), expected, ep, capacity_factor, eplb, rank_capacity));
    }
    const double mean = std::accumulate(loads.begin(), loads.end(), 0.0) / kLoadDraws;
    for (double x : loads) within += (x - mean) * (x - mean);
    sum += mean * kLoadDraws;
    count += kLoadDraws;
  }
  const double mean = sum / static_cast<double>(count);
  const double var = within / static_cast<double>(count - layers);
  return std::sqrt(var) / mean;
}

}  // namespace moesim::workload
