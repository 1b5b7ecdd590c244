// predict/variability.hpp: what a step loses to its slowest participant, and how the step
// time spreads over steps.
//
// The step simulation prices one step with every process at the same pace and every DP
// replica routing the same (mean) expert load. A real synchronous step ends when its last
// process does: the DP gradient reduction, at least once per step, waits for all of them.
// Three independent sources of lateness, summed:
//
//   node pace        each of the job's K nodes (system.node.gpus_per_node GPUs each) runs
//                    slower than the simulated pace by a normal share of sd s =
//                    node_speed_sd that stays from step to step (thermals, clocks, a
//                    degraded link; MegaScale's 10%-slow hosts); a synchronous step runs at
//                    the slowest node's: W = T s m_K (m_K the expected largest of K standard
//                    normals), the same every step;
//   process jitter   each of the job's N processes (one per GPU) finishes the step late
//                    by an exponential delay of mean m = jitter_s + jitter_fraction x T
//                    (system.variability; T the simulated step), fitted from how MLPerf's
//                    steps lengthen at a fixed recipe and microbatch count as GPUs are
//                    added (calibration/jitter_fit.hpp).
//                    The latest of N: J = max_i D_i with CDF F_J(x) = (1 - e^(-x/m))^N,
//                    mean E[J] = m H_N (H_N the N-th harmonic number, ln N + 0.5772 +
//                    1 / 2N for large N), quantiles x_q = -m ln(1 - q^(1/N)).
//   routing          under sampled or trained routing every DP replica's EP group routes
//                    its own microbatches: the load-proportional part of its step (the
//                    critical rank's expert, permute and unpermute compute and exposed EP
//                    communication, L) varies by the per-(layer, microbatch) spread of the
//                    hottest rank's load cv_G (workload::ep_load_cv) averaged over its
//                    n = MoE layers per rank x microbatches units: a replica's step is
//                    normal with sd s = L cv_G / sqrt(n). The step waits for the latest of
//                    the R = expert-DP groups of a stage: Rn = s max_r Z_r, CDF
//                    Phi(x / s)^R, mean s m_R (m_R the expected maximum of R standard
//                    normals, by quadrature; m_1 = 0).
//
// straggler_wait = W + E[J] + E[Rn] joins the breakdown (its own term, apart from the
// schedule's bubble and stage imbalance) and the mean step time. Over steps, every
// process is also late together by a zero-mean normal C of sd c = common_s +
// common_fraction x T (system.variability, fitted to what of MLPerf's per-step spreads J
// does not explain): it moves the quantiles, not the mean. The step's median and 95th
// percentile are T + W + the quantiles of J + Rn (independent: the CDF of their sum by
// quadrature over Rn's density), the 95th with C added in quadrature to its distance from
// the median: p95 = p50 + sqrt((x95 - x50)^2 + (1.645 c)^2) (an approximation of the
// sum's quantile, exact when J + Rn is normal). Deterministic: no draws beyond the
// routing model's seeded ones.
// Not modeled: rare long pauses (scheduled garbage collection, checkpoints), failures.
#pragma once

#include <cstdint>
#include <string>

#include "config/scenario.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::predict {

struct StepSpread {
  double node_wait_s = 0;     // W
  std::int64_t nodes = 0;     // K
  double jitter_wait_s = 0;   // E[J]
  double routing_wait_s = 0;  // E[Rn]
  double wait_s = 0;          // W + E[J] + E[Rn]: breakdown.straggler_wait
  double p50_wait_s = 0, p95_wait_s = 0;
  double common_sd_s = 0;      // c
  std::int64_t processes = 0;  // N
  std::int64_t ep_groups = 0;  // R
  double load_cv = 0;          // cv_G
};

// `step`: the simulated step (T and the critical rank's breakdown).
StepSpread step_spread(const config::Scenario& sc, const schedules::StepResult& step);

}  // namespace moesim::predict
