// cli/run.cpp: `moesim run`: one scenario predicted (predict/predict.hpp), printed as text or JSON,
// with a trace on request (reports/run.hpp).
#include "cli/commands.hpp"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "predict/predict.hpp"
#include "reports/run.hpp"

namespace moesim::cli {
namespace {

class Run final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("file", file_, "scenario JSON file (or a shipped scenario's name: dsv3-gb200)")
        ->required()
        ->transform(shipped_scenario_path, "", "shipped scenario");
    app.add_flag("--json", json_, "print one JSON object instead of the text report");
    auto* trace =
        app.add_option("--trace", trace_, "write a Chrome/Perfetto trace (JSON) to this file");
    std::string levels;
    for (const auto& e : reports::trace_level_names().entries())
      levels += fmt::format("\n  {}: {}", e.name, e.help);
    app.add_option(
           "--trace-level", trace_level_,
           "the trace's detail (default module; the default scenario: under 10 MB):" + levels)
        ->check([](const std::string& v) {
          return reports::trace_level_names().find(v)
                     ? std::string()
                     : fmt::format("unknown trace level '{}' (known: {})", v,
                                   reports::trace_level_names().known());
        })
        ->needs(trace);  // without a trace it would change nothing
    app.add_option("--fidelity", fidelity_,
                   "representative: one rank per pipeline stage (default); full: every rank")
        ->check(CLI::IsMember({"representative", "full"}));
    app.add_flag("--deterministic", deterministic_,
                 "leave out the simulation's wall time (`simulation.wall_s`, the text's last "
                 "line's seconds), the "
                 "one figure that differs between runs: the output is then byte-identical for the "
                 "same input");
    add_uncalibrated(app, uncalibrated_);
    add_headroom(app, headroom_);
    add_system_set(app, set_);
  }
  int run(Io& io) override {
    const config::Scenario sc =
        config::load_scenario_file(file_, config::load_options(uncalibrated_, set_, headroom_));
    const predict::Prediction p = predict::predict(sc, {!trace_.empty(), fidelity_ == "full"});
    if (!p.fits_in_memory)
      io.err << fmt::format(
          "moesim: warning: {}: {}\n", file_,
          predict::memory_shortfall(sc, p.rank_memory_gib, p.reserved_memory_gib));
    if (!trace_.empty()) {
      std::ofstream out(trace_);
      if (!out) throw config::InputError(trace_, "", "cannot write the trace file");
      reports::write_trace(p, out, *reports::trace_level_names().find(trace_level_));
    }
    if (json_) {
      auto j = reports::run_json(sc, p);
      if (deterministic_) j["simulation"].erase("wall_s");
      io.out << j.dump(2) << "\n";
    } else {
      std::string text = reports::run_text(sc, p);
      // The last line "simulated R ranks, K kernels, E events in W s": without " in W s".
      if (const auto at = text.rfind(" events in "); deterministic_ && at != std::string::npos)
        text = text.substr(0, at) + " events\n";
      io.out << text;
    }
    return 0;
  }

 private:
  std::string file_, trace_, fidelity_ = "representative", trace_level_ = "module";
  bool json_ = false, uncalibrated_ = false, deterministic_ = false;
  double headroom_ = 0;
  std::vector<std::string> set_;
};

}  // namespace

std::unique_ptr<Command> make_run_command() {
  return std::make_unique<Run>();
}

}  // namespace moesim::cli
