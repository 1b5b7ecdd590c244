// predict/validate.hpp: predicted against measured for scenarios with a `measured` block
// (`moesim validate`, `moesim report --validate`): each scenario's prediction of its
// measured metric (predicted_metric) and the relative error
//   error_pct = 100 (predicted - measured) / measured,
// within the file's tolerance when |error_pct| <= tolerance_pct.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/load.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::predict {

// One validated scenario: its prediction of the measured metric.
struct ValidateRow {
  std::string file, name, system, dispatcher, metric, source;
  // The model preset, the tensor-parallel size and whether the run is kept out of the
  // corpus fit (measured.held_out): the summary's groupings by model, by TP and by set.
  std::string model;
  std::int64_t tp = 1;
  bool held_out = false;
  double measured = 0, predicted = 0, error_pct = 0, tolerance_pct = 0, wall_s = 0;
  bool ok = false;
  bool memory = false;  // a measured peak_memory_gib (metric: with its counter and rank)
  // measured.series: the series, the run's GPUs and microbatches per pipeline, and its
  // step time predicted and measured (the measured metric turned into a step: throughput
  // metrics scale as 1 / step).
  std::string series;
  std::int64_t gpus = 0, microbatches = 0;
  double predicted_step_s = 0, measured_step_s = 0, tokens_per_step = 0;
  // The predicted step's top-level terms (step_terms), which sum to predicted_step_s.
  std::vector<std::pair<std::string, double>> step_terms;
  // measured.family and measured.compare_with (pairs and families, below).
  std::string family;
  std::vector<config::MeasuredPair> compare_with;
  // Per-GPU throughput, tokens / s / GPU, at the measured and at the predicted step.
  double measured_per_gpu() const {
    return tokens_per_step / measured_step_s / static_cast<double>(gpus);
  }
  double predicted_per_gpu() const {
    return tokens_per_step / predicted_step_s / static_cast<double>(gpus);
  }
  // The error as a speed, whatever the metric: 100 (measured step / predicted step - 1),
  // positive where the prediction runs faster than the measurement (a throughput metric's
  // error_pct has this sign; a step time's the opposite). Memory rows: their error_pct.
  double speed_error_pct() const {
    return memory ? error_pct : 100 * (measured_step_s / predicted_step_s - 1);
  }
};

// A step's breakdown as its top-level terms, in the order `run` prints them: compute,
// exposed_communication, host_bound_idle, schedule_bubble, stage_imbalance, other,
// straggler_wait (schedules::Breakdown; their sum is the step time, predict/diff.hpp).
std::vector<std::pair<std::string, double>> step_terms(const schedules::Breakdown& b);

// A fixed-recipe scaling series (measured.series), its sizes in order of GPUs:
//   the least-squares line step = a x microbatches + b through the measured steps and
//   through the predicted ones (when the sizes have two or more microbatch counts), and
//   between consecutive sizes the per-GPU throughput ratio r = (tokens / step / GPUs) of
//   the larger over the smaller, measured and predicted, and its error 100 (r_p / r_m - 1).
//   The predicted line split by term: each step term's own least-squares line over the
//   sizes (least squares is linear in the data, so the terms' a and b sum to the
//   predicted a and b): which of the step's terms are paid per microbatch and which once
//   per step (issue #24 item 1).
struct SeriesFit {
  struct TermLine {
    std::string name;
    double a = 0, b = 0;
  };
  std::string name;
  std::vector<const ValidateRow*> sizes;
  bool fitted = false;
  double a_measured = 0, b_measured = 0, a_predicted = 0, b_predicted = 0;
  std::vector<double> ratio_measured, ratio_predicted, ratio_error_pct;  // per size after the first
  std::vector<TermLine> terms;  // when fitted: the predicted line by step term
  double a_error_pct() const { return 100 * (a_predicted / a_measured - 1); }
  double b_error_pct() const { return 100 * (b_predicted / b_measured - 1); }
};
// Points into `rows`, which must outlive it.
std::vector<SeriesFit> fit_series(const std::vector<ValidateRow>& rows);

// A measured pair (issue #44): run B against run A, which differ in one decision. The ratio
// is B's per-GPU throughput over A's (tokens / s / GPU, so that pairs at different sizes or
// batches compare work done per GPU-second), measured and predicted:
//   ratio_error_pct = 100 (predicted_ratio / measured_ratio - 1),
// within the gate when |ratio_error_pct| <= tolerance_pct. The direction is right when both
// ratios are on the same side of 1; a measured difference within 2% (|measured_ratio - 1|
// <= 0.02) has no direction to get wrong (`significant` false).
// Pairs come from measured.compare_with (B's file names A), and from each scaling series'
// consecutive sizes (decision `scale`, gated at the larger of the two runs' tolerances).
struct PairRow {
  std::string name;  // "B vs A"
  const ValidateRow *a = nullptr, *b = nullptr;
  config::Decision decision = config::Decision::layout;
  std::string source;
  double measured_ratio = 0, predicted_ratio = 0, ratio_error_pct = 0, tolerance_pct = 0;
  bool significant = false, direction_right = true, ok = true;
};
inline constexpr double kPairSignificantRatio = 0.02;
// A compare_with that names a run not among the validated ones: reported, never dropped.
struct UnresolvedPair {
  std::string file, run;
};

// A family of runs (measured.family): every member pair ordered by per-GPU throughput,
// predicted against measured. Kendall's tau-a = (concordant - discordant) / pairs, where a
// pair with a tie on either side is neither; pairs_ordered_right = concordant. The regret is
// how much slower, measured, the predicted best member is than the measured best:
//   regret_pct = 100 (measured_per_gpu(measured best) / measured_per_gpu(predicted best) - 1).
struct FamilyRow {
  std::string name;
  std::vector<const ValidateRow*> members;  // in the rows' order
  int pairs = 0, pairs_ordered_right = 0;
  double kendall_tau = 0, regret_pct = 0;
  const ValidateRow *measured_best = nullptr, *predicted_best = nullptr;
};

// Pairs, unresolved pairs and families over the timing rows (points into `rows`).
struct PairsAndFamilies {
  std::vector<PairRow> pairs;
  std::vector<UnresolvedPair> unresolved;
  std::vector<FamilyRow> families;
};
PairsAndFamilies compare_pairs(const std::vector<ValidateRow>& rows,
                               const std::vector<SeriesFit>& series);

// Mean absolute ratio error, count, wrong directions (among significant pairs) and worst of
// a group of pairs.
struct PairSummary {
  int pairs = 0, significant = 0, wrong_direction = 0;
  double abs_sum = 0;
  double max_effect_pct = 0;  // the largest measured difference, 100 |measured_ratio - 1|
  const PairRow* worst = nullptr;
  void add(const PairRow& p) {
    ++pairs;
    max_effect_pct = std::max(max_effect_pct, 100 * std::abs(p.measured_ratio - 1));
    abs_sum += std::abs(p.ratio_error_pct);
    if (p.significant) ++significant;
    if (!p.direction_right) ++wrong_direction;
    if (!worst || std::abs(p.ratio_error_pct) > std::abs(worst->ratio_error_pct)) worst = &p;
  }
  double mae() const { return pairs ? abs_sum / pairs : 0; }
};

// Mean absolute error, count and worst run of a group of rows, and the mean signed error
// as a speed (ValidateRow::speed_error_pct): a group the model runs systematically fast or
// slow shows a bias near its mean absolute error, a group with errors both ways one near 0.
struct ErrorSummary {
  int runs = 0;
  double abs_sum = 0, speed_sum = 0;
  const ValidateRow* worst = nullptr;
  void add(const ValidateRow& r) {
    ++runs;
    abs_sum += std::abs(r.error_pct);
    speed_sum += r.speed_error_pct();
    if (!worst || std::abs(r.error_pct) > std::abs(worst->error_pct)) worst = &r;
  }
  double mae() const { return runs ? abs_sum / runs : 0; }
  double speed_bias() const { return runs ? speed_sum / runs : 0; }
};

// Group names in natural order: digit runs compare as numbers ("tp2" before "tp16").
struct NaturalLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using ErrorGroups = std::map<std::string, ErrorSummary, NaturalLess>;

// The rows' summaries: the timing rows (step time or throughput) all together, and grouped
// by system, dispatcher, set (the corpus the fit sees, the runs held out of it), model and
// TP size; the memory rows apart; how many of either are beyond their tolerance. (It points
// into `rows`, which must outlive it.)
struct ValidateSummary {
  ErrorSummary all;
  ErrorGroups by_system, by_dispatcher, by_set, by_model, by_tp;
  // The groupings in the order the reports print them: the label, the JSON key, the map.
  struct Grouping {
    const char* label;
    const char* json_key;
    const ErrorGroups* groups;
  };
  std::array<Grouping, 5> groupings() const {
    return {{{"system", "by_system", &by_system},
             {"dispatcher", "by_dispatcher", &by_dispatcher},
             {"set", "by_set", &by_set},
             {"model", "by_model", &by_model},
             {"tp", "by_tp", &by_tp}}};
  }
  std::vector<SeriesFit> series;  // fit_series(rows)
  ErrorSummary memory;
  PairsAndFamilies compared;  // compare_pairs(rows, series)
  PairSummary pairs_all;
  std::map<std::string, PairSummary> pairs_by_decision;
  int timing_failed = 0, memory_failed = 0, pairs_failed = 0;  // beyond their tolerance
  int failed() const { return timing_failed + memory_failed + pairs_failed; }
};
ValidateSummary summarize(const std::vector<ValidateRow>& rows);

// One scenario's row (its measured block required) from its prediction: predict_memory's
// for a memory metric, predict's for a timing one.
struct Prediction;
ValidateRow validate_row(const std::string& file, const config::Scenario& sc, const Prediction& p);

// Loads every file (an InputError for the first that does not load or has no `measured`
// block, before anything is simulated), then predicts them on `jobs` threads (0: all
// cores). Rows keep the files' order.
std::vector<ValidateRow> validate_files(const std::vector<std::string>& files,
                                        const config::LoadOptions& opts, int jobs);

// A scenario without a measured block (a planning or what-if scenario), predicted so that
// CI can watch it for drift (`validate --unmeasured`, implied by `--baseline`; issue #27
// item 4): nothing to compare it with but an earlier prediction of itself.
struct PredictionRow {
  std::string file, name, system;
  double step_time_s = 0, tflops_per_gpu = 0, peak_memory_gib = 0, wall_s = 0;
};
// Loads every file (an InputError for the first that does not load), then predicts them on
// `jobs` threads; rows keep the files' order.
std::vector<PredictionRow> predict_files(const std::vector<std::string>& files,
                                         const config::LoadOptions& opts, int jobs);

}  // namespace moesim::predict
