// predict/moe_layer_check.hpp against Megatron-LM's moe_perf timings of one MoE layer on a
// DGX H100 (calibration/measurements/moe-layer-h100-mlm.json): the table of forward and
// backward times, the dispatchers' ratios (what HybridEP or DeepEP buys over NCCL's
// all-to-all, the decision users make) within their tolerance, and the absolute times'
// mean error as a drift watch.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include <fmt/format.h>

#include "config/load_measurement.hpp"
#include "predict/moe_layer_check.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("One MoE layer timed alone: moesim against Megatron-LM's moe_perf on H100",
          "[predict][moe_layer][validation]") {
  const auto m = config::load_measurement_file(
      test::source_path("calibration/measurements/moe-layer-h100-mlm.json"));
  REQUIRE(m.moe_layer);
  const auto& set = *m.moe_layer;
  REQUIRE(set.cases.size() == 12);
  // (model, precision) -> dispatcher -> {measured, predicted} forward + backward (ms)
  std::map<std::string, std::map<std::string, std::pair<double, double>>> sums;
  double abs_err = 0;
  int n = 0;
  std::cout << fmt::format("{:32} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}\n", "case (H100, EP8)",
                           "fwd ms", "moesim", "bwd ms", "moesim", "fwd err", "bwd err");
  for (const auto& c : set.cases) {
    INFO(c.name);
    const auto t = predict::moe_layer_times(predict::moe_layer_scenario(set, c, m.system));
    // Every dispatcher of a dropless layer waits on the device for its token counts; the
    // harness's forward is at most the simulated span (only host-paced idle before the sync
    // comes out of it).
    CHECK(t.synced);
    CHECK(t.forward_ms <= t.forward_span_ms + 1e-9);
    CHECK(t.forward_ms > 0);
    const double ef = 100 * (t.forward_ms / c.forward_ms - 1),
                 eb = 100 * (t.backward_ms / c.backward_ms - 1);
    std::cout << fmt::format("{:32} {:9.3f} {:9.3f} {:9.3f} {:9.3f} {:+7.1f}% {:+7.1f}%\n", c.name,
                             c.forward_ms, t.forward_ms, c.backward_ms, t.backward_ms, ef, eb);
    abs_err += std::abs(ef) + std::abs(eb);
    n += 2;
    sums[c.model + " " + c.precision][c.dispatcher] = {c.forward_ms + c.backward_ms,
                                                       t.forward_ms + t.backward_ms};
  }
  const double mae = abs_err / n;
  std::cout << fmt::format("mean absolute error {:.1f}% over {} times\n", mae, n);
  // The dispatcher decision: each library's forward + backward over the all-to-all's.
  double ratio_err = 0;
  int ratios = 0;
  for (const auto& [what, by] : sums) {
    const auto& a2a = by.at("alltoall");
    for (const char* lib : {"hybridep", "deepep"}) {
      const auto& l = by.at(lib);
      const double measured = a2a.first / l.first, predicted = a2a.second / l.second;
      const double err = 100 * (predicted / measured - 1);
      std::cout << fmt::format(
          "{:20} all-to-all over {:8}: measured {:.3f}, moesim {:.3f} ({:+.1f}%)\n", what, lib,
          measured, predicted, err);
      INFO(what << " all-to-all over " << lib);
      CHECK(std::abs(err) <= 8);
      ratio_err += std::abs(err);
      ++ratios;
    }
  }
  std::cout << fmt::format("dispatcher ratios: mean absolute error {:.1f}% over {}\n",
                           ratio_err / ratios, ratios);
  // Drift watches, stop 78's errors (2026-12-05) plus about 1.5 and 3 points: the ratios'
  // mean 2.1% (each within 4.5%, checked above at 8); the absolute times' 15.7% (the BF16
  // DeepSeek backward within 2.3%; the Mixtral GEMMs and the FP8 block-scaled backward run
  // slower than moesim prices them at the short benchmark's clocks,
  // docs/research/moe-layer-h100.md 6).
  CHECK(ratio_err / ratios <= 3.5);
  CHECK(mae <= 19);
}
