// config/load_scenario_parallelism.cpp: the ScenarioReader's (config/load_scenario_detail.hpp)
// parallelism section and the cross-field rules of the layout: the degrees against the GPUs,
// the model and the batch, the pipeline layout and schedule, the placement on NVLink
// domains, and where the EP libraries and EPLB can run.
#include <algorithm>

#include <fmt/format.h>

#include "config/load_scenario_detail.hpp"
#include "hw_models/ep_flows.hpp"
#include "workload/eplb.hpp"

namespace moesim::config {
namespace {

constexpr std::int64_t kMaxDegree = 65536;

}  // namespace

namespace detail {

void ScenarioReader::parallelism(const std::optional<Node>& n) {
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
      if (auto c = o.get("cp_comm_type")) {
        p.cp_comm = c->as_enum(workload::cp_comm_names(), "CP exchange");
        if (p.cp_comm == workload::CpComm::a2a) {
          if (p.cp == 1) c->fail("a2a exchanges nothing at cp 1");
          // TE's all-to-all CP on GQA attention (MLA's and DeepSeek-V4's are not modeled);
          // it splits the heads over the CP ranks (attention.py flash_attn_a2a_communicate).
          if (sc_.model.attention != workload::AttentionKind::gqa)
            c->fail(fmt::format("all-to-all CP over model '{}''s {} attention is not modeled",
                                sc_.model.name,
                                workload::attention_kind_names().name(sc_.model.attention)));
          const std::int64_t tp = o.int_or("tp", 1, 1, kMaxDegree);
          if ((sc_.model.num_heads / tp) % p.cp != 0 || (sc_.model.num_kv_heads / tp) % p.cp != 0)
            c->fail(
                fmt::format("TransformerEngine splits the {} query and {} key-value heads a "
                            "TP rank holds over cp={}: they do not divide",
                            sc_.model.num_heads / tp, sc_.model.num_kv_heads / tp, p.cp));
        }
      }
      // TE runs windowed attention under context parallelism only with its all-to-all
      // exchange (Megatron-Bridge's GPT-OSS recipes set cp_comm_type a2a).
      if (p.cp > 1 && sc_.model.any_windowed() && p.cp_comm != workload::CpComm::a2a)
        o.req("cp").fail(
            fmt::format("model '{}' has sliding-window layers: TransformerEngine runs them under "
                        "context parallelism only with cp_comm_type a2a",
                        sc_.model.name));
      if (auto sp = o.get("sequence_parallel")) sp_requested = sp->as_bool();
      sc_.pp_layout_text = o.string_or("pp_layout", "");
      if (auto s = o.get("pipeline_schedule"))
        schedule = s->as_enum(schedules::schedule_names(), "pipeline schedule");
      p.fsdp = o.bool_or("fsdp", false);
      p.optimizer_instances = o.int_or("optimizer_instances", 1, 1, kMaxDegree);
      if (auto s = o.get("outer_dp_sharding"))
        p.outer_dp_sharding = s->as_enum(workload::outer_sharding_names(), "outer DP sharding");
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
  hybrid_sharding();
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
  // Megatron-Core's Mamba mixer splits its heads and groups over TP (ssm/mamba_mixer.py
  // 257-272 at cd4afffa).
  if (m.count_hybrid(workload::HybridLayer::mamba) > 0 &&
      (m.mamba.heads % p.tp != 0 || m.mamba.groups % p.tp != 0))
    fail("parallelism.tp", fmt::format("the Mamba mixers' {} heads in {} groups are not divisible "
                                       "by tp={}",
                                       m.mamba.heads, m.mamba.groups, p.tp));
  if (m.count_hybrid(workload::HybridLayer::mamba) > 0 && !sc_.system.efficiency.ssd_scan_tflops)
    fail("system", fmt::format("system '{}' has no SSD scan rate (efficiency.ssd_scan_tflops, "
                               "fitted to timings of Mamba-2's Triton kernels) to price model "
                               "'{}''s Mamba mixers",
                               sc_.system.name, m.name));
  if (m.num_linear_layers() > 0 && !sc_.system.efficiency.gdn_chunk_tflops)
    fail("system", fmt::format("system '{}' has no Gated DeltaNet chunk rate "
                               "(efficiency.gdn_chunk_tflops, fitted to timings of "
                               "flash-linear-attention's kernels) to price model '{}''s linear "
                               "attention",
                               sc_.system.name, m.name));
  if (m.hybrid() && p.cp > 1)
    fail("parallelism.cp", "context parallelism in a hybrid Mamba model is not modeled");
  // Gated DeltaNet splits its key and value heads over TP (transformer_config.py 1374-1382
  // at cd4afffa); under CP it trades the sequence for heads with all-to-alls
  // (gated_delta_net.py 349-384), which moesim does not price.
  if (m.num_linear_layers() > 0 && (m.gdn.key_heads % p.tp != 0 || m.gdn.value_heads % p.tp != 0))
    fail("parallelism.tp",
         fmt::format("the Gated DeltaNet layers' {} key and {} value heads are not divisible by "
                     "tp={}",
                     m.gdn.key_heads, m.gdn.value_heads, p.tp));
  // Megatron-Core: at most a pipeline stage's even share of layers in BF16 at each end
  // (transformer_config.py 1405-1430 at cd4afffa).
  for (const auto& [key, count] :
       {std::pair{"training.bf16_layers_at_start", sc_.training.bf16_layers_at_start},
        std::pair{"training.bf16_layers_at_end", sc_.training.bf16_layers_at_end}})
    if (count > m.num_layers / p.pp)
      fail(key, fmt::format("{} layers: Megatron-Core allows at most num_layers / pp = {}", count,
                            m.num_layers / p.pp));
  // DeepSeek-V4's attention runs at TP 1 (Megatron-LM dev d48bd6be
  // deepseek_v4_hybrid_attention.py 90-92 asserts it) and has no context-parallel path.
  if (m.is_dsv4() && p.tp > 1)
    fail("parallelism.tp", "DeepSeek-V4's attention runs only at tp=1 (Megatron-LM asserts it)");
  if (m.is_dsv4() && p.cp > 1)
    fail("parallelism.cp",
         "context parallelism with DeepSeek-V4's compressed attention is not "
         "modeled");
  if (m.num_linear_layers() > 0 && p.cp > 1)
    fail("parallelism.cp",
         "context parallelism with Gated DeltaNet layers (their all-to-alls over heads) is not "
         "modeled");
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

// parallelism.optimizer_instances (Megatron --num-distributed-optimizer-instances): the
// asserts Megatron-Core makes on the groups (parallel_state.py 923-926, 1447-1449 at
// cd4afffa), and HSDP's meshes, built over the whole world without a pipeline axis
// (mcore_fsdp_adapter.py 486-565), at pp 1 only (docs/research/megatron-fsdp-hsdp.md).
void ScenarioReader::hybrid_sharding() {
  const auto& p = sc_.parallelism;
  if (!p.hybrid()) return;
  const std::string at = "parallelism.optimizer_instances";
  if ((p.dp * p.cp) % p.optimizer_instances != 0)
    fail(at, fmt::format("{} instances do not divide dp x cp = {} x {} (Megatron-Core asserts it)",
                         p.optimizer_instances, p.dp, p.cp));
  if (p.expert_dp % p.optimizer_instances != 0)
    fail(at, fmt::format("{} instances do not divide the expert-DP size {} (Megatron-Core asserts "
                         "it)",
                         p.optimizer_instances, p.expert_dp));
  if (p.fsdp && p.pp > 1)
    fail(at, fmt::format("Megatron-FSDP's hybrid sharding with pp={}: its device meshes span the "
                         "whole world without a pipeline axis, so moesim models HSDP at pp 1 only",
                         p.pp));
}

void ScenarioReader::layout(bool vpp_given) {
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
      sc_.layout = schedules::PipelineLayout::even(sc_.model.num_layers, sc_.training.mtp_layers,
                                                   static_cast<int>(p.pp), static_cast<int>(p.vpp));
    } catch (const schedules::LayoutError& e) {
      fail(p.vpp > 1 ? "parallelism.vpp" : "parallelism.pp", e.what());
    }
  }
  if (p.vpp > 1 && p.pp == 1)
    fail("parallelism.vpp", "virtual pipeline stages (vpp > 1) need pp > 1");
}

void ScenarioReader::pipeline_schedule(std::optional<ScheduleKind> given) {
  const auto& p = sc_.parallelism;
  const ScheduleKind s =
      given.value_or(p.vpp > 1 ? ScheduleKind::interleaved_1f1b : ScheduleKind::one_f_one_b);
  sc_.pipeline_schedule = s;
  const std::string name(schedules::schedule_names().name(s));
  const std::int64_t layers = sc_.model.num_layers + sc_.training.mtp_layers;
  if (const double passes = schedules::layer_passes(s, p.num_microbatches, layers, p.pp * p.vpp);
      passes > schedules::kMaxLayerPasses)
    fail("training.global_batch_size",
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

// DeepEP and HybridEP run only where their kernels can (hw_models::ep_unsupported):
// the EP group as the step simulation lays it out, gpus_per_nvlink_domain / etp of its
// ranks in each NVLink domain.
void ScenarioReader::ep_library_placement(bool dispatcher_given) {
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
void ScenarioReader::eplb_placement() {
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

void ScenarioReader::placement(const std::optional<Node>& n) {
  const std::int64_t domain = static_cast<std::int64_t>(sc_.system.nvlink.domain_gpus.value);
  const auto per_node = static_cast<std::int64_t>(sc_.system.node.gpus_per_node.value);
  auto& pl = sc_.placement;
  // Default: whole nodes (trays), as many per NVLink domain as fit and split the job
  // evenly. A job never shares a node, and NVIDIA's NVL72 jobs fill racks with whole
  // trays in equal numbers (64 of 72 GPUs at 256 or 512 GPUs: 16 trays a rack, 4 or 8
  // racks; the Megatron-Bridge GB200/GB300 runs of docs/reference/measured-runs.md
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

}  // namespace detail
}  // namespace moesim::config
