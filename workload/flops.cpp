#include "workload/flops.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace moesim::workload {
namespace {

struct AttnTerms {
  double linear = 0;  // A_lin
  double core = 0;    // A_core
};

// DeepSeek-V4's attention over all attention layers, MTP's included, a token (Megatron-LM
// dev d48bd6be training.py _dsv4_hybrid_self_attention_flops 387-494, called 1087-1110;
// docs/research/deepseek-v4.md 4): `linear` the x6 token-linear terms, `core` the x6 terms
// that scale with the sequence (times seq in the per-token count). With n0, n4, n128 the
// layers of each compress ratio over the decoder and MTP layers, N = their sum,
//   proj = N [ r_q (h + nh d + 1) + h d + d + nh d r_o + g r_o h ]
//   win  = (n0 + n128) nh w d 2,   csa = n4 nh (w + a4) d 2,
//          a4 = k4 (1 - 4 k4 / 2s), k4 = min(topk, s / 4)  (mean causally visible picks)
//   comp = n4 h 2d 2 + n128 h d 2,  idx = n4 [ h 2 d_I 2 + r_q H_I d_I + h H_I ]
//   core = n128 nh d / 128 + n4 H_I d_I / 4   (HCA's compressed keys, the indexer's scores)
AttnTerms dsv4_attention_terms(const ModelConfig& m, std::int64_t seq, std::int64_t mtp) {
  const auto& x = m.dsv4;
  const double h = static_cast<double>(m.hidden_size), nh = static_cast<double>(m.num_heads);
  const double d = static_cast<double>(m.head_dim), w = static_cast<double>(x.window);
  const double rq = static_cast<double>(x.q_lora_rank), ro = static_cast<double>(x.o_lora_rank);
  const double g = static_cast<double>(x.o_groups);
  const double hi = static_cast<double>(x.index_heads), di = static_cast<double>(x.index_head_dim);
  const double s = static_cast<double>(seq);
  std::array<double, 3> n{};  // layers of ratio 0, 4, 128
  for (std::int64_t i = 0; i < m.num_layers + mtp; ++i) {
    const std::int64_t r =
        m.compress_ratio(std::min<std::int64_t>(i, std::ssize(x.compress_ratios) - 1));
    n[r == 0 ? 0 : r == 4 ? 1 : 2] += 1;
  }
  const double layers = n[0] + n[1] + n[2];
  const double proj = layers * (rq * (h + nh * d + 1) + h * d + d + nh * d * ro + g * ro * h);
  const double a4 = dsv4_visible_picks(m, s);
  const double win = (n[0] + n[2]) * nh * w * d * 2;
  const double csa = n[1] * nh * (w + a4) * d * 2;
  const double comp = n[1] * h * 2 * d * 2 + n[2] * h * d * 2;
  const double idx = n[1] * (h * 2 * di * 2 + rq * hi * di + h * hi);
  return {6 * (proj + win + csa + comp + idx), 6 * (n[2] * nh * d / 128 + n[1] * hi * di / 4)};
}

}  // namespace

double dsv4_topk_rows(const ModelConfig& m, double seq) {
  return std::min(static_cast<double>(m.dsv4.index_topk), std::floor(seq / 4));
}

double dsv4_visible_picks(const ModelConfig& m, double seq) {
  const double k4 = dsv4_topk_rows(m, seq);
  return k4 * (1 - 4 * k4 / (2 * seq));
}

namespace {

AttnTerms attention_terms(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double n = static_cast<double>(m.num_heads);
  if (m.is_dsv4()) return {};  // per layer kind: dsv4_attention_terms
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
  // linear_qkv with the output gate where the model has it (training.py 684).
  return {6 * (h * m.qkv_width() + n * d * h), 6 * n * d};
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

// mHC's parameters around one sub-block (DeepSeek-V4 checkpoints' hc_attn_fn / hc_ffn_fn
// [n^2 + 2n, n h], hc_*_base [n^2 + 2n], hc_*_scale [3]; FP32).
double mhc_params(const ModelConfig& m) {
  const double n = static_cast<double>(m.dsv4.hc_mult);
  return (n * n + 2 * n) * (n * static_cast<double>(m.hidden_size) + 1) + 3;
}

// Parameters of one decoder layer's attention block, its input norm included; for
// DeepSeek-V4 the part every layer has (the checkpoints' attn.wq_a, q_norm, wq_b, wkv,
// kv_norm, wo_a, wo_b, attn_sink, attn_norm) and the layer's two mHC mappings
// (attention_extra_params adds the compressors and the indexer).
double attention_params(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double n = static_cast<double>(m.num_heads);
  if (m.is_dsv4()) {
    const auto& x = m.dsv4;
    const double d = static_cast<double>(m.head_dim), rq = static_cast<double>(x.q_lora_rank);
    const double ro = static_cast<double>(x.o_lora_rank), g = static_cast<double>(x.o_groups);
    return h * rq + rq + rq * n * d + h * d + d + n * d * ro + g * ro * h + n + h +
           2 * mhc_params(m);
  }
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
  return h * m.qkv_width() + n * d * h + qk_norm + h + bias + sinks;
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
         (m.router_scoring != "softmax" || m.router_bias ? experts : 0) +
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

double attention_extra_params(const ModelConfig& m, std::int64_t layer) {
  if (!m.is_dsv4()) return 0;
  const auto& x = m.dsv4;
  const double h = static_cast<double>(m.hidden_size), d = static_cast<double>(m.head_dim);
  const double di = static_cast<double>(x.index_head_dim);
  // A compressor of `width` outputs pooling `ratio` rows (wkv, wgate, ape [ratio, width], the
  // norm of its head size).
  const auto compressor = [&](double width, double ratio, double head) {
    return 2 * width * h + ratio * width + head;
  };
  switch (m.compress_ratio(layer)) {
    case 0:
      return 0;
    case 4:  // overlapping windows: twice the width; the indexer's wq_b, weights_proj, compressor
      return compressor(2 * d, 4, d) +
             static_cast<double>(x.index_heads) * di * static_cast<double>(x.q_lora_rank) +
             static_cast<double>(x.index_heads) * h + compressor(2 * di, 4, di);
    default:
      return compressor(d, static_cast<double>(m.compress_ratio(layer)), d);
  }
}

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
  if (m.is_dsv4()) {  // summed over the layers already
    const AttnTerms v4 = dsv4_attention_terms(m, q.seq_length, q.mtp_layers);
    f.attn_linear = v4.linear;
    f.attn_core = static_cast<double>(q.seq_length) * v4.core;
  } else {
    f.attn_linear = n_attn * a.linear;
    f.attn_core = static_cast<double>(q.seq_length) * n_attn * a.core;
  }
  f.dense_mlp = 6 * h * e * static_cast<double>(m.ffn_hidden_size) * n_dense;
  f.moe_mlp = 6 * h * e * moe_ffn * n_moe;
  f.mtp = 6 * h * e * mtp_ffn * M + 6 * M * (3 * h + 2 * h * h);
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
  if (m.is_dsv4()) {  // the shared projections; wo_a one matrix a group
    const auto& x = m.dsv4;
    const double d = static_cast<double>(m.head_dim), rq = static_cast<double>(x.q_lora_rank);
    const double ro = static_cast<double>(x.o_lora_rank), g = static_cast<double>(x.o_groups);
    l.attention = ns(h, rq) + ns(rq, n * d) + ns(h, d) + g * ns(n * d / g, ro) + ns(g * ro, h);
  } else if (m.attention == AttentionKind::mla) {
    const auto& d = m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank), rkv = static_cast<double>(d.kv_lora_rank);
    l.attention = (d.q_lora_rank > 0 ? ns(h, rq) + ns(rq, n * qk) : ns(h, n * qk)) +
                  ns(h, rkv + static_cast<double>(d.qk_rope_head_dim)) +
                  ns(rkv, n * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim)) +
                  ns(n * static_cast<double>(d.v_head_dim), h);
  } else {
    const double d = static_cast<double>(m.head_dim);
    l.attention = ns(h, m.qkv_width()) + ns(n * d, h);
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
  for (std::int64_t i = 0; i < m.num_layers; ++i) p.attention += attention_extra_params(m, i);
  // The pre-FFN norm of each layer (a hybrid model's layers have one norm each: its MoE
  // and MLP layers' here, its attention and Mamba layers' with their mixer) and the final
  // norm.
  p.norms = h * static_cast<double>(m.hybrid() ? m.num_moe_layers() + m.num_dense_layers()
                                               : m.num_layers) +
            h;
  // DeepSeek-V4's head contraction of the streams (hc_head_fn [n, n h], base, scale).
  const double hc_head =
      m.is_dsv4()
          ? static_cast<double>(m.dsv4.hc_mult) * (static_cast<double>(m.dsv4.hc_mult) * h + 1) + 1
          : 0;
  p.norms += hc_head;
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
  const double mtp_mixer = m.linear(m.num_layers - 1) ? gdn_params(m)
                           : m.is_dsv4() ? attn + attention_extra_params(m, m.num_layers)
                                         : attn;
  double mtp_module = 2 * h + 2 * h * h + mtp_mixer + h + mtp_ffn + h + hc_head;
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
