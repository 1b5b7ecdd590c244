// calibration/infer_params.hpp: the physical parameters `moesim infer` may infer from a
// single GB200 journey step (docs/reference/gb200-journey.md), with their physical
// ranges and where each is written into a system. The inference itself (bisection on the
// predicted after/before ratio) is predict/infer.hpp.
//
// The journey publishes three steps without the detail needed to model them from
// independent data: 7 (DeepEP tuned), 8 (NUMA binding) and 12 (slimmer Transformer Engine
// host code). Each parameter belongs to one stack switch (workload::stack_switches(), by
// name), which must be off before the step and on after it. It is a diagnostic: no preset
// holds a value inferred from one step (the NUMA and DeepEP-tuning quantities are fitted
// across the corpus, calibration/corpus_params.hpp).
#pragma once

#include <span>
#include <string_view>

#include "hw_models/system.hpp"

namespace moesim::calibration {

struct InferableParam {
  std::string_view name;
  std::string_view help;
  double lo, hi;  // physical range searched
  std::string_view
      stack_switch;  // the switch the parameter belongs to (workload::stack_switches())
  void (*set)(hw_models::SystemSpec&, double);
};
std::span<const InferableParam> inferable_params();
const InferableParam* find_inferable(std::string_view name);

}  // namespace moesim::calibration
