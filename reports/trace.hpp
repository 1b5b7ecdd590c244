// reports/trace.hpp: `moesim calibrate trace`'s table: a profiled trace's kernels by class
// (calibration/kineto_trace.hpp) and, with a scenario, the simulation's over the same
// window (predict/trace_compare.hpp), as text or one JSON object; then the host's time by
// schedule node, the trace's node ranges (wall time on the host thread) against the
// simulated host thread's CPU time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/kineto_trace.hpp"
#include "predict/trace_compare.hpp"

namespace moesim::reports {

struct TraceReport {
  std::string file;
  calibration::TraceTotals measured;
  std::vector<calibration::HostNode> measured_host;  // the trace's schedule-node ranges
  std::optional<std::string> scenario;               // the scenario's name
  std::optional<predict::PredictedKernels> predicted;
};

std::string trace_text(const TraceReport& r);
nlohmann::json trace_json(const TraceReport& r);

}  // namespace moesim::reports
