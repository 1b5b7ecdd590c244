// Megatron-LM's MoE recipes (examples/moe_recipes, copies in tests/data/megatron/moe-recipes
// with their commit): each imports as the scenario of scenarios/mlm-recipes/ that carries its
// measured row, and a malformed recipe is refused naming its key (importer/moe_recipe.cpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "importer/import.hpp"
#include "support/helpers.hpp"

namespace moesim {
namespace {

struct RecipeCase {
  const char* recipe;    // under tests/data/megatron/moe-recipes/
  const char* scenario;  // under scenarios/mlm-recipes/
  const char* system;
  std::int64_t gpus;
};

importer::MegatronImport import_recipe(const std::string& path, const std::string& text,
                                       const char* system, std::int64_t gpus) {
  importer::MegatronImportOptions o;
  o.system = system;
  o.gpus = gpus;
  o.release = "26.06";
  o.source = path;
  return importer::import_megatron(text, o);
}

// What the importer writes: the scenario less the fields a measured file adds.
config::Json imported_part(config::Json sc) {
  for (const char* k : {"name", "description", "measured"}) sc.erase(k);
  return sc;
}

}  // namespace

TEST_CASE("import megatron: each MoE recipe is its measured scenario", "[config][import]") {
  const std::vector<RecipeCase> cases{
      {"qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_partial_cg_overlap.yaml",
       "mlm-qwen3-235b-gb200-mxfp8-partial-cg", "gb200-nvl72", 128},
      {"qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_paged_stash_fullcg_overlap.yaml",
       "mlm-qwen3-235b-gb200-mxfp8-full-cg", "gb200-nvl72", 128},
      {"qwen3_235b/gb300/mxfp8_128GPU_TP1PP1EP64_paged_stash_full_cg.yaml",
       "mlm-qwen3-235b-gb300-mxfp8-full-cg", "gb300-nvl72", 128},
      {"qwen3_235b/b300/mxfp8_128GPU_TP2PP1EP16_partial_cg.yaml",
       "mlm-qwen3-235b-b300-mxfp8-partial-cg", "b300", 128},
      {"qwen3_30b/gb200/bf16_16GPU_TP1PP1EP16.yaml", "mlm-qwen3-30b-gb200-bf16", "gb200-nvl72", 16},
      {"qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_partial_cg.yaml",
       "mlm-qwen3-30b-gb200-mxfp8-partial-cg", "gb200-nvl72", 16},
      {"qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_paged_stash.yaml",
       "mlm-qwen3-30b-gb200-mxfp8-full-cg", "gb200-nvl72", 16},
      {"qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml", "mlm-qwen3-30b-h100-bf16", "h100", 32},
      {"qwen3_30b/h100/fp8_32GPU_TP1PP1EP8.yaml", "mlm-qwen3-30b-h100-fp8-blockwise", "h100", 32},
  };
  for (const auto& c : cases) {
    INFO(c.recipe);
    const std::string path = test::source_path("tests/data/megatron/moe-recipes/") + c.recipe;
    const auto imp = import_recipe(path, test::read_text(path), c.system, c.gpus);
    const auto want = config::Json::parse(
        test::read_text(test::source_path("scenarios/mlm-recipes/") + c.scenario + ".json"));
    CHECK(imported_part(imp.scenario) == imported_part(want));
    // A recipe names no launcher: its NUMA binding is assumed, and said to be.
    CHECK(imp.scenario["stack"]["cpu_numa_binding"] == true);
    bool said = false;
    for (const auto& [key, why] : imp.assumed)
      said = said || (key == "stack.cpu_numa_binding" &&
                      why.find("names no launcher") != std::string::npos);
    CHECK(said);
  }
}

TEST_CASE("import megatron: a recipe's ARGS become flags as Megatron names them",
          "[config][import]") {
  const std::string path = "recipe.yaml";
  const std::string base =
      "ENV_VARS:\n  NVTE_NORM_FWD_USE_CUDNN: '1'\n  CKPT: /ckpt\n"
      "ARGS:\n  num_layers: 48\n  hidden_size: 2048\n  ffn_hidden_size: 6144\n"
      "  num_attention_heads: 32\n  kv_channels: 128\n  group_query_attention: true\n"
      "  num_query_groups: 4\n  qk_layernorm: true\n  swiglu: true\n"
      "  disable_bias_linear: true\n  untie_embeddings_and_output_weights: true\n"
      "  num_experts: 128\n  moe_ffn_hidden_size: 768\n  moe_router_topk: 8\n"
      "  moe_router_force_load_balancing: true\n  moe_grouped_gemm: true\n"
      "  moe_permute_fusion: true\n  moe_token_dispatcher_type: alltoall\n"
      "  expert_model_parallel_size: 8\n  seq_length: 4096\n  micro_batch_size: 1\n"
      "  global_batch_size: 256\n  bf16: true\n  use_distributed_optimizer: true\n"
      "  make_vocab_size_divisible_by: 1187\n  load: ${CKPT}\n  save: ${UNSET}/x\n";
  auto refused = [&](const std::string& text, const std::string& words) {
    try {
      import_recipe(path, text, "h100", 8);
      FAIL("imported; expected: " << words);
    } catch (const config::InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(words));
    }
  };
  SECTION("a list given as one string is split as the shell splits it") {
    const auto imp = import_recipe(
        path,
        base +
            "  cuda_graph_impl: transformer_engine\n"
            "  cuda_graph_scope: moe_router moe_preprocess\n  overlap_p2p_comm: true\n",
        "h100", 8);
    CHECK(imp.scenario["framework"]["cuda_graph_scope"] ==
          config::Json::array({"moe_router", "moe_preprocess"}));
    CHECK(imp.scenario["stack"]["norm_quant_fusion"] == true);  // from ENV_VARS
  }
  SECTION("--env wins over ENV_VARS") {
    importer::MegatronImportOptions o;
    o.system = "h100";
    o.gpus = 8;
    o.source = path;
    o.environment["NVTE_NORM_FWD_USE_CUDNN"] = "0";
    const auto imp = importer::import_megatron(base, o);
    CHECK(imp.scenario["stack"]["norm_quant_fusion"] == false);
  }
  SECTION("false drops a flag (an unknown one too); YAML's other booleans are booleans") {
    const auto imp = import_recipe(
        path, base + "  moe_grouped_gemm_unused: off\n  overlap_grad_reduce: True\n", "h100", 8);
    CHECK(imp.scenario["framework"]["dispatcher"] == "alltoall");
    CHECK(imp.scenario["framework"]["overlap_grad_reduce"] == true);
  }
  SECTION("a quoted 'true' is text, a value") {
    refused(base + "  overlap_grad_reduce: 'true'\n", "overlap-grad-reduce");
  }
  SECTION("refused, naming the key") {
    refused(base + "  overlap_p2p_comm: false\n", "ARGS.overlap_p2p_comm");
    refused(base + "  recompute_modules:\n    a: b\n", "ARGS.recompute_modules");
    refused("ENV_VARS: [a]\nARGS:\n  bf16: true\n", "ENV_VARS");
    refused("ARGS: [1, 2]\n", "ARGS");
    refused("MODEL_ARGS:\n  --num-layers: 4\n", "missing: a Megatron-LM MoE recipe");
    refused("ARGS: {a: [\n", "not YAML");
    refused(base + "  lr_schedule: " + std::string(std::size_t{1} << 20, 'x') + "\n",
            "larger than the 1024 KiB");
    refused(base + "  no_such_argument: 3\n", "--no-such-argument");
    refused(base + "  'bf16 --fp16': true\n", "not a flag's name");
    refused("ENV_VARS:\n  'A B': 1\n" + base.substr(base.find("ARGS:")), "not a variable's name");
  }
}

TEST_CASE("import megatron: DeepSeek-V4's recipe is refused for its shape flags, with the way in",
          "[config][import]") {
  const std::string path = test::source_path(
      "tests/data/megatron/moe-recipes/deepseek_v4_flash/gb200/mxfp8_SL4K_128GPU_TP1PP1EP64.yaml");
  try {
    import_recipe(path, test::read_text(path), "gb200-nvl72", 128);
    FAIL("imported");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "--o-groups");  // the first of its DeepSeek-V4 flags
    CHECK_THAT(std::string(e.what()), Catch::Contains("Megatron-Bridge's launcher"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("deepseek-v4-flash"));
  }
}

TEST_CASE("import megatron: the CuTe DSL fused grouped MLP from the environment, with its margin",
          "[config][import]") {
  const std::string path = test::source_path(
      "tests/data/megatron/moe-recipes/qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_paged_stash.yaml");
  const std::string text = test::read_text(path);
  importer::MegatronImportOptions o;
  o.system = "gb200-nvl72";
  o.gpus = 16;
  o.release = "26.06";
  o.source = path;
  // The recipe sets NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 beside the op fuser, no cluster margin.
  const auto plain = importer::import_megatron(text, o);
  CHECK(plain.scenario["framework"]["fused_grouped_mlp"] == true);
  CHECK_FALSE(plain.scenario["framework"].contains("fused_grouped_mlp_sm_margin"));
  // cuDNN's margin counts two-SM clusters.
  o.environment["CUDNNFE_CLUSTER_OVERLAP_MARGIN"] = "8";
  CHECK(importer::import_megatron(text, o).scenario["framework"]["fused_grouped_mlp_sm_margin"] ==
        16);
  o.environment["CUDNNFE_CLUSTER_OVERLAP_MARGIN"] = "8x";
  CHECK_THROWS_WITH(importer::import_megatron(text, o),
                    Catch::Contains("not a whole number of clusters"));
  o.environment.erase("CUDNNFE_CLUSTER_OVERLAP_MARGIN");
  // 0 turns it off; TE reads the variable as an integer.
  o.environment["NVTE_CUTEDSL_FUSED_GROUPED_MLP"] = "0";
  CHECK_FALSE(
      importer::import_megatron(text, o).scenario["framework"].contains("fused_grouped_mlp"));
  o.environment["NVTE_CUTEDSL_FUSED_GROUPED_MLP"] = "yes";
  CHECK_THROWS_WITH(importer::import_megatron(text, o), Catch::Contains("is not an integer"));
}

}  // namespace moesim
