# Command-line checks of pretrain / embed / eval / bench train (sourced by
# tests/cli_test.sh: helpers ok, bad, expect_fail, $TMP, $DATA).
MCFG=$TMP/tiny.cfg
printf 'dim = 8\nheads = 2\nblocks = 1\nffn = 16\nrw_dim = 4\nresolutions = 2,4\ntargets = 1,2\nepochs = 1\nbatch_size = 64\n' > "$MCFG"
printf 'dim = 8\nfrobnicate = 1\n' > "$TMP/badkey.cfg"
expect_fail "pretrain: missing --out" "missing --out" "$HPJ" pretrain data/DEMO --config "$MCFG"
expect_fail "pretrain: unknown config key (file:line)" "badkey.cfg:2: unknown key 'frobnicate'" "$HPJ" pretrain data/DEMO --config "$TMP/badkey.cfg" --out "$TMP/m"
expect_fail "pretrain: bad --set value" "bad value 'many' for key 'epochs'" "$HPJ" pretrain data/DEMO --set epochs=many --out "$TMP/m"
expect_fail "pretrain: out-of-range value names the range" "bad value '-1' for key 'node_degree' \(an integer in 0\.\.4095\)" "$HPJ" pretrain data/DEMO --set node_degree=-1 --out "$TMP/m"
expect_fail "pretrain: bad choice names the choices" "bad value 'x' for key 'readout' \(concat, uniform or task\)" "$HPJ" pretrain data/DEMO --set readout=x --out "$TMP/m"
expect_fail "pretrain: heads do not divide dim (naming the config file)" "tiny.cfg with --set: dim 8 is not a multiple of heads 3" "$HPJ" pretrain data/DEMO --config "$MCFG" --set heads=3 --out "$TMP/m"
expect_fail "pretrain: a mistyped key names the likely one" "unknown key 'epoch' \(did you mean 'epochs'\?\)" "$HPJ" pretrain data/DEMO --set epoch=2 --out "$TMP/m"
expect_fail "pretrain: a config key given as an option points to --set" "unknown option '--epochs' \(config keys go through --set" "$HPJ" pretrain data/DEMO --config "$MCFG" --epochs 2 --out "$TMP/m"
expect_fail "pretrain: no graph large enough for any resolution" "nothing to train: no training graph splits" "$HPJ" pretrain data/DEMO --config "$MCFG" --set resolutions=100000 --out "$TMP/m" --quiet
expect_fail "pretrain: missing dataset" "cannot open" "$HPJ" pretrain "$TMP/NOPE" --config "$MCFG" --out "$TMP/m"
[ ! -e "$TMP/m" ] && ok "pretrain: no model file after failures" || bad "pretrain: no model file after failures"
# --set, --seed and --threads apply after every --config, wherever they stand
if "$HPJ" pretrain data/DEMO --set epochs=2 --config "$MCFG" --out "$TMP/order" --quiet >"$TMP/order.out" 2>&1 &&
   grep -q " epoch=2/2 " "$TMP/order.out"; then ok "pretrain: --set before --config still wins"
else bad "pretrain: --set before --config still wins" "$(cat "$TMP/order.out")"; fi
if "$HPJ" pretrain data/DEMO --config "$MCFG" --set epochs=2 --out "$TMP/m" --loss-log "$TMP/loss.csv" >"$TMP/pt.out" 2>/dev/null &&
   grep -q "^model=.* steps=" "$TMP/pt.out"; then
    ok "pretrain: tiny model on DEMO"
else bad "pretrain: tiny model on DEMO" "$(cat "$TMP/pt.out")"; fi
grep -qE "^model=.* epoch=2/2 seconds=[0-9.]+ loss=[0-9.e+-]+,[0-9.e+-]+$" "$TMP/pt.out" &&
    ok "pretrain: result line with epochs and the last epoch's loss per resolution" ||
    bad "pretrain: result line with epochs and the last epoch's loss per resolution" "$(cat "$TMP/pt.out")"
# a run in parts (stopped after epoch 1, resumed with checkpoints every epoch)
# writes the checkpoint of the run never stopped, byte for byte
RCFG=$TMP/resume.cfg
printf 'dim = 8\nheads = 2\nblocks = 1\nffn = 16\nrw_dim = 4\nresolutions = 2,4\ntargets = 1,2\nepochs = 3\nbatch_size = 64\nschedule = cosine\nrepartition = 1\nedge_drop = 0.3\ndropout = 0.1\n' > "$RCFG"
if "$HPJ" pretrain data/DEMO --config "$RCFG" --out "$TMP/rfull" --save-optimizer --quiet >/dev/null 2>&1 &&
   "$HPJ" pretrain data/DEMO --config "$RCFG" --out "$TMP/rpart" --until-epoch 1 --quiet >"$TMP/rpart.out" 2>/dev/null &&
   grep -q " epoch=1/3 " "$TMP/rpart.out" &&
   "$HPJ" pretrain data/DEMO --resume "$TMP/rpart" --out "$TMP/rdone" --checkpoint-every 1 --quiet >/dev/null 2>&1 &&
   cmp -s "$TMP/rfull" "$TMP/rdone" &&
   "$HPJ" embed "$TMP/rfull" data/DEMO --out "$TMP/rfull.npy" >/dev/null 2>&1 &&
   "$HPJ" embed "$TMP/rdone" data/DEMO --out "$TMP/rdone.npy" >/dev/null 2>&1 && cmp -s "$TMP/rfull.npy" "$TMP/rdone.npy"; then
    ok "pretrain: --until-epoch then --resume gives the uninterrupted run's model and embeddings"
else bad "pretrain: --until-epoch then --resume gives the uninterrupted run's model and embeddings" "$(cat "$TMP/rpart.out")"; fi
# a fresh run to an --out holding an unfinished run refuses, the file untouched
cp "$TMP/rpart" "$TMP/rpart.keep"
expect_fail "pretrain: a fresh run will not overwrite an unfinished one" "rpart holds a run stopped at epoch 1 of 3: --resume" "$HPJ" pretrain data/DEMO --config "$RCFG" --out "$TMP/rpart" --quiet
cmp -s "$TMP/rpart" "$TMP/rpart.keep" && ok "pretrain: the unfinished run's file is unchanged" || bad "pretrain: the unfinished run's file is unchanged"
expect_fail "pretrain: --resume refuses --set" "resume takes the config stored in" "$HPJ" pretrain data/DEMO --resume "$TMP/rpart" --set lr=1 --out "$TMP/rx"
expect_fail "pretrain: --resume needs the optimizer state" "saved without the optimizer state" "$HPJ" pretrain data/DEMO --resume "$TMP/m" --out "$TMP/rx"
expect_fail "pretrain: --until-epoch beyond the run" "until-epoch 9: the run has 3 epochs" "$HPJ" pretrain data/DEMO --config "$RCFG" --until-epoch 9 --out "$TMP/rx"
expect_fail "pretrain: --resume of a missing file" "cannot open" "$HPJ" pretrain data/DEMO --resume "$TMP/nope.hpj" --out "$TMP/rx"
[ ! -e "$TMP/rx" ] && ok "pretrain: no model file after refused resumes" || bad "pretrain: no model file after refused resumes"
# the loss log: header, then one row per epoch and resolution (K = 2, 4), finite losses
if [ "$(head -1 "$TMP/loss.csv")" = "epoch,step,resolution,K,loss" ] &&
   [ "$(tail -n +2 "$TMP/loss.csv" | cut -d, -f1,3,4 | tr '\n' ' ')" = "1,1,2 1,2,4 2,1,2 2,2,4 " ] &&
   ! grep -qiE "nan|inf" "$TMP/loss.csv"; then ok "pretrain: --loss-log rows"
else bad "pretrain: --loss-log rows" "$(head -c 300 "$TMP/loss.csv")"; fi
expect_fail "pretrain: failing save leaves no loss log" "cannot" "$HPJ" pretrain data/DEMO --config "$MCFG" --out "$TMP/nodir/m3" --quiet --loss-log "$TMP/loss3.csv"
[ ! -e "$TMP/loss3.csv" ] && [ ! -e "$TMP/loss3.csv.tmp~" ] && ok "pretrain: no partial loss log" || bad "pretrain: no partial loss log"
if "$HPJ" embed "$TMP/m" data/DEMO --out "$TMP/e.npy" >"$TMP/em.out" 2>/dev/null && grep -q "^graphs=400 width=16" "$TMP/em.out" &&
   [ "$(head -c 6 "$TMP/e.npy" | tail -c 5)" = "NUMPY" ] && [ "$(stat -c %s "$TMP/e.npy")" -eq $((128 + 400 * 16 * 4)) ]; then
    ok "embed: .npy of 400 x 16 float32"
else bad "embed: .npy of 400 x 16 float32" "$(cat "$TMP/em.out")"; fi
# a model applied to another dataset: its unknown labels read as none, said once
if [ -d "$DATA/MUTAG" ]; then
    if "$HPJ" embed "$TMP/m" "$DATA/MUTAG" --out "$TMP/mu.npy" >/dev/null 2>"$TMP/mu.err" &&
       grep -q "MUTAG's node labels span 0..6, the model knows 0..2; the others read as none" "$TMP/mu.err" &&
       ! "$HPJ" embed "$TMP/m" data/DEMO --out "$TMP/mu.npy" 2>&1 >/dev/null | grep -q "note:"; then
        ok "embed: labels outside the model's vocabulary get a note"
    else bad "embed: labels outside the model's vocabulary get a note" "$(cat "$TMP/mu.err")"; fi
fi
"$HPJ" embed "$TMP/m" data/DEMO --out "$TMP/e2.npy" --readout uniform >/dev/null 2>&1 && [ "$(stat -c %s "$TMP/e2.npy")" -eq $((128 + 400 * 8 * 4)) ] &&
    ok "embed: uniform readout width" || bad "embed: uniform readout width"
# two compilers, the same bits: tcc and gcc (-O2, portable kernels, nothing
# tuned to the CPU) pretrain the same model and embed with it identically
# (HPJ_BUILD: the build folder of make test, which exports it)
HB=${HPJ_BUILD:-build}
if [ -x "$HB/hpjepa-tcc" ] && [ -x "$HB/hpjepa-portable" ]; then
    if "$HB/hpjepa-tcc" pretrain data/DEMO --config "$MCFG" --out "$TMP/mt" --quiet >/dev/null 2>&1 &&
       "$HB/hpjepa-portable" pretrain data/DEMO --config "$MCFG" --out "$TMP/mp" --quiet >/dev/null 2>&1 &&
       cmp -s "$TMP/mt" "$TMP/mp" && "$HB/hpjepa-tcc" embed "$TMP/mt" data/DEMO --out "$TMP/et.npy" >/dev/null 2>&1 &&
       "$HB/hpjepa-portable" embed "$TMP/mt" data/DEMO --out "$TMP/ep.npy" >/dev/null 2>&1 && cmp -s "$TMP/et.npy" "$TMP/ep.npy"; then
        ok "tcc and gcc builds: the same checkpoint and embeddings, bit for bit"
    else bad "tcc and gcc builds: the same checkpoint and embeddings, bit for bit"; fi
else echo "  (no tcc build: the cross-compiler check skipped)"; fi
# the reference implementation (-DHPJ_REFERENCE: plain loops, the fast part
# compiled out) and the fast build: each trains to its own bits on every run,
# and they embed one checkpoint alike up to the fast patch encoder's
# rounding (its BatchNorm sums over classes of equal node copies)
if [ -x "$HB/hpjepa-ref" ] && command -v python3 >/dev/null; then
    if "$HB/hpjepa-ref" pretrain data/DEMO --config "$MCFG" --out "$TMP/mr" --quiet >/dev/null 2>&1 &&
       OMP_NUM_THREADS=1 "$HB/hpjepa-ref" pretrain data/DEMO --config "$MCFG" --out "$TMP/mr2" --quiet >/dev/null 2>&1 &&
       cmp -s "$TMP/mr" "$TMP/mr2" && "$HB/hpjepa-ref" embed "$TMP/mr" data/DEMO --out "$TMP/er.npy" >/dev/null 2>&1 &&
       "$HPJ" embed "$TMP/mr" data/DEMO --out "$TMP/ef.npy" >/dev/null 2>&1 &&
       python3 - "$TMP/er.npy" "$TMP/ef.npy" <<'PY'
import struct, sys
def load(p):  # float32 .npy with a 128-byte header, as hpjepa embed writes
    b = open(p, "rb").read()
    return struct.unpack("<%df" % ((len(b) - 128) // 4), b[128:])
a, b = load(sys.argv[1]), load(sys.argv[2])
big = max(abs(x) for x in a)
sys.exit(0 if len(a) == len(b) and big > 0 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-4 * big else 1)
PY
    then ok "reference build: the same checkpoint on 1 and 2 threads; embeddings within 1e-4 of the fast build's"
    else bad "reference build: the same checkpoint on 1 and 2 threads; embeddings within 1e-4 of the fast build's"; fi
else echo "  (no reference build: the reference-against-fast check skipped)"; fi
head -c 1000 "$TMP/m" > "$TMP/trunc"
expect_fail "embed: truncated checkpoint" "CRC mismatch|truncated" "$HPJ" embed "$TMP/trunc" data/DEMO --out "$TMP/x.npy"
cp "$TMP/m" "$TMP/flip"; printf '\x55' | dd of="$TMP/flip" bs=1 seek=3000 conv=notrunc 2>/dev/null
expect_fail "embed: corrupted checkpoint" "CRC mismatch" "$HPJ" embed "$TMP/flip" data/DEMO --out "$TMP/x.npy"
[ ! -e "$TMP/x.npy" ] && ok "embed: no .npy after failures" || bad "embed: no .npy after failures"
expect_fail "eval: --folds 1" "folds: 1 is out of range" "$HPJ" eval data/DEMO --config "$MCFG" --folds 1
out=$("$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --quiet --report "$TMP/rep" 2>/dev/null | tail -1)
echo "$out" | grep -qE '^accuracy=[01]\.[0-9]{4} std=[0-9.]+$' && ok "eval: accuracy line ($out)" || bad "eval: accuracy line" "$out"
# the per-graph predictions: every graph once per seed, and their mean
# correctness per seed and fold gives back the reported accuracy
if [ -f "$TMP/rep.graphs.csv" ] && command -v python3 >/dev/null; then
    chk=$(python3 - "$TMP/rep.graphs.csv" "$TMP/rep.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rep = json.load(open(sys.argv[2]))
seen = {}
for r in rows: seen.setdefault(int(r["seed"]), []).append(int(r["graph"]))
ok = sorted(seen) == [1, 2] and all(sorted(v) == list(range(400)) for v in seen.values())
for fr in rep["rows"]:
    sel = [r for r in rows if int(r["seed"]) == fr["seed"] and int(r["fold"]) == fr["fold"]]
    acc = sum(int(r["correct"]) for r in sel) / len(sel)
    ok = ok and abs(acc - fr["score"]) < 1e-6 and all(int(r["correct"]) == (r["label"] == r["pred"]) for r in sel)
print("ok" if ok else "mismatch")
PY
)
    [ "$chk" = ok ] && ok "eval: graphs.csv agrees with the fold scores" || bad "eval: graphs.csv agrees with the fold scores" "$chk"
else bad "eval: graphs.csv written" "missing $TMP/rep.graphs.csv or python3"; fi
# a protocol in parts: seeds 1 and 2 run separately (--first-seed) and joined
# by tools/paper/merge_reports.py give the 2-seed report: the same fold scores,
# aggregates and predictions
"$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --report "$TMP/part1" >/dev/null 2>&1
"$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --first-seed 2 --quiet --report "$TMP/part2" >/dev/null 2>&1
if command -v python3 >/dev/null && python3 tools/paper/merge_reports.py "$TMP/joined" "$TMP/part2" "$TMP/part1" >"$TMP/join.out" 2>&1; then
    chk=$(python3 - "$TMP/rep.json" "$TMP/joined.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: [(x["seed"], x["fold"], x["score"], x["train"]) for x in r["rows"]]
ok = key(a) == key(b) and all(abs(a[k] - b[k]) < 2e-6 for k in ("mean", "std", "fold_std")) and b["seeds"] == 2
ok = ok and all(a.get(k) == b.get(k) for k in ("probe_select", "alpha_grid", "alpha_at_edge", "alpha_folds"))
print("ok" if ok else "mismatch: %s vs %s" % (key(a)[:3], key(b)[:3]))
PY
)
    if [ "$chk" = ok ] && cmp -s "$TMP/rep.graphs.csv" "$TMP/joined.graphs.csv" &&
       [ "$(tail -1 "$TMP/joined.out")" = "$(tail -1 "$TMP/join.out" | cut -d' ' -f1,2)" ] &&
       [ "$(tail -1 "$TMP/joined.out")" = "$out" ]; then ok "eval: --first-seed parts joined = one run"
    else bad "eval: --first-seed parts joined = one run" "$chk $(cat "$TMP/join.out") / $out"; fi
    expect_fail "merge_reports: overlapping seeds" "seed number 1 is in both" python3 tools/paper/merge_reports.py "$TMP/j2" "$TMP/part1" "$TMP/rep"
    sed 's/dim = 8/dim = 9/' "$TMP/part2.json" > "$TMP/part3.json"; cp "$TMP/part2.graphs.csv" "$TMP/part3.graphs.csv"
    expect_fail "merge_reports: another config" "config differs.*dim = 9" python3 tools/paper/merge_reports.py "$TMP/j2" "$TMP/part1" "$TMP/part3"
    [ ! -e "$TMP/j2.json" ] && ok "merge_reports: no output after failures" || bad "merge_reports: no output after failures"
    expect_fail "reproduce.sh: unknown job named" "no job named 'table_MUTAG_hp'" bash tools/paper/reproduce.sh table_MUTAG_hp
    # tools/paper/paired.py: a run against its own parts joined differs nowhere
    if pr=$(python3 tools/paper/paired.py "$TMP/rep" "$TMP/joined" 2>&1) && echo "$pr" | grep -q 'mean A - B over seeds: +0.0000 (sign-flip permutation p = 1 ' &&
       echo "$pr" | grep -q 'folds: A ahead 0, behind 0, level 6' && echo "$pr" | grep -q 'only A right 0, only B right 0 (McNemar exact p = 1)'; then
        ok "paired: a run against itself"
    else bad "paired: a run against itself" "$pr"; fi
    sed 's/^\(1,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]*,\)1$/\10/' "$TMP/rep.graphs.csv" > "$TMP/worse.graphs.csv"
    if pr=$(python3 tools/paper/paired.py "$TMP/rep" "$TMP/worse" 2>&1) &&
       [ "$(grep -c '^1,.*,1$' "$TMP/rep.graphs.csv")" -gt 0 ] &&
       echo "$pr" | grep -q "only A right $(grep -c '^1,.*,1$' "$TMP/rep.graphs.csv"), only B right 0" &&
       echo "$pr" | grep -q "seed 1: A $(python3 -c "import json,sys;r=[x['score'] for x in json.load(open(sys.argv[1]))['rows'] if x['seed']==1];print('%.4f'%(sum(r)/len(r)))" "$TMP/rep.json")  B 0.0000"; then
        ok "paired: per-seed accuracies and discordant predictions"
    else bad "paired: per-seed accuracies and discordant predictions" "$pr"; fi
    awk -F, -v OFS=, 'NR == 2 { $2 = $2 % 3 + 1 } { print }' "$TMP/rep.graphs.csv" > "$TMP/moved.graphs.csv"
    expect_fail "paired: runs on other folds" "is in fold .* but fold" python3 tools/paper/paired.py "$TMP/rep" "$TMP/moved"
    expect_fail "paired: missing report" "nope.graphs.csv: No such file" python3 tools/paper/paired.py "$TMP/rep" "$TMP/nope"
else bad "eval: --first-seed parts joined" "$(cat "$TMP/join.out" 2>/dev/null)"; fi
# tools/bench/same_bits.sh: one binary against itself trains the same bytes; a
# different seed for the second is caught; usage errors are one line
if [ "$(bash tools/bench/same_bits.sh "$HPJ" "$HPJ" demo 2>&1)" = "demo: same ($(OMP_WAIT_POLICY=passive "$HPJ" pretrain data/DEMO \
        --config data/configs/DEMO.cfg --set epochs=1 --out "$TMP/sb.ckpt" --save-optimizer --threads 2 --quiet >/dev/null 2>&1 &&
        md5sum <"$TMP/sb.ckpt" | cut -c1-32))" ]; then
    ok "same_bits: a binary against itself"
else bad "same_bits: a binary against itself" "$(bash tools/bench/same_bits.sh "$HPJ" "$HPJ" demo 2>&1 | head -c 300)"; fi
if sb=$(SAME_BITS_SET_NEW="seed=2" bash tools/bench/same_bits.sh "$HPJ" "$HPJ" demo 2>&1); then
    bad "same_bits: another seed differs" "exit 0: $sb"
elif echo "$sb" | grep -q "^demo: DIFFER ([0-9a-f]\{32\} [0-9a-f]\{32\})$"; then ok "same_bits: another seed differs"
else bad "same_bits: another seed differs" "$sb"; fi
expect_fail "same_bits: usage" "usage: bash tools/bench/same_bits.sh OLD_BIN NEW_BIN" bash tools/bench/same_bits.sh "$HPJ"
expect_fail "same_bits: unknown case" "unknown case 'bogus'" bash tools/bench/same_bits.sh "$HPJ" "$HPJ" bogus
# probe_select = cv, the one rule: the penalty comes from one absolute grid,
# 1e-05 .. 1e+04 by decades, chosen per fold on the training folds, whatever
# probe_alpha says (two configs that differ only there choose alike); the
# report counts the folds whose choice is on the grid's edge; fixed uses
# probe_alpha as it is. Pretrained once, then re-probed from the embeddings.
expect_fail "eval: bad probe_select" "bad value 'maybe' for key 'probe_select'" "$HPJ" eval data/DEMO --config "$MCFG" --set probe_select=maybe
cv_alphas() { grep -oE '"alpha": [0-9.e+-]+' "$1" | cut -d' ' -f2 | tr '\n' ' '; }
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --threads 1 --quiet --set probe_select=cv \
       --set probe_alpha=0.5 --save-embeddings "$TMP/cvemb" --report "$TMP/cv" >/dev/null 2>"$TMP/cv.err" &&
   OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --threads 1 --quiet --set probe_select=cv \
       --set probe_alpha=300 --from-embeddings "$TMP/cvemb" --report "$TMP/cv300" >/dev/null 2>&1 &&
   [ "$(grep -c 'probe alpha chosen by 5-fold CV' "$TMP/cv.err")" -eq 3 ] &&
   [ "$(grep -oE '"alpha": (1e-05|0\.0001|0\.001|0\.01|0\.1|1|10|100|1000|10000)[,}]' "$TMP/cv.json" | wc -l)" -eq 3 ] &&
   [ "$(cv_alphas "$TMP/cv.json")" = "$(cv_alphas "$TMP/cv300.json")" ]; then
    ok "eval: probe_select=cv picks from one absolute grid, whatever probe_alpha ($(cv_alphas "$TMP/cv.json"))"
else bad "eval: probe_select=cv picks from one absolute grid, whatever probe_alpha" \
    "$(head -c 300 "$TMP/cv.err") 0.5: $(cv_alphas "$TMP/cv.json") 300: $(cv_alphas "$TMP/cv300.json" 2>/dev/null)"; fi
# the edge count: the report's count is the number of folds at 1e-05 or 1e+04
n=$(grep -oE '"alpha": (1e-05|10000)[,}]' "$TMP/cv.json" | wc -l)
if grep -q "\"probe_select\": \"cv\", \"alpha_grid\": \[1e-05, 1e+04\], \"alpha_at_edge\": $n, \"alpha_folds\": 3," "$TMP/cv.json" &&
   grep -q "alpha at grid edge: $n of 3 folds\.$" "$TMP/cv.md" && grep -q "^  alpha at grid edge: $n of 3 folds " "$TMP/cv.err"; then
    ok "eval: the report and the summary count the folds at the grid's edge ($n of 3)"
else bad "eval: the report and the summary count the folds at the grid's edge" "$(grep -o '"probe_select[^r]*' "$TMP/cv.json")"; fi
# all-zero embeddings: every penalty ties, the tie goes to the largest, an
# edge in every fold, also for folds restored from a fold log
hl=$(od -An -tu2 -j8 -N2 "$TMP/cvemb.s1f1.npy" | tr -d ' ')
for f in 1 2 3; do
    { head -c $((10 + hl)) "$TMP/cvemb.s1f1.npy"; head -c $((400 * 16 * 4)) /dev/zero; } >"$TMP/zemb.s1f$f.npy"
done
# merge_reports.py joins cv parts: the edge counts add up (seed 2 re-probes
# all-zero embeddings: an edge in each of its folds)
for f in 1 2 3; do cp "$TMP/zemb.s1f$f.npy" "$TMP/zemb.s2f$f.npy"; done
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --first-seed 2 --quiet --set probe_select=cv --set probe_alpha=300 \
       --from-embeddings "$TMP/zemb" --report "$TMP/z2" >/dev/null 2>&1 &&
   python3 tools/paper/merge_reports.py "$TMP/cvj" "$TMP/cv300" "$TMP/z2" >/dev/null 2>&1 &&
   [ "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["probe_select"], r["alpha_at_edge"], r["alpha_folds"])' "$TMP/cvj.json")" = "cv $((n + 3)) 6" ] && grep -q "alpha at grid edge: $((n + 3)) of 6 folds\.$" "$TMP/cvj.md"; then
    ok "merge_reports: cv parts joined, grid-edge counts added ($((n + 3)) of 6)"
else bad "merge_reports: cv parts joined, grid-edge counts added" "$(grep -A3 '"probe_select' "$TMP/cvj.json" 2>/dev/null | tr -d '\n')"; fi
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --set probe_select=cv \
       --from-embeddings "$TMP/zemb" --fold-log "$TMP/z.folds" --report "$TMP/z" >/dev/null 2>"$TMP/z.err" &&
   OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --set probe_select=cv \
       --from-embeddings "$TMP/zemb" --fold-log "$TMP/z.folds" --report "$TMP/zr" >/dev/null 2>"$TMP/zr.err" &&
   [ "$(cv_alphas "$TMP/z.json")" = "10000 10000 10000 " ] && grep -q '"alpha_at_edge": 3, "alpha_folds": 3,' "$TMP/z.json" &&
   [ "$(grep -c 'restored from' "$TMP/zr.err")" -eq 3 ] && grep -q '"alpha_at_edge": 3, "alpha_folds": 3,' "$TMP/zr.json" &&
   grep -q "^  alpha at grid edge: 3 of 3 folds " "$TMP/zr.err"; then
    ok "eval: ties go to the larger penalty; edges counted in restored folds too"
else bad "eval: ties go to the larger penalty; edges counted in restored folds too" "$(cv_alphas "$TMP/z.json" 2>/dev/null) $(tail -c 200 "$TMP/zr.err")"; fi
# a fold log's alpha is read back as written (an older run's too): 1e-05 is
# the grid's low edge, 3e-05 no edge, 10000 the high edge
awk 'NR == 1 { $6 = "1e-05" } NR == 2 { $6 = "3e-05" } { print }' "$TMP/z.folds" >"$TMP/z2.folds"
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --set probe_select=cv \
       --from-embeddings "$TMP/zemb" --fold-log "$TMP/z2.folds" --report "$TMP/z2" >/dev/null 2>"$TMP/z2.err" &&
   [ "$(cv_alphas "$TMP/z2.json")" = "1e-05 3e-05 10000 " ] && grep -q '"alpha_at_edge": 2, "alpha_folds": 3,' "$TMP/z2.json"; then
    ok "eval: both edges of the grid counted, from a fold log's alphas"
else bad "eval: both edges of the grid counted, from a fold log's alphas" "$(cv_alphas "$TMP/z2.json" 2>/dev/null) $(tail -c 200 "$TMP/z2.err")"; fi
# probe_select = fixed: probe_alpha as it is, nothing chosen, no edge count
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --set probe_select=fixed \
       --set probe_alpha=0.5 --from-embeddings "$TMP/cvemb" --report "$TMP/fx" >/dev/null 2>"$TMP/fx.err" &&
   [ "$(cv_alphas "$TMP/fx.json")" = "0.5 0.5 0.5 " ] && grep -q '"probe_select": "fixed", "rows"' "$TMP/fx.json" &&
   ! grep -q "probe alpha chosen\|grid edge" "$TMP/fx.err"; then
    ok "eval: probe_select=fixed uses probe_alpha"
else bad "eval: probe_select=fixed uses probe_alpha" "$(cv_alphas "$TMP/fx.json" 2>/dev/null) $(head -c 200 "$TMP/fx.err")"; fi
# --save-embeddings: one (graphs, L*d) .npy per fold, each from its own
# fold's model; unwritable prefixes fail before any pretraining
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/emb" >"$TMP/emb.out" 2>&1 &&
   [ "$(ls "$TMP"/emb.s1f*.npy | wc -l)" -eq 3 ] && command -v python3 >/dev/null &&
   [ "$(python3 - "$TMP"/emb.s1f1.npy "$TMP"/emb.s1f2.npy "$TMP"/emb.s1f3.npy <<'PY'
import math, struct, sys
data = []
for p in sys.argv[1:]:
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    assert b"'shape': (400, 16)" in b[10:10 + hl] and len(b) == 10 + hl + 400 * 16 * 4
    x = struct.unpack("<%df" % (400 * 16), b[10 + hl:])
    assert all(math.isfinite(v) for v in x) and any(v != 0 for v in x)
    data.append(x)
print("ok" if data[0] != data[1] and data[1] != data[2] else "same")
PY
)" = ok ]; then ok "eval: --save-embeddings writes one finite (400, 16) .npy per fold"
else bad "eval: --save-embeddings writes one finite (400, 16) .npy per fold" "$(ls "$TMP" | head -c 300)"; fi
# --resume: a run stopped after fold 1 (PREFIX.done keeps fold 1's record,
# fold 3's file is gone) and continued reuses fold 1 and gives the report of
# a run that never stopped; another config reuses nothing
expect_fail "eval: --resume without --save-embeddings" "resume needs --save-embeddings" "$HPJ" eval data/DEMO --config "$MCFG" --resume
OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/res" --report "$TMP/res_full" >/dev/null 2>&1
head -1 "$TMP/res.done" > "$TMP/res.d1" && mv "$TMP/res.d1" "$TMP/res.done" && rm -f "$TMP/res.s1f3.npy"
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/res" --resume \
       --report "$TMP/res_cont" >/dev/null 2>"$TMP/res.err" &&
   [ "$(grep -c 'resumed: embeddings from .*res.s1f1.npy' "$TMP/res.err")" -eq 1 ] && [ "$(grep -c 'resumed:' "$TMP/res.err")" -eq 1 ] &&
   cmp -s "$TMP/res_full.graphs.csv" "$TMP/res_cont.graphs.csv" && grep -q '"resumed_folds": 1, ' "$TMP/res_cont.json" &&
   [ "$(wc -l < "$TMP/res.done")" -eq 3 ] && [ -f "$TMP/res.s1f3.npy" ] &&
   [ "$(grep -o '"score": [0-9.]*' "$TMP/res_full.json")" = "$(grep -o '"score": [0-9.]*' "$TMP/res_cont.json")" ]; then
    ok "eval: --resume continues a stopped run with the same results"
else bad "eval: --resume continues a stopped run with the same results" "$(head -c 400 "$TMP/res.err")"; fi
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --set lr=0.002 --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/res" \
       --resume >/dev/null 2>"$TMP/res2.err" && ! grep -q 'resumed:' "$TMP/res2.err" && [ "$(wc -l < "$TMP/res.done")" -eq 6 ]; then
    ok "eval: --resume ignores folds saved under another config"
else bad "eval: --resume ignores folds saved under another config" "$(head -c 300 "$TMP/res2.err")"; fi
# --checkpoint-every: fold 2's embeddings cannot be written (a directory in
# the way), so the run stops after that fold's pretraining with its part file
# (after epoch 2 of 3) left; --resume continues fold 2 from it and gives the
# results of a run that never stopped (its recorded seconds include the
# earlier parts', kept in the part file's .sec: set to 1000 here); finished
# folds leave no part file
expect_fail "eval: --checkpoint-every needs --save-embeddings" "checkpoint-every needs --save-embeddings" \
    "$HPJ" eval data/DEMO --config "$RCFG" --checkpoint-every 1
OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$RCFG" --folds 3 --seeds 1 --quiet --report "$TMP/ck_full" >/dev/null 2>&1
mkdir -p "$TMP/ck.s1f2.npy"
if ! OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$RCFG" --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/ck" \
       --checkpoint-every 1 >/dev/null 2>"$TMP/ck1.err" &&
   [ "$(ls "$TMP"/ck.s1f2.*.part.hpj | wc -l)" -eq 1 ] && [ -z "$(ls "$TMP"/ck.s1f1.*.part.hpj* 2>/dev/null)" ] &&
   grep -qE '^[0-9]+\.[0-9]$' "$TMP"/ck.s1f2.*.part.hpj.sec && for f in "$TMP"/ck.s1f2.*.part.hpj.sec; do echo 1000.0 > "$f"; done &&
   rmdir "$TMP/ck.s1f2.npy" &&
   OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$RCFG" --folds 3 --seeds 1 --save-embeddings "$TMP/ck" \
       --checkpoint-every 1 --resume --report "$TMP/ck_cont" >/dev/null 2>"$TMP/ck2.err" &&
   grep -q "seed 1 fold 2: continuing from .*ck.s1f2.[0-9a-f]*.part.hpj after epoch 2" "$TMP/ck2.err" &&
   [ "$(grep -c "continuing from" "$TMP/ck2.err")" -eq 1 ] && [ -z "$(ls "$TMP"/ck.s1f*.part.hpj* 2>/dev/null)" ] &&
   awk '$1 == "s1f2" { ok = ($3 + 0 >= 1000) } $1 == "s1f3" { ok3 = ($3 + 0 < 1000) } END { exit !(ok && ok3) }' "$TMP/ck.done" &&
   cmp -s "$TMP/ck_full.graphs.csv" "$TMP/ck_cont.graphs.csv" &&
   [ "$(grep -o '"\(score\|train\|alpha\|mean\)": [0-9.e-]*' "$TMP/ck_full.json")" = "$(grep -o '"\(score\|train\|alpha\|mean\)": [0-9.e-]*' "$TMP/ck_cont.json")" ]; then
    ok "eval: --checkpoint-every + --resume continue a fold cut off mid-way with the same results"
else bad "eval: --checkpoint-every + --resume continue a fold cut off mid-way with the same results" "$(head -c 300 "$TMP/ck1.err") | $(head -c 300 "$TMP/ck2.err")"; fi
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$RCFG" --folds 3 --seeds 1 --quiet --lanes 2 --threads 2 \
       --save-embeddings "$TMP/ckl" --checkpoint-every 1 --report "$TMP/ckl" >/dev/null 2>&1 &&
   cmp -s "$TMP/ck_full.graphs.csv" "$TMP/ckl.graphs.csv" && [ -z "$(ls "$TMP"/ckl.s1f*.part.hpj 2>/dev/null)" ]; then
    ok "eval: --checkpoint-every in lanes gives the same report and leaves no part file"
else bad "eval: --checkpoint-every in lanes gives the same report and leaves no part file"; fi
printf 'not a checkpoint' > "$TMP/ck.s1f1.$(awk '{print $2; exit}' "$TMP/ck.done").part.hpj"
rm -f "$TMP/ck.done"
if ! "$HPJ" eval data/DEMO --config "$RCFG" --folds 3 --seeds 1 --quiet --save-embeddings "$TMP/ck" --checkpoint-every 1 --resume \
       >/dev/null 2>"$TMP/ck3.err" &&
   tail -1 "$TMP/ck3.err" | grep -qE "ck.s1f1.[0-9a-f]+.part.hpj: not an hpjepa checkpoint.*delete it to pretrain the fold from the start"; then
    ok "eval: a damaged part file is an error naming it"
else bad "eval: a damaged part file is an error naming it" "$(head -c 300 "$TMP/ck3.err")"; fi
# --fold-log: a 1-seed run records its folds; a 2-seed run on the same log
# restores seed 1 (no pretraining) and gives the report of a fresh 2-seed run;
# a last line cut mid-write is dropped and its fold run again; another config
# restores nothing; a malformed line is an error naming file:line
OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --quiet --report "$TMP/fl_full" >/dev/null 2>&1
OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --fold-log "$TMP/fl.folds" >/dev/null 2>&1
head -2 "$TMP/fl.folds" > "$TMP/fl.cut" && sed -n 3p "$TMP/fl.folds" | head -c 120 >> "$TMP/fl.cut" && mv "$TMP/fl.cut" "$TMP/fl.folds"
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --quiet --fold-log "$TMP/fl.folds" \
       --report "$TMP/fl_cont" >/dev/null 2>"$TMP/fl.err" &&
   grep -q 'fl.folds:3: dropping an incomplete last line' "$TMP/fl.err" &&
   [ "$(grep -c 'restored from' "$TMP/fl.err")" -eq 2 ] && grep -q 'seed 1/2 fold  2/3: .*restored from' "$TMP/fl.err" &&
   [ "$(wc -l < "$TMP/fl.folds")" -eq 6 ] && [ "$(grep -c '^s[12]f[123] ' "$TMP/fl.folds")" -eq 6 ] &&
   cmp -s "$TMP/fl_full.graphs.csv" "$TMP/fl_cont.graphs.csv" && grep -q '"restored_folds": 2, ' "$TMP/fl_cont.json" &&
   [ "$(grep -o '"\(score\|train\|alpha\)": [0-9.e-]*' "$TMP/fl_full.json")" = "$(grep -o '"\(score\|train\|alpha\)": [0-9.e-]*' "$TMP/fl_cont.json")" ] &&
   [ "$(grep -o '"mean": [0-9.]*' "$TMP/fl_full.json")" = "$(grep -o '"mean": [0-9.]*' "$TMP/fl_cont.json")" ]; then
    ok "eval: --fold-log restores recorded folds with the same results"
else bad "eval: --fold-log restores recorded folds with the same results" "$(head -c 400 "$TMP/fl.err")"; fi
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --set lr=0.002 --folds 3 --seeds 1 --quiet \
       --fold-log "$TMP/fl.folds" >/dev/null 2>"$TMP/fl2.err" && ! grep -q 'restored' "$TMP/fl2.err" && [ "$(wc -l < "$TMP/fl.folds")" -eq 9 ] &&
   grep -q 'fl.folds: 6 fold records under another key (another results version, dataset or configuration) left unused' "$TMP/fl2.err"; then
    ok "eval: --fold-log restores nothing under another config, and says so"
else bad "eval: --fold-log restores nothing under another config, and says so" "$(head -c 300 "$TMP/fl2.err")"; fi
printf 's1f1 zz\n' > "$TMP/fl_bad.folds"
expect_fail "eval: malformed fold log line (file:line)" "fl_bad.folds:1: not a fold record" \
    "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --fold-log "$TMP/fl_bad.folds"
head -c 300000 /dev/zero | tr '\0' 'x' > "$TMP/fl_bad.folds"; echo >> "$TMP/fl_bad.folds"
expect_fail "eval: fold log line longer than any record" "fl_bad.folds:1: not a fold record: line longer than" \
    "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --fold-log "$TMP/fl_bad.folds"
sed -n 1p "$TMP/fl.folds" | sed 's/ [0-9]*:/ 99999:/' > "$TMP/fl_bad.folds"
expect_fail "eval: fold log naming a graph outside the dataset" "fl_bad.folds:1: not a fold record: a test prediction is not" \
    "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --fold-log "$TMP/fl_bad.folds"
sed -n 1p "$TMP/fl.folds" | sed 's/^s1f1 /s1f2 /' > "$TMP/fl_bad.folds"
if ! "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --fold-log "$TMP/fl_bad.folds" >/dev/null 2>"$TMP/fl3.err" &&
   [ "$(grep -c "fl_bad.folds: the record of seed 1 fold 2 does not match this fold's test graphs" "$TMP/fl3.err")" -eq 1 ]; then
    ok "eval: fold log record of another fold's graphs is an error"
else bad "eval: fold log record of another fold's graphs is an error" "$(head -c 300 "$TMP/fl3.err")"; fi
expect_fail "eval: unwritable fold log" "nodir/x\.folds: cannot create" \
    "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --fold-log "$TMP/nodir/x.folds"
# --lanes: two folds pretrained at once give the same report; with a fold
# log holding seed 1, only seed 2's folds run (in lanes)
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --quiet --lanes 2 --threads 2 \
       --report "$TMP/ln" >/dev/null 2>&1 && cmp -s "$TMP/fl_full.graphs.csv" "$TMP/ln.graphs.csv" &&
   [ "$(grep -o '"\(score\|train\|alpha\|mean\)": [0-9.e-]*' "$TMP/fl_full.json")" = "$(grep -o '"\(score\|train\|alpha\|mean\)": [0-9.e-]*' "$TMP/ln.json")" ]; then
    ok "eval: --lanes 2 gives the report of one lane"
else bad "eval: --lanes 2 gives the report of one lane" "$(head -c 300 "$TMP/ln.json")"; fi
head -3 "$TMP/fl.folds" > "$TMP/ln.folds"
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --lanes 3 --threads 2 \
       --fold-log "$TMP/ln.folds" --save-embeddings "$TMP/lnemb" --report "$TMP/ln2" >/dev/null 2>"$TMP/ln2.err" &&
   [ "$(grep -c 'restored from' "$TMP/ln2.err")" -eq 3 ] && grep -q '^  seed 2/2 fold  3/3: accuracy ' "$TMP/ln2.err" &&
   cmp -s "$TMP/fl_full.graphs.csv" "$TMP/ln2.graphs.csv" && [ "$(wc -l < "$TMP/ln.folds")" -eq 6 ] &&
   [ "$(wc -l < "$TMP/lnemb.done")" -eq 3 ] && [ -f "$TMP/lnemb.s2f3.npy" ] && [ ! -f "$TMP/lnemb.s1f1.npy" ]; then
    ok "eval: --lanes with a fold log runs only the missing folds"
else bad "eval: --lanes with a fold log runs only the missing folds" "$(head -c 400 "$TMP/ln2.err")"; fi
# stderr is a file here, not a terminal: a line per fold (seed i/S, fold
# j/F, the ETA of the run until the last), no epoch lines, no carriage
# returns (one lane and lanes alike)
if ! grep -q "epoch" "$TMP/ln2.err" && ! grep -q "$(printf '\r')" "$TMP/ln2.err" &&
   OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --set epochs=2 --folds 3 --seeds 1 --threads 1 \
       >/dev/null 2>"$TMP/ep.err" && ! grep -q "epoch" "$TMP/ep.err" &&
   [ "$(grep -cE '^  seed 1/1 fold  [12]/3: accuracy [0-9.]+ \(train [0-9.]+\)  [0-9.]+ s, ETA [0-9hms]+$' "$TMP/ep.err")" -eq 2 ] &&
   grep -qE '^  seed 1/1 fold  3/3: accuracy [0-9.]+ \(train [0-9.]+\)  [0-9.]+ s$' "$TMP/ep.err" &&
   [ "$(wc -l < "$TMP/ep.err")" -eq 5 ] && ! grep -q "$(printf '\r')" "$TMP/ep.err"; then
    ok "eval: progress in a log is a line per fold with the run's ETA"
else bad "eval: progress in a log is a line per fold with the run's ETA" "$(head -c 400 "$TMP/ep.err")"; fi
expect_fail "eval: --lanes out of range" "lanes: 0 is out of range" "$HPJ" eval data/DEMO --config "$MCFG" --lanes 0
# a fold's seconds under --lanes are its own lane's time plus its probe,
# never more than the whole run (the first fold of a group once counted
# the group's run twice)
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --set epochs=8 --folds 2 --seeds 1 --quiet --lanes 2 --threads 2 \
       --report "$TMP/lt" >/dev/null 2>&1 &&
   tr ',' '\n' < "$TMP/lt.json" | awk -F': ' '/"wall_seconds"/ { w = $2 + 0 } /"seconds"/ && !/wall/ { n++; if ($2 + 0 > m) m = $2 + 0 }
       END { exit !(n == 2 && w > 0 && m > 0 && m <= w + 0.06) }'; then
    ok "eval: --lanes fold seconds are within the run's wall time"
else bad "eval: --lanes fold seconds are within the run's wall time" "$(tr ',' '\n' < "$TMP/lt.json" | grep seconds | head -5)"; fi
# regression (DEMO with a graph attribute and a split): the test graphs' float
# predictions read back to the same bits
rd=$TMP/REG; mkdir -p "$rd"
for f in A graph_indicator node_labels; do cp data/DEMO/DEMO_$f.txt "$rd/REG_$f.txt"; done
awk '{n[$1]++} END {for (g = 1; g <= 400; ++g) printf "%.3f\n", n[g] / 10}' data/DEMO/DEMO_graph_indicator.txt > "$rd/REG_graph_attributes.txt"
awk 'BEGIN {for (g = 0; g < 400; ++g) print (g % 5 == 0 ? "test" : g % 5 == 1 ? "val" : "train")}' > "$rd/REG_split.txt"
OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --report "$TMP/rg_full" >/dev/null 2>&1
OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --fold-log "$TMP/rg.folds" >/dev/null 2>&1
if OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --fold-log "$TMP/rg.folds" \
       --report "$TMP/rg_cont" >"$TMP/rg.out" 2>"$TMP/rg.err" && grep -q 'restored from' "$TMP/rg.err" && grep -q '^mae=' "$TMP/rg.out" &&
   cmp -s "$TMP/rg_full.graphs.csv" "$TMP/rg_cont.graphs.csv" && [ "$(wc -l < "$TMP/rg.folds")" -eq 1 ]; then
    ok "eval: --fold-log restores a regression split's predictions"
else bad "eval: --fold-log restores a regression split's predictions" "$(head -c 300 "$TMP/rg.err")"; fi
# regression, probe_select = cv: the ridge's penalty from the same absolute
# grid, chosen on the validation split, whatever probe_alpha; fixed: probe_alpha
if OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --set probe_select=cv --set probe_alpha=0.5 \
       --save-embeddings "$TMP/rgemb" --report "$TMP/rgcv" >/dev/null 2>"$TMP/rgcv.err" &&
   OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --set probe_select=cv --set probe_alpha=300 \
       --from-embeddings "$TMP/rgemb" --report "$TMP/rgcv300" >/dev/null 2>&1 &&
   OMP_WAIT_POLICY=passive "$HPJ" eval "$rd" --config "$MCFG" --seeds 1 --quiet --set probe_select=fixed --set probe_alpha=0.5 \
       --from-embeddings "$TMP/rgemb" --report "$TMP/rgfx" >/dev/null 2>&1 &&
   grep -q 'ridge alpha chosen on val' "$TMP/rgcv.err" &&
   grep -qE '"alpha": (1e-05|0\.0001|0\.001|0\.01|0\.1|1|10|100|1000|10000)[,}]' "$TMP/rgcv.json" &&
   [ "$(cv_alphas "$TMP/rgcv.json")" = "$(cv_alphas "$TMP/rgcv300.json")" ] && [ "$(cv_alphas "$TMP/rgfx.json")" = "0.5 " ] &&
   grep -q '"alpha_folds": 1,' "$TMP/rgcv.json"; then
    ok "eval: regression: probe_select=cv picks from the absolute grid on val ($(cv_alphas "$TMP/rgcv.json")), fixed uses probe_alpha"
else bad "eval: regression: probe_select=cv picks from the absolute grid on val, fixed uses probe_alpha" \
    "$(tail -c 200 "$TMP/rgcv.err") cv: $(cv_alphas "$TMP/rgcv.json" 2>/dev/null) 300: $(cv_alphas "$TMP/rgcv300.json" 2>/dev/null) fixed: $(cv_alphas "$TMP/rgfx.json" 2>/dev/null)"; fi
# train_embed = repartition: fold 1's test graphs keep the fixed-partition
# embeddings of the run above (same model), its training graphs get others
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --set train_embed=repartition \
       --save-embeddings "$TMP/embr" --report "$TMP/embr" >/dev/null 2>&1 && command -v python3 >/dev/null &&
   [ "$(python3 - "$TMP"/emb.s1f1.npy "$TMP"/embr.s1f1.npy "$TMP"/embr.graphs.csv <<'PY'
import csv, struct, sys
def rows(p):
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    x = struct.unpack("<%df" % (400 * 16), b[10 + hl:])
    return [x[16 * i:16 * i + 16] for i in range(400)]
a, r = rows(sys.argv[1]), rows(sys.argv[2])
test = {int(row["graph"]) for row in csv.DictReader(open(sys.argv[3])) if row["fold"] == "1"}
same_test = all(a[g] == r[g] for g in test)
diff_train = sum(a[g] != r[g] for g in range(400) if g not in test)
print("ok" if test and same_test and diff_train > 200 else "bad %d %s %d" % (len(test), same_test, diff_train))
PY
)" = ok ]; then ok "eval: train_embed=repartition re-embeds only the training graphs"
else bad "eval: train_embed=repartition re-embeds only the training graphs" "$(ls "$TMP" | head -c 300)"; fi
expect_fail "eval: bad train_embed" "bad value 'x' for key 'train_embed'" "$HPJ" eval data/DEMO --config "$MCFG" --set train_embed=x
# --from-embeddings: the same folds and probe on the saved embeddings give
# the same result line, without pretraining; wrong shapes and missing files
# are refused with the file named
fe=$(OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --from-embeddings "$TMP/emb" 2>&1 | tail -1)
want=$(tail -1 "$TMP/emb.out")
[ -n "$want" ] && [ "$fe" = "$want" ] && ok "eval: --from-embeddings reproduces the run that saved them ($fe)" ||
    bad "eval: --from-embeddings reproduces the run that saved them" "got '$fe', want '$want'"
expect_fail "eval: --from-embeddings with another dim" "emb.s1f1.npy: shape \(400, 16\), expected \(400, 32\)" "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --set dim=16 --from-embeddings "$TMP/emb"
expect_fail "eval: --from-embeddings, missing files" "nope.s1f1.npy: cannot open" "$HPJ" eval data/DEMO --config "$MCFG" --from-embeddings "$TMP/nope"
# --save-models / --from-models: the saved fold models give the same
# embeddings and result line without pretraining; mismatches are refused
if OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --save-models "$TMP/mod" \
       >"$TMP/mod.out" 2>/dev/null &&
   [ "$(ls "$TMP"/mod.s1f*.hpj | wc -l)" -eq 3 ] &&
   OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --quiet --from-models "$TMP/mod" \
       --save-embeddings "$TMP/embm" >"$TMP/modf.out" 2>/dev/null &&
   [ "$(tail -1 "$TMP/mod.out")" = "$(tail -1 "$TMP/modf.out")" ] && cmp -s "$TMP/emb.s1f2.npy" "$TMP/embm.s1f2.npy"; then
    ok "eval: --from-models reproduces the run that saved them ($(tail -1 "$TMP/modf.out"))"
else bad "eval: --from-models reproduces the run that saved them" "$(tail -1 "$TMP/mod.out") vs $(tail -1 "$TMP/modf.out" 2>/dev/null)"; fi
expect_fail "eval: --from-models with another dim" "mod.s1f1.hpj: the model's mode, dim or resolutions differ" "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 1 --set dim=16 --from-models "$TMP/mod"
expect_fail "eval: --from-models, missing files" "mod.s2f1.hpj: cannot open" "$HPJ" eval data/DEMO --config "$MCFG" --folds 3 --seeds 2 --from-models "$TMP/mod"
expect_fail "eval: --from-models with --save-models" "excludes" "$HPJ" eval data/DEMO --config "$MCFG" --from-models "$TMP/mod" --save-models "$TMP/x"
expect_fail "eval: unwritable --save-models fails first" "nodir/m\.s1f1\.hpj: cannot create" "$HPJ" eval data/DEMO --config "$MCFG" --save-models "$TMP/nodir/m"
expect_fail "eval: --save- and --from-embeddings together" "exclude each other" "$HPJ" eval data/DEMO --config "$MCFG" --from-embeddings "$TMP/emb" --save-embeddings "$TMP/x"
expect_fail "eval: unwritable --save-embeddings fails first" "nodir/e\.s1f1\.npy: cannot create" "$HPJ" eval data/DEMO --config "$MCFG" --save-embeddings "$TMP/nodir/e"
expect_fail "eval: unwritable --report fails first" "nodir/r\.json: cannot create" "$HPJ" eval data/DEMO --config "$MCFG" --report "$TMP/nodir/r"
out=$("$HPJ" bench train data/DEMO --config "$MCFG" --steps 2 --warmup 1 2>/dev/null | tail -1)
echo "$out" | grep -qE '^graphs_per_s=[0-9.]+ gflops=[0-9.]+' && ok "bench train: result line" || bad "bench train: result line" "$out"
for c in pretrain embed eval; do "$HPJ" $c --help | grep -q "usage: hpjepa $c" && ok "$c --help" || bad "$c --help"; done
# progress on a terminal (a pseudo-terminal from util-linux `script`): the
# redrawn lines of eval (seed i/S, fold j/F, the fold's epoch, the run's
# ETA) and pretrain's bar fit the width, from COLUMNS or from the terminal
# itself (stty), so that they never wrap; one seed has no std
if script -qec true /dev/null >/dev/null 2>&1; then
    rows_fit() { # FILE COLS: the redrawn rows (split at CR and LF: those ending
                 # in the clear-to-end escape) are there, each shorter than COLS
        tr '\r' '\n' < "$1" | grep $'\x1b\\[K$' | sed 's/\x1b\[K//g' |
            awk -v c="$2" 'length($0) >= c { bad = 1 } END { exit bad || NR == 0 }'
    }
    OMP_WAIT_POLICY=passive COLUMNS=60 script -qec "$HPJ eval data/DEMO --config $MCFG --set epochs=2 --folds 3 --seeds 1 --threads 1" \
        /dev/null >"$TMP/tty_eval.txt" 2>&1
    if rows_fit "$TMP/tty_eval.txt" 60 &&
       tr '\r' '\n' < "$TMP/tty_eval.txt" | sed 's/\x1b\[K//g' | grep -qE '^\[[#.]{10,}\] seed 1/1 fold 3/3 epoch 2/2 \| ETA [0-9hms]+$' &&
       grep -q 'seed 1/1 fold  3/3: accuracy ' "$TMP/tty_eval.txt" && grep -q '^accuracy=[01]\.[0-9]* std=n/a' "$TMP/tty_eval.txt"; then
        ok "eval on a terminal: a redrawn line with seed, fold, epoch and ETA, within COLUMNS=60"
    else bad "eval on a terminal: a redrawn line with seed, fold, epoch and ETA, within COLUMNS=60" "$(tr '\r' '\n' < "$TMP/tty_eval.txt" | head -c 400)"; fi
    OMP_WAIT_POLICY=passive script -qec "stty cols 80 rows 24; unset COLUMNS; $HPJ pretrain data/DEMO --config $MCFG --set resolutions=2,4,8,16 --set targets=1,2,3,4 --set epochs=2 --out $TMP/tty_m" \
        /dev/null >"$TMP/tty_pt.txt" 2>&1
    if rows_fit "$TMP/tty_pt.txt" 80 && tr '\r' '\n' < "$TMP/tty_pt.txt" | sed 's/\x1b\[K//g' | grep -qE '^\[[#.]{10,}\] epoch 2/2 loss( [0-9.e-]+ *){4} \| ETA' &&
       grep -q '^model=' "$TMP/tty_pt.txt"; then
        ok "pretrain on an 80-column terminal: the bar with four resolutions' losses fits"
    else bad "pretrain on an 80-column terminal: the bar with four resolutions' losses fits" "$(tr '\r' '\n' < "$TMP/tty_pt.txt" | awk '{ print length($0) }' | sort -n | tail -1) columns"; fi
else echo "  (no util-linux script: the terminal progress checks skipped)"; fi
out=$(OMP_WAIT_POLICY=passive "$HPJ" eval data/DEMO --config "$MCFG" --folds 2 --seeds 1 --threads 1 2>/dev/null | tail -1)
[ -n "$out" ] && echo "$out" | grep -qE '^accuracy=[01]\.[0-9]{4} std=n/a$' && ok "eval: one seed prints std=n/a ($out)" || bad "eval: one seed prints std=n/a" "$out"
[ -f "$TMP/rg.out" ] && grep -qE '^mae=[0-9.]+ std=n/a$' "$TMP/rg.out" && ok "eval: one seed of a regression prints std=n/a" ||
    bad "eval: one seed of a regression prints std=n/a" "$(cat "$TMP/rg.out" 2>/dev/null)"
# make demo never swallows an error: a protocol eval refuses (FOLDS=1) stops
# the demo with the program's one-line reason and its exit status
HPJEPA_BIN=$HPJ FOLDS=1 bash tools/demo/demo.sh >"$TMP/demo.out" 2>"$TMP/demo.err"; rc=$?
[ $rc -eq 2 ] && grep -q '^hpjepa eval: --folds: 1 is out of range' "$TMP/demo.err" && grep -q '^make demo: failed (exit 2)' "$TMP/demo.err" &&
   [ "$(wc -l < "$TMP/demo.err")" -eq 2 ] && ok "make demo: a failing run's reason and exit status come through" ||
    bad "make demo: a failing run's reason and exit status come through" "exit $rc: $(cat "$TMP/demo.err")"

# -- outputs: every command checks its output paths before its work, and its
# messages name them as the user gave them (never PATH.tmp~). The dataset or
# input given here does not exist, so a check made after reading it would
# report that instead --
# out_first NAME PATTERN CMD...: one line matching PATTERN, no "tmp~" in it
out_first() {
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$@"
    grep -q 'tmp~' "$TMP/err" && bad "$name: the message names the temporary file" "$(cat "$TMP/err")"
}
out_first "pretrain: unwritable --out fails before the dataset is read" "nodir/m\.hpj: cannot create" \
    "$HPJ" pretrain "$TMP/NOPE" --config "$MCFG" --out "$TMP/nodir/m.hpj"
out_first "pretrain: unwritable --loss-log fails before the dataset is read" "nodir/l\.csv: cannot create" \
    "$HPJ" pretrain "$TMP/NOPE" --config "$MCFG" --out "$TMP/lo.hpj" --loss-log "$TMP/nodir/l.csv"
out_first "pretrain: --out naming a folder fails first" "is a folder" "$HPJ" pretrain "$TMP/NOPE" --config "$MCFG" --out "$TMP"
out_first "embed: unwritable --out fails before the model is read" "nodir/e\.npy: cannot create" \
    "$HPJ" embed "$TMP/nope.hpj" "$TMP/NOPE" --out "$TMP/nodir/e.npy"
out_first "eval: unwritable --report fails before the dataset is read" "nodir/r\.json: cannot create" \
    "$HPJ" eval "$TMP/NOPE" --config "$MCFG" --report "$TMP/nodir/r"
out_first "plot: unwritable --out fails before the inputs are read" "nodir/p\.svg: cannot create" \
    "$HPJ" plot loss --out "$TMP/nodir/p.svg" "$TMP/nope.csv"
out_first "partition: unwritable --out fails before the graph is read" "nodir/p\.txt: cannot create" \
    "$HPJ" partition "$TMP/nope.graph" 4 --out "$TMP/nodir/p.txt"
[ ! -e "$TMP/lo.hpj" ] && [ -z "$(ls "$TMP" | grep 'tmp~')" ] && ok "outputs checked first: nothing left behind" ||
    bad "outputs checked first: nothing left behind" "$(ls "$TMP" | grep -e 'tmp~' -e '^lo.hpj')"

# -- a config value at its documented maximum survives the checkpoint: embed
# reads back the config pretrain wrote (edge_drop = 0.99 once came back as
# 0.99000001, out of range, after the training was done) --
if "$HPJ" pretrain data/DEMO --config "$MCFG" --set edge_drop=0.99 --set epochs=1 --save-optimizer --quiet \
       --out "$TMP/ed.hpj" >/dev/null 2>"$TMP/ed.err" &&
   "$HPJ" embed "$TMP/ed.hpj" data/DEMO --out "$TMP/ed.npy" >/dev/null 2>>"$TMP/ed.err" &&
   "$HPJ" pretrain data/DEMO --resume "$TMP/ed.hpj" --out "$TMP/ed2.hpj" --quiet >/dev/null 2>>"$TMP/ed.err"; then
    ok "pretrain --set edge_drop=0.99, then embed and --resume from the checkpoint"
else bad "pretrain --set edge_drop=0.99, then embed and --resume from the checkpoint" "$(head -c 300 "$TMP/ed.err")"; fi

# -- interruption: SIGINT / SIGTERM remove the temporary files, print one
# line and exit with 130 / 143; a run that can continue says how --
# interrupt_run SIG CONDITION CMD...: runs CMD in the background, waits
# until CONDITION (shell code) holds, at most 120 s, then sends SIG; irc =
# its exit code, its stderr in $TMP/int.err. The program keeps a signal it
# inherits ignored (as under nohup), and a background job of a script, or a
# whole suite started in the background, inherits SIGINT ignored: job
# control and env --default-signal give CMD the default handling. A CMD
# still running 60 s after SIG is killed, so a lost signal fails the check
# instead of hanging the suite.
interrupt_run() {
    local sig=$1 cond=$2 pid k
    shift 2
    set -m
    env --default-signal=INT,TERM "$@" >/dev/null 2>"$TMP/int.err" &
    pid=$!
    set +m
    for k in $(seq 1200); do
        eval "$cond" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -s "$sig" "$pid" 2>/dev/null
    for k in $(seq 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -s KILL "$pid" 2>/dev/null
    wait "$pid"
    irc=$?
}
LCFG=$TMP/long.cfg # epochs enough for minutes: always interrupted
printf 'dim = 8\nheads = 2\nblocks = 1\nffn = 16\nrw_dim = 4\nresolutions = 2,4\ntargets = 1,2\nepochs = 100000\nbatch_size = 64\n' >"$LCFG"
mkdir -p "$TMP/int1" "$TMP/int2" "$TMP/int3"
# pretrain, SIGINT while the loss log is open: nothing written
interrupt_run INT "[ -e '$TMP/int1/loss.csv.tmp~' ]" \
    "$HPJ" pretrain data/DEMO --config "$LCFG" --out "$TMP/int1/m.hpj" --loss-log "$TMP/int1/loss.csv" --quiet
if [ $irc -eq 130 ] && [ "$(cat "$TMP/int.err")" = "hpjepa pretrain: interrupted; nothing written" ] &&
   [ -z "$(ls -A "$TMP/int1")" ]; then ok "pretrain: SIGINT exits 130, one line, no file left"
else bad "pretrain: SIGINT exits 130, one line, no file left" "exit=$irc $(head -c 300 "$TMP/int.err"); left: $(ls -A "$TMP/int1")"; fi
# pretrain with a checkpoint every epoch, SIGTERM after the first: the
# checkpoint stays, and the message gives the command that continues it
interrupt_run TERM "[ -e '$TMP/int2/m.hpj' ]" \
    "$HPJ" pretrain data/DEMO --config "$LCFG" --out "$TMP/int2/m.hpj" --checkpoint-every 1 --quiet
again=$(sed -n 's/^hpjepa pretrain: interrupted; .*int2\/m\.hpj holds epoch \([0-9]*\) of 100000: continue with hpjepa \(.*\)$/\1 \2/p' "$TMP/int.err")
if [ $irc -eq 143 ] && [ "$(wc -l <"$TMP/int.err")" -eq 1 ] && [ "$(ls -A "$TMP/int2")" = "m.hpj" ] &&
   [ "${again#* }" = "pretrain data/DEMO --resume $TMP/int2/m.hpj --out $TMP/int2/m.hpj --checkpoint-every 1" ]; then
    ok "pretrain: SIGTERM exits 143, keeps the last checkpoint and says how to continue"
else bad "pretrain: SIGTERM exits 143, keeps the last checkpoint and says how to continue" \
    "exit=$irc $(head -c 400 "$TMP/int.err"); left: $(ls -A "$TMP/int2")"; fi
# the command it gives continues the run (one more epoch here)
e=${again%% *}
read -ra words <<<"${again#* }"
if [ -n "$e" ] && "$HPJ" "${words[@]}" --until-epoch $((e + 1)) --quiet >"$TMP/int2.out" 2>&1 &&
   grep -q " epoch=$((e + 1))/100000 " "$TMP/int2.out"; then ok "pretrain: the interrupted run continues with the command it gave"
else bad "pretrain: the interrupted run continues with the command it gave" "$(head -c 300 "$TMP/int2.out")"; fi
# eval with a fold log, SIGINT after a finished fold: the log keeps it (whole
# lines), no report or temporary file, and the same command continues
printf 'dim = 8\nheads = 2\nblocks = 1\nffn = 16\nrw_dim = 4\nresolutions = 2,4\ntargets = 1,2\nepochs = 10\nbatch_size = 64\n' >"$TMP/int3.cfg"
interrupt_run INT "[ -s '$TMP/int3/f.folds' ]" "$HPJ" eval data/DEMO --config "$TMP/int3.cfg" --folds 2 --seeds 1000 --quiet \
    --fold-log "$TMP/int3/f.folds" --report "$TMP/int3/r"
if [ $irc -eq 130 ] && [ "$(grep -c 'interrupted' "$TMP/int.err")" -eq 1 ] &&
   tail -n 1 "$TMP/int.err" | grep -qE "^hpjepa eval: interrupted; [0-9]+ finished folds? kept in .*int3/f\.folds: run the same command \(with --fold-log .*int3/f\.folds\) to continue$" &&
   [ "$(ls -A "$TMP/int3")" = "f.folds" ] && [ "$(tail -c 1 "$TMP/int3/f.folds" | od -An -c | tr -d ' ')" = '\n' ]; then
    ok "eval: SIGINT exits 130, keeps the finished folds and says how to continue"
else bad "eval: SIGINT exits 130, keeps the finished folds and says how to continue" \
    "exit=$irc $(tail -n 1 "$TMP/int.err" | head -c 300); left: $(ls -A "$TMP/int3")"; fi
if "$HPJ" eval data/DEMO --config "$TMP/int3.cfg" --folds 2 --seeds 1 --quiet --fold-log "$TMP/int3/f.folds" \
       >/dev/null 2>"$TMP/int3.err" && grep -q 'restored from' "$TMP/int3.err"; then
    ok "eval: a run on the interrupted one's fold log restores its folds"
else bad "eval: a run on the interrupted one's fold log restores its folds" "$(head -c 300 "$TMP/int3.err")"; fi
