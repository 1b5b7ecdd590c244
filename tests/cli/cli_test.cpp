// The command line as a user meets it: exit statuses, messages, describe output.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/helpers.hpp"

using namespace moesim;
using test::run_moesim;

TEST_CASE("describe prints the resolved default scenario", "[cli]") {
  const auto r = run_moesim({"describe", test::source_path("scenarios/dsv3-gb200.json")});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("249.81 GFLOP/token"));
  CHECK_THAT(r.out, Catch::Contains("671.03 B total, 37.55 B active"));
  CHECK_THAT(r.out, Catch::Contains("DP 32, expert-DP 1; 64 microbatches per step"));
}

TEST_CASE("describe --json follows the contract", "[cli]") {
  const auto r =
      run_moesim({"describe", "--json", test::source_path("scenarios/journey/01-baseline.json")});
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["flops_per_token"].get<double>() / 1e9 == Approx(249.81).epsilon(0.001));
  // flops_per_step = flops_per_token x GBS x seq = 249.81e9 x 2048 x 4096.
  CHECK(j["flops_per_step"].get<double>() ==
        Approx(j["flops_per_token"].get<double>() * 2048 * 4096));
  CHECK(j["params"]["total"].get<double>() / 1e9 == Approx(671.03).epsilon(1e-4));
  CHECK(j["params"]["active"].get<double>() / 1e9 == Approx(37.55).epsilon(1e-3));
  CHECK(j["parallelism"]["dp"] == 32);
  CHECK(j["parallelism"]["expert_dp"] == 1);
  CHECK(j["layers_per_stage"].size() == 8);
  CHECK(j["layers_per_stage"][0] == nlohmann::json({1, 2, 2, 2}));
  CHECK(j["layers_per_stage"][7] == nlohmann::json({2, 2, 2, 0}));
  CHECK(j["framework"]["dispatcher"] == "alltoall");
  CHECK(j["stack"]["router_fusion"] == false);
  CHECK(j["measured"]["value"] == 494.46);
}

TEST_CASE("Bad input exits with status 2 and names the file and JSON path", "[cli][errors]") {
  struct Case {
    const char* name;
    std::function<void(config::Json&)> mutate;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"unknown key", [](auto& j) { j["parallelism"]["tpp"] = 1; }, "parallelism.tpp"},
      {"wrong type", [](auto& j) { j["gpus"] = "many"; }, "gpus"},
      {"missing field", [](auto& j) { j["training"].erase("global_batch_size"); }, "training"},
      {"indivisible ep", [](auto& j) { j["parallelism"]["ep"] = 48; }, "parallelism.ep"},
      {"indivisible gbs", [](auto& j) { j["training"]["global_batch_size"] = 100; },
       "training.global_batch_size"},
      {"layout", [](auto& j) { j["parallelism"]["pp_layout"] = "Et|(tt|)*30"; },
       "parallelism.pp_layout"},
      {"unknown preset", [](auto& j) { j["system"] = "dgx"; }, "system"},
      {"unknown enum", [](auto& j) { j["framework"]["dispatcher"] = "nccl"; },
       "framework.dispatcher"},
      {"precision",
       [](auto& j) {
         j["system"] = "h100";
         j.erase("placement");
       },
       "training.precision"},
      {"indivisible gpus", [](auto& j) { j["gpus"] = 260; }, "gpus"},
      {"layers vs vpp", [](auto& j) { j["parallelism"]["vpp"] = 8; }, "parallelism.vpp"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto j = test::default_scenario_json();
    c.mutate(j);
    test::TempFile f(j.dump(2));
    const auto r = run_moesim({"describe", f.path()});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("moesim: error: " + f.path() + ": " + c.path + ": "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one clear line
  }
  test::TempFile bad("{ \"name\": \"x\",, }");
  auto r = run_moesim({"describe", bad.path()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("malformed JSON at line 1, column"));
  r = run_moesim({"describe", "/nonexistent/scenario.json"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("/nonexistent/scenario.json: (top level): cannot open the file"));
}

TEST_CASE("describe reproduces the four Megatron FLOPs check values", "[cli]") {
  // docs/reference/megatron-flops.md at seq 4096; Qwen3-235B runs at TP2 here, whose
  // vocabulary padding (151936 -> 152064) adds 0.002%.
  const std::pair<const char*, double> cases[] = {
      {"scenarios/dsv3-gb200.json", 249.81},
      {"scenarios/h800/dsv3-production.json", 259.99},
      {"scenarios/examples/qwen3-235b-a22b-h100.json", 148.03},
      {"scenarios/examples/qwen3-30b-a3b-h100.json", 23.01}};
  for (const auto& [file, gflop] : cases) {
    INFO(file);
    const auto r = run_moesim({"describe", "--json", test::source_path(file)});
    REQUIRE(r.status == 0);
    CHECK(nlohmann::json::parse(r.out)["flops_per_token"].get<double>() / 1e9 ==
          Approx(gflop).epsilon(0.001));
  }
}

TEST_CASE("Usage errors exit 2, help and version exit 0", "[cli]") {
  CHECK(run_moesim({}).status == 2);
  CHECK(run_moesim({"frobnicate"}).status == 2);
  CHECK(run_moesim({"describe"}).status == 2);
  auto r = run_moesim({"--help"});
  CHECK(r.status == 0);
  for (const auto& c : cli::commands()) CHECK_THAT(r.out, Catch::Contains(std::string(c.name)));
  CHECK(run_moesim({"--version"}).status == 0);
  CHECK(run_moesim({"describe", "--help"}).status == 0);
}

TEST_CASE("An option that would change nothing without another is refused", "[cli]") {
  // Each alone used to be accepted and ignored ("No silent paths").
  const std::string scenario = test::source_path("scenarios/examples/qwen3-30b-a3b-h100.json");
  const std::string sweep = test::source_path("scenarios/sweeps/qwen3-30b-h100-quick.json");
  std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"run", scenario, "--trace-level", "layer"}, "--trace-level requires --trace"},
      {{"plan", scenario, "--emit-file", "x.json"}, "--emit-file requires --emit"},
      {{"bench", scenario, "--jobs", "2"}, "--jobs requires --sweep"},
      {{"bench", scenario, "--sweep", sweep}, "excludes --sweep"},
      {{"bench", "--sweep", sweep, "--repeat", "2"}, "--repeat excludes --sweep"},
      {{"import", "megatron", test::source_path("tests/data/megatron/deepseek-v3-gb200.sh"),
        "--system", "gb200-nvl72", "--gpus", "256", "--gpus-per-node", "4"},
       "--gpus-per-node: only with --nodes"},
  };
  // The Slurm script's tasks take their shard from the array, always resume, simulate on
  // --cpus-per-task and print to their logs: a run's own options are refused with it.
  for (const auto& o : std::vector<std::vector<std::string>>{
           {"--jobs", "2"}, {"--shard", "0/2"}, {"--resume"}, {"--top", "3"}, {"--json"}}) {
    std::vector<std::string> args = {"sweep", sweep, "--slurm-script"};
    args.insert(args.end(), o.begin(), o.end());
    refused.push_back({args, o.front() + " excludes --slurm-script"});
  }
  for (const auto& [args, says] : refused) {
    const auto r = run_moesim(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
    // Said as every input error is (CLI11's usage errors included).
    CHECK_THAT(r.err, Catch::StartsWith("moesim: error: <command line>: "));
  }
}

TEST_CASE("A missing sweep file or required option is bad input", "[cli]") {
  const auto r = run_moesim({"sweep", "x.json"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("moesim: error: x.json: (top level): cannot open the file"));
  CHECK(run_moesim({"sweep", "merge", "a.csv"}).status == 2);  // -o is required
  CHECK(run_moesim({"calibrate", "run"}).status == 2);         // -o is required
  // A missing input names the command line and what is missing (no empty file, no
  // "(top level)" of a file that is not there).
  const std::vector<std::pair<std::vector<std::string>, std::string>> missing{
      {{"sweep"}, "moesim: error: <command line>: file: give a sweep file"},
      {{"bench"}, "moesim: error: <command line>: file: give a scenario file or --sweep"},
      {{"calibrate", "routing", test::source_path("scenarios/memory")},
       "moesim: error: <command line>: paths: no scenario with a measured step time or "
       "throughput under "},
  };
  for (const auto& [args, says] : missing) {
    const auto m = run_moesim(args);
    CHECK(m.status == 2);
    CHECK_THAT(m.err, Catch::StartsWith(says));
  }
  // An empty file name is shown as such.
  const auto e = run_moesim({"run", ""});
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Catch::StartsWith("moesim: error: '': (top level): "));
  // A folder option that names no folder is refused before the script is read.
  const std::string script = test::source_path("tests/data/megatron/deepseek-v3-gb200.sh");
  for (const char* option : {"--source-root", "--wrapper-root"}) {
    const auto m = run_moesim({"import", "megatron", script, "--system", "gb200-nvl72", "--gpus",
                               "256", option, "/nonexistent-folder"});
    CHECK(m.status == 2);
    CHECK_THAT(m.err,
               Catch::Contains(std::string(option) + ": '/nonexistent-folder' is not a folder"));
  }
}

TEST_CASE("comm prints time and bandwidths of one operation", "[cli][comm]") {
  // 8 x H100 ring all-gather of 8 GiB: eta x 450 GB/s bus bandwidth, less latency.
  auto r = run_moesim({"comm", "--system", "h100", "--op", "all-gather", "--ranks", "8", "--bytes",
                       "8589934592", "--json"});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"time_us", "algbw_GBps", "busbw_GBps", "latency_us", "flows"})
    CHECK(j.contains(k));
  CHECK(j["busbw_GBps"].get<double>() == Approx(361).epsilon(0.01));
  CHECK(j["algbw_GBps"].get<double>() == Approx(j["busbw_GBps"].get<double>() * 8 / 7));
  CHECK(j["time_us"].get<double>() == Approx(8589934592.0 / j["algbw_GBps"].get<double>() / 1e3));
  CHECK(j["caveats"].empty());  // H100 is measured
  // One rank moves nothing: no time, and the answer says so rather than naming a flow model.
  r = run_moesim({"comm", "--system", "h100", "--op", "all-reduce", "--ranks", "1", "--json"});
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["time_us"].get<double>() == 0);
  CHECK(j["flows"].get<int>() == 0);
  CHECK_THAT(j["model"].get<std::string>(), Catch::StartsWith("one rank: nothing crosses a link"));
  // On an announced system the answer says it is a projection, as `run` does (issue #48 item 3).
  r = run_moesim({"comm", "--system", "vr200-nvl72", "--op", "all-to-all", "--ranks", "72"});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("\ncaveats (priced beyond what was measured):\n  system "
                                    "vr200-nvl72 is announced hardware"));
  r = run_moesim({"comm", "--system", "r100", "--op", "ep-dispatch", "--dispatcher", "alltoall",
                  "--ep", "8", "--json"});
  REQUIRE(r.status == 0);
  CHECK_THAT(nlohmann::json::parse(r.out)["caveats"][0].get<std::string>(),
             Catch::StartsWith("system r100 is announced hardware"));
  // EP dispatch through the dispatcher model (DeepEP on H800 NVLink: 153 GB/s at 24 SMs).
  r = run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "deepep",
                  "--ep", "8", "--sms", "24", "--json"});
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["algbw_GBps"].get<double>() == Approx(153).epsilon(0.15));
  // Bytes as DeepEP counts them: 4096 tokens x 7168 x 2 B x 5.2947 destination ranks.
  CHECK(j["bytes"].get<double>() == Approx(4096.0 * 7168 * 2 * 5.29465).epsilon(1e-5));
  // DeepEP's low-latency dispatch at EP64: 128 tokens, about 176 us (DeepEP's table: 173).
  r = run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "deepep",
                  "--ep", "64", "--tokens", "128", "--dtype", "fp8", "--low-latency", "--json"});
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["time_us"].get<double>() == Approx(173).epsilon(0.05));
  // DeepEP's low-latency model applies on every system; it is DeepEP's alone.
  CHECK(run_moesim({"comm", "--system", "b200", "--op", "ep-dispatch", "--low-latency"}).status ==
        0);
  CHECK(run_moesim({"comm", "--system", "b200", "--op", "ep-dispatch", "--dispatcher", "hybridep",
                    "--low-latency"})
            .status == 2);
  // A model's group-limited routing (--groups, --topk-groups): DeepSeek-V3's 8 groups, 4 a
  // token, at EP8 (a group a rank): 4 (1 - C(96, 8) / C(128, 8)) = 3.629 destination ranks,
  // the bytes the step simulation's flows carry; refused where nothing would change.
  r = run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "deepep",
                  "--ep", "8", "--groups", "8", "--topk-groups", "4", "--json"});
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["bytes"].get<double>() ==
        Approx(4096.0 * 7168 * 2 * 3.62903).epsilon(1e-5));
  CHECK(run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "alltoall",
                    "--groups", "8", "--topk-groups", "4"})
            .status == 2);
  CHECK(run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "deepep",
                    "--groups", "8", "--topk-groups", "8"})
            .status == 2);
  CHECK(run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--dispatcher", "deepep",
                    "--groups", "7", "--topk-groups", "4"})
            .status == 2);
  r = run_moesim({"comm", "--system", "h800", "--op", "all-to-all", "--ranks", "16"});
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("busbw"));
  // All-reduce of 8 GiB on 8 H100: NCCL's choice is NVLS (the reference's 480 GB/s); the
  // ring when asked for (370 measured).
  r = run_moesim(
      {"comm", "--system", "h100", "--op", "all-reduce", "--bytes", "8589934592", "--json"});
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["algorithm"] == "nvls");
  CHECK(j["busbw_GBps"].get<double>() == Approx(480).epsilon(0.02));
  r = run_moesim({"comm", "--system", "h100", "--op", "all-reduce", "--bytes", "8589934592",
                  "--algorithm", "ring", "--json"});
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["busbw_GBps"].get<double>() == Approx(370).epsilon(0.03));
}

TEST_CASE("comm refuses what it does not know, naming the option", "[cli][comm]") {
  auto r = run_moesim({"comm", "--system", "h900", "--op", "all-reduce"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--system") && Catch::Contains("unknown system preset 'h900'"));
  r = run_moesim({"comm", "--system", "h100", "--op", "broadcast"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--op") && Catch::Contains("all-reduce"));
  r = run_moesim({"comm", "--system", "h100", "--op", "all-reduce", "--ranks", "24",
                  "--gpus-per-domain", "12"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--gpus-per-domain"));
  r = run_moesim({"comm", "--system", "h100", "--op", "ep-dispatch", "--dtype", "fp4"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--dtype"));
  r = run_moesim(
      {"comm", "--system", "h100", "--op", "ep-dispatch", "--ep", "8", "--experts", "100"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--experts"));
  r = run_moesim({"comm", "--system", "h100", "--op", "all-reduce", "--algorithm", "tree"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--algorithm") && Catch::Contains("nvls"));
  // NVLS across two NVSwitch domains needs the network's in-network reduction (the H800
  // preset's fabric has none; the H100's has SHARP).
  CHECK(run_moesim({"comm", "--system", "h100", "--op", "all-reduce", "--ranks", "16",
                    "--algorithm", "nvls"})
            .status == 0);
  r = run_moesim(
      {"comm", "--system", "h800", "--op", "all-reduce", "--ranks", "16", "--algorithm", "nvls"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--algorithm") && Catch::Contains("one NVLink domain"));
}

TEST_CASE("comm refuses sizes past any step and options that would change nothing", "[cli][comm]") {
  // Each case: the arguments after "comm --system h800 --op", and the option the error names.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"all-to-all", "--bytes", "inf"}, "--bytes"},  // was an internal error
      {{"all-to-all", "--bytes", "1e300"}, "--bytes"},
      {{"ep-dispatch", "--tokens", "nan"}, "--tokens"},
      {{"ep-dispatch", "--hidden", "-1"}, "--hidden"},
      {{"ep-dispatch", "--topk", "300"}, "--topk"},  // more than the 256 experts
      {{"ep-dispatch", "--topk", "2.5"}, "--topk"},
      {{"ep-dispatch", "--sms", "0"}, "--sms"},
      {{"ep-dispatch", "--sms", "1000"}, "--sms"},  // H800 has 132
      {{"ep-dispatch", "--dispatcher", "alltoall", "--sms", "24"}, "--sms"},
      {{"ep-dispatch", "--low-latency", "--sms", "24"}, "--sms"},
      {{"ep-dispatch", "--dispatcher", "alltoall", "--topk-groups", "2"}, "--topk-groups"},
      {{"ep-combine", "--dtype", "fp8"}, "--dtype"},
      {{"all-to-all", "--ep", "16"}, "--ep"},
      {{"all-reduce", "--dispatcher", "deepep"}, "--dispatcher"},
      {{"ep-dispatch", "--bytes", "4096"}, "--bytes"},
      {{"ep-combine", "--algorithm", "ring"}, "--algorithm"},
      {{"ep_dispatch", "--ep", "16"}, "--op"},  // a mistyped op is named, not the EP option
      {{"all-to-all", "--gpus-per-domain", "0"}, "--gpus-per-domain"},
      {{"all-to-all", "--gpus-per-domain", "-4"}, "--gpus-per-domain"},
      {{"all-to-all", "--gpus-per-domain", "16"}, "--gpus-per-domain"},  // H800's domain is 8
  };
  for (const auto& [args, option] : cases) {
    std::vector<std::string> a{"comm", "--system", "h800", "--op"};
    a.insert(a.end(), args.begin(), args.end());
    INFO(fmt::format("{}", fmt::join(a, " ")));
    const auto r = run_moesim(a);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("moesim: error: <command line>: " + option + ":"));
  }
  // The SMs a library is given still price it: fewer SMs, a slower dispatch.
  const auto time = [](const char* sms) {
    const auto r =
        run_moesim({"comm", "--system", "h800", "--op", "ep-dispatch", "--sms", sms, "--json"});
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out)["time_us"].get<double>();
  };
  CHECK(time("4") > time("24"));
}

TEST_CASE("pipeline prints step time and bubble of a schedule alone", "[cli][pipeline]") {
  // 1F1B, pp 4, 8 microbatches of F = 1 ms, B = 2 ms: step (8 + 3) x 3 = 33 ms, bubble 9 ms.
  auto r = run_moesim({"pipeline", "--schedule", "1f1b", "--pp", "4", "--microbatches", "8",
                       "--fwd", "1", "--bwd", "2", "--json"});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["step_time_ms"].get<double>() == Approx(33));
  CHECK(j["bubble_ms"].get<double>() == Approx(9));
  // Interleaved with vpp 2: bubble (PP-1)(F+B)/vpp = 4.5 ms.
  r = run_moesim({"pipeline", "--schedule", "interleaved-1f1b", "--pp", "4", "--vpp", "2",
                  "--microbatches", "8", "--fwd", "1", "--bwd", "2", "--json"});
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["bubble_ms"].get<double>() == Approx(4.5));
  CHECK(run_moesim({"pipeline", "--schedule", "zipper", "--pp", "4", "--microbatches", "8", "--fwd",
                    "1", "--bwd", "2"})
            .status == 2);
  // DualPipe on 8 ranks, F = W = 1, B = 2, F&B = 3: (8/2 - 1)(3 + 2 - 3) = 6 ms.
  r = run_moesim({"pipeline", "--schedule", "dualpipe", "--pp", "8", "--microbatches", "32",
                  "--fwd", "1", "--bwd", "2", "--wgrad", "1", "--fwd-bwd", "3", "--json"});
  REQUIRE(r.status == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["bubble_ms"].get<double>() == Approx(6));
  CHECK(j["stages"] == 8);
  // Sizes the schedule cannot run, options that do not apply, and bounds (not a run of
  // minutes at 819 M stage passes, or a clock overflow, which was an internal error): each
  // names the option. The arguments after "pipeline --schedule", and what the error says.
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"dualpipe", "--pp", "4", "--microbatches", "6", "--fwd", "1", "--bwd", "2"},
       "at least 2 x the ranks"},
      {{"1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1", "--bwd", "2", "--fwd-bwd", "2"},
       "--fwd-bwd"},
      {{"zb-h1", "--pp", "4", "--microbatches", "8", "--fwd", "1", "--bwd", "2", "--wgrad", "3"},
       "--wgrad"},
      {{"1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1", "--bwd", "2", "--wgrad", "1"},
       "--wgrad: 1f1b runs the backward whole"},
      {{"dualpipe", "--pp", "4", "--vpp", "2", "--microbatches", "8", "--fwd", "1", "--bwd", "2"},
       "--vpp"},
      {{"1f1b", "--pp", "4096", "--microbatches", "100000", "--fwd", "1", "--bwd", "2"},
       "--microbatches: 4096 ranks x 1 chunks x 100000 microbatches are 819200000"},
      {{"1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1e300", "--bwd", "1"}, "--fwd"},
      {{"1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1e8", "--bwd", "1"},
       "--fwd: chunk times this long make a step of up to"},
      {{"1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1", "--bwd", "1", "--p2p", "1e8"},
       "--p2p: chunk times this long"},
  };
  for (const auto& [args, says] : bad) {
    std::vector<std::string> a{"pipeline", "--schedule"};
    a.insert(a.end(), args.begin(), args.end());
    INFO(fmt::format("{}", fmt::join(a, " ")));
    r = run_moesim(a);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
}

TEST_CASE("Number options refuse NaN and infinities, which CLI11's range checks let through",
          "[cli]") {
  const std::string sc = test::source_path("scenarios/dsv3-gb200.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"run", sc, "--headroom", "nan"}, "--headroom: nan is not a finite number"},
      {{"run", sc, "--headroom", "-1"}, "--headroom: -1 is not in [0 - 10000]"},
      {{"plan", sc, "--token-budget", "inf"}, "--token-budget: inf is not a finite number"},
      {{"validate", sc, "--baseline-tolerance", "nan"}, "--baseline-tolerance"},
      {{"pipeline", "--schedule", "1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "nan",
        "--bwd", "2"},
       "--fwd: nan is not a finite number"},
      {{"pipeline", "--schedule", "1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "1", "--bwd",
        "2", "--p2p", "nan"},
       "--p2p: nan is not a finite number"},
      {{"pipeline", "--schedule", "1f1b", "--pp", "4", "--microbatches", "8", "--fwd", "0", "--bwd",
        "2"},
       "--fwd: 0 is not in (0 - 1e+09]"},
  };
  for (const auto& [args, says] : bad) {
    INFO(fmt::format("{}", fmt::join(args, " ")));
    const auto r = run_moesim(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
  CHECK(run_moesim({"run", sc, "--headroom", "2"}).status == 0);
}

TEST_CASE("infer solves a journey step's parameter and refuses a wrong pair", "[cli][infer]") {
  const auto j = [](const char* f) {
    return test::source_path(std::string("scenarios/journey/") + f);
  };
  auto r = run_moesim({"infer", "deepep_tuned_factor", j("06-partial-cuda-graphs.json"),
                       j("07-deepep-tuned.json"), "--json"});
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  CHECK(out["solved"].get<bool>());
  CHECK(out["predicted_ratio"].get<double>() == Approx(691.49 / 663.27).epsilon(1e-3));
  // The NUMA step's switch is on in both of these: exit 2 naming the after file's stack.
  r = run_moesim(
      {"infer", "numa_unbound_factor", j("08-numa-binding.json"), j("09-pdl-swizzle.json")});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("09-pdl-swizzle.json") && Catch::Contains("stack"));
  CHECK(
      run_moesim({"infer", "clock", j("07-deepep-tuned.json"), j("08-numa-binding.json")}).status ==
      2);
}

TEST_CASE("Uncalibrated runs read the system presets as written", "[cli][calibration]") {
  const std::string f = test::source_path("scenarios/h800/dsv3-production.json");
  const auto cal = nlohmann::json::parse(run_moesim({"describe", "--json", f}).out);
  const auto raw =
      nlohmann::json::parse(run_moesim({"describe", "--json", "--uncalibrated", f}).out);
  CHECK(cal["system"]["calibration_profiles"] ==
        nlohmann::json::array({"ep-deepep", "ep-deepep-ll", "ep-hybridep", "h800-deepgemm",
                               "h100-te-grouped", "step-jitter", "corpus"}));
  CHECK(raw["system"]["calibration_profiles"].empty());
  // The DeepGEMM profile alone (an inline system naming it) makes the H800's FP8 GEMMs
  // faster than the preset's H100 figure: the same run with no profile is slower.
  auto j = nlohmann::json::parse(test::read_text(f));
  j["system"] = {{"base", "h800"}, {"profiles", {"h800-deepgemm"}}};
  const test::TempFile with(j.dump(), "deepgemm-only.json");
  j["system"]["profiles"] = nlohmann::json::array();
  const test::TempFile without(j.dump(), "no-profile.json");
  const auto a = nlohmann::json::parse(run_moesim({"run", "--json", with.path()}).out);
  const auto b = nlohmann::json::parse(run_moesim({"run", "--json", without.path()}).out);
  CHECK(a["step_time_s"].get<double>() < b["step_time_s"].get<double>());
}

TEST_CASE("run --deterministic is byte-identical between runs (issue #46 item 3)", "[cli]") {
  const auto scenario = test::source_path("scenarios/dsv3-gb200.json");
  for (const bool json : {true, false}) {
    std::vector<std::string> args{"run", scenario, "--deterministic"};
    if (json) args.emplace_back("--json");
    const auto a = test::run_moesim(args), b = test::run_moesim(args);
    REQUIRE(a.status == 0);
    CHECK(a.out == b.out);
    if (json) {
      const auto j = nlohmann::json::parse(a.out);
      CHECK_FALSE(j["simulation"].contains("wall_s"));
      CHECK(j["simulation"].contains("events"));
    } else {
      CHECK_THAT(a.out, Catch::Contains(" events\n") && !Catch::Contains(" events in "));
    }
  }
  // Without the flag the wall time is there.
  const auto timed = test::run_moesim({"run", scenario, "--json"});
  CHECK(nlohmann::json::parse(timed.out)["simulation"].contains("wall_s"));
}

TEST_CASE("run --set replaces one system number after its profiles, says so, refuses others",
          "[cli][calibration]") {
  const std::string sc = test::source_path("scenarios/dsv3-gb200.json");
  const auto step = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"run", "--json", sc});
    const auto r = run_moesim(args);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto base = step({});
  // The corpus profile's Tensor Core clock under load (below 1 on GB200) set to 1: faster,
  // and the caveats say what was set and what the calibrated value was.
  const auto fast = step({"--set", "efficiency.sustained_clock_factor=1"});
  CHECK(fast["step_time_s"].get<double>() < base["step_time_s"].get<double>());
  const std::string caveats = fast["caveats"].dump();
  CHECK_THAT(caveats, Catch::Contains("system.efficiency.sustained_clock_factor = 1 (was 0."));
  CHECK_THAT(caveats, Catch::Contains("set on the command line (--set)"));
  // Setting a number to the value it has changes nothing but the caveat.
  const auto preset = nlohmann::json::parse(
      test::read_text(test::source_path("scenarios/systems/gb200-nvl72.json")));
  const double op_us = preset["host"]["op_us"]["value"].get<double>();
  const auto same = step({"--set", fmt::format("host.op_us={}", op_us)});
  CHECK(same["step_time_s"].get<double>() == base["step_time_s"].get<double>());
  CHECK(same["caveats"].size() == base["caveats"].size() + 1);

  const auto refused = [&](const std::string& set, const std::string& message) {
    const auto r = run_moesim({"run", sc, "--set", set});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
  };
  refused("efficiency.nope=1", "has no number at efficiency.nope; efficiency holds: ");
  refused("efficiency.nope=1", "sustained_clock_factor");
  refused("host=1", "host of system 'gb200-nvl72' is not a number");
  refused("sources.x=1", "has no number at sources");
  refused("host.launch_us", "expected PATH=VALUE");
  refused("host.launch_us=abc", "'abc' is not a number");
  refused("host.launch_us=inf", "is not a finite number");
  // The command line's error, not the preset file's.
  refused("host.launch_us=-5",
          "<command line>: --set: host.launch_us.value: -5 is outside the valid range");
  refused("host.x'y=1", "'host.x'y' is not a path of the system's keys");

  // describe shows what was set, in its text and its JSON.
  const auto d = run_moesim({"describe", sc, "--set", "host.rank_contention=2"});
  REQUIRE(d.status == 0);
  CHECK_THAT(d.out, Catch::Contains("set on the command line (--set, a what-if): "
                                    "host.rank_contention = 2 (was "));
  const auto dj = run_moesim({"describe", "--json", sc, "--set", "host.rank_contention=2"});
  REQUIRE(dj.status == 0);
  CHECK(nlohmann::json::parse(dj.out)["system"]["set_on_command_line"].size() == 1);
  CHECK_FALSE(nlohmann::json::parse(run_moesim({"describe", "--json", sc}).out)["system"].contains(
      "set_on_command_line"));
}

TEST_CASE("diff --set: both sides a what-if on the value, said on each", "[cli][calibration]") {
  const std::string a = test::source_path("scenarios/journey/12-te-host-slim.json");
  const std::string b = test::source_path("scenarios/journey/13-norm-quant-fusion.json");
  const auto r = run_moesim({"diff", "--json", a, b, "--set", "host.rank_contention=2"});
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* side : {"a", "b"}) {
    REQUIRE(j[side].contains("system_set"));
    CHECK_THAT(j[side]["system_set"][0].get<std::string>(),
               Catch::StartsWith("host.rank_contention = 2 (was "));
  }
  const auto plain = nlohmann::json::parse(run_moesim({"diff", "--json", a, b}).out);
  CHECK_FALSE(plain["a"].contains("system_set"));
  // Host costs doubled per process: both steps longer.
  CHECK(j["a"]["step_time_s"].get<double>() > plain["a"]["step_time_s"].get<double>());
  const auto text = run_moesim({"diff", a, b, "--set", "host.rank_contention=2"}).out;
  CHECK_THAT(text, Catch::Contains("caveats of A and B (priced beyond what was measured):"));
  CHECK_THAT(text, Catch::Contains("system.host.rank_contention = 2 (was "));
  CHECK_THAT(j["a"]["caveats"].dump(), Catch::Contains("set on the command line (--set)"));
}

TEST_CASE("bench reports the simulation's wall time, events and the process's peak memory",
          "[cli][bench]") {
  const std::string scenario = test::source_path("scenarios/dsv3-gb200.json");
  const auto r = test::run_moesim({"bench", "--json", "--repeat", "1", scenario});
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["events"].get<double>() > 0);
  CHECK(j["wall_s"].get<double>() > 0);
  // The whole process (here the test binary), at least the run's own events' worth in MiB: a
  // kernel record alone is tens of bytes.
  CHECK(j["peak_rss_mib"].get<double>() > j["events"].get<double>() * 16 / (1024.0 * 1024.0));
  const auto text = test::run_moesim({"bench", "--repeat", "1", scenario});
  CHECK_THAT(text.out, Catch::Contains("MiB"));
}
