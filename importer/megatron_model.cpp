// importer/megatron_model.cpp: the model of a Megatron-LM command (importer/
// megatron_detail.hpp): Hugging Face config.json fields from the shape flags (per-layer
// lists, windowed attention, MLA, experts), the model preset of the same shape or the
// --vocab-size the shape then needs, and every shape flag checked against --model's preset.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <memory>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "config/load.hpp"
#include "importer/megatron_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// Megatron's per-layer lists (--moe-layer-freq, --window-attn-skip-freq): a Python list
// expression of 0/1 lists, sums and integer repeats, parenthesized at will:
// "([0]*3+[1]*58)", "([1]*3+[0]*1)*3" (arguments.py's help). Lists longer than the
// model are refused while parsing, before they are built.
class LayerFreqParser {
 public:
  LayerFreqParser(std::string expr, std::int64_t layers, const Flags& f, std::string flag)
      : e_(std::move(expr)), max_(layers), f_(f), flag_(std::move(flag)) {}
  std::vector<int> parse() {
    std::vector<int> v = sum();
    if (i_ != e_.size()) bad();
    return v;
  }

 private:
  [[noreturn]] void bad() const {
    f_.fail(flag_,
            fmt::format("'{}': expected an integer or a list expression like ([0]*3+[1]*58)", e_));
  }
  void check(std::size_t n) const {
    if (static_cast<std::int64_t>(n) > max_)
      f_.fail(flag_, fmt::format("'{}' lists more than the {} layers of --num-layers", e_, max_));
  }
  bool eat(char c) {
    if (i_ < e_.size() && e_[i_] == c) return ++i_, true;
    return false;
  }
  std::vector<int> sum() {
    std::vector<int> v = product();
    while (eat('+')) {
      const auto w = product();
      check(v.size() + w.size());
      v.insert(v.end(), w.begin(), w.end());
    }
    return v;
  }
  std::vector<int> product() {
    std::vector<int> v = atom();
    while (eat('*')) {
      const std::size_t from = i_;
      while (i_ < e_.size() && std::isdigit(static_cast<unsigned char>(e_[i_]))) ++i_;
      std::int64_t n = 0;
      const auto [p, ec] = std::from_chars(e_.data() + from, e_.data() + i_, n);
      if (from == i_ || ec != std::errc()) bad();
      if (v.empty() || n == 0) {
        v.clear();
        continue;
      }
      if (n > max_) check(static_cast<std::size_t>(max_) + 1);
      check(v.size() * static_cast<std::size_t>(n));
      std::vector<int> r;
      for (std::int64_t k = 0; k < n; ++k) r.insert(r.end(), v.begin(), v.end());
      v = std::move(r);
    }
    return v;
  }
  std::vector<int> atom() {
    if (eat('(')) {
      std::vector<int> v = sum();
      if (!eat(')')) bad();
      return v;
    }
    if (!eat('[')) bad();
    std::vector<int> v;
    if (eat(']')) return v;
    do {
      if (eat('0'))
        v.push_back(0);
      else if (eat('1'))
        v.push_back(1);
      else
        bad();
      check(v.size());
    } while (eat(','));
    if (!eat(']')) bad();
    return v;
  }
  std::string e_;
  std::int64_t max_;
  const Flags& f_;
  std::string flag_;
  std::size_t i_ = 0;
};

// A per-layer 0/1 list flag: absent, every layer 1; an integer N, `every(i, N)` for the
// 0-based layer i; else a list expression of exactly --num-layers entries.
template <class Every>
std::vector<int> layer_pattern(const Flags& f, const std::string& flag, std::int64_t layers,
                               Every every) {
  const auto s = f.str(flag);
  if (!s) return std::vector<int>(static_cast<std::size_t>(layers), 1);
  std::string e;
  for (char c : *s)
    if (!std::isspace(static_cast<unsigned char>(c))) e += c;
  std::vector<int> out;
  if (!e.empty() && std::isdigit(static_cast<unsigned char>(e[0]))) {
    const auto n = f.positive(flag);
    for (std::int64_t i = 0; i < layers; ++i) out.push_back(every(i, n) ? 1 : 0);
    return out;
  }
  out = LayerFreqParser(e, layers, f, flag).parse();
  if (static_cast<std::int64_t>(out.size()) != layers)
    f.fail(flag, fmt::format("lists {} layers; --num-layers is {}", out.size(), layers));
  return out;
}
// --moe-layer-freq N: every N-th layer is MoE, from layer 0.
std::vector<int> moe_layer_pattern(const Flags& f, std::int64_t layers) {
  return layer_pattern(f, "--moe-layer-freq", layers,
                       [](std::int64_t i, std::int64_t n) { return i % n == 0; });
}

// Windowed attention (Megatron-Core transformer/utils.py is_layer_window_attention @
// d98e8a64): --window-size "left,right" windows every layer, or with
// --window-attn-skip-freq N all but every N-th (1-based layer % N == 0 is full), or the
// layers a 0/1 list marks 1. TE's left window counts the tokens before the query, so a
// left window of L is Hugging Face's sliding_window L + 1 (GPT-OSS: 127,0 and 128).
struct FlagWindow {
  std::int64_t tokens = 0;   // Hugging Face's sliding_window
  std::vector<bool> layers;  // per decoder layer: windowed
};
std::optional<FlagWindow> window_from_flags(const Flags& f, std::int64_t layers) {
  const auto w = f.str("--window-size");
  if (!w) {
    if (f.has("--window-attn-skip-freq")) f.fail("--window-attn-skip-freq", "needs --window-size");
    return std::nullopt;
  }
  std::string t;
  for (char c : *w)
    if (c != '(' && c != ')' && !std::isspace(static_cast<unsigned char>(c))) t += c;
  const auto comma = t.find(',');
  std::int64_t left = -1, right = -1;
  const auto num = [&](std::string_view v, std::int64_t& out) {
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size();
  };
  if (comma == std::string::npos || !num(std::string_view(t).substr(0, comma), left) ||
      !num(std::string_view(t).substr(comma + 1), right) || left < 0)
    f.fail("--window-size",
           fmt::format("'{}': expected left,right token counts (GPT-OSS: 127,0)", *w));
  if (right != 0)
    f.fail("--window-size",
           "a right window (attention to later tokens) is not modeled: causal only");
  FlagWindow out{left + 1, {}};
  for (int v : layer_pattern(f, "--window-attn-skip-freq", layers,
                             [](std::int64_t i, std::int64_t n) { return (i + 1) % n != 0; }))
    out.layers.push_back(v == 1);
  return out;
}

// Linear attention (Megatron-LM --experimental-attention-variant gated_delta_net, before
// 6630c7f3b3 --linear-attention-type; arguments and defaults: transformer_config.py 349-369
// at cd4afffa): a Qwen3-Next model whose layers are Gated DeltaNet but every
// --linear-attention-freq N-th ((i + 1) % N == 0 is full attention), or a 0/1 list (1 =
// linear); heads from the --linear-* flags. Sets the config.json fields of the qwen3_next
// model type; false when the model has no linear attention.
bool linear_attention_from_flags(const Flags& f, std::int64_t layers, Json& m) {
  const char* flag = f.has("--experimental-attention-variant") ? "--experimental-attention-variant"
                                                               : "--linear-attention-type";
  if (!f.has(flag)) {
    for (const char* k :
         {"--linear-attention-freq", "--linear-num-key-heads", "--linear-num-value-heads",
          "--linear-key-head-dim", "--linear-value-head-dim", "--linear-conv-kernel-dim"})
      if (f.has(k)) f.fail(k, "needs --experimental-attention-variant gated_delta_net");
    return false;
  }
  f.choice(flag, "gated_delta_net", {"gated_delta_net"});
  if (!f.has("--linear-attention-freq"))
    f.fail(flag, "needs --linear-attention-freq (the full-attention layers' interval or list)");
  Json types = Json::array();
  for (int v : layer_pattern(f, "--linear-attention-freq", layers,
                             [](std::int64_t i, std::int64_t n) { return (i + 1) % n != 0; }))
    types.push_back(v == 1 ? "linear_attention" : "full_attention");
  m["model_type"] = "qwen3_next";
  m["layer_types"] = types;
  m["linear_num_key_heads"] = f.integer_or("--linear-num-key-heads", 16);
  m["linear_num_value_heads"] = f.integer_or("--linear-num-value-heads", 32);
  m["linear_key_head_dim"] = f.integer_or("--linear-key-head-dim", 128);
  m["linear_value_head_dim"] = f.integer_or("--linear-value-head-dim", 128);
  m["linear_conv_kernel_dim"] = f.integer_or("--linear-conv-kernel-dim", 4);
  return true;
}

}  // namespace

// Learned attention sinks (--softmax-type learnable) are GPT-OSS's: its model type carries
// them with the router and expert biases.
bool learned_sinks(const Flags& f) {
  return f.choice("--softmax-type", "vanilla", {"vanilla", "off-by-one", "learnable"}) ==
         "learnable";
}

namespace {

// The model as Hugging Face config.json fields from the shape flags (Megatron's
// defaults where a flag is absent), without the vocabulary.
Json model_from_flags(const Flags& f) {
  const auto layers = f.integer("--num-layers");
  const auto hidden = f.integer("--hidden-size");
  const auto heads = f.integer("--num-attention-heads");
  if (!layers || !hidden || !heads)
    f.fail(!layers   ? "--num-layers"
           : !hidden ? "--hidden-size"
                     : "--num-attention-heads",
           "the model's shape needs --num-layers, --hidden-size and --num-attention-heads (or "
           "--model PRESET)");
  const bool mla = f.has("--multi-latent-attention");
  const std::int64_t experts = f.integer_or("--num-experts", 0);
  const bool gpt_oss = learned_sinks(f);
  if (gpt_oss && experts == 0)
    f.fail(
        "--softmax-type",
        "learned attention sinks are modeled as GPT-OSS's, a model with experts (--num-experts)");
  if (gpt_oss && mla)
    f.fail("--multi-latent-attention", "GPT-OSS's attention with MLA is not modeled");
  Json m;
  m["model_type"] = gpt_oss ? "gpt_oss" : mla ? "deepseek_v3" : experts > 0 ? "qwen2_moe" : "llama";
  m["hidden_size"] = *hidden;
  m["num_hidden_layers"] = *layers;
  m["num_attention_heads"] = *heads;
  // arguments.py: 4 h, or with SwiGLU int(4 h x 2/3 / 64) x 64.
  const std::int64_t ffn = f.integer_or(
      "--ffn-hidden-size",
      f.has("--swiglu")
          ? static_cast<std::int64_t>(4.0 * static_cast<double>(*hidden) * 2 / 3 / 64) * 64
          : 4 * *hidden);
  m["intermediate_size"] = ffn;
  m["tie_word_embeddings"] = !f.has("--untie-embeddings-and-output-weights");
  // --quick-geglu: GPT-OSS's gated activation (x sigmoid(1.702 x), times the linear half):
  // gated like SwiGLU, two matrices in, one out.
  m["gated_linear_unit"] = f.has("--swiglu") || f.has("--quick-geglu");
  // --add-qkv-bias: the q, k, v projections' biases (moesim's attention_bias also counts the
  // output projection's, h parameters a layer). GPT-OSS has them wherever Megatron's default
  // --add-bias-linear stands (arguments.py turns add_qkv_bias on with it); other models are
  // taken without biases (Importer::framework notes it).
  if (f.has("--add-qkv-bias") || (gpt_oss && !f.has("--disable-bias-linear")))
    m["attention_bias"] = true;
  if (const auto c = f.number("--activation-func-clamp-value")) {
    if (!gpt_oss)
      f.fail("--activation-func-clamp-value",
             "the activation clamp is modeled on GPT-OSS's quick GeGLU (--softmax-type learnable)");
    m["swiglu_limit"] = *c;
  }
  // --rotary-percent: the part of each head RoPE rotates (HF partial_rotary_factor).
  if (const auto r = f.number("--rotary-percent"); r && *r != 1.0) m["partial_rotary_factor"] = *r;
  if (f.has("--enable-gpt-oss"))
    m["rope_scaling"] = {
        {"rope_type", "yarn"}, {"factor", 32.0}, {"mscale", 1.0}, {"mscale_all_dim", 0.0}};
  if (mla) {
    // MLA's q/kv latent norms are part of the attention (--qk-layernorm there names them).
    if (const auto q = f.integer("--q-lora-rank"))
      m["q_lora_rank"] = *q;
    else
      m["q_lora_rank"] = nullptr;
    m["kv_lora_rank"] = f.integer_or("--kv-lora-rank", 32);
    m["qk_nope_head_dim"] = f.integer_or("--qk-head-dim", 128);
    m["qk_rope_head_dim"] = f.integer_or("--qk-pos-emb-head-dim", 64);
    m["v_head_dim"] = f.integer_or("--v-head-dim", 128);
  } else {
    m["qk_layernorm"] = f.has("--qk-layernorm");
    m["num_key_value_heads"] =
        f.has("--group-query-attention") ? f.integer_or("--num-query-groups", 1) : *heads;
    if (const auto kv = f.integer("--kv-channels")) m["head_dim"] = *kv;
  }
  const bool linear = linear_attention_from_flags(f, *layers, m);
  if (linear && (gpt_oss || mla))
    f.fail("--experimental-attention-variant",
           "Gated DeltaNet layers with GPT-OSS's attention or MLA are not modeled");
  m["attn_output_gate"] = f.has("--attention-output-gate");
  if (f.has("--attention-output-gate") && (mla || !linear))
    f.fail("--attention-output-gate",
           "the gated attention output is modeled with Qwen3-Next's Gated DeltaNet layers "
           "(--experimental-attention-variant gated_delta_net) and GQA");
  if (!linear) m.erase("attn_output_gate");
  if (const auto w = window_from_flags(f, *layers)) {
    m["sliding_window"] = w->tokens;
    Json types = Json::array();
    for (bool v : w->layers) types.push_back(v ? "sliding_attention" : "full_attention");
    m["layer_types"] = types;
  }
  if (experts > 0) {
    m["n_routed_experts"] = experts;
    m["num_experts_per_tok"] = f.integer_or("--moe-router-topk", 2);
    // GPT-OSS's experts take intermediate_size (Mixtral's convention); it has no dense MLP.
    m[gpt_oss ? "intermediate_size" : "moe_intermediate_size"] =
        f.integer_or("--moe-ffn-hidden-size", ffn);
    if (const auto s = f.integer("--moe-shared-expert-intermediate-size"))
      m["shared_expert_intermediate_size"] = *s;
    m["shared_expert_gate"] = f.has("--moe-shared-expert-gate");
    if (f.has("--moe-shared-expert-gate") && !f.has("--moe-shared-expert-intermediate-size"))
      f.fail("--moe-shared-expert-gate",
             "gates a shared expert; the model has none (--moe-shared-expert-intermediate-size)");
    m["scoring_func"] = f.choice("--moe-router-score-function", "softmax", {"softmax", "sigmoid"});
    if (const auto g = f.integer("--moe-router-num-groups")) m["n_group"] = *g;
    if (const auto g = f.integer("--moe-router-group-topk")) m["topk_group"] = *g;
    m["moe_layer_freq"] = moe_layer_pattern(f, *layers);
  }
  return m;
}

// The resolved shape of a model JSON (every field the simulation reads but the name,
// source, type and vocabulary), to find a preset with the same shape.
bool same_shape(const workload::ModelConfig& a, const workload::ModelConfig& b) {
  return a.hidden_size == b.hidden_size && a.num_layers == b.num_layers &&
         a.num_heads == b.num_heads && a.num_kv_heads == b.num_kv_heads &&
         a.head_dim == b.head_dim && a.attention == b.attention &&
         a.mla.q_lora_rank == b.mla.q_lora_rank && a.mla.kv_lora_rank == b.mla.kv_lora_rank &&
         a.mla.qk_nope_head_dim == b.mla.qk_nope_head_dim &&
         a.mla.qk_rope_head_dim == b.mla.qk_rope_head_dim && a.mla.v_head_dim == b.mla.v_head_dim &&
         a.qk_layernorm == b.qk_layernorm && a.gated_linear_unit == b.gated_linear_unit &&
         a.num_experts == b.num_experts &&
         (a.num_experts == 0 ||
          (a.moe_ffn_hidden_size == b.moe_ffn_hidden_size && a.topk == b.topk &&
           a.shared_expert_ffn_hidden_size == b.shared_expert_ffn_hidden_size &&
           a.moe_layer == b.moe_layer && a.router_scoring == b.router_scoring &&
           a.router_groups == b.router_groups && a.router_topk_groups == b.router_topk_groups)) &&
         (a.num_dense_layers() == 0 || a.ffn_hidden_size == b.ffn_hidden_size) &&
         a.tie_word_embeddings == b.tie_word_embeddings && a.sliding_window == b.sliding_window &&
         (a.sliding_window == 0 || a.sliding_layer == b.sliding_layer) &&
         a.attention_sinks == b.attention_sinks && a.attention_bias == b.attention_bias &&
         a.expert_bias == b.expert_bias && a.router_bias == b.router_bias &&
         a.linear_layer == b.linear_layer &&
         (a.num_linear_layers() == 0 ||
          (a.gdn.key_heads == b.gdn.key_heads && a.gdn.value_heads == b.gdn.value_heads &&
           a.gdn.key_dim == b.gdn.key_dim && a.gdn.value_dim == b.gdn.value_dim &&
           a.gdn.conv == b.gdn.conv)) &&
         a.attention_output_gate == b.attention_output_gate &&
         a.shared_expert_gate == b.shared_expert_gate && a.activation_clamp == b.activation_clamp &&
         a.rotary_fraction == b.rotary_fraction && a.rope_concentration == b.rope_concentration;
}

// The shape flag model_from_flags reads each Hugging Face field from, so that a value the
// model loader refuses is reported against the flag the command line gave.
std::string_view flag_of_field(std::string_view field, bool gpt_oss) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 22> kFlags{{
      {"hidden_size", "--hidden-size"},
      {"num_hidden_layers", "--num-layers"},
      {"num_attention_heads", "--num-attention-heads"},
      {"intermediate_size", "--ffn-hidden-size"},
      {"num_key_value_heads", "--num-query-groups"},
      {"head_dim", "--kv-channels"},
      {"q_lora_rank", "--q-lora-rank"},
      {"kv_lora_rank", "--kv-lora-rank"},
      {"qk_nope_head_dim", "--qk-head-dim"},
      {"qk_rope_head_dim", "--qk-pos-emb-head-dim"},
      {"v_head_dim", "--v-head-dim"},
      {"n_routed_experts", "--num-experts"},
      {"num_experts_per_tok", "--moe-router-topk"},
      {"moe_intermediate_size", "--moe-ffn-hidden-size"},
      {"shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size"},
      {"n_group", "--moe-router-num-groups"},
      {"topk_group", "--moe-router-group-topk"},
      {"moe_layer_freq", "--moe-layer-freq"},
      {"sliding_window", "--window-size"},
      {"partial_rotary_factor", "--rotary-percent"},
      {"swiglu_limit", "--activation-func-clamp-value"},
      {"vocab_size", "--vocab-size"},
  }};
  const std::string_view key = field.substr(0, field.find_first_of(".["));
  if (gpt_oss && key == "intermediate_size") return "--moe-ffn-hidden-size";
  for (const auto& [f, flag] : kFlags)
    if (f == key) return flag;
  return {};
}

// The model the flags describe, resolved; what the loader refuses names the flag, with the
// field it became.
workload::ModelConfig resolve_model(const Json& j, const std::string& label) {
  try {
    return read_model(Node(j, "", std::make_shared<const std::string>(label)));
  } catch (const InputError& e) {
    const std::string_view flag =
        flag_of_field(e.path(), j.value("model_type", std::string()) == "gpt_oss");
    if (flag.empty()) throw;
    throw InputError(e.file(), std::string(flag),
                     fmt::format("{} (as the model's {})", e.message(), e.path()));
  }
}

}  // namespace

void Importer::model(Json& sc) {
  if (opts_.model) {
    sc["model"] = *opts_.model;
    const workload::ModelConfig preset = load_model_preset(*opts_.model);
    moe_ = preset.is_moe();
    vocab_ = preset.vocab_size;
    layers_ = preset.num_layers;
    check_against_preset(preset);
    return;
  }
  Json j = model_from_flags(f_);
  if (f_.str("--softmax-type") == "off-by-one")
    assume("model",
           "--softmax-type off-by-one: a softmax with one more term in its sum has no parameters "
           "and no kernel of its own, so it is priced as the plain softmax");
  moe_ = f_.integer_or("--num-experts", 0) > 0;
  const auto vocab = f_.integer("--vocab-size");
  // A preset with the same shape (the vocabulary comes from the tokenizer).
  for (const auto& name : preset_names(PresetKind::model)) {
    const workload::ModelConfig p = load_model_preset(name);
    Json probe = j;
    probe["vocab_size"] = vocab.value_or(p.vocab_size);
    if (same_shape(resolve_model(probe, opts_.source), p) && (!vocab || *vocab == p.vocab_size)) {
      sc["model"] = name;
      assume("model",
             fmt::format(
                 "preset '{}': the shape flags match it; its vocabulary ({}) is the tokenizer's",
                 name, p.vocab_size));
      vocab_ = p.vocab_size;
      layers_ = p.num_layers;
      return;
    }
  }
  if (!vocab)
    f_.fail("--num-layers",
            "no model preset has this shape, and the vocabulary comes from the tokenizer: "
            "give --vocab-size (or --model PRESET)");
  j["vocab_size"] = *vocab;
  vocab_ = *vocab;
  j["name"] = "imported";
  layers_ = resolve_model(j, opts_.source)
                .num_layers;  // refuses here, naming the flag's field, what the loader refuses
  sc["model"] = j;
}

// Every shape flag given must state what the preset has (--model): a flag that
// contradicts it is refused, naming both values.
void Importer::check_against_preset(const workload::ModelConfig& m) {
  const auto is = [&](std::string_view flag, std::int64_t have) {
    if (const auto v = f_.integer(flag); v && *v != have)
      throw InputError(
          opts_.source, std::string(flag),
          fmt::format("gives {}; preset '{}' has {} (leave --model out to import the shape from "
                      "the flags)",
                      *v, *opts_.model, have));
  };
  const auto on = [&](std::string_view flag, bool have) {
    if (f_.has(flag) && !have)
      throw InputError(opts_.source, std::string(flag),
                       fmt::format("preset '{}' has no such thing", *opts_.model));
  };
  const bool mla = m.attention == workload::AttentionKind::mla;
  is("--num-layers", m.num_layers);
  is("--hidden-size", m.hidden_size);
  is("--num-attention-heads", m.num_heads);
  if (m.num_dense_layers() > 0) is("--ffn-hidden-size", m.ffn_hidden_size);
  if (!mla) {
    is("--num-query-groups", m.num_kv_heads);
    is("--kv-channels", m.head_dim);
  }
  on("--swiglu", m.gated_linear_unit);
  on("--quick-geglu", m.gated_linear_unit);
  on("--add-qkv-bias", m.attention_bias);
  on("--untie-embeddings-and-output-weights", !m.tie_word_embeddings);
  // GPT-OSS's attention: the sinks and the windows must be the preset's.
  if (const auto sm = f_.str("--softmax-type"); sm && learned_sinks(f_) != m.attention_sinks)
    f_.fail("--softmax-type",
            fmt::format("gives {}; preset '{}' has {}", *sm, *opts_.model,
                        m.attention_sinks ? "learned sinks (learnable)" : "no sinks"));
  if (const auto w = window_from_flags(f_, m.num_layers);
      w && (w->tokens != m.sliding_window || w->layers != m.sliding_layer))
    f_.fail(
        "--window-size",
        fmt::format("windows {} layers at {} tokens; preset '{}' windows {} at {}",
                    std::count(w->layers.begin(), w->layers.end(), true), w->tokens, *opts_.model,
                    std::count(m.sliding_layer.begin(), m.sliding_layer.end(), true),
                    m.sliding_window));
  on("--multi-latent-attention", mla);
  if (mla) {
    is("--q-lora-rank", m.mla.q_lora_rank);
    is("--kv-lora-rank", m.mla.kv_lora_rank);
    is("--qk-head-dim", m.mla.qk_nope_head_dim);
    is("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim);
    is("--v-head-dim", m.mla.v_head_dim);
  }
  is("--num-experts", m.num_experts);
  if (m.is_moe()) {
    is("--moe-router-topk", m.topk);
    is("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    is("--moe-shared-expert-intermediate-size", m.shared_expert_ffn_hidden_size);
    is("--moe-router-num-groups", m.router_groups);
    is("--moe-router-group-topk", m.router_topk_groups);
    if (const auto sf = f_.str("--moe-router-score-function"); sf && *sf != m.router_scoring)
      f_.fail("--moe-router-score-function",
              fmt::format("gives {}; preset '{}' has {}", *sf, *opts_.model, m.router_scoring));
    if (f_.has("--moe-layer-freq")) {
      const auto pattern = moe_layer_pattern(f_, m.num_layers);
      for (std::size_t i = 0; i < pattern.size(); ++i)
        if ((pattern[i] == 1) != m.moe_layer[i])
          f_.fail("--moe-layer-freq", fmt::format("layer {} is {} here and {} in preset '{}'", i,
                                                  pattern[i] ? "MoE" : "dense",
                                                  m.moe_layer[i] ? "MoE" : "dense", *opts_.model));
    }
  }
}

}  // namespace moesim::importer::detail
