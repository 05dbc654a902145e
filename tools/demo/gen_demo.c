/* gen_demo.c - writes the synthetic DEMO dataset (TUDataset text format).

   Each graph is 4..8 "blobs" (paths of 4..6 nodes). Two independent
   factors give 4 classes:
     fine   (local motif): every blob carries a triangle plus a pendant
                           node, or a 4-cycle (both add 2 nodes, 3 edges)
     coarse (arrangement): the blobs are joined end to end into a chain,
                           or into a ring (two pendant leaves in the ring
                           match the chain's two end leaves, so both have
                           the same number of leaves; the ring has 2 more
                           nodes, against 24..50 nodes varying anyway)
   class = 2*arrangement + motif, so a model has to see both the small
   structure inside blobs and the global shape that links them. Node labels
   (3 types) are random noise. Fixed seed: the output is reproducible.

   usage: gen_demo OUT_DIR [GRAPHS]   (writes OUT_DIR/DEMO_*.txt) */
#define _POSIX_C_SOURCE 200809L
#define HPJEPA_IMPLEMENTATION
#include "../hpjepa.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 128
#define MAXE 512

typedef struct { int n, m; int u[MAXE], v[MAXE]; } demo_graph;

static int add_node(demo_graph *g) { return g->n++; }
static void add_edge(demo_graph *g, int a, int b) { g->u[g->m] = a; g->v[g->m] = b; g->m++; }

static void make_graph(demo_graph *g, int motif, int ring, hpj_rng *r) {
    int blobs = 4 + (int)hpj_rng_below(r, 5), b, i;
    int first[16], last[16];
    memset(g, 0, sizeof(*g));
    for (b = 0; b < blobs; ++b) {
        int len = 4 + (int)hpj_rng_below(r, 3), prev = -1, a;
        int at = (int)hpj_rng_below(r, (uint32_t)(len - 1)); /* motif anchor edge */
        int anchor0 = -1, anchor1 = -1;
        for (i = 0; i < len; ++i) {
            int v = add_node(g);
            if (prev >= 0) add_edge(g, prev, v);
            if (i == 0) first[b] = v;
            if (i == at) anchor0 = v;
            if (i == at + 1) anchor1 = v;
            prev = v;
        }
        last[b] = prev;
        if (motif == 0) { /* triangle on the anchor edge, plus a pendant */
            a = add_node(g);
            add_edge(g, anchor0, a);
            add_edge(g, anchor1, a);
            add_edge(g, a, add_node(g));
        } else { /* 4-cycle on the anchor edge */
            int c = add_node(g), d = add_node(g);
            add_edge(g, anchor0, c);
            add_edge(g, c, d);
            add_edge(g, d, anchor1);
        }
    }
    for (b = 0; b + 1 < blobs; ++b) add_edge(g, last[b], first[b + 1]);
    if (ring) {
        /* close the ring; two pendant leaves stand in for the chain's two
           end leaves, so both arrangements have the same leaf count */
        add_edge(g, last[blobs - 1], first[0]);
        add_edge(g, first[1 + (int)hpj_rng_below(r, (uint32_t)(blobs - 1))] + 1, add_node(g));
        add_edge(g, first[1 + (int)hpj_rng_below(r, (uint32_t)(blobs - 1))] + 2, add_node(g));
    }
}

int main(int argc, char **argv) {
    char path[1024];
    FILE *fa, *fi, *fl, *fn;
    hpj_rng r;
    int G = argc > 2 ? atoi(argv[2]) : 400, g, node_base = 0;
    if (argc < 2 || G < 4 || G > 100000) {
        fprintf(stderr, "usage: gen_demo OUT_DIR [GRAPHS (4..100000)]\n");
        return 2;
    }
#define OPEN(f, suffix)                                                            \
    snprintf(path, sizeof path, "%s/DEMO_%s.txt", argv[1], suffix);                \
    if (!(f = fopen(path, "w"))) { fprintf(stderr, "gen_demo: cannot create %s\n", path); return 1; }
    OPEN(fa, "A")
    OPEN(fi, "graph_indicator")
    OPEN(fl, "graph_labels")
    OPEN(fn, "node_labels")
    hpj_rng_seed(&r, 20261121);
    for (g = 0; g < G; ++g) {
        demo_graph gr;
        int cls = g % 4, i;
        make_graph(&gr, cls & 1, cls >> 1, &r);
        for (i = 0; i < gr.m; ++i) { /* both directions, as TU files list them */
            fprintf(fa, "%d, %d\n", node_base + gr.u[i] + 1, node_base + gr.v[i] + 1);
            fprintf(fa, "%d, %d\n", node_base + gr.v[i] + 1, node_base + gr.u[i] + 1);
        }
        for (i = 0; i < gr.n; ++i) {
            fprintf(fi, "%d\n", g + 1);
            fprintf(fn, "%u\n", hpj_rng_below(&r, 3));
        }
        fprintf(fl, "%d\n", cls);
        node_base += gr.n;
    }
    fclose(fa); fclose(fi); fclose(fl); fclose(fn);
    printf("wrote %d graphs (%d nodes) to %s/DEMO_*.txt\n", G, node_base, argv[1]);
    return 0;
}
