#!/usr/bin/env python3
"""Replay of the Megatron-Bridge importer (importer/import_bridge.cpp query(), bridge_perf_recipe.cpp build(),
bridge_overrides.cpp post(), bridge_scenario.cpp finish(); simplified: only -m -mr/-s -g -c -ng --task at each
config's own GPU count, default --data mock, no Hydra or other launcher flags) with the llama family of
importer/recipes/megatron-bridge-families.json extended by docs/research/finetune/sft-family-additions.json, over every
Llama fine-tuning workload config of importer/recipes/megatron-bridge.json (and the GLM SFT ones, to show their
refusal). It applies the importer change proposed in docs/research/finetune/sft-import-plan.md section 2: task sft accepted with mock
data from v0.3.0, refused at v0.2.x (SQuAD packed) and for lora/peft.
Output: /dev/stdout. Nothing is built or run but this script."""
import collections, copy, json, re

FAM = json.load(open('importer/recipes/megatron-bridge-families.json'))
TAB = json.load(open('importer/recipes/megatron-bridge.json'))
ADD = json.load(open('docs/research/finetune/sft-family-additions.json'))
fam = copy.deepcopy(FAM)
F = [f for f in fam['families'] if f['family'] == 'llama'][0]
F['rules'] += ADD['rules']
for i in ADD['edits']['not_modeled_set_task']['indices_in_llama_not_modeled']:
    F['not_modeled'][i]['task'] = 'pretrain'
F['not_modeled'] += ADD['not_modeled']

REL = {'v0.2.0': '25.11', 'v0.3.0': '26.02', 'v0.3.1': '26.02.01', 'v0.4.0': '26.04', 'v0.4.2': '26.04.01',
       'v0.5.0': '26.06', 'v0.5.1': '26.06.01', 'v0.6.0': '26.08'}  # config/releases.cpp; v0.2.1/2/v0.4.1: no release
DT = {'BF16': 'bf16', 'FP8_CS': 'fp8_cs', 'FP8_MX': 'fp8_mx', 'FP8_SC': 'fp8_sc', 'NVFP4': 'nvfp4'}
MODEL = {'llama3_70b': dict(layers=80, heads=64, kv=8), 'llama3_8b': dict(layers=32, heads=32, kv=8)}
# Published 26.06 rows (Megatron-Bridge v0.5.0 docs/performance-summary.md:115-119): (gpu, dtype) -> tokens/s/GPU, TFLOPS/GPU
PUBLISHED = {('gb300', 'fp8_cs'): (4819, 2083), ('gb300', 'fp8_mx'): (4312, 1877), ('gb200', 'fp8_cs'): (3864, 1671),
             ('gb200', 'fp8_mx'): (3593, 1553), ('h100', 'fp8_cs'): (1638, 710)}


def applies(r, q):
    for k, key in (('recipes', 'recipe'), ('tags', 'tag'), ('gpu', 'gpu'), ('dtype', 'dtype'), ('configs', 'config')):
        if k in r and q[key] not in r[k]:
            return False
    if 'variant' in r and q['variant'] not in r['variant']:
        return False
    if 'task' in r and r['task'] != q['task']:  # import_bridge.cpp:49, a string compare
        return False
    return True


def run(q, s):
    L = [l for l in fam['launcher'] if q['tag'] in l['tags']][0]
    b = {}

    def st(k, v):
        if v is None:
            b.pop(k, None)
        else:
            b[k] = v

    def dp():
        return q['gpus'] // (b.get('parallelism.tp', 1) * b.get('parallelism.pp', 1) * b.get('parallelism.cp', 1))

    def when(r):
        for k, v in r.get('when', {}).items():
            if k == 'tp_gt_1':
                h = b.get('parallelism.tp', 1) > 1
            elif k == 'dp_gt_1':
                h = dp() > 1
            else:
                raise SystemExit('unknown when ' + k)
            if h != v:
                return False
        return True

    def apply(rules, stage):
        for r in rules:
            if r.get('stage', 'recipe') == stage and applies(r, q) and when(r):
                for k, v in r['set'].items():
                    st(k, v)

    err = []
    for stage in L['order']:
        if stage == 'recipe':
            apply(fam['defaults'], 'recipe')
            apply(fam['precision'], 'recipe')
            apply(F['rules'], 'recipe')
        elif stage == 'table':
            n = lambda k, d=1: d if s.get(k) is None else s[k]
            st('parallelism.tp', n('tensor_model_parallel_size'))
            st('parallelism.sequence_parallel', n('tensor_model_parallel_size') > 1)
            st('parallelism.pp', n('pipeline_model_parallel_size'))
            st('parallelism.cp', n('context_parallel_size'))
            st('parallelism.vpp', n('virtual_pipeline_model_parallel_size'))
            st('parallelism.ep', n('expert_model_parallel_size'))
            st('bridge.etp', s.get('expert_tensor_parallel_size'))
            st('training.global_batch_size', n('global_batch_size'))
            st('training.micro_batch_size', n('micro_batch_size'))
            sc = s.get('cuda_graph_scope')
            sc = [sc] if isinstance(sc, str) else sc
            if isinstance(s.get('cuda_graph_impl'), str):
                st('bridge.cuda_graph_impl', s['cuda_graph_impl'])
            if isinstance(sc, list):
                st('bridge.cuda_graph_scope', sc)
            for k in ('cpu_offloading_num_layers', 'recompute_num_layers', 'recompute_modules', 'te_precision_config_file'):
                if s.get(k) is not None:
                    err.append('importer: table field %s %s' % (k, s[k]))
            if s.get('use_megatron_fsdp'):
                err.append('importer: FSDP')
            if s.get('fp8_dot_product_attention') is True:
                st('framework.fp8_dot_product_attention', True)
            if s.get('peft') not in (None, 'none'):
                err.append('importer (proposed table() check): peft %s' % s['peft'])
            if L['generic_dispatcher']:
                st('framework.dispatcher', 'alltoall')
            apply(F['rules'], 'after_table')
        elif stage == 'post':
            exact = L.get('post_when', 'always') == 'not_exact_gpus'  # own GPU count here
            if q['dtype'] == 'bf16':
                st('bridge.precision_aware_optimizer', True)
            if not exact:
                pp, vp = b.get('parallelism.pp', 1), b.get('parallelism.vpp', 1)
                if dp() > 1 and pp > 1 and vp > 1 and q['dtype'] not in L['opgwos_excluded_dtypes']:
                    if b.get('framework.overlap_param_gather', True):
                        st('framework.overlap_param_gather_with_optimizer_step', True)
            apply(F['rules'], 'post')
    impl = b.get('bridge.cuda_graph_impl', 'none')
    scope = b.get('bridge.cuda_graph_scope', [])
    if impl == 'none':
        st('framework.cuda_graph_scope', [])
    elif impl == 'transformer_engine':
        if not scope or 'full_iteration' in scope:
            err.append('importer: TE scopes %s' % scope)
        st('framework.cuda_graph_scope', scope)
    else:
        err.append('importer: impl ' + impl)
    apply(F['rules'], 'final')
    st('parallelism.etp', b.get('bridge.etp') or b.get('parallelism.tp', 1))
    if b.get('framework.tp_comm_overlap') and (b.get('parallelism.tp', 1) < 2 or not b.get('parallelism.sequence_parallel')):
        st('framework.tp_comm_overlap', False)
    if 'bridge.grad_reduce_in_fp32' in b:
        d = 'fp32' if b['bridge.grad_reduce_in_fp32'] else 'bf16'
        st('framework.grad_reduce_dtype', d)
        st('framework.main_grads_dtype', d)
    st('routing.balance', 'forced')
    for key in ('framework.dispatcher', 'framework.dispatcher_sms', 'framework.moe_a2a_overlap',
                'framework.delay_wgrad_compute', 'parallelism.ep', 'parallelism.etp', 'routing.balance'):
        b.pop(key, None)  # llama: moe False
    out = {k: v for k, v in b.items() if not k.startswith('bridge.')}
    # loader checks (config/load_scenario_*.cpp, simplified) and Megatron's own
    m = MODEL[q['recipe']]
    tp, pp, vp = out.get('parallelism.tp', 1), out.get('parallelism.pp', 1), out.get('parallelism.vpp', 1)
    d = q['gpus'] // (tp * pp * out.get('parallelism.cp', 1))
    gbs, mbs = out['training.global_batch_size'], out['training.micro_batch_size']
    if gbs % (mbs * d):
        err.append('loader: GBS %d not divisible by MBS x DP %d' % (gbs, d))
    if m['heads'] % tp or (m['kv'] % tp and tp % m['kv']):
        err.append('loader: TP %d vs attention heads' % tp)
    if m['layers'] % (pp * vp):
        err.append('loader: %d layers over PP %d x VP %d' % (m['layers'], pp, vp))
    if vp > 1 and (gbs // (mbs * d)) % pp:
        err.append('Megatron: interleaved schedule with %d micro-batches, PP %d' % (gbs // (mbs * d), pp))
    dist = out.get('framework.distributed_optimizer', True)
    opg = out.get('framework.overlap_param_gather', dist)
    if opg and not dist:
        err.append('loader: overlap_param_gather without distributed optimizer')
    if out.get('framework.overlap_param_gather_with_optimizer_step') and (not dist or not opg or vp < 2):
        err.append('loader: opgwos needs distributed optimizer, overlap_param_gather, vpp > 1')
    notes = [n['setting'][:60] for n in F['not_modeled'] if applies(n, q)]
    return out, err, d, notes


def parse(key):
    """(recipe, task, gpu, dtype, variant) of a selectable Llama/GLM fine-tuning config name, else None."""
    m = re.match(r'(LLAMA3_70B|LLAMA3_8B)_([A-Z0-9]+)_(SFT|LORA)_(BF16|FP8_CS|FP8_MX)_BASE_CONFIG$', key)
    if m:  # v0.2.x
        return m.group(1).lower(), m.group(3).lower(), m.group(2).lower(), DT[m.group(4)], ''
    m = re.match(r'(LLAMA3_70B|LLAMA3_8B|GLM51|GLM52)_(SFT|LORA|PEFT)_CONFIG_([A-Z0-9]+)_(BF16|FP8_CS|FP8_MX)'
                 r'(?:_(V\d))?(?:_(\d+)GPU)?$', key)
    if m:
        return m.group(1).lower(), m.group(2).lower(), m.group(3).lower(), DT[m.group(4)], (m.group(5) or '').lower()
    return None


def main():
    lines, ok, refused = [], collections.Counter(), collections.Counter()
    per = collections.defaultdict(list)
    for t in TAB['tags']:
        old = t.get('naming') == 'base_config'
        for key, c in t.get('configs', {}).items():
            if key.startswith('_'):
                continue
            p = parse(key)
            if not p:
                continue
            recipe, task, gpu, dtype, variant = p
            s = dict(t['defaults'])
            s.update({k: v for k, v in c.items() if k != 'family'})
            tag = t['tag']
            rel = REL.get(tag, 'no release maps to it')
            # proposed query() refusals (docs/research/finetune/sft-import-plan.md 3)
            why = None
            if task in ('lora', 'peft'):
                why = 'LoRA/PEFT: frozen base weights, adapters, optimizer over adapters only: not modeled'
            elif old:
                unpacked = tag in ('v0.2.1', 'v0.2.2') and gpu == 'gb300'  # packed_sequence=False there
                why = ('v0.2.x fine-tuning recipes train on SQuAD (no --data flag): %s' % (
                    'unpacked, variable-length micro-batches' if unpacked else
                    'packed into %s-token packs, pack statistics not modeled' % (
                        '16384' if (recipe == 'llama3_8b' and gpu == 'gb200') else '4096')))
            elif recipe not in MODEL:
                why = '%s: family not tabulated (glm_moe_dsa)' % recipe
            if why:
                lines.append('%s %s [%s]: REFUSED (%s)' % (tag, key, rel, why))
                refused[(tag, task, why.split(':')[0])] += 1
                continue
            q = {'tag': tag, 'recipe': recipe, 'gpu': gpu, 'dtype': dtype, 'variant': variant, 'config': key,
                 'gpus': s['num_gpus'], 'task': 'sft'}
            out, err, d, notes = run(q, s)
            name = 'bridge-%s-sft-%s-%s-%s' % (recipe, gpu, dtype, REL.get(tag, tag))
            pub = ''
            if tag == 'v0.5.0' and recipe == 'llama3_70b' and (gpu, dtype) in PUBLISHED:
                pub = '  PUBLISHED 26.06: %d tok/s/GPU, %d TFLOPS/GPU (Megatron-Bridge v0.5.0 docs/performance-summary.md:115-119)' % PUBLISHED[(gpu, dtype)]
            lines.append('%s %s [%s] %s DP%d%s' % (tag, key, rel, name, d, pub))
            lines.append('   ' + json.dumps(dict(sorted(out.items())), separators=(',', ':')))
            lines.append('   not modeled: ' + ' | '.join(notes))
            if err:
                lines.append('   !! ' + '; '.join(err))
            else:
                ok[tag] += 1
                per[tag].append('%s %s %s' % (recipe, gpu, dtype))
    lines.append('')
    lines.append('== summary ==')
    for tag in sorted(ok):
        lines.append('%s (%s): %d SFT configs import: %s' % (tag, REL.get(tag, 'no release'), ok[tag],
                                                            ', '.join(sorted(per[tag]))))
    lines.append('total importing: %d (%d at tags a release maps to)' % (
        sum(ok.values()), sum(v for k, v in ok.items() if k in REL)))
    for k, v in sorted(refused.items()):
        lines.append('refused %s %s: %d (%s)' % (k[0], k[1], v, k[2]))
    open('/dev/stdout', 'w').write('\n'.join(lines) + '\n')
    print('\n'.join(lines[-30:]))


main()
