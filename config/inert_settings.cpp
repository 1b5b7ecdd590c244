#include "config/inert_settings.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "config/load.hpp"
#include "hw_models/ep_flows.hpp"
#include "workload/layer_graph.hpp"
#include "workload/routing.hpp"

namespace moesim::config {
namespace {

using workload::CudaGraphScope;
using workload::has;
using workload::LowPrecisionActivation;
using workload::OffloadTarget;
using workload::RecomputeModule;
using Why = std::optional<std::string>;
using Rule = std::function<Why(const Scenario&)>;

// ---- facts about a scenario the rules share ----

Why no_experts(const Scenario& sc) {
  return sc.model.is_moe() ? Why() : fmt::format("model '{}' has no routed experts", sc.model.name);
}
// Routing shapes only the hottest EP rank's load: with one EP rank none is hotter.
Why single_ep(const Scenario& sc) {
  return sc.parallelism.ep > 1 ? Why() : "ep is 1: one rank holds every expert, none is hotter";
}
bool nccl_dispatcher(const Scenario& sc) {
  return sc.framework.dispatcher == hw_models::Dispatcher::alltoall ||
         sc.framework.dispatcher == hw_models::Dispatcher::allgather;
}
std::string dispatcher_name(const Scenario& sc) {
  return std::string(hw_models::dispatcher_names().name(sc.framework.dispatcher));
}
// Some DP group of more than one rank (dense DP x CP, or expert-DP): the step simulation's
// condition for any gradient reduction or parameter gather (kernel_pricing.hpp dp_traffic).
Why no_dp(const Scenario& sc) {
  const auto& p = sc.parallelism;
  if (p.dp * p.cp > 1 || p.expert_dp > 1) return std::nullopt;
  return std::string("dp x cp = 1 and expert-DP = 1: no gradient reduction or parameter gather");
}
Why under_fsdp(const Scenario& sc, const char* what) {
  if (!sc.parallelism.fsdp) return std::nullopt;
  return fmt::format("Megatron-FSDP (parallelism.fsdp) {}", what);
}
// The decoder layers of the virtual stage that holds the most.
std::int64_t most_stage_layers(const Scenario& sc) {
  std::int64_t most = 0;
  for (const auto& stage : sc.layout.stages())
    most = std::max(most, stage.count(schedules::LayoutItemKind::decoder));
  return most;
}
// Every decoder layer recomputed whole: 'full', of every layer of each virtual stage.
bool full_recompute(const Scenario& sc) {
  return has(sc.framework.recompute_modules, RecomputeModule::full) &&
         (sc.framework.recompute_num_layers == 0 ||
          sc.framework.recompute_num_layers >= most_stage_layers(sc));
}
bool moe_recompute(const Scenario& sc) {
  return has(sc.framework.recompute_modules, RecomputeModule::moe);
}
bool full_graph(const Scenario& sc) {
  return has(sc.framework.cuda_graph_scope, CudaGraphScope::full_iteration);
}
Why no_dense_layers(const Scenario& sc) {
  if (sc.model.num_dense_layers() > 0) return std::nullopt;
  return fmt::format("model '{}' has no dense MLP layers (its MoE layers are the 'moe' module's)",
                     sc.model.name);
}
Why not_mxfp8(const Scenario& sc) {
  if (sc.training.precision == workload::Precision::mxfp8) return std::nullopt;
  return fmt::format("an MXFP8 kernel change; training.precision is {}",
                     workload::precision_names().name(sc.training.precision));
}
bool hopper(const Scenario& sc) {
  return sc.system.gpu.arch == hw_models::GpuArch::hopper;
}
bool fused_mlp_runs(const Scenario& sc) {
  return workload::fused_grouped_mlp_runs(sc.model, sc.training, sc.framework, hopper(sc));
}
Why not_fp8(const Scenario& sc) {
  if (workload::quantized(sc.training.precision)) return std::nullopt;
  return fmt::format(
      "changes FP8 quantize kernels; training.precision is {} (nothing is quantized)",
      workload::precision_names().name(sc.training.precision));
}
// Megatron's --overlap-moe-expert-parallel-comm pairs 1F1B's and interleaved 1F1B's
// steady-state items (schedules/pipeline_order.cpp); ZB-H1 does not, DualPipe pairs its own.
Why no_a2a_overlap_pairs(const Scenario& sc) {
  if (auto w = no_experts(sc)) return w;
  const auto s = sc.pipeline_schedule;
  if (s == schedules::ScheduleKind::zb_h1 || s == schedules::ScheduleKind::dualpipe ||
      s == schedules::ScheduleKind::dualpipev)
    return fmt::format(
        "the 1F1B all-to-all overlap pairs 1F1B's and interleaved 1F1B's items; {} schedules its "
        "own",
        schedules::schedule_names().name(s));
  return std::nullopt;
}

Why never(const Scenario&) {
  return std::nullopt;
}

// ---- list elements ----

Why graph_scope_inert(CudaGraphScope s, const Scenario& sc) {
  const auto& scopes = sc.framework.cuda_graph_scope;
  switch (s) {
    case CudaGraphScope::attn:
    case CudaGraphScope::full_iteration:
      return std::nullopt;
    case CudaGraphScope::mlp:
      return no_dense_layers(sc);
    case CudaGraphScope::mamba:
      if (sc.model.count_hybrid(workload::HybridLayer::mamba) > 0) return std::nullopt;
      return fmt::format("model '{}' has no Mamba layers", sc.model.name);
    case CudaGraphScope::moe:
      return no_experts(sc);
    case CudaGraphScope::moe_router:
      if (auto w = no_experts(sc)) return w;
      if (has(scopes, CudaGraphScope::moe)) return std::string("'moe' captures the router already");
      return std::nullopt;
    case CudaGraphScope::moe_preprocess:
      if (auto w = no_experts(sc)) return w;
      if (has(scopes, CudaGraphScope::moe))
        return std::string("'moe' captures the preprocess already");
      // HybridEP's preprocessing (routing-map all-gather, metadata kernels, the blocking
      // count copies) runs inside its dispatch_with_permute (docs/research/
      // moe-dispatch-experts-host-inventory.md 4.3): nothing is left in this scope.
      if (sc.framework.dispatcher == hw_models::Dispatcher::hybridep)
        return std::string(
            "HybridEP's preprocessing runs inside its dispatch (dispatch_with_permute), outside "
            "the moe_preprocess scope");
      return std::nullopt;
  }
  return std::nullopt;
}

Why recompute_inert(RecomputeModule m, const Scenario& sc) {
  const auto& rc = sc.framework.recompute_modules;
  switch (m) {
    case RecomputeModule::core_attn:
    case RecomputeModule::mla_up_proj:
    case RecomputeModule::layernorm:
    case RecomputeModule::mhc:  // the loader refuses it without mHC
    case RecomputeModule::full:
      return std::nullopt;
    case RecomputeModule::up_proj:
      if (has(rc, RecomputeModule::mla_up_proj))
        return std::string("the same checkpoint as 'mla_up_proj', listed too");
      return std::nullopt;
    // Megatron-Core TransformerLayer: 'mlp' checkpoints a dense MLP only; an MoE layer's
    // MLP is the 'moe' module's.
    case RecomputeModule::mlp:
      return no_dense_layers(sc);
    case RecomputeModule::moe:
      return no_experts(sc);
    case RecomputeModule::moe_act:
      if (auto w = no_experts(sc)) return w;
      if (has(rc, RecomputeModule::moe))
        return std::string("inside the 'moe' checkpoint, listed too");
      if (fused_mlp_runs(sc) && sc.model.gated_linear_unit)
        return std::string(
            "the CuTe DSL fused grouped MLP keeps a GLU's fc2 input (TE recomputes squared "
            "ReLU's only, grouped_mlp.py 1753-1763 at d0067d0d)");
      return std::nullopt;
    case RecomputeModule::shared_experts:
      if (auto w = no_experts(sc)) return w;
      if (sc.model.shared_expert_ffn_hidden_size <= 0)
        return fmt::format("model '{}' has no shared expert", sc.model.name);
      if (has(rc, RecomputeModule::moe))
        return std::string("inside the 'moe' checkpoint, listed too");
      return std::nullopt;
  }
  return std::nullopt;
}

Why offload_inert(OffloadTarget t, const Scenario& sc) {
  if (t == OffloadTarget::optimizer) return std::nullopt;
  if (full_recompute(sc))
    return std::string(
        "full recompute keeps only each layer's input; the module's activations are not kept");
  const auto& off = sc.framework.offload;
  const auto& rc = sc.framework.recompute_modules;
  switch (t) {
    case OffloadTarget::optimizer:
      return std::nullopt;
    case OffloadTarget::attn_norm:  // GQA's is fused into linear_qkv: kept (layer_graph_attention)
      if (has(rc, RecomputeModule::layernorm) && sc.model.attention != workload::AttentionKind::gqa)
        return std::string("the input norm is recomputed ('layernorm'): not kept");
      return std::nullopt;
    case OffloadTarget::mlp_norm:
      if (has(rc, RecomputeModule::layernorm))
        return std::string("the norms are recomputed ('layernorm'): not kept");
      return std::nullopt;
    case OffloadTarget::qkv_linear:
    case OffloadTarget::attn_proj:
      return std::nullopt;
    case OffloadTarget::core_attn:
      if (has(rc, RecomputeModule::core_attn))
        return std::string("core attention is recomputed ('core_attn'): not kept");
      return std::nullopt;
    case OffloadTarget::expert_fc1:
    case OffloadTarget::moe_act:
    case OffloadTarget::expert_fc1_act:
      if (auto w = no_experts(sc)) return w;
      if (moe_recompute(sc))
        return std::string("the MoE block is recomputed ('moe'): its activations are not kept");
      if (t == OffloadTarget::expert_fc1_act && has(off, OffloadTarget::moe_act))
        return std::string("the same tensor (the SwiGLU input) as 'moe_act', listed too");
      return std::nullopt;
  }
  return std::nullopt;
}

Why low_precision_inert(LowPrecisionActivation a, const Scenario& sc) {
  if (full_recompute(sc)) return std::string("full recompute keeps only each layer's input");
  switch (a) {
    case LowPrecisionActivation::swiglu_input:
      if (auto w = no_experts(sc)) return w;
      if (moe_recompute(sc))
        return std::string("the MoE block is recomputed ('moe'): its SwiGLU inputs are not kept");
      if (fused_mlp_runs(sc) && sc.model.shared_expert_ffn_hidden_size <= 0)
        return std::string(
            "the CuTe DSL fused grouped MLP keeps fc1's output in BF16, and there is no shared "
            "expert");
      return std::nullopt;
    case LowPrecisionActivation::attn_output:
      // DeepSeek-V3 report 3.3.3: the E5M6 cache of the attention output is its MLA's.
      if (sc.model.attention != workload::AttentionKind::mla)
        return fmt::format(
            "models DeepSeek-V3's E5M6 cache of MLA's attention output; model '{}' has {} "
            "attention",
            sc.model.name, workload::attention_kind_names().name(sc.model.attention));
      if (has(sc.framework.recompute_modules, RecomputeModule::core_attn))
        return std::string("core attention is recomputed ('core_attn'): its output is not kept");
      return std::nullopt;
  }
  return std::nullopt;
}

Why stack_inert(std::string_view name, const Scenario& sc) {
  const auto& fw = sc.framework;
  if (name == "mxfp8_alloc_fusion") return not_mxfp8(sc);
  if (name == "swizzle_fusion") {
    if (sc.training.precision == workload::Precision::nvfp4)
      return std::nullopt;  // NVFP4's E4M3 scales swizzle too
    return not_mxfp8(sc);
  }
  if (name == "pdl_quant") return not_fp8(sc);
  if (name == "norm_quant_fusion") {
    if (sc.training.precision == workload::Precision::nvfp4)
      return std::string(
          "the cuDNN norm fusion writes MXFP8 or FP8; NVFP4's quantize runs after the norm");
    return not_fp8(sc);
  }
  if (name == "nvfp4_rht_fusion") {
    if (sc.training.precision != workload::Precision::nvfp4)
      return fmt::format("an NVFP4 kernel change; training.precision is {}",
                         workload::precision_names().name(sc.training.precision));
    if (!sc.training.nvfp4.rht)
      return std::string("training.nvfp4.rht is off: no Hadamard transform to fuse");
    return std::nullopt;
  }
  if (name == "permute_fusion_v2") {
    if (auto w = no_experts(sc)) return w;
    // HybridEP permutes in its own kernels (Megatron-Core fused_a2a.py: dispatch_with_permute,
    // combine_with_unpermute), not with TE's permute.
    if (fw.dispatcher == hw_models::Dispatcher::hybridep)
      return std::string("dispatcher hybridep permutes in its own kernels, not TE's permute");
    return std::nullopt;
  }
  if (name == "router_fusion") return no_experts(sc);
  if (name == "cpu_numa_binding" &&
      (!sc.system.host.numa_unbound_factor || sc.system.host.numa_unbound_factor->value == 1.0))
    return fmt::format(
        "system '{}' prices unbound host processes as bound (host.numa_unbound_factor {})",
        sc.system.name, sc.system.host.numa_unbound_factor ? "1" : "absent");
  if (name == "te_host_slim" && !sc.system.host.te_slim_factor)
    return fmt::format("system '{}' has no host.te_slim_factor", sc.system.name);
  if (name == "cuda_graph_shared_expert") {
    if (auto w = no_experts(sc)) return w;
    if (sc.model.shared_expert_ffn_hidden_size <= 0)
      return fmt::format("model '{}' has no shared expert", sc.model.name);
    if (fw.cuda_graph_scope.empty())
      return std::string("no CUDA graphs (cuda_graph_scope is empty)");
    if (full_graph(sc) || has(fw.cuda_graph_scope, CudaGraphScope::moe))
      return std::string("the graph scope captures the shared expert anyway");
    return std::nullopt;
  }
  if (name == "deepep_tuned") {
    if (fw.dispatcher != hw_models::Dispatcher::deepep)
      return fmt::format("tunes DeepEP; the dispatcher is {}", dispatcher_name(sc));
    if (hw_models::ep_bandwidth_factor(sc.system, fw.dispatcher, true) == 1.0) {
      const auto& f = sc.system.ep_dispatch.deepep_tuned_factor;
      if (!f)
        return fmt::format(
            "system '{}' has no tuned DeepEP kernels (ep_dispatch.deepep_tuned_factor absent): "
            "NVIDIA's tuning was of the NVL72 kernels",
            sc.system.name);
      // The corpus fit may leave the tuning no gain (its lower bound, 1).
      return fmt::format(
          "system '{}' prices NVIDIA's tuned DeepEP kernels at the library's own rates "
          "(ep_dispatch.deepep_tuned_factor 1: {})",
          sc.system.name, f->source);
    }
    return std::nullopt;
  }
  if (name == "hybridep_permute_fusion" && fw.dispatcher != hw_models::Dispatcher::hybridep)
    return fmt::format("fuses HybridEP's buffer copy; the dispatcher is {}", dispatcher_name(sc));
  return std::nullopt;
}

std::vector<PerformanceSetting> build() {
  std::vector<PerformanceSetting> out;
  const auto key = [&](std::string name, Rule inert) {
    const std::string k = name;
    out.push_back(
        {std::move(name), [k](const Scenario& sc) { return sc.gave(k); }, std::move(inert)});
  };
  // A list's element: given when the file wrote the list and the element is in it.
  const auto element = [&](const std::string& list, std::string_view elem, auto in_list,
                           Rule inert) {
    out.push_back({fmt::format("{}[{}]", list, elem),
                   [list, in_list](const Scenario& sc) { return sc.gave(list) && in_list(sc); },
                   std::move(inert)});
  };

  // training
  for (const char* k : {"seq_length", "micro_batch_size", "global_batch_size", "precision",
                        "mtp_layers", "hidden_dropout"})
    key(std::string("training.") + k, never);
  // LoRA: the rank sizes the adapters' GEMMs and parameters, the targets place them.
  key("training.lora.rank", never);
  key("training.lora.targets", never);
  // The loader refuses training.nvfp4 unless the precision is nvfp4; every linear layer
  // quantizes its inputs (the Hadamard transform) and its output gradients (both).
  key("training.nvfp4.rht", [](const Scenario& sc) -> Why {
    // With experts the grouped splits share one cast with the transform, one each without.
    if (sc.stack.nvfp4_rht_fusion && !sc.model.is_moe())
      return std::string(
          "with stack.nvfp4_rht_fusion the transform rides in the amax pass and the cast: the "
          "kernels and bytes of the cast without it (and the model has no grouped expert GEMMs)");
    return std::nullopt;
  });
  key("training.nvfp4.stochastic_rounding", never);
  // The loader refuses a module the model lacks and a precision equal to the recipe's; only
  // layers that run the recipe take it.
  for (const auto& e : workload::quant_module_names().entries())
    key(fmt::format("training.module_precision.{}", e.name), [](const Scenario& sc) -> Why {
      const auto& t = sc.training;
      if (t.bf16_layers_at_start + t.bf16_layers_at_end >= sc.model.num_layers)
        return std::string("every decoder layer runs in BF16 (bf16_layers_at_start/_at_end)");
      return std::nullopt;
    });
  // The loader refuses it without 'full'; as many layers as a virtual stage holds is every
  // layer, the same as leaving it out.
  key("framework.recompute_num_layers", [](const Scenario& sc) -> Why {
    if (sc.framework.recompute_num_layers >= most_stage_layers(sc))
      return fmt::format(
          "{} layers recompute every layer of each virtual stage (at most {}): the same as "
          "'full' without it",
          sc.framework.recompute_num_layers, most_stage_layers(sc));
    return std::nullopt;
  });
  // The loader refuses a count without an FP8/FP4 precision; zero layers change nothing.
  for (const bool start : {true, false})
    key(start ? "training.bf16_layers_at_start" : "training.bf16_layers_at_end",
        [start](const Scenario& sc) -> Why {
          const auto& t = sc.training;
          if ((start ? t.bf16_layers_at_start : t.bf16_layers_at_end) > 0) return std::nullopt;
          return std::string("0 layers: none runs in BF16");
        });
  key("training.make_vocab_size_divisible_by", [](const Scenario& sc) -> Why {
    if (sc.padded_vocab() == workload::padded_vocab_size(sc.model.vocab_size, sc.parallelism.tp))
      return fmt::format("pads the vocabulary of {} to {}, as Megatron's default 128 does",
                         sc.model.vocab_size, sc.padded_vocab());
    return std::nullopt;
  });
  key("training.token_drop", no_experts);
  key("training.token_drop.pad", no_experts);

  // parallelism (several optimizer instances need dp x cp > 1: never inert)
  for (const char* k :
       {"tp", "pp", "vpp", "cp", "pipeline_schedule", "fsdp", "optimizer_instances"})
    key(std::string("parallelism.") + k, never);
  key("parallelism.outer_dp_sharding", [](const Scenario& sc) -> Why {
    if (!sc.parallelism.fsdp)
      return std::string("without fsdp the optimizer all-reduces across instances regardless");
    if (!sc.parallelism.hybrid()) return std::string("one optimizer instance: no outer group");
    return std::nullopt;
  });
  key("parallelism.ep", no_experts);
  key("parallelism.cp_comm_type", [](const Scenario& sc) -> Why {
    if (sc.parallelism.cp == 1) return std::string("cp is 1: attention exchanges nothing");
    return std::nullopt;
  });
  key("parallelism.etp", [](const Scenario& sc) -> Why {
    if (auto w = no_experts(sc)) return w;
    if (sc.parallelism.tp == 1) return std::string("etp is 1 or tp, and tp is 1");
    return std::nullopt;
  });
  key("parallelism.sequence_parallel", [](const Scenario& sc) -> Why {
    if (sc.parallelism.tp == 1) return std::string("sequence parallelism splits over TP; tp is 1");
    return std::nullopt;
  });
  key("parallelism.pp_layout", [](const Scenario& sc) -> Why {
    if (sc.parallelism.pp == 1) return std::string("one pipeline stage: the layout has one form");
    return std::nullopt;
  });
  key("parallelism.eplb", [](const Scenario& sc) -> Why {
    if (sc.parallelism.eplb && sc.parallelism.eplb->redundant_experts == 0 &&
        sc.routing.balance == workload::RoutingBalance::forced)
      return std::string(
          "forced routing gives every expert the same tokens: without redundant experts the "
          "balancer's placement changes no rank's load");
    return std::nullopt;
  });

  // framework
  key("framework.dispatcher", no_experts);
  key("framework.dispatcher_sms", [](const Scenario& sc) -> Why {
    if (auto w = no_experts(sc)) return w;
    if (nccl_dispatcher(sc))
      return fmt::format(
          "SMs given to DeepEP's and HybridEP's kernels; the {} dispatcher runs on NCCL's channels",
          dispatcher_name(sc));
    return std::nullopt;
  });
  key("framework.gemm_sm_margin", never);  // 0 too: a choice, as tp_comm_overlap false is
  key("framework.moe_a2a_overlap", no_a2a_overlap_pairs);
  key("framework.moe_shared_expert_overlap", [](const Scenario& sc) -> Why {
    return sc.model.shared_expert_ffn_hidden_size > 0 ? no_experts(sc) : Why("no shared expert");
  });
  key("framework.batch_p2p_sync", [](const Scenario& sc) -> Why {
    if (schedules::syncs_after_transfers(sc.pipeline_schedule, sc.parallelism.pp, full_graph(sc)))
      return std::nullopt;
    return std::string("syncs only under 1F1B at pp > 1 without a full-iteration graph");
  });
  key("framework.tp_comm_overlap", [](const Scenario& sc) -> Why {
    if (sc.parallelism.tp == 1)
      return std::string("TP is 1: no tensor-parallel collectives to overlap");
    return std::nullopt;
  });
  key("framework.delay_wgrad_compute", no_a2a_overlap_pairs);
  key("framework.ep_fp8_dispatch", no_experts);
  key("framework.moe_expert_rank_capacity_factor", [](const Scenario& sc) -> Why {
    if (auto w = no_experts(sc)) return w;
    if (sc.training.capacity_factor && !(full_graph(sc) && !sc.framework.moe_paged_stash) &&
        !(sc.ep_load_unbudgeted() > sc.ep_load()))
      return std::string(
          "removes the dropless device-host sync, which training.token_drop removes already, "
          "sizes static expert buffers only under full_iteration graphs without paged stash, and "
          "no rank receives more than its budget after the experts' own capacity");
    return std::nullopt;
  });
  key("framework.offload_layers", [](const Scenario& sc) -> Why {
    if (sc.framework.offload_layers == 0) return std::string("0 offloads no layer");
    return std::nullopt;
  });
  key("framework.moe_paged_stash", [](const Scenario& sc) -> Why {
    const auto cf = sc.framework.moe_expert_rank_capacity_factor;
    if (cf && *cf <= sc.ep_load())
      return fmt::format(
          "the hottest rank receives {:.3g} x the balanced tokens, at least the capacity factor "
          "{:g}: "
          "the static buffers hold no more than arrives",
          sc.ep_load(), *cf);
    return std::nullopt;
  });
  for (const auto& e : workload::cuda_graph_scope_names().entries()) {
    const auto v = e.value;
    element(
        "framework.cuda_graph_scope", e.name,
        [v](const Scenario& sc) { return has(sc.framework.cuda_graph_scope, v); },
        [v](const Scenario& sc) { return graph_scope_inert(v, sc); });
  }
  for (const auto& e : workload::recompute_module_names().entries()) {
    const auto v = e.value;
    element(
        "framework.recompute_modules", e.name,
        [v](const Scenario& sc) { return has(sc.framework.recompute_modules, v); },
        [v](const Scenario& sc) { return recompute_inert(v, sc); });
  }
  for (const auto& e : workload::offload_target_names().entries()) {
    const auto v = e.value;
    element(
        "framework.offload", e.name,
        [v](const Scenario& sc) { return has(sc.framework.offload, v); },
        [v](const Scenario& sc) { return offload_inert(v, sc); });
  }
  for (const auto& e : workload::low_precision_activation_names().entries()) {
    const auto v = e.value;
    element(
        "framework.low_precision_activations", e.name,
        [v](const Scenario& sc) { return has(sc.framework.low_precision_activations, v); },
        [v](const Scenario& sc) { return low_precision_inert(v, sc); });
  }
  key("framework.distributed_optimizer", [](const Scenario& sc) -> Why {
    // One data-parallel rank: nothing to shard, but overlap_param_gather's forward pre-hooks
    // (which need the distributed optimizer) still run.
    if (auto w = no_dp(sc); w && !sc.framework.overlap_param_gather) return w;
    return under_fsdp(sc, "shards and gathers the parameters itself");
  });
  key("framework.overlap_grad_reduce", [](const Scenario& sc) -> Why {
    if (auto w = no_dp(sc)) return w;
    return under_fsdp(sc, "reduce-scatters each layer's gradients after its backward");
  });
  key("framework.overlap_param_gather", [](const Scenario& sc) -> Why {
    // Not inert on one data-parallel rank: Megatron-Core's DDP registers its forward pre-hook
    // on every module whatever the DP size (workload/layer_graph_detail.hpp, module_calls_at).
    return under_fsdp(sc, "gathers each layer before its forward and backward");
  });
  key("framework.fp8_param_gather", [](const Scenario& sc) -> Why {
    if (auto w = no_dp(sc)) return w;
    if (sc.training.lora)
      return std::string(
          "under training.lora no frozen weight is gathered: the distributed optimizer shards "
          "and gathers the BF16 adapters only");
    const auto& fw = sc.framework;
    if (!fw.distributed_optimizer && !sc.parallelism.fsdp &&
        fw.optimizer != workload::OptimizerKind::muon)
      return std::string(
          "without the distributed optimizer (or FSDP) gradients are all-reduced and no "
          "parameter is gathered");
    if (sc.training.precision == workload::Precision::mxfp8 && fw.distributed_optimizer &&
        !sc.parallelism.fsdp)
      return std::string(
          "MXFP8 parameters under the distributed optimizer are gathered in BF16 either way "
          "(Megatron-Core's shared parameter and gradient buffer; schedules/kernel_pricing.cpp)");
    return std::nullopt;
  });
  key("framework.overlap_param_gather_with_optimizer_step", no_dp);
  key("framework.align_param_gather", [](const Scenario& sc) -> Why {
    if (auto w = no_dp(sc)) return w;
    if (sc.parallelism.fsdp)
      return std::string("parallelism.fsdp gathers each layer before its forward and backward");
    if (!sc.framework.overlap_param_gather)
      return std::string("overlap_param_gather is off: every gather runs before the first forward");
    return std::nullopt;
  });
  key("framework.ddp_bucket_size", [](const Scenario& sc) -> Why {
    if (auto w = no_dp(sc)) return w;
    if (sc.framework.overlap_param_gather_with_optimizer_step)
      return std::string(
          "overlap_param_gather_with_optimizer_step leaves every chunk one bucket (Megatron's "
          "disable_bucketing)");
    return under_fsdp(sc, "reduces and gathers per layer, not per bucket");
  });
  key("framework.grad_reduce_dtype", no_dp);
  key("framework.optimizer_state_dtype", [](const Scenario& sc) -> Why {
    if (sc.framework.optimizer == workload::OptimizerKind::muon)
      return std::string(
          "moesim prices Muon with one FP32 momentum for every parameter (the Adam-updated "
          "embedding, output layer and norms, whose moments this would set, are not split out)");
    return std::nullopt;
  });
  key("framework.te_op_fuser", [](const Scenario& sc) -> Why {
    const auto& m = sc.model;
    if (fused_mlp_runs(sc)) return std::nullopt;  // the fused grouped MLP runs inside it
    if (m.num_experts == 0 || (!m.expert_bias && m.activation_clamp == 0))
      return std::string(
          "the model's experts have no biases and no activation clamp: the eager path's grouped "
          "GEMMs and activation are what the fused grouped MLP is priced as");
    return std::nullopt;
  });
  key("framework.fused_grouped_mlp", [](const Scenario& sc) -> Why {
    return workload::fused_grouped_mlp_blocked(sc.model, sc.training.precision, hopper(sc));
  });
  key("framework.fused_grouped_mlp_sm_margin", [](const Scenario& sc) -> Why {
    if (fused_mlp_runs(sc)) return std::nullopt;
    return std::string("the CuTe DSL fused grouped MLP does not run (framework.fused_grouped_mlp)");
  });
  key("framework.rope_fusion", [](const Scenario& sc) -> Why {
    const auto& m = sc.model;
    if (m.is_dsv4())
      return std::string(
          "DeepSeek-V4's attention is priced with its fused RoPE kernels only (off is refused)");
    if (m.attention != workload::AttentionKind::gqa) return std::nullopt;
    if (m.learned_positions != 0 || !m.rope)
      return std::string("the model has no rotary position embeddings");
    if (m.rope_concentration != 1.0)
      return std::string(
          "YaRN's concentration factor is not 1: Megatron-Core applies RoPE unfused either way "
          "(rope_utils.py apply_rotary_pos_emb 279-284 at d0b3b775)");
    return std::nullopt;
  });
  for (const char* k :
       {"allocator_fragmentation", "optimizer", "main_grads_dtype", "fp8_dot_product_attention",
        "fp8_output_proj", "cross_entropy", "attention_backend"})
    key(std::string("framework.") + k, never);

  // stack
  // A release is never inert: it names the software that ran and refuses the features it
  // did not ship (config/releases.hpp), even where every switch it turns off is given or
  // acts not here (a BF16 run under a release whose off switches are FP8 kernels).
  key("stack.release", never);
  for (const auto& s : workload::stack_switches()) {
    const std::string n(s.name);
    key("stack." + n, [n](const Scenario& sc) { return stack_inert(n, sc); });
  }

  // routing
  const auto routed = [](const Scenario& sc) -> Why {
    if (auto w = no_experts(sc)) return w;
    return single_ep(sc);
  };
  key("routing.balance", routed);
  key("routing.distribution", routed);
  key("routing.alpha", [](const Scenario& sc) -> Why {
    if (sc.routing.distribution == workload::RoutingDistribution::uniform)
      return std::string("the Zipf exponent; the distribution is uniform");
    return single_ep(sc);
  });
  for (const char* k :
       {"routing.seed", "routing.path", "routing.coefficient", "routing.popularity_sigma"})
    key(k, single_ep);

  // placement
  key("placement.gpus_per_nvlink_domain", [](const Scenario& sc) -> Why {
    if (sc.system.nvlink.domain_gpus.value <= sc.system.node.gpus_per_node.value)
      return fmt::format("system '{}' has one node per NVLink domain: the domain is the node",
                         sc.system.name);
    return std::nullopt;
  });
  return out;
}

}  // namespace

const std::vector<PerformanceSetting>& performance_settings() {
  static const std::vector<PerformanceSetting> kSettings = build();
  return kSettings;
}

std::optional<std::string> stack_switch_inert(std::string_view name, const Scenario& sc) {
  return stack_inert(name, sc);
}

bool old_permute_runs(const Scenario& sc) {
  return !sc.stack.permute_fusion_v2 && !stack_inert("permute_fusion_v2", sc);
}

}  // namespace moesim::config
