# Command-line checks of the core readers through `hpjepa stats`: every kind
# of malformed TU dataset gets a one-line reason naming file and line and a
# non-zero exit (never a crash); valid but awkward files load with the same
# numbers. Sourced by tests/cli_test.sh (helpers ok, bad, expect_fail, $TMP,
# $DATA).

CORE=$TMP/core
# core_ds CASE: a fresh copy of the base dataset C (2 graphs: path 1-2-3 and
# edge 4-5) in $CORE/CASE/C; prints the folder
core_ds() {
    local d=$CORE/$1/C
    mkdir -p "$d"
    printf '1\n1\n1\n2\n2\n' >"$d/C_graph_indicator.txt"
    printf '1\n-1\n' >"$d/C_graph_labels.txt"
    printf '1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n' >"$d/C_A.txt"
    printf '0\n1\n2\n0\n1\n' >"$d/C_node_labels.txt"
    printf '1\n1\n2\n2\n3\n3\n' >"$d/C_edge_labels.txt"
    printf '0.5, 1\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n' >"$d/C_node_attributes.txt"
    echo "$d"
}
# core_bad CASE SUFFIX CONTENT(printf format) REGEX: replace one file, expect a
# one-line failure matching REGEX
core_bad() {
    local d; d=$(core_ds "$1")
    printf "$3" >"$d/C_$2.txt"
    expect_fail "stats bad input: $1" "$4" "$HPJ" stats "$d"
}
# core_same CASE: stats of a reshaped dataset equal those of the base
core_base=""
core_same() {
    local name=$1 d=$2 want=${3:-$core_base} got
    got=$("$HPJ" stats "$d" 2>"$TMP/core_err"); local rc=$?
    if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then ok "stats awkward input: $name"
    else bad "stats awkward input: $name" "exit=$rc got '$got' expected '$want' ($(head -c 200 "$TMP/core_err"))"; fi
}

d=$(core_ds base)
core_base=$("$HPJ" stats "$d" 2>/dev/null)
if [ "$core_base" = "graphs=2 classes=2 avg_nodes=2.50 avg_edges=1.50" ]; then ok "stats base dataset ($core_base)"
else bad "stats base dataset" "got '$core_base'"; fi
# the path mistakes of a first hour: a file for the folder, a renamed
# folder, an option stats does not have
expect_fail "stats: a file given for the folder" "C_A.txt: not a folder \(give the TU dataset's folder" "$HPJ" stats "$d/C_A.txt"
mkdir -p "$CORE/renamed" && cp -r "$d" "$CORE/renamed/c"
expect_fail "stats: a renamed folder names the files it holds" "c: holds C_A.txt, but a TU dataset's files must be named after their folder \(rename the folder to C\)" "$HPJ" stats "$CORE/renamed/c"
expect_fail "stats: unknown option" "unknown option '--hlep'" "$HPJ" stats --hlep

# -- valid but awkward files --
d=$(core_ds crlf)
for f in "$d"/*.txt; do sed -i 's/$/\r/' "$f"; done
core_same "CRLF line endings" "$d"
d=$(core_ds blanks)
printf '\n1, 2  \n2\t1\n\n2 ,3\t \n3,2\n\n4, 5\n5, 4' >"$d/C_A.txt"
printf '1 \n1\n\n1\t\n2\n2\n\n\n' >"$d/C_graph_indicator.txt"
printf '1\n\n-1   \n' >"$d/C_graph_labels.txt"
printf '1\n1\n\n2\n2\n3\n3' >"$d/C_edge_labels.txt"
core_same "trailing blanks, blank lines, no final newline" "$d"
d=$(core_ds once)
printf '1, 2\n3, 2\n5, 4\n' >"$d/C_A.txt"; printf '1\n2\n3\n' >"$d/C_edge_labels.txt"
core_same "each edge listed once" "$d"
d=$(core_ds twice)
printf '1, 2\n1, 2\n2, 1\n2, 1\n2, 3\n2, 3\n3, 2\n3, 2\n4, 5\n4, 5\n5, 4\n5, 4\n' >"$d/C_A.txt"
printf '1\n1\n1\n1\n2\n2\n2\n2\n3\n3\n3\n3\n' >"$d/C_edge_labels.txt"
core_same "each edge listed twice" "$d"
if "$HPJ" stats "$d" 2>&1 >/dev/null | grep -q "6 duplicate edge lines dropped"; then ok "stats reports duplicate lines"
else bad "stats reports duplicate lines" "$("$HPJ" stats "$d" 2>&1 >/dev/null)"; fi
d=$(core_ds loops)
printf '1, 1\n1, 2\n2, 1\n2, 3\n3, 2\n3, 3\n4, 5\n5, 4\n' >"$d/C_A.txt"; printf '9\n1\n1\n2\n2\n9\n3\n3\n' >"$d/C_edge_labels.txt"
core_same "self-loops kept out of the counts" "$d"
if "$HPJ" stats "$d" 2>&1 >/dev/null | grep -q "2 self-loops dropped"; then ok "stats reports self-loops"
else bad "stats reports self-loops" "$("$HPJ" stats "$d" 2>&1 >/dev/null)"; fi
d=$(core_ds noedges)
printf '1, 2\n2, 1\n2, 3\n3, 2\n' >"$d/C_A.txt"; printf '1\n1\n2\n2\n' >"$d/C_edge_labels.txt"
core_same "a graph with no edges" "$d" "graphs=2 classes=2 avg_nodes=2.50 avg_edges=1.00"
d=$(core_ds empty_a)
: >"$d/C_A.txt"; : >"$d/C_edge_labels.txt"
core_same "an empty A file" "$d" "graphs=2 classes=2 avg_nodes=2.50 avg_edges=0.00"
d=$(core_ds regression)
rm "$d/C_graph_labels.txt"; printf '0.5\n-1e-3\n' >"$d/C_graph_attributes.txt"
core_same "a regression set" "$d" "graphs=2 classes=0 avg_nodes=2.50 avg_edges=1.50"
d=$(core_ds slash)
core_same "a trailing slash on the folder" "$d/"
d=$(core_ds float_labels)
printf '1.0\n-1e0\n' >"$d/C_graph_labels.txt"; printf '0\n1.0\n2\n0\n1\n' >"$d/C_node_labels.txt"
core_same "integral floats in the label files" "$d"

# -- bad input: one line naming file and line, non-zero exit, no crash --
d=$(core_ds noA); rm "$d/C_A.txt"
expect_fail "stats bad input: missing A" "C_A\.txt: missing \(required\)" "$HPJ" stats "$d"
d=$(core_ds noGI); rm "$d/C_graph_indicator.txt"
expect_fail "stats bad input: missing graph_indicator" "C_graph_indicator\.txt: missing \(required\)" "$HPJ" stats "$d"
d=$(core_ds nolabels); rm "$d/C_graph_labels.txt"
expect_fail "stats bad input: no graph labels or attributes" "C_graph_labels\.txt: missing" "$HPJ" stats "$d"
printf 'x\n' >"$TMP/core_file"
expect_fail "stats: a file instead of a folder" "core_file: not a folder" "$HPJ" stats "$TMP/core_file"
expect_fail "stats: two folders" "usage" "$HPJ" stats "$CORE/base/C" "$CORE/base/C"

core_bad a_text        A '1, 2\n2, x\n'            'C_A\.txt:2: expected an integer \(got .x.\)'
core_bad a_zero        A '1, 2\n0, 1\n'            'C_A\.txt:2: node id 0 is below the minimum 1'
core_bad a_negative    A '1, 2\n2, -3\n'           'C_A\.txt:2: node id -3 is below the minimum 1'
core_bad a_beyond      A '1, 2\n\n2, 6\n'          'C_A\.txt:3: node id 6 is above the maximum 5'
core_bad a_int32       A '4294967297, 1\n'         'C_A\.txt:1: node id 4294967297 is above the maximum 5'
core_bad a_int64       A '1, 99999999999999999999\n' 'C_A\.txt:1: integer overflows 64 bits'
core_bad a_float       A '1.5, 2\n'                'C_A\.txt:1: expected an integer \(got .1\.5.\)'
core_bad a_float_id    A '1, 2\n2.0, 3\n'         'C_A\.txt:2: expected an integer \(got .2\.0.\)'
core_bad a_one_id      A '1, 2\n3\n'               'C_A\.txt:2: expected two node ids'
core_bad a_three_ids   A '1, 2, 3\n'               'C_A\.txt:1: unexpected extra field'
core_bad a_two_graphs  A '1, 2\n3, 4\n'            'C_A\.txt:2: edge joins node 3 \(graph 1\) and node 4 \(graph 2\)'
core_bad a_nul         A '1, 2\n2,\000 1\n'        'C_A\.txt:2: NUL byte'
core_bad gi_order      graph_indicator '1\n1\n2\n1\n2\n'  'C_graph_indicator\.txt:4: graph id 1 after 2: ids must ascend'
core_bad gi_first      graph_indicator '2\n2\n2\n3\n3\n'  'C_graph_indicator\.txt:1: first graph id is 2, expected 1'
core_bad gi_gap        graph_indicator '1\n1\n1\n3\n3\n'  'C_graph_indicator\.txt:4: graph id jumps from 1 to 3: graph 2 has no nodes'
core_bad gi_zero       graph_indicator '0\n1\n1\n2\n2\n'  'C_graph_indicator\.txt:1: graph id 0 is below the minimum 1'
core_bad gi_empty      graph_indicator ''                 'C_graph_indicator\.txt: no nodes'
core_bad gi_text       graph_indicator '1\n1\none\n2\n2\n' 'C_graph_indicator\.txt:3: expected an integer'
core_bad gi_overflow   graph_indicator '1\n1\n1\n2\n99999999999999999999\n' 'C_graph_indicator\.txt:5: integer overflows 64 bits'
core_bad gi_short      graph_indicator '1\n1\n1\n2\n'     'C_A\.txt:5: node id 5 is above the maximum 4'
core_bad nl_fewer      node_labels '0\n1\n2\n0\n'         'C_node_labels\.txt: 4 lines but there are 5 nodes'
core_bad nl_more       node_labels '0\n1\n2\n0\n1\n2\n'   'C_node_labels\.txt:6: more lines than the 5 nodes'
core_bad nl_int32      node_labels '0\n1\n2147483648\n0\n1\n' 'C_node_labels\.txt:3: label 2147483648 is above the maximum'
core_bad el_fewer      edge_labels '1\n1\n2\n2\n3\n'      'C_edge_labels\.txt: 5 lines but there are 6 edge lines in A'
core_bad el_more       edge_labels '1\n1\n2\n2\n3\n3\n4\n' 'C_edge_labels\.txt:7: more lines than the 6 edge lines in A'
core_bad gl_fewer      graph_labels '1\n'                 'C_graph_labels\.txt: 1 lines but there are 2 graphs'
core_bad gl_more       graph_labels '1\n2\n3\n'           'C_graph_labels\.txt:3: more lines than the 2 graphs'
core_bad gl_text       graph_labels '1\nactive\n'         'C_graph_labels\.txt:2: expected an integer'
core_bad na_width      node_attributes '0.5, 1\n1.5\n2.5, 3\n3.5, 4\n4.5, 5\n' 'C_node_attributes\.txt:2: row has 1 values but the first row has 2'
core_bad na_wider      node_attributes '0.5\n1.5, 2\n2.5\n3.5\n4.5\n' 'C_node_attributes\.txt:2: row has more than the 1 values'
core_bad na_float      node_attributes '0.5, 1e39\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n' 'C_node_attributes\.txt:1: number is NaN or out of float range'
core_bad na_nan        node_attributes '0.5, 1\nnan, 2\n2.5, 3\n3.5, 4\n4.5, 5\n' 'C_node_attributes\.txt:2: number is NaN or out of float range'
core_bad na_text       node_attributes '0.5, 1\n1.5, two\n2.5, 3\n3.5, 4\n4.5, 5\n' 'C_node_attributes\.txt:2: expected a real number'
core_bad ea_width      edge_attributes '1\n1\n2, 0\n2\n3\n3\n' 'C_edge_attributes\.txt:3: row has more than the 1 values'
core_bad ga_fewer      graph_attributes '0.5\n'           'C_graph_attributes\.txt: 1 lines but there are 2 graphs'
core_bad split_word    split 'train\ntraining\n'          'C_split\.txt:2: expected train, val or test'
core_bad split_fewer   split 'train\n'                    'C_split\.txt: 1 lines but there are 2 graphs'
core_bad split_nul     split 'train\n\000test\n'          'C_split\.txt:2: NUL byte'

# a large malformed file fails as cleanly as a small one: the error is on
# the last of 200001 lines
d=$(core_ds big)
awk 'BEGIN { for (i = 0; i < 100000; ++i) printf "1, 2\n2, 1\n"; print "2, 9" }' >"$d/C_A.txt"
expect_fail "stats bad input: error on line 200001" "C_A\.txt:200001: node id 9 is above the maximum 5" "$HPJ" stats "$d"

# the shared IMDB set lists every edge twice; stats says how many it dropped
if [ -d "$DATA/IMDB-BINARY" ]; then
    if "$HPJ" stats "$DATA/IMDB-BINARY" 2>&1 >/dev/null | grep -q "193062 duplicate edge lines dropped"; then
        ok "stats IMDB-BINARY duplicate lines"
    else bad "stats IMDB-BINARY duplicate lines" "$("$HPJ" stats "$DATA/IMDB-BINARY" 2>&1 >/dev/null)"; fi
fi

# regressions of core bugs found by these tests (fixed in hpjepa.h)
{
    # a folder where C_A.txt is itself a folder: today "out of memory
    # allocating 9223372036854775808 bytes" (ftell of a directory)
    d=$(core_ds adir); rm "$d/C_A.txt"; mkdir "$d/C_A.txt"
    expect_fail "stats bad input: A is a folder" "C_A\.txt: .*(read error|directory)" "$HPJ" stats "$d"
    # a one-field line whose integral-float token is longer than 63 chars
    core_bad a_long_token A "1.$(printf '0%.0s' $(seq 61))2\n" 'C_A\.txt:1:'
}

# the API tour (examples/tour.c, built by `make`): the whole path from a TU
# folder to a test accuracy; graphs_in_memory: a dataset from CSR arrays;
# HPJ_EXAMPLES names the folder of the built examples (make test sets it)
tour_ex=${HPJ_EXAMPLES:-build/examples}
if [ -x "$tour_ex/tour" ] && [ -x "$tour_ex/graphs_in_memory" ]; then
    tour_out=$("$tour_ex/tour" data/DEMO 2>&1); tour_rc=$?
    tour_line=$(echo "$tour_out" | grep -E '^test accuracy [01]\.[0-9]{3} \([0-9]+ of [0-9]+ graphs\)$')
    if [ $tour_rc -eq 0 ] && [ -n "$tour_line" ]; then ok "examples/tour data/DEMO: $tour_line"
    else bad "examples/tour data/DEMO" "exit=$tour_rc: $(echo "$tour_out" | head -c 300)"; fi
    # 60 graphs of 6..13 nodes (562 in all): 30 cycles (n edges) and 30
    # stars (n - 1), 532 edges; every 2-way cut cuts some edge
    mem_out=$("$tour_ex/graphs_in_memory" 2>&1); mem_rc=$?
    if [ $mem_rc -eq 0 ] && echo "$mem_out" | grep -qE '^TOY: 60 graphs, 562 nodes, 532 undirected edges, 2 classes; 2-way cuts sum to [1-9][0-9]* edges$'; then
        ok "examples/graphs_in_memory: $mem_out"
    else bad "examples/graphs_in_memory" "exit=$mem_rc: $(echo "$mem_out" | head -c 300)"; fi
    expect_fail "examples/tour: a missing folder" "^tour: .*NOPE_A\.txt: cannot open" "$tour_ex/tour" "$TMP/NOPE"
else
    bad "examples/tour" "$tour_ex/tour is not built (run make, or set HPJ_EXAMPLES)"
fi
