// workload/eplb.hpp: DeepSeek's expert-parallel load balancer (deepseek-ai/eplb, eplb.py's
// rebalance_experts): given each MoE layer's per-expert load, it picks redundant copies
// ("replicas") of the heaviest experts and places the physical experts on the GPUs so
// that the heaviest GPU carries as little as it can. moesim reproduces the repository's
// algorithm step for step (the README's two-layer example exactly, a unit test) and uses
// it to price a step with `parallelism.eplb` (the hottest EP rank's load after
// replication, workload/routing.hpp).
//
// The algorithm, per layer (weights in float32, as the library computes them):
//   balanced_packing(w, m): n items into m packs of exactly n/m items each, heaviest
//     first (a stable descending sort), each into the lightest pack that still has room
//     (the first such pack on ties).
//   replicate(w, R): start with one copy of each logical expert; R times, give one more
//     copy to the expert with the largest load per copy w_e / c_e (the first on ties).
//   hierarchical(w, P physical, G groups, N nodes, g GPUs):
//     1. pack the G expert groups (E/G consecutive experts each, their loads summed) onto
//        the N nodes (balanced_packing);
//     2. within each node, replicate its E/N experts to P/N physical experts;
//     3. pack each node's physical experts (load w_e / c_e each) onto its g/N GPUs.
//   global: hierarchical with one group and one node (replicas may land on any GPU).
//   The library's entry point takes the hierarchical policy when G % N == 0, else global.
// Outputs (the library's): phy2log[l][p], the logical expert of physical slot p (GPU
// p / (P/g) holds slots [k P/g, (k+1) P/g)); log2phy[l][e][r], the slot of expert e's r-th
// replica (-1 past its count); logcnt[l][e], its replica count.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::workload {

struct EplbPlan {
  EplbPolicy policy = EplbPolicy::hierarchical;  // the one that ran
  std::vector<std::vector<int>> phy2log;         // [layer][physical slot]
  std::vector<std::vector<std::vector<int>>>
      log2phy;                           // [layer][logical expert][replica], -1 padded
  std::vector<std::vector<int>> logcnt;  // [layer][logical expert]
};

// `weight`: [layers][logical experts] loads. `policy`: absent, the library's choice
// (hierarchical when groups % nodes == 0, else global); hierarchical where groups % nodes
// != 0 is refused. Throws std::invalid_argument naming the violated condition (experts
// divisible by groups, gpus by nodes, replicas by gpus, replicas at least the experts,
// loads finite and not negative, every row of one length).
EplbPlan rebalance_experts(const std::vector<std::vector<double>>& weight, int replicas, int groups,
                           int nodes, int gpus, std::optional<EplbPolicy> policy = std::nullopt);

// The load of each GPU of one layer under the plan: a logical expert's tokens split evenly
// over its replicas (`counts` per logical expert; GPU k holds slots [k P/g, (k+1) P/g)).
std::vector<double> gpu_loads(const EplbPlan& plan, std::size_t layer,
                              const std::vector<double>& counts, int gpus);

// The hottest GPU's load over the mean, per layer: `before` with the logical experts
// placed in Megatron's order (GPU k holds experts [k E/g, (k+1) E/g); absent when E % g
// != 0), `after` under the plan.
struct EplbBalance {
  std::optional<double> before;
  double after = 1;
};
std::vector<EplbBalance> eplb_balance(const EplbPlan& plan,
                                      const std::vector<std::vector<double>>& counts, int gpus);

// Physical experts of each MoE layer: the routed experts plus parallelism.eplb's copies.
std::int64_t physical_experts(const ModelConfig& m, const Parallelism& p);

// How a scenario's EP group runs EPLB: its GPUs (ep), the expert groups the hierarchical
// policy packs (the model's router groups, 1 without), and the nodes: the NVLink domains
// the EP group spans (gpus_per_nvlink_domain / etp of its members share one).
struct EplbSetup {
  int replicas = 0, groups = 1, nodes = 1, gpus = 1;
  EplbPolicy policy = EplbPolicy::hierarchical;
};
std::optional<EplbSetup> eplb_setup(const ModelConfig& m, const Parallelism& p,
                                    std::int64_t gpus_per_nvlink_domain);

}  // namespace moesim::workload
