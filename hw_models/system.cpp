#include "hw_models/system.hpp"

#include "hw_models/dispatcher.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

namespace moesim::hw_models {

double host_load_factor(const SystemSpec& s, std::int64_t gpus) {
  if (s.host.load_factor) return s.host.load_factor->value;
  if (!s.host.rank_contention) return 1.0;
  const double on_node = static_cast<double>(
      std::min<std::int64_t>(gpus, static_cast<std::int64_t>(s.node.gpus_per_node.value)));
  const double per_socket = std::max(1.0, on_node / std::max(1.0, s.node.cpus_per_node.value));
  return 1.0 + s.host.rank_contention->value * per_socket;
}

const sim_core::NameTable<Dtype>& dtype_names() {
  static constexpr std::array<sim_core::NameEntry<Dtype>, 5> kEntries{{
      {Dtype::tf32, "tf32", "TF32 Tensor Core inputs"},
      {Dtype::bf16, "bf16", "BF16 Tensor Core inputs"},
      {Dtype::fp8, "fp8", "FP8 (E4M3/E5M2) with per-tensor or blockwise scales"},
      {Dtype::mxfp8, "mxfp8", "MXFP8: FP8 with 1x32 E8M0 block scales (Blackwell)"},
      {Dtype::fp4, "fp4", "FP4 (NVFP4/MXFP4)"},
  }};
  static constexpr sim_core::NameTable<Dtype> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<GpuArch>& gpu_arch_names() {
  static constexpr std::array<sim_core::NameEntry<GpuArch>, 3> kEntries{{
      {GpuArch::hopper, "hopper", "sm_90: H100, H800, H200, H20"},
      {GpuArch::blackwell, "blackwell", "sm_100/sm_103: B200, B300, GB200, GB300"},
      {GpuArch::rubin, "rubin",
       "Vera Rubin (announced): priced as Blackwell where no Rubin figure"},
  }};
  static constexpr sim_core::NameTable<GpuArch> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<SystemStatus>& system_status_names() {
  static constexpr std::array<sim_core::NameEntry<SystemStatus>, 2> kEntries{{
      {SystemStatus::shipping, "shipping", "a part people train on (the default)"},
      {SystemStatus::announced, "announced",
       "not shipped or not measured in public: peaks as announced, efficiencies transferred"},
  }};
  static constexpr sim_core::NameTable<SystemStatus> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<Dispatcher>& dispatcher_names() {
  static constexpr std::array<sim_core::NameEntry<Dispatcher>, 4> kEntries{{
      {Dispatcher::alltoall, "alltoall", "NCCL all-to-all with explicit global permute"},
      {Dispatcher::allgather, "allgather", "all-gather tokens, then local select (TP-style)"},
      {Dispatcher::deepep, "deepep", "DeepEP fused dispatch/combine kernels (fixed SMs)"},
      {Dispatcher::hybridep, "hybridep", "HybridEP: TMA inside NVLink, IBGDA across"},
  }};
  static constexpr sim_core::NameTable<Dispatcher> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<EpLink>& ep_link_names() {
  static constexpr std::array<sim_core::NameEntry<EpLink>, 3> kEntries{{
      {EpLink::nvlink, "nvlink", "NVLink inside one node (HGX board)"},
      {EpLink::mnnvl, "mnnvl", "NVLink across the trays of one NVLink domain (NVL72)"},
      {EpLink::rdma, "rdma", "RDMA through the NICs across NVLink domains"},
  }};
  static constexpr sim_core::NameTable<EpLink> kTable{kEntries};
  return kTable;
}

const DispatcherTraits& dispatcher_traits(Dispatcher d) {
  // In dispatcher_names()'s order; the sources of the SM counts: dispatcher.hpp.
  static constexpr std::array<DispatcherTraits, 4> kTraits{{
      {false, 0, 32},  // alltoall: NCCL's p2p channels
      {false, 0, 24},  // allgather: NCCL's collective channels
      {true, 20, 0},   // deepep
      {true, 32, 0},   // hybridep
  }};
  return kTraits[static_cast<std::size_t>(d)];
}

double CommLatency::ring_group_factor(double n) const {
  const auto& t = ring_group_efficiency;
  if (t.empty()) return 1;
  if (n <= t.begin()->first) return t.begin()->second.value;
  if (n >= t.rbegin()->first) return t.rbegin()->second.value;
  const auto hi = t.upper_bound(static_cast<int>(std::floor(n)));
  const auto lo = std::prev(hi);
  const double x =
      (std::log2(n) - std::log2(lo->first)) / (std::log2(hi->first) - std::log2(lo->first));
  return lo->second.value + x * (hi->second.value - lo->second.value);
}

}  // namespace moesim::hw_models
