// predict/infer.hpp: `moesim infer`: one physical parameter of a GB200 journey step that
// has no published mechanism detail (calibration/infer_params.hpp), inferred from that
// step.
//
// Given the scenario before the step and the one after, which must differ in the
// parameter's stack switch (off before, on after), the parameter x solves
//
//   predicted(after; x) / predicted(before; x) = measured(after) / measured(before)
//
// by bisection over its physical range (the predicted ratio is monotone in x). Fitting
// the ratio rather than either absolute value keeps every other error of the model out
// of the parameter. reports/infer.hpp prints the result.
#pragma once

#include "calibration/infer_params.hpp"
#include "config/scenario.hpp"

namespace moesim::predict {

struct Inference {
  bool solved = false;
  double value = 0;                   // the parameter (solved)
  double measured_ratio = 0;          // measured(after) / measured(before)
  double predicted_ratio = 0;         // at value (solved) or the closer end (not solved)
  double ratio_lo = 0, ratio_hi = 0;  // predicted ratio at the ends of the range
  int iterations = 0;
};

// Throws config::InputError when the pair is not a before/after pair of the switch or
// lacks measured values of one metric.
Inference infer(const calibration::InferableParam& param, const config::Scenario& before,
                const config::Scenario& after);

}  // namespace moesim::predict
