#include "hw_models/collectives.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

namespace moesim::hw_models {

const sim_core::NameTable<Collective>& collective_names() {
  static constexpr std::array<sim_core::NameEntry<Collective>, 5> kEntries{{
      {Collective::all_reduce, "all-reduce", "ring all-reduce of S bytes per rank"},
      {Collective::all_gather, "all-gather", "ring all-gather of an S-byte output"},
      {Collective::reduce_scatter, "reduce-scatter", "ring reduce-scatter of an S-byte input"},
      {Collective::all_to_all, "all-to-all", "S bytes per rank, S/n to every rank"},
      {Collective::send_recv, "send-recv", "S bytes from the first rank to the second"},
  }};
  static constexpr sim_core::NameTable<Collective> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<CollectiveAlgorithm>& algorithm_names() {
  static constexpr std::array<sim_core::NameEntry<CollectiveAlgorithm>, 2> kEntries{{
      {CollectiveAlgorithm::ring, "ring",
       "rings (all-reduce, all-gather, reduce-scatter), all-to-all, send/recv"},
      {CollectiveAlgorithm::nvls, "nvls", "NVLink SHARP all-reduce inside one NVSwitch domain"},
  }};
  static constexpr sim_core::NameTable<CollectiveAlgorithm> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<Protocol>& protocol_names() {
  static constexpr std::array<sim_core::NameEntry<Protocol>, 3> kEntries{{
      {Protocol::ll, "ll", "NCCL LL: 8-byte stores with a flag, lowest latency, half the rate"},
      {Protocol::ll128, "ll128", "NCCL LL128: 128-byte lines with 8 bytes of flags"},
      {Protocol::simple, "simple", "NCCL Simple: bulk copies, full rate, highest latency"},
  }};
  static constexpr sim_core::NameTable<Protocol> kTable{kEntries};
  return kTable;
}

double bus_factor(Collective op, double n) {
  switch (op) {
    case Collective::all_reduce:
      return 2 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return (n - 1) / n;
    case Collective::send_recv:
      return 1;
  }
  return 1;
}

LinkEfficiency link_efficiency(const SystemSpec& s) {
  LinkEfficiency e;
  if (s.comm.nvlink_efficiency) e.nvlink = s.comm.nvlink_efficiency->value;
  if (s.comm.network_efficiency) e.nic = e.network = s.comm.network_efficiency->value;
  return e;
}

namespace {

// Ring successors per channel: members grouped by NVLink domain in order of appearance;
// channel c starts every domain's part of the ring c places later, so that each channel
// crosses between domains from a different GPU (and NIC).
// The group's members by NVLink domain, in order of appearance.
std::vector<std::vector<int>> by_domain(const Topology& topo, const std::vector<int>& ranks) {
  std::vector<std::vector<int>> out;
  std::map<int, std::size_t> slot;
  for (int r : ranks) {
    auto [it, inserted] = slot.try_emplace(topo.domain_of(r), out.size());
    if (inserted) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}
constexpr double kNvlsNetworkLatencyUs = 18;  // NCCL tuning.cc: hwLatencies[NET][NVLS][Simple]

std::vector<std::vector<int>> rings(const Topology& topo, const std::vector<int>& ranks,
                                    int channels) {
  const auto domains = by_domain(topo, ranks);
  std::vector<std::vector<int>> out;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> ring;
    for (const auto& d : domains) {
      const std::size_t k = static_cast<std::size_t>(c) % d.size();
      ring.insert(ring.end(), d.begin() + static_cast<std::ptrdiff_t>(k), d.end());
      ring.insert(ring.end(), d.begin(), d.begin() + static_cast<std::ptrdiff_t>(k));
    }
    out.push_back(std::move(ring));
  }
  return out;
}

}  // namespace

bool has_protocols(Collective op) {
  return op == Collective::all_reduce || op == Collective::all_gather ||
         op == Collective::reduce_scatter;
}

namespace {
// NCCL's LL and LL128 constants (tuning.cc): latencies in us, payload fraction.
struct ProtocolCost {
  double base_us, nvlink_hop_us, network_hop_us, payload;
};
constexpr ProtocolCost kLl{6.6, 0.6, 2.7, 0.5}, kLl128{14.0, 1.9, 4.0, 0.92};
// llMaxBw (GB/s of bus bandwidth) by nodes spanned: one, two, more.
double ll_max_busbw(const SystemSpec& s, int nodes) {
  constexpr double kHopper[3] = {141.0, 45.0, 35.0};
  const double hopper = kHopper[nodes <= 1 ? 0 : nodes == 2 ? 1 : 2];
  return s.gpu.arch == GpuArch::hopper ? hopper : 2 * hopper;  // Rubin: Blackwell's, unknown
}
}  // namespace

double ring_protocol_time(const SystemSpec& s, Collective op, Protocol p, double simple_makespan_s,
                          double bytes, double ranks, bool spans, int nodes) {
  const double steps = (op == Collective::all_reduce ? 2 : 1) * (ranks - 1);
  if (p == Protocol::simple)
    return (s.comm.base_latency_us.value +
            steps * (spans ? s.comm.network_hop_us.value : s.comm.nvlink_hop_us.value)) *
               1e-6 +
           simple_makespan_s;
  const ProtocolCost& c = p == Protocol::ll ? kLl : kLl128;
  double transfer = simple_makespan_s / c.payload;
  if (p == Protocol::ll)
    transfer = std::max(transfer, bytes * bus_factor(op, ranks) / (ll_max_busbw(s, nodes) * 1e9));
  return (c.base_us + steps * (spans ? c.network_hop_us : c.nvlink_hop_us)) * 1e-6 + transfer;
}

double small_all_reduce_seconds(double ranks, double per_domain) {
  if (ranks <= 1) return 0;
  const double k = std::min(ranks, std::max(1.0, per_domain));
  const double domains = std::ceil(ranks / k);
  return (kLl.base_us +
          2 * ((k - 1) * kLl.nvlink_hop_us + std::log2(domains) * kLl.network_hop_us)) *
         1e-6;
}

bool nvls_supported(const SystemSpec& s, const Topology& topo, Collective op,
                    const std::vector<int>& ranks) {
  if (op != Collective::all_reduce || !s.comm.nvls_efficiency || ranks.size() < 2) return false;
  const auto doms = by_domain(topo, ranks);
  if (doms.size() == 1) return true;
  // Across domains: in-network reduction, and the same number of GPUs in each domain.
  if (!s.network.sharp) return false;
  for (const auto& d : doms)
    if (d.size() != doms.front().size()) return false;
  return true;
}

CollectiveFlows collective_flows(const SystemSpec& s, const Topology& topo, Collective op,
                                 const std::vector<int>& ranks, double bytes,
                                 CollectiveAlgorithm algo) {
  CollectiveFlows out;
  const std::size_t n = ranks.size();
  if (op == Collective::send_recv ? n < 2 : n < 1)
    throw std::invalid_argument("collective_flows: too few ranks");
  if (algo == CollectiveAlgorithm::nvls && !nvls_supported(s, topo, op, ranks))
    throw std::invalid_argument(
        "collective_flows: NVLS runs only all-reduces, inside one NVLink domain or across domains "
        "with in-network reduction, on a system with NVLS");
  if (n == 1 || bytes <= 0) return out;
  if (algo == CollectiveAlgorithm::nvls) {
    const auto doms = by_domain(topo, ranks);
    const std::size_t k = doms.front().size();
    const double kd = static_cast<double>(k);
    const double per_port = bytes * (kd + 1) / kd / s.comm.nvls_efficiency->value;
    for (const auto& d : doms)
      if (k > 1)
        for (std::size_t i = 0; i < k; ++i)
          out.flows.push_back({d[i], d[(i + 1) % k], per_port, 0});
    out.latency_s = s.comm.nvls_latency_us->value * 1e-6;
    if (doms.size() > 1) {
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < doms.size(); ++j)
          out.flows.push_back({doms[j][i], doms[(j + 1) % doms.size()][i], bytes / kd, 0});
      out.latency_s += kNvlsNetworkLatencyUs * 1e-6;
    }
    return out;
  }
  bool spans = false;
  for (int g : ranks) spans = spans || topo.domain_of(g) != topo.domain_of(ranks.front());
  const double hop = (spans ? s.comm.network_hop_us.value : s.comm.nvlink_hop_us.value) * 1e-6;
  const double nd = static_cast<double>(n);
  auto& flows = out.flows;
  double steps = 1;
  switch (op) {
    case Collective::send_recv:
      flows.push_back({ranks[0], ranks[1], bytes, 0});
      break;
    case Collective::all_to_all: {
      const double eff = s.comm.alltoall_efficiency ? s.comm.alltoall_efficiency->value : 1.0;
      for (int a : ranks)
        for (int b : ranks) {
          if (a == b) continue;
          if (topo.domain_of(a) == topo.domain_of(b))
            flows.push_back({a, b, bytes / nd / eff, 0});
          else
            out.later.push_back({a, b, bytes / nd, 0});
        }
      break;
    }
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_reduce: {
      const bool ar = op == Collective::all_reduce;
      steps = (ar ? 2 : 1) * (nd - 1);
      // One channel per NIC a domain's members have, up to NCCL's 32; one inside a domain.
      int channels = 1;
      if (spans) {
        std::map<int, int> per_domain;
        for (int g : ranks) ++per_domain[topo.domain_of(g)];
        int least = static_cast<int>(n);
        for (const auto& [d, k] : per_domain) least = std::min(least, k);
        channels = std::clamp(least * static_cast<int>(std::max(1.0, s.network.nics_per_gpu.value)),
                              1, 32);
      }
      // Inside one NVLink domain a smaller group's ring reaches less of the links
      // (SystemSpec::comm.ring_group_efficiency): the flows carry that much more.
      const double group = spans ? 1 : s.comm.ring_group_factor(nd);
      const double per_rank = (ar ? 2 : 1) * (nd - 1) / nd * bytes / channels / group;
      for (const auto& ring : rings(topo, ranks, channels))
        for (std::size_t i = 0; i < ring.size(); ++i)
          flows.push_back({ring[i], ring[(i + 1) % ring.size()], per_rank, 0});
      break;
    }
  }
  out.latency_s = s.comm.base_latency_us.value * 1e-6 + steps * hop;
  return out;
}

double phased_makespan(const Topology& topo, const CollectiveFlows& cf, const LinkEfficiency& eff) {
  double t = 0;
  for (const auto* phase : {&cf.flows, &cf.later})
    if (!phase->empty()) t += simulate_flows(topo, *phase, eff).makespan_s;
  return t;
}

CollectiveTime collective_time(const SystemSpec& s, const Topology& topo, Collective op,
                               const std::vector<int>& ranks, double bytes,
                               CollectiveAlgorithm algo, std::optional<Protocol> proto) {
  CollectiveTime r;
  r.algorithm = algo;
  const CollectiveFlows cf = collective_flows(s, topo, op, ranks, bytes, algo);
  if (cf.flows.empty() && cf.later.empty()) return r;
  const double makespan_s = phased_makespan(topo, cf, link_efficiency(s));
  r.latency_s = cf.latency_s;
  r.time_s = r.latency_s + makespan_s;
  if (algo == CollectiveAlgorithm::ring && has_protocols(op)) {
    const int nodes = static_cast<int>(by_domain(topo, ranks).size());
    const double n = static_cast<double>(ranks.size());
    bool first = true;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      if (proto ? *proto != p : p == Protocol::ll) continue;
      const double t = ring_protocol_time(s, op, p, makespan_s, bytes, n, nodes > 1, nodes);
      if (first || t < r.time_s) {
        r.time_s = t;
        r.protocol = p;
        r.latency_s = ring_protocol_time(s, op, p, 0, 0, n, nodes > 1, nodes);
        first = false;
      }
    }
  }
  r.flows = cf.flows.size() + cf.later.size();
  r.algbw_GBps = bytes / r.time_s / 1e9;
  r.busbw_GBps = r.algbw_GBps * bus_factor(op, static_cast<double>(ranks.size()));
  return r;
}

CollectiveTime fastest_collective_time(const SystemSpec& s, const Topology& topo, Collective op,
                                       const std::vector<int>& ranks, double bytes) {
  CollectiveTime best = collective_time(s, topo, op, ranks, bytes);
  if (nvls_supported(s, topo, op, ranks)) {
    const CollectiveTime nvls =
        collective_time(s, topo, op, ranks, bytes, CollectiveAlgorithm::nvls);
    if (nvls.time_s < best.time_s) best = nvls;
  }
  return best;
}

}  // namespace moesim::hw_models
