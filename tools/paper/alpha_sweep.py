#!/usr/bin/python3
"""Probe-penalty sweep with scikit-learn on the embeddings of a model
pretrained on ALL graphs of a dataset (transductive: it shows how the
logistic probe's accuracy depends on the penalty; it is not a protocol
number). Used to read the paper's alpha_probe (see tools/RESULTS.md).

usage: /usr/bin/python3 tools/paper/alpha_sweep.py EMB.npy GRAPH_LABELS.txt L
  EMB.npy: `hpjepa embed MODEL DATASET --out EMB.npy` (concat readout, L
  resolutions); prints 10-fold (StratifiedKFold, seed 12345) test and
  train accuracy of LogisticRegression(C = 1/alpha) for the uniform and
  the concat readouts."""
import sys, numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
X = np.load(sys.argv[1]); L = int(sys.argv[3]); D = X.shape[1] // L
y = np.loadtxt(sys.argv[2], dtype=int)
U = X.reshape(len(X), L, D).mean(1)
for name, F in (("uniform", U), ("concat", X)):
    for alpha in (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0):
        accs, tr = [], []
        for a, b in StratifiedKFold(10, shuffle=True, random_state=12345).split(F, y):
            m = LogisticRegression(C=1.0 / alpha, max_iter=20000).fit(F[a], y[a])
            accs.append(m.score(F[b], y[b])); tr.append(m.score(F[a], y[a]))
        print(f"{name:8s} alpha={alpha:<7g} test={np.mean(accs):.4f} (fold std {np.std(accs):.4f}) train={np.mean(tr):.4f}", flush=True)
