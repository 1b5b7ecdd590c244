// Megatron's BF16 first and last layers (--first-last-layers-bf16; training.bf16_layers_at_start
// and _at_end): those decoder layers run outside the FP8/FP4 recipe, the rest quantized;
// what the loader refuses with them (the importers: tests/importer/).
#include <catch2/catch.hpp>

#include <string>

#include "predict/predict.hpp"
#include "support/helpers.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
// Qwen3-30B-A3B cut to 8 layers on 8 B200 in NVFP4, one pipeline stage, no MTP.
Json nvfp4(const std::string& training_patch = "{}") {
  Json j = Json::parse(R"({
    "name": "bf16-layers", "system": "b200", "gpus": 8,
    "model": {"base": "qwen3-30b-a3b", "num_hidden_layers": 8},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16,
                 "precision": "nvfp4"},
    "parallelism": {"ep": 8},
    "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
  })");
  j["training"].update(Json::parse(training_patch));
  return j;
}

}  // namespace

TEST_CASE("BF16 first and last layers run their GEMMs unquantized", "[workload][bf16_layers]") {
  const auto sc = load(nvfp4(R"({"bf16_layers_at_end": 2})"));
  CHECK(sc.training.bf16_layer(0, 8) == false);
  CHECK(sc.training.bf16_layer(5, 8) == false);
  CHECK(sc.training.bf16_layer(6, 8));
  CHECK(sc.training.bf16_layer(7, 8));
  // Without a quantized parameter gather by default (Megatron's is off; the loader refuses
  // one beside BF16 layers).
  CHECK_FALSE(sc.framework.fp8_param_gather);
  const auto t = test::build_templates(sc);
  const auto b = workload::build_templates(
      {sc.model, sc.training, sc.parallelism, sc.framework, sc.stack, sc.padded_vocab(), 1},
      workload::kBf16Build);
  const auto& q = test::kernel(t.moe.fwd, "attn.qkv.fprop");
  const auto& p = test::kernel(b.moe.fwd, "attn.qkv.fprop");
  CHECK(q.work.dtype == hw_models::Dtype::fp4);
  CHECK(p.work.dtype == hw_models::Dtype::bf16);
  CHECK(p.work.flops == q.work.flops);
  // No quantize kernel in the BF16 layer.
  for (const auto& k : b.moe.fwd) CHECK(k.work.cls != hw_models::KernelClass::quantize);
}

TEST_CASE("BF16 layers change the step, their compute the same at either end",
          "[workload][bf16_layers]") {
  const auto run = [](const std::string& patch) { return predict::predict(load(nvfp4(patch))); };
  const auto none = run("{}");
  const auto start = run(R"({"bf16_layers_at_start": 2})");
  const auto end = run(R"({"bf16_layers_at_end": 2})");
  const auto four = run(R"({"bf16_layers_at_start": 2, "bf16_layers_at_end": 2})");
  // At Qwen3-30B's width (h 2048) NVFP4's quantization kernels cost more than its GEMMs save
  // on B200: the BF16 layers are the faster ones. Either way the step moves.
  CHECK(start.step.step_time_s != none.step.step_time_s);
  // The same kernels at either end of one stage (only their overlap with the DP reductions
  // differs); each BF16 layer adds the same compute.
  const auto compute = [](const predict::Prediction& p) { return p.step.breakdown.compute; };
  CHECK(compute(end) == Approx(compute(start)).epsilon(1e-9));
  CHECK(compute(four) - compute(none) ==
        Approx(2 * (compute(start) - compute(none))).epsilon(1e-6));
}

TEST_CASE("BF16 layers: what the loader refuses", "[config][bf16_layers]") {
  Json bf16 = nvfp4(R"({"bf16_layers_at_end": 1})");
  bf16["training"]["precision"] = "bf16";
  CHECK(test::load_error(bf16).path() == "training.bf16_layers_at_end");
  Json delayed = nvfp4(R"({"bf16_layers_at_start": 1})");
  delayed["training"]["precision"] = "fp8-delayed";
  delayed["system"] = "h100";
  CHECK(test::load_error(delayed).path() == "training.bf16_layers_at_start");
  Json gather = nvfp4(R"({"bf16_layers_at_end": 1})");
  gather["framework"]["fp8_param_gather"] = true;
  CHECK(test::load_error(gather).path() == "framework.fp8_param_gather");
  Json deep = nvfp4(R"({"bf16_layers_at_end": 5})");
  deep["parallelism"]["pp"] = 2;
  deep["parallelism"]["ep"] = 4;
  CHECK(test::load_error(deep).path() == "training.bf16_layers_at_end");  // 8 / 2 = 4 at most
  Json mx = nvfp4(R"({"bf16_layers_at_end": 1})");
  mx["training"]["precision"] = "mxfp8";
  CHECK(test::load_error(mx).path() == "training.bf16_layers_at_end");
  Json mtp = nvfp4(R"({"bf16_layers_at_end": 1, "mtp_layers": 1})");
  mtp["model"] = {{"base", "deepseek-v3"}, {"num_hidden_layers", 8}};
  CHECK(test::load_error(mtp).path() == "training.bf16_layers_at_end");
}

TEST_CASE("Per-module precision: Nemotron 3 Super's te_quant.cfg under NVFP4",
          "[workload][bf16_layers][module_precision]") {
  Json j = Json::parse(R"({
    "name": "module-precision", "system": "b200", "gpus": 8,
    "model": {"base": "nemotron-3-super", "num_hidden_layers": 5,
              "hybrid_override_pattern": "MEM*E"},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16,
                 "precision": "nvfp4", "bf16_layers_at_end": 1,
                 "module_precision": {"attention": "bf16", "latent_projections": "bf16",
                                      "mamba_out_proj": "mxfp8"}},
    "parallelism": {"ep": 8},
    "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
  })");
  const auto sc = load(j);
  const auto t = test::build_templates(sc);
  CHECK(test::kernel(t.mamba.fwd, "mamba.in_proj.fprop").work.dtype == hw_models::Dtype::fp4);
  CHECK(test::kernel(t.mamba.fwd, "mamba.out_proj.fprop").work.dtype == hw_models::Dtype::mxfp8);
  CHECK(test::kernel(t.attention.fwd, "attn.qkv.fprop").work.dtype == hw_models::Dtype::bf16);
  CHECK(test::kernel(t.moe.fwd, "moe.latent_fc1.fprop").work.dtype == hw_models::Dtype::bf16);
  // The last layer (an MoE) is one of the BF16 layers: every module BF16, out_proj too.
  const auto b = workload::build_templates(
      {sc.model, sc.training, sc.parallelism, sc.framework, sc.stack, sc.padded_vocab(), 1},
      workload::kBf16Build);
  CHECK(test::kernel(b.mamba.fwd, "mamba.out_proj.fprop").work.dtype == hw_models::Dtype::bf16);
  // A module the model lacks, and a precision other than bf16 / mxfp8-under-nvfp4.
  auto gqa = nvfp4(R"({"module_precision": {"mamba_out_proj": "bf16"}})");
  CHECK(test::load_error(gqa).path() == "training.module_precision.mamba_out_proj");
  j["training"]["module_precision"] = Json::parse(R"({"attention": "fp8-blockwise"})");
  CHECK(test::load_error(j).path() == "training.module_precision.attention");
}
