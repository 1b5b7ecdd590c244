// importer/bridge_detail.hpp: the Megatron-Bridge importer's parts (importer/import_bridge.hpp),
// shared by its files and internal to them: the family table and its rules, the launcher's
// parsed flags (importer/bridge_args.cpp), the scenario under construction, and the importer,
// whose steps follow the launcher's: the release and the recipe's lookup (importer/
// import_bridge.cpp), step 1, the performance recipe (importer/bridge_perf_recipe.cpp),
// steps 2-4, the Hydra overrides, the launcher's flags and set_post_overrides (importer/
// bridge_overrides.cpp), and the scenario (importer/bridge_scenario.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "importer/bridge_recipes.hpp"
#include "importer/import.hpp"

namespace moesim::importer::detail {

using config::InputError;
using config::Json;

constexpr const char* kFamilies = "importer/recipes/megatron-bridge-families.json";

// importer/recipes/megatron-bridge-families.json, parsed (importer/import_bridge.cpp).
const Json& families();

// Whether `list` is an array holding the string `v`.
bool contains(const Json& list, const std::string& v);

// ---- the launcher's argparse parser at a tag (importer/bridge_args.cpp) -----------------

// How a flag's dest affects the import: read by the importer (modeled), or why not.
enum class Effect { modeled, ignored, unpriced, refused };
struct DestRule {
  Effect effect;
  std::string_view why;  // ignored / unpriced / refused: the reason
};

// The rule of a dest of scripts/performance/argument_parser.py; none for a dest moesim does
// not know (refused as unknown: a new tag's flag must be classified before it imports).
std::optional<DestRule> dest_rule(const std::string& dest);

struct ParsedArgs {
  std::map<std::string, Json> given;           // dest -> value, for flags on the command
  std::map<std::string, std::string> flag_of;  // dest -> the flag as written
  std::vector<std::pair<std::string, std::string>> hydra;  // key=value overrides, in order
};

std::string lower(std::string s);
std::vector<std::string> split(const std::string& s, char sep);
// Python's int() and float(), as argparse's `type` applies them.
std::optional<std::int64_t> to_int(const std::string& s);
std::optional<double> to_double(const std::string& s);

// The words as the tag's launcher parses them (its flags, and the key=value overrides);
// InputError(source, flag, why) naming every unknown flag at once.
ParsedArgs parse_args(const std::vector<std::string>& words, const Json& tag,
                      const std::string& source);

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
  std::string config;  // the workload config that resolved (a flat recipe's table key)
  std::int64_t gpus = 0;
};

// Whether a rule (or a layout, a policy, a note) of the family table holds for the run:
// its tags, recipes, GPUs, dtypes, task, variant and (v0.6.0's flat recipes, one a GPU
// count and variant) workload configs.
bool rule_applies(const Json& r, const Query& q);

// The family's entry of the table, by its name; null when the table lacks it.
const Json* family_entry(const std::string& family);

// ---- the importer ------------------------------------------------------------------------

// import_bridge, and import_bridge_training's run (BridgeImporter::training_launch).
MegatronImport import_bridge_words(const std::vector<std::string>& words,
                                   const MegatronImportOptions& opts,
                                   std::optional<std::int64_t> training_world, bool gbs_given);

class BridgeImporter {
 public:
  BridgeImporter(const std::vector<std::string>& words, const MegatronImportOptions& opts,
                 MegatronImport& out)
      : words_(words), opts_(opts), out_(out) {}

  void run();
  // scripts/training/run_recipe.py's path (importer/bridge_training.cpp): the named recipe
  // as built, on `world` GPUs, its global batch weak-scaled unless `gbs_given`, and none
  // of the performance launcher's post overrides but the BF16 precision-aware optimizer.
  void training_launch(std::int64_t world, bool gbs_given) {
    training_world_ = world;
    training_gbs_given_ = gbs_given;
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

  // The release, the flags' classification and the recipe (importer/import_bridge.cpp).
  void release();
  void classify();
  std::string text(const std::string& dest, const std::string& fallback = "") const {
    const Json* v = given(dest);
    return v && v->is_string() ? v->get<std::string>() : fallback;
  }

  void query();
  void task(bool old);
  std::string tabulated() const;

  // Step 1: the performance recipe (importer/bridge_perf_recipe.cpp).
  const Json& launcher() const;
  void build();
  std::int64_t dp() const;
  bool when_holds(const Json& r) const;
  void apply(const Json& rules, const std::string& stage);
  void table();
  void set_tp(std::int64_t tp, const std::string& src);
  std::int64_t size_at_least(std::int64_t v, std::int64_t least, const std::string& at) const;
  void set_vpp(std::optional<std::int64_t> vpp, const std::string& src);
  void set_etp(std::optional<std::int64_t> etp, const std::string& src);
  void fsdp(const std::string& src);
  void nccl_ub(const std::string& src);
  void cuda_graphs(const Json& impl, Json scope, const std::string& src);
  void a2a_overlap(const std::string& src);
  void offload_layers(const Json& layers, const std::string& at);
  void flat_fields(const std::string& src);
  void bf16_precision_aware();
  void weak_scale(std::int64_t table_gpus, std::int64_t table_gbs);
  void recompute_layers(const Json& layers, const std::string& src);
  void full_recompute(const Json& layers);
  void recompute_modules(const Json& modules, const std::string& src);
  void dispatcher(const Json& backend, const std::string& src, bool from_table);
  bool map_layout(std::int64_t pp, std::int64_t vp);
  const Json* layout_policy() const;
  void table_layout(const std::string& src);
  void relayout();

  // Steps 2-4: Hydra key=value, the launcher's flags (set_user_overrides) and
  // set_post_overrides (importer/bridge_overrides.cpp).
  void hydra();
  void user();
  void post();

  // The scenario (importer/bridge_scenario.cpp).
  void account_split();
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
  std::optional<std::int64_t> training_world_;  // run_recipe.py's world size (training_launch)
  bool training_gbs_given_ = false;
};

}  // namespace moesim::importer::detail
