#!/usr/bin/env bash
# Figures and tables of the paper's analyses (sections 5.3-5.4) from the runs
# of tools/reproduce.sh: accuracy per node-count quartile (HP-JEPA vs
# Graph-JEPA mode), the resolution-bank sweep, the PROTEINS t-SNE case study
# and the pretraining loss curves. Writes reports/figures/*.svg and
# reports/analysis.md; a figure whose inputs are missing is skipped with a
# note. Usage: bash tools/analysis.sh
set -u
cd "$(dirname "$0")/.."
DATA=${HPJ_DATA:-../shared/data}
R=reports
F=$R/figures
mkdir -p "$F"
[ -x ./hpjepa ] || make -s hpjepa
OUT=$R/analysis.md
{
    echo "# Analyses (paper sections 5.3-5.4)"
    echo
    echo "Produced by \`bash tools/analysis.sh\` from the runs of \`bash tools/reproduce.sh\`"
    echo "(one seed x 10 folds each, as the paper's sensitivity figure). Figures: \`reports/figures/\`."
} >"$OUT"

have() { local f; for f in "$@"; do [ -f "$f" ] || return 1; done; }
section() { printf '\n## %s\n\n' "$1" >>"$OUT"; }
# quartiles DS HP GJ TITLE: accuracy per node-count quartile of two runs
# (their graphs.csv), table into $OUT, figure $F/DS_quartiles.svg
quartiles() {
    local ds=$1 hp=$2 gj=$3 title=$4
    section "$title"
    if have "$hp.graphs.csv" "$gj.graphs.csv"; then
        ./hpjepa plot quartiles --out "$F/${ds}_quartiles.svg" --title "$title" \
            "HP-JEPA=$hp.graphs.csv" "Graph-JEPA mode=$gj.graphs.csv" >>"$OUT" 2>>"$OUT.err"
        echo >>"$OUT"
        echo "![quartiles](figures/${ds}_quartiles.svg)" >>"$OUT"
    else
        echo "(not run yet: needs $hp.graphs.csv and $gj.graphs.csv)" >>"$OUT"
    fi
}

for ds in PROTEINS IMDB-BINARY IMDB-MULTI; do
    # HP-JEPA runs with the probe penalty chosen by CV (probe_select = cv)
    # are preferred when they exist; sweep banks are taken from the same kind
    cv=_cv
    hp=$R/${ds}_hp_cv_1seed gj=$R/${ds}_gj_1seed
    [ -f "$hp.json" ] || { hp=$R/${ds}_hp_1seed; cv=; }
    [ -f "$gj.json" ] || gj=$R/${ds}_gj_clamp20_1seed
    quartiles "$ds" "$hp" "$gj" "$ds: accuracy per node-count quartile"
    section "$ds: resolution-bank sweep"
    args=()
    [ -f "$R/${ds}_hp${cv}_bank248_1seed.json" ] && args+=("{2,4,8}=$R/${ds}_hp${cv}_bank248_1seed.json")
    [ -f "$R/${ds}_hp${cv}_bank24816_1seed.json" ] && args+=("{2,4,8,16}=$R/${ds}_hp${cv}_bank24816_1seed.json")
    [ -f "$hp.json" ] && args+=("full {$(grep -o 'resolutions = [0-9,]*' "$hp.json" | head -1 | cut -d' ' -f3)}=$hp.json")
    [ -f "$gj.json" ] && args+=("Graph-JEPA mode=$gj.json")
    if [ ${#args[@]} -ge 3 ]; then
        ./hpjepa plot sweep --out "$F/${ds}_sweep.svg" --title "$ds: HP-JEPA resolution banks" "${args[@]}" >>"$OUT" 2>>"$OUT.err"
        echo >>"$OUT"
        echo "![sweep](figures/${ds}_sweep.svg)" >>"$OUT"
    else
        echo "(not run yet: needs at least two banks and Graph-JEPA mode)" >>"$OUT"
    fi
done

# beyond the paper's figure: the 5-seed runs (quartiles over every seed)
for ds in MUTAG; do
    quartiles "$ds" "$R/${ds}_hp_5seed" "$R/${ds}_gj_5seed" "$ds: accuracy per node-count quartile (5 seeds x 10 folds)"
done

section "PROTEINS case study: t-SNE of graph embeddings"
for m in hp gj; do
    name=HP-JEPA; [ $m = gj ] && name="Graph-JEPA mode"
    if have "build/analysis/PROTEINS_$m.npy"; then
        echo "$name: \`$(OMP_WAIT_POLICY=passive ./hpjepa plot tsne "$DATA/PROTEINS" "build/analysis/PROTEINS_$m.npy" --threads 1 --out "$F/PROTEINS_tsne_$m.svg" \
            --title "PROTEINS, $name: t-SNE of graph embeddings" 2>>"$OUT.err" | tr '\n' ' ')\`" >>"$OUT"
        echo >>"$OUT"
        echo "![tsne $m](figures/PROTEINS_tsne_$m.svg)" >>"$OUT"
        echo >>"$OUT"
    else
        echo "(not run yet: build/analysis/PROTEINS_$m.npy, see tools/reproduce.sh case_study)" >>"$OUT"
    fi
done

section "Pretraining loss per resolution (PROTEINS, all graphs)"
if have "$R/PROTEINS_hp_loss.csv" "$R/PROTEINS_gj_loss.csv"; then
    ./hpjepa plot loss --out "$F/PROTEINS_loss.svg" --title "PROTEINS: pretraining loss per resolution" \
        "$R/PROTEINS_hp_loss.csv" "$R/PROTEINS_gj_loss.csv" >/dev/null 2>>"$OUT.err"
    echo "![loss](figures/PROTEINS_loss.svg)" >>"$OUT"
else
    echo "(not run yet: reports/PROTEINS_{hp,gj}_loss.csv)" >>"$OUT"
fi
if [ -s "$OUT.err" ]; then echo "some figures failed, see $OUT.err" >&2; else rm -f "$OUT.err"; fi
echo "wrote $OUT and $F/" >&2
