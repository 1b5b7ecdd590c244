// config/assumptions.hpp: what a prediction assumes where its scenario is silent, and what
// the scenario gives that moesim accepts but does not price (issue #45 item 2: honest
// defaults, said out loud). `moesim run` prints both in a few lines; its JSON carries them as
// `assumptions` and `not_priced`.
//
// The assumptions, in the order they usually move a prediction (the Qwen3-235B H100 example
// without a routing block: trained routing adds 13% to its step over forced balance):
//   routing           the model family's trained balancing (workload::trained_routing), not a
//                     benchmark's forced balance
//   stack.release     no release named: every library speed-up moesim models is on
//   framework.cuda_graph_scope  the partial graphs attn, moe_router, moe_preprocess
//   framework.dispatcher        HybridEP (EP > 1)
//   placement.gpus_per_nvlink_domain  whole nodes, as many per NVLink domain as divide the job
//                     (only where a domain spans nodes: NVL72)
// Each is listed only where the scenario's file did not give it (Scenario::given_keys).
//
// Not priced: framework.offload. The memory of what is offloaded is priced (it leaves the
// GPU), its time is not: the host optimizer step and its copies (optimizer), the saved
// activations' device-host copies (Megatron overlaps them with compute; moesim takes them as
// hidden).
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::config {

struct Assumption {
  std::string setting;  // the scenario key that would say otherwise
  std::string assumed;  // what the prediction takes
  std::string why;      // where that comes from
  std::string instead;  // what to write for something else
};

// The scenario's assumptions, in the order above; empty when its file says everything.
std::vector<Assumption> scenario_assumptions(const Scenario& sc);

struct UnpricedSetting {
  std::string setting;  // "framework.offload[optimizer]"
  std::string what;     // what is and is not priced
};

// Settings the scenario gives that are accepted but priced only in part.
std::vector<UnpricedSetting> unpriced_settings(const Scenario& sc);

}  // namespace moesim::config
