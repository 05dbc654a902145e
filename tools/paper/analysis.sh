#!/usr/bin/env bash
# Figures and tables of the paper's analyses (sections 5.3-5.4) from the runs
# of tools/paper/reproduce.sh: accuracy per node-count quartile (HP-JEPA vs
# Graph-JEPA mode), the resolution-bank sweep, the PROTEINS t-SNE case study
# and the pretraining loss curves. Writes reports/figures/*.svg and
# reports/analysis.md; a figure whose inputs are missing is skipped with a
# note. Usage: bash tools/paper/analysis.sh
set -u
cd "$(dirname "$0")/../.."
DATA=${HPJ_DATA:-../shared/data}
R=tools/paper/reports
F=$R/figures
mkdir -p "$F"
[ -x ./hpjepa ] || make -s hpjepa
OUT=$R/analysis.md
PREV=$(cat "$OUT" 2>/dev/null || true) # to keep results whose inputs (build/) are gone
rm -f "$OUT.err" # this run's failures only
{
    echo "# Analyses (paper sections 5.3-5.4)"
    echo
    echo "Produced by \`bash tools/paper/analysis.sh\` from the runs of \`bash tools/paper/reproduce.sh\`"
    echo "(the quartiles over the seeds both methods have, the sweeps one seed x 10 folds, as the"
    echo "paper's sensitivity figure). Figures: \`reports/figures/\`."
} >"$OUT"

have() { local f; for f in "$@"; do [ -f "$f" ] || return 1; done; }
section() { printf '\n## %s\n\n' "$1" >>"$OUT"; }
# the first PREFIX given whose .json and .graphs.csv exist (a full run or a
# merged one: seeds numbered from 1)
first_run() {
    local p
    for p in "$@"; do
        if have "$p.json" "$p.graphs.csv" && ! grep -qE '"first_seed": ([02-9]|1[0-9])' "$p.json"; then echo "$p"; return 0; fi
    done
    return 1
}
nseeds() { grep -o '"seeds": [0-9]*' "$1.json" | head -1 | grep -o '[0-9]*$'; }
# table_run DS M: the one-protocol run of method M (hp or gj) on DS, the
# reproduce.sh table_* parts (_1seed, _seedsA-B) joined into one report
# under build/analysis/ when there are several; nothing if seed 1 is missing
table_run() {
    local first=$R/table_$1_$2_1seed parts=() p
    have "$first.json" "$first.graphs.csv" || return 1
    for p in "$R"/table_$1_$2_seeds*.json; do [ -f "$p" ] && parts+=("${p%.json}"); done
    if [ ${#parts[@]} -eq 0 ]; then echo "$first"; return 0; fi
    python3 tools/paper/merge_reports.py "build/analysis/table_$1_$2" "$first" "${parts[@]}" >/dev/null 2>>"$OUT.err" || return 1
    echo "build/analysis/table_$1_$2"
}
# shown PREFIX: a report as analysis.md names it (a joined one by its parts)
shown() { case $1 in build/analysis/*) echo "$R/$(basename "$1")_*";; *) echo "$1";; esac; }
# quartiles DS TITLE: accuracy per node-count quartile, HP-JEPA against
# Graph-JEPA mode on the same seeds: the one-protocol table runs when both
# methods have them, else the earlier runs with the most seeds (HP-JEPA
# with the penalty chosen by inner CV preferred); both cut to the seeds they
# share; table into $OUT, figure $F/DS_quartiles.svg
quartiles() {
    local ds=$1 title=$2 hp gj n s
    if hp=$(table_run "$ds" hp) && gj=$(table_run "$ds" gj); then
        title="$title, one protocol"
    else
        hp=$(first_run "$R/${ds}_hp_cv_5seed_fromemb" "$R/${ds}_hp_5seed" "$R/${ds}_hp_cv_2seed_fromemb" "$R/${ds}_hp_2seed" \
            "$R/${ds}_hp_cv_1seed" "$R/${ds}_hp_cv_1seed_fromemb" "$R/${ds}_hp_1seed" "$R/${ds}_hp_clamp20_1seed")
        gj=$(first_run "$R/${ds}_gj_5seed" "$R/${ds}_gj_clamp20_5seed" "$R/${ds}_gj_clamp20_2seed" "$R/${ds}_gj_1seed" \
            "$R/${ds}_gj_clamp20_1seed")
    fi
    if [ -n "$hp" ] && [ -n "$gj" ]; then
        n=$(nseeds "$hp"); [ "$(nseeds "$gj")" -lt "$n" ] && n=$(nseeds "$gj")
        s="1 seed"; [ "$n" -gt 1 ] && s="$n seeds"
        section "$title ($s x 10 folds)"
        echo "HP-JEPA: \`$(shown "$hp")\`, Graph-JEPA mode: \`$(shown "$gj")\` (seeds 1..$n of each)." >>"$OUT"
        echo >>"$OUT"
        awk -F, -v n="$n" 'NR == 1 || $1 <= n' "$hp.graphs.csv" >"build/analysis/${ds}_q_hp.csv"
        awk -F, -v n="$n" 'NR == 1 || $1 <= n' "$gj.graphs.csv" >"build/analysis/${ds}_q_gj.csv"
        ./hpjepa plot quartiles --out "$F/${ds}_quartiles.svg" --title "$title ($s x 10 folds)" \
            "HP-JEPA=build/analysis/${ds}_q_hp.csv" "Graph-JEPA mode=build/analysis/${ds}_q_gj.csv" >>"$OUT" 2>>"$OUT.err"
        echo >>"$OUT"
        echo "![quartiles](figures/${ds}_quartiles.svg)" >>"$OUT"
    else
        section "$title"
        echo "(not run yet: needs a HP-JEPA and a Graph-JEPA-mode run with graphs.csv)" >>"$OUT"
    fi
}

for ds in PROTEINS IMDB-BINARY IMDB-MULTI; do
    # HP-JEPA runs with the probe penalty chosen by CV (probe_select = cv)
    # are preferred when they exist; sweep banks are taken from the same kind
    cv=_cv
    hp=$R/${ds}_hp_cv_1seed gj=$R/${ds}_gj_1seed
    [ -f "$hp.json" ] || { hp=$R/${ds}_hp_1seed; cv=; }
    [ -f "$gj.json" ] || gj=$R/${ds}_gj_clamp20_1seed
    quartiles "$ds" "$ds: accuracy per node-count quartile"
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

# beyond the paper's figure
quartiles MUTAG "MUTAG: accuracy per node-count quartile"
quartiles DD "DD: accuracy per node-count quartile"
quartiles REDDIT-BINARY "REDDIT-BINARY: accuracy per node-count quartile"

section "PROTEINS case study: t-SNE of graph embeddings"
for m in hp gj; do
    name=HP-JEPA; [ $m = gj ] && name="Graph-JEPA mode"
    if have "build/analysis/PROTEINS_$m.npy"; then
        echo "$name: \`$(OMP_WAIT_POLICY=passive ./hpjepa plot tsne "$DATA/PROTEINS" "build/analysis/PROTEINS_$m.npy" --threads 1 --out "$F/PROTEINS_tsne_$m.svg" \
            --title "PROTEINS, $name: t-SNE of graph embeddings" 2>>"$OUT.err" | tr '\n' ' ')\`" >>"$OUT"
        echo >>"$OUT"
        echo "![tsne $m](figures/PROTEINS_tsne_$m.svg)" >>"$OUT"
        echo >>"$OUT"
    elif [ -f "$F/PROTEINS_tsne_$m.svg" ] && old=$(printf '%s\n' "$PREV" | grep -m1 "^$name: \`tsne") ; then
        # an earlier run's figure and numbers (its embeddings stay in build/, not in git)
        echo "$old (an earlier run: build/analysis/PROTEINS_$m.npy is not on this machine)" | sed 's/ (an earlier run: [^)]*) (an earlier run/ (an earlier run/' >>"$OUT"
        echo >>"$OUT"
        echo "![tsne $m](figures/PROTEINS_tsne_$m.svg)" >>"$OUT"
        echo >>"$OUT"
    else
        echo "(not run yet: build/analysis/PROTEINS_$m.npy, see tools/paper/reproduce.sh case_study)" >>"$OUT"
    fi
done

section "Pretraining loss per resolution (PROTEINS, all graphs)"
if have "$R/PROTEINS_hp_loss.csv" "$R/PROTEINS_gj_loss.csv"; then
    ./hpjepa plot loss --out "$F/PROTEINS_loss.svg" --title "PROTEINS: pretraining loss per resolution" \
        "HP-JEPA=$R/PROTEINS_hp_loss.csv" "Graph-JEPA mode=$R/PROTEINS_gj_loss.csv" >/dev/null 2>>"$OUT.err"
    echo "![loss](figures/PROTEINS_loss.svg)" >>"$OUT"
else
    echo "(not run yet: tools/paper/reports/PROTEINS_{hp,gj}_loss.csv)" >>"$OUT"
fi
if [ -s "$OUT.err" ]; then echo "some figures failed, see $OUT.err" >&2; else rm -f "$OUT.err"; fi
echo "wrote $OUT and $F/" >&2
