// Honest defaults, said out loud (issue #45 item 2): a scenario without a routing block
// predicts routing as its model family trains (workload::trained_routing), `run` lists what
// the scenario left unsaid (config/assumptions.hpp) and what it gives unpriced, and an
// importer leaves out what it would write that changes nothing (config::drop_inert_settings).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "config/assumptions.hpp"
#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/routing_profile.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"
#include "workload/routing.hpp"

using namespace moesim;

namespace {

config::Json qwen30b_h100() {
  return config::Json::parse(R"({
    "name": "q", "system": "h100", "gpus": 16, "model": "qwen3-30b-a3b",
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "precision": "bf16"},
    "parallelism": {"ep": 16}})");
}

bool lists(const std::vector<config::Assumption>& a, const std::string& setting) {
  return std::any_of(a.begin(), a.end(),
                     [&](const config::Assumption& x) { return x.setting == setting; });
}

}  // namespace

TEST_CASE("Trained routing by model family", "[workload][routing][assumptions]") {
  const auto model = [](const char* name) {
    return config::load_scenario_json(
               [&] {
                 auto j = qwen30b_h100();
                 j["model"] = name;
                 j["parallelism"]["ep"] = 8;
                 j["gpus"] = 8;
                 return j;
               }(),
               "t.json")
        .model;
  };
  const auto q = workload::trained_routing(model("qwen3-30b-a3b"));
  CHECK(q.routing.balance == workload::RoutingBalance::aux_loss);
  CHECK(q.routing.aux_loss_coefficient == 1e-3);
  CHECK(q.family);
  CHECK(q.global_batch);  // Qwen3's routers: global-batch balance (Qiu et al., ACL 2025)
  // Qwen3-Next's too: Megatron-Bridge's bridge trains it with global_aux_loss 1e-3.
  const auto next = workload::trained_routing(model("qwen3-next-80b-a3b"));
  CHECK(next.family);
  CHECK(next.global_batch);
  CHECK(next.routing.aux_loss_coefficient == 1e-3);
  const auto m = workload::trained_routing(model("mixtral-8x7b"));
  CHECK(m.routing.aux_loss_coefficient == 1e-2);
  CHECK_FALSE(m.global_batch);
  // A model type with no recipe: Megatron-Core's recommended starting coefficient, said so.
  auto other = model("qwen3-30b-a3b");
  other.model_type = "some_new_moe";
  const auto o = workload::trained_routing(other);
  CHECK_FALSE(o.family);
  CHECK(o.routing.aux_loss_coefficient == 1e-2);
  CHECK(o.source.find("Megatron-Core") != std::string::npos);
  // DeepSeek-V3's expert bias.
  auto ds = config::Json::parse(
      R"({"name": "d", "system": "gb200-nvl72", "gpus": 256, "model": "deepseek-v3",
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024, "precision": "mxfp8"},
    "parallelism": {"pp": 8, "vpp": 4, "ep": 32}})");
  CHECK(config::load_scenario_json(ds, "t.json").routing.balance ==
        workload::RoutingBalance::loss_free);
}

TEST_CASE("A scenario without routing predicts trained routing, slower than forced",
          "[config][assumptions]") {
  auto trained = qwen30b_h100();
  auto forced = qwen30b_h100();
  forced["routing"] = {{"balance", "forced"}};
  const auto st = config::load_scenario_json(trained, "t.json");
  const auto sf = config::load_scenario_json(forced, "t.json");
  CHECK(st.routing.balance == workload::RoutingBalance::aux_loss);
  const auto pt = predict::predict(st), pf = predict::predict(sf);
  CHECK(pt.ep_load > 1.05);
  CHECK(pt.step.step_time_s > pf.step.step_time_s);

  // run names the assumption; given, it is not an assumption.
  const auto a = config::scenario_assumptions(st);
  REQUIRE(lists(a, "routing"));
  CHECK(a.front().setting == "routing");  // the one that moves a prediction most comes first
  CHECK(a.front().assumed.find("aux_loss") != std::string::npos);
  CHECK(lists(a, "stack.release"));
  CHECK(lists(a, "framework.cuda_graph_scope"));
  CHECK(lists(a, "framework.dispatcher"));
  CHECK_FALSE(lists(a, "placement.gpus_per_nvlink_domain"));  // H100: a domain is a node
  CHECK_FALSE(lists(config::scenario_assumptions(sf), "routing"));
  auto said = forced;
  said["stack"] = {{"release", "26.06"}};
  said["framework"] = {{"dispatcher", "deepep"}, {"cuda_graph_scope", config::Json::array()}};
  CHECK(config::scenario_assumptions(config::load_scenario_json(said, "t.json")).empty());
}

TEST_CASE("Placement is an assumption where an NVLink domain spans nodes",
          "[config][assumptions]") {
  const auto sc = config::load_scenario_text(test::default_scenario_json().dump(), "test.json");
  auto j = test::default_scenario_json();
  j.erase("placement");
  CHECK(lists(config::scenario_assumptions(config::load_scenario_json(j, "t.json")),
              "placement.gpus_per_nvlink_domain"));
  j["placement"] = {{"gpus_per_nvlink_domain", 32}};
  CHECK_FALSE(lists(config::scenario_assumptions(config::load_scenario_json(j, "t.json")),
                    "placement.gpus_per_nvlink_domain"));
}

TEST_CASE("Offload is accepted but priced in part, and says so", "[config][assumptions]") {
  auto j = qwen30b_h100();
  CHECK(config::unpriced_settings(config::load_scenario_json(j, "t.json")).empty());
  j["framework"] = {{"offload", {"optimizer", "moe_act"}}};
  const auto u = config::unpriced_settings(config::load_scenario_json(j, "t.json"));
  REQUIRE(u.size() == 2);
  CHECK(u[0].setting == "framework.offload[optimizer]");
  CHECK(u[0].what.find("host optimizer step") != std::string::npos);
  CHECK(u[1].setting == "framework.offload[moe_act]");
}

TEST_CASE("An importer records what changes nothing; run says it in one line",
          "[config][assumptions][import]") {
  auto j = qwen30b_h100();
  j["routing"] = {{"balance", "forced"}};
  // NCCL's all-to-all has no SMs to set; BF16 runs no MXFP8 kernel.
  j["framework"] = {
      {"dispatcher", "alltoall"}, {"dispatcher_sms", 20}, {"cuda_graph_scope", {"moe_router"}}};
  j["stack"] = {{"release", "26.06"}, {"mxfp8_alloc_fusion", false}};
  const auto before = config::load_scenario_json(j, "t.json");
  const auto plain = config::inert_setting_warnings(before);
  REQUIRE(plain.size() == 2);
  CHECK_FALSE(plain[0].recorded);
  auto rec = j;
  const auto names = config::record_inert_settings(rec, "t.json", "moesim import megatron");
  REQUIRE(names ==
          std::vector<std::string>{"framework.dispatcher_sms", "stack.mxfp8_alloc_fusion"});
  // The settings stay (a what-if that moves to DeepEP makes dispatcher_sms act, as in Megatron).
  CHECK(rec["framework"].at("dispatcher_sms") == 20);
  CHECK(rec["stack"].at("release") == "26.06");  // a release is never inert
  const auto after = config::load_scenario_json(rec, "t.json");
  CHECK(after.recorded_by == "moesim import megatron");
  const auto w = config::inert_setting_warnings(after);
  REQUIRE(w.size() == 2);
  CHECK(w[0].recorded);
  CHECK(w[1].recorded);
  CHECK(predict::predict(after).step.step_time_s == predict::predict(before).step.step_time_s);
  // A setting added by hand is warned about as before.
  rec["stack"]["deepep_tuned"] = false;
  const auto hand = config::inert_setting_warnings(config::load_scenario_json(rec, "t.json"));
  CHECK(std::count_if(hand.begin(), hand.end(), [](const auto& x) { return !x.recorded; }) == 1);
  // recorded.inert names only performance settings.
  rec["recorded"]["inert"].push_back("framework.no_such_thing");
  CHECK_THROWS_WITH(
      config::load_scenario_json(rec, "t.json"),
      Catch::Contains("recorded.inert") && Catch::Contains("not a performance setting"));
}

TEST_CASE("A global-batch-balanced family routes at the fitted popularity dispersion",
          "[config][routing]") {
  // Qwen3's routers were pretrained with global-batch balance (workload::TrainedRouting::
  // global_batch): trained routing takes calibration/profiles/routing.json's sigma, as the
  // family default and under an explicit aux_loss block alike; DeepSeek-V3's expert bias and
  // forced balance do not.
  const double fitted = config::global_batch_sigma().value;
  REQUIRE(fitted > 0);
  const auto q = config::load_scenario_json(qwen30b_h100(), "t.json");
  REQUIRE(q.routing.popularity_sigma);
  CHECK(*q.routing.popularity_sigma == fitted);
  CHECK(workload::routing_sigma(q.routing) == fitted);
  auto aux = qwen30b_h100();
  aux["routing"] = {{"balance", "aux_loss"}, {"coefficient", 0.01}};
  CHECK(config::load_scenario_json(aux, "t.json").routing.popularity_sigma == fitted);
  // The file's own dispersion stands; uncalibrated, the published statistic's.
  aux["routing"]["popularity_sigma"] = 0.25;
  CHECK(config::load_scenario_json(aux, "t.json").routing.popularity_sigma == 0.25);
  config::LoadOptions raw;
  raw.calibrated = false;
  const auto u = config::load_scenario_json(qwen30b_h100(), "t.json", raw);
  CHECK_FALSE(u.routing.popularity_sigma);
  CHECK(workload::routing_sigma(u.routing) ==
        workload::popularity_sigma(workload::trained_max_vio(u.routing)));
  // The fitted dispersion loads the hottest rank far more than the statistic's.
  const auto pq = predict::predict(q), pu = predict::predict(u);
  CHECK(pq.ep_load > pu.ep_load + 0.1);
  CHECK(pq.step.step_time_s > pu.step.step_time_s);
  // Not a global-batch family, or not trained: untouched.
  auto mixtral = qwen30b_h100();
  mixtral["model"] = "mixtral-8x7b";
  mixtral["parallelism"]["ep"] = 8;
  mixtral["gpus"] = 8;
  CHECK_FALSE(config::load_scenario_json(mixtral, "t.json").routing.popularity_sigma);
  auto forced = qwen30b_h100();
  forced["routing"] = {{"balance", "forced"}};
  CHECK_FALSE(config::load_scenario_json(forced, "t.json").routing.popularity_sigma);
  // A dispersion without a trained router is refused by name.
  forced["routing"]["popularity_sigma"] = 1.0;
  CHECK_THROWS_WITH(
      config::load_scenario_json(forced, "t.json"),
      Catch::Contains("routing.popularity_sigma") && Catch::Contains("aux_loss or loss_free"));
  aux["routing"]["popularity_sigma"] = 5.0;
  CHECK_THROWS_WITH(config::load_scenario_json(aux, "t.json"),
                    Catch::Contains("routing.popularity_sigma"));
}
