// predict/validate.hpp's series: the lines step = a x microbatches + b through measured and
// predicted steps, the per-GPU ratios between sizes, and the predicted line split by step
// term, against values worked out by hand and against the series files.
#include <catch2/catch.hpp>

#include <cmath>

#include "predict/validate.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
predict::ValidateRow size(std::int64_t gpus, std::int64_t ga, double measured, double compute,
                          double bubble, double straggler) {
  predict::ValidateRow r;
  r.series = "hand";
  r.gpus = gpus;
  r.microbatches = ga;
  r.measured_step_s = measured;
  r.predicted_step_s = compute + bubble + straggler;
  r.tokens_per_step = 1e6;
  r.step_terms = {{"compute", compute}, {"schedule_bubble", bubble}, {"straggler_wait", straggler}};
  return r;
}
}  // namespace

TEST_CASE("Series: lines, ratios and the predicted line by term, by hand",
          "[predict][validate][series]") {
  // Measured: 0.1 s a microbatch + 0.5 s a step. Predicted: compute 0.09 s a microbatch,
  // a 0.3 s bubble, a straggler wait of 0.1 s + 0.001 s a microbatch (a = 0.091, b = 0.4).
  const std::vector<predict::ValidateRow> rows{size(512, 64, 6.9, 5.76, 0.3, 0.164),
                                               size(1024, 32, 3.7, 2.88, 0.3, 0.132),
                                               size(2048, 16, 2.1, 1.44, 0.3, 0.116)};
  const auto fits = predict::fit_series(rows);
  REQUIRE(fits.size() == 1);
  const auto& f = fits.front();
  REQUIRE(f.fitted);
  CHECK(f.a_measured == Approx(0.1));
  CHECK(f.b_measured == Approx(0.5));
  CHECK(f.a_predicted == Approx(0.091));
  CHECK(f.b_predicted == Approx(0.4));
  // Per-GPU throughput of 1,024 over 512 GPUs at the same tokens: step_512 / (2 step_1024).
  REQUIRE(f.ratio_measured.size() == 2);
  CHECK(f.ratio_measured[0] == Approx(6.9 / (2 * 3.7)));
  CHECK(f.ratio_predicted[0] == Approx(6.224 / (2 * 3.312)));
  CHECK(f.ratio_error_pct[0] == Approx(100 * ((6.224 / 6.624) / (6.9 / 7.4) - 1)));
  REQUIRE(f.terms.size() == 3);
  CHECK(f.terms[0].name == "compute");
  CHECK(f.terms[0].a == Approx(0.09));
  CHECK(f.terms[0].b == Approx(0).margin(1e-12));
  CHECK(f.terms[1].a == Approx(0).margin(1e-12));
  CHECK(f.terms[1].b == Approx(0.3));
  CHECK(f.terms[2].a == Approx(0.001));
  CHECK(f.terms[2].b == Approx(0.1));
}

TEST_CASE("Series: the terms' lines add up to the predicted line on a series file set",
          "[predict][validate][series]") {
  std::vector<std::string> files;
  for (const char* n : {"00512", "02048", "08192"})
    files.push_back(
        test::source_path(std::string("scenarios/series/mlperf-llama405b-h100-") + n + ".json"));
  const auto rows = predict::validate_files(files, {}, 1);
  double sum_terms = 0;
  for (const auto& [name, s] : rows.front().step_terms) sum_terms += s;
  // The breakdown adds up to the step (predict/diff.hpp: within 1%).
  CHECK(sum_terms == Approx(rows.front().predicted_step_s).epsilon(0.01));
  const auto fits = predict::fit_series(rows);
  REQUIRE(fits.size() == 1);
  const auto& f = fits.front();
  REQUIRE(f.fitted);
  double a = 0, b = 0;
  for (const auto& t : f.terms) a += t.a, b += t.b;
  CHECK(a == Approx(f.a_predicted).epsilon(0.01));
  CHECK(b == Approx(f.b_predicted).margin(0.01 * f.a_predicted * 24));
  // Compute is paid per microbatch; the schedule's bubble once per step.
  const auto term = [&](const char* name) {
    for (const auto& t : f.terms)
      if (t.name == name) return t;
    FAIL("no term " << name);
    return predict::SeriesFit::TermLine{};
  };
  CHECK(std::abs(term("compute").b) < 0.05 * term("compute").a);
  CHECK(term("schedule_bubble").b > 0.1);
  CHECK(std::abs(term("schedule_bubble").a) < 0.01 * term("schedule_bubble").b);
}
