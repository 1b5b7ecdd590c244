"""Derived check: Megatron-Bridge's FLOPs formulas for Llama 3 70B against the published
SFT/LoRA rows (Megatron-Bridge docs/performance-summary.md v0.5.0:109-131 = v0.6.0 archive :169-191).
Model shapes: meta-llama/Meta-Llama-3-70B config (h 8192, 80 layers, 64 heads, 8 KV groups,
FFN 28672, vocab 128256)."""
h, L, n, g, ffn, V, d = 8192, 80, 64, 8, 28672, 128256, 128
q, kv = n * d, g * d

def standard(s):  # flop_utils.py transformer_flops, dense GQA path (v0.5.0 ~:560-660), per token
    proj = L * (h * (q + 2 * kv) + q * h)
    mlp = L * 3 * h * ffn
    core = L * q * s / 2 * 2          # causal: q * s/2 * 2 (QK^T and AV)
    return 6 * (proj + mlp + core) + 6 * h * V

def lora_frozen_per_token():  # flop_utils.py v0.5.0:388-393 (x 2/3 at :396)
    return L * h**2 * (12 + 12 * g / n + 18 * ffn / h + 6 * V / (L * h))

def lora_unfrozen_per_row(sum_s2):  # v0.5.0:394: n_layers * hs^2 * 12 * avg_seqlen2 / hs
    return L * h * 12 * sum_s2

print(f"standard formula, s=4096: {standard(4096)/1e9:.1f} GF/token")
print(f"LoRA frozen part: {lora_frozen_per_token()/1e9:.1f} GF/token; x2/3 = {lora_frozen_per_token()*2/3/1e9:.1f}")
rows = [  # (task, system, precision, tok/s/GPU, TFLOPS/GPU)  Megatron-Bridge v0.5.0 docs/performance-summary.md:115-119,127-131
    ("SFT", "GB300", "FP8", 4819, 2083), ("SFT", "GB300", "MXFP8", 4312, 1877),
    ("SFT", "GB200", "FP8", 3864, 1671), ("SFT", "GB200", "MXFP8", 3593, 1553),
    ("SFT", "H100", "FP8", 1638, 710),
    ("LoRA", "GB300", "FP8", 7481, 2086), ("LoRA", "GB300", "MXFP8", 7447, 2072),
    ("LoRA", "GB200", "FP8", 6206, 1731), ("LoRA", "GB200", "MXFP8", 5958, 1663),
    ("LoRA", "H100", "FP8", 2643, 735)]
for t, sysname, p, tok, tf in rows:
    print(f"{t:4} {sysname:5} {p:5}: {tf*1e12/tok/1e9:6.1f} GF per reported token")
# one sub-sequence length s_eff with packs 100% full: attention adds 12 L h s_eff per token
for s_eff in (128, 256, 512, 1024):
    print(f"LoRA formula, full packs, sub-sequence {s_eff}: {(lora_frozen_per_token()*2/3 + L*h*12*s_eff)/1e9:.1f} GF/token")
