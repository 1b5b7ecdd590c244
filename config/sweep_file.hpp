// config/sweep_file.hpp: sweep files (docs/SWEEP_FORMAT.md): many scenarios from one
// base scenario, a grid of settings and candidate parallel layouts.
//
//   rows = grid points (the cartesian product of the grid's lists, last key fastest)
//          x layout combinations (the product of the `layouts` lists, last key fastest)
//          - the layout combinations that break a layout rule (layout_rules())
//
// A row's id is its position in that order: it depends on the sweep file alone, so
// shards, resumed runs and merges identify rows by it. Reading a sweep file checks the
// file itself (keys, types, the base scenario's JSON, the objective) and throws
// InputError naming the file and JSON path; whether each scenario loads is the row's
// business (a grid point the scenario loader rejects is an `invalid` row, not an error).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/json_reader.hpp"
#include "sim_core/names.hpp"

namespace moesim::config {

// What a sweep ranks its rows by: a metric of `moesim run --json` (days and gpu_hours
// need a token_budget).
enum class SweepObjective {
  tokens_per_s_per_gpu,
  tflops_per_gpu,
  mfu,
  step_time_s,
  peak_memory_gib,
  days,
  gpu_hours,
  days_with_goodput,
  gpu_hours_with_goodput,
  energy_mwh,
  cost_usd
};
const sim_core::NameTable<SweepObjective>& sweep_objective_names();
bool higher_is_better(SweepObjective o);
// days_with_goodput and gpu_hours_with_goodput: the summary's budget columns are then the
// ones with goodput.
bool with_goodput(SweepObjective o);
// days, gpu_hours and the with_goodput ones: only under a token budget.
bool needs_token_budget(SweepObjective o);

// The parallel degrees `layouts` may enumerate, as keys of the scenario's `parallelism`.
inline constexpr std::array<std::string_view, 6> kLayoutKeys{"tp", "pp", "vpp", "ep", "etp", "cp"};

// How `layouts` splits the layers over the pp x vpp virtual stages (layouts.pp_split;
// each layout gets a row per split listed, by default the even one alone):
//   even            the contract's default split (default_layout_text): the decoder layers
//                   as even as possible, the embedding in the first stage and the MTP
//                   layers and the loss in the last on top of their share;
//   embedding_loss  the embedding and the loss (and each MTP layer) counted as one layer
//                   each: the units E, t x layers, m x mtp, L cut in order into stages as
//                   even as possible, earlier stages taking the remainder. Where the units
//                   divide evenly this is Megatron's --account-for-embedding-in-pipeline-
//                   split with --account-for-loss-in-pipeline-split (megatron/core/
//                   transformer/transformer_block.py, get_num_layers_to_build); where they do
//                   not it is the hand-made layout NVIDIA's DeepSeek-V3 recipes pass to
//                   --pipeline-model-parallel-layout ("Et|(tt|)*30L": 61 layers over PP8
//                   VPP4, the journey's final configuration). A layout where it equals the
//                   even split is pruned (rule split_repeats_even).
enum class PipelineSplit { even, embedding_loss };
const sim_core::NameTable<PipelineSplit>& pipeline_split_names();

struct SweepFile {
  std::string file;  // the sweep file (labels errors)
  std::string name;
  std::string description;
  Json base;  // the base scenario, as JSON
  std::string
      base_file;  // where the base was read: labels its errors and anchors its relative paths
  std::vector<std::pair<std::string, std::vector<Json>>> grid;             // dotted path -> values
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> layouts;  // "tp", ... -> values
  std::vector<PipelineSplit> pp_splits{PipelineSplit::even};               // layouts.pp_split
  std::optional<double> token_budget;                                      // tokens to train
  SweepObjective objective = SweepObjective::tokens_per_s_per_gpu;
};

SweepFile read_sweep_file(const std::string& path);
// The same from text; `file` labels errors and anchors a relative base path.
SweepFile read_sweep_text(std::string_view text, const std::string& file);

// A varied value as a SweepPoint holds it: JSON text, strings without quotes.
std::string sweep_value_text(const Json& v);

// One scenario of a sweep.
struct SweepPoint {
  std::int64_t id = 0;
  // The varied values, one per SweepPlan::columns: JSON text, strings without quotes.
  std::vector<std::string> values;
  Json scenario;  // base + grid values + layout
};

struct SweepPlan {
  // The varied dotted paths: `gpus` (always: the cluster size the Pareto front needs), the
  // grid's other keys in file order, then parallelism.<key> for each `layouts` key and
  // parallelism.pp_layout (the default split each layout gets).
  std::vector<std::string> columns;
  std::vector<SweepPoint> points;
  std::int64_t combinations = 0;  // grid points x layout combinations, before the rules
  // Layout combinations dropped, by the first rule each broke (rule order; nonzero only).
  std::vector<std::pair<std::string, std::int64_t>> pruned;
};

SweepPlan expand_sweep(const SweepFile& f);

// The parallel layout rules of the scenario loader (config/load_scenario_parallelism.cpp) that
// `layouts` combinations are checked against before they become rows: Megatron-Core's
// divisibility rules, EP x ETP inside a pipeline stage, the virtual stages' layers, the
// batch over DP and the pipeline schedule's needs. A combination the loader rejects
// for a reason not listed here still becomes a row, `invalid` with the loader's message.
struct LayoutCase {
  std::int64_t gpus = 1, tp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, cp = 1;
  std::int64_t layers = 1, experts = 0, heads = 1, kv_heads = 1, ffn = 0, moe_ffn = 0,
               dense_layers = 0;
  bool gqa = false;
  std::int64_t seq_length = 1, micro_batch_size = 1, global_batch_size = 1;
  std::string schedule;  // as the scenario names it, or empty: the default for vpp
  std::int64_t mtp = 0;
  PipelineSplit split = PipelineSplit::even;
};
struct LayoutRule {
  std::string_view name;         // the key the summary counts it under
  std::string_view description;  // what is broken
  bool (*broken)(const LayoutCase&);
};
std::span<const LayoutRule> layout_rules();

// Megatron's layout grammar for the contract's default split of `layers` decoder
// layers (and `mtp` MTP layers) over pp x vpp virtual stages (schedules/pp_layout.hpp),
// e.g. "Et*8|(t*8|)*6t*7L"; PipelineLayout::parse of it gives PipelineLayout::even.
std::string default_layout_text(std::int64_t layers, std::int64_t mtp, int pp, int vpp);
// The same for a split (PipelineSplit); `even` gives default_layout_text's.
std::string layout_text(PipelineSplit split, std::int64_t layers, std::int64_t mtp, int pp,
                        int vpp);

}  // namespace moesim::config
