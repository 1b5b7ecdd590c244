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
  const calibration::CorpusEval eval = [&](const std::vector<std::vector<double>>& thetas,
                                           const std::vector<std::size_t>& which) {
    std::vector<double> r(which.size());
    run_parallel(which.size(), jobs, [&](std::size_t i) {
      config::Scenario sc = runs[which[i]];
      for (std::size_t j = 0; j < table.size(); ++j)
        if (table[j].applies_to(sc.system)) table[j].set(sc.system, thetas[i][j]);
      r[i] = std::log(predicted_metric(*sc.measured, predict(sc)) / sc.measured->value);
    });
    return r;
  };
  const auto fit = calibration::fit_corpus(params, runs.size(), eval);
  CorpusResult out;
  out.values = fit.theta;
  out.points = fit.points;
  out.evaluations = fit.evaluations;
  std::vector<double> in, loo;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& sc = runs[i];
    CorpusRow row{sc.name, sc.file, sc.system.name,
                  std::string(config::measured_metric_names().name(sc.measured->metric)),
                  !sc.measured->in_sample.empty(), sc.measured->value, pct(fit.in_sample[i]),
                  pct(fit.leave_one_out[i])};
    in.push_back(row.in_sample_pct);
    if (!row.in_sample_only) loo.push_back(row.loo_pct);
    out.rows.push_back(std::move(row));
  }
  out.mape_in = mean_abs(in);
  out.loo_mape = mean_abs(loo);
  out.loo_runs = static_cast<int>(loo.size());
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace moesim::predict
