// calibration/measurement.hpp: one measurement file, the form in which all calibration
// data reaches the fitters: moesim-calib's runs on a GPU and published microbenchmarks
// alike (calibration/measurements/*.json; config/load_measurement.hpp reads them).
//
//   { "description": "...",                       optional
//     "device": "NVIDIA H100 80GB HBM3",          required: the GPU measured
//     "system": "h100",                           the system preset it calibrates
//     "date": "2026-11-23", "tool": "...",        required: when, with what
//     "source": "...",                            required: where the numbers come from
//     "device_details": {...},                    moesim-calib: SMs, clocks, driver, CUDA
//     "calls_timed_alone": true,                  optional: each GEMM call timed alone (a
//                                                 CUDA event pair around it, XLA's tables)
//     "gemm":         [{"dtype", "batch"?, "m", "n", "k", "tflops", "time_us"?}],
//                       (batch: that many GEMMs of the shape in one call, default 1)
//     "grouped_gemm": [{"dtype", "groups"?, "m"?, "n", "k", "tflops", "time_us"?}],
//                       (groups and m left out where the source does not give them)
//     "attention":    [{"pass": "fwd"|"bwd", "tflops", "what"?}],
//     "memory":       [{"kernel": "copy"|"elementwise"|"quantize"|"norm", "bytes", "GBps",
//                       "time_us"?, "implementation"?, "what"?}],
//                       (norm: a normalization's kernel time, time_us required, for the fixed
//                       part of a memory-bound kernel's duration, per implementation)
//     "launch":       {"host_launch_us", "device_kernel_us", "launch_to_complete_us",
//                      "sync_round_trip_us"},
//     "graph":        [{"nodes", "capture_us", "instantiate_us", "host_launch_us", "replay_us"}],
//     "p2p":          [{"src", "dst", "bytes", "GBps"}],
//     "ssd_scan":     [{"pass": "fwd", "batch", "seqlen", "heads", "head_dim", "groups",
//                       "state", "chunk", "time_us"}],  Mamba-2's SSD call, all its kernels
//     "sustained_gemm": [{"dtype", "m", "n", "k", "t_s", "tflops", "sm_clock_mhz"?}],
//                       one GEMM shape run back to back for 15-45 s, in bins:
//                       each bin's throughput, its end t_s seconds after the start, and
//                       the SM clock right after it
//     "gdn_chunk":    [{"pass": "fwd"|"bwd", "seqs", "seqlen", "heads", "key_dim",
//                       "value_dim", "time_us"}],  FLA's chunk_gated_delta_rule (chunk 64),
//                       heads the value heads q and k are repeated to
//     "points":       [...] }   communication tables, read by their own fitters
//                               (calibration/link_fit.hpp, calibration/ep_fit.hpp)
// GEMM dtypes: bf16, fp8 (E4M3 per-tensor or blockwise), mxfp8. TFLOPS count 2 m n k per
// GEMM (x groups); attention TFLOPS count causal attention half, as Megatron does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::calibration {

inline constexpr const char* kCalibToolVersion = "moesim-calib 0.1.0";

struct GemmPoint {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0, groups = 1;  // grouped: m and groups 0 where unpublished
  double tflops = 0;
  double time_us = 0;  // 0 where the source gives throughput only
};
struct AttentionPoint {
  std::string pass;  // fwd, bwd
  double tflops = 0;
  std::string what;
};
struct MemoryPoint {
  std::string kernel;  // copy, elementwise, quantize, norm
  double bytes = 0, GBps = 0, time_us = 0;
  std::string implementation = {};  // which kernel of the op (norm: cudnn, pytorch, ...)
  std::string what = {};
};
struct LaunchPoint {
  double host_launch_us = 0, device_kernel_us = 0, launch_to_complete_us = 0,
         sync_round_trip_us = 0;
};
struct GraphPoint {
  int nodes = 0;
  double capture_us = 0, instantiate_us = 0, host_launch_us = 0, replay_us = 0;
};
struct P2pPoint {
  int src = 0, dst = 0;
  double bytes = 0, GBps = 0;
};
// One timed call of Mamba-2's chunked SSD (its kernels' summed device time), forward; its
// shape as the kernels see it (heads of head_dim, groups, state, chunk; no gate z).
struct SsdPoint {
  std::string pass = "fwd";
  std::int64_t batch = 0, seqlen = 0, heads = 0, head_dim = 0, groups = 0, state = 0, chunk = 0;
  double time_us = 0;
};
// One timed call of flash-linear-attention's chunk_gated_delta_rule forward or backward
// (its kernels' summed device time): seqs sequences of seqlen tokens, heads of key_dim and
// value_dim.
struct GdnPoint {
  std::string pass = "fwd";
  std::int64_t seqs = 0, seqlen = 0, heads = 0, key_dim = 0, value_dim = 0;
  double time_us = 0;
};

// One bin of a GEMM shape run back to back (moesim-calib's sustained test): the bin's
// throughput, its end t_s seconds after the run's start, and the SM clock read right after
// it (0: not read). Against the same shape's short benchmark it says how much of the
// Tensor Cores' throughput a GPU keeps under sustained load (the power cap's and the
// heat's clock drop): calibration/sustained_fit.hpp.
struct SustainedPoint {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0;
  double t_s = 0, tflops = 0, sm_clock_mhz = 0;
};

// One MoE layer timed alone (Megatron-LM's moe_perf harness): its forward and backward GPU
// time for one case of a proxy model, dispatcher and precision, the models given with the
// measurement (MoeLayerSet::models, HF-style configs as a scenario's inline model). Checked
// against the step simulation by predict/moe_layer_check.hpp, not fitted.
struct MoeLayerPoint {
  std::string name, model, dispatcher, precision;
  double forward_ms = 0, backward_ms = 0;
};
struct MoeLayerSet {
  int gpus = 0, ep = 0;
  std::int64_t seq_length = 0, micro_batch_size = 0;
  nlohmann::ordered_json models = nlohmann::ordered_json::object();
  std::vector<MoeLayerPoint> cases;
};

struct Measurement {
  std::string file;  // where it was read from (empty when built in memory)
  std::string description, device, system, date, tool, source;
  nlohmann::ordered_json device_details = nlohmann::ordered_json::object();
  std::vector<GemmPoint> gemm, grouped_gemm;
  // Each GEMM point timed as one call between two CUDA events (XLA's tables): its time
  // holds a fixed cost per call (launch, the events, the kernel's prologue and tail) that
  // a stream of kernels in training overlaps; the GEMM fit then takes it out (t0).
  bool calls_timed_alone = false;
  std::vector<AttentionPoint> attention;
  std::vector<MemoryPoint> memory;
  std::optional<LaunchPoint> launch;
  std::vector<GraphPoint> graph;
  std::vector<P2pPoint> p2p;
  std::vector<SsdPoint> ssd_scan;
  std::vector<GdnPoint> gdn_chunk;
  std::vector<SustainedPoint> sustained_gemm;
  std::optional<MoeLayerSet> moe_layer;
};

nlohmann::ordered_json measurement_json(const Measurement& m);

// The file's name without its folder ("(in memory)" for one built in memory): how profiles
// and observations name their sources.
std::string measurement_name(const Measurement& m);

// What moesim-calib measures: DeepSeek-V3-like GEMM shapes (the DeepGEMM table's N, K
// pairs) at several M, MoE expert GEMMs as multi-stream groups, streaming kernels from
// 1 MiB to 1 GiB, graphs of 1 to 1000 nodes, and one GEMM of the grid run back to back
// for `seconds` in bins of `bin_s` (sustained).
struct GemmShape {
  std::string dtype;
  std::int64_t groups = 1, m = 0, n = 0, k = 0;
};
struct SustainedShape {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0;
  double seconds = 0, bin_s = 0;
};
struct Plan {
  std::vector<GemmShape> gemm, grouped_gemm;
  std::vector<SustainedShape> sustained;
  int grouped_streams = 4;
  std::vector<std::string> memory_kernels;
  std::vector<double> memory_bytes;
  std::vector<int> graph_nodes;
  double p2p_bytes = 256.0 * 1024 * 1024;
};
Plan default_plan(bool quick);
nlohmann::ordered_json plan_json(const Plan& p);

}  // namespace moesim::calibration
