// EP dispatch/combine: NCCL's all-to-all, routing statistics, and how the EP libraries'
// parameters apply to a system (hand-made parameters, hand-derived values).
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "hw_models/ep_flows.hpp"

using namespace moesim;
using hw_models::Dispatcher;

TEST_CASE("NCCL all-to-all is the collective's flows; the EP libraries are not priced here",
          "[hw_models][ep]") {
  const auto gb200 = config::load_system_preset("gb200-nvl72");
  const hw_models::AlphaBetaComm comm(gb200);
  CHECK(hw_models::ep_comm_seconds(Dispatcher::alltoall, gb200, comm, {1e9, {32, false}, false}) ==
        Approx(comm.all_to_all(1e9, {32, false})));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::alltoall, gb200, comm, {1e9, {1, false}, false}) ==
        0);
  CHECK_THROWS_AS(
      hw_models::ep_comm_seconds(Dispatcher::deepep, gb200, comm, {1e9, {8, false}, false}),
      std::invalid_argument);
}

TEST_CASE("Distinct destination ranks of a token", "[hw_models][ep]") {
  // Uniform top-8 of 256 experts over 32 ranks: 32 (1 - C(248, 8) / C(256, 8)) = 7.2668.
  CHECK(hw_models::expected_destination_ranks(256, 32, 8) == Approx(7.2668).epsilon(1e-4));
  CHECK(hw_models::expected_destination_ranks(256, 1, 8) == 1);
  CHECK(hw_models::expected_destination_ranks(256, 256, 8) == Approx(8));  // one expert per rank
  // Group-limited (8 groups, 4 chosen): EP32 has 4 ranks per group, the 8 experts come
  // from 128: 16 (1 - C(120, 8) / C(128, 8)) = 6.5965.
  CHECK(hw_models::expected_destination_ranks(256, 32, 8, 8, 4) == Approx(6.5965).epsilon(1e-4));
  // EP8, one group per rank: the chosen groups that get an expert, 8 x 1/2 x (1 - C(96, 8) / C(128,
  // 8)).
  CHECK(hw_models::expected_destination_ranks(256, 8, 8, 8, 4) == Approx(3.6290).epsilon(1e-4));
  // EP4, two groups per rank (hypergeometric over how many of them are chosen).
  CHECK(hw_models::expected_destination_ranks(256, 4, 8, 8, 4) == Approx(2.9282).epsilon(1e-4));
  // Groups that straddle ranks (neither count divides the other): 24 experts on 3 ranks of
  // 8, 4 groups of 6, a token's 2 experts from 2 groups (pool 12). Rank 0 (experts 0-7) has 6
  // experts in group 0 and 2 in group 1; over the six pairs of groups its overlap is 8, 6, 6,
  // 2, 2, 0, so it receives nothing with probability (4x3 + 6x5 + 6x5 + 10x9 + 10x9 + 12x11)
  // / (6 x 132) = 384 / 792; rank 1 (4 in groups 1 and 2) 368 / 792; rank 2 as rank 0:
  // D = (408 + 424 + 408) / 792 = 1.5657, against 3 (1 - C(16, 2) / C(24, 2)) = 1.6957 uniform.
  CHECK(hw_models::expected_destination_ranks(24, 3, 2, 4, 2) ==
        Approx(1240.0 / 792).epsilon(1e-12));
  CHECK(hw_models::expected_destination_ranks(24, 3, 2) == Approx(3 * (1 - 120.0 / 276)));
  // Destination domains are ranks of E/N experts: DeepSeek-V3 over 4 domains (2 groups
  // each): a domain is missed when neither of its groups is chosen (C(6, 4) / C(8, 4) =
  // 15/70) or when its chosen groups get none of the 8 experts.
  CHECK(hw_models::expected_destination_ranks(256, 4, 8, 8, 4) < 4 * (1 - 15.0 / 70));
}

namespace {
hw_models::Param v(double x) {
  return {x, "test"};
}
}  // namespace

TEST_CASE("Per-EP-size SM rates interpolate in SM seconds per byte", "[hw_models][ep]") {
  // A hand-made HybridEP across NVL72 trays: FP8 24 ranks 22.832, 32 ranks 18.132 GB/s
  // per SM; BF16 absent at 8 ranks (link-bound there), 41.973 at 16.
  auto s = config::load_system_preset("gb200-nvl72");
  hw_models::EpLibrary lib;
  auto& k = lib.mnnvl.emplace();
  k.link_fraction = v(0.7);
  hw_models::EpSmRate r8, r16, r24, r32;
  r8.ranks = 8, r8.fp8_GBps = v(40.084);
  r16.ranks = 16, r16.bf16_GBps = v(41.973);
  r24.ranks = 24, r24.fp8_GBps = v(22.832);
  r32.ranks = 32, r32.fp8_GBps = v(18.132), r32.combine_GBps = v(34.576);
  k.sm_by_ranks = {r8, r16, r24, r32};
  s.ep_dispatch.hybridep = lib;
  const auto rate = [&](int ranks, double elem, bool combine = false) {
    return hw_models::ep_library_fractions(s, Dispatcher::hybridep, false, combine, ranks, ranks,
                                           elem)
        .sm_GBps;
  };
  CHECK(rate(24, 1.03125) == Approx(22.832));
  CHECK(rate(28, 1.03125) == Approx(1.0 / (0.5 / 22.832 + 0.5 / 18.132)));
  CHECK(rate(64, 1.03125) == Approx(18.132));  // held beyond the last measured size
  CHECK(rate(8, 1.03125) == Approx(40.084));   // and at the first
  CHECK(rate(8, 2) == 0);                      // no limit where none was fitted
  CHECK(rate(12, 2) == Approx(1.0 / (0.5 / 41.973)));
  CHECK(rate(32, 2, true) == Approx(34.576));
  CHECK(hw_models::ep_library_fractions(s, Dispatcher::hybridep, false, false, 32, 32, 2).nvlink ==
        Approx(0.7));
  // Inside one 4-GPU tray the kind is NVLink inside a node, which this library lacks: refused.
  CHECK_THROWS_AS(hw_models::ep_library_fractions(s, Dispatcher::hybridep, false, false, 4, 4, 2),
                  std::invalid_argument);
}

TEST_CASE("The EP libraries' parameters apply through each system's own links", "[hw_models][ep]") {
  auto h100 = config::load_system_preset("h100");
  hw_models::EpLibrary lib;
  lib.nvlink.emplace().link_fraction = v(0.65);
  auto& rd = lib.rdma.emplace();
  rd.link_fraction = v(0.9);
  rd.peer_fraction = v(0.72);
  h100.ep_dispatch.deepep = lib;
  // EP32 over 4 DGX: the NVLink fraction inside, the NIC's outside, and one peer connection
  // 0.72 x 400 Gb/s / 8 = 36 GB/s.
  const auto f = hw_models::ep_library_fractions(h100, Dispatcher::deepep, false, false, 32, 8);
  CHECK(f.nvlink == Approx(0.65));
  CHECK(f.network == Approx(0.9));
  CHECK(f.peer_GBps == Approx(36));
  CHECK(hw_models::ep_nvlink_kind(h100, 8) == hw_models::EpLink::nvlink);
  const auto gb200 = config::load_system_preset("gb200-nvl72");
  CHECK(hw_models::ep_nvlink_kind(gb200, 4) == hw_models::EpLink::nvlink);
  CHECK(hw_models::ep_nvlink_kind(gb200, 32) == hw_models::EpLink::mnnvl);
  // Placements the libraries cannot run in say why.
  CHECK(hw_models::ep_unsupported(h100, Dispatcher::deepep, false, 12, 8).find("whole domains") !=
        std::string::npos);
  CHECK(hw_models::ep_unsupported(gb200, Dispatcher::deepep, false, 64, 32)
            .find("NUM_MAX_NVL_PEERS") != std::string::npos);
  CHECK(hw_models::ep_unsupported(gb200, Dispatcher::hybridep, false, 64, 32).empty());
  CHECK(hw_models::ep_unsupported(h100, Dispatcher::alltoall, false, 12, 8).empty());
  // Uncalibrated (no parameters for the library): the links at full rate, no SM limit.
  const auto raw = config::load_system_preset("h100", {false});
  const auto u = hw_models::ep_library_fractions(raw, Dispatcher::hybridep, false, false, 32, 8);
  CHECK(u.nvlink == 1);
  CHECK(u.network == 1);
  CHECK(u.sm_GBps == 0);
}
