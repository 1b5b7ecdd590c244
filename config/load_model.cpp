// Reads a model (preset file or inline object) from Hugging Face config.json fields.
// HF names differ per family (n_routed_experts / num_experts / num_local_experts, the
// MoE layer pattern keys); they are normalized here into workload::ModelConfig. HF
// fields that do not change performance are accepted and ignored, so a real
// config.json can be pasted; anything else unknown is an error.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "config/load.hpp"

namespace moesim::config {
namespace {

struct ModelType {
  std::string_view name;
  bool qk_layernorm;  // per-head q/k RMSNorm (Qwen3)
  bool mixtral_ffn;   // expert FFN size is intermediate_size (Mixtral)
  bool gpt = false;   // Megatron GPT (GPT-3): GELU without a gate, learned absolute positions
  // GPT-OSS (openai/gpt-oss-120b, -20b config.json; HF modeling_gpt_oss.py): attention
  // sinks, biases in the router and the experts, sliding and full attention layers.
  bool gpt_oss = false;
  // Nemotron-H (Nemotron 3 Nano/Super/Ultra; Megatron-Bridge models/nemotronh/
  // nemotron_h_bridge.py 233-308 at v0.6.0): a hybrid layer pattern, squared-ReLU MLPs
  // without a gate, a sigmoid router with expert bias, no position embedding.
  bool hybrid = false;
  // Qwen3-Next (Megatron-Bridge models/qwen/qwen3_next_bridge.py 52-96 at v0.6.0): Gated
  // DeltaNet layers with every full_attention_interval-th layer gated full attention, q/k
  // norms, a gated shared expert.
  bool linear_attention = false;
  // DeepSeek-V4 (HF DeepseekV4ForCausalLM config.json; Megatron-LM dev d48bd6be dsv4_hybrid):
  // MQA over windowed and compressed keys, mHC, hash-routed first layers (model_config.hpp).
  bool dsv4 = false;
};

constexpr std::array<ModelType, 14> kModelTypes{{
    {"deepseek_v3", false, false},
    {"deepseek_v2", false, false},
    {"kimi_k2", false, false},  // DeepSeek-V3 architecture (Moonshot AI config.json)
    {"qwen3_moe", true, false},
    {"qwen3", true, false},
    {"qwen2_moe", false, false},
    {"mixtral", false, true},
    {"llama", false, false},
    {"mistral", false, false},
    // Megatron's GPTModel as MLPerf's GPT-3 175B runs it (mlcommons/training
    // large_language_model/megatron-lm: --position-embedding-type learned_absolute, GELU).
    {"gpt", false, false, true},
    {"gpt_oss", false, true, false, true},
    {"nemotron_h", false, false, false, false, true},
    {"qwen3_next", true, false, false, false, false, true},
    {"deepseek_v4", false, false, false, false, false, false, true},
}};

const ModelType& model_type(const Node& n) {
  const std::string t = n.as_string();
  for (const auto& mt : kModelTypes)
    if (mt.name == t) return mt;
  std::vector<std::string_view> names;
  for (const auto& mt : kModelTypes) names.push_back(mt.name);
  n.fail(fmt::format("unknown model_type '{}'; known: {}", t, fmt::join(names, ", ")));
}

constexpr std::int64_t kBig = std::int64_t{1} << 24;

// The first of several alias keys that is present; two present is an error.
std::optional<Node> one_alias(Object& o, std::initializer_list<std::string_view> keys) {
  std::optional<Node> found;
  for (auto k : keys) {
    if (auto n = o.get(k)) {
      if (found)
        n->fail(fmt::format("'{}' and '{}' both give the expert count; keep one", found->path(),
                            n->path()));
      found = n;
    }
  }
  return found;
}

// HF layer_types, one entry a layer, of the kinds any model type may list: true where the
// entry is `kind`; `refused` (the kind this model type cannot run) fails with `why`.
std::vector<bool> layer_types(const Node& types, std::int64_t layers, std::string_view kind,
                              std::string_view refused, std::string_view why) {
  if (types.json().size() != static_cast<std::size_t>(layers))
    types.fail(fmt::format("lists {} layers; the model has {}", types.json().size(), layers));
  std::vector<bool> out;
  types.for_each_element([&](const Node& e) {
    const std::string t = e.as_string();
    if (t != "sliding_attention" && t != "full_attention" && t != "linear_attention")
      e.fail(fmt::format(
          "unknown layer type '{}'; known: sliding_attention, full_attention, linear_attention",
          t));
    if (t == refused) e.fail(std::string(why));
    out.push_back(t == kind);
  });
  return out;
}

// YaRN's concentration factor from HF rope_scaling ({"rope_type" or "type": "yarn", "factor",
// optional "mscale" and "mscale_all_dim"}), as Megatron-Core computes it
// (yarn_rotary_pos_embedding.py 252-271 at d7288711): m(f, s) = 0.1 s ln f + 1 (1 at f <= 1);
// m(f, mscale) / m(f, mscale_all_dim) with both given, else m(f, 1). GPT-OSS: 0.1 ln 32 + 1
// = 1.347 (Megatron-Bridge gpt_oss_bridge.py 94-100 at v0.4.0: factor 32, mscales None).
// Other rope types (linear, dynamic, llama3, mrope) leave RoPE's fused kernel as it is.
void rope_scaling(Object& o, workload::ModelConfig& m) {
  const auto rs = o.get("rope_scaling");
  if (!rs || !rs->json().is_object()) return;
  const Json& j = rs->json();
  const std::string kind = j.value("rope_type", j.value("type", std::string()));
  if (kind != "yarn") return;
  const auto number = [&](const char* k) -> std::optional<double> {
    const auto x = j.find(k);
    if (x == j.end() || x->is_null()) return std::nullopt;
    return rs->child_at(*x, k).as_number(0, 1e9);
  };
  const auto factor = number("factor");
  if (!factor) rs->fail("YaRN rope_scaling needs its factor");
  const auto mscale = [&](double s) {
    return *factor <= 1 ? 1.0 : 0.1 * s * std::log(*factor) + 1;
  };
  const auto a = number("mscale"), b = number("mscale_all_dim");
  m.rope_concentration = a && b ? mscale(*a) / mscale(*b) : mscale(1);
}

// Sliding-window attention. HF: sliding_window (null or absent: none), use_sliding_window
// (Qwen2/3, Mistral: false turns it off), layer_types (per layer "sliding_attention" or
// "full_attention": GPT-OSS), or max_window_layers (Qwen2: the layers from that index on
// are windowed); else every layer. Megatron's windowed attention runs in TE's fused
// kernels without context parallelism's ring (refused in the scenario loader) and is
// not modeled for MLA.
void sliding_window(Object& o, workload::ModelConfig& m) {
  const auto w = o.get("sliding_window");
  const bool on = o.bool_or("use_sliding_window", true);
  const auto types = o.get("layer_types");
  const auto max_window = o.get("max_window_layers");
  m.sliding_layer.assign(static_cast<std::size_t>(m.num_layers), false);
  if (types)
    m.sliding_layer =
        layer_types(*types, m.num_layers, "sliding_attention", "linear_attention",
                    "a linear_attention layer (Gated DeltaNet) belongs to a qwen3_next model");
  if (!w || w->json().is_null() || !on) return;
  m.sliding_window = w->as_int(1, kBig);
  if (!types) {
    const std::int64_t from = max_window ? max_window->as_int(0, m.num_layers) : 0;
    for (std::int64_t i = from; i < m.num_layers; ++i)
      m.sliding_layer[static_cast<std::size_t>(i)] = true;
  }
  if (m.attention == workload::AttentionKind::mla && m.any_windowed())
    w->fail("sliding-window attention with MLA is not modeled");
}

// Qwen3-Next's linear-attention layers and their Gated DeltaNet dimensions. HF: layer_types
// ("linear_attention" or "full_attention" per layer; transformers 5.5 and later), else
// full_attention_interval N (layer i full attention iff (i + 1) % N == 0, Megatron-Core
// experimental_attention_variant_module_specs.py 402-436 at cd4afffa), with the linear_*
// head keys (Megatron-Bridge qwen3_next_bridge.py 52-96 at v0.6.0). TP must divide both
// head counts (transformer_config.py 1374-1382); the scenario loader checks it.
void linear_layers(Object& o, workload::ModelConfig& m) {
  m.linear_layer.assign(static_cast<std::size_t>(m.num_layers), false);
  if (const auto types = o.get("layer_types")) {
    m.linear_layer = layer_types(*types, m.num_layers, "linear_attention", "sliding_attention",
                                 "sliding-window attention in a linear-attention model is not "
                                 "modeled");
    if (auto n = o.get("full_attention_interval"); n && !n->json().is_null())
      n->fail("layer_types already places the full-attention layers; keep one of the two");
  } else {
    m.linear_attention_freq = o.req("full_attention_interval").as_int(1, m.num_layers);
    for (std::int64_t i = 0; i < m.num_layers; ++i)
      m.linear_layer[static_cast<std::size_t>(i)] = (i + 1) % m.linear_attention_freq != 0;
  }
  auto& g = m.gdn;
  g.key_heads = o.req("linear_num_key_heads").as_int(1, 1 << 16);
  g.value_heads = o.req("linear_num_value_heads").as_int(1, 1 << 16);
  g.key_dim = o.req("linear_key_head_dim").as_int(1, 4096);
  g.value_dim = o.req("linear_value_head_dim").as_int(1, 4096);
  g.conv = o.int_or("linear_conv_kernel_dim", g.conv, 1, 64);
  if (g.value_heads % g.key_heads != 0)
    o.get("linear_num_value_heads")
        ->fail(fmt::format("{} value heads do not repeat {} key heads evenly", g.value_heads,
                           g.key_heads));
  if (o.bool_or("use_sliding_window", false))
    o.get("use_sliding_window")
        ->fail("sliding-window attention in a linear-attention model is not modeled");
  if (auto w = o.get("sliding_window"); w && !w->json().is_null())
    w->fail("sliding-window attention in a linear-attention model is not modeled");
  m.attention_output_gate = o.bool_or("attn_output_gate", true);
}

// DeepSeek-V4's attention (HF config.json keys; Megatron-LM dev d48bd6be
// deepseek_v4_hybrid_attention.py, csa.py; docs/research/deepseek-v4.md 1.2): one shared
// key=value head (num_key_value_heads 1) of head_dim, of which qk_rope_head_dim rotate; the
// q LoRA, the grouped output (o_groups, o_lora_rank), the window (sliding_window), the
// indexer (index_n_heads x index_head_dim, index_topk) and a compress ratio a layer, decoder
// then MTP layers (compress_ratios). Ratios other than 0, 4 and 128 are refused: Megatron's
// FLOPs count knows those three (training.py 387-494) and only ratio 4 overlaps its windows
// and has an indexer (csa.py 1764-1794).
void dsv4_attention(Object& o, workload::ModelConfig& m) {
  m.attention = workload::AttentionKind::dsv4;
  auto& x = m.dsv4;
  if (m.num_kv_heads != 1)
    o.req("num_key_value_heads")
        .fail("DeepSeek-V4's attention shares one key=value head (num_key_value_heads 1)");
  m.head_dim = o.req("head_dim").as_int(1, kBig);
  x.rope_dim = o.req("qk_rope_head_dim").as_int(1, m.head_dim);
  x.q_lora_rank = o.req("q_lora_rank").as_int(1, kBig);
  x.o_groups = o.req("o_groups").as_int(1, m.num_heads);
  if (m.num_heads % x.o_groups != 0)
    o.req("o_groups")
        .fail(fmt::format("{} heads are not divisible into {} output groups", m.num_heads,
                          x.o_groups));
  x.o_lora_rank = o.req("o_lora_rank").as_int(1, kBig);
  x.window = o.req("sliding_window").as_int(1, kBig);
  x.index_heads = o.req("index_n_heads").as_int(1, 4096);
  x.index_head_dim = o.req("index_head_dim").as_int(1, 4096);
  x.index_topk = o.req("index_topk").as_int(1, kBig);
  x.hc_mult = o.int_or("hc_mult", x.hc_mult, 1, 64);
  x.sinkhorn_iters = o.int_or("hc_sinkhorn_iters", x.sinkhorn_iters, 0, 1000);
  x.hash_layers = o.int_or("num_hash_layers", 0, 0, m.num_layers);
  const auto ratios = o.req("compress_ratios");
  ratios.for_each_element([&](const Node& e) {
    const std::int64_t r = e.as_int(0, 1 << 20);
    if (r != 0 && r != 4 && r != 128)
      e.fail(
          fmt::format("compress ratio {} is not modeled; known: 0 (window only), 4 (CSA), "
                      "128 (HCA)",
                      r));
    x.compress_ratios.push_back(r);
  });
  const auto want = static_cast<std::size_t>(m.num_layers + m.native_mtp_layers);
  if (x.compress_ratios.size() != want)
    ratios.fail(fmt::format("lists {} layers; the model has {} decoder and {} MTP layers",
                            x.compress_ratios.size(), m.num_layers, m.native_mtp_layers));
  for (const char* k : {"kv_lora_rank", "layer_types", "use_sliding_window"})
    if (auto n = o.get(k)) n->fail("not a DeepSeek-V4 key: its layers' kinds are compress_ratios");
  // Numerics inside kernels moesim prices anyway: mHC's epsilon, the compressed keys' RoPE.
  o.ignore({"hc_eps", "compress_rope_theta"});
}

// A hybrid model's layers (HF hybrid_override_pattern, one symbol a layer) and its Mamba-2
// mixers' dimensions. Megatron's own pattern may carry '|' (pipeline cuts: moesim's are
// parallelism.pp_layout) and '/' (MTP layers: HF mtp_hybrid_override_pattern); neither
// belongs in a config.json, whose pattern Megatron-Bridge strips of both
// (nemotron_h_bridge.py megatron_to_hf_config).
// A pattern's layers, one symbol each ('|' and '/' refused with where they belong).
std::vector<workload::HybridLayer> layer_pattern(const Node& pn) {
  std::vector<workload::HybridLayer> out;
  for (const char c : pn.as_string()) {
    if (c == '|')
      pn.fail("'|' cuts the pattern into pipeline stages; give them as parallelism.pp_layout");
    if (c == '/')
      pn.fail(
          "'/' starts Megatron's MTP layers; give them as mtp_hybrid_override_pattern with "
          "num_nextn_predict_layers");
    const auto& names = workload::hybrid_layer_names().entries();
    const auto e = std::find_if(names.begin(), names.end(),
                                [&](const auto& n) { return n.name == std::string_view(&c, 1); });
    if (e == names.end())
      pn.fail(
          fmt::format("unknown layer symbol '{}'; known: M (Mamba), * (attention), E (MoE), "
                      "- (dense MLP)",
                      c));
    out.push_back(e->value);
  }
  if (out.empty()) pn.fail("is empty");
  return out;
}

void hybrid_layers(Object& o, workload::ModelConfig& m) {
  const auto pn = o.req("hybrid_override_pattern");
  m.hybrid_layers = layer_pattern(pn);
  if (static_cast<std::int64_t>(m.hybrid_layers.size()) != m.num_layers)
    pn.fail(fmt::format("has {} layers; num_hidden_layers says {}", m.hybrid_layers.size(),
                        m.num_layers));
  m.moe_layer.assign(m.hybrid_layers.size(), false);
  for (std::size_t i = 0; i < m.hybrid_layers.size(); ++i)
    m.moe_layer[i] = m.hybrid_layers[i] == workload::HybridLayer::moe;
  if (m.num_moe_layers() > 0 && m.num_experts == 0)
    pn.fail("has MoE layers ('E') but the model has no routed experts (n_routed_experts)");
  if (m.num_moe_layers() == 0 && m.num_experts > 0)
    pn.fail("has no MoE layer ('E') but the model has routed experts");
  if (m.num_dense_layers() > 0 && m.ffn_hidden_size == 0)
    pn.fail("has dense MLP layers ('-'): they need intermediate_size");
  auto& x = m.mamba;
  if (m.count_hybrid(workload::HybridLayer::mamba) > 0) {
    x.heads = o.req("mamba_num_heads").as_int(1, 1 << 16);
  } else {
    x.heads = o.int_or("mamba_num_heads", 0, 0, 1 << 16);
  }
  x.head_dim = o.int_or("mamba_head_dim", x.head_dim, 1, 4096);
  x.groups = o.int_or("n_groups", x.groups, 1, 1 << 16);
  x.state = o.int_or("ssm_state_size", x.state, 1, 4096);
  x.conv = o.int_or("conv_kernel", x.conv, 1, 64);
  x.chunk = o.int_or("chunk_size", x.chunk, 1, 1 << 16);
  if (x.heads > 0 && x.heads % x.groups != 0)
    o.get("n_groups")
        ->fail(fmt::format("{} Mamba heads are not divisible into {} groups", x.heads, x.groups));
  if (auto b = o.get("use_bias"); b && b->as_bool())
    b->fail("linear biases in a hybrid model are not modeled");
  if (auto l = o.get("moe_latent_size"); l && !l->json().is_null()) {
    m.moe_latent_size = l->as_int(1, m.hidden_size);
    if (m.num_experts == 0) l->fail("a latent MoE size without routed experts changes nothing");
  }
  // MTP (Megatron-Bridge nemotron_h_bridge.py _hf_mtp_config: num_nextn_predict_layers > 0
  // needs the block's pattern; mtp_use_repeated_layer and keep_mtp_spec_in_bf16 default on).
  const auto mtp = o.get("mtp_hybrid_override_pattern");
  if (m.native_mtp_layers > 0 && !mtp)
    o.get("num_nextn_predict_layers")
        ->fail("a hybrid model with MTP layers needs mtp_hybrid_override_pattern");
  if (mtp && !mtp->json().is_null()) {
    m.mtp_pattern = layer_pattern(*mtp);
    if (m.count_hybrid(workload::HybridLayer::mamba) == 0 &&
        std::find(m.mtp_pattern.begin(), m.mtp_pattern.end(), workload::HybridLayer::mamba) !=
            m.mtp_pattern.end())
      mtp->fail("has a Mamba layer; the main pattern has none to size it (mamba_num_heads)");
  }
  m.mtp_repeated_layer = o.bool_or("mtp_use_repeated_layer", true);
  m.mtp_bf16 = o.bool_or("keep_mtp_spec_in_bf16", true);
  if (o.get("sliding_window") && !o.get("sliding_window")->json().is_null())
    o.get("sliding_window")->fail("sliding-window attention in a hybrid model is not modeled");
  m.rope = false;
  // Nemotron-H's HF keys that change nothing moesim prices: activations and numerics
  // inside the kernels, dt's initialization, the SSM's HF-only expand (the mixer's width is
  // heads x head_dim), the conv bias (priced with the conv), and the MTP loss's weight.
  o.ignore({"mamba_hidden_act", "mlp_hidden_act", "mamba_proj_bias", "use_conv_bias",
            "residual_in_fp32", "layer_norm_epsilon", "time_step_min", "time_step_max",
            "time_step_floor", "time_step_limit", "time_step_rank", "rescale_prenorm_residual",
            "expand", "num_logits_to_keep", "hidden_dropout", "n_shared_experts",
            "mtp_loss_scaling_factor"});
}

}  // namespace

workload::ModelConfig read_model(const Node& node) {
  workload::ModelConfig m;
  read_object(node, [&](Object& o) {
    m.name = o.string_or("name", workload::kUnnamedModel);
    o.ignore({"description"});
    m.source = o.string_or("source", "");
    const ModelType& type = model_type(o.req("model_type"));
    m.model_type = std::string(type.name);

    m.hidden_size = o.req("hidden_size").as_int(1, kBig);
    m.num_layers = o.req("num_hidden_layers").as_int(1, 100000);
    m.num_heads = o.req("num_attention_heads").as_int(1, 65536);
    m.num_kv_heads = o.int_or("num_key_value_heads", m.num_heads, 1, m.num_heads);
    if (m.num_heads % m.num_kv_heads != 0)
      o.get("num_key_value_heads")
          ->fail(fmt::format("{} attention heads are not divisible into {} key-value groups",
                             m.num_heads, m.num_kv_heads));
    m.head_dim = o.int_or("head_dim", m.hidden_size / m.num_heads, 1, kBig);
    m.vocab_size = o.req("vocab_size").as_int(1, std::int64_t{1} << 30);
    m.tie_word_embeddings = o.bool_or("tie_word_embeddings", false);
    m.qk_layernorm = o.bool_or("qk_layernorm", type.qk_layernorm);
    m.gated_linear_unit = o.bool_or("gated_linear_unit", !type.gpt && !type.hybrid);
    if (type.gpt) m.learned_positions = o.req("max_position_embeddings").as_int(1, kBig);
    m.native_mtp_layers = o.int_or("num_nextn_predict_layers", 0, 0, 64);

    if (type.dsv4) {
      dsv4_attention(o, m);
    } else if (auto kv = o.get("kv_lora_rank")) {
      m.attention = workload::AttentionKind::mla;
      m.num_kv_heads = m.num_heads;
      m.mla.kv_lora_rank = kv->as_int(1, kBig);
      if (auto q = o.get("q_lora_rank"); q && !q->json().is_null())
        m.mla.q_lora_rank = q->as_int(1, kBig);
      m.mla.qk_nope_head_dim = o.req("qk_nope_head_dim").as_int(1, kBig);
      m.mla.qk_rope_head_dim = o.req("qk_rope_head_dim").as_int(1, kBig);
      m.mla.v_head_dim = o.req("v_head_dim").as_int(1, kBig);
    }

    const auto experts = one_alias(o, {"n_routed_experts", "num_experts", "num_local_experts"});
    m.num_experts = experts ? experts->as_int(0, 1 << 20) : 0;
    const auto inter = o.get("intermediate_size");
    if (m.num_experts > 0) {
      m.topk = o.req("num_experts_per_tok").as_int(1, m.num_experts);
      // GPT-OSS's config.json repeats it as experts_per_token.
      if (auto e = o.get("experts_per_token"); e && e->as_int(1, m.num_experts) != m.topk)
        e->fail(fmt::format("differs from num_experts_per_tok ({})", m.topk));
      if (type.mixtral_ffn) {
        // Not a key of this model type (the strict reader would call it unknown): said why.
        if (const auto x = o.node().json().find("moe_intermediate_size");
            x != o.node().json().end())
          o.node()
              .child_at(*x, "moe_intermediate_size")
              .fail(fmt::format(
                  "a {} config sizes its experts with intermediate_size (moe_intermediate_size is "
                  "DeepSeek's and Qwen's key)",
                  type.name));
        if (!inter) o.req("intermediate_size");
        m.moe_ffn_hidden_size = inter->as_int(1, kBig);
      } else {
        m.moe_ffn_hidden_size = o.req("moe_intermediate_size").as_int(1, kBig);
        if (inter) m.ffn_hidden_size = inter->as_int(1, kBig);
      }
      // Nemotron-H sizes its one shared expert with moe_shared_expert_intermediate_size
      // (Megatron-Bridge's CONFIG_MAPPING; its n_shared_experts is an HF-only default).
      const auto n_shared = type.hybrid ? std::nullopt : o.get("n_shared_experts");
      const auto shared_size = o.get(type.hybrid ? "moe_shared_expert_intermediate_size"
                                                 : "shared_expert_intermediate_size");
      if (n_shared && shared_size)
        shared_size->fail("give either n_shared_experts or shared_expert_intermediate_size");
      if (n_shared && !n_shared->json().is_null())
        m.shared_expert_ffn_hidden_size = n_shared->as_int(0, 64) * m.moe_ffn_hidden_size;
      if (shared_size) m.shared_expert_ffn_hidden_size = shared_size->as_int(0, kBig);

      m.router_scoring = o.string_or("scoring_func", type.hybrid ? "sigmoid" : "softmax");
      // DeepSeek-V4's sqrt(softplus) scores with a correction bias (Megatron-LM dev
      // moe_router_score_function sqrtsoftplus): the same elementwise kernels and bias as the
      // sigmoid router, priced as it.
      if (m.router_scoring != "softmax" && m.router_scoring != "sigmoid" &&
          m.router_scoring != "sqrtsoftplus")
        o.get("scoring_func")->fail("unknown scoring_func; known: softmax, sigmoid, sqrtsoftplus");
      m.router_groups = o.int_or("n_group", 0, 0, m.num_experts);
      m.router_topk_groups =
          o.int_or("topk_group", 0, 0, std::max<std::int64_t>(m.router_groups, 0));
      if (m.router_groups > 0 && m.num_experts % m.router_groups != 0)
        o.get("n_group")->fail(fmt::format("{} experts are not divisible into {} groups",
                                           m.num_experts, m.router_groups));
    } else {
      m.ffn_hidden_size = o.req("intermediate_size").as_int(1, kBig);
      // Expert keys of a model without experts: a config may carry them empty (null, 0);
      // a value would change nothing, so it is refused rather than ignored.
      o.ignore({"num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                "shared_expert_intermediate_size", "scoring_func", "n_group", "topk_group"});
      for (const char* k :
           {"num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts",
            "shared_expert_intermediate_size", "scoring_func", "n_group", "topk_group"}) {
        const auto x = o.node().json().find(k);
        if (x == o.node().json().end()) continue;
        if (!x->is_null() && !(x->is_number() && *x == 0))
          o.node().child_at(*x, k).fail(
              "the model has no routed experts (num_experts 0 or absent): this key changes "
              "nothing; set the experts' count or leave it out");
      }
      if (type.gpt_oss) node.fail("a gpt_oss model has experts (num_local_experts)");
    }
    m.attention_bias = o.bool_or("attention_bias", false);
    if (m.attention_bias && m.attention == workload::AttentionKind::mla)
      o.get("attention_bias")->fail("attention biases with MLA are not modeled");
    m.mlp_bias = o.bool_or("mlp_bias", false);
    m.attention_sinks = m.expert_bias = m.router_bias = type.gpt_oss;
    // GPT-OSS's activation clamp (Megatron-Bridge v0.4.0 models/gpt_oss/gpt_oss_bridge.py
    // 82-84: quick GeGLU, activation_func_clamp_value 7.0, glu_linear_offset 1.0). A SwiGLU's
    // clamp (DeepSeek-V4's swiglu_limit) runs inside the compiled SwiGLU kernel
    // (fused_bias_swiglu.py clamped_swiglu and its backward, jit_fuser, at d48bd6be 51-59 and
    // 124-155): no kernel of its own, so nothing to price.
    if (type.gpt_oss)
      if (auto v = o.get("swiglu_limit")) m.activation_clamp = v->as_number(0, 1e6);
    rope_scaling(o, m);
    // The part of each head RoPE rotates (workload::ModelConfig::rotary_fraction).
    if (auto v = o.get("partial_rotary_factor")) {
      m.rotary_fraction = v->as_number(0, 1);
      if (m.rotary_fraction <= 0) v->fail("must be above 0 (the part of each head RoPE rotates)");
    }
    if (type.hybrid)
      hybrid_layers(o, m);
    else if (type.linear_attention)
      linear_layers(o, m);
    else if (!type.dsv4)
      sliding_window(o, m);
    // A gated shared expert (Megatron --moe-shared-expert-gate): Qwen3-Next's, on by its type.
    const bool has_shared = m.shared_expert_ffn_hidden_size > 0;
    m.shared_expert_gate = o.bool_or("shared_expert_gate", type.linear_attention && has_shared);
    if (m.shared_expert_gate && !has_shared)
      o.get("shared_expert_gate")->fail("the model has no shared expert to gate");

    // Which decoder layers are MoE. Megatron-style list (moe_layer_freq: [0,0,1,...]),
    // DeepSeek (first_k_dense_replace, moe_layer_freq N), Qwen (decoder_sparse_step,
    // mlp_only_layers), else every layer when the model has experts.
    if (type.hybrid) {
      for (const char* k :
           {"first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers"})
        if (auto x = o.get(k))
          x->fail("a hybrid model's MoE layers are its hybrid_override_pattern's 'E'");
    } else {
      m.moe_layer.assign(static_cast<std::size_t>(m.num_layers), m.num_experts > 0);
    }
    const std::int64_t first_dense = o.int_or("first_k_dense_replace", 0, 0, m.num_layers);
    std::int64_t freq = 1;
    bool explicit_list = false;
    if (auto f = o.get("moe_layer_freq")) {
      explicit_list = f->json().is_array();
      if (explicit_list) {
        if (f->json().size() != static_cast<std::size_t>(m.num_layers))
          f->fail(fmt::format("lists {} layers; the model has {}", f->json().size(), m.num_layers));
        std::size_t i = 0;
        f->for_each_element([&](const Node& e) { m.moe_layer[i++] = e.as_int(0, 1) == 1; });
      } else {
        freq = f->as_int(1, m.num_layers);
      }
    }
    const std::int64_t sparse_step = o.int_or("decoder_sparse_step", 1, 1, m.num_layers);
    std::vector<std::int64_t> mlp_only;
    if (auto mo = o.get("mlp_only_layers"))
      mo->for_each_element(
          [&](const Node& e) { mlp_only.push_back(e.as_int(0, m.num_layers - 1)); });
    if (m.num_experts > 0 && !explicit_list && !type.hybrid) {
      for (std::int64_t i = 0; i < m.num_layers; ++i) {
        bool moe = i >= first_dense && (i - first_dense) % freq == 0 && (i + 1) % sparse_step == 0;
        for (auto d : mlp_only) moe = moe && d != i;
        m.moe_layer[static_cast<std::size_t>(i)] = moe;
      }
    }
    if (!type.hybrid && m.num_experts > 0 && m.num_dense_layers() > 0 && m.ffn_hidden_size == 0)
      (inter ? *inter : node).fail("dense layers need intermediate_size");

    // HF fields with no effect on step time or memory in this model: numerics inside
    // kernels moesim prices anyway (norm epsilon, RoPE and YaRN parameters, GPT-OSS's
    // SwiGLU clamp swiglu_limit, routing scale factors), token ids, the checkpoint's
    // storage (torch_dtype, quantization_config: the training precision is
    // training.precision), inference options, and loss coefficients (routing is the
    // scenario's routing block).
    o.ignore({"architectures",
              "attention_dropout",
              "auto_map",
              "bos_token_id",
              "eos_token_id",
              "pad_token_id",
              "hidden_act",
              "initializer_range",
              "max_position_embeddings",
              "pretraining_tp",
              "rms_norm_eps",
              "rope_theta",
              "routed_scaling_factor",
              "norm_topk_prob",
              "topk_method",
              "torch_dtype",
              "transformers_version",
              "use_cache",
              "aux_loss_alpha",
              "seq_aux",
              "ep_size",
              "output_router_logits",
              "router_aux_loss_coef",
              "router_jitter_noise",
              "quantization_config",
              "head_dim_original",
              "rope_interleave",
              "tie_word_embeddings",
              "swiglu_limit",
              "initial_context_length"});
  });
  return m;
}

}  // namespace moesim::config
