// importer/import_bridge.cpp: a Megatron-Bridge performance command as a scenario
// (importer/import_bridge.hpp): import_bridge and the launcher's entry points, the family
// table (importer/recipes/megatron-bridge-families.json) and its rules' scope, and the
// importer's first steps: the release (--release or the container's tag), every flag
// classified, and the recipe the launcher's names resolve to. The launcher's parser is
// importer/bridge_args.cpp; the recipe's steps are importer/bridge_perf_recipe.cpp and
// importer/bridge_overrides.cpp; the scenario is importer/bridge_scenario.cpp.
#include "importer/import_bridge.hpp"

#include "importer/recipes.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/releases.hpp"
#include "importer/bridge_detail.hpp"
#include "importer/bridge_recipes.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

namespace detail {

const Json& families() {
  return recipe_table("megatron-bridge-families");
}

bool contains(const Json& list, const std::string& v) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const Json& x) { return x.is_string() && x.get<std::string>() == v; });
}

bool rule_applies(const Json& r, const Query& q) {
  if (r.contains("recipes") && !contains(r.at("recipes"), q.recipe)) return false;
  if (r.contains("tags") && !contains(r.at("tags"), q.tag)) return false;
  if (r.contains("gpu") && !contains(r.at("gpu"), q.gpu)) return false;
  if (r.contains("dtype") && !contains(r.at("dtype"), q.dtype)) return false;
  if (r.contains("task") && r.at("task").get<std::string>() != q.task) return false;
  if (r.contains("variant") && !contains(r.at("variant"), q.variant)) return false;
  if (r.contains("configs") && !contains(r.at("configs"), q.config)) return false;
  return true;
}

const Json* family_entry(const std::string& family) {
  for (const auto& f : families().at("families"))
    if (f.at("family").get<std::string>() == family) return &f;
  return nullptr;
}

namespace {

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

}  // namespace

void BridgeImporter::run() {
  release();
  args_ = parse_args(words_, *tag_, opts_.source);
  classify();
  query();
  build();
  finish();
}

// The release: --release, or the container image's tag; its Megatron-Bridge tag.
void BridgeImporter::release() {
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
        "stack.release", fmt::format("{}: the container the command names ({})", release_, *image));
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
    refuse("--release",
           fmt::format("release {} shipped no Megatron-Bridge performance launcher moesim has read "
                       "(its recipes are tabulated from v0.2.0, NeMo 25.11)",
                       release_));
  q_.tag = std::string(rel->bridge);
  tag_ = &bridge_tag_table(q_.tag);
  if (tag_->contains("not_read"))
    refuse(
        "--release",
        fmt::format("Megatron-Bridge {} (release {}): its recipes were not read into the table: {}",
                    q_.tag, release_, tag_->at("not_read").get<std::string>()));
}

// Every flag given: read below, listed as ignored or unpriced, or refused.
void BridgeImporter::classify() {
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

// --task: pretraining; full-parameter SFT on the launcher's mock data (pretraining-shaped:
// docs/research/finetune/sft-import-plan.md); LoRA (lora to v0.5.x, peft at v0.6.0) on it,
// a frozen base with adapters (training.lora, set by the family's rules;
// docs/research/finetune/lora-inventory.md). --data is read here, for fine-tuning only.
void BridgeImporter::task(bool old) {
  const Json* data = given("data");
  if (q_.task == "pretrain") {
    if (data)
      out_.ignored.push_back(fmt::format(
          "{} (the dataset: priced alike, mock or real tokens of the same length)", flag("data")));
    return;
  }
  const bool lora = q_.task == "lora" || q_.task == "peft";
  if (q_.task != "sft" && !lora)
    refuse(flag("task"), fmt::format("{}: not a task Megatron-Bridge's launcher runs", q_.task));
  if (old)  // v0.2.x: src/megatron/bridge/recipes/utils/finetune_utils.py:51-94 at v0.2.0
    refuse(flag("task"),
           fmt::format("{} at Megatron-Bridge {}: its fine-tuning recipes always train on SQuAD "
                       "packed into seq_length-token packs and its launcher has no --data; the "
                       "packs' sub-sequence lengths (attention cost per pack) are not in the "
                       "command",
                       q_.task, q_.tag));
  // --data defaults to mock from v0.3.0 (scripts/performance/argument_parser.py:289 at v0.3.0,
  // :325 at v0.5.1, :332 at v0.6.0); the launcher then replaces the recipe's SQuAD dataset by
  // MockGPTDatasetConfig at model.seq_length (utils/overrides.py:376-386 at v0.5.1).
  const std::string d = data && data->is_string() ? data->get<std::string>() : "mock";
  if (d == "squad_packed")
    refuse(flag("data"),
           "squad_packed: SQuAD packed into seq_length-token packs; the attention cost per pack "
           "is the sum of its sub-sequences' squares, which the command does not give (the "
           "packing statistics are logged at pack time only)");
  if (d != "mock")
    refuse(flag("data"),
           fmt::format("{} for fine-tuning: {}", d,
                       d == "squad" ? "unpacked SQuAD pads each micro-batch to its longest "
                                      "sample, so every micro-batch has its own shape"
                                    : "read for pretraining datasets only"));
  // PEFT's pre-wrap hook loads the base weights and stops without them
  // (src/megatron/bridge/training/setup.py:472-473 at v0.5.1, :609-613 at v0.6.0).
  if (lora && !given("pretrained_checkpoint"))
    refuse(flag("task"),
           fmt::format("{}: Megatron-Bridge's PEFT setup stops without --pretrained_checkpoint "
                       "(the base weights the adapters train on; setup.py:472-473 at v0.5.1): "
                       "give it",
                       q_.task));
  if (lora) {
    out_.derived.emplace_back(
        "task",
        fmt::format("{} (--task {}, --data mock): LoRA fine-tuning, the base weights frozen and "
                    "low-rank adapters trained (training.lora from the family's rules), on the "
                    "launcher's synthetic seq_length-token causal sequences, unpacked",
                    q_.task, q_.task));
    return;
  }
  out_.derived.emplace_back(
      "task",
      "sft (--task sft, --data mock): full-parameter fine-tuning (no PEFT: every weight "
      "trains, the distributed optimizer holds all parameters) on the launcher's synthetic "
      "seq_length-token causal sequences, unpacked; priced as pretraining at this sequence "
      "length, as Megatron-Bridge counts its FLOPs");
}

void BridgeImporter::query() {
  const bool old = tag_->value("naming", std::string()) == "base_config";
  if (old) {  // v0.2.x: -m MODEL -s SIZE
    const std::string model = text("model_name"), size = text("model_size");
    if (model.empty() || size.empty())
      refuse("-m", fmt::format("Megatron-Bridge {}'s launcher needs -m MODEL and -s SIZE", q_.tag));
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
  task(old);
  // --domain vlm / qwen3vl feed images through a VL model's vision tower (vlm_step,
  // qwen3_vl_step); llm, the default, runs it text-only on the text mock dataset
  // (scripts/performance/utils/overrides.py:377-381, run_script.py:113-121 at v0.5.1).
  if (const std::string d = text("domain", "llm"); d != "llm")
    refuse(flag("domain"),
           fmt::format("{}: only the llm domain's runs are modeled ({})", d,
                       d == "vlm" || d == "qwen3vl"
                           ? "the image path runs a vision tower, whose op graph moesim does "
                             "not model; the default llm domain runs a VL model text-only"
                           : "a diffusion model's step is not an LLM's"));
  BridgeRecipeQuery rq;
  rq.tag = q_.tag;
  rq.recipe = q_.recipe;
  rq.task = q_.task;
  rq.gpu = q_.gpu;
  rq.dtype = q_.dtype;
  if (const Json* v = given("config_variant"); v && v->is_string())
    rq.variant = v->get<std::string>();
  if (const Json* v = given("num_gpus"); v && v->is_number_integer())
    rq.gpus = v->get<std::int64_t>();
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
  q_.config = wl_.config;
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
          "{} at Megatron-Bridge {} ({}, {}){}{}", wl_.config, q_.tag, wl_.commit.substr(0, 10),
          wl_.date,
          wl_.function.empty()
              ? ""
              : fmt::format(", the flat recipe {} ({})", wl_.function,
                            wl_.exact_gpus ? "the recipe of exactly -ng GPUs"
                                           : "no recipe of -ng GPUs: the default one, "
                                             "weak-scaled by set_post_overrides"),
          wl_.tried.empty() ? "" : fmt::format("; tried first: {}", fmt::join(wl_.tried, ", "))));
  // The world size: -ng, else the workload config's.
  const std::int64_t table_gpus = wl_.settings.at("num_gpus").get<std::int64_t>();
  if (const Json* v = given("num_gpus"); v && v->is_number_integer()) {
    q_.gpus = size_at_least(v->get<std::int64_t>(), 1, flag("num_gpus"));
  } else {
    q_.gpus = table_gpus;
    out_.derived.emplace_back("gpus",
                              fmt::format("{}: the workload config's num_gpus (no -ng)", q_.gpus));
  }
  if (opts_.gpus > 0 && opts_.gpus != q_.gpus)
    refuse("--gpus",
           fmt::format("the command runs {} GPUs (-ng); --gpus says {}", q_.gpus, opts_.gpus));
}

std::string BridgeImporter::tabulated() const {
  std::vector<std::string> names;
  for (const auto& f : families().at("families"))
    for (const auto& [r, m] : f.at("recipes").items()) names.push_back(r);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace detail

std::vector<std::string> unclassified_bridge_flags(const std::string& tag) {
  std::vector<std::string> out;
  const Json& t = bridge_tag_table(tag);
  if (!t.contains("arguments")) return out;
  for (const auto& a : t.at("arguments"))
    if (!detail::dest_rule(a.at("dest").get<std::string>()))
      out.push_back(a.at("flags").at(0).get<std::string>());
  return out;
}

bool is_bridge_launcher(const std::string& entry) {
  return !is_bridge_training_launcher(entry) &&
         (entry.ends_with("setup_experiment.py") ||
          entry.ends_with("scripts/performance/run_script.py") || entry == "run_script.py");
}
bool is_bridge_training_launcher(const std::string& entry) {
  return entry.ends_with("scripts/training/train.sh") ||
         entry.ends_with("scripts/training/setup_experiment.py") ||
         entry.ends_with("scripts/training/run_recipe.py") || entry == "run_recipe.py";
}

MegatronImport import_bridge(const std::vector<std::string>& words,
                             const MegatronImportOptions& opts) {
  return detail::import_bridge_words(words, opts, std::nullopt, false);
}

namespace detail {
MegatronImport import_bridge_words(const std::vector<std::string>& words,
                                   const MegatronImportOptions& opts,
                                   std::optional<std::int64_t> training_world, bool gbs_given) {
  MegatronImport out;
  BridgeImporter importer(words, opts, out);
  if (training_world) importer.training_launch(*training_world, gbs_given);
  importer.run();
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

}  // namespace detail

}  // namespace moesim::importer
