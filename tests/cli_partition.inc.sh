# Command-line tests of `hpjepa partition` (sourced by tests/cli_test.sh:
# uses ok, bad, expect_fail, $TMP).

# grid_file W H: a W x H 4-neighbour grid in METIS format on stdout
grid_file() {
    awk -v w="$1" -v h="$2" 'BEGIN {
        n = w * h; m = (w - 1) * h + (h - 1) * w; print n, m
        for (y = 0; y < h; y++) for (x = 0; x < w; x++) {
            s = ""
            if (y > 0) s = s " " ((y - 1) * w + x + 1)
            if (x > 0) s = s " " (y * w + x)
            if (x + 1 < w) s = s " " (y * w + x + 2)
            if (y + 1 < h) s = s " " ((y + 1) * w + x + 1)
            print substr(s, 2)
        }
    }'
}

grid_file 10 10 >"$TMP/grid10.graph"
P_OUT="$TMP/grid10.part"

"$HPJ" partition --help | grep -q "edgecut=<int> imbalance=<float> parts=<non-empty parts> seconds=<float>" \
    && ok "partition --help" || bad "partition --help"

out=$("$HPJ" partition "$TMP/grid10.graph" 2 --out "$P_OUT" 2>"$TMP/err")
if echo "$out" | grep -Eq '^edgecut=10 imbalance=1\.0000 parts=2 seconds=[0-9]+\.[0-9]+$'; then ok "partition grid 10x10 K=2 ($out)"
else bad "partition grid 10x10 K=2" "got '$out' $(cat "$TMP/err")"; fi
if [ -f "$P_OUT" ] && [ "$(wc -l <"$P_OUT")" -eq 100 ] && [ "$(sort -u "$P_OUT" | tr '\n' ' ')" = "0 1 " ] \
    && [ "$(grep -c '^0$' "$P_OUT")" -eq 50 ]; then ok "partition --out: 100 lines, two parts of 50"
else bad "partition --out" "$(head -c 200 "$P_OUT" 2>/dev/null)"; fi

out=$("$HPJ" partition "$TMP/grid10.graph" 2 --method rb --seed 7)
echo "$out" | grep -Eq '^edgecut=10 imbalance=1\.0000 parts=2 ' && ok "partition --method rb --seed 7" \
    || bad "partition --method rb" "got '$out'"

out=$("$HPJ" partition "$TMP/grid10.graph" 16)
echo "$out" | grep -Eq '^edgecut=[0-9]+ imbalance=1\.(0[0-9]|1[0-2])[0-9]* parts=16 ' && ok "partition K=16 ($out)" \
    || bad "partition K=16" "got '$out'"

a=$("$HPJ" partition "$TMP/grid10.graph" 8 --seed 3 --out "$TMP/a.part" | cut -d' ' -f1-3)
b=$("$HPJ" partition "$TMP/grid10.graph" 8 --seed 3 --out "$TMP/b.part" | cut -d' ' -f1-3)
[ "$a" = "$b" ] && cmp -s "$TMP/a.part" "$TMP/b.part" && ok "partition: same seed, same parts" \
    || bad "partition: same seed" "$a / $b"

# K >= n: every vertex its own part; n = 1
printf '3 2\n2\n1 3\n2\n' >"$TMP/path3.graph"
out=$("$HPJ" partition "$TMP/path3.graph" 5 --out "$TMP/p3.part")
[ "$out" != "${out#edgecut=2 imbalance=1.6667 parts=3 }" ] && [ "$(tr '\n' ' ' <"$TMP/p3.part")" = "0 1 2 " ] \
    && ok "partition K > n: one vertex per part" || bad "partition K > n" "got '$out'"
printf '1 0\n\n' >"$TMP/one.graph"
"$HPJ" partition "$TMP/one.graph" 4 | grep -q '^edgecut=0 imbalance=4.0000 parts=1 ' && ok "partition n = 1" \
    || bad "partition n = 1"

# weights (fmt 011): the light edge of a heavy-light-heavy path is cut
printf '%% weighted path\n4 3 011\n1 2 5\n1 1 5 3 1\n1 2 1 4 5\n1 3 5\n' >"$TMP/wpath.graph"
"$HPJ" partition "$TMP/wpath.graph" 2 | grep -q '^edgecut=1 imbalance=1.0000 parts=2 ' && ok "partition weighted graph" \
    || bad "partition weighted graph" "$("$HPJ" partition "$TMP/wpath.graph" 2 2>&1)"

# --many: graphs concatenated, each with its own header
{ grid_file 4 4; cat "$TMP/path3.graph"; grid_file 6 2; } >"$TMP/many.graphs"
out=$("$HPJ" partition "$TMP/many.graphs" 2 --many --out "$TMP/many.part")
echo "$out" | grep -Eq '^graphs=3 edgecut=[0-9.]+ imbalance=[0-9.]+ parts=2\.0000 seconds=' \
    && [ "$(wc -l <"$TMP/many.part")" -eq 31 ] && ok "partition --many ($out)" || bad "partition --many" "got '$out'"

# bad K: one line, non-zero exit, no output file
for k in 0 -3 abc 2x ""; do
    rm -f "$TMP/badk.part"
    expect_fail "partition: K='$k' rejected" "K: " "$HPJ" partition "$TMP/grid10.graph" "$k" --out "$TMP/badk.part"
    [ ! -e "$TMP/badk.part" ] && ok "partition: K='$k' leaves no output file" || bad "partition: K='$k' wrote a file"
done
expect_fail "partition: missing K" "expected GRAPH_FILE and K" "$HPJ" partition "$TMP/grid10.graph"
expect_fail "partition: bad method" "method: 'metis' is not kway or rb" "$HPJ" partition "$TMP/grid10.graph" 2 --method metis
expect_fail "partition: bad seed" "seed: '-1'|seed: -1" "$HPJ" partition "$TMP/grid10.graph" 2 --seed -1
expect_fail "partition: bad imbalance" "imbalance: 0.5 is out of range" "$HPJ" partition "$TMP/grid10.graph" 2 --imbalance 0.5
expect_fail "partition: bad ufactor" "ufactor: .nan. is not a finite number" "$HPJ" partition "$TMP/grid10.graph" 2 --ufactor nan
out=$("$HPJ" partition "$TMP/grid10.graph" 4 --ufactor 1.2 --ncuts 3)
echo "$out" | grep -Eq "^edgecut=[0-9]+ imbalance=1\.(0|1)[0-9]* parts=4 " && ok "partition --ufactor 1.2 --ncuts 3 ($out)" || bad "partition --ufactor" "got '$out'"
expect_fail "partition: unknown option" "unknown option '--frob'" "$HPJ" partition "$TMP/grid10.graph" 2 --frob 1
expect_fail "partition: missing file" "cannot open" "$HPJ" partition "$TMP/nope.graph" 2

# malformed METIS files: one line, non-zero exit, no output file
printf 'x y\n' >"$TMP/m1.graph"
printf '3 5\n2\n1 3\n2\n' >"$TMP/m2.graph"
printf '3 2\n2\n1 9\n2\n' >"$TMP/m3.graph"
printf '4 2\n2\n3\n4\n1\n' >"$TMP/m4.graph"
printf '3 1\n2\n1\n' >"$TMP/m5.graph"
printf '2 1 011\n1 2\n1 1 1\n' >"$TMP/m6.graph"
i=0
for pat in ":1: expected an integer" "m=5" "neighbour id" "no reverse" "ends after 2 of 3" "edge weight"; do
    i=$((i + 1))
    rm -f "$TMP/m.part"
    expect_fail "partition: malformed file m$i ($pat)" "$pat" "$HPJ" partition "$TMP/m$i.graph" 2 --out "$TMP/m.part"
    [ ! -e "$TMP/m.part" ] && ok "partition: malformed m$i leaves no output file" || bad "partition: malformed m$i wrote a file"
done
expect_fail "partition --many: malformed second graph" "graph 2" "$HPJ" partition <(cat "$TMP/path3.graph" "$TMP/m3.graph") 2 --many
