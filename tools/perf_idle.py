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


def read_samples(path):
    """[(tid, time, frames innermost first)] from `perf script -F tid,time,ip,sym`."""
    samples, cur = [], None
    with open(path) as f:
        for line in f:
            if not line.strip():
                if cur:
                    samples.append(cur)
                cur = None
            elif not line[0].isspace():
                p = line.split()
                cur = (p[0], float(p[1].rstrip(':')), [])
            elif cur:
                parts = line.strip().split(None, 1)
                cur[2].append(parts[1].replace(' (inlined)', '') if len(parts) > 1 else '?')
    if cur:
        samples.append(cur)
    return samples


def in_step(fr):
    return any(f.startswith('hpj__step') for f in fr)


def is_idle(fr):
    return fr[0] == '[unknown]' or 'gomp' in fr[0].lower() or fr[0].startswith('do_wait')


def stage(fr):
    """The function hpj__step called ('self' when in hpj__step itself)."""
    for i, f in enumerate(fr):
        if f.startswith('hpj__step'):
            return fr[i - 1] if i > 0 else 'self'
    return '?'


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: perf_idle.py PERF_SCRIPT_OUTPUT (see the top of this file)')
    try:
        samples = read_samples(sys.argv[1])
    except (OSError, ValueError, IndexError) as e:
        sys.exit('perf_idle.py: %s: %s' % (sys.argv[1], e))
    tids = sorted({s[0] for s in samples}, key=int)
    if len(tids) < 2:
        sys.exit('perf_idle.py: %s: samples of %d thread(s); record a run with --threads 2' % (sys.argv[1], len(tids)))
    master = [s for s in samples if s[0] == tids[0]]
    mt = [s[1] for s in master]
    # each worker sample with the master's nearest (within 2 ms), inside a step
    pairs = []
    for tid, t, fr in samples:
        if tid != tids[1]:
            continue
        i = bisect.bisect_left(mt, t)
        j = min((j for j in (i - 1, i) if 0 <= j < len(master)), key=lambda j: abs(mt[j] - t))
        if abs(mt[j] - t) <= 0.002 and in_step(master[j][2]):
            pairs.append((is_idle(fr), master[j][2]))
    idle = [mf for i, mf in pairs if i]
    print('worker samples during steps', len(pairs), 'idle', len(idle))
    what = collections.Counter(stage(mf) + ' > ' + next((f for f in mf if f.startswith(('hpj', '__mem'))), mf[0])
                               for mf in idle)
    for k, v in what.most_common(40):
        print(v, k)
    print('--- by stage: worker idle / worker samples')
    tot = collections.Counter(stage(mf) for _, mf in pairs)
    idl = collections.Counter(stage(mf) for mf in idle)
    for k, v in tot.most_common(20):
        print(k, idl[k], v)
    print('--- idle detail within stages (master chain: innermost 4 frames of ours, libgomp or mem*)')
    det = collections.Counter(' < '.join([f for f in mf if f.startswith(('hpj', '__mem', 'GOMP')) or f == '[unknown]'][:4])
                              for mf in idle)
    for k, v in det.most_common(60):
        print(v, k)


if __name__ == '__main__':
    main()
