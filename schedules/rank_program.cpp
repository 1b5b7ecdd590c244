#include "schedules/rank_program.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace moesim::schedules::detail {

const char* const kTrackNames[kTracks] = {
    "compute",   "pp.fwd.send",  "pp.fwd.recv",  "pp.bwd.send",  "pp.bwd.recv",  "dp",
    "dp.gather", "pp2.fwd.send", "pp2.fwd.recv", "pp2.bwd.send", "pp2.bwd.recv", "compute.pair"};

namespace {

using sim_core::EventId;
using sim_core::HostOp;
using sim_core::Kernel;
using sim_core::kNoEvent;

int pp_track(bool forward, bool send, bool descending) {
  const int t = forward ? (send ? kPpFwdSend : kPpFwdRecv) : (send ? kPpBwdSend : kPpBwdRecv);
  return descending ? t - kPpFwdSend + kPp2FwdSend : t;
}

// One pipeline rank's host program, expanded one work item at a time.
class RankProgram final : public sim_core::HostProgram {
 public:
  // `global` is the Megatron rank; in representative mode the pipeline rank itself.
  RankProgram(StepState& sim, sim_core::Gpu& gpu, std::int64_t global)
      : sim_(sim),
        price_(sim.pricing()),
        gpu_(gpu),
        rank_(static_cast<int>(sim.full() ? global / sim.stage_size() : global)),
        lane_(sim.full() ? global % sim.stage_size() : 0),
        items_(pipeline_order(sim.in().schedule, static_cast<int>(sim.in().parallelism.pp),
                              static_cast<int>(sim.in().parallelism.vpp), rank_,
                              static_cast<int>(sim.in().parallelism.num_microbatches),
                              sim.in().framework.moe_a2a_overlap && !sim.fixed())) {
    const int chunks = sim.shape().chunks();
    recv_event_.assign(items_.size(), kNoEvent);
    last_bwd_.assign(static_cast<std::size_t>(chunks), -1);
    first_fwd_.assign(static_cast<std::size_t>(chunks), -1);
    for (int i = 0; i < static_cast<int>(items_.size()); ++i) {
      const auto& it = items_[static_cast<std::size_t>(i)];
      if (it.weights()) last_bwd_[static_cast<std::size_t>(it.chunk)] = i;
      if (it.forward() && first_fwd_[static_cast<std::size_t>(it.chunk)] < 0)
        first_fwd_[static_cast<std::size_t>(it.chunk)] = i;
    }
    gather_.assign(static_cast<std::size_t>(chunks), {});
    wgrad_done_.assign(static_cast<std::size_t>(chunks), kNoEvent);
    // Groups by Megatron's rank order within a stage: dense tp-cp-dp, expert etp-ep-edp.
    const auto& p = sim.in().parallelism;
    const std::int64_t stage = static_cast<std::int64_t>(rank_) * sim.stage_size();
    const std::int64_t tp_i = lane_ % p.tp;
    tp_group_ = stage + lane_ / p.tp;
    dp_group_ = stage + tp_i;  // DP x CP
    ep_group_ = stage + lane_ % p.etp + p.etp * (lane_ / (p.etp * p.ep));
    if (sim.full()) tp_members_ = p.tp, dp_members_ = p.dp * p.cp, ep_members_ = p.ep;
    graph_label_ = sim.label("host.graph_launch");
    sync_label_ = sim.label("host.sync_wait");
    pair_sync_label_ = sim.label("host.pair_sync");
    dualpipe_ =
        sim.in().schedule == ScheduleKind::dualpipe || sim.in().schedule == ScheduleKind::dualpipev;
    merge_ = sim.merges_kernels();
    tracing_ = sim.tracing();
    amax_label_ = sim.label("fp8.amax_all_reduce");
    for (const bool fwd : {true, false}) {
      pp_recv_label_[fwd] = sim.label(fwd ? "pp.recv_activation" : "pp.recv_grad");
      pp_send_label_[fwd] = sim.label(fwd ? "pp.send_activation" : "pp.send_grad");
    }
  }

  const HostOp* next() override {
    while (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
      if (phase_ == 0) {
        step_start();
        phase_ = 1;
      } else if (next_item_ < items_.size()) {
        expand(static_cast<int>(next_item_++));
      } else if (phase_ == 1) {
        step_end();
        phase_ = 2;
      } else {
        return nullptr;
      }
    }
    return &buf_[pos_++];
  }

 private:
  // The host's slice is named after the kernel it launches (in traces: what the host
  // spends its time on, next to the GPU lanes).
  void launch(int stream, Kernel k, Time cpu) {
    HostOp op;
    op.kind = HostOp::Kind::launch;
    op.cpu = cpu;
    op.label = k.label;
    op.gpu = &gpu_;
    op.stream = stream;
    op.kernel = k;
    buf_.push_back(op);
  }
  void wait(EventId e) {
    HostOp op;
    op.kind = HostOp::Kind::wait;
    op.event = e;
    op.label = sync_label_;
    buf_.push_back(op);
  }
  Time op_cost() const { return price_.op_cost(); }
  Time launch_cost() const { return price_.launch_cost(); }
  Time graph_cost() const { return price_.graph_cost(); }

  static Kernel kernel(std::uint32_t label, Category c, double seconds, int sms = 0,
                       bool reserved = false) {
    Kernel k;
    k.label = label;
    k.category = c;
    k.work_s = seconds;
    k.sms = sms;
    k.reserved = reserved;
    return k;
  }

  // A data-parallel collective on `stream` over the dense DP and expert-DP groups:
  // parameters `sp` all-gathered (`gather`) or their gradients reduced, after `after`.
  EventId dp_collective(int stream, const char* name, const StageParams& sp, bool gather,
                        EventId after) {
    Kernel k = kernel(sim_.label(name), kDpComm,
                      gather ? price_.gather_seconds(sp) : price_.dp_seconds(sp), -1);
    k.port_load = price_.dp_loads(sp, gather);
    k.waits[0] = after;
    k.record = sim_.event(kDpComm);
    k.rendezvous = sim_.collective(kDpComm, dp_group_, dp_seq_++, dp_members_);
    launch(stream, k, op_cost());
    return k.record;
  }

  // Distributed optimizer: the buckets' parameter all-gathers, in forward order, ahead
  // of the first forward (schedules/dp_plan.hpp). Without --overlap-param-gather the
  // first forward waits for all of them. With --overlap-param-gather-with-optimizer-step
  // chunk 0's ran beside the last step's optimizer (step_end): the steady state of the
  // step that ends this one. Unaligned (framework.align_param_gather off), none runs
  // ahead: the first forward dispatches each bucket's when it reaches it (before_layer).
  void step_start() {
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
  void step_end() {
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
    Kernel norm =
        kernel(sim_.label("optimizer.grad_norm"), kCompute, price_.grad_norm_seconds(all));
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
  bool holds_loss() const {
    const PipelineShape& shape = sim_.shape();
    for (int c = 0; c < static_cast<int>(gather_.size()); ++c)
      if (shape.place(rank_, c).layout_stage == shape.layout_stages() - 1) return true;
    return false;
  }
  const char* reduce_name() const {
    return sim_.in().parallelism.fsdp ? "fsdp.grad_reduce_scatter"
           : price_.reduce_scatters() ? "dp.grad_reduce_scatter"
                                      : "dp.grad_all_reduce";
  }

  // Launches item j's receive, if it needs one, and remembers its completion event.
  // The item's place: its pipeline stage's id (pairs transfers) and whether it is the
  // first or last stage of its pipeline.
  struct Place {
    int id, layout_stage;
    bool descending, first, last;
  };
  Place place(const WorkItem& it) const {
    const PipelineShape& shape = sim_.shape();
    const StagePlace p = shape.place(rank_, it.chunk);
    return {shape.stage_id(p), p.layout_stage, p.descending, p.stage == 0,
            p.stage == shape.stages() - 1};
  }

  void post_recv(int j) {
    const WorkItem& it = items_[static_cast<std::size_t>(j)];
    const Place pl = place(it);
    if (!it.communicates() || (it.forward() ? pl.first : pl.last)) return;
    Kernel r = kernel(pp_recv_label_[it.forward()], kPpComm, price_.pp_seconds(), -1);
    r.port_load = price_.pp_loads(false);
    r.rendezvous = sim_.pair(it.microbatch, pl.id, it.forward(), lane_);
    r.record = recv_event_[static_cast<std::size_t>(j)] = sim_.event(kPpComm);
    r.tag = context(it, -1);
    launch(pp_track(it.forward(), false, pl.descending), r, op_cost());
  }

  // One chunk's kernels in flight on one compute stream: the gates of its first kernel,
  // the CUDA graph run it is in, and its last kernel (what sends and reductions wait for).
  struct Lane {
    int item = -1;  // the work item
    int stream = kComputeStream;
    EventId gate = kNoEvent;
    EventId cross = kNoEvent;       // the next kernel waits for the other lane (DualPipe pairs)
    EventId layer_gate = kNoEvent;  // the next kernel waits for its layer's parameters
    bool first = true, in_graph = false;
    std::size_t last = 0;
    std::vector<EventId> unit_gather;  // FSDP: each stage item's parameter all-gather
    // A sync the host takes after `pending_launches` more launches of this item's dispatch
    // kernels (Megatron's alltoall dispatcher: after the permute, before its all-to-all),
    // whatever the host launches in between (an eager shared expert, the other chunk's
    // nodes under EP overlap); at the item's end at the latest.
    EventId pending_sync = kNoEvent;
    int pending_launches = 0;
  };

  // A work item's trace context, of stage item k (-1: none, a transfer): the last one
  // again while nothing changed. 0 when not tracing.
  std::uint32_t context(const WorkItem& it, int k) {
    if (!tracing_) return 0;
    const auto key = std::make_tuple(it.microbatch, it.chunk, it.pass, k);
    if (context_id_ && key == context_key_) return context_id_;
    TraceContext c{it.microbatch, it.chunk, it.pass, k >= 0, {}};
    if (k >= 0) c.item = sim_.chunk_stage(rank_, it.chunk).items[static_cast<std::size_t>(k)];
    context_key_ = key;
    return context_id_ = sim_.trace_context(c);
  }

  void emit(const Priced& p, Lane& l, std::uint32_t tag) {
    Time cpu = Time::from_seconds(p.host_s);
    if (price_.captured(p.module)) {
      // A run of captured kernels is one graph (Megatron captures one per layer and
      // pass: L x M x 2); an eager kernel or a host sync ends it.
      if (!l.in_graph) {
        HostOp g;
        g.cpu = graph_cost();
        g.label = graph_label_;
        g.kernel.tag = tag;
        buf_.push_back(g);
      }
      l.in_graph = true;
      cpu = Time::zero();
    } else {
      l.in_graph = false;
    }
    Kernel k = kernel(p.label, p.category, p.seconds, p.sms, p.reserved);
    k.tag = tag;
    k.parts = p.parts;
    if (merge_) k.merge_class = p.merge_class;
    k.port_load = p.ports;
    if (p.category == kEpComm)
      k.rendezvous = sim_.collective(kEpComm, ep_group_, ep_seq_++, ep_members_);
    if (p.category == kTpComm)
      k.rendezvous = sim_.collective(kTpComm, tp_group_, tp_seq_++, tp_members_);
    k.waits[0] = l.first ? l.gate : l.cross;
    k.waits[1] = l.layer_gate;
    l.first = false;
    l.cross = l.layer_gate = kNoEvent;
    if (p.sync) k.record = sim_.event(p.category);
    l.last = buf_.size();
    launch(l.stream, k, cpu);
    if (l.pending_launches > 0 && p.module == Module::moe_dispatch && --l.pending_launches == 0) {
      wait(l.pending_sync);
      l.in_graph = false;
    }
    if (p.sync) {
      if (p.sync_delay == 0) {
        wait(k.record);
        l.in_graph = false;
      } else {
        l.pending_sync = k.record;
        l.pending_launches = p.sync_delay;
      }
    }
  }

  // One kernel of an item, or none (a layer without kernels in this pass), and the stage
  // items it begins and ends: where layer-wise data-parallel traffic hooks in.
  struct Step {
    const Priced* p = nullptr;
    int begins = -1, ends = -1;
    int item = -1;  // the stage item (layer) the kernel is of
  };
  // The item's kernels in launch order: its stage's layers forward, or backward in reverse
  // (the whole backward, or the zero-bubble split's part).
  std::vector<Step> kernels_of(const WorkItem& it, const Place& pl) const {
    std::vector<Step> out;
    kernels_of(it, pl, out);
    return out;
  }
  void kernels_of(const WorkItem& it, const Place& pl, std::vector<Step>& out) const {
    const auto& items = sim_.in().layout.stages()[static_cast<std::size_t>(pl.layout_stage)].items;
    out.clear();
    const int n = static_cast<int>(items.size());
    for (int i = 0; i < n; ++i) {
      const int k = it.forward() ? i : n - 1 - i;
      const auto& ks = price_.layer(items[static_cast<std::size_t>(k)]).of(it.pass, merge_);
      if (ks.empty()) out.push_back({nullptr, k, k, k});
      for (std::size_t j = 0; j < ks.size(); ++j)
        out.push_back({&ks[j], j == 0 ? k : -1, j + 1 == ks.size() ? k : -1, k});
    }
  }

  void emit_step(const Step& st, Lane& l) {
    if (st.begins >= 0) before_layer(l, st.begins);
    if (st.p)
      emit(
          *st.p, l,
          tracing_ && l.item >= 0 ? context(items_[static_cast<std::size_t>(l.item)], st.item) : 0);
    if (st.ends >= 0) after_layer(l, st.ends);
  }

  // Before stage item k's kernels: the parameters it needs. FSDP gathers the unit (and
  // prefetches the next one in the pass's order) in every pass but the weight-gradient
  // one; the distributed optimizer's first forward waits for the item's bucket.
  void before_layer(Lane& l, int k) {
    if (!price_.dp_traffic()) return;
    const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
    const auto c = static_cast<std::size_t>(it.chunk);
    if (!sim_.in().parallelism.fsdp) {
      if (!it.forward() || first_fwd_[c] != l.item || gather_[c].empty()) return;
      if (lazy_gather_) gather_at_first_use(it.chunk, k, l.first ? l.gate : lane_done(l));
      l.layer_gate = gather_[c][static_cast<std::size_t>(k)];
      return;
    }
    if (it.pass == Pass::backward_weight) return;
    const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
    if (l.unit_gather.empty()) l.unit_gather.assign(plan.item.size(), kNoEvent);
    const int next = it.forward() ? k + 1 : k - 1;
    for (int u : {k, next}) {
      if (u < 0 || u >= static_cast<int>(plan.item.size())) continue;
      EventId& e = l.unit_gather[static_cast<std::size_t>(u)];
      if (e == kNoEvent)
        e = dp_collective(kDpGatherStream, "fsdp.param_all_gather",
                          plan.item[static_cast<std::size_t>(u)], true, kNoEvent);
    }
    l.layer_gate = l.unit_gather[static_cast<std::size_t>(k)];
  }

  // Unaligned parameter gathers (Megatron-Core DDP's forward pre-hook, finish_param_sync in
  // param_and_grad_buffer.py): the first module of a bucket not yet gathered dispatches
  // its all-gather and waits on it, then dispatches the next bucket's (in forward order)
  // behind it. A chunk that is one bucket (every chunk but the first pipeline rank's
  // first, dp_plan.hpp) therefore waits for its whole gather at its first forward. Like
  // every NCCL collective PyTorch launches, the gather's stream first waits for the compute
  // stream as it stands (`compute`), in eager mode and in a captured graph alike.
  void gather_at_first_use(int chunk, int k, EventId compute) {
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
  // DDP reduces the buckets that close at k in the chunk's last backward.
  void after_layer(Lane& l, int k) {
    if (!price_.dp_traffic()) return;
    const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
    if (!it.weights()) return;
    const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
    const auto u = static_cast<std::size_t>(k);
    const EventId done = l.first ? l.gate : lane_done(l);
    if (sim_.in().parallelism.fsdp) {
      last_dp_ = dp_collective(kDpStream, reduce_name(), plan.item[u], false, done);
    } else if (sim_.in().framework.overlap_grad_reduce &&
               last_bwd_[static_cast<std::size_t>(it.chunk)] == l.item && plan.bucket[u].any()) {
      last_dp_ = dp_collective(kDpStream, reduce_name(), plan.bucket[u], false, done);
    }
  }

  // Posts the receives of items up to `upto` and returns item `index`'s gates.
  Lane lane_for(int index, int upto, int stream) {
    for (int j = posted_; j <= std::min(upto, static_cast<int>(items_.size()) - 1); ++j)
      post_recv(j);
    posted_ = std::max(posted_, upto + 1);
    Lane l;
    l.item = index;
    l.stream = stream;
    l.gate = recv_event_[static_cast<std::size_t>(index)];
    return l;
  }

  void expand(int index) {
    const WorkItem& it = items_[static_cast<std::size_t>(index)];
    if (it.overlap_next) return sim_.fixed() ? expand_pair(index) : expand_overlapped(index);
    const Place pl = place(it);
    // Receive the input activation (forward) or output gradient (backward). The
    // interleaved schedule posts the next item's receive while this one computes
    // (Megatron's --overlap-p2p-communication, on by default with vpp > 1).
    const int lookahead = sim_.in().parallelism.vpp > 1 ? 1 : 0;
    Lane l = lane_for(index, index + lookahead, kComputeStream);
    kernels_of(it, pl, steps_);
    for (const Step& st : steps_) emit_step(st, l);
    amax_reduce(it, l);
    finish(index, pl, l);
  }

  // fp8-delayed: the chunk's amaxes all-reduced when its forward leaves fp8_autocast and
  // when its backward (the input-gradient part under a zero-bubble split) ends.
  void amax_reduce(const WorkItem& it, Lane& l) {
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

  // An overlapped pair (Megatron-Core's 1F1B all-to-all overlap, DualPipe's F&B) runs each
  // layer as schedule nodes: pre-dispatch (attention, pre-MLP norm, shared expert, router,
  // dispatch preprocess) and experts (the dense MLP, or post-dispatch, experts and combine
  // preprocess) on the computation stream, dispatch and combine on the communication
  // stream, MTP's post-process on the computation stream (Megatron-Core
  // models/gpt/fine_grained_callables.py, models/common/model_chunk_schedule_plan.py @
  // d98e8a64). A node waits for the event its microbatch's previous node recorded (one
  // event per microbatch: ScheduleNode.stream_acquire_context, pipeline_parallel/utils.py),
  // and each stream runs in launch order; a weight-gradient node (Megatron's backward_dw
  // under --delay-wgrad-compute, DualPipe's W) is off the chain: the next node does not
  // wait for it. The chunks' embedding and output layer run before and after the pairs; of
  // unequal chunks the backward's remaining layers run alone, then the forward's
  // (ModelChunkSchedulePlan.run). Nodes are told apart by the kernels' modules, so the
  // dispatcher's own permute and unpermute kernels (moe_dispatch, moe_combine) run in the
  // dispatch and combine nodes on the communication stream, where Megatron runs the
  // all-to-all dispatcher's in the neighbouring computation nodes (HybridEP's permute is
  // inside its dispatch, as here); MTP's embedding norms and projection (head) run in its
  // post-process node.
  enum NodeSlot : std::uint8_t { kPreDispatch, kDispatch, kExperts, kCombine, kPost, kSlots };
  static NodeSlot slot_of(Module m) {
    switch (m) {
      case Module::moe_dispatch:
        return kDispatch;
      case Module::experts:
      case Module::mlp:
        return kExperts;
      case Module::moe_combine:
        return kCombine;
      case Module::head:
      case Module::loss:
        return kPost;
      default:
        return kPreDispatch;
    }
  }
  static int stream_of(NodeSlot s) {
    return s == kDispatch || s == kCombine ? kPairStream : kComputeStream;
  }
  // One launch of a layer pair: the forward's or the backward's node, or the backward's
  // weight-gradient part of a node.
  struct NodeLaunch {
    bool forward;
    NodeSlot slot;
    bool weights;
  };
  // Megatron-Core's order (TransformerLayerSchedulePlan.run, model_chunk_schedule_plan.py
  // 236-303): the experts' backward is queued before the host blocks in the forward's
  // dispatch (the dropless token-count sync), the delayed weight gradients run beside the
  // next communication.
  static constexpr std::array<NodeLaunch, 13> kMegatronPair{{{false, kPost, false},
                                                             {false, kPost, true},
                                                             {false, kCombine, false},
                                                             {true, kPreDispatch, false},
                                                             {false, kExperts, false},
                                                             {true, kDispatch, false},
                                                             {false, kExperts, true},
                                                             {false, kDispatch, false},
                                                             {true, kExperts, false},
                                                             {true, kCombine, false},
                                                             {false, kPreDispatch, false},
                                                             {true, kPost, false},
                                                             {false, kPreDispatch, true}}};
  // DualPipe's, as DeepSeek's own trace shows it (deepseek-ai/profile-data train.json: the
  // host's node ranges of each layer pair, docs/deepseek-trace.md): combine(B), attn(F),
  // mlp(B), dispatch(F), dispatch(B), mlp(W), mlp(F), attn(B), attn(W), combine(F).
  static constexpr std::array<NodeLaunch, 13> kDualPipePair{{{false, kPost, false},
                                                             {false, kPost, true},
                                                             {false, kCombine, false},
                                                             {true, kPreDispatch, false},
                                                             {false, kExperts, false},
                                                             {true, kDispatch, false},
                                                             {false, kDispatch, false},
                                                             {false, kExperts, true},
                                                             {true, kExperts, false},
                                                             {false, kPreDispatch, false},
                                                             {false, kPreDispatch, true},
                                                             {true, kCombine, false},
                                                             {true, kPost, false}}};

  struct Unit {
    int item = -1;  // the stage item (layer)
    std::array<std::vector<Step>, kSlots> node, dw;
    bool outer = true;  // embedding, output layer or no kernels: not paired
  };
  // A chunk's stage items, each split into its schedule nodes (kernels in launch order, the
  // layer marks dropped: the node emission places them). `weights`: the backward's
  // weight-gradient GEMMs, which go to the nodes' weight parts.
  static std::vector<Unit> units_of(const std::vector<Step>& ks,
                                    const std::vector<Step>& weights = {}) {
    std::vector<Unit> out;
    for (const Step& st : ks) {
      if (st.begins >= 0) {
        out.emplace_back();
        out.back().item = st.begins;
      }
      if (!st.p) continue;
      Unit& u = out.back();
      const Module m = st.p->module;
      if (m != Module::embedding && m != Module::head && m != Module::loss) u.outer = false;
      (st.p->delayed ? u.dw : u.node)[slot_of(m)].push_back({st.p, -1, -1, st.item});
    }
    // The weight part's items come in the same order as the input part's.
    std::size_t at = 0;
    int item = -1;
    for (const Step& st : weights) {
      if (st.begins >= 0) item = st.begins;
      while (at < out.size() && out[at].item != item) ++at;
      if (!st.p) continue;
      if (at == out.size())
        throw std::logic_error("overlapped pair: a weight gradient of an item the backward lacks");
      out[at].dw[slot_of(st.p->module)].push_back({st.p, -1, -1, st.item});
    }
    return out;
  }

  // An event the lane's last kernel completes (the one it records, or a new one).
  EventId lane_done(const Lane& l) {
    Kernel& k = buf_[l.last].kernel;
    if (k.record == kNoEvent) k.record = sim_.event(static_cast<Category>(k.category));
    return k.record;
  }

  struct NodeLane {
    Lane l;
    EventId chain = kNoEvent;  // the microbatch's last node's completion
    int item = -1;             // the stage item whose layer marks are open
  };
  // A node's own host work, in PyTorch calls. Megatron-Core (ScheduleNode._forward /
  // _backward and stream_acquire_context, pipeline_parallel/utils.py 238-345;
  // TransformerLayerNode, models/common/utils.py 219-330, @ d98e8a64), beside its kernels'
  // launches:
  //   forward    the event wait, the stream switch in and out, the event record (4); each
  //              input detached and re-marked for gradients (2 a tensor, about 1.5
  //              inputs a node); the layer state's detaches (residual, shared-expert
  //              output, dispatched probabilities: about one a node)          8
  //   backward   the event wait, stream switch, record (4); the autograd engine's run
  //              (run_backward, 1); the detached tensors' gradients read back, the
  //              incoming gradients' record_stream and the inputs' gradients read (about
  //              4)                                                           9
  //   weights    backward_dw: a stream switch in and out                      2
  // DualPipe's nodes (DeepSeek's own framework): an event record and a stream wait.
  static constexpr int kNodeFwdOps = 8, kNodeBwdOps = 9, kNodeDwOps = 2, kDualPipeNodeOps = 2;
  // One schedule node of lane `n` on its stream: the node's host work, then its kernels
  // after the microbatch's previous node (a weight part: off the chain).
  void emit_node(NodeLane& n, const std::vector<Step>& ks, NodeSlot slot, bool weights) {
    if (ks.empty()) return;
    // Under a full-iteration CUDA graph the schedule's Python does not run: no host work,
    // and the node's kernels stay in the one graph.
    if (!price_.captures_iteration()) {
      HostOp sync;
      const bool forward = items_[static_cast<std::size_t>(n.l.item)].forward();
      sync.cpu = op_cost() * (dualpipe_ ? kDualPipeNodeOps
                              : weights ? kNodeDwOps
                              : forward ? kNodeFwdOps
                                        : kNodeBwdOps);
      sync.label = pair_sync_label_;
      buf_.push_back(sync);
      n.l.in_graph = false;
    }
    n.l.stream = weights ? kComputeStream : stream_of(slot);
    n.l.cross = n.chain;
    for (const Step& st : ks) emit_step(st, n.l);
    if (!weights) n.chain = lane_done(n.l);
  }
  void begin_unit(NodeLane& n, const Unit& u) {
    if (n.item == u.item) return;
    before_layer(n.l, u.item);
    n.item = u.item;
  }
  void end_unit(NodeLane& n) {
    if (n.item >= 0) after_layer(n.l, n.item);
    n.item = -1;
  }
  void launch_node(NodeLane& n, const Unit& u, NodeSlot s, bool weights) {
    begin_unit(n, u);
    emit_node(n, weights ? u.dw[s] : u.node[s], s, weights);
  }
  // A unit alone, in its pass's order.
  void emit_unit(NodeLane& n, const Unit& u, bool forward) {
    static constexpr std::array<NodeSlot, kSlots> kFwd{kPreDispatch, kDispatch, kExperts, kCombine,
                                                       kPost};
    static constexpr std::array<NodeSlot, kSlots> kBwd{kPost, kCombine, kExperts, kDispatch,
                                                       kPreDispatch};
    begin_unit(n, u);
    for (NodeSlot s : forward ? kFwd : kBwd) {
      emit_node(n, u.node[s], s, false);
      if (!forward) emit_node(n, u.dw[s], s, true);
    }
    end_unit(n);
  }

  void expand_overlapped(int index) {
    const WorkItem& f = items_[static_cast<std::size_t>(index)];
    const WorkItem& b = items_[static_cast<std::size_t>(index) + 1];
    ++next_item_;  // the backward is launched here
    NodeLane nf{lane_for(index, index + 1, kComputeStream)},
        nb{lane_for(index + 1, index + 1, kComputeStream)};
    const Place pf = place(f), pb = place(b);
    const auto uf = units_of(kernels_of(f, pf));
    // DualPipe's backward runs its weight gradients as nodes of their own (W).
    const auto part = [&](Pass pass) {
      WorkItem w = b;
      w.pass = pass;
      return kernels_of(w, pb);
    };
    const auto ub = dualpipe_ ? units_of(part(Pass::backward_input), part(Pass::backward_weight))
                              : units_of(kernels_of(b, pb));
    // The chunks' outer items before and after their layers.
    const auto split = [](const std::vector<Unit>& us) {
      std::size_t lo = 0, hi = us.size();
      while (lo < hi && us[lo].outer) ++lo;
      while (hi > lo && us[hi - 1].outer) --hi;
      return std::pair{lo, hi};
    };
    const auto [f_lo, f_hi] = split(uf);
    const auto [b_lo, b_hi] = split(ub);
    for (std::size_t i = 0; i < f_lo; ++i) emit_unit(nf, uf[i], true);
    for (std::size_t i = 0; i < b_lo; ++i) emit_unit(nb, ub[i], false);
    const std::size_t pairs = std::min(f_hi - f_lo, b_hi - b_lo);
    const std::span<const NodeLaunch> order = dualpipe_
                                                  ? std::span<const NodeLaunch>(kDualPipePair)
                                                  : std::span<const NodeLaunch>(kMegatronPair);
    for (std::size_t i = 0; i < pairs; ++i) {
      const Unit& fu = uf[f_lo + i];
      const Unit& bu = ub[b_lo + i];
      std::array<bool, 3 * kSlots> named{};  // forward nodes, backward nodes, backward weights
      for (const NodeLaunch& x : order) {
        launch_node(x.forward ? nf : nb, x.forward ? fu : bu, x.slot, x.weights);
        named[(x.forward ? 0 : x.weights ? 2 : 1) * kSlots + x.slot] = true;
      }
      // A part the order does not name (the backward's combine and dispatch weights) runs
      // at the end, so that no kernel is left out.
      for (std::size_t s = 0; s < kSlots; ++s) {
        const auto slot = static_cast<NodeSlot>(s);
        if (!named[s]) launch_node(nf, fu, slot, false);
        if (!named[kSlots + s]) launch_node(nb, bu, slot, false);
        if (!named[2 * kSlots + s]) launch_node(nb, bu, slot, true);
      }
      end_unit(nf);
      end_unit(nb);
    }
    for (std::size_t i = b_lo + pairs; i < b_hi; ++i) emit_unit(nb, ub[i], false);
    for (std::size_t i = f_lo + pairs; i < f_hi; ++i) emit_unit(nf, uf[i], true);
    for (std::size_t i = f_hi; i < uf.size(); ++i) emit_unit(nf, uf[i], true);
    for (std::size_t i = b_hi; i < ub.size(); ++i) emit_unit(nb, ub[i], false);
    // What follows (the amax reduction, the sends) waits for the microbatch's last node.
    for (NodeLane* n : {&nf, &nb}) {
      n->l.stream = kComputeStream;
      n->l.cross = n->chain;
    }
    amax_reduce(f, nf.l);
    amax_reduce(b, nb.l);
    finish(index, pf, nf.l);
    finish(index + 1, pb, nb.l);
  }

  // The item's end: its send; after the chunk's last weight gradients, their event.
  void finish(int index, const Place& pl, Lane& l) {
    if (l.pending_launches > 0) {  // a sync whose dispatch launches the item did not reach
      wait(l.pending_sync);
      l.pending_launches = 0;
    }
    const WorkItem& it = items_[static_cast<std::size_t>(index)];
    const bool send = it.communicates() && !(it.forward() ? pl.last : pl.first);
    if (l.first) {
      // An empty virtual stage (a layout such as "Et|t||L") passes what it received on
      // unchanged, as Megatron's stage without layers does; without the send the next
      // stage would wait forever.
      if (send) post_send(it, pl, l.gate);
      return;
    }
    const bool last_wgrad = it.weights() && last_bwd_[static_cast<std::size_t>(it.chunk)] == index;
    if (!send && !last_wgrad) return;
    const EventId done = lane_done(l);
    if (send) post_send(it, pl, done);
    if (last_wgrad) wgrad_done_[static_cast<std::size_t>(it.chunk)] = done;
  }

  void post_send(const WorkItem& it, const Place& pl, EventId done) {
    Kernel s = kernel(pp_send_label_[it.forward()], kPpComm, price_.pp_seconds(), -1);
    s.port_load = price_.pp_loads(true);
    s.waits[0] = done;
    s.rendezvous =
        sim_.pair(it.microbatch, it.forward() ? pl.id + 1 : pl.id - 1, it.forward(), lane_);
    s.tag = context(it, -1);
    launch(pp_track(it.forward(), true, pl.descending), s, op_cost());
  }

  // Fixed chunks: DualPipe's overlapped pair (a forward, then a full backward) as one
  // kernel of F&B that waits for both inputs, then both sends.
  void expand_pair(int index) {
    const WorkItem& f = items_[static_cast<std::size_t>(index)];
    const WorkItem& b = items_[static_cast<std::size_t>(index) + 1];
    ++next_item_;  // the backward is done here
    const Lane lf = lane_for(index, index + 1, kComputeStream);
    const Lane lb = lane_for(index + 1, index + 1, kComputeStream);
    const Priced& p = price_.fwd_bwd().front();
    Kernel k = kernel(p.label, p.category, p.seconds);
    k.waits[0] = lf.gate;
    k.waits[1] = lb.gate;
    k.record = sim_.event(kCompute);
    launch(kComputeStream, k, launch_cost());
    const Place pf = place(f), pb = place(b);
    if (!pf.last) post_send(f, pf, k.record);
    if (!pb.first) post_send(b, pb, k.record);
  }

  StepState& sim_;
  const KernelPricing& price_;
  sim_core::Gpu& gpu_;
  int rank_;
  std::int64_t lane_;  // position within the stage: pairs pipeline transfers
  std::int64_t tp_group_ = 0, dp_group_ = 0, ep_group_ = 0;
  std::int64_t tp_members_ = 1, dp_members_ = 1, ep_members_ = 1;
  std::int64_t ep_seq_ = 0, tp_seq_ = 0, dp_seq_ = 0;
  std::vector<WorkItem> items_;
  bool tracing_ = false;
  std::uint32_t context_id_ = 0;  // the last trace context and its key
  std::tuple<int, int, Pass, int> context_key_{};
  std::vector<EventId> recv_event_;  // per item: its receive's completion, if any
  int posted_ = 0;                   // items whose receive has been posted
  std::vector<int> last_bwd_, first_fwd_;
  bool lazy_gather_ = false;  // parameter gathers at first use (gather_at_first_use)
  std::vector<std::vector<EventId>> gather_;  // per chunk, per stage item: its bucket's gather
  std::vector<EventId> wgrad_done_;           // per chunk: its last weight gradients
  EventId last_dp_ = kNoEvent;
  std::vector<HostOp> buf_;
  std::size_t pos_ = 0;
  std::size_t next_item_ = 0;
  int phase_ = 0;
  std::uint32_t amax_label_ = 0;
  std::array<std::uint32_t, 2> pp_recv_label_{}, pp_send_label_{};  // by forward
  std::vector<Step> steps_;                                         // expand()'s kernels, reused
  std::uint32_t graph_label_ = 0, sync_label_ = 0, pair_sync_label_ = 0;
  bool dualpipe_ = false;  // DualPipe's pairs (else Megatron's all-to-all overlap)
  bool merge_ = true;      // StepState::merges_kernels
};

}  // namespace

std::unique_ptr<sim_core::HostProgram> make_rank_program(StepState& sim, sim_core::Gpu& gpu,
                                                         std::int64_t global) {
  return std::make_unique<RankProgram>(sim, gpu, global);
}

}  // namespace moesim::schedules::detail
