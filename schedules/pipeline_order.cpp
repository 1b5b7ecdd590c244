#include "schedules/pipeline_order.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moesim::schedules {

std::vector<WorkItem> pipeline_order(ScheduleKind kind, int pp, int vpp, int rank, int m) {
  if (pp < 1 || vpp < 1 || m < 1 || rank < 0 || rank >= pp)
    throw std::invalid_argument("pipeline_order: bad sizes");
  std::vector<WorkItem> out;
  switch (kind) {
    case ScheduleKind::one_f_one_b: {
      if (vpp != 1) throw std::invalid_argument("1f1b runs one chunk per rank");
      const int warmup = std::min(pp - rank - 1, m);
      int f = 0, b = 0;
      for (; f < warmup; ++f) out.push_back({f, 0, true});
      while (f < m) {
        out.push_back({f++, 0, true});
        out.push_back({b++, 0, false});
      }
      while (b < m) out.push_back({b++, 0, false});
      return out;
    }
    case ScheduleKind::interleaved_1f1b: {
      if (m % pp != 0)
        throw std::invalid_argument("interleaved-1f1b needs microbatches (" + std::to_string(m) +
                                    ") divisible by pp (" + std::to_string(pp) + ")");
      const int total = m * vpp;
      const int group = pp * vpp;
      const int warmup = m == pp ? total : std::min(total, (pp - rank - 1) * 2 + (vpp - 1) * pp);
      const auto item = [&](int k, bool fwd) {
        const int in_group = k % group;
        const int chunk = fwd ? in_group / pp : vpp - 1 - in_group / pp;
        return WorkItem{(k / group) * pp + k % pp, chunk, fwd};
      };
      int f = 0, b = 0;
      for (; f < warmup; ++f) out.push_back(item(f, true));
      while (f < total) {
        out.push_back(item(f++, true));
        out.push_back(item(b++, false));
      }
      while (b < total) out.push_back(item(b++, false));
      return out;
    }
    case ScheduleKind::dualpipe:
    case ScheduleKind::dualpipev:
    case ScheduleKind::zb_h1:
      throw NotSimulated(std::string(schedule_names().name(kind)) + " is not simulated yet (issue #6)");
  }
  return out;
}

}  // namespace moesim::schedules
