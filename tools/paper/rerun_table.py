#!/usr/bin/env python3
"""The table of the rerun under one protocol, from its reports.

  python3 tools/paper/rerun_table.py [REPORTS_DIR]

Reads every `table_<DATASET>_<hp|gj>_*` report in REPORTS_DIR (default
tools/paper/reports; the `reproduce.sh table_*` jobs write them, in parts
such as `_1seed` and `_seeds2-5`), joins the parts of one dataset and
method (they must share the config and have disjoint seeds), and prints a
Markdown table, one row per dataset:

  - each method's seeds, mean +- std over seed means (population std, as
    eval aggregates) and the mean fold std (accuracy in percent, as the
    paper; ZINC-12K's MAE as it is);
  - HP-JEPA minus Graph-JEPA over the seeds both ran: the mean difference,
    the exact sign-flip p over seeds, and for classification the exact
    McNemar p over every test prediction (paired.py's tests; optimistic,
    see there); for ZINC-12K the per-graph absolute errors are compared by
    a sign test instead (which method's error is smaller, graph by graph);
  - the paper's two numbers (its table 2) beside ours.

Then, for the classification datasets both methods ran, where the
multi-resolution readout gains and loses: the graphs split into four
node-count quartiles (by rank of (nodes, graph id), so the quarters are
equal in size), each method's accuracy per quartile over the common seeds'
test predictions, and how many predictions only one of them got right.

Standard library only; exit 1 with a one-line reason on bad input.
"""
import csv
import functools
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge_reports import pstd, split_config  # noqa: E402
from paired import binom_two_sided, read_run, sign_flip_p  # noqa: E402


def fail(msg):
    sys.stderr.write("rerun_table: %s\n" % msg)
    sys.exit(1)

# the paper's table 2: (HP-JEPA, Graph-JEPA), each (mean, std); accuracy in
# percent, ZINC-12K as MAE
PAPER = {
    "MUTAG": ((91.70, 5.31), (91.25, 5.75)),
    "PROTEINS": ((76.97, 0.50), (75.67, 3.78)),
    "IMDB-BINARY": ((74.08, 0.40), (73.68, 3.24)),
    "IMDB-MULTI": ((50.51, 1.81), (50.69, 2.91)),
    "DD": ((79.20, 0.38), (78.64, 2.35)),
    "REDDIT-BINARY": ((92.19, 1.56), (91.99, 1.59)),
    "ZINC-12K": ((0.472, 0.010), (0.434, 0.014)),
}
ORDER = list(PAPER)


def load_method(paths):
    """joins report parts: (metric, {seed: [fold scores]}, prefixes)"""
    metric, cfg, seeds = None, None, {}
    for p in sorted(paths):
        try:
            with open(p + ".json") as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            fail("%s.json: %s" % (p, e))
        c = split_config(d.get("config", ""))  # (shared lines, seed): parts must agree on both
        if metric is None:
            metric, cfg = d["metric"], c
        elif d["metric"] != metric or c != cfg:
            fail("%s.json: its metric or config differs from the other parts of this method" % p)
        part = {}
        for r in d["rows"]:
            part.setdefault(r["seed"], []).append(r["score"])
        for s in part:
            if s in seeds:
                fail("%s.json: seed %d is also in another part" % (p, s))
        seeds.update(part)
    return metric, seeds


def summary(seeds):
    means = [sum(v) / len(v) for _, v in sorted(seeds.items())]
    fstd = [pstd(v) for v in seeds.values()]
    return sum(means) / len(means), pstd(means), sum(fstd) / len(fstd)


def abs_errors(prefixes):
    err = {}
    for p in prefixes:
        with open(p + ".graphs.csv", newline="") as f:
            for r in csv.DictReader(f):
                err[(int(r["seed"]), int(r["graph"]))] = float(r["abs_err"])
    return err


@functools.lru_cache(maxsize=None)
def predictions(parts):
    """{(seed, graph): (fold, correct)} over a method's report parts (a
    tuple; read once: the paired test and the quartiles share it)"""
    run = {}
    for p in parts:
        run.update(read_run(p))
    return run


def paired_test(metric, hp_parts, gj_parts, common):
    """(only-HP count, only-GJ count, p) over the predictions of the common seeds"""
    if metric == "mae":
        a, b = abs_errors(hp_parts), abs_errors(gj_parts)
        keys = [k for k in a if k[0] in common and k in b]
        better = sum(1 for k in keys if a[k] < b[k])
        worse = sum(1 for k in keys if a[k] > b[k])
        return better, worse, binom_two_sided(better, better + worse)
    a, b = predictions(tuple(hp_parts)), predictions(tuple(gj_parts))
    only_a = only_b = 0
    for k, (fold, ca) in a.items():
        if k[0] not in common:
            continue
        if k not in b or b[k][0] != fold:
            fail("seed %d graph %d: not predicted in the same fold by both methods" % k)
        only_a += ca and not b[k][1]
        only_b += b[k][1] and not ca
    return only_a, only_b, binom_two_sided(only_a, only_a + only_b)


def node_counts(prefixes):
    """{graph: nodes} from the reports' graphs.csv (every graph is in each seed)"""
    nodes = {}
    for p in prefixes:
        with open(p + ".graphs.csv", newline="") as f:
            for n, r in enumerate(csv.DictReader(f), start=2):
                try:
                    nodes[int(r["graph"])] = int(r["nodes"])
                except (KeyError, TypeError, ValueError):
                    fail("%s.graphs.csv:%d: no integer graph and nodes columns" % (p, n))
    return nodes


def quartile_rows(ds, hp_parts, gj_parts, common):
    """one Markdown row: per node-count quartile, HP / GJ accuracy and the discordant counts"""
    a, b = predictions(tuple(hp_parts)), predictions(tuple(gj_parts))
    nodes = node_counts(hp_parts)
    order = sorted(nodes, key=lambda g: (nodes[g], g))
    quart = {g: 4 * i // len(order) for i, g in enumerate(order)}
    cells = []
    for q in range(4):
        keys = [k for k in a if k[0] in common and quart.get(k[1]) == q and k in b]
        if not keys:
            cells.append("-")
            continue
        lo = min(nodes[k[1]] for k in keys)
        hi = max(nodes[k[1]] for k in keys)
        ha = sum(a[k][1] for k in keys) / len(keys)
        ga = sum(b[k][1] for k in keys) / len(keys)
        oa = sum(1 for k in keys if a[k][1] and not b[k][1])
        ob = sum(1 for k in keys if b[k][1] and not a[k][1])
        cells.append("%d-%d: %.1f / %.1f (%+.1f; %d / %d)" % (lo, hi, 100 * ha, 100 * ga, 100 * (ha - ga), oa, ob))
    return "| %s (%d) | %s |" % (ds, len(common), " | ".join(cells))


def main(argv):
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(__doc__)
        return 0
    rdir = argv[0] if argv else "tools/paper/reports"
    found = {}
    for j in glob.glob(os.path.join(rdir, "table_*.json")):
        m = re.match(r"table_(.+)_(hp|gj)_(\d+seed|seeds\d+-\d+)\.json$", os.path.basename(j))
        if m and os.path.exists(j[:-5] + ".graphs.csv"):
            found.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(j[:-5])
    if not found:
        fail("%s: no table_* reports" % rdir)
    print("| dataset | HP-JEPA seeds | HP-JEPA | Graph-JEPA seeds | Graph-JEPA | HP - GJ (sign-flip p over seeds)"
          " | predictions only HP / only GJ better (p) | paper HP-JEPA | paper Graph-JEPA |")
    print("|---|---|---|---|---|---|---|---|---|")
    quart = []
    for ds in sorted(found, key=lambda x: ORDER.index(x) if x in ORDER else len(ORDER)):
        row = {}
        for meth in ("hp", "gj"):
            if meth in found[ds]:
                row[meth] = load_method(found[ds][meth])
        cells, metric = [], None
        for meth in ("hp", "gj"):
            if meth not in row:
                cells += ["0", "-"]
                continue
            metric, seeds = row[meth]
            m, sd, fstd = summary(seeds)
            if metric == "mae":
                cells += [str(len(seeds)), "%.4f +- %.4f (%.3f)" % (m, sd, fstd)]
            else:  # in percent, as the paper
                cells += [str(len(seeds)), "%.2f +- %.2f (%.1f)" % (100 * m, 100 * sd, 100 * fstd)]
        if len(row) == 2:
            common = sorted(set(row["hp"][1]) & set(row["gj"][1]))
            d = [sum(row["hp"][1][s]) / len(row["hp"][1][s]) - sum(row["gj"][1][s]) / len(row["gj"][1][s])
                 for s in common]
            mean_d = sum(d) / len(d) if d else 0.0
            scale = 1 if metric == "mae" else 100
            cells.append("%+.2f (%s; %d seeds)" % (scale * mean_d, "%.3g" % sign_flip_p(d) if d else "-", len(d)))
            a, b, p = paired_test(metric, found[ds]["hp"], found[ds]["gj"], set(common))
            cells.append("%d / %d (%.3g)" % (a, b, p))
        else:
            cells += ["-", "-"]
        paper = PAPER.get(ds)
        fmt = "%.3f +- %.3f" if metric == "mae" else "%.2f +- %.2f"
        cells += [fmt % paper[0], fmt % paper[1]] if paper else ["-", "-"]
        print("| %s | %s |" % (ds, " | ".join(cells)))
        if len(row) == 2 and metric != "mae":
            quart.append(quartile_rows(ds, found[ds]["hp"], found[ds]["gj"], set(common)))
    if quart:
        print()
        print("Accuracy per node-count quartile (nodes: HP-JEPA / Graph-JEPA in %, (HP - GJ; predictions only HP /"
              " only GJ right)), over the seeds both ran:")
        print()
        print("| dataset (seeds) | Q1 | Q2 | Q3 | Q4 |")
        print("|---|---|---|---|---|")
        for r in quart:
            print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
