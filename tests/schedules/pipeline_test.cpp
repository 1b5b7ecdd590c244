// Pipeline schedules through the engine against their closed forms (shared/reference/
// hardware-and-microbenchmarks.md, 'Pipeline bubbles'); chunk times are fixed, hosts free.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "schedules/pipeline_order.hpp"
#include "schedules/step_sim.hpp"

using namespace moesim::schedules;

TEST_CASE("1F1B order: warm-up, steady 1F1B, cool-down", "[schedules][pipeline]") {
  // pp 4, rank 1, 5 microbatches: warm-up pp - r - 1 = 2 forwards.
  const auto o = pipeline_order(ScheduleKind::one_f_one_b, 4, 1, 1, 5);
  std::string s;
  for (const auto& w : o) s += fmt::format("{}{} ", w.forward ? 'F' : 'B', w.microbatch);
  CHECK(s == "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4 ");
}

TEST_CASE("Interleaved order follows Megatron's chunk mapping", "[schedules][pipeline]") {
  // pp 2, vpp 2, 4 microbatches, rank 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards.
  // Forward k: chunk (k mod 4) / 2, microbatch (k / 4) * 2 + k mod 2.
  const auto o = pipeline_order(ScheduleKind::interleaved_1f1b, 2, 2, 0, 4);
  REQUIRE(o.size() == 16);
  std::string s;
  for (const auto& w : o)
    s += fmt::format("{}{}.{} ", w.forward ? 'F' : 'B', w.microbatch, w.chunk);
  CHECK(s == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 ");
  CHECK_THROWS_AS(pipeline_order(ScheduleKind::interleaved_1f1b, 4, 2, 0, 6), std::invalid_argument);
}

TEST_CASE("1F1B bubble is (PP-1)(F+B) in the engine", "[schedules][pipeline][closed-form]") {
  for (int pp : {2, 4, 8}) {
    for (int m : {pp, 2 * pp, 3 * pp + 1}) {
      INFO("pp " << pp << " microbatches " << m);
      // F = 1 ms, B = 2 ms: step = (M + PP - 1)(F + B).
      const auto r = simulate_pipeline(ScheduleKind::one_f_one_b, pp, 1, m, {1e-3, 2e-3, 0});
      CHECK(r.step_time_s == Approx((m + pp - 1) * 3e-3).epsilon(1e-9));
      CHECK(r.bubble_s == Approx((pp - 1) * 3e-3).epsilon(1e-6));
    }
  }
}

TEST_CASE("Interleaved 1F1B bubble is (PP-1)(F+B)/vpp in the engine", "[schedules][pipeline][closed-form]") {
  // Whole-model F = 1 ms, B = 2 ms split into vpp chunks of F/vpp and B/vpp.
  for (int pp : {2, 4}) {
    for (int vpp : {2, 4}) {
      for (int m : {pp, 2 * pp, 4 * pp}) {
        INFO("pp " << pp << " vpp " << vpp << " microbatches " << m);
        const auto r = simulate_pipeline(ScheduleKind::interleaved_1f1b, pp, vpp, m,
                                         {1e-3 / vpp, 2e-3 / vpp, 0});
        CHECK(r.bubble_s == Approx((pp - 1) * 3e-3 / vpp).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("Pipeline transfers add to the bubble", "[schedules][pipeline]") {
  // 1F1B with a transfer t between stages. Fill and drain cost (PP-1)(F+B+2t). In steady
  // state the last stage's next forward needs stage PP-2's forward, which PP-2 runs only
  // after its backward of two microbatches earlier, which needed the last stage's
  // gradient: a round trip per cycle, so each of the M-PP+1 steady cycles idles 2t.
  // Bubble = (PP-1)(F+B+2t) + (M-PP+1) 2t = 3 x 3.2 + 5 x 0.2 = 10.6 ms.
  const auto r = simulate_pipeline(ScheduleKind::one_f_one_b, 4, 1, 8, {1e-3, 2e-3, 0.1e-3});
  CHECK(r.bubble_s == Approx(3 * (3e-3 + 0.2e-3) + 5 * 0.2e-3).epsilon(1e-6));
}
