// cli/plan.cpp: `moesim plan` (issue #26 items 1-2): the best parallel layouts and
// settings of a scenario's model on a cluster size. The space and the search are
// predict/plan.hpp's (predict::plan); this file reads the options, writes the CSV and
// prints the summary (reports/sweep.hpp).
#include "cli/commands.hpp"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "predict/plan.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/sweep.hpp"

namespace moesim::cli {
namespace {

class Plan final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("scenario", file_, "the scenario whose model, system and training settings are planned")->required();
    app.add_option("--gpus", gpus_, "the cluster size to plan for (default: the scenario's)")
        ->check(CLI::Range(1, 1 << 30));
    app.add_option("--objective", objective_,
                   "what to rank by: a sweep objective (docs/SWEEP_FORMAT.md; default tokens_per_s_per_gpu)");
    app.add_option("--token-budget", token_budget_, "tokens to train: rows gain days, GPU-hours, energy and cost")
        ->check(CLI::Range(1.0, 1e30));
    app.add_option("--top", top_, "candidates listed by the objective")->check(CLI::Range(0, 1000000));
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default 0: all cores)")->check(CLI::Range(0, 1024));
    app.add_option("-o,--out", out_, "CSV of every candidate (default: plan-<scenario>.csv in this folder)");
    app.add_flag("--json", json_, "print the summary as one JSON object");
    app.add_option("--html", html_,
                   "also write the plan's page: the candidates' fates, the top K's breakdowns beside the scenario "
                   "as given, each simulated candidate against its bound (one self-contained HTML file)");
    std::string groups;
    for (const auto& g : predict::plan_setting_groups())
      groups += fmt::format("\n  {}{}: {}", g.name, g.by_default ? " (default)" : "", g.what);
    app.add_option("--settings", settings_,
                   "settings varied for every layout, comma-separated, or none (default: those marked):" + groups)
        ->delimiter(',');
    CLI::Option* given = app.add_flag("--given", given_,
                 "also predict the scenario as given (its own layout and settings) and rank it: every candidate "
                 "whose bound beats it is simulated, so the rank is exact");
    app.add_option("--given-limit", given_limit_,
                   "--given: simulate at most this many candidates for the rank beyond those the top K need "
                   "(default 0: no limit); past it the rank is a lower bound")
        ->check(CLI::Range(0, 1 << 30))
        ->needs(given);
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
  }

  int run(Io& io) override {
    predict::PlanRequest req{file_, gpus_, settings_, objective_,
                             token_budget_ > 0 ? std::optional<double>(token_budget_) : std::nullopt,
                             top_, jobs_, config::LoadOptions{!uncalibrated_, headroom_}, given_, given_limit_};
    const predict::Plan p = predict::plan(req);
    const std::string out = !out_.empty() ? out_ : p.name + ".csv";
    const reports::SweepCsv all = reports::plan_csv(p);
    write_file(out, reports::sweep_csv_text(all));
    const reports::PlanSummaryInfo info = reports::plan_summary_info(p, file_, out, top_);
    if (!html_.empty()) write_file(html_, reports::html_page(reports::plan_report(all, info)));
    if (json_) io.out << reports::plan_summary_json(all, info).dump(2) << "\n";
    else io.out << reports::plan_summary_text(all, info);
    return 0;
  }

 private:
  std::string file_, objective_, out_, html_;
  std::vector<std::string> settings_;
  std::int64_t gpus_ = 0, given_limit_ = 0;
  double token_budget_ = 0, headroom_ = 0;
  int top_ = 10, jobs_ = 0;
  bool json_ = false, uncalibrated_ = false, given_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() { return std::make_unique<Plan>(); }

}  // namespace moesim::cli
