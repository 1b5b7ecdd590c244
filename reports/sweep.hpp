// reports/sweep.hpp: `moesim sweep`'s output: the CSV rows, reading them back (resume,
// merge), the summary (top K by the objective, the Pareto front) as a table or one JSON
// object, and the Slurm job-array script. Formatting only: the rows' figures come from
// predict/sweep.hpp.
//
// CSV (RFC 4180, one header line, one line per row): `id`, the varied values under
// their dotted paths (config::SweepPlan::columns), `status`, `message`, `predicted_with`,
// `caveats` (the row's prediction caveats, kSweepCaveatSeparator between them), `step_time_s`,
// `tflops_per_gpu`, `tokens_per_s_per_gpu`, `mfu`, `peak_memory_gib`,
// `reserved_memory_gib`, `fits_in_memory`, `breakdown.compute`,
// `breakdown.exposed_communication`, `breakdown.pipeline_bubble`,
// `breakdown.host_bound_idle`, `breakdown.other`, `breakdown.schedule_bubble`,
// `breakdown.stage_imbalance`, with a token budget `days` and
// `gpu_hours`, and `sim_wall_s`. The header depends on the sweep file alone, so shards
// merge; numbers are written in their shortest form that reads back to the same double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/sweep_file.hpp"
#include "predict/plan.hpp"
#include "predict/sweep.hpp"

namespace moesim::reports {

inline constexpr const char* kSweepWallColumn = "sim_wall_s";
// Between a row's caveats in its `caveats` field (none of config/caveats.cpp's texts holds it).
inline constexpr const char* kSweepCaveatSeparator = " | ";

std::vector<std::string> sweep_csv_header(const config::SweepPlan& plan, bool token_budget);
std::vector<std::string> sweep_csv_fields(const config::SweepPoint& point,
                                          const predict::SweepResult& r, bool token_budget);
// A row's figure under a result column's name (step_time_s, breakdown.compute, days, ...);
// empty where the row lacks it or the column is not a figure (status, message,
// fits_in_memory, the id and the varied values).
std::optional<double> sweep_figure(const predict::SweepResult& r, std::string_view column);
// A CSV row's result, read by the header's column names (`plan --resume` and `sweep
// --resume` keep rows so): figures read back exactly (the writer writes the shortest text
// that does); a column the header lacks leaves its figure unset. Throws InputError naming
// `where` and the column for a malformed row.
predict::SweepResult sweep_result_from_fields(const std::vector<std::string>& header,
                                              const std::vector<std::string>& fields,
                                              const std::string& where);
// `--deterministic` (sweep, plan): a row's fields with the measured wall time (sim_wall_s,
// the last field, the one figure that differs between runs) left empty, so the same rows
// write the same file byte for byte; sweep_result_from_fields reads the empty field as 0
// (a row kept so by a run without the flag is then written with a wall time of 0).
std::vector<std::string> without_wall_time(std::vector<std::string> fields);
// One CSV record with its line end; fields with a comma, quote or line break are quoted.
std::string csv_line(const std::vector<std::string>& fields);

// A sweep's or a plan's rows: each with its CSV fields (as written) and its result, typed.
// The summaries, pages and JSON rank and show the typed results; the fields are what the
// CSV writes (and the varied values, which are text). Read back from a file, a last line
// without its line end (a sweep killed while writing) is dropped and counted; any other
// malformed line, or a figure that is no number, is an InputError naming the file and
// line or row.
struct SweepCsv {
  std::vector<std::string> header;
  struct Row {
    std::int64_t id = 0;
    std::vector<std::string> fields;
    predict::SweepResult result;
  };
  std::vector<Row> rows;  // in file order
  bool dropped_partial_line = false;
};
SweepCsv read_sweep_csv(const std::string& path);
// InputError naming `path` and the first row whose `predicted_with` column
// (predict::predicted_with) is not `with` (`whose`: what has it, "this run predicts with"):
// rows predicted with other --uncalibrated, --headroom or --set values than the run that
// resumes or merges them are never mixed silently.
void check_predicted_with(const SweepCsv& csv, const std::string& path, const std::string& with,
                          const std::string& whose);
// One row as `sweep --json` gives it: status and message as text, the predicted figures as
// numbers (floating point, from the typed result), the id and the varied values as their
// JSON, a missing figure or empty field as null; the wall time left out.
nlohmann::ordered_json sweep_row_json(const std::vector<std::string>& header,
                                      const SweepCsv::Row& row);
// Header and rows sorted by id, as the finished CSV holds them.
std::string sweep_csv_text(const SweepCsv& csv);

// Shards joined: the headers and every row's predicted_with must agree (else InputError). Rows
// sorted by id; a row found in several files is kept once, listed in `duplicated`, and in
// `conflicting` where the copies differ in more than the wall time. `missing`: ids absent from 0 up
// to the largest id (or up to expected_rows - 1 when given).
struct SweepMerge {
  SweepCsv csv;
  std::vector<std::int64_t> missing, duplicated, conflicting;
  std::int64_t dropped_partial_lines = 0;
};
SweepMerge merge_sweep_csvs(const std::vector<std::string>& paths,
                            std::optional<std::int64_t> expected_rows);

// What the summary describes besides the rows.
struct SweepSummaryInfo {
  std::string name, sweep_file, output;
  std::int64_t rows = 0;          // rows of the whole sweep
  std::int64_t combinations = 0;  // before the layout rules
  std::vector<std::pair<std::string, std::int64_t>> pruned;
  std::int64_t shard_index = 0, shard_count = 1;
  config::SweepObjective objective = config::SweepObjective::tokens_per_s_per_gpu;
  bool token_budget = false;
  int top = 10;
};
// The top K ok rows by the objective (ties: lower id first) and the Pareto front: with a
// token budget, the rows no other row beats in both GPU-hours and days; without, the
// rows no other row beats in both fewer GPUs and more tokens/s for the whole cluster.
nlohmann::ordered_json sweep_summary_json(const SweepCsv& csv, const SweepSummaryInfo& info);
std::string sweep_summary_text(const SweepCsv& csv, const SweepSummaryInfo& info);

// `moesim plan`'s summary (predict/plan.hpp): the evaluated candidates as a sweep's rows
// (`sweep.rows`: how many; `sweep.combinations`: the whole space, layouts x settings;
// `sweep.pruned`: candidates in layouts a layout rule drops), with the search's counts.
struct PlanSummaryInfo {
  SweepSummaryInfo sweep;
  std::int64_t gpus = 0;
  std::int64_t layouts = 0, layouts_expanded = 0;
  std::int64_t simulated = 0;
  std::int64_t bounded_unexpanded = 0;   // candidates in layouts the layout bound pruned whole
  std::vector<std::int64_t> violations;  // candidates better than a bound of theirs
  double bound_wall_s = 0, simulate_wall_s = 0, wall_s = 0;  // wall_s: the whole plan
  std::vector<std::string> settings;  // the settings varied per layout (CSV columns)
  // `plan --given`: the scenario as given, as a CSV row of the plan's columns (its values
  // where the file sets them), and its rank among the candidates (absent: not simulated).
  std::optional<SweepCsv::Row> given;
  std::optional<std::int64_t> given_rank;
  bool given_rank_exact = true;      // false: --given-limit stopped the ranking (a lower bound)
  std::int64_t given_simulated = 0;  // simulated for the rank alone
  // Every simulated candidate's bound: (id, the objective's best possible value).
  std::vector<std::pair<std::int64_t, double>> bounds;
  std::vector<predict::PlanEvidence> given_evidence =
      {};  // `--given`: the top K above it, what backs each gain
  // Nothing fit: the smallest cluster where a candidate does (predict::Plan), and how far
  // the doubling search went.
  std::optional<std::int64_t> smallest_fitting_gpus = std::nullopt;
  std::int64_t fit_searched_to = 0;
  std::optional<double> token_budget = std::nullopt;  // tokens (the cost per million tokens)
  std::vector<predict::PlanEvidence> runner_ups =
      {};                       // the best over each other top K (predict::Plan)
  std::string gpu = {};         // the GPU planned on (a band's stratum, predict/bands.hpp)
  std::string model = {};       // the model planned (a band's first stratum)
  std::int64_t per_layout = 1;  // settings combinations per layout (predict::Plan)
};
// {name, scenario, gpus, output, objective, combinations, layouts {kept, expanded},
// settings, evaluated, simulated, fates {rule, invalid, memory, duplicate, bound,
// dominated, simulated, error} (adding up to combinations), pruned_layouts, bound_violations,
// wall_s {bound, simulate, total}, top}, and with --given, given: its row, rank,
// rank_exact and simulated_for_rank; with two or more in the top, winner: {id, over [the
// best's evidence over each other top row: id (the other's), gain_pct, decisions, support,
// columns, band_pct, within_band]}.
// A plan's evaluated candidates as CSV rows (the layout columns, then the settings'), and
// its summary's figures; `scenario_file` and `output` label it.
SweepCsv plan_csv(const predict::Plan& plan);
PlanSummaryInfo plan_summary_info(const predict::Plan& plan, const std::string& scenario_file,
                                  const std::string& output, int top);
nlohmann::ordered_json plan_summary_json(const SweepCsv& csv, const PlanSummaryInfo& info);
std::string plan_summary_text(const SweepCsv& csv, const PlanSummaryInfo& info);

// What each array task asks Slurm for (sbatch's options of the same names). The default
// runs on a small node (2 CPUs); an empty string leaves that one to the cluster's default.
// The CLI checks them (cli/sweep.cpp) before they reach a #SBATCH line.
struct SlurmResources {
  int cpus_per_task = 2;
  std::string partition, time, account;
};

// An `sbatch --array` script running the sweep as `tasks` shards (each resumes its own
// CSV when requeued or resubmitted) and, as its last comment, the merge command. The task
// execs moesim, so Slurm's SIGTERM reaches it (cli/terminate.hpp). `options`: the sweep's
// own flags every task must repeat (" --uncalibrated --headroom 4"), or empty.
std::string slurm_script(const std::string& moesim, const std::string& sweep_file,
                         const std::string& name, std::int64_t rows, int tasks,
                         const std::string& out_prefix, const std::string& options = "",
                         const SlurmResources& resources = {});

}  // namespace moesim::reports
