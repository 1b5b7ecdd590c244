// calibration/bisect.hpp: one-parameter searches: the value at which a model reproduces one
// measurement, for models that rise monotonically with the parameter (bisection), and the
// minimum of a unimodal cost (golden section).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace moesim::calibration {

// x in [lo, hi] with model(x) = target, by bisection (60 halvings). Throws
// std::invalid_argument, naming `what`, when the target lies outside [model(lo), model(hi)].
template <class Model>
double bisect_rising(Model&& model, double target, double lo, double hi, const std::string& what) {
  if (model(lo) > target || model(hi) < target)
    throw std::invalid_argument(fmt::format(
        "{}: the measured {:.4g} is outside what values {:g}-{:g} give", what, target, lo, hi));
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (model(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// The golden-section minimum of a unimodal f on [lo, hi] after `iterations` narrowings (each
// keeps 0.618 of the bracket and costs one evaluation of f); on a plateau, its lower end.
template <class F>
double golden_min(F&& f, double lo, double hi, int iterations = 50) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  for (int i = 0; i < iterations; ++i) {
    if (fc <= fd) {  // ties (a flat stretch where another limit binds) go to the lower side
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = f(d);
    }
  }
  return 0.5 * (a + b);
}

}  // namespace moesim::calibration
