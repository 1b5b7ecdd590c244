// reports/trace.hpp: `moesim calibrate trace`'s table: a profiled trace's kernels by class
// (calibration/kineto_trace.hpp) and, with a scenario, the simulation's over the same
// window (predict/trace_compare.hpp), as text or one JSON object.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/kineto_trace.hpp"
#include "predict/trace_compare.hpp"

namespace moesim::reports {

struct TraceReport {
  std::string file;
  calibration::TraceTotals measured;
  std::optional<std::string> scenario;  // the scenario's name
  std::optional<predict::PredictedKernels> predicted;
};

std::string trace_text(const TraceReport& r);
nlohmann::json trace_json(const TraceReport& r);

}  // namespace moesim::reports
