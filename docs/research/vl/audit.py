import json,re,collections
d=json.load(open('/work/main/importer/recipes/megatron-bridge.json'))
TAGS=['v0.3.0','v0.3.1','v0.4.0','v0.4.2','v0.5.0','v0.5.1','v0.6.0']
LAYERS={'qwen3_vl 235b_a22b':94,'qwen3_vl 30b_a3b':48,'qwen35_vl 35b_a3b':40,'qwen35_vl 122b_a10b':48,'qwen35_vl 397b_a17b':60}
DEEP={'qwen3_vl':3,'qwen35_vl':0}
rows=[];summary=collections.Counter();per=collections.defaultdict(collections.Counter)
for t in d['tags']:
    tag=t['tag']
    if tag not in TAGS: continue
    for k,v0 in t['configs'].items():
        if v0.get('family')!='qwen_vl': continue
        v={**t['defaults'],**v0}
        fam='qwen35_vl' if k.startswith('QWEN35') else 'qwen3_vl'
        size=re.match(r'QWEN35?_VL_(\w+?)_PRETRAIN',k).group(1).lower()
        gpu=k.split('_CONFIG_')[1].split('_')[0].lower()
        m=f'{fam} {size}'; L=LAYERS[m]
        pp=v['pipeline_model_parallel_size']; vp=v['virtual_pipeline_model_parallel_size'] or 1
        a2a=bool(v.get('moe_a2a_overlap'))
        probs=[]
        if a2a: probs.append('a2a')  # Qwen3VLModel has no build_schedule_plan
        # pipeline split
        account = (fam=='qwen3_vl' and size=='235b_a22b' and tag in ('v0.3.0','v0.3.1'))
        uneven = (fam=='qwen3_vl' and size=='235b_a22b' and tag not in ('v0.3.0','v0.3.1','v0.4.0') and gpu in ('gb200','b200'))
        first_chunk=None
        if pp>1:
            if uneven:
                first=10; rest=(L-10-12); ok = rest % (pp-2)==0
                if vp>1 and first%vp: ok=False
                first_chunk=first//vp
            else:
                units=L+(2 if account else 0)
                ok = units%pp==0 and (units//pp)%vp==0
                if ok: first_chunk=units//pp//vp-(1 if account else 0)
            if not ok: probs.append('split')
        else:
            first_chunk=L
        if first_chunk is not None and DEEP[fam] and first_chunk<DEEP[fam]: probs.append('deepstack')
        frozen = fam=='qwen3_vl' and tag not in ('v0.3.0','v0.3.1')
        rows.append((tag,m,gpu,k,pp,vp,a2a,probs,frozen))
        key='ok' if not probs else '+'.join(probs)
        summary[key]+=1; per[(tag,fam)][key]+=1
print(summary)
for kk,c in sorted(per.items()): print(kk,dict(c))
ok=[r for r in rows if not r[7]]
print('OK total',len(ok),'OK qwen3_vl v0.3.x',sum(1 for r in ok if r[1].startswith('qwen3_vl') and r[0] in('v0.3.0','v0.3.1')),'OK qwen3_vl frozen',sum(1 for r in ok if r[8]))
for r in rows:
    if r[0] in ('v0.3.0','v0.5.1','v0.6.0'): print(r[0],r[1],r[2],r[3].split('_CONFIG_')[1],'pp',r[4],'vp',r[5],'a2a',r[6],r[7])
print('\nGROUPED')
g=collections.OrderedDict()
for r in rows:
    tag,m,gpu,k,pp,vp,a2a,probs,frozen=r
    key=(m,gpu,pp,vp,a2a,tuple(probs),frozen)
    g.setdefault(key,[]).append((tag,k.split('_CONFIG_')[1].split('_',1)[1]))
for key,v in g.items():
    m,gpu,pp,vp,a2a,probs,frozen=key
    tags=sorted(set(t for t,_ in v)); dts=sorted(set(d for _,d in v))
    print(f"| {m} {gpu} | PP{pp} VP{vp} | {'a2a' if a2a else '-'} | {','.join(probs) or 'ok'} | {'LM+ViT frozen' if frozen else 'trained'} | {' '.join(tags)} | {'/'.join(dts)} | {len(v)} |")
