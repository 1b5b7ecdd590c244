#include "config/presets.hpp"

#include <fmt/format.h>

#include "config/presets_data.hpp"

namespace moesim::config {
namespace {

std::string_view kind_dir(PresetKind k) { return k == PresetKind::system ? "systems" : "models"; }

const detail::PresetFile* find_preset(PresetKind kind, std::string_view name) {
  for (std::size_t i = 0; i < detail::kPresetFileCount; ++i) {
    const auto& p = detail::kPresetFiles[i];
    if (p.kind == kind_dir(kind) && p.name == name) return &p;
  }
  return nullptr;
}

std::string preset_label(const detail::PresetFile& p) {
  return fmt::format("scenarios/{}/{}.json (built-in preset)", p.kind, p.name);
}

// Parses a preset; an unknown name is reported at `at` with the list of known names.
Json preset_json(PresetKind kind, const std::string& name, const Node& at) {
  const auto* p = find_preset(kind, name);
  if (!p)
    at.fail(fmt::format("unknown {} preset '{}'; known: {}",
                        kind == PresetKind::system ? "system" : "model", name,
                        fmt::join(preset_names(kind), ", ")));
  return parse_json(p->text, preset_label(*p));
}

template <class T, class Reader>
T load_preset(PresetKind kind, const std::string& name, Reader read) {
  const auto* p = find_preset(kind, name);
  if (!p)
    throw InputError("<command line>", "",
                     fmt::format("unknown {} preset '{}'; known: {}", kind_dir(kind), name,
                                 fmt::join(preset_names(kind), ", ")));
  const std::string label = preset_label(*p);
  const Json j = parse_json(p->text, label);
  return read(Node(j, "", std::make_shared<const std::string>(label)));
}

}  // namespace

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < detail::kPresetFileCount; ++i)
    if (detail::kPresetFiles[i].kind == kind_dir(kind))
      out.emplace_back(detail::kPresetFiles[i].name);
  return out;
}

hw_models::SystemSpec load_system_preset(const std::string& name) {
  return load_preset<hw_models::SystemSpec>(PresetKind::system, name, read_system);
}

workload::ModelConfig load_model_preset(const std::string& name) {
  return load_preset<workload::ModelConfig>(PresetKind::model, name, read_model);
}

namespace detail {

Resolved resolve_preset_or_inline(const Node& at, PresetKind kind) {
  Resolved r;
  const Json& j = at.json();
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    const auto* p = find_preset(kind, name);
    r.json = std::make_shared<Json>(preset_json(kind, name, at));
    r.node = std::make_unique<Node>(*r.json, "", std::make_shared<const std::string>(
                                                      preset_label(*p)));
    return r;
  }
  if (!j.is_object()) at.fail("expected a preset name or an inline object");
  auto patch = std::make_shared<Json>(j);
  if (auto it = patch->find("base"); it != patch->end()) {
    const Node base_node = at.child_at(*it, "base");
    if (!it->is_string()) base_node.fail("expected a preset name");
    Json merged = preset_json(kind, it->get<std::string>(), base_node);
    patch->erase("base");
    merged.merge_patch(*patch);
    r.json = std::make_shared<Json>(std::move(merged));
  } else {
    r.json = patch;
  }
  r.node = std::make_unique<Node>(*r.json, at.path(), std::make_shared<const std::string>(at.file()));
  return r;
}

}  // namespace detail
}  // namespace moesim::config
