#include "schedules/schedule_kind.hpp"

#include <array>

namespace moesim::schedules {

const sim_core::NameTable<ScheduleKind>& schedule_names() {
  static constexpr std::array<sim_core::NameEntry<ScheduleKind>, 5> kEntries{{
      {ScheduleKind::one_f_one_b, "1f1b", "one-forward-one-backward (PipeDream-Flush)"},
      {ScheduleKind::interleaved_1f1b, "interleaved-1f1b", "Megatron interleaved 1F1B (vpp > 1)"},
      {ScheduleKind::dualpipe, "dualpipe", "DeepSeek DualPipe, bidirectional, mirrored chunks"},
      {ScheduleKind::dualpipev, "dualpipev", "DualPipeV: V-shaped DualPipe on half the devices"},
      {ScheduleKind::zb_h1, "zb-h1", "zero-bubble ZB-H1 (backward split into B and W)"},
  }};
  static constexpr sim_core::NameTable<ScheduleKind> kTable{kEntries};
  return kTable;
}

bool splits_backward(ScheduleKind s) {
  return s == ScheduleKind::zb_h1 || s == ScheduleKind::dualpipe || s == ScheduleKind::dualpipev;
}

int layout_chunks_per_rank(ScheduleKind s, int vpp) {
  return s == ScheduleKind::dualpipev ? 2 : s == ScheduleKind::dualpipe ? 1 : vpp;
}

double layer_passes(ScheduleKind s, std::int64_t microbatches, std::int64_t layers,
                    std::int64_t stages) {
  return (splits_backward(s) ? 3.0 : 2.0) * static_cast<double>(microbatches) *
         (static_cast<double>(layers) + static_cast<double>(stages));
}

bool syncs_after_transfers(ScheduleKind s, std::int64_t pp, bool full_iteration_graph) {
  return s == ScheduleKind::one_f_one_b && pp > 1 && !full_iteration_graph;
}

}  // namespace moesim::schedules
