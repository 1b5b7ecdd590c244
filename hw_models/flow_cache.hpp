// hw_models/flow_cache.hpp: flow-model results kept across the simulations of a search
// over one system (`moesim plan`, predict/plan.hpp). Its candidates differ in layout and
// settings; many share an EP group's library flows (hw_models/ep_flows.hpp) or a
// collective's group shape (hw_models/flow_comm.hpp), the costliest parts of pricing a
// large cluster's kernels. Each result is a function of the system, the cluster's shape
// and the arguments in its key, so a hit returns exactly what the computation would. A
// cache serves one system: its name is checked (a search never varies the system's
// fields). Safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "hw_models/ep_flows.hpp"

namespace moesim::hw_models {

// A collective's solution for one group shape at FlowComm's reference size.
struct FlowShape {
  double latency_s = 0;          // the slowest group's fixed latency
  double makespan_per_byte = 0;  // the flows' makespan over the buffer's bytes
  int domains = 0;               // NVLink domains the first group spans
};

class FlowCache {
 public:
  // ep_library_time(s, topo, d, b, bandwidth_factor), priced once.
  EpFlowTime ep_time(const SystemSpec& s, const Topology& topo, Dispatcher d, const EpBenchmark& b,
                     double bandwidth_factor);
  // FlowComm's shape of (op, group size, stride) on a cluster of `gpus` in domains of
  // `domain` with `stage_gpus` to a pipeline stage, or `solve()` of it, kept.
  using ShapeKey =
      std::tuple<std::int64_t, std::int64_t, std::int64_t, int, std::int64_t, std::int64_t>;
  template <class Solve>
  FlowShape shape(const SystemSpec& s, const ShapeKey& key, Solve solve) {
    {
      std::lock_guard<std::mutex> lock(m_);
      check(s);
      if (const auto it = shapes_.find(key); it != shapes_.end()) return it->second;
    }
    const FlowShape v = solve();
    std::lock_guard<std::mutex> lock(m_);
    shapes_.emplace(key, v);
    return v;
  }
  std::size_t size() const;

 private:
  void check(const SystemSpec& s);  // under m_
  using EpKey = std::tuple<int, int, int, int, int, double, double, double, int, int, int, int, int,
                           bool, bool, double, double, double>;
  mutable std::mutex m_;
  std::string system_;
  std::map<EpKey, EpFlowTime> ep_;
  std::map<ShapeKey, FlowShape> shapes_;
};

}  // namespace moesim::hw_models
