// calibration/jitter_fit.hpp: the spread of the latest of N exponential delays, and the
// least-squares fit of the per-process delay recovering what synthetic points were made with.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibration/jitter_fit.hpp"

using namespace moesim;

TEST_CASE("The latest of N exponential delays spreads by k(N) their mean", "[calibration][jitter]") {
  // One process: the exponential's own p95 - median, ln(0.5 / 0.05) = ln 10.
  CHECK(calibration::exponential_max_spread(1) == Approx(std::log(10.0)));
  // Many: the Gumbel limit, ln(-ln 0.5) - ln(-ln 0.95) = ln(0.69315 / 0.051293) = 2.6037.
  CHECK(calibration::exponential_max_spread(1e7) == Approx(std::log(std::log(2.0) / -std::log(0.95))).epsilon(1e-5));
  CHECK(calibration::exponential_max_spread(512) == Approx(2.6027).epsilon(1e-3));
}

TEST_CASE("The jitter fit recovers the delay synthetic points were made with", "[calibration][jitter]") {
  const double a = 0.04, b = 0.002;
  nlohmann::json m = {{"points", nlohmann::json::array()}};
  for (const auto& [n, t] : std::vector<std::pair<double, double>>{{256, 27}, {1024, 8}, {4096, 3}, {8192, 50}}) {
    const double spread = (a + b * t) * calibration::exponential_max_spread(n);
    m["points"].push_back({{"system", "h100"}, {"gpus", n}, {"median_s", t}, {"p05_s", t}, {"p95_s", t + spread}});
  }
  // A gap point far off is reported, not fitted.
  m["points"].push_back({{"role", "gap"}, {"system", "h100"}, {"gpus", 2560}, {"median_s", 11.0}, {"p05_s", 11.0},
                         {"p95_s", 12.5}});
  const auto f = calibration::fit_step_jitter(m);
  CHECK(f.fit_points == 4);
  CHECK(f.jitter_s == Approx(a).epsilon(1e-9));
  CHECK(f.jitter_fraction == Approx(b).epsilon(1e-9));
  CHECK(f.rms_error_s == Approx(0).margin(1e-12));
  CHECK(f.rows.back().role == "gap");
  nlohmann::json one = {{"points", {m["points"][0]}}};
  CHECK_THROWS_AS(calibration::fit_step_jitter(one), std::invalid_argument);
  m["points"][0]["p95_s"] = 1.0;  // below the median
  CHECK_THROWS_AS(calibration::fit_step_jitter(m), std::invalid_argument);
}
