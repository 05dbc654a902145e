#!/usr/bin/env bash
# The reproduction and analysis runs behind the README's tables and the
# figures in reports/figures/. Each job writes reports/<name>.{md,json,
# graphs.csv} (eval --report) plus .out (result lines) and .err (per-fold
# lines); a job whose .json already exists is skipped, so the script can be
# stopped and started again. Usage:
#   bash tools/paper/reproduce.sh [JOB ...]      (no JOB: every job, in order)
#   bash tools/paper/reproduce.sh --list
# Environment: HPJ_DATA (default ../shared/data), SEEDS (default 1; the
# paper's table uses 5), FIRST_SEED (default 1: seeds FIRST_SEED ..
# FIRST_SEED+SEEDS-1, the job named <name>_seedsA-B, so a 5-seed protocol can
# run in parts that tools/paper/merge_reports.py joins), LANES (jobs run side
# by side, default 1), THREADS (OpenMP threads per job, default 2 / LANES);
# results are the same bits either way, but jobs side by side compete for
# memory bandwidth: measure before relying on LANES > 1.
# FOLD_LANES=J passes `eval --lanes J` (J folds pretrained at once, each on
# THREADS / J threads; same results) when the binary has that option.
# HPJEPA names the binary (default ./hpjepa): a long queue can pin a copy
# (cp hpjepa build/hpjepa-pinned; HPJEPA=build/hpjepa-pinned bash ...) so
# that rebuilding ./hpjepa meanwhile does not change the bits mid-protocol.
# Resuming: every job saves each fold's embeddings (its own
# --save-embeddings prefix, else build/analysis/<job>) and runs with
# --resume, so a job stopped part-way continues from the folds it finished,
# with the same results. build/ does not survive a new machine, so every job
# also keeps its folds' results in reports/folds/<job>.folds (eval
# --fold-log, a few KB per fold): commit that file, and the job continues on
# the next machine from the folds it records, with a binary of the same
# results version (HPJEPA_BITS_VERSION in hpjepa.h: the log's key includes
# it; it moves only when a release changes results, so later releases that
# keep the bits continue the log; eval says so when a log's records are
# under another key: build a release of that results version from git).
# With eval --checkpoint-every, the fold in progress is also saved every
# CKPT_EVERY epochs (default 1; 0 turns it off) beside its embeddings, so on
# a machine whose build/ survives, a job cut off mid-fold continues that fold
# from its last saved epoch (the same bits).
set -u
cd "$(dirname "$0")/../.."
DATA=${HPJ_DATA:-../shared/data}
LANES=${LANES:-1}
case $LANES in 1|2|3|4|5|6|7|8) ;; *) echo "reproduce.sh: LANES must be 1..8, got '$LANES'" >&2; exit 2 ;; esac
THREADS=${THREADS:-$(( LANES >= 2 ? 1 : 2 ))}
SEEDS=${SEEDS:-1}
FIRST_SEED=${FIRST_SEED:-1}
case $SEEDS$FIRST_SEED in *[!0-9]*) echo "reproduce.sh: SEEDS and FIRST_SEED must be numbers" >&2; exit 2 ;; esac
R=tools/paper/reports
mkdir -p "$R" "$R/folds" build/analysis
HPJEPA=${HPJEPA:-./hpjepa}
[ "$HPJEPA" != ./hpjepa ] || [ -x ./hpjepa ] || make -s hpjepa
[ -x "$HPJEPA" ] || { echo "reproduce.sh: $HPJEPA is not an executable" >&2; exit 2; }
EVAL_HELP=$("$HPJEPA" eval --help) # which options this binary has
FOLD_LOG=0
grep -q -- --fold-log <<<"$EVAL_HELP" && FOLD_LOG=1
CKPT_EVERY=${CKPT_EVERY:-1}
case $CKPT_EVERY in *[!0-9]*|'') echo "reproduce.sh: CKPT_EVERY must be a number, got '$CKPT_EVERY'" >&2; exit 2 ;; esac
grep -q -- --checkpoint-every <<<"$EVAL_HELP" || CKPT_EVERY=0
SELECT_PARTS=0 # does --select-epochs take --checkpoint-every (0.18.1 on)?
grep -q -- 'PATH.sel' <<<"$EVAL_HELP" && SELECT_PARTS=1
FOLD_LANES=${FOLD_LANES:-1}
case $FOLD_LANES in 1|2|3|4|5|6|7|8) ;; *) echo "reproduce.sh: FOLD_LANES must be 1..8, got '$FOLD_LANES'" >&2; exit 2 ;; esac
if [ "$FOLD_LANES" -gt 1 ] && ! grep -q -- --lanes <<<"$EVAL_HELP"; then
    echo "reproduce.sh: $HPJEPA has no eval --lanes (FOLD_LANES)" >&2; exit 2
fi

# name | dataset | config | extra arguments
JOBS=(
  # The table under one protocol (0.15.0 on): both methods on the same folds,
  # every config as it is (probe_select = cv: one absolute grid, inner CV);
  # SEEDS=5 for the first four datasets, as many as time allows for the rest.
  # Graph-JEPA mode and REDDIT-BINARY keep the overflow guard target_clamp = 20
  # (see RESULTS.md); ZINC-12K chooses its checkpoint on the validation split.
  "table_MUTAG_hp_1seed|MUTAG|data/configs/MUTAG.cfg|"
  "table_MUTAG_gj_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|"
  "table_PROTEINS_hp_1seed|PROTEINS|data/configs/PROTEINS.cfg|"
  "table_PROTEINS_gj_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|"
  "table_IMDB-BINARY_hp_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|"
  "table_IMDB-BINARY_gj_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set target_clamp=20"
  "table_IMDB-MULTI_hp_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|"
  "table_IMDB-MULTI_gj_1seed|IMDB-MULTI|data/configs/graph-jepa/IMDB-MULTI.cfg|--set target_clamp=20"
  "table_DD_hp_1seed|DD|data/configs/DD.cfg|"
  "table_DD_gj_1seed|DD|data/configs/graph-jepa/DD.cfg|"
  "table_REDDIT-BINARY_hp_1seed|REDDIT-BINARY|data/configs/REDDIT-BINARY.cfg|--set target_clamp=20"
  "table_REDDIT-BINARY_gj_1seed|REDDIT-BINARY|data/configs/graph-jepa/REDDIT-BINARY.cfg|--set target_clamp=20"
  "table_ZINC-12K_hp_1seed|ZINC-12K|data/configs/ZINC-12K.cfg|--select-epochs 4"
  "table_ZINC-12K_gj_1seed|ZINC-12K|data/configs/graph-jepa/ZINC-12K.cfg|--select-epochs 4"
  # attribution controls (one seed): the HP bank trained with the Graph-JEPA
  # recipe; the HP code at the Graph-JEPA config's single resolution (should
  # land on Graph-JEPA mode); the untrained encoders (epochs = 0: the same
  # partitions, embedding pass and probe) with each table config
  "control_PROTEINS_hpbank_gjrecipe_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set mode=hp --set resolutions=2,4,8,16 --set targets=1,2,3,4 --set readout=task --set lambda_unif=0.75"
  "control_PROTEINS_hp_single_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set mode=hp"
  "control_MUTAG_hpbank_gjrecipe_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set mode=hp --set resolutions=2,4,8,16,32 --set targets=1,2,3,4,4 --set readout=uniform"
  "control_MUTAG_hp_single_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set mode=hp"
  "control_MUTAG_hp_untrained_1seed|MUTAG|data/configs/MUTAG.cfg|--set epochs=0"
  "control_MUTAG_gj_untrained_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set epochs=0"
  "control_PROTEINS_hp_untrained_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set epochs=0"
  "control_PROTEINS_gj_untrained_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set epochs=0"
  "control_IMDB-BINARY_hp_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set epochs=0"
  "control_IMDB-BINARY_gj_untrained_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set epochs=0"
  "control_IMDB-MULTI_hp_untrained_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|--set epochs=0"
  "control_IMDB-MULTI_gj_untrained_1seed|IMDB-MULTI|data/configs/graph-jepa/IMDB-MULTI.cfg|--set epochs=0"
  # and the two controls above untrained: where the untrained encoders'
  # gap between the methods comes from (code path, bank, the rest)
  "control_PROTEINS_hp_single_untrained_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set mode=hp --set epochs=0"
  "control_PROTEINS_hpbank_gjrecipe_untrained_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set mode=hp --set resolutions=2,4,8,16 --set targets=1,2,3,4 --set readout=task --set lambda_unif=0.75 --set epochs=0"
  "control_IMDB-BINARY_hp_single_untrained_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set mode=hp --set epochs=0"
  "control_IMDB-BINARY_hpbank_gjrecipe_untrained_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set mode=hp --set resolutions=2,4,8 --set targets=1,2,3 --set readout=task --set lambda_unif=0.75 --set epochs=0"
  "control_MUTAG_hp_single_untrained_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set mode=hp --set epochs=0"
  "control_MUTAG_hpbank_gjrecipe_untrained_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set mode=hp --set resolutions=2,4,8,16,32 --set targets=1,2,3,4,4 --set readout=uniform --set epochs=0"
  # IMDB-BINARY's bank stops at 8 parts, Graph-JEPA mode cuts 32: each
  # untrained with the other's finest resolution
  "control_IMDB-BINARY_hp_bank32_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set resolutions=2,4,8,16,32 --set targets=1,2,3,4,4 --set epochs=0"
  "control_IMDB-BINARY_gj_k8_untrained_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set resolutions=8 --set epochs=0"
  # the HP-JEPA configs, banks up to 32 parts, without the activity rule
  # (mode = graph-jepa differs from hp in that rule alone)
  "control_MUTAG_hp_always_untrained_1seed|MUTAG|data/configs/MUTAG.cfg|--set mode=graph-jepa --set epochs=0"
  "control_PROTEINS_hp_always_untrained_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set mode=graph-jepa --set resolutions=2,4,8,16,32 --set targets=1,2,3,4,4 --set epochs=0"
  "control_IMDB-BINARY_hp_always_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set mode=graph-jepa --set resolutions=2,4,8,16,32 --set targets=1,2,3,4,4 --set epochs=0"
  # and with 32 parts alone
  "control_PROTEINS_hp_k32_untrained_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set mode=graph-jepa --set resolutions=32 --set targets=4 --set epochs=0"
  "control_IMDB-BINARY_hp_k32_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set mode=graph-jepa --set resolutions=32 --set targets=4 --set epochs=0"
  # and with the Graph-JEPA target encoder (patch adjacency, own init)
  "control_PROTEINS_hp_k32_gjtarget_untrained_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set mode=graph-jepa --set resolutions=32 --set targets=4 --set target_adj=1 --set ema_init=independent --set rw_dim=20 --set epochs=0"
  "control_IMDB-BINARY_hp_k32_gjtarget_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set mode=graph-jepa --set resolutions=32 --set targets=4 --set target_adj=1 --set ema_init=independent --set epochs=0"
  # pretrained: the HP-JEPA config as it is but for that target encoder
  "control_IMDB-BINARY_hp_gjtarget_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set target_adj=1 --set ema_init=independent"
  # the runs behind the older rows of RESULTS.md (before 0.15.0)
  "PROTEINS_hp_1seed|PROTEINS|data/configs/PROTEINS.cfg|"
  "PROTEINS_gj_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|"
  "case_study|||"
  "PROTEINS_hp_cv_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set probe_select=cv"
  "PROTEINS_hp_cv_bank248_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set probe_select=cv --set resolutions=2,4,8 --set targets=1,2,3"
  "IMDB-MULTI_gj_clamp20_1seed|IMDB-MULTI|data/configs/graph-jepa/IMDB-MULTI.cfg|--set target_clamp=20"
  "IMDB-MULTI_hp_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|"
  "PROTEINS_hp_bank248_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set resolutions=2,4,8 --set targets=1,2,3"
  "IMDB-BINARY_hp_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--save-embeddings build/analysis/IMDB-BINARY_hp_1seed"
  "IMDB-BINARY_gj_clamp20_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set target_clamp=20 --save-embeddings build/analysis/IMDB-BINARY_gj_1seed"
  "IMDB-MULTI_hp_bank248_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|--set resolutions=2,4,8 --set targets=1,2,3"
  "IMDB-MULTI_hp_bank24816_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|--set resolutions=2,4,8,16 --set targets=1,2,3,4"
  "IMDB-BINARY_hp_bank24816_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set resolutions=2,4,8,16 --set targets=1,2,3,4"
  "MUTAG_hp_1seed|MUTAG|data/configs/MUTAG.cfg|"
  "MUTAG_gj_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|"
  "ZINC-12K_gj_1seed|ZINC-12K|data/configs/graph-jepa/ZINC-12K.cfg|"
  "PROTEINS_hp_emb_1seed|PROTEINS|data/configs/PROTEINS.cfg|--save-embeddings build/analysis/PROTEINS_hp_1seed"
  "MUTAG_hp_cv_emb_1seed|MUTAG|data/configs/MUTAG.cfg|--set probe_select=cv --save-embeddings build/analysis/MUTAG_hp_1seed --save-models build/analysis/MUTAG_hp_models"
  "ZINC-12K_hp_1seed|ZINC-12K|data/configs/ZINC-12K.cfg|"
  "DD_gj_1seed|DD|data/configs/graph-jepa/DD.cfg|--save-embeddings build/analysis/DD_gj_1seed"
  "REDDIT-BINARY_gj_clamp20_1seed|REDDIT-BINARY|data/configs/graph-jepa/REDDIT-BINARY.cfg|--set target_clamp=20"
  "PROTEINS_hp_models_1seed|PROTEINS|data/configs/PROTEINS.cfg|--save-models build/analysis/PROTEINS_hp_models --save-embeddings build/analysis/PROTEINS_hp_models"
  "PROTEINS_hp_gjtarget_cv_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set target_adj=1 --set ema_init=independent --set probe_select=cv --save-models build/analysis/PROTEINS_hp_gjtarget_models"
  # seeds 2.. of PROTEINS_hp_models_1seed (FIRST_SEED=2 SEEDS=4), embeddings beside seed 1's:
  # join the reports with tools/paper/merge_reports.py
  "PROTEINS_hp_more_1seed|PROTEINS|data/configs/PROTEINS.cfg|--save-embeddings build/analysis/PROTEINS_hp_models"
  "ZINC-12K_gj_trainemb_1seed|ZINC-12K|data/configs/graph-jepa/ZINC-12K.cfg|--set train_embed=repartition"
  "PROTEINS_hp_adamw_cv_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set optimizer=adamw --set probe_select=cv --save-embeddings build/analysis/PROTEINS_hp_adamw_1seed"
  # hours per seed: resumable (see above)
  "DD_hp_1seed|DD|data/configs/DD.cfg|"
  # IMDB node features as the HP-JEPA paper describes them (one-hot degree; 88 = IMDB-MULTI's largest degree)
  "IMDB-MULTI_hp_degree_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|--set node_degree=88"
  "IMDB-MULTI_gj_degree_1seed|IMDB-MULTI|data/configs/graph-jepa/IMDB-MULTI.cfg|--set node_degree=88 --set target_clamp=20"
  # the same on IMDB-BINARY (largest degree 135)
  "IMDB-BINARY_hp_degree_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set node_degree=135"
  "IMDB-BINARY_gj_degree_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set node_degree=135 --set target_clamp=20"
  # controls: the same protocol with no pretraining (epochs = 0: the
  # randomly initialised encoder, embedding and probe as usual)
  "MUTAG_hp_untrained_1seed|MUTAG|data/configs/MUTAG.cfg|--set epochs=0"
  "MUTAG_gj_untrained_1seed|MUTAG|data/configs/graph-jepa/MUTAG.cfg|--set epochs=0"
  "PROTEINS_hp_untrained_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set epochs=0"
  "PROTEINS_gj_untrained_1seed|PROTEINS|data/configs/graph-jepa/PROTEINS.cfg|--set epochs=0"
  "IMDB-BINARY_hp_untrained_1seed|IMDB-BINARY|data/configs/IMDB-BINARY.cfg|--set epochs=0"
  "IMDB-BINARY_gj_untrained_1seed|IMDB-BINARY|data/configs/graph-jepa/IMDB-BINARY.cfg|--set epochs=0"
  "IMDB-MULTI_hp_untrained_1seed|IMDB-MULTI|data/configs/IMDB-MULTI.cfg|--set epochs=0"
  "IMDB-MULTI_gj_untrained_1seed|IMDB-MULTI|data/configs/graph-jepa/IMDB-MULTI.cfg|--set epochs=0"
  "PROTEINS_hp_untrained_cv_1seed|PROTEINS|data/configs/PROTEINS.cfg|--set epochs=0 --set probe_select=cv"
  "MUTAG_hp_untrained_cv_1seed|MUTAG|data/configs/MUTAG.cfg|--set epochs=0 --set probe_select=cv"
  "DD_gj_untrained_1seed|DD|data/configs/graph-jepa/DD.cfg|--set epochs=0"
  "DD_hp_untrained_1seed|DD|data/configs/DD.cfg|--set epochs=0"
  # hours per seed: continued across machines through the fold log. With
  # the guard target_clamp = 20 from the start, as the Graph-JEPA-mode
  # REDDIT run (the reference's REDDIT logs overflow cosh), so a divergence
  # late in the job does not throw away its finished folds
  "REDDIT-BINARY_hp_clamp20_1seed|REDDIT-BINARY|data/configs/REDDIT-BINARY.cfg|--set target_clamp=20"
)

run_job() {
    local name=$1 ds=$2 cfg=$3 extra=$4
    if [ "$FIRST_SEED" -ne 1 ]; then name=${name/_1seed/_seeds${FIRST_SEED}-$((FIRST_SEED + SEEDS - 1))}
    elif [ "$SEEDS" -ne 1 ]; then name=${name/_1seed/_${SEEDS}seed}; fi
    if [ -f "$R/$name.json" ] && [ -f "$R/$name.graphs.csv" ]; then echo "skip $name (done)"; return 0; fi
    case " $extra " in
        *" --save-embeddings "* | *" --from-"*) ;;
        *) extra="$extra --save-embeddings build/analysis/$1" ;;
    esac
    case " $extra " in *" --save-embeddings "*)
        extra="$extra --resume"
        local every=$CKPT_EVERY
        case " $extra " in *" --select-epochs "*) [ $SELECT_PARTS = 1 ] || every=0 ;; esac
        [ "$every" -gt 0 ] && extra="$extra --checkpoint-every $every" ;;
    esac
    [ $FOLD_LOG = 1 ] && extra="$extra --fold-log $R/folds/$name.folds"
    [ "$FOLD_LANES" -gt 1 ] && extra="$extra --lanes $FOLD_LANES"
    echo "$(date +%H:%M:%S) start $name"
    # shellcheck disable=SC2086
    if "$HPJEPA" eval "$DATA/$ds" --config "$cfg" $extra --seeds "$SEEDS" --first-seed "$FIRST_SEED" --threads "$THREADS" --quiet \
        --report "$R/$name" >"$R/$name.out" 2>"$R/$name.err"; then
        echo "$(date +%H:%M:%S) done  $name: $(tail -1 "$R/$name.out")"
    else
        echo "$(date +%H:%M:%S) FAILED $name: $(tail -1 "$R/$name.err")"
    fi
}

# t-SNE case study (paper figure 3): one pretraining on all PROTEINS graphs
# per method, embeddings of every graph, loss log
case_study() {
    local m
    for m in hp gj; do
        local cfg=data/configs/PROTEINS.cfg
        [ $m = gj ] && cfg=data/configs/graph-jepa/PROTEINS.cfg
        if [ ! -f "build/analysis/PROTEINS_$m.npy" ]; then
            echo "$(date +%H:%M:%S) start case study PROTEINS $m"
            "$HPJEPA" pretrain "$DATA/PROTEINS" --config "$cfg" --threads "$THREADS" --quiet \
                --out "build/analysis/PROTEINS_$m.hpj" --loss-log "$R/PROTEINS_${m}_loss.csv" >/dev/null &&
            "$HPJEPA" embed "build/analysis/PROTEINS_$m.hpj" "$DATA/PROTEINS" --out "build/analysis/PROTEINS_$m.npy" >/dev/null ||
                echo "FAILED case study $m"
        fi
    done
}

if [ "${1:-}" = "--list" ]; then
    for j in "${JOBS[@]}"; do echo "${j%%|*}"; done
    exit 0
fi
# A misspelt job name would otherwise match nothing and run nothing, silently.
for a in "$@"; do
    known=0
    for j in "${JOBS[@]}"; do [ "${j%%|*}" = "$a" ] && known=1; done
    [ $known = 1 ] || { echo "reproduce.sh: no job named '$a' (--list names them)" >&2; exit 2; }
done
# One brace group to the end: bash reads it whole before running it, so
# editing this file while a queue runs cannot derail the running copy.
{
    for j in "${JOBS[@]}"; do
        IFS='|' read -r name ds cfg extra <<<"$j"
        if [ $# -gt 0 ]; then
            want=0
            for a in "$@"; do [ "$a" = "$name" ] && want=1; done
            [ $want = 1 ] || continue
        fi
        if [ "$LANES" -gt 1 ]; then
            while [ "$(jobs -rp | wc -l)" -ge "$LANES" ]; do wait -n; done
            if [ "$name" = case_study ]; then case_study & else run_job "$name" "$ds" "$cfg" "$extra" & fi
        elif [ "$name" = case_study ]; then case_study; else run_job "$name" "$ds" "$cfg" "$extra"; fi
    done
    wait
    exit 0
}
