#include "hw_models/ep_buffers.hpp"

#include <algorithm>
#include <cmath>

namespace moesim::hw_models {
namespace {

double round_up(double x, double to) {
  return std::ceil(x / to) * to;
}

double deepep_bytes(const EpBufferQuery& q) {
  const double r = static_cast<double>(q.ranks);
  const double nvl = std::min(r, 8.0), rdma = std::max(std::floor(r / 8), 1.0);
  const double ch = std::floor(q.sms / 2.0);
  const double hidden_bytes = static_cast<double>(q.hidden) * 2;
  const double recv = q.ranks <= 8     ? 256
                      : q.ranks <= 64  ? 288
                      : q.ranks <= 96  ? 480
                      : q.ranks <= 128 ? 560
                                       : 720;
  const double slot =
      8 + 128 * 8 + 128 * 4 + 128 * 4;  // source meta, top-k indices, weights, scales
  double bytes =
      round_up(ch * nvl * (2 * rdma + 3) * 4 + ch * nvl * recv * (hidden_bytes + slot), 128);
  if (q.ranks > 8) {
    const double rrecv = round_up(128, q.ranks == 16 ? 20 : 8);
    bytes +=
        round_up(ch * rdma * 18 * 2 * 4 + ch * rdma * rrecv * (hidden_bytes + slot + 16) * 2, 128);
  }
  return bytes + 32.0 * 1024 * 1024;
}

double hybridep_bytes(const EpBufferQuery& q) {
  const double h = static_cast<double>(q.hidden), e = static_cast<double>(q.experts);
  const double rpd = static_cast<double>(std::max<std::int64_t>(1, q.ranks_per_domain));
  const double nodes = static_cast<double>(q.ranks) / rpd;
  const double local = e / static_cast<double>(q.ranks);
  const double t = round_up(std::max(q.tokens_per_rank, 512.0), 64);
  const double mt = t * rpd * nodes, dt = q.fp8 ? 1 : 2;
  double bytes = mt * h * dt + mt * local * rpd * 4 + mt * h / 128 * 4 + e * mt;
  if (nodes > 1) {
    bytes += t * (h * dt + e * 4 + h / 128 * 4) +
             t * (nodes - 1) * (h * dt + local * rpd * 4 + h / 128 * 4);
    bytes += 2 * t * (nodes - 1) * (h * 2 + local * rpd * 4);
  }
  return bytes;
}

}  // namespace

double ep_buffer_bytes(const EpBufferQuery& q) {
  if (q.ranks <= 1) return 0;
  switch (q.dispatcher) {
    case Dispatcher::deepep:
      return deepep_bytes(q);
    case Dispatcher::hybridep:
      return hybridep_bytes(q);
    case Dispatcher::alltoall:
    case Dispatcher::allgather:
      return 0;
  }
  return 0;
}

}  // namespace moesim::hw_models
