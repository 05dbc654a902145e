/* libFuzzer harness of the multilevel partitioner (hpj_partition). Built
   by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Input layout (every byte string is some valid call):
     byte 0   k = 1 + b % 40
     byte 1   bit 0: method rb (else kway); bit 1: two cuts (ncuts = 2);
              bit 2: vertex weights follow; bit 3: edge weights follow;
              bits 4-7: niter = b >> 4
     byte 2   ufactor = 1 + b / 64 (1 .. 4.98)
     byte 3   n = 1 + b (1 .. 256 vertices); byte 4: the seed
     then     if vertex weights: n bytes, weight = b % 8 (0 allowed)
     then     edges as pairs of bytes (u % n, v % n), each followed by a
              weight byte (1 + b % 16) when edge weights are on
   The edge list goes through hpj_graph_from_edges (symmetrised, self-loops
   and duplicates dropped), so the graph is always a valid CSR: the
   partitioner must succeed, and its contract is checked:
   - part[v] in 0..k-1; for k >= n vertex v is part v; for k <= n every
     part is non-empty;
   - with unit vertex weights the heaviest part holds at most
     max(ceil(n / k), floor(ufactor n / k)) vertices (the bound is met
     "whenever the vertex weights allow it", and unit weights always do);
   - the reported edge cut equals hpj_partition_cut's recount;
   - the same call through a reused workspace gives the same partition
     (deterministic, whatever the workspace). */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdlib.h>
#include <string.h>

#define FUZZ_TAG "fuzz_partition"
#include "fuzz.h"

static hpj_part_work *work; /* reused across inputs, as the tokenizer does */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_part_options o;
    hpj_graph_owned g;
    int32_t k, n, *u, *v, *w, *vw = NULL, *part, *again, *count;
    int64_t m = 0, cut = -1, cut2 = -1, i, cap;
    int vweights, eweights;
    size_t at = 5;
    hpj_status st;
    if (size < 5) return 0;
    if (!work && !(work = hpj_part_work_new())) return 0;
    k = 1 + data[0] % 40;
    hpj_part_options_default(&o);
    o.method = (data[1] & 1) ? HPJ_PART_RB : HPJ_PART_KWAY;
    o.ncuts = (data[1] & 2) ? 2 : 1;
    vweights = (data[1] & 4) != 0;
    eweights = (data[1] & 8) != 0;
    o.niter = data[1] >> 4;
    o.ufactor = 1.0f + data[2] / 64.0f;
    n = 1 + data[3];
    o.seed = data[4];
    if (vweights) {
        if (size < at + (size_t)n) return 0;
        vw = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        for (i = 0; i < n; ++i) vw[i] = data[at + i] % 8;
        at += (size_t)n;
    }
    cap = (int64_t)(size - at) / (eweights ? 3 : 2) + 1;
    u = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    v = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    w = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    while (at + (eweights ? 3 : 2) <= size) {
        u[m] = data[at] % n;
        v[m] = data[at + 1] % n;
        w[m] = eweights ? 1 + data[at + 2] % 16 : 1;
        at += eweights ? 3 : 2;
        ++m;
    }
    st = hpj_graph_from_edges(n, m, u, v, eweights ? w : NULL, &g);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    free(u); free(v); free(w);
    if (st != HPJ_OK) { free(vw); return 0; }
    g.g.vwgt = vw; /* the owned block keeps the rest; vw is ours */
    part = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    again = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    count = (int32_t *)calloc((size_t)k, sizeof(int32_t));
    st = hpj_partition(&g.g, k, &o, NULL, part, &cut);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    if (st == HPJ_OK) {
        int32_t nonempty = 0, maxc = 0;
        for (i = 0; i < n; ++i) {
            FUZZ_ASSERT(part[i] >= 0 && part[i] < k);
            if (k >= n) FUZZ_ASSERT(part[i] == i);
            if (count[part[i]]++ == 0) ++nonempty;
        }
        for (i = 0; i < k; ++i) maxc = count[i] > maxc ? count[i] : maxc;
        if (k <= n) FUZZ_ASSERT(nonempty == k);
        if (!vweights) {
            int32_t lo = (n + k - 1) / k, hi = (int32_t)(o.ufactor * (double)n / k);
            FUZZ_ASSERT(maxc <= (lo > hi ? lo : hi));
        }
        FUZZ_ASSERT(cut == hpj_partition_cut(&g.g, part));
        st = hpj_partition(&g.g, k, &o, work, again, &cut2);
        FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
        if (st == HPJ_OK) FUZZ_ASSERT(cut2 == cut && memcmp(part, again, sizeof(int32_t) * (size_t)n) == 0);
    }
    free(part); free(again); free(count); free(vw);
    g.g.vwgt = NULL;
    hpj_graph_owned_free(&g);
    return 0;
}
