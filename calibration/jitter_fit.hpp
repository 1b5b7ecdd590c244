// calibration/jitter_fit.hpp: the two per-step delays of predict/variability.hpp, fitted
// from MLPerf's fixed-recipe runs at scale (calibration/measurements/step-jitter-mlperf.json).
//
// Two kinds of lateness, told apart by how they grow with the job's N processes and how
// they spread over steps:
//   per process   each process finishes a step late by its own exponential delay of mean
//                 m = jitter_s; a synchronous step waits for the latest, mean m H_N (H_N
//                 the N-th harmonic number). Adding GPUs at a fixed recipe and microbatch
//                 count lengthens the step, beyond what the simulation itself gives (S:
//                 the pair's two scenario files predicted without these delays, `moesim
//                 calibrate jitter`), by
//                   step(N2) - step(N1) - S = m (H_N2 - H_N1)            ('pairs');
//   common        every process late together (the network, the storage, the cluster's
//                 power and clocks), a zero-mean normal of sd
//                   s(T) = common_s + common_fraction x T,
//                 which spreads the step over steps but does not grow with N.
// A step's spread p95 - median ('points') is taken as the two combined in quadrature:
//   spread^2 = (m k(N))^2 + (1.645 s)^2,
//   k(N) = ln(1 - 0.5^(1/N)) - ln(1 - 0.95^(1/N))  (the latest of N exponentials' spread
//          over its mean; about 2.60, independent of N: a Gumbel's).
// A per-process delay alone cannot carry both facts: the spread of 40-530 ms would need m
// of about 35 ms, whose m H_N (0.3 s at 10,000 GPUs) the weak-scaling pairs rule out
// (GPT-3 at GA 16: +12 ms from 4,096 to 8,192 GPUs). The fit runs in two stages, each a
// linear least squares kept non-negative:
//   1. jitter_s from the 'fit' pairs, each row divided by its mean step T (seeds differ by
//      a share of the step);
//   2. (common_s, common_fraction) from the 'fit' points' s = sqrt(max(0, spread^2 -
//      (m k(N))^2)) / 1.645, T the median (one of the two set to 0 and the other refitted
//      when the free solution has a negative part).
// Rows of other roles ('gap', 'check') are reported with the model's value, not fitted.
// A slow node that stays slow (system.variability.node_speed_sd) is not fitted here: with
// it, these pairs ask for a 2.3% sd of the nodes' pace, whose level (6-8% at 64-1,024
// nodes) the corpus's large MoE runs rule out (docs/MODEL.md); it is a what-if setting.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::calibration {

// k(N): the spread p95 - median of the latest of N unit-mean exponential delays.
double exponential_max_spread(double n);

struct JitterRow {  // a spread point
  std::string system, what, role;
  double gpus = 0, median_s = 0, measured_spread_s = 0, model_spread_s = 0;
};
struct JitterPair {  // a weak-scaling pair: same recipe and microbatches, more processes
  std::string system, what, role;
  double gpus_from = 0, gpus_to = 0, step_from_s = 0, step_to_s = 0, model_increase_s = 0;
  std::vector<std::string> scenarios;  // the two sizes' scenario files, when the pair has them
  double simulated_increase_s = 0;     // the simulation's own increase between them
};
struct JitterFit {
  double jitter_s = 0, common_s = 0, common_fraction = 0;
  std::vector<JitterRow> rows;
  std::vector<JitterPair> pairs;
  int fit_points = 0, fit_pairs = 0;
  double rms_error_s = 0;       // spread, over the fit points
  double pair_rms_error_s = 0;  // increase, over the fit pairs
};

// Reads the pairs (with their scenario files) and the points; throws std::invalid_argument
// on a malformed file.
JitterFit read_step_jitter(const nlohmann::json& measurements);
// Fits `in` (read_step_jitter's, each pair's simulated_increase_s set by the caller where
// it has scenarios). Throws std::invalid_argument on fewer than two fit pairs or points.
JitterFit fit_step_jitter(JitterFit in);
inline JitterFit fit_step_jitter(const nlohmann::json& measurements) {
  return fit_step_jitter(read_step_jitter(measurements));
}

// The calibration profile (calibration/profiles/step-jitter.json) carrying the values into
// every system preset (system.variability). `file`: the measurement file fitted (named by
// its file name under calibration/measurements/).
nlohmann::ordered_json jitter_profile_json(const JitterFit& fit, const std::string& file,
                                           const std::string& date);

}  // namespace moesim::calibration
