// The sweep CSV (reports/sweep.hpp): quoting that reads back, a truncated last line
// dropped, merges that report missing and duplicated rows, and the top-K / Pareto
// summary on hand-made rows.
#include <catch2/catch.hpp>

#include "reports/sweep.hpp"
#include "reports/sweep_detail.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

// A CSV with the summary's columns: id, gpus, status, objective figures, days, gpu_hours.
const std::string kHeader =
    "id,gpus,status,message,step_time_s,tflops_per_gpu,tokens_per_s_per_gpu,mfu,peak_memory_gib,"
    "days,gpu_hours,"
    "sim_wall_s\n";

}  // namespace

TEST_CASE("CSV fields with commas, quotes and line breaks read back", "[reports][sweep]") {
  const std::vector<std::string> fields = {
      "0", "[\"attn\",\"moe\"]", "say \"hi\"", "two\nlines", "", "1.5", "ok"};
  const std::string line = reports::csv_line(fields);
  CHECK(line == "0,\"[\"\"attn\"\",\"\"moe\"\"]\",\"say \"\"hi\"\"\",\"two\nlines\",,1.5,ok\n");
  const test::TempFile f("id,a,b,c,d,e,status\n" + line);
  const auto csv = reports::read_sweep_csv(f.path());
  REQUIRE(csv.rows.size() == 1);
  CHECK(csv.rows[0].fields == fields);
  CHECK_FALSE(csv.dropped_partial_line);
}

TEST_CASE("A last line cut off while written is dropped; other damage is an error",
          "[reports][sweep]") {
  const test::TempFile cut("id,status\n0,ok\n1,ok\n2,o");
  const auto csv = reports::read_sweep_csv(cut.path());
  CHECK(csv.rows.size() == 2);
  CHECK(csv.dropped_partial_line);

  const test::TempFile bad("id,status\n0,ok\n1,ok,extra\n2,ok\n");
  try {
    reports::read_sweep_csv(bad.path());
    FAIL("a row with a field too many was read");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "line 3");
    CHECK_THAT(e.message(), Catch::Contains("3 fields where the header has 2"));
  }
  // Rows are read typed: a figure that is no number names its row and column, and a file
  // without a status column is no sweep's.
  const test::TempFile banana("id,status,step_time_s\n0,ok,1.5\n4,ok,banana\n");
  try {
    reports::read_sweep_csv(banana.path());
    FAIL("banana read as a step time");
  } catch (const config::InputError& e) {
    CHECK(e.file() == banana.path() + ": row 4");
    CHECK(e.path() == "step_time_s");
  }
  const test::TempFile typed("id,status,step_time_s\n0,ok,1.5\n1,invalid,\n");
  const auto t = reports::read_sweep_csv(typed.path());
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].result.has_timing);
  CHECK(t.rows[0].result.step_time_s == 1.5);
  CHECK(t.rows[1].result.status == predict::SweepStatus::invalid);
  CHECK_FALSE(t.rows[1].result.has_timing);
  const test::TempFile no_status("id,a\n0,x\n");
  CHECK_THROWS_WITH(reports::read_sweep_csv(no_status.path()),
                    Catch::Contains("no 'status' column"));
}

TEST_CASE("Merging shards reports missing, duplicated and conflicting rows", "[reports][sweep]") {
  const test::TempFile a("id,v,status,sim_wall_s\n0,a,ok,0.1\n2,c,ok,0.3\n");
  const test::TempFile b(  // 2 again, another wall time
      "id,v,status,sim_wall_s\n1,b,ok,0.2\n2,c,ok,0.9\n5,f,ok,0.1\n");
  const test::TempFile c("id,v,status,sim_wall_s\n5,F,ok,0.1\n");  // 5 again, another value
  auto m = reports::merge_sweep_csvs({a.path(), b.path(), c.path()}, std::nullopt);
  CHECK(m.missing == std::vector<std::int64_t>{3, 4});
  CHECK(m.duplicated == std::vector<std::int64_t>{2, 5});
  CHECK(m.conflicting == std::vector<std::int64_t>{5});
  CHECK(reports::sweep_csv_text(m.csv) ==
        "id,v,status,sim_wall_s\n0,a,ok,0.1\n1,b,ok,0.2\n2,c,ok,0.3\n5,f,ok,0.1\n");
  // The sweep's row count finds rows missing at the end too.
  m = reports::merge_sweep_csvs({a.path(), b.path()}, 8);
  CHECK(m.missing == std::vector<std::int64_t>{3, 4, 6, 7});

  const test::TempFile other("id,w,status,sim_wall_s\n3,d,ok,0.1\n");
  CHECK_THROWS_AS(reports::merge_sweep_csvs({a.path(), other.path()}, std::nullopt),
                  config::InputError);
}

TEST_CASE("The summary ranks ok rows and finds the Pareto front", "[reports][sweep]") {
  // Rows: (gpus, tokens/s/GPU): 0 (256, 100) -> cluster 25600; 1 (256, 120) -> 30720;
  // 2 (512, 110) -> 56320; 3 (512, 50) -> 25600; 4 (1024, 120) but does not fit; 5 (1024,
  // 40) -> 40960, less than row 2's with more GPUs.
  // Top 2 by tokens/s/GPU: 1 (120), 2 (110). Front (fewer GPUs, more cluster tokens/s):
  // at 256 row 1 (30720), at 512 row 2 (56320); 1024 adds nothing.
  const test::TempFile f(kHeader +
                         "0,256,ok,,1,1,100,0.1,50,,,0\n"
                         "1,256,ok,,1,1,120,0.1,50,,,0\n"
                         "2,512,ok,,1,1,110,0.1,50,,,0\n"
                         "3,512,ok,,1,1,50,0.1,50,,,0\n"
                         "4,1024,does_not_fit,,,,,,90,,,0\n"
                         "5,1024,ok,,1,1,40,0.1,50,,,0\n"
                         "6,1024,invalid,\"gpus: bad, really\",,,,,,,,0\n");
  const auto csv = reports::read_sweep_csv(f.path());
  reports::SweepSummaryInfo info;
  info.name = "t";
  info.rows = 7;
  info.combinations = 7;
  info.top = 2;
  const auto j = reports::sweep_summary_json(csv, info);
  CHECK(j["status"] ==
        nlohmann::ordered_json({{"ok", 5}, {"invalid", 1}, {"does_not_fit", 1}, {"error", 0}}));
  REQUIRE(j["top"].size() == 2);
  CHECK(j["top"][0]["id"] == 1);
  CHECK(j["top"][1]["id"] == 2);
  CHECK_FALSE(j["top"][0].contains("sim_wall_s"));
  REQUIRE(j["pareto"]["rows"].size() == 2);
  CHECK(j["pareto"]["rows"][0]["id"] == 1);
  CHECK(j["pareto"]["rows"][1]["id"] == 2);
  CHECK(j["pareto"]["x"] == "gpus");

  // Lower is better for step time: all tie at 1 s, so the lowest ids come first.
  info.objective = config::SweepObjective::step_time_s;
  const auto k = reports::sweep_summary_json(csv, info);
  CHECK(k["top"][0]["id"] == 0);
  CHECK(k["top"][1]["id"] == 1);
  const std::string text = reports::sweep_summary_text(csv, info);
  CHECK_THAT(text, Catch::Contains("5 ok, 1 invalid, 1 does_not_fit, 0 error"));
  CHECK_THAT(text, Catch::Contains("top 2 by step_time_s (lower is better)"));
}

TEST_CASE("The rows' caveats read back and the summary lists each with its rows",
          "[reports][sweep]") {
  // Row 0 on an announced system (two caveats), row 1 on a measured one (none), row 2 does not
  // fit on the announced one, row 3 is invalid (no prediction: not counted). Of the 3 rows with
  // a prediction or a memory estimate, caveat A is on rows 0 and 2, B on row 0.
  const std::string a = "system x is announced, a projection", b = "grouped GEMMs, at 1.5";
  const std::string both = a + reports::kSweepCaveatSeparator + b;
  const test::TempFile f(
      "id,gpus,status,message,caveats,step_time_s,tokens_per_s_per_gpu,"
      "peak_memory_gib,sim_wall_s\n0,8,ok,,\"" +
      both + "\",1,100,50,0\n1,8,ok,,,1,90,50,0\n2,8,does_not_fit,,\"" + a +
      "\",,,90,0\n3,8,invalid,bad,,,,,0\n");
  const auto csv = reports::read_sweep_csv(f.path());
  REQUIRE(csv.rows.size() == 4);
  CHECK(csv.rows[0].result.caveats == std::vector<std::string>{a, b});
  CHECK(csv.rows[1].result.caveats.empty());
  // Written back as read.
  CHECK(reports::sweep_csv_text(csv) == test::read_text(f.path()));
  reports::SweepSummaryInfo info;
  info.rows = 4;
  info.combinations = 4;
  const auto j = reports::sweep_summary_json(csv, info);
  REQUIRE(j["caveats"].size() == 2);
  CHECK(j["caveats"][0] ==
        nlohmann::ordered_json({{"caveat", a}, {"rows", 2}, {"of", 3}, {"ids", {0, 2}}}));
  CHECK(j["caveats"][1]["ids"] == nlohmann::ordered_json({0}));
  CHECK(j["top"][0]["caveats"] == nlohmann::ordered_json({a, b}));
  const std::string text = reports::sweep_summary_text(csv, info);
  CHECK_THAT(text, Catch::Contains("caveats (priced beyond what was measured):\n  rows 0, 2 (2 "
                                   "of 3): " +
                                   a + "\n  row 0 (1 of 3): " + b + "\n"));
  CHECK(reports::detail::caveat_rows_text({0, 1, 2}, 3) == "every row");
  CHECK(reports::detail::caveat_rows_text({0, 1, 2, 3, 4, 5, 6, 7, 9}, 20) ==
        "9 of 20 rows (ids 0, 1, 2, 3, 4, 5, 6, 7, ...)");
  // Without caveats the block is left out.
  const test::TempFile plain(kHeader + "0,8,ok,,1,1,100,0.1,50,,,0\n");
  CHECK_THAT(reports::sweep_summary_text(reports::read_sweep_csv(plain.path()), info),
             !Catch::Contains("caveats"));
}

TEST_CASE("The Pareto front under a token budget: GPU-hours against days", "[reports][sweep]") {
  // (gpu_hours, days): 0 (100, 10), 1 (80, 12), 2 (120, 5), 3 (130, 6): 3 is beaten by 2 in
  // both; the front by GPU-hours: 1 (80, 12), 0 (100, 10), 2 (120, 5).
  const test::TempFile f(kHeader +
                         "0,8,ok,,1,1,1,0.1,50,10,100,0\n"
                         "1,8,ok,,1,1,1,0.1,50,12,80,0\n"
                         "2,8,ok,,1,1,1,0.1,50,5,120,0\n"
                         "3,8,ok,,1,1,1,0.1,50,6,130,0\n");
  reports::SweepSummaryInfo info;
  info.token_budget = true;
  info.objective = config::SweepObjective::days;
  const auto j = reports::sweep_summary_json(reports::read_sweep_csv(f.path()), info);
  const auto& front = j["pareto"]["rows"];
  REQUIRE(front.size() == 3);
  CHECK(front[0]["id"] == 1);
  CHECK(front[1]["id"] == 0);
  CHECK(front[2]["id"] == 2);
  CHECK(j["top"][0]["id"] == 2);  // fewest days
}

TEST_CASE("The Slurm script runs one shard per array task and resumes", "[reports][sweep]") {
  const std::string s = reports::slurm_script("/opt/moesim", "/work/s.json", "s", 1000, 5, "out/s");
  CHECK_THAT(s, Catch::StartsWith("#!/bin/bash\n"));
  CHECK_THAT(s, Catch::Contains("#SBATCH --array=0-4\n"));
  CHECK_THAT(
      s, Catch::Contains(
             "'/opt/moesim' sweep '/work/s.json' -o 'out/s'_${SLURM_ARRAY_TASK_ID}.csv --resume"));
  CHECK_THAT(s, Catch::Contains("sweep merge 'out/s'_*.csv --sweep '/work/s.json' -o 'out/s'.csv"));
  // The sweep's own options reach every task.
  const std::string h =
      reports::slurm_script("/opt/moesim", "/work/s.json", "s", 10, 1, "s", " --headroom 4");
  CHECK_THAT(h, Catch::Contains("--jobs \"${SLURM_CPUS_PER_TASK:-0}\" --headroom 4\n"));
  // moesim replaces the shell, so Slurm's SIGTERM reaches it. The defaults ask for 2 CPUs
  // and leave partition, time and account to the cluster.
  CHECK_THAT(s, Catch::Contains("\nexec '/opt/moesim' sweep "));
  CHECK_THAT(s, Catch::Contains("#SBATCH --cpus-per-task=2\n"));
  CHECK_THAT(s, !Catch::Contains("--partition") && !Catch::Contains("--time") &&
                    !Catch::Contains("--account"));
  const std::string r = reports::slurm_script("/opt/moesim", "/work/s.json", "s", 10, 1, "s", "",
                                              {16, "gpu,cpu", "1-00:00:00", "proj"});
  CHECK_THAT(
      r, Catch::Contains("#SBATCH --cpus-per-task=16\n#SBATCH --partition=gpu,cpu\n#SBATCH "
                         "--time=1-00:00:00\n#SBATCH --account=proj\n#SBATCH --output=s_%a.log\n"));
}

TEST_CASE("A sweep row reads back exactly from its CSV fields (plan --resume)",
          "[reports][sweep]") {
  config::SweepPoint point{7, {"64", "2"}, {}};
  predict::SweepResult r;
  r.id = 7;
  r.gpus = 64;
  r.status = predict::SweepStatus::ok;
  r.has_memory = r.has_timing = r.fits_in_memory = true;
  r.step_time_s = 12.554632577853836;
  r.tflops_per_gpu = 652.0 / 3;
  r.tokens_per_s_per_gpu = 2610.032575370004;
  r.mfu = 0.1;
  r.peak_memory_gib = 130.27504095077515;
  r.reserved_memory_gib = 131;
  r.compute_s = 1.0 / 3, r.exposed_communication_s = 2e-9, r.pipeline_bubble_s = 0.5,
  r.host_bound_idle_s = 0;
  r.other_s = 1e-300, r.schedule_bubble_s = 0.25, r.stage_imbalance_s = 0.25,
  r.straggler_wait_s = 0.1;
  r.ettr = 0.9867687970280858;
  r.band_lo_s = 11.9, r.band_hi_s = 13.0 / 0.93;
  r.days = 3.5, r.gpu_hours = 5376.0 / 7, r.days_with_goodput = 3.6, r.gpu_hours_with_goodput = 800;
  r.wall_s = 0.0569;
  config::SweepPlan columns;
  columns.columns = {"gpus", "parallelism.tp"};
  for (const bool budget : {false, true}) {
    const auto header = reports::sweep_csv_header(columns, budget);
    const auto f = reports::sweep_csv_fields(point, r, budget);
    const auto back = reports::sweep_result_from_fields(header, f, "test");
    CHECK(back.gpus == 64);
    CHECK(reports::sweep_csv_fields(point, back, budget) == f);
    CHECK(back.step_time_s == r.step_time_s);
    CHECK(back.other_s == r.other_s);
    CHECK(back.band_hi_s == r.band_hi_s);
    CHECK(back.days.has_value() == budget);
    CHECK_FALSE(back.energy_mwh.has_value());
    // Each figure is typed: the summary's figure under a column's name is the result's.
    CHECK(reports::sweep_figure(back, "breakdown.other") == r.other_s);
    CHECK(reports::sweep_figure(back, "band.step_time_hi_s") == r.band_hi_s);
    CHECK(reports::sweep_figure(back, "days") == (budget ? r.days : std::nullopt));
    CHECK_FALSE(reports::sweep_figure(back, "status"));
    CHECK_FALSE(reports::sweep_figure(back, "parallelism.tp"));
    // A row of another length than its header's is refused.
    auto longer = header;
    longer.push_back("extra");
    CHECK_THROWS_AS(reports::sweep_result_from_fields(longer, f, "test"), config::InputError);
    // A value that is no number is named by its column, with and without the budget's.
    auto bad = f;
    bad[bad.size() - 1] = "banana";  // the wall time, last
    try {
      reports::sweep_result_from_fields(header, bad, "test");
      FAIL("banana read as a number");
    } catch (const config::InputError& e) {
      CHECK(e.path() == "sim_wall_s");
    }
  }
  // A row that never simulated (bound, invalid) has no figures.
  predict::SweepResult b;
  b.id = 8;
  b.status = predict::SweepStatus::invalid;
  b.message = "parallelism.tp: 3 does not divide 64, heads";
  const auto f = reports::sweep_csv_fields(point, b, false);
  const auto back =
      reports::sweep_result_from_fields(reports::sweep_csv_header(columns, false), f, "test");
  CHECK(back.status == predict::SweepStatus::invalid);
  CHECK(back.message == b.message);
  CHECK_FALSE(back.has_timing);
  CHECK_FALSE(back.has_memory);
}
