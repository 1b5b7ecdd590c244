// cli/validate.cpp: `moesim validate`: predicted against measured over scenario files and folders
// (predict/validate.hpp), with JUnit, Markdown and baseline outputs for CI (reports/validate.hpp).
#include "cli/commands.hpp"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "predict/validate.hpp"
#include "reports/validate.hpp"

namespace moesim::cli {
namespace {

// The rows and their summaries: predict/validate.hpp (shared with `report --validate`);
// their text and JSON: reports/validate.hpp.
class Validate final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("paths", paths_, "scenario files or folders")->required();
    app.add_flag("--json", json_, "print the rows as one JSON object");
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default: all cores)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--junit", junit_,
                   "also write a JUnit XML report here (one test case per measured run)");
    app.add_option("--markdown", markdown_,
                   "also write a Markdown summary here (a CI job summary)");
    app.add_option("--baseline", baseline_,
                   "an earlier `validate --json` output: flag predictions that moved more than "
                   "--baseline-tolerance "
                   "(exit 1)");
    app.add_flag("--unmeasured", unmeasured_,
                 "also predict the scenarios without a measured block (planning and what-if "
                 "scenarios): their step "
                 "times enter --json, --junit, --markdown and the --baseline comparison (implied "
                 "by --baseline)");
    check_finite(app.add_option("--baseline-tolerance", baseline_tol_,
                                "percent a prediction may move against --baseline (default 1)"),
                 0, 1000);
    app.add_option("--evidence", evidence_,
                   "also write the pairs' record per decision here "
                   "(calibration/evidence/decisions.json's format: "
                   "what plan cites as evidence)");
    app.add_flag(
        "--deterministic", deterministic_,
        "leave out each row's simulation wall time (`wall_s` in --json, JUnit's `time`), the one "
        "figure "
        "that differs between runs: the outputs are then byte-identical for the same input");
    add_uncalibrated(app, uncalibrated_);
    add_system_set(app, set_);
  }
  int run(Io& io) override {
    // Files without a `measured` block are skipped and counted, except that scenarios
    // among them (planning and what-if ones) are predicted with --unmeasured or --baseline,
    // to be watched for drift. A file with one that does not load is an input error.
    const config::ScenarioFileSets sets = config::sort_scenario_files(paths_);
    const bool unmeasured = unmeasured_ || !baseline_.empty();
    const config::LoadOptions opts = config::load_options(uncalibrated_, set_);
    // The evidence file is what plan cites for the shipped model: never a what-if's.
    if (!set_.empty() && !evidence_.empty())
      throw config::InputError("<command line>", "--evidence",
                               "records the calibrated model's pairs for plan; it is not written "
                               "under --set");
    reports::ValidateExtras x;
    x.skipped = sets.other + (unmeasured ? 0 : static_cast<int>(sets.unmeasured.size()));
    x.tolerance_pct = baseline_tol_;
    x.timings = !deterministic_;
    x.system_set = config::system_set_texts(opts);
    // The baseline is read before anything is simulated: a bad file fails fast.
    std::optional<std::vector<reports::BaselineRow>> baseline;
    if (!baseline_.empty())
      baseline =
          reports::read_baseline(nlohmann::json(config::read_json_file(baseline_)), baseline_);
    const std::vector<predict::ValidateRow> rows =
        predict::validate_files(sets.measured, opts, jobs_);
    if (unmeasured) x.predictions = predict::predict_files(sets.unmeasured, opts, jobs_);
    if (baseline)
      x.moved = reports::compare_baseline(rows, x.predictions, *baseline, baseline_tol_);
    const predict::ValidateSummary sum = predict::summarize(rows);
    if (!junit_.empty()) write_file(junit_, reports::validate_junit(rows, sum, x));
    if (!markdown_.empty()) write_file(markdown_, reports::validate_markdown(rows, sum, x));
    if (!evidence_.empty()) write_file(evidence_, reports::evidence_json(sum).dump(2) + "\n");
    if (json_)
      io.out << reports::validate_json(rows, sum, x).dump(2) << "\n";
    else
      io.out << reports::validate_text(rows, sum, x);
    if (rows.empty() && x.predictions.empty()) {
      io.err << fmt::format(
          "moesim validate: no scenario with a measured block under the given paths{}\n",
          sets.unmeasured.empty() ? "" : " (--unmeasured predicts those without one)");
      return 2;
    }
    return sum.failed() || (x.moved && x.moved->flagged > 0) ? 1 : 0;
  }

 private:
  std::vector<std::string> paths_, set_;
  std::string junit_, markdown_, baseline_, evidence_;
  double baseline_tol_ = 1.0;
  bool json_ = false, uncalibrated_ = false, unmeasured_ = false, deterministic_ = false;
  int jobs_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() {
  return std::make_unique<Validate>();
}

}  // namespace moesim::cli
