# Command-line checks of `hpjepa bench probe` (sourced by tests/cli_test.sh).

"$HPJ" bench probe --help | grep -q "fit_ms=" && ok "bench probe --help" || bad "bench probe --help"
expect_fail "bench probe: unknown option" "unknown option '--frob'" "$HPJ" bench probe --frob 1
expect_fail "bench probe: bad model" "probe: --model: 'svm' is not logreg, ridge or all" "$HPJ" bench probe --model svm
expect_fail "bench probe: bad set" "probe: --set: 'nope' is not" "$HPJ" bench probe --set nope
expect_fail "bench probe: bad alpha" "probe: --alphas: 0 is not > 0" "$HPJ" bench probe --alphas 1,0
expect_fail "bench probe: bad alpha list" "probe: --alphas: 'x' is not a finite number" "$HPJ" bench probe --alphas 1,x
expect_fail "bench probe: bad reps" "probe: --reps: 0 is out of range" "$HPJ" bench probe --reps 0
expect_fail "bench probe: bad custom" "probe: --custom: expected N,DIM,C,SIGNAL,SEED" "$HPJ" bench probe --custom 10,4,1,0.1,1
expect_fail "bench probe: missing value" "probe: --threads: missing value" "$HPJ" bench probe --threads
expect_fail "bench probe: missing data" "cannot open .*/NOPE/custom.X.f32" \
    "$HPJ" bench probe --custom 40,8,2,0.5,1 --data "$TMP/NOPE"

# a small custom set: one line per (model, alpha), sane accuracies
out=$("$HPJ" bench probe --custom 400,16,3,0.6,7 --alphas 1,10 --reps 1 2>"$TMP/err"); rc=$?
n=$(echo "$out" | grep -c '^set=custom n=400 dim=16 classes=3 model=\(logreg\|ridge\) alpha=[0-9.]* threads=[0-9]* fit_ms=[0-9.]* median_ms=[0-9.]* iters=[0-9]* train_acc=[01]\.[0-9]\{4\} test_acc=[01]\.[0-9]\{4\}$')
acc=$(echo "$out" | awk '/model=logreg alpha=1 /{for(i=1;i<=NF;i++) if ($i ~ /^train_acc=/) print substr($i,11)}')
if [ $rc -eq 0 ] && [ "$n" -eq 4 ] && awk -v a="$acc" 'BEGIN{exit !(a > 0.6 && a <= 1)}'; then ok "bench probe: custom set ($n lines, train acc $acc)"
else bad "bench probe: custom set" "rc=$rc lines=$n acc=$acc: $(echo "$out" | head -2)"; fi

# --data: files of the wrong size, then right size but wrong content
mkdir -p "$TMP/pdata"
head -c 100 /dev/zero >"$TMP/pdata/custom.X.f32"
head -c 160 /dev/zero >"$TMP/pdata/custom.y.i32"
expect_fail "bench probe: data of the wrong size" "custom.X.f32: expected 1280 bytes, found 100" \
    "$HPJ" bench probe --custom 40,8,2,0.5,1 --data "$TMP/pdata"
head -c 1280 /dev/zero >"$TMP/pdata/custom.X.f32"
expect_fail "bench probe: data that differ" "custom: [0-9]+ values differ from the regenerated data" \
    "$HPJ" bench probe --custom 40,8,2,0.5,1 --data "$TMP/pdata"
