#!/usr/bin/env bash
# Command-line tests of ./hpjepa: result lines, error messages, exit codes.
# Prints "N passed, N failed". Run from the repository root.
set -u
# HPJEPA_BIN: the program under test (default ./hpjepa; make test runs
# these checks with BUILD/hpjepa, built with warnings as errors, and with an
# ASan + UBSan build of it)
HPJ=${HPJEPA_BIN:-./hpjepa}
PASS=0; FAIL=0
DATA=${HPJ_DATA:-../shared/data}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ok()   { PASS=$((PASS+1)); echo "[       OK ] $1"; }
bad()  { FAIL=$((FAIL+1)); echo "[  FAILED  ] $1"; [ $# -gt 1 ] && echo "    $2"; }

# expect_fail NAME PATTERN CMD...: non-zero exit, one stderr line matching PATTERN
expect_fail() {
    local name=$1 pat=$2; shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
    local nl; nl=$(wc -l <"$TMP/err")
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$nl" -eq 1 ] && grep -qE "$pat" "$TMP/err"; then ok "$name"
    else bad "$name" "exit=$rc stderr: $(head -c 300 "$TMP/err")"; fi
}

# -- stats on every shared dataset, against verify.py's numbers --
if [ -d "$DATA" ] && command -v python3 >/dev/null; then
    python3 "$DATA/verify.py" "$DATA" >"$TMP/verify.txt" 2>&1
    for d in MUTAG PROTEINS DD REDDIT-BINARY IMDB-BINARY IMDB-MULTI ZINC-12K; do
        [ -d "$DATA/$d" ] || continue
        exp=$(awk -v d="$d" '$1==d && NF>=7 { c=($3=="regr")?0:$3; printf "graphs=%s classes=%s avg_nodes=%s avg_edges=%s", $2, c, $4, $6 }' "$TMP/verify.txt")
        got=$("$HPJ" stats "$DATA/$d" 2>/dev/null)
        if [ -n "$exp" ] && [ "$got" = "$exp" ]; then ok "stats $d ($got)"; else bad "stats $d" "got '$got' expected '$exp'"; fi
    done
else
    echo "  (no $DATA or python3: dataset checks skipped)"
fi

# -- the version: the header's title line names the one the program reports
# (HPJEPA_VERSION_*), so that a release bump cannot leave it behind --
ver=$("$HPJ" --version 2>/dev/null | awk '{ print $2 }')
title=$(head -n 1 hpjepa.h | sed -n 's/^.* - v\([0-9][0-9.]*\) - .*$/\1/p')
if [ -n "$ver" ] && [ "$title" = "$ver" ]; then ok "version $ver in the header's title line"
else bad "version in the header's title line" "hpjepa --version '$ver', hpjepa.h line 1 'v$title'"; fi

# -- usage and bad input --
expect_fail "stats: no argument" "usage" "$HPJ" stats
expect_fail "stats: missing folder" "cannot open" "$HPJ" stats "$TMP/NOPE"
expect_fail "unknown command" "unknown command" "$HPJ" frobnicate
# quoted input with control characters stays one line (\xNN)
expect_fail "stats: a folder name with a newline" 'NO\\x0aPE' "$HPJ" stats "$TMP/NO"$'\n'"PE"
expect_fail "--set value with a carriage return" "bad value '8\\\\x0d' for key 'dim'" \
    "$HPJ" pretrain "$TMP/NOPE" --config /dev/null --set dim=8$'\r' --out "$TMP/never.ckpt"
"$HPJ" --help >/dev/null 2>&1 && ok "--help exits 0" || bad "--help exits 0"
"$HPJ" stats --help | grep -q "graphs=" && ok "stats --help" || bad "stats --help"

# a malformed dataset: edge joining two graphs
mkdir -p "$TMP/BAD"
printf '1\n1\n2\n2\n' >"$TMP/BAD/BAD_graph_indicator.txt"
printf '1\n2\n' >"$TMP/BAD/BAD_graph_labels.txt"
printf '1, 2\n2, 3\n' >"$TMP/BAD/BAD_A.txt"
expect_fail "stats: edge joining two graphs" "BAD_A.txt:2: edge joins node 2 \(graph 1\) and node 3 \(graph 2\)" "$HPJ" stats "$TMP/BAD"

# extra checks contributed by the module authors
for f in tests/cli_*.inc.sh; do [ -f "$f" ] && . "$f"; done

echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
