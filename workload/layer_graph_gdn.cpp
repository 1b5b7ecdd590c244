// workload/layer_graph_gdn.cpp: a linear-attention layer's Gated DeltaNet mixer
// (workload/layer_graph_detail.hpp gdn_block), as Megatron-Core runs it in training
// (ssm/gated_delta_net.py forward 344-528, _apply_gated_norm 530-540,
// _prepare_qkv_for_gated_delta_rule 542-581, _compute_g_and_beta 583-591 at cd4afffa) over
// flash-linear-attention's Triton kernels (FLA v0.4.2, the version Megatron-LM's and
// Megatron-Bridge v0.6.0's locks pin; docs/research/qwen3-next.md 3 and
// docs/research/qwen3next/gdn_cost.py, whose kernel list this follows):
//   norm (fused into in_proj's TE LayerNormColumnParallelLinear), in_proj [T, h] x
//   [h, 2 qk + 2 v + 2 Hv] writing q, k, v, the output gate z and the beta and decay logits;
//   the causal depthwise conv1d over q, k, v (SiLU); q and k made contiguous and
//   L2-normalised, repeated from the key heads to the value heads; v, z, b, a made
//   contiguous; g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b);
//   chunk_gated_delta_rule: cumsum of g, K K^T per chunk, its triangular inverse, the WY
//   representation (w, u), the recurrence over the chunks' states (fwd_h, which stores the
//   state of every 64-token chunk), and the output; the per-head RMSNorm of the output,
//   times silu(z); out_proj [T, v] x [v, h], row-parallel.
// Per rank, heads split over TP (Hk = key heads / tp, Hv = value heads / tp; qk = Hk K,
// v = Hv V, qkr = Hv K the repeated q or k). Only in_proj and out_proj are TE GEMMs (the
// only quantized ones); the rest runs in BF16 with FP32 g, A and accumulators at 5-15
// FLOPs a byte, priced as HBM traffic. Bytes a token, each tensor once per kernel that
// loads or stores it (a lower bound: V-blocked grids re-read q, k and w from L2), C = 64:
//   conv           2 (2 qk + v) x 2              l2norm        2 x 2 qk x 2 + 4 x 2 Hk
//   qk contiguous  2 x 2 qk x 2                  repeat        2 (2 qk + 2 qkr)
//   v, z, b, a     2 (2 v + 2 Hv) x 2            g, beta       2 x 2 Hv + 4 Hv + 2 Hv
//   cumsum         4 Hv x 2                      K K^T         2 qkr + 2 Hv + 4 Hv + 4 Hv C
//   solve_tril     4 Hv C + 2 x 2 Hv C           w, u          4 (qkr + v) + 2 Hv C + 6 Hv
//   fwd_h          2 (2 qkr + v) + 4 Hv + 2 Hv K V / C + 2 v   (one state per chunk, BF16)
//   output         2 (2 qkr + v) + 2 Hv K V / C + 4 Hv + 2 v
//   out norm       2 v x 2                       gate          2 v x 3
// and in backward the same kernels' gradients with FLA's recompute of w, u and the states
// (chunk.py chunk_gated_delta_rule_bwd). fwd_h and bwd_dhu walk the chunks one after
// another with one CTA per (64-wide value block, sequence, value head): under one wave at
// training shapes (64 CTAs at one sequence, TP1, against 132-148 SMs), so they stream at
// their CTAs' share of the GPU (hw_models::ComputeWork::ctas). No kernel of this list has
// been timed at these shapes; a GPU run of chunk_gated_delta_rule forward and backward at
// (1-4 sequences, 4096 tokens, 32 heads, 128 x 128) would pin it (research 5).
#include "workload/layer_graph_detail.hpp"

namespace moesim::workload::detail {

void gdn_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& g = in.model.gdn;
  const double hk = static_cast<double>(g.key_heads) / s.tp;
  const double hv = static_cast<double>(g.value_heads) / s.tp;
  const double K = static_cast<double>(g.key_dim), V = static_cast<double>(g.value_dim);
  const double C = static_cast<double>(GdnDims::kChunk);
  const double qk = hk * K, v = hv * V, qkr = hv * K;
  const double conv_ch = 2 * qk + v;
  const double width = static_cast<double>(g.in_proj_width()) / s.tp;
  const double T = s.T;
  const double seqs = static_cast<double>(in.training.micro_batch_size);
  const double serial_ctas = V / 64 * seqs * hv;  // BV = 64

  const std::size_t start = b.mark();
  norm(b, s, Module::attn, "gdn.norm", in.stack.norm_quant_fusion, in.framework,
       workload::OffloadTarget::attn_norm, true);
  if (has(in.framework.recompute_modules, RecomputeModule::layernorm)) b.recompute_since(start);
  b.module_calls_at(start, 2, 0);  // the TransformerLayer and its GatedDeltaNet
  tp_gather(b, s, Module::attn, "gdn", true, SpInput::quantized);
  b.linear("gdn.in_proj", Module::attn, T, width, s.h, true, false);
  sp_saved_shard(b, s);

  using MK = LayerBuilder::MemKernel;
  const double repeat = hv > hk ? 2 * (2 * qk + 2 * qkr) : 0;
  // The conv saves its input view, which keeps the whole in_proj output alive; l2norm keeps
  // q and k and their inverse norms.
  b.memory_kernels("gdn.prep", Module::attn,
                   {{"conv", T * 2 * conv_ch * 2},
                    {"qk_contiguous", T * 2 * 2 * qk * 2},
                    {"l2norm", T * (2 * 2 * qk * 2 + 4 * 2 * hk)},
                    {"repeat", T * repeat},
                    {"vzba_contiguous", T * 2 * (2 * v + 2 * hv) * 2},
                    {"g_beta", T * (2 * 2 * hv + 4 * hv + 2 * hv)}},
                   {{"repeat", T * (repeat > 0 ? 2 * (2 * qkr + 2 * qk) : 0)},
                    {"l2norm", T * 2 * 2 * qk * 3},
                    {"g_beta", T * (2 * 4 * hv + 4 * hv * 2)},
                    {"split", T * 2 * conv_ch * 2},
                    {"conv", T * (2 * conv_ch * 2 + 2 * conv_ch * 4)},
                    {"cat", T * 2 * width * 2}},
                   T * (2 * width + 2 * 2 * qk + 4 * 2 * hk));
  const double state = 2 * hv * K * V / C;  // one BF16 state per chunk, a token's share
  const double w_u = 4 * (qkr + v) + 2 * hv * C + 6 * hv;
  const double fwd_h = 2 * (2 * qkr + v) + 4 * hv + state + 2 * v;
  // FLA's chunk function keeps q, k (repeated), v, g, beta and A for its backward.
  b.memory_kernels("gdn.chunk", Module::attn,
                   {{"cumsum", T * 4 * hv * 2},
                    {"kkt", T * (2 * qkr + 2 * hv + 4 * hv + 4 * hv * C)},
                    {"solve_tril", T * (4 * hv * C + 2 * 2 * hv * C)},
                    {"w_u", T * w_u},
                    {"fwd_h", T * fwd_h, serial_ctas},
                    {"output", T * (2 * (2 * qkr + v) + state + 4 * hv + 2 * v)}},
                   {{"w_u", T * w_u},
                    {"fwd_h", T * fwd_h, serial_ctas},
                    {"dv_local", T * (2 * (2 * qkr + v) + 4 * hv + 2 * v)},
                    {"dhu", T * (2 * (3 * qkr + 2 * v) + 4 * hv + state + 2 * v), serial_ctas},
                    {"dqkwg", T * (2 * (2 * qkr + 3 * v) + 2 * state + 8 * hv + 2 * 3 * qkr)},
                    {"wy_bwd", T * (2 * w_u + 2 * (qkr + v) + 2 * hv + 4 * hv)},
                    {"dg_sums", T * (2 * 3 * qkr + 4 * hv * 9)}},
                   T * (2 * (2 * qkr + v) + 4 * hv + 2 * hv + 2 * hv * C));
  // The per-head norm keeps its input and inverse norms; the gate its two inputs.
  std::vector<MK> out{{"norm", T * 2 * v * 2}, {"gate", T * 2 * v * 3}};
  std::vector<MK> out_bwd{{"gate", T * 2 * v * 5}, {"norm", T * 2 * v * 3}};
  if (seqs > 1) {  // [b, s, v] -> [s, b, v] before out_proj is a real copy
    out.push_back({"transpose", T * 2 * v * 2});
    out_bwd.insert(out_bwd.begin(), {"transpose", T * 2 * v * 2});
  }
  b.memory_kernels("gdn.out", Module::attn, out, out_bwd, T * (2 * v + 4 * hv + 2 * v * 2));
  b.linear("gdn.out_proj", Module::attn, T, s.h, v, true, true);
  tp_scatter(b, s, Module::attn, "gdn");
  hidden_dropout(b, in, s, Module::attn, "gdn");
}

}  // namespace moesim::workload::detail
