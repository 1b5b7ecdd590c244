// The EP libraries' preallocated buffers against byte counts worked by hand from their
// code's formulas (hw_models/ep_buffers.hpp): DeepSeek-V3 shapes, hidden 7168, 256 experts.
#include <catch2/catch.hpp>

#include "hw_models/ep_buffers.hpp"

using namespace moesim::hw_models;

namespace {
constexpr double kWorkspace = 32.0 * 1024 * 1024;
EpBufferQuery deepep(std::int64_t ranks, int sms) {
  return {Dispatcher::deepep, ranks, std::min<std::int64_t>(ranks, 8), 7168, 256, 4096, sms, false};
}
}  // namespace

TEST_CASE("DeepEP normal mode: per-channel NVLink and RDMA rings, whatever the tokens",
          "[hw_models][ep_buffers]") {
  // 20 SMs = 10 channels. EP8: 10 x 8 x 5 x 4 + 10 x 8 x 256 x (14336 + 2056) bytes.
  CHECK(ep_buffer_bytes(deepep(8, 20)) == Approx(335'709'824 + kWorkspace));
  // EP16: RDMA recv 128 rounded up to the send chunk 20 (140 tokens).
  CHECK(ep_buffer_bytes(deepep(16, 20)) == Approx(377'673'984.0 + 91'887'744 + kWorkspace));
  // EP64 (8 nodes of 8): 360.2 MiB NVLink, 320.5 MiB RDMA.
  CHECK(ep_buffer_bytes(deepep(64, 20)) == Approx(377'677'824.0 + 336'047'360 + kWorkspace));
  // The rings scale with the channels, not with the tokens.
  auto more_tokens = deepep(64, 20);
  more_tokens.tokens_per_rank = 16384;
  CHECK(ep_buffer_bytes(more_tokens) == ep_buffer_bytes(deepep(64, 20)));
  CHECK(ep_buffer_bytes(deepep(64, 32)) > 1.5 * ep_buffer_bytes(deepep(64, 20)) - 2 * kWorkspace);
}

TEST_CASE("HybridEP: worst-case buffers, every EP rank's tokens at one rank",
          "[hw_models][ep_buffers]") {
  // EP32 inside one NVL72 domain, 4096 tokens: MT = 131072 token slots.
  const EpBufferQuery q{Dispatcher::hybridep, 32, 32, 7168, 256, 4096, 32, false};
  const double mt = 4096.0 * 32;
  CHECK(ep_buffer_bytes(q) == Approx(mt * 7168 * 2 + mt * 8 * 32 * 4 + mt * 56 * 4 + 256 * mt));
  CHECK(ep_buffer_bytes(q) == Approx(2'076'180'480.0));
  // Linear in EP size x tokens; FP8 halves the token slots; NCCL holds none.
  auto twice = q;
  twice.tokens_per_rank = 8192;
  CHECK(ep_buffer_bytes(twice) == Approx(2 * ep_buffer_bytes(q)));
  auto fp8 = q;
  fp8.fp8 = true;
  CHECK(ep_buffer_bytes(q) - ep_buffer_bytes(fp8) == Approx(mt * 7168));
  CHECK(ep_buffer_bytes({Dispatcher::alltoall, 32, 32, 7168, 256, 4096, 0, false}) == 0);
}
