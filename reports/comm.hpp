// reports/comm.hpp: `moesim comm`'s answer (predict/comm.hpp) as JSON and as text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "predict/comm.hpp"

namespace moesim::reports {

nlohmann::ordered_json comm_json(const predict::CommAnswer& a);
std::string comm_text(const predict::CommAnswer& a);

}  // namespace moesim::reports
