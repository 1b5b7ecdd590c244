// reports/eplb.hpp: `moesim eplb`'s plan (workload/eplb.hpp) as the library prints it
// (phy2log, log2phy, logcnt per layer) with the hottest GPU's load over the mean before
// and after, as text or one JSON object.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/eplb.hpp"

namespace moesim::reports {

nlohmann::ordered_json eplb_json(const workload::EplbPlan& plan,
                                 const std::vector<workload::EplbBalance>& balance);
std::string eplb_text(const workload::EplbPlan& plan,
                      const std::vector<workload::EplbBalance>& balance);

}  // namespace moesim::reports
