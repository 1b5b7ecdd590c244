// predict/bands.hpp: an interval around a prediction from the validation record (issue #45
// item 3), by split-conformal prediction over out-of-sample residuals.
//
// Residuals: every timing run of the corpus (the measured scenarios `calibrate corpus`
// reads) has q_i = predicted step / measured step out of sample: its leave-one-out
// prediction where it is fitted, its prediction at the fitted values where it is held out
// (never fitted, so out of sample by construction); `calibrate corpus` writes them to
// calibration/profiles/corpus.json (`runs[].step_ratio`, with the run's GPU).
// Pool, the first of these that is large enough (the basis says which):
//   the runs of the scenario's model (by name, any GPU), at least kBandModelMin of them:
//     moesim's errors cluster by model (every GPT-OSS 120B run's step predicted 9-42% short,
//     every Moonlight run's 24-27%, where DeepSeek-V3's fall both sides), so a band pooled
//     over models is too narrow for the ones it misses and too wide for the ones it
//     prices well (Mondrian conformal prediction: exchangeable within a stratum);
//   the runs on the scenario's GPU, at least kBandStratumMin;
//   every run.
// With n < 9 residuals an 80% band is the pool's whole range, which holds a new run with
// probability (n - 1) / (n + 1) only (67% at n = 5): the coverage over the corpus, left out
// run by run, is what calibrate corpus reports and a test holds at 75-90%.
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
inline constexpr int kBandModelMin = 5;

struct BandResidual {
  std::string name, gpu, model;  // model: workload::ModelConfig::name (kUnnamedModel: none)
  double step_ratio = 1;         // predicted / measured step, out of sample
};

// The corpus profile's residuals (compiled in); empty if the profile has none.
const std::vector<BandResidual>& corpus_residuals();

struct Band {
  double lo = 0, hi = 0;  // the step time's band, seconds (lo <= hi)
  double level = kBandLevel;
  int pool = 0;       // residuals it rests on (0: no band)
  std::string basis;  // which pool, in words
};
// The band of a predicted step `step_s` of `model` (a ModelConfig::name) on `gpu` (a
// gpu.name), from `pool` but `skip` (a run's name, for coverage); pool 0 when fewer than 2
// residuals remain.
Band step_band(double step_s, const std::string& gpu, const std::string& model,
               const std::vector<BandResidual>& pool, const std::string& skip = "",
               double level = kBandLevel);
// The same from the corpus profile's residuals (what run, sweep and plan print).
Band corpus_step_band(double step_s, const std::string& gpu, const std::string& model);

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
