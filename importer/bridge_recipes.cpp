#include "importer/bridge_recipes.hpp"

#include "importer/recipes.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/load.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

constexpr const char* kTable = "importer/recipes/megatron-bridge.json";

const Json& table() {
  return recipe_table("megatron-bridge");
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

const Json& tag_entry(const std::string& tag) {
  for (const auto& e : table().at("tags"))
    if (e.at("tag") == tag) return e;
  throw InputError(kTable, tag,
                   fmt::format("no Megatron-Bridge release tag '{}' in the table; its tags: {}",
                               tag, fmt::join(bridge_recipe_tags(), ", ")));
}

// The names Megatron-Bridge's launcher tries at this tag, in order.
std::vector<std::string> candidate_names(const BridgeRecipeQuery& q, const Json& e) {
  const std::string r = upper(q.recipe), t = upper(q.task), g = upper(q.gpu), d = upper(q.dtype);
  std::vector<std::string> names;
  if (e.value("naming", std::string()) == "base_config") {
    names.push_back(q.task == "pretrain" ? fmt::format("{}_{}_{}_BASE_CONFIG", r, g, d)
                                         : fmt::format("{}_{}_{}_{}_BASE_CONFIG", r, g, t, d));
    return names;
  }
  std::string variant = q.variant.value_or(e.value("default_variant", std::string("v1")));
  variant = upper(variant);
  if (e.contains("recipe_functions")) {  // flat: v1, v2 and none are the canonical recipe
    names.push_back(variant == "V1" || variant == "V2"
                        ? fmt::format("{}_{}_CONFIG_{}_{}", r, t, g, d)
                        : fmt::format("{}_{}_CONFIG_{}_{}_{}", r, t, g, d, variant));
    return names;
  }
  names.push_back(fmt::format("{}_{}_CONFIG_{}_{}_{}", r, t, g, d, variant));
  if (variant == "V2") names.push_back(fmt::format("{}_{}_CONFIG_{}_{}_V1", r, t, g, d));
  names.push_back(fmt::format("{}_{}_CONFIG_{}_{}", r, t, g, d));
  return names;
}

}  // namespace

const Json& bridge_tag_table(const std::string& tag) {
  return tag_entry(tag);
}

std::vector<std::string> bridge_recipe_tags() {
  std::vector<std::string> out;
  for (const auto& e : table().at("tags")) out.push_back(e.at("tag").get<std::string>());
  return out;
}

BridgeWorkload resolve_bridge_recipe(const BridgeRecipeQuery& q) {
  const Json& e = tag_entry(q.tag);
  if (e.contains("not_read"))
    throw InputError(
        kTable, q.tag,
        fmt::format("Megatron-Bridge {} is in the table but its recipes were not read: {}", q.tag,
                    e.at("not_read").get<std::string>()));
  const Json& configs = e.at("configs");
  BridgeWorkload out;
  out.tag = q.tag;
  out.commit = e.at("commit").get<std::string>();
  out.date = e.at("date").get<std::string>();
  out.flat = e.contains("recipe_functions");
  for (const auto& name : candidate_names(q, e)) {
    auto it = configs.find(name);
    if (it == configs.end()) {
      out.tried.push_back(name);
      continue;
    }
    if (out.flat && q.gpus) {  // the recipe of exactly -ng GPUs, else the default one
      const auto exact = configs.find(fmt::format("{}_{}GPU", name, *q.gpus));
      if (exact != configs.end()) it = exact;
      out.exact_gpus = exact != configs.end() || it->value("num_gpus", Json()) == Json(*q.gpus);
    }
    out.config = it.key();
    out.recipe_name = name;
    if (out.flat) out.function = e.at("recipe_functions").value(it.key(), std::string());
    out.env = e.value("env_vars", Json::object()).value(it.key(), Json::object());
    out.settings = e.at("defaults");
    for (const auto& [k, v] : it->items())
      if (k != "family") out.settings[k] = v;
    out.settings["family"] = it->at("family");
    return out;
  }
  // Nothing resolved: the recipe's names at this tag help the user pick.
  const std::string prefix = upper(q.recipe) + "_";
  std::vector<std::string> known;
  for (const auto& [name, v] : configs.items())
    if (name.rfind(prefix, 0) == 0) known.push_back(name);
  throw InputError(
      kTable, q.tag,
      fmt::format("Megatron-Bridge {} ({}) has no workload config {}; {}", q.tag,
                  out.commit.substr(0, 10), fmt::join(out.tried, " or "),
                  known.empty()
                      ? std::string("and none for the recipe '") + q.recipe + "'"
                      : fmt::format("the recipe's configs there: {}", fmt::join(known, ", "))));
}

}  // namespace moesim::importer
