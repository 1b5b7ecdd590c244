// calibration/gemm_k_fit.hpp: how GEMM efficiency falls with the reduction dimension K.
//
// Each output tile pays a fixed cost (pipeline fill, epilogue writing the tile) beside
// its K loop, so a tile takes c (K + K0) and the achieved fraction of peak is
//
//   eta(K) = eta_inf x K / (K + K0)      <=>      1 / eta = 1 / eta_inf + (K0 / eta_inf) / K
//
// with wave quantization divided out of the measured efficiency first (the caller does
// that with the compute model's tile waves). The second form is linear in 1/K and is
// fitted by least squares over measured points (calibration/profiles/*.json). The
// compute model multiplies its large-shape efficiency by K / (K + K0), normalised to the
// K at which that efficiency was measured.
#pragma once

#include <vector>

#include "calibration/least_squares.hpp"

namespace moesim::calibration {

struct KOverheadFit {
  double eta_inf = 0;  // efficiency as K grows without bound
  double k0 = 0;       // per-tile fixed cost in units of K
  LinearFit fit;       // of 1/eta on [1, 1/K]
  std::vector<double> relative_error;  // predicted / measured efficiency - 1, per point
};

// `k` and `efficiency` (wave quantization divided out) per point; at least two distinct K.
// Throws std::invalid_argument on mismatched sizes, fewer than two points, or an
// efficiency outside (0, 1].
KOverheadFit fit_k_overhead(const std::vector<double>& k, const std::vector<double>& efficiency);

}  // namespace moesim::calibration
