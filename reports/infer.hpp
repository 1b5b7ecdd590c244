// reports/infer.hpp: `moesim infer`'s result (predict/infer.hpp) as JSON and as text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "predict/infer.hpp"

namespace moesim::reports {

nlohmann::ordered_json infer_json(const calibration::InferableParam& param,
                                  const predict::Inference& r);
// The value with the ratios it reproduces, or why no value in the range does.
std::string infer_text(const calibration::InferableParam& param, const predict::Inference& r);

}  // namespace moesim::reports
