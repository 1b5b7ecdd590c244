#include "reports/run.hpp"

#include <algorithm>
#include <chrono>
#include <ostream>

#include <fmt/format.h>

#include "hw_models/comm_cost.hpp"
#include "hw_models/ep_buffers.hpp"
#include "hw_models/flow_comm.hpp"
#include "config/inert_settings.hpp"
#include "reports/describe.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/stage_params.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"
#include "workload/routing.hpp"

namespace moesim::reports {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kGiB = 1024.0 * 1024 * 1024;

// Bytes a layer keeps for backward: what its forward kernels save (GEMM inputs for
// wgrad, norm and activation inputs, attention's q, k, v and output), except inside
// recomputed segments (their kernels reappear in backward marked `recompute`); on the
// GPU, and in host memory for the offloaded modules.
struct Kept {
  double gpu = 0, host = 0;
};
Kept kept_bytes(const workload::LayerTemplate& t) {
  std::vector<std::string> recomputed;
  for (const auto& k : t.bwd)
    if (k.recompute) recomputed.push_back(k.name.substr(0, k.name.size() - std::string(".recompute").size()));
  Kept b;
  for (const auto& k : t.fwd)
    if (k.checkpoint_input || std::find(recomputed.begin(), recomputed.end(), k.name) == recomputed.end())
      (k.offloaded ? b.host : b.gpu) += k.saved_bytes;
  return b;
}

// CUDA graphs (shared/reference/gb200-journey.md; docs/research/gb200-journey-mechanisms.md
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
  const double tokens =
      static_cast<double>(sc.training.micro_batch_size * sc.training.seq_length) / static_cast<double>(p.cp);
  const double hidden = tokens / (p.sequence_parallel ? static_cast<double>(p.tp) : 1.0) *
                        static_cast<double>(sc.model.hidden_size) * 2;
  return 2 * hidden;  // the forward graph's input copy and the backward graph's
}

// The hottest EP rank's tokens over the balanced, for the scenario's routing
// (workload/routing.hpp): tokens per EP rank per microbatch are mbs x seq / cp.
double scenario_ep_load(const config::Scenario& sc) {
  const auto& tr = sc.training;
  return workload::ep_gating_load(sc.routing, sc.model, sc.parallelism.ep,
                                  static_cast<double>(tr.micro_batch_size * tr.seq_length) /
                                      static_cast<double>(sc.parallelism.cp),
                                  tr.capacity_factor);
}

std::vector<double> memory_per_rank(const config::Scenario& sc, std::vector<std::int64_t>& graphs,
                                    std::vector<double>& graph_gib, std::vector<Prediction::MemoryParts>& parts,
                                    double ep_load) {
  const auto& p = sc.parallelism;
  const auto& fw = sc.framework;
  const workload::TemplateInputs ti{sc.model, sc.training, p, fw, sc.stack, sc.padded_vocab(), ep_load};
  const auto t = workload::build_templates(ti);
  // Optimizer states per parameter beside the FP32 master, sharded over DP x CP and
  // expert-DP (workload::optimizer_state_bytes; docs/research/corpus-recipes.md 'Muon').
  const double states = workload::optimizer_state_bytes(fw);
  const bool sharded = workload::optimizer_states_sharded(fw) || p.fsdp;
  const double dp_shard = sharded ? static_cast<double>(p.dp * p.cp) : 1;  // DP x CP
  const double edp_shard = sharded ? static_cast<double>(p.expert_dp) : 1;
  const double grad = workload::main_grad_bytes(fw);

  using workload::Module;
  const workload::CaptureSet g(fw, sc.stack);
  const bool dense_captured = g[Module::attn] || g[Module::mlp];
  bool moe_captured = false;
  for (Module m : {Module::attn, Module::moe_router, Module::moe_preprocess, Module::moe_dispatch, Module::experts,
                   Module::shared_expert, Module::moe_combine})
    // A model without a shared expert has nothing for stack.cuda_graph_shared_expert to
    // capture: an MoE layer under scope ["mlp"] alone (dense MLPs only, Megatron-Core
    // TransformerLayer) has no graph then.
    moe_captured = moe_captured || (g[m] && (m != Module::shared_expert || sc.model.shared_expert_ffn_hidden_size > 0));
  // The EP library's buffers, on the ranks that run MoE layers (Megatron creates them at
  // the first dispatch); tokens per rank per microbatch as the dispatcher sees them.
  const std::int64_t rpd = std::max<std::int64_t>(1, sc.placement.gpus_per_nvlink_domain / p.etp);
  const double ep_buffers = hw_models::ep_buffer_bytes(
      {fw.dispatcher, p.ep, std::min(p.ep, rpd), sc.model.hidden_size, sc.model.num_experts,
       static_cast<double>(sc.training.micro_batch_size * sc.training.seq_length) /
           static_cast<double>(p.cp * (p.sequence_parallel ? p.tp : 1)),
       fw.dispatcher_sms, fw.ep_fp8_dispatch});
  // DualPipe and DualPipeV hold two chunks per rank (two stages' parameters).
  const schedules::PipelineShape shape(sc.pipeline_schedule, static_cast<int>(p.pp), static_cast<int>(p.vpp));
  std::vector<double> out;
  for (int r = 0; r < static_cast<int>(p.pp); ++r) {
    double dense = 0, expert = 0, largest_unit = 0, transient = 0;
    bool moe_rank = false;
    std::int64_t captured_layers = 0;
    std::vector<double> act_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    std::vector<double> host_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    std::vector<double> graph_per_chunk(static_cast<std::size_t>(shape.chunks()), 0.0);
    for (int c = 0; c < shape.chunks(); ++c) {
      const auto& stage = sc.layout.stages()[static_cast<std::size_t>(shape.place(r, c).layout_stage)];
      for (const auto& it : stage.items) {
        const auto ip = schedules::item_parameters(sc.model, p, it, sc.padded_vocab());
        dense += ip.dense;
        expert += ip.expert;
        largest_unit = std::max(largest_unit, ip.dense + ip.expert);
        const workload::LayerTemplate* lt = &t.dense;
        const auto slot = schedules::layer_slot(it, sc.model);
        switch (slot) {
          case schedules::LayerSlot::embedding: lt = &t.embedding; break;
          case schedules::LayerSlot::head: lt = &t.head; break;
          case schedules::LayerSlot::moe: lt = &t.moe; break;
          case schedules::LayerSlot::dense: break;
          case schedules::LayerSlot::mtp: lt = &t.mtp; break;
        }
        const Kept kept = kept_bytes(*lt);
        transient = std::max(transient, lt->transient_bytes);
        act_per_chunk[static_cast<std::size_t>(c)] += kept.gpu;
        host_per_chunk[static_cast<std::size_t>(c)] += kept.host;
        const bool moe_layer = schedules::has_experts(slot, sc.model);
        const bool dense_layer =
            !moe_layer && (slot == schedules::LayerSlot::dense || slot == schedules::LayerSlot::mtp);
        moe_rank = moe_rank || moe_layer;
        if (!g.full_iteration() && ((moe_layer && moe_captured) || (dense_layer && dense_captured))) {
          ++captured_layers;
          graph_per_chunk[static_cast<std::size_t>(c)] += graph_static_bytes(sc);
        }
      }
    }
    // Activations: the largest sum over forward items not yet matched by their backward.
    // Graph static buffers follow the same in-flight items. Offloaded activations stay
    // on the GPU for the two chunks being offloaded and reloaded at a time (the forward
    // that produced them and the backward about to read them), host memory otherwise.
    const double resident = 2 * *std::max_element(host_per_chunk.begin(), host_per_chunk.end());
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
      const double now = act + std::min(off, resident);
      if (now > peak) {
        peak = now;
        gpeak = gb;
      }
    }
    // BF16 weights and main gradients (FP32, or BF16 with --main-grads-dtype bf16); Megatron-FSDP shards both like the optimizer
    // states and holds two units' gathered BF16 parameters (the one computing and the
    // prefetched one) and one unit's FP32 gradients before their reduce-scatter.
    const double weights_grads = p.fsdp ? (dense / dp_shard + expert / edp_shard) * (2 + grad) + largest_unit * (2 * 2 + grad)
                                        : (dense + expert) * (2 + grad);
    // Optimizer offload (Megatron --optimizer-cpu-offload): the FP32 main weights and
    // moments live in host memory.
    const bool opt_off = std::find(fw.offload.begin(), fw.offload.end(), workload::OffloadTarget::optimizer) !=
                         fw.offload.end();
    const double optimizer = opt_off ? 0 : (dense / dp_shard + expert / edp_shard) * (4 + states);
    const double buffers = moe_rank ? ep_buffers : 0;
    peak += transient;  // one layer's temporaries, at the worst moment
    out.push_back((weights_grads + optimizer + peak + buffers) / kGiB);
    parts.push_back({weights_grads / kGiB, optimizer / kGiB, (peak - gpeak) / kGiB, gpeak / kGiB, buffers / kGiB});
    graphs.push_back(g.full_iteration() ? 1 : captured_layers * p.num_microbatches * 2);
    graph_gib.push_back(gpeak / kGiB);
  }
  return out;
}

}  // namespace

Prediction predict(const config::Scenario& sc, const schedules::StepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const double ep_load = scenario_ep_load(sc);
  const hw_models::FlowComm comm(sc.system, sc.gpus, sc.placement.gpus_per_nvlink_domain, sc.parallelism.pp);
  const schedules::StepInput in{sc.system,        sc.gpus,       sc.placement.gpus_per_nvlink_domain,
                                sc.model,         sc.training,   sc.parallelism,
                                sc.framework,     sc.stack,      sc.layout,
                                sc.pipeline_schedule, sc.padded_vocab(), ep_load};
  Prediction p;
  p.ep_load = ep_load;
  p.step = schedules::simulate_step(in, opt, comm);
  const ScenarioSummary s = summarize(sc);
  p.flops_per_step = s.flops_per_step;
  const double gpus = static_cast<double>(sc.gpus);
  p.tflops_per_gpu = s.flops_per_step / (p.step.step_time_s * gpus * 1e12);
  p.tokens_per_s_per_gpu = s.tokens_per_step / (p.step.step_time_s * gpus);
  p.mfu = p.tflops_per_gpu / sc.system.gpu.peak_tflops(hw_models::Dtype::bf16);
  std::vector<Prediction::MemoryParts> parts;
  p.rank_memory_gib = memory_per_rank(sc, p.cuda_graphs_per_rank, p.graph_static_gib, parts, ep_load);
  const auto peak = std::max_element(p.rank_memory_gib.begin(), p.rank_memory_gib.end());
  p.peak_memory_gib = *peak;
  p.peak_memory_parts = parts[static_cast<std::size_t>(peak - p.rank_memory_gib.begin())];
  p.reserved_memory_gib = p.peak_memory_gib * (1 + sc.framework.allocator_fragmentation);
  p.fits_in_memory = p.reserved_memory_gib * kGiB <= sc.system.gpu.hbm_GB.value * 1e9;
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

double predicted_metric(const config::Measured& m, const Prediction& p) {
  switch (m.metric) {
    case config::MeasuredMetric::tflops_per_gpu: return p.tflops_per_gpu;
    case config::MeasuredMetric::step_time_s: return p.step.step_time_s;
    case config::MeasuredMetric::tokens_per_s_per_gpu: return p.tokens_per_s_per_gpu;
  }
  return 0;
}

namespace {
// Host-bound idle time by the module whose kernel the GPU waited for, largest first;
// "outside_layers" for pipeline transfers, DP collectives and the optimizer.
std::vector<std::pair<std::string, double>> host_bound_by_module(const schedules::Breakdown& b) {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t m = 0; m < b.host_bound_by_module.size(); ++m)
    out.emplace_back(m < workload::kModuleCount
                         ? std::string(workload::module_names().name(static_cast<workload::Module>(m)))
                         : std::string("outside_layers"),
                     b.host_bound_by_module[m]);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}
}  // namespace

Json run_json(const config::Scenario& sc, const Prediction& p) {
  const auto& b = p.step.breakdown;
  Json j;
  j["name"] = sc.name;
  j["file"] = sc.file;
  j["step_time_s"] = p.step.step_time_s;
  j["tflops_per_gpu"] = p.tflops_per_gpu;
  j["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  j["mfu"] = p.mfu;
  j["mfu_peak"] = "dense bf16";
  j["peak_memory_gib"] = p.peak_memory_gib;
  const auto& mp = p.peak_memory_parts;
  j["peak_memory_parts_gib"] = {{"weights_grads", mp.weights_grads},
                                {"optimizer", mp.optimizer},
                                {"activations", mp.activations},
                                {"ep_buffers", mp.ep_buffers},
                                {"graph_buffers", mp.graph_buffers}};
  j["reserved_memory_gib"] = p.reserved_memory_gib;
  j["fits_in_memory"] = p.fits_in_memory;
  j["ep_load"] = p.ep_load;
  j["breakdown"] = {{"compute", b.compute},
                    {"exposed_communication", b.exposed_comm},
                    {"pipeline_bubble", b.pipeline_bubble},
                    {"host_bound_idle", b.host_bound_idle},
                    {"other", b.other}};
  Json by_module = Json::object();
  for (const auto& [module, seconds] : host_bound_by_module(b)) by_module[module] = seconds;
  j["host_bound_idle_by_module"] = by_module;
  j["critical_rank"] = p.step.critical_rank;
  j["rank_memory_gib"] = p.rank_memory_gib;
  j["cuda_graphs"] = {{"per_rank", p.cuda_graphs_per_rank}, {"static_buffers_gib", p.graph_static_gib}};
  j["host_busy_s"] = p.step.host_busy_s;
  j["simulation"] = {{"events", p.step.events}, {"kernels", p.step.kernels}, {"wall_s", p.wall_s},
                     {"fidelity", p.step.simulated_ranks == sc.parallelism.pp && sc.gpus != sc.parallelism.pp
                                      ? "representative" : "full"},
                     {"simulated_ranks", p.step.simulated_ranks}};
  // Settings the file gave that change nothing here (config/inert_settings.hpp).
  Json warnings = Json::array();
  for (const auto& w : config::inert_setting_warnings(sc)) warnings.push_back({{"setting", w.setting}, {"reason", w.reason}});
  j["warnings"] = warnings;
  if (sc.measured) {
    const double pred = predicted_metric(*sc.measured, p);
    j["measured"] = {{"metric", config::measured_metric_names().name(sc.measured->metric)},
                     {"value", sc.measured->value},
                     {"predicted", pred},
                     {"error_pct", 100 * (pred - sc.measured->value) / sc.measured->value}};
  }
  return j;
}

std::string run_text(const config::Scenario& sc, const Prediction& p) {
  const auto& b = p.step.breakdown;
  const double t = p.step.step_time_s;
  std::string o = fmt::format("{}  ({})\n\n", sc.name, sc.file);
  o += fmt::format("step time        {:.3f} s\n", t);
  o += fmt::format("TFLOPS/GPU       {:.1f}   (Megatron accounting)\n", p.tflops_per_gpu);
  o += fmt::format("tokens/s/GPU     {:.1f}\n", p.tokens_per_s_per_gpu);
  o += fmt::format("MFU              {:.1f}%  (of dense BF16 {:g} TFLOPS)\n", 100 * p.mfu,
                   sc.system.gpu.peak_tflops(hw_models::Dtype::bf16));
  const double frag = sc.framework.allocator_fragmentation;
  o += fmt::format("peak memory      {:.1f} GiB{} of {:g} GB  ({})\n", p.peak_memory_gib,
                   frag > 0 ? fmt::format(", {:.1f} reserved with {:g}% fragmentation", p.reserved_memory_gib, 100 * frag)
                            : std::string(),
                   sc.system.gpu.hbm_GB.value, p.fits_in_memory ? "fits" : "DOES NOT FIT");
  o += fmt::format(
      "                 weights+grads {:.1f}, optimizer {:.1f}, activations {:.1f}, graph buffers {:.1f}, EP "
      "buffers {:.1f}\n",
      p.peak_memory_parts.weights_grads, p.peak_memory_parts.optimizer, p.peak_memory_parts.activations,
      p.peak_memory_parts.graph_buffers, p.peak_memory_parts.ep_buffers);
  if (p.ep_load != 1)
    o += fmt::format("EP load          {:.3f} x balanced on the hottest EP rank (routing: {})\n", p.ep_load,
                     workload::routing_balance_names().name(sc.routing.balance));
  if (const auto most = std::max_element(p.cuda_graphs_per_rank.begin(), p.cuda_graphs_per_rank.end());
      most != p.cuda_graphs_per_rank.end() && *most > 0)
    o += fmt::format("CUDA graphs      {} per GPU at most (static buffers {:.2f} GiB, in the memory above)\n", *most,
                     *std::max_element(p.graph_static_gib.begin(), p.graph_static_gib.end()));
  o += fmt::format("\nbreakdown of the critical rank ({}):\n", p.step.critical_rank);
  const auto row = [&](const char* what, double s) {
    o += fmt::format("  {:<22}{:>9.3f} s  {:>5.1f}%\n", what, s, 100 * s / t);
  };
  row("compute", b.compute);
  row("exposed communication", b.exposed_comm);
  row("pipeline bubble", b.pipeline_bubble);
  row("host-bound idle", b.host_bound_idle);
  std::string where;
  for (const auto& [module, seconds] : host_bound_by_module(b))
    if (seconds >= 0.0005 * t) where += fmt::format("{}{} {:.3f} s", where.empty() ? "" : ", ", module, seconds);
  if (!where.empty()) o += fmt::format("    before kernels of: {}\n", where);
  row("other", b.other);
  if (sc.measured) {
    const double pred = predicted_metric(*sc.measured, p);
    o += fmt::format("\nmeasured {} = {:g}; predicted {:.2f} ({:+.1f}%)\n",
                     config::measured_metric_names().name(sc.measured->metric), sc.measured->value, pred,
                     100 * (pred - sc.measured->value) / sc.measured->value);
  }
  if (const auto warnings = config::inert_setting_warnings(sc); !warnings.empty()) {
    o += "\nwarnings (settings given that change nothing here):\n";
    for (const auto& w : warnings) o += fmt::format("  {}: {}\n", w.setting, w.reason);
  }
  o += fmt::format("\nsimulated {} ranks, {} kernels, {} events in {:.3f} s\n", p.step.simulated_ranks,
                   p.step.kernels, p.step.events, p.wall_s);
  return o;
}

// Streamed rather than built as one JSON document: a full step has ~10^6 events.
void write_trace(const Prediction& p, std::ostream& out) {
  const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string buf = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  const auto add = [&](const std::string& e) {
    if (!first) buf += ",\n";
    first = false;
    buf += e;
    if (buf.size() > (1u << 20)) {
      out << buf;
      buf.clear();
    }
  };
  const int ranks = static_cast<int>(p.step.rank_end_s.size());
  for (int r = 0; r < ranks; ++r) {
    add(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {}"}}}})", r, r));
    add(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":0,"args":{{"name":"host"}}}})", r));
    for (std::size_t s = 0; s < p.step.streams.size(); ++s)
      add(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", r, s + 1,
                      quoted("stream " + p.step.streams[s])));
  }
  std::vector<std::string> names;
  for (const auto& l : p.step.labels) names.push_back(quoted(l));
  for (const auto& s : p.step.trace)
    add(fmt::format(R"({{"ph":"X","name":{},"cat":"{}","pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f}}})",
                    names[s.label], s.track < 0 ? "host" : "gpu", s.rank, s.track + 1, s.start_s * 1e6,
                    (s.end_s - s.start_s) * 1e6));
  out << buf << "\n]}\n";
}

}  // namespace moesim::reports
