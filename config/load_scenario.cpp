// Reads and validates a scenario file (docs/SCENARIO_FORMAT.md, schema/scenario.schema.json).
// Sections are read strictly (unknown keys refused); then the cross-field rules of Megatron-Core
// are checked, each reported at the JSON path of the setting to change.
// This file: the document itself (the system and model it names, resolved from presets or
// inline), the name tables and the entry points. The sections' readers are the
// ScenarioReader's (config/load_scenario_detail.hpp): load_scenario_sections.cpp,
// load_scenario_parallelism.cpp and load_scenario_framework.cpp.
#include <array>
#include <memory>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/load_scenario_detail.hpp"
#include "config/presets.hpp"

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
  static constexpr std::array<sim_core::NameEntry<Decision>, 18> kEntries{{
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
      {Decision::routing, "routing",
       "expert routing: a benchmark's forced balance against the trained router's loads"},
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

constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;

using detail::ScenarioReader;

}  // namespace

namespace detail {

Scenario ScenarioReader::read() {
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
        for (const auto& set : opts_.system_set) key += fmt::format("\n{}", to_string(set));
        hit = opts_.systems->find(key);
      }
      if (hit) {
        sc_.system = *hit;
      } else {
        const auto r = detail::resolve_preset_or_inline(sys, PresetKind::system, opts_);
        sc_.system = read_system(*r.node);
        sc_.system.profiles = r.profiles;
        sc_.system.set_on_command_line = r.set;
        if (opts_.systems) opts_.systems->put(key, sc_.system);
      }
      if (opts_.headroom_gib > 0) {
        auto& cap = sc_.system.gpu.usable_GiB;
        if (opts_.headroom_gib >= cap.value)
          fail(
              "system",
              fmt::format("--headroom {:g} GiB leaves nothing of the {:g} GiB CUDA reports on a {}",
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

}  // namespace detail

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
