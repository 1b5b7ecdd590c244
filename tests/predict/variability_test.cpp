// predict/variability.hpp: the extreme-value pieces by hand, and a step's wait for its
// slowest process and replica.
#include <catch2/catch.hpp>

#include <cmath>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "predict/variability.hpp"
#include "sim_core/extreme_values.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("Extreme values by hand", "[predict][variability]") {
  CHECK(sim_core::harmonic_number(1) == 1);
  CHECK(sim_core::harmonic_number(4) == Approx(25.0 / 12));
  // The asymptotic form takes over past 10,000 without a step.
  CHECK(sim_core::harmonic_number(10001) ==
        Approx(sim_core::harmonic_number(10000) + 1.0 / 10001).epsilon(1e-10));
  // E[max of 2 standard normals] = 1 / sqrt(pi); of 3, 3 / (2 sqrt(pi)).
  CHECK(sim_core::expected_max_normal(1) == 0);
  CHECK(sim_core::expected_max_normal(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-6));
  CHECK(sim_core::expected_max_normal(3) == Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-6));
}

TEST_CASE("A step waits for the latest of its processes", "[predict][variability]") {
  auto sc = config::load_scenario_text(test::default_scenario_json().dump(),
                                       "t.json");  // 256 GPUs, forced routing
  schedules::StepResult step;
  step.step_time_s = 10;
  sc.system.variability.jitter_s = hw_models::Param{0.03, "test"};
  sc.system.variability.jitter_fraction = hw_models::Param{0.001, "test"};
  sc.system.variability.common_s.reset();
  sc.system.variability.common_fraction.reset();
  const auto s = predict::step_spread(sc, step);
  const double m = 0.03 + 0.001 * 10;  // the mean per-process delay
  CHECK(s.processes == 256);
  CHECK(s.routing_wait_s == 0);  // forced routing: every replica routes alike
  CHECK(s.jitter_wait_s == Approx(m * sim_core::harmonic_number(256)));
  CHECK(s.wait_s == s.jitter_wait_s);
  // Quantiles of the latest of N: -m ln(1 - q^(1/N)).
  CHECK(s.p50_wait_s == Approx(-m * std::log(1 - std::pow(0.5, 1.0 / 256))).epsilon(1e-6));
  CHECK(s.p95_wait_s == Approx(-m * std::log(1 - std::pow(0.95, 1.0 / 256))).epsilon(1e-6));
  // Four times the processes: the wait grows by m ln 4, the spread hardly moves.
  sc.gpus = 1024;
  const auto big = predict::step_spread(sc, step);
  CHECK(big.jitter_wait_s - s.jitter_wait_s == Approx(m * std::log(4.0)).epsilon(0.01));
  CHECK(big.p95_wait_s - big.p50_wait_s == Approx(s.p95_wait_s - s.p50_wait_s).epsilon(0.01));
  // A delay common to all processes widens the 95th percentile, in quadrature, and leaves
  // the mean wait and the median alone: c = 0.02 + 0.001 x 10 = 0.03 s.
  sc.system.variability.common_s = hw_models::Param{0.02, "test"};
  sc.system.variability.common_fraction = hw_models::Param{0.001, "test"};
  const auto common = predict::step_spread(sc, step);
  CHECK(common.common_sd_s == Approx(0.03));
  CHECK(common.wait_s == big.wait_s);
  CHECK(common.p50_wait_s == big.p50_wait_s);
  CHECK(common.p95_wait_s - common.p50_wait_s ==
        Approx(std::hypot(big.p95_wait_s - big.p50_wait_s, 1.6448536 * 0.03)).epsilon(1e-6));
  // No variability in the preset: no wait.
  sc.system.variability = {};
  CHECK(predict::step_spread(sc, step).wait_s == 0);
}

TEST_CASE("Trained routing adds the slowest replica, and the prediction carries it all",
          "[predict][variability]") {
  auto j = test::default_scenario_json();
  j["routing"] = {{"balance", "aux_loss"}, {"coefficient", 0.001}};
  j["gpus"] = 512;  // expert-DP 2: two EP groups per stage
  const auto sc = config::load_scenario_text(j.dump(), "t.json");
  const auto p = predict::predict(sc);
  CHECK(p.spread.load_cv > 0);
  CHECK(p.spread.ep_groups == 2);
  CHECK(p.spread.routing_wait_s > 0);
  const auto& b = p.step.breakdown;
  CHECK(b.straggler_wait == Approx(p.spread.jitter_wait_s + p.spread.routing_wait_s));
  // The breakdown still adds up to the step, and the percentiles bracket the median.
  CHECK(b.compute + b.exposed_comm + b.pipeline_bubble + b.host_bound_idle + b.other +
            b.straggler_wait ==
        Approx(p.step.step_time_s).epsilon(1e-9));
  CHECK(p.step_time_p50_s < p.step_time_p95_s);
  CHECK(p.step_time_p50_s > p.step.step_time_s - b.straggler_wait);
}
