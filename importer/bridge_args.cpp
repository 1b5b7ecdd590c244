// importer/bridge_args.cpp: the Megatron-Bridge launcher's flags as its argparse parser at a
// tag reads them (importer/bridge_detail.hpp): the registry of every dest's effect on the
// import, argparse's matching (exact, --flag=value, unambiguous prefixes), each value
// through the flag's `type`, nargs, actions and choices, and the Hydra key=value overrides
// set aside in order.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "importer/bridge_detail.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

// ---- the launcher's argparse parser at a tag --------------------------------------------

namespace {

// Every dest of scripts/performance/argument_parser.py at v0.2.0-v0.6.0. A dest the
// table has and this registry lacks is refused as unknown to moesim (a new tag's flag
// must be classified before it imports).
const std::map<std::string_view, DestRule>& dest_rules() {
  static const std::map<std::string_view, DestRule> m{
      // the run itself: read below
      {"model_family_name", {Effect::modeled, ""}},
      {"model_recipe_name", {Effect::modeled, ""}},
      {"model_name", {Effect::modeled, ""}},
      {"model_size", {Effect::modeled, ""}},
      {"gpu", {Effect::modeled, ""}},
      {"compute_dtype", {Effect::modeled, ""}},
      {"task", {Effect::modeled, ""}},
      {"num_gpus", {Effect::modeled, ""}},
      {"gpus_per_node",
       {Effect::ignored, "the job's GPUs per node for Slurm: the system preset's node stands"}},
      {"config_variant", {Effect::modeled, ""}},
      {"container_image", {Effect::modeled, ""}},
      {"domain", {Effect::modeled, ""}},
      {"tensor_model_parallel_size", {Effect::modeled, ""}},
      {"pipeline_model_parallel_size", {Effect::modeled, ""}},
      {"context_parallel_size", {Effect::modeled, ""}},
      {"virtual_pipeline_model_parallel_size", {Effect::modeled, ""}},
      {"expert_model_parallel_size", {Effect::modeled, ""}},
      {"expert_tensor_parallel_size", {Effect::modeled, ""}},
      {"global_batch_size", {Effect::modeled, ""}},
      {"micro_batch_size", {Effect::modeled, ""}},
      {"seq_length", {Effect::modeled, ""}},
      {"use_megatron_fsdp", {Effect::modeled, ""}},
      {"nccl_ub", {Effect::modeled, ""}},
      {"cuda_graph_impl", {Effect::modeled, ""}},
      {"cuda_graph_scope", {Effect::modeled, ""}},
      {"moe_a2a_overlap", {Effect::modeled, ""}},
      {"recompute_num_layers", {Effect::modeled, ""}},
      {"activation_offload_layers", {Effect::modeled, ""}},
      {"recompute_modules", {Effect::modeled, ""}},
      {"moe_flex_dispatcher_backend", {Effect::modeled, ""}},
      {"use_tokendrop", {Effect::modeled, ""}},
      {"hidden_size", {Effect::modeled, ""}},
      {"num_layers", {Effect::modeled, ""}},
      {"first_k_dense_replace", {Effect::modeled, ""}},
      {"pipeline_model_parallel_layout", {Effect::modeled, ""}},
      {"optimizer_type",
       {Effect::ignored,
        "read by the Kimi family's code only, whose Muon path is tabulated (adam is refused "
        "there: its refused_flags in importer/recipes/megatron-bridge-families.json)"}},
      {"tokenizer_type", {Effect::modeled, ""}},
      {"vocab_size",
       {Effect::ignored,
        "NullTokenizer's vocabulary (refused with it); the model preset's vocabulary "
        "stands"}},
      {"data", {Effect::modeled, ""}},  // BridgeImporter::task()
      // the job, not the training
      {"account", {Effect::ignored, "Slurm account"}},
      {"partition", {Effect::ignored, "Slurm partition"}},
      {"time_limit", {Effect::ignored, "job time limit"}},
      {"gres", {Effect::ignored, "Slurm resources"}},
      {"additional_slurm_params", {Effect::ignored, "Slurm parameters"}},
      {"custom_srun_args", {Effect::ignored, "srun arguments"}},
      {"custom_bash_cmds", {Effect::ignored, "commands run before the job"}},
      {"custom_mounts", {Effect::ignored, "container mounts"}},
      {"custom_env_vars",
       {Effect::ignored,
        "environment variables of the job: not read (NCCL and library "
        "switches are the release's)"}},
      {"env",
       {Effect::ignored,
        "environment variables of the job: not read (NCCL and library switches are the "
        "release's)"}},
      {"packager", {Effect::ignored, "how the code reaches the job"}},
      {"log_dir", {Effect::ignored, "logs"}},
      {"nemo_home", {Effect::ignored, "a cache folder"}},
      {"hf_token", {Effect::ignored, "Hugging Face access"}},
      {"offline", {Effect::ignored, "Hugging Face access"}},
      {"detach", {Effect::ignored, "how the launcher waits"}},
      {"max_retries", {Effect::ignored, "retries of a failed job"}},
      {"dryrun", {Effect::ignored, "prints the job"}},
      {"wandb_key", {Effect::ignored, "logging"}},
      {"wandb_prj_name", {Effect::ignored, "logging"}},
      {"wandb_exp_name", {Effect::ignored, "logging"}},
      {"wandb_project_name", {Effect::ignored, "logging"}},
      {"wandb_entity_name", {Effect::ignored, "logging"}},
      {"wandb_experiment_name", {Effect::ignored, "logging"}},
      {"wandb_save_dir", {Effect::ignored, "logging"}},
      {"save_config_filepath", {Effect::ignored, "logging"}},
      {"dump_env", {Effect::ignored, "logging"}},
      {"list_config_variants", {Effect::ignored, "prints the variants"}},
      {"enable_nsys",
       {Effect::ignored,
        "profiling (a profiled run is slower; moesim predicts the unprofiled one)"}},
      {"export_nsys_sqlite", {Effect::ignored, "profiling"}},
      {"nsys_trace", {Effect::ignored, "profiling"}},
      {"nsys_extra_args", {Effect::ignored, "profiling"}},
      {"pytorch_profiler", {Effect::ignored, "profiling"}},
      {"profiling_start_step", {Effect::ignored, "profiling"}},
      {"profiling_stop_step", {Effect::ignored, "profiling"}},
      {"record_memory_history", {Effect::ignored, "profiling"}},
      {"profiling_gpu_metrics", {Effect::ignored, "profiling"}},
      {"profiling_ranks", {Effect::ignored, "profiling"}},
      {"max_steps", {Effect::ignored, "steps to run (moesim predicts one step)"}},
      {"lr", {Effect::ignored, "learning rate"}},
      {"min_lr", {Effect::ignored, "learning rate"}},
      {"warmup_iters", {Effect::ignored, "learning rate"}},
      {"pretrained_checkpoint", {Effect::ignored, "checkpoints"}},
      {"megatron_ckpt", {Effect::ignored, "checkpoints"}},
      {"save_dir", {Effect::ignored, "checkpoints"}},
      {"load_dir", {Effect::ignored, "checkpoints"}},
      {"save_interval",
       {Effect::ignored,
        "checkpoints (their cost is the goodput model's: goodput.checkpoint_interval_s)"}},
      {"most_recent_k", {Effect::ignored, "checkpoints"}},
      {"dataset_paths", {Effect::ignored, "data paths"}},
      {"dataset_root", {Effect::ignored, "data paths"}},
      {"index_mapping_dir", {Effect::ignored, "data paths"}},
      {"dataset_name", {Effect::ignored, "data paths"}},
      {"head_only", {Effect::ignored, "data"}},
      {"c4_root", {Effect::ignored, "data paths"}},
      {"c4_train_shards", {Effect::ignored, "data"}},
      {"diffusion_dataset_path", {Effect::ignored, "data paths"}},
      {"tokenizer_model", {Effect::ignored, "the tokenizer's files"}},
      {"distributed_timeout_minutes", {Effect::ignored, "a timeout"}},
      {"is_long_convergence_run", {Effect::ignored, "the launcher's checks"}},
      {"retry_on_testing_failure", {Effect::ignored, "the launcher's checks"}},
      {"golden_values_path", {Effect::ignored, "the launcher's checks"}},
      {"timing_threshold", {Effect::ignored, "the launcher's checks"}},
      {"skip_first_percent_time", {Effect::ignored, "the launcher's checks"}},
      {"correlation_threshold", {Effect::ignored, "the launcher's checks"}},
      {"high_loss_tolerance", {Effect::ignored, "the launcher's checks"}},
      {"medium_loss_tolerance", {Effect::ignored, "the launcher's checks"}},
      {"low_loss_tolerance", {Effect::ignored, "the launcher's checks"}},
      {"final_loss_tolerance", {Effect::ignored, "the launcher's checks"}},
      {"max_outlier_ratio", {Effect::ignored, "the launcher's checks"}},
      {"outlier_threshold", {Effect::ignored, "the launcher's checks"}},
      {"skip_first_percent_loss", {Effect::ignored, "the launcher's checks"}},
      {"memory_threshold", {Effect::ignored, "the launcher's checks"}},
      {"eval_time_start_step", {Effect::ignored, "the launcher's checks"}},
      {"eval_time_end_step", {Effect::ignored, "the launcher's checks"}},
      {"dgxc_cluster", {Effect::ignored, "the cluster's API"}},
      {"dgxc_base_url", {Effect::ignored, "the cluster's API"}},
      {"dgxc_kube_apiserver_url", {Effect::ignored, "the cluster's API"}},
      {"dgxc_app_id", {Effect::ignored, "the cluster's API"}},
      {"dgxc_app_secret", {Effect::ignored, "the cluster's API"}},
      {"dgxc_project_name", {Effect::ignored, "the cluster's API"}},
      {"dgxc_pvc_claim_name", {Effect::ignored, "the cluster's API"}},
      {"dgxc_pvc_mount_path", {Effect::ignored, "the cluster's API"}},
      {"csp", {Effect::ignored, "the cloud"}},
      // accepted, effect not priced
      {"enable_vboost",
       {Effect::unpriced,
        "the GPU's voltage boost: moesim's clocks are the system profile's "
        "sustained clock"}},
      {"lock_gpu_freq",
       {Effect::unpriced,
        "a locked GPU clock: moesim's clocks are the system profile's sustained "
        "clock"}},
      {"deterministic", {Effect::modeled, ""}},
      {"enable_pct_binding",
       {Effect::unpriced, "the launcher's CPU binding: the release's NUMA binding stands"}},
      // understood, not modeled
      {"use_recipes",
       {Effect::refused,
        "the library recipe instead of the performance recipe: its settings are "
        "not tabulated (importer/recipes/megatron-bridge-families.json holds the "
        "performance recipes')"}},
      {"packed_sequence", {Effect::refused, "packed sequences (fine-tuning data): not modeled"}},
      // v0.6.0 (scripts/performance/argument_parser.py:243, :450, :728)
      {"num_moe_experts",
       {Effect::refused,
        "changes the model's shape (model.num_moe_experts): give the model as a scenario "
        "(moesim's model presets are the published shapes)"}},
      {"preempt_time", {Effect::ignored, "the Slurm job's preemption signal time"}},
      {"peak_mem_clk",
       {Effect::unpriced,
        "the job locks the GPUs' memory clock (the vr200 recipes' 4752 MHz); the system "
        "preset's HBM bandwidth stands"}},
  };
  // kubeflow_* (the cluster's API) are matched by prefix below.
  return m;
}

}  // namespace

std::optional<DestRule> dest_rule(const std::string& dest) {
  if (dest.starts_with("kubeflow_")) return DestRule{Effect::ignored, "the cluster's API"};
  const auto it = dest_rules().find(dest);
  if (it == dest_rules().end()) return std::nullopt;
  return it->second;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    const auto next = s.find(sep, at);
    out.push_back(s.substr(at, next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return out;
}

// Python's int() and float(), as argparse's `type` applies them: a sign and surrounding blanks
// are allowed (hence stoll/stod, not the from_chars the Megatron-LM flags use).
std::optional<std::int64_t> to_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const long long v = std::stoll(s, &used, 10);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const double v = std::stod(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

namespace {

// One value through the flag's argparse `type` (its source text, as the table holds it).
// Returns the value or why it is refused.
std::variant<Json, std::string> convert(const Json& arg, const std::string& text) {
  const std::string type = arg.value("type", std::string("str"));
  if (type == "str" || type == "parse_additional_slurm_params" || type == "parse_kv" ||
      type == "to_dict")
    return Json(text);
  if (type == "lower_str") return Json(lower(text));
  if (type == "int" || type == "lambda x: int(x) if x is not None else None") {
    if (auto v = to_int(text)) return Json(*v);
    return fmt::format("'{}' is not an integer", text);
  }
  if (type == "lambda x: None if x == 'None' else int(x)") {
    if (text == "None") return Json(nullptr);
    if (auto v = to_int(text)) return Json(*v);
    return fmt::format("'{}' is not an integer or None", text);
  }
  if (type == "lambda x: None if x == 'None' else x")
    return text == "None" ? Json(nullptr) : Json(text);
  if (type == "float") {
    if (auto v = to_double(text)) return Json(*v);
    return fmt::format("'{}' is not a number", text);
  }
  if (type == "bool_arg") {
    const std::string l = lower(text);
    if (l == "true" || l == "1" || l == "t" || l == "yes" || l == "y") return Json(true);
    if (l == "false" || l == "0" || l == "f" || l == "no" || l == "n") return Json(false);
    return fmt::format("'{}' is not a boolean (true/false, 1/0, yes/no)", text);
  }
  if (type == "list_of_strings" || type == "is_cuda_graph_scope_valid")
    return Json(split(text, ','));
  if (type == "list_of_ints") {
    Json out = Json::array();
    for (const auto& p : split(text, ',')) {
      if (auto v = to_int(p))
        out.push_back(*v);
      else
        return fmt::format("'{}' is not a comma-separated list of integers", text);
    }
    return out;
  }
  if (type == "is_cuda_graph_impl_valid") return Json(text);
  return fmt::format("moesim does not read this flag's type ({})", type);
}

// argparse's matching: exact, `--flag=value`, or an unambiguous prefix of a long option.
const Json* find_argument(const Json& arguments, const std::string& word, std::string& why) {
  const Json* prefix_hit = nullptr;
  int prefix_hits = 0;
  for (const auto& a : arguments) {
    for (const auto& f : a.at("flags")) {
      const std::string flag = f.get<std::string>();
      if (flag == word) return &a;
      if (word.starts_with("--") && word.size() > 2 && flag.starts_with(word)) {
        if (prefix_hit != &a) ++prefix_hits;
        prefix_hit = &a;
      }
    }
  }
  if (prefix_hits == 1) return prefix_hit;
  if (prefix_hits > 1) why = "ambiguous abbreviation";
  return nullptr;
}

}  // namespace

ParsedArgs parse_args(const std::vector<std::string>& words, const Json& tag,
                      const std::string& source) {
  ParsedArgs out;
  const Json& arguments = tag.at("arguments");
  std::vector<std::string> unknown, bad;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    if (!word.starts_with("-")) {
      const auto eq = word.find('=');
      if (eq != std::string::npos && eq > 0) {  // Hydra: key=value, +key=value
        std::string key = word.substr(0, eq);
        if (key.starts_with("+")) key = key.substr(key.starts_with("++") ? 2 : 1);
        out.hydra.emplace_back(key, word.substr(eq + 1));
        continue;
      }
      unknown.push_back(word);
      continue;
    }
    std::optional<std::string> inline_value;
    if (const auto eq = word.find('='); eq != std::string::npos) {
      inline_value = word.substr(eq + 1);
      word = word.substr(0, eq);
    }
    std::string why;
    const Json* a = find_argument(arguments, word, why);
    if (!a) {
      std::string shown = why.empty() ? word : fmt::format("{} ({})", word, why);
      // Its values, as argparse's parse_known_args leaves them with it.
      while (!inline_value && i + 1 < words.size() && !words[i + 1].starts_with("-") &&
             words[i + 1].find('=') == std::string::npos)
        shown += " " + words[++i];
      unknown.push_back(shown);
      continue;
    }
    const std::string dest = a->at("dest").get<std::string>();
    out.flag_of[dest] = word;
    const std::string action = a->value("action", std::string());
    if (action == "store_true" || action == "store_false") {
      if (inline_value) bad.push_back(fmt::format("{} takes no value", word));
      out.given[dest] = (action == "store_true");
      continue;
    }
    const std::string nargs =
        a->contains("nargs") && a->at("nargs").is_string() ? a->at("nargs").get<std::string>() : "";
    std::vector<std::string> texts;
    if (inline_value) {
      texts.push_back(*inline_value);
    } else if (nargs == "*" || nargs == "+" || nargs == "?") {
      while (i + 1 < words.size() &&
             !words[i + 1].starts_with("-")) {  // argparse takes key=value too
        texts.push_back(words[++i]);
        if (nargs == "?") break;
      }
      if (nargs == "+" && texts.empty())
        bad.push_back(fmt::format("{} expects at least one value", word));
    } else {
      if (i + 1 >= words.size()) {
        bad.push_back(fmt::format("{} expects a value", word));
        continue;
      }
      texts.push_back(words[++i]);
    }
    Json value;
    if (nargs == "*" || nargs == "+" || action == "append") {
      value = Json::array();
      for (const auto& t : texts) {
        auto v = convert(*a, t);
        if (auto* e = std::get_if<std::string>(&v))
          bad.push_back(fmt::format("{}: {}", word, *e));
        else
          value.push_back(std::get<Json>(v));
      }
      if (action == "append" && out.given.contains(dest) && out.given[dest].is_array()) {
        for (auto& v : value) out.given[dest].push_back(v);
        continue;
      }
    } else if (texts.empty()) {
      value = nullptr;  // nargs='?' without a value: argparse's const (None in these parsers)
    } else {
      auto v = convert(*a, texts.front());
      if (auto* e = std::get_if<std::string>(&v)) {
        bad.push_back(fmt::format("{}: {}", word, *e));
        continue;
      }
      value = std::get<Json>(v);
    }
    if (a->contains("choices") && a->at("choices").is_array() && !value.is_null()) {
      const Json& choices = a->at("choices");
      const auto ok = [&](const Json& v) {
        return std::find(choices.begin(), choices.end(), v) != choices.end();
      };
      const bool fine = value.is_array() ? std::all_of(value.begin(), value.end(), ok) : ok(value);
      if (!fine)
        bad.push_back(fmt::format("{} {}: not one of {}", word, value.dump(), choices.dump()));
    }
    out.given[dest] = value;
  }
  if (!unknown.empty())
    throw InputError(
        source, unknown.front(),
        fmt::format(
            "not a flag of Megatron-Bridge {}'s launcher (scripts/performance/argument_parser.py "
            "@ {}): {}",
            tag.at("tag").get<std::string>(), tag.at("commit").get<std::string>().substr(0, 10),
            fmt::join(unknown, ", ")));
  if (!bad.empty()) {
    std::string at = split(bad.front(), ' ').front();
    if (at.ends_with(":")) at.pop_back();
    throw InputError(source, at, fmt::format("{}", fmt::join(bad, "; ")));
  }
  return out;
}

}  // namespace moesim::importer::detail
