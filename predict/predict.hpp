// predict/predict.hpp: scenario in, prediction out. One library call (step simulation,
// memory, metrics) that `moesim run`, `validate`, `sweep`, `plan`, the corpus fit and the
// Python module (python/module.cpp) share; reports/ only formats its result.
//
//   TFLOPS/GPU   = model FLOPs per step (Megatron accounting) / (step time x GPUs x 1e12)
//   tokens/s/GPU = global batch x sequence length / (step time x GPUs)
//   MFU          = TFLOPS/GPU / dense BF16 peak of the GPU
// Memory per pipeline rank: predict/memory.hpp. Thread safety: predict() reads the
// scenario and builds everything it simulates (engine, topology, comm model) itself, so
// predictions run in parallel threads share nothing mutable.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "config/scenario.hpp"
#include "predict/goodput.hpp"
#include "predict/memory.hpp"
#include "predict/variability.hpp"
#include "schedules/step_sim.hpp"
#include "workload/flops.hpp"

namespace moesim::predict {

// Derived figures of a scenario that need no simulation (`describe` prints them).
struct ScenarioSummary {
  workload::ParamCounts params;
  workload::FlopsPerToken flops;  // per token
  double flops_per_token = 0;
  double flops_per_step = 0;   // per global batch
  double tokens_per_step = 0;  // global batch x sequence length
};

ScenarioSummary summarize(const config::Scenario& sc);

struct Prediction {
  schedules::StepResult step;
  double flops_per_step = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  // What a step processes: global batch x sequence tokens, over the scenario's GPUs.
  double tokens_per_step = 0;
  std::int64_t gpus = 0;
  std::vector<double> rank_memory_gib;             // graph static buffers included
  std::vector<std::int64_t> cuda_graphs_per_rank;  // captured graphs (L x M x 2, or 1 full)
  std::vector<double> graph_static_gib;            // their static buffers at the memory peak
  double peak_memory_gib = 0;
  using MemoryParts = predict::MemoryParts;
  MemoryParts peak_memory_parts;  // the peak rank's memory by part (GiB)
  // The largest rank's allocator reserve (allocated x (1 + fragmentation)) plus what lives
  // beside the allocator: what fits_in_memory compares with the capacity.
  double reserved_memory_gib = 0;
  // Per pipeline rank, PyTorch's counters: max_memory_allocated and max_memory_reserved
  // (allocated x (1 + framework.allocator_fragmentation)), without what lives beside
  // the allocator (MemoryParts::outside_allocator).
  std::vector<double> rank_max_allocated_gib, rank_max_reserved_gib;
  std::vector<MemoryParts> rank_memory_parts;  // per pipeline rank, by part (GiB)
  bool fits_in_memory = true;
  double ep_load =
      1;  // the hottest EP rank's routed tokens over the balanced (workload/routing.hpp)
  // The same before HybridEP's rank budget (framework.moe_expert_rank_capacity_factor):
  // where it exceeds ep_load, the budget drops the difference. Equal without a budget.
  double ep_load_unbudgeted = 1;
  // The step over steps (predict/variability.hpp): step.step_time_s is its mean, the
  // simulated step plus step.breakdown.straggler_wait; these its median and 95th
  // percentile; `spread` the parts.
  double step_time_p50_s = 0, step_time_p95_s = 0;
  StepSpread spread;
  // A long job's training share with interruptions, checkpoints and restarts
  // (predict/goodput.hpp).
  Goodput goodput;
  double wall_s = 0;  // simulation wall time (the only nondeterministic field)
};

// Steady state (issue #16): past the pipeline's warm-up every further microbatch adds the
// same time to a rank's step (one more forward and backward of its chunks), so a step of
// M microbatches is, from shorter runs of M1 < M2 < M3 = 2 M2 - M1 microbatches,
//   T(M) = T(M3) + (M - M3) / (M3 - M2) x (T(M3) - T(M2)),
// and likewise every rank's end, host time, breakdown category, event and kernel count.
// With V the virtual stages (pp x vpp, at least 8), each rounded up to what the schedule
// accepts: M1 = 2 V, M2 = M1 + V; used only where M1 + M2 + M3 <= 3/4 M, where the critical
// rank is the same in the runs and at M, and where the line holds: the slopes over
// (M1, M2) and (M2, M3) differ by at most kSteadyLineTolerance of T(M) over the M - M3
// microbatches left (steady_line_holds); else the full step is simulated. A host-bound
// step whose GPU stalls early (parameter gathers at first use, rank_program_dp.cpp) lets its
// host build a lead that takes far longer than two pipelines to spend (Megatron-Bridge
// 25.09's DeepSeek-V3 FP8 on 256 B200, PP16: slope 0.105 s a microbatch over 32-48, 0.119
// from 48 on). Why 2 V, not
// V: a host that runs ahead of its GPU (no per-layer device-host sync: token dropping,
// pre-sized buffers) builds its lead over the first microbatches, and the idle time's
// split between host-bound and pipeline bubble settles only after about two pipelines'
// worth (Megatron-Bridge 25.09's token-dropping DeepSeek-V3 on 256 B200, PP16: linear
// from 32 microbatches, not 16; 25.11's PP8 VPP4: from 64, not 32).
// Not under StepOptions::trace or full_fidelity. A test holds it within 0.5% of the full
// simulation on every shipped scenario it applies to.
std::optional<std::pair<std::int64_t, std::int64_t>> steady_state_microbatches(
    schedules::ScheduleKind kind, const workload::Parallelism& par);
// M1 and M2 whatever the step's own microbatches (calibrate trace's microbatch window).
std::pair<std::int64_t, std::int64_t> steady_state_pair(schedules::ScheduleKind kind,
                                                        const workload::Parallelism& par);
std::optional<schedules::StepResult> extrapolate(const schedules::StepResult& a,
                                                 const schedules::StepResult& b, std::int64_t m1,
                                                 std::int64_t m2, std::int64_t m);
// The third, checking run's microbatches: as far past M2 as M2 is past M1.
inline std::int64_t steady_state_check_run(std::int64_t m1, std::int64_t m2) {
  return 2 * m2 - m1;
}
// The step's share the extrapolation may drift by, where the line is checked.
inline constexpr double kSteadyLineTolerance = 0.0025;
bool steady_line_holds(const schedules::StepResult& a, const schedules::StepResult& b,
                       const schedules::StepResult& c, std::int64_t m1, std::int64_t m2,
                       std::int64_t m3, std::int64_t m);

// Simulates one step of the scenario and derives the metrics and the memory estimate.
// Throws what the step simulation throws (sim_core::SimulationStuck,
// schedules::NotSimulated); never InputError for a scenario the loader accepted.
Prediction predict(const config::Scenario& sc, const schedules::StepOptions& opt = {});
// The memory fields alone, without simulating the step (a measured peak_memory_gib).
Prediction predict_memory(const config::Scenario& sc);
// The same with the memory estimate and EP load already computed (estimate_memory(sc,
// scenario_ep_load(sc)), as a sweep does to prune before simulating); wall_s is then the
// simulation's alone.
Prediction predict(const config::Scenario& sc, MemoryEstimate memory, double ep_load,
                   const schedules::StepOptions& opt = {});

// The step a scenario file gives with system.variability cleared: the simulation alone
// (`moesim calibrate jitter` fits the delays to what it leaves of measured increases).
double step_without_delays(const std::string& file);

// The measured metric's predicted value.
double predicted_metric(const config::Measured& m, const Prediction& p);

// What one token costs and what a GPU processes a step: u = 1e6 T G / N GPU-microseconds
// per token (T the step, G the GPUs, N the step's tokens) and N / G tokens; 0 without tokens.
// `diff` splits u by contribution (predict/diff.hpp); the reports print both.
double gpu_us_per_token(const Prediction& p);
double tokens_per_gpu_per_step(const Prediction& p);

}  // namespace moesim::predict
