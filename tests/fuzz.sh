#!/usr/bin/env bash
# The libFuzzer harnesses tests/fuzz_{tu,metis,config,ckpt,partition,tokens,
# model,cli}.c: the readers of outside input (TU datasets, METIS graphs,
# config files, checkpoints, and the program's own .npy, graphs.csv,
# loss-log and report readers), the partitioner, the tokenizer and the whole
# model (init, one epoch, embeddings). The Makefile builds them with clang
# -fsanitize=fuzzer,address,undefined into BUILD/fuzz/. Each harness runs on
# a corpus folder of its own, the committed regression corpus
# tests/fuzz-corpus/<harness>/ (inputs that once broke a contract, and edge
# cases) and seeds written here from small valid files (synthetic ones,
# slices of ../shared/data when present, the configs in data/configs/,
# tiny checkpoints written by hpjepa pretrain).
# Usage:
#   tests/fuzz.sh                make fuzz: builds (installing clang and its
#                                libFuzzer runtime if missing), runs each
#                                harness FUZZ_SECONDS on a corpus that grows
#                                from run to run, prints a table of executions
#                                and crashes; exit 1 if any crashed (the
#                                reproducer is in BUILD/fuzz/artifacts/)
#   tests/fuzz.sh --regression   a stage of make test: the harnesses that make
#                                test-builds made, a few seconds each from a
#                                fresh corpus, as many at once as cores; a line
#                                per harness and "N passed, N failed"
# Environment:
#   FUZZ_SECONDS   seconds per harness (default 60; --regression: 3)
#   FUZZ_RUNS      stop each harness after this many inputs instead
#   FUZZ_TARGETS   which harnesses (default "tu metis config ckpt partition tokens model cli")
#   FUZZ_MAX_LEN   largest input in bytes (default 16384)
#   FUZZ_INCLUDE   folder holding the hpjepa.h to fuzz (default: this repository)
#   FUZZ_B         the make build folder BUILD (default build)
#   FUZZ_JOBS      harnesses run at once with --regression (default: cores)
#   HPJEPA_BIN     the program that writes the seed checkpoints (default
#                  ./hpjepa, built first; --regression: BUILD/hpjepa)
#   CLANG          the compiler (default: clang, else clang-14)
# Run from the repository root or anywhere (it changes to the root).
set -u
cd "$(dirname "$0")/.."
MODE=long
[ "${1:-}" = "--regression" ] && MODE=regression
if [ $MODE = regression ]; then SECONDS_EACH=${FUZZ_SECONDS:-3}; else SECONDS_EACH=${FUZZ_SECONDS:-60}; fi
TARGETS=${FUZZ_TARGETS:-"tu metis config ckpt partition tokens model cli"}
MAX_LEN=${FUZZ_MAX_LEN:-16384}
INC=${FUZZ_INCLUDE:-.}
DATA=${HPJ_DATA:-../shared/data}
FB=${FUZZ_B:-build}
B=$FB/fuzz
mkdir -p "$B"

if [ $MODE = regression ]; then
    HPJ=${HPJEPA_BIN:-$FB/hpjepa}
    for t in $TARGETS; do
        [ -x "$B/fuzz_$t" ] || { echo "fuzz: $B/fuzz_$t missing (make B=$FB test-builds builds it)" >&2; exit 1; }
    done
else
    CC_FUZZ=${CLANG:-}
    if [ -z "$CC_FUZZ" ]; then
        if command -v clang >/dev/null; then CC_FUZZ=clang
        elif command -v clang-14 >/dev/null; then CC_FUZZ=clang-14
        fi
    fi
    probe_fuzzer() { # can this clang link a libFuzzer binary?
        printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
            >"$B/probe.c"
        "$CC_FUZZ" -fsanitize=fuzzer -o "$B/probe" "$B/probe.c" >/dev/null 2>&1
    }
    if [ -z "$CC_FUZZ" ] || ! probe_fuzzer; then
        echo "fuzz: clang with libFuzzer missing; installing clang and libclang-rt-14-dev from Debian" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
        CC_FUZZ=${CLANG:-clang}
        command -v "$CC_FUZZ" >/dev/null || CC_FUZZ=clang-14
        if ! probe_fuzzer; then echo "fuzz: cannot build a libFuzzer binary with $CC_FUZZ" >&2; exit 1; fi
    fi
    # the library compiled once, each harness linked to it (see the Makefile);
    # another header: compiled afresh (make compares times, not folders)
    [ -n "${FUZZ_INCLUDE:-}" ] && rm -f "$B/impl.o"
    make --no-print-directory B="$FB" FUZZ_CC="$CC_FUZZ" FUZZ_INC="$INC" fuzz-builds || exit 1
    if [ -n "${HPJEPA_BIN:-}" ]; then HPJ=$HPJEPA_BIN
    else make -s hpjepa >&2 || exit 1; HPJ=./hpjepa
    fi
fi

# ---- seeds ----------------------------------------------------------------
S=$B/seeds
rm -rf "$S"
mkdir -p "$S/tu" "$S/metis" "$S/config" "$S/ckpt" "$S/partition" "$S/tokens" "$S/model" "$S/cli"

# tu_seed FILE MASK TEXT...: the harness layout (2 mask bytes, texts joined by 0x1F)
tu_seed() {
    local out=$1 mask=$2 first=1; shift 2
    printf "\\x$(printf %02x $((mask & 255)))\\x$(printf %02x $((mask >> 8)))" >"$out"
    for txt in "$@"; do
        [ $first -eq 1 ] || printf '\x1f' >>"$out"
        first=0
        printf '%s' "$txt" >>"$out"
    done
}
nl=$'\n'
# every file kind (bits 0..8)
tu_seed "$S/tu/all_kinds" 511 \
    "1, 2${nl}2, 1${nl}2, 3${nl}3, 2${nl}4, 5${nl}5, 4${nl}" "1${nl}1${nl}1${nl}2${nl}2${nl}" "1${nl}-1${nl}" \
    "0.25${nl}-1.5${nl}" "0${nl}1${nl}2${nl}0${nl}1${nl}" "0.5, 1${nl}1.5, 2${nl}2.5, 3${nl}3.5, 4${nl}4.5, 5${nl}" \
    "1${nl}1${nl}2${nl}2${nl}3${nl}3${nl}" "1, 0${nl}1, 0${nl}2, 0${nl}2, 0${nl}3, 0${nl}3, 0${nl}" "train${nl}test${nl}"
# the required files only (A, graph_indicator, graph_labels)
tu_seed "$S/tu/minimal" 7 "1, 2${nl}2, 1${nl}" "1${nl}1${nl}2${nl}" "0${nl}1${nl}"
# awkward but valid: CRLF, blanks, duplicates, self-loops, an edgeless graph
tu_seed "$S/tu/awkward" 71 "1,2"$'\r\n'"1,2"$'\r\n'"2 2"$'\r\n\r\n'"3, 1  "$'\r\n' \
    "1"$'\r\n'"1"$'\r\n'"1"$'\r\n'"2"$'\r\n' "5"$'\r\n'"-3"$'\r\n' "1${nl}2${nl}3${nl}4${nl}"
# regression with a split (A, graph_indicator, graph_attributes, node_labels, edge_labels, split)
tu_seed "$S/tu/regression" 347 "1, 2${nl}2, 1${nl}3, 4${nl}4, 3${nl}" "1${nl}1${nl}2${nl}2${nl}" \
    "-1.25${nl}3.5e-1${nl}" "0${nl}27${nl}3${nl}3${nl}" "1${nl}1${nl}2${nl}2${nl}" "train${nl}val${nl}"
# slices of the shared datasets: the first K graphs of each file kind present
tu_slice() { # NAME K MASK-BITS...
    local name=$1 k=$2 dir=$DATA/$1 mask=0 f last texts=()
    [ -d "$dir" ] || return 0
    last=$(awk -v k="$k" '$1 + 0 <= k { n = NR } END { print n + 0 }' "$dir/${name}_graph_indicator.txt")
    local kinds=(A graph_indicator graph_labels graph_attributes node_labels node_attributes edge_labels edge_attributes split)
    local keep; keep=$(awk -F'[ ,\t]+' -v last="$last" '{ if ($1 + 0 <= last && $2 + 0 <= last) print NR }' "$dir/${name}_A.txt" | tr '\n' ' ')
    for f in 0 1 2 3 4 5 6 7 8; do
        local file=$dir/${name}_${kinds[$f]}.txt
        [ -f "$file" ] || continue
        mask=$((mask | (1 << f)))
        case ${kinds[$f]} in
            A|edge_labels|edge_attributes)
                texts+=("$(awk -v keep=" $keep" 'BEGIN { n = split(keep, a, " "); for (i = 1; i <= n; ++i) w[a[i]] = 1 } (NR in w)' "$file")$nl") ;;
            graph_indicator|node_labels|node_attributes) texts+=("$(head -n "$last" "$file")$nl") ;;
            *) texts+=("$(head -n "$k" "$file")$nl") ;;
        esac
    done
    tu_seed "$S/tu/slice_$name" "$mask" "${texts[@]}"
}
tu_slice MUTAG 3
tu_slice PROTEINS 2
tu_slice ZINC-12K 2
tu_slice IMDB-BINARY 1

# METIS: every header form, comments, CRLF, self-loops, unsorted lists
printf '4 3\n2 3\n1 3\n1 2\n\n' >"$S/metis/plain"
printf '4 3 1\n2 5 3 6\n1 5 3 7\n1 6 2 7\n\n' >"$S/metis/ew"
printf '4 3 10\n7 2 3\n8 1 3\n9 1 2\n4\n' >"$S/metis/vw"
printf '4 3 011 1\n7 2 5 3 6\n8 1 5 3 7\n9 1 6 2 7\n4\n' >"$S/metis/vw_ew_ncon"
printf '4 3 111\n1 7 2 5 3 6\n2 8 1 5 3 7\n3 9 1 6 2 7\n4 4\n' >"$S/metis/sizes"
printf '%% comment\n\n  5 3  \r\n2 3 \t\r\n%% mid\r\n1 3\r\n\t%% indented\n2   1\n\r\n\n%% end\n' >"$S/metis/comments_crlf"
printf '4 4\n3 1 2\n3 1 4\n2 1\n2\n' >"$S/metis/unsorted_loop"
awk 'BEGIN { n = 6; print n * n, 2 * n * (n - 1);
  for (r = 0; r < n; ++r) for (c = 0; c < n; ++c) { v = r * n + c + 1; s = "";
    if (r > 0) s = s " " v - n; if (c > 0) s = s " " v - 1; if (c < n - 1) s = s " " v + 1; if (r < n - 1) s = s " " v + n;
    print substr(s, 2) } }' >"$S/metis/grid6"

# configs: every shipped one, and one line per key in its formatted form
for f in data/configs/*.cfg data/configs/graph-jepa/*.cfg data/configs/bench/*.cfg; do
    cp "$f" "$S/config/$(echo "$f" | tr / _)"
done
printf 'mode = graph-jepa\r\nresolutions = 32\ntargets = 4 # comment\n\n\t dim\t=  8\nheads = 2\n' >"$S/config/crlf_comments"

# checkpoints: tiny models of the demo dataset, with and without the
# optimizer state, untrained and after one epoch (a few KB each)
tiny="--set dim=4 --set heads=1 --set blocks=1 --set ffn=4 --set gnn_layers=1 --set rw_dim=2 --set pred_layers=1"
tiny="$tiny --set resolutions=2,4 --set targets=1 --set batch_size=64 --quiet --threads 1"
"$HPJ" pretrain data/DEMO --config data/configs/DEMO.cfg $tiny --set epochs=0 --out "$S/ckpt/untrained" >/dev/null &&
    "$HPJ" pretrain data/DEMO --config data/configs/DEMO.cfg $tiny --set epochs=1 --save-optimizer \
        --out "$S/ckpt/trained_opt" >/dev/null &&
    "$HPJ" pretrain data/DEMO --config data/configs/graph-jepa/MUTAG.cfg $tiny --set resolutions=8 --set epochs=0 \
        --set gnn_out_linear=1 --out "$S/ckpt/gj" >/dev/null || { echo "fuzz: cannot write seed checkpoints" >&2; exit 1; }

# partitioner: a 6 x 6 grid into 4 (kway) and into 5 (rb, two cuts), a
# 40-vertex ring with vertex and edge weights into 3, a star into 7
awk 'BEGIN { printf "\\x03\\xa0\\x03\\x23\\x01"; for (r = 0; r < 6; ++r) for (c = 0; c < 6; ++c) { v = r * 6 + c;
  if (c < 5) printf "\\x%02x\\x%02x", v, v + 1; if (r < 5) printf "\\x%02x\\x%02x", v, v + 6 } }' | xargs -0 printf >"$S/partition/grid_kway"
awk 'BEGIN { printf "\\x04\\xa3\\x10\\x23\\x07"; for (r = 0; r < 6; ++r) for (c = 0; c < 6; ++c) { v = r * 6 + c;
  if (c < 5) printf "\\x%02x\\x%02x", v, v + 1; if (r < 5) printf "\\x%02x\\x%02x", v, v + 6 } }' | xargs -0 printf >"$S/partition/grid_rb"
awk 'BEGIN { printf "\\x02\\xac\\x02\\x27\\x03"; for (v = 0; v < 40; ++v) printf "\\x%02x", 1 + v % 5;
  for (v = 0; v < 40; ++v) printf "\\x%02x\\x%02x\\x%02x", v, (v + 1) % 40, v % 9 }' | xargs -0 printf >"$S/partition/ring_weighted"
awk 'BEGIN { printf "\\x06\\x50\\x00\\x13\\x09"; for (v = 1; v < 20; ++v) printf "\\x00\\x%02x", v }' | xargs -0 printf >"$S/partition/star"

# tokenizer: HP banks 2,4,8 and 2..16 with edge drop, a graph-jepa-like bank
# (always active, K 32), on paths, a star, a triangle with a pendant
printf '\x03\x01\x03\x07\x0c\x03\x05\x02\x09\x03\x00\x01\x01\x02\x02\x03\x03\x04\x04\x05\x05\x06\x06\x07\x07\x08\x04\x03\x00\x01\x01\x02\x02\x00' >"$S/tokens/hp_paths"
printf '\x04\x01\x03\x07\x0f\x37\x02\x04\x01\x13\x12\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00\x07\x00\x08\x00\x09\x00\x0a\x00\x0b\x00\x0c\x00\x0d\x00\x0e\x00\x0f\x00\x10\x00\x11\x00\x12' >"$S/tokens/star_rb_even"
printf '\x00\x1f\x11\x07\x05\x00\x0b\x0c\x00\x01\x01\x02\x02\x03\x03\x04\x04\x05\x05\x06\x06\x07\x07\x08\x08\x09\x09\x0a\x0a\x00\x00\x05' >"$S/tokens/gj_ring"

# model: an HP bank 2,4 on paths and a triangle, graph-jepa mode on a star,
# every switch on (dropouts, mixing, out linear, repartition, rb, adamw, clip)
printf '\x02\x01\x03\x01\x01\x00\x00\x07\x08\x00\x01\x01\x02\x02\x03\x03\x04\x04\x05\x05\x06\x06\x07\x02\x03\x00\x01\x01\x02\x02\x00' >"$S/model/hp_paths"
printf '\x01\x1f\x00\x53\x02\x04\x09\x0c\x0b\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00\x07\x00\x08\x00\x09\x00\x0a\x00\x0b' >"$S/model/gj_star"
printf '\x04\x01\x07\x02\xff\xff\xff\x05\x0a\x09\x00\x01\x01\x02\x02\x03\x03\x04\x04\x05\x05\x06\x06\x07\x07\x08\x08\x09\x00\x00' >"$S/model/all_switches"

# the program's readers: byte 0 picks one (0 npy, 1 graphs.csv, 2 loss log,
# 3 report JSON), the rest is the file; seeds from real outputs of the program
"$HPJ" embed "$S/ckpt/untrained" data/DEMO --out "$B/seed.npy" >/dev/null 2>&1 &&
    { printf '\x00'; head -c 1200 "$B/seed.npy"; } >"$S/cli/npy_cut" &&
    { printf '\x04'; cat "$B/seed.npy"; } >"$S/cli/npy_whole"
for f in $(ls tools/paper/reports/*.graphs.csv 2>/dev/null | head -n 2); do
    [ -f "$f" ] && { printf '\x01'; head -n 60 "$f"; } >"$S/cli/$(basename "$f" .csv)"
done
printf '\x02epoch,step,resolution,K,loss\n1,10,1,2,0.5\n1,10,2,4,0.25\n2,20,1,2,0.125\n2,20,2,4,0.0625\n' >"$S/cli/loss"
for f in $(ls tools/paper/reports/*.json 2>/dev/null | head -n 2); do
    [ -f "$f" ] && { printf '\x03'; cat "$f"; } >"$S/cli/$(basename "$f")"
done

# dictionaries of the tokens the readers treat specially
printf '"\\x1f"\n"train"\n"val"\n"valid"\n"test"\n"\\x0d\\x0a"\n", "\n"1e39"\n"nan"\n"-"\n"."\n"e"\n"2147483648"\n"99999999999999999999"\n' \
    >"$B/tu.dict"
printf '"%%"\n" 011"\n" 111"\n" 1 "\n"\\x0d\\x0a"\n"\\x0a\\x0a"\n"2147483648"\n"99999999999999999999"\n' >"$B/metis.dict"
strings "$S/ckpt/untrained" | sed -n 's/^\([a-z_]*\) = .*/"\1"/p' >"$B/config.dict"
printf '"="\n"#"\n","\n"\\x0d"\n"\\x00"\n"hp"\n"graph-jepa"\n"adamw"\n"cosine"\n"gelu"\n"nan"\n"inf"\n"1e39"\n"-0"\n"0x10"\n"2147483648"\n"18446744073709551616"\n"threads"\n"seed"\n' \
    >>"$B/config.dict"
cp "$B/config.dict" "$B/ckpt.dict"
printf '"\\x93NUMPY"\n"descr"\n"fortran_order"\n"shape"\n"<f4"\n"False"\n"seed,fold,graph,nodes,edges,label,pred,correct"\n"epoch,step,resolution,K,loss"\n"\\"rows\\""\n"\\"omega\\""\n"\\"config\\""\n"\\"score\\""\n"nan"\n"1e308"\n' >"$B/cli.dict"
printf '"\\x00\\x01"\n"\\xff"\n"\\x00\\x00"\n' >"$B/partition.dict"
cp "$B/partition.dict" "$B/tokens.dict"
cp "$B/partition.dict" "$B/model.dict"
printf '"HPJEPA\\x0d\\x0a"\n"\\xff\\xff\\xff\\x7f"\n"\\x00\\x00\\x80\\x7f"\n"\\x00\\x00\\xc0\\x7f"\n"\\x01\\x00\\x00\\x00"\n' >>"$B/ckpt.dict"

# ---- runs -----------------------------------------------------------------
# make fuzz keeps what it finds in $B/corpus_T (it grows from run to run);
# the regression stage starts each time from nothing in $B/regress/, so
# that it never touches that corpus
if [ $MODE = regression ]; then R=$B/regress; else R=$B; fi
# run_harness T SECONDS: one harness on its corpus folder (new inputs go
# there), the committed corpus and the seeds; its log in $R/fuzz_T.log, the
# reproducer of a failure in $R/artifacts/T/
run_harness() {
    local t=$1 secs=$2 corpus=$R/corpus_$t art=$R/artifacts/$t limit dirs
    rm -rf "$art" # reproducers of this run only
    [ $MODE = regression ] && rm -rf "$corpus" # only the committed inputs and the seeds
    mkdir -p "$corpus" "$art"
    dirs=("$corpus")
    [ -d "tests/fuzz-corpus/$t" ] && dirs+=("tests/fuzz-corpus/$t")
    dirs+=("$S/$t")
    limit="-max_total_time=$secs"
    [ -n "${FUZZ_RUNS:-}" ] && limit="-runs=$FUZZ_RUNS"
    ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$B/fuzz_$t" $limit -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -dict="$B/$t.dict" -artifact_prefix="$art/" "${dirs[@]}" >"$R/fuzz_$t.log" 2>&1
}
# run_stats T: "executions seconds exec/s" of its finished run
run_stats() {
    local log=$R/fuzz_$1.log runs secs speed
    runs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{ print $2 }' | tail -1)
    [ -z "$runs" ] && runs=$(grep -oE 'Done [0-9]+ runs' "$log" | awk '{ print $2 }' | tail -1)
    secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | awk '{ print $5 }' | tail -1)
    speed=$(grep -E '^stat::average_exec_per_sec:' "$log" | awk '{ print $2 }' | tail -1)
    echo "${runs:-?} ${secs:-?} ${speed:-?}"
}
failed_lines() { # the lines of a failure's log worth reading
    grep -E '^==[0-9]+==ERROR|^SUMMARY|broken contract|out-of-memory|Test unit written' "$R/fuzz_$1.log" | head -5
}

if [ $MODE = regression ]; then
    jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
    pids=()
    for t in $TARGETS; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
        run_harness "$t" "$SECONDS_EACH" &
        pids+=($!)
    done
    pass=0
    fail=0
    k=0
    for t in $TARGETS; do # reported in order
        wait "${pids[$k]}"
        rc=$?
        k=$((k + 1))
        read -r runs secs _ < <(run_stats "$t")
        ncommitted=$(find "tests/fuzz-corpus/$t" -type f 2>/dev/null | wc -l)
        nseeds=$(find "$S/$t" -type f | wc -l)
        crashes=$(find "$R/artifacts/$t" -type f | wc -l)
        what="fuzz $t: $ncommitted committed + $nseeds seed inputs"
        if [ $rc -eq 0 ] && [ "$crashes" -eq 0 ]; then
            pass=$((pass + 1))
            echo "[       OK ] $what, then $runs executions in $secs s"
        else
            fail=$((fail + 1))
            echo "[  FAILED  ] $what: exit $rc after $runs executions; see $R/fuzz_$t.log and $R/artifacts/$t/"
            failed_lines "$t" | sed 's/^/    /'
        fi
    done
    echo "$pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit
fi

status=0
summary=()
for t in $TARGETS; do
    if [ -n "${FUZZ_RUNS:-}" ]; then how="$FUZZ_RUNS runs"; else how="$SECONDS_EACH s"; fi
    echo "fuzz: running $t ($how), log $R/fuzz_$t.log"
    run_harness "$t" "$SECONDS_EACH"
    rc=$?
    read -r runs secs speed < <(run_stats "$t")
    ncorp=$(find "$R/corpus_$t" -type f | wc -l)
    crashes=$(find "$R/artifacts/$t" -type f | wc -l)
    if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
        status=1
        echo "fuzz: $t FAILED (exit $rc); see $R/fuzz_$t.log and $R/artifacts/$t/" >&2
        failed_lines "$t" >&2
    fi
    summary+=("| $t | $secs | $runs | $speed | $ncorp | $crashes |")
done
echo
echo "| harness | seconds | executions | exec/s | corpus files | crashes |"
echo "|---|---|---|---|---|---|"
for l in "${summary[@]}"; do echo "$l"; done
exit $status
