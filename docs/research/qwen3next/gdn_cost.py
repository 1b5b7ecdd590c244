#!/usr/bin/env python3
"""Qwen3-Next Gated DeltaNet layer in training: the kernel sequence Megatron-Core runs and each
kernel's FLOPs and HBM bytes per token. [derived] from the code; no kernel was timed.

Sources (read at these commits):
  MLM  NVIDIA/Megatron-LM cd4afffa megatron/core/ssm/gated_delta_net.py
       forward :344-528, _apply_gated_norm :530-540, _prepare_qkv_for_gated_delta_rule :542-581,
       _compute_g_and_beta :583-591
  FLA  fla-org/flash-linear-attention v0.4.2 (ca910f88, 2026-03-12; the version MLM cd4afffa's and
       MB v0.6.0's uv.lock pin): fla/ops/gated_delta_rule/chunk.py :24-216 (fwd and bwd),
       fla/ops/common/chunk_scaled_dot_kkt.py :27-75, fla/ops/utils/solve_tril.py :344-392,
       fla/ops/gated_delta_rule/wy_fast.py :51-121 (recompute_w_u), :122-240 (prepare_wy_repr_bwd),
       fla/ops/common/chunk_delta_h.py :655-775 (fwd_h, bwd_dhu; h and dh stored per 64-token
       chunk in k.dtype = BF16), fla/ops/common/chunk_o.py :498-716, fla/ops/utils/cumsum.py,
       fla/modules/conv/triton/ops.py :20-219 (causal conv fwd/bwd, Triton backend by default:
       fla/modules/conv/causal_conv1d.py:20), fla/modules/l2norm.py
Conventions: per token, per TP rank. Heads are split over TP (MLM gated_delta_net.py:139-140,190;
TP*CP must divide 16 key heads, transformer_config.py:1374-1382). BF16 activations (2 B),
FP32 g / A(kkt) / dg (4 B). Chunk C = 64 (chunk.py:38). Bytes are a lower bound: each tensor
is counted once per kernel that loads or stores it (V-blocked grids that re-read q/k/w from L2
are not multiplied). The FLOPs of the chunk kernels count the full C x C tiles the Triton code
computes (masking happens after the dot), not the causal half.
"""
from dataclasses import dataclass


@dataclass
class Shape:
    h: int = 2048
    k_heads: int = 16
    v_heads: int = 32
    K: int = 128
    V: int = 128
    conv: int = 4
    C: int = 64
    tp: int = 1
    mbs_gt1: bool = False  # b > 1: the [b,s,x] -> [s,b,x] transposes become real copies


def kernels(s: Shape):
    Hk, Hv = s.k_heads / s.tp, s.v_heads / s.tp
    K, V, C = s.K, s.V, s.C
    qk, vd = Hk * K, Hv * V           # per rank
    qkr = Hv * K                      # q or k after repeat_interleave to the value heads
    conv_ch = 2 * qk + vd
    inproj = 2 * qk + 2 * vd + 2 * Hv
    B2, B4 = 2, 4
    f, b = [], []  # (name, kind, flops, bytes)

    # ---------------- forward ----------------
    f.append(("in_proj (TE LayerNormColumnParallelLinear, RMSNorm fused)", "gemm",
              2 * s.h * inproj, None))
    f.append(("causal_conv1d_fwd (FLA Triton, SiLU)", "mem",
              2 * s.conv * conv_ch, B2 * conv_ch * 2))
    f.append(("query_key.contiguous() (slice of the conv output)", "mem", 0, B2 * 2 * qk * 2))
    f.append(("l2norm_fwd on q,k (FLA Triton)", "mem", 4 * 2 * qk, B2 * 2 * qk * 2 + 4 * 2 * Hk))
    f.append(("repeat_interleave q,k Hk -> Hv", "mem", 0, B2 * (2 * qk + 2 * qkr)))
    f.append(("value/gate/beta/alpha .contiguous()", "mem", 0, B2 * (vd + vd + 2 * Hv) * 2))
    f.append(("g = -exp(A_log)*softplus(a+dt_bias) fp32, beta = sigmoid(b) (jit)", "mem",
              10 * Hv, B2 * 2 * Hv + B4 * Hv + B2 * Hv))
    f.append(("chunk_local_cumsum(g)", "mem", Hv, B4 * Hv * 2))
    f.append(("chunk_scaled_dot_kkt_fwd -> A fp32", "mem",
              2 * C * K * Hv, B2 * qkr + B2 * Hv + B4 * Hv + B4 * Hv * C))
    f.append(("solve_tril (zeros_like + merge_16x16_to_64x64_inverse) -> A bf16", "mem",
              2 * C * C / 3 * Hv, B4 * Hv * C + 2 * B2 * Hv * C))
    f.append(("recompute_w_u_fwd -> w, u", "mem",
              2 * C * (K + V) * Hv, B2 * (qkr + vd) + B2 * Hv * C + B2 * Hv + B4 * Hv + B2 * (qkr + vd)))
    f.append(("chunk_gated_delta_rule_fwd_h -> h per chunk (bf16), v_new", "mem-serial",
              4 * K * V * Hv, B2 * (qkr + qkr + vd) + B4 * Hv + B2 * Hv * K * V / C + B2 * vd))
    f.append(("chunk_fwd_o -> o", "mem",
              (2 * K * V + 2 * C * (K + V)) * Hv,
              B2 * (qkr + qkr + vd) + B2 * Hv * K * V / C + B4 * Hv + B2 * vd))
    f.append(("out_norm: TE RMSNorm over 128 (zero-centered gamma)", "mem", 4 * vd, B2 * vd * 2))
    f.append(("y * silu(gate.float()) -> bf16 (jit)", "mem", 5 * vd, B2 * vd * 3))
    if s.mbs_gt1:
        f.append(("transpose(0,1).contiguous() [b,s,v] -> [s,b,v]", "mem", 0, B2 * vd * 2))
    f.append(("out_proj (TE RowParallelLinear)", "gemm", 2 * vd * s.h, None))

    # ---------------- backward ----------------
    b.append(("out_proj dgrad + wgrad", "gemm", 4 * vd * s.h, None))
    if s.mbs_gt1:
        b.append(("transpose backward copy", "mem", 0, B2 * vd * 2))
    b.append(("gating backward (jit): dy, y, gate in; d(norm out), dgate out", "mem", 8 * vd, B2 * vd * 5))
    b.append(("out_norm backward (TE RMSNorm)", "mem", 6 * vd, B2 * vd * 3))
    # FLA chunk_gated_delta_rule_bwd
    b.append(("recompute_w_u_fwd (recompute)", "mem",
              2 * C * (K + V) * Hv, B2 * (qkr + vd) + B2 * Hv * C + B2 * Hv + B4 * Hv + B2 * (qkr + vd)))
    b.append(("chunk_gated_delta_rule_fwd_h (recompute h, v_new)", "mem-serial",
              4 * K * V * Hv, B2 * (qkr + qkr + vd) + B4 * Hv + B2 * Hv * K * V / C + B2 * vd))
    b.append(("chunk_bwd_dv_local", "mem",
              2 * C * (K + V) * Hv, B2 * (qkr + qkr + vd) + B4 * Hv + B2 * vd))
    b.append(("chunk_gated_delta_rule_bwd_dhu -> dh per chunk, dv2", "mem-serial",
              6 * K * V * Hv, B2 * (3 * qkr + 2 * vd) + B4 * Hv + B2 * Hv * K * V / C + B2 * vd))
    b.append(("chunk_bwd_dqkwg -> dq, dk, dw, dg", "mem",
              (6 * K * V + 2 * C * (V + 2 * K)) * Hv,
              B2 * (qkr + qkr + vd + vd + vd) + 2 * B2 * Hv * K * V / C + B4 * Hv
              + B2 * 3 * qkr + B4 * Hv))
    b.append(("prepare_wy_repr_bwd -> dk2, dv, db, dg2", "mem",
              (4 * C * (K + V) + 4 * C * C + 4 * C * K) * Hv,
              B2 * (qkr + vd) + B2 * Hv * C + B2 * Hv + B4 * Hv + B2 * (qkr + vd)
              + B2 * (qkr + vd) + B2 * Hv + B4 * Hv))
    b.append(("dk.add_(dk2), dg.add_(dg2), dg.sum(0), reverse chunk_local_cumsum(dg)", "mem",
              qkr + 2 * Hv, B2 * 3 * qkr + B4 * Hv * 3 * 3))
    b.append(("g/beta backward (jit)", "mem", 10 * Hv, B2 * 4 * Hv + B4 * Hv * 2))
    b.append(("repeat_interleave backward (sum over the repeat)", "mem", 2 * qkr, B2 * (2 * qkr + 2 * qk)))
    b.append(("l2norm_bwd", "mem", 6 * 2 * qk, B2 * 2 * qk * 3))
    b.append(("split/contiguous backward: gather d(conv out)", "mem", 0, B2 * conv_ch * 2))
    b.append(("causal_conv1d_bwd: recompute conv (no act) + bwd kernel + dw partial sums", "mem",
              2 * s.conv * conv_ch * 3,
              B2 * conv_ch * 2 + B2 * conv_ch * 4 + 2 * B4 * conv_ch * s.conv / C))
    b.append(("cat of d(in_proj out) (split backward)", "mem", 0, B2 * inproj * 2))
    b.append(("in_proj dgrad + wgrad (+ RMSNorm bwd)", "gemm", 4 * s.h * inproj, None))
    return f, b


def saved_bytes(s: Shape):
    """Activation bytes a GDN layer keeps for its backward, per token per rank (estimate)."""
    Hk, Hv = s.k_heads / s.tp, s.v_heads / s.tp
    qk, vd, qkr = Hk * s.K, Hv * s.V, Hv * s.K
    inproj = 2 * qk + 2 * vd + 2 * Hv
    return {
        "in_proj input (TE LayerNormLinear: x, and its ln_out unless recomputed)": 2 * s.h * 2,
        "in_proj output (conv saves the qkv view; keeps the whole buffer alive)": 2 * inproj,
        "l2norm input (q,k contiguous) + rstd": 2 * 2 * qk + 4 * 2 * Hk,
        "chunk fn: q, k (repeated), v, g fp32, beta, A bf16": 2 * (2 * qkr + vd) + 4 * Hv + 2 * Hv + 2 * Hv * s.C,
        "out_norm input o + rstd": 2 * vd + 4 * Hv,
        "gating: norm output y, gate": 2 * vd * 2,
        "out_proj input": 2 * vd,
    }


def main():
    for tp in (1, 2):
        s = Shape(tp=tp)
        f, b = kernels(s)
        print(f"\n=== Qwen3-Next GDN layer, TP{tp}, per token per rank ===")
        for label, ks in (("forward", f), ("backward", b)):
            gem = sum(x[2] for x in ks if x[1] == "gemm")
            mem_fl = sum(x[2] for x in ks if x[1] != "gemm")
            by = sum(x[3] for x in ks if x[1] != "gemm")
            core = [x for x in ks if x[1] != "gemm"]
            print(f"-- {label}: GEMM {gem / 1e6:.2f} MFLOP; non-GEMM {len(core)} kernels, "
                  f"{mem_fl / 1e6:.2f} MFLOP, {by / 1e3:.1f} KB HBM")
            for name, kind, fl, byt in ks:
                bs = "" if byt is None else f"{byt / 1e3:8.2f} KB"
                print(f"   {kind:10s} {fl / 1e6:8.3f} MF {bs:>11s}  {name}")
        sv = saved_bytes(s)
        print(f"-- saved for backward: {sum(sv.values()) / 1e3:.1f} KB/token")
        for k_, v_ in sv.items():
            print(f"   {v_ / 1e3:7.2f} KB  {k_}")
    # Megatron's counted GDN term (per token, forward), for comparison
    s = Shape()
    qk, vd = 16 * 128, 32 * 128
    meg_rule = 2 * 32 * 128 ** 2 * 4
    f, b = kernels(s)
    chunk = [x for x in f if x[1].startswith("mem") and ("chunk" in x[0] or "solve" in x[0]
                                                         or "recompute" in x[0])]
    print(f"\nMegatron counts the gated delta rule as 8*Hv*dv^2 = {meg_rule / 1e6:.2f} MF/token fwd "
          f"({3 * meg_rule / 1e6:.2f} with x3); the FLA kernels compute "
          f"{sum(x[2] for x in chunk) / 1e6:.2f} MF fwd (full 64x64 tiles) and "
          f"{sum(x[2] for x in b if x[1].startswith('mem') and ('chunk' in x[0] or 'wy' in x[0] or 'recompute' in x[0] or 'fwd_h' in x[0])) / 1e6:.2f} MF bwd.")
    # example: one microbatch
    for name, T, bw in (("B200 MBS1 s4096", 4096, 8e12), ("GB300 MBS4 s4096", 16384, 8e12),
                        ("H100 MBS1 s4096", 4096, 3.35e12)):
        f, b = kernels(Shape(mbs_gt1=T > 4096))
        fb = sum(x[3] for x in f if x[3]) * T
        bb = sum(x[3] for x in b if x[3]) * T
        print(f"{name}: non-GEMM HBM fwd {fb / 1e9:.2f} GB, bwd {bb / 1e9:.2f} GB per GDN layer -> "
              f"{(fb + bb) / bw * 1e3:.2f} ms at 100% of {bw / 1e12:.2f} TB/s; x36 layers "
              f"{36 * (fb + bb) / bw * 1e3:.1f} ms per microbatch (lower bound)")


if __name__ == "__main__":
    main()
