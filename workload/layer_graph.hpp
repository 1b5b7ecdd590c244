// workload/layer_graph.hpp: per-layer kernel sequences (templates) for one microbatch.
//
// A template lists, in launch order, the kernels a layer runs in forward and in backward
// (dgrad and wgrad; recomputed modules re-run their forward kernels first), each with
// its FLOPs, HBM bytes, input type, the framework module that launched it and what the
// host must do around it. Templates are built once per scenario and instantiated per
// (microbatch, chunk, phase) by the schedule as it reaches them. Shapes follow
// Megatron-Core with sequence parallelism: tokens per rank T = mbs x seq / cp (/ tp for
// the norms), GEMM N or K divided by tp, expert GEMMs over the tokens routed to the
// rank's local experts (T x top-k per rank, E / ep experts, times the hottest rank's
// load under uneven routing: TemplateInputs::ep_load).
//
// Kernel inventory (first version; the host-modeling issue refines counts per switch):
//   attention (MLA): norm, [quantize], q_a, q_a norm, [quantize], q_b, kv_a, kv_a norm,
//     [quantize], kv_b, rope q, rope kv (split into k and v), core attention, [quantize], o_proj
//   attention (GQA): norm, [quantize], qkv, rope, core attention, [quantize], o_proj
//   dense MLP: norm, [quantize], fc1, activation, [quantize], fc2
//   MoE: norm, [quantize], router GEMM + router kernels, EP preprocess, (alltoall:
//     global permute), dispatch, [HybridEP unfused: copy out of its buffer], permute,
//     [quantize], fc1 (grouped), activation, [quantize], fc2 (grouped), unpermute,
//     [HybridEP unfused: copy into its buffer], combine, (alltoall: global unpermute),
//     shared expert
// [quantize] kernels exist under FP8 recipes; under NVFP4 each FP4 GEMM (fprop, dgrad,
// wgrad) also follows a one-thread alpha kernel (LayerBuilder::nvfp4_quantized). Dropless MoE makes
// the host wait for the per-expert token counts (a device-host sync), where each dispatcher does it
// (Megatron-Core token_dispatcher.py / fused_a2a.py, DeepEP; docs/research notes):
//   alltoall: the counts are copied to the host after the EP preprocess; the host blocks
//             before launching the all-to-all (after the global permute is launched).
//   deepep:   notify_dispatch exchanges the counts; the CPU waits for that signal, then
//             launches the data dispatch.
//   hybridep: a stream sync right after its preprocess kernel.
//
// Software-stack switches (docs/reference/gb200-journey.md):
//   mxfp8_alloc_fusion off: each MXFP8 tensor allocates its 4 buffers (row- and column-
//     wise data and scales) on the host, the two scale buffers zero-filled by kernels;
//     on: one pre-allocated buffer, no allocations or fills.
//   Grouped GEMM inputs are quantized per split (TE split_quantize: one kernel per
//   expert, docs/research/te-host-inventory.md 3.1).
//   swizzle_fusion off (MXFP8 and NVFP4 scales): one scale-swizzle kernel and one zero-padding
//   kernel per tensor
//     (per expert in grouped GEMMs: "many tiny kernels before the expert GEMMs");
//     on: one swizzle kernel per GEMM, padding inside.
//   pdl_quant: quantize kernels launch with PDL, hiding their device launch latency.
//   permute_fusion_v2 off: the permute/unpermute kernels are the old implementation,
//     which walks all E experts' row-map entries per token and hidden block where the new
//     one walks its k: tokens x E x blocks dependent loads on top of the data, priced in SM
//     cycles (hw_models::ComputeWork::walk_loads); 4.3x at DeepSeek-V3's 8 of 256 on GB200
//     (journey step 1's profile; the PR's "up to 10x" is a bound), 1.8x at Qwen3's 8 of 128
//     on H800.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/compute.hpp"
#include "sim_core/names.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::workload {

// The framework module a kernel belongs to: decides CUDA-graph capture and host cost.
enum class Module : std::uint8_t {
  embedding,
  attn,
  mlp,
  moe_router,
  moe_preprocess,
  moe_dispatch,
  experts,
  shared_expert,
  moe_combine,
  head,
  loss,
  mamba  // a hybrid model's Mamba-2 mixer (norm, in_proj, conv, SSD scan, gated norm, out_proj)
};
inline constexpr std::size_t kModuleCount = static_cast<std::size_t>(Module::mamba) + 1;
// "attn", "moe_dispatch", "experts", ...: in reports (host-bound idle by module).
const sim_core::NameTable<Module>& module_names();

// Which modules' kernels CUDA graphs capture, from the graph scopes (Megatron-Core:
// `moe_router` and `moe_preprocess` capture those parts, `moe` the whole MoE block,
// `full_iteration` everything) and, for the shared expert, the stack switch that added it
// to the router's graph (journey step 10).
class CaptureSet {
 public:
  CaptureSet(const Framework& fw, const StackSwitches& stack);
  bool operator[](Module m) const { return on_[static_cast<std::size_t>(m)]; }
  bool full_iteration() const { return full_; }

 private:
  std::array<bool, kModuleCount> on_{};
  bool full_ = false;
};

// tp_amax_all_reduce: a quantizer's amax reduced (MAX) over the TP group before its scale
// and cast, so that the shards gathered under sequence parallelism share one scale
// (TransformerEngine's current scaling and NVFP4; `LayerBuilder::sp_quantized_grad_gather`).
enum class CommOp : std::uint8_t {
  none,
  ep_dispatch,
  ep_combine,
  ep_all_gather,
  tp_all_gather,
  tp_reduce_scatter,
  tp_amax_all_reduce
};

// How a sequence-parallel TP collective overlaps a GEMM under framework.tp_comm_overlap
// (TransformerEngine's userbuffers, transformer_engine/pytorch/module/base.py initialize_ub
// defaults; docs/research/megatron-step-edges.md C):
//   ring      an all-gather split into tp chunks passed around the ring (copy engines,
//             one SM) while the next GEMM computes on the chunks already there
//             (qkv / fc1 fprop; proj / fc2 dgrad)
//   pipeline  the previous GEMM split into 4 and each part's reduce-scatter overlapped
//             with the next part, the communication on 16 SMs (proj / fc2 fprop)
//   bulk      a reduce-scatter beside an independent GEMM, the previous one, on 16 SMs
//             (qkv / fc1 dgrad output beside their wgrad)
enum class TpOverlap : std::uint8_t { none, ring, pipeline, bulk };

struct KernelTemplate {
  std::string name;  // "attn.q_a.fprop": module.op.phase
  Module module = Module::attn;
  hw_models::ComputeWork work;    // compute kernels
  CommOp comm = CommOp::none;     // communication kernels
  double comm_bytes = 0;          // bytes each rank sends
  double comm_element_bytes = 2;  // per value of the payload (EP dispatch in FP8: 1.03125)
  bool host_sync_after = false;   // the host waits for this kernel to finish...
  int host_sync_delay = 0;        // ...after launching this many further moe_dispatch kernels
  bool recompute = false;         // re-run of a forward kernel in backward
  bool checkpoint_input = false;  // recomputed, but its saved input is the checkpoint's
                                  // input and stays (Megatron's moe_act: the SwiGLU input)
  double saved_bytes = 0;         // forward: what backward reads of this kernel's inputs
  bool offloaded = false;         // ...kept in host memory between forward and backward
  double offloaded_bytes = 0;     // ...or this part of them (one of the tensors it saves)
                                  // (framework.offload: Megatron's fine-grained offloading)
  int host_allocs = 0;            // tensor allocations the host makes before launching it
  int host_ops = 0;               // host-only framework calls before it (views, casts, checks)
  double time_factor = 1;         // a known-slow kernel implementation (stochastic rounding)
  bool pdl = false;               // Programmatic Dependent Launch: device launch latency hidden
  bool te_module_call = false;    // launched by a Transformer Engine Linear call (its host cost)
  // Context parallelism's ring attention (TE's cp_comm_type p2p): the bytes of K and V (in
  // backward also their gradients) each rank passes to the next every ring step.
  double cp_ring_bytes = 0;
  // Context parallelism's all-to-alls (cp_comm_type a2a) around the attention kernel: the
  // bytes of a rank's inputs exchanged before it and of its output after (in backward the
  // output's gradient before and the inputs' gradients after).
  double cp_a2a_in_bytes = 0, cp_a2a_out_bytes = 0;
  bool library_launch = false;  // a library API call from C++ (TE quantize; the further GEMMs of
                                // a grouped GEMM are priced per group)
  bool cpp_launch = false;      // launched from C++ inside a library call with no API call of its
                                // own (scale zero-fill, swizzle, padding; amax zero, amax, scale)
  // A grouped GEMM that is one kernel and one launch (the CuTe DSL fused grouped MLP's), not
  // one cuBLASLt GEMM per group from TE's C++ loop (TemplateInputs::fused_grouped_mlp).
  bool single_launch = false;
  TpOverlap tp_overlap = TpOverlap::none;  // a TP collective overlapped with a GEMM
  // ...by TransformerEngine's userbuffers (framework.tp_comm_overlap on a TE linear), which
  // drive it from C++: its host cost is theirs (schedules/kernel_pricing.hpp), not a launch's
  bool userbuffers = false;
  // Framework::moe_shared_expert_overlap: the kernel runs on the shared expert's own stream,
  // after what the main stream launched before it (a run of them waits for the main stream
  // once, Megatron's wait_current_stream); `join_side`: the main stream waits here for what
  // the shared expert's stream has launched (get_output's wait_stream).
  bool side_stream = false;
  bool join_side = false;
  // The first kernel of a side-stream run launched right after the communication kernel it
  // runs beside: it waits for the main stream's work before that communication (Megatron
  // calls wait_current_stream before launching the all-to-all, then the shared expert's GEMM).
  bool side_after_comm = false;
};

struct LayerTemplate {
  std::vector<KernelTemplate> fwd, bwd;
  // Temporaries alive at the layer's worst moment beyond what it saves (Megatron's NCCL
  // dispatchers: the permuted copies around the all-to-all).
  double transient_bytes = 0;
};

struct ModelTemplates {
  LayerTemplate dense;  // a dense decoder layer
  LayerTemplate moe;    // an MoE decoder layer
  // The same with sliding-window attention (built when the model has windowed layers),
  // and with a Gated DeltaNet mixer in place of attention (when it has linear layers).
  LayerTemplate dense_window, moe_window, dense_linear, moe_linear;
  // DeepSeek-V4's compressed sparse (ratio 4) and heavily compressed (ratio 128) layers; its
  // window-only layers are the `window` pair.
  LayerTemplate dense_csa, moe_csa, dense_hca, moe_hca;
  LayerTemplate embedding;  // E in the pp layout
  LayerTemplate head;       // L: output layer and loss
  LayerTemplate mtp;        // m: an MTP module (its decoder layer of the last layer's kind)
  // A hybrid model's single-mixer layers (ModelConfig::hybrid_layers): its Mamba and
  // attention layers here, its MoE and MLP layers in `moe` and `dense`, which then hold the
  // MLP part alone with its own pre-norm.
  LayerTemplate mamba, attention;

  LayerTemplate& decoder(bool experts, Mixer mixer) {
    switch (mixer) {
      case Mixer::window:
        return experts ? moe_window : dense_window;
      case Mixer::linear:
        return experts ? moe_linear : dense_linear;
      case Mixer::csa:
        return experts ? moe_csa : dense_csa;
      case Mixer::hca:
        return experts ? moe_hca : dense_hca;
      case Mixer::full:
        break;
    }
    return experts ? moe : dense;
  }
  const LayerTemplate& decoder(bool experts, Mixer mixer) const {
    return const_cast<ModelTemplates*>(this)->decoder(experts, mixer);
  }
};

struct TemplateInputs {
  const ModelConfig& model;
  const Training& training;
  const Parallelism& parallelism;
  const Framework& framework;
  const StackSwitches& stack;
  std::int64_t padded_vocab;
  // Tokens the hottest EP rank receives over the balanced T x top-k (workload/routing.hpp):
  // its dispatch, permute, expert GEMMs, unpermute and combine carry that many; the send
  // side (router, preprocess, the global permute) stays balanced. Padded to capacity
  // (Training::pad_to_capacity) it is the capacity factor on every rank; the flex
  // dispatchers pad in their permute and move only the routed tokens, so their dispatch is
  // priced at the padded count, above the real one by at most the capacity's headroom.
  double ep_load = 1;
  // FP8 GEMMs take only TN operands (Hopper; TE is_non_tn_fp8_gemm_supported false): a
  // per-tensor FP8 tensor gathered row-wise is transposed after the gather for the GEMM
  // that needs its column-wise copy.
  bool fp8_tn_only = false;
  // TransformerEngine runs the routed experts as its CuTe DSL fused grouped MLP
  // (Framework::fused_grouped_mlp where fused_grouped_mlp_blocked says nothing): one group
  // quantization of each input, fc1 with the activation and its quantization in one kernel,
  // fc2's data gradient with the activation's backward in another (routed_experts).
  bool fused_grouped_mlp = false;
};

// Why TransformerEngine does not run the CuTe DSL fused grouped MLP that
// Framework::fused_grouped_mlp asks for, or nullopt where it does. TE fuses GroupedLinear,
// activation, GroupedLinear under MXFP8 on compute capability 10 (Blackwell; Rubin is priced
// as Blackwell) for SwiGLU, GPT-OSS's clamped quick-GeGLU and squared ReLU
// (TransformerEngine d0067d0d ops/fused/grouped_mlp.py: _GroupedMLP_CuTeGEMMBase.is_supported
// 944-959, fuse_grouped_mlp_ops 816-898, the SReLU fusion 2632-2638). Its NVFP4 path (TE
// main, with the random Hadamard transform) is not modeled.
std::optional<std::string> fused_grouped_mlp_blocked(const ModelConfig& m, Precision p,
                                                     bool hopper);
// Framework::fused_grouped_mlp where nothing blocks it: TemplateInputs::fused_grouped_mlp.
inline bool fused_grouped_mlp_runs(const ModelConfig& m, const Training& t, const Framework& f,
                                   bool hopper) {
  return f.fused_grouped_mlp && !fused_grouped_mlp_blocked(m, t.precision, hopper);
}

ModelTemplates build_templates(const TemplateInputs& in);

// The builds a decoder layer's templates come in, as bits that combine (index 0..3):
//   kBf16Build: the layer runs outside the FP8/FP4 context (Training::bf16_layers_at_start/
//     end, Megatron's BF16 first and last layers): precision BF16, the attention and the
//     output layer unquantized;
//   kKeptBuild: the block method of partial full recompute leaves the layer whole
//     (Framework::recompute_num_layers): it keeps its activations, recomputes nothing.
// 0 is the recipe's own build (build_templates).
enum DecoderBuild : unsigned { kRecipeBuild = 0, kBf16Build = 1, kKeptBuild = 2 };
inline constexpr std::size_t kDecoderBuilds = 4;
ModelTemplates build_templates(const TemplateInputs& in, unsigned build);

}  // namespace moesim::workload
