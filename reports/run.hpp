// reports/run.hpp: `moesim run`: one prediction (predict/predict.hpp) as text, as one
// JSON object (the contract's `run --json`) and as a Chrome/Perfetto trace. Formatting
// only: what the numbers mean is said in predict/predict.hpp and predict/memory.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "predict/predict.hpp"
#include "sim_core/names.hpp"

namespace moesim::reports {

// A module array of the breakdown (schedules::Breakdown) as (name, seconds), largest
// first; "outside_layers" for pipeline transfers, DP collectives and the optimizer.
using ModuleSeconds = std::array<double, workload::kModuleCount + 1>;
std::vector<std::pair<std::string, double>> by_module(const ModuleSeconds& seconds);

nlohmann::ordered_json run_json(const config::Scenario& sc, const predict::Prediction& p);
// The prediction's bands (predict/bands.hpp, the model's error on measurements like it, not
// the run-to-run spread): {step_time_s: [lo, hi], tokens_per_s_per_gpu, tflops_per_gpu,
// level, runs, basis}, the throughputs scaled as 1 / step; null when no residual pool.
nlohmann::ordered_json bands_json(const config::Scenario& sc, const predict::Prediction& p);
std::string run_text(const config::Scenario& sc, const predict::Prediction& p);
// What a prediction is priced beyond (config/caveats.hpp) as run_text, `comm`, `diff` and a
// sweep's or plan's summary list it: "<heading> (priced beyond what was measured):" and one
// indented line each; empty without.
std::string caveats_text(const std::vector<std::string>& caveats,
                         std::string_view heading = "caveats");
// Chrome trace event format (chrome://tracing, ui.perfetto.dev), reports/run_trace.cpp: one
// process per simulated rank, one thread per GPU stream plus the host thread. Layer
// kernels and their launches carry args (microbatch, chunk, pass, layer, module); flow
// events join each pipeline transfer's send to its receive, and each layer pass's first EP
// transfer (dispatch, or the backward's combine) to its last (tokens out and back).
// The level merges what a lane runs back to back: `kernel` keeps every kernel and host
// op; `module` merges a layer pass's consecutive kernels (and launches) of one module
// into one slice, named after the module, with their count and busy time in its args
// (the idle inside it is dur - busy_us); `layer` merges a layer pass's whole run. Pipeline
// transfers and kernels outside the layers are never merged.
enum class TraceLevel : std::uint8_t { kernel, module, layer };
const sim_core::NameTable<TraceLevel>& trace_level_names();
void write_trace(const predict::Prediction& p, std::ostream& out,
                 TraceLevel level = TraceLevel::kernel);

}  // namespace moesim::reports
