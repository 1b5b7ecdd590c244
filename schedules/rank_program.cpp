// schedules/rank_program.cpp: one pipeline rank's host program (schedules/rank_program.hpp):
// its walk over the work items, each its receive, its stage's kernels with the host's cost
// of launching them (CUDA-graph runs, syncs) and its send. The class and the other parts,
// each in its own file (schedules/rank_program_detail.hpp):
//   rank_program_dp.cpp     data-parallel gathers and reductions, FP8 amax reductions and
//                           the optimizer step, outside the layers' kernels
//   rank_program_pairs.cpp  overlapped pairs (1F1B's all-to-all overlap, DualPipe)
#include "schedules/rank_program.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/rank_program_detail.hpp"

namespace moesim::schedules::detail {

const char* const kTrackNames[kTracks] = {
    "compute",      "pp.fwd.send",  "pp.fwd.recv",  "pp.bwd.send",  "pp.bwd.recv",
    "dp",           "dp.gather",    "pp2.fwd.send", "pp2.fwd.recv", "pp2.bwd.send",
    "pp2.bwd.recv", "compute.pair", "offload",      "dp.outer"};

namespace {

int pp_track(bool forward, bool send, bool descending) {
  const int t = forward ? (send ? kPpFwdSend : kPpFwdRecv) : (send ? kPpBwdSend : kPpBwdRecv);
  return descending ? t - kPpFwdSend + kPp2FwdSend : t;
}

}  // namespace

// `global` is the Megatron rank; in representative mode the pipeline rank itself.
RankProgram::RankProgram(StepState& sim, sim_core::Gpu& gpu, std::int64_t global)
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
  if (p.hybrid()) {
    // Across optimizer instances the DP collectives run over inner groups, dp cp / N
    // contiguous members of the DP x CP list, and HSDP's over the outer group, one rank of
    // each (kernel_pricing.cpp); outer ids start past every inner id.
    const std::int64_t inner = p.dp * p.cp / p.optimizer_instances;
    dp_group_ = stage + tp_i + p.tp * (lane_ / p.tp / inner);
    outer_group_ = sim.in().gpus + stage + lane_ % (sim.stage_size() / p.optimizer_instances);
    if (sim.full()) dp_members_ = inner, outer_members_ = p.optimizer_instances;
  }
  graph_label_ = sim.label("host.graph_launch");
  sync_label_ = sim.label("host.sync_wait");
  pair_sync_label_ = sim.label("host.pair_sync");
  dualpipe_ =
      sim.in().schedule == ScheduleKind::dualpipe || sim.in().schedule == ScheduleKind::dualpipev;
  // The host waits for the whole device after each transfer before it launches the next
  // item (schedules/schedule_kind.hpp syncs_after_transfers).
  p2p_sync_ = sim.in().framework.batch_p2p_sync &&
              syncs_after_transfers(sim.in().schedule, sim.in().parallelism.pp,
                                    price_.captures_iteration());
  stream_last_.fill(kNoEvent);
  merge_ = sim.merges_kernels();
  tracing_ = sim.tracing();
  amax_label_ = sim.label("fp8.amax_all_reduce");
  requant_label_ = sim.label("mxfp8.param_requantize");
  for (const bool fwd : {true, false}) {
    pp_recv_label_[fwd] = sim.label(fwd ? "pp.recv_activation" : "pp.recv_grad");
    pp_send_label_[fwd] = sim.label(fwd ? "pp.send_activation" : "pp.send_grad");
  }
}

const HostOp* RankProgram::next() {
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

// The host's slice is named after the kernel it launches (in traces: what the host
// spends its time on, next to the GPU lanes).
void RankProgram::launch(int stream, Kernel k, Time cpu) {
  HostOp op;
  op.kind = HostOp::Kind::launch;
  op.cpu = cpu;
  op.label = k.label;
  op.gpu = &gpu_;
  op.stream = stream;
  op.kernel = k;
  buf_.push_back(op);
}

void RankProgram::wait(EventId e, std::uint32_t tag) {
  HostOp op;
  op.kind = HostOp::Kind::wait;
  op.event = e;
  op.label = sync_label_;
  op.kernel.tag = tag;
  buf_.push_back(op);
}

Kernel RankProgram::kernel(std::uint32_t label, Category c, double seconds, int sms,
                           bool reserved) {
  Kernel k;
  k.label = label;
  k.category = c;
  k.work_s = seconds;
  k.sms = sms;
  k.reserved = reserved;
  return k;
}

RankProgram::Place RankProgram::place(const WorkItem& it) const {
  const PipelineShape& shape = sim_.shape();
  const StagePlace p = shape.place(rank_, it.chunk);
  return {shape.stage_id(p), p.layout_stage, p.descending, p.stage == 0,
          p.stage == shape.stages() - 1};
}

// Launches item j's receive, if it needs one, and remembers its completion event.
void RankProgram::post_recv(int j) {
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

// A work item's trace context, of stage item k (-1: none, a transfer): the last one
// again while nothing changed. 0 when not tracing.
std::uint32_t RankProgram::context(const WorkItem& it, int k) {
  if (!tracing_) return 0;
  const auto key = std::make_tuple(it.microbatch, it.chunk, it.pass, k);
  if (context_id_ && key == context_key_) return context_id_;
  TraceContext c{it.microbatch, it.chunk, it.pass, k >= 0, {}};
  if (k >= 0) c.item = sim_.chunk_stage(rank_, it.chunk).items[static_cast<std::size_t>(k)];
  context_key_ = key;
  return context_id_ = sim_.trace_context(c);
}

void RankProgram::emit(const Priced& p, Lane& l, std::uint32_t tag) {
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
  k.holds_sms = p.holds;
  if (merge_) k.merge_class = p.merge_class;
  k.port_load = p.ports;
  if (p.category == kEpComm)
    k.rendezvous = sim_.collective(kEpComm, ep_group_, ep_seq_++, ep_members_);
  if (p.category == kTpComm)
    k.rendezvous = sim_.collective(kTpComm, tp_group_, tp_seq_++, tp_members_);
  if (p.side) return emit_side(p, k, l, cpu);
  side_open_ = false;
  if (p.join) join_side(l);  // the shared expert's output: get_output's wait
  k.waits[0] = l.first ? l.gate : l.cross;
  k.waits[1] = l.layer_gate;
  k.waits[2] = l.offload_gate;
  l.before_last = l.first ? Lane::kNone : l.last;
  l.first = false;
  l.cross = l.layer_gate = l.offload_gate = kNoEvent;
  if (p.sync) k.record = sim_.event(p.category);
  l.last = buf_.size();
  launch(l.stream, k, cpu);
  if (l.pending_launches > 0 && p.module == Module::moe_dispatch && --l.pending_launches == 0) {
    wait(l.pending_sync, tag);
    l.in_graph = false;
  }
  if (p.sync) {
    if (p.sync_delay == 0) {
      wait(k.record, tag);
      l.in_graph = false;
    } else {
      l.pending_sync = k.record;
      l.pending_launches = p.sync_delay;
    }
  }
}

// A kernel on the shared expert's stream (Framework::moe_shared_expert_overlap): the first
// of a run waits for what the main stream has launched, or, launched right after the
// communication it runs beside, for what it had launched before that (Megatron's
// wait_current_stream before the all-to-all); each records its end for the main stream's join.
// The stream is the pair stream, which no overlapped pair uses beside it (the loader refuses
// the two overlaps together).
void RankProgram::emit_side(const Priced& p, Kernel& k, Lane& l, Time cpu) {
  if (!side_open_) {
    if (l.first)
      k.waits[0] = l.gate;
    else if (!p.side_after_comm)
      k.waits[0] = lane_done(l);
    else if (l.before_last != Lane::kNone)
      k.waits[0] = event_of(l.before_last);
    else
      k.waits[0] = l.gate;
  }
  side_open_ = true;
  k.record = side_last_ = sim_.event(p.category);
  launch(kPairStream, k, cpu);
}

// The lane's next main kernel waits for the shared expert's stream, if anything there is
// unjoined (not an item's first kernel: lane_for starts an item with nothing unjoined).
void RankProgram::join_side(Lane& l) {
  if (side_last_ == kNoEvent || l.first) return;
  l.cross = side_last_;
  side_last_ = kNoEvent;
}

// The item's kernels in launch order: its stage's layers forward, or backward in reverse
// (the whole backward, or the zero-bubble split's part).
std::vector<RankProgram::Step> RankProgram::kernels_of(const WorkItem& it, const Place& pl) const {
  std::vector<Step> out;
  kernels_of(it, pl, out);
  return out;
}

void RankProgram::kernels_of(const WorkItem& it, const Place& pl, std::vector<Step>& out) const {
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

void RankProgram::emit_step(const Step& st, Lane& l) {
  if (st.begins >= 0) {
    // A side run that ended the previous layer (the flex dispatchers' fc2 after the combine,
    // nothing after it): this layer's first kernel joins it.
    join_side(l);
    before_layer(l, st.begins);
    offload_before(l, st.begins);
  }
  if (st.p)
    emit(*st.p, l,
         tracing_ && l.item >= 0 ? context(items_[static_cast<std::size_t>(l.item)], st.item) : 0);
  if (st.ends >= 0) {
    after_layer(l, st.ends);
    offload_after(l, st.ends);
  }
}

// Posts the receives of items up to `upto` and returns item `index`'s gates.
RankProgram::Lane RankProgram::lane_for(int index, int upto, int stream) {
  for (int j = posted_; j <= std::min(upto, static_cast<int>(items_.size()) - 1); ++j) post_recv(j);
  posted_ = std::max(posted_, upto + 1);
  Lane l;
  l.item = index;
  l.stream = stream;
  side_open_ = false;
  side_last_ = kNoEvent;  // the previous item's send and device sync waited for it
  l.gate = recv_event_[static_cast<std::size_t>(index)];
  return l;
}

void RankProgram::expand(int index) {
  const WorkItem& it = items_[static_cast<std::size_t>(index)];
  if (it.overlap_next) return sim_.fixed() ? expand_pair(index) : expand_overlapped(index);
  const Place pl = place(it);
  // Receive the input activation (forward) or output gradient (backward). The
  // interleaved schedule posts the next item's receive while this one computes
  // (Megatron's --overlap-p2p-communication, on by default with vpp > 1).
  const int lookahead = sim_.in().parallelism.vpp > 1 ? 1 : 0;
  const bool posts = posted_ <= index;
  Lane l = lane_for(index, index + lookahead, kComputeStream);
  // The first item's receive is a transfer of its own (Megatron's recv_forward before the
  // warmup); the later ones come with the previous item's send (device_sync).
  if (p2p_sync_ && posts && recv_event_[static_cast<std::size_t>(index)] != kNoEvent)
    wait(recv_event_[static_cast<std::size_t>(index)]);
  // After a device sync on a send alone, the item's first kernel is gated on it too (it
  // launches after the host's wait): the breakdown charges the idle to the transfer.
  if (p2p_sync_ && l.gate == kNoEvent) l.gate = synced_send_;
  synced_send_ = kNoEvent;
  kernels_of(it, pl, steps_);
  for (const Step& st : steps_) emit_step(st, l);
  amax_reduce(it, l);
  finish(index, pl, l);
}

// An event the lane's last kernel completes (the one it records, or a new one).
EventId RankProgram::lane_done(const Lane& l) {
  return event_of(l.last);
}

// An event the kernel at buf_[i] completes.
EventId RankProgram::event_of(std::size_t i) {
  Kernel& k = buf_[i].kernel;
  if (k.record == kNoEvent) k.record = sim_.event(static_cast<Category>(k.category));
  return k.record;
}

// The item's end: its send; after the chunk's last weight gradients, their event; under
// Megatron's non-interleaved 1F1B, the device sync after the transfer.
void RankProgram::finish(int index, const Place& pl, Lane& l) {
  if (l.pending_launches > 0) {  // a sync whose dispatch launches the item did not reach
    wait(l.pending_sync);
    l.pending_launches = 0;
  }
  const EventId sent = send_after(index, pl, l);
  if (p2p_sync_) device_sync(index, l, sent);
}

// The item's send, if it has one (its completion event under the device sync).
EventId RankProgram::send_after(int index, const Place& pl, Lane& l) {
  const WorkItem& it = items_[static_cast<std::size_t>(index)];
  const bool send = it.communicates() && !(it.forward() ? pl.last : pl.first);
  // An empty virtual stage (a layout such as "Et|t||L") passes what it received on
  // unchanged, as Megatron's stage without layers does; without the send the next
  // stage would wait forever.
  if (l.first) return send ? post_send(it, pl, l.gate) : kNoEvent;
  const bool last_wgrad = it.weights() && last_bwd_[static_cast<std::size_t>(it.chunk)] == index;
  if (!send && !last_wgrad) return kNoEvent;
  const EventId done = lane_done(l);
  // A shared expert's output the layers did not join yet goes with the activation.
  const EventId sent = send ? post_send(it, pl, done, side_last_) : kNoEvent;
  if (last_wgrad) wgrad_done_[static_cast<std::size_t>(it.chunk)] = done;
  return sent;
}

// Megatron's P2P batch after item `index` (send_forward_recv_backward and the like): its
// send and the next item's receive together, then torch.cuda.synchronize(), which returns
// when every stream is idle: the item's kernels, both transfers (so the peer's matching
// ones), the data-parallel collectives and offload copies in flight. The transfer functions of a
// stage with nothing to send or receive (the first stage's receive_forward, the last stage's
// send_forward) return at once, without the sync.
void RankProgram::device_sync(int index, Lane& l, EventId sent) {
  const int next = index + 1;
  if (next < static_cast<int>(items_.size()) && posted_ <= next) {
    post_recv(next);
    posted_ = next + 1;
  }
  const EventId received = next < static_cast<int>(items_.size())
                               ? recv_event_[static_cast<std::size_t>(next)]
                               : kNoEvent;
  if (sent == kNoEvent && received == kNoEvent) return;
  synced_send_ = sent;
  if (!l.first) wait(lane_done(l));
  for (const EventId e : {sent, received, side_last_})
    if (e != kNoEvent) wait(e);
  for (const EventId e : stream_last_)
    if (e != kNoEvent) wait(e);
}

EventId RankProgram::post_send(const WorkItem& it, const Place& pl, EventId done, EventId also) {
  Kernel s = kernel(pp_send_label_[it.forward()], kPpComm, price_.pp_seconds(), -1);
  s.port_load = price_.pp_loads(true);
  s.waits[0] = done;
  s.waits[1] = also;
  s.rendezvous =
      sim_.pair(it.microbatch, it.forward() ? pl.id + 1 : pl.id - 1, it.forward(), lane_);
  s.tag = context(it, -1);
  if (p2p_sync_) s.record = sim_.event(kPpComm);
  launch(pp_track(it.forward(), true, pl.descending), s, op_cost());
  return s.record;
}

std::unique_ptr<sim_core::HostProgram> make_rank_program(StepState& sim, sim_core::Gpu& gpu,
                                                         std::int64_t global) {
  return std::make_unique<RankProgram>(sim, gpu, global);
}

}  // namespace moesim::schedules::detail
