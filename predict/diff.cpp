#include "predict/diff.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace moesim::predict {
using schedules::breakdown_module_name;

Difference difference(const Prediction& a, const Prediction& b) {
  const auto& x = a.step.breakdown;
  const auto& y = b.step.breakdown;
  Difference d;
  d.step_time_a_s = a.step.step_time_s;
  d.step_time_b_s = b.step.step_time_s;
  auto& c = d.contributions;
  for (std::size_t m = 0; m < x.compute_by_module.size(); ++m)
    c.push_back(
        {"compute", breakdown_module_name(m), x.compute_by_module[m], y.compute_by_module[m]});
  for (std::size_t k = 0; k < schedules::kCommKinds; ++k)
    c.push_back(
        {"exposed_communication",
         std::string(schedules::comm_kind_names().name(static_cast<schedules::CommKind>(k))),
         x.exposed_comm_by_kind[k], y.exposed_comm_by_kind[k]});
  for (std::size_t m = 0; m < x.host_bound_by_module.size(); ++m)
    c.push_back({"host_bound_idle", breakdown_module_name(m), x.host_bound_by_module[m],
                 y.host_bound_by_module[m]});
  c.push_back({"pipeline_bubble", "schedule", x.schedule_bubble, y.schedule_bubble});
  c.push_back({"pipeline_bubble", "stage_imbalance", x.stage_imbalance, y.stage_imbalance});
  c.push_back({"other", "", x.other, y.other});
  c.push_back({"straggler_wait", "", x.straggler_wait, y.straggler_wait});
  d.tokens_per_gpu_a = tokens_per_gpu_per_step(a);
  d.tokens_per_gpu_b = tokens_per_gpu_per_step(b);
  d.per_token = std::abs(d.tokens_per_gpu_a - d.tokens_per_gpu_b) >
                1e-9 * std::max(d.tokens_per_gpu_a, d.tokens_per_gpu_b);
  d.gpu_us_per_token_a = gpu_us_per_token(a);
  d.gpu_us_per_token_b = gpu_us_per_token(b);
  // GPU-microseconds per token of one second of a side's step: 1e6 G / N.
  const double ua = d.tokens_per_gpu_a > 0 ? 1e6 / d.tokens_per_gpu_a : 0.0;
  const double ub = d.tokens_per_gpu_b > 0 ? 1e6 / d.tokens_per_gpu_b : 0.0;
  double sum = 0, sum_us = 0;
  for (auto& t : c) {
    t.a_us = t.a_s * ua;
    t.b_us = t.b_s * ub;
    sum += t.delta_s();
    sum_us += t.delta_us();
  }
  d.residual_s = (d.step_time_b_s - d.step_time_a_s) - sum;
  d.residual_us = (d.gpu_us_per_token_b - d.gpu_us_per_token_a) - sum_us;
  std::erase_if(c, [](const Contribution& t) { return t.a_s == 0 && t.b_s == 0; });
  const auto size = [&](const Contribution& t) {
    return std::abs(d.per_token ? t.delta_us() : t.delta_s());
  };
  std::stable_sort(c.begin(), c.end(),
                   [&](const Contribution& p, const Contribution& q) { return size(p) > size(q); });
  return d;
}

}  // namespace moesim::predict
