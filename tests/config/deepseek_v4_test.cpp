// DeepSeek-V4 (issue #48 item 1): the Hugging Face config.json, Megatron-LM's FLOPs count
// (dev d48bd6be training.py 387-494, 1063-1168), the checkpoint's tensors, the three layer
// kinds' attention and mHC as op graphs, and what the loader refuses.
#include <catch2/catch.hpp>

#include <string>

#include "support/helpers.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
Json v4(const std::string& preset = "deepseek-v4-flash", const Json& framework = Json::object(),
        const Json& model_overrides = Json::object()) {
  Json m = {{"base", preset}};
  m.update(model_overrides);
  Json fw = {{"dispatcher", "hybridep"}, {"cuda_graph_scope", Json::array()}};
  fw.update(framework);
  return {{"name", "v4"},
          {"system", "gb200-nvl72"},
          {"gpus", 64},
          {"model", m},
          {"training",
           {{"seq_length", 4096},
            {"micro_batch_size", 1},
            {"global_batch_size", 64},
            {"precision", "mxfp8"},
            {"mtp_layers", 1}}},
          {"parallelism", {{"ep", 64}}},
          {"framework", fw}};
}

double flops_per_token(const workload::ModelConfig& m) {
  return workload::megatron_flops_per_token(m, {4096, 1, 129280}).total();
}

double fwd_flops(const workload::LayerTemplate& t, const std::string& name) {
  return test::kernel(t.fwd, name).work.flops;
}
}  // namespace

TEST_CASE("DeepSeek-V4: layer kinds from compress_ratios", "[config][hf][deepseek_v4]") {
  const auto flash = config::load_model_preset("deepseek-v4-flash");
  CHECK(flash.is_dsv4());
  CHECK(flash.num_kv_heads == 1);
  CHECK(flash.mixer(0) == workload::Mixer::window);
  CHECK(flash.mixer(2) == workload::Mixer::csa);
  CHECK(flash.mixer(3) == workload::Mixer::hca);
  CHECK(flash.mtp_mixer() == workload::Mixer::window);  // the MTP layer's own ratio, 0
  CHECK(flash.residual_streams() == 4);
  CHECK(flash.dsv4.hash_layers == 3);
  const auto pro = config::load_model_preset("deepseek-v4-pro");
  CHECK(pro.mixer(0) == workload::Mixer::hca);
  CHECK(pro.has_mixer(workload::Mixer::window));  // its MTP layer only
  CHECK(pro.num_moe_layers() == 61);
}

TEST_CASE("DeepSeek-V4's FLOPs per token are Megatron-LM's", "[config][hf][deepseek_v4]") {
  // Megatron-LM dev d48bd6be num_floating_point_operations evaluated by hand at seq 4096,
  // padded vocabulary 129280, one MTP layer (docs/research/deepseek-v4.md 4): Pro 3.2256e11,
  // Flash 9.0781e10. Megatron-Bridge's verification card logs 731.4 TFLOP/s/GPU at 8056.45
  // tokens/s/GPU for Flash on GB200 (examples/model_verification_cards/deepseek-v4-flash/
  // card.yaml at cc59a637): 9.0785e10, 0.05% off.
  CHECK(flops_per_token(config::load_model_preset("deepseek-v4-pro")) ==
        Approx(3.2256e11).epsilon(0.0005));
  CHECK(flops_per_token(config::load_model_preset("deepseek-v4-flash")) ==
        Approx(9.0781e10).epsilon(0.0005));
  CHECK(flops_per_token(config::load_model_preset("deepseek-v4-flash")) ==
        Approx(731.4e12 / 8056.45).epsilon(0.001));
  // The attention term by hand for Flash: projections 44 x [1024 (4096 + 32768 + 1) + 4096 x
  // 512 + 512 + 32768 x 1024 + 8 x 1024 x 4096]; 23 window or HCA layers x 64 x 128 x 512 x 2;
  // 21 CSA layers x 64 x (128 + 384) x 512 x 2 (384 = 512 (1 - 4 x 512 / 8192)); compressors
  // 21 x 4096 x 1024 x 2 + 20 x 4096 x 512 x 2; indexers 21 x (4096 x 256 x 2 + 1024 x 8192 +
  // 4096 x 64); all x 6. The sequence term: 4096 x 6 x (20 x 64 x 512 / 128 + 21 x 64 x 128 / 4).
  const auto f = workload::megatron_flops_per_token(config::load_model_preset("deepseek-v4-flash"),
                                                    {4096, 1, 129280});
  const double proj = 44.0 * (1024.0 * (4096 + 32768 + 1) + 4096.0 * 512 + 512 + 32768.0 * 1024 +
                              8.0 * 1024 * 4096);
  const double lin = proj + 23.0 * 64 * 128 * 512 * 2 + 21.0 * 64 * (128 + 384) * 512 * 2 +
                     21.0 * 4096 * 1024 * 2 + 20.0 * 4096 * 512 * 2 +
                     21.0 * (4096.0 * 256 * 2 + 1024.0 * 8192 + 4096.0 * 64);
  CHECK(f.attn_linear == Approx(6 * lin));
  CHECK(f.attn_core == Approx(4096.0 * 6 * (20.0 * 64 * 512 / 128 + 21.0 * 64 * 128 / 4)));
}

TEST_CASE("DeepSeek-V4's parameters are its checkpoint's tensors", "[config][hf][deepseek_v4]") {
  // Flash's safetensors listing (docs/research/deepseek-v4.md 1.2), the FP4-packed experts at
  // their real shapes: 284.33 B without the MTP layer, 290.94 B with it; Pro 1599 B with it.
  const auto flash = config::load_model_preset("deepseek-v4-flash");
  CHECK(workload::count_parameters(flash, 0, 129280).total == Approx(284.332e9).epsilon(1e-5));
  CHECK(workload::count_parameters(flash, 1, 129280).total == Approx(290.942e9).epsilon(1e-5));
  CHECK(workload::count_parameters(config::load_model_preset("deepseek-v4-pro"), 1, 129280).total ==
        Approx(1599e9).epsilon(0.001));
  // A CSA layer's compressor and indexer: wkv, wgate 1024 x 4096, ape 4 x 1024, norm 512;
  // indexer wq_b 8192 x 1024, weights_proj 64 x 4096, compressor 2 x 256 x 4096 + 4 x 256 + 128.
  CHECK(workload::attention_extra_params(flash, 2) == 2.0 * 1024 * 4096 + 4 * 1024 + 512 +
                                                          8192.0 * 1024 + 64 * 4096 +
                                                          2.0 * 256 * 4096 + 4 * 256 + 128);
  CHECK(workload::attention_extra_params(flash, 3) == 2.0 * 512 * 4096 + 128 * 512 + 512);
  CHECK(workload::attention_extra_params(flash, 0) == 0);
}

TEST_CASE("DeepSeek-V4's attention kernels by layer kind", "[workload][deepseek_v4]") {
  const auto sc = load(v4());
  const auto t = test::build_templates(sc);
  const double T = 4096, nh = 64, d = 512;
  // Sparse MQA: 4 nh d FLOPs a query and key slot. CSA walks its compacted list: the window and
  // the causally visible top-k picks (128 + 384); HCA its padded list (128 + 32 -> 192); the
  // window-only layers 128.
  CHECK(fwd_flops(t.moe_csa, "attn.core.fwd") == Approx(4 * T * (128 + 384) * nh * d));
  CHECK(fwd_flops(t.moe_hca, "attn.core.fwd") == Approx(4 * T * 192 * nh * d));
  CHECK(fwd_flops(t.moe_window, "attn.core.fwd") == Approx(4 * T * 128 * nh * d));
  // Only CSA layers carry the indexer; HCA its compressor of 512.
  CHECK(fwd_flops(t.moe_csa, "attn.indexer.wq_b.fprop") == Approx(2 * T * 1024 * 64 * 128));
  CHECK(fwd_flops(t.moe_hca, "attn.compressor.wkv.fprop") == Approx(2 * T * 4096 * 512));
  CHECK_THROWS(test::kernel(t.moe_hca.fwd, "attn.indexer.wq_b.fprop"));
  CHECK_THROWS(test::kernel(t.moe_window.fwd, "attn.compressor.wkv.fprop"));
  // The indexer's inputs are detached: weight gradients, no input gradients.
  CHECK_NOTHROW(test::kernel(t.moe_csa.bwd, "attn.indexer.wq_b.wgrad"));
  CHECK_THROWS(test::kernel(t.moe_csa.bwd, "attn.indexer.wq_b.dgrad"));
  // wo_a is a BF16 einsum, never MXFP8; wo_b an MXFP8 TE linear.
  CHECK(test::kernel(t.moe_csa.fwd, "attn.o_a.fwd").work.dtype == hw_models::Dtype::bf16);
  CHECK(test::kernel(t.moe_csa.fwd, "attn.o_proj.fprop").work.dtype == hw_models::Dtype::mxfp8);
  // mHC around both sub-blocks: the streams read by the mappings, 4 x T x h x 2 bytes.
  CHECK(test::kernel(t.moe_csa.fwd, "attn.mhc_pre.mappings.0.fwd").work.bytes >= 4 * T * 4096 * 2);
  CHECK_NOTHROW(test::kernel(t.moe_csa.fwd, "mlp.mhc_post.0.fwd"));
}

TEST_CASE("DeepSeek-V4's mHC recompute trades the streams for a re-run",
          "[workload][deepseek_v4]") {
  const auto plain = test::build_templates(load(v4()));
  const auto rec =
      test::build_templates(load(v4("deepseek-v4-flash", {{"recompute_modules", {"mhc"}}})));
  const auto saved = [](const workload::LayerTemplate& t) {
    double s = 0;
    for (const auto& k : t.fwd) s += k.saved_bytes;
    return s;
  };
  // Each sub-block's 4 streams (4 x T x h x 2 bytes) are no longer kept.
  CHECK(saved(plain.moe_hca) - saved(rec.moe_hca) == Approx(2 * 4 * 4096.0 * 4096 * 2));
  CHECK_NOTHROW(test::kernel(rec.moe_hca.bwd, "attn.mhc_pre.aggregate.0.fwd.recompute"));
  CHECK_NOTHROW(test::kernel(rec.moe_hca.bwd, "mlp.mhc_post.0.fwd.recompute"));
  CHECK_THROWS(test::kernel(rec.moe_hca.bwd, "attn.mhc_pre.mappings.0.fwd.recompute"));
}

TEST_CASE("DeepSeek-V4: what the loader refuses", "[config][deepseek_v4]") {
  Json tp = v4();
  tp["parallelism"] = {{"ep", 32}, {"tp", 2}};
  CHECK(test::load_error(tp).path() == "parallelism.tp");
  CHECK(test::load_error(
            v4("deepseek-v4-flash", Json::object(), {{"compress_ratios", Json::array({4})}}))
            .path() == "model.compress_ratios");
  Json ratios = Json::array();
  for (int i = 0; i < 44; ++i) ratios.push_back(i == 5 ? 16 : 4);
  CHECK(test::load_error(v4("deepseek-v4-flash", Json::object(), {{"compress_ratios", ratios}}))
            .path() == "model.compress_ratios[5]");
  CHECK(test::load_error(v4("deepseek-v4-flash", {{"moe_a2a_overlap", true}})).path() ==
        "framework.moe_a2a_overlap");
  Json mtp2 = v4();
  mtp2["training"]["mtp_layers"] = 2;
  CHECK(test::load_error(mtp2).path() == "training.mtp_layers");
  CHECK(test::load_error(v4("deepseek-v4-flash", Json::object(), {{"num_key_value_heads", 2}}))
            .path() == "model.num_key_value_heads");
  // mHC recompute needs mHC.
  const Json v3 = test::patched(test::default_scenario_json(),
                                R"({"framework": {"recompute_modules": ["mhc"]}})");
  CHECK(test::load_error(v3).path() == "framework.recompute_modules[0]");
}
