// The measured-run registry: one scenario per step of docs/reference/gb200-journey.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "config/load.hpp"
#include "reports/describe.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
std::vector<std::string> journey_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(test::source_path("scenarios/journey")))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Leaf paths where two resolved scenarios differ (describe --json, minus identity keys).
std::vector<std::string> differing(const config::Json& a, const config::Json& b) {
  const auto patch =
      nlohmann::json::diff(nlohmann::json::parse(a.dump()), nlohmann::json::parse(b.dump()));
  std::vector<std::string> out;
  for (const auto& op : patch) {
    const std::string path = op["path"];
    if (path.rfind("/name", 0) == 0 || path.rfind("/file", 0) == 0 ||
        path.rfind("/description", 0) == 0 || path.rfind("/measured", 0) == 0)
      continue;
    // Elements appended to an array diff as ".../-", once each: count the array once.
    out.push_back(path.size() > 2 && path.compare(path.size() - 2, 2, "/-") == 0
                      ? path.substr(0, path.size() - 2)
                      : path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}
}  // namespace

TEST_CASE("All 13 journey steps load with their measurements", "[config][journey]") {
  const auto files = journey_files();
  REQUIRE(files.size() == 13);
  // Published TFLOPS/GPU, step 1..13 (gb200-journey.md).
  const double published[] = {494.46, 529.55, 540.00, 566.07, 610.71, 663.27, 691.49,
                              762.12, 797.67, 829.93, 943.56, 956.21, 970.01};
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO(files[i]);
    const auto sc = config::load_scenario_file(files[i]);
    REQUIRE(sc.measured);
    CHECK(sc.measured->metric == config::MeasuredMetric::tflops_per_gpu);
    CHECK(sc.measured->value == published[i]);
    CHECK(sc.gpus == 256);
    CHECK(sc.parallelism.ep == 32);
    CHECK(sc.parallelism.vpp == 4);
    CHECK(sc.placement.gpus_per_nvlink_domain == 32);
    CHECK(predict::summarize(sc).flops_per_token / 1e9 == Approx(249.81).epsilon(0.001));
  }
}

TEST_CASE("Each journey step changes only its own switch", "[config][journey]") {
  const auto files = journey_files();
  // Expected changed leaves per step (2..13), from the journey's change column.
  const std::vector<std::vector<std::string>> expected = {
      {"/stack/mxfp8_alloc_fusion", "/stack/permute_fusion_v2"},
      {"/stack/router_fusion"},
      {"/framework/dispatcher", "/framework/dispatcher_sms"},
      {"/framework/recompute_modules/0",
       "/framework/recompute_modules/1"},  // [mla_up_proj, mlp] -> [mlp, moe_act]
      {"/framework/cuda_graph_scope"},
      {"/stack/deepep_tuned"},
      {"/stack/cpu_numa_binding"},
      {"/stack/pdl_quant", "/stack/swizzle_fusion"},
      {"/stack/cuda_graph_shared_expert"},
      {"/framework/dispatcher", "/framework/dispatcher_sms", "/stack/hybridep_permute_fusion"},
      {"/stack/te_host_slim"},
      {"/stack/norm_quant_fusion"}};
  for (std::size_t i = 1; i < files.size(); ++i) {
    INFO(files[i]);
    const auto a = reports::describe_json(config::load_scenario_file(files[i - 1]));
    const auto b = reports::describe_json(config::load_scenario_file(files[i]));
    auto d = differing(a, b);
    std::sort(d.begin(), d.end());
    auto e = expected[i - 1];
    std::sort(e.begin(), e.end());
    CHECK(d == e);
  }
}

TEST_CASE("The default scenario equals journey step 13 without its measurement",
          "[config][journey]") {
  const auto files = journey_files();
  auto last = reports::describe_json(config::load_scenario_file(files.back()));
  const auto def = reports::describe_json(
      config::load_scenario_file(test::source_path("scenarios/dsv3-gb200.json")));
  // The journey ran a build of its own (stack.release "custom", every switch given); the
  // default scenario names no release: the same switches, the newest stack.
  CHECK(last["stack"]["release"] == "custom");
  last["stack"].erase("release");
  // Step 13 captures moe_preprocess as NVIDIA's recipe does; under HybridEP that scope is
  // inert (run warns), and the default scenario leaves it out so that it runs without a
  // warning. Nothing else differs.
  auto& scope = last["framework"]["cuda_graph_scope"];
  const auto pre = std::find(scope.begin(), scope.end(), "moe_preprocess");
  REQUIRE(pre != scope.end());
  scope.erase(pre);
  CHECK(differing(last, def).empty());
  CHECK_FALSE(def.contains("measured"));
}
