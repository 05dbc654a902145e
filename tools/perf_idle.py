#!/usr/bin/env python3
"""Where the second OpenMP thread waits during training steps.

Usage:
  perf record -q --call-graph dwarf,16384 -F 2000 -o build/perf.data \
      ./hpjepa bench train ../shared/data/PROTEINS --config data/configs/bench/proteins_d128.cfg --steps 30 --threads 2
  perf script -i build/perf.data -F tid,time,ip,sym > build/perf.txt
  python3 tools/perf_idle.py build/perf.txt

Each sample of the worker thread (the second thread id) taken while the
master was inside hpj__step is matched with the master's nearest sample
(within 2 ms); a worker sample whose top frame is libgomp (unknown symbol)
counts as idle. Prints the idle share, what the master was doing while the
worker idled, and the idle / total worker samples per stage of the step.
Two threads only; the output is a guide, not a measurement of speed.
"""
import sys, collections, bisect
samples=[]; cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: samples.append(cur); cur=None
        continue
    if not line.startswith('\t') and not line.startswith(' '):
        p=line.split(); cur=[p[0], float(p[1].rstrip(':')), []]
    else:
        parts=line.strip().split(None,1)
        cur[2].append(parts[1] if len(parts)>1 else '?')
if cur: samples.append(cur)
tids=sorted(set(s[0] for s in samples), key=int)
master, worker = tids[0], tids[1]
M=[s for s in samples if s[0]==master]; W=[s for s in samples if s[0]==worker]
mt=[s[1] for s in M]
def instep(fr): return any(f.startswith('hpj__step') for f in fr)
def idle(fr): return fr[0] in ('[unknown]',) or 'gomp' in fr[0].lower() or fr[0].startswith('do_wait') 
def key(fr):
    # outermost hpj function below hpj__step plus the innermost hpj function
    below='?'
    for i,f in enumerate(fr):
        if f.startswith('hpj__step'):
            below=fr[i-1] if i>0 else 'self'; break
    inner=next((f for f in fr if f.startswith('hpj') or f.startswith('__mem')), fr[0])
    return below.replace(' (inlined)','')+' > '+inner.replace(' (inlined)','')
c=collections.Counter(); n=0; ni=0
for tid,t,fr in W:
    i=bisect.bisect_left(mt,t)
    cand=[j for j in (i-1,i) if 0<=j<len(M)]
    j=min(cand,key=lambda j:abs(M[j][1]-t))
    if abs(M[j][1]-t)>0.002 or not instep(M[j][2]): continue
    n+=1
    if idle(fr):
        ni+=1; c[key(M[j][2])]+=1
print('worker samples during steps',n,'idle',ni)
for k,v in c.most_common(40): print(v,k)
c2=collections.Counter(); tot2=collections.Counter()
for tid,t,fr in W:
    i=bisect.bisect_left(mt,t)
    cand=[j for j in (i-1,i) if 0<=j<len(M)]
    j=min(cand,key=lambda j:abs(M[j][1]-t))
    if abs(M[j][1]-t)>0.002 or not instep(M[j][2]): continue
    k=key(M[j][2]).split(' > ')[0]
    tot2[k]+=1
    if idle(fr): c2[k]+=1
print('--- by stage: worker idle / worker samples')
for k,v in tot2.most_common(20): print(k, c2[k], v)
print('--- idle detail within stages (master chain: innermost 3 hpj frames)')
c3=collections.Counter()
for tid,t,fr in W:
    i=bisect.bisect_left(mt,t)
    cand=[j for j in (i-1,i) if 0<=j<len(M)]
    j=min(cand,key=lambda j:abs(M[j][1]-t))
    if abs(M[j][1]-t)>0.002 or not instep(M[j][2]) or not idle(fr): continue
    mf=M[j][2]
    hp=[f.replace(' (inlined)','') for f in mf if f.startswith('hpj') or f.startswith('__mem') or f.startswith('GOMP') or f=='[unknown]']
    c3[' < '.join(hp[:4])]+=1
for k,v in c3.most_common(60): print(v,k)
