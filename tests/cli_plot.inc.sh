# Command-line checks of `hpjepa plot` (sourced by tests/cli_test.sh: helpers
# ok, bad, expect_fail, $TMP, $DATA). Small synthetic inputs only; < 5 s.
PL=$TMP/plot
mkdir -p "$PL"

# svg_ok NAME FILE: the file exists and parses as an <svg> XML document
svg_ok() {
    if [ ! -s "$2" ]; then bad "$1" "no SVG written"; return; fi
    if ! command -v python3 >/dev/null; then ok "$1 (python3 missing: XML check skipped)"; return; fi
    if python3 -c "import sys, xml.etree.ElementTree as E; sys.exit(E.parse(sys.argv[1]).getroot().tag != '{http://www.w3.org/2000/svg}svg')" "$2" 2>"$TMP/xml.err"
    then ok "$1"; else bad "$1" "not a well-formed SVG: $(head -c 200 "$TMP/xml.err")"; fi
}

for k in quartiles sweep tsne loss; do
    "$HPJ" plot $k --help | grep -q "usage: hpjepa plot $k" && ok "plot $k --help" || bad "plot $k --help"
done

# -- quartiles: 8 graphs with nodes 3 5 5 8 10 12 20 30 -> edges 5 / 9 / 14
#    (numpy's linear interpolation), bins {3,5,5} {8} {10,12} {20,30}.
#    A: 2 seeds (seed 2 first, to check the sort); B: 1 seed, only graph 7 wrong.
qrows() { # qrows SEED CORRECT...: one row per graph, label = g % 2
    local s=$1 g=0 c; shift
    local nodes=(3 5 5 8 10 12 20 30)
    for c in "$@"; do
        local lab=$((g % 2)) pred=$((g % 2)); [ "$c" = 1 ] || pred=$((1 - lab))
        echo "$s,$((g % 3 + 1)),$g,${nodes[$g]},$((nodes[g] + 1)),$lab,$pred,$c"
        g=$((g + 1))
    done
}
QH=seed,fold,graph,nodes,edges,label,pred,correct
{ echo $QH; qrows 2 1 0 0 0 1 1 0 1; qrows 1 1 1 0 1 1 0 1 1; } >"$PL/a.graphs.csv"
{ echo $QH; qrows 1 1 1 1 1 1 1 1 0; } >"$PL/b.graphs.csv"
cat >"$PL/q.expected" <<'EOF'
| quartile | nodes | graphs | A | B&<1> |
|---|---|---|---|---|
| Q1 | 3-5 | 3 | 0.5000 +- 0.1667 | 1.0000 |
| Q2 | 8 | 1 | 0.5000 +- 0.5000 | 1.0000 |
| Q3 | 10-12 | 2 | 0.7500 +- 0.2500 | 1.0000 |
| Q4 | 20-30 | 2 | 0.7500 +- 0.2500 | 0.5000 |
EOF
if "$HPJ" plot quartiles --out "$PL/q.svg" A="$PL/a.graphs.csv" "B&<1>=$PL/b.graphs.csv" >"$PL/q.out" 2>"$PL/q.err" &&
   diff "$PL/q.expected" "$PL/q.out" >/dev/null; then ok "plot quartiles: exact table (2 seeds vs 1, escaped label)"
else bad "plot quartiles: exact table" "$(cat "$PL/q.out" "$PL/q.err" | head -8)"; fi
svg_ok "plot quartiles: well-formed SVG" "$PL/q.svg"
grep -q "Quartile edges 5 / 9 / 14 nodes over 8 graphs" "$PL/q.svg" && ok "plot quartiles: interpolated edges in the SVG" ||
    bad "plot quartiles: interpolated edges in the SVG"
{ echo seed,fold,graph,nodes,edges,target,pred,abs_err
  for g in 0 1 2 3 4 5 6 7; do echo "1,1,$g,$((g + 3)),$((g + 2)),0.5,0.$g,$(awk -v g=$g 'BEGIN { printf "%.1f", (g > 5 ? g - 5 : 5 - g) / 10 }')"; done
} >"$PL/r.graphs.csv"
"$HPJ" plot quartiles --out "$PL/r.svg" "$PL/r.graphs.csv" >"$PL/r.out" 2>/dev/null && grep -q '^| Q1 | 3-4 | 2 | 0.4500 |$' "$PL/r.out" &&
    ok "plot quartiles: regression file gives MAE" || bad "plot quartiles: regression file gives MAE" "$(cat "$PL/r.out")"
svg_ok "plot quartiles: regression SVG" "$PL/r.svg"

# -- sweep: labels may hold '='; one seed -> fold_std error bars
printf '{"dataset": "MUTAG", "metric": "accuracy", "mean": 0.914620, "std": 0.000000, "fold_std": 0.054181, "seeds": 1, "folds": 10, "rows": [{"seed": 1, "omega": [0.2, 0.2]}], "config": "mode = hp\\nresolutions = 2,4\\n"}\n' >"$PL/s1.json"
printf '{"dataset": "MUTAG", "metric": "accuracy",\n "mean": 0.9, "std": 0.01, "fold_std": 0.05, "seeds": 5}\n' >"$PL/s2.json"
if "$HPJ" plot sweep --out "$PL/s.svg" "K=2,4=$PL/s1.json" "K=2,4,8=$PL/s2.json" >"$PL/s.out" 2>/dev/null &&
   grep -q '^| K=2,4 | MUTAG | 0.9146 | 0.0000 | 0.0542 | 1 |$' "$PL/s.out" && grep -q '^| K=2,4,8 | MUTAG | 0.9000 |' "$PL/s.out"; then
    ok "plot sweep: table"
else bad "plot sweep: table" "$(cat "$PL/s.out")"; fi
svg_ok "plot sweep: well-formed SVG" "$PL/s.svg"

# -- loss: two files, one panel each; l2 is a Graph-JEPA-mode log (P, its
#    patches, where an HP-JEPA log has K)
{ echo epoch,step,resolution,K,loss; for e in 1 2 3; do echo "$e,$((e * 4)),1,2,0.$((9 - e))"; echo "$e,$((e * 4)),2,4,0.00$e"; done; } >"$PL/l1.csv"
{ echo epoch,step,resolution,P,loss; echo 1,4,1,32,0.5; echo 2,8,1,32,0.25; } >"$PL/l2.csv"
"$HPJ" plot loss --out "$PL/l.svg" "$PL/l1.csv" "$PL/l2.csv" >"$PL/l.out" 2>/dev/null && grep -q '^| l1 | K = 4 | 3 | 0.001 | 0.003 |$' "$PL/l.out" &&
   grep -q '^| l2 | P = 32 | 2 | 0.5 | 0.25 |$' "$PL/l.out" && ok "plot loss: table" || bad "plot loss: table" "$(cat "$PL/l.out")"
svg_ok "plot loss: well-formed SVG" "$PL/l.svg"
grep -q "log scale" "$PL/l.svg" && ok "plot loss: log axis for a 800x range" || bad "plot loss: log axis for a 800x range"
# LABEL=FILE as the other kinds take it: the panels are titled by the labels,
# not the file names; the Graph-JEPA panel's legend says P = 32, never K = 32
if "$HPJ" plot loss --out "$PL/lab.svg" "HP-JEPA=$PL/l1.csv" "Graph-JEPA mode=$PL/l2.csv" >"$PL/lab.out" 2>/dev/null &&
   grep -q 'font-weight="bold">HP-JEPA</text>' "$PL/lab.svg" && grep -q 'font-weight="bold">Graph-JEPA mode</text>' "$PL/lab.svg" &&
   ! grep -q 'l[12]\.csv' "$PL/lab.svg" && grep -q '>P = 32</text>' "$PL/lab.svg" && ! grep -q 'K = 32' "$PL/lab.svg" &&
   grep -q '>K = 4</text>' "$PL/lab.svg" && grep -q '^| Graph-JEPA mode | P = 32 | 2 |' "$PL/lab.out"; then
    ok "plot loss: LABEL=FILE titles the panels; Graph-JEPA mode's level is P"
else bad "plot loss: LABEL=FILE titles the panels; Graph-JEPA mode's level is P" "$(grep -o '>[^<]*</text>' "$PL/lab.svg" | head -8 | tr '\n' ' ')"; fi
{ echo epoch,step,resolution,Q,loss; echo 1,4,1,2,0.5; } >"$PL/lq.csv"
expect_fail "plot loss: neither K nor P in the header" "lq.csv:1: expected the header 'epoch,step,resolution,K,loss' \(or P for K\)" \
    "$HPJ" plot loss --out "$PL/bad.svg" "$PL/lq.csv"

# -- tsne: 300 graphs (paths of 2..6 nodes) in 3 classes, embeddings = 3
#    well-separated Gaussian clusters by class; 300 >= the parallel threshold
if command -v python3 >/dev/null; then
    mkdir -p "$PL/SYN"
    python3 - "$PL" <<'EOF'
import random, struct, sys
d = sys.argv[1]; rng = random.Random(1); G = 300; W = 8
A, ind, lab, node = [], [], [], 0
for g in range(G):
    n = g % 5 + 2
    for v in range(n): ind.append(g + 1)
    for v in range(n - 1): A += ["%d, %d" % (node + v + 1, node + v + 2), "%d, %d" % (node + v + 2, node + v + 1)]
    node += n; lab.append(g % 3)
open(d + "/SYN/SYN_A.txt", "w").write("\n".join(A) + "\n")
open(d + "/SYN/SYN_graph_indicator.txt", "w").write("\n".join(map(str, ind)) + "\n")
open(d + "/SYN/SYN_graph_labels.txt", "w").write("\n".join(map(str, lab)) + "\n")
def npy(path, rows, descr="<f4", fmt="f"):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, len(rows), W)
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
        for r in rows: f.write(struct.pack("<%d%s" % (W, fmt), *r))
rows = [[(10.0 if k == lab[g] else 0.0) + rng.gauss(0, 1) for k in range(W)] for g in range(G)]
npy(d + "/emb.npy", rows)
npy(d + "/short.npy", rows[:-1])
npy(d + "/f8.npy", rows, "<f8", "d")
EOF
    TS=""$HPJ" plot tsne $PL/SYN $PL/emb.npy --iters 300"
    if OMP_NUM_THREADS=1 $TS --out "$PL/t1.svg" >"$PL/t.out" 2>"$PL/t.err"; then
        agree=$(sed -n 's/^knn_class_agreement=//p' "$PL/t.out")
        grep -qE '^tsne n=300 kl=[0-9.]+ seconds=' "$PL/t.out" && grep -q '^knn_quartile_agreement=' "$PL/t.out" &&
            awk -v a="$agree" 'BEGIN { exit !(a >= 0.95) }' && ok "plot tsne: 3 clusters separate (knn_class_agreement=$agree)" ||
            bad "plot tsne: 3 clusters separate" "$(cat "$PL/t.out")"
    else bad "plot tsne: runs" "$(cat "$PL/t.err")"; fi
    svg_ok "plot tsne: well-formed SVG" "$PL/t1.svg"
    OMP_NUM_THREADS=1 $TS --out "$PL/t1b.svg" >/dev/null 2>&1
    cmp -s "$PL/t1.svg" "$PL/t1b.svg" && ok "plot tsne: same seed, same bytes" || bad "plot tsne: same seed, same bytes"
    # passive waiting: on a busy 2-core machine spinning barriers crawl
    OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 $TS --out "$PL/t2.svg" >/dev/null 2>&1
    cmp -s "$PL/t1.svg" "$PL/t2.svg" && ok "plot tsne: 1 vs 2 threads, same bytes" || bad "plot tsne: 1 vs 2 threads, same bytes"
    # the figure fits a page: natural width at most 1000 px (legends under
    # the panels), and the class colours are not the quartiles' (4 quartile
    # + 3 class colours among the points); a regression set's target
    # quartiles get colours of their own too
    w=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)".*/\1/p' "$PL/t1.svg")
    fills() { grep -o '<circle [^>]*r="2.6" fill="#[0-9A-Fa-f]*"' "$1" | sed 's/.*fill="//; s/"$//' | sort -u | wc -l; }
    if [ -n "$w" ] && [ "$w" -le 1000 ] && [ "$(fills "$PL/t1.svg")" -eq 7 ]; then
        ok "plot tsne: at most 1000 px wide ($w), class colours apart from the quartiles'"
    else bad "plot tsne: at most 1000 px wide, class colours apart from the quartiles'" "width $w, $(fills "$PL/t1.svg") colours"; fi
    mkdir -p "$PL/SYNR"
    cp "$PL/SYN/SYN_A.txt" "$PL/SYNR/SYNR_A.txt"; cp "$PL/SYN/SYN_graph_indicator.txt" "$PL/SYNR/SYNR_graph_indicator.txt"
    awk '{ printf "%.1f\n", NR % 7 }' "$PL/SYN/SYN_graph_labels.txt" >"$PL/SYNR/SYNR_graph_attributes.txt"
    if OMP_NUM_THREADS=1 "$HPJ" plot tsne "$PL/SYNR" "$PL/emb.npy" --iters 50 --out "$PL/tr.svg" >/dev/null 2>&1 &&
       [ "$(fills "$PL/tr.svg")" -eq 8 ] && grep -q "coloured by target quartile" "$PL/tr.svg"; then
        ok "plot tsne: target quartiles apart from the node-count quartiles' colours"
    else bad "plot tsne: target quartiles apart from the node-count quartiles' colours" "$(fills "$PL/tr.svg" 2>/dev/null) colours"; fi
    expect_fail "plot tsne: .npy with a wrong row count" "short.npy: has 299 rows but SYN has 300 graphs" \
        "$HPJ" plot tsne "$PL/SYN" "$PL/short.npy" --out "$PL/bad.svg"
    expect_fail "plot tsne: .npy of float64" "f8.npy: descr is '<f8', expected '<f4'" "$HPJ" plot tsne "$PL/SYN" "$PL/f8.npy" --out "$PL/bad.svg"
    # a header that ends right after a key (the reader once stepped past its end)
    printf '\x93NUMPY\x01\x00\x06\x00{descr' >"$PL/cut.npy"
    expect_fail "plot tsne: .npy header ending in a key" "cut.npy: .npy header has no descr" \
        "$HPJ" plot tsne "$PL/SYN" "$PL/cut.npy" --out "$PL/bad.svg"
    printf "\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'fortran_order'" >"$PL/cut2.npy"
    expect_fail "plot tsne: .npy header ending in fortran_order" "cut2.npy: fortran_order must be False" \
        "$HPJ" plot tsne "$PL/SYN" "$PL/cut2.npy" --out "$PL/bad.svg"
else
    echo "  (no python3: plot tsne checks skipped)"
fi

# -- every kind: a viewBox and a natural size that scales down to a narrower
#    window or column (max-width), so no figure is cut
for f in q s l t1; do
    [ -f "$PL/$f.svg" ] || continue
    if grep -qE '^<svg [^>]*width="([0-9]+)" height="([0-9]+)" viewBox="0 0 [0-9]+ [0-9]+" style="max-width: 100%; height: auto"' "$PL/$f.svg"; then
        ok "plot: $f.svg scales down (viewBox, max-width 100%)"
    else bad "plot: $f.svg scales down (viewBox, max-width 100%)" "$(grep -m1 '^<svg' "$PL/$f.svg")"; fi
done
w=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)".*/\1/p' "$PL/lab.svg")
[ -n "$w" ] && [ "$w" -le 1000 ] && ok "plot loss: two panels within 1000 px ($w)" || bad "plot loss: two panels within 1000 px" "width $w"

# -- bad input: one stderr line, non-zero exit, no output file
{ echo seed,fold,graph,nodes; echo 1,1,0,3; } >"$PL/hdr.graphs.csv"
expect_fail "plot quartiles: wrong CSV header" "hdr.graphs.csv:1: expected the header 'seed,fold,graph,nodes,edges,label,pred,correct'" \
    "$HPJ" plot quartiles --out "$PL/bad.svg" "$PL/hdr.graphs.csv"
{ echo $QH; echo 1,1,0,3,4,0,0,1; echo 1,1,1,5,6,1; } >"$PL/short.graphs.csv"
expect_fail "plot quartiles: short row names file:line" "short.graphs.csv:3: expected 8 comma-separated fields, got 6" \
    "$HPJ" plot quartiles --out "$PL/bad.svg" "$PL/short.graphs.csv"
{ echo $QH; qrows 1 1 1 1 1 1 1 1 1; } | sed 's/^1,1,3,8,9,1,1,1$/1,1,3,9,9,1,1,1/' >"$PL/other.graphs.csv"
expect_fail "plot quartiles: files describe different graphs" "other.graphs.csv: graph 3 has 9 nodes but 8 in" \
    "$HPJ" plot quartiles --out "$PL/bad.svg" "$PL/b.graphs.csv" "$PL/other.graphs.csv"
printf '{"dataset": "X", "metric": "accuracy", "mean": 0.5 "std": 0}\n' >"$PL/bad.json"
expect_fail "plot sweep: malformed JSON" "bad.json:1: expected ',' or '}' after \"mean\"" "$HPJ" plot sweep --out "$PL/bad.svg" "$PL/bad.json"
{ echo epoch,step,resolution,K,loss; echo 1,4,1,2,0.5; echo 1,4,1,4,0.4; } >"$PL/badk.csv"
expect_fail "plot loss: K changes within a resolution" "badk.csv:3: resolution 1 has K = 4 here but 2 on line 2" \
    "$HPJ" plot loss --out "$PL/bad.svg" "$PL/badk.csv"
expect_fail "plot: missing input file" "nope.csv: cannot open" "$HPJ" plot loss --out "$PL/bad.svg" "$PL/nope.csv"
expect_fail "plot: unknown plot kind" "unknown plot kind 'pie'" "$HPJ" plot pie --out "$PL/bad.svg"
expect_fail "plot: missing --out" "missing --out" "$HPJ" plot quartiles "$PL/a.graphs.csv"
[ ! -e "$PL/bad.svg" ] && [ -z "$(ls "$PL" | grep 'tmp~')" ] && ok "plot: no output file after failures" ||
    bad "plot: no output file after failures" "$(ls "$PL")"
"$HPJ" plot pie --out "$PL/bad.svg" 2>/dev/null; rc1=$?
"$HPJ" plot loss --out "$PL/bad.svg" "$PL/nope.csv" 2>/dev/null; rc2=$?
[ $rc1 -eq 2 ] && [ $rc2 -eq 1 ] && ok "plot: exit 2 on usage, 1 on bad input" || bad "plot: exit 2 on usage, 1 on bad input" "got $rc1 and $rc2"
