// schedules/pipeline_order.hpp: the order in which one pipeline rank runs its
// (microbatch, chunk, forward/backward) work items.
//
// 1F1B (PipeDream-Flush): rank r runs min(pp - r - 1, M) warm-up forwards, then
// alternates one forward and one backward, then drains the remaining backwards.
// Interleaved 1F1B (Megatron-Core, get_forward_backward_func with vpp > 1): M x vpp items
// per rank, warm-up = (pp - r - 1) x 2 + (vpp - 1) x pp forwards (all of them when
// M == pp); the k-th forward runs chunk (k mod (pp vpp)) / pp on microbatch
// (k / (pp vpp)) pp + k mod pp, the k-th backward the same microbatch on chunk
// vpp - 1 - (k mod (pp vpp)) / pp. Needs M to be a multiple of pp.
// Chunk c of rank r is virtual stage c pp + r of the pp_layout.
#pragma once

#include <stdexcept>
#include <vector>

#include "schedules/schedule_kind.hpp"

namespace moesim::schedules {

// A valid scenario whose schedule moesim cannot simulate yet.
class NotSimulated : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WorkItem {
  int microbatch = 0;
  int chunk = 0;
  bool forward = true;
};

// Throws NotSimulated for schedules not simulated yet, std::invalid_argument for
// impossible sizes.
std::vector<WorkItem> pipeline_order(ScheduleKind kind, int pp, int vpp, int rank, int microbatches);

}  // namespace moesim::schedules
