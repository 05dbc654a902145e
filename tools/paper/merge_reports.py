#!/usr/bin/env python3
"""Joins `hpjepa eval --report` outputs that ran disjoint seeds of one protocol.

A 5-seed protocol can run in parts (eval --first-seed N --seeds M), for
example seeds 1-2 in one session and 3-5 in another; this writes the report
the single run would have written: OUT.json, OUT.md, OUT.graphs.csv and
OUT.out (the eval result lines), aggregated as eval does (mean over folds
per seed, then mean and population std over seeds; fold_std = mean over
seeds of the population std across folds). Wall time is the sum of the parts.

  python3 tools/paper/merge_reports.py OUT PART [PART ...]

PART is a report prefix (PART.json and PART.graphs.csv must exist). The parts
must agree on dataset, metric, folds and config (every key but `seed` and
`threads`); their seed numbers must not overlap. Standard library only.
"""
import json
import math
import os
import sys


def fail(msg):
    sys.stderr.write("merge_reports: %s\n" % msg)
    sys.exit(1)


def split_config(text):
    """(the config lines every part must share, the value of its seed key):
    parts may differ in threads; seed numbers come from --first-seed, so the
    seed key itself must agree too, but is checked on its own."""
    lines, seed = [], None
    for line in text.splitlines():
        k, _, v = line.partition("=")
        k = k.strip()
        if k == "seed":
            seed = int(v)
        elif k != "threads":
            lines.append(line.strip())
    return lines, seed


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def pstd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) >= 2 and argv[1] in ("-h", "--help") else 2
    out, parts = argv[1], argv[2:]
    reps = []
    for p in parts:
        try:
            with open(p + ".json") as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            fail("%s.json: %s" % (p, e))
        for k in ("dataset", "metric", "folds", "rows", "config", "seeds"):
            if k not in r:
                fail("%s.json: no '%s' (not an eval report?)" % (p, k))
        reps.append(r)
    readout_only = ["embeddings_from" in r or "models_from" in r for r in reps]
    if any(readout_only) and not all(readout_only):
        fail("%s.json: a readout-only run (no pretraining) cannot be merged with a protocol run"
             % parts[readout_only.index(True)])
    first = reps[0]
    base_cfg, seed_base = split_config(first["config"])
    rows, seen = [], {}
    for p, r in zip(parts, reps):
        for k in ("dataset", "metric", "folds"):
            if r[k] != first[k]:
                fail("%s.json: %s %r differs from %s.json's %r" % (p, k, r[k], parts[0], first[k]))
        cfg, seed = split_config(r["config"])
        if cfg != base_cfg:
            fail("%s.json: config differs from %s.json's (%s)" % (p, parts[0], "; ".join(sorted(set(cfg) ^ set(base_cfg)))))
        # row number s used the seed (config seed + s - 1), so parts must
        # share the config seed and differ in their numbers (--first-seed)
        if seed != seed_base:
            fail("%s.json: config seed %s differs from %s (number the parts with --first-seed, not the seed key)"
                 % (p, seed, seed_base))
        for row in r["rows"]:
            s = row["seed"]
            if seen.get(s, p) != p:
                fail("seed number %d is in both %s and %s" % (s, seen[s], p))
            seen[s] = p
            rows.append(row)
    seeds = sorted(seen)
    folds = first["folds"]
    per_seed = {}
    for row in rows:
        per_seed.setdefault(row["seed"], []).append(row["score"])
    for s in seeds:
        if len(per_seed[s]) != folds:
            fail("seed %d has %d folds, expected %d (an interrupted part?)" % (s, len(per_seed[s]), folds))
    means = [sum(per_seed[s]) / folds for s in seeds]
    mean = sum(means) / len(means)
    sd = pstd(means)
    fstd = sum(pstd(per_seed[s]) for s in seeds) / len(seeds)
    wall = sum(r.get("wall_seconds", 0.0) for r in reps)
    rows.sort(key=lambda r: (r["seed"], r["fold"]))
    metric = first["metric"]
    lo, hi = seeds[0], seeds[-1]
    seed_text = "%d..%d" % (lo, hi) if seeds == list(range(lo, hi + 1)) else ",".join(map(str, seeds))

    merged = {
        "dataset": first["dataset"], "metric": metric, "mean": round(mean, 6), "std": round(sd, 6),
        "fold_std": round(fstd, 6), "seeds": len(seeds), "first_seed": lo, "folds": folds,
        "wall_seconds": round(wall, 1), "merged_from": parts, "rows": rows, "config": first["config"],
    }
    resumed = sum(r.get("resumed_folds", 0) for r in reps)
    if resumed:  # folds continued from an earlier, stopped run (eval --resume)
        merged["resumed_folds"] = resumed
    # the probe's penalty rule: parts share it (the config says so); with
    # probe_select = cv the folds whose choice is a grid edge add up
    rule = first.get("probe_select")
    probe_line = None
    if rule is not None:
        merged["probe_select"] = rule
    if rule == "cv":
        for p, r in zip(parts, reps):
            if r.get("alpha_grid") != first.get("alpha_grid"):
                fail("%s.json: alpha_grid %r differs from %s.json's %r" % (p, r.get("alpha_grid"), parts[0], first.get("alpha_grid")))
        edge = sum(r.get("alpha_at_edge", 0) for r in reps)
        nfold = sum(r.get("alpha_folds", 0) for r in reps)
        merged["alpha_grid"] = first["alpha_grid"]
        merged["alpha_at_edge"], merged["alpha_folds"] = edge, nfold
        probe_line = ("Probe penalty: probe_select = cv, chosen per fold from the absolute grid %.0e..%.0e by decades; "
                      "alpha at grid edge: %d of %d folds.\n" % (first["alpha_grid"][0], first["alpha_grid"][1], edge, nfold))
    md = ["# hpjepa eval: %s\n" % first["dataset"],
          "%s = %.4f +- %.4f (mean over folds per seed, then mean/std over %d seeds, %s); mean fold std %.4f; "
          "wall time %.1f s (sum of %d parts, joined by tools/paper/merge_reports.py: %s)\n"
          % (metric, mean, sd, len(seeds), seed_text, fstd, wall, len(parts), ", ".join(parts))]
    if probe_line:
        md.append(probe_line)
    if first.get("validation"):  # eval --validation: scores on held-out training graphs
        merged["validation"] = True
        md.append("Validation scores, not test results (eval --validation): the test folds were never read.\n")
    md += ["| seed | fold | %s | train |" % metric.replace("_", " ") if metric.startswith("validation") else
           ("test mae" if metric == "mae" else "test accuracy"),
          "|---|---|---|---|"]
    for row in rows:
        md.append("| %d | %d | %.4f | %.4f |" % (row["seed"], row["fold"], row["score"], row["train"]))
    md.append("\n## Config\n\n```\n%s```\n" % first["config"])

    csv_header, csv_rows = None, []
    for p in parts:
        try:
            with open(p + ".graphs.csv") as f:
                lines = f.read().splitlines()
        except OSError as e:
            fail("%s.graphs.csv: %s" % (p, e))
        if not lines:
            fail("%s.graphs.csv: empty" % p)
        if csv_header is None:
            csv_header = lines[0]
        elif lines[0] != csv_header:
            fail("%s.graphs.csv: header differs from %s.graphs.csv's" % (p, parts[0]))
        csv_rows.extend(lines[1:])
    csv_rows.sort(key=lambda l: (int(l.split(",", 1)[0]), int(l.split(",", 3)[2])))  # seed, graph: as eval writes them

    write_atomic(out + ".graphs.csv", "\n".join([csv_header] + csv_rows) + "\n")
    write_atomic(out + ".md", "\n".join(md))
    sd_text = "n/a" if len(seeds) == 1 else "%.4f" % sd  # as eval prints it: one seed has no std over seeds
    write_atomic(out + ".out", "fold_std=%.4f seconds=%.1f\n%s=%.4f std=%s\n" % (fstd, wall, metric, mean, sd_text))
    write_atomic(out + ".json", json.dumps(merged, indent=1) + "\n")
    sys.stdout.write("%s=%.4f std=%s fold_std=%.4f seeds=%s\n" % (metric, mean, sd_text, fstd, seed_text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
