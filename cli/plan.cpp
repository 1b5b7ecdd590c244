// cli/plan.cpp: `moesim plan` (issue #26 items 1-2): the best parallel layouts and
// settings of a scenario's model on a cluster size. The space and the search are
// predict/plan.hpp's (predict::plan); this file reads the options, writes the CSV and
// prints the summary (reports/sweep.hpp).
//
// Kept work (issue #45 item 1): every simulated candidate is appended, as its CSV row, to
// OUT.partial as its wave ends. SIGTERM or SIGINT (cli/terminate.hpp) ends the search
// before the next wave, keeps that file and exits 128 + the signal; `--resume` reads it
// back and simulates only what it lacks (the search is deterministic, so it meets the same
// candidates: the same result as a run never stopped). A finished plan removes it.
#include "cli/commands.hpp"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/terminate.hpp"
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
    app.add_flag("--resume", resume_,
                 "keep the candidates an earlier run of this plan simulated (OUT.partial, kept when SIGTERM or "
                 "SIGINT stopped it); simulate only the rest");
    app.add_option("--emit", emit_,
                   "write the K-th candidate of the ranking as a scenario (--emit-file; with --resume after a "
                   "finished plan nothing is simulated again)")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--emit-file", emit_file_, "where --emit writes (default: plan-<scenario>-K.json in this folder)");
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
  }

  int run(Io& io) override {
    if (emit_ > 0 && top_ > 0 && emit_ > top_)
      throw config::InputError("<command line>", "--emit",
                               fmt::format("candidate {} is past the ranking's {} (--top {})", emit_, top_, top_));
    predict::PlanRequest req{file_, gpus_, settings_, objective_,
                             token_budget_ > 0 ? std::optional<double>(token_budget_) : std::nullopt,
                             top_, jobs_, config::LoadOptions{!uncalibrated_, headroom_}, given_, given_limit_,
                             {}, {}, {}};
    const std::string out =
        !out_.empty() ? out_ : "plan-" + config::load_scenario_file(file_, req.load).name + ".csv";
    const std::string partial = out + ".partial";
    const auto header = [](const predict::PlanColumns& c) {
      config::SweepPlan columns;
      columns.columns = c.names;
      return reports::sweep_csv_header(columns, c.token_budget);
    };
    // Rows kept by an earlier run (--resume), as read and as the search takes them.
    // A stopped plan's journal, else a finished plan's CSV (its simulated rows are what the
    // same search simulates again: the rest of its rows are never looked up).
    reports::SweepCsv old;
    const std::string kept_file = std::filesystem::exists(partial) ? partial : out;
    if (resume_ && std::filesystem::exists(kept_file))
      req.resume = [&](const predict::PlanColumns& c) {
        old = reports::read_sweep_csv(kept_file);
        if (old.header != header(c))
          throw config::InputError(kept_file, "line 1",
                                   "kept by another plan (other columns); remove it or give another -o");
        if (old.dropped_partial_line)
          io.err << fmt::format("moesim plan: {}: dropped a truncated last line\n", kept_file);
        std::map<std::int64_t, predict::SweepResult> rows;
        for (const auto& r : old.rows)
          rows[r.id] = reports::sweep_result_from_fields(r.fields, c.names.size(), c.token_budget,
                                                         fmt::format("{}: row {}", kept_file, r.id));
        return rows;
      };
    // The journal, rewritten at the first wave's end: the kept rows, then each new one as
    // its wave ends (whole lines, flushed).
    std::ofstream journal;
    std::set<std::int64_t> written;
    req.simulated = [&](const predict::PlanColumns& c, const predict::PlanCandidate& cand) {
      if (!journal.is_open()) {
        journal.open(partial, std::ios::binary | std::ios::trunc);
        if (!journal) throw config::InputError(partial, "", "cannot write the file");
        journal << reports::csv_line(header(c));
        for (const auto& r : old.rows)
          if (written.insert(r.id).second) journal << reports::csv_line(r.fields);
      }
      if (written.insert(cand.point.id).second)
        journal << reports::csv_line(reports::sweep_csv_fields(cand.point, cand.row, c.token_budget)) << std::flush;
    };
    const TerminationWatch terminate;
    req.stop = terminate.token();
    const predict::Plan p = predict::plan(req);
    if (p.outcome.stopped) {
      journal.close();
      io.err << fmt::format("moesim plan: stopped by {} after {} simulations; {} keeps them. Run the same command "
                            "with --resume to go on.\n",
                            terminate.signal() == SIGTERM ? "SIGTERM" : "SIGINT", p.outcome.simulated, partial);
      return 128 + terminate.signal();
    }
    journal.close();
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    const reports::SweepCsv all = reports::plan_csv(p);
    write_file(out, reports::sweep_csv_text(all));
    const reports::PlanSummaryInfo info = reports::plan_summary_info(p, file_, out, top_);
    if (!html_.empty()) write_file(html_, reports::html_page(reports::plan_report(all, info)));
    const config::Json summary = reports::plan_summary_json(all, info);
    if (json_) io.out << summary.dump(2) << "\n";
    else io.out << reports::plan_summary_text(all, info);
    if (emit_ > 0) emit(io, p, summary, all.header);
    return 0;
  }

  // --emit K (issue #45 item 4): the K-th of the ranking as a scenario a user can run, diff
  // or edit: the candidate's own scenario (the base with the layout and settings the plan
  // chose), named and described as such, without the base's measurement (not this run's).
  void emit(Io& io, const predict::Plan& p, const config::Json& summary, const std::vector<std::string>& header) const {
    const auto& top = summary.at("top");
    if (static_cast<std::size_t>(emit_) > top.size())
      throw config::InputError("<command line>", "--emit",
                               fmt::format("the ranking has {} candidate(s) (--top {}); there is no {}", top.size(),
                                           top_, emit_));
    const std::int64_t id = top.at(static_cast<std::size_t>(emit_ - 1)).at("id").get<std::int64_t>();
    const auto& cands = p.outcome.candidates;
    const auto c = std::find_if(cands.begin(), cands.end(), [&](const auto& x) { return x.point.id == id; });
    if (c == cands.end()) throw std::logic_error(fmt::format("plan --emit: candidate {} is not in the outcome", id));
    config::Json sc = c->point.scenario;
    const std::string base = sc.value("name", std::string("scenario"));
    sc["name"] = fmt::format("{}-plan-{}", base, emit_);
    std::string chose;
    // The plan's varied columns: the CSV's, from after `id` to `status`.
    const auto& row = top.at(static_cast<std::size_t>(emit_ - 1));
    for (std::size_t i = 1; i < header.size() && header[i] != "status"; ++i)
      if (const auto v = row.find(header[i]); v != row.end())
        chose += fmt::format("{}{}={}", chose.empty() ? "" : ", ", header[i],
                             v->is_string() ? v->get<std::string>() : v->dump());
    sc["description"] = fmt::format("moesim plan's candidate {} by {} (id {}) from {}: {}", emit_,
                                    summary.at("objective").get<std::string>(), id, file_, chose);
    sc.erase("measured");
    const std::string path = !emit_file_.empty() ? emit_file_ : fmt::format("plan-{}-{}.json", base, emit_);
    write_file(path, sc.dump(2) + "\n");
    // It must load where it was written (a relative model or histogram path is the base's).
    try {
      config::load_scenario_file(path);
    } catch (const config::InputError& e) {
      throw config::InputError(path, e.path(),
                               e.message() + " (the emitted scenario; a path relative to the base scenario's folder "
                                             "does not resolve from where it was written: write it beside the base)");
    }
    io.err << fmt::format("moesim plan: wrote candidate {} (id {}) to {}\n", emit_, id, path);
  }

 private:
  std::string file_, objective_, out_, html_, emit_file_;
  std::vector<std::string> settings_;
  std::int64_t gpus_ = 0, given_limit_ = 0;
  double token_budget_ = 0, headroom_ = 0;
  int top_ = 10, jobs_ = 0, emit_ = 0;
  bool json_ = false, uncalibrated_ = false, given_ = false, resume_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() { return std::make_unique<Plan>(); }

}  // namespace moesim::cli
