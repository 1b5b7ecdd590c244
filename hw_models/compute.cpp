#include "hw_models/compute.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace moesim::hw_models {

namespace {
// HBM bytes per second at a kernel kind's measured efficiency, or the streaming one.
double hbm_rate(const SystemSpec& s, const std::optional<Param>& eta) {
  return s.gpu.hbm_TBps.value * 1e12 * (eta ? eta->value : s.efficiency.hbm.value);
}
}  // namespace

ComputeModel::ComputeModel(const SystemSpec& s)
    : sys_(s),
      sms_(static_cast<int>(s.gpu.sm_count.value)),
      hbm_Bps_(hbm_rate(s, std::nullopt)),
      quantize_Bps_(hbm_rate(s, s.efficiency.hbm_quantize)),
      gather_Bps_(hbm_rate(s, s.efficiency.hbm_gather)),
      t_dev_(s.efficiency.kernel_device_us.value * 1e-6),
      t_mem_(s.efficiency.memory_kernel_us ? s.efficiency.memory_kernel_us->value * 1e-6 : 0.0),
      clock_(s.efficiency.sustained_clock_factor ? s.efficiency.sustained_clock_factor->value
                                                 : 1.0) {}

double ComputeModel::wave_efficiency(std::int64_t m, std::int64_t n, std::int64_t groups) const {
  if (m <= 0 || n <= 0) return 1.0;
  const std::int64_t tiles = groups * ((m + kTile - 1) / kTile) * ((n + kTile - 1) / kTile);
  const std::int64_t waves = (tiles + sms_ - 1) / sms_;
  return static_cast<double>(tiles) / static_cast<double>(waves * sms_);
}

double ComputeModel::k_factor(std::int64_t k, bool grouped_table, Dtype dtype) const {
  const auto& e = sys_.efficiency;
  const Param* p = e.k_overhead(dtype);
  if (!p || k <= 0) return 1.0;
  const double k0 = p->value;
  const auto f = [k0](double kk) { return kk / (kk + k0); };
  const double at_ref = grouped_table && e.grouped_gemm_k ? f(e.grouped_gemm_k->value) : 1.0;
  return f(static_cast<double>(k)) / at_ref;
}

double ComputeModel::seconds(const ComputeWork& w) const {
  const double share = w.ctas > 0 ? std::min(1.0, w.ctas / static_cast<double>(sms_)) : 1.0;
  const double mem = w.bytes / (hbm_Bps_ * share);
  switch (w.cls) {
    case KernelClass::memory:
      return mem + t_mem_ + t_dev_;
    case KernelClass::quantize:
      return w.bytes / quantize_Bps_ + t_mem_ + t_dev_;
    case KernelClass::gather: {
      double walk = 0;
      if (w.walk_loads > 0) {
        if (!sys_.gpu.clock_mhz)
          throw std::invalid_argument(fmt::format(
              "ComputeModel: no clock (gpu.clock_mhz) on {}: the old permute's row-map walk "
              "(stack.permute_fusion_v2 off) is priced in SM cycles",
              sys_.gpu.name));
        walk = w.walk_loads * kWalkCyclesPerLoad / (sms_ * sys_.gpu.clock_mhz->value * 1e6);
      }
      return w.bytes / gather_Bps_ + walk + t_mem_ + t_dev_;
    }
    case KernelClass::scan:
    case KernelClass::delta_rule: {
      const bool ssd = w.cls == KernelClass::scan;
      const auto& r = ssd ? sys_.efficiency.ssd_scan_tflops : sys_.efficiency.gdn_chunk_tflops;
      if (!r)
        throw std::invalid_argument(fmt::format("ComputeModel: no {} rate (efficiency.{}) on {}",
                                                ssd ? "SSD scan" : "Gated DeltaNet chunk",
                                                ssd ? "ssd_scan_tflops" : "gdn_chunk_tflops",
                                                sys_.gpu.name));
      return std::max(mem, w.flops / (r->value * 1e12 * share)) + t_dev_;
    }
    case KernelClass::attention_fwd:
    case KernelClass::attention_bwd: {
      const auto& e = sys_.efficiency;
      const bool fwd = w.cls == KernelClass::attention_fwd;
      if (w.dtype != Dtype::bf16 && !e.attention_fp8_fwd)
        throw std::invalid_argument("ComputeModel: no FP8 attention efficiency on " +
                                    sys_.gpu.name);
      double eta = w.dtype != Dtype::bf16 ? (fwd ? e.attention_fp8_fwd : e.attention_fp8_bwd)->value
                                          : (fwd ? e.attention_fwd : e.attention_bwd).value;
      // The key sequence of the call (ComputeWork::k) against the figures' 4096.
      if (const auto& s0 = fwd ? e.attention_seq_half_fwd : e.attention_seq_half_bwd;
          s0 && w.k > 0) {
        const auto g = [&](double s) { return s / (s + s0->value); };
        eta *= g(static_cast<double>(w.k)) / g(kAttentionRefSeq);
      }
      return w.flops / (sys_.gpu.peak_tflops(Dtype::bf16) * 1e12 * eta * clock_) + t_dev_;
    }
    case KernelClass::gemm:
    case KernelClass::grouped_gemm: {
      const bool grouped_table =
          w.cls == KernelClass::grouped_gemm && sys_.efficiency.grouped_gemm.count(w.dtype);
      const auto& table = grouped_table ? sys_.efficiency.grouped_gemm : sys_.efficiency.gemm;
      const auto it = table.find(w.dtype);
      if (it == table.end() || !sys_.gpu.supports(w.dtype))
        throw std::invalid_argument("ComputeModel: no GEMM efficiency for this dtype on " +
                                    sys_.gpu.name);
      const double rate = sys_.gpu.peak_tflops(w.dtype) * 1e12 * it->second.value *
                          wave_efficiency(w.m, w.n, w.groups) *
                          k_factor(w.k, grouped_table, w.dtype) * clock_;
      return std::max(w.flops / rate, mem) + t_dev_;
    }
  }
  return mem + t_dev_;
}

}  // namespace moesim::hw_models
