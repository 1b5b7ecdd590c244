#include "reports/infer.hpp"

#include <fmt/format.h>

namespace moesim::reports {

nlohmann::ordered_json infer_json(const calibration::InferableParam& param,
                                  const predict::Inference& r) {
  return {{"param", param.name},
          {"solved", r.solved},
          {"value", r.value},
          {"measured_ratio", r.measured_ratio},
          {"predicted_ratio", r.predicted_ratio},
          {"range", {param.lo, param.hi}},
          {"ratio_at_range", {r.ratio_lo, r.ratio_hi}},
          {"iterations", r.iterations}};
}

std::string infer_text(const calibration::InferableParam& param, const predict::Inference& r) {
  if (r.solved)
    return fmt::format(
        "{} = {:.4g}  (after/before: measured {:.4f}, predicted {:.4f}; {} bisection steps)\n",
        param.name, r.value, r.measured_ratio, r.predicted_ratio, r.iterations);
  return fmt::format(
      "{}: no value in [{:g}, {:g}] reproduces the step: the model predicts after/before "
      "between {:.4f} and {:.4f}, measured {:.4f}\n",
      param.name, param.lo, param.hi, r.ratio_lo, r.ratio_hi, r.measured_ratio);
}

}  // namespace moesim::reports
