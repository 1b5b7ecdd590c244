#include "hw_models/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>

namespace moesim::hw_models {
namespace {

// Directed multigraph; each edge carries the id of its Link.
using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                          boost::property<boost::edge_index_t, int>>;

// Records, for each vertex reached, the edge it was first reached by: record(vertex, link).
template <class Record>
class EdgeRecorder : public boost::default_bfs_visitor {
 public:
  explicit EdgeRecorder(Record record) : record_(record) {}
  template <class Graph>
  void tree_edge(typename boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    record_(static_cast<int>(boost::target(e, g)),
            static_cast<int>(boost::get(boost::edge_index, g, e)));
  }

 private:
  Record record_;
};

// The link ids from a to b, walked back along the recorded edges (link_into(v): the link
// that reached v, -1 when none did).
template <class LinkInto>
std::vector<int> walk_back(LinkInto link_into, const std::vector<Link>& links, int a, int b) {
  std::vector<int> path;
  for (int v = b; v != a;) {
    const int l = link_into(v);
    if (l < 0) throw std::logic_error(fmt::format("Topology: GPU {} cannot reach GPU {}", a, b));
    path.push_back(l);
    v = links[static_cast<std::size_t>(l)].from;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

struct Topology::Graph {
  BoostGraph g;
};

Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;

TopologySizes Topology::sizes(const SystemSpec& s, std::int64_t gpus, std::int64_t per_domain) {
  TopologySizes z{
      static_cast<int>(gpus),
      static_cast<int>(per_domain > 0 ? per_domain
                                      : static_cast<std::int64_t>(s.nvlink.domain_gpus.value)),
      static_cast<int>(s.node.gpus_per_node.value)};
  if (z.gpus <= 0 || z.domain <= 0 || z.gpus_per_node <= 0)
    throw std::invalid_argument("Topology: GPU, domain and node sizes must be positive");
  z.domain = std::min(z.domain, z.gpus);
  // A group with fewer ranks in each NVLink domain than a node has GPUs (EP strided by
  // etp: 8 EP ranks x etp 8 on 8-GPU nodes are one GPU in each of 8 nodes) sees each node
  // through its domain ranks, each on its own rail; the node's other GPUs belong to
  // other groups. Without this the ranks of different nodes would sit on different
  // rails of one node and, with no spine between rails, could not reach each other.
  if (z.gpus > z.domain && z.domain < z.gpus_per_node) z.gpus_per_node = z.domain;
  if (z.gpus % z.domain != 0 || z.domain % std::min(z.gpus_per_node, z.domain) != 0)
    throw std::invalid_argument(
        fmt::format("Topology: {} GPUs do not split into NVLink domains of {} ({} per node)",
                    z.gpus, z.domain, z.gpus_per_node));
  return z;
}

Topology::Topology(const SystemSpec& s, std::int64_t gpus, std::int64_t per_domain)
    : sizes_(sizes(s, gpus, per_domain)) {
  const double nvlink = s.nvlink.bw_GBps.value * 1e9;
  const double nic = s.network.nic_Gbps.value / 8 * 1e9;
  const int nics_per_gpu = std::max(1, static_cast<int>(s.network.nics_per_gpu.value));
  const int planes = std::max(1, static_cast<int>(s.network.planes.value));
  // End-to-end latencies (same leaf: NIC-leaf-NIC; across leaves adds leaf-spine-leaf).
  const double same_leaf = s.network.latency_same_leaf_us.value * 1e-6;
  const double cross_leaf = s.network.latency_cross_leaf_us.value * 1e-6;
  const double nvlink_hop = s.comm.nvlink_hop_us.value * 1e-6;

  for (int g = 0; g < sizes_.gpus; ++g) add_vertex(VertexKind::gpu, g);
  for (int d = 0; d < sizes_.gpus / sizes_.domain; ++d) {
    const int sw = add_vertex(VertexKind::nvswitch, d);
    for (int g = d * sizes_.domain; g < (d + 1) * sizes_.domain; ++g)
      add_duplex(g, sw, LinkKind::nvlink, nvlink, nvlink_hop / 2);
  }
  // Only clusters of more than one NVLink domain need the network.
  if (sizes_.gpus > sizes_.domain) {
    const int nodes = (sizes_.gpus + sizes_.gpus_per_node - 1) / sizes_.gpus_per_node;
    const int leaves_per_rail = (nodes * nics_per_gpu + kLeafDownPorts - 1) / kLeafDownPorts;
    // Rails of one plane meet at its spine; a plane of one rail on one leaf needs none.
    const bool spines = leaves_per_rail > 1 || planes < sizes_.gpus_per_node;
    std::vector<int> spine(static_cast<std::size_t>(planes), -1);
    if (spines)
      for (auto& v : spine) v = add_vertex(VertexKind::spine);
    // leaf[rail][i]
    std::vector<std::vector<int>> leaf(static_cast<std::size_t>(sizes_.gpus_per_node));
    for (int r = 0; r < sizes_.gpus_per_node; ++r)
      for (int i = 0; i < leaves_per_rail; ++i) {
        const int l = add_vertex(VertexKind::leaf);
        leaf[static_cast<std::size_t>(r)].push_back(l);
        if (spines)
          add_duplex(l, spine[static_cast<std::size_t>(r % planes)], LinkKind::network,
                     kLeafDownPorts * nic, (cross_leaf - same_leaf) / 2);
      }
    nic_leaves_.resize(static_cast<std::size_t>(sizes_.gpus));
    for (int g = 0; g < sizes_.gpus; ++g) {
      const int node = g / sizes_.gpus_per_node;
      for (int k = 0; k < nics_per_gpu; ++k) {
        const int n = add_vertex(VertexKind::nic, g);
        add_duplex(g, n, LinkKind::nic, nic, 0);
        const int port = node * nics_per_gpu + k;
        const int l = leaf[static_cast<std::size_t>(rail_of(g))]
                          [static_cast<std::size_t>(port / kLeafDownPorts)];
        add_duplex(n, l, LinkKind::network, nic, same_leaf / 2);
        nic_leaves_[static_cast<std::size_t>(g)].push_back(l);
      }
    }
  }

  // route's search: out-edges by vertex in insertion order (Boost's order), a spine's link
  // down to each leaf, and the per-vertex scratch of one search.
  out_.resize(kinds_.size());
  for (int id = 0; id < static_cast<int>(links_.size()); ++id)
    out_[static_cast<std::size_t>(links_[static_cast<std::size_t>(id)].from)].push_back(id);
  const auto first_leaf = std::find(kinds_.begin(), kinds_.end(), VertexKind::leaf);
  first_leaf_ = static_cast<int>(first_leaf - kinds_.begin());
  spine_down_.assign(
      static_cast<std::size_t>(std::count(kinds_.begin(), kinds_.end(), VertexKind::leaf)), -1);
  for (int id = 0; id < static_cast<int>(links_.size()); ++id) {
    const auto& l = links_[static_cast<std::size_t>(id)];
    if (kinds_[static_cast<std::size_t>(l.from)] == VertexKind::spine)
      spine_down_[static_cast<std::size_t>(l.to - first_leaf_)] = id;
  }
  stamp_.assign(kinds_.size(), 0);
  link_in_.assign(kinds_.size(), -1);
}

int Topology::add_vertex(VertexKind k, int owner) {
  kinds_.push_back(k);
  owner_.push_back(owner);
  return static_cast<int>(kinds_.size()) - 1;
}

void Topology::add_duplex(int a, int b, LinkKind kind, double Bps, double latency_s) {
  links_.push_back({a, b, kind, Bps, latency_s});
  links_.push_back({b, a, kind, Bps, latency_s});
}

std::size_t Topology::count(VertexKind k) const {
  return static_cast<std::size_t>(std::count(kinds_.begin(), kinds_.end(), k));
}

bool Topology::kept(int v, int da, int db, const std::vector<int>& leaves) const {
  const int o = owner_[static_cast<std::size_t>(v)];
  switch (kinds_[static_cast<std::size_t>(v)]) {
    case VertexKind::gpu:
    case VertexKind::nic:
      return domain_of(o) == da || domain_of(o) == db;
    case VertexKind::nvswitch:
      return o == da || o == db;
    case VertexKind::leaf:
      return std::binary_search(leaves.begin(), leaves.end(), v);
    case VertexKind::spine:
      return true;
  }
  return false;
}

void Topology::check_gpus(int a, int b) const {
  if (a < 0 || b < 0 || a >= sizes_.gpus || b >= sizes_.gpus)
    throw std::out_of_range("Topology::route: GPU out of range");
}

std::vector<int> Topology::route(int a, int b) const {
  check_gpus(a, b);
  if (a == b) return {};
  const std::int64_t key = static_cast<std::int64_t>(a) * sizes_.gpus + b;
  if (const auto it = routes_.find(key); it != routes_.end()) return it->second;
  const int da = domain_of(a), db = domain_of(b);
  if (searched_src_ != a || searched_domain_ != db) {
    // The leaves next to the NICs of the two domains, in vertex order (see the header for
    // why no others).
    std::vector<int> leaves;
    if (!nic_leaves_.empty())
      for (const int d : {da, db})
        for (int g = d * sizes_.domain; g < (d + 1) * sizes_.domain; ++g)
          for (const int l : nic_leaves_[static_cast<std::size_t>(g)]) leaves.push_back(l);
    std::sort(leaves.begin(), leaves.end());
    leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
    // Breadth-first from a over the kept vertices, out-edges in their order. A spine's
    // out-edges run over its leaves in vertex order, so its kept ones are the kept leaves
    // under it, in that order (a spine has every leaf of its plane: too many to scan).
    ++search_stamp_;
    const auto visit = [&](int v, int link) {
      if (stamp_[static_cast<std::size_t>(v)] == search_stamp_) return false;
      stamp_[static_cast<std::size_t>(v)] = search_stamp_;
      link_in_[static_cast<std::size_t>(v)] = link;
      return true;
    };
    std::vector<int> queue{a};
    visit(a, -1);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const int u = queue[head];
      if (kinds_[static_cast<std::size_t>(u)] == VertexKind::spine) {
        for (const int l : leaves) {
          const int down = spine_down_[static_cast<std::size_t>(l - first_leaf_)];
          if (links_[static_cast<std::size_t>(down)].from == u && visit(l, down))
            queue.push_back(l);
        }
        continue;
      }
      for (const int id : out_[static_cast<std::size_t>(u)]) {
        const int v = links_[static_cast<std::size_t>(id)].to;
        if (kept(v, da, db, leaves) && visit(v, id)) queue.push_back(v);
      }
    }
    searched_src_ = a;
    searched_domain_ = db;
  }
  return routes_[key] = walk_back(
             [this](int v) {
               return stamp_[static_cast<std::size_t>(v)] == search_stamp_
                          ? link_in_[static_cast<std::size_t>(v)]
                          : -1;
             },
             links_, a, b);
}

std::vector<int> Topology::route_full_search(int a, int b) const {
  check_gpus(a, b);
  if (a == b) return {};
  if (!graph_) {  // built on first use: only this reference search needs the Boost graph
    graph_ = std::make_unique<Graph>();
    for (std::size_t v = 0; v < kinds_.size(); ++v) boost::add_vertex(graph_->g);
    for (int id = 0; id < static_cast<int>(links_.size()); ++id) {
      const auto& l = links_[static_cast<std::size_t>(id)];
      boost::add_edge(static_cast<std::size_t>(l.from), static_cast<std::size_t>(l.to), id,
                      graph_->g);
    }
  }
  std::vector<int> pred(kinds_.size(), -1);
  const auto record = [&pred](int v, int l) { pred[static_cast<std::size_t>(v)] = l; };
  boost::breadth_first_search(graph_->g, static_cast<std::size_t>(a),
                              boost::visitor(EdgeRecorder<decltype(record)>(record)));
  return walk_back([&pred](int v) { return pred[static_cast<std::size_t>(v)]; }, links_, a, b);
}

double Topology::latency_s(int a, int b) const {
  double t = 0;
  for (int l : route(a, b)) t += links_[static_cast<std::size_t>(l)].latency_s;
  return t;
}

}  // namespace moesim::hw_models
