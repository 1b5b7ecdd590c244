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
#include <charconv>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "cli/terminate.hpp"
#include "config/load.hpp"
#include "predict/plan.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/sweep.hpp"
#include "reports/text.hpp"

namespace moesim::cli {
namespace {

class Plan final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("scenario", file_,
                   "the scenario whose model, system and training settings are planned")
        ->required()
        ->transform(shipped_scenario_path, "", "shipped scenario");
    app.add_option("--gpus", gpus_list_,
                   "the cluster size(s) to plan for (default: the scenario's); several (512,1024) "
                   "are each planned "
                   "and their bests ranked")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 30));
    app.add_option("--system", systems_,
                   "plan on these system presets instead of the scenario's (h100,gb200-nvl72): "
                   "each planned, their "
                   "bests ranked")
        ->delimiter(',');
    app.add_option("--price", prices_,
                   "SYSTEM=USD: a GPU-hour's price on a system other than the scenario's (its "
                   "cost.gpu_hour_usd is "
                   "for its own)")
        ->delimiter(',');
    app.add_option(
        "--objective", objective_,
        "what to rank by: a sweep objective (docs/SWEEP_FORMAT.md; default tokens_per_s_per_gpu)");
    check_finite(app.add_option("--token-budget", token_budget_,
                                "tokens to train: rows gain days, GPU-hours, energy and cost"),
                 1, 1e30);
    app.add_option("--top", top_, "candidates listed by the objective")
        ->check(CLI::Range(0, 1000000));
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default 0: all cores)")
        ->check(CLI::Range(0, 1024));
    app.add_option("-o,--out", out_,
                   "CSV of every candidate (default: plan-<scenario>.csv in this folder)");
    app.add_flag("--json", json_, "print the summary as one JSON object");
    app.add_flag("--deterministic", deterministic_,
                 "leave each candidate's measured wall time (sim_wall_s) empty, so the same "
                 "plan writes the same CSV byte for byte");
    app.add_option(
        "--html", html_,
        "also write the plan's page: the candidates' fates, the top K's breakdowns beside the "
        "scenario "
        "as given, each simulated candidate against its bound (one self-contained HTML file)");
    std::string groups;
    for (const auto& g : predict::plan_setting_groups())
      groups += fmt::format("\n  {}{}: {}", g.name, g.by_default ? " (default)" : "", g.what);
    app.add_option(
           "--settings", settings_,
           "settings varied for every layout, comma-separated, or none (default: those marked):" +
               groups)
        ->delimiter(',');
    CLI::Option* given = app.add_flag("--given", given_,
                                      "also predict the scenario as given (its own layout and "
                                      "settings) and rank it: every candidate "
                                      "whose bound beats it is simulated, so the rank is exact");
    app.add_option("--given-limit", given_limit_,
                   "--given: simulate at most this many candidates for the rank beyond those the "
                   "top K need "
                   "(default 0: no limit); past it the rank is a lower bound")
        ->check(CLI::Range(0, 1 << 30))
        ->needs(given);
    app.add_flag("--resume", resume_,
                 "keep the candidates an earlier run of this plan simulated (OUT.partial, kept "
                 "when SIGTERM or "
                 "SIGINT stopped it); simulate only the rest");
    auto* emit =
        app.add_option("--emit", emit_,
                       "write the K-th candidate of the ranking as a scenario (--emit-file; with "
                       "--resume after a "
                       "finished plan nothing is simulated again)")
            ->check(CLI::Range(1, 1000000));
    app.add_option("--emit-file", emit_file_,
                   "where --emit writes (default: plan-<scenario>-K.json in this folder)")
        ->needs(emit);
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
    add_system_set(app, set_);
  }

  int run(Io& io) override {
    if (emit_ > 0 && top_ > 0 && emit_ > top_)
      throw config::InputError(
          "<command line>", "--emit",
          fmt::format("candidate {} is past the ranking's {} (--top {})", emit_, top_, top_));
    predict::PlanRequest req{
        file_,
        0,
        settings_,
        objective_,
        token_budget_ > 0 ? std::optional<double>(token_budget_) : std::nullopt,
        top_,
        jobs_,
        config::load_options(uncalibrated_, set_, headroom_),
        given_,
        given_limit_,
        {},
        {},
        {},
        true,
        std::nullopt,
        std::nullopt};
    const config::Scenario sc = config::load_scenario_file(file_, req.load);
    const std::string out = !out_.empty() ? out_ : "plan-" + sc.name + ".csv";
    if (gpus_list_.size() <= 1 && systems_.size() <= 1 && prices_.empty()) {
      if (!gpus_list_.empty()) req.gpus = gpus_list_.front();
      if (!systems_.empty() && systems_.front() != sc.system.name) req.system = systems_.front();
      Result r;
      const int status = plan_one(io, req, out, r);
      if (status != 0) return status;
      if (json_)
        io.out << r.summary.dump(2) << "\n";
      else
        io.out << r.text;
      if (emit_ > 0) emit(io, r.plan, r.summary, r.header);
      return 0;
    }
    return plan_many(io, req, sc, out);
  }

  // One plan, its CSV written to `out` (with its journal, `--resume` and `--html`).
  struct Result {
    predict::Plan plan;
    config::Json summary;
    std::string text;
    std::vector<std::string> header;
  };
  int plan_one(Io& io, predict::PlanRequest req, const std::string& out, Result& result) const {
    const OutputLock lock(out);  // one writer per output (and its journal)
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
          throw config::InputError(
              kept_file, "line 1",
              "kept by another plan (other columns); remove it or give another -o");
        reports::check_predicted_with(old, kept_file, predict::predicted_with(req.load),
                                      "this plan predicts with");
        if (old.dropped_partial_line)
          io.err << fmt::format("moesim plan: {}: dropped a truncated last line\n", kept_file);
        std::map<std::int64_t, predict::SweepResult> rows;
        for (const auto& r : old.rows) rows[r.id] = r.result;
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
      if (written.insert(cand.point.id).second) {
        auto fields = reports::sweep_csv_fields(cand.point, cand.row, c.token_budget);
        if (deterministic_) fields = reports::without_wall_time(std::move(fields));
        journal << reports::csv_line(fields) << std::flush;
      }
    };
    const TerminationWatch terminate;
    req.stop = terminate.token();
    predict::Plan p = predict::plan(req);
    if (p.outcome.stopped) {
      journal.close();
      io.err << fmt::format(
          "moesim plan: stopped by {} after {} simulations; {} keeps them. Run the same command "
          "with --resume to go on.\n",
          terminate.signal() == SIGTERM ? "SIGTERM" : "SIGINT", p.outcome.simulated, partial);
      return 128 + terminate.signal();
    }
    journal.close();
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    reports::SweepCsv all = reports::plan_csv(p);
    if (deterministic_)
      for (auto& row : all.rows) row.fields = reports::without_wall_time(std::move(row.fields));
    write_file(out, reports::sweep_csv_text(all));
    const reports::PlanSummaryInfo info = reports::plan_summary_info(p, file_, out, top_);
    if (!html_.empty()) write_file(html_, reports::html_page(reports::plan_report(all, info)));
    // The JSON summary serves --json, --emit and the ranking of several plans; the text only
    // where it is printed.
    result.summary = reports::plan_summary_json(all, info);
    result.summary["system"] = p.system;
    result.summary["notes"] = p.notes;
    if (!json_) {
      result.text = reports::plan_summary_text(all, info);
      for (const auto& n : p.notes) result.text += fmt::format("on {}: {}\n", p.system, n);
    }
    result.header = all.header;
    result.plan = std::move(p);
    return 0;
  }

  // Several systems or sizes (issue #45 item 4): each planned to a CSV of its own, their bests
  // ranked by the objective, with days and cost per million tokens where the budget and
  // prices allow.
  int plan_many(Io& io, const predict::PlanRequest& base, const config::Scenario& sc,
                const std::string& out) const {
    if (emit_ > 0)
      throw config::InputError("<command line>", "--emit",
                               "emits from one plan: give one --system and one --gpus");
    if (!html_.empty())
      throw config::InputError("<command line>", "--html",
                               "a page is one plan's: give one --system and one --gpus");
    const auto parse_number = [](const std::string& t, double& v) {
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return !t.empty() && ec == std::errc() && end == t.data() + t.size();
    };
    std::map<std::string, double> price;
    for (const auto& p : prices_) {
      const auto eq = p.find('=');
      double v = 0;
      if (eq == std::string::npos || eq == 0 || !parse_number(p.substr(eq + 1), v) || !(v > 0))
        throw config::InputError("<command line>", "--price",
                                 fmt::format("'{}': expected SYSTEM=USD", p));
      price[p.substr(0, eq)] = v;
    }
    const std::vector<std::string> systems =
        systems_.empty() ? std::vector<std::string>{sc.system.name} : systems_;
    const std::vector<std::int64_t> sizes =
        gpus_list_.empty() ? std::vector<std::int64_t>{sc.gpus} : gpus_list_;
    for (const auto& [name, v] : price)
      if (std::find(systems.begin(), systems.end(), name) == systems.end())
        throw config::InputError("<command line>", "--price",
                                 fmt::format("'{}' is not planned (--system)", name));
    struct Best {
      std::string system;
      std::int64_t gpus = 0;
      config::Json row, summary;
      std::string csv;
    };
    std::vector<Best> bests;
    const auto stem = out.ends_with(".csv") ? out.substr(0, out.size() - 4) : out;
    for (const auto& system : systems) {
      predict::PlanRequest req = base;
      if (system != sc.system.name) req.system = system;
      if (const auto it = price.find(system); it != price.end()) {
        req.gpu_hour_usd = it->second;
      } else if (system != sc.system.name && sc.cost.gpu_hour_usd) {
        throw config::InputError(
            "<command line>", "--price",
            fmt::format("the scenario's cost.gpu_hour_usd is for {}: give --price {}=USD",
                        sc.system.name, system));
      }
      for (const auto g : sizes) {
        req.gpus = g;
        Result r;
        const std::string csv = fmt::format("{}-{}-{}.csv", stem, system, g);
        if (const int status = plan_one(io, req, csv, r); status != 0) return status;
        if (!json_) io.out << r.text << "\n";
        const auto& top = r.summary.at("top");
        bests.push_back(
            {system, g, top.empty() ? config::Json(nullptr) : top.front(), r.summary, csv});
      }
    }
    // The bests, best first (a plan with nothing to rank last).
    const auto objective = bests.front().summary.at("objective").get<std::string>();
    const bool higher = config::higher_is_better(*config::sweep_objective_names().find(objective));
    std::stable_sort(bests.begin(), bests.end(), [&](const Best& a, const Best& b) {
      if (a.row.is_null() || b.row.is_null()) return !a.row.is_null() && b.row.is_null();
      const double x = a.row.value(objective, 0.0), y = b.row.value(objective, 0.0);
      return higher ? x > y : x < y;
    });
    if (json_) {
      config::Json j{{"objective", objective}, {"plans", config::Json::array()}};
      for (const auto& b : bests)
        j["plans"].push_back({{"system", b.system},
                              {"gpus", b.gpus},
                              {"csv", b.csv},
                              {"best", b.row},
                              {"summary", b.summary}});
      io.out << j.dump(2) << "\n";
      return 0;
    }
    io.out << fmt::format("the bests by {} ({} is better):\n", objective,
                          higher ? "higher" : "lower");
    io.out << fmt::format("  {:<14}{:>7}{:>9}{:>14}{:>10}{:>9}{:>14}{:>12}  {}\n", "system", "gpus",
                          "best id", "tokens/s/GPU", "step s", "days", "cost USD", "USD/Mtoken",
                          "plan");
    const auto num = [](const config::Json& row, const char* k, const char* f) -> std::string {
      return row.contains(k) && row[k].is_number()
                 ? fmt::format(fmt::runtime(f), row[k].get<double>())
                 : "-";
    };
    for (const auto& b : bests) {
      if (b.row.is_null()) {
        io.out << fmt::format(
            "  {:<14}{:>7}  nothing fits{}  {}\n", b.system, b.gpus,
            b.summary.contains("smallest_fitting_gpus") &&
                    !b.summary["smallest_fitting_gpus"].is_null()
                ? fmt::format(" (the smallest that fits: {} GPUs)",
                              b.summary["smallest_fitting_gpus"].get<std::int64_t>())
                : std::string(),
            b.csv);
        continue;
      }
      io.out << fmt::format(
          "  {:<14}{:>7}{:>9}{:>14}{:>10}{:>9}{:>14}{:>12}  {}\n", b.system, b.gpus,
          b.row.at("id").get<std::int64_t>(), num(b.row, "tokens_per_s_per_gpu", "{:.0f}"),
          num(b.row, "step_time_s", "{:.3f}"), num(b.row, "days_with_goodput", "{:.1f}"),
          num(b.row, "cost_usd", "{:.0f}"), num(b.row, "usd_per_million_tokens", "{:.3f}"), b.csv);
    }
    return 0;
  }

  // --emit K (issue #45 item 4): the K-th of the ranking as a scenario a user can run, diff
  // or edit: the candidate's own scenario (the base with the layout and settings the plan
  // chose), named and described as such, without the base's measurement (not this run's).
  void emit(Io& io, const predict::Plan& p, const config::Json& summary,
            const std::vector<std::string>& header) const {
    const auto& top = summary.at("top");
    if (static_cast<std::size_t>(emit_) > top.size())
      throw config::InputError("<command line>", "--emit",
                               fmt::format("the ranking has {} (--top {}); there is no {}",
                                           reports::counted(top.size(), "candidate"), top_, emit_));
    const std::int64_t id =
        top.at(static_cast<std::size_t>(emit_ - 1)).at("id").get<std::int64_t>();
    const auto& cands = p.outcome.candidates;
    const auto c =
        std::find_if(cands.begin(), cands.end(), [&](const auto& x) { return x.point.id == id; });
    if (c == cands.end())
      throw std::logic_error(fmt::format("plan --emit: candidate {} is not in the outcome", id));
    config::Json sc = predict::candidate_point(p.layouts.points, p.dims, id).scenario;
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
    if (const auto with = summary.value("predicted_with", std::string());
        !predict::predicted_as_shipped(with))
      sc["description"] = sc["description"].get<std::string>() +
                          fmt::format(" (ranked as predicted with: {}; not written here)", with);
    sc.erase("measured");
    const std::string path =
        !emit_file_.empty() ? emit_file_ : fmt::format("plan-{}-{}.json", base, emit_);
    write_file(path, sc.dump(2) + "\n");
    // It must load where it was written (a relative model or histogram path is the base's).
    try {
      config::load_scenario_file(path);
    } catch (const config::InputError& e) {
      throw config::InputError(
          path, e.path(),
          e.message() +
              " (the emitted scenario; a path relative to the base scenario's folder "
              "does not resolve from where it was written: write it beside the base)");
    }
    io.err << fmt::format("moesim plan: wrote candidate {} (id {}) to {}\n", emit_, id, path);
  }

 private:
  std::string file_, objective_, out_, html_, emit_file_;
  std::vector<std::string> settings_, systems_, prices_;
  std::vector<std::int64_t> gpus_list_;
  std::int64_t given_limit_ = 0;
  double token_budget_ = 0, headroom_ = 0;
  std::vector<std::string> set_;
  int top_ = 10, jobs_ = 0, emit_ = 0;
  bool json_ = false, uncalibrated_ = false, given_ = false, resume_ = false,
       deterministic_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() {
  return std::make_unique<Plan>();
}

}  // namespace moesim::cli
