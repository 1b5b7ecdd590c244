// predict/validate.hpp: predicted against measured for scenarios with a `measured` block
// (`moesim validate`, `moesim report --validate`): each scenario's prediction of its
// measured metric (predicted_metric) and the relative error
//   error_pct = 100 (predicted - measured) / measured,
// within the file's tolerance when |error_pct| <= tolerance_pct.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "config/load.hpp"

namespace moesim::predict {

// One validated scenario: its prediction of the measured metric.
struct ValidateRow {
  std::string file, name, system, dispatcher, metric;
  double measured = 0, predicted = 0, error_pct = 0, tolerance_pct = 0, wall_s = 0;
  bool ok = false;
};

// Mean absolute error, count and worst run of a group of rows.
struct ErrorSummary {
  int runs = 0;
  double abs_sum = 0;
  const ValidateRow* worst = nullptr;
  void add(const ValidateRow& r) {
    ++runs;
    abs_sum += std::abs(r.error_pct);
    if (!worst || std::abs(r.error_pct) > std::abs(worst->error_pct)) worst = &r;
  }
  double mae() const { return runs ? abs_sum / runs : 0; }
};

// The rows' summaries: all of them, by system and by dispatcher, and how many are beyond
// their tolerance. (It points into `rows`, which must outlive it.)
struct ValidateSummary {
  ErrorSummary all;
  std::map<std::string, ErrorSummary> by_system, by_dispatcher;
  int failed = 0;
};
ValidateSummary summarize(const std::vector<ValidateRow>& rows);

// Loads every file (an InputError for the first that does not load or has no `measured`
// block, before anything is simulated), then predicts them on `jobs` threads (0: all
// cores). Rows keep the files' order.
std::vector<ValidateRow> validate_files(const std::vector<std::string>& files,
                                        const config::LoadOptions& opts, int jobs);

}  // namespace moesim::predict
