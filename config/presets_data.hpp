// config/presets_data.hpp: the preset files compiled into the binary (generated source).
#pragma once

#include <cstddef>
#include <string_view>

namespace moesim::config::detail {

struct PresetFile {
  std::string_view kind;  // folder under scenarios/: "systems" or "models"
  std::string_view name;  // file name without .json
  std::string_view text;
};

extern const PresetFile kPresetFiles[];
extern const std::size_t kPresetFileCount;

}  // namespace moesim::config::detail
