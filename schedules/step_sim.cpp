// schedules/step_sim.cpp: the assembly of one step's simulation (schedules/step_sim.hpp):
// a GPU with its streams, a host thread and its rank program per simulated rank, one
// engine run, the breakdown read back. The parts, each in its own file:
//   kernel_pricing.hpp   a kernel template's device and host seconds under the scenario,
//                        and the DP, optimizer and pipeline-transfer costs
//   step_state.hpp       the engine, its tables, labels and the pairing of collectives
//   rank_program.hpp     one rank's host program: its work items as launches
//   step_breakdown.hpp   the breakdown observer and the bubble split
#include "schedules/step_sim.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "schedules/rank_program.hpp"
#include "schedules/step_breakdown.hpp"

namespace moesim::schedules {
namespace {

using detail::kDpGatherStream;
using detail::kTrackNames;
using detail::kTracks;
using detail::make_rank_program;
using detail::split_bubble;
using detail::StepObserver;
using detail::StepState;
using sim_core::Time;
using workload::Module;

StepResult run_ranks(const StepInput& in, const StepOptions& opt, const hw_models::CommModel& comm,
                     const FixedChunks* fixed) {
  StepState sim(in, opt, comm, fixed);
  const int pp = sim.full() ? static_cast<int>(in.gpus) : static_cast<int>(in.parallelism.pp);

  std::vector<std::unique_ptr<sim_core::Gpu>> gpus;
  std::vector<std::unique_ptr<sim_core::HostProgram>> programs;
  std::vector<std::unique_ptr<sim_core::HostThread>> hosts;
  // The descending-stage streams and the pair stream only where the schedule has them, the
  // offload stream where layers are offloaded, the outer DP stream under HSDP.
  const int tracks = sim.pair_stream() || in.framework.offload_layers > 0 || sim.pricing().hsdp()
                         ? static_cast<int>(kTracks)
                         : static_cast<int>(kDpGatherStream) + 1;
  StepObserver obs(sim, pp, opt.trace, sim.pair_stream());
  for (int r = 0; r < pp; ++r) {
    gpus.push_back(std::make_unique<sim_core::Gpu>(sim.engine(), sim.events(), sim.rendezvous(), r,
                                                   static_cast<int>(in.system.gpu.sm_count.value),
                                                   "rank" + std::to_string(r)));
    for (int t = 0; t < tracks; ++t) gpus.back()->add_stream(kTrackNames[t]);
    gpus.back()->set_observer(&obs);
    gpus.back()->set_label_names([&sim](std::uint32_t l) { return sim.labels()[l]; });
    programs.push_back(make_rank_program(sim, *gpus.back(), r));
    hosts.push_back(std::make_unique<sim_core::HostThread>(
        sim.engine(), sim.events(), r, "rank" + std::to_string(r) + "/host", *programs.back()));
    hosts.back()->set_observer(&obs);
    hosts.back()->start(Time::zero());
  }
  const auto stats = sim.engine().run();
  obs.finish();

  StepResult res;
  res.events = stats.events;
  res.kernels = obs.kernels;
  for (int r = 0; r < pp; ++r) {
    res.host_busy_s.push_back(hosts[static_cast<std::size_t>(r)]->busy().seconds());
  }
  // A rank ends with its last kernel; the step with the last rank.
  res.rank_end_s.assign(static_cast<std::size_t>(pp), 0.0);
  res.simulated_ranks = pp;
  res.step_time_s = stats.end.seconds();
  res.critical_rank = 0;
  double best = -1;
  for (int r = 0; r < pp; ++r) {
    const Breakdown b = obs.breakdown(r);
    const double t = b.compute + b.exposed_comm + b.pipeline_bubble + b.host_bound_idle + b.other;
    res.rank_end_s[static_cast<std::size_t>(r)] = t;
    if (t > best) best = t, res.critical_rank = r;
  }
  std::array<double, 3> pass_work{};
  res.breakdown = obs.breakdown(res.critical_rank, &pass_work);
  // The tail after its last compute-stream kernel (rounding can make it -1e-12).
  res.breakdown.other = std::max(0.0, res.breakdown.other + res.step_time_s - best);
  if (!fixed) split_bubble(in, sim.pricing().pp_seconds(), pass_work, res.breakdown);
  res.labels = sim.labels();
  res.label_kinds = sim.label_kinds();
  for (int t = 0; t < tracks; ++t) res.streams.emplace_back(kTrackNames[t]);
  res.trace = std::move(obs.spans);
  res.host_waits = std::move(obs.waits);
  res.contexts = sim.take_contexts();
  return res;
}

}  // namespace

// Bounds that keep a run within seconds to minutes and memory within a few GiB on a
// small machine; beyond them the step is refused with the reason rather than attempted.
constexpr std::int64_t kMaxWorkItemsPerRank = 200'000;
constexpr std::int64_t kMaxFullFidelityRanks = 16'384;

StepResult simulate_step(const StepInput& in, const StepOptions& opt,
                         const hw_models::CommModel& comm) {
  const auto& p = in.parallelism;
  // Forward and backward per microbatch and chunk; at most three passes with the
  // zero-bubble split (DualPipe's two chunks each see half the microbatches, DualPipeV's
  // two all of them).
  const bool split = splits_backward(in.schedule);
  const std::int64_t chunks = layout_chunks_per_rank(in.schedule, static_cast<int>(p.vpp));
  const std::int64_t items = (split ? 3 : 2) * p.num_microbatches * chunks;
  if (items > kMaxWorkItemsPerRank)
    throw NotSimulated(
        "each pipeline rank would run " + std::to_string(items) +
        " forward and backward chunks per step (global_batch_size / (micro_batch_size x dp) "
        "= " +
        std::to_string(p.num_microbatches) + " microbatches); moesim simulates up to " +
        std::to_string(kMaxWorkItemsPerRank));
  const std::int64_t layers = in.model.num_layers + in.training.mtp_layers;
  if (const double passes = layer_passes(in.schedule, p.num_microbatches, layers, p.pp * p.vpp);
      passes > kMaxLayerPasses)
    throw NotSimulated(std::to_string(p.num_microbatches) + " microbatches x " +
                       std::to_string(layers) +
                       " layers = " + std::to_string(static_cast<std::int64_t>(passes)) +
                       " layer passes per step; moesim simulates up to " +
                       std::to_string(static_cast<std::int64_t>(kMaxLayerPasses)));
  if (opt.full_fidelity && in.gpus > kMaxFullFidelityRanks)
    throw NotSimulated("--fidelity full simulates every one of the " + std::to_string(in.gpus) +
                       " ranks; up to " + std::to_string(kMaxFullFidelityRanks) +
                       " are supported (the representative mode has no such limit)");
  return run_ranks(in, opt, comm, nullptr);
}

PipelineResult simulate_pipeline(ScheduleKind kind, int pp, int vpp, int microbatches,
                                 const FixedChunks& c) {
  // A minimal scenario whose stages hold one layer each; every layer is one kernel of the
  // given time, hosts are free, and only pipeline transfers communicate.
  if (c.wgrad_s > c.bwd_s)
    throw std::invalid_argument("the weight-gradient part exceeds the backward");
  const int ranks = pp;
  const int chunks_per_layout_rank = layout_chunks_per_rank(kind, vpp);
  const int stages = ranks * chunks_per_layout_rank;
  hw_models::SystemSpec sys;
  sys.gpu.sm_count.value = 132;
  sys.gpu.hbm_TBps.value = 1;
  sys.efficiency.hbm.value = 1;
  workload::ModelConfig model;
  model.num_layers = stages;
  model.moe_layer.assign(static_cast<std::size_t>(model.num_layers), false);
  workload::Training tr;
  workload::Parallelism par;
  par.pp = ranks;
  par.vpp = chunks_per_layout_rank;
  par.num_microbatches = microbatches;
  workload::Framework fw;
  fw.distributed_optimizer = false;
  fw.batch_p2p_sync = false;  // the closed forms' hosts never wait on a transfer
  const workload::StackSwitches stack;
  const PipelineLayout layout =
      PipelineLayout::even(model.num_layers, 0, ranks, chunks_per_layout_rank);
  const StepInput in{sys, ranks, ranks, model, tr, par, fw, stack, layout, kind, 0};
  const hw_models::AlphaBetaComm comm(sys);
  const StepResult r = run_ranks(in, {}, comm, &c);
  PipelineResult out;
  out.step_time_s = r.step_time_s;
  out.stages = stages;
  // The busiest rank's work, item by item.
  double busiest = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    double work = 0;
    const auto items = pipeline_order(kind, ranks, chunks_per_layout_rank, rank, microbatches);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].overlap_next) {
        work += c.pair_s();
        ++i;
      } else {
        work += c.seconds(items[i].pass);
      }
    }
    busiest = std::max(busiest, work);
  }
  // The engine's clock counts whole picoseconds: a step without idle time can end a rounding
  // below the work summed in seconds, which is no bubble, not a negative one.
  out.bubble_s = std::max(0.0, r.step_time_s - busiest);
  out.events = r.events;
  return out;
}

std::string breakdown_module_name(std::size_t slot) {
  return slot < workload::kModuleCount
             ? std::string(workload::module_names().name(static_cast<Module>(slot)))
             : std::string("outside_layers");
}

const sim_core::NameTable<CommKind>& comm_kind_names() {
  static constexpr std::array<sim_core::NameEntry<CommKind>, kCommKinds> kEntries{{
      {CommKind::ep, "ep", "EP dispatch and combine, and their counts exchange"},
      {CommKind::tp, "tp", "tensor-parallel collectives"},
      {CommKind::pp, "pp", "pipeline transfers"},
      {CommKind::dp, "dp", "data-parallel gradient and parameter collectives"},
      {CommKind::offload, "offload", "layer offloading's copies to and from host memory"},
  }};
  static constexpr sim_core::NameTable<CommKind> kTable{kEntries};
  return kTable;
}

}  // namespace moesim::schedules
