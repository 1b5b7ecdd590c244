#include "schedules/pipeline_order.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include <array>

namespace moesim::schedules {

const sim_core::NameTable<Pass>& pass_names() {
  static constexpr std::array<sim_core::NameEntry<Pass>, 4> kEntries{{
      {Pass::forward, "forward", "a chunk's forward"},
      {Pass::backward, "backward", "a chunk's whole backward"},
      {Pass::backward_input, "backward_input", "a zero-bubble backward's input-gradient part (B)"},
      {Pass::backward_weight, "backward_weight",
       "a zero-bubble backward's weight-gradient part (W)"},
  }};
  static constexpr sim_core::NameTable<Pass> kTable{kEntries};
  return kTable;
}

PipelineShape::PipelineShape(ScheduleKind kind, int ranks, int vpp)
    : kind_(kind),
      ranks_(ranks),
      chunks_(kind == ScheduleKind::dualpipe || kind == ScheduleKind::dualpipev ? 2 : vpp) {}

int PipelineShape::stages() const {
  switch (kind_) {
    case ScheduleKind::dualpipe:
      return ranks_;
    case ScheduleKind::dualpipev:
      return 2 * ranks_;
    default:
      return ranks_ * chunks_;
  }
}

int PipelineShape::layout_stages() const {
  return stages();
}

StagePlace PipelineShape::place(int rank, int chunk) const {
  switch (kind_) {
    case ScheduleKind::dualpipe: {
      const int stage = chunk == 0 ? rank : ranks_ - 1 - rank;
      return {chunk, stage, stage, chunk == 1};
    }
    case ScheduleKind::dualpipev: {
      const int stage = chunk == 0 ? rank : 2 * ranks_ - 1 - rank;
      return {0, stage, stage, chunk == 1};
    }
    default: {
      const int stage = chunk * ranks_ + rank;
      return {0, stage, stage, false};
    }
  }
}

namespace {

// The eight steps of deepseek-ai/DualPipe (dualpipe.py and dualpipev.py, step()), as
// work items. `phase` is the repository's chunk index on this rank; `chunk_of` maps it
// to ours (DualPipe's second half of the ranks swaps the two); microbatch ids count per
// chunk in order, offset per pipeline (DualPipe feeds M/2 from each end).
class DualSteps {
 public:
  DualSteps(bool v, int ranks, int rank, int m) : v_(v), ranks_(ranks), rank_(rank), m_(m) {
    if (!v && (ranks < 2 || ranks % 2 != 0))
      throw std::invalid_argument("dualpipe needs an even number of pipeline ranks");
    // dualpipe.py:332-333 asserts an even count (half from each end); dualpipev.py:318
    // only the 2 x ranks (deepseek-ai/DualPipe @ 030ce43). The loader refuses both first.
    if ((!v && m % 2 != 0) || m < 2 * ranks)
      throw std::invalid_argument(
          std::string(v ? "dualpipev needs" : "dualpipe needs an even number of") +
          " microbatches, at least 2 x the ranks (" + std::to_string(2 * ranks) + "), not " +
          std::to_string(m));
  }

  std::vector<WorkItem> run() {
    // DualPipe counts in half ranks (the two ends mirror), DualPipeV in ranks.
    const int n = v_ ? ranks_ : ranks_ / 2;
    const int h = v_ ? rank_ : std::min(rank_, ranks_ - 1 - rank_);
    const bool turn = v_ ? rank_ == ranks_ - 1 : (rank_ == ranks_ / 2 - 1 || rank_ == ranks_ / 2);
    const int chunks =
        v_ ? m_ : m_ / 2;  // dualpipe.py's half_num_chunks; dualpipev.py's num_chunks
    for (int i = 0; i < (n - h - 1) * 2; ++i) f(0);             // 1: nF0
    for (int i = 0; i < h + 1; ++i) f(0), f(1);                 // 2: nF0F1
    for (int i = 0; i < n - h - 1; ++i) b(1, true), w(), f(1);  // 3: nB1W1F1
    for (int i = 0; i < chunks - 2 * n + h + 1; ++i) {          // 4: nF0B1F1B0
      if (i == 0 && turn)
        f(0), b(1, false);  // not overlapped, to shorten the bubble
      else
        pair(0, 1);
      pair(1, 0);
    }
    for (int i = 0; i < n - h - 1; ++i) b(1, false), pair(1, 0);  // 5: nB1F1B0
    bool zb = false;                                              // 6: nB1B0
    for (int i = 0; i < h + 1; ++i) {
      if (i == (h + 1) / 2 && h % 2 == 1) zb = true;
      b(1, zb);
      if (i == (h + 1) / 2 && h % 2 == 0) zb = true;
      b(0, zb);
    }
    for (int i = 0; i < n - h - 1; ++i) w(), b(0, true);  // 7: nWB0
    for (int i = 0; i < h + 1; ++i) w();                  // 8: nW
    if (!pending_.empty()) throw std::logic_error("dualpipe: weight passes left over");
    return std::move(out_);
  }

 private:
  int chunk_of(int phase) const { return v_ ? phase : phase ^ (rank_ >= ranks_ / 2 ? 1 : 0); }
  int microbatch(int chunk, int k) const { return v_ ? k : chunk * (m_ / 2) + k; }
  void f(int phase) {
    const int c = chunk_of(phase);
    out_.push_back({microbatch(c, fwd_[c]++), c, Pass::forward, false});
  }
  void b(int phase, bool zero_bubble) {
    const int c = chunk_of(phase);
    const int mb = microbatch(c, bwd_[c]++);
    out_.push_back({mb, c, zero_bubble ? Pass::backward_input : Pass::backward, false});
    if (zero_bubble) pending_.push_back({mb, c, Pass::backward_weight, false});
  }
  void w() {
    if (pending_.empty()) throw std::logic_error("dualpipe: a weight pass with none pending");
    out_.push_back(pending_.front());
    pending_.pop_front();
  }
  void pair(int fwd_phase, int bwd_phase) {
    f(fwd_phase);
    out_.back().overlap_next = true;
    b(bwd_phase, false);
  }

  bool v_;
  int ranks_, rank_, m_;
  int fwd_[2] = {0, 0}, bwd_[2] = {0, 0};
  std::vector<WorkItem> out_;
  std::deque<WorkItem> pending_;
};

}  // namespace

std::vector<WorkItem> pipeline_order(ScheduleKind kind, int pp, int vpp, int rank, int m,
                                     bool overlap_pairs) {
  if (pp < 1 || vpp < 1 || m < 1 || rank < 0 || rank >= pp)
    throw std::invalid_argument("pipeline_order: bad sizes");
  std::vector<WorkItem> out;
  switch (kind) {
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1: {
      if (vpp != 1)
        throw std::invalid_argument(std::string(schedule_names().name(kind)) +
                                    " runs one chunk per rank");
      const bool zb = kind == ScheduleKind::zb_h1;
      // The all-to-all overlap runs one more warm-up forward, so that each merged pair's
      // forward and backward are of different microbatches (Megatron-Core
      // combined_1f1b_schedule_for_no_pipelining: microbatch 0's forward alone, forward
      // i+1 with backward i, the last backward alone).
      const int warmup = std::min(pp - rank - 1 + (overlap_pairs && !zb ? 1 : 0), m);
      std::deque<int> pending;  // ZB-H1: microbatches whose W is still to run
      const auto backward = [&](int b) {
        if (!zb) {
          out.push_back({b, 0, Pass::backward, false});
          return;
        }
        out.push_back({b, 0, Pass::backward_input, false});
        pending.push_back(b);
        while (static_cast<int>(pending.size()) > rank) {
          out.push_back({pending.front(), 0, Pass::backward_weight, false});
          pending.pop_front();
        }
      };
      int f = 0, b = 0;
      for (; f < warmup; ++f) out.push_back({f, 0, Pass::forward, false});
      while (f < m) {
        out.push_back({f++, 0, Pass::forward, overlap_pairs && !zb});
        backward(b++);
      }
      while (b < m) backward(b++);
      for (int w : pending) out.push_back({w, 0, Pass::backward_weight, false});
      return out;
    }
    case ScheduleKind::interleaved_1f1b: {
      if (m % pp != 0)
        throw std::invalid_argument("interleaved-1f1b needs microbatches (" + std::to_string(m) +
                                    ") divisible by pp (" + std::to_string(pp) + ")");
      const int total = m * vpp;
      const int group = pp * vpp;
      // With the all-to-all overlap one more (get_pp_rank_microbatches: "+1 to ensure the
      // forward and backward computations are independent in all 1f1b steps"). No special
      // case for m == pp: Megatron-Core dropped its all-warmup rule there in 4295be1a6c
      // (2024-11-01, "tunable schedule with overlapping"), so the last chunk's forward and
      // backward alternate as at any m.
      const int warmup =
          std::min(total, (pp - rank - 1) * 2 + (vpp - 1) * pp + (overlap_pairs ? 1 : 0));
      const auto item = [&](int k, bool fwd) {
        const int in_group = k % group;
        const int chunk = fwd ? in_group / pp : vpp - 1 - in_group / pp;
        return WorkItem{(k / group) * pp + k % pp, chunk, fwd ? Pass::forward : Pass::backward,
                        false};
      };
      int f = 0, b = 0;
      for (; f < warmup; ++f) out.push_back(item(f, true));
      while (f < total) {
        out.push_back(item(f++, true));
        out.back().overlap_next = overlap_pairs;
        out.push_back(item(b++, false));
      }
      while (b < total) out.push_back(item(b++, false));
      return out;
    }
    case ScheduleKind::dualpipe:
    case ScheduleKind::dualpipev:
      if (vpp != 1 && vpp != 2)
        throw std::invalid_argument("dualpipe / dualpipev hold two chunks per rank");
      return DualSteps(kind == ScheduleKind::dualpipev, pp, rank, m).run();
  }
  return out;
}

}  // namespace moesim::schedules
