// predict/diff.hpp: two predictions side by side, the step-time difference explained
// (`moesim diff`, issue #17 item 3).
//
// The critical rank's step time is the sum of its breakdown (schedules::Breakdown):
//   T = sum_m compute_m + sum_k exposed_comm_k + sum_m host_bound_idle_m
//       + schedule_bubble + stage_imbalance + other + straggler_wait,
// so the difference of two steps is the sum of the differences of these terms,
//   T_B - T_A = sum_i (x_i,B - x_i,A),
// each term a contribution (compute per module, exposed communication per collective
// kind, host-bound idle per module, the schedule's bubble, stage imbalance, other, the
// wait for the slowest process or replica, predict/variability.hpp). The
// critical ranks of A and B may differ: each side's terms are its own critical rank's.
// Contributions are sorted by their absolute size; `residual_s` is T_B - T_A less their
// sum (rounding only: a test holds it within 1% of the difference).
#pragma once

#include <string>
#include <vector>

#include "predict/predict.hpp"

namespace moesim::predict {

struct Contribution {
  std::string category;  // "compute", "exposed_communication", "host_bound_idle", "pipeline_bubble", "other",
                         // "straggler_wait"
  std::string item;      // module, collective kind, "schedule" / "stage_imbalance", or "" for other
  double a_s = 0, b_s = 0;
  double delta_s() const { return b_s - a_s; }
};

struct Difference {
  double step_time_a_s = 0, step_time_b_s = 0;
  std::vector<Contribution> contributions;  // by |delta| descending, zero terms dropped
  double residual_s = 0;
};

Difference difference(const Prediction& a, const Prediction& b);

}  // namespace moesim::predict
