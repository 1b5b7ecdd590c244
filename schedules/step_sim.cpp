#include "schedules/step_sim.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "hw_models/collectives.hpp"
#include "hw_models/compute.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "hw_models/ep_flows.hpp"
#include "schedules/dp_plan.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/stage_params.hpp"
#include "sim_core/gpu.hpp"
#include "sim_core/host.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::schedules {
namespace {

using sim_core::EventId;
using sim_core::HostOp;
using sim_core::Kernel;
using sim_core::kNoEvent;
using sim_core::Time;
using workload::Module;

enum Category : std::uint8_t { kCompute, kEpComm, kTpComm, kPpComm, kDpComm };
// Pipeline transfers have a stream per direction and kind; stages whose pipeline runs
// toward lower ranks (DualPipe's reverse pipeline, DualPipeV's second leg) their own four,
// so that transfers to the two neighbours never queue behind each other.
// DualPipe's overlapped pairs run the backward chunk on a second compute stream.
enum Track : int {
  kComputeStream, kPpFwdSend, kPpFwdRecv, kPpBwdSend, kPpBwdRecv, kDpStream, kDpGatherStream,
  kPp2FwdSend, kPp2FwdRecv, kPp2BwdSend, kPp2BwdRecv, kPairStream, kTracks
};
// The GPU's link ports (sim_core::Gpu): NVLink and network, each direction.
enum Port : std::size_t { kNvlOut, kNvlIn, kNetOut, kNetIn };
const char* const kTrackNames[kTracks] = {"compute",      "pp.fwd.send",  "pp.fwd.recv",  "pp.bwd.send",
                                          "pp.bwd.recv",  "dp",           "dp.gather",    "pp2.fwd.send", "pp2.fwd.recv",
                                          "pp2.bwd.send", "pp2.bwd.recv", "compute.pair"};
int pp_track(bool forward, bool send, bool descending) {
  const int t = forward ? (send ? kPpFwdSend : kPpFwdRecv) : (send ? kPpBwdSend : kPpBwdRecv);
  return descending ? t - kPpFwdSend + kPp2FwdSend : t;
}

// A template kernel priced on this system.
struct Priced {
  std::uint32_t label;
  double seconds;
  double host_s;        // host time of its launch and what the host does before it
  int sms;
  bool reserved;
  Category category;
  Module module;
  bool sync;
  int sync_delay = 0;  // launches the host makes before it blocks on the sync
  bool delayed = false;  // a TE weight-gradient GEMM under --delay-wgrad-compute
  std::array<float, sim_core::Kernel::kPorts> ports{};  // link-port loads (transfers)
};

struct PricedLayer {
  std::vector<Priced> fwd, bwd;
  // The backward split for zero-bubble schedules: input gradients (everything but the
  // weight-gradient GEMMs) and weight gradients (the ".wgrad" GEMMs).
  std::vector<Priced> bwd_input, bwd_weight;
  const std::vector<Priced>& of(Pass p) const {
    switch (p) {
      case Pass::forward: return fwd;
      case Pass::backward: return bwd;
      case Pass::backward_input: return bwd_input;
      case Pass::backward_weight: return bwd_weight;
    }
    return bwd;
  }
};

// Megatron rank order tp-cp-(ep)-dp-pp: a group of `size` ranks `stride` apart crosses
// NVLink domains when it spans more than one domain of contiguous ranks.
hw_models::CommGroup group(std::int64_t size, std::int64_t stride, std::int64_t domain) {
  return {size, (size - 1) * stride >= domain, stride};
}

// Shared state of one simulation: engine, tables, pricing, labels, rendezvous pairing.
class Sim {
 public:
  Sim(const StepInput& in, const StepOptions& opt, const hw_models::CommModel& comm,
      const FixedChunks* fixed = nullptr)
      : in_(in), opt_(opt), comm_(comm), compute_(in.system), events_(engine_), fixed_(fixed),
        shape_(in.schedule, static_cast<int>(in.parallelism.pp), static_cast<int>(in.parallelism.vpp)),
        host_factor_((!in.stack.cpu_numa_binding && in.system.host.numa_unbound_factor
                          ? in.system.host.numa_unbound_factor->value
                          : 1.0) *
                     (in.system.host.load_factor ? in.system.host.load_factor->value : 1.0)),
        te_factor_(in.stack.te_host_slim && in.system.host.te_slim_factor ? in.system.host.te_slim_factor->value
                                                                            : 1.0),
        captured_(in.framework, in.stack) {
    const auto eta = hw_models::link_efficiency(in.system);
    nvl_port_Bps_ = in.system.nvlink.bw_GBps.value * 1e9 * eta.nvlink;
    net_port_Bps_ = in.system.network.nics_per_gpu.value * in.system.network.nic_Gbps.value / 8 * 1e9 * eta.network;
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
    pp_pair_ = group(2, in.gpus / p.pp, dom);
    if (fixed_) {
      const auto chunk = [&](const char* name, double seconds) {
        return std::vector<Priced>{Priced{label(name), seconds, 0, 0, false, kCompute, Module::attn, false}};
      };
      dense_.fwd = chunk("chunk.fwd", fixed_->seconds(Pass::forward));
      dense_.bwd = chunk("chunk.bwd", fixed_->seconds(Pass::backward));
      dense_.bwd_input = chunk("chunk.bwd_input", fixed_->seconds(Pass::backward_input));
      dense_.bwd_weight = chunk("chunk.wgrad", fixed_->seconds(Pass::backward_weight));
      fwd_bwd_ = chunk("chunk.fwd_bwd", fixed_->pair_s());
      moe_ = mtp_ = dense_;
      pp_s_ = fixed_->p2p_s;
    } else {
      price_templates();
      for (const auto& st : in.layout.stages())
        dp_plans_.push_back(schedules::dp_plan(in.model, p, in.framework, st, in.padded_vocab));
      op_ = Time::from_seconds(in.system.host.op_us.value * host_factor_ * 1e-6);
      launch_ = Time::from_seconds(in.system.host.launch_us.value * host_factor_ * 1e-6);
      graph_ = Time::from_seconds(in.system.host.graph_launch_us.value * host_factor_ * 1e-6);
    }
  }
  bool fixed() const { return fixed_ != nullptr; }
  const PipelineShape& shape() const { return shape_; }
  // Fixed chunks: the overlapped forward-backward pair as one kernel of F&B.
  const std::vector<Priced>& fwd_bwd() const { return fwd_bwd_; }
  Time op_cost() const { return op_; }
  Time launch_cost() const { return launch_; }
  Time graph_cost() const { return graph_; }

  std::uint32_t label(const std::string& name) {
    auto [it, inserted] = label_ids_.try_emplace(name, static_cast<std::uint32_t>(labels_.size()));
    if (inserted) labels_.push_back(name);
    return it->second;
  }
  const std::vector<std::string>& labels() const { return labels_; }
  // The module of a layer kernel's label; kModuleCount for the others.
  std::size_t module_of(std::uint32_t label) const {
    return label < label_module_.size() ? label_module_[label] : workload::kModuleCount;
  }
  // The chunk pass of a layer kernel's label (forward, backward with recompute, or a
  // weight-gradient GEMM); kNoPass for kernels outside the layers.
  static constexpr std::uint8_t kFwd = 0, kBwd = 1, kWgrad = 2, kNoPass = 3;
  std::uint8_t pass_of(std::uint32_t label) const { return label < label_pass_.size() ? label_pass_[label] : kNoPass; }
  void set_pass(std::uint32_t label, std::uint8_t pass) {
    if (label_pass_.size() <= label) label_pass_.resize(label + 1, kNoPass);
    label_pass_[label] = pass;
  }

  sim_core::RendezvousId pair(int mb, int vstage, bool fwd, std::int64_t lane) {
    auto [it, inserted] = pairs_.try_emplace(std::make_tuple(mb, vstage, fwd, lane), 0);
    if (inserted) it->second = rendezvous_.create(2);
    return it->second;
  }
  // The seq-th collective of one kind in one group; kNoRendezvous when the group has a
  // single simulated member (representative mode).
  sim_core::RendezvousId collective(Category c, std::int64_t group, std::int64_t seq, std::int64_t members) {
    if (members <= 1) return sim_core::kNoRendezvous;
    auto [it, inserted] = collectives_.try_emplace(std::make_tuple(static_cast<int>(c), group, seq), 0);
    if (inserted) it->second = rendezvous_.create(static_cast<int>(members));
    return it->second;
  }
  bool full() const { return opt_.full_fidelity && !fixed_; }
  std::int64_t stage_size() const { return in_.gpus / in_.parallelism.pp; }
  EventId event(Category c) {
    const EventId id = events_.create();
    event_category_.push_back(c);
    return id;
  }
  Category event_category(EventId e) const { return static_cast<Category>(event_category_[e]); }

  const PricedLayer& layer(const LayoutItem& item) const {
    switch (layer_slot(item, in_.model)) {
      case LayerSlot::embedding: return embedding_;
      case LayerSlot::head: return head_;
      case LayerSlot::moe: return moe_;
      case LayerSlot::dense: return dense_;
      case LayerSlot::mtp: return mtp_;
    }
    return dense_;
  }
  bool captured(Module m) const { return captured_[m]; }

  double pp_seconds() const { return pp_s_; }
  StageParams stage_params(int rank, int chunk) const {
    return stage_parameters(in_.model, in_.parallelism, chunk_stage(rank, chunk), in_.padded_vocab);
  }
  // The layout stage a rank's chunk runs (DualPipe: the reverse pipeline's stage pp-1-r).
  const VirtualStage& chunk_stage(int rank, int chunk) const {
    return in_.layout.stages()[static_cast<std::size_t>(shape_.place(rank, chunk).layout_stage)];
  }
  // The data-parallel plan of a rank's chunk (schedules/dp_plan.hpp).
  const DpPlan& dp_plan(int rank, int chunk) const {
    return dp_plans_[static_cast<std::size_t>(shape_.place(rank, chunk).layout_stage)];
  }
  // Whether the step has data-parallel traffic: some DP group of more than one rank.
  bool dp_traffic() const {
    return !fixed() && (in_.parallelism.dp * in_.parallelism.cp > 1 || in_.parallelism.expert_dp > 1);
  }
  // A gradient reduction: reduce-scatter with the distributed optimizer or FSDP, else an
  // all-reduce (a ring: the reduce-scatter then the all-gather).
  bool reduce_scatters() const { return in_.framework.distributed_optimizer || in_.parallelism.fsdp; }
  double dp_seconds(const StageParams& sp) const;
  double grad_bytes() const;
  double gather_seconds(const StageParams& sp) const;
  // Link-port loads of the transfers (sim_core::Gpu link ports: NVLink out/in, network
  // out/in): bytes each rank moves through a port over the transfer's duration alone,
  // over the port's capacity (NVLink or NICs x the preset's link efficiency).
  struct PortBytes {
    double nvl = 0, net = 0;  // each direction (symmetric groups send what they receive)
    PortBytes& operator+=(const PortBytes& o) {
      nvl += o.nvl;
      net += o.net;
      return *this;
    }
  };
  double members_per_domain(const hw_models::CommGroup& g) const;
  PortBytes ring_bytes(double buffer, const hw_models::CommGroup& g) const;
  PortBytes a2a_bytes(double per_rank, const hw_models::CommGroup& g) const;
  std::array<float, sim_core::Kernel::kPorts> port_loads(const PortBytes& b, double seconds, bool out = true,
                                                        bool in = true) const;
  std::array<float, sim_core::Kernel::kPorts> dp_loads(const StageParams& sp, bool gather) const;
  const std::array<float, sim_core::Kernel::kPorts>& pp_loads(bool send) const {
    return send ? pp_send_ports_ : pp_recv_ports_;
  }
  double optimizer_seconds(const StageParams& sp, const StageParams& ns_flops) const;
  StageParams muon_flops(int rank, int chunk) const {
    StageParams s;
    for (const auto& it : chunk_stage(rank, chunk).items) s += item_muon_flops(in_.model, in_.parallelism, it);
    return s;
  }

  sim_core::Engine engine_;
  const StepInput& in_;
  const StepOptions& opt_;
  const hw_models::CommModel& comm_;
  hw_models::ComputeModel compute_;
  sim_core::EventTable events_;
  sim_core::RendezvousTable rendezvous_;

 private:
  Priced price(const workload::KernelTemplate& k);
  void price_templates();
  void setup_ep_flows();
  hw_models::EpFlowTime ep_flows(const workload::KernelTemplate& k) const;

  const FixedChunks* fixed_;
  PipelineShape shape_;
  std::vector<Priced> fwd_bwd_;
  double host_factor_;        // every host cost x this (a loaded process; processes not NUMA-bound)
  double te_factor_;          // Transformer Engine module host time x this (slimmer host code)
  Time op_, launch_, graph_;  // host costs; zero with fixed chunks
  hw_models::CommGroup ep_group_, tp_group_, dp_group_, edp_group_;
  // DeepEP / HybridEP across NVLink domains: their kernels as flows over the EP group's
  // topology (hw_models/ep_flows.hpp) where the preset has the library's link fractions.
  std::optional<hw_models::Topology> ep_topo_;
  hw_models::CommGroup pp_pair_;  // a rank and its peer in the next pipeline stage
  hw_models::CommGroup cp_group_;  // a context-parallel ring
  std::array<float, sim_core::Kernel::kPorts> pp_send_ports_{}, pp_recv_ports_{};  // one activation each way
  double nvl_port_Bps_ = 0, net_port_Bps_ = 0;  // what a transfer gets of each port (link x efficiency)
  double pp_s_ = 0;
  PricedLayer dense_, moe_, embedding_, head_, mtp_;
  std::vector<DpPlan> dp_plans_;  // by layout stage
  workload::CaptureSet captured_;
  std::vector<std::string> labels_;
  std::vector<std::size_t> label_module_;  // by label id, kModuleCount when not a layer kernel
  std::vector<std::uint8_t> label_pass_;   // by label id (pass_of)
  std::map<std::string, std::uint32_t> label_ids_;
  std::map<std::tuple<int, int, bool, std::int64_t>, sim_core::RendezvousId> pairs_;
  std::map<std::tuple<int, std::int64_t, std::int64_t>, sim_core::RendezvousId> collectives_;
  std::vector<std::uint8_t> event_category_;
};

Priced Sim::price(const workload::KernelTemplate& k) {
  // Host time: a Python-level op; a library API call from C++ (TE's quantize); a kernel
  // launched inside a library call with no API call of its own (the driver's launch,
  // cpp_launch_us); a Transformer Engine Linear call costs the module's measured host time
  // (its first launch included); a grouped GEMM launches its further per-expert GEMMs from
  // C++ (multi-stream cuBLAS); plus the allocations and host-only calls before it. All x
  // the loaded-process factor, and the NUMA factor when the process is unbound.
  const auto& host = in_.system.host;
  // A memory-bound kernel from an eager PyTorch op (elementwise, norm, permute) costs
  // the host less than a Linear's forward.
  const bool elementwise = k.work.cls == hw_models::KernelClass::memory || k.work.cls == hw_models::KernelClass::gather;
  const double eager = elementwise && host.elementwise_launch_us ? host.elementwise_launch_us->value : host.launch_us.value;
  const double cpp = host.cpp_launch_us ? host.cpp_launch_us->value : host.library_launch_us.value;
  double us = k.te_module_call   ? host.te_linear_us.value * te_factor_
              : k.cpp_launch     ? cpp
              : k.library_launch ? host.library_launch_us.value
                                 : eager;
  if (k.work.cls == hw_models::KernelClass::grouped_gemm)
    us += static_cast<double>(k.work.groups - 1) * host.library_launch_us.value;
  us += k.host_allocs * host.alloc_us.value + k.host_ops * host.op_us.value;
  Priced p{label(k.name), 0, us * host_factor_ * 1e-6, 0, false, kCompute, k.module, k.host_sync_after,
           k.host_sync_delay};
  if (label_module_.size() <= p.label) label_module_.resize(p.label + 1, workload::kModuleCount);
  label_module_[p.label] = static_cast<std::size_t>(k.module);
  const auto& fw = in_.framework;
  switch (k.comm) {
    case workload::CommOp::none:
      p.seconds = compute_.seconds(k.work) * k.time_factor;
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
      // PDL overlaps the kernel's launch latency with its predecessor's tail.
      if (k.pdl) p.seconds = std::max(0.0, p.seconds - in_.system.efficiency.kernel_device_us.value * 1e-6);
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
        p.seconds = hw_models::ep_comm_seconds(fw.dispatcher, in_.system, comm_,
                                               {k.comm_bytes, ep_group_, k.comm == workload::CommOp::ep_combine});
        p.ports = port_loads(a2a_bytes(k.comm_bytes, ep_group_), p.seconds);
      }
      p.category = kEpComm;
      // DeepEP / HybridEP kernels hold their SMs; NCCL's are left to the network issue.
      p.sms = fw.dispatcher_sms > 0 ? fw.dispatcher_sms : -1;
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
  }
  return p;
}

// DeepEP and HybridEP: their kernels as flows over the EP group's topology, with the
// library's parameters applied through this system's links (hw_models/ep_flows.hpp,
// ep_library_time), the same model `moesim comm` prices: one copy per destination rank
// (each token once per destination node across domains, forwarded over NVLink), not one
// per expert. The scenario loader has refused placements the library cannot run in
// (hw_models::ep_unsupported).
void Sim::setup_ep_flows() {
  const auto& fw = in_.framework;
  const auto& p = in_.parallelism;
  const auto& m = in_.model;
  if (fixed_ || !m.is_moe() || p.ep <= 1) return;
  if (fw.dispatcher != hw_models::Dispatcher::deepep && fw.dispatcher != hw_models::Dispatcher::hybridep) return;
  const std::int64_t domain = std::max<std::int64_t>(1, in_.gpus_per_nvlink_domain / p.etp);
  ep_topo_.emplace(in_.system, p.ep, std::min(domain, p.ep));
}

hw_models::EpFlowTime Sim::ep_flows(const workload::KernelTemplate& k) const {
  const auto& m = in_.model;
  const auto& p = in_.parallelism;
  const bool combine = k.comm == workload::CommOp::ep_combine;
  hw_models::EpBenchmark b;
  b.ranks = static_cast<int>(p.ep);
  b.sms = in_.framework.dispatcher_sms;
  b.hidden = static_cast<double>(m.hidden_size);
  // The template's bytes are the hottest rank's per-expert copies: T x k x hidden x element.
  b.element_bytes = k.comm_element_bytes;
  b.tokens = k.comm_bytes / (static_cast<double>(m.topk) * b.hidden * b.element_bytes);
  b.experts = static_cast<int>(m.num_experts);
  b.topk = static_cast<int>(m.topk);
  // Group-limited routing over as many groups as domains is node-limited routing.
  const int domains = ep_topo_->gpus() / ep_topo_->domain_size();
  b.groups = m.router_groups > 0 && m.router_topk_groups > 0
                 ? std::max<int>(1, static_cast<int>(m.router_topk_groups * domains / m.router_groups))
                 : domains;
  b.combine = combine;
  return hw_models::ep_library_time(
      in_.system, *ep_topo_, in_.framework.dispatcher, b,
      hw_models::ep_bandwidth_factor(in_.system, in_.framework.dispatcher, in_.stack.deepep_tuned));
}

void Sim::price_templates() {
  const workload::TemplateInputs ti{in_.model,     in_.training,     in_.parallelism, in_.framework,
                                    in_.stack,     in_.padded_vocab, in_.ep_load};
  const workload::ModelTemplates t = workload::build_templates(ti);
  const auto convert = [&](const workload::LayerTemplate& lt, PricedLayer& out) {
    for (const auto& k : lt.fwd) {
      out.fwd.push_back(price(k));
      set_pass(out.fwd.back().label, kFwd);
    }
    for (const auto& k : lt.bwd) {
      out.bwd.push_back(price(k));
      const bool weight = k.name.size() > 6 && k.name.compare(k.name.size() - 6, 6, ".wgrad") == 0;
      set_pass(out.bwd.back().label, weight ? kWgrad : kBwd);
      out.bwd.back().delayed = weight && k.library_launch && in_.framework.delay_wgrad_compute;
      (weight ? out.bwd_weight : out.bwd_input).push_back(out.bwd.back());
    }
  };
  convert(t.dense, dense_);
  convert(t.moe, moe_);
  convert(t.embedding, embedding_);
  convert(t.head, head_);
  convert(t.mtp, mtp_);


  const auto& tr = in_.training;
  const auto& p = in_.parallelism;
  double act = static_cast<double>(tr.micro_batch_size * tr.seq_length) / static_cast<double>(p.cp) *
               static_cast<double>(in_.model.hidden_size) * 2;
  if (p.sequence_parallel) act /= static_cast<double>(p.tp);
  pp_s_ = comm_.send_recv(act, pp_pair_);
  PortBytes pp;
  (pp_pair_.crosses_network ? pp.net : pp.nvl) = act;
  pp_send_ports_ = port_loads(pp, pp_s_, true, false);
  pp_recv_ports_ = port_loads(pp, pp_s_, false, true);
}

// Gradients reduced in framework.grad_reduce_dtype (BF16, or FP32 without Megatron's
// --grad-reduce-in-bf16).
double Sim::grad_bytes() const {
  return in_.framework.grad_reduce_dtype == workload::GradDtype::fp32 ? 4 : 2;
}
double Sim::dp_seconds(const StageParams& sp) const {
  const double g = grad_bytes();
  const double rs = comm_.reduce_scatter(sp.dense * g, dp_group_) + comm_.reduce_scatter(sp.expert * g, edp_group_);
  if (reduce_scatters()) return rs;
  return rs + comm_.all_gather(sp.dense * g, dp_group_) + comm_.all_gather(sp.expert * g, edp_group_);
}
double Sim::gather_seconds(const StageParams& sp) const {
  const double b = in_.framework.fp8_param_gather ? 1 : 2;
  return comm_.all_gather(sp.dense * b, dp_group_) + comm_.all_gather(sp.expert * b, edp_group_);
}
// The optimizer step over this rank's share, memory-bound on HBM: Adam reads the main
// gradient (4 or 2 bytes), reads and writes the FP32 master (8) and both moments (4 x
// moment bytes) and writes the BF16 weight (2). Muon (layer-wise: whole matrices dealt
// out over the DP ranks, sharded even without the distributed optimizer) reads and writes
// one FP32 momentum instead of the moments, and orthogonalizes its matrices: Newton-Schulz
// GEMMs (workload::muon_ns_flops) at the GPU's BF16 GEMM rate (its FP32 matmuls run at
// PyTorch's "medium" precision).
double Sim::optimizer_seconds(const StageParams& sp, const StageParams& ns_flops) const {
  const auto& p = in_.parallelism;
  const auto& fw = in_.framework;
  const bool sharded = workload::optimizer_states_sharded(fw);
  const double dp = sharded ? static_cast<double>(p.dp * p.cp) : 1.0;
  const double edp = sharded ? static_cast<double>(p.expert_dp) : 1.0;
  const double shard = sp.dense / dp + sp.expert / edp;
  hw_models::ComputeWork w;
  // Read the gradient, read and write the master and the states, write the BF16 weight.
  w.bytes = shard * (workload::main_grad_bytes(fw) + 2 * (4 + workload::optimizer_state_bytes(fw)) + 2);
  double t = compute_.seconds(w);
  if (fw.optimizer == workload::OptimizerKind::muon) {
    hw_models::ComputeWork ns;
    ns.cls = hw_models::KernelClass::gemm;
    ns.flops = ns_flops.dense / dp + ns_flops.expert / edp;
    t += compute_.seconds(ns);
  }
  return t;
}

// Members of a group in one NVLink domain: consecutive members are `stride` apart.
double Sim::members_per_domain(const hw_models::CommGroup& g) const {
  const double n = static_cast<double>(g.size);
  if (!g.crosses_network) return n;
  return std::min(n, std::max(1.0, std::floor(static_cast<double>(in_.gpus_per_nvlink_domain) /
                                              static_cast<double>(std::max<std::int64_t>(1, g.stride)))));
}

Sim::PortBytes Sim::ring_bytes(double buffer, const hw_models::CommGroup& g) const {
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

Sim::PortBytes Sim::a2a_bytes(double per_rank, const hw_models::CommGroup& g) const {
  PortBytes b;
  if (g.size <= 1) return b;
  const double n = static_cast<double>(g.size), local = members_per_domain(g);
  b.nvl = per_rank * (local - 1) / n;
  b.net = per_rank * (n - local) / n;
  return b;
}

std::array<float, sim_core::Kernel::kPorts> Sim::port_loads(const PortBytes& b, double seconds, bool out,
                                                            bool in) const {
  std::array<float, sim_core::Kernel::kPorts> l{};
  if (seconds <= 0) return l;
  const auto load = [&](double bytes, double cap) { return static_cast<float>(bytes / seconds / cap); };
  if (out) l[kNvlOut] = load(b.nvl, nvl_port_Bps_), l[kNetOut] = load(b.net, net_port_Bps_);
  if (in) l[kNvlIn] = load(b.nvl, nvl_port_Bps_), l[kNetIn] = load(b.net, net_port_Bps_);
  return l;
}

std::array<float, sim_core::Kernel::kPorts> Sim::dp_loads(const StageParams& sp, bool gather) const {
  const double b = gather ? (in_.framework.fp8_param_gather ? 1 : 2) : grad_bytes() * (reduce_scatters() ? 1 : 2);
  PortBytes bytes = ring_bytes(sp.dense * b, dp_group_);
  bytes += ring_bytes(sp.expert * b, edp_group_);
  return port_loads(bytes, gather ? gather_seconds(sp) : dp_seconds(sp));
}


// One pipeline rank's host program, expanded one work item at a time.
class RankProgram final : public sim_core::HostProgram {
 public:
  // `global` is the Megatron rank; in representative mode the pipeline rank itself.
  RankProgram(Sim& sim, sim_core::Gpu& gpu, std::int64_t global)
      : sim_(sim), gpu_(gpu),
        rank_(static_cast<int>(sim.full() ? global / sim.stage_size() : global)),
        lane_(sim.full() ? global % sim.stage_size() : 0),
        items_(pipeline_order(sim.in_.schedule, static_cast<int>(sim.in_.parallelism.pp),
                              static_cast<int>(sim.in_.parallelism.vpp), rank_,
                              static_cast<int>(sim.in_.parallelism.num_microbatches),
                              sim.in_.framework.moe_a2a_overlap && !sim.fixed())) {
    const int chunks = sim.shape().chunks();
    recv_event_.assign(items_.size(), kNoEvent);
    last_bwd_.assign(static_cast<std::size_t>(chunks), -1);
    first_fwd_.assign(static_cast<std::size_t>(chunks), -1);
    for (int i = 0; i < static_cast<int>(items_.size()); ++i) {
      const auto& it = items_[static_cast<std::size_t>(i)];
      if (it.weights()) last_bwd_[static_cast<std::size_t>(it.chunk)] = i;
      if (it.forward() && first_fwd_[static_cast<std::size_t>(it.chunk)] < 0)
        first_fwd_[static_cast<std::size_t>(it.chunk)] = i;
    }
    gather_.assign(static_cast<std::size_t>(chunks), {});
    wgrad_done_.assign(static_cast<std::size_t>(chunks), kNoEvent);
    // Groups by Megatron's rank order within a stage: dense tp-cp-dp, expert etp-ep-edp.
    const auto& p = sim.in_.parallelism;
    const std::int64_t stage = static_cast<std::int64_t>(rank_) * sim.stage_size();
    const std::int64_t tp_i = lane_ % p.tp;
    tp_group_ = stage + lane_ / p.tp;
    dp_group_ = stage + tp_i;  // DP x CP
    ep_group_ = stage + lane_ % p.etp + p.etp * (lane_ / (p.etp * p.ep));
    if (sim.full()) tp_members_ = p.tp, dp_members_ = p.dp * p.cp, ep_members_ = p.ep;
    graph_label_ = sim.label("host.graph_launch");
    sync_label_ = sim.label("host.sync_wait");
    pair_sync_label_ = sim.label("host.pair_sync");
  }

  bool next(HostOp& op) override {
    while (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
      if (phase_ == 0) {
        step_start();
        phase_ = 1;
      } else if (next_item_ < items_.size()) {
        expand(static_cast<int>(next_item_++));
      } else if (phase_ == 1) {
        step_end();
        phase_ = 2;
      } else {
        return false;
      }
    }
    op = buf_[pos_++];
    return true;
  }

 private:
  // The host's slice is named after the kernel it launches (in traces: what the host
  // spends its time on, next to the GPU lanes).
  void launch(int stream, Kernel k, Time cpu) {
    HostOp op;
    op.kind = HostOp::Kind::launch;
    op.cpu = cpu;
    op.label = k.label;
    op.gpu = &gpu_;
    op.stream = stream;
    op.kernel = k;
    buf_.push_back(op);
  }
  void wait(EventId e) {
    HostOp op;
    op.kind = HostOp::Kind::wait;
    op.event = e;
    op.label = sync_label_;
    buf_.push_back(op);
  }
  Time op_cost() const { return sim_.op_cost(); }
  Time launch_cost() const { return sim_.launch_cost(); }
  Time graph_cost() const { return sim_.graph_cost(); }

  static Kernel kernel(std::uint32_t label, Category c, double seconds, int sms = 0, bool reserved = false) {
    Kernel k;
    k.label = label;
    k.category = c;
    k.work_s = seconds;
    k.sms = sms;
    k.reserved = reserved;
    return k;
  }

  // A data-parallel collective on `stream` over the dense DP and expert-DP groups:
  // parameters `sp` all-gathered (`gather`) or their gradients reduced, after `after`.
  EventId dp_collective(int stream, const char* name, const StageParams& sp, bool gather, EventId after) {
    Kernel k = kernel(sim_.label(name), kDpComm, gather ? sim_.gather_seconds(sp) : sim_.dp_seconds(sp), -1);
    k.port_load = sim_.dp_loads(sp, gather);
    k.waits[0] = after;
    k.record = sim_.event(kDpComm);
    k.rendezvous = sim_.collective(kDpComm, dp_group_, dp_seq_++, dp_members_);
    launch(stream, k, op_cost());
    return k.record;
  }

  // Distributed optimizer: the buckets' parameter all-gathers, in forward order, ahead
  // of the first forward (schedules/dp_plan.hpp). Without --overlap-param-gather the
  // first forward waits for all of them.
  void step_start() {
    const auto& fw = sim_.in_.framework;
    if (!sim_.dp_traffic() || !fw.distributed_optimizer || sim_.in_.parallelism.fsdp) return;
    EventId last = kNoEvent;
    for (int c = 0; c < static_cast<int>(gather_.size()); ++c) {
      const DpPlan& plan = sim_.dp_plan(rank_, c);
      auto& g = gather_[static_cast<std::size_t>(c)];
      g.assign(plan.bucket.size(), kNoEvent);
      for (std::size_t k = 0; k < plan.bucket.size(); ++k)
        if (plan.bucket[k].dense > 0 || plan.bucket[k].expert > 0)
          last = g[k] = dp_collective(kDpGatherStream, "dp.param_all_gather", plan.bucket[k], true, kNoEvent);
    }
    if (fw.overlap_param_gather) return;
    for (auto& g : gather_) std::fill(g.begin(), g.end(), kNoEvent);
    for (auto& g : gather_)
      if (!g.empty()) g.front() = last;
  }

  // Without --overlap-grad-reduce the buckets are reduced after the last backward; then
  // the optimizer step over this rank's shard.
  void step_end() {
    if (sim_.fixed()) return;
    const auto& fw = sim_.in_.framework;
    if (sim_.dp_traffic() && !fw.overlap_grad_reduce && !sim_.in_.parallelism.fsdp)
      for (int c = 0; c < static_cast<int>(gather_.size()); ++c) {
        const DpPlan& plan = sim_.dp_plan(rank_, c);
        for (std::size_t k = plan.bucket.size(); k-- > 0;)
          if (plan.bucket[k].dense > 0 || plan.bucket[k].expert > 0)
            last_dp_ = dp_collective(kDpStream, reduce_name(), plan.bucket[k], false,
                                     wgrad_done_[static_cast<std::size_t>(c)]);
      }
    StageParams all, ns;
    const bool muon = fw.optimizer == workload::OptimizerKind::muon;
    for (int c = 0; c < static_cast<int>(gather_.size()); ++c) {
      all += sim_.stage_params(rank_, c);
      if (muon) ns += sim_.muon_flops(rank_, c);
    }
    Kernel k = kernel(sim_.label(muon ? "optimizer.muon" : "optimizer.adam"), kCompute,
                      sim_.optimizer_seconds(all, ns));
    k.waits[0] = last_dp_;
    k.record = sim_.event(kCompute);
    launch(kComputeStream, k, launch_cost());
    // Layer-wise Muon without the distributed optimizer: every rank updated the matrices it
    // owns, and all-gathers the others' after the step (not overlapped: Megatron-Core
    // layer_wise_optimizer.py; the Kimi-K2 recipe).
    if (muon && !fw.distributed_optimizer && sim_.dp_traffic() && !sim_.in_.parallelism.fsdp)
      dp_collective(kDpStream, "dp.param_all_gather", all, true, k.record);
  }
  const char* reduce_name() const {
    return sim_.in_.parallelism.fsdp           ? "fsdp.grad_reduce_scatter"
           : sim_.reduce_scatters()            ? "dp.grad_reduce_scatter"
                                               : "dp.grad_all_reduce";
  }

  // Launches item j's receive, if it needs one, and remembers its completion event.
  // The item's place: its pipeline stage's id (pairs transfers) and whether it is the
  // first or last stage of its pipeline.
  struct Place {
    int id, layout_stage;
    bool descending, first, last;
  };
  Place place(const WorkItem& it) const {
    const PipelineShape& shape = sim_.shape();
    const StagePlace p = shape.place(rank_, it.chunk);
    return {shape.stage_id(p), p.layout_stage, p.descending, p.stage == 0, p.stage == shape.stages() - 1};
  }

  void post_recv(int j) {
    const WorkItem& it = items_[static_cast<std::size_t>(j)];
    const Place pl = place(it);
    if (!it.communicates() || (it.forward() ? pl.first : pl.last)) return;
    Kernel r = kernel(sim_.label(it.forward() ? "pp.recv_activation" : "pp.recv_grad"), kPpComm,
                      sim_.pp_seconds(), -1);
    r.port_load = sim_.pp_loads(false);
    r.rendezvous = sim_.pair(it.microbatch, pl.id, it.forward(), lane_);
    r.record = recv_event_[static_cast<std::size_t>(j)] = sim_.event(kPpComm);
    launch(pp_track(it.forward(), false, pl.descending), r, op_cost());
  }

  // One chunk's kernels in flight on one compute stream: the gates of its first kernel,
  // the CUDA graph run it is in, and its last kernel (what sends and reductions wait for).
  struct Lane {
    int item = -1;  // the work item
    int stream = kComputeStream;
    EventId gate = kNoEvent;
    EventId cross = kNoEvent;       // the next kernel waits for the other lane (DualPipe pairs)
    EventId layer_gate = kNoEvent;  // the next kernel waits for its layer's parameters
    bool first = true, in_graph = false;
    std::size_t last = 0;
    std::vector<EventId> unit_gather;  // FSDP: each stage item's parameter all-gather
  };

  void emit(const Priced& p, Lane& l) {
    Time cpu = Time::from_seconds(p.host_s);
    if (sim_.captured(p.module)) {
      // A run of captured kernels is one graph (Megatron captures one per layer and
      // pass: L x M x 2); an eager kernel or a host sync ends it.
      if (!l.in_graph) {
        HostOp g;
        g.cpu = graph_cost();
        g.label = graph_label_;
        buf_.push_back(g);
      }
      l.in_graph = true;
      cpu = Time::zero();
    } else {
      l.in_graph = false;
    }
    Kernel k = kernel(p.label, p.category, p.seconds, p.sms, p.reserved);
    k.port_load = p.ports;
    if (p.category == kEpComm) k.rendezvous = sim_.collective(kEpComm, ep_group_, ep_seq_++, ep_members_);
    if (p.category == kTpComm) k.rendezvous = sim_.collective(kTpComm, tp_group_, tp_seq_++, tp_members_);
    k.waits[0] = l.first ? l.gate : l.cross;
    k.waits[1] = l.layer_gate;
    l.first = false;
    l.cross = l.layer_gate = kNoEvent;
    if (p.sync) k.record = sim_.event(p.category);
    l.last = buf_.size();
    launch(l.stream, k, cpu);
    if (pending_launches_ > 0 && --pending_launches_ == 0) {
      wait(pending_sync_);
      l.in_graph = false;
    }
    if (p.sync) {
      if (p.sync_delay == 0) {
        wait(k.record);
        l.in_graph = false;
      } else {
        pending_sync_ = k.record;
        pending_launches_ = p.sync_delay;
      }
    }
  }

  // One kernel of an item, or none (a layer without kernels in this pass), and the stage
  // items it begins and ends: where layer-wise data-parallel traffic hooks in.
  struct Step {
    const Priced* p = nullptr;
    int begins = -1, ends = -1;
  };
  // The item's kernels in launch order: its stage's layers forward, or backward in reverse
  // (the whole backward, or the zero-bubble split's part).
  std::vector<Step> kernels_of(const WorkItem& it, const Place& pl) const {
    const auto& items = sim_.in_.layout.stages()[static_cast<std::size_t>(pl.layout_stage)].items;
    std::vector<Step> out;
    const int n = static_cast<int>(items.size());
    for (int i = 0; i < n; ++i) {
      const int k = it.forward() ? i : n - 1 - i;
      const auto& ks = sim_.layer(items[static_cast<std::size_t>(k)]).of(it.pass);
      if (ks.empty()) out.push_back({nullptr, k, k});
      for (std::size_t j = 0; j < ks.size(); ++j)
        out.push_back({&ks[j], j == 0 ? k : -1, j + 1 == ks.size() ? k : -1});
    }
    return out;
  }

  void emit_step(const Step& st, Lane& l) {
    if (st.begins >= 0) before_layer(l, st.begins);
    if (st.p) emit(*st.p, l);
    if (st.ends >= 0) after_layer(l, st.ends);
  }

  // Before stage item k's kernels: the parameters it needs. FSDP gathers the unit (and
  // prefetches the next one in the pass's order) in every pass but the weight-gradient
  // one; the distributed optimizer's first forward waits for the item's bucket.
  void before_layer(Lane& l, int k) {
    if (!sim_.dp_traffic()) return;
    const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
    const auto c = static_cast<std::size_t>(it.chunk);
    if (!sim_.in_.parallelism.fsdp) {
      if (it.forward() && first_fwd_[c] == l.item && !gather_[c].empty())
        l.layer_gate = gather_[c][static_cast<std::size_t>(k)];
      return;
    }
    if (it.pass == Pass::backward_weight) return;
    const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
    if (l.unit_gather.empty()) l.unit_gather.assign(plan.item.size(), kNoEvent);
    const int next = it.forward() ? k + 1 : k - 1;
    for (int u : {k, next}) {
      if (u < 0 || u >= static_cast<int>(plan.item.size())) continue;
      EventId& e = l.unit_gather[static_cast<std::size_t>(u)];
      if (e == kNoEvent)
        e = dp_collective(kDpGatherStream, "fsdp.param_all_gather", plan.item[static_cast<std::size_t>(u)], true,
                          kNoEvent);
    }
    l.layer_gate = l.unit_gather[static_cast<std::size_t>(k)];
  }

  // After stage item k's weight gradients: FSDP reduce-scatters the unit's every time;
  // DDP reduces the buckets that close at k in the chunk's last backward.
  void after_layer(Lane& l, int k) {
    if (!sim_.dp_traffic()) return;
    const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
    if (!it.weights()) return;
    const DpPlan& plan = sim_.dp_plan(rank_, it.chunk);
    const auto u = static_cast<std::size_t>(k);
    const EventId done = l.first ? l.gate : lane_done(l);
    if (sim_.in_.parallelism.fsdp) {
      last_dp_ = dp_collective(kDpStream, reduce_name(), plan.item[u], false, done);
    } else if (sim_.in_.framework.overlap_grad_reduce && last_bwd_[static_cast<std::size_t>(it.chunk)] == l.item &&
               (plan.bucket[u].dense > 0 || plan.bucket[u].expert > 0)) {
      last_dp_ = dp_collective(kDpStream, reduce_name(), plan.bucket[u], false, done);
    }
  }

  // Posts the receives of items up to `upto` and returns item `index`'s gates.
  Lane lane_for(int index, int upto, int stream) {
    for (int j = posted_; j <= std::min(upto, static_cast<int>(items_.size()) - 1); ++j) post_recv(j);
    posted_ = std::max(posted_, upto + 1);
    Lane l;
    l.item = index;
    l.stream = stream;
    l.gate = recv_event_[static_cast<std::size_t>(index)];
    return l;
  }

  void expand(int index) {
    const WorkItem& it = items_[static_cast<std::size_t>(index)];
    if (it.overlap_next) return sim_.fixed() ? expand_pair(index) : expand_overlapped(index);
    const Place pl = place(it);
    // Receive the input activation (forward) or output gradient (backward). The
    // interleaved schedule posts the next item's receive while this one computes
    // (Megatron's --overlap-p2p-communication, on by default with vpp > 1).
    const int lookahead = sim_.in_.parallelism.vpp > 1 ? 1 : 0;
    Lane l = lane_for(index, index + lookahead, kComputeStream);
    for (const Step& st : kernels_of(it, pl)) emit_step(st, l);
    finish(index, pl, l);
  }

  // The kernels split into runs of EP communication and runs of the rest.
  static bool ep_comm(const Step& st) { return st.p && st.p->category == kEpComm; }
  // --delay-wgrad-compute: each delayed weight-gradient GEMM runs after the next EP
  // communication kernel of the chunk (the experts' beside the dispatch's backward, the
  // attention's and shared expert's beside the next layer's combine), or at the chunk's
  // end. A moved kernel leaves its layer-start mark in place and takes its layer-end mark
  // (the gradient buckets' trigger) along.
  static std::vector<Step> delay_wgrads(const std::vector<Step>& ks) {
    std::vector<Step> out, held;
    out.reserve(ks.size());
    for (const Step& st : ks) {
      if (st.p && st.p->delayed) {
        if (st.begins >= 0) out.push_back({nullptr, st.begins, -1});
        held.push_back({st.p, -1, st.ends});
        continue;
      }
      out.push_back(st);
      if (ep_comm(st)) {
        out.insert(out.end(), held.begin(), held.end());
        held.clear();
      }
    }
    out.insert(out.end(), held.begin(), held.end());
    return out;
  }
  static std::vector<std::vector<Step>> segments(const std::vector<Step>& ks) {
    std::vector<std::vector<Step>> out;
    bool comm = false;
    for (const Step& st : ks) {
      const bool c = ep_comm(st);
      if (out.empty() || c != comm) out.emplace_back();
      comm = c;
      out.back().push_back(st);
    }
    return out;
  }
  // An event the lane's last kernel completes (the one it records, or a new one).
  EventId lane_done(const Lane& l) {
    Kernel& k = buf_[l.last].kernel;
    if (k.record == kNoEvent) k.record = sim_.event(static_cast<Category>(k.category));
    return k.record;
  }

  // DualPipe's pair on real layers (DeepSeek-V3 report, Figure 4): the forward chunk on
  // the compute stream, the backward chunk on the pair stream. Each chunk's kernels fall
  // into alternating runs of computation and of EP dispatch / combine (forward:
  // attention, dispatch, experts, combine; backward the reverse), and the pair runs in
  // phases that put one chunk's communication beside the other's computation: a phase
  // takes the next run of each chunk, or only the forward's when both are of one kind
  // (so that the next phase pairs them across kinds), and its runs start when the
  // previous phase's are done. Communication kernels hold their SMs, computation shares
  // the rest, as the engine shares them.
  void expand_overlapped(int index) {
    const WorkItem& f = items_[static_cast<std::size_t>(index)];
    const WorkItem& b = items_[static_cast<std::size_t>(index) + 1];
    ++next_item_;  // the backward is launched here
    Lane lf = lane_for(index, index + 1, kComputeStream);
    Lane lb = lane_for(index + 1, index + 1, kPairStream);
    const Place pf = place(f), pb = place(b);
    const auto sf = segments(kernels_of(f, pf)), sb = segments(delay_wgrads(kernels_of(b, pb)));
    const auto comm = [](const std::vector<Step>& run) { return ep_comm(run.front()); };
    std::size_t i = 0, j = 0;
    while (i < sf.size() || j < sb.size()) {
      const bool run_f = i < sf.size();
      const bool run_b = j < sb.size() && !(run_f && comm(sf[i]) == comm(sb[j]));
      if (run_f)
        for (const Step& st : sf[i++]) emit_step(st, lf);
      if (run_b)
        for (const Step& st : sb[j++]) emit_step(st, lb);
      const EventId df = run_f ? lane_done(lf) : kNoEvent;
      const EventId db = run_b ? lane_done(lb) : kNoEvent;
      lf.cross = db;
      lb.cross = df;
      // The phase boundary costs the host an event record and a stream wait per lane.
      HostOp sync;
      sync.cpu = op_cost() * ((run_f ? 2 : 0) + (run_b ? 2 : 0));
      sync.label = pair_sync_label_;
      buf_.push_back(sync);
    }
    finish(index, pf, lf);
    finish(index + 1, pb, lb);
  }

  // The item's end: its send; after the chunk's last weight gradients, their event.
  void finish(int index, const Place& pl, Lane& l) {
    const WorkItem& it = items_[static_cast<std::size_t>(index)];
    const bool send = it.communicates() && !(it.forward() ? pl.last : pl.first);
    if (l.first) {
      // An empty virtual stage (a layout such as "Et|t||L") passes what it received on
      // unchanged, as Megatron's stage without layers does; without the send the next
      // stage would wait forever.
      if (send) post_send(it, pl, l.gate);
      return;
    }
    const bool last_wgrad = it.weights() && last_bwd_[static_cast<std::size_t>(it.chunk)] == index;
    if (!send && !last_wgrad) return;
    const EventId done = lane_done(l);
    if (send) post_send(it, pl, done);
    if (last_wgrad) wgrad_done_[static_cast<std::size_t>(it.chunk)] = done;
  }

  void post_send(const WorkItem& it, const Place& pl, EventId done) {
    Kernel s = kernel(sim_.label(it.forward() ? "pp.send_activation" : "pp.send_grad"), kPpComm,
                      sim_.pp_seconds(), -1);
    s.port_load = sim_.pp_loads(true);
    s.waits[0] = done;
    s.rendezvous = sim_.pair(it.microbatch, it.forward() ? pl.id + 1 : pl.id - 1, it.forward(), lane_);
    launch(pp_track(it.forward(), true, pl.descending), s, op_cost());
  }

  // Fixed chunks: DualPipe's overlapped pair (a forward, then a full backward) as one
  // kernel of F&B that waits for both inputs, then both sends.
  void expand_pair(int index) {
    const WorkItem& f = items_[static_cast<std::size_t>(index)];
    const WorkItem& b = items_[static_cast<std::size_t>(index) + 1];
    ++next_item_;  // the backward is done here
    const Lane lf = lane_for(index, index + 1, kComputeStream);
    const Lane lb = lane_for(index + 1, index + 1, kComputeStream);
    const Priced& p = sim_.fwd_bwd().front();
    Kernel k = kernel(p.label, p.category, p.seconds);
    k.waits[0] = lf.gate;
    k.waits[1] = lb.gate;
    k.record = sim_.event(kCompute);
    launch(kComputeStream, k, launch_cost());
    const Place pf = place(f), pb = place(b);
    if (!pf.last) post_send(f, pf, k.record);
    if (!pb.first) post_send(b, pb, k.record);
  }

  Sim& sim_;
  sim_core::Gpu& gpu_;
  int rank_;
  std::int64_t lane_;  // position within the stage: pairs pipeline transfers
  std::int64_t tp_group_ = 0, dp_group_ = 0, ep_group_ = 0;
  std::int64_t tp_members_ = 1, dp_members_ = 1, ep_members_ = 1;
  std::int64_t ep_seq_ = 0, tp_seq_ = 0, dp_seq_ = 0;
  std::vector<WorkItem> items_;
  std::vector<EventId> recv_event_;  // per item: its receive's completion, if any
  int posted_ = 0;                   // items whose receive has been posted
  std::vector<int> last_bwd_, first_fwd_;
  std::vector<std::vector<EventId>> gather_;  // per chunk, per stage item: its bucket's gather
  std::vector<EventId> wgrad_done_;            // per chunk: its last weight gradients
  EventId last_dp_ = kNoEvent;
  EventId pending_sync_ = kNoEvent;  // a sync the host takes after `pending_launches_` more launches
  int pending_launches_ = 0;
  std::vector<HostOp> buf_;
  std::size_t pos_ = 0;
  std::size_t next_item_ = 0;
  int phase_ = 0;
  std::uint32_t graph_label_ = 0, sync_label_ = 0, pair_sync_label_ = 0;
};

// Collects what the breakdown and the trace need.
class StepObserver final : public sim_core::Observer {
 public:
  struct Span {
    Time start, end, launch;
    Category category;
    Category gated_by;  // category of the latest event it waited on
    Time gate_at;
    std::uint32_t label;
  };
  StepObserver(const Sim& sim, int ranks, bool trace) : sim_(sim), compute_(static_cast<std::size_t>(ranks)), trace_(trace) {}

  void kernel_done(int gpu, int stream, const Kernel& k, Time start, Time end) override {
    ++kernels;
    if (trace_) spans.push_back({gpu, stream, k.label, start.seconds(), end.seconds()});
    if (stream != kComputeStream && stream != kPairStream) return;
    Span s{start, end, k.launch, static_cast<Category>(k.category), kCompute, Time::zero(), k.label};
    for (EventId w : k.waits)
      if (w != kNoEvent && sim_.events_.done_at(w) >= s.gate_at) {
        s.gate_at = sim_.events_.done_at(w);
        s.gated_by = sim_.event_category(w);
      }
    compute_[static_cast<std::size_t>(gpu)].push_back(s);
  }
  void host_op(int host, std::uint32_t label, Time start, Time end) override {
    spans.push_back({host, -1, label, start.seconds(), end.seconds()});
  }
  bool wants_host_ops() const override { return trace_; }

  // The compute streams' time line: idle gaps charged to what the next kernel waited for;
  // busy time to compute where any compute kernel runs, else to the communication
  // kernels running there (two streams overlap in DualPipe's pairs: unions, not sums).
  // `pass_work` (if given): the rank's work by chunk pass (Sim::kFwd, kBwd, kWgrad), busy
  // time and the gaps that are not pipeline bubble.
  Breakdown breakdown(int rank, std::array<double, 3>* pass_work_out = nullptr) const {
    Breakdown b;
    std::array<double, 3> pass_work{};
    // One compute stream finishes its kernels in start order; two (DualPipe's pairs) may
    // not, and then the spans are sorted by start first.
    const auto by_start = [](const Span& x, const Span& y) { return x.start < y.start; };
    const std::vector<Span>& raw = compute_[static_cast<std::size_t>(rank)];
    std::vector<Span> sorted;
    const std::vector<Span>* line = &raw;
    if (!std::is_sorted(raw.begin(), raw.end(), by_start)) {
      sorted = raw;
      std::stable_sort(sorted.begin(), sorted.end(), by_start);
      line = &sorted;
    }
    Time prev = Time::zero(), prev_compute = Time::zero();
    double all = 0, compute = 0;
    // Communication kernels' busy time by kind, before the overlap with compute is removed.
    std::array<double, kCommKinds> comm_busy{};
    const auto kind = [](Category c) { return static_cast<std::size_t>(c) - 1; };  // kEpComm.. -> CommKind
    for (const Span& s : *line) {
      const double gap = (s.start - prev).seconds();
      const std::uint8_t pass = sim_.pass_of(s.label);
      if (gap > 0) {
        bool bubble = false;
        if (s.launch >= s.start && s.launch >= s.gate_at) {
          b.host_bound_idle += gap;
          b.host_bound_by_module[sim_.module_of(s.label)] += gap;
        }
        else if (s.gated_by == kPpComm) b.pipeline_bubble += gap, bubble = true;
        else if (s.gated_by == kDpComm || s.gated_by == kEpComm || s.gated_by == kTpComm) {
          b.exposed_comm += gap;
          b.exposed_comm_by_kind[kind(s.gated_by)] += gap;
        }
        else b.other += gap;
        if (!bubble && pass != Sim::kNoPass) pass_work[pass] += gap;
      }
      // Busy time as unions: all kernels, and the compute kernels among them.
      if (s.end > prev) {
        const double busy = (s.end - std::max(s.start, prev)).seconds();
        all += busy;
        if (s.category != kCompute) comm_busy[kind(s.category)] += busy;
        if (pass != Sim::kNoPass) pass_work[pass] += busy;
      }
      if (s.category == kCompute && s.end > prev_compute) {
        const double busy = (s.end - std::max(s.start, prev_compute)).seconds();
        compute += busy;
        b.compute_by_module[sim_.module_of(s.label)] += busy;
        prev_compute = s.end;
      }
      prev = std::max(prev, s.end);
    }
    b.compute += compute;
    b.exposed_comm += all - compute;
    // The communication busy time not under compute, shared by kind in proportion (one
    // compute stream: nothing overlaps and the shares are exact).
    double comm_sum = 0;
    for (double x : comm_busy) comm_sum += x;
    if (comm_sum > 0)
      for (std::size_t k = 0; k < kCommKinds; ++k) b.exposed_comm_by_kind[k] += (all - compute) * comm_busy[k] / comm_sum;
    if (pass_work_out) *pass_work_out = pass_work;
    return b;
  }

  std::uint64_t kernels = 0;
  std::vector<TraceSpan> spans;

 private:
  const Sim& sim_;
  std::vector<std::vector<Span>> compute_;
  bool trace_;
};

// Splits the pipeline bubble (Breakdown): the same schedule with every chunk at the
// rank's mean forward, backward and weight-gradient chunk time (`work` by pass over the
// rank's items of each pass) and the step's pipeline transfer time idles
// schedule_bubble; the rest of pipeline_bubble is stage imbalance.
void split_bubble(const StepInput& in, double p2p_s, const std::array<double, 3>& work, Breakdown& b) {
  const auto& p = in.parallelism;
  b.schedule_bubble = 0;
  b.stage_imbalance = b.pipeline_bubble;
  if (p.pp < 2) return;
  const int chunks = layout_chunks_per_rank(in.schedule, static_cast<int>(p.vpp));
  const int pp = static_cast<int>(p.pp), m = static_cast<int>(p.num_microbatches);
  double n[3] = {0, 0, 0};
  for (const WorkItem& it : pipeline_order(in.schedule, pp, chunks, 0, m))
    n[it.pass == Pass::forward ? Sim::kFwd : it.pass == Pass::backward_weight ? Sim::kWgrad : Sim::kBwd] += 1;
  if (n[Sim::kFwd] == 0 || n[Sim::kBwd] == 0) return;
  FixedChunks c;
  c.p2p_s = p2p_s;
  c.fwd_s = work[Sim::kFwd] / n[Sim::kFwd];
  if (n[Sim::kWgrad] > 0) {
    c.wgrad_s = work[Sim::kWgrad] / n[Sim::kWgrad];
    c.bwd_s = work[Sim::kBwd] / n[Sim::kBwd] + c.wgrad_s;
  } else {
    c.bwd_s = (work[Sim::kBwd] + work[Sim::kWgrad]) / n[Sim::kBwd];
  }
  const PipelineResult r = simulate_pipeline(in.schedule, pp, static_cast<int>(p.vpp), m, c);
  b.schedule_bubble = std::clamp(r.bubble_s, 0.0, b.pipeline_bubble);
  b.stage_imbalance = b.pipeline_bubble - b.schedule_bubble;
}

StepResult run_ranks(const StepInput& in, const StepOptions& opt, const hw_models::CommModel& comm,
                     const FixedChunks* fixed) {
  Sim sim(in, opt, comm, fixed);
  const int pp = sim.full() ? static_cast<int>(in.gpus) : static_cast<int>(in.parallelism.pp);
  StepObserver obs(sim, pp, opt.trace);

  std::vector<std::unique_ptr<sim_core::Gpu>> gpus;
  std::vector<std::unique_ptr<RankProgram>> programs;
  std::vector<std::unique_ptr<sim_core::HostThread>> hosts;
  // The descending-stage streams and the pair stream only where the schedule has them.
  const int tracks = in.schedule == ScheduleKind::dualpipe || in.schedule == ScheduleKind::dualpipev ||
                             (in.framework.moe_a2a_overlap && fixed == nullptr)
                         ? static_cast<int>(kTracks)
                         : static_cast<int>(kDpGatherStream) + 1;
  for (int r = 0; r < pp; ++r) {
    gpus.push_back(std::make_unique<sim_core::Gpu>(sim.engine_, sim.events_, sim.rendezvous_, r,
                                                   static_cast<int>(in.system.gpu.sm_count.value),
                                                   "rank" + std::to_string(r)));
    for (int t = 0; t < tracks; ++t) gpus.back()->add_stream(kTrackNames[t]);
    gpus.back()->set_observer(&obs);
    gpus.back()->set_label_names([&sim](std::uint32_t l) { return sim.labels()[l]; });
    programs.push_back(std::make_unique<RankProgram>(sim, *gpus.back(), r));
    hosts.push_back(std::make_unique<sim_core::HostThread>(sim.engine_, sim.events_, r,
                                                           "rank" + std::to_string(r) + "/host",
                                                           *programs.back()));
    hosts.back()->set_observer(&obs);
    hosts.back()->start(Time::zero());
  }
  const auto stats = sim.engine_.run();

  StepResult res;
  res.events = stats.events;
  res.kernels = obs.kernels;
  for (int r = 0; r < pp; ++r) {
    res.host_busy_s.push_back(hosts[static_cast<std::size_t>(r)]->busy().seconds());
  }
  // A rank ends with its last kernel; the step with the last rank.
  res.rank_end_s.assign(static_cast<std::size_t>(pp), 0.0);
  res.simulated_ranks = pp;
  res.step_time_s = stats.end.seconds();
  res.critical_rank = 0;
  double best = -1;
  for (int r = 0; r < pp; ++r) {
    const Breakdown b = obs.breakdown(r);
    const double t = b.compute + b.exposed_comm + b.pipeline_bubble + b.host_bound_idle + b.other;
    res.rank_end_s[static_cast<std::size_t>(r)] = t;
    if (t > best) best = t, res.critical_rank = r;
  }
  std::array<double, 3> pass_work{};
  res.breakdown = obs.breakdown(res.critical_rank, &pass_work);
  // The tail after its last compute-stream kernel (rounding can make it -1e-12).
  res.breakdown.other = std::max(0.0, res.breakdown.other + res.step_time_s - best);
  if (!fixed) split_bubble(in, sim.pp_seconds(), pass_work, res.breakdown);
  res.labels = sim.labels();
  for (int t = 0; t < tracks; ++t) res.streams.emplace_back(kTrackNames[t]);
  res.trace = std::move(obs.spans);
  return res;
}

}  // namespace

// Bounds that keep a run within seconds to minutes and memory within a few GiB on a
// small machine; beyond them the step is refused with the reason rather than attempted.
constexpr std::int64_t kMaxWorkItemsPerRank = 200'000;
constexpr std::int64_t kMaxFullFidelityRanks = 16'384;

StepResult simulate_step(const StepInput& in, const StepOptions& opt, const hw_models::CommModel& comm) {
  const auto& p = in.parallelism;
  // Forward and backward per microbatch and chunk; at most three passes with the
  // zero-bubble split (DualPipe's two chunks each see half the microbatches, DualPipeV's
  // two all of them).
  const bool split = splits_backward(in.schedule);
  const std::int64_t chunks = layout_chunks_per_rank(in.schedule, static_cast<int>(p.vpp));
  const std::int64_t items = (split ? 3 : 2) * p.num_microbatches * chunks;
  if (items > kMaxWorkItemsPerRank)
    throw NotSimulated("each pipeline rank would run " + std::to_string(items) +
                       " forward and backward chunks per step (global_batch_size / (micro_batch_size x dp) "
                       "= " + std::to_string(p.num_microbatches) + " microbatches); moesim simulates up to " +
                       std::to_string(kMaxWorkItemsPerRank));
  const std::int64_t layers = in.model.num_layers + in.training.mtp_layers;
  if (const double passes = layer_passes(in.schedule, p.num_microbatches, layers, p.pp * p.vpp); passes > kMaxLayerPasses)
    throw NotSimulated(std::to_string(p.num_microbatches) + " microbatches x " + std::to_string(layers) +
                       " layers = " + std::to_string(static_cast<std::int64_t>(passes)) +
                       " layer passes per step; moesim simulates up to " +
                       std::to_string(static_cast<std::int64_t>(kMaxLayerPasses)));
  if (opt.full_fidelity && in.gpus > kMaxFullFidelityRanks)
    throw NotSimulated("--fidelity full simulates every one of the " + std::to_string(in.gpus) +
                       " ranks; up to " + std::to_string(kMaxFullFidelityRanks) +
                       " are supported (the representative mode has no such limit)");
  return run_ranks(in, opt, comm, nullptr);
}

PipelineResult simulate_pipeline(ScheduleKind kind, int pp, int vpp, int microbatches, const FixedChunks& c) {
  // A minimal scenario whose stages hold one layer each; every layer is one kernel of the
  // given time, hosts are free, and only pipeline transfers communicate.
  if (c.wgrad_s > c.bwd_s) throw std::invalid_argument("the weight-gradient part exceeds the backward");
  const int ranks = pp;
  const int chunks_per_layout_rank = layout_chunks_per_rank(kind, vpp);
  const int stages = ranks * chunks_per_layout_rank;
  hw_models::SystemSpec sys;
  sys.gpu.sm_count.value = 132;
  sys.gpu.hbm_TBps.value = 1;
  sys.efficiency.hbm.value = 1;
  workload::ModelConfig model;
  model.num_layers = stages;
  model.moe_layer.assign(static_cast<std::size_t>(model.num_layers), false);
  workload::Training tr;
  workload::Parallelism par;
  par.pp = ranks;
  par.vpp = chunks_per_layout_rank;
  par.num_microbatches = microbatches;
  workload::Framework fw;
  fw.distributed_optimizer = false;
  const workload::StackSwitches stack;
  const PipelineLayout layout = PipelineLayout::even(model.num_layers, 0, ranks, chunks_per_layout_rank);
  const StepInput in{sys, ranks, ranks, model, tr, par, fw, stack, layout, kind, 0};
  const hw_models::AlphaBetaComm comm(sys);
  const StepResult r = run_ranks(in, {}, comm, &c);
  PipelineResult out;
  out.step_time_s = r.step_time_s;
  out.stages = stages;
  // The busiest rank's work, item by item.
  double busiest = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    double work = 0;
    const auto items = pipeline_order(kind, ranks, chunks_per_layout_rank, rank, microbatches);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].overlap_next) {
        work += c.pair_s();
        ++i;
      } else {
        work += c.seconds(items[i].pass);
      }
    }
    busiest = std::max(busiest, work);
  }
  out.bubble_s = r.step_time_s - busiest;
  out.events = r.events;
  return out;
}

std::string breakdown_module_name(std::size_t slot) {
  return slot < workload::kModuleCount ? std::string(workload::module_names().name(static_cast<Module>(slot)))
                                       : std::string("outside_layers");
}

const sim_core::NameTable<CommKind>& comm_kind_names() {
  static constexpr std::array<sim_core::NameEntry<CommKind>, kCommKinds> kEntries{{
      {CommKind::ep, "ep", "EP dispatch and combine, and their counts exchange"},
      {CommKind::tp, "tp", "tensor-parallel collectives"},
      {CommKind::pp, "pp", "pipeline transfers"},
      {CommKind::dp, "dp", "data-parallel gradient and parameter collectives"},
  }};
  static constexpr sim_core::NameTable<CommKind> kTable{kEntries};
  return kTable;
}

}  // namespace moesim::schedules
