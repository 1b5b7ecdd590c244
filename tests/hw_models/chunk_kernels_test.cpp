// Mamba-2's SSD kernels' work per token (hw_models/chunk_kernels.hpp) against hand-derived
// values, and the compute model's scan pricing against its closed form.
#include <numeric>

#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "hw_models/chunk_kernels.hpp"
#include "hw_models/compute.hpp"

using namespace moesim;

namespace {
double total(const std::vector<hw_models::ChunkKernel>& ks, double hw_models::ChunkKernel::*f) {
  return std::accumulate(ks.begin(), ks.end(), 0.0,
                         [f](double a, const hw_models::ChunkKernel& k) { return a + k.*f; });
}
}  // namespace

TEST_CASE("SSD kernels: bytes and FLOPs a token, forward and backward", "[hw_models][ssd]") {
  // flashinfer's B200 shape: H 8 of P 64 (d 512), G 8, N 128, Q 128, no gate; the chunk
  // states a token H P N / Q = 512.
  const hw_models::SsdShape s{8, 64, 8, 128, 128, false};
  const auto fwd = hw_models::ssd_forward(s);
  REQUIRE(fwd.size() == 5);
  CHECK(fwd[0].bytes == 80);                       // 10 H
  CHECK(fwd[1].bytes == 1024 + 2048 + 64 + 2048);  // 2d + 2GN + 8H + 4 states
  CHECK(fwd[1].flops == 2.0 * 8 * 64 * 128);       // 2 H P N
  CHECK(fwd[2].bytes == 6 * 512);
  CHECK(fwd[3].bytes == 4096 + 4096);          // 4GN + 4GQ
  CHECK(fwd[3].flops == 2.0 * 8 * 128 * 128);  // 2 G Q N
  CHECK(fwd[4].bytes == 4096 + 2048 + 2048 + 1024 + 64);
  CHECK(fwd[4].flops == 2.0 * 8 * 64 * 128 + 8.0 * 128 * 64);  // 2 H P N + H Q P
  CHECK(total(fwd, &hw_models::ChunkKernel::bytes) == 25808);
  // The gate adds z in and the gated output: 4d in chunk_scan.
  CHECK(hw_models::ssd_forward({8, 64, 8, 128, 128, true})[4].bytes == fwd[4].bytes + 2048);

  const auto bwd = hw_models::ssd_backward(s);
  REQUIRE(bwd.size() == 4 + 10);  // recomputed cumsum, CB, states, passing; ten gradients
  CHECK(bwd[1].name == "bmm_chunk");
  CHECK(bwd[1].flops == fwd[3].flops);
  // Gradient FLOPs: four of 2 H P N, three of H Q P, two of 2 G Q N; bytes twice the
  // forward's, over the ten.
  const std::vector<hw_models::ChunkKernel> grads(bwd.begin() + 4, bwd.end());
  CHECK(total(grads, &hw_models::ChunkKernel::flops) == 4 * 131072.0 + 3 * 65536.0 + 2 * 262144.0);
  CHECK(total(grads, &hw_models::ChunkKernel::bytes) == Approx(2 * 25808.0));
  CHECK(hw_models::ssd_backward({8, 64, 8, 128, 128, true}).size() == 15);  // and dz
}

TEST_CASE("A scan kernel runs at the slower of its bytes and its FLOPs at the SSD rate",
          "[hw_models][compute][ssd]") {
  const auto b200 = config::load_system_preset("b200", {false});
  REQUIRE(b200.efficiency.ssd_scan_tflops);
  const hw_models::ComputeModel m(b200);
  const double r = b200.efficiency.ssd_scan_tflops->value * 1e12;
  const double bw = b200.gpu.hbm_TBps.value * 1e12 * b200.efficiency.hbm.value;
  const double t_dev = b200.efficiency.kernel_device_us.value * 1e-6;
  hw_models::ComputeWork w;
  w.cls = hw_models::KernelClass::scan;
  w.bytes = 1e9;
  w.flops = 1e9;  // one FLOP a byte: the bytes bound
  CHECK(m.seconds(w) == Approx(1e9 / bw + t_dev));
  w.flops = 1e12;  // a thousand: the FLOPs bound
  CHECK(m.seconds(w) == Approx(1e12 / r + t_dev));
  // Without a rate the model refuses (the loader refuses such a system for Mamba models).
  auto none = b200;
  none.efficiency.ssd_scan_tflops.reset();
  CHECK_THROWS_WITH(hw_models::ComputeModel(none).seconds(w),
                    Catch::Contains("efficiency.ssd_scan_tflops"));
}

TEST_CASE("Gated DeltaNet chunk kernels: bytes and FLOPs a token", "[hw_models][gdn]") {
  // Two value heads of 64 x 64, chunk 64: qkr = v = 128, a chunk's state a token 2 H K V / C
  // = 256 bytes, w and u 4 (qkr + v) + 2 H C + 6 H = 1292.
  const hw_models::GdnShape s{2, 64, 64, 64};
  const auto fwd = hw_models::gdn_forward(s);
  REQUIRE(fwd.size() == 6);
  CHECK(fwd[1].bytes == 256 + 12 + 512);  // kkt: 2 qkr + 6H + 4HC
  CHECK(fwd[1].flops == 2.0 * 2 * 64 * 64);
  CHECK(fwd[3].bytes == 1292);
  CHECK(fwd[4].name == "fwd_h");
  CHECK(fwd[4].bytes == 768 + 8 + 256 + 256);
  CHECK(fwd[4].ctas_per_seq == 2);     // V / 64 x H
  CHECK(fwd[5].flops == 3 * 16384.0);  // q h, q k^T, (q k^T) v
  // 2HCK + 2HC^2/3 + 2HC(K + V) + 4HKV + (2HKV + 2HCK + 2HCV)
  CHECK(total(fwd, &hw_models::ChunkKernel::flops) ==
        Approx(16384 + 16384.0 / 3 + 32768 + 32768 + 49152));
  const auto bwd = hw_models::gdn_backward(s);
  REQUIRE(bwd.size() == 7);
  CHECK(bwd[3].name == "dhu");
  CHECK(bwd[3].ctas_per_seq == 2);
  // w_u and fwd_h again, dv_local 2HC(K + V), dhu 6HKV, dqkwg 6HKV + 4HCK + 2HCV, wy_bwd
  // 4HC(K + V) + 4HC^2.
  CHECK(total(bwd, &hw_models::ChunkKernel::flops) ==
        32768 + 32768 + 32768 + 49152 + 98304 + 98304.0);
}
