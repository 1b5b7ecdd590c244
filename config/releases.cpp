#include "config/releases.hpp"

#include <algorithm>
#include <array>
#include <functional>

#include <fmt/format.h>

#include "calibration/corpus_params.hpp"
#include "config/inert_settings.hpp"

namespace moesim::config {
namespace {

constexpr std::string_view kDoc = "docs/research/releases.md";

// Containers, oldest first. 23.09, 24.04, 25.01: the NeMo containers of the MLPerf
// submissions in docs/reference/scale-and-goodput.md (sections 1a and 3); their
// components were not researched, and no switch below shipped before 25.09 except the
// launcher's NUMA binding, so the resolution needs no more of them.
constexpr std::array<SoftwareRelease, 15> kReleases{{
    {"23.09",
     {23, 9, 0},
     "NeMo 23.09 (components not researched)",
     "MLPerf Training v3.1 GPT-3 submission (docs/reference/scale-and-goodput.md section 3)",
     {}},
    {"24.04",
     {24, 4, 0},
     "NeMo 24.04 (components not researched)",
     "MLPerf Training v4.0 GPT-3 submission (scale-and-goodput.md section 3)",
     {}},
    {"25.01",
     {25, 1, 0},
     "NeMo 25.01 (components not researched)",
     "MLPerf Training v5.0 Llama 3.1 405B H100 submission (scale-and-goodput.md section 1a)",
     {}},
    {"25.04",
     {25, 4, 0},
     "NeMo 2.3.0; Megatron-Core 0.12.0rc4 (3cdfd613e6); TE 2.2.0.dev0 (bee4649c15)",
     "NeMo v2.3.0 requirements/manifest.json (releases.md section 1)",
     {}},
    {"25.04.01",
     {25, 4, 1},
     "NeMo 2.3.1; Megatron-Core 0.12.1 (f98b1a008b); TE 2.2.0.dev0",
     "NeMo CHANGELOG 'bump mcore to f98b1a0' (releases.md section 1)",
     {}},
    {"25.07",
     {25, 7, 0},
     "NeMo 2.4.0; Megatron-Core 0.13.0rc1 (03f7793114); TE 2.5",
     "NeMo v2.4.0 requirements/manifest.json (releases.md section 1)",
     {}},
    {"25.09",
     {25, 9, 0},
     "Megatron-Bridge 0.1.0, NeMo 2.5.0; Megatron-Core 0.14.0; TE 2.7.0; cuDNN 9.11.0.98",
     "Megatron-Bridge docs/releases/software-versions.md (releases.md section 1)",
     {}},
    {"25.11",
     {25, 11, 0},
     "Megatron-Bridge 0.2.0, NeMo 2.6.0; Megatron-Core dev 0.15 (0d8e0714cd); TE 2.9; cuDNN "
     "9.13.1.26",
     "software-versions.md; Megatron-Bridge v0.2.0 3rdparty/Megatron-LM (releases.md section 1)",
     "v0.2.0"},
    {"26.02",
     {26, 2, 0},
     "Megatron-Bridge 0.3.0, NeMo 2.7.0; Megatron-Core 0.16.0 (b0cc2706dd); TE 2.12; cuDNN "
     "9.18.0.50",
     "software-versions.md; Megatron-Bridge v0.3.0 (releases.md section 1)",
     "v0.3.0"},
    {"26.02.01",
     {26, 2, 1},
     "Megatron-Bridge 0.3.1; Megatron-Core 0.16.1 (55ac708251); TE 2.12",
     "Megatron-Bridge v0.3.1 3rdparty/Megatron-LM (releases.md section 1)",
     "v0.3.1"},
    {"26.04",
     {26, 4, 0},
     "Megatron-Bridge 0.4.0; Megatron-Core 0.17.0 (d7288711ba); TE 2.14; cuDNN 9.20.0.48",
     "software-versions.md; Megatron-Bridge v0.4.0 (releases.md section 1)",
     "v0.4.0"},
    {"26.04.01",
     {26, 4, 1},
     "Megatron-Bridge 0.4.2; Megatron-Core 0.17.1 (2edffadb52); TE 2.14.1; cuDNN 9.20.0.48",
     "Megatron-Bridge v0.4.2 pyproject.toml and 3rdparty/Megatron-LM (releases.md section 1)",
     "v0.4.2"},
    {"26.06",
     {26, 6, 0},
     "Megatron-Bridge 0.5.0; Megatron-Core 0.18.0 (d0b3b77549); TE 2.16; cuDNN 9.21.1.3",
     "software-versions.md; Megatron-Bridge v0.5.0 (releases.md section 1)",
     "v0.5.0"},
    {"26.06.01",
     {26, 6, 1},
     "Megatron-Bridge 0.5.1; Megatron-Core 0.18.2 (458c8d0eca); TE 2.16.0 (b9d690e042)",
     "Megatron-Bridge v0.5.1 pyproject.toml and 3rdparty/Megatron-LM (releases.md section 1)",
     "v0.5.1"},
    {"26.08",
     {26, 8, 0},
     "Megatron-Bridge 0.6.0; Megatron-Core 0.19.0 (cd4afffa64); TE 2.17.1; cuDNN unknown",
     "Megatron-Bridge v0.6.0 docs/versions1.json, pyproject.toml, 3rdparty/Megatron-LM "
     "(releases.md section 1)",
     "v0.6.0"},
}};

// since: on from `first`; never: off in every release; unsettled: off before `first`, and
// from it no source says (taken as on, the newest stack's value, and listed).
enum class Shipped { since, never, unsettled };

// One row per switch (several for a switch whose first release depends on the GPU; the
// first row whose `gpus` lists the scenario's GPU, or is empty, applies).
struct SwitchHistory {
  std::string_view name;
  std::string_view gpus;  // "GB200|GB300"; empty: every GPU
  Shipped shipped;
  ReleaseVersion first;
  std::string_view evidence;
};

constexpr std::array<SwitchHistory, 12> kSwitchHistory{{
    {"mxfp8_alloc_fusion",
     "",
     Shipped::since,
     {25, 9, 0},
     "TE #1793 c30e961fe9 and #1934 96ee7173f3, first in TE 2.6; 25.07 ships TE 2.5, 25.09 TE 2.7"},
    {"permute_fusion_v2", "", Shipped::since, {25, 9, 0}, "TE #1927 dc97cc9efc, first in TE 2.6"},
    {"router_fusion",
     "",
     Shipped::since,
     {25, 9, 0},
     "Megatron-Core !3809 c08d89bea0 (core_v0.14.0) with TE #1883 (TE 2.6); Bridge 0.1.0's "
     "DeepSeek-V3 recipe sets it"},
    {"swizzle_fusion", "", Shipped::since, {25, 9, 0}, "TE #2019 c0d2f1a54b, first in TE 2.7"},
    {"pdl_quant",
     "",
     Shipped::never,
     {},
     "TE #2001 and #2066 were reverted before the v2.7 tag and on main (#2114, #2115); no PDL in "
     "TE main of "
     "2026-08-22; the GB200 journey ran a fork (hxbai TE @ 7dd39147)"},
    {"norm_quant_fusion",
     "",
     Shipped::since,
     {26, 2, 0},
     "needs cuDNN 9.14 and NVTE_NORM_FWD_USE_CUDNN=1: 25.11 ships cuDNN 9.13.1; 26.02 ships 9.18 "
     "and Bridge v0.3.0's "
     "perf_plugins.py keeps the variable for DeepSeek's MXFP8 on GB200 and GB300"},
    {"cpu_numa_binding",
     "",
     Shipped::since,
     {},
     "NeMo's and Megatron-Bridge's performance launcher binds every rank with numactl "
     "(--cpunodebind and --membind $((SLURM_LOCALID/divisor))) in every release; on a GB200 or "
     "GB300 tray with the old divisor 4, to the wrong node for half the ranks (kNodeZero)"},
    {"te_host_slim",
     "",
     Shipped::unsettled,
     {26, 2, 0},
     "TE PR 2146 (the journey's CPU-overhead changes) is open, so off before TE 2.12; the upstream "
     "CPU work since "
     "(#2439 in TE 2.12, #2559, #2957) is not known to equal it"},
    {"cuda_graph_shared_expert",
     "",
     Shipped::since,
     {25, 11, 0},
     "moe_router graph scope with the shared expert: Megatron-Core dev cherry-pick ac658b9a61 "
     "(#1917), 0d8e0714cd"},
    {"deepep_tuned",
     "",
     Shipped::unsettled,
     {},
     "'Tune DeepEP' is a row of NVIDIA's GB200 blog; what changed and when it shipped is not "
     "published"},
    {"hybridep_permute_fusion",
     "",
     Shipped::since,
     {25, 11, 0},
     "DeepEP hybrid-ep #439 f4f2c10 with Megatron-Core's HybridEP backend (dev !4237, 0d8e0714cd)"},
    {"nvfp4_rht_fusion",
     "",
     Shipped::since,
     {26, 6, 0},
     "TE #2555 523801df (nvte_quantize_with_hadamard_transform), first in TE 2.15; 26.04 ships TE "
     "2.14, 26.06 TE 2.16"},
}};

// Whether a row's "GB200|GB300" list names `gpu`.
bool lists_gpu(std::string_view gpus, std::string_view gpu) {
  return std::ranges::count(calibration::gpu_names(gpus), gpu) > 0;
}

const SwitchHistory& history(std::string_view name, std::string_view gpu) {
  for (const auto& h : kSwitchHistory)
    if (h.name == name && (h.gpus.empty() || lists_gpu(h.gpus, gpu))) return h;
  throw std::logic_error(fmt::format("config/releases.cpp has no history for stack.{}", name));
}

// The launcher's divisor: numactl --cpunodebind=$((SLURM_LOCALID/d)). A GB200 or GB300
// tray has two NUMA nodes of two GPUs each (Grace 0 with GPUs 0-1, Grace 1 with GPUs 2-3),
// so d = 4, every GPU's divisor before these releases, binds all four ranks to node 0:
// each process is bound (its threads and memory stay on one Grace, none of what
// host.numa_unbound_factor prices for unbound processes), but ranks 2 and 3 run one Grace
// away from their GPU. Priced as bound; the remote ranks' launch path is not priced and
// `run` says so (release_warnings). The held-out 25.11 GB300 rows back bound over unbound:
// docs/research/releases.md section 6.
struct NodeZeroBinding {
  std::string_view gpus;
  ReleaseVersion fixed;  // the first release with divisor 2
  std::string_view evidence;
};
constexpr std::array<NodeZeroBinding, 2> kNodeZero{{
    {"GB200",
     {25, 7, 0},
     "NeMo 2.3.0 binds SLURM_LOCALID/4 (scripts/performance/utils.py:84); NeMo #13914 "
     "41a3862785 sets numa_divisor 2 for GB200 from NeMo 2.4.0 (scripts/performance/"
     "executors.py:111)"},
    {"GB300",
     {26, 2, 0},
     "GB300 joins the GB200 divisor in Megatron-Bridge v0.3.0 "
     "(scripts/performance/utils/executors.py:126); v0.2.0 divides by 4"},
}};

const NodeZeroBinding* node_zero_binding(const SoftwareRelease& release, std::string_view gpu) {
  for (const auto& b : kNodeZero)
    if (release.version < b.fixed && lists_gpu(b.gpus, gpu)) return &b;
  return nullptr;
}

std::string release_name(const ReleaseVersion& v) {
  for (const auto& r : kReleases)
    if (r.version == v) return std::string(r.name);
  return fmt::format("{:02}.{:02}", v.year, v.month);
}

// A feature the scenario may use, with the release that first shipped it.
struct FeatureGate {
  std::string_view path;
  ReleaseVersion first;
  std::string_view what;
  std::function<bool(const Scenario&)> uses;
};

bool has_scope(const Scenario& sc, workload::CudaGraphScope s) {
  return workload::has(sc.framework.cuda_graph_scope, s);
}

// Whole-layer and full-iteration CUDA graphs are not gated: NeMo captured layers with TE's
// make_graphed_callables before the scopes had names (MLPerf GPT-3 v4.0's _cg recipes), and
// captured the whole iteration itself (MLPerf v5.0 Llama 3.1 405B on GB200, NeMo 25.04,
// FULL_CUDA_GRAPH=True) before Megatron-Core's own (!3473, core_v0.14.0).
const std::vector<FeatureGate>& feature_gates() {
  using hw_models::Dispatcher;
  using workload::CudaGraphScope;
  static const std::vector<FeatureGate> kGates{
      {"training.precision",
       {25, 4, 0},
       "MXFP8 (--fp8-recipe mxfp8: Megatron-Core !2766 3db741160b, core_v0.12.0)",
       [](const Scenario& sc) { return sc.training.precision == workload::Precision::mxfp8; }},
      {"training.precision",
       {25, 11, 0},
       "NVFP4 (TE #2177 3f5b4754, first in TE 2.8; 25.09 ships TE 2.7, 25.11 TE 2.9 with "
       "Megatron-Bridge #910 "
       "82cb5043, v0.2.0)",
       [](const Scenario& sc) { return sc.training.precision == workload::Precision::nvfp4; }},
      {"training.precision",
       {26, 2, 0},
       "NVFP4 grouped GEMMs for MoE experts (TE #2215 b4a1d4d6, first in TE 2.10; 25.11 ships TE "
       "2.9)",
       [](const Scenario& sc) {
         return sc.training.precision == workload::Precision::nvfp4 && sc.model.num_experts > 0;
       }},
      {"framework.dispatcher",
       {25, 4, 0},
       "DeepEP (the flex dispatcher: Megatron-Core !2737 0d389f5e99, core_v0.12.0)",
       [](const Scenario& sc) { return sc.framework.dispatcher == Dispatcher::deepep; }},
      {"framework.dispatcher",
       {25, 11, 0},
       "HybridEP (--moe-flex-dispatcher-backend hybridep: Megatron-Core dev !4237 d9153a50ce, main "
       "#2176)",
       [](const Scenario& sc) {
         return sc.framework.dispatcher == Dispatcher::hybridep && sc.model.num_experts > 0;
       }},
      {"framework.delay_wgrad_compute",
       {25, 7, 0},
       "--delay-wgrad-compute (Megatron-Core !3217 8333bd5bb6, core_v0.13.0)",
       [](const Scenario& sc) { return sc.framework.delay_wgrad_compute; }},
      {"framework.moe_a2a_overlap",
       {25, 9, 0},
       "--overlap-moe-expert-parallel-comm (Megatron-Core !3470 ae1c88296f, core_v0.14.0)",
       [](const Scenario& sc) { return sc.framework.moe_a2a_overlap; }},
      {"framework.cuda_graph_scope",
       {25, 11, 0},
       "the moe_router and moe_preprocess graph scopes (Megatron-Core #1917, dev cherry-pick "
       "ac658b9a61)",
       [](const Scenario& sc) {
         return has_scope(sc, CudaGraphScope::moe_router) ||
                has_scope(sc, CudaGraphScope::moe_preprocess);
       }},
      {"framework.offload",
       {26, 2, 0},
       "fine-grained activation offloading (Megatron-Core #1913 b97184db56, core_v0.16.0)",
       [](const Scenario& sc) {
         return std::any_of(
             sc.framework.offload.begin(), sc.framework.offload.end(),
             [](workload::OffloadTarget t) { return t != workload::OffloadTarget::optimizer; });
       }},
      {"framework.moe_expert_rank_capacity_factor",
       {26, 6, 0},
       "--moe-expert-rank-capacity-factor (Megatron-Core #4247 f007db77b9, core_v0.18.0)",
       [](const Scenario& sc) { return sc.framework.moe_expert_rank_capacity_factor.has_value(); }},
      {"framework.moe_paged_stash",
       {26, 6, 0},
       "--moe-paged-stash (Megatron-Core #4247 f007db77b9, core_v0.18.0)",
       [](const Scenario& sc) { return sc.framework.moe_paged_stash; }},
  };
  return kGates;
}

}  // namespace

std::span<const SoftwareRelease> software_releases() {
  return kReleases;
}

const SoftwareRelease* find_release(std::string_view name) {
  for (const auto& r : kReleases)
    if (r.name == name) return &r;
  return nullptr;
}

std::optional<std::string> unknown_release(std::string_view name) {
  if (name == kCustomRelease || find_release(name)) return std::nullopt;
  return fmt::format("unknown release '{}'; known: {}", name, known_release_names());
}

std::string known_release_names() {
  std::string out;
  for (const auto& r : kReleases) out += fmt::format("{}, ", r.name);
  return out + std::string(kCustomRelease);
}

ReleaseResolution resolve_release(const SoftwareRelease& release, std::string_view gpu) {
  ReleaseResolution out;
  for (const auto& s : workload::stack_switches()) {
    const auto& h = history(s.name, gpu);
    bool on = true;
    switch (h.shipped) {
      case Shipped::since:
        on = release.version >= h.first;
        break;
      case Shipped::never:
        on = false;
        break;
      case Shipped::unsettled:
        on = release.version >= h.first;
        if (on) out.unsettled.emplace_back(s.name);
        break;
    }
    out.stack.*s.member = on;
  }
  return out;
}

std::optional<ReleaseRefusal> release_refusal(const SoftwareRelease& release, const Scenario& sc) {
  for (const auto& g : feature_gates())
    if (release.version < g.first && g.uses(sc))
      return ReleaseRefusal{
          std::string(g.path),
          fmt::format("{} first shipped in release {}; stack.release {} ({}) does not have it ({})",
                      g.what, release_name(g.first), release.name, release.components, kDoc)};
  return std::nullopt;
}

std::vector<std::string> release_warnings(const Scenario& sc) {
  std::vector<std::string> out;
  const auto* rel = find_release(sc.release);
  const auto* zero = rel ? node_zero_binding(*rel, sc.system.gpu.name) : nullptr;
  if (zero && sc.stack.cpu_numa_binding && !stack_switch_inert("cpu_numa_binding", sc) &&
      !sc.gave("stack.cpu_numa_binding"))
    out.push_back(fmt::format(
        "stack.cpu_numa_binding: release {}'s launcher binds every rank of a {} tray to NUMA "
        "node 0 (numactl SLURM_LOCALID/4; {}): priced as bound, each process's threads and "
        "memory local to its Grace; ranks 2 and 3 launch to a GPU on the other Grace, which is "
        "not priced; give stack.cpu_numa_binding to decide",
        sc.release, sc.system.gpu.name, zero->evidence));
  // Megatron-Core before 0.14 (25.04 to 25.07: 1c425a8313, 2025-02-24, until 720c8b40d8,
  // 2025-07-29) ran MLA's down-projections as TE column-parallel Linears: the hidden states
  // gathered over TP before them and their output columns gathered back. moesim prices 0.14's
  // duplicated down-projections (workload/layer_graph_attention.cpp).
  if (rel && rel->version < ReleaseVersion{25, 9, 0} &&
      sc.model.attention == workload::AttentionKind::mla && sc.parallelism.tp > 1)
    out.push_back(fmt::format(
        "parallelism.tp: release {}'s Megatron-Core (before 0.14) ran MLA's down-projections "
        "column-parallel (the hidden states gathered over TP, their output gathered back; "
        "Megatron-LM 1c425a8313 to 720c8b40d8); priced as 0.14's, duplicated on each rank's "
        "own tokens with the latents gathered",
        sc.release));
  // Megatron-Core from 0.16 (26.02: 382eeea395, 2026-01-16) applies MLA's latent norms before
  // the up-projections' output-discarding checkpoint and keeps their outputs; 0.13-0.15
  // recomputed them with the up-projections, as moesim prices.
  if (rel && rel->version >= ReleaseVersion{26, 2, 0} &&
      sc.model.attention == workload::AttentionKind::mla &&
      std::ranges::any_of(sc.framework.recompute_modules, [](workload::RecomputeModule m) {
        return m == workload::RecomputeModule::mla_up_proj ||
               m == workload::RecomputeModule::up_proj;
      }))
    out.push_back(fmt::format(
        "framework.recompute_modules[mla_up_proj]: release {}'s Megatron-Core (0.16 and after, "
        "Megatron-LM 382eeea395) keeps the latent norms' outputs outside the up-projections' "
        "recompute; priced with the norms recomputed, as 0.13-0.15 ran them",
        sc.release));
  for (const auto& name : sc.release_unsettled)
    if (!stack_switch_inert(name, sc))
      out.push_back(fmt::format(
          "stack.{}: release {} does not settle it ({}); taken as on, the newest stack's value; "
          "give stack.{} to decide",
          name, sc.release, history(name, sc.system.gpu.name).evidence, name));
  return out;
}

}  // namespace moesim::config
