// hw_models/chunk_kernels.hpp: the work of the chunked linear-recurrence kernels of hybrid
// models, kernel by kernel, per token: Mamba-2's SSD (state-space dual) scan as mamba_ssm's
// Triton kernels do it, and Gated DeltaNet's chunked delta rule as flash-linear-attention's
// do it. The layer graphs price the mixers with these (workload/layer_graph_mamba.cpp,
// layer_graph_gdn.cpp) and the calibration fits each family's rate to published timings of
// the same kernels with them (calibration/profile_fit.hpp), so the two count alike.
//
// SSD (mamba_ssm/ops/triton/ssd_combined.py 343-395 forward, 397-516 backward at e9594ce1).
// Per rank and token: H heads of P, G groups, state N, chunk Q, d = H P; "states" = H P N /
// Q, the chunk states a token carries (FP32). HBM bytes from each kernel's loads and
// stores (BF16 activations; FP32 dt, dA, CB and states):
//   chunk_cumsum   2H + 8H                            FLOPs 0
//   chunk_state    2d + 2GN + 8H + 4 states           2 H P N        (x^T B over the chunk)
//   state_passing  4 states + 2 states                0              (a recurrence over chunks)
//   bmm_chunk      4GN + 4GQ                          2 G Q N        (C B^T, all Q x Q)
//   chunk_scan     4GQ + 4d + 2GN + 2 states + 8H     2 H P N + H Q P (C states; the causal
//                  (+ 4d with the gate z: z in, y out)                 half of CB x, block rows
//                                                                      stop at the diagonal)
// Backward: the wrapper recomputes chunk_cumsum, bmm_chunk, chunk_state and state_passing
// (the forward's FLOPs again), then runs (with FLOPs):
//   chunk_scan_bwd_dz (gate only) 0, chunk_scan_bwd_dstates 2HPN, state_passing_bwd 0,
//   chunk_scan_chunk_state_bwd_dx HQP + 2HPN, chunk_state_bwd_db 2HPN, chunk_scan_bwd_dC
//   2HPN, chunk_scan_bwd_dcb HQP, bmm_chunk_bwd twice (dB and dC) 2GQN each,
//   chunk_scan_bwd_ddAcs_stable HQP, chunk_cumsum_bwd 0.
// The backward kernels' bytes are an estimate (no public profile at training shapes):
// twice the forward's SSD bytes, dealt out evenly over them.
//
// Gated DeltaNet (fla/ops/gated_delta_rule/chunk.py chunk_gated_delta_rule_fwd and _bwd, FLA
// v0.4.2, the version Megatron pins; docs/research/qwen3-next.md 3): H value heads (q and k
// repeated to them) of key dim K and value dim V, chunk C = 64; qkr = H K, v = H V; one
// BF16 state per chunk, a token's share 2 H K V / C. Bytes a token as each kernel loads and
// stores them (a lower bound: V-blocked grids re-read q, k and w from L2); FLOPs from the
// products each kernel forms (full C x C blocks):
//   cumsum      4H x 2                                      0
//   kkt         2qkr + 2H + 4H + 4HC                        2HCK       (beta k k^T)
//   solve_tril  4HC + 2 x 2HC                               2HC^2 / 3  ((I + A)^-1)
//   w_u         4(qkr + v) + 2HC + 6H                       2HC(K + V) (A k, A v)
//   fwd_h       2(2qkr + v) + 4H + 2HKV/C + 2v              4HKV       (w h, k^T v_new)
//   output      2(2qkr + v) + 2HKV/C + 4H + 2v              2HKV + 2HCK + 2HCV
// backward (FLA's recompute of w, u and the states first):
//   w_u, fwd_h  as forward
//   dv_local    2(2qkr + v) + 4H + 2v                       2HC(K + V)
//   dhu         2(3qkr + 2v) + 4H + 2HKV/C + 2v             6HKV       (q^T do, w^T dv, k dh)
//   dqkwg       2(2qkr + 3v) + 4HKV/C + 8H + 6qkr           6HKV + 4HCK + 2HCV
//   wy_bwd      2 w_u + 2(qkr + v) + 6H                     4HC(K + V) + 4HC^2
//   dg_sums     6qkr + 36H                                  0
// fwd_h and dhu walk the chunks in order with one CTA per (64-wide value block, sequence,
// head): V / 64 x H CTAs a sequence (ctas_per_seq), under one wave at training shapes.
#pragma once

#include <string>
#include <vector>

#include "hw_models/compute.hpp"

namespace moesim::hw_models {

struct SsdShape {
  double heads = 0, head_dim = 0, groups = 0, state = 0, chunk = 0;  // per rank
  bool gate = true;  // y * silu(z) inside chunk_scan (Megatron's mixer); false: no z
};

struct ChunkKernel {
  std::string name;
  double bytes = 0;         // HBM traffic per token
  double flops = 0;         // per token
  double ctas_per_seq = 0;  // a grid under one wave: its CTAs per sequence (0: it fills the GPU)
};

// The forward's five kernels, in launch order.
std::vector<ChunkKernel> ssd_forward(const SsdShape& s);
// The backward's kernels: the four recomputed forward kernels, then the gradient kernels.
std::vector<ChunkKernel> ssd_backward(const SsdShape& s);

struct GdnShape {
  double heads = 0, key_dim = 0, value_dim = 0, chunk = 64;  // value heads per rank
};
// chunk_gated_delta_rule's forward (six kernels) and backward (seven), in launch order.
std::vector<ChunkKernel> gdn_forward(const GdnShape& s);
std::vector<ChunkKernel> gdn_backward(const GdnShape& s);

// One call's kernels, `tokens` in `seqs` sequences, each priced alone by `cm` as a `cls`
// kernel (scan or delta_rule), the chunk-serial ones on their CTAs: seconds in all.
double chunk_call_seconds(const ComputeModel& cm, const std::vector<ChunkKernel>& kernels,
                          KernelClass cls, double tokens, double seqs);

}  // namespace moesim::hw_models
