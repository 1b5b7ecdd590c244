#include "hw_models/ep_dispatch.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace moesim::hw_models {
namespace {

double alpha(const SystemSpec& s, bool network) {
  return (s.comm.base_latency_us.value + (network ? s.comm.network_hop_us.value : s.comm.nvlink_hop_us.value)) * 1e-6;
}

double nccl_alltoall(const SystemSpec& s, const CommModel& c, const EpQuery& q) {
  if (q.group.size <= 1) return 0;
  const auto& busbw = q.group.crosses_network ? s.ep_dispatch.alltoall_busbw_network_GBps
                                              : s.ep_dispatch.alltoall_busbw_nvlink_GBps;
  if (!busbw) return c.all_to_all(q.bytes, q.group);
  const double n = static_cast<double>(q.group.size);
  return alpha(s, q.group.crosses_network) + q.bytes * (n - 1) / n / (busbw->value * 1e9);
}

double measured(const std::optional<EpBandwidth>& nvlink, const std::optional<EpBandwidth>& network,
                const SystemSpec& s, const CommModel& c, const EpQuery& q) {
  if (q.group.size <= 1) return 0;
  const auto& m = q.group.crosses_network ? network : nvlink;
  if (!m) return c.all_to_all(q.bytes, q.group);
  const double bw = (q.combine ? m->combine_GBps.value : m->dispatch_GBps.value) * 1e9 *
                    std::min(1.0, static_cast<double>(q.sms) / m->saturation_sms.value) *
                    (q.tuned && m->tuned_factor ? m->tuned_factor->value : 1.0);
  return alpha(s, q.group.crosses_network) + q.bytes / bw;
}

using Fn = double (*)(const SystemSpec&, const CommModel&, const EpQuery&);
struct Entry {
  Dispatcher d;
  Fn fn;
};
constexpr std::array<Entry, 4> kRegistry{{
    {Dispatcher::alltoall, nccl_alltoall},
    // All-gather dispatching moves every token to every rank: priced as all-to-all until
    // the network issue models it.
    {Dispatcher::allgather, nccl_alltoall},
    {Dispatcher::deepep,
     [](const SystemSpec& s, const CommModel& c, const EpQuery& q) {
       const auto e = ep_entries(s, Dispatcher::deepep);
       return measured(*e.nvlink, *e.network, s, c, q);
     }},
    {Dispatcher::hybridep,
     [](const SystemSpec& s, const CommModel& c, const EpQuery& q) {
       const auto e = ep_entries(s, Dispatcher::hybridep);
       return measured(*e.nvlink, *e.network, s, c, q);
     }},
}};

}  // namespace

EpEntries ep_entries(const SystemSpec& s, Dispatcher d) {
  switch (d) {
    case Dispatcher::deepep: return {&s.ep_dispatch.deepep_nvlink, &s.ep_dispatch.deepep_network};
    case Dispatcher::hybridep: return {&s.ep_dispatch.hybridep_nvlink, &s.ep_dispatch.hybridep_network};
    case Dispatcher::alltoall:
    case Dispatcher::allgather: break;
  }
  return {};
}

double ep_comm_seconds(Dispatcher d, const SystemSpec& sys, const CommModel& comm, const EpQuery& q) {
  for (const auto& e : kRegistry)
    if (e.d == d) return e.fn(sys, comm, q);
  return comm.all_to_all(q.bytes, q.group);
}

namespace {
// C(n - m, k) / C(n, k): none of k draws without replacement from n hits m marked items.
double none_of(double n, double m, std::int64_t k) {
  double p = 1;
  for (std::int64_t i = 0; i < k; ++i) p *= std::max(0.0, n - m - static_cast<double>(i)) / (n - static_cast<double>(i));
  return p;
}
double choose(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (std::int64_t i = 1; i <= r; ++i) c = c * static_cast<double>(n - r + i) / static_cast<double>(i);
  return c;
}
}  // namespace

double expected_destination_ranks(std::int64_t experts, std::int64_t ranks, std::int64_t topk, std::int64_t groups,
                                  std::int64_t topk_groups) {
  if (ranks <= 1) return 1;
  const double e = static_cast<double>(experts), r = static_cast<double>(ranks);
  const bool limited = groups > 1 && topk_groups > 0 && topk_groups < groups && experts % groups == 0 &&
                       (ranks % groups == 0 || groups % ranks == 0);
  if (!limited) return r * (1 - none_of(e, e / r, topk));
  const double g = static_cast<double>(groups), pool = static_cast<double>(topk_groups) * e / g;
  if (ranks >= groups) return r * (static_cast<double>(topk_groups) / g) * (1 - none_of(pool, e / r, topk));
  const std::int64_t per_rank = groups / ranks;
  double p = 0;
  for (std::int64_t j = 1; j <= std::min(per_rank, topk_groups); ++j)
    p += choose(per_rank, j) * choose(groups - per_rank, topk_groups - j) / choose(groups, topk_groups) *
         (1 - none_of(pool, static_cast<double>(j) * e / g, topk));
  return r * p;
}

}  // namespace moesim::hw_models
