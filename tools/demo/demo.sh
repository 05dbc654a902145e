#!/usr/bin/env bash
# `make demo`: pretrain and evaluate on the synthetic DEMO set (4 classes =
# local motif x global arrangement; see tools/demo/gen_demo.c) with HP-JEPA,
# Graph-JEPA mode and an untrained encoder, 5-fold CV, and print them side
# by side. About a minute or two on 2 cores.
set -eu
cd "$(dirname "$0")/../.."
[ -x ./hpjepa ] || make -s hpjepa
FOLDS=${FOLDS:-5}
SEEDS=${SEEDS:-1}
run() { # label, eval args...
    local label=$1; shift
    local t0 t1 out acc fstd
    t0=$(date +%s.%N)
    out=$(./hpjepa eval data/DEMO "$@" --folds "$FOLDS" --seeds "$SEEDS" --quiet 2>/dev/null)
    t1=$(date +%s.%N)
    acc=$(echo "$out" | sed -n 's/^accuracy=\([0-9.]*\).*/\1/p')
    fstd=$(echo "$out" | sed -n 's/^fold_std=\([0-9.]*\).*/\1/p')
    printf "| %-28s | %8s | %8s | %7.1f |\n" "$label" "${acc:-failed}" "${fstd:--}" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
echo "DEMO: $(./hpjepa stats data/DEMO 2>/dev/null); 4 classes (chance 0.25); $FOLDS-fold CV, $SEEDS seed(s)"
echo
echo "| encoder                      | accuracy | fold std | seconds |"
echo "|------------------------------|----------|----------|---------|"
run "HP-JEPA (K = 2,4,8,16)" --config data/configs/DEMO.cfg
run "Graph-JEPA mode (P = 32)" --config data/configs/graph-jepa/DEMO.cfg
run "untrained encoder (HP)" --config data/configs/DEMO.cfg --set epochs=0
