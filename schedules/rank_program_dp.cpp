// schedules/rank_program_dp.cpp: the traffic a rank's host program launches outside its
// layers' kernels (schedules/rank_program.hpp): the distributed optimizer's parameter
// all-gathers (ahead of the first forward, at first use, or beside the optimizer step),
// the gradient reductions (per bucket, or per FSDP unit with its gathers), FP8 delayed
// scaling's amax all-reduce, and the step's end: EPLB's replica gradients, the gradient
// norm and clipping, the loss all-reduce and the optimizer step.
#include "schedules/rank_program_detail.hpp"

#include <algorithm>
#include <utility>

namespace moesim::schedules::detail {

// A data-parallel collective on `stream` over the dense DP and expert-DP groups (their
// inner groups across optimizer instances): parameters `sp` all-gathered (`gather`) or their
// gradients reduced, after `after`.
EventId RankProgram::dp_collective(int stream, const char* name, const StageParams& sp, bool gather,
                                   EventId after) {
  return dp_kernel(stream, name, gather ? price_.gather_seconds(sp) : price_.dp_seconds(sp),
                   price_.dp_loads(sp, gather), after,
                   sim_.collective(kDpComm, dp_group_, dp_seq_++, dp_members_));
}

// HSDP's collective across optimizer instances over the outer group (KernelPricing::
// outer_seconds), on `stream` after `after`.
EventId RankProgram::outer_collective(int stream, const char* name, const StageParams& sp,
                                      bool gather, EventId after) {
  return dp_kernel(stream, name, price_.outer_seconds(sp, gather), price_.outer_loads(sp, gather),
                   after, sim_.collective(kDpComm, outer_group_, outer_seq_++, outer_members_));
}

EventId RankProgram::dp_kernel(int stream, const char* name, double seconds, const PortLoads& loads,
                               EventId after, sim_core::RendezvousId meet) {
  Kernel k = kernel(sim_.label(name), kDpComm, seconds, -1);
  k.port_load = loads;
  k.waits[0] = after;
  k.record = sim_.event(kDpComm);
  k.rendezvous = meet;
  launch(stream, k, op_cost());
  stream_last_[static_cast<std::size_t>(stream)] = k.record;  // a stream runs in order
  return k.record;
}

// Distributed optimizer: the buckets' parameter all-gathers, in forward order, ahead
// of the first forward (schedules/dp_plan.hpp). Without --overlap-param-gather the
// first forward waits for all of them. With --overlap-param-gather-with-optimizer-step
// chunk 0's ran beside the last step's optimizer (step_end): the steady state of the
// step that ends this one. Unaligned (framework.align_param_gather off), none runs
// ahead: the first forward dispatches each bucket's when it reaches it (before_layer).
void RankProgram::step_start() {
  const auto& fw = sim_.in().framework;
  if (!price_.dp_traffic() || !fw.distributed_optimizer || sim_.in().parallelism.fsdp) return;
  lazy_gather_ = fw.overlap_param_gather && !fw.align_param_gather;
  EventId last = kNoEvent;
  for (int c = 0; c < static_cast<int>(gather_.size()); ++c) {
    const DpPlan& plan = sim_.dp_plan(rank_, c);
    auto& g = gather_[static_cast<std::size_t>(c)];
    g.assign(plan.bucket.size(), kNoEvent);
    if (c == 0 && fw.overlap_param_gather_with_optimizer_step) continue;
    if (lazy_gather_) continue;
    for (std::size_t k = 0; k < plan.bucket.size(); ++k)
      if (plan.bucket[k].any())
        last = g[k] =
            dp_collective(kDpGatherStream, "dp.param_all_gather", plan.bucket[k], true, kNoEvent);
  }
  if (fw.overlap_param_gather) return;
  for (auto& g : gather_) std::fill(g.begin(), g.end(), kNoEvent);
  for (auto& g : gather_)
    if (!g.empty()) g.front() = last;
}

// Without --overlap-grad-reduce the buckets are reduced after the last backward; then
// the optimizer step over this rank's shard.
void RankProgram::step_end() {
  if (sim_.fixed()) return;
  const auto& fw = sim_.in().framework;
  if (price_.dp_traffic() && !fw.overlap_grad_reduce && !sim_.in().parallelism.fsdp)
    for (int c = 0; c < static_cast<int>(gather_.size()); ++c) {
      const DpPlan& plan = sim_.dp_plan(rank_, c);
      for (std::size_t k = plan.bucket.size(); k-- > 0;)
        if (plan.bucket[k].any())
          last_dp_ = dp_collective(kDpStream, reduce_name(), plan.bucket[k], false,
                                   wgrad_done_[static_cast<std::size_t>(c)]);
    }
  const bool muon = fw.optimizer == workload::OptimizerKind::muon;
  const int chunks = static_cast<int>(gather_.size());
  // The parameters of chunks [from, to) and, under Muon, their Newton-Schulz FLOPs.
  const auto params = [&](int from, int to) {
    std::pair<StageParams, StageParams> p;
    for (int c = from; c < to; ++c) {
      p.first += sim_.stage_params(rank_, c);
      if (muon) p.second += sim_.muon_flops(rank_, c);
    }
    return p;
  };
  const auto [all, ns] = params(0, chunks);
  // EPLB: the copies' gradients summed before the step, after the last backward (on the
  // compute stream: the optimizer needs them and nothing else is left to overlap).
  if (price_.eplb_replicas() && all.expert > 0) {
    Kernel r = kernel(sim_.label("eplb.replica_grad_all_reduce"), kDpComm,
                      price_.replica_grad_seconds(all), -1);
    r.port_load = price_.replica_grad_loads(all);
    r.waits[0] = last_dp_;
    // Every rank of the EP group holds copies: with all ranks simulated they meet here.
    r.rendezvous = sim_.collective(kEpComm, ep_group_, ep_seq_++, ep_members_);
    launch(kComputeStream, r, op_cost());
  }
  // The gradient norm over the reduced shard, its all-reduce over every GPU, clipping;
  // the last stage's loss all-reduce for logging (header of kernel_pricing.hpp). All on
  // the compute stream: the optimizer needs the norm.
  EventId grads_ready = last_dp_;
  if (workload::loss_scaled(sim_.in().training.precision)) {
    // FP16: unscale and check the main gradients, all-reduce the found-inf flag, and the
    // host reads it before going on (header of kernel_pricing.hpp).
    Kernel u = kernel(sim_.label("optimizer.unscale"), kCompute, price_.unscale_seconds(all));
    u.waits[0] = last_dp_;
    launch(kComputeStream, u, launch_cost());
    Kernel inf = kernel(sim_.label("optimizer.found_inf_all_reduce"), kDpComm,
                        price_.world_reduce_seconds(), -1);
    inf.record = sim_.event(kDpComm);
    launch(kComputeStream, inf, op_cost());
    wait(inf.record);
    grads_ready = kNoEvent;
  }
  Kernel norm = kernel(sim_.label("optimizer.grad_norm"), kCompute, price_.grad_norm_seconds(all));
  norm.waits[0] = grads_ready;
  launch(kComputeStream, norm, launch_cost());
  launch(kComputeStream,
         kernel(sim_.label("optimizer.grad_norm_all_reduce"), kDpComm,
                price_.world_reduce_seconds(), -1),
         op_cost());
  launch(kComputeStream,
         kernel(sim_.label("optimizer.clip_grad"), kCompute, price_.clip_seconds(all)),
         launch_cost());
  if (holds_loss())
    launch(kComputeStream,
           kernel(sim_.label("loss.all_reduce"), kDpComm, price_.loss_reduce_seconds(), -1),
           op_cost());
  // The optimizer step over parameters `sp` (Newton-Schulz FLOPs `f`); its completion.
  const auto step = [&](const StageParams& sp, const StageParams& f) {
    Kernel k = kernel(sim_.label(muon ? "optimizer.muon" : "optimizer.adam"), kCompute,
                      price_.optimizer_seconds(sp, f));
    k.record = sim_.event(kCompute);
    launch(kComputeStream, k, launch_cost());
    return k.record;
  };
  if (fw.overlap_param_gather_with_optimizer_step && price_.dp_traffic()) {
    // Megatron chains one distributed optimizer per chunk; after chunk 0's step it
    // dispatches chunk 0's all-gather (ChainedOptimizer.step_with_ready_grads,
    // start_param_sync(force_dispatch=True)), which runs beside the other chunks' steps
    // and, in the next step, gates chunk 0's first forward (step_start skips it).
    const auto [first, first_ns] = params(0, 1);
    const EventId first_done = step(first, first_ns);
    for (const StageParams& b : sim_.dp_plan(rank_, 0).bucket)
      if (b.any()) dp_collective(kDpGatherStream, "dp.param_all_gather", b, true, first_done);
    const auto [rest, rest_ns] = params(1, chunks);
    step(rest, rest_ns);
    return;
  }
  const EventId done = step(all, ns);
  // Layer-wise Muon without the distributed optimizer: every rank updated the matrices it
  // owns, and all-gathers the others' after the step (not overlapped: Megatron-Core
  // layer_wise_optimizer.py; the Kimi-K2 recipe).
  if (muon && !fw.distributed_optimizer && price_.dp_traffic() && !sim_.in().parallelism.fsdp)
    dp_collective(kDpStream, "dp.param_all_gather", all, true, done);
}

// Whether one of this rank's chunks is the pp_layout's last stage (the loss).
bool RankProgram::holds_loss() const {
  const PipelineShape& shape = sim_.shape();
  for (int c = 0; c < static_cast<int>(gather_.size()); ++c)
    if (shape.place(rank_, c).layout_stage == shape.layout_stages() - 1) return true;
  return false;
}

const char* RankProgram::reduce_name() const {
  return sim_.in().parallelism.fsdp ? "fsdp.grad_reduce_scatter"
         : price_.reduce_scatters() ? "dp.grad_reduce_scatter"
                                    : "dp.grad_all_reduce";
}

// Before stage item k's kernels: the parameters it needs. FSDP gathers the unit (and
// prefetches the next one in the pass's order) in every pass but the weight-gradient
// one; the distributed optimizer's first forward waits for the item's bucket. HSDP with
// an optim outer sharding first gathers the unit's inner shard across the instances in
// micro-batch 0, forward and backward alike: Megatron-FSDP counts the micro-batch only
// after the root backward (megatron_fsdp.py 480-490, 884 at cd4afffa), and the inner
// gather's stream waits for it (param_and_grad_buffer.py 4533-4555).
void RankProgram::before_layer(Lane& l, int k) {
  if (!price_.dp_traffic()) return;
  const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
  const auto c = static_cast<std::size_t>(it.chunk);
  if (!sim_.in().parallelism.fsdp) {
    if (!it.forward() || first_fwd_[c] != l.item || gather_[c].empty()) return;
    if (lazy_gather_) gather_at_first_use(it.chunk, k, l.first ? l.gate : lane_done(l));
    l.layer_gate = gather_[c][static_cast<std::size_t>(k)];
    if (l.layer_gate != kNoEvent && price_.mxfp8_requantizes()) requantize(l, it.chunk, k);
    return;
  }
  if (it.pass == Pass::backward_weight) return;
  const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
  if (l.unit_gather.empty()) l.unit_gather.assign(plan.item.size(), kNoEvent);
  const int next = it.forward() ? k + 1 : k - 1;
  for (int u : {k, next}) {
    if (u < 0 || u >= static_cast<int>(plan.item.size())) continue;
    EventId& e = l.unit_gather[static_cast<std::size_t>(u)];
    if (e != kNoEvent) continue;
    const StageParams& unit = plan.item[static_cast<std::size_t>(u)];
    const EventId outer =
        price_.outer_gathers() && it.microbatch == 0
            ? outer_collective(kDpGatherStream, "hsdp.outer_param_all_gather", unit, true, kNoEvent)
            : kNoEvent;
    e = dp_collective(kDpGatherStream, "fsdp.param_all_gather", unit, true, outer);
  }
  l.layer_gate = l.unit_gather[static_cast<std::size_t>(k)];
}

// MXFP8 weights re-quantized from the gather that gates stage item k (KernelPricing::
// requant_seconds): bucket k's, or without --overlap-param-gather the chunk's every bucket,
// gathered before the first forward. On the compute stream after the gather, before the
// item's kernels, eager; two host calls (the copies' dispatch and the zero). Under
// --overlap-param-gather-with-optimizer-step chunk 0's gather runs beside the optimizer
// step and its pass is not priced (Megatron-Bridge turns that overlap off for MXFP8:
// scripts/performance/utils/overrides.py:526-532 at v0.5.0).
void RankProgram::requantize(Lane& l, int chunk, int k) {
  const DpPlan& plan = sim_.dp_plan(rank_, chunk);
  StageParams sp;
  if (sim_.in().framework.overlap_param_gather)
    sp = plan.bucket[static_cast<std::size_t>(k)];
  else
    for (const auto& b : plan.bucket) sp += b;
  Kernel q = kernel(requant_label_, kCompute, price_.requant_seconds(sp));
  q.waits[0] = l.first ? l.gate : l.cross;
  q.waits[1] = l.layer_gate;
  l.first = false;
  l.cross = l.layer_gate = kNoEvent;
  l.last = buf_.size();
  l.in_graph = false;
  launch(l.stream, q, op_cost() * 2);
}

// Unaligned parameter gathers (Megatron-Core DDP's forward pre-hook, finish_param_sync in
// param_and_grad_buffer.py): the first module of a bucket not yet gathered dispatches
// its all-gather and waits on it, then dispatches the next bucket's (in forward order)
// behind it. A chunk that is one bucket (every chunk but the first pipeline rank's
// first, dp_plan.hpp) therefore waits for its whole gather at its first forward. Like
// every NCCL collective PyTorch launches, the gather's stream first waits for the compute
// stream as it stands (`compute`), in eager mode and in a captured graph alike.
void RankProgram::gather_at_first_use(int chunk, int k, EventId compute) {
  const DpPlan& plan = sim_.dp_plan(rank_, chunk);
  auto& g = gather_[static_cast<std::size_t>(chunk)];
  const auto has = [&](std::size_t b) { return plan.bucket[b].any(); };
  const auto dispatch = [&](std::size_t b) {
    if (g[b] == kNoEvent && has(b))
      g[b] = dp_collective(kDpGatherStream, "dp.param_all_gather", plan.bucket[b], true, compute);
  };
  const auto b = static_cast<std::size_t>(k);
  if (!has(b) || g[b] != kNoEvent) return;
  dispatch(b);
  for (std::size_t n = b + 1; n < plan.bucket.size(); ++n)
    if (has(n)) {
      dispatch(n);
      break;
    }
}

// After stage item k's weight gradients: FSDP reduce-scatters the unit's every time;
// DDP reduces the buckets that close at k in the chunk's last backward. HSDP then reduces
// the unit's shard across the optimizer instances after the last micro-batch's inner
// reduce-scatter, on a stream of its own that waits for it (megatron_fsdp.py 765-772,
// param_and_grad_buffer.py 4127-4209 at cd4afffa), so the next units' inner reductions
// run beside it.
void RankProgram::after_layer(Lane& l, int k) {
  if (!price_.dp_traffic()) return;
  const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
  if (!it.weights()) return;
  const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
  const auto u = static_cast<std::size_t>(k);
  const EventId done = l.first ? l.gate : lane_done(l);
  if (sim_.in().parallelism.fsdp) {
    last_dp_ = dp_collective(kDpStream, reduce_name(), plan.item[u], false, done);
    if (price_.hsdp() && last_bwd_[static_cast<std::size_t>(it.chunk)] == l.item)
      last_dp_ = outer_collective(
          kDpOuterStream,
          price_.outer_gathers() ? "hsdp.outer_grad_reduce_scatter" : "hsdp.outer_grad_all_reduce",
          plan.item[u], false, last_dp_);
  } else if (sim_.in().framework.overlap_grad_reduce &&
             last_bwd_[static_cast<std::size_t>(it.chunk)] == l.item && plan.bucket[u].any()) {
    last_dp_ = dp_collective(kDpStream, reduce_name(), plan.bucket[u], false, done);
  }
}

// fp8-delayed: the chunk's amaxes all-reduced when its forward leaves fp8_autocast and
// when its backward (the input-gradient part under a zero-bubble split) ends.
void RankProgram::amax_reduce(const WorkItem& it, Lane& l) {
  if (!price_.amax_reduction() || l.first) return;
  if (!(it.forward() || it.pass == Pass::backward || it.pass == Pass::backward_input)) return;
  Kernel k = kernel(amax_label_, kDpComm, price_.amax_reduce_seconds(), -1);
  k.waits[0] = l.cross;
  k.waits[1] = l.layer_gate;
  l.cross = l.layer_gate = kNoEvent;
  l.last = buf_.size();
  // Outside the layers: inside a CUDA graph only when the whole iteration is captured.
  const bool captured = price_.captures_iteration();
  if (!captured) l.in_graph = false;
  launch(l.stream, k,
         captured ? Time::zero() : op_cost() * 2);  // the all_reduce call, the update's launch
}

}  // namespace moesim::schedules::detail
