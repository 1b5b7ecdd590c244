#include "calibration/kineto_trace.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace moesim::calibration {
namespace {

using Words = std::initializer_list<std::string_view>;

// A class's rule: the name contains one of `any`, one of `also` (when given), none of `none`.
struct KernelRule {
  TraceClass cls;
  Words any, also, none;
};

// Attention kernels: FlashAttention (flash::..., flash_fwd_*, FlashAttnBwd), cuDNN's fused
// attention (sdpa, fmha), TE's fused_attn.
const Words kAttention = {"flash", "fmha", "sdpa", "fused_attn", "compute_attn"};

const std::array<KernelRule, 10>& kernel_rules() {
  static const std::array<KernelRule, 10> kRules{{
      // NCCL's kernels: ncclDevKernel_AllReduce_..., ncclKernel_...
      {TraceClass::communication, {"nccl"}, {}, {}},
      // Attention first: FlashAttention's split-KV FlashAttnFwdCombine is not an EP combine.
      {TraceClass::attention_bwd, kAttention, {"bwd", "backward", "bprop", "dgrad"}, {}},
      {TraceClass::attention_fwd, kAttention, {}, {}},
      // DeepEP: dpsk::ep::internode::combine, deep_ep::intranode::combine; HybridEP's combine.
      {TraceClass::ep_combine, {"combine"}, {}, {}},
      // DeepEP's dispatch and its notify / layout kernels (get_dispatch_layout, notify_dispatch,
      // cached_notify: the cached notify serves the combine too, counted here).
      {TraceClass::ep_dispatch, {"dispatch", "notify"}, {}, {}},
      // DeepSeek's dense FP8 GEMMs (the projections, and each expert's weight gradient) live in
      // its library's grouped_gemm namespace (dpsk::grouped_gemm::cuda::fp8_ptp128c,
      // fp8_dptp128c_acc); its grouped GEMMs are the m_grouped_* kernels.
      {TraceClass::gemm, {"grouped_gemm::cuda::fp8_"}, {"gemmkernel"}, {}},
      // DeepGEMM / DeepSeek's grouped GEMMs (grouped_gemm::...::GemmKernel, m_grouped_*), CUTLASS
      // grouped GEMMs; not DeepSeek's transposes that live in the grouped_gemm namespace.
      {TraceClass::grouped_gemm, {"grouped"}, {"gemm"}, {"transpose", "cast_", "_cast"}},
      // cuBLAS (nvjet_*, sm90_xmma_gemm_*, cublasLt), CUTLASS (its Broadcast epilogues too),
      // DeepGEMM's dense GEMM.
      {TraceClass::gemm,
       {"gemm", "xmma", "nvjet", "cutlass", "cublas", "matmul"},
       {},
       {"transpose", "cast_", "_cast", "quant"}},
      // Apex / TE / DeepSeek normalization kernels (layer_norm::ln_fwd_kernel, rmsnorm_*), an FP8
      // output fused in or not.
      {TraceClass::norm,
       {"layer_norm", "layernorm", "rmsnorm", "rms_norm", "ln_fwd", "ln_bwd"},
       {},
       {}},
      // Casts to and from FP8 / MXFP8 with their transposes, amax and scale kernels, scale
      // swizzles (TE's quantize_*, cast_transpose_*, DeepSeek's per_token_cast_to_fp8); not
      // PyTorch's dtype copies (LoadWithCast) nor CUTLASS's Broadcast epilogues.
      {TraceClass::quantize,
       {"cast_", "_cast", "cast<", "quant", "fp8", "amax", "transpose", "swizzle"},
       {},
       {"broadcast", "withcast"}},
  }};
  return kRules;
}

bool contains_any(std::string_view s, Words words) {
  return std::any_of(words.begin(), words.end(),
                     [s](std::string_view w) { return s.find(w) != std::string_view::npos; });
}

}  // namespace

const sim_core::NameTable<TraceClass>& trace_class_names() {
  static constexpr std::array<sim_core::NameEntry<TraceClass>, kTraceClassCount> kEntries{{
      {TraceClass::gemm, "gemm", "dense GEMMs (cuBLAS, CUTLASS, DeepGEMM)"},
      {TraceClass::grouped_gemm, "grouped_gemm", "the experts' grouped GEMMs"},
      {TraceClass::attention_fwd, "attention_fwd", "fused attention, forward"},
      {TraceClass::attention_bwd, "attention_bwd", "fused attention, backward"},
      {TraceClass::ep_dispatch, "ep_dispatch",
       "EP dispatch kernels (DeepEP, HybridEP) and their notify/layout kernels"},
      {TraceClass::ep_combine, "ep_combine", "EP combine kernels"},
      {TraceClass::quantize, "quantize",
       "casts to and from FP8 with their transposes, amax and scale kernels"},
      {TraceClass::norm, "norm", "RMSNorm / LayerNorm"},
      {TraceClass::elementwise, "elementwise",
       "the memory-bound rest: activations, copies, permutes, reductions"},
      {TraceClass::communication, "communication", "NCCL collectives and pipeline transfers"},
  }};
  static constexpr sim_core::NameTable<TraceClass> kTable{kEntries};
  return kTable;
}

TraceClass classify_kernel(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const auto& r : kernel_rules())
    if (contains_any(lower, r.any) && (r.also.size() == 0 || contains_any(lower, r.also)) &&
        !contains_any(lower, r.none))
      return r.cls;
  return TraceClass::elementwise;
}

bool is_host_node_name(std::string_view name) {
  if (name.size() < 4 || name.back() != ')' || name[name.size() - 3] != '(') return false;
  const char pass = name[name.size() - 2];
  if (pass != 'F' && pass != 'B' && pass != 'W') return false;
  const std::string_view part = name.substr(0, name.size() - 3);
  return std::all_of(part.begin(), part.end(),
                     [](unsigned char c) { return std::isalpha(c) || c == '_'; });
}

HostNode& host_node(std::vector<HostNode>& nodes, std::string_view node) {
  auto it =
      std::find_if(nodes.begin(), nodes.end(), [&](const HostNode& h) { return h.node == node; });
  if (it == nodes.end()) it = nodes.insert(nodes.end(), {std::string(node), 0, 0});
  return *it;
}

const HostNode* find_host_node(const std::vector<HostNode>& nodes, std::string_view node) {
  const auto it =
      std::find_if(nodes.begin(), nodes.end(), [&](const HostNode& h) { return h.node == node; });
  return it == nodes.end() ? nullptr : &*it;
}

TraceTotals trace_totals(std::span<const TraceKernel> kernels) {
  TraceTotals t;
  if (kernels.empty()) return t;
  std::vector<std::pair<double, double>> iv;
  iv.reserve(kernels.size());
  for (const auto& k : kernels) {
    auto& c = t.by_class[static_cast<std::size_t>(k.cls)];
    c.count += 1;
    c.seconds += k.end_s - k.start_s;
    t.kernel_s += k.end_s - k.start_s;
    iv.emplace_back(k.start_s, k.end_s);
  }
  t.kernels = static_cast<double>(kernels.size());
  std::sort(iv.begin(), iv.end());
  double start = iv.front().first, end = iv.front().second, last = end;
  for (const auto& [s, e] : iv) {
    if (s > end) {
      t.busy_s += end - start;
      start = s;
      end = e;
    } else {
      end = std::max(end, e);
    }
    last = std::max(last, e);
  }
  t.busy_s += end - start;
  t.span_s = last - iv.front().first;
  return t;
}

}  // namespace moesim::calibration
