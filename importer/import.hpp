// importer/import.hpp: the importer's entry point, its options and its result: a Megatron-LM /
// Megatron-Bridge pretraining command line
// (`pretrain_gpt.py --tensor-model-parallel-size ...`) as a scenario (issue #17 item 1).
//
// A flag that is absent means Megatron's default (argparse defaults of
// megatron/training/arguments.py: the allgather dispatcher, no CUDA graphs, no
// distributed optimizer, gradients reduced in FP32 under --bf16 unless
// --grad-reduce-in-bf16), not moesim's newest stack; the scenario spells every setting
// out. Each flag is one of:
//   modeled   - mapped onto a scenario key (the table in megatron_flags.cpp);
//   ignored   - no effect on step time or memory (logging, data, learning rate,
//               checkpoints): listed in MegatronImport::ignored;
//   refused   - understood but not modeled (FP16, SequentialMLP without
//               --moe-grouped-gemm, partial full recompute, ...): InputError naming the
//               flag, exit 2;
//   unknown   - not in the table: InputError (a typo must not pass silently).
// Settings no Megatron flag carries (the `stack` switches: kernel fusions and host-side
// improvements of the libraries' versions) take the newest stack's value, or with
// --release the release's (stack.release, config/releases.hpp), except where
// the command shows them (--moe-router-fusion; bindpcie / numactl before the command:
// NUMA binding; NVTE_NORM_FWD_USE_CUDNN=1: MXFP8 quantization fused into the norm), and
// are listed in MegatronImport::assumed with the reason.
// The model comes from --model PRESET (shape flags given are checked against it), or
// from the shape flags: a model preset with the same shape is named (the vocabulary comes
// from the tokenizer, which no flag states), else --vocab-size is needed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/json_reader.hpp"

namespace moesim::importer {

struct MegatronImportOptions {
  std::string system;     // system preset
  std::int64_t gpus = 0;  // world size; 0: the script's (torchrun, a wrapper)
  std::optional<std::int64_t> gpus_per_nvlink_domain;
  std::optional<std::string> model;  // model preset
  // A release (config/releases.hpp, "26.02"): the stack switches no flag shows are its,
  // not the newest stack's. "custom" is refused: it needs every switch given.
  std::optional<std::string> release;
  std::string source = "<args>";  // labels errors: the script's path, "<stdin>", "<args>"
  std::map<std::string, std::string> environment;  // variables set before the script runs (--env)
  std::optional<std::int64_t>
      run;  // which of the script's runs (1-based); needed when it starts several
  std::optional<std::string>
      wrapper_root;  // a wrapper's checkout (importer/launch_wrapper.hpp), if not above the script
  std::vector<std::string> source_roots =
      {};  // folders `source` may read beside the script's (ShellOptions)
  // No launch command is known (a Megatron-LM MoE recipe): NUMA binding is not read from one.
  bool no_launcher = false;
};

struct MegatronImport {
  config::Json scenario;
  std::vector<std::string> ignored;                          // flags without a performance effect
  std::vector<std::pair<std::string, std::string>> assumed;  // scenario key, why
  std::vector<std::string> notes;  // what of the script was not evaluated (importer/shell_eval.hpp)
  std::vector<std::pair<std::string, std::string>>
      derived;  // what the script's launcher or wrapper decided, and from what
  // Settings the command gives that change nothing in the scenario, recorded as such in it
  // (config::record_inert_settings).
  std::vector<std::string> recorded;
};

// Megatron-LM's MoE recipe YAML (examples/moe_recipes, importer/moe_recipe.cpp): its ARGS as a
// flag string, the command's environment and its container image.
struct MoeRecipe {
  std::string flags;
  std::map<std::string, std::string> environment;  // ENV_VARS, the variables given winning
  std::optional<std::string> image;
};

// The recipe in `text` when `source` is a .yaml/.yml file; nullopt for any other file (a shell
// script). Throws InputError(source, "ARGS.key", why) on a malformed recipe and on a YAML file
// that is not one.
// `given`: the variables given with --env, which win over ENV_VARS (in `$VAR` substitution and
// in the environment returned).
std::optional<MoeRecipe> read_moe_recipe(const std::string& text, const std::string& source,
                                         const std::map<std::string, std::string>& given);

// `text`: a shell command or script, evaluated as bash would without running anything
// (importer/shell_eval.hpp: variables, arrays, defaults, exports, sourced files next to
// the script, `if` on tests); the Megatron flags are those of the first command with a
// `*.py` word, after it, or of a command starting with `--`; a registered wrapper's call
// (importer/launch_wrapper.hpp: ModelZoo's sbatch_benchmarking.sh) is a run too, expanded
// into the command it would submit; a Megatron-LM MoE recipe (read_moe_recipe) is its flags
// under its environment (a variable given in opts.environment wins). A script that starts several
// runs needs opts.run. Throws InputError(source, "--flag", why); every unknown flag of the command
// in one error.
MegatronImport import_megatron(const std::string& text, const MegatronImportOptions& opts);

}  // namespace moesim::importer
