#include "calibration/corpus_params.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace moesim::calibration {
namespace {

hw_models::Param fitted(double x) {
  return {x, "moesim calibrate corpus (being fitted)"};
}

// Ranges: physical bounds, not fitting aids. A loaded process is no faster than the op
// loop (rank_contention above 0; 0.01, as the fit's log scale needs a positive bound) and,
// with four processes on a socket, not 10x slower (at most 2.25); unbinding NUMA costs at most 5x
// (DeepSeek-scale Grace hosts); tuning makes DeepEP no slower and at most 3x faster; sustained
// clocks sit between half and all of the benchmarks' (B200: 0.868 under back-to-back attention,
// docs/research/blackwell-kernels.md 4).
void set_clock(hw_models::SystemSpec& s, double x) {
  s.efficiency.sustained_clock_factor = fitted(x);
}
// One contention quantity for every host CPU: a loaded process's host costs over its own
// CPU's op-loop microbenchmarks are 1 + rank_contention x the training processes on its
// socket (hw_models::host_load_factor: 4 on the x86 HGX/DGX nodes, 2 on an NVL72 tray's
// Grace). It replaced a load factor per CPU (x86 5.62, Grace 3.54 when fitted apart,
// 2026-11-26), whose ratio the socket's process count explains within 7%. It counts the
// node's GPUs per socket, not the processes a launcher binds to one: the 25.11 GB300 rows,
// whose launcher put a tray's four ranks on one Grace, fit the node's count (mean error
// 7.4%) and not four on the socket (24.8%; docs/research/releases.md 6).
void set_contention(hw_models::SystemSpec& s, double x) {
  s.host.rank_contention = fitted(x);
  s.host.load_factor.reset();
}
constexpr const char* kLoadHelp =
    "host costs of a loaded training process over the op-loop microbenchmarks: 1 + this x the "
    "node's GPUs per CPU socket (one training process each)";
constexpr const char* kClockHelp =
    "Tensor Core throughput under a training step's sustained load over the short benchmarks'";

// GB300's NVFP4 GEMM rate: no NVFP4 GEMM figure of the GPU is published (the preset takes
// B200's cuBLASLt 0.611 of peak over the unconfirmed 15 PF dense), so its efficiency is a
// cross-run quantity of the NVFP4 runs on GB300; bounds: a GEMM reaches between a fifth and
// nine tenths of its peak.
void set_gemm_fp4(hw_models::SystemSpec& s, double x) {
  s.efficiency.gemm[hw_models::Dtype::fp4] = fitted(x);
}

constexpr std::array<CorpusParamInfo, 8> kParams{{
    {"host.rank_contention", kLoadHelp, 1.0, 0.01, 2.25, set_contention},
    {"host.numa_unbound_factor",
     "host costs without NUMA binding over bound (stack.cpu_numa_binding off)", 2.0, 1.0, 5.0,
     [](hw_models::SystemSpec& s, double x) { s.host.numa_unbound_factor = fitted(x); }},
    {"ep_dispatch.deepep_tuned_factor",
     "DeepEP's bandwidth once NVIDIA tuned its NVL72 kernels, over the library's fitted pre-tuning "
     "GB200 rates "
     "(stack.deepep_tuned)",
     1.2, 1.0, 3.0,
     [](hw_models::SystemSpec& s, double x) { s.ep_dispatch.deepep_tuned_factor = fitted(x); },
     "GB200|GB300"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock,
     "H100 SXM|H800 SXM|H200 SXM"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "B200 (HGX)"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "GB200"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "GB300"},
    {"efficiency.gemm.fp4",
     "NVFP4 GEMM throughput over the dense FP4 peak (no published figure for this GPU)", 0.6, 0.2,
     0.9, set_gemm_fp4, "GB300"},
}};

}  // namespace

std::span<const CorpusParamInfo> corpus_params() {
  return kParams;
}

std::vector<std::string_view> gpu_names(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const auto bar = list.find('|');
    out.push_back(list.substr(0, bar));
    if (bar == std::string_view::npos) break;
    list.remove_prefix(bar + 1);
  }
  return out;
}

bool CorpusParamInfo::applies_to(const hw_models::SystemSpec& s) const {
  if (gpus.empty()) return true;
  const auto names = gpu_names(gpus);
  return std::find(names.begin(), names.end(), s.gpu.name) != names.end();
}

std::string CorpusParamInfo::label() const {
  return gpus.empty() ? std::string(name) : fmt::format("{} [{}]", name, gpus);
}

}  // namespace moesim::calibration
