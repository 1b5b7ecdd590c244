// reports/corpus.hpp: `moesim calibrate corpus`: the cross-run physical quantities that no
// microbenchmark pins, fitted over every measured run (calibration/corpus_fit.hpp), with
// each run's in-sample and leave-one-out error, and the profile that carries them.
//
// The quantities (kCorpusParams in corpus.cpp), each shared by all runs of its kind and
// written into every system preset through calibration/profiles/corpus.json:
//   host.load_factor                       a loaded training process's host costs over the
//                                           op-loop microbenchmarks, one per host CPU (the
//                                           x86 hosts of H100/H800/H200/H20/B200; Grace of
//                                           GB200/GB300); a new preset's GPU must join one
//   host.numa_unbound_factor               host costs without NUMA binding over bound
//                                           (runs with stack.cpu_numa_binding off)
//   ep_dispatch.deepep_tuned_factor        DeepEP's bandwidth once NVIDIA tuned its NVL72
//                                           kernels over the library's fitted (pre-tuning)
//                                           GB200 rates (GB200 and GB300, stack.deepep_tuned)
//   efficiency.sustained_clock_factor      Tensor Core throughput under a training step's
//                                           sustained load over the short benchmarks', one
//                                           per GPU power class (700 W Hopper SXM, B200,
//                                           GB200, GB300: each runs at its own power cap)
// A measured block with "in_sample" (the run is calibration data elsewhere, as A14 is for
// shared/reference/component-timings.md) is fitted and reported, but kept out of the
// leave-one-out mean.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"

namespace moesim::reports {

struct CorpusParamInfo {
  std::string_view name;  // its path in a system preset
  std::string_view help;
  double initial, lo, hi;
  void (*set)(hw_models::SystemSpec&, double);
  // The GPUs (preset gpu.name, '|'-separated) whose systems the value holds for; empty: all.
  std::string_view gpus = {};
  bool applies_to(const hw_models::SystemSpec& s) const;
};
std::span<const CorpusParamInfo> corpus_params();

struct CorpusRow {
  std::string name, file, system, metric;
  bool in_sample_only = false;  // kept out of the leave-one-out mean
  double measured = 0, in_sample_pct = 0, loo_pct = 0;
};

struct CorpusResult {
  std::vector<double> values;  // per corpus_params(), in order
  std::vector<int> points;     // per parameter: the runs whose prediction it moves
  std::vector<CorpusRow> rows;
  double mape_in = 0, loo_mape = 0;
  int loo_runs = 0;
  int evaluations = 0;
  double wall_s = 0;
};

// Fits the parameters over the scenarios (each with a measured block), simulating on
// `jobs` threads (0: all cores).
CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs);

std::string corpus_text(const CorpusResult& r);
nlohmann::ordered_json corpus_json(const CorpusResult& r);
// The calibration profile (calibration/profiles/corpus.json) carrying the fitted values.
nlohmann::ordered_json corpus_profile(const CorpusResult& r, const std::string& date);

}  // namespace moesim::reports
