import json,subprocess,re,collections
D='/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo'
d=json.load(open('/work/main/importer/recipes/megatron-bridge.json'))
TAGS=['v0.2.0','v0.3.0','v0.3.1','v0.4.0','v0.4.2','v0.5.0','v0.5.1','v0.6.0']
def show(tag,path):
    try: return subprocess.run(['git','-C',D,'show',f'{tag}:{path}'],capture_output=True,text=True,check=True).stdout
    except subprocess.CalledProcessError: return None
out=[]
counts=collections.OrderedDict()
total=0
for t in d['tags']:
    tag=t['tag']
    if tag not in TAGS: continue
    vl={k:v for k,v in t['configs'].items() if v.get('family')=='qwen_vl'}
    total+=len(vl)
    c=collections.Counter()
    for k in vl:
        fam='qwen35_vl' if k.startswith('QWEN35') else 'qwen3_vl'
        size=re.match(r'QWEN35?_VL_(\w+?)_PRETRAIN',k).group(1).lower()
        c[(fam,size)]+=1
    counts[tag]=(len(vl),c)
    if not vl: continue
    # source lines
    srcs={}
    if tag!='v0.6.0':
        for f in ['qwen3_vl_workload_base_configs.py','qwen35_vl_workload_base_configs.py']:
            s=show(tag,'scripts/performance/configs/qwen_vl/'+f)
            if s:
                for i,l in enumerate(s.splitlines(),1):
                    m=re.match(r'^(QWEN\w+)\s*=',l)
                    if m: srcs[m.group(1)]=f'{f}:{i}'
    else:
        fn=t['recipe_functions']
        for k in vl:
            f=fn[k]; gpu=k.split('_CONFIG_')[1].split('_')[0].lower()
            fam='qwen35_vl' if k.startswith('QWEN35') else 'qwen3_vl'
            p=f'src/megatron/bridge/perf_recipes/qwen_vl/{gpu}/{fam}.py'
            s=show(tag,p)
            if s:
                for i,l in enumerate(s.splitlines(),1):
                    if l.startswith(f'def {f}('): srcs[k]=f'perf_recipes/qwen_vl/{gpu}/{fam}.py:{i}'
    out.append(f'\n#### {tag} ({len(vl)} configs)\n')
    out.append('| config | N | TP | PP | VP | CP | EP | ETP | GBS | MBS | CG impl / scope | dispatcher | a2a ovl | recompute | source |')
    out.append('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    dflt=t['defaults']
    for k in sorted(vl):
        v={**dflt,**vl[k]}
        name=k.replace('_PRETRAIN_CONFIG_',' ').replace('QWEN35_VL_','qwen35_vl ').replace('QWEN3_VL_','qwen3_vl ').lower()
        cg=v.get('cuda_graph_impl') or '-'
        sc=v.get('cuda_graph_scope')
        cgs=f"{cg}" + (f" {'/'.join(sc)}" if sc else '')
        disp=v.get('moe_flex_dispatcher_backend') or '(a2a)'
        rec=v.get('recompute_modules') or v.get('recompute_num_layers') or '-'
        out.append(f"| {name} | {v['num_gpus']} | {v['tensor_model_parallel_size']} | {v['pipeline_model_parallel_size']} | {v['virtual_pipeline_model_parallel_size'] or '-'} | {v['context_parallel_size']} | {v['expert_model_parallel_size']} | {v['expert_tensor_parallel_size']} | {v['global_batch_size']} | {v['micro_batch_size']} | {cgs} | {disp} | {'Y' if v.get('moe_a2a_overlap') else '-'} | {rec} | {srcs.get(k, srcs.get(k,'?'))} |")
print('\n'.join(out))
print('\nCOUNTS')
for tag,(n,c) in counts.items():
    print(tag,n,dict(c))
print('TOTAL',total)
