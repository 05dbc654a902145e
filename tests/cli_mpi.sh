#!/usr/bin/env bash
# Command-line checks of hpjepa-mpi (make mpi): eval over 2 MPI ranks gives
# the one-process run's result lines and report files, with and without a
# fold log and resumed from part of one; pretrain over 2 ranks trains the
# one-process losses (data-parallel); a rank that fails or is killed ends
# the job in bounded time with its reason; one rank without mpirun is
# ./hpjepa. Prints "N passed, N failed", or a line saying why it is skipped.
# Usage (from the repository root): tests/cli_mpi.sh [HPJEPA_BIN [HPJEPA_MPI_BIN]]
set -u
HPJ=${1:-${HPJEPA_BIN:-./hpjepa}}
MPI=${2:-${HPJEPA_MPI_BIN:-./hpjepa-mpi}}
if [ ! -x "$MPI" ]; then echo "skipped: no $MPI (make mpi; it needs apt-get install openmpi-bin libopenmpi-dev)"; exit 0; fi
if ! command -v mpirun >/dev/null; then echo "skipped: no mpirun (apt-get install openmpi-bin)"; exit 0; fi
PASS=0; FAIL=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ok()  { PASS=$((PASS+1)); echo "[       OK ] $1"; }
bad() { FAIL=$((FAIL+1)); echo "[  FAILED  ] $1"; [ $# -gt 1 ] && echo "    $2"; }

# OpenMPI refuses root (CI runs as root) unless told; 2 ranks on a 1-core
# machine need oversubscription; containers often forbid the single-copy
# shared-memory path; a rank waiting in a collective (data-parallel
# pretrain) yields its core instead of spinning, which on a loaded machine
# would starve the rank it waits for. One thread per rank; -q keeps
# OpenMPI's banners off.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
run2() { timeout 120 mpirun -q -np 2 "$@"; }

probe=$(run2 "$MPI" --version 2>"$TMP/probe.err")
if [ "$probe" != "$("$HPJ" --version)" ]; then
    echo "skipped: mpirun cannot start 2 ranks here: $(head -n 1 "$TMP/probe.err")"
    exit 0
fi

A=(data/DEMO --config data/configs/DEMO.cfg --folds 4 --seeds 2 --set epochs=2)
# wall times differ from run to run: masked (the md's wall time, the json's
# wall_seconds and per-fold seconds, stdout's seconds=, a fold log's seconds)
mask() { sed -E 's/"(wall_seconds|seconds)": [0-9.]+/"\1": X/g; s/wall time [0-9.]+ s/wall time X s/; s/seconds=[0-9.]+/seconds=X/' "$1"; }
# same_report P Q: the same md, json and graphs.csv (times masked)
same_report() {
    local e
    for e in md json; do diff <(mask "$1.$e") <(mask "$2.$e") >/dev/null || { echo "$e differs"; return 1; }; done
    cmp -s "$1.graphs.csv" "$2.graphs.csv" || { echo "graphs.csv differs"; return 1; }
}
log_records() { cut -d' ' -f1,2,4- "$1" | sort; }

# -- the same results as one process --
"$HPJ" eval "${A[@]}" --report "$TMP/one" >"$TMP/one.out" 2>"$TMP/one.err"
run2 "$MPI" eval "${A[@]}" --report "$TMP/two" >"$TMP/two.out" 2>"$TMP/two.err"; rc=$?
if [ $rc -eq 0 ] && [ -s "$TMP/one.out" ] && diff <(mask "$TMP/one.out") <(mask "$TMP/two.out") >/dev/null; then
    ok "eval on 2 ranks: the one-process result lines, printed once"
else bad "eval on 2 ranks: the one-process result lines, printed once" "exit=$rc stdout: $(head -c 300 "$TMP/two.out") stderr: $(tail -c 300 "$TMP/two.err")"; fi
if why=$(same_report "$TMP/one" "$TMP/two"); then ok "eval on 2 ranks: the one-process report files (md, json, graphs.csv)"
else bad "eval on 2 ranks: the one-process report files (md, json, graphs.csv)" "$why"; fi
if grep -q ', rank 0' "$TMP/two.err" && grep -q ', rank 1' "$TMP/two.err" &&
   [ "$(grep -c '^  seed [12]/2 fold  [1-4]/4: accuracy' "$TMP/two.err")" -eq 8 ]; then
    ok "eval on 2 ranks: both ranks ran folds, rank 0 shows all 8"
else bad "eval on 2 ranks: both ranks ran folds, rank 0 shows all 8" "$(head -c 400 "$TMP/two.err")"; fi

# -- fold logs: written by rank 0 (with lanes on each rank, and the
# embeddings saved by the rank that ran the fold), and a run resumed from
# part of one --
"$HPJ" eval "${A[@]}" --fold-log "$TMP/one.folds" --report "$TMP/onel" >/dev/null 2>&1
run2 "$MPI" eval "${A[@]}" --fold-log "$TMP/two.folds" --lanes 2 --save-embeddings "$TMP/emb" --report "$TMP/twol" \
    >/dev/null 2>"$TMP/twol.err"; rc=$?
if [ $rc -eq 0 ] && why=$(same_report "$TMP/onel" "$TMP/twol") && [ "$(wc -l < "$TMP/two.folds")" -eq 8 ] &&
   [ "$(log_records "$TMP/one.folds")" = "$(log_records "$TMP/two.folds")" ] &&
   [ "$(wc -l < "$TMP/emb.done")" -eq 8 ] && [ -f "$TMP/emb.s2f4.npy" ]; then
    ok "eval on 2 ranks --fold-log --lanes 2 --save-embeddings: the same report and 8 records, every fold saved"
else bad "eval on 2 ranks --fold-log --lanes 2 --save-embeddings: the same report and 8 records, every fold saved" \
    "exit=$rc ${why:-} $(tail -c 300 "$TMP/twol.err")"; fi
mkdir -p "$TMP/r"
head -n 3 "$TMP/one.folds" > "$TMP/r/f.folds"
"$HPJ" eval "${A[@]}" --fold-log "$TMP/r/f.folds" --report "$TMP/r/p" >"$TMP/r1.out" 2>/dev/null
for e in md json graphs.csv; do mv "$TMP/r/p.$e" "$TMP/r1.$e"; done
head -n 3 "$TMP/one.folds" > "$TMP/r/f.folds"
run2 "$MPI" eval "${A[@]}" --fold-log "$TMP/r/f.folds" --report "$TMP/r/p" >"$TMP/r2.out" 2>"$TMP/r2.err"; rc=$?
if [ $rc -eq 0 ] && why=$(same_report "$TMP/r1" "$TMP/r/p") && diff <(mask "$TMP/r1.out") <(mask "$TMP/r2.out") >/dev/null &&
   [ "$(grep -c 'restored from' "$TMP/r2.err")" -eq 3 ] && grep -q '"restored_folds": 3, ' "$TMP/r/p.json" &&
   [ "$(log_records "$TMP/one.folds")" = "$(log_records "$TMP/r/f.folds")" ]; then
    ok "eval on 2 ranks resumed from 3 logged folds: the one-process report, the log complete"
else bad "eval on 2 ranks resumed from 3 logged folds: the one-process report, the log complete" "exit=$rc ${why:-} $(tail -c 300 "$TMP/r2.err")"; fi

# -- --validation, and a regression split with --select-epochs: the
# one-process report and fold log (the chosen epochs travel in the lines) --
"$HPJ" eval "${A[@]}" --validation --fold-log "$TMP/v1.folds" --report "$TMP/v1" >"$TMP/v1.out" 2>/dev/null
run2 "$MPI" eval "${A[@]}" --validation --fold-log "$TMP/v2.folds" --report "$TMP/v2" >"$TMP/v2.out" 2>"$TMP/v2.err"; rc=$?
if [ $rc -eq 0 ] && why=$(same_report "$TMP/v1" "$TMP/v2") && diff <(mask "$TMP/v1.out") <(mask "$TMP/v2.out") >/dev/null &&
   grep -q '^validation_accuracy=' "$TMP/v2.out" && [ "$(log_records "$TMP/v1.folds")" = "$(log_records "$TMP/v2.folds")" ]; then
    ok "eval --validation on 2 ranks: the one-process report and fold log"
else bad "eval --validation on 2 ranks: the one-process report and fold log" "exit=$rc ${why:-} $(tail -c 300 "$TMP/v2.err")"; fi
vd=$TMP/VREG; mkdir -p "$vd"
for f in A graph_indicator node_labels; do cp data/DEMO/DEMO_$f.txt "$vd/VREG_$f.txt"; done
awk '{n[$1]++} END {for (g = 1; g <= 400; ++g) printf "%.3f\n", n[g] / 10}' data/DEMO/DEMO_graph_indicator.txt > "$vd/VREG_graph_attributes.txt"
awk 'BEGIN {for (g = 0; g < 400; ++g) print (g % 5 == 0 ? "test" : g % 5 == 1 ? "val" : "train")}' > "$vd/VREG_split.txt"
R=("$vd" --config data/configs/DEMO.cfg --seeds 2 --set epochs=4 --set readout=task --select-epochs 4)
"$HPJ" eval "${R[@]}" --fold-log "$TMP/s1.folds" --report "$TMP/s1" >"$TMP/s1.out" 2>/dev/null
run2 "$MPI" eval "${R[@]}" --fold-log "$TMP/s2.folds" --report "$TMP/s2" >"$TMP/s2.out" 2>"$TMP/s2.err"; rc=$?
if [ $rc -eq 0 ] && why=$(same_report "$TMP/s1" "$TMP/s2") && diff <(mask "$TMP/s1.out") <(mask "$TMP/s2.out") >/dev/null &&
   [ "$(grep -c ' epoch=[1-4]$' "$TMP/s2.folds")" -eq 2 ] && [ "$(log_records "$TMP/s1.folds")" = "$(log_records "$TMP/s2.folds")" ]; then
    ok "eval --select-epochs on 2 ranks (a regression split, 2 seeds): the one-process report and fold log"
else bad "eval --select-epochs on 2 ranks (a regression split, 2 seeds): the one-process report and fold log" "exit=$rc ${why:-} $(tail -c 300 "$TMP/s2.err")"; fi

# -- one rank, no mpirun: ./hpjepa --
"$MPI" eval "${A[@]}" --report "$TMP/single" >"$TMP/single.out" 2>"$TMP/single.err"; rc=$?
# (stderr too, but for the times)
untimed() { sed -E 's/  [0-9.]+ s(, ETA [0-9hms]+)?$//' "$1"; }
if [ $rc -eq 0 ] && why=$(same_report "$TMP/one" "$TMP/single") && diff <(untimed "$TMP/one.err") <(untimed "$TMP/single.err") >/dev/null &&
   diff <(mask "$TMP/one.out") <(mask "$TMP/single.out") >/dev/null; then
    ok "hpjepa-mpi eval without mpirun: ./hpjepa's output and report"
else bad "hpjepa-mpi eval without mpirun: ./hpjepa's output and report" "exit=$rc ${why:-} $(diff <(untimed "$TMP/one.err") <(untimed "$TMP/single.err") | head -5)"; fi

# -- failures end the job with the reason, in bounded time --
# expect_fail2 NAME PATTERN CMD...: non-zero exit within the timeout, PATTERN on stderr, nothing on stdout
expect_fail2() {
    local name=$1 pat=$2; shift 2
    "$@" >"$TMP/f.out" 2>"$TMP/f.err"; local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -s "$TMP/f.out" ] && grep -qE "$pat" "$TMP/f.err"; then ok "$name"
    else bad "$name" "exit=$rc stderr: $(head -c 300 "$TMP/f.err")"; fi
}
expect_fail2 "2 ranks, a usage error: said once, exit 2" '^hpjepa eval: missing DATASET_DIR' run2 "$MPI" eval
[ "$(wc -l < "$TMP/f.err")" -eq 1 ] && ok "2 ranks, a usage error: one line" || bad "2 ranks, a usage error: one line" "$(cat "$TMP/f.err")"
expect_fail2 "rank 1 cannot read its dataset: the job ends with its reason" 'NOPE/NOPE_A.txt: cannot open' \
    timeout 120 mpirun -q -np 1 "$MPI" eval "${A[@]}" : -np 1 "$MPI" eval "$TMP/NOPE" --config data/configs/DEMO.cfg
expect_fail2 "rank 1 with another config: caught before any work" "rank 1: its dataset or config differs from rank 0's" \
    timeout 120 mpirun -q -np 1 "$MPI" eval "${A[@]}" : -np 1 "$MPI" eval "${A[@]}" --set lr=0.002
expect_fail2 "rank 1 fails at work: the job ends with its reason, no report" 'nodir/m\.s1f2\.hpj: cannot create' \
    timeout 120 mpirun -q -np 1 "$MPI" eval "${A[@]}" --save-models "$TMP/m" --report "$TMP/nope" : \
    -np 1 "$MPI" eval "${A[@]}" --save-models "$TMP/nodir/m" --report "$TMP/nope"
[ ! -e "$TMP/nope.md" ] && ok "rank 1 fails at work: no report" || bad "rank 1 fails at work: no report"

# a rank killed mid-run (kill -9): the job ends at once; the fold log keeps
# the folds finished so far and the same command continues to the report
desc() { local c; for c in $(pgrep -P "$1"); do echo "$c"; desc "$c"; done; }
# kill_rank1 JOB: kill -9 the process of rank 1 among JOB's descendants
# (killed: its pid, or empty), then wait for JOB (rc: its exit status;
# t0, t1: the seconds around the wait)
kill_rank1() {
    local c
    killed=""
    for c in $(desc "$1"); do
        if tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then kill -9 "$c" && killed=$c; fi
    done
    t0=$(date +%s)
    wait "$1"; rc=$?
    t1=$(date +%s)
}
K=(data/DEMO --config data/configs/DEMO.cfg --folds 4 --seeds 1 --set epochs=8)
"$HPJ" eval "${K[@]}" --report "$TMP/k1" >/dev/null 2>&1
run2 "$MPI" eval "${K[@]}" --fold-log "$TMP/k.folds" --report "$TMP/k2" >/dev/null 2>"$TMP/k.err" &
job=$!
for _ in $(seq 600); do [ -s "$TMP/k.folds" ] && break; sleep 0.05; done
kill_rank1 "$job"
n=$(wc -l < "$TMP/k.folds")
if [ -n "$killed" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -le 20 ] && [ ! -e "$TMP/k2.md" ] &&
   [ "$n" -ge 1 ] && [ "$n" -lt 4 ] && [ "$(grep -c '^s1f[1-4] ' "$TMP/k.folds")" -eq "$n" ]; then
    ok "a rank killed mid-run ends the job ($((t1 - t0)) s), the fold log keeps $n whole records"
else bad "a rank killed mid-run ends the job" "killed='$killed' exit=$rc after $((t1 - t0)) s, log lines $n: $(tail -c 300 "$TMP/k.err")"; fi
run2 "$MPI" eval "${K[@]}" --fold-log "$TMP/k.folds" --report "$TMP/k2" >/dev/null 2>"$TMP/k2.err"; rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l < "$TMP/k.folds")" -eq 4 ] &&
   [ "$(grep -o '"\(score\|train\|alpha\|mean\|std\)": [0-9.e-]*' "$TMP/k1.json")" = "$(grep -o '"\(score\|train\|alpha\|mean\|std\)": [0-9.e-]*' "$TMP/k2.json")" ] &&
   cmp -s "$TMP/k1.graphs.csv" "$TMP/k2.graphs.csv"; then
    ok "the killed job continued from its fold log: the one-process results"
else bad "the killed job continued from its fold log: the one-process results" "exit=$rc $(tail -c 300 "$TMP/k2.err")"; fi

# -- pretrain: data-parallel over the ranks --
# MUTAG (the shared data) at a small width, 2 epochs: the per-resolution
# losses of every epoch (--loss-log) within 1e-4 relative of one process,
# the same model on both ranks (hpjepa-mpi compares their CRCs), rank 0
# alone printing and writing; the checkpoint embeds near the one-process one
DATA=${HPJ_DATA:-../shared/data}
if [ -d "$DATA/MUTAG" ]; then
P=("$DATA/MUTAG" --config data/configs/MUTAG.cfg --set epochs=2 --set dim=32 --set heads=2 --set dropout=0.1)
"$HPJ" pretrain "${P[@]}" --out "$TMP/p1.hpj" --loss-log "$TMP/p1.csv" >"$TMP/p1.out" 2>/dev/null
run2 "$MPI" pretrain "${P[@]}" --out "$TMP/p2.hpj" --loss-log "$TMP/p2.csv" >"$TMP/p2.out" 2>"$TMP/p2.err"; rc=$?
# max relative difference of the loss columns, or "rows differ"
relmax() { paste -d, "$1" "$2" | awk -F, 'NR > 1 { if ($1 != $6 || $3 != $8) { print "rows differ"; exit }
    d = $5 - $10; d = d < 0 ? -d : d; r = d / ($10 < 0 ? -$10 : $10); if (r > m) m = r; n++ }
    END { if (n) printf "%.2g\n", m + 0; else print "no rows" }'; }
rel=$(relmax "$TMP/p2.csv" "$TMP/p1.csv")
if [ $rc -eq 0 ] && [ "$(wc -l < "$TMP/p1.csv")" -eq 11 ] && awk -v r="$rel" 'BEGIN { exit !(r + 0 == r && r <= 1e-4) }' &&
   [ "$(cut -d' ' -f2-4 "$TMP/p1.out")" = "$(cut -d' ' -f2-4 "$TMP/p2.out")" ] && [ "$(wc -l < "$TMP/p2.out")" -eq 1 ]; then
    ok "pretrain on 2 ranks: the one-process losses of each epoch and resolution (max relative difference $rel in the log's 6 digits)"
else bad "pretrain on 2 ranks: the one-process losses of each epoch and resolution" "exit=$rc rel=$rel $(tail -c 300 "$TMP/p2.err")"; fi
if [ "$(grep -c '^hpjepa pretrain: the 2 ranks hold the same model (crc32 [0-9a-f]*)$' "$TMP/p2.err")" -eq 1 ] &&
   [ "$(grep -c '^epoch 2/2 ' "$TMP/p2.err")" -eq 1 ] && [ "$(grep -c 'data-parallel over 2 ranks' "$TMP/p2.err")" -eq 1 ]; then
    ok "pretrain on 2 ranks: both ranks hold the same model, rank 0 alone prints"
else bad "pretrain on 2 ranks: both ranks hold the same model, rank 0 alone prints" "$(head -c 400 "$TMP/p2.err")"; fi
# the embeddings of the two checkpoints: the largest difference relative
# to the largest value (a float32 .npy read without numpy)
npy_diff() { python3 - "$1" "$2" <<'PY'
import struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<H', b[8:10])[0]
    return struct.unpack('<%df' % ((len(b) - 10 - n) // 4), b[10 + n:])
a, b = load(sys.argv[1]), load(sys.argv[2])
print('%.2g' % (max(abs(x - y) for x, y in zip(a, b)) / max(abs(x) for x in a)) if len(a) == len(b) else 'sizes differ')
PY
}
"$HPJ" embed "$TMP/p1.hpj" "$DATA/MUTAG" --out "$TMP/e1.npy" >/dev/null 2>&1
"$HPJ" embed "$TMP/p2.hpj" "$DATA/MUTAG" --out "$TMP/e2.npy" >/dev/null 2>&1
ed=$(npy_diff "$TMP/e1.npy" "$TMP/e2.npy" 2>&1)
if awk -v r="$ed" 'BEGIN { exit !(r + 0 == r && r <= 1e-4) }'; then
    ok "pretrain on 2 ranks: its checkpoint embeds within 1e-4 of the one-process one (max difference / max value $ed)"
else bad "pretrain on 2 ranks: its checkpoint embeds within 1e-4 of the one-process one" "$ed"; fi
# in two parts (--until-epoch, then --resume): the uninterrupted run's bits
run2 "$MPI" pretrain "${P[@]}" --save-optimizer --out "$TMP/q1.hpj" >/dev/null 2>&1
run2 "$MPI" pretrain "${P[@]}" --until-epoch 1 --out "$TMP/q2.hpj" >/dev/null 2>&1 &&
run2 "$MPI" pretrain "$DATA/MUTAG" --resume "$TMP/q2.hpj" --save-optimizer --out "$TMP/q2.hpj" >/dev/null 2>"$TMP/q2.err"; rc=$?
if [ $rc -eq 0 ] && cmp -s "$TMP/q1.hpj" "$TMP/q2.hpj"; then ok "pretrain on 2 ranks, stopped after epoch 1 and resumed: the uninterrupted run's checkpoint"
else bad "pretrain on 2 ranks, stopped after epoch 1 and resumed: the uninterrupted run's checkpoint" "exit=$rc $(tail -c 300 "$TMP/q2.err")"; fi
# failures: said once, by rank 0, in bounded time, and no file written
expect_fail2 "pretrain, rank 1 cannot read its dataset: the job ends with its reason" '^\[rank 1\] hpjepa pretrain: .*NOPE_A\.txt: cannot open' \
    timeout 120 mpirun -q -np 1 "$MPI" pretrain "${P[@]}" --out "$TMP/f1.hpj" : -np 1 "$MPI" pretrain "$TMP/NOPE" --config data/configs/MUTAG.cfg --out "$TMP/f1.hpj"
[ ! -e "$TMP/f1.hpj" ] && [ "$(grep -c 'cannot open' "$TMP/f.err")" -eq 1 ] && ok "pretrain, rank 1 cannot read its dataset: said once, no model" ||
    bad "pretrain, rank 1 cannot read its dataset: said once, no model" "$(cat "$TMP/f.err")"
expect_fail2 "pretrain, rank 1 with another config: the job ends before training" 'rank 1 of 2 trains other graphs, another model shape or other settings than rank 0' \
    timeout 120 mpirun -q -np 1 "$MPI" pretrain "${P[@]}" --out "$TMP/f2.hpj" : -np 1 "$MPI" pretrain "${P[@]}" --set lr=0.002 --out "$TMP/f2.hpj"
expect_fail2 "pretrain on 2 ranks, a usage error: said once, exit 2" '^hpjepa pretrain: missing --out MODEL$' run2 "$MPI" pretrain "${P[@]}"
[ "$(wc -l < "$TMP/f.err")" -eq 1 ] && ok "pretrain on 2 ranks, a usage error: one line" || bad "pretrain on 2 ranks, a usage error: one line" "$(cat "$TMP/f.err")"
# a rank killed mid-run (kill -9): the job ends at once, no model written
run2 "$MPI" pretrain "$DATA/MUTAG" --config data/configs/MUTAG.cfg --set epochs=400 --set dim=32 --set heads=2 \
    --out "$TMP/k.hpj" >/dev/null 2>"$TMP/pk.err" &
job=$!
sleep 1.5
kill_rank1 "$job"
if [ -n "$killed" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -le 20 ] && [ ! -e "$TMP/k.hpj" ]; then
    ok "pretrain on 2 ranks, a rank killed mid-run: the job ends ($((t1 - t0)) s), no model written"
else bad "pretrain on 2 ranks, a rank killed mid-run: the job ends" "killed='$killed' exit=$rc after $((t1 - t0)) s: $(tail -c 300 "$TMP/pk.err")"; fi
else
    echo "  (no $DATA/MUTAG: the data-parallel pretrain checks skipped)"
fi

# -- embed runs on rank 0 only, and says so --
"$HPJ" pretrain data/DEMO --config data/configs/DEMO.cfg --set epochs=1 --out "$TMP/m1.hpj" >/dev/null 2>&1
"$HPJ" embed "$TMP/m1.hpj" data/DEMO --out "$TMP/d1.npy" >/dev/null 2>&1
run2 "$MPI" embed "$TMP/m1.hpj" data/DEMO --out "$TMP/d2.npy" >"$TMP/em.out" 2>"$TMP/em.err"; rc=$?
if [ $rc -eq 0 ] && cmp -s "$TMP/d1.npy" "$TMP/d2.npy" && [ "$(grep -c 'runs on rank 0 only' "$TMP/em.err")" -eq 1 ] &&
   [ "$(wc -l < "$TMP/em.out")" -eq 1 ]; then
    ok "embed on 2 ranks: rank 0 alone, the one-process embeddings, said once"
else bad "embed on 2 ranks: rank 0 alone, the one-process embeddings, said once" "exit=$rc $(head -c 300 "$TMP/em.err")"; fi
run2 "$MPI" pretrain --help >"$TMP/h.out" 2>&1
[ "$(grep -c '^usage: hpjepa pretrain' "$TMP/h.out")" -eq 1 ] && ok "pretrain --help on 2 ranks: printed once" || bad "pretrain --help on 2 ranks: printed once"
run2 "$MPI" eval --help >"$TMP/h.out" 2>&1
[ "$(grep -c '^usage: hpjepa eval' "$TMP/h.out")" -eq 1 ] && ok "eval --help on 2 ranks: printed once" || bad "eval --help on 2 ranks: printed once"

echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
