#include "config/routing_profile.hpp"

#include "config/load.hpp"

namespace moesim::config {

const GlobalBatchSigma& global_batch_sigma() {
  static const GlobalBatchSigma g = [] {
    const Json& j = preset_parsed(PresetKind::profile, "routing", "calibration profile");
    const std::string file = "calibration/profiles/routing.json";
    const auto p = j.find("parameters");
    if (p == j.end() || !p->contains("routing") || !(*p)["routing"].contains("global_batch_sigma"))
      throw InputError(file, "parameters.routing.global_batch_sigma", "missing");
    const Json& v = (*p)["routing"]["global_batch_sigma"];
    GlobalBatchSigma out;
    if (!v.contains("value") || !v["value"].is_number() || v["value"].get<double>() < 0)
      throw InputError(file, "parameters.routing.global_batch_sigma.value",
                       "expected a number >= 0");
    out.value = v["value"].get<double>();
    out.source = v.value("source", "");
    out.pairs = static_cast<int>(j.value("pairs", Json::array()).size());
    out.loo_mean_abs_error_pct = j.value("loo_mean_abs_error_pct", 0.0);
    return out;
  }();
  return g;
}

}  // namespace moesim::config
