#!/usr/bin/env python3
"""Paired comparison of two `hpjepa eval --report` runs on the same folds.

  python3 tools/paper/paired.py A B [--markdown]

A and B are report prefixes (A.graphs.csv and B.graphs.csv must exist), for
example reports/MUTAG_hp_5seed and reports/MUTAG_gj_5seed. Both runs must be
classification runs whose common seeds put every graph in the same test fold
(eval's folds depend only on the dataset and the seed, so two configs of one
dataset do); the script checks that. For the seeds both runs have it prints:

  - each seed's accuracy (mean over its folds, as eval) of A and B, and A - B;
  - the mean of A - B over seeds with an exact two-sided sign-flip
    permutation p-value over the seed-level differences (2^S sign patterns;
    with 5 seeds the smallest possible p is 2/32 = 0.0625);
  - the folds (seed x fold) where A is ahead / behind / level, with an exact
    two-sided sign test over the folds that differ (folds of one seed share
    training graphs, so this p-value is optimistic);
  - over every test prediction, how often only A or only B is right, with an
    exact two-sided binomial (McNemar) p-value (optimistic too: the same
    graph is predicted once per seed).

Standard library only; exit 1 with a one-line reason on bad input.
"""
import csv
import itertools
import math
import sys


def fail(msg):
    sys.stderr.write("paired: %s\n" % msg)
    sys.exit(1)


def read_run(prefix):
    path = prefix + ".graphs.csv"
    try:
        f = open(path, newline="")
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    with f:
        rows = csv.reader(f)
        head = next(rows, None)
        need = ["seed", "fold", "graph", "correct"]
        if head is None or any(k not in head for k in need):
            fail("%s:1: expected a header with %s" % (path, ", ".join(need)))
        col = {k: head.index(k) for k in need}
        run = {}  # (seed, graph) -> (fold, correct)
        for n, r in enumerate(rows, start=2):
            try:
                seed, fold, graph = int(r[col["seed"]]), int(r[col["fold"]]), int(r[col["graph"]])
                correct = int(r[col["correct"]])
            except (ValueError, IndexError):
                fail("%s:%d: not a prediction row of integers" % (path, n))
            if correct not in (0, 1):
                fail("%s:%d: correct must be 0 or 1 (a regression report has no accuracy)" % (path, n))
            if (seed, graph) in run:
                fail("%s:%d: graph %d appears twice in seed %d" % (path, n, graph, seed))
            run[(seed, graph)] = (fold, correct)
    if not run:
        fail("%s: no prediction rows" % path)
    return run


def binom_two_sided(k, n):
    """exact two-sided sign-test p-value: P(X <= min(k, n-k)) * 2, capped at 1"""
    if n == 0:
        return 1.0
    m = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m + 1)) / (1 << n)  # exact big-int division
    return min(1.0, 2.0 * tail)


def sign_flip_p(d):
    """exact two-sided permutation p-value of mean(d) under random signs"""
    obs = abs(sum(d))
    hits = sum(1 for s in itertools.product((1, -1), repeat=len(d))
               if abs(sum(x * y for x, y in zip(s, d))) >= obs - 1e-12)
    return hits / 2.0 ** len(d)


def main(argv):
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(__doc__)
        return 0
    args = [a for a in argv if not a.startswith("--")]
    md = "--markdown" in argv
    if len(args) != 2 or any(a.startswith("--") and a != "--markdown" for a in argv):
        sys.stderr.write("paired: usage: python3 tools/paper/paired.py A B [--markdown] (see --help)\n")
        return 2
    A, B = read_run(args[0]), read_run(args[1])
    seeds = sorted({s for s, _ in A} & {s for s, _ in B})
    if not seeds:
        fail("the two runs share no seed")
    folds = {}  # (seed, fold) -> [A correct, B correct, n]
    only_a = only_b = 0
    for seed in seeds:
        ga = {g for s, g in A if s == seed}
        gb = {g for s, g in B if s == seed}
        if ga != gb:
            fail("seed %d: the runs predicted different graphs (%d vs %d)" % (seed, len(ga), len(gb)))
        for g in ga:
            fa, ca = A[(seed, g)]
            fb, cb = B[(seed, g)]
            if fa != fb:
                fail("seed %d: graph %d is in fold %d of %s but fold %d of %s" % (seed, g, fa, args[0], fb, args[1]))
            t = folds.setdefault((seed, fa), [0, 0, 0])
            t[0] += ca
            t[1] += cb
            t[2] += 1
            only_a += ca and not cb
            only_b += cb and not ca
    per_seed = []
    for seed in seeds:
        fs = [t for (s, _), t in folds.items() if s == seed]
        acc_a = sum(t[0] / t[2] for t in fs) / len(fs)
        acc_b = sum(t[1] / t[2] for t in fs) / len(fs)
        per_seed.append((seed, acc_a, acc_b, len(fs)))
    d = [a - b for _, a, b, _ in per_seed]
    fd = [t[0] / t[2] - t[1] / t[2] for t in folds.values()]
    ahead = sum(1 for x in fd if x > 1e-12)
    behind = sum(1 for x in fd if x < -1e-12)
    level = len(fd) - ahead - behind
    mean_d = sum(d) / len(d)
    p_seed = sign_flip_p(d)
    p_fold = binom_two_sided(ahead, ahead + behind)
    p_pred = binom_two_sided(only_a, only_a + only_b)
    if md:
        print("| %s - %s | %+.2f | %s | %d / %d / %d | %.3g | %d / %d | %.3g | %.3g |" % (
            args[0].split("/")[-1], args[1].split("/")[-1], 100 * mean_d,
            " ".join("%+.1f" % (100 * x) for x in d), ahead, behind, level, p_fold, only_a, only_b, p_pred, p_seed))
        return 0
    print("A = %s\nB = %s\nseeds %s (%d folds in all)" % (args[0], args[1], ",".join(map(str, seeds)), len(fd)))
    for seed, a, b, nf in per_seed:
        print("  seed %d: A %.4f  B %.4f  A - B %+.4f  (%d folds)" % (seed, a, b, a - b, nf))
    print("mean A - B over seeds: %+.4f (sign-flip permutation p = %.3g over %d seeds)" % (mean_d, p_seed, len(d)))
    print("folds: A ahead %d, behind %d, level %d (sign test p = %.3g)" % (ahead, behind, level, p_fold))
    print("predictions: only A right %d, only B right %d (McNemar exact p = %.3g)" % (only_a, only_b, p_pred))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
