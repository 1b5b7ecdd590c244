// importer/recipes.hpp: the importer's data tables compiled into the binary
// (importer/recipes/*.json, embedded by cmake/embed_presets.cmake): megatron-bridge.json,
// Megatron-Bridge's workload configs and launcher flags at every release tag
// (tools/bridge_recipes.py), and megatron-bridge-families.json, the families' own settings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/json_reader.hpp"

namespace moesim::importer {

namespace detail {
struct PresetFile {
  std::string_view kind;  // "recipes"
  std::string_view name;  // file name without .json
  std::string_view text;
};
extern const PresetFile kRecipeFiles[];
extern const std::size_t kRecipeFileCount;
}  // namespace detail

// importer/recipes/NAME.json, parsed on first use and kept (thread-safe); its label in
// messages: recipe_label(NAME).
const config::Json& recipe_table(std::string_view name);
std::string recipe_label(std::string_view name);

}  // namespace moesim::importer
