# Command-line tests of the nn module (sourced by tests/cli_test.sh).

# -- bench gemm: result lines --
out=$("$HPJ" bench gemm 37 29 41 --secs 0.02 --threads 2 2>/dev/null)
if echo "$out" | grep -qE '^gflops=[0-9]+\.[0-9]$' && [ "$(echo "$out" | wc -l)" -eq 1 ]; then ok "bench gemm: gflops line ($out)"
else bad "bench gemm: gflops line" "got '$out'"; fi
out=$("$HPJ" bench gemm 16 33 7 --layout all --secs 0.02 2>/dev/null)
if [ "$(echo "$out" | grep -cE '^layout=(nn|nt|tn) gflops=[0-9]+\.[0-9]$')" -eq 3 ] && [ "$(echo "$out" | wc -l)" -eq 3 ]; then
    ok "bench gemm --layout all: three lines"
else bad "bench gemm --layout all" "got '$out'"; fi
out=$("$HPJ" bench gemm 8 8 8 --layout tt --isa portable --threads 1 --secs 0.02 2>&1 >/dev/null)
if echo "$out" | grep -q "kernel=portable threads=1"; then ok "bench gemm --isa portable --threads 1"
else bad "bench gemm --isa portable" "stderr '$out'"; fi
"$HPJ" bench gemm --help | grep -q "gflops=" && ok "bench gemm --help" || bad "bench gemm --help"

# -- bench gemm: usage errors, one line each --
expect_fail "bench gemm: missing K" "expected M N K, got 2 numbers" "$HPJ" bench gemm 5 5
expect_fail "bench gemm: zero size" "M: 0 is out of range" "$HPJ" bench gemm 0 5 5
expect_fail "bench gemm: not a number" "K: 'x' is not an integer" "$HPJ" bench gemm 5 5 x
expect_fail "bench gemm: bad layout" "layout: 'xx' is not" "$HPJ" bench gemm 5 5 5 --layout xx
expect_fail "bench gemm: bad isa" "isa: 'sse9' is not" "$HPJ" bench gemm 5 5 5 --isa sse9
expect_fail "bench gemm: bad threads" "threads: 0 is out of range" "$HPJ" bench gemm 5 5 5 --threads 0
expect_fail "bench gemm: bad secs" "secs: -1 is outside" "$HPJ" bench gemm 5 5 5 --secs -1
expect_fail "bench gemm: unknown option" "unknown option '--fast'" "$HPJ" bench gemm 5 5 5 --fast
expect_fail "bench gemm: too large" "needs .* GB" "$HPJ" bench gemm 1048576 1048576 1048576

