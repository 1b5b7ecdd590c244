// `moesim sweep` end to end on a small sweep (Qwen3-30B-A3B on 16 H100, 24 rows, half of
// them invalid, some not fitting): shards merged, a killed and resumed run, and the Slurm
// array's shard all give the unsharded run's rows (wall time aside).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "reports/sweep.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;

namespace {

// grid: 2 dispatchers x 2 precisions (MXFP8 needs Blackwell: invalid on H100); layouts
// tp {1, 2} x pp {1, 2} x ep {8, 16}, of which pp 2 with ep 16 breaks EP inside a stage
// (8 GPUs): 6 layouts per grid point, 24 rows.
Json small_sweep() {
  return {{"name", "small"},
          {"base", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json")},
          {"grid",
           {{"framework.dispatcher", {"alltoall", "deepep"}},
            {"training.precision", {"bf16", "mxfp8"}}}},
          {"layouts", {{"tp", {1, 2}}, {"pp", {1, 2}}, {"ep", {8, 16}}}},
          {"token_budget", 1e12}};
}

// A folder with the sweep file, removed afterwards.
struct Dir {
  std::filesystem::path path;
  Dir() {
    path = std::filesystem::temp_directory_path() /
           ("moesim-sweep-test-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::create_directories(path);
    std::ofstream(path / "small.json") << small_sweep().dump(2);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// The rows without their wall time.
std::vector<std::vector<std::string>> rows(const std::string& csv_path) {
  const auto csv = reports::read_sweep_csv(csv_path);
  const auto wall =
      std::find(csv.header.begin(), csv.header.end(), "sim_wall_s") - csv.header.begin();
  std::vector<std::vector<std::string>> out;
  for (auto r : csv.rows) {
    r.fields.erase(r.fields.begin() + wall);
    out.push_back(r.fields);
  }
  return out;
}

// The whole-sweep run, once for all tests.
const std::vector<std::vector<std::string>>& reference() {
  static const auto r = [] {
    const Dir d;
    const auto run =
        test::run_moesim({"sweep", d / "small.json", "-o", d / "all.csv", "--jobs", "2"});
    REQUIRE(run.status == 0);
    return rows(d / "all.csv");
  }();
  return r;
}

}  // namespace

TEST_CASE("sweep runs every row, invalid and non-fitting ones included", "[cli][sweep]") {
  const Dir d;
  const auto run =
      test::run_moesim({"sweep", d / "small.json", "-o", d / "out.csv", "--json", "--top", "3"});
  REQUIRE(run.status == 0);
  const auto j = Json::parse(run.out);
  CHECK(j["rows"] == 24);
  CHECK(j["combinations"] == 32);
  CHECK(j["pruned_layouts"] == Json({{"ep_outside_stage", 8}}));
  CHECK(j["status"]["invalid"] == 12);
  CHECK(j["status"]["does_not_fit"].get<int>() > 0);
  CHECK(j["status"]["ok"].get<int>() > 0);
  CHECK(j["status"]["error"] == 0);
  CHECK(j["top"].size() == 3);
  // Whether the model's 80% ratio band reaches the best: the best itself does.
  CHECK(j["top"][0]["within_band_of_best"] == true);
  CHECK(j["top"][2]["within_band_of_best"].is_boolean());
  const auto r = rows(d / "out.csv");
  REQUIRE(r.size() == 24);
  for (std::size_t i = 0; i < r.size(); ++i) CHECK(r[i][0] == std::to_string(i));  // sorted by id
  CHECK(r == reference());                                                         // deterministic
  const auto csv = reports::read_sweep_csv(d / "out.csv");
  CHECK(csv.header[1] == "gpus");
  CHECK(csv.header[2] == "framework.dispatcher");
  CHECK(csv.header[7] == "parallelism.pp_layout");
  CHECK(csv.header.back() == "sim_wall_s");

  const auto text = test::run_moesim({"sweep", d / "small.json", "-o", d / "out.csv"});
  CHECK_THAT(text.out, Catch::Contains("by tokens_per_s_per_gpu (higher is better)"));
  CHECK_THAT(text.out, Catch::Contains("Pareto front"));
}

TEST_CASE("sweep shards merged equal the unsharded run", "[cli][sweep]") {
  const Dir d;
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) {
    shards.push_back(d / ("shard_" + std::to_string(i) + ".csv"));
    REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", shards.back(), "--shard",
                              std::to_string(i) + "/3"})
                .status == 0);
    for (const auto& row : rows(shards.back())) CHECK(std::stoi(row[0]) % 3 == i);
  }
  std::vector<std::string> args = {"sweep", "merge"};
  args.insert(args.end(), shards.begin(), shards.end());
  args.insert(args.end(), {"-o", d / "merged.csv", "--sweep", d / "small.json"});
  const auto m = test::run_moesim(args);
  CHECK(m.status == 0);
  CHECK_THAT(m.out, Catch::Contains("merged 24 rows from 3 files"));
  CHECK(rows(d / "merged.csv") == reference());

  // Two shards only: the third's rows are reported missing, and the status says so.
  const auto partial = test::run_moesim({"sweep", "merge", shards[0], shards[1], "-o",
                                         d / "partial.csv", "--sweep", d / "small.json"});
  CHECK(partial.status == 1);
  CHECK_THAT(partial.out, Catch::Contains("missing rows: 2 5 8 11 14 17 20 23"));
  const auto dup = test::run_moesim({"sweep", "merge", shards[0], shards[0], "-o", d / "dup.csv"});
  CHECK_THAT(dup.out, Catch::Contains("duplicated rows (kept once): 0 3 6"));
}

TEST_CASE("A sweep killed midway and resumed equals an uninterrupted one", "[cli][sweep]") {
  const Dir d;
  const std::string out = d / "out.csv";
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", out}).status == 0);
  // Cut the file in the middle of a line, as a kill during a write leaves it.
  const std::string full = test::read_text(out);
  const auto cut = full.find('\n', full.size() / 2) - 7;
  std::ofstream(out, std::ios::binary | std::ios::trunc) << full.substr(0, cut);
  const auto before = reports::read_sweep_csv(out);
  REQUIRE(before.dropped_partial_line);
  const auto kept = before.rows.size();
  REQUIRE(kept < 24);

  const auto r = test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"});
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("dropped a truncated last line"));
  CHECK(rows(out) == reference());
  // The rows kept were not run again: their wall times are the first run's.
  const auto after = reports::read_sweep_csv(out);
  for (std::size_t i = 0; i < kept; ++i) CHECK(after.rows[i].fields == before.rows[i].fields);

  // A resumed, complete file runs nothing and stays the same.
  const std::string done = test::read_text(out);
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"}).status == 0);
  CHECK(test::read_text(out) == done);

  // Another sweep's CSV is not resumed.
  Json other = small_sweep();
  other["grid"].erase("training.precision");
  std::ofstream(d / "other.json") << other.dump();
  const auto wrong = test::run_moesim({"sweep", d / "other.json", "-o", out, "--resume"});
  CHECK(wrong.status == 2);
  CHECK_THAT(wrong.err, Catch::Contains("written by another sweep file"));
}

TEST_CASE("sweep --resume checks every value of the rows it keeps (issue #46 item 3)",
          "[cli][sweep]") {
  const Dir d;
  const std::string out = d / "out.csv";
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", out}).status == 0);
  const auto good = reports::read_sweep_csv(out);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(good.header.begin(), good.header.end(), name) -
                                    good.header.begin());
  };
  const auto ok = std::find_if(good.rows.begin(), good.rows.end(),
                               [&](const auto& r) { return r.fields[col("status")] == "ok"; });
  REQUIRE(ok != good.rows.end());
  const auto write_with = [&](const std::string& column, const std::string& value) {
    auto bad = good;
    for (auto& r : bad.rows)
      if (r.id == ok->id) r.fields[col(column)] = value;
    std::ofstream(out, std::ios::binary | std::ios::trunc) << reports::sweep_csv_text(bad);
  };
  write_with("step_time_s", "banana");
  auto r = test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(fmt::format("{}: row {}: step_time_s: 'banana' is not a number",
                                                out, ok->id)));
  write_with("fits_in_memory", "maybe");
  r = test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("fits_in_memory: 'maybe' is not true or false"));
  write_with("parallelism.tp", "4");
  r = test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("parallelism.tp: '4', where the sweep has"));
  // The true file resumes.
  std::ofstream(out, std::ios::binary | std::ios::trunc) << reports::sweep_csv_text(good);
  CHECK(test::run_moesim({"sweep", d / "small.json", "-o", out, "--resume"}).status == 0);
}

TEST_CASE("sweep --set: the rows say how they were predicted; resume and merge never mix them",
          "[cli][sweep]") {
  const Dir d;
  const std::string plain = d / "plain.csv", slow = d / "slow.csv";
  const std::string set = "host.rank_contention=2";
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", plain}).status == 0);
  const auto r = test::run_moesim({"sweep", d / "small.json", "-o", slow, "--set", set});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted with: calibrated; set host.rank_contention=2 (a "
                                    "what-if"));
  const auto a = reports::read_sweep_csv(plain), b = reports::read_sweep_csv(slow);
  REQUIRE(a.rows.size() == b.rows.size());
  bool slower = false;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(a.rows[i].result.predicted_with == "calibrated");
    CHECK(b.rows[i].result.predicted_with == "calibrated; set " + set);
    if (a.rows[i].result.has_timing)
      slower |= b.rows[i].result.step_time_s > a.rows[i].result.step_time_s;
  }
  CHECK(slower);  // a host twice as loaded slows some layout
  // Resumed with other options, or merged with rows predicted otherwise: refused (exit 2).
  auto x = test::run_moesim({"sweep", d / "small.json", "-o", plain, "--resume", "--set", set});
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains(fmt::format(
                        "{}: row 0: predicted_with: 'calibrated', where this run predicts with "
                        "'calibrated; set host.rank_contention=2'",
                        plain)));
  x = test::run_moesim({"sweep", d / "small.json", "-o", slow, "--resume", "--uncalibrated"});
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains("where this run predicts with 'uncalibrated'"));
  x = test::run_moesim({"sweep", "merge", plain, slow, "-o", d / "all.csv"});
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains(fmt::format("where {} row 0 has 'calibrated'", plain)));
  // The same options resume; a path the system lacks is the command line's error.
  CHECK(
      test::run_moesim({"sweep", d / "small.json", "-o", slow, "--resume", "--set", set}).status ==
      0);
  x = test::run_moesim({"sweep", d / "small.json", "-o", d / "no.csv", "--set", "host.nope=1"});
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains("--set host.nope=1: system 'h100' has no number at host.nope"));
  CHECK_FALSE(std::filesystem::exists(d / "no.csv"));
  // So is a path only some of the sweep's systems have (B200 has an MXFP8 GEMM rate, H100
  // none), where the first point's system takes it.
  Json systems = small_sweep();
  systems["grid"] = {{"system", {"b200", "h100"}}};
  std::ofstream(d / "systems.json") << systems.dump(2);
  x = test::run_moesim(
      {"sweep", d / "systems.json", "-o", d / "no.csv", "--set", "efficiency.gemm.mxfp8=0.5"});
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains("system 'h100' has no number at efficiency.gemm.mxfp8"));
  CHECK_FALSE(std::filesystem::exists(d / "no.csv"));
  // The Slurm script's tasks predict the same way.
  x = test::run_moesim({"sweep", d / "small.json", "--slurm-script", "--set", set});
  CHECK_THAT(x.out, Catch::Contains(" --set host.rank_contention=2\n"));
}

TEST_CASE("sweep: the rows on an announced system say so (issue #48 item 3)", "[cli][sweep]") {
  const Dir d;
  Json s = small_sweep();
  s["grid"] = {{"system", {"b200", "vr200-nvl72"}}};
  s["layouts"] = {{"ep", {8}}};
  std::ofstream(d / "announced.json") << s.dump(2);
  const std::string out = d / "announced.csv";
  const auto r = test::run_moesim({"sweep", d / "announced.json", "-o", out, "--deterministic"});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("caveats (priced beyond what was measured):\n"));
  CHECK_THAT(r.out, Catch::Contains("  row 1 (1 of 2): system vr200-nvl72 is announced hardware"));
  const auto csv = reports::read_sweep_csv(out);
  REQUIRE(csv.rows.size() == 2);
  REQUIRE_FALSE(csv.rows[1].result.caveats.empty());
  CHECK_THAT(csv.rows[1].result.caveats.front(),
             Catch::StartsWith("system vr200-nvl72 is announced hardware"));
  // The JSON summary names the rows; `report --sweep` lists the caveat as a fact.
  const auto j = test::run_moesim({"sweep", d / "announced.json", "-o", out, "--resume", "--json"});
  REQUIRE(j.status == 0);
  const Json summary = Json::parse(j.out);
  bool announced = false;
  for (const auto& c : summary["caveats"])
    if (c["caveat"].get<std::string>().starts_with("system vr200-nvl72 is announced"))
      announced = c["ids"] == Json({1}) && c["of"] == 2;
  CHECK(announced);
  const auto page = test::run_moesim({"report", "--sweep", out, "-o", d / "a.html"});
  REQUIRE(page.status == 0);
  CHECK_THAT(test::read_text(d / "a.html"), Catch::Contains("caveat of row 1 (1 of 2)"));
}

TEST_CASE("Two runs on one output: the second refuses (issue #46 item 3)", "[cli][sweep]") {
  const Dir d;
  const std::string out = d / "locked.csv";
  // Another writer holds the output's lock, as a running sweep or plan does.
  const std::string lock = out + ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  REQUIRE(::write(fd, "4242\n", 5) == 5);
  const auto sweep = test::run_moesim({"sweep", d / "small.json", "-o", out});
  CHECK(sweep.status == 2);
  CHECK_THAT(
      sweep.err,
      Catch::Contains(out + ": (top level): another moesim (process 4242) is writing it now"));
  CHECK_FALSE(std::filesystem::exists(out));  // nothing written
  const auto plan =
      test::run_moesim({"plan", test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json"),
                        "--gpus", "8", "--settings", "none", "-o", out});
  CHECK(plan.status == 2);
  CHECK_THAT(plan.err, Catch::Contains("another moesim (process 4242) is writing it now"));
  // Released (as when the other run ends, however it ends), the output is written and the
  // lock file goes with the run that took it.
  ::close(fd);
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", out}).status == 0);
  CHECK(rows(out) == reference());
  CHECK_FALSE(std::filesystem::exists(lock));
}

TEST_CASE("Under a Slurm job array the task's shard runs", "[cli][sweep]") {
  const Dir d;
  // Array 10-14:2 (tasks 10, 12, 14): task 12 is shard (12 - 10) / 2 = 1 of 3.
  setenv("SLURM_ARRAY_TASK_ID", "12", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "10", 1);
  setenv("SLURM_ARRAY_TASK_STEP", "2", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  const auto r = test::run_moesim({"sweep", d / "small.json", "-o", d / "task.csv"});
  setenv("SLURM_ARRAY_TASK_ID", "13", 1);  // not a task of the array
  const auto bad = test::run_moesim({"sweep", d / "small.json", "-o", d / "bad.csv"});
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP",
                        "SLURM_ARRAY_TASK_COUNT"})
    unsetenv(v);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("shard 1/3"));
  std::vector<std::vector<std::string>> expected;
  for (const auto& row : reference())
    if (std::stoi(row[0]) % 3 == 1) expected.push_back(row);
  CHECK(rows(d / "task.csv") == expected);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("SLURM_ARRAY_TASK_ID"));

  const auto script =
      test::run_moesim({"sweep", d / "small.json", "--slurm-script", "--tasks", "3"});
  CHECK(script.status == 0);
  CHECK_THAT(script.out, Catch::Contains("#SBATCH --array=0-2"));
  CHECK_THAT(script.out, Catch::Contains("--resume"));
}

TEST_CASE("sweep: bad sweep files and options exit 2 with file and path", "[cli][sweep]") {
  const Dir d;
  Json j = small_sweep();
  j["layouts"]["tp"] = {1, "2"};
  std::ofstream(d / "bad.json") << j.dump();
  auto r = test::run_moesim({"sweep", d / "bad.json", "-o", d / "x.csv"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad.json: layouts.tp[1]: "));
  r = test::run_moesim({"sweep", d / "small.json", "-o", d / "x.csv", "--shard", "3/3"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("needs 0 <= I < N"));
  // The Slurm script's resources are checked before they reach an #SBATCH line, and are
  // refused without --slurm-script (they would change nothing).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--slurm-script", "--time", "1 hour"},
        std::vector<std::string>{"--slurm-script", "--partition", "gpu\n#SBATCH --exclusive"},
        std::vector<std::string>{"--slurm-script", "--account", "a,b"},
        std::vector<std::string>{"--slurm-script", "--cpus-per-task", "0"},
        std::vector<std::string>{"--partition", "gpu"}, std::vector<std::string>{"--tasks", "3"}}) {
    std::vector<std::string> argv{"sweep", d / "small.json"};
    argv.insert(argv.end(), args.begin(), args.end());
    r = test::run_moesim(argv);
    CHECK(r.status == 2);
    CHECK(r.out.find("#SBATCH") == std::string::npos);
  }
  r = test::run_moesim({"sweep", d / "small.json", "--partition", "gpu"});
  CHECK_THAT(r.err, Catch::Contains("--slurm-script"));
  r = test::run_moesim({"sweep", d / "small.json", "--slurm-script", "--time", "1 hour"});
  CHECK_THAT(r.err, Catch::Contains("is not a Slurm time"));
}

TEST_CASE("sweep --deterministic: the same sweep writes the same CSV byte for byte",
          "[cli][sweep]") {
  const Dir d;
  for (const char* out : {"a.csv", "b.csv"})
    REQUIRE(
        test::run_moesim({"sweep", d / "small.json", "-o", d / out, "--deterministic"}).status ==
        0);
  const std::string a = test::read_text(d / "a.csv");
  CHECK(a == test::read_text(d / "b.csv"));
  // Every row's wall time left empty, every other field as a sweep without the flag writes it.
  const auto csv = reports::read_sweep_csv(d / "a.csv");
  REQUIRE(csv.rows.size() == 24);
  for (const auto& r : csv.rows) CHECK(r.fields.back().empty());
  CHECK(rows(d / "a.csv") == reference());  // rows() leaves the wall-time column out
  // Rows kept from a run without the flag lose their wall times too: the same file.
  REQUIRE(test::run_moesim({"sweep", d / "small.json", "-o", d / "c.csv"}).status == 0);
  REQUIRE(test::run_moesim(
              {"sweep", d / "small.json", "-o", d / "c.csv", "--resume", "--deterministic"})
              .status == 0);
  CHECK(test::read_text(d / "c.csv") == a);
  // Its Slurm script passes the flag on to every task.
  const auto script = test::run_moesim(
      {"sweep", d / "small.json", "--slurm-script", "--tasks", "2", "--deterministic"});
  REQUIRE(script.status == 0);
  CHECK_THAT(script.out, Catch::Contains("--deterministic"));
}
