#!/usr/bin/env bash
# readout_study.sh - readout-time settings on saved fold models, without
# pretraining again: runs `./hpjepa eval --from-models` once per setting
# and writes a Markdown table.
#
# Usage:
#   bash tools/paper/readout_study.sh DATASET CONFIG MODELS_PREFIX OUT.md [SETTING ...]
# DATASET is a folder under $HPJ_DATA (default ../shared/data); the models
# come from `eval --save-models MODELS_PREFIX` with the same CONFIG, seed
# and folds (one seed). A SETTING is a space-separated list of key=value
# config overrides ("" = the config as is). Default settings: the config,
# train_embed=repartition, rw_reduce=mean, both, and each of these with
# probe_select=cv. THREADS (default 1) threads per eval.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 4 ]; then sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
DATA=${HPJ_DATA:-../shared/data}
THREADS=${THREADS:-1}
ds=$1 cfg=$2 models=$3 out=$4
shift 4
if [ $# -eq 0 ]; then
    set -- "" "train_embed=repartition" "rw_reduce=mean" "train_embed=repartition rw_reduce=mean" \
        "probe_select=cv" "probe_select=cv train_embed=repartition" "probe_select=cv rw_reduce=mean" \
        "probe_select=cv train_embed=repartition rw_reduce=mean"
fi
[ -x ./hpjepa ] || make -s hpjepa
[ -f "$models.s1f1.hpj" ] || { echo "readout_study: $models.s1f1.hpj not found (run eval --save-models first)" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# Readout-time settings on saved fold models: $ds"
    echo
    echo "Models: \`$models.s1f<fold>.hpj\` (\`eval --save-models\`, config \`$cfg\`, one seed x 10 folds)."
    echo "Each row: \`./hpjepa eval $DATA/$ds --config $cfg --seeds 1 --from-models $models --set ...\`"
    echo "($THREADS thread(s); \`tools/paper/readout_study.sh\`, $(date -u +%Y-%m-%d))."
    echo
    echo "| settings (--set) | accuracy | fold std | seconds |"
    echo "|---|---|---|---|"
} >"$tmp"
for setting in "$@"; do
    args=()
    for kv in $setting; do args+=(--set "$kv"); done
    t0=$(date +%s)
    res=$(./hpjepa eval "$DATA/$ds" --config "$cfg" --seeds 1 --threads "$THREADS" --quiet --from-models "$models" \
        "${args[@]}" 2>"$tmp.err" | tr '\n' ' ') || { echo "readout_study: '$setting' failed: $(tail -1 "$tmp.err")" >&2; exit 1; }
    t1=$(date +%s)
    acc=$(echo "$res" | sed -nE 's/.*(accuracy|mae)=([0-9.]+).*/\2/p')
    fstd=$(echo "$res" | sed -nE 's/.*fold_std=([0-9.]+).*/\1/p')
    echo "| ${setting:-(config)} | $acc | $fstd | $((t1 - t0)) |" >>"$tmp"
    echo "${setting:-(config)}: $acc (fold std $fstd), $((t1 - t0)) s" >&2
done
rm -f "$tmp.err"
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out" >&2
