// The K-dependence of GEMM efficiency: the fitter on hand-made points, and the presets'
// K0 being what the fitter makes of the DeepGEMM profile.
#include <catch2/catch.hpp>

#include <algorithm>

#include "calibration/gemm_k_fit.hpp"
#include "calibration/profile_fit.hpp"
#include "config/load.hpp"
#include "config/load_measurement.hpp"
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

TEST_CASE("fit_k_overhead_shared: one K0, an eta per group", "[calibration][gemm]") {
  // Dense at eta 0.8, grouped at 0.7, both with K0 500.
  std::vector<double> k, e;
  std::vector<int> g;
  for (double kk : {500.0, 1500.0, 4500.0})
    for (int grp : {0, 1}) {
      k.push_back(kk);
      e.push_back((grp ? 0.7 : 0.8) * kk / (kk + 500));
      g.push_back(grp);
    }
  const auto r = calibration::fit_k_overhead_shared(k, e, g, 2);
  CHECK(r.k0 == Approx(500).epsilon(1e-6));
  CHECK(r.eta_inf[0] == Approx(0.8).epsilon(1e-6));
  CHECK(r.eta_inf[1] == Approx(0.7).epsilon(1e-6));
  // One group: the linear fit's optimum.
  const auto one =
      calibration::fit_k_overhead_shared({500, 1500, 4500}, {0.4, 0.61, 0.71}, {0, 0, 0}, 1);
  const auto lin = calibration::fit_k_overhead({500, 1500, 4500}, {0.4, 0.61, 0.71});
  CHECK(one.k0 == Approx(lin.k0).epsilon(1e-6));
  CHECK(one.eta_inf[0] == Approx(lin.eta_inf).epsilon(1e-6));
}

TEST_CASE("fit_k_overhead_timed takes a fixed time per call out of K0", "[calibration][gemm]") {
  // T = 5 us + w / 0.8 + (w / K) 200 / 0.8, w the call at the peak: a hand-made grid.
  std::vector<double> w, k, t;
  for (double kk : {256.0, 1024.0, 4096.0})
    for (double ww : {20e-6, 80e-6}) {
      const double work = ww * kk / 1024;
      w.push_back(work), k.push_back(kk), t.push_back(5e-6 + work / 0.8 + work / kk * 200 / 0.8);
    }
  const auto r = calibration::fit_k_overhead_timed(w, k, t);
  CHECK(r.t0_s == Approx(5e-6));
  CHECK(r.eta_inf == Approx(0.8));
  CHECK(r.k0 == Approx(200));
  for (double e : r.relative_error) CHECK(e == Approx(0).margin(1e-9));
  // Without t0 the same points need a larger K0: the fixed time looks like tile overhead.
  std::vector<double> e;
  for (std::size_t i = 0; i < w.size(); ++i) e.push_back(w[i] / t[i]);
  CHECK(calibration::fit_k_overhead(k, e).k0 > 250);
  CHECK_THROWS_AS(calibration::fit_k_overhead_timed({1e-5, 2e-5}, {256, 512}, {2e-5, 3e-5}),
                  std::invalid_argument);
  // Faster than the peak (sm_90's FP8 entries of XLA's table): eta above 1, refused.
  std::vector<double> fast;
  for (std::size_t i = 0; i < w.size(); ++i) fast.push_back(w[i] / 1.5);
  CHECK_THROWS_AS(calibration::fit_k_overhead_timed(w, k, fast), std::invalid_argument);
  CHECK_THROWS_AS(
      calibration::fit_k_overhead_timed({1e-5, 2e-5, 4e-5}, {512, 512, 512}, {2e-5, 3e-5, 5e-5}),
      std::invalid_argument);
}

namespace {
// The K0 a profile fit gives one input type from one measurement file.
calibration::ParameterFit k0_fit(const std::string& file, const std::string& dtype) {
  const auto m = config::load_measurement_file(test::source_path(file));
  const auto prof =
      calibration::fit_profile("k0", {m}, config::load_system_preset(m.system, {false}), m.system);
  const auto it = std::find_if(prof.parameters.begin(), prof.parameters.end(), [&](const auto& f) {
    return f.parameter == "efficiency.gemm_k_overhead_by_dtype." + dtype;
  });
  REQUIRE(it != prof.parameters.end());
  return *it;
}
}  // namespace

TEST_CASE("The presets' per-type K0 are the fits of XLA's GEMM tables", "[calibration][gemm]") {
  using hw_models::Dtype;
  // Hopper BF16 (sm_90); the same table's sm_90 FP8 entries exceed the FP8 peak and are
  // not used: Hopper's FP8 K0 stays DeepGEMM's (the scalar gemm_k_overhead).
  const auto h = k0_fit("calibration/measurements/xla-gemm-sm90-bf16.json", "bf16");
  CHECK(h.max_abs_residual_pct < 10);
  for (const char* name : {"h100", "h800", "h200"}) {
    const auto s = config::load_system_preset(name);
    CHECK(s.efficiency.k_overhead(Dtype::bf16)->value == Approx(h.value).epsilon(0.0005));
    CHECK(s.efficiency.k_overhead(Dtype::fp8)->value == Approx(485.4));  // DeepGEMM's
  }
  // Blackwell (sm_100): BF16, and FP8's for FP8 and MXFP8 (block-scaled MMA at FP8's rate).
  const auto bb = k0_fit("calibration/measurements/xla-gemm-sm100.json", "bf16");
  const auto bf = k0_fit("calibration/measurements/xla-gemm-sm100.json", "fp8");
  CHECK(bb.max_abs_residual_pct < 25);
  CHECK(bf.max_abs_residual_pct < 25);
  CHECK(bb.value < bf.value);
  for (const char* name : {"b200", "gb200-nvl72", "gb300-nvl72", "b300"}) {
    const auto s = config::load_system_preset(name);
    CHECK(s.efficiency.k_overhead(Dtype::bf16)->value == Approx(bb.value).epsilon(0.0005));
    CHECK(s.efficiency.k_overhead(Dtype::fp8)->value == Approx(bf.value).epsilon(0.0005));
    CHECK(s.efficiency.k_overhead(Dtype::mxfp8)->value == Approx(bf.value).epsilon(0.0005));
  }
}

TEST_CASE("GEMMs timed alone: batch and the flag round-trip, a mix with other points is refused",
          "[calibration][gemm]") {
  const std::string text = R"({"device": "d", "system": "h100", "date": "2025", "tool": "t",
    "source": "s", "calls_timed_alone": true, "gemm": [
    {"dtype": "bf16", "batch": 4, "m": 4096, "n": 4096, "k": 256, "tflops": 503.875},
    {"dtype": "bf16", "batch": 4, "m": 4096, "n": 4096, "k": 1024, "tflops": 725.509},
    {"dtype": "bf16", "batch": 2, "m": 4096, "n": 4096, "k": 4096, "tflops": 807.671},
    {"dtype": "bf16", "m": 4096, "n": 4096, "k": 512, "tflops": 543.117}]})";
  const auto m = config::load_measurement_text(text, "timed.json");
  REQUIRE(m.calls_timed_alone);
  CHECK(m.gemm[0].groups == 4);
  CHECK(m.gemm[3].groups == 1);
  const auto again =
      config::load_measurement_text(calibration::measurement_json(m).dump(), "again.json");
  CHECK(again.calls_timed_alone);
  CHECK(again.gemm[0].groups == 4);
  CHECK(again.gemm[3].groups == 1);
  const auto sys = config::load_system_preset("h100", {false});
  const auto p = calibration::fit_profile("timed", {m}, sys, "h100");
  CHECK(std::any_of(p.observations.begin(), p.observations.end(),
                    [](const auto& o) { return o.unit == "us" && o.value > 0; }));
  // The same shapes from a file not timed alone: the fixed time per call cannot be told
  // apart from the tiles' overhead in the mix, so the fit is refused.
  auto plain = m;
  plain.calls_timed_alone = false;
  plain.file = "plain.json";
  CHECK_THROWS_AS(calibration::fit_profile("mixed", {m, plain}, sys, "h100"),
                  std::invalid_argument);
}

TEST_CASE("The presets' GEMM K0 is the fit of the DeepGEMM H800 measurements",
          "[calibration][gemm]") {
  const auto k0 = k0_fit("calibration/measurements/deepgemm-h800-fp8.json", "fp8");
  CHECK(k0.points == 8);
  CHECK(k0.max_abs_residual_pct < 7);  // the model fits the points
  // Hopper's FP8 GEMMs take it; elsewhere it is the K0 of the types without their own.
  for (const char* name : {"h800", "h100", "h200"}) {
    const auto s = config::load_system_preset(name);
    REQUIRE(s.efficiency.k_overhead(hw_models::Dtype::fp8));
    CHECK(s.efficiency.k_overhead(hw_models::Dtype::fp8)->value ==
          Approx(k0.value).epsilon(0.0005));
  }
  for (const char* name : {"gb200-nvl72", "b200"}) {
    const auto s = config::load_system_preset(name);
    REQUIRE(s.efficiency.gemm_k_overhead);
    CHECK(s.efficiency.gemm_k_overhead->value == Approx(k0.value).epsilon(0.0005));
  }
}

TEST_CASE("GEMM time grows as K shrinks, relative to where the efficiency was measured",
          "[hw_models][compute]") {
  const auto sys = config::load_system_preset("gb200-nvl72");
  const hw_models::ComputeModel cm(sys);
  using hw_models::Dtype;
  const double k0 = sys.efficiency.k_overhead(Dtype::mxfp8)->value;
  const double k0_bf16 = sys.efficiency.k_overhead(Dtype::bf16)->value;
  // Each input type has its own K0: a tile's fixed time over a K loop that runs at the
  // type's rate (BF16's loop is the slower, so its K0 is the smaller).
  CHECK(k0_bf16 < k0);
  // Dense GEMMs: efficiency is the large-K limit, so K 512 runs at 512 / (512 + K0).
  CHECK(cm.k_factor(512, false, Dtype::mxfp8) == Approx(512 / (512 + k0)));
  CHECK(cm.k_factor(512, false, Dtype::bf16) == Approx(512 / (512 + k0_bf16)));
  // Grouped GEMMs were measured at K 7168: factor 1 there, below 1 at K 2048.
  CHECK(cm.k_factor(7168, true, Dtype::mxfp8) == Approx(1));
  CHECK(cm.k_factor(2048, true, Dtype::mxfp8) ==
        Approx((2048 / (2048 + k0)) / (7168 / (7168 + k0))));

  // A grouped GEMM in a dtype the grouped table lacks (BF16 here: it holds MXFP8 only)
  // takes the dense efficiency at its large-K limit: the same time as the dense GEMM of
  // its shape, not the grouped reference's 1 / f(7168) faster.
  REQUIRE(sys.efficiency.grouped_gemm.count(hw_models::Dtype::bf16) == 0);
  hw_models::ComputeWork dense;
  dense.cls = hw_models::KernelClass::gemm;
  dense.dtype = hw_models::Dtype::bf16;
  dense.m = 8192;
  dense.n = 5760;
  dense.k = 2880;
  dense.flops = 2.0 * 8192 * 5760 * 2880;
  hw_models::ComputeWork grouped = dense;
  grouped.cls = hw_models::KernelClass::grouped_gemm;
  CHECK(cm.seconds(grouped) == Approx(cm.seconds(dense)));
}
