// calibration/saturation_fit.hpp: a throughput that saturates with a size,
//   y(x) = A x / (x + x0),
// fitted in log space (relative errors): for each x0 the best A is the geometric mean of
// y (x + x0) / x, and x0 minimizes the squared log residuals (golden-section search over
// ln x0 in [1, 1e7]). Used for attention efficiency against sequence length (per GPU
// generation, hw_models::Efficiency::attention_seq_half_*): the fixed per-tile work of
// a fused attention kernel (softmax rescaling, the causal diagonal, the epilogue) is
// amortized over longer key sequences.
#pragma once

#include <vector>

namespace moesim::calibration {

struct SaturationFit {
  double half = 0;   // x0: the size at which y reaches half of A
  double scale = 0;  // A: the limit for large x
  double rms_residual_pct = 0, max_abs_residual_pct = 0;
};

// Throws std::invalid_argument with fewer than two points or non-positive values.
SaturationFit fit_saturation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace moesim::calibration
