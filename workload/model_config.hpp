// workload/model_config.hpp: a model architecture, normalized from Hugging Face
// config.json fields (docs/reference/models.md) into one shape for MLA and GQA
// attention, dense and MoE layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim_core/names.hpp"

namespace moesim::workload {

enum class AttentionKind { gqa, mla };
const sim_core::NameTable<AttentionKind>& attention_kind_names();

// Multi-head Latent Attention dimensions (DeepSeek-V2/V3). q_lora_rank 0 = no q LoRA.
struct MlaDims {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelConfig {
  std::string name;        // preset name or the scenario's inline name
  std::string model_type;  // HF model_type: deepseek_v3, qwen3_moe, mixtral, llama, ...
  std::string source;      // where the architecture numbers come from

  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // query groups (GQA); = num_heads for MLA
  std::int64_t head_dim = 0;      // GQA head dim
  AttentionKind attention = AttentionKind::gqa;
  MlaDims mla;
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

  std::string router_scoring = "softmax";  // "softmax" or "sigmoid"
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
  bool attention_bias = false;  // q, k, v and output projection biases (HF attention_bias)
  bool mlp_bias = false;        // dense MLP biases (HF mlp_bias)
  bool expert_bias = false;     // routed and shared experts' biases (GPT-OSS)
  bool router_bias = false;     // the router's bias (GPT-OSS)

  bool windowed(std::int64_t layer) const {
    return sliding_window > 0 && sliding_layer[static_cast<std::size_t>(layer)];
  }
  bool any_windowed() const;

  bool is_moe() const { return num_experts > 0; }
  std::int64_t num_moe_layers() const;
  std::int64_t num_dense_layers() const { return num_layers - num_moe_layers(); }
  // Megatron counts MTP layers as MoE when the last decoder layer is MoE.
  bool mtp_is_moe() const { return !moe_layer.empty() && moe_layer.back(); }
  std::int64_t ffn_matrices() const { return gated_linear_unit ? 3 : 2; }
};

// Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x TP
// (megatron/training/tokenizer: _vocab_size_with_padding; default divisor 128).
std::int64_t padded_vocab_size(std::int64_t vocab, std::int64_t tp,
                               std::int64_t divisible_by = 128);

}  // namespace moesim::workload
