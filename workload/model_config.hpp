// workload/model_config.hpp: a model architecture, normalized from Hugging Face
// config.json fields (docs/reference/models.md) into one shape for MLA and GQA
// attention, DeepSeek-V4's hybrid compressed attention, dense and MoE layers, linear-attention
// layers (Qwen3-Next's Gated DeltaNet beside gated attention), and hybrid Mamba-Transformer models
// (Nemotron-H, whose layers each carry one mixer: a Mamba-2 SSM, attention, an MoE or a dense MLP).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim_core/names.hpp"

namespace moesim::workload {

enum class AttentionKind { gqa, mla, dsv4 };
const sim_core::NameTable<AttentionKind>& attention_kind_names();

// Multi-head Latent Attention dimensions (DeepSeek-V2/V3). q_lora_rank 0 = no q LoRA.
struct MlaDims {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// DeepSeek-V4's attention (HF DeepseekV4 config.json; Megatron-LM dev d48bd6be
// --experimental-attention-variant dsv4_hybrid, transformer/experimental_attention_variant/
// deepseek_v4_hybrid_attention.py and csa.py; docs/research/deepseek-v4.md 1-2): MQA with one
// shared key=value head of head_dim (512, its last rope_dim rotated), a q LoRA with its
// RMSNorm, per-head q RMSNorm, an attention sink per head, and a grouped low-rank output
// (o_groups groups, each nh/o_groups x head_dim -> o_lora_rank, then o_groups x o_lora_rank
// -> h). Each layer's compress ratio picks its kind: 0 the `window` tokens alone (SWA), 4
// compressed sparse attention (CSA: a compressor pooling every 4 tokens, overlapping, and the
// lightning indexer picking index_topk compressed rows a query), 128 heavily compressed
// attention (HCA: every 128 tokens pooled, all rows visible). mHC (hc_mult residual streams,
// Sinkhorn-projected 4x4 mixing) wraps every sub-block; the first hash_layers MoE layers
// route by token id.
struct Dsv4Dims {
  std::int64_t q_lora_rank = 0;
  std::int64_t o_groups = 0;
  std::int64_t o_lora_rank = 0;
  std::int64_t rope_dim = 64;
  std::int64_t window = 128;
  std::int64_t index_heads = 64;
  std::int64_t index_head_dim = 128;
  std::int64_t index_topk = 0;
  std::int64_t hc_mult = 4;
  std::int64_t sinkhorn_iters = 20;
  std::int64_t hash_layers = 0;
  // One entry a decoder layer, then one an MTP layer (HF compress_ratios; Megatron
  // csa_compress_ratios, training.py 1063-1068 at d48bd6be): 0, 4 or 128.
  std::vector<std::int64_t> compress_ratios;
};

// A hybrid model's layer, one mixer with its own pre-norm (Megatron-Core
// megatron/core/models/hybrid/hybrid_layer_allocation.py 14-26 at cd4afffa: 'M' Mamba,
// '*' attention, 'E' MoE, '-' dense MLP).
enum class HybridLayer : std::uint8_t { mamba, attention, moe, mlp };
const sim_core::NameTable<HybridLayer>& hybrid_layer_names();  // by pattern symbol

// Mamba-2 mixer dimensions (Megatron-Core ssm/mamba_mixer.py; HF nemotron_h config keys
// mamba_num_heads, mamba_head_dim, n_groups, ssm_state_size, conv_kernel, chunk_size).
// d_inner = heads x head_dim; the in_proj writes z and x (d_inner each), B and C (groups x
// state each) and dt (heads).
struct MambaDims {
  std::int64_t heads = 0;
  std::int64_t head_dim = 64;  // transformer_config.py 1179-1190 defaults
  std::int64_t groups = 8;
  std::int64_t state = 128;
  std::int64_t conv = 4;  // mamba_mixer.py 176-192 (Bridge never maps HF conv_kernel)
  std::int64_t chunk = 128;
  std::int64_t d_inner() const { return heads * head_dim; }
  std::int64_t in_proj_width() const { return 2 * d_inner() + 2 * groups * state + heads; }
};

// Gated DeltaNet dimensions (Qwen3-Next; HF linear_num_key_heads, linear_key_head_dim,
// linear_num_value_heads, linear_value_head_dim, linear_conv_kernel_dim; Megatron-Core
// ssm/gated_delta_net.py 139-210 at cd4afffa): q and k in `key_heads` heads of `key_dim`,
// v and the output gate z in `value_heads` heads of `value_dim`; the in_proj writes q, k,
// v, z and one beta and one decay logit per value head; the causal conv runs over q, k, v.
// FLA's chunked kernels walk the sequence in chunks of 64 tokens (fla/ops/gated_delta_rule/
// chunk.py 38 at v0.4.2).
struct GdnDims {
  std::int64_t key_heads = 0;
  std::int64_t key_dim = 128;
  std::int64_t value_heads = 0;
  std::int64_t value_dim = 128;
  std::int64_t conv = 4;
  static constexpr std::int64_t kChunk = 64;
  std::int64_t qk() const { return key_heads * key_dim; }
  std::int64_t v() const { return value_heads * value_dim; }
  std::int64_t in_proj_width() const { return 2 * qk() + 2 * v() + 2 * value_heads; }
};

// A decoder layer's token mixer in a transformer model: full (causal) attention,
// sliding-window attention, linear attention (Gated DeltaNet), or DeepSeek-V4's compressed
// sparse (ratio 4) and heavily compressed (ratio 128) attention; its window-only layers are
// `window`.
enum class Mixer : std::uint8_t { full, window, linear, csa, hca };
inline constexpr std::size_t kMixerCount = 5;
inline constexpr std::array<Mixer, kMixerCount> kMixers{Mixer::full, Mixer::window, Mixer::linear,
                                                        Mixer::csa, Mixer::hca};

// The name of an inline model that gives none (config/load_model.cpp).
inline constexpr const char* kUnnamedModel = "inline";

struct ModelConfig {
  std::string name;        // preset name or the scenario's inline name (kUnnamedModel: none given)
  std::string model_type;  // HF model_type: deepseek_v3, qwen3_moe, mixtral, llama, ...
  std::string source;      // where the architecture numbers come from

  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // query groups (GQA); = num_heads for MLA
  std::int64_t head_dim = 0;      // GQA head dim
  AttentionKind attention = AttentionKind::gqa;
  MlaDims mla;
  Dsv4Dims dsv4;  // AttentionKind::dsv4
  bool qk_layernorm = false;
  // Learned absolute position embeddings (GPT-2/3, Megatron --position-embedding-type
  // learned_absolute): a table of this many rows beside the word embeddings, added at the
  // input; 0 = rotary embeddings applied to q and k in every layer (Llama, DeepSeek, Qwen).
  std::int64_t learned_positions = 0;

  bool gated_linear_unit = true;     // SwiGLU: three FFN matrices instead of two
  std::int64_t ffn_hidden_size = 0;  // dense FFN intermediate size
  std::int64_t num_experts = 0;      // routed experts; 0 = dense model
  std::int64_t moe_ffn_hidden_size = 0;
  std::int64_t topk = 0;
  std::int64_t shared_expert_ffn_hidden_size = 0;  // all shared experts together; 0 = none
  std::vector<bool> moe_layer;  // per decoder layer: true = MoE, false = dense FFN
  // A hybrid model's layers (HF hybrid_override_pattern), empty for a transformer whose
  // layers are attention plus an MLP or MoE; moe_layer then marks the 'E' layers.
  std::vector<HybridLayer> hybrid_layers;
  MambaDims mamba;
  // A hybrid model's MTP block (HF mtp_hybrid_override_pattern, e.g. "*E": attention then
  // MoE), run once per MTP depth; `mtp_repeated_layer`: one block's parameters serve every
  // depth (Megatron-Core mtp_use_repeated_layer, which Megatron-Bridge sets for Nemotron-H,
  // nemotron_h_bridge.py 296-300 at v0.6.0); `mtp_bf16`: the MTP layers stay BF16 under
  // FP8 recipes (keep_mtp_spec_in_bf16, same lines).
  std::vector<HybridLayer> mtp_pattern;
  bool mtp_repeated_layer = false;
  bool mtp_bf16 = false;
  // LatentMoE (Nemotron 3 Super and Ultra; Megatron-Core moe_layer.py 264-296, 481-483,
  // 575-576 at cd4afffa): the routed tokens are projected h -> latent before the dispatch
  // and back after the combine (fc1_latent_proj, fc2_latent_proj: TE linears duplicated
  // over TP), so the all-to-alls and the experts work in the latent width. 0 = none.
  std::int64_t moe_latent_size = 0;
  // Rotary embeddings on q and k (false: no position embedding at all, Nemotron-H's
  // position_embedding_type "none", Megatron-Bridge nemotron_h_bridge.py 272).
  bool rope = true;

  std::string router_scoring = "softmax";  // "softmax", "sigmoid" (or DeepSeek-V4's "sqrtsoftplus")
  std::int64_t router_groups = 0;          // node-limited routing: groups (n_group)
  std::int64_t router_topk_groups = 0;     // groups each token may use (topk_group)

  std::int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  std::int64_t native_mtp_layers = 0;  // num_nextn_predict_layers in the HF config

  // Sliding-window attention (HF sliding_window, layer_types; Megatron --window-size):
  // the windowed layers' queries attend to the `sliding_window` tokens before them and
  // themselves; 0 = none. sliding_layer: per decoder layer, windowed or full.
  std::int64_t sliding_window = 0;
  std::vector<bool> sliding_layer;
  // Attention sinks (GPT-OSS; Megatron --softmax-type learnable): one learned logit per
  // head in every softmax's denominator.
  bool attention_sinks = false;
  // Linear-attention layers (Qwen3-Next: HF full_attention_interval N, every N-th layer
  // full attention and the rest Gated DeltaNet, or layer_types "linear_attention"; Megatron
  // --experimental-attention-variant gated_delta_net --linear-attention-freq N).
  // linear_attention_freq: that N (0 when a list gives the layers); Megatron's FLOPs count
  // rebuilds the pattern from it over the MTP layers too (training.py 714-719 at cd4afffa).
  std::vector<bool> linear_layer;
  std::int64_t linear_attention_freq = 0;
  GdnDims gdn;
  // Gated attention (Megatron --attention-output-gate; Qwen3-Next): linear_qkv also writes a
  // gate of q's width, and the attention output is multiplied by its sigmoid before the
  // output projection (transformer/attention.py 1605-1630, 1678-1680 at cd4afffa).
  bool attention_output_gate = false;
  // GQA's linear_qkv output width: q (and the output gate, as wide) and the k and v groups.
  double qkv_width() const {
    return static_cast<double>(num_heads * (attention_output_gate ? 2 : 1) + 2 * num_kv_heads) *
           static_cast<double>(head_dim);
  }
  // The shared expert's output scaled by sigmoid(x w_g), w_g 1 x h (Megatron
  // --moe-shared-expert-gate; moe/shared_experts.py 131-140, 195-201 at cd4afffa).
  bool shared_expert_gate = false;
  bool attention_bias = false;  // q, k, v and output projection biases (HF attention_bias)
  bool mlp_bias = false;        // dense MLP biases (HF mlp_bias)
  bool expert_bias = false;     // routed and shared experts' biases (GPT-OSS)
  bool router_bias = false;     // the router's bias (GPT-OSS)
  // GPT-OSS's clamped quick-GeGLU (HF swiglu_limit; Megatron --activation-func-clamp-value):
  // the gate half clamped above at this value and the linear half to [-value, value] before
  // the activation; 0 = no clamp.
  double activation_clamp = 0;
  // YaRN's concentration factor, the scale of RoPE's sines and cosines (Megatron-Core
  // yarn_rotary_pos_embedding.py _yarn_get_concentration_factor 259-271 at d7288711:
  // 0.1 ln(factor) + 1 without mscale and mscale_all_dim, else the ratio of their mscales);
  // 1 without YaRN. Off 1, Megatron-Core's GQA attention applies RoPE unfused
  // (rope_utils.py apply_rotary_pos_emb 279-284 at d7288711: TE's fused kernel has no mscale).
  double rope_concentration = 1.0;
  // The fraction of each head's q and k that RoPE rotates (HF partial_rotary_factor,
  // Megatron --rotary-percent; Qwen3-Next and Qwen3.5: 0.25). Only Megatron-Core's unfused
  // path prices it (rope_utils.py _apply_rotary_pos_emb_bshd rotates t[..., :rot_dim] and
  // concatenates the rest back); TE's fused kernel reads and writes the whole head.
  double rotary_fraction = 1.0;

  bool windowed(std::int64_t layer) const {
    return sliding_window > 0 && sliding_layer[static_cast<std::size_t>(layer)];
  }
  bool any_windowed() const;
  bool linear(std::int64_t layer) const {
    return !linear_layer.empty() && linear_layer[static_cast<std::size_t>(layer)];
  }
  std::int64_t num_linear_layers() const;
  bool is_dsv4() const { return attention == AttentionKind::dsv4; }
  // A DeepSeek-V4 layer's compress ratio; MTP layers follow the decoder layers.
  std::int64_t compress_ratio(std::int64_t layer) const {
    return dsv4.compress_ratios.at(static_cast<std::size_t>(layer));
  }
  static Mixer dsv4_mixer(std::int64_t ratio) {
    return ratio == 0 ? Mixer::window : ratio == 4 ? Mixer::csa : Mixer::hca;
  }
  Mixer mixer(std::int64_t layer) const {
    if (is_dsv4()) return dsv4_mixer(compress_ratio(layer));
    return linear(layer) ? Mixer::linear : windowed(layer) ? Mixer::window : Mixer::full;
  }
  // The mixer of an MTP layer: DeepSeek-V4's own ratio (the first MTP entry), else the last
  // decoder layer's kind (Megatron builds the MTP block from the last layer's spec).
  Mixer mtp_mixer() const {
    if (is_dsv4())
      return dsv4_mixer(
          compress_ratio(std::min<std::int64_t>(num_layers, std::ssize(dsv4.compress_ratios) - 1)));
    return linear(num_layers - 1) ? Mixer::linear : Mixer::full;
  }
  // The residual stream's width in units of h: mHC's streams (DeepSeek-V4), else 1.
  std::int64_t residual_streams() const { return is_dsv4() ? dsv4.hc_mult : 1; }

  // Whether some decoder or MTP layer runs `k` (its templates are built only then).
  bool has_mixer(Mixer k) const;

  bool is_moe() const { return num_experts > 0; }
  bool hybrid() const { return !hybrid_layers.empty(); }
  std::int64_t count_hybrid(HybridLayer k) const;
  // Layers that run softmax attention: every decoder layer but the linear-attention ones,
  // or a hybrid model's '*' layers.
  std::int64_t num_attention_layers() const;
  std::int64_t num_moe_layers() const;
  // Layers with a dense MLP: the non-MoE decoder layers, or a hybrid model's '-' layers.
  std::int64_t num_dense_layers() const {
    return hybrid() ? count_hybrid(HybridLayer::mlp) : num_layers - num_moe_layers();
  }
  // Megatron counts MTP layers as MoE when the last decoder layer is MoE.
  bool mtp_is_moe() const {
    if (hybrid())
      return std::find(mtp_pattern.begin(), mtp_pattern.end(), HybridLayer::moe) !=
             mtp_pattern.end();
    return !moe_layer.empty() && moe_layer.back();
  }
  // The width routed tokens travel and the experts work in: the latent size under LatentMoE.
  std::int64_t expert_width() const { return moe_latent_size > 0 ? moe_latent_size : hidden_size; }
  std::int64_t ffn_matrices() const { return gated_linear_unit ? 3 : 2; }
};

// Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x TP
// (megatron/training/tokenizer: _vocab_size_with_padding; default divisor 128).
std::int64_t padded_vocab_size(std::int64_t vocab, std::int64_t tp,
                               std::int64_t divisible_by = 128);

}  // namespace moesim::workload
