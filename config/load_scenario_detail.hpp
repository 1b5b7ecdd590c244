// config/load_scenario_detail.hpp (internal): the reader behind config/load.hpp's
// load_scenario_* (config/load_scenario.cpp). One class, its member functions split by
// section over config/load_scenario.cpp (the document, the system and the model),
// load_scenario_sections.cpp (training, routing, recorded, measured, goodput, cost),
// load_scenario_parallelism.cpp (the layout, pipeline schedule and placement) and
// load_scenario_framework.cpp (framework and stack).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/json_reader.hpp"
#include "config/load.hpp"
#include "config/scenario.hpp"

namespace moesim::config::detail {

using schedules::ScheduleKind;

// Reads one scenario document strictly (unknown keys refused) and checks the cross-field
// rules, each InputError at the JSON path of the setting to change.
class ScenarioReader {
 public:
  ScenarioReader(const Json& j, const std::string& file, const LoadOptions& opts)
      : file_(std::make_shared<const std::string>(file)), root_(j, "", file_), opts_(opts) {}

  Scenario read();  // config/load_scenario.cpp

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw InputError(*file_, path, msg);
  }

  // config/load_scenario_sections.cpp
  void training(const Node& n);
  void lora(const Node& n);
  void module_precision(const Node& n);
  void read_histogram(workload::Routing& r);
  void routing(const std::optional<Node>& n);
  void global_batch_routing();
  void recorded(const std::optional<Node>& n);
  void measured(const std::optional<Node>& n);
  void goodput(const std::optional<Node>& n);
  void cost(const std::optional<Node>& n);

  // config/load_scenario_parallelism.cpp
  void parallelism(const std::optional<Node>& n);
  void layout(bool vpp_given);
  void hybrid_sharding();
  void pipeline_schedule(std::optional<ScheduleKind> given);
  void ep_library_placement(bool dispatcher_given);
  void eplb_placement();
  void placement(const std::optional<Node>& n);

  // config/load_scenario_framework.cpp
  void framework(const std::optional<Node>& n);
  // What Megatron-Core refuses of --moe-shared-expert-overlap, and the schedules moesim runs
  // it in, each on `v` (framework.moe_shared_expert_overlap set true).
  void shared_expert_overlap_checks(const Node& v, const workload::Framework& f) const;
  void stack(const std::optional<Node>& n);
  void release_rules();

  std::shared_ptr<const std::string> file_;
  Node root_;
  LoadOptions opts_;
  std::vector<std::string> stack_given_;  // the stack switches the file gave
  Scenario sc_;
};

}  // namespace moesim::config::detail
