#!/usr/bin/env python3
"""Wall time of each phase of the training step, in a scratch build.

  python3 tools/step_phases.py OUTDIR

Writes OUTDIR/hpjepa.h, a scratch copy of ./hpjepa.h in which the
per-resolution step (hpj__step) reads the clock between its phases and,
when the program exits, prints one line per phase to stderr:

  PHASE gnnT     440.4 ms  10.7 %

(summed over every step of the run; the percentages are of the phases'
sum, which leaves out the sampling of contexts and targets at the head of
each step). Phases, in step order: inputs (the batch paths and features;
with the paths side by side, only the gradient zeroing: hpj__fwd_split
builds them),
gnnT (the patch encoder on the target patches, with the last step's
parked optimizer pass beside its products), ctx (the wait for that pass,
then the context path's forward: patch encoder, structural queries, online
encoder), encT/fwd (the targets' deferred BatchNorm statistics, input copy,
EMA target encoder, Phi and the predictor's input; when the two paths run
side by side, hpj__fwd_split, the whole forward, and gnnT and ctx stay 0;
set HPJ__SPLIT_MAX_D to 0 in the scratch copy to time the paths one after
the other), tgt+ (the overflow check and the targets' copy), pred, predB
(loss and predictor backward), encB, peB, gnnB (the backwards; gnnB is the
context path's patch encoder, the only one that takes gradients), adam
(gradient norm, and the optimizer pass parked for the next step's
products, or run here when it cannot be parked).
Build it with `bash tools/paired_step.sh OUTDIR` and run, from the
repository root, for example

  OUTDIR/hpjepa bench train ../shared/data/PROTEINS \\
      --config data/configs/bench/proteins_d128.cfg --set repartition=0 \\
      --steps 60 --threads 2

The clock is read on the calling thread only, so a phase's time includes
the waits of its parallel regions. This is how the share of each stage was
found (reports/bench_train.md); 14 clock reads per step cost nothing measurable. Never
commit the scratch copy. Standard library only; exit 1 with a one-line
reason when ./hpjepa.h no longer has the text this script patches.
"""
import scratch_header

STEP = "static hpj_status hpj__step(hpj__trainer *tr,"
STEP_END = "/* ==== model: training loop"
# (text at the end of the phase, name of the phase that ends there); the
# first entry only starts the clock (and registers the report at exit)
MARKS = [
    ("    /* -- inputs -- */", None),
    ("    /* -- forward: the context path", "inputs"),
    ("        w.gt.side = NULL;", "gnnT"),
    ("        if (tmode == HPJ__TRAIN_DEFER) hpj__gnn_defer_apply(m, &w.gt);", "ctx"),
    ("    if (badt >= 0) {", "encT/fwd"),
    ("    hpj__pred_forward(m, &w.pr, drop_seed);", "tgt+"),
    ("    /* loss: SmoothL1", "pred"),
    ("    hpj__enc_backward(m, &w.ec, w.ds, w.dx, NULL);", "predB"),
    ("    if (w.tokmask) {\n        memcpy", "encB"),
    ("    hpj__gnn_backward(m, &w.gc, &w.gb, w.dx);", "peB"),
    ("    /* -- update -- */", "gnnB"),
    ("    hpj_arena_reset(&tr->arena, mark);\n    return HPJ_OK;\n}", "adam"),
]


def fail(msg):
    scratch_header.fail("step_phases", msg)


def main():
    out, src = scratch_header.read("step_phases")
    if src.count(STEP) != 1 or src.count(STEP_END) != 1:
        fail("hpjepa.h: the step function or the training-loop section not found once; update this script")
    a, b = src.index(STEP), src.index(STEP_END)
    inserts = [(text, "%s    HPJ__PH(%d);\n" % ("    hpj__ph_once();\n" if i == 0 else "", i))
               for i, (text, _) in enumerate(MARKS)]
    body = scratch_header.insert_before("step_phases", src[a:b], "hpj__step", inserts)
    names = [name or "" for _, name in MARKS]
    n = len(MARKS)
    pre = """static double hpj__ph_t[%d], hpj__ph_t0;
static const char *hpj__ph_name[%d] = {%s};
/* phase i ends here: its time since the last mark (mark 0 starts the clock) */
#define HPJ__PH(i) do { double t_ = omp_get_wtime(); if ((i) > 0) hpj__ph_t[i] += t_ - hpj__ph_t0; hpj__ph_t0 = t_; } while (0)
static void hpj__ph_dump(void) {
    double s = 0.0;
    int i;
    for (i = 1; i < %d; ++i) s += hpj__ph_t[i];
    if (s <= 0.0) return;
    for (i = 1; i < %d; ++i)
        fprintf(stderr, "PHASE %%-7s %%9.1f ms %%5.1f %%%%\\n", hpj__ph_name[i], hpj__ph_t[i] * 1e3, 100.0 * hpj__ph_t[i] / s);
}
static void hpj__ph_once(void) {
    static int done;
    if (!done) { done = 1; atexit(hpj__ph_dump); }
}
""" % (n, n, ", ".join('"%s"' % x for x in names), n, n)
    src = src[:a] + pre + body + src[b:]
    path = scratch_header.write(out, src)
    print("wrote %s; build it with: bash tools/paired_step.sh %s" % (path, out))


if __name__ == "__main__":
    main()
