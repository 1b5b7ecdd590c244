#include "calibration/ep_fit.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "hw_models/topology.hpp"

namespace moesim::calibration {

double model_ep_GBps(const hw_models::SystemSpec& s, const hw_models::EpFractions& f, const EpPoint& p) {
  const hw_models::Topology topo(s, p.bench.ranks, p.gpus_per_domain);
  const auto r = hw_models::ep_flow_time(s, topo, f, p.bench);
  return p.rdma ? r.rdma_GBps : r.nvl_GBps;
}

double fit_ep_fraction(const hw_models::SystemSpec& s, hw_models::EpFractions f, bool network, const EpPoint& p) {
  double& x = network ? f.network : f.nvlink;
  const auto at = [&](double v) {
    x = v;
    return model_ep_GBps(s, f, p);
  };
  double lo = 0.01, hi = 1.0;
  if (at(lo) > p.GBps || at(hi) < p.GBps)
    throw std::invalid_argument(
        fmt::format("fit_ep_fraction: {:.1f} GB/s is outside what fractions 0.01-1 give", p.GBps));
  for (int i = 0; i < 50; ++i) {
    const double mid = 0.5 * (lo + hi);
    (at(mid) < p.GBps ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace moesim::calibration
