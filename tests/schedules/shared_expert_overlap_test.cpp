// framework.moe_shared_expert_overlap: Megatron's --moe-shared-expert-overlap runs the shared
// expert on its own stream beside the dispatch (fc1) and the combine (fc2), forward and
// backward (workload/layer_graph_moe.cpp, LayerBuilder::finish, schedules/rank_program.cpp
// emit_side), and what Megatron-Core refuses of it is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "predict/plan.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;

namespace {

// DeepSeek-V3 cut to 4 layers (1 dense) on 32 GB200: TP1 PP2 EP8, NCCL's all-to-all, no CUDA
// graphs (the GB200 journey's first software), 4 microbatches.
Json alltoall() {
  return test::patched(test::default_scenario_json(), R"({
    "gpus": 32, "placement": null,
    "model": {"base": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 1},
    "training": {"global_batch_size": 64},
    "parallelism": {"pp": 2, "vpp": null, "ep": 8, "pp_layout": null, "pipeline_schedule": null},
    "framework": {"dispatcher": "alltoall", "dispatcher_sms": null, "cuda_graph_scope": []}
  })");
}

Json with_overlap(Json j) {
  j["framework"]["moe_shared_expert_overlap"] = true;
  return j;
}

config::Scenario load(const Json& j) {
  return config::load_scenario_text(j.dump(), "s.json");
}

std::size_t index(const std::vector<workload::KernelTemplate>& v, const std::string& name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].name == name) return i;
  FAIL("no kernel " << name);
  return 0;
}

// The first kernel of the shared expert's stream after position `from`.
std::size_t first_side(const std::vector<workload::KernelTemplate>& v, std::size_t from) {
  for (std::size_t i = from; i < v.size(); ++i)
    if (v[i].side_stream) return i;
  FAIL("no side-stream kernel after " << from);
  return 0;
}

}  // namespace

TEST_CASE("Shared-expert overlap: fc1 beside the dispatch, fc2 beside the combine, both passes",
          "[schedules][shared_overlap]") {
  const auto plain = test::build_templates(load(alltoall()));
  const auto over = test::build_templates(load(with_overlap(alltoall())));
  for (const auto& k : plain.moe.fwd) CHECK_FALSE(k.side_stream);
  // Every shared-expert kernel, and only those, on the side stream.
  for (const auto* pass : {&over.moe.fwd, &over.moe.bwd})
    for (const auto& k : *pass)
      CHECK(k.side_stream == (k.module == workload::Module::shared_expert));
  const auto& f = over.moe.fwd;
  // Forward: launched right after the all-to-all it runs beside, waiting for what came before.
  const std::size_t d = index(f, "moe.dispatch.fwd"), c = index(f, "moe.combine.fwd");
  CHECK(first_side(f, 0) == d + 1);
  CHECK(f[d + 1].side_after_comm);
  std::size_t fc1_end = d + 1;
  while (f[fc1_end].side_stream) ++fc1_end;
  CHECK(first_side(f, fc1_end) == c + 1);  // fc2's run
  CHECK(f[c + 1].side_stream);
  CHECK(f[c + 1].side_after_comm);
  CHECK(index(f, "shared.fc1.fprop") < index(f, "moe.fc1.fprop"));
  CHECK(index(f, "shared.fc2.fprop") > index(f, "moe.fc2.fprop"));
  // The main stream joins at most once in the layer, after the global unpermute that follows
  // the last run (Megatron's combine_postprocess unpermutes, then get_output waits); where
  // nothing follows, the next layer's first kernel joins (the engine; next test case).
  std::size_t joins = 0, last_side = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    joins += f[i].join_side;
    if (f[i].side_stream) last_side = i;
  }
  CHECK(joins <= 1);
  CHECK(f[last_side + 1].name == "moe.unpermute.fwd");
  CHECK_FALSE(f[last_side + 1].join_side);
  // Backward: each gradient all-to-all first, then the shared expert's gradients beside it.
  const auto& b = over.moe.bwd;
  const std::size_t cb = index(b, "moe.combine.bwd"), db = index(b, "moe.dispatch.bwd");
  CHECK(cb < db);
  CHECK(b[cb + 1].side_stream);
  CHECK(b[cb + 1].side_after_comm);
  CHECK(b[db + 1].side_stream);
  CHECK(b[db + 1].side_after_comm);
  CHECK(index(b, "shared.fc2.dgrad") < index(b, "moe.fc2.dgrad"));
  CHECK(index(b, "shared.fc1.dgrad") > index(b, "moe.fc1.dgrad"));
  // Under the overlap the router's graph no longer holds the shared expert (Megatron's
  // shared_experts_compute does nothing); the whole MoE block's graph still does.
  auto graphs = with_overlap(alltoall());
  graphs["framework"]["cuda_graph_scope"] = Json::array({"attn", "moe_router"});
  const auto sc = load(graphs);
  CHECK_FALSE(workload::CaptureSet(sc.framework, sc.stack)[workload::Module::shared_expert]);
  graphs["framework"]["moe_shared_expert_overlap"] = false;
  const auto sc2 = load(graphs);
  CHECK(workload::CaptureSet(sc2.framework, sc2.stack)[workload::Module::shared_expert]);
}

TEST_CASE("Shared-expert overlap hides at most the shared expert's own kernels",
          "[schedules][shared_overlap]") {
  const auto plain = predict::predict(load(alltoall()), {true, false});
  const auto over = predict::predict(load(with_overlap(alltoall())), {true, false});
  // The shared expert's kernel time over both pipeline ranks, every microbatch, serialized on
  // the main stream: the step's critical path crosses each of those kernels at most once, and
  // the overlap takes nothing else off it (its kernels share the SMs, so they run longer).
  double shared_s = 0;
  for (const auto& s : plain.step.trace)
    if (s.track >= 0 && plain.step.labels[s.label].rfind("shared.", 0) == 0)
      shared_s += s.end_s - s.start_s;
  REQUIRE(shared_s > 0);
  const double gain = plain.step.step_time_s - over.step.step_time_s;
  CHECK(gain > 0);
  CHECK(gain < shared_s);
  // The planner's lower bound stays below the step: the side stream's kernels are not the
  // main stream's serial work (schedules/step_bound.cpp), on NCCL's all-to-all and on DeepEP.
  for (const char* dispatcher : {"alltoall", "deepep"}) {
    auto j = alltoall();
    j["framework"]["dispatcher"] = dispatcher;
    double bound[2];
    for (const bool on : {false, true}) {
      j["framework"]["moe_shared_expert_overlap"] = on;
      const auto sc = load(j);
      const auto p = predict::predict(sc);
      bound[on] = predict::step_time_lower_bound(sc, p.ep_load).step_time_s;
      CHECK(bound[on] <= (p.step.step_time_s - p.step.breakdown.straggler_wait) * (1 + 1e-9));
    }
    INFO(dispatcher);
    CHECK(bound[1] <= bound[0] * (1 + 1e-9));  // equal where the side kernels were not binding
  }
  // On HybridEP the shared fc2 ends the MoE layer: the next layer's attention waits for it
  // (a full-iteration graph, so that the host launches every kernel ahead of the GPU; 16 shared
  // experts, so that fc2 outlasts the combine beside it; 16 SMs its GEMM leaves free, where the
  // attention's norm would otherwise start beside it).
  {
    auto j = with_overlap(alltoall());
    j["model"]["n_shared_experts"] = 16;
    j["framework"]["gemm_sm_margin"] = 16;
    j["framework"]["dispatcher"] = "hybridep";
    j["framework"]["cuda_graph_scope"] = Json::array({"full_iteration"});
    j["framework"]["moe_expert_rank_capacity_factor"] = 1.5;
    const auto p = predict::predict(load(j), {true, false});
    std::vector<std::pair<double, double>> fc2;
    std::vector<double> attn;
    for (const auto& s : p.step.trace) {
      if (s.rank != 1 || s.track < 0) continue;
      const std::string& name = p.step.labels[s.label];
      if (name == "shared.fc2.fprop") fc2.emplace_back(s.start_s, s.end_s);
      if (s.track == 0 && name.rfind("attn.", 0) == 0 && name.find(".bwd") == std::string::npos &&
          name.find("grad") == std::string::npos)
        attn.push_back(s.start_s);
    }
    std::sort(attn.begin(), attn.end());
    REQUIRE(!fc2.empty());
    for (const auto& [start, end] : fc2) {
      const auto next = std::lower_bound(attn.begin(), attn.end(), start);
      if (next != attn.end()) CHECK(*next >= end - 1e-12);
    }
  }
  // The shared expert's kernels ran on the second compute stream, beside the main one.
  std::size_t on_side = 0;
  for (const auto& s : over.step.trace)
    if (s.rank == 0 && s.track > 0 && over.step.labels[s.label].rfind("shared.", 0) == 0) ++on_side;
  CHECK(on_side > 0);
}

TEST_CASE("Shared-expert overlap: what Megatron-Core refuses is refused",
          "[schedules][shared_overlap][config]") {
  const auto refused = [](const std::string& patch, const std::string& why) {
    CHECK_THROWS_WITH(
        load(test::patched(with_overlap(alltoall()), patch)),
        Catch::Contains("framework.moe_shared_expert_overlap") && Catch::Contains(why));
  };
  refused(R"({"model": {"base": "qwen3-30b-a3b", "num_hidden_layers": 4,
              "first_k_dense_replace": null}})",
          "no shared expert");
  refused(R"({"framework": {"dispatcher": "allgather"}})", "alltoall or flex");
  refused(R"({"model": {"base": "nemotron-3-super", "num_hidden_layers": 4,
              "first_k_dense_replace": null, "hybrid_override_pattern": "MEME"}})",
          "latent MoE");
  refused(R"({"parallelism": {"vpp": 2}, "framework": {"moe_a2a_overlap": true}})",
          "moe_a2a_overlap");
  refused(R"({"framework": {"recompute_modules": ["shared_experts"]}})",
          "shared_experts recompute");
  refused(R"({"parallelism": {"pipeline_schedule": "zb-h1"}})", "zb-h1");
  // On DeepEP and HybridEP (Megatron's flex dispatcher) it runs.
  for (const char* d : {"deepep", "hybridep"}) {
    auto j = with_overlap(alltoall());
    j["framework"]["dispatcher"] = d;
    CHECK(load(j).framework.moe_shared_expert_overlap);
  }
}
