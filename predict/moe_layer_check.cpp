#include "predict/moe_layer_check.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::predict {

config::Scenario moe_layer_scenario(const calibration::MoeLayerSet& set,
                                    const calibration::MoeLayerPoint& c,
                                    const std::string& system) {
  using Json = config::Json;
  Json model = set.models.at(c.model);
  model["num_hidden_layers"] = 1;
  const Json j = {
      {"name", "moe-layer-" + c.name},
      {"description", "one MoE layer timed alone (predict/moe_layer_check.hpp): " + c.name},
      {"system",
       {{"base", system},
        {"sources",
         {{"moe-layer-clock",
           "a short benchmark of one layer (25 iterations): the clocks the presets' "
           "efficiencies were measured at (predict/moe_layer_check.hpp)"}}},
        {"efficiency",
         {{"sustained_clock_factor", {{"value", 1.0}, {"source", "moe-layer-clock"}}}}}}},
      {"gpus", set.gpus},
      {"model", model},
      {"training",
       {{"seq_length", set.seq_length},
        {"micro_batch_size", set.micro_batch_size},
        {"global_batch_size", set.micro_batch_size * set.gpus},
        {"precision", c.precision},
        {"mtp_layers", 0}}},
      {"parallelism", {{"tp", 1}, {"pp", 1}, {"ep", set.ep}}},
      {"framework",
       {{"dispatcher", c.dispatcher},
        {"moe_a2a_overlap", false},
        {"cuda_graph_scope", Json::array()},
        {"recompute_modules", Json::array()},
        // No DDP around the layer: no gradient reduction or parameter gather in its passes.
        {"overlap_grad_reduce", false},
        {"overlap_param_gather", false}}},
      {"stack", {{"release", "25.11"}, {"cpu_numa_binding", false}}},
      {"routing", {{"balance", "forced"}}}};
  return config::load_scenario_json(j, "moe-layer " + c.name);
}

namespace {

// The length of the union of [start, end) intervals.
double union_length(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0, lo = 0, hi = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : v) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

}  // namespace

MoeLayerTimes moe_layer_times(const config::Scenario& sc) {
  schedules::StepOptions opt;
  opt.trace = true;
  opt.steady_state = false;
  const auto p = predict(sc, opt);
  const auto& r = p.step;
  using workload::Module;
  const auto moe_block = [](std::size_t m) {
    for (Module x : {Module::moe_router, Module::moe_preprocess, Module::moe_dispatch,
                     Module::shared_expert, Module::experts, Module::moe_combine})
      if (m == static_cast<std::size_t>(x)) return true;
    return false;
  };
  // Per pass: the MoE block's kernels (GPU streams).
  std::vector<std::pair<double, double>> kernels[2];
  for (const auto& s : r.trace) {
    if (s.rank != 0 || s.track < 0 || s.context == 0) continue;
    const auto& kind = r.label_kinds.at(s.label);
    if (!kind.layer || !moe_block(kind.module) || kind.pass == schedules::kNoPass) continue;
    const auto& ctx = r.contexts.at(s.context);
    if (!ctx.has_item || ctx.item.kind != schedules::LayoutItemKind::decoder) continue;
    if (r.labels.at(s.label).starts_with("moe.norm")) continue;  // the pre-MLP norm
    kernels[kind.pass == schedules::kFwd ? 0 : 1].emplace_back(s.start_s, s.end_s);
  }
  if (kernels[0].empty() || kernels[1].empty())
    throw std::invalid_argument(sc.name + ": no MoE block in the first decoder layer's passes");
  const auto span = [](const std::vector<std::pair<double, double>>& v) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& [a, b] : v) lo = std::min(lo, a), hi = std::max(hi, b);
    return std::pair{lo, hi};
  };
  const auto [flo, fhi] = span(kernels[0]);
  // Forward: the harness's long matmul before each iteration keeps the GPU busy while the
  // host launches the block up to the dispatcher's first device-host sync ("a long CUDA
  // kernel to hide the router launch overhead", __main__.py), so those kernels run back to
  // back; from the sync on, the host paces the GPU as the simulation has it. The sync is the
  // host's first wait on the device in the layer's forward after the block began
  // (StepResult::host_waits: when the host went on, whether it had waited or arrived late).
  double resumed = std::numeric_limits<double>::infinity();
  for (const auto& w : r.host_waits) {
    if (w.rank != 0 || w.context == 0 || w.resumed_s < flo) continue;
    const auto& ctx = r.contexts.at(w.context);
    if (!ctx.has_item || ctx.item.kind != schedules::LayoutItemKind::decoder ||
        ctx.pass != schedules::Pass::forward)
      continue;
    resumed = std::min(resumed, w.resumed_s);
  }
  // The kernels launched before the host went on; the sync's part ends with the last of them
  // or with the host's resumption, whichever is later.
  std::vector<std::pair<double, double>> before;
  double synced = 0;
  for (const auto& k : kernels[0])
    if (k.first < resumed) before.push_back(k), synced = std::max(synced, k.second);
  const double forward_s =
      before.empty() ? fhi - flo
                     : union_length(before) + std::max(0.0, fhi - std::max(synced, resumed));
  const auto [blo, bhi] = span(kernels[1]);
  return {forward_s * 1e3, (bhi - blo) * 1e3, (fhi - flo) * 1e3,
          resumed != std::numeric_limits<double>::infinity()};
}

}  // namespace moesim::predict
