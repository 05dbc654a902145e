/* Tests of the tokenizer, the HP-JEPA model, its training loop, embeddings
   and checkpoints. */
#include "test.h"
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif


/* Dense reference of diag((D^-1 A)^k). */
static void rwse_dense(const hpj_graph *g, int K, double *out) {
    int n = g->n, v, k, i, j;
    double *M = (double *)calloc((size_t)n * n, sizeof(double)), *P = (double *)calloc((size_t)n * n, sizeof(double));
    double *Q = (double *)calloc((size_t)n * n, sizeof(double));
    for (v = 0; v < n; ++v) {
        int d = g->rowptr[v + 1] - g->rowptr[v];
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) M[(size_t)v * n + g->col[i]] = 1.0 / d;
    }
    memcpy(P, M, sizeof(double) * (size_t)n * n);
    for (k = 0; k < K; ++k) {
        for (v = 0; v < n; ++v) out[(size_t)v * K + k] = P[(size_t)v * n + v];
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) {
                double s = 0;
                for (v = 0; v < n; ++v) s += P[(size_t)i * n + v] * M[(size_t)v * n + j];
                Q[(size_t)i * n + j] = s;
            }
        memcpy(P, Q, sizeof(double) * (size_t)n * n);
    }
    free(M); free(P); free(Q);
}

static void test_rwse_known(void) {
    /* 6-cycle: return after k steps = (# of +-1 walks summing to 0 mod 6) / 2^k:
       k=2: 2/4, k=4: 6/16, k=6: (20+2)/64; odd k: 0 */
    int32_t u[6] = {0, 1, 2, 3, 4, 5}, v[6] = {1, 2, 3, 4, 5, 0};
    hpj_graph_owned g;
    float rw[6 * 6];
    void *sc = malloc(hpj_rwse_scratch_bytes(6));
    CHECK_OK(hpj_graph_from_edges(6, 6, u, v, NULL, &g));
    hpj_rwse(&g.g, 6, rw, sc);
    free(sc);
    CHECK_NEAR(rw[0], 0.0, 0, 1e-7);
    CHECK_NEAR(rw[1], 0.5, 0, 1e-6);
    CHECK_NEAR(rw[2], 0.0, 0, 1e-7);
    CHECK_NEAR(rw[3], 0.375, 0, 1e-6);
    CHECK_NEAR(rw[5], 0.34375, 0, 1e-6);
    CHECK_NEAR(rw[6 * 4 + 3], 0.375, 0, 1e-6);
    hpj_graph_owned_free(&g);
}

static void test_rwse_random_graphs(void) {
    int trial;
    for (trial = 0; trial < 20; ++trial) {
        hpj_rng r = hpj_rng_stream(11, (uint64_t)trial, 0);
        int n = 1 + (int)hpj_rng_below(&r, trial < 10 ? 30 : 70), m = (int)hpj_rng_below(&r, (uint32_t)(2 * n + 1)), i, K = 7;
        int32_t *u = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m + 1)), *v = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m + 1));
        hpj_graph_owned g;
        float *rw = (float *)malloc(sizeof(float) * (size_t)n * K);
        void *sc = malloc(hpj_rwse_scratch_bytes(n));
        double *ref = (double *)malloc(sizeof(double) * (size_t)n * K);
        for (i = 0; i < m; ++i) { u[i] = (int32_t)hpj_rng_below(&r, (uint32_t)n); v[i] = (int32_t)hpj_rng_below(&r, (uint32_t)n); }
        CHECK_OK(hpj_graph_from_edges(n, m, u, v, NULL, &g));
        hpj_rwse(&g.g, K, rw, sc);
        rwse_dense(&g.g, K, ref);
        for (i = 0; i < n * K; ++i) CHECK_NEAR(rw[i], ref[i], 1e-4, 1e-6);
        hpj_graph_owned_free(&g);
        free(u); free(v); free(rw); free(sc); free(ref);
    }
}

/* CSR entries of g between nodes of the ascending list (len entries),
   by binary search: the brute-force count of a patch's induced edges. */
static int32_t induced_edges(const hpj_graph *g, const int32_t *list, int64_t len) {
    int64_t j;
    int32_t ne = 0, i;
    for (j = 0; j < len; ++j)
        for (i = g->rowptr[list[j]]; i < g->rowptr[list[j] + 1]; ++i) {
            int64_t lo = 0, hi = len;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (list[mid] < g->col[i]) lo = mid + 1;
                else hi = mid;
            }
            ne += lo < len && list[lo] == g->col[i];
        }
    return ne;
}

static void test_tokens_invariants(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_tok_options o;
    hpj_tokens tk;
    float *rw;
    int32_t g;
    int l;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    hpj_tok_options_default(&o);
    o.L = 5; /* 2..32: 32 > 2n is inactive for small graphs, 16 >= n for many */
    o.rw_dim = 4;
    o.edge_drop = 0.3f;
    o.epoch = 3;
    rw = (float *)malloc(sizeof(float) * (size_t)ds.num_nodes * 4);
    CHECK_OK(hpj_dataset_rwse(&ds, 4, rw));
    CHECK_OK(hpj_tokens_build(&ds, rw, NULL, 0, &o, &tk));
    for (g = 0; g < ds.num_graphs; ++g) {
        hpj_graph gr = hpj_dataset_graph(&ds, g);
        for (l = 0; l < o.L; ++l) {
            int32_t k = tk.k[(size_t)g * o.L + l], p, K = o.K[l];
            int64_t p0 = tk.patch0[(size_t)g * o.L + l], total_core = 0;
            CHECK_EQ_INT(k, K > 2 * gr.n ? 0 : (K < gr.n ? K : gr.n));
            for (p = 0; p < k; ++p) {
                int64_t a = tk.ptr[p0 + p], b = tk.ptr[p0 + p + 1], j;
                CHECK(tk.ncore[p0 + p] >= 1); /* non-empty core region */
                CHECK(b - a >= tk.ncore[p0 + p]);
                for (j = a + 1; j < b; ++j) CHECK(tk.nodes[j - 1] < tk.nodes[j]); /* ascending, unique */
                CHECK_EQ_INT(tk.nedge[p0 + p], induced_edges(&gr, tk.nodes + a, b - a));
                total_core += tk.ncore[p0 + p];
                if (K >= gr.n) CHECK_EQ_INT(tk.ncore[p0 + p], 1); /* one node per region */
            }
            if (k) CHECK_EQ_INT(total_core, gr.n); /* core regions partition V */
        }
    }
    hpj_tokens_free(&tk);
    free(rw);
    hpj_dataset_free(&ds);
}

/* Finite-difference check of the whole loss in a random direction. The
   targets are a stop-gradient, but they move with the patch encoder's
   parameters; a tiny target_clamp holds them fixed (every m(u) lies past
   +-1e-6 and stays there under the perturbation), so the finite
   difference sees only the gradient's path (the EMA branch gets none).
   sets: NULL-terminated key, value pairs applied to the tiny config. */
static void model_gradient_case(const char *const *sets, int unlabelled_edges) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    int32_t gs[12];
    int i, l;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    if (unlabelled_edges) { /* as PROTEINS or DD: one shared edge feature */
        free(ds.edge_label);
        ds.edge_label = NULL;
    }
    test_tiny_config(&c);
    CHECK_OK(hpj_config_set(&c, "target_clamp", "1e-6"));
    for (i = 0; sets[i]; i += 2) CHECK_OK(hpj_config_set(&c, sets[i], sets[i + 1]));
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    for (i = 0; i < 12; ++i) gs[i] = i * 7;
    for (l = 1; l < 3; ++l) {
        size_t k, n = m.num_params;
        float *g = (float *)malloc(sizeof(float) * n), *v = (float *)malloc(sizeof(float) * n);
        float *p0 = (float *)malloc(sizeof(float) * n), *ema0 = (float *)malloc(sizeof(float) * m.enc_count);
        double L0, Lp, Lm, dot = 0.0, gnorm = 0.0, h = 1e-4, fd;
        hpj_rng r;
        memcpy(ema0, m.ema, sizeof(float) * m.enc_count);
        CHECK_OK(hpj_model_loss(&m, &ds, gs, 12, l, 7, &L0));
        memcpy(g, m.grads, sizeof(float) * n);
        memcpy(p0, m.params, sizeof(float) * n);
        hpj_rng_seed(&r, 3 + (uint64_t)l);
        for (k = 0; k < n; ++k) { v[k] = hpj_rng_normal(&r); dot += (double)v[k] * g[k]; gnorm += (double)g[k] * g[k]; }
        if (unlabelled_edges) { /* along the edge encoder's bias only: the shared-edge de */
            size_t e0 = (size_t)(m.p.edge_b - m.params);
            dot = gnorm = 0.0;
            for (k = 0; k < n; ++k) {
                if (k < e0 || k >= e0 + (size_t)m.D) v[k] = 0.0f;
                dot += (double)v[k] * g[k];
                gnorm += (double)v[k] * g[k] * v[k] * g[k];
            }
        }
        CHECK(gnorm > 1e-12); /* guard against an all-zero gradient */
        for (k = 0; k < n; ++k) m.params[k] = p0[k] + (float)h * v[k];
        CHECK_OK(hpj_model_loss(&m, &ds, gs, 12, l, 7, &Lp));
        for (k = 0; k < n; ++k) m.params[k] = p0[k] - (float)h * v[k];
        CHECK_OK(hpj_model_loss(&m, &ds, gs, 12, l, 7, &Lm));
        memcpy(m.params, p0, sizeof(float) * n);
        fd = (Lp - Lm) / (2 * h);
        CHECK_MSG(fabs(fd - dot) <= 2e-2 * fabs(dot) + 1e-4, "resolution %d: analytic %.6g vs finite difference %.6g", l + 1,
                  dot, fd);
        /* the EMA encoder is never written by the loss / gradient */
        CHECK(memcmp(ema0, m.ema, sizeof(float) * m.enc_count) == 0);
        free(g); free(v); free(p0); free(ema0);
    }
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* the reference model: GINE block with Linear_out, patch mixing, Hadamard
   target encoder */
static void test_model_gradient(void) {
    static const char *const sets[] = {"target_adj", "1", "ema_init", "independent", NULL};
    model_gradient_case(sets, 0);
}

/* the reference model with copies averaged over the patches present
   (patch_tokens = present: copy groups between the GINE layers) */
static void test_model_gradient_present(void) {
    static const char *const sets[] = {"target_adj", "1", "patch_tokens", "present", NULL};
    model_gradient_case(sets, 0);
}

/* the reference model with every patch of a graph in the step's pass
   (patch_tokens = graph: the context token's gradient flows back through
   the copies it shares with the graph's other patches) */
static void test_model_gradient_graph(void) {
    static const char *const sets[] = {"target_adj", "1", "patch_tokens", "graph", NULL};
    model_gradient_case(sets, 0);
}

/* the same model on graphs without edge labels (the shared-edge GINE) */
static void test_model_gradient_unlabelled_edges(void) {
    static const char *const sets[] = {"target_adj", "1", "ema_init", "independent", NULL};
    model_gradient_case(sets, 1);
}

/* the benchmark variant matched to the PyTorch peer: no Linear_out, no patch
   mixing, GELU FFN, 2-layer predictor */
static void test_model_gradient_peer_variant(void) {
    static const char *const sets[] = {"gnn_out_linear", "0", "patch_mixing", "0", "ffn_act", "gelu", "pred_layers", "2", NULL};
    model_gradient_case(sets, 0);
}

/* the same model on the reference path (hpj_set_paths: no input table,
   no classes of copies, every layer per copy): it keeps its own
   finite-difference check */
static void test_model_gradient_per_copy(void) {
    static const char *const sets[] = {"target_adj", "1", NULL};
    hpj_set_paths(HPJ_PATHS_REFERENCE);
    model_gradient_case(sets, 0);
    hpj_set_paths(HPJ_PATHS_BEST);
}

/* m[0] on the reference path and m[1] on the fast one (hpj_set_paths;
   the same parameters) give the same loss on graphs gs at resolution l up
   to rounding (1e-5 relative) and the same gradients (1e-4 of the
   largest); what names the case in the messages. */
static void check_same_loss_grads(hpj_model *m, const hpj_dataset *ds, const int32_t *gs, int n, int l,
                                  const char *what) {
    double L[2], gmax = 0.0, dmax = 0.0;
    size_t j;
    int k;
    for (k = 0; k < 2; ++k) {
        hpj_set_paths(k ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
        CHECK_OK(hpj_model_loss(&m[k], ds, gs, n, l, 9, &L[k]));
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    CHECK_MSG(fabs(L[0] - L[1]) <= 1e-5 * fabs(L[0]) + 1e-7, "resolution %d (%s): loss %.9g against %.9g", l + 1, what,
              L[0], L[1]);
    for (j = 0; j < m[0].num_params; ++j) {
        gmax = fmax(gmax, fabs(m[0].grads[j]));
        dmax = fmax(dmax, fabs((double)m[0].grads[j] - m[1].grads[j]));
    }
    CHECK(gmax > 0.0);
    CHECK_MSG(dmax <= 1e-4 * gmax, "resolution %d (%s): gradients differ by %.3g (max %.3g)", l + 1, what, dmax, gmax);
}

/* The fast encoder's input table (with its classes of copies) and the
   reference path compute the same loss and gradients up to rounding:
   labelled edges, unlabelled edges, and labelled edges with one-hot
   degrees; one GNN layer (no later layer reads e) and two. */
static void test_model_table_matches_per_copy(void) {
    const char *dir = test_dataset("MUTAG");
    int unl, layers, l;
    if (!dir) return;
    for (unl = 0; unl < 3; ++unl) /* labelled edges, unlabelled, labelled + one-hot degrees */
        for (layers = 1; layers <= 2; ++layers) {
            hpj_dataset ds;
            hpj_model m[2];
            int32_t gs[12];
            int i, k;
            const char *nl = layers == 1 ? "1" : "2";
            CHECK_OK(hpj_dataset_load_tu(dir, &ds));
            if (unl == 1) { free(ds.edge_label); ds.edge_label = NULL; }
            for (k = 0; k < 2; ++k) {
                hpj_config c;
                test_tiny_config(&c);
                CHECK_OK(hpj_config_set(&c, "gnn_layers", nl));
                if (unl == 2) CHECK_OK(hpj_config_set(&c, "node_degree", "3")); /* MUTAG degrees 1-4, 4 capped to 3 */
                CHECK_OK(hpj_model_init(&m[k], &c, &ds));
            }
            CHECK_EQ_INT((int)m[0].num_params, (int)m[1].num_params);
            CHECK(memcmp(m[0].params, m[1].params, sizeof(float) * m[0].num_params) == 0);
            for (i = 0; i < 12; ++i) gs[i] = i * 5 + 1;
            for (l = 0; l < 3; ++l) {
                char what[96];
                snprintf(what, sizeof what, "reference vs table, %s edges, %d layers",
                         unl == 1 ? "unlabelled" : unl ? "labelled, degrees," : "labelled", layers);
                check_same_loss_grads(m, &ds, gs, 12, l, what);
                /* the encoders' input weights get their gradient on both paths */
                CHECK(fabs(m[1].g.node_W[0]) + fabs(m[1].g.node_b[0]) > 0.0f);
                if (unl == 2) { /* the degree columns (after MUTAG's 7 labels) too */
                    CHECK_EQ_INT(m[1].F, 7 + 4);
                    CHECK(fabs(m[1].g.node_W[7]) + fabs(m[1].g.node_W[10]) > 0.0f);
                }
            }
            if (unl == 2) { /* the degree encoding survives a checkpoint round trip */
                unsigned char *buf = NULL;
                size_t len = 0;
                hpj_model back;
                CHECK_OK(hpj_model_serialize(&m[1], 0, &buf, &len));
                CHECK_OK(hpj_model_deserialize(&back, buf, len, "mem"));
                CHECK_EQ_INT(back.node_deg, 4);
                CHECK_EQ_INT(back.F, m[1].F);
                CHECK_EQ_INT(back.cfg.node_degree, 3);
                hpj_model_free(&back);
                hpj_free_buffer(buf);
            }
            hpj_model_free(&m[0]);
            hpj_model_free(&m[1]);
            hpj_dataset_free(&ds);
        }
}

/* On the fast path the first GINE layer runs once per class of equal
   copies when it has no dropout (hpj__gnn_classes): the same loss and
   gradients up to rounding as the reference path, and an epoch of pretraining
   takes fewer GEMM flops than the same epoch with dropout (which keeps the
   layer per copy; the batches are the same), on MUTAG as it is and with
   no labels at all (a constant input, as IMDB and REDDIT: the class is the
   in-patch degree). */
static void test_model_first_layer_classes(void) {
    const char *dir = test_dataset("MUTAG");
    int bare, l;
    if (!dir) return;
    for (bare = 0; bare < 2; ++bare) {
        hpj_dataset ds;
        hpj_model m[2]; /* reference, fast (classes) */
        int32_t gs[32];
        double f[2];
        int i, k;
        CHECK_OK(hpj_dataset_load_tu(dir, &ds));
        if (bare) {
            free(ds.node_label); ds.node_label = NULL;
            free(ds.edge_label); ds.edge_label = NULL;
        }
        for (i = 0; i < 32; ++i) gs[i] = i * 5 + 3;
        for (k = 0; k < 2; ++k) {
            hpj_config c;
            test_tiny_config(&c);
            CHECK_OK(hpj_model_init(&m[k], &c, &ds));
        }
        for (l = 0; l < 3; ++l)
            check_same_loss_grads(m, &ds, gs, 16, l, bare ? "reference vs classes, no labels" : "reference vs classes, labels");
        for (k = 0; k < 2; ++k) hpj_model_free(&m[k]);
        for (k = 0; k < 2; ++k) { /* one epoch without / with dropout */
            hpj_config c;
            test_tiny_config(&c);
            CHECK_OK(hpj_config_set(&c, "epochs", "1"));
            CHECK_OK(hpj_config_set(&c, "dropout", k ? "0.1" : "0"));
            CHECK_OK(hpj_model_init(&m[k], &c, &ds));
            CHECK_OK(hpj_pretrain(&m[k], &ds, gs, 32, 0, NULL, NULL));
            f[k] = hpj_model_last_flops();
            hpj_model_free(&m[k]);
        }
        if (hpj_paths() != HPJ_PATHS_REFERENCE) /* (a -DHPJ_REFERENCE build has no classes) */
            CHECK_MSG(f[0] < f[1], "%s: %.0f GEMM flops an epoch with classes, %.0f without",
                      bare ? "no labels" : "labels", f[0], f[1]);
        hpj_dataset_free(&ds);
    }
}

/* hpj_model_loss on graphs gs at resolutions 1..3 gives the same loss and
   gradient bits on 1, 2 and 3 threads (two threads take the side-by-side
   paths, three the plain team ones); what names the case. */
static void check_threads_same(hpj_model *m, const hpj_dataset *ds, const int32_t *gs, int n, const char *what) {
    float *g1 = (float *)malloc(sizeof(float) * m->num_params);
    int l, t;
    for (l = 0; l < 3 && g1; ++l) {
        double L[3];
        for (t = 0; t < 3; ++t) {
#ifdef _OPENMP
            omp_set_num_threads(t + 1);
#endif
            CHECK_OK(hpj_model_loss(m, ds, gs, n, l, 11, &L[t]));
            if (t == 0) {
                memcpy(g1, m->grads, sizeof(float) * m->num_params);
                continue;
            }
            CHECK_MSG(memcmp(&L[0], &L[t], sizeof(double)) == 0, "%s, resolution %d: loss %.17g on 1 thread, %.17g on %d",
                      what, l + 1, L[0], L[t], t + 1);
            CHECK_MSG(memcmp(g1, m->grads, sizeof(float) * m->num_params) == 0,
                      "%s, resolution %d: gradients differ between 1 and %d threads", what, l + 1, t + 1);
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    free(g1);
}

/* Without patch mixing and dropout, the fast path runs the GINE layers
   after the first once per class of equal copies in training too
   (hpj__gnn_layer_classes): the same loss and gradients up to rounding as
   the reference path, with and without node labels, two and three layers,
   with and without Linear_out; pretraining on the fast path takes fewer
   GEMM flops (the batches are the same); at d = 256 (the parallel paths of
   the row copies and BatchNorm) the same bits on 1 and 2 threads. */
static void test_model_layer_classes(void) {
    const char *dir = test_dataset("MUTAG");
    int bare, cs, l;
    if (!dir) return;
    for (bare = 0; bare < 2; ++bare)
        for (cs = 0; cs < 3; ++cs) { /* 2 layers, 3 layers, 2 layers with Linear_out */
            hpj_dataset ds;
            hpj_model m[2]; /* reference, fast */
            int32_t gs[48];
            double f[2];
            int i, k;
            char what[96];
            CHECK_OK(hpj_dataset_load_tu(dir, &ds));
            if (bare) {
                free(ds.node_label); ds.node_label = NULL;
                free(ds.edge_label); ds.edge_label = NULL;
            }
            for (i = 0; i < 48; ++i) gs[i] = (i * 7 + 2) % 188;
            for (k = 0; k < 2; ++k) {
                hpj_config c;
                test_tiny_config(&c);
                CHECK_OK(hpj_config_set(&c, "patch_mixing", "0"));
                CHECK_OK(hpj_config_set(&c, "gnn_layers", cs == 1 ? "3" : "2"));
                CHECK_OK(hpj_config_set(&c, "gnn_out_linear", cs == 2 ? "1" : "0"));
                CHECK_OK(hpj_model_init(&m[k], &c, &ds));
            }
            snprintf(what, sizeof what, "reference vs layer classes, %s, case %d", bare ? "no labels" : "labels", cs);
            for (l = 0; l < 3; ++l) check_same_loss_grads(m, &ds, gs, 48, l, what);
            for (k = 0; k < 2; ++k) {
                hpj_set_paths(k ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
                CHECK_OK(hpj_pretrain(&m[k], &ds, gs, 48, 0, NULL, NULL));
                f[k] = hpj_model_last_flops();
                hpj_model_free(&m[k]);
            }
            if (hpj_set_paths(HPJ_PATHS_BEST) != HPJ_PATHS_REFERENCE) /* (a -DHPJ_REFERENCE build has one path) */
                CHECK_MSG(f[1] < 0.97 * f[0], "%s: %.0f GEMM flops in training with layer classes, %.0f without", what, f[1],
                          f[0]);
            hpj_dataset_free(&ds);
        }
    { /* d = 256, 96 graphs: wide enough (classes x d >= HPJ__PAR_ELEMS) for
         the parallel paths of the row copies and the class-weighted
         BatchNorm; 1 and 2 threads */
        hpj_dataset ds;
        hpj_model m;
        hpj_config c;
        int32_t gs[96];
        int i;
        CHECK_OK(hpj_dataset_load_tu(dir, &ds));
        for (i = 0; i < 96; ++i) gs[i] = (i * 5) % 188;
        test_tiny_config(&c);
        CHECK_OK(hpj_config_set(&c, "patch_mixing", "0"));
        CHECK_OK(hpj_config_set(&c, "dim", "256"));
        CHECK_OK(hpj_config_set(&c, "ffn", "256"));
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        check_threads_same(&m, &ds, gs, 96, "layer classes, d = 256");
        hpj_model_free(&m);
        hpj_dataset_free(&ds);
    }
}

/* The fast encoder (input table, classes of copies) against the reference
   path (hpj_set_paths), on 64 MUTAG graphs with patch mixing (the paper config: the
   first layer on the table; patch tokens alone, and present: copy
   averaging) and without (later layers on classes too):
   the embeddings of a fresh model agree to 1e-5 of their largest value,
   and after 4 optimizer steps on each path (the runs drift apart through
   the updates) to 1e-3; each path gives the same bits on 1 and 2 threads.
   The two paths differ somewhere (the fast one is really taken). */
static void test_model_encoder_fast_vs_reference(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t gs[64];
    int mix, i;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 64; ++i) gs[i] = (i * 3) % 188;
    hpj_set_adaptive_threads(0);
    for (mix = 0; mix < 3; ++mix) { /* no mixing, mixing, mixing with copy averaging */
        size_t cells = (size_t)64 * 3 * 8, j;
        float *H[2][2][2]; /* [trained][path][threads - 1] */
        int tr, path, t, differ = 0;
        for (tr = 0; tr < 2; ++tr)
            for (path = 0; path < 2; ++path)
                for (t = 0; t < 2; ++t) {
                    hpj_model m;
                    hpj_config c;
                    H[tr][path][t] = (float *)malloc(sizeof(float) * cells);
                    test_tiny_config(&c);
                    CHECK_OK(hpj_config_set(&c, "patch_mixing", mix ? "1" : "0"));
                    CHECK_OK(hpj_config_set(&c, "patch_tokens", mix == 2 ? "present" : "alone"));
                    CHECK_OK(hpj_config_set(&c, "threads", t ? "2" : "1"));
                    hpj_set_paths(path ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
                    CHECK_OK(hpj_model_init(&m, &c, &ds));
                    if (tr) CHECK_OK(hpj_pretrain(&m, &ds, gs, 64, 4, NULL, NULL));
                    CHECK_OK(hpj_embed(&m, &ds, gs, 64, H[tr][path][t]));
                    hpj_model_free(&m);
                }
        hpj_set_paths(HPJ_PATHS_BEST);
        for (tr = 0; tr < 2; ++tr) {
            double mx = 0.0, dmax = 0.0;
            for (path = 0; path < 2; ++path)
                CHECK_MSG(memcmp(H[tr][path][0], H[tr][path][1], sizeof(float) * cells) == 0,
                          "mixing %d, %s, %s path: 1 and 2 threads differ", mix, tr ? "trained" : "fresh",
                          path ? "fast" : "reference");
            for (j = 0; j < cells; ++j) {
                mx = fmax(mx, fabs(H[tr][0][0][j]));
                dmax = fmax(dmax, fabs((double)H[tr][0][0][j] - H[tr][1][0][j]));
                differ |= H[tr][0][0][j] != H[tr][1][0][j];
            }
            CHECK(mx > 0.0);
            CHECK_MSG(dmax <= (tr ? 1e-3 : 1e-5) * mx, "mixing %d, %s: embeddings differ by %.3g (max %.3g)", mix,
                      tr ? "trained" : "fresh", dmax, mx);
        }
        if (hpj_paths() != HPJ_PATHS_REFERENCE) /* (a -DHPJ_REFERENCE build has one path) */
            CHECK_MSG(differ, "mixing %d: the reference and fast paths gave the same bits", mix);
        for (tr = 0; tr < 2; ++tr)
            for (path = 0; path < 2; ++path)
                for (t = 0; t < 2; ++t) free(H[tr][path][t]);
    }
    hpj_set_adaptive_threads(1);
    hpj_dataset_free(&ds);
}

/* The batch paths are built in parallel over the patches (hpj__path_count,
   hpj__path_fill, from 64 patches on): a list that names graphs more than
   once, apart, without patch mixing, with it, and with it and copy groups
   (patch_tokens = present, and graph), gives the same loss and gradient
   bits on 1 and 2 threads. */
static void test_model_paths_threads(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t gs[96];
    int mix, i;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 96; ++i) gs[i] = (i * 7) % 40; /* each graph two or three times, never adjacent */
    for (mix = 0; mix < 4; ++mix) {
        static const char *const what[4] = {"mixing 0", "mixing 1", "mixing 1, present", "mixing 1, graph"};
        hpj_model m;
        hpj_config c;
        test_tiny_config(&c);
        CHECK_OK(hpj_config_set(&c, "patch_mixing", mix ? "1" : "0"));
        CHECK_OK(hpj_config_set(&c, "patch_tokens", mix == 3 ? "graph" : mix == 2 ? "present" : "alone"));
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        check_threads_same(&m, &ds, gs, 96, what[mix]);
        hpj_model_free(&m);
    }
    hpj_dataset_free(&ds);
}

typedef struct loss_log { double first[HPJ_MAX_RES], last[HPJ_MAX_RES]; int epochs; } loss_log;
static void log_progress(void *u, const hpj_progress *p) {
    loss_log *lg = (loss_log *)u;
    int l;
    if (!p->epoch_done) return;
    for (l = 0; l < HPJ_MAX_RES; ++l) {
        double v = p->loss_count[l] ? p->loss[l] / (double)p->loss_count[l] : 0.0;
        if (p->epoch == 0) lg->first[l] = v;
        lg->last[l] = v;
    }
    lg->epochs++;
}

static void test_loss_decreases(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    loss_log lg;
    int32_t *gs;
    int l;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    test_tiny_config(&c);
    hpj_config_set(&c, "epochs", "5");
    hpj_config_set(&c, "dim", "16");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    gs = test_all_graphs(&ds);
    memset(&lg, 0, sizeof lg);
    CHECK_OK(hpj_pretrain(&m, &ds, gs, ds.num_graphs, 0, log_progress, &lg));
    CHECK_EQ_INT(lg.epochs, 5);
    for (l = 0; l < 3; ++l)
        CHECK_MSG(lg.last[l] < 0.7 * lg.first[l], "resolution %d: loss %.4g -> %.4g", l + 1, lg.first[l], lg.last[l]);
    free(gs);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* Trains a tiny model on MUTAG and returns its embeddings (caller frees).
   wide: d = 64 and batches of 128 graphs, so that the patch encoder's
   layers (BatchNorm, GINE, ...) have enough rows to run in parallel;
   the embedding is then 3 x 64 wide instead of 3 x 8. */
static float *train_and_embed_w(const hpj_dataset *ds, int threads, hpj_model *keep, int wide) {
    hpj_config c;
    hpj_model m;
    int32_t *gs = test_all_graphs(ds);
    float *H = (float *)malloc(sizeof(float) * (size_t)ds->num_graphs * 3 * (wide ? 64 : 8));
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    test_tiny_config(&c);
    hpj_config_set(&c, "dropout", "0.1");
    hpj_config_set(&c, "token_dropout", "0.1");
    if (wide) {
        hpj_config_set(&c, "dim", "64");
        hpj_config_set(&c, "ffn", "128");
        hpj_config_set(&c, "batch_size", "128");
        hpj_config_set(&c, "epochs", "1");
    }
    if (hpj_model_init(&m, &c, ds) || hpj_pretrain(&m, ds, gs, ds->num_graphs, 0, NULL, NULL) ||
        hpj_embed(&m, ds, gs, ds->num_graphs, H)) {
        free(H);
        H = NULL;
    }
    free(gs);
    if (keep) *keep = m; else hpj_model_free(&m);
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    return H;
}
static float *train_and_embed(const hpj_dataset *ds, int threads, hpj_model *keep) {
    return train_and_embed_w(ds, threads, keep, 0);
}

static void test_deterministic_and_threads(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    float *a, *b, *c;
    size_t n;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    n = (size_t)ds.num_graphs * 3 * 8;
    a = train_and_embed(&ds, 2, NULL);
    b = train_and_embed(&ds, 2, NULL);
    c = train_and_embed(&ds, 1, NULL);
    CHECK_MSG(a && b && c, "training failed: %s", hpj_last_error());
    CHECK_MSG(memcmp(a, b, n * sizeof(float)) == 0, "same seed gave different embeddings");
    CHECK_MSG(memcmp(a, c, n * sizeof(float)) == 0, "1 and 2 threads gave different embeddings");
    free(a); free(b); free(c);
    /* wide enough for the parallel paths of the patch encoder's layers */
    a = train_and_embed_w(&ds, 2, NULL, 1);
    c = train_and_embed_w(&ds, 1, NULL, 1);
    b = train_and_embed_w(&ds, 3, NULL, 1); /* no side-by-side pieces, 3-way tiles */
    CHECK_MSG(a && b && c, "training failed: %s", hpj_last_error());
    CHECK_MSG(a && c && memcmp(a, c, (size_t)ds.num_graphs * 3 * 64 * sizeof(float)) == 0,
              "d = 64, batch 128: 1 and 2 threads gave different embeddings");
    CHECK_MSG(b && c && memcmp(b, c, (size_t)ds.num_graphs * 3 * 64 * sizeof(float)) == 0,
              "d = 64, batch 128: 1 and 3 threads gave different embeddings");
    free(a); free(b); free(c);
    hpj_dataset_free(&ds);
}

/* The fast part (hpj_set_paths' default) and the reference part
   (HPJ_PATHS_REFERENCE) each train to the same checkpoint bits, optimizer
   state included, on 1 and 2 threads (on 2 the fast part runs the two
   paths side by side, hpj__fast_paths_side, BatchNorm running statistics
   included); and to the same model up to rounding: the fast patch
   encoder sums BatchNorm statistics over classes
   of equal node copies, in another order than the reference's rows, so
   after six steps the parameters agree to 1e-3 of the largest. A few
   steps on MUTAG (edge labels, patch mixing, patch tokens alone, decay
   only where the gradient is non-zero: W_q, W_k get none) and on PROTEINS
   (no edge labels, GELU, patch tokens present: copy averaging), with
   dropout, token dropout, weight decay and clipping. */
static void test_fast_matches_reference(void) {
    static const char *const names[3] = {"MUTAG", "PROTEINS", "MUTAG"};
    int d;
    for (d = 0; d < 3; ++d) {
        const char *dir = test_dataset(names[d]);
        hpj_dataset ds;
        unsigned char *ref[2] = {NULL, NULL};
        size_t nref[2] = {0, 0};
        float *par[2] = {NULL, NULL};
        size_t np = 0, j;
        double pmax = 0.0, dmax = 0.0;
        int32_t *gs, n;
        int t, fast;
        if (!dir) continue;
        CHECK_OK(hpj_dataset_load_tu(dir, &ds));
        gs = test_all_graphs(&ds);
        n = ds.num_graphs < 128 ? ds.num_graphs : 128;
        for (t = 1; t <= 2; ++t)
            for (fast = 0; fast < 2; ++fast) {
                hpj_config c;
                hpj_model m;
                unsigned char *buf = NULL;
                size_t len = 0;
                test_tiny_config(&c);
                hpj_config_set(&c, "dim", "32");
                hpj_config_set(&c, "ffn", "64");
                hpj_config_set(&c, "batch_size", "64");
                hpj_config_set(&c, "dropout", "0.1");
                hpj_config_set(&c, "token_dropout", "0.1");
                hpj_config_set(&c, "weight_decay", "0.01");
                hpj_config_set(&c, "clip", "1");
                if (d == 0) hpj_config_set(&c, "optimizer", "adam_active");
                if (d == 1) hpj_config_set(&c, "ffn_act", "gelu");
                if (d == 1) hpj_config_set(&c, "patch_tokens", "present");
                if (d == 2) hpj_config_set(&c, "patch_tokens", "graph");
#ifdef _OPENMP
                omp_set_num_threads(t);
#endif
                hpj_set_paths(fast ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
                CHECK_OK(hpj_model_init(&m, &c, &ds));
                CHECK_OK(hpj_pretrain(&m, &ds, gs, n, 6, NULL, NULL));
                CHECK_EQ_INT(m.step, 6);
                CHECK_OK(hpj_model_serialize(&m, 1, &buf, &len));
                if (!ref[fast]) {
                    ref[fast] = buf;
                    nref[fast] = len;
                    np = m.num_params;
                    par[fast] = (float *)malloc(sizeof(float) * np);
                    if (par[fast]) memcpy(par[fast], m.params, sizeof(float) * np);
                } else {
                    CHECK_MSG(len == nref[fast] && memcmp(buf, ref[fast], len) == 0,
                              "%s, %s: the checkpoint on 2 threads differs from the one on 1", names[d],
                              hpj_paths_name(hpj_paths()));
                    hpj_free_buffer(buf);
                }
                hpj_model_free(&m);
            }
        hpj_set_paths(HPJ_PATHS_BEST);
#ifdef _OPENMP
        omp_set_num_threads(2);
#endif
        CHECK(par[0] && par[1]);
        for (j = 0; par[0] && par[1] && j < np; ++j) {
            pmax = fmax(pmax, fabs(par[0][j]));
            dmax = fmax(dmax, fabs((double)par[0][j] - par[1][j]));
        }
        CHECK(pmax > 0.0);
        CHECK_MSG(dmax <= 1e-3 * pmax, "%s: fast and reference parameters differ by %.3g (largest %.3g)", names[d], dmax,
                  pmax);
        for (t = 0; t < 2; ++t) {
            hpj_free_buffer(ref[t]);
            free(par[t]);
        }
        free(gs);
        hpj_dataset_free(&ds);
    }
}

/* MUTAG loaded, all its graph ids, and a tiny model trained on them (kept
   in *m) with its embeddings (returned; n floats). NULL after a failed
   check (the dataset is then freed). */
static float *trained_mutag(const char *dir, hpj_dataset *ds, int32_t **gs, size_t *n, hpj_model *m) {
    float *a;
    if (hpj_dataset_load_tu(dir, ds)) {
        test_report(__FILE__, __LINE__, "%s", hpj_last_error());
        return NULL;
    }
    *gs = test_all_graphs(ds);
    *n = (size_t)ds->num_graphs * 3 * 8;
    a = train_and_embed(ds, 2, m);
    if (!a) {
        test_report(__FILE__, __LINE__, "training failed: %s", hpj_last_error());
        free(*gs);
        hpj_dataset_free(ds);
    }
    return a;
}

/* Writes the CRC of buf[0 .. len-4) into its last four bytes (little endian). */
static void put_crc(unsigned char *buf, size_t len) {
    uint32_t c = hpj_crc32(buf, len - 4);
    buf[len - 4] = (unsigned char)c; buf[len - 3] = (unsigned char)(c >> 8);
    buf[len - 2] = (unsigned char)(c >> 16); buf[len - 1] = (unsigned char)(c >> 24);
}

/* optimizer = adam_active: the online encoder sees one context token, so
   its attention's W_q, W_k and their biases get no loss gradient; coupled
   decay (adam) alone moves them, toward 0, while adam_active leaves them
   at their initial bits. W_v, which the loss reaches, moves under both. */
static void test_adam_active(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t *gs;
    int mode;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    for (mode = 0; mode < 2; ++mode) {
        hpj_config c;
        hpj_model m;
        float *q0 = NULL;
        size_t nqk, nv, j;
        double qk0 = 0.0, qk1 = 0.0;
        int i, vmoved = 0, qkmoved = 0;
        test_tiny_config(&c);
        hpj_config_set(&c, "weight_decay", "0.1");
        hpj_config_set(&c, "optimizer", mode ? "adam_active" : "adam");
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        nqk = (size_t)2 * m.D * m.D;
        nv = (size_t)m.D * m.D;
        q0 = (float *)malloc(sizeof(float) * (nqk + nv) * (size_t)m.cfg.blocks);
        for (i = 0; q0 && i < m.cfg.blocks; ++i) memcpy(q0 + (nqk + nv) * (size_t)i, m.p.blk[i].Wqkv, sizeof(float) * (nqk + nv));
        CHECK_OK(hpj_pretrain(&m, &ds, gs, ds.num_graphs < 64 ? ds.num_graphs : 64, 6, NULL, NULL));
        for (i = 0; q0 && i < m.cfg.blocks; ++i) {
            const float *w = m.p.blk[i].Wqkv, *w0 = q0 + (nqk + nv) * (size_t)i;
            for (j = 0; j < nqk; ++j) {
                qkmoved += memcmp(&w[j], &w0[j], sizeof(float)) != 0;
                qk0 += (double)w0[j] * w0[j];
                qk1 += (double)w[j] * w[j];
            }
            for (j = nqk; j < nqk + nv; ++j) vmoved += w[j] != w0[j];
            for (j = 0; mode && j < (size_t)2 * m.D; ++j) qkmoved += m.p.blk[i].bqkv[j] != 0.0f;
        }
        CHECK_MSG(vmoved > 0, "%s: W_v did not move in 6 steps", mode ? "adam_active" : "adam");
        if (mode) CHECK_MSG(qkmoved == 0, "adam_active: %d entries of W_q, W_k, b_q, b_k moved without a gradient", qkmoved);
        else CHECK_MSG(qk1 < qk0, "adam: coupled decay should shrink W_q, W_k (|W|^2 %g -> %g)", qk0, qk1);
        free(q0);
        hpj_model_free(&m);
    }
    free(gs);
    hpj_dataset_free(&ds);
}

static void test_checkpoint(void) {
    const char *dir = test_dataset("MUTAG");
    const char *path = test_tmpfile("model.ckpt");
    hpj_dataset ds;
    hpj_model m, m2;
    float *a, *b;
    int32_t *gs;
    unsigned char *buf, *bad;
    size_t len, n;
    hpj_model m3;
    if (!dir || !(a = trained_mutag(dir, &ds, &gs, &n, &m))) return;
    CHECK_OK(hpj_model_save(&m, path, 1));
    CHECK_OK(hpj_model_load(&m2, path));
    remove(path);
    b = (float *)malloc(sizeof(float) * n);
    CHECK_OK(hpj_embed(&m2, &ds, gs, ds.num_graphs, b));
    CHECK_MSG(memcmp(a, b, n * sizeof(float)) == 0, "embeddings differ after a checkpoint round trip");
    CHECK(memcmp(m.adam_v, m2.adam_v, sizeof(float) * m.num_params) == 0);
    CHECK_EQ_INT(m.step, m2.step);
    /* corruption: truncation, a flipped bit, bad magic, a newer version */
    CHECK_OK(hpj_model_serialize(&m, 0, &buf, &len));
    bad = (unsigned char *)malloc(len);
    memcpy(bad, buf, len);
    CHECK(hpj_model_deserialize(&m3, bad, len - 7, "t") == HPJ_ERR_FORMAT);
    CHECK(hpj_model_deserialize(&m3, bad, 10, "t") == HPJ_ERR_FORMAT);
    bad[len / 2] ^= 0x10;
    CHECK(hpj_model_deserialize(&m3, bad, len, "t") == HPJ_ERR_FORMAT);
    CHECK(strstr(hpj_last_error(), "CRC") != NULL);
    memcpy(bad, buf, len);
    bad[0] = 'X';
    CHECK(hpj_model_deserialize(&m3, bad, len, "t") == HPJ_ERR_FORMAT);
    CHECK_OK(hpj_model_deserialize(&m3, buf, len, "t"));
    hpj_model_free(&m3);
    {   /* faults behind a valid CRC (a crafted file, or a bug in a writer):
           the reason names the buffer and the model is left zeroed */
        size_t clen = (size_t)buf[16] | (size_t)buf[17] << 8 | (size_t)buf[18] << 16 | (size_t)buf[19] << 24;
        size_t enc = 20 + clen, tensors = enc + 32 + 40, k;
        const float nan = (float)(0.0 * HUGE_VAL);
        const char *cfg = (const char *)buf + 20, *dim = strstr(cfg, "\ndim = ");
        static const unsigned char zero[sizeof(hpj_model)];
        char sizes[128];
        struct { size_t at, n; unsigned char bytes[4]; const char *why; } faults[6];
        memset(faults, 0, sizeof faults);
        faults[0].at = enc + 8; faults[0].bytes[3] = 0x40;  /* node one-hot width 2^30 */
        faults[0].why = "inconsistent input encoding";
        faults[1].at = enc + 20; faults[1].bytes[3] = 0x80; /* negative edge one-hot width */
        faults[1].why = "inconsistent input encoding";
        faults[2].at = tensors + 4 * m.num_params + 8;   /* the third target-encoder value: NaN */
        memcpy(faults[2].bytes, &nan, 4);
        faults[2].why = "target-encoder parameter 2 is not finite";
        faults[3].at = tensors + 4 * (m.num_params + m.enc_count); /* the first BatchNorm statistic */
        memcpy(faults[3].bytes, &nan, 4);
        faults[3].why = "BatchNorm statistic 0 is not finite";
        faults[4].at = (size_t)(dim - (const char *)buf) + 7; /* dim = 3 with 2 heads */
        faults[4].n = 1;
        faults[4].bytes[0] = '3';
        faults[4].why = "heads";
        CHECK(dim != NULL && strncmp(dim, "\ndim = 8\n", 9) == 0 && strstr(cfg, "\nheads = 2\n") != NULL);
        faults[5].at = enc + 32; /* the parameter count, one more */
        faults[5].n = 1;
        faults[5].bytes[0] = (unsigned char)(buf[enc + 32] + 1);
        snprintf(sizes, sizeof sizes, "(%zu, %zu, %zu)", m.num_params, m.enc_count, m.num_stats);
        faults[5].why = sizes; /* the config's sizes, quoted right */
        for (k = 0; k < 6; ++k) {
            memcpy(bad, buf, len);
            memcpy(bad + faults[k].at, faults[k].bytes, faults[k].n ? faults[k].n : 4);
            put_crc(bad, len);
            memset(&m3, 0xAB, sizeof m3);
            CHECK(hpj_model_deserialize(&m3, bad, len, "t.ckpt") == HPJ_ERR_FORMAT);
            CHECK_MSG(strncmp(hpj_last_error(), "t.ckpt:", 7) == 0 && strstr(hpj_last_error(), faults[k].why),
                      "fault %d: reason '%s'", (int)k, hpj_last_error());
            CHECK_MSG(memcmp(&m3, zero, sizeof m3) == 0, "fault %d: the model is not zeroed", (int)k);
        }
    }
    hpj_free_buffer(buf);
    free(bad);
    free(a); free(b); free(gs);
    hpj_model_free(&m);
    hpj_model_free(&m2);
    hpj_dataset_free(&ds);
}

/* Each resolution has its own BatchNorm running statistics: after a few
   steps every resolution's set has moved and the sets differ (resolution
   l's step moves set l only), and the embedding of resolution l reads set
   l only (changing set 2's patch encoder or e_xi statistics changes
   resolution 2's embeddings and leaves the others' bits alone). */
static void test_bn_per_resolution(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    int32_t *gs;
    float *a, *b;
    size_t per, k, cells;
    int l, l2, i, d, part;
    float *keep;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    test_tiny_config(&c);
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    CHECK_EQ_INT((int)(m.num_stats % 3), 0);
    per = m.num_stats / 3;
    for (l = 0; l < 3; ++l) CHECK(m.bn[l].sq_m == m.stats + (size_t)l * per + per - 2 * (size_t)m.D);
    CHECK_OK(hpj_pretrain(&m, &ds, gs, 64, 6, NULL, NULL));
    for (l = 0; l < 3; ++l) {
        double moved = 0.0;
        for (d = 0; d < m.D; ++d) moved += fabs(m.bn[l].bn1_m[0][d]) + fabs(m.bn[l].sq_m[d]);
        CHECK_MSG(moved > 0.0, "resolution %d: its statistics never moved", l + 1);
        for (l2 = 0; l2 < l; ++l2)
            CHECK_MSG(memcmp(m.stats + (size_t)l * per, m.stats + (size_t)l2 * per, sizeof(float) * per) != 0,
                      "resolutions %d and %d hold the same statistics", l2 + 1, l + 1);
    }
    cells = (size_t)ds.num_graphs * 3 * m.D;
    a = (float *)malloc(sizeof(float) * cells);
    b = (float *)malloc(sizeof(float) * cells);
    keep = (float *)malloc(sizeof(float) * m.num_stats);
    CHECK_OK(hpj_embed(&m, &ds, gs, ds.num_graphs, a));
    for (part = 0; part < 2; ++part) { /* set 2's patch encoder part, then its e_xi part (the last 2 D) */
        size_t k0 = per + (part ? per - 2 * (size_t)m.D : 0), k1 = per + (part ? per : per - 2 * (size_t)m.D);
        memcpy(keep, m.stats, sizeof(float) * m.num_stats);
        for (k = k0; k < k1; ++k) m.stats[k] = m.stats[k] * 1.5f + 0.25f;
        CHECK_OK(hpj_embed(&m, &ds, gs, ds.num_graphs, b));
        memcpy(m.stats, keep, sizeof(float) * m.num_stats);
        for (l = 0; l < 3; ++l) {
            int same = 1;
            for (i = 0; i < ds.num_graphs; ++i)
                same &= memcmp(a + ((size_t)i * 3 + l) * m.D, b + ((size_t)i * 3 + l) * m.D, sizeof(float) * m.D) == 0;
            CHECK_MSG(same == (l != 1), "resolution %d: embeddings %s after changing set 2's %s statistics", l + 1,
                      same ? "unchanged" : "changed", part ? "e_xi" : "g_eta");
        }
    }
    free(a); free(b); free(keep); free(gs);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* A graph's embedding does not depend on the other graphs of its call or
   of its chunk (hpj_embed cuts a long list into chunks of node copies):
   every graph of MUTAG embedded with all the others, in reverse order
   with them, and alone gives the same bits, for both definitions of a
   patch token, on the reference and the fast paths, after a few steps of
   training (non-trivial running statistics). */
static void test_embed_independent_of_batch(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t *gs, *rev;
    int pt, path, i;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    rev = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs);
    for (i = 0; i < ds.num_graphs; ++i) rev[i] = ds.num_graphs - 1 - i;
    for (pt = 0; pt < 2; ++pt)
        for (path = 0; path < 2; ++path) {
            hpj_config c;
            hpj_model m;
            size_t row;
            float *all, *back, *one;
            hpj_set_paths(path ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
            test_tiny_config(&c);
            CHECK_OK(hpj_config_set(&c, "patch_tokens", pt ? "present" : "alone"));
            CHECK_OK(hpj_config_set(&c, "resolutions", "2,8,32")); /* 32: more copies than one chunk holds */
            CHECK_OK(hpj_model_init(&m, &c, &ds));
            CHECK_OK(hpj_pretrain(&m, &ds, gs, 64, 4, NULL, NULL));
            row = (size_t)3 * m.D;
            all = (float *)malloc(sizeof(float) * row * ds.num_graphs);
            back = (float *)malloc(sizeof(float) * row * ds.num_graphs);
            one = (float *)malloc(sizeof(float) * row);
            CHECK_OK(hpj_embed(&m, &ds, gs, ds.num_graphs, all));
            CHECK_OK(hpj_embed(&m, &ds, rev, ds.num_graphs, back));
            for (i = 0; i < ds.num_graphs; ++i) {
                CHECK_MSG(memcmp(all + i * row, back + (ds.num_graphs - 1 - i) * row, sizeof(float) * row) == 0,
                          "%s, %s path: graph %d embeds differently in reverse order", c.patch_tokens ? "present" : "alone",
                          path ? "fast" : "reference", i);
                if (i % 9 == 0) {
                    CHECK_OK(hpj_embed(&m, &ds, gs + i, 1, one));
                    CHECK_MSG(memcmp(all + i * row, one, sizeof(float) * row) == 0,
                              "%s, %s path: graph %d embeds differently alone", c.patch_tokens ? "present" : "alone",
                              path ? "fast" : "reference", i);
                }
            }
            free(all); free(back); free(one);
            hpj_model_free(&m);
        }
    hpj_set_paths(HPJ_PATHS_BEST);
    free(gs); free(rev);
    hpj_dataset_free(&ds);
}

/* Checkpoints of format 1 (one set of running statistics, copies averaged
   over the patches present) load as the model they were: patch_tokens =
   present and their one set copied into every resolution's. The fixture
   tests/fuzz-corpus/ckpt/format1_three_resolutions (written by 0.14.0:
   DEMO, resolutions 2,4,8, one epoch; the same file the checkpoint fuzzer
   reads) loads, embeds, and writes back as format 2 that reads back the
   same; a format this build does not know is refused with its number. */
static void test_checkpoint_format1(void) {
    static const char *const where[2] = {"tests/fuzz-corpus/ckpt/format1_three_resolutions",
                                         "../tests/fuzz-corpus/ckpt/format1_three_resolutions"};
    hpj_model m, back;
    hpj_dataset ds;
    unsigned char *buf = NULL;
    size_t len = 0, per, k;
    int l, i, nonzero = 0;
    FILE *f = NULL;
    for (i = 0; i < 2 && !f; ++i) f = fopen(where[i], "rb");
    if (!f) {
        test_skipped = 1;
        printf("  skipped: the fixture is not here (run from the repository)\n");
        return;
    }
    fclose(f);
    CHECK_OK(hpj_model_load(&m, where[i - 1]));
    CHECK_EQ_INT(m.cfg.L, 3);
    CHECK_EQ_INT(m.cfg.patch_tokens, HPJ_TOKENS_PRESENT);
    CHECK_EQ_INT((int)(m.num_stats % 3), 0);
    per = m.num_stats / 3;
    for (k = 0; k < per; ++k) nonzero |= m.stats[k] != 0.0f && m.stats[k] != 1.0f; /* trained: moved */
    CHECK(nonzero);
    for (l = 1; l < 3; ++l)
        CHECK_MSG(memcmp(m.stats, m.stats + (size_t)l * per, sizeof(float) * per) == 0,
                  "resolution %d did not get the file's statistics", l + 1);
    { /* it embeds DEMO, the set it was trained on (it ships with the repository) */
        float *H;
        int32_t *gs;
        CHECK_OK(hpj_dataset_load_tu(i == 1 ? "data/DEMO" : "../data/DEMO", &ds));
        H = (float *)malloc(sizeof(float) * (size_t)ds.num_graphs * 3 * m.D);
        gs = test_all_graphs(&ds);
        CHECK_OK(hpj_embed(&m, &ds, gs, ds.num_graphs, H));
        free(H); free(gs);
        hpj_dataset_free(&ds);
    }
    CHECK_OK(hpj_model_serialize(&m, 0, &buf, &len));
    CHECK_EQ_INT((int)buf[8], HPJ_CKPT_VERSION);
    CHECK(strstr((const char *)buf + 20, "patch_tokens = present\n") != NULL);
    CHECK_OK(hpj_model_deserialize(&back, buf, len, "mem"));
    CHECK_EQ_INT(back.cfg.patch_tokens, HPJ_TOKENS_PRESENT);
    CHECK(back.num_stats == m.num_stats && memcmp(back.stats, m.stats, sizeof(float) * m.num_stats) == 0);
    hpj_model_free(&back);
    buf[8] = 3; /* a later format */
    put_crc(buf, len);
    CHECK(hpj_model_deserialize(&back, buf, len, "t.ckpt") == HPJ_ERR_FORMAT);
    CHECK_MSG(strstr(hpj_last_error(), "format version 3, this build reads versions 1 and 2") != NULL, "reason '%s'",
              hpj_last_error());
    hpj_free_buffer(buf);
    hpj_model_free(&m);
}

/* A dataset of tiny graphs: n = 1, 2, 3 nodes (paths), in memory. */
/* hpj_embed_epoch: training-style partitions (edge drop), deterministic,
   the fixed partition without re-partitioning, errors on epoch < 0. */
static void test_embed_epoch(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_model m;
    float *a, *b, *c;
    int32_t *gs;
    size_t n;
    if (!dir || !(a = trained_mutag(dir, &ds, &gs, &n, &m))) return;
    b = (float *)malloc(sizeof(float) * n);
    c = (float *)malloc(sizeof(float) * n);
    CHECK_OK(hpj_embed_epoch(&m, &ds, gs, ds.num_graphs, m.cfg.epochs, b));
    CHECK_OK(hpj_embed_epoch(&m, &ds, gs, ds.num_graphs, m.cfg.epochs, c));
    CHECK_MSG(memcmp(b, c, n * sizeof(float)) == 0, "the same epoch gave different embeddings");
    CHECK_MSG(memcmp(a, b, n * sizeof(float)) != 0, "an edge-dropped partition gave the fixed partition's embeddings");
    CHECK_OK(hpj_embed_epoch(&m, &ds, gs, ds.num_graphs, m.cfg.epochs + 1, c));
    CHECK_MSG(memcmp(b, c, n * sizeof(float)) != 0, "two epochs gave the same partition");
    m.cfg.repartition = 0; /* training would use the fixed partition */
    CHECK_OK(hpj_embed_epoch(&m, &ds, gs, ds.num_graphs, 3, c));
    CHECK_MSG(memcmp(a, c, n * sizeof(float)) == 0, "without re-partitioning the epoch must not matter");
    CHECK(hpj_embed_epoch(&m, &ds, gs, ds.num_graphs, -1, c) == HPJ_ERR_INPUT);
    free(a); free(b); free(c); free(gs);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* Parses an in-memory TU dataset: A, graph indicator and graph labels, and
   node labels unless nl is NULL. */
static hpj_status parse_texts(const char *name, const char *A, const char *gi, const char *gl, const char *nl,
                              hpj_dataset *ds) {
    hpj_tu_text t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.text[HPJ_TU_A] = A; t.len[HPJ_TU_A] = strlen(A);
    t.text[HPJ_TU_GRAPH_INDICATOR] = gi; t.len[HPJ_TU_GRAPH_INDICATOR] = strlen(gi);
    t.text[HPJ_TU_GRAPH_LABELS] = gl; t.len[HPJ_TU_GRAPH_LABELS] = strlen(gl);
    if (nl) { t.text[HPJ_TU_NODE_LABELS] = nl; t.len[HPJ_TU_NODE_LABELS] = strlen(nl); }
    return hpj_dataset_parse_tu(&t, ds);
}

static void test_tiny_graphs(void) {
    const char *A = "2, 3\n3, 2\n4, 5\n5, 6\n5, 4\n6, 5\n8, 9\n9, 8\n";
    const char *gi = "1\n2\n2\n3\n3\n3\n4\n5\n5\n";
    const char *gl = "0\n1\n0\n1\n0\n";
    const char *only1 = "1\n2\n3\n4\n";
    const char *only1_labels = "0\n1\n0\n1\n";
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    int32_t gs[5] = {0, 1, 2, 3, 4};
    float H[5 * 2 * 8];
    CHECK_OK(parse_texts("TINY", A, gi, gl, NULL, &ds));
    test_tiny_config(&c);
    hpj_config_set(&c, "resolutions", "4,8"); /* every graph is smaller than the smallest K */
    hpj_config_set(&c, "targets", "2,3");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    CHECK_OK(hpj_pretrain(&m, &ds, gs, 5, 0, NULL, NULL));
    CHECK(m.step > 0); /* graphs with 2 and 3 nodes are eligible at K = 4 */
    CHECK_OK(hpj_embed(&m, &ds, gs, 5, H));
    CHECK(H[0] == 0.0f && H[8] == 0.0f); /* 1-node graph: K=4 > 2n, inactive */
    CHECK(H[2 * 16] != 0.0f);            /* 2-node graph active at K=4 */
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
    /* only single-node graphs: nothing is eligible, so there is nothing to
       train (an error, not the initial weights handed back as trained);
       the untouched model still embeds */
    CHECK_OK(parse_texts("TINY", "", only1, only1_labels, NULL, &ds));
    hpj_config_set(&c, "resolutions", "2,4");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    CHECK(hpj_pretrain(&m, &ds, gs, 4, 0, NULL, NULL) == HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "nothing to train") != NULL);
    CHECK(strstr(hpj_last_error(), "the largest has 1)") != NULL);
    CHECK_EQ_INT(m.step, 0);
    CHECK_OK(hpj_embed(&m, &ds, gs, 4, H));
    hpj_model_free(&m);
    /* graph-jepa mode keeps every graph active (one node per region) */
    hpj_config_set(&c, "mode", "graph-jepa");
    hpj_config_set(&c, "resolutions", "32");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    CHECK_OK(hpj_embed(&m, &ds, gs, 4, H));
    CHECK(H[0] != 0.0f);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* Node labels spanning all of int32 (a one-hot width near 2^32): the
   model refuses the width with a reason, without overflowing int (the
   ASan + UBSan build runs this too). */
static void test_label_span_rejected(void) {
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    /* one graph: an edge between a node labelled -2^31+1 and one labelled 2^31-1 */
    if (parse_texts("WIDE", "1, 2\n2, 1\n", "1\n1\n", "0\n", "-2147483647\n2147483647\n", &ds) != HPJ_OK) { /* the reader may refuse such labels first: fine */
        CHECK(strstr(hpj_last_error(), "WIDE") != NULL);
        return;
    }
    test_tiny_config(&c);
    CHECK(hpj_model_init(&m, &c, &ds) == HPJ_ERR_INPUT);
    CHECK_MSG(strstr(hpj_last_error(), "node labels -2147483647..2147483647 span 4294967295 values") != NULL, "reason '%s'", hpj_last_error());
    hpj_dataset_free(&ds);
}

static void test_config_errors(void) {
    hpj_config c;
    const char *bad1 = "dim = 16\nfrobnicate = 3\n";
    const char *bad2 = "# comment\n\nlr = fast\n";
    const char *bad3 = "resolutions = 2,,4\n";
    const char *good = "resolutions = 2, 4 ,8  # three\ntargets = 1,2\nmode = graph-jepa\nseed = 123\n";
    hpj_config_default(&c);
    CHECK(hpj_config_parse(&c, "dim = 8\0junk\n", 13, "x.cfg") == HPJ_ERR_FORMAT); /* not silently "dim = 8" */
    CHECK(strstr(hpj_last_error(), "x.cfg:1: NUL byte") != NULL);
    CHECK(hpj_config_parse(&c, bad1, strlen(bad1), "x.cfg") == HPJ_ERR_FORMAT);
    CHECK(strstr(hpj_last_error(), "x.cfg:2") && strstr(hpj_last_error(), "frobnicate"));
    CHECK(hpj_config_parse(&c, bad2, strlen(bad2), "x.cfg") == HPJ_ERR_FORMAT);
    CHECK(strstr(hpj_last_error(), "x.cfg:3") != NULL);
    CHECK(hpj_config_parse(&c, bad3, strlen(bad3), "x.cfg") == HPJ_ERR_FORMAT);
    hpj_config_default(&c);
    CHECK_OK(hpj_config_parse(&c, good, strlen(good), "x.cfg"));
    CHECK_EQ_INT(c.L, 3);
    CHECK_EQ_INT(c.K[2], 8);
    CHECK_EQ_INT(c.M[2], 2); /* the last target count repeats */
    CHECK_EQ_INT(c.mode, HPJ_MODE_GRAPH_JEPA);
    CHECK_EQ_INT(c.seed, 123);
    CHECK(hpj_config_set(&c, "heads", "3") == HPJ_OK && hpj_config_check(&c) == HPJ_ERR_INPUT); /* 512 % 3 */
    CHECK(hpj_config_set(&c, "partition_trials", "1001") == HPJ_ERR_INPUT);
    {   /* partition_trials is written only when set (0.5 programs read the rest) */
        char buf[4096];
        hpj_config_format(&c, buf, sizeof buf);
        CHECK(strstr(buf, "partition_trials") == NULL);
    }
    CHECK_OK(hpj_config_set(&c, "partition_trials", "2"));
    {   /* format -> parse round trip */
        char buf[4096];
        hpj_config d;
        size_t n = hpj_config_format(&c, buf, sizeof buf);
        hpj_config_default(&d);
        CHECK_OK(hpj_config_parse(&d, buf, n, "round"));
        CHECK(memcmp(&c, &d, sizeof c) == 0);
        CHECK_EQ_INT(d.part_trials, 2);
    }
}

static void test_ema_update_rule(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    float *ema0;
    int32_t gs[16];
    size_t k;
    int i;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    test_tiny_config(&c);
    hpj_config_set(&c, "resolutions", "2");
    hpj_config_set(&c, "targets", "1");
    hpj_config_set(&c, "epochs", "1");
    hpj_config_set(&c, "ema_start", "0.9");
    hpj_config_set(&c, "ema_end", "0.9");
    hpj_config_set(&c, "ema_init", "independent");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    ema0 = (float *)malloc(sizeof(float) * m.enc_count);
    memcpy(ema0, m.ema, sizeof(float) * m.enc_count);
    for (i = 0; i < 16; ++i) gs[i] = i;
    CHECK_OK(hpj_pretrain(&m, &ds, gs, 16, 1, NULL, NULL)); /* exactly one optimizer step */
    CHECK_EQ_INT(m.step, 1);
    for (k = 0; k < m.enc_count; ++k)
        CHECK_NEAR(m.ema[k], 0.9f * ema0[k] + 0.1f * m.params[m.enc_offset + k], 1e-5, 1e-6);
    free(ema0);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
}

/* A target mean m(u) past what cosh / sinh can hold in float stops the step
   with HPJ_ERR_NUMERIC and a reason naming the step, the resolution and
   the guard, on 1 thread and on 2 (where the two halves of the batch's
   targets are computed on the two threads side by side, hpj__fast_paths_side:
   the same first target, so the same reason); with target_clamp set the
   same model gives a finite loss. The EMA copy of the last block's output
   bias, raised to 1000, moves every m(u) by about 1000. */
static void test_target_overflow(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t gs[32];
    int i, t, clamp;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 32; ++i) gs[i] = i;
    for (clamp = 0; clamp < 2; ++clamp) {
        hpj_config c;
        hpj_model m;
        char why[2][512];
        test_tiny_config(&c);
        if (clamp) CHECK_OK(hpj_config_set(&c, "target_clamp", "20"));
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        for (i = 0; i < m.D; ++i) m.tgt[m.cfg.blocks - 1].b2[i] = 1000.0f;
        for (t = 0; t < 2; ++t) {
            double L = 0.0;
            hpj_status st;
#ifdef _OPENMP
            omp_set_num_threads(t + 1);
#endif
            st = hpj_model_loss(&m, &ds, gs, 32, 1, 11, &L);
            if (clamp) {
                CHECK_MSG(st == HPJ_OK && L == L && L < 1e30, "target_clamp 20, %d thread(s): status %d, loss %g", t + 1,
                          (int)st, L);
                continue;
            }
            CHECK_EQ_INT(st, HPJ_ERR_NUMERIC);
            snprintf(why[t], sizeof why[t], "%s", hpj_last_error());
            CHECK_MSG(strstr(why[t], "step 1, resolution 2 (K=4)") && strstr(why[t], "target mean m(u)") &&
                          strstr(why[t], "target_clamp"),
                      "%d thread(s): reason \"%s\"", t + 1, why[t]);
        }
        if (!clamp) CHECK_MSG(strcmp(why[0], why[1]) == 0, "1 thread: \"%s\", 2 threads: \"%s\"", why[0], why[1]);
#ifdef _OPENMP
        omp_set_num_threads(2);
#endif
        hpj_model_free(&m);
    }
    hpj_dataset_free(&ds);
}

/* A run stopped after an epoch, saved with its optimizer state, loaded and
   trained on gives the same bits as the run never stopped: every draw of an
   epoch (shuffle, edge-dropped partition, targets, dropout) is a function of
   the seed, the epoch and the step. The config exercises all of them, with
   a cosine schedule, warmup, clipping and a growing EMA momentum. */
static void test_resume_exact(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m, r;
    int32_t gs[188];
    unsigned char *full = NULL, *part = NULL;
    size_t nfull = 0, npart = 0;
    int i, threads;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 150; ++i) gs[i] = i + 20; /* a training subset, as a fold */
    test_tiny_config(&c);
    hpj_config_set(&c, "epochs", "4");
    hpj_config_set(&c, "repartition", "1");
    hpj_config_set(&c, "edge_drop", "0.3");
    hpj_config_set(&c, "dropout", "0.1");
    hpj_config_set(&c, "token_dropout", "0.1");
    hpj_config_set(&c, "schedule", "cosine");
    hpj_config_set(&c, "warmup", "1");
    hpj_config_set(&c, "clip", "0.5");
    hpj_config_set(&c, "ema_end", "1.0");
    hpj_config_set(&c, "batch_size", "32");
    CHECK_OK(hpj_model_init(&m, &c, &ds));
    CHECK_EQ_INT(m.adam_state, 0);
    CHECK_OK(hpj_pretrain(&m, &ds, gs, 150, 0, NULL, NULL));
    CHECK_EQ_INT(m.epoch, 4);
    CHECK_EQ_INT(m.adam_state, 1);
    CHECK_OK(hpj_model_serialize(&m, 1, &full, &nfull));
    /* nothing left to do: the model stays as it is */
    CHECK_OK(hpj_pretrain(&m, &ds, gs, 150, 0, NULL, NULL));
    CHECK_EQ_INT(m.epoch, 4);
    hpj_model_free(&m);
    for (threads = 1; threads <= 2; ++threads) {
        hpj_config_set(&c, "threads", threads == 1 ? "1" : "2");
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        CHECK(hpj_pretrain_until(&m, &ds, gs, 150, 0, NULL, NULL) == HPJ_ERR_INPUT);
        CHECK(hpj_pretrain_until(&m, &ds, gs, 150, 5, NULL, NULL) == HPJ_ERR_INPUT);
        CHECK_OK(hpj_pretrain_until(&m, &ds, gs, 150, 1, NULL, NULL));
        CHECK_EQ_INT(m.epoch, 1);
        /* saved with the optimizer state, loaded, trained to epoch 3 in
           place, then to the end */
        CHECK_OK(hpj_model_serialize(&m, 1, &part, &npart));
        hpj_model_free(&m);
        CHECK_OK(hpj_model_deserialize(&r, part, npart, "part"));
        hpj_free_buffer(part);
        part = NULL;
        CHECK_EQ_INT(r.adam_state, 1);
        CHECK_EQ_INT(r.epoch, 1);
        CHECK_OK(hpj_pretrain_until(&r, &ds, gs, 150, 3, NULL, NULL));
        CHECK_OK(hpj_pretrain_until(&r, &ds, gs, 150, 3, NULL, NULL)); /* already there */
        CHECK_EQ_INT(r.epoch, 3);
        CHECK_OK(hpj_pretrain(&r, &ds, gs, 150, 0, NULL, NULL));
        hpj_config_set(&r.cfg, "threads", "0"); /* the full run's config text */
        CHECK_OK(hpj_model_serialize(&r, 1, &part, &npart));
        CHECK(npart == nfull && memcmp(part, full, nfull) == 0);
        hpj_free_buffer(part);
        part = NULL;
        hpj_model_free(&r);
        hpj_config_set(&c, "threads", "0");
    }
    /* a checkpoint saved without the moments says so */
    {
        hpj_model t;
        unsigned char *noopt = NULL;
        size_t nn = 0;
        CHECK_OK(hpj_model_deserialize(&t, full, nfull, "full"));
        CHECK_OK(hpj_model_serialize(&t, 0, &noopt, &nn));
        hpj_model_free(&t);
        CHECK_OK(hpj_model_deserialize(&t, noopt, nn, "noopt"));
        CHECK_EQ_INT(t.adam_state, 0);
        CHECK_EQ_INT(t.epoch, 4);
        hpj_model_free(&t);
        hpj_free_buffer(noopt);
    }
    hpj_free_buffer(full);
    hpj_dataset_free(&ds);
}

const test_case model_tests[] = {
    {"model.rwse_known", test_rwse_known},
    {"model.rwse_random_graphs", test_rwse_random_graphs},
    {"model.tokens_invariants", test_tokens_invariants},
    {"model.config_errors", test_config_errors},
    {"model.gradient_fd", test_model_gradient},
    {"model.gradient_fd_peer_variant", test_model_gradient_peer_variant},
    {"model.gradient_fd_present", test_model_gradient_present},
    {"model.gradient_fd_graph", test_model_gradient_graph},
    {"model.gradient_fd_unlabelled_edges", test_model_gradient_unlabelled_edges},
    {"model.gradient_fd_per_copy", test_model_gradient_per_copy},
    {"model.table_matches_per_copy", test_model_table_matches_per_copy},
    {"model.first_layer_classes", test_model_first_layer_classes},
    {"model.layer_classes", test_model_layer_classes},
    {"model.encoder_fast_vs_reference", test_model_encoder_fast_vs_reference},
    {"model.paths_threads", test_model_paths_threads},
    {"model.ema_update_rule", test_ema_update_rule},
    {"model.target_overflow", test_target_overflow},
    {"model.loss_decreases", test_loss_decreases},
    {"model.deterministic_and_threads", test_deterministic_and_threads},
    {"model.fast_matches_reference", test_fast_matches_reference},
    {"model.adam_active", test_adam_active},
    {"model.checkpoint", test_checkpoint},
    {"model.checkpoint_format1", test_checkpoint_format1},
    {"model.bn_per_resolution", test_bn_per_resolution},
    {"model.embed_independent_of_batch", test_embed_independent_of_batch},
    {"model.resume_exact", test_resume_exact},
    {"model.embed_epoch", test_embed_epoch},
    {"model.tiny_graphs", test_tiny_graphs},
    {"model.label_span_rejected", test_label_span_rejected},
};
const int model_tests_count = (int)(sizeof model_tests / sizeof model_tests[0]);
