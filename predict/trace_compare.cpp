#include "predict/trace_compare.hpp"

#include <algorithm>
#include <array>
#include <tuple>

#include "predict/predict.hpp"

namespace moesim::predict {
namespace {

using calibration::TraceClass;

calibration::TraceTotals rank_totals(const schedules::StepResult& s, int rank) {
  std::vector<calibration::TraceKernel> k;
  for (const auto& sp : s.trace)
    if (sp.rank == rank && sp.track >= 0)
      k.push_back({trace_class(s.label_kinds.at(sp.label), sp.comm, s.labels.at(sp.label)),
                   sp.start_s, sp.end_s});
  return calibration::trace_totals(k);
}

constexpr const char* kOutside = "(outside the nodes)";

// The host thread's CPU time (its spans, track -1) by node, the nodes in order of first
// appearance and the rest last.
std::vector<calibration::HostNode> host_nodes(const schedules::StepResult& s, int rank) {
  std::vector<calibration::HostNode> out;
  calibration::HostNode outside{kOutside, 0, 0};
  for (const auto& sp : s.trace) {
    if (sp.rank != rank || sp.track >= 0) continue;
    const std::string node = host_node_of(s.label_kinds.at(sp.label));
    calibration::HostNode* h = node.empty() ? &outside : &calibration::host_node(out, node);
    h->count += 1;
    h->seconds += sp.end_s - sp.start_s;
  }
  out.push_back(outside);
  return out;
}

schedules::StepResult traced_step(const config::Scenario& sc) {
  schedules::StepOptions opt;
  opt.trace = true;
  return predict(sc, opt).step;
}

}  // namespace

TraceClass trace_class(const schedules::LabelKind& kind, std::uint8_t comm,
                       const std::string& label) {
  using workload::CommOp;
  if (kind.layer) {
    switch (kind.comm) {
      case CommOp::ep_dispatch:
      case CommOp::ep_all_gather:
        return TraceClass::ep_dispatch;
      case CommOp::ep_combine:
        return TraceClass::ep_combine;
      case CommOp::tp_all_gather:
      case CommOp::tp_reduce_scatter:
      case CommOp::tp_amax_all_reduce:
        return TraceClass::communication;
      case CommOp::none:
        break;
    }
    // The dispatcher's own small kernels priced as memory kernels (DeepEP's notify, HybridEP's
    // flag and done kernels, forward and backward) count with the dispatch; HybridEP's
    // buffer copy (dispatch_copy) is an HBM copy, elementwise as a trace would class it.
    if (label.find("dispatch") != std::string::npos &&
        label.find("dispatch_copy") == std::string::npos)
      return TraceClass::ep_dispatch;
    switch (kind.cls) {
      case hw_models::KernelClass::gemm:
        return TraceClass::gemm;
      case hw_models::KernelClass::grouped_gemm:
        return TraceClass::grouped_gemm;
      case hw_models::KernelClass::attention_fwd:
        return TraceClass::attention_fwd;
      case hw_models::KernelClass::attention_bwd:
        return TraceClass::attention_bwd;
      case hw_models::KernelClass::quantize:
        return TraceClass::quantize;
      case hw_models::KernelClass::memory:
        return label.find("norm.") != std::string::npos || label.find("_norm") != std::string::npos
                   ? TraceClass::norm
                   : TraceClass::elementwise;
      case hw_models::KernelClass::gather:
      case hw_models::KernelClass::scan:
      case hw_models::KernelClass::delta_rule:
        return TraceClass::elementwise;
    }
  }
  return comm != 0 ? TraceClass::communication : TraceClass::elementwise;
}

std::string host_node_of(const schedules::LabelKind& kind) {
  using workload::Module;
  // Module -> DualPipe part (DeepSeek's profile-data train.json: attn, dispatch, mlp, combine).
  static constexpr std::array<std::pair<Module, const char*>, 8> kParts{{
      {Module::attn, "attn"},
      {Module::moe_router, "attn"},
      {Module::moe_preprocess, "dispatch"},
      {Module::moe_dispatch, "dispatch"},
      {Module::experts, "mlp"},
      {Module::shared_expert, "mlp"},
      {Module::mlp, "mlp"},
      {Module::moe_combine, "combine"},
  }};
  static constexpr std::array<char, 3> kPass{'F', 'B', 'W'};
  if (kind.pass >= kPass.size()) return "";
  for (const auto& [m, part] : kParts)
    if (static_cast<std::size_t>(m) == kind.module)
      return std::string(part) + "(" + kPass[kind.pass] + ")";
  return "";
}

PredictedKernels predicted_kernels(const config::Scenario& sc,
                                   std::optional<std::int64_t> microbatches) {
  PredictedKernels out;
  out.microbatches = microbatches;
  if (!microbatches) {
    const auto s = traced_step(sc);
    out.rank = s.critical_rank;
    out.totals = rank_totals(s, out.rank);
    out.host_nodes = host_nodes(s, out.rank);
    return out;
  }
  // The steady state's two runs (predict.hpp): past the warm-up and the host's transient.
  const auto& p = sc.parallelism;
  std::tie(out.m1, out.m2) = steady_state_pair(sc.pipeline_schedule, p);
  const auto at = [&](std::int64_t m) {
    config::Scenario s = sc;
    s.parallelism.num_microbatches = m;
    s.training.global_batch_size = m * sc.training.micro_batch_size * p.dp;
    return traced_step(s);
  };
  const auto a = at(out.m1), b = at(out.m2);
  out.rank = b.critical_rank;
  const auto ta = rank_totals(a, out.rank), tb = rank_totals(b, out.rank);
  const double k = static_cast<double>(*microbatches) / static_cast<double>(out.m2 - out.m1);
  const auto per = [k](double x1, double x2) { return (x2 - x1) * k; };
  for (std::size_t c = 0; c < calibration::kTraceClassCount; ++c) {
    out.totals.by_class[c].count = per(ta.by_class[c].count, tb.by_class[c].count);
    out.totals.by_class[c].seconds = per(ta.by_class[c].seconds, tb.by_class[c].seconds);
  }
  out.totals.kernels = per(ta.kernels, tb.kernels);
  out.totals.kernel_s = per(ta.kernel_s, tb.kernel_s);
  out.totals.busy_s = per(ta.busy_s, tb.busy_s);
  out.totals.span_s = per(ta.span_s, tb.span_s);
  const auto ha = host_nodes(a, out.rank);
  out.host_nodes = host_nodes(b, out.rank);
  for (auto& h : out.host_nodes) {
    const auto* at_a = calibration::find_host_node(ha, h.node);
    h.count = per(at_a ? at_a->count : 0, h.count);
    h.seconds = per(at_a ? at_a->seconds : 0, h.seconds);
  }
  return out;
}

}  // namespace moesim::predict
