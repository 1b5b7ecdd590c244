// Sweep files (config/sweep_file.hpp): their errors name the file and JSON path; the
// expansion's row count, order and pruned layouts follow from the lists by hand.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "config/sweep_file.hpp"
#include "schedules/pp_layout.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

namespace {

// The shipped quick example's base (Qwen3-30B-A3B, 48 layers, 128 experts, 32 heads with
// 4 KV groups, 16 H100, GBS 512, MBS 2) with the given grid and layouts.
Json sweep(Json grid, Json layouts = nullptr) {
  Json j = {{"name", "t"},
            {"base", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json")},
            {"grid", grid}};
  if (!layouts.is_null()) j["layouts"] = layouts;
  return j;
}

config::InputError sweep_error(const Json& j) {
  try {
    config::read_sweep_text(j.dump(), "sweep.json");
  } catch (const config::InputError& e) {
    return e;
  }
  throw std::runtime_error("expected an InputError: " + j.dump());
}

}  // namespace

TEST_CASE("Sweep file errors name the file and the JSON path", "[config][sweep]") {
  const Json ok = sweep({{"gpus", {16, 32}}});
  CHECK_NOTHROW(config::read_sweep_text(ok.dump(), "sweep.json"));

  Json j = ok;
  j["grids"] = j["grid"];
  auto e = sweep_error(j);
  CHECK(e.file() == "sweep.json");
  CHECK(e.path() == "grids");
  CHECK_THAT(e.message(), Catch::Contains("did you mean 'grid'?"));

  j = ok;
  j["grid"] = {{"framework.dispatcher", Json::array()}};
  e = sweep_error(j);
  CHECK(e.path() == "grid.framework.dispatcher");
  CHECK_THAT(e.message(), Catch::Contains("non-empty list"));

  j = ok;
  j["grid"] = {{"framwork.dispatcher", {"deepep"}}};
  CHECK_THAT(sweep_error(j).message(), Catch::Contains("'framwork' is not a scenario key"));

  j = ok;
  j["layouts"] = {{"dp", {1, 2}}};
  e = sweep_error(j);
  CHECK(e.path() == "layouts.dp");
  CHECK_THAT(e.message(), Catch::Contains("unknown key 'dp'"));

  j = ok;
  j["layouts"] = {{"tp", {1, 0}}};
  CHECK(sweep_error(j).path() == "layouts.tp[1]");

  j = ok;
  j["layouts"] = {{"tp", {1, 2}}};
  j["grid"]["parallelism.tp"] = {1};
  e = sweep_error(j);
  CHECK(e.path() == "grid.parallelism.tp");
  CHECK_THAT(e.message(), Catch::Contains("`layouts` sets parallelism.tp"));

  j = ok;
  j["objective"] = "tokens";
  e = sweep_error(j);
  CHECK(e.path() == "objective");
  CHECK_THAT(e.message(), Catch::Contains("known: tokens_per_s_per_gpu"));

  j = ok;
  j["objective"] = "days";  // needs a token budget
  CHECK_THAT(sweep_error(j).message(), Catch::Contains("needs a token_budget"));
  j["objective"] = "days_with_goodput";
  CHECK_THAT(sweep_error(j).message(), Catch::Contains("'days_with_goodput' needs a token_budget"));

  j = ok;
  j["base"] = "no-such-scenario.json";
  e = sweep_error(j);
  CHECK(e.path() == "base");
  CHECK_THAT(e.message(), Catch::Contains("does not exist"));

  CHECK_THAT(sweep_error(Json::parse("{\"name\": \"t\", \"base\": 3}")).message(),
             Catch::Contains("expected a scenario file's path or an inline scenario object"));
  try {
    config::read_sweep_text("{\"name\": ", "broken.json");
    FAIL("malformed JSON loaded");
  } catch (const config::InputError& e2) {
    CHECK(e2.file() == "broken.json");
    CHECK_THAT(e2.message(), Catch::Contains("malformed JSON"));
  }
}

TEST_CASE("A sweep expands to the grid's product, last key fastest", "[config][sweep]") {
  const auto f =
      config::read_sweep_text(sweep({{"gpus", {16, 32}},
                                     {"framework.dispatcher", {"alltoall", "deepep", "hybridep"}},
                                     {"system.nvlink.bw_GBps", {450}}})
                                  .dump(),
                              "sweep.json");
  const auto plan = config::expand_sweep(f);
  REQUIRE(plan.points.size() == 6);  // 2 x 3 x 1
  CHECK(plan.combinations == 6);
  CHECK(plan.columns ==
        std::vector<std::string>{"gpus", "framework.dispatcher", "system.nvlink.bw_GBps"});
  CHECK(plan.points[0].values == std::vector<std::string>{"16", "alltoall", "450"});
  CHECK(plan.points[1].values == std::vector<std::string>{"16", "deepep", "450"});
  CHECK(plan.points[5].values == std::vector<std::string>{"32", "hybridep", "450"});
  for (std::size_t i = 0; i < plan.points.size(); ++i)
    CHECK(plan.points[i].id == static_cast<std::int64_t>(i));
  // A preset name on the way becomes an inline object with that base.
  CHECK(plan.points[3].scenario["system"] ==
        Json({{"base", "h100"}, {"nvlink", {{"bw_GBps", 450}}}}));
  CHECK(plan.points[3].scenario["gpus"] == 32);
  CHECK(plan.points[4].scenario["framework"]["dispatcher"] == "deepep");
  CHECK(plan.points[4].scenario["framework"]["recompute_modules"] ==
        Json({"moe_act"}));  // the base's
}

TEST_CASE("Layouts that break a layout rule are counted, not rows", "[config][sweep]") {
  // 16 GPUs, Qwen3-30B-A3B (48 layers, 128 experts, 32 heads, 4 KV groups), GBS 512 / MBS 2.
  // tp {1, 2, 8} x pp {1, 2, 4} x ep {4, 8, 16}: 27 combinations. Rules in order:
  //  gpus_over_tp_pp_cp: tp 8 x pp 4 = 32 does not divide 16 GPUs: 3 (every ep).
  //  ep_outside_stage: a stage has 16 / pp GPUs: pp 2 (8) breaks ep 16 for tp 1, 2, 8 (3);
  //    pp 4 (4) breaks ep 8 and 16 for tp 1, 2 (4): 7.
  //  heads_over_tp: 4 KV groups are not divisible by tp 8: the tp 8 combinations left,
  //    pp 1 with ep 4, 8, 16 and pp 2 with ep 4, 8: 5.
  //  batch_over_dp: 512 / (2 x dp), dp = 16 / (tp x pp), always divides.
  // Rows: 27 - 3 - 7 - 5 = 12.
  const auto f = config::read_sweep_text(
      sweep({{"gpus", {16}}}, {{"tp", {1, 2, 8}}, {"pp", {1, 2, 4}}, {"ep", {4, 8, 16}}}).dump(),
      "sweep.json");
  const auto plan = config::expand_sweep(f);
  CHECK(plan.combinations == 27);
  CHECK(plan.points.size() == 12);
  using P = std::vector<std::pair<std::string, std::int64_t>>;
  CHECK(plan.pruned == P{{"gpus_over_tp_pp_cp", 3}, {"ep_outside_stage", 7}, {"heads_over_tp", 5}});
  CHECK(plan.columns == std::vector<std::string>{"gpus", "parallelism.tp", "parallelism.pp",
                                                 "parallelism.ep", "parallelism.pp_layout"});
  // The first row: tp 1, pp 1, ep 4, the default split of 48 layers on one stage.
  CHECK(plan.points[0].values == std::vector<std::string>{"16", "1", "1", "4", "Et*48L"});
  CHECK(plan.points[0].scenario["parallelism"]["pp_layout"] == "Et*48L");
  // Every kept layout loads.
  for (const auto& p : plan.points)
    CHECK_NOTHROW(config::load_scenario_json(p.scenario, f.base_file));
}

TEST_CASE("The default split's text parses to the default split", "[config][sweep]") {
  // DeepSeek-V3's 61 layers over 8 x 4 = 32 virtual stages: 61 = 32 + 29, so the first 29
  // stages take 2 layers and the last 3 one.
  CHECK(config::default_layout_text(61, 0, 8, 4) == "Et*2|(t*2|)*28(t|)*2tL");
  CHECK(config::default_layout_text(4, 1, 2, 2) == "Et|(t|)*2tmL");
  CHECK(config::default_layout_text(48, 0, 1, 1) == "Et*48L");
  for (const auto& [layers, mtp, pp, vpp] : std::vector<std::array<int, 4>>{{61, 0, 8, 4},
                                                                            {61, 1, 16, 2},
                                                                            {48, 0, 4, 1},
                                                                            {7, 2, 2, 3},
                                                                            {94, 0, 8, 1},
                                                                            {5, 0, 5, 1}}) {
    const auto text = config::default_layout_text(layers, mtp, pp, vpp);
    INFO(text);
    const auto parsed = schedules::PipelineLayout::parse(text, pp);
    const auto even = schedules::PipelineLayout::even(layers, mtp, pp, vpp);
    REQUIRE(parsed.stages().size() == even.stages().size());
    for (std::size_t s = 0; s < even.stages().size(); ++s)
      CHECK(parsed.stages()[s].to_string() == even.stages()[s].to_string());
  }
}

TEST_CASE("The embedding-and-loss split counts each as a layer", "[config][sweep]") {
  using config::PipelineSplit;
  // DeepSeek-V3's 61 layers + E + L = 63 units over 32 stages: 31 take 2 units, the last 1:
  // the journey's published layout.
  CHECK(config::layout_text(PipelineSplit::embedding_loss, 61, 0, 8, 4) == "Et|(t*2|)*30L");
  // 62 units over 2 stages divide: Megatron's account-for-embedding-and-loss split gives
  // each stage 31 units, E + 30 layers and 30 layers + L ... 60 layers.
  CHECK(config::layout_text(PipelineSplit::embedding_loss, 60, 0, 2, 1) == "Et*30|t*30L");
  // MTP layers count too: 4 + 1 + 2 = 7 units over 4 stages: 2, 2, 2, 1.
  CHECK(config::layout_text(PipelineSplit::embedding_loss, 4, 1, 2, 2) == "Et|t*2|tm|L");
  // One stage: the same as the even split (a layout rule prunes the twin).
  CHECK(config::layout_text(PipelineSplit::embedding_loss, 48, 0, 1, 1) ==
        config::layout_text(PipelineSplit::even, 48, 0, 1, 1));
  // Every text parses and places every layer once.
  for (const auto& [layers, mtp, pp, vpp] : std::vector<std::array<int, 4>>{
           {61, 0, 8, 4}, {61, 1, 16, 2}, {94, 0, 8, 1}, {7, 2, 2, 3}}) {
    const auto text = config::layout_text(PipelineSplit::embedding_loss, layers, mtp, pp, vpp);
    INFO(text);
    const auto parsed = schedules::PipelineLayout::parse(text, pp);
    REQUIRE(static_cast<int>(parsed.stages().size()) == pp * vpp);
    std::int64_t t = 0, m = 0;
    for (const auto& st : parsed.stages())
      t += st.count(schedules::LayoutItemKind::decoder),
          m += st.count(schedules::LayoutItemKind::mtp);
    CHECK(t == layers);
    CHECK(m == mtp);
  }
}

TEST_CASE("layouts.pp_split: a row per split, the even split's twins pruned", "[config][sweep]") {
  const std::string base = test::source_path("scenarios/dsv3-gb200.json");
  const auto f = config::read_sweep_text(
      fmt::format(
          R"({{"name": "s", "base": "{}", "layouts": {{"pp": [1, 8], "vpp": [4], "pp_split": ["even", "embedding_loss"]}}}})",
          base),
      "s.json");
  const auto plan = config::expand_sweep(f);
  // pp 1 with vpp 4 breaks vpp_without_pp (both splits); pp 8 vpp 4 gives two rows.
  REQUIRE(plan.points.size() == 2);
  CHECK(plan.points[0].scenario["parallelism"]["pp_layout"] == "Et*2|(t*2|)*28(t|)*2tL");
  CHECK(plan.points[1].scenario["parallelism"]["pp_layout"] == "Et|(t*2|)*30L");
  CHECK(plan.combinations == 4);
  CHECK_THROWS_WITH(
      config::read_sweep_text(
          fmt::format(
              R"({{"name": "s", "base": "{}", "layouts": {{"pp_split": ["even", "even"]}}}})",
              base),
          "s.json"),
      Catch::Contains("listed twice"));
  CHECK_THROWS_WITH(
      config::read_sweep_text(
          fmt::format(R"({{"name": "s", "base": "{}", "layouts": {{"pp_split": ["uneven"]}}}})",
                      base),
          "s.json"),
      Catch::Contains("embedding_loss"));
}

TEST_CASE("No shipped sweep's row is refused for the software release its base names",
          "[config][sweep][releases]") {
  // A base of a build of its own (stack.release "custom") must give every switch a swept
  // system or dispatcher may make act (DeepEP's tuning on an NVL72 rack, say).
  namespace fs = std::filesystem;
  int rows = 0;
  for (const auto& e : fs::directory_iterator(test::source_path("scenarios/sweeps"))) {
    const auto plan = config::expand_sweep(config::read_sweep_file(e.path().string()));
    for (const auto& p : plan.points) {
      ++rows;
      try {
        config::load_scenario_json(p.scenario, e.path().string());
      } catch (const config::InputError& err) {
        INFO(e.path().filename().string() << " row " << p.id << ": " << err.what());
        CHECK(err.path() != "stack.release");
      }
    }
  }
  CHECK(rows > 2000);
}
