#!/usr/bin/env python3
"""Paired timing of two variants of the training step, in one process.

  python3 tools/paired_step.py OUTDIR

Writes OUTDIR/hpjepa.h, a scratch copy of ./hpjepa.h in which the batch
loop of training runs every batch twice, once per variant (which variant
goes first alternates by batch), and a global `int hpj__exp_v` (0 or 1) says
which variant is running. It prints, when the program exits,

  TWICE batches N: time v0/v1 median R (q1 .. q3), totals T0 / T1 s = R

(v0 time over v1 time, per batch: above 1 means variant 1 is faster). Then
edit OUTDIR/hpjepa.h so that the code under test reads hpj__exp_v (for
example `if (hpj__exp_v && ...)` around the new path), build it with

  bash tools/paired_step.sh OUTDIR            (or: the compile line below)

and run, from the repository root,

  OUTDIR/hpjepa bench train ../shared/data/PROTEINS \\
      --config data/configs/bench/proteins_d128.cfg --set repartition=0 \\
      --steps 200 --threads 2

(`bench train` then says "only N batches ran": harmless; the model takes both
variants' steps, which does not matter for timing). Why: this host's speed
drifts by 20-40 % within minutes, so runs of two binaries one after the
other resolve nothing below ~10 %; the two variants of one batch run
seconds apart inside one process. Check the harness with both variants the
same code first (an A/A run: ~1.00, quartiles +-2-3 %). Never commit the
scratch copy. Standard library only; exit 1 with a one-line reason when
./hpjepa.h no longer has the text this script patches.
"""
import scratch_header

LOOP = """                for (l = 0; l < c->L; ++l) {
                    double loss;
                    int active;
                    if (max_steps > 0 && m->step >= max_steps) break;
                    if ((st = hpj__step(&tr, order + b0, bn, l, &loss, &active))) goto done;
                    if (active) { pg.loss[l] += loss; pg.loss_count[l]++; }
                }"""

TWICE = """                { int rep_, v_; double tt_[2];
                for (rep_ = 0; rep_ < 2; ++rep_) { double t0_ = omp_get_wtime();
                v_ = (bi & 1) ? 1 - rep_ : rep_;
                hpj__exp_v = v_;
                for (l = 0; l < c->L; ++l) {
                    double loss;
                    int active;
                    if ((st = hpj__step(&tr, order + b0, bn, l, &loss, &active))) goto done;
                    if (active) { pg.loss[l] += loss; pg.loss_count[l]++; }
                }
                hpj__adam_job_finish(&tr.pend);
                tt_[v_] = omp_get_wtime() - t0_; }
                if (bi > 0 && hpj__ntw < 100000) { hpj__tw[hpj__ntw++] = tt_[0] / tt_[1]; hpj__s0 += tt_[0]; hpj__s1 += tt_[1]; }
                }"""

REPORT = r"""
static double hpj__tw[100000], hpj__s0, hpj__s1; static int hpj__ntw;
static int hpj__cmpd(const void *x, const void *y) { double a = *(const double *)x, b = *(const double *)y; return a < b ? -1 : a > b; }
__attribute__((destructor)) static void hpj__tw_dump(void) {
    int n = hpj__ntw; if (n < 3) return;
    qsort(hpj__tw, n, sizeof(double), hpj__cmpd);
    fprintf(stderr, "TWICE batches %d: time v0/v1 median %.3f (q1 %.3f q3 %.3f), totals %.3f / %.3f s = %.3f\n", n, hpj__tw[n / 2], hpj__tw[n / 4], hpj__tw[3 * n / 4], hpj__s0, hpj__s1, hpj__s0 / hpj__s1);
}
"""

IMPL = "#ifdef HPJEPA_IMPLEMENTATION"
LOOP_SECTION = "/* ==== model: training loop"


def fail(msg):
    scratch_header.fail("paired_step", msg)


def main():
    out, src = scratch_header.read("paired_step")
    for what, text in (("the implementation guard", IMPL), ("the training-loop section", LOOP_SECTION),
                       ("the batch loop of hpj_pretrain", LOOP)):
        if src.count(text) != 1:
            fail("hpjepa.h: %s not found once; update this script" % what)
    i = src.index("\n", src.index(IMPL)) + 1
    src = src[:i] + "static int hpj__exp_v; /* paired_step.py: the variant running */\n" + src[i:]
    src = src.replace(LOOP_SECTION, REPORT + LOOP_SECTION, 1)
    src = src.replace(LOOP, TWICE, 1)
    path = scratch_header.write(out, src)
    print("wrote %s; make the code under test read hpj__exp_v, then: bash tools/paired_step.sh %s" % (path, out))


if __name__ == "__main__":
    main()
