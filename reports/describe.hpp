// reports/describe.hpp: what a scenario resolves to, without simulating: parameter
// counts, Megatron-accounted FLOPs, derived parallel sizes, layers per pipeline stage
// and every resolved setting (`moesim describe`, shared/design/SCENARIO_FORMAT.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "workload/flops.hpp"

namespace moesim::reports {

// Derived figures shared by the text and JSON renderings.
struct ScenarioSummary {
  workload::ParamCounts params;
  workload::FlopsPerToken flops;  // per token
  double flops_per_token = 0;
  double flops_per_step = 0;      // per global batch
  double tokens_per_step = 0;
};

ScenarioSummary summarize(const config::Scenario& sc);
nlohmann::ordered_json describe_json(const config::Scenario& sc);
std::string describe_text(const config::Scenario& sc);

}  // namespace moesim::reports
