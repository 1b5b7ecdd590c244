// Partial full recompute (framework.recompute_num_layers: Megatron's --recompute-method block
// --recompute-num-layers N): each virtual stage recomputes its first N decoder layers whole
// and keeps the rest; what the loader refuses with it, and the importers' mapping.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "importer/import.hpp"
#include "predict/predict.hpp"
#include "schedules/stage_params.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
// Qwen3-30B-A3B cut to 8 layers on 8 H100 in BF16 over 2 pipeline stages of 2 virtual
// stages (2 layers each).
Json qwen8(const std::string& framework_patch) {
  Json j = Json::parse(R"({
    "name": "partial-recompute", "system": "h100", "gpus": 8,
    "model": {"base": "qwen3-30b-a3b", "num_hidden_layers": 8},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16,
                 "precision": "bf16"},
    "parallelism": {"ep": 4, "pp": 2, "vpp": 2},
    "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
  })");
  j["framework"].update(Json::parse(framework_patch));
  return j;
}

}  // namespace

TEST_CASE("The block method recomputes the first N decoder layers of each virtual stage",
          "[workload][partial_recompute]") {
  const auto sc = load(qwen8(R"({"recompute_modules": ["full"], "recompute_num_layers": 1})"));
  // Virtual stages t0-t1 | t2-t3 (rank 0, 1, chunk 0) | t4-t5 | t6-t7: the first of each
  // recomputes, the second is kept (workload::kKeptBuild).
  const auto b = schedules::decoder_builds(sc.layout, sc.model, sc.training, sc.framework);
  REQUIRE(b.size() == 8);
  for (std::size_t i = 0; i < b.size(); ++i)
    CHECK(b[i] == (i % 2 == 0 ? workload::kRecipeBuild : workload::kKeptBuild));
  // BF16 layers and kept layers combine their bits.
  const auto fp8 = load([] {
    Json j = qwen8(R"({"recompute_modules": ["full"], "recompute_num_layers": 1})");
    j["training"]["precision"] = "fp8-blockwise";
    j["training"]["bf16_layers_at_end"] = 1;
    return j;
  }());
  const auto c = schedules::decoder_builds(fp8.layout, fp8.model, fp8.training, fp8.framework);
  CHECK(c[6] == workload::kRecipeBuild);
  CHECK(c[7] == (workload::kKeptBuild | workload::kBf16Build));
  // The kept build recomputes nothing; the recipe's re-runs the layer's forward.
  const workload::TemplateInputs ti{
      sc.model, sc.training, sc.parallelism, sc.framework, sc.stack, sc.padded_vocab(), 1};
  const auto full = workload::build_templates(ti, workload::kRecipeBuild);
  const auto kept = workload::build_templates(ti, workload::kKeptBuild);
  const auto recomputed = [](const workload::LayerTemplate& t) {
    int n = 0;
    for (const auto& k : t.bwd) n += k.recompute ? 1 : 0;
    return n;
  };
  CHECK(recomputed(full.moe) > 0);
  CHECK(recomputed(kept.moe) == 0);
}

TEST_CASE("Partial full recompute lies between none and full in time and in memory",
          "[workload][partial_recompute]") {
  const auto run = [](const std::string& patch) { return predict::predict(load(qwen8(patch))); };
  const auto none = run(R"({"recompute_modules": []})");
  const auto half = run(R"({"recompute_modules": ["full"], "recompute_num_layers": 1})");
  const auto full = run(R"({"recompute_modules": ["full"]})");
  // Two layers a virtual stage: N = 2 is every layer, the same prediction as 'full'.
  const auto all = run(R"({"recompute_modules": ["full"], "recompute_num_layers": 2})");
  const auto step = [](const predict::Prediction& p) { return p.step.step_time_s; };
  CHECK(step(none) < step(half));
  CHECK(step(half) < step(full));
  CHECK(step(all) == step(full));
  CHECK(none.peak_memory_gib > half.peak_memory_gib);
  CHECK(half.peak_memory_gib > full.peak_memory_gib);
  CHECK(all.peak_memory_gib == full.peak_memory_gib);
  // Half the layers recompute: about half the recompute time (within the pipeline's
  // bubbles and the layers' unequal placement).
  const double share = (step(half) - step(none)) / (step(full) - step(none));
  CHECK(share > 0.3);
  CHECK(share < 0.7);
}

TEST_CASE("recompute_num_layers is refused without 'full'", "[workload][partial_recompute]") {
  const auto moe =
      test::load_error(qwen8(R"({"recompute_modules": ["moe"], "recompute_num_layers": 1})"));
  CHECK(moe.path() == "framework.recompute_num_layers");
  CHECK_THAT(moe.message(), Catch::Contains("recompute_modules [\"full\"]"));
  CHECK(test::load_error(qwen8(R"({"recompute_modules": ["full"], "recompute_num_layers": 0})"))
            .path() == "framework.recompute_num_layers");
}

// A hybrid model's stack checkpoints its layers, each one mixer (Mamba, attention, MoE or
// MLP), through the same block method (Megatron-Core d0b3b775 models/hybrid/hybrid_block.py
// 308-309 calling recompute.py checkpointed_forward): the first N mixers of each virtual stage.
TEST_CASE("The block method on a hybrid model recomputes its first N mixers a stage",
          "[workload][partial_recompute]") {
  const auto run = [](const std::string& patch) {
    Json j = qwen8(patch);
    j["model"] = Json::parse(R"({"base": "nemotron-3-nano", "num_hidden_layers": 8,
      "hybrid_override_pattern": "MEM*EMEM"})");
    j["parallelism"] = Json::parse(R"({"ep": 8, "pp": 1})");
    return load(j);
  };
  const auto sc = run(R"({"recompute_modules": ["full"], "recompute_num_layers": 3})");
  const auto b = schedules::decoder_builds(sc.layout, sc.model, sc.training, sc.framework);
  REQUIRE(b.size() == 8);
  for (std::size_t i = 0; i < b.size(); ++i)
    CHECK(b[i] == (i < 3 ? workload::kRecipeBuild : workload::kKeptBuild));
  const auto step = [&](const std::string& patch) {
    return predict::predict(run(patch)).step.step_time_s;
  };
  const double none = step(R"({"recompute_modules": []})");
  const double part = step(R"({"recompute_modules": ["full"], "recompute_num_layers": 3})");
  const double full = step(R"({"recompute_modules": ["full"]})");
  CHECK(none < part);
  CHECK(part < full);
}

TEST_CASE("Megatron's block method imports as recompute_num_layers",
          "[workload][partial_recompute][import]") {
  const std::string cmd =
      "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
      "--num-attention-heads 16 --group-query-attention --num-query-groups 4 "
      "--ffn-hidden-size 6144 --swiglu --vocab-size 151936 --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 64 --bf16 --pipeline-model-parallel-size 2 "
      "--recompute-granularity full --recompute-method block --recompute-num-layers 3";
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 8;
  const auto imp = importer::import_megatron(cmd, o);
  CHECK(imp.scenario["framework"]["recompute_modules"] == Json::array({"full"}));
  CHECK(imp.scenario["framework"]["recompute_num_layers"] == 3);
  // The uniform method with one layer a group is every layer.
  const auto uni = importer::import_megatron(
      cmd.substr(0, cmd.find(" --recompute-method")) + " --recompute-method uniform", o);
  CHECK_FALSE(uni.scenario["framework"].contains("recompute_num_layers"));
}
