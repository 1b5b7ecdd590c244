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

TEST_CASE("A model's group-limited routing sets the destinations inside and across domains",
          "[hw_models][ep_flows][closed-form]") {
  const auto sys = config::load_system_preset("h100");
  const EpFractions f;
  EpBenchmark b;
  b.tokens = 4096;
  b.hidden = 7168;
  b.element_bytes = 2;
  b.topk = 8;
  const double per_token = b.hidden * b.element_bytes;
  SECTION("EP8 in one NVLink domain, one group a rank (Megatron-LM's moe_perf DeepSeek proxy)") {
    // 32 experts in 8 groups of 4, a token's 8 experts from 4 groups (pool 16): each chosen
    // group is a rank, missed with probability C(12, 8) / C(16, 8) = 495 / 12870, so
    // D = 4 (1 - 495 / 12870) = 3.846 ranks where uniform routing reaches
    // 8 (1 - C(28, 8) / C(32, 8)) = 5.636.
    const Topology topo(sys, 8);
    b.ranks = 8;
    b.experts = 32;
    b.groups = 1;
    const auto uniform = ep_flow_time(sys, topo, f, b);
    CHECK(uniform.nvl_bytes / (b.tokens * per_token) ==
          Approx(8 * (1 - choose(28, 8) / choose(32, 8))).epsilon(1e-9));
    b.expert_groups = 8;
    b.expert_topk_groups = 4;
    const auto grouped = ep_flow_time(sys, topo, f, b);
    CHECK(grouped.nvl_bytes / (b.tokens * per_token) ==
          Approx(4 * (1 - 495.0 / 12870)).epsilon(1e-9));
    CHECK(grouped.time_s < uniform.time_s);
  }
  SECTION("EP32 over four domains of 8: two groups a domain, not node-limited to two domains") {
    // 256 experts, 8 groups of 32, 4 chosen: a domain (64 experts, groups 2d and 2d + 1) is
    // missed when neither of its groups is chosen, C(6, 4) / C(8, 4) = 15 / 70, or when one
    // is chosen and gets none of the 8 experts from the pool of 128 (C(96, 8) / C(128, 8),
    // with probability 2 C(6, 3) / C(8, 4) = 40 / 70), or both and none of 64 (C(64, 8) /
    // C(128, 8), 15 / 70).
    const Topology topo(sys, 32);
    b.ranks = 32;
    b.experts = 256;
    b.groups = 4;
    b.expert_groups = 8;
    b.expert_topk_groups = 4;
    const double c128 = choose(128, 8);
    const double miss =
        15.0 / 70 + 40.0 / 70 * choose(96, 8) / c128 + 15.0 / 70 * choose(64, 8) / c128;
    const auto r = ep_flow_time(sys, topo, f, b);
    CHECK(r.rdma_bytes / (b.tokens * per_token) == Approx(4 * (1 - miss)).epsilon(1e-9));
    // The ranks: 4 to a group of 8 experts each, a chosen group's rank missed with
    // C(120, 8) / C(128, 8): 16 (1 - C(120, 8) / C(128, 8)) = 6.5965.
    CHECK(r.nvl_bytes / (b.tokens * per_token) ==
          Approx(16 * (1 - choose(120, 8) / c128)).epsilon(1e-9));
  }
}
