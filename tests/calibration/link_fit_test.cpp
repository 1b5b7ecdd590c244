// NCCL link efficiencies: the fitter on a hand-checked case, the presets' efficiencies
// being the fits of calibration/measurements/nccl-busbw.json, and the collective model
// against every other bus bandwidth of the reference (printed as a table).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibration/link_fit.hpp"
#include "config/load.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

nlohmann::json profile(const std::string& file = "nccl-busbw.json") {
  std::ifstream in(test::source_path("calibration/measurements/" + file));
  return nlohmann::json::parse(in);
}

calibration::BusbwPoint point(const nlohmann::json& p) {
  calibration::BusbwPoint b;
  b.op = *hw_models::collective_names().find(p["op"].get<std::string>());
  b.ranks = p["ranks"].get<int>();
  b.gpus_per_domain = p.value("gpus_per_domain", 0);
  b.bytes = p["bytes"].get<double>();
  b.busbw_GBps = p["busbw_GBps"].get<double>();
  const std::string algo = p.value("algorithm", std::string("ring"));
  if (algo == "auto")
    b.algorithm.reset();
  else
    b.algorithm = *hw_models::algorithm_names().find(algo);
  return b;
}

}  // namespace

TEST_CASE("Ring bus bandwidth inside one NVLink domain is eta x the link", "[calibration][links]") {
  // 8 GPUs on one NVSwitch: every ring link carries one flow, so busbw = eta x 450 GB/s
  // less the latency share (base 8.4 us + 14 x 3.4 us against ~8.6 ms at 8 GiB).
  auto s = config::load_system_preset("h100");
  s.comm.nvlink_efficiency = hw_models::Param{0.5, "test"};
  const calibration::BusbwPoint p{hw_models::Collective::all_reduce, 8, 0, 8589934592.0, 0};
  const double t_flow = 2.0 * 7 / 8 * 8589934592.0 / (0.5 * 450e9);
  const double t = t_flow + (8.4 + 14 * 3.4) * 1e-6;
  CHECK(calibration::model_busbw(s, p) == Approx(8589934592.0 / t / 1e9 * 2 * 7 / 8).epsilon(1e-9));
  // The fit inverts it.
  calibration::BusbwPoint q = p;
  q.busbw_GBps = calibration::model_busbw(s, p);
  CHECK(calibration::fit_link_efficiency(s, calibration::LinkClass::nvlink, q) ==
        Approx(0.5).epsilon(1e-6));
  q.busbw_GBps = 5000;  // beyond the links
  CHECK_THROWS_AS(calibration::fit_link_efficiency(s, calibration::LinkClass::nvlink, q),
                  std::invalid_argument);
}

TEST_CASE("NVLS all-reduce and all-to-all on one NVSwitch, by hand", "[calibration][links]") {
  // NVLS: every port carries S (n+1)/n at eta x nvls x 450 GB/s after the NVLS latency, so
  // busbw = 2 (n-1)/n S / t. All-to-all: S/n to each of 7 peers at eta x a2a x 450 GB/s
  // after one NVLink hop.
  auto s = config::load_system_preset("h100");
  s.comm.nvlink_efficiency = hw_models::Param{0.5, "test"};
  s.comm.nvls_efficiency = hw_models::Param{0.8, "test"};
  s.comm.nvls_latency_us = hw_models::Param{20, "test"};
  s.comm.alltoall_efficiency = hw_models::Param{0.9, "test"};
  const double S = 8589934592.0;
  calibration::BusbwPoint p{hw_models::Collective::all_reduce, 8, 0, S, 0};
  p.algorithm = hw_models::CollectiveAlgorithm::nvls;
  const double t_nvls = 20e-6 + S * 9 / 8 / (0.5 * 0.8 * 450e9);
  CHECK(calibration::model_busbw(s, p) == Approx(S / t_nvls / 1e9 * 2 * 7 / 8).epsilon(1e-9));
  const calibration::BusbwPoint a{hw_models::Collective::all_to_all, 8, 0, S, 0};
  const double t_a2a = (8.4 + 3.4) * 1e-6 + 7 * (S / 8 / 0.9) / (0.5 * 450e9);
  CHECK(calibration::model_busbw(s, a) == Approx(S / t_a2a / 1e9 * 7 / 8).epsilon(1e-9));
  // NVLS needs a system that has it, and across domains the network's in-network
  // reduction (SHARP): each GPU's NIC then carries S/8 each way beside its NVLink flows.
  const hw_models::Topology two(s, 16, 8);
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[static_cast<std::size_t>(i)] = i;
  REQUIRE(s.network.sharp);
  const auto sharp = hw_models::collective_time(s, two, hw_models::Collective::all_reduce, all, S,
                                                hw_models::CollectiveAlgorithm::nvls);
  // The NVLink ports bind (S 9/8 / 0.8 at 0.5 x 450 GB/s) before the NICs (S/8 at
  // 0.9069 x 50 GB/s); latency 20 + 18 us.
  CHECK(sharp.latency_s == Approx(38e-6));
  CHECK(sharp.time_s ==
        Approx(38e-6 + std::max(S * 9 / 8 / 0.8 / (0.5 * 450e9), S / 8 / (0.9069 * 50e9)))
            .epsilon(1e-6));
  s.network.sharp.reset();
  CHECK_FALSE(hw_models::nvls_supported(s, two, hw_models::Collective::all_reduce, all));
  CHECK_THROWS_AS(hw_models::collective_time(s, two, hw_models::Collective::all_reduce, all, S,
                                             hw_models::CollectiveAlgorithm::nvls),
                  std::invalid_argument);
  // NCCL's choice: NVLS for a large all-reduce inside the domain, the ring without NVLS.
  const hw_models::Topology one(s, 8, 8);
  const std::vector<int> eight{0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(hw_models::fastest_collective_time(s, one, hw_models::Collective::all_reduce, eight, S)
            .algorithm == hw_models::CollectiveAlgorithm::nvls);
  s.comm.nvls_efficiency.reset();
  s.comm.nvls_latency_us.reset();
  CHECK(hw_models::fastest_collective_time(s, one, hw_models::Collective::all_reduce, eight, S)
            .algorithm == hw_models::CollectiveAlgorithm::ring);
}

TEST_CASE("An all-to-all across domains serves its own domain's peers, then the others",
          "[calibration][links]") {
  // The two parts' times add (hw_models/collectives.hpp: the form Megatron-Core's EP table
  // shows, not NCCL's schedule). 16 ranks on two DGX H100: first 7 flows of S/16 / 0.9 on each
  // NVLink port at 0.5 x 450 GB/s, then 8 flows of S/16 through each GPU's NIC at
  // 0.8 x 50 GB/s; latency base 8.4 us + one network hop 14 us.
  auto s = config::load_system_preset("h100");
  s.comm.nvlink_efficiency = hw_models::Param{0.5, "test"};
  s.comm.alltoall_efficiency = hw_models::Param{0.9, "test"};
  s.comm.network_efficiency = hw_models::Param{0.8, "test"};
  const double S = 8589934592.0;
  const calibration::BusbwPoint a{hw_models::Collective::all_to_all, 16, 8, S, 0};
  const double t = (8.4 + 14) * 1e-6 + 7 * (S / 16 / 0.9) / (0.5 * 450e9) + 8 * (S / 16) / 40e9;
  CHECK(calibration::model_busbw(s, a) == Approx(S / t / 1e9 * 15 / 16).epsilon(1e-9));
  // Two points fitted jointly: the log-space least squares lies between their own fits.
  calibration::BusbwPoint lo = a, hi = a;
  lo.busbw_GBps = 0.9 * calibration::model_busbw(s, a);
  hi.busbw_GBps = 1.1 * calibration::model_busbw(s, a);
  const auto net = calibration::LinkClass::network;
  const double both = calibration::fit_link_efficiency(s, net, {lo, hi});
  CHECK(both > calibration::fit_link_efficiency(s, net, lo));
  CHECK(both < calibration::fit_link_efficiency(s, net, hi));
  calibration::BusbwPoint m = a;
  m.busbw_GBps = calibration::model_busbw(s, a);
  CHECK(calibration::fit_link_efficiency(s, net, {m, m}) == Approx(0.8).epsilon(1e-5));
  // An EP exchange as nccl-tests would count it: 470 MB a rank in 8 ms over 32 ranks.
  CHECK(calibration::alltoall_point(32, 0, 470e6, 8000).busbw_GBps ==
        Approx(470e6 / 8e-3 / 1e9 * 31 / 32));
}

TEST_CASE("The presets' link efficiencies are the fits of the NCCL profile",
          "[calibration][links]") {
  const auto prof = profile();
  for (const auto& p : prof["points"]) {
    if (p["role"] != "fit" || p["link"] == "ring_group") continue;
    const auto link = p["link"] == "nvlink"         ? calibration::LinkClass::nvlink
                      : p["link"] == "network"      ? calibration::LinkClass::network
                      : p["link"] == "nvls_latency" ? calibration::LinkClass::nvls_latency
                                                    : calibration::LinkClass::alltoall;
    // The network's rate also takes Megatron-Core's EP exchanges through NCCL's all-to-all
    // across nodes (the EP table's rows marked 'fit', BF16 copies of its tokens).
    std::vector<calibration::BusbwPoint> points{point(p)};
    if (link == calibration::LinkClass::network) {
      const auto ep = profile("mcore-moe-ep-latency.json");
      const double bytes =
          ep["tokens"].get<double>() * ep["topk"].get<double>() * ep["hidden"].get<double>() * 2;
      for (const auto& r : ep["points"])
        if (r["role"] == "fit" && r["system"] == p["system"] && r["dispatcher"] == "alltoall")
          points.push_back(calibration::alltoall_point(r["ep"].get<int>(), 0, bytes,
                                                       r["time_us"].get<double>()));
      CHECK(points.size() > 1);
    }
    const double eta = calibration::fit_link_efficiency(
        config::load_system_preset(p["system"].get<std::string>()), link, points);
    std::cout << fmt::format("link fit: {} {:.4f} from '{}' and {} more points\n",
                             p["link"].get<std::string>(), eta, p["what"].get<std::string>(),
                             points.size() - 1);
    for (const auto& name : p["systems"]) {
      const auto s = config::load_system_preset(name.get<std::string>());
      const auto& got = calibration::link_param(s, link);
      INFO(name << ": fit of '" << p["what"].get<std::string>() << "' is " << eta);
      REQUIRE(got.has_value());
      CHECK(got->value == Approx(eta).epsilon(0.005));
    }
  }
}

TEST_CASE("Collectives against the reference's NCCL bus bandwidths",
          "[calibration][links][table]") {
  std::string table = "\nNCCL bus bandwidth, measured vs moesim (GB/s)\n";
  const auto prof = profile();
  for (const auto& p : prof["points"]) {
    const auto s = config::load_system_preset(p["system"].get<std::string>());
    const double got = calibration::model_busbw(s, point(p));
    const double want = p["busbw_GBps"].get<double>();
    const double err = 100 * (got - want) / want;
    table +=
        fmt::format("  {:<56} {:>7.1f} {:>7.1f} {:>+6.1f}%  {}\n", p["what"].get<std::string>(),
                    want, got, err, p["role"].get<std::string>());
    INFO(p["what"].get<std::string>() << ": measured " << want << ", model " << got);
    if (p["role"] == "check") CHECK(test::within_table_tolerance(err));
    if (p["role"] == "gap") CHECK_FALSE(test::within_table_tolerance(err));
  }
  std::cout << table;
}

TEST_CASE("NCCL's protocols: LL128 and LL trade bandwidth for latency on the same ring",
          "[calibration][links]") {
  const auto s = config::load_system_preset("h200");
  const hw_models::Topology one(s, 8, 8);
  const std::vector<int> eight{0, 1, 2, 3, 4, 5, 6, 7};
  const double S = 1 << 20;
  using hw_models::Protocol;
  const auto t = [&](Protocol p) {
    return hw_models::collective_time(s, one, hw_models::Collective::all_reduce, eight, S,
                                      hw_models::CollectiveAlgorithm::ring, p);
  };
  const auto simple = t(Protocol::simple), ll128 = t(Protocol::ll128), ll = t(Protocol::ll);
  // The same flows: Simple's makespan m, LL128 m / 0.92, LL max(m / 0.5, 1.75 S / 141 GB/s).
  const double m = simple.time_s - (8.4 + 14 * 3.4) * 1e-6;
  CHECK(simple.latency_s == Approx((8.4 + 14 * 3.4) * 1e-6));
  CHECK(ll128.latency_s == Approx((14 + 14 * 1.9) * 1e-6));
  CHECK(ll128.time_s == Approx((14 + 14 * 1.9) * 1e-6 + m / 0.92));
  CHECK(ll.time_s == Approx((6.6 + 14 * 0.6) * 1e-6 + std::max(m / 0.5, S * 1.75 / 141e9)));
  // Auto: the faster of LL128 and Simple (LL is only run when asked for).
  const auto best = hw_models::collective_time(s, one, hw_models::Collective::all_reduce, eight, S);
  CHECK(best.protocol == Protocol::ll128);
  CHECK(best.time_s == ll128.time_s);
  const auto big =
      hw_models::collective_time(s, one, hw_models::Collective::all_reduce, eight, 8.0 * (1 << 30));
  CHECK(big.protocol == Protocol::simple);
}

TEST_CASE("The presets' ring-group factors are the fits of XLA's collective table",
          "[calibration][links]") {
  // Each 'ring_group' point against the same table's 8-GPU point of the same collective:
  // the mean ratio per group size is comm.ring_group_efficiency at that size on every
  // system the points list, and 1 at 8 GPUs, the size the link efficiency is fitted at.
  const auto prof = profile();
  std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> pairs;
  std::map<std::pair<std::string, int>, std::vector<std::string>> systems;
  for (const auto& p : prof["points"]) {
    if (p.value("link", std::string()) != "ring_group") continue;
    const nlohmann::json* ref = nullptr;
    for (const auto& q : prof["points"])
      if (q.value("table", std::string()) == p["table"] && q["op"] == p["op"] && q["ranks"] == 8)
        ref = &q;
    REQUIRE(ref != nullptr);
    const std::pair<std::string, int> key{p["table"].get<std::string>(), p["ranks"].get<int>()};
    pairs[key].push_back({p["busbw_GBps"].get<double>(), (*ref)["busbw_GBps"].get<double>()});
    systems[key] = p["systems"].get<std::vector<std::string>>();
  }
  REQUIRE(pairs.size() == 4);  // sm_90 and sm_100, 2 and 4 GPUs
  for (const auto& [key, ps] : pairs) {
    const double f = calibration::fit_ring_group_efficiency(ps);
    std::cout << fmt::format("ring group: {} at {} GPUs {:.4f}\n", key.first, key.second, f);
    for (const auto& name : systems[key]) {
      const auto s = config::load_system_preset(name);
      INFO(name << " at " << key.second << " GPUs: fit " << f);
      REQUIRE(s.comm.ring_group_efficiency.count(key.second) == 1);
      CHECK(s.comm.ring_group_efficiency.at(key.second).value == Approx(f).epsilon(0.005));
      REQUIRE(s.comm.ring_group_efficiency.count(8) == 1);
      CHECK(s.comm.ring_group_efficiency.at(8).value == 1);
    }
  }
  // By hand: H100's two groups of two, all-gather 268.9 and reduce-scatter 194.8 against
  // 344.1 and 321.7 at 8 GPUs.
  CHECK(calibration::fit_ring_group_efficiency({{268.9, 344.1}, {194.8, 321.7}}) ==
        Approx((268.9 / 344.1 + 194.8 / 321.7) / 2));
  CHECK_THROWS_AS(calibration::fit_ring_group_efficiency({}), std::invalid_argument);
  // The model: a 2-GPU ring inside one domain carries its bytes at that factor of the
  // links' rate (log2 interpolation between keys: 3 GPUs halfway between 2 and 4 in log2).
  const auto h100 = config::load_system_preset("h100");
  const auto& t = h100.comm.ring_group_efficiency;
  CHECK(h100.comm.ring_group_factor(2) == t.at(2).value);
  CHECK(h100.comm.ring_group_factor(3) ==
        Approx(t.at(2).value + (std::log2(3.0) - 1) * (t.at(4).value - t.at(2).value)));
  CHECK(h100.comm.ring_group_factor(16) == 1);
  auto flat = h100;
  flat.comm.ring_group_efficiency.clear();
  const calibration::BusbwPoint two{hw_models::Collective::all_gather, 2, 0, 1073741824.0, 0};
  const double ratio = calibration::model_busbw(h100, two) / calibration::model_busbw(flat, two);
  CHECK(ratio == Approx(t.at(2).value).epsilon(0.01));  // the latency's share is under 1%
}
