// workload/options.hpp: the training, parallelism and framework settings of a scenario
// (docs/SCENARIO_FORMAT.md), as plain structs. config/ fills and validates
// them; workload, schedules and hw_models read them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"
#include "sim_core/names.hpp"

namespace moesim::workload {

// Whether a setting list (recompute modules, CUDA-graph scopes, offload targets...) holds `x`:
// the layer graphs, the inert-setting rules and the caveats ask it alike.
template <class E>
bool has(const std::vector<E>& v, E x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

enum class Precision { bf16, fp8_tensorwise, fp8_delayed, fp8_blockwise, mxfp8, nvfp4, fp16 };
const sim_core::NameTable<Precision>& precision_names();
// The Tensor Core input type the linear layers' GEMMs use under a recipe. FP16 runs at the
// BF16 rate: every GPU moesim models lists equal dense FP16 and BF16 Tensor Core peaks
// (NVIDIA's H100 and H800 datasheets: 989 TFLOPS each, SXM; B200 / GB200 / GB300: equal
// FP16 and BF16 figures in the Blackwell datasheets).
hw_models::Dtype gemm_dtype(Precision p);
// Whether GEMM inputs are quantized below 16 bits (the FP8 and FP4 recipes): BF16 and FP16
// are not, and have no quantize kernels, scales or amaxes.
bool quantized(Precision p);

// Modules a per-module quantization recipe runs at a precision of their own (Megatron-Core's
// quant_recipe: quantization/quant_config.py RecipeConfig, fnmatch globs on each TE linear's
// module path, first match wins; Megatron-Bridge's te_quant.cfg for Nemotron 3 Super):
//   attention: an attention layer's linear_qkv (its fused input norm with it) and linear_proj
//     ("*.linear_qkv", "*.linear_proj"), for the GQA attention block;
//   mamba_out_proj: a Mamba mixer's out_proj ("*mixer.out_proj");
//   latent_projections: LatentMoE's fc1_latent_proj and fc2_latent_proj
//     ("*mlp.fc[12]_latent_proj").
enum class QuantModule { attention, mamba_out_proj, latent_projections };
inline constexpr std::size_t kQuantModules = 3;
const sim_core::NameTable<QuantModule>& quant_module_names();
// FP16's dynamic loss scaling (Megatron --fp16, optimizer.py MixedPrecisionOptimizer): each
// step unscales the main gradients and checks them for inf/NaN before the norm.
inline bool loss_scaled(Precision p) {
  return p == Precision::fp16;
}

// NVFP4's recipe (TransformerEngine NVFP4BlockScaling, transformer_engine/common/recipe/
// __init__.py @ d0067d0d; docs/features/low_precision_training/nvfp4/nvfp4.rst): E2M1 values
// with an E4M3 scale per 16 and an FP32 global scale from the tensor's amax; all three GEMMs
// of a linear layer in FP4. `rht`: the 16x16 random Hadamard transform on the column-wise
// (weight-gradient) copies of inputs and gradients; `stochastic_rounding`: gradients are
// rounded stochastically (a slower cast). TE's defaults are both on (its environment
// variables NVTE_NVFP4_DISABLE_RHT / _STOCHASTIC_ROUNDING turn them off, as MLPerf v5.1's
// Llama 3.1 405B recipe does). 2D (16x16) weight scales change numerics, not time: a weight
// is quantized once per step and the 2D cast moves the same bytes, so it is no setting.
// Bytes an NVFP4 value takes in one copy: half a byte and an E4M3 scale per 16 values.
inline constexpr double kNvfp4Bytes = 0.5 + 1.0 / 16;
struct Nvfp4Recipe {
  bool rht = true;
  bool stochastic_rounding = true;
};

// LoRA fine-tuning as Megatron-Bridge's PEFT runs it (src/megatron/bridge/peft/lora.py,
// lora_layers.py, utils.py ParallelLinearAdapter at v0.6.0; docs/research/bridge-finetuning.md
// 3): every base parameter frozen (no weight gradients, no main gradients or optimizer
// state, the frozen linears keep no input for a weight gradient), and on each target linear
// a low-rank adapter, out += (alpha / rank) B(A(x)), A and B BF16 Megatron linears that train.
// The distributed optimizer and DP reduce the adapters only.
enum class LoraTarget { linear_qkv, linear_proj, linear_fc1, linear_fc2 };
const sim_core::NameTable<LoraTarget>& lora_target_names();
struct Lora {
  std::int64_t rank = 16;  // alpha, the scale's numerator, is numerics only: no setting
  std::vector<LoraTarget> targets{LoraTarget::linear_qkv};
  bool targets_has(LoraTarget t) const {
    return std::find(targets.begin(), targets.end(), t) != targets.end();
  }
};

struct Training {
  std::int64_t seq_length = 0;
  std::int64_t micro_batch_size = 0;
  std::int64_t global_batch_size = 0;
  Precision precision = Precision::bf16;
  Nvfp4Recipe nvfp4;  // precision nvfp4 only (training.nvfp4)
  std::int64_t mtp_layers = 0;
  std::optional<double> capacity_factor;  // token dropping; absent = dropless
  // Megatron --moe-pad-expert-input-to-capacity (with the capacity factor; Megatron-Bridge's
  // apply_moe_token_drop sets it): every expert's input is padded to its capacity, so every
  // EP rank's experts run capacity_factor x the balanced tokens, and the host knows the
  // sizes (no token-count sync). Megatron-Core token_dispatcher.py 431-432, 1093-1108 at
  // cd4afffa (the all-to-all and the flex dispatchers alike).
  bool pad_to_capacity = false;
  // Megatron --hidden-dropout (its default 0.1; moesim's 0, as MoE recipes set): the
  // bias-dropout-add after attention and after the MLP draws a mask and keeps it for
  // backward (torch dropout: one byte an element of the residual stream).
  double hidden_dropout = 0;
  // Megatron --make-vocab-size-divisible-by: the vocabulary is padded to a multiple of
  // this times TP (Megatron's default 128).
  std::int64_t vocab_divisor = 128;
  std::optional<Lora> lora;  // training.lora: LoRA fine-tuning (absent: every weight trains)
  // Megatron --first-last-layers-bf16 with --num-layers-at-start-in-bf16 and
  // --num-layers-at-end-in-bf16: the first and the last decoder layers run, and are built,
  // outside the FP8/FP4 context (Megatron-Core fp8_utils.py is_first_last_bf16_layer 673-690,
  // fp4_utils.py get_fp4_context 248-265 at cd4afffa: layer_no global, so on whichever
  // pipeline stage holds them): their linears are BF16 GEMMs with no quantization.
  std::int64_t bf16_layers_at_start = 0;
  std::int64_t bf16_layers_at_end = 0;
  bool any_bf16_layers() const { return bf16_layers_at_start + bf16_layers_at_end > 0; }
  bool bf16_layer(std::int64_t layer, std::int64_t num_layers) const {
    return layer < bf16_layers_at_start || layer >= num_layers - bf16_layers_at_end;
  }
  // training.module_precision: a module's own precision in the layers that run the recipe's
  // (QuantModule); absent: the recipe's. A BF16 layer runs every module in BF16.
  std::array<std::optional<Precision>, kQuantModules> module_precision{};
  std::optional<Precision> precision_of(QuantModule m) const {
    return module_precision[static_cast<std::size_t>(m)];
  }
};

// DeepSeek's expert-parallel load balancer (workload/eplb.hpp) in a step: each MoE layer
// holds `redundant_experts` extra copies of its heaviest experts, placed by `policy`.
enum class EplbPolicy { hierarchical, global };
const sim_core::NameTable<EplbPolicy>& eplb_policy_names();
struct Eplb {
  std::int64_t redundant_experts = 0;
  EplbPolicy policy = EplbPolicy::hierarchical;
};

// How context parallelism exchanges attention's inputs (TransformerEngine's cp_comm_type,
// Megatron --cp-comm-type): p2p passes K and V around a ring while each step's share
// computes; a2a trades the sequence split for a head split with all-to-alls of q, k and v
// before the attention and of its output after (TE attention.py AttnFuncWithCPAndQKVOA2A),
// so the kernel runs the whole sequence over heads / cp.
enum class CpComm : std::uint8_t { p2p, a2a };
const sim_core::NameTable<CpComm>& cp_comm_names();

// Megatron-FSDP's hybrid sharding across optimizer instances (--outer-dp-sharding-strategy):
// no_shard replicates each instance's shards and all-reduces their gradients over the
// outer group once a step; optim also splits the main weights and optimizer states over
// it (reduce-scatter after the last micro-batch's backward, all-gather at the first's
// forward). docs/research/megatron-fsdp-hsdp.md.
enum class OuterSharding : std::uint8_t { no_shard, optim };
const sim_core::NameTable<OuterSharding>& outer_sharding_names();

// Over how many ranks a rank's share of some state is split: dense and expert parameters.
struct Shards {
  double dense = 1, expert = 1;
};

struct Parallelism {
  std::int64_t tp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, cp = 1;
  CpComm cp_comm = CpComm::p2p;
  bool sequence_parallel = false;  // effective: requested and tp > 1
  bool fsdp = false;
  // Megatron --num-distributed-optimizer-instances N (parallelism.optimizer_instances): the
  // DP x CP and expert-DP groups cut into N contiguous inner groups of dp cp / N and
  // expert_dp / N ranks, and an outer group of N ranks, one from each, at stride
  // (gpus / pp) / N, shared by dense and expert parameters (Megatron-Core parallel_state.py
  // 923-1010, 1447-1496, 2457-2467 at cd4afffa). Under FSDP: hybrid sharding (HSDP), each
  // unit gathered and reduced over the inner group, the outer one per outer_dp_sharding;
  // under the distributed optimizer: each bucket reduce-scattered over the inner group,
  // then its shard all-reduced over the outer one, the optimizer states sharded over the
  // inner group (param_and_grad_buffer.py 670-760).
  std::int64_t optimizer_instances = 1;
  OuterSharding outer_dp_sharding = OuterSharding::no_shard;
  bool hybrid() const { return optimizer_instances > 1; }
  // The inner groups: the ranks a unit's or bucket's parameters and gradients are split over.
  Shards inner_shards() const {
    const auto n = static_cast<double>(optimizer_instances);
    return {static_cast<double>(dp * cp) / n, static_cast<double>(expert_dp) / n};
  }
  // Derived by config: dense-layer DP = gpus / (tp pp cp); expert layers fold EP x ETP
  // out of the same tp x cp x dp ranks, leaving expert-DP = gpus / (pp ep etp).
  std::int64_t dp = 1;
  std::int64_t expert_dp = 1;
  std::int64_t num_microbatches = 1;  // per pipeline, per step: gbs / (mbs dp)
  std::optional<Eplb> eplb;           // parallelism.eplb
};

// `mamba`: a hybrid model's Mamba mixers (Megatron-Core CudaGraphScope.mamba).
enum class CudaGraphScope { attn, mlp, moe, moe_router, moe_preprocess, mamba, full_iteration };
const sim_core::NameTable<CudaGraphScope>& cuda_graph_scope_names();

enum class RecomputeModule {
  core_attn,
  mla_up_proj,
  up_proj,
  mlp,
  moe,
  moe_act,
  layernorm,
  shared_experts,
  mhc,  // DeepSeek-V4's mHC (Megatron-LM dev d48bd6be --recompute-modules mhc)
  full
};
const sim_core::NameTable<RecomputeModule>& recompute_module_names();

enum class OffloadTarget {
  optimizer,
  expert_fc1_act,
  attn_norm,
  qkv_linear,
  core_attn,
  attn_proj,
  mlp_norm,
  expert_fc1,
  moe_act
};
const sim_core::NameTable<OffloadTarget>& offload_target_names();

// Activations cached in a narrower format for the backward than the forward computed
// them in (DeepSeek-V3 report, section 3.3.3 'Low-Precision Storage'):
//   swiglu_input: the SwiGLU inputs of the MoE (routed and shared experts) in FP8 with
//     1x128 scales (1 + 4/128 bytes a value);
//   attn_output: the core attention output in E5M6 (12 bits), one copy serving both the
//     attention backward and the output projection's weight gradient.
enum class LowPrecisionActivation { swiglu_input, attn_output };
const sim_core::NameTable<LowPrecisionActivation>& low_precision_activation_names();

enum class OptimizerStateDtype { fp32, bf16 };
const sim_core::NameTable<OptimizerStateDtype>& optimizer_state_dtype_names();

// Megatron --main-grads-dtype (precision-aware optimizer): the gradient buffer's type.
// What DP reduces them in is Framework::grad_reduce_dtype, set apart.
enum class GradDtype { fp32, bf16 };
const sim_core::NameTable<GradDtype>& grad_dtype_names();

// The loss kernel (Megatron --cross-entropy-loss-fusion, --cross-entropy-fusion-impl):
//   te: TransformerEngine's kernel writes the logits' gradient over the BF16 logits in
//       forward and keeps them (2 bytes a logit; transformer_engine/pytorch/cross_entropy.py);
//   native: Megatron's fused function (megatron/core/fusions/fused_cross_entropy.py) and
//   unfused: tensor_parallel/cross_entropy.py both cast the logits to FP32 and keep the
//       FP32 exponentials for backward (4 bytes a logit); unfused runs the max, subtract,
//       exp, sum and divide as separate passes over the FP32 logits.
enum class CrossEntropy { te, native, unfused };
const sim_core::NameTable<CrossEntropy>& cross_entropy_names();

// Core attention (Megatron --attention-backend): fused, TransformerEngine's flash or
// cuDNN kernels (auto, flash, fused); unfused, TE's UnfusedDotProductAttention
// (dot_product_attention/backends.py): a batched GEMM of the scores over the whole
// sequence (no causal skipping) into a BF16 [b, heads, s, s] tensor, the fused
// scale-mask-softmax (which keeps its output, the probabilities, for backward), dropout
// (identity at 0) and a batched GEMM with V that keeps the probabilities and V again.
enum class AttentionBackend { fused, unfused };
const sim_core::NameTable<AttentionBackend>& attention_backend_names();

// Megatron --optimizer: Adam, or Muon (orthogonalized momentum: every 2-D weight but the
// embedding and the output layer, Newton-Schulz iterations per matrix, one FP32 momentum;
// the rest by Adam; Megatron-Core emerging_optimizers.py, layer_wise_optimizer.py).
enum class OptimizerKind { adam, muon };
const sim_core::NameTable<OptimizerKind>& optimizer_kind_names();

struct Framework {
  hw_models::Dispatcher dispatcher = hw_models::Dispatcher::hybridep;
  int dispatcher_sms = 0;  // 0 for dispatchers whose SMs are not configurable
  // TransformerEngine's NVTE_EXT_MARGIN_SM: SMs its GEMMs leave free, so that communication
  // launched beside one starts at once instead of waiting for the SMs a persistent GEMM holds
  // (sim_core/gpu.hpp). TE passes sm_count - margin to cuBLASLt as the GEMM's SM target
  // (v2.15 pytorch/csrc/extensions/gemm.cpp 257-275, cpp_extensions/gemm.py 285 for the
  // grouped GEMMs): each GEMM runs on that many SMs, sm_count / (sm_count - margin) longer
  // alone (schedules/kernel_pricing.cpp). 0: none (TE's default).
  int gemm_sm_margin = 0;
  bool moe_a2a_overlap = false;
  // Megatron --moe-shared-expert-overlap (SharedExpertMLP's own CUDA stream,
  // megatron/core/transformer/moe/shared_experts.py and token_dispatcher.py at d98e8a64): the
  // shared expert leaves the MoE layer's main stream and runs beside the dispatcher, its fc1 and
  // activation beside the dispatch, its fc2 beside the combine, each after the main stream's work
  // before that communication (wait_current_stream); the main stream waits for its output after
  // the combine (get_output). In backward PyTorch's autograd runs each op on its forward stream:
  // fc2's gradients beside the combine's, fc1's beside the dispatch's
  // (workload/layer_graph_moe.cpp, schedules/rank_program.cpp). Megatron refuses it with the
  // all-gather dispatcher, with moe_a2a_overlap and with the shared_experts recompute.
  bool moe_shared_expert_overlap = false;
  // Megatron's batch_p2p_sync (ModelParallelConfig, default True; no command-line flag,
  // Megatron-Bridge's cfg.model.batch_p2p_sync): under the non-interleaved 1F1B schedule, whose
  // pipeline transfers are batched (batch_p2p_comm), torch.cuda.synchronize() after each
  // (schedules/rank_program.cpp device_sync).
  bool batch_p2p_sync = true;
  // Megatron --tp-comm-overlap (TransformerEngine userbuffers): sequence parallelism's
  // all-gathers and reduce-scatters overlapped with the GEMMs next to them
  // (workload::TpOverlap, priced in schedules/kernel_pricing.hpp).
  bool tp_comm_overlap = false;
  // Megatron-Core --moe-expert-rank-capacity-factor (HybridEP): the dispatch buffers are
  // sized for tokens x top-k x this factor, so dispatch needs no device-host sync (the
  // sync-free path of paged stash). Absent: dropless MoE syncs once per layer forward.
  std::optional<double> moe_expert_rank_capacity_factor;
  // DeepEP / HybridEP dispatch their payload in FP8 (1 byte per value plus a 4-byte scale
  // per 128: DeepSeek-V3's training, DeepEP's benchmarks); combine and the backward
  // stay BF16. Off: BF16 dispatch, as Megatron-Core's dispatchers send.
  bool ep_fp8_dispatch = false;
  std::vector<CudaGraphScope> cuda_graph_scope;
  std::vector<RecomputeModule> recompute_modules;
  // With recompute_modules ["full"]: Megatron's block method (--recompute-method block
  // --recompute-num-layers N), where each virtual pipeline stage recomputes its first N
  // decoder layers whole and keeps the activations of the rest (Megatron-Core cd4afffa
  // megatron/core/recompute.py 167-181: layer_idx < recompute_num_layers within the
  // stage's block). 0: every layer (the uniform method, one layer a group).
  std::int64_t recompute_num_layers = 0;
  std::vector<LowPrecisionActivation> low_precision_activations;
  bool distributed_optimizer = true;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  // Megatron --overlap-param-gather-with-optimizer-step (interleaved pipelines, the
  // distributed optimizer with --overlap-param-gather): no chunk is split into buckets,
  // and chunk 0's parameter all-gather runs beside the other chunks' optimizer steps
  // instead of ahead of the next forward (schedules/dp_plan.hpp).
  bool overlap_param_gather_with_optimizer_step = false;
  // Megatron --no-align-param-gather (on by default, and forced off by arguments.py for its
  // non-interleaved schedule, 1f1b here): aligned, the interleaved schedule dispatches
  // the chunks' parameter all-gathers ahead of their first forward (schedules.py
  // param_sync_func); unaligned, each bucket's all-gather is dispatched by DDP's forward
  // pre-hook when its first module runs and waited on there, the next bucket's dispatched
  // behind it (param_and_grad_buffer.py finish_param_sync). See schedules/dp_plan.hpp.
  bool align_param_gather = true;
  bool fp8_param_gather = false;
  // Megatron --ddp-bucket-size: parameters per gradient / parameter bucket (absent:
  // Megatron's default, schedules/dp_plan.hpp).
  std::optional<double> ddp_bucket_size;
  // The caching allocator's reserve beyond the tensors alive at the peak (fragmentation),
  // as a fraction of them; fits_in_memory compares the peak x (1 + this) with the HBM.
  // Default 0: no measurement of it for these workloads is published (an analysis of
  // DeepSeek-style training puts it at 5-30%: Zhang & Su, arXiv 2502.07846, read in a
  // secondary write-up); set it to plan with headroom.
  double allocator_fragmentation = 0;
  OptimizerStateDtype optimizer_state_dtype = OptimizerStateDtype::fp32;
  std::vector<OffloadTarget> offload;
  // Megatron-Core's layer offloading (cpu_offloading with cpu_offloading_num_layers N,
  // TransformerEngine's get_cpu_offload_context; Megatron-Bridge --activation_offload_layers):
  // everything the first N decoder layers save is copied to host memory in forward and back
  // in backward, on one copy stream (TE >= 2.10, transformer_engine/pytorch/cpu_offload.py at
  // 4329ff84: layer L - N + i's forward waits for layer i's copy out; layer i's copy back is
  // queued when layer L - 1 - N + i's backward starts, and layer i's backward waits for it).
  // 0 = none.
  std::int64_t offload_layers = 0;
  OptimizerKind optimizer = OptimizerKind::adam;
  GradDtype main_grads_dtype = GradDtype::fp32;
  // What DP reduces the gradients in (Megatron --grad-reduce-in-bf16 off: FP32). Default
  // BF16, as every corpus run but C3 and NVIDIA's DeepSeek-V3 recipes reduce.
  GradDtype grad_reduce_dtype = GradDtype::bf16;
  // Megatron --delay-wgrad-compute (needs moe_a2a_overlap): in the overlapped pairs the
  // TE weight-gradient GEMMs of the backward chunk run after the EP communication that
  // follows them (expert wgrad beside the dispatch's backward, attention and shared-expert
  // wgrad beside the next layer's combine; docs/research/megatron-mechanisms.md 4).
  bool delay_wgrad_compute = false;
  // Megatron --fp8-dot-product-attention: core attention in FP8 (the system's FP8
  // attention efficiency); --fp8-output-proj: the LM head's GEMMs under MXFP8.
  bool fp8_dot_product_attention = false;
  bool fp8_output_proj = false;
  // Megatron-Core use_transformer_engine_op_fuser (TransformerConfig, cd4afffa
  // transformer_config.py 511): TEGroupedMLP runs its fused forward (experts.py 607-) with the
  // experts' biases and the activation's clamp inside TransformerEngine's grouped ops, not
  // its eager path's clamp, per-expert bias and concatenation kernels (layer_graph_moe.cpp).
  bool te_op_fuser = false;
  // TransformerEngine's CuTe DSL fused grouped MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, under
  // te_op_fuser; Megatron-Bridge's cutedsl_fused_grouped_mlp sets both): where TE fuses it
  // (workload::fused_grouped_mlp_blocked), fc1 with the activation and its quantization runs as
  // one kernel and fc2's data gradient with the activation's backward as another
  // (layer_graph_moe.cpp routed_experts).
  bool fused_grouped_mlp = false;
  // cuDNN frontend's CUDNNFE_CLUSTER_OVERLAP_MARGIN, in SMs (the variable's clusters x 2: the
  // fused kernels' (2, 1) clusters of 256-row tiles): SMs the fused grouped MLP's GEMMs leave
  // free beside the EP communication, as gemm_sm_margin does for TE's GEMMs (its kernels read
  // the variable, default 0; Megatron-Bridge sets 8 clusters with the fused MLP under
  // moe_a2a_overlap: scripts/performance/perf_plugins.py 308-312 at v0.5.0).
  int fused_grouped_mlp_sm_margin = 0;
  // Megatron-Core apply_rope_fusion (Megatron-LM's --no-rope-fusion turns it off; the
  // TransformerConfig default is off, Bridge's performance recipes turn it on): RoPE in TE's
  // fused kernel (GQA) or Megatron-Core's fused MLA kernels, else the unfused PyTorch path
  // (rope_utils.py _apply_rotary_pos_emb_bshd; layer_graph_attention.cpp prices its kernels).
  bool rope_fusion = true;
  CrossEntropy cross_entropy = CrossEntropy::te;
  AttentionBackend attention_backend = AttentionBackend::fused;
  // Megatron --moe-paged-stash (with full-iteration graphs and a rank capacity factor):
  // the routed experts' saved activations hold the tokens that arrived, in pages, instead
  // of the capacity the static buffers are sized for.
  bool moe_paged_stash = false;
};

// The optimizer's memory per parameter, shared by the memory model and the optimizer
// step's HBM traffic: main gradient bytes (4 FP32, 2 BF16), state bytes beside the FP32
// master (Adam: two moments of 4 or 2 bytes; Muon: one FP32 momentum), and whether the
// states are sharded over (expert-)DP (the distributed optimizer, or layer-wise Muon,
// which deals whole matrices out to the DP ranks even without it; Megatron-FSDP shards
// them too, which its callers add).
double main_grad_bytes(const Framework& fw);
double optimizer_state_bytes(const Framework& fw);
bool optimizer_states_sharded(const Framework& fw);
// Over how many ranks a rank's optimizer states (FP32 main weights, moments) are split:
// none unsharded; the whole DP x CP and expert-DP groups (the distributed optimizer, Muon,
// FSDP, HSDP with an optim outer sharding); the inner groups (the distributed optimizer or
// HSDP across optimizer instances with no_shard outside).
Shards optimizer_state_shards(const Parallelism& p, const Framework& fw);

// Software-stack features that are not Megatron flags (fusions, host-side changes). The
// defaults are the newest stack: everything on; the journey scenarios turn them off.
struct StackSwitches {
  bool mxfp8_alloc_fusion = true;
  bool permute_fusion_v2 = true;
  bool router_fusion = true;
  bool swizzle_fusion = true;
  bool pdl_quant = true;
  bool norm_quant_fusion = true;
  bool cpu_numa_binding = true;
  bool te_host_slim = true;
  bool cuda_graph_shared_expert = true;
  bool deepep_tuned = true;
  bool hybridep_permute_fusion = true;
  bool nvfp4_rht_fusion = true;
};

struct StackSwitchInfo {
  std::string_view name;
  bool StackSwitches::*member;
  std::string_view help;
};
std::span<const StackSwitchInfo> stack_switches();

enum class RoutingBalance { forced, sampled, histogram, aux_loss, loss_free };
const sim_core::NameTable<RoutingBalance>& routing_balance_names();

enum class RoutingDistribution { zipf, uniform };
const sim_core::NameTable<RoutingDistribution>& routing_distribution_names();

struct Routing {
  RoutingBalance balance = RoutingBalance::forced;
  RoutingDistribution distribution = RoutingDistribution::zipf;  // sampled only
  double alpha = 1.0;                                            // zipf exponent
  double aux_loss_coefficient = 0.01;  // aux_loss: Megatron --moe-aux-loss-coeff
  std::uint64_t seed = 0;
  // aux_loss and loss_free: the lognormal dispersion sigma of the experts' per-layer
  // popularity (workload/routing.hpp). Absent: from the balance's published statistic
  // (popularity_sigma(trained_max_vio)); config sets it for a family whose router was
  // pretrained with global-batch balance (workload::TrainedRouting::global_batch).
  std::optional<double> popularity_sigma;
  std::string histogram_path;  // histogram only, resolved against the scenario file
  // histogram only: per-expert token counts, one row per MoE layer (read by the loader;
  // workload/routing.hpp)
  std::vector<std::vector<double>> histogram;
  // A trained router's own loads (aux_loss, loss_free), not a forced, sampled or measured
  // distribution: the balances whose dispersion is popularity_sigma's.
  bool trained() const {
    return balance == RoutingBalance::aux_loss || balance == RoutingBalance::loss_free;
  }
};

}  // namespace moesim::workload
