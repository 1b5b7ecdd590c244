#include "predict/corpus.hpp"

#include <chrono>
#include <cmath>
#include <set>

#include "calibration/corpus_fit.hpp"
#include "calibration/corpus_params.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"
#include "predict/validate.hpp"

namespace moesim::predict {
namespace {

double mean_abs(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::abs(x);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double pct(double log_ratio) {
  return 100 * (std::exp(log_ratio) - 1);
}

// The pairs among `rows` (every run at the fitted values), in sample and out of sample.
template <class PredictAt>
void corpus_pairs(const std::vector<config::Scenario>& runs, const std::vector<std::size_t>& fitted,
                  const calibration::CorpusFit& fit, const std::vector<ValidateRow>& rows,
                  const PredictAt& predict_at, int jobs, CorpusResult& out) {
  const PairsAndFamilies in = compare_pairs(rows, fit_series(rows));
  std::vector<std::size_t> fit_index(runs.size(),
                                     runs.size());  // run -> its index among the fitted
  for (std::size_t f = 0; f < fitted.size(); ++f) fit_index[fitted[f]] = f;
  const auto run_of = [&](const ValidateRow* r) {
    return static_cast<std::size_t>(r - rows.data());
  };
  std::vector<CorpusPairRow> pairs(in.pairs.size());
  run_parallel(in.pairs.size(), jobs, [&](std::size_t k) {
    const PairRow& p = in.pairs[k];
    CorpusPairRow& row = pairs[k];
    row.name = p.name;
    row.decision = std::string(config::decision_names().name(p.decision));
    row.measured_ratio = p.measured_ratio;
    row.in_sample_ratio = row.loo_ratio = p.predicted_ratio;
    row.in_sample_error_pct = row.loo_error_pct = p.ratio_error_pct;
    row.significant = p.significant;
    row.loo_direction_right = p.direction_right;
    std::vector<std::size_t> left;
    for (const std::size_t run : {run_of(p.a), run_of(p.b)})
      if (fit_index[run] < fitted.size()) left.push_back(fit_index[run]);
    row.fitted_runs = static_cast<int>(left.size());
    if (left.empty()) return;
    // Both runs at theta_-S, the other rows as fitted: the pair found again by its name
    // and decision (a series pair's ratio depends on its two sizes only).
    const std::vector<double> theta = calibration::theta_without(fit, left);
    std::vector<ValidateRow> moved = rows;
    for (const std::size_t run : {run_of(p.a), run_of(p.b)})
      moved[run] = validate_row(runs[run].file, runs[run], predict_at(run, theta));
    const PairsAndFamilies again = compare_pairs(moved, fit_series(moved));
    for (const auto& q : again.pairs)
      if (q.name == p.name && q.decision == p.decision) {
        row.loo_ratio = q.predicted_ratio;
        row.loo_error_pct = q.ratio_error_pct;
        row.loo_direction_right = q.direction_right;
      }
  });
  double in_sum = 0, loo_sum = 0;
  for (const auto& row : pairs) {
    in_sum += std::abs(row.in_sample_error_pct);
    loo_sum += std::abs(row.loo_error_pct);
    out.pairs_with_fitted_runs += row.fitted_runs > 0 ? 1 : 0;
    out.pairs_wrong_direction_loo += row.loo_direction_right ? 0 : 1;
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, pairs.size()));
  out.pairs_mae_in = in_sum / n;
  out.pairs_mae_loo = loo_sum / n;
  out.pairs = std::move(pairs);
}

}  // namespace

CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto table = calibration::corpus_params();
  std::vector<calibration::CorpusParam> params;
  for (const auto& p : table) params.push_back({std::string(p.name), p.initial, p.lo, p.hi});
  // Runs kept for checking (measured.held_out) are not fitted; the fit sees the others.
  std::vector<std::size_t> fitted, held;
  for (std::size_t i = 0; i < runs.size(); ++i)
    (runs[i].measured->held_out.empty() ? fitted : held).push_back(i);
  if (fitted.empty()) throw std::invalid_argument("calibrate_corpus: every run is held out");
  const auto predict_at = [&](std::size_t run, const std::vector<double>& theta) {
    config::Scenario sc = runs[run];
    for (std::size_t j = 0; j < table.size(); ++j)
      if (table[j].applies_to(sc.system)) table[j].set(sc.system, theta[j]);
    return predict(sc);
  };
  const auto log_error = [&](std::size_t run, const std::vector<double>& theta) {
    return std::log(predicted_metric(*runs[run].measured, predict_at(run, theta)) /
                    runs[run].measured->value);
  };
  const calibration::CorpusEval eval = [&](const std::vector<std::vector<double>>& thetas,
                                           const std::vector<std::size_t>& which) {
    std::vector<double> r(which.size());
    run_parallel(which.size(), jobs,
                 [&](std::size_t i) { r[i] = log_error(fitted[which[i]], thetas[i]); });
    return r;
  };
  const auto fit = calibration::fit_corpus(params, fitted.size(), eval);
  CorpusResult out;
  out.values = fit.theta;
  out.points = fit.points;
  // Which hosts each parameter was measured on: a quantity fitted on one CPU's runs is
  // an extrapolation on another's (config/caveats.hpp says so in `run`).
  out.cpus.assign(fit.theta.size(), {});
  for (std::size_t j = 0; j < fit.theta.size(); ++j) {
    std::set<std::string> cpus;
    for (std::size_t i = 0; i < fitted.size(); ++i)
      if (std::abs(fit.jacobian[i][j]) > 1e-6) cpus.insert(runs[fitted[i]].system.node.cpu);
    out.cpus[j].assign(cpus.begin(), cpus.end());
  }
  out.evaluations = fit.evaluations;
  // Every run at the fitted values (the held-out runs' errors; the pairs' in-sample ratios).
  std::vector<ValidateRow> rows(runs.size());
  run_parallel(runs.size(), jobs, [&](std::size_t i) {
    rows[i] = validate_row(runs[i].file, runs[i], predict_at(i, fit.theta));
  });
  std::vector<double> held_error;
  for (std::size_t i : held) held_error.push_back(std::log(rows[i].predicted / rows[i].measured));
  std::vector<double> in, loo;
  std::size_t f = 0, h = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& sc = runs[i];
    const bool is_held = !sc.measured->held_out.empty();
    const double in_pct = is_held ? pct(held_error[h]) : pct(fit.in_sample[f]);
    const double loo_pct = is_held ? in_pct : pct(fit.leave_one_out[f]);
    CorpusRow row{sc.name,
                  sc.file,
                  sc.system.name,
                  sc.system.gpu.name,
                  std::string(config::measured_metric_names().name(sc.measured->metric)),
                  sc.model.name,
                  !sc.measured->in_sample.empty(),
                  sc.measured->held_out,
                  sc.measured->value,
                  in_pct,
                  loo_pct};
    // A throughput's error is the step's inverted: step_p / step_m = value_m / value_p.
    const double out_of_sample = 1 + (row.in_sample_only ? in_pct : loo_pct) / 100;
    row.step_ratio = sc.measured->metric == config::MeasuredMetric::step_time_s ? out_of_sample
                                                                                : 1 / out_of_sample;
    (is_held ? h : f) += 1;
    if (!is_held) in.push_back(row.in_sample_pct);
    if (!is_held && !row.in_sample_only) loo.push_back(row.loo_pct);
    out.rows.push_back(std::move(row));
  }
  out.fitted_runs = static_cast<int>(fitted.size());
  corpus_pairs(runs, fitted, fit, rows, predict_at, jobs, out);
  out.mape_in = mean_abs(in);
  out.loo_mape = mean_abs(loo);
  out.loo_runs = static_cast<int>(loo.size());
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace moesim::predict
