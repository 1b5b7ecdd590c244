// cli/calibrate.cpp: `moesim calibrate run | fit | ep | jitter | corpus | routing | trace`: the
// calibration kernels on this machine's GPU, profiles fitted from measurement files
// (calibration/), the corpus fit of the cross-run quantities (predict/corpus.hpp, printed and
// written by reports/corpus.hpp), the global-batch router's popularity dispersion fitted to
// measured pairs (predict/routing_fit.hpp, reports/routing_fit.hpp), and a profiled trace's
// kernels against the simulation's (predict/trace_compare.hpp, reports/trace.hpp).
#include "cli/commands.hpp"

#include <sys/wait.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/ep_library_fit.hpp"
#include "calibration/jitter_fit.hpp"
#include "calibration/profile_fit.hpp"
#include "cli/common.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"
#include "config/load_trace.hpp"
#include "predict/corpus.hpp"
#include "predict/predict.hpp"
#include "predict/routing_fit.hpp"
#include "predict/variability.hpp"
#include "reports/corpus.hpp"
#include "reports/routing_fit.hpp"
#include "reports/text.hpp"
#include "reports/trace.hpp"

namespace moesim::cli {
namespace {

// Today's date (UTC), as fitted profiles record it.
std::string today() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  return date;
}

// `moesim calibrate run`: moesim-calib (built beside moesim when CUDA is found) on this
// machine's GPU, writing a measurement file; `moesim calibrate fit`: measurement files
// to a profile (calibration/profile_fit.hpp) that system presets name in "profiles".
class Calibrate final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.require_subcommand(1);
    run_ = app.add_subcommand(
        "run", "run build/moesim-calib on this machine's GPU and write a measurement file");
    run_->add_option("-o,--out", run_out_, "measurement file to write")->required();
    run_->add_option("--system", run_system_,
                     "the system preset the GPU calibrates (h100, h200, ...)");
    run_->add_flag("--quick", quick_, "the smaller grid");
    fit_ = app.add_subcommand("fit", "fit a calibration profile from measurement files");
    fit_->add_option("measurements", files_, "measurement files (calibration/measurements/*.json)")
        ->required();
    fit_->add_option("-o,--out", fit_out_, "profile file to write (default: standard output)");
    fit_->add_option("--name", name_, "the profile's name (default: the output file's stem)");
    fit_->add_option("--system", fit_system_,
                     "the system preset to fit (default: the measurements' \"system\")");
    ep_ = app.add_subcommand(
        "ep", "fit one EP library's profile jointly from all its tables across systems");
    ep_->add_option("library", ep_library_, "deepep, deepep-ll or hybridep")->required();
    ep_->add_option("--measurements", ep_dir_, "folder of the ep-*.json measurement files");
    ep_->add_option("-o,--out", fit_out_, "profile file to write (default: standard output)");
    jitter_ =
        app.add_subcommand("jitter",
                           "fit the per-process and common step delays (predict/variability.hpp) "
                           "from weak-scaling pairs and per-step spreads at scale");
    jitter_->add_option(
        "--measurements", jitter_file_,
        "the per-step statistics (default: calibration/measurements/step-jitter-mlperf.json)");
    jitter_->add_option("-o,--out", fit_out_,
                        "write the profile (calibration/profiles/step-jitter.json)");
    // The fits that predict the measured runs under paths: their options.
    const auto over_runs = [&](const char* name, const char* help, const char* profile) {
      CLI::App* c = app.add_subcommand(name, help);
      c->add_option("paths", corpus_paths_, "scenario files or folders (default: scenarios)");
      c->add_option("-o,--out", fit_out_, fmt::format("write the profile ({})", profile));
      c->add_option("--jobs", jobs_, "simulations at once (default: all cores)")
          ->check(CLI::Range(1, 1024));
      c->add_flag("--json", json_, "print one JSON object");
      return c;
    };
    corpus_ = over_runs("corpus",
                        "fit the cross-run quantities no microbenchmark pins over the measured "
                        "runs, with leave-one-out error",
                        "calibration/profiles/corpus.json");
    routing_ = over_runs("routing",
                         "fit the popularity dispersion of routers pretrained with global-batch "
                         "balance to the measured dropless-against-forced pairs, with "
                         "leave-one-out error",
                         "calibration/profiles/routing.json");
    trace_ = app.add_subcommand("trace",
                                "a PyTorch-profiler (Kineto) trace's GPU kernels by class and its "
                                "host time by schedule node, against a scenario's");
    trace_->add_option("file", trace_file_, "the trace (torch.profiler export_chrome_trace JSON)")
        ->required();
    trace_->add_option("--scenario", trace_scenario_,
                       "the scenario the trace profiled: its simulated kernels beside");
    trace_
        ->add_option("--microbatches", trace_microbatches_,
                     "the trace holds this many microbatches' forward and backward (default: one "
                     "whole step)")
        ->check(CLI::Range(1, 1 << 20));
    trace_->add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    if (corpus_->parsed()) return fit_corpus(io);
    if (routing_->parsed()) return fit_routing(io);
    if (trace_->parsed()) return compare_trace(io);
    if (jitter_->parsed()) return fit_jitter(io);
    return run_->parsed() ? run_kernels(io) : ep_->parsed() ? fit_ep(io) : fit(io);
  }

 private:
  int run_kernels(Io& io) const {
    if (!run_system_.empty())  // written into the measurement file: refused before the GPU runs
      config::require_preset(config::PresetKind::system, run_system_, "<command line>", "--system");
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    const fs::path calib = ec ? fs::path("moesim-calib") : self.parent_path() / "moesim-calib";
    if (!fs::exists(calib)) {
      io.err << fmt::format(
          "moesim calibrate run: {} is not built (CMake found no CUDA compiler, or "
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
      io.err << "moesim calibrate run: no CUDA device on this machine; run it where a GPU is lent, "
                "or fit "
                "published measurement files with `moesim calibrate fit`\n";
      return 1;
    }
    if (rc != 0) return 1;
    io.out << fmt::format(
        "wrote {}; fit it with: moesim calibrate fit {} -o calibration/profiles/NAME.json\n",
        run_out_, run_out_);
    return 0;
  }

  int fit(Io& io) const {
    std::vector<calibration::Measurement> ms;
    std::string system = fit_system_;
    if (!system.empty())
      config::require_preset(config::PresetKind::system, system, "<command line>", "--system");
    for (const auto& f : files_) {
      ms.push_back(config::load_measurement_file(f));
      if (fit_system_.empty() && !ms.back().system.empty()) {
        config::require_preset(config::PresetKind::system, ms.back().system, f, "system");
        if (!system.empty() && system != ms.back().system)
          throw config::InputError(
              f, "system",
              fmt::format("calibrates '{}', another file '{}'; fit one system at a time",
                          ms.back().system, system));
        system = ms.back().system;
      }
    }
    if (system.empty())
      throw config::InputError(files_.front(), "system", "no system preset named; give --system");
    const auto spec = config::load_system_preset(system, {false});
    const auto calibrated = config::load_system_preset(system);
    const std::string name = !name_.empty()      ? name_
                             : !fit_out_.empty() ? std::filesystem::path(fit_out_).stem().string()
                                                 : "profile";
    calibration::Profile prof;
    try {
      prof = calibration::fit_profile(name, ms, spec, system, &calibrated);
    } catch (const std::invalid_argument& e) {
      throw config::InputError(files_.front(), "", e.what());
    }
    write_profile(io, calibration::profile_json(prof).dump(2) + "\n",
                  fmt::format("{} parameters of {} from {}", prof.parameters.size(), system,
                              reports::counted(ms.size(), "file")));
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
    for (const auto& p : paths)
      files.emplace_back(p.filename().string(), config::read_json_file(p.string()));
    const std::string lib = ep_library_;
    const calibration::EpSystemLookup systems = [lib](const std::string& name) {
      auto s = config::load_system_preset(name);
      (lib == "hybridep"    ? s.ep_dispatch.hybridep
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
      io.err << fmt::format("  {:<22} {:<52} {:<7} {:>8.1f} {:>8.1f} {:>+6.1f}%  {}\n", r.file,
                            r.what, r.link_kind, r.measured, r.model, r.error_pct, r.role);
    write_profile(io, calibration::ep_profile_json(fit).dump(2) + "\n",
                  fmt::format("{} parameters of {} from {}", fit.fits.size(), lib,
                              reports::counted(fit.files.size(), "file")));
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

  // The timing runs under the given paths (files without a measured block are skipped, as
  // validate does; memory points check the memory model, not the step's fitted quantities).
  std::vector<config::Scenario> timing_runs() const {
    std::vector<config::Scenario> runs;
    int skipped = 0;
    const auto paths =
        corpus_paths_.empty() ? std::vector<std::string>{"scenarios"} : corpus_paths_;
    for (const auto& f : config::measured_files(paths, skipped)) {
      config::Scenario sc = config::load_scenario_file(f);
      if (config::is_timing(sc.measured->metric)) runs.push_back(std::move(sc));
    }
    if (runs.empty())
      throw config::InputError(
          "<command line>", "paths",
          fmt::format("no scenario with a measured step time or throughput under {}",
                      fmt::join(paths, ", ")));
    return runs;
  }

  // Writes a fitted profile to --out, when given (the fit's result went to standard output).
  void save_profile(const nlohmann::ordered_json& profile) const {
    if (fit_out_.empty()) return;
    std::ofstream out(fit_out_);
    if (!out) throw config::InputError(fit_out_, "", "cannot write the profile");
    out << profile.dump(2) << "\n";
  }

  // `moesim calibrate routing`: predict/routing_fit.hpp over the measured runs' pairs.
  int fit_routing(Io& io) const {
    const auto runs = timing_runs();
    predict::RoutingFitResult r;
    try {
      r = predict::fit_global_batch_sigma(runs, jobs_);
    } catch (const std::invalid_argument& e) {
      throw config::InputError("<command line>", "paths", e.what());
    }
    io.out << (json_ ? reports::routing_fit_json(r).dump(2) + "\n" : reports::routing_fit_text(r));
    save_profile(reports::routing_fit_profile(r, today()));
    return 0;
  }

  // `moesim calibrate corpus`: predict/corpus.hpp over every timing run.
  int fit_corpus(Io& io) const {
    const auto runs = timing_runs();
    const predict::CorpusResult r = predict::calibrate_corpus(runs, jobs_);
    if (json_)
      io.out << reports::corpus_json(r).dump(2) << "\n";
    else
      io.out << reports::corpus_text(r);
    save_profile(reports::corpus_profile(r, today()));
    return 0;
  }

  // `moesim calibrate jitter`: calibration/jitter_fit.hpp over the per-step statistics.
  int fit_jitter(Io& io) const {
    calibration::JitterFit fit;
    try {
      fit = calibration::read_step_jitter(nlohmann::json(config::read_json_file(jitter_file_)));
    } catch (const std::exception& e) {
      throw config::InputError(jitter_file_, "points", e.what());
    }
    // The simulation's own increase over each pair that names its scenarios (paths relative
    // to the measurement file).
    const auto dir = std::filesystem::path(jitter_file_).parent_path();
    const auto step = [&](const std::string& f) {
      return predict::step_without_delays((dir / f).lexically_normal().string());
    };
    for (auto& q : fit.pairs)
      if (!q.scenarios.empty())
        q.simulated_increase_s = step(q.scenarios[1]) - step(q.scenarios[0]);
    try {
      fit = calibration::fit_step_jitter(std::move(fit));
    } catch (const std::exception& e) {
      throw config::InputError(jitter_file_, "pairs", e.what());
    }
    for (const auto& q : fit.pairs)
      io.err << fmt::format(
          "  {:<12} {:>6} -> {:>6} GPUs  +{:>4.0f} ms measured, simulation +{:>4.0f} ms, delays "
          "+{:>4.0f} ms  {}\n",
          q.system, q.gpus_from, q.gpus_to, (q.step_to_s - q.step_from_s) * 1e3,
          q.simulated_increase_s * 1e3, q.model_increase_s * 1e3, q.role == "fit" ? "" : q.role);
    for (const auto& r : fit.rows)
      io.err << fmt::format(
          "  {:<12} {:>6} GPUs  median {:>7.3f} s  p95 - median {:>5.0f} ms, model {:>5.0f} ms  "
          "{}\n",
          r.system, r.gpus, r.median_s, r.measured_spread_s * 1e3, r.model_spread_s * 1e3,
          r.role == "fit" ? "" : r.role);
    write_profile(io, calibration::jitter_profile_json(fit, jitter_file_, today()).dump(2) + "\n",
                  fmt::format("jitter_s {:.4f} s from {} pairs (rms {:.1f} ms); common_s {:.4f} s, "
                              "common_fraction {:.5f} from {} points (rms {:.0f} ms)",
                              fit.jitter_s, fit.fit_pairs, fit.pair_rms_error_s * 1e3, fit.common_s,
                              fit.common_fraction, fit.fit_points, fit.rms_error_s * 1e3));
    return 0;
  }

  // `moesim calibrate trace`: config/load_trace.hpp, predict/trace_compare.hpp.
  int compare_trace(Io& io) const {
    if (trace_microbatches_ > 0 && trace_scenario_.empty())
      throw config::InputError("<command line>", "--microbatches",
                               "compares with a scenario: give --scenario");
    reports::TraceReport r;
    r.file = trace_file_;
    const auto trace = config::load_kineto_trace(trace_file_);
    r.measured = calibration::trace_totals(trace.kernels);
    r.measured_host = trace.host_nodes;
    if (!trace_scenario_.empty()) {
      const auto sc = config::load_scenario_file(trace_scenario_);
      r.scenario = sc.name;
      r.predicted = predict::predicted_kernels(
          sc, trace_microbatches_ > 0 ? std::optional<std::int64_t>(trace_microbatches_)
                                      : std::nullopt);
    }
    io.out << (json_ ? reports::trace_json(r).dump(2) + "\n" : reports::trace_text(r));
    return 0;
  }

  CLI::App* corpus_ = nullptr;
  CLI::App* routing_ = nullptr;
  CLI::App* trace_ = nullptr;
  std::string trace_file_, trace_scenario_;
  std::int64_t trace_microbatches_ = 0;
  CLI::App* jitter_ = nullptr;
  std::string jitter_file_ = "calibration/measurements/step-jitter-mlperf.json";
  std::vector<std::string> corpus_paths_;
  int jobs_ = 0;
  bool json_ = false;
  std::string run_out_, run_system_, fit_out_, name_, fit_system_, ep_library_,
      ep_dir_ = "calibration/measurements";
  std::vector<std::string> files_;
  bool quick_ = false;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command() {
  return std::make_unique<Calibrate>();
}

}  // namespace moesim::cli
