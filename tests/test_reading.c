/* Tests of the reading cuts (issue 54): where a reference function and its
   fast sibling must agree bit for bit. */
#include "test.h"
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The shared-edge GINE backward on two threads and on one: the reference
   walks one channel at a time, the fast sibling splits the rows into
   blocks (two threads) or the channels into panels (one); dh, de and deps
   must be the same bits on every paths level and thread count. D = 200
   leaves a partial panel (200 = 3 x 64 + 8); the graph is a ring with
   chords, so rows have different degrees. */
static void test_gine_shared_paths(void) {
    int N = 3000, D = 200, i, lvl, nres = 0, th;
    size_t nx = (size_t)N * D, nout = nx + D + 1;
    float *x = (float *)malloc(sizeof(float) * nx), *w = (float *)malloc(sizeof(float) * nx);
    float *e = (float *)malloc(sizeof(float) * D), *out[8];
    int32_t *rowptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(N + 1));
    int32_t *col = (int32_t *)malloc(sizeof(int32_t) * 4 * (size_t)N);
    hpj_rng r;
    hpj_rng_seed(&r, 54);
    for (i = 0; i < (int)nx; ++i) x[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f, w[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f;
    for (i = 0; i < D; ++i) e[i] = 0.5f * hpj_rng_uniform(&r) - 0.25f;
    rowptr[0] = 0;
    for (i = 0; i < N; ++i) { /* ring i +- 1, and chords i +- N/2 on even rows (symmetric: N/2 is even) */
        int32_t *c = col + rowptr[i], k = 0, nb[4];
        nb[k++] = (i + N - 1) % N;
        nb[k++] = (i + 1) % N;
        if (i % 2 == 0) nb[k++] = (i + N / 2) % N;
        { /* sorted columns */
            int a, b;
            for (a = 0; a < k; ++a)
                for (b = a + 1; b < k; ++b)
                    if (nb[b] < nb[a]) { int32_t t = nb[a]; nb[a] = nb[b]; nb[b] = t; }
            for (a = 0; a < k; ++a) c[a] = nb[a];
        }
        rowptr[i + 1] = rowptr[i] + k;
    }
    for (th = 2; th >= 1; --th) {
#ifdef _OPENMP
        omp_set_num_threads(th);
#endif
        FOR_EACH_PATHS(lvl) {
            float *o = out[nres] = (float *)calloc(nout, sizeof(float));
            hpj_gine_backward_shared(o, o + nx, o + nx + D, w, x, e, rowptr, col, N, D, 0.1f);
            if (nres > 0)
                CHECK_MSG(memcmp(out[0], o, sizeof(float) * nout) == 0,
                          "shared GINE backward, %d thread(s): %s differs from the reference on two", th,
                          hpj_paths_name(lvl));
            ++nres;
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(2); /* (as the suite runs) */
#endif
    hpj_set_paths(HPJ_PATHS_BEST);
    CHECK(nres >= 1);
    { /* not all zero: de carries masked sums */
        int nz = 0;
        for (i = 0; i < D; ++i) nz += out[0][nx + i] != 0.0f;
        CHECK(nz > D / 2);
    }
    for (i = 0; i < nres; ++i) free(out[i]);
    free(x); free(w); free(e); free(rowptr); free(col);
}

/* A partitioner workspace serves calls on any paths level, in any order:
   its blocks come from the fast part's cache or are allocated and freed
   plainly, and a block allocated on one level may be released on another.
   Many small graphs through one workspace, the level alternating call by
   call (and the graphs growing, so cached blocks are reused and replaced),
   give the partitions of calls without a workspace. */
static void test_part_work_paths(void) {
    hpj_part_work *w = hpj_part_work_new();
    hpj_rng r;
    int gi, levels[2] = {HPJ_PATHS_BEST, HPJ_PATHS_REFERENCE};
    CHECK(w != NULL);
    hpj_rng_seed(&r, 55);
    for (gi = 0; gi < 120; ++gi) {
        int32_t n = 20 + gi * 3 % 180, m = 3 * n, i, *u, *v, *p0, *p1;
        int64_t cut0, cut1;
        hpj_graph_owned g;
        u = (int32_t *)malloc(sizeof(int32_t) * (size_t)m);
        v = (int32_t *)malloc(sizeof(int32_t) * (size_t)m);
        p0 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        p1 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        for (i = 0; i < m; ++i) {
            u[i] = (int32_t)hpj_rng_below(&r, (uint32_t)n);
            v[i] = (int32_t)((u[i] + 1 + (int32_t)hpj_rng_below(&r, 9)) % n);
        }
        CHECK_OK(hpj_graph_from_edges(n, m, u, v, NULL, &g));
        hpj_set_paths(HPJ_PATHS_REFERENCE);
        CHECK_OK(hpj_partition(&g.g, 2 + gi % 7, NULL, NULL, p0, &cut0));
        hpj_set_paths(levels[gi % 2]);
        CHECK_OK(hpj_partition(&g.g, 2 + gi % 7, NULL, w, p1, &cut1));
        hpj_set_paths(HPJ_PATHS_BEST);
        CHECK_MSG(cut0 == cut1 && memcmp(p0, p1, sizeof(int32_t) * (size_t)n) == 0,
                  "graph %d (%d nodes): the partition through the workspace differs", gi, n);
        hpj_graph_owned_free(&g);
        free(u); free(v); free(p0); free(p1);
    }
    hpj_part_work_free(w);
}

const test_case reading_tests[] = {
    {"reading.gine_shared_paths", test_gine_shared_paths},
    {"reading.part_work_paths", test_part_work_paths},
};
const int reading_tests_count = (int)(sizeof reading_tests / sizeof reading_tests[0]);
