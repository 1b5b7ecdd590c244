#include "hw_models/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/property_map.hpp>
#include <fmt/format.h>

namespace moesim::hw_models {
namespace {

// Directed multigraph; each edge carries the id of its Link.
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                         boost::property<boost::edge_index_t, int>>;

// Records, for each vertex reached, the edge it was first reached by: record(vertex, link).
template <class Record>
class EdgeRecorder : public boost::default_bfs_visitor {
 public:
  explicit EdgeRecorder(Record record) : record_(record) {}
  template <class Graph>
  void tree_edge(typename boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    record_(static_cast<int>(boost::target(e, g)), static_cast<int>(boost::get(boost::edge_index, g, e)));
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

Topology::Topology(const SystemSpec& s, std::int64_t gpus, std::int64_t per_domain)
    : gpus_(static_cast<int>(gpus)),
      domain_(static_cast<int>(per_domain > 0 ? per_domain : static_cast<std::int64_t>(s.nvlink.domain_gpus.value))),
      gpus_per_node_(static_cast<int>(s.node.gpus_per_node.value)) {
  if (gpus_ <= 0 || domain_ <= 0 || gpus_per_node_ <= 0)
    throw std::invalid_argument("Topology: GPU, domain and node sizes must be positive");
  domain_ = std::min(domain_, gpus_);
  // A group with fewer ranks in each NVLink domain than a node has GPUs (EP strided by
  // etp: 8 EP ranks x etp 8 on 8-GPU nodes are one GPU in each of 8 nodes) sees each node
  // through its domain_ ranks, each on its own rail; the node's other GPUs belong to
  // other groups. Without this the ranks of different nodes would sit on different
  // rails of one node and, with no spine between rails, could not reach each other.
  if (gpus_ > domain_ && domain_ < gpus_per_node_) gpus_per_node_ = domain_;
  if (gpus_ % domain_ != 0 || domain_ % std::min(gpus_per_node_, domain_) != 0)
    throw std::invalid_argument(fmt::format("Topology: {} GPUs do not split into NVLink domains of {} ({} per node)",
                                            gpus_, domain_, gpus_per_node_));
  const double nvlink = s.nvlink.bw_GBps.value * 1e9;
  const double nic = s.network.nic_Gbps.value / 8 * 1e9;
  const int nics_per_gpu = std::max(1, static_cast<int>(s.network.nics_per_gpu.value));
  const int planes = std::max(1, static_cast<int>(s.network.planes.value));
  // End-to-end latencies (same leaf: NIC-leaf-NIC; across leaves adds leaf-spine-leaf).
  const double same_leaf = s.network.latency_same_leaf_us.value * 1e-6;
  const double cross_leaf = s.network.latency_cross_leaf_us.value * 1e-6;
  const double nvlink_hop = s.comm.nvlink_hop_us.value * 1e-6;

  for (int g = 0; g < gpus_; ++g) add_vertex(VertexKind::gpu, g);
  for (int d = 0; d < gpus_ / domain_; ++d) {
    const int sw = add_vertex(VertexKind::nvswitch, d);
    for (int g = d * domain_; g < (d + 1) * domain_; ++g) add_duplex(g, sw, LinkKind::nvlink, nvlink, nvlink_hop / 2);
  }
  // Only clusters of more than one NVLink domain need the network.
  if (gpus_ > domain_) {
    const int nodes = (gpus_ + gpus_per_node_ - 1) / gpus_per_node_;
    const int leaves_per_rail = (nodes * nics_per_gpu + kLeafDownPorts - 1) / kLeafDownPorts;
    // Rails of one plane meet at its spine; a plane of one rail on one leaf needs none.
    const bool spines = leaves_per_rail > 1 || planes < gpus_per_node_;
    std::vector<int> spine(static_cast<std::size_t>(planes), -1);
    if (spines)
      for (auto& v : spine) v = add_vertex(VertexKind::spine);
    // leaf[rail][i]
    std::vector<std::vector<int>> leaf(static_cast<std::size_t>(gpus_per_node_));
    for (int r = 0; r < gpus_per_node_; ++r)
      for (int i = 0; i < leaves_per_rail; ++i) {
        const int l = add_vertex(VertexKind::leaf);
        leaf[static_cast<std::size_t>(r)].push_back(l);
        if (spines)
          add_duplex(l, spine[static_cast<std::size_t>(r % planes)], LinkKind::network,
                     kLeafDownPorts * nic, (cross_leaf - same_leaf) / 2);
      }
    nic_leaves_.resize(static_cast<std::size_t>(gpus_));
    for (int g = 0; g < gpus_; ++g) {
      const int node = g / gpus_per_node_;
      for (int k = 0; k < nics_per_gpu; ++k) {
        const int n = add_vertex(VertexKind::nic, g);
        add_duplex(g, n, LinkKind::nic, nic, 0);
        const int port = node * nics_per_gpu + k;
        const int l = leaf[static_cast<std::size_t>(rail_of(g))][static_cast<std::size_t>(port / kLeafDownPorts)];
        add_duplex(n, l, LinkKind::network, nic, same_leaf / 2);
        nic_leaves_[static_cast<std::size_t>(g)].push_back(l);
      }
    }
  }

  graph_ = std::make_unique<Graph>();
  for (std::size_t v = 0; v < kinds_.size(); ++v) boost::add_vertex(graph_->g);
  for (int id = 0; id < static_cast<int>(links_.size()); ++id) {
    const auto& l = links_[static_cast<std::size_t>(id)];
    boost::add_edge(static_cast<std::size_t>(l.from), static_cast<std::size_t>(l.to), id, graph_->g);
  }
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

// A vertex of the subgraph every shortest path from a domain da GPU to a domain db GPU
// stays in: the two domains' GPUs, NVSwitches and NICs, the leaves of those NICs (sorted),
// and the spines. Default-constructible and copyable, as boost::filtered_graph wants.
struct Topology::KeepSubgraph {
  const Topology* t = nullptr;
  const std::vector<int>* leaves = nullptr;
  int da = -1, db = -1;
  bool operator()(std::size_t vd) const {
    const auto v = static_cast<int>(vd);
    const int o = t->owner_[vd];
    switch (t->kinds_[vd]) {
      case VertexKind::gpu:
      case VertexKind::nic: return t->domain_of(o) == da || t->domain_of(o) == db;
      case VertexKind::nvswitch: return o == da || o == db;
      case VertexKind::leaf: return std::binary_search(leaves->begin(), leaves->end(), v);
      case VertexKind::spine: return true;
    }
    return false;
  }
};

std::vector<int> Topology::route(int a, int b) const {
  if (a < 0 || b < 0 || a >= gpus_ || b >= gpus_) throw std::out_of_range("Topology::route: GPU out of range");
  if (a == b) return {};
  const int da = domain_of(a), db = domain_of(b);
  if (searched_src_ != a || searched_domain_ != db) {
    // The leaves next to the NICs of the two domains (see the header for why no others).
    std::vector<int> leaves;
    for (const int d : {da, db})
      for (int g = d * domain_; g < (d + 1) * domain_; ++g)
        if (!nic_leaves_.empty())
          for (const int l : nic_leaves_[static_cast<std::size_t>(g)]) leaves.push_back(l);
    std::sort(leaves.begin(), leaves.end());
    const KeepSubgraph keep{this, &leaves, da, db};
    const boost::filtered_graph<BoostGraph, boost::keep_all, KeepSubgraph> sub(graph_->g, boost::keep_all(), keep);
    std::unordered_map<BoostGraph::vertex_descriptor, boost::default_color_type> colors;
    boost::associative_property_map<decltype(colors)> color(colors);
    boost::queue<BoostGraph::vertex_descriptor> queue;
    searched_pred_.clear();
    const auto record = [this](int v, int l) { searched_pred_[v] = l; };
    boost::breadth_first_visit(sub, static_cast<BoostGraph::vertex_descriptor>(a), queue,
                               EdgeRecorder<decltype(record)>(record), color);
    searched_src_ = a;
    searched_domain_ = db;
  }
  return walk_back(
      [this](int v) {
        const auto it = searched_pred_.find(v);
        return it == searched_pred_.end() ? -1 : it->second;
      },
      links_, a, b);
}

std::vector<int> Topology::route_full_search(int a, int b) const {
  if (a < 0 || b < 0 || a >= gpus_ || b >= gpus_) throw std::out_of_range("Topology::route: GPU out of range");
  if (a == b) return {};
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
