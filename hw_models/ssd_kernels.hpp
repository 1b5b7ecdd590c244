// hw_models/ssd_kernels.hpp: the work of Mamba-2's SSD (state-space dual) scan, kernel by
// kernel, per token, as mamba_ssm's Triton kernels do it (mamba_ssm/ops/triton/
// ssd_combined.py 343-395 forward, 397-516 backward at e9594ce1). The layer graph prices a
// Mamba mixer with these (workload/layer_graph_mamba.cpp) and the calibration fits the
// scan's rate to published timings of the same kernels with them (calibration/
// profile_fit.hpp), so the two count alike.
//
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
#pragma once

#include <string>
#include <vector>

namespace moesim::hw_models {

struct SsdShape {
  double heads = 0, head_dim = 0, groups = 0, state = 0, chunk = 0;  // per rank
  bool gate = true;  // y * silu(z) inside chunk_scan (Megatron's mixer); false: no z
};

struct SsdKernel {
  std::string name;
  double bytes = 0;  // HBM traffic per token
  double flops = 0;  // per token
};

// The forward's five kernels, in launch order.
std::vector<SsdKernel> ssd_forward(const SsdShape& s);
// The backward's kernels: the four recomputed forward kernels, then the gradient kernels.
std::vector<SsdKernel> ssd_backward(const SsdShape& s);

}  // namespace moesim::hw_models
