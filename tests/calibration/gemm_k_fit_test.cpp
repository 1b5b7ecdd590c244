// The K-dependence of GEMM efficiency: the fitter on hand-made points, and the presets'
// K0 being what the fitter makes of the DeepGEMM profile.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "calibration/gemm_k_fit.hpp"
#include "config/load.hpp"
#include "hw_models/compute.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("fit_k_overhead recovers eta_inf and K0 from exact points", "[calibration][gemm]") {
  // eta = 0.8 K / (K + 500): at K 500 0.4, at 1500 0.6, at 4500 0.72.
  const auto r = calibration::fit_k_overhead({500, 1500, 4500}, {0.4, 0.6, 0.72});
  CHECK(r.eta_inf == Approx(0.8));
  CHECK(r.k0 == Approx(500));
  for (double e : r.relative_error) CHECK(e == Approx(0).margin(1e-12));
  CHECK_THROWS_AS(calibration::fit_k_overhead({1024}, {0.5}), std::invalid_argument);
  CHECK_THROWS_AS(calibration::fit_k_overhead({1024, 1024}, {0.5, 0.6}), std::invalid_argument);
  CHECK_THROWS_AS(calibration::fit_k_overhead({512, 1024}, {0.5, 1.5}), std::invalid_argument);
}

TEST_CASE("The presets' GEMM K0 is the fit of the DeepGEMM H800 profile", "[calibration][gemm]") {
  std::ifstream in(test::source_path("calibration/profiles/deepgemm-h800-fp8.json"));
  const auto prof = nlohmann::json::parse(in);
  const auto sys = config::load_system_preset(prof["system"].get<std::string>());
  const hw_models::ComputeModel cm(sys);
  const double peak = sys.gpu.peak_tflops(hw_models::Dtype::fp8);
  std::vector<double> k, eff;
  for (const auto& p : prof["points"]) {
    // Divide out wave quantization with the compute model's own tiles.
    const double q = cm.wave_efficiency(p["m"].get<std::int64_t>(), p["n"].get<std::int64_t>(),
                                        p["groups"].get<std::int64_t>());
    k.push_back(p["k"].get<double>());
    eff.push_back(p["tflops"].get<double>() / peak / q);
  }
  const auto r = calibration::fit_k_overhead(k, eff);
  for (double e : r.relative_error) CHECK(std::abs(e) < 0.07);  // the model fits the points
  for (const char* name : {"h800", "h100", "gb200-nvl72", "b200"}) {
    const auto s = config::load_system_preset(name);
    REQUIRE(s.efficiency.gemm_k_overhead);
    CHECK(s.efficiency.gemm_k_overhead->value == Approx(r.k0).epsilon(0.001));
  }
}

TEST_CASE("GEMM time grows as K shrinks, relative to where the efficiency was measured", "[hw_models][compute]") {
  const auto sys = config::load_system_preset("gb200-nvl72");
  const hw_models::ComputeModel cm(sys);
  const double k0 = sys.efficiency.gemm_k_overhead->value;
  // Dense GEMMs: efficiency is the large-K limit, so K 512 runs at 512 / (512 + K0).
  CHECK(cm.k_factor(512, hw_models::KernelClass::gemm) == Approx(512 / (512 + k0)));
  // Grouped GEMMs were measured at K 7168: factor 1 there, below 1 at K 2048.
  CHECK(cm.k_factor(7168, hw_models::KernelClass::grouped_gemm) == Approx(1));
  CHECK(cm.k_factor(2048, hw_models::KernelClass::grouped_gemm) ==
        Approx((2048 / (2048 + k0)) / (7168 / (7168 + k0))));
}
