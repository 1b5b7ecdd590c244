// reports/validate.hpp: `moesim validate`'s outputs: the table of predicted against
// measured per run with the mean absolute errors overall, by system and by dispatcher
// (text or one JSON object), and for CI (issue #17 item 5): a JUnit
// XML report (one test case per measured run, a failure beyond its tolerance with
// predicted and measured in the message), a Markdown summary for a job page, and the
// comparison with an earlier run's `validate --json` (a prediction that moved more than
// a tolerance is flagged, whether or not it left its measurement's tolerance).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/validate.hpp"

namespace moesim::reports {

// One scenario against the baseline (matched by file, else by name, among the baseline's
// rows of the same kind: measured runs or predictions only).
struct BaselineMove {
  std::string name, file;
  std::optional<double> before, after;  // predictions; absent: new or no longer validated
  double moved_pct = 0;                 // 100 (after - before) / before
  bool flagged = false;                 // |moved_pct| > tolerance
  bool measured = true;                 // a measured run's metric, else a prediction's step time
};
struct BaselineCheck {
  // The rows' moves, then the predictions', then the baseline's rows not validated now.
  std::vector<BaselineMove> moves;
  int flagged = 0;
};
// The rows of an earlier `moesim validate --json` output (`rows`, and `predictions` where it
// has them); InputError naming `file` when it is not one.
struct BaselineRow {
  std::string name, file;
  double predicted = 0;
  bool measured = true;  // from `rows`; else from `predictions` (a step time)
};
std::vector<BaselineRow> read_baseline(const nlohmann::json& baseline, const std::string& file);
BaselineCheck compare_baseline(const std::vector<predict::ValidateRow>& rows,
                               const std::vector<predict::PredictionRow>& predictions,
                               const std::vector<BaselineRow>& baseline, double tolerance_pct);
std::string baseline_text(const BaselineCheck& c, double tolerance_pct);
nlohmann::ordered_json baseline_json(const BaselineCheck& c, double tolerance_pct);

// What `validate` reports beside the measured rows: scenarios without a measured block
// predicted for drift, the files skipped (neither), and the baseline comparison where one
// was given. With it, a run or prediction that moved beyond `tolerance_pct` is a failed
// JUnit test case (type "moved against the baseline") and a flagged Markdown row, as
// `validate --baseline`'s exit status says.
struct ValidateExtras {
  std::vector<predict::PredictionRow> predictions;
  int skipped = 0;
  std::optional<BaselineCheck> moved;
  double tolerance_pct = 0;
  // Each row's simulation wall time (`wall_s` in JSON, `time` in JUnit): the one figure that
  // differs between runs; false leaves it out (validate --deterministic).
  bool timings = true;
  // `--set PATH=VALUE`, each as config::to_string writes it (config::system_set_texts): every
  // prediction a what-if on those values, said first in the text and as `system_set` in the
  // JSON.
  std::vector<std::string> system_set;
};
// `sum`: predict::summarize(rows).
std::string validate_junit(const std::vector<predict::ValidateRow>& rows,
                           const predict::ValidateSummary& sum, const ValidateExtras& x);
std::string validate_markdown(const std::vector<predict::ValidateRow>& rows,
                              const predict::ValidateSummary& sum, const ValidateExtras& x);
// The rows with their summary (predict::summarize(rows)) and the extras.
nlohmann::ordered_json validate_json(const std::vector<predict::ValidateRow>& rows,
                                     const predict::ValidateSummary& sum, const ValidateExtras& x);
// The what-if corpus's record per decision (config/decisions.hpp), as
// calibration/evidence/decisions.json holds it: `validate --evidence FILE` writes it; figures
// rounded to 0.01% so that the file is stable. Every decision has an entry (pairs 0 where the
// corpus has none), and the setting -> decision table plan uses is listed with it.
nlohmann::ordered_json evidence_json(const predict::ValidateSummary& sum);
std::string validate_text(const std::vector<predict::ValidateRow>& rows,
                          const predict::ValidateSummary& sum, const ValidateExtras& x);
// What ValidateExtras::system_set makes of every prediction, as the text's first line and the
// validate page's fact say it: "every system with PATH=VALUE set on the command line ...".
std::string what_if_text(const std::vector<std::string>& system_set);

}  // namespace moesim::reports
