#include "hw_models/flow_cache.hpp"

#include <stdexcept>

namespace moesim::hw_models {

void FlowCache::check(const SystemSpec& s) {
  if (system_.empty()) system_ = s.name;
  if (system_ != s.name)
    throw std::logic_error("FlowCache: one cache serves one system ('" + system_ +
                           "', asked for '" + s.name + "')");
}

EpFlowTime FlowCache::ep_time(const SystemSpec& s, const Topology& topo, Dispatcher d,
                              const EpBenchmark& b, double bandwidth_factor) {
  const EpKey key{
      topo.gpus(),     topo.domain_size(), static_cast<int>(d),  b.ranks,   b.sms,
      b.tokens,        b.hidden,           b.element_bytes,      b.experts, b.topk,
      b.groups,        b.expert_groups,    b.expert_topk_groups, b.combine, b.low_latency,
      b.message_bytes, b.fixed_us,         bandwidth_factor};
  {
    std::lock_guard<std::mutex> lock(m_);
    check(s);
    if (const auto it = ep_.find(key); it != ep_.end()) return it->second;
  }
  const EpFlowTime t = ep_library_time(s, topo, d, b, bandwidth_factor);
  std::lock_guard<std::mutex> lock(m_);
  ep_.emplace(key, t);
  return t;
}

std::size_t FlowCache::size() const {
  std::lock_guard<std::mutex> lock(m_);
  return ep_.size() + shapes_.size();
}

}  // namespace moesim::hw_models
