#include "importer/import_bridge.hpp"

#include "importer/recipes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/releases.hpp"
#include "importer/bridge_recipes.hpp"
#include "importer/pipeline_split.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

constexpr const char* kFamilies = "importer/recipes/megatron-bridge-families.json";

const Json& families() {
  return recipe_table("megatron-bridge-families");
}

bool contains(const Json& list, const std::string& v) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const Json& x) { return x.is_string() && x.get<std::string>() == v; });
}

// ---- the launcher's argparse parser at a tag --------------------------------------------

// How a flag's dest affects the import: read by the code below (modeled), or why not.
enum class Effect { modeled, ignored, unpriced, refused };
struct DestRule {
  Effect effect;
  std::string_view why;  // ignored / unpriced / refused: the reason
};

// Every dest of scripts/performance/argument_parser.py at v0.2.0-v0.5.1. A dest the
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
       {Effect::ignored, "read by the Kimi family only; the families tabulated train with Adam"}},
      {"tokenizer_type", {Effect::modeled, ""}},
      {"vocab_size",
       {Effect::ignored,
        "NullTokenizer's vocabulary (refused with it); the model preset's vocabulary "
        "stands"}},
      {"data",
       {Effect::ignored, "the dataset: priced alike (mock or real tokens of the same length)"}},
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
  };
  // kubeflow_* (the cluster's API) are matched by prefix below.
  return m;
}

std::optional<DestRule> dest_rule(const std::string& dest) {
  if (dest.starts_with("kubeflow_")) return DestRule{Effect::ignored, "the cluster's API"};
  const auto it = dest_rules().find(dest);
  if (it == dest_rules().end()) return std::nullopt;
  return it->second;
}

struct ParsedArgs {
  std::map<std::string, Json> given;           // dest -> value, for flags on the command
  std::map<std::string, std::string> flag_of;  // dest -> the flag as written
  std::vector<std::pair<std::string, std::string>> hydra;  // key=value overrides, in order
};

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

// ---- the scenario under construction ------------------------------------------------------

struct Builder {
  Json sc = Json::object();
  std::map<std::string, std::string> origin;  // scenario key -> where its value came from

  static std::pair<std::string, std::string> split_key(const std::string& key) {
    const auto dot = key.find('.');
    return {key.substr(0, dot), dot == std::string::npos ? std::string() : key.substr(dot + 1)};
  }
  void set(const std::string& key, Json v, std::string why) {
    const auto [sec, k] = split_key(key);
    if (k.empty())
      sc[sec] = std::move(v);
    else
      sc[sec][k] = std::move(v);
    origin[key] = std::move(why);
  }
  void erase(const std::string& key) {
    const auto [sec, k] = split_key(key);
    if (sc.contains(sec)) sc[sec].erase(k);
    origin.erase(key);
  }
  const Json* get(const std::string& key) const {
    const auto [sec, k] = split_key(key);
    if (!sc.contains(sec) || !sc.at(sec).contains(k)) return nullptr;
    return &sc.at(sec).at(k);
  }
  std::int64_t integer(const std::string& key, std::int64_t fallback) const {
    const Json* v = get(key);
    return v && v->is_number_integer() ? v->get<std::int64_t>() : fallback;
  }
  bool flag(const std::string& key, bool fallback) const {
    const Json* v = get(key);
    return v && v->is_boolean() ? v->get<bool>() : fallback;
  }
};

// The run the command asks for, as the launcher reads it.
struct Query {
  std::string tag, family, recipe, gpu, dtype, task, variant;
  std::int64_t gpus = 0;
};

bool rule_applies(const Json& r, const Query& q) {
  if (r.contains("recipes") && !contains(r.at("recipes"), q.recipe)) return false;
  if (r.contains("tags") && !contains(r.at("tags"), q.tag)) return false;
  if (r.contains("gpu") && !contains(r.at("gpu"), q.gpu)) return false;
  if (r.contains("dtype") && !contains(r.at("dtype"), q.dtype)) return false;
  if (r.contains("task") && r.at("task").get<std::string>() != q.task) return false;
  if (r.contains("variant") && !contains(r.at("variant"), q.variant)) return false;
  return true;
}

const Json* family_entry(const std::string& family) {
  for (const auto& f : families().at("families"))
    if (f.at("family").get<std::string>() == family) return &f;
  return nullptr;
}

// ---- Hydra overrides: the recipe's ConfigContainer paths --------------------------------

// How a ConfigContainer path reaches the scenario: the scenario key and a conversion,
// or why it is ignored (no effect on step time or memory). Paths not here are refused.
struct HydraPath {
  std::string_view path;
  std::string_view key;   // scenario key ("" = ignored, see why)
  std::string_view kind;  // the conversion BridgeImporter::hydra() applies; redirect / true_only /
                          // unmodeled: refused (why)
  std::string_view why = {};
};

const std::vector<HydraPath>& hydra_paths() {
  static const std::vector<HydraPath> v{
      {"model.tensor_model_parallel_size", "parallelism.tp", "size"},
      {"model.pipeline_model_parallel_size", "parallelism.pp", "size"},
      {"model.context_parallel_size", "parallelism.cp", "size"},
      {"model.virtual_pipeline_model_parallel_size", "parallelism.vpp", "vpp"},
      {"model.expert_model_parallel_size", "parallelism.ep", "size"},
      {"model.expert_tensor_parallel_size", "bridge.etp", "size_or_null"},
      {"model.sequence_parallel", "parallelism.sequence_parallel", "bool"},
      {"model.pipeline_model_parallel_layout", "parallelism.pp_layout", "string"},
      {"model.seq_length", "training.seq_length", "size"},
      {"dataset.sequence_length", "bridge.dataset_seq_length", "size"},
      {"dataset.seq_length", "bridge.dataset_seq_length", "size"},
      {"train.global_batch_size", "training.global_batch_size", "size"},
      {"train.micro_batch_size", "training.micro_batch_size", "size"},
      {"model.mtp_num_layers", "training.mtp_layers", "int_or_zero"},
      {"model.moe_router_force_load_balancing", "bridge.force_balance", "bool"},
      {"model.moe_token_dispatcher_type", "framework.dispatcher", "dispatcher"},
      {"model.moe_flex_dispatcher_backend", "framework.dispatcher", "backend"},
      {"model.moe_hybridep_num_sms", "bridge.hybridep_sms", "size"},
      {"model.moe_deepep_num_sms", "bridge.deepep_sms", "size"},
      {"model.cuda_graph_impl", "bridge.cuda_graph_impl", "string"},
      {"model.cuda_graph_scope", "bridge.cuda_graph_scope", "scope"},
      {"model.recompute_modules", "framework.recompute_modules", "list"},
      {"model.moe_router_fusion", "stack.router_fusion", "bool"},
      {"model.moe_expert_capacity_factor", "training.token_drop", "capacity"},
      {"model.cross_entropy_fusion_impl", "framework.cross_entropy", "string"},
      {"comm_overlap.tp_comm_overlap", "framework.tp_comm_overlap", "bool"},
      {"comm_overlap.overlap_moe_expert_parallel_comm", "framework.moe_a2a_overlap", "bool"},
      {"comm_overlap.delay_wgrad_compute", "framework.delay_wgrad_compute", "bool"},
      {"comm_overlap.overlap_grad_reduce", "framework.overlap_grad_reduce", "bool"},
      {"comm_overlap.overlap_param_gather", "framework.overlap_param_gather", "bool"},
      {"comm_overlap.overlap_param_gather_with_optimizer_step",
       "framework.overlap_param_gather_with_optimizer_step", "bool"},
      // Unset, CommOverlapConfig aligns at PP > 1 and VP > 1 (comm_overlap.py
      // _get_optimizer_overlap_cfgs), as the loader does under the interleaved schedule.
      {"comm_overlap.align_param_gather", "framework.align_param_gather", "bool"},
      // Paths Bridge sets again at setup from another one: refused, naming the one to give.
      {"ddp.overlap_grad_reduce", "", "redirect",
       "comm_overlap.overlap_grad_reduce (CommOverlapConfig sets the DDP's at setup)"},
      {"ddp.overlap_param_gather", "", "redirect",
       "comm_overlap.overlap_param_gather (CommOverlapConfig sets the DDP's at setup)"},
      {"ddp.grad_reduce_in_fp32", "", "redirect",
       "mixed_precision.grad_reduce_in_fp32 (the mixed-precision config sets the DDP's at setup)"},
      {"optimizer.overlap_param_gather_with_optimizer_step", "", "redirect",
       "comm_overlap.overlap_param_gather_with_optimizer_step (CommOverlapConfig resets the "
       "optimizer's at setup)"},
      {"ddp.use_distributed_optimizer", "framework.distributed_optimizer", "bool"},
      {"optimizer.use_distributed_optimizer", "framework.distributed_optimizer", "bool"},
      {"mixed_precision.grad_reduce_in_fp32", "bridge.grad_reduce_in_fp32", "bool"},
      {"ddp.use_megatron_fsdp", "parallelism.fsdp", "bool"},
      {"ddp.bucket_size", "framework.ddp_bucket_size", "size_or_null"},
      {"optimizer.use_precision_aware_optimizer", "bridge.precision_aware_optimizer", "bool"},
      {"optimizer.main_grads_dtype", "", "unmodeled",
       "the optimizer's own main-gradient dtype is not modeled: moesim's follows the DDP gradient "
       "buffer, "
       "mixed_precision.grad_reduce_in_fp32"},
      {"optimizer.exp_avg_dtype", "bridge.exp_avg_dtype", "torch_dtype"},
      {"optimizer.exp_avg_sq_dtype", "bridge.exp_avg_sq_dtype", "torch_dtype"},
      {"mixed_precision.fp8_param_gather", "framework.fp8_param_gather", "bool"},
      {"mixed_precision.fp8_param", "framework.fp8_param_gather", "bool"},
      // no effect on step time or memory
      {"train.train_iters", "", "", "steps to run"},
      {"train.eval_iters", "", "", "evaluation"},
      {"train.eval_interval", "", "", "evaluation"},
      {"train.manual_gc", "", "", "garbage collection timing"},
      {"train.manual_gc_interval", "", "", "garbage collection timing"},
      {"logger.", "", "", "logging"},
      {"checkpoint.", "", "", "checkpoints"},
      {"scheduler.", "", "", "learning rate"},
      {"profiling.", "", "", "profiling"},
      {"rerun_state_machine.", "", "", "checks"},
      {"rng.", "", "", "seeds"},
      {"tokenizer.tokenizer_model", "", "", "the tokenizer's files"},
      {"dataset.num_workers", "", "", "data loading"},
      {"dataset.data_path", "", "", "data paths"},
      {"dataset.blend", "", "", "data"},
      {"dataset.split", "", "", "data"},
      {"optimizer.lr", "", "", "learning rate"},
      {"optimizer.min_lr", "", "", "learning rate"},
      {"optimizer.weight_decay", "", "", "regularization"},
      {"optimizer.clip_grad", "", "", "clipping threshold"},
      {"optimizer.adam_beta1", "", "", "Adam's constants"},
      {"optimizer.adam_beta2", "", "", "Adam's constants"},
      {"optimizer.adam_eps", "", "", "Adam's constants"},
      {"ddp.check_for_nan_in_grad", "", "", "checks"},
      {"ddp.check_for_large_grads", "", "", "checks"},
      {"model.apply_rope_fusion", "", "true_only",
       "RoPE fusion off: not modeled (every recipe moesim prices fuses it)"},
      {"dist.", "", "", "process group setup"},
  };
  return v;
}

const HydraPath* hydra_path(const std::string& key) {
  for (const auto& h : hydra_paths())
    if (h.path == key || (h.path.ends_with(".") && key.starts_with(h.path))) return &h;
  return nullptr;
}

// A Hydra value: null/None, true/false, a number, [a,b] or a string (quotes removed).
Json hydra_value(std::string t, const std::string& key, const std::string& source) {
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front())
    return Json(t.substr(1, t.size() - 2));
  const std::string l = lower(t);
  if (l == "null" || l == "none") return Json(nullptr);
  if (l == "true") return Json(true);
  if (l == "false") return Json(false);
  if (auto i = to_int(t)) return Json(*i);
  if (auto d = to_double(t)) return Json(*d);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    Json out = Json::array();
    const std::string inner = t.substr(1, t.size() - 2);
    if (inner.find_first_not_of(' ') == std::string::npos) return out;
    for (auto p : split(inner, ',')) {
      const auto a = p.find_first_not_of(' '), z = p.find_last_not_of(' ');
      if (a == std::string::npos)
        throw InputError(source, key, fmt::format("'{}': an empty element in the list", t));
      out.push_back(hydra_value(p.substr(a, z - a + 1), key, source));
    }
    return out;
  }
  return Json(t);
}

// The system preset of the launcher's -g (argument_parser.py's GPU names): the presets
// moesim ships for those machines (scenarios/systems/).
const std::map<std::string_view, std::string_view>& gpu_systems() {
  static const std::map<std::string_view, std::string_view> m{
      {"h100", "h100"}, {"b200", "b200"}, {"gb200", "gb200-nvl72"}, {"gb300", "gb300-nvl72"}};
  return m;
}

// The release a container image names (nvcr.io/nvidia/nemo:26.02 -> 26.02), if any.
std::optional<std::string> image_release(const std::string& image) {
  const auto colon = image.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string t = image.substr(colon + 1);
  if (find_release(t)) return t;
  return std::nullopt;
}

// The container image among the words, before the parser (which needs the tag) reads them.
std::optional<std::string> image_word(const std::vector<std::string>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if ((w == "-i" || w == "--container_image") && i + 1 < words.size()) return words[i + 1];
    if (w.starts_with("--container_image="))
      return w.substr(std::string("--container_image=").size());
  }
  return std::nullopt;
}

class BridgeImporter {
 public:
  BridgeImporter(const std::vector<std::string>& words, const MegatronImportOptions& opts,
                 MegatronImport& out)
      : words_(words), opts_(opts), out_(out) {}

  void run() {
    release();
    args_ = parse_args(words_, *tag_, opts_.source);
    classify();
    query();
    build();
    finish();
  }

 private:
  [[noreturn]] void refuse(const std::string& at, const std::string& why) const {
    throw InputError(opts_.source, at, why);
  }
  const Json* given(const std::string& dest) const {
    const auto it = args_.given.find(dest);
    return it == args_.given.end() ? nullptr : &it->second;
  }
  std::string flag(const std::string& dest) const {
    const auto it = args_.flag_of.find(dest);
    return it == args_.flag_of.end() ? "--" + dest : it->second;
  }
  std::string cite(const std::string& what) const { return fmt::format("{} {}", q_.tag, what); }

  // The release: --release, or the container image's tag; its Megatron-Bridge tag.
  void release() {
    const auto image = image_word(words_);
    std::optional<std::string> from_image = image ? image_release(*image) : std::nullopt;
    if (opts_.release) {
      if (auto why = unknown_release(*opts_.release)) refuse("--release", *why);
      if (from_image && *from_image != *opts_.release)
        refuse("--release", fmt::format("the command's container is {} ({}), not {}", *from_image,
                                        *image, *opts_.release));
      release_ = *opts_.release;
    } else if (from_image) {
      release_ = *from_image;
      out_.derived.emplace_back(
          "stack.release",
          fmt::format("{}: the container the command names ({})", release_, *image));
    } else {
      refuse(image ? "-i" : "--release",
             fmt::format(
                 "which Megatron-Bridge release ran it? {}give --release R (a NeMo container: {}); "
                 "the "
                 "release picks the recipes' tag and the libraries' switches",
                 image ? fmt::format("the container '{}' names none moesim knows; ", *image) : "",
                 known_release_names()));
    }
    const SoftwareRelease* rel = find_release(release_);
    if (!rel || rel->bridge.empty())
      refuse(
          "--release",
          fmt::format("release {} shipped no Megatron-Bridge performance launcher moesim has read "
                      "(its recipes are tabulated from v0.2.0, NeMo 25.11)",
                      release_));
    q_.tag = std::string(rel->bridge);
    tag_ = &bridge_tag_table(q_.tag);
    if (tag_->contains("not_read"))
      refuse("--release",
             fmt::format(
                 "Megatron-Bridge {} (release {}): its recipes were not read into the table: {}",
                 q_.tag, release_, tag_->at("not_read").get<std::string>()));
  }

  // Every flag given: read below, listed as ignored or unpriced, or refused.
  void classify() {
    std::vector<std::string> unknown;
    for (const auto& [dest, value] : args_.given) {
      const auto rule = dest_rule(dest);
      if (!rule) {
        unknown.push_back(flag(dest));
        continue;
      }
      switch (rule->effect) {
        case Effect::modeled:
          break;
        case Effect::ignored:
          out_.ignored.push_back(fmt::format("{} ({})", flag(dest), rule->why));
          break;
        case Effect::unpriced:
          out_.assumed.emplace_back(flag(dest), std::string(rule->why));
          break;
        case Effect::refused:
          refuse(flag(dest), std::string(rule->why));
      }
    }
    if (!unknown.empty())
      refuse(unknown.front(),
             fmt::format("Megatron-Bridge {}'s launcher accepts {}, but moesim does not know "
                         "its effect",
                         q_.tag, fmt::join(unknown, ", ")));
  }

  std::string text(const std::string& dest, const std::string& fallback = "") const {
    const Json* v = given(dest);
    return v && v->is_string() ? v->get<std::string>() : fallback;
  }

  void query() {
    const bool old = tag_->value("naming", std::string()) == "base_config";
    if (old) {  // v0.2.x: -m MODEL -s SIZE
      const std::string model = text("model_name"), size = text("model_size");
      if (model.empty() || size.empty())
        refuse("-m",
               fmt::format("Megatron-Bridge {}'s launcher needs -m MODEL and -s SIZE", q_.tag));
      q_.recipe = model + "_" + size;
    } else {
      q_.recipe = text("model_recipe_name");
      q_.family = text("model_family_name");
      if (q_.recipe.empty() || q_.family.empty())
        refuse("-mr",
               fmt::format("Megatron-Bridge {}'s launcher needs -m FAMILY and -mr RECIPE", q_.tag));
    }
    q_.gpu = lower(text("gpu"));
    if (q_.gpu.empty()) refuse("-g", "the launcher needs -g GPU");
    q_.dtype = lower(text("compute_dtype", "bf16"));
    q_.task = text("task", "pretrain");
    if (q_.task != "pretrain")
      refuse(flag("task"),
             fmt::format("{}: fine-tuning recipes are not tabulated (pretraining only)", q_.task));
    if (text("domain", "llm") != "llm")
      refuse(flag("domain"), "only the llm domain's recipes are tabulated");
    BridgeRecipeQuery rq;
    rq.tag = q_.tag;
    rq.recipe = q_.recipe;
    rq.task = q_.task;
    rq.gpu = q_.gpu;
    rq.dtype = q_.dtype;
    if (const Json* v = given("config_variant"); v && v->is_string())
      rq.variant = v->get<std::string>();
    try {
      wl_ = resolve_bridge_recipe(rq);
    } catch (const InputError& e) {
      refuse(old ? "-m" : "-mr", e.message());
    }
    const std::string folder = wl_.settings.at("family").get<std::string>();
    if (!old && folder != q_.family &&
        !(family_entry(q_.family) &&
          contains(family_entry(q_.family)->value("folders", Json::array()), folder)))
      refuse("-m", fmt::format("{}'s workload config {} is in the {} family's folder, not {}'s",
                               q_.recipe, wl_.config, folder, q_.family));
    if (old) q_.family = folder;
    // The variant that resolved (a V2 name may fall back to V1; v0.2.x names have none).
    const auto us = wl_.config.rfind("_V");
    q_.variant = us != std::string::npos && wl_.config.find('_', us + 1) == std::string::npos
                     ? lower(wl_.config.substr(us + 1))
                     : "";
    family_ = family_entry(q_.family);
    if (!family_) {
      for (const auto& f : families().at("families"))
        if (contains(f.value("folders", Json::array()), folder)) family_ = &f;
    }
    if (!family_ || !family_->at("recipes").contains(q_.recipe))
      refuse(old ? "-m" : "-mr",
             fmt::format("{} resolves at Megatron-Bridge {} ({}), but the settings its family's "
                         "code adds to it "
                         "(sequence length, fusions, routing balance, optimizer dtypes) are not "
                         "tabulated in {}; "
                         "tabulated recipes: {}",
                         q_.recipe, q_.tag, wl_.config, kFamilies, tabulated()));
    out_.derived.emplace_back(
        "recipe",
        fmt::format(
            "{} at Megatron-Bridge {} ({}, {}){}", wl_.config, q_.tag, wl_.commit.substr(0, 10),
            wl_.date,
            wl_.tried.empty() ? "" : fmt::format("; tried first: {}", fmt::join(wl_.tried, ", "))));
    // The world size: -ng, else the workload config's.
    const std::int64_t table_gpus = wl_.settings.at("num_gpus").get<std::int64_t>();
    if (const Json* v = given("num_gpus"); v && v->is_number_integer()) {
      q_.gpus = size_at_least(v->get<std::int64_t>(), 1, flag("num_gpus"));
    } else {
      q_.gpus = table_gpus;
      out_.derived.emplace_back(
          "gpus", fmt::format("{}: the workload config's num_gpus (no -ng)", q_.gpus));
    }
    if (opts_.gpus > 0 && opts_.gpus != q_.gpus)
      refuse("--gpus",
             fmt::format("the command runs {} GPUs (-ng); --gpus says {}", q_.gpus, opts_.gpus));
  }

  std::string tabulated() const {
    std::vector<std::string> names;
    for (const auto& f : families().at("families"))
      for (const auto& [r, m] : f.at("recipes").items()) names.push_back(r);
    return fmt::format("{}", fmt::join(names, ", "));
  }

  // ---- step 1: the performance recipe (family function + workload config) ------------------

  // The tag's launcher behaviour (importer/recipes/megatron-bridge-families.json "launcher").
  const Json& launcher() const {
    for (const auto& l : families().at("launcher"))
      if (contains(l.at("tags"), q_.tag)) return l;
    refuse("--release",
           fmt::format("Megatron-Bridge {}: the launcher's behaviour at this tag is not tabulated",
                       q_.tag));
  }

  void build() {
    const Json& l = launcher();
    for (const auto& stage : l.at("order")) {
      if (stage == "recipe") {
        // Megatron-Bridge's defaults under every recipe, the precision of -c, the family's code.
        apply(families().at("defaults"), "recipe");
        apply(families().at("precision"), "recipe");
        if (!b_.get("training.precision"))
          refuse(flag("compute_dtype"),
                 fmt::format("compute dtype '{}' at {}: no precision tabulated", q_.dtype, q_.tag));
        apply(family_->at("rules"), "recipe");
      } else if (stage == "table") {
        table();
        apply(family_->at("rules"), "after_table");
      } else if (stage == "hydra") {
        hydra();
      } else if (stage == "user") {
        user();
      } else if (stage == "post") {
        post();
        apply(family_->at("rules"), "post");
      }
    }
  }

  // Data-parallel size as the launcher computes it: -ng / (TP x PP x CP).
  std::int64_t dp() const {
    return q_.gpus / (b_.integer("parallelism.tp", 1) * b_.integer("parallelism.pp", 1) *
                      b_.integer("parallelism.cp", 1));
  }

  // A rule's "when": conditions on the run beyond tag, recipe, GPU and dtype.
  //   tp_gt_1 / dp_gt_1: the final TP / DP above 1 (Bridge's CommOverlapConfig decides at setup);
  //   table_full_iteration: the workload config captures the full iteration in a CUDA graph.
  bool when_holds(const Json& r) const {
    if (!r.contains("when")) return true;
    for (const auto& [k, v] : r.at("when").items()) {
      bool have = false;
      if (k == "tp_gt_1") {
        have = b_.integer("parallelism.tp", 1) > 1;
      } else if (k == "dp_gt_1") {
        have = dp() > 1;
      } else if (k == "table_full_iteration") {
        const Json& impl = wl_.settings.at("cuda_graph_impl");
        Json scope = wl_.settings.at("cuda_graph_scope");
        if (scope.is_string()) scope = Json::array({scope});
        have = impl == "full_iteration" || (impl == "local" && contains(scope, "full_iteration"));
      } else {
        refuse(kFamilies, fmt::format("a rule's condition '{}' is unknown", k));
      }
      if (have != v.get<bool>()) return false;
    }
    return true;
  }
  void apply(const Json& rules, const std::string& stage) {
    for (const auto& r : rules) {
      if (r.value("stage", std::string("recipe")) != stage || !rule_applies(r, q_) ||
          !when_holds(r))
        continue;
      const std::string src = r.at("source").get<std::string>();
      for (const auto& [k, v] : r.at("set").items()) {
        if (v.is_null())
          b_.erase(k);
        else
          b_.set(k, v, src);
      }
    }
  }

  // utils/overrides.py set_workload_base_configs: the workload config onto the recipe.
  void table() {
    const Json& s = wl_.settings;
    static const std::set<std::string> known{"family",
                                             "num_gpus",
                                             "tensor_model_parallel_size",
                                             "pipeline_model_parallel_size",
                                             "context_parallel_size",
                                             "virtual_pipeline_model_parallel_size",
                                             "expert_model_parallel_size",
                                             "expert_tensor_parallel_size",
                                             "global_batch_size",
                                             "micro_batch_size",
                                             "use_megatron_fsdp",
                                             "nccl_ub",
                                             "cuda_graph_impl",
                                             "cuda_graph_scope",
                                             "cpu_offloading_num_layers",
                                             "recompute_num_layers",
                                             "recompute_modules",
                                             "moe_flex_dispatcher_backend",
                                             "moe_a2a_overlap",
                                             "peft",
                                             "pp_layout",
                                             "fp8_dot_product_attention",
                                             "cutedsl_fused_grouped_mlp",
                                             "te_precision_config_file"};
    for (const auto& [k, v] : s.items())
      if (!known.count(k))
        refuse(wl_.config,
               fmt::format("the workload config's field '{}' ({}): moesim does not know its effect",
                           k, v.dump()));
    const std::string src = cite(fmt::format("{} (set_workload_base_configs)", wl_.config));
    const auto num = [&](const char* k) {
      return s.at(k).is_null() ? std::optional<std::int64_t>() : s.at(k).get<std::int64_t>();
    };
    set_tp(num("tensor_model_parallel_size").value_or(1), src);
    b_.set("parallelism.pp", num("pipeline_model_parallel_size").value_or(1), src);
    b_.set("parallelism.cp", num("context_parallel_size").value_or(1), src);
    set_vpp(num("virtual_pipeline_model_parallel_size"), src);
    b_.set("parallelism.ep", num("expert_model_parallel_size").value_or(1), src);
    set_etp(num("expert_tensor_parallel_size"), src);
    b_.set("training.global_batch_size", num("global_batch_size").value_or(1), src);
    b_.set("training.micro_batch_size", num("micro_batch_size").value_or(1), src);
    if (s.value("use_megatron_fsdp", Json()).is_boolean() && s.at("use_megatron_fsdp").get<bool>())
      fsdp(src);
    if (s.contains("nccl_ub") && s.at("nccl_ub").is_boolean() && s.at("nccl_ub").get<bool>())
      nccl_ub(src + " (_set_nccl_ub_overrides)");
    cuda_graphs(s.at("cuda_graph_impl"), s.at("cuda_graph_scope"), src);
    if (s.value("moe_a2a_overlap", false)) a2a_overlap(src);
    refuse_offload(s.at("cpu_offloading_num_layers"), src + " (cpu_offloading_num_layers)");
    recompute_layers(s.at("recompute_num_layers"), src);
    recompute_modules(s.at("recompute_modules"), src);
    // v0.5.0 on: FP8 core attention (mixed_precision.fp8_dot_product_attention) and the
    // CuTe DSL fused grouped MLP (scripts/performance/utils/overrides.py:238-245 at v0.5.0).
    if (s.value("fp8_dot_product_attention", Json()) == Json(true))
      b_.set("framework.fp8_dot_product_attention", true, src);
    if (s.value("cutedsl_fused_grouped_mlp", Json()) == Json(true))
      out_.assumed.emplace_back(
          "cutedsl_fused_grouped_mlp",
          "the workload config's CuTe DSL fused grouped MLP (TransformerEngine's op fuser): "
          "accepted, priced as TE's grouped GEMMs");
    if (!s.value("te_precision_config_file", Json()).is_null())
      refuse(src,
             "a TransformerEngine precision recipe file (te_precision_config_file): per-layer "
             "precisions are "
             "not modeled");
    // The dispatcher: v0.4.0 on, set_workload_base_configs applies the table's backend (None: the
    // all-to-all); before, the family hands it to the model recipe, and None leaves the recipe's.
    const Json& backend = s.at("moe_flex_dispatcher_backend");
    if (!backend.is_null() || launcher().at("generic_dispatcher").get<bool>())
      dispatcher(backend, src, true);
    table_layout(src);
  }

  void set_tp(std::int64_t tp, const std::string& src) {
    b_.set("parallelism.tp", size_at_least(tp, 1, src), src);
    b_.set("parallelism.sequence_parallel", tp > 1, src + ": sequence parallel when TP > 1");
  }
  std::int64_t size_at_least(std::int64_t v, std::int64_t least, const std::string& at) const {
    if (v < least) refuse(at, fmt::format("{}: a parallel size is at least {}", v, least));
    return v;
  }
  void set_vpp(std::optional<std::int64_t> vpp, const std::string& src) {
    b_.set("parallelism.vpp", size_at_least(vpp.value_or(1), 1, src), src);
  }
  // Expert TP None is the final TP (Megatron-Core's model_parallel_config): resolved in finish().
  void set_etp(std::optional<std::int64_t> etp, const std::string& src) {
    b_.set("bridge.etp", etp ? Json(size_at_least(*etp, 1, src)) : Json(nullptr), src);
  }
  void fsdp(const std::string& src) {
    b_.set("parallelism.fsdp", true, src + " (_set_megatron_fsdp_overrides)");
    b_.set("bridge.precision_aware_optimizer", false,
           src + ": Megatron-FSDP turns the precision-aware optimizer off");
  }
  void nccl_ub(const std::string& src) { nccl_ub_src_ = src; }
  // _set_cuda_graph_overrides: the implementation, then the scopes (a string is one scope).
  void cuda_graphs(const Json& impl, Json scope, const std::string& src) {
    if (scope.is_string()) scope = Json::array({scope});
    if (impl.is_string()) b_.set("bridge.cuda_graph_impl", impl, src);
    if (scope.is_array()) b_.set("bridge.cuda_graph_scope", scope, src);
  }
  void a2a_overlap(const std::string& src) {
    const std::string why = src + " (_set_moe_a2a_overlap_overrides)";
    b_.set("framework.moe_a2a_overlap", true, why);
    b_.set("framework.delay_wgrad_compute", true, why);
  }
  // _set_recompute_overrides: full recompute of N layers (block method), or the selective
  // modules; from v0.2.1 the modules also make the granularity selective, at v0.2.0 they act
  // only where the recipe already is (utils/helpers.py:178-180).
  // The workload config and the flags go through the same function in Bridge; so here.
  void refuse_offload(const Json& layers, const std::string& at) const {
    if (!layers.is_null())
      refuse(at, fmt::format("CPU activation offloading of {} layers: Megatron-Core's layer "
                             "offloading is not modeled",
                             layers.dump()));
  }
  void recompute_layers(const Json& layers, const std::string& src) {
    if (layers.is_null()) return;
    b_.set("bridge.recompute_num_layers", layers, src + ": full recompute, block method");
    b_.set("bridge.recompute_granularity", "full", src);
  }
  void recompute_modules(const Json& modules, const std::string& src) {
    if (!modules.is_array()) return;
    b_.set("framework.recompute_modules", modules, src);
    if (launcher().at("recompute_sets_selective").get<bool>()) {
      b_.set("bridge.recompute_granularity", "selective", src);
      b_.erase("bridge.recompute_num_layers");
    }
  }
  // apply_flex_dispatcher_backend: deepep / hybridep where the GPU supports them (DeepEP:
  // Ampere, Hopper, B200, B300; HybridEP: compute capability 8-10), else left as it was;
  // None: the NCCL all-to-all (the workload config's path); the launcher's -1: unchanged.
  void dispatcher(const Json& backend, const std::string& src, bool from_table) {
    if (backend.is_null()) {
      b_.set("framework.dispatcher", "alltoall",
             src + ": no flex backend, the all-to-all dispatcher");
      return;
    }
    const std::string be = backend.get<std::string>();
    const Json& gpus = launcher().at(be == "deepep" ? "deepep_gpus" : "hybridep_gpus");
    if ((be != "deepep" && be != "hybridep") || !contains(gpus, q_.gpu)) {
      out_.derived.emplace_back(
          "framework.dispatcher",
          fmt::format("{} not applied on {}: apply_flex_dispatcher_backend skips it (src/megatron/"
                      "bridge/training/flex_dispatcher_backend.py)",
                      be, q_.gpu));
      return;
    }
    b_.set("framework.dispatcher", be, src);
    b_.set("bridge.flex_backend", be, src);
    if (be != "hybridep") return;
    // _set_common_perf_overrides gives HybridEP 32 SMs when the model has it as it runs: the
    // table's backend (the families set it first); chosen later, Megatron-Core's default stands.
    if (from_table) {
      apply(families().at("defaults"), "hybridep");
    } else {
      b_.set("bridge.hybridep_sms", launcher().at("hybridep_default_sms"),
             src +
                 ": HybridEP chosen after the common overrides keeps the SMs the model had "
                 "(Megatron-Core's 16; "
                 "the recipes set 16 themselves from v0.3.1)");
    }
  }

  // The family's pipeline-layout function (e.g. set_deepseek_v3_pipeline_model_parallel_layout):
  // the layout its map holds for (PP, VP) and the MTP layers at the time; a pair the map
  // lacks leaves the layout as it was. Returns whether the map held the pair.
  bool map_layout(std::int64_t pp, std::int64_t vp) {
    if (!family_->contains("layouts")) return false;
    const std::int64_t mtp = b_.integer("training.mtp_layers", 0);
    for (const auto& l : family_->at("layouts")) {
      if (!rule_applies(l, q_) || l.at("pp").get<std::int64_t>() != pp ||
          l.value("vp", std::int64_t{1}) != vp)
        continue;
      const Json& text =
          mtp == 0 && l.contains("layout_mtp0") ? l.at("layout_mtp0") : l.at("layout");
      if (text.is_null())
        b_.erase("parallelism.pp_layout");
      else
        b_.set("parallelism.pp_layout", text, l.at("source").get<std::string>());
      return true;
    }
    return false;
  }
  const Json* layout_policy() const {
    if (!family_->contains("layout_policy")) return nullptr;
    for (const auto& p : family_->at("layout_policy"))
      if (rule_applies(p, q_)) return &p;
    return nullptr;
  }
  // The layout after the performance recipe: the table's pp_layout where the family takes it,
  // else the family's map on the table's PP and VP (a stale layout where the map misses).
  void table_layout(const std::string& src) {
    const Json& given_layout =
        wl_.settings.contains("pp_layout") ? wl_.settings.at("pp_layout") : Json();
    const Json* p = layout_policy();
    if (!p) {
      if (given_layout.is_string()) b_.set("parallelism.pp_layout", given_layout, src);
      return;
    }
    if (p->contains("initial"))
      map_layout(p->at("initial").at(0).get<std::int64_t>(),
                 p->at("initial").at(1).get<std::int64_t>());
    if (given_layout.is_string() &&
        contains(p->value("table_layout_gpus", Json::array()), q_.gpu)) {
      b_.set("parallelism.pp_layout", given_layout, src);
      return;
    }
    if (contains(p->value("map_gpus", Json::array()), q_.gpu))
      map_layout(b_.integer("parallelism.pp", 1), b_.integer("parallelism.vpp", 1));
  }
  // set_user_overrides: -pp, -vp or --pipeline_model_parallel_layout run the family's layout
  // function again on the final sizes (v0.3.0 on).
  void relayout() {
    const Json* p = layout_policy();
    if (!p || !p->value("cli_relayout", false)) return;
    map_layout(b_.integer("parallelism.pp", 1), b_.integer("parallelism.vpp", 1));
  }

  // ---- step 2: Hydra key=value -------------------------------------------------------------
  void hydra();

  // ---- step 3: the launcher's flags (set_user_overrides) ------------------------------------
  void user() {
    const auto has = [&](const char* d) {
      const Json* v = given(d);
      return v && !v->is_null();
    };
    const auto integer = [&](const char* d) { return given(d)->get<std::int64_t>(); };
    if (has("use_megatron_fsdp") && given("use_megatron_fsdp")->get<bool>())
      fsdp(flag("use_megatron_fsdp"));
    if (has("nccl_ub") && given("nccl_ub")->get<bool>()) nccl_ub(flag("nccl_ub"));
    if (given("cuda_graph_impl") || given("cuda_graph_scope"))
      cuda_graphs(given("cuda_graph_impl") ? *given("cuda_graph_impl") : Json(),
                  given("cuda_graph_scope") ? *given("cuda_graph_scope") : Json(),
                  "the command's CUDA graph flags");
    const auto value = [&](const char* d) { return given(d) ? *given(d) : Json(); };
    refuse_offload(value("activation_offload_layers"), flag("activation_offload_layers"));
    recompute_layers(value("recompute_num_layers"), flag("recompute_num_layers"));
    recompute_modules(value("recompute_modules"), flag("recompute_modules"));
    if (has("moe_a2a_overlap") && given("moe_a2a_overlap")->get<bool>())
      a2a_overlap(flag("moe_a2a_overlap"));
    if (has("use_tokendrop")) {
      // apply_moe_token_drop asserts the all-to-all dispatcher (generic launcher, both values).
      const Json* d = b_.get("framework.dispatcher");
      if (d && *d != "alltoall")
        refuse(flag("use_tokendrop"),
               fmt::format("Megatron-Bridge's token-drop setting needs the all-to-all dispatcher "
                           "and the recipe has {} as the flag is read, before "
                           "--moe_flex_dispatcher_backend (the launcher would stop): "
                           "give model.moe_token_dispatcher_type=alltoall",
                           d->get<std::string>()));
      if (given("use_tokendrop")->get<bool>()) {
        b_.set("training.token_drop", Json{{"capacity_factor", 1.0}},
               flag("use_tokendrop") + ": apply_moe_token_drop");
        b_.set("bridge.force_balance", false, flag("use_tokendrop") + ": forced balance off");
      } else {
        b_.erase("training.token_drop");
        b_.set("bridge.force_balance", true, flag("use_tokendrop") + ": dropless, forced balance");
      }
    }
    // A size flag given: at least 1, onto its scenario key.
    const auto set_size = [&](const char* d, const char* key) {
      if (has(d)) b_.set(key, size_at_least(integer(d), 1, flag(d)), flag(d));
    };
    if (has("tensor_model_parallel_size"))
      set_tp(integer("tensor_model_parallel_size"), flag("tensor_model_parallel_size"));
    set_size("pipeline_model_parallel_size", "parallelism.pp");
    set_size("context_parallel_size", "parallelism.cp");
    bool vp_given = false;
    if (const Json* v = given("virtual_pipeline_model_parallel_size");
        v && !(v->is_number() && v->get<std::int64_t>() == -1)) {
      set_vpp(v->is_null() ? std::nullopt : std::optional<std::int64_t>(v->get<std::int64_t>()),
              flag("virtual_pipeline_model_parallel_size"));
      vp_given = true;
    }
    set_size("expert_model_parallel_size", "parallelism.ep");
    if (has("expert_tensor_parallel_size"))
      set_etp(integer("expert_tensor_parallel_size"), flag("expert_tensor_parallel_size"));
    set_size("global_batch_size", "training.global_batch_size");
    set_size("micro_batch_size", "training.micro_batch_size");
    if (has("seq_length") && integer("seq_length") != b_.integer("training.seq_length", 0))
      refuse(flag("seq_length"),
             fmt::format(
                 "{} sets the mock dataset's sequence length only; the model's stays {} and "
                 "Megatron-Bridge's config check stops the run: set model.seq_length={} "
                 "instead",
                 flag("seq_length"), b_.integer("training.seq_length", 0), integer("seq_length")));
    if (has("hidden_size") || has("num_layers") || has("first_k_dense_replace"))
      refuse(has("hidden_size")  ? flag("hidden_size")
             : has("num_layers") ? flag("num_layers")
                                 : flag("first_k_dense_replace"),
             "changes the model's shape: give the model as a scenario (moesim's model presets are "
             "the published "
             "shapes)");
    if (has("tokenizer_type") && text("tokenizer_type") == "NullTokenizer")
      refuse(flag("tokenizer_type"),
             "NullTokenizer sets the vocabulary to --vocab_size: give the model as a scenario");
    if (has("tokenizer_type"))
      out_.ignored.push_back(
          fmt::format("{} {} (the tokenizer's files: the model preset's vocabulary)",
                      flag("tokenizer_type"), text("tokenizer_type")));
    // --deterministic (v0.5.0 on): apply_determinism_overrides turns the fused cross-entropy and
    // TP communication overlap off (src/megatron/bridge/recipes/utils/determinism_utils.py:43-47).
    if (has("deterministic") && given("deterministic")->get<bool>()) {
      b_.set("framework.cross_entropy", "unfused",
             flag("deterministic") + ": cross_entropy_loss_fusion False");
      b_.set("framework.tp_comm_overlap", false,
             flag("deterministic") + ": comm_overlap.tp_comm_overlap False");
      out_.assumed.emplace_back(flag("deterministic"),
                                "deterministic kernels and NCCL's ring algorithm "
                                "(NCCL_ALGO=Ring, NVTE_ALLOW_NONDETERMINISTIC_ALGO=0): not priced");
    }
    if (has("pipeline_model_parallel_layout"))
      b_.set("parallelism.pp_layout", *given("pipeline_model_parallel_layout"),
             flag("pipeline_model_parallel_layout"));
    else if (has("pipeline_model_parallel_size") || vp_given)
      relayout();
    if (const Json* v = given("moe_flex_dispatcher_backend"))
      dispatcher(*v, flag("moe_flex_dispatcher_backend"), false);
  }

  // ---- step 4: set_post_overrides ------------------------------------------------------------
  void post() {
    const Json& l = launcher();
    // The families tabulated train with Adam (the Muon exceptions are the Kimi family's).
    if (q_.dtype == "bf16")
      b_.set("bridge.precision_aware_optimizer", true,
             cite("set_post_overrides: the precision-aware optimizer under BF16 with Adam"));
    const std::int64_t pp = b_.integer("parallelism.pp", 1), vp = b_.integer("parallelism.vpp", 1);
    if (dp() > 1 && pp > 1 && vp > 1 && !contains(l.at("opgwos_excluded_dtypes"), q_.dtype)) {
      if (b_.flag("framework.overlap_param_gather", true))
        b_.set("framework.overlap_param_gather_with_optimizer_step", true,
               cite("set_post_overrides: the parameter all-gather overlapped with the optimizer "
                    "step (DP, PP and VP > 1)"));
      else
        out_.derived.emplace_back(
            "framework.overlap_param_gather_with_optimizer_step",
            "false: the launcher asks for it (DP, PP and VP > 1), but the recipe does not overlap "
            "the parameter all-gather, so there is nothing to overlap");
    }
    const Json* user_gbs = given("global_batch_size");
    if (!user_gbs || user_gbs->is_null()) {
      const std::int64_t table_gpus = wl_.settings.at("num_gpus").get<std::int64_t>();
      const std::int64_t table_gbs = wl_.settings.at("global_batch_size").get<std::int64_t>();
      const bool only_table_gbs = l.at("gbs_scaling") == "when_ng_differs_and_gbs_is_the_table_s";
      if (q_.gpus != table_gpus &&
          (!only_table_gbs || b_.integer("training.global_batch_size", 0) == table_gbs)) {
        const auto gbs = static_cast<std::int64_t>(static_cast<double>(table_gbs) /
                                                   static_cast<double>(table_gpus) *
                                                   static_cast<double>(q_.gpus));
        b_.set("training.global_batch_size", gbs,
               cite(fmt::format(
                   "set_post_overrides: the workload config's GBS {} x {} / {} GPUs (no -gb)",
                   table_gbs, q_.gpus, table_gpus)));
      }
    }
  }

  // Megatron-Core's account_for_embedding/loss_in_pipeline_split, where the recipe sets them:
  // the layers plus the embedding and the loss split evenly over the final PP x VP stages.
  void account_split() {
    const Json& r = family_->at("recipes").at(q_.recipe);
    if (!r.contains("account_split") || b_.origin.count("parallelism.pp_layout")) return;
    const Json& a = r.at("account_split");
    const auto split = accounted_layout(
        a.at("layers").get<std::int64_t>(), b_.integer("parallelism.pp", 1),
        b_.integer("parallelism.vpp", 1), a.value("embedding", false), a.value("loss", false));
    if (!split.layout)
      refuse(b_.origin["parallelism.pp"],
             split.error + " (" + a.at("source").get<std::string>() + ")");
    b_.set("parallelism.pp_layout", *split.layout, a.at("source").get<std::string>());
  }

  // ---- the scenario ----------------------------------------------------------------------
  void finish();

  const std::vector<std::string>& words_;
  const MegatronImportOptions& opts_;
  MegatronImport& out_;
  std::string release_;
  const Json* tag_ = nullptr;
  const Json* family_ = nullptr;
  ParsedArgs args_;
  Query q_;
  BridgeWorkload wl_;
  Builder b_;
  std::string nccl_ub_src_;  // where NCCL user buffers were asked for, if they were
  std::int64_t recipe_seq_ =
      0;  // the dataset's sequence length as the recipe built it (before Hydra)
};

void BridgeImporter::hydra() {
  recipe_seq_ = b_.integer("training.seq_length", 0);
  std::vector<std::string> unknown;
  for (const auto& [key, raw] : args_.hydra) {
    const HydraPath* h = hydra_path(key);
    if (!h) {
      unknown.push_back(key);
      continue;
    }
    const std::string src = fmt::format("{}={}", key, raw);
    const Json v = hydra_value(raw, key, opts_.source);
    if (h->kind == "redirect")
      refuse(key, fmt::format("Megatron-Bridge sets it again at setup: give {}", h->why));
    if (h->kind == "unmodeled") refuse(key, std::string(h->why));
    if (h->kind == "true_only") {
      if (v != Json(true)) refuse(key, std::string(h->why));
      out_.ignored.push_back(fmt::format("{} (on already)", src));
      continue;
    }
    if (h->key.empty()) {
      out_.ignored.push_back(fmt::format("{} ({})", src, h->why));
      continue;
    }
    const std::string kind(h->kind), k(h->key);
    const auto bad = [&](const char* what) {
      refuse(key, fmt::format("'{}': expected {}", raw, what));
    };
    if (kind == "size") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1) bad("a whole number, at least 1");
      b_.set(k, v, src);
    } else if (kind == "size_or_null") {
      if (!v.is_null() && (!v.is_number_integer() || v.get<std::int64_t>() < 1))
        bad("a whole number (at least 1) or null");
      if (v.is_null() && k != "bridge.etp")
        b_.erase(k);
      else
        b_.set(k, v, src);
    } else if (kind == "vpp" || kind == "int_or_zero") {
      if (!v.is_null() &&
          (!v.is_number_integer() || v.get<std::int64_t>() < (kind == "vpp" ? 1 : 0)))
        bad(kind == "vpp" ? "a whole number (at least 1) or null" : "a whole number or null");
      b_.set(k, v.is_null() ? Json(kind == "vpp" ? 1 : 0) : v, src);
    } else if (kind == "bool") {
      if (!v.is_boolean()) bad("true or false");
      b_.set(k, v, src);
    } else if (kind == "string") {
      if (v.is_null())
        b_.erase(k);
      else if (!v.is_string())
        bad("a string");
      else
        b_.set(k, v, src);
    } else if (kind == "list" || kind == "scope") {
      if (v.is_null())
        b_.set(k, Json::array(), src);
      else if (v.is_string())
        b_.set(k, Json::array({v}), src);
      else if (v.is_array() &&
               std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_string(); }))
        b_.set(k, v, src);
      else
        bad("a list of names");
    } else if (kind == "dispatcher") {
      if (!v.is_string() || (v != "alltoall" && v != "allgather" && v != "flex"))
        bad("alltoall, allgather or flex");
      if (v == "flex")  // the backend the model has; Megatron-Core's default is DeepEP
        dispatcher(b_.get("bridge.flex_backend") ? *b_.get("bridge.flex_backend") : Json("deepep"),
                   src, false);
      else
        b_.set(k, v, src);
    } else if (kind == "backend") {
      if (!v.is_string() || (v != "deepep" && v != "hybridep")) bad("deepep or hybridep");
      b_.set("bridge.flex_backend", v, src);
      const Json* d = b_.get(k);
      if (d && (*d == "deepep" || *d == "hybridep")) dispatcher(v, src, false);
    } else if (kind == "torch_dtype") {
      const std::string s = v.is_string() ? lower(v.get<std::string>()) : "";
      if (s == "torch.bfloat16" || s == "bf16" || s == "bfloat16")
        b_.set(k, "bf16", src);
      else if (s == "torch.float32" || s == "fp32" || s == "float32")
        b_.set(k, "fp32", src);
      else
        bad("torch.bfloat16 or torch.float32");
    } else if (kind == "capacity") {
      if (v.is_null() || (v.is_number() && v.get<double>() < 0))
        b_.erase(k);
      else if (v.is_number())
        b_.set(k, Json{{"capacity_factor", v}}, src);
      else
        bad("a number or null");
    }
  }
  if (!unknown.empty())
    refuse(unknown.front(),
           fmt::format("override{} of the recipe's configuration that moesim does not map: {} (the "
                       "paths it reads are listed in docs/COMMANDS.md)",
                       unknown.size() > 1 ? "s" : "", fmt::join(unknown, ", ")));
}

void BridgeImporter::finish() {
  // CUDA graphs: the implementation decides what the scopes mean.
  const std::string impl = b_.get("bridge.cuda_graph_impl")
                               ? b_.get("bridge.cuda_graph_impl")->get<std::string>()
                               : "none";
  Json scope =
      b_.get("bridge.cuda_graph_scope") ? *b_.get("bridge.cuda_graph_scope") : Json::array();
  const std::string graph_src = b_.origin.count("bridge.cuda_graph_impl")
                                    ? b_.origin["bridge.cuda_graph_impl"]
                                    : "the recipe";
  const std::string scope_src =
      b_.origin.count("bridge.cuda_graph_scope") ? b_.origin["bridge.cuda_graph_scope"] : graph_src;
  if (impl == "none") {
    b_.set("framework.cuda_graph_scope", Json::array(), graph_src + ": cuda_graph_impl none");
  } else if (impl == "transformer_engine") {
    Json kept = Json::array();
    for (const auto& s : scope)
      if (s != "mamba")
        kept.push_back(s);  // the Mamba mixer's graph: no Mamba layer in the models tabulated
    if (kept.empty() || contains(kept, "full_iteration"))
      refuse(scope_src,
             fmt::format("TransformerEngine CUDA graphs with scopes {}: moesim prices TE graphs "
                         "over attn, mlp, moe, moe_router and moe_preprocess",
                         scope.dump()));
    b_.set("framework.cuda_graph_scope", kept, graph_src);
  } else if (impl == "full_iteration") {  // Megatron-Core's newer name for the full-iteration graph
    b_.set("framework.cuda_graph_scope", Json::array({"full_iteration"}), graph_src);
  } else if (impl == "local") {
    if (scope != Json::array({"full_iteration"}))
      refuse(scope_src,
             fmt::format("Megatron-Core's local CUDA graphs with scopes {}: moesim prices the "
                         "local implementation over the full iteration only",
                         scope.dump()));
    b_.set("framework.cuda_graph_scope", scope, graph_src);
  } else {
    refuse(graph_src,
           fmt::format("cuda_graph_impl '{}': not a CUDA graph implementation moesim prices (none, "
                       "transformer_engine, local, full_iteration)",
                       impl));
  }
  apply(family_->at("rules"), "final");
  account_split();
  // The dataset's sequence length: rebuilt from the model's for mock data from v0.3.0
  // (set_user_overrides); at v0.2.x it stays the recipe's, and Bridge's config check stops a
  // run whose model and dataset lengths differ.
  if (const Json* ds = b_.get("bridge.dataset_seq_length");
      launcher().at("dataset_follows_model").get<bool>()) {
    if (ds)
      out_.ignored.push_back(fmt::format("{} (the mock dataset is rebuilt from model.seq_length)",
                                         b_.origin["bridge.dataset_seq_length"]));
  } else if (const std::int64_t dataset = ds ? ds->get<std::int64_t>() : recipe_seq_;
             dataset != b_.integer("training.seq_length", 0)) {
    refuse(
        "model.seq_length",
        fmt::format("the model's sequence length {} and the dataset's {} differ: Megatron-Bridge "
                    "{}'s config check stops the run; give model.seq_length and "
                    "dataset.sequence_length alike",
                    b_.integer("training.seq_length", 0), dataset, q_.tag));
  }
  {
    const Json* etp = b_.get("bridge.etp");
    if (etp && etp->is_number_integer())
      b_.set("parallelism.etp", *etp, b_.origin["bridge.etp"]);
    else
      b_.set("parallelism.etp", b_.integer("parallelism.tp", 1),
             "expert TP None is the final TP (Megatron-Core)");
  }
  // The SMs of the dispatcher that runs (HybridEP's set by the launcher or the recipe;
  // DeepEP's Megatron-Core default unless a Hydra override sets it).
  {
    const std::string d =
        b_.get("framework.dispatcher") ? b_.get("framework.dispatcher")->get<std::string>() : "";
    const std::string key = d == "hybridep" ? "bridge.hybridep_sms"
                            : d == "deepep" ? "bridge.deepep_sms"
                                            : "";
    if (!key.empty() && b_.get(key))
      b_.set("framework.dispatcher_sms", *b_.get(key), b_.origin[key]);
  }
  // Selective modules act only under the selective granularity (v0.2.0: the recipe's).
  if (b_.get("bridge.recompute_granularity") == nullptr ||
      *b_.get("bridge.recompute_granularity") != "selective") {
    if (const Json* m = b_.get("framework.recompute_modules");
        m && !m->empty() && !b_.get("bridge.recompute_num_layers")) {
      const std::string why = fmt::format(
          "none: {} asks for {}, but the recipe's recompute granularity is not "
          "selective, so Megatron-Core recomputes nothing (v0.2.0 "
          "scripts/performance/utils/helpers.py:178-179)",
          b_.origin["framework.recompute_modules"], m->dump());
      b_.set("framework.recompute_modules", Json::array(), why);
    }
  }
  // Bridge's CommOverlapConfig turns TP communication overlap off at setup below TP 2 or
  // without sequence parallelism (src/megatron/bridge/training/comm_overlap.py).
  if (b_.flag("framework.tp_comm_overlap", false) &&
      (b_.integer("parallelism.tp", 1) < 2 || !b_.flag("parallelism.sequence_parallel", false)))
    b_.set("framework.tp_comm_overlap", false,
           "CommOverlapConfig: no TP communication overlap below TP 2 or without "
           "sequence parallelism (src/megatron/bridge/training/comm_overlap.py)");
  if (const Json* n = b_.get("bridge.recompute_num_layers"))
    refuse(b_.origin["bridge.recompute_num_layers"],
           fmt::format("full recompute of {} layers per pipeline stage (block method): "
                       "partial full recompute is not modeled",
                       n->dump()));
  // Gradients and the optimizer's dtypes (Megatron: the DDP buffer takes the parameters'
  // BF16 unless grad_reduce_in_fp32; the optimizer's main-gradient and moment dtypes act
  // only with the precision-aware optimizer).
  if (const Json* fp32 = b_.get("bridge.grad_reduce_in_fp32")) {
    const std::string d = fp32->get<bool>() ? "fp32" : "bf16";
    const std::string src = b_.origin["bridge.grad_reduce_in_fp32"];
    b_.set("framework.grad_reduce_dtype", d, src);
    b_.set("framework.main_grads_dtype", d, src);
  }
  if (b_.flag("bridge.precision_aware_optimizer", false)) {
    const Json* a = b_.get("bridge.exp_avg_dtype");
    const Json* a2 = b_.get("bridge.exp_avg_sq_dtype");
    if (a && a2 && *a != *a2)
      refuse("optimizer.exp_avg_dtype",
             "Adam's two moments in different dtypes: moesim has one optimizer_state_dtype");
    if (a) b_.set("framework.optimizer_state_dtype", *a, b_.origin["bridge.exp_avg_dtype"]);
  } else if (const Json* a = b_.get("bridge.exp_avg_dtype"); a && *a != "fp32") {
    out_.derived.emplace_back(
        "framework.optimizer_state_dtype",
        fmt::format("fp32: the recipe's {} moments act only with the precision-aware optimizer, "
                    "which is off",
                    a->get<std::string>()));
  }
  if (!b_.flag("bridge.force_balance", true))
    out_.assumed.emplace_back(
        "routing.balance",
        "forced balance: the recipe does not force it, and the real routing depends on the data; "
        "give a `routing` block (aux_loss, sampled or a histogram) to model it");
  if (const Json* rb = b_.get("routing.balance");
      !rb || *rb != "forced" || !b_.flag("bridge.force_balance", true))
    b_.set("routing.balance", "forced",
           b_.flag("bridge.force_balance", true)
               ? std::string("the recipe's forced balance")
               : "moesim's forced balance, for want of the data's routing");
  if (!nccl_ub_src_.empty())
    out_.assumed.emplace_back("nccl_ub",
                              nccl_ub_src_ +
                                  ": NCCL user-buffer registration (symmetric kernels) for the "
                                  "DP collectives, accepted, its speed-up not priced");
  // What the family's code sets that moesim does not model (the research behind the table).
  for (const auto& n : family_->value("not_modeled", Json::array()))
    if (rule_applies(n, q_) &&
        !n.value("setting", std::string()).starts_with("-"))  // not the launcher's names
      out_.assumed.emplace_back(
          "not modeled",
          fmt::format("{}: {}", n.value("setting", std::string()), n.value("why", std::string())));
  const bool moe = family_->at("recipes").at(q_.recipe).value("moe", true);
  if (!moe)
    for (const char* k :
         {"framework.dispatcher", "framework.dispatcher_sms", "framework.moe_a2a_overlap",
          "framework.delay_wgrad_compute", "parallelism.ep", "parallelism.etp", "routing.balance"})
      b_.erase(k);

  // The scenario.
  Json& sc = out_.scenario;
  const std::string system =
      opts_.system.empty()
          ? (gpu_systems().count(q_.gpu) ? std::string(gpu_systems().at(q_.gpu)) : std::string())
          : opts_.system;
  if (system.empty()) refuse("-g", fmt::format("no system preset for {}: give --system", q_.gpu));
  if (opts_.system.empty())
    out_.derived.emplace_back("system", fmt::format("{}: the preset for -g {}", system, q_.gpu));
  else if (gpu_systems().count(q_.gpu) && gpu_systems().at(q_.gpu) != opts_.system)
    out_.derived.emplace_back("system", fmt::format("{} as --system gives; the command's -g is {}",
                                                    opts_.system, q_.gpu));
  sc["name"] = fmt::format("bridge-{}-{}-{}-{}", q_.recipe, q_.gpu, q_.dtype, release_);
  sc["description"] = fmt::format(
      "Imported from a Megatron-Bridge performance command: {} on {} {} GPUs, compute dtype {}, "
      "Megatron-Bridge {} "
      "(NeMo {}, commit {}), workload config {}, the family settings of {}.",
      q_.recipe, q_.gpus, q_.gpu, q_.dtype, q_.tag, release_, wl_.commit.substr(0, 10), wl_.config,
      kFamilies);
  sc["system"] = system;
  sc["gpus"] = q_.gpus;
  sc["model"] = family_->at("recipes").at(q_.recipe).at("model");
  if (opts_.model && (!sc["model"].is_string() || sc["model"].get<std::string>() != *opts_.model))
    refuse(
        "--model",
        fmt::format("the recipe {} names its model ({}); --model {} would contradict it", q_.recipe,
                    sc["model"].is_string() ? sc["model"].get<std::string>() : "an inline model",
                    *opts_.model));
  if (opts_.gpus_per_nvlink_domain) {  // the launcher's Slurm segments otherwise: moesim's default
                                       // placement
    sc["placement"] = {{"gpus_per_nvlink_domain", *opts_.gpus_per_nvlink_domain}};
    out_.derived.emplace_back(
        "placement.gpus_per_nvlink_domain",
        fmt::format("{}: --gpus-per-nvlink-domain", *opts_.gpus_per_nvlink_domain));
  }
  for (const char* sec : {"training", "parallelism", "framework", "routing", "stack"})
    if (b_.sc.contains(sec) && !b_.sc.at(sec).empty()) sc[sec] = b_.sc.at(sec);
  sc["stack"]["release"] = release_;
  out_.assumed.emplace_back(
      "stack", fmt::format("release {}'s library switches (stack.release): no launcher flag states "
                           "them",
                           release_));
  for (const auto& [key, why] : b_.origin)
    if (!key.starts_with("bridge.")) out_.derived.emplace_back(key, why);
}

}  // namespace

std::vector<std::string> unclassified_bridge_flags(const std::string& tag) {
  std::vector<std::string> out;
  const Json& t = bridge_tag_table(tag);
  if (!t.contains("arguments")) return out;
  for (const auto& a : t.at("arguments"))
    if (!dest_rule(a.at("dest").get<std::string>()))
      out.push_back(a.at("flags").at(0).get<std::string>());
  return out;
}

bool is_bridge_launcher(const std::string& entry) {
  return entry.ends_with("setup_experiment.py") ||
         entry.ends_with("scripts/performance/run_script.py") || entry == "run_script.py";
}

MegatronImport import_bridge(const std::vector<std::string>& words,
                             const MegatronImportOptions& opts) {
  MegatronImport out;
  BridgeImporter(words, opts, out).run();
  // A layout the launcher left stale (a map that lacks the final PP x VP keeps the old one)
  // is what Megatron would stop on: say where it came from.
  try {
    load_scenario_json(out.scenario, opts.source);
  } catch (const InputError& e) {
    for (const auto& [key, why] : out.derived)
      if (key == "parallelism.pp_layout" && (e.path().find("pp_layout") != std::string::npos ||
                                             e.message().find("pp_layout") != std::string::npos))
        throw InputError(
            opts.source, e.path(),
            fmt::format(
                "{} (in the imported scenario): the layout is the launcher's, from {}, kept when "
                "the sizes changed; Megatron would stop on it too. Give "
                "--pipeline_model_parallel_layout (v0.3.0 on) or "
                "model.pipeline_model_parallel_layout=...",
                e.message(), why));
    throw InputError(opts.source, e.path(), e.message() + " (in the imported scenario)");
  }
  out.recorded = record_inert_settings(out.scenario, opts.source,
                                       "moesim import megatron (Megatron-Bridge launcher)");
  return out;
}

}  // namespace moesim::importer
