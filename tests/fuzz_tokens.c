/* libFuzzer harness of the tokenizer (hpj_tokens_build): the resolution
   bank, the partitions and the 1-hop patches of random small datasets.
   Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Input layout (every byte string is some valid call):
     byte 0   L = 1 + b % 4 resolutions; byte 1..L: K_l = 1 + b % 96
     next     flags: bit 0 always_active (graph-jepa mode), bit 1 mean
              reduction (else max), bits 2-3 edge drop 0 / 0.3 / 0.6 / 0.9,
              bit 4 partition rb (else kway), bit 5 only the even graphs
     next     rw_dim = 1 + b % 8; the seed; the epoch
     then     graphs: a byte n (1 + b % 48 nodes), a byte m (edges), then
              m pairs of bytes (u % n, v % n); up to 6 graphs
   The graphs go through the TU reader (so self-loops and repeats are
   dropped as for a real dataset). Contract checked on every input:
   - k = 0 for graphs not listed, else min(K_l, n), and 0 when K_l > 2n
     unless always_active;
   - every patch: a core of >= 1 node, its node list ascending, unique, in
     range; the cores of a slot sum to n; every node lies in a patch;
   - with one node per region (K_l >= n) each patch is the closed
     neighbourhood {v} + N(v) of a node in the full graph, as many patches
     with a given list as nodes with that neighbourhood;
   - the patch RWSE is the max (or mean) of its nodes' RWSE, in [0, 1];
   - a second build gives the same arrays (deterministic). */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TAG "fuzz_tokens"
#include "fuzz.h"

static void same_tokens(const hpj_tokens *a, const hpj_tokens *b, int32_t slots) {
    FUZZ_ASSERT(a->num_patches == b->num_patches);
    FUZZ_ASSERT(memcmp(a->k, b->k, sizeof(int32_t) * (size_t)slots) == 0);
    FUZZ_ASSERT(memcmp(a->patch0, b->patch0, sizeof(int64_t) * ((size_t)slots + 1)) == 0);
    FUZZ_ASSERT(memcmp(a->ptr, b->ptr, sizeof(int64_t) * ((size_t)a->num_patches + 1)) == 0);
    if (a->ptr[a->num_patches])
        FUZZ_ASSERT(memcmp(a->nodes, b->nodes, sizeof(int32_t) * (size_t)a->ptr[a->num_patches]) == 0);
    if (a->num_patches) {
        FUZZ_ASSERT(memcmp(a->ncore, b->ncore, sizeof(int32_t) * (size_t)a->num_patches) == 0);
        FUZZ_ASSERT(memcmp(a->nedge, b->nedge, sizeof(int32_t) * (size_t)a->num_patches) == 0);
        FUZZ_ASSERT(memcmp(a->rw, b->rw, sizeof(float) * (size_t)a->num_patches * (size_t)a->rw_dim) == 0);
    }
}

/* 1 if {v} + N(v) in g is exactly the ascending list (len entries). */
static int closed_nbhd_is(const hpj_graph *g, int32_t v, const int32_t *list, int64_t len) {
    int64_t q, members = 0;
    int32_t i;
    for (q = 0; q < len && list[q] != v; ++q) {}
    if (q == len) return 0;
    for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
        if (g->col[i] == v) continue;
        for (q = 0; q < len && list[q] != g->col[i]; ++q) {}
        if (q == len) return 0;
        ++members;
    }
    return members + 1 == len; /* the CSR holds no repeats, so this counts N(v) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_tok_options o;
    hpj_dataset ds;
    hpj_tokens tk, again;
    size_t at = 0;
    int L, l, flags, only_even;
    int32_t listed[6], nlisted = 0, g;
    float *rw = NULL;
    hpj_status st;
    if (size < 8) return 0;
    hpj_tok_options_default(&o);
    L = 1 + data[at++] % 4;
    o.L = L;
    for (l = 0; l < L; ++l) o.K[l] = 1 + data[at++] % 96;
    flags = data[at++];
    o.always_active = flags & 1;
    o.rw_reduce = (flags & 2) ? HPJ_RW_MEAN : HPJ_RW_MAX;
    o.edge_drop = 0.3f * (float)((flags >> 2) & 3);
    o.part.method = (flags & 16) ? HPJ_PART_RB : HPJ_PART_KWAY;
    only_even = (flags & 32) != 0;
    if (at + 3 > size) return 0;
    o.rw_dim = 1 + data[at++] % 8;
    o.seed = data[at++];
    o.epoch = data[at++];
    if (fuzz_dataset(data, size, &at, 6, 48, 0, &ds)) return 0;
    for (g = 0; g < ds.num_graphs; ++g)
        if (!only_even || g % 2 == 0) listed[nlisted++] = g;
    rw = (float *)malloc(sizeof(float) * (size_t)ds.num_nodes * (size_t)o.rw_dim);
    if (!rw || hpj_dataset_rwse(&ds, o.rw_dim, rw) != HPJ_OK) { free(rw); hpj_dataset_free(&ds); return 0; }
    st = hpj_tokens_build(&ds, rw, listed, nlisted, &o, &tk);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    if (st == HPJ_OK) {
        for (g = 0; g < ds.num_graphs; ++g) {
            hpj_graph gr = hpj_dataset_graph(&ds, g);
            const float *nrw = rw + (size_t)ds.node_ptr[g] * (size_t)o.rw_dim;
            int is_listed = !only_even || g % 2 == 0;
            int32_t *seen = (int32_t *)calloc((size_t)gr.n, sizeof(int32_t));
            for (l = 0; l < L; ++l) {
                int32_t k = tk.k[(size_t)g * L + l], p, K = o.K[l], v;
                int64_t p0 = tk.patch0[(size_t)g * L + l], core = 0;
                int32_t want = !is_listed || (!o.always_active && (int64_t)K > 2 * (int64_t)gr.n) ? 0 : (K < gr.n ? K : gr.n);
                FUZZ_ASSERT(k == want);
                memset(seen, 0, sizeof(int32_t) * (size_t)gr.n);
                for (p = 0; p < k; ++p) {
                    int64_t a = tk.ptr[p0 + p], b = tk.ptr[p0 + p + 1], j;
                    const float *prw = tk.rw + (size_t)(p0 + p) * (size_t)o.rw_dim;
                    int r;
                    FUZZ_ASSERT(tk.ncore[p0 + p] >= 1 && b - a >= tk.ncore[p0 + p]);
                    for (j = a; j < b; ++j) {
                        FUZZ_ASSERT(tk.nodes[j] >= 0 && tk.nodes[j] < gr.n);
                        if (j > a) FUZZ_ASSERT(tk.nodes[j - 1] < tk.nodes[j]);
                        seen[tk.nodes[j]] = 1;
                    }
                    core += tk.ncore[p0 + p];
                    for (r = 0; r < o.rw_dim; ++r) {
                        double mx = -1.0, sum = 0.0;
                        for (j = a; j < b; ++j) {
                            double x = nrw[(size_t)tk.nodes[j] * (size_t)o.rw_dim + r];
                            mx = x > mx ? x : mx;
                            sum += x;
                        }
                        FUZZ_ASSERT(prw[r] >= 0.0f && prw[r] <= 1.0f + 1e-6f);
                        if (o.rw_reduce == HPJ_RW_MAX) FUZZ_ASSERT(prw[r] == (float)mx);
                        else FUZZ_ASSERT(fabs(prw[r] - sum / (double)(b - a)) <= 1e-5);
                    }
                    if (K >= gr.n) { /* one node per region: the patch is N[v] = {v} + N(v) */
                        int32_t q, matches = 0, same = 0;
                        FUZZ_ASSERT(tk.ncore[p0 + p] == 1);
                        for (v = 0; v < gr.n; ++v) matches += closed_nbhd_is(&gr, v, tk.nodes + a, b - a);
                        for (q = 0; q < k; ++q) {
                            int64_t qa = tk.ptr[p0 + q], qb = tk.ptr[p0 + q + 1];
                            same += qb - qa == b - a && !memcmp(tk.nodes + qa, tk.nodes + a, sizeof(int32_t) * (size_t)(b - a));
                        }
                        /* as many patches with this list as nodes with this closed neighbourhood */
                        FUZZ_ASSERT(matches >= 1 && matches == same);
                    }
                }
                if (k) {
                    FUZZ_ASSERT(core == gr.n);
                    for (v = 0; v < gr.n; ++v) FUZZ_ASSERT(seen[v]);
                }
            }
            free(seen);
        }
        st = hpj_tokens_build(&ds, rw, listed, nlisted, &o, &again);
        FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
        if (st == HPJ_OK) {
            same_tokens(&tk, &again, ds.num_graphs * L);
            hpj_tokens_free(&again);
        }
        hpj_tokens_free(&tk);
    }
    free(rw);
    hpj_dataset_free(&ds);
    return 0;
}
