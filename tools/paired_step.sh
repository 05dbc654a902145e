#!/usr/bin/env bash
# Builds OUTDIR/hpjepa from the scratch header OUTDIR/hpjepa.h written by
# tools/paired_step.py, tools/step_phases.py or tools/gemm_shapes.py (the
# repository's program sources, that header in place of ./hpjepa.h). Run
# from the repository root:
#   bash tools/paired_step.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash tools/paired_step.sh OUTDIR}
[ -f "$out/hpjepa.h" ] || { echo "paired_step.sh: $out/hpjepa.h missing (run tools/paired_step.py, tools/step_phases.py or tools/gemm_shapes.py $out first)" >&2; exit 1; }
rm -rf "$out/tools"
mkdir -p "$out/tools"
cp tools/*.c tools/*.h "$out/tools/"
# the sources include "../hpjepa.h": OUTDIR/tools/../hpjepa.h is the scratch copy
${CC:-cc} -std=c99 -O2 -g -march=native -fopenmp -D_POSIX_C_SOURCE=200809L -o "$out/hpjepa" \
    "$out"/tools/cmd_*.c "$out/tools/hpjepa.c" "$out/tools/impl.c" -lm
echo "built $out/hpjepa"
