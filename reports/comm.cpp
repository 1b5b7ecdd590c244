#include "reports/comm.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "config/load.hpp"
#include "hw_models/collectives.hpp"
#include "hw_models/comm_cost.hpp"
#include "hw_models/dispatcher.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "hw_models/ep_flows.hpp"
#include "hw_models/flow_comm.hpp"
#include "hw_models/topology.hpp"

namespace moesim::reports {
namespace {

constexpr const char* kCli = "<command line>";

hw_models::SystemSpec system_named(const std::string& name) {
  const auto names = config::preset_names(config::PresetKind::system);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw config::InputError(kCli, "--system", fmt::format("unknown system '{}' (known: {})", name, known));
  }
  return config::load_system_preset(name);
}

// A Topology or FlowComm on the cluster of `ranks` GPUs rounded up to whole NVLink
// domains of `domain`; a domain that does not fit the system's nodes is bad input.
template <class T>
std::unique_ptr<T> on_cluster(const hw_models::SystemSpec& s, int ranks, int domain) {
  const int dom = std::min(domain, ranks);
  try {
    return std::make_unique<T>(s, (ranks + dom - 1) / dom * dom, dom);
  } catch (const std::invalid_argument& e) {
    throw config::InputError(kCli, "--gpus-per-domain", e.what());
  }
}

CommAnswer ep_comm(const CommQuery& q, const hw_models::SystemSpec& s, int domain) {
  const auto d = hw_models::dispatcher_names().find(q.dispatcher);
  if (!d)
    throw config::InputError(kCli, "--dispatcher",
                             fmt::format("unknown dispatcher '{}' (known: {})", q.dispatcher,
                                         hw_models::dispatcher_names().known()));
  if (q.dtype != "bf16" && q.dtype != "fp8")
    throw config::InputError(kCli, "--dtype", fmt::format("unknown dtype '{}' (known: bf16, fp8)", q.dtype));
  if (q.ep < 1 || q.tokens <= 0 || q.hidden <= 0 || q.topk <= 0)
    throw config::InputError(kCli, "--ep", "ep, tokens, hidden and topk must be positive");
  if (q.experts < 1 || q.experts % q.ep != 0)
    throw config::InputError(kCli, "--experts", fmt::format("{} experts do not split over ep={}", q.experts, q.ep));
  const bool combine = q.op == "ep-combine";
  // What a rank receives, as the benchmarks count it (combine: BF16).
  const double elem = combine || q.dtype == "bf16" ? 2.0 : 1.0 + 4.0 / 128;
  CommAnswer a;
  a.ranks = q.ep;
  // The flow model of the library's kernels where the preset has its link fractions for
  // the links the group uses (hw_models/ep_flows.hpp), as its benchmarks route: DeepEP
  // limits a token to min(domains, 4) domains (--topk-groups overrides), HybridEP none.
  const auto [nv, nw] = hw_models::ep_entries(s, *d);
  const bool crosses = q.ep > domain;
  // The benchmark's shape, as both flow models take it.
  const auto benchmark = [&] {
    hw_models::EpBenchmark b;
    b.ranks = q.ep;
    b.tokens = q.tokens;
    b.hidden = q.hidden;
    b.experts = q.experts;
    b.topk = static_cast<int>(q.topk);
    b.combine = combine;
    return b;
  };
  if (q.low_latency) {
    // DeepEP's low-latency kernels: one message per (token, expert) selection, the
    // kernels' fixed cost from the preset (hw_models/ep_flows.hpp).
    if (*d != hw_models::Dispatcher::deepep || !*nw || !(*nw)->low_latency_fixed_us || !(*nw)->link_fraction ||
        !*nv || !(*nv)->link_fraction)
      throw config::InputError(kCli, "--low-latency",
                               fmt::format("no DeepEP low-latency model for system '{}' (its preset needs DeepEP's "
                                           "link fractions and low_latency_fixed_us)",
                                           q.system));
    const auto topo = on_cluster<hw_models::Topology>(s, q.ep, domain);
    hw_models::EpBenchmark b = benchmark();
    b.low_latency = true;
    // Dispatch: payload (FP8 with a 4-byte scale per 128 values, or BF16) + a 16-byte
    // header; combine: BF16 (DeepEP's test counts 7408 and 14336 bytes at hidden 7168).
    b.message_bytes = combine ? q.hidden * 2 : q.hidden * elem + 16;
    b.fixed_us = (*nw)->low_latency_fixed_us->value;
    // The normal kernels' link fractions (the fixed cost was fitted with them); no SM limit.
    const auto r = hw_models::ep_flow_time(s, *topo, hw_models::preset_ep_fractions(s, *d, false), b);
    a.bytes = r.rdma_bytes;
    a.time_us = r.time_s * 1e6;
    a.latency_us = b.fixed_us;
    a.algbw_GBps = a.busbw_GBps = r.rdma_GBps;
    a.flows = r.flows;
    a.model = "deepep low-latency kernels as flows (one message per selection) plus their fixed cost; bandwidth as "
              "DeepEP counts it (selections x message bytes)";
    return a;
  }
  if (nv && *nv && (*nv)->link_fraction && (!crosses || (*nw && (*nw)->link_fraction))) {
    const auto topo = on_cluster<hw_models::Topology>(s, q.ep, domain);
    hw_models::EpBenchmark b = benchmark();
    b.element_bytes = elem;
    b.groups = q.topk_groups > 0 ? q.topk_groups : (*d == hw_models::Dispatcher::deepep ? 4 : q.ep);
    b.sms = q.sms > 0 ? q.sms : hw_models::default_dispatcher_sms(*d);
    const auto r = hw_models::ep_flow_time(s, *topo, hw_models::preset_ep_fractions(s, *d, combine, q.ep, elem), b);
    a.bytes = crosses ? r.rdma_bytes : r.nvl_bytes;
    a.time_us = r.time_s * 1e6;
    a.latency_us = s.comm.base_latency_us.value;
    a.algbw_GBps = a.busbw_GBps = crosses ? r.rdma_GBps : r.nvl_GBps;
    a.flows = r.flows;
    a.model = fmt::format("{} kernels as flows over the topology at its fitted link fractions; bandwidth as its "
                          "benchmark counts it ({})",
                          q.dispatcher, crosses ? "RDMA: distinct destination nodes, own included"
                                                : "NVLink: what a rank receives, own copy included");
    return a;
  }
  a.bytes = q.tokens * q.hidden * elem *
            hw_models::expected_destination_ranks(q.experts, q.ep, static_cast<std::int64_t>(q.topk), q.groups,
                                                  q.topk_groups);
  const auto flows = on_cluster<hw_models::FlowComm>(s, q.ep, domain);
  hw_models::EpQuery eq{a.bytes, {q.ep, q.ep > domain, 1},
                        q.sms > 0 ? q.sms : hw_models::default_dispatcher_sms(*d), combine, false};
  const double t = hw_models::ep_comm_seconds(*d, s, *flows, eq);
  a.time_us = t * 1e6;
  a.algbw_GBps = a.bytes / t / 1e9;
  a.busbw_GBps = a.algbw_GBps;
  a.model = fmt::format("{} dispatcher model of the step simulation (the library's measured bandwidth where the "
                        "preset has one, else all-to-all flows over the topology)",
                        q.dispatcher);
  return a;
}

}  // namespace

CommAnswer comm(const CommQuery& q) {
  const hw_models::SystemSpec s = system_named(q.system);
  const int domain = q.gpus_per_domain > 0 ? q.gpus_per_domain : static_cast<int>(s.nvlink.domain_gpus.value);
  CommAnswer a;
  if (q.op == "ep-dispatch" || q.op == "ep-combine") {
    a = ep_comm(q, s, domain);
  } else {
    const auto op = hw_models::collective_names().find(q.op);
    if (!op)
      throw config::InputError(kCli, "--op",
                               fmt::format("unknown op '{}' (known: {}, ep-dispatch, ep-combine)", q.op,
                                           hw_models::collective_names().known()));
    if (q.ranks < (*op == hw_models::Collective::send_recv ? 2 : 1) || q.ranks > 65536)
      throw config::InputError(kCli, "--ranks", fmt::format("{} ranks: need 1..65536 (2 for send-recv)", q.ranks));
    if (!(q.bytes > 0)) throw config::InputError(kCli, "--bytes", "bytes must be positive");
    const int dom = std::min(domain, q.ranks);
    const auto topo = on_cluster<hw_models::Topology>(s, q.ranks, domain);
    std::vector<int> ranks(static_cast<std::size_t>(q.ranks));
    for (int i = 0; i < q.ranks; ++i) ranks[static_cast<std::size_t>(i)] = i;
    // send-recv: to the first GPU of the next domain when there is one, else the next GPU.
    if (*op == hw_models::Collective::send_recv) ranks = {0, q.ranks > dom ? dom : 1};
    hw_models::CollectiveTime r;
    std::optional<hw_models::Protocol> proto;
    if (q.protocol != "auto") {
      proto = hw_models::protocol_names().find(q.protocol);
      if (!proto)
        throw config::InputError(kCli, "--protocol",
                                 fmt::format("unknown protocol '{}' (known: auto, {})", q.protocol,
                                             hw_models::protocol_names().known()));
      if (!hw_models::has_protocols(*op) || q.algorithm == "nvls")
        throw config::InputError(kCli, "--protocol",
                                 "NCCL's protocols are chosen for rings (all-reduce, all-gather, reduce-scatter); "
                                 "NVLS, all-to-all and send-recv run Simple");
      r = hw_models::collective_time(s, *topo, *op, ranks, q.bytes, hw_models::CollectiveAlgorithm::ring, proto);
    } else if (q.algorithm == "auto") {
      r = hw_models::fastest_collective_time(s, *topo, *op, ranks, q.bytes);
    } else {
      const auto algo = hw_models::algorithm_names().find(q.algorithm);
      if (!algo)
        throw config::InputError(kCli, "--algorithm",
                                 fmt::format("unknown algorithm '{}' (known: auto, {})", q.algorithm,
                                             hw_models::algorithm_names().known()));
      if (*algo == hw_models::CollectiveAlgorithm::nvls && !hw_models::nvls_supported(s, *topo, *op, ranks))
        throw config::InputError(kCli, "--algorithm",
                                 fmt::format("NVLS runs only all-reduces, inside one NVLink domain of a system "
                                             "whose preset has NVLS, or across domains of equal size where its "
                                             "network has in-network reduction (network.sharp) ('{}' {} on {} "
                                             "ranks, {} per domain)",
                                             q.system, q.op, q.ranks, dom));
      r = hw_models::collective_time(s, *topo, *op, ranks, q.bytes, *algo);
    }
    a.algorithm = std::string(hw_models::algorithm_names().name(r.algorithm));
    if (r.algorithm == hw_models::CollectiveAlgorithm::ring && hw_models::has_protocols(*op))
      a.protocol = std::string(hw_models::protocol_names().name(r.protocol));
    a.bytes = q.bytes;
    a.ranks = q.ranks;
    a.time_us = r.time_s * 1e6;
    a.latency_us = r.latency_s * 1e6;
    a.algbw_GBps = r.algbw_GBps;
    a.busbw_GBps = r.busbw_GBps;
    a.flows = r.flows;
    a.model = r.algorithm == hw_models::CollectiveAlgorithm::nvls
                  ? "NCCL NVLS all-reduce: each GPU's NVLink port carries S (n+1)/n each way, at NCCL's NVLS efficiency"
                  : "NCCL ring / all-to-all as max-min flows over the topology";
  }
  a.op = q.op;
  a.system = q.system;
  return a;
}

nlohmann::ordered_json comm_json(const CommAnswer& a) {
  return {{"system", a.system}, {"op", a.op},         {"ranks", a.ranks},           {"bytes", a.bytes},
          {"time_us", a.time_us}, {"latency_us", a.latency_us}, {"algbw_GBps", a.algbw_GBps},
          {"busbw_GBps", a.busbw_GBps}, {"flows", a.flows}, {"algorithm", a.algorithm}, {"protocol", a.protocol},
          {"model", a.model}};
}

std::string comm_text(const CommAnswer& a) {
  return fmt::format("{} on {} x {} ({:.4g} bytes)\n  time      {:.2f} us  (latency {:.2f} us)\n  algbw     {:.1f} GB/s\n"
                     "  busbw     {:.1f} GB/s\n  model     {}\n",
                     a.op, a.ranks, a.system, a.bytes, a.time_us, a.latency_us, a.algbw_GBps, a.busbw_GBps, a.model);
}

}  // namespace moesim::reports
