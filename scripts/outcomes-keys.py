#!/usr/bin/env python3
"""Which keys tell a fetch miss coming (issue 46): replays the outcomes of
`scripts/outcomes-data.py` (target/bench-data/outcomes/published.jsonl) in two waves (20
shuffles): wave 1's outcomes counted under a key, wave 2's candidates held by a rule over the
counts. Prints, per key and rule, the share of wave 2's 404s cut and of its real (2xx) pages
held. docs/crawl-policy.md ("Fetch outcomes") has the table this chose the rule from.

    scripts/outcomes-data.py > target/bench-data/outcomes/published.jsonl
    scripts/outcomes-keys.py
"""
import json, random, collections, sys
import pathlib
ROOT = pathlib.Path(__file__).resolve().parent.parent
rows=[json.loads(l) for l in open(ROOT / 'target/bench-data/outcomes/published.jsonl')]
def d(u): return u[:u.rfind('/')+1]
KEYS={
 'ctx,src,dir': lambda r:(r['context'],r['source'],d(r['url'])),
 'ctx,src': lambda r:(r['context'],r['source']),
 'ctx,dir': lambda r:(r['context'],d(r['url'])),
 'ctx,srcdir,dir': lambda r:(r['context'],d(r['source']),d(r['url'])),
 'ctx,host': lambda r:(r['context'],),
}
def run(seed, keyf, m, ratio=None):
    rng=random.Random(seed); rs=rows[:]; rng.shuffle(rs)
    half=len(rs)//2; w1, w2 = rs[:half], rs[half:]
    seen=set(); counts=collections.defaultdict(lambda:[0,0])
    for r in w1:
        if r['url'] in seen: continue
        seen.add(r['url'])
        c=counts[keyf(r)]
        if r['status']//100==2: c[0]+=1
        elif r['status'] in (404,410): c[1]+=1
    pub404=pub2xx=held404=held2xx=0; base404=base2xx=0
    for r in w2:
        if r['url'] in seen: continue
        seen.add(r['url'])
        ok = r['status']//100==2; miss = r['status'] in (404,410)
        base404+=miss; base2xx+=ok
        h,mi=counts[keyf(r)]
        hold = (h==0 and mi>=m) if ratio is None else (mi>=m and mi >= ratio*(h+mi))
        if hold: held404+=miss; held2xx+=ok
        else: pub404+=miss; pub2xx+=ok
    return base404,pub404,base2xx,held2xx
for name,kf in KEYS.items():
    for m in (1,2,3):
        for ratio in (None,0.9):
            tot=[0,0,0,0]
            for seed in range(20):
                x=run(seed,kf,m,ratio); tot=[a+b for a,b in zip(tot,x)]
            b404,p404,b2xx,h2xx=tot
            print(f"{name:<16} m={m} {'hits=0' if ratio is None else 'miss>=90%':<9} 404s published {p404/b404*100:5.1f}% of baseline (cut {100-p404/b404*100:4.1f}%), real held {h2xx}/{b2xx} = {h2xx/b2xx*100:.1f}%")
print("---- combos")
def run2(seed, m, stream, dirprotect, probe=0):
    rng=random.Random(seed); rs=rows[:]; rng.shuffle(rs)
    half=len(rs)//2; w1, w2 = rs[:half], rs[half:]
    seen=set(); cs=collections.defaultdict(lambda:[0,0]); cd=collections.defaultdict(lambda:[0,0])
    def learn(r):
        for c in (cs[(r['context'],r['source'])], cd[(r['context'],d(r['url']))]):
            if r['status']//100==2: c[0]+=1
            elif r['status'] in (404,410): c[1]+=1
    for r in w1:
        if r['url'] in seen: continue
        seen.add(r['url']); learn(r)
    b404=p404=b2xx=h2xx=0; heldlist=[]; n=0
    for r in w2:
        if r['url'] in seen: continue
        seen.add(r['url'])
        ok = r['status']//100==2; miss = r['status'] in (404,410)
        b404+=miss; b2xx+=ok
        h,mi=cs[(r['context'],r['source'])]
        hd,_=cd[(r['context'],d(r['url']))]
        hold = h==0 and mi>=m and not (dirprotect and hd>0)
        if hold and probe:
            n+=1
            if n%probe==0: hold=False
        if hold: h2xx+=ok; heldlist.append(r) if ok else None
        else:
            p404+=miss
            if stream: learn(r)
    return b404,p404,b2xx,h2xx,heldlist
for m in (1,2):
  for stream in (False,True):
    for dp in (False,True):
      for probe in (0,10):
        tot=[0,0,0,0]; held=[]
        for seed in range(20):
            x=run2(seed,m,stream,dp,probe); tot=[a+b for a,b in zip(tot,x[:4])]; held+=x[4]
        b404,p404,b2xx,h2xx=tot
        print(f"src m={m} stream={stream!s:<5} dirprotect={dp!s:<5} probe1in={probe:<2}: cut {100-p404/b404*100:4.1f}%, real held {h2xx}/{b2xx} = {h2xx/b2xx*100:.1f}%")
        if m==1 and stream and dp and probe==10:
            for r in {(r['source'],r['input'],r['url']) for r in held}: print("   held:", r)
print("---- or-dir")
def run3(seed, m, md, stream, probe=0):
    rng=random.Random(seed); rs=rows[:]; rng.shuffle(rs)
    half=len(rs)//2; w1, w2 = rs[:half], rs[half:]
    seen=set(); cs=collections.defaultdict(lambda:[0,0]); cd=collections.defaultdict(lambda:[0,0])
    def learn(r):
        for c in (cs[(r['context'],r['source'])], cd[(r['context'],d(r['url']))]):
            if r['status']//100==2: c[0]+=1
            elif r['status'] in (404,410): c[1]+=1
    for r in w1:
        if r['url'] in seen: continue
        seen.add(r['url']); learn(r)
    b404=p404=b2xx=h2xx=0; n=0
    for r in w2:
        if r['url'] in seen: continue
        seen.add(r['url'])
        ok = r['status']//100==2; miss = r['status'] in (404,410)
        b404+=miss; b2xx+=ok
        h,mi=cs[(r['context'],r['source'])]
        hd,md_=cd[(r['context'],d(r['url']))]
        hold = hd==0 and ((h==0 and mi>=m) or md_>=md)
        if hold and probe:
            n+=1
            if n%probe==0: hold=False
        if hold: h2xx+=ok
        else:
            p404+=miss
            if stream: learn(r)
    return b404,p404,b2xx,h2xx
for m in (1,2):
  for md in (1,2,3):
    for stream in (False,True):
      for probe in (0,10,20):
        tot=[0,0,0,0]
        for seed in range(20):
            x=run3(seed,m,md,stream,probe); tot=[a+b for a,b in zip(tot,x)]
        b404,p404,b2xx,h2xx=tot
        print(f"src m={m} or dir md={md} stream={stream!s:<5} probe1in={probe:<2}: cut {100-p404/b404*100:4.1f}%, real held {h2xx}/{b2xx} = {h2xx/b2xx*100:.1f}%")
