#include "config/scenario_files.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "config/json_reader.hpp"

namespace moesim::config {

std::vector<std::string> scenario_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(p, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code kind;
      if (it->is_regular_file(kind) && it->path().extension() == ".json")
        found.push_back(it->path().string());
    }
    if (ec) throw InputError(p, "", "cannot read the folder: " + ec.message());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

ScenarioFileSets sort_scenario_files(const std::vector<std::string>& paths) {
  ScenarioFileSets out;
  for (const auto& f : scenario_files(paths)) {
    const Json j = read_json_file(f);
    if (j.is_object() && j.contains("measured"))
      out.measured.push_back(f);
    else if (j.is_object() && j.contains("system") && j.contains("gpus"))
      out.unmeasured.push_back(f);
    else
      ++out.other;
  }
  return out;
}

std::vector<std::string> measured_files(const std::vector<std::string>& paths, int& skipped) {
  ScenarioFileSets sets = sort_scenario_files(paths);
  skipped += static_cast<int>(sets.unmeasured.size()) + sets.other;
  return std::move(sets.measured);
}

}  // namespace moesim::config
