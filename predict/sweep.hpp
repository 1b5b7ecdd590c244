// predict/sweep.hpp: a sweep's scenarios (config/sweep_file.hpp) through predict(), one
// result per row, on a pool of threads.
//
// A row's status: `ok` (simulated; every figure is what `moesim run` predicts for its
// scenario); `invalid` (the scenario loader rejects the grid point: the message says
// where and why); `does_not_fit` (the memory estimate, predict/memory.hpp, exceeds the
// GPU's memory: pruned before simulating, memory filled, timings empty); `error` (the
// simulation failed: the message); `moesim plan` only (predict/plan.hpp): `bound` (its
// lower bound cannot beat the K-th best, memory filled, the bound in the message) and
// `duplicate` (a varied setting is inert in it: it repeats the candidate with that
// setting's first value) and `dominated` (a costlier rung of a ladder setting than one
// that fits). A row never ends the sweep.
// Under a token budget B:  days = B / (tokens/s/GPU x gpus) / 86400,
//                          GPU-hours = B / (tokens/s/GPU x gpus) x gpus / 3600.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "schedules/step_sim.hpp"
#include "sim_core/names.hpp"

namespace moesim::predict {

enum class SweepStatus { ok, invalid, does_not_fit, error, bound, duplicate, dominated };
const sim_core::NameTable<SweepStatus>& sweep_status_names();

struct SweepResult {
  std::int64_t id = 0;
  SweepStatus status = SweepStatus::ok;
  std::string message;  // invalid, error: why
  // How the row was predicted (predicted_with of the command's LoadOptions): a resumed or
  // merged CSV is refused where its rows' differ from each other or the run's.
  std::string predicted_with;
  // What the row's prediction is priced beyond (config::prediction_caveats of its loaded
  // scenario, as `run` lists them: an announced system's projection, a --set what-if, ...);
  // empty where nothing is, or where the scenario did not load or the simulation failed.
  std::vector<std::string> caveats;
  std::int64_t gpus = 0;    // the loaded scenario's (0: it did not load)
  bool has_memory = false;  // ok, does_not_fit
  double peak_memory_gib = 0, reserved_memory_gib = 0;
  bool fits_in_memory = false;
  bool has_timing = false;  // ok
  double step_time_s = 0, tflops_per_gpu = 0, tokens_per_s_per_gpu = 0, mfu = 0;
  // The critical rank's breakdown (schedules::Breakdown), seconds.
  double compute_s = 0, exposed_communication_s = 0, pipeline_bubble_s = 0, host_bound_idle_s = 0,
         other_s = 0, schedule_bubble_s = 0, stage_imbalance_s = 0;  // pipeline_bubble_s split
  double straggler_wait_s = 0;  // the slowest process or replica (predict/variability.hpp)
  double ettr = 0;              // the effective training time ratio (predict/goodput.hpp)
  // The model's 80% band around step_time_s (predict/bands.hpp, as run --json's bands);
  // absent without a residual pool.
  std::optional<double> band_lo_s, band_hi_s;
  std::optional<double> days, gpu_hours;  // under the token budget
  // The same with interruptions, checkpoints and restarts: days / ettr, gpu_hours / ettr.
  std::optional<double> days_with_goodput, gpu_hours_with_goodput;
  // Over days_with_goodput (predict/goodput.hpp job_totals): absent without a node power
  // or a price.
  std::optional<double> energy_mwh, cost_usd;
  double wall_s = 0;  // load, memory and simulation wall time: the only nondeterministic figure
};

// "calibrated" or "uncalibrated", then "; headroom G GiB" where memory is held back and
// "; set PATH=VALUE" for each --set: what decides a row's figures besides the scenario.
std::string predicted_with(const config::LoadOptions& opts);
// Whether rows predicted so (a predicted_with text; empty: no rows) are the calibrated model as
// shipped, which the summaries, pages and --emit's scenario leave unsaid.
bool predicted_as_shipped(std::string_view predicted_with);

// A --set one of the sweep's systems cannot take is the caller's input error (InputError), not a
// message on that system's rows: the first point on each system is loaded with the sets and,
// where that fails, without (a point that fails both ways keeps its own error for its row).
void check_system_set(const config::SweepPlan& plan, const std::string& base_file,
                      const config::LoadOptions& opts);

// A row's value of the objective; empty where the row lacks it (not simulated, or no
// token budget for days, GPU-hours, energy and cost).
std::optional<double> objective_value(const SweepResult& r, config::SweepObjective o);
// Whether objective value `a` is better than `b`.
bool objective_better(config::SweepObjective o, double a, double b);

// The token budget's figures of a row from its tokens_per_s_per_gpu and ettr.
void set_budget_figures(SweepResult& r, const config::Scenario& sc, double token_budget);

// One row. `file` labels the scenario's errors and anchors its relative paths (the base
// scenario's file). Never throws for a bad scenario or a failed simulation.
// `before_simulating`, where given, runs once the scenario has loaded and its memory is
// estimated (r.fits_in_memory set; with its EP load); returning false ends the row there,
// as the hook left it (predict/plan.hpp bounds its candidates so).
using BeforeSimulating = std::function<bool(const config::Scenario&, double ep_load, SweepResult&)>;
SweepResult evaluate_point(const config::SweepPoint& point, const std::string& file,
                           std::optional<double> token_budget, const config::LoadOptions& opts = {},
                           const BeforeSimulating& before_simulating = {},
                           const schedules::StepOptions& step = {});

// Evaluates the points on `jobs` threads (0: all cores), calling `done` once per point as
// it finishes, one call at a time (it may write a stream). Once `stop` is requested no
// further point starts; the points running finish and are passed to `done`.
void run_sweep(std::span<const config::SweepPoint* const> points, const std::string& file,
               std::optional<double> token_budget, int jobs,
               const std::function<void(const config::SweepPoint&, const SweepResult&)>& done,
               const config::LoadOptions& opts = {}, std::stop_token stop = {});

}  // namespace moesim::predict
