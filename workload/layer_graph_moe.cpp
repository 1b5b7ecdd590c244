// workload/layer_graph_moe.cpp: a decoder layer's MoE MLP block
// (workload/layer_graph_detail.hpp moe_mlp): its norm, the router, the shared expert, the
// token dispatch and combine of each dispatcher (Megatron's NCCL all-to-all / all-gather,
// DeepEP, HybridEP) with their permutes, host syncs and host work, and the routed experts'
// grouped GEMMs with expert tensor parallelism; its recompute and offloading options.
#include "workload/layer_graph_detail.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "hw_models/ep_dispatch.hpp"
#include "workload/eplb.hpp"

namespace moesim::workload::detail {
namespace {

// The router of an MoE layer (moe_mlp), on the `Tm` tokens this rank routes to `E` experts.
void moe_router(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, double Tm, double E,
                bool nccl, bool moe_recompute) {
  // Router: the GEMM (FP32 logits) and its small kernels (top-k, scores, aux loss, ...).
  // Counts: 72 unfused, 31 fused; with DeepEP/HybridEP, router + EP preprocess = 17
  // (docs/reference/gb200-journey.md, steps 3-4).
  b.linear("moe.router", Module::moe_router, Tm, E, s.h, false, false, 1, false);
  b.module_calls_on_last(1, 0);  // the MoELayer module around the router and the experts
  b.last_fwd().checkpoint_input = moe_recompute;  // its input is the checkpoint's
  // Host-only torch calls of router + EP preprocess in one forward, counted from
  // Megatron-Core effebd81f4 (docs/research/router-host-inventory.md): 52 unfused, 48
  // fused (plus 8 allocations in TE's fused router), 26 fused with the flex dispatcher.
  // Router fusion (--moe-router-fusion: TE's fused top-k and score kernels in TopKRouter,
  // megatron/core/transformer/moe/router.py) acts in the router, before any token
  // dispatcher; the flex dispatchers' count of 17 is the fused router's. Unfused, every
  // dispatcher's router runs the unfused kernels: 72 - 31 = 41 more forward kernels,
  // 32 - 14 = 18 more backward, 52 - 48 = 4 more host calls.
  const bool unfused_flex = !nccl && !in.stack.router_fusion;
  b.last_fwd().host_ops +=
      nccl ? (in.stack.router_fusion ? 48 : 52) : 26 + (unfused_flex ? 52 - 48 : 0);
  if (nccl && in.stack.router_fusion) b.last_fwd().host_allocs = 8;
  const double probs = Tm * E * 4;
  // Those counts are DeepSeek-V3's router: sigmoid scores, expert bias, group-limited top-k,
  // a scaling factor, the sequence aux loss. Unfused, the router runs one eager op per step
  // of its routing, so a softmax router without groups runs fewer (Megatron-Core
  // moe_utils.py topk_softmax_with_capacity 527-650 at 6a6cd47, topk_routing_with_score_
  // function at effebd81f4; router.py compute_routing_scores_for_aux_loss; rows of
  // docs/research/router-host-inventory.md 2.1 and 4):
  //   group-limited top-k (rows 14-25: 13 ops) where one torch.topk does (2): 11 forward;
  //   sigmoid: the normalisation (sum, + eps, divide) in the routing and again in the
  //   aux-loss scores (rows 28-30, 41-43: 6), the expert bias (the biased copy, the gather of
  //   the unbiased scores, the bias update: rows 12, 26, 65 eager: 4), the scaling factor
  //   (row 31: 1) where softmax normalises in its one kernel: 11 forward; in backward the
  //   two DivBackward0 (6 each) and their gradient meetings (1 each), the scale and the
  //   sequence loss's / bsz: 16.
  // Fused (TE's fused top-k, score and aux-loss kernels), one kernel each whatever the method.
  const bool plain_topk = in.model.router_groups == 0 || in.model.router_topk_groups == 0;
  const bool softmax = in.model.router_scoring == "softmax";
  const int unfused_fwd_fewer = (plain_topk ? 11 : 0) + (softmax ? 11 : 0),
            unfused_bwd_fewer = softmax ? 16 : 0;
  const int router_kernels = nccl ? (in.stack.router_fusion ? 31 : 72 - unfused_fwd_fewer) - 1
                                  : 17 - 1 - 1 + (unfused_flex ? 72 - unfused_fwd_fewer - 31 : 0);
  // Backward: about 32 GPU ops unfused, 14 fused, the router GEMM's two included
  // (docs/research/router-host-inventory.md).
  b.small_kernels("moe.router_k", Module::moe_router, router_kernels, probs,
                  (!in.stack.router_fusion ? 32 - unfused_bwd_fewer : 14) - 2);
  b.keep_last(probs);  // routing probabilities and the top-k map
}

// The routed experts of an MoE layer (moe_mlp) on the `tokens_in` tokens the rank receives,
// between the dispatch and the combine.
// `width`: the tokens' width there, the hidden size or LatentMoE's latent size.
void routed_experts(LayerBuilder& b, const TemplateInputs& in, double tokens_in,
                    double local_experts, double width, double act_bytes, bool moe_recompute) {
  const double h_bytes = width * 2;
  const auto& m = in.model;
  const auto& p = in.parallelism;
  const auto& fw = in.framework;
  const double etp = static_cast<double>(p.etp);
  // Expert tensor parallelism (etp = tp > 1): the received tokens are all-gathered over
  // the expert-TP group, each rank computes its 1/etp of every expert's FFN on all of
  // them, and the outputs are reduce-scattered before the combine (Megatron-Core
  // MoEAlltoAllTokenDispatcher with tp_size > 1).
  const auto etp_comm = [&](const std::string& name, CommOp fwd, CommOp bwd) {
    if (p.etp > 1) b.comm(name, Module::experts, fwd, bwd, tokens_in * etp * h_bytes);
  };
  etp_comm("moe.etp_gather", CommOp::tp_all_gather, CommOp::tp_reduce_scatter);
  // Routed experts: E / ep local experts, tokens_in x etp x ep / E tokens each (balanced).
  const double m_per = tokens_in * etp / local_experts;
  const double f = static_cast<double>(m.moe_ffn_hidden_size) / static_cast<double>(p.etp);
  const double e = static_cast<double>(m.ffn_matrices() - 1);
  const std::size_t experts_start = b.mark();
  // TransformerEngine's CuTe DSL fused grouped MLP (TemplateInputs::fused_grouped_mlp; TE
  // d0067d0d ops/fused/grouped_mlp.py, the kernel chain in docs/research/mlm-moe-recipes.md
  // 6): forward, one group quantization of fc1's input, then grouped_gemm_glu (fc1, the
  // activation scaled by the routing probabilities and its MXFP8 quantization in both
  // orientations in the epilogue, fc1's BF16 output written for backward) and
  // grouped_gemm_quant (fc2); backward, one group quantization of fc2's output gradient, then
  // grouped_gemm_dglu (fc2's data gradient with the activation's backward and the quantization
  // of fc1's output gradient in its epilogue), the grouped weight gradients and fc1's data
  // gradient. Each grouped GEMM is one kernel and one launch. So the activation's kernels,
  // fc2's input quantization and fc1's output-gradient quantization are gone. cuDNN
  // frontend's benchmark (NVIDIA/cudnn-frontend benchmark/cutedsl_fusion_kernels/results/
  // GB200/output.txt at 1ddab8d4: 8 experts x 4,096 tokens, K 8,192) times the two fused
  // kernels within 6% and 3% of moesim's grouped-GEMM price alone, so their epilogues are
  // priced free.
  const bool fused = in.fused_grouped_mlp;
  b.set_fused_grouped(fused);
  b.linear("moe.fc1", Module::experts, m_per, e * f, width, true, true, local_experts);
  if (fused) b.drop_last_grad_quant();
  b.module_calls_on_last(1, 0);  // the TEGroupedMLP module around fc1 and fc2
  offload(b, fw, workload::OffloadTarget::expert_fc1);
  const std::size_t act = b.mark();
  // GPT-OSS's activation clamp on Megatron-Core's eager path (weighted_bias_quick_geglu_impl,
  // fused_bias_geglu.py 410-431 at d7288711, from TEGroupedMLP.bias_act_func, experts.py
  // 282-298): fc1's output chunked into its halves, the gate half clamped above and the linear
  // half both ways, the two concatenated: three kernels of their own before the compiled
  // GeGLU, inside the moe_act checkpoint (so recomputed with it). With B the bytes of one
  // half (rows x f, BF16): forward 2B, 2B and 4B. Backward: PyTorch's clamp_backward is
  // where(mask, grad, 0), its mask one compare for the one-sided clamp (1.5B: B read, a byte
  // an element written) and two compares and'ed for the two-sided one, each where reading
  // the gradient and the mask and writing (2.5B); the two halves' gradients concatenated
  // for fc1 (4B): 15B in seven kernels. The clamp keeps fc1's output (2B) for its masks; the
  // GeGLU keeps the clamped copy (moe.act's saved bytes).
  if (m.activation_clamp > 0 && !fw.te_op_fuser && m.gated_linear_unit) {
    const double half = tokens_in * etp * f * 2;
    b.memory_kernels(
        "moe.clamp", Module::experts, {2 * half, 2 * half, 4 * half},
        {1.5 * half, 2.5 * half, 1.5 * half, 1.5 * half, 1.5 * half, 2.5 * half, 4 * half},
        2 * half);
  }
  // Fused, fc1's kernel keeps its output for the activation's backward, in BF16; the fused
  // MLP's offload (expert_fc1_act: Megatron-Core's 'fused_group_mlp' module, of whose tensors
  // only fc1's output reaches the recipes' minimum size) moves that part alone.
  if (fused) {
    const double out = tokens_in * etp * e * f * 2;
    b.keep_last(out);
    if (has(fw.offload, workload::OffloadTarget::expert_fc1_act))
      b.last_fwd().offloaded_bytes += out;
  } else {
    b.memory("moe.act", Module::experts, tokens_in * etp * (e * f + f) * 2, act_bwd_factor(e),
             tokens_in * etp * e * f * act_bytes);
    offload(b, fw, workload::OffloadTarget::moe_act);
    offload(b, fw, workload::OffloadTarget::expert_fc1_act);
  }
  // moe_act recompute (Megatron-Core: the SwiGLU under a checkpoint): its input, fc1's
  // output, stays as the checkpoint's input; its output, fc2's input, is discarded and
  // recomputed before fc2's backward.
  // Fused, TE launches fc2's setup between the two GEMMs (d0067d0d grouped_mlp.py: the ones
  // fill before cuDNN frontend 1.27, 1664-1669; fc2's weight-scale swizzle and its pointer
  // copy, 1725-1732; the quant wrapper's amax fill and its one-thread helper kernel): four
  // small kernels; in backward three (the probabilities' gradient cast, 2289; the wgrad
  // outputs' pointer copy, 621; its helper kernel), placed between fc2's and fc1's GEMMs.
  // Each frees the SMs a persistent GEMM held, so the EP overlap's communication can start
  // there (sim_core/gpu.hpp).
  if (fused) b.small_kernels("moe.fc2_setup", Module::experts, 4, 0, 3);
  // Fused, no activation kernel is re-run: TE recomputes fc2's input inside the dSReLU kernel
  // for squared ReLU and keeps a GLU's (grouped_mlp.py 1753-1763, 2088 at d0067d0d).
  const bool act_recompute = !moe_recompute && has(fw.recompute_modules, RecomputeModule::moe_act);
  if (act_recompute && !fused) {
    b.recompute_since(act, LayerBuilder::Checkpoint::without_output);
    b.last_fwd().checkpoint_input = true;
  }
  b.linear("moe.fc2", Module::experts, m_per, width, f, true, !fused, local_experts);
  b.set_fused_grouped(false);
  if (act_recompute && !(fused && m.gated_linear_unit)) b.last_fwd().saved_bytes = 0;
  // The experts' fc2 bias on the eager path (TEGroupedMLP._apply_bias, experts.py 251-268 at
  // d7288711, called at 398; fc2 is built with skip_bias_add, 214, where fc1's bias rides in
  // its GEMM): for each local expert t + b p, the bias scaled by each row's routing
  // probability (a product written, then the add), and the experts' rows concatenated back.
  // BF16 probabilities (the router's dtype unless moe_router_dtype is set: moe_utils.py
  // 784-788, type_as(logits)). With B the bytes of fc2's output (rows x width): forward B for
  // the products, 3B for the adds, 2B for the concatenation, two kernels an expert and one.
  // Backward, an expert: the product's two gradients (grad x p, grad x b: 2B each over all
  // experts) and their reductions to the bias and the probability (B each); the split's
  // gradient concatenated (2B).
  if (m.expert_bias && !fw.te_op_fuser) {
    const double out = tokens_in * etp * width * 2;
    const auto n = static_cast<std::size_t>(local_experts);
    const double each = out / static_cast<double>(n);
    std::vector<double> fwd, bwd;
    for (std::size_t i = 0; i < n; ++i) {
      fwd.insert(fwd.end(), {each, 3 * each});
      bwd.insert(bwd.end(), {2 * each, each, 2 * each, each});
    }
    fwd.push_back(2 * out);
    bwd.push_back(2 * out);
    b.memory_kernels("moe.fc2_bias", Module::experts, fwd, bwd);
  }
  // Full-iteration CUDA graphs size the experts' buffers statically for the rank capacity
  // (tokens x top-k x moe_expert_rank_capacity_factor), so what they save for backward
  // is that large; paged stashing (moe_paged_stash) keeps only the tokens that arrived.
  if (CaptureSet(fw, in.stack).full_iteration() && fw.moe_expert_rank_capacity_factor &&
      !fw.moe_paged_stash)
    b.scale_saved_since(experts_start,
                        std::max(1.0, *fw.moe_expert_rank_capacity_factor / in.ep_load));
  etp_comm("moe.etp_scatter", CommOp::tp_reduce_scatter, CommOp::tp_all_gather);
}

}  // namespace

void moe_mlp(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& m = in.model;
  const auto& p = in.parallelism;
  const auto& fw = in.framework;
  const double E = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.topk);
  const double ep = static_cast<double>(p.ep);
  // Dropless MoE learns its per-expert counts on the device and the host must wait for
  // them; token dropping (capacity known on the host) and HybridEP's pre-sized buffers
  // (moe_expert_rank_capacity_factor) remove that sync.
  const bool host_sync = !in.training.capacity_factor && !fw.moe_expert_rank_capacity_factor;
  const bool nccl = fw.dispatcher == hw_models::Dispatcher::alltoall ||
                    fw.dispatcher == hw_models::Dispatcher::allgather;
  // The layernorm recompute module covers both norms of a layer (Megatron-Core
  // --recompute-modules layernorm: input_layernorm and pre_mlp_layernorm).
  const std::size_t bwd_start = b.bwd_mark();
  const std::size_t norm_start = b.mark();
  norm(b, s, Module::moe_router, "moe.norm", in.stack.norm_quant_fusion, fw,
       workload::OffloadTarget::mlp_norm);
  if (has(fw.recompute_modules, RecomputeModule::layernorm))
    b.recompute_since(norm_start, LayerBuilder::Checkpoint::without_output);
  // Tokens this rank routes: its own sequence-parallel share. Megatron-Core's MoE layer
  // takes the [S/TP, B, h] hidden states as they are; the router and the dispatcher work
  // on those num_local_tokens, and MoE parallel folding puts the TP ranks in the EP group,
  // so no TP gather precedes them (megatron/core/transformer/moe/moe_layer.py, router.py,
  // token_dispatcher.py). Only a TP-sharded shared expert gathers the sequence (its
  // column-parallel fc1 with sequence parallelism) and reduce-scatters its output.
  const double Tm = s.Tn;
  // `moe` recompute (Megatron-Core MoELayer: the whole layer's forward under one
  // checkpoint whose input is the pre-MLP norm's output): router, dispatch, experts,
  // shared expert and combine run again before the layer's backward, their collectives
  // and token-count sync included, and only the checkpoint's input is kept. The finer
  // moe_act and shared_experts checkpoints inside it are then moot.
  const bool moe_recompute = has(fw.recompute_modules, RecomputeModule::moe);
  const std::size_t moe_start = b.mark();

  // The shared expert (no shared-expert overlap). Captured in a CUDA graph it runs with
  // the router, first (Megatron-Core effebd81f4 MoELayer: shared experts, route,
  // preprocess; NVIDIA's step-10 profile shows it inside the graphed region before
  // dispatch). Eager it runs after the dispatch is launched (NVIDIA's step-6 profile:
  // graphed attention + router, dispatch, eager shared expert, routed experts, combine).
  const bool shared_captured = CaptureSet(fw, in.stack)[Module::shared_expert];
  // Bytes per cached SwiGLU input value: BF16, or FP8 with a 4-byte scale per 128.
  const double act_bytes =
      has(fw.low_precision_activations, workload::LowPrecisionActivation::swiglu_input)
          ? 1 + 4.0 / 128
          : 2;
  const bool has_shared = m.shared_expert_ffn_hidden_size > 0;
  const double e2 = static_cast<double>(m.ffn_matrices() - 1);
  const double fs = static_cast<double>(m.shared_expert_ffn_hidden_size) / s.tp;
  // Its input gather, fc1 and activation; returns where they start.
  const auto shared_fc1 = [&] {
    const std::size_t start = b.mark();
    const bool quantize_input =
        tp_gather(b, s, Module::shared_expert, "shared", true, SpInput::quantize);
    b.linear("shared.fc1", Module::shared_expert, s.T, e2 * fs, s.h, true, quantize_input);
    b.module_calls_on_last(1, 0);  // the SharedExpertMLP module around its linears
    sp_saved_shard(b, s);
    if (!b.fp8()) b.last_fwd().saved_bytes = 0;  // the router's saved input, the same tensor
    b.memory("shared.act", Module::shared_expert, s.T * (e2 * fs + fs) * 2, act_bwd_factor(e2),
             s.T * e2 * fs * act_bytes);
    return start;
  };
  // Its fc2, output scatter and gate; the shared_experts recompute from `start`.
  const auto shared_fc2 = [&](std::size_t start) {
    b.linear("shared.fc2", Module::shared_expert, s.T, s.h, fs, true, true);
    tp_scatter(b, s, Module::shared_expert, "shared");
    // --moe-shared-expert-gate (shared_experts.py 195-201 at cd4afffa): sigmoid(x w_g), a
    // GEMV of the rank's tokens, scales the output; backward: the product's two gradients
    // and the GEMV's (the output kept for the gate's gradient).
    if (m.shared_expert_gate)
      b.memory_kernels(
          "shared.gate", Module::shared_expert,
          {{"gemv", s.Tn * s.h * 2}, {"sigmoid", s.Tn * 4}, {"mul", s.Tn * s.h * 2 * 3}},
          {{"mul", s.Tn * s.h * 2 * 4}, {"sigmoid", s.Tn * 4}, {"gemv", s.Tn * s.h * 2 * 2}},
          s.Tn * s.h * 2);
    if (!moe_recompute && has(fw.recompute_modules, RecomputeModule::shared_experts))
      b.recompute_since(start, LayerBuilder::Checkpoint::function);
  };
  const auto shared_expert = [&] {
    if (has_shared) shared_fc2(shared_fc1());
  };
  // Under --moe-shared-expert-overlap (Framework::moe_shared_expert_overlap) the dispatcher
  // runs the two parts on the shared expert's stream (token_dispatcher.py at d98e8a64: the
  // alltoall dispatcher 697-723 and 857-874, the flex one 1972-1979 and 2031-2050), each
  // launched right after the communication it runs beside, its stream waiting for what the
  // main stream did before that communication (LayerBuilder::side_stream_since; in backward
  // after that communication's gradient, LayerBuilder::finish). HybridEP's dispatch call
  // returns after its blocking copies, so fc1 runs beside the permute and the experts there.
  const bool shared_overlap = has_shared && fw.moe_shared_expert_overlap;
  std::size_t shared_start = 0;
  const auto side_fc1 = [&] {
    const auto mk = b.side_mark();
    shared_start = shared_fc1();
    b.side_stream_since(mk);
  };
  const auto side_fc2 = [&] {
    const auto mk = b.side_mark();
    shared_fc2(shared_start);
    b.side_stream_since(mk);
  };
  // After the dispatch: the overlap's fc1, or the eager shared expert (captured, it ran first).
  const auto shared_after_dispatch = [&] {
    if (shared_overlap)
      side_fc1();
    else if (!shared_captured)
      shared_expert();
  };
  if (shared_captured && !shared_overlap) shared_expert();
  // Permute/unpermute over the routing map before TE PR 1927 (dc97cc9efc, first in TE 2.6):
  // each token's program walks all E experts' row-map entries for every hidden block
  // (transformer_engine/pytorch/triton/permutation.py _permute_kernel and _unpermute_kernel
  // at v2.3: `for expert_idx in range(num_experts)`, a scalar load each that the next
  // iteration's branch waits on), where the optimized kernel walks only the token's k
  // routed rows (at v2.6: `for idx in tl.range(n_routed)`). The data moved is the same; the
  // old kernel adds tokens x E x blocks dependent loads, latency-bound on the SMs
  // (hw_models::ComputeWork::walk_loads, priced in SM cycles from NVIDIA's DeepSeek-V3
  // profile). The hidden block is autotuned over 64..1024; the walk dominates and is
  // paid per block, so the autotuner keeps 1,024. The backward kernel (an unpermute of the
  // gradient for a permute, a permute for an unpermute) walks the same map.
  // Megatron-Core's dispatchers (token_dispatcher.py at core_v0.16.0): alltoall permutes its
  // own tokens over all E experts before the all-to-all; allgather permutes the tokens it
  // gathered over the EP x expert-TP group (tp_ep_group) over its local experts; DeepEP
  // (_DeepepManager) permutes what it received, each token once per destination rank
  // (hw_models::expected_destination_ranks), over the local experts. HybridEP permutes inside its
  // own kernels (dispatch_with_permute, combine_with_unpermute): no TE permute, no walk.
  const auto old_permute_walk = [&](double rows, double experts) {
    if (in.stack.permute_fusion_v2) return 0.0;
    constexpr double kBlock = 1024;
    return rows * experts * std::ceil(static_cast<double>(m.expert_width()) / kBlock);
  };
  const bool allgather = fw.dispatcher == hw_models::Dispatcher::allgather;
  const double received_rows =
      fw.dispatcher == hw_models::Dispatcher::deepep
          ? Tm * in.ep_load *
                hw_models::expected_destination_ranks(m.num_experts, p.ep, m.topk, m.router_groups,
                                                      m.router_topk_groups)
          : 0;

  moe_router(b, in, s, Tm, E, nccl, moe_recompute);

  const double tokens_out = Tm * k;                  // routed token copies each rank sends
  const double tokens_in = tokens_out * in.ep_load;  // and the hottest rank receives
  // Physical experts per rank: E / ep, plus parallelism.eplb's copies (workload/eplb.hpp).
  const double local_experts = static_cast<double>(physical_experts(m, p)) / ep;
  const double global_walk =
      allgather ? old_permute_walk(Tm * ep * static_cast<double>(p.etp), local_experts)
                : old_permute_walk(Tm, static_cast<double>(E));
  const double local_walk = old_permute_walk(received_rows, local_experts);
  // LatentMoE: the routed tokens leave the router in the latent width (fc1_latent_proj, a
  // TE linear duplicated over TP, in MoELayer's preprocess before dispatch_preprocess) and
  // come back to h after the combine; dispatch, permutes, experts and combine move L.
  const double width = static_cast<double>(m.expert_width());
  const double h_bytes = width * 2;
  if (m.moe_latent_size > 0) {
    const LayerBuilder::PrecisionScope own(
        b, in.training.precision_of(QuantModule::latent_projections));
    b.linear("moe.latent_fc1", Module::moe_preprocess, Tm, width, s.h, true, true);
    b.module_calls_on_last(1, 0);
  }
  bool hybridep_copy = false;  // HybridEP without its copy fused into permute/unpermute
  // FP8 dispatch (Framework::ep_fp8_dispatch): the forward dispatch carries 1 + 4/128 bytes
  // per value; its backward (a combine of gradients) stays BF16.
  const auto fp8_dispatch = [&] {
    if (!fw.ep_fp8_dispatch) return;
    KernelTemplate& d = b.last_fwd();
    d.comm_element_bytes = 1 + 4.0 / 128;
    d.comm_bytes = tokens_in * width * d.comm_element_bytes;
  };
  // Host work of the dispatcher paths beyond their kernels, counted in Megatron-Core
  // effebd81f4 with DeepEP / HybridEP of autumn 2025
  // (docs/research/moe-dispatch-experts-host-inventory.md 4-6): allocations and host-only torch
  // calls per forward and backward.
  if (nccl) {
    // EP preprocess: per-expert counts, their exchange; the host needs them to size the
    // all-to-all (Megatron's alltoall dispatcher): a device-host sync in dropless mode.
    b.small_kernels("moe.preprocess", Module::moe_preprocess, 2, E * 8 + tokens_out * 4, 1);
    if (host_sync)
      b.mark_sync_on_last(1);  // the host blocks after launching the global permute (moe_dispatch)
    b.memory("moe.global_permute", Module::moe_dispatch, Tm * h_bytes + tokens_out * h_bytes);
    b.gather_last();
    b.walk_last(global_walk);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    // Megatron's alltoall dispatcher: the sender's top-k permuted copy and the all-to-all's
    // output live until the local sort has made fc1's input (and the same again for the
    // gradients in backward). DeepEP and HybridEP write into their own buffers: no copy
    // (NVIDIA's GB200 journey, step 4: DeepEP lowered the peak memory).
    b.transient(tokens_out * h_bytes + tokens_in * h_bytes);
    b.last_fwd().host_allocs = 10;  // forward 10, backward 7 (inventory 5, 6.3)
    b.last_fwd().host_ops = 12;
    b.last_bwd().host_allocs = 7;
    shared_after_dispatch();
    b.memory("moe.local_permute", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.gather_last();
  } else if (fw.dispatcher == hw_models::Dispatcher::deepep) {
    b.small_kernels("moe.preprocess", Module::moe_preprocess, 1, E * 8 + tokens_out * 4, 1);
    // notify_dispatch exchanges per-rank, per-expert counts (4 bytes each); the CPU spins
    // until they arrive, then launches the data dispatch on DeepEP's stream.
    b.comm("moe.dispatch_notify", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_dispatch,
           E * 4, host_sync, false);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    fp8_dispatch();
    b.last_fwd().host_allocs = 22;  // forward 22, backward 13 (inventory 5, 6.3)
    b.last_fwd().host_ops = 11;
    b.last_bwd().host_allocs = 13;
    shared_after_dispatch();
    // Megatron's permute after DeepEP: indices to multi-hot and the row-id map (Triton
    // kernels launched from Python), then TE's permute.
    b.small_kernels("moe.permute_map", Module::moe_dispatch, 4, tokens_in * 4 * 2, 2);
  } else {
    // HybridEP dispatch_with_permute (inventory 4.3): all-gather of the routing maps over
    // the EP group, metadata kernels (fill, memset, scan), a blocking copy of the received
    // count to the host; the dispatch (with its two one-thread sync kernels); permute
    // processing, a second blocking copy (tokens per expert: it waits for the whole
    // dispatch); then the permute, which carries the copy out of HybridEP's registered
    // buffer and the padding. Backward reuses the handle: no all-gather, no syncs.
    hybridep_copy = !in.stack.hybridep_permute_fusion;
    b.comm("moe.routing_map_gather", Module::moe_dispatch, CommOp::ep_all_gather, CommOp::none,
           Tm * E, false, false);
    b.small_kernels("moe.hybridep_meta", Module::moe_dispatch, 3, Tm * ep * 4 + Tm * E, 0);
    b.last_fwd().host_allocs = 6;
    if (host_sync) b.mark_sync_on_last();
    b.small_kernels("moe.dispatch_flag", Module::moe_dispatch, 1, 0);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    fp8_dispatch();
    b.small_kernels("moe.dispatch_done", Module::moe_dispatch, 1, 0);
    b.small_kernels("moe.permute_processing", Module::moe_dispatch, 1,
                    (tokens_in + 32 * local_experts) * 4, 0);
    b.last_fwd().host_allocs = 4;
    if (host_sync) b.mark_sync_on_last();
    // Under the overlap fc1 follows the dispatch call, whose second blocking copy has waited
    // for the whole dispatch: it runs beside the permute and the routed experts.
    shared_after_dispatch();
  }
  if (!nccl) {
    // HybridEP receives into its registered buffer; the tokens are copied out (D2D), then
    // permuted and padded. Fused (journey step 11): one kernel does all three, so the
    // permute below stands for it; unfused: the copy is a kernel of its own ("about
    // 10%-20% of the communication time", docs/reference/gb200-journey.md).
    if (hybridep_copy) b.memory("moe.dispatch_copy", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.memory("moe.permute", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.gather_last();
    b.walk_last(local_walk);
  }

  routed_experts(b, in, tokens_in, local_experts, width, act_bytes, moe_recompute);

  if (nccl) {
    b.memory("moe.local_unpermute", Module::moe_combine, tokens_in * h_bytes * 2);
    b.gather_last();
    b.comm("moe.combine", Module::moe_combine, CommOp::ep_combine, CommOp::ep_dispatch,
           tokens_in * h_bytes);
    if (shared_overlap) side_fc2();
    b.memory("moe.unpermute", Module::moe_combine, tokens_out * h_bytes + Tm * h_bytes);
    b.gather_last();
    b.walk_last(global_walk);
  } else {
    b.memory("moe.unpermute", Module::moe_combine, tokens_in * h_bytes * 2);
    b.gather_last();
    b.walk_last(local_walk);
    // HybridEP combines from its registered buffer: unfused, a D2D copy into it; its
    // combine brackets the kernel with the same two one-thread sync kernels.
    if (hybridep_copy) b.memory("moe.combine_copy", Module::moe_combine, tokens_in * h_bytes * 2);
    if (fw.dispatcher == hw_models::Dispatcher::hybridep)
      b.small_kernels("moe.combine_flag", Module::moe_combine, 2, 0);
    b.comm("moe.combine", Module::moe_combine, CommOp::ep_combine, CommOp::ep_dispatch,
           tokens_in * h_bytes);
    if (shared_overlap) side_fc2();
  }
  if (m.moe_latent_size > 0) {
    const LayerBuilder::PrecisionScope own(
        b, in.training.precision_of(QuantModule::latent_projections));
    b.linear("moe.latent_fc2", Module::moe_combine, Tm, s.h, width, true, true);
    b.module_calls_on_last(1, 0);
  }
  if (moe_recompute) b.recompute_since(moe_start, LayerBuilder::Checkpoint::function, true);
  bias_dropout_add(b, in, s, Module::moe_combine, "moe", bwd_start);
}

}  // namespace moesim::workload::detail
