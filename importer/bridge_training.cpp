// importer/bridge_training.cpp: Megatron-Bridge's training launcher (v0.6.0 on) as a
// scenario (importer/import_bridge.hpp, import_bridge_training).
//
// scripts/training/train.sh runs scripts/training/setup_experiment.py (Slurm: --nodes,
// --gpus-per-node, the container; every flag it does not own goes on), whose job runs
// scripts/training/run_recipe.py: `--recipe NAME` a benchmark recipe function
// (src/megatron/bridge/perf_recipes), the common overrides (-gb -mb -sl -tp -pp -cp -vp
// -ep -etp, turned into Hydra paths before the trailing KEY=VALUE ones, which win), the
// BF16 precision-aware optimizer, and weak scaling of the global batch by DP to the job's
// world unless train.global_batch_size was given (run_recipe.py:135-153, :454-525 at
// v0.6.0; FORMAT as read in tools/bridge_recipes.py's table, "training_arguments"). The
// recipe is the one the performance launcher's table holds under its function's name, so
// the command becomes the performance launcher's for that recipe (its exact GPU count),
// and BridgeImporter::training_launch replaces the launcher's post overrides.
#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "importer/bridge_detail.hpp"
#include "importer/bridge_recipes.hpp"
#include "importer/import_bridge.hpp"

namespace moesim::importer {

using namespace config;

namespace {

enum class Use { run, hydra, ignored, unpriced, refused };
struct TrainingFlag {
  std::vector<std::string_view> names;
  bool takes_value;
  Use use;
  std::string_view what;  // the Hydra path (hydra), the perf flag (run), or why
};

// scripts/training/setup_experiment.py (:45-140) and run_recipe.py (:160-260) at v0.6.0.
const std::vector<TrainingFlag>& training_flags() {
  static const std::vector<TrainingFlag> flags{
      {{"--recipe"}, true, Use::run, ""},
      {{"--nodes"}, true, Use::run, ""},
      {{"--gpus-per-node", "--gpus_per_node"}, true, Use::run, ""},
      {{"--container-image"}, true, Use::run, "-i"},
      {{"--deterministic"}, false, Use::run, "--deterministic"},
      {{"--mode"}, true, Use::run, ""},
      {{"-gb", "--global_batch_size"}, true, Use::hydra, "train.global_batch_size"},
      {{"-mb", "--micro_batch_size"}, true, Use::hydra, "train.micro_batch_size"},
      {{"-sl", "--seq_length"}, true, Use::hydra, "dataset.seq_length"},
      {{"-tp", "--tensor_model_parallel_size"},
       true,
       Use::hydra,
       "model.tensor_model_parallel_size"},
      {{"-pp", "--pipeline_model_parallel_size"},
       true,
       Use::hydra,
       "model.pipeline_model_parallel_size"},
      {{"-cp", "--context_parallel_size"}, true, Use::hydra, "model.context_parallel_size"},
      {{"-vp", "--virtual_pipeline_model_parallel_size"},
       true,
       Use::hydra,
       "model.virtual_pipeline_model_parallel_size"},
      {{"-ep", "--expert_model_parallel_size"},
       true,
       Use::hydra,
       "model.expert_model_parallel_size"},
      {{"-etp", "--expert_tensor_parallel_size"},
       true,
       Use::hydra,
       "model.expert_tensor_parallel_size"},
      {{"--model"},
       true,
       Use::refused,
       "a library recipe (src/megatron/bridge/recipes), not a benchmark one: its settings are "
       "not tabulated (give --recipe with a performance recipe's function name)"},
      {{"--dataset"},
       true,
       Use::refused,
       "Megatron-Bridge refuses a dataset preset for a benchmark recipe "
       "(scripts/training/recipe_metadata.py:227-231 at v0.6.0)"},
      {{"-lmc", "--peak-mem-clk"},
       true,
       Use::unpriced,
       "the job locks the GPUs' memory clock; the system preset's HBM bandwidth stands"},
      {{"--step-func", "--step_func"},
       true,
       Use::ignored,
       "the forward step's registry name (the recipe's own step prices the same)"},
      {{"-ms", "--max_steps"}, true, Use::ignored, "iterations, not a step's time"},
      {{"--lr"}, true, Use::ignored, "the learning rate"},
      {{"--min_lr"}, true, Use::ignored, "the learning rate"},
      {{"--warmup_iters"}, true, Use::ignored, "the learning-rate schedule"},
      {{"--pretrained_checkpoint"}, true, Use::ignored, "checkpoints"},
      {{"--save_dir"}, true, Use::ignored, "checkpoints"},
      {{"--load_dir"}, true, Use::ignored, "checkpoints"},
      {{"--save_interval"}, true, Use::ignored, "checkpoints"},
      {{"--dry-run", "--dry_run", "--submission-dry-run"}, false, Use::ignored, "runs nothing"},
      {{"--dump-env", "--dump_env"}, false, Use::ignored, "prints the environment"},
      {{"--wait"}, false, Use::ignored, "the Slurm job"},
      {{"--no-gpu-resource-request"}, false, Use::ignored, "the Slurm job"},
      {{"--account"}, true, Use::ignored, "the Slurm job"},
      {{"--partition"}, true, Use::ignored, "the Slurm job"},
      {{"--time"}, true, Use::ignored, "the Slurm job"},
      {{"--gres"}, true, Use::ignored, "the Slurm job"},
      {{"--additional-slurm-params"}, true, Use::ignored, "the Slurm job"},
      {{"--mount"}, true, Use::ignored, "the container's mounts"},
      {{"--env"}, true, Use::ignored, "the job's environment (the recipe's own env_vars stand)"},
      {{"--srun-arg"}, true, Use::ignored, "srun's arguments"},
      {{"--experiment-name"}, true, Use::ignored, "the job's name"},
  };
  return flags;
}

const TrainingFlag* find_flag(std::string_view name) {
  for (const auto& f : training_flags())
    for (const auto n : f.names)
      if (n == name) return &f;
  return nullptr;
}

// A benchmark recipe function's name: {recipe}_{task}_{N}gpu_{gpu}_{precision}[_{variant}]
// _config (scripts/training/recipe_metadata.py:40-45 at v0.6.0); precision without its
// underscore (utils/utils.py _PRECISION_NAME_MAP).
struct RecipeName {
  std::string recipe, task, gpu, dtype, variant;
  std::int64_t gpus = 0;
};
std::optional<RecipeName> parse_recipe_name(const std::string& name) {
  static const std::regex re(
      "^(.+)_(pretrain|sft|peft)_([0-9]+)gpu_(h100|b200|b300|gb200|gb300|vr200|r100)_"
      "(bf16|fp8cs|fp8mx|fp8sc|nvfp4)(?:_(.+))?_config$");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  static const std::map<std::string, std::string> dtypes{{"bf16", "bf16"},
                                                         {"fp8cs", "fp8_cs"},
                                                         {"fp8mx", "fp8_mx"},
                                                         {"fp8sc", "fp8_sc"},
                                                         {"nvfp4", "nvfp4"}};
  return RecipeName{m[1], m[2], m[4], dtypes.at(m[5]), m[6], std::stoll(m[3])};
}

// The family folder of the recipe function in the newest tag that exports it.
std::optional<std::string> recipe_family(const std::string& function) {
  const auto tags = bridge_recipe_tags();
  for (auto t = tags.rbegin(); t != tags.rend(); ++t) {
    const Json& e = bridge_tag_table(*t);
    if (!e.contains("recipe_functions")) continue;
    for (const auto& [key, fn] : e.at("recipe_functions").items())
      if (fn == function) return e.at("configs").at(key).at("family").get<std::string>();
  }
  return std::nullopt;
}

[[noreturn]] void refuse_training(const MegatronImportOptions& opts, const std::string& at,
                                  const std::string& why) {
  throw InputError(opts.source, at, why);
}

}  // namespace

MegatronImport import_bridge_training(const std::vector<std::string>& words,
                                      const MegatronImportOptions& opts) {
  std::map<std::string, std::string> given;            // the first name of a flag -> its value
  std::vector<std::string> common, trailing, ignored;  // Hydra: the common flags' first
  std::vector<std::pair<std::string, std::string>> unpriced;
  bool gbs_given = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (!w.starts_with("-")) {  // KEY=VALUE: a Hydra override, after the common ones
      if (w.find('=') == std::string::npos)
        refuse_training(opts, w, "a word that is neither a flag nor a KEY=VALUE override");
      if (w.starts_with("train.global_batch_size=")) gbs_given = true;
      trailing.push_back(w);
      continue;
    }
    const auto eq = w.find('=');
    const std::string name = w.substr(0, eq);
    const TrainingFlag* f = find_flag(name);
    if (!f)
      refuse_training(opts, name,
                      "not a flag of Megatron-Bridge's training launcher (scripts/training/"
                      "setup_experiment.py, run_recipe.py at v0.6.0) that moesim knows");
    std::string value;
    if (f->takes_value) {
      if (eq != std::string::npos)
        value = w.substr(eq + 1);
      else if (i + 1 < words.size())
        value = words[++i];
      else
        refuse_training(opts, name, "needs a value");
    }
    const std::string key(f->names.front());
    switch (f->use) {
      case Use::run:
        given[key] = value;
        break;
      case Use::hydra:  // before the trailing KEY=VALUE overrides, which win (:275-284)
        if (key == "-gb") gbs_given = true;
        common.push_back(fmt::format("{}={}", f->what, value));
        break;
      case Use::ignored:
        ignored.push_back(fmt::format("{} ({})", name, f->what));
        break;
      case Use::unpriced:
        unpriced.emplace_back(name, std::string(f->what));
        break;
      case Use::refused:
        refuse_training(opts, name, std::string(f->what));
    }
  }
  if (!given.count("--recipe"))
    refuse_training(opts, "--recipe",
                    "the training launcher needs --recipe NAME (a benchmark recipe function)");
  const std::string function = given.at("--recipe");
  const auto name = parse_recipe_name(function);
  if (!name)
    refuse_training(
        opts, "--recipe",
        fmt::format("'{}' is not a benchmark recipe's name ({{recipe}}_{{task}}_{{N}}gpu_"
                    "{{gpu}}_{{precision}}[_{{variant}}]_config)",
                    function));
  // --mode: pretrain, sft, lora or dora, inferred from the recipe's name when omitted, and
  // refused when it contradicts the name (v0.6.0 scripts/training/run_recipe.py:292-304,
  // recipe_metadata.py:184-200: lora and dora are the peft task).
  const std::string task = name->task;
  const std::string mode = given.count("--mode") ? given.at("--mode") : task;
  const std::string mode_task = mode == "lora" || mode == "dora" ? "peft" : mode;
  if (mode_task != task)
    refuse_training(opts, "--mode",
                    fmt::format("mode '{}' is incompatible with recipe '{}' (a {} recipe)", mode,
                                function, task));
  // PEFT recipes (lora, dora) need the base checkpoint, which run_recipe.py takes from the
  // recipe's checkpoint settings; moesim maps LoRA from the performance launcher only.
  if (task == "peft")
    refuse_training(opts, given.count("--mode") ? "--mode" : "--recipe",
                    fmt::format("{}: PEFT recipes through the training launcher are not mapped "
                                "(their base checkpoint comes from the recipe's checkpoint "
                                "settings); import the performance launcher's --task {} "
                                "--pretrained_checkpoint DIR instead",
                                mode, mode == "dora" ? "peft" : "lora/peft"));
  const auto family = recipe_family(function);
  if (!family)
    refuse_training(opts, "--recipe",
                    fmt::format("'{}' is not a recipe of the Megatron-Bridge tags read "
                                "(importer/recipes/megatron-bridge.json, v0.6.0 on)",
                                function));
  // The world: nodes x GPUs per node (setup_experiment.py:270-282); else --gpus; else the
  // recipe's own count, as a dry run takes it.
  std::int64_t world = name->gpus;
  const auto integer = [&](const std::string& flag) {
    try {
      std::size_t used = 0;
      const auto v = std::stoll(given.at(flag), &used);
      if (used == given.at(flag).size() && v > 0) return v;
    } catch (const std::exception&) {
    }
    refuse_training(opts, flag, fmt::format("'{}' is not a positive integer", given.at(flag)));
  };
  std::string world_why = fmt::format("{}: the recipe's own GPU count (no --nodes)", world);
  if (given.count("--nodes") || given.count("--gpus-per-node")) {
    if (!given.count("--gpus-per-node"))
      refuse_training(opts, "--nodes",
                      "setup_experiment.py needs --gpus-per-node with --nodes (:193-194)");
    const std::int64_t nodes = given.count("--nodes") ? integer("--nodes") : 1;
    world = nodes * integer("--gpus-per-node");
    world_why = fmt::format("{}: --nodes {} x --gpus-per-node {}", world, nodes,
                            given.at("--gpus-per-node"));
  } else if (opts.gpus > 0) {
    world = opts.gpus;
    world_why = fmt::format("{}: --gpus", world);
  }
  if (opts.gpus > 0 && opts.gpus != world)
    refuse_training(opts, "--gpus",
                    fmt::format("the command runs {} GPUs; --gpus says {}", world, opts.gpus));
  // The performance launcher's command for the same recipe, of its exact GPU count.
  std::vector<std::string> perf{
      "-m",      *family, "-mr",       name->recipe, "-g",
      name->gpu, "-c",    name->dtype, "-ng",        std::to_string(name->gpus)};
  if (!name->variant.empty()) perf.insert(perf.end(), {"-cv", name->variant});
  // run_recipe.py gives SFT benchmark recipes mock data by default (:397-415, :474-475).
  if (task != "pretrain") perf.insert(perf.end(), {"--task", task});
  if (given.count("--container-image"))
    perf.insert(perf.end(), {"-i", given.at("--container-image")});
  if (given.count("--deterministic")) perf.push_back("--deterministic");
  perf.insert(perf.end(), common.begin(), common.end());
  perf.insert(perf.end(), trailing.begin(), trailing.end());
  MegatronImportOptions o = opts;
  o.gpus = 0;
  MegatronImport out = detail::import_bridge_words(perf, o, world, gbs_given);
  out.derived.insert(
      out.derived.begin(),
      {"recipe",
       fmt::format("{}: Megatron-Bridge's training launcher (scripts/training/run_recipe.py "
                   "--recipe) builds it as the performance launcher's table holds it",
                   function)});
  out.derived.emplace_back("gpus", world_why);
  out.ignored.insert(out.ignored.end(), ignored.begin(), ignored.end());
  out.assumed.insert(out.assumed.end(), unpriced.begin(), unpriced.end());
  return out;
}

}  // namespace moesim::importer
