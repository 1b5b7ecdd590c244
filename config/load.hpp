// config/load.hpp: reading scenarios and presets. Every function throws InputError
// (file, JSON path, message) on bad input and nothing else for input problems.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace moesim::config {

// A scenario file, with presets resolved and the layout validated.
Scenario load_scenario_file(const std::string& path);
// The same from text; `file` labels errors and anchors relative paths.
Scenario load_scenario_text(std::string_view text, const std::string& file);

// Presets compiled into the binary from scenarios/systems and scenarios/models.
enum class PresetKind { system, model };
std::vector<std::string> preset_names(PresetKind kind);
hw_models::SystemSpec load_system_preset(const std::string& name);
workload::ModelConfig load_model_preset(const std::string& name);

// Readers for one object each; exposed for tests and for inline objects.
hw_models::SystemSpec read_system(const Node& node);
workload::ModelConfig read_model(const Node& node);

}  // namespace moesim::config
