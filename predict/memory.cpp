#include "predict/memory.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "hw_models/dispatcher.hpp"
#include "hw_models/ep_buffers.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/stage_params.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"
#include "workload/routing.hpp"

namespace moesim::predict {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Bytes a layer keeps for backward: what its forward kernels save (GEMM inputs for
// wgrad, norm and activation inputs, attention's q, k, v and output), except inside
// recomputed segments (their kernels reappear in backward marked `recompute`); on the
// GPU, and in host memory for the offloaded modules.
struct Kept {
  double gpu = 0, host = 0;
};
Kept kept_bytes(const workload::LayerTemplate& t) {
  constexpr std::string_view kSuffix = ".recompute";
  std::unordered_set<std::string_view> recomputed;
  for (const auto& k : t.bwd)
    if (k.recompute)
      recomputed.insert(std::string_view(k.name).substr(0, k.name.size() - kSuffix.size()));
  Kept b;
  for (const auto& k : t.fwd)
    if (k.checkpoint_input || !recomputed.contains(k.name)) {
      const double host = k.offloaded ? k.saved_bytes : std::min(k.offloaded_bytes, k.saved_bytes);
      b.host += host;
      b.gpu += k.saved_bytes - host;
    }
  return b;
}

// CUDA graphs (docs/reference/gb200-journey.md; docs/research/gb200-journey-mechanisms.md
// 5): partial graphs are captured per decoder layer that has a captured module, per
// microbatch, forward and backward: L x M x 2 per rank; full_iteration is one graph. Each
// partial graph owns static input and output buffers, reused along the pipeline
// schedule, so the buffers of the items in flight are live at once. Replay copies the
// inputs into the static inputs (forward: the hidden states; backward: their gradient):
// those copies are extra memory. The static outputs are the tensors the layer produces
// anyway (the next layer's input, the routing probabilities), already counted, and the
// intermediates come from one shared pool captured in replay order.
// Extra static buffer bytes of one captured layer, forward plus backward graph.
double graph_static_bytes(const config::Scenario& sc) {
  const auto& p = sc.parallelism;
  const double tokens = static_cast<double>(sc.training.micro_batch_size * sc.training.seq_length) /
                        static_cast<double>(p.cp);
  const double hidden = tokens / (p.sequence_parallel ? static_cast<double>(p.tp) : 1.0) *
                        static_cast<double>(sc.model.hidden_size) * 2;
  return 2 * hidden;  // the forward graph's input copy and the backward graph's
}

}  // namespace

double scenario_ep_load(const config::Scenario& sc) {
  return sc.ep_load();
}

RuntimeMemory runtime_outside_allocator(const config::Scenario& sc) {
  constexpr double kMiB = 1024.0 * 1024;
  constexpr double kContext = 0.59 * kGiB;  // stas00/ml-engineering debug/pytorch.md
  constexpr double kConnection = (0.5 + 4.6875 + 4) * kMiB;  // LL + LL128 + Simple, NCCL device.h
  constexpr double kChannels = 24;                           // NCCL on 8 H100 (INFO lines)
  constexpr double kA2aPeer = 3.28e9 / 7;                    // NVIDIA/nccl issue 1685, 8 H100
  const auto& p = sc.parallelism;
  const bool moe = sc.model.is_moe();
  int comms = 0;
  for (const bool used : {p.dp * p.cp > 1,         // dense gradients (DP x CP)
                          p.tp > 1,                // TP
                          p.cp > 1,                // CP
                          moe && p.ep > 1,         // EP
                          moe && p.expert_dp > 1,  // expert gradients (expert-DP)
                          p.tp * p.pp > 1,         // the gradient norm's model-parallel group
                          p.pp > 1,                // the pipeline neighbours
                          p.pp > 1})               // the embedding group
    comms += used ? 1 : 0;
  RuntimeMemory m;
  m.context = kContext;
  m.nccl = comms * kChannels * kConnection;
  if (moe && p.ep > 1 && sc.framework.dispatcher == hw_models::Dispatcher::alltoall) {
    // NVLink peers, at most the measured node's 7: NCCL deals its p2p channels out over
    // the peers, so beyond one node the measured footprint is taken as the bound.
    const std::int64_t domain =
        std::max<std::int64_t>(1, sc.placement.gpus_per_nvlink_domain / p.etp);
    m.nccl += static_cast<double>(std::min<std::int64_t>(std::min(p.ep, domain) - 1, 7)) * kA2aPeer;
  }
  // Userbuffers exist where TE overlaps sequence parallelism's collectives.
  if (sc.framework.tp_comm_overlap && p.tp > 1 && p.sequence_parallel) {
    const double tensor =
        static_cast<double>(sc.training.seq_length * sc.training.micro_batch_size) /
        static_cast<double>(p.cp) * static_cast<double>(sc.model.hidden_size);
    const bool fp8 = workload::quantized(sc.training.precision);
    m.userbuffers = tensor * (fp8 ? 8 * 1 + 4 * 2 : 12 * 2);
  }
  return m;
}

namespace {

std::vector<double> memory_per_rank(const config::Scenario& sc, std::vector<std::int64_t>& graphs,
                                    std::vector<double>& graph_gib, std::vector<MemoryParts>& parts,
                                    double ep_load) {
  const auto& p = sc.parallelism;
  const auto& fw = sc.framework;
  const bool hopper = sc.system.gpu.arch == hw_models::GpuArch::hopper;
  const workload::TemplateInputs ti{
      sc.model, sc.training, p,
      fw,       sc.stack,    sc.padded_vocab(),
      ep_load,  false,       workload::fused_grouped_mlp_runs(sc.model, sc.training, fw, hopper)};
  // Each decoder layer keeps what its build keeps (Megatron's BF16 first and last layers,
  // the layers partial full recompute leaves whole: schedules::decoder_builds).
  const auto builds = schedules::decoder_builds(sc.layout, sc.model, sc.training, sc.framework);
  // The builds no layer runs stay empty.
  std::array<workload::ModelTemplates, workload::kDecoderBuilds> built;
  for (unsigned b = 0; b < workload::kDecoderBuilds; ++b)
    if (b == workload::kRecipeBuild || std::find(builds.begin(), builds.end(), b) != builds.end())
      built[b] = workload::build_templates(ti, b);
  const workload::ModelTemplates& t = built[workload::kRecipeBuild];
  // Optimizer states per parameter beside the FP32 master, sharded over DP x CP and
  // expert-DP, or across optimizer instances over their inner groups
  // (workload::optimizer_state_shards, optimizer_state_bytes; docs/research/corpus-recipes.md
  // 'Muon'). Megatron-FSDP shards its weights and main gradients over the inner groups, the
  // whole DP groups with one instance (docs/research/megatron-fsdp-hsdp.md 4: under HSDP's
  // optim outer sharding each rank keeps its inner shard of both, the outer slice a view).
  const double states = workload::optimizer_state_bytes(fw);
  const workload::Shards state_shards = workload::optimizer_state_shards(p, fw);
  const double dp_shard = state_shards.dense, edp_shard = state_shards.expert;
  const workload::Shards fsdp_shards = p.inner_shards();
  const double grad = workload::main_grad_bytes(fw);

  using workload::Module;
  const workload::CaptureSet g(fw, sc.stack);
  const bool dense_captured = g[Module::attn] || g[Module::mlp];
  bool moe_captured = false;
  // (A hybrid model's MoE layers have no attention of their own.)
  for (Module m : {Module::attn, Module::moe_router, Module::moe_preprocess, Module::moe_dispatch,
                   Module::experts, Module::shared_expert, Module::moe_combine}) {
    if (m == Module::attn && sc.model.hybrid()) continue;
    // A model without a shared expert has nothing for stack.cuda_graph_shared_expert to
    // capture: an MoE layer under scope ["mlp"] alone (dense MLPs only, Megatron-Core
    // TransformerLayer) has no graph then.
    moe_captured =
        moe_captured ||
        (g[m] && (m != Module::shared_expert || sc.model.shared_expert_ffn_hidden_size > 0));
  }
  // The EP library's buffers, on the ranks that run MoE layers (Megatron creates them at
  // the first dispatch); tokens per rank per microbatch as the dispatcher sees them.
  const std::int64_t rpd = std::max<std::int64_t>(1, sc.placement.gpus_per_nvlink_domain / p.etp);
  const double ep_buffers = hw_models::ep_buffer_bytes(
      {fw.dispatcher, p.ep, std::min(p.ep, rpd), sc.model.expert_width(), sc.model.num_experts,
       static_cast<double>(sc.training.micro_batch_size * sc.training.seq_length) /
           static_cast<double>(p.cp * (p.sequence_parallel ? p.tp : 1)),
       fw.dispatcher_sms, fw.ep_fp8_dispatch});
  const double runtime = runtime_outside_allocator(sc).total();
  // DualPipe and DualPipeV hold two chunks per rank (two stages' parameters).
  const schedules::PipelineShape shape(sc.pipeline_schedule, static_cast<int>(p.pp),
                                       static_cast<int>(p.vpp));
  std::vector<double> out;
  for (int r = 0; r < static_cast<int>(p.pp); ++r) {
    double dense = 0, expert = 0, largest_unit = 0, transient = 0, largest_host_item = 0;
    double adapters = 0;  // training.lora: the parameters that train (the rest are frozen)
    bool moe_rank = false;
    std::int64_t captured_layers = 0;
    std::vector<double> act_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    std::vector<double> host_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    std::vector<double> graph_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    for (int c = 0; c < shape.chunks(); ++c) {
      const auto& stage =
          sc.layout.stages()[static_cast<std::size_t>(shape.place(r, c).layout_stage)];
      const auto params = schedules::stage_item_parameters(sc.model, p, stage, sc.padded_vocab(),
                                                           sc.pipeline_schedule);
      if (sc.training.lora)
        for (const auto& a : schedules::stage_item_parameters(
                 sc.model, p, stage, sc.padded_vocab(), sc.pipeline_schedule, &*sc.training.lora))
          adapters += a.dense;
      for (std::size_t k = 0; k < stage.items.size(); ++k) {
        const auto& it = stage.items[k];
        const auto& ip = params[k];
        dense += ip.dense;
        expert += ip.expert;
        largest_unit = std::max(largest_unit, ip.dense + ip.expert);
        const auto slot = schedules::layer_slot(it, sc.model);
        const workload::LayerTemplate* lt = &schedules::slot_layer(t, built, builds, it, sc.model);
        Kept kept = kept_bytes(*lt);
        // Layer offloading (framework.offload_layers): the first N decoder layers keep
        // everything in host memory; at most L - N layers' activations are on the GPU.
        const bool layer_offloaded =
            it.kind == schedules::LayoutItemKind::decoder && it.index < fw.offload_layers;
        if (layer_offloaded) kept = {0, kept.gpu + kept.host};
        if (!layer_offloaded) largest_host_item = std::max(largest_host_item, kept.host);
        transient = std::max(transient, lt->transient_bytes);
        act_per_chunk[static_cast<std::size_t>(c)] += kept.gpu;
        host_per_chunk[static_cast<std::size_t>(c)] += kept.host;
        const bool moe_layer = schedules::has_experts(slot, sc.model);
        const bool dense_layer = !moe_layer && (slot == schedules::LayerSlot::dense ||
                                                slot == schedules::LayerSlot::mtp);
        moe_rank = moe_rank || moe_layer;
        // A hybrid model's single-mixer layers: each captured by its own scope.
        const bool hybrid_captured =
            (slot == schedules::LayerSlot::mamba && g[Module::mamba]) ||
            (slot == schedules::LayerSlot::attention && g[Module::attn]) ||
            (sc.model.hybrid() && slot == schedules::LayerSlot::dense && g[Module::mlp]);
        const bool classic = !sc.model.hybrid() || moe_layer;
        if (!g.full_iteration() &&
            ((classic && ((moe_layer && moe_captured) || (dense_layer && dense_captured))) ||
             hybrid_captured)) {
          ++captured_layers;
          graph_per_chunk[static_cast<std::size_t>(c)] += graph_static_bytes(sc);
        }
      }
    }
    // Activations: the largest sum over forward items not yet matched by their backward.
    // Graph static buffers follow the same in-flight items. Offloaded activations stay
    // on the GPU for the two layers being offloaded and reloaded at a time (Megatron's
    // fine-grained offloading copies each module's saved inputs out after its forward
    // and prefetches the next module's in backward: docs/fine_grained_activation_offloading
    // of Megatron-LM PR 1913), host memory otherwise.
    const double resident = 2 * largest_host_item;
    double act = 0, peak = 0, gb = 0, gpeak = 0, off = 0;
    for (const auto& w : schedules::pipeline_order(sc.pipeline_schedule, static_cast<int>(p.pp),
                                                   static_cast<int>(p.vpp), r,
                                                   static_cast<int>(p.num_microbatches))) {
      // An item's activations live from its forward to the pass that computes its weight
      // gradients (the full backward, or ZB's W, which still reads the saved inputs).
      if (!w.forward() && !w.weights()) continue;
      const auto c = static_cast<std::size_t>(w.chunk);
      act += (w.forward() ? 1 : -1) * (act_per_chunk[c] + graph_per_chunk[c]);
      gb += (w.forward() ? 1 : -1) * graph_per_chunk[c];
      off += (w.forward() ? 1 : -1) * host_per_chunk[c];
      const double now = act + (fw.offload_layers > 0 ? 0.0 : std::min(off, resident));
      if (now > peak) {
        peak = now;
        gpeak = gb;
      }
    }
    // BF16 weights and main gradients (FP32, or BF16 with --main-grads-dtype bf16); Megatron-FSDP
    // shards both over its inner groups and holds two units' gathered BF16 parameters (the one
    // computing and the prefetched one) and one unit's FP32 gradients before their reduce-scatter.
    double weights_grads =
        p.fsdp ? (dense / fsdp_shards.dense + expert / fsdp_shards.expert) * (2 + grad) +
                     largest_unit * (2 * 2 + grad)
               : (dense + expert) * (2 + grad);
    // Optimizer offload (Megatron --optimizer-cpu-offload): the FP32 main weights and
    // moments live in host memory.
    const bool opt_off = std::find(fw.offload.begin(), fw.offload.end(),
                                   workload::OffloadTarget::optimizer) != fw.offload.end();
    double optimizer = opt_off ? 0 : (dense / dp_shard + expert / edp_shard) * (4 + states);
    // LoRA (training.lora; FSDP is refused with it): the frozen base as BF16 weights alone,
    // the adapters with their gradients and (sharded over DP) their optimizer states.
    if (sc.training.lora) {
      weights_grads = (dense + expert) * 2 + adapters * (2 + grad);
      optimizer = opt_off ? 0 : adapters / dp_shard * (4 + states);
    }
    const double buffers = moe_rank ? ep_buffers : 0;
    peak += transient;  // one layer's temporaries, at the worst moment
    out.push_back((weights_grads + optimizer + peak + buffers + runtime) / kGiB);
    parts.push_back({weights_grads / kGiB, optimizer / kGiB, (peak - gpeak) / kGiB, gpeak / kGiB,
                     buffers / kGiB, runtime / kGiB});
    graphs.push_back(g.full_iteration() ? 1 : captured_layers * p.num_microbatches * 2);
    graph_gib.push_back(gpeak / kGiB);
  }
  return out;
}

}  // namespace

MemoryEstimate estimate_memory(const config::Scenario& sc, double ep_load) {
  MemoryEstimate m;
  m.rank_memory_gib =
      memory_per_rank(sc, m.cuda_graphs_per_rank, m.graph_static_gib, m.rank_parts, ep_load);
  const auto peak = std::max_element(m.rank_memory_gib.begin(), m.rank_memory_gib.end());
  m.peak_memory_gib = *peak;
  m.peak_parts = m.rank_parts[static_cast<std::size_t>(peak - m.rank_memory_gib.begin())];
  for (std::size_t r = 0; r < m.rank_parts.size(); ++r)
    m.reserved_memory_gib = std::max(m.reserved_memory_gib,
                                     m.counter_gib(r, true, sc.framework.allocator_fragmentation) +
                                         m.rank_parts[r].outside_allocator());
  // Against what CUDA reports, not the datasheet's GB: an H100 "80 GB" is 79.1 GiB.
  m.fits_in_memory = m.reserved_memory_gib <= sc.system.gpu.usable_GiB.value;
  return m;
}

std::string memory_shortfall(const config::Scenario& sc, const std::vector<double>& rank_gib,
                             double reserved_gib) {
  const auto worst = std::max_element(rank_gib.begin(), rank_gib.end());
  if (worst == rank_gib.end()) return "";
  return fmt::format(
      "pipeline rank {} needs {:.1f} GiB{}, more than the {:g} GiB CUDA reports on a {}",
      worst - rank_gib.begin(), *worst,
      sc.framework.allocator_fragmentation > 0
          ? fmt::format(" ({:.1f} with the fragmentation allowance)", reserved_gib)
          : std::string(),
      sc.system.gpu.usable_GiB.value, sc.system.gpu.name);
}

}  // namespace moesim::predict
