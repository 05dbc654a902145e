# Sourced by tests/cli_test.sh: the bench scripts' shared rule for the
# peer's OpenBLAS kernels (tools/bench/peer_blas.sh), on made-up CPU flag lists.
# An inherited OPENBLAS_CORETYPE=Haswell once gave the training peer its
# AVX2 kernels on an AVX-512 CPU; these pin the rule down.

# peer_blas_case NAME FLAGS PEER_CORETYPE EXPECTED_CORETYPE ("-" = unset)
peer_blas_case() {
    local name=$1 flags=$2 over=$3 want=$4 got
    if [ "$flags" = "-" ]; then rm -f "$TMP/cpuinfo"; else printf 'flags\t\t: fpu sse2 %s\n' "$flags" >"$TMP/cpuinfo"; fi
    got=$(OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 PEER_CORETYPE=$over PEER_BLAS_CPUINFO="$TMP/cpuinfo" bash -c '
        . tools/bench/peer_blas.sh; peer_blas_choose
        echo "${OPENBLAS_CORETYPE:--} ${OPENBLAS_L2_SIZE:--} ${PEER_BLAS_CORE:--}"' 2>&1)
    if [ "$got" = "$want - ${want}" ]; then ok "peer_blas: $name ($want)"; else bad "peer_blas: $name" "got '$got', expected '$want - $want'"; fi
}
peer_blas_case "AVX-512 CPU, inherited Haswell replaced" "avx2 avx512f avx512bw" "" SkylakeX
peer_blas_case "AVX2 CPU" "avx avx2 fma" "" Haswell
peer_blas_case "neither: OpenBLAS's own detection" "avx" "" -
peer_blas_case "no cpuinfo: OpenBLAS's own detection" "-" "" -
peer_blas_case "PEER_CORETYPE overrides" "avx2 avx512f" "Zen" Zen
# avx512f must match as a word, not as a prefix of another flag
peer_blas_case "avx512fp16 alone is not avx512f" "avx2 avx512fp16" "" Haswell
