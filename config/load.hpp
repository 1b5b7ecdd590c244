// config/load.hpp: reading scenarios and presets. Every function throws InputError
// (file, JSON path, message) on bad input and nothing else for input problems.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace moesim::config {

// Systems a search that loads many scenarios over one system resolves once (`moesim plan`,
// where resolving the preset and overlaying its calibration profiles took a third of the
// time): the system block's JSON text, the file it is read in and `calibrated` -> the
// SystemSpec read from it, before --headroom. Owned by the caller (no global state) and
// shared by its threads.
class SystemCache {
 public:
  std::shared_ptr<const hw_models::SystemSpec> find(const std::string& key) const {
    const std::lock_guard<std::mutex> lock(m_);
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  void put(const std::string& key, const hw_models::SystemSpec& spec) {
    const std::lock_guard<std::mutex> lock(m_);
    map_.try_emplace(key, std::make_shared<const hw_models::SystemSpec>(spec));
  }

 private:
  mutable std::mutex m_;
  std::map<std::string, std::shared_ptr<const hw_models::SystemSpec>> map_;
};

// How presets are resolved. `calibrated`: a system preset's "profiles" (calibration
// profiles compiled in from calibration/profiles/, written by `moesim calibrate fit`)
// replace the preset's values they fit; false reads the preset as written (the
// uncalibrated model, `moesim validate --uncalibrated`). `systems`: a cache of resolved
// systems (null: each load resolves its own).
// `--set PATH=VALUE` (`run`, `diff`, `validate`, `describe`, `sweep`, `plan`, `report`; the
// Python module's `set=`): one number of the system replaced, PATH relative to the system
// object (efficiency.sustained_clock_factor, host.launch_us, comm.alltoall_efficiency).
struct SystemSet {
  std::string path;
  double value = 0;
};

struct LoadOptions {
  bool calibrated = true;
  // GiB of every GPU held back from the model (`sweep --headroom`, `run --headroom`): the
  // capacity fits_in_memory compares with is gpu.usable_GiB less this.
  double headroom_gib = 0;
  SystemCache* systems = nullptr;
  // A what-if on the calibrated model: each replaces a sourced number every system the command
  // loads already has (after its calibration profiles and the scenario's inline values), its
  // source "set on the command line"; SystemSpec::set_on_command_line lists them and every
  // prediction's caveats say so (config/caveats.hpp). A path the system lacks is refused.
  std::vector<SystemSet> system_set = {};
};

// Applies `sets` to a resolved system object (the preset merged with its profiles and the
// scenario's patch); returns one line per set, "PATH = NEW (was OLD)". InputError naming the
// command line's --set and the keys the system has where the path is not one of its numbers.
std::vector<std::string> apply_system_set(Json& system, const std::vector<SystemSet>& sets);
// "PATH=VALUE" as --set takes it; InputError where it is not that.
SystemSet parse_system_set(const std::string& text);
// The options of a command's --uncalibrated, --headroom and --set (its texts, each through
// parse_system_set): the command line's and the Python module's.
LoadOptions load_options(bool uncalibrated, const std::vector<std::string>& set,
                         double headroom_gib = 0);
// "PATH=VALUE" again, the value's shortest text that reads back the same number: what the
// system cache's key, a sweep row's predicted_with and the Slurm script's --set carry.
std::string to_string(const SystemSet& set);
// Every set of `opts` so (to_string): how validate's output and report's page name the what-if,
// the same from the command line and the Python module.
std::vector<std::string> system_set_texts(const LoadOptions& opts);

// A scenario file, with presets resolved and the layout validated.
Scenario load_scenario_file(const std::string& path, const LoadOptions& opts = {});
// The same from text; `file` labels errors and anchors relative paths.
Scenario load_scenario_text(std::string_view text, const std::string& file,
                            const LoadOptions& opts = {});
// The same from a parsed document (the scenarios a sweep generates).
Scenario load_scenario_json(const Json& j, const std::string& file, const LoadOptions& opts = {});

// Presets compiled into the binary from scenarios/systems and scenarios/models, and the
// calibration profiles.
// `schema`: the JSON Schema files of the input formats (schema/NAME.schema.json, `moesim
// schema`), compiled in beside the presets.
enum class PresetKind { system, model, profile, schema, evidence };
std::vector<std::string> preset_names(PresetKind kind);
// A compiled-in file's text; InputError (naming `what`) listing the known names when absent.
std::string_view preset_text(PresetKind kind, std::string_view name, const std::string& what);
// Refuses a name no preset of `kind` has, as InputError(file, path) listing the known
// names (or saying what a former name is called now): a command-line option's check before
// anything is loaded.
void require_preset(PresetKind kind, std::string_view name, const std::string& file,
                    const std::string& path);
// The same file parsed, once per process (thread-safe; the presets are constants).
const Json& preset_parsed(PresetKind kind, std::string_view name, const std::string& what);
hw_models::SystemSpec load_system_preset(const std::string& name, const LoadOptions& opts = {});
workload::ModelConfig load_model_preset(const std::string& name);

// Per-expert token counts from a JSON file: a list of E numbers (one layer) or a list of
// such lists (one per MoE layer). `experts`: the count each row must have (absent: all
// rows as long as the first). Every row needs some tokens. Errors name the file and the
// JSON path in it. Routing histograms and `moesim eplb --weights` read this format.
std::vector<std::vector<double>> read_expert_loads(
    const std::string& path, std::optional<std::int64_t> experts = std::nullopt);

// Readers for one object each; exposed for tests and for inline objects.
hw_models::SystemSpec read_system(const Node& node);
workload::ModelConfig read_model(const Node& node);

}  // namespace moesim::config
