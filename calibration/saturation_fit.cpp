#include "calibration/saturation_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calibration/bisect.hpp"

namespace moesim::calibration {

SaturationFit fit_saturation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2)
    throw std::invalid_argument("fit_saturation: need two or more points");
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(x[i] > 0) || !(y[i] > 0))
      throw std::invalid_argument("fit_saturation: sizes and values must be positive");
  // For a given ln x0: the log residuals about their mean (the best ln A) and their sum of squares.
  const auto cost = [&](double lx0, double* ln_a) {
    const double x0 = std::exp(lx0);
    double mean = 0;
    for (std::size_t i = 0; i < x.size(); ++i) mean += std::log(y[i] * (x[i] + x0) / x[i]);
    mean /= static_cast<double>(x.size());
    double ss = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = std::log(y[i] * (x[i] + x0) / x[i]) - mean;
      ss += r * r;
    }
    if (ln_a) *ln_a = mean;
    return ss;
  };
  SaturationFit f;
  double ln_a = 0;
  const double lx0 =
      golden_min([&](double l) { return cost(l, nullptr); }, 0.0, std::log(1e7), 200);
  cost(lx0, &ln_a);
  f.half = std::exp(lx0);
  f.scale = std::exp(ln_a);
  double ss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double pct = 100 * (f.scale * x[i] / (x[i] + f.half) / y[i] - 1);
    ss += pct * pct;
    f.max_abs_residual_pct = std::max(f.max_abs_residual_pct, std::abs(pct));
  }
  f.rms_residual_pct = std::sqrt(ss / static_cast<double>(x.size()));
  return f;
}

}  // namespace moesim::calibration
