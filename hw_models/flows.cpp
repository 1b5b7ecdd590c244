#include "hw_models/flows.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim_core/maxmin.hpp"

namespace moesim::hw_models {

FlowTimes simulate_flows(const Topology& topo, const std::vector<Flow>& flows,
                         const LinkEfficiency& eta, const std::vector<double>& caps) {
  const std::size_t n = flows.size();
  FlowTimes out;
  out.finish_s.assign(n, 0.0);
  std::vector<std::vector<int>> routes(n);
  std::vector<double> left(n);
  std::vector<bool> done(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = flows[i];
    if (!(f.bytes >= 0) || !(f.start_s >= 0))
      throw std::invalid_argument("simulate_flows: negative bytes or start");
    if (f.cap >= static_cast<int>(caps.size()))
      throw std::invalid_argument("simulate_flows: cap index out of range");
    if (!(f.max_Bps >= 0)) throw std::invalid_argument("simulate_flows: negative flow cap");
    routes[i] = topo.route(f.src, f.dst);
    left[i] = f.bytes;
    if (routes[i].empty() || f.bytes == 0) {
      done[i] = true;
      out.finish_s[i] = f.start_s;
    }
  }
  const auto& links = topo.links();
  std::vector<int> constraint_of(links.size(), -1);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double now = 0;
  for (;;) {
    // Active flows and the next start among the waiting ones.
    std::vector<std::size_t> active;
    double next_start = kInf;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      if (flows[i].start_s <= now)
        active.push_back(i);
      else
        next_start = std::min(next_start, flows[i].start_s);
    }
    if (active.empty()) {
      if (next_start == kInf) break;
      now = next_start;
      continue;
    }
    sim_core::MaxMinSolver solver;
    std::vector<int> used;
    std::vector<int> cap_constraint(caps.size(), -1);
    for (std::size_t i : active) {
      const std::size_t v = solver.add_variable();
      if (flows[i].max_Bps > 0) solver.use(solver.add_constraint(flows[i].max_Bps), v);
      if (const int c = flows[i].cap; c >= 0) {
        int& k = cap_constraint[static_cast<std::size_t>(c)];
        if (k < 0) k = static_cast<int>(solver.add_constraint(caps[static_cast<std::size_t>(c)]));
        solver.use(static_cast<std::size_t>(k), v);
      }
      for (int l : routes[i]) {
        int& c = constraint_of[static_cast<std::size_t>(l)];
        if (c < 0) {
          const Link& link = links[static_cast<std::size_t>(l)];
          c = static_cast<int>(solver.add_constraint(link.capacity_Bps * eta.of(link.kind)));
          used.push_back(l);
        }
        solver.use(static_cast<std::size_t>(c), v);
      }
    }
    const std::vector<double> rate = solver.solve();
    ++out.solves;
    for (int l : used) constraint_of[static_cast<std::size_t>(l)] = -1;

    double dt = next_start - now;
    for (std::size_t k = 0; k < active.size(); ++k)
      if (rate[k] > 0) dt = std::min(dt, left[active[k]] / rate[k]);
    if (!(dt < kInf)) throw std::logic_error("simulate_flows: active flows make no progress");
    now += dt;
    for (std::size_t k = 0; k < active.size(); ++k) {
      const std::size_t i = active[k];
      left[i] -= rate[k] * dt;
      // Finished: what is left is rounding (relative to the flow's size).
      if (left[i] <= 1e-9 * flows[i].bytes) {
        done[i] = true;
        out.finish_s[i] = now;
      }
    }
  }
  for (double t : out.finish_s) out.makespan_s = std::max(out.makespan_s, t);
  return out;
}

}  // namespace moesim::hw_models
