// schedules/step_breakdown.hpp: what a step's simulation is read back as: the critical
// rank's Breakdown (schedules/step_sim.hpp) from its compute streams' time line, the trace
// spans, and the pipeline bubble's split into the schedule's own and stage imbalance.
// Internal to the step simulation.
//
// The time line: kernels on the compute streams in start order; an idle gap before a
// kernel is charged to what the kernel waited for last:
//   host_bound_idle   the host launched it after its inputs were ready (by the module of
//                     the kernel the host was late for)
//   pipeline_bubble   a pipeline transfer
//   exposed_comm      an EP, TP or DP collective (by kind)
//   other             anything else (the tail after the last kernel among it)
// Busy time is a union over the two compute streams of overlapped pairs: compute where a
// compute kernel runs (by module), else exposed communication, shared among the kinds
// running in proportion to their busy time.
// The bubble split: the same schedule (simulate_pipeline) with every chunk at the rank's
// mean forward, backward and weight-gradient chunk time and the step's pipeline transfer
// time idles schedule_bubble (clamped to [0, pipeline_bubble]); stage_imbalance is the
// rest: waiting on slower stages.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "schedules/rank_program.hpp"

namespace moesim::schedules::detail {

// Collects what the breakdown and the trace need. The time line is consumed as kernels
// finish, not stored: one compute stream finishes its kernels in start order; with two
// (overlapped pairs) each stream's spans wait in a queue and are merged by start (ties by
// finish order, as a stable sort of the finish order would give) while both queues hold
// one, the rest at the end (finish()).
class StepObserver final : public sim_core::Observer {
 public:
  struct Span {
    Time start, end, launch;
    Category category;
    Category gated_by;  // category of the latest event it waited on
    Time gate_at;
    std::uint32_t label;
    std::uint64_t finished = 0;  // finish order within the rank (ties of the merge)
  };
  // `pair_stream`: whether the ranks run overlapped pairs on a second compute stream.
  StepObserver(const StepState& sim, int ranks, bool trace, bool pair_stream)
      : sim_(sim),
        lines_(static_cast<std::size_t>(ranks)),
        trace_(trace),
        pair_stream_(pair_stream) {}

  void kernel_done(int gpu, int stream, const sim_core::Kernel& k, Time start, Time end) override {
    kernels += k.parts;
    if (trace_) {
      const bool pp = k.category == kPpComm && k.rendezvous != sim_core::kNoRendezvous;
      spans.push_back({gpu, stream, k.label, k.tag, pp ? k.rendezvous + 1 : 0, start.seconds(),
                       end.seconds(), k.category});
    }
    if (stream != kComputeStream && stream != kPairStream) return;
    Span s{start,    end,          k.launch, static_cast<Category>(k.category),
           kCompute, Time::zero(), k.label};
    for (sim_core::EventId w : k.waits)
      if (w != sim_core::kNoEvent && sim_.event_done_at(w) >= s.gate_at) {
        s.gate_at = sim_.event_done_at(w);
        s.gated_by = sim_.event_category(w);
      }
    Line& line = lines_[static_cast<std::size_t>(gpu)];
    if (!pair_stream_) return line.add(s, sim_);
    s.finished = line.finished++;
    line.pending[stream == kPairStream ? 1 : 0].push_back(s);
    line.merge(sim_, false);
  }
  void host_op(int host, std::uint32_t label, std::uint32_t tag, Time start, Time end) override {
    spans.push_back({host, -1, label, tag, 0, start.seconds(), end.seconds()});
  }
  void host_wait(int host, std::uint32_t /*label*/, std::uint32_t tag, Time resumed) override {
    waits.push_back({host, tag, resumed.seconds()});
  }
  bool wants_host_ops() const override { return trace_; }

  // After the engine's run: the spans still queued.
  void finish() {
    for (Line& l : lines_) l.merge(sim_, true);
  }
  // The compute streams' time line of one simulated rank as a Breakdown (step_breakdown.cpp);
  // `pass_work_out` (if given): the rank's work by chunk pass (kFwd, kBwd, kWgrad).
  Breakdown breakdown(int rank, std::array<double, 3>* pass_work_out = nullptr) const;

  std::uint64_t kernels = 0;
  std::vector<TraceSpan> spans;
  std::vector<HostWait> waits;

 private:
  // One rank's time line, accumulated span by span in start order.
  struct Line {
    Breakdown b;
    std::array<double, 3> pass_work{};
    Time prev = Time::zero(), prev_compute = Time::zero();
    double all = 0, compute = 0;
    // Communication kernels' busy time by kind, before the overlap with compute is removed.
    std::array<double, kCommKinds> comm_busy{};
    std::array<std::deque<Span>, 2> pending;  // per compute stream, with a pair stream
    std::uint64_t finished = 0;
    void add(const Span& s, const StepState& sim);
    // Moves queued spans into the line in start order: while both queues hold one, or all.
    void merge(const StepState& sim, bool all_of_them);
  };
  const StepState& sim_;
  std::vector<Line> lines_;
  bool trace_;
  bool pair_stream_;
};

// Fills b.schedule_bubble and b.stage_imbalance from b.pipeline_bubble and the critical
// rank's work by chunk pass (StepObserver::breakdown's pass_work).
void split_bubble(const StepInput& in, double p2p_s, const std::array<double, 3>& work,
                  Breakdown& b);

}  // namespace moesim::schedules::detail
