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
// only quantized ones); the rest runs in BF16 with FP32 g, A and accumulators. The
// elementwise kernels are priced as HBM traffic, bytes a token, each tensor once per kernel
// that loads or stores it:
//   conv           2 (2 qk + v) x 2              l2norm        2 x 2 qk x 2 + 4 x 2 Hk
//   qk contiguous  2 x 2 qk x 2                  repeat        2 (2 qk + 2 qkr)
//   v, z, b, a     2 (2 v + 2 Hv) x 2            g, beta       2 x 2 Hv + 4 Hv + 2 Hv
//   out norm       2 v x 2                       gate          2 v x 3
// chunk_gated_delta_rule's kernels (cumsum, K K^T, solve_tril, w and u, fwd_h, output, and
// the backward's recompute and gradients) with the bytes and FLOPs of
// hw_models/chunk_kernels.hpp, each at the slower of its bytes and its FLOPs at the GPU's
// fitted Gated DeltaNet rate (hw_models/compute.hpp delta_rule; calibration/measurements/
// gdn-fla-*.json); fwd_h and bwd_dhu walk the chunks one after another with one CTA per
// (64-wide value block, sequence, value head), under one wave at training shapes (64 CTAs
// at one sequence, TP1, against 132-148 SMs), so they run at their CTAs' share of the GPU.
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

  const std::size_t start = b.mark();
  // The norm is in_proj's (a column-parallel LayerNormLinear, fuse_input_layernorm: Megatron-Core
  // experimental_attention_variant_module_specs.py 70-76 at core_v0.19.0), the layer's
  // input_layernorm an IdentityOp: 'layernorm' does not recompute it.
  const std::size_t bwd_start = b.bwd_mark();
  norm(b, s, Module::attn, "gdn.norm", in.stack.norm_quant_fusion, in.framework,
       workload::OffloadTarget::attn_norm, true);
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
  // FLA's chunk function (hw_models/chunk_kernels.hpp gdn_forward, gdn_backward) keeps q, k
  // (repeated), v, g, beta and A for its backward.
  const hw_models::GdnShape shape{hv, K, V, C};
  const auto kernels = [&](const std::vector<hw_models::ChunkKernel>& ks) {
    return LayerBuilder::chunk_call(ks, hw_models::KernelClass::delta_rule, T, seqs);
  };
  b.memory_kernels("gdn.chunk", Module::attn, kernels(hw_models::gdn_forward(shape)),
                   kernels(hw_models::gdn_backward(shape)),
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
  bias_dropout_add(b, in, s, Module::attn, "gdn", bwd_start);
}

}  // namespace moesim::workload::detail
