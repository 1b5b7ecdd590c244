// importer/megatron_runs.cpp: the Megatron runs a launch script starts (importer/
// megatron_detail.hpp): the script evaluated as bash would (importer/shell_eval.hpp), each
// command that runs a Megatron program or its flags, a registered wrapper's call expanded
// (importer/launch_wrapper.hpp), a `sh -c STRING`'s STRING evaluated in turn; with each run
// its environment, NUMA binding and world size; and the run --run picks.
#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "importer/import_bridge.hpp"
#include "importer/launch_wrapper.hpp"
#include "importer/megatron_detail.hpp"
#include "importer/shell_eval.hpp"

namespace moesim::importer::detail {

// The scenario format's types and readers (Json, InputError, presets, releases) throughout.
using namespace config;
namespace {

// Megatron-LM's training programs other than GPT's (pretrain_gpt.py): what they train is
// not a decoder-only GPT model, which is what moesim models.
const std::map<std::string_view, std::string_view>& other_entries() {
  static const std::map<std::string_view, std::string_view> m{
      {"pretrain_bert.py", "BERT, an encoder with a masked-LM head"},
      {"pretrain_t5.py", "T5, an encoder-decoder"},
      {"pretrain_mamba.py",
       "a hybrid Mamba model (state-space layers), whose command line is not imported yet: a "
       "scenario gives one as a nemotron_h model"},
      {"pretrain_hybrid.py",
       "a hybrid Mamba model (state-space layers), whose command line is not imported yet: a "
       "scenario gives one as a nemotron_h model"},
      {"pretrain_vlm.py", "a vision-language model (an image encoder before the language model)"},
      {"pretrain_retro.py", "RETRO (retrieval with a chunked cross-attention encoder)"},
      {"pretrain_ict.py", "an inverse-cloze retriever (two BERT encoders)"},
      {"pretrain_vision_classify.py", "a vision transformer"},
      {"pretrain_vision_dino.py", "a vision transformer"},
      {"pretrain_vision_inpaint.py", "a vision transformer"},
      {"examples/multimodal/train.py",
       "a vision-language model (an image encoder before the language model)"},
      {"examples/mimo/train.py",
       "a multimodal MIMO model (modality encoders around the language model)"},
      {"examples/mimo/pretrain_mimo.py",
       "a multimodal MIMO model (modality encoders around the language model)"},
  };
  return m;
}

}  // namespace

// The entry's registered kind, by its path's tail.
std::optional<std::string_view> other_entry(const std::string& entry) {
  for (const auto& [tail, what] : other_entries())
    if (entry == tail || (entry.size() > tail.size() && entry.ends_with(tail) &&
                          entry[entry.size() - tail.size() - 1] == '/'))
      return what;
  return std::nullopt;
}

namespace {

bool launcher_binds_numa(const std::vector<std::string>& words, std::size_t end) {
  for (std::size_t i = 0; i < end && i < words.size(); ++i)
    if (words[i].find("bindpcie") != std::string::npos || words[i] == "numactl") return true;
  return false;
}

// torchrun's world size: --nproc_per_node (or --nproc-per-node) times --nnodes, where both
// are integers (an elastic range "1:4" states none).
std::optional<std::int64_t> torchrun_gpus(const std::vector<std::string>& words, std::size_t end) {
  std::optional<std::int64_t> per_node, nodes;
  for (std::size_t i = 0; i < end && i < words.size(); ++i) {
    std::string name = words[i], value;
    if (const auto eq = name.find('='); eq != std::string::npos)
      value = name.substr(eq + 1), name.resize(eq);
    else if (i + 1 < end)
      value = words[i + 1];
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || p != value.data() + value.size() || v <= 0) continue;
    if (name == "--nproc_per_node" || name == "--nproc-per-node") per_node = v;
    if (name == "--nnodes") nodes = v;
  }
  if (per_node && nodes) return *per_node * *nodes;
  return std::nullopt;
}

std::string command_label(const ShellCommand& c) {
  std::string s;
  for (const auto& [k, v] : c.prefix_env) s += k + "=" + v + " ";
  for (const auto& w : c.words) s += w + " ";
  if (!s.empty()) s.pop_back();
  return s.size() > 110 ? s.substr(0, 107) + "..." : s;
}

// Whether a command is a Megatron run: a registered program (pretrain_gpt.py, the others
// named above), or a Megatron flag or a Megatron-Bridge override among its words;
// `python tools/plot.py --log x` is not.
bool is_megatron_run(const std::vector<std::string>& words, std::size_t start,
                     const std::string& entry) {
  if (entry.ends_with("pretrain_gpt.py") || other_entry(entry) || is_bridge_launcher(entry) ||
      is_bridge_training_launcher(entry))
    return true;
  for (std::size_t i = start; i < words.size(); ++i) {
    const auto eq = words[i].find('=');
    if (megatron_flag(words[i].substr(0, eq))) return true;
    // A Megatron-Bridge recipe override (train.micro_batch_size=2): refused by the flags' reader.
    if (!words[i].starts_with("-") && eq != std::string::npos && words[i].find('.') < eq)
      return true;
  }
  return false;
}

// The runs among evaluated commands (script_runs below), appended to `runs`.
void collect_runs(const std::vector<ShellCommand>& commands, const ShellOptions& so,
                  const MegatronImportOptions& opts, std::vector<std::string>& notes,
                  std::vector<Words>& runs, int depth) {
  for (const auto& c : commands) {
    if (c.words.empty() || c.words[0] == "echo" || c.words[0] == "printf")
      continue;  // prints, runs nothing
    std::size_t at = 0;
    if (const LaunchWrapper* wrapper = find_launch_wrapper(c.words, at)) {
      WrapperCall call;
      call.args.assign(c.words.begin() + static_cast<std::ptrdiff_t>(at) + 1, c.words.end());
      call.environment = c.environment;
      call.script_path = so.script_path;
      call.wrapper_word = c.words[at];
      call.root = opts.wrapper_root;
      Words w;
      w.label = command_label(c);
      WrappedCommand wc;
      try {
        wc = expand_launch_wrapper(*wrapper, call);
      } catch (const InputError& e) {  // another run of the script may still be the one asked for
        w.failure = e;
        runs.push_back(std::move(w));
        continue;
      }
      w.words = std::move(wc.flags);
      w.env = std::move(wc.environment);
      w.numa_bound = launcher_binds_numa(wc.launcher, wc.launcher.size());
      w.gpus = wc.gpus;
      w.gpus_per_nvlink_domain = wc.gpus_per_nvlink_domain;
      w.derived = std::move(wc.derived);
      w.notes = std::move(wc.notes);
      runs.push_back(std::move(w));
      continue;
    }
    // `sh -c "STRING"` / `bash -c "STRING"` (srun ... sh -c "${run_cmd}"): STRING is
    // evaluated as a script of its own, in the command's environment; options may come
    // first (bash -x -c, bash -lc).
    bool nested = false;
    for (std::size_t i = 0; depth < 4 && i + 2 < c.words.size(); ++i) {
      if (c.words[i] != "sh" && c.words[i] != "bash") continue;
      std::size_t j = i + 1;
      while (j < c.words.size() && c.words[j].size() > 1 && c.words[j][0] == '-' &&
             c.words[j][1] != '-' && c.words[j].find('c') == std::string::npos)
        ++j;
      if (j + 1 < c.words.size() && c.words[j].size() > 1 && c.words[j][0] == '-' &&
          c.words[j][1] != '-' && c.words[j].find('c') != std::string::npos) {
        ShellOptions inner = so;
        inner.environment = c.environment;
        const ShellResult r = evaluate_shell(c.words[j + 1], inner);
        notes.insert(notes.end(), r.notes.begin(), r.notes.end());
        collect_runs(r.commands, so, opts, notes, runs, depth + 1);
        nested = true;
        break;
      }
    }
    if (nested) continue;
    // The flags follow the program (a *.py path, or a module after -m that is not
    // torch.distributed.run, torchrun's own); a command of flags alone (a flags file)
    // starts with one.
    std::optional<std::size_t> start;
    std::string entry;
    for (std::size_t i = 0; i < c.words.size(); ++i) {
      if ((c.words[i].size() > 3 && c.words[i].ends_with(".py")) ||
          is_bridge_training_launcher(c.words[i])) {  // train.sh, a script
        start = i + 1, entry = c.words[i];
        break;
      }
      if (c.words[i] == "-m" && i + 1 < c.words.size() &&
          !c.words[i + 1].starts_with("torch.distributed")) {
        start = i + 2, entry = c.words[i + 1];
        std::replace(entry.begin(), entry.end(), '.', '/');
        entry += ".py";
        break;
      }
    }
    if (!start && c.words[0].starts_with("--")) start = 0;
    if (!start || !is_megatron_run(c.words, *start, entry)) continue;
    Words w;
    w.label = command_label(c);
    w.entry = entry;
    w.numa_bound = launcher_binds_numa(c.words, *start);
    w.gpus = torchrun_gpus(c.words, *start);
    w.words.assign(c.words.begin() + static_cast<std::ptrdiff_t>(*start), c.words.end());
    w.env = c.environment;
    runs.push_back(std::move(w));
  }
}

}  // namespace

// The Megatron runs a launch script starts, as bash would build them
// (importer/shell_eval.hpp): each command with a `*.py` word (a launcher's own flags come
// before it) or a Python module after -m, or whose words start with `--`, with the
// exported variables and its prefix assignments as environment; each call of a
// registered wrapper (importer/launch_wrapper.hpp), expanded into the command it would
// submit; and the runs of a `sh -c STRING` command's STRING.
std::vector<Words> script_runs(const std::string& text, const MegatronImportOptions& opts,
                               std::vector<std::string>& notes, bool& exited) {
  ShellOptions so;
  so.script_path = opts.source.starts_with("<") ? std::string() : opts.source;
  so.environment = opts.environment;
  so.source_roots = opts.source_roots;
  const ShellResult r = evaluate_shell(text, so);
  notes = r.notes;
  exited = r.exited;
  std::vector<Words> runs;
  collect_runs(r.commands, so, opts, notes, runs, 0);
  return runs;
}

// The run --run picks (1-based); the only one when the script starts one.
Words pick_run(std::vector<Words> runs, const MegatronImportOptions& opts, bool exited) {
  if (runs.empty())
    throw InputError(
        opts.source, "",
        exited ? "the script exits before it launches anything (it checks for variables it expects "
                 "from the environment: give them with --env NAME=VALUE)"
               : "no Megatron command found (a *.py program and its flags, or --name value ...)");
  if (opts.run) {
    if (*opts.run < 1 || *opts.run > static_cast<std::int64_t>(runs.size()))
      throw InputError(opts.source, "--run",
                       fmt::format("run {} of a script that starts {}", *opts.run, runs.size()));
    auto& picked = runs[static_cast<std::size_t>(*opts.run - 1)];
    if (picked.failure) throw *picked.failure;
    return std::move(picked);
  }
  if (runs.size() == 1) {
    if (runs.front().failure) throw *runs.front().failure;
    return std::move(runs.front());
  }
  std::string list;
  for (std::size_t i = 0; i < runs.size(); ++i)
    list += fmt::format("\n  {}: {}", i + 1, runs[i].label);
  throw InputError(
      opts.source, "--run",
      fmt::format("the script starts {} runs; choose one with --run N:{}", runs.size(), list));
}

}  // namespace moesim::importer::detail
