// Uneven routing: the hottest EP rank's load, by hand and from the loader, and its effect
// on the step.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/load.hpp"
#include "reports/run.hpp"
#include "support/helpers.hpp"
#include "workload/routing.hpp"

using namespace moesim;

TEST_CASE("The hottest rank's load over the mean, by hand", "[workload][routing]") {
  // Two ranks of two experts: [1, 1 | 2, 0] is balanced; [3, 1 | 1, 1] gives 4 / 3.
  CHECK(workload::hottest_rank_load({1, 1, 2, 0}, 2) == Approx(1.0));
  CHECK(workload::hottest_rank_load({3, 1, 1, 1}, 2) == Approx(4.0 / 3));
  CHECK(workload::hottest_rank_load({3, 1, 1, 1}, 4) ==
        Approx(2.0));  // one expert per rank: 3 / 1.5
  CHECK_THROWS_AS(workload::hottest_rank_load({1, 1, 1}, 2), std::invalid_argument);
  CHECK_THROWS_AS(workload::hottest_rank_load({0, 0}, 1), std::invalid_argument);
}

TEST_CASE(
    "Sampled routing: forced is 1, uniform a little above, steep Zipf the top-k experts' ranks",
    "[workload][routing]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  const auto& m = sc.model;  // DeepSeek-V3: 256 experts, top-8, 58 MoE layers
  workload::Routing r;
  CHECK(workload::ep_gating_load(r, m, 32, 4096) == 1);
  r.balance = workload::RoutingBalance::sampled;
  r.distribution = workload::RoutingDistribution::uniform;
  r.seed = 7;
  // Uniform: each rank's count is a sum of binomials, mean n k / ep = 32768, sd about
  // sqrt(32768) = 181, so the max of 32 ranks sits about 2 sd (1.1%) above the mean.
  const double u = workload::ep_gating_load(r, m, 32, 4096);
  CHECK(u > 1.003);
  CHECK(u < 1.03);
  CHECK(workload::ep_gating_load(r, m, 32, 4096) == u);  // same seed, same load
  r.seed = 8;
  CHECK(workload::ep_gating_load(r, m, 32, 4096) != u);
  // Steep Zipf: every token picks the same 8 most popular experts (q = 1 each, the rest
  // about 0), so the hottest rank holds j of them and G = j x ep / k, a whole multiple of 4
  // per layer at ep 32; averaged over layers it lies between 4 and 32.
  r.distribution = workload::RoutingDistribution::zipf;
  r.alpha = 60;
  const double z = workload::ep_gating_load(r, m, 32, 4096);
  CHECK(z >= 4);
  CHECK(z <= 32);
  r.alpha = 0.5;
  const double mild = workload::ep_gating_load(r, m, 32, 4096);
  CHECK(mild > u);
  CHECK(mild < z);
}

TEST_CASE("Token dropping caps the hottest rank at the capacity factor", "[workload][routing]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  const auto& m = sc.model;
  workload::Routing r;
  // Forced balance: every expert at its mean; a capacity below it drops the rest.
  CHECK(workload::ep_gating_load(r, m, 32, 4096, 1.0) == 1);
  CHECK(workload::ep_gating_load(r, m, 32, 4096, 0.5) == Approx(0.5));
  // Steep Zipf: each of the 8 hot experts keeps 1.5 x its mean, the rest was dropped.
  r.balance = workload::RoutingBalance::sampled;
  r.alpha = 60;
  const double uncapped = workload::ep_gating_load(r, m, 32, 4096);
  const double capped = workload::ep_gating_load(r, m, 32, 4096, 1.5);
  CHECK(capped <= 1.5 + 1e-9);
  CHECK(capped < uncapped);
  // By hand: 2 ranks of 2 experts, counts [6, 2 | 0, 0], mean 2: capacity 1.5 keeps
  // [3, 2 | 0, 0]: the hot rank's 5 copies over the balanced 8 / 2 = 4.
  workload::Routing h;
  h.balance = workload::RoutingBalance::histogram;
  h.histogram = {{6, 2, 0, 0}};
  workload::ModelConfig four = m;
  four.num_experts = 4;
  CHECK(workload::ep_gating_load(h, four, 2, 1, 1.5) == Approx(5.0 / 4));
  CHECK(workload::ep_gating_load(h, four, 2, 1) == Approx(2.0));
}

TEST_CASE("HybridEP's rank budget caps each layer's hottest rank at the factor",
          "[workload][routing]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  workload::ModelConfig four = sc.model;
  four.num_experts = 4;
  // By hand: 2 ranks of 2 experts. Layer 1 counts [6, 2 | 0, 0]: G = 8 / 4 = 2; layer 2
  // [2, 2 | 2, 2]: G = 1. A budget of 1.5 x the balanced keeps 6 of layer 1's 8 copies:
  // (1.5 + 1) / 2 = 1.25 over the layers, against (2 + 1) / 2 uncapped.
  workload::Routing h;
  h.balance = workload::RoutingBalance::histogram;
  h.histogram = {{6, 2, 0, 0}, {2, 2, 2, 2}};
  four.num_layers = 2;
  four.moe_layer = {true, true};
  REQUIRE(four.num_moe_layers() == 2);
  CHECK(workload::ep_gating_load(h, four, 2, 1) == Approx(1.5));
  CHECK(workload::ep_gating_load(h, four, 2, 1, std::nullopt, std::nullopt, 1.5) == Approx(1.25));
  // After the experts' own capacity (1.5 keeps [3, 2 | 0, 0]: G 1.25) a budget of 1.5
  // no longer binds; one of 1.1 does: (1.1 + 1) / 2.
  CHECK(workload::ep_gating_load(h, four, 2, 1, 1.5, std::nullopt, 1.5) == Approx((1.25 + 1) / 2));
  CHECK(workload::ep_gating_load(h, four, 2, 1, 1.5, std::nullopt, 1.1) == Approx((1.1 + 1) / 2));
  // Forced balance never reaches a budget of at least 1.
  CHECK(workload::ep_gating_load(workload::Routing{}, four, 2, 1, std::nullopt, std::nullopt,
                                 1.0) == 1);
  // Trained routing: every layer's G capped, the spread between microbatches with it.
  workload::Routing aux;
  aux.balance = workload::RoutingBalance::aux_loss;
  aux.aux_loss_coefficient = 0.0001;
  const double free = workload::ep_gating_load(aux, sc.model, 32, 4096);
  const double capped =
      workload::ep_gating_load(aux, sc.model, 32, 4096, std::nullopt, std::nullopt, 1.05);
  REQUIRE(free > 1.05);
  CHECK(capped <= 1.05 + 1e-12);
  CHECK(workload::ep_load_cv(aux, sc.model, 32, 4096, std::nullopt, std::nullopt, 1.0) ==
        Approx(0).margin(1e-12));
}

TEST_CASE("Routing histograms: read, checked against the model, and their load",
          "[workload][routing][config]") {
  const auto dir = std::filesystem::temp_directory_path() / "moesim-routing-test";
  std::filesystem::create_directories(dir);
  auto j = test::default_scenario_json();
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  // Two layers: balanced, and expert 0 with 8x the others' tokens (rank 0 of 32 holds
  // experts 0-7: (8 + 7) / (263 / 32) = 1.8251). Cycled over 58 layers: 29 each.
  std::string balanced = "[", hot = "[";
  for (int e = 0; e < 256; ++e) {
    balanced += (e ? ",1" : "1");
    hot += (e ? ",1" : "8");
  }
  balanced += "]";
  hot += "]";
  j["routing"] = {{"balance", "histogram"},
                  {"path", write("two.json", "[" + balanced + "," + hot + "]")}};
  auto sc = config::load_scenario_text(j.dump(), "t.json");
  REQUIRE(sc.routing.histogram.size() == 2);
  const double g = workload::ep_gating_load(sc.routing, sc.model, sc.parallelism.ep, 4096);
  CHECK(g == Approx((1.0 + 15.0 / (263.0 / 32)) / 2));
  // A balanced histogram prices exactly as forced balance; a skewed one is slower.
  j["routing"] = {{"balance", "histogram"}, {"path", write("flat.json", balanced)}};
  const auto flat = predict::predict(config::load_scenario_text(j.dump(), "t.json"));
  const auto forced =
      predict::predict(config::load_scenario_text(test::default_scenario_json().dump(), "t.json"));
  CHECK(flat.ep_load == 1);
  CHECK(flat.step.step_time_s == Approx(forced.step.step_time_s).epsilon(1e-12));
  const auto skewed = predict::predict(sc);
  CHECK(skewed.ep_load == Approx(g));
  CHECK(skewed.step.step_time_s > forced.step.step_time_s * 1.05);
  // Bad files: the wrong number of experts, a negative count; errors name the file and path.
  j["routing"] = {{"balance", "histogram"}, {"path", write("short.json", "[1, 2, 3]")}};
  try {
    config::load_scenario_text(j.dump(), "t.json");
    FAIL("a 3-expert histogram was accepted");
  } catch (const config::InputError& e) {
    CHECK_THAT(e.file(), Catch::Contains("short.json"));
    CHECK_THAT(e.message(), Catch::Contains("3 expert counts for a model with 256 routed experts"));
  }
  j["routing"] = {
      {"balance", "histogram"},
      {"path", write("neg.json", "[[" + balanced.substr(1, balanced.size() - 2) + "], [-1]]")}};
  try {
    config::load_scenario_text(j.dump(), "t.json");
    FAIL("a negative count was accepted");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "[1][0]");
  }
}

TEST_CASE(
    "Trained routing: MaxVio from Wang et al., the lognormal dispersion behind it, the load order",
    "[workload][routing]") {
  workload::Routing r;
  r.balance = workload::RoutingBalance::loss_free;
  CHECK(workload::trained_max_vio(r) == 0.04);  // Table 2
  r.balance = workload::RoutingBalance::aux_loss;
  r.aux_loss_coefficient = 0.001;
  CHECK(workload::trained_max_vio(r) == Approx(0.52));  // Table 2, 3B
  // The power law carries Table 6's ratio over: 0.937 / 0.72 from c = 0.001 to 0.0003.
  r.aux_loss_coefficient = 0.0003;
  CHECK(workload::trained_max_vio(r) == Approx(0.52 * 0.937 / 0.72));
  CHECK(workload::aux_loss_exponent() == Approx(0.2188).epsilon(1e-3));
  // Expected MaxVio of lognormal popularities: for small sigma it is sigma x E[max of 64
  // standard normals] = 2.3437 sigma (the largest order statistic's mean), to first order.
  CHECK(workload::expected_max_vio(0.001, 64) == Approx(0.0023437).epsilon(0.003));
  CHECK(workload::expected_max_vio(0, 64) == Approx(0).margin(1e-9));
  for (double v : {0.04, 0.31, 0.52, 0.9})
    CHECK(workload::expected_max_vio(workload::popularity_sigma(v), workload::kMaxVioExperts) ==
          Approx(v).epsilon(1e-6));

  // The hottest EP32 rank of DeepSeek-V3 (4096 tokens per rank): forced < loss-free <
  // aux-loss 0.01 < aux-loss 0.001, and the same seed gives the same load.
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  const auto load = [&](workload::Routing rr) {
    return workload::ep_gating_load(rr, sc.model, 32, 4096);
  };
  workload::Routing free;
  free.balance = workload::RoutingBalance::loss_free;
  workload::Routing aux01 = r, aux001 = r;
  aux01.aux_loss_coefficient = 0.01;
  aux001.aux_loss_coefficient = 0.001;
  CHECK(load(workload::Routing{}) == 1);
  CHECK(load(free) > 1.0);
  CHECK(load(free) < load(aux01));
  CHECK(load(aux01) < load(aux001));
  CHECK(load(aux01) == load(aux01));
  workload::Routing reseeded = free;
  reseeded.seed = 9;
  CHECK(load(reseeded) != load(free));
}

TEST_CASE("EPLB in the routing model: the copies lower the hottest rank's load",
          "[workload][routing][eplb]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  workload::Routing r;
  r.balance = workload::RoutingBalance::aux_loss;
  r.aux_loss_coefficient = 0.001;
  workload::EplbSetup e;
  e.gpus = 32;
  e.groups = 8;
  e.nodes = 1;
  e.replicas = 256;
  const double plain = workload::ep_gating_load(r, sc.model, 32, 4096);
  const double placed = workload::ep_gating_load(r, sc.model, 32, 4096, std::nullopt, e);
  e.replicas = 256 + 64;
  const double copied = workload::ep_gating_load(r, sc.model, 32, 4096, std::nullopt, e);
  CHECK(placed < plain);   // placement alone balances the persistent popularity
  CHECK(copied < placed);  // copies split the hottest experts
  CHECK(copied >= 1.0);
  // Forced routing: every expert equal, the placement keeps every GPU at the mean.
  CHECK(workload::ep_gating_load(workload::Routing{}, sc.model, 32, 4096, std::nullopt, e) ==
        Approx(1.0));
}

TEST_CASE("Trained routing's popularity dispersion: the statistic's, or the one given",
          "[workload][routing]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "t.json");
  const auto& m = sc.model;  // DeepSeek-V3: 256 experts, top-8
  workload::Routing r;
  r.balance = workload::RoutingBalance::aux_loss;
  r.aux_loss_coefficient = 1e-3;
  // Absent: the sigma whose expected MaxVio over 64 experts is the statistic's 0.52.
  const double stat = workload::routing_sigma(r);
  CHECK(stat == workload::popularity_sigma(workload::trained_max_vio(r)));
  CHECK(workload::expected_max_vio(stat, workload::kMaxVioExperts) == Approx(0.52).epsilon(1e-3));
  const double g_stat = workload::ep_gating_load(r, m, 32, 4096);
  // Given: that sigma, and a wider spread loads the hottest rank more.
  r.popularity_sigma = stat;
  CHECK(workload::ep_gating_load(r, m, 32, 4096) == g_stat);
  r.popularity_sigma = 1.0;
  CHECK(workload::routing_sigma(r) == 1.0);
  const double g_wide = workload::ep_gating_load(r, m, 32, 4096);
  CHECK(g_wide > g_stat + 0.2);
  CHECK(workload::ep_load_cv(r, m, 32, 4096) > 0);
  r.popularity_sigma = 0.0;  // every expert equally popular: only the sampling noise is left
  const double g_even = workload::ep_gating_load(r, m, 32, 4096);
  CHECK(g_even < g_stat);
  CHECK(g_even > 1.0);
}
