// workload/eplb.hpp against deepseek-ai/eplb: the README's two-layer example exactly, the
// library's invariants, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "workload/eplb.hpp"

using namespace moesim;

namespace {

// deepseek-ai/eplb README.md: 2 layers of 12 experts, 16 replicas, 4 groups, 2 nodes, 8 GPUs.
const std::vector<std::vector<double>> kReadmeWeight = {
    {90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86},
    {20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27},
};

}  // namespace

TEST_CASE("EPLB reproduces the deepseek-ai/eplb README example exactly", "[workload][eplb]") {
  const auto plan = workload::rebalance_experts(kReadmeWeight, 16, 4, 2, 8);
  CHECK(plan.policy == workload::EplbPolicy::hierarchical);
  // The README's printed phy2log.
  const std::vector<std::vector<int>> expected = {
      {5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1},
      {7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1},
  };
  CHECK(plan.phy2log == expected);
  // Replica counts follow from it: layer 0 doubles experts 1, 4, 5 and 10; layer 1 1, 5, 6, 8.
  CHECK(plan.logcnt[0] == std::vector<int>{1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1});
  CHECK(plan.logcnt[1] == std::vector<int>{1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1});
  // log2phy inverts phy2log: every slot once, -1 past an expert's count.
  for (std::size_t l = 0; l < 2; ++l) {
    std::set<int> slots;
    for (std::size_t e = 0; e < 12; ++e)
      for (std::size_t r = 0; r < plan.log2phy[l][e].size(); ++r) {
        const int p = plan.log2phy[l][e][r];
        if (static_cast<int>(r) >= plan.logcnt[l][e]) {
          CHECK(p == -1);
          continue;
        }
        REQUIRE(p >= 0);
        CHECK(plan.phy2log[l][static_cast<std::size_t>(p)] == static_cast<int>(e));
        slots.insert(p);
      }
    CHECK(slots.size() == 16);
  }
}

TEST_CASE("EPLB lowers the hottest GPU's load and keeps every token", "[workload][eplb]") {
  for (auto policy : {workload::EplbPolicy::hierarchical, workload::EplbPolicy::global}) {
    const auto plan = workload::rebalance_experts(kReadmeWeight, 16, 4, 2, 8, policy);
    for (std::size_t l = 0; l < 2; ++l) {
      const auto loads = workload::gpu_loads(plan, l, kReadmeWeight[l], 8);
      const double total = std::accumulate(kReadmeWeight[l].begin(), kReadmeWeight[l].end(), 0.0);
      CHECK(std::accumulate(loads.begin(), loads.end(), 0.0) == Approx(total));
      // Without replicas 12 experts cannot even split over 8 GPUs; with them the hottest GPU
      // carries less than the hottest expert alone.
      CHECK(*std::max_element(loads.begin(), loads.end()) <
            *std::max_element(kReadmeWeight[l].begin(), kReadmeWeight[l].end()));
    }
  }
  // Hand-derived: 4 equal experts, 8 replicas, 1 group, 1 node, 4 GPUs: each expert doubled,
  // each GPU two half-loads: every GPU exactly the mean.
  const auto even = workload::rebalance_experts({{10, 10, 10, 10}}, 8, 1, 1, 4);
  for (double x : workload::gpu_loads(even, 0, {10, 10, 10, 10}, 4)) CHECK(x == Approx(10));
}

TEST_CASE("EPLB refuses what the library asserts against", "[workload][eplb]") {
  using workload::rebalance_experts;
  CHECK_THROWS_AS(rebalance_experts(kReadmeWeight, 12, 4, 2, 8), std::invalid_argument);  // 12 % 8
  CHECK_THROWS_AS(rebalance_experts(kReadmeWeight, 8, 4, 2, 8),
                  std::invalid_argument);  // fewer than experts
  CHECK_THROWS_AS(rebalance_experts(kReadmeWeight, 16, 4, 3, 9), std::invalid_argument);  // 16 % 9
  CHECK_THROWS_AS(rebalance_experts(kReadmeWeight, 16, 5, 1, 8),
                  std::invalid_argument);  // 12 % 5 groups
  CHECK_THROWS_AS(rebalance_experts(kReadmeWeight, 16, 3, 2, 8, workload::EplbPolicy::hierarchical),
                  std::invalid_argument);  // 3 groups on 2 nodes
  // The library's own choice there: the global policy.
  CHECK(rebalance_experts(kReadmeWeight, 16, 3, 2, 8).policy == workload::EplbPolicy::global);
  CHECK_THROWS_AS(rebalance_experts({{1, 2}, {1}}, 2, 1, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(rebalance_experts({{1, -2}}, 2, 1, 1, 1), std::invalid_argument);
}
