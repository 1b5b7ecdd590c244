// hw_models/compute.hpp: how long a kernel takes on one GPU, alone.
//
//   GEMM:       t = max( F / (P_d * eta_d * q * kf * c),  B / (BW * eta_hbm) ) + t_dev
//   attention:  t = F / (P_bf16 * eta_attn * c) + t_dev    (F counted causal, as Megatron)
//   memory:     t = B / (BW * eta_hbm * min(1, ctas / SMs)) + t_mem + t_dev
//               (eta_quantize, eta_gather for those kinds)
//   gather:     t = B / (BW * eta_gather) + W c_walk / (SMs f_clock) + t_mem + t_dev
//               (W: dependent row-map loads, TE's permute before 2.6; see ComputeWork)
//   scan:       t = max( B / (BW * eta_hbm),  F / R_ssd ) / min(1, ctas / SMs) + t_dev
//               (delta_rule: the same at R_gdn)
//
// P_d is the dense Tensor Core peak of the GEMM's input type, eta_d the achieved fraction
// of it on large shapes (grouped GEMMs have their own, measured with MoE-like shapes),
// BW the HBM peak, t_dev a fixed device-side cost per kernel (the boundary between two
// kernels), t_mem a memory-bound kernel's own fixed duration (the ramp of its first loads
// and its tail: ~2.5 us on H200, ~3.5 us on GB200 and GB300, the intercept of RMSNorm
// kernels' device time against bytes in three implementations, calibration/measurements/
// norm-kernels-*.json), c the throughput kept under
// sustained load (clocks drop at the power cap; the efficiencies come from short
// benchmarks; memory-bound kernels are not scaled). q is wave quantization: a
// GEMM is cut into 128 x 128 output tiles spread over the SMs in waves; the last wave
// runs partly empty, so q = tiles / (ceil(tiles / SMs) * SMs). kf = K/(K+K0) normalised
// to the K of the efficiency's measurement: each tile's fixed cost in units of K, fitted
// from measured GEMMs (calibration/gemm_k_fit.hpp). A memory kernel whose grid has fewer
// CTAs than the GPU has SMs (`ctas`; 0 = it fills the GPU) streams through only that share
// of them: FLA's recurrent Gated DeltaNet kernels walk the sequence chunk by chunk with one
// CTA per (value block, sequence, head) (fla/ops/common/chunk_delta_h.py 655-775 at v0.4.2).
// This bound assumes each SM draws its even share of HBM bandwidth; one SM can draw more, so
// it errs slow; no measurement of these kernels at training shapes is public. A scan kernel
// (Mamba-2's Triton SSD kernels, hw_models/chunk_kernels.hpp) also multiplies small blocks in
// registers and walks its chunks in order; published timings put it far under the HBM
// bound, so it runs at the slower of its bytes and its FLOPs at R_ssd, the rate fitted to
// those timings (efficiency.ssd_scan_tflops; calibration/measurements/ssd-triton-*.json);
// Gated DeltaNet's chunk kernels (flash-linear-attention's Triton) likewise at their own rate
// (efficiency.gdn_chunk_tflops; calibration/measurements/gdn-fla-*.json), the chunk-serial
// ones at their CTAs' share of it.
// The efficiencies come
// from the system preset (docs/reference/hardware-and-microbenchmarks.md); the calibration issue
// refines this from measured GEMM grids.
#pragma once

#include <cstdint>

#include "hw_models/system.hpp"

namespace moesim::hw_models {

// memory: streaming elementwise kernels; quantize: BF16 -> FP8 casts (scales included);
// gather: permute / unpermute, row gathers and scatters through an index map.
enum class KernelClass : std::uint8_t {
  gemm,
  grouped_gemm,
  attention_fwd,
  attention_bwd,
  memory,
  quantize,
  gather,
  scan,
  delta_rule
};

struct ComputeWork {
  KernelClass cls = KernelClass::memory;
  Dtype dtype = Dtype::bf16;
  double flops = 0;
  double bytes = 0;           // HBM traffic
  std::int64_t m = 0, n = 0;  // GEMM output shape per group
  std::int64_t k = 0;         // GEMM reduction dimension; attention: the key sequence per call
  std::int64_t groups = 1;    // grouped GEMM: experts
  double input_bytes = 0;     // bytes per element of the GEMM inputs (1 FP8, 2 BF16)
  double ctas = 0;            // memory kernels: CTAs of a grid under one wave (0 = full)
  // Gather kernels: scalar loads the programs make one after another, each waiting on the
  // last (TE's permute before 2.6 reads every expert's row-map entry for each token and
  // hidden block, see workload/layer_graph_moe.cpp). Bound by L2 latency, not by HBM: each
  // SM works through its share at kWalkCyclesPerLoad cycles a load (its resident programs
  // hide part of the latency), so t_walk = W c_walk / (SMs x clock).
  double walk_loads = 0;
  // FLOPs also mean work for scan and delta_rule kernels (R above); GEMMs and attention theirs
};

class ComputeModel {
 public:
  static constexpr std::int64_t kTile = 128;
  // c_walk from the one measured point: NVIDIA's baseline profile of DeepSeek-V3 on GB200
  // draws the old global permute (4,096 tokens, 256 experts, 7,168 wide: 7 blocks of 1,024)
  // at about 0.7 ms where the bandwidth prices the data at 0.162 ms
  // (docs/research/gb200-journey-mechanisms.md, image1): 0.538 ms for 4096 x 256 x 7 loads
  // on 148 SMs at 2,062 MHz, 22.4 cycles a load an SM (an L2 hit's ~300 cycles over about
  // 13 resident programs).
  static constexpr double kWalkCyclesPerLoad =
      (0.7e-3 - 0.162e-3) * 148 * 2062e6 / (4096.0 * 256 * 7);
  explicit ComputeModel(const SystemSpec& s);
  // Seconds alone on the whole GPU.
  double seconds(const ComputeWork& w) const;
  double wave_efficiency(std::int64_t m, std::int64_t n, std::int64_t groups) const;
  // K / (K + K0), K0 the dtype's (Efficiency::k_overhead), over its value where the
  // efficiency in use was measured (1 without K0):
  // the grouped table's at efficiency.grouped_gemm_k; the dense table's is the large-K
  // limit. A grouped GEMM in a dtype the grouped table lacks takes the dense efficiency
  // (grouped = false): its limit, not the grouped reference, so it is not priced faster
  // than a dense GEMM of the same K.
  double k_factor(std::int64_t k, bool grouped_table, Dtype dtype) const;
  int sm_count() const { return sms_; }

 private:
  const SystemSpec& sys_;
  int sms_;
  double hbm_Bps_, quantize_Bps_, gather_Bps_;
  double t_dev_;
  double t_mem_;  // a memory-bound kernel's fixed duration (efficiency.memory_kernel_us)
  double clock_;  // sustained-load Tensor Core throughput factor (compute-bound kernels)
};

}  // namespace moesim::hw_models
