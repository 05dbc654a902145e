# Command-line checks of `eval --validation` and `eval --select-epochs`
# (sourced by tests/cli_test.sh: helpers ok, bad, expect_fail, $HPJ, $TMP).
# Choices such as the patch-token definition or the weight decay are made on
# validation scores; these checks hold the protocol to never reading the
# test graphs, to naming its scores, and to keeping its records apart.
VCFG=$TMP/valid.cfg
printf 'dim = 8\nheads = 2\nblocks = 1\nffn = 16\nrw_dim = 4\nresolutions = 2,4\ntargets = 1,2\nepochs = 1\nbatch_size = 64\nprobe_select = cv\n' > "$VCFG"
VA=(--config "$VCFG" --folds 3 --seeds 1 --quiet)
# fields of a fold log line but its seconds (the 3rd)
vrec() { cut -d' ' -f1,2,4- "$1"; }
vrun() { OMP_WAIT_POLICY=passive "$HPJ" eval "$@"; }

# -- classification: the test fold is never read. Fold 1's test graphs (from
# a test run's graphs.csv) get other node labels in a copy of DEMO (same name,
# so the same key): fold 1's validation record and embeddings stay the same
# bits, while the test protocol's record of fold 1 changes --
vrun data/DEMO "${VA[@]}" --report "$TMP/vt" --fold-log "$TMP/vt.folds" --save-embeddings "$TMP/vte" >"$TMP/vt.out" 2>/dev/null
vrun data/DEMO "${VA[@]}" --validation --report "$TMP/vv" --fold-log "$TMP/vv.folds" --save-embeddings "$TMP/vve" \
    >"$TMP/vv.out" 2>"$TMP/vv.err"
mkdir -p "$TMP/vcorr/DEMO"
cp data/DEMO/DEMO_A.txt data/DEMO/DEMO_graph_indicator.txt data/DEMO/DEMO_graph_labels.txt "$TMP/vcorr/DEMO/"
awk -F, 'NR == FNR { if (FNR > 1 && $2 == 1) t[$3 + 1] = 1; next }
         FILENAME ~ /indicator/ { g[FNR] = $1; next }
         { print (g[FNR] in t) ? ($1 + 1) % 3 : $1 }' \
    "$TMP/vt.graphs.csv" data/DEMO/DEMO_graph_indicator.txt data/DEMO/DEMO_node_labels.txt > "$TMP/vcorr/DEMO/DEMO_node_labels.txt"
nchanged=$(cmp -l data/DEMO/DEMO_node_labels.txt "$TMP/vcorr/DEMO/DEMO_node_labels.txt" 2>/dev/null | wc -l)
vrun "$TMP/vcorr/DEMO" "${VA[@]}" --fold-log "$TMP/vtc.folds" --save-embeddings "$TMP/vtce" >/dev/null 2>&1
vrun "$TMP/vcorr/DEMO" "${VA[@]}" --validation --fold-log "$TMP/vvc.folds" --save-embeddings "$TMP/vvce" >/dev/null 2>&1
if [ "$nchanged" -gt 1000 ] && [ -s "$TMP/vv.folds" ] && [ -s "$TMP/vvc.folds" ] &&
   [ "$(vrec "$TMP/vv.folds" | head -n 1)" = "$(vrec "$TMP/vvc.folds" | head -n 1)" ] &&
   cmp -s "$TMP/vve.val.s1f1.npy" "$TMP/vvce.val.s1f1.npy" &&
   [ "$(vrec "$TMP/vt.folds" | head -n 1)" != "$(vrec "$TMP/vtc.folds" | head -n 1)" ] &&
   ! cmp -s "$TMP/vte.s1f1.npy" "$TMP/vtce.s1f1.npy"; then
    ok "eval --validation: fold 1 the same bits when only its test graphs change ($nchanged node labels); the test protocol's fold 1 changes"
else bad "eval --validation: fold 1 the same bits when only its test graphs change; the test protocol's fold 1 changes" \
    "changed $nchanged; $(vrec "$TMP/vv.folds" | head -n 1 | cut -c1-80) / $(vrec "$TMP/vvc.folds" | head -n 1 | cut -c1-80)"; fi
# the validation graphs of fold f are fold f + 1's test graphs (each graph
# scored once per seed), and a validation fold's embeddings of its test
# graphs are zeros: never computed
if command -v python3 >/dev/null && [ "$(python3 - "$TMP/vt.graphs.csv" "$TMP/vv.graphs.csv" "$TMP/vve.val.s1f1.npy" <<'PY'
import csv, struct, sys
t = {int(r["graph"]): int(r["fold"]) for r in csv.DictReader(open(sys.argv[1]))}
v = {int(r["graph"]): int(r["fold"]) for r in csv.DictReader(open(sys.argv[2]))}
b = open(sys.argv[3], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
x = struct.unpack("<%df" % (400 * 16), b[10 + hl:])
zero = all(not any(x[16 * g:16 * g + 16]) == (t[g] == 1) for g in range(400))
print("ok" if len(v) == 400 and all(v[g] == (t[g] - 2) % 3 + 1 for g in range(400)) and zero else "bad")
PY
)" = ok ]; then ok "eval --validation: fold f scores fold f+1's graphs, every graph once; the test fold's rows never embedded"
else bad "eval --validation: fold f scores fold f+1's graphs, every graph once; the test fold's rows never embedded"; fi

# -- the result line, the report and the per-fold lines say "validation" --
if grep -qE '^validation_accuracy=[01]\.[0-9]{4} std=n/a$' "$TMP/vv.out" && grep -q '^validation_accuracy = ' "$TMP/vv.md" &&
   grep -q 'Validation scores, not test results' "$TMP/vv.md" && grep -q '| validation accuracy |' "$TMP/vv.md" &&
   grep -q '"metric": "validation_accuracy", .*"validation": true' "$TMP/vv.json" &&
   grep -q 'fold  1/3: validation accuracy ' "$TMP/vv.err" && ! grep -q 'validation' "$TMP/vt.out"; then
    ok "eval --validation: the result line, md, json and fold lines name validation ($(tail -n 1 "$TMP/vv.out"))"
else bad "eval --validation: the result line, md, json and fold lines name validation" "$(cat "$TMP/vv.out")"; fi

# -- the two modes' records never mix: one fold log and one embeddings prefix
# for both; each mode restores only its own folds --
cp "$TMP/vt.folds" "$TMP/vmix.folds"
if vrun data/DEMO "${VA[@]}" --validation --fold-log "$TMP/vmix.folds" --report "$TMP/vm1" >"$TMP/vm1.out" 2>"$TMP/vm1.err" &&
   ! grep -q 'restored from' "$TMP/vm1.err" && grep -q '3 fold records under another key' "$TMP/vm1.err" &&
   [ "$(tail -n 1 "$TMP/vm1.out")" = "$(tail -n 1 "$TMP/vv.out")" ] &&
   vrun data/DEMO "${VA[@]}" --fold-log "$TMP/vmix.folds" --report "$TMP/vm2" >"$TMP/vm2.out" 2>"$TMP/vm2.err" &&
   [ "$(grep -c 'restored from' "$TMP/vm2.err")" -eq 3 ] && [ "$(tail -n 1 "$TMP/vm2.out")" = "$(tail -n 1 "$TMP/vt.out")" ] &&
   vrun data/DEMO "${VA[@]}" --validation --fold-log "$TMP/vmix.folds" >"$TMP/vm3.out" 2>"$TMP/vm3.err" &&
   [ "$(grep -c 'restored from' "$TMP/vm3.err")" -eq 3 ] && [ "$(wc -l < "$TMP/vmix.folds")" -eq 6 ]; then
    ok "eval: test and validation records in one fold log never answer for each other"
else bad "eval: test and validation records in one fold log never answer for each other" "$(tail -c 300 "$TMP/vm1.err")"; fi
cp "$TMP/vte.s1f1.npy" "$TMP/vte.keep.npy"
if vrun data/DEMO "${VA[@]}" --validation --save-embeddings "$TMP/vte" --resume >"$TMP/vr.out" 2>"$TMP/vr.err" &&
   ! grep -q 'resumed' "$TMP/vr.err" && cmp -s "$TMP/vte.s1f1.npy" "$TMP/vte.keep.npy" && [ -f "$TMP/vte.val.done" ] &&
   cmp -s "$TMP/vte.val.s1f1.npy" "$TMP/vve.val.s1f1.npy" &&
   vrun data/DEMO "${VA[@]}" --validation --from-embeddings "$TMP/vte" >"$TMP/vfe.out" 2>/dev/null &&
   [ "$(tail -n 1 "$TMP/vfe.out")" = "$(tail -n 1 "$TMP/vv.out")" ]; then
    ok "eval --validation: its fold files are PREFIX.val.* (resume and --from-embeddings keep to them)"
else bad "eval --validation: its fold files are PREFIX.val.* (resume and --from-embeddings keep to them)" "$(tail -c 300 "$TMP/vr.err")"; fi

# -- lanes: the one-lane report --
mask_t() { sed -E 's/"(wall_seconds|seconds)": [0-9.]+/"\1": X/g; s/wall time [0-9.]+ s/wall time X s/; s/threads = [0-9]+/threads = T/' "$1"; }
if vrun data/DEMO "${VA[@]}" --validation --lanes 2 --threads 2 --report "$TMP/vl" >/dev/null 2>&1 &&
   diff <(mask_t "$TMP/vv.json") <(mask_t "$TMP/vl.json") >/dev/null && cmp -s "$TMP/vv.graphs.csv" "$TMP/vl.graphs.csv"; then
    ok "eval --validation --lanes 2: the one-lane report"
else bad "eval --validation --lanes 2: the one-lane report"; fi

expect_fail "eval --validation: --folds 2 leaves no training folds" "validation needs --folds 3 or more" \
    "$HPJ" eval data/DEMO --config "$VCFG" --folds 2 --validation
expect_fail "eval --select-epochs: classification has no validation split" "select-epochs chooses the checkpoint on a validation split" \
    "$HPJ" eval data/DEMO --config "$VCFG" --folds 3 --select-epochs 2
expect_fail "eval --select-epochs: with --from-embeddings" "select-epochs reads out checkpoints while it pretrains" \
    "$HPJ" eval data/DEMO --config "$VCFG" --select-epochs 2 --from-embeddings "$TMP/x"
expect_fail "eval --select-epochs: epochs not ascending" "'3,2' is not a list of ascending epochs in 1\.\.4" \
    "$HPJ" eval data/DEMO --config "$VCFG" --set epochs=4 --select-epochs 3,2

# -- regression (DEMO with a graph attribute and a train/val/test split) --
vd=$TMP/vreg/VREG; mkdir -p "$vd"
for f in A graph_indicator; do cp data/DEMO/DEMO_$f.txt "$vd/VREG_$f.txt"; done
cp data/DEMO/DEMO_node_labels.txt "$vd/VREG_node_labels.txt"
awk '{n[$1]++} END {for (g = 1; g <= 400; ++g) printf "%.3f\n", n[g] / 10}' data/DEMO/DEMO_graph_indicator.txt > "$vd/VREG_graph_attributes.txt"
awk 'BEGIN {for (g = 0; g < 400; ++g) print (g % 5 == 0 ? "test" : g % 5 == 1 ? "val" : "train")}' > "$vd/VREG_split.txt"
vc=$TMP/vregc/VREG; mkdir -p "$vc"
cp "$vd"/VREG_* "$vc/"
# the test split's node labels changed (graph g + 1 of the indicator is test when g % 5 == 0)
awk 'NR == FNR { g[FNR] = $1; next } { print ((g[FNR] - 1) % 5 == 0) ? ($1 + 1) % 3 : $1 }' \
    data/DEMO/DEMO_graph_indicator.txt data/DEMO/DEMO_node_labels.txt > "$vc/VREG_node_labels.txt"
RA=(--config "$VCFG" --seeds 1 --quiet --set readout=task --set epochs=4)
vrun "$vd" "${RA[@]}" --validation --report "$TMP/vrv" >"$TMP/vrv.out" 2>/dev/null
vrun "$vc" "${RA[@]}" --validation --report "$TMP/vrvc" >"$TMP/vrvc.out" 2>/dev/null
vrun "$vd" "${RA[@]}" --report "$TMP/vrt" >"$TMP/vrt.out" 2>/dev/null
vrun "$vc" "${RA[@]}" --report "$TMP/vrtc" >"$TMP/vrtc.out" 2>/dev/null
if grep -qE '^validation_mae=[0-9.]+ std=n/a$' "$TMP/vrv.out" && [ "$(tail -n 1 "$TMP/vrv.out")" = "$(tail -n 1 "$TMP/vrvc.out")" ] &&
   cmp -s "$TMP/vrv.graphs.csv" "$TMP/vrvc.graphs.csv" && [ "$(tail -n +2 "$TMP/vrv.graphs.csv" | wc -l)" -eq 80 ] &&
   ! cmp -s "$TMP/vrt.graphs.csv" "$TMP/vrtc.graphs.csv"; then
    ok "eval --validation, regression: scores the val split ($(tail -n 1 "$TMP/vrv.out")), unchanged when only test graphs change"
else bad "eval --validation, regression: scores the val split, unchanged when only test graphs change" \
    "$(cat "$TMP/vrv.out" "$TMP/vrvc.out" | tr '\n' ' ')"; fi

# -- --select-epochs: the checkpoint with the lowest validation MAE (the
# earlier on a tie) is the one reported; its saved model, probed without
# selection, gives the same test predictions; one checkpoint is the plain
# run, bit for bit --
if vrun "$vd" "${RA[@]}" --select-epochs 4 --report "$TMP/vs" --save-models "$TMP/vsm" --fold-log "$TMP/vs.folds" \
       >"$TMP/vs.out" 2>"$TMP/vs.err" &&
   best=$(awk '/checkpoint epoch/ { split($3, e, "/"); m = $6 + 0; if (!n++ || m < b) { b = m; be = e[1] } } END { if (n == 4) print be }' "$TMP/vs.err") &&
   [ -n "$best" ] && grep -q "\"epoch\": $best, " "$TMP/vs.json" && grep -q " epoch=$best\$" "$TMP/vs.folds" &&
   grep -q '"select_epochs": \[1, 2, 3, 4\]' "$TMP/vs.json" && grep -q '| seed | fold | epoch | test mae | train |' "$TMP/vs.md" &&
   vrun "$vd" "${RA[@]}" --from-models "$TMP/vsm" --report "$TMP/vsf" >"$TMP/vsf.out" 2>/dev/null &&
   cmp -s "$TMP/vs.graphs.csv" "$TMP/vsf.graphs.csv" && [ "$(tail -n 1 "$TMP/vs.out")" = "$(tail -n 1 "$TMP/vsf.out")" ]; then
    ok "eval --select-epochs 4: the lowest validation MAE's checkpoint (epoch $best) is reported, its model saved"
else bad "eval --select-epochs 4: the lowest validation MAE's checkpoint is reported, its model saved" \
    "best '${best:-}' $(grep -o '"epoch": [0-9]*' "$TMP/vs.json") $(tail -c 300 "$TMP/vs.err")"; fi
# with --checkpoint-every the choice so far is kept beside the part file: a
# run stopped (SIGTERM) once a checkpoint has been read out, continued with
# --resume, reads out only the checkpoints it had not, and reports the
# uninterrupted run's choice and predictions; no part file is left
RI=("$vd" "${RA[@]}" --set epochs=60 --select-epochs 4 --save-embeddings "$TMP/vsi" --checkpoint-every 1)
vrun "$vd" "${RA[@]}" --set epochs=60 --select-epochs 4 --report "$TMP/vsr" >"$TMP/vsr.out" 2>/dev/null
interrupt_run TERM "ls '$TMP'/vsi.s1f1.*.part.hpj.sel >/dev/null 2>&1" env OMP_WAIT_POLICY=passive "$HPJ" eval "${RI[@]}"
read0=$(cut -d' ' -f1 "$TMP"/vsi.s1f1.*.part.hpj.sel 2>/dev/null)
if [ $irc -eq 143 ] && [ -n "$read0" ] && [ "$read0" -ge 1 ] && [ "$read0" -le 3 ] &&
   vrun "${RI[@]}" --resume --report "$TMP/vsi" >"$TMP/vsi.out" 2>"$TMP/vsi.err" &&
   [ "$(grep -c 'checkpoint epoch' "$TMP/vsi.err")" -eq $((4 - read0)) ] && [ -z "$(ls "$TMP"/vsi.s1f1.*.part.hpj* 2>/dev/null)" ] &&
   cmp -s "$TMP/vsr.graphs.csv" "$TMP/vsi.graphs.csv" && [ "$(tail -n 1 "$TMP/vsr.out")" = "$(tail -n 1 "$TMP/vsi.out")" ] &&
   [ "$(grep -o '"epoch": [0-9]*' "$TMP/vsr.json")" = "$(grep -o '"epoch": [0-9]*' "$TMP/vsi.json")" ]; then
    ok "eval --select-epochs + --checkpoint-every: stopped after $read0 checkpoint(s), --resume gives the same choice and results"
else bad "eval --select-epochs + --checkpoint-every: stopped, --resume gives the same choice and results" \
    "exit=$irc read=${read0:-none} $(tail -c 300 "$TMP/int.err") | $(tail -c 300 "$TMP/vsi.err" 2>/dev/null)"; fi
if vrun "$vd" "${RA[@]}" --select-epochs 1 --report "$TMP/vs1" >"$TMP/vs1.out" 2>/dev/null &&
   cmp -s "$TMP/vs1.graphs.csv" "$TMP/vrt.graphs.csv" && [ "$(tail -n 1 "$TMP/vs1.out")" = "$(tail -n 1 "$TMP/vrt.out")" ]; then
    ok "eval --select-epochs 1: the last epoch only, the plain run's results"
else bad "eval --select-epochs 1: the last epoch only, the plain run's results"; fi
