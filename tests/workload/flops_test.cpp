// Megatron FLOPs accounting against the check values of docs/reference/megatron-flops.md
// (an independent re-implementation matched published tables to within 0.3%), and
// parameter counts against the models' published totals.
#include <catch2/catch.hpp>

#include <filesystem>

#include "config/load.hpp"
#include "support/helpers.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;

namespace {
double gflop_per_token(const std::string& model, std::int64_t mtp) {
  const auto m = config::load_model_preset(model);
  const auto vocab = workload::padded_vocab_size(m.vocab_size, 1);
  return workload::megatron_flops_per_token(m, {4096, mtp, vocab}).total() / 1e9;
}
}  // namespace

TEST_CASE("FLOPs per token match Megatron's accounting at seq 4096", "[workload][flops]") {
  CHECK(gflop_per_token("deepseek-v3", 0) == Approx(249.81).epsilon(0.001));
  CHECK(gflop_per_token("deepseek-v3", 1) == Approx(259.99).epsilon(0.001));
  CHECK(gflop_per_token("qwen3-235b-a22b", 0) == Approx(148.03).epsilon(0.001));
  CHECK(gflop_per_token("qwen3-30b-a3b", 0) == Approx(23.01).epsilon(0.001));
}

TEST_CASE("FLOPs terms for DeepSeek-V3 derived by hand", "[workload][flops]") {
  const auto m = config::load_model_preset("deepseek-v3");
  const auto f = workload::megatron_flops_per_token(m, {4096, 0, 129280});
  // Logits: 6 h V = 6 * 7168 * 129280 = 5.5600e9.
  CHECK(f.logits == Approx(6.0 * 7168 * 129280));
  // Dense MLP: 6 h e F N_dense = 6 * 7168 * 3 * 18432 * 3.
  CHECK(f.dense_mlp == Approx(6.0 * 7168 * 3 * 18432 * 3));
  // MoE: 6 h e (F_moe k + F_shared) N_moe = 6 * 7168 * 3 * (2048 * 8 + 2048) * 58.
  CHECK(f.moe_mlp == Approx(6.0 * 7168 * 3 * (2048 * 8 + 2048) * 58));
  // Core attention: seq * N_attn * 6 * (n (d_nope + d_rope)/2 + n d_v/2)
  //               = 4096 * 61 * 6 * (128 * 192 / 2 + 128 * 128 / 2).
  CHECK(f.attn_core == Approx(4096.0 * 61 * 6 * (128 * 192 / 2 + 128 * 128 / 2)));
  CHECK(f.mtp == 0);
}

TEST_CASE("GQA attention terms follow the closed form", "[workload][flops]") {
  workload::ModelConfig m;
  m.hidden_size = 1024;
  m.num_layers = 2;
  m.num_heads = 8;
  m.num_kv_heads = 2;
  m.head_dim = 128;
  m.ffn_hidden_size = 4096;
  m.moe_layer = {false, false};
  const auto f = workload::megatron_flops_per_token(m, {1000, 0, 32000});
  // A_lin = 6 [h (n d + 2 g d) + n d h] = 6 [1024 (1024 + 512) + 1024 * 1024] per layer.
  CHECK(f.attn_linear == Approx(2 * 6.0 * (1024.0 * (1024 + 512) + 1024.0 * 1024)));
  // A_core = 6 n d per token per unit of sequence length.
  CHECK(f.attn_core == Approx(1000.0 * 2 * 6 * 8 * 128));
  CHECK(f.dense_mlp == Approx(6.0 * 1024 * 3 * 4096 * 2));
}

TEST_CASE("Parameter counts match the published model sizes", "[workload][params]") {
  struct Case {
    const char* model;
    double total_b, active_b, tol;
  };
  // Published: DeepSeek-V3 671B/37B (arXiv 2412.19437), DeepSeek-V2 236B/21B (arXiv
  // 2405.04434), Qwen3 235B/22B and 30.5B/3.3B (Qwen3 model cards), Mixtral 46.7B/12.9B
  // and 141B/39B (Mistral announcements), Llama 3 70.6B (model card).
  const Case cases[] = {{"deepseek-v3", 671, 37, 0.02},     {"deepseek-v2", 236, 21, 0.03},
                        {"qwen3-235b-a22b", 235, 22, 0.03}, {"qwen3-30b-a3b", 30.5, 3.3, 0.03},
                        {"mixtral-8x7b", 46.7, 12.9, 0.02}, {"mixtral-8x22b", 141, 39, 0.02},
                        {"llama3-70b", 70.6, 70.6, 0.01}};
  for (const auto& c : cases) {
    INFO(c.model);
    const auto m = config::load_model_preset(c.model);
    const auto p = workload::count_parameters(m, 0, workload::padded_vocab_size(m.vocab_size, 1));
    CHECK(p.total / 1e9 == Approx(c.total_b).epsilon(c.tol));
    CHECK(p.active / 1e9 == Approx(c.active_b).epsilon(c.tol + 0.02));
  }
}

TEST_CASE("DeepSeek-V3 parameter count is exact to the checkpoint's tensors",
          "[workload][params]") {
  const auto m = config::load_model_preset("deepseek-v3");
  const auto p = workload::count_parameters(m, 0, 129280);
  // Hand sum (see flops.hpp): 671,026,419,200 parameters without the MTP module.
  CHECK(p.total == Approx(671026419200.0).epsilon(1e-12));
  const auto with_mtp = workload::count_parameters(m, 1, 129280);
  // The MTP module adds 11.61 B (HF checkpoint: 685 B including its own copies of the
  // embedding and head, 2 x 0.927 B, which Megatron shares with the main model).
  CHECK((with_mtp.total - p.total) / 1e9 == Approx(11.61).epsilon(0.001));
}

TEST_CASE("Vocabulary padding follows Megatron's divisor x TP", "[workload]") {
  CHECK(workload::padded_vocab_size(129280, 1) == 129280);
  CHECK(workload::padded_vocab_size(50257, 1) == 50304);
  CHECK(workload::padded_vocab_size(50257, 8) == 51200);
}

// Nemotron 3 Nano through Megatron-LM's hybrid formula (training.py 473-547 and 849-899 at
// cd4afffa), each term by hand at seq 8192 and padded vocabulary 131072; the total is the
// one whose ratio to Megatron-Bridge's published TFLOPS / tokens/s is 0.999-1.001 on every
// Nano row (docs/research/nemotron3-hybrid-mamba.md 2, nemotron3/flops.py).
TEST_CASE("A hybrid model's FLOPs follow Megatron's hybrid formula", "[workload][flops]") {
  const auto m = config::load_model_preset("nemotron-3-nano");
  REQUIRE(m.hybrid());
  CHECK(m.count_hybrid(workload::HybridLayer::mamba) == 23);
  CHECK(m.count_hybrid(workload::HybridLayer::attention) == 6);
  CHECK(m.num_moe_layers() == 23);
  CHECK(m.num_dense_layers() == 0);
  const auto f = workload::megatron_flops_per_token(m, {8192, 0, 131072});
  const double h = 2688, d_in = 2 * h;  // Megatron's d_in = 2h, not 64 x 64 = 4096
  // Mamba: 3 N_M [2h (2 d_in + 2 G N + H) + 7 d_in N + 2 d_in h].
  CHECK(f.mamba ==
        Approx(3 * 23 * (2 * h * (2 * d_in + 2 * 8 * 128 + 64) + 7 * d_in * 128 + 2 * d_in * h)));
  CHECK(f.mamba == Approx(7098384384.0));
  // Attention: 12 h d (n + g) a layer, and 6 n d s for the causal core.
  CHECK(f.attn_linear == Approx(6 * 12 * h * 128 * (32 + 2)));
  CHECK(f.attn_core == Approx(6.0 * 6 * 32 * 128 * 8192));
  // MoE without a gate: 12 h (F k + F_shared) a layer.
  CHECK(f.moe_mlp == Approx(23 * 12 * h * (1856 * 6 + 3712)));
  CHECK(f.logits == Approx(6 * h * 131072));
  CHECK(f.mtp == 0);
  CHECK(f.dense_mlp == 0);
  CHECK(f.total() == Approx(22278094848.0).epsilon(1e-9));
}

// Nemotron 3 Nano's tensors: Mamba h + h (2d + 2GN + H) + 5 (d + 2GN) + 3H + d + d h,
// attention h + h (n d + 2 g d) + n d h, MoE h + E h + E + 2 h F_shared + E 2 h F, two
// untied vocabulary tables and the final norm (docs/research/nemotron3/params.py): 31.58B,
// Megatron-Bridge's "30B total, 3.5B active" (docs/models/nemotron/nemotron3-nano.md 2).
TEST_CASE("A hybrid model's parameters count each layer's one mixer", "[workload][params]") {
  const auto m = config::load_model_preset("nemotron-3-nano");
  const auto lp = workload::layer_parameters(m);
  CHECK(lp.mamba == Approx(38744896.0));
  CHECK(lp.attention == Approx(23399040.0));
  const auto p = workload::count_parameters(m, 0, 131072);
  CHECK(p.total == Approx(31577940288.0).epsilon(1e-12));
  CHECK(p.active == Approx(3580076352.0).epsilon(1e-12));
}

namespace {
// A LatentMoE hybrid's Megatron terms at sequence 8192, top-22, two MTP depths and three
// logit heads over a 131072 vocabulary (training.py 849-899 at cd4afffa): each MoE layer
// (the decoder's and the MTP depths') 12 (L F k + h F_shared + h L), each attention layer
// 6 n d s with d 128, and the heads 6 h V.
void check_latent_moe_terms(const workload::FlopsPerToken& f, double h, double L, double F,
                            double F_shared, double moe_layers, double attn_layers, double heads) {
  CHECK(f.moe_mlp == Approx(moe_layers * 12 * (L * F * 22 + h * F_shared + h * L)));
  CHECK(f.attn_core == Approx(attn_layers * 6.0 * heads * 128 * 8192));
  CHECK(f.logits == Approx(3 * 6 * h * 131072));
}
}  // namespace

// Nemotron 3 Super: LatentMoE (routed experts in the 1024-wide latent, 4 T L F k + 4 T h L
// forward) and its MTP block '*E' counted as ordinary layers at each of the recipe's two
// depths, with three logit heads (training.py 849-899 at cd4afffa). 84.727 GF/token at seq
// 8192 is what Megatron-Bridge's published Super rows and its H100 and GB200 cards divide
// to within 0.1% (docs/research/nemotron3-hybrid-mamba.md 2); the tensors, with one MTP
// block reused at every depth, are the verification card's 123,611,033,088 elements.
TEST_CASE("LatentMoE and a hybrid MTP block in FLOPs and parameters", "[workload][flops]") {
  const auto m = config::load_model_preset("nemotron-3-super");
  REQUIRE(m.moe_latent_size == 1024);
  REQUIRE(m.mtp_pattern.size() == 2);
  CHECK(m.mtp_repeated_layer);
  const auto f = workload::megatron_flops_per_token(m, {8192, 2, 131072});
  // 40 + 2 MoE layers, 8 + 2 attention layers of 32 heads.
  check_latent_moe_terms(f, 4096, 1024, 2688, 5376, 42, 10, 32);
  CHECK(f.total() == Approx(84727037952.0).epsilon(1e-9));
  CHECK(workload::megatron_flops_per_token(m, {4096, 2, 131072}).total() ==
        Approx(83720404992.0).epsilon(1e-9));
  const auto p = workload::count_parameters(m, 2, 131072);
  CHECK(p.total == Approx(123611033088.0).epsilon(1e-12));
  // Without MTP the model has 120.67 B.
  CHECK(workload::count_parameters(m, 0, 131072).total == Approx(120.669e9).epsilon(1e-4));
}

// Nemotron 3 Ultra (docs/research/nemotron3/ultra.md): the same formula at h 8192, latent
// 2048, FFN 5120, shared 10240, 48 MoE and 12 attention layers of 64 heads, and the MTP block
// at two depths. Megatron-Bridge's FLOPs formula gives 0.3589 TFLOP a token at 8192 on these
// fields (docs/research/nemotron3/ultra.md 4); 549.3 B parameters without MTP, Bridge's "550B"
// (Megatron-Bridge v0.6.0 docs/models/nemotron/nemotron3-ultra.md 4).
TEST_CASE("Nemotron 3 Ultra's FLOPs and parameters", "[workload][flops]") {
  const auto m = config::load_model_preset("nemotron-3-ultra");
  const auto f = workload::megatron_flops_per_token(m, {8192, 2, 131072});
  // 48 + 2 MoE layers, 12 + 2 attention layers of 64 heads.
  check_latent_moe_terms(f, 8192, 2048, 5120, 10240, 50, 14, 64);
  CHECK(f.total() == Approx(0.3589e12).epsilon(2e-4));
  CHECK(workload::count_parameters(m, 0, 131072).total == Approx(549.3e9).epsilon(1e-3));
}

TEST_CASE("The layer graph's projections do the work Megatron's accounting counts",
          "[workload][flops]") {
  // Every transformer preset (GQA or MLA; hybrid, linear-attention and DeepSeek-V4 layers
  // have their own checks) at TP1 and EP1, the forward GEMMs times 3 for training, per
  // token: the attention block's against Megatron's A_lin (which adds MLA's latent norms,
  // rq + rkv a token: under 0.1%), a dense layer's MLP and an MoE layer's routed and shared
  // experts (top-k of them a token, at even load) against its FFN terms. A projection the
  // graph leaves out fails here (Moonlight's linear_q_proj, before 2026-12-06).
  const auto root = test::source_path("scenarios/models");
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    const std::string name = e.path().stem().string();
    const auto m = config::load_model_preset(name);
    if (m.is_dsv4() || !m.hybrid_layers.empty() || m.num_linear_layers() > 0) continue;
    config::Json j = config::Json::parse(R"({
      "name": "projection-work", "system": "h100", "gpus": 1,
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1,
                   "precision": "bf16", "mtp_layers": 0},
      "framework": {"dispatcher": "alltoall", "cuda_graph_scope": []}
    })");
    j["model"] = name;
    const auto sc = test::load(j);
    const auto t = test::build_templates(sc);
    const auto per_token = [](const workload::LayerTemplate& layer,
                              std::initializer_list<workload::Module> modules) {
      double flops = 0;
      for (const auto& k : layer.fwd)
        if ((k.work.cls == hw_models::KernelClass::gemm ||
             k.work.cls == hw_models::KernelClass::grouped_gemm) &&
            std::find(modules.begin(), modules.end(), k.module) != modules.end())
          flops += k.work.flops;
      return 3 * flops / 4096;
    };
    const double n_moe =
        static_cast<double>(std::count(m.moe_layer.begin(), m.moe_layer.end(), true));
    const double n_dense = static_cast<double>(m.num_layers) - n_moe;
    const auto f = workload::megatron_flops_per_token(
        m, {4096, 0, workload::padded_vocab_size(m.vocab_size, 1)});
    INFO(name);
    CHECK(per_token(n_moe > 0 ? t.moe : t.dense, {workload::Module::attn}) ==
          Approx(f.attn_linear / static_cast<double>(m.num_layers)).epsilon(1e-3));
    if (n_moe > 0)
      CHECK(per_token(t.moe, {workload::Module::experts, workload::Module::shared_expert}) ==
            Approx(f.moe_mlp / n_moe).epsilon(1e-3));
    if (n_dense > 0)
      CHECK(per_token(t.dense, {workload::Module::mlp}) ==
            Approx(f.dense_mlp / n_dense).epsilon(1e-3));
    ++checked;
  }
  CHECK(checked >= 12);
}
