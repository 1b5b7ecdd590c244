// `moesim plan` keeps its work (issue #45 item 1): each simulated candidate goes to
// OUT.partial as its wave ends; a stop (SIGTERM, SIGINT: PlanRequest::stop) ends the search
// between waves, and `--resume` simulates only what the file lacks, to the same result as
// a run never stopped (the search is deterministic).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <stop_token>

#include "predict/plan.hpp"
#include "reports/sweep.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

namespace {
const std::string kScenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");

// A CSV's rows without the wall-time column (the one nondeterministic figure).
std::map<std::int64_t, std::vector<std::string>> rows_without_wall(const reports::SweepCsv& csv) {
  std::map<std::int64_t, std::vector<std::string>> out;
  for (const auto& r : csv.rows) out[r.id] = {r.fields.begin(), r.fields.end() - 1};
  return out;
}
}  // namespace

TEST_CASE("plan --resume: rows kept from an earlier run, the rest simulated, the same result",
          "[cli][plan]") {
  const test::TempFile full("", "plan-full.csv"), resumed("", "plan-resumed.csv");
  const std::vector<std::string> opts{"--gpus", "8", "--json", "--top", "3", "--jobs", "2"};
  auto args = std::vector<std::string>{"plan", kScenario, "-o", full.path()};
  args.insert(args.end(), opts.begin(), opts.end());
  const auto a = test::run_moesim(args);
  REQUIRE(a.status == 0);
  const auto ja = Json::parse(a.out);
  CHECK_FALSE(std::filesystem::exists(full.path() + ".partial"));  // a finished plan keeps none
  // What a stopped run would have kept: the header and half of the simulated rows.
  const auto csv = reports::read_sweep_csv(full.path());
  const auto status = static_cast<std::size_t>(
      std::find(csv.header.begin(), csv.header.end(), "status") - csv.header.begin());
  std::vector<const reports::SweepCsv::Row*> simulated;
  for (const auto& r : csv.rows)
    if (r.fields[status] == "ok" || r.fields[status] == "error") simulated.push_back(&r);
  REQUIRE(simulated.size() >= 4);
  {
    std::ofstream partial(resumed.path() + ".partial", std::ios::binary);
    partial << reports::csv_line(csv.header);
    for (std::size_t i = 0; i < simulated.size() / 2; ++i)
      partial << reports::csv_line(simulated[i]->fields);
    partial << "12,cut off while wr";  // a last line without its end: dropped
  }
  args = {"plan", kScenario, "-o", resumed.path(), "--resume"};
  args.insert(args.end(), opts.begin(), opts.end());
  const auto b = test::run_moesim(args);
  REQUIRE(b.status == 0);
  CHECK_THAT(b.err, Catch::Contains("dropped a truncated last line"));
  const auto jb = Json::parse(b.out);
  CHECK(jb["fates"] == ja["fates"]);
  CHECK(jb["simulated"] == ja["simulated"]);
  REQUIRE(jb["top"].size() == ja["top"].size());
  for (std::size_t i = 0; i < ja["top"].size(); ++i)
    CHECK(jb["top"][i]["id"] == ja["top"][i]["id"]);
  CHECK(rows_without_wall(reports::read_sweep_csv(resumed.path())) == rows_without_wall(csv));
  CHECK_FALSE(std::filesystem::exists(resumed.path() + ".partial"));

  // Kept by another plan (other columns): refused, naming the file.
  {
    std::ofstream partial(resumed.path() + ".partial", std::ios::binary);
    partial << "id,gpus,status\n";
  }
  args = {"plan", kScenario, "-o", resumed.path(), "--resume", "--settings", "recompute"};
  const auto c = test::run_moesim(args);
  CHECK(c.status == 2);
  CHECK_THAT(c.err, Catch::Contains(".partial") && Catch::Contains("kept by another plan"));
  std::filesystem::remove(resumed.path() + ".partial");
}

TEST_CASE(
    "plan: a stop ends the search between waves; resuming its rows gives the uninterrupted result",
    "[predict][plan]") {
  predict::PlanRequest req;
  req.scenario_file = kScenario;
  req.gpus = 8;
  req.top = 3;
  req.jobs = 2;
  const predict::Plan whole = predict::plan(req);
  REQUIRE(whole.outcome.simulated > predict::kPlanWave);
  REQUIRE_FALSE(whole.outcome.stopped);

  // Stopped once the first wave is told: the rows it kept are that wave's.
  std::stop_source stop;
  std::map<std::int64_t, predict::SweepResult> kept;
  predict::PlanRequest first = req;
  first.stop = stop.get_token();
  first.simulated = [&](const predict::PlanColumns&, const predict::PlanCandidate& c) {
    kept[c.point.id] = c.row;
    stop.request_stop();
  };
  const predict::Plan cut = predict::plan(first);
  CHECK(cut.outcome.stopped);
  CHECK(cut.outcome.simulated == predict::kPlanWave);
  CHECK(kept.size() == static_cast<std::size_t>(predict::kPlanWave));

  predict::PlanRequest again = req;
  again.resume = [&](const predict::PlanColumns&) { return kept; };
  const predict::Plan resumed = predict::plan(again);
  CHECK_FALSE(resumed.outcome.stopped);
  CHECK(resumed.outcome.resumed == predict::kPlanWave);
  CHECK(resumed.outcome.simulated == whole.outcome.simulated);
  REQUIRE(resumed.outcome.candidates.size() == whole.outcome.candidates.size());
  for (std::size_t i = 0; i < whole.outcome.candidates.size(); ++i) {
    const auto &x = whole.outcome.candidates[i], &y = resumed.outcome.candidates[i];
    CHECK(x.point.id == y.point.id);
    CHECK(x.row.status == y.row.status);
    CHECK(x.row.step_time_s == y.row.step_time_s);
  }
}

TEST_CASE("plan --emit: the K-th candidate as a scenario whose run is the plan's row",
          "[cli][plan]") {
  const test::TempFile out("", "plan-emit.csv"), emitted("", "plan-emit-2.json");
  const std::vector<std::string> opts{"plan",   kScenario, "-o", out.path(), "--gpus", "8",
                                      "--json", "--top",   "3",  "--jobs",   "2"};
  auto args = opts;
  const auto a = test::run_moesim(args);
  REQUIRE(a.status == 0);
  const auto ja = Json::parse(a.out);
  REQUIRE(ja["top"].size() >= 2);
  // Each of the top says whether the model's 80% ratio band reaches the best (the best does).
  CHECK(ja["top"][0]["within_band_of_best"] == true);
  CHECK(ja["top"][1]["within_band_of_best"].is_boolean());
  // After the plan finished, --resume takes its CSV: nothing is simulated again.
  args.insert(args.end(), {"--resume", "--emit", "2", "--emit-file", emitted.path()});
  const auto b = test::run_moesim(args);
  REQUIRE(b.status == 0);
  CHECK_THAT(b.err, Catch::Contains("wrote candidate 2"));
  CHECK(Json::parse(b.out)["top"] == ja["top"]);
  const auto sc = Json::parse(test::read_text(emitted.path()));
  CHECK(sc["name"].get<std::string>().ends_with("-plan-2"));
  CHECK_FALSE(sc.contains("measured"));
  CHECK_THAT(sc["description"].get<std::string>(), Catch::Contains("parallelism.ep="));
  // The round trip: run on the emitted scenario predicts the plan's row.
  const auto r = test::run_moesim({"run", "--json", emitted.path()});
  REQUIRE(r.status == 0);
  const auto jr = Json::parse(r.out);
  const auto& row = ja["top"][1];
  CHECK(jr["step_time_s"].get<double>() == Approx(row["step_time_s"].get<double>()).epsilon(1e-12));
  CHECK(jr["tokens_per_s_per_gpu"].get<double>() ==
        Approx(row["tokens_per_s_per_gpu"].get<double>()).epsilon(1e-12));
  CHECK(jr["peak_memory_gib"].get<double>() ==
        Approx(row["peak_memory_gib"].get<double>()).epsilon(1e-12));
  // Past the ranking: refused before planning.
  const auto c = test::run_moesim({"plan", kScenario, "--top", "3", "--emit", "4"});
  CHECK(c.status == 2);
  CHECK_THAT(c.err, Catch::Contains("--emit") && Catch::Contains("past the ranking"));
}

TEST_CASE(
    "plan --deterministic: the same plan writes the same CSV byte for byte; --resume "
    "reads it",
    "[cli][plan]") {
  const test::TempFile a("", "plan-a.csv"), b("", "plan-b.csv");
  const auto plan = [&](const std::string& out, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"plan",  kScenario, "-o",     out, "--gpus",         "8",
                                  "--top", "3",       "--jobs", "2", "--deterministic"};
    args.insert(args.end(), more.begin(), more.end());
    return test::run_moesim(args);
  };
  REQUIRE(plan(a.path()).status == 0);
  REQUIRE(plan(b.path()).status == 0);
  const std::string text = test::read_text(a.path());
  CHECK(text == test::read_text(b.path()));
  const auto csv = reports::read_sweep_csv(a.path());
  REQUIRE_FALSE(csv.rows.empty());
  for (const auto& r : csv.rows) CHECK(r.fields.back().empty());
  // A finished deterministic plan resumed: its rows taken, the file the same.
  const auto again = plan(a.path(), {"--resume"});
  REQUIRE(again.status == 0);
  CHECK(test::read_text(a.path()) == text);
}
