/* partition_grid.c - build a 100 x 100 grid and cut it into K parts with
   the bundled multilevel partitioner. The best cut of an m x m grid in two
   halves costs m edges (a straight line); the partitioner is a heuristic
   and lands a few percent above it.
   usage: partition_grid [K] */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    enum { M = 100 };
    int32_t k = argc > 1 ? atoi(argv[1]) : 2, *u, *v, *part, e = 0, i, j;
    hpj_graph_owned g;
    hpj_part_options opt;
    hpj_partition_stats st;
    if (k < 1) { fprintf(stderr, "K must be >= 1\n"); return 2; }
    u = (int32_t *)malloc(sizeof(int32_t) * 2 * M * M);
    v = (int32_t *)malloc(sizeof(int32_t) * 2 * M * M);
    part = (int32_t *)malloc(sizeof(int32_t) * M * M); /* one part per vertex */
    if (!u || !v || !part) { fprintf(stderr, "out of memory\n"); return 1; }
    for (i = 0; i < M; ++i)
        for (j = 0; j < M; ++j) { /* right and down neighbours */
            if (j + 1 < M) { u[e] = i * M + j; v[e] = i * M + j + 1; ++e; }
            if (i + 1 < M) { u[e] = i * M + j; v[e] = (i + 1) * M + j; ++e; }
        }
    if (hpj_graph_from_edges(M * M, e, u, v, NULL, &g) != HPJ_OK) { fprintf(stderr, "%s\n", hpj_last_error()); return 1; }
    hpj_part_options_default(&opt); /* k-way, imbalance 1.03, seed 1 */
    if (hpj_partition(&g.g, k, &opt, NULL, part, NULL) != HPJ_OK || hpj_partition_evaluate(&g.g, k, part, &st) != HPJ_OK) {
        fprintf(stderr, "%s\n", hpj_last_error());
        return 1;
    }
    printf("%d x %d grid, K = %d: edge cut %lld, imbalance %.3f, %d non-empty parts\n", M, M, k,
           (long long)st.edgecut, st.imbalance, st.nonempty);
    hpj_graph_owned_free(&g);
    free(u); free(v); free(part);
    return 0;
}
