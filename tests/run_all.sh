#!/usr/bin/env bash
# Runs every stage of `make test` and ends with one line "N passed, N failed"
# summed over the stages. Usage: tests/run_all.sh BUILD_DIR
set -u
B=${1:-build}
total_pass=0
total_fail=0
stage_fail=0
log=$(mktemp)
run_stage() { # name, command...
    local name=$1; shift
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$line" ]; then
        local p f
        p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
        f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
    fi
    if [ "$rc" -ne 0 ]; then
        echo "=== $name FAILED (exit $rc)"
        stage_fail=$((stage_fail + 1))
        [ -z "$line" ] && total_fail=$((total_fail + 1))
    fi
}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export HPJ_EXAMPLES=${HPJ_EXAMPLES:-$B/examples} # the command-line tests run examples/tour
export HPJ_BUILD=$B # where the command-line tests find the tcc and portable builds
run_stage "unit tests (-O2, OpenMP)" "./$B/tests"
run_stage "unit tests (no OpenMP)" "./$B/tests-noomp"
run_stage "unit tests (reference build: -DHPJ_REFERENCE)" "./$B/tests-ref"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_stage "unit tests (ASan + UBSan)" "./$B/tests-asan"
if [ -x "$B/tests-clang" ]; then
    run_stage "unit tests (clang: no OpenMP, this CPU's SIMD paths, AVX-512 left out)" "./$B/tests-clang"
else
    echo "=== unit tests (clang): skipped, clang is not installed"
fi
if [ -x "$B/tests-tcc" ]; then
    run_stage "unit tests (tcc: no OpenMP, portable kernels)" "./$B/tests-tcc"
else
    echo "=== unit tests (tcc): skipped, tcc is not installed (apt-get install tcc)"
fi
# the program as make test built it: warnings are errors there
HPJEPA_BIN=$B/hpjepa run_stage "command-line tests" bash tests/cli_test.sh
# the same checks with the program built under ASan + UBSan: every error path
# of the command line (bad files, fold logs, .npy headers, lanes) without
# a memory error, a leak or undefined behaviour
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 HPJEPA_BIN=$B/hpjepa-asan \
    run_stage "command-line tests (ASan + UBSan build)" bash tests/cli_test.sh
# hpjepa-mpi (make mpi): eval over 2 MPI ranks gives the one-process results
# and report; a rank that fails or is killed ends the job
if [ -x "$B/hpjepa-mpi" ]; then
    run_stage "command-line tests of hpjepa-mpi (2 MPI ranks)" bash tests/cli_mpi.sh "$B/hpjepa" "$B/hpjepa-mpi"
else
    echo "=== hpjepa-mpi tests: skipped, mpicc is not installed (apt-get install openmpi-bin libopenmpi-dev)"
fi
# every libFuzzer harness for a few seconds on the committed corpus
# (tests/fuzz-corpus/) and fresh seeds: an input that once broke a contract
# fails here; one pass or fail per harness
if [ -x "$B/fuzz/fuzz_config" ]; then
    FUZZ_B=$B HPJEPA_BIN=$B/hpjepa run_stage "fuzz harnesses (seconds each; make fuzz runs minutes)" bash tests/fuzz.sh --regression
else
    echo "=== fuzz harnesses: SKIPPED, not counted: clang cannot link a libFuzzer binary (install clang and libclang-rt-dev)"
fi
rm -f "$log"
echo "=== C++, -std=c99 -pedantic and HPJ_NO_STDIO builds of the header compiled cleanly"
[ -x "$B/tests-tcc" ] && echo "=== tcc built the unit suite, the program and the examples with -Wall -Werror"
[ -x "$B/hpjepa-clang" ] && echo "=== clang built the program with -Werror"
echo "=== stages failed: $stage_fail"
echo "$total_pass passed, $total_fail failed"
[ "$stage_fail" -eq 0 ] && [ "$total_fail" -eq 0 ]
