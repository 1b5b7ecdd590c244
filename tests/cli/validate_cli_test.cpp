// moesim validate for CI (issue #17 item 5): JUnit XML, a Markdown summary, and a
// baseline of earlier predictions.
#include <catch2/catch.hpp>

#include <filesystem>

#include "support/helpers.hpp"

using namespace moesim;

namespace {
// Journey step 13 with a tolerance it cannot meet, beside step 12 as shipped.
std::string tight(const test::TempFile& dir_of) {
  auto j = nlohmann::json::parse(
      test::read_text(test::source_path("scenarios/journey/13-norm-quant-fusion.json")));
  j["measured"]["tflops_per_gpu"] = 900.0;  // the prediction is about 970
  j["measured"]["tolerance_pct"] = 1;
  const auto path = std::filesystem::path(dir_of.path()).parent_path() / "tight.json";
  std::ofstream(path) << j.dump();
  return path.string();
}
}  // namespace

TEST_CASE("validate --junit and --markdown: one case per run, failures with the figures",
          "[cli][validate]") {
  test::TempFile junit("", "out.xml");
  const std::string md = std::filesystem::path(junit.path()).replace_filename("out.md").string();
  const std::string bad = tight(junit);
  const std::string ok = test::source_path("scenarios/journey/12-te-host-slim.json");
  const auto r = test::run_moesim(
      {"validate", "--jobs", "2", "--junit", junit.path(), "--markdown", md, ok, bad});
  CHECK(r.status == 1);  // step 13 is beyond its 1%
  const std::string xml = test::read_text(junit.path());
  CHECK_THAT(xml, Catch::StartsWith("<?xml"));
  // Two runs and step 13's pair with step 12 (measured 900 / 956.2 = 0.941, predicted about
  // 1.003: beyond the pair's tolerance and the wrong way).
  CHECK_THAT(xml, Catch::Contains("tests=\"3\" failures=\"2\""));
  CHECK_THAT(
      xml, Catch::Contains(
               "classname=\"moesim.pair.fusion\" name=\"dsv3-gb200-journey-13-norm-quant-fusion vs "
               "dsv3-gb200-journey-12-te-host-slim\""));
  CHECK_THAT(xml, Catch::Contains("measured 0.9412 ("));
  CHECK_THAT(xml, Catch::Contains("; wrong direction)"));
  CHECK_THAT(xml, Catch::Contains("name=\"dsv3-gb200-journey-12-te-host-slim\""));
  CHECK_THAT(xml, Catch::Contains("<failure message=\"tflops_per_gpu: predicted "));
  CHECK_THAT(xml, Catch::Contains("measured 900 ("));
  const std::string text = test::read_text(md);
  CHECK_THAT(text, Catch::Contains("| scenario | system | dispatcher |"));
  CHECK_THAT(text, Catch::Contains("**over**"));
  CHECK_THAT(text, Catch::Contains("1 beyond tolerance"));
  CHECK_THAT(text, Catch::Contains("| pair (B vs A) | decision |"));
  CHECK_THAT(text, Catch::Contains("**wrong direction**"));
}

TEST_CASE("validate --baseline flags predictions that moved", "[cli][validate]") {
  const std::string step = test::source_path("scenarios/journey/12-te-host-slim.json");
  const auto first = test::run_moesim({"validate", "--json", step});
  REQUIRE(first.status == 0);
  test::TempFile same(first.out, "same.json");
  CHECK(test::run_moesim({"validate", "--baseline", same.path(), step}).status == 0);
  // The same baseline with the prediction 3% lower: moved beyond 1% (exit 1), within 5%.
  auto j = nlohmann::json::parse(first.out);
  j["rows"][0]["predicted"] = j["rows"][0]["predicted"].get<double>() / 1.03;
  test::TempFile moved(j.dump(), "moved.json");
  const auto r = test::run_moesim({"validate", "--baseline", moved.path(), step});
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("MOVED dsv3-gb200-journey-12-te-host-slim"));
  CHECK(
      test::run_moesim({"validate", "--baseline", moved.path(), "--baseline-tolerance", "5", step})
          .status == 0);
  // The drift shows where CI reads: a failed JUnit case and a flagged Markdown row (and
  // neither within the tolerance).
  const std::string xml =
      std::filesystem::path(moved.path()).replace_filename("drift.xml").string();
  const std::string md = std::filesystem::path(moved.path()).replace_filename("drift.md").string();
  CHECK(test::run_moesim(
            {"validate", "--baseline", moved.path(), "--junit", xml, "--markdown", md, step})
            .status == 1);
  CHECK_THAT(test::read_text(xml), Catch::Contains("failures=\"1\"") &&
                                       Catch::Contains("type=\"moved against the baseline\"") &&
                                       Catch::Contains("moved +3.00% (more than 1%)"));
  CHECK_THAT(test::read_text(md), Catch::Contains("**moved +3.00%**") &&
                                      Catch::Contains("1 prediction moved more than 1%"));
  CHECK(test::run_moesim({"validate", "--baseline", moved.path(), "--baseline-tolerance", "5",
                          "--junit", xml, "--markdown", md, step})
            .status == 0);
  CHECK_THAT(test::read_text(xml), Catch::Contains("failures=\"0\""));
  CHECK_THAT(test::read_text(md), !Catch::Contains("**moved"));
  const auto js = test::run_moesim({"validate", "--json", "--baseline", moved.path(), step});
  CHECK(nlohmann::json::parse(js.out)["baseline"]["flagged"] == 1);
  // Not a validate output: exit 2 before anything is simulated.
  test::TempFile bad(R"({"x": 1})", "bad.json");
  const auto b = test::run_moesim({"validate", "--baseline", bad.path(), step});
  CHECK(b.status == 2);
  CHECK_THAT(b.err, Catch::Contains("bad.json: rows:"));
}

TEST_CASE("validate --baseline watches scenarios without a measured block", "[cli][validate]") {
  // A planning scenario beside a measured run: predicted with --unmeasured (implied by
  // --baseline), its step time compared with the baseline's (issue #27 item 4).
  const std::string step = test::source_path("scenarios/journey/12-te-host-slim.json");
  const std::string plan = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  const auto only = test::run_moesim({"validate", plan});
  CHECK(only.status == 2);
  CHECK_THAT(only.err, Catch::Contains("--unmeasured predicts those without one"));
  CHECK(test::run_moesim({"validate", "--unmeasured", plan}).status == 0);
  const auto first = test::run_moesim({"validate", "--json", "--unmeasured", step, plan});
  REQUIRE(first.status == 0);
  auto j = nlohmann::json::parse(first.out);
  REQUIRE(j["predictions"].size() == 1);
  CHECK(j["predictions"][0]["name"] == "qwen3-30b-a3b-h100");
  CHECK(j["predictions"][0]["step_time_s"].get<double>() > 0);
  CHECK(j["skipped_without_measured"] == 0);
  CHECK(j["rows"].size() == 1);
  test::TempFile same(first.out, "same-pred.json");
  CHECK(test::run_moesim({"validate", "--baseline", same.path(), step, plan}).status == 0);
  // The planning scenario's step 3% faster in the baseline: flagged, and only it.
  j["predictions"][0]["step_time_s"] = j["predictions"][0]["step_time_s"].get<double>() / 1.03;
  test::TempFile moved(j.dump(), "moved-pred.json");
  const std::string xml = std::filesystem::path(moved.path()).replace_filename("pred.xml").string();
  const std::string md = std::filesystem::path(moved.path()).replace_filename("pred.md").string();
  const auto r = test::run_moesim(
      {"validate", "--baseline", moved.path(), "--junit", xml, "--markdown", md, step, plan});
  CHECK(r.status == 1);
  CHECK_THAT(r.out,
             Catch::Contains("MOVED qwen3-30b-a3b-h100") && Catch::Contains("1 prediction moved"));
  CHECK_THAT(test::read_text(xml), Catch::Contains("tests=\"2\" failures=\"1\"") &&
                                       Catch::Contains("classname=\"moesim.predict.h100\"") &&
                                       Catch::Contains("type=\"moved against the baseline\""));
  CHECK_THAT(test::read_text(md), Catch::Contains("| scenario without a measurement |") &&
                                      Catch::Contains("**moved +3.00%**"));
  // A baseline of measured rows only: the prediction is new there, not a move; and a
  // measured row never matches a prediction of the same file.
  j.erase("predictions");
  test::TempFile rows_only(j.dump(), "rows-only.json");
  const auto n = test::run_moesim({"validate", "--baseline", rows_only.path(), step, plan});
  CHECK(n.status == 0);
  CHECK_THAT(n.out, Catch::Contains("new   qwen3-30b-a3b-h100"));
}

TEST_CASE(
    "validate --json carries pairs and families; a pair whose other run is absent is unresolved",
    "[cli][validate][pairs]") {
  const auto r = test::run_moesim(
      {"validate", "--json", "--jobs", "2", test::source_path("scenarios/journey")});
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.contains("pairs"));
  CHECK(j["pairs"].size() == 12);  // each step against the one before
  for (const auto& p : j["pairs"])
    for (const char* k : {"name", "decision", "predicted_ratio", "measured_ratio",
                          "ratio_error_pct", "direction_right", "source"})
      CHECK(p.contains(k));
  CHECK(j["pairs_summary"]["pairs"] == 12);
  CHECK(j["unresolved_pairs"].empty());
  // Step 13 alone: its pair names step 12, which is not validated in this call: said, not dropped.
  const auto one = test::run_moesim(
      {"validate", test::source_path("scenarios/journey/13-norm-quant-fusion.json")});
  CHECK(one.status == 0);
  CHECK_THAT(one.out,
             Catch::Contains("unresolved pair: ") &&
                 Catch::Contains(
                     "compares with 'dsv3-gb200-journey-12-te-host-slim', which is not among"));
}

TEST_CASE("validate --deterministic: --json and --junit byte-identical between runs",
          "[cli][validate]") {
  test::TempFile a_xml("", "a.xml"), b_xml("", "b.xml");
  const std::string dir = test::source_path("scenarios/journey");
  const auto a = test::run_moesim({"validate", "--json", "--deterministic", "--unmeasured",
                                   "--jobs", "2", "--junit", a_xml.path(), dir});
  const auto b = test::run_moesim({"validate", "--json", "--deterministic", "--unmeasured",
                                   "--jobs", "2", "--junit", b_xml.path(), dir});
  REQUIRE(a.status == b.status);
  CHECK(a.out == b.out);
  CHECK(test::read_text(a_xml.path()) == test::read_text(b_xml.path()));
  const auto j = nlohmann::json::parse(a.out);
  REQUIRE_FALSE(j["rows"].empty());
  CHECK_FALSE(j["rows"][0].contains("wall_s"));
  CHECK_THAT(test::read_text(a_xml.path()), Catch::Contains("time=\"0.000\""));
  // Without the flag each row carries its wall time.
  const auto timed =
      test::run_moesim({"validate", "--json", "--jobs", "2",
                        test::source_path("scenarios/journey/12-te-host-slim.json")});
  CHECK(nlohmann::json::parse(timed.out)["rows"][0].contains("wall_s"));
}

TEST_CASE(
    "validate --set: every prediction a what-if, said first (each set as run's caveats and a "
    "sweep row's predicted_with write it); no evidence file under it",
    "[cli][validate]") {
  const std::string step = test::source_path("scenarios/journey/12-te-host-slim.json");
  const auto plain = nlohmann::json::parse(test::run_moesim({"validate", "--json", step}).out);
  const auto r = test::run_moesim(
      {"validate", "--json", "--set", "efficiency.sustained_clock_factor=1.00", step});
  REQUIRE((r.status == 0 || r.status == 1));
  const auto what_if = nlohmann::json::parse(r.out);
  CHECK(what_if["system_set"] == nlohmann::json::array({"efficiency.sustained_clock_factor=1"}));
  CHECK(plain.find("system_set") == plain.end());
  CHECK(what_if["rows"][0]["predicted"].get<double>() >
        plain["rows"][0]["predicted"].get<double>());  // TFLOPS/GPU: faster clocks, more
  const auto text = test::run_moesim({"validate", "--set", "host.op_us=3.0", step});
  CHECK_THAT(text.out, Catch::StartsWith("what-if: every system with host.op_us=3 set on the "
                                         "command line (--set), not the calibrated model"));
  test::TempFile evidence("", "evidence.json");
  const auto refused =
      test::run_moesim({"validate", "--evidence", evidence.path(), "--set", "host.op_us=3", step});
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, Catch::Contains("--evidence: records the calibrated model's pairs"));
}
