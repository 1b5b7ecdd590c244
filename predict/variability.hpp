// predict/variability.hpp: what a step loses to its slowest participant, and how the step
// time spreads over steps.
//
// The step simulation prices one step with every process at the same pace and every DP
// replica routing the same (mean) expert load. A real synchronous step ends when its last
// process does: the DP gradient reduction, at least once per step, waits for all of them.
// Two independent sources of lateness, summed:
//
//   process jitter   each of the job's N processes (one per GPU) finishes the step late
//                    by an exponential delay of mean m = jitter_s + jitter_fraction x T
//                    (system.variability; T the simulated step), fitted from the per-step
//                    spread of MLPerf runs at 256-8,192 GPUs (calibration/jitter_fit.hpp).
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
// straggler_wait = E[J] + E[Rn] joins the breakdown (its own term, apart from the
// schedule's bubble and stage imbalance) and the mean step time; the step's median and
// 95th percentile over steps are T + the quantiles of J + Rn (independent: the CDF of
// their sum by quadrature over Rn's density). Deterministic: no draws beyond the routing
// model's seeded ones.
// Not modeled: per-node sustained speed differences that persist over steps (a slow node
// stays slow), rare long pauses (scheduled garbage collection, checkpoints), failures.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::predict {

struct StepSpread {
  double jitter_wait_s = 0;   // E[J]
  double routing_wait_s = 0;  // E[Rn]
  double wait_s = 0;          // their sum: breakdown.straggler_wait
  double p50_wait_s = 0, p95_wait_s = 0;
  std::int64_t processes = 0;    // N
  std::int64_t ep_groups = 0;    // R
  double load_cv = 0;            // cv_G
};

// `step`: the simulated step (T and the critical rank's breakdown).
StepSpread step_spread(const config::Scenario& sc, const schedules::StepResult& step);

// The expected maximum of n standard normals (0 for n <= 1).
double expected_max_normal(std::int64_t n);
// The n-th harmonic number.
double harmonic(std::int64_t n);

}  // namespace moesim::predict
