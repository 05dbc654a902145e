#!/usr/bin/env bash
# `make bench`: runs every tools/bench/bench_*.sh (each compares one part of
# hpjepa.h with its peer from ../shared/peers in the same run) and collects
# their Markdown output in build/bench/RESULTS.md.
set -u
cd "$(dirname "$0")/../.."
mkdir -p build/bench
out=build/bench/RESULTS.md
{
    echo "# make bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo
} > "$out"
status=0
{ bash tools/bench/reference_size.sh && echo; } | tee -a "$out" || status=1
for b in tools/bench/bench_*.sh; do
    [ "$b" = tools/bench/bench.sh ] && continue
    echo "=== $b" >&2
    if ! bash "$b" | tee -a "$out"; then
        echo "=== $b FAILED" >&2
        status=1
    fi
    echo >> "$out"
done
echo "=== results collected in $out" >&2
exit $status
