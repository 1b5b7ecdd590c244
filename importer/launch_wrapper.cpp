#include "importer/launch_wrapper.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "config/load.hpp"
#include "importer/shell_eval.hpp"

namespace moesim::importer {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;

// envsubst without a variable list: $NAME and ${NAME} become the environment's value, or
// nothing when unset (GNU gettext's envsubst); anything else stays.
std::string envsubst(std::string_view text, const std::map<std::string, std::string>& env) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    std::size_t b = i + 1, e = b;
    const bool braced = text[b] == '{';
    if (braced) ++b, e = b;
    if (e >= text.size() ||
        !(std::isalpha(static_cast<unsigned char>(text[e])) || text[e] == '_')) {
      out += text[i];
      continue;
    }
    while (e < text.size() && name_char(text[e])) ++e;
    if (braced && (e >= text.size() || text[e] != '}')) {
      out += text[i];
      continue;
    }
    const auto it = env.find(std::string(text.substr(b, e - b)));
    if (it != env.end()) out += it->second;
    i = braced ? e : e - 1;
  }
  return out;
}

std::vector<std::string> split_blanks(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  return read_text_file(p.string());
}

// FNV-1a over the file's bytes: tells the followed version of a wrapper from another.
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// ---- Megatron-MoE-ModelZoo's sbatch_benchmarking.sh -------------------------------------
//
// Followed at yanring/Megatron-MoE-ModelZoo e8650517 (2026-05-16; the wrapper last changed
// in 1ed4179f). Its steps, in order:
//   1. defaults MODEL, CLUSTER (template), MCORE_RELEASE_VERSION, MEGATRON_PATH;
//   2. source runtime_configs/benchmarking/common.conf (TRAINING_SCRIPT_PATH,
//      TRAINING_PARAMS_PATH = model_configs/benchmarking/$MODEL.yaml, PR = bf16 and its
//      check, PROFILE): evaluated here by importer/shell_eval.hpp;
//   3. source runtime.conf: set_model_configs exports TP PP EP CP VPP MBS GBS NUM_LAYERS
//      MOE_TOKEN_DISPATCHER MOE_GROUPED_GEMM NNODES RUN_TIME PRETRAIN SEQ_LEN DATASET from
//      MODEL's row of BENCHMARKING_MODEL_CONFIGS where the caller left them unset,
//      LAYERS_PER_VP (NUM_LAYERS / PP / VPP, or false at VPP 1), PP_FIRST / PP_LAST (the
//      row's, or false when PP divides NUM_LAYERS): a table and a function, read here;
//   4. source cluster_configs/benchmarking/$CLUSTER.conf: Slurm account, output and data
//      paths only, not read (said in the notes);
//   5. envsubst the YAML; MODEL_ARGS become flags (yq: a value "false" drops the flag,
//      "true" leaves the flag alone, else "flag value"), then the caller's arguments;
//      ENV_VARS are exported;
//   6. VPP > 1 and no layout flag: --num-virtual-stages-per-pipeline-rank VPP;
//      NUM_LAYERS % PP != 0 and no layout: --decoder-first/last-pipeline-num-layers;
//      OPTIMIZER_OFFLOAD=1: --optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d;
//      DISPATCHER (deepep): alltoall | deepep | hybridep (flex, 32 SMs);
//      PR fp8: blockwise FP8, FP8 parameter gather (without offload), the precision-aware
//      optimizer (FP32 main grads and params, BF16 moments), router padding;
//      PR bf16: --tp-comm-overlap; PR mxfp8: MXFP8 as fp8 plus reuse of the grad buffer
//      and overlapped grad reduce / param gather;
//      A2A_OVERLAP=1: --delay-wgrad-compute --overlap-moe-expert-parallel-comm with
//      CUDA_DEVICE_MAX_CONNECTIONS=32 and 24 SMs of margin for the norms, else 1 and 0;
//      SEQ_LEN above the YAML's --max-position-embeddings raises it;
//      PROFILE 1|nsys|torch: profiling flags; BINDPCIE_PATH before python;
//   7. Slurm: GB200_CLUSTER=1 gives 4 tasks per node (NVLINK_DOMAIN_SIZE=72, --segment
//      SEGMENT), else 8; NNODES nodes.
// The command is `bash -c ${TRAINING_CMD}`: its words are TRAINING_CMD split on blanks.
constexpr std::uint64_t kModelZooWrapperHash =
    0xf6d8bc8405ef9327ULL;  // sbatch_benchmarking.sh @ e8650517
constexpr std::string_view kModelZooOrigin =
    "yanring/Megatron-MoE-ModelZoo @ e8650517 (2026-05-16)";

// BENCHMARKING_MODEL_CONFIGS of runtime.conf: MODEL -> its fields, named by the table's
// header comment ("# MODEL: TP PP EP ... [PP_FIRST PP_LAST]").
std::map<std::string, std::string> modelzoo_row(const fs::path& conf, const std::string& model,
                                                const std::string& script,
                                                const std::string& word) {
  std::istringstream in(read_text(conf));
  std::string line;
  std::vector<std::string> columns;
  std::map<std::string, std::vector<std::string>> rows;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.find("BENCHMARKING_MODEL_CONFIGS=(") != std::string::npos;
      continue;
    }
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == ')') break;
    if (line[first] == '#') {
      if (const auto colon = line.find("MODEL:"); colon != std::string::npos && columns.empty()) {
        for (auto c : split_blanks(line.substr(colon + 6))) {
          std::erase(c, '[');
          std::erase(c, ']');
          columns.push_back(c);
        }
      }
      continue;
    }
    const auto open = line.find('['), close = line.find("]=\"");
    const auto end = close == std::string::npos ? close : line.find('"', close + 3);
    if (open == std::string::npos || close == std::string::npos || end == std::string::npos)
      continue;
    rows[line.substr(open + 1, close - open - 1)] =
        split_blanks(line.substr(close + 3, end - close - 3));
  }
  if (columns.empty())
    throw InputError(conf.string(), "BENCHMARKING_MODEL_CONFIGS",
                     "no table with a '# MODEL: TP PP ...' header: not the wrapper's runtime.conf");
  const auto it = rows.find(model);
  if (it == rows.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : rows) known.push_back(k);
    throw InputError(
        script, word,
        fmt::format(
            "MODEL={} is not in {}'s table, where the wrapper stops ('Invalid model'); its models: "
            "{}",
            model, conf.filename().string(), fmt::join(known, ", ")));
  }
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < columns.size() && i < it->second.size(); ++i)
    out[columns[i]] = it->second[i];
  return out;
}

WrappedCommand expand_modelzoo(const WrapperCall& call, const fs::path& root) {
  WrappedCommand out;
  auto env = call.environment;
  const auto get = [&](const std::string& k) {
    const auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  const auto fail = [&](const std::string& why) -> void {
    throw InputError(call.script_path, call.wrapper_word, why);
  };
  // ${X:-default}: set or empty takes the default.
  const auto set_default = [&](const std::string& k, const std::string& def) {
    if (get(k).empty()) env[k] = def;
  };

  const fs::path wrapper = root / "sbatch_benchmarking.sh";
  if (fnv1a(read_text(wrapper)) != kModelZooWrapperHash)
    out.notes.push_back(
        fmt::format("{} differs from the version whose logic moesim follows ({}): flags it adds "
                    "otherwise are not seen",
                    wrapper.string(), kModelZooOrigin));
  // 1.
  env["WORKSPACE"] = root.string();
  set_default("MODEL", "your_own_model");
  set_default("CLUSTER", "template");
  set_default("MCORE_RELEASE_VERSION", "your_own_megatron_version");
  set_default("MEGATRON_PATH", "your_own_megatron_path");
  set_default("CONTAINER_IMAGE", "your_own_container_image");
  // 2. common.conf, evaluated (it only sets variables).
  const fs::path common = root / "runtime_configs/benchmarking/common.conf";
  {
    ShellOptions so;
    so.script_path = common.string();
    so.environment = env;
    const ShellResult r = evaluate_shell(read_text(common), so);
    for (const auto& [k, v] : r.exported) env[k] = v;
  }
  const std::string pr = get("PR");
  if (pr != "bf16" && pr != "fp8" && pr != "mxfp8")
    fail(fmt::format("PR={}: the wrapper accepts bf16, fp8 or mxfp8 and stops otherwise", pr));
  // 3. The model's row, under the caller's values.
  const std::string model = get("MODEL");
  const auto row = modelzoo_row(root / "runtime_configs/benchmarking/runtime.conf", model,
                                call.script_path, call.wrapper_word);
  static const std::vector<std::pair<std::string, std::string>> kColumns{
      {"TP", "TP"},
      {"PP", "PP"},
      {"EP", "EP"},
      {"CP", "CP"},
      {"VPP", "VPP"},
      {"MBS", "MBS"},
      {"GBS", "GBS"},
      {"LAYERS", "NUM_LAYERS"},
      {"DISPATCHER", "MOE_TOKEN_DISPATCHER"},
      {"GROUPED_GEMM", "MOE_GROUPED_GEMM"},
      {"NNODES", "NNODES"},
      {"RUN_TIME", "RUN_TIME"},
      {"PRETRAIN", "PRETRAIN"},
      {"SLEN", "SEQ_LEN"},
      {"DATASET", "DATASET"}};
  for (const auto& [column, var] : kColumns) {
    const auto it = row.find(column);
    if (it != row.end()) set_default(var, it->second);
  }
  const auto num = [&](const std::string& k) {
    const auto v = to_int(get(k));
    if (!v) fail(fmt::format("{}='{}': the wrapper computes with it as an integer", k, get(k)));
    return *v;
  };
  const std::int64_t layers = num("NUM_LAYERS"), pp = num("PP"), vpp = num("VPP");
  if (pp <= 0 || vpp <= 0) fail("PP and VPP must be positive");
  if (vpp > 1)
    set_default("LAYERS_PER_VP", std::to_string(layers / pp / vpp));
  else
    env["LAYERS_PER_VP"] = "false";
  if (layers % pp != 0) {
    for (const char* k : {"PP_FIRST", "PP_LAST"})
      if (const auto it = row.find(k); it != row.end()) set_default(k, it->second);
  } else {
    env["PP_FIRST"] = env["PP_LAST"] = "false";
  }
  // 4.
  out.notes.push_back(fmt::format(
      "{}: cluster_configs/benchmarking/{}.conf not read (Slurm account, output and data "
      "paths only)",
      call.wrapper_word, get("CLUSTER")));
  // 5. The YAML, substituted, its MODEL_ARGS as flags.
  fs::path yaml_path = get("TRAINING_PARAMS_PATH");
  if (yaml_path.is_relative()) yaml_path = root / yaml_path;
  if (!fs::is_regular_file(yaml_path))
    fail(fmt::format("TRAINING_PARAMS_PATH does not exist: {} (the wrapper stops here)",
                     yaml_path.string()));
  YAML::Node doc;
  try {
    doc = YAML::Load(envsubst(read_text(yaml_path), env));
  } catch (const YAML::Exception& e) {
    throw InputError(yaml_path.string(), "", fmt::format("not YAML after envsubst: {}", e.what()));
  }
  std::string params = get("TRAINING_PARAMS");
  std::string max_pos;
  bool max_pos_given = false;
  if (const auto args = doc["MODEL_ARGS"]; args && args.IsMap()) {
    for (const auto& kv : args) {
      const std::string key = kv.first.as<std::string>();
      if (!kv.second.IsNull() && !kv.second.IsScalar())
        throw InputError(yaml_path.string(), "MODEL_ARGS." + key,
                         "a flag's value must be a scalar");
      const std::string value = kv.second.IsNull() ? std::string() : kv.second.Scalar();
      if (key == "--max-position-embeddings") max_pos = value, max_pos_given = true;
      if (value == "false") continue;
      params += " " + key + (value == "true" ? std::string() : " " + value);
    }
  } else {
    throw InputError(yaml_path.string(), "MODEL_ARGS",
                     "missing: the wrapper builds the command from it");
  }
  for (const auto& a : call.args) params += " " + a;
  if (const auto vars = doc["ENV_VARS"]; vars && vars.IsMap())
    for (const auto& kv : vars)
      env[kv.first.as<std::string>()] = kv.second.IsNull() ? "" : kv.second.Scalar();
  // 6.
  const bool layout = params.find("--pipeline-model-parallel-layout") != std::string::npos;
  if (vpp > 1 && !layout &&
      params.find("--num-virtual-stages-per-pipeline-rank") == std::string::npos &&
      params.find("--num-layers-per-virtual-pipeline-stage") == std::string::npos)
    params += fmt::format(" --num-virtual-stages-per-pipeline-rank {}", vpp);
  if (layers % pp != 0 && !layout)
    params +=
        fmt::format(" --decoder-first-pipeline-num-layers {} --decoder-last-pipeline-num-layers {}",
                    get("PP_FIRST"), get("PP_LAST"));
  set_default("OPTIMIZER_OFFLOAD", "0");
  const bool offload = get("OPTIMIZER_OFFLOAD") == "1";
  if (offload) params += " --optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d";
  set_default("DISPATCHER", "deepep");
  const std::string dispatcher = get("DISPATCHER");
  if (dispatcher == "alltoall")
    params += " --moe-token-dispatcher-type alltoall";
  else if (dispatcher == "deepep")
    params += " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep";
  else if (dispatcher == "hybridep")
    params +=
        " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
        "--moe-hybridep-num-sms 32";
  else
    out.notes.push_back(fmt::format(
        "DISPATCHER={} adds no flag (the wrapper knows alltoall, deepep, hybridep)", dispatcher));
  const std::string precision_aware =
      " --use-precision-aware-optimizer --main-grads-dtype fp32 --main-params-dtype fp32 "
      "--exp-avg-dtype bf16 "
      "--exp-avg-sq-dtype bf16";
  if (pr == "fp8") {
    params += " --fp8-recipe blockwise --fp8-format e4m3";
    if (!offload) params += " --fp8-param-gather";
    params += precision_aware + " --moe-router-padding-for-fp8";
  } else if (pr == "bf16") {
    params += " --tp-comm-overlap";
  } else {
    params += " --fp8-recipe mxfp8 --fp8-format e4m3";
    if (!offload)
      params +=
          " --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag --overlap-grad-reduce "
          "--overlap-param-gather";
    params += precision_aware + " --moe-router-padding-for-quantization";
  }
  set_default("A2A_OVERLAP", "0");
  const bool a2a = get("A2A_OVERLAP") == "1";
  env["CUDA_DEVICE_MAX_CONNECTIONS"] = a2a ? "32" : "1";
  env["NVTE_FWD_LAYERNORM_SM_MARGIN"] = env["NVTE_BWD_LAYERNORM_SM_MARGIN"] = a2a ? "24" : "0";
  if (a2a) params += " --delay-wgrad-compute --overlap-moe-expert-parallel-comm";
  // yq prints null for a missing key, which bash's -gt reads as 0.
  if (!get("SEQ_LEN").empty()) {
    const auto seq = to_int(get("SEQ_LEN"));
    const auto limit = max_pos_given ? to_int(max_pos) : std::optional<std::int64_t>(0);
    if (seq && limit && *seq > *limit) params += " --max-position-embeddings " + get("SEQ_LEN");
  }
  const std::string profile = get("PROFILE");
  if (profile == "1" || profile == "nsys") {
    out.launcher.push_back("nsys");
    params += " --profile --profile-step-start 23 --profile-step-end 25 --profile-ranks 0 ";
  } else if (profile == "torch") {
    params +=
        " --profile --profile-step-start 23 --profile-step-end 25 --profile-ranks 0 "
        "--use-pytorch-profiler";
  }
  for (auto& w : split_blanks(get("BINDPCIE_PATH"))) out.launcher.push_back(std::move(w));
  out.flags = split_blanks(params);
  // 7. The job.
  const bool gb200 = get("GB200_CLUSTER") == "1";
  const std::int64_t per_node = gb200 ? 4 : 8;
  const std::int64_t nodes = num("NNODES");
  if (nodes <= 0) fail("NNODES must be positive");
  out.gpus = nodes * per_node;
  out.derived.emplace_back("gpus", fmt::format("{}: NNODES={} x {} tasks per node{}", *out.gpus,
                                               nodes, per_node, gb200 ? " (GB200_CLUSTER=1)" : ""));
  if (gb200) {
    env["NVLINK_DOMAIN_SIZE"] = "72";
    if (const auto seg = to_int(get("SEGMENT")); seg && *seg > 0) {
      out.gpus_per_nvlink_domain = *seg * per_node;
      out.derived.emplace_back(
          "placement.gpus_per_nvlink_domain",
          fmt::format("{}: Slurm --segment={} nodes of {} GPUs in one NVLink domain",
                      *out.gpus_per_nvlink_domain, *seg, per_node));
    }
  }
  out.derived.emplace_back(
      "flags", fmt::format("MODEL={} (model_configs/benchmarking/{}.yaml), PR={}, DISPATCHER={}, "
                           "A2A_OVERLAP={}, TP={} PP={} VPP={} EP={} CP={} MBS={} GBS={}",
                           model, model, pr, dispatcher, get("A2A_OVERLAP"), get("TP"), pp, vpp,
                           get("EP"), get("CP"), get("MBS"), get("GBS")));
  out.environment = std::move(env);
  return out;
}

}  // namespace

const std::vector<LaunchWrapper>& launch_wrappers() {
  static const std::vector<LaunchWrapper> k{
      {"sbatch_benchmarking.sh",
       kModelZooOrigin,
       {"runtime_configs/benchmarking/common.conf", "runtime_configs/benchmarking/runtime.conf"},
       expand_modelzoo},
  };
  return k;
}

const LaunchWrapper* find_launch_wrapper(const std::vector<std::string>& words, std::size_t& at) {
  std::size_t i = 0;
  if (!words.empty() && (words[0] == "bash" || words[0] == "sh" || words[0] == "exec")) {
    i = 1;
    while (i < words.size() && words[i].starts_with('-')) ++i;  // bash -x, sh -e
  }
  if (i >= words.size()) return nullptr;
  const std::string name = fs::path(words[i]).filename().string();
  for (const auto& w : launch_wrappers())
    if (w.file_name == name) {
      at = i;
      return &w;
    }
  return nullptr;
}

WrappedCommand expand_launch_wrapper(const LaunchWrapper& w, const WrapperCall& call) {
  const auto holds = [&](const fs::path& dir) {
    if (!fs::is_regular_file(dir / w.file_name)) return false;
    return std::all_of(w.data_files.begin(), w.data_files.end(),
                       [&](std::string_view f) { return fs::is_regular_file(dir / f); });
  };
  std::vector<fs::path> tried;
  if (call.root) {
    tried.emplace_back(*call.root);
  } else {
    // The word's own folder (./x.sh runs from the current folder, which a launch script
    // assumes is the checkout's root), from the script's folder upwards.
    std::error_code ec;
    fs::path dir = call.script_path.empty() ? fs::current_path(ec)
                                            : fs::absolute(call.script_path, ec).parent_path();
    for (int depth = 0; depth < 8 && !dir.empty(); ++depth) {
      tried.push_back(dir / fs::path(call.wrapper_word).parent_path());
      if (dir == dir.parent_path()) break;
      dir = dir.parent_path();
    }
  }
  for (const auto& d : tried)
    if (holds(d)) {
      fs::path root = d.lexically_normal();
      if (!root.has_filename() && root.has_parent_path())
        root = root.parent_path();  // "dir/." read as "dir"
      WrappedCommand out = w.expand(call, root);
      out.derived.insert(out.derived.begin(),
                         {"wrapper", fmt::format("{} in {}, followed as {}", w.file_name,
                                                 root.string(), w.origin)});
      return out;
    }
  throw InputError(
      call.script_path.empty() ? "<args>" : call.script_path, call.wrapper_word,
      fmt::format(
          "the command runs {} ({}), which builds the Megatron command from its own files; no "
          "checkout with {} and {} was found {}: give --wrapper-root DIR",
          w.file_name, w.origin, w.file_name, fmt::join(w.data_files, " and "),
          call.root ? "at --wrapper-root" : "in the script's folder or above it"));
}

}  // namespace moesim::importer
