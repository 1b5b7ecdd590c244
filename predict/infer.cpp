#include "predict/infer.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {
namespace {

double predicted(const config::Scenario& base, const calibration::InferableParam& p, double x) {
  config::Scenario sc = base;
  p.set(sc.system, x);
  return predicted_metric(*sc.measured, predict(sc));
}

// The StackSwitches member a parameter's switch names (a test holds every name known).
bool workload::StackSwitches::*switch_member(std::string_view name) {
  for (const auto& s : workload::stack_switches())
    if (s.name == name) return s.member;
  throw std::logic_error("moesim infer: unknown stack switch '" + std::string(name) + "'");
}

}  // namespace

Inference infer(const calibration::InferableParam& param, const config::Scenario& before,
                const config::Scenario& after) {
  const auto stack = switch_member(param.stack_switch);
  for (const auto* sc : {&before, &after})
    if (!sc->measured)
      throw config::InputError(sc->file, "measured",
                               "the inference needs a measured value in both scenarios");
  for (const auto* sc : {&before, &after})
    if (!config::is_timing(sc->measured->metric))
      throw config::InputError(
          sc->file, "measured",
          "the inference needs a step time or throughput, not a memory figure");
  if (before.measured->metric != after.measured->metric)
    throw config::InputError(after.file, "measured",
                             "before and after must measure the same metric");
  if (before.stack.*stack || !(after.stack.*stack))
    throw config::InputError(
        after.file, "stack",
        fmt::format("{} belongs to a switch that must be off before and on after "
                    "(before: {}, after: {})",
                    param.name, before.stack.*stack, after.stack.*stack));
  Inference r;
  r.measured_ratio = after.measured->value / before.measured->value;
  const auto ratio = [&](double x) {
    return predicted(after, param, x) / predicted(before, param, x);
  };
  double lo = param.lo, hi = param.hi;
  r.ratio_lo = ratio(lo);
  r.ratio_hi = ratio(hi);
  const double f_lo = r.ratio_lo - r.measured_ratio, f_hi = r.ratio_hi - r.measured_ratio;
  if (f_lo * f_hi > 0) {
    const bool lo_closer = std::abs(f_lo) < std::abs(f_hi);
    r.value = lo_closer ? lo : hi;
    r.predicted_ratio = lo_closer ? r.ratio_lo : r.ratio_hi;
    return r;
  }
  // Bisection to a relative width of 1e-4 of the parameter.
  double flo = f_lo;
  while (hi - lo > 1e-4 * hi && r.iterations < 60) {
    const double mid = 0.5 * (lo + hi);
    const double f = ratio(mid) - r.measured_ratio;
    ++r.iterations;
    if ((f < 0) == (flo < 0)) {
      lo = mid;
      flo = f;
    } else {
      hi = mid;
    }
  }
  r.solved = true;
  r.value = 0.5 * (lo + hi);
  r.predicted_ratio = ratio(r.value);
  return r;
}

}  // namespace moesim::predict
