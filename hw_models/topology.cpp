#include "hw_models/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <fmt/format.h>

namespace moesim::hw_models {
namespace {

// Directed multigraph; each edge carries the id of its Link.
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                         boost::property<boost::edge_index_t, int>>;

// Records, for each vertex reached, the edge it was first reached by.
class EdgeRecorder : public boost::default_bfs_visitor {
 public:
  explicit EdgeRecorder(std::vector<int>& pred) : pred_(&pred) {}
  void tree_edge(BoostGraph::edge_descriptor e, const BoostGraph& g) const {
    (*pred_)[boost::target(e, g)] = boost::get(boost::edge_index, g, e);
  }

 private:
  std::vector<int>* pred_;
};

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

  for (int g = 0; g < gpus_; ++g) add_vertex(VertexKind::gpu);
  for (int d = 0; d < gpus_ / domain_; ++d) {
    const int sw = add_vertex(VertexKind::nvswitch);
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
    for (int g = 0; g < gpus_; ++g) {
      const int node = g / gpus_per_node_;
      for (int k = 0; k < nics_per_gpu; ++k) {
        const int n = add_vertex(VertexKind::nic);
        add_duplex(g, n, LinkKind::nic, nic, 0);
        const int port = node * nics_per_gpu + k;
        add_duplex(n, leaf[static_cast<std::size_t>(rail_of(g))][static_cast<std::size_t>(port / kLeafDownPorts)],
                   LinkKind::network, nic, same_leaf / 2);
      }
    }
  }

  graph_ = std::make_unique<Graph>();
  for (std::size_t v = 0; v < kinds_.size(); ++v) boost::add_vertex(graph_->g);
  for (int id = 0; id < static_cast<int>(links_.size()); ++id) {
    const auto& l = links_[static_cast<std::size_t>(id)];
    boost::add_edge(static_cast<std::size_t>(l.from), static_cast<std::size_t>(l.to), id, graph_->g);
  }
  pred_link_.resize(static_cast<std::size_t>(gpus_));
}

int Topology::add_vertex(VertexKind k) {
  kinds_.push_back(k);
  return static_cast<int>(kinds_.size()) - 1;
}

void Topology::add_duplex(int a, int b, LinkKind kind, double Bps, double latency_s) {
  links_.push_back({a, b, kind, Bps, latency_s});
  links_.push_back({b, a, kind, Bps, latency_s});
}

std::size_t Topology::count(VertexKind k) const {
  return static_cast<std::size_t>(std::count(kinds_.begin(), kinds_.end(), k));
}

std::vector<int> Topology::route(int a, int b) const {
  if (a < 0 || b < 0 || a >= gpus_ || b >= gpus_) throw std::out_of_range("Topology::route: GPU out of range");
  std::vector<int> path;
  if (a == b) return path;
  auto& pred = pred_link_[static_cast<std::size_t>(a)];
  if (pred.empty()) {
    pred.assign(kinds_.size(), -1);
    boost::breadth_first_search(graph_->g, static_cast<std::size_t>(a), boost::visitor(EdgeRecorder(pred)));
  }
  for (int v = b; v != a;) {
    const int l = pred[static_cast<std::size_t>(v)];
    if (l < 0) throw std::logic_error(fmt::format("Topology: GPU {} cannot reach GPU {}", a, b));
    path.push_back(l);
    v = links_[static_cast<std::size_t>(l)].from;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

double Topology::latency_s(int a, int b) const {
  double t = 0;
  for (int l : route(a, b)) t += links_[static_cast<std::size_t>(l)].latency_s;
  return t;
}

}  // namespace moesim::hw_models
