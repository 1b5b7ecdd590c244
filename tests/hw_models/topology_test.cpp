// The topology graph, its routes, and flows sharing links max-min fairly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "config/load.hpp"
#include "hw_models/collectives.hpp"
#include "hw_models/flow_comm.hpp"
#include "hw_models/flows.hpp"
#include "hw_models/topology.hpp"

using namespace moesim;
using hw_models::LinkKind;
using hw_models::Topology;
using hw_models::VertexKind;

namespace {
std::vector<LinkKind> kinds(const Topology& t, int a, int b) {
  std::vector<LinkKind> k;
  for (int l : t.route(a, b)) k.push_back(t.links()[static_cast<std::size_t>(l)].kind);
  return k;
}
}  // namespace

TEST_CASE("DeepSeek's H800 cluster: 8 planes, cross-rail traffic crosses NVLink first",
          "[hw_models][topology]") {
  // 256 GPUs = 32 nodes of 8; GPU i of every node on plane i; 32 nodes fit one leaf per
  // plane, so a plane needs no spine.
  const Topology t(config::load_system_preset("h800"), 256);
  CHECK(t.count(VertexKind::gpu) == 256);
  CHECK(t.count(VertexKind::nvswitch) == 32);
  CHECK(t.count(VertexKind::nic) == 256);
  CHECK(t.count(VertexKind::leaf) == 8);
  CHECK(t.count(VertexKind::spine) == 0);
  CHECK(t.route(3, 3).empty());
  CHECK(kinds(t, 0, 5) == std::vector<LinkKind>{LinkKind::nvlink, LinkKind::nvlink});
  // Same rail, other node: NIC, leaf, NIC.
  CHECK(kinds(t, 0, 8) ==
        std::vector<LinkKind>{LinkKind::nic, LinkKind::network, LinkKind::network, LinkKind::nic});
  // Rail 0 to rail 5 of another node: NVLink to the local GPU of rail 5, then its plane.
  CHECK(kinds(t, 0, 13) == std::vector<LinkKind>{LinkKind::nvlink, LinkKind::nvlink, LinkKind::nic,
                                                 LinkKind::network, LinkKind::network,
                                                 LinkKind::nic});
  // IB latency: 2.8 us end to end on one leaf (DeepSeek's hardware paper).
  CHECK(t.latency_s(0, 8) == Approx(2.8e-6));
}

TEST_CASE("GB200 NVL72 in 32-GPU domains: trays of 4, rails of 64 trays over two leaves",
          "[hw_models][topology]") {
  const Topology t(config::load_system_preset("gb200-nvl72"), 256, 32);
  CHECK(t.count(VertexKind::nvswitch) == 8);
  CHECK(t.count(VertexKind::leaf) == 8);   // 4 rails x ceil(64 trays / 32 ports)
  CHECK(t.count(VertexKind::spine) == 1);  // one plane
  CHECK(t.domain_of(31) == 0);
  CHECK(t.domain_of(32) == 1);
  CHECK(t.route(0, 31).size() == 2);
  CHECK(t.route(0, 32).size() >= 4);
  CHECK_THROWS_AS(Topology(config::load_system_preset("gb200-nvl72"), 100, 32),
                  std::invalid_argument);
}

// `route` searches only the two domains' part of the graph; the whole graph's search is
// the reference. On every system preset, at sizes with one leaf per rail, several
// leaves (spines), 8 planes, and NVL72 domains of 72 and of 64 or 32 GPUs.
TEST_CASE("Routes of the bounded search equal the whole graph's", "[hw_models][topology]") {
  struct Case {
    const char* system;
    std::int64_t gpus, domain;
  };
  const std::vector<Case> cases{
      {"h800", 64, 0},          {"h800", 1024, 0},        {"h100", 576, 0},
      {"b200", 640, 0},         {"h20", 48, 0},           {"h200", 24, 0},
      {"gb200-nvl72", 288, 72}, {"gb200-nvl72", 256, 64}, {"gb200-nvl72", 512, 32},
      {"gb300-nvl72", 216, 72}, {"gb200-nvl72", 4608, 72}};
  for (const auto& c : cases) {
    const Topology t(config::load_system_preset(c.system), c.gpus, c.domain);
    INFO(c.system << " x " << c.gpus << ", domains of " << t.domain_size());
    // Every pair up to 64 GPUs; beyond, sources and targets at odd strides (so that they
    // fall on every rail and many domains and leaves).
    const int n = t.gpus();
    const int src_step = n <= 64 ? 1 : n / 48 | 1, dst_step = n <= 64 ? 1 : n / 256 | 1;
    std::size_t mismatches = 0, pairs = 0;
    for (int a = 0; a < n; a += src_step)
      for (int b = 0; b < n; b += dst_step, ++pairs)
        if (t.route(a, b) != t.route_full_search(a, b)) ++mismatches;
    CHECK(pairs > 0);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("Two flows on one link each get half of it", "[hw_models][flows]") {
  // GPU 0 sends B to GPU 1 and to GPU 2: both cross GPU 0's NVLink, eta x 450 GB/s.
  const auto s = config::load_system_preset("h100");
  const Topology t(s, 8);
  const double B = 1e9, cap = s.comm.nvlink_efficiency->value * 450e9;
  const auto eta = hw_models::link_efficiency(s);
  const auto one = hw_models::simulate_flows(t, {{0, 1, B, 0}}, eta);
  CHECK(one.makespan_s == Approx(B / cap));
  const auto two = hw_models::simulate_flows(t, {{0, 1, B, 0}, {0, 2, B, 0}}, eta);
  CHECK(two.finish_s[0] == Approx(2 * B / cap));
  CHECK(two.finish_s[1] == Approx(2 * B / cap));
  // A flow that starts late shares only while both run: the first sends B/2 alone,
  // then they split the link until the first ends at B/2/cap + B/(cap/2)... = 1.5 B/cap.
  const auto late = hw_models::simulate_flows(t, {{0, 1, B, 0}, {0, 2, B, 0.5 * B / cap}}, eta);
  CHECK(late.finish_s[0] == Approx(1.5 * B / cap));
  CHECK(late.finish_s[1] == Approx(2.0 * B / cap));
}

TEST_CASE("A DP all-gather and an EP all-to-all on the same NICs slow each other",
          "[hw_models][flows]") {
  // Two H100 nodes. EP: all-to-all over the 16 GPUs. DP: GPU g and g+8 exchange halves
  // (a 2-rank ring), on the same NICs.
  const auto s = config::load_system_preset("h100");
  const Topology t(s, 16);
  const auto eta = hw_models::link_efficiency(s);
  const double S = 1 << 30, D = 1 << 29;
  std::vector<hw_models::Flow> ep, dp;
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b)
      if (a != b) ep.push_back({a, b, S / 16, 0});
  for (int g = 0; g < 16; ++g) dp.push_back({g, (g + 8) % 16, D / 2, 0});
  std::vector<hw_models::Flow> both = ep;
  both.insert(both.end(), dp.begin(), dp.end());
  const auto te = hw_models::simulate_flows(t, ep, eta);
  const auto td = hw_models::simulate_flows(t, dp, eta);
  const auto tb = hw_models::simulate_flows(t, both, eta);
  double ep_end = 0, dp_end = 0;
  for (std::size_t i = 0; i < ep.size(); ++i) ep_end = std::max(ep_end, tb.finish_s[i]);
  for (std::size_t i = ep.size(); i < both.size(); ++i) dp_end = std::max(dp_end, tb.finish_s[i]);
  CHECK(ep_end > te.makespan_s * 1.05);
  CHECK(dp_end > td.makespan_s * 1.05);
  // Max-min is work-conserving on the bottleneck: the NIC uplink that carries the most
  // bytes, at its share of the line rate, bounds the end from below; running the two one
  // after the other bounds it from above.
  std::map<int, double> load;
  for (const auto& f : both)
    for (int l : t.route(f.src, f.dst)) load[l] += f.bytes;
  double lower = 0;
  for (const auto& [l, bytes] : load) {
    const auto& link = t.links()[static_cast<std::size_t>(l)];
    lower = std::max(lower, bytes / (link.capacity_Bps * eta.of(link.kind)));
  }
  CHECK(tb.makespan_s >= lower * (1 - 1e-9));
  CHECK(tb.makespan_s <= te.makespan_s + td.makespan_s);
  CHECK(tb.makespan_s == Approx(lower).epsilon(0.02));
}

TEST_CASE("FlowComm counts the traffic of every symmetric group on shared links",
          "[hw_models][flows]") {
  const auto s = config::load_system_preset("h800");
  const Topology t(s, 32);
  const hw_models::FlowComm comm(s, 32, 8);
  const double B = 1 << 28;
  // Rail-aligned pairs (g, g+8): each group has its own NICs; all groups at once take
  // as long as one alone.
  const auto one = hw_models::collective_time(s, t, hw_models::Collective::all_gather, {0, 8}, B);
  CHECK(comm.all_gather(B, {2, true, 8}) == Approx(one.time_s));
  // All-to-all among ranks 12 apart (TP 4 x CP 3) crosses planes (PXN over NVLink, then
  // the NIC of the destination's rail). Every group's flows are in the solution: it equals
  // the flow simulation of all twelve groups of the first stage together, phase by phase
  // (each group's peers in its own node, then the others').
  const Topology t48(s, 48);
  const hw_models::FlowComm comm48(s, 48, 8);
  hw_models::CollectiveFlows all;
  for (int lead : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
    const auto cf = hw_models::collective_flows(s, t48, hw_models::Collective::all_to_all,
                                                {lead, lead + 12, lead + 24, lead + 36}, B);
    all.append(cf);
    all.latency_s = cf.latency_s;
  }
  CHECK(all.flows.empty());  // 12 apart on 8-GPU nodes: every peer is in another node
  const double together =
      all.latency_s + hw_models::phased_makespan(t48, all, hw_models::link_efficiency(s));
  const auto lone =
      hw_models::collective_time(s, t48, hw_models::Collective::all_to_all, {0, 12, 24, 36}, B);
  CHECK(comm48.all_to_all(B, {4, true, 12}) == Approx(together));
  CHECK(together >= lone.time_s * (1 - 1e-12));
  // Groups of one rank cost nothing; pipeline peers 8 apart each use their own NIC.
  CHECK(comm.all_to_all(B, {1, false, 1}) == 0);
  CHECK(
      comm.send_recv(B, {2, true, 8}) ==
      Approx(hw_models::collective_time(s, t, hw_models::Collective::send_recv, {0, 8}, B).time_s));
}

// Regression (fuzz-generated-scenarios): an EP group strided by etp 8 on 8-GPU H800 nodes
// has one rank per node. Each rank used to sit on its own rail of one node, and with the
// H800's 8 planes (no spine between rails) GPU 0 could not reach GPU 1: "internal error".
TEST_CASE("One rank per node: every rank on one rail, reached over the network",
          "[hw_models][topology]") {
  const Topology t(config::load_system_preset("h800"), 8, 1);
  CHECK(t.count(VertexKind::nvswitch) == 8);
  CHECK(t.count(VertexKind::nic) == 8);
  CHECK(kinds(t, 0, 1) ==
        std::vector<LinkKind>{LinkKind::nic, LinkKind::network, LinkKind::network, LinkKind::nic});
  CHECK(kinds(t, 2, 7) == kinds(t, 0, 1));
  // Two ranks per node (etp 4): two rails, a rank reaches the other rail over NVLink.
  const Topology u(config::load_system_preset("h800"), 8, 2);
  CHECK(kinds(u, 0, 1) == std::vector<LinkKind>{LinkKind::nvlink, LinkKind::nvlink});
  CHECK(kinds(u, 0, 2) == kinds(t, 0, 1));
}
