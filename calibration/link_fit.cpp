#include "calibration/link_fit.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "calibration/bisect.hpp"
#include "hw_models/topology.hpp"

namespace moesim::calibration {

double model_busbw(const hw_models::SystemSpec& s, const BusbwPoint& p) {
  const int domain =
      p.gpus_per_domain > 0 ? p.gpus_per_domain : static_cast<int>(s.nvlink.domain_gpus.value);
  const int dom = std::min(domain, p.ranks);
  const hw_models::Topology topo(s, (p.ranks + dom - 1) / dom * dom, dom);
  std::vector<int> ranks;
  if (p.op == hw_models::Collective::send_recv)
    ranks = {0, 1};
  else
    for (int i = 0; i < p.ranks; ++i) ranks.push_back(i);
  if (!p.algorithm)
    return hw_models::fastest_collective_time(s, topo, p.op, ranks, p.bytes).busbw_GBps;
  return hw_models::collective_time(s, topo, p.op, ranks, p.bytes, *p.algorithm).busbw_GBps;
}

const std::optional<hw_models::Param>& link_param(const hw_models::SystemSpec& s, LinkClass link) {
  switch (link) {
    case LinkClass::nvlink:
      return s.comm.nvlink_efficiency;
    case LinkClass::network:
      return s.comm.network_efficiency;
    case LinkClass::alltoall:
      return s.comm.alltoall_efficiency;
    case LinkClass::nvls_latency:
      return s.comm.nvls_latency_us;
  }
  throw std::invalid_argument("link_param: unknown link class");
}

std::optional<hw_models::Param>& link_param(hw_models::SystemSpec& s, LinkClass link) {
  return const_cast<std::optional<hw_models::Param>&>(
      link_param(static_cast<const hw_models::SystemSpec&>(s), link));
}

double fit_link_efficiency(hw_models::SystemSpec s, LinkClass link, const BusbwPoint& p) {
  if (link == LinkClass::nvls_latency) {
    // Bisection on minus the latency, over which the bus bandwidth rises.
    const auto busbw_at = [&](double minus_us) {
      link_param(s, link) = hw_models::Param{-minus_us, "fit"};
      return model_busbw(s, p);
    };
    return -bisect_rising(busbw_at, p.busbw_GBps, -1000.0, 0.0,
                          "fit_link_efficiency (NVLS latency)");
  }
  auto& eta = link_param(s, link);
  const auto busbw_at = [&](double x) {
    eta = hw_models::Param{x, "fit"};
    return model_busbw(s, p);
  };
  return bisect_rising(busbw_at, p.busbw_GBps, 0.01, 1.0, "fit_link_efficiency");
}

double fit_link_efficiency(const hw_models::SystemSpec& s, LinkClass link,
                           const std::vector<BusbwPoint>& points) {
  if (points.empty()) throw std::invalid_argument("fit_link_efficiency: no points");
  if (points.size() == 1) return fit_link_efficiency(s, link, points.front());
  if (link == LinkClass::nvls_latency)
    throw std::invalid_argument("fit_link_efficiency: NVLS's latency is fitted from one point");
  hw_models::SystemSpec t = s;
  auto& eta = link_param(t, link);
  const auto cost = [&](double x) {
    eta = hw_models::Param{x, "fit"};
    double sum = 0;
    for (const auto& p : points) sum += std::pow(std::log(model_busbw(t, p) / p.busbw_GBps), 2);
    return sum;
  };
  constexpr double lo = 0.01, hi = 1.0;
  const double x = golden_min(cost, lo, hi);
  if (x < lo + 1e-6 || x > hi - 1e-6)
    throw std::invalid_argument(
        fmt::format("fit_link_efficiency: the best fit of {} points is at the range's end ({:g})",
                    points.size(), x));
  return x;
}

BusbwPoint alltoall_point(int ranks, int gpus_per_domain, double bytes, double time_us) {
  BusbwPoint p;
  p.op = hw_models::Collective::all_to_all;
  p.ranks = ranks;
  p.gpus_per_domain = gpus_per_domain;
  p.bytes = bytes;
  p.busbw_GBps = bytes / (time_us * 1e-6) / 1e9 * hw_models::bus_factor(p.op, ranks);
  return p;
}

double fit_ring_group_efficiency(const std::vector<std::pair<double, double>>& at_n_and_reference) {
  if (at_n_and_reference.empty())
    throw std::invalid_argument("fit_ring_group_efficiency: no measured pairs");
  double sum = 0;
  for (const auto& [at_n, reference] : at_n_and_reference) {
    if (!(at_n > 0) || !(reference > 0))
      throw std::invalid_argument("fit_ring_group_efficiency: a bus bandwidth is not positive");
    sum += at_n / reference;
  }
  return sum / static_cast<double>(at_n_and_reference.size());
}

}  // namespace moesim::calibration
