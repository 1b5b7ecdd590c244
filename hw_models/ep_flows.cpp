#include "hw_models/ep_flows.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "hw_models/ep_dispatch.hpp"
#include "hw_models/flows.hpp"

namespace moesim::hw_models {
EpFlowTime ep_flow_time(const SystemSpec& s, const Topology& topo, const EpFractions& f, const EpBenchmark& b) {
  const int R = b.ranks, D = std::min(topo.domain_size(), R);
  if (R < 1 || R > topo.gpus() || R % D != 0 || b.experts % R != 0)
    throw std::invalid_argument("ep_flow_time: ranks must fill whole NVLink domains and split the experts");
  const int N = R / D;
  const int M = std::min(std::max(1, b.groups), N);
  // Node-limited routing is group-limited routing with the domains as the groups.
  const double p_rank = expected_destination_ranks(b.experts, R, b.topk, N, M) / R;
  const double p_domain = expected_destination_ranks(b.experts, N, b.topk, N, M) / N;
  const double per = b.tokens * b.hidden * b.element_bytes;

  std::vector<Flow> flows;
  const bool sm_limited = b.sms > 0 && f.sm_GBps > 0;
  const auto add = [&](int from, int to, double bytes, bool rdma = false) {
    if (from == to || bytes <= 0) return;
    if (b.combine) std::swap(from, to);
    flows.push_back({from, to, bytes, 0, sm_limited ? from : -1, rdma ? f.peer_GBps * 1e9 : 0.0});
  };
  LinkEfficiency eta;
  eta.nvlink = f.nvlink;
  eta.nic = eta.network = f.network;
  if (b.low_latency) {
    // T k / R selections of each rank's tokens land on every rank (its own included).
    const double pair = b.tokens * b.topk / R * b.message_bytes;
    for (int src = 0; src < R; ++src)
      for (int d = 0; d < R; ++d) add(src, d, pair);
    EpFlowTime out;
    out.flows = flows.size();
    out.time_s = b.fixed_us * 1e-6 + simulate_flows(topo, flows, eta).makespan_s;
    out.nvl_bytes = out.rdma_bytes = b.tokens * b.topk * b.message_bytes;
    out.nvl_GBps = out.rdma_GBps = out.nvl_bytes / out.time_s / 1e9;
    return out;
  }
  for (int src = 0; src < R; ++src) {
    const int dom = src / D, rail = src % D;
    for (int d = dom * D; d < (dom + 1) * D; ++d) add(src, d, per * p_rank);
    for (int n = 0; n < N; ++n) {
      if (n == dom) continue;
      const int gateway = n * D + rail;
      add(src, gateway, per * p_domain, true);
      for (int d = n * D; d < (n + 1) * D; ++d) add(gateway, d, per * p_rank);
    }
  }
  // SM caps: a GPU's SMs also copy its own tokens, so its flows get the share of the SM
  // throughput that its pushed bytes are of all it copies (the same on every GPU).
  std::vector<double> caps;
  if (sm_limited) {
    const double copy_bytes = b.hidden * b.element_bytes;
    const double sm_Bps =
        b.sms * copy_bytes / (f.copy_us * 1e-6 + copy_bytes / (f.sm_GBps * 1e9));
    std::vector<double> pushed(static_cast<std::size_t>(topo.gpus()), 0.0);
    for (const auto& fl : flows) pushed[static_cast<std::size_t>(fl.src)] += fl.bytes;
    const double self = per * p_rank;
    caps.resize(pushed.size());
    for (std::size_t g = 0; g < pushed.size(); ++g)
      caps[g] = pushed[g] + self > 0 ? sm_Bps * pushed[g] / (pushed[g] + self) : sm_Bps;
  }
  EpFlowTime out;
  out.flows = flows.size();
  out.time_s = s.comm.base_latency_us.value * 1e-6 + simulate_flows(topo, flows, eta, caps).makespan_s;
  out.nvl_bytes = per * R * p_rank;
  out.rdma_bytes = per * N * p_domain;
  out.nvl_GBps = out.nvl_bytes / out.time_s / 1e9;
  out.rdma_GBps = out.rdma_bytes / out.time_s / 1e9;
  return out;
}

namespace {
// SM seconds per byte of one EP size's rate for the payload (0: no limit).
double sm_seconds_per_byte(const EpSmRate& r, bool combine, double element_bytes) {
  const auto& p = combine ? r.combine_GBps : element_bytes >= 2 ? r.bf16_GBps : r.fp8_GBps;
  return p ? 1.0 / (p->value * 1e9) : 0.0;
}
}  // namespace

EpFractions preset_ep_fractions(const SystemSpec& s, Dispatcher d, bool combine, int ranks, double element_bytes) {
  EpFractions f;
  const auto e = ep_entries(s, d);
  if (e.network && *e.network) {
    if ((*e.network)->link_fraction) f.network = (*e.network)->link_fraction->value;
    if ((*e.network)->peer_GBps) f.peer_GBps = (*e.network)->peer_GBps->value;
  }
  if (!e.nvlink || !*e.nvlink) return f;
  const EpBandwidth& nv = **e.nvlink;
  if (nv.link_fraction) f.nvlink = nv.link_fraction->value;
  if (combine && nv.combine_link_fraction) f.nvlink = nv.combine_link_fraction->value;
  if (!nv.sm_by_ranks.empty() && ranks > 0) {
    const auto& t = nv.sm_by_ranks;
    const auto at = [&](std::size_t i) { return sm_seconds_per_byte(t[i], combine, element_bytes); };
    double spb = ranks <= t.front().ranks ? at(0) : at(t.size() - 1);
    for (std::size_t i = 1; i < t.size(); ++i)
      if (ranks > t[i - 1].ranks && ranks <= t[i].ranks) {
        const double w = static_cast<double>(ranks - t[i - 1].ranks) / (t[i].ranks - t[i - 1].ranks);
        spb = (1 - w) * at(i - 1) + w * at(i);
      }
    if (spb > 0) f.sm_GBps = 1.0 / spb / 1e9;
    return f;
  }
  if (combine) {
    if (nv.sm_combine_GBps) f.sm_GBps = nv.sm_combine_GBps->value;
  } else if (nv.sm_GBps) {
    f.sm_GBps = nv.sm_GBps->value;
    f.copy_us = nv.sm_copy_us ? nv.sm_copy_us->value : 0;
  }
  return f;
}

}  // namespace moesim::hw_models
