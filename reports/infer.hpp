// reports/infer.hpp: `moesim infer`: the one physical parameter of a journey step that
// has no published mechanism detail, inferred from that step.
//
// The GB200 journey (shared/reference/gb200-journey.md) publishes three steps without
// the detail needed to model them from independent data: 7 (DeepEP tuned), 8 (NUMA
// binding) and 12 (slimmer Transformer Engine host code). For each, the issue allows one
// physical parameter to be inferred from that step alone. Given the scenario before the
// step and the one after, which must differ in the parameter's stack switch (off before,
// on after), the parameter x solves
//
//   predicted(after; x) / predicted(before; x) = measured(after) / measured(before)
//
// by bisection over its physical range (the predicted ratio is monotone in x). Fitting
// the ratio rather than either absolute value keeps every other error of the model out
// of the parameter. It is a diagnostic: no preset holds a value inferred from one step
// (the NUMA and DeepEP-tuning quantities are fitted across the corpus, reports/corpus.hpp).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/scenario.hpp"

namespace moesim::reports {

struct InferableParam {
  std::string_view name;
  std::string_view help;
  double lo, hi;                        // physical range searched
  bool workload::StackSwitches::*stack; // the switch the parameter belongs to
  void (*set)(hw_models::SystemSpec&, double);
};
std::span<const InferableParam> inferable_params();
const InferableParam* find_inferable(std::string_view name);

struct Inference {
  bool solved = false;
  double value = 0;                 // the parameter (solved)
  double measured_ratio = 0;        // measured(after) / measured(before)
  double predicted_ratio = 0;       // at value (solved) or the closer end (not solved)
  double ratio_lo = 0, ratio_hi = 0;  // predicted ratio at the ends of the range
  int iterations = 0;
};

// Throws config::InputError when the pair is not a before/after pair of the switch or
// lacks measured values of one metric.
Inference infer(const InferableParam& param, const config::Scenario& before, const config::Scenario& after);

}  // namespace moesim::reports
