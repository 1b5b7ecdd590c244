#include "predict/variability.hpp"

#include <algorithm>
#include <cmath>

#include "config/load.hpp"
#include "sim_core/extreme_values.hpp"
#include "workload/eplb.hpp"
#include "workload/routing.hpp"

namespace moesim::predict {
namespace {

// CDF of the latest of n exponential delays of mean m.
double jitter_cdf(double x, double m, std::int64_t n) {
  if (x <= 0) return 0;
  if (m <= 0) return 1;
  return std::exp(static_cast<double>(n) * std::log1p(-std::exp(-x / m)));
}

}  // namespace

StepSpread step_spread(const config::Scenario& sc, const schedules::StepResult& step) {
  StepSpread s;
  const double T = step.step_time_s;
  const auto& v = sc.system.variability;
  const double m =
      (v.jitter_s ? v.jitter_s->value : 0) + (v.jitter_fraction ? v.jitter_fraction->value : 0) * T;
  s.processes = sc.gpus;
  s.jitter_wait_s = m * sim_core::harmonic_number(static_cast<double>(s.processes));

  // Routing: the replicas' spread of the load-proportional time.
  const auto& p = sc.parallelism;
  const auto& b = step.breakdown;
  double sd = 0;
  // Padded to capacity, every rank runs the same tokens: no spread.
  if (sc.model.is_moe() && p.ep > 1 && !sc.training.pad_to_capacity) {
    s.load_cv = workload::ep_load_cv(sc.routing, sc.model, p.ep, sc.ep_rank_tokens(),
                                     sc.training.capacity_factor, sc.eplb_setup(),
                                     sc.framework.moe_expert_rank_capacity_factor);
    using workload::Module;
    const auto at = [&](Module mod) { return b.compute_by_module[static_cast<std::size_t>(mod)]; };
    const double load_time =
        at(Module::moe_dispatch) + at(Module::experts) + at(Module::moe_combine) +
        b.exposed_comm_by_kind[static_cast<std::size_t>(schedules::CommKind::ep)];
    const double units =
        std::max(1.0, static_cast<double>(sc.model.num_moe_layers()) / static_cast<double>(p.pp) *
                          static_cast<double>(p.num_microbatches));
    sd = load_time * s.load_cv / std::sqrt(units);
    s.ep_groups = p.expert_dp;
    s.routing_wait_s = sd * sim_core::expected_max_normal(static_cast<double>(s.ep_groups));
  }
  const double gpn = std::max(1.0, sc.system.node.gpus_per_node.value);
  s.nodes = static_cast<std::int64_t>(std::ceil(static_cast<double>(sc.gpus) / gpn));
  if (v.node_speed_sd)
    s.node_wait_s =
        T * v.node_speed_sd->value * sim_core::expected_max_normal(static_cast<double>(s.nodes));
  s.wait_s = s.node_wait_s + s.jitter_wait_s + s.routing_wait_s;

  // Quantiles of J + Rn: F(t) = integral F_J(t - r) f_R(r) dr (Rn's density over +-8 sd).
  const std::int64_t R = std::max<std::int64_t>(1, s.ep_groups);
  const auto cdf = [&](double t) {
    if (sd <= 0) return jitter_cdf(t, m, s.processes);
    return sim_core::over_max_normal(
        static_cast<double>(R), [&](double z) { return jitter_cdf(t - sd * z, m, s.processes); },
        800);
  };
  const auto quantile = [&](double q) {
    double lo = -8 * sd, hi = m * (std::log(static_cast<double>(s.processes)) + 12) + 8 * sd;
    if (hi <= lo) return 0.0;
    for (int i = 0; i < 50; ++i) {
      const double mid = 0.5 * (lo + hi);
      (cdf(mid) < q ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
  };
  s.p50_wait_s = s.node_wait_s + quantile(0.5);
  s.common_sd_s =
      (v.common_s ? v.common_s->value : 0) + (v.common_fraction ? v.common_fraction->value : 0) * T;
  s.p95_wait_s = s.p50_wait_s + std::hypot(s.node_wait_s + quantile(0.95) - s.p50_wait_s,
                                           sim_core::kNormalQ95 * s.common_sd_s);
  return s;
}

}  // namespace moesim::predict
