// workload/layer_graph_attention.cpp: a decoder layer's attention block
// (workload/layer_graph_detail.hpp attention_block): its norm, MLA's down- and
// up-projections with their latent norms and RoPE, or GQA's qkv projection, q/k norms and
// RoPE; core attention, fused or TE's unfused path; the output projection; and the
// selective recompute and offloading of its parts.
#include "workload/layer_graph_detail.hpp"

#include <optional>
#include <vector>

namespace moesim::workload::detail {
namespace {

// Core attention of `heads` heads (per rank) with q/k head size `qk` and v head size `v`:
// the fused kernel (`fwd_flops` causal, `bytes` read and kept: q, k, v, the output and
// the softmax statistics), or TE's unfused path (workload::AttentionBackend): two batched
// GEMMs over the whole s x s scores per head (2 x 2 s s (qk + v) per head forward, no
// causal skipping), the softmax between them reading and writing the BF16 scores, and
// the probabilities kept beside what the fused kernel keeps; the scores before the
// softmax and, in backward, their gradient are live one layer at a time.
// `kept`: what the fused kernel keeps for backward, when it differs from `bytes`.
// `window`: a sliding window's keys (0: causal over the whole sequence); the fused
// kernels skip the masked blocks (but cuDNN's FP8 backward: LayerBuilder::attention), the
// unfused path computes every score and masks them.
// `unfused_extra`: bytes the unfused path keeps beyond the fused kernel (GQA: TE repeats k
// and v to every query head before its GEMMs, backends.py UnfusedDotProductAttention).
void core_attention(LayerBuilder& b, const TemplateInputs& in, Module mod, double heads, double qk,
                    double v, double fwd_flops, double bytes, double kv_bytes,
                    std::optional<double> kept = std::nullopt, std::int64_t window = 0,
                    double unfused_extra = 0) {
  if (in.framework.attention_backend == AttentionBackend::fused) {
    b.attention("attn.core", mod, fwd_flops, bytes, kv_bytes, window);
    if (kept) b.last_fwd().saved_bytes = *kept;
    return;
  }
  const double seq = static_cast<double>(in.training.seq_length);
  const double groups = static_cast<double>(in.training.micro_batch_size) * heads;
  const double scores = groups * seq * seq;  // elements of the BF16 scores
  b.bmm("attn.core.scores", mod, seq, seq, qk, groups);
  b.memory("attn.core.softmax", mod, scores * (2 + 2), 1.5);
  // What the whole path keeps sits on its last op, so offloading core_attn moves it.
  b.bmm("attn.core.context", mod, seq, v, seq, groups);
  b.last_fwd().saved_bytes = kept.value_or(bytes) + scores * 2 + unfused_extra;
  b.transient(2 * scores * 2);
}

// Megatron-Core's unfused RoPE on one tensor of `x` bytes (rope_utils.py
// _apply_rotary_pos_emb_bshd 92-125 at d0b3b775), rotating the part `fraction` of each head
// (r = fraction x bytes): t cos (2r), _rotate_half's negation (r) and concatenation (2r), its
// product with sin (2r), the sum (3r), the final concatenation with the unrotated part (2x);
// backward the gradient times cos and times sin (2r each), the negation (r), the halves'
// concatenation (2r) and the two branches' sum (3r), and, with an unrotated part, the two
// parts' gradients written into one (2x). MLA's rotary dimensions are interleaved: the
// rotated part is first de-interleaved (t[..., 0::2] and t[..., 1::2] concatenated, 2r,
// rope_utils.py 115-118), whose backward fills a zero tensor and copies into it for each
// strided slice (r and r each) and sums the two (3r). The sines and cosines are per
// position, not per token and head.
void unfused_rope(std::vector<double>& fwd, std::vector<double>& bwd, double x,
                  double fraction = 1.0, bool mla = false) {
  const double r = fraction * x;
  if (mla) fwd.push_back(2 * r);
  fwd.insert(fwd.end(), {2 * r, r, 2 * r, 2 * r, 3 * r, 2 * x});
  bwd.insert(bwd.end(), {2 * r, 2 * r, r, 2 * r, 3 * r});
  if (fraction < 1) bwd.push_back(2 * x);
  if (mla) bwd.insert(bwd.end(), {r, r, r, r, 3 * r});
}

// A TE column-parallel Linear on an input `width` wide that the rank holds a sequence shard
// of: TE gathers it over TP (quantized first under FP8, with its TP amax) and keeps the shard
// for the weight gradient, regathered then. No userbuffers: they serve qkv, proj, fc1 and fc2
// only (TE module/base.py initialize_ub at d0067d0d 336-358).
void gathered_linear(LayerBuilder& b, const Shapes& s, const std::string& name, double n,
                     double width) {
  const bool quant = tp_gather(b, s, Module::attn, name, false, SpInput::quantize, width);
  b.linear(name, Module::attn, s.T, n, width, true, quant);
  sp_saved_shard(b, s, false);
}

}  // namespace

void attention_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, bool windowed) {
  const auto& m = in.model;
  const auto& rc = in.framework.recompute_modules;
  const double seq = static_cast<double>(in.training.seq_length);
  const double n = static_cast<double>(m.num_heads) / s.tp;
  const bool fused = in.stack.norm_quant_fusion;
  const std::size_t start = b.mark();
  const bool mla = m.attention == AttentionKind::mla;
  const std::size_t bwd_start = b.bwd_mark();
  norm(b, s, Module::attn, "attn.norm", fused, in.framework, workload::OffloadTarget::attn_norm,
       !mla);
  // 'layernorm' recomputes a norm only where it is a module of its own (Megatron-Core
  // transformer_layer.py at core_v0.19.0 445-453: recompute_input_layernorm needs an
  // input_layernorm that is not an IdentityOp): MLA's TENorm. GQA's input norm is fused into
  // linear_qkv, a TELayerNormColumnParallelLinear (gpt_layer_specs.py 313-325,
  // hybrid_layer_specs.py 120-131), and is not recomputed.
  if (mla && has(rc, RecomputeModule::layernorm))
    b.recompute_since(start, LayerBuilder::Checkpoint::without_output);
  // The calls around it without weights of their own (Megatron-Core transformer_layer.py
  // _forward_attention): the TransformerLayer, its (MLA)SelfAttention, and the
  // pre_cross_attn_layernorm and cross_attention IdentityOps a decoder-only layer still calls;
  // on the norm kernel, after its layernorm recompute copy (which calls the norm alone).
  b.module_calls_at(start, 4, 0);
  if (mla) {
    const auto& d = m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double v = static_cast<double>(d.v_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank), rkv = static_cast<double>(d.kv_lora_rank);
    // Megatron-Core from 0.14 (720c8b40d8, 2025-07-29; 25.09 and after; at 99a10812 and
    // d98e8a64 multi_latent_attention.py MLASelfAttention.__init__ and
    // get_query_key_value_tensors): the down-projections are TE Linears in 'duplicated' mode
    // on the rank's own tokens (sequence-split under SP: no gather of the hidden states, no
    // TP amax group, no regather for their weight gradients); the latent norms run on the
    // same tokens; the up-projections are TE column-parallel Linears, which gather their
    // latent input over TP (and regather it for wgrad, sp_saved_shard); k_pe, the rotary
    // part of kv_a's output, is gathered by Megatron itself (gather_from_sequence_parallel_
    // region, BF16). Without a q LoRA (Moonlight) q is one column-parallel Linear on the
    // gathered hidden states (linear_q_proj). These gathers are NCCL's (gathered_linear).
    // Megatron-Core 0.12-0.13 ran the down-projections column-parallel instead (1c425a8313);
    // config::release_warnings says so.
    const double pe = static_cast<double>(d.qk_rope_head_dim);
    if (d.q_lora_rank > 0) {
      b.linear("attn.q_a", Module::attn, s.Tn, rq, s.h, true, false);
      offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    } else {
      gathered_linear(b, s, "attn.q", n * qk, s.h);
      offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    }
    b.linear("attn.kv_a", Module::attn, s.Tn, rkv + pe, s.h, true, false);
    offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    // Unquantized, q's projection and kv_a save the one normed input tensor, the rank's own
    // tokens (autograd keeps references); FP8 linears each save their own quantized copy.
    if (!b.fp8()) b.last_fwd().saved_bytes = 0;
    if (s.sequence_parallel())
      b.comm("attn.k_pe.sp_gather", Module::attn, CommOp::tp_all_gather, CommOp::tp_reduce_scatter,
             s.T * pe * 2);
    // The latent norms, the up-projections (with their gathers) and RoPE: what mla_up_proj
    // recompute re-runs (qkv_up_proj_and_rope_apply under CheckpointWithoutOutput,
    // Megatron-Core 0.13-0.15; from 0.16, 382eeea395, the norms run before it and are kept:
    // config::release_warnings says so).
    const std::size_t up = b.mark();
    if (d.q_lora_rank > 0) {
      b.memory("attn.q_a_norm", Module::attn, s.Tn * rq * 2 * 2, 1.0, s.Tn * rq * 2);
      b.module_calls_on_last(1, 1);
    }
    b.memory("attn.kv_a_norm", Module::attn, s.Tn * rkv * 2 * 2, 1.0, s.Tn * rkv * 2);
    b.module_calls_on_last(1, 1);
    if (d.q_lora_rank > 0) gathered_linear(b, s, "attn.q_b", n * qk, rq);
    gathered_linear(b, s, "attn.kv_b", n * (static_cast<double>(d.qk_nope_head_dim) + v), rkv);
    // Megatron-Core's fused MLA RoPE (fused_mla_yarn_rope_apply.py): one kernel rotates
    // q's rope part in place over all of q; one splits kv_b's output into k (k_nope plus
    // the shared, rotated k_pe broadcast over heads) and v. Backward moves the same bytes.
    const double nope = static_cast<double>(d.qk_nope_head_dim);
    if (in.framework.rope_fusion) {
      b.memory("attn.rope_q", Module::attn, s.T * n * qk * 2 * 2);
      b.memory("attn.rope_kv", Module::attn,
               s.T * (n * (nope + v) + pe) * 2 + s.T * n * (qk + v) * 2);
    } else {
      // Unfused (apply_rope_fusion off; multi_latent_attention.py 895-957 at d0b3b775): q's
      // rotary part and the shared k_pe through the unfused RoPE; torch.cat rebuilds q
      // (reading q_nope and q_pe, writing q) and k (k_nope and k_pe expanded over the heads);
      // value, a strided split of kv_b's output, made contiguous. Backward: the splits of q and
      // of kv_b's output concatenate their gradients back, the expand sums over the heads.
      std::vector<double> fwd, bwd;
      const double q_bytes = s.T * n * qk * 2, k_pe = s.T * pe * 2;
      unfused_rope(fwd, bwd, s.T * n * pe * 2, 1.0, true);
      unfused_rope(fwd, bwd, k_pe, 1.0, true);
      fwd.insert(fwd.end(), {2 * q_bytes, 2 * q_bytes, 2 * s.T * n * v * 2});
      bwd.insert(bwd.end(), {2 * q_bytes, 2 * s.T * n * (nope + v) * 2, s.T * n * pe * 2 + k_pe});
      b.memory_kernels("attn.rope", Module::attn, fwd, bwd);
    }
    // mla_up_proj recompute (Megatron-Core multi_latent_attention.py: the up-projections
    // and RoPE run under CheckpointWithoutOutput, whose output is discarded once core
    // attention has run and recomputed before its backward): the up-projected q, k, v are
    // not kept, so core attention keeps only its output and log-sum-exp.
    const bool up_recompute =
        has(rc, RecomputeModule::mla_up_proj) || has(rc, RecomputeModule::up_proj);
    if (up_recompute) b.recompute_since(up, LayerBuilder::Checkpoint::without_output_quantized);
    // Core attention, causal: forward FLOPs 2 T seq (n qk / 2 + n v / 2) (Megatron).
    // It saves q, k, v and its output o (2 bytes each), o in E5M6 (1.5 bytes) where
    // attn_output is cached low-precision (one copy, which o_proj's weight gradient reads
    // too); plus the log-sum-exp (4 bytes per head and token).
    const bool o_e5m6 =
        has(in.framework.low_precision_activations, workload::LowPrecisionActivation::attn_output);
    const double o_bytes = s.T * n * v * (o_e5m6 ? 1.5 : 2);
    const std::size_t core = b.mark();
    core_attention(b, in, Module::attn, n, qk, v, 2 * s.T * seq * (n * qk / 2 + n * v / 2),
                   (up_recompute ? 0 : s.T * n * (2 * qk + v) * 2) + o_bytes + s.T * n * 4,
                   s.T * n * (qk + v) * 2);
    b.module_calls_on_last(2, 0);  // TE's DotProductAttention and the backend module it calls
    offload(b, in.framework, workload::OffloadTarget::core_attn);
    const bool core_recompute = has(rc, RecomputeModule::core_attn);
    if (core_recompute) b.recompute_since(core, LayerBuilder::Checkpoint::function);
    b.linear("attn.o_proj", Module::attn, s.T, s.h, n * v, true, true);
    offload(b, in.framework, workload::OffloadTarget::attn_proj);
    // o_proj's saved input is core attention's saved output: unquantized, or the E5M6 cache.
    if (!core_recompute && (o_e5m6 || !b.fp8())) b.last_fwd().saved_bytes = 0;
  } else {
    tp_gather(b, s, Module::attn, "attn", true, SpInput::quantized);
    const double d = static_cast<double>(m.head_dim);
    const double g = static_cast<double>(m.num_kv_heads) / s.tp;
    // linear_qkv's TP shard (gated attention: with the gate, n heads wide).
    const double qkv = m.qkv_width() / s.tp;
    b.linear("attn.qkv", Module::attn, s.T, qkv, s.h, true, false);
    sp_saved_shard(b, s);
    offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    lora_adapter(b, in, s, Module::attn, workload::LoraTarget::linear_qkv, "attn.qkv", qkv);
    // Qwen3's per-head RMSNorms of q and k (--qk-layernorm: SelfAttention's q_layernorm and
    // k_layernorm, TENorm modules, get_query_key_value_tensors in attention.py): one kernel
    // each; each keeps its input for backward.
    if (m.qk_layernorm) {
      b.memory("attn.q_norm", Module::attn, s.T * n * d * 2 * 2, 1.0, s.T * n * d * 2);
      b.module_calls_on_last(1, 1);
      b.memory("attn.k_norm", Module::attn, s.T * g * d * 2 * 2, 1.0, s.T * g * d * 2);
      b.module_calls_on_last(1, 1);
    }
    if (m.learned_positions == 0 && m.rope) {
      // TE's fused kernel, unless RoPE fusion is off or YaRN's concentration factor is not 1:
      // Megatron-Core then applies it unfused (rope_utils.py apply_rotary_pos_emb 268-287 at
      // d0b3b775: TE's fused kernel has no mscale), to q and to k.
      if (m.rope_concentration == 1.0 && in.framework.rope_fusion) {
        b.memory("attn.rope", Module::attn, s.T * (n + g) * d * 2 * 2);
      } else {
        std::vector<double> fwd, bwd;
        for (const double x : {s.T * n * d * 2, s.T * g * d * 2})
          unfused_rope(fwd, bwd, x, m.rotary_fraction);
        b.memory_kernels("attn.rope", Module::attn, fwd, bwd);
      }
    }
    const std::size_t core = b.mark();
    // TE's DotProductAttention keeps q, k, v, its output and the softmax statistics
    // (ctx.save_for_backward(q, k, v, out, aux_ctx_tensors): 4 bytes a head and token).
    const double kept = s.T * (2 * n + 2 * g) * d * 2 + s.T * n * 4;
    // Keys per query: s / 2 causal; under a window w < s, (w s - w (w - 1) / 2) / s.
    const double w = windowed ? static_cast<double>(m.sliding_window) : seq;
    const double keys = w < seq ? w - w * (w - 1) / (2 * seq) : seq / 2;
    core_attention(b, in, Module::attn, n, d, d, 4 * s.T * keys * n * d,
                   s.T * (n + 2 * g) * d * 2 * 2, s.T * 2 * g * d * 2, kept,
                   windowed ? m.sliding_window : 0, s.T * 2 * (n - g) * d * 2);
    // CP's all-to-alls (cp_comm a2a; fused attention only, the loader refuses the rest): the
    // rank's q, k and v in, its output back.
    b.cp_all_to_all_last(s.T * (n + 2 * g) * d * 2, s.T * n * d * 2);
    b.module_calls_on_last(2, 0);  // TE's DotProductAttention and the backend module it calls
    offload(b, in.framework, workload::OffloadTarget::core_attn);
    const bool core_recompute = has(rc, RecomputeModule::core_attn);
    if (core_recompute) b.recompute_since(core, LayerBuilder::Checkpoint::function);
    // The output gate (attention.py 1605-1609): output x sigmoid(gate) in FP32, cast back,
    // one fused elementwise kernel reading both and writing the product; it keeps the gate
    // (the output is core attention's); backward reads the gradient and both inputs and
    // writes both gradients.
    if (m.attention_output_gate)
      b.memory("attn.gate", Module::attn, s.T * n * d * 2 * 3, 5.0 / 3, s.T * n * d * 2);
    b.linear("attn.o_proj", Module::attn, s.T, s.h, n * d, true, true);
    offload(b, in.framework, workload::OffloadTarget::attn_proj);
    // o_proj's saved input is core attention's saved output unless FP8 quantizes a copy
    // (or the gate's product is a tensor of its own).
    if (!core_recompute && !b.fp8() && !m.attention_output_gate) b.last_fwd().saved_bytes = 0;
  }
  tp_scatter(b, s, Module::attn, "attn");
  bias_dropout_add(b, in, s, Module::attn, "attn", bwd_start);
}

}  // namespace moesim::workload::detail
