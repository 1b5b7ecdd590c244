#include "hw_models/flow_comm.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

namespace moesim::hw_models {

FlowComm::FlowComm(const SystemSpec& s, std::int64_t gpus, std::int64_t per_domain, std::int64_t pp,
                   FlowCache* cache)
    : sys_(s),
      per_domain_(per_domain),
      sizes_(Topology::sizes(s, gpus, per_domain)),
      stage_gpus_(gpus / std::max<std::int64_t>(1, pp)),
      cache_(cache) {}

const Topology& FlowComm::topo() const {
  if (!topo_) topo_.emplace(sys_, sizes_.gpus, per_domain_);
  return *topo_;
}

double FlowComm::solve(Collective op, double bytes, const CommGroup& g) const {
  if (g.size <= 1 || bytes <= 0) return 0;
  const Shape& shape = shape_of(op, g);
  const double makespan = shape.makespan_per_byte * bytes;
  double time = shape.latency_s + makespan;
  // Rings take the faster of LL128 and Simple (hw_models/collectives.hpp).
  if (has_protocols(op))
    time = std::min(
        time, ring_protocol_time(sys_, op, Protocol::ll128, makespan, bytes,
                                 static_cast<double>(g.size), shape.domains > 1, shape.domains));
  return time;
}

// Every flow of a collective carries a fixed share of the buffer and starts at 0, and the
// max-min rates do not depend on what is left to send: the makespan is linear in the
// bytes, so one solve at a reference size prices every bucket of the shape.
const FlowComm::Shape& FlowComm::shape_of(Collective op, const CommGroup& g) const {
  const auto key = std::make_tuple(static_cast<int>(op), g.size, g.stride);
  if (const auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  if (cache_) {
    const FlowCache::ShapeKey shared{sizes_.gpus,          sizes_.domain, stage_gpus_,
                                     static_cast<int>(op), g.size,        g.stride};
    return shapes_.emplace(key, cache_->shape(sys_, shared, [&] { return solve_shape(op, g); }))
        .first->second;
  }
  return shapes_.emplace(key, solve_shape(op, g)).first->second;
}

FlowShape FlowComm::solve_shape(Collective op, const CommGroup& g) const {
  const std::int64_t span = g.size * g.stride;
  if (span > sizes_.gpus) throw std::invalid_argument("FlowComm: group larger than the cluster");
  // The groups of this shape inside the first pipeline stage: leaders are the ranks whose
  // position along the group's dimension is 0.
  CollectiveFlows flows;
  Shape shape;
  std::set<int> domains;  // of the first group
  for (std::int64_t lead = 0; lead < std::max(stage_gpus_, span); ++lead) {
    if ((lead / g.stride) % g.size != 0) continue;
    std::vector<int> ranks;
    for (std::int64_t k = 0; k < g.size; ++k)
      ranks.push_back(static_cast<int>(lead + k * g.stride));
    if (lead == 0)
      for (int r : ranks) domains.insert(topo().domain_of(r));
    const auto f = collective_flows(sys_, topo(), op, ranks, kReferenceBytes);
    flows.append(f);
    shape.latency_s = std::max(shape.latency_s, f.latency_s);
  }
  shape.makespan_per_byte = phased_makespan(topo(), flows, link_efficiency(sys_)) / kReferenceBytes;
  shape.domains = static_cast<int>(domains.size());
  return shape;
}

double FlowComm::all_to_all(double b, const CommGroup& g) const {
  return solve(Collective::all_to_all, b, g);
}
double FlowComm::all_gather(double b, const CommGroup& g) const {
  return solve(Collective::all_gather, b, g);
}
double FlowComm::reduce_scatter(double b, const CommGroup& g) const {
  return solve(Collective::reduce_scatter, b, g);
}

double FlowComm::send_recv(double bytes, const CommGroup& pair) const {
  if (bytes <= 0 || pair.stride <= 0) return 0;
  const auto key = std::make_tuple(static_cast<int>(Collective::send_recv), pair.size, pair.stride);
  auto it = shapes_.find(key);
  if (it == shapes_.end()) {
    // Every rank of the first stage sends to its peer `stride` ranks on.
    const auto solve_pair = [&] {
      std::vector<Flow> flows;
      const std::int64_t senders = std::min<std::int64_t>(stage_gpus_, sizes_.gpus - pair.stride);
      for (std::int64_t r = 0; r < senders; ++r)
        flows.push_back(
            {static_cast<int>(r), static_cast<int>(r + pair.stride), kReferenceBytes, 0});
      Shape shape;
      shape.latency_s = collective_flows(sys_, topo(), Collective::send_recv,
                                         {0, static_cast<int>(pair.stride)}, kReferenceBytes)
                            .latency_s;
      shape.makespan_per_byte =
          simulate_flows(topo(), flows, link_efficiency(sys_)).makespan_s / kReferenceBytes;
      return shape;
    };
    const FlowCache::ShapeKey shared{sizes_.gpus, sizes_.domain,
                                     stage_gpus_, static_cast<int>(Collective::send_recv),
                                     pair.size,   pair.stride};
    it =
        shapes_.emplace(key, cache_ ? cache_->shape(sys_, shared, solve_pair) : solve_pair()).first;
  }
  return it->second.latency_s + it->second.makespan_per_byte * bytes;
}

}  // namespace moesim::hw_models
