#include "predict/predict.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "config/load.hpp"
#include "predict/step_input.hpp"
#include "schedules/stage_params.hpp"

namespace moesim::predict {

ScenarioSummary summarize(const config::Scenario& sc) {
  ScenarioSummary s;
  const auto vocab = sc.padded_vocab();
  s.params = workload::count_parameters(sc.model, sc.training.mtp_layers, vocab);
  s.flops = workload::megatron_flops_per_token(
      sc.model, {sc.training.seq_length, sc.training.mtp_layers, vocab});
  // LoRA (training.lora): Megatron-Bridge's LoRA accounting (src/megatron/bridge/training/
  // utils/flop_utils.py 358-396 at v0.5.0): the frozen GEMMs at forward and input gradient
  // only, two thirds of their count; the adapters not counted. Core attention stays whole,
  // as Megatron counts it (causal, s/2 keys a query; Bridge's LoRA formula takes s, which
  // its SQuAD packs' short sub-sequences make small either way).
  if (sc.training.lora)
    for (double* term : {&s.flops.dense_mlp, &s.flops.moe_mlp, &s.flops.mtp, &s.flops.attn_linear,
                         &s.flops.logits, &s.flops.mamba, &s.flops.linear_attn})
      *term *= 2.0 / 3;
  s.flops_per_token = s.flops.total();
  s.tokens_per_step = static_cast<double>(sc.training.global_batch_size) *
                      static_cast<double>(sc.training.seq_length);
  s.flops_per_step = s.flops_per_token * s.tokens_per_step;
  return s;
}

std::pair<std::int64_t, std::int64_t> steady_state_pair(schedules::ScheduleKind kind,
                                                        const workload::Parallelism& par) {
  using schedules::ScheduleKind;
  const std::int64_t pp = par.pp;
  // The microbatch counts each schedule accepts: interleaved 1F1B in multiples of pp,
  // DualPipe and DualPipeV in multiples of 2 pp; 1F1B and ZB-H1 any.
  const std::int64_t unit = kind == ScheduleKind::interleaved_1f1b ? pp
                            : kind == ScheduleKind::dualpipe || kind == ScheduleKind::dualpipev
                                ? 2 * pp
                                : 1;
  // Past warm-up and the host's transient: twice the pipeline's virtual stages (at least
  // 8 of them), then one more pipeline's worth.
  const std::int64_t want = std::max<std::int64_t>(8, pp * std::max<std::int64_t>(1, par.vpp));
  const auto round_up = [unit](std::int64_t x) { return (x + unit - 1) / unit * unit; };
  const std::int64_t m1 = round_up(2 * want);
  return {m1, m1 + round_up(want)};
}

std::optional<std::pair<std::int64_t, std::int64_t>> steady_state_microbatches(
    schedules::ScheduleKind kind, const workload::Parallelism& par) {
  const auto [m1, m2] = steady_state_pair(kind, par);
  // The three runs (the third checks the line: predict below) save at least a quarter.
  if (4 * (m1 + m2 + steady_state_check_run(m1, m2)) > 3 * par.num_microbatches)
    return std::nullopt;
  return std::make_pair(m1, m2);
}

bool steady_line_holds(const schedules::StepResult& a, const schedules::StepResult& b,
                       const schedules::StepResult& c, std::int64_t m1, std::int64_t m2,
                       std::int64_t m3, std::int64_t m) {
  const double s_ab = (b.step_time_s - a.step_time_s) / static_cast<double>(m2 - m1);
  const double s_bc = (c.step_time_s - b.step_time_s) / static_cast<double>(m3 - m2);
  const double at_m = c.step_time_s + s_bc * static_cast<double>(m - m3);
  return static_cast<double>(m - m3) * std::abs(s_bc - s_ab) <= kSteadyLineTolerance * at_m;
}

std::optional<schedules::StepResult> extrapolate(const schedules::StepResult& a,
                                                 const schedules::StepResult& b, std::int64_t m1,
                                                 std::int64_t m2, std::int64_t m) {
  const double k = static_cast<double>(m - m2) / static_cast<double>(m2 - m1);
  const auto line = [k](double x1, double x2) { return x2 + k * (x2 - x1); };
  if (a.critical_rank != b.critical_rank || a.rank_end_s.size() != b.rank_end_s.size() ||
      a.host_busy_s.size() != b.host_busy_s.size())
    return std::nullopt;
  schedules::StepResult x = b;
  int critical = 0;
  for (std::size_t r = 0; r < x.rank_end_s.size(); ++r) {
    x.rank_end_s[r] = line(a.rank_end_s[r], b.rank_end_s[r]);
    if (x.rank_end_s[r] > x.rank_end_s[static_cast<std::size_t>(critical)])
      critical = static_cast<int>(r);
  }
  // The breakdown is the critical rank's: the same rank in both runs and at m, or no line.
  if (critical != b.critical_rank) return std::nullopt;
  for (std::size_t r = 0; r < x.host_busy_s.size(); ++r)
    x.host_busy_s[r] = line(a.host_busy_s[r], b.host_busy_s[r]);
  x.step_time_s = line(a.step_time_s, b.step_time_s);
  const std::vector<double> d1 = a.breakdown.flat(), d2 = b.breakdown.flat();
  std::vector<double> d(d1.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = line(d1[i], d2[i]);
  x.breakdown.assign_flat(d);
  // The bubble's split as simulate_step makes it: the schedule's own within the bubble.
  auto& bd = x.breakdown;
  bd.schedule_bubble = std::clamp(bd.schedule_bubble, 0.0, std::max(0.0, bd.pipeline_bubble));
  bd.stage_imbalance = bd.pipeline_bubble - bd.schedule_bubble;
  x.events = static_cast<std::uint64_t>(
      std::llround(line(static_cast<double>(a.events), static_cast<double>(b.events))));
  x.kernels = static_cast<std::uint64_t>(
      std::llround(line(static_cast<double>(a.kernels), static_cast<double>(b.kernels))));
  return x;
}

Prediction predict(const config::Scenario& sc, const schedules::StepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const double ep_load = scenario_ep_load(sc);
  Prediction p = predict(sc, estimate_memory(sc, ep_load), ep_load, opt);
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

namespace {
void set_memory(Prediction& p, const config::Scenario& sc, MemoryEstimate mem) {
  p.rank_memory_gib = std::move(mem.rank_memory_gib);
  p.cuda_graphs_per_rank = std::move(mem.cuda_graphs_per_rank);
  p.graph_static_gib = std::move(mem.graph_static_gib);
  p.peak_memory_gib = mem.peak_memory_gib;
  p.peak_memory_parts = mem.peak_parts;
  p.reserved_memory_gib = mem.reserved_memory_gib;
  for (std::size_t r = 0; r < mem.rank_parts.size(); ++r) {
    p.rank_max_allocated_gib.push_back(
        mem.counter_gib(r, false, sc.framework.allocator_fragmentation));
    p.rank_max_reserved_gib.push_back(
        mem.counter_gib(r, true, sc.framework.allocator_fragmentation));
  }
  p.rank_memory_parts = std::move(mem.rank_parts);
  p.fits_in_memory = mem.fits_in_memory;
}
}  // namespace

Prediction predict_memory(const config::Scenario& sc) {
  const auto t0 = std::chrono::steady_clock::now();
  Prediction p;
  p.ep_load = scenario_ep_load(sc);
  set_memory(p, sc, estimate_memory(sc, p.ep_load));
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

Prediction predict(const config::Scenario& sc, MemoryEstimate mem, double ep_load,
                   const schedules::StepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const hw_models::FlowComm comm = detail::flow_comm(sc, opt.flow_cache);
  const auto input = [&](const workload::Parallelism& par) {
    return detail::step_input(sc, par, ep_load);
  };
  Prediction p;
  p.ep_load = ep_load;
  p.ep_load_unbudgeted =
      sc.framework.moe_expert_rank_capacity_factor ? sc.ep_load_unbudgeted() : ep_load;
  const auto reduced = opt.steady_state && !opt.trace && !opt.full_fidelity
                           ? steady_state_microbatches(sc.pipeline_schedule, sc.parallelism)
                           : std::nullopt;
  if (reduced) {
    const auto short_run = [&](std::int64_t m) {
      workload::Parallelism par = sc.parallelism;
      par.num_microbatches = m;
      return schedules::simulate_step(input(par), opt, comm);
    };
    const std::int64_t m1 = reduced->first, m2 = reduced->second,
                       m3 = steady_state_check_run(m1, m2), m = sc.parallelism.num_microbatches;
    const schedules::StepResult a = short_run(m1), b = short_run(m2), c = short_run(m3);
    std::optional<schedules::StepResult> x;
    if (steady_line_holds(a, b, c, m1, m2, m3, m)) x = extrapolate(b, c, m2, m3, m);
    p.step = x ? *x : schedules::simulate_step(input(sc.parallelism), opt, comm);
  } else {
    p.step = schedules::simulate_step(input(sc.parallelism), opt, comm);
  }
  // The slowest process and replica (predict/variability.hpp): a per-step wait the
  // simulated ranks do not see.
  p.spread = step_spread(sc, p.step);
  const double simulated = p.step.step_time_s;
  p.step.breakdown.straggler_wait = p.spread.wait_s;
  p.step.step_time_s = simulated + p.spread.wait_s;
  p.step_time_p50_s = simulated + p.spread.p50_wait_s;
  p.step_time_p95_s = simulated + p.spread.p95_wait_s;
  const ScenarioSummary s = summarize(sc);
  p.flops_per_step = s.flops_per_step;
  const double gpus = static_cast<double>(sc.gpus);
  p.tflops_per_gpu = s.flops_per_step / (p.step.step_time_s * gpus * 1e12);
  p.tokens_per_s_per_gpu = s.tokens_per_step / (p.step.step_time_s * gpus);
  p.tokens_per_step = s.tokens_per_step;
  p.gpus = sc.gpus;
  p.mfu = p.tflops_per_gpu / sc.system.gpu.peak_tflops(hw_models::Dtype::bf16);
  // A LoRA checkpoint holds the adapters only (Megatron-Bridge v0.5.1
  // src/megatron/bridge/training/checkpointing.py:979-980,
  // apply_peft_adapter_filter_to_state_dict).
  const double saved =
      sc.training.lora ? schedules::lora_parameters(sc.model, sc.parallelism, *sc.training.lora) *
                             static_cast<double>(sc.parallelism.tp) *
                             static_cast<double>(sc.model.num_layers + sc.training.mtp_layers)
                       : s.params.total;
  p.goodput = goodput(sc, saved, p.step.step_time_s, p.tokens_per_s_per_gpu * gpus);
  set_memory(p, sc, std::move(mem));
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

double gpu_us_per_token(const Prediction& p) {
  return p.tokens_per_step > 0
             ? 1e6 * p.step.step_time_s * static_cast<double>(p.gpus) / p.tokens_per_step
             : 0.0;
}
double tokens_per_gpu_per_step(const Prediction& p) {
  return p.gpus > 0 ? p.tokens_per_step / static_cast<double>(p.gpus) : 0.0;
}

double predicted_metric(const config::Measured& m, const Prediction& p) {
  switch (m.metric) {
    case config::MeasuredMetric::tflops_per_gpu:
      return p.tflops_per_gpu;
    case config::MeasuredMetric::step_time_s:
      return p.step.step_time_s;
    case config::MeasuredMetric::tokens_per_s_per_gpu:
      return p.tokens_per_s_per_gpu;
    case config::MeasuredMetric::peak_memory_gib: {
      // The logging rank's counter, or the largest over the pipeline ranks.
      const auto& v = m.memory_counter == config::MemoryCounter::max_reserved
                          ? p.rank_max_reserved_gib
                          : p.rank_max_allocated_gib;
      if (v.empty()) return 0;
      return m.pp_rank ? v.at(static_cast<std::size_t>(*m.pp_rank))
                       : *std::max_element(v.begin(), v.end());
    }
  }
  return 0;
}

double step_without_delays(const std::string& file) {
  config::Scenario sc = config::load_scenario_file(file);
  sc.system.variability = {};
  return predict(sc).step.step_time_s;
}

}  // namespace moesim::predict
