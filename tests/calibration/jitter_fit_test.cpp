// calibration/jitter_fit.hpp: the spread of the latest of N exponential delays, and the
// least-squares fit of the per-process delay recovering what synthetic points were made with.
#include <catch2/catch.hpp>

#include <cmath>
#include <tuple>

#include "calibration/jitter_fit.hpp"
#include "sim_core/extreme_values.hpp"

using namespace moesim;

TEST_CASE("The latest of N exponential delays spreads by k(N) their mean",
          "[calibration][jitter]") {
  // One process: the exponential's own p95 - median, ln(0.5 / 0.05) = ln 10.
  CHECK(calibration::exponential_max_spread(1) == Approx(std::log(10.0)));
  // Many: the Gumbel limit, ln(-ln 0.5) - ln(-ln 0.95) = ln(0.69315 / 0.051293) = 2.6037.
  CHECK(calibration::exponential_max_spread(1e7) ==
        Approx(std::log(std::log(2.0) / -std::log(0.95))).epsilon(1e-5));
  CHECK(calibration::exponential_max_spread(512) == Approx(2.6027).epsilon(1e-3));
}

TEST_CASE("The jitter fit recovers the delays synthetic data were made with",
          "[calibration][jitter]") {
  // Per process: mean a; common: sd c + d T. Pairs lengthen the step by the simulation's
  // own increase plus a (H_N2 - H_N1), points spread by the two delays in quadrature.
  const double a = 0.01, c = 0.03, d = 0.002, z = 1.6448536269514722, simulated = 0.005;
  const auto m = [&](double) { return a; };
  nlohmann::json j = {{"points", nlohmann::json::array()}, {"pairs", nlohmann::json::array()}};
  for (const auto& [n, t] :
       std::vector<std::pair<double, double>>{{256, 27}, {1024, 8}, {4096, 3}, {8192, 50}}) {
    const double spread =
        std::hypot(m(t) * calibration::exponential_max_spread(n), z * (c + d * t));
    j["points"].push_back(
        {{"system", "h100"}, {"gpus", n}, {"median_s", t}, {"p05_s", t}, {"p95_s", t + spread}});
  }
  for (const auto& [n1, n2, t] : std::vector<std::tuple<double, double, double>>{
           {512, 768, 11}, {4096, 8192, 1.6}, {1024, 1536, 8}}) {
    // The pair's mean step is t: the two steps straddle it by the increase.
    const double inc =
        simulated + a * (sim_core::harmonic_number(n2) - sim_core::harmonic_number(n1));
    j["pairs"].push_back({{"system", "h100"},
                          {"gpus_from", n1},
                          {"gpus_to", n2},
                          {"step_from_s", t - inc / 2},
                          {"step_to_s", t + inc / 2},
                          {"scenarios", {"a.json", "b.json"}}});
  }
  // Gap rows far off are reported, not fitted.
  j["points"].push_back({{"role", "gap"},
                         {"system", "h100"},
                         {"gpus", 2560},
                         {"median_s", 11.0},
                         {"p05_s", 11.0},
                         {"p95_s", 12.5}});
  j["pairs"].push_back({{"role", "gap"},
                        {"system", "b200"},
                        {"gpus_from", 256},
                        {"gpus_to", 448},
                        {"step_from_s", 27.0},
                        {"step_to_s", 28.0}});
  // The caller prices the simulation's own increase of the pairs with scenarios.
  auto in = calibration::read_step_jitter(j);
  CHECK(in.pairs.front().scenarios == std::vector<std::string>{"a.json", "b.json"});
  for (auto& q : in.pairs)
    if (!q.scenarios.empty()) q.simulated_increase_s = simulated;
  const auto f = calibration::fit_step_jitter(in);
  CHECK(f.fit_points == 4);
  CHECK(f.fit_pairs == 3);
  CHECK(f.jitter_s == Approx(a).epsilon(1e-9));
  CHECK(f.common_s == Approx(c).epsilon(1e-9));
  CHECK(f.common_fraction == Approx(d).epsilon(1e-9));
  CHECK(f.rms_error_s == Approx(0).margin(1e-12));
  CHECK(f.pair_rms_error_s == Approx(0).margin(1e-12));
  CHECK(f.rows.back().role == "gap");
  CHECK(f.pairs.back().model_increase_s < 0.5);
  // Without the simulation's increase subtracted, the delay takes it all: larger.
  CHECK(calibration::fit_step_jitter(j).jitter_s > a);
  // Steps that shrink with more GPUs: the per-process delay stays at 0, not negative.
  nlohmann::json shrink = j;
  for (auto& p : shrink["pairs"]) p["step_to_s"] = p["step_from_s"].get<double>() - 0.01;
  CHECK(calibration::fit_step_jitter(shrink).jitter_s == 0);
  // A pair names both sizes' files or none.
  nlohmann::json three = j;
  three["pairs"][0]["scenarios"] = {"a.json"};
  CHECK_THROWS_AS(calibration::read_step_jitter(three), std::invalid_argument);
  nlohmann::json one = j;
  one["pairs"] = {j["pairs"][0]};
  CHECK_THROWS_AS(calibration::fit_step_jitter(one), std::invalid_argument);
  j["points"][0]["p95_s"] = 1.0;  // below the median
  CHECK_THROWS_AS(calibration::fit_step_jitter(j), std::invalid_argument);
}
