#!/usr/bin/env bash
# bench_partition.sh - hpjepa's multilevel partitioner against METIS 5.1
# (Debian's package), side by side in one run. Run from the repository root
# after `make` (part of `make bench`). Prints Markdown tables on stdout and
# keeps a copy in build/bench_partition.md.
#
#   large graphs (../shared/peers/gen_graphs.py: grid 1000x1000, random
#   geometric 200k, Barabasi-Albert 200k), K = 2..128:
#     ours  = ./hpjepa partition G K            (kway, best of R runs)
#     METIS = METIS_PartGraphKway via ../shared/peers/metis_bench.c, built here
#             against Debian's libmetis (wall clock, best of R, as ours), and
#             gpmetis G K (Debian's CLI: its cut, as a cross-check)
#   dataset graphs (PROTEINS, DD, REDDIT-BINARY from ../shared/data), every
#   graph with n >= K for K = 2..128 (the graphs where both programs must
#   return K parts), both methods, whole set per K, per-graph time = total / G
#
# Environment: R (repetitions, default 3), BENCH_KS (default "2 4 8 16 32 64
# 128"), HPJ_DATA (datasets, default ../shared/data), BENCH_LARGE=0 or
# BENCH_DATASETS=0 to skip a part.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${R:-3}
KS=${BENCH_KS:-"2 4 8 16 32 64 128"}
DATA=${HPJ_DATA:-../shared/data}
PEERS=../shared/peers
B=build/peers
OUT=build/bench_partition.md
PY=/usr/bin/python3
mkdir -p "$B"

# ---- peers from Debian (gpmetis, libmetis for metis_bench, python3) ----
need=()
command -v gpmetis >/dev/null || need+=(metis)
[ -f /usr/include/metis.h ] || need+=(libmetis-dev)
[ -x "$PY" ] || need+=(python3)
command -v gcc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq "${need[@]}" >&2
fi
[ -x ./hpjepa ] || { echo "bench_partition: ./hpjepa missing (run make)" >&2; exit 1; }
if [ ! -x "$B/metis_bench" ] || [ "$PEERS/metis_bench.c" -nt "$B/metis_bench" ]; then
    gcc -O2 -Wall "$PEERS/metis_bench.c" -o "$B/metis_bench" -lmetis
fi

exec > >(tee "$OUT")
echo "# Partitioner benchmark: hpjepa vs METIS $(dpkg-query -W -f='${Version}' libmetis5 2>/dev/null || echo 5.1)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); R = $R (best of R for every time)."
echo "Both sides single-threaded. Time = partitioning only (no file reading), wall clock."
echo

field() { sed -nE "s/.*$1=([0-9.]+).*/\\1/p"; }
SUMMARY_LARGE=""
SUMMARY_DS=""
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

# ---- large graphs ----
if [ "${BENCH_LARGE:-1}" != 0 ]; then
    G=$B/graphs
    for g in grid1000 rgg200k ba200k; do
        [ -f "$G/$g.graph" ] || "$PY" "$PEERS/gen_graphs.py" --out "$G" --only grid1000 rgg200k ba200k >&2
    done
    echo "## Large graphs, k-way, K = $(echo $KS | tr ' ' ',')"
    echo
    echo "cut ratio and time ratio = ours / METIS (below 1: ours is better). METIS = METIS_PartGraphKway"
    echo "(default options: ufactor 30 = 1.03, seed 1); gpmetis cut = Debian's gpmetis with default options."
    echo
    for g in grid1000 rgg200k ba200k; do
        f=$G/$g.graph
        ks_csv=$(echo $KS | tr ' ' ',')
        mb=$("$B/metis_bench" -r "$R" -m kway -k "$ks_csv" "$f")
        echo "### $g ($(head -c 200 "$f" | head -1 | awk '{printf "n=%d, m=%d", $1, $2}'))"
        echo
        echo "| K | ours cut | METIS cut | cut ratio | gpmetis cut | ours imb | METIS imb | ours ms | METIS ms | time ratio |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        lc=0; lt=0; nk=0; maximb=0
        for k in $KS; do
            o=$(./hpjepa partition "$f" "$k" --reps "$R")
            oc=$(echo "$o" | field edgecut); oi=$(echo "$o" | field imbalance); os=$(echo "$o" | field seconds)
            row=$(echo "$mb" | awk -v k="$k" '$1 == "kway" && $2 == k')
            mc=$(echo "$row" | awk '{print $3}'); mi=$(echo "$row" | awk '{print $5}'); mm=$(echo "$row" | awk '{print $6}')
            gc=$(gpmetis "$f" "$k" 2>/dev/null | sed -nE 's/.*Edgecut: *([0-9]+).*/\1/p'); rm -f "$f.part.$k"
            om=$(awk -v s="$os" 'BEGIN { printf "%.1f", s * 1000 }')
            cr=$(ratio "$oc" "$mc"); tr=$(ratio "$om" "$mm")
            lc=$(awk -v a="$lc" -v r="$cr" 'BEGIN { print a + log(r) }'); lt=$(awk -v a="$lt" -v r="$tr" 'BEGIN { print a + log(r) }'); nk=$((nk + 1))
            maximb=$(awk -v a="$maximb" -v b="$oi" 'BEGIN { print (b > a) ? b : a }')
            echo "| $k | $oc | ${mc%.*} | $cr | $gc | $oi | $mi | $om | $mm | $tr |"
        done
        gcut=$(awk -v a="$lc" -v n="$nk" 'BEGIN { printf "%.3f", exp(a / n) }'); gtime=$(awk -v a="$lt" -v n="$nk" 'BEGIN { printf "%.3f", exp(a / n) }')
        echo "| geo. mean | | | **$gcut** | | | | | | **$gtime** |"
        SUMMARY_LARGE+="| $g | $gcut | $gtime | $maximb |"$'\n'
        echo
    done
fi

# ---- dataset graphs ----
if [ "${BENCH_DATASETS:-1}" != 0 ]; then
    echo "## Dataset graphs (many small graphs), K = $(echo $KS | tr ' ' ',')"
    echo
    echo "Every graph of the dataset with n >= K (column G), partitioned one call per graph."
    echo "cut = mean edge cut per graph, imb = mean imbalance, us = microseconds per graph."
    echo "speedup = METIS us / ours us for the same method. METIS rb = METIS_PartGraphRecursive,"
    echo "kway = METIS_PartGraphKway (default options, seed 1). parts = mean non-empty parts of ours."
    echo
    for ds in PROTEINS DD REDDIT-BINARY; do
        [ -d "$DATA/$ds" ] || { echo "($ds not found in $DATA: skipped)"; echo; continue; }
        # TU folder -> one METIS file per K holding the graphs with n >= K
        "$PY" - "$DATA/$ds" "$B/$ds" $KS <<'PYEOF'
import os, sys
d, out, ks = sys.argv[1], sys.argv[2], [int(k) for k in sys.argv[3:]]
name = os.path.basename(os.path.normpath(d))
gi = [int(x) for x in open(os.path.join(d, name + "_graph_indicator.txt"))]
first = {}
for i, g in enumerate(gi):
    first.setdefault(g, i)
sizes = {}
for g in gi:
    sizes[g] = sizes.get(g, 0) + 1
adj = {}
for line in open(os.path.join(d, name + "_A.txt")):
    a, b = (int(x) - 1 for x in line.replace(",", " ").split())
    if a != b:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
graphs = sorted(sizes)
for k in ks:
    with open("%s.K%d.graphs" % (out, k), "w") as f:
        for g in graphs:
            n, o = sizes[g], first[g]
            if n < k:
                continue
            rows = [sorted(u - o + 1 for u in adj.get(o + v, ())) for v in range(n)]
            f.write("%d %d\n" % (n, sum(len(r) for r in rows) // 2))
            f.write("".join(" ".join(map(str, r)) + "\n" for r in rows))
PYEOF
        echo "### $ds"
        echo
        echo "| K | G | ours kway cut | ours rb cut | METIS rb cut | METIS kway cut | ours imb (kway/rb) | METIS imb (kway/rb) | ours kway us | METIS kway us | speedup kway | ours rb us | METIS rb us | speedup rb | parts |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        s_kr=0; s_kk=0; s_rr=0; c_kr=0; c_rr=0; c_kk=0; nd=0; allparts=yes
        for k in $KS; do
            f=$B/$ds.K$k.graphs
            [ -s "$f" ] || { echo "| $k | 0 | | | | | | | | | | | | | |"; continue; }
            ok_=$(./hpjepa partition "$f" "$k" --many --reps "$R")
            orb=$(./hpjepa partition "$f" "$k" --many --reps "$R" --method rb)
            mb=$("$B/metis_bench" -r "$R" -m both -k "$k" "$f")
            ng=$(echo "$ok_" | field graphs)
            mk=$(echo "$mb" | awk '$1 == "kway"'); mr=$(echo "$mb" | awk '$1 == "rb"')
            okus=$(awk -v s="$(echo "$ok_" | field seconds)" -v g="$ng" 'BEGIN { printf "%.1f", s * 1e6 / g }')
            orus=$(awk -v s="$(echo "$orb" | field seconds)" -v g="$ng" 'BEGIN { printf "%.1f", s * 1e6 / g }')
            mkus=$(echo "$mk" | awk -v g="$ng" '{ printf "%.1f", $6 * 1000 / g }')
            mrus=$(echo "$mr" | awk -v g="$ng" '{ printf "%.1f", $6 * 1000 / g }')
            okc=$(echo "$ok_" | field edgecut); orc=$(echo "$orb" | field edgecut)
            mrc=$(echo "$mr" | awk '{print $3}'); mkc=$(echo "$mk" | awk '{print $3}')
            read -r s_kr s_kk s_rr c_kr c_rr c_kk < <(awk -v a="$s_kr" -v b="$s_kk" -v c="$s_rr" -v d="$c_kr" -v e="$c_rr" -v f="$c_kk" \
                -v ok="$okus" -v orr="$orus" -v mk="$mkus" -v mr="$mrus" -v okc="$okc" -v orc="$orc" -v mrc="$mrc" -v mkc="$mkc" \
                'BEGIN { printf "%g %g %g %g %g %g\n", a + log(mr / ok), b + log(mk / ok), c + log(mr / orr), d + log((okc + 1e-9) / (mrc + 1e-9)), e + log((orc + 1e-9) / (mrc + 1e-9)), f + log((okc + 1e-9) / (mkc + 1e-9)) }')
            nd=$((nd + 1))
            awk -v p="$(echo "$ok_" | field parts)" -v k="$k" 'BEGIN { exit !(p == k) }' || allparts=no
            echo "| $k | $ng | $(echo "$ok_" | field edgecut) | $(echo "$orb" | field edgecut) | $(echo "$mr" | awk '{print $3}') | $(echo "$mk" | awk '{print $3}') | $(echo "$ok_" | field imbalance)/$(echo "$orb" | field imbalance) | $(echo "$mk" | awk '{print $5}')/$(echo "$mr" | awk '{print $5}') | $okus | $mkus | $(ratio "$mkus" "$okus") | $orus | $mrus | $(ratio "$mrus" "$orus") | $(echo "$ok_" | field parts) |"
        done
        if [ "$nd" -gt 0 ]; then
            gm() { awk -v a="$1" -v n="$nd" 'BEGIN { printf "%.2f", exp(a / n) }'; }
            echo
            echo "geo. mean over K: speedup ours kway vs METIS rb **$(gm "$s_kr")x**, vs METIS kway $(gm "$s_kk")x;"
            echo "ours rb vs METIS rb $(gm "$s_rr")x. Cut ratio ours kway / METIS rb **$(gm "$c_kr")**, ours rb / METIS rb $(gm "$c_rr"),"
            echo "ours kway / METIS kway $(gm "$c_kk"). Every part non-empty (parts = K at every K): $allparts."
            SUMMARY_DS+="| $ds | $(gm "$s_kr")x | $(gm "$s_kk")x | $(gm "$s_rr")x | $(gm "$c_kr") | $(gm "$c_rr") | $allparts |"$'\n'
        fi
        echo
    done
fi

if [ -n "$SUMMARY_LARGE$SUMMARY_DS" ]; then
    echo "## Summary against the targets of issue 3"
    echo
    if [ -n "$SUMMARY_LARGE" ]; then
        echo "Large graphs (target: cut <= 1.03x METIS kway, time <= 1.2x, imbalance <= 1.03):"
        echo
        echo "| graph | cut ratio (geo. mean) | time ratio (geo. mean) | max imbalance |"
        echo "|---|---|---|---|"
        printf '%s' "$SUMMARY_LARGE"
        echo
    fi
    if [ -n "$SUMMARY_DS" ]; then
        echo "Dataset graphs (target: >= 3x faster than METIS per graph, cut no worse than METIS rb, no empty part):"
        echo
        echo "| dataset | speedup kway vs METIS rb | kway vs METIS kway | rb vs METIS rb | cut kway / METIS rb | cut rb / METIS rb | all parts non-empty |"
        echo "|---|---|---|---|---|---|---|"
        printf '%s' "$SUMMARY_DS"
        echo
    fi
fi
