#include "cli/commands.hpp"

#include <array>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <charconv>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "calibration/ep_library_fit.hpp"
#include "calibration/profile_fit.hpp"
#include "config/load.hpp"
#include "config/import_megatron.hpp"
#include "config/load_measurement.hpp"
#include "reports/comm.hpp"
#include "reports/describe.hpp"
#include "reports/diff.hpp"
#include "reports/corpus.hpp"
#include "reports/infer.hpp"
#include "reports/report.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"
#include "predict/sweep.hpp"
#include "predict/validate.hpp"
#include "config/sweep_file.hpp"
#include "reports/run.hpp"
#include "reports/validate.hpp"
#include "reports/sweep.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/schedule_kind.hpp"
#include "schedules/step_sim.hpp"
#include "sim_core/engine.hpp"

namespace moesim::cli {
namespace {

// Replaces a file's contents at once (a temporary beside it, renamed over it).
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) throw config::InputError(path, "", "cannot write the file");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw config::InputError(path, "", "cannot write the file: " + ec.message());
}

// --uncalibrated: system presets as written, without their calibration profiles.
void add_uncalibrated(CLI::App& app, bool& flag) {
  app.add_flag("--uncalibrated", flag,
               "read the system presets without their calibration profiles (calibration/profiles/)");
}

class Describe final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file")->required();
    app.add_flag("--json", json_, "print one JSON object instead of the text summary");
    add_uncalibrated(app, uncalibrated_);
  }
  int run(Io& io) override {
    const config::Scenario sc = config::load_scenario_file(file_, {!uncalibrated_});
    if (json_)
      io.out << reports::describe_json(sc).dump(2) << "\n";
    else
      io.out << reports::describe_text(sc);
    return 0;
  }

 private:
  std::string file_;
  bool json_ = false, uncalibrated_ = false;
};

class Run final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file")->required();
    app.add_flag("--json", json_, "print one JSON object instead of the text report");
    app.add_option("--trace", trace_, "write a Chrome/Perfetto trace (JSON) to this file");
    app.add_option("--fidelity", fidelity_,
                   "representative: one rank per pipeline stage (default); full: every rank")
        ->check(CLI::IsMember({"representative", "full"}));
    add_uncalibrated(app, uncalibrated_);
  }
  int run(Io& io) override {
    const config::Scenario sc = config::load_scenario_file(file_, {!uncalibrated_});
    const predict::Prediction p = predict::predict(sc, {!trace_.empty(), fidelity_ == "full"});
    if (!p.fits_in_memory) {
      const auto worst = std::max_element(p.rank_memory_gib.begin(), p.rank_memory_gib.end());
      io.err << fmt::format("moesim: warning: {}: pipeline rank {} needs {:.1f} GiB{}, more than the {:g} GB of a {}\n",
                            file_, worst - p.rank_memory_gib.begin(), *worst,
                            sc.framework.allocator_fragmentation > 0
                                ? fmt::format(" ({:.1f} with the fragmentation allowance)", p.reserved_memory_gib)
                                : std::string(),
                            sc.system.gpu.hbm_GB.value, sc.system.gpu.name);
    }
    if (!trace_.empty()) {
      std::ofstream out(trace_);
      if (!out) throw config::InputError(trace_, "", "cannot write the trace file");
      reports::write_trace(p, out);
    }
    if (json_)
      io.out << reports::run_json(sc, p).dump(2) << "\n";
    else
      io.out << reports::run_text(sc, p);
    return 0;
  }

 private:
  std::string file_, trace_, fidelity_ = "representative";
  bool json_ = false, uncalibrated_ = false;
};

// Two predictions and their difference explained (predict/diff.hpp).
class Diff final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("a", a_, "scenario A (the reference)")->required();
    app.add_option("b", b_, "scenario B (the what-if)")->required();
    app.add_flag("--json", json_, "print one JSON object instead of the text report");
    add_uncalibrated(app, uncalibrated_);
  }
  int run(Io& io) override {
    const std::array<config::Scenario, 2> sc{config::load_scenario_file(a_, {!uncalibrated_}),
                                             config::load_scenario_file(b_, {!uncalibrated_})};
    std::array<predict::Prediction, 2> p;
    predict::run_parallel(2, 2, [&](std::size_t i) { p[i] = predict::predict(sc[i]); });
    const reports::DiffSide a{sc[0], p[0]}, b{sc[1], p[1]};
    if (json_)
      io.out << reports::diff_json(a, b).dump(2) << "\n";
    else
      io.out << reports::diff_text(a, b);
    return 0;
  }

 private:
  std::string a_, b_;
  bool json_ = false, uncalibrated_ = false;
};

// A Megatron command line as a scenario (config/import_megatron.hpp).
class Import final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("kind", kind_, "what to import: megatron (a Megatron-LM / Megatron-Bridge pretraining command)")
        ->required()
        ->check(CLI::IsMember({"megatron"}));
    app.add_option("script", script_, "a launch script or command file; - reads standard input");
    app.add_option("--args", args_, "the command line itself, instead of a script");
    app.add_option("--system", system_, "system preset the command runs on")->required();
    app.add_option("--gpus", gpus_, "GPUs in the job (world size)")->check(CLI::Range(1, 1 << 22));
    app.add_option("--nodes", nodes_, "nodes in the job (with --gpus-per-node)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--gpus-per-node", per_node_, "GPUs per node (with --nodes)")->check(CLI::Range(1, 1024));
    app.add_option("--model", model_, "model preset (shape flags given are checked against it)");
    app.add_option("--gpus-per-nvlink-domain", domain_, "GPUs per NVLink domain used (placement)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("-o,--output", out_, "write the scenario here (default: standard output)");
  }
  int run(Io& io) override {
    config::MegatronImportOptions opt;
    opt.system = system_;
    if (gpus_ > 0 && nodes_ > 0) throw config::InputError("<command line>", "--gpus", "give --gpus or --nodes, not both");
    if (nodes_ > 0 && per_node_ == 0)
      throw config::InputError("<command line>", "--gpus-per-node", "needed with --nodes");
    opt.gpus = gpus_ > 0 ? gpus_ : nodes_ * per_node_;
    if (opt.gpus == 0) throw config::InputError("<command line>", "--gpus", "give --gpus N or --nodes N --gpus-per-node G");
    if (domain_ > 0) opt.gpus_per_nvlink_domain = domain_;
    if (!model_.empty()) opt.model = model_;
    std::string text;
    if (!args_.empty()) {
      if (!script_.empty()) throw config::InputError("<command line>", "--args", "give a script or --args, not both");
      text = args_;
      opt.source = "<args>";
    } else if (script_ == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      opt.source = "<stdin>";
    } else if (!script_.empty()) {
      std::ifstream in(script_, std::ios::binary);
      if (!in) throw config::InputError(script_, "", "cannot read the script");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      opt.source = script_;
    } else {
      throw config::InputError("<command line>", "script", "give a script, - for standard input, or --args STR");
    }
    const config::MegatronImport imp = config::import_megatron(text, opt);
    config::Json sc = imp.scenario;
    const std::string doc = sc.dump(2) + "\n";
    if (out_.empty()) {
      io.out << doc;
    } else {
      std::ofstream f(out_, std::ios::binary);
      if (!f || !(f << doc)) throw config::InputError(out_, "", "cannot write the scenario");
      io.err << "moesim: wrote " << out_ << "\n";
    }
    io.err << fmt::format("ignored ({} flags without an effect on performance): {}\n", imp.ignored.size(),
                          fmt::join(imp.ignored, " "));
    io.err << "assumed (settings no flag states):\n";
    for (const auto& [key, why] : imp.assumed) io.err << fmt::format("  {}: {}\n", key, why);
    return 0;
  }

 private:
  std::string kind_, script_, args_, system_, model_, out_;
  std::int64_t gpus_ = 0, nodes_ = 0, per_node_ = 0, domain_ = 0;
};

// Scenario files under the given paths (folders recursively), in sorted order.
std::vector<std::string> scenario_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

// The scenario files under the paths that carry a `measured` block; files without one
// (presets, what-ifs) are counted in `skipped`. A file with one that does not load is an
// error when it is loaded.
std::vector<std::string> measured_files(const std::vector<std::string>& paths, int& skipped) {
  std::vector<std::string> out;
  for (const auto& f : scenario_files(paths)) {
    const config::Json j = config::read_json_file(f);
    if (j.is_object() && j.contains("measured")) out.push_back(f);
    else ++skipped;
  }
  return out;
}

// The rows and their summaries: predict/validate.hpp (shared with `report --validate`).
using predict::ErrorSummary;
using predict::ValidateRow;

class Validate final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("paths", paths_, "scenario files or folders")->required();
    app.add_flag("--json", json_, "print the rows as one JSON object");
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default: all cores)")->check(CLI::Range(1, 1024));
    app.add_option("--junit", junit_, "also write a JUnit XML report here (one test case per measured run)");
    app.add_option("--markdown", markdown_, "also write a Markdown summary here (a CI job summary)");
    app.add_option("--baseline", baseline_,
                   "an earlier `validate --json` output: flag predictions that moved more than --baseline-tolerance "
                   "(exit 1)");
    app.add_option("--baseline-tolerance", baseline_tol_, "percent a prediction may move against --baseline (default 1)")
        ->check(CLI::Range(0.0, 1000.0));
    add_uncalibrated(app, uncalibrated_);
  }
  int run(Io& io) override {
    // Files without a `measured` block (presets, what-if scenarios) are skipped and
    // counted; a file with one that does not load is an input error like any other.
    int skipped = 0;
    const std::vector<std::string> files = measured_files(paths_, skipped);
    // The baseline is read before anything is simulated: a bad file fails fast.
    std::optional<std::vector<reports::BaselineRow>> baseline;
    if (!baseline_.empty()) baseline = reports::read_baseline(nlohmann::json(config::read_json_file(baseline_)), baseline_);
    const std::vector<ValidateRow> rows = predict::validate_files(files, {!uncalibrated_}, jobs_);
    if (!junit_.empty()) write_file(junit_, reports::validate_junit(rows, skipped));
    if (!markdown_.empty()) write_file(markdown_, reports::validate_markdown(rows, skipped));
    std::optional<reports::BaselineCheck> moved;
    if (baseline) moved = reports::compare_baseline(rows, *baseline, baseline_tol_);

    const predict::ValidateSummary sum = predict::summarize(rows);
    const auto& [all, by_system, by_dispatcher, failed] = sum;
    if (json_) {
      nlohmann::ordered_json out_rows = nlohmann::ordered_json::array();
      for (const auto& r : rows)
        out_rows.push_back({{"name", r.name}, {"file", r.file}, {"system", r.system}, {"dispatcher", r.dispatcher},
                            {"metric", r.metric}, {"measured", r.measured}, {"predicted", r.predicted},
                            {"error_pct", r.error_pct}, {"tolerance_pct", r.tolerance_pct}, {"ok", r.ok},
                            {"wall_s", r.wall_s}});
      const auto groups = [](const std::map<std::string, ErrorSummary>& m) {
        nlohmann::ordered_json g = nlohmann::ordered_json::object();
        for (const auto& [k, v] : m) g[k] = {{"runs", v.runs}, {"mean_abs_error_pct", v.mae()}};
        return g;
      };
      nlohmann::ordered_json out{{"rows", out_rows}, {"mean_abs_error_pct", all.mae()}, {"failed", failed},
                                 {"skipped_without_measured", skipped}};
      if (all.worst) out["worst"] = {{"name", all.worst->name}, {"error_pct", all.worst->error_pct}};
      out["by_system"] = groups(by_system);
      out["by_dispatcher"] = groups(by_dispatcher);
      if (moved) out["baseline"] = reports::baseline_json(*moved, baseline_tol_);
      io.out << out.dump(2) << "\n";
    } else {
      std::string table = fmt::format("{:<44} {:>10} {:>10} {:>8} {:>6}  {}\n", "scenario", "measured", "predicted",
                                      "error", "tol", "");
      for (const auto& r : rows)
        table += fmt::format("{:<44} {:>10.2f} {:>10.2f} {:>+7.1f}% {:>5.1f}%  {}\n", r.name, r.measured,
                             r.predicted, r.error_pct, r.tolerance_pct, r.ok ? "ok" : "OVER");
      io.out << table
             << fmt::format("{} runs, mean absolute error {:.2f}%, {} over tolerance", all.runs, all.mae(), failed);
      if (skipped) io.out << fmt::format("; {} file(s) without a measured block skipped", skipped);
      io.out << "\n";
      if (all.worst) io.out << fmt::format("worst: {} ({:+.1f}%)\n", all.worst->name, all.worst->error_pct);
      if (rows.size() > 1) {
        const auto print = [&](const char* what, const std::map<std::string, ErrorSummary>& m) {
          for (const auto& [k, v] : m)
            io.out << fmt::format("  {} {:<14} {:>3} runs, mean absolute error {:6.2f}%\n", what, k, v.runs, v.mae());
        };
        print("system    ", by_system);
        print("dispatcher", by_dispatcher);
      }
      if (moved) io.out << reports::baseline_text(*moved, baseline_tol_);
    }
    if (rows.empty()) {
      io.err << "moesim validate: no scenario with a measured block under the given paths\n";
      return 2;
    }
    return failed || (moved && moved->flagged > 0) ? 1 : 0;
  }

 private:
  std::vector<std::string> paths_;
  std::string junit_, markdown_, baseline_;
  double baseline_tol_ = 1.0;
  bool json_ = false, uncalibrated_ = false;
  int jobs_ = 0;
};

// Speed targets live here, not in timed tests: simulates a scenario repeatedly and
// reports wall time and engine throughput.
// Raw engine throughput: `width` chains of events, each event scheduling its successor a
// pseudo-random few nanoseconds later, so the heap holds `width` events throughout.
struct Chain final : sim_core::EventHandler {
  sim_core::Engine* engine = nullptr;
  std::uint64_t left = 0;
  void on_event(std::uint64_t arg) override {
    if (left == 0) return;
    --left;
    engine->after(sim_core::Time::ps(static_cast<std::int64_t>(1000 + (arg * 2654435761u) % 4000)), this, arg + 1);
  }
};

double engine_events_per_s(std::uint64_t events, int width) {
  sim_core::Engine e;
  std::vector<Chain> chains(static_cast<std::size_t>(width));
  for (std::size_t i = 0; i < chains.size(); ++i) {
    chains[i].engine = &e;
    chains[i].left = events / static_cast<std::uint64_t>(width);
    e.at(sim_core::Time::zero(), &chains[i], i);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto st = e.run();
  return static_cast<double>(st.events) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Bench final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file");
    app.add_option("--repeat", repeat_, "simulations to time (best is reported)")->check(CLI::Range(1, 1000));
    app.add_option("--sweep", sweep_, "time a sweep file's rows instead (no CSV): simulated rows per second");
    app.add_option("--jobs", jobs_, "--sweep: scenarios at once (default 0: all cores)")->check(CLI::Range(0, 1024));
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    if (!sweep_.empty()) return bench_sweep(io);
    if (file_.empty()) throw config::InputError("", "", "moesim bench: give a scenario file or --sweep SWEEP.json");
    const config::Scenario sc = config::load_scenario_file(file_);
    double best = 1e300;
    predict::Prediction p;
    for (int i = 0; i < repeat_; ++i) {
      p = predict::predict(sc);
      best = std::min(best, p.wall_s);
    }
    const double eps = static_cast<double>(p.step.events) / best;
    const double engine = engine_events_per_s(5'000'000, 1000);
    if (json_)
      io.out << nlohmann::ordered_json{{"name", sc.name}, {"wall_s", best}, {"events", p.step.events},
                                       {"kernels", p.step.kernels}, {"events_per_s", eps},
                                       {"engine_events_per_s", engine}}.dump(2) << "\n";
    else
      io.out << fmt::format("{}: best of {}: {:.3f} s wall, {} events ({:.2f} M events/s end to end), "
                            "{} kernels\nengine alone: {:.2f} M events/s (5 M events, 1000 pending)\n",
                            sc.name, repeat_, best, p.step.events, eps / 1e6, p.step.kernels, engine / 1e6);
    return 0;
  }

  // Sweep throughput (issue #16): every row of the sweep on `jobs_` threads; the rate counts
  // the simulated rows (status ok), which are the ones with a step time.
  int bench_sweep(Io& io) {
    const config::SweepFile sweep = config::read_sweep_file(sweep_);
    const config::SweepPlan plan = config::expand_sweep(sweep);
    std::vector<const config::SweepPoint*> points;
    for (const auto& p : plan.points) points.push_back(&p);
    std::int64_t simulated = 0;
    double sim_wall = 0;
    const auto t0 = std::chrono::steady_clock::now();
    predict::run_sweep(points, sweep.base_file, sweep.token_budget, jobs_,
                       [&](const config::SweepPoint&, const predict::SweepResult& r) {
                         if (r.status != predict::SweepStatus::ok) return;
                         ++simulated;
                         sim_wall += r.wall_s;
                       });
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = wall > 0 ? static_cast<double>(simulated) / wall : 0;
    if (json_)
      io.out << nlohmann::ordered_json{{"name", sweep.name},         {"rows", points.size()},
                                       {"simulated_rows", simulated}, {"wall_s", wall},
                                       {"simulated_rows_per_s", rate}, {"mean_row_wall_s", simulated ? sim_wall / static_cast<double>(simulated) : 0.0}}
                    .dump(2)
             << "\n";
    else
      io.out << fmt::format("{}: {} rows, {} simulated, in {:.1f} s wall: {:.2f} simulated rows/s ({:.0f} s per "
                            "1,000); {:.3f} s per simulated row on one thread\n",
                            sweep.name, points.size(), simulated, wall, rate, rate > 0 ? 1000 / rate : 0.0,
                            simulated ? sim_wall / static_cast<double>(simulated) : 0.0);
    return 0;
  }

 private:
  std::string file_, sweep_;
  int repeat_ = 3, jobs_ = 0;
  bool json_ = false;
};

// The pipeline schedule alone: fixed chunk times through the same engine and schedule
// code as `run`.
class Pipeline final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("--schedule", schedule_, "1f1b | interleaved-1f1b | zb-h1 | dualpipe | dualpipev")->required();
    app.add_option("--pp", pp_,
                   "pipeline ranks (devices); DualPipe runs two pipelines of pp stages over them, DualPipeV "
                   "one of 2 pp stages")
        ->required()
        ->check(CLI::Range(1, 4096));
    app.add_option("--vpp", vpp_, "virtual stages per rank (interleaved)")->check(CLI::Range(1, 256));
    app.add_option("--microbatches", m_, "microbatches per step")->required()->check(CLI::Range(1, 100000));
    app.add_option("--fwd", fwd_ms_,
                   "forward time of one microbatch through one rank's layers (split over vpp chunks), ms; "
                   "dualpipe, dualpipev: through one stage's chunk (the DualPipe repository's F)")
        ->required()->check(CLI::PositiveNumber);
    app.add_option("--bwd", bwd_ms_, "full backward time, ms (as --fwd)")->required()->check(CLI::PositiveNumber);
    app.add_option("--wgrad", wgrad_ms_, "weight-gradient part of --bwd, ms (zb-h1, dualpipe, dualpipev)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--fwd-bwd", fwd_bwd_ms_,
                   "dualpipe, dualpipev: a forward and a backward chunk overlapped (F&B), ms; default --fwd + --bwd")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--p2p", p2p_ms_, "transfer time between stages, ms")->check(CLI::NonNegativeNumber);
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    const auto kind = schedules::schedule_names().find(schedule_);
    if (!kind)
      throw config::InputError("<command line>", "--schedule",
                               fmt::format("unknown schedule '{}'; known: {}", schedule_,
                                           schedules::schedule_names().known()));
    const bool dual = *kind == schedules::ScheduleKind::dualpipe || *kind == schedules::ScheduleKind::dualpipev;
    if (wgrad_ms_ > bwd_ms_)
      throw config::InputError("<command line>", "--wgrad", "the weight-gradient part exceeds --bwd");
    if (fwd_bwd_ms_ > 0 && !dual)
      throw config::InputError("<command line>", "--fwd-bwd", "only dualpipe and dualpipev overlap chunk pairs");
    // Chunk times: a rank's layers split evenly over its vpp chunks (DualPipe: per chunk).
    const double split = dual ? 1.0 : vpp_;
    schedules::FixedChunks c;
    c.fwd_s = fwd_ms_ / split * 1e-3;
    c.bwd_s = bwd_ms_ / split * 1e-3;
    c.wgrad_s = wgrad_ms_ / split * 1e-3;
    c.p2p_s = p2p_ms_ * 1e-3;
    c.fwd_bwd_s = fwd_bwd_ms_ * 1e-3;
    schedules::PipelineResult r;
    try {
      r = schedules::simulate_pipeline(*kind, pp_, vpp_, m_, c);
    } catch (const std::invalid_argument& e) {
      throw config::InputError("<command line>", "--schedule", e.what());
    }
    const double ideal = r.step_time_s - r.bubble_s;
    if (json_)
      io.out << nlohmann::ordered_json{{"schedule", schedule_},
                                       {"stages", r.stages},
                                       {"step_time_ms", r.step_time_s * 1e3},
                                       {"bubble_ms", r.bubble_s * 1e3},
                                       {"bubble_fraction", r.bubble_s / r.step_time_s}}
                    .dump(2)
             << "\n";
    else
      io.out << fmt::format("{} pp={} vpp={} microbatches={} ({} stages): step {:.3f} ms, bubble {:.3f} ms ({:.1f}% "
                            "of the step, {:.1f}% over the {:.3f} ms of work of the busiest rank)\n",
                            schedule_, pp_, vpp_, m_, r.stages, r.step_time_s * 1e3, r.bubble_s * 1e3,
                            100 * r.bubble_s / r.step_time_s, 100 * r.bubble_s / ideal, ideal * 1e3);
    return 0;
  }

 private:
  std::string schedule_;
  int pp_ = 1, vpp_ = 1, m_ = 1;
  double fwd_ms_ = 0, bwd_ms_ = 0, wgrad_ms_ = 0, p2p_ms_ = 0, fwd_bwd_ms_ = 0;
  bool json_ = false;
};

// The one allowed parameter of a journey step without published mechanism detail,
// inferred from that step (reports/infer.hpp).
class Infer final : public Command {
 public:
  void configure(CLI::App& app) override {
    std::vector<std::string> names;
    std::string help = "the parameter:";
    for (const auto& p : reports::inferable_params()) {
      names.emplace_back(p.name);
      help += fmt::format(" {} ({});", p.name, p.help);
    }
    app.add_option("param", param_, help)->required()->check(CLI::IsMember(names));
    app.add_option("before", before_, "scenario before the step (its switch off), with a measured value")->required();
    app.add_option("after", after_, "scenario after the step (its switch on), with a measured value")->required();
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    const auto* param = reports::find_inferable(param_);
    const config::Scenario before = config::load_scenario_file(before_);
    const config::Scenario after = config::load_scenario_file(after_);
    const reports::Inference r = reports::infer(*param, before, after);
    if (json_) {
      io.out << nlohmann::ordered_json{{"param", param_}, {"solved", r.solved}, {"value", r.value},
                                       {"measured_ratio", r.measured_ratio},
                                       {"predicted_ratio", r.predicted_ratio},
                                       {"range", {param->lo, param->hi}},
                                       {"ratio_at_range", {r.ratio_lo, r.ratio_hi}},
                                       {"iterations", r.iterations}}
                    .dump(2)
             << "\n";
    } else if (r.solved) {
      io.out << fmt::format("{} = {:.4g}  (after/before: measured {:.4f}, predicted {:.4f}; {} bisection steps)\n",
                            param_, r.value, r.measured_ratio, r.predicted_ratio, r.iterations);
    } else {
      io.out << fmt::format("{}: no value in [{:g}, {:g}] reproduces the step: the model predicts after/before "
                            "between {:.4f} and {:.4f}, measured {:.4f}\n",
                            param_, param->lo, param->hi, r.ratio_lo, r.ratio_hi, r.measured_ratio);
    }
    return r.solved ? 0 : 1;
  }

 private:
  std::string param_, before_, after_;
  bool json_ = false;
};

// The communication model alone (reports/comm.hpp).
class Comm final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("--system", q_.system, "system preset (h800, gb200-nvl72, ...)")->required();
    app.add_option("--op", q_.op,
                   "all-reduce, all-gather, reduce-scatter, all-to-all, send-recv, ep-dispatch, ep-combine")
        ->required();
    app.add_option("--ranks", q_.ranks, "GPUs in the collective (consecutive ranks)")->capture_default_str();
    app.add_option("--bytes", q_.bytes, "collective size in bytes, as nccl-tests counts it")->capture_default_str();
    app.add_option("--gpus-per-domain", q_.gpus_per_domain, "GPUs per NVLink domain (default: the system's)");
    app.add_option("--dispatcher", q_.dispatcher, "EP dispatcher: alltoall, allgather, deepep, hybridep")
        ->capture_default_str();
    app.add_option("--ep", q_.ep, "expert-parallel ranks")->capture_default_str();
    app.add_option("--tokens", q_.tokens, "tokens per rank")->capture_default_str();
    app.add_option("--hidden", q_.hidden, "hidden size")->capture_default_str();
    app.add_option("--topk", q_.topk, "experts per token")->capture_default_str();
    app.add_option("--experts", q_.experts, "routed experts")->capture_default_str();
    app.add_option("--groups", q_.groups, "group-limited routing: expert groups (0: none; table model only)");
    app.add_option("--topk-groups", q_.topk_groups,
                   "groups a token may use; with the flow model of DeepEP / HybridEP: NVLink domains "
                   "(default: DeepEP 4, as its tests, HybridEP all)");
    app.add_option("--dtype", q_.dtype, "dispatch payload: bf16 or fp8")->capture_default_str();
    app.add_option("--sms", q_.sms,
                   "SMs given to the dispatcher (default: its usual); the flow model caps each GPU's "
                   "throughput by them where the preset has the kernels' SM throughput");
    app.add_option("--algorithm", q_.algorithm,
                   "collectives: auto (NCCL's choice, the faster), ring, or nvls (all-reduce in one NVLink domain)")
        ->capture_default_str();
    app.add_option("--protocol", q_.protocol,
                   "rings: auto (the faster of LL128 and Simple), ll, ll128 or simple (NCCL's protocols)")
        ->capture_default_str();
    app.add_flag("--low-latency", q_.low_latency, "DeepEP's low-latency kernels (ep-dispatch, ep-combine)");
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    const reports::CommAnswer a = reports::comm(q_);
    io.out << (json_ ? reports::comm_json(a).dump(2) + "\n" : reports::comm_text(a));
    return 0;
  }

 private:
  reports::CommQuery q_;
  bool json_ = false;
};

// `moesim sweep`: a sweep file's rows (config/sweep_file.hpp) through predict/sweep.hpp
// on all cores, streamed to a CSV as they finish (reports/sweep.hpp) and sorted by id at
// the end; `--resume` runs only the rows missing from it. The Slurm array's shard is read
// from the environment here and nowhere below.
class Sweep final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "sweep file (docs/SWEEP_FORMAT.md)");
    app.add_option("-o,--out", out_, "CSV of the rows (default: the sweep file's name, .csv, in this folder)");
    app.add_option("--jobs", jobs_, "scenarios simulated at once (default 0: all cores)")->check(CLI::Range(0, 1024));
    app.add_option("--shard", shard_,
                   "I/N: run rows with id % N == I only (I from 0); default under a Slurm job array: "
                   "its task's shard");
    app.add_flag("--resume", resume_, "keep the rows already in the output; run only the missing ones");
    app.add_option("--top", top_, "rows listed by the objective")->check(CLI::Range(0, 1000000));
    app.add_flag("--json", json_, "print the summary as one JSON object");
    app.add_flag("--slurm-script", slurm_, "print an sbatch --array script for the sweep instead of running it");
    app.add_option("--tasks", tasks_, "--slurm-script: array tasks (default: one per 200 rows)")
        ->check(CLI::Range(1, 100000));
    add_uncalibrated(app, uncalibrated_);
    merge_ = app.add_subcommand("merge", "join shard CSVs, reporting missing and duplicated rows");
    merge_->add_option("csvs", merge_files_, "the shards' CSV files")->required();
    merge_->add_option("-o,--out", merge_out_, "the joined CSV")->required();
    merge_->add_option("--sweep", merge_sweep_, "the sweep file: rows missing at its end are reported too");
  }

  int run(Io& io) override {
    if (merge_->parsed()) return merge(io);
    if (file_.empty()) throw config::InputError("", "", "moesim sweep: give a sweep file (or `moesim sweep merge`)");
    const config::SweepFile sweep = config::read_sweep_file(file_);
    const config::SweepPlan plan = config::expand_sweep(sweep);
    const bool budget = sweep.token_budget.has_value();
    const auto [index, count] = shard();
    const std::string stem = std::filesystem::path(file_).stem().string();
    if (slurm_) {
      const int tasks = tasks_ > 0 ? tasks_ : static_cast<int>(std::max<std::size_t>(1, (plan.points.size() + 199) / 200));
      std::error_code ec;
      const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
      io.out << reports::slurm_script(ec ? std::string("moesim") : self.string(),
                                      std::filesystem::absolute(file_).lexically_normal().string(), sweep.name,
                                      static_cast<std::int64_t>(plan.points.size()), tasks,
                                      out_.empty() ? stem : std::filesystem::path(out_).replace_extension().string());
      return 0;
    }
    const std::string out = !out_.empty() ? out_ : count > 1 ? fmt::format("{}_{}.csv", stem, index) : stem + ".csv";
    const auto header = reports::sweep_csv_header(plan, budget);

    // Rows already there (--resume): a last line cut off while written is dropped.
    std::vector<bool> have(plan.points.size(), false);
    reports::SweepCsv kept{header, {}, false};
    if (resume_ && std::filesystem::exists(out)) {
      reports::SweepCsv old = reports::read_sweep_csv(out);
      if (old.header != header)
        throw config::InputError(out, "line 1", fmt::format("the header is not {}'s: written by another sweep file "
                                                            "(or version); remove it or give another -o",
                                                            file_));
      for (auto& r : old.rows)
        if (r.id < static_cast<std::int64_t>(have.size()) && !have[static_cast<std::size_t>(r.id)]) {
          have[static_cast<std::size_t>(r.id)] = true;
          kept.rows.push_back(std::move(r));
        }
      if (old.dropped_partial_line) io.err << fmt::format("moesim sweep: {}: dropped a truncated last line\n", out);
    }
    write_file(out, reports::sweep_csv_text(kept));

    std::vector<const config::SweepPoint*> todo;
    for (const auto& p : plan.points)
      if (p.id % count == index && !have[static_cast<std::size_t>(p.id)]) todo.push_back(&p);
    std::ofstream stream(out, std::ios::binary | std::ios::app);
    if (!stream) throw config::InputError(out, "", "cannot write the file");
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
      io.err << fmt::format("\rmoesim sweep {}: {}/{} rows, {:.2f} rows/s, ETA {}m{:02}s   ", sweep.name, done,
                            todo.size(), rate, static_cast<long>(eta) / 60, static_cast<long>(eta) % 60)
             << (final ? "\n" : "") << std::flush;
    };
    const config::LoadOptions opts{!uncalibrated_};
    predict::run_sweep(todo, sweep.base_file, sweep.token_budget, jobs_,
                       [&](const config::SweepPoint& p, const predict::SweepResult& r) {
                         stream << reports::csv_line(reports::sweep_csv_fields(p, r, budget)) << std::flush;
                         ++done;
                         if (progress) show(false);
                       },
                       opts);
    if (progress) show(true);
    stream.close();
    if (!stream) throw config::InputError(out, "", "cannot write the file");

    // The finished file: rows sorted by id, so the same sweep gives the same file.
    const reports::SweepCsv all = reports::read_sweep_csv(out);
    write_file(out, reports::sweep_csv_text(all));
    reports::SweepSummaryInfo info{sweep.name, file_, out, static_cast<std::int64_t>(plan.points.size()),
                                   plan.combinations, plan.pruned, index, count, sweep.objective, budget, top_};
    if (json_) io.out << reports::sweep_summary_json(all, info).dump(2) << "\n";
    else io.out << reports::sweep_summary_text(all, info);
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
        throw config::InputError(what, "", fmt::format("'{}' is not a whole number", s));
      return v;
    };
    std::int64_t i = 0, n = 1;
    if (!shard_.empty()) {
      const auto slash = shard_.find('/');
      if (slash == std::string::npos) throw config::InputError("--shard", "", "expected I/N, e.g. 0/4");
      i = number(shard_.substr(0, slash), "--shard");
      n = number(shard_.substr(slash + 1), "--shard");
      if (n < 1 || i < 0 || i >= n)
        throw config::InputError("--shard", "", fmt::format("{}: needs 0 <= I < N", shard_));
    } else if (const char* id = std::getenv("SLURM_ARRAY_TASK_ID")) {
      const auto env = [&](const char* name, const char* def) {
        const char* v = std::getenv(name);
        return number(v ? v : def, name);
      };
      const std::int64_t task = number(id, "SLURM_ARRAY_TASK_ID"), min = env("SLURM_ARRAY_TASK_MIN", "0"),
                         step = env("SLURM_ARRAY_TASK_STEP", "1"), tasks = env("SLURM_ARRAY_TASK_COUNT", "1");
      if (step < 1 || tasks < 1 || task < min || (task - min) % step != 0 || (task - min) / step >= tasks)
        throw config::InputError("SLURM_ARRAY_TASK_ID", "",
                                 fmt::format("task {} is not in the array (min {}, step {}, count {})", task, min,
                                             step, tasks));
      i = (task - min) / step;
      n = tasks;
    }
    return {i, n};
  }



  int merge(Io& io) const {
    std::optional<std::int64_t> expected;
    if (!merge_sweep_.empty())
      expected = static_cast<std::int64_t>(config::expand_sweep(config::read_sweep_file(merge_sweep_)).points.size());
    const reports::SweepMerge m = reports::merge_sweep_csvs(merge_files_, expected);
    write_file(merge_out_, reports::sweep_csv_text(m.csv));
    const auto ids = [](const std::vector<std::int64_t>& v) {
      std::string s;
      for (std::size_t k = 0; k < v.size() && k < 20; ++k) s += (k ? " " : "") + std::to_string(v[k]);
      return v.size() > 20 ? s + fmt::format(" ... ({} in all)", v.size()) : s;
    };
    io.out << fmt::format("merged {} rows from {} file(s) into {}\n", m.csv.rows.size(), merge_files_.size(),
                          merge_out_);
    if (m.dropped_partial_lines)
      io.out << fmt::format("dropped {} truncated last line(s)\n", m.dropped_partial_lines);
    if (!m.missing.empty()) io.out << fmt::format("missing rows: {}\n", ids(m.missing));
    if (!m.duplicated.empty()) io.out << fmt::format("duplicated rows (kept once): {}\n", ids(m.duplicated));
    if (!m.conflicting.empty())
      io.out << fmt::format("duplicated rows whose copies differ (the first file's kept): {}\n", ids(m.conflicting));
    return m.missing.empty() && m.conflicting.empty() ? 0 : 1;
  }

  std::string file_, out_, shard_;
  int jobs_ = 0, top_ = 10, tasks_ = 0;
  bool resume_ = false, json_ = false, slurm_ = false, uncalibrated_ = false;
  CLI::App* merge_ = nullptr;
  std::vector<std::string> merge_files_;
  std::string merge_out_, merge_sweep_;
};

// `moesim calibrate run`: moesim-calib (built beside moesim when CUDA is found) on this
// machine's GPU, writing a measurement file; `moesim calibrate fit`: measurement files
// to a profile (calibration/profile_fit.hpp) that system presets name in "profiles".
class Calibrate final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.require_subcommand(1);
    run_ = app.add_subcommand("run", "run build/moesim-calib on this machine's GPU and write a measurement file");
    run_->add_option("-o,--out", run_out_, "measurement file to write")->required();
    run_->add_option("--system", run_system_, "the system preset the GPU calibrates (h100, h200, ...)");
    run_->add_flag("--quick", quick_, "the smaller grid");
    fit_ = app.add_subcommand("fit", "fit a calibration profile from measurement files");
    fit_->add_option("measurements", files_, "measurement files (calibration/measurements/*.json)")->required();
    fit_->add_option("-o,--out", fit_out_, "profile file to write (default: standard output)");
    fit_->add_option("--name", name_, "the profile's name (default: the output file's stem)");
    fit_->add_option("--system", fit_system_, "the system preset to fit (default: the measurements' \"system\")");
    ep_ = app.add_subcommand("ep", "fit one EP library's profile jointly from all its tables across systems");
    ep_->add_option("library", ep_library_, "deepep, deepep-ll or hybridep")->required();
    ep_->add_option("--measurements", ep_dir_, "folder of the ep-*.json measurement files");
    ep_->add_option("-o,--out", fit_out_, "profile file to write (default: standard output)");
    corpus_ = app.add_subcommand(
        "corpus", "fit the cross-run quantities no microbenchmark pins over the measured runs, with leave-one-out error");
    corpus_->add_option("paths", corpus_paths_, "scenario files or folders (default: scenarios)");
    corpus_->add_option("-o,--out", fit_out_, "write the profile (calibration/profiles/corpus.json)");
    corpus_->add_option("--jobs", jobs_, "simulations at once (default: all cores)")->check(CLI::Range(1, 1024));
    corpus_->add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    if (corpus_->parsed()) return fit_corpus(io);
    return run_->parsed() ? run_kernels(io) : ep_->parsed() ? fit_ep(io) : fit(io);
  }

 private:
  int run_kernels(Io& io) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    const fs::path calib = ec ? fs::path("moesim-calib") : self.parent_path() / "moesim-calib";
    if (!fs::exists(calib)) {
      io.err << fmt::format("moesim calibrate run: {} is not built (CMake found no CUDA compiler, or "
                            "MOESIM_CALIB_KERNELS=OFF); measurement files can still be fitted with `moesim calibrate "
                            "fit`\n",
                            calib.string());
      return 1;
    }
    const auto quote = [](const std::string& s) {
      std::string q = "'";
      for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return q + "'";
    };
    std::string cmd = quote(calib.string()) + " -o " + quote(run_out_);
    if (!run_system_.empty()) cmd += " --system " + quote(run_system_);
    if (quick_) cmd += " --quick";
    const int status = std::system(cmd.c_str());
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (rc == 3) {
      io.err << "moesim calibrate run: no CUDA device on this machine; run it where a GPU is lent, or fit "
                "published measurement files with `moesim calibrate fit`\n";
      return 1;
    }
    if (rc != 0) return 1;
    io.out << fmt::format("wrote {}; fit it with: moesim calibrate fit {} -o calibration/profiles/NAME.json\n",
                          run_out_, run_out_);
    return 0;
  }

  int fit(Io& io) const {
    std::vector<calibration::Measurement> ms;
    std::string system = fit_system_;
    for (const auto& f : files_) {
      ms.push_back(config::load_measurement_file(f));
      if (fit_system_.empty() && !ms.back().system.empty()) {
        if (!system.empty() && system != ms.back().system)
          throw config::InputError(f, "system",
                                   fmt::format("calibrates '{}', another file '{}'; fit one system at a time",
                                               ms.back().system, system));
        system = ms.back().system;
      }
    }
    if (system.empty())
      throw config::InputError(files_.front(), "system", "no system preset named; give --system");
    const auto spec = config::load_system_preset(system, {false});
    const std::string name =
        !name_.empty() ? name_ : !fit_out_.empty() ? std::filesystem::path(fit_out_).stem().string() : "profile";
    calibration::Profile prof;
    try {
      prof = calibration::fit_profile(name, ms, spec, system);
    } catch (const std::invalid_argument& e) {
      throw config::InputError(files_.front(), "", e.what());
    }
    write_profile(io, calibration::profile_json(prof).dump(2) + "\n",
                  fmt::format("{} parameters of {} from {} file(s)", prof.parameters.size(), system, ms.size()));
    return 0;
  }

  // `moesim calibrate ep LIB`: calibration/ep_library_fit.hpp over every ep-*.json of the
  // folder, the systems read with their profiles but the library's own.
  int fit_ep(Io& io) const {
    namespace fs = std::filesystem;
    std::vector<std::pair<std::string, nlohmann::json>> files;
    std::vector<fs::path> paths;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ep_dir_, ec)) {
      const auto n = e.path().filename().string();
      if (n.rfind("ep-", 0) == 0 && e.path().extension() == ".json") paths.push_back(e.path());
    }
    if (ec) throw config::InputError(ep_dir_, "", "cannot read the folder of measurement files");
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) files.emplace_back(p.filename().string(), config::read_json_file(p.string()));
    const std::string lib = ep_library_;
    const calibration::EpSystemLookup systems = [lib](const std::string& name) {
      auto s = config::load_system_preset(name);
      (lib == "hybridep" ? s.ep_dispatch.hybridep
       : lib == "deepep-ll" ? s.ep_dispatch.deepep_low_latency
                            : s.ep_dispatch.deepep)
          .reset();
      return s;
    };
    calibration::EpLibraryFit fit;
    try {
      fit = calibration::fit_ep_library(lib, files, systems);
    } catch (const std::invalid_argument& e) {
      throw config::InputError(ep_dir_, "", e.what());
    }
    for (const auto& r : fit.rows)
      io.err << fmt::format("  {:<22} {:<52} {:<7} {:>8.1f} {:>8.1f} {:>+6.1f}%  {}\n", r.file, r.what, r.link_kind,
                            r.measured, r.model, r.error_pct, r.role);
    write_profile(io, calibration::ep_profile_json(fit).dump(2) + "\n",
                  fmt::format("{} parameters of {} from {} file(s)", fit.fits.size(), lib, fit.files.size()));
    return 0;
  }

  CLI::App *run_ = nullptr, *fit_ = nullptr, *ep_ = nullptr;
  // A fitted profile to -o FILE (with a one-line summary), or to standard output.
  void write_profile(Io& io, const std::string& text, const std::string& summary) const {
    if (fit_out_.empty()) {
      io.out << text;
      return;
    }
    std::ofstream out(fit_out_);
    if (!(out << text)) throw config::InputError(fit_out_, "", "cannot write the profile");
    io.out << fmt::format("wrote {}: {}\n", fit_out_, summary);
  }

  // `moesim calibrate corpus`: reports/corpus.hpp over every scenario with a measured
  // block (files without one are skipped, as validate does).
  int fit_corpus(Io& io) const {
    std::vector<config::Scenario> runs;
    int skipped = 0;
    for (const auto& f : measured_files(corpus_paths_.empty() ? std::vector<std::string>{"scenarios"} : corpus_paths_,
                                        skipped))
      runs.push_back(config::load_scenario_file(f));
    if (runs.empty()) throw config::InputError("", "", "no scenario with a measured block under the given paths");
    const reports::CorpusResult r = reports::calibrate_corpus(runs, jobs_);
    if (json_) io.out << reports::corpus_json(r).dump(2) << "\n";
    else io.out << reports::corpus_text(r);
    if (!fit_out_.empty()) {
      const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      std::tm tm{};
      gmtime_r(&now, &tm);
      char date[16];
      std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
      std::ofstream out(fit_out_);
      if (!out) throw config::InputError(fit_out_, "", "cannot write the profile");
      out << reports::corpus_profile(r, date).dump(2) << "\n";
    }
    return 0;
  }

  CLI::App* corpus_ = nullptr;
  std::vector<std::string> corpus_paths_;
  int jobs_ = 0;
  bool json_ = false;
  std::string run_out_, run_system_, fit_out_, name_, fit_system_, ep_library_, ep_dir_ = "calibration/measurements";
  std::vector<std::string> files_;
  bool quick_ = false;
};

// `moesim report`: one self-contained HTML page of charts (reports/report.hpp) for a
// scenario, two scenarios (--diff), the measured runs under paths (--validate, as
// `validate` evaluates them) or a sweep's CSV (--sweep).
class Report final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("inputs", inputs_,
                   "a scenario; with --diff scenarios A and B; with --validate scenario files or folders; with "
                   "--sweep a CSV written by moesim sweep");
    app.add_option("-o,--out", out_, "the HTML file to write");
    app.add_flag("--diff", diff_, "compare two scenarios: their breakdowns and the difference by contribution");
    app.add_flag("--validate", validate_, "predicted against measured for the runs with a measured block");
    app.add_flag("--sweep", sweep_, "a sweep CSV: the objective against cluster size, the Pareto front");
    app.add_option("--objective", objective_, "--sweep: the column plotted (default tokens_per_s_per_gpu)");
    app.add_option("--jobs", jobs_, "--validate: scenarios simulated at once (default: all cores)")
        ->check(CLI::Range(0, 1024));
    add_uncalibrated(app, uncalibrated_);
  }
  int run(Io& io) override {
    const auto usage = [](const std::string& what, const std::string& message) {
      return config::InputError("<command line>", what, message);
    };
    if (out_.empty()) throw usage("-o", "give the HTML file to write: moesim report ... -o OUT.html");
    if (int(diff_) + int(validate_) + int(sweep_) > 1) throw usage("--diff", "give one of --diff, --validate, --sweep");
    if (!objective_.empty() && !sweep_) throw usage("--objective", "only with --sweep");
    const std::size_t want = diff_ ? 2 : 1;
    if (validate_ ? inputs_.empty() : inputs_.size() != want)
      throw usage("inputs", validate_ ? "give scenario files or folders to validate"
                            : diff_   ? "give two scenarios: moesim report --diff A.json B.json -o OUT.html"
                            : sweep_  ? "give one sweep CSV: moesim report --sweep OUT.csv -o OUT.html"
                                      : "give one scenario: moesim report FILE.json -o OUT.html");
    const config::LoadOptions opts{!uncalibrated_};
    reports::HtmlPage page;
    if (diff_) {
      const std::array<config::Scenario, 2> sc{config::load_scenario_file(inputs_[0], opts),
                                               config::load_scenario_file(inputs_[1], opts)};
      std::array<predict::Prediction, 2> p;
      predict::run_parallel(2, 2, [&](std::size_t i) { p[i] = predict::predict(sc[i]); });
      page = reports::diff_report({sc[0], p[0]}, {sc[1], p[1]});
    } else if (validate_) {
      int skipped = 0;
      const std::vector<std::string> files = measured_files(inputs_, skipped);
      if (files.empty()) throw usage("inputs", "no scenario with a measured block under the given paths");
      page = reports::validate_report(predict::validate_files(files, opts, jobs_), skipped);
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
      std::array<predict::Prediction, 2> p;
      predict::run_parallel(2, 2, [&](std::size_t i) { p[i] = predict::predict(sc, {i == 1, false}); });
      page = reports::run_report(sc, p[0], p[1]);
    }
    const std::string html = reports::html_page(page);
    std::ofstream f(out_, std::ios::binary | std::ios::trunc);
    if (!f || !(f << html) || !f.flush()) throw config::InputError(out_, "", "cannot write the file");
    io.out << fmt::format("wrote {} ({} charts, {:.0f} KB)\n", out_, page.charts.size(), html.size() / 1024.0);
    return 0;
  }

 private:
  std::vector<std::string> inputs_;
  std::string out_, objective_;
  bool diff_ = false, validate_ = false, sweep_ = false, uncalibrated_ = false;
  int jobs_ = 0;
};

template <class C>
std::unique_ptr<Command> make() {
  return std::make_unique<C>();
}

constexpr std::array<CommandInfo, 12> kCommands{{
    {"run", "predict one scenario: step time, TFLOPS/GPU, MFU, memory, breakdown", make<Run>},
    {"diff", "two scenarios' predictions side by side, the step-time difference by contribution", make<Diff>},
    {"describe", "what a scenario resolves to: parameters, FLOPs, layout, settings", make<Describe>},
    {"import", "a Megatron-LM pretraining command line as a scenario (flags ignored and settings assumed listed)",
     make<Import>},
    {"validate", "predicted vs measured over scenario files or folders", make<Validate>},
    {"bench", "time the simulation of one scenario (wall time, events/s), or a sweep's rows (--sweep)", make<Bench>},
    {"comm", "the communication model alone: collectives as flows over the topology, EP dispatch", make<Comm>},
    {"pipeline", "a pipeline schedule alone with fixed chunk times", make<Pipeline>},
    {"infer", "infer a journey step's one unpublished parameter from that step", make<Infer>},
    {"sweep", "run the scenarios of a sweep file to a CSV, ranked; merge shards", make<Sweep>},
    {"report", "one self-contained HTML page of charts: a scenario, a diff, validation or a sweep", make<Report>},
    {"calibrate", "run the calibration kernels on a GPU, or fit a profile from measurement files", make<Calibrate>},
}};

}  // namespace

std::span<const CommandInfo> commands() { return kCommands; }

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"moesim: discrete-event performance model of Mixture-of-Experts training"};
  app.set_version_flag("--version", "moesim 0.1.0");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> subs;
  for (const auto& c : commands()) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.help));
    subs.emplace_back(sub, c.make());
    subs.back().second->configure(*sub);
  }
  Io io{out, err};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return 2;
  }
  try {
    for (auto& [sub, cmd] : subs)
      if (sub->parsed()) return cmd->run(io);
  } catch (const config::InputError& e) {
    err << "moesim: error: " << e.what() << "\n";
    return 2;
  } catch (const sim_core::SimulationStuck& e) {
    err << "moesim: the simulation could not finish: " << e.what() << "\n";
    return 3;
  } catch (const schedules::NotSimulated& e) {
    err << "moesim: not simulated yet: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "moesim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}

}  // namespace moesim::cli
