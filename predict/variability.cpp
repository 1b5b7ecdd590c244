#include "predict/variability.hpp"

#include <algorithm>
#include <cmath>

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

double harmonic(std::int64_t n) {
  if (n <= 0) return 0;
  if (n <= 10000) {
    double h = 0;
    for (std::int64_t i = n; i >= 1; --i) h += 1.0 / static_cast<double>(i);
    return h;
  }
  const double x = static_cast<double>(n);
  return std::log(x) + 0.57721566490153286 + 1 / (2 * x) - 1 / (12 * x * x);
}

double expected_max_normal(std::int64_t n) {
  if (n <= 1) return 0;
  return workload::over_max_normal(static_cast<double>(n), [](double z) { return z; }, 2000);
}

StepSpread step_spread(const config::Scenario& sc, const schedules::StepResult& step) {
  StepSpread s;
  const double T = step.step_time_s;
  const auto& v = sc.system.variability;
  const double m = (v.jitter_s ? v.jitter_s->value : 0) + (v.jitter_fraction ? v.jitter_fraction->value : 0) * T;
  s.processes = sc.gpus;
  s.jitter_wait_s = m * harmonic(s.processes);

  // Routing: the replicas' spread of the load-proportional time.
  const auto& p = sc.parallelism;
  const auto& b = step.breakdown;
  double sd = 0;
  if (sc.model.is_moe() && p.ep > 1) {
    s.load_cv = workload::ep_load_cv(sc.routing, sc.model, p.ep, sc.ep_rank_tokens(), sc.training.capacity_factor,
                                     sc.eplb_setup());
    using workload::Module;
    const auto at = [&](Module mod) { return b.compute_by_module[static_cast<std::size_t>(mod)]; };
    const double load_time = at(Module::moe_dispatch) + at(Module::experts) + at(Module::moe_combine) +
                             b.exposed_comm_by_kind[static_cast<std::size_t>(schedules::CommKind::ep)];
    const double units = std::max(1.0, static_cast<double>(sc.model.num_moe_layers()) / static_cast<double>(p.pp) *
                                           static_cast<double>(p.num_microbatches));
    sd = load_time * s.load_cv / std::sqrt(units);
    s.ep_groups = p.expert_dp;
    s.routing_wait_s = sd * expected_max_normal(s.ep_groups);
  }
  s.wait_s = s.jitter_wait_s + s.routing_wait_s;

  // Quantiles of J + Rn: F(t) = integral F_J(t - r) f_R(r) dr (Rn's density over +-8 sd).
  const std::int64_t R = std::max<std::int64_t>(1, s.ep_groups);
  const auto cdf = [&](double t) {
    if (sd <= 0) return jitter_cdf(t, m, s.processes);
    return workload::over_max_normal(
        static_cast<double>(R), [&](double z) { return jitter_cdf(t - sd * z, m, s.processes); }, 800);
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
  s.p50_wait_s = quantile(0.5);
  s.p95_wait_s = quantile(0.95);
  return s;
}

}  // namespace moesim::predict
