#!/usr/bin/env python3
"""How far apart the two threads of the side-by-side forward end, in a
scratch build.

  python3 tools/split_balance.py OUTDIR

Writes OUTDIR/hpjepa.h, a scratch copy of ./hpjepa.h in which
hpj__fwd_split (the two paths' forwards side by side, one per thread, at
d <= 256 on two threads) reads the clock when each thread is done and, when
the program exits, prints one line per resolution to stderr:

  SPLIT l=3 steps 202: ends 12.27 / 12.13 ms, apart 1.11 ms, region 12.78 ms, thread 0 took 63.3 of 115.2 graphs

(means over the steps: when thread 0, the target path and its share of
the EMA encoder, and thread 1, the context path and the rest, were done,
counted from the region's start; 'apart' is the mean of |end 0 - end 1|
over the steps, which the means of the ends hide when the faster thread
changes from step to step; 'region' the wall time of the whole call; the
last figure is hpj__fwd_split's split point bs against B). The time one
thread waits for the other is about 'apart' a step. Build it with
`bash tools/paired_step.sh OUTDIR` and run, from the repository root,

  OUTDIR/hpjepa bench train ../shared/data/PROTEINS \\
      --config data/configs/bench/proteins_d128.cfg --set repartition=0 \\
      --steps 200 --threads 2

This is how the seventh session of 2026-11-29 found 0.8-1.6 ms between
the threads' ends at every resolution (reports/bench_train.md). Never
commit the scratch copy. Standard library only; exit 1 with a one-line
reason when ./hpjepa.h no longer has the text this script patches.
"""
import scratch_header

SPLIT = "static void hpj__fwd_split(hpj__trainer *tr,"
# (text, what goes before it), each found once inside hpj__fwd_split
MARKS = [
    ("    HPJ__OMP(parallel num_threads(2))", "    hpj__sb_once();\n    hpj__sb_t0 = hpj__wtime();\n"),
    ("            tm[0] = t1 - t0;", "            hpj__sb_e[0] = hpj__wtime() - hpj__sb_t0;\n"),
    ("            if (id == 1) fl1 = hpj__flops - f0;", "            hpj__sb_e[1] = hpj__wtime() - hpj__sb_t0;\n"),
    ("    hpj__flops += fl1;", "    hpj__sb_add(l, hpj__wtime() - hpj__sb_t0, bs, B);\n"),
]

PRE = r"""static double hpj__sb_t0, hpj__sb_e[2], hpj__sb_s[HPJ_MAX_RES][6];
static int hpj__sb_n[HPJ_MAX_RES];
static void hpj__sb_add(int l, double wall, int32_t bs, int32_t B) {
    double *s = hpj__sb_s[l];
    s[0] += hpj__sb_e[0];
    s[1] += hpj__sb_e[1];
    s[2] += fabs(hpj__sb_e[0] - hpj__sb_e[1]);
    s[3] += wall;
    s[4] += bs;
    s[5] += B;
    hpj__sb_n[l]++;
}
static void hpj__sb_dump(void) {
    int l;
    for (l = 0; l < HPJ_MAX_RES; ++l)
        if (hpj__sb_n[l]) {
            double n = hpj__sb_n[l], *s = hpj__sb_s[l];
            fprintf(stderr, "SPLIT l=%d steps %d: ends %.2f / %.2f ms, apart %.2f ms, region %.2f ms, thread 0 took %.1f of %.1f graphs\n",
                    l, hpj__sb_n[l], 1e3 * s[0] / n, 1e3 * s[1] / n, 1e3 * s[2] / n, 1e3 * s[3] / n, s[4] / n, s[5] / n);
        }
}
static void hpj__sb_once(void) {
    static int done;
    if (!done) { done = 1; atexit(hpj__sb_dump); }
}
"""


def fail(msg):
    scratch_header.fail("split_balance", msg)


def main():
    out, src = scratch_header.read("split_balance")
    if src.count(SPLIT) != 1:
        fail("hpjepa.h: hpj__fwd_split not found once; update this script")
    a = src.index(SPLIT)
    b = src.find("\n}\n", a)
    if b < 0:
        fail("hpjepa.h: the end of hpj__fwd_split not found; update this script")
    body = scratch_header.insert_before("split_balance", src[a:b], "hpj__fwd_split", MARKS)
    src = src[:a] + PRE + body + src[b:]
    path = scratch_header.write(out, src)
    print("wrote %s; build it with: bash tools/paired_step.sh %s" % (path, out))


if __name__ == "__main__":
    main()
