// workload/layer_graph_dsv4.cpp: DeepSeek-V4's decoder layer parts (workload/
// layer_graph_detail.hpp): the attention block of its three layer kinds and mHC, the
// hyper-connections around each sub-block, as Megatron-LM's dev branch runs them at
// d48bd6be (--experimental-attention-variant dsv4_hybrid, --use-fused-mhc; TP 1, the loader
// refuses more). docs/research/deepseek-v4.md 2 and 5 list the kernels with their sources;
// docs/research/deepseek-v4-kernels.md the traffic of each (Th below: T x h x 1 byte). Shapes: T
// tokens of the micro-batch, h hidden, nh query heads, d = head_dim (512) for q, the one shared
// key=value head and the output, r_q the q LoRA rank, g output groups of rank r_o, H_I x d_I the
// indexer's heads, w the window, n the residual streams.
#include "workload/layer_graph_detail.hpp"

#include <cmath>

#include "workload/flops.hpp"

namespace moesim::workload::detail {
namespace {

// The key slots a query's sparse attention walks (FlashMLA's flash_mla_sparse_fwd forward,
// cuDNN's DSA backward; csa_utils/fused_sparse_attention.py 110-151: the index list padded
// to a multiple of 64 with -1, masked inside the tiles). Ratio 4 compacts the list and passes
// its valid length (1478-1482, 1522-1535), so the kernels walk the valid slots: on average
// the window's w plus the causally visible top-k picks, k4 (1 - 4 k4 / 2s) with
// k4 = min(topk, s / 4), which is Megatron's own count (training.py 467-468). The window-only
// and ratio-r layers pass no length (csa.py 1936-1962): their padded lists, w and
// w + s / r rounded up to 64, are walked whole.
double sparse_slots(const ModelConfig& m, std::int64_t ratio, double seq) {
  const double w = static_cast<double>(m.dsv4.window);
  if (ratio == 4) return w + dsv4_visible_picks(m, seq);
  const double extra = ratio > 0 ? std::floor(seq / static_cast<double>(ratio)) : 0;
  return std::ceil((w + extra) / 64) * 64;
}

// A compressor (csa.py Compressor 1001-1193, its eager path: the fused cuDNN compressor
// serves only packed sequences on compute capability 10.0, fused_compressor.py 74, 221):
// wkv and wgate, BF16 GEMMs with FP8 disabled (1060-1064, 1159-1164), `width` outputs each
// (2 d_c for ratio 4's overlapping windows); then the pooling in eager PyTorch: the FP32
// score plus the positional bias (ape is an FP32 parameter, 1173), ratio 4's overlap
// transforms, the softmax, the weighted sum, the pooled rows' RMSNorm and RoPE, about eight
// kernels moving some 24 T `width` bytes (the FP32 scores dominate), and twice that over about
// twelve in backward. `detached`: the indexer's compressor, whose input takes no gradient.
void compressor(LayerBuilder& b, const Shapes& s, const std::string& name, double width,
                double pooled_width, double ratio, bool detached) {
  b.linear(name + ".wkv", Module::attn, s.T, width, s.h, false, false);
  if (detached) b.drop_last_dgrad();
  b.linear(name + ".wgate", Module::attn, s.T, width, s.h, false, false);
  if (detached) b.drop_last_dgrad();
  const double traffic = 24 * s.T * width;
  b.memory_kernels(name + ".pool", Module::attn, std::vector<double>(8, traffic / 8),
                   std::vector<double>(12, 2 * traffic / 12),
                   s.T / ratio * pooled_width * 2 + 2 * s.T * width * 4);
}

}  // namespace

// mHC before a sub-block, fused (hyper_connection.py 590-665, fused_mhc_kernels.py): the
// streams' projection to n^2 + 2n mixing logits with their RMS ([T, n h] x [n h, n^2 + 2n],
// TF32 on an FP32 weight, memory-bound: it reads the n BF16 streams, 1459-1505), the
// coefficients and the Sinkhorn projection of the n x n mix (small: T (n^2 + 2n) FP32 values,
// 229-258, 1517-1614), and the aggregate of the streams into the sub-block's input (reads n
// streams, writes one, 411-446). Backward: the aggregate's gradient (reads the output's
// gradient and the streams, writes their gradient, 1076-1095), Sinkhorn's, the projection's
// input and weight gradients (reads the streams, writes their gradient, 2385-2632), and the
// sum of the three stream gradients (reads three, writes one; hyper_connection.py 161-190).
// Keeps the streams (n x BF16). recompute_modules 'mhc' (transformer_block.py 955-964,
// random.py 899-975) drops the aggregate's output and the streams and re-runs the aggregate
// (and, from mhc_post, the post kernel) before backward; the projection and Sinkhorn are
// not re-run.
void mhc_pre(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, const std::string& name,
             Module mod) {
  const double n = static_cast<double>(in.model.dsv4.hc_mult);
  const double x = s.Tn * s.h * 2;  // one stream, BF16
  const double logits = s.Tn * (n * n + 2 * n) * 4;
  const bool recompute = has(in.framework.recompute_modules, RecomputeModule::mhc);
  b.memory_kernels(name + ".mappings", mod, std::vector<double>{n * x + logits, 2 * logits},
                   std::vector<double>{2 * logits, n * x + logits + n * x}, recompute ? 0 : n * x);
  const std::size_t aggregate = b.mark();
  b.memory_kernels(name + ".aggregate", mod, std::vector<double>{n * x + x},
                   std::vector<double>{x + n * x + n * x, 3 * n * x + n * x});
  if (recompute) b.recompute_since(aggregate, LayerBuilder::Checkpoint::without_output);
}

// mHC after a sub-block (hyper_connection.py 712-904, fused_mhc_kernels.py 488-762): one
// kernel mixes the streams by the n x n matrix and adds the sub-block's output expanded into
// them (reads n streams and the output, writes n streams); backward two kernels: the
// gradients of the output and of the streams (reads the streams' gradient, writes both),
// and of the mixing coefficients (reads the gradient, the streams and the output). Keeps
// the sub-block's output (the streams are mhc_pre's). Re-run under 'mhc'.
void mhc_post(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, const std::string& name,
              Module mod) {
  const double n = static_cast<double>(in.model.dsv4.hc_mult);
  const double x = s.Tn * s.h * 2;
  const std::size_t start = b.mark();
  b.memory_kernels(name, mod, std::vector<double>{(2 * n + 1) * x},
                   std::vector<double>{n * x + x + n * x, n * x + n * x + x}, x);
  if (has(in.framework.recompute_modules, RecomputeModule::mhc))
    b.recompute_since(start, LayerBuilder::Checkpoint::without_output);
}

void dsv4_attention_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Mixer mixer) {
  const auto& m = in.model;
  const auto& x = m.dsv4;
  const auto& rc = in.framework.recompute_modules;
  const double seq = static_cast<double>(in.training.seq_length);
  const double nh = static_cast<double>(m.num_heads), d = static_cast<double>(m.head_dim);
  const double rq = static_cast<double>(x.q_lora_rank), ro = static_cast<double>(x.o_lora_rank);
  const double g = static_cast<double>(x.o_groups);
  const double hi = static_cast<double>(x.index_heads), di = static_cast<double>(x.index_head_dim);
  const double w = static_cast<double>(x.window);
  const std::int64_t ratio = mixer == Mixer::csa ? 4 : mixer == Mixer::hca ? 128 : 0;
  const double q_elems = s.T * nh * d;
  const std::size_t start = b.mark();
  norm(b, s, Module::attn, "attn.norm", in.stack.norm_quant_fusion, in.framework,
       workload::OffloadTarget::attn_norm);
  if (has(rc, RecomputeModule::layernorm))
    b.recompute_since(start, LayerBuilder::Checkpoint::without_output);
  b.module_calls_at(start, 3, 0);  // the layer, DSv4HybridSelfAttention, its core module
  // q down (TE linear, MXFP8) and its RMSNorm; the single key=value projection with its norm
  // and RoPE (deepseek_v4_hybrid_attention.py 662-768).
  b.linear("attn.q_a", Module::attn, s.T, rq, s.h, true, false);
  offload(b, in.framework, workload::OffloadTarget::qkv_linear);
  b.memory("attn.q_a_norm", Module::attn, s.T * rq * 2 * 2, 1.0, s.T * rq * 2);
  b.module_calls_on_last(1, 1);
  b.linear("attn.kv", Module::attn, s.T, d, s.h, true, false);
  offload(b, in.framework, workload::OffloadTarget::qkv_linear);
  b.memory("attn.kv_norm_rope", Module::attn, s.T * d * 2 * 2, 1.0, s.T * d * 2);
  // q up, then the per-head RMSNorm (no weight; reads and writes all of q) and RoPE in place
  // on the rope dims: what mla_up_proj recompute re-runs before core attention's backward.
  const std::size_t up = b.mark();
  b.linear("attn.q_b", Module::attn, s.T, nh * d, rq, true, true);
  b.memory("attn.q_norm_rope", Module::attn,
           q_elems * 2 * 2 + s.T * nh * static_cast<double>(x.rope_dim) * 2 * 2, 1.0);
  const bool up_recompute =
      has(rc, RecomputeModule::mla_up_proj) || has(rc, RecomputeModule::up_proj);
  if (up_recompute) b.recompute_since(up, LayerBuilder::Checkpoint::without_output);
  const double k4 = dsv4_topk_rows(m, seq);
  if (ratio == 4) {
    compressor(b, s, "attn.compressor", 2 * d, d, 4, false);
    // The lightning indexer (csa.py CSAIndexer 1435-1687; the fused training path
    // fused_sparse_attention.py 1431-1900) on detached inputs (csa.py 2026-2030): wq_b in
    // MXFP8 from the q latent, RoPE and the Hadamard rotation of its q; weights_proj (BF16);
    // its own compressor (2 d_I wide, Hadamard). Backward: weight gradients only, after
    // scaling the indexer's gradients the forward computed and undoing the rotations.
    b.linear("attn.indexer.wq_b", Module::attn, s.T, hi * di, rq, true, true);
    b.drop_last_dgrad();
    b.memory("attn.indexer.q_rotate", Module::attn, s.T * hi * di * 2 * 3, 5.0 / 3,
             s.T * hi * di * 2);
    b.linear("attn.indexer.weights_proj", Module::attn, s.T, hi, s.h, false, false);
    b.drop_last_dgrad();
    compressor(b, s, "attn.indexer.compressor", 2 * di, di, 4, true);
    // The scores of every query against every compressed key (cuDNN's DSA score kernel:
    // H_I heads of d_I, ReLU, head-weighted sum, FP32 out; dense, as Megatron counts it), the
    // radix top-k, the index list's assembly (window indices, offsets) and its compaction.
    b.forward_gemm("attn.indexer.scores", Module::attn, s.T, std::floor(seq / 4), di, hi);
    const double list = s.T * (k4 + w) * 4;
    b.memory_kernels("attn.indexer.topk", Module::attn,
                     std::vector<double>{s.T * std::floor(seq / 4) * 4 + s.T * k4 * 4, 2 * list,
                                         2 * list, 2 * list, 2 * list},
                     std::vector<double>{});
  } else if (ratio > 0) {
    compressor(b, s, "attn.compressor", d, d, static_cast<double>(ratio), false);
  }
  // Sparse MQA over the slots, q's heads sharing one key=value row of d a slot, with the
  // attention sink: QK^T and PV over d for each head and slot. It reads q, the window's and
  // compressed keys and the index list, writes the output and the log-sum-exp, and keeps q
  // (unless mla_up_proj recomputes it), the keys, the list, the output and the statistics.
  const double slots = sparse_slots(m, ratio, seq);
  const double kv = (s.T + (ratio > 0 ? s.T / static_cast<double>(ratio) : 0)) * d * 2;
  const double q_bytes = q_elems * 2, o_bytes = q_elems * 2, lse = s.T * nh * 4;
  const double idx = s.T * slots * 4;
  const std::size_t core = b.mark();
  b.attention("attn.core", Module::attn, 4 * s.T * slots * nh * d,
              q_bytes + kv + idx + o_bytes + lse, 0);
  b.last_fwd().saved_bytes = (up_recompute ? 0 : q_bytes) + kv + idx + o_bytes + lse;
  b.module_calls_on_last(2, 0);
  offload(b, in.framework, workload::OffloadTarget::core_attn);
  if (has(rc, RecomputeModule::core_attn))
    b.recompute_since(core, LayerBuilder::Checkpoint::function);
  if (ratio == 4) {
    // The indexer's sparse KL loss, all in forward (fused_sparse_attention.py 1595-1782; its
    // backward only scales what this computed, 1840-1870): the teacher, the main attention's
    // probabilities over the k4 selected compressed keys recomputed for all heads (QK^T,
    // 2 T nh k4 d, reading q), the loss's elementwise passes over [T, k4] FP32 (about
    // sixteen), and the indexer's own backward (scores again, dq, dk: 3 x 2 T k4 H_I d_I).
    b.attention("attn.indexer.kl_teacher", Module::attn, 2 * s.T * nh * k4 * d,
                q_bytes + s.T * k4 * 4 * 2, 0, 0, false);
    b.memory_kernels("attn.indexer.kl_loss", Module::attn, std::vector<double>(4, 4 * s.T * k4 * 4),
                     std::vector<double>{});
    b.attention("attn.indexer.grads", Module::attn, 3 * 2 * s.T * k4 * hi * di,
                3 * s.T * hi * di * 2 + 2 * s.T * k4 * 4 + s.T * k4 * 4, 0, 0, false,
                KernelClass::attention_bwd);
  }
  // The inverse RoPE on the output, out of place (the output is kept for core attention's
  // backward; deepseek_v4_hybrid_attention.py 400-415); the grouped low-rank output: wo_a a
  // BF16 einsum over g groups of nh d / g -> r_o on a raw parameter (461-469, never FP8),
  // keeping its input; then wo_b, a TE linear (MXFP8) from g r_o to h that keeps its BF16
  // input (set_save_original_input, 205-220).
  b.memory("attn.out_rope", Module::attn, q_elems * 2 * 2);
  b.bmm("attn.o_a", Module::attn, s.T, ro, nh * d / g, g);
  b.last_fwd().saved_bytes = q_elems * 2;
  b.linear("attn.o_proj", Module::attn, s.T, s.h, g * ro, true, true);
  b.last_fwd().saved_bytes = s.T * g * ro * 2;
  offload(b, in.framework, workload::OffloadTarget::attn_proj);
}

}  // namespace moesim::workload::detail
