// The presets' SSD scan rate is the fit of the published Triton SSD timings
// (calibration/measurements/ssd-triton-*.json), and GPUs without a timing carry the
// measured GPU of their architecture's rate per SM and clock.
#include <algorithm>

#include <catch2/catch.hpp>

#include "calibration/profile_fit.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
calibration::ParameterFit ssd_fit(const std::string& file) {
  const auto m = config::load_measurement_file(test::source_path(file));
  const auto prof =
      calibration::fit_profile("ssd", {m}, config::load_system_preset(m.system, {false}), m.system);
  const auto it = std::find_if(prof.parameters.begin(), prof.parameters.end(), [](const auto& f) {
    return f.parameter == "efficiency.ssd_scan_tflops";
  });
  REQUIRE(it != prof.parameters.end());
  return *it;
}

// SMs x clock, the clock of `ref` where the preset publishes none.
double sm_clock(const hw_models::SystemSpec& s, const hw_models::SystemSpec& ref) {
  return s.gpu.sm_count.value * (s.gpu.clock_mhz ? s.gpu.clock_mhz : ref.gpu.clock_mhz)->value;
}
}  // namespace

TEST_CASE("The presets' SSD scan rate is the fit of the published Triton SSD timings",
          "[calibration][ssd]") {
  const auto b200 = ssd_fit("calibration/measurements/ssd-triton-b200.json");
  const auto h200 = ssd_fit("calibration/measurements/ssd-triton-h200.json");
  CHECK(b200.points == 7);
  CHECK(h200.points == 7);
  // The rate model reproduces the timings it was fitted to within the spread of the
  // sources (TileOPs' two versions of its harness differ by 20-30 percent on one shape).
  CHECK(b200.max_abs_residual_pct < 25);
  CHECK(h200.max_abs_residual_pct < 50);
  // Far below the Tensor Cores: the Triton SSD does not stream at the HBM rate either.
  CHECK(b200.value < 200);
  CHECK(h200.value < 200);
  const auto ref_b = config::load_system_preset("b200", {false});
  const auto ref_h = config::load_system_preset("h200", {false});
  for (const char* name : {"b200", "gb200-nvl72", "gb300-nvl72", "b300", "r100", "vr200-nvl72"}) {
    const auto s = config::load_system_preset(name, {false});
    INFO(name);
    REQUIRE(s.efficiency.ssd_scan_tflops);
    CHECK(s.efficiency.ssd_scan_tflops->value ==
          Approx(b200.value * sm_clock(s, ref_b) / sm_clock(ref_b, ref_b)).epsilon(0.002));
  }
  for (const char* name : {"h200", "h100", "h800", "h20"}) {
    const auto s = config::load_system_preset(name, {false});
    INFO(name);
    REQUIRE(s.efficiency.ssd_scan_tflops);
    CHECK(s.efficiency.ssd_scan_tflops->value ==
          Approx(h200.value * sm_clock(s, ref_h) / sm_clock(ref_h, ref_h)).epsilon(0.002));
  }
}
