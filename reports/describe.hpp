// reports/describe.hpp: what a scenario resolves to, without simulating: parameter
// counts, Megatron-accounted FLOPs, derived parallel sizes, layers per pipeline stage
// and every resolved setting (`moesim describe`, docs/SCENARIO_FORMAT.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "predict/predict.hpp"

namespace moesim::reports {

// The derived figures both renderings print (predict/predict.hpp).

nlohmann::ordered_json describe_json(const config::Scenario& sc);
std::string describe_text(const config::Scenario& sc);

}  // namespace moesim::reports
