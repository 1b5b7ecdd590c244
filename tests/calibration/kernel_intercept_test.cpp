// A memory-bound kernel's fixed duration (efficiency.memory_kernel_us): the presets carry the
// fit of RMSNorm kernels timed on the device (calibration/measurements/norm-kernels-*.json,
// cuDNN frontend's norm benchmark), each GPU without a timing its generation's, and the
// compute model adds it to every memory-bound kernel.
#include <algorithm>

#include <catch2/catch.hpp>

#include "calibration/profile_fit.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"
#include "hw_models/compute.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
calibration::Profile fit(const std::string& gpu) {
  const auto m = config::load_measurement_file(
      test::source_path("calibration/measurements/norm-kernels-" + gpu + ".json"));
  return calibration::fit_profile("norm", {m}, config::load_system_preset(m.system, {false}),
                                  m.system);
}

calibration::ParameterFit intercept(const calibration::Profile& p) {
  const auto it = std::find_if(p.parameters.begin(), p.parameters.end(), [](const auto& f) {
    return f.parameter == "efficiency.memory_kernel_us";
  });
  REQUIRE(it != p.parameters.end());
  return *it;
}

double preset_value(const char* name) {
  const auto s = config::load_system_preset(name, {false});
  REQUIRE(s.efficiency.memory_kernel_us);
  return s.efficiency.memory_kernel_us->value;
}
}  // namespace

TEST_CASE("The presets' memory-kernel fixed duration is the fit of the timed norm kernels",
          "[calibration][memory]") {
  const auto h200 = fit("h200"), gb200 = fit("gb200"), gb300 = fit("gb300");
  // The norm points set only the intercept: efficiency.hbm stays the preset's.
  for (const auto* p : {&h200, &gb200, &gb300}) CHECK(p->parameters.size() == 1);
  const auto a = intercept(h200), b = intercept(gb200), c = intercept(gb300);
  CHECK(a.points == 40);
  // The median of three implementations' intercepts: cuDNN's on every GPU here (PyTorch's
  // native kernel is the slowest to start, torch.compile's Triton kernel the fastest).
  CHECK(a.value == Approx(2.442).epsilon(1e-4));
  CHECK(b.value == Approx(3.519).epsilon(1e-4));
  CHECK(c.value == Approx(3.375).epsilon(1e-4));
  // A few microseconds, longer on Blackwell than on Hopper, and above the 0.75 us kernel
  // boundary (kernel_device_us) it adds to.
  CHECK(a.value < b.value);
  for (const char* gpu : {"h200", "h100", "h800", "h20"}) {
    INFO(gpu);
    CHECK(preset_value(gpu) == a.value);
  }
  for (const char* gpu : {"gb200-nvl72", "b200"}) {
    INFO(gpu);
    CHECK(preset_value(gpu) == b.value);
  }
  for (const char* gpu : {"gb300-nvl72", "b300", "r100", "vr200-nvl72"}) {
    INFO(gpu);
    CHECK(preset_value(gpu) == c.value);
  }
  // Each implementation's intercept and slope are reported.
  CHECK(std::count_if(h200.observations.begin(), h200.observations.end(), [](const auto& o) {
          return o.what.find("norm kernel 'cudnn'") != std::string::npos;
        }) == 1);
}

TEST_CASE("A memory-bound kernel takes its bytes, its fixed duration and the kernel boundary",
          "[calibration][memory][compute]") {
  const auto s = config::load_system_preset("h200", {false});
  const hw_models::ComputeModel cm(s);
  hw_models::ComputeWork w;
  w.cls = hw_models::KernelClass::memory;
  w.bytes = 4.8e12 * 0.85 * 10e-6;  // 10 us at the H200's 4.8 TB/s x 0.85
  // 10 + 2.442 + 0.75 us, by hand.
  CHECK(cm.seconds(w) * 1e6 == Approx(13.192).epsilon(1e-6));
  w.cls = hw_models::KernelClass::quantize;
  w.bytes = 0;
  CHECK(cm.seconds(w) * 1e6 == Approx(3.192).epsilon(1e-6));
  // GEMMs keep only the boundary: their fixed parts are in the fitted K0.
  w.cls = hw_models::KernelClass::gemm;
  w.dtype = hw_models::Dtype::bf16;
  w.flops = 0;
  w.m = w.n = 128;
  w.k = 128;
  CHECK(cm.seconds(w) * 1e6 == Approx(0.75).epsilon(1e-6));
}

TEST_CASE("Norm points need their time and two sizes an implementation",
          "[calibration][memory][errors]") {
  const std::string head = R"("device": "d", "date": "2026", "tool": "t", "source": "s", )";
  CHECK_THROWS_WITH(
      config::load_measurement_text(
          "{" + head + R"("memory": [{"kernel": "norm", "bytes": 1e6, "GBps": 1}]})", "m.json"),
      Catch::Contains("memory[0].kernel") && Catch::Contains("time_us"));
  const auto m = config::load_measurement_text(
      "{" + head + R"("system": "h200", "memory": [{"kernel": "norm", "implementation": "x",
      "bytes": 1e6, "GBps": 100, "time_us": 10}]})",
      "m.json");
  CHECK_THROWS_WITH(
      calibration::fit_profile("n", {m}, config::load_system_preset("h200", {false}), "h200"),
      Catch::Contains("'x' at one size"));
}
