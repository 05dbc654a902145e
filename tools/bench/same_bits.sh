#!/usr/bin/env bash
# Do two builds of ./hpjepa train to the same bits? Each case trains one
# checkpoint with each binary (--save-optimizer, so Adam's moments count
# too; 2 threads) and compares the files byte for byte. For a change that
# claims "same bits" (a faster kernel, another tiling), run it against a
# build of the commit before:
#
#   bash tools/bench/same_bits.sh OLD_BIN NEW_BIN [CASES]
#
# CASES, comma-separated (default: mutag,imdb_gj,proteins128,dd512):
#   demo        data/DEMO, data/configs/DEMO.cfg, 1 epoch (under a second)
#   mutag       MUTAG, the paper config (patch mixing, edge labels), 3 epochs
#   imdb_gj     IMDB-BINARY, Graph-JEPA mode, 1 epoch
#   proteins128 PROTEINS, data/configs/bench/proteins_d128.cfg (GELU), 1 epoch
#   dd512       DD, data/configs/bench/dd_d512.cfg, 1 epoch (the slowest:
#               ~15 s a binary on an AMD Zen 5 pair of cores)
# Datasets come from $HPJ_DATA (default ../shared/data). SAME_BITS_SET_NEW
# (e.g. "seed=2") adds --set options to the second binary's runs only: a
# way to see that the check does fail on different bits.
# Prints one line per case, "CASE: same (md5)" or "CASE: DIFFER (md5 md5)",
# and exits 1 if any case differs or fails to train, 2 on bad usage.
set -u
usage="usage: bash tools/bench/same_bits.sh OLD_BIN NEW_BIN [demo,mutag,imdb_gj,proteins128,dd512]"
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "$usage" >&2; exit 2; }
old=$1
new=$2
cases=${3:-mutag,imdb_gj,proteins128,dd512}
for b in "$old" "$new"; do
    [ -x "$b" ] && [ -f "$b" ] || { echo "same_bits.sh: $b is not an executable" >&2; exit 2; }
done
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
old=$(abs "$old")
new=$(abs "$new")
[ -n "${HPJ_DATA:-}" ] && [ -d "$HPJ_DATA" ] && HPJ_DATA=$(cd "$HPJ_DATA" && pwd)
cd "$(dirname "$0")/../.."
DATA=${HPJ_DATA:-../shared/data}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0
IFS=, read -r -a list <<<"$cases"
for c in "${list[@]}"; do
    case $c in
    demo) ds=data/DEMO cfg=data/configs/DEMO.cfg ep=1 ;;
    mutag) ds=$DATA/MUTAG cfg=data/configs/MUTAG.cfg ep=3 ;;
    imdb_gj) ds=$DATA/IMDB-BINARY cfg=data/configs/graph-jepa/IMDB-BINARY.cfg ep=1 ;;
    proteins128) ds=$DATA/PROTEINS cfg=data/configs/bench/proteins_d128.cfg ep=1 ;;
    dd512) ds=$DATA/DD cfg=data/configs/bench/dd_d512.cfg ep=1 ;;
    *) echo "same_bits.sh: unknown case '$c' ($usage)" >&2; exit 2 ;;
    esac
    sums=()
    for side in old new; do
        bin=$old
        extra=()
        if [ "$side" = new ]; then
            bin=$new
            for kv in ${SAME_BITS_SET_NEW:-}; do extra+=(--set "$kv"); done
        fi
        if ! "$bin" pretrain "$ds" --config "$cfg" --set epochs=$ep "${extra[@]}" --out "$tmp/$c.$side.ckpt" \
            --save-optimizer --threads 2 --quiet >"$tmp/$c.$side.log" 2>&1; then
            echo "$c: $side binary failed: $(tail -1 "$tmp/$c.$side.log")"
            status=1
            continue 2
        fi
        sums+=("$(md5sum <"$tmp/$c.$side.ckpt" | cut -c1-32)")
    done
    if cmp -s "$tmp/$c.old.ckpt" "$tmp/$c.new.ckpt"; then
        echo "$c: same (${sums[0]})"
    else
        echo "$c: DIFFER (${sums[0]} ${sums[1]})"
        status=1
    fi
done
exit $status
