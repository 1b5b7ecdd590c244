// moesim-calib: runs the calibration kernels on the first CUDA device and writes one
// measurement file (calibration/measurement.hpp): dense and grouped GEMM grids through
// cuBLASLt, one GEMM of the grid under sustained load, streaming-kernel bandwidth vs size,
// launch, CUDA graph and sync costs, and peer-to-peer copies when there is more than one
// GPU. `moesim calibrate run` calls it; `moesim calibrate fit` turns its output into a
// profile.
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "calibration/kernels/calib.hpp"
#include "calibration/measurement.hpp"

using namespace moesim;

namespace moesim::calib {
void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}
}  // namespace moesim::calib

namespace {

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "moesim-calib: calibration kernels for moesim (GEMM, grouped GEMM, GEMM under sustained "
      "load, HBM, launch, graphs, sync, P2P)"};
  std::string out, system;
  bool quick = false, plan_only = false;
  app.add_option("-o,--out", out, "measurement file to write (default: standard output)");
  app.add_option("--system", system,
                 "the moesim system preset this device calibrates (h100, h200, ...)");
  app.add_flag("--quick", quick, "a smaller grid (about a minute, 15 s of it sustained load)");
  app.add_flag("--plan", plan_only, "print the measurement plan and exit without touching a GPU");
  app.set_version_flag("--version", calibration::kCalibToolVersion);
  CLI11_PARSE(app, argc, argv);

  const calibration::Plan plan = calibration::default_plan(quick);
  if (plan_only) {
    std::cout << calibration::plan_json(plan).dump(2) << "\n";
    return 0;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cerr << "moesim-calib: no CUDA device here (" << cudaGetErrorString(cudaGetLastError())
              << "); run it on a machine with an NVIDIA GPU\n";
    return 3;
  }
  try {
    calibration::Measurement m;
    const calib::DeviceInfo d = calib::device_info();
    m.device = d.name;
    m.system = system;
    m.date = today();
    m.tool = calibration::kCalibToolVersion;
    m.source = fmt::format(
        "measured with {} on {} ({} SMs, CUDA runtime {}, driver {}, cuBLASLt {})",
        calibration::kCalibToolVersion, d.name, d.sm_count, d.runtime, d.driver, d.cublaslt);
    m.device_details = {{"sm_count", d.sm_count},
                        {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                        {"memory_GB", d.memory_GB},
                        {"clock_mhz", d.clock_mhz},
                        {"memory_clock_mhz", d.memory_clock_mhz},
                        {"driver", d.driver},
                        {"cuda_runtime", d.runtime},
                        {"cublaslt", d.cublaslt},
                        {"devices", d.devices}};
    const bool fp8 = d.cc_major > 8 || (d.cc_major == 8 && d.cc_minor >= 9);
    for (const auto& g : plan.gemm) {
      if (g.dtype == "fp8" && !fp8) continue;
      const auto r = calib::bench_gemm(g.dtype, g.m, g.n, g.k);
      m.gemm.push_back({r.dtype, r.m, r.n, r.k, 1, r.tflops, r.time_us});
      std::cerr << fmt::format("gemm {} {}x{}x{}: {:.1f} TFLOPS\n", r.dtype, r.m, r.n, r.k,
                               r.tflops);
    }
    for (const auto& g : plan.grouped_gemm) {
      if (g.dtype == "fp8" && !fp8) continue;
      const auto r =
          calib::bench_grouped_gemm(g.dtype, g.groups, g.m, g.n, g.k, plan.grouped_streams);
      m.grouped_gemm.push_back({r.dtype, r.m, r.n, r.k, r.groups, r.tflops, r.time_us});
      std::cerr << fmt::format("grouped {} {} x {}x{}x{}: {:.1f} TFLOPS\n", r.dtype, r.groups, r.m,
                               r.n, r.k, r.tflops);
    }
    for (const auto& g : plan.sustained) {
      if (g.dtype == "fp8" && !fp8) continue;
      for (const auto& b : calib::bench_sustained_gemm(g.dtype, g.m, g.n, g.k, g.seconds, g.bin_s))
        m.sustained_gemm.push_back({g.dtype, g.m, g.n, g.k, b.t_s, b.tflops, b.sm_clock_mhz});
      const auto& last = m.sustained_gemm.back();
      std::cerr << fmt::format(
          "sustained {} {}x{}x{}: {:.1f} TFLOPS at {:.0f} MHz after {:.0f} s\n", g.dtype, g.m, g.n,
          g.k, last.tflops, last.sm_clock_mhz, last.t_s);
    }
    for (const auto& k : plan.memory_kernels)
      for (double b : plan.memory_bytes) {
        const auto r = calib::bench_memory(k, b);
        m.memory.push_back({r.kernel, r.bytes, r.GBps, r.time_us});
      }
    const auto l = calib::bench_launch();
    m.launch = calibration::LaunchPoint{l.host_launch_us, l.device_kernel_us,
                                        l.launch_to_complete_us, l.sync_round_trip_us};
    for (int n : plan.graph_nodes) {
      const auto g = calib::bench_graph(n);
      m.graph.push_back({g.nodes, g.capture_us, g.instantiate_us, g.host_launch_us, g.replay_us});
    }
    if (d.devices > 1)
      for (const auto& p : calib::bench_p2p(plan.p2p_bytes))
        m.p2p.push_back({p.src, p.dst, p.bytes, p.GBps});
    const std::string text = calibration::measurement_json(m).dump(2) + "\n";
    if (out.empty()) {
      std::cout << text;
    } else {
      std::ofstream f(out);
      if (!(f << text)) {
        std::cerr << "moesim-calib: cannot write " << out << "\n";
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "moesim-calib: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
