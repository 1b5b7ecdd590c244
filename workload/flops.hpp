// workload/flops.hpp: Megatron-Core's model-FLOPs accounting and parameter counts.
//
// Published Megatron TFLOPS/GPU = model FLOPs of one global batch / (step time x 1e12 x
// GPUs), from num_floating_point_operations in megatron/training/training.py
// (docs/reference/megatron-flops.md). With T tokens per batch, S2 = sum of L^2 over
// sequences, h hidden, V padded vocab, e = 3 (SwiGLU) or 2, M MTP layers:
//
//   F = T x [ 6 h e (F_dense N_dense + F_moe k N_moe + F_shared N_moe + F_mtp M)
//             + N_attn A_lin + 6 M (3h + 2h^2) + 6 h V (M + 1) ]
//       + S2 x N_attn x A_core
//
// where N_attn = layers + M and F_mtp = F_moe k + F_shared if the last decoder layer is
// MoE, else F_dense.
//   MLA: A_lin  = 6 [ q + r_kv (h + n (d_nope + d_v) + 1) + h d_rope + n d_v h ],
//        q      = r_q (h + n (d_nope + d_rope) + 1), or h n (d_nope + d_rope) w/o q LoRA,
//        A_core = 6 [ n (d_nope + d_rope)/2 + n d_v/2 ]      (causal halves QK^T and AV)
//   GQA: A_lin  = 6 [ h (n d + 2 g d) + n d h ],   A_core = 6 n d
// Not counted: router GEMM, norms, RoPE, softmax, activations, embedding lookup,
// recompute, padding.
// Gated attention (--attention-output-gate) adds the gate's columns to A_lin: 6 h n d.
// Linear-attention layers (Gated DeltaNet, Qwen3-Next; training.py 712-786 at cd4afffa)
// replace A_lin + seq A_core of N_lin of the layers + M (N_lin from the interval over them,
// MTP included) with
//   G = 6 [ h (2 qk + 2 v + 2 Hv) + conv (2 qk + v) + 4 Hv V^2 + h v ],
// qk = key heads x K, v = value heads x V: the in_proj, the conv, the delta rule's four
// products per state and out_proj (the chunked kernels run about 4% more, research
// qwen3-next.md 2.3).
//
// Hybrid models (Megatron-LM training.py 473-547 and the hybrid branch 849-899 at cd4afffa;
// Megatron-Bridge flop_utils.py 607-751 at v0.6.0, the copy its published TFLOPS use;
// docs/research/nemotron3-hybrid-mamba.md 2) count each layer kind from the pattern,
//   F/T = 3 [ N_M (2h (2 d_in + 2 G N + H) + 7 d_in N + 2 d_in h)
//             + N_* (A_lin + seq A_core) / 3 + N_E 4 h (F_moe k + F_shared) f
//             + N_- 4 h F_dense f + 2 h V (M + 1) ],   f = 1.5 gated, 1 not,
// with d_in hard-wired to 2h whatever mamba heads x head dim is (training.py 478): a model
// with a narrower mixer (Nemotron 3 Nano: 4096 against 2h = 5376) is credited FLOPs its
// GEMMs never run, 6.7% of Nano's total. No eh_proj term; MTP layers count through their
// pattern (not modeled yet: a hybrid model with MTP is refused by the loader).
//
// DeepSeek-V4 (Megatron-LM dev d48bd6be training.py 387-494, 1063-1168) counts its attention
// per layer kind (workload/flops.cpp dsv4_attention_terms); every layer and MTP layer is MoE.
//
// Parameter counts follow the HF checkpoints' tensors (weights and norm gains; MLA
// includes its two LoRA norms; DeepSeek-V3's sigmoid router has a per-expert bias).
// "Active" counts top-k routed experts instead of all, everything else in full.
#pragma once

#include <cstdint>

#include "workload/model_config.hpp"

namespace moesim::workload {

struct FlopsQuery {
  std::int64_t seq_length = 0;
  std::int64_t mtp_layers = 0;
  std::int64_t padded_vocab = 0;
};

// Per-token model FLOPs by term (fixed-length sequences, so S2/T = seq_length).
struct FlopsPerToken {
  double dense_mlp = 0;    // 6 h e F_dense N_dense
  double moe_mlp = 0;      // 6 h e (F_moe k + F_shared) N_moe
  double mtp = 0;          // MTP layers' FFN + 6 M (3h + 2h^2)
  double attn_linear = 0;  // N_attn A_lin
  double attn_core = 0;    // seq x N_attn x A_core
  double logits = 0;       // 6 h V (M + 1)
  double mamba = 0;        // hybrid models' Mamba layers, Megatron's count (d_in = 2h)
  double linear_attn = 0;  // Gated DeltaNet layers (N_lin G, no seq term)
  double total() const {
    return dense_mlp + moe_mlp + mtp + attn_linear + attn_core + logits + mamba + linear_attn;
  }
};

// A hybrid model's count goes to hybrid_flops_per_token.
FlopsPerToken megatron_flops_per_token(const ModelConfig& m, const FlopsQuery& q);
FlopsPerToken hybrid_flops_per_token(const ModelConfig& m, const FlopsQuery& q);

struct ParamCounts {
  double embedding = 0;
  double output_head = 0;  // 0 when tied to the embedding
  double attention = 0;    // all decoder layers, projections + attention norms
  double norms = 0;        // per-layer pre-norms and the final norm
  double dense_mlp = 0;
  double routed_experts = 0;
  double shared_experts = 0;
  double routers = 0;
  double mamba = 0;             // hybrid models' Mamba layers, their norms included
  double linear_attention = 0;  // Gated DeltaNet layers, their input norms included
  double mtp = 0;               // MTP modules (they share embedding and output head)
  double total = 0;             // everything, MTP modules included
  double active = 0;            // per token: top-k routed experts instead of all
};

// Parameters of one decoder layer by part: what each pipeline rank holds.
struct LayerParams {
  double attention = 0;   // projections and the attention input norm
  double dense_mlp = 0;   // dense FFN + its norm (dense layers)
  double moe_common = 0;  // router, shared experts, pre-FFN norm (MoE layers)
  double expert = 0;      // one routed expert
  double mamba = 0;       // a hybrid model's Mamba layer: in_proj, conv, A, D, dt bias,
                          // the gated norm, out_proj and the pre-norm
  double gdn = 0;         // a Gated DeltaNet mixer with its input norm (linear layers)
};
LayerParams layer_parameters(const ModelConfig& m);
// DeepSeek-V4's CSA picks at sequence length s (Megatron-LM dev d48bd6be training.py 467-468):
// the list's k4 = min(index_topk, s / 4) compressed rows a query, and on average the causally
// visible ones among them, k4 (1 - 4 k4 / 2s).
double dsv4_topk_rows(const ModelConfig& m, double seq);
double dsv4_visible_picks(const ModelConfig& m, double seq);
// What a DeepSeek-V4 layer (decoder, then MTP) holds beyond LayerParams::attention, by its
// compress ratio: ratio 4 its compressor (wkv, wgate 2 head_dim wide, ape, norm) and the
// indexer (wq_b, weights_proj, its own compressor 2 index_head_dim wide); ratio r its
// compressor (head_dim wide, ape r rows); 0 for other models.
double attention_extra_params(const ModelConfig& m, std::int64_t layer);

// Muon's orthogonalization (Megatron-Core with Emerging-Optimizers: quintic Newton-Schulz,
// 5 iterations, each X X^T, a polynomial of it and its product with X) costs, for an
// a x b matrix with a <= b,
//   5 (4 a^2 b + 2 a^3) FLOPs,
// on every 2-D weight but the embedding and the output layer, each matrix whole (a gated
// FC1 as one matrix, each expert's apart; docs/research/megatron-mechanisms.md 6 and
// corpus-recipes.md 'Muon'). Per decoder layer by part, as LayerParams:
LayerParams muon_ns_flops(const ModelConfig& m);
double newton_schulz_flops(double rows, double cols);

ParamCounts count_parameters(const ModelConfig& m, std::int64_t mtp_layers,
                             std::int64_t padded_vocab);

}  // namespace moesim::workload
