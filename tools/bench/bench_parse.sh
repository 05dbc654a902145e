#!/usr/bin/env bash
# Parse speed of the TU reader: `./hpjepa stats` on every shared dataset,
# against two Python peers run side by side in the same session:
#   - verify.py's check() (../shared/data/verify.py, standard library only:
#     reads every file and recomputes the statistics), timed in-process;
#   - pandas.read_csv (C tokenizer) reading every file of the dataset into
#     DataFrames, timed in-process: text-to-numbers only, no graph building.
# Ours: the load time `hpjepa stats` reports on stderr (hpj_dataset_load_tu:
# read, parse, symmetrise, deduplicate, build CSR) and the whole process
# wall time. MB/s = dataset text bytes / load time. Medians of REPS runs
# (default 5). Prints a Markdown table. Run from the repository root after
# `make` (tools/bench/bench.sh does both); installs python3-pandas from Debian if
# missing. Env: REPS, HPJ_DATA (default ../shared/data), DATASETS.
set -u
cd "$(dirname "$0")/../.."
DATA=${HPJ_DATA:-../shared/data}
REPS=${REPS:-5}
PY=/usr/bin/python3
[ -x ./hpjepa ] || { echo "bench_parse: ./hpjepa missing (run make)" >&2; exit 1; }
[ -d "$DATA" ] || { echo "bench_parse: no $DATA" >&2; exit 1; }
if ! "$PY" -c 'import pandas' 2>/dev/null; then
    echo "bench_parse: installing python3-pandas (peer) from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq python3-pandas >/dev/null
fi
DATASETS=${DATASETS:-"MUTAG PROTEINS IMDB-BINARY IMDB-MULTI ZINC-12K DD REDDIT-BINARY"}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# the peers: one Python process per run (start-up and imports are not timed)
peer_py=$(mktemp)
trap 'rm -f "$peer_py"' EXIT
cat >"$peer_py" <<'EOF'
import glob, importlib.util, io, os, statistics, sys, time, contextlib
data, name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.spec_from_file_location("verify", os.path.join(data, "verify.py"))
verify = importlib.util.module_from_spec(spec)
spec.loader.exec_module(verify)
def run_verify():
    with contextlib.redirect_stdout(io.StringIO()):
        verify.check(data, name)
try:
    import pandas as pd
except ImportError:
    pd = None
def run_pandas():
    for f in sorted(glob.glob(os.path.join(data, name, name + "_*.txt"))):
        if f.endswith("_split.txt"):
            pd.read_csv(f, header=None, dtype=str, engine="c")
        else:
            pd.read_csv(f, header=None, sep=",", skipinitialspace=True, engine="c")
def med(fn):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
v = med(run_verify)
p = med(run_pandas) if pd is not None else float("nan")
print("%.6f %.6f" % (v, p))
EOF

echo "| dataset | text MB | hpjepa load s | hpjepa MB/s | hpjepa process s | verify.py check() s | verify.py / hpjepa | pandas read_csv s | pandas / hpjepa |"
echo "|---|---|---|---|---|---|---|---|---|"
for d in $DATASETS; do
    dir=$DATA/$d
    [ -d "$dir" ] || continue
    bytes=$(cat "$dir"/"$d"_*.txt | wc -c)
    loads=(); walls=(); tvs=(); tps=()
    ./hpjepa stats "$dir" >/dev/null 2>&1 # warm the page cache
    # interleaved: one run of ours, then one of each peer, REPS times, so a
    # change in the machine's load hits both sides alike
    for ((r = 0; r < REPS; ++r)); do
        t0=$EPOCHREALTIME
        err=$(./hpjepa stats "$dir" 2>&1 >/dev/null)
        t1=$EPOCHREALTIME
        loads+=("$(echo "$err" | sed -nE 's/.*loaded in ([0-9.]+) s.*/\1/p')")
        walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')")
        read -r tv tp < <("$PY" "$peer_py" "$DATA" "$d" 1)
        tvs+=("$tv"); tps+=("$tp")
    done
    load=$(printf '%s\n' "${loads[@]}" | median)
    wall=$(printf '%s\n' "${walls[@]}" | median)
    tv=$(printf '%s\n' "${tvs[@]}" | median)
    tp=$(printf '%s\n' "${tps[@]}" | median)
    awk -v d="$d" -v b="$bytes" -v l="$load" -v w="$wall" -v v="$tv" -v p="$tp" 'BEGIN {
        mb = b / 1e6; lt = (l > 0) ? l : w;   # stats prints 3 decimals; fall back to wall time
        printf "| %s | %.1f | %.3f | %.0f | %.3f | %.3f | %.0fx | %s | %s |\n", d, mb, l, mb / lt, w, v, v / lt,
            (p == "nan") ? "n/a" : sprintf("%.3f", p), (p == "nan") ? "n/a" : sprintf("%.1fx", p / lt) }'
done
echo
echo "Load time = what \`hpjepa stats\` reports (read + parse + CSR), median of $REPS; process = whole"
echo "\`./hpjepa stats\` wall time. Peers in-process (interpreter start-up excluded). Ratios > 1: hpjepa faster."
