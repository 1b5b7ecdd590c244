// A layout's bound takes the all-to-all overlap on (predict/plan.hpp); a candidate with it
// off must not bound better. Where the host sets the bound, both sum the same host
// seconds over the same passes, in another order (the overlap adds a warm-up forward and
// pairs the rest), so they agree to rounding only: `plan` counts a violation beyond
// rounding (the GB200 journey's plans had counted these, issue #45 item 1).
#include <catch2/catch.hpp>

#include <cmath>

#include "config/load.hpp"
#include "predict/plan.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("Plan bounds: the all-to-all overlap off bounds no better than on, beyond rounding",
          "[predict][plan]") {
  const auto at = [](bool overlap) {
    auto j = config::Json::parse(
        test::read_text(test::source_path("scenarios/journey/08-numa-binding.json")));
    auto& p = j["parallelism"];
    p["tp"] = 1, p["pp"] = 4, p["vpp"] = 8, p["ep"] = 32, p["cp"] = 2,
    p["pp_layout"] = "Et|(t*2|)*30L";
    j["framework"]["dispatcher"] = "alltoall";
    j["framework"].erase("dispatcher_sms");
    j["framework"]["moe_a2a_overlap"] = overlap;
    j["framework"]["recompute_modules"] = config::Json::array();
    // Unbound from its NUMA node the host sets both bounds (bound, the device's work has
    // set the bound with the overlap off since the residual adds were priced).
    j["stack"]["cpu_numa_binding"] = false;
    const auto sc = config::load_scenario_text(
        j.dump(), test::source_path("scenarios/journey/plan-candidate.json"));
    return predict::step_time_lower_bound(sc, predict::scenario_ep_load(sc));
  };
  const auto off = at(false), on = at(true);
  // Host-bound: the host's sum sets both, and the device's layer work differs.
  CHECK(on.step_time_s == Approx(on.host_s).epsilon(1e-12));
  CHECK(off.layer_work_s > on.layer_work_s);
  CHECK(std::abs(off.step_time_s - on.step_time_s) <= 1e-9 * on.step_time_s);
  CHECK(off.step_time_s >= on.step_time_s * (1 - 1e-9));
}
