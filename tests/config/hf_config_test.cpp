// A scenario's model as a path to a Hugging Face config.json (issue #17 item 2).
#include <catch2/catch.hpp>

#include <filesystem>

#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("A model given as a config.json path resolves as the preset does", "[config][hf]") {
  // The default scenario with DeepSeek-V3's config.json as published on the Hub.
  const auto a = test::run_moesim(
      {"describe", "--json", test::source_path("tests/data/dsv3-gb200-hf-config.json")});
  const auto b =
      test::run_moesim({"describe", "--json", test::source_path("scenarios/dsv3-gb200.json")});
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["model"]["name"] == "hf/deepseek-v3/config.json");
  for (auto* j : {&ja, &jb})
    for (const char* k : {"name", "file", "description"}) j->erase(k);
  ja["model"].erase("name");
  jb["model"].erase("name");
  CHECK(ja == jb);
}

TEST_CASE("A config.json path is relative to the scenario and its errors name the files",
          "[config][hf]") {
  const std::string hf =
      test::read_text(test::source_path("tests/data/hf/deepseek-v3/config.json"));
  auto sc = test::default_scenario_json();
  sc["model"] = "models/config.json";
  SECTION("resolved next to the scenario file") {
    test::TempFile f(sc.dump());
    std::filesystem::create_directories(std::filesystem::path(f.path()).parent_path() / "models");
    {
      std::ofstream(std::filesystem::path(f.path()).parent_path() / "models" / "config.json") << hf;
    }
    const auto r = test::run_moesim({"run", "--json", f.path()});
    CHECK(r.status == 0);
  }
  SECTION("a missing file: exit 2, the scenario's file and JSON path") {
    test::TempFile f(sc.dump());
    const auto r = test::run_moesim({"run", f.path()});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(f.path() + ": model: no Hugging Face config file"));
  }
  SECTION("an unknown key in the config: exit 2, the config's file and the key") {
    auto j = nlohmann::json::parse(hf);
    j["num_hiden_layers"] = 3;
    test::TempFile f(sc.dump());
    const auto dir = std::filesystem::path(f.path()).parent_path() / "models";
    std::filesystem::create_directories(dir);
    { std::ofstream(dir / "config.json") << j.dump(); }
    const auto r = test::run_moesim({"run", f.path()});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("config.json"));
    CHECK_THAT(r.err, Catch::Contains("num_hiden_layers"));
  }
}
