#include "predict/moe_layer_check.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

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
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo[2] = {kInf, kInf}, hi[2] = {-kInf, -kInf};
  for (const auto& s : r.trace) {
    if (s.rank != 0 || s.track < 0 || s.context == 0) continue;
    const auto& kind = r.label_kinds.at(s.label);
    if (!kind.layer || !moe_block(kind.module) || kind.pass == schedules::kNoPass) continue;
    const auto& ctx = r.contexts.at(s.context);
    if (!ctx.has_item || ctx.item.kind != schedules::LayoutItemKind::decoder) continue;
    if (r.labels.at(s.label).starts_with("moe.norm")) continue;  // the pre-MLP norm
    const int pass = kind.pass == schedules::kFwd ? 0 : 1;
    lo[pass] = std::min(lo[pass], s.start_s);
    hi[pass] = std::max(hi[pass], s.end_s);
  }
  if (!(hi[0] > lo[0]) || !(hi[1] > lo[1]))
    throw std::invalid_argument(sc.name + ": no MoE block in the first decoder layer's passes");
  return {(hi[0] - lo[0]) * 1e3, (hi[1] - lo[1]) * 1e3};
}

}  // namespace moesim::predict
