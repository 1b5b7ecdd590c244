// Pipeline schedules through the engine against their closed forms
// (docs/reference/hardware-and-microbenchmarks.md, 'Pipeline bubbles'); chunk times are fixed,
// hosts free.
#include <catch2/catch.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "schedules/pipeline_order.hpp"
#include "schedules/step_sim.hpp"

using namespace moesim::schedules;

TEST_CASE("1F1B order: warm-up, steady 1F1B, cool-down", "[schedules][pipeline]") {
  // pp 4, rank 1, 5 microbatches: warm-up pp - r - 1 = 2 forwards.
  const auto o = pipeline_order(ScheduleKind::one_f_one_b, 4, 1, 1, 5);
  std::string s;
  for (const auto& w : o) s += fmt::format("{}{} ", w.forward() ? 'F' : 'B', w.microbatch);
  CHECK(s == "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4 ");
}

TEST_CASE("Interleaved order follows Megatron's chunk mapping", "[schedules][pipeline]") {
  // pp 2, vpp 2, 4 microbatches, rank 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards.
  // Forward k: chunk (k mod 4) / 2, microbatch (k / 4) * 2 + k mod 2.
  const auto o = pipeline_order(ScheduleKind::interleaved_1f1b, 2, 2, 0, 4);
  REQUIRE(o.size() == 16);
  std::string s;
  for (const auto& w : o)
    s += fmt::format("{}{}.{} ", w.forward() ? 'F' : 'B', w.microbatch, w.chunk);
  CHECK(s == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 ");
  CHECK_THROWS_AS(pipeline_order(ScheduleKind::interleaved_1f1b, 4, 2, 0, 6),
                  std::invalid_argument);
}

TEST_CASE("Interleaved order with as many microbatches as ranks: no all-warm-up special case",
          "[schedules][pipeline]") {
  // pp 2, vpp 2, m 2, last rank: warm-up (2-1-1)*2 + (2-1)*2 = 2 forwards (chunk 0 of both
  // microbatches), then the last chunk's forward and backward alternate, as Megatron-Core
  // runs it since 4295be1a6c (older releases ran every forward first when m == pp).
  const auto o = pipeline_order(ScheduleKind::interleaved_1f1b, 2, 2, 1, 2);
  std::string s;
  for (const auto& w : o)
    s += fmt::format("{}{}.{} ", w.forward() ? 'F' : 'B', w.microbatch, w.chunk);
  CHECK(s == "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 B0.0 B1.0 ");
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

TEST_CASE("Interleaved 1F1B bubble is (PP-1)(F+B)/vpp in the engine",
          "[schedules][pipeline][closed-form]") {
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

namespace {
std::string passes(const std::vector<WorkItem>& o) {
  std::string s;
  for (const auto& w : o) {
    const char* p = w.pass == Pass::forward          ? "F"
                    : w.pass == Pass::backward       ? "B"
                    : w.pass == Pass::backward_input ? "b"
                                                     : "W";
    s += fmt::format("{}{}{}{} ", p, w.microbatch, w.chunk ? "'" : "", w.overlap_next ? "&" : "");
  }
  return s;
}
}  // namespace

TEST_CASE("ZB-H1 order: 1F1B with the input gradient first, rank r keeping r weight passes back",
          "[schedules][pipeline]") {
  // pp 4, 6 microbatches. Rank 0 runs each W right after its B (as 1F1B would, split);
  // rank 2 keeps two pending and runs them when the pipeline drains.
  CHECK(passes(pipeline_order(ScheduleKind::zb_h1, 4, 1, 0, 6)) ==
        "F0 F1 F2 F3 b0 W0 F4 b1 W1 F5 b2 W2 b3 W3 b4 W4 b5 W5 ");
  CHECK(passes(pipeline_order(ScheduleKind::zb_h1, 4, 1, 2, 6)) ==
        "F0 F1 b0 F2 b1 F3 b2 W0 F4 b3 W1 F5 b4 W2 b5 W3 W4 W5 ");
  CHECK_THROWS_AS(pipeline_order(ScheduleKind::zb_h1, 4, 2, 0, 8), std::invalid_argument);
}

TEST_CASE("DualPipe order: the repository's eight steps on each rank", "[schedules][pipeline]") {
  // 4 ranks, 8 microbatches (4 per direction: 0-3 fed at rank 0, chunk 0; 4-7 at rank 3,
  // chunk 1, marked '). Rank 0 (half rank 0 of 2): step 1 two F0; step 2 one F0 F1; step 3
  // one B1 (zero bubble) W F1; step 4 (4 - 4 + 0 + 1 = 1 loop) F0&B1 F1&B0; step 5 B1 F1&B0;
  // step 6 B1 B0 (the second half zero-bubble: b); step 7 W b0; step 8 W.
  CHECK(passes(pipeline_order(ScheduleKind::dualpipe, 4, 1, 0, 8)) ==
        "F0 F1 F2 F4' b4' W4' F5' F3& B5' F6'& B0 B6' F7'& B1 B7' b2 W2 b3 W3 ");
  // Every rank runs each of its microbatches' forward once and its weight gradients once.
  for (int rank = 0; rank < 8; ++rank) {
    int f = 0, w = 0;
    for (const auto& it : pipeline_order(ScheduleKind::dualpipe, 8, 1, rank, 24)) {
      f += it.forward();
      w += it.weights();
    }
    CHECK(f == 24);
    CHECK(w == 24);
  }
  CHECK_THROWS_AS(pipeline_order(ScheduleKind::dualpipe, 4, 1, 0, 6),
                  std::invalid_argument);  // M < 2 pp
  CHECK_THROWS_AS(pipeline_order(ScheduleKind::dualpipe, 3, 1, 0, 12),
                  std::invalid_argument);  // odd pp
}

TEST_CASE("Stage placement: interleaved, DualPipe's two mirrored pipelines, DualPipeV's V",
          "[schedules][pipeline]") {
  const PipelineShape inter(ScheduleKind::interleaved_1f1b, 4, 2);
  CHECK(inter.place(1, 1).stage == 5);
  const PipelineShape dual(ScheduleKind::dualpipe, 4, 1);
  CHECK(dual.chunks() == 2);
  CHECK(dual.place(1, 0).stage == 1);
  CHECK(dual.place(1, 1).pipeline == 1);
  CHECK(dual.place(1, 1).stage == 2);  // rank 1 holds stage pp-1-1 of the reverse pipeline
  CHECK(dual.place(1, 1).layout_stage == 2);
  const PipelineShape v(ScheduleKind::dualpipev, 4, 2);
  CHECK(v.stages() == 8);
  CHECK(v.place(0, 1).stage == 7);  // rank 0 holds the first and the last stage
  CHECK(v.place(3, 1).stage == 4);
}

TEST_CASE("ZB-H1 bubble is (PP-1)(F+B-2W) in the engine", "[schedules][pipeline][closed-form]") {
  // The zero-bubble paper's setting: F = B - W = W (1 ms), so B = 2 ms.
  for (int pp : {2, 4, 8}) {
    for (int m : {pp, 2 * pp, 3 * pp + 1}) {
      INFO("pp " << pp << " microbatches " << m);
      FixedChunks c;
      c.fwd_s = 1e-3;
      c.bwd_s = 2e-3;
      c.wgrad_s = 1e-3;
      const auto r = simulate_pipeline(ScheduleKind::zb_h1, pp, 1, m, c);
      CHECK(r.bubble_s == Approx((pp - 1) * (1e-3 + 2e-3 - 2e-3)).epsilon(1e-6));
    }
  }
  // Without a weight-gradient split it is 1F1B.
  const auto r = simulate_pipeline(ScheduleKind::zb_h1, 4, 1, 8, {1e-3, 2e-3, 0});
  CHECK(r.bubble_s == Approx(3 * 3e-3).epsilon(1e-6));
}

TEST_CASE("DualPipe and DualPipeV bubble is (PP/2-1)(F&B+B-3W) in the engine",
          "[schedules][pipeline][closed-form]") {
  // The repository's setting: F = B - W = W = 1 ms, F&B = F + B = 3 ms. DualPipe: PP
  // stages on PP ranks; DualPipeV: PP stages on PP/2 ranks, the same bubble.
  FixedChunks c;
  c.fwd_s = 1e-3;
  c.bwd_s = 2e-3;
  c.wgrad_s = 1e-3;
  c.fwd_bwd_s = 3e-3;
  for (int stages : {4, 6, 8, 16}) {
    const double bubble = (stages / 2 - 1) * (3e-3 + 2e-3 - 3e-3);
    for (int m : {2 * stages, 4 * stages}) {
      INFO("stages " << stages << " microbatches " << m);
      if (stages % 4 == 0 || stages == 6) {
        const auto d = simulate_pipeline(ScheduleKind::dualpipe, stages, 1, m, c);
        CHECK(d.bubble_s == Approx(bubble).epsilon(1e-6));
        CHECK(d.stages == stages);
      }
      const auto v = simulate_pipeline(ScheduleKind::dualpipev, stages / 2, 2, m / 2, c);
      CHECK(v.bubble_s == Approx(bubble).epsilon(1e-6));
      CHECK(v.stages == stages);
    }
  }
  // DualPipeV needs no even count (dualpipev.py:318): an odd one keeps the bubble.
  for (int m : {17, 19}) {
    INFO("dualpipev, 8 stages, microbatches " << m);
    const auto v = simulate_pipeline(ScheduleKind::dualpipev, 4, 2, m, c);
    CHECK(v.bubble_s == Approx((8 / 2 - 1) * (3e-3 + 2e-3 - 3e-3)).epsilon(1e-6));
  }
  CHECK_THROWS_AS(simulate_pipeline(ScheduleKind::dualpipe, 8, 1, 17, c), std::invalid_argument);
  // Overlap shortens the pairs; the bubble then stays within the formula's bound.
  c.fwd_bwd_s = 2.5e-3;
  const auto d = simulate_pipeline(ScheduleKind::dualpipe, 8, 1, 32, c);
  CHECK(d.bubble_s <= (8 / 2 - 1) * (2.5e-3 + 2e-3 - 3e-3) + 1e-9);
  CHECK(
      d.step_time_s <
      simulate_pipeline(ScheduleKind::dualpipe, 8, 1, 32, {1e-3, 2e-3, 0, 1e-3, 3e-3}).step_time_s);
}

TEST_CASE(
    "Megatron's MoE all-to-all overlap pairs a forward with the backward of an earlier microbatch",
    "[schedules][pipeline]") {
  // No pipelining (Megatron-Core combined_1f1b_schedule_for_no_pipelining): microbatch 0's
  // forward alone, forward i+1 with backward i, the last backward alone.
  CHECK(passes(pipeline_order(ScheduleKind::one_f_one_b, 1, 1, 0, 4, true)) ==
        "F0 F1& B0 F2& B1 F3& B2 B3 ");
  // Interleaved (get_pp_rank_microbatches): one more warm-up forward than without the
  // overlap. pp 2, vpp 2, 4 microbatches, rank 0: 16 items, warm-up 4 + 1 and as many
  // unpaired backwards at the end, 3 pairs.
  int pairs = 0;
  for (const auto& w : pipeline_order(ScheduleKind::interleaved_1f1b, 2, 2, 0, 4, true))
    pairs += w.overlap_next;
  CHECK(pairs == 3);
  // A pair never holds a microbatch's forward with its own backward on the same chunk.
  for (int rank = 0; rank < 4; ++rank) {
    const auto o = pipeline_order(ScheduleKind::interleaved_1f1b, 4, 2, rank, 8, true);
    for (std::size_t i = 0; i + 1 < o.size(); ++i)
      if (o[i].overlap_next)
        CHECK_FALSE((o[i].microbatch == o[i + 1].microbatch && o[i].chunk == o[i + 1].chunk));
  }
}

TEST_CASE(
    "Activations in flight: 1F1B PP, ZB-H1 PP, DualPipe and DualPipeV PP+1 (the DualPipe "
    "repository's table)",
    "[schedules][pipeline][memory]") {
  // Stage-microbatches whose forward has run and whose weight gradients have not, at
  // the worst point of the busiest rank (DualPipe: its two chunks together).
  const auto in_flight = [](ScheduleKind k, int pp, int microbatches) {
    int most = 0;
    for (int r = 0; r < pp; ++r) {
      int now = 0;
      for (const auto& w : pipeline_order(k, pp, 1, r, microbatches)) {
        if (w.forward())
          ++now;
        else if (w.weights())
          --now;
        most = std::max(most, now);
      }
    }
    return most;
  };
  CHECK(in_flight(ScheduleKind::one_f_one_b, 8, 32) == 8);
  CHECK(in_flight(ScheduleKind::zb_h1, 8, 32) == 8);
  CHECK(in_flight(ScheduleKind::dualpipe, 8, 32) == 9);
  CHECK(in_flight(ScheduleKind::dualpipev, 4, 32) == 9);  // 8 stages on 4 ranks
}
