#include "reports/describe.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include "config/releases.hpp"
#include "schedules/pipeline_order.hpp"
#include "workload/eplb.hpp"
#include "workload/routing.hpp"

namespace moesim::reports {
namespace {

using Json = nlohmann::ordered_json;

template <class E>
std::vector<std::string> names(const sim_core::NameTable<E>& table, const std::vector<E>& v) {
  std::vector<std::string> out;
  for (E e : v) out.emplace_back(table.name(e));
  return out;
}

std::string list_or(const std::vector<std::string>& v, std::string_view none) {
  return v.empty() ? std::string(none) : fmt::format("{}", fmt::join(v, ", "));
}

std::string on_off(bool b) {
  return b ? "on" : "off";
}

// `given`: the file set routing.popularity_sigma (else a value there is the loader's
// global-batch fit).
std::string routing_text(const workload::Routing& r, bool given) {
  switch (r.balance) {
    case workload::RoutingBalance::forced:
      return "forced balance (every expert gets the same tokens)";
    case workload::RoutingBalance::sampled:
      return fmt::format("sampled, {} alpha {} seed {}",
                         workload::routing_distribution_names().name(r.distribution), r.alpha,
                         r.seed);
    case workload::RoutingBalance::histogram:
      return fmt::format("histogram from {}", r.histogram_path);
    case workload::RoutingBalance::aux_loss:
    case workload::RoutingBalance::loss_free: {
      const std::string how =
          r.balance == workload::RoutingBalance::aux_loss
              ? fmt::format("with an auxiliary loss, coefficient {:g}", r.aux_loss_coefficient)
              : std::string("with the auxiliary-loss-free expert bias");
      // The popularity's dispersion: the published statistic's, or one given (a scenario's
      // routing.popularity_sigma, or the global-batch fit the loader gave the family).
      const std::string spread =
          r.popularity_sigma
              ? fmt::format("popularity sigma {:.3f} ({})", *r.popularity_sigma,
                            given ? "given in the file"
                                  : "the global-batch fit of calibration/profiles/routing.json")
              : fmt::format(
                    "global MaxVio {:.3f}, popularity sigma {:.3f} (published "
                    "statistics, workload/routing.hpp)",
                    workload::trained_max_vio(r), workload::routing_sigma(r));
      return fmt::format("trained {}: {}, seed {}", how, spread, r.seed);
    }
  }
  return "?";
}

}  // namespace

Json describe_json(const config::Scenario& sc) {
  const predict::ScenarioSummary s = predict::summarize(sc);
  const auto& m = sc.model;
  const auto& p = sc.parallelism;
  const auto& f = sc.framework;
  Json j;
  j["name"] = sc.name;
  j["file"] = sc.file;
  j["description"] = sc.description;

  Json peaks = Json::object();
  for (const auto& [d, v] : sc.system.gpu.dense_tflops)
    peaks[hw_models::dtype_names().name(d)] = v.value;
  j["system"] = {{"name", sc.system.name},
                 {"status", hw_models::system_status_names().name(sc.system.status)},
                 {"gpu", sc.system.gpu.name},
                 {"gpus", sc.gpus},
                 {"gpus_per_nvlink_domain", sc.placement.gpus_per_nvlink_domain},
                 {"dense_peak_tflops", peaks},
                 {"calibration_profiles", sc.system.profiles}};
  if (!sc.system.set_on_command_line.empty())
    j["system"]["set_on_command_line"] = sc.system.set_on_command_line;
  j["model"] = {{"name", m.name},
                {"model_type", m.model_type},
                {"layers", m.num_layers},
                {"dense_layers", m.num_dense_layers()},
                {"moe_layers", m.num_moe_layers()},
                {"attention", workload::attention_kind_names().name(m.attention)},
                {"hidden_size", m.hidden_size},
                {"experts", m.num_experts},
                {"topk", m.topk},
                {"padded_vocab", sc.padded_vocab()}};
  j["params"] = {{"total", s.params.total},
                 {"active", s.params.active},
                 {"embedding", s.params.embedding},
                 {"output_head", s.params.output_head},
                 {"attention", s.params.attention},
                 {"dense_mlp", s.params.dense_mlp},
                 {"routed_experts", s.params.routed_experts},
                 {"shared_experts", s.params.shared_experts},
                 {"routers", s.params.routers},
                 {"norms", s.params.norms},
                 {"mtp", s.params.mtp}};
  if (m.hybrid()) {
    j["model"]["mamba_layers"] = m.count_hybrid(workload::HybridLayer::mamba);
    j["model"]["attention_layers"] = m.num_attention_layers();
    j["model"]["mamba"] = {{"heads", m.mamba.heads},   {"head_dim", m.mamba.head_dim},
                           {"groups", m.mamba.groups}, {"state", m.mamba.state},
                           {"conv", m.mamba.conv},     {"chunk", m.mamba.chunk}};
    j["params"]["mamba"] = s.params.mamba;
  }
  j["flops_per_token"] = s.flops_per_token;
  j["flops_per_step"] = s.flops_per_step;
  j["flops_per_token_breakdown"] = {{"attn_linear", s.flops.attn_linear},
                                    {"attn_core", s.flops.attn_core},
                                    {"dense_mlp", s.flops.dense_mlp},
                                    {"moe_mlp", s.flops.moe_mlp},
                                    {"mtp", s.flops.mtp},
                                    {"logits", s.flops.logits}};
  if (m.hybrid()) j["flops_per_token_breakdown"]["mamba"] = s.flops.mamba;
  j["training"] = {
      {"seq_length", sc.training.seq_length},
      {"micro_batch_size", sc.training.micro_batch_size},
      {"global_batch_size", sc.training.global_batch_size},
      {"precision", workload::precision_names().name(sc.training.precision)},
      {"mtp_layers", sc.training.mtp_layers},
      {"hidden_dropout", sc.training.hidden_dropout},
      {"make_vocab_size_divisible_by", sc.training.vocab_divisor},
      {"bf16_layers_at_start", sc.training.bf16_layers_at_start},
      {"bf16_layers_at_end", sc.training.bf16_layers_at_end},
      {"capacity_factor",
       sc.training.capacity_factor ? Json(*sc.training.capacity_factor) : Json(nullptr)}};
  j["parallelism"] = {
      {"cp_comm_type", workload::cp_comm_names().name(p.cp_comm)},
      {"tp", p.tp},
      {"pp", p.pp},
      {"vpp", p.vpp},
      {"ep", p.ep},
      {"etp", p.etp},
      {"cp", p.cp},
      {"dp", p.dp},
      {"expert_dp", p.expert_dp},
      {"sequence_parallel", p.sequence_parallel},
      {"fsdp", p.fsdp},
      {"optimizer_instances", p.optimizer_instances},
      {"outer_dp_sharding", workload::outer_sharding_names().name(p.outer_dp_sharding)},
      {"num_microbatches", p.num_microbatches},
      {"pipeline_schedule", schedules::schedule_names().name(sc.pipeline_schedule)},
      {"pp_layout", sc.pp_layout_text.empty() ? Json(nullptr) : Json(sc.pp_layout_text)}};
  if (p.eplb)
    j["parallelism"]["eplb"] = {
        {"redundant_experts", p.eplb->redundant_experts},
        {"policy", workload::eplb_policy_names().name(p.eplb->policy)},
        {"physical_experts_per_rank", workload::physical_experts(m, p) / p.ep}};
  Json stages = Json::array();
  Json layers = Json::array();
  // The chunks each rank runs: DualPipe's second is the reverse pipeline's stage pp-1-r.
  const schedules::PipelineShape shape(sc.pipeline_schedule, sc.layout.pp(), sc.layout.vpp());
  const auto chunk_stage = [&](int r, int v) -> const schedules::VirtualStage& {
    return sc.layout.stages()[static_cast<std::size_t>(shape.place(r, v).layout_stage)];
  };
  for (int r = 0; r < sc.layout.pp(); ++r) {
    Json chunks = Json::array();
    Json counts = Json::array();
    for (int v = 0; v < shape.chunks(); ++v) {
      const auto& st = chunk_stage(r, v);
      const auto n = st.count(schedules::LayoutItemKind::decoder);
      chunks.push_back({{"vp", v}, {"items", st.to_string()}, {"decoder_layers", n}});
      counts.push_back(n);
    }
    stages.push_back({{"pp_rank", r}, {"chunks", chunks}});
    layers.push_back(counts);
  }
  j["layers_per_stage"] = layers;
  j["stages"] = stages;
  j["framework"] = {
      {"dispatcher", hw_models::dispatcher_names().name(f.dispatcher)},
      {"dispatcher_sms", f.dispatcher_sms},
      {"gemm_sm_margin", f.gemm_sm_margin},
      {"moe_a2a_overlap", f.moe_a2a_overlap},
      {"moe_shared_expert_overlap", f.moe_shared_expert_overlap},
      {"batch_p2p_sync", f.batch_p2p_sync},
      {"tp_comm_overlap", f.tp_comm_overlap},
      {"ep_fp8_dispatch", f.ep_fp8_dispatch},
      {"moe_expert_rank_capacity_factor",
       f.moe_expert_rank_capacity_factor ? Json(*f.moe_expert_rank_capacity_factor) : Json()},
      {"cuda_graph_scope", names(workload::cuda_graph_scope_names(), f.cuda_graph_scope)},
      {"recompute_modules", names(workload::recompute_module_names(), f.recompute_modules)},
      {"recompute_num_layers", f.recompute_num_layers > 0 ? Json(f.recompute_num_layers) : Json()},
      {"distributed_optimizer", f.distributed_optimizer},
      {"overlap_grad_reduce", f.overlap_grad_reduce},
      {"overlap_param_gather", f.overlap_param_gather},
      {"fp8_param_gather", f.fp8_param_gather},
      {"optimizer_state_dtype",
       workload::optimizer_state_dtype_names().name(f.optimizer_state_dtype)},
      {"offload", names(workload::offload_target_names(), f.offload)},
      {"low_precision_activations",
       names(workload::low_precision_activation_names(), f.low_precision_activations)},
      {"ddp_bucket_size", f.ddp_bucket_size ? Json(*f.ddp_bucket_size) : Json()},
      {"allocator_fragmentation", f.allocator_fragmentation},
      {"optimizer", workload::optimizer_kind_names().name(f.optimizer)},
      {"main_grads_dtype", workload::grad_dtype_names().name(f.main_grads_dtype)},
      {"grad_reduce_dtype", workload::grad_dtype_names().name(f.grad_reduce_dtype)},
      {"delay_wgrad_compute", f.delay_wgrad_compute},
      {"fp8_dot_product_attention", f.fp8_dot_product_attention},
      {"fp8_output_proj", f.fp8_output_proj},
      {"te_op_fuser", f.te_op_fuser},
      {"rope_fusion", f.rope_fusion},
      {"cross_entropy", workload::cross_entropy_names().name(f.cross_entropy)},
      {"attention_backend", workload::attention_backend_names().name(f.attention_backend)},
      {"moe_paged_stash", f.moe_paged_stash}};
  Json stack = Json::object();
  if (!sc.release.empty()) stack["release"] = sc.release;
  for (const auto& sw : workload::stack_switches())
    stack[std::string(sw.name)] = sc.stack.*sw.member;
  j["stack"] = stack;
  j["routing"] = {{"balance", workload::routing_balance_names().name(sc.routing.balance)},
                  {"summary", routing_text(sc.routing, sc.gave("routing.popularity_sigma"))}};
  if (sc.routing.popularity_sigma) j["routing"]["popularity_sigma"] = *sc.routing.popularity_sigma;
  if (sc.measured) {
    j["measured"] = {{"metric", config::measured_metric_names().name(sc.measured->metric)},
                     {"value", sc.measured->value},
                     {"source", sc.measured->source},
                     {"tolerance_pct", sc.measured->tolerance_pct}};
  }
  return j;
}

std::string describe_text(const config::Scenario& sc) {
  const predict::ScenarioSummary s = predict::summarize(sc);
  const auto& m = sc.model;
  const auto& p = sc.parallelism;
  const auto& f = sc.framework;
  const auto& g = sc.system.gpu;
  std::string o;
  auto line = [&o](std::string_view label, const std::string& text) {
    o += fmt::format("{:<12}{}\n", label, text);
  };

  o += fmt::format("{}  ({})\n", sc.name, sc.file);
  if (!sc.description.empty()) o += fmt::format("  {}\n", sc.description);
  o += "\n";

  std::vector<std::string> peaks;
  for (const auto& [d, v] : g.dense_tflops)
    peaks.push_back(fmt::format("{} {:g}", hw_models::dtype_names().name(d), v.value));
  line("system",
       fmt::format("{}: {} x {} ({}, {:g} SMs, {:g} GiB HBM as CUDA reports it, at {:g} TB/s)",
                   sc.system.name, sc.gpus, g.name, hw_models::gpu_arch_names().name(g.arch),
                   g.sm_count.value, g.usable_GiB.value, g.hbm_TBps.value));
  if (sc.system.status == hw_models::SystemStatus::announced)
    line("", fmt::format("ANNOUNCED, not measured in public: {}", sc.system.status_source));
  line("", fmt::format("dense TFLOPS: {}", fmt::join(peaks, ", ")));
  line("", fmt::format("calibration profiles: {}", list_or(sc.system.profiles, "none")));
  if (!sc.system.set_on_command_line.empty())
    line("", fmt::format("set on the command line (--set, a what-if): {}",
                         fmt::join(sc.system.set_on_command_line, "; ")));
  line("", fmt::format("NVLink domains of {} GPUs (system: {:g}), {:g} GB/s per GPU per direction; "
                       "{:g} x {:g} Gb/s {} per GPU",
                       sc.placement.gpus_per_nvlink_domain, sc.system.nvlink.domain_gpus.value,
                       sc.system.nvlink.bw_GBps.value, sc.system.network.nics_per_gpu.value,
                       sc.system.network.nic_Gbps.value, sc.system.network.nic));

  const auto ratio_layers = [&](std::int64_t r) {
    return std::count(
        m.dsv4.compress_ratios.begin(),
        m.dsv4.compress_ratios.begin() +
            std::min<std::ptrdiff_t>(m.num_layers, std::ssize(m.dsv4.compress_ratios)),
        r);
  };
  const std::string attn =
      m.attention == workload::AttentionKind::mla ? fmt::format("MLA, {} heads", m.num_heads)
      : m.is_dsv4()                               ? fmt::format(
                                                        "MQA {} heads of {} over one shared key=value head, {} window-only + "
                                                                                      "{} CSA (top-{}) + {} HCA layers, mHC x{}",
                                                        m.num_heads, m.head_dim, ratio_layers(0), ratio_layers(4),
                                                        m.dsv4.index_topk, ratio_layers(128), m.dsv4.hc_mult)
                    : fmt::format("GQA {}/{} heads of {}", m.num_heads, m.num_kv_heads, m.head_dim);
  if (m.hybrid())
    line("model",
         fmt::format("{} ({}): {} layers = {} Mamba-2 + {} attention + {} MoE + {} dense MLP, "
                     "hidden {}, {}",
                     m.name, m.model_type, m.num_layers,
                     m.count_hybrid(workload::HybridLayer::mamba), m.num_attention_layers(),
                     m.num_moe_layers(), m.num_dense_layers(), m.hidden_size, attn));
  else
    line("model",
         fmt::format("{} ({}): {} layers = {} dense + {} MoE, hidden {}, {}", m.name, m.model_type,
                     m.num_layers, m.num_dense_layers(), m.num_moe_layers(), m.hidden_size, attn));
  if (m.hybrid())
    line("", fmt::format("Mamba-2 mixers: {} heads of {} (d_inner {}), {} groups, state {}, conv "
                         "{}, chunk {}",
                         m.mamba.heads, m.mamba.head_dim, m.mamba.d_inner(), m.mamba.groups,
                         m.mamba.state, m.mamba.conv, m.mamba.chunk));
  if (m.is_moe())
    line("",
         fmt::format("{} routed experts (FFN {}), top-{}{}", m.num_experts, m.moe_ffn_hidden_size,
                     m.topk,
                     m.shared_expert_ffn_hidden_size > 0
                         ? fmt::format(", shared-expert FFN {}", m.shared_expert_ffn_hidden_size)
                         : std::string()));
  line("", fmt::format("vocabulary {} (padded {})", m.vocab_size, sc.padded_vocab()));
  if (m.any_windowed())
    line("",
         fmt::format("sliding-window attention ({} tokens) in {} of {} layers{}", m.sliding_window,
                     std::count(m.sliding_layer.begin(), m.sliding_layer.end(), true), m.num_layers,
                     m.attention_sinks ? ", attention sinks" : ""));
  else if (m.attention_sinks)
    line("", "attention sinks");
  line("parameters",
       fmt::format(
           "{:.2f} B total, {:.2f} B active per token{}", s.params.total / 1e9,
           s.params.active / 1e9,
           s.params.mtp > 0 ? fmt::format(" (MTP {:.2f} B)", s.params.mtp / 1e9) : std::string()));
  const double ft = s.flops_per_token;
  line("flops", fmt::format("{:.2f} GFLOP/token (Megatron accounting), {:.4e} FLOP/step", ft / 1e9,
                            s.flops_per_step));
  line("",
       fmt::format("attention linear {:.1f}%, core {:.1f}%, dense MLP {:.1f}%, MoE MLP {:.1f}%, "
                   "MTP {:.1f}%, logits {:.1f}%",
                   100 * s.flops.attn_linear / ft, 100 * s.flops.attn_core / ft,
                   100 * s.flops.dense_mlp / ft, 100 * s.flops.moe_mlp / ft, 100 * s.flops.mtp / ft,
                   100 * s.flops.logits / ft));
  if (m.hybrid())
    line("", fmt::format("Mamba {:.1f}% (Megatron counts d_inner = 2h = {} whatever the mixer's "
                         "width)",
                         100 * s.flops.mamba / ft, 2 * m.hidden_size));

  const auto& t = sc.training;
  line("training",
       fmt::format("seq {}, micro-batch {}, global batch {}, {}, MTP layers {}, {}", t.seq_length,
                   t.micro_batch_size, t.global_batch_size,
                   workload::precision_names().name(t.precision), t.mtp_layers,
                   t.capacity_factor ? fmt::format("capacity factor {:g}", *t.capacity_factor)
                                     : std::string("dropless")));
  if (t.hidden_dropout > 0) line("", fmt::format("hidden dropout {:g}", t.hidden_dropout));
  if (t.any_bf16_layers())
    line("", fmt::format("BF16 layers outside the {} recipe: the first {}, the last {}",
                         workload::precision_names().name(t.precision), t.bf16_layers_at_start,
                         t.bf16_layers_at_end));
  line("parallel",
       fmt::format("TP{} PP{} VPP{} EP{} ETP{} CP{}{}, SP {}, FSDP {}", p.tp, p.pp, p.vpp, p.ep,
                   p.etp, p.cp,
                   p.cp > 1 ? fmt::format(" ({})", workload::cp_comm_names().name(p.cp_comm))
                            : std::string(),
                   on_off(p.sequence_parallel), on_off(p.fsdp)));
  line("", fmt::format("DP {}, expert-DP {}; {} microbatches per step; {}", p.dp, p.expert_dp,
                       p.num_microbatches, schedules::schedule_names().name(sc.pipeline_schedule)));
  if (p.hybrid())
    line("", fmt::format(
                 "{} optimizer instances: inner DP {}, expert-DP {}{}", p.optimizer_instances,
                 p.dp * p.cp / p.optimizer_instances, p.expert_dp / p.optimizer_instances,
                 p.fsdp ? fmt::format("; HSDP, outer {}",
                                      workload::outer_sharding_names().name(p.outer_dp_sharding))
                        : std::string("; gradients all-reduced across them per bucket")));
  if (p.eplb)
    line("",
         fmt::format("EPLB: {} redundant experts, {} policy: {} physical experts per EP rank",
                     p.eplb->redundant_experts, workload::eplb_policy_names().name(p.eplb->policy),
                     workload::physical_experts(m, p) / p.ep));

  line("layout", sc.pp_layout_text.empty() ? std::string("default even split")
                                           : fmt::format("\"{}\"", sc.pp_layout_text));
  // One row per pipeline rank, one column per virtual chunk.
  std::vector<std::vector<std::string>> cells;
  std::vector<std::int64_t> decoder;
  const schedules::PipelineShape shape(sc.pipeline_schedule, sc.layout.pp(), sc.layout.vpp());
  std::size_t width = fmt::format("chunk {}", shape.chunks() - 1).size();
  for (int r = 0; r < sc.layout.pp(); ++r) {
    std::vector<std::string> row;
    std::int64_t n = 0;
    for (int v = 0; v < shape.chunks(); ++v) {
      const auto& st = sc.layout.stages()[static_cast<std::size_t>(shape.place(r, v).layout_stage)];
      row.push_back(st.to_string());
      n += st.count(schedules::LayoutItemKind::decoder);
      width = std::max(width, row.back().size());
    }
    cells.push_back(std::move(row));
    decoder.push_back(n);
  }
  std::string header = fmt::format("{:<6}", "rank");
  for (int v = 0; v < shape.chunks(); ++v)
    header += fmt::format("{:<{}}", fmt::format("chunk {}", v), width + 2);
  line("", header + "layers");
  for (int r = 0; r < sc.layout.pp(); ++r) {
    std::string row = fmt::format("{:<6}", r);
    for (const auto& c : cells[static_cast<std::size_t>(r)])
      row += fmt::format("{:<{}}", c, width + 2);
    line("", row + fmt::format("{}", decoder[static_cast<std::size_t>(r)]));
  }

  const std::string sms = f.dispatcher_sms > 0 ? fmt::format(" ({} SMs)", f.dispatcher_sms) : "";
  line("framework",
       fmt::format(
           "dispatcher {}{}; CUDA graphs: {}; recompute: {}{}",
           hw_models::dispatcher_names().name(f.dispatcher), sms,
           list_or(names(workload::cuda_graph_scope_names(), f.cuda_graph_scope), "none"),
           list_or(names(workload::recompute_module_names(), f.recompute_modules), "none"),
           f.recompute_num_layers > 0
               ? fmt::format(" (the first {} layers of each virtual stage; the block method)",
                             f.recompute_num_layers)
               : ""));
  line("", fmt::format("distributed optimizer {}, overlap grad reduce {}, overlap param gather {}, "
                       "FP8 param gather {}",
                       on_off(f.distributed_optimizer), on_off(f.overlap_grad_reduce),
                       on_off(f.overlap_param_gather), on_off(f.fp8_param_gather)));
  line("", fmt::format("optimizer {}, states {}, main gradients {}, reduced in {}, offload: {}",
                       workload::optimizer_kind_names().name(f.optimizer),
                       workload::optimizer_state_dtype_names().name(f.optimizer_state_dtype),
                       workload::grad_dtype_names().name(f.main_grads_dtype),
                       workload::grad_dtype_names().name(f.grad_reduce_dtype),
                       list_or(names(workload::offload_target_names(), f.offload), "none")));
  line("", fmt::format("1F1B all-to-all overlap {}, delayed weight gradients {}",
                       on_off(f.moe_a2a_overlap), on_off(f.delay_wgrad_compute)));
  if (f.fp8_dot_product_attention || f.fp8_output_proj)
    line("", fmt::format("FP8 attention {}, MXFP8 output projection {}",
                         on_off(f.fp8_dot_product_attention), on_off(f.fp8_output_proj)));
  if (f.moe_paged_stash) line("", "paged stashing of the experts' saved activations");
  if (f.moe_expert_rank_capacity_factor)
    line("", fmt::format("sync-free MoE: expert rank capacity factor {:g}",
                         *f.moe_expert_rank_capacity_factor));
  if (f.ep_fp8_dispatch) line("", "EP dispatch in FP8 (combine and backward BF16)");
  if (!f.low_precision_activations.empty())
    line("", fmt::format("activations cached in low precision: {}",
                         fmt::join(names(workload::low_precision_activation_names(),
                                         f.low_precision_activations),
                                   ", ")));
  if (f.ddp_bucket_size)
    line("", fmt::format("DDP bucket size {:g} parameters", *f.ddp_bucket_size));
  if (f.allocator_fragmentation > 0)
    line("",
         fmt::format("allocator fragmentation allowance {:g}%", 100 * f.allocator_fragmentation));
  if (f.attention_backend != workload::AttentionBackend::fused ||
      f.cross_entropy != workload::CrossEntropy::te)
    line("", fmt::format("attention {}, loss {}",
                         workload::attention_backend_names().name(f.attention_backend),
                         workload::cross_entropy_names().name(f.cross_entropy)));
  std::vector<std::string> on, off;
  for (const auto& sw : workload::stack_switches())
    (sc.stack.*sw.member ? on : off).emplace_back(sw.name);
  if (const auto* rel = config::find_release(sc.release))
    line("stack", fmt::format("release {}: {}", rel->name, rel->components));
  else if (!sc.release.empty())
    line("stack",
         fmt::format("release {}: a build of its own, every acting switch given", sc.release));
  else
    line("stack", "no release named: the newest stack moesim models");
  line("", fmt::format("on: {}", list_or(on, "none")));
  line("", fmt::format("off: {}", list_or(off, "none")));
  line("routing", routing_text(sc.routing, sc.gave("routing.popularity_sigma")));
  if (sc.measured)
    line("measured",
         fmt::format("{} = {:g} (tolerance {:g}%), {}", config::measured_name(*sc.measured),
                     sc.measured->value, sc.measured->tolerance_pct, sc.measured->source));
  return o;
}

}  // namespace moesim::reports
