// cli/report.cpp: `moesim report`: one self-contained HTML page (reports/report.hpp,
// reports/html.hpp) for a scenario, a diff, the measured runs or a sweep CSV.
#include "cli/commands.hpp"

#include <array>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/pair.hpp"
#include "predict/predict.hpp"
#include "predict/validate.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/sweep.hpp"

namespace moesim::cli {
namespace {

// `moesim report`: one self-contained HTML page of charts (reports/report.hpp) for a
// scenario, two scenarios (--diff), the measured runs under paths (--validate, as
// `validate` evaluates them) or a sweep's CSV (--sweep).
class Report final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("inputs", inputs_,
                   "a scenario; with --diff scenarios A and B; with --validate scenario files or "
                   "folders; with "
                   "--sweep a CSV written by moesim sweep");
    app.add_option("-o,--out", out_, "the HTML file to write");
    app.add_flag("--diff", diff_,
                 "compare two scenarios: their breakdowns and the difference by contribution");
    app.add_flag("--validate", validate_,
                 "predicted against measured for the runs with a measured block");
    app.add_flag("--sweep", sweep_,
                 "a sweep CSV: the objective against cluster size, the Pareto front");
    app.add_option("--objective", objective_,
                   "--sweep: the column plotted (default tokens_per_s_per_gpu)");
    jobs_option_ = app.add_option("--jobs", jobs_,
                                  "--validate: scenarios simulated at once (default: all cores)")
                       ->check(CLI::Range(0, 1024));
    add_uncalibrated(app, uncalibrated_);
    add_system_set(app, set_);
  }
  int run(Io& io) override {
    const auto usage = [](const std::string& what, const std::string& message) {
      return config::InputError("<command line>", what, message);
    };
    if (out_.empty())
      throw usage("-o", "give the HTML file to write: moesim report ... -o OUT.html");
    if (int(diff_) + int(validate_) + int(sweep_) > 1)
      throw usage("--diff", "give one of --diff, --validate, --sweep");
    if (!objective_.empty() && !sweep_) throw usage("--objective", "only with --sweep");
    if (jobs_option_->count() && !validate_) throw usage("--jobs", "only with --validate");
    // A sweep's CSV is predicted already: each row says how (predicted_with).
    if (sweep_ && (uncalibrated_ || !set_.empty()))
      throw usage(uncalibrated_ ? "--uncalibrated" : "--set",
                  "not with --sweep: the CSV's rows were predicted when the sweep ran, and each "
                  "says how (predicted_with)");
    const std::size_t want = diff_ ? 2 : 1;
    if (validate_ ? inputs_.empty() : inputs_.size() != want)
      throw usage("inputs",
                  validate_ ? "give scenario files or folders to validate"
                  : diff_   ? "give two scenarios: moesim report --diff A.json B.json -o OUT.html"
                  : sweep_  ? "give one sweep CSV: moesim report --sweep OUT.csv -o OUT.html"
                            : "give one scenario: moesim report FILE.json -o OUT.html");
    const config::LoadOptions opts = config::load_options(uncalibrated_, set_);
    reports::HtmlPage page;
    if (diff_) {
      const std::array<config::Scenario, 2> sc{config::load_scenario_file(inputs_[0], opts),
                                               config::load_scenario_file(inputs_[1], opts)};
      const std::array<predict::Prediction, 2> p = predict::predict_pair(sc[0], sc[1]);
      page = reports::diff_report({sc[0], p[0]}, {sc[1], p[1]});
    } else if (validate_) {
      int skipped = 0;
      const std::vector<std::string> files = config::measured_files(inputs_, skipped);
      if (files.empty())
        throw usage("inputs", "no scenario with a measured block under the given paths");
      page = reports::validate_report(predict::validate_files(files, opts, jobs_), skipped,
                                      config::system_set_texts(opts));
    } else if (sweep_) {
      config::SweepObjective objective = config::SweepObjective::tokens_per_s_per_gpu;
      if (!objective_.empty()) {
        const auto o = config::sweep_objective_names().find(objective_);
        if (!o)
          throw usage("--objective", fmt::format("unknown objective '{}'; known: {}", objective_,
                                                 config::sweep_objective_names().known()));
        objective = *o;
      }
      page = reports::sweep_report(reports::read_sweep_csv(inputs_[0]), inputs_[0], objective);
    } else {
      // The figures as `run` predicts them; the timeline from a traced simulation of every
      // microbatch (run --trace's), on a second thread.
      const config::Scenario sc = config::load_scenario_file(inputs_[0], opts);
      const std::array<predict::Prediction, 2> p = predict::predict_with_trace(sc);
      page = reports::run_report(sc, p[0], p[1]);
    }
    const std::string html = reports::html_page(page);
    std::ofstream f(out_, std::ios::binary | std::ios::trunc);
    if (!f || !(f << html) || !f.flush())
      throw config::InputError(out_, "", "cannot write the file");
    io.out << fmt::format("wrote {} ({} charts, {:.0f} KB)\n", out_, page.charts.size(),
                          html.size() / 1024.0);
    return 0;
  }

 private:
  std::vector<std::string> inputs_, set_;
  CLI::Option* jobs_option_ = nullptr;
  std::string out_, objective_;
  bool diff_ = false, validate_ = false, sweep_ = false, uncalibrated_ = false;
  int jobs_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_report_command() {
  return std::make_unique<Report>();
}

}  // namespace moesim::cli
