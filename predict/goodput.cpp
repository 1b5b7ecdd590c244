#include "predict/goodput.hpp"

#include <algorithm>
#include <cmath>

#include "workload/options.hpp"

namespace moesim::predict {
namespace {
constexpr double kDay = 86400;
// Servers, or NVL72 compute trays, the job occupies.
double job_nodes(const config::Scenario& sc) {
  return std::ceil(static_cast<double>(sc.gpus) /
                   std::max(1.0, sc.system.node.gpus_per_node.value));
}
}  // namespace

double daly_interval_s(double delta_s, double mtbi_s) {
  if (delta_s >= 2 * mtbi_s) return mtbi_s;
  const double x = delta_s / (2 * mtbi_s);
  return std::sqrt(2 * delta_s * mtbi_s) * (1 + std::sqrt(x) / 3 + x / 9) - delta_s;
}

double daly_ettr(double interval_s, double delta_s, double restart_s, double mtbi_s) {
  if (!std::isfinite(mtbi_s)) return interval_s / (interval_s + delta_s);
  return interval_s /
         (mtbi_s * std::exp(restart_s / mtbi_s) * std::expm1((interval_s + delta_s) / mtbi_s));
}

JobTotals job_totals(const config::Scenario& sc, double wall_days) {
  JobTotals t;
  const auto& c = sc.cost;
  if (c.node_power_kW)
    t.node_power_kW = *c.node_power_kW;
  else if (sc.system.node.max_power_kW)
    t.node_power_kW = sc.system.node.max_power_kW->value;
  const double n = static_cast<double>(sc.gpus);
  if (t.node_power_kW)
    t.energy_mwh = job_nodes(sc) * *t.node_power_kW * c.pue.value_or(1) * 24 * wall_days / 1000;
  if (c.gpu_hour_usd) t.cost_usd = n * *c.gpu_hour_usd * 24 * wall_days;
  return t;
}

Goodput goodput(const config::Scenario& sc, double params, double step_time_s,
                double tokens_per_s) {
  const auto& g = sc.goodput;
  Goodput out;
  const double n = static_cast<double>(sc.gpus);
  const double nodes = job_nodes(sc);
  const double rate = g.interruptions_per_gpu_day * n / kDay;  // per second
  out.mtbi_s = rate > 0 ? 1 / rate : INFINITY;
  const auto& fw = sc.framework;
  out.checkpoint_bytes = params * (2 + 4 + workload::optimizer_state_bytes(fw));
  out.checkpoint_bytes_per_gpu = out.checkpoint_bytes / n;
  const auto bandwidth = [&](double aggregate) {
    const double client = g.storage.client_GBps > 0 ? nodes * g.storage.client_GBps : INFINITY;
    return std::min(aggregate, client) * 1e9;
  };
  out.save_s =
      g.storage.write_GBps > 0 ? out.checkpoint_bytes / bandwidth(g.storage.write_GBps) : 0;
  out.load_s = g.storage.read_GBps > 0 ? out.checkpoint_bytes / bandwidth(g.storage.read_GBps) : 0;
  out.blocking_s = g.async_save
                       ? out.checkpoint_bytes_per_gpu / (sc.system.node.host_link_GBps.value * 1e9)
                       : out.save_s;
  out.restart_s = g.restart_s + out.load_s + (g.async_save ? out.save_s : 0);
  // The interval in whole steps: Daly's (at least the write under async save), or the given.
  out.interval_given = g.checkpoint_interval_s.has_value();
  double tau = out.interval_given          ? *g.checkpoint_interval_s
               : std::isfinite(out.mtbi_s) ? daly_interval_s(out.blocking_s, out.mtbi_s)
                                           : INFINITY;
  if (g.async_save && !out.interval_given) tau = std::max(tau, out.save_s);
  if (std::isfinite(tau) && step_time_s > 0) {
    out.interval_steps = std::max<std::int64_t>(1, std::llround(tau / step_time_s));
    out.interval_s = static_cast<double>(out.interval_steps) * step_time_s;
    out.ettr = daly_ettr(out.interval_s, out.blocking_s, out.restart_s, out.mtbi_s);
  }
  const double planned = g.planned_interruptions_per_gpu_day * n / kDay;
  out.ettr *= std::max(0.0, 1 - planned * (g.restart_s + out.load_s));
  if (g.token_budget && tokens_per_s > 0) {
    out.days_without_interruptions = *g.token_budget / tokens_per_s / kDay;
    out.days = *out.days_without_interruptions / out.ettr;
    const JobTotals t = job_totals(sc, *out.days);
    out.node_power_kW = t.node_power_kW;
    out.energy_mwh = t.energy_mwh;
    out.cost_usd = t.cost_usd;
  }
  return out;
}

}  // namespace moesim::predict
