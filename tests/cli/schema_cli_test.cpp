// moesim schema (issue #27 item 3): the JSON Schemas compiled into the binary are the
// files in schema/, which tests/schema/check_schema.py holds to the loader and to every
// shipped file.
#include <catch2/catch.hpp>

#include "config/sweep_file.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("moesim schema prints the schema files", "[cli][schema]") {
  for (const char* which : {"scenario", "sweep"}) {
    const auto r = test::run_moesim({"schema", which});
    REQUIRE(r.status == 0);
    const auto printed = nlohmann::json::parse(r.out);
    const auto file = nlohmann::json::parse(
        test::read_text(test::source_path(std::string("schema/") + which + ".schema.json")));
    CHECK(printed == file);
    CHECK(printed["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  }
  const auto bad = test::run_moesim({"schema", "model"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("model not in {scenario,sweep}"));
}

TEST_CASE("A sweep grid varies goodput and cost keys too", "[config][sweep][schema]") {
  const auto sweep =
      config::read_sweep_text(R"({"name": "g", "base": {"name": "b", "system": "h100", "gpus": 8,
      "model": "qwen3-30b-a3b", "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64,
      "precision": "bf16"}, "parallelism": {"ep": 8}},
      "grid": {"goodput.async_save": [false, true], "cost.pue": [1.1, 1.3]}})",
                              "g.json");
  const auto plan = config::expand_sweep(sweep);
  CHECK(plan.points.size() == 4);
  CHECK(plan.points[3].scenario["cost"]["pue"] == 1.3);
  CHECK(plan.points[3].scenario["goodput"]["async_save"] == true);
}
