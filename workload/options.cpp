#include "workload/options.hpp"

#include <array>

namespace moesim::workload {

const sim_core::NameTable<LoraTarget>& lora_target_names() {
  static constexpr std::array<sim_core::NameEntry<LoraTarget>, 4> kEntries{{
      {LoraTarget::linear_qkv, "linear_qkv", "the attention's QKV projection (column-parallel)"},
      {LoraTarget::linear_proj, "linear_proj", "the attention's output projection (row-parallel)"},
      {LoraTarget::linear_fc1, "linear_fc1", "the MLP's first linear (column-parallel)"},
      {LoraTarget::linear_fc2, "linear_fc2", "the MLP's second linear (row-parallel)"},
  }};
  static constexpr sim_core::NameTable<LoraTarget> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<QuantModule>& quant_module_names() {
  static constexpr std::array<sim_core::NameEntry<QuantModule>, kQuantModules> kEntries{{
      {QuantModule::attention, "attention",
       "an attention layer's QKV (with its fused norm) and output projections"},
      {QuantModule::mamba_out_proj, "mamba_out_proj", "a Mamba mixer's output projection"},
      {QuantModule::latent_projections, "latent_projections",
       "LatentMoE's projections into and out of the latent width"},
  }};
  static constexpr sim_core::NameTable<QuantModule> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<Precision>& precision_names() {
  static constexpr std::array<sim_core::NameEntry<Precision>, 7> kEntries{{
      {Precision::bf16, "bf16", "BF16 everywhere"},
      {Precision::fp16, "fp16",
       "FP16 everywhere with dynamic loss scaling: the gradients unscaled and checked for inf/NaN "
       "each step "
       "(Megatron --fp16)"},
      {Precision::fp8_tensorwise, "fp8-tensorwise",
       "FP8 with per-tensor current scaling (Megatron --fp8-recipe tensorwise)"},
      {Precision::fp8_delayed, "fp8-delayed",
       "FP8 with per-tensor delayed scaling: scales from the amax history, amaxes all-reduced over "
       "TP x DP x CP "
       "after every forward and backward (Megatron --fp8-recipe delayed, its default)"},
      {Precision::fp8_blockwise, "fp8-blockwise", "FP8 with DeepSeek 1x128 / 128x128 block scales"},
      {Precision::mxfp8, "mxfp8", "MXFP8, 1x32 blocks with E8M0 scales (Blackwell only)"},
      {Precision::nvfp4, "nvfp4",
       "NVFP4: FP4 (E2M1) with 1x16 E4M3 block scales and a per-tensor FP32 scale, all "
       "linear-layer GEMMs "
       "in FP4 (Blackwell only; training.nvfp4 sets its Hadamard transform and stochastic "
       "rounding)"},
  }};
  static constexpr sim_core::NameTable<Precision> kTable{kEntries};
  return kTable;
}

hw_models::Dtype gemm_dtype(Precision p) {
  switch (p) {
    case Precision::bf16:
    case Precision::fp16:
      return hw_models::Dtype::bf16;
    case Precision::fp8_tensorwise:
    case Precision::fp8_delayed:
    case Precision::fp8_blockwise:
      return hw_models::Dtype::fp8;
    case Precision::mxfp8:
      return hw_models::Dtype::mxfp8;
    case Precision::nvfp4:
      return hw_models::Dtype::fp4;
  }
  return hw_models::Dtype::bf16;
}

bool quantized(Precision p) {
  return p != Precision::bf16 && p != Precision::fp16;
}

const sim_core::NameTable<CudaGraphScope>& cuda_graph_scope_names() {
  static constexpr std::array<sim_core::NameEntry<CudaGraphScope>, 7> kEntries{{
      {CudaGraphScope::attn, "attn", "attention block"},
      {CudaGraphScope::mlp, "mlp", "dense MLP block"},
      {CudaGraphScope::moe, "moe", "whole MoE block (needs static shapes: token drop)"},
      {CudaGraphScope::moe_router, "moe_router", "router"},
      {CudaGraphScope::moe_preprocess, "moe_preprocess", "EP preprocess before dispatch"},
      {CudaGraphScope::mamba, "mamba", "a hybrid model's Mamba mixers"},
      {CudaGraphScope::full_iteration, "full_iteration", "the whole iteration, alone"},
  }};
  static constexpr sim_core::NameTable<CudaGraphScope> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<CpComm>& cp_comm_names() {
  static constexpr std::array<sim_core::NameEntry<CpComm>, 2> kEntries{{
      {CpComm::p2p, "p2p", "K and V around a ring beside each step's attention"},
      {CpComm::a2a, "a2a", "all-to-alls of q, k, v and the output: whole sequence, heads / cp"},
  }};
  static constexpr sim_core::NameTable<CpComm> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<RecomputeModule>& recompute_module_names() {
  static constexpr std::array<sim_core::NameEntry<RecomputeModule>, 10> kEntries{{
      {RecomputeModule::core_attn, "core_attn", "core attention (softmax(QK^T)V)"},
      {RecomputeModule::mla_up_proj, "mla_up_proj", "MLA up-projection"},
      {RecomputeModule::up_proj, "up_proj", "MLA up-projection (older name of mla_up_proj)"},
      {RecomputeModule::mlp, "mlp", "dense-layer MLP"},
      {RecomputeModule::moe, "moe", "whole MoE layer"},
      {RecomputeModule::moe_act, "moe_act", "expert activation function"},
      {RecomputeModule::layernorm, "layernorm",
       "MLA's input norm, the MoE and dense MLP layers' pre-MLP norm (not GQA's, Mamba's or Gated "
       "DeltaNet's, fused into their TE linear)"},
      {RecomputeModule::shared_experts, "shared_experts", "shared experts"},
      {RecomputeModule::mhc, "mhc", "DeepSeek-V4's mHC mappings around each sub-block"},
      {RecomputeModule::full, "full", "full-layer recompute, alone"},
  }};
  static constexpr sim_core::NameTable<RecomputeModule> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<OffloadTarget>& offload_target_names() {
  static constexpr std::array<sim_core::NameEntry<OffloadTarget>, 9> kEntries{{
      {OffloadTarget::optimizer, "optimizer", "optimizer states to host memory"},
      {OffloadTarget::expert_fc1_act, "expert_fc1_act", "expert FC1 output activations"},
      {OffloadTarget::attn_norm, "attn_norm", "attention input norm activations"},
      {OffloadTarget::qkv_linear, "qkv_linear", "QKV projection activations"},
      {OffloadTarget::core_attn, "core_attn", "core attention activations"},
      {OffloadTarget::attn_proj, "attn_proj", "attention output projection activations"},
      {OffloadTarget::mlp_norm, "mlp_norm", "pre-MLP norm activations"},
      {OffloadTarget::expert_fc1, "expert_fc1", "expert FC1 input activations"},
      {OffloadTarget::moe_act, "moe_act", "expert activation-function activations"},
  }};
  static constexpr sim_core::NameTable<OffloadTarget> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<LowPrecisionActivation>& low_precision_activation_names() {
  static constexpr std::array<sim_core::NameEntry<LowPrecisionActivation>, 2> kEntries{{
      {LowPrecisionActivation::swiglu_input, "swiglu_input",
       "MoE SwiGLU inputs cached in FP8 (1x128 scales)"},
      {LowPrecisionActivation::attn_output, "attn_output",
       "core attention output cached once in E5M6"},
  }};
  static constexpr sim_core::NameTable<LowPrecisionActivation> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<OptimizerStateDtype>& optimizer_state_dtype_names() {
  static constexpr std::array<sim_core::NameEntry<OptimizerStateDtype>, 2> kEntries{{
      {OptimizerStateDtype::fp32, "fp32", "FP32 Adam moments"},
      {OptimizerStateDtype::bf16, "bf16", "BF16 Adam moments"},
  }};
  static constexpr sim_core::NameTable<OptimizerStateDtype> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<GradDtype>& grad_dtype_names() {
  static constexpr std::array<sim_core::NameEntry<GradDtype>, 2> kEntries{{
      {GradDtype::fp32, "fp32", "FP32 gradients"},
      {GradDtype::bf16, "bf16", "BF16 gradients"},
  }};
  static constexpr sim_core::NameTable<GradDtype> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<CrossEntropy>& cross_entropy_names() {
  static constexpr std::array<sim_core::NameEntry<CrossEntropy>, 3> kEntries{{
      {CrossEntropy::te, "te", "TransformerEngine's fused loss: the BF16 logits' gradient kept"},
      {CrossEntropy::native, "native", "Megatron's fused loss: FP32 exponentials kept"},
      {CrossEntropy::unfused, "unfused",
       "Megatron's unfused loss: FP32 passes, FP32 exponentials kept"},
  }};
  static constexpr sim_core::NameTable<CrossEntropy> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<AttentionBackend>& attention_backend_names() {
  static constexpr std::array<sim_core::NameEntry<AttentionBackend>, 2> kEntries{{
      {AttentionBackend::fused, "fused", "TransformerEngine's flash or cuDNN fused attention"},
      {AttentionBackend::unfused, "unfused",
       "TE's unfused attention: score GEMM, softmax, GEMM with V"},
  }};
  static constexpr sim_core::NameTable<AttentionBackend> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<OptimizerKind>& optimizer_kind_names() {
  static constexpr std::array<sim_core::NameEntry<OptimizerKind>, 2> kEntries{{
      {OptimizerKind::adam, "adam", "Adam(W)"},
      {OptimizerKind::muon, "muon",
       "Muon on the 2-D weights (layer-wise distributed), Adam on the rest"},
  }};
  static constexpr sim_core::NameTable<OptimizerKind> kTable{kEntries};
  return kTable;
}

double main_grad_bytes(const Framework& fw) {
  return fw.main_grads_dtype == GradDtype::bf16 ? 2 : 4;
}

double optimizer_state_bytes(const Framework& fw) {
  if (fw.optimizer == OptimizerKind::muon) return 4;
  return 2 * (fw.optimizer_state_dtype == OptimizerStateDtype::bf16 ? 2 : 4);
}

bool optimizer_states_sharded(const Framework& fw) {
  return fw.distributed_optimizer || fw.optimizer == OptimizerKind::muon;
}

Shards optimizer_state_shards(const Parallelism& p, const Framework& fw) {
  if (!p.fsdp && !optimizer_states_sharded(fw)) return {};
  // HSDP's optim outer sharding splits the main weights and states over inner x outer, the
  // whole DP group (param_and_grad_buffer.py 2587-2600 at cd4afffa); no_shard, and the
  // distributed optimizer across instances, over the inner group alone (FB:2589-2593;
  // optimizer/__init__.py 1171).
  if (p.hybrid() && !(p.fsdp && p.outer_dp_sharding == OuterSharding::optim))
    return p.inner_shards();
  return {static_cast<double>(p.dp * p.cp), static_cast<double>(p.expert_dp)};
}

const sim_core::NameTable<OuterSharding>& outer_sharding_names() {
  static constexpr std::array<sim_core::NameEntry<OuterSharding>, 2> kEntries{{
      {OuterSharding::no_shard, "no_shard",
       "each optimizer instance holds its shards whole; gradients all-reduced across instances"},
      {OuterSharding::optim, "optim",
       "main weights and optimizer states split across instances too"},
  }};
  static constexpr sim_core::NameTable<OuterSharding> kTable{kEntries};
  return kTable;
}

std::span<const StackSwitchInfo> stack_switches() {
  static constexpr std::array<StackSwitchInfo, 12> kSwitches{{
      {"mxfp8_alloc_fusion", &StackSwitches::mxfp8_alloc_fusion,
       "pre-allocated MXFP8 scale buffers instead of 4 torch.zeros/empty per quantized tensor"},
      {"permute_fusion_v2", &StackSwitches::permute_fusion_v2,
       "optimized token permute kernel (up to 10x faster when top-k << experts)"},
      {"router_fusion", &StackSwitches::router_fusion, "fused router: 72 kernels -> 31"},
      {"swizzle_fusion", &StackSwitches::swizzle_fusion,
       "one scale-swizzle kernel (MXFP8, NVFP4) for several tensors, zero padding inside"},
      {"pdl_quant", &StackSwitches::pdl_quant,
       "Programmatic Dependent Launch for quantization kernels"},
      {"norm_quant_fusion", &StackSwitches::norm_quant_fusion,
       "MXFP8 quantization fused into RMSNorm (cuDNN 9.14)"},
      {"cpu_numa_binding", &StackSwitches::cpu_numa_binding,
       "each process bound to its GPU's NUMA node (bindpcie + numactl)"},
      {"te_host_slim", &StackSwitches::te_host_slim,
       "slimmer Transformer Engine host code (fewer checks, API and CUDA calls)"},
      {"cuda_graph_shared_expert", &StackSwitches::cuda_graph_shared_expert,
       "CUDA graphs also capture the shared expert"},
      {"deepep_tuned", &StackSwitches::deepep_tuned, "DeepEP tuned for GB200 (journey step 7)"},
      {"hybridep_permute_fusion", &StackSwitches::hybridep_permute_fusion,
       "HybridEP output buffer copy fused with permute and padding"},
      {"nvfp4_rht_fusion", &StackSwitches::nvfp4_rht_fusion,
       "NVFP4: row-wise cast and column-wise Hadamard transform and cast in one kernel (TE 2.15)"},
  }};
  return kSwitches;
}

const sim_core::NameTable<EplbPolicy>& eplb_policy_names() {
  static constexpr std::array<sim_core::NameEntry<EplbPolicy>, 2> kEntries{{
      {EplbPolicy::hierarchical, "hierarchical",
       "expert groups packed to nodes, replicas within each node, then packed to its GPUs"},
      {EplbPolicy::global, "global", "replicas chosen over all experts and packed to any GPU"},
  }};
  static constexpr sim_core::NameTable<EplbPolicy> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<RoutingBalance>& routing_balance_names() {
  static constexpr std::array<sim_core::NameEntry<RoutingBalance>, 5> kEntries{{
      {RoutingBalance::forced, "forced", "every expert gets the same tokens"},
      {RoutingBalance::sampled, "sampled", "expert loads sampled from a distribution"},
      {RoutingBalance::histogram, "histogram", "expert loads read from a file"},
      {RoutingBalance::aux_loss, "aux_loss",
       "trained routing balanced by an auxiliary loss (coefficient): published expert-load "
       "statistics"},
      {RoutingBalance::loss_free, "loss_free",
       "trained routing balanced by DeepSeek's auxiliary-loss-free expert bias: published "
       "statistics"},
  }};
  static constexpr sim_core::NameTable<RoutingBalance> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<RoutingDistribution>& routing_distribution_names() {
  static constexpr std::array<sim_core::NameEntry<RoutingDistribution>, 2> kEntries{{
      {RoutingDistribution::zipf, "zipf", "expert popularity ~ rank^-alpha"},
      {RoutingDistribution::uniform, "uniform", "independent uniform top-k choices"},
  }};
  static constexpr sim_core::NameTable<RoutingDistribution> kTable{kEntries};
  return kTable;
}

}  // namespace moesim::workload
