// calibration/kineto_trace.hpp: the GPU kernels of a PyTorch-profiler (Kineto) trace in
// moesim's kernel classes, and what they add up to (issue #25 item 7, `moesim calibrate
// trace`).
//
// Classes: the compute classes of hw_models::KernelClass (GEMM, grouped GEMM, attention
// forward and backward, quantize, and the memory-bound rest split into normalization and
// elementwise) and the communication moesim prices apart (EP dispatch and combine, NCCL).
// A CUDA kernel's name decides its class by the first rule of kKernelRules
// (kineto_trace.cpp) whose words it contains, lower-cased; the rules are read from the
// kernel names of DeepSeek's own training trace (deepseek-ai/profile-data train.json:
// DeepGEMM's grouped GEMMs, DeepEP's internode kernels, FlashAttention 3, DeepSeek's
// cast kernels), Transformer Engine's and cuBLAS's names (nvjet, sm90_xmma, cutlass),
// and NCCL's. What no rule names is elementwise (PyTorch's at::native kernels, copies,
// reductions, top-k, permutation).
//
// Totals of a set of kernel intervals:
//   kernel time   the sum of their durations (what the classes add up to);
//   busy          the union of the intervals: time at least one kernel runs;
//   span          first start to last end;
//   overlapped    kernel time - busy: time two kernels (streams) run at once.
// A communication kernel (DeepEP's dispatch) runs for as long as it waits for its peers,
// so its duration is the communication's exposure on its stream, not its bandwidth.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim_core/names.hpp"

namespace moesim::calibration {

enum class TraceClass : std::uint8_t {
  gemm,
  grouped_gemm,
  attention_fwd,
  attention_bwd,
  ep_dispatch,
  ep_combine,
  quantize,
  norm,
  elementwise,
  communication
};
inline constexpr std::size_t kTraceClassCount = 10;
const sim_core::NameTable<TraceClass>& trace_class_names();

// The class of a CUDA kernel's name (first matching rule; elementwise when none).
TraceClass classify_kernel(std::string_view name);

struct TraceKernel {
  TraceClass cls = TraceClass::elementwise;
  double start_s = 0, end_s = 0;
};

struct ClassTotal {
  double count = 0;  // kernels (a mean per pair, when predicted, need not be whole)
  double seconds = 0;
};

struct TraceTotals {
  std::array<ClassTotal, kTraceClassCount> by_class{};
  double kernels = 0;
  double kernel_s = 0, busy_s = 0, span_s = 0;
  double overlapped_s() const { return kernel_s - busy_s; }
};

TraceTotals trace_totals(std::span<const TraceKernel> kernels);

// The host's side: the ranges a framework marks on a CPU thread (torch.profiler's
// record_function, "cat": "user_annotation") for the nodes of an overlapped schedule,
// named "<part>(<pass>)": DeepSeek's DualPipe marks every layer's attn, dispatch, mlp and
// combine with F (forward), B (backward, the input gradients) and W (the weight
// gradients). A range's wall time on its thread is the node's host time: the CPU work of
// its ops and the Python between them, the autograd engine's work a backward node waits
// for, and any device-to-host wait inside it (DeepSeek's dispatch(F) waits for the token
// counts there).
struct HostNode {
  std::string node;    // "attn(F)"
  double count = 0;    // ranges
  double seconds = 0;  // their wall time, summed
};
// Whether a range name is a node's: a part of letters and underscores, then (F), (B) or (W).
bool is_host_node_name(std::string_view name);
// The node named `node` in `nodes`, added at the end (no ranges, no time) when absent.
HostNode& host_node(std::vector<HostNode>& nodes, std::string_view node);
// The node named `node`, or null.
const HostNode* find_host_node(const std::vector<HostNode>& nodes, std::string_view node);

// A profiled trace: its kernels and its schedule nodes' host ranges (in order of first
// appearance).
struct KinetoTrace {
  std::vector<TraceKernel> kernels;
  std::vector<HostNode> host_nodes;
};

}  // namespace moesim::calibration
