// moesim import megatron (issue #17 item 1): a Megatron command line as a scenario.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/load.hpp"
#include "importer/import.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
nlohmann::json described(const std::string& path) {
  const auto r = test::run_moesim({"describe", "--json", path});
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"name", "file", "description", "measured"}) j.erase(k);
  j["stack"].erase("release");  // the journey's scenarios name their custom build; a command cannot
  return j;
}

// A small MoE command: every flag Megatron needs, the rest at its defaults.
const char* kSmallMoe =
    "torchrun --nproc-per-node 8 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 2048 "
    "--num-attention-heads 16 --group-query-attention --num-query-groups 4 --ffn-hidden-size 6144 "
    "--swiglu "
    "--num-experts 64 --moe-router-topk 4 --moe-ffn-hidden-size 768 --moe-grouped-gemm "
    "--moe-permute-fusion "
    "--vocab-size 151936 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 "
    "--expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall --lr 1e-4";
}  // namespace

TEST_CASE("NVIDIA's GB200 DeepSeek-V3 flags import as the journey's final scenario",
          "[config][import]") {
  test::TempFile out("");
  const auto r = test::run_moesim({"import", "megatron",
                                   test::source_path("tests/data/megatron/deepseek-v3-gb200.sh"),
                                   "--system", "gb200-nvl72", "--gpus", "256",
                                   "--gpus-per-nvlink-domain", "32", "-o", out.path()});
  REQUIRE(r.status == 0);
  CHECK(described(out.path()) ==
        described(test::source_path("scenarios/journey/13-norm-quant-fusion.json")));
  // Every stack switch is listed as assumed; the irrelevant flags as ignored.
  for (const char* k : {"mxfp8_alloc_fusion", "permute_fusion_v2", "swizzle_fusion", "pdl_quant",
                        "te_host_slim", "cuda_graph_shared_expert", "deepep_tuned",
                        "hybridep_permute_fusion", "cpu_numa_binding", "norm_quant_fusion"})
    CHECK_THAT(r.err, Catch::Contains(std::string("stack.") + k + ": "));
  CHECK_THAT(r.err, Catch::Contains("--lr-decay-style"));
  CHECK_THAT(r.err, Catch::Contains("preset 'deepseek-v3'"));
}

TEST_CASE("An absent flag is Megatron's default, not moesim's newest stack", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const auto imp = importer::import_megatron(kSmallMoe, o);
  const auto& sc = imp.scenario;
  CHECK(sc["framework"]["dispatcher"] == "alltoall");
  CHECK(sc["framework"]["cuda_graph_scope"].empty());
  CHECK(sc["framework"]["distributed_optimizer"] == false);
  CHECK(sc["framework"]["overlap_grad_reduce"] == false);
  CHECK(sc["framework"]["grad_reduce_dtype"] == "fp32");  // --bf16 without --grad-reduce-in-bf16
  CHECK(sc["framework"]["recompute_modules"].empty());
  CHECK(sc["parallelism"]["etp"] == 1);  // Megatron: ETP defaults to TP
  CHECK(sc["parallelism"]["sequence_parallel"] == false);
  CHECK(sc["stack"]["router_fusion"] == false);
  CHECK(sc["stack"]["cpu_numa_binding"] == false);
  CHECK(sc["model"]["n_routed_experts"] == 64);
  CHECK(sc["model"]["tie_word_embeddings"] == true);  // no --untie-embeddings-and-output-weights
  CHECK(sc["training"]["precision"] == "bf16");
  // The allgather dispatcher is Megatron's default.
  std::string no_type = kSmallMoe;
  no_type.erase(no_type.find(" --moe-token-dispatcher-type alltoall"), 37);
  CHECK(importer::import_megatron(no_type, o).scenario["framework"]["dispatcher"] == "allgather");
  // The result runs.
  test::TempFile f(sc.dump());
  CHECK(test::run_moesim({"run", f.path()}).status == 0);
}

TEST_CASE("import megatron refuses what it cannot model, naming the flag", "[config][import]") {
  struct Case {
    std::string extra, flag;
  };
  const std::vector<Case> cases{
      {" --fp16", "--fp16"},
      {" --use-torch-fsdp2", "--use-torch-fsdp2"},
      {" --moe-frobnicate 3", "--moe-frobnicate"},  // unknown
      {" --recompute-granularity full --recompute-method uniform --recompute-num-layers 2",
       "--recompute-num-layers"},
      {" --tensor-model-parallel-size $TP", "--tensor-model-parallel-size"},
      {" --exp-avg-dtype bf16 --use-precision-aware-optimizer",
       "--exp-avg-dtype"},  // moments differ
      {" --cuda-graph-impl transformer_engine", "--cuda-graph-scope"},
      // Shapes the model loader refuses: named by the flag, not the model field it became.
      {" --moe-router-num-groups 3", "--moe-router-num-groups"},
      {" --kv-channels 0", "--kv-channels"},
  };
  for (const auto& c : cases) {
    const auto r =
        test::run_moesim({"import", "megatron", "--args", std::string(kSmallMoe) + c.extra,
                          "--system", "h100", "--gpus", "16"});
    INFO(c.extra);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("<args>: " + c.flag + ":"));
  }
  std::string grouped = kSmallMoe;
  grouped.erase(grouped.find(" --moe-grouped-gemm"), 19);
  const auto r = test::run_moesim(
      {"import", "megatron", "--args", grouped, "--system", "h100", "--gpus", "16"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("SequentialMLP"));
  // Megatron-Bridge recipe overrides start from a configuration the command does not show.
  const auto hydra =
      test::run_moesim({"import", "megatron", "--args",
                        "python pretrain_llama3_8b.py train.micro_batch_size=2 model.num_layers=32",
                        "--system", "h100", "--gpus", "16"});
  CHECK(hydra.status == 2);
  CHECK_THAT(hydra.err, Catch::Contains("recipe override"));
  // A model preset that the shape flags contradict.
  const auto m = test::run_moesim({"import", "megatron", "--args", kSmallMoe, "--system", "h100",
                                   "--gpus", "16", "--model", "deepseek-v3"});
  CHECK(m.status == 2);
  CHECK_THAT(m.err, Catch::Contains("--model"));
  // Presets no one has, named by the option, before the command is read.
  for (const char* option : {"--system", "--model"}) {
    const bool sys = std::string(option) == "--system";
    const auto u = test::run_moesim({"import", "megatron", "--args", kSmallMoe, "--system",
                                     sys ? "h900" : "h100", "--gpus", "16", "--model",
                                     sys ? "qwen3-30b-a3b" : "h900"});
    CHECK(u.status == 2);
    CHECK_THAT(u.err, Catch::Contains(std::string("<command line>: ") + option + ": unknown"));
  }
}

TEST_CASE("Megatron's --moe-layer-freq list expressions", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  std::string s = kSmallMoe;
  const auto with = [&](const std::string& freq) {
    return importer::import_megatron(s + " --moe-layer-freq " + freq, o);
  };
  CHECK(with("'([0]*1+[1]*3)'").scenario["model"]["moe_layer_freq"] ==
        nlohmann::json({0, 1, 1, 1}));
  CHECK(with("2").scenario["model"]["moe_layer_freq"] == nlohmann::json({1, 0, 1, 0}));
  CHECK(with("'[1,0]*2'").scenario["model"]["moe_layer_freq"] == nlohmann::json({1, 0, 1, 0}));
  CHECK_THROWS_AS(with("'[0]*3'"), config::InputError);  // 3 layers listed, 4 in the model
}

TEST_CASE("import megatron reads commands as a shell would and refuses what it must",
          "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string base = kSmallMoe;
  // The command ends at a pipe, a redirection or a line end; carriage returns are ignored;
  // the first *.py command is Megatron's.
  const auto piped = importer::import_megatron(
      base + " 2>&1 | tee train.log\r\npython tools/plot.py --log x\r\n", o);
  CHECK(piped.scenario["framework"]["dispatcher"] == "alltoall");
  // The last occurrence of a flag wins, as with argparse.
  CHECK(importer::import_megatron(base + " --global-batch-size 128", o)
            .scenario["training"]["global_batch_size"] == 128);
  // --recompute-activations is selective recompute of core attention.
  CHECK(importer::import_megatron(base + " --recompute-activations", o)
            .scenario["framework"]["recompute_modules"] == nlohmann::json({"core_attn"}));
  // Megatron's FFN default with SwiGLU: int(4 h x 2/3 / 64) x 64 = 5440 for h = 2048.
  std::string no_ffn = base;
  no_ffn.erase(no_ffn.find(" --ffn-hidden-size 6144"), 23);
  CHECK(importer::import_megatron(no_ffn, o).scenario["model"]["intermediate_size"] == 5440);
  // Nested --moe-layer-freq expressions (arguments.py's own example form).
  CHECK(importer::import_megatron(base + " --moe-layer-freq '([1]*1+[0]*1)*2'", o)
            .scenario["model"]["moe_layer_freq"] == nlohmann::json({1, 0, 1, 0}));
  for (const char* bad :
       {" --moe-layer-freq '[1]*99999999999999999999'", " --moe-layer-freq '[1]*4000000000'",
        " --pipeline-model-parallel-size 0", " --make-vocab-size-divisible-by 0"})
    CHECK_THROWS_AS(importer::import_megatron(base + bad, o), config::InputError);
  // With --model, every shape flag given is checked against the preset.
  o.model = "qwen3-30b-a3b";
  try {
    importer::import_megatron(
        "pretrain_gpt.py --num-experts 8 --seq-length 4096 --micro-batch-size 1 --bf16 "
        "--moe-grouped-gemm",
        o);
    FAIL("the preset has 128 experts");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "--num-experts");
  }
}

TEST_CASE("import megatron takes --tp-comm-overlap: overlapped under TP, listed inert at TP 1",
          "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string tp1 = std::string(kSmallMoe) + " --tp-comm-overlap";
  const auto a = importer::import_megatron(tp1, o).scenario;
  CHECK(a["framework"]["tp_comm_overlap"] == true);
  test::TempFile fa(a.dump());
  const auto ra = test::run_moesim({"run", "--json", fa.path()});
  REQUIRE(ra.status == 0);
  bool listed = false;
  const auto run = nlohmann::json::parse(ra.out);
  for (const auto& w : run["warnings"])
    listed = listed || w["setting"] == "framework.tp_comm_overlap";
  CHECK(listed);
  // Without the flag the key is not written at all.
  CHECK_FALSE(
      importer::import_megatron(kSmallMoe, o).scenario["framework"].contains("tp_comm_overlap"));
  // Under TP 2 with sequence parallelism it is taken: the step changes. This small model is
  // host-bound, so the hidden collectives do not shorten its step, and userbuffers' own host
  // work (schedules/kernel_pricing.hpp) lengthens it (tests/schedules/tp_overlap_test.cpp
  // checks the kernels and the host ops).
  const std::string tp2 =
      std::string(kSmallMoe) + " --tensor-model-parallel-size 2 --sequence-parallel";
  test::TempFile off(importer::import_megatron(tp2, o).scenario.dump());
  test::TempFile on(importer::import_megatron(tp2 + " --tp-comm-overlap", o).scenario.dump());
  const auto t = [](const test::TempFile& f) {
    const auto r = test::run_moesim({"run", "--json", f.path()});
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  };
  CHECK(t(on) > t(off));
}

TEST_CASE(
    "Megatron's defaults that move memory come across: dropout, the loss, attention, vocabulary "
    "padding",
    "[config][import][memory]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const auto get = [&](const std::string& extra) {
    return importer::import_megatron(std::string(kSmallMoe) + extra, o).scenario;
  };
  const auto plain = get("");
  // Megatron's --hidden-dropout defaults to 0.1; without --cross-entropy-loss-fusion the
  // loss is unfused; --attention-backend auto picks the fused kernels.
  CHECK(plain["training"]["hidden_dropout"] == 0.1);
  CHECK(plain["framework"]["cross_entropy"] == "unfused");
  CHECK(plain["framework"]["attention_backend"] == "fused");
  CHECK_FALSE(plain["training"].contains("make_vocab_size_divisible_by"));
  const auto set =
      get(" --hidden-dropout 0.0 --cross-entropy-loss-fusion --attention-backend unfused"
          " --attention-dropout 0.0 --make-vocab-size-divisible-by 3232");
  CHECK(set["training"]["hidden_dropout"] == 0.0);
  CHECK(set["framework"]["cross_entropy"] == "native");  // Megatron's default implementation
  CHECK(set["framework"]["attention_backend"] == "unfused");
  // 151936 pads to 155136 with 3232 (to itself with 128): the divisor is written.
  CHECK(set["training"]["make_vocab_size_divisible_by"] == 3232);
  CHECK(get(" --cross-entropy-loss-fusion --cross-entropy-fusion-impl te")["framework"]
                                                                          ["cross_entropy"] ==
        "te");
  // Unfused attention with Megatron's default attention dropout (0.1) keeps a mask of
  // every score: not modeled, refused with the reason.
  CHECK_THROWS_WITH(get(" --attention-backend unfused"), Catch::Contains("attention dropout"));
  // A divisor that pads as 128 does is left out (no inert setting in the scenario).
  CHECK_FALSE(get(" --make-vocab-size-divisible-by 64")["training"].contains(
      "make_vocab_size_divisible_by"));
}

TEST_CASE("import megatron --release takes the library switches from the release",
          "[config][import][releases]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  o.release = "25.09";
  const auto imp = importer::import_megatron(kSmallMoe, o);
  const auto& st = imp.scenario["stack"];
  CHECK(st["release"] == "25.09");
  // Flags and the launcher still decide their switches; the release the rest.
  CHECK(st["router_fusion"] == false);
  CHECK_FALSE(st.contains("pdl_quant"));
  CHECK_FALSE(st.contains("permute_fusion_v2"));
  const auto assumed = [&](const std::string& key) {
    for (const auto& [k, why] : imp.assumed)
      if (k == key) return why;
    return std::string();
  };
  CHECK_THAT(assumed("stack.pdl_quant"), Catch::Contains("release 25.09"));
  test::TempFile f(imp.scenario.dump());
  const auto r = test::run_moesim({"describe", "--json", f.path()});
  REQUIRE(r.status == 0);
  const auto d = nlohmann::json::parse(r.out);
  CHECK(d["stack"]["pdl_quant"] == false);
  CHECK(d["stack"]["permute_fusion_v2"] == true);
  for (const char* bad : {"custom", "25.05"}) {
    o.release = bad;
    try {
      importer::import_megatron(kSmallMoe, o);
      FAIL("accepted --release " << bad);
    } catch (const config::InputError& e) {
      CHECK(e.path() == "--release");
    }
  }
  // The release refuses what it did not ship: HybridEP before 25.11.
  o.release = "25.09";
  std::string hybridep = kSmallMoe;
  hybridep.replace(hybridep.find("--moe-token-dispatcher-type alltoall"), 36,
                   "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep");
  try {
    importer::import_megatron(hybridep, o);
    FAIL("accepted HybridEP on 25.09");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "framework.dispatcher");
  }
}

// Megatron's FP4 flags (arguments.py, fp4_utils.py @ d98e8a64): --fp4-format e2m1 with the
// default --fp4-recipe nvfp4 is TE's NVFP4 in every layer; --fp4-param-gather gathers the
// FP4 copies; --first-last-layers-bf16 keeps its first and last layers in BF16
// (transformer_config.py 628-637 at cd4afffa: one at each end by default).
TEST_CASE("import megatron takes NVFP4 and its BF16 first and last layers", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "gb200-nvl72";
  o.gpus = 16;
  const std::string fp4 = std::string(kSmallMoe) + " --fp4-format e2m1";
  const auto sc = importer::import_megatron(fp4 + " --fp4-param-gather", o).scenario;
  CHECK(sc["training"]["precision"] == "nvfp4");
  CHECK(sc["framework"]["fp8_param_gather"] == true);
  CHECK(importer::import_megatron(fp4, o).scenario["framework"]["fp8_param_gather"] == false);
  CHECK(sc["stack"]["nvfp4_rht_fusion"] == true);
  const auto both = importer::import_megatron(fp4 + " --first-last-layers-bf16", o).scenario;
  CHECK(both["training"]["bf16_layers_at_start"] == 1);
  CHECK(both["training"]["bf16_layers_at_end"] == 1);
  const auto end = importer::import_megatron(fp4 +
                                                 " --first-last-layers-bf16 "
                                                 "--num-layers-at-start-in-bf16 0 "
                                                 "--num-layers-at-end-in-bf16 2",
                                             o)
                       .scenario;
  CHECK(end["training"]["bf16_layers_at_start"] == 0);
  CHECK(end["training"]["bf16_layers_at_end"] == 2);
  // A count alone acts on nothing (Megatron reads it only with the switch): said, not set.
  const auto alone = importer::import_megatron(fp4 + " --num-layers-at-end-in-bf16 2", o);
  CHECK_FALSE(alone.scenario["training"].contains("bf16_layers_at_end"));
  CHECK(std::any_of(alone.assumed.begin(), alone.assumed.end(),
                    [](const auto& a) { return a.first == "--num-layers-at-end-in-bf16"; }));
  for (const std::string bad : {" --fp4-recipe custom", " --fp8-format e4m3"}) {
    INFO(bad);
    CHECK_THROWS_AS(importer::import_megatron(fp4 + bad, o), config::InputError);
  }
  // And the scenario it writes loads: NVFP4 on Blackwell.
  test::TempFile f(sc.dump());
  CHECK(config::load_scenario_file(f.path()).training.precision == workload::Precision::nvfp4);
}

// GPT-OSS's flags (Megatron-LM @ d98e8a64, examples/post_training/modelopt/conf/openai/
// gpt-oss-120b.sh): learned sinks make it the gpt_oss model, --window-size 127,0 with
// --window-attn-skip-freq 2 windows the odd layers (1-based) at Hugging Face's 128, and the
// shape matches OpenAI's preset.
TEST_CASE("import megatron reads GPT-OSS: sinks, windows, quick GeGLU", "[config][import]") {
  const auto text = test::read_text(test::source_path("tests/data/megatron/gpt-oss-120b.sh"));
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const auto imp = importer::import_megatron(text, o);
  CHECK(imp.scenario["model"] == "gpt-oss-120b");
  // --no-rope-fusion: the unfused path (YaRN's factor takes GPT-OSS there anyway).
  CHECK(imp.scenario["framework"]["rope_fusion"] == false);
  // The flags' own model, before the preset match: the windows and the type.
  const std::string small =
      "pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 "
      "--group-query-attention "
      "--num-query-groups 2 --num-experts 4 --moe-ffn-hidden-size 1024 --quick-geglu --seq-length "
      "4096 "
      "--micro-batch-size 1 --bf16 --vocab-size 32000 --expert-model-parallel-size 4 "
      "--moe-grouped-gemm "
      "--moe-permute-fusion --window-size 127,0 --window-attn-skip-freq 2 --softmax-type learnable "
      "--add-qkv-bias";
  o.gpus = 4;
  const auto m = importer::import_megatron(small, o).scenario["model"];
  CHECK(m["model_type"] == "gpt_oss");
  CHECK(m["sliding_window"] == 128);
  CHECK(m["layer_types"] == nlohmann::json::array({"sliding_attention", "full_attention",
                                                   "sliding_attention", "full_attention"}));
  CHECK(m["attention_bias"] == true);
  CHECK(m["gated_linear_unit"] == true);
  CHECK(m["intermediate_size"] == 1024);
  const auto listed = importer::import_megatron(small + " --window-attn-skip-freq ([1]*3+[0]*1)", o)
                          .scenario["model"];
  CHECK(listed["layer_types"][3] == "full_attention");
  CHECK(listed["layer_types"][2] == "sliding_attention");
  for (const std::string bad :
       {" --window-size 127,8", " --window-size 12", " --window-attn-skip-freq [1,0]"}) {
    INFO(bad);
    CHECK_THROWS_AS(importer::import_megatron(small + bad, o), config::InputError);
  }
  // Sinks without experts, and a skip frequency without a window, are refused.
  CHECK_THROWS_AS(importer::import_megatron(
                      "pretrain_gpt.py --num-layers 2 --hidden-size 512 --num-attention-heads 8 "
                      "--seq-length 4096 --micro-batch-size 1 --bf16 --vocab-size 32000 "
                      "--softmax-type learnable",
                      o),
                  config::InputError);
  CHECK_THROWS_AS(
      importer::import_megatron(
          small.substr(0, small.find(" --window-size")) + " --window-attn-skip-freq 2", o),
      config::InputError);
  // With --model, the windows and sinks must be the preset's.
  o.gpus = 16;
  o.model = "gpt-oss-120b";
  const std::string run =
      "pretrain_gpt.py --seq-length 4096 --micro-batch-size 1 --bf16 --expert-model-parallel-size "
      "16 "
      "--moe-grouped-gemm --moe-permute-fusion --softmax-type learnable";
  CHECK(importer::import_megatron(run + " --window-size 127,0 --window-attn-skip-freq 2", o)
            .scenario["model"] == "gpt-oss-120b");
  for (const std::string bad :
       {" --window-size 255,0 --window-attn-skip-freq 2", " --window-size 127,0"}) {
    INFO(bad);
    CHECK_THROWS_AS(importer::import_megatron(run + bad, o), config::InputError);
  }
  CHECK_THROWS_AS(
      importer::import_megatron("pretrain_gpt.py --seq-length 4096 --micro-batch-size 1 --bf16 "
                                "--expert-model-parallel-size 16 --softmax-type vanilla",
                                o),
      config::InputError);
}

// --moe-pad-expert-input-to-capacity (issue #48: Super's H100 recipe): the capacity the
// factor sets becomes every expert's input, so the hottest rank's load is the factor; without
// a factor Megatron-Core asserts, and so does the importer.
TEST_CASE("import megatron pads expert inputs to capacity", "[config][import]") {
  const std::string drop = std::string(kSmallMoe) + " --moe-expert-capacity-factor 1.25";
  auto r = test::run_moesim({"import", "megatron", "--args",
                             drop + " --moe-pad-expert-input-to-capacity", "--system", "h100",
                             "--gpus", "16"});
  REQUIRE(r.status == 0);
  const auto sc = config::load_scenario_text(r.out, "imported.json");
  CHECK(sc.training.pad_to_capacity);
  CHECK(sc.ep_load() == Approx(1.25));
  // Unpadded and forced-balanced, the load stays at the even share.
  r = test::run_moesim({"import", "megatron", "--args", drop + " --moe-router-force-load-balancing",
                        "--system", "h100", "--gpus", "16"});
  REQUIRE(r.status == 0);
  CHECK(config::load_scenario_text(r.out, "imported.json").ep_load() == Approx(1.0));
  // Unpadded and dropless, the trained router's loads, which the capacity caps at 1.25.
  r = test::run_moesim({"import", "megatron", "--args", drop, "--system", "h100", "--gpus", "16"});
  REQUIRE(r.status == 0);
  const double dropless = config::load_scenario_text(r.out, "imported.json").ep_load();
  CHECK(dropless > 1.0);
  CHECK(dropless <= Approx(1.25));
  r = test::run_moesim({"import", "megatron", "--args",
                        std::string(kSmallMoe) + " --moe-pad-expert-input-to-capacity", "--system",
                        "h100", "--gpus", "16"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--moe-expert-capacity-factor"));
}

// --cp-comm-type (Megatron arguments.py: TE's cp_comm_type, p2p by default): a2a is
// parallelism.cp_comm_type at CP > 1; without CP it acts on nothing and is not written.
TEST_CASE("import megatron reads --cp-comm-type", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string base = std::string(kSmallMoe) + " --cp-comm-type a2a";
  const auto cp = importer::import_megatron(base + " --context-parallel-size 2", o).scenario;
  CHECK(cp["parallelism"]["cp_comm_type"] == "a2a");
  CHECK_FALSE(importer::import_megatron(base, o).scenario["parallelism"].contains("cp_comm_type"));
  CHECK_THROWS_AS(
      importer::import_megatron(
          std::string(kSmallMoe) + " --context-parallel-size 2 --cp-comm-type a2a+p2p", o),
      config::InputError);
}

TEST_CASE("import megatron reads the distributed-optimizer instances and HSDP's outer strategy",
          "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string fsdp = std::string(kSmallMoe) + " --use-megatron-fsdp";
  const auto h = importer::import_megatron(
                     fsdp +
                         " --num-distributed-optimizer-instances 2 --outer-dp-sharding-strategy "
                         "optim",
                     o)
                     .scenario;
  CHECK(h["parallelism"]["optimizer_instances"] == 2);
  CHECK(h["parallelism"]["outer_dp_sharding"] == "optim");
  // The distributed optimizer across instances, without FSDP.
  const auto d = importer::import_megatron(std::string(kSmallMoe) +
                                               " --use-distributed-optimizer "
                                               "--num-distributed-optimizer-instances 2",
                                           o)
                     .scenario;
  CHECK(d["parallelism"]["optimizer_instances"] == 2);
  CHECK_FALSE(d["parallelism"].contains("outer_dp_sharding"));
  // The outer strategy is Megatron-FSDP's; a value argparse refuses is refused.
  CHECK_THROWS_AS(
      importer::import_megatron(std::string(kSmallMoe) + " --outer-dp-sharding-strategy optim", o),
      config::InputError);
  CHECK_THROWS_AS(importer::import_megatron(fsdp + " --outer-dp-sharding-strategy optim_grads", o),
                  config::InputError);
}

TEST_CASE("import megatron reads TransformerEngine's GEMM SM margin from the environment",
          "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const auto with =
      importer::import_megatron(std::string("export NVTE_EXT_MARGIN_SM=16\n") + kSmallMoe, o);
  CHECK(with.scenario["framework"]["gemm_sm_margin"] == 16);
  CHECK_FALSE(
      importer::import_megatron(kSmallMoe, o).scenario["framework"].contains("gemm_sm_margin"));
  CHECK_THROWS_AS(
      importer::import_megatron(std::string("export NVTE_EXT_MARGIN_SM=all\n") + kSmallMoe, o),
      config::InputError);
  // A number with trailing text is not one (std::stoi took "16x" as 16).
  CHECK_THROWS_AS(
      importer::import_megatron(std::string("export NVTE_EXT_MARGIN_SM=16x\n") + kSmallMoe, o),
      config::InputError);
}

// The router's balancing (Megatron arguments.py 3532-3537 at d98e8a64): forced balance where
// the command forces it (the balancing flags then change nothing and are listed as ignored),
// else the trained router's own loads: the largest auxiliary-loss coefficient, DeepSeek's
// expert bias, or the model family's trained routing when the command sets neither.
TEST_CASE("import megatron reads the router's balancing for a dropless run", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const auto imported = [&](const std::string& extra) {
    return importer::import_megatron(std::string(kSmallMoe) + extra, o);
  };
  const auto assumed = [](const importer::MegatronImport& imp, const std::string& what) {
    return std::any_of(imp.assumed.begin(), imp.assumed.end(), [&](const auto& a) {
      return a.first == "routing.balance" && a.second.find(what) != std::string::npos;
    });
  };
  auto imp = imported(
      " --moe-router-load-balancing-type seq_aux_loss global_aux_loss "
      "--moe-aux-loss-coeff 1e-4 1e-3");
  CHECK(imp.scenario["routing"]["balance"] == "aux_loss");
  CHECK(imp.scenario["routing"]["coefficient"].get<double>() == Approx(1e-3));
  CHECK(assumed(imp, "global_aux_loss"));

  imp = imported(" --moe-router-enable-expert-bias --moe-aux-loss-coeff 1e-4");
  CHECK(imp.scenario["routing"]["balance"] == "loss_free");

  imp = imported(" --moe-aux-loss-coeff 1e-2 --moe-router-force-load-balancing");
  CHECK(imp.scenario["routing"]["balance"] == "forced");
  CHECK(std::find(imp.ignored.begin(), imp.ignored.end(), "--moe-aux-loss-coeff") !=
        imp.ignored.end());

  // Megatron's defaults (aux_loss at coefficient 0): no loss moesim prices, so the scenario
  // takes the family's trained routing, and the import says so.
  imp = imported("");
  CHECK_FALSE(imp.scenario.contains("routing"));
  CHECK(assumed(imp, "the model family's trained routing"));

  CHECK_THROWS_AS(imported(" --moe-router-load-balancing-type bogus"), config::InputError);
  CHECK_THROWS_AS(imported(" --moe-aux-loss-coeff much"), config::InputError);
}

// --moe-shared-expert-overlap (transformer_config.py 717-721 at d98e8a64): the shared expert on
// its own stream; on a model with a shared expert it loads and moves the step, without one the
// loader refuses it, as Megatron ignores it there.
TEST_CASE("import megatron takes --moe-shared-expert-overlap", "[config][import]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 16;
  const std::string shared = std::string(kSmallMoe) + " --moe-shared-expert-intermediate-size 1536";
  const auto plain = importer::import_megatron(shared, o);
  const auto over = importer::import_megatron(shared + " --moe-shared-expert-overlap", o);
  CHECK_FALSE(plain.scenario["framework"].contains("moe_shared_expert_overlap"));
  CHECK(over.scenario["framework"]["moe_shared_expert_overlap"] == true);
  CHECK(config::load_scenario_text(over.scenario.dump(), "s.json")
            .framework.moe_shared_expert_overlap);
  CHECK_THROWS_WITH(
      importer::import_megatron(std::string(kSmallMoe) + " --moe-shared-expert-overlap", o),
      Catch::Contains("framework.moe_shared_expert_overlap") &&
          Catch::Contains("no shared expert"));
}
