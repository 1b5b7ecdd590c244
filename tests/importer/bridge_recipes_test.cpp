// importer/bridge_recipes.hpp: Megatron-Bridge's performance recipe names resolved at a
// release tag as its launcher resolves them. The expected settings are read by hand from
// the workload base config files at those tags (scripts/performance/configs/...).
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/load.hpp"
#include "config/releases.hpp"
#include "importer/bridge_recipes.hpp"

using namespace moesim;

TEST_CASE("Megatron-Bridge recipes: names resolve at a tag as the launcher resolves them",
          "[config][bridge]") {
  // v0.4.0 (0fbfe7d3): DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V1 = replace(BASE (ETP 1),
  // num_gpus=256, global_batch_size=2048, PP 4, VPP 4, EP 64, hybridep, no A2A overlap,
  // recompute ["mlp"], TE CUDA graphs over attn, moe_router, moe_preprocess); FP8_MX_V1 is it.
  importer::BridgeRecipeQuery q{"v0.4.0", "deepseek_v3",     "pretrain",  "gb200",
                                "fp8_mx", std::string("v1"), std::nullopt};
  const auto v1 = importer::resolve_bridge_recipe(q);
  CHECK(v1.config == "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V1");
  CHECK(v1.commit.rfind("0fbfe7d3e9", 0) == 0);
  const auto& s = v1.settings;
  CHECK(s["num_gpus"] == 256);
  CHECK(s["tensor_model_parallel_size"] == 1);
  CHECK(s["pipeline_model_parallel_size"] == 4);
  CHECK(s["virtual_pipeline_model_parallel_size"] == 4);
  CHECK(s["expert_model_parallel_size"] == 64);
  CHECK(s["expert_tensor_parallel_size"] == 1);
  CHECK(s["global_batch_size"] == 2048);
  CHECK(s["micro_batch_size"] == 1);  // the dataclass default
  CHECK(s["moe_flex_dispatcher_backend"] == "hybridep");
  CHECK(s["moe_a2a_overlap"] == false);
  CHECK(s["recompute_modules"] == config::Json({"mlp"}));
  CHECK(s["cuda_graph_impl"] == "transformer_engine");
  CHECK(s["cuda_graph_scope"] == config::Json({"attn", "moe_router", "moe_preprocess"}));
  CHECK(s["family"] == "deepseek");
  // The tag's default variant is v2: GBS 4096 for Blackwell ("V2: GBS=4096").
  q.variant.reset();
  const auto v2 = importer::resolve_bridge_recipe(q);
  CHECK(v2.config == "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2");
  CHECK(v2.settings["global_batch_size"] == 4096);
  // GB300 BF16 V1 = replace(GB300_V1, ...): the base's pp_layout carries over.
  q.gpu = "gb300";
  q.dtype = "bf16";
  q.variant = "v1";
  const auto gb300 = importer::resolve_bridge_recipe(q);
  CHECK(gb300.settings["pp_layout"] == "Et*4|(t*4|)*14tmL");
  CHECK(gb300.settings["recompute_modules"] == config::Json({"moe_act"}));
  // V2 missing: V1, as the launcher falls back (Llama 3.1 405B B200 BF16 at v0.4.0: TP 4,
  // PP 8, CP 2, VPP 8, GBS 64 on 128 GPUs).
  const auto llama = importer::resolve_bridge_recipe(
      {"v0.4.0", "llama31_405b", "pretrain", "b200", "bf16", std::nullopt, std::nullopt});
  CHECK(llama.config == "LLAMA31_405B_PRETRAIN_CONFIG_B200_BF16_V1");
  CHECK(llama.tried == std::vector<std::string>{"LLAMA31_405B_PRETRAIN_CONFIG_B200_BF16_V2"});
  CHECK(llama.settings["tensor_model_parallel_size"] == 4);
  CHECK(llama.settings["context_parallel_size"] == 2);
  CHECK(llama.settings["virtual_pipeline_model_parallel_size"] == 8);
  CHECK(llama.settings["global_batch_size"] == 64);
  // v0.2.0 (7af9601c): -m deepseek -s v3, DEEPSEEK_V3_GB200_FP8_MX_BASE_CONFIG: recompute
  // ["mla_up_proj"], CUDA graphs over moe_router and moe_preprocess only.
  const auto old = importer::resolve_bridge_recipe(
      {"v0.2.0", "deepseek_v3", "pretrain", "gb200", "fp8_mx", std::nullopt, std::nullopt});
  CHECK(old.config == "DEEPSEEK_V3_GB200_FP8_MX_BASE_CONFIG");
  CHECK(old.settings["recompute_modules"] == config::Json({"mla_up_proj"}));
  CHECK(old.settings["cuda_graph_scope"] == config::Json({"moe_router", "moe_preprocess"}));
}

TEST_CASE("Megatron-Bridge recipes: what does not resolve says why", "[config][bridge]") {
  CHECK_THROWS_WITH(
      importer::resolve_bridge_recipe(
          {"v9.9.9", "deepseek_v3", "pretrain", "gb200", "bf16", std::nullopt, std::nullopt}),
      Catch::Contains("no Megatron-Bridge release tag 'v9.9.9'") && Catch::Contains("v0.4.0"));
  CHECK_THROWS_WITH(
      importer::resolve_bridge_recipe(
          {"v0.4.0", "deepseek_v3", "pretrain", "h200", "bf16", std::nullopt, std::nullopt}),
      Catch::Contains(
          "DEEPSEEK_V3_PRETRAIN_CONFIG_H200_BF16_V2 or DEEPSEEK_V3_PRETRAIN_CONFIG_H200_BF16_V1") &&
          Catch::Contains("DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_BF16_V1"));
  // Every release that ships a Megatron-Bridge tag names one the table holds.
  const auto tags = importer::bridge_recipe_tags();
  for (const auto& r : config::software_releases())
    if (!r.bridge.empty())
      CHECK(std::find(tags.begin(), tags.end(), std::string(r.bridge)) != tags.end());
}

TEST_CASE("Megatron-Bridge v0.6.0: a flat recipe per GPU count, the exact -ng one first",
          "[config][bridge]") {
  // v0.6.0 (51885cf132) src/megatron/bridge/perf_recipes/deepseek/vr200/deepseek_v3.py:139-152:
  // deepseek_v3_pretrain_128gpu_vr200_fp8mx_config, PP 4, VPP 4, EP 64, GBS 2048; the 256-GPU
  // recipe is the default one (the largest count).
  importer::BridgeRecipeQuery q{"v0.6.0", "deepseek_v3", "pretrain",       "vr200",
                                "fp8_mx", std::nullopt,  std::int64_t{128}};
  const auto exact = importer::resolve_bridge_recipe(q);
  CHECK(exact.flat);
  CHECK(exact.exact_gpus);
  CHECK(exact.config == "DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX_128GPU");
  CHECK(exact.recipe_name == "DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX");
  CHECK(exact.function == "deepseek_v3_pretrain_128gpu_vr200_fp8mx_config");
  CHECK(exact.settings["pipeline_model_parallel_size"] == 4);
  CHECK(exact.settings["virtual_pipeline_model_parallel_size"] == 4);
  CHECK(exact.settings["expert_model_parallel_size"] == 64);
  CHECK(exact.settings["global_batch_size"] == 2048);
  q.gpus = 256;
  const auto canonical = importer::resolve_bridge_recipe(q);
  CHECK(canonical.config == "DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX");
  CHECK(canonical.exact_gpus);
  // No recipe of 512 GPUs: the default one, which the launcher weak-scales.
  q.gpus = 512;
  const auto scaled = importer::resolve_bridge_recipe(q);
  CHECK(scaled.config == "DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX");
  CHECK_FALSE(scaled.exact_gpus);
  // v1 and v2 name the canonical recipe; another variant must exist.
  q.variant = "v2";
  CHECK(importer::resolve_bridge_recipe(q).config == "DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX");
  q.variant = "large_scale";
  CHECK_THROWS_WITH(importer::resolve_bridge_recipe(q),
                    Catch::Contains("DEEPSEEK_V3_PRETRAIN_CONFIG_VR200_FP8_MX_LARGE_SCALE"));
}
