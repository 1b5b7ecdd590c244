#include "schedules/step_breakdown.hpp"

#include <algorithm>

namespace moesim::schedules::detail {

// The compute streams' time line: idle gaps charged to what the next kernel waited for;
// busy time to compute where any compute kernel runs, else to the communication
// kernels running there (two streams overlap in DualPipe's pairs: unions, not sums).
// `pass_work`: the rank's work by chunk pass (kFwd, kBwd, kWgrad), busy time and the
// gaps that are not pipeline bubble. Spans arrive in start order (StepObserver).
void StepObserver::Line::add(const Span& s, const StepState& sim) {
  const auto kind = [](Category c) {
    return static_cast<std::size_t>(c) - 1;
  };  // kEpComm.. -> CommKind
  const double gap = (s.start - prev).seconds();
  const std::uint8_t pass = sim.pass_of(s.label);
  if (gap > 0) {
    // Launched last, after its inputs: the host's, except what the GPU spent waiting for a
    // pipeline transfer the host itself had waited on (1F1B's device sync) before launching.
    double waited = gap;
    if (s.launch >= s.start && s.launch >= s.gate_at) {
      waited = s.gated_by == kPpComm ? std::clamp((s.gate_at - prev).seconds(), 0.0, gap) : 0;
      b.host_bound_idle += gap - waited;
      b.host_bound_by_module[sim.module_of(s.label)] += gap - waited;
    }
    bool bubble = false;
    if (waited > 0) {
      if (s.gated_by == kPpComm) {
        b.pipeline_bubble += waited;
        bubble = true;
      } else if (s.gated_by == kDpComm || s.gated_by == kEpComm || s.gated_by == kTpComm ||
                 s.gated_by == kOffload) {
        b.exposed_comm += waited;
        b.exposed_comm_by_kind[kind(s.gated_by)] += waited;
      } else {
        b.other += waited;
      }
    }
    if (pass != kNoPass) pass_work[pass] += bubble ? gap - waited : gap;
  }
  // Busy time as unions: all kernels, and the compute kernels among them.
  if (s.end > prev) {
    const double busy = (s.end - std::max(s.start, prev)).seconds();
    all += busy;
    if (s.category != kCompute) comm_busy[kind(s.category)] += busy;
    if (pass != kNoPass) pass_work[pass] += busy;
  }
  if (s.category == kCompute && s.end > prev_compute) {
    const double busy = (s.end - std::max(s.start, prev_compute)).seconds();
    compute += busy;
    b.compute_by_module[sim.module_of(s.label)] += busy;
    prev_compute = s.end;
  }
  prev = std::max(prev, s.end);
}

void StepObserver::Line::merge(const StepState& sim, bool all_of_them) {
  auto& [x, y] = pending;
  while (!x.empty() && !y.empty()) {
    const Span& a = x.front();
    const Span& c = y.front();
    std::deque<Span>& first =
        a.start < c.start || (a.start == c.start && a.finished < c.finished) ? x : y;
    add(first.front(), sim);
    first.pop_front();
  }
  if (!all_of_them) return;
  for (auto* q : {&x, &y}) {
    for (const Span& s : *q) add(s, sim);
    q->clear();
  }
}

Breakdown StepObserver::breakdown(int rank, std::array<double, 3>* pass_work_out) const {
  const Line& l = lines_[static_cast<std::size_t>(rank)];
  Breakdown b = l.b;
  b.compute += l.compute;
  b.exposed_comm += l.all - l.compute;
  // The communication busy time not under compute, shared by kind in proportion (one
  // compute stream: nothing overlaps and the shares are exact).
  double comm_sum = 0;
  for (double x : l.comm_busy) comm_sum += x;
  if (comm_sum > 0)
    for (std::size_t k = 0; k < kCommKinds; ++k)
      b.exposed_comm_by_kind[k] += (l.all - l.compute) * l.comm_busy[k] / comm_sum;
  if (pass_work_out) *pass_work_out = l.pass_work;
  return b;
}

// Splits the pipeline bubble (Breakdown): the same schedule with every chunk at the
// rank's mean forward, backward and weight-gradient chunk time (`work` by pass over the
// rank's items of each pass) and the step's pipeline transfer time idles
// schedule_bubble; the rest of pipeline_bubble is stage imbalance.
void split_bubble(const StepInput& in, double p2p_s, const std::array<double, 3>& work,
                  Breakdown& b) {
  const auto& p = in.parallelism;
  b.schedule_bubble = 0;
  b.stage_imbalance = b.pipeline_bubble;
  if (p.pp < 2) return;
  const int chunks = layout_chunks_per_rank(in.schedule, static_cast<int>(p.vpp));
  const int pp = static_cast<int>(p.pp), m = static_cast<int>(p.num_microbatches);
  double n[3] = {0, 0, 0};
  for (const WorkItem& it : pipeline_order(in.schedule, pp, chunks, 0, m))
    n[it.pass == Pass::forward ? kFwd : it.pass == Pass::backward_weight ? kWgrad : kBwd] += 1;
  if (n[kFwd] == 0 || n[kBwd] == 0) return;
  FixedChunks c;
  c.p2p_s = p2p_s;
  c.fwd_s = work[kFwd] / n[kFwd];
  if (n[kWgrad] > 0) {
    c.wgrad_s = work[kWgrad] / n[kWgrad];
    c.bwd_s = work[kBwd] / n[kBwd] + c.wgrad_s;
  } else {
    c.bwd_s = (work[kBwd] + work[kWgrad]) / n[kBwd];
  }
  const PipelineResult r = simulate_pipeline(in.schedule, pp, static_cast<int>(p.vpp), m, c);
  b.schedule_bubble = std::min(r.bubble_s, b.pipeline_bubble);
  b.stage_imbalance = b.pipeline_bubble - b.schedule_bubble;
}

}  // namespace moesim::schedules::detail
