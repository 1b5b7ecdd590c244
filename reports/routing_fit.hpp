// reports/routing_fit.hpp: `moesim calibrate routing`'s result (predict/routing_fit.hpp: the
// popularity dispersion of global-batch-balanced routers fitted to measured dropless-against-
// forced pairs) as text, as JSON, and as the calibration profile the scenario loader reads
// (calibration/profiles/routing.json; config/routing_profile.hpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "predict/routing_fit.hpp"

namespace moesim::reports {

std::string routing_fit_text(const predict::RoutingFitResult& r);
nlohmann::ordered_json routing_fit_json(const predict::RoutingFitResult& r);
nlohmann::ordered_json routing_fit_profile(const predict::RoutingFitResult& r,
                                           const std::string& date);

}  // namespace moesim::reports
