// hw_models/system.hpp: the hardware a scenario runs on (GPU, node, NVLink, network).
//
// Every number is a Param: a value and the source it came from (datasheet,
// microbenchmark file, paper), as required by the project's provenance rule. System
// presets live in scenarios/systems/*.json; the reference figures are collected in
// docs/reference/hardware-and-microbenchmarks.md. Later issues add calibrated
// efficiency sections (GEMM, HBM, host, collectives) beside these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim_core/names.hpp"

namespace moesim::hw_models {

// A physical parameter and where its value comes from.
struct Param {
  double value = 0;
  std::string source;
};

// Tensor Core input types with their own dense peak.
enum class Dtype { tf32, bf16, fp8, mxfp8, fp4 };
const sim_core::NameTable<Dtype>& dtype_names();

// rubin (Vera Rubin, announced): priced as Blackwell wherever the model keys a figure on the
// architecture (NCCL's LL bandwidth ceiling, hw_models/collectives.cpp), for want of a Rubin one.
enum class GpuArch { hopper, blackwell, rubin };
const sim_core::NameTable<GpuArch>& gpu_arch_names();

// Whether the system exists to be measured: `shipping` (the default: a part people train
// on, its figures from datasheets, microbenchmarks and fits) or `announced` (a part not
// shipped, or with no public measurement: its peaks are the vendor's announced figures and
// its efficiencies, host and communication costs are transferred from other GPUs). Every
// prediction on an announced system says so (config/caveats.hpp).
enum class SystemStatus { shipping, announced };
const sim_core::NameTable<SystemStatus>& system_status_names();

struct GpuSpec {
  std::string name;
  GpuArch arch = GpuArch::hopper;
  Param sm_count;
  std::optional<Param> clock_mhz;  // boost clock; absent where not published (H20)
  Param hbm_GB;                    // capacity, 1e9 bytes (the datasheet's)
  // What CUDA reports as the device's total (cudaMemGetInfo, PyTorch's "total capacity"):
  // the HBM less the driver's reservation, GiB. What the process's memory must fit in.
  Param usable_GiB;
  Param hbm_TBps;  // peak bandwidth
  std::optional<Param> l2_MB;
  std::map<Dtype, Param> dense_tflops;  // dense Tensor Core peak; absent = unsupported

  bool supports(Dtype d) const { return dense_tflops.count(d) != 0; }
  // Dense peak in TFLOPS; throws std::out_of_range if unsupported.
  double peak_tflops(Dtype d) const { return dense_tflops.at(d).value; }
};

struct NodeSpec {
  Param gpus_per_node;    // GPUs per server (HGX board) or per compute tray (NVL72)
  std::string cpu;        // host CPU model
  Param cpus_per_node;    // sockets per node/tray
  Param cpu_cores;        // cores per socket
  std::string host_link;  // "pcie5" or "nvlink-c2c"
  Param host_link_GBps;   // achieved host<->device bandwidth per direction
  // The node's (an NVL72 compute tray's share of its rack's) maximum input power, kW, from
  // the datasheet: an upper bound on what training draws (predict/goodput.hpp's energy).
  std::optional<Param> max_power_kW;
};

struct NvlinkSpec {
  Param domain_gpus;                 // GPUs reachable over NVLink (one NVSwitch fabric)
  Param bw_GBps;                     // per GPU, per direction (datasheet)
  std::optional<Param> usable_GBps;  // measured achievable, when known
  Param switch_chips;                // NVSwitch chips in one domain
};

struct NetworkSpec {
  std::string nic;  // e.g. "ConnectX-7"
  Param nics_per_gpu;
  Param nic_Gbps;        // line rate per NIC
  std::string topology;  // "rail-optimized-fat-tree", "multi-plane-fat-tree"
  Param planes;          // independent network planes (1 when not multi-plane)
  Param latency_same_leaf_us;
  Param latency_cross_leaf_us;
  // In-network reduction (InfiniBand SHARP) the switches offer NCCL: 1 where the preset
  // says so; absent, none. With it NCCL runs NVLS all-reduces across NVLink domains.
  std::optional<Param> sharp;
};

// Achieved fractions of peak, from component microbenchmarks (calibration data).
// The sequence length the attention efficiencies are stated at.
inline constexpr double kAttentionRefSeq = 4096;

struct Efficiency {
  std::map<Dtype, Param> gemm;          // large dense GEMM / dense peak
  std::map<Dtype, Param> grouped_gemm;  // MoE grouped GEMM / dense peak; absent: gemm's
  Param attention_fwd;                  // causal attention fwd / BF16 peak (causal FLOPs), at
  Param attention_bwd;                  // sequence 4096 (kAttentionRefSeq)
  // Attention efficiency against the key sequence S of one kernel call (the whole sequence,
  // or S / cp per ring step under context parallelism): eta(S) = eta(4096) g(S) / g(4096),
  // g(S) = S / (S + S0), S0 per pass and GPU generation (calibration/saturation_fit.hpp).
  // Absent: no dependence on S.
  std::optional<Param> attention_seq_half_fwd, attention_seq_half_bwd;
  // FP8 core attention (Megatron --fp8-dot-product-attention), its FLOPs over the same
  // BF16 peak; absent: no published figure for the GPU, and the setting is refused.
  std::optional<Param> attention_fp8_fwd, attention_fp8_bwd;
  Param hbm;                          // memory-bound kernels / HBM peak
  std::optional<Param> hbm_quantize;  // FP8 quantize kernels (absent: hbm)
  std::optional<Param> hbm_gather;    // permute / unpermute gathers (absent: hbm)
  // Mamba-2's Triton SSD kernels' rate, TFLOP/s of their FLOPs as hw_models/chunk_kernels.hpp
  // counts them (hw_models/compute.hpp scan); absent: Mamba layers are refused on the system.
  std::optional<Param> ssd_scan_tflops;
  // flash-linear-attention's chunked Gated DeltaNet kernels' rate, likewise (KernelClass::
  // delta_rule); absent: Gated DeltaNet layers are refused on the system.
  std::optional<Param> gdn_chunk_tflops;
  // Tensor Core throughput under sustained load (power-capped clocks) over the short
  // benchmarks the GEMM and attention efficiencies come from; absent: 1.
  std::optional<Param> sustained_clock_factor;
  Param kernel_device_us;  // fixed device-side cost per kernel
  // A memory-bound kernel's own fixed duration beyond its bytes (the ramp of its first
  // loads and its tail: the intercept of time against bytes of kernels timed on the device,
  // calibration::Fitter::kernel_intercept); added to memory, quantize and gather kernels.
  // Absent: 0.
  std::optional<Param> memory_kernel_us;
  // GEMM efficiency falls with K as eta x K / (K + K0) (calibration/gemm_k_fit.hpp);
  // `gemm` is taken as the large-K limit, `grouped_gemm` as measured at grouped_gemm_k.
  // Absent: no K dependence (resp. grouped GEMMs taken as the large-K limit).
  std::optional<Param> gemm_k_overhead;
  // K0 of one input type where it differs from gemm_k_overhead. K0 is a tile's fixed time
  // (pipeline fill, epilogue) over its K loop's time per unit of K, so it grows with the
  // Tensor Cores' rate for that type: an FP8 tile's loop runs twice as fast as a BF16
  // one's on the same SMs, and Blackwell's per SM about twice Hopper's.
  std::map<Dtype, Param> gemm_k_overhead_by_dtype;
  std::optional<Param> grouped_gemm_k;

  // The K0 that prices a GEMM of this input type (nullptr: no K dependence).
  const Param* k_overhead(Dtype d) const {
    if (const auto it = gemm_k_overhead_by_dtype.find(d); it != gemm_k_overhead_by_dtype.end())
      return &it->second;
    return gemm_k_overhead ? &*gemm_k_overhead : nullptr;
  }
};

// Host CPU costs of the framework (PyTorch + Megatron + TE) per op and per launch.
struct HostCosts {
  Param op_us;      // a framework op without a kernel (allocation, view, check)
  Param launch_us;  // a kernel-launching op from Python (autograd included), its launch included
  // A memory-bound (elementwise, norm, permute) kernel launched by one eager PyTorch op:
  // cheaper than a Linear's forward (launch_us) on the same host. Absent: launch_us.
  std::optional<Param> elementwise_launch_us;
  Param library_launch_us;  // a library API call from C++ that launches a kernel (TE's quantize
                            // call, the further GEMMs of a grouped GEMM)
  // A kernel a library launches from C++ inside a call it is already in, with no API call
  // of its own (MXFP8 scale zero-fills from at::zeros, scale swizzles and their padding,
  // current scaling's amax zero, amax and scale kernels): the driver's launch cost
  // (cuLaunchKernel). Absent: library_launch_us.
  std::optional<Param> cpp_launch_us;
  Param graph_launch_us;  // replaying one captured CUDA graph
  Param alloc_us;         // a tensor allocation (torch.empty) without a kernel
  Param te_linear_us;     // one Transformer Engine Linear call, its kernel launches included
  // Journey parameters without published mechanism detail, each inferred from its one
  // step by `moesim infer` (gb200-journey.md steps 8 and 12; the issue allows exactly this):
  //   numa_unbound_factor: every host cost is this many times larger when the processes
  //     are not bound to their GPU's NUMA node (stack.cpu_numa_binding off);
  //   te_slim_factor: Transformer Engine module host time with the slimmer host code
  //     (stack.te_host_slim on) over te_linear_us, which was measured before it.
  // Absent: the switch has no modeled effect on this system.
  std::optional<Param> numa_unbound_factor;
  std::optional<Param> te_slim_factor;
  // Every host cost of a loaded training process over the op-loop microbenchmarks the
  // costs above come from (cache and TLB pressure of a large process, the Python garbage
  // collector, the dataloader and NCCL proxy threads), growing with the training
  // processes that share the process's CPU socket (its last-level cache, memory and
  // cores; one process per GPU):
  //   load = 1 + rank_contention x n,   n = max(1, min(GPUs, node.gpus_per_node) /
  //   node.cpus_per_node)
  // (4 on the x86 HGX and DGX nodes, 2 on an NVL72 tray's Grace): the node's GPUs per
  // socket, whatever socket a launcher binds them to (docs/research/releases.md 6: the 25.11
  // GB300 rows, four ranks bound to one Grace, fit 2, not 4). rank_contention is a
  // cross-run quantity fitted over the validation corpus (`moesim calibrate corpus`); no
  // public measurement prices it. `load_factor`, where a system gives it, replaces the
  // formula. Absent both: 1 (the op-loop costs). host_load_factor() applies it.
  std::optional<Param> rank_contention;
  std::optional<Param> load_factor;
};

// NCCL-style latency constants for the placeholder communication model.
struct CommLatency {
  Param base_latency_us;
  Param nvlink_hop_us;
  Param network_hop_us;
  // Fraction of a link's capacity NCCL's transfers reach (hw_models/collectives.hpp),
  // fitted from measured bus bandwidths (calibration/link_fit.hpp); absent: 1.
  std::optional<Param> nvlink_efficiency;
  std::optional<Param> network_efficiency;
  // NCCL's all-to-all (grouped point-to-point) inside an NVLink domain reaches this fraction
  // of what the ring collectives reach on the same links (fitted from one NVLink all-to-all
  // bus bandwidth, calibration/link_fit.hpp); its network phase runs at network_efficiency
  // alone; absent: 1.
  std::optional<Param> alltoall_efficiency;
  // NCCL's rings (all-gather, reduce-scatter, ring all-reduce) inside one NVLink domain by
  // the group's size: a ring of n GPUs reaches this fraction of the rate the links'
  // efficiency gives, by key (GPUs in the group), interpolated in log2 n between keys and
  // held beyond the first and last; the largest key is the size the link efficiency was
  // fitted at (1). Measured: XLA's collective table, groups of 2, 4 and 8 GPUs at once
  // (calibration/measurements/nccl-busbw.json, 'ring_group'). Empty: every group alike.
  std::map<int, Param> ring_group_efficiency;
  // The factor for a ring of `n` GPUs inside one NVLink domain (1 without a table).
  double ring_group_factor(double n) const;
  // NVLink SHARP (NVLS) all-reduce inside one NVSwitch domain: the switch's reduction and
  // multicast reach nvls_efficiency of the links' NCCL rate, after nvls_latency_us
  // (NCCL's own tuning constants; hw_models/collectives.hpp). Absent: no NVLS.
  std::optional<Param> nvls_efficiency;
  std::optional<Param> nvls_latency_us;
};

// A library's per-SM throughput at one EP size, per payload (GB/s of what a rank
// receives, own copy included, per SM; absent: the kernels are not SM-bound there).
// Fitted by calibration::fit_ep_sm_rate from a table's SM-bound rows.
struct EpSmRate {
  int ranks = 0;
  std::optional<Param> fp8_GBps, bf16_GBps, combine_GBps;
};

// The kinds of link an EP library's kernels use, each with its own parameters: NVLink
// inside one node (HGX board), NVLink across the trays of one NVLink domain (NVL72's
// MNNVL) and RDMA through the NICs across domains.
enum class EpLink { nvlink, mnnvl, rdma };
const sim_core::NameTable<EpLink>& ep_link_names();

// One library's kernels on one link kind (hw_models/ep_flows.hpp), physical and the same
// on every system: fractions of the system's own link rates, per-SM copy throughput,
// one peer connection's share of the NIC. Fitted jointly over all of the library's
// published tables by calibration::fit_ep_library (calibration/profiles/ep-<lib>.json).
struct EpLinkParams {
  std::optional<Param> link_fraction;  // of the link kind's capacity (NVLink port / NIC)
  // Combine reduces the copies it receives: its throughput per GPU at most this fraction
  // of the GPU's HBM bandwidth (B200: 586 GB/s at 48 SMs where dispatch reaches 646;
  // absent: no limit).
  std::optional<Param> combine_hbm_fraction;
  // The kernels' SM throughput (hw_models::EpFractions): dispatch costs sm_copy_us per
  // token copy plus its bytes at sm_GBps per SM; combine sm_combine_GBps per SM.
  std::optional<Param> sm_copy_us, sm_GBps, sm_combine_GBps;
  // Where the per-SM throughput depends on the EP size (HybridEP on GB200: FP8 dispatch
  // at 16 SMs falls from 39 to 16 GB/s per SM between 8 and 36 ranks), one rate per
  // measured size, ascending; used instead of the three above.
  std::vector<EpSmRate> sm_by_ranks;
  std::optional<Param>
      peer_fraction;              // rdma: what one peer connection carries / the NIC's line rate
  std::optional<Param> fixed_us;  // DeepEP low-latency kernels' fixed cost (hw_models::EpBenchmark)
};

struct EpLibrary {
  std::optional<EpLinkParams> nvlink, mnnvl, rdma;
  const std::optional<EpLinkParams>& at(EpLink k) const {
    return k == EpLink::nvlink ? nvlink : k == EpLink::mnnvl ? mnnvl : rdma;
  }
  std::optional<EpLinkParams>& at(EpLink k) {
    return k == EpLink::nvlink ? nvlink : k == EpLink::mnnvl ? mnnvl : rdma;
  }
};

// The EP libraries' parameters, from their calibration profiles (absent when the system is
// read uncalibrated: the flow model then runs at the links' full rates, no SM limit).
// NCCL's all-to-all is priced by the collective flows at the NCCL link efficiencies
// (comm.*_efficiency, fitted across systems by calibration/link_fit.hpp).
struct EpDispatchSpec {
  std::optional<EpLibrary> deepep, deepep_low_latency, hybridep;
  // DeepEP after NVIDIA tuned its NVL72 (MNNVL) kernels (journey step 7, stack.deepep_tuned;
  // details unpublished): its kernels reach this many times the library's fitted bandwidth.
  // The GB200 tables the library is fitted to are from before the tuning: the journey
  // blog's step-4 figures (about 400 GB/s dispatch, 190 GB/s combine at EP32, 24 SMs) are
  // check rows of calibration/measurements/ep-deepep-gb200.json and the fitted model meets
  // them. A cross-run quantity of the NVL72 systems fitted over the corpus (`moesim
  // calibrate corpus`). Absent: 1, and stack.deepep_tuned changes nothing on the system.
  std::optional<Param> deepep_tuned_factor;
};

// How much later than the rest a training process finishes a step (predict/
// variability.hpp): an exponential delay of mean jitter_s + jitter_fraction x the step,
// independent per process and step (OS and host jitter, the collector, thermals); a node
// pace that stays (node_speed_sd); and a
// delay common to all processes of a step, normal with sd common_s + common_fraction x
// the step (the network, storage, the cluster's clocks). Fitted from MLPerf's weak-scaling
// pairs and per-step spreads (calibration/jitter_fit.hpp, calibration/profiles/
// step-jitter.json). Absent: no delay.
struct Variability {
  std::optional<Param> jitter_s;
  std::optional<Param> jitter_fraction;
  std::optional<Param> common_s;
  std::optional<Param> common_fraction;
  // A node's sustained pace: slower than the simulated one by a normal share of this sd,
  // the same every step (thermals, clocks, a degraded link); the step runs at the slowest
  // node's.
  std::optional<Param> node_speed_sd;
};

struct SystemSpec {
  std::string name;
  std::string description;
  SystemStatus status = SystemStatus::shipping;
  std::string status_source;          // why the status, as the preset's sources give it (announced)
  std::vector<std::string> profiles;  // calibration profiles whose values replaced the preset's
  // LoadOptions::system_set as applied: "PATH = NEW (was OLD)" each (a what-if, not calibrated).
  std::vector<std::string> set_on_command_line;
  GpuSpec gpu;
  NodeSpec node;
  NvlinkSpec nvlink;
  NetworkSpec network;
  Efficiency efficiency;
  HostCosts host;
  CommLatency comm;
  EpDispatchSpec ep_dispatch;
  Variability variability;
};

// A loaded training process's host costs over the op-loop microbenchmarks on `gpus` GPUs
// (HostCosts: load_factor, else 1 + rank_contention x ranks per CPU socket, else 1).
double host_load_factor(const SystemSpec& s, std::int64_t gpus);

}  // namespace moesim::hw_models
