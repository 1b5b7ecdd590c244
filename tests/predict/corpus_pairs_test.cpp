// `moesim calibrate corpus`'s pairs (issue #44): every measured pair's ratio at the fitted
// values and out of sample, with both its fitted runs left out of the fit
// (calibration::theta_without). A pair of held-out runs has nothing fitted to it, so its
// out-of-sample ratio is its in-sample one; the measured ratios are the files' own.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "config/load.hpp"
#include "predict/corpus.hpp"
#include "reports/corpus.hpp"

using namespace moesim;

TEST_CASE("Corpus pairs: in sample and left out, by how many of their runs were fitted",
          "[predict][corpus]") {
  const std::string root = MOESIM_SOURCE_DIR "/scenarios/";
  std::vector<config::Scenario> runs;
  for (const char* f :
       {"measured/a14-qwen3-30b-h100-overlap-off.json",
        "measured/a14-qwen3-30b-h100-overlap-on.json", "cards/card-qwen3-30b-h100-bf16.json",
        "pai/p4-tp2pp32vpp3-mbs4-full.json", "pai/p5-tp1pp32vpp3-mbs4-full.json"})
    runs.push_back(config::load_scenario_file(root + f));
  const auto r = predict::calibrate_corpus(runs, 2);
  REQUIRE(r.fitted_runs == 2);  // the card and PAI's rows are held out
  REQUIRE(r.pairs.size() == 3);
  int seen = 0;
  for (const auto& p : r.pairs) {
    INFO(p.name);
    CHECK(p.in_sample_error_pct ==
          Approx(100 * (p.in_sample_ratio / p.measured_ratio - 1)).epsilon(1e-9));
    CHECK(p.loo_error_pct == Approx(100 * (p.loo_ratio / p.measured_ratio - 1)).epsilon(1e-9));
    CHECK(std::isfinite(p.loo_ratio));
    if (p.name.rfind("a14-qwen3-30b-h100-overlap-on vs", 0) == 0) {
      ++seen;
      CHECK(p.fitted_runs == 2);
      CHECK(p.measured_ratio == Approx(24.7138 / 20.992).epsilon(1e-4));
    } else if (p.name.rfind("card-qwen3-30b-h100-bf16 vs", 0) == 0) {
      ++seen;
      CHECK(p.fitted_runs == 1);
      CHECK(p.measured_ratio == Approx(20.992 / 20.14729).epsilon(1e-4));
    } else {
      ++seen;
      CHECK(p.fitted_runs == 0);
      CHECK(p.loo_ratio == p.in_sample_ratio);
      CHECK(p.loo_error_pct == p.in_sample_error_pct);
    }
  }
  CHECK(seen == 3);
  CHECK(r.pairs_with_fitted_runs == 2);
  // The report and the profile carry them.
  const auto j = reports::corpus_json(r);
  CHECK(j["pairs"].size() == 3);
  CHECK(reports::corpus_profile(r, "2026-12-02")["pairs"].size() == 3);
  CHECK(reports::corpus_text(r).find("3 pairs (2 with a fitted run)") != std::string::npos);
}
