// config/inert_settings.hpp: the registry of every performance setting the scenario
// loader accepts (training.*, parallelism.*, framework.*, stack.*, routing.*,
// placement.*), each with the rule that says where it changes nothing, and why.
//
// "No silent paths" (the developers' guide): every setting the loader accepts changes
// the prediction or is refused with a reason. Where a setting is accepted but inert in
// one scenario (dispatcher_sms under NCCL's all-to-all, say), `moesim run` lists it under
// `warnings`, for the settings the file wrote (not the defaults). A test
// (tests/config/setting_sensitivity_test.cpp) enumerates this registry and, for every
// entry, toggles the setting in a scenario where Megatron's behaviour depends on it and
// fails when the prediction does not move, so a setting added here without a
// sensitivity case fails too.
//
// List settings (cuda_graph_scope, recompute_modules, offload, low_precision_activations)
// have one entry per element: "framework.recompute_modules[moe]". Exempt, being metadata
// or the scenario itself: name, description, system, gpus, model (and the Hugging Face
// fields documented as ignored), measured, recorded (what the writer knew to be inert).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace moesim::config {

struct PerformanceSetting {
  std::string name;  // dotted JSON path; list elements as "framework.offload[moe_act]"
  // The file wrote it (for list elements: the list, with this element in it).
  std::function<bool(const Scenario&)> given;
  // Why the setting changes nothing in this scenario; nullopt where it acts.
  std::function<std::optional<std::string>(const Scenario&)> inert;
};

// Every performance setting, in the order of SCENARIO_FORMAT.md's sections.
const std::vector<PerformanceSetting>& performance_settings();

struct SettingWarning {
  std::string setting;
  std::string reason;
  // The scenario's `recorded.inert` names it: written as its source gave it, by a tool
  // (moesim's importer) that knew it changes nothing here.
  bool recorded = false;
};

// Why stack switch `name` (workload::stack_switches) changes nothing in the scenario;
// nullopt where it acts.
std::optional<std::string> stack_switch_inert(std::string_view name, const Scenario& sc);

// Whether TE's permute before 2.6 runs in the scenario (stack.permute_fusion_v2 off where it
// acts): its row-map walk is then priced (hw_models::ComputeWork::walk_loads), which needs the
// GPU's clock and is carried over from one GB200 profile point.
bool old_permute_runs(const Scenario& sc);

// The settings the scenario's file gave that are inert in it, in registry order.
std::vector<SettingWarning> inert_setting_warnings(const Scenario& sc);

// An importer's last step (issue #45 item 2): the settings the command gives that change
// nothing in the scenario stay in it (a what-if that changes the layout may make them act,
// as they would in Megatron), and are listed under the scenario's `recorded.inert` with
// `recorded.by`, so that `run` says them in one line instead of warning about each. Returns
// the names. A scenario that does not load is left as it is (`file` labels the load).
std::vector<std::string> record_inert_settings(Json& scenario, const std::string& file,
                                               const std::string& by);

}  // namespace moesim::config
