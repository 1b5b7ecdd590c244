#include "sim_core/engine.hpp"

#include <algorithm>

namespace moesim::sim_core {

void Engine::at(Time t, EventHandler* handler, std::uint64_t arg) {
  if (t < now_) throw std::logic_error("Engine::at: event scheduled in the past");
  heap_.push_back({t, seq_++, handler, arg});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

RunStats Engine::run() {
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event e = heap_.back();
    heap_.pop_back();
    now_ = e.t;
    ++processed_;
    e.handler->on_event(e.arg);
  }
  std::vector<std::string> blocked;
  for (const Resource* r : resources_) r->describe_outstanding(blocked);
  if (!blocked.empty()) {
    std::string msg =
        "simulation stuck at t=" + std::to_string(now_.seconds()) + " s with work outstanding:";
    for (const auto& b : blocked) msg += "\n  " + b;
    throw SimulationStuck(msg);
  }
  return {processed_, now_};
}

}  // namespace moesim::sim_core
