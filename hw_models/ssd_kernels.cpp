#include "hw_models/ssd_kernels.hpp"

namespace moesim::hw_models {

std::vector<SsdKernel> ssd_forward(const SsdShape& s) {
  const double H = s.heads, P = s.head_dim, G = s.groups, N = s.state, Q = s.chunk;
  const double d = H * P, gn = G * N, states = H * P * N / Q;
  return {
      {"chunk_cumsum", 2 * H + 8 * H, 0},
      {"chunk_state", 2 * d + 2 * gn + 8 * H + 4 * states, 2 * H * P * N},
      {"state_passing", 4 * states + 2 * states, 0},
      {"bmm_chunk", 4 * gn + 4 * G * Q, 2 * G * Q * N},
      {"chunk_scan", 4 * G * Q + 4 * d + 2 * gn + 2 * states + 8 * H + (s.gate ? 4 * d : 0),
       2 * H * P * N + H * Q * P},
  };
}

std::vector<SsdKernel> ssd_backward(const SsdShape& s) {
  const double H = s.heads, P = s.head_dim, G = s.groups, N = s.state, Q = s.chunk;
  const std::vector<SsdKernel> fwd = ssd_forward(s);
  double fwd_bytes = 0;
  for (const auto& k : fwd) fwd_bytes += k.bytes;
  // The recomputed forward kernels (bwd 441-446): cumsum, CB, states, passed states.
  std::vector<SsdKernel> out{fwd[0], fwd[3], fwd[1], fwd[2]};
  std::vector<SsdKernel> grads;
  if (s.gate) grads.push_back({"chunk_scan_bwd_dz", 0, 0});
  const double hpn = 2 * H * P * N, hqp = H * Q * P, gqn = 2 * G * Q * N;
  for (const SsdKernel& k : std::vector<SsdKernel>{{"chunk_scan_bwd_dstates", 0, hpn},
                                                   {"state_passing_bwd", 0, 0},
                                                   {"chunk_scan_chunk_state_bwd_dx", 0, hqp + hpn},
                                                   {"chunk_state_bwd_db", 0, hpn},
                                                   {"chunk_scan_bwd_dC", 0, hpn},
                                                   {"chunk_scan_bwd_dcb", 0, hqp},
                                                   {"bmm_chunk_bwd_dB", 0, gqn},
                                                   {"bmm_chunk_bwd_dC", 0, gqn},
                                                   {"chunk_scan_bwd_ddAcs_stable", 0, hqp},
                                                   {"chunk_cumsum_bwd", 0, 0}})
    grads.push_back(k);
  for (auto& k : grads) k.bytes = 2 * fwd_bytes / static_cast<double>(grads.size());
  out.insert(out.end(), grads.begin(), grads.end());
  return out;
}

}  // namespace moesim::hw_models
