#!/usr/bin/env python3
"""Qwen3-Next-80B-A3B parameter counts as Megatron builds it (MB v0.6.0 Qwen3NextBridge +
MLM cd4afffa modules). All [derived]; shapes from:
  GDN      MLM cd4afffa megatron/core/ssm/gated_delta_net.py:145 (in_proj = 2qk + 2v + 2Hv),
           :168-182 (depthwise conv over 2qk + v channels, no bias), :192-210 (dt_bias, A_log
           per value head), :218-223 (out_norm over the value head dim), :229-242 (out_proj v -> h)
  attention MLM attention.py:1678-1680 (linear_qkv = q + 2kv + q-sized gate), q/k layernorm
           over the head dim (qk_layernorm, MB bridge :64)
  MoE      512 experts (gated: fc1 h -> 2F, fc2 F -> h), router 512 x h, one shared expert
           (gated, 512) with a 1 x h sigmoid gate (MLM moe/shared_experts.py:131-140)
  MTP      one layer (recipe mtp_num_layers = 1): enorm, hnorm, eh_proj 2h -> h, the last decoder
           layer's kind (full attention + MoE), final norm (MB gpt_provider.py:343-376)
"""
h, L, V = 2048, 48, 151936
nq, ng, d = 16, 2, 256
E, k, F, Fs = 512, 10, 512, 512
qk, vd, Hv, conv = 16 * 128, 32 * 128, 32, 4

gdn = h * (2 * qk + 2 * vd + 2 * Hv) + (2 * qk + vd) * conv + 2 * Hv + 128 + vd * h + h  # + input norm
attn = h * (nq * d * 2 + 2 * ng * d) + nq * d * h + 2 * d + h                           # + input norm
expert = h * 2 * F + F * h
moe_common = E * h + (h * 2 * Fs + Fs * h) + h + h                                       # router, shared, gate, pre-norm
moe = E * expert + moe_common
n_gdn, n_attn = 36, 12
decoder = n_gdn * gdn + n_attn * attn + L * moe
emb = V * h
out = V * h
final_norm = h
mtp = 2 * h + 2 * h * h + attn + moe + h
total_no_mtp = decoder + emb + out + final_norm
total = total_no_mtp + mtp
active_moe = k * expert + moe_common
active = n_gdn * gdn + n_attn * attn + L * active_moe + emb + out + final_norm
print(f"GDN layer mixer      {gdn / 1e6:9.3f} M")
print(f"gated attention      {attn / 1e6:9.3f} M")
print(f"one expert           {expert / 1e6:9.3f} M")
print(f"MoE common           {moe_common / 1e6:9.3f} M (router, shared expert, its gate, norm)")
print(f"MoE layer            {moe / 1e6:9.3f} M")
print(f"total (no MTP)       {total_no_mtp:,}  = {total_no_mtp / 1e9:.2f} B")
print(f"total (+1 MTP layer) {total:,}  = {total / 1e9:.2f} B")
print(f"active (no MTP)      {active / 1e9:.3f} B incl. both embeddings; "
      f"{(active - emb) / 1e9:.3f} B without the input embedding")
