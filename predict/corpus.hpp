// predict/corpus.hpp: `moesim calibrate corpus`'s fit: the cross-run physical quantities
// of calibration/corpus_params.hpp fitted over every measured run (the numerics:
// calibration/corpus_fit.hpp, a Huber fit of the log errors with each run's leave-one-out
// error), each run predicted here on `jobs` threads. reports/corpus.hpp prints the result
// and writes the profile that carries the values (calibration/profiles/corpus.json).
// A measured block with "in_sample" (the run is calibration data elsewhere, as A14 is for
// docs/reference/component-timings.md) is fitted and reported, but kept out of the
// leave-one-out mean.
// Pairs (issue #44): every measured pair among the runs (predict/validate.hpp's
// compare_pairs: measured.compare_with and the series' consecutive sizes), its predicted
// ratio at the fitted values and out of sample: both its runs simulated at theta_-S, the
// fit without S, the pair's runs that were fitted (calibration::theta_without). A pair of
// held-out runs has nothing fitted to it: its out-of-sample ratio is its in-sample one.
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::predict {

struct CorpusRow {
  std::string name, file, system, gpu, metric;
  std::string model;            // workload::ModelConfig::name (the bands' first stratum)
  bool in_sample_only = false;  // kept out of the leave-one-out mean
  std::string held_out;         // not fitted (measured.held_out): its error at the fitted values
  double measured = 0, in_sample_pct = 0, loo_pct = 0;
  // Predicted over measured step time, out of sample (leave-one-out where fitted; a
  // held-out run's is its error at the fitted values): predict/bands.hpp's residual.
  double step_ratio = 1;
};

struct CorpusPairRow {
  std::string name, decision;
  int fitted_runs = 0;  // of its two runs, those the fit saw (left out for loo_error_pct)
  double measured_ratio = 0, in_sample_ratio = 0, loo_ratio = 0;
  double in_sample_error_pct = 0, loo_error_pct = 0;  // 100 (predicted / measured - 1)
  bool significant = false, loo_direction_right = true;
};

struct CorpusResult {
  std::vector<double> values;  // per calibration::corpus_params(), in order
  std::vector<int> points;     // per parameter: the runs whose prediction it moves
  std::vector<std::vector<std::string>>
      cpus;  // per parameter: those runs' host CPUs (node.cpu), sorted
  std::vector<CorpusRow> rows;
  double mape_in = 0, loo_mape = 0;
  int loo_runs = 0;
  int fitted_runs = 0;  // the runs but the held-out ones
  std::vector<CorpusPairRow> pairs;
  double pairs_mae_in = 0, pairs_mae_loo = 0;
  int pairs_with_fitted_runs = 0, pairs_wrong_direction_loo = 0;
  int evaluations = 0;
  double wall_s = 0;
};

// Fits the parameters over the scenarios (each with a measured block), simulating on
// `jobs` threads (0: all cores).
CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs);

}  // namespace moesim::predict
