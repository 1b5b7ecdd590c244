// predict/plan.hpp: the search behind `moesim plan` (cli/plan.cpp): layouts (a generated
// sweep, config/sweep_file.hpp) times settings varied per layout (PlanDimension: the
// dispatcher and its SMs, the all-to-all and TP overlaps, the CUDA-graph scope, the recompute
// modules; not offload, whose copies the step does not price yet),
// ranked by an objective, simulating as few candidates as the top K needs while keeping
// them exact for the space. Branch and bound in two levels:
//
//   a layout's bound  for each value of the dimensions that change the device's work
//                     (`device`: the dispatcher and the CUDA-graph scope, whose captured
//                     modules run other kernels, not only fewer launches), the candidate
//                     with every other dimension at its relaxed value (no recompute, the
//                     all-to-all and TP overlaps on) is priced and bounded
//                     (schedules/step_bound.hpp) whether it fits or not; the layout's
//                     bound is the best of those. Recompute only adds kernels and their
//                     launches, the overlaps only take work off the serial sum, so no
//                     candidate of the layout bounds better (one that does is counted in
//                     `violations`).
//   a candidate's bound  loaded, its memory estimated (predict/memory.hpp), its step
//                     bounded; one the loader rejects is `invalid`, one that does not fit
//                     `does_not_fit`; one where a varied setting is inert
//                     (config/inert_settings.hpp) and not at its dimension's first value
//                     `duplicate` (it repeats that candidate); on a ladder dimension, a
//                     rung past the first that fits is `dominated` (it only adds work).
//   the order         best bound first (the objective at the bound's step time with an
//                     ETTR of 1: days, GPU-hours, energy and cost only grow with the step
//                     time and fall with the ETTR <= 1; ties by id), layouts and
//                     candidates in one order: a layout met is expanded into its
//                     candidates, a candidate met joins the wave being simulated.
//   the stop          before each wave of kPlanWave simulations, with K simulated, the
//                     first item whose bound cannot beat the K-th best (strictly) ends
//                     the search: every later item's bound is no better. With a
//                     reference value (`moesim plan --given`: the scenario as given),
//                     the search also goes on while a bound beats the reference, so every
//                     candidate better than it is simulated and its rank is exact. Candidates
//                     expanded and not simulated are `bound`; layouts never expanded
//                     count their candidates as pruned by the bound, without rows.
// The wave's size is a constant, not the thread count, so the rows (and which were
// simulated) are the same whatever --jobs. One system throughout, so DeepEP's and
// HybridEP's flow times are priced once for the search (hw_models::FlowCache).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "config/decisions.hpp"
#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/sweep.hpp"
#include "schedules/step_bound.hpp"

namespace moesim::predict {

inline constexpr int kPlanWave = 8;

// The scenario's step time bounded from below at the EP load the simulation would use.
schedules::StepBound step_time_lower_bound(const config::Scenario& sc, double ep_load,
                                           hw_models::FlowCache* ep_cache = nullptr);

// A setting varied for every layout: a scenario path ("framework.dispatcher"), its values
// in the order duplicates defer to, and the value a layout's bound takes (`relaxed`);
// `device`: a layout's bound takes the best over every value instead.
// `ladder`: each value saves memory at a cost in time over the one before (recompute
// modules, each rung adding modules): for each combination of the other settings only the
// first rung that fits is a candidate; the later ones are `dominated`.
struct PlanDimension {
  std::string path;
  std::vector<config::Json> values;
  std::size_t relaxed = 0;
  bool device = false;
  bool ladder = false;
};

struct PlanSearch {
  config::SweepObjective objective = config::SweepObjective::tokens_per_s_per_gpu;
  int top = 10;  // K; 0 simulates every candidate that fits
  int jobs = 0;  // threads (0: all cores)
  std::optional<double> token_budget;
  config::LoadOptions load;
  // An objective value every candidate better than which is simulated (the scenario as
  // given, to rank it exactly); none: the top K alone decide. `reference_limit` (> 0)
  // caps the simulations the reference adds to those the top K need; past it the rank is
  // a lower bound.
  std::optional<double> reference;
  std::int64_t reference_limit = 0;
  // Kept work (`moesim plan --resume`, issue #45 item 1): rows of candidates simulated by
  // an earlier run of the same plan, by id, used instead of simulating them again (the
  // search is deterministic, so it reaches the same candidates in the same order);
  // `simulated` is told of each candidate simulated (or taken from `resumed`) after its
  // wave, on the calling thread; a `stop` requested ends the search before the next wave
  // (PlanOutcome::stopped).
  const std::map<std::int64_t, SweepResult>* resumed = nullptr;
  std::function<void(const struct PlanCandidate&)> simulated;
  std::stop_token stop;
};

// A candidate: a layout (its index among the layout points) with one value per dimension.
// Its id is layout x (product of the dimensions' sizes) + the settings' mixed-radix index
// (last dimension fastest); `point` its id and CSV values (the layout's, then the
// settings'), its scenario null for every candidate of the outcome: candidate_point rebuilds
// it, so the expanded candidates' memory does not grow with the scenario.
struct PlanCandidate {
  config::SweepPoint point;
  SweepResult row;
  std::optional<double> bound;  // the objective's best possible value (rows that fit)
};

struct PlanOutcome {
  std::vector<PlanCandidate> candidates;  // every expanded candidate, by id
  std::int64_t layouts = 0, layouts_expanded = 0;
  std::int64_t simulated = 0;            // candidates simulated (ok or error)
  std::int64_t bounded = 0;              // expanded and pruned by their bound
  std::int64_t bounded_unexpanded = 0;   // in layouts pruned whole by the layout's bound
  std::vector<std::int64_t> violations;  // ids: simulated better than their bound, or
                                         // bounded better than their layout's bound
  double bound_wall_s = 0, simulate_wall_s = 0;
  std::int64_t reference_simulated = 0;  // simulated only because their bound beat the reference
  bool reference_capped = false;         // reference_limit reached: not every better one simulated
  std::int64_t resumed = 0;              // of the simulated, taken from PlanSearch::resumed
  bool stopped = false;                  // PlanSearch::stop ended it: the outcome is partial
};

// `file` labels the candidates' errors and anchors their relative paths (the base
// scenario's).
PlanOutcome search_plan(std::span<const config::SweepPoint> layouts,
                        std::span<const PlanDimension> dims, const std::string& file,
                        const PlanSearch& search);
// The candidates per layout: the product of the dimensions' sizes.
std::int64_t candidates_per_layout(std::span<const PlanDimension> dims);
// Candidate `id`'s point, its scenario included: the layout's with the settings' values
// (PlanCandidate keeps only the values). std::logic_error for an id outside the space.
config::SweepPoint candidate_point(std::span<const config::SweepPoint> layouts,
                                   std::span<const PlanDimension> dims, std::int64_t id);

// The settings a plan may vary per layout, by group name, for a scenario's model (the
// registry `moesim plan --settings` and moesim.plan() read). Each dimension's values begin
// with the one the others' duplicates defer to. Not varied, and why: activation and
// optimizer offload (the step does not price their copies yet, so a plan would take them
// for free), dispatcher SMs (the base's), pipeline splits but the default.
struct PlanSettingGroup {
  const char* name;
  const char* what;
  // Varied unless asked otherwise. The CUDA-graph scope and TP overlap are not by
  // default: each changes the device's work in ways a layout's bound must take the best
  // of, which triples and doubles the layouts' bounding work.
  bool by_default;
  std::vector<PlanDimension> (*dims)(const config::Scenario& sc);
};
const std::vector<PlanSettingGroup>& plan_setting_groups();

// A scenario file's model, system and training settings on `gpus` GPUs (0: the
// scenario's): the layouts (TP {1, 2, 4, 8} within the NVLink domain, PP {1, ..., 32}
// within the layers, VPP {1, 2, 4, 8}, EP {1, 2, 4, ...} within the experts, ETP 1, CP
// {1, 2} (4 from 16K tokens a sequence), micro-batch size {1, 2} and the scenario's own,
// each with Megatron's default split, less what config::layout_rules drop), times the
// setting groups named (empty: the default ones; {"none"}: none), searched by
// search_plan. Throws InputError for an unknown objective or setting group, or a budget
// objective without a budget.
struct PlanRequest {
  std::string scenario_file;
  std::int64_t gpus = 0;
  std::vector<std::string> settings;
  std::string objective;  // a sweep objective's name; empty: tokens_per_s_per_gpu
  std::optional<double> token_budget;
  int top = 10;
  int jobs = 0;
  config::LoadOptions load;
  // Also predict the scenario as given (its own layout and settings, on `gpus`) and rank
  // it among the candidates (PlanSearch::reference, at most `given_limit` simulations more
  // than the top K need; 0: no limit).
  bool given = false;
  std::int64_t given_limit = 0;
  // Kept work (`moesim plan --resume`): given the plan's CSV columns (the layouts', then
  // the settings'), the rows an earlier run of it simulated, by id (PlanSearch::resumed;
  // it may throw InputError where they belong to another plan); each candidate simulated,
  // with the columns (to keep it); a stop ends the search between waves.
  std::function<std::map<std::int64_t, SweepResult>(const struct PlanColumns& columns)> resume;
  std::function<void(const struct PlanColumns& columns, const struct PlanCandidate&)> simulated;
  std::stop_token stop;
  // Where candidates do not fit in memory and none does: plan again at 2, 4, ... 64 times
  // the GPUs (the top 1 alone) for the smallest cluster where one fits
  // (Plan::smallest_fitting_gpus).
  bool fit_search = true;
  // Plan on another system (`plan --system`): the scenario's own system replaced by this
  // preset, its placement (the other system's domains) and measurement (not this run) left
  // out, and a precision the system has no Tensor Cores for taken to its nearest (MXFP8 and
  // NVFP4 on Hopper: FP8 with DeepSeek's block scales), said in Plan::notes.
  std::optional<std::string> system;
  // The price of a GPU-hour on it (the scenario's cost.gpu_hour_usd replaced).
  std::optional<double> gpu_hour_usd;
};
// The plan's CSV columns: the varied paths (the layouts', then the settings'), and
// whether the rows carry the token budget's figures.
struct PlanColumns {
  std::vector<std::string> names;
  bool token_budget = false;
};
// A candidate ranked above the scenario as given, and the evidence for that claim (issue #44
// item 4): its gain g = 100 (objective / given - 1) (lower-is-better objectives: given /
// objective - 1), the plan's columns whose values differ from the given ones (a column the
// scenario leaves to the loader's default counts as differing: the plan cannot tell), and
// what the what-if corpus says about the decisions behind them (config::assess_claim).
struct PlanEvidence {
  std::int64_t id = 0;
  double gain_pct = 0;
  std::vector<std::string> columns;
  config::ClaimAssessment claim;
};
// The scenario as given, on the plan's GPUs: its row (evaluate_point), and, where it
// simulated, 1 + the candidates strictly better by the objective: exact (each was
// simulated) unless the given limit stopped the ranking, then a lower bound.
struct PlanGiven {
  config::SweepPoint point;  // the scenario file on `gpus`; its CSV columns' values
  SweepResult row;
  std::optional<std::int64_t> rank;
  bool rank_exact = true;
  std::vector<PlanEvidence> evidence;  // the top K candidates better than it, best first
};
// The evidence for `candidate` over `given` (both rows of the plan's `columns`).
PlanEvidence plan_evidence(const std::vector<std::string>& columns, const config::SweepPoint& given,
                           double given_value, const config::SweepPoint& candidate, double value,
                           config::SweepObjective objective);
struct Plan {
  std::string name;  // plan-<scenario name>
  std::int64_t gpus = 0;
  config::SweepPlan layouts;  // the layout points, and the rules' counts
  std::vector<PlanDimension> dims;
  std::int64_t per_layout = 1;  // settings combinations per layout
  config::SweepObjective objective = config::SweepObjective::tokens_per_s_per_gpu;
  std::optional<double> token_budget;
  PlanOutcome outcome;
  std::optional<PlanGiven> given;
  // Nothing fit: the smallest cluster of gpus x 2^k (k <= 6) where a candidate does, and how
  // far the search went (PlanRequest::fit_search; 0: not searched).
  std::optional<std::int64_t> smallest_fitting_gpus;
  std::int64_t fit_searched_to = 0;
  // Why the best of the top K wins: its evidence over each of the others (best first;
  // `id` the other's, `gain_pct` the best's over it, `columns` where the two differ).
  std::vector<PlanEvidence> runner_ups;
  std::string system;  // the system planned on (the preset's name, or the scenario's)
  std::string gpu;     // its GPU's name (a band's stratum, predict/bands.hpp)
  std::string model;   // its model's name (a band's first stratum)
  // What PlanRequest::system changed beyond the system. Each candidate's caveats
  // (config/caveats.hpp: an announced system's projection, say) are its row's (SweepResult::
  // caveats); the summary lists the top K's.
  std::vector<std::string> notes;
  double wall_s = 0;
};
Plan plan(const PlanRequest& req);

}  // namespace moesim::predict
