// calibration/gemm_k_fit.hpp: how GEMM efficiency falls with the reduction dimension K.
//
// Each output tile pays a fixed cost (pipeline fill, epilogue writing the tile) beside
// its K loop, so a tile takes c (K + K0) and the achieved fraction of peak is
//
//   eta(K) = eta_inf x K / (K + K0)      <=>      1 / eta = 1 / eta_inf + (K0 / eta_inf) / K
//
// with wave quantization divided out of the measured efficiency first (the caller does
// that with the compute model's tile waves). The second form is linear in 1/K and is
// fitted by least squares over measured points (calibration/measurements/*.json). The
// compute model multiplies its large-shape efficiency by K / (K + K0), normalised to the
// K at which that efficiency was measured.
#pragma once

#include <vector>

#include "calibration/least_squares.hpp"

namespace moesim::calibration {

struct KOverheadFit {
  double eta_inf = 0;                  // efficiency as K grows without bound
  double k0 = 0;                       // per-tile fixed cost in units of K
  LinearFit fit;                       // of 1/eta on [1, 1/K]
  std::vector<double> relative_error;  // predicted / measured efficiency - 1, per point
};

// `k` and `efficiency` (wave quantization divided out) per point; at least two distinct K.
// Throws std::invalid_argument on mismatched sizes, fewer than two points, or an
// efficiency outside (0, 1].
KOverheadFit fit_k_overhead(const std::vector<double>& k, const std::vector<double>& efficiency);

// Groups of points (dense and grouped GEMMs) that share K0 but each have their own
// eta: 1 / e = (1 / eta_g) (1 + K0 / K), least squares in 1 / e as above. Given K0 each
// group's 1 / eta is linear (closed form); K0 minimises the summed squares by a
// golden-section search over [0, 1e5]. With one group it is fit_k_overhead's optimum.
struct SharedKFit {
  double k0 = 0;
  std::vector<double> eta_inf;         // per group (0 where a group has no point)
  std::vector<double> relative_error;  // per point, as above
};
SharedKFit fit_k_overhead_shared(const std::vector<double>& k,
                                 const std::vector<double>& efficiency,
                                 const std::vector<int>& group, int groups);
// One group's eta for a given K0 (the closed form above).
double eta_for_k0(const std::vector<double>& k, const std::vector<double>& efficiency, double k0);

// GEMMs timed one call at a time (a CUDA event pair around each: XLA's tables) also pay a
// fixed time per call t0 that a stream of kernels overlaps in training. With w the
// call's time at the peak with its wave quantization (F / (P q)):
//
//   T = t0 + w / eta + (w / K) (K0 / eta)
//
// linear in (t0, 1 / eta, K0 / eta); least squares on relative error (each row divided by
// its measured T). Throws std::invalid_argument on mismatched sizes, fewer than three
// points, points that do not separate the three (fewer than two distinct K), non-positive
// inputs, or a fit outside the model's range (eta outside (0, 1], K0 or t0 negative).
struct TimedKFit {
  double t0_s = 0, eta_inf = 0, k0 = 0;
  std::vector<double> relative_error;  // predicted / measured time - 1, per point
};
TimedKFit fit_k_overhead_timed(const std::vector<double>& work_s, const std::vector<double>& k,
                               const std::vector<double>& time_s);

}  // namespace moesim::calibration
