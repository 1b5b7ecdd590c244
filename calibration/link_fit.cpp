#include "calibration/link_fit.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "hw_models/topology.hpp"

namespace moesim::calibration {

double model_busbw(const hw_models::SystemSpec& s, const BusbwPoint& p) {
  const int domain = p.gpus_per_domain > 0 ? p.gpus_per_domain : static_cast<int>(s.nvlink.domain_gpus.value);
  const int dom = std::min(domain, p.ranks);
  const hw_models::Topology topo(s, (p.ranks + dom - 1) / dom * dom, dom);
  std::vector<int> ranks;
  if (p.op == hw_models::Collective::send_recv) ranks = {0, 1};
  else
    for (int i = 0; i < p.ranks; ++i) ranks.push_back(i);
  return hw_models::collective_time(s, topo, p.op, ranks, p.bytes).busbw_GBps;
}

double fit_link_efficiency(hw_models::SystemSpec s, LinkClass link, const BusbwPoint& p) {
  auto& eta = link == LinkClass::nvlink ? s.comm.nvlink_efficiency : s.comm.network_efficiency;
  const auto busbw_at = [&](double x) {
    eta = hw_models::Param{x, "fit"};
    return model_busbw(s, p);
  };
  double lo = 0.01, hi = 1.0;
  if (busbw_at(lo) > p.busbw_GBps || busbw_at(hi) < p.busbw_GBps)
    throw std::invalid_argument(fmt::format("fit_link_efficiency: {:.1f} GB/s is outside what efficiencies 0.01-1 give",
                                            p.busbw_GBps));
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (busbw_at(mid) < p.busbw_GBps ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace moesim::calibration
