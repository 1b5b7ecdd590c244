// reports/run.hpp: `moesim run`: one prediction (predict/predict.hpp) as text, as one
// JSON object (the contract's `run --json`) and as a Chrome/Perfetto trace. Formatting
// only: what the numbers mean is said in predict/predict.hpp and predict/memory.hpp.
#pragma once

#include <array>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "predict/predict.hpp"

namespace moesim::reports {


// A module array of the breakdown (schedules::Breakdown) as (name, seconds), largest
// first; "outside_layers" for pipeline transfers, DP collectives and the optimizer.
using ModuleSeconds = std::array<double, workload::kModuleCount + 1>;
std::vector<std::pair<std::string, double>> by_module(const ModuleSeconds& seconds);

nlohmann::ordered_json run_json(const config::Scenario& sc, const predict::Prediction& p);
std::string run_text(const config::Scenario& sc, const predict::Prediction& p);
// Chrome trace event format (chrome://tracing, ui.perfetto.dev): one process per
// simulated rank, one thread per GPU stream plus the host thread.
void write_trace(const predict::Prediction& p, std::ostream& out);

}  // namespace moesim::reports
