// calibration/corpus_params.hpp: the cross-run physical quantities that no microbenchmark
// pins, which `moesim calibrate corpus` fits over every measured run (calibration/
// corpus_fit.hpp; the fit's driver is predict/corpus.hpp), with their physical bounds and
// where each is written into a system.
//
// The quantities, each shared by all runs of its kind and written into every system
// preset through calibration/profiles/corpus.json:
//   host.rank_contention                   a loaded training process's host costs over the
//                                           op-loop microbenchmarks are 1 + this x the
//                                           training processes on its CPU socket (every
//                                           system: hw_models::host_load_factor)
//   host.numa_unbound_factor               host costs without NUMA binding over bound
//                                           (runs with stack.cpu_numa_binding off)
//   ep_dispatch.deepep_tuned_factor        DeepEP's bandwidth once NVIDIA tuned its NVL72
//                                           kernels over the library's fitted (pre-tuning)
//                                           GB200 rates (GB200 and GB300, stack.deepep_tuned)
//   efficiency.sustained_clock_factor      Tensor Core throughput under a training step's
//                                           sustained load over the short benchmarks', one
//                                           per GPU power class (700 W Hopper SXM, B200,
//                                           GB200, GB300: each runs at its own power cap)
//   efficiency.gemm.fp4                    GB300's NVFP4 GEMM throughput over its dense FP4
//                                           peak (no NVFP4 GEMM figure of the GPU is public)
// The ranges are physical bounds, not fitting aids (corpus_params.cpp says why each).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw_models/system.hpp"

namespace moesim::calibration {

struct CorpusParamInfo {
  std::string_view name;  // its path in a system preset
  std::string_view help;
  double initial, lo, hi;
  void (*set)(hw_models::SystemSpec&, double);
  // The GPUs (preset gpu.name, '|'-separated) whose systems the value holds for; empty: all.
  std::string_view gpus = {};
  bool applies_to(const hw_models::SystemSpec& s) const;
  // "efficiency.sustained_clock_factor [GB200]": the name with its GPUs.
  std::string label() const;
};
std::span<const CorpusParamInfo> corpus_params();

// The GPU names of a '|'-separated list.
std::vector<std::string_view> gpu_names(std::string_view list);

}  // namespace moesim::calibration
