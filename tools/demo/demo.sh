#!/usr/bin/env bash
# `make demo`: pretrain and evaluate on the synthetic DEMO set (4 classes =
# local motif x global arrangement; see tools/demo/gen_demo.c) with HP-JEPA,
# Graph-JEPA mode and an untrained encoder, 5-fold CV, and print them side
# by side, a row as each finishes, then the total time.
# FOLDS and SEEDS override the protocol (FOLDS=3 SEEDS=2 make demo).
# A failing run stops the demo with the program's own one-line reason on
# stderr and its exit status. HPJEPA_BIN: the program (default ./hpjepa).
set -eu
cd "$(dirname "$0")/../.."
HPJ=${HPJEPA_BIN:-./hpjepa}
[ -x "$HPJ" ] || make -s hpjepa
FOLDS=${FOLDS:-5}
SEEDS=${SEEDS:-1}
now() { # seconds, with a fraction where date has %N
    local t
    t=$(date +%s.%N)
    case $t in *N*) date +%s ;; *) echo "$t" ;; esac
}
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# on a terminal a "running" line stands where the row will be; in a log
# only the finished rows
[ -t 1 ] && tty=1 || tty=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# what's said: the program's result lines (stdout); its progress and notes
# (stderr) are kept aside and shown only when it fails: its last line is
# the reason
hpjepa() {
    local out rc=0
    out=$("$HPJ" "$@" 2>"$err") || rc=$?
    if [ $rc -ne 0 ]; then
        if [ "$tty" = 1 ] && [ -t 2 ]; then printf "\r\033[K" >&2; fi # the "running" line
        tail -n 1 "$err" >&2
        echo "make demo: failed (exit $rc): $HPJ $*" >&2
        exit $rc
    fi
    echo "$out"
}
run() { # label, eval args...
    local label=$1; shift
    local t0 out acc fstd
    [ "$tty" = 1 ] && printf "| %-28s | running ...\r" "$label"
    t0=$(now)
    out=$(hpjepa eval data/DEMO "$@" --folds "$FOLDS" --seeds "$SEEDS" --quiet)
    [ "$tty" = 1 ] && printf "\033[K"
    acc=$(echo "$out" | sed -n 's/^accuracy=\([0-9.]*\).*/\1/p')
    fstd=$(echo "$out" | sed -n 's/^fold_std=\([0-9.]*\).*/\1/p')
    if [ -z "$acc" ]; then
        echo "make demo: no accuracy line from $HPJ eval data/DEMO $*: $out" >&2
        exit 1
    fi
    printf "| %-28s | %8s | %8s | %7s |\n" "$label" "$acc" "$fstd" "$(since "$t0")"
}
t_all=$(now)
stats=$(hpjepa stats data/DEMO)
echo "DEMO: $stats; 4 classes (chance 0.25); $FOLDS-fold CV, $SEEDS seed(s)"
echo
echo "| encoder                      | accuracy | fold std | seconds |"
echo "|------------------------------|----------|----------|---------|"
run "HP-JEPA (K = 2,4,8,16)" --config data/configs/DEMO.cfg
run "Graph-JEPA mode (P = 32)" --config data/configs/graph-jepa/DEMO.cfg
run "untrained encoder (HP)" --config data/configs/DEMO.cfg --set epochs=0
echo
echo "total: $(since "$t_all") s"
