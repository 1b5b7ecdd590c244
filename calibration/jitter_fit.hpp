// calibration/jitter_fit.hpp: the per-process step delay of predict/variability.hpp,
// fitted from per-step time statistics measured at scale
// (calibration/measurements/step-jitter-mlperf.json).
//
// Each of the job's N processes finishes a step late by an exponential delay of mean
//   m(T) = jitter_s + jitter_fraction x T      (T the step without stragglers)
// and a synchronous step waits for the latest. The latest of N such delays has the CDF
// (1 - exp(-x / m))^N, so its q-quantile is x_q = -m ln(1 - q^(1/N)) and a measured step
// distribution's spread is
//   p95 - median = m(T) k(N),   k(N) = ln(1 - 0.5^(1/N)) - ln(1 - 0.95^(1/N))   (about 2.60),
// independent of N (the maximum of exponentials is Gumbel with scale m): the MLPerf
// series show it, an absolute spread of 40-530 ms from 256 to 8,192 GPUs. The two
// parameters are the linear least-squares solution of p95 - median = (a + b T) k(N) over
// the 'fit' points (T taken as the median); 'gap' points are reported, not fitted.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::calibration {

// k(N): the spread p95 - median of the latest of N unit-mean exponential delays.
double exponential_max_spread(double n);

struct JitterRow {
  std::string system, what, role;
  double gpus = 0, median_s = 0, measured_spread_s = 0, model_spread_s = 0;
};
struct JitterFit {
  double jitter_s = 0, jitter_fraction = 0;
  std::vector<JitterRow> rows;
  int fit_points = 0;
  double rms_error_s = 0;  // over the fit points
};

// Throws std::invalid_argument on a malformed file or fewer than two fit points.
JitterFit fit_step_jitter(const nlohmann::json& measurements);

// The calibration profile (calibration/profiles/step-jitter.json) carrying the values into
// every system preset (system.variability). `file`: the measurement file fitted (named by
// its file name under calibration/measurements/).
nlohmann::ordered_json jitter_profile_json(const JitterFit& fit, const std::string& file, const std::string& date);

}  // namespace moesim::calibration
