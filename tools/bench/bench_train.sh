#!/usr/bin/env bash
# Training throughput of hpjepa.h next to the PyTorch peer
# (../shared/peers/torch_hpjepa.py, tuned environment), 2 threads, same run.
# Prints a Markdown table: graphs/s (median batch), ratio, GFLOP/s, peak memory.
set -u
cd "$(dirname "$0")/../.."
DATA=${HPJ_DATA:-../shared/data}
PEERS=${HPJ_PEERS:-../shared/peers}
THREADS=${THREADS:-2}
STEPS=${STEPS:-8}
need=()
/usr/bin/python3 -c "import torch" 2>/dev/null || need+=(python3-torch)
dpkg -s libopenblas0-openmp >/dev/null 2>&1 || need+=(libopenblas0-openmp)
dpkg -s libtcmalloc-minimal4 >/dev/null 2>&1 || need+=(libtcmalloc-minimal4)
command -v /usr/bin/time >/dev/null || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >&2 || echo "peer install failed" >&2
fi
mkdir -p build/bench
[ -x ./hpjepa ] || make -s hpjepa >&2
# OpenMP waiting, for both sides: libgomp's default (spin a while, then
# sleep) unless BENCH_WAIT_POLICY names one. A training step is a chain of
# over a thousand short parallel loops; under OMP_WAIT_POLICY=passive (right
# for long runs on a shared machine, so often left in the shell) the idle
# thread sleeps between them and every loop starts by waking it, which on a
# virtual CPU can cost as much as the loop. The table would then time the
# wake-ups, and a build with more, shorter loops would look slower than it
# is on a quiet machine. The policy used is printed with the table.
if [ -n "${BENCH_WAIT_POLICY:-}" ]; then export OMP_WAIT_POLICY=$BENCH_WAIT_POLICY; else unset OMP_WAIT_POLICY; fi
R=${R:-3}
# The peer's OpenBLAS kernels: the rule of tools/bench/peer_blas.sh (SkylakeX on
# an AVX-512 CPU, whatever OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE the shell
# inherited; PEER_CORETYPE overrides). An inherited OPENBLAS_CORETYPE=Haswell
# once handed this peer its AVX2 kernels on an AVX-512 CPU (DD: 30-34
# graphs/s inside this script, 46-52 with SkylakeX).
# shellcheck source=tools/bench/peer_blas.sh
. "$(dirname "$0")/peer_blas.sh"
peer_blas_choose
echo "## Training throughput (forward + backward + Adam + EMA, all resolutions, $THREADS threads)"
echo
echo "Host: $(peer_host_line)."
peer_steal_mark
echo
echo "| dataset | d | batch | hpjepa graphs/s | torch graphs/s | ratio | ratio per round | ratio, the peer's collate timed | GFLOP/batch (ours / torch) | hpjepa GFLOP/s | peak MB (ours / torch) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# "A / B" as "1.23x", "-" unless both are positive numbers
x_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }
# the smallest and largest value of stdin as "lo-hi" in the printf format $1 (two values), "-" for none
span() { sort -g | awk -v f="$1" '{ a[NR] = $1 } END { if (NR) printf f, a[1], a[NR]; else print "-" }'; }
# the fifth field is the number of timed batches: STEPS, 5 times as many
# at d = 128 (a batch takes ~50 ms, so 8 of them, 0.4 s, left one run at
# the mercy of a single slow moment of the host), STEPS_DD on DD
MULT128=5
# DD's timed batches cover one epoch (1178 graphs: 37 batches of 32, the
# first 2 warm-up): its graphs have 30 to 5748 nodes, and the first 10
# batches alone are ~6 % heavier than the epoch (99.8 against 94.5 GEMM
# GFLOP a batch): 8 timed batches
# measured those batches, not the dataset
STEPS_DD=${STEPS_DD:-35}
old_rows=""
for spec in "PROTEINS proteins 512 proteins_d512 $STEPS" "PROTEINS proteins 128 proteins_d128 $((STEPS * MULT128))" "DD dd 512 dd_d512 $STEPS_DD"; do
    set -- $spec
    steps=$5
    # ONLY=dd_d512 (or proteins_d512, proteins_d128; a comma-separated list) runs only those rows
    case ",${ONLY:-$4}," in *",$4,"*) ;; *) continue ;; esac
    ds=$1; peer=$2; d=$3; cfg=data/configs/bench/$4.cfg
    bs=$(sed -n 's/^batch_size = //p' "$cfg")
    : >build/bench/ours.txt; : >build/bench/peer.txt; : >build/bench/pairs.txt; : >build/bench/old.txt
    # R alternating runs of each side; each run reports the median batch
    for r in $(seq "$R"); do
        ours=$(/usr/bin/time -f "%M" -o build/bench/time_ours.txt ./hpjepa bench train "$DATA/$ds" --config "$cfg" --steps "$steps" --threads "$THREADS" 2>/dev/null | tail -1)
        echo "$ours" >>build/bench/ours.txt
        # OLD=path/to/an/older/hpjepa: that build too, in the same rounds
        if [ -n "${OLD:-}" ]; then
            "$OLD" bench train "$DATA/$ds" --config "$cfg" --steps "$steps" --threads "$THREADS" 2>/dev/null | tail -1 >>build/bench/old.txt
        fi
        rm -f build/bench/torch.json
        # the peer with its best OpenBLAS kernels (peer_blas_choose above)
        if /usr/bin/time -f "%M" -o build/bench/time_torch.txt /usr/bin/python3 "$PEERS/torch_hpjepa.py" --dataset "$peer" --d "$d" \
            --threads "$THREADS" --steps "$steps" --json build/bench/torch.json >/dev/null 2>build/bench/torch.err; then
            pj=$(/usr/bin/python3 -c "import json;j=json.loads(open('build/bench/torch.json').read().splitlines()[-1]);print('%.1f %.1f %.1f' % (j['graphs_per_s'], j['gflop_per_step'], j['B'] * 1e3 / (j['step_ms_median'] + j['collate_ms'])))" 2>/dev/null)
            [ -n "$pj" ] && echo "$pj" >>build/bench/peer.txt
            echo "peak $(( $(tail -1 build/bench/time_torch.txt) / 1024 ))" >>build/bench/peer.txt
            # this round's pair (the host drifts within minutes, so a
            # round's two runs, a few seconds apart, compare best)
            g1=$(echo "$ours" | sed -n 's/.*graphs_per_s=\([0-9.]*\).*/\1/p')
            g2=${pj%% *}
            if [ -n "$g1" ] && [ -n "$g2" ]; then
                awk -v a="$g1" -v b="$g2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f\n", a / b }' >>build/bench/pairs.txt
            fi
        fi
    done
    g_ours=$(sed -n 's/.*graphs_per_s=\([0-9.]*\).*/\1/p' build/bench/ours.txt | median)
    f_ours=$(sed -n 's/.*gflops=\([0-9.]*\).*/\1/p' build/bench/ours.txt | median)
    gb_ours=$(sed -n 's/.*gflop_per_batch=\([0-9.]*\).*/\1/p' build/bench/ours.txt | median)
    m_ours=$(sed -n 's/.*peak_mb=\([0-9.]*\).*/\1/p' build/bench/ours.txt | median)
    g_t=$(grep -v '^peak' build/bench/peer.txt | cut -d' ' -f1 | median)
    gb_t=$(grep -v '^peak' build/bench/peer.txt | cut -d' ' -f2 | median)
    # the peer's speed with its collate (the batch's sampling and patch
    # arrays, built before its timed steps) added to its median step, as
    # ours builds its batches inside each timed step
    g_te=$(grep -v '^peak' build/bench/peer.txt | cut -d' ' -f3 | median)
    m_t=$(sed -n 's/^peak //p' build/bench/peer.txt | median)
    ratio=$(x_ratio "$g_ours" "$g_t")
    rounds=$(span "%.2f-%.2fx" <build/bench/pairs.txt)
    ratio_e=$(x_ratio "$g_ours" "$g_te")
    if [ -n "${OLD:-}" ]; then
        g_old=$(sed -n 's/.*graphs_per_s=\([0-9.]*\).*/\1/p' build/bench/old.txt | median)
        old_rows="$old_rows| $ds | $d | ${g_ours:-fail} | ${g_old:-fail} | $(x_ratio "$g_ours" "$g_old") |\n"
    fi
    echo "| $ds | $d | $bs | ${g_ours:-fail} | ${g_t:-n/a} | $ratio | $rounds | $ratio_e | ${gb_ours:--} / ${gb_t:--} | ${f_ours:--} | ${m_ours:--} / ${m_t:--} |"
done
echo
if [ -n "${OLD:-}" ]; then
    echo "Against the older build $OLD ($("$OLD" --version 2>/dev/null | head -1)), in the same rounds:"
    echo
    echo "| dataset | d | this build graphs/s | older build graphs/s | ratio |"
    echo "|---|---|---|---|---|"
    printf "%b" "$old_rows"
    echo
fi
echo "Targets: PROTEINS d=512 >= 1.5x torch, PROTEINS d=128 >= 2.5x, DD d=512 >= 1.3x."
echo "$PEER_BLAS_NOTE"
policy=${OMP_WAIT_POLICY:-"libgomp's default"}
echo "OpenMP waiting policy for both sides: $policy (BENCH_WAIT_POLICY; an inherited OMP_WAIT_POLICY is not used); $(peer_steal_line)."
echo "Our PROTEINS/DD are the real datasets; the peer's are synthetic look-alikes of the same sizes."
echo "Batch preparation: hpjepa.h samples each batch's contexts and targets and builds its patch arrays inside every timed step (a few % of the step at PROTEINS d = 128); the peer builds all its batches before its timed steps (its collate, one Python thread, collate_ms in its JSON) and reuses them. The ratio column is the peer's step alone (the targets' definition); 'the peer's collate timed' adds its mean collate a batch to its median step, so both sides count the same work."
echo "The peer takes one Adam + EMA step per batch, on the mean of the four resolutions' losses; hpjepa.h takes one per resolution (the paper's rule: four per batch here); the peer's schedule would make our step 5-8 % faster (tools/RESULTS.md)."
echo "Each side ran $R times, alternating; the table shows the medians of the per-run median batch; 'ratio per round' is the range of ours / torch over the rounds (each round's two runs are seconds apart, so it is less exposed to the host's drift)."
echo "Command: \`bash tools/bench/bench_train.sh\` (THREADS, STEPS, STEPS_DD, R, ONLY, OLD, BENCH_WAIT_POLICY env vars); ours: \`./hpjepa bench train DATA --config data/configs/bench/<cfg> --steps N\` (N = $STEPS for PROTEINS d = 512, $(( STEPS * MULT128 )) at d = 128, $STEPS_DD for DD; the peer the same)."
