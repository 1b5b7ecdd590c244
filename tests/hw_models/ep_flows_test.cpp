// hw_models/ep_flows.hpp: the bytes DeepEP-style dispatch moves under node-limited routing
// (DeepSeek-V3: each token to at most topk_group of its n_group groups, the groups being
// the NVLink domains), against the closed form of the header, by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "config/load.hpp"
#include "hw_models/ep_flows.hpp"

using namespace moesim;
using namespace moesim::hw_models;

namespace {
double choose(double n, double k) {
  return std::exp(std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1));
}
}  // namespace

TEST_CASE("Node-limited routing: cross-node and NVLink bytes by the closed form",
          "[hw_models][ep_flows][closed-form]") {
  // EP64 on 8 H800 nodes of 8 GPUs; 256 experts, top-8, hidden 7168, FP8 with scales.
  const auto sys = config::load_system_preset("h800");
  const Topology topo(sys, 64);
  EpBenchmark b;
  b.ranks = 64;
  b.tokens = 4096;
  b.hidden = 7168;
  b.element_bytes = 1.03125;
  b.experts = 256;
  b.topk = 8;
  const double N = 8, R = 64, E = 256, k = 8, per_token = b.hidden * b.element_bytes;
  const auto expect = [&](double M) {
    const double P = M * E / N;
    const double p_domain = M / N * (1 - choose(P - E / N, k) / choose(P, k));
    const double p_rank = M / N * (1 - choose(P - E / R, k) / choose(P, k));
    return std::pair{b.tokens * N * p_domain * per_token, b.tokens * R * p_rank * per_token};
  };
  const EpFractions f;  // the links at full rate: the bytes do not depend on them
  // DeepSeek-V3's limit: 4 of 8 domains. A token reaches 4 (1 - C(96, 8) / C(128, 8)) = 3.63
  // domains on average, its own included, against 8 (1 - C(224, 8) / C(256, 8)) = 5.29
  // without the limit.
  b.groups = 4;
  const auto limited = ep_flow_time(sys, topo, f, b);
  CHECK(limited.rdma_bytes == Approx(expect(4).first).epsilon(1e-9));
  CHECK(limited.nvl_bytes == Approx(expect(4).second).epsilon(1e-9));
  CHECK(limited.rdma_bytes / (b.tokens * per_token) == Approx(3.629).epsilon(1e-3));
  b.groups = 8;
  const auto free = ep_flow_time(sys, topo, f, b);
  CHECK(free.rdma_bytes == Approx(expect(8).first).epsilon(1e-9));
  CHECK(free.rdma_bytes / (b.tokens * per_token) == Approx(5.295).epsilon(1e-3));
  // The limit lowers what crosses the network, and the dispatch's time with it (the NIC
  // is the bottleneck across nodes).
  CHECK(limited.rdma_bytes < 0.7 * free.rdma_bytes);
  CHECK(limited.time_s < free.time_s);
}
