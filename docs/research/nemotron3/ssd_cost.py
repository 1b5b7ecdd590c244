# Derived (not measured) per-token cost of one Mamba-2 mixer in training, following the kernel
# sequence of mamba_ssm.ops.triton.ssd_combined (state-spaces/mamba@e9594ce1) as Megatron-LM
# cd4afffa mamba_mixer.py:755-781 calls it (z passed in, RMSNorm separate, out_proj separate).
# bf16 activations (2 B), fp32 dA/dt/CB/states where the kernels keep them fp32.
def mixer(name, h, H, P=64, G=8, N=128, Q=128, conv=4, tp=1):
    d = H*P//tp; Hl = H//tp; Gl = G//tp; GN = Gl*N
    c = d + 2*GN
    inproj = 2*h*(2*d + 2*GN + Hl)           # GEMM fwd flops
    outproj = 2*d*h
    convf = 2*conv*c
    # SSD chunked algorithm, fwd, per token:
    cb = Gl*2*Q*N                              # C B^T per group, full Q x Q block
    intra = Hl*Q*P                             # (L o CB) X, causal half of 2*Q*P
    states = Hl*2*N*P                          # chunk_state  B^T X
    outst = Hl*2*N*P                           # chunk_scan   C * state
    ssd = cb + intra + states + outst
    # HBM bytes per token, fwd (non-GEMM kernels), lower bound: CB read once per group
    b = 2
    by = {
        'conv1d': 2*c*b,
        'chunk_cumsum': Hl*b + 2*Hl*4,
        'chunk_state': d*b + GN*b + 2*Hl*4 + Hl*P*N*4/Q,
        'state_passing': Hl*P*N*4/Q + Hl*P*N*b/Q,
        'bmm_chunk': 2*GN*b + Gl*Q*4,
        'chunk_scan': Gl*Q*4 + 2*d*b + GN*b + Hl*P*N*b/Q + 2*Hl*4 + 2*d*b,
        'rmsnorm': 2*d*b,
    }
    tot = sum(by.values())
    print(f"{name} (TP{tp}): d_inner/rank {d}, in_proj N {2*d+2*GN+Hl}")
    print(f"  fwd GEMM MFLOP/token: in_proj {inproj/1e6:.1f}, out_proj {outproj/1e6:.1f}; conv {convf/1e6:.3f}")
    print(f"  fwd SSD MFLOP/token: CB {cb/1e6:.2f} intra {intra/1e6:.2f} chunk_state {states/1e6:.2f} state-out {outst/1e6:.2f} = {ssd/1e6:.2f}"
          f"  (Megatron counts 7*2h*N = {7*2*h*N/tp/1e6:.2f})")
    print("  fwd HBM KB/token (non-GEMM):", {k: round(v/1024,1) for k,v in by.items()}, f"total {tot/1024:.0f} KB")
    return tot
for args in [("Nano", 2688, 64), ("Super", 4096, 128), ("Ultra", 8192, 256)]:
    mixer(*args)
mixer("Super", 4096, 128, tp=2); mixer("Ultra", 8192, 256, tp=2)
