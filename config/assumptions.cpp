#include "config/assumptions.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/releases.hpp"
#include "hw_models/dispatcher.hpp"
#include "workload/routing.hpp"

namespace moesim::config {

namespace {

// The file gave `key` or a key under it ("routing" matches "routing.balance").
bool given(const Scenario& sc, const std::string& key) {
  return std::any_of(sc.given_keys.begin(), sc.given_keys.end(), [&](const std::string& k) {
    return k == key ||
           (k.size() > key.size() && k.compare(0, key.size(), key) == 0 && k[key.size()] == '.');
  });
}

std::string scope_list(const std::vector<workload::CudaGraphScope>& s) {
  std::vector<std::string_view> names;
  for (const auto g : s) names.push_back(workload::cuda_graph_scope_names().name(g));
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<Assumption> scenario_assumptions(const Scenario& sc) {
  std::vector<Assumption> out;
  const bool moe = sc.model.is_moe();
  if (moe && !given(sc, "routing")) {
    const auto t = workload::trained_routing(sc.model);
    out.push_back(
        {"routing", fmt::format("trained, {}", t.what),
         t.family ? fmt::format("{} as trained: {}", sc.model.model_type, t.source)
                  : fmt::format("no recipe for model type '{}': {}", sc.model.model_type, t.source),
         "{\"balance\": \"forced\"} for a benchmark that forces balance"});
  }
  if (!given(sc, "stack.release")) {
    std::vector<std::string> switches;
    for (const auto& sw : workload::stack_switches())
      if (!given(sc, "stack." + std::string(sw.name))) switches.emplace_back(sw.name);
    if (!switches.empty())
      out.push_back({"stack.release",
                     switches.size() == workload::stack_switches().size()
                         ? std::string("the newest stack")
                         : fmt::format("the newest stack's {} ({})",
                                       switches.size() == 1 ? "switch" : "switches",
                                       fmt::join(switches, ", ")),
                     "no release named: every library speed-up moesim models is on",
                     fmt::format("name the release you train with: {}", known_release_names())});
  }
  if (!given(sc, "framework.cuda_graph_scope"))
    out.push_back({"framework.cuda_graph_scope", scope_list(sc.framework.cuda_graph_scope),
                   "moesim's default, the partial graphs of NVIDIA's MoE recipes",
                   "[] for none (eager), [\"full_iteration\"] for the whole step"});
  if (moe && sc.parallelism.ep > 1 && !given(sc, "framework.dispatcher"))
    out.push_back({"framework.dispatcher",
                   fmt::format("{}", hw_models::dispatcher_names().name(sc.framework.dispatcher)),
                   "moesim's default for EP > 1", "\"alltoall\" (NCCL) or \"deepep\""});
  const auto per_node = static_cast<std::int64_t>(sc.system.node.gpus_per_node.value);
  const auto domain = static_cast<std::int64_t>(sc.system.nvlink.domain_gpus.value);
  if (domain > per_node && sc.gpus > per_node && !given(sc, "placement"))
    out.push_back(
        {"placement.gpus_per_nvlink_domain",
         fmt::format("{} GPUs a {}-GPU NVLink domain", sc.placement.gpus_per_nvlink_domain, domain),
         "whole nodes, as many a domain as divide the job",
         "placement.gpus_per_nvlink_domain (32 keeps EP32 in one domain)"});
  return out;
}

std::vector<UnpricedSetting> unpriced_settings(const Scenario& sc) {
  std::vector<UnpricedSetting> out;
  for (const auto t : sc.framework.offload) {
    const std::string name =
        fmt::format("framework.offload[{}]", workload::offload_target_names().name(t));
    if (t == workload::OffloadTarget::optimizer)
      out.push_back(
          {name,
           "memory priced (the FP32 main weights and moments leave the GPU); the host optimizer "
           "step and its copies take no time in the step"});
    else
      out.push_back({name,
                     "memory priced (the saved activations leave the GPU); their device-host "
                     "copies are taken "
                     "as hidden behind compute and not priced"});
  }
  return out;
}

}  // namespace moesim::config
