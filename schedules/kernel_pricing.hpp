// schedules/kernel_pricing.hpp: a layer's kernel templates (workload/layer_graph.hpp)
// priced under one scenario, and the costs of the step's work outside the layers (DP
// collectives, the optimizer step, pipeline transfers). Internal to the step simulation
// (schedules/step_sim.hpp); the per-rank program (schedules/rank_program.hpp) launches
// what is priced here.
//
// A kernel's price has two parts:
//   device seconds   compute kernels: the roofline of hw_models/compute.hpp x the
//                    template's time factor; ring attention (TE cp_comm_type p2p):
//                      t = c + (cp - 1) max(c, t_kv),   c = t_attention / cp,
//                    t_kv one step of a ring all-gather of the KV chunks over the CP group;
//                    PDL takes the kernel's launch latency (efficiency.kernel_device_us) off.
//                    EP dispatch / combine: DeepEP's and HybridEP's kernels as flows over
//                    the EP group's topology with the library's profile (hw_models/
//                    ep_flows.hpp, ep_library_time; the model `moesim comm` prices), else
//                    the dispatcher's all-to-all (hw_models/ep_dispatch.hpp). TP and the
//                    HybridEP routing-map all-gather: NCCL collectives (the CommModel).
//   host seconds     what the host spends before the launch returns (sim_core/host.hpp):
//                      h = (base + (groups - 1) library_launch + allocs alloc + ops op)
//                          x load x numa_unbound_factor (processes not NUMA-bound),
//                    load = 1 + rank_contention x ranks per CPU socket (hw_models::
//                    host_load_factor; a system's explicit load_factor replaces it),
//                    base: a TE Linear module call (te_linear_us, x te_slim_factor with the
//                    slim host code), a kernel a library launches from C++ inside a call it
//                    is already in (cpp_launch_us: tritonbench PR 1017), a library API call
//                    (library_launch_us), or an eager PyTorch op (elementwise_launch_us
//                    for memory-bound kernels, else launch_us). Sources: the system
//                    presets' host block (scenarios/systems/*.json).
// Transfers also carry link-port loads (sim_core::Gpu): the bytes each rank moves through
// its NVLink and network ports over the transfer's time, over the port's capacity (link x
// the preset's link efficiency); rings send (n-1)/n of the buffer, NCCL's one ring per NIC
// puts 1/(members per domain) of it on the NIC; all-to-alls split by members per domain.
//
// Outside the layers (Megatron-Core's distributed optimizer,
// docs/reference/domain-brief.md):
//   DP reduction   reduce-scatter of the gradients (grad_reduce_dtype bytes) over DP x CP
//                  (dense) and expert-DP (experts); plus the all-gather without the
//                  distributed optimizer or FSDP (an all-reduce as a ring)
//   param gather   all-gather of the BF16 (FP8 or NVFP4 with fp8_param_gather) parameters
//   optimizer      HBM-bound: per parameter of the shard, read the main gradient, read and
//                  write the FP32 master and the moments, write the BF16 weight; Muon adds
//                  its Newton-Schulz GEMMs (workload::muon_ns_flops) at the BF16 GEMM rate
//   pipeline       one activation (mbs x seq / cp x hidden x 2 bytes, / tp with SP) by
//                  send-recv between neighbouring stages
//   unscale (fp16) FP16's dynamic loss scaling (Megatron optimizer.py, MixedPrecision-
//                  Optimizer._unscale_main_grads_and_check_for_nan): one pass that reads
//                  and writes the shard's FP32 main gradients (divided by the loss scale,
//                  checked for inf/NaN), the found-inf flag all-reduced (MAX) over every
//                  GPU, and the host waits for it (found_inf.item()) before the step
//   grad norm      Megatron-Core's clip_grad_by_total_norm_fp32 (--clip-grad 1.0, the
//                  default): multi_tensor_l2norm reads the shard's main gradients, the
//                  squared norms are all-reduced over every GPU (the distributed
//                  optimizer's shards and the model-parallel ranks), multi_tensor_scale
//                  reads and writes the shard (applied with the coefficient clamped at 1,
//                  so every step); then the optimizer
//   loss           the last stage all-reduces the step's loss over DP x CP for logging
//   amax (fp8-delayed) TransformerEngine's DelayedScaling with Megatron's amax reduction
//                  group (TP x DP x CP, parallel_state._AMAX_REDUCTION_GROUP): when a
//                  chunk's forward leaves fp8_autocast and when its backward ends, the
//                  amax buffers are all-reduced (MAX) and one fused kernel updates the
//                  history and scales (reduce_and_update_fp8_tensors); the compute stream
//                  waits for it
//   TP amax        (current scaling, NVFP4, under sequence parallelism) a quantizer's amax
//                  all-reduced over TP before its cast (workload::CommOp::tp_amax_all_reduce,
//                  LayerBuilder::insert_tp_amax), on the compute stream
// Each latency-bound all-reduce is hw_models::small_all_reduce_seconds (NCCL's LL tree).
// TP communication overlap (framework.tp_comm_overlap, workload::TpOverlap): a collective
// of t_c beside a GEMM, n = tp chunks, S the GPU's SMs, k = 16 SMs for the
// communication kernels (TE initialize_ub's default num_sm for pipeline and bulk). The ring
// and pipeline methods run the GEMM as separate cuBLAS calls on chunks (TE
// comm_gemm_overlap.cpp at d0067d0d: split_overlap_ag one GEMM per ring step on the tokens
// one rank holds, split_overlap_rs num_splits = 4 GEMMs on a quarter of the output features
// each; initialize_ub's defaults, aggregate and atomic GEMM off), round-robin on
// min(3, chunks) compute streams (num_max_streams), so s = min(3, chunks) of them run at once:
// the GEMM is priced as chunks / s GEMMs of s chunks, wave quantization and K efficiency
// included, t_g = (n / s) t(s M / n rows) for the ring, (4 / s) t(s N / 4 columns) for the
// pipeline.
//   ring      (AG, next GEMM)   t_1 = t_g / n,  T = t_1 + (n - 1) max(t_1, t_c / n)
//   pipeline  (RS, previous GEMM, 4 splits) t_g' = t_g S / (S - k),
//                               T = max(t_g', t_c) + min(t_g', t_c) / 4
//   bulk      (RS, previous GEMM, independent, unsplit) T = max(t_g', t_c)
// The GEMM runs t_g or t_g'; the collective's kernel keeps what is left of T, its exposed
// part (its link loads stay those of the whole transfer).
// Userbuffers' host work: TE drives the overlap from C++ (comm_gemm_overlap.cpp at d0067d0d),
// each chunk GEMM an nvte_cublas_gemm call (library_launch_us; the Linear's own call pays
// for the first) and every other CUDA call (a kernel launch, cudaMemcpyAsync, an event
// record, a stream wait) a driver call (cpp_launch_us). This replaces the collective's
// eager launch:
//   ring      split_overlap_ag (1044-1216): tp GEMMs; each ring step but the last a
//             copy-engine send (cudaMemcpyAsync and the flag kernel, userbuffers.cu
//             2315-2350), the receive kernel (2509-2549), an event record and two waits;
//             the fan-out to the send, receive and three compute streams (6 calls) and
//             the fan-in (10): tp - 1 further GEMMs and 6 (tp - 1) + 16 driver calls
//   pipeline  split_overlap_rs (611-785): 4 GEMMs, per split a reduce-scatter kernel, an
//             event record and a wait; fan-out 5, fan-in 8: 3 further GEMMs, 25 calls
//   bulk      bulk_overlap (445-497): fan-out 3, the collective's kernel, the GEMM's wait
//             on its launch, fan-in 4: 9 calls
// So only the ring's host work grows with tp (TP8 about twice TP4's).
//   EPLB replicas  (parallelism.eplb, workload/eplb.hpp) a replicated expert's copies
//                  compute gradients of one weight, summed over the copies before the
//                  optimizer: per rank 2 R / (E + R) of its expert gradients (the copies
//                  and the originals they copy; R redundant of E + R physical experts,
//                  about two copies each) all-reduced in pairs, over NVLink with the
//                  hierarchical policy (copies stay in their node), across the EP
//                  group's links with the global one; not overlapped (after the backward)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw_models/comm_cost.hpp"
#include "hw_models/compute.hpp"
#include "hw_models/ep_flows.hpp"
#include "hw_models/flow_cache.hpp"
#include "schedules/dp_plan.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/stage_params.hpp"
#include "schedules/step_sim.hpp"
#include "sim_core/gpu.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::schedules::detail {

using sim_core::Time;
using workload::Module;

// What a kernel (or the event it records) is: computation or one kind of communication.
// The order after kCompute is CommKind's (the breakdown maps one onto the other).
// kOffload: layer offloading's copies to and from host memory (framework.offload_layers).
enum Category : std::uint8_t { kCompute, kEpComm, kTpComm, kPpComm, kDpComm, kOffload };

using PortLoads = std::array<float, sim_core::Kernel::kPorts>;

// Kernel and host-op names interned as label ids, with the module and chunk pass of each
// layer kernel's label (for the breakdown by module and the bubble split).
class LabelTable {
 public:
  std::uint32_t id(const std::string& name) {
    auto [it, inserted] = ids_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }
  // The module of a layer kernel's label; kModuleCount for the others.
  std::size_t module_of(std::uint32_t label) const {
    return label < module_.size() ? module_[label] : workload::kModuleCount;
  }
  void set_module(std::uint32_t label, Module m) {
    if (module_.size() <= label) module_.resize(label + 1, workload::kModuleCount);
    module_[label] = static_cast<std::size_t>(m);
  }
  void set_kind(std::uint32_t label, const LabelKind& kind) {
    if (kinds_.size() <= label) kinds_.resize(label + 1);
    kinds_[label] = kind;
  }
  // Every label's kind (default for those no template priced), with its module and pass.
  std::vector<LabelKind> kinds() const {
    std::vector<LabelKind> out = kinds_;
    out.resize(names_.size());
    for (std::uint32_t l = 0; l < out.size(); ++l) {
      out[l].module = module_of(l);
      out[l].pass = pass_of(l);
    }
    return out;
  }
  std::uint8_t pass_of(std::uint32_t label) const {
    return label < pass_.size() ? pass_[label] : kNoPass;
  }
  void set_pass(std::uint32_t label, std::uint8_t pass) {
    if (pass_.size() <= label) pass_.resize(label + 1, kNoPass);
    pass_[label] = pass;
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::size_t> module_;                     // by label id
  std::vector<std::uint8_t> pass_;                      // by label id
  std::vector<LabelKind> kinds_;                        // by label id
  std::unordered_map<std::string, std::uint32_t> ids_;  // ids are insertion order
};

// A template kernel priced on this system.
struct Priced {
  std::uint32_t label;
  double seconds;
  double host_s;  // host time of its launch and what the host does before it
  int sms;
  bool reserved;
  Category category;
  Module module;
  bool sync;
  int sync_delay =
      0;  // dispatch (moe_dispatch) launches the host makes before it blocks on the sync
  bool delayed = false;  // a TE weight-gradient GEMM under --delay-wgrad-compute
  PortLoads ports{};     // link-port loads (transfers)
  bool gemm = false;     // a (non-grouped) GEMM: what a TP collective may overlap
  // A persistent kernel: it holds its SMs until it ends (sim_core/gpu.hpp). GEMMs and grouped
  // GEMMs (cuBLAS's and CUTLASS's Hopper and Blackwell kernels keep one CTA an SM looping over
  // the tiles) and attention (cuDNN's and FlashAttention-3/4's persistent tile schedulers);
  // not the memory-bound kernels, whose short CTAs retire as the grid runs.
  bool holds = false;
  workload::TpOverlap tp_overlap = workload::TpOverlap::none;
  std::uint16_t parts = 1;  // template kernels it stands for (PricedLayer::merged)
  // The GPU's coalescing class (sim_core/gpu.hpp): one per module and chunk pass for plain
  // compute kernels (PricedLayer::merged says why those), 0 for the others.
  std::uint16_t merge_class = 0;
  // The shared expert's own stream and the main stream's wait for it
  // (workload::KernelTemplate::side_stream, join_side; schedules/rank_program.cpp emit).
  bool side = false, join = false, side_after_comm = false;
};

// A layer's kernels by pass, and the same with runs of captured kernels merged.
//
// Merged runs (what the step simulates unless the trace shows every kernel or a second
// compute stream runs beside the first: StepState::merges_kernels). Inside one CUDA graph
// run the host launches every kernel at the same time, so each starts when the one
// before it ends; two kernels that want the same SMs and use no link port get the same
// rate from the fluid SM share whatever else runs, so their sum ends when the second
// would. A run of consecutive captured kernels of one pass is therefore simulated as one
// kernel when each is a plain compute kernel (no host sync, not reserved, not persistent:
// a persistent kernel holds its SMs until it ends, so a run holding them would keep a
// communication kernel waiting for the whole run; no port loads, not of the dispatch
// module, whose launches count down a pending sync) of the same
// module, SM demand and chunk pass (kWgrad kernels count as kBwd unless the schedule
// splits the backward), so that the breakdown charges its time to the same module and
// pass. (A delayed weight gradient moves only inside overlapped pairs, which are never
// merged.) Only the rounding to the picosecond differs. The engine's coalescing
// (sim_core/gpu.hpp) would join these runs too, but only after the host program had
// built, launched and queued each kernel: merged here, the DeepSeek-V3 default scenario
// costs 0.32 G instructions, against 0.46 G with the coalescing alone.
struct PricedLayer {
  std::vector<Priced> fwd, bwd;
  double saved_bytes = 0;  // what its forward keeps for its backward (layer offloading copies)
  // The backward split for zero-bubble schedules: input gradients (everything but the
  // weight-gradient GEMMs) and weight gradients (the ".wgrad" GEMMs).
  std::vector<Priced> bwd_input, bwd_weight;
  std::array<std::vector<Priced>, 4> merged;  // fwd, bwd, bwd_input, bwd_weight merged
  const std::vector<Priced>& of(Pass p, bool merged_runs = false) const {
    switch (p) {
      case Pass::forward:
        return merged_runs ? merged[0] : fwd;
      case Pass::backward:
        return merged_runs ? merged[1] : bwd;
      case Pass::backward_input:
        return merged_runs ? merged[2] : bwd_input;
      case Pass::backward_weight:
        return merged_runs ? merged[3] : bwd_weight;
    }
    return bwd;
  }
};

// Every price of one step: the layers' kernels (or, for the schedule alone, fixed
// chunks), the host's per-op costs, and the work outside the layers.
class KernelPricing {
 public:
  // `fixed`: the pipeline schedule alone (simulate_pipeline): every layer pass is one
  // kernel of the given time, hosts are free, only pipeline transfers communicate.
  KernelPricing(const StepInput& in, const hw_models::CommModel& comm, LabelTable& labels,
                const FixedChunks* fixed, hw_models::FlowCache* ep_cache = nullptr);

  bool fixed() const { return fixed_ != nullptr; }
  const PricedLayer& layer(const LayoutItem& item) const {
    return slot_layer(priced_, priced_.builds, builds_, item, in_.model);
  }
  // Fixed chunks: the overlapped forward-backward pair as one kernel of F&B.
  const std::vector<Priced>& fwd_bwd() const { return fwd_bwd_; }
  bool captured(Module m) const { return captured_[m]; }
  bool captures_iteration() const { return captured_.full_iteration(); }
  // Host costs of an op, an eager launch and a CUDA graph launch; zero with fixed chunks.
  Time op_cost() const { return op_; }
  Time launch_cost() const { return launch_; }
  Time graph_cost() const { return graph_; }

  double pp_seconds() const { return pp_s_; }
  const PortLoads& pp_loads(bool send) const { return send ? pp_send_ports_ : pp_recv_ports_; }
  // Whether the step has data-parallel traffic: some DP group of more than one rank.
  bool dp_traffic() const {
    return !fixed() &&
           (in_.parallelism.dp * in_.parallelism.cp > 1 || in_.parallelism.expert_dp > 1);
  }
  // A gradient reduction: reduce-scatter with the distributed optimizer or FSDP, else an
  // all-reduce (a ring: the reduce-scatter then the all-gather).
  bool reduce_scatters() const {
    return in_.framework.distributed_optimizer || in_.parallelism.fsdp;
  }
  double dp_seconds(const StageParams& sp) const;
  double gather_seconds(const StageParams& sp) const;
  // Megatron-FSDP's hybrid sharding (parallelism.optimizer_instances > 1 under fsdp): after
  // each unit's inner reduce-scatter in the last micro-batch, its shard reduced across the
  // instances (all-reduce under outer no_shard, reduce-scatter under optim); under optim the
  // unit's outer all-gather before its inner one at micro-batch 0
  // (docs/research/megatron-fsdp-hsdp.md 2-3).
  bool hsdp() const { return in_.parallelism.fsdp && in_.parallelism.hybrid(); }
  bool outer_gathers() const {
    return hsdp() && in_.parallelism.outer_dp_sharding == workload::OuterSharding::optim;
  }
  double outer_seconds(const StageParams& sp, bool gather) const;
  PortLoads outer_loads(const StageParams& sp, bool gather) const;
  // MXFP8 weights under the distributed optimizer: after each bucket's BF16 gather, every
  // weight re-quantized from it and the bucket's buffer zeroed, on the compute stream
  // (kernel_pricing.cpp, param_gather_bytes).
  bool mxfp8_requantizes() const;
  double requant_seconds(const StageParams& sp) const;
  PortLoads dp_loads(const StageParams& sp, bool gather) const;
  double optimizer_seconds(const StageParams& sp, const StageParams& ns_flops) const;
  // Per-step work beside the optimizer (header): the gradient norm's read of the shard,
  // clipping's scale of it, and their latency-bound all-reduces.
  double grad_norm_seconds(const StageParams& sp) const;
  double clip_seconds(const StageParams& sp) const;
  double unscale_seconds(const StageParams& sp) const;  // FP16's loss-scale pass (header)
  // A latency-bound all-reduce over every GPU (the norm), over DP x CP (the logged loss),
  // over TP x DP x CP (FP8 delayed scaling's amaxes).
  double world_reduce_seconds() const;
  double loss_reduce_seconds() const;
  // training.precision fp8-delayed: after every forward and backward of a model chunk.
  bool amax_reduction() const {
    return in_.training.precision == workload::Precision::fp8_delayed && !fixed();
  }
  double amax_reduce_seconds() const;
  // parallelism.eplb: whether copies exist, and their gradient sum's time and port loads.
  bool eplb_replicas() const { return eplb_replicas_ > 0; }
  double replica_grad_seconds(const StageParams& sp) const;
  PortLoads replica_grad_loads(const StageParams& sp) const;

 private:
  // Bytes each rank moves through its NVLink and network ports, each direction
  // (symmetric groups send what they receive).
  struct PortBytes {
    double nvl = 0, net = 0;
    PortBytes& operator+=(const PortBytes& o) {
      nvl += o.nvl;
      net += o.net;
      return *this;
    }
  };
  Priced price(const workload::KernelTemplate& k);
  // `kernels`: the pass's templates, one for each of `pass` (the GEMMs' shapes).
  void overlap_tp(std::vector<Priced>& pass,
                  const std::vector<workload::KernelTemplate>& kernels) const;
  // Userbuffers' host work for an overlapped collective (header), `driver_us` a driver call.
  double userbuffers_host_us(workload::TpOverlap method, double driver_us) const;
  void price_templates();
  std::vector<Priced> merge_runs(const std::vector<Priced>& pass) const;
  std::uint16_t merge_class(const Priced& p) const;
  void setup_ep_flows();
  hw_models::EpFlowTime ep_flows(const workload::KernelTemplate& k) const;
  double grad_bytes() const;
  double param_gather_bytes() const;
  double members_per_domain(const hw_models::CommGroup& g) const;
  PortBytes ring_bytes(double buffer, const hw_models::CommGroup& g) const;
  PortBytes a2a_bytes(double per_rank, const hw_models::CommGroup& g) const;
  PortLoads port_loads(const PortBytes& b, double seconds, bool out = true, bool in = true) const;

  const StepInput& in_;
  const hw_models::CommModel& comm_;
  hw_models::ComputeModel compute_;
  LabelTable& labels_;
  const FixedChunks* fixed_;
  hw_models::FlowCache* ep_cache_;  // StepOptions::flow_cache
  std::vector<Priced> fwd_bwd_;
  double host_factor_;        // every host cost x this (a loaded process; processes not NUMA-bound)
  double te_factor_;          // Transformer Engine module host time x this (slimmer host code)
  Time op_, launch_, graph_;  // host costs; zero with fixed chunks
  hw_models::CommGroup ep_group_, tp_group_, dp_group_, edp_group_;
  // Across optimizer instances (parallelism.optimizer_instances): the inner groups a unit or
  // bucket is reduced and gathered over (the whole DP and expert-DP groups with one
  // instance) and the outer group of one rank per instance, dense and expert alike.
  hw_models::CommGroup dp_inner_, edp_inner_, outer_group_;
  double outer_grads_seconds(const StageParams& sp) const;  // the DO's per-bucket all-reduce
  double inner_shard_params(const StageParams& sp) const;   // sp over the inner groups
  // DeepEP / HybridEP across NVLink domains: their kernels as flows over the EP group's
  // topology (hw_models/ep_flows.hpp) where the preset has the library's link fractions.
  std::optional<hw_models::Topology> ep_topo_;
  hw_models::CommGroup pp_pair_;       // a rank and its peer in the next pipeline stage
  hw_models::CommGroup cp_group_;      // a context-parallel ring
  hw_models::CommGroup replica_pair_;  // an expert's two copies (EPLB)
  double eplb_replicas_ = 0;  // the rank's share 2R / (E + R) of expert gradients with copies
  PortLoads pp_send_ports_{}, pp_recv_ports_{};  // one activation each way
  double nvl_port_Bps_ = 0,
         net_port_Bps_ = 0;  // what a transfer gets of each port (link x efficiency)
  double pp_s_ = 0;
  // One build of the decoder layers (workload::DecoderBuild): by workload::Mixer (full,
  // window, linear, csa, hca), dense and MoE, and a hybrid model's Mamba and attention layers.
  struct Build {
    std::array<PricedLayer, workload::kMixerCount> dense, moe;
    PricedLayer mamba, attention;
    PricedLayer& decoder(bool experts, workload::Mixer mixer) {
      return (experts ? moe : dense)[static_cast<std::size_t>(mixer)];
    }
    const PricedLayer& decoder(bool experts, workload::Mixer mixer) const {
      return const_cast<Build*>(this)->decoder(experts, mixer);
    }
  };
  // The priced layers: the decoders in each build the layers run.
  struct {
    std::array<Build, workload::kDecoderBuilds> builds;
    PricedLayer embedding, head, mtp;
  } priced_;
  std::vector<std::uint8_t> builds_;  // each decoder layer's build (decoder_builds)
  workload::CaptureSet captured_;
};

}  // namespace moesim::schedules::detail
