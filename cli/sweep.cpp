// cli/sweep.cpp: `moesim sweep` and `moesim sweep merge`: a sweep file's rows to a CSV
// (predict/sweep.hpp, reports/sweep.hpp), sharded by hand or by a Slurm job array, resumable.
#include "cli/commands.hpp"

#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "cli/terminate.hpp"
#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/sweep.hpp"
#include "reports/sweep.hpp"
#include "reports/text.hpp"

namespace moesim::cli {
namespace {

// --set as the Slurm script repeats it (config::parse_system_set allows only letters, digits,
// '_' and '.' in a path, and the value is a number: nothing to quote).
std::string set_options(const config::LoadOptions& opts) {
  std::string s;
  for (const auto& set : opts.system_set) s += fmt::format(" --set {}", config::to_string(set));
  return s;
}

// A Slurm partition list or account name as it goes on an #SBATCH line: letters, digits,
// '_', '.', '-' (and commas between partitions); nothing that could end the line.
CLI::Validator slurm_name(const std::string& what, bool list) {
  return CLI::Validator(
      [what, list](std::string& v) {
        static const std::regex name(R"([A-Za-z0-9_.-]+)"),
            names(R"([A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*)");
        return std::regex_match(v, list ? names : name) ? std::string()
                                                        : fmt::format("'{}' is not {}", v, what);
      },
      "NAME");
}

// `moesim sweep`: a sweep file's rows (config/sweep_file.hpp) through predict/sweep.hpp
// on all cores, streamed to a CSV as they finish (reports/sweep.hpp) and sorted by id at
// the end; `--resume` runs only the rows missing from it. The Slurm array's shard is read
// from the environment here and nowhere below.
class Sweep final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "sweep file (docs/SWEEP_FORMAT.md)");
    app.add_option("-o,--out", out_,
                   "CSV of the rows (default: the sweep file's name, .csv, in this folder)");
    auto* jobs =
        app.add_option("--jobs", jobs_, "scenarios simulated at once (default 0: all cores)")
            ->check(CLI::Range(0, 1024));
    auto* shard = app.add_option(
        "--shard", shard_,
        "I/N: run rows with id % N == I only (I from 0); default under a Slurm job array: "
        "its task's shard");
    auto* resume = app.add_flag("--resume", resume_,
                                "keep the rows already in the output; run only the missing ones");
    auto* top = app.add_option("--top", top_, "rows listed by the objective")
                    ->check(CLI::Range(0, 1000000));
    auto* json = app.add_flag("--json", json_, "print the summary as one JSON object");
    app.add_flag("--deterministic", deterministic_,
                 "leave each row's measured wall time (sim_wall_s) empty, so the same sweep "
                 "writes the same CSV byte for byte");
    CLI::Option* slurm =
        app.add_flag("--slurm-script", slurm_,
                     "print an sbatch --array script for the sweep instead of running it");
    // What only a run here uses: the script's tasks take their shard from the array, resume
    // always, simulate on --cpus-per-task and print their summaries to their logs.
    slurm->excludes(jobs)->excludes(shard)->excludes(resume)->excludes(top)->excludes(json);
    app.add_option("--tasks", tasks_, "--slurm-script: array tasks (default: one per 200 rows)")
        ->check(CLI::Range(1, 100000))
        ->needs(slurm);
    app.add_option("--cpus-per-task", resources_.cpus_per_task,
                   "--slurm-script: CPUs of each task, all of which it simulates on (default 2: a "
                   "small node)")
        ->check(CLI::Range(1, 4096))
        ->needs(slurm);
    app.add_option("--partition", resources_.partition,
                   "--slurm-script: the partition(s), comma-separated (default: the cluster's)")
        ->check(slurm_name(
            "a partition list (names of letters, digits, '_', '.', '-', separated by commas)",
            true))
        ->needs(slurm);
    app.add_option("--time", resources_.time,
                   "--slurm-script: each task's time limit in Slurm's format: M, M:S, H:M:S, D-H, "
                   "D-H:M, D-H:M:S "
                   "(default: the partition's)")
        ->check(CLI::Validator(
            [](std::string& v) {
              static const std::regex time(
                  R"(\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}|UNLIMITED|INFINITE)");
              return std::regex_match(v, time)
                         ? std::string()
                         : fmt::format(
                               "'{}' is not a Slurm time (M, M:S, H:M:S, D-H, D-H:M, "
                               "D-H:M:S, UNLIMITED)",
                               v);
            },
            "TIME"))
        ->needs(slurm);
    app.add_option("--account", resources_.account,
                   "--slurm-script: the account charged (default: the user's)")
        ->check(slurm_name("an account name (letters, digits, '_', '.', '-')", false))
        ->needs(slurm);
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
    add_system_set(app, set_);
    merge_ = app.add_subcommand("merge", "join shard CSVs, reporting missing and duplicated rows");
    merge_->add_option("csvs", merge_files_, "the shards' CSV files")->required();
    merge_->add_option("-o,--out", merge_out_, "the joined CSV")->required();
    merge_->add_option("--sweep", merge_sweep_,
                       "the sweep file: rows missing at its end are reported too");
  }

  int run(Io& io) override {
    if (merge_->parsed()) return merge(io);
    if (file_.empty())
      throw config::InputError("<command line>", "file",
                               "give a sweep file (or `moesim sweep merge`)");
    const config::SweepFile sweep = config::read_sweep_file(file_);
    const config::SweepPlan plan = config::expand_sweep(sweep);
    const bool budget = sweep.token_budget.has_value();
    const auto [index, count] = shard();
    const std::string stem = std::filesystem::path(file_).stem().string();
    const config::LoadOptions opts = config::load_options(uncalibrated_, set_, headroom_);
    predict::check_system_set(plan, sweep.base_file, opts);
    if (slurm_) {
      const int tasks =
          tasks_ > 0 ? tasks_
                     : static_cast<int>(std::max<std::size_t>(1, (plan.points.size() + 199) / 200));
      std::error_code ec;
      const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
      io.out << reports::slurm_script(
          ec ? std::string("moesim") : self.string(),
          std::filesystem::absolute(file_).lexically_normal().string(), sweep.name,
          static_cast<std::int64_t>(plan.points.size()), tasks,
          out_.empty() ? stem : std::filesystem::path(out_).replace_extension().string(),
          fmt::format("{}{}{}{}", uncalibrated_ ? " --uncalibrated" : "",
                      headroom_ > 0 ? fmt::format(" --headroom {}", headroom_) : "",
                      set_options(opts), deterministic_ ? " --deterministic" : ""),
          resources_);
      return 0;
    }
    const std::string out = !out_.empty() ? out_
                            : count > 1   ? fmt::format("{}_{}.csv", stem, index)
                                          : stem + ".csv";
    const OutputLock lock(out);  // one writer per output
    const auto header = reports::sweep_csv_header(plan, budget);

    // Rows already there (--resume): a last line cut off while written is dropped.
    std::vector<bool> have(plan.points.size(), false);
    reports::SweepCsv kept{header, {}, false};
    if (resume_ && std::filesystem::exists(out)) {
      reports::SweepCsv old = reports::read_sweep_csv(out);
      if (old.header != header)
        throw config::InputError(
            out, "line 1",
            fmt::format("the header is not {}'s: written by another sweep file "
                        "(or version); remove it or give another -o",
                        file_));
      reports::check_predicted_with(old, out, predict::predicted_with(opts),
                                    "this run predicts with");
      // Every value of a kept row is checked (issue #46 item 3): its figures read as the
      // writer wrote them (read_sweep_csv), and its varied values are the sweep's for its id.
      for (const auto& r : old.rows) {
        const std::string where = fmt::format("{}: row {}", out, r.id);
        if (r.id < 0 || r.id >= static_cast<std::int64_t>(plan.points.size()))
          throw config::InputError(
              where, "id",
              fmt::format("not an id of this sweep (0 to {})", plan.points.size() - 1));
        const auto& values = plan.points[static_cast<std::size_t>(r.id)].values;
        for (std::size_t k = 0; k < values.size(); ++k)
          if (!values[k].empty() && r.fields[k + 1] != values[k])
            throw config::InputError(
                where, plan.columns[k],
                fmt::format("'{}', where the sweep has '{}' for this id; remove the row or the "
                            "file",
                            r.fields[k + 1], values[k]));
      }
      for (auto& r : old.rows)
        if (r.id < static_cast<std::int64_t>(have.size()) &&
            !have[static_cast<std::size_t>(r.id)]) {
          have[static_cast<std::size_t>(r.id)] = true;
          if (deterministic_) r.fields = reports::without_wall_time(std::move(r.fields));
          kept.rows.push_back(std::move(r));
        }
      if (old.dropped_partial_line)
        io.err << fmt::format("moesim sweep: {}: dropped a truncated last line\n", out);
    }
    write_file(out, reports::sweep_csv_text(kept));

    std::vector<const config::SweepPoint*> todo;
    for (const auto& p : plan.points)
      if (p.id % count == index && !have[static_cast<std::size_t>(p.id)]) todo.push_back(&p);
    const bool progress = &io.err == &std::cerr && isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    std::size_t done = 0;
    const auto show = [&](bool final) {
      const auto now = std::chrono::steady_clock::now();
      if (!final && now - last < std::chrono::milliseconds(200)) return;
      last = now;
      const double s = std::chrono::duration<double>(now - t0).count();
      const double rate = s > 0 ? static_cast<double>(done) / s : 0;
      const double eta = rate > 0 ? static_cast<double>(todo.size() - done) / rate : 0;
      io.err << fmt::format("\rmoesim sweep {}: {}/{} rows, {:.2f} rows/s, ETA {}m{:02}s   ",
                            sweep.name, done, todo.size(), rate, static_cast<long>(eta) / 60,
                            static_cast<long>(eta) % 60)
             << (final ? "\n" : "") << std::flush;
    };
    const TerminationWatch terminate;
    const reports::SweepCsv all = append_rows_to_csv(
        todo, sweep.base_file, sweep.token_budget, jobs_, opts, out,
        [&] {
          ++done;
          if (progress) show(false);
        },
        terminate.token(), !deterministic_);
    if (progress) show(true);
    if (terminate.signal() != 0 && done < todo.size()) {
      io.err << fmt::format(
          "moesim sweep: stopped by {} after {} of {} rows; {} keeps them. Run the same command "
          "with --resume for the other {}.\n",
          terminate.signal() == SIGTERM ? "SIGTERM" : "SIGINT", done, todo.size(), out,
          todo.size() - done);
      return 128 + terminate.signal();
    }
    reports::SweepSummaryInfo info{
        sweep.name,        file_,       out,   static_cast<std::int64_t>(plan.points.size()),
        plan.combinations, plan.pruned, index, count,
        sweep.objective,   budget,      top_};
    if (json_)
      io.out << reports::sweep_summary_json(all, info).dump(2) << "\n";
    else
      io.out << reports::sweep_summary_text(all, info);
    return 0;
  }

 private:
  // --shard I/N, or the Slurm array task's shard: I = (SLURM_ARRAY_TASK_ID -
  // SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP of N = SLURM_ARRAY_TASK_COUNT.
  std::pair<std::int64_t, std::int64_t> shard() const {
    const auto number = [](const std::string& s, const std::string& what) {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        throw config::InputError(what.starts_with("--") ? "<command line>" : "<environment>", what,
                                 fmt::format("'{}' is not a whole number", s));
      return v;
    };
    std::int64_t i = 0, n = 1;
    if (!shard_.empty()) {
      const auto slash = shard_.find('/');
      if (slash == std::string::npos)
        throw config::InputError("<command line>", "--shard", "expected I/N, e.g. 0/4");
      i = number(shard_.substr(0, slash), "--shard");
      n = number(shard_.substr(slash + 1), "--shard");
      if (n < 1 || i < 0 || i >= n)
        throw config::InputError("<command line>", "--shard",
                                 fmt::format("{}: needs 0 <= I < N", shard_));
    } else if (const char* id = std::getenv("SLURM_ARRAY_TASK_ID")) {
      const auto env = [&](const char* name, const char* def) {
        const char* v = std::getenv(name);
        return number(v ? v : def, name);
      };
      const std::int64_t task = number(id, "SLURM_ARRAY_TASK_ID"),
                         min = env("SLURM_ARRAY_TASK_MIN", "0"),
                         step = env("SLURM_ARRAY_TASK_STEP", "1"),
                         tasks = env("SLURM_ARRAY_TASK_COUNT", "1");
      if (step < 1 || tasks < 1 || task < min || (task - min) % step != 0 ||
          (task - min) / step >= tasks)
        throw config::InputError(
            "<environment>", "SLURM_ARRAY_TASK_ID",
            fmt::format("task {} is not in the array (min {}, step {}, count {})", task, min, step,
                        tasks));
      i = (task - min) / step;
      n = tasks;
    }
    return {i, n};
  }

  int merge(Io& io) const {
    std::optional<std::int64_t> expected;
    if (!merge_sweep_.empty())
      expected = static_cast<std::int64_t>(
          config::expand_sweep(config::read_sweep_file(merge_sweep_)).points.size());
    const reports::SweepMerge m = reports::merge_sweep_csvs(merge_files_, expected);
    write_file(merge_out_, reports::sweep_csv_text(m.csv));
    const auto ids = [](const std::vector<std::int64_t>& v) {
      std::string s;
      for (std::size_t k = 0; k < v.size() && k < 20; ++k)
        s += (k ? " " : "") + std::to_string(v[k]);
      return v.size() > 20 ? s + fmt::format(" ... ({} in all)", v.size()) : s;
    };
    io.out << fmt::format("merged {} from {} into {}\n", reports::counted(m.csv.rows.size(), "row"),
                          reports::counted(merge_files_.size(), "file"), merge_out_);
    if (m.dropped_partial_lines)
      io.out << fmt::format("dropped {}\n",
                            reports::counted(static_cast<std::size_t>(m.dropped_partial_lines),
                                             "truncated last line"));
    if (!m.missing.empty()) io.out << fmt::format("missing rows: {}\n", ids(m.missing));
    if (!m.duplicated.empty())
      io.out << fmt::format("duplicated rows (kept once): {}\n", ids(m.duplicated));
    if (!m.conflicting.empty())
      io.out << fmt::format("duplicated rows whose copies differ (the first file's kept): {}\n",
                            ids(m.conflicting));
    return m.missing.empty() && m.conflicting.empty() ? 0 : 1;
  }

  std::string file_, out_, shard_;
  int jobs_ = 0, top_ = 10, tasks_ = 0;
  bool resume_ = false, json_ = false, slurm_ = false, uncalibrated_ = false,
       deterministic_ = false;
  double headroom_ = 0;
  std::vector<std::string> set_;
  reports::SlurmResources resources_;
  CLI::App* merge_ = nullptr;
  std::vector<std::string> merge_files_;
  std::string merge_out_, merge_sweep_;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() {
  return std::make_unique<Sweep>();
}

}  // namespace moesim::cli
