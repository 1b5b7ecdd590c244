// cli/bench.cpp: `moesim bench`: the speed targets (docs/ARCHITECTURE.md), measured: a scenario's
// simulation wall time and event rate, the engine alone, or a sweep's rows per second.
#include "cli/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "predict/predict.hpp"
#include "predict/sweep.hpp"
#include "sim_core/engine.hpp"

namespace moesim::cli {
namespace {

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
    engine->after(sim_core::Time::ps(static_cast<std::int64_t>(1000 + (arg * 2654435761u) % 4000)),
                  this, arg + 1);
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
  return static_cast<double>(st.events) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The process's peak resident memory so far, MiB (getrusage's ru_maxrss, KiB on Linux): the
// memory half of the 131,072-GPU scenario's target ("under 2 s and 1 GB",
// docs/ARCHITECTURE.md), the process as a whole (the binary and its compiled-in presets too).
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

class Bench final : public Command {
 public:
  void configure(CLI::App& app) override {
    auto* file = app.add_option("file", file_, "scenario JSON file (or a shipped scenario's name)")
                     ->transform(shipped_scenario_path, "", "shipped scenario");
    auto* repeat = app.add_option("--repeat", repeat_, "simulations to time (best is reported)")
                       ->check(CLI::Range(1, 1000));
    auto* sweep = app.add_option(
        "--sweep", sweep_, "time a sweep file's rows instead (no CSV): simulated rows per second");
    // Each option belongs to one of the two forms: one the other form would ignore is refused.
    sweep->excludes(file)->excludes(repeat);
    app.add_option("--jobs", jobs_, "--sweep: scenarios at once (default 0: all cores)")
        ->check(CLI::Range(0, 1024))
        ->needs(sweep);
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    if (!sweep_.empty()) return bench_sweep(io);
    if (file_.empty())
      throw config::InputError("<command line>", "file",
                               "give a scenario file or --sweep SWEEP.json");
    const config::Scenario sc = config::load_scenario_file(file_);
    double best = 1e300;
    predict::Prediction p;
    for (int i = 0; i < repeat_; ++i) {
      p = predict::predict(sc);
      best = std::min(best, p.wall_s);
    }
    const double eps = static_cast<double>(p.step.events) / best;
    const double rss = peak_rss_mib();  // before the engine's own run below
    const double engine = engine_events_per_s(5'000'000, 1000);
    if (json_)
      io.out << nlohmann::ordered_json{{"name", sc.name},         {"wall_s", best},
                                       {"events", p.step.events}, {"kernels", p.step.kernels},
                                       {"events_per_s", eps},     {"engine_events_per_s", engine},
                                       {"peak_rss_mib", rss}}
                    .dump(2)
             << "\n";
    else
      io.out << fmt::format(
          "{}: best of {}: {:.3f} s wall, {} events ({:.2f} M events/s end to end), "
          "{} kernels, peak resident {:.0f} MiB\nengine alone: {:.2f} M events/s (5 M events, "
          "1000 pending)\n",
          sc.name, repeat_, best, p.step.events, eps / 1e6, p.step.kernels, rss, engine / 1e6);
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
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = wall > 0 ? static_cast<double>(simulated) / wall : 0;
    const double rss = peak_rss_mib();
    if (json_)
      io.out << nlohmann::ordered_json{{"name", sweep.name},
                                       {"rows", points.size()},
                                       {"simulated_rows", simulated},
                                       {"wall_s", wall},
                                       {"simulated_rows_per_s", rate},
                                       {"mean_row_wall_s",
                                        simulated ? sim_wall / static_cast<double>(simulated)
                                                  : 0.0},
                                       {"peak_rss_mib", rss}}
                    .dump(2)
             << "\n";
    else
      io.out << fmt::format(
          "{}: {} rows, {} simulated, in {:.1f} s wall: {:.2f} simulated rows/s ({:.0f} s per "
          "1,000); {:.3f} s per simulated row on one thread; peak resident {:.0f} MiB\n",
          sweep.name, points.size(), simulated, wall, rate, rate > 0 ? 1000 / rate : 0.0,
          simulated ? sim_wall / static_cast<double>(simulated) : 0.0, rss);
    return 0;
  }

 private:
  std::string file_, sweep_;
  int repeat_ = 3, jobs_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_bench_command() {
  return std::make_unique<Bench>();
}

}  // namespace moesim::cli
