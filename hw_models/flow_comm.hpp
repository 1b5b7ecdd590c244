// hw_models/flow_comm.hpp: CommModel on the topology and flow model.
//
// A collective of a group runs while every symmetric group of the same shape in the same
// pipeline stage runs it too (Megatron's groups partition the ranks: the DP groups of
// one stage reduce-scatter together, all EP groups dispatch together), so the flows of
// all of them share the links and their contention is counted (hw_models/flows.hpp).
// Pipeline send/recv: every rank of a stage sends to the next stage at once. Each
// (operation, group shape) is solved once per instance, at a reference size, and kept:
// every flow carries a fixed share of the buffer from time 0 and max-min rates do not
// depend on the bytes left, so the makespan is linear in the bytes (the latency and the
// LL128 choice are closed forms of the bytes). An instance is not shared between threads. Groups of
// members `stride` apart in Megatron's rank order (tp-cp-ep-dp-pp); the cluster is `gpus` GPUs in
// NVLink domains of `gpus_per_domain`.
#pragma once

#include <map>
#include <optional>
#include <tuple>

#include "hw_models/collectives.hpp"
#include "hw_models/comm_cost.hpp"
#include "hw_models/flow_cache.hpp"
#include "hw_models/topology.hpp"

namespace moesim::hw_models {

class FlowComm final : public CommModel {
 public:
  // `cache`: shapes shared with the other simulations of a search (hw_models/flow_cache.hpp).
  FlowComm(const SystemSpec& s, std::int64_t gpus, std::int64_t gpus_per_domain,
           std::int64_t pp = 1, FlowCache* cache = nullptr);
  double all_to_all(double bytes_per_rank, const CommGroup& g) const override;
  double all_gather(double buffer_bytes, const CommGroup& g) const override;
  double reduce_scatter(double buffer_bytes, const CommGroup& g) const override;
  double send_recv(double bytes, const CommGroup& pair) const override;

 private:
  using Shape = FlowShape;
  static constexpr double kReferenceBytes = 1 << 30;
  double solve(Collective op, double bytes, const CommGroup& g) const;
  const Shape& shape_of(Collective op, const CommGroup& g) const;
  FlowShape solve_shape(Collective op, const CommGroup& g) const;

  // The graph, built on the first solve: a search shares its shapes across simulations
  // (FlowCache), so most FlowComms never route and need only the sizes.
  const Topology& topo() const;

  const SystemSpec& sys_;
  std::int64_t per_domain_;
  TopologySizes sizes_;
  mutable std::optional<Topology> topo_;
  std::int64_t stage_gpus_;  // GPUs of one pipeline stage
  FlowCache* cache_;
  mutable std::map<std::tuple<int, std::int64_t, std::int64_t>, Shape> shapes_;
};

}  // namespace moesim::hw_models
