// importer/launch_wrapper.hpp: wrappers that a launch script calls with environment
// variables and that build the Megatron command themselves (issue #27 item 1).
//
// Megatron-MoE-ModelZoo's best-practice scripts do not call Megatron: they set TP, PP, EP,
// VPP, PR, DISPATCHER, A2A_OVERLAP, ... and run `bash ./sbatch_benchmarking.sh <extra
// flags>`, which reads its model table (runtime_configs/benchmarking/runtime.conf), the
// model's YAML (model_configs/benchmarking/MODEL.yaml, its ${VARS} substituted as envsubst
// does, its MODEL_ARGS turned into flags as its yq expression does) and appends flags per
// variable, then submits the command to Slurm. Such a wrapper cannot be evaluated as shell
// without running yq, envsubst and sbatch, so moesim follows each registered wrapper's
// logic in code, at a named commit of its repository, and reads the wrapper's own data
// files (the table, common.conf, the YAMLs) from the checkout the script sits in. Nothing
// is run. A wrapper file that differs from the followed commit's is said in the notes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moesim::importer {

// envsubst without a variable list: $NAME and ${NAME} become the environment's value, or
// nothing when unset (GNU gettext's envsubst); anything else stays.
std::string envsubst(std::string_view text, const std::map<std::string, std::string>& env);
// The words of an unquoted value, split on blanks as the shell splits an expansion.
std::vector<std::string> split_blanks(std::string_view s);

// One call of a wrapper from a launch script.
struct WrapperCall {
  std::vector<std::string> args;                   // the words after the wrapper's path
  std::map<std::string, std::string> environment;  // the call's environment (exports and prefix)
  std::string script_path;          // the launch script; its folder and parents are searched
  std::string wrapper_word;         // the word that named the wrapper (./sbatch_benchmarking.sh)
  std::optional<std::string> root;  // the wrapper's checkout, when the user gives it
};

// What the wrapper would launch.
struct WrappedCommand {
  std::vector<std::string> launcher;  // words before the Python script (bindpcie, nsys)
  std::vector<std::string> flags;     // the Megatron flags, split as bash -c splits them
  std::map<std::string, std::string> environment;  // the training processes' environment
  std::optional<std::int64_t> gpus;  // the job's world size, where the wrapper fixes it
  std::optional<std::int64_t> gpus_per_nvlink_domain;  // placement the wrapper asks Slurm for
  std::vector<std::pair<std::string, std::string>>
      derived;                     // what the wrapper decided, and from what
  std::vector<std::string> notes;  // what of it was not followed, and why
};

struct LaunchWrapper {
  std::string_view file_name;                // the script a launch script runs
  std::string_view origin;                   // the repository and commit whose logic is followed
  std::vector<std::string_view> data_files;  // relative to the checkout: how it is recognised
  WrappedCommand (*expand)(const WrapperCall& call, const std::filesystem::path& root);
};

// The registered wrapper a command runs, and the index of the word naming it: the command's
// first word, or the first after `bash` / `sh` and their options. Null when none.
const LaunchWrapper* find_launch_wrapper(const std::vector<std::string>& words, std::size_t& at);

// The wrapper's command for `call`: the checkout is call.root, else the first of the
// script's folder and its parents (and the current folder) holding the wrapper and its
// data files. Throws InputError(script, wrapper word, why) when none does, or when the
// wrapper would stop (an unknown MODEL or PR).
WrappedCommand expand_launch_wrapper(const LaunchWrapper& w, const WrapperCall& call);

const std::vector<LaunchWrapper>& launch_wrappers();

}  // namespace moesim::importer
