// cli/eplb.cpp: `moesim eplb`: DeepSeek's expert-parallel load balancer (workload/eplb.hpp)
// on a load matrix: which experts to replicate and where each physical expert goes.
#include "cli/commands.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "reports/eplb.hpp"
#include "workload/eplb.hpp"

namespace moesim::cli {
namespace {

class Eplb final : public Command {
 public:
  void configure(CLI::App& app) override {
    app.add_option(
           "--weights", weights_,
           "JSON file of per-expert loads: a list of E numbers (one layer) or a list of such lists")
        ->required();
    app.add_option("--replicas", replicas_,
                   "physical experts (logical experts plus redundant copies)")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--groups", groups_, "expert groups (DeepSeek-V3's n_group: 8)")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--nodes", nodes_, "nodes (NVLink domains) the EP group spans")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--gpus", gpus_, "GPUs of the EP group")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--policy", policy_,
                   "hierarchical or global (default: the library's choice, hierarchical where "
                   "groups % nodes == 0)");
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    std::optional<workload::EplbPolicy> policy;
    if (!policy_.empty()) {
      policy = workload::eplb_policy_names().find(policy_);
      if (!policy)
        throw config::InputError(
            "<command line>", "--policy",
            "unknown policy '" + policy_ + "'; known: " + workload::eplb_policy_names().known());
    }
    const auto weights = config::read_expert_loads(weights_);
    workload::EplbPlan plan;
    try {
      plan = workload::rebalance_experts(weights, replicas_, groups_, nodes_, gpus_, policy);
    } catch (const std::invalid_argument& e) {
      throw config::InputError("<command line>", "--replicas", e.what());
    }
    const auto balance = workload::eplb_balance(plan, weights, gpus_);
    io.out << (json_ ? reports::eplb_json(plan, balance).dump(2) + "\n"
                     : reports::eplb_text(plan, balance));
    return 0;
  }

 private:
  std::string weights_, policy_;
  int replicas_ = 0, groups_ = 1, nodes_ = 1, gpus_ = 1;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_eplb_command() {
  return std::make_unique<Eplb>();
}

}  // namespace moesim::cli
