// moesim import megatron on Megatron-Bridge's performance launcher (importer/import_bridge.hpp,
// issue #27 item 1): the command NVIDIA ran resolves, at the release's Megatron-Bridge tag,
// to the scenario the corpus wrote by hand from the recipe's code (each corpus file cites the
// lines). Equal means equal as moesim reads them: `describe --json` of both, the layout
// compared as built (stages), not as written.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "importer/bridge_recipes.hpp"
#include "importer/import.hpp"
#include "importer/import_bridge.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

importer::MegatronImport bridge(const std::string& args, const std::string& release,
                                const std::string& system = "") {
  importer::MegatronImportOptions o;
  o.system = system;
  if (!release.empty()) o.release = release;
  return importer::import_megatron("python scripts/performance/setup_experiment.py " + args, o);
}

// "PATH: why" of the import's refusal, or "imported".
std::string err(const std::string& args, const std::string& release = "26.04") {
  try {
    bridge(args, release);
  } catch (const config::InputError& e) {
    return e.path() + ": " + e.message();
  }
  return "imported";
}

nlohmann::json described_json(const nlohmann::json& scenario) {
  test::TempFile f(scenario.dump());
  const auto r = test::run_moesim({"describe", "--json", f.path()});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"name", "file", "description", "measured"}) j.erase(k);
  j["parallelism"].erase("pp_layout");  // as written; `stages` holds the layout as built
  return j;
}

std::string derived(const importer::MegatronImport& m, const std::string& key) {
  for (const auto& [k, why] : m.derived)
    if (k == key) return why;
  return "";
}

struct Oracle {
  const char* scenario;  // under scenarios/
  const char* release;
  const char* args;  // the launcher's arguments, as NVIDIA's run would give them
};

// Every corpus scenario written from Megatron-Bridge's performance recipes at a tag moesim's
// table reads (v0.2.0-v0.5.1). The four 25.11 DeepSeek-V3 GB200/GB300 rows are not here:
// their published layouts come from an unreleased branch (see the next test case).
const std::vector<Oracle> kOracles{
    {"releases/r2511-dsv3-b200-mxfp8.json", "25.11", "-m deepseek -s v3 -g b200 -c fp8_mx -ng 256"},
    {"releases/r2511-qwen3-30b-b200-mxfp8.json", "25.11",
     "-m qwen3 -s 30b_a3b -g b200 -c fp8_mx -ng 8"},
    {"releases/r2511-qwen3-30b-gb200-mxfp8.json", "25.11",
     "-m qwen3 -s 30b_a3b -g gb200 -c fp8_mx -ng 8"},
    {"releases/r2511-qwen3-30b-gb300-mxfp8.json", "25.11",
     "-m qwen3 -s 30b_a3b -g gb300 -c fp8_mx -ng 8 -mb 4"},
    {"releases/r2511-qwen3-30b-h100-fp8cs.json", "25.11",
     "-m qwen3 -s 30b_a3b -g h100 -c fp8_cs -ng 16"},
    {"releases/r2602-qwen3-30b-b200-mxfp8.json", "26.02",
     "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8"},
    {"releases/r260201-qwen3-30b-b200-mxfp8.json", "26.02.01",
     "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 -cv v1"},
    {"measured/a1-dsv3-gb300-hybridep.json", "26.02",
     "-m deepseek -mr deepseek_v3 -g gb300 -c fp8_mx -ng 256"},
    {"measured/a2-dsv3-gb300-full-graph.json", "26.06",
     "-m deepseek -mr deepseek_v3 -g gb300 -c fp8_mx -ng 256"},
    {"measured/a3-dsv3-gb200-full-graph.json", "26.06",
     "-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256"},
    {"measured/a4-dsv3-gb200-hybridep.json", "26.02",
     "-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256"},
    {"measured/a5-dsv3-b200-pp16.json", "26.02",
     "-m deepseek -mr deepseek_v3 -g b200 -c fp8_mx -ng 256"},
    {"measured/a6-dsv3-b200-deepep.json", "26.04.01",
     "-m deepseek -mr deepseek_v3 -g b200 -c fp8_mx -ng 256"},
    {"measured/a7-qwen3-235b-gb300.json", "26.04",
     "-m qwen -mr qwen3_235b_a22b -g gb300 -c fp8_mx -ng 256"},
    {"measured/a8-qwen3-235b-gb200.json", "26.02",
     "-m qwen -mr qwen3_235b_a22b -g gb200 -c fp8_mx -ng 256"},
    {"measured/a9-qwen3-235b-b200-alltoall.json", "26.02",
     "-m qwen -mr qwen3_235b_a22b -g b200 -c fp8_mx -ng 256"},
    {"measured/a10-qwen3-235b-h100.json", "26.04",
     "-m qwen -mr qwen3_235b_a22b -g h100 -c fp8_cs -ng 256"},
    {"measured/a11-qwen3-30b-h100-deepep.json", "26.02",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c fp8_cs -ng 16"},
    {"measured/a12-qwen3-30b-h100-hybridep.json", "26.04",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c fp8_cs -ng 16"},
    {"measured/a13-qwen3-30b-gb300.json", "26.04",
     "-m qwen -mr qwen3_30b_a3b -g gb300 -c fp8_mx -ng 8"},
    {"measured/a15-kimi-k2-gb300-muon.json", "26.06",
     "-m kimi -mr kimi_k2 -g gb300 -c fp8_mx -ng 256"},
    {"measured/a14-qwen3-30b-h100-overlap-off.json", "26.06",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16"},
    {"measured/a14-qwen3-30b-h100-overlap-on.json", "26.06",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16 "
     "comm_overlap.overlap_moe_expert_parallel_comm=true"},
    {"overlap/bridge-qwen3-30b-h100-alltoall-nograph-overlap-off.json", "26.04",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16 --moe_flex_dispatcher_backend None "
     "--cuda_graph_impl none"},
    {"overlap/bridge-qwen3-30b-h100-alltoall-nograph-overlap-on.json", "26.04",
     "-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16 --moe_flex_dispatcher_backend None "
     "--cuda_graph_impl none "
     "comm_overlap.overlap_moe_expert_parallel_comm=true"},
    {"bridge-dense/bridge-llama405b-gb200-fp8cs-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb200 -c fp8_cs -ng 256"},
    {"bridge-dense/bridge-llama405b-gb200-mxfp8-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb200 -c fp8_mx -ng 256"},
    {"bridge-dense/bridge-llama405b-gb300-fp8cs-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb300 -c fp8_cs -ng 256"},
    {"bridge-dense/bridge-llama405b-gb300-mxfp8-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb300 -c fp8_mx -ng 256"},
    {"nvfp4/bridge-llama405b-gb200-nvfp4-2602.json", "26.02",
     "-m llama -mr llama31_405b -g gb200 -c nvfp4 -ng 256"},
    {"nvfp4/bridge-llama405b-gb200-nvfp4-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb200 -c nvfp4 -ng 256"},
    {"nvfp4/bridge-llama405b-gb300-nvfp4-2602.json", "26.02",
     "-m llama -mr llama31_405b -g gb300 -c nvfp4 -ng 256"},
    {"nvfp4/bridge-llama405b-gb300-nvfp4-2606.json", "26.06",
     "-m llama -mr llama31_405b -g gb300 -c nvfp4 -ng 256"},
    {"gpt-oss/bridge-gpt-oss-120b-gb300-bf16-2604.json", "26.04",
     "-m gpt_oss -mr gpt_oss_120b -g gb300 -c bf16 -ng 64"},
    {"gpt-oss/bridge-gpt-oss-120b-h100-bf16-2604.json", "26.04",
     "-m gpt_oss -mr gpt_oss_120b -g h100 -c bf16 -ng 64"},
    {"dsv4/card-dsv4-flash-gb200-mxfp8.json", "26.08",
     "-m deepseek -mr deepseek_v4_flash -g gb200 -c fp8_mx -ng 128"},
    {"dsv4/card-dsv4-flash-gb300-mxfp8.json", "26.08",
     "-m deepseek -mr deepseek_v4_flash -g gb300 -c fp8_mx -ng 128"},
    {"nemotron3/bridge-nemotron35-lightning-gb200-mxfp8-2608.json", "26.08",
     "-m nemotronh -mr nemotron_3_5_lightning -g gb200 -c fp8_mx -ng 8"},
    {"nemotron3/bridge-nemotron3-ultra-gb200-mxfp8-2608.json", "26.08",
     "-m nemotronh -mr nemotron_3_ultra -g gb200 -c fp8_mx -ng 256"},
    {"nemotron3/bridge-nemotron3-ultra-gb300-mxfp8-2608.json", "26.08",
     "-m nemotronh -mr nemotron_3_ultra -g gb300 -c fp8_mx -ng 256"},
};

}  // namespace

TEST_CASE("A Megatron-Bridge performance command imports as the corpus wrote its recipe",
          "[config][import][bridge]") {
  for (const auto& o : kOracles) {
    INFO(o.scenario << ": " << o.args << " at " << o.release);
    const auto m = bridge(o.args, o.release);
    const auto oracle = config::Json::parse(
        test::read_text(test::source_path(std::string("scenarios/") + o.scenario)));
    CHECK(m.scenario.at("system") == oracle.at("system"));
    CHECK(m.scenario.at("gpus") == oracle.at("gpus"));
    const auto got = described_json(m.scenario), want = described_json(oracle);
    if (got != want) {
      // The first setting that differs names the failure.
      for (const auto& [section, v] : want.items()) {
        INFO("section " << section);
        CHECK(got.at(section) == v);
      }
    }
    CHECK(got == want);
  }
}

TEST_CASE("A Bridge import says where each setting came from", "[config][import][bridge]") {
  const auto m = bridge("-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256", "26.02");
  CHECK(derived(m, "recipe")
            .find("DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2 at Megatron-Bridge v0.3.0") == 0);
  CHECK(derived(m, "system").find("gb200-nvl72") == 0);
  CHECK(derived(m, "training.seq_length").find("deepseek_llm_pretrain.py") != std::string::npos);
  CHECK(derived(m, "framework.dispatcher_sms").find("_set_common_perf_overrides") !=
        std::string::npos);
  CHECK(m.scenario.at("stack").at("release") == "26.02");
}

TEST_CASE("The launcher's order: Hydra overrides last at v0.2.x, first from v0.3.0",
          "[config][import][bridge]") {
  // v0.2.x run_script.py applies Hydra key=value after the flags; v0.3.0 on, the flags win.
  const char* args =
      "-m qwen3 -s 30b_a3b -g b200 -c fp8_mx -ng 8 -gb 1024 train.global_batch_size=256";
  CHECK(bridge(args, "25.11").scenario.at("training").at("global_batch_size") == 256);
  CHECK(
      bridge(
          "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 -gb 1024 train.global_batch_size=256",
          "26.02")
          .scenario.at("training")
          .at("global_batch_size") == 1024);
}

// Megatron-Bridge's perf recipes set comm_overlap.align_param_gather (Llama 3.1 on GB200: off);
// unset, the scenario's default (on for the interleaved schedule) is Bridge's own.
TEST_CASE("A Bridge command's align_param_gather reaches the framework",
          "[config][import][bridge]") {
  const char* base = "-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256";
  const auto given =
      bridge(std::string(base) + " comm_overlap.align_param_gather=false", "26.02").scenario;
  CHECK(given.at("framework").at("align_param_gather") == false);
  const auto unset = bridge(base, "26.02").scenario;
  CHECK_FALSE(unset.at("framework").contains("align_param_gather"));
}

TEST_CASE("The launcher scales the batch with -ng, and the flags move the layout as it does",
          "[config][import][bridge]") {
  // QWEN3_30B_A3B_PRETRAIN_CONFIG_B200_FP8_MX_V1 at v0.3.0: 8 GPUs, GBS 512; 32 GPUs without -gb:
  // 2048.
  auto m = bridge("-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 32", "26.02");
  CHECK(m.scenario.at("training").at("global_batch_size") == 2048);
  CHECK(derived(m, "training.global_batch_size").find("512 x 32 / 8") != std::string::npos);
  // -tp turns sequence parallelism on with it; the workload config's expert TP 1 stands.
  m = bridge("-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 16 -tp 2", "26.04");
  CHECK(m.scenario.at("parallelism").at("sequence_parallel") == true);
  CHECK(m.scenario.at("parallelism").at("etp") == 1);
  // Llama 3.1 405B's configs leave expert TP None: Megatron-Core makes it TP (dense: no experts).
  m = bridge("-m llama -mr llama31_405b -g gb200 -c fp8_cs -ng 256", "26.06");
  CHECK(m.scenario.at("parallelism").at("tp") == 4);
  // DeepSeek-V3 at v0.4.0: -pp/-vp run the recipe's layout function again (PP8 VP2 from its map).
  m = bridge("-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256 -pp 8 -vp 2 -ep 32", "26.04");
  CHECK(m.scenario.at("parallelism").at("pp_layout") == "Et*4|(t*4|)*14tmL");
  // Qwen3-235B counts the embedding and the loss in the split at whatever PP and VP: 96 units / 8.
  m = bridge("-m qwen -mr qwen3_235b_a22b -g gb200 -c fp8_mx -ng 256 -pp 8 -vp 1", "26.04");
  CHECK(m.scenario.at("parallelism").at("pp_layout") ==
        "Ettttttttttt|tttttttttttt|tttttttttttt|tttttttttttt|tttttttttttt|tttttttttttt|"
        "tttttttttttt|tttttttttttL");
}

TEST_CASE(
    "The dispatcher flag: None is NCCL's all-to-all, HybridEP chosen late keeps Megatron-Core's "
    "SMs",
    "[config][import][bridge]") {
  auto m =
      bridge("-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16 --moe_flex_dispatcher_backend None",
             "26.04");
  CHECK(m.scenario.at("framework").at("dispatcher") == "alltoall");
  // QWEN3_30B_A3B H100 BF16 at v0.4.0 has DeepEP; --moe_flex_dispatcher_backend hybridep comes
  // after the common overrides' 32 SMs, so Megatron-Core's 16 stand (transformer_config.py at
  // d7288711).
  m = bridge(
      "-m qwen -mr qwen3_30b_a3b -g h100 -c bf16 -ng 16 --moe_flex_dispatcher_backend hybridep",
      "26.04");
  CHECK(m.scenario.at("framework").at("dispatcher") == "hybridep");
  CHECK(m.scenario.at("framework").at("dispatcher_sms") == 16);
  // DeepEP does not run on GB200: apply_flex_dispatcher_backend skips it, and the import says so.
  m = bridge(
      "-m qwen -mr qwen3_30b_a3b -g gb200 -c fp8_mx -ng 8 --moe_flex_dispatcher_backend deepep",
      "26.04");
  CHECK(m.scenario.at("framework").at("dispatcher") == "hybridep");
  CHECK(derived(m, "framework.dispatcher").find("deepep not applied on gb200") !=
        std::string::npos);
}

TEST_CASE("A Bridge command's release comes from --release or its container",
          "[config][import][bridge]") {
  auto m =
      bridge("-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 -i nvcr.io/nvidia/nemo:26.02", "");
  CHECK(m.scenario.at("stack").at("release") == "26.02");
  CHECK(derived(m, "recipe").find("v0.3.0") != std::string::npos);
  CHECK(err("-m qwen -mr qwen3_30b_a3b -g b200 -ng 8", "").find("--release") == 0);
  CHECK(err("-m qwen -mr qwen3_30b_a3b -g b200 -ng 8 -i nvcr.io/nvidia/nemo:26.04", "26.02")
            .find("the command's container is 26.04") != std::string::npos);
  CHECK(err("-m qwen -mr qwen3_30b_a3b -g b200 -ng 8", "25.09")
            .find("no Megatron-Bridge performance launcher") != std::string::npos);
}

TEST_CASE(
    "Megatron-Bridge 26.08 (v0.6.0): the flat recipe of -ng GPUs, else the default one "
    "weak-scaled",
    "[config][import][bridge]") {
  // v0.6.0 src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py: the 8-GPU recipe (EP 8,
  // GBS 512, MBS 4) is the default; a 32-GPU one has GBS 2048. run_script.py
  // _prepare_perf_recipe takes the exact count first, else weak-scales the default's GBS by
  // DP (utils/overrides.py:691-705).
  const std::string q = "-m qwen -mr qwen3_30b_a3b -g gb200 -c bf16 -ng ";
  const auto exact = bridge(q + "32", "26.08");
  CHECK(derived(exact, "recipe").find("qwen3_30b_a3b_pretrain_32gpu_gb200_bf16_config") !=
        std::string::npos);
  CHECK(exact.scenario.at("training").at("global_batch_size") == 2048);
  const auto scaled = bridge(q + "16", "26.08");
  CHECK(derived(scaled, "recipe").find("weak-scaled") != std::string::npos);
  CHECK(scaled.scenario.at("training").at("global_batch_size") == 1024);
  CHECK(scaled.scenario.at("stack").at("release") == "26.08");
  // -gb stands: no weak scaling.
  CHECK(bridge(q + "16 -gb 256", "26.08").scenario.at("training").at("global_batch_size") == 256);
  // The HSDP recipe (deepseek/gb300/deepseek_v3.py:310-321, common.py:88-121): four
  // optimizer instances, the optimizer states split across them.
  const auto hsdp =
      bridge("-m deepseek -mr deepseek_v3 -g gb300 -c fp8_mx -ng 128 -cv hsdp", "26.08");
  CHECK(hsdp.scenario.at("parallelism").at("fsdp") == true);
  CHECK(hsdp.scenario.at("parallelism").at("optimizer_instances") == 4);
  CHECK(hsdp.scenario.at("parallelism").at("outer_dp_sharding") == "optim");
  // Llama 3.1 405B's GB200 function sets two instances under Megatron-FSDP up to v0.5.1
  // (llama31_llm_pretrain.py:119 at v0.5.0), the outer strategy Megatron-Core's default.
  const auto llama = bridge("-m llama -mr llama31_405b -g gb200 -c fp8_cs -ng 128 -cv v1", "26.06");
  CHECK(llama.scenario.at("parallelism").at("fsdp") == true);
  CHECK(llama.scenario.at("parallelism").at("optimizer_instances") == 2);
  CHECK_FALSE(llama.scenario.at("parallelism").contains("outer_dp_sharding"));
  // Megatron-FSDP keeps the precision-aware optimizer at v0.6.0, and the fine-grained
  // activation offloading of the 64-GPU GB300 FSDP recipe is framework.offload.
  const auto fsdp = bridge("-m deepseek -mr deepseek_v3 -g gb300 -c bf16 -ng 64 -cv fsdp", "26.08");
  CHECK(fsdp.scenario.at("parallelism").at("fsdp") == true);
  CHECK(fsdp.scenario.at("framework").at("offload") == nlohmann::json({"core_attn", "attn_proj"}));
}

TEST_CASE("v0.6.0's development variants import with the settings their own code sets",
          "[config][import][bridge]") {
  const auto fw = [](const importer::MegatronImport& r) { return r.scenario.at("framework"); };
  // src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py:709-762: _benchmark_common runs
  // before HybridEP is chosen, so the base recipe's 16 SMs stand (not the canonical 32); DDP
  // overlaps off; no CUDA graphs.
  const auto bf16 = bridge("-m qwen -mr qwen3_30b_a3b -g gb200 -c bf16 -ng 16 -cv dev", "26.08");
  CHECK(fw(bf16).at("dispatcher") == "hybridep");
  CHECK(fw(bf16).at("dispatcher_sms") == 16);
  CHECK(fw(bf16).at("overlap_grad_reduce") == false);
  CHECK(fw(bf16).at("overlap_param_gather") == false);
  CHECK(fw(bf16).at("cuda_graph_scope") == nlohmann::json::array());
  CHECK(bf16.scenario.at("parallelism").at("ep") == 16);
  // :765-824: external_cuda_graph True is Megatron-Core's cuda_graph_impl transformer_engine,
  // over the recipe's scope; fp8_param_gather False.
  const auto cg =
      bridge("-m qwen -mr qwen3_30b_a3b -g gb200 -c fp8_mx -ng 16 -cv partial_cg_dev", "26.08");
  CHECK(fw(cg).at("cuda_graph_scope") == nlohmann::json({"attn", "moe_router", "moe_preprocess"}));
  CHECK(fw(cg).at("fp8_param_gather") == false);
  // b200/qwen3_moe.py:661-720: DeepEP with 20 SMs, no TP overlap at TP 2, BF16 moments.
  const auto dep =
      bridge("-m qwen -mr qwen3_235b_a22b -g b200 -c fp8_mx -ng 128 -cv deepep_dev", "26.08");
  CHECK(dep.scenario.at("parallelism").at("tp") == 2);
  CHECK(fw(dep).at("tp_comm_overlap") == false);
  CHECK(fw(dep).at("dispatcher") == "deepep");
  CHECK(fw(dep).at("dispatcher_sms") == 20);
  CHECK(fw(dep).at("optimizer_state_dtype") == "bf16");
  // h100/qwen3_moe.py:477-539: no optimizer-step overlap (the canonical recipe has it).
  const auto h100 =
      bridge("-m qwen -mr qwen3_235b_a22b -g h100 -c bf16 -ng 256 -cv hybridep_dev", "26.08");
  CHECK(fw(h100).at("overlap_param_gather_with_optimizer_step") == false);
  CHECK(fw(h100).at("dispatcher_sms") == 16);
  // deepseek/gb200/deepseek_v3.py:259-325 gives PP 4 x VP 2 a 16-stage layout: Megatron-Core's
  // TransformerConfig asserts on the conflict (transformer_config.py:1971-1981), and so does
  // moesim.
  CHECK(err("-m deepseek -mr deepseek_v3 -g gb200 -c fp8_mx -ng 256 -cv partial_cg_dev", "26.08")
            .find("pp_layout has 16 virtual stages") != std::string::npos);
}

TEST_CASE("Megatron-Bridge's training launcher: train.sh --recipe builds the named recipe",
          "[config][import][bridge]") {
  // scripts/training/train.sh -> setup_experiment.py (world = nodes x GPUs per node) ->
  // run_recipe.py (v0.6.0): the recipe function as the performance table holds it, the
  // common overrides before the trailing Hydra ones, weak scaling unless the GBS is given.
  const auto train = [](const std::string& args) {
    importer::MegatronImportOptions o;
    return importer::import_megatron(
        "bash scripts/training/train.sh --recipe qwen3_30b_a3b_pretrain_32gpu_gb200_bf16_config "
        "--container-image nvcr.io/nvidia/nemo:26.08 --account a --partition p " +
            args,
        o);
  };
  const auto same = train("--nodes 8 --gpus-per-node 4");
  CHECK(same.scenario.at("stack").at("release") == "26.08");
  CHECK(same.scenario.at("gpus") == 32);
  CHECK(same.scenario.at("training").at("global_batch_size") == 2048);
  // The same recipe through the performance launcher at its own count: the same scenario.
  const auto perf = bridge("-m qwen -mr qwen3_30b_a3b -g gb200 -c bf16 -ng 32", "26.08");
  for (const char* k : {"parallelism", "training", "framework", "stack", "model", "system"})
    CHECK(same.scenario.at(k) == perf.scenario.at(k));
  // Half the GPUs: the GBS weak-scaled by DP; given, it stands; a trailing override wins.
  CHECK(train("--nodes 4 --gpus-per-node 4").scenario.at("training").at("global_batch_size") ==
        1024);
  CHECK(train("--nodes 4 --gpus-per-node 4 -gb 512")
            .scenario.at("training")
            .at("global_batch_size") == 512);
  CHECK(train("--nodes 4 --gpus-per-node 4 -gb 512 train.global_batch_size=256")
            .scenario.at("training")
            .at("global_batch_size") == 256);
  const auto why = [&](const std::string& args) {
    try {
      train(args);
    } catch (const config::InputError& e) {
      return e.path() + ": " + e.message();
    }
    return std::string("imported");
  };
  // A pretraining recipe under another mode is refused as run_recipe.py refuses it.
  CHECK(why("--mode sft").find("incompatible with recipe") != std::string::npos);
  CHECK(why("--dataset squad").find("refuses a dataset preset") != std::string::npos);
  CHECK(why("--frobnicate 1").find("--frobnicate: not a flag") == 0);
  CHECK(why("--nodes 4").find("--gpus-per-node") != std::string::npos);
}

TEST_CASE("import refuses a Bridge command it cannot model, naming what",
          "[config][import][bridge]") {
  const std::string q = "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 ";
  // Every unknown flag at once, named with the tag's parser.
  const auto unknown = err(q + "--frobnicate 3 --tensor_parallel 2");
  CHECK(unknown.find("--frobnicate 3, --tensor_parallel 2") != std::string::npos);
  CHECK(unknown.find("argument_parser.py @ 0fbfe7d3e9") != std::string::npos);
  CHECK(err(q + "-tp two").find("'two' is not an integer") != std::string::npos);
  CHECK(err(q + "--moe_flex_dispatcher_backend nccl").find("not one of") != std::string::npos);
  // Hydra paths moesim does not map.
  CHECK(err(q + "model.frobnicate=1 model.foo=2").find("model.frobnicate, model.foo") !=
        std::string::npos);
  CHECK(err(q + "train.micro_batch_size=two").find("expected a whole number") != std::string::npos);
  // -sl changes the mock dataset only: Bridge's own check would stop the run.
  CHECK(err(q + "-sl 8192").find("model.seq_length=8192") != std::string::npos);
  CHECK(bridge(q + "model.seq_length=8192", "26.04").scenario.at("training").at("seq_length") ==
        8192);
  // A recipe whose family's settings are not tabulated resolves, and is refused by name.
  const auto glm = err("-m glm_moe_dsa -mr glm51 -g gb200 -c bf16 -ng 192 --task sft", "26.08");
  CHECK(glm.find("GLM51_SFT_CONFIG_GB200_BF16") != std::string::npos);
  CHECK(glm.find("not tabulated") != std::string::npos);
  // The Kimi family's code reads --optimizer_type; only its Muon path is tabulated.
  CHECK(err("-m kimi -mr kimi_k2 -g gb300 -c fp8_mx -ng 256 --optimizer_type adam")
            .find("adam: the Kimi family code switches to distributed Adam") != std::string::npos);
  CHECK(err(q + "--task lora --pretrained_checkpoint /c").find("QWEN3_30B_A3B_LORA") !=
        std::string::npos);
  CHECK(err(q + "--activation_offload_layers 4").find("offloading") != std::string::npos);
  // -g r100: the announced Rubin GPU alone in a node (Bridge's bring-up target).
  const auto r100 = bridge("-m llama -mr llama3_8b -g r100 -c bf16 -ng 8", "26.08").scenario;
  CHECK(r100.at("system") == "r100");
  CHECK(r100.at("gpus") == 8);
  // Full recompute of 2 of a stage's layers: the block method, the rest kept.
  const auto partial = bridge(q + "-rl 2", "26.04").scenario.at("framework");
  CHECK(partial.at("recompute_modules") == config::Json::array({"full"}));
  CHECK(partial.at("recompute_num_layers") == 2);
  CHECK(err(q + "--num_layers 8").find("model's shape") != std::string::npos);
  // v0.2.0 keeps the recipe's layout when -pp/-vp change it (no re-layout before v0.3.0): the
  // 25.11 row's PP8 VP4 cannot load with the PP4 VP4 layout, as Megatron would stop.
  const auto stale =
      err("-m deepseek -s v3 -g gb200 -c fp8_mx -ng 256 -pp 8 -vp 4 -ep 32 -gb 4096 "
          "model.mtp_num_layers=0",
          "25.11");
  CHECK(stale.find("pp_layout") != std::string::npos);
  CHECK(stale.find("deepseek_v3.py:233-250") != std::string::npos);
  CHECK(stale.find("kept when the sizes changed") != std::string::npos);
}

TEST_CASE("A Bridge command's job flags are listed, not refused", "[config][import][bridge]") {
  const auto m = bridge(
      "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 -a acct -p batch -t 01:00:00 --wandb_key "
      "k -en "
      "--max_steps 20 logger.log_interval=5 --enable_vboost true",
      "26.04");
  std::string ignored;
  for (const auto& i : m.ignored) ignored += i + "\n";
  CHECK(ignored.find("-a (Slurm account)") != std::string::npos);
  CHECK(ignored.find("-en (profiling") != std::string::npos);
  CHECK(ignored.find("logger.log_interval=5 (logging)") != std::string::npos);
  bool vboost = false;
  for (const auto& [k, why] : m.assumed)
    vboost = vboost || (k == "--enable_vboost" && why.find("clock") != std::string::npos);
  CHECK(vboost);
}

TEST_CASE("A launch script around the Bridge launcher is evaluated as bash would",
          "[config][import][bridge]") {
  const std::string script =
      "#!/bin/bash\nMODEL=${MODEL:-qwen3_30b_a3b}\nGPUS=16\n"
      "python3 scripts/performance/setup_experiment.py -m qwen -mr $MODEL -g h100 -c bf16 -ng "
      "$GPUS \\\n"
      "  -i nvcr.io/nvidia/nemo:26.04 --moe_a2a_overlap true\n";
  importer::MegatronImportOptions o;
  o.source = "run.sh";
  const auto m = importer::import_megatron(script, o);
  CHECK(m.scenario.at("gpus") == 16);
  CHECK(m.scenario.at("framework").at("moe_a2a_overlap") == true);
  CHECK(m.scenario.at("framework").at("delay_wgrad_compute") == true);
}

TEST_CASE("Every flag of every tag's launcher is modeled, listed or refused",
          "[config][import][bridge]") {
  for (const auto& tag : importer::bridge_recipe_tags()) {
    INFO(tag);
    CHECK(importer::unclassified_bridge_flags(tag).empty());
  }
}

TEST_CASE("Bridge commands: sizes, lists and paths Bridge itself would stop on",
          "[config][import][bridge]") {
  const std::string q = "-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 16 ";
  CHECK(err(q + "-tp 0").find("-tp: 0: a parallel size is at least 1") == 0);
  CHECK(err(q + "model.pipeline_model_parallel_size=0").find("at least 1") != std::string::npos);
  CHECK(err(q + "model.recompute_modules=[moe_act,]").find("an empty element") !=
        std::string::npos);
  // Paths Bridge sets again at setup name the one that sticks.
  CHECK(err(q + "ddp.grad_reduce_in_fp32=true").find("give mixed_precision.grad_reduce_in_fp32") !=
        std::string::npos);
  CHECK(err(q + "ddp.overlap_param_gather=false").find("give comm_overlap.overlap_param_gather") !=
        std::string::npos);
  // RoPE fusion off is the unfused path moesim prices.
  CHECK(bridge(q + "model.apply_rope_fusion=false", "26.04")
            .scenario.at("framework")
            .at("rope_fusion") == false);
  CHECK(err(q + "model.apply_rope_fusion=maybe").find("true or false") != std::string::npos);
  // Hydra TP without sequence parallelism: Megatron-Core refuses MoE that way, and so does the
  // import.
  CHECK(err(q + "model.tensor_model_parallel_size=2").find("sequence parallelism") !=
        std::string::npos);
  auto m = bridge(q + "model.tensor_model_parallel_size=2 model.sequence_parallel=true "
                      "model.expert_tensor_parallel_size=null",
                  "26.04");
  CHECK(m.scenario.at("parallelism").at("etp") == 2);  // None is the final TP
  // v0.2.x keeps the dataset's length: the model's alone would fail Bridge's config check.
  CHECK(err("-m qwen3 -s 30b_a3b -g b200 -c fp8_mx -ng 8 model.seq_length=8192", "25.11")
            .find("dataset.sequence_length alike") != std::string::npos);
  CHECK(bridge("-m qwen3 -s 30b_a3b -g b200 -c fp8_mx -ng 8 model.seq_length=8192 "
               "dataset.sequence_length=8192",
               "25.11")
            .scenario.at("training")
            .at("seq_length") == 8192);
  // --use_tokendrop asserts the all-to-all dispatcher.
  CHECK(err(q + "--use_tokendrop true").find("model.moe_token_dispatcher_type=alltoall") !=
        std::string::npos);
  CHECK(err(q + "--moe_flex_dispatcher_backend None --use_tokendrop true").find("before") !=
        std::string::npos);
  m = bridge(q + "model.moe_token_dispatcher_type=alltoall --use_tokendrop true", "26.04");
  CHECK(m.scenario.at("training").at("token_drop").at("capacity_factor") == 1.0);
}

TEST_CASE("v0.2.0's recompute modules act only where the recipe recomputes selectively",
          "[config][import][bridge]") {
  // GPT_OSS_120B_H100_BF16_BASE_CONFIG asks for layernorm and moe_act; the v0.2.0 launcher sets the
  // modules without the granularity and the GPT-OSS recipe has none: nothing is recomputed.
  auto m = bridge("-m gpt_oss -s 120b -g h100 -c bf16 -ng 64", "25.11");
  CHECK(m.scenario.at("framework").at("recompute_modules").empty());
  CHECK(derived(m, "framework.recompute_modules").find("not selective") != std::string::npos);
  // DeepSeek-V3's family sets selective granularity: its table's modules act.
  m = bridge("-m deepseek -s v3 -g b200 -c fp8_mx -ng 256", "25.11");
  CHECK(!m.scenario.at("framework").at("recompute_modules").empty());
  // The flag goes through the same function as the table: at v0.2.0 it is as inert there.
  m = bridge("-m gpt_oss -s 120b -g h100 -c bf16 -ng 64 --recompute_modules mlp", "25.11");
  CHECK(m.scenario.at("framework").at("recompute_modules").empty());
  // The optimizer's own main-gradient dtype is not modeled: refused, not taken silently.
  CHECK(err("-m qwen -mr qwen3_30b_a3b -g b200 -c fp8_mx -ng 8 "
            "optimizer.main_grads_dtype=torch.float32")
            .find("grad_reduce_in_fp32") != std::string::npos);
  // --deterministic (v0.5.0) turns the fused loss and TP overlap off.
  m = bridge("-m llama -mr llama31_405b -g gb200 -c fp8_cs -ng 256 --deterministic", "26.06");
  CHECK(m.scenario.at("framework").at("cross_entropy") == "unfused");
  CHECK(m.scenario.at("framework").at("tp_comm_overlap") == false);
}

TEST_CASE("A Bridge import takes --gpus-per-nvlink-domain and checks --model against the recipe",
          "[config][import][bridge]") {
  importer::MegatronImportOptions o;
  o.release = "26.04";
  o.gpus_per_nvlink_domain = 32;
  const std::string cmd =
      "python setup_experiment.py -m qwen -mr qwen3_30b_a3b -g gb200 -c fp8_mx -ng 64";
  const auto m = importer::import_megatron(cmd, o);
  CHECK(m.scenario.at("placement").at("gpus_per_nvlink_domain") == 32);
  o.model = "qwen3-235b-a22b";
  CHECK_THROWS_WITH(importer::import_megatron(cmd, o), Catch::Contains("would contradict it"));
  o.model = "qwen3-30b-a3b";
  CHECK_NOTHROW(importer::import_megatron(cmd, o));
}

// Nemotron 3 Nano (family nemotronh, issue #48 item 1): its recipe imports at 26.08 as the
// verification card ran it (scenarios/nemotron3/card-nemotron3-nano-gb300-mxfp8.json), the
// Mamba mixers' graph scope kept, HybridEP on the recipe's 16 SMs, router fusion off.
TEST_CASE("import: Nemotron 3 Nano's Bridge recipe as the card ran it",
          "[config][import][bridge]") {
  const auto r = bridge("-m nemotronh -mr nemotron_3_nano -g gb300 -c fp8_mx -ng 8", "26.08");
  const auto& s = r.scenario;
  CHECK(s.at("model") == "nemotron-3-nano");
  CHECK(s.at("training").at("seq_length") == 8192);
  CHECK(s.at("training").at("micro_batch_size") == 4);
  CHECK(s.at("parallelism").at("ep") == 8);
  CHECK(s.at("framework").at("cuda_graph_scope") ==
        config::Json::array({"attn", "mamba", "moe_router", "moe_preprocess"}));
  CHECK(s.at("framework").at("dispatcher") == "hybridep");
  CHECK(s.at("framework").at("dispatcher_sms") == 16);
  CHECK(s.at("stack").at("router_fusion") == false);
  CHECK(s.at("routing").at("balance") == "forced");
  // The H100 row's only graph scope is the Mamba mixers'.
  const auto h = bridge("-m nemotronh -mr nemotron_3_nano -g h100 -c fp8_cs -ng 16", "26.06");
  CHECK(h.scenario.at("framework").at("cuda_graph_scope") == config::Json::array({"mamba"}));
}

TEST_CASE("import: DeepSeek-V4-Pro's Bridge recipe at 26.08", "[config][import][bridge]") {
  // v0.6.0 src/megatron/bridge/perf_recipes/deepseek/gb300/deepseek_v4.py:53-133.
  const auto r = bridge("-m deepseek -mr deepseek_v4_pro -g gb300 -c fp8_mx -ng 256", "26.08");
  const auto& s = r.scenario;
  CHECK(s.at("model") == "deepseek-v4-pro");
  CHECK(s.at("parallelism").at("pp") == 4);
  CHECK(s.at("parallelism").at("vpp") == 4);
  CHECK(s.at("parallelism").at("pp_layout") == "Et*4|(tttt|)*14tmL");
  CHECK(s.at("framework").at("recompute_modules") == config::Json::array({"mla_up_proj", "mhc"}));
  CHECK(s.at("framework").at("offload") == config::Json::array({"core_attn", "attn_proj"}));
  CHECK(s.at("framework").at("moe_paged_stash") == true);
  CHECK(s.at("stack").at("router_fusion") == false);
  // v0.5.1's Pro path is not tabulated: refused with the reason.
  CHECK_THROWS_WITH(
      bridge("-m deepseek -mr deepseek_v4_pro -g gb300 -c fp8_mx -ng 256", "26.06.01"),
      Catch::Contains("not tabulated"));
}

TEST_CASE("Megatron-Bridge's full-parameter SFT on mock data imports as pretraining-shaped work",
          "[config][import][bridge][sft]") {
  // docs/research/finetune/sft-import-plan.md: the 70B SFT functions run 4096-token sequences,
  // the distributed optimizer with BF16 gradients, and (after the table) a CommOverlapConfig
  // that overlaps DP at DP > 1 with 128 MiB buckets.
  const std::string q = "-m llama -mr llama3_70b -g gb200 -c fp8_cs -ng 32 --task sft";
  const auto sft = bridge(q, "26.06");
  const auto& sc = sft.scenario;
  CHECK(sc.at("name") == "bridge-llama3_70b-sft-gb200-fp8_cs-26.06");
  CHECK(sc.at("training").at("seq_length") == 4096);
  CHECK(sc.at("training").at("global_batch_size") == 32);
  CHECK(sc.at("parallelism").at("pp") == 8);
  CHECK(sc.at("framework").at("distributed_optimizer") == true);
  CHECK(sc.at("framework").at("overlap_grad_reduce") == true);
  CHECK(sc.at("framework").at("ddp_bucket_size") == 134217728);
  bool said = false;
  for (const auto& [what, why] : sft.derived)
    if (what == "task") said = why.find("full-parameter") != std::string::npos;
  CHECK(said);
  // 8B SFT: 16384 tokens on GB200, no CommOverlapConfig, so no DP overlap at DP 8.
  const auto small = bridge("-m llama -mr llama3_8b -g gb200 -c bf16 -ng 8 --task sft", "26.06");
  CHECK(small.scenario.at("training").at("seq_length") == 16384);
  CHECK(small.scenario.at("framework").at("overlap_grad_reduce") == false);
  // The pretraining config of the same model differs: the task selects the workload config.
  CHECK(bridge("-m llama -mr llama3_70b -g gb200 -c fp8_cs -ng 64", "26.06")
            .scenario.at("training")
            .at("seq_length") == 8192);
  // What is not modeled is refused with its reason.
  CHECK(err(q + " --data squad_packed", "26.06").find("sub-sequences' squares") !=
        std::string::npos);
  CHECK(err(q + " --data squad", "26.06").find("its own shape") != std::string::npos);
  CHECK(err("-m llama3 -s 70b -g gb200 -c bf16 -ng 32 --task sft", "25.11").find("SQuAD") !=
        std::string::npos);
  // The training launcher: an SFT recipe by name (mock data by default), LoRA refused.
  importer::MegatronImportOptions o;
  const auto train = importer::import_megatron(
      "bash scripts/training/train.sh --recipe llama3_70b_sft_32gpu_gb200_fp8cs_config "
      "--container-image nvcr.io/nvidia/nemo:26.08",
      o);
  CHECK(train.scenario.at("name") == "bridge-llama3_70b-sft-gb200-fp8_cs-26.08");
}

TEST_CASE("Megatron-Bridge's LoRA on mock data imports with its adapters on a frozen base",
          "[config][import][bridge][lora]") {
  // docs/research/finetune/lora-inventory.md: Llama3 70B, 8 GPUs, rank 16 on linear_qkv, the
  // unfused loss, GB200 BF16 at 2048 tokens and every other config at 4096.
  const std::string q = "-m llama -mr llama3_70b -ng 8 --task lora --pretrained_checkpoint /c ";
  const auto fp8 = bridge(q + "-g gb200 -c fp8_cs", "26.06").scenario;
  CHECK(fp8.at("name") == "bridge-llama3_70b-lora-gb200-fp8_cs-26.06");
  CHECK(fp8.at("training").at("lora") ==
        nlohmann::json::parse(R"({"rank": 16, "targets": ["linear_qkv"]})"));
  CHECK(fp8.at("training").at("seq_length") == 4096);
  CHECK(fp8.at("framework").at("cross_entropy") == "unfused");
  CHECK(fp8.at("framework").at("distributed_optimizer") == true);
  CHECK(bridge(q + "-g gb200 -c bf16", "26.06").scenario.at("training").at("seq_length") == 2048);
  // H100 BF16: full recompute of 1 layer per virtual stage of 1 (PP4 VP20): every layer.
  CHECK(bridge(q + "-g h100 -c bf16", "26.06").scenario.at("framework").at("recompute_modules") ==
        nlohmann::json::array({"full"}));
  // 26.08 names the task peft.
  CHECK(bridge("-m llama -mr llama3_70b -ng 8 --task peft --pretrained_checkpoint /c -g gb300 "
               "-c fp8_mx",
               "26.08")
            .scenario.at("training")
            .contains("lora"));
  // Bridge's PEFT setup stops without the base checkpoint.
  CHECK(err("-m llama -mr llama3_70b -g gb200 -c fp8_cs -ng 8 --task lora", "26.06")
            .find("--pretrained_checkpoint") != std::string::npos);
}

TEST_CASE("Megatron-Bridge's VL recipes import text-only, as the default llm domain runs them",
          "[config][import][bridge][qwen_vl]") {
  // --domain llm (the default) swaps in the text mock dataset and gpt_step: the language
  // model at 4096 tokens, the vision tower idle (docs/research/vl/bridge-vl-recipes.md 2.1).
  const auto q35 = bridge("-m qwen_vl -mr qwen35_vl_35b_a3b -g gb300 -c bf16 -ng 8", "26.06");
  const auto& sc = q35.scenario;
  CHECK(sc.at("model") == "qwen3.5-35b-a3b");
  CHECK(sc.at("training").at("seq_length") == 4096);
  CHECK(sc.at("training").at("mtp_layers") == 1);
  CHECK(sc.at("framework").at("cuda_graph_scope") == nlohmann::json::array());
  // The family turns RoPE fusion off (perf_recipes/qwen_vl/common.py:78 at v0.6.0); its
  // attention asserts it off, so the Hydra override that turns it on is refused.
  CHECK(sc.at("framework").at("rope_fusion") == false);
  CHECK(err("-m qwen_vl -mr qwen35_vl_35b_a3b -g gb300 -c bf16 -ng 8 model.apply_rope_fusion=true",
            "26.06")
            .find("asserts RoPE fusion off") != std::string::npos);
  // Qwen3-VL at v0.3.x trains its language model (the Qwen3 MoE preset); RoPE fusion is on,
  // but Megatron-Core applies mRoPE unfused above micro-batch 1 (GB300's is 8).
  const auto q3 = bridge("-m qwen_vl -mr qwen3_vl_30b_a3b -g gb300 -c bf16 -ng 8", "26.02");
  CHECK(q3.scenario.at("model") == "qwen3-30b-a3b");
  CHECK(q3.scenario.at("training").at("micro_batch_size") == 8);
  CHECK(q3.scenario.at("framework").at("rope_fusion") == false);
  CHECK_FALSE(bridge("-m qwen_vl -mr qwen3_vl_30b_a3b -g gb300 -c bf16 -ng 8 -mb 1", "26.02")
                  .scenario.at("framework")
                  .contains("rope_fusion"));
  // From v0.4.2 its recipes freeze the language model and the vision tower: text-only,
  // nothing on the loss path trains.
  CHECK(err("-m qwen_vl -mr qwen3_vl_30b_a3b -g gb300 -c bf16 -ng 8", "26.06").find("frozen") !=
        std::string::npos);
  // The image path is not modeled; 60 layers do not split over PP 8 (Megatron-Core asserts).
  CHECK(err("-m qwen_vl -mr qwen35_vl_35b_a3b -g gb300 -c bf16 -ng 8 --domain vlm", "26.06")
            .find("vision tower") != std::string::npos);
  CHECK(err("-m qwen_vl -mr qwen35_vl_397b_a17b -g gb200 -c bf16 -ng 64", "26.06")
            .find("60 decoder layers") != std::string::npos);
}

// DeepSeek-V3's provider keeps moe_shared_expert_overlap True (deepseek_provider.py:78 at
// v0.2.0) unless apply_flex_dispatcher_backend or the 1F1B overlap's overrides clear it
// (flex_dispatcher_backend.py:68, scripts/performance/utils/helpers.py:182-186); an override
// of it stands.
TEST_CASE("DeepSeek-V3's shared-expert overlap stays on while the all-to-all does",
          "[config][import][bridge]") {
  const std::string b200 = "-m deepseek -s v3 -g b200 -c fp8_mx -ng 256";
  const auto shared = [](const importer::MegatronImport& m) {
    return m.scenario.at("framework").value("moe_shared_expert_overlap", false);
  };
  auto m = bridge(b200, "25.11");
  REQUIRE(m.scenario.at("framework").at("dispatcher") == "alltoall");
  CHECK(shared(m));
  CHECK_FALSE(shared(bridge(b200 + " model.moe_shared_expert_overlap=false", "25.11")));
  m = bridge("-m deepseek -s v3 -g gb200 -c fp8_mx -ng 256", "25.11");
  CHECK(m.scenario.at("framework").at("dispatcher") == "hybridep");
  CHECK_FALSE(shared(m));
}
