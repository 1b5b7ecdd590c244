// reports/report.hpp: `moesim report`'s five pages (reports/html.hpp writes them):
//   run_report       one prediction: the critical rank's breakdown, memory by part against
//                    the GPU's capacity, time per module, the critical rank's timeline
//   diff_report      two predictions: their breakdowns side by side and the step-time
//                    difference by contribution (reports::diff_json)
//   validate_report  predicted against measured per run (predict/validate.hpp)
//   sweep_report     a sweep CSV: the objective against cluster size, the Pareto front
//                    (reports::sweep_summary_json) highlighted
//   plan_report      a plan (`moesim plan --html`): why the winner wins (the top K's
//                    breakdowns beside the scenario as given; the winner against it and
//                    the others: differing settings, gain, band, the decisions' measured
//                    record; its step minus the reference's by term), where the
//                    candidates went, and each simulated candidate against its bound
// Formatting only: every number is a prediction's, a sweep row's or a validation row's.
// One file per page (report_run.cpp, report_diff.cpp, report_validate.cpp,
// report_sweep.cpp, report_plan.cpp); what they share: report_charts.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "config/sweep_file.hpp"
#include "predict/predict.hpp"
#include "predict/validate.hpp"
#include "reports/diff.hpp"
#include "reports/html.hpp"
#include "reports/sweep.hpp"

namespace moesim::reports {

// `traced`: the same scenario predicted with StepOptions::trace (every microbatch
// simulated, spans kept) for the timeline; `p`: as `moesim run` predicts it, for every
// other figure.
HtmlPage run_report(const config::Scenario& sc, const predict::Prediction& p,
                    const predict::Prediction& traced);
HtmlPage diff_report(const DiffSide& a, const DiffSide& b);
// `system_set`: the --set texts the rows were predicted with (validate --set's what-if).
HtmlPage validate_report(const std::vector<predict::ValidateRow>& rows, int skipped,
                         const std::vector<std::string>& system_set = {});
// `file`: where the CSV was read (shown); the objective names the y column.
HtmlPage sweep_report(const SweepCsv& csv, const std::string& file,
                      config::SweepObjective objective);
// `csv` and `info` as plan_csv and plan_summary_info give them (reports/sweep.hpp).
HtmlPage plan_report(const SweepCsv& csv, const PlanSummaryInfo& info);

// The timeline of one rank's compute stream(s) as at most about `max_bars` bars. Kernels
// are classified by name: *.fwd, *.fprop forward; *.bwd, *.dgrad, *.wgrad, *.grad_quant*
// and *.recompute backward; optimizer.* optimizer; others (quantize, swizzle) take their
// neighbours' pass. Adjacent kernels of the same pass and part (the name up to its first
// dot: attn, moe, shared, ...) that touch are one bar; past `max_bars`, the smallest
// gaps between bars of the same pass are closed first (chunk-level bars with their
// longer idle gaps kept), then, if still needed, the smallest gaps of any pass ("mixed").
struct TimelineBar {
  std::string lane;  // the stream ("compute", DualPipe's "compute.pair")
  std::string pass;  // "forward", "backward", "optimizer", "mixed"
  std::string
      parts;  // "attn, moe": the parts of its kernels, first seen first (at most 4, then "...")
  double start_s = 0, end_s = 0;
  double busy_s = 0;  // time its kernels ran
  std::int64_t kernels = 0;
};
std::vector<TimelineBar> timeline_bars(const schedules::StepResult& step, int rank,
                                       std::size_t max_bars);

}  // namespace moesim::reports
