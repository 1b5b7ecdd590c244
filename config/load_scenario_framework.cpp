// config/load_scenario_framework.cpp: the ScenarioReader's (config/load_scenario_detail.hpp)
// framework and stack sections: the dispatcher, overlaps, CUDA graphs, recompute and the
// other framework settings with the Megatron-Core rules between them, and the software
// release with the features it did not ship.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/inert_settings.hpp"
#include "config/load_scenario_detail.hpp"
#include "config/releases.hpp"
#include "hw_models/ep_flows.hpp"

namespace moesim::config {
namespace {

using workload::CudaGraphScope;
using workload::RecomputeModule;

// The graph scopes where a scenario gives none: the attention, the router and the EP
// preprocess, as Megatron-Bridge's MoE performance recipes capture them, and a hybrid
// model's Mamba mixers as its Nemotron-H recipes add (perf_recipes/nemotronh/common.py
// at v0.6.0: attn, mamba, moe_router, moe_preprocess).
std::vector<CudaGraphScope> default_graph_scopes(const workload::ModelConfig& m) {
  std::vector<CudaGraphScope> s{CudaGraphScope::attn, CudaGraphScope::moe_router,
                                CudaGraphScope::moe_preprocess};
  if (m.count_hybrid(workload::HybridLayer::mamba) > 0) s.push_back(CudaGraphScope::mamba);
  return s;
}

}  // namespace

namespace detail {

// Megatron-Core's TransformerConfig (transformer_config.py at d98e8a64): the overlap is
// "only effective when moe-shared-expert-intermediate-size is set" (717-721), works "only with
// alltoall or flex token dispatcher" (1820-1826), not with the shared_experts recompute
// (1991-1998) nor with --overlap-moe-expert-parallel-comm (3039-3041). moesim refuses the
// setting where it would change nothing (no shared expert). Read after the dispatcher, the
// EP overlap and the recompute modules.
void ScenarioReader::shared_expert_overlap_checks(const Node& v,
                                                  const workload::Framework& f) const {
  if (!sc_.model.is_moe() || sc_.model.shared_expert_ffn_hidden_size <= 0)
    v.fail(fmt::format(
        "model '{}' has no shared expert to overlap (Megatron-Core: the overlap is only "
        "effective when moe-shared-expert-intermediate-size is set)",
        sc_.model.name));
  // moe_layer.py 476-482 at d98e8a64: LatentMoE with the overlap raises in training.
  if (sc_.model.moe_latent_size > 0)
    v.fail(
        fmt::format("model '{}' is a latent MoE (moe_latent_size {}): Megatron-Core refuses "
                    "its shared-expert overlap in training",
                    sc_.model.name, sc_.model.moe_latent_size));
  if (f.dispatcher == hw_models::Dispatcher::allgather)
    v.fail(
        "Megatron-Core runs the shared-expert overlap with the alltoall or flex (deepep, "
        "hybridep) dispatcher only (moe_shared_expert_overlap only works with alltoall or "
        "flex token dispatcher)");
  if (f.moe_a2a_overlap)
    v.fail(
        "cannot run with moe_a2a_overlap (Megatron-Core: disable moe_shared_expert_overlap "
        "when enabling overlap_moe_expert_parallel_comm)");
  if (std::find(f.recompute_modules.begin(), f.recompute_modules.end(),
                RecomputeModule::shared_experts) != f.recompute_modules.end())
    v.fail(
        "cannot run with the shared_experts recompute (Megatron-Core: shared_experts "
        "recompute cannot work with --moe-shared-expert-overlap)");
  // The side stream is Megatron's, in Megatron's schedules; DualPipe's pairs and the
  // zero-bubble split place the shared expert in their own nodes, which moesim prices as
  // they run there.
  if (sc_.pipeline_schedule != ScheduleKind::one_f_one_b &&
      sc_.pipeline_schedule != ScheduleKind::interleaved_1f1b)
    v.fail(
        fmt::format("moesim runs the shared-expert stream in Megatron's 1F1B and interleaved 1F1B "
                    "schedules; parallelism.pipeline_schedule is '{}'",
                    schedules::schedule_names().name(sc_.pipeline_schedule)));
}

void ScenarioReader::framework(const std::optional<Node>& n) {
  auto& f = sc_.framework;
  const bool fp8 = workload::quantized(sc_.training.precision);
  const bool bf16_layers = sc_.training.any_bf16_layers();
  f.fp8_param_gather = fp8 && !bf16_layers;
  // DeepEP and HybridEP dispatch across the expert-parallel group (EP x expert-TP).
  // Megatron-Core's flex dispatcher asserts that group larger than one for DeepEP and NCCL
  // EP (token_dispatcher.py MoEFlexTokenDispatcher, "DeepEP dispatcher requires TPxEP > 1",
  // at d0b3b775, 458c8d0e and cd4afffa, Megatron-Bridge v0.5.0, v0.5.1 and v0.6.0's pins)
  // but not for HybridEP, whose one-rank group dispatches to the rank's own experts through
  // its buffers (Megatron-Bridge's GPT-OSS 20B recipes run it at EP 1). Without EP the
  // default is NCCL's all-to-all, which then only permutes locally.
  const bool single_ep = sc_.parallelism.ep == 1;
  if (single_ep) f.dispatcher = hw_models::Dispatcher::alltoall;
  std::optional<std::int64_t> sms;
  if (n) {
    read_object(*n, [&](Object& o) {
      if (auto d = o.get("dispatcher")) {
        f.dispatcher = d->as_enum(hw_models::dispatcher_names(), "dispatcher");
        const bool library = hw_models::is_ep_library(f.dispatcher);
        if (!sc_.model.is_moe() && library)
          d->fail(fmt::format("model '{}' has no experts to dispatch", sc_.model.name));
        const bool one_rank_hybridep =
            f.dispatcher == hw_models::Dispatcher::hybridep && sc_.parallelism.etp == 1;
        if (library && single_ep && !one_rank_hybridep)
          d->fail(fmt::format(
              "{} dispatches across expert-parallel ranks and ep is 1 (Megatron-Core's flex "
              "dispatcher asserts EP x expert-TP > 1 for DeepEP; HybridEP runs at EP 1 only "
              "with etp 1); use parallelism.ep > 1 or dispatcher \"alltoall\"",
              hw_models::dispatcher_names().name(f.dispatcher)));
      }
      if (auto s = o.get("dispatcher_sms"))
        sms = s->as_int(1, static_cast<std::int64_t>(sc_.system.gpu.sm_count.value) - 1);
      if (auto m = o.get("gemm_sm_margin"))
        f.gemm_sm_margin = static_cast<int>(
            m->as_int(0, static_cast<std::int64_t>(sc_.system.gpu.sm_count.value) - 1));
      f.moe_a2a_overlap = o.bool_or("moe_a2a_overlap", false);
      f.batch_p2p_sync = o.bool_or("batch_p2p_sync", true);
      // Megatron-Core's TransformerConfig asserts virtual pipeline stages for the overlap
      // under pipelining: plain 1F1B with pp > 1 has no combined schedule.
      if (f.moe_a2a_overlap && sc_.pipeline_schedule == ScheduleKind::one_f_one_b &&
          sc_.parallelism.pp > 1)
        o.req("moe_a2a_overlap")
            .fail(
                "Megatron-Core's 1F1B all-to-all overlap (--overlap-moe-expert-parallel-comm) "
                "needs virtual pipeline "
                "stages when pp > 1 (interleaved 1F1B: vpp > 1), or pp 1");
      // The combined 1F1B schedule asks the model for its schedule plan, which only
      // Megatron-Core's GPTModel builds (gpt_model.py build_schedule_plan at cd4afffa; the
      // hybrid model has none).
      if (f.moe_a2a_overlap && sc_.model.hybrid())
        o.req("moe_a2a_overlap")
            .fail(
                "Megatron-Core's 1F1B all-to-all overlap needs the model's schedule plan, which "
                "only its GPT model builds (gpt_model.py build_schedule_plan); a hybrid Mamba "
                "model has none");
      if (auto v = o.get("tp_comm_overlap")) {
        f.tp_comm_overlap = v->as_bool();
        // Megatron asserts it (arguments.py): userbuffers overlap sequence parallelism's
        // all-gathers and reduce-scatters.
        if (f.tp_comm_overlap && sc_.parallelism.tp > 1 && !sc_.parallelism.sequence_parallel)
          v->fail(
              "needs parallelism.sequence_parallel (Megatron: --tp-comm-overlap requires "
              "--sequence-parallel)");
        // TE's userbuffers gather FP8 and MXFP8 tensors only (module/base.py
        // fill_userbuffers_buffer_for_all_gather @ d0067d0d raises on any other quantizer).
        if (f.tp_comm_overlap && sc_.parallelism.tp > 1 &&
            sc_.training.precision == workload::Precision::nvfp4)
          v->fail(
              "TransformerEngine's userbuffers cannot gather NVFP4 tensors (module/base.py "
              "fill_userbuffers_buffer_for_all_gather: unsupported quantizer); NVFP4 runs gather "
              "with NCCL");
      }
      if (auto g = o.get("cuda_graph_scope")) {
        f.cuda_graph_scope =
            g->as_enum_list(workload::cuda_graph_scope_names(), "CUDA graph scope");
        if (f.cuda_graph_scope.size() > 1 &&
            std::find(f.cuda_graph_scope.begin(), f.cuda_graph_scope.end(),
                      CudaGraphScope::full_iteration) != f.cuda_graph_scope.end())
          g->fail("full_iteration captures everything and must be the only scope");
      } else {
        f.cuda_graph_scope = default_graph_scopes(sc_.model);
      }
      if (auto e = o.get("ep_fp8_dispatch")) {
        f.ep_fp8_dispatch = e->as_bool();
        if (f.ep_fp8_dispatch && f.dispatcher != hw_models::Dispatcher::deepep &&
            f.dispatcher != hw_models::Dispatcher::hybridep)
          e->fail(
              "FP8 dispatch is DeepEP's and HybridEP's; needs dispatcher \"deepep\" or "
              "\"hybridep\"");
      }
      if (auto c = o.get("moe_expert_rank_capacity_factor")) {
        f.moe_expert_rank_capacity_factor = c->as_number(1.0, 1000);
        if (f.dispatcher != hw_models::Dispatcher::hybridep)
          c->fail("sizes HybridEP's dispatch buffers; needs dispatcher \"hybridep\"");
      }
      // Capturing the routed experts needs their shapes fixed on the host: Megatron
      // refuses `moe` for dropless MoE (token drop only) and full_iteration graphs while
      // the dropless path syncs the device to the host (docs/research/
      // gb200-journey-mechanisms.md 2.5).
      if (auto g = o.get("cuda_graph_scope"); g && sc_.model.is_moe() &&
                                              !sc_.training.capacity_factor &&
                                              !f.moe_expert_rank_capacity_factor) {
        for (const auto s : f.cuda_graph_scope)
          if (s == CudaGraphScope::moe || s == CudaGraphScope::full_iteration)
            g->fail(fmt::format(
                "'{}' captures the routed experts, which dropless MoE cannot: it waits on the "
                "host for per-expert token counts. Set training.token_drop or (HybridEP) "
                "framework.moe_expert_rank_capacity_factor to remove the device-host sync",
                workload::cuda_graph_scope_names().name(s)));
      }
      if (auto r = o.get("recompute_modules")) {
        f.recompute_modules =
            r->as_enum_list(workload::recompute_module_names(), "recompute module");
        std::size_t i = 0;
        r->for_each_element([&](const Node& e) {
          const auto mod = f.recompute_modules[i++];
          if (mod == RecomputeModule::full && f.recompute_modules.size() > 1)
            e.fail("'full' recomputes whole layers and must be the only module");
          // DeepSeek-V4's q up-projection recomputes under the same name (its recipes'
          // mla_up_proj; deepseek_v4_hybrid_attention.py).
          if ((mod == RecomputeModule::mla_up_proj || mod == RecomputeModule::up_proj) &&
              sc_.model.attention == workload::AttentionKind::gqa)
            e.fail(fmt::format("model '{}' has no MLA up-projection", sc_.model.name));
          if (mod == RecomputeModule::mhc && !sc_.model.is_dsv4())
            e.fail(fmt::format("model '{}' has no mHC (DeepSeek-V4's hyper-connections)",
                               sc_.model.name));
        });
        // A set: kept in the table's order, so that equal settings read (and describe) equal.
        std::sort(f.recompute_modules.begin(), f.recompute_modules.end());
        // Megatron-Core's TransformerConfig asserts recompute_granularity != 'full' with
        // --overlap-moe-expert-parallel-comm: the combined schedule drives each layer's
        // sub-modules, which a whole-layer checkpoint hides.
        if (f.moe_a2a_overlap && std::find(f.recompute_modules.begin(), f.recompute_modules.end(),
                                           RecomputeModule::full) != f.recompute_modules.end())
          r->fail(
              "'full' recompute cannot run with moe_a2a_overlap (Megatron-Core asserts "
              "recompute_granularity != 'full' with --overlap-moe-expert-parallel-comm)");
      }
      if (auto r = o.get("recompute_num_layers")) {
        // Megatron's block method (workload::Framework::recompute_num_layers).
        f.recompute_num_layers = r->as_int(1, sc_.model.num_layers);
        if (f.recompute_modules != std::vector{RecomputeModule::full})
          r->fail(
              "recompute_num_layers is the block method of 'full' recompute (Megatron's "
              "--recompute-method block): it needs recompute_modules [\"full\"]");
      }
      // Hash-routed layers forbid it (Megatron-LM dev d48bd6be transformer_config.py 2899).
      if (f.moe_a2a_overlap && sc_.model.dsv4.hash_layers > 0)
        o.req("moe_a2a_overlap")
            .fail(fmt::format("model '{}' routes its first {} layers by token id, which "
                              "Megatron-LM's EP all-to-all overlap refuses",
                              sc_.model.name, sc_.model.dsv4.hash_layers));
      // Megatron-Core asserts it too: the combined schedule places one MTP layer.
      if (f.moe_a2a_overlap && sc_.training.mtp_layers > 1)
        o.req("moe_a2a_overlap")
            .fail(fmt::format("Megatron-Core's --overlap-moe-expert-parallel-comm supports at "
                              "most one MTP layer; "
                              "training.mtp_layers is {}",
                              sc_.training.mtp_layers));
      if (auto v = o.get("moe_shared_expert_overlap")) {
        f.moe_shared_expert_overlap = v->as_bool();
        if (f.moe_shared_expert_overlap) shared_expert_overlap_checks(*v, f);
      }
      f.distributed_optimizer = o.bool_or("distributed_optimizer", true);
      // MXFP8 weights re-quantized from their bucket's BF16 gather (KernelPricing::
      // requant_seconds) over buckets that mix BF16 layers are not priced apart.
      if (bf16_layers && sc_.training.precision == workload::Precision::mxfp8 &&
          f.distributed_optimizer && !sc_.parallelism.fsdp)
        fail(sc_.training.bf16_layers_at_start > 0 ? "training.bf16_layers_at_start"
                                                   : "training.bf16_layers_at_end",
             "with MXFP8 under the distributed optimizer: the weights' re-quantization after each "
             "bucket's gather, which skips the BF16 layers, is not modeled apart");
      f.overlap_grad_reduce = o.bool_or("overlap_grad_reduce", true);
      f.overlap_param_gather = o.bool_or("overlap_param_gather", f.distributed_optimizer);
      if (f.overlap_param_gather && !f.distributed_optimizer)
        o.get("overlap_param_gather")->fail("needs distributed_optimizer (Megatron-Core)");
      // Megatron's arguments.py asserts the same three.
      if (auto g = o.get("overlap_param_gather_with_optimizer_step")) {
        f.overlap_param_gather_with_optimizer_step = g->as_bool();
        if (f.overlap_param_gather_with_optimizer_step) {
          if (!f.distributed_optimizer || !f.overlap_param_gather)
            g->fail("needs distributed_optimizer and overlap_param_gather");
          if (sc_.parallelism.vpp < 2) g->fail("needs an interleaved pipeline (vpp > 1)");
          if (sc_.parallelism.fsdp)
            g->fail("is the distributed optimizer's; parallelism.fsdp gathers per layer");
        }
      }
      // Megatron's arguments.py turns align_param_gather off for its non-interleaved schedule
      // (1F1B, and no pipelining: "non-interleaved schedule does not support ... aligned param
      // AG"); DualPipe and ZB-H1 are not Megatron's schedules, and keep the gathers ahead.
      {
        const bool plain = sc_.pipeline_schedule == ScheduleKind::one_f_one_b;
        f.align_param_gather = o.bool_or("align_param_gather", !plain);
        if (f.align_param_gather && plain)
          o.req("align_param_gather")
              .fail(
                  "needs a schedule other than 1f1b: Megatron-LM's arguments.py sets "
                  "align_param_gather False "
                  "for its non-interleaved schedule");
      }
      if (auto g = o.get("fp8_param_gather")) {
        f.fp8_param_gather = g->as_bool();
        if (f.fp8_param_gather && !fp8) g->fail("needs an FP8 training.precision");
        if (f.fp8_param_gather && bf16_layers)
          g->fail(
              "with training.bf16_layers_at_start/end: the BF16 layers' parameters would gather "
              "in BF16 beside the quantized rest, which is not modeled");
      }
      if (auto l = o.get("low_precision_activations"))
        f.low_precision_activations =
            l->as_enum_list(workload::low_precision_activation_names(), "low-precision activation");
      f.allocator_fragmentation = o.number_or("allocator_fragmentation", 0, 0, 1);
      if (auto b = o.get("ddp_bucket_size"))
        f.ddp_bucket_size = static_cast<double>(b->as_int(1, 1LL << 40));
      if (auto d = o.get("optimizer_state_dtype"))
        f.optimizer_state_dtype =
            d->as_enum(workload::optimizer_state_dtype_names(), "optimizer state dtype");
      if (auto off = o.get("offload"))
        f.offload = off->as_enum_list(workload::offload_target_names(), "offload target");
      if (auto layers = o.get("offload_layers")) {
        f.offload_layers = layers->as_int(0, sc_.model.num_layers - 1);
        // Megatron-Core's and TE's checks on layer offloading (docs/research/
        // cpu-layer-offloading.md 2): one pipeline stage, no recompute, no partial CUDA
        // graphs, not beside the fine-grained offloading. Without a graph scope given, none.
        const bool full_graph = f.cuda_graph_scope.size() == 1 &&
                                f.cuda_graph_scope[0] == CudaGraphScope::full_iteration;
        if (f.offload_layers > 0) {
          if (sc_.parallelism.pp > 1)
            layers->fail(
                "Megatron-Core's layer offloading runs without pipeline parallelism (pp 1)");
          if (!f.recompute_modules.empty())
            layers->fail("Megatron-Core's layer offloading runs without activation recompute");
          if (!f.offload.empty())
            layers->fail(
                "the fine-grained offloading (framework.offload) and layer offloading exclude "
                "each other");
          if (!o.get("cuda_graph_scope"))
            f.cuda_graph_scope.clear();
          else if (!f.cuda_graph_scope.empty() && !full_graph)
            layers->fail(
                "Megatron-Core's layer offloading runs with no CUDA graphs or a full-iteration "
                "one (cuda_graph_scope)");
        }
      }
      if (auto v = o.get("optimizer"))
        f.optimizer = v->as_enum(workload::optimizer_kind_names(), "optimizer");
      if (auto v = o.get("main_grads_dtype"))
        f.main_grads_dtype = v->as_enum(workload::grad_dtype_names(), "gradient dtype");
      if (auto v = o.get("grad_reduce_dtype"))
        f.grad_reduce_dtype = v->as_enum(workload::grad_dtype_names(), "gradient dtype");
      if (auto v = o.get("delay_wgrad_compute")) {
        f.delay_wgrad_compute = v->as_bool();
        // Megatron-Core asserts it: the delayed GEMMs fill the overlap schedule's gaps.
        if (f.delay_wgrad_compute && !f.moe_a2a_overlap)
          v->fail(
              "needs moe_a2a_overlap (Megatron-Core: --delay-wgrad-compute requires "
              "--overlap-moe-expert-parallel-comm)");
      }
      if (auto v = o.get("fp8_dot_product_attention")) {
        f.fp8_dot_product_attention = v->as_bool();
        if (f.fp8_dot_product_attention && !fp8) v->fail("needs an FP8 training.precision");
        if (f.fp8_dot_product_attention && !sc_.system.efficiency.attention_fp8_fwd)
          v->fail(fmt::format(
              "system '{}' has no FP8 attention efficiency (efficiency.attention_fp8_fwd/"
              "_bwd: no published FP8 attention figure for its GPU)",
              sc_.system.name));
      }
      if (auto v = o.get("attention_backend")) {
        f.attention_backend = v->as_enum(workload::attention_backend_names(), "attention backend");
        // TE runs context parallelism and FP8 attention only in its fused backends.
        if (f.attention_backend == workload::AttentionBackend::unfused && sc_.parallelism.cp > 1)
          v->fail(
              "TransformerEngine's unfused attention has no context parallelism (parallelism.cp "
              "> 1)");
        if (f.attention_backend == workload::AttentionBackend::unfused &&
            f.fp8_dot_product_attention)
          v->fail(
              "FP8 attention (framework.fp8_dot_product_attention) runs in TransformerEngine's "
              "fused backends");
      }
      if (auto v = o.get("cross_entropy"))
        f.cross_entropy =
            v->as_enum(workload::cross_entropy_names(), "cross-entropy implementation");
      if (auto v = o.get("fp8_output_proj")) {
        f.fp8_output_proj = v->as_bool();
        if (f.fp8_output_proj && sc_.training.precision != workload::Precision::mxfp8)
          v->fail(
              "needs training.precision mxfp8 (Megatron-Core runs the LM head under MXFP8 only)");
      }
      if (auto v = o.get("te_op_fuser")) f.te_op_fuser = v->as_bool();
      if (auto v = o.get("fused_grouped_mlp")) {
        f.fused_grouped_mlp = v->as_bool();
        // NVTE_CUTEDSL_FUSED_GROUPED_MLP acts inside TE's op fuser, which Megatron-Core asserts
        // it can run (experts.py _is_fused_impl_supported at d98e8a64: no expert tensor
        // parallelism, no expert_fc1 or moe_act offloading; the fused grouped MLP's own
        // offload is moesim's expert_fc1_act, importer/bridge_perf_recipe.cpp).
        const auto blocked = [&]() -> std::optional<std::string> {
          if (!f.te_op_fuser)
            return "needs te_op_fuser (the CuTe DSL kernels run inside TransformerEngine's op "
                   "fuser; Megatron-Core's unfused TEGroupedMLP does not read "
                   "NVTE_CUTEDSL_FUSED_GROUPED_MLP)";
          if (sc_.parallelism.etp > 1)
            return "needs parallelism.etp 1 (Megatron-Core's op-fuser grouped MLP has no tensor "
                   "parallelism)";
          if (workload::has(f.offload, workload::OffloadTarget::expert_fc1) ||
              workload::has(f.offload, workload::OffloadTarget::moe_act))
            return "cannot take offload expert_fc1 or moe_act (Megatron-Core offloads them on "
                   "the unfused path only; the fused grouped MLP's offload is expert_fc1_act)";
          return std::nullopt;
        };
        if (f.fused_grouped_mlp)
          if (auto why = blocked()) v->fail(*why);
      }
      if (auto m = o.get("fused_grouped_mlp_sm_margin"))
        f.fused_grouped_mlp_sm_margin = static_cast<int>(
            m->as_int(0, static_cast<std::int64_t>(sc_.system.gpu.sm_count.value) - 1));
      if (auto v = o.get("rope_fusion")) {
        f.rope_fusion = v->as_bool();
        if (!f.rope_fusion && sc_.model.is_dsv4())
          v->fail(
              "DeepSeek-V4's hybrid attention is priced with its fused RoPE kernels "
              "(fused_mla_rope_inplace); its unfused path is not modeled");
      }
      if (auto v = o.get("moe_paged_stash")) {
        f.moe_paged_stash = v->as_bool();
        const bool full = std::find(f.cuda_graph_scope.begin(), f.cuda_graph_scope.end(),
                                    CudaGraphScope::full_iteration) != f.cuda_graph_scope.end();
        if (f.moe_paged_stash && (!full || !f.moe_expert_rank_capacity_factor))
          v->fail(
              "pages the experts' saved activations of full-iteration CUDA graphs: needs "
              "cuda_graph_scope "
              "[\"full_iteration\"] and moe_expert_rank_capacity_factor");
      }
    });
  } else {
    f.cuda_graph_scope = default_graph_scopes(sc_.model);
  }
  const int def = hw_models::default_dispatcher_sms(f.dispatcher);
  f.dispatcher_sms = def == 0 ? 0 : static_cast<int>(sms.value_or(def));
  // A what-if GPU with no more SMs than the library's default leaves compute none (the
  // fuzz target's 8-SM H800 under HybridEP reached the engine with a negative share).
  if (!sms && def > 0 && def >= static_cast<int>(sc_.system.gpu.sm_count.value))
    fail("framework.dispatcher_sms",
         fmt::format("{} takes {} SMs by default, all of this GPU's {} (system.gpu.sm_count): give "
                     "dispatcher_sms below {}",
                     hw_models::dispatcher_names().name(f.dispatcher), def,
                     sc_.system.gpu.sm_count.value, sc_.system.gpu.sm_count.value));
  // Sequence parallelism's backward all-gather overlaps the dgrad beside it on
  // TransformerEngine's userbuffers, which hold 16 SMs (schedules/kernel_pricing.cpp
  // overlap_tp): a GPU of 16 or fewer has none left for the GEMM.
  if (sc_.parallelism.tp > 1 && sc_.parallelism.sequence_parallel &&
      sc_.system.gpu.sm_count.value <= 16)
    fail("parallelism.sequence_parallel",
         fmt::format("overlaps its gathers on TransformerEngine's userbuffers, which take 16 "
                     "SMs, all of this "
                     "GPU's {} (system.gpu.sm_count)",
                     sc_.system.gpu.sm_count.value));
  // Optimizer instances without FSDP: Megatron-Core's DDP asserts the distributed optimizer
  // (distributed_data_parallel.py 292-295 at cd4afffa); Muon's layer-wise path across
  // instances is not modeled.
  if (sc_.parallelism.hybrid()) {
    if (!sc_.parallelism.fsdp && !f.distributed_optimizer)
      fail("parallelism.optimizer_instances",
           "needs framework.distributed_optimizer or parallelism.fsdp (Megatron-Core asserts the "
           "distributed optimizer for several instances)");
    if (f.optimizer == workload::OptimizerKind::muon)
      fail("parallelism.optimizer_instances",
           "with Muon: the layer-wise optimizer across distributed-optimizer instances is not "
           "modeled");
  }
  // LoRA (training.lora) beside what moesim prices only for trained base weights.
  if (sc_.training.lora) {
    if (sc_.parallelism.fsdp)
      fail("training.lora",
           "with parallelism.fsdp: Megatron FSDP's sharding of frozen base weights beside "
           "trained adapters is not modeled");
    if (f.optimizer == workload::OptimizerKind::muon)
      fail("training.lora", "with Muon: moesim prices LoRA's adapters under Adam");
    if (f.delay_wgrad_compute)
      fail("framework.delay_wgrad_compute",
           "with training.lora the frozen base linears compute no weight gradient to delay");
  }
}

// stack.release resolves the switches (config/releases.hpp); the keys given win.
void ScenarioReader::stack(const std::optional<Node>& n) {
  if (!n) return;
  read_object(*n, [&](Object& o) {
    if (auto r = o.get("release")) {
      sc_.release = r->as_string();
      if (auto why = unknown_release(sc_.release)) r->fail(*why);
      if (const auto* rel = find_release(sc_.release)) {
        auto res = resolve_release(*rel, sc_.system.gpu.name);
        sc_.stack = res.stack;
        sc_.release_unsettled = std::move(res.unsettled);
      }
    }
    for (const auto& s : workload::stack_switches())
      if (auto v = o.get(s.name)) {
        sc_.stack.*s.member = v->as_bool();
        stack_given_.emplace_back(s.name);
        std::erase(sc_.release_unsettled, std::string(s.name));
      }
  });
}

// After the whole scenario is read: a named release refuses the features it did not
// ship; "custom" needs every switch that acts here given.
void ScenarioReader::release_rules() {
  // TE's permute before 2.6 is priced in SM cycles (hw_models::ComputeWork::walk_loads).
  if (!sc_.system.gpu.clock_mhz && old_permute_runs(sc_))
    fail("stack.permute_fusion_v2",
         fmt::format("system '{}' has no SM clock (gpu.clock_mhz) to price the permute before TE "
                     "2.6 (its row-map walk is latency-bound on the SMs); name a release from "
                     "25.09 on or give stack.permute_fusion_v2 true",
                     sc_.system.name));
  if (sc_.release.empty()) return;
  if (sc_.release == kCustomRelease) {
    std::vector<std::string> missing;
    for (const auto& s : workload::stack_switches())
      if (std::find(stack_given_.begin(), stack_given_.end(), s.name) == stack_given_.end() &&
          !stack_switch_inert(s.name, sc_))
        missing.push_back("stack." + std::string(s.name));
    if (!missing.empty())
      fail("stack.release",
           fmt::format("'custom' (a build of its own) resolves no switch; give {} (they act in "
                       "this scenario), or name a release: {}",
                       fmt::join(missing, ", "), known_release_names()));
    return;
  }
  if (auto r = release_refusal(*find_release(sc_.release), sc_)) fail(r->path, r->message);
}

}  // namespace detail
}  // namespace moesim::config
