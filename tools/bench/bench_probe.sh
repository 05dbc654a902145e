#!/usr/bin/env bash
# Linear-probe benchmark: hpjepa.h's hpj_logreg_fit / hpj_ridge_fit against
# scikit-learn (LogisticRegression lbfgs, Ridge) on identical data: the
# synthetic sets of ../shared/peers/probe_bench.py (proteins_like 1113 x 2048,
# 2 classes; large5 4999 x 3584, 5 classes; train = first 90 %).
# probe_bench.py --save writes the data files; ./hpjepa bench probe --data
# reads them and checks them bit-for-bit against its own regeneration.
# For each thread count, sklearn and ours run back to back (same machine
# state); the table gives best-of-R fit times, the speedup and accuracies.
#
# Run from the repository root after `make`. Knobs (environment):
#   PROBE_THREADS="1 2"  PROBE_ALPHAS="0.1 1 10"  PROBE_REPS=3
#   OMP_WAIT_POLICY (default PASSIVE here, see below)
set -euo pipefail
PEERS=$(cd "${PEERS:-../shared/peers}" && pwd)
PY=/usr/bin/python3
OUT=build/peers/probe
THREADS=${PROBE_THREADS:-"1 2"}
ALPHAS=${PROBE_ALPHAS:-"0.1 1 10"}
REPS=${PROBE_REPS:-3}

[ -x ./hpjepa ] || { echo "bench_probe: ./hpjepa is missing (run make first)" >&2; exit 1; }
[ -f "$PEERS/probe_bench.py" ] || { echo "bench_probe: $PEERS/probe_bench.py not found (set PEERS)" >&2; exit 1; }
if ! $PY -c "import sklearn, numpy" 2>/dev/null; then
    echo "bench_probe: installing the peer (Debian python3-sklearn python3-numpy) ..." >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-sklearn python3-numpy >&2
fi
# The peer's OpenBLAS kernels: the rule of tools/bench/peer_blas.sh (SkylakeX on
# an AVX-512 CPU, whatever OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE the shell
# had), the same for every bench script.
# shellcheck source=tools/bench/peer_blas.sh
. "$(dirname "$0")/peer_blas.sh"
peer_blas_choose
NOTE=${PEER_BLAS_NOTE%.}
# On a shared machine, OpenMP threads that spin at barriers steal the core
# from the thread still working (2-4x slower 2-thread runs at load ~3 on 2
# CPUs); OpenBLAS's own pool yields instead. Both sides run with passive
# waiting unless OMP_WAIT_POLICY is set (sklearn's Cython loss uses OpenMP).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
NOTE="${NOTE:+$NOTE; }OMP_WAIT_POLICY=$OMP_WAIT_POLICY for both sides"
mkdir -p "$OUT"
: >"$OUT/sklearn.txt"
: >"$OUT/hpjepa.txt"
first=1
echo "# probe benchmark $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for t in $THREADS; do
    save=()
    [ $first -eq 1 ] && save=(--save)
    echo "# sklearn, $t thread(s) ..." >&2
    (cd "$OUT" && $PY "$PEERS/probe_bench.py" --threads "$t" --alphas $ALPHAS --reps "$REPS" "${save[@]}") \
        | grep -E '^\| [a-z_0-9]+ \| [0-9]+x[0-9]+ ' >>"$OUT/sklearn.txt"
    first=0
    echo "# hpjepa, $t thread(s) ..." >&2
    ./hpjepa bench probe --data "$OUT/data" --threads "$t" --reps "$REPS" --alphas "$(echo $ALPHAS | tr ' ' ',')" \
        >>"$OUT/hpjepa.txt"
done

$PY - "$OUT/sklearn.txt" "$OUT/hpjepa.txt" "$REPS" "$NOTE" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import math, sys
sk, ours = {}, {}
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.strip().strip('|').split('|')]
    # set, shape, classes, model, alpha, threads, ms, iters, train, test
    sk[(f[0], f[3], float(f[4]), int(f[5]))] = dict(ms=float(f[6]), it=f[7], tr=f[8], te=f[9], shape=f[1], C=f[2])
for line in open(sys.argv[2]):
    kv = dict(x.split('=', 1) for x in line.split())
    ours[(kv['set'], kv['model'], float(kv['alpha']), int(kv['threads']))] = dict(
        ms=float(kv['fit_ms']), it=kv['iters'], tr=kv['train_acc'], te=kv['test_acc'])
print(f"| set | model | alpha | threads | hpjepa ms | sklearn ms | speedup | hpjepa iters | sklearn iters "
      f"| hpjepa train / test acc | sklearn train / test acc |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
logs = {}
for k in sorted(ours, key=lambda k: (k[3], k[0] != 'proteins_like', k[1], k[2])):
    if k not in sk:
        continue
    o, s = ours[k], sk[k]
    r = s['ms'] / o['ms']
    logs.setdefault((k[1], k[3]), []).append(math.log(r))
    print(f"| {k[0]} ({s['shape']}, {s['C']} cl.) | {k[1]} | {k[2]:g} | {k[3]} | {o['ms']:.1f} | {s['ms']:.1f} | "
          f"**{r:.2f}x** | {o['it']} | {s['it']} | {o['tr']} / {o['te']} | {s['tr']} / {s['te']} |")
print()
for (model, t), v in sorted(logs.items()):
    print(f"geometric-mean speedup {model} at {t} thread(s): {math.exp(sum(v) / len(v)):.2f}x over {len(v)} fits")
print(f"(fit time = best of {sys.argv[3]} fits, wall clock; sklearn's includes its float32 -> float64 "
      f"conversion for logreg; iters: L-BFGS iterations, ours for ridge = refinement steps; "
      f"load average at the end: {sys.argv[5]})")
if sys.argv[4]:
    print(f"({sys.argv[4]})")
EOF
