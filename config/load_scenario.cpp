// Reads and validates a scenario file (docs/SCENARIO_FORMAT.md, schema/scenario.schema.json).
// Sections are read strictly (unknown keys refused); then the cross-field rules of Megatron-Core
// are checked, each reported at the JSON path of the setting to change.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/presets.hpp"
#include "config/releases.hpp"
#include "config/storage.hpp"
#include "hw_models/ep_flows.hpp"
#include "workload/eplb.hpp"

namespace moesim::config {

const sim_core::NameTable<MeasuredMetric>& measured_metric_names() {
  static constexpr std::array<sim_core::NameEntry<MeasuredMetric>, 4> kEntries{{
      {MeasuredMetric::tflops_per_gpu, "tflops_per_gpu", "Megatron-accounted TFLOPS per GPU"},
      {MeasuredMetric::step_time_s, "step_time_s", "seconds per training step"},
      {MeasuredMetric::tokens_per_s_per_gpu, "tokens_per_s_per_gpu", "tokens per second per GPU"},
      {MeasuredMetric::peak_memory_gib, "peak_memory_gib",
       "one rank's peak memory in GiB, as PyTorch's allocator counts it (memory_counter)"},
  }};
  static constexpr sim_core::NameTable<MeasuredMetric> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<MemoryCounter>& memory_counter_names() {
  static constexpr std::array<sim_core::NameEntry<MemoryCounter>, 2> kEntries{{
      {MemoryCounter::max_allocated, "max_allocated",
       "torch.cuda.max_memory_allocated: tensors alive at the peak"},
      {MemoryCounter::max_reserved, "max_reserved",
       "torch.cuda.max_memory_reserved: the caching allocator's segments at the peak"},
  }};
  static constexpr sim_core::NameTable<MemoryCounter> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<Decision>& decision_names() {
  static constexpr std::array<sim_core::NameEntry<Decision>, 17> kEntries{{
      {Decision::ep_overlap, "ep_overlap",
       "1F1B EP all-to-all overlap (moe_a2a_overlap), delayed weight gradients"},
      {Decision::tp, "tp", "tensor-parallel degree, with sequence parallelism"},
      {Decision::ep_span, "ep_span", "EP degree or its span over NVLink domains or nodes"},
      {Decision::dispatcher, "dispatcher",
       "the EP dispatcher (NCCL all-to-all, DeepEP, HybridEP) and its SMs"},
      {Decision::cuda_graph, "cuda_graph", "the CUDA-graph scope"},
      {Decision::recompute, "recompute", "activation recompute modules or granularity"},
      {Decision::mbs, "mbs", "micro-batch size"},
      {Decision::pipeline, "pipeline", "pipeline depth, virtual stages and the layer split"},
      {Decision::zero_overlap, "zero_overlap",
       "the distributed optimizer's grad-reduce and param-gather overlap"},
      {Decision::release, "release", "software release (container and library versions)"},
      {Decision::system, "system", "GPU system or network"},
      {Decision::scale, "scale", "cluster size at a fixed recipe"},
      {Decision::fusion, "fusion", "kernel fusions (router, permute, quantization, normalization)"},
      {Decision::host, "host", "host-side settings (NUMA binding, a slimmer host path)"},
      {Decision::precision, "precision", "the training precision recipe"},
      {Decision::batch, "batch", "global batch size at a fixed layout"},
      {Decision::layout, "layout", "several layout decisions at once"},
  }};
  static constexpr sim_core::NameTable<Decision> kTable{kEntries};
  return kTable;
}

std::string measured_name(const Measured& m) {
  const std::string metric(measured_metric_names().name(m.metric));
  if (is_timing(m.metric)) return metric;
  return fmt::format("{} {}{}", metric, memory_counter_names().name(m.memory_counter),
                     m.pp_rank ? fmt::format(" pp{}", *m.pp_rank) : "");
}

namespace {

using schedules::ScheduleKind;
using workload::CudaGraphScope;
using workload::RecomputeModule;

constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
constexpr std::int64_t kMaxDegree = 65536;

class ScenarioReader {
 public:
  ScenarioReader(const Json& j, const std::string& file, const LoadOptions& opts)
      : file_(std::make_shared<const std::string>(file)), root_(j, "", file_), opts_(opts) {}

  Scenario read() {
    sc_.file = *file_;
    read_object(root_, [&](Object& o) {
      sc_.name = o.req("name").as_string();
      sc_.description = o.string_or("description", "");
      {
        const Node sys = o.req("system");
        std::string key;
        std::shared_ptr<const hw_models::SystemSpec> hit;
        if (opts_.systems) {
          key = fmt::format("{}\n{}\n{}", *file_, opts_.calibrated, sys.json().dump());
          hit = opts_.systems->find(key);
        }
        if (hit) {
          sc_.system = *hit;
        } else {
          const auto r = detail::resolve_preset_or_inline(sys, PresetKind::system, opts_);
          sc_.system = read_system(*r.node);
          sc_.system.profiles = r.profiles;
          if (opts_.systems) opts_.systems->put(key, sc_.system);
        }
        if (opts_.headroom_gib > 0) {
          auto& cap = sc_.system.gpu.usable_GiB;
          if (opts_.headroom_gib >= cap.value)
            fail("system",
                 fmt::format(
                     "--headroom {:g} GiB leaves nothing of the {:g} GiB CUDA reports on a {}",
                     opts_.headroom_gib, cap.value, sc_.system.gpu.name));
          cap.value -= opts_.headroom_gib;
          cap.source += fmt::format(", less {:g} GiB of headroom", opts_.headroom_gib);
        }
      }
      sc_.gpus = o.req("gpus").as_int(1, kMaxGpus);
      {
        const auto r = detail::resolve_preset_or_inline(o.req("model"), PresetKind::model);
        sc_.model = read_model(*r.node);
        if (o.req("model").json().is_string()) sc_.model.name = o.req("model").as_string();
      }
      training(o.req("training"));
      parallelism(o.get("parallelism"));
      framework(o.get("framework"));
      stack(o.get("stack"));
      routing(o.get("routing"));
      measured(o.get("measured"));
      recorded(o.get("recorded"));
      goodput(o.get("goodput"));
      cost(o.get("cost"));
      placement(o.get("placement"));
      ep_library_placement(o.has("framework") && o.req("framework").json().contains("dispatcher"));
      eplb_placement();
      release_rules();
    });
    for (const char* section :
         {"training", "parallelism", "framework", "stack", "routing", "placement"})
      if (const auto it = root_.json().find(section); it != root_.json().end() && it->is_object())
        for (const auto& kv : it->items()) {
          const std::string key = std::string(section) + "." + kv.key();
          sc_.given_keys.push_back(key);
          // An object's own keys too (training.nvfp4.rht): the registry may name them.
          if (kv.value().is_object())
            for (const auto& inner : kv.value().items())
              sc_.given_keys.push_back(key + "." + inner.key());
        }
    return std::move(sc_);
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw InputError(*file_, path, msg);
  }

  void training(const Node& n) {
    auto& t = sc_.training;
    read_object(n, [&](Object& o) {
      t.seq_length = o.req("seq_length").as_int(1, std::int64_t{1} << 22);
      t.micro_batch_size = o.req("micro_batch_size").as_int(1, std::int64_t{1} << 16);
      t.global_batch_size = o.req("global_batch_size").as_int(1, std::int64_t{1} << 30);
      if (auto p = o.get("precision"))
        t.precision = p->as_enum(workload::precision_names(), "precision");
      t.mtp_layers = o.int_or("mtp_layers", 0, 0, 16);
      t.hidden_dropout = o.number_or("hidden_dropout", 0, 0, 0.99);
      t.vocab_divisor = o.int_or("make_vocab_size_divisible_by", 128, 1, std::int64_t{1} << 20);
      if (auto n4 = o.get("nvfp4")) {
        if (t.precision != workload::Precision::nvfp4) n4->fail("needs training.precision nvfp4");
        read_object(*n4, [&](Object& r) {
          t.nvfp4.rht = r.bool_or("rht", true);
          t.nvfp4.stochastic_rounding = r.bool_or("stochastic_rounding", true);
          if (auto w = r.get("weight_2d"))
            w->fail(
                "2D (16x16) weight scales change numerics, not time: TransformerEngine quantizes a "
                "weight once "
                "per step and its 2D cast moves the bytes of the 1D one, so moesim takes no "
                "setting for it");
        });
      }
      if (auto td = o.get("token_drop"))
        read_object(*td, [&](Object& d) {
          t.capacity_factor = d.req("capacity_factor").as_number(0.01, 1000);
        });
    });
    const auto dtype = workload::gemm_dtype(t.precision);
    if (!sc_.system.gpu.supports(dtype)) {
      std::vector<std::string_view> have;
      for (const auto& [d, p] : sc_.system.gpu.dense_tflops)
        have.push_back(hw_models::dtype_names().name(d));
      fail("training.precision",
           fmt::format("{} needs {} Tensor Core support, which {} ({}) does not have; its "
                       "dense peaks are for: {}",
                       workload::precision_names().name(t.precision),
                       hw_models::dtype_names().name(dtype), sc_.system.gpu.name,
                       hw_models::gpu_arch_names().name(sc_.system.gpu.arch),
                       fmt::join(have, ", ")));
    }
  }

  void parallelism(const std::optional<Node>& n) {
    auto& p = sc_.parallelism;
    const auto& m = sc_.model;
    std::optional<bool> sp_requested;
    std::optional<ScheduleKind> schedule;
    bool vpp_given = false;
    if (n) {
      read_object(*n, [&](Object& o) {
        p.tp = o.int_or("tp", 1, 1, kMaxDegree);
        p.pp = o.int_or("pp", 1, 1, kMaxDegree);
        vpp_given = o.has("vpp");
        p.vpp = o.int_or("vpp", 1, 1, kMaxDegree);
        p.ep = o.int_or("ep", 1, 1, kMaxDegree);
        p.etp = o.int_or("etp", 1, 1, kMaxDegree);
        p.cp = o.int_or("cp", 1, 1, kMaxDegree);
        // TE runs windowed attention under context parallelism only with its all-to-all
        // exchange, not the ring moesim prices.
        if (p.cp > 1 && sc_.model.any_windowed())
          o.req("cp").fail(
              fmt::format("model '{}' has sliding-window layers; context parallelism with them "
                          "(TE's all-to-all CP) is not modeled",
                          sc_.model.name));
        if (auto sp = o.get("sequence_parallel")) sp_requested = sp->as_bool();
        sc_.pp_layout_text = o.string_or("pp_layout", "");
        if (auto s = o.get("pipeline_schedule"))
          schedule = s->as_enum(schedules::schedule_names(), "pipeline schedule");
        p.fsdp = o.bool_or("fsdp", false);
        if (auto e = o.get("eplb"))
          read_object(*e, [&](Object& eo) {
            workload::Eplb eplb;
            eplb.redundant_experts = eo.req("redundant_experts").as_int(0, 1 << 20);
            if (auto pol = eo.get("policy"))
              eplb.policy = pol->as_enum(workload::eplb_policy_names(), "EPLB policy");
            p.eplb = eplb;
          });
      });
    }

    // Dense layers: gpus = tp x cp x dp x pp.
    const std::int64_t model_parallel = p.tp * p.pp * p.cp;
    if (sc_.gpus % model_parallel != 0)
      fail("gpus", fmt::format("{} GPUs are not divisible by tp x pp x cp = {} x {} x {} = {}",
                               sc_.gpus, p.tp, p.pp, p.cp, model_parallel));
    p.dp = sc_.gpus / model_parallel;
    // Expert layers fold EP x ETP out of the tp x cp x dp ranks of each pipeline stage.
    const std::int64_t stage_gpus = sc_.gpus / p.pp;
    if (stage_gpus % (p.ep * p.etp) != 0)
      fail("parallelism.ep",
           fmt::format("ep x etp = {} x {} = {} does not divide the {} GPUs of a pipeline stage "
                       "(gpus / pp)",
                       p.ep, p.etp, p.ep * p.etp, stage_gpus));
    p.expert_dp = stage_gpus / (p.ep * p.etp);
    if (!m.is_moe() && p.ep > 1)
      fail("parallelism.ep", fmt::format("model '{}' has no experts; ep must be 1", m.name));
    if (!m.is_moe() && p.etp > 1)
      fail("parallelism.etp", fmt::format("model '{}' has no experts; etp must be 1", m.name));
    if (m.is_moe() && m.num_experts % p.ep != 0)
      fail("parallelism.ep",
           fmt::format("{} experts are not divisible by ep={}", m.num_experts, p.ep));
    // Megatron's dispatcher all-gathers the received tokens over the expert-TP group and
    // moesim prices that group as the TP group's links (workload/layer_graph.cpp).
    if (p.etp > 1 && p.etp != p.tp)
      fail("parallelism.etp",
           fmt::format("etp={} with tp={}: expert tensor parallelism is modeled as 1 or "
                       "equal to tp (its collectives on the TP group's links)",
                       p.etp, p.tp));
    if (m.is_moe() && m.moe_ffn_hidden_size % p.etp != 0)
      fail("parallelism.etp", fmt::format("expert FFN size {} is not divisible by etp={}",
                                          m.moe_ffn_hidden_size, p.etp));
    if (m.num_heads % p.tp != 0)
      fail("parallelism.tp",
           fmt::format("{} attention heads are not divisible by tp={}", m.num_heads, p.tp));
    if (m.attention == workload::AttentionKind::gqa && m.num_kv_heads % p.tp != 0)
      fail("parallelism.tp",
           fmt::format("{} key-value groups are not divisible by tp={}", m.num_kv_heads, p.tp));
    if (m.num_dense_layers() > 0 && m.ffn_hidden_size % p.tp != 0)
      fail("parallelism.tp",
           fmt::format("dense FFN size {} is not divisible by tp={}", m.ffn_hidden_size, p.tp));
    if (p.cp > 1 && sc_.training.seq_length % (2 * p.cp) != 0)
      fail("parallelism.cp",
           fmt::format("seq_length {} is not divisible by 2 x cp = {} (causal load balancing)",
                       sc_.training.seq_length, 2 * p.cp));
    // Megatron: sequence parallelism defaults on with TP and is required with TP + EP.
    const bool sp = sp_requested.value_or(p.tp > 1);
    if (p.tp > 1 && m.is_moe() && !sp)
      fail("parallelism.sequence_parallel",
           "Megatron-Core requires sequence parallelism when MoE runs with tp > 1");
    p.sequence_parallel = sp && p.tp > 1;

    const auto& t = sc_.training;
    if (t.global_batch_size % (t.micro_batch_size * p.dp) != 0)
      fail("training.global_batch_size",
           fmt::format("{} is not divisible by micro_batch_size x dp = {} x {} = {}",
                       t.global_batch_size, t.micro_batch_size, p.dp, t.micro_batch_size * p.dp));
    p.num_microbatches = t.global_batch_size / (t.micro_batch_size * p.dp);

    layout(vpp_given);
    pipeline_schedule(schedule);
  }

  void layout(bool vpp_given) {
    auto& p = sc_.parallelism;
    if (!sc_.pp_layout_text.empty()) {
      try {
        sc_.layout = schedules::PipelineLayout::parse(sc_.pp_layout_text, static_cast<int>(p.pp));
      } catch (const schedules::LayoutError& e) {
        fail("parallelism.pp_layout", e.what());
      }
      if (!vpp_given) p.vpp = sc_.layout.vpp();  // Megatron infers vpp from the layout
      if (sc_.layout.vpp() != p.vpp)
        fail("parallelism.vpp",
             fmt::format("pp_layout has {} virtual stages = pp {} x vpp {}, but vpp is {}",
                         sc_.layout.stages().size(), p.pp, sc_.layout.vpp(), p.vpp));
      const auto t = sc_.layout.count(schedules::LayoutItemKind::decoder);
      if (t != sc_.model.num_layers)
        fail("parallelism.pp_layout",
             fmt::format("pp_layout places {} decoder layers 't'; model '{}' has {}", t,
                         sc_.model.name, sc_.model.num_layers));
      const auto mtp = sc_.layout.count(schedules::LayoutItemKind::mtp);
      if (mtp != sc_.training.mtp_layers)
        fail("parallelism.pp_layout",
             fmt::format("pp_layout places {} MTP layers 'm'; training.mtp_layers is {}", mtp,
                         sc_.training.mtp_layers));
    } else {
      try {
        sc_.layout =
            schedules::PipelineLayout::even(sc_.model.num_layers, sc_.training.mtp_layers,
                                            static_cast<int>(p.pp), static_cast<int>(p.vpp));
      } catch (const schedules::LayoutError& e) {
        fail(p.vpp > 1 ? "parallelism.vpp" : "parallelism.pp", e.what());
      }
    }
    if (p.vpp > 1 && p.pp == 1)
      fail("parallelism.vpp", "virtual pipeline stages (vpp > 1) need pp > 1");
  }

  void pipeline_schedule(std::optional<ScheduleKind> given) {
    const auto& p = sc_.parallelism;
    const ScheduleKind s =
        given.value_or(p.vpp > 1 ? ScheduleKind::interleaved_1f1b : ScheduleKind::one_f_one_b);
    sc_.pipeline_schedule = s;
    const std::string name(schedules::schedule_names().name(s));
    const std::int64_t layers = sc_.model.num_layers + sc_.training.mtp_layers;
    if (const double passes = schedules::layer_passes(s, p.num_microbatches, layers, p.pp * p.vpp);
        passes > schedules::kMaxLayerPasses)
      fail(
          "training.global_batch_size",
          fmt::format(
              "{} microbatches per step (global_batch_size / (micro_batch_size x dp)) over {} "
              "layers "
              "under {} make {:.3g} layer passes; moesim simulates up to {:.3g} per step (the "
              "steady state repeats per microbatch: predict a smaller global_batch_size and scale)",
              p.num_microbatches, layers, name, passes, schedules::kMaxLayerPasses));
    const char* path = "parallelism.pipeline_schedule";
    switch (s) {
      case ScheduleKind::interleaved_1f1b:
        if (p.vpp < 2) fail(path, "interleaved-1f1b needs vpp > 1");
        // Megatron-Core's interleaved schedule raises "number of microbatches is not
        // divisible by pipeline-model-parallel-size when using interleaved schedule".
        if (p.num_microbatches % p.pp != 0)
          fail("training.global_batch_size",
               fmt::format("interleaved-1f1b needs the microbatches per step (global_batch_size / "
                           "(micro_batch_size x dp) = {}) to be a multiple of pp = {}",
                           p.num_microbatches, p.pp));
        break;
      case ScheduleKind::one_f_one_b:
      case ScheduleKind::zb_h1:
        if (p.vpp != 1) fail(path, fmt::format("{} runs one chunk per rank; vpp must be 1", name));
        break;
      case ScheduleKind::dualpipe:
      case ScheduleKind::dualpipev:
        // DualPipe (deepseek-ai/DualPipe @ 030ce43): an even number of ranks and at least
        // 2 x ranks microbatches, an even number of them for DualPipe, which feeds half from
        // each end (dualpipe.py:332-333); DualPipeV asserts only the 2 x ranks
        // (dualpipev.py:318). DualPipe mirrors one chunk per rank (vpp 1); DualPipeV splits
        // the model into 2 x pp stages in a V (vpp 2).
        if (s == ScheduleKind::dualpipe && p.pp % 2 != 0)
          fail(path, fmt::format("dualpipe needs an even pp; pp is {}", p.pp));
        if (p.vpp != (s == ScheduleKind::dualpipe ? 1 : 2))
          fail(path, fmt::format("{} needs vpp = {}", name, s == ScheduleKind::dualpipe ? 1 : 2));
        if (p.num_microbatches < 2 * p.pp)
          fail(path, fmt::format("{} needs at least 2 x pp = {} microbatches per step; this "
                                 "scenario has {}",
                                 name, 2 * p.pp, p.num_microbatches));
        if (s == ScheduleKind::dualpipe && p.num_microbatches % 2 != 0)
          fail(path,
               fmt::format(
                   "dualpipe feeds half of the microbatches from each end of the pipeline, so it "
                   "needs an even number of them per step (global_batch_size / (micro_batch_size "
                   "x dp)); this scenario has {}",
                   p.num_microbatches));
        break;
    }
  }

  void framework(const std::optional<Node>& n) {
    auto& f = sc_.framework;
    const bool fp8 = workload::quantized(sc_.training.precision);
    f.fp8_param_gather = fp8;
    // DeepEP and HybridEP dispatch across the expert-parallel group: Megatron-Core's flex
    // dispatcher asserts an EP x expert-TP group larger than one (token_dispatcher.py,
    // MoEFlexTokenDispatcher, "Flex token dispatcher requires TPxEP > 1"), and moesim
    // prices their kernels over the EP ranks. Without EP the default is NCCL's all-to-all,
    // which then only permutes locally.
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
          if (library && single_ep)
            d->fail(fmt::format(
                "{} dispatches across expert-parallel ranks and ep is 1 (Megatron-Core's flex "
                "dispatcher needs EP > 1); use parallelism.ep > 1 or dispatcher \"alltoall\"",
                hw_models::dispatcher_names().name(f.dispatcher)));
        }
        if (auto s = o.get("dispatcher_sms"))
          sms = s->as_int(1, static_cast<std::int64_t>(sc_.system.gpu.sm_count.value) - 1);
        f.moe_a2a_overlap = o.bool_or("moe_a2a_overlap", false);
        // Megatron-Core's TransformerConfig asserts virtual pipeline stages for the overlap
        // under pipelining: plain 1F1B with pp > 1 has no combined schedule.
        if (f.moe_a2a_overlap && sc_.pipeline_schedule == ScheduleKind::one_f_one_b &&
            sc_.parallelism.pp > 1)
          o.req("moe_a2a_overlap")
              .fail(
                  "Megatron-Core's 1F1B all-to-all overlap (--overlap-moe-expert-parallel-comm) "
                  "needs virtual pipeline "
                  "stages when pp > 1 (interleaved 1F1B: vpp > 1), or pp 1");
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
          f.cuda_graph_scope = {CudaGraphScope::attn, CudaGraphScope::moe_router,
                                CudaGraphScope::moe_preprocess};
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
            if ((mod == RecomputeModule::mla_up_proj || mod == RecomputeModule::up_proj) &&
                sc_.model.attention != workload::AttentionKind::mla)
              e.fail(fmt::format("model '{}' has no MLA up-projection", sc_.model.name));
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
        // Megatron-Core asserts it too: the combined schedule places one MTP layer.
        if (f.moe_a2a_overlap && sc_.training.mtp_layers > 1)
          o.req("moe_a2a_overlap")
              .fail(fmt::format("Megatron-Core's --overlap-moe-expert-parallel-comm supports at "
                                "most one MTP layer; "
                                "training.mtp_layers is {}",
                                sc_.training.mtp_layers));
        f.distributed_optimizer = o.bool_or("distributed_optimizer", true);
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
        }
        if (auto l = o.get("low_precision_activations"))
          f.low_precision_activations = l->as_enum_list(workload::low_precision_activation_names(),
                                                        "low-precision activation");
        f.allocator_fragmentation = o.number_or("allocator_fragmentation", 0, 0, 1);
        if (auto b = o.get("ddp_bucket_size"))
          f.ddp_bucket_size = static_cast<double>(b->as_int(1, 1LL << 40));
        if (auto d = o.get("optimizer_state_dtype"))
          f.optimizer_state_dtype =
              d->as_enum(workload::optimizer_state_dtype_names(), "optimizer state dtype");
        if (auto off = o.get("offload"))
          f.offload = off->as_enum_list(workload::offload_target_names(), "offload target");
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
          f.attention_backend =
              v->as_enum(workload::attention_backend_names(), "attention backend");
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
      f.cuda_graph_scope = {CudaGraphScope::attn, CudaGraphScope::moe_router,
                            CudaGraphScope::moe_preprocess};
    }
    const int def = hw_models::default_dispatcher_sms(f.dispatcher);
    f.dispatcher_sms = def == 0 ? 0 : static_cast<int>(sms.value_or(def));
    // A what-if GPU with no more SMs than the library's default leaves compute none (the
    // fuzz target's 8-SM H800 under HybridEP reached the engine with a negative share).
    if (!sms && def > 0 && def >= static_cast<int>(sc_.system.gpu.sm_count.value))
      fail("framework.dispatcher_sms",
           fmt::format(
               "{} takes {} SMs by default, all of this GPU's {} (system.gpu.sm_count): give "
               "dispatcher_sms below {}",
               hw_models::dispatcher_names().name(f.dispatcher), def, sc_.system.gpu.sm_count.value,
               sc_.system.gpu.sm_count.value));
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
  }

  // stack.release resolves the switches (config/releases.hpp); the keys given win.
  void stack(const std::optional<Node>& n) {
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
  void release_rules() {
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

  // A routing histogram file (config::read_expert_loads): every row one MoE layer's counts,
  // cycled over the model's MoE layers.
  void read_histogram(workload::Routing& r) {
    r.histogram = read_expert_loads(r.histogram_path, sc_.model.num_experts);
  }

  void routing(const std::optional<Node>& n) {
    // No routing block: the routing the model family is trained with (workload::trained_routing;
    // `run` names it among its assumptions).
    if (!n) {
      sc_.routing = workload::trained_routing(sc_.model).routing;
      return;
    }
    auto& r = sc_.routing;
    read_object(*n, [&](Object& o) {
      r.balance = o.req("balance").as_enum(workload::routing_balance_names(), "routing balance");
      switch (r.balance) {
        case workload::RoutingBalance::forced:
          break;
        case workload::RoutingBalance::sampled:
          if (auto d = o.get("distribution"))
            r.distribution = d->as_enum(workload::routing_distribution_names(), "distribution");
          r.alpha = o.number_or("alpha", 1.0, 0.0, 100.0);
          r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
          break;
        case workload::RoutingBalance::aux_loss:
          r.aux_loss_coefficient = o.req("coefficient").as_number(1e-6, 1.0);
          r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
          break;
        case workload::RoutingBalance::loss_free:
          r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
          break;
        case workload::RoutingBalance::histogram: {
          const Node p = o.req("path");
          const std::filesystem::path rel = p.as_string();
          const auto base = std::filesystem::path(*file_).parent_path();
          r.histogram_path = (rel.is_absolute() ? rel : base / rel).string();
          if (const auto problem = input_file_problem(r.histogram_path))
            p.fail(fmt::format("histogram file '{}' {}", r.histogram_path, *problem));
          read_histogram(r);
          break;
        }
      }
    });
  }

  // `recorded` (config/inert_settings.hpp record_inert_settings): who wrote the file and
  // which of its settings, written as the source gave them, change nothing here.
  void recorded(const std::optional<Node>& n) {
    if (!n) return;
    read_object(*n, [&](Object& o) {
      const Node by = o.req("by");
      sc_.recorded_by = by.as_string();
      if (sc_.recorded_by.empty()) by.fail("name the tool that wrote the settings");
      const auto& reg = performance_settings();
      o.req("inert").for_each_element([&](const Node& e) {
        const std::string name = e.as_string();
        if (std::none_of(reg.begin(), reg.end(),
                         [&](const PerformanceSetting& s) { return s.name == name; }))
          e.fail(fmt::format(
              "'{}' is not a performance setting (list elements as \"framework.offload[moe_act]\")",
              name));
        sc_.recorded_inert.push_back(name);
      });
    });
  }

  void measured(const std::optional<Node>& n) {
    if (!n) return;
    Measured m;
    read_object(*n, [&](Object& o) {
      int given = 0;
      for (const auto& e : measured_metric_names().entries()) {
        if (auto v = o.get(e.name)) {
          ++given;
          m.metric = e.value;
          m.value = v->as_number(1e-12, 1e18);
        }
      }
      if (given != 1)
        n->fail(fmt::format("give exactly one measured metric of: {}",
                            measured_metric_names().known()));
      const Node src = o.req("source");
      m.source = src.as_string();
      if (m.source.empty()) src.fail("the source of a measurement must be named");
      m.tolerance_pct =
          o.number_or("tolerance_pct", 5.0, 0.001, 1000.0);  // over-predictions can exceed 100%
      m.in_sample = o.string_or("in_sample", "");
      m.series = o.string_or("series", "");
      m.held_out = o.string_or("held_out", "");
      m.family = o.string_or("family", "");
      const bool memory = m.metric == MeasuredMetric::peak_memory_gib;
      for (const char* k : {"family", "compare_with"})
        if (const auto v = o.get(k); v && memory)
          v->fail("pairs and families compare step times or throughputs, not memory");
      if (const auto v = o.get("compare_with")) {
        v->for_each_element([&](const Node& e) {
          MeasuredPair p;
          read_object(e, [&](Object& po) {
            const Node run = po.req("run");
            p.run = run.as_string();
            if (p.run.empty()) run.fail("name the run this one is compared with");
            if (p.run == sc_.name) run.fail("a run cannot be compared with itself");
            p.decision = po.req("decision").as_enum(decision_names(), "decision");
            p.tolerance_pct = po.number_or("tolerance_pct", 5.0, 0.001, 1000.0);
            p.source = po.string_or("source", "");
          });
          m.compare_with.push_back(std::move(p));
        });
      }
      for (const char* k : {"memory_counter", "pp_rank"})
        if (const auto v = o.get(k); v && !memory) v->fail("only with measured.peak_memory_gib");
      // Which counter: required, as the two differ by the allocator's reserve (13-26% on
      // the published pairs) and moesim's default allowance is 0.
      if (memory)
        m.memory_counter =
            o.req("memory_counter").as_enum(memory_counter_names(), "memory counter");
      if (const auto v = o.get("pp_rank")) m.pp_rank = v->as_int(0, sc_.parallelism.pp - 1);
    });
    sc_.measured = m;
  }

  // goodput (config/storage.hpp for the defaults and the storage presets).
  void goodput(const std::optional<Node>& n) {
    auto& g = sc_.goodput;
    g = default_goodput();
    if (!n) return;
    read_object(*n, [&](Object& o) {
      g.interruptions_per_gpu_day =
          o.number_or("interruptions_per_gpu_day", g.interruptions_per_gpu_day, 0, 1);
      g.planned_interruptions_per_gpu_day = o.number_or("planned_interruptions_per_gpu_day",
                                                        g.planned_interruptions_per_gpu_day, 0, 1);
      g.restart_s = o.number_or("restart_s", g.restart_s, 0, 30 * 86400.0);
      g.async_save = o.bool_or("async_save", g.async_save);
      if (auto v = o.get("checkpoint_interval_s"))
        g.checkpoint_interval_s = v->as_number(1e-3, 365 * 86400.0);
      if (auto v = o.get("token_budget")) g.token_budget = v->as_number(1, 1e30);
      if (auto st = o.get("storage")) {
        if (st->json().is_string()) {
          const auto p = storage_preset(st->as_string());
          if (!p)
            st->fail(fmt::format("unknown storage '{}'; known: {}", st->as_string(),
                                 known_storage_names()));
          g.storage = *p;
        } else {
          StorageSpec s{"inline", 0, 0, 0, "given in the scenario"};
          read_object(*st, [&](Object& so) {
            s.write_GBps = so.req("write_GBps").as_number(1e-6, 1e9);
            s.read_GBps = so.req("read_GBps").as_number(1e-6, 1e9);
            s.client_GBps = so.number_or("client_GBps", 0, 0, 1e9);
            s.source = so.string_or("source", s.source);
          });
          g.storage = s;
        }
      }
    });
  }

  void cost(const std::optional<Node>& n) {
    if (!n) return;
    auto& c = sc_.cost;
    read_object(*n, [&](Object& o) {
      if (auto v = o.get("node_power_kW")) c.node_power_kW = v->as_number(0.01, 100000);
      if (auto v = o.get("pue")) c.pue = v->as_number(1, 10);
      if (auto v = o.get("gpu_hour_usd")) c.gpu_hour_usd = v->as_number(0, 1e6);
    });
  }

  // DeepEP and HybridEP run only where their kernels can (hw_models::ep_unsupported):
  // the EP group as the step simulation lays it out, gpus_per_nvlink_domain / etp of its
  // ranks in each NVLink domain.
  void ep_library_placement(bool dispatcher_given) {
    const auto& p = sc_.parallelism;
    const auto d = sc_.framework.dispatcher;
    if (!sc_.model.is_moe() || p.ep <= 1) return;
    const std::int64_t domain =
        std::max<std::int64_t>(1, sc_.placement.gpus_per_nvlink_domain / p.etp);
    const auto why = hw_models::ep_unsupported(sc_.system, d, false, static_cast<int>(p.ep),
                                               static_cast<int>(std::min(domain, p.ep)));
    if (!why.empty())
      fail(dispatcher_given ? "framework.dispatcher" : "parallelism.ep",
           dispatcher_given ? why : why + " (HybridEP is the default dispatcher)");
  }

  // parallelism.eplb (workload/eplb.hpp): physical experts split over the EP ranks; the
  // hierarchical policy packs the model's expert groups onto the NVLink domains the EP
  // group spans, so the groups must divide among them.
  void eplb_placement() {
    const auto& p = sc_.parallelism;
    if (!p.eplb) return;
    const auto& m = sc_.model;
    if (!m.is_moe())
      fail("parallelism.eplb", fmt::format("model '{}' has no experts to balance", m.name));
    if (p.ep < 2)
      fail("parallelism.eplb", "EPLB balances experts over expert-parallel ranks; ep is 1");
    const std::int64_t physical = workload::physical_experts(m, p);
    if (physical % p.ep != 0)
      fail("parallelism.eplb.redundant_experts",
           fmt::format("{} experts + {} redundant = {} physical experts do not split over ep={}",
                       m.num_experts, p.eplb->redundant_experts, physical, p.ep));
    const auto setup = sc_.eplb_setup();
    if (setup->policy == workload::EplbPolicy::hierarchical && setup->groups % setup->nodes != 0)
      fail("parallelism.eplb.policy",
           fmt::format("the hierarchical policy packs the model's {} expert group(s) onto the {} "
                       "NVLink domains "
                       "the EP group spans and needs them to divide evenly; use \"global\"",
                       setup->groups, setup->nodes));
  }

  void placement(const std::optional<Node>& n) {
    const std::int64_t domain = static_cast<std::int64_t>(sc_.system.nvlink.domain_gpus.value);
    const auto per_node = static_cast<std::int64_t>(sc_.system.node.gpus_per_node.value);
    auto& pl = sc_.placement;
    // Default: whole nodes (trays), as many per NVLink domain as fit and split the job
    // evenly. A job never shares a node, and NVIDIA's NVL72 jobs fill racks with whole
    // trays in equal numbers (64 of 72 GPUs at 256 or 512 GPUs: 16 trays a rack, 4 or 8
    // racks; the Megatron-Bridge GB200/GB300 runs of shared/reference/measured-runs.md
    // are 256 GPUs). A job smaller than a node uses part of one.
    if (sc_.gpus <= per_node) {
      pl.gpus_per_nvlink_domain = sc_.gpus;
    } else {
      if (sc_.gpus % per_node != 0)
        fail("gpus", fmt::format("{} GPUs do not fill whole nodes of {} GPUs ({})", sc_.gpus,
                                 per_node, sc_.system.name));
      pl.gpus_per_nvlink_domain = per_node;
      for (std::int64_t d = std::min(domain, sc_.gpus) / per_node * per_node; d >= per_node;
           d -= per_node)
        if (sc_.gpus % d == 0) {
          pl.gpus_per_nvlink_domain = d;
          break;
        }
    }
    if (!n) return;
    read_object(*n, [&](Object& o) {
      const auto g = o.get("gpus_per_nvlink_domain");
      if (!g) return;
      pl.gpus_per_nvlink_domain = g->as_int(1, domain);
      if (pl.gpus_per_nvlink_domain % per_node != 0)
        g->fail(fmt::format("must be a multiple of the {} GPUs of one node/tray", per_node));
      if (sc_.gpus % pl.gpus_per_nvlink_domain != 0)
        g->fail(fmt::format("{} GPUs cannot be split into NVLink domains of {}", sc_.gpus,
                            pl.gpus_per_nvlink_domain));
    });
  }

  std::shared_ptr<const std::string> file_;
  Node root_;
  LoadOptions opts_;
  std::vector<std::string> stack_given_;  // the stack switches the file gave
  Scenario sc_;
};

}  // namespace

Scenario load_scenario_text(std::string_view text, const std::string& file,
                            const LoadOptions& opts) {
  const Json j = parse_json(text, file);
  return ScenarioReader(j, file, opts).read();
}

Scenario load_scenario_json(const Json& j, const std::string& file, const LoadOptions& opts) {
  return ScenarioReader(j, file, opts).read();
}

Scenario load_scenario_file(const std::string& path, const LoadOptions& opts) {
  const Json j = read_json_file(path);
  return ScenarioReader(j, path, opts).read();
}

std::vector<std::vector<double>> read_expert_loads(const std::string& path,
                                                   std::optional<std::int64_t> experts) {
  const Json j = read_json_file(path);
  const Node root(j, "", std::make_shared<const std::string>(path));
  std::vector<std::vector<double>> rows;
  const auto row = [&](const Node& n) {
    std::vector<double> counts;
    n.for_each_element([&](const Node& c) { counts.push_back(c.as_number(0, 1e15)); });
    const auto want = experts        ? *experts
                      : rows.empty() ? static_cast<std::int64_t>(counts.size())
                                     : static_cast<std::int64_t>(rows.front().size());
    if (static_cast<std::int64_t>(counts.size()) != want)
      n.fail(experts
                 ? fmt::format("{} expert counts for a model with {} routed experts", counts.size(),
                               want)
                 : fmt::format("{} expert counts where the first row has {}", counts.size(), want));
    double total = 0;
    for (double c : counts) total += c;
    if (!(total > 0)) n.fail("no tokens in this row");
    rows.push_back(std::move(counts));
  };
  if (!j.is_array() || j.empty())
    root.fail("expected a list of per-expert token counts (or a list of such lists)");
  if (j.front().is_array())
    root.for_each_element(row);
  else
    row(root);
  return rows;
}

}  // namespace moesim::config
