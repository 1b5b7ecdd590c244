#include "hw_models/ep_flows.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "hw_models/ep_dispatch.hpp"
#include "hw_models/flows.hpp"

namespace moesim::hw_models {
EpFlowTime ep_flow_time(const SystemSpec& s, const Topology& topo, const EpFractions& f,
                        const EpBenchmark& b) {
  const int R = b.ranks, D = std::min(topo.domain_size(), R);
  if (R < 1 || R > topo.gpus() || R % D != 0 || b.experts % R != 0)
    throw std::invalid_argument(
        "ep_flow_time: ranks must fill whole NVLink domains and split the experts");
  const int N = R / D;
  const int M = std::min(std::max(1, b.groups), N);
  // Node-limited routing is group-limited routing with the domains as the groups; a model's
  // own expert groups replace it.
  const bool grouped = b.expert_groups > 1 && b.expert_topk_groups > 0;
  const int G = grouped ? b.expert_groups : N, Gk = grouped ? b.expert_topk_groups : M;
  const double p_rank = expected_destination_ranks(b.experts, R, b.topk, G, Gk) / R;
  const double p_domain = expected_destination_ranks(b.experts, N, b.topk, G, Gk) / N;
  const double per = b.tokens * b.hidden * b.element_bytes;

  std::vector<Flow> flows;
  const bool sm_limited = !b.low_latency && ((b.sms > 0 && f.sm_GBps > 0) || f.gpu_GBps > 0);
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
    double sm_Bps = b.sms > 0 && f.sm_GBps > 0
                        ? b.sms * copy_bytes / (f.copy_us * 1e-6 + copy_bytes / (f.sm_GBps * 1e9))
                        : f.gpu_GBps * 1e9;
    if (f.gpu_GBps > 0) sm_Bps = std::min(sm_Bps, f.gpu_GBps * 1e9);
    std::vector<double> pushed(static_cast<std::size_t>(topo.gpus()), 0.0);
    for (const auto& fl : flows) pushed[static_cast<std::size_t>(fl.src)] += fl.bytes;
    const double self = per * p_rank;
    caps.resize(pushed.size());
    for (std::size_t g = 0; g < pushed.size(); ++g)
      caps[g] = pushed[g] + self > 0 ? sm_Bps * pushed[g] / (pushed[g] + self) : sm_Bps;
  }
  EpFlowTime out;
  out.flows = flows.size();
  out.time_s =
      s.comm.base_latency_us.value * 1e-6 + simulate_flows(topo, flows, eta, caps).makespan_s;
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

const std::optional<EpLibrary>& library(const SystemSpec& s, Dispatcher d, bool low_latency) {
  static const std::optional<EpLibrary> kNone;
  if (d == Dispatcher::deepep)
    return low_latency ? s.ep_dispatch.deepep_low_latency : s.ep_dispatch.deepep;
  if (d == Dispatcher::hybridep) return s.ep_dispatch.hybridep;
  return kNone;
}

std::string lib_name(Dispatcher d, bool low_latency) {
  return std::string(dispatcher_names().name(d)) + (low_latency ? " low-latency" : "");
}

// The library's parameters on link kind `k`; refuses a kind its profile has none for.
const EpLinkParams& kind(const EpLibrary& lib, EpLink k, Dispatcher d, bool low_latency) {
  const auto& p = lib.at(k);
  if (!p)
    throw std::invalid_argument(
        fmt::format("{} has no fitted parameters for {} links: no published table of the "
                    "library covers that link kind",
                    lib_name(d, low_latency), ep_link_names().name(k)));
  return *p;
}

double sm_rate_GBps(const EpLinkParams& p, bool combine, int ranks, double element_bytes,
                    double& copy_us) {
  copy_us = 0;
  if (!p.sm_by_ranks.empty()) {
    const auto& t = p.sm_by_ranks;
    const auto at = [&](std::size_t i) {
      return sm_seconds_per_byte(t[i], combine, element_bytes);
    };
    double spb = ranks <= t.front().ranks ? at(0) : at(t.size() - 1);
    for (std::size_t i = 1; i < t.size(); ++i)
      if (ranks > t[i - 1].ranks && ranks <= t[i].ranks) {
        const double w =
            static_cast<double>(ranks - t[i - 1].ranks) / (t[i].ranks - t[i - 1].ranks);
        spb = (1 - w) * at(i - 1) + w * at(i);
      }
    return spb > 0 ? 1.0 / spb / 1e9 : 0.0;
  }
  if (combine) return p.sm_combine_GBps ? p.sm_combine_GBps->value : 0.0;
  if (!p.sm_GBps) return 0.0;
  copy_us = p.sm_copy_us ? p.sm_copy_us->value : 0;
  return p.sm_GBps->value;
}
}  // namespace

EpLink ep_nvlink_kind(const SystemSpec& s, int gpus_in_domain) {
  return gpus_in_domain > static_cast<int>(s.node.gpus_per_node.value) ? EpLink::mnnvl
                                                                       : EpLink::nvlink;
}

std::string ep_unsupported(const SystemSpec& s, Dispatcher d, bool low_latency, int ranks,
                           int domain) {
  if (!is_ep_library(d)) return {};
  if (ranks <= domain || low_latency) return {};
  if (ranks % domain != 0)
    return fmt::format(
        "{}'s kernels forward across NVLink domains through the GPU of the same rail in each, so "
        "an EP group must fill whole domains: {} ranks do not split into domains of {}",
        lib_name(d, low_latency), ranks, domain);
  // DeepEP's internode kernels pair each RDMA rank with at most 8 NVLink peers
  // (NUM_MAX_NVL_PEERS in csrc/kernels/configs.cuh): a larger NVLink domain is cut into
  // groups of 8 that talk over RDMA inside the domain, which this model does not route.
  if (d == Dispatcher::deepep && domain > 8)
    return fmt::format(
        "DeepEP's internode kernels pair RDMA with at most 8 NVLink peers (NUM_MAX_NVL_PEERS), "
        "not an NVLink domain of {} GPUs on '{}'; use HybridEP, or keep the EP group inside one "
        "domain",
        domain, s.name);
  return {};
}

EpFractions ep_library_fractions(const SystemSpec& s, Dispatcher d, bool low_latency, bool combine,
                                 int ranks, int domain, double element_bytes) {
  if (const auto why = ep_unsupported(s, d, low_latency, ranks, domain); !why.empty())
    throw std::invalid_argument(why);
  EpFractions f;
  // The low-latency kernels move their messages at the normal kernels' link fractions
  // (their fixed cost was fitted with them), with no SM limit.
  const auto& lib = library(s, d, false);
  if (!lib) return f;
  const int in_domain = std::min(domain, ranks);
  const bool crosses = ranks > domain;
  const EpLinkParams& nv = kind(*lib, ep_nvlink_kind(s, in_domain), d, false);
  if (nv.link_fraction) f.nvlink = nv.link_fraction->value;
  if (combine && !low_latency && nv.combine_hbm_fraction)
    f.gpu_GBps = nv.combine_hbm_fraction->value * s.gpu.hbm_TBps.value * 1e3;
  const EpLinkParams* sm = &nv;
  if (crosses) {
    const EpLinkParams& rd = kind(*lib, EpLink::rdma, d, false);
    if (rd.link_fraction) f.network = rd.link_fraction->value;
    if (rd.peer_fraction)
      f.peer_GBps =
          rd.peer_fraction->value * s.network.nic_Gbps.value * s.network.nics_per_gpu.value / 8;
    sm = &rd;
  }
  if (!low_latency) f.sm_GBps = sm_rate_GBps(*sm, combine, ranks, element_bytes, f.copy_us);
  return f;
}

double ep_bandwidth_factor(const SystemSpec& s, Dispatcher d, bool deepep_tuned) {
  const auto& tuned = s.ep_dispatch.deepep_tuned_factor;
  return d == Dispatcher::deepep && deepep_tuned && tuned ? tuned->value : 1.0;
}

EpFlowTime ep_library_time(const SystemSpec& s, const Topology& topo, Dispatcher d, EpBenchmark b,
                           double bandwidth_factor) {
  const int domain = topo.domain_size();
  const EpFractions f =
      ep_library_fractions(s, d, b.low_latency, b.combine, b.ranks, domain, b.element_bytes);
  if (b.low_latency) {
    b.fixed_us = 0;
    if (const auto& ll = library(s, d, true)) {
      const auto& p = kind(*ll, EpLink::rdma, d, true);
      if (p.fixed_us) b.fixed_us = p.fixed_us->value;
    }
  }
  EpFlowTime r = ep_flow_time(s, topo, f, b);
  if (bandwidth_factor != 1) {
    r.time_s /= bandwidth_factor;
    r.nvl_GBps *= bandwidth_factor;
    r.rdma_GBps *= bandwidth_factor;
  }
  return r;
}

}  // namespace moesim::hw_models
