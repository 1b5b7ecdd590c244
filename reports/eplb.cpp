#include "reports/eplb.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace moesim::reports {

nlohmann::ordered_json eplb_json(const workload::EplbPlan& plan,
                                 const std::vector<workload::EplbBalance>& balance) {
  nlohmann::ordered_json hottest = nlohmann::ordered_json::array();
  for (const auto& b : balance)
    hottest.push_back(
        {{"before", b.before ? nlohmann::ordered_json(*b.before) : nlohmann::ordered_json(nullptr)},
         {"after", b.after}});
  return {{"policy", workload::eplb_policy_names().name(plan.policy)},
          {"phy2log", plan.phy2log},
          {"log2phy", plan.log2phy},
          {"logcnt", plan.logcnt},
          {"hottest_gpu_over_mean", hottest}};
}

std::string eplb_text(const workload::EplbPlan& plan,
                      const std::vector<workload::EplbBalance>& balance) {
  std::string s = fmt::format("policy: {}\n", workload::eplb_policy_names().name(plan.policy));
  const auto block = [&](const char* name, const auto& rows) {
    s += fmt::format("{}:\n", name);
    for (const auto& row : rows) s += fmt::format("  {}\n", row);
  };
  block("phy2log", plan.phy2log);
  block("log2phy", plan.log2phy);
  block("logcnt", plan.logcnt);
  s += "hottest GPU over the mean, before -> after:\n";
  for (std::size_t l = 0; l < balance.size(); ++l)
    s += fmt::format(
        "  layer {}: {} -> {:.3f}\n", l,
        balance[l].before ? fmt::format("{:.3f}", *balance[l].before) : std::string("n/a"),
        balance[l].after);
  return s;
}

}  // namespace moesim::reports
