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
       return measured(s.ep_dispatch.deepep_nvlink, s.ep_dispatch.deepep_network, s, c, q);
     }},
    {Dispatcher::hybridep,
     [](const SystemSpec& s, const CommModel& c, const EpQuery& q) {
       return measured(s.ep_dispatch.hybridep_nvlink, s.ep_dispatch.hybridep_network, s, c, q);
     }},
}};

}  // namespace

double ep_comm_seconds(Dispatcher d, const SystemSpec& sys, const CommModel& comm, const EpQuery& q) {
  for (const auto& e : kRegistry)
    if (e.d == d) return e.fn(sys, comm, q);
  return comm.all_to_all(q.bytes, q.group);
}

}  // namespace moesim::hw_models
