// `moesim plan` (issue #26 item 1, first step) on Qwen3-30B-A3B at 8 H100: the space as
// cli/plan.cpp states it, every candidate accounted for, and the top row the best of a
// brute-force sweep file over the same space.
#include <catch2/catch.hpp>

#include <filesystem>

#include "reports/sweep.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;


TEST_CASE("plan: every candidate of the space accounted for, the top exact", "[cli][plan]") {
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  // The same space as a sweep file (below), in a folder that takes the CSVs too.
  const Json sweep{{"name", "brute"},
                   {"base", scenario},
                   {"grid", {{"gpus", {8}}, {"training.micro_batch_size", {1, 2}}}},
                   {"layouts",
                    {{"tp", {1, 2, 4, 8}},
                     {"pp", {1, 2, 4, 8}},
                     {"vpp", {1, 2, 4, 8}},
                     {"ep", {1, 2, 4, 8}},
                     {"etp", {1}},
                     {"cp", {1, 2}}}}};
  const test::TempFile brute_file(sweep.dump(2), "brute.json");
  const auto in_dir = [&](const char* name) {
    return (std::filesystem::path(brute_file.path()).parent_path() / name).string();
  };
  const auto run = test::run_moesim({"plan", scenario, "--gpus", "8", "--json", "--top", "3", "-o",
                                     in_dir("plan.csv"), "--jobs", "2"});
  REQUIRE(run.status == 0);
  const auto j = Json::parse(run.out);
  // MBS {1, 2} x TP {1, 2, 4, 8} x PP {1, 2, 4, 8} x VPP {1, 2, 4, 8} x EP {1, 2, 4, 8} x
  // ETP {1} x CP {1, 2} (4K tokens a sequence): 1,024 combinations, rows or pruned by a rule.
  CHECK(j["combinations"] == 1024);
  std::int64_t pruned = 0;
  for (const auto& [rule, n] : j["pruned_layouts"].items()) pruned += n.get<std::int64_t>();
  CHECK(j["rows"].get<std::int64_t>() + pruned == 1024);
  std::int64_t fates = 0;
  for (const auto& [status, n] : j["status"].items()) fates += n.get<std::int64_t>();
  CHECK(fates == j["rows"].get<std::int64_t>());
  REQUIRE(j["top"].size() == 3);

  // The brute-force sweep: its best row is the plan's top.
  const auto brute = test::run_moesim({"sweep", brute_file.path(), "-o", in_dir("brute.csv"), "--json", "--top",
                                       "1", "--jobs", "2"});
  REQUIRE(brute.status == 0);
  const auto b = Json::parse(brute.out);
  CHECK(b["rows"] == j["rows"]);
  CHECK(b["top"][0]["tokens_per_s_per_gpu"] == j["top"][0]["tokens_per_s_per_gpu"]);
  CHECK(b["top"][0]["parallelism.tp"] == j["top"][0]["parallelism.tp"]);
  CHECK(b["top"][0]["parallelism.ep"] == j["top"][0]["parallelism.ep"]);
  // No ok row of the CSV beats the top.
  const auto csv = reports::read_sweep_csv(in_dir("plan.csv"));
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(csv.header.begin(), csv.header.end(), name) - csv.header.begin());
  };
  for (const auto& r : csv.rows)
    if (r.fields[col("status")] == "ok")
      CHECK(std::stod(r.fields[col("tokens_per_s_per_gpu")]) <= j["top"][0]["tokens_per_s_per_gpu"].get<double>());
}

TEST_CASE("plan: bad options are refused", "[cli][plan][errors]") {
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  auto r = test::run_moesim({"plan", scenario, "--objective", "speed"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown objective 'speed'"));
  r = test::run_moesim({"plan", scenario, "--objective", "days"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("'days' needs --token-budget"));
}
