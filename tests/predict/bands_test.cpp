// predict/bands.hpp: split-conformal bands from out-of-sample residuals, by hand on a
// grid of residuals, and on the corpus (issue #45's done-when: 75-90% of the runs inside
// their own leave-one-out 80% band).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "predict/bands.hpp"

using namespace moesim::predict;

TEST_CASE("Bands: the conformal order statistics of the pool, stratified by GPU",
          "[predict][bands]") {
  // 19 runs on GPU "X" with ratios 0.91, 0.92, ..., 1.09; 3 on "Y" at 1.5.
  std::vector<BandResidual> pool;
  for (int i = 0; i < 19; ++i) pool.push_back({fmt::format("x{}", i), "X", "m", 0.91 + 0.01 * i});
  for (int i = 0; i < 3; ++i) pool.push_back({fmt::format("y{}", i), "Y", "m", 1.5});
  // n = 19: k_lo = floor(20 x 0.1) = 2, k_hi = ceil(20 x 0.9) = 18: q = 0.92 and 1.08.
  const Band x = step_band(10.0, "X", "other", pool);
  CHECK(x.pool == 19);
  CHECK(x.lo == Approx(10.0 / 1.08));
  CHECK(x.hi == Approx(10.0 / 0.92));
  CHECK(x.level == 0.8);
  // "Y" has 3 (< kBandStratumMin): all 22, sorted 0.91 .. 1.09, 1.5 x 3; n = 22:
  // k_lo = floor(2.3) = 2 -> 0.92, k_hi = ceil(20.7) = 21 -> 1.5.
  const Band y = step_band(10.0, "Y", "other", pool);
  CHECK(y.pool == 22);
  CHECK(y.lo == Approx(10.0 / 1.5));
  CHECK(y.hi == Approx(10.0 / 0.92));
  CHECK_THAT(y.basis, Catch::Contains("all 22"));
  // Too few residuals: no band.
  CHECK(step_band(10.0, "X", "m", {{"a", "X", "m", 1.0}}).pool == 0);
}

TEST_CASE("Bands: a model with enough runs of its own is its own stratum", "[predict][bands]") {
  // 19 runs of model "m" on "X" at 0.91 .. 1.09 (as above), and 6 of model "g" on "X" at
  // 0.60, 0.65, ..., 0.85: every one of g's predicted short.
  std::vector<BandResidual> pool;
  for (int i = 0; i < 19; ++i) pool.push_back({fmt::format("x{}", i), "X", "m", 0.91 + 0.01 * i});
  for (int i = 0; i < 6; ++i) pool.push_back({fmt::format("g{}", i), "X", "g", 0.60 + 0.05 * i});
  // g: n = 6 (>= kBandModelMin): k_lo = max(1, floor(0.7)) = 1 -> 0.60, k_hi = min(6,
  // ceil(6.3)) = 6 -> 0.85: the band [10 / 0.85, 10 / 0.60], on any GPU.
  for (const char* gpu : {"X", "Z"}) {
    const Band g = step_band(10.0, gpu, "g", pool);
    CHECK(g.pool == 6);
    CHECK(g.lo == Approx(10.0 / 0.85));
    CHECK(g.hi == Approx(10.0 / 0.60));
    CHECK_THAT(g.basis, Catch::Contains("the 6 measured runs of g"));
    CHECK_THAT(g.basis, Catch::Contains("shorter than measured, by 15-40%"));
  }
  // Left out of its own pool a run of g has 5 others: still the model's stratum.
  CHECK(step_band(10.0, "X", "g", pool, "g0").pool == 5);
  // m straddles 1: no side named. An unnamed ("inline") model never matches one.
  CHECK_THAT(step_band(10.0, "X", "m", pool).basis, !Catch::Contains("every one"));
  const Band inl = step_band(10.0, "X", "inline", pool);
  CHECK(inl.pool == 25);
  CHECK_THAT(inl.basis, Catch::Contains("on X (fewer than 5 of an unnamed model)"));
}

TEST_CASE("Bands: coverage leaves each run out of its own band", "[predict][bands]") {
  // 19 runs 0.91 .. 1.09: each against the other 18 (k_lo = 1, k_hi = 18: their min and
  // max) is inside unless it is the grid's own minimum or maximum: 17 of 19.
  std::vector<BandResidual> pool;
  for (int i = 0; i < 19; ++i) pool.push_back({fmt::format("x{}", i), "X", "m", 0.91 + 0.01 * i});
  const auto c = band_coverage(pool);
  CHECK(c.runs == 19);
  CHECK(c.inside == 17);
}

TEST_CASE("Bands on the corpus: 75-90% of the runs inside their own leave-one-out 80% band",
          "[predict][bands]") {
  const auto& pool = corpus_residuals();
  REQUIRE(pool.size() >= 50);
  const auto c = band_coverage(pool);
  INFO(c.inside << " of " << c.runs);
  CHECK(c.pct() >= 75);
  CHECK(c.pct() <= 90);
}

TEST_CASE("Bands on the measured pairs: a what-if ratio's 80% band holds 75-90% of them left out",
          "[predict][bands]") {
  const auto& e = corpus_pair_residuals();
  REQUIRE(e.size() >= 40);
  const auto c = ratio_band_coverage(e);
  INFO(c.inside << " of " << c.runs);
  CHECK(c.pct() >= 75);
  CHECK(c.pct() <= 90);
  // The band of a ratio the model calls even (1.0): within a few percent either way.
  const Band b = ratio_band(1.0, e);
  CHECK(b.lo < 1);
  CHECK(b.hi > 1);
  CHECK(b.hi / b.lo < 1.25);
}
