#!/usr/bin/env bash
# bench_gemm.sh - hpj_gemm against OpenBLAS cblas_sgemm (Debian's
# libopenblas), side by side in one run. Run from the repository root after
# `make` (part of `make bench`). Prints a Markdown table on stdout and keeps
# a copy in build/bench_gemm.md.
#
#   ours     = ./hpjepa bench gemm M N K --layout all --threads T
#   OpenBLAS = ../shared/peers/sgemm_openblas.c, built here against Debian's
#              libopenblas (row-major cblas_sgemm, beta = 0)
# Both time batches of ~10 ms for SECS seconds and report the median batch
# (GFLOP/s = 2MNK / time). The two programs alternate R times; each cell is
# the highest of the R medians (the machine is shared: this keeps the runs
# that were not disturbed) and the best single batch is shown too.
#
# The peer's OpenBLAS kernels follow tools/bench/peer_blas.sh (SkylakeX on an
# AVX-512 CPU, whatever OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE the shell had);
# the core the sgemm program reports is printed with the table.
#
# On a busy machine, libgomp's default spin-waiting makes any OpenMP code
# lose whole time slices when a thread is preempted (the other spins); the
# table reports the load average. OMP_WAIT_POLICY=passive in the
# environment of this script (it is passed to ./hpjepa) avoids that.
#
# Environment: R (default 3), SECS (default 0.4), THREADS (default 2),
# BENCH_GEMM_SHAPES (default "512x512x512 12800x512x512 64x512x512").
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${R:-3}
SECS=${SECS:-0.4}
THREADS=${THREADS:-2}
SHAPES=${BENCH_GEMM_SHAPES:-"512x512x512 12800x512x512 64x512x512"}
PEERS=../shared/peers
B=build/peers
OUT=build/bench_gemm.md
mkdir -p "$B"

# ---- the peer: Debian's OpenBLAS ----
need=()
# the header alone is not enough (another BLAS may provide cblas.h): link it
printf '#include <cblas.h>\nint main(void) { return 0; }\n' | gcc -x c - -lopenblas -o /dev/null >/dev/null 2>&1 || need+=(libopenblas-dev)
command -v gcc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq "${need[@]}" >&2
fi
[ -x ./hpjepa ] || { echo "bench_gemm: ./hpjepa missing (run make)" >&2; exit 1; }
if [ ! -x "$B/sgemm_openblas" ] || [ "$PEERS/sgemm_openblas.c" -nt "$B/sgemm_openblas" ]; then
    gcc -O2 -march=native "$PEERS/sgemm_openblas.c" -o "$B/sgemm_openblas" -lopenblas
fi
# shellcheck source=tools/bench/peer_blas.sh
. "$(dirname "$0")/peer_blas.sh"
peer_blas_choose
core=$(SHAPES=8x8x8 "$B/sgemm_openblas" 0.001 1 | sed -n 's/^# core: //p')
note="$PEER_BLAS_NOTE OpenBLAS reports core $core."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# rows: impl shape layout median best
peer_steal_mark
for r in $(seq "$R"); do
    for s in $SHAPES; do
        read -r M N K <<<"$(echo "$s" | tr 'x' ' ')"
        ./hpjepa bench gemm "$M" "$N" "$K" --layout all --threads "$THREADS" --secs "$SECS" 2>"$tmp/err" >/dev/null
        sed -nE "s/.* ([0-9]+x[0-9]+x[0-9]+) (nn|nt|tn) kernel=([a-z0-9]+) .*median=([0-9.]+) best=([0-9.]+).*/ours \1 \2 \4 \5 \3/p" \
            "$tmp/err" >>"$tmp/rows"
        SHAPES=$s "$B/sgemm_openblas" "$SECS" "$THREADS" | awk '!/^#/ && $1 ~ /^[0-9]+$/ {
            printf "openblas %sx%sx%s %s %s %s -\n", $1, $2, $3, tolower($4), $7, $6 }' >>"$tmp/rows"
    done
done

exec > >(tee "$OUT")
echo "## GEMM: hpj_gemm vs OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo '?'), $THREADS threads"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(peer_steal_line); R = $R rounds of $SECS s per case."
echo "Row-major C (M,N) = op(A) op(B): nn = x W, nt = x W^T (linear forward), tn = A^T B (weight gradient)."
echo "GFLOP/s = 2MNK / time: the highest of the R per-round medians (best single batch in parentheses)."
echo "ratio = ours / OpenBLAS (target >= 0.9). $note Our kernel: $(awk '$1=="ours"{print $6; exit}' "$tmp/rows"), OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(default)}."
echo
echo "| M x N x K | layout | ours GFLOP/s | OpenBLAS GFLOP/s | ratio |"
echo "|---|---|---|---|---|"
awk '{ k = $2 " " $3; if (!($1 SUBSEP k in med) || $4 > med[$1, k]) med[$1, k] = $4;
       if (!($1 SUBSEP k in best) || $5 > best[$1, k]) best[$1, k] = $5;
       if (!(k in seen)) { seen[k] = 1; order[n++] = k } }
     END { met = 0
           for (i = 0; i < n; i++) { k = order[i]; split(k, p, " ")
               o = med["ours", k]; b = med["openblas", k]; q = (b > 0) ? o / b : 0; if (q >= 0.9) met++
               printf "| %s | %s | %.1f (%.1f) | %.1f (%.1f) | %.2f |\n", p[1], p[2], o, best["ours", k], b, best["openblas", k], q }
           printf "\nTarget ratio >= 0.9 met in %d of %d cases.\n", met, n }' "$tmp/rows"
