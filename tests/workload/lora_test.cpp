// LoRA fine-tuning (training.lora; Megatron-Bridge PEFT, docs/research/bridge-finetuning.md
// 3): the frozen base linears run without weight gradients and keep no inputs for them,
// each target linear gets a BF16 low-rank adapter, and the data-parallel reduction, the
// optimizer and their memory hold the adapters only.
#include <catch2/catch.hpp>

#include <string>

#include "predict/predict.hpp"
#include "schedules/stage_params.hpp"
#include "support/helpers.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
// Megatron-Bridge's Llama3 70B LoRA shape (8 GB200, TP1 PP4 VP20 in its tables; PP1 here
// so that every layer is on the one rank).
Json llama(const Json& lora, std::int64_t tp = 1) {
  Json sc = {{"name", "lora"},
             {"system", "gb200-nvl72"},
             {"gpus", 8},
             {"model", "llama3-70b"},
             {"training",
              {{"seq_length", 4096},
               {"micro_batch_size", 1},
               {"global_batch_size", 32},
               {"precision", "bf16"}}},
             {"parallelism", {{"tp", tp}, {"pp", 1}, {"sequence_parallel", tp > 1}}},
             {"framework",
              {{"cuda_graph_scope", Json::array()},
               {"recompute_modules", {"full"}},
               {"distributed_optimizer", true},
               {"overlap_grad_reduce", true},
               {"overlap_param_gather", true}}}};
  if (!lora.is_null()) sc["training"]["lora"] = lora;
  return sc;
}

int count(const std::vector<workload::KernelTemplate>& ks, const std::string& part) {
  int n = 0;
  for (const auto& k : ks) n += k.name.find(part) != std::string::npos;
  return n;
}
}  // namespace

TEST_CASE("LoRA adapters' parameters: A (h x r) and B (r x the QKV width) per layer",
          "[workload][lora]") {
  const auto sc = load(llama(Json::object()));
  // Llama3 70B: h 8192, 64 query heads and 8 KV heads of 128: QKV 10240 wide; rank 16.
  CHECK(schedules::lora_parameters(sc.model, sc.parallelism, *sc.training.lora) ==
        8192.0 * 16 + 16.0 * 10240);  // 294,912, 23.6 M over 80 layers
  const auto tp2 = load(llama(Json::object(), 2));
  CHECK(schedules::lora_parameters(tp2.model, tp2.parallelism, *tp2.training.lora) == 294912.0 / 2);
  const auto fc1 = load(llama({{"rank", 8}, {"targets", {"linear_qkv", "linear_fc1"}}}));
  // linear_fc1 is gate and up, 2 x 28672 wide.
  CHECK(schedules::lora_parameters(fc1.model, fc1.parallelism, *fc1.training.lora) ==
        8192.0 * 8 + 8.0 * 10240 + 8192.0 * 8 + 8.0 * 57344);
}

TEST_CASE("Under LoRA the base linears compute no weight gradient; the adapters do",
          "[workload][lora]") {
  const auto full = load(llama(nullptr));
  const auto lora = load(llama(Json::object()));
  const auto tf = test::build_templates(full);
  const auto tl = test::build_templates(lora);
  const auto& f = tf.decoder(false, workload::Mixer::full);
  const auto& l = tl.decoder(false, workload::Mixer::full);
  // Four base linears (qkv, o_proj, fc1, fc2) with their weight gradients in full training.
  CHECK(count(f.bwd, ".wgrad") == 4);
  // Under LoRA only the adapters' two.
  CHECK(count(l.bwd, ".wgrad") == 2);
  CHECK(count(l.bwd, "attn.qkv.lora_a.wgrad") == 1);
  CHECK(count(l.bwd, "attn.qkv.lora_b.wgrad") == 1);
  CHECK(count(l.fwd, "attn.qkv.lora") == 4);  // A, B, the scale and the add
  // The frozen output layer and embedding: no weight gradient, no table gradient.
  CHECK(count(tl.head.bwd, ".wgrad") == 0);
  CHECK(count(tf.head.bwd, ".wgrad") == 1);
  CHECK(tl.embedding.bwd.empty());
  CHECK(!tf.embedding.bwd.empty());
}

// A frozen linear needs no column-wise copy of its input or of its output's gradient (no
// weight gradient reads them): under MXFP8 TE quantizes both row-wise only.
TEST_CASE("Under LoRA MXFP8 quantizes the frozen linears' tensors row-wise only",
          "[workload][lora]") {
  Json full = llama(nullptr), lora = llama(Json::object());
  for (Json* j : {&full, &lora}) (*j)["training"]["precision"] = "mxfp8";
  const auto tf = test::build_templates(load(full)), tl = test::build_templates(load(lora));
  const auto& f = tf.decoder(false, workload::Mixer::full);
  const auto& l = tl.decoder(false, workload::Mixer::full);
  // fc2's input (T x ffn, 4096 x 28672): read in BF16, written as one or two E4M3 copies
  // with E8M0 scales per 32.
  const double e = 4096.0 * 28672;
  CHECK(test::kernel(f.fwd, "mlp.fc2.quant").work.bytes == Approx(e * (2 + 2 * (1 + 1.0 / 32))));
  CHECK(test::kernel(l.fwd, "mlp.fc2.quant").work.bytes == Approx(e * (2 + 1 + 1.0 / 32)));
  // The gradient of fc1's output (T x 2 ffn) before its dgrad, likewise.
  const double g = 4096.0 * 2 * 28672;
  CHECK(test::kernel(f.bwd, "mlp.fc1.grad_quant").work.bytes ==
        Approx(g * (2 + 2 * (1 + 1.0 / 32))));
  CHECK(test::kernel(l.bwd, "mlp.fc1.grad_quant").work.bytes == Approx(g * (2 + 1 + 1.0 / 32)));
  // A biased TE Linear keeps its output gradient's column-wise copy (TE's bias gradient
  // path): attention biases on, o_proj's gradient (T x h) in two copies, fc1's still one.
  Json biased = lora;
  biased["model"] = {{"base", "llama3-70b"}, {"attention_bias", true}};
  const auto tb = test::build_templates(load(biased));
  const auto& b = tb.decoder(false, workload::Mixer::full);
  const double o = 4096.0 * 8192;
  CHECK(test::kernel(b.bwd, "attn.o_proj.grad_quant").work.bytes ==
        Approx(o * (2 + 2 * (1 + 1.0 / 32))));
  CHECK(test::kernel(b.bwd, "mlp.fc1.grad_quant").work.bytes == Approx(g * (2 + 1 + 1.0 / 32)));
}

TEST_CASE("LoRA's step: fewer GEMMs, DP and the optimizer over the adapters only",
          "[workload][lora]") {
  const auto full = predict::predict(load(llama(nullptr)));
  const auto lora = predict::predict(load(llama(Json::object())));
  // Forward and input-gradient GEMMs remain (with full recompute, a second forward): the
  // step loses the weight gradients, about a quarter of the work, not all of its backward.
  CHECK(lora.step.step_time_s < 0.85 * full.step.step_time_s);
  CHECK(lora.step.step_time_s > 0.6 * full.step.step_time_s);
  // Memory: 70.6 B frozen BF16 weights stay; gradients and optimizer states shrink to the
  // adapters' 23.6 M (main gradients FP32 here, master and moments sharded over DP 8).
  const auto& pl = lora.peak_memory_parts;
  const auto& pf = full.peak_memory_parts;
  const double gib = 1024.0 * 1024 * 1024;
  const double adapters = 80 * 294912.0;
  CHECK(pl.optimizer == Approx(adapters / 8 * 12 / gib).epsilon(0.01));
  CHECK(pl.weights_grads < 0.4 * pf.weights_grads);
  CHECK(pl.weights_grads > 2 * 70e9 / gib);
  // The checkpoint holds the adapters with their optimizer states (Bridge's PEFT filter).
  CHECK(lora.goodput.checkpoint_bytes == Approx(adapters * (2 + 4 + 8)));
}

TEST_CASE("LoRA's FLOPs: the frozen GEMMs at two thirds, core attention whole",
          "[workload][lora]") {
  const auto f = predict::summarize(load(llama(nullptr)));
  const auto l = predict::summarize(load(llama(Json::object())));
  CHECK(l.flops.attn_core == f.flops.attn_core);
  CHECK(l.flops_per_token ==
        Approx(2.0 / 3 * (f.flops_per_token - f.flops.attn_core) + f.flops.attn_core));
  // Llama3 70B at 4096 (docs/research/finetune/flops_check.py): 433.1 GF/token in all, of
  // which 417.0 outside core attention: 2/3 x 417.0 + 16.1 = 294.1.
  CHECK(f.flops_per_token == Approx(433.1e9).epsilon(0.001));
  CHECK(l.flops_per_token == Approx(294.1e9).epsilon(0.001));
}

TEST_CASE("LoRA is refused where moesim does not price its adapters", "[config][lora]") {
  const auto why = [](const Json& sc) {
    try {
      load(sc);
    } catch (const config::InputError& e) {
      return e.path() + ": " + e.message();
    }
    return std::string("loaded");
  };
  CHECK(why(llama({{"targets", {"linear_proj"}}})).find("row-parallel") != std::string::npos);
  CHECK(why(llama({{"targets", Json::array()}})).find("at least one") != std::string::npos);
  Json mla = llama(Json::object());
  mla["model"] = "deepseek-v2";
  CHECK(why(mla).find("MLA") != std::string::npos);
  Json fsdp = llama(Json::object());
  fsdp["parallelism"]["fsdp"] = true;
  CHECK(why(fsdp).find("fsdp") != std::string::npos);
  Json moe = llama({{"targets", {"linear_fc1"}}});
  moe["model"] = "qwen3-30b-a3b";
  moe["parallelism"]["ep"] = 8;
  CHECK(why(moe).find("experts") != std::string::npos);
}
