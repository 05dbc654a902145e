#!/usr/bin/python3
"""Probe study on the per-fold embeddings of a real protocol run: for each
(seed, fold) model, fits scikit-learn's LogisticRegression(C = 1/alpha) on
that fold's training graphs and scores its test graphs, for a grid of
penalties and for the uniform, concat and task readouts (task: the fold's
resolution weights omega from REPORT.json, i.e. the weights eval learned
on that fold's training graphs), plus one row per resolution l = 1..L
read out alone ("res<l>": h^(l), which of the bank's partitions carry the
signal), and "rescv": the single resolution with the best 5-fold CV
accuracy on the fold's training graphs (at that row's alpha; chosen
without the test graphs, unlike picking the best res<l> row afterwards).
No pretraining, so a
probe question (which alpha, which readout) costs seconds, not hours.

usage: /usr/bin/python3 tools/paper/probe_study.py REPORT EMB L [ALPHA ...]
  REPORT, EMB: the prefixes given to `hpjepa eval ... --report REPORT
  --save-embeddings EMB` (reads REPORT.graphs.csv for the folds and labels
  and EMB.s<seed>f<fold>.npy for the embeddings); L: the number of
  resolutions (the .npy rows are L blocks of d). Default alphas:
  1e-3 ... 1e3. Prints a Markdown table: mean over folds per seed, then
  mean over seeds, as `hpjepa eval` aggregates.
Needs numpy and scikit-learn (Debian: python3-sklearn); analysis only."""
import csv, glob, json, re, sys
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score

if len(sys.argv) < 4:
    sys.exit(__doc__)
prefix, emb, L = sys.argv[1], sys.argv[2], int(sys.argv[3])
alphas = [float(a) for a in sys.argv[4:]] or [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0]
rows = list(csv.DictReader(open(prefix + ".graphs.csv")))
omega = {(r["seed"], r["fold"]): r.get("omega") for r in json.load(open(prefix + ".json"))["rows"]}
if not rows or "label" not in rows[0]:
    sys.exit(f"{prefix}.graphs.csv: no classification predictions (a regression run?)")
labels = {}
test = {}  # (seed, fold) -> test graph ids
for r in rows:
    g = int(r["graph"])
    labels[g] = int(r["label"])
    test.setdefault((int(r["seed"]), int(r["fold"])), []).append(g)
G = max(labels) + 1
y = np.array([labels.get(g, -1) for g in range(G)])
files = {}
for p in glob.glob(glob.escape(emb) + ".s*f*.npy"):
    m = re.search(r"\.s(\d+)f(\d+)\.npy$", p)
    if m:
        files[(int(m.group(1)), int(m.group(2)))] = p
missing = sorted(set(test) - set(files))
if missing:
    sys.exit(f"{emb}: no embeddings for (seed, fold) {missing[:3]}... (run eval with --save-embeddings)")
res = {}  # (readout, alpha) -> seed -> [fold accuracies]
for (s, f), te in sorted(test.items()):
    X = np.load(files[(s, f)])
    if X.shape[0] != G or X.shape[1] % L:
        sys.exit(f"{files[(s, f)]}: shape {X.shape} does not match {G} graphs and L = {L}")
    mask = np.ones(G, bool)
    mask[te] = False
    tr = np.nonzero(mask)[0]
    H = X.reshape(G, L, -1)
    feats = [("uniform", H.mean(1)), ("concat", X)] + [(f"res{l + 1}", H[:, l]) for l in range(L)]
    w = omega.get((s, f))
    if w and len(w) == L:
        feats.append(("task", np.einsum("l,gld->gd", np.array(w, dtype=np.float64), H)))
    for name, F in feats:
        for a in alphas:
            m = LogisticRegression(C=1.0 / a, max_iter=20000).fit(F[tr], y[tr])
            res.setdefault((name, a), {}).setdefault(s, []).append(m.score(F[te], y[te]))
    inner = StratifiedKFold(5, shuffle=True, random_state=s * 1000 + f)
    for a in alphas:
        cv = [cross_val_score(LogisticRegression(C=1.0 / a, max_iter=20000), H[tr, l], y[tr], cv=inner).mean() for l in range(L)]
        l = int(np.argmax(cv))
        m = LogisticRegression(C=1.0 / a, max_iter=20000).fit(H[tr, l], y[tr])
        res.setdefault(("rescv", a), {}).setdefault(s, []).append(m.score(H[te, l], y[te]))
        print(f"  seed {s} fold {f} alpha {a:g}: inner CV per resolution {np.round(cv, 3).tolist()} -> res{l + 1}", file=sys.stderr)
    print(f"seed {s} fold {f} done", file=sys.stderr, flush=True)
print("| readout | alpha (C = 1/alpha) | accuracy | std over seeds | mean fold std |")
print("|---|---|---|---|---|")
for (name, a), per_seed in res.items():
    means = [np.mean(v) for v in per_seed.values()]
    print(f"| {name} | {a:g} | {np.mean(means):.4f} | {np.std(means):.4f} | {np.mean([np.std(v) for v in per_seed.values()]):.4f} |")
