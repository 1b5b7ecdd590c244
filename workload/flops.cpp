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
  const double gate = m.attention_output_gate ? n * d : 0;  // training.py 684
  return {6 * (h * (n * d + 2 * g * d + gate) + n * d * h), 6 * n * d};
}

// Megatron's Gated DeltaNet layer, a token (training.py 750-768 at cd4afffa):
// 6 [ h (2 qk + 2 v + 2 Hv) + conv (2 qk + v) + 4 Hv V^2 + h v ].
double gdn_flops(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const auto& g = m.gdn;
  const double qk = static_cast<double>(g.qk()), v = static_cast<double>(g.v());
  const double hv = static_cast<double>(g.value_heads), V = static_cast<double>(g.value_dim);
  return 6 * (h * static_cast<double>(g.in_proj_width()) +
              static_cast<double>(g.conv) * (2 * qk + v) + 4 * hv * V * V + h * v);
}

// One Gated DeltaNet layer's parameters (gated_delta_net.py 139-242): in_proj with the
// pre-norm's gain fused in, the conv's weight over q, k and v (no bias), A_log and dt_bias
// per value head, the output norm's gain (one value head wide) and out_proj.
double gdn_params(const ModelConfig& m) {
  if (m.num_linear_layers() == 0) return 0;
  const double h = static_cast<double>(m.hidden_size);
  const auto& g = m.gdn;
  const double v = static_cast<double>(g.v());
  return h * static_cast<double>(g.in_proj_width()) + h +
         static_cast<double>(g.conv * (2 * g.qk() + g.v())) +
         2 * static_cast<double>(g.value_heads) + static_cast<double>(g.value_dim) + v * h;
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
  const double gate = m.attention_output_gate ? h * n * d : 0;
  return h * n * d + 2 * h * g * d + n * d * h + qk_norm + h + bias + sinks + gate;
}

// An FFN of intermediate size f (gate and up stacked under SwiGLU), with its biases
// (the stacked FC1's and FC2's) where the model has them.
// `width`: the FFN's input and output size (0: hidden; a latent MoE's experts: the latent).
double ffn_params(const ModelConfig& m, std::int64_t f, bool bias, std::int64_t width = 0) {
  const double h = static_cast<double>(width > 0 ? width : m.hidden_size);
  const double e = static_cast<double>(m.ffn_matrices());
  const double ff = static_cast<double>(f);
  return e * h * ff + (bias && f > 0 ? (e - 1) * ff + h : 0);
}

// The router: an h x E projection, a bias where the model has one (GPT-OSS) and the
// score-correction bias of sigmoid routers (DeepSeek-V3).
double router_params(const ModelConfig& m) {
  const double experts = static_cast<double>(m.num_experts);
  return static_cast<double>(m.hidden_size) * experts +
         (m.router_scoring == "sigmoid" || m.router_bias ? experts : 0) +
         (m.shared_expert_gate ? static_cast<double>(m.hidden_size) : 0);  // w_g, with the router
}

// LatentMoE's two projections, h -> latent and back (no biases).
double latent_params(const ModelConfig& m) {
  return 2 * static_cast<double>(m.hidden_size) * static_cast<double>(m.moe_latent_size);
}

// One Mamba-2 layer's parameters (Megatron-Core ssm/mamba_mixer.py): in_proj h x
// (2d + 2GN + H) with the pre-norm's gain fused in (h), the depthwise conv's weight and
// bias over x, B and C ((d + 2GN)(conv + 1)), dt_bias, A_log and D (H each), the gated
// RMSNorm's gain (d) and out_proj d x h; no linear biases (Nemotron-H use_bias false).
double mamba_params(const ModelConfig& m) {
  if (!m.hybrid()) return 0;
  const double h = static_cast<double>(m.hidden_size);
  const auto& x = m.mamba;
  const double d = static_cast<double>(x.d_inner());
  const double gn = static_cast<double>(x.groups * x.state);
  const double heads = static_cast<double>(x.heads);
  return h * static_cast<double>(x.in_proj_width()) + h +
         (d + 2 * gn) * static_cast<double>(x.conv + 1) + 3 * heads + d + d * h;
}

}  // namespace

FlopsPerToken megatron_flops_per_token(const ModelConfig& m, const FlopsQuery& q) {
  if (m.hybrid()) return hybrid_flops_per_token(m, q);
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.ffn_matrices());
  const double M = static_cast<double>(q.mtp_layers);
  const double n_moe = static_cast<double>(m.num_moe_layers());
  const double n_dense = static_cast<double>(m.num_dense_layers());
  // Linear-attention layers: Megatron rebuilds the pattern over the MTP layers too, from
  // the interval (training.py 714-719: layer i is full attention iff (i + 1) % N == 0, so an
  // MTP layer may count as Gated DeltaNet whatever it runs); from a list, moesim counts the
  // MTP layers as the last decoder layer's kind (Megatron-LM asserts the list covers them;
  // Megatron-Bridge v0.6.0 flop_utils.py 1105-1109 does this).
  double n_linear = 0;
  if (m.num_linear_layers() > 0)
    for (std::int64_t i = 0; i < m.num_layers + q.mtp_layers; ++i)
      n_linear += m.linear_attention_freq > 0 ? ((i + 1) % m.linear_attention_freq != 0)
                                              : m.linear(std::min(i, m.num_layers - 1));
  const double n_attn = static_cast<double>(m.num_layers) + M - n_linear;
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
  f.linear_attn = n_linear * gdn_flops(m);
  return f;
}

FlopsPerToken hybrid_flops_per_token(const ModelConfig& m, const FlopsQuery& q) {
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.ffn_matrices());
  const auto count = [&](HybridLayer k) { return static_cast<double>(m.count_hybrid(k)); };
  const double d_in = 2 * h;  // training.py 478, whatever heads x head_dim is
  const double gn = static_cast<double>(m.mamba.groups * m.mamba.state);
  const double state = static_cast<double>(m.mamba.state);
  const double mamba_fwd = 2 * h * (2 * d_in + 2 * gn + static_cast<double>(m.mamba.heads)) +
                           7 * d_in * state + 2 * d_in * h;
  const AttnTerms a = attention_terms(m);
  // Routed experts in the latent width L under LatentMoE, plus its two projections
  // (4 T L F k f + 4 T h L forward, training.py's hybrid MoE term).
  const double lat = static_cast<double>(m.moe_latent_size);
  const double routed = static_cast<double>(m.moe_ffn_hidden_size * m.topk);
  const double moe_layer = 6 * e *
                               (static_cast<double>(m.expert_width()) * routed +
                                h * static_cast<double>(m.shared_expert_ffn_hidden_size)) +
                           12 * h * lat;
  // MTP layers count as ordinary layers of their pattern, once per depth (no eh_proj term).
  const double depths = static_cast<double>(q.mtp_layers);
  const auto in_mtp = [&](HybridLayer k) {
    return depths * static_cast<double>(std::count(m.mtp_pattern.begin(), m.mtp_pattern.end(), k));
  };
  const auto layers = [&](HybridLayer k) { return count(k) + in_mtp(k); };
  FlopsPerToken f;
  f.mamba = 3 * layers(HybridLayer::mamba) * mamba_fwd;
  f.attn_linear = layers(HybridLayer::attention) * a.linear;
  f.attn_core = static_cast<double>(q.seq_length) * layers(HybridLayer::attention) * a.core;
  f.moe_mlp = moe_layer * layers(HybridLayer::moe);
  f.dense_mlp = 6 * h * e * static_cast<double>(m.ffn_hidden_size) * layers(HybridLayer::mlp);
  f.logits = 6 * h * static_cast<double>(q.padded_vocab) * (static_cast<double>(q.mtp_layers) + 1);
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
    const double out_gate = m.attention_output_gate ? n : 0;
    l.attention = ns(h, (n + out_gate + 2 * g) * d) + ns(n * d, h);
  }
  if (m.num_linear_layers() > 0)
    l.gdn =
        ns(h, static_cast<double>(m.gdn.in_proj_width())) + ns(static_cast<double>(m.gdn.v()), h);
  const auto ffn = [&](std::int64_t f, double w) {
    return f > 0 ? ns(w, gate * static_cast<double>(f)) + ns(static_cast<double>(f), w) : 0.0;
  };
  const double lat = static_cast<double>(m.moe_latent_size);
  l.dense_mlp = ffn(m.ffn_hidden_size, h);
  l.expert = ffn(m.moe_ffn_hidden_size, static_cast<double>(m.expert_width()));
  if (m.hybrid()) {
    const double d = static_cast<double>(m.mamba.d_inner());
    l.mamba = ns(h, static_cast<double>(m.mamba.in_proj_width())) + ns(d, h);
  }
  l.moe_common = ns(static_cast<double>(m.num_experts), h) +
                 ffn(m.shared_expert_ffn_hidden_size, h) + (lat > 0 ? 2 * ns(h, lat) : 0.0);
  return l;
}

LayerParams layer_parameters(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  LayerParams l;
  l.attention = attention_params(m);
  l.dense_mlp = ffn_params(m, m.ffn_hidden_size, m.mlp_bias) + h;
  l.expert = ffn_params(m, m.moe_ffn_hidden_size, m.expert_bias, m.expert_width());
  l.moe_common = router_params(m) + ffn_params(m, m.shared_expert_ffn_hidden_size, m.expert_bias) +
                 h + latent_params(m);
  l.mamba = mamba_params(m);
  l.gdn = gdn_params(m);
  return l;
}

ParamCounts count_parameters(const ModelConfig& m, std::int64_t mtp_layers,
                             std::int64_t padded_vocab) {
  const double h = static_cast<double>(m.hidden_size);
  const double experts = static_cast<double>(m.num_experts);
  const double expert = ffn_params(m, m.moe_ffn_hidden_size, m.expert_bias, m.expert_width());
  const double shared = ffn_params(m, m.shared_expert_ffn_hidden_size, m.expert_bias);
  const double router = router_params(m) + latent_params(m);  // with LatentMoE's projections
  const double dense = ffn_params(m, m.ffn_hidden_size, m.mlp_bias);
  const double attn = attention_params(m);

  ParamCounts p;
  p.output_head = m.tie_word_embeddings ? 0 : static_cast<double>(padded_vocab) * h;
  p.embedding = static_cast<double>(padded_vocab + m.learned_positions) * h;
  p.attention = attn * static_cast<double>(m.num_attention_layers());
  // The pre-FFN norm of each layer (a hybrid model's layers have one norm each: its MoE
  // and MLP layers' here, its attention and Mamba layers' with their mixer) and the final
  // norm.
  p.norms = h * static_cast<double>(m.hybrid() ? m.num_moe_layers() + m.num_dense_layers()
                                               : m.num_layers) +
            h;
  p.mamba = mamba_params(m) * static_cast<double>(m.count_hybrid(HybridLayer::mamba));
  p.linear_attention = gdn_params(m) * static_cast<double>(m.num_linear_layers());
  p.dense_mlp = dense * static_cast<double>(m.num_dense_layers());
  const double n_moe = static_cast<double>(m.num_moe_layers());
  p.routed_experts = expert * experts * n_moe;
  p.shared_experts = shared * n_moe;
  p.routers = router * n_moe;
  // One MTP module: two input norms, the 2h -> h projection, one decoder layer, its
  // output norm; embedding and output head are shared with the main model.
  // A hybrid model's module holds its MTP pattern's layers, each with its own norm; with
  // mtp_repeated_layer one module serves every depth.
  const double mtp_ffn = m.mtp_is_moe() ? expert * experts + shared + router : dense;
  const double mtp_mixer = m.linear(m.num_layers - 1) ? gdn_params(m) : attn;
  double mtp_module = 2 * h + 2 * h * h + mtp_mixer + h + mtp_ffn + h;
  double mtp_moe_layers = m.mtp_is_moe() ? 1 : 0;
  if (m.hybrid()) {
    mtp_module = 2 * h + 2 * h * h + h;
    mtp_moe_layers = 0;
    for (const HybridLayer k : m.mtp_pattern) {
      mtp_module += k == HybridLayer::mamba       ? mamba_params(m)
                    : k == HybridLayer::attention ? attn
                    : k == HybridLayer::moe       ? expert * experts + shared + router + h
                                                  : dense + h;
      mtp_moe_layers += k == HybridLayer::moe ? 1 : 0;
    }
  }
  const double modules = m.hybrid() && m.mtp_repeated_layer
                             ? std::min<double>(1, static_cast<double>(mtp_layers))
                             : static_cast<double>(mtp_layers);
  p.mtp = mtp_module * modules;

  const double common = p.embedding + p.output_head + p.attention + p.norms + p.dense_mlp +
                        p.shared_experts + p.routers + p.mamba + p.linear_attention;
  p.total = common + p.routed_experts + p.mtp;
  const double topk = static_cast<double>(m.topk);
  const double mtp_active = p.mtp - expert * (experts - topk) * mtp_moe_layers * modules;
  p.active = common + expert * topk * n_moe + mtp_active;
  return p;
}

}  // namespace moesim::workload
