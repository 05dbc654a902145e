/* Shared by the libFuzzer harnesses tests/fuzz_*.c (built by the Makefile):
   the contract check that traps, and the checks every reader's failure
   must pass. Define FUZZ_TAG (the harness name) before including this,
   after hpjepa.h. */
#ifndef HPJ_FUZZ_H
#define HPJ_FUZZ_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Traps (a crash libFuzzer records) when a contract is broken. */
#define FUZZ_ASSERT(c)                                                                  \
    do {                                                                                \
        if (!(c)) {                                                                     \
            fprintf(stderr, "%s: broken contract: %s (reason \"%s\")\n", FUZZ_TAG, #c, \
                    hpj_last_error());                                                  \
            __builtin_trap();                                                           \
        }                                                                               \
    } while (0)

static int all_zero(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i)
        if (c[i]) return 0;
    return 1;
}

/* The reason of a failure is one printable line that starts with prefix
   (the name of the input it is about); no check when prefix is NULL. */
static void fuzz_check_reason(const char *prefix) {
    const char *e = hpj_last_error(), *c;
    FUZZ_ASSERT(e[0] != 0);
    for (c = e; *c; ++c) FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7F);
    if (prefix) FUZZ_ASSERT(strncmp(e, prefix, strlen(prefix)) == 0);
}

/* A growable text buffer (aborts when out of memory: a harness, not the
   library). */
typedef struct fuzz_text {
    char *p;
    size_t n, cap;
} fuzz_text;
static void fuzz_put(fuzz_text *t, const char *s) {
    size_t k = strlen(s);
    if (t->n + k + 1 > t->cap) {
        t->cap = (t->n + k + 1) * 2;
        t->p = (char *)realloc(t->p, t->cap);
        if (!t->p) abort();
    }
    memcpy(t->p + t->n, s, k + 1);
    t->n += k;
}

/* A small random dataset from data[*at..size): up to max_graphs graphs,
   each a byte n (1 + b % max_nodes nodes), a byte m, then m pairs of bytes
   (u % n, v % n); graph labels alternate 0, 1 (node labels b % 3 when
   node_labels). Read through the TU reader, so self-loops and repeats are
   dropped as for a real dataset. 0 and *ds filled, or -1 (nothing read,
   or the reader ran out of memory). */
static int fuzz_dataset(const uint8_t *data, size_t size, size_t *at, int max_graphs, int max_nodes, int node_labels,
                        hpj_dataset *ds) {
    fuzz_text A = {0}, gi = {0}, gl = {0}, nl = {0};
    hpj_tu_text tu;
    char line[64];
    int G = 0, node0 = 0, st;
    fuzz_put(&A, ""); fuzz_put(&gi, ""); fuzz_put(&gl, ""); fuzz_put(&nl, "");
    while (*at + 2 <= size && G < max_graphs) {
        int n = 1 + data[*at] % max_nodes, m = data[*at + 1], e;
        *at += 2;
        for (e = 0; e < n; ++e) {
            snprintf(line, sizeof line, "%d\n", G + 1);
            fuzz_put(&gi, line);
            snprintf(line, sizeof line, "%d\n", (e * 7 + G) % 3);
            fuzz_put(&nl, line);
        }
        for (e = 0; e < m && *at + 2 <= size; ++e, *at += 2) {
            snprintf(line, sizeof line, "%d, %d\n", node0 + 1 + data[*at] % n, node0 + 1 + data[*at + 1] % n);
            fuzz_put(&A, line);
        }
        snprintf(line, sizeof line, "%d\n", G % 2);
        fuzz_put(&gl, line);
        node0 += n;
        ++G;
    }
    st = -1;
    if (G > 0) {
        memset(&tu, 0, sizeof tu);
        tu.name = "F";
        tu.text[HPJ_TU_A] = A.p; tu.len[HPJ_TU_A] = A.n;
        tu.text[HPJ_TU_GRAPH_INDICATOR] = gi.p; tu.len[HPJ_TU_GRAPH_INDICATOR] = gi.n;
        tu.text[HPJ_TU_GRAPH_LABELS] = gl.p; tu.len[HPJ_TU_GRAPH_LABELS] = gl.n;
        if (node_labels) { tu.text[HPJ_TU_NODE_LABELS] = nl.p; tu.len[HPJ_TU_NODE_LABELS] = nl.n; }
        hpj_status rs = hpj_dataset_parse_tu(&tu, ds);
        FUZZ_ASSERT(rs == HPJ_OK || rs == HPJ_ERR_NOMEM);
        st = rs == HPJ_OK ? 0 : -1;
    }
    free(A.p); free(gi.p); free(gl.p); free(nl.p);
    return st;
}
#endif
