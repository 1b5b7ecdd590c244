// predict/bands.hpp: an interval around a prediction from the validation record (issue #45
// item 3), by split-conformal prediction over out-of-sample residuals.
//
// Residuals: every timing run of the corpus (the measured scenarios `calibrate corpus`
// reads) has q_i = predicted step / measured step out of sample: its leave-one-out
// prediction where it is fitted, its prediction at the fitted values where it is held out
// (never fitted, so out of sample by construction); `calibrate corpus` writes them to
// calibration/profiles/corpus.json (`runs[].step_ratio`, with the run's GPU).
// Pool: the runs on the scenario's GPU when there are at least kBandStratumMin of them,
// else every run (the basis says which).
// Band: with the pool's n ratios sorted, q_(1) <= ... <= q_(n), and level L (0.8),
//   k_lo = max(1, floor((n + 1) (1 - L) / 2)),  k_hi = min(n, ceil((n + 1) (1 + L) / 2)),
// a measured step is T / q for a prediction T, so the band of the step is
//   [ T / q_(k_hi),  T / q_(k_lo) ]
// (the finite-sample conformal quantiles: for a run exchangeable with the pool the band
// holds its measurement with probability at least L). Throughputs scale as 1 / step.
// Coverage (band_coverage): each run's own q against the band of its pool without it.
#pragma once

#include <string>
#include <vector>

namespace moesim::predict {

inline constexpr double kBandLevel = 0.8;
inline constexpr int kBandStratumMin = 12;

struct BandResidual {
  std::string name, gpu;
  double step_ratio = 1;  // predicted / measured step, out of sample
};

// The corpus profile's residuals (compiled in); empty if the profile has none.
const std::vector<BandResidual>& corpus_residuals();

struct Band {
  double lo = 0, hi = 0;  // the step time's band, seconds (lo <= hi)
  double level = kBandLevel;
  int pool = 0;       // residuals it rests on (0: no band)
  std::string basis;  // which pool, in words
};
// The band of a predicted step `step_s` on `gpu` (a gpu.name), from `pool` but `skip` (a
// run's name, for coverage); pool 0 when fewer than 2 residuals remain.
Band step_band(double step_s, const std::string& gpu, const std::vector<BandResidual>& pool,
               const std::string& skip = "", double level = kBandLevel);

// A what-if ratio's band (B's per-GPU throughput over A's): the same method over the
// measured pairs' out-of-sample ratio errors, predicted ratio / measured ratio (each pair's
// runs left out of the corpus fit: `calibrate corpus`'s `pairs[].loo_ratio`), all pairs
// pooled (no decision kind has enough of them alone): [ r / e_(k_hi), r / e_(k_lo) ].
const std::vector<double>& corpus_pair_residuals();
Band ratio_band(double ratio, const std::vector<double>& residuals, double level = kBandLevel);

struct BandCoverage {
  int runs = 0, inside = 0;
  double pct() const { return runs ? 100.0 * inside / runs : 0; }
};
// Each residual's run against its own band from the pool without it.
BandCoverage band_coverage(const std::vector<BandResidual>& pool, double level = kBandLevel);
// The same for the pairs' ratio errors (ratio_band).
BandCoverage ratio_band_coverage(const std::vector<double>& residuals, double level = kBandLevel);

}  // namespace moesim::predict
