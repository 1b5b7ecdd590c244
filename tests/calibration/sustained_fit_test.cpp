// The sustained-load test of moesim-calib (calibration/sustained_fit.hpp): a GEMM run back to
// back, its bins against the same shape's short benchmark, as the reader reads it and the
// profile reports it; and the plan times only shapes whose short benchmark it also runs.
#include <catch2/catch.hpp>

#include <string>

#include <fmt/format.h>

#include "calibration/profile_fit.hpp"
#include "calibration/sustained_fit.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"

using namespace moesim;

namespace {

// 45 s in 1.5 s bins at 700 TFLOPS and 1980 MHz falling to 600 TFLOPS and 1700 MHz by the
// second third, after a short benchmark of 720 TFLOPS; the GEMM grid's efficiency points
// come with it, as moesim-calib writes them.
calibration::Measurement synthetic() {
  calibration::Measurement m;
  m.file = "/somewhere/h100-run.json";
  m.device = "synthetic H100";
  m.gemm.push_back({"bf16", 4096, 8192, 8192, 1, 720, 0});
  m.gemm.push_back({"bf16", 4096, 7168, 2048, 1, 640, 0});
  for (int b = 0; b < 30; ++b) {
    const bool settled = b >= 10;
    m.sustained_gemm.push_back({"bf16", 4096, 8192, 8192, 1.5 * (b + 1), settled ? 600.0 : 700.0,
                                settled ? 1700.0 : 1980.0});
  }
  return m;
}

}  // namespace

TEST_CASE("A sustained GEMM run: the steady third of its bins over its short benchmark",
          "[calibration][sustained]") {
  const auto s = calibration::summarize_sustained(synthetic());
  REQUIRE(s.size() == 1);
  CHECK(s[0].bins == 30);
  CHECK(s[0].steady_bins == 10);
  CHECK(s[0].seconds == Approx(45));
  CHECK(s[0].steady_tflops == Approx(600));
  CHECK(s[0].short_tflops == Approx(720));
  CHECK(s[0].kept() == Approx(600.0 / 720));
  CHECK(s[0].first_clock_mhz == Approx(1980));
  CHECK(s[0].steady_clock_mhz == Approx(1700));
  // Bins out of order are sorted by time; a run of one bin is its own steady part.
  auto m = synthetic();
  std::swap(m.sustained_gemm.front(), m.sustained_gemm.back());
  CHECK(calibration::summarize_sustained(m)[0].steady_tflops == Approx(600));
  m.sustained_gemm.resize(1);
  CHECK(calibration::summarize_sustained(m)[0].steady_bins == 1);
  // Without the shape's short benchmark there is nothing to compare with: refused, by name.
  auto bare = synthetic();
  bare.gemm.erase(bare.gemm.begin());
  CHECK_THROWS_WITH(
      calibration::summarize_sustained(bare),
      Catch::Contains("h100-run.json") && Catch::Contains("no short benchmark of its shape"));
}

TEST_CASE("The profile reports the sustained ratio as an observation, never as a parameter",
          "[calibration][sustained]") {
  const auto sys = config::load_system_preset("h100", {false});
  const auto calibrated = config::load_system_preset("h100");
  REQUIRE(calibrated.efficiency.sustained_clock_factor);
  const auto p = calibration::fit_profile("s", {synthetic()}, sys, "h100", &calibrated);
  const calibration::Observation* o = nullptr;
  for (const auto& x : p.observations)
    if (x.what.find("back to back") != std::string::npos) o = &x;
  REQUIRE(o);
  CHECK(o->value == Approx(0.8333));
  CHECK(o->from == "h100-run.json");
  CHECK_THAT(o->note, Catch::Contains("1980 MHz") && Catch::Contains("1700 at the end"));
  CHECK_THAT(o->note,
             Catch::Contains(fmt::format(": {:g} on this system",
                                         calibrated.efficiency.sustained_clock_factor->value)));
  for (const auto& f : p.parameters) CHECK(f.parameter != "efficiency.sustained_clock_factor");
}

TEST_CASE("Sustained points survive the file round trip and are read strictly",
          "[calibration][sustained][errors]") {
  const auto m = synthetic();
  const auto back =
      config::load_measurement_text(calibration::measurement_json(m).dump(), "back.json");
  REQUIRE(back.sustained_gemm.size() == m.sustained_gemm.size());
  CHECK(back.sustained_gemm[29].t_s == Approx(45));
  CHECK(back.sustained_gemm[29].sm_clock_mhz == Approx(1700));
  const auto err = [](const std::string& point) {
    try {
      config::load_measurement_text(
          R"({"device": "d", "date": "2026", "tool": "t", "source": "s", "sustained_gemm": [)" +
              point + "]}",
          "m.json");
    } catch (const config::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string ok = R"("m": 1, "n": 1, "k": 1, "t_s": 1, "tflops": 1)";
  CHECK(err(R"({"dtype": "bf16", )" + ok + "}") == "no error");
  CHECK_THAT(err(R"({"dtype": "fp16", )" + ok + "}"),
             Catch::Contains("sustained_gemm[0].dtype: unknown GEMM dtype 'fp16'"));
  CHECK_THAT(err(R"({"dtype": "bf16", )" + ok + R"(, "clock": 1})"), Catch::Contains("clock"));
  CHECK_THAT(err(R"({"dtype": "bf16", "m": 1, "n": 1, "k": 1, "tflops": 1})"),
             Catch::Contains("t_s"));
}

TEST_CASE("moesim-calib's plan runs each sustained shape's short benchmark too",
          "[calibration][sustained]") {
  for (bool quick : {true, false}) {
    const auto plan = calibration::default_plan(quick);
    REQUIRE_FALSE(plan.sustained.empty());
    for (const auto& s : plan.sustained) {
      CHECK(s.bin_s > 0);
      CHECK(s.seconds >= 10 * s.bin_s);  // enough bins for a steady third
      bool found = false;
      for (const auto& g : plan.gemm)
        found = found ||
                (g.dtype == s.dtype && g.m == s.m && g.n == s.n && g.k == s.k && g.groups == 1);
      CHECK(found);
    }
  }
}
