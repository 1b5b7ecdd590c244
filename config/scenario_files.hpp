// config/scenario_files.hpp: the scenario files under paths given on a command line or to
// the Python module (`validate`, `report --validate`, `calibrate corpus`): folders searched
// recursively for *.json, sorted; files as given. Each file is sorted by its top-level keys,
// not loaded: a file that does not load is an error when it is loaded.
#pragma once

#include <string>
#include <vector>

namespace moesim::config {

// Scenario files under the given paths (folders recursively, in sorted order; files as
// given). A folder that cannot be read is an InputError naming it.
std::vector<std::string> scenario_files(const std::vector<std::string>& paths);

// The scenario files under the paths in three sets: with a `measured` block; without one
// but a scenario (an object with `system` and `gpus`: planning and what-if scenarios);
// the rest (model, system and sweep files) counted.
struct ScenarioFileSets {
  std::vector<std::string> measured, unmeasured;
  int other = 0;
};
ScenarioFileSets sort_scenario_files(const std::vector<std::string>& paths);

// The scenario files under the paths that carry a `measured` block; the others (presets,
// what-ifs) are counted in `skipped`.
std::vector<std::string> measured_files(const std::vector<std::string>& paths, int& skipped);

}  // namespace moesim::config
