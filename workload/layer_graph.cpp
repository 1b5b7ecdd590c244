// workload/layer_graph.cpp: the layer templates of a model (workload/layer_graph.hpp): the
// module names, the CUDA-graph capture set, the dense layers' MLP, and the assembly of the
// decoder layers (attention and MLP blocks), the embedding, the output layer with its
// loss, and an MTP module. The pieces, each in its own file:
//   layer_graph_detail.hpp     LayerBuilder and the helpers the blocks share
//   layer_graph_builder.cpp    their definitions: GEMMs, quantization, communication, norms
//   layer_graph_attention.cpp  the attention block (MLA or GQA)
//   layer_graph_moe.cpp        the MoE MLP block: router, dispatchers, experts, combine
//   layer_graph_mamba.cpp      a hybrid model's Mamba-2 mixer
//   layer_graph_gdn.cpp        the Gated DeltaNet mixer of linear-attention layers
//   layer_graph_dsv4.cpp       DeepSeek-V4's attention (window, CSA, HCA) and mHC
#include "workload/layer_graph.hpp"

#include <algorithm>
#include <optional>

#include "workload/layer_graph_detail.hpp"

namespace moesim::workload {
namespace {

using detail::attention_block;
using detail::bias_dropout_add;
using detail::LayerBuilder;
using detail::moe_mlp;
using detail::norm;
using detail::Shapes;
using detail::sp_saved_shard;
using detail::SpInput;
using detail::tp_gather;
using detail::tp_scatter;

// The word-embedding lookup, `lookups` passes over the output (read, write; learned
// positions add two), keeping the token ids only. At TP > 1 the table is split by vocabulary
// (Megatron-Core VocabParallelEmbedding, tensor_parallel/layers.py 330-379 at core_v0.19.0):
// each rank looks up all T tokens and zeroes the rows outside its shard, and the ranks'
// partial rows are summed, reduce-scattered to the sequence shard under sequence parallelism
// (after a [b s h] -> [s b h] copy) and all-reduced without it, which moesim prices as the
// reduce-scatter and backward all-gather of a row-parallel linear's output (tp_scatter).
void vocab_parallel_lookup(LayerBuilder& b, const Shapes& s, const std::string& name,
                           double lookups, double bwd_factor) {
  b.memory(name, Module::embedding, (s.tp > 1 ? s.T : s.Tn) * s.h * 2 * lookups, bwd_factor);
  if (s.tp <= 1) return;
  b.memory(name + ".mask", Module::embedding, s.T * s.h * 2, 0.0);
  if (s.sequence_parallel()) b.memory(name + ".transpose", Module::embedding, s.T * s.h * 4);
  b.comm(name + ".tp_reduce", Module::embedding, CommOp::tp_reduce_scatter, CommOp::tp_all_gather,
         s.T * s.h * 2);
}

void dense_mlp(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& m = in.model;
  const double f = static_cast<double>(m.ffn_hidden_size) / s.tp;
  const double e = static_cast<double>(m.ffn_matrices() - 1);  // gate+up = 2 x F
  const std::size_t start = b.mark();
  const std::size_t bwd_start = b.bwd_mark();
  norm(b, s, Module::mlp, "mlp.norm", in.stack.norm_quant_fusion, in.framework,
       workload::OffloadTarget::mlp_norm, true);
  // Under full recompute the layer's checkpoint re-runs the MLP already (Megatron-Core sets
  // recompute_mlp under selective granularity only, transformer_layer.py 447-514 at 24bad8e677).
  const bool full = has(in.framework.recompute_modules, RecomputeModule::full);
  const bool whole = !full && has(in.framework.recompute_modules, RecomputeModule::mlp);
  // 'layernorm' recomputes this norm as DeepSeek's framework does (it recomputes every RMSNorm:
  // arXiv 2412.19437 3.2.3; scenarios/h800/dsv3-production.json). Megatron-Core fuses it into
  // linear_fc1 (a TELayerNormColumnParallelLinear; the dense layer's pre_mlp_layernorm is an
  // IdentityOp, gpt_layer_specs.py 325 at core_v0.19.0) and keeps it; the prediction says so
  // (config/caveats.cpp).
  if (!whole && !full && has(in.framework.recompute_modules, RecomputeModule::layernorm))
    b.recompute_since(start, LayerBuilder::Checkpoint::without_output);
  tp_gather(b, s, Module::mlp, "mlp", true, SpInput::quantized);
  b.linear("mlp.fc1", Module::mlp, s.T, e * f, s.h, true, false);
  b.module_calls_on_last(1, 0);  // the MLP module around its linears
  sp_saved_shard(b, s);
  detail::lora_adapter(b, in, s, Module::mlp, workload::LoraTarget::linear_fc1, "mlp.fc1", e * f);
  b.memory("mlp.act", Module::mlp, s.T * (e * f + f) * 2, detail::act_bwd_factor(e),
           s.T * e * f * 2);
  b.linear("mlp.fc2", Module::mlp, s.T, s.h, f, true, true);
  tp_scatter(b, s, Module::mlp, "mlp");
  if (whole) b.recompute_since(start, LayerBuilder::Checkpoint::function);
  // Megatron's mlp_bda, outside the recomputed MLP.
  bias_dropout_add(b, in, s, Module::mlp, "mlp", bwd_start);
}

}  // namespace

const sim_core::NameTable<Module>& module_names() {
  static constexpr std::array<sim_core::NameEntry<Module>, kModuleCount> kEntries{{
      {Module::embedding, "embedding", "input embedding"},
      {Module::attn, "attn", "attention block (norm, projections, core attention)"},
      {Module::mlp, "mlp", "dense-layer MLP"},
      {Module::moe_router, "moe_router", "pre-MLP norm and router"},
      {Module::moe_preprocess, "moe_preprocess", "EP preprocess before dispatch"},
      {Module::moe_dispatch, "moe_dispatch", "token dispatch and permute"},
      {Module::experts, "experts", "routed experts (grouped GEMMs, activation)"},
      {Module::shared_expert, "shared_expert", "shared expert"},
      {Module::moe_combine, "moe_combine", "unpermute and combine"},
      {Module::head, "head", "output layer"},
      {Module::loss, "loss", "loss"},
      {Module::mamba, "mamba", "Mamba-2 mixer (hybrid models)"},
  }};
  static constexpr sim_core::NameTable<Module> kTable{kEntries};
  return kTable;
}

CaptureSet::CaptureSet(const Framework& fw, const StackSwitches& stack) {
  const auto& scopes = fw.cuda_graph_scope;
  const auto on = [&](CudaGraphScope s) {
    return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
  };
  const auto set = [&](Module m, bool v) { on_[static_cast<std::size_t>(m)] = v; };
  full_ = on(CudaGraphScope::full_iteration);
  on_.fill(full_);
  if (full_) return;
  set(Module::attn, on(CudaGraphScope::attn));
  set(Module::mlp, on(CudaGraphScope::mlp));
  set(Module::mamba, on(CudaGraphScope::mamba));
  set(Module::moe_router, on(CudaGraphScope::moe_router) || on(CudaGraphScope::moe));
  set(Module::moe_preprocess, on(CudaGraphScope::moe_preprocess) || on(CudaGraphScope::moe));
  for (Module m : {Module::moe_dispatch, Module::experts, Module::moe_combine})
    set(m, on(CudaGraphScope::moe));
  // Under the shared-expert overlap the dispatcher runs the shared expert (MoELayer's
  // shared_experts_compute, the part the router's graph captures, does nothing:
  // moe_layer.py 507-530 at d98e8a64), so only the whole MoE block's graph holds it.
  set(Module::shared_expert,
      on(CudaGraphScope::moe) ||
          (!scopes.empty() && stack.cuda_graph_shared_expert && !fw.moe_shared_expert_overlap));
}

std::optional<std::string> fused_grouped_mlp_blocked(const ModelConfig& m, Precision p,
                                                     bool hopper) {
  if (m.num_experts == 0) return std::string("the model has no routed experts");
  if (p == Precision::nvfp4)
    return std::string(
        "TransformerEngine's NVFP4 fusion of the grouped MLP (with the Hadamard transform) is "
        "not modeled: priced as the op fuser's unfused ops");
  if (p != Precision::mxfp8)
    return std::string(
        "TransformerEngine fuses the grouped MLP under MXFP8 and NVFP4 only: under this "
        "precision the op fuser runs its unfused ops");
  if (hopper)
    return std::string(
        "the CuTe DSL kernels need compute capability 10 (Blackwell): on Hopper TE's "
        "is_supported is false and the op fuser runs its unfused ops");
  // Gated experts are SwiGLU or GPT-OSS's clamped quick-GeGLU, the ungated ones squared
  // ReLU (Nemotron 3): all three are fused.
  return std::nullopt;
}

ModelTemplates build_templates(const TemplateInputs& in) {
  const auto& p = in.parallelism;
  Shapes s;
  s.tp = static_cast<double>(p.tp);
  s.h = static_cast<double>(in.model.hidden_size);
  s.T = static_cast<double>(in.training.micro_batch_size * in.training.seq_length) /
        static_cast<double>(p.cp);
  s.Tn = p.sequence_parallel ? s.T / s.tp : s.T;
  s.tp_overlap = in.framework.tp_comm_overlap && p.sequence_parallel && p.tp > 1;

  ModelTemplates t;
  const bool full = has(in.framework.recompute_modules, RecomputeModule::full);
  const bool dsv4 = in.model.is_dsv4();
  for (const Mixer mixer : kMixers) {
    if (!in.model.has_mixer(mixer)) continue;
    for (const bool moe : {false, true}) {
      LayerTemplate& lt = t.decoder(moe, mixer);
      LayerBuilder b(in, lt);
      const std::size_t start = b.mark();
      // DeepSeek-V4's mHC wraps each sub-block (layer_graph_dsv4.cpp).
      if (dsv4) detail::mhc_pre(b, in, s, "attn.mhc_pre", Module::attn);
      if (mixer == Mixer::linear)
        detail::gdn_block(b, in, s);
      else if (dsv4)
        detail::dsv4_attention_block(b, in, s, mixer);
      else if (!in.model.hybrid()) {
        const LayerBuilder::PrecisionScope own(b, in.training.precision_of(QuantModule::attention));
        attention_block(b, in, s, mixer == Mixer::window);
      }
      if (dsv4) {
        detail::mhc_post(b, in, s, "attn.mhc_post", Module::attn);
        detail::mhc_pre(b, in, s, "mlp.mhc_pre", moe ? Module::moe_router : Module::mlp);
      }
      if (moe) {
        if (in.model.is_moe()) moe_mlp(b, in, s);
      } else {
        dense_mlp(b, in, s);
      }
      if (dsv4) detail::mhc_post(b, in, s, "mlp.mhc_post", moe ? Module::moe_combine : Module::mlp);
      if (full) b.recompute_since(start, LayerBuilder::Checkpoint::function);
      b.finish();
    }
  }
  if (in.model.hybrid()) {
    for (LayerTemplate* lt : {&t.mamba, &t.attention}) {
      LayerBuilder b(in, *lt);
      const std::size_t start = b.mark();
      if (lt == &t.mamba) {
        detail::mamba_block(b, in, s);
      } else {
        const LayerBuilder::PrecisionScope own(b, in.training.precision_of(QuantModule::attention));
        attention_block(b, in, s, false);
      }
      if (full) b.recompute_since(start, LayerBuilder::Checkpoint::function);
      b.finish();
    }
  }
  {
    LayerBuilder b(in, t.embedding);
    // Word lookup (read, write); learned positions add a second lookup and the sum.
    const double lookups = in.model.learned_positions > 0 ? 4 : 2;
    // Backward scatters the gradient into the table (none under LoRA: the table is frozen).
    vocab_parallel_lookup(b, s, "embedding", lookups, in.training.lora ? 0.0 : 2.0);
    // DeepSeek-V4's mHC copies the embedding into its n streams (hyper_connection.py
    // 669-686 at d48bd6be: reads one, writes n; backward sums them back).
    const double streams = static_cast<double>(in.model.residual_streams());
    if (streams > 1)
      b.memory("embedding.mhc_expand", Module::embedding, s.Tn * s.h * 2 * (streams + 1));
    b.finish();
  }
  {
    LayerBuilder b(in, t.head);
    const double v = static_cast<double>(in.padded_vocab) / s.tp;
    // DeepSeek-V4's head contracts the n streams into one (hyper_connection.py 193-207 at
    // d48bd6be, under torch.compile: the streams' RMS, an [n h] x [n h, n] FP32 projection, the
    // weighted sum; reads the streams, writes one; backward about twice the traffic).
    const double streams = static_cast<double>(in.model.residual_streams());
    if (streams > 1)
      b.memory("head.mhc_contract", Module::head, s.Tn * s.h * 2 * (streams + 1), 2.0,
               s.Tn * s.h * 2 * streams);
    norm(b, s, Module::head, "head.norm", true, in.framework, std::nullopt);
    // The output layer is column-parallel (Megatron-Core's own ColumnParallelLinear, no
    // userbuffers): under sequence parallelism it gathers its input first.
    // Megatron --fp8-output-proj runs the LM head as a TE linear under MXFP8.
    const bool fp8_head = in.framework.fp8_output_proj;
    const bool quantize_input =
        tp_gather(b, s, Module::head, "head", false, fp8_head ? SpInput::quantize : SpInput::bf16);
    b.linear("head.output", Module::head, s.T, v, s.h, fp8_head, quantize_input, 1, fp8_head);
    sp_saved_shard(b, s, false);
    // The loss keeps a logit-sized tensor for backward (workload::CrossEntropy): TE's the
    // BF16 gradient written over the logits (backward scales it: read 2, write 2);
    // Megatron's native kernels the FP32 exponentials, after an FP32 cast (read 2, write
    // 4) and, unfused, separate max, subtract, exp, sum and divide passes over them
    // (4 + 8 + 8 + 4 + 8 bytes); their backward turns the exponentials into the gradient
    // in place (read 4, write 4) and casts it to BF16 (read 4, write 2).
    const auto ce = in.framework.cross_entropy;
    const double ce_traffic = ce == CrossEntropy::te       ? 2 + 2
                              : ce == CrossEntropy::native ? 2 + 4 + 4
                                                           : 2 + 4 + 32;
    const double ce_bwd = ce == CrossEntropy::te ? 2 + 2 : 4 + 4 + 4 + 2;
    b.memory("loss.cross_entropy", Module::loss, s.T * v * ce_traffic, ce_bwd / ce_traffic,
             s.T * v * (ce == CrossEntropy::te ? 2 : 4));
    b.finish();
  }
  {
    // An MTP module (Megatron-Core multi_token_prediction.py; DeepSeek-V3 report 2.2):
    // the shared embedding looks up the shifted tokens; RMSNorm of them and of the
    // previous depth's hidden states, concatenated and projected back to h (eh_proj,
    // 2h -> h); a decoder layer of the last layer's kind; then the shared output head
    // with its final norm and loss.
    LayerTemplate pre;
    LayerBuilder b(in, pre);
    vocab_parallel_lookup(b, s, "mtp.embedding", 2, 2.0);
    norm(b, s, Module::head, "mtp.enorm", true, in.framework, std::nullopt);
    norm(b, s, Module::head, "mtp.hnorm", true, in.framework, std::nullopt);
    const bool quantize_input =
        tp_gather(b, s, Module::head, "mtp", true, SpInput::quantize, 2 * s.h);
    b.linear("mtp.eh_proj", Module::head, s.T, s.h / s.tp, 2 * s.h, true, quantize_input);
    sp_saved_shard(b, s);
    b.finish();
    std::vector<const LayerTemplate*> parts{
        &pre, &t.decoder(in.model.mtp_is_moe(), in.model.mtp_mixer())};
    // A hybrid model's MTP block is its pattern's layers (Megatron-Core
    // multi_token_prediction.py with mtp_hybrid_override_pattern), built in BF16 under an
    // FP8 recipe where the model keeps its MTP spec in BF16 (keep_mtp_spec_in_bf16).
    // The BF16 module is the same module built under BF16 (its projection and the shared
    // head included).
    if (in.model.hybrid() && in.model.mtp_bf16 && quantized(in.training.precision) &&
        in.training.mtp_layers > 0 && !in.model.mtp_pattern.empty()) {
      Training plain = in.training;
      plain.precision = Precision::bf16;
      plain.mtp_layers = 0;
      t.mtp = build_templates({in.model, plain, in.parallelism, in.framework, in.stack,
                               in.padded_vocab, in.ep_load, in.fp8_tn_only, false})
                  .mtp;
      return t;
    }
    if (in.model.hybrid()) {
      parts.resize(1);
      for (const HybridLayer k : in.model.mtp_pattern)
        parts.push_back(k == HybridLayer::mamba       ? &t.mamba
                        : k == HybridLayer::attention ? &t.attention
                        : k == HybridLayer::moe       ? &t.moe
                                                      : &t.dense);
    }
    parts.push_back(&t.head);
    for (const LayerTemplate* part : parts) {
      t.mtp.fwd.insert(t.mtp.fwd.end(), part->fwd.begin(), part->fwd.end());
      t.mtp.transient_bytes = std::max(t.mtp.transient_bytes, part->transient_bytes);
    }
    for (auto part = parts.rbegin(); part != parts.rend(); ++part)
      t.mtp.bwd.insert(t.mtp.bwd.end(), (*part)->bwd.begin(), (*part)->bwd.end());
  }
  return t;
}

ModelTemplates build_templates(const TemplateInputs& in, unsigned build) {
  if (build == kRecipeBuild) return build_templates(in);
  Training tr = in.training;
  Framework fw = in.framework;
  if (build & kBf16Build) {
    tr.precision = Precision::bf16;
    tr.bf16_layers_at_start = tr.bf16_layers_at_end = 0;
    tr.module_precision = {};
    fw.fp8_dot_product_attention = false;
    fw.fp8_output_proj = false;
    fw.fp8_param_gather = false;
  }
  if (build & kKeptBuild) {
    std::erase(fw.recompute_modules, RecomputeModule::full);
    fw.recompute_num_layers = 0;
  }
  // A BF16 layer runs the op fuser's unfused ops (TE fuses the grouped MLP under MXFP8).
  return build_templates({in.model, tr, in.parallelism, fw, in.stack, in.padded_vocab, in.ep_load,
                          in.fp8_tn_only, in.fused_grouped_mlp && !(build & kBf16Build)});
}

}  // namespace moesim::workload
