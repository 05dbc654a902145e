#!/usr/bin/env bash
# LayerNorm / BatchNorm with and without their optional operands (see
# tools/bench_optional.c): a ratio well above 1 means the NULL forms fell
# back to masked loads of the NULL page (6-48x slower on an AMD EPYC,
# family 26, before the fix). No peer: both columns are hpjepa.h.
set -eu
cd "$(dirname "$0")/.."
make -s build/bench_optional >&2
echo "## Normalisation with optional operands NULL ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo
build/bench_optional
