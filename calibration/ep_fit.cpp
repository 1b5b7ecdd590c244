#include "calibration/ep_fit.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "calibration/bisect.hpp"
#include "hw_models/topology.hpp"

namespace moesim::calibration {

double model_ep_GBps(const hw_models::SystemSpec& s, const hw_models::EpFractions& f,
                     const EpPoint& p) {
  const hw_models::Topology topo(s, p.bench.ranks, p.gpus_per_domain);
  const auto r = hw_models::ep_flow_time(s, topo, f, p.bench);
  return p.rdma ? r.rdma_GBps : r.nvl_GBps;
}

double fit_ep_fraction(const hw_models::SystemSpec& s, hw_models::EpFractions f, bool network,
                       const EpPoint& p) {
  double& x = network ? f.network : f.nvlink;
  const auto at = [&](double v) {
    x = v;
    return model_ep_GBps(s, f, p);
  };
  return bisect_rising(at, p.GBps, 0.01, 1.0, "fit_ep_fraction");
}

namespace {
double copy_bytes(const EpPoint& p) {
  return p.bench.hidden * p.bench.element_bytes;
}
// Seconds of one SM per token copy at the point: B / (bandwidth / SMs).
double seconds_per_copy(const EpPoint& p) {
  if (p.bench.sms <= 0 || !(p.GBps > 0))
    throw std::invalid_argument("fit_ep_sm: a point needs SMs and a bandwidth");
  return copy_bytes(p) / (p.GBps * 1e9 / p.bench.sms);
}
}  // namespace

SmFit fit_ep_sm(const EpPoint& a, const EpPoint& b) {
  const double ta = seconds_per_copy(a), tb = seconds_per_copy(b);
  const double ba = copy_bytes(a), bb = copy_bytes(b);
  if (ba == bb)
    throw std::invalid_argument("fit_ep_sm: the two points need different element sizes");
  const double per_byte = (ta - tb) / (ba - bb);
  const double copy = ta - ba * per_byte;
  if (!(per_byte > 0) || copy < 0)
    throw std::invalid_argument("fit_ep_sm: the points give no positive SM throughput");
  return {copy * 1e6, 1.0 / per_byte / 1e9};
}

double fit_ep_fixed_us(const hw_models::SystemSpec& s, const hw_models::EpFractions& f, EpPoint p,
                       double latency_us) {
  p.bench.fixed_us = 0;
  const hw_models::Topology topo(s, p.bench.ranks, p.gpus_per_domain);
  const double flows_us = hw_models::ep_flow_time(s, topo, f, p.bench).time_s * 1e6;
  if (flows_us > latency_us)
    throw std::invalid_argument(
        fmt::format("fit_ep_fixed_us: the flows alone take {:.1f} us, more than {:.1f} us",
                    flows_us, latency_us));
  return latency_us - flows_us;
}

namespace {
// The rate cap `cap` of `f` (0: none) at which the model reproduces the point; empty when
// the model without it is at or below the point.
std::optional<double> fit_cap(const hw_models::SystemSpec& s, hw_models::EpFractions f,
                              const EpPoint& p, double hw_models::EpFractions::*cap,
                              const char* what) {
  f.*cap = 0;
  if (model_ep_GBps(s, f, p) <= p.GBps) return std::nullopt;
  const auto at = [&](double v) {
    f.*cap = v;
    return model_ep_GBps(s, f, p);
  };
  return bisect_rising(at, p.GBps, 0.01, 1e4, what);
}
}  // namespace

std::optional<double> fit_ep_sm_rate(const hw_models::SystemSpec& s, hw_models::EpFractions f,
                                     const EpPoint& p) {
  if (p.bench.sms <= 0) throw std::invalid_argument("fit_ep_sm_rate: the point needs its SM count");
  f.copy_us = 0;
  return fit_cap(s, f, p, &hw_models::EpFractions::sm_GBps, "fit_ep_sm_rate");
}

std::optional<double> fit_ep_peer_rate(const hw_models::SystemSpec& s, hw_models::EpFractions f,
                                       const EpPoint& p) {
  return fit_cap(s, f, p, &hw_models::EpFractions::peer_GBps, "fit_ep_peer_rate");
}

SmFit fit_ep_sm(const EpPoint& combine) {
  return {0, copy_bytes(combine) / seconds_per_copy(combine) / 1e9};
}

}  // namespace moesim::calibration
