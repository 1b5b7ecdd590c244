#!/usr/bin/env python3
"""Qwen3-Next-80B-A3B: Megatron / Megatron-Bridge FLOPs-per-token formulas, every version that
published rows were computed with, and the check against those rows.

All formulas are re-implemented here in my own words from (file:line at commit):
  MLM_cd4   NVIDIA/Megatron-LM cd4afffa648426a959dc7cb1e24b5ce7d0c3ff54 megatron/training/training.py
            :390-902 (transformer_flops :549-846; GDN term :712-777; gate :684; linear_attention
            pattern over num_layers = decoder + MTP :586,714-719)
  MLM_bbc   Megatron-LM bbc762d5 (dev, 2025-10-15; the code of the ModelZoo row)
            megatron/training/training.py :300-476 (GDN term, no attention gate)
  MB_030    Megatron-Bridge v0.3.0 src/megatron/bridge/training/utils/flop_utils.py :176-359
            (no GDN term, no gate: every layer is plain GQA attention)
  MB_041    Megatron-Bridge v0.4.1 flop_utils.py :385-440 (GDN term, pattern over decoder+MTP
            layers, no gate)
  MB_060    Megatron-Bridge v0.6.0 flop_utils.py :753-1184 (gate :1021; GDN term :1081-1135;
            MTP layers take the last decoder layer's kind :1105-1109)
Nothing here is measured; every output is [derived].
"""
from dataclasses import dataclass, replace

GF = 1e9


@dataclass(frozen=True)
class Cfg:
    # HF config.json of Qwen/Qwen3-Next-80B-A3B-Instruct [2nd-hand: copied in MB v0.6.0
    # tests/unit_tests/models/qwen/test_qwen3_next_bridge.py:36-75]
    h: int = 2048
    layers: int = 48
    heads: int = 16          # num_attention_heads
    groups: int = 2          # num_key_value_heads
    kv_ch: int = 256         # head_dim
    vocab: int = 151936      # = 128 * 1187, so padding to 128 (or 1187*TP) leaves it unchanged
    experts: int = 512
    topk: int = 10
    moe_ffn: int = 512       # moe_intermediate_size
    shared_ffn: int = 512    # shared_expert_intermediate_size
    dense_ffn: int = 5120    # intermediate_size (unused: every layer is MoE)
    full_attn_interval: int = 4
    conv: int = 4            # linear_conv_kernel_dim
    k_dim: int = 128         # linear_key_head_dim
    v_dim: int = 128         # linear_value_head_dim
    k_heads: int = 16        # linear_num_key_heads
    v_heads: int = 32        # linear_num_value_heads
    mtp: int = 1             # recipe: mtp_num_layers = 1 (MB recipes/qwen/h100/qwen3_next.py:63)
    swiglu: bool = True
    gate: bool = True        # attention_output_gate (MB qwen3_next_bridge.py:81)


def la_pattern(c: Cfg, n: int):
    """1 = linear attention (GDN), 0 = full attention; int freq N -> every N-th layer full."""
    return [0 if (i + 1) % c.full_attn_interval == 0 else 1 for i in range(n)]


def terms(c: Cfg, s: int, variant: str):
    """FLOPs per token (fwd+bwd, x3 included), split by term, for one formula variant."""
    h = c.h
    L = c.layers + c.mtp
    q = c.kv_ch * c.heads
    kv = c.kv_ch * c.groups
    f = 3 if c.swiglu else 2
    mlp = 6 * h * (c.moe_ffn * c.topk * f + c.shared_ffn * f) * L  # every layer + MTP is MoE
    gate = q if (c.gate and variant in ("MLM_cd4", "MB_060")) else 0
    std_proj = 6 * (h * (q + 2 * kv + gate) + q * h)
    std_core = 6 * q * s  # causal: /2 for the mask, x2 for QK^T and PV
    qk = c.k_dim * c.k_heads
    vd = c.v_dim * c.v_heads
    gdn_in = 6 * h * (2 * qk + 2 * vd + 2 * c.v_heads)
    gdn_conv = 6 * c.conv * (2 * qk + vd)
    gdn_rule = 6 * c.v_heads * c.v_dim ** 2 * 4
    gdn_out = 6 * h * vd
    gdn = gdn_in + gdn_conv + gdn_rule + gdn_out
    if variant == "MB_030":
        n_gdn = 0
    elif variant in ("MLM_cd4", "MLM_bbc", "MB_041"):
        n_gdn = sum(la_pattern(c, L))           # pattern over decoder + MTP layers
    elif variant == "MB_060":
        pat = la_pattern(c, c.layers)           # pattern over decoder layers only;
        n_gdn = sum(pat) + pat[-1] * c.mtp      # MTP copies the last decoder layer's kind
    else:
        raise ValueError(variant)
    n_std = L - n_gdn
    mtp_proj = 6 * c.mtp * (3 * h + 2 * h * h)
    logits = 6 * h * c.vocab * (c.mtp + 1)
    t = {
        "routed_moe": 6 * h * c.moe_ffn * c.topk * f * L,
        "shared_exp": 6 * h * c.shared_ffn * f * L,
        "attn_proj": n_std * std_proj,
        "attn_core": n_std * std_core,
        "gdn_in_proj": n_gdn * gdn_in,
        "gdn_conv": n_gdn * gdn_conv,
        "gdn_rule": n_gdn * gdn_rule,
        "gdn_out_proj": n_gdn * gdn_out,
        "mtp_eh_proj": mtp_proj,
        "logits": logits,
    }
    assert abs(t["routed_moe"] + t["shared_exp"] - mlp) < 1
    t["_n_gdn"], t["_n_std"] = n_gdn, n_std
    return t


def total(t):
    return sum(v for k, v in t.items() if not k.startswith("_"))


# Published rows: (label, source, GPUs, tok/s/GPU, TFLOPS/GPU, formula variant, seq the formula
# (and the run) used, seq the tok/s column counts per sample)
ROWS = [
    # MB PR #2492 draft of docs/performance-summary.md, commit d8348845d (2026-02-23), lines
    # 65, 82, 101, 113; the rows were dropped in the next commit df0289c18 and never merged.
    # v0.3.0 perf config sets model.seq_length = 8192 and dataset.sequence_length = 8192 (the
    # MCore field that dataset.seq_length aliases, MB v0.3.0 training/config.py:436-444), so
    # the runs were at 8192 (scripts/performance/configs/qwen/qwen3_llm_pretrain.py:54-55 at
    # v0.3.0) while the table says 4096: TFLOPS / (tok/s) is exactly 2x the per-token formula
    # at 8192, i.e. the tok/s column counted 4096 tokens a sample (a 2x slip in the draft).
    ("26.02 draft GB300 FP8-MX 64 MBS2 EP64", "MB d8348845d:65", 64, 4309, 253, "MB_030", 8192, 4096),
    ("26.02 draft GB200 FP8-MX 64 MBS1 EP64", "MB d8348845d:82", 64, 3160, 186, "MB_030", 8192, 4096),
    ("26.02 draft B200 FP8-MX 64 MBS1 EP64", "MB d8348845d:101", 64, 1534, 90, "MB_030", 8192, 4096),
    ("26.02 draft H100 FP8-CS 128 MBS1 EP128", "MB d8348845d:113", 128, 1186, 70, "MB_030", 8192, 4096),
    # MB PR #3818 draft (26.04.01 container), commits 867af0079..b51904d1e, lines 140-142;
    # removed by 84ff628e5 ("cleanup", 2026-05-15) before merge.
    ("26.04.01 draft GB300 MXFP8 64 MBS4 PP2 VP4 EP32", "MB b51904d1e:142", 64, 11328, 277, "MB_041", 4096, 4096),
    ("26.04.01 draft GB200 MXFP8 64 MBS2 PP2 VP4 EP32", "MB b51904d1e:143", 64, 9856, 241, "MB_041", 4096, 4096),
    ("26.04.01 draft B200 MXFP8 64 MBS1 EP64", "MB b51904d1e:144", 64, 4864, 119, "MB_041", 4096, 4096),
]
# Megatron-MoE-ModelZoo e8650517 best_practice/qwen3/readme.md:20: 128 H100 BF16, seq 4096,
# TP1 EP32 PP4 VPP3 DP32, MBS1 GBS256, 2.2 s/step, 89 TFLOPS/GPU, code dev(bbc762d5).
MODELZOO = dict(gpus=128, gbs=256, seq=4096, step_s=2.2, tflops=89)


def main():
    c = Cfg()
    print("Qwen3-Next-80B-A3B FLOPs per token (fwd+bwd), GF/token")
    for s in (4096, 8192):
        print(f"\n-- seq {s}")
        hdr = ["variant", "GDN/std", "moe", "shared", "attn_proj", "attn_core", "gdn_gemm",
               "gdn_conv", "gdn_rule", "mtp_eh", "logits", "TOTAL"]
        print(" ".join(f"{x:>10}" for x in hdr))
        for v in ("MB_030", "MB_041", "MLM_bbc", "MLM_cd4", "MB_060"):
            t = terms(c, s, v)
            row = [v, f"{t['_n_gdn']}/{t['_n_std']}", t["routed_moe"], t["shared_exp"],
                   t["attn_proj"], t["attn_core"], t["gdn_in_proj"] + t["gdn_out_proj"],
                   t["gdn_conv"], t["gdn_rule"], t["mtp_eh_proj"], t["logits"], total(t)]
            print(" ".join(f"{x:>10}" if isinstance(x, str) else f"{x / GF:10.4f}" for x in row))

    # The true executed GEMM/attention FLOPs (what a simulator should price), per token, s=4096:
    # the MTP layer is built as full gated attention + MoE (MB gpt_provider.py:343-376 takes the
    # last decoder layer spec, layer 48 = full attention), so MB_060's layer split is the real one.
    print("\nPublished rows: TFLOPS / (tok/s) = GF per data token, against the formula")
    for label, src, gpus, tok, tf, v, s_formula, s_data in ROWS:
        per_tok = total(terms(c, s_formula, v))
        # Bridge reports TFLOPS = num_floating_point_operations(batch = GBS samples of
        # model.seq_length tokens) / step time; tok/s counts GBS * data seq tokens.
        expect = per_tok * s_formula / s_data
        got = tf * 1e12 / tok
        print(f"  {label:50s} {got / GF:7.3f} GF/tok  formula {v}@{s_formula}"
              f" (x{s_formula / s_data:.0f}) {expect / GF:7.3f}  ratio {got / expect:.4f}   [{src}]")
        # rounding bounds: TFLOPS to the integer (+-0.5), tok/s to 32 in 26.04.01
        lo = (tf - 0.5) * 1e12 / (tok + (16 if tok % 32 == 0 else 0.5))
        hi = (tf + 0.5) * 1e12 / (tok - (16 if tok % 32 == 0 else 0.5))
        print(f"  {'':50s} rounding band {lo / GF:7.3f} .. {hi / GF:7.3f}")
    mz = MODELZOO
    tok = mz["gbs"] * mz["seq"] / mz["step_s"] / mz["gpus"]
    got = mz["tflops"] * 1e12 / tok
    for v in ("MLM_bbc", "MLM_cd4", "MB_060"):
        e = total(terms(c, 4096, v))
        print(f"  ModelZoo H100 BF16 128 (2.2 s, 89 TF; {tok:.0f} tok/s/GPU) {got / GF:7.3f} GF/tok"
              f"  vs {v} {e / GF:7.3f}  ratio {got / e:.4f}")
    # step time the ModelZoo row implies with the MLM_bbc formula
    e = total(terms(c, 4096, "MLM_bbc"))
    step = mz["gbs"] * mz["seq"] * e / (mz["tflops"] * 1e12 * mz["gpus"])
    print(f"  ModelZoo: 89 TF with MLM_bbc implies a {step:.3f} s step (published 2.2 s, 2 digits)")


if __name__ == "__main__":
    main()
