// EP dispatch/combine from the measured library bandwidths, derived by hand.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "hw_models/ep_dispatch.hpp"
#include "hw_models/ep_flows.hpp"

using namespace moesim;
using hw_models::Dispatcher;

TEST_CASE("DeepEP and HybridEP run at their measured bandwidth, less below saturation", "[hw_models][ep]") {
  const auto gb200 = config::load_system_preset("gb200-nvl72");
  const hw_models::AlphaBetaComm comm(gb200);
  const double bytes = 4096.0 * 8 * 7168 * 2;  // T x top-k x hidden x BF16 = 469.8 MB
  const double alpha = (8.4 + 3.4) * 1e-6;     // NCCL base + NVLink hop
  const hw_models::CommGroup ep32{32, false};
  // DeepEP, EP32, 24 SMs: 400 GB/s dispatch, 190 GB/s combine (journey step 4).
  CHECK(hw_models::ep_comm_seconds(Dispatcher::deepep, gb200, comm, {bytes, ep32, 24, false}) ==
        Approx(alpha + bytes / 400e9));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::deepep, gb200, comm, {bytes, ep32, 24, true}) ==
        Approx(alpha + bytes / 190e9));
  // 12 SMs: half the SMs of the saturating 24, half the bandwidth.
  CHECK(hw_models::ep_comm_seconds(Dispatcher::deepep, gb200, comm, {bytes, ep32, 12, false}) ==
        Approx(alpha + bytes / 200e9));
  // HybridEP (kernel only, BF16) saturates at 16 SMs: 32 and 16 SMs give the measured
  // 642.23 GB/s dispatch, 8 SMs half of it; combine 605.15 GB/s.
  CHECK(hw_models::ep_comm_seconds(Dispatcher::hybridep, gb200, comm, {bytes, ep32, 32, false}) ==
        Approx(alpha + bytes / 642.23e9));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::hybridep, gb200, comm, {bytes, ep32, 16, false}) ==
        Approx(alpha + bytes / 642.23e9));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::hybridep, gb200, comm, {bytes, ep32, 8, false}) ==
        Approx(alpha + bytes / 321.115e9));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::hybridep, gb200, comm, {bytes, ep32, 32, true}) ==
        Approx(alpha + bytes / 605.15e9));
}

TEST_CASE("NCCL all-to-all uses the measured bus bandwidth, else the links", "[hw_models][ep]") {
  const auto gb200 = config::load_system_preset("gb200-nvl72");
  const hw_models::AlphaBetaComm comm(gb200);
  // 32 GPUs in NVL72: busbw 640 GB/s: t = alpha + S x 31/32 / 640e9.
  CHECK(hw_models::ep_comm_seconds(Dispatcher::alltoall, gb200, comm, {1e9, {32, false}, 0, false}) ==
        Approx(11.8e-6 + 1e9 * 31 / 32 / 640e9));
  // H800 has no measured NVLink all-to-all: the link model (160 GB/s usable) applies.
  const auto h800 = config::load_system_preset("h800");
  const hw_models::AlphaBetaComm c800(h800);
  CHECK(hw_models::ep_comm_seconds(Dispatcher::alltoall, h800, c800, {1e9, {8, false}, 0, false}) ==
        Approx(c800.all_to_all(1e9, {8, false})));
  CHECK(hw_models::ep_comm_seconds(Dispatcher::deepep, h800, c800, {1e9, {8, false}, 0, false}) > 0);
  CHECK(hw_models::ep_comm_seconds(Dispatcher::hybridep, gb200, comm, {1e9, {1, false}, 32, false}) == 0);
}

TEST_CASE("Distinct destination ranks of a token", "[hw_models][ep]") {
  // Uniform top-8 of 256 experts over 32 ranks: 32 (1 - C(248, 8) / C(256, 8)) = 7.2668.
  CHECK(hw_models::expected_destination_ranks(256, 32, 8) == Approx(7.2668).epsilon(1e-4));
  CHECK(hw_models::expected_destination_ranks(256, 1, 8) == 1);
  CHECK(hw_models::expected_destination_ranks(256, 256, 8) == Approx(8));  // one expert per rank
  // Group-limited (8 groups, 4 chosen): EP32 has 4 ranks per group, the 8 experts come
  // from 128: 16 (1 - C(120, 8) / C(128, 8)) = 6.5965.
  CHECK(hw_models::expected_destination_ranks(256, 32, 8, 8, 4) == Approx(6.5965).epsilon(1e-4));
  // EP8, one group per rank: the chosen groups that get an expert, 8 x 1/2 x (1 - C(96, 8) / C(128, 8)).
  CHECK(hw_models::expected_destination_ranks(256, 8, 8, 8, 4) == Approx(3.6290).epsilon(1e-4));
  // EP4, two groups per rank (hypergeometric over how many of them are chosen).
  CHECK(hw_models::expected_destination_ranks(256, 4, 8, 8, 4) == Approx(2.9282).epsilon(1e-4));
}

TEST_CASE("Per-EP-size SM rates interpolate in SM seconds per byte", "[hw_models][ep]") {
  // GB200 HybridEP's sm_by_ranks (fitted rates, GB/s per SM): FP8 24 ranks 22.832, 32 ranks
  // 18.132; BF16 absent at 8 ranks (link-bound there), 41.973 at 16.
  const auto s = config::load_system_preset("gb200-nvl72");
  const auto rate = [&](int ranks, double elem, bool combine = false) {
    return hw_models::preset_ep_fractions(s, hw_models::Dispatcher::hybridep, combine, ranks, elem).sm_GBps;
  };
  CHECK(rate(24, 1.03125) == Approx(22.832));
  CHECK(rate(28, 1.03125) == Approx(1.0 / (0.5 / 22.832 + 0.5 / 18.132)));
  CHECK(rate(64, 1.03125) == Approx(16.445));  // held beyond the last measured size
  CHECK(rate(4, 1.03125) == Approx(40.084));   // and before the first
  CHECK(rate(8, 2) == 0);                       // no limit where none was fitted
  CHECK(rate(12, 2) == Approx(1.0 / (0.5 / 41.973)));
  CHECK(rate(32, 2, true) == Approx(34.576));
  // Without an EP size the table is not used (nor the scalar rates, absent here).
  CHECK(rate(0, 2) == 0);
  // The link fraction is the library's either way.
  CHECK(hw_models::preset_ep_fractions(s, hw_models::Dispatcher::hybridep, false, 32, 2).nvlink == Approx(0.7001));
}
