// Attention efficiency against sequence length: the saturation fitter on hand-made data,
// the per-generation S0 in the presets re-fitted from their published points, and the
// compute model applying it.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibration/saturation_fit.hpp"
#include "config/load.hpp"
#include "hw_models/compute.hpp"

using namespace moesim;

TEST_CASE("Saturation fit recovers y = A x / (x + x0)", "[calibration][attention]") {
  // A = 2000, x0 = 1500: y(1000) = 800, y(3000) = 1333.3, y(9000) = 1714.3.
  const auto f = calibration::fit_saturation({1000, 3000, 9000},
                                             {800, 2000.0 * 3000 / 4500, 2000.0 * 9000 / 10500});
  CHECK(f.half == Approx(1500).epsilon(1e-4));
  CHECK(f.scale == Approx(2000).epsilon(1e-4));
  CHECK(f.max_abs_residual_pct < 1e-3);
  CHECK_THROWS_AS(calibration::fit_saturation({1000}, {800}), std::invalid_argument);
  CHECK_THROWS_AS(calibration::fit_saturation({1000, 0}, {800, 900}), std::invalid_argument);
}

TEST_CASE("The presets' attention S0 are the fits of their generation's published points",
          "[calibration][attention]") {
  // Blackwell: cudnn-frontend's GB200 DeepSeek-V3 MLA rows (cuDNN 9.22, batch 2, causal).
  const auto bf = calibration::fit_saturation({2048, 4096, 8192, 16384}, {1072, 1406, 1585, 1678});
  const auto bb = calibration::fit_saturation({2048, 4096, 8192, 16384}, {846, 1057, 1193, 1134});
  CHECK(bf.max_abs_residual_pct < 3);
  CHECK(bb.max_abs_residual_pct < 6);
  // Hopper: the Megatron-Core MoE paper's Table 9 (4K and 16K; two points fit exactly).
  const auto hf = calibration::fit_saturation({4096, 16384}, {553, 638});
  const auto hb = calibration::fit_saturation({4096, 16384}, {422, 523});
  for (const char* name : {"gb200-nvl72", "gb300-nvl72", "b200"}) {
    const auto s = config::load_system_preset(name, {false});
    CHECK(s.efficiency.attention_seq_half_fwd->value == Approx(bf.half).epsilon(1e-3));
    CHECK(s.efficiency.attention_seq_half_bwd->value == Approx(bb.half).epsilon(1e-3));
  }
  for (const char* name : {"h100", "h800", "h200", "h20"}) {
    const auto s = config::load_system_preset(name, {false});
    CHECK(s.efficiency.attention_seq_half_fwd->value == Approx(hf.half).epsilon(1e-3));
    CHECK(s.efficiency.attention_seq_half_bwd->value == Approx(hb.half).epsilon(1e-3));
  }
}

TEST_CASE("Attention runs faster per FLOP on longer sequences", "[hw_models][compute][attention]") {
  const auto gb200 = config::load_system_preset("gb200-nvl72", {false});
  const hw_models::ComputeModel m(gb200);
  hw_models::ComputeWork w{
      hw_models::KernelClass::attention_fwd, hw_models::Dtype::bf16, 1e15, 0, 0, 0, 4096, 1, 2};
  const double t4k = m.seconds(w);
  w.k = 16384;
  const double t16k = m.seconds(w);
  // eta(16K) / eta(4K) = [16384 / (16384 + 1444)] / [4096 / (4096 + 1444)] = 1.2447.
  CHECK((t4k - 0.75e-6) / (t16k - 0.75e-6) ==
        Approx(16384.0 / 17828 / (4096.0 / 5540)).epsilon(1e-6));
  w.k = 0;  // no sequence given: the figure as stated
  CHECK(m.seconds(w) == Approx(t4k).epsilon(1e-12));
}
