#include "importer/recipes.hpp"

#include <map>
#include <mutex>

#include <fmt/format.h>

namespace moesim::importer {

std::string recipe_label(std::string_view name) {
  return fmt::format("importer/recipes/{}.json (built-in)", name);
}

const config::Json& recipe_table(std::string_view name) {
  static std::mutex m;
  static std::map<std::string, config::Json, std::less<>> parsed;
  const std::lock_guard lock(m);
  if (const auto it = parsed.find(name); it != parsed.end()) return it->second;
  for (std::size_t i = 0; i < detail::kRecipeFileCount; ++i)
    if (detail::kRecipeFiles[i].name == name)
      return parsed
          .emplace(std::string(name),
                   config::parse_json(detail::kRecipeFiles[i].text, recipe_label(name)))
          .first->second;
  throw config::InputError(recipe_label(name), "", "no such recipe table compiled in");
}

}  // namespace moesim::importer
