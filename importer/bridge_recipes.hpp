// importer/bridge_recipes.hpp: Megatron-Bridge's performance recipes, by name, at a release
// tag (issue #27 item 1).
//
// Megatron-Bridge's performance launcher (scripts/performance/setup_experiment.py) takes a
// recipe name, a GPU, a compute dtype, a task and a config variant (`-mr deepseek_v3 -g
// gb200 -c fp8_mx --task pretrain -cv v2`) and resolves them to a workload base config:
// the parallel layout, batch sizes, CUDA graphs, recomputation, the MoE dispatcher and the
// 1F1B all-to-all overlap. Which settings a name meant changed from tag to tag.
// importer/recipes/megatron-bridge.json holds every such config at every release tag with
// its commit; tools/bridge_recipes.py regenerates it from a Megatron-Bridge checkout (it
// reads the configs' syntax, imports nothing). The lookup follows the launcher's at the tag:
//   v0.3.0 on   {RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}_{VARIANT}, upper case; then the V1
//               name when V2 is missing; then the name without a variant
//               (scripts/performance/utils/utils.py, get_workload_base_config); the
//               variant defaults to the tag's argument_parser.py default (v2);
//   v0.2.x      {MODEL}_{SIZE}_{GPU}_{DTYPE}_BASE_CONFIG, with _{TASK} before the dtype
//               for sft and lora (-m MODEL -s SIZE; the recipe is MODEL_SIZE).
//   v0.6.0 on  flat recipe functions (src/megatron/bridge/perf_recipes), one a GPU count:
//               the table keys the one the launcher picks without a matching -ng as
//               {RECIPE}_{TASK}_CONFIG_{GPU}_{DTYPE}[_{VARIANT}] and the other counts with
//               _{N}GPU after it; -cv v1 / v2 or none select no variant. The launcher takes
//               the recipe of exactly -ng GPUs first (`exact_gpus`), else that default one,
//               which it then weak-scales (scripts/performance/run_script.py
//               _prepare_perf_recipe, utils/utils.py _recipe_function_name at v0.6.0).
// A tag in the table whose recipes were not read says why, and is refused by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/json_reader.hpp"

namespace moesim::importer {

struct BridgeRecipeQuery {
  std::string tag;                     // "v0.4.0"
  std::string recipe;                  // "deepseek_v3" (v0.2.x: MODEL_SIZE, "deepseek_v3")
  std::string task = "pretrain";       // pretrain | sft | lora
  std::string gpu;                     // gb200, gb300, b200, h100, ...
  std::string dtype = "bf16";          // bf16, fp8_cs, fp8_mx, fp8_sc, nvfp4
  std::optional<std::string> variant;  // v1, v2, large_scale, ...; default: the tag's
  std::optional<std::int64_t> gpus;    // -ng (flat recipes: the recipe of that count first)
};

struct BridgeWorkload {
  std::string tag, commit, date;
  std::string config;              // the name that resolved
  std::string recipe_name;         // the same without a flat recipe's _{N}GPU count
  std::vector<std::string> tried;  // the names tried before it, in order
  config::Json settings;  // every WorkloadBaseConfig field (the tag's defaults under the config's)
  bool flat = false;      // a flat recipe (v0.6.0 on): its fields are final values
  bool exact_gpus = false;  // flat: the recipe is the one of exactly q.gpus GPUs
  std::string function;     // flat: the recipe function's name
  config::Json env;         // flat: the recipe's env_vars (an object; empty before v0.6.0)
};

// Throws InputError("importer/recipes/megatron-bridge.json", ...) for a tag the table lacks
// or did not read, and when no name resolves (the names tried, and the recipe's configs at
// that tag).
BridgeWorkload resolve_bridge_recipe(const BridgeRecipeQuery& q);

// A tag's entry of the table: commit, date, its launcher's flags ("arguments": options,
// dest, type, default, choices, nargs, action, as argument_parser.py declares them), its
// workload configs. InputError for a tag the table lacks.
const config::Json& bridge_tag_table(const std::string& tag);

// The release tags in the table, oldest first.
std::vector<std::string> bridge_recipe_tags();

}  // namespace moesim::importer
