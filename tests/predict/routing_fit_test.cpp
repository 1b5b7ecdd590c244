// `moesim calibrate routing`'s fit (predict/routing_fit.hpp): the popularity dispersion of a
// global-batch-balanced router, fitted to pairs of one recipe run dropless and forced. On
// pairs whose "measurements" are moesim's own predictions at a known sigma, the fit and each
// pair's leave-one-out fit find that sigma again, and the published statistic's ratio is off.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "predict/routing_fit.hpp"
#include "reports/routing_fit.hpp"

using namespace moesim;

namespace {

// Qwen3-30B-A3B on 16 H100, EP16: forced balance, or the trained router's own routing.
config::Json qwen30b(const std::string& name, int seq, bool forced) {
  auto j = config::Json::parse(R"({
    "system": "h100", "gpus": 16, "model": "qwen3-30b-a3b",
    "training": {"micro_batch_size": 1, "global_batch_size": 32, "precision": "bf16"},
    "parallelism": {"ep": 16}})");
  j["name"] = name;
  j["training"]["seq_length"] = seq;
  j["routing"] = forced ? config::Json{{"balance", "forced"}}
                        : config::Json{{"balance", "aux_loss"}, {"coefficient", 0.001}};
  return j;
}

// A pair at `seq`: both runs "measured" at moesim's step, the trained one at `sigma`.
void add_pair(std::vector<config::Scenario>& runs, int seq, double sigma) {
  const std::string forced = fmt::format("f{}", seq), trained = fmt::format("t{}", seq);
  auto jf = qwen30b(forced, seq, true), jt = qwen30b(trained, seq, false);
  auto at = config::load_scenario_json(jt, "t.json");
  at.routing.popularity_sigma = sigma;
  const double t_step = predict::predict(at).step.step_time_s;
  const double f_step = predict::predict(config::load_scenario_json(jf, "f.json")).step.step_time_s;
  jf["measured"] = {{"step_time_s", f_step}, {"source", "synthetic"}};
  jt["measured"] = {{"step_time_s", t_step},
                    {"source", "synthetic"},
                    {"compare_with", {{{"run", forced}, {"decision", "routing"}}}}};
  runs.push_back(config::load_scenario_json(jf, "f.json"));
  runs.push_back(config::load_scenario_json(jt, "t.json"));
}

}  // namespace

TEST_CASE("The routing fit finds the dispersion its pairs were made with", "[predict][routing]") {
  std::vector<config::Scenario> runs;
  add_pair(runs, 4096, 0.7);
  // One pair is not enough for a leave-one-out error.
  CHECK_THROWS_WITH(predict::fit_global_batch_sigma(runs, 2), Catch::Contains("two or more"));
  add_pair(runs, 8192, 0.7);
  const auto r = predict::fit_global_batch_sigma(runs, 2);
  CHECK(r.sigma == Approx(0.7).margin(0.01));
  REQUIRE(r.pairs.size() == 2);
  for (const auto& p : r.pairs) {
    INFO(p.name);
    CHECK(p.loo_sigma == Approx(0.7).margin(0.01));
    CHECK(p.fitted_ratio == Approx(p.measured_ratio).epsilon(2e-3));
    CHECK(p.measured_ratio < 1);  // dropless is slower
    // The published micro-batch statistic's dispersion is far smaller: its ratio nearer 1.
    CHECK(p.statistic_sigma < 0.3);
    CHECK(p.statistic_ratio > p.measured_ratio);
  }
  CHECK(r.loo_mean_abs_error_pct < 0.3);
  CHECK(r.statistic_mean_abs_error_pct > 1);
  // A pair whose trained run gives its own dispersion is not the fit's: one pair is left.
  runs.back().given_keys.push_back("routing.popularity_sigma");
  CHECK_THROWS_WITH(predict::fit_global_batch_sigma(runs, 2), Catch::Contains("1 measured pair "));
  // The profile carries the value where the loader reads it.
  const auto prof = reports::routing_fit_profile(r, "2026-12-05");
  CHECK(prof["parameters"]["routing"]["global_batch_sigma"]["value"].get<double>() ==
        Approx(r.sigma).margin(1e-4));
  CHECK(prof["pairs"].size() == 2);
  CHECK(reports::routing_fit_text(r).find("t8192 vs f8192") != std::string::npos);
}
