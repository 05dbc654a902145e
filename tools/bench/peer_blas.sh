# peer_blas.sh - sourced (not run) by the bench scripts that time a peer on
# Debian's OpenBLAS (bench_gemm.sh, bench_probe.sh, bench_train.sh): one
# rule for which OpenBLAS kernels the peer gets, so all three compare with
# the same, best, peer.
#
# Why a rule at all: Debian's OpenBLAS 0.3.21 does not recognise every CPU a
# hypervisor reports and then falls back to its SSE3 "Prescott" kernels
# (3-4x slower than the AVX-512 ones ../shared/peers/RESULTS.md measured),
# and this workplace exports OPENBLAS_CORETYPE=Haswell (AVX2) with
# OPENBLAS_L2_SIZE=512 on some AVX-512 hosts for other programs' sake. An
# inherited value must not decide the peer's speed (it once handed the
# training peer its AVX2 kernels: DD 30-34 graphs/s against 46-52).
#
# The rule: PEER_CORETYPE when set; else SkylakeX on a CPU with AVX-512F
# (OpenBLAS's Cooperlake core, which it detects on some AVX-512 hosts,
# takes SkylakeX's kernel list and adds only bf16 kernels no peer here
# uses); else Haswell with AVX2; else OpenBLAS's own detection.
# OPENBLAS_L2_SIZE is always cleared.
#
# After `peer_blas_choose`: OPENBLAS_CORETYPE exported (or unset),
# OPENBLAS_L2_SIZE unset, PEER_BLAS_CORE (empty = own detection) and
# PEER_BLAS_NOTE (one sentence for the report) set. /proc/cpuinfo is read
# (PEER_BLAS_CPUINFO names another file, for the tests); where it is missing
# the rule falls back to OpenBLAS's detection.
# The widest vector ISA the CPU reports: avx512, avx2, other, or nothing
# when the cpuinfo file is missing.
peer_cpu_isa() {
    local cpu=${PEER_BLAS_CPUINFO:-/proc/cpuinfo}
    [ -r "$cpu" ] || return 0
    if grep -qw avx512f "$cpu"; then echo avx512
    elif grep -qw avx2 "$cpu"; then echo avx2
    else echo other
    fi
}

# One line naming the host for a report: the model name alone ("AMD EPYC")
# has covered hosts from Zen 3 (AVX2 only) to Zen 5 (AVX-512), so the
# family, model and widest ISA too.
peer_host_line() {
    local cpu=${PEER_BLAS_CPUINFO:-/proc/cpuinfo} name fam mdl isa
    isa=$(peer_cpu_isa)
    name=$(grep -m1 'model name' "$cpu" 2>/dev/null | cut -d: -f2 | sed 's/^ //')
    fam=$(grep -m1 'cpu family' "$cpu" 2>/dev/null | cut -d: -f2 | tr -d ' ')
    mdl=$(grep -m1 '^model[[:space:]]*:' "$cpu" 2>/dev/null | cut -d: -f2 | tr -d ' ')
    echo "${name:-unknown CPU} (family ${fam:-?} model ${mdl:-?}, ${isa:-?}), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
}

# The share of CPU time the hypervisor took from this virtual machine
# (/proc/stat's steal column) between peer_steal_mark and peer_steal_line.
# Both sides of a row run in the same minutes, so the ratios hold up better
# than the absolute rates; a few percent of steal already spreads the
# per-round ratios, so the tables say how much there was.
# "steal total": the all-CPU steal ticks and the ticks of user .. steal
peer_cpu_ticks() { awk '/^cpu /{ t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t }' /proc/stat 2>/dev/null; }
peer_steal_mark() { PEER_STEAL0=$(peer_cpu_ticks); }
peer_steal_line() {
    local now
    now=$(peer_cpu_ticks)
    awk -v a="${PEER_STEAL0:-}" -v b="$now" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        if (y[2] > x[2] && x[2] != "") printf "hypervisor steal during the run: %.1f %% of CPU time", 100 * (y[1] - x[1]) / (y[2] - x[2])
        else printf "hypervisor steal: not measured" }'
}

peer_blas_choose() {
    local why=""
    PEER_BLAS_CORE=${PEER_CORETYPE:-}
    [ -n "$PEER_BLAS_CORE" ] && why="set by PEER_CORETYPE"
    if [ -z "$PEER_BLAS_CORE" ]; then
        case $(peer_cpu_isa) in
        avx512) PEER_BLAS_CORE=SkylakeX why="the CPU has AVX-512" ;;
        avx2) PEER_BLAS_CORE=Haswell why="the CPU has AVX2" ;;
        esac
    fi
    unset OPENBLAS_L2_SIZE
    if [ -n "$PEER_BLAS_CORE" ]; then
        export OPENBLAS_CORETYPE=$PEER_BLAS_CORE
        PEER_BLAS_NOTE="The peer's OpenBLAS ran its $PEER_BLAS_CORE kernels ($why; OPENBLAS_CORETYPE=$PEER_BLAS_CORE, OPENBLAS_L2_SIZE unset, whatever the shell had)."
    else
        unset OPENBLAS_CORETYPE
        PEER_BLAS_NOTE="The peer's OpenBLAS chose its own kernels (no AVX2 found; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset)."
    fi
}
