#include "config/caveats.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/decisions.hpp"
#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/routing_profile.hpp"
#include "hw_models/compute.hpp"
#include "hw_models/dispatcher.hpp"

namespace moesim::config {

namespace {
// The GPU of the old permute's one measured point (hw_models::ComputeModel::kWalkCyclesPerLoad).
constexpr std::string_view kPermuteWalkGpu = "GB200";
}  // namespace

std::vector<std::string> corpus_fit_cpus(const std::string& parameter) {
  const Json& profile = preset_parsed(PresetKind::profile, "corpus", "calibration profile");
  if (profile.contains("fits"))
    for (const auto& f : profile["fits"])
      if (f.value("parameter", "") == parameter && f.contains("cpus"))
        return f["cpus"].get<std::vector<std::string>>();
  return {};
}

std::vector<std::string> system_caveats(const hw_models::SystemSpec& system) {
  std::vector<std::string> out;
  if (system.status == hw_models::SystemStatus::announced)
    out.push_back(fmt::format(
        "system {} is announced hardware, not measured in public: its peaks are the vendor's "
        "announced figures and its efficiencies, host and communication costs are transferred "
        "from other GPUs (moesim describe lists each figure's source); a projection, with no "
        "measured run to check it",
        system.name));
  return out;
}

std::vector<std::string> prediction_caveats(const Scenario& sc) {
  std::vector<std::string> out = system_caveats(sc.system);
  // LoadOptions::system_set: the calibrated value replaced on the command line.
  for (const auto& set : sc.system.set_on_command_line)
    out.push_back(fmt::format(
        "system.{}, set on the command line (--set): a what-if on that value, not the "
        "calibrated model (its 80% band spreads the calibrated model's measured errors around it)",
        set));
  const auto& numa = sc.system.host.numa_unbound_factor;
  if (!sc.stack.cpu_numa_binding && numa && numa->value != 1.0) {
    const auto cpus = corpus_fit_cpus("host.numa_unbound_factor");
    if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), sc.system.node.cpu) == cpus.end())
      out.push_back(fmt::format(
          "stack.cpu_numa_binding off: host costs x {:.2f} (host.numa_unbound_factor), fitted on "
          "unbound runs on {} "
          "only; unmeasured on this host ({}): bound, every host cost is that much lower",
          numa->value, fmt::join(cpus, ", "), sc.system.node.cpu));
  }
  // The routed experts' grouped GEMMs in a dtype the system's grouped table lacks take the
  // dense GEMM efficiency at its large-K limit (hw_models/compute.cpp): grouped kernels
  // measured in another dtype ran below their dense rate (GB200 MXFP8: 0.53 against 0.72),
  // so this is a transfer, not a measurement. Experts run the recipe's dtype, and BF16 in
  // the BF16 layers at the start and end (training.bf16_layers_*).
  if (sc.model.is_moe()) {
    const auto& table = sc.system.efficiency.grouped_gemm;
    std::vector<hw_models::Dtype> used{workload::gemm_dtype(sc.training.precision)};
    if (sc.training.any_bf16_layers()) used.push_back(hw_models::Dtype::bf16);
    std::vector<std::string_view> missing, measured;
    for (const auto d : used)
      if (!table.count(d) && std::find(missing.begin(), missing.end(),
                                       hw_models::dtype_names().name(d)) == missing.end())
        missing.push_back(hw_models::dtype_names().name(d));
    for (const auto& [d, v] : table) measured.push_back(hw_models::dtype_names().name(d));
    if (!missing.empty())
      out.push_back(fmt::format(
          "the routed experts' grouped GEMMs in {} are priced at {}'s dense GEMM efficiency "
          "(efficiency.gemm) at its large-K limit: no grouped GEMM measurement in {} on this "
          "GPU ({}); where one exists, grouped kernels run below the dense rate",
          fmt::join(missing, ", "), sc.system.name, fmt::join(missing, ", "),
          measured.empty()
              ? std::string("efficiency.grouped_gemm is empty")
              : fmt::format("efficiency.grouped_gemm holds {}", fmt::join(measured, ", "))));
  }
  // FP8 with DeepSeek's block scales on Hopper: the presets' FP8 rates are DeepGEMM's
  // block-scaled grouped kernels and cuBLAS's per-tensor dense GEMMs (the h100 preset's
  // ref-deepgemm-grouped and ref-gemm). TransformerEngine's block-scaled recipe, which Megatron
  // runs for --fp8-recipe blockwise, runs neither: in Megatron-LM's moe_perf on H100 moesim
  // prices a MoE layer's backward 15-40% short of it (DeepSeek's proxy 15-20%, whose BF16
  // backward is within 2.3%; Mixtral's 38-40%, whose BF16 one is already 19-21% short)
  // (calibration/measurements/moe-layer-h100-mlm.json, docs/research/moe-layer-h100.md 6).
  if (sc.model.is_moe() && sc.training.precision == workload::Precision::fp8_blockwise &&
      sc.system.gpu.arch == hw_models::GpuArch::hopper)
    out.push_back(fmt::format(
        "training.precision fp8-blockwise on {}: the GEMMs are priced at the preset's FP8 rates, "
        "DeepGEMM's block-scaled grouped kernels for the experts and cuBLAS's per-tensor scaling "
        "for the dense GEMMs; under TransformerEngine's block-scaled recipe (Megatron's "
        "--fp8-recipe blockwise) moesim prices a MoE layer's backward 15-40% shorter than "
        "Megatron-LM's moe_perf timed it on H100 (15-20% for DeepSeek's proxy, whose BF16 "
        "backward it prices within 2.3%)",
        sc.system.gpu.name));
  // TE's permute before 2.6: its row-map walk is priced in SM cycles from one profile point
  // on GB200 (hw_models::ComputeWork::walk_loads); on any other GPU it is carried over by
  // SMs x clock, unmeasured there.
  if (old_permute_runs(sc) && sc.system.gpu.name != kPermuteWalkGpu)
    out.push_back(fmt::format(
        "stack.permute_fusion_v2 off: TE's permute before 2.6 walks every expert's row-map "
        "entry per token, priced at {:.1f} SM cycles a load from one {} profile point "
        "(DeepSeek-V3's global permute in NVIDIA's baseline); carried over to {} by its SMs and "
        "clock, unmeasured there",
        hw_models::ComputeModel::kWalkCyclesPerLoad, kPermuteWalkGpu, sc.system.gpu.name));
  // Megatron-Core from core_v0.16.0 (26.02) leaves the MoE pre-MLP norm out of 'layernorm'
  // recompute when TE graphs capture the router without the preprocess of an all-to-all or
  // latent MoE (its output would be a static graph buffer: transformer_layer.py 455-503 at
  // core_v0.19.0); moesim recomputes it (docs/research/tp-sequence-parallel-moe.md 5).
  using workload::CudaGraphScope, workload::RecomputeModule, workload::has;
  const auto& fw = sc.framework;
  const auto& rc = fw.recompute_modules;
  if (sc.model.is_moe() && has(rc, RecomputeModule::layernorm) &&
      has(fw.cuda_graph_scope, CudaGraphScope::moe_router) &&
      !(has(fw.cuda_graph_scope, CudaGraphScope::moe_preprocess) &&
        (fw.dispatcher == hw_models::Dispatcher::alltoall || sc.model.moe_latent_size > 0)))
    out.push_back(
        "framework.recompute_modules[layernorm] with the router in a TE CUDA graph: Megatron-Core "
        "0.16 and later do not recompute the MoE pre-MLP norm here (unless the graph also "
        "captures moe_preprocess with the all-to-all dispatcher or a latent MoE); moesim "
        "recomputes it, so the step is a little longer and the memory a little lower than "
        "those releases'");
  // A dense MLP layer's norm under 'layernorm': recomputed as DeepSeek's framework does;
  // Megatron-Core fuses it into linear_fc1 and keeps it (workload/layer_graph.cpp dense_mlp).
  if (sc.model.num_dense_layers() > 0 && has(rc, RecomputeModule::layernorm) &&
      !has(rc, RecomputeModule::mlp) && !has(rc, RecomputeModule::full))
    out.push_back(
        "framework.recompute_modules[layernorm] on the dense MLP layers: their pre-MLP norm is "
        "recomputed, as DeepSeek's framework recomputes every RMSNorm; Megatron-Core fuses it "
        "into linear_fc1 and keeps it, so under Megatron those layers keep that activation (one "
        "hidden-size tensor a layer and microbatch) and skip its recompute");
  // Trained routing (workload/routing.hpp): expert loads from a published global statistic, the
  // tokens of a microbatch routed independently around it. The measured pairs of trained
  // against forced routing (decision `routing`, calibration/evidence/decisions.json) say how
  // far that holds. A family whose routers were pretrained with global-batch balance takes the
  // dispersion fitted to such pairs (config/routing_profile.hpp), said with its record
  // (docs/research/routing-load-statistics.md).
  if (sc.model.is_moe() && sc.routing.trained()) {
    const auto& ev = evidence_for(Decision::routing, decision_evidence());
    const auto balance = workload::routing_balance_names().name(sc.routing.balance);
    const bool fitted = workload::trained_routing(sc.model).global_batch &&
                        !sc.gave("routing.popularity_sigma") && sc.routing.popularity_sigma;
    std::string s;
    if (fitted) {
      const auto& g = global_batch_sigma();
      s = fmt::format(
          "routing.balance {}: {}'s routers were pretrained with global-batch balance (Qiu et "
          "al., ACL 2025), so a layer's experts are priced at the popularity dispersion sigma "
          "{:.3f} fitted to {} measured pairs of one team's dropless against forced runs "
          "(leave-one-out ratio error {:.1f}%; calibration/profiles/routing.json), which "
          "fine-tuned the released checkpoint on one dataset: other data route differently",
          balance, sc.model.model_type, g.value, g.pairs, g.loo_mean_abs_error_pct);
    } else if (sc.routing.popularity_sigma) {
      s = fmt::format(
          "routing.balance {}: the experts' popularity at the given dispersion sigma {:.3f}, a "
          "microbatch's tokens routed independently around it",
          balance, *sc.routing.popularity_sigma);
    } else {
      s = fmt::format(
          "routing.balance {}: the trained router's expert loads come from a published global "
          "statistic (Wang et al., arXiv 2408.15664), a microbatch's tokens routed "
          "independently around it",
          balance);
    }
    if (ev.pairs > 0)
      s += fmt::format(
          "; on {} measured pairs of trained against forced routing the cost of the real "
          "routing is off by {:.1f}% on average, {:.1f}% at worst ({})",
          ev.pairs, ev.mean_abs_ratio_error_pct, ev.max_abs_ratio_error_pct, ev.worst);
    out.push_back(s);
  }
  if (sc.training.lora)
    out.push_back(
        "training.lora: TFLOPS/GPU and MFU follow Megatron-Bridge's LoRA accounting (the "
        "frozen GEMMs at two thirds, causal core attention whole, the adapters not counted); "
        "Bridge "
        "itself applies it to SQuAD-packed runs only and reports a mock-data LoRA run with the "
        "full-training count, 1.5 x these GEMM FLOPs (training/utils/flop_utils.py)");
  return out;
}

}  // namespace moesim::config
