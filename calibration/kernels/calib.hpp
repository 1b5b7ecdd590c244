// calibration/kernels/calib.hpp: the measurements of moesim-calib, one function per
// family, each timing on the current CUDA device with CUDA events (warm-up runs first,
// then the mean of repeated runs, the best of three trials) and returning plain numbers;
// main.cpp writes them as a measurement file (calibration/measurement.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moesim::calib {

struct GemmResult {
  std::string dtype;  // bf16, fp8 (E4M3 inputs, BF16 output, FP32 accumulate)
  std::int64_t m = 0, n = 0, k = 0, groups = 1;
  double time_us = 0, tflops = 0;
};
// One GEMM D[m x n] = A[m x k] B[k x n] through cuBLASLt (TN layout, as FP8 requires).
GemmResult bench_gemm(const std::string& dtype, std::int64_t m, std::int64_t n, std::int64_t k);
// `groups` GEMMs of m x n x k each, spread round-robin over `streams` CUDA streams
// (multi-stream cuBLAS, as Transformer Engine's GroupedLinear runs MoE experts).
GemmResult bench_grouped_gemm(const std::string& dtype, std::int64_t groups, std::int64_t m,
                              std::int64_t n, std::int64_t k, int streams);

// One bin of a GEMM run back to back: its throughput, its end `t_s` seconds after the
// first bin's start, and the SM clock right after it (one thread's clock64 cycles over the
// global timer's nanoseconds across 100 us; the GPU's power management acts on longer
// scales, so it is the clock the bin ended at).
struct SustainedBin {
  double t_s = 0, tflops = 0, sm_clock_mhz = 0;
};
// One m x n x k GEMM (as bench_gemm) back to back for about `seconds`, timed in bins of
// about `bin_s` (a whole number of calls each, sized from the short benchmark's time).
std::vector<SustainedBin> bench_sustained_gemm(const std::string& dtype, std::int64_t m,
                                               std::int64_t n, std::int64_t k, double seconds,
                                               double bin_s);

struct MemoryResult {
  std::string kernel;  // copy, elementwise, quantize
  double bytes = 0;    // HBM bytes moved (read + written)
  double time_us = 0, GBps = 0;
};
// copy: y = x; elementwise: y = a x + y (two reads, one write); quantize: BF16 -> FP8
// with one FP32 scale per 128 values (DeepSeek-style 1x128 blocks).
MemoryResult bench_memory(const std::string& kernel, double bytes);

struct LaunchResult {
  double host_launch_us = 0;         // CPU time of one cudaLaunchKernel, queue not full
  double device_kernel_us = 0;       // an empty kernel's device-side cost, back to back in a graph
  double launch_to_complete_us = 0;  // launch + stream sync of one empty kernel on an idle GPU
  double sync_round_trip_us = 0;     // 4-byte device-to-host copy + stream sync
};
LaunchResult bench_launch();

struct GraphResult {
  int nodes = 0;
  double capture_us = 0, instantiate_us = 0;
  double host_launch_us = 0;  // CPU time of cudaGraphLaunch
  double replay_us = 0;       // device time of one replay of `nodes` empty kernels
};
GraphResult bench_graph(int nodes);

struct P2pResult {
  int src = 0, dst = 0;
  double bytes = 0, GBps = 0;
};
// Peer copies between every ordered pair of devices that can access each other.
std::vector<P2pResult> bench_p2p(double bytes);

struct DeviceInfo {
  std::string name;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  double memory_GB = 0;
  double clock_mhz = 0, memory_clock_mhz = 0;
  int driver = 0, runtime = 0, cublaslt = 0;
  int devices = 0;
};
DeviceInfo device_info();

// Throws std::runtime_error with the CUDA / cuBLAS error's text.
void check(bool ok, const std::string& what);

}  // namespace moesim::calib
