// config/presets.hpp (internal): finding presets and resolving `"base"` inheritance.
//
// Where the contract allows a preset name, it also allows an inline object; an inline
// object may name `"base": "<preset>"` and give only what differs (RFC 7386 merge
// patch over the preset), which is how what-if variants of a system are written.
#pragma once

#include <memory>
#include <string>

#include "config/json_reader.hpp"
#include "config/load.hpp"

namespace moesim::config::detail {

// A resolved preset-or-inline value: the JSON to read and the node to read it at.
struct Resolved {
  std::shared_ptr<Json> json;  // owns merged documents
  std::unique_ptr<Node> node;
  std::vector<std::string> profiles;  // systems: the calibration profiles applied
  std::vector<std::string> set;       // systems: LoadOptions::system_set as applied
};

// `at` holds a preset name (string) or an inline object (optionally with "base"). A system
// takes LoadOptions::system_set last, after its profiles and the inline values.
Resolved resolve_preset_or_inline(const Node& at, PresetKind kind, const LoadOptions& opts = {});

}  // namespace moesim::config::detail
