// importer/moe_recipe.cpp: Megatron-LM's self-contained MoE recipes (examples/moe_recipes/
// MODEL/GPU/*.yaml on the dev branch, first in 6b6fb956a7, 2026-05-21) as a Megatron command
// (importer/import.hpp).
//
// A recipe holds DEPENDENCIES (the container and the Dockerfile that builds TE, HybridEP and
// the kernels), ENV_VARS (the runtime's environment) and ARGS (the training arguments). The
// repository has no runner for them. Each ARGS key is a flag's name with underscores for its
// dashes (no_check_for_nan_in_loss_and_grad, cuda_graph_scope and use_mcore_models are flags
// whose argparse destinations are named otherwise; arguments.py at e5ad09802d), read as that
// flag, `--` and the key with dashes:
//   true       - the bare flag; false and null drop it (store_true flags left off); a plain
//                scalar that YAML reads as a boolean is one (True, yes, on), a quoted one text;
//   a sequence - the flag and its items (--cuda-graph-scope attn moe_router);
//   a scalar   - the flag and its words, split on blanks as an unquoted shell value is
//                (cuda_graph_scope: moe_router moe_preprocess is two scopes);
// except overlap_p2p_comm (in the B200 Qwen3-235B recipe), which is no flag but the
// destination of --no-overlap-p2p-communication (store_false, on by default): true is the
// default, and false is refused (not modeled). A key must be a flag's name (letters, digits,
// `_`, `-`). ENV_VARS become the command's environment (a variable given with --env wins), and
// `$VAR` or `${VAR}` in a value is substituted from it as envsubst does, empty when unset (the
// recipes use it for their checkpoint, log and W&B paths, flags without a performance effect).
// The flag string is bounded as a launch script is (kMaxSourcedBytes), YAML aliases included.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "importer/import.hpp"
#include "importer/launch_wrapper.hpp"
#include "importer/shell_eval.hpp"

namespace moesim::importer {

namespace {

// A word for the flag string that import_megatron evaluates as bash would: single-quoted.
std::string single_quoted(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out.push_back('\'');
  for (const char c : word) {
    if (c == '\'')
      out.append("'\\''");
    else
      out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// A plain (unquoted) scalar YAML reads as a boolean: true/false, True, yes/no, on/off.
std::optional<bool> boolean(const YAML::Node& v) {
  bool b = false;
  if (!v.IsScalar() || v.Tag() != "?" || !YAML::convert<bool>::decode(v, b)) return std::nullopt;
  return b;
}

// A flag's name, or an environment variable's (no dash, not starting with a digit).
bool is_name(std::string_view s, bool variable) {
  if (s.empty() || (variable && std::isdigit(static_cast<unsigned char>(s.front())))) return false;
  return std::ranges::all_of(s, [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (!variable && c == '-');
  });
}

std::string flag_of(const std::string& dest) {
  std::string f = "--" + dest;
  for (auto& c : f)
    if (c == '_') c = '-';
  return f;
}

}  // namespace

std::optional<MoeRecipe> read_moe_recipe(const std::string& text, const std::string& source,
                                         const std::map<std::string, std::string>& given) {
  std::string ext = source.substr(std::min(source.size(), source.find_last_of('.')));
  std::ranges::transform(ext, ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext != ".yaml" && ext != ".yml") return std::nullopt;
  // The bound of a launch script (importer/shell_eval.hpp): the recipes are about 10 KiB.
  if (text.size() > kMaxSourcedBytes)
    throw config::InputError(source, "",
                             fmt::format("{} bytes: larger than the {} KiB a recipe may have",
                                         text.size(), kMaxSourcedBytes >> 10));
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw config::InputError(source, "", fmt::format("not YAML: {}", e.what()));
  }
  // A YAML file is never a shell script: one that is not a recipe is refused here.
  if (!doc.IsMap() || !doc["ARGS"])
    throw config::InputError(
        source, "ARGS",
        "missing: a Megatron-LM MoE recipe holds its training arguments under ARGS (a ModelZoo "
        "model YAML is read through the sbatch_benchmarking.sh call that names it)");
  const YAML::Node args = doc["ARGS"];
  if (!args.IsMap())
    throw config::InputError(source, "ARGS", "must be a mapping of training arguments");
  MoeRecipe r;
  if (const YAML::Node env = doc["ENV_VARS"]; env) {
    if (!env.IsMap())
      throw config::InputError(source, "ENV_VARS", "must be a mapping of variables");
    for (const auto& kv : env) {
      if (!kv.first.IsScalar())
        throw config::InputError(source, "ENV_VARS", "a key must be a name");
      const std::string name = kv.first.Scalar();
      if (!is_name(name, true))
        throw config::InputError(source, "ENV_VARS." + name, "not a variable's name");
      if (!kv.second.IsNull() && !kv.second.IsScalar())
        throw config::InputError(source, "ENV_VARS." + name, "a variable's value must be a scalar");
      r.environment[name] = kv.second.IsNull() ? std::string() : kv.second.Scalar();
    }
  }
  for (const auto& [name, value] : given) r.environment[name] = value;
  for (const auto& kv : args) {
    if (!kv.first.IsScalar()) throw config::InputError(source, "ARGS", "a key must be a name");
    const std::string dest = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    const std::string path = "ARGS." + dest;
    if (!is_name(dest, false))
      throw config::InputError(source, path, "not a flag's name (letters, digits, _ and -)");
    // Each word goes onto the flag string, which may not outgrow a launch script: YAML aliases
    // repeat a value without the recipe's text growing.
    const auto append = [&](std::string_view word) {
      r.flags.append(" ").append(word);
      if (r.flags.size() > kMaxSourcedBytes)
        throw config::InputError(
            source, path,
            fmt::format("the flags pass the {} KiB of a launch script", kMaxSourcedBytes >> 10));
    };
    const auto b = boolean(v);
    if (dest == "overlap_p2p_comm") {
      if (!b) throw config::InputError(source, path, "must be true or false");
      if (!*b)
        throw config::InputError(source, path,
                                 "false (--no-overlap-p2p-communication): pipeline transfers left "
                                 "unoverlapped at VPP > 1 are not modeled (moesim overlaps them "
                                 "there, Megatron's default)");
      continue;
    }
    if (v.IsNull() || (b && !*b)) continue;
    if (v.IsMap())
      throw config::InputError(source, path, "a mapping is not a training argument's value");
    append(flag_of(dest));
    if (b) continue;  // a bare flag
    if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar())
          throw config::InputError(source, path, "a list's items must be scalars");
        append(single_quoted(envsubst(item.Scalar(), r.environment)));
      }
      continue;
    }
    const auto words = split_blanks(envsubst(v.Scalar(), r.environment));
    if (words.empty()) append("''");  // an unset variable: the flag's empty value
    for (const auto& w : words) append(single_quoted(w));
  }
  if (const YAML::Node deps = doc["DEPENDENCIES"]; deps && deps.IsMap())
    if (const YAML::Node image = deps["pytorch_base_image"]; image && image.IsScalar())
      r.image = image.Scalar();
  return r;
}

}  // namespace moesim::importer
