#include "predict/comm.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "config/caveats.hpp"
#include "config/load.hpp"
#include "hw_models/collectives.hpp"
#include "hw_models/comm_cost.hpp"
#include "hw_models/dispatcher.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "hw_models/ep_flows.hpp"
#include "hw_models/flow_comm.hpp"
#include "hw_models/topology.hpp"

namespace moesim::predict {
namespace {

constexpr const char* kCli = "<command line>";
// Sizes beyond any training step's (a petabyte a collective, a billion tokens a rank, a
// hidden size of ten million), refused rather than priced into times past the model's range.
constexpr double kMaxBytes = 1e15, kMaxTokens = 1e9, kMaxHidden = 1e7;
constexpr int kMaxRanks = 65536;

void check_size(const char* option, double v, double max) {
  if (!(v > 0) || !(v <= max))
    throw config::InputError(kCli, option,
                             fmt::format("{}: need a positive finite size up to {:g}", v, max));
}

hw_models::SystemSpec system_named(const std::string& name) {
  config::require_preset(config::PresetKind::system, name, kCli, "--system");
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
    throw config::InputError(kCli, "--dtype",
                             fmt::format("unknown dtype '{}' (known: bf16, fp8)", q.dtype));
  if (q.ep < 1 || q.ep > kMaxRanks)
    throw config::InputError(kCli, "--ep", fmt::format("{} ranks: need 1..{}", q.ep, kMaxRanks));
  check_size("--tokens", q.tokens, kMaxTokens);
  check_size("--hidden", q.hidden, kMaxHidden);
  if (q.experts < 1 || q.experts % q.ep != 0)
    throw config::InputError(kCli, "--experts",
                             fmt::format("{} experts do not split over ep={}", q.experts, q.ep));
  if (!(q.topk >= 1) || q.topk != std::floor(q.topk) || q.topk > q.experts)
    throw config::InputError(
        kCli, "--topk",
        fmt::format("{} experts a token: need a whole number from 1 to the {} routed experts",
                    q.topk, q.experts));
  const int gpu_sms = static_cast<int>(s.gpu.sm_count.value);
  if (q.sms && (*q.sms < 1 || *q.sms > gpu_sms))
    throw config::InputError(
        kCli, "--sms",
        fmt::format("{} SMs: a {} has 1 to {} (leave it out for the dispatcher's usual)", *q.sms,
                    s.gpu.name, gpu_sms));
  const bool combine = q.op == "ep-combine";
  // What a rank receives, as the benchmarks count it (combine: BF16).
  const double elem = combine || q.dtype == "bf16" ? 2.0 : 1.0 + 4.0 / 128;
  CommAnswer a;
  a.ranks = q.ep;
  const bool crosses = q.ep > domain;
  const bool library = hw_models::is_ep_library(*d);
  if (q.low_latency && *d != hw_models::Dispatcher::deepep)
    throw config::InputError(kCli, "--low-latency",
                             "low-latency kernels are DeepEP's; needs --dispatcher deepep");
  if (q.sms && (!library || q.low_latency))
    throw config::InputError(kCli, "--sms",
                             library ? "DeepEP's low-latency kernels are priced from their own "
                                       "benchmark, not by SMs"
                                     : "NCCL picks its own channels; --sms is DeepEP's and "
                                       "HybridEP's");
  if (q.topk_groups > 0 && q.groups == 0 && (!library || q.low_latency))
    throw config::InputError(kCli, "--topk-groups",
                             "a limit on the NVLink domains a token reaches is DeepEP's and "
                             "HybridEP's normal kernels'; here nothing would change");
  if (combine && q.dtype != "bf16")
    throw config::InputError(kCli, "--dtype", "the combine sends BF16 (only dispatch takes fp8)");
  if (q.groups > 0 && (!library || q.low_latency))
    throw config::InputError(
        kCli, "--groups",
        library ? "DeepEP's low-latency kernels send a message per selection: expert groups "
                  "change nothing"
                : "NCCL's all-to-all sends one copy per expert: expert groups change nothing");
  if (library) {
    // The library's kernels as flows, with its parameters applied through this system's
    // links (hw_models/ep_flows.hpp, ep_library_time): the model the step simulation
    // prices. As its benchmarks route: DeepEP limits a token to min(domains, 4) domains
    // (--topk-groups overrides), HybridEP none; with --groups, the model's group-limited
    // routing over that many contiguous expert groups, --topk-groups of them a token.
    if (const auto why =
            hw_models::ep_unsupported(s, *d, q.low_latency, q.ep, std::min(domain, q.ep));
        !why.empty())
      throw config::InputError(kCli, "--ep", why);
    const auto topo = on_cluster<hw_models::Topology>(s, q.ep, domain);
    hw_models::EpBenchmark b;
    b.ranks = q.ep;
    b.tokens = q.tokens;
    b.hidden = q.hidden;
    b.experts = q.experts;
    b.topk = static_cast<int>(q.topk);
    b.combine = combine;
    hw_models::EpFlowTime r;
    double factor = 1;
    try {
      if (q.low_latency) {
        // One message per (token, expert) selection: the payload (FP8 with a 4-byte scale
        // per 128 values, or BF16) + a 16-byte header; combine BF16 (DeepEP's test counts
        // 7408 and 14336 bytes at hidden 7168).
        b.low_latency = true;
        b.message_bytes = combine ? q.hidden * 2 : q.hidden * elem + 16;
      } else {
        b.element_bytes = elem;
        if (q.groups > 0) {
          // The model's group-limited routing, as the step simulation prices it.
          if (q.groups < 2 || q.experts % q.groups != 0)
            throw config::InputError(
                kCli, "--groups",
                fmt::format("{} expert groups do not split {} experts", q.groups, q.experts));
          if (q.topk_groups < 1 || q.topk_groups >= q.groups)
            throw config::InputError(
                kCli, "--topk-groups",
                fmt::format("with --groups {}: the groups a token may use, 1 to {}", q.groups,
                            q.groups - 1));
          b.expert_groups = q.groups;
          b.expert_topk_groups = q.topk_groups;
          b.groups = q.ep;
        } else {
          b.groups =
              q.topk_groups > 0 ? q.topk_groups : (*d == hw_models::Dispatcher::deepep ? 4 : q.ep);
        }
        b.sms = q.sms.value_or(hw_models::default_dispatcher_sms(*d));
      }
      // DeepEP's normal kernels as a default scenario (stack.deepep_tuned on) runs them.
      factor = hw_models::ep_bandwidth_factor(s, *d, !q.low_latency);
      r = hw_models::ep_library_time(s, *topo, *d, b, factor);
    } catch (const std::invalid_argument& e) {
      throw config::InputError(kCli, "--dispatcher", e.what());
    }
    a.time_us = r.time_s * 1e6;
    a.flows = r.flows;
    if (q.low_latency) {
      a.bytes = r.rdma_bytes;
      const auto& ll = s.ep_dispatch.deepep_low_latency;
      a.latency_us = ll && ll->rdma && ll->rdma->fixed_us ? ll->rdma->fixed_us->value : 0.0;
      a.algbw_GBps = a.busbw_GBps = r.rdma_GBps;
      a.model =
          "deepep low-latency kernels as flows (one message per selection) plus their fixed cost "
          "(calibration/profiles/ep-deepep-ll.json); bandwidth as DeepEP counts it (selections x "
          "message bytes)";
      return a;
    }
    a.bytes = crosses ? r.rdma_bytes : r.nvl_bytes;
    a.latency_us = s.comm.base_latency_us.value;
    a.algbw_GBps = a.busbw_GBps = crosses ? r.rdma_GBps : r.nvl_GBps;
    a.model = fmt::format(
        "{} kernels as flows over the topology with the library's parameters "
        "(calibration/profiles/ep-{}.json) applied to this system's links{}; bandwidth as its "
        "benchmark counts it ({})",
        q.dispatcher, q.dispatcher,
        factor != 1
            ? fmt::format(
                  ", x {:.3g} for NVIDIA's tuned NVL72 kernels (ep_dispatch.deepep_tuned_factor)",
                  factor)
            : std::string(),
        crosses ? "RDMA: distinct destination nodes, own included"
                : "NVLink: what a rank receives, own copy included");
    return a;
  }
  // NCCL: the permuted copies, one per expert, as an all-to-all over the topology.
  a.bytes = q.tokens * q.hidden * elem * static_cast<double>(q.topk);
  const auto flows = on_cluster<hw_models::FlowComm>(s, q.ep, domain);
  const double t =
      hw_models::ep_comm_seconds(*d, s, *flows, {a.bytes, {q.ep, crosses, 1}, combine});
  a.time_us = t * 1e6;
  a.algbw_GBps = t > 0 ? a.bytes / t / 1e9 : 0;
  a.busbw_GBps = a.algbw_GBps;
  a.model =
      "NCCL all-to-all of the permuted copies (one per expert) as flows over the topology at "
      "NCCL's link "
      "efficiencies";
  return a;
}

}  // namespace

CommAnswer comm(const CommQuery& q) {
  const hw_models::SystemSpec s = system_named(q.system);
  const int system_domain = static_cast<int>(s.nvlink.domain_gpus.value);
  if (q.gpus_per_domain && (*q.gpus_per_domain < 1 || *q.gpus_per_domain > system_domain))
    throw config::InputError(
        kCli, "--gpus-per-domain",
        fmt::format("{} GPUs: an NVLink domain of {} holds 1 to {} (as the scenario's "
                    "placement.gpus_per_nvlink_domain)",
                    *q.gpus_per_domain, q.system, system_domain));
  const int domain = q.gpus_per_domain.value_or(system_domain);
  CommAnswer a;
  if (is_ep_op(q.op)) {
    a = ep_comm(q, s, domain);
  } else {
    const auto op = hw_models::collective_names().find(q.op);
    if (!op)
      throw config::InputError(kCli, "--op",
                               fmt::format("unknown op '{}' (known: {}, ep-dispatch, ep-combine)",
                                           q.op, hw_models::collective_names().known()));
    if (q.ranks < (*op == hw_models::Collective::send_recv ? 2 : 1) || q.ranks > kMaxRanks)
      throw config::InputError(
          kCli, "--ranks",
          fmt::format("{} ranks: need 1..{} (2 for send-recv)", q.ranks, kMaxRanks));
    check_size("--bytes", q.bytes, kMaxBytes);
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
        throw config::InputError(
            kCli, "--protocol",
            "NCCL's protocols are chosen for rings (all-reduce, all-gather, reduce-scatter); "
            "NVLS, all-to-all and send-recv run Simple");
      r = hw_models::collective_time(s, *topo, *op, ranks, q.bytes,
                                     hw_models::CollectiveAlgorithm::ring, proto);
    } else if (q.algorithm == "auto") {
      r = hw_models::fastest_collective_time(s, *topo, *op, ranks, q.bytes);
    } else {
      const auto algo = hw_models::algorithm_names().find(q.algorithm);
      if (!algo)
        throw config::InputError(kCli, "--algorithm",
                                 fmt::format("unknown algorithm '{}' (known: auto, {})",
                                             q.algorithm, hw_models::algorithm_names().known()));
      if (*algo == hw_models::CollectiveAlgorithm::nvls &&
          !hw_models::nvls_supported(s, *topo, *op, ranks))
        throw config::InputError(
            kCli, "--algorithm",
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
    a.model = q.ranks == 1 ? "one rank: nothing crosses a link, no time and no bandwidth (the "
                             "device-local copy NCCL makes of an out-of-place call is not priced)"
              : r.algorithm == hw_models::CollectiveAlgorithm::nvls
                  ? "NCCL NVLS all-reduce: each GPU's NVLink port carries S (n+1)/n each way, at "
                    "NCCL's NVLS efficiency"
                  : "NCCL ring / all-to-all as max-min flows over the topology";
  }
  a.op = q.op;
  a.system = q.system;
  a.caveats = config::system_caveats(s);
  return a;
}

}  // namespace moesim::predict
