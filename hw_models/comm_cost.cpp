#include "hw_models/comm_cost.hpp"

namespace moesim::hw_models {

AlphaBetaComm::AlphaBetaComm(const SystemSpec& s)
    : nvlink_Bps_((s.nvlink.usable_GBps ? s.nvlink.usable_GBps->value : s.nvlink.bw_GBps.value) *
                  1e9),
      network_Bps_(s.network.nics_per_gpu.value * s.network.nic_Gbps.value / 8 * 1e9),
      base_s_(s.comm.base_latency_us.value * 1e-6),
      nvlink_hop_s_(s.comm.nvlink_hop_us.value * 1e-6),
      network_hop_s_(s.comm.network_hop_us.value * 1e-6) {}

double AlphaBetaComm::bandwidth_Bps(bool crosses) const {
  return crosses ? network_Bps_ : nvlink_Bps_;
}
double AlphaBetaComm::hop_s(bool crosses) const {
  return crosses ? network_hop_s_ : nvlink_hop_s_;
}

double AlphaBetaComm::all_to_all(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0;
  const double n = static_cast<double>(g.size);
  return base_s_ + hop_s(g.crosses_network) +
         bytes * (n - 1) / n / bandwidth_Bps(g.crosses_network);
}

double AlphaBetaComm::all_gather(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0;
  const double n = static_cast<double>(g.size);
  return base_s_ + (n - 1) * hop_s(g.crosses_network) +
         bytes * (n - 1) / n / bandwidth_Bps(g.crosses_network);
}

double AlphaBetaComm::reduce_scatter(double bytes, const CommGroup& g) const {
  return all_gather(bytes, g);
}

double AlphaBetaComm::send_recv(double bytes, const CommGroup& pair) const {
  const bool crosses = pair.crosses_network;
  return base_s_ + hop_s(crosses) + bytes / bandwidth_Bps(crosses);
}

}  // namespace moesim::hw_models
