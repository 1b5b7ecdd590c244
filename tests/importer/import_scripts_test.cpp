// Every Megatron-MoE-ModelZoo best-practice run and every Megatron-LM example training
// script (copies with their commits: tests/data/megatron/{modelzoo,lm-examples}/SOURCE.md)
// either imports, with the layout its script states, or is refused for a reason named
// here (issue #27 item 1).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "importer/import.hpp"
#include "importer/launch_wrapper.hpp"
#include "support/helpers.hpp"

namespace moesim {
namespace {

struct Expected {
  std::int64_t gpus, tp, pp, vpp, ep, cp;
  const char* precision;
  const char* dispatcher;  // nullptr: a dense model
  std::optional<std::int64_t> nvlink_domain = std::nullopt;
};

struct ScriptCase {
  std::string script;  // under tests/data/megatron/
  std::int64_t run;    // 0: the script starts one
  const char* system;
  std::map<std::string, std::string> env;
  std::int64_t gpus = 0;          // --gpus; 0: the script's
  const char* refused = nullptr;  // the reason's words; nullptr: imports
  std::optional<Expected> expected = std::nullopt;
};

importer::MegatronImport import_case(const ScriptCase& c) {
  importer::MegatronImportOptions o;
  o.system = c.system;
  o.gpus = c.gpus;
  o.source = test::source_path("tests/data/megatron/" + c.script);
  o.environment = c.env;
  if (c.run > 0) o.run = c.run;
  return importer::import_megatron(test::read_text(o.source), o);
}

void check_case(const ScriptCase& c) {
  INFO(c.script << " run " << c.run << " on " << c.system);
  if (c.refused) {
    try {
      import_case(c);
      FAIL("imported; expected a refusal: " << c.refused);
    } catch (const config::InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(c.refused));
    }
    return;
  }
  const auto imp = import_case(c);
  REQUIRE(c.expected);
  const Expected& x = *c.expected;
  const auto& sc = imp.scenario;
  CHECK(sc["gpus"] == x.gpus);
  CHECK(sc["parallelism"]["tp"] == x.tp);
  CHECK(sc["parallelism"]["pp"] == x.pp);
  CHECK(sc["parallelism"]["vpp"] == x.vpp);
  CHECK(sc["parallelism"]["ep"] == x.ep);
  CHECK(sc["parallelism"]["cp"] == x.cp);
  CHECK(sc["training"]["precision"] == x.precision);
  if (x.dispatcher) CHECK(sc["framework"]["dispatcher"] == x.dispatcher);
  if (x.nvlink_domain)
    CHECK(sc["placement"]["gpus_per_nvlink_domain"] == *x.nvlink_domain);
  else
    CHECK(!sc.contains("placement"));
}

constexpr const char* kZoo = "modelzoo/best_practice/";

}  // namespace

TEST_CASE("import megatron: every ModelZoo best-practice run", "[config][import][scripts]") {
  // The wrapper's table, YAMLs and flags (importer/launch_wrapper.cpp); the expected layouts
  // are the variables each call sets over the table's row (runtime.conf), read by hand.
  // GB200 NVL72 runs: 4 GPUs a node (GB200_CLUSTER=1), SEGMENT nodes in one NVLink domain.
  const std::string dsv3 = std::string(kZoo) + "deepseek-v3/";
  const std::string qwen = std::string(kZoo) + "qwen3/";
  const std::map<std::string, std::string> gb{{"GB200_CLUSTER", "1"}};
  const std::vector<ScriptCase> cases{
      {dsv3 + "run_deepseek_v3_b200.sh",
       0,
       "b200",
       {},
       0,
       nullptr,
       Expected{256, 1, 8, 2, 32, 1, "mxfp8", "deepep"}},
      {dsv3 + "run_deepseek_v3_gb200.sh",
       0,
       "gb200-nvl72",
       {},
       0,
       nullptr,
       Expected{256, 1, 4, 4, 64, 1, "mxfp8", "hybridep", 64}},
      {dsv3 + "run_deepseek_v3_gb300.sh",
       0,
       "gb300-nvl72",
       {},
       0,
       nullptr,
       Expected{128, 1, 4, 4, 32, 1, "mxfp8", "hybridep", 32}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       1,
       "h100",
       {},
       0,
       nullptr,
       Expected{1024, 2, 8, 4, 64, 1, "fp8-blockwise", "deepep"}},
      // "B200 config with 256 GPUs" in the H100 script: MXFP8, which Hopper has not.
      {dsv3 + "run_deepseek_v3_h100.sh", 2, "h100", {}, 0, "mxfp8 needs mxfp8 Tensor Core support"},
      {dsv3 + "run_deepseek_v3_h100.sh",
       2,
       "b200",
       {},
       0,
       nullptr,
       Expected{256, 1, 8, 4, 32, 1, "mxfp8", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       3,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 1, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       4,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 4, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       5,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 8, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       6,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 16, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       7,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 32, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {dsv3 + "run_deepseek_v3_h100.sh",
       8,
       "h100",
       {},
       0,
       nullptr,
       Expected{512, 64, 8, 4, 32, 1, "fp8-blockwise", "deepep"}},
      {std::string(kZoo) + "kimi-k2/run_kimi_k2_gb200_128k_G128.sh",
       0,
       "gb200-nvl72",
       {},
       0,
       nullptr,
       Expected{128, 16, 2, 16, 64, 1, "mxfp8", "hybridep", 64}},
      {std::string(kZoo) + "mixtral/run_mixtral_8x22B.sh",
       1,
       "h100",
       {},
       0,
       nullptr,
       Expected{128, 2, 8, 7, 8, 1, "bf16", "alltoall"}},
      {std::string(kZoo) + "mixtral/run_mixtral_8x22B.sh",
       2,
       "h100",
       {},
       0,
       nullptr,
       Expected{128, 2, 8, 7, 8, 1, "bf16", "alltoall"}},
      {std::string(kZoo) + "mixtral/run_mixtral_8x22B.sh",
       3,
       "h100",
       {},
       0,
       nullptr,
       Expected{128, 2, 8, 7, 8, 1, "fp8-blockwise", "alltoall"}},
      // run_235b.sh: H100, B200, GB200 EP32, GB200 EP64, then four H100 long-context runs.
      {qwen + "run_235b.sh",
       1,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 2, 8, 4, 32, 1, "bf16", "deepep"}},
      {qwen + "run_235b.sh",
       2,
       "b200",
       {},
       0,
       nullptr,
       Expected{128, 1, 4, 24, 16, 1, "bf16", "deepep"}},
      {qwen + "run_235b.sh", 3, "gb200-nvl72", gb, 0, nullptr,
       Expected{128, 1, 4, 12, 32, 1, "bf16", "deepep"}},
      {qwen + "run_235b.sh", 4, "gb200-nvl72", gb, 0, nullptr,
       Expected{128, 1, 2, 24, 64, 1, "bf16", "deepep"}},
      {qwen + "run_235b.sh",
       5,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 4, 8, 4, 8, 1, "bf16", "deepep"}},
      {qwen + "run_235b.sh",
       6,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 4, 8, 4, 8, 2, "bf16", "deepep"}},
      {qwen + "run_235b.sh",
       7,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 4, 8, 4, 8, 4, "bf16", "deepep"}},
      {qwen + "run_235b.sh",
       8,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 4, 8, 4, 8, 8, "bf16", "deepep"}},
      {qwen + "run_30b.sh",
       1,
       "h100",
       {},
       0,
       nullptr,
       Expected{32, 1, 1, 1, 8, 1, "bf16", "deepep"}},
      {qwen + "run_30b.sh",
       2,
       "h100",
       {},
       0,
       nullptr,
       Expected{32, 1, 1, 1, 8, 1, "bf16", "deepep"}},
      {qwen + "run_30b.sh",
       3,
       "b200",
       {},
       0,
       nullptr,
       Expected{8, 1, 1, 1, 8, 1, "bf16", "deepep"}},
      {qwen + "run_gb200_235b.sh",
       1,
       "gb200-nvl72",
       {},
       0,
       nullptr,
       Expected{256, 1, 8, 1, 8, 1, "bf16", "hybridep", 8}},
      {qwen + "run_gb200_235b.sh",
       2,
       "gb200-nvl72",
       {},
       0,
       nullptr,
       Expected{256, 1, 4, 6, 64, 1, "mxfp8", "hybridep", 64}},
      {qwen + "run_gb200_235b.sh",
       3,
       "gb200-nvl72",
       {},
       0,
       nullptr,
       Expected{128, 4, 4, 12, 32, 4, "mxfp8", "hybridep", 32}},
      {qwen + "run_gb300_235b.sh",
       0,
       "gb300-nvl72",
       {},
       0,
       nullptr,
       Expected{64, 1, 1, 1, 64, 1, "mxfp8", "hybridep", 64}},
      {qwen + "run_h100_235b.sh",
       0,
       "h100",
       {},
       0,
       nullptr,
       Expected{256, 2, 8, 4, 32, 1, "bf16", "deepep"}},
      // Qwen3-Next: Gated DeltaNet linear attention between its gated attention layers
      // (the model yaml's --linear-attention-type and head flags; preset qwen3-next-80b-a3b).
      {qwen + "run_next_80b.sh",
       0,
       "h100",
       {},
       0,
       nullptr,
       Expected{128, 1, 4, 3, 32, 1, "bf16", "deepep"}},
  };
  // 32 runs in 12 scripts (run 2 of the H100 script is checked on two systems).
  CHECK(cases.size() == 33);
  for (const auto& c : cases) check_case(c);
}

TEST_CASE("import megatron: every Megatron-LM example training script",
          "[config][import][scripts]") {
  const std::string ex = "lm-examples/examples/";
  const std::vector<ScriptCase> cases{
      {ex + "bert/train_bert_340m_distributed.sh", 0, "h100", {}, 0, "trains BERT"},
      {ex + "t5/train_t5_220m_distributed.sh", 0, "h100", {}, 0, "trains T5"},
      {ex + "mamba/train.sh", 0, "h100", {}, 0, "hybrid Mamba"},
      // FP16 with loss scaling; TP 8 x PP 16 needs 128 GPUs, the script's one node has 8.
      {ex + "gpt3/train_gpt3_175b_distributed.sh",
       0,
       "h100",
       {},
       0,
       "8 GPUs are not divisible by tp x pp x cp"},
      {ex + "gpt3/train_gpt3_175b_distributed.sh",
       0,
       "h100",
       {},
       1024,
       nullptr,
       Expected{1024, 8, 16, 1, 1, 1, "fp16", nullptr}},
      {ex + "gptoss/02_train.sh",
       0,
       "h100",
       {},
       0,
       nullptr,
       Expected{8, 1, 8, 1, 1, 1, "fp8-delayed", "alltoall"}},
      {ex + "llama/train_llama3_8b_h100_fp8.sh",
       0,
       "h100",
       {},
       0,
       nullptr,
       Expected{8, 1, 1, 1, 1, 1, "fp8-delayed", nullptr}},
      // Megatron FSDP's DeepSeek-V3: `mkdir ... || exit` does not exit (mkdir succeeds), and
      // the job is the here-document sbatch reads (srun ... bash -x -c "$TRAINING_CMD");
      // its #SBATCH header leaves the node count to the user.
      {ex + "megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh",
       0,
       "gb200-nvl72",
       {},
       0,
       "does not state the world size"},
      {ex + "megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh",
       0,
       "gb200-nvl72",
       {},
       256,
       nullptr,
       Expected{256, 1, 1, 1, 8, 1, "bf16", "hybridep"}},
      {ex + "megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh",
       0,
       "h100",
       {},
       0,
       nullptr,
       Expected{8, 1, 1, 1, 1, 1, "fp8-delayed", nullptr}},
      // As written (SLURM_NNODES unset: one node) EP 8 does not fit PP 4 of 8 GPUs; on 8 nodes it
      // imports.
      {ex + "mixtral/train_mixtral_8x7b_distributed.sh", 0, "h100", {}, 0, "does not divide"},
      {ex + "mixtral/train_mixtral_8x7b_distributed.sh",
       0,
       "h100",
       {{"SLURM_NNODES", "8"}},
       0,
       nullptr,
       Expected{64, 1, 4, 1, 8, 1, "bf16", "alltoall"}},
      {ex + "multimodal/pretrain_mistral_clip.sh", 0, "h100", {}, 0, "exits before it launches"},
      {ex + "multimodal/pretrain_mistral_clip.sh",
       0,
       "h100",
       {{"WORKSPACE", "/w"}, {"LOAD_NAME", "m"}},
       0,
       "vision-language"},
      {ex + "multimodal/nvlm/pretrain_qwen20_72b_internvit_6b.sh",
       0,
       "h100",
       {},
       0,
       "vision-language"},
      {ex + "multimodal/nvlm/pretrain_yi_34b_internvit_6b.sh", 0, "h100", {}, 0, "vision-language"},
      {ex + "multimodal/llama_3p1_nemotron_nano_vl_8b_v1/"
            "pretraining_llama_3p1_nemotron_nano_vl_8b_v1.sh",
       0,
       "h100",
       {},
       0,
       "vision-language"},
      {ex + "mimo/scripts/run_avlm_train.sh", 0, "h100", {}, 0, "multimodal MIMO"},
      {ex + "mimo/scripts/run_hetero_nemotron_20l_mock_train.sh",
       0,
       "h100",
       {},
       0,
       "multimodal MIMO"},
      {ex + "mimo/scripts/run_mock_train.sh", 0, "h100", {}, 0, "multimodal MIMO"},
      {ex + "mimo/scripts/run_video_vlm_train.sh", 0, "h100", {}, 0, "multimodal MIMO"},
      {ex + "mimo/scripts/run_vlm_train.sh", 0, "h100", {}, 0, "multimodal MIMO"},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_CASE("import megatron: ModelZoo's wrapper turns variables into flags",
          "[config][import][scripts]") {
  // One call, its flags read back: the table's row under the caller's variables, the YAML
  // after envsubst, the wrapper's additions per variable.
  const std::string root = test::source_path("tests/data/megatron/modelzoo");
  std::size_t at = 0;
  const auto* w = importer::find_launch_wrapper({"bash", "./sbatch_benchmarking.sh", "--x"}, at);
  REQUIRE(w != nullptr);
  CHECK(at == 1);
  CHECK(importer::find_launch_wrapper({"bash", "run.sh"}, at) == nullptr);
  importer::WrapperCall call;
  call.script_path = root + "/best_practice/qwen3/run_h100_235b.sh";
  call.wrapper_word = "./sbatch_benchmarking.sh";
  call.environment = {{"MODEL", "Qwen3-235B-A22B"}, {"PR", "fp8"},
                      {"A2A_OVERLAP", "1"},         {"NNODES", "4"},
                      {"DISPATCHER", "alltoall"},   {"BINDPCIE_PATH", "/opt/bindpcie"}};
  call.args = {"--recompute-granularity", "selective"};
  const auto cmd = importer::expand_launch_wrapper(*w, call);
  const auto has = [&](const std::vector<std::string>& seq) {
    return std::search(cmd.flags.begin(), cmd.flags.end(), seq.begin(), seq.end()) !=
           cmd.flags.end();
  };
  // The row's TP 2 / PP 8 / EP 32 (runtime.conf), VPP 4 over 96 layer units: 3 layers each.
  CHECK(has({"--tensor-model-parallel-size", "2"}));
  CHECK(has({"--num-layers-per-virtual-pipeline-stage", "3"}));
  CHECK(has({"--recompute-granularity", "selective"}));
  CHECK(has({"--moe-token-dispatcher-type", "alltoall"}));
  CHECK(has({"--fp8-recipe", "blockwise"}));
  CHECK(has({"--delay-wgrad-compute", "--overlap-moe-expert-parallel-comm"}));
  CHECK(!has({"--tp-comm-overlap"}));  // BF16 only
  // A YAML value "false" drops the flag; "true" leaves it alone.
  CHECK(std::find(cmd.flags.begin(), cmd.flags.end(), "--moe-router-pre-softmax") ==
        cmd.flags.end());
  CHECK(has({"--use-distributed-optimizer"}));
  CHECK(cmd.environment.at("CUDA_DEVICE_MAX_CONNECTIONS") == "32");
  CHECK(cmd.gpus == 32);  // 4 nodes x 8
  REQUIRE(cmd.launcher.size() == 1);
  CHECK(cmd.launcher[0] == "/opt/bindpcie");
  // The wrapper stops on a model its table lacks and on an unknown precision.
  call.environment["MODEL"] = "Nope";
  CHECK_THROWS_WITH(importer::expand_launch_wrapper(*w, call),
                    Catch::Contains("MODEL=Nope is not in runtime.conf"));
  call.environment["MODEL"] = "Qwen3-235B-A22B";
  call.environment["PR"] = "fp4";
  CHECK_THROWS_WITH(importer::expand_launch_wrapper(*w, call), Catch::Contains("PR=fp4"));
  // No checkout above the script: said, with the way out.
  call.environment["PR"] = "bf16";
  call.script_path = "/nonexistent/run.sh";
  CHECK_THROWS_WITH(importer::expand_launch_wrapper(*w, call), Catch::Contains("--wrapper-root"));
  call.root = root;
  CHECK(importer::expand_launch_wrapper(*w, call).gpus == 32);
}

TEST_CASE("import megatron: a script with several runs names them", "[config][import][scripts]") {
  const auto r = test::run_moesim(
      {"import", "megatron",
       test::source_path("tests/data/megatron/modelzoo/best_practice/qwen3/run_30b.sh"), "--system",
       "h100"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("the script starts 3 runs; choose one with --run N") &&
                 Catch::Contains("3: EP=8 MBS=4 NNODES=1 PP=1 TP=1 bash ./sbatch_benchmarking.sh"));
  const auto ok = test::run_moesim(
      {"import", "megatron",
       test::source_path("tests/data/megatron/modelzoo/best_practice/qwen3/run_30b.sh"), "--system",
       "b200", "--run", "3"});
  CHECK(ok.status == 0);
  CHECK_THAT(ok.err, Catch::Contains("from the launcher") &&
                         Catch::Contains("gpus: 8: NNODES=1 x 8 tasks per node"));
  // The notes are the picked run's: its wrapper's, once (not one per run of the script).
  const auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(ok.err, ".conf not read") == 1);
  const auto bad = test::run_moesim(
      {"import", "megatron",
       test::source_path("tests/data/megatron/modelzoo/best_practice/qwen3/run_30b.sh"), "--system",
       "b200", "--run", "4"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("run 4 of a script that starts 3"));
}

}  // namespace moesim

namespace moesim {
TEST_CASE("import megatron: a run the wrapper cannot build fails only when it is picked",
          "[config][import][scripts]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.source = "/nonexistent/two_runs.sh";
  o.wrapper_root = test::source_path("tests/data/megatron/modelzoo");
  const std::string script =
      "MODEL=Nope bash ./sbatch_benchmarking.sh\n"
      "MODEL=Qwen3-30B-A3B NNODES=1 bash ./sbatch_benchmarking.sh "
      "--moe-router-force-load-balancing\n";
  o.run = 2;
  CHECK(importer::import_megatron(script, o).scenario["gpus"] == 8);
  o.run = 1;
  CHECK_THROWS_WITH(importer::import_megatron(script, o),
                    Catch::Contains("MODEL=Nope is not in runtime.conf"));
}
}  // namespace moesim
