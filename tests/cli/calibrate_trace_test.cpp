// moesim calibrate trace (issue #25 item 7): a Kineto trace's kernels by class, against a
// scenario's simulated kernels.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kTrace = "tests/data/trace/small-kineto.json";
json traced(std::vector<std::string> extra) {
  std::vector<std::string> args{"calibrate", "trace", test::source_path(kTrace), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = test::run_moesim(args);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("calibrate trace sums a Kineto trace's kernels by class", "[cli][trace]") {
  const auto j = traced({});
  const auto& m = j["measured"];
  // Five kernels (the CPU op and the memcpy are not kernels); hand-summed from the file:
  // 100 + 50 + 200 + 20 + 10 us, busy [1000, 1250] + [1300, 1320] + [1330, 1340].
  CHECK(m["kernels"] == 5);
  CHECK(m["kernel_s"].get<double>() == Approx(380e-6));
  CHECK(m["busy_s"].get<double>() == Approx(280e-6));
  CHECK(m["span_s"].get<double>() == Approx(340e-6));
  CHECK(m["classes"]["grouped_gemm"]["kernels"] == 1);
  CHECK(m["classes"]["ep_dispatch"]["seconds"].get<double>() == Approx(200e-6));
  CHECK(m["classes"]["elementwise"]["kernels"] == 1);
  CHECK_FALSE(j.contains("predicted"));
  // The host's schedule-node ranges, summed per node (40 + 60 us of attn(F), 25 of
  // mlp(B)); the profiler's step range is not a node.
  CHECK(m["host_nodes"].size() == 2);
  CHECK(m["host_nodes"]["attn(F)"]["ranges"] == 2);
  CHECK(m["host_nodes"]["attn(F)"]["seconds"].get<double>() == Approx(100e-6));
  CHECK(m["host_nodes"]["mlp(B)"]["seconds"].get<double>() == Approx(25e-6));
  const auto text = test::run_moesim({"calibrate", "trace", test::source_path(kTrace)});
  CHECK_THAT(text.out, Catch::Contains("grouped_gemm") && Catch::Contains("span"));
}

TEST_CASE("calibrate trace --microbatches prices one more microbatch of the scenario",
          "[cli][trace]") {
  const auto j =
      traced({"--scenario", test::source_path("scenarios/trace/dsv3-h800-chunk-pair.json"),
              "--microbatches", "1"});
  const auto& p = j["predicted"]["classes"];
  // Four MoE layers, forward and backward: the experts' fc1 and fc2 each forward, data
  // gradient and weight gradient (24 grouped GEMMs), one attention kernel each way per layer.
  CHECK(p["grouped_gemm"]["kernels"].get<double>() == Approx(24));
  CHECK(p["attention_fwd"]["kernels"].get<double>() == Approx(4));
  CHECK(p["attention_bwd"]["kernels"].get<double>() == Approx(4));
  CHECK(p["ep_dispatch"]["seconds"].get<double>() > 0);
  CHECK(p["ep_combine"]["seconds"].get<double>() > 0);
  CHECK(j["window"]["microbatches"] == 1);
  double sum = 0;
  for (const auto& [k, v] : p.items()) sum += v["seconds"].get<double>();
  CHECK(sum == Approx(j["predicted"]["kernel_s"].get<double>()));
  // The host thread's CPU time by DualPipe node: every part of the MoE layers, forward and
  // backward, and the weight gradients of the attention and the experts.
  const auto& h = j["predicted"]["host_nodes"];
  for (const char* node : {"attn(F)", "attn(B)", "attn(W)", "dispatch(F)", "dispatch(B)", "mlp(F)",
                           "mlp(B)", "mlp(W)", "combine(F)", "combine(B)"}) {
    INFO(node);
    REQUIRE(h.contains(node));
    CHECK(h[node]["seconds"].get<double>() > 0);
  }
  CHECK(h.contains("(outside the nodes)"));
  const auto text = test::run_moesim(
      {"calibrate", "trace", test::source_path(kTrace), "--scenario",
       test::source_path("scenarios/trace/dsv3-h800-chunk-pair.json"), "--microbatches", "1"});
  CHECK_THAT(text.out, Catch::Contains("host time by schedule node") && Catch::Contains("mlp(B)"));
  // The step window: the whole simulated step's kernels.
  const auto step =
      traced({"--scenario", test::source_path("scenarios/trace/dsv3-h800-chunk-pair.json")});
  CHECK(step["window"]["step"] == true);
  CHECK(step["predicted"]["kernel_s"].get<double>() > j["predicted"]["kernel_s"].get<double>());
}

TEST_CASE("calibrate trace refuses what it cannot read, naming where", "[cli][trace]") {
  test::TempFile none(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1}]})",
      "trace.json");
  auto r = test::run_moesim({"calibrate", "trace", none.path()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no GPU kernels"));
  test::TempFile nodur(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a"}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 3}]})",
      "trace.json");
  r = test::run_moesim({"calibrate", "trace", nodur.path()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("traceEvents[1].dur"));
  test::TempFile badph(
      R"({"traceEvents": [{"ph": 1, "cat": null}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0},
                                              {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 1, "pid": 1}]})",
      "trace.json");
  r = test::run_moesim({"calibrate", "trace", badph.path()});
  CHECK(r.status == 2);  // non-string keys pass by; two devices are refused
  CHECK_THAT(r.err, Catch::Contains("traceEvents[2].pid") && Catch::Contains("one rank's trace"));
  r = test::run_moesim({"calibrate", "trace", test::source_path(kTrace), "--microbatches", "2"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--scenario"));
}
