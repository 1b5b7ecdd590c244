// calibration/bisect.hpp: the value of one parameter at which a model reproduces one
// measurement, for models that rise monotonically with the parameter.
#pragma once

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

}  // namespace moesim::calibration
