// sim_core/extreme_values.hpp: order statistics of independent draws, shared by the
// routing model (workload/routing.hpp: the hottest expert), the straggler model
// (predict/variability.hpp: the slowest process, replica and node) and its fit
// (calibration/jitter_fit.hpp).
//
//   over_max_normal(n, f)   E[f(M)] for M the largest of n standard normals: the integral
//                           of f(z) n phi(z) Phi(z)^(n-1) over z in [-8, 8] by Simpson's
//                           rule with `steps` (even) intervals
//   expected_max_normal(n)  E[M] (0 for n <= 1; 1 / sqrt(pi) for n = 2)
//   harmonic_number(n)      H_n = 1 + 1/2 + ... + 1/n, the mean of the largest of n
//                           unit-mean exponentials; summed up to 10,000, past it
//                           ln n + 0.5772 + 1 / 2n - 1 / 12n^2
#pragma once

#include <cmath>
#include <numbers>

namespace moesim::sim_core {

// The standard normal's 95th percentile.
inline constexpr double kNormalQ95 = 1.6448536269514722;

template <class F>
double over_max_normal(double n, F f, int steps) {
  const double a = -8, h = 16.0 / steps;
  double sum = 0;
  for (int i = 0; i <= steps; ++i) {
    const double z = a + i * h;
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    const double Phi = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    sum += f(z) * n * phi * std::pow(Phi, n - 1) * (i == 0 || i == steps ? 1 : i % 2 ? 4 : 2);
  }
  return sum * h / 3;
}

inline double expected_max_normal(double n) {
  if (n <= 1) return 0;
  return over_max_normal(
      n, [](double z) { return z; }, 2000);
}

inline double harmonic_number(double n) {
  if (n < 1) return 0;
  if (n <= 10000) {
    double h = 0;
    for (double i = std::floor(n); i >= 1; --i) h += 1.0 / i;
    return h;
  }
  return std::log(n) + 0.57721566490153286 + 1 / (2 * n) - 1 / (12 * n * n);
}

}  // namespace moesim::sim_core
