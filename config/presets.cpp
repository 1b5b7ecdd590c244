#include "config/presets.hpp"

#include <filesystem>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "config/presets_data.hpp"

namespace moesim::config {
namespace {

// Each kind's folder of compiled-in files and its name in messages.
struct KindInfo {
  std::string_view dir, name;
};
constexpr KindInfo kKinds[] = {{"systems", "system"},
                               {"models", "model"},
                               {"profiles", "calibration profile"},
                               {"schema", "schema"},
                               {"evidence", "evidence table"}};
std::string_view kind_dir(PresetKind k) {
  return kKinds[static_cast<std::size_t>(k)].dir;
}
std::string_view kind_name(PresetKind k) {
  return kKinds[static_cast<std::size_t>(k)].name;
}

const detail::PresetFile* find_preset(PresetKind kind, std::string_view name) {
  for (std::size_t i = 0; i < detail::kPresetFileCount; ++i) {
    const auto& p = detail::kPresetFiles[i];
    if (p.kind == kind_dir(kind) && p.name == name) return &p;
  }
  return nullptr;
}

std::string preset_label(const detail::PresetFile& p) {
  if (p.kind == "schema") return fmt::format("schema/{}.json (built-in)", p.name);
  if (p.kind == "evidence") return fmt::format("calibration/evidence/{}.json (built-in)", p.name);
  const std::string_view folder = p.kind == "profiles" ? "calibration" : "scenarios";
  return fmt::format("{}/{}/{}.json (built-in preset)", folder, p.kind, p.name);
}

// A built-in preset's JSON, parsed on its first use and kept: the presets are constants
// compiled into the binary, and a sweep or plan loads thousands of scenarios naming the
// same few (a system preset and its calibration profiles are about 100 KB of JSON).
// Thread-safe; a preset that fails to parse throws at every use, as before.
const Json& parsed_preset(const detail::PresetFile& p) {
  static std::vector<std::once_flag> once(detail::kPresetFileCount);
  static std::vector<Json> parsed(detail::kPresetFileCount);
  const auto i = static_cast<std::size_t>(&p - detail::kPresetFiles);
  std::call_once(once[i], [&] { parsed[i] = parse_json(p.text, preset_label(p)); });
  return parsed[i];
}

// Names a preset was known by before its maker renamed the product: refused with the
// current name, so that a scenario names one system one way. NVIDIA announced the Vera
// Rubin rack as "NVL144" at GTC 2025 (GPU dies counted) and has called the same 72-package
// rack "Vera Rubin NVL72" since CES 2026 (docs/reference/hardware-and-microbenchmarks.md).
struct FormerName {
  PresetKind kind;
  std::string_view name, now, why;
};
constexpr FormerName kFormerNames[] = {
    {PresetKind::system, "vr200-nvl144", "vr200-nvl72",
     "NVIDIA's GTC 2025 name counted the 144 GPU dies; since CES 2026 the same rack of 72 "
     "Rubin packages is 'Vera Rubin NVL72'"},
};

std::string unknown(PresetKind kind, std::string_view name) {
  for (const auto& f : kFormerNames)
    if (f.kind == kind && f.name == name)
      return fmt::format("{} preset '{}' is called '{}' ({})", kind_name(kind), name, f.now, f.why);
  return fmt::format("unknown {} preset '{}'; known: {}", kind_name(kind), name,
                     fmt::join(preset_names(kind), ", "));
}

// A model named by a path to a Hugging Face config.json (any name ending in ".json"),
// relative to the file that names it; nullopt for a preset name.
std::optional<std::string> model_file(PresetKind kind, const std::string& name, const Node& at) {
  if (kind != PresetKind::model || !name.ends_with(".json")) return std::nullopt;
  std::filesystem::path p(name);
  if (p.is_relative()) p = std::filesystem::path(at.file()).parent_path() / p;
  p = p.lexically_normal();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    at.fail(fmt::format(
        "no Hugging Face config file '{}' (a model ending in .json is a path relative to "
        "this file; other names are presets: {})",
        p.string(), fmt::join(preset_names(kind), ", ")));
  return p.string();
}

// Parses a preset, or a model's config.json file; an unknown name is reported at `at` with
// the list of known names.
Json preset_json(PresetKind kind, const std::string& name, const Node& at) {
  if (const auto file = model_file(kind, name, at)) return read_json_file(*file);
  const auto* p = find_preset(kind, name);
  if (!p) at.fail(unknown(kind, name));
  return parsed_preset(*p);
}

// Copies a profile's "parameters" (a patch of {"value", "source"} leaves at the preset's
// JSON paths) into `target`, the system JSON's object at `path`; each leaf's source text
// goes into `sources` under a source id of its own.
void overlay(Json& sources, Json& target, const Json& params, const std::string& profile,
             const std::string& path) {
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string at = path.empty() ? it.key() : path + "." + it.key();
    if (it->is_object() && it->contains("value")) {
      const std::string id = "profile:" + profile + ":" + at;
      sources[id] = it->value("source", "calibration profile " + profile);
      target[it.key()] = Json{{"value", (*it)["value"]}, {"source", id}};
    } else if (it->is_object()) {
      overlay(sources, target[it.key()], *it, profile, at);
    }
  }
}

// A calibration profile a system may name: one whose values go into a system preset.
// A profile that says "applies_to" something else (the global-batch router's dispersion,
// "routing": config/routing_profile.hpp) is read where that is priced.
bool system_profile(const detail::PresetFile& p) {
  return parsed_preset(p).value("applies_to", "system") == "system";
}

std::vector<std::string> system_profile_names() {
  std::vector<std::string> out;
  for (const auto& n : preset_names(PresetKind::profile))
    if (system_profile(*find_preset(PresetKind::profile, n))) out.push_back(n);
  return out;
}

// A system's "profiles" (names of calibration profiles) replace the values they fit,
// unless the model is read uncalibrated; the key is consumed here either way. Returns
// the profiles applied.
std::vector<std::string> apply_profiles(Json& sys, const LoadOptions& opts, const std::string& file,
                                        const std::string& path) {
  std::vector<std::string> applied;
  const auto it = sys.find("profiles");
  if (it == sys.end()) return applied;
  const Json names = *it;
  sys.erase(it);
  const std::string at = path.empty() ? "profiles" : path + ".profiles";
  if (!names.is_array()) throw InputError(file, at, "expected a list of calibration profile names");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string here = fmt::format("{}[{}]", at, i);
    if (!names[i].is_string()) throw InputError(file, here, "expected a calibration profile name");
    const std::string name = names[i].get<std::string>();
    const auto* p = find_preset(PresetKind::profile, name);
    if (!p || !system_profile(*p))
      throw InputError(file, here,
                       fmt::format("unknown system calibration profile '{}'{}; known: {}", name,
                                   p ? fmt::format(" (it applies to {}, not to a system)",
                                                   parsed_preset(*p).value("applies_to", ""))
                                     : "",
                                   fmt::join(system_profile_names(), ", ")));
    if (!opts.calibrated) continue;
    const Json& prof = parsed_preset(*p);
    if (!prof.contains("parameters") || !prof["parameters"].is_object())
      throw InputError(preset_label(*p), "parameters", "expected an object");
    // The sources gathered apart and added after: `sys` gains keys as it is overlaid, which
    // may move its "sources" member.
    Json sources = Json::object();
    overlay(sources, sys, prof["parameters"], name, "");
    // Values that hold for one GPU (its sustained clocks under its power limit), keyed by
    // the preset's GPU name.
    if (const auto by = prof.find("parameters_by_gpu"); by != prof.end() && sys.contains("gpu") &&
                                                        sys["gpu"].contains("name") &&
                                                        sys["gpu"]["name"].is_string()) {
      const auto g = by->find(sys["gpu"]["name"].get<std::string>());
      if (g != by->end()) overlay(sources, sys, *g, name, "");
    }
    for (auto& [id, text] : sources.items()) sys["sources"][id] = std::move(text);
    applied.push_back(name);
  }
  return applied;
}

template <class T, class Reader>
T load_preset(PresetKind kind, const std::string& name, const LoadOptions& opts, Reader read) {
  const auto* p = find_preset(kind, name);
  if (!p) throw InputError("<command line>", "", unknown(kind, name));
  const std::string label = preset_label(*p);
  Json j = parsed_preset(*p);
  std::vector<std::string> profiles;
  std::vector<std::string> set;
  if (kind == PresetKind::system) {
    profiles = apply_profiles(j, opts, label, "");
    set = apply_system_set(j, opts.system_set);
  }
  T t = read(Node(j, "", std::make_shared<const std::string>(label)));
  if constexpr (std::is_same_v<T, hw_models::SystemSpec>) {
    t.profiles = profiles;
    t.set_on_command_line = set;
  }
  return t;
}

}  // namespace

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < detail::kPresetFileCount; ++i)
    if (detail::kPresetFiles[i].kind == kind_dir(kind))
      out.emplace_back(detail::kPresetFiles[i].name);
  return out;
}

std::string_view preset_text(PresetKind kind, std::string_view name, const std::string& what) {
  if (const detail::PresetFile* p = find_preset(kind, name)) return p->text;
  throw InputError(what, "", unknown(kind, name));
}

void require_preset(PresetKind kind, std::string_view name, const std::string& file,
                    const std::string& path) {
  if (!find_preset(kind, name)) throw InputError(file, path, unknown(kind, name));
}

const Json& preset_parsed(PresetKind kind, std::string_view name, const std::string& what) {
  if (const detail::PresetFile* p = find_preset(kind, name)) return parsed_preset(*p);
  throw InputError(what, "", unknown(kind, name));
}

hw_models::SystemSpec load_system_preset(const std::string& name, const LoadOptions& opts) {
  return load_preset<hw_models::SystemSpec>(PresetKind::system, name, opts, read_system);
}

workload::ModelConfig load_model_preset(const std::string& name) {
  return load_preset<workload::ModelConfig>(PresetKind::model, name, {}, read_model);
}

namespace detail {
namespace {

// resolve_preset_or_inline before a system's --set values.
Resolved resolve_before_set(const Node& at, PresetKind kind, const LoadOptions& opts) {
  Resolved r;
  const Json& j = at.json();
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    if (const auto file = model_file(kind, name, at)) {
      r.json = std::make_shared<Json>(read_json_file(*file));
      r.node = std::make_unique<Node>(*r.json, "", std::make_shared<const std::string>(*file));
      return r;
    }
    const auto* p = find_preset(kind, name);
    r.json = std::make_shared<Json>(preset_json(kind, name, at));
    const std::string label = preset_label(*p);
    if (kind == PresetKind::system) r.profiles = apply_profiles(*r.json, opts, label, "");
    r.node = std::make_unique<Node>(*r.json, "", std::make_shared<const std::string>(label));
    return r;
  }
  if (!j.is_object()) at.fail("expected a preset name or an inline object");
  auto patch = std::make_shared<Json>(j);
  if (auto it = patch->find("base"); it != patch->end()) {
    const Node base_node = at.child_at(*it, "base");
    if (!it->is_string()) base_node.fail("expected a preset name");
    const std::string base_name = it->get<std::string>();
    Json merged = preset_json(kind, base_name, base_node);
    patch->erase("base");
    // The base's calibration profiles (or the inline list that replaces them) apply before
    // the inline values, so that what the scenario writes wins over what a profile fitted.
    if (kind == PresetKind::system) {
      if (auto pr = patch->find("profiles"); pr != patch->end()) {
        // RFC 7386: null removes the base's profiles (the system uncalibrated).
        if (pr->is_null())
          merged.erase("profiles");
        else
          merged["profiles"] = *pr;
        patch->erase(pr);
      }
      r.profiles = apply_profiles(merged, opts, at.file(), at.path());
    }
    merged.merge_patch(*patch);
    r.json = std::make_shared<Json>(std::move(merged));
    // A config.json base: errors in the merged model name both files (what is wrong may be
    // the base's, as a key it lacks, or the patch's).
    if (const auto base_file = model_file(kind, base_name, base_node)) {
      r.node =
          std::make_unique<Node>(*r.json, at.path(),
                                 std::make_shared<const std::string>(fmt::format(
                                     "{} ({} patching {})", at.file(), at.path(), *base_file)));
      return r;
    }
  } else {
    r.json = patch;
    if (kind == PresetKind::system)
      r.profiles = apply_profiles(*r.json, opts, at.file(), at.path());
  }
  r.node =
      std::make_unique<Node>(*r.json, at.path(), std::make_shared<const std::string>(at.file()));
  return r;
}

}  // namespace

Resolved resolve_preset_or_inline(const Node& at, PresetKind kind, const LoadOptions& opts) {
  Resolved r = resolve_before_set(at, kind, opts);
  // The node reads *r.json, so the values set here are what it reads.
  if (kind == PresetKind::system) r.set = apply_system_set(*r.json, opts.system_set);
  return r;
}

}  // namespace detail
}  // namespace moesim::config
