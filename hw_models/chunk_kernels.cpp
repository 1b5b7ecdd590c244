#include "hw_models/chunk_kernels.hpp"

namespace moesim::hw_models {

std::vector<ChunkKernel> ssd_forward(const SsdShape& s) {
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

std::vector<ChunkKernel> ssd_backward(const SsdShape& s) {
  const double H = s.heads, P = s.head_dim, G = s.groups, N = s.state, Q = s.chunk;
  const std::vector<ChunkKernel> fwd = ssd_forward(s);
  double fwd_bytes = 0;
  for (const auto& k : fwd) fwd_bytes += k.bytes;
  // The recomputed forward kernels (bwd 441-446): cumsum, CB, states, passed states.
  std::vector<ChunkKernel> out{fwd[0], fwd[3], fwd[1], fwd[2]};
  std::vector<ChunkKernel> grads;
  if (s.gate) grads.push_back({"chunk_scan_bwd_dz", 0, 0});
  const double hpn = 2 * H * P * N, hqp = H * Q * P, gqn = 2 * G * Q * N;
  for (const ChunkKernel& k :
       std::vector<ChunkKernel>{{"chunk_scan_bwd_dstates", 0, hpn},
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

namespace {
struct Gdn {
  double H, K, V, C, qkr, v, state, w_u, serial;
  explicit Gdn(const GdnShape& s)
      : H(s.heads),
        K(s.key_dim),
        V(s.value_dim),
        C(s.chunk),
        qkr(H * K),
        v(H * V),
        state(2 * H * K * V / C),
        w_u(4 * (qkr + v) + 2 * H * C + 6 * H),
        serial(V / 64 * H) {}
  ChunkKernel w_u_kernel() const { return {"w_u", w_u, 2 * H * C * (K + V)}; }
  ChunkKernel fwd_h() const {
    return {"fwd_h", 2 * (2 * qkr + v) + 4 * H + state + 2 * v, 4 * H * K * V, serial};
  }
};
}  // namespace

std::vector<ChunkKernel> gdn_forward(const GdnShape& s) {
  const Gdn g(s);
  const double H = g.H, K = g.K, V = g.V, C = g.C;
  return {{"cumsum", 4 * H * 2, 0},
          {"kkt", 2 * g.qkr + 2 * H + 4 * H + 4 * H * C, 2 * H * C * K},
          {"solve_tril", 4 * H * C + 2 * 2 * H * C, 2 * H * C * C / 3},
          g.w_u_kernel(),
          g.fwd_h(),
          {"output", 2 * (2 * g.qkr + g.v) + g.state + 4 * H + 2 * g.v,
           2 * H * K * V + 2 * H * C * K + 2 * H * C * V}};
}

std::vector<ChunkKernel> gdn_backward(const GdnShape& s) {
  const Gdn g(s);
  const double H = g.H, K = g.K, V = g.V, C = g.C;
  return {g.w_u_kernel(),
          g.fwd_h(),
          {"dv_local", 2 * (2 * g.qkr + g.v) + 4 * H + 2 * g.v, 2 * H * C * (K + V)},
          {"dhu", 2 * (3 * g.qkr + 2 * g.v) + 4 * H + g.state + 2 * g.v, 6 * H * K * V, g.serial},
          {"dqkwg", 2 * (2 * g.qkr + 3 * g.v) + 2 * g.state + 8 * H + 2 * 3 * g.qkr,
           6 * H * K * V + 4 * H * C * K + 2 * H * C * V},
          {"wy_bwd", 2 * g.w_u + 2 * (g.qkr + g.v) + 2 * H + 4 * H,
           4 * H * C * (K + V) + 4 * H * C * C},
          {"dg_sums", 2 * 3 * g.qkr + 4 * H * 9, 0}};
}

double chunk_call_seconds(const ComputeModel& cm, const std::vector<ChunkKernel>& kernels,
                          KernelClass cls, double tokens, double seqs) {
  double t = 0;
  for (const auto& k : kernels) {
    ComputeWork w;
    w.cls = cls;
    w.bytes = tokens * k.bytes;
    w.flops = tokens * k.flops;
    w.ctas = k.ctas_per_seq * seqs;
    t += cm.seconds(w);
  }
  return t;
}

}  // namespace moesim::hw_models
