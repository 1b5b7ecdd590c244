// GPT-OSS and sliding-window attention (issue #25 item 6): every config.json field modeled
// or refused; the windowed layers' attention priced over their window.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "predict/predict.hpp"
#include "support/helpers.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
Json gpt_oss(const Json& model_overrides = Json::object()) {
  Json m = {{"base", "gpt-oss-120b"}};
  m.update(model_overrides);
  return {{"name", "oss"},
          {"system", "h100"},
          {"gpus", 64},
          {"model", m},
          {"training", {{"seq_length", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 64}}},
          {"parallelism", {{"tp", 1}, {"pp", 4}, {"ep", 8}}},
          {"framework", {{"dispatcher", "alltoall"}, {"cuda_graph_scope", Json::array()}}}};
}

double core_fwd_flops(const workload::LayerTemplate& t) {
  const auto k = std::find_if(t.fwd.begin(), t.fwd.end(),
                              [](const auto& x) { return x.name == "attn.core.fwd"; });
  REQUIRE(k != t.fwd.end());
  return k->work.flops;
}
}  // namespace

TEST_CASE("GPT-OSS 120B: OpenAI's parameter counts from its config.json", "[config][hf][gpt_oss]") {
  const auto m = config::load_model_preset("gpt-oss-120b");
  // Model card: 116.83 B total, 5.13 B active (the input embedding not counted active).
  const auto p = workload::count_parameters(m, 0, workload::padded_vocab_size(m.vocab_size, 1));
  CHECK(p.total / 1e9 == Approx(116.83).epsilon(0.001));
  CHECK((p.active - p.embedding) / 1e9 == Approx(5.13).epsilon(0.002));
  // Alternating sliding (even layers) and full attention, a 128-token window, sinks.
  CHECK(m.sliding_window == 128);
  CHECK(m.sliding_layer.size() == 36);
  CHECK(m.windowed(0));
  CHECK_FALSE(m.windowed(1));
  CHECK(std::count(m.sliding_layer.begin(), m.sliding_layer.end(), true) == 18);
  CHECK(m.attention_sinks);
  CHECK(m.expert_bias);
  const auto small = config::load_model_preset("gpt-oss-20b");
  CHECK(
      workload::count_parameters(small, 0, workload::padded_vocab_size(small.vocab_size, 1)).total /
          1e9 ==
      Approx(20.91).epsilon(0.002));
}

TEST_CASE("A windowed layer's attention runs over its window", "[config][gpt_oss]") {
  const auto sc = load(gpt_oss());
  const auto t = test::build_templates(sc);
  // Full causal: s / 2 keys a query; a window of w: (w s - w (w - 1) / 2) / s.
  const double s = 4096, w = 128;
  CHECK(core_fwd_flops(t.moe_window) / core_fwd_flops(t.moe) ==
        Approx((w - w * (w - 1) / (2 * s)) / (s / 2)));
  // Megatron's FLOPs accounting counts every layer as full causal attention; the windowed
  // half of the layers makes the step faster, not the accounted work smaller.
  auto full = gpt_oss({{"sliding_window", nullptr}});
  const auto a = predict::predict(load(full)), b = predict::predict(sc);
  CHECK(a.flops_per_step == b.flops_per_step);
  CHECK(b.step.step_time_s < a.step.step_time_s);
}

// cuDNN's FP8 backward under a window computes the whole causal triangle (its benchmark
// rows grow as s^2: layer_graph_builder.cpp attention); its forward and BF16 skip the blocks.
TEST_CASE("FP8 attention's backward under a window runs the causal triangle", "[config][gpt_oss]") {
  Json j = gpt_oss();
  j["system"] = "gb200-nvl72";
  j["training"]["precision"] = "mxfp8";
  j["framework"]["fp8_dot_product_attention"] = true;
  const auto t = test::build_templates(load(j));
  const auto& wf = test::kernel(t.moe_window.fwd, "attn.core.fwd");
  const auto& wb = test::kernel(t.moe_window.bwd, "attn.core.bwd");
  const auto& cb = test::kernel(t.moe.bwd, "attn.core.bwd");
  CHECK(wf.work.k == 128);
  CHECK(wb.work.k == 4096);
  CHECK(wb.work.flops == Approx(cb.work.flops));  // the causal layer's work
  CHECK(wb.work.flops > 10 * 2 * wf.work.flops);
  // BF16 attention skips them in both passes.
  j["framework"]["fp8_dot_product_attention"] = false;
  const auto b = test::build_templates(load(j));
  CHECK(test::kernel(b.moe_window.bwd, "attn.core.bwd").work.flops ==
        Approx(2 * test::kernel(b.moe_window.fwd, "attn.core.fwd").work.flops));
  CHECK(test::kernel(b.moe_window.bwd, "attn.core.bwd").work.k == 128);
}

TEST_CASE("Sliding-window fields: modeled or refused, never ignored", "[config][hf][gpt_oss]") {
  const Json mistral = {{"model_type", "mistral"},   {"hidden_size", 1024},
                        {"num_hidden_layers", 4},    {"num_attention_heads", 8},
                        {"intermediate_size", 4096}, {"vocab_size", 32000},
                        {"sliding_window", 256}};
  auto sc = gpt_oss();
  sc["model"] = mistral;
  sc["parallelism"] = {{"tp", 1}, {"pp", 1}};
  sc["framework"] = {{"cuda_graph_scope", Json::array()}};
  // No layer_types: every layer is windowed.
  const auto all = load(sc).model;
  CHECK(std::count(all.sliding_layer.begin(), all.sliding_layer.end(), true) == 4);
  // Qwen2's max_window_layers: the layers from that index on.
  sc["model"]["max_window_layers"] = 3;
  CHECK(load(sc).model.windowed(3));
  CHECK_FALSE(load(sc).model.windowed(2));
  // use_sliding_window false (Qwen2/3) or a null window: none.
  sc["model"]["use_sliding_window"] = false;
  CHECK_FALSE(load(sc).model.any_windowed());
  sc["model"].erase("use_sliding_window");
  sc["model"]["sliding_window"] = nullptr;
  CHECK_FALSE(load(sc).model.any_windowed());
  // Refused: a layer_types list of the wrong length or with an unknown type, context
  // parallelism over windowed layers, a window on MLA, two expert counts that differ.
  sc["model"]["sliding_window"] = 256;
  sc["model"]["layer_types"] = {"sliding_attention", "full_attention"};
  CHECK(test::load_error(sc).path() == "model.layer_types");
  sc["model"]["layer_types"] = {"sliding_attention", "full_attention", "chunked_attention",
                                "full_attention"};
  CHECK(test::load_error(sc).path() == "model.layer_types[2]");
  sc["model"].erase("layer_types");
  sc["parallelism"]["cp"] = 2;
  sc["gpus"] = 2;
  CHECK(test::load_error(sc).path() == "parallelism.cp");
  auto mla = gpt_oss();
  mla["model"] = {{"base", "deepseek-v3"}, {"sliding_window", 128}};
  CHECK(test::load_error(mla).path() == "model.sliding_window");
  CHECK(test::load_error(gpt_oss({{"experts_per_token", 2}})).path() == "model.experts_per_token");
}

// TransformerEngine's all-to-all context parallelism (cp_comm_type a2a; attention.py
// AttnFuncWithCPAndQKVOA2A): q, k and v trade the sequence split for a head split before the
// kernel, the output back after; the kernel runs the whole sequence (or its window). GPT-OSS's
// Bridge recipes set it (recipes/gpt_oss/h100/gpt_oss.py:70 at v0.6.0).
TEST_CASE("All-to-all CP: the exchanges around a whole-sequence attention", "[config][gpt_oss]") {
  Json j = gpt_oss();
  j["parallelism"] = {{"tp", 1}, {"pp", 4}, {"ep", 8}, {"cp", 2}, {"cp_comm_type", "a2a"}};
  j["gpus"] = 128;
  const auto sc = load(j);
  CHECK(sc.parallelism.cp_comm == workload::CpComm::a2a);
  const auto t = test::build_templates(sc);
  // gpt-oss-120b: 64 query and 8 key-value heads of 64; 2048 tokens a rank.
  const double T = 4096.0 / 2, q = T * 64 * 64 * 2, kv = T * 2 * 8 * 64 * 2;
  const auto& f = test::kernel(t.moe_window.fwd, "attn.core.fwd");
  CHECK(f.cp_a2a_in_bytes == Approx(q + kv));
  CHECK(f.cp_a2a_out_bytes == Approx(q));
  CHECK(f.cp_ring_bytes == 0);
  CHECK(f.work.k == 128);  // the window over the whole sequence
  CHECK(test::kernel(t.moe.fwd, "attn.core.fwd").work.k == 4096);
  const auto& b = test::kernel(t.moe_window.bwd, "attn.core.bwd");
  CHECK(b.cp_a2a_in_bytes == Approx(q));  // the output's gradient in, the inputs' out
  CHECK(b.cp_a2a_out_bytes == Approx(q + kv));
  // The ring at the same size prices full attention's exchanges differently.
  Json ring = j;
  ring["parallelism"]["cp_comm_type"] = "p2p";
  ring["model"] = {{"base", "gpt-oss-120b"}, {"sliding_window", nullptr}};
  const auto r = test::build_templates(load(ring));
  CHECK(test::kernel(r.moe.fwd, "attn.core.fwd").cp_a2a_in_bytes == 0);
  CHECK(test::kernel(r.moe.fwd, "attn.core.fwd").cp_ring_bytes == Approx(kv));
  // Refused: a2a at cp 1, on MLA, heads that do not split over cp.
  Json one = gpt_oss();
  one["parallelism"]["cp_comm_type"] = "a2a";
  CHECK(test::load_error(one).path() == "parallelism.cp_comm_type");
  Json mla = j;
  mla["model"] = {{"base", "deepseek-v3"}};
  CHECK(test::load_error(mla).path() == "parallelism.cp_comm_type");
  Json heads = j;
  heads["parallelism"]["tp"] = 8;
  heads["parallelism"]["cp"] = 2;
  heads["gpus"] = 512;
  CHECK(test::load_error(heads).path() == "parallelism.cp_comm_type");  // 8 / 8 kv heads over 2
}

namespace {
// The kernels of `list` named `prefix` ... `suffix` (recomputed forward kernels left out):
// their count and bytes.
std::pair<int, double> kernels(const std::vector<workload::KernelTemplate>& list,
                               const std::string& prefix, const std::string& suffix) {
  int n = 0;
  double bytes = 0;
  for (const auto& k : list)
    if (k.name.starts_with(prefix) && k.name.ends_with(suffix) && !k.recompute) {
      ++n;
      bytes += k.work.bytes;
    }
  return {n, bytes};
}
}  // namespace

TEST_CASE("GPT-OSS on Megatron-Core's eager expert path: the clamp, the fc2 bias, unfused RoPE",
          "[config][gpt_oss]") {
  const auto sc = load(gpt_oss());
  CHECK(sc.model.activation_clamp == 7.0);
  // YaRN factor 32 without mscales: 0.1 ln 32 + 1.
  CHECK(sc.model.rope_concentration == Approx(1.34657).epsilon(1e-5));
  const auto t = test::build_templates(sc);
  // One half of fc1's output (rows x 2880, BF16): the GeGLU reads both and writes one.
  const double half = test::kernel(t.moe.fwd, "moe.act.fwd").work.bytes / 3;
  // The kernels named prefix...suffix: `count` of them, `bytes` in all.
  const auto expect = [](const std::vector<workload::KernelTemplate>& list, const char* prefix,
                         const char* suffix, int count, double bytes) {
    INFO(prefix << suffix);
    const auto [n, b] = kernels(list, prefix, suffix);
    CHECK(n == count);
    CHECK(b == Approx(bytes));
  };
  // Two clamps and the concatenation: 2 + 2 + 4 halves; backward 15 halves in seven kernels.
  expect(t.moe.fwd, "moe.clamp.", ".fwd", 3, 8 * half);
  expect(t.moe.bwd, "moe.clamp.", ".bwd", 7, 15 * half);
  // _apply_bias on fc2's output (rows x 2880, as large as a half): 16 local experts (EP 8),
  // a product and an add each and the concatenation; backward four kernels an expert and one.
  expect(t.moe.fwd, "moe.fc2_bias.", ".fwd", 2 * 16 + 1, 6 * half);
  expect(t.moe.bwd, "moe.fc2_bias.", ".bwd", 4 * 16 + 1, 8 * half);
  // RoPE unfused on q (64 heads of 64) and k (8): 12 and 10 X, six and five kernels each.
  const double x = 4096.0 * (64 + 8) * 64 * 2;
  expect(t.moe.fwd, "attn.rope.", ".fwd", 12, 12 * x);
  expect(t.moe.bwd, "attn.rope.", ".bwd", 10, 10 * x);
  // TransformerEngine's op fuser takes the clamp and the bias into its grouped MLP.
  Json fused = gpt_oss();
  fused["framework"]["te_op_fuser"] = true;
  const auto tf = test::build_templates(load(fused));
  CHECK(kernels(tf.moe.fwd, "moe.clamp.", "").first == 0);
  CHECK(kernels(tf.moe.fwd, "moe.fc2_bias.", "").first == 0);
  // Without YaRN, TE's fused RoPE: one kernel over q and k, 2X each way.
  const auto plain = test::build_templates(load(gpt_oss({{"rope_scaling", nullptr}})));
  CHECK(test::kernel(plain.moe.fwd, "attn.rope.fwd").work.bytes == Approx(2 * x));
  // And each costs time: the eager path's step is slower than the fused one's.
  CHECK(predict::predict(sc).step.step_time_s > predict::predict(load(fused)).step.step_time_s);
}
