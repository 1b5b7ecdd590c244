// hw_models/topology.hpp: the cluster's links as a Boost.Graph, built from the system
// preset, and the route of a transfer from one GPU to another.
//
// Vertices: GPUs; one NVSwitch fabric per NVLink domain (the 8-GPU crossbar of an
// HGX board, or the 18 switch chips of an NVL72 rack: every GPU has one link to each
// chip, so traffic spreads evenly and the chips act as one non-blocking crossbar of
// per-GPU capacity); NICs (nics_per_gpu per GPU); leaf switches; one aggregated spine
// per network plane.
//
// Links are directed, one per direction, with a capacity in bytes/s:
//   GPU <-> NVSwitch   NVLink bandwidth per GPU per direction (nvlink.bw_GBps)
//   GPU <-> NIC        NIC line rate (PCIe Gen5 x16 / C2C is faster, so the NIC binds)
//   NIC <-> leaf       NIC line rate
//   leaf <-> spine     down ports x line rate (non-blocking two-tier fat tree)
// Rails: GPU g's NICs sit on rail r = g mod gpus_per_node (rail-optimized fabric: one
// leaf group per rail). Multi-plane fat tree (DeepSeek's H800 cluster, arXiv 2505.09343):
// rail r belongs to plane r mod planes and planes share no switch, so traffic between
// rails of different planes must first cross NVLink to a GPU on the destination's rail
// (what NCCL's PXN and DeepEP's "IB to the same-index GPU, then NVLink" do). Leaves
// have `kLeafDownPorts` ports toward NICs (Quantum-2: 64 x 400G ports, half down;
// docs/reference/hardware-and-microbenchmarks.md, Interconnect).
//
// Routes are shortest paths in hops, ties broken as a breadth-first search of the whole
// graph from the source breaks them (the first path found: the lexicographically smallest
// sequence of out-edge positions), so they are deterministic. Every shortest path from a
// to b stays inside a's and b's NVLink domains, their GPUs' NICs, those NICs' leaves and
// the spines: any other GPU or NIC would be a detour through a third domain (a GPU is
// entered only from its NVSwitch or its NIC, and left to either, adding at least 4 hops),
// and a leaf is left only to the spine or a NIC. So `route` searches that subgraph (out-
// edges kept in their order, so ties fall as in the whole graph; a spine's out-edges are
// its leaves in vertex order) and its cost does not grow with the cluster; `route_full_search`
// searches everything, the reference the tests hold it to. A search from a into b's domain is kept
// for the other GPUs of that domain. A Topology is not shared between threads (each simulation
// builds its own). GPUs are numbered in Megatron's global rank order; `gpus_per_nvlink_domain`
// consecutive ranks share an NVLink domain (the scenario contract's placement rule).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw_models/system.hpp"

namespace moesim::hw_models {

enum class VertexKind : std::uint8_t { gpu, nvswitch, nic, leaf, spine };
enum class LinkKind : std::uint8_t { nvlink, nic, network };

struct Link {
  int from = 0, to = 0;  // vertex ids
  LinkKind kind = LinkKind::nvlink;
  double capacity_Bps = 0;
  double latency_s = 0;
};

// A cluster's sizes as a Topology of the same arguments holds them.
struct TopologySizes {
  int gpus = 0, domain = 0, gpus_per_node = 0;
};

class Topology {
 public:
  static constexpr int kLeafDownPorts = 32;

  // `gpus_per_nvlink_domain` 0: the system's NVLink domain size.
  Topology(const SystemSpec& s, std::int64_t gpus, std::int64_t gpus_per_nvlink_domain = 0);
  // The sizes the constructor takes, checked as it checks them (std::invalid_argument),
  // without building the graph: what a user that may never route needs first
  // (hw_models::FlowComm builds its topology on its first solve).
  static TopologySizes sizes(const SystemSpec& s, std::int64_t gpus,
                             std::int64_t gpus_per_nvlink_domain = 0);
  ~Topology();
  Topology(Topology&&) noexcept;

  int gpus() const { return sizes_.gpus; }
  int domain_size() const { return sizes_.domain; }
  int domain_of(int gpu) const { return gpu / sizes_.domain; }
  int rail_of(int gpu) const { return gpu % sizes_.gpus_per_node; }
  std::size_t vertex_count() const { return kinds_.size(); }
  std::size_t count(VertexKind k) const;
  const std::vector<Link>& links() const { return links_; }

  // Link ids from GPU a to GPU b in order; empty when a == b.
  std::vector<int> route(int a, int b) const;
  // The same route by a breadth-first search of the whole graph (a test reference).
  std::vector<int> route_full_search(int a, int b) const;
  // Sum of the route's link latencies.
  double latency_s(int a, int b) const;

 private:
  int add_vertex(VertexKind k, int owner = -1);
  void add_duplex(int a, int b, LinkKind kind, double Bps, double latency_s);

  bool kept(int v, int da, int db, const std::vector<int>& leaves) const;  // in route's subgraph
  void check_gpus(int a, int b) const;  // throws std::out_of_range unless both are GPUs

  TopologySizes sizes_;
  std::vector<VertexKind> kinds_;
  std::vector<int> owner_;  // GPU: itself; NIC: its GPU; NVSwitch: its domain; else -1
  std::vector<std::vector<int>> nic_leaves_;  // per GPU: the leaves its NICs connect to
  std::vector<Link> links_;
  struct Graph;
  mutable std::unique_ptr<Graph> graph_;  // route_full_search's, built on its first call
  std::vector<std::vector<int>> out_;     // per vertex: its out-links in insertion order
  int first_leaf_ = 0;                    // leaves are consecutive vertices from here
  std::vector<int> spine_down_;  // per leaf (from first_leaf_): the spine's link down to it
  // The last bounded search: its source and the target's domain; per vertex, the search
  // that reached it (stamp) and the link it was reached by.
  mutable int searched_src_ = -1, searched_domain_ = -1;
  mutable std::uint32_t search_stamp_ = 0;
  mutable std::vector<std::uint32_t> stamp_;
  mutable std::vector<int> link_in_;
  // Routes found, by a x gpus + b: an EP step prices several flow sets (dispatch and
  // combine, forward and backward, each layer kind) between the same GPUs.
  mutable std::unordered_map<std::int64_t, std::vector<int>> routes_;
};

}  // namespace moesim::hw_models
