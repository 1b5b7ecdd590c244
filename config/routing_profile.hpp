// config/routing_profile.hpp: the popularity dispersion of routers pretrained with
// global-batch balance (workload::TrainedRouting::global_batch; Qwen3's), as `moesim
// calibrate routing` fitted it to measured pairs of one recipe run dropless and with forced
// balance (predict/routing_fit.hpp) and wrote it into calibration/profiles/routing.json,
// compiled in. The scenario loader gives it to such a family's trained routing
// (workload::Routing::popularity_sigma) unless the file sets routing.popularity_sigma or the
// model is read uncalibrated; `run` names it among its caveats (config/caveats.hpp).
#pragma once

#include <string>

namespace moesim::config {

struct GlobalBatchSigma {
  double value = 0;
  std::string source;                 // the parameter's source text in the profile
  int pairs = 0;                      // the measured pairs it was fitted to
  double loo_mean_abs_error_pct = 0;  // their mean leave-one-out ratio error
};
// InputError naming the profile when it is missing or malformed.
const GlobalBatchSigma& global_batch_sigma();

}  // namespace moesim::config
