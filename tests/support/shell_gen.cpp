#include "support/shell_gen.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace moesim::test {
namespace {

namespace fs = std::filesystem;

struct Flag {
  std::string name, value;  // value "" for a switch
};

// A small MoE command Megatron runs (every flag it needs, the rest at its defaults).
std::vector<Flag> small_moe() {
  return {{"--num-layers", "4"},
          {"--hidden-size", "2048"},
          {"--num-attention-heads", "16"},
          {"--group-query-attention", ""},
          {"--num-query-groups", "4"},
          {"--ffn-hidden-size", "6144"},
          {"--swiglu", ""},
          {"--num-experts", "64"},
          {"--moe-router-topk", "4"},
          {"--moe-ffn-hidden-size", "768"},
          {"--moe-grouped-gemm", ""},
          {"--moe-permute-fusion", ""},
          {"--vocab-size", "151936"},
          {"--seq-length", "4096"},
          {"--micro-batch-size", "1"},
          {"--global-batch-size", "64"},
          {"--bf16", ""},
          {"--expert-model-parallel-size", "8"},
          {"--moe-token-dispatcher-type", "alltoall"},
          {"--lr", "1e-4"}};
}

// Flags a run may add, each with values Megatron takes and some it does not.
const std::vector<std::pair<std::string, std::vector<std::string>>>& optional_flags() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> f{
      {"--tensor-model-parallel-size", {"1", "2", "4", "8", "3"}},
      {"--pipeline-model-parallel-size", {"1", "2", "4"}},
      {"--num-virtual-stages-per-pipeline-rank", {"2", "4"}},
      {"--pipeline-model-parallel-layout", {"Et|tt|tL", "Et*2|t*2L", "(t|)*2", "E|(t"}},
      {"--context-parallel-size", {"1", "2"}},
      {"--sequence-parallel", {""}},
      {"--moe-token-dispatcher-type", {"alltoall", "allgather", "flex"}},
      {"--moe-flex-dispatcher-backend", {"deepep", "hybridep", "nccl"}},
      {"--moe-enable-deepep", {""}},
      {"--overlap-moe-expert-parallel-comm", {""}},
      {"--delay-wgrad-compute", {""}},
      {"--cuda-graph-impl", {"transformer_engine", "local", "none"}},
      {"--cuda-graph-scope", {"attn", "attn moe_router moe_preprocess", "full_iteration", "mlp"}},
      {"--recompute-granularity", {"selective", "full"}},
      {"--recompute-modules", {"moe_act", "layernorm moe_act", "core_attn"}},
      {"--recompute-method", {"uniform", "block"}},
      {"--recompute-num-layers", {"1", "2"}},
      {"--use-distributed-optimizer", {""}},
      {"--overlap-grad-reduce", {""}},
      {"--overlap-param-gather", {""}},
      {"--fp8-format", {"hybrid", "e4m3"}},
      {"--fp8-recipe", {"blockwise", "tensorwise", "mxfp8", "delayed"}},
      {"--optimizer", {"adam", "muon"}},
      {"--mtp-num-layers", {"1"}},
      {"--moe-router-force-load-balancing", {""}},
      {"--moe-expert-capacity-factor", {"1.0", "2"}},
      {"--moe-router-fusion", {""}},
      {"--hidden-dropout", {"0.0", "0.1"}},
      {"--make-vocab-size-divisible-by", {"128"}},
      {"--multi-latent-attention", {""}},
      {"--kv-lora-rank", {"512"}},
      {"--q-lora-rank", {"1536"}},
      {"--tp-comm-overlap", {""}},
      {"--train-iters", {"100"}},
      {"--log-interval", {"1"}},
      {"--save", {"/checkpoints"}},
  };
  return f;
}

// Flags a hostile draw adds: refused, unknown, mistyped.
const std::vector<std::pair<std::string, std::vector<std::string>>>& bad_flags() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> f{
      {"--fp16", {""}},
      {"--no-such-flag", {"", "1"}},
      {"--num-layer", {"4"}},
      {"--optimizer", {"sgd"}},
      {"--recompute-modules", {"bogus"}},
      {"--moe-token-dispatcher-type", {"deepep"}}};
  return f;
}

const std::vector<std::string> kHostileValues = {"0",
                                                 "-1",
                                                 "-0",
                                                 "1e30",
                                                 "9223372036854775807",
                                                 "9223372036854775808",
                                                 "18446744073709551617",
                                                 "abc",
                                                 "",
                                                 "1.5",
                                                 "0x10",
                                                 "1_000",
                                                 "nan",
                                                 "inf",
                                                 "'",
                                                 "\"",
                                                 "$",
                                                 "${",
                                                 "2 3",
                                                 "--bf16",
                                                 "\xff\xfe",
                                                 "1\t2"};

// Constructs the evaluator must refuse or skip, one line each (some span two).
std::vector<std::string> hostile_lines(Rng& rng, int index) {
  std::vector<std::string> out;
  const auto depth = [&] {
    return static_cast<std::size_t>(rng.pick({2, 10, 63, 64, 65, 200, 5000}));
  };
  switch (rng.below(14)) {
    case 0: {  // ${X:-${X:-...}}
      const std::size_t d = depth();
      std::string s;
      for (std::size_t i = 0; i < d; ++i) s += "${X:-";
      s += "1" + std::string(d, '}');
      out.push_back("NEST=" + s);
      break;
    }
    case 1: {  // $(( $(( ... )) ))
      const std::size_t d = depth();
      std::string s;
      for (std::size_t i = 0; i < d; ++i) s += "$(( ";
      s += "1";
      for (std::size_t i = 0; i < d; ++i) s += " ))";
      out.push_back("ARITH=" + s);
      break;
    }
    case 2: {  // parentheses inside arithmetic
      const std::size_t d = depth();
      out.push_back("PAREN=$((" + std::string(d, '(') + "1" + std::string(d, ')') + "))");
      break;
    }
    case 3: {  // a value that doubles
      const auto k = rng.pick({10, 20, 25, 40});
      out.push_back("D0=xxxxxxxx");
      for (std::int64_t i = 1; i <= k; ++i)
        out.push_back("D" + std::to_string(i) + "=$D" + std::to_string(i - 1) + "$D" +
                      std::to_string(i - 1));
      break;
    }
    case 4:
      out.push_back(
          rng.pick({"X=\"unterminated", "Y='unterminated", "Z=${X", "W=$((1+", "if true; then",
                    "fi", "V=$(", "esac", "(", "done", "}", "then", "else"}));
      break;
    case 5:
      out.push_back(std::string("A=$((") +
                    rng.pick({"1/0", "7%0", "9223372036854775807+1", "-9223372036854775807-1",
                              "(-9223372036854775807-1)/-1", "2**64", "1<<70", "08", "0x1F", "a",
                              "a=5", "1 +", "* 2", "9999999999999999999999"}) +
                    "))");
      break;
    case 6:
      out.push_back(std::string("E=") + rng.pick({"${X:?err}",
                                                  "${!X}",
                                                  "${X^^}",
                                                  "${X//a/b}",
                                                  "${X:1:2}",
                                                  "${X#*=}",
                                                  "${X%%.*}",
                                                  "$'\\x41'",
                                                  "${#}",
                                                  "$@",
                                                  "$*",
                                                  "${10}",
                                                  "$#",
                                                  "~",
                                                  "{1..3}",
                                                  "*.sh",
                                                  "${X:-}",
                                                  "${X:=${Y:=3}}",
                                                  "${A[99999999999]}",
                                                  "${99999999999999999999}",
                                                  "${#A[@]}",
                                                  "$((${#X}))",
                                                  "${X:+$((1/0))}"}));
      break;
    case 7:
      out.push_back(
          rng.pick({"declare -A M; M[k]=v", "local L=1", "readonly R=1", "alias ll='ls'", "set -x",
                    "shift 3", "read X", "trap 'touch EXECUTED_trap' EXIT", "(( X++ ))",
                    "{ A=1; B=2; }", "A=1 && B=2 || C=3", "true | false", "exit 0", "return 1",
                    "unset -f f", "sleep 1000", "cd /; pwd", "A=(1 2 3); A+=(4); B=${A[@]:1}"}));
      break;
    case 8:  // odd bytes
      out.push_back(std::string("B=") +
                    rng.pick({"\x01\x02", "\xc3\x28", "\xe2\x82", "a\rb", "\t\t", "\xef\xbb\xbf"}) +
                    "x");
      break;
    case 9: {  // a long value
      out.push_back("LONG=" +
                    std::string(static_cast<std::size_t>(rng.pick({1000, 100000, 1100000})), 'y'));
      break;
    }
    case 10:  // an array indexed hostilely
      out.push_back(rng.pick({"A=(", "A=(1 2", "A[-1]=3", "A[$((1<<62))]=3",
                              "A=([0]=1 [9999999]=2)", "A+=(${A[@]} ${A[@]})"}));
      break;
    case 11:
      out.push_back("cat <<EOF");
      out.push_back(std::string("--num-layers ") + rng.pick({"999", "$(touch EXECUTED_heredoc)"}));
      if (rng.chance(0.7)) out.push_back("EOF");  // else unterminated
      break;
    case 12:  // a test of hostile operands
      out.push_back(std::string("if [ ") +
                    rng.pick({"\"$X\" -eq 1", "1 -lt abc", "-z", "( 1 = 1",
                              "9999999999999999999 -gt 1", "\"\" = \"\" -a", "! ! !"}) +
                    " ]; then T=1; fi");
      break;
    default:
      out.push_back("R" + std::to_string(index) + "=\\");
      break;
  }
  return out;
}

// Constructs moesim does not evaluate, each with a command that would create a file if it ran.
std::string unevaluated_line(Rng& rng, int k) {
  const std::string f = std::string(kExecutedPrefix) + "_" + std::to_string(k);
  switch (rng.below(11)) {
    case 0:
      return "touch " + f;
    case 1:
      return "X" + std::to_string(k) + "=$(touch " + f + "; echo 8)";
    case 2:
      return "Y" + std::to_string(k) + "=`touch " + f + "`";
    case 3:
      return "eval \"touch " + f + "\"";
    case 4:
      return "echo hi > " + f;
    case 5:
      return "for i in 1 2; do touch " + f + "$i; done";
    case 6:
      return "case \"$X\" in a) touch " + f + ";; *) mkdir " + f + ";; esac";
    case 7:
      return "f" + std::to_string(k) + "() { touch " + f + "; }; f" + std::to_string(k);
    case 8:
      return "while true; do touch " + f + "; done";
    case 9:
      return "python -c 'open(\"" + f + "\", \"w\")'";
    default:
      return "bash -c \"touch " + f + "\" &";
  }
}

// One flag's words as the command will see them, and what the script defines for it.
struct Rendered {
  std::vector<std::string> defs;  // lines before the command
  std::string words;              // text in the command
};

Rendered render(const Flag& f, int k, Rng& rng, std::vector<std::string>& env_lines) {
  Rendered r;
  if (f.value.empty()) {
    r.words = f.name;
    return r;
  }
  const std::string var = "V" + std::to_string(k);
  const bool number = !f.value.empty() && std::all_of(f.value.begin(), f.value.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
  const std::string quoted =
      f.value.find_first_of(" '\"$\\") == std::string::npos ? f.value : "'" + f.value + "'";
  switch (rng.below(number ? 9 : 7)) {
    case 0:
      r.defs.push_back(var + "=" + quoted);
      r.words = f.name + " ${" + var + "}";
      break;
    case 1:
      r.defs.push_back(var + "=${" + var + ":-" + quoted + "}");
      r.words = f.name + " $" + var;
      break;
    case 2:
      r.defs.push_back("export " + var + "=" + quoted);
      r.words = f.name + " \"${" + var + "}\"";
      break;
    case 3:
      r.words = f.name + " ${" + var + ":-" + quoted + "}";
      break;
    case 4:  // from a file sourced next to the script
      env_lines.push_back(var + "=" + quoted);
      r.words = f.name + " ${" + var + "}";
      break;
    case 5:
      r.defs.push_back("if [ \"${MODE:-a}\" = \"a\" ]; then");
      r.defs.push_back("  " + var + "=" + quoted);
      r.defs.push_back("else");
      r.defs.push_back("  " + var + "=other");
      r.defs.push_back("fi");
      r.words = f.name + " $" + var;
      break;
    case 6:
      r.words = f.name + "=" + quoted;
      break;
    case 7: {  // a product of two factors
      const std::int64_t v = std::stoll(f.value.size() > 18 ? std::string("1") : f.value);
      const std::int64_t a = v % 2 == 0 && v > 0 ? 2 : 1;
      r.defs.push_back("A" + std::to_string(k) + "=" + std::to_string(a));
      r.defs.push_back(var + "=$(( A" + std::to_string(k) + " * " +
                       std::to_string(v / std::max<std::int64_t>(a, 1)) + " ))");
      r.words = f.name + " ${" + var + "}";
      break;
    }
    default:
      r.words = f.name + " $((" + f.value + " + 0))";
      break;
  }
  return r;
}

// A built script: the flags edited, rendered, wrapped in a launcher, with sourced files
// and hostile or unevaluated constructs around them.
// Returns whether the draw is hostile (its flags or constructs edited to be refused).
bool build_script(FuzzCase& c, Rng& rng) {
  std::vector<Flag> flags = small_moe();
  const bool hostile = rng.chance(0.4);
  for (std::uint64_t n = rng.below(6), i = 0; i < n; ++i) {
    const auto& extra = hostile && rng.chance(0.3) ? bad_flags() : optional_flags();
    const auto& [name, values] = extra[rng.below(extra.size())];
    flags.push_back({name, rng.pick(values)});
  }
  if (hostile) {
    for (std::uint64_t n = 1 + rng.below(3), i = 0; i < n; ++i) {
      auto& f = flags[rng.below(flags.size())];
      switch (rng.below(4)) {
        case 0:
          f.value = rng.pick(kHostileValues);
          break;
        case 1:
          flags.erase(flags.begin() + static_cast<std::ptrdiff_t>(rng.below(flags.size())));
          break;
        case 2:
          flags.push_back(flags[rng.below(flags.size())]);
          break;
        default:
          f.name = f.name.substr(0, f.name.size() - 1);
          break;
      }
    }
  }
  std::vector<std::string> lines{"#!/bin/bash"};
  if (rng.chance(0.3)) lines.emplace_back("set -euo pipefail");
  if (rng.chance(0.4)) lines.emplace_back("export CUDA_DEVICE_MAX_CONNECTIONS=1");
  if (rng.chance(0.2)) lines.emplace_back("export NVTE_NORM_FWD_USE_CUDNN=1");

  // Sourced files: next to the script, below it, outside its tree (a canary), absolute,
  // a device, missing, or the script itself.
  std::vector<std::string> env_lines;
  const std::string canary = "hunter2-" + std::to_string(c.index) + "-canary";
  c.files.emplace_back(
      "outside.env", "export TOKEN=" + canary + "\nV0=" + canary + "\nNUM_LAYERS=" + canary + "\n");
  c.canaries.push_back(canary);
  std::string source_line;
  switch (rng.below(hostile ? 12 : 1) + (hostile ? 0 : 6)) {
    case 0:
      source_line = rng.pick(
          {"source ../outside.env", ". ../outside.env", "source \"$(dirname $0)/../outside.env\""});
      break;
    case 1:
      source_line = std::string(rng.pick({"source ", ". "})) + kCaseFolder + "/outside.env";
      break;
    case 2:
      source_line = rng.pick({"source /dev/zero", ". /dev/urandom", "source /etc/passwd",
                              "source /proc/self/environ", "source /", "source .", "source ./lib"});
      break;
    case 3:
      source_line = rng.pick({"source ./missing.sh", "source", ". ''"});
      break;
    case 4:
      source_line = "source ./run.sh";  // itself: nested until the limit
      break;
    case 5:
      source_line = "source ./lib/../../outside.env";
      break;
    default:
      source_line = rng.chance(0.5) ? "source ./env.sh" : ". \"$(dirname \"$0\")/lib/env.sh\"";
      break;
  }
  lines.push_back(source_line);
  // Launcher: variables the command reads.
  const char* launcher = rng.pick(
      {"python pretrain_gpt.py",
       "torchrun --nproc_per_node 8 --nnodes ${NNODES:-2} pretrain_gpt.py",
       "python -m torch.distributed.run --nproc-per-node=8 --nnodes=2 pretrain_gpt.py",
       "srun --ntasks-per-node 8 python pretrain_gpt.py", "bindpcie python pretrain_gpt.py",
       "numactl --cpunodebind=0 python pretrain_gpt.py", "${LAUNCHER} pretrain_gpt.py",
       "NCCL_DEBUG=INFO python3 ${MEGATRON:-.}/pretrain_gpt.py"});
  if (std::string(launcher).find("LAUNCHER") != std::string::npos)
    lines.emplace_back("LAUNCHER=\"torchrun --nproc_per_node 8\"");

  // The flags: rendered one by one, then as lines of the command, an array or a string.
  std::vector<std::string> words;
  for (std::size_t k = 0; k < flags.size(); ++k) {
    Rendered r = render(flags[k], static_cast<int>(k), rng, env_lines);
    lines.insert(lines.end(), r.defs.begin(), r.defs.end());
    words.push_back(std::move(r.words));
  }
  for (std::uint64_t n = rng.below(3), i = 0; i < n; ++i)
    lines.push_back(unevaluated_line(rng, static_cast<int>(i)));
  if (hostile)
    for (std::uint64_t n = 1 + rng.below(2), i = 0; i < n; ++i) {
      auto h = hostile_lines(rng, c.index);
      lines.insert(lines.end(), h.begin(), h.end());
    }
  std::string command;
  switch (rng.below(4)) {
    case 0: {  // an array
      lines.emplace_back("ARGS=(");
      for (const auto& w : words) lines.push_back("  " + w);
      lines.emplace_back(")");
      if (rng.chance(0.3)) lines.emplace_back("ARGS+=(--log-interval 1)");
      command = std::string(launcher) + " \"${ARGS[@]}\"";
      break;
    }
    case 1: {  // a string split on blanks
      std::string s;
      for (std::string w : words) {  // inside the string's double quotes: the words' own go
        std::erase(w, '"');
        s += (s.empty() ? "" : " ") + w;
      }
      lines.push_back("OPTS=\"" + s + "\"");
      command = std::string(launcher) + " $OPTS";
      break;
    }
    default: {  // one flag a line
      command = launcher;
      for (const auto& w : words) command += " \\\n    " + w;
      break;
    }
  }
  lines.push_back(command);
  if (rng.chance(0.1)) {  // two runs: --run picks one
    lines.push_back(command);
    c.stratum = "two runs, ";
  }
  std::string env = "NNODES=2\n";
  for (const auto& l : env_lines) env += l + "\n";
  c.files.emplace_back("s/env.sh", env);
  c.files.emplace_back("s/lib/env.sh", env);
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  c.files.emplace_back("s/run.sh", text);
  c.stratum += std::string(hostile ? "built, hostile" : "built") + ", " +
               source_line.substr(0, source_line.find(' '));
  return hostile;
}

// Mutations of a text: lines deleted, duplicated, swapped, replaced by hostile lines,
// numbers made hostile; bytes inserted or the text cut.
void mutate(std::string& text, Rng& rng, int index) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  if (lines.empty()) lines.emplace_back();
  for (std::uint64_t n = 1 + rng.below(3), i = 0; i < n; ++i) {
    const std::size_t at = rng.below(lines.size());
    switch (rng.below(6)) {
      case 0:
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
        if (lines.empty()) lines.emplace_back();
        break;
      case 1:
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[at]);
        break;
      case 2:
        std::swap(lines[at], lines[rng.below(lines.size())]);
        break;
      case 3: {
        auto h = hostile_lines(rng, index);
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), h.begin(), h.end());
        break;
      }
      case 4: {  // a number made hostile
        std::string& l = lines[at];
        const auto d = l.find_first_of("0123456789");
        if (d != std::string::npos) {
          const auto e = l.find_first_not_of("0123456789", d);
          l.replace(d, e == std::string::npos ? std::string::npos : e - d,
                    rng.pick(kHostileValues));
        }
        break;
      }
      default: {  // bytes
        std::string& l = lines[at];
        l.insert(rng.below(l.size() + 1), rng.pick({"$", "${", "}", "(", ")", "\"", "'", "\\", "`",
                                                    "$((", "\n", ";", "|", "&", "<<"}));
        break;
      }
    }
  }
  text.clear();
  for (const auto& l : lines) text += l + "\n";
  if (rng.chance(0.1)) text.resize(rng.below(text.size() + 1));
}

void mutate_seed(FuzzCase& c, Rng& rng, const ShellSeeds& seeds) {
  const auto& [path, original] = seeds.scripts[rng.below(seeds.scripts.size())];
  std::string script = original;
  const bool zoo = path.starts_with("modelzoo/");
  std::string at = "s/run.sh";
  if (zoo) {
    // The wrapper's checkout beside the script, as the script's folder tree holds it.
    std::size_t mutated = seeds.zoo.size();
    if (rng.chance(0.3) && !seeds.zoo.empty()) mutated = rng.below(seeds.zoo.size());
    for (std::size_t i = 0; i < seeds.zoo.size(); ++i) {
      std::string text = seeds.zoo[i].second;
      if (i == mutated) mutate(text, rng, c.index);
      c.files.emplace_back("zoo/" + seeds.zoo[i].first, text);
    }
    at = "zoo/" + path.substr(std::string("modelzoo/").size());
    if (mutated == seeds.zoo.size()) mutate(script, rng, c.index);
    c.stratum = mutated == seeds.zoo.size() ? "ModelZoo script mutated" : "ModelZoo table mutated";
  } else if (path.starts_with("moe-recipes/")) {
    mutate(script, rng, c.index);
    at = "s/recipe.yaml";  // a recipe is read as YAML for its extension
    c.stratum = "MoE recipe mutated";
  } else {
    mutate(script, rng, c.index);
    c.stratum = "shipped script mutated";
  }
  c.files.emplace_back(at, script);
}

}  // namespace

ShellSeeds read_shell_seeds(const std::string& source_dir) {
  ShellSeeds s;
  const fs::path root = fs::path(source_dir) / "tests" / "data" / "megatron";
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    if (e.path().extension() == ".sh" && rel.find("/model_configs/") == std::string::npos &&
        !rel.ends_with("sbatch_benchmarking.sh"))
      s.scripts.emplace_back(rel, read_file_text(e.path().string()));
    // Megatron-LM's MoE recipes, imported as YAML (importer/moe_recipe.cpp).
    if (e.path().extension() == ".yaml" && rel.starts_with("moe-recipes/"))
      s.scripts.emplace_back(rel, read_file_text(e.path().string()));
    if (rel.starts_with("modelzoo/") && !rel.starts_with("modelzoo/best_practice/"))
      s.zoo.emplace_back(rel.substr(std::string("modelzoo/").size()),
                         read_file_text(e.path().string()));
  }
  std::sort(s.scripts.begin(), s.scripts.end());
  std::sort(s.zoo.begin(), s.zoo.end());
  return s;
}

FuzzCase generate_shell_case(std::uint64_t seed, int index, const ShellSeeds& seeds) {
  Rng rng = Rng::of(seed ^ 0x5e11ULL, index);
  FuzzCase c;
  c.seed = seed;
  c.index = index;
  c.forbidden_prefix = kExecutedPrefix;
  std::string script = "s/run.sh";
  bool hostile = true;
  if (!seeds.scripts.empty() && rng.chance(0.35)) {
    mutate_seed(c, rng, seeds);
    script = c.files.back().first;
  } else {
    hostile = build_script(c, rng);
  }
  if (rng.chance(0.05)) {  // the script cut or corrupted as a whole
    std::string& t = std::find_if(c.files.begin(), c.files.end(), [&](const auto& f) {
                       return f.first == script;
                     })->second;
    if (!t.empty()) t.insert(rng.below(t.size()), 1, static_cast<char>(rng.below(256)));
  }
  // A hostile draw's options may be wrong too.
  std::vector<std::string> cmd{"import", "megatron", script, "--system",
                               hostile ? rng.pick({"h100", "b200", "gb200-nvl72", "h800", "nope"})
                                       : rng.pick({"h100", "h100", "h800", "b200", "gb200-nvl72"})};
  if (rng.chance(hostile ? 0.7 : 0.9)) {
    cmd.emplace_back("--gpus");
    cmd.emplace_back(std::to_string(hostile ? rng.pick({16, 8, 64, 256, 7, 1})
                                            : rng.pick({16, 16, 32, 64, 256})));
  }
  if (rng.chance(c.stratum.starts_with("two runs") ? 0.7 : 0.1)) {
    cmd.emplace_back("--run");
    cmd.emplace_back(std::to_string(rng.pick({1, 2, 2, 3, 9})));
  }
  if (rng.chance(0.1)) {
    cmd.emplace_back("--release");
    cmd.emplace_back(hostile ? rng.pick({"26.02", "custom", "99.99"})
                             : rng.pick({"26.02", "25.09"}));
  }
  if (rng.chance(0.1)) {
    cmd.emplace_back("--env");
    cmd.emplace_back(hostile ? rng.pick({"MODE=b", "X=", "=1", "MODE"})
                             : rng.pick({"MODE=b", "NNODES=4"}));
  }
  if (rng.chance(0.1)) {
    cmd.emplace_back("--source-root");
    cmd.emplace_back(rng.pick({"s/lib", "/nonexistent", "roots"}));
    c.files.emplace_back("roots/x.sh", "X=1\n");
  }
  if (hostile && rng.chance(0.1)) {
    cmd.emplace_back("--model");
    cmd.emplace_back(rng.pick({"qwen3-30b-a3b", "deepseek-v3", "nope"}));
  }
  cmd.emplace_back("-o");
  cmd.emplace_back("scenario.json");
  c.commands.push_back(cmd);
  // What was written, run as a user would next (where the import succeeded).
  if (rng.chance(0.3)) c.commands.push_back({"run", "scenario.json", "--json"});
  return c;
}

}  // namespace moesim::test
