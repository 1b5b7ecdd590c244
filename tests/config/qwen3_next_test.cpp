// Qwen3-Next (issue #48 item 1): Gated DeltaNet layers beside gated full attention, from
// the Hugging Face config.json; Megatron-LM's FLOPs count and the checkpoint's tensors; the
// GDN mixer's kernels; what the loader refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

#include "support/helpers.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
Json next(const Json& model_overrides = Json::object(), const Json& parallelism = {{"ep", 8}}) {
  Json m = {{"base", "qwen3-next-80b-a3b"}};
  m.update(model_overrides);
  return {{"name", "next"},
          {"system", "b200"},
          {"gpus", 8},
          {"model", m},
          {"training", {{"seq_length", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 64}}},
          {"parallelism", parallelism},
          {"framework", {{"dispatcher", "alltoall"}, {"cuda_graph_scope", Json::array()}}}};
}

using test::build_templates;
using test::kernel;
}  // namespace

TEST_CASE("Qwen3-Next: every fourth layer full attention, the rest Gated DeltaNet",
          "[config][hf][qwen3_next]") {
  const auto m = config::load_model_preset("qwen3-next-80b-a3b");
  CHECK(m.num_linear_layers() == 36);
  CHECK(m.num_attention_layers() == 12);
  CHECK(m.linear(0));
  CHECK_FALSE(m.linear(3));
  CHECK_FALSE(m.linear(47));
  CHECK(m.mixer(2) == workload::Mixer::linear);
  CHECK(m.mixer(3) == workload::Mixer::full);
  CHECK(m.attention_output_gate);
  CHECK(m.shared_expert_gate);
  CHECK(m.gdn.in_proj_width() == 12352);  // q, k 2048 each, v, z 4096 each, b and a 32 each
  // The same layers from transformers' layer_types list.
  Json types = Json::array();
  for (int i = 0; i < 48; ++i) types.push_back(i % 4 == 3 ? "full_attention" : "linear_attention");
  Json listed = next({{"layer_types", types}});
  listed["model"]["full_attention_interval"] = nullptr;  // the preset's, cleared
  const auto l = load(listed).model;
  CHECK(l.linear_layer == m.linear_layer);
  CHECK(l.linear_attention_freq == 0);
}

// Megatron-LM's transformer formula at cd4afffa (training.py 676-790): the 48 layers and
// the MTP layer rebuilt from the interval, so index 48 ((48 + 1) % 4 != 0) counts as Gated
// DeltaNet: 37 GDN and 12 attention layers. Gated attention 6 (h (n d + 2 g d + n d) + n d h)
// and 6 n d s; GDN 6 (h 12352 + 4 (2 x 2048 + 4096) + 4 x 32 x 128^2 + h 4096); MoE 18 h
// (512 x 10 + 512) over 48 layers, the MTP layer's and its 6 (3h + 2h^2); two logit heads.
// 25.080 GF/token at 4096 (docs/research/qwen3next/flops.py, variant MLM_cd4).
TEST_CASE("Qwen3-Next FLOPs follow Megatron-LM's Gated DeltaNet formula", "[workload][flops]") {
  const auto m = config::load_model_preset("qwen3-next-80b-a3b");
  const double h = 2048, V = 151936, s = 4096;
  const auto f = workload::megatron_flops_per_token(m, {4096, 1, 151936});
  const double attn = 6 * (h * (16 * 256 + 2 * 2 * 256 + 16 * 256) + 16 * 256 * h);
  const double gdn = 6 * (h * 12352 + 4 * (2 * 2048 + 4096) + 4 * 32 * 128 * 128 + h * 4096);
  CHECK(f.attn_linear == Approx(12 * attn));
  CHECK(f.attn_core == Approx(12 * 6 * 16 * 256 * s));
  CHECK(f.linear_attn == Approx(37 * gdn));
  CHECK(f.moe_mlp == Approx(48 * 18 * h * (512 * 10 + 512)));
  CHECK(f.logits == Approx(2 * 6 * h * V));
  CHECK(f.total() == Approx(25079549952.0).epsilon(1e-9));
  // Without MTP the pattern covers the 48 layers alone: 36 GDN and 12 attention.
  const auto f0 = workload::megatron_flops_per_token(m, {4096, 0, 151936});
  CHECK(f0.linear_attn == Approx(36 * gdn));
  CHECK(f0.attn_linear == Approx(12 * attn));
}

// The tensors (docs/research/qwen3next/params.py): a GDN mixer 33,720,506 (in_proj with the
// norm's gain, the conv's 8192 x 4 weight, A_log and dt_bias, the output norm's 128, out_proj),
// gated attention 27,265,536 with its q/k norms and input norm; 79.67 B in all, 81.32 B with
// the MTP layer (full attention, the last layer's kind); Qwen's "80B".
TEST_CASE("Qwen3-Next parameters count each layer's mixer", "[workload][params]") {
  const auto m = config::load_model_preset("qwen3-next-80b-a3b");
  const auto lp = workload::layer_parameters(m);
  CHECK(lp.gdn == Approx(33720506.0));
  CHECK(lp.attention == Approx(27265536.0));
  CHECK(workload::count_parameters(m, 0, 151936).total == Approx(79674391296.0).epsilon(1e-12));
  CHECK(workload::count_parameters(m, 1, 151936).total == Approx(81324862720.0).epsilon(1e-12));
}

TEST_CASE("Qwen3.5's language models are as large as their names with the vision tower",
          "[workload][params]") {
  // The presets hold the language models (qwen3_next type, vocabulary 248,320); the names
  // count the checkpoint's vision tower too, 27 layers 1152 wide with the merger out to the
  // model's width: 446.6 M, 451.3 M and 456.0 M (docs/research/vl/qwen-vl-family-notes.md),
  // and leave out the MTP layer.
  const std::vector<std::tuple<std::string, double, double>> models{
      {"qwen3.5-35b-a3b", 446.6e6, 35e9},
      {"qwen3.5-122b-a10b", 451.3e6, 122e9},
      {"qwen3.5-397b-a17b", 456.0e6, 397e9}};
  for (const auto& [name, vision, total] : models) {
    INFO(name);
    const auto m = config::load_model_preset(name);
    CHECK(m.vocab_size == 248320);
    const auto p = workload::count_parameters(m, 0, 248320);
    CHECK((p.total + vision) / total == Approx(1).epsilon(0.01));
  }
}

TEST_CASE("The Gated DeltaNet mixer runs FLA's chunked kernels; two walk the chunks in series",
          "[workload][qwen3_next]") {
  const auto sc = load(next());
  const auto t = build_templates(sc);
  const auto& lin = t.decoder(true, workload::Mixer::linear);
  // in_proj [T, h] x [h, 12352] and out_proj [T, 4096] x [4096, h].
  CHECK(kernel(lin.fwd, "gdn.in_proj.fprop").work.flops == Approx(2.0 * 4096 * 12352 * 2048));
  CHECK(kernel(lin.fwd, "gdn.out_proj.fprop").work.flops == Approx(2.0 * 4096 * 2048 * 4096));
  // One CTA per 64-wide value block, sequence and value head: 2 x 1 x 32.
  CHECK(kernel(lin.fwd, "gdn.chunk.fwd_h.fwd").work.ctas == 64);
  CHECK(kernel(lin.bwd, "gdn.chunk.dhu.bwd").work.ctas == 64);
  CHECK(kernel(lin.fwd, "gdn.chunk.output.fwd").work.ctas == 0);
  // The chunk kernels with FLOPs run at the Gated DeltaNet rate (hw_models/chunk_kernels.hpp).
  CHECK(kernel(lin.fwd, "gdn.chunk.fwd_h.fwd").work.cls == hw_models::KernelClass::delta_rule);
  CHECK(kernel(lin.fwd, "gdn.chunk.fwd_h.fwd").work.flops == Approx(4096.0 * 4 * 32 * 128 * 128));
  CHECK(kernel(lin.fwd, "gdn.chunk.cumsum.fwd").work.cls == hw_models::KernelClass::memory);
  // A gated-attention layer's linear_qkv writes q, the gate, k and v: (16 + 16 + 2 x 2) x 256.
  const auto& full = t.decoder(true, workload::Mixer::full);
  CHECK(kernel(full.fwd, "attn.qkv.fprop").work.flops == Approx(2.0 * 4096 * 9216 * 2048));
  CHECK(kernel(full.fwd, "attn.gate.fwd").work.bytes == Approx(4096.0 * 4096 * 2 * 3));
  CHECK(kernel(full.fwd, "shared.gate.gemv.fwd").work.bytes == Approx(4096.0 * 2048 * 2));
  // Four sequences a microbatch fill four times the CTAs.
  auto more = next();
  more["training"]["micro_batch_size"] = 4;
  const auto t4 = build_templates(load(more));
  CHECK(kernel(t4.decoder(true, workload::Mixer::linear).fwd, "gdn.chunk.fwd_h.fwd").work.ctas ==
        256);
}

// RoPE fusion off: Megatron-Core's unfused path rotates a quarter of each head
// (partial_rotary_factor 0.25) and concatenates the rest back; TE's fused kernel reads and
// writes the whole head either way.
TEST_CASE("Unfused RoPE rotates the partial rotary fraction of each head",
          "[workload][qwen3_next]") {
  CHECK(config::load_model_preset("qwen3-next-80b-a3b").rotary_fraction == 0.25);
  Json j = next();
  j["framework"]["rope_fusion"] = false;
  const auto t = build_templates(load(j));
  const auto& full = t.decoder(true, workload::Mixer::full);
  double fwd = 0, bwd = 0;
  for (const auto& k : full.fwd)
    if (k.name.starts_with("attn.rope.") && !k.recompute) fwd += k.work.bytes;
  for (const auto& k : full.bwd)
    if (k.name.starts_with("attn.rope.")) bwd += k.work.bytes;
  // q: 16 heads, k: 2 heads, of 256, BF16; r = x / 4. Forward: 10 r of rotation and the
  // 2 x concatenation; backward 10 r and the parts' gradients written into one (2 x).
  const double x = 4096.0 * (16 + 2) * 256 * 2, r = x / 4;
  CHECK(fwd == Approx(10 * r + 2 * x));
  CHECK(bwd == Approx(10 * r + 2 * x));
  CHECK_THROWS_AS(load(next({{"partial_rotary_factor", 0}})), config::InputError);
}

TEST_CASE("Qwen3-Next refusals name their reason", "[config][bad_input][qwen3_next]") {
  // TP must divide the GDN heads (Megatron transformer_config.py 1374-1382).
  CHECK_THROWS_WITH(load(next({{"num_key_value_heads", 16},
                               {"linear_num_key_heads", 12},
                               {"linear_num_value_heads", 24}},
                              {{"tp", 8}, {"ep", 1}})),
                    Catch::Contains("Gated DeltaNet layers' 12 key and 24 value heads"));
  CHECK_THROWS_WITH(load(next(Json::object(), {{"cp", 2}, {"ep", 4}})),
                    Catch::Contains("context parallelism with Gated DeltaNet"));
  CHECK_THROWS_WITH(load(next({{"layer_types", Json::array({"full_attention"})}})),
                    Catch::Contains("lists 1 layers"));
  Json types = Json::array();
  for (int i = 0; i < 48; ++i) types.push_back("full_attention");
  CHECK_THROWS_WITH(load(next({{"layer_types", types}})), Catch::Contains("keep one of the two"));
  CHECK_THROWS_WITH(load(next({{"linear_num_value_heads", 20}})),
                    Catch::Contains("do not repeat 16 key heads evenly"));
  CHECK_THROWS_WITH(load(next({{"use_sliding_window", true}})),
                    Catch::Contains("linear-attention model is not modeled"));
  // A system without the Gated DeltaNet rate cannot price the chunk kernels.
  Json bare = next();
  bare["system"] = {{"base", "b200"}, {"efficiency", {{"gdn_chunk_tflops", nullptr}}}};
  CHECK_THROWS_WITH(load(bare), Catch::Contains("no Gated DeltaNet chunk rate"));
}
