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
//
// Per token (issue #27 item 5). When the two sides process different tokens per GPU per
// step (another global batch, sequence length or GPU count at the same batch), their step
// times do not compare: 512 GPUs at the batch of 256 take less time per step while each
// GPU does half the work. Each side is then put on GPU-time per token,
//   u = T G / N    (G GPUs, N tokens a step; u = 1 / tokens_per_s_per_gpu),
// and so is each of its terms, u_i = x_i G / N, which still add up:
//   u_B - u_A = sum_i (x_i,B G_B / N_B - x_i,A G_A / N_A).
// The per-token figures are kept for every pair (in GPU-microseconds per token);
// `per_token` says which basis the contributions are sorted and read by.
#pragma once

#include <string>
#include <vector>

#include "predict/predict.hpp"

namespace moesim::predict {

struct Contribution {
  std::string category;  // "compute", "exposed_communication", "host_bound_idle",
                         // "pipeline_bubble", "other", "straggler_wait"
  std::string item;      // module, collective kind, "schedule" / "stage_imbalance", or "" for other
  double a_s = 0, b_s = 0;
  double a_us = 0, b_us = 0;  // the same terms in GPU-microseconds per token
  double delta_s() const { return b_s - a_s; }
  double delta_us() const { return b_us - a_us; }
};

struct Difference {
  double step_time_a_s = 0, step_time_b_s = 0;
  std::vector<Contribution>
      contributions;  // by |delta| on the basis, descending; zero terms dropped
  double residual_s = 0;
  // The basis: per token when tokens per GPU per step differ by more than 1e-9 relative.
  bool per_token = false;
  double tokens_per_gpu_a = 0, tokens_per_gpu_b = 0;      // N / G: tokens per GPU per step
  double gpu_us_per_token_a = 0, gpu_us_per_token_b = 0;  // u = 1e6 T G / N
  double residual_us = 0;
};

Difference difference(const Prediction& a, const Prediction& b);

}  // namespace moesim::predict
