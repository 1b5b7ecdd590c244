#include "predict/corpus.hpp"

#include <chrono>
#include <cmath>

#include "calibration/corpus_fit.hpp"
#include "calibration/corpus_params.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {
namespace {

double mean_abs(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::abs(x);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double pct(double log_ratio) { return 100 * (std::exp(log_ratio) - 1); }

}  // namespace

CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto table = calibration::corpus_params();
  std::vector<calibration::CorpusParam> params;
  for (const auto& p : table) params.push_back({std::string(p.name), p.initial, p.lo, p.hi});
  // Runs kept for checking (measured.held_out) are not fitted; the fit sees the others.
  std::vector<std::size_t> fitted, held;
  for (std::size_t i = 0; i < runs.size(); ++i) (runs[i].measured->held_out.empty() ? fitted : held).push_back(i);
  if (fitted.empty()) throw std::invalid_argument("calibrate_corpus: every run is held out");
  const auto log_error = [&](std::size_t run, const std::vector<double>& theta) {
    config::Scenario sc = runs[run];
    for (std::size_t j = 0; j < table.size(); ++j)
      if (table[j].applies_to(sc.system)) table[j].set(sc.system, theta[j]);
    return std::log(predicted_metric(*sc.measured, predict(sc)) / sc.measured->value);
  };
  const calibration::CorpusEval eval = [&](const std::vector<std::vector<double>>& thetas,
                                           const std::vector<std::size_t>& which) {
    std::vector<double> r(which.size());
    run_parallel(which.size(), jobs, [&](std::size_t i) { r[i] = log_error(fitted[which[i]], thetas[i]); });
    return r;
  };
  const auto fit = calibration::fit_corpus(params, fitted.size(), eval);
  CorpusResult out;
  out.values = fit.theta;
  out.points = fit.points;
  out.evaluations = fit.evaluations;
  std::vector<double> held_error(held.size());
  run_parallel(held.size(), jobs, [&](std::size_t i) { held_error[i] = log_error(held[i], fit.theta); });
  std::vector<double> in, loo;
  std::size_t f = 0, h = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& sc = runs[i];
    const bool is_held = !sc.measured->held_out.empty();
    const double in_pct = is_held ? pct(held_error[h]) : pct(fit.in_sample[f]);
    const double loo_pct = is_held ? in_pct : pct(fit.leave_one_out[f]);
    CorpusRow row{sc.name, sc.file, sc.system.name,
                  std::string(config::measured_metric_names().name(sc.measured->metric)),
                  !sc.measured->in_sample.empty(), sc.measured->held_out, sc.measured->value, in_pct, loo_pct};
    (is_held ? h : f) += 1;
    if (!is_held) in.push_back(row.in_sample_pct);
    if (!is_held && !row.in_sample_only) loo.push_back(row.loo_pct);
    out.rows.push_back(std::move(row));
  }
  out.fitted_runs = static_cast<int>(fitted.size());
  out.mape_in = mean_abs(in);
  out.loo_mape = mean_abs(loo);
  out.loo_runs = static_cast<int>(loo.size());
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace moesim::predict
