// importer/import_bridge.hpp: a Megatron-Bridge performance command
// (`python scripts/performance/setup_experiment.py -m deepseek -mr deepseek_v3 -g gb200
// -c fp8_mx -ng 256 [-tp .. -pp .. ...] [key=value ...]`) as a scenario (issue #27 item 1).
//
// The launcher builds its training configuration in four steps (scripts/performance/
// run_script.py at v0.3.0 on; setup_experiment.py passes its arguments on unchanged), and
// the import replays them in that order, each setting recorded with where it came from:
//   1. the performance recipe: the family's function for the GPU (configs/<family>/
//      <family>_llm_pretrain.py) over the model recipe (src/megatron/bridge/recipes/...),
//      with the workload config the launcher's names resolve to at the tag
//      (importer/bridge_recipes.hpp) applied by utils/overrides.py's
//      set_workload_base_configs: layout, batch, CUDA graphs, recompute, dispatcher,
//      the 1F1B all-to-all overlap, Megatron-FSDP, NCCL user buffers;
//   2. the Hydra-style `key=value` overrides (set_cli_overrides), on the recipe's
//      ConfigContainer paths (model.*, train.*, ddp.*, optimizer.*, comm_overlap.*, ...);
//   3. the launcher's own flags (set_user_overrides): -tp -pp -cp -vp -ep -et -gb -mb
//      -sl, --cuda_graph_impl/--cuda_graph_scope, --recompute_modules, --moe_a2a_overlap,
//      --moe_flex_dispatcher_backend, --use_megatron_fsdp, --nccl_ub, --use_tokendrop;
//   4. set_post_overrides: the precision-aware optimizer under BF16, the parameter
//      all-gather overlapped with the optimizer step (DP, PP and VP > 1; from v0.3.0 not
//      under MXFP8 or NVFP4), the global batch scaled with -ng when -gb is not given.
// At v0.2.x the Hydra overrides come last (run_script.py:40-50); the per-tag behaviour is the
// "launcher" table of importer/recipes/megatron-bridge-families.json.
// The families' own settings (what step 1's family function and model recipe set beyond
// the workload config: sequence length, router fusion, forced balance, gradient reduction
// dtype, the precision-aware optimizer's dtypes, overlap exceptions, pipeline layouts) are
// data: importer/recipes/megatron-bridge-families.json, each rule with the tags, GPUs and
// dtypes it holds for and the file:line it comes from. A recipe whose family is not in
// that file is refused by name (what resolved, and that its family's settings are not
// tabulated), never imported with guessed settings.
// The launcher's flags are read as its argparse parser at the tag reads them (the flags,
// types, choices and defaults tools/bridge_recipes.py extracted into
// importer/recipes/megatron-bridge.json): long options may be abbreviated, `--flag=value`
// works, every unknown flag is reported at once. Flags that only concern the job (Slurm,
// container mounts, logging, profiling, checkpoints, data paths) are listed as ignored.
// The release: --release, or the container (-i nvcr.io/nvidia/nemo:26.02); its Megatron-
// Bridge tag (config/releases.hpp) picks the recipes and becomes stack.release.
#pragma once

#include <string>
#include <vector>

#include "importer/import.hpp"

namespace moesim::importer {

// True for Megatron-Bridge's performance launchers (scripts/performance/setup_experiment.py,
// run_script.py).
bool is_bridge_launcher(const std::string& entry);
// True for its training launcher (v0.6.0 on): scripts/training/train.sh, which runs
// scripts/training/setup_experiment.py, which runs scripts/training/run_recipe.py.
bool is_bridge_training_launcher(const std::string& entry);

// The flags of the tag's launcher (importer/recipes/megatron-bridge.json) whose effect the
// importer does not know (a regenerated table's new flags), by their first option string.
std::vector<std::string> unclassified_bridge_flags(const std::string& tag);

// `words`: the launcher's arguments (after the program). opts.system may be empty: the
// system preset of -g (h100, b200, b300, gb200-nvl72, gb300-nvl72, vr200-nvl72, r100). opts.gpus,
// when set, must agree with -ng. Throws InputError(opts.source, "-flag" or "key", why).
MegatronImport import_bridge(const std::vector<std::string>& words,
                             const MegatronImportOptions& opts);

// `train.sh --recipe NAME [--nodes N --gpus-per-node G] [-gb ... -tp ...] [KEY=VALUE ...]`
// (importer/bridge_training.cpp): NAME, a benchmark recipe function of the release's tag,
// built as run_recipe.py builds it: its table entry, the common overrides and the Hydra
// ones in order, then the job's world size (nodes x GPUs per node; default the recipe's),
// to which the global batch is weak-scaled by DP unless it was given. Slurm and container
// flags are listed as ignored; a library recipe (--model), a fine-tuning mode and a
// dataset are refused with the reason.
MegatronImport import_bridge_training(const std::vector<std::string>& words,
                                      const MegatronImportOptions& opts);

}  // namespace moesim::importer
