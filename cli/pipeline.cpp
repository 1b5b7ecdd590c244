// cli/pipeline.cpp: `moesim pipeline`: a pipeline schedule alone with fixed chunk times
// (schedules/step_sim.hpp, simulate_pipeline).
#include "cli/commands.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "reports/text.hpp"
#include "schedules/schedule_kind.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::cli {
namespace {

constexpr std::int64_t kMaxItems = 2'000'000;
constexpr double kMaxStepSeconds = 1e6;  // the engine's int64 picoseconds reach 9.2e6 s
constexpr double kMaxChunkMs = 1e9;      // a chunk time's bound; the step's is kMaxStepSeconds

// The pipeline schedule alone: fixed chunk times through the same engine and schedule
// code as `run`.
class Pipeline final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option("--schedule", schedule_,
                   "1f1b | interleaved-1f1b | zb-h1 | dualpipe | dualpipev")
        ->required();
    app.add_option("--pp", pp_,
                   "pipeline ranks (devices); DualPipe runs two pipelines of pp stages over them, "
                   "DualPipeV "
                   "one of 2 pp stages")
        ->required()
        ->check(CLI::Range(1, 4096));
    app.add_option("--vpp", vpp_, "virtual stages per rank (interleaved)")
        ->check(CLI::Range(1, 256));
    app.add_option("--microbatches", m_, "microbatches per step")
        ->required()
        ->check(CLI::Range(1, 100000));
    check_finite(app.add_option("--fwd", fwd_ms_,
                                "forward time of one microbatch through one rank's layers (split "
                                "over vpp chunks), ms; dualpipe, dualpipev: through one stage's "
                                "chunk (the DualPipe repository's F)")
                     ->required(),
                 0, kMaxChunkMs, true);
    check_finite(app.add_option("--bwd", bwd_ms_, "full backward time, ms (as --fwd)")->required(),
                 0, kMaxChunkMs, true);
    check_finite(app.add_option("--wgrad", wgrad_ms_,
                                "weight-gradient part of --bwd, ms (zb-h1, dualpipe, dualpipev)"),
                 0, kMaxChunkMs);
    check_finite(app.add_option("--fwd-bwd", fwd_bwd_ms_,
                                "dualpipe, dualpipev: a forward and a backward chunk overlapped "
                                "(F&B), ms; default --fwd + --bwd"),
                 0, kMaxChunkMs);
    check_finite(app.add_option("--p2p", p2p_ms_, "transfer time between stages, ms"), 0,
                 kMaxChunkMs);
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    const auto kind = schedules::schedule_names().find(schedule_);
    if (!kind)
      throw config::InputError("<command line>", "--schedule",
                               fmt::format("unknown schedule '{}'; known: {}", schedule_,
                                           schedules::schedule_names().known()));
    const bool dual =
        *kind == schedules::ScheduleKind::dualpipe || *kind == schedules::ScheduleKind::dualpipev;
    if (wgrad_ms_ > bwd_ms_)
      throw config::InputError("<command line>", "--wgrad",
                               "the weight-gradient part exceeds --bwd");
    if (fwd_bwd_ms_ > 0 && !dual)
      throw config::InputError("<command line>", "--fwd-bwd",
                               "only dualpipe and dualpipev overlap chunk pairs");
    if (wgrad_ms_ > 0 && !schedules::splits_backward(*kind))
      throw config::InputError(
          "<command line>", "--wgrad",
          fmt::format("{} runs the backward whole; only zb-h1, dualpipe and dualpipev split off "
                      "the weight gradient",
                      schedule_));
    if (p2p_ms_ > 0 && pp_ == 1)
      throw config::InputError("<command line>", "--p2p",
                               "one pipeline rank has no transfers between stages; needs --pp 2 "
                               "or more");
    if (vpp_ > 1 && dual)
      throw config::InputError(
          "<command line>", "--vpp",
          fmt::format("{} places its own chunks (two a rank); --vpp is interleaved-1f1b's",
                      schedule_));
    // Bounds that keep the command within seconds and a few GB (every stage pass is one
    // simulated kernel with its transfers: about 200,000 a second and 600 bytes each on the
    // build machine), and the step inside the engine's clock (int64 picoseconds).
    const std::int64_t chunks = schedules::layout_chunks_per_rank(*kind, vpp_);
    const std::int64_t items =
        static_cast<std::int64_t>(pp_) * chunks * m_ * (schedules::splits_backward(*kind) ? 3 : 2);
    if (items > kMaxItems)
      throw config::InputError(
          "<command line>", "--microbatches",
          fmt::format("{} ranks x {} chunks x {} microbatches are {} stage passes a step; the "
                      "command simulates up to {} (past the warm-up each microbatch "
                      "repeats the same pattern: fewer give the same bubble)",
                      pp_, chunks, m_, items, kMaxItems));
    const double longest_s = (static_cast<double>(m_) * chunks + 2.0 * pp_ * chunks) *
                             (fwd_ms_ + bwd_ms_ + 2 * p2p_ms_ + fwd_bwd_ms_) * 1e-3;
    if (!(longest_s <= kMaxStepSeconds)) {
      // Named by the largest of the times the step adds up.
      const std::pair<double, const char*> parts[] = {{fwd_ms_, "--fwd"},
                                                      {bwd_ms_, "--bwd"},
                                                      {2 * p2p_ms_, "--p2p"},
                                                      {fwd_bwd_ms_, "--fwd-bwd"}};
      const char* option = std::max_element(std::begin(parts), std::end(parts))->second;
      throw config::InputError(
          "<command line>", option,
          fmt::format("chunk times this long make a step of up to {:.3g} s; the simulation's "
                      "clock covers {:.3g} s",
                      longest_s, kMaxStepSeconds));
    }
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
      io.out << fmt::format(
          "{} pp={} vpp={} microbatches={} ({}): step {:.3f} ms, bubble {:.3f} ms ({:.1f}% "
          "of the step, {:.1f}% over the {:.3f} ms of work of the busiest rank)\n",
          schedule_, pp_, vpp_, m_, reports::counted(static_cast<std::size_t>(r.stages), "stage"),
          r.step_time_s * 1e3, r.bubble_s * 1e3, 100 * r.bubble_s / r.step_time_s,
          100 * r.bubble_s / ideal, ideal * 1e3);
    return 0;
  }

 private:
  std::string schedule_;
  int pp_ = 1, vpp_ = 1, m_ = 1;
  double fwd_ms_ = 0, bwd_ms_ = 0, wgrad_ms_ = 0, p2p_ms_ = 0, fwd_bwd_ms_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_pipeline_command() {
  return std::make_unique<Pipeline>();
}

}  // namespace moesim::cli
