// predict/corpus.hpp: `moesim calibrate corpus`'s fit: the cross-run physical quantities
// of calibration/corpus_params.hpp fitted over every measured run (the numerics:
// calibration/corpus_fit.hpp, a Huber fit of the log errors with each run's leave-one-out
// error), each run predicted here on `jobs` threads. reports/corpus.hpp prints the result
// and writes the profile that carries the values (calibration/profiles/corpus.json).
// A measured block with "in_sample" (the run is calibration data elsewhere, as A14 is for
// shared/reference/component-timings.md) is fitted and reported, but kept out of the
// leave-one-out mean.
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::predict {

struct CorpusRow {
  std::string name, file, system, metric;
  bool in_sample_only = false;  // kept out of the leave-one-out mean
  std::string held_out;         // not fitted (measured.held_out): its error at the fitted values
  double measured = 0, in_sample_pct = 0, loo_pct = 0;
};

struct CorpusResult {
  std::vector<double> values;  // per calibration::corpus_params(), in order
  std::vector<int> points;     // per parameter: the runs whose prediction it moves
  std::vector<CorpusRow> rows;
  double mape_in = 0, loo_mape = 0;
  int loo_runs = 0;
  int fitted_runs = 0;  // the runs but the held-out ones
  int evaluations = 0;
  double wall_s = 0;
};

// Fits the parameters over the scenarios (each with a measured block), simulating on
// `jobs` threads (0: all cores).
CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs);

}  // namespace moesim::predict
