/* libFuzzer harness of the METIS-format reader (hpj_graph_parse_metis).
   Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Besides "no crash, no leak, no undefined behaviour, no hang", it checks
   the reader's contract on every input and traps when it is broken:
   - success: the graph passes hpj_graph_check, info matches the arrays,
     no vertex lists itself (the format forbids self-loops), and writing the graph back as METIS text and parsing that gives the
     same arrays (the reader is a fixed point of its own output);
   - failure: HPJ_ERR_FORMAT (or HPJ_ERR_NOMEM), zeroed outputs, and a
     one-line reason that starts with the input's name. */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz.graph"
#define FUZZ_TAG "fuzz_metis"
#include "fuzz.h"

/* The graph as METIS text (1-based ids, weights as the arrays hold them). */
static void to_metis(const hpj_graph *g, fuzz_text *t) {
    char num[64];
    int32_t v, i;
    snprintf(num, sizeof num, "%d %d %d%d\n", g->n, g->nnz / 2, g->vwgt ? 1 : 0, g->ewgt ? 1 : 0);
    fuzz_put(t, num);
    for (v = 0; v < g->n; ++v) {
        if (g->vwgt) {
            snprintf(num, sizeof num, "%d ", g->vwgt[v]);
            fuzz_put(t, num);
        }
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
            if (g->ewgt) snprintf(num, sizeof num, " %d %d", g->col[i] + 1, g->ewgt[i]);
            else snprintf(num, sizeof num, " %d", g->col[i] + 1);
            fuzz_put(t, num);
        }
        fuzz_put(t, "\n");
    }
}

static void same_graph(const hpj_graph *a, const hpj_graph *b) {
    FUZZ_ASSERT(a->n == b->n && a->nnz == b->nnz);
    FUZZ_ASSERT(memcmp(a->rowptr, b->rowptr, sizeof(int32_t) * ((size_t)a->n + 1)) == 0);
    FUZZ_ASSERT(a->nnz == 0 || memcmp(a->col, b->col, sizeof(int32_t) * (size_t)a->nnz) == 0);
    FUZZ_ASSERT((a->vwgt == NULL) == (b->vwgt == NULL) && (a->ewgt == NULL) == (b->ewgt == NULL));
    if (a->vwgt && a->n) FUZZ_ASSERT(memcmp(a->vwgt, b->vwgt, sizeof(int32_t) * (size_t)a->n) == 0);
    if (a->ewgt && a->nnz) FUZZ_ASSERT(memcmp(a->ewgt, b->ewgt, sizeof(int32_t) * (size_t)a->nnz) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_graph_owned g;
    hpj_metis_info info;
    hpj_status st;
    hpj_clear_error();
    st = hpj_graph_parse_metis((const char *)data, size, FUZZ_NAME, &g, &info);
    if (st != HPJ_OK) {
        FUZZ_ASSERT(st == HPJ_ERR_FORMAT || st == HPJ_ERR_NOMEM);
        fuzz_check_reason(FUZZ_NAME);
        FUZZ_ASSERT(all_zero(&g, sizeof g) && all_zero(&info, sizeof info));
        return 0;
    }
    FUZZ_ASSERT(hpj_graph_check(&g.g) == HPJ_OK);
    FUZZ_ASSERT((g.g.vwgt != NULL) == (info.has_vwgt != 0));
    FUZZ_ASSERT((g.g.ewgt != NULL) == (info.has_ewgt != 0));
    FUZZ_ASSERT(g.g.nnz % 2 == 0);
    {   /* the format forbids self-loops: a graph that loaded has none */
        int32_t v, i;
        for (v = 0; v < g.g.n; ++v)
            for (i = g.g.rowptr[v]; i < g.g.rowptr[v + 1]; ++i) FUZZ_ASSERT(g.g.col[i] != v);
    }
    {   /* round trip through our own METIS text */
        fuzz_text t = {0};
        hpj_graph_owned back;
        to_metis(&g.g, &t);
        st = hpj_graph_parse_metis(t.p, t.n, "roundtrip", &back, NULL);
        FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
        if (st == HPJ_OK) {
            same_graph(&g.g, &back.g);
            hpj_graph_owned_free(&back);
        }
        free(t.p);
    }
    hpj_graph_owned_free(&g);
    FUZZ_ASSERT(all_zero(&g, sizeof g));
    return 0;
}
