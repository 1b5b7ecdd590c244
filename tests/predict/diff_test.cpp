// moesim diff: the step-time difference split into contributions that add up to it, and
// the HybridEP step of the journey explained by its communication.
#include <catch2/catch.hpp>

#include <cmath>

#include "predict/diff.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("diff: contributions add up to the step-time difference", "[predict][diff]") {
  const auto a = config::load_scenario_file(
      test::source_path("scenarios/journey/10-graph-shared-expert.json"));
  const auto b =
      config::load_scenario_file(test::source_path("scenarios/journey/11-hybridep.json"));
  const auto pa = predict::predict(a), pb = predict::predict(b);
  const predict::Difference d = predict::difference(pa, pb);
  const double delta = d.step_time_b_s - d.step_time_a_s;
  double sum = 0;
  for (const auto& c : d.contributions) sum += c.delta_s();
  REQUIRE(delta < 0);  // HybridEP is faster (journey step 11: 830 -> 944 TFLOPS measured)
  CHECK(std::abs(sum - delta) <= 0.01 * std::abs(delta));
  CHECK(std::abs(d.residual_s) <= 0.01 * std::abs(delta));
  // Sorted by size; the largest is EP communication, which HybridEP shortens.
  for (std::size_t i = 1; i < d.contributions.size(); ++i)
    CHECK(std::abs(d.contributions[i - 1].delta_s()) >= std::abs(d.contributions[i].delta_s()));
  REQUIRE(!d.contributions.empty());
  CHECK(d.contributions[0].category == "exposed_communication");
  CHECK(d.contributions[0].item == "ep");
  CHECK(d.contributions[0].delta_s() < 0);
  // A scenario against itself: no difference, no contribution.
  const predict::Difference same = predict::difference(pa, pa);
  for (const auto& c : same.contributions) CHECK(c.delta_s() == 0);
}

TEST_CASE("diff on the command line: text, JSON and bad input", "[cli][diff]") {
  const std::string a = test::source_path("scenarios/journey/10-graph-shared-expert.json");
  const std::string b = test::source_path("scenarios/journey/11-hybridep.json");
  const auto text = test::run_moesim({"diff", a, b});
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("/framework/dispatcher: \"deepep\" -> \"hybridep\""));
  CHECK_THAT(text.out, Catch::Contains("exposed_communication / ep"));
  CHECK_THAT(text.out, Catch::Contains("sum of contributions"));
  const auto js = test::run_moesim({"diff", "--json", a, b});
  REQUIRE(js.status == 0);
  const auto j = nlohmann::json::parse(js.out);
  double sum = 0;
  for (const auto& c : j["contributions"]) sum += c["delta_s"].get<double>();
  CHECK(sum == Approx(j["step_time_delta_s"].get<double>()).epsilon(0.01));
  CHECK(j["change"]["tflops_per_gpu"].get<double>() > 0);
  CHECK(j["settings_changed"].size() == 3);
  // What the what-if corpus says about the gain: the dispatcher and fusion decisions behind it.
  std::vector<std::string> decided;
  for (const auto& d : j["evidence"]["decisions"]) decided.push_back(d["decision"]);
  CHECK(decided == std::vector<std::string>{"dispatcher", "fusion"});
  CHECK(j["evidence"]["gain_pct"].get<double>() > 0);
  CHECK(j["evidence"].contains("support"));
  CHECK_THAT(text.out, Catch::Contains("what the what-if corpus says about B's +"));
  // The model's band on B / A (predict/bands.hpp): HybridEP's +17% lies clear of 1.
  const auto& band = j["ratio_band"];
  REQUIRE(band["tokens_per_s_per_gpu_ratio"].size() == 2);
  const double ratio = 1 + j["evidence"]["gain_pct"].get<double>() / 100;
  CHECK(band["tokens_per_s_per_gpu_ratio"][0].get<double>() < ratio);
  CHECK(band["tokens_per_s_per_gpu_ratio"][1].get<double>() > ratio);
  CHECK(band["within"] == false);
  CHECK(band["level"] == 0.8);
  CHECK_THAT(text.out, Catch::Contains("the model's 80% band on B / A"));
  // Each side carries its own prediction's band, as run --json does: around its figure.
  for (const char* side : {"a", "b"}) {
    const auto& sb = j[side]["bands"];
    REQUIRE(sb["tokens_per_s_per_gpu"].size() == 2);
    const double tok = j[side]["tokens_per_s_per_gpu"].get<double>();
    CHECK(sb["tokens_per_s_per_gpu"][0].get<double>() < tok);
    CHECK(sb["tokens_per_s_per_gpu"][1].get<double>() > tok);
    CHECK(sb["step_time_s"][0].get<double>() < j[side]["step_time_s"].get<double>());
    CHECK(sb["level"] == 0.8);
  }
  // A list is one setting (an empty one included).
  const auto graphs = test::run_moesim(
      {"diff", "--json", test::source_path("scenarios/journey/05-no-mla-recompute.json"),
       test::source_path("scenarios/journey/06-partial-cuda-graphs.json")});
  REQUIRE(graphs.status == 0);
  const auto g = nlohmann::json::parse(graphs.out)["settings_changed"];
  REQUIRE(g.size() == 1);
  CHECK(g[0]["path"] == "/framework/cuda_graph_scope");
  CHECK(g[0]["a"] == nlohmann::json::array());
  const auto bad = test::run_moesim({"diff", a, "no-such-file.json"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("no-such-file.json"));
}

TEST_CASE("diff per token: sides with different tokens per GPU per step", "[predict][diff]") {
  // The default scenario at 256 and at 512 GPUs, the same global batch: B's step is about
  // half as long and does half the work per GPU. The difference is read per token
  // (predict/diff.hpp): u = T G / N, each term x G / N, and the terms still add up.
  auto j = nlohmann::json::parse(test::read_text(test::source_path("scenarios/dsv3-gb200.json")));
  const auto a = config::load_scenario_text(j.dump(), "a256.json");
  j["gpus"] = 512;
  const auto b = config::load_scenario_text(j.dump(), "b512.json");
  const auto pa = predict::predict(a), pb = predict::predict(b);
  const predict::Difference d = predict::difference(pa, pb);
  REQUIRE(d.per_token);
  CHECK(d.tokens_per_gpu_a == Approx(2 * d.tokens_per_gpu_b));
  CHECK(d.tokens_per_gpu_a == Approx(pa.tokens_per_step / 256));
  // u = 1e6 / tokens_per_s_per_gpu, and each side's terms scale by G / N.
  CHECK(d.gpu_us_per_token_a == Approx(1e6 / pa.tokens_per_s_per_gpu));
  CHECK(d.gpu_us_per_token_b == Approx(1e6 / pb.tokens_per_s_per_gpu));
  double sum = 0;
  for (const auto& c : d.contributions) {
    sum += c.delta_us();
    CHECK(c.a_us == Approx(c.a_s * 1e6 / d.tokens_per_gpu_a));
    CHECK(c.b_us == Approx(c.b_s * 1e6 / d.tokens_per_gpu_b));
  }
  const double du = d.gpu_us_per_token_b - d.gpu_us_per_token_a;
  CHECK(sum == Approx(du).margin(1e-6));
  // B's step time is shorter, but per token B costs more: the bubble, which does not shrink
  // with fewer microbatches, leads; compute per token is the same work on either side.
  CHECK(d.step_time_b_s < d.step_time_a_s);
  REQUIRE(du > 0);
  REQUIRE(!d.contributions.empty());
  CHECK(d.contributions[0].category == "pipeline_bubble");
  CHECK(d.contributions[0].delta_us() > 0);
  double compute_us = 0;
  for (const auto& c : d.contributions)
    if (c.category == "compute") compute_us += c.delta_us();
  CHECK(std::abs(compute_us) < 0.05 * du);
  for (std::size_t i = 1; i < d.contributions.size(); ++i)
    CHECK(std::abs(d.contributions[i - 1].delta_us()) >= std::abs(d.contributions[i].delta_us()));
  // The same tokens per GPU: the step-time basis, as before.
  CHECK_FALSE(predict::difference(pa, pa).per_token);

  // The command line says so, and its JSON keeps the step-time keys beside the new ones.
  test::TempFile fa(
      nlohmann::json::parse(test::read_text(test::source_path("scenarios/dsv3-gb200.json"))).dump(),
      "a256.json"),
      fb(j.dump(), "b512.json");
  const auto text = test::run_moesim({"diff", fa.path(), fb.path()});
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out,
             Catch::Contains("process different tokens per GPU per step (32768 and 16384)") &&
                 Catch::Contains("GPU-time per token") && Catch::Contains("B - A us"));
  const auto js =
      nlohmann::json::parse(test::run_moesim({"diff", "--json", fa.path(), fb.path()}).out);
  CHECK(js["basis"] == "gpu_time_per_token");
  CHECK(js["step_time_delta_s"].get<double>() < 0);
  CHECK(js["gpu_us_per_token_delta"].get<double>() == Approx(du));
  CHECK(js["contributions"][0].contains("delta_s"));
  CHECK(js["contributions"][0]["delta_us_per_token"].get<double>() ==
        Approx(d.contributions[0].delta_us()));
  CHECK(js["a"]["gpu_us_per_token"].get<double>() == Approx(d.gpu_us_per_token_a));
}
