#include "schedules/kernel_pricing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hw_models/collectives.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "workload/eplb.hpp"
#include "workload/flops.hpp"

namespace moesim::schedules::detail {
namespace {

// The GPU's link ports (sim_core::Gpu): NVLink and network, each direction.
enum Port : std::size_t { kNvlOut, kNvlIn, kNetOut, kNetIn };

// Megatron rank order tp-cp-(ep)-dp-pp: a group of `size` ranks `stride` apart crosses
// NVLink domains when it spans more than one domain of contiguous ranks.
hw_models::CommGroup group(std::int64_t size, std::int64_t stride, std::int64_t domain) {
  return {size, (size - 1) * stride >= domain, stride};
}

}  // namespace

KernelPricing::KernelPricing(const StepInput& in, const hw_models::CommModel& comm,
                             LabelTable& labels, const FixedChunks* fixed,
                             hw_models::FlowCache* ep_cache)
    : in_(in),
      comm_(comm),
      compute_(in.system),
      labels_(labels),
      fixed_(fixed),
      ep_cache_(ep_cache),
      host_factor_((!in.stack.cpu_numa_binding && in.system.host.numa_unbound_factor
                        ? in.system.host.numa_unbound_factor->value
                        : 1.0) *
                   hw_models::host_load_factor(in.system, in.gpus)),
      te_factor_(in.stack.te_host_slim && in.system.host.te_slim_factor
                     ? in.system.host.te_slim_factor->value
                     : 1.0),
      captured_(in.framework, in.stack) {
  const auto eta = hw_models::link_efficiency(in.system);
  nvl_port_Bps_ = in.system.nvlink.bw_GBps.value * 1e9 * eta.nvlink;
  net_port_Bps_ = in.system.network.nics_per_gpu.value * in.system.network.nic_Gbps.value / 8 *
                  1e9 * eta.network;
  const auto& p = in.parallelism;
  const std::int64_t dom = in.gpus_per_nvlink_domain;
  ep_group_ = group(p.ep, p.etp, dom);
  setup_ep_flows();
  tp_group_ = group(p.tp, 1, dom);
  // Dense gradients are reduced, and the distributed optimizer sharded, over DP x CP
  // (Megatron-Core's data-parallel group with context parallelism; CP ranks hold the same
  // weights); expert layers fold CP into their expert-DP group already.
  dp_group_ = group(p.dp * p.cp, p.tp, dom);
  cp_group_ = group(p.cp, p.tp, dom);
  edp_group_ = group(p.expert_dp, p.ep * p.etp, dom);
  // Optimizer instances cut each into N contiguous inner groups; the outer group takes one
  // rank of each, (gpus / pp) / N apart (Megatron-Core parallel_state.py 963-1010,
  // 1474-1496 at cd4afffa).
  const std::int64_t n = p.optimizer_instances;
  dp_inner_ = group(p.dp * p.cp / n, p.tp, dom);
  edp_inner_ = group(p.expert_dp / n, p.ep * p.etp, dom);
  outer_group_ = group(n, in.gpus / p.pp / n, dom);
  pp_pair_ = group(2, in.gpus / p.pp, dom);
  if (p.eplb && p.eplb->redundant_experts > 0 && in.model.is_moe()) {
    const double R = static_cast<double>(p.eplb->redundant_experts);
    eplb_replicas_ = 2 * R / static_cast<double>(workload::physical_experts(in.model, p));
    replica_pair_ = {2, p.eplb->policy == workload::EplbPolicy::global && ep_group_.crosses_network,
                     1};
  }
  if (fixed_) {
    const auto chunk = [&](const char* name, double seconds) {
      return std::vector<Priced>{
          Priced{labels_.id(name), seconds, 0, 0, false, kCompute, Module::attn, false}};
    };
    PricedLayer one;
    one.fwd = chunk("chunk.fwd", fixed_->seconds(Pass::forward));
    one.bwd = chunk("chunk.bwd", fixed_->seconds(Pass::backward));
    one.bwd_input = chunk("chunk.bwd_input", fixed_->seconds(Pass::backward_input));
    one.bwd_weight = chunk("chunk.wgrad", fixed_->seconds(Pass::backward_weight));
    fwd_bwd_ = chunk("chunk.fwd_bwd", fixed_->pair_s());
    builds_.assign(static_cast<std::size_t>(in.model.num_layers), workload::kRecipeBuild);
    auto& recipe = priced_.builds[workload::kRecipeBuild];
    recipe.dense.fill(one);
    recipe.moe.fill(one);
    priced_.mtp = recipe.mamba = recipe.attention = one;
    pp_s_ = fixed_->p2p_s;
  } else {
    price_templates();
    op_ = Time::from_seconds(in.system.host.op_us.value * host_factor_ * 1e-6);
    launch_ = Time::from_seconds(in.system.host.launch_us.value * host_factor_ * 1e-6);
    graph_ = Time::from_seconds(in.system.host.graph_launch_us.value * host_factor_ * 1e-6);
  }
}

Priced KernelPricing::price(const workload::KernelTemplate& k) {
  // Host time: a Python-level op; a library API call from C++ (TE's quantize); a kernel
  // launched inside a library call with no API call of its own (the driver's launch,
  // cpp_launch_us); a Transformer Engine Linear call costs the module's measured host time
  // (its first launch included); a grouped GEMM launches its further per-expert GEMMs from
  // C++ (multi-stream cuBLAS); plus the allocations and host-only calls before it. All x
  // the loaded-process factor, and the NUMA factor when the process is unbound.
  const auto& host = in_.system.host;
  // A memory-bound kernel from an eager PyTorch op (elementwise, norm, permute) costs
  // the host less than a Linear's forward.
  const bool elementwise = k.work.cls == hw_models::KernelClass::memory ||
                           k.work.cls == hw_models::KernelClass::gather ||
                           k.work.cls == hw_models::KernelClass::scan ||
                           k.work.cls == hw_models::KernelClass::delta_rule;
  const double eager = elementwise && host.elementwise_launch_us ? host.elementwise_launch_us->value
                                                                 : host.launch_us.value;
  const double cpp = host.cpp_launch_us ? host.cpp_launch_us->value : host.library_launch_us.value;
  double us = k.te_module_call   ? host.te_linear_us.value * te_factor_
              : k.cpp_launch     ? cpp
              : k.library_launch ? host.library_launch_us.value
                                 : eager;
  if (k.work.cls == hw_models::KernelClass::grouped_gemm && !k.single_launch)
    us += static_cast<double>(k.work.groups - 1) * host.library_launch_us.value;
  if (k.userbuffers && k.tp_overlap != workload::TpOverlap::none)
    us = userbuffers_host_us(k.tp_overlap, cpp);
  us += k.host_allocs * host.alloc_us.value + k.host_ops * host.op_us.value;
  Priced p{labels_.id(k.name),
           0,
           us * host_factor_ * 1e-6,
           0,
           false,
           kCompute,
           k.module,
           k.host_sync_after,
           k.host_sync_delay};
  labels_.set_module(p.label, k.module);
  labels_.set_kind(p.label, {true, k.work.cls, k.comm});
  p.gemm = k.work.cls == hw_models::KernelClass::gemm && k.comm == workload::CommOp::none;
  // TE's GEMMs, dense and grouped: persistent, and on the SMs gemm_sm_margin leaves.
  const bool te_gemm = k.work.cls == hw_models::KernelClass::gemm ||
                       k.work.cls == hw_models::KernelClass::grouped_gemm;
  p.holds = k.comm == workload::CommOp::none &&
            (te_gemm || k.work.cls == hw_models::KernelClass::attention_fwd ||
             k.work.cls == hw_models::KernelClass::attention_bwd);
  p.tp_overlap = k.tp_overlap;
  p.side = k.side_stream;
  p.join = k.join_side;
  p.side_after_comm = k.side_after_comm;
  const auto& fw = in_.framework;
  switch (k.comm) {
    case workload::CommOp::none:
      p.seconds = compute_.seconds(k.work) * k.time_factor;
      // NVTE_EXT_MARGIN_SM (workload::Framework::gemm_sm_margin): a GEMM on S - m of S SMs;
      // the fused grouped MLP's cuDNN GEMMs take cuDNN's margin instead.
      if (const int margin = k.single_launch ? fw.fused_grouped_mlp_sm_margin : fw.gemm_sm_margin;
          margin > 0 && te_gemm) {
        const int sms = compute_.sm_count();
        p.sms = sms - margin;
        p.seconds *= static_cast<double>(sms) / p.sms;
      }
      // Ring attention (TransformerEngine's cp_comm_type p2p): cp steps, each computing
      // one KV chunk's share while the next chunk arrives from the neighbour, so after
      // the first step each costs the longer of its compute and one KV transfer:
      //   t = c + (cp - 1) max(c, t_kv),   c = t_attention / cp.
      if (k.cp_ring_bytes > 0) {
        const double cp = static_cast<double>(in_.parallelism.cp);
        const double c = p.seconds / cp;
        // One step's transfer: a ring all-gather of the cp chunks over the CP group moves
        // the same bytes over the same links in cp - 1 steps.
        const double t_kv = comm_.all_gather(cp * k.cp_ring_bytes, cp_group_) / (cp - 1);
        p.seconds = c + (cp - 1) * std::max(c, t_kv);
      }
      // CP by all-to-alls (cp_comm a2a): blocking NCCL all-to-alls over the CP group before
      // and after the kernel, on its stream (TE AttnFuncWithCPAndQKVOA2A: flash_attn_a2a_
      // communicate), the whole sequence over heads / cp in between.
      if (k.cp_a2a_in_bytes > 0)
        p.seconds += comm_.all_to_all(k.cp_a2a_in_bytes, cp_group_) +
                     comm_.all_to_all(k.cp_a2a_out_bytes, cp_group_);
      // PDL overlaps the kernel's launch latency with its predecessor's tail.
      if (k.pdl)
        p.seconds = std::max(0.0, p.seconds - in_.system.efficiency.kernel_device_us.value * 1e-6);
      break;
    case workload::CommOp::ep_dispatch:
    case workload::CommOp::ep_combine:
      if (ep_topo_) {
        // The kernels' own flows: their time, and per GPU what crosses the NIC (the
        // destination nodes but its own) and what NVLink carries (what it receives).
        const hw_models::EpFlowTime f = ep_flows(k);
        const double domains = static_cast<double>(ep_topo_->gpus() / ep_topo_->domain_size());
        p.seconds = f.time_s;
        p.ports = port_loads({f.nvl_bytes, f.rdma_bytes * (domains - 1) / domains}, p.seconds);
      } else {
        p.seconds = hw_models::ep_comm_seconds(
            fw.dispatcher, in_.system, comm_,
            {k.comm_bytes, ep_group_, k.comm == workload::CommOp::ep_combine});
        p.ports = port_loads(a2a_bytes(k.comm_bytes, ep_group_), p.seconds);
      }
      p.category = kEpComm;
      // DeepEP / HybridEP kernels hold their SMs, NCCL's one per channel they run on
      // (hw_models::nccl_dispatcher_sms): what a computation beside them (EP overlap,
      // DualPipe) does not get.
      if (fw.dispatcher_sms > 0)
        p.sms = fw.dispatcher_sms;
      else if (const int nccl = hw_models::nccl_dispatcher_sms(fw.dispatcher); nccl > 0)
        p.sms = nccl;
      else
        p.sms = -1;
      p.reserved = true;
      break;
    case workload::CommOp::ep_all_gather:  // NCCL over the EP group (HybridEP's routing maps)
      p.seconds = comm_.all_gather(k.comm_bytes, ep_group_);
      p.category = kEpComm;
      p.sms = -1;
      p.ports = port_loads(ring_bytes(k.comm_bytes, ep_group_), p.seconds);
      break;
    case workload::CommOp::tp_all_gather:
    case workload::CommOp::tp_reduce_scatter:
      p.seconds = comm_.all_gather(k.comm_bytes, tp_group_);
      p.category = kTpComm;
      p.sms = -1;
      p.ports = port_loads(ring_bytes(k.comm_bytes, tp_group_), p.seconds);
      break;
    case workload::CommOp::tp_amax_all_reduce:  // one or two floats: latency only
      p.seconds = hw_models::small_all_reduce_seconds(static_cast<double>(tp_group_.size),
                                                      members_per_domain(tp_group_));
      p.category = kTpComm;
      p.sms = -1;
      break;
  }
  return p;
}

// The host work of a collective TransformerEngine's userbuffers overlap with a GEMM
// (header, "userbuffers' host work"), in microseconds before the load factors.
double KernelPricing::userbuffers_host_us(workload::TpOverlap method, double driver_us) const {
  const double n = static_cast<double>(in_.parallelism.tp);
  const double gemm_us = in_.system.host.library_launch_us.value;
  switch (method) {
    case workload::TpOverlap::ring:
      return (n - 1) * gemm_us + (6 * (n - 1) + 16) * driver_us;
    case workload::TpOverlap::pipeline:
      return 3 * gemm_us + 25 * driver_us;
    case workload::TpOverlap::bulk:
      return 9 * driver_us;
    case workload::TpOverlap::none:
      break;
  }
  return 0;
}

// TP communication overlap (header): each overlapped collective of a pass with the GEMM
// beside it, the next one for a ring all-gather, the previous one otherwise.
void KernelPricing::overlap_tp(std::vector<Priced>& pass,
                               const std::vector<workload::KernelTemplate>& kernels) const {
  // TransformerEngine's userbuffers defaults (initialize_ub): 16 SMs for the pipeline and
  // bulk methods' communication, 4 splits of a pipelined GEMM.
  constexpr double kCommSms = 16, kSplits = 4, kStreams = 3;
  const double n = static_cast<double>(in_.parallelism.tp);
  const double sms = in_.system.gpu.sm_count.value;
  // The GEMM at `g` as `parts` chunks of rows (ring) or columns (pipeline) on min(3, parts)
  // streams (header): parts / s GEMMs of s chunks, its own factors kept; the whole GEMM's time.
  const auto chunked = [&](std::size_t g, double parts, bool rows) {
    const hw_models::ComputeWork& w = kernels[g].work;
    hw_models::ComputeWork c = w;
    const double s = std::min(kStreams, parts), k = static_cast<double>(w.k);
    const double cm = static_cast<double>(w.m) / (rows ? parts / s : 1),
                 cn = static_cast<double>(w.n) / (rows ? 1 : parts / s);
    c.m = static_cast<std::int64_t>(std::ceil(cm));
    c.n = static_cast<std::int64_t>(std::ceil(cn));
    c.flops = 2 * cm * cn * k * static_cast<double>(w.groups);
    c.bytes = (cm * k * w.input_bytes + k * cn * w.input_bytes + cm * cn * 2) * w.groups;
    const double whole = compute_.seconds(w);
    return whole > 0 ? pass[g].seconds * parts / s * compute_.seconds(c) / whole : pass[g].seconds;
  };
  for (std::size_t i = 0; i < pass.size(); ++i) {
    Priced& c = pass[i];
    if (c.tp_overlap == workload::TpOverlap::none) continue;
    const bool next = c.tp_overlap == workload::TpOverlap::ring;
    std::optional<std::size_t> g;
    if (next) {
      for (std::size_t j = i + 1; j < pass.size() && !g; ++j)
        if (pass[j].gemm) g = j;
    } else {
      for (std::size_t j = i; j-- > 0 && !g;)
        if (pass[j].gemm) g = j;
    }
    if (!g) continue;  // no GEMM beside it in this pass: exposed as it is
    Priced& gemm = pass[*g];
    const double tc = c.seconds;
    double total = 0;
    if (next) {
      gemm.seconds = chunked(*g, n, true);
      const double t1 = gemm.seconds / n;
      total = t1 + (n - 1) * std::max(t1, tc / n);
    } else {
      const double tg = c.tp_overlap == workload::TpOverlap::pipeline ? chunked(*g, kSplits, false)
                                                                      : gemm.seconds;
      gemm.seconds = tg * sms / (sms - kCommSms);
      const double tgs = gemm.seconds;
      total = c.tp_overlap == workload::TpOverlap::pipeline
                  ? std::max(tgs, tc) + std::min(tgs, tc) / kSplits
                  : std::max(tgs, tc);
    }
    c.seconds = std::max(0.0, total - gemm.seconds);
  }
}

// DeepEP and HybridEP: their kernels as flows over the EP group's topology, with the
// library's parameters applied through this system's links (hw_models/ep_flows.hpp,
// ep_library_time), the same model `moesim comm` prices: one copy per destination rank
// (each token once per destination node across domains, forwarded over NVLink), not one
// per expert. The scenario loader has refused placements the library cannot run in
// (hw_models::ep_unsupported).
void KernelPricing::setup_ep_flows() {
  const auto& fw = in_.framework;
  const auto& p = in_.parallelism;
  const auto& m = in_.model;
  if (fixed_ || !m.is_moe() || !hw_models::is_ep_library(fw.dispatcher)) return;
  // HybridEP at EP 1 (the loader admits no other library there): one rank whose flows are
  // all to itself, which the flow model leaves to the kernel's fixed latency as it does
  // every rank's own share (ep_flow_time).
  if (p.ep <= 1 && fw.dispatcher != hw_models::Dispatcher::hybridep) return;
  const std::int64_t domain = std::max<std::int64_t>(1, in_.gpus_per_nvlink_domain / p.etp);
  ep_topo_.emplace(in_.system, p.ep, std::min(domain, p.ep));
}

hw_models::EpFlowTime KernelPricing::ep_flows(const workload::KernelTemplate& k) const {
  const auto& m = in_.model;
  const auto& p = in_.parallelism;
  const bool combine = k.comm == workload::CommOp::ep_combine;
  hw_models::EpBenchmark b;
  b.ranks = static_cast<int>(p.ep);
  b.sms = in_.framework.dispatcher_sms;
  b.hidden = static_cast<double>(m.expert_width());  // the latent width under LatentMoE
  // The template's bytes are the hottest rank's per-expert copies: T x k x hidden x element.
  b.element_bytes = k.comm_element_bytes;
  b.tokens = k.comm_bytes / (static_cast<double>(m.topk) * b.hidden * b.element_bytes);
  b.experts = static_cast<int>(m.num_experts);
  b.topk = static_cast<int>(m.topk);
  // The model's group-limited routing over its expert groups (contiguous experts, as the
  // EP ranks hold them), else every domain open to every token.
  b.groups = ep_topo_->gpus() / ep_topo_->domain_size();
  if (m.router_groups > 1 && m.router_topk_groups > 0) {
    b.expert_groups = static_cast<int>(m.router_groups);
    b.expert_topk_groups = static_cast<int>(m.router_topk_groups);
  }
  b.combine = combine;
  const double factor =
      hw_models::ep_bandwidth_factor(in_.system, in_.framework.dispatcher, in_.stack.deepep_tuned);
  if (ep_cache_)
    return ep_cache_->ep_time(in_.system, *ep_topo_, in_.framework.dispatcher, b, factor);
  return hw_models::ep_library_time(in_.system, *ep_topo_, in_.framework.dispatcher, b, factor);
}

void KernelPricing::price_templates() {
  const bool hopper = in_.system.gpu.arch == hw_models::GpuArch::hopper;
  const bool fused =
      workload::fused_grouped_mlp_runs(in_.model, in_.training, in_.framework, hopper);
  const workload::TemplateInputs ti{in_.model,     in_.training, in_.parallelism,
                                    in_.framework, in_.stack,    in_.padded_vocab,
                                    in_.ep_load,   hopper,       fused};
  const workload::ModelTemplates t = workload::build_templates(ti);
  const auto convert = [&](const workload::LayerTemplate& lt, PricedLayer& out) {
    for (const auto& k : lt.fwd) out.saved_bytes += k.saved_bytes;
    for (const auto& k : lt.fwd) {
      out.fwd.push_back(price(k));
      labels_.set_pass(out.fwd.back().label, kFwd);
    }
    overlap_tp(out.fwd, lt.fwd);
    std::vector<bool> weight;
    for (const auto& k : lt.bwd) {
      out.bwd.push_back(price(k));
      weight.push_back(k.name.size() > 6 && k.name.compare(k.name.size() - 6, 6, ".wgrad") == 0);
      labels_.set_pass(out.bwd.back().label, weight.back() ? kWgrad : kBwd);
      out.bwd.back().delayed =
          weight.back() && k.library_launch && in_.framework.delay_wgrad_compute;
    }
    overlap_tp(out.bwd, lt.bwd);
    for (auto* list : {&out.fwd, &out.bwd})
      for (Priced& p : *list) p.merge_class = merge_class(p);
    for (std::size_t i = 0; i < out.bwd.size(); ++i)
      (weight[i] ? out.bwd_weight : out.bwd_input).push_back(out.bwd[i]);
    const std::array<const std::vector<Priced>*, 4> lists{&out.fwd, &out.bwd, &out.bwd_input,
                                                          &out.bwd_weight};
    for (std::size_t i = 0; i < lists.size(); ++i) out.merged[i] = merge_runs(*lists[i]);
  };
  builds_ = decoder_builds(in_.layout, in_.model, in_.training, in_.framework);
  for (unsigned b = 0; b < workload::kDecoderBuilds; ++b) {
    if (std::find(builds_.begin(), builds_.end(), b) == builds_.end()) continue;
    const auto other = b == workload::kRecipeBuild
                           ? std::nullopt
                           : std::optional(workload::build_templates(ti, b));
    const workload::ModelTemplates& from = other ? *other : t;
    auto& to = priced_.builds[b];
    for (const auto mixer : workload::kMixers)
      for (const bool experts : {false, true})
        convert(from.decoder(experts, mixer), to.decoder(experts, mixer));
    convert(from.mamba, to.mamba);
    convert(from.attention, to.attention);
  }
  convert(t.embedding, priced_.embedding);
  convert(t.head, priced_.head);
  convert(t.mtp, priced_.mtp);

  const auto& tr = in_.training;
  const auto& p = in_.parallelism;
  double act = static_cast<double>(tr.micro_batch_size * tr.seq_length) /
               static_cast<double>(p.cp) * static_cast<double>(in_.model.hidden_size) * 2;
  // DeepSeek-V4's stages pass all mHC streams (Megatron-LM dev d48bd6be
  // pipeline_parallel/schedules.py 2255-2275: hidden_size x num_residual_streams).
  act *= static_cast<double>(in_.model.residual_streams());
  if (p.sequence_parallel) act /= static_cast<double>(p.tp);
  pp_s_ = comm_.send_recv(act, pp_pair_);
  PortBytes pp;
  (pp_pair_.crosses_network ? pp.net : pp.nvl) = act;
  pp_send_ports_ = port_loads(pp, pp_s_, true, false);
  pp_recv_ports_ = port_loads(pp, pp_s_, false, true);
}

// Gradients reduced in framework.grad_reduce_dtype (BF16, or FP32 without Megatron's
// --grad-reduce-in-bf16).
double KernelPricing::grad_bytes() const {
  return in_.framework.grad_reduce_dtype == workload::GradDtype::fp32 ? 4 : 2;
}
// Over the inner groups (the whole DP groups with one optimizer instance). The distributed
// optimizer across instances then all-reduces the bucket's reduced shard over the outer
// group in the same coalesced call on the same stream (param_and_grad_buffer.py 731-757 at
// cd4afffa): one kernel, the two in series.
double KernelPricing::dp_seconds(const StageParams& sp) const {
  const double g = grad_bytes();
  const double rs = comm_.reduce_scatter(sp.dense * g, dp_inner_) +
                    comm_.reduce_scatter(sp.expert * g, edp_inner_);
  if (reduce_scatters())
    return rs + (in_.parallelism.hybrid() && !hsdp() ? outer_grads_seconds(sp) : 0.0);
  return rs + comm_.all_gather(sp.dense * g, dp_group_) +
         comm_.all_gather(sp.expert * g, edp_group_);
}
double KernelPricing::inner_shard_params(const StageParams& sp) const {
  const workload::Shards s = in_.parallelism.inner_shards();
  return sp.dense / s.dense + sp.expert / s.expert;
}
double KernelPricing::outer_grads_seconds(const StageParams& sp) const {
  const double b = inner_shard_params(sp) * grad_bytes();
  return comm_.reduce_scatter(b, outer_group_) + comm_.all_gather(b, outer_group_);
}
// HSDP's outer collectives carry the inner shard P / I: gradients in the reduce dtype (the
// shard's all-reduce under no_shard, its reduce-scatter under optim), parameters gathered
// from P / (I N) back to P / I in the gather dtype (FB:4175-4209, 4533-4554 at cd4afffa).
double KernelPricing::outer_seconds(const StageParams& sp, bool gather) const {
  const double elems = inner_shard_params(sp);
  if (gather) return comm_.all_gather(elems * param_gather_bytes(), outer_group_);
  if (in_.parallelism.outer_dp_sharding == workload::OuterSharding::optim)
    return comm_.reduce_scatter(elems * grad_bytes(), outer_group_);
  return outer_grads_seconds(sp);
}
// Bytes a gathered parameter: BF16, or quantized with fp8_param_gather (FP8; NVFP4's half
// byte and E4M3 scale per 16 under precision nvfp4, Megatron's --fp4-param-gather). MXFP8
// parameters under the distributed optimizer gather BF16: their bucket's parameter buffer
// is a BF16 view of the gradient buffer, and each rank quantizes the gathered copy into its
// MXFP8 weights after the gather (Megatron-Core param_and_grad_buffer.py, the shared buffer
// "for param AG and grad RS" of MXFP8 models, since d559555a54 of 2025-06-14; _post_param_sync
// at 99a10812; docs/research/mlperf-dsv3-fixed-part.md 2 #1). That quantize pass is
// requant_seconds. Megatron-FSDP gathers the MXFP8 data itself, the row-wise copy before
// the forward and the column-wise one before the backward (megatron_fsdp
// param_and_grad_buffer.py 4664-4679 at cd4afffa; docs/research/megatron-fsdp-hsdp.md 2): a
// byte a parameter (the E8M0 scales, 1/32 of it, not counted).
double KernelPricing::param_gather_bytes() const {
  if (!in_.framework.fp8_param_gather) return 2;
  if (in_.training.precision == workload::Precision::mxfp8 && in_.framework.distributed_optimizer &&
      !in_.parallelism.fsdp)
    return 2;
  return in_.training.precision == workload::Precision::nvfp4 ? workload::kNvfp4Bytes : 1;
}
// The pass after the gather (docs/research/mxfp8-vs-fp8cs.md 2 #3): Megatron-Core's
// _post_param_sync (param_and_grad_buffer.py:281-298 at d0b3b775) copies each gathered BF16
// weight into its MXFP8 parameter, which TransformerEngine turns into a whole quantization,
// row- and column-wise with their E8M0 scales (QuantizedTensor.__torch_dispatch__,
// quantized_tensor.py:594-626 at v2.16), then zeroes the bucket's buffer, where the next
// gradients accumulate. Every weight of the bucket, every step; its norms and biases (BF16,
// copied, not quantized) counted alike, a small share. Without fp8_param_gather TE
// quantizes the BF16 weights at the step's first micro-batch instead: the same bytes, so the
// setting stays inert (config/inert_settings.cpp).
bool KernelPricing::mxfp8_requantizes() const {
  return in_.training.precision == workload::Precision::mxfp8 &&
         in_.framework.distributed_optimizer && !in_.parallelism.fsdp && dp_traffic();
}
double KernelPricing::requant_seconds(const StageParams& sp) const {
  const double params = sp.dense + sp.expert;
  hw_models::ComputeWork quantize;
  quantize.cls = hw_models::KernelClass::quantize;
  quantize.bytes = params * (2 + 2 * (1 + 1.0 / 32));  // read BF16, write both MXFP8 copies
  hw_models::ComputeWork zero;
  zero.bytes = params * 2;  // param_data.zero_() on the BF16 buffer
  return compute_.seconds(quantize) + compute_.seconds(zero);
}
double KernelPricing::gather_seconds(const StageParams& sp) const {
  const double b = param_gather_bytes();
  return comm_.all_gather(sp.dense * b, dp_inner_) + comm_.all_gather(sp.expert * b, edp_inner_);
}
// The optimizer step over this rank's share, memory-bound on HBM: Adam reads the main
// gradient (4 or 2 bytes), reads and writes the FP32 master (8) and both moments (4 x
// moment bytes) and writes the BF16 weight (2). Muon (layer-wise: whole matrices dealt
// out over the DP ranks, sharded even without the distributed optimizer) reads and writes
// one FP32 momentum instead of the moments, and orthogonalizes its matrices: Newton-Schulz
// GEMMs (workload::muon_ns_flops) at the GPU's BF16 GEMM rate (its FP32 matmuls run at
// PyTorch's "medium" precision).
namespace {
// The parameters whose optimizer state this rank holds.
double shard_params(const StageParams& sp, const workload::Parallelism& p,
                    const workload::Framework& fw) {
  const workload::Shards s = workload::optimizer_state_shards(p, fw);
  return sp.dense / s.dense + sp.expert / s.expert;
}
}  // namespace

double KernelPricing::optimizer_seconds(const StageParams& sp, const StageParams& ns_flops) const {
  const auto& p = in_.parallelism;
  const auto& fw = in_.framework;
  const workload::Shards states = workload::optimizer_state_shards(p, fw);
  const double dp = states.dense, edp = states.expert;
  const double shard = shard_params(sp, p, fw);
  hw_models::ComputeWork w;
  // Read the gradient, read and write the master and the states, write the BF16 weight.
  w.bytes =
      shard * (workload::main_grad_bytes(fw) + 2 * (4 + workload::optimizer_state_bytes(fw)) + 2);
  double t = compute_.seconds(w);
  if (fw.optimizer == workload::OptimizerKind::muon) {
    hw_models::ComputeWork ns;
    ns.cls = hw_models::KernelClass::gemm;
    ns.flops = ns_flops.dense / dp + ns_flops.expert / edp;
    t += compute_.seconds(ns);
  }
  return t;
}

double KernelPricing::grad_norm_seconds(const StageParams& sp) const {
  hw_models::ComputeWork w;
  w.bytes =
      shard_params(sp, in_.parallelism, in_.framework) * workload::main_grad_bytes(in_.framework);
  return compute_.seconds(w);
}
double KernelPricing::clip_seconds(const StageParams& sp) const {
  hw_models::ComputeWork w;
  w.bytes = 2 * shard_params(sp, in_.parallelism, in_.framework) *
            workload::main_grad_bytes(in_.framework);
  return compute_.seconds(w);
}
double KernelPricing::unscale_seconds(const StageParams& sp) const {
  hw_models::ComputeWork w;
  w.bytes = 2 * shard_params(sp, in_.parallelism, in_.framework) *
            4.0;  // FP32 main gradients, read and written
  return compute_.seconds(w);
}
double KernelPricing::world_reduce_seconds() const {
  return hw_models::small_all_reduce_seconds(static_cast<double>(in_.gpus),
                                             static_cast<double>(in_.gpus_per_nvlink_domain));
}
double KernelPricing::loss_reduce_seconds() const {
  return hw_models::small_all_reduce_seconds(static_cast<double>(dp_group_.size),
                                             members_per_domain(dp_group_));
}
double KernelPricing::amax_reduce_seconds() const {
  const auto& p = in_.parallelism;
  const double n = static_cast<double>(p.tp * p.dp * p.cp);
  const double k = std::min(n, static_cast<double>(in_.gpus_per_nvlink_domain));
  // The all-reduce, then the fused amax-history and scale update (one small kernel).
  return hw_models::small_all_reduce_seconds(n, k) +
         in_.system.efficiency.kernel_device_us.value * 1e-6;
}

double KernelPricing::replica_grad_seconds(const StageParams& sp) const {
  const double b = sp.expert * eplb_replicas_ * grad_bytes();
  return comm_.reduce_scatter(b, replica_pair_) + comm_.all_gather(b, replica_pair_);
}
PortLoads KernelPricing::replica_grad_loads(const StageParams& sp) const {
  // A ring all-reduce: the reduce-scatter's and the all-gather's bytes.
  PortBytes bytes = ring_bytes(sp.expert * eplb_replicas_ * grad_bytes(), replica_pair_);
  bytes += bytes;
  return port_loads(bytes, replica_grad_seconds(sp));
}

// Members of a group in one NVLink domain: consecutive members are `stride` apart.
double KernelPricing::members_per_domain(const hw_models::CommGroup& g) const {
  const double n = static_cast<double>(g.size);
  if (!g.crosses_network) return n;
  return std::min(
      n, std::max(1.0, std::floor(static_cast<double>(in_.gpus_per_nvlink_domain) /
                                  static_cast<double>(std::max<std::int64_t>(1, g.stride)))));
}

KernelPricing::PortBytes KernelPricing::ring_bytes(double buffer,
                                                   const hw_models::CommGroup& g) const {
  PortBytes b;
  if (g.size <= 1) return b;
  const double n = static_cast<double>(g.size), sent = buffer * (n - 1) / n;
  if (!g.crosses_network) {
    b.nvl = sent;
    return b;
  }
  // One ring per NIC of a domain: each rank's NIC carries one channel's crossing.
  b.net = sent / members_per_domain(g);
  b.nvl = sent - b.net;
  return b;
}

KernelPricing::PortBytes KernelPricing::a2a_bytes(double per_rank,
                                                  const hw_models::CommGroup& g) const {
  PortBytes b;
  if (g.size <= 1) return b;
  const double n = static_cast<double>(g.size), local = members_per_domain(g);
  b.nvl = per_rank * (local - 1) / n;
  b.net = per_rank * (n - local) / n;
  return b;
}

PortLoads KernelPricing::port_loads(const PortBytes& b, double seconds, bool out, bool in) const {
  PortLoads l{};
  if (seconds <= 0) return l;
  const auto load = [&](double bytes, double cap) {
    return static_cast<float>(bytes / seconds / cap);
  };
  if (out) l[kNvlOut] = load(b.nvl, nvl_port_Bps_), l[kNetOut] = load(b.net, net_port_Bps_);
  if (in) l[kNvlIn] = load(b.nvl, nvl_port_Bps_), l[kNetIn] = load(b.net, net_port_Bps_);
  return l;
}

PortLoads KernelPricing::dp_loads(const StageParams& sp, bool gather) const {
  const double b = gather ? param_gather_bytes() : grad_bytes() * (reduce_scatters() ? 1 : 2);
  PortBytes bytes = ring_bytes(sp.dense * b, dp_inner_);
  bytes += ring_bytes(sp.expert * b, edp_inner_);
  if (!gather && reduce_scatters() && in_.parallelism.hybrid() && !hsdp())
    bytes += ring_bytes(inner_shard_params(sp) * grad_bytes() * 2, outer_group_);
  return port_loads(bytes, gather ? gather_seconds(sp) : dp_seconds(sp));
}
PortLoads KernelPricing::outer_loads(const StageParams& sp, bool gather) const {
  const bool ar = !gather && in_.parallelism.outer_dp_sharding == workload::OuterSharding::no_shard;
  const double b = gather ? param_gather_bytes() : grad_bytes() * (ar ? 2 : 1);
  return port_loads(ring_bytes(inner_shard_params(sp) * b, outer_group_),
                    outer_seconds(sp, gather));
}

}  // namespace moesim::schedules::detail
