# Megatron-LM cd4afffa megatron/training/training.py:473-547 (hybrid_flops) re-expressed per token.
# Also Megatron-Bridge v0.6.0 src/megatron/bridge/training/utils/flop_utils.py:607-751 (same formula).
def counts(p):
    main, *mtp = p.split('/')
    c = {k: main.count(k) for k in 'M*E-'}
    for m in mtp:
        for k in 'M*E-': c[k] += m.count(k)
    return c

def per_token(m, s):
    h = m['h']; c = counts(m['pattern'])
    # mamba (Megatron uses d_in = 2h regardless of nheads*headdim)
    d_in = 2*h; N = m['state']; g = m['groups']; nh = m['mheads']
    mamba_in = 2*h*(2*d_in + 2*g*N + nh)
    mamba_scan = 7*d_in*N
    mamba_out = 2*d_in*h
    mamba = mamba_in + mamba_scan + mamba_out
    # attention
    n = m['heads']; kvg = m['kv']; d = m['kv_ch']
    p = d*n/h
    attn_lin = 4*h*p*(h + h*kvg/n)
    attn_core = 2*s*h*p
    # moe (squared relu -> not gated)
    F = m['moe_ffn']; k = m['topk']; Fs = m['shared']; L = m.get('latent')
    if L:
        routed = 4*L*F*k + 4*h*L
    else:
        routed = 4*h*F*k
    shared = 4*h*Fs
    moe = routed + shared
    logits = 2*h*m['V']*(1 + m['mtp'])
    terms = dict(mamba=c['M']*mamba, attn_lin=c['*']*attn_lin, attn_core=c['*']*attn_core,
                 moe_routed=c['E']*routed, moe_shared=c['E']*shared, logits=logits)
    terms = {k: 3*v for k, v in terms.items()}
    return c, terms, dict(mamba_in=mamba_in, mamba_scan=mamba_scan, mamba_out=mamba_out, attn_lin=attn_lin, attn_core=attn_core, routed=routed, shared=shared)

nano = dict(h=2688, pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", state=128, groups=8, mheads=64,
            heads=32, kv=2, kv_ch=128, moe_ffn=1856, topk=6, shared=3712, V=131072, mtp=0)
superm = dict(h=4096, pattern="MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME" + "/*E/*E",
              state=128, groups=8, mheads=128, heads=32, kv=2, kv_ch=128, moe_ffn=2688, topk=22, shared=5376, latent=1024, V=131072, mtp=2)
ultra = dict(h=8192, pattern="MEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME" + "/*E/*E",
             state=128, groups=8, mheads=256, heads=64, kv=2, kv_ch=128, moe_ffn=5120, topk=22, shared=10240, latent=2048, V=131072, mtp=2)
rows = {'Nano': (nano, 8192, [(901, 39936, 'GB300 MXFP8')]),
        'Super': (superm, 8192, [(831, 9856, 'GB300 MXFP8'), (864, 10240, 'GB300 NVFP4'), (600, 7040, 'GB200 MXFP8'), (610, 7168, 'GB200 NVFP4')]),
        'Ultra': (ultra, 8192, [(1281, 3552, 'GB300 MXFP8'), (923, 2528, 'GB200 MXFP8')])}
for name, (m, s, pub) in rows.items():
    c, t, per = per_token(m, s)
    tot = sum(t.values())
    print(f"== {name}: main pattern len {len(m['pattern'].split('/')[0])}, counts incl MTP {c}")
    print("  per-layer fwd FLOPs/token:", {k: f"{v/1e6:.2f}M" for k, v in per.items()})
    for k, v in t.items():
        print(f"  {k:11s} {v/1e9:8.3f} GF/token ({100*v/tot:5.1f}%)")
    print(f"  TOTAL      {tot/1e9:8.3f} GF/token (fwd+bwd, x3)")
    for tf, tok, lab in pub:
        print(f"  published {lab}: {tf} TFLOPS / {tok} tok/s = {tf*1e12/tok/1e9:.3f} GF/token; ratio to formula {tf*1e12/tok/tot:.4f}")
