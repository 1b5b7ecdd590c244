// Megatron FLOPs accounting against the check values of docs/reference/megatron-flops.md
// (an independent re-implementation matched published tables to within 0.3%), and
// parameter counts against the models' published totals.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "workload/flops.hpp"

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
