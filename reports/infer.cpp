#include "reports/infer.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "reports/run.hpp"

namespace moesim::reports {
namespace {

hw_models::Param inferred(double x) { return {x, "inferred by moesim infer"}; }

constexpr std::array<InferableParam, 3> kParams{{
    {"numa_unbound_factor", "host costs x this without NUMA binding (journey step 8)", 1.0, 4.0,
     &workload::StackSwitches::cpu_numa_binding,
     [](hw_models::SystemSpec& s, double x) { s.host.numa_unbound_factor = inferred(x); }},
    {"te_slim_factor", "Transformer Engine module host time x this with the slim host code (step 12)", 0.05,
     1.0, &workload::StackSwitches::te_host_slim,
     [](hw_models::SystemSpec& s, double x) { s.host.te_slim_factor = inferred(x); }},
    {"deepep_tuned_factor", "DeepEP kernels' bandwidth x this once NVIDIA tuned them (step 7)", 1.0, 5.0,
     &workload::StackSwitches::deepep_tuned,
     [](hw_models::SystemSpec& s, double x) { s.ep_dispatch.deepep_tuned_factor = inferred(x); }},
}};

double predicted(const config::Scenario& base, const InferableParam& p, double x) {
  config::Scenario sc = base;
  p.set(sc.system, x);
  return predict::predicted_metric(*sc.measured, predict::predict(sc));
}

}  // namespace

std::span<const InferableParam> inferable_params() { return kParams; }

const InferableParam* find_inferable(std::string_view name) {
  for (const auto& p : kParams)
    if (p.name == name) return &p;
  return nullptr;
}

Inference infer(const InferableParam& param, const config::Scenario& before, const config::Scenario& after) {
  for (const auto* sc : {&before, &after})
    if (!sc->measured)
      throw config::InputError(sc->file, "measured", "the inference needs a measured value in both scenarios");
  if (before.measured->metric != after.measured->metric)
    throw config::InputError(after.file, "measured", "before and after must measure the same metric");
  if (before.stack.*param.stack || !(after.stack.*param.stack))
    throw config::InputError(after.file, "stack",
                             fmt::format("{} belongs to a switch that must be off before and on after "
                                         "(before: {}, after: {})",
                                         param.name, before.stack.*param.stack, after.stack.*param.stack));
  Inference r;
  r.measured_ratio = after.measured->value / before.measured->value;
  const auto ratio = [&](double x) { return predicted(after, param, x) / predicted(before, param, x); };
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

}  // namespace moesim::reports
