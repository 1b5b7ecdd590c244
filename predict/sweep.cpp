#include "predict/sweep.hpp"

#include <array>
#include <chrono>
#include <exception>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "config/caveats.hpp"
#include "predict/bands.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"
#include "schedules/pipeline_order.hpp"
#include "sim_core/engine.hpp"

namespace moesim::predict {

const sim_core::NameTable<SweepStatus>& sweep_status_names() {
  static constexpr std::array<sim_core::NameEntry<SweepStatus>, 7> kEntries{{
      {SweepStatus::ok, "ok", "simulated"},
      {SweepStatus::invalid, "invalid", "the scenario loader rejects this grid point"},
      {SweepStatus::does_not_fit, "does_not_fit",
       "pruned by the memory estimate before simulating"},
      {SweepStatus::error, "error", "the simulation failed"},
      {SweepStatus::bound, "bound", "pruned by its lower bound: cannot beat the plan's K-th best"},
      {SweepStatus::duplicate, "duplicate",
       "a varied setting is inert here: the same as its first value's candidate"},
      {SweepStatus::dominated, "dominated",
       "a costlier rung of a ladder setting (recompute) than one that fits"},
  }};
  static constexpr sim_core::NameTable<SweepStatus> kTable{kEntries};
  return kTable;
}

std::optional<double> objective_value(const SweepResult& r, config::SweepObjective o) {
  using config::SweepObjective;
  if (o == SweepObjective::peak_memory_gib)
    return r.has_memory ? std::optional(r.peak_memory_gib) : std::nullopt;
  if (!r.has_timing) return std::nullopt;
  switch (o) {
    case SweepObjective::tokens_per_s_per_gpu:
      return r.tokens_per_s_per_gpu;
    case SweepObjective::tflops_per_gpu:
      return r.tflops_per_gpu;
    case SweepObjective::mfu:
      return r.mfu;
    case SweepObjective::step_time_s:
      return r.step_time_s;
    case SweepObjective::peak_memory_gib:
      return r.peak_memory_gib;
    case SweepObjective::days:
      return r.days;
    case SweepObjective::gpu_hours:
      return r.gpu_hours;
    case SweepObjective::days_with_goodput:
      return r.days_with_goodput;
    case SweepObjective::gpu_hours_with_goodput:
      return r.gpu_hours_with_goodput;
    case SweepObjective::energy_mwh:
      return r.energy_mwh;
    case SweepObjective::cost_usd:
      return r.cost_usd;
  }
  return std::nullopt;
}

bool objective_better(config::SweepObjective o, double a, double b) {
  return config::higher_is_better(o) ? a > b : a < b;
}

void set_budget_figures(SweepResult& r, const config::Scenario& sc, double token_budget) {
  const double gpus = static_cast<double>(sc.gpus);
  const double seconds = token_budget / (r.tokens_per_s_per_gpu * gpus);
  r.days = seconds / 86400;
  r.gpu_hours = seconds * gpus / 3600;
  r.days_with_goodput = *r.days / r.ettr;
  r.gpu_hours_with_goodput = *r.gpu_hours / r.ettr;
  const JobTotals t = job_totals(sc, *r.days_with_goodput);
  r.energy_mwh = t.energy_mwh;
  r.cost_usd = t.cost_usd;
}

std::string predicted_with(const config::LoadOptions& opts) {
  std::string s = opts.calibrated ? "calibrated" : "uncalibrated";
  if (opts.headroom_gib > 0) s += fmt::format("; headroom {} GiB", opts.headroom_gib);
  for (const auto& set : opts.system_set) s += fmt::format("; set {}", config::to_string(set));
  return s;
}

bool predicted_as_shipped(std::string_view predicted_with) {
  return predicted_with.empty() || predicted_with == "calibrated";
}

void check_system_set(const config::SweepPlan& plan, const std::string& base_file,
                      const config::LoadOptions& opts) {
  if (opts.system_set.empty()) return;
  config::LoadOptions plain = opts;
  plain.system_set.clear();
  std::set<std::string> seen;
  for (const auto& point : plan.points) {
    if (!seen.insert(point.scenario.value("system", config::Json()).dump()).second) continue;
    try {
      config::load_scenario_json(point.scenario, base_file, opts);
    } catch (const config::InputError&) {
      try {
        config::load_scenario_json(point.scenario, base_file, plain);
      } catch (const config::InputError&) {
        continue;  // the point's own error, which its row says
      }
      throw;
    }
  }
}

SweepResult evaluate_point(const config::SweepPoint& point, const std::string& file,
                           std::optional<double> token_budget, const config::LoadOptions& opts,
                           const BeforeSimulating& before_simulating,
                           const schedules::StepOptions& step) {
  const auto t0 = std::chrono::steady_clock::now();
  SweepResult r;
  r.id = point.id;
  const auto finish = [&] {
    r.predicted_with = predicted_with(opts);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  config::Scenario sc;
  try {
    sc = config::load_scenario_json(point.scenario, file, opts);
  } catch (const config::InputError& e) {
    r.status = SweepStatus::invalid;
    r.message = (e.file() != file ? e.file() + ": " : std::string()) +
                (e.path().empty() ? std::string() : e.path() + ": ") + e.message();
    return finish();
  }
  r.gpus = sc.gpus;
  r.caveats = config::prediction_caveats(sc);
  const auto failed = [&](std::string message) {
    r = SweepResult{};
    r.id = point.id;
    r.gpus = sc.gpus;
    r.status = SweepStatus::error;
    r.message = std::move(message);
  };
  try {
    const double ep_load = scenario_ep_load(sc);
    MemoryEstimate m = estimate_memory(sc, ep_load);
    r.has_memory = true;
    r.peak_memory_gib = m.peak_memory_gib;
    r.reserved_memory_gib = m.reserved_memory_gib;
    r.fits_in_memory = m.fits_in_memory;
    if (!m.fits_in_memory)
      r.message = memory_shortfall(sc, m.rank_memory_gib, m.reserved_memory_gib);
    if (before_simulating && !before_simulating(sc, ep_load, r)) return finish();
    if (!m.fits_in_memory) {
      r.status = SweepStatus::does_not_fit;
      return finish();
    }
    const Prediction p = predict(sc, std::move(m), ep_load, step);
    r.status = SweepStatus::ok;
    r.has_timing = true;
    r.step_time_s = p.step.step_time_s;
    r.tflops_per_gpu = p.tflops_per_gpu;
    r.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
    r.mfu = p.mfu;
    r.peak_memory_gib = p.peak_memory_gib;
    r.reserved_memory_gib = p.reserved_memory_gib;
    r.fits_in_memory = p.fits_in_memory;
    const auto& b = p.step.breakdown;
    r.compute_s = b.compute;
    r.exposed_communication_s = b.exposed_comm;
    r.pipeline_bubble_s = b.pipeline_bubble;
    r.host_bound_idle_s = b.host_bound_idle;
    r.other_s = b.other;
    r.schedule_bubble_s = b.schedule_bubble;
    r.stage_imbalance_s = b.stage_imbalance;
    r.straggler_wait_s = b.straggler_wait;
    r.ettr = p.goodput.ettr;
    if (const auto band = corpus_step_band(r.step_time_s, sc.system.gpu.name, sc.model.name);
        band.pool > 0) {
      r.band_lo_s = band.lo;
      r.band_hi_s = band.hi;
    }
    if (token_budget) set_budget_figures(r, sc, *token_budget);
  } catch (const schedules::NotSimulated& e) {
    failed(std::string("not simulated yet: ") + e.what());
  } catch (const sim_core::SimulationStuck& e) {
    failed(std::string("the simulation could not finish: ") + e.what());
  } catch (const std::exception& e) {
    failed(std::string("internal error: ") + e.what());
  }
  return finish();
}

void run_sweep(std::span<const config::SweepPoint* const> points, const std::string& file,
               std::optional<double> token_budget, int jobs,
               const std::function<void(const config::SweepPoint&, const SweepResult&)>& done,
               const config::LoadOptions& opts, std::stop_token stop) {
  std::mutex m;
  // Rows that share a system block resolve it once (config::SystemCache).
  config::SystemCache systems;
  config::LoadOptions load = opts;
  if (!load.systems) load.systems = &systems;
  run_parallel(
      points.size(), jobs,
      [&](std::size_t i) {
        const SweepResult r = evaluate_point(*points[i], file, token_budget, load);
        std::lock_guard<std::mutex> lock(m);
        done(*points[i], r);
      },
      stop);
}

}  // namespace moesim::predict
