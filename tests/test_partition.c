/* Tests of the partition module: invariants on many random graphs, known
   answers, edge cases, weights, determinism, bad input, the dataset path. */
#include "test.h"
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- helpers ---- */

/* Edge-list builder (duplicates and self-loops are dropped by the core). */
typedef struct edges {
    int32_t *u, *v, *w;
    int64_t m, cap;
} edges;

static void e_add(edges *e, int32_t a, int32_t b, int32_t w) {
    if (e->m == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->u = (int32_t *)realloc(e->u, sizeof(int32_t) * (size_t)e->cap);
        e->v = (int32_t *)realloc(e->v, sizeof(int32_t) * (size_t)e->cap);
        e->w = (int32_t *)realloc(e->w, sizeof(int32_t) * (size_t)e->cap);
    }
    e->u[e->m] = a;
    e->v[e->m] = b;
    e->w[e->m] = w;
    e->m++;
}

static void e_free(edges *e) {
    free(e->u);
    free(e->v);
    free(e->w);
    memset(e, 0, sizeof(*e));
}

static int build(int32_t n, edges *e, int weighted, hpj_graph_owned *g) {
    return hpj_graph_from_edges(n, e->m, e->u, e->v, weighted ? e->w : NULL, g);
}

/* One workspace shared by every test: results must not depend on it. */
static hpj_part_work *shared_work(void) {
    static hpj_part_work *w;
    if (!w) w = hpj_part_work_new();
    return w;
}

/* hpj_partition through the shared workspace, then the stats of the
   result (stats may be NULL); also checks that the reported cut equals
   hpj_partition_cut and hpj_partition_evaluate's. */
static hpj_status run_part(const hpj_graph *g, int32_t k, const hpj_part_options *o, int32_t *part,
                           hpj_partition_stats *stats) {
    hpj_partition_stats st;
    int64_t cut = -5;
    hpj_status s = hpj_partition(g, k, o, shared_work(), part, &cut);
    if (s != HPJ_OK) return s;
    if ((s = hpj_partition_evaluate(g, k, part, &st)) != HPJ_OK) return s;
    if (cut != st.edgecut || cut != hpj_partition_cut(g, part)) {
        test_report(__FILE__, __LINE__, "n=%d k=%d: edgecut %lld, evaluate %lld, partition_cut %lld", g->n, k,
                    (long long)cut, (long long)st.edgecut, (long long)hpj_partition_cut(g, part));
        return HPJ_ERR_NUMERIC;
    }
    if (stats) *stats = st;
    return HPJ_OK;
}

/* Independent recount: cut, max part weight, non-empty parts; -1 cut if an
   id is out of range. */
static long long recount(const hpj_graph *g, int32_t k, const int32_t *part, long long *maxw, int *nonempty) {
    long long cut = 0, *pw = (long long *)calloc((size_t)k, sizeof(long long));
    int *cnt = (int *)calloc((size_t)k, sizeof(int));
    int32_t v, i;
    *maxw = 0;
    *nonempty = 0;
    for (v = 0; v < g->n; ++v) {
        if (part[v] < 0 || part[v] >= k) { free(pw); free(cnt); return -1; }
        pw[part[v]] += g->vwgt ? g->vwgt[v] : 1;
        cnt[part[v]]++;
    }
    for (v = 0; v < g->n; ++v)
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i)
            if (g->col[i] > v && part[g->col[i]] != part[v]) cut += g->ewgt ? g->ewgt[i] : 1;
    for (i = 0; i < k; ++i) {
        if (pw[i] > *maxw) *maxw = pw[i];
        *nonempty += cnt[i] > 0;
    }
    free(pw);
    free(cnt);
    return cut;
}

/* Partitions g, checks every invariant; returns the cut (or -1 after a
   failed CHECK, which the caller turns into a return via test_failed). */
static long long check_partition(const hpj_graph *g, int32_t k, int method, uint64_t seed,
                                 int check_balance, int32_t *part) {
    hpj_part_options o;
    hpj_partition_stats st;
    long long cut, maxw, W = 0, bound;
    int nonempty;
    int32_t v, kk = k < g->n ? k : g->n;
    hpj_part_options_default(&o);
    o.method = method;
    o.seed = seed;
    if (run_part(g, k, &o, part, &st) != HPJ_OK) {
        test_report(__FILE__, __LINE__, "partition_run(n=%d, k=%d) failed: %s", g->n, k, hpj_last_error());
        return -1;
    }
    cut = recount(g, k, part, &maxw, &nonempty);
    if (cut < 0) {
        test_report(__FILE__, __LINE__, "n=%d k=%d: a part id is outside 0..%d", g->n, k, k - 1);
        return -1;
    }
    for (v = 0; v < g->n; ++v) {
        W += g->vwgt ? g->vwgt[v] : 1;
        if (part[v] >= kk) {
            test_report(__FILE__, __LINE__, "n=%d k=%d: vertex %d in part %d >= min(k, n)", g->n, k, v, part[v]);
            return -1;
        }
    }
    if (nonempty != kk) {
        test_report(__FILE__, __LINE__, "n=%d k=%d method=%d: %d non-empty parts, expected %d", g->n, k, (int)method,
                    nonempty, kk);
        return -1;
    }
    if (st.edgecut != cut || st.nonempty != nonempty || st.max_part_weight != maxw || st.total_weight != W) {
        test_report(__FILE__, __LINE__, "stats disagree with recount: cut %lld/%lld nonempty %d/%d max %lld/%lld",
                    (long long)st.edgecut, cut, st.nonempty, nonempty, (long long)st.max_part_weight, maxw);
        return -1;
    }
    if (check_balance && kk > 1 && kk < g->n) {
        long long fl = (long long)(1.03 * (double)W / kk), ce = (W + kk - 1) / kk;
        bound = fl > ce ? fl : ce;
        if (maxw > bound) {
            test_report(__FILE__, __LINE__, "n=%d k=%d method=%d: max part weight %lld > bound %lld", g->n, k,
                        (int)method, maxw, bound);
            return -1;
        }
    }
    return cut;
}

static void make_random(hpj_rng *r, int32_t n, int kind, edges *e) {
    int32_t i, j;
    e->m = 0;
    switch (kind) {
    case 0: /* sparse random, possibly disconnected */
        for (i = 0; i < n + n / 2; ++i) e_add(e, (int32_t)hpj_rng_below(r, (uint32_t)n), (int32_t)hpj_rng_below(r, (uint32_t)n), 1);
        break;
    case 1: /* local chain with short extra edges (molecule-like) */
        for (i = 1; i < n; ++i) e_add(e, i, i - 1 - (int32_t)hpj_rng_below(r, (uint32_t)(i < 3 ? i : 3)), 1);
        for (i = 0; i + 3 < n; i += 2) e_add(e, i, i + 2 + (int32_t)hpj_rng_below(r, 2), 1);
        break;
    case 2: /* dense random */
        for (i = 0; i < n; ++i)
            for (j = i + 1; j < n; ++j)
                if (hpj_rng_below(r, 4) == 0) e_add(e, i, j, 1);
        break;
    default: /* several components plus isolated vertices */
        for (i = 0; i + 1 < n; ++i)
            if (i % 7 != 6 && i % 11 != 0) e_add(e, i, i + 1, 1);
        break;
    }
}

/* ---- tests ---- */

static void test_invariants_random(void) {
    hpj_rng r;
    int t;
    hpj_rng_seed(&r, 12345);
    for (t = 0; t < 160; ++t) {
        edges e;
        hpj_graph_owned g;
        int32_t n = 1 + (int32_t)hpj_rng_below(&r, t < 120 ? 60 : 400), *part;
        int32_t ks[6] = {1, 2, 3, 5, 8, 0}, ki;
        memset(&e, 0, sizeof e);
        make_random(&r, n, t % 4, &e);
        CHECK_OK(build(n, &e, 0, &g));
        ks[5] = n + (int32_t)hpj_rng_below(&r, 4);
        part = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        for (ki = 0; ki < 6; ++ki) {
            long long c1 = check_partition(&g.g, ks[ki], HPJ_PART_KWAY, (uint64_t)t, 1, part);
            long long c2 = c1 < 0 ? -1 : check_partition(&g.g, ks[ki], HPJ_PART_RB, (uint64_t)t, 1, part);
            if (c1 < 0 || c2 < 0) break;
        }
        free(part);
        hpj_graph_owned_free(&g);
        e_free(&e);
        if (test_failed) return;
    }
}

static void test_known_answers(void) {
    edges e;
    hpj_graph_owned g;
    int32_t part[400], i, j, m, seed;
    memset(&e, 0, sizeof e);
    /* two 6-cliques joined by one edge: cut 1 */
    for (i = 0; i < 6; ++i)
        for (j = i + 1; j < 6; ++j) { e_add(&e, i, j, 1); e_add(&e, 6 + i, 6 + j, 1); }
    e_add(&e, 2, 9, 1);
    CHECK_OK(build(12, &e, 0, &g));
    for (seed = 1; seed <= 5; ++seed) {
        CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_KWAY, (uint64_t)seed, 1, part), 1);
        CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_RB, (uint64_t)seed, 1, part), 1);
    }
    hpj_graph_owned_free(&g);
    /* a path of 31 vertices: cut 1 */
    e.m = 0;
    for (i = 0; i + 1 < 31; ++i) e_add(&e, i, i + 1, 1);
    CHECK_OK(build(31, &e, 0, &g));
    for (seed = 1; seed <= 5; ++seed) {
        CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_KWAY, (uint64_t)seed, 1, part), 1);
        CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_RB, (uint64_t)seed, 1, part), 1);
    }
    hpj_graph_owned_free(&g);
    /* m x m grids at K = 2: cut m. Up to 10 x 10 every single run finds
       the straight cut; beyond, one run may return a staircase (METIS's
       too: 16-23 on 16 x 16), so the larger grids use ncuts = 8. */
    for (m = 2; m <= 20; m += 2) {
        hpj_part_options o;
        hpj_partition_stats st;
        int meth;
        if (m > 10 && m != 16 && m != 20) continue;
        e.m = 0;
        for (i = 0; i < m; ++i)
            for (j = 0; j < m; ++j) {
                if (j + 1 < m) e_add(&e, i * m + j, i * m + j + 1, 1);
                if (i + 1 < m) e_add(&e, i * m + j, (i + 1) * m + j, 1);
            }
        CHECK_OK(build(m * m, &e, 0, &g));
        for (seed = 1; seed <= 4; ++seed)
            for (meth = 0; meth < 2; ++meth) {
                hpj_part_options_default(&o);
                o.method = meth ? HPJ_PART_RB : HPJ_PART_KWAY;
                o.seed = (uint64_t)seed;
                o.ncuts = m > 10 ? 8 : 1;
                CHECK_OK(run_part(&g.g, 2, &o, part, &st));
                CHECK_MSG(st.edgecut == m, "%d x %d grid, method %d, seed %d: cut %lld, expected %d", m, m, meth,
                          seed, (long long)st.edgecut, m);
                CHECK_EQ_INT(st.max_part_weight, m * m / 2);
            }
        hpj_graph_owned_free(&g);
    }
    /* a 12-clique into 3 parts of 4: 66 - 3 x 6 = 48 edges cut */
    e.m = 0;
    for (i = 0; i < 12; ++i)
        for (j = i + 1; j < 12; ++j) e_add(&e, i, j, 1);
    CHECK_OK(build(12, &e, 0, &g));
    CHECK_EQ_INT(check_partition(&g.g, 3, HPJ_PART_KWAY, 1, 1, part), 48);
    CHECK_EQ_INT(check_partition(&g.g, 3, HPJ_PART_RB, 1, 1, part), 48);
    hpj_graph_owned_free(&g);
    e_free(&e);
}

static void test_edge_cases(void) {
    edges e;
    hpj_graph_owned g;
    hpj_graph empty;
    hpj_partition_stats st;
    int32_t part[64], i, k;
    int meth;
    memset(&e, 0, sizeof e);
    memset(&empty, 0, sizeof empty);
    /* n = 0 */
    CHECK_OK(run_part(&empty, 4, NULL, NULL, &st));
    CHECK_EQ_INT(st.nonempty, 0);
    /* n = 1 */
    CHECK_OK(build(1, &e, 0, &g));
    for (k = 1; k <= 3; ++k) {
        part[0] = 77;
        CHECK_OK(run_part(&g.g, k, NULL, part, &st));
        CHECK_EQ_INT(part[0], 0);
        CHECK_EQ_INT(st.nonempty, 1);
    }
    hpj_graph_owned_free(&g);
    for (meth = 0; meth < 2; ++meth) {
        int M = meth ? HPJ_PART_RB : HPJ_PART_KWAY;
        /* no edges: balanced, cut 0 */
        e.m = 0;
        CHECK_OK(build(10, &e, 0, &g));
        CHECK_EQ_INT(check_partition(&g.g, 3, M, 1, 1, part), 0);
        CHECK_EQ_INT(check_partition(&g.g, 10, M, 1, 1, part), 0);
        hpj_graph_owned_free(&g);
        /* a star of 25 vertices */
        e.m = 0;
        for (i = 1; i < 25; ++i) e_add(&e, 0, i, 1);
        CHECK_OK(build(25, &e, 0, &g));
        for (k = 2; k <= 8; k *= 2) CHECK(check_partition(&g.g, k, M, 3, 1, part) >= 0);
        hpj_graph_owned_free(&g);
        /* a binary tree of 31 vertices */
        e.m = 0;
        for (i = 1; i < 31; ++i) e_add(&e, i, (i - 1) / 2, 1);
        CHECK_OK(build(31, &e, 0, &g));
        for (k = 2; k <= 16; k *= 2) CHECK(check_partition(&g.g, k, M, 5, 1, part) >= 0);
        CHECK_EQ_INT(check_partition(&g.g, 2, M, 5, 1, part), 1); /* 15 + root | 15 */
        hpj_graph_owned_free(&g);
        /* two triangles and 3 isolated vertices, k up to and past n */
        e.m = 0;
        e_add(&e, 0, 1, 1); e_add(&e, 1, 2, 1); e_add(&e, 2, 0, 1);
        e_add(&e, 3, 4, 1); e_add(&e, 4, 5, 1); e_add(&e, 5, 3, 1);
        CHECK_OK(build(9, &e, 0, &g));
        CHECK_EQ_INT(check_partition(&g.g, 2, M, 1, 0, part), 0);
        CHECK_EQ_INT(check_partition(&g.g, 3, M, 1, 1, part), 0);
        for (k = 4; k <= 12; ++k) CHECK(check_partition(&g.g, k, M, 1, 1, part) >= 0);
        /* k >= n: vertex v is part v */
        CHECK_OK(run_part(&g.g, 12, NULL, part, NULL));
        for (i = 0; i < 9; ++i) CHECK_EQ_INT(part[i], i);
        /* k = 1: everything in part 0 */
        CHECK_OK(run_part(&g.g, 1, NULL, part, &st));
        for (i = 0; i < 9; ++i) CHECK_EQ_INT(part[i], 0);
        CHECK_EQ_INT(st.edgecut, 0);
        hpj_graph_owned_free(&g);
    }
    e_free(&e);
}

static void test_self_loops_ignored(void) {
    /* a hand-built CSR: path 0-1-2-3 with self-loops on 1 and 3 */
    static const int32_t rowptr[5] = {0, 1, 4, 6, 8};
    static const int32_t col[8] = {1, 0, 1, 2, 1, 3, 2, 3};
    static const int32_t rowptr0[5] = {0, 1, 3, 5, 6};
    static const int32_t col0[6] = {1, 0, 2, 1, 3, 2};
    hpj_graph g, g0;
    hpj_partition_stats st, st0;
    int32_t part[4], part0[4], i;
    memset(&g, 0, sizeof g);
    g.n = 4; g.nnz = 8; g.rowptr = rowptr; g.col = col;
    g0 = g;
    g0.nnz = 6; g0.rowptr = rowptr0; g0.col = col0;
    CHECK_OK(run_part(&g, 2, NULL, part, &st));
    CHECK_OK(run_part(&g0, 2, NULL, part0, &st0));
    CHECK_EQ_INT(st.edgecut, 1);
    for (i = 0; i < 4; ++i) CHECK_EQ_INT(part[i], part0[i]);
}

static void test_weights(void) {
    edges e;
    hpj_graph_owned g;
    hpj_graph gw;
    int32_t part[16], vw[8], i;
    long long maxw;
    int ne;
    memset(&e, 0, sizeof e);
    /* path a-b-c-d with edge weights 5, 1, 5: the light edge is cut */
    e_add(&e, 0, 1, 5); e_add(&e, 1, 2, 1); e_add(&e, 2, 3, 5);
    CHECK_OK(build(4, &e, 1, &g));
    CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_KWAY, 1, 1, part), 1);
    CHECK_EQ_INT(check_partition(&g.g, 2, HPJ_PART_RB, 1, 1, part), 1);
    hpj_graph_owned_free(&g);
    /* a ring of 8 with vertex weights 7,1,1,1,1,1,1,1 (W = 14) at K = 2:
       the heavy vertex's part holds nothing else */
    e.m = 0;
    for (i = 0; i < 8; ++i) e_add(&e, i, (i + 1) % 8, 1);
    CHECK_OK(build(8, &e, 0, &g));
    gw = g.g;
    for (i = 0; i < 8; ++i) vw[i] = i == 0 ? 7 : 1;
    gw.vwgt = vw;
    CHECK_EQ_INT(check_partition(&gw, 2, HPJ_PART_KWAY, 1, 1, part), 2);
    CHECK_EQ_INT(check_partition(&gw, 2, HPJ_PART_RB, 1, 1, part), 2);
    CHECK(recount(&gw, 2, part, &maxw, &ne) == 2 && maxw == 7);
    /* zero vertex weights are allowed; parts still non-empty */
    for (i = 0; i < 8; ++i) vw[i] = i % 2;
    CHECK(check_partition(&gw, 4, HPJ_PART_KWAY, 1, 0, part) >= 0);
    hpj_graph_owned_free(&g);
    e_free(&e);
}

static void test_deterministic(void) {
    edges e;
    hpj_graph_owned g;
    hpj_rng r;
    int32_t n = 3000, *a, *b, i, k;
    int meth, differ = 0;
    memset(&e, 0, sizeof e);
    hpj_rng_seed(&r, 7);
    make_random(&r, n, 1, &e);
    CHECK_OK(build(n, &e, 0, &g));
    a = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    b = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    for (meth = 0; meth < 2; ++meth)
        for (k = 2; k <= 32; k *= 4) {
            hpj_part_options o;
            hpj_part_options_default(&o);
            o.method = meth ? HPJ_PART_RB : HPJ_PART_KWAY;
            o.seed = 99;
            CHECK_OK(run_part(&g.g, k, &o, a, NULL));
            CHECK_OK(run_part(&g.g, k, &o, b, NULL));
            CHECK(memcmp(a, b, sizeof(int32_t) * (size_t)n) == 0);
            o.seed = 100;
            CHECK_OK(run_part(&g.g, k, &o, b, NULL));
            for (i = 0; i < n; ++i) differ += a[i] != b[i];
        }
    CHECK_MSG(differ > 0, "seeds 99 and 100 gave identical partitions everywhere");
    free(a);
    free(b);
    hpj_graph_owned_free(&g);
    e_free(&e);
}

static void test_ncuts_and_options(void) {
    edges e;
    hpj_graph_owned g;
    hpj_rng r;
    hpj_part_options o;
    hpj_partition_stats s1, s4;
    int32_t n = 2000, *p;
    memset(&e, 0, sizeof e);
    hpj_rng_seed(&r, 3);
    make_random(&r, n, 0, &e);
    CHECK_OK(build(n, &e, 0, &g));
    p = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    hpj_part_options_default(&o);
    CHECK_OK(run_part(&g.g, 8, &o, p, &s1));
    o.ncuts = 4; /* the first run is one of the four: never worse */
    CHECK_OK(run_part(&g.g, 8, &o, p, &s4));
    CHECK(s4.edgecut <= s1.edgecut);
    /* a looser bound is honoured too */
    o.ncuts = 1;
    o.ufactor = 1.2f;
    CHECK_OK(run_part(&g.g, 8, &o, p, &s1));
    CHECK(s1.max_part_weight <= (int64_t)(1.2 * n / 8));
    free(p);
    hpj_graph_owned_free(&g);
    e_free(&e);
}

static void test_bad_input(void) {
    static const int32_t rowptr[3] = {0, 1, 2};
    static const int32_t col_bad[2] = {1, 5};
    static const int32_t col[2] = {1, 0};
    static const int32_t ew_bad[2] = {1, 0};
    hpj_graph g;
    hpj_part_options o;
    hpj_partition_stats st;
    int32_t part[2] = {-7, -7};
    memset(&g, 0, sizeof g);
    g.n = 2; g.nnz = 2; g.rowptr = rowptr; g.col = col;
    CHECK(run_part(&g, 0, NULL, part, NULL) == HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "k=0") != NULL);
    CHECK(run_part(&g, -3, NULL, part, NULL) == HPJ_ERR_INPUT);
    hpj_part_options_default(&o);
    o.ufactor = 0.9f;
    CHECK(run_part(&g, 2, &o, part, NULL) == HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "ufactor") != NULL);
    hpj_part_options_default(&o);
    o.method = 7;
    CHECK(run_part(&g, 2, &o, part, NULL) == HPJ_ERR_INPUT);
    hpj_part_options_default(&o);
    o.ncuts = 0;
    CHECK(run_part(&g, 2, &o, part, NULL) == HPJ_ERR_INPUT);
    g.col = col_bad;
    CHECK(run_part(&g, 2, NULL, part, NULL) == HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "out of range") != NULL);
    g.col = col;
    g.ewgt = ew_bad;
    CHECK(run_part(&g, 2, NULL, part, NULL) == HPJ_ERR_INPUT);
    CHECK_EQ_INT(part[0], -7); /* untouched on failure */
    CHECK_EQ_INT(part[1], -7);
    g.ewgt = NULL;
    part[0] = 5;
    part[1] = 0;
    CHECK(hpj_partition_evaluate(&g, 2, part, &st) == HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "part 5") != NULL);
}

static void test_evaluate_and_write(void) {
    edges e;
    hpj_graph_owned g;
    hpj_partition_stats st;
    int32_t part[5] = {0, 0, 1, 1, 1};
    const char *path = test_tmpfile("part");
    FILE *f;
    char buf[64];
    size_t got;
    memset(&e, 0, sizeof e);
    e_add(&e, 0, 1, 2); e_add(&e, 1, 2, 3); e_add(&e, 2, 3, 1); e_add(&e, 3, 4, 1); e_add(&e, 4, 0, 4);
    CHECK_OK(build(5, &e, 1, &g));
    CHECK_OK(hpj_partition_evaluate(&g.g, 3, part, &st));
    CHECK_EQ_INT(st.edgecut, 7); /* 1-2 (3) + 4-0 (4) */
    CHECK_EQ_INT(st.max_part_weight, 3);
    CHECK_EQ_INT(st.nonempty, 2);
    CHECK_NEAR(st.imbalance, 3.0 * 3 / 5, 1e-12, 0);
    hpj_graph_owned_free(&g);
    e_free(&e);
    CHECK_OK(hpj_partition_write(path, part, 5));
    f = fopen(path, "rb");
    CHECK(f != NULL);
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    remove(path);
    buf[got] = 0;
    CHECK(strcmp(buf, "0\n0\n1\n1\n1\n") == 0);
}

static void test_dataset_fast_path(void) {
    const char *dir = test_dataset("PROTEINS");
    hpj_dataset ds;
    int32_t K[4] = {2, 4, 8, 16}, L = 4, *part, *part1, *np, gi, l, n1 = 0;
    int64_t N;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    N = ds.num_nodes;
    part = (int32_t *)malloc(sizeof(int32_t) * (size_t)(L * N));
    part1 = (int32_t *)malloc(sizeof(int32_t) * (size_t)(L * N));
    np = (int32_t *)malloc(sizeof(int32_t) * (size_t)(L * ds.num_graphs));
    CHECK_OK(hpj_partition_dataset(&ds, K, L, NULL, part, np));
    for (gi = 0; gi < ds.num_graphs; ++gi) {
        hpj_graph g = hpj_dataset_graph(&ds, gi);
        for (l = 0; l < L; ++l) {
            long long maxw;
            int ne;
            int32_t kk = K[l] < g.n ? K[l] : g.n;
            CHECK(recount(&g, kk > 0 ? kk : 1, part + l * N + ds.node_ptr[gi], &maxw, &ne) >= 0);
            CHECK_EQ_INT(np[gi * L + l], kk);
            CHECK_EQ_INT(ne, kk);
        }
    }
#ifdef _OPENMP
    {
        /* one thread: bit-identical */
        int nt = omp_get_max_threads();
        omp_set_num_threads(1);
        CHECK_OK(hpj_partition_dataset(&ds, K, L, NULL, part1, NULL));
        omp_set_num_threads(nt);
        CHECK(memcmp(part, part1, sizeof(int32_t) * (size_t)(L * N)) == 0);
    }
#endif
    /* graph g at resolution l equals a single call with the documented seed */
    for (gi = 0; gi < ds.num_graphs; gi += 97) {
        hpj_graph g = hpj_dataset_graph(&ds, gi);
        for (l = 0; l < L; ++l) {
            hpj_part_options o;
            hpj_rng r = hpj_rng_stream(1, (uint64_t)l, (uint64_t)gi);
            hpj_part_options_default(&o);
            o.seed = hpj_rng_u64(&r);
            CHECK_OK(run_part(&g, K[l], &o, part1, NULL));
            CHECK(memcmp(part1, part + l * N + ds.node_ptr[gi], sizeof(int32_t) * (size_t)g.n) == 0);
            ++n1;
        }
    }
    CHECK(n1 > 0);
    K[1] = 0;
    CHECK(hpj_partition_dataset(&ds, K, L, NULL, part, NULL) == HPJ_ERR_INPUT);
    free(part);
    free(part1);
    free(np);
    hpj_dataset_free(&ds);
}


static void test_workspace(void) {
    /* the same partition with no workspace, a fresh one and one that has
       served graphs of other sizes; the compatibility call agrees too */
    edges e;
    hpj_graph_owned g, h;
    hpj_rng r;
    hpj_part_work *w = hpj_part_work_new();
    int32_t *a, *b, *c, n = 700, k;
    int64_t ca, cb, cc;
    int meth;
    CHECK(w != NULL);
    memset(&e, 0, sizeof e);
    hpj_rng_seed(&r, 11);
    make_random(&r, n, 1, &e);
    CHECK_OK(build(n, &e, 0, &g));
    make_random(&r, 90, 2, &e);
    CHECK_OK(build(90, &e, 0, &h));
    a = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    b = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    c = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    for (meth = 0; meth < 2; ++meth)
        for (k = 2; k <= 64; k *= 4) {
            hpj_part_options o;
            hpj_part_options_default(&o);
            o.method = meth;
            o.seed = 5;
            CHECK_OK(hpj_partition(&g.g, k, &o, NULL, a, &ca));
            CHECK_OK(hpj_partition(&g.g, k, &o, w, b, &cb));
            CHECK_OK(hpj_partition(&h.g, k, &o, w, c, &cc)); /* another size in between */
            CHECK_OK(hpj_partition(&g.g, k, &o, w, c, &cc));
            CHECK(ca == cb && cb == cc);
            CHECK(memcmp(a, b, sizeof(int32_t) * (size_t)n) == 0);
            CHECK(memcmp(a, c, sizeof(int32_t) * (size_t)n) == 0);
        }
    hpj_part_work_free(w);
    hpj_part_work_free(NULL);
    free(a);
    free(b);
    free(c);
    hpj_graph_owned_free(&g);
    hpj_graph_owned_free(&h);
    e_free(&e);
}

static void test_cut_and_imbalance(void) {
    edges e;
    hpj_graph_owned g;
    hpj_graph gw;
    int32_t part[6] = {0, 0, 1, 1, 2, 2}, vw[6] = {1, 2, 3, 0, 0, 6}, bad[6] = {0, 0, 1, 1, 2, 3};
    memset(&e, 0, sizeof e);
    /* a 6-ring with edge weights 1..6 */
    e_add(&e, 0, 1, 1); e_add(&e, 1, 2, 2); e_add(&e, 2, 3, 3);
    e_add(&e, 3, 4, 4); e_add(&e, 4, 5, 5); e_add(&e, 5, 0, 6);
    CHECK_OK(build(6, &e, 1, &g));
    CHECK_EQ_INT(hpj_partition_cut(&g.g, part), 2 + 4 + 6);
    CHECK_NEAR(hpj_partition_imbalance(&g.g, 3, part), 1.0, 0, 1e-12);
    CHECK_NEAR(hpj_partition_imbalance(&g.g, 4, part), 2.0 * 4 / 6, 0, 1e-12);
    gw = g.g;
    gw.vwgt = vw; /* part weights 3, 3, 6 of 12 */
    CHECK_NEAR(hpj_partition_imbalance(&gw, 3, part), 6.0 * 3 / 12, 0, 1e-12);
    CHECK_EQ_INT(hpj_partition_cut(NULL, part), -1);
    CHECK_EQ_INT(hpj_partition_cut(&g.g, NULL), -1);
    CHECK(hpj_partition_imbalance(&g.g, 3, bad) < 0);  /* id 3 outside 0..2 */
    CHECK(hpj_partition_imbalance(&g.g, 0, part) < 0);
    hpj_graph_owned_free(&g);
    e_free(&e);
}

static void test_fast_equals_reference(void) {
    /* the fast part (cached blocks, hashed contraction, projection that
       rescans only the old boundary) gives the reference's partitions, bit
       for bit: both methods, weighted and unweighted, self-loops, graphs
       large enough for several coarsening levels */
    edges e;
    hpj_graph_owned g;
    hpj_graph gw;
    hpj_rng r;
    int32_t *a, *b, *vw, n, v, k;
    int64_t ca, cb;
    int kind, meth, weighted, level = hpj_paths();
    if (level == HPJ_PATHS_REFERENCE) SKIP("built with -DHPJ_REFERENCE (or paths set to it): no fast level to compare");
    memset(&e, 0, sizeof e);
    hpj_rng_seed(&r, 23);
    for (kind = 0; kind < 4; ++kind)
        for (weighted = 0; weighted < 2; ++weighted) {
            n = kind == 2 ? 150 : 1500 + 700 * kind;
            make_random(&r, n, kind, &e);
            for (v = 0; v < (int32_t)e.m; ++v) e.w[v] = 1 + (int32_t)hpj_rng_below(&r, 9);
            e_add(&e, 3, 3, 1); /* a self-loop */
            CHECK_OK(build(n, &e, weighted, &g));
            gw = g.g;
            a = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            b = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            vw = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            for (v = 0; v < n; ++v) vw[v] = 1 + (int32_t)hpj_rng_below(&r, 4);
            if (weighted) gw.vwgt = vw;
            for (meth = 0; meth < 2; ++meth)
                for (k = 2; k <= 40; k = 3 * k - 1) {
                    hpj_part_options o;
                    hpj_status sa, sb;
                    hpj_part_options_default(&o);
                    o.method = meth;
                    o.seed = (uint64_t)(kind + 7 * k);
                    o.ncuts = k == 5 ? 2 : 1;
                    hpj_set_paths(HPJ_PATHS_REFERENCE);
                    sa = hpj_partition(&gw, k, &o, shared_work(), a, &ca);
                    hpj_set_paths(level);
                    sb = hpj_partition(&gw, k, &o, shared_work(), b, &cb);
                    CHECK_OK(sa);
                    CHECK_OK(sb);
                    CHECK_EQ_INT(ca, cb);
                    CHECK(memcmp(a, b, sizeof(int32_t) * (size_t)n) == 0);
                }
            free(a);
            free(b);
            free(vw);
            hpj_graph_owned_free(&g);
        }
    e_free(&e);
}

const test_case partition_tests[] = {
    {"partition.invariants_random", test_invariants_random},
    {"partition.known_answers", test_known_answers},
    {"partition.edge_cases", test_edge_cases},
    {"partition.self_loops_ignored", test_self_loops_ignored},
    {"partition.weights", test_weights},
    {"partition.deterministic", test_deterministic},
    {"partition.ncuts_and_options", test_ncuts_and_options},
    {"partition.bad_input", test_bad_input},
    {"partition.evaluate_and_write", test_evaluate_and_write},
    {"partition.dataset_fast_path", test_dataset_fast_path},
    {"partition.workspace", test_workspace},
    {"partition.cut_and_imbalance", test_cut_and_imbalance},
    {"partition.fast_equals_reference", test_fast_equals_reference},
};
const int partition_tests_count = (int)(sizeof partition_tests / sizeof partition_tests[0]);
