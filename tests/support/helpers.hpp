// Test helpers: shipped files, scenario mutation and in-process CLI runs.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/json_reader.hpp"
#include "config/load.hpp"
#include "predict/predict.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::test {

inline std::string source_path(const std::string& rel) {
  return std::string(MOESIM_SOURCE_DIR) + "/" + rel;
}

// The measured tables checked against a model (NCCL bus bandwidths, EP libraries' rows,
// published memory figures, EP latencies): a 'check' row comes within this many percent of
// the model; a 'gap' row, a known miss with its reason, stays outside it, so that its test
// fails once the model gets it and the row is relabelled.
inline constexpr double kTableTolerancePct = 15;
inline bool within_table_tolerance(double error_pct) {
  return std::abs(error_pct) <= kTableTolerancePct;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every scenario file under scenarios/ (the presets in systems/ and models/ and the sweep
// files in sweeps/ excluded), sorted.
inline std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> out;
  const auto root = source_path("scenarios");
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const auto rel = std::filesystem::relative(e.path(), root).string();
    if (e.path().extension() == ".json" && rel.rfind("systems/", 0) != 0 &&
        rel.rfind("models/", 0) != 0 &&
        rel.rfind("sweeps/", 0) != 0)  // sweep files (docs/SWEEP_FORMAT.md)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `base` with a JSON merge patch (RFC 7386: null removes a key) applied.
inline config::Json patched(config::Json base, const std::string& patch) {
  base.merge_patch(config::Json::parse(patch));
  return base;
}

inline config::Json default_scenario_json() {
  return config::Json::parse(read_text(source_path("scenarios/dsv3-gb200.json")));
}

// A loaded scenario's layer templates, at even EP load.
inline workload::ModelTemplates build_templates(const config::Scenario& sc) {
  return workload::build_templates(
      {sc.model, sc.training, sc.parallelism, sc.framework, sc.stack, sc.padded_vocab(), 1});
}

// The kernel of that name (the test fails without one).
inline const workload::KernelTemplate& kernel(const std::vector<workload::KernelTemplate>& ks,
                                              const std::string& name) {
  const auto k = std::find_if(ks.begin(), ks.end(), [&](const auto& x) { return x.name == name; });
  if (k == ks.end()) throw std::runtime_error("no kernel " + name);
  return *k;
}

// The first traced duration of each kernel name on rank 0's compute stream, or on another
// track (-1: the host thread, whose ops carry their kernel's name) (a prediction with a
// trace: schedules::StepOptions::trace).
inline std::map<std::string, double> first_durations(const predict::Prediction& p, int track = 0) {
  std::map<std::string, double> d;
  for (const auto& s : p.step.trace)
    if (s.rank == 0 && s.track == track) d.try_emplace(p.step.labels[s.label], s.end_s - s.start_s);
  return d;
}

// Two Llama-3-70B layers at TP 8 with sequence parallelism on one H100 node, one microbatch,
// traced, with `framework` as its framework settings: the closed-form tests of what a
// framework setting does to each kernel (tests/schedules/tp_overlap_test.cpp,
// gemm_margin_test.cpp).
inline predict::Prediction traced_tp8(const config::Json& framework) {
  auto j = config::Json::parse(R"({
    "name": "tp8", "system": "h100", "gpus": 8,
    "model": {"base": "llama3-70b", "num_hidden_layers": 2},
    "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 1, "precision": "bf16"},
    "parallelism": {"tp": 8, "sequence_parallel": true}
  })");
  j["framework"] = framework;
  return predict::predict(config::load_scenario_text(j.dump(), "tp8.json"), {true, false});
}

// Loads `j` as if it were a file named test.json.
inline config::Scenario load(const config::Json& j) {
  return config::load_scenario_json(j, "test.json");
}

// Loads `j` as if it were a file named test.json; returns the InputError (or throws).
inline config::InputError load_error(const config::Json& j) {
  try {
    config::load_scenario_text(j.dump(), "test.json");
  } catch (const config::InputError& e) {
    return e;
  }
  throw std::runtime_error("expected an InputError, the scenario loaded: " + j.dump());
}

struct CliResult {
  int status = 0;
  std::string out, err;
};

inline CliResult run_moesim(std::vector<std::string> args) {
  args.insert(args.begin(), "moesim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.status = cli::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A scenario written to a temporary file that is removed afterwards.
class TempFile {
 public:
  explicit TempFile(const std::string& text, const std::string& name = "scenario.json") {
    dir_ = std::filesystem::temp_directory_path() /
           ("moesim-test-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace moesim::test
