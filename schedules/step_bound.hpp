// schedules/step_bound.hpp: a lower bound on the step time simulate_step() would give,
// from the same kernel prices (schedules/kernel_pricing.hpp) without running the engine:
// what `moesim plan` (cli/plan.cpp, predict/plan.hpp) orders and prunes its candidates
// by. About the cost of pricing the kernels once, a small fraction of a simulation.
//
// Why it bounds (sim_core/gpu.hpp's fluid SM pool): a kernel declaring s SMs and w
// seconds alone progresses at rate a / s <= 1 when given a <= s SMs, and the kernels a
// GPU runs at once are given at most its S SMs together. So a kernel takes at least w,
// and any set of kernels on one GPU takes at least sum(s_k w_k) / S (copy-engine and
// network kernels, s < 0, hold no SMs and are left out; s = 0 means all S). Kernels of
// one stream run one after another, so the compute stream's step-end work (the gradient
// norm, its all-reduce, clipping, the loss all-reduce, the optimizer: rank_program_dp.cpp,
// launched after the last backward) adds its plain durations. For a pipeline rank r:
//   W_r  = sum over its work items (pipeline_order) of the items' layer kernels' s w / S
//   O_r  = grad norm + norm all-reduce + clip (+ loss all-reduce on the last stage)
//          + optimizer over the rank's parameters
//   T   >= W_r + O_r
// Megatron's schedules (1F1B, interleaved 1F1B, with or without the all-to-all overlap)
// add the schedule's edges: rank r's first forward waits for microbatch 0's forward
// through virtual stages 0 .. r-1 (F_r, each stage's forward work as above), and its last
// item, the last microbatch's backward of model chunk 0, is followed by that backward on
// ranks r-1 .. 0 (B_r), after which rank 0 steps its optimizer:
//   T   >= F_r + W_r + max(O_r, B_r + O_0)
// (1F1B's bubble (p - 1)(f + b) / vpp for equal stages). One host thread launches every
// kernel of a rank (sim_core/host.hpp), each costing its host seconds unless a CUDA graph
// captured it, and no kernel ends before its launch:
//   T   >= H_r = sum over its work items of the layer kernels' host seconds, captured ones
//              left out (the graphs' own launches, and the schedule's Python, only add) The
//              zero-bubble family reorders
// weight gradients past those edges and keeps the first bound only. The bound ignores
// host time, communication outside the SMs, waits on the other DP replicas and the
// straggler model's wait (predict/variability.hpp), all of which only add; `moesim plan`
// counts any simulated step under its bound as a violation and its test holds them at 0.
#pragma once

#include "schedules/step_sim.hpp"

namespace moesim::schedules {

struct StepBound {
  double step_time_s = 0;                                // max over the ranks of the bounds above
  int rank = 0;                                          // the rank that sets it
  double layer_work_s = 0, edges_s = 0, step_end_s = 0;  // that rank's W_r, F_r + B_r, O_r
  double host_s = 0;                                     // and H_r
};

// Throws what the kernel pricing throws for a scenario it cannot price (never for one the
// loader accepted and simulate_step() would simulate).
StepBound step_lower_bound(const StepInput& in, const hw_models::CommModel& comm,
                           hw_models::FlowCache* ep_cache = nullptr);

}  // namespace moesim::schedules
