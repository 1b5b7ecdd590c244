# Parameter counts (derived) for Nemotron 3 models from the Megatron module shapes
# (mamba_mixer.py in_proj/conv1d/dt_bias/A_log/D/norm/out_proj; MoE latent projections; attention GQA).
import importlib.util, sys
spec = importlib.util.spec_from_file_location("f", __import__("os").path.join(__import__("os").path.dirname(__file__), "flops.py"))
def counts(p):
    main, *mtp = p.split('/')
    return {k: main.count(k) for k in 'M*E-'}, (mtp[0] if mtp else '')
def layer_params(m):
    h=m['h']; N=m['state']; G=m['groups']; H=m['mheads']; P=64; din=H*P
    mamba = h + h*(2*din+2*G*N+H) + (din+2*G*N)*4 + (din+2*G*N) + 3*H + din + din*h
    n=m['heads']; g=m['kv']; d=m['kv_ch']
    attn = h + h*(n*d+2*g*d) + n*d*h
    E=m['E']; F=m['moe_ffn']; Fs=m['shared']; L=m.get('latent'); k=m['topk']
    d_exp = L if L else h
    expert = 2*d_exp*F              # fc1 + fc2, non-gated squared ReLU
    lat = 2*h*L if L else 0
    moe_common = h + E*h + E + lat + 2*h*Fs
    return mamba, attn, expert, moe_common
def count(m, label):
    c, mtp = counts(m['pattern'])
    mamba, attn, expert, moe_common = layer_params(m)
    h=m['h']; V=m['V']; E=m['E']; k=m['topk']
    emb = V*h; out = V*h; final = h
    body = c['M']*mamba + c['*']*attn + c['E']*(moe_common + E*expert)
    body_active = c['M']*mamba + c['*']*attn + c['E']*(moe_common + k*expert)
    mtp_tot = mtp_act = 0
    if mtp:  # one shared MTP block (mtp_use_repeated_layer) = pattern layers + eh_proj(2h->h) + enorm,hnorm,final norm
        blk = sum({'M':mamba,'*':attn,'E':moe_common+E*expert}[x] for x in mtp)
        blk_a = sum({'M':mamba,'*':attn,'E':moe_common+k*expert}[x] for x in mtp)
        mtp_tot = blk + 2*h*h + 3*h; mtp_act = blk_a + 2*h*h + 3*h
    tot = emb+out+final+body+mtp_tot; act = emb+out+final+body_active+mtp_act
    print(f"{label}: per-layer mamba {mamba/1e6:.1f}M attn {attn/1e6:.1f}M expert {expert/1e6:.2f}M moe_common {moe_common/1e6:.1f}M")
    print(f"   total {tot/1e9:.3f}B (w/o MTP {(tot-mtp_tot)/1e9:.3f}B), active {act/1e9:.3f}B (w/o MTP {(act-mtp_act)/1e9:.3f}B; w/o embedding {(act-mtp_act-emb)/1e9:.3f}B)")
nano = dict(h=2688, pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", state=128, groups=8, mheads=64,
            heads=32, kv=2, kv_ch=128, E=128, moe_ffn=1856, topk=6, shared=3712, V=131072)
sup = dict(h=4096, pattern="MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME/*E",
           state=128, groups=8, mheads=128, heads=32, kv=2, kv_ch=128, E=512, moe_ffn=2688, topk=22, shared=5376, latent=1024, V=131072)
ult = dict(h=8192, pattern="MEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME/*E",
           state=128, groups=8, mheads=256, heads=64, kv=2, kv_ch=128, E=512, moe_ffn=5120, topk=22, shared=10240, latent=2048, V=131072)
for m,l in [(nano,'Nano'),(sup,'Super'),(ult,'Ultra (MTP pattern *E assumed)')]: count(m,l)
