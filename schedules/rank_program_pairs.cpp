// schedules/rank_program_pairs.cpp: a rank's overlapped pairs (schedules/rank_program.hpp):
// a forward and a backward chunk (Megatron-Core's 1F1B all-to-all overlap, DualPipe's F&B)
// split into schedule nodes (schedules/rank_program_detail.hpp NodeSlot) and launched
// interleaved on the compute and pair streams, and, with fixed chunk times, the pair as
// one kernel.
#include "schedules/rank_program_detail.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <utility>

namespace moesim::schedules::detail {

RankProgram::NodeSlot RankProgram::slot_of(Module m) {
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

int RankProgram::stream_of(NodeSlot s) {
  return s == kDispatch || s == kCombine ? kPairStream : kComputeStream;
}

// A chunk's stage items, each split into its schedule nodes (kernels in launch order, the
// layer marks dropped: the node emission places them). `weights`: the backward's
// weight-gradient GEMMs, which go to the nodes' weight parts.
std::vector<RankProgram::Unit> RankProgram::units_of(const std::vector<Step>& ks,
                                                     const std::vector<Step>& weights) {
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

// One schedule node of lane `n` on its stream: the node's host work, then its kernels
// after the microbatch's previous node (a weight part: off the chain).
void RankProgram::emit_node(NodeLane& n, const std::vector<Step>& ks, NodeSlot slot, bool weights) {
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

void RankProgram::begin_unit(NodeLane& n, const Unit& u) {
  if (n.item == u.item) return;
  before_layer(n.l, u.item);
  n.item = u.item;
}

void RankProgram::end_unit(NodeLane& n) {
  if (n.item >= 0) after_layer(n.l, n.item);
  n.item = -1;
}

void RankProgram::launch_node(NodeLane& n, const Unit& u, NodeSlot s, bool weights) {
  begin_unit(n, u);
  emit_node(n, weights ? u.dw[s] : u.node[s], s, weights);
}

// A unit alone, in its pass's order.
void RankProgram::emit_unit(NodeLane& n, const Unit& u, bool forward) {
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

void RankProgram::expand_overlapped(int index) {
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
  const std::span<const NodeLaunch> order = dualpipe_ ? std::span<const NodeLaunch>(kDualPipePair)
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

// Fixed chunks: DualPipe's overlapped pair (a forward, then a full backward) as one
// kernel of F&B that waits for both inputs, then both sends.
void RankProgram::expand_pair(int index) {
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

}  // namespace moesim::schedules::detail
