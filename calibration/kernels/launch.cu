// calibration/kernels/launch.cu: kernel launch cost, CUDA graph capture and replay,
// device-to-host synchronization, peer-to-peer copies, and the device's description.
#include <cublasLt.h>

#include <chrono>
#include <vector>

#include "calibration/kernels/common.cuh"

namespace moesim::calib {
namespace {

__global__ void empty_kernel() {}

using Clock = std::chrono::steady_clock;
double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

}  // namespace

LaunchResult bench_launch() {
  LaunchResult r;
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  empty_kernel<<<1, 1, 0, s>>>();
  cuda_check(cudaStreamSynchronize(s), "warm-up");
  // Host cost: batches of 256 launches (well below the launch queue's depth), synced
  // between batches so the queue never fills; the smallest batch mean.
  double best = 1e300;
  for (int batch = 0; batch < 40; ++batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 256; ++i) empty_kernel<<<1, 1, 0, s>>>();
    best = std::min(best, since_us(t0) / 256);
    cuda_check(cudaStreamSynchronize(s), "sync");
  }
  r.host_launch_us = best;
  // Launch to completion on an idle GPU, and a device-to-host sync's round trip.
  int* d = nullptr;
  int h = 0;
  cuda_check(cudaMalloc(&d, sizeof(int)), "cudaMalloc");
  double ltc = 1e300, rt = 1e300;
  for (int i = 0; i < 200; ++i) {
    auto t0 = Clock::now();
    empty_kernel<<<1, 1, 0, s>>>();
    cuda_check(cudaStreamSynchronize(s), "sync");
    ltc = std::min(ltc, since_us(t0));
    t0 = Clock::now();
    cuda_check(cudaMemcpyAsync(&h, d, sizeof(int), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(s), "sync");
    rt = std::min(rt, since_us(t0));
  }
  r.launch_to_complete_us = ltc;
  r.sync_round_trip_us = rt;
  cudaFree(d);
  cudaStreamDestroy(s);
  // Device-side cost per kernel: 1000 empty kernels in one graph, replay time / 1000.
  r.device_kernel_us = bench_graph(1000).replay_us / 1000;
  return r;
}

GraphResult bench_graph(int nodes) {
  GraphResult r;
  r.nodes = nodes;
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaGraph_t g;
  auto t0 = Clock::now();
  cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < nodes; ++i) empty_kernel<<<1, 1, 0, s>>>();
  cuda_check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
  r.capture_us = since_us(t0);
  cudaGraphExec_t exec;
  t0 = Clock::now();
  cuda_check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
  r.instantiate_us = since_us(t0);
  cuda_check(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  cuda_check(cudaStreamSynchronize(s), "sync");
  double host = 1e300;
  for (int i = 0; i < 50; ++i) {
    t0 = Clock::now();
    cuda_check(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
    host = std::min(host, since_us(t0));
    cuda_check(cudaStreamSynchronize(s), "sync");
  }
  r.host_launch_us = host;
  r.replay_us = time_us(
      s, [&] { cuda_check(cudaGraphLaunch(exec, s), "cudaGraphLaunch"); }, 2, 10);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return r;
}

std::vector<P2pResult> bench_p2p(double bytes) {
  std::vector<P2pResult> out;
  int n = 0;
  cuda_check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  const std::size_t size = static_cast<std::size_t>(bytes);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      int ok = 0;
      if (a == b || cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess || !ok) continue;
      void *src, *dst;
      cuda_check(cudaSetDevice(b), "cudaSetDevice");
      cuda_check(cudaMalloc(&dst, size), "cudaMalloc");
      cuda_check(cudaSetDevice(a), "cudaSetDevice");
      cudaDeviceEnablePeerAccess(b, 0);
      cudaGetLastError();  // already enabled is fine
      cuda_check(cudaMalloc(&src, size), "cudaMalloc");
      const double us = time_us(
          nullptr, [&] { cuda_check(cudaMemcpyPeerAsync(dst, b, src, a, size), "peer copy"); }, 2,
          10);
      out.push_back({a, b, static_cast<double>(size), static_cast<double>(size) / (us * 1e3)});
      cudaFree(src);
      cuda_check(cudaSetDevice(b), "cudaSetDevice");
      cudaFree(dst);
    }
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  return out;
}

DeviceInfo device_info() {
  DeviceInfo d;
  cuda_check(cudaGetDeviceCount(&d.devices), "cudaGetDeviceCount");
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.memory_GB = static_cast<double>(p.totalGlobalMem) / 1e9;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess)
    d.clock_mhz = khz / 1000.0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess)
    d.memory_clock_mhz = khz / 1000.0;
  cudaGetLastError();
  cuda_check(cudaDriverGetVersion(&d.driver), "cudaDriverGetVersion");
  cuda_check(cudaRuntimeGetVersion(&d.runtime), "cudaRuntimeGetVersion");
  d.cublaslt = static_cast<int>(cublasLtGetVersion());
  return d;
}

}  // namespace moesim::calib
