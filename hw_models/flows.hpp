// hw_models/flows.hpp: transfers as fluid flows over a Topology, sharing links max-min
// fairly (SimGrid's flow-level model, as sim_core/maxmin.hpp solves it).
//
// Between events (a flow starts or finishes) every active flow f moves at a constant
// rate x_f, the max-min fair solution of
//     sum_{f uses link l} x_f <= eta_kind(l) * C_l      for every link l,
// where C_l is the link's capacity and eta the fraction of it a transfer library reaches
// on that kind of link (LinkEfficiency), plus optional shared caps (the SMs of a kernel
// that pushes several flows) and per-flow caps (what one connection can carry). A flow of B bytes
// started at s finishes when the integral of its rate reaches B. Flows between the same GPU finish
// at once.
#pragma once

#include <vector>

#include "hw_models/topology.hpp"

namespace moesim::hw_models {

struct Flow {
  int src = 0, dst = 0;  // GPU ids
  double bytes = 0;
  double start_s = 0;
  int cap = -1;        // index of a shared rate cap (the SMs that push it), -1: none
  double max_Bps = 0;  // the flow's own rate cap (one connection's limit), 0: none
};

struct LinkEfficiency {
  double nvlink = 1, nic = 1, network = 1;
  double of(LinkKind k) const {
    return k == LinkKind::nvlink ? nvlink : (k == LinkKind::nic ? nic : network);
  }
};

struct FlowTimes {
  std::vector<double> finish_s;  // per flow
  double makespan_s = 0;         // the last finish
  int solves = 0;                // rate recomputations (events)
};

// `caps`: bytes/s shared by the flows whose `cap` names the entry (one more constraint
// each, beside the links).
FlowTimes simulate_flows(const Topology& topo, const std::vector<Flow>& flows,
                         const LinkEfficiency& eta = {}, const std::vector<double>& caps = {});

}  // namespace moesim::hw_models
