#include "workload/flops.hpp"

#include <algorithm>

namespace moesim::workload {
namespace {

struct AttnTerms {
  double linear = 0;  // A_lin
  double core = 0;    // A_core
};

AttnTerms attention_terms(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double n = static_cast<double>(m.num_heads);
  if (m.attention == AttentionKind::mla) {
    const auto& d = m.mla;
    const double nope = static_cast<double>(d.qk_nope_head_dim);
    const double rope = static_cast<double>(d.qk_rope_head_dim);
    const double v = static_cast<double>(d.v_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank);
    const double rkv = static_cast<double>(d.kv_lora_rank);
    const double q = d.q_lora_rank > 0 ? rq * (h + n * (nope + rope) + 1) : h * n * (nope + rope);
    return {6 * (q + rkv * (h + n * (nope + v) + 1) + h * rope + n * v * h),
            6 * (n * (nope + rope) / 2 + n * v / 2)};
  }
  const double d = static_cast<double>(m.head_dim);
  const double g = static_cast<double>(m.num_kv_heads);
  return {6 * (h * (n * d + 2 * g * d) + n * d * h), 6 * n * d};
}

// Parameters of one decoder layer's attention block, its input norm included.
double attention_params(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double n = static_cast<double>(m.num_heads);
  if (m.attention == AttentionKind::mla) {
    const auto& d = m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank);
    const double rkv = static_cast<double>(d.kv_lora_rank);
    const double q = d.q_lora_rank > 0 ? h * rq + rq + rq * n * qk : h * n * qk;
    const double kv = h * (rkv + static_cast<double>(d.qk_rope_head_dim)) + rkv +
                      rkv * n * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim);
    const double o = n * static_cast<double>(d.v_head_dim) * h;
    return q + kv + o + h;
  }
  const double d = static_cast<double>(m.head_dim);
  const double g = static_cast<double>(m.num_kv_heads);
  const double qk_norm = m.qk_layernorm ? 2 * d : 0;
  const double bias = m.attention_bias ? (n + 2 * g) * d + h : 0;
  const double sinks = m.attention_sinks ? n : 0;
  return h * n * d + 2 * h * g * d + n * d * h + qk_norm + h + bias + sinks;
}

// An FFN of intermediate size f (gate and up stacked under SwiGLU), with its biases
// (the stacked FC1's and FC2's) where the model has them.
double ffn_params(const ModelConfig& m, std::int64_t f, bool bias) {
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.ffn_matrices());
  const double ff = static_cast<double>(f);
  return e * h * ff + (bias && f > 0 ? (e - 1) * ff + h : 0);
}

// The router: an h x E projection, a bias where the model has one (GPT-OSS) and the
// score-correction bias of sigmoid routers (DeepSeek-V3).
double router_params(const ModelConfig& m) {
  const double experts = static_cast<double>(m.num_experts);
  return static_cast<double>(m.hidden_size) * experts +
         (m.router_scoring == "sigmoid" || m.router_bias ? experts : 0);
}

}  // namespace

FlopsPerToken megatron_flops_per_token(const ModelConfig& m, const FlopsQuery& q) {
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.ffn_matrices());
  const double M = static_cast<double>(q.mtp_layers);
  const double n_moe = static_cast<double>(m.num_moe_layers());
  const double n_dense = static_cast<double>(m.num_dense_layers());
  const double n_attn = static_cast<double>(m.num_layers) + M;
  const double moe_ffn =
      static_cast<double>(m.moe_ffn_hidden_size * m.topk + m.shared_expert_ffn_hidden_size);
  const double mtp_ffn = m.mtp_is_moe() ? moe_ffn : static_cast<double>(m.ffn_hidden_size);
  const AttnTerms a = attention_terms(m);

  FlopsPerToken f;
  f.dense_mlp = 6 * h * e * static_cast<double>(m.ffn_hidden_size) * n_dense;
  f.moe_mlp = 6 * h * e * moe_ffn * n_moe;
  f.mtp = 6 * h * e * mtp_ffn * M + 6 * M * (3 * h + 2 * h * h);
  f.attn_linear = n_attn * a.linear;
  f.attn_core = static_cast<double>(q.seq_length) * n_attn * a.core;
  f.logits = 6 * h * static_cast<double>(q.padded_vocab) * (M + 1);
  return f;
}

double newton_schulz_flops(double rows, double cols) {
  const double a = std::min(rows, cols), b = std::max(rows, cols);
  return 5 * (4 * a * a * b + 2 * a * a * a);
}

LayerParams muon_ns_flops(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double n = static_cast<double>(m.num_heads);
  const double gate = static_cast<double>(m.ffn_matrices() - 1);  // FC1's stacked gate and up
  const auto ns = newton_schulz_flops;
  LayerParams l;
  if (m.attention == AttentionKind::mla) {
    const auto& d = m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank), rkv = static_cast<double>(d.kv_lora_rank);
    l.attention = (d.q_lora_rank > 0 ? ns(h, rq) + ns(rq, n * qk) : ns(h, n * qk)) +
                  ns(h, rkv + static_cast<double>(d.qk_rope_head_dim)) +
                  ns(rkv, n * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim)) +
                  ns(n * static_cast<double>(d.v_head_dim), h);
  } else {
    const double d = static_cast<double>(m.head_dim), g = static_cast<double>(m.num_kv_heads);
    l.attention = ns(h, (n + 2 * g) * d) + ns(n * d, h);
  }
  const auto ffn = [&](std::int64_t f) {
    return f > 0 ? ns(h, gate * static_cast<double>(f)) + ns(static_cast<double>(f), h) : 0.0;
  };
  l.dense_mlp = ffn(m.ffn_hidden_size);
  l.expert = ffn(m.moe_ffn_hidden_size);
  l.moe_common = ns(static_cast<double>(m.num_experts), h) + ffn(m.shared_expert_ffn_hidden_size);
  return l;
}

LayerParams layer_parameters(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  LayerParams l;
  l.attention = attention_params(m);
  l.dense_mlp = ffn_params(m, m.ffn_hidden_size, m.mlp_bias) + h;
  l.expert = ffn_params(m, m.moe_ffn_hidden_size, m.expert_bias);
  l.moe_common =
      router_params(m) + ffn_params(m, m.shared_expert_ffn_hidden_size, m.expert_bias) + h;
  return l;
}

ParamCounts count_parameters(const ModelConfig& m, std::int64_t mtp_layers,
                             std::int64_t padded_vocab) {
  const double h = static_cast<double>(m.hidden_size);
  const double experts = static_cast<double>(m.num_experts);
  const double expert = ffn_params(m, m.moe_ffn_hidden_size, m.expert_bias);
  const double shared = ffn_params(m, m.shared_expert_ffn_hidden_size, m.expert_bias);
  const double router = router_params(m);
  const double dense = ffn_params(m, m.ffn_hidden_size, m.mlp_bias);
  const double attn = attention_params(m);

  ParamCounts p;
  p.output_head = m.tie_word_embeddings ? 0 : static_cast<double>(padded_vocab) * h;
  p.embedding = static_cast<double>(padded_vocab + m.learned_positions) * h;
  p.attention = attn * static_cast<double>(m.num_layers);
  p.norms = h * static_cast<double>(m.num_layers) + h;  // pre-FFN norm per layer + final
  p.dense_mlp = dense * static_cast<double>(m.num_dense_layers());
  const double n_moe = static_cast<double>(m.num_moe_layers());
  p.routed_experts = expert * experts * n_moe;
  p.shared_experts = shared * n_moe;
  p.routers = router * n_moe;
  // One MTP module: two input norms, the 2h -> h projection, one decoder layer, its
  // output norm; embedding and output head are shared with the main model.
  const double mtp_ffn = m.mtp_is_moe() ? expert * experts + shared + router : dense;
  const double mtp_module = 2 * h + 2 * h * h + attn + h + mtp_ffn + h;
  p.mtp = mtp_module * static_cast<double>(mtp_layers);

  const double common = p.embedding + p.output_head + p.attention + p.norms + p.dense_mlp +
                        p.shared_experts + p.routers;
  p.total = common + p.routed_experts + p.mtp;
  const double topk = static_cast<double>(m.topk);
  const double mtp_active =
      m.mtp_is_moe() && experts > 0 ? p.mtp - expert * (experts - topk) * mtp_layers : p.mtp;
  p.active = common + expert * topk * n_moe + mtp_active;
  return p;
}

}  // namespace moesim::workload
