# Markdown rows for inventory.md: every LoRA/PEFT workload config of moesim's Bridge table
# (importer/recipes/megatron-bridge.json, read-only) with what the drafted LoRA rules and the
# generic launcher steps give it. Replays the rules in lora-family-additions.json by hand
# (not the C++ importer). Run: python3 docs/research/finetune/lora_inventory_table.py
import json, math
d = json.load(open('/work/main/importer/recipes/megatron-bridge.json'))
L, P_ALL = 80, 70.55e9   # Llama3-70B decoder layers; parameters incl. untied 128256x8192 embedding/output
OPGWOS_V060 = {"LLAMA3_70B_PEFT_CONFIG_GB200_BF16", "LLAMA3_70B_PEFT_CONFIG_GB200_FP8_CS",
               "LLAMA3_70B_PEFT_CONFIG_GB300_FP8_CS", "LLAMA3_70B_PEFT_CONFIG_B200_FP8_CS",
               "LLAMA3_70B_PEFT_CONFIG_H100_BF16"}
for t in d['tags']:
    tag = t['tag']
    dfl = dict(t['defaults']); dfl.update(t.get('new_field_defaults', {}))
    rows = []
    if tag.startswith('v0.2'):
        names = sorted(n for n in t['configs'] if ('_LORA_' in n or '_PEFT_' in n))
        print(f"\n#### {tag}: {', '.join(names)} (refused: SQuAD packed hard-wired, no --data)")
        continue
    for name, c in sorted(t['configs'].items()):
        if ('_LORA_' not in name and '_PEFT_' not in name) or name.startswith('_'):
            continue
        if name.endswith('_BASE_CONFIG') and name.count('_') <= 5:   # v0.2.x generic base (no dtype)
            pass
        s = dict(dfl); s.update(c)
        parts = name.split('_')
        gpu = next(p for p in parts if p in ('GB200', 'GB300', 'B200', 'B300', 'H100')).lower()
        dtype = 'bf16' if 'BF16' in name else 'fp8_cs' if 'FP8_CS' in name else 'fp8_mx' if 'FP8_MX' in name else '(none)'
        tp, pp, vp = s['tensor_model_parallel_size'], s['pipeline_model_parallel_size'], s['virtual_pipeline_model_parallel_size']
        cp, ng = s['context_parallel_size'], s['num_gpus']
        dp = ng // (tp * pp * cp)
        gbs, mbs = s['global_batch_size'], s['micro_batch_size']
        nmb = gbs // (mbs * dp)
        vpn = vp or 1
        old = tag.startswith('v0.2')
        seq = (2048 if gpu == 'gb200' and (old or dtype == 'bf16') else 4096)
        graphs = 'none' if s['cuda_graph_impl'] in (None, 'none') else f"{s['cuda_graph_impl']}:{s['cuda_graph_scope']}"
        rec = s['recompute_num_layers']
        lps = math.ceil(L / (pp * vpn))
        if tag == 'v0.6.0':
            opg = name in OPGWOS_V060
        else:
            opg = dp > 1 and pp > 1 and vpn > 1 and dtype not in ('fp8_mx', 'nvfp4')
        flags = []
        if gbs % (mbs * dp): flags.append('GBS%(MBS*DP)!')
        if L % (pp * vpn): flags.append('layers%(PP*VP)!')
        if vpn > 1 and nmb % pp: flags.append('mb%PP!')
        if rec is not None:
            flags.append(f'full recompute {rec}/{lps} layer per virtual stage = every layer; importer refuses today')
        # per-GPU state if priced as full-parameter training (BF16 w + BF16 g + FP32 master+m+v / DP) vs LoRA frozen base
        p = P_ALL / (tp * pp)
        full = p * (2 + 2 + 12 / dp) / 1e9
        lora_w = p * 2 / 1e9   # BF16 base weights (fp8_param may store them narrower: uncertain)
        rows.append(f"| {name} | {gpu} | {dtype} | {ng} | {tp}/{pp}/{vp or '-'}/{dp} | {gbs}/{mbs} ({nmb} mb) | {seq} | {graphs} | {rec if rec is not None else '-'} | "
                    f"{'y' if dp > 1 else 'n'} | {'y' if opg else 'n'} | {'y' if tp > 1 else 'n'} | {full:.0f} / {lora_w:.0f} | {'; '.join(flags) or 'ok'} |")
    if rows:
        print(f"\n#### {tag} ({len(rows)} selectable)\n")
        print("| config | GPU | dtype | GPUs | TP/PP/VP/DP | GBS/MBS (mb per DP rank) | seq | graphs (table) | recompute_num_layers | DDP overlap + 128 MiB buckets | opgwos | tp_comm_overlap | state GB/GPU as full-param / LoRA BF16 base [derived] | load check |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))
