/* White-box tests: a private copy of the implementation (HPJ_STATIC: every
   function static), built with some internal constants changed, whose
   internals the tests can set and read. */
#define HPJ_STATIC
#define HPJEPA_IMPLEMENTATION
#define HPJ__SPLIT_MAX_D 0 /* the two paths one after the other at any d */
#define HPJ__GOV_RATIO 0.0 /* hpj__gov tries the other team size every other unit */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function" /* the API, unused here */
#endif
#include "../hpjepa.h"
#include "test.h"
#include <stdlib.h>
#include <string.h>
/* the plain loops below are written as separately rounded float operations;
   clang would otherwise fuse a * b + c (as the implementation forbids) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* A small model at d = 32 with two blocks, batches of 64 graphs. */
static void park_config(hpj_config *c) {
    hpj_config_default(c);
    hpj_config_set(c, "dim", "32");
    hpj_config_set(c, "heads", "2");
    hpj_config_set(c, "blocks", "2");
    hpj_config_set(c, "ffn", "64");
    hpj_config_set(c, "batch_size", "64");
}

/* The same parameters, EMA copy and Adam moments, bit for bit. */
static int same_model(const hpj_model *a, const hpj_model *b) {
    size_t P = sizeof(float) * a->num_params;
    return a->num_params == b->num_params && memcmp(a->params, b->params, P) == 0 &&
           memcmp(a->ema, b->ema, sizeof(float) * a->enc_count) == 0 && memcmp(a->adam_m, b->adam_m, P) == 0 &&
           memcmp(a->adam_v, b->adam_v, P) == 0;
}

#ifndef _OPENMP
static void skip_without_openmp(void) {
    test_skipped = 1;
    printf("  skipped: needs OpenMP (two threads)\n");
}
#endif

/* A run that fails (lr = 1 makes the targets overflow within a few steps)
   leaves the model of its last good step: the bits of the same failure on
   one thread. */
static void test_failure_threads(void) {
#ifdef _OPENMP
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m[2];
    int32_t *gs;
    int t;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    for (t = 0; t < 2; ++t) {
        park_config(&c);
        hpj_config_set(&c, "lr", "1");
        omp_set_num_threads(t + 1);
        CHECK_OK(hpj_model_init(&m[t], &c, &ds));
        CHECK_EQ_INT(hpj_pretrain(&m[t], &ds, gs, ds.num_graphs, 0, NULL, NULL), HPJ_ERR_NUMERIC);
    }
    omp_set_num_threads(2);
    CHECK_MSG(m[0].step >= 2 && m[0].step == m[1].step, "failed after %lld and %lld steps", (long long)m[0].step,
              (long long)m[1].step);
    CHECK_MSG(same_model(&m[0], &m[1]), "the model after the failure differs between 1 and 2 threads");
    for (t = 0; t < 2; ++t) hpj_model_free(&m[t]);
    free(gs);
    hpj_dataset_free(&ds);
#else
    skip_without_openmp();
#endif
}

/* BatchNorm's row-block sums (hpj__bn_part, the fast sibling) give the
   same bits on every fast paths level (the reference sums each channel in
   one run: test_bn_reference_vs_fast holds it within a tolerance):
   training-mode output, statistics and running statistics,
   with and without class counts (a later GINE layer's classes), on the
   row-block path (large N, two threads) and the panel path (small N, and
   fewer rows than row blocks), with a partial block of 64 channels. The
   double sums themselves are compared too: a last-bit change there
   seldom reaches the float outputs. */
static void test_bn_sums_paths(void) {
#ifndef HPJ_REFERENCE
    int sizes[3] = {1500, 40, 20}, D = 100, si, k, lvl, i;
    double *ps[4], dm[100]; /* (D channels) */
    hpj_rng r;
    for (i = 0; i < 4; ++i) ps[i] = (double *)malloc(sizeof(double) * 2 * HPJ__BN_RB * (size_t)D);
    hpj_rng_seed(&r, 4);
    for (si = 0; si < 3; ++si)
        for (k = 0; k < 2; ++k) {
            int N = sizes[si], ntot = 0, nres = 0;
            float *x = (float *)malloc(sizeof(float) * (size_t)N * D), *g = (float *)malloc(sizeof(float) * D);
            float *b = (float *)malloc(sizeof(float) * D), *o[4];
            int32_t *cnt = k ? (int32_t *)malloc(sizeof(int32_t) * (size_t)N) : NULL;
            for (i = 0; i < N * D; ++i) x[i] = 3.0f * hpj_rng_uniform(&r) - 1.0f + (i % D) * 0.25f;
            for (i = 0; i < D; ++i) g[i] = 0.5f + hpj_rng_uniform(&r), b[i] = hpj_rng_uniform(&r) - 0.5f;
            for (i = 0; cnt && i < N; ++i) ntot += cnt[i] = 1 + i % 5;
            for (lvl = HPJ_PATHS_PORTABLE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
                float *y, *mean, *rstd, *rm, *rv;
                if (hpj_set_paths(lvl) != lvl) continue;
                o[nres] = y = (float *)calloc((size_t)N * D + 4 * D, sizeof(float));
                mean = y + (size_t)N * D, rstd = mean + D, rm = rstd + D, rv = rm + D;
                for (i = 0; i < D; ++i) rv[i] = 1.0f;
                hpj__fast_bn_train(y, mean, rstd, rm, rv, x, g, b, N, D, 0.1f, 1e-5f, 1, NULL, NULL, cnt, cnt ? ntot : N,
                                   NULL);
                if (nres > 0)
                    CHECK_MSG(memcmp(o[0], y, sizeof(float) * ((size_t)N * D + 4 * D)) == 0,
                              "BatchNorm, %d rows%s: %s differs from portable", N, cnt ? ", classes" : "",
                              hpj_paths_name(lvl));
                { /* the double sums themselves (a last-bit change seldom reaches the floats) */
                    int bl, c;
                    for (c = 0; c < D; ++c) dm[c] = (double)mean[c] + 0.001 * c;
                    memset(ps[nres], 0xff, sizeof(double) * 2 * HPJ__BN_RB * D); /* (NaN: every sum is set) */
                    for (bl = 0; bl < HPJ__BN_RB; ++bl) {
                        hpj__bn_part(ps[nres] + (size_t)2 * bl * D, x, N, D, bl, 0, D, NULL, cnt);
                        hpj__bn_part(ps[nres] + (size_t)(2 * bl + 1) * D, x, N, D, bl, 0, D, dm, cnt);
                    }
                    if (nres > 0)
                        CHECK_MSG(memcmp(ps[0], ps[nres], sizeof(double) * 2 * HPJ__BN_RB * D) == 0,
                                  "BatchNorm sums, %d rows%s: %s differ from portable", N,
                                  cnt ? ", classes" : "", hpj_paths_name(lvl));
                }
                ++nres;
            }
            hpj_set_paths(HPJ_PATHS_BEST);
            CHECK(nres >= 1);
            for (i = 0; i < nres; ++i) free(o[i]);
            free(x); free(g); free(b); free(cnt);
        }
    for (i = 0; i < 4; ++i) free(ps[i]);
#else
    SKIP("built with -DHPJ_REFERENCE: no fast level to compare");
#endif
}

/* BatchNorm backward's row kernels in the fast part (hpj__bn_bw_sums: the
   channel sums over rows, register-blocked with AVX2; hpj__bn_back_row:
   the input gradient of one row) give the bits of the plain loops written
   out here, operation for operation: widths around the 8-channel vectors,
   row counts around the row tile, with and without the ReLU mask (values
   above, at and below 0), class counts n = 1 and 3, overwrite or add. */
static void test_bn_backward_kernels(void) {
#ifndef HPJ_REFERENCE
    int widths[6] = {1, 7, 8, 9, 24, 37}, rows[5] = {1, 5, 16, 17, 40}, wi, ri, hr, i, ov, ni;
    hpj_rng r;
    hpj_rng_seed(&r, 11);
    for (wi = 0; wi < 6; ++wi)
        for (ri = 0; ri < 5; ++ri)
            for (hr = 0; hr < 2; ++hr) {
                int w = widths[wi], nr = rows[ri], ld = w + 3, c, k;
                size_t n = (size_t)nr * ld;
                float *x = (float *)malloc(sizeof(float) * n), *dy = (float *)malloc(sizeof(float) * n);
                float *ro = (float *)malloc(sizeof(float) * n), *mean = (float *)malloc(sizeof(float) * 5 * w);
                float *rstd = mean + w, *kk = rstd + w, *md = kk + w, *mdx = md + w;
                float *dx = (float *)malloc(sizeof(float) * 2 * w);
                double *sd = (double *)malloc(sizeof(double) * 4 * w), *sdx = sd + w, *ed = sdx + w, *edx = ed + w;
                const float *rop = hr ? ro : NULL;
                for (i = 0; i < (int)n; ++i) {
                    x[i] = 4.0f * hpj_rng_uniform(&r) - 2.0f;
                    dy[i] = hpj_rng_uniform(&r) - 0.5f;
                    ro[i] = i % 7 == 0 ? 0.0f : hpj_rng_uniform(&r) - 0.4f;
                }
                for (c = 0; c < w; ++c) {
                    mean[c] = hpj_rng_uniform(&r) - 0.5f;
                    rstd[c] = 0.5f + hpj_rng_uniform(&r);
                    kk[c] = hpj_rng_uniform(&r) + 0.1f;
                    md[c] = 0.1f * (hpj_rng_uniform(&r) - 0.5f);
                    mdx[c] = 0.1f * (hpj_rng_uniform(&r) - 0.5f);
                    sd[c] = ed[c] = 0.25 * c; /* the kernel adds to what is there */
                    sdx[c] = edx[c] = -0.125 * c;
                }
                hpj__bn_bw_sums(sd, sdx, x, dy, rop, mean, rstd, nr, ld, w);
                for (k = 0; k < nr; ++k)
                    for (c = 0; c < w; ++c) {
                        size_t o = (size_t)k * ld + c;
                        float g = hr ? dy[o] * (float)(ro[o] > 0.0f) : dy[o];
                        float xh = (x[o] - mean[c]) * rstd[c];
                        ed[c] += g;
                        edx[c] += (double)g * xh;
                    }
                CHECK_MSG(memcmp(sd, ed, sizeof(double) * 2 * w) == 0,
                          "hpj__bn_bw_sums, %d channels, %d rows%s: not the plain loop's bits", w, nr,
                          hr ? ", ReLU" : "");
                for (ov = 0; ov < 2; ++ov)
                    for (ni = 0; ni < 2; ++ni)
                        for (k = 0; k < nr; ++k) {
                            size_t o = (size_t)k * ld;
                            float cn = ni ? 3.0f : 1.0f;
                            for (c = 0; c < w; ++c) dx[c] = dx[w + c] = 0.5f * c - 1.0f;
                            hpj__bn_back_row(dx, x + o, dy + o, rop ? rop + o : NULL, mean, rstd, kk, md, mdx, w, ov,
                                             hr, cn);
                            for (c = 0; c < w; ++c) {
                                float xh = (x[o + c] - mean[c]) * rstd[c];
                                float g = hr && !(ro[o + c] > 0.0f) ? 0.0f : dy[o + c];
                                float v = kk[c] * (g - cn * md[c] - xh * (cn * mdx[c]));
                                dx[w + c] = ov ? v : dx[w + c] + v;
                            }
                            CHECK_MSG(memcmp(dx, dx + w, sizeof(float) * w) == 0,
                                      "hpj__bn_back_row, %d channels, row %d%s, n %g, %s: not the plain loop's bits",
                                      w, k, hr ? ", ReLU" : "", cn, ov ? "overwrite" : "add");
                        }
                free(x); free(dy); free(ro); free(mean); free(dx); free(sd);
            }
#else
    SKIP("built with -DHPJ_REFERENCE: the kernels are the fast part's");
#endif
}

/* Rows that stand for classes of equal rows (cnt, ntot) are the fast
   encoder's: the fast sibling's BatchNorm takes them, the reference has
   plain rows only. */
#ifndef HPJ_REFERENCE
#define BN_CLASS_CASES 2 /* plain rows, then classes */
#else
#define BN_CLASS_CASES 1 /* plain rows */
#endif

/* BatchNorm training forward with ReLU fused (momentum 0.1, eps 1e-5):
   the dispatching hpj__bn_train for plain rows (cnt = NULL), the fast
   sibling for classes. */
static void bn_train_rows(float *out, float *mean, float *rstd, float *rm, float *rv, const float *x, const float *g,
                          const float *b, int N, int D, const float *res, float *sum, const int32_t *cnt, int ntot) {
#ifndef HPJ_REFERENCE
    if (cnt) {
        hpj__fast_bn_train(out, mean, rstd, rm, rv, x, g, b, N, D, 0.1f, 1e-5f, 1, res, sum, cnt, ntot, NULL);
        return;
    }
#endif
    (void)cnt, (void)ntot;
    hpj__bn_train(out, mean, rstd, rm, rv, x, g, b, N, D, 0.1f, 1e-5f, 1, res, sum, NULL);
}

/* BatchNorm with the residual sum only (out = NULL: the target path's
   patch encoder, which never reads the BatchNorm output itself) gives the
   sum's bits of the call that also writes the output, with and without
   class counts, at a width past one stack panel of channels, and with the
   sum written in place over the residual (a layer on classes). */
static void test_bn_sum_only(void) {
    enum { BN_D = 300 }; /* channels (the statistics buffer st is sized by it) */
    int N = 300, D = BN_D, k, inplace, i;
    hpj_rng r;
    hpj_rng_seed(&r, 8);
    for (k = 0; k < BN_CLASS_CASES; ++k)
        for (inplace = 0; inplace < 2; ++inplace) {
            size_t nd = (size_t)N * D;
            float *x = (float *)malloc(sizeof(float) * nd), *res = (float *)malloc(sizeof(float) * nd);
            float *y = (float *)malloc(sizeof(float) * nd), *s1 = (float *)malloc(sizeof(float) * nd);
            float *s2 = (float *)malloc(sizeof(float) * nd), *g = (float *)malloc(sizeof(float) * D);
            float *b = (float *)malloc(sizeof(float) * D), st[4 * BN_D];
            int32_t *cnt = k ? (int32_t *)malloc(sizeof(int32_t) * (size_t)N) : NULL;
            int ntot = 0;
            for (i = 0; i < (int)nd; ++i) x[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f, res[i] = hpj_rng_uniform(&r);
            for (i = 0; i < D; ++i) g[i] = 0.5f + hpj_rng_uniform(&r), b[i] = hpj_rng_uniform(&r) - 0.5f;
            for (i = 0; cnt && i < N; ++i) ntot += cnt[i] = 1 + i % 3;
            if (inplace) memcpy(s1, res, sizeof(float) * nd), memcpy(s2, res, sizeof(float) * nd);
            bn_train_rows(y, st, st + D, NULL, NULL, x, g, b, N, D, inplace ? s1 : res, s1, cnt, ntot);
            bn_train_rows(NULL, st + 2 * D, st + 3 * D, NULL, NULL, x, g, b, N, D, inplace ? s2 : res, s2, cnt, ntot);
            CHECK_MSG(memcmp(s1, s2, sizeof(float) * nd) == 0, "BatchNorm sum only%s%s: the sum differs",
                      cnt ? ", classes" : "", inplace ? ", in place" : "");
            free(x); free(res); free(y); free(s1); free(s2); free(g); free(b); free(cnt);
        }
}

/* The largest |a - b| / (1 + |b|) over n floats. */
static double bn_rel_diff(const float *a, const float *b, size_t n) {
    double w = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (!(d <= w)) w = d; /* (a NaN counts as the largest) */
    }
    return w;
}

/* One BatchNorm forward (ReLU and residual sum fused, running statistics
   moved) and backward (through the fused ReLU, adding to dinp) at the
   current paths level (with classes: the fast sibling's); o holds out,
   sum, mean, rstd, rm, rv, dinp, dgamma, dbeta in that order. */
static void bn_run_both(float *o, const float *x, const float *res, const float *dy, const float *g, const float *b,
                        const int32_t *cnt, int N, int D, int ntot) {
    size_t nd = (size_t)N * D;
    float *out = o, *sum = out + nd, *mean = sum + nd, *rstd = mean + D, *rm = rstd + D, *rv = rm + D;
    float *dx = rv + D, *dg = dx + nd, *db = dg + D;
    int i;
    for (i = 0; i < D; ++i) rm[i] = 0.1f * (float)i, rv[i] = 1.0f, dg[i] = 0.5f, db[i] = -0.5f;
    for (i = 0; i < (int)nd; ++i) dx[i] = 0.25f;
    bn_train_rows(out, mean, rstd, rm, rv, x, g, b, N, D, res, sum, cnt, ntot);
#ifndef HPJ_REFERENCE
    if (cnt) {
        hpj__fast_bn_backward(dx, dg, db, dy, x, g, mean, rstd, N, D, out, 0, cnt, ntot, NULL);
        return;
    }
#endif
    hpj__bn_backward(dx, dg, db, dy, x, g, mean, rstd, N, D, out, 0, NULL);
}

/* What classes mean, in plain rows for the reference: row r of x and res
   repeated cnt[r] times (ntot rows in xe, rese), its gradient dy (the
   class's summed one) on the first copy and 0 on the others. */
static void bn_expand(float *xe, float *rese, float *dye, const float *x, const float *res, const float *dy,
                      const int32_t *cnt, int N, int D) {
    size_t e = 0, row = sizeof(float) * (size_t)D;
    int r, k;
    for (r = 0; r < N; ++r)
        for (k = 0; k < cnt[r]; ++k, ++e) {
            memcpy(xe + e * D, x + (size_t)r * D, row);
            memcpy(rese + e * D, res + (size_t)r * D, row);
            if (k) memset(dye + e * D, 0, row);
            else memcpy(dye + e * D, dy + (size_t)r * D, row);
        }
}

/* bn_run_both's outputs oe over the expanded rows folded back to the
   classes into o: out and sum from each class's first copy, dinp the sum
   of its copies' gradients (each copy's started at 0.25: one start kept),
   the channels' outputs as they are. */
static void bn_fold(float *o, const float *oe, const int32_t *cnt, int N, int D, int ntot) {
    size_t nd = (size_t)N * D, ne = (size_t)ntot * D, e = 0;
    float *dx = o + 2 * nd + 4 * (size_t)D;
    const float *dxe = oe + 2 * ne + 4 * (size_t)D;
    int r, k, j;
    for (r = 0; r < N; ++r) {
        memcpy(o + (size_t)r * D, oe + e * D, sizeof(float) * D);
        memcpy(o + nd + (size_t)r * D, oe + ne + e * D, sizeof(float) * D);
        for (j = 0; j < D; ++j) dx[(size_t)r * D + j] = 0.25f;
        for (k = 0; k < cnt[r]; ++k, ++e)
            for (j = 0; j < D; ++j) dx[(size_t)r * D + j] += dxe[e * D + j] - 0.25f;
    }
    memcpy(o + 2 * nd, oe + 2 * ne, sizeof(float) * 4 * D);
    memcpy(dx + nd, dxe + ne, sizeof(float) * 2 * D);
}

/* The reference BatchNorm (hpj__bn_train, hpj__bn_backward: each channel
   summed in one run down its rows) and the fast sibling (row blocks)
   agree within 2e-5 relative (|a - b| <= 2e-5 (1 + |b|)) on every output
   of the forward and the backward, with the ReLU and the residual sum
   fused, with and without row classes (the fast sibling's; the reference
   runs on the classes' rows repeated, bn_expand, and its outputs are
   folded back, bn_fold), on the row-block path (1500 rows, two threads)
   and the panel path (40 rows); the difference is rounding
   only (a wrong sum is off by far more). Evaluation mode gives the same
   bits on both, and the reference the same bits on one and two threads. */
static void test_bn_reference_vs_fast(void) {
    int sizes[2] = {1500, 40}, D = 100, si, k, i, compared = 0;
    hpj_rng r;
    hpj_rng_seed(&r, 21);
    for (si = 0; si < 2; ++si)
        for (k = 0; k < BN_CLASS_CASES; ++k) {
            int N = sizes[si], ntot = 0, t;
            size_t nd = (size_t)N * D, no = 3 * nd + 6 * (size_t)D;
            float *x = (float *)malloc(sizeof(float) * nd), *res = (float *)malloc(sizeof(float) * nd);
            float *dy = (float *)malloc(sizeof(float) * nd), *g = (float *)malloc(sizeof(float) * D);
            float *b = (float *)malloc(sizeof(float) * D), *ref[2], *fast = (float *)malloc(sizeof(float) * no);
            int32_t *cnt = k ? (int32_t *)malloc(sizeof(int32_t) * (size_t)N) : NULL;
            float *xe = NULL, *e = NULL; /* with classes: the repeated rows' x, res, dy; the reference's outputs */
            for (i = 0; i < (int)nd; ++i) {
                x[i] = 3.0f * hpj_rng_uniform(&r) - 1.0f + (i % D) * 0.25f;
                res[i] = hpj_rng_uniform(&r), dy[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f;
            }
            for (i = 0; i < D; ++i) g[i] = 0.5f + hpj_rng_uniform(&r), b[i] = hpj_rng_uniform(&r) - 0.5f;
            for (i = 0; i < N; ++i) ntot += cnt ? (cnt[i] = 1 + i % 5) : 1;
            if (cnt) {
                size_t ne = (size_t)ntot * D;
                xe = (float *)malloc(sizeof(float) * 3 * ne);
                e = (float *)malloc(sizeof(float) * (3 * ne + 6 * (size_t)D));
                bn_expand(xe, xe + ne, xe + 2 * ne, x, res, dy, cnt, N, D);
            }
            hpj_set_paths(HPJ_PATHS_REFERENCE);
            for (t = 0; t < 2; ++t) {
                ref[t] = (float *)malloc(sizeof(float) * no);
#ifdef _OPENMP
                omp_set_num_threads(t + 1);
#endif
                if (cnt) {
                    size_t ne = (size_t)ntot * D;
                    bn_run_both(e, xe, xe + ne, xe + 2 * ne, g, b, NULL, ntot, D, ntot);
                    bn_fold(ref[t], e, cnt, N, D, ntot);
                } else {
                    bn_run_both(ref[t], x, res, dy, g, b, NULL, N, D, N);
                }
            }
#ifdef _OPENMP
            omp_set_num_threads(2);
#endif
            CHECK_MSG(memcmp(ref[0], ref[1], sizeof(float) * no) == 0,
                      "reference BatchNorm, %d rows%s: 1 and 2 threads differ", N, cnt ? ", classes" : "");
            if (hpj_set_paths(HPJ_PATHS_BEST) != HPJ_PATHS_REFERENCE) {
                static const char *name[9] = {"out", "sum", "mean", "rstd", "running mean", "running var",
                                              "dinp", "dgamma", "dbeta"};
                size_t len[9], off = 0;
                int p;
                len[0] = len[1] = len[6] = nd;
                len[2] = len[3] = len[4] = len[5] = len[7] = len[8] = (size_t)D;
                bn_run_both(fast, x, res, dy, g, b, cnt, N, D, ntot);
                for (p = 0; p < 9; off += len[p], ++p) {
                    double d = bn_rel_diff(fast + off, ref[0] + off, len[p]);
                    CHECK_MSG(d <= 2e-5, "BatchNorm, %d rows%s: %s of the fast sibling is %.3g off the reference", N,
                              cnt ? ", classes" : "", name[p], d);
                }
                { /* evaluation mode (ReLU and sum fused), with the running statistics trained above: the same bits */
                    const float *rm = ref[0] + 2 * nd + 2 * (size_t)D, *rv = rm + D;
                    float *e0 = (float *)malloc(sizeof(float) * 2 * nd), *e1 = (float *)malloc(sizeof(float) * 2 * nd);
                    hpj_set_paths(HPJ_PATHS_REFERENCE);
                    hpj__bn_eval(e0, x, g, b, rm, rv, N, D, 1e-5f, 1, res, e0 + nd);
                    hpj_set_paths(HPJ_PATHS_BEST);
                    hpj__bn_eval(e1, x, g, b, rm, rv, N, D, 1e-5f, 1, res, e1 + nd);
                    CHECK_MSG(memcmp(e0, e1, sizeof(float) * 2 * nd) == 0,
                              "BatchNorm evaluation, %d rows: the fast sibling differs from the reference", N);
                    free(e0); free(e1);
                }
                ++compared;
            }
            free(x); free(res); free(dy); free(g); free(b); free(ref[0]); free(ref[1]); free(fast); free(cnt);
            free(xe); free(e);
        }
    hpj_set_paths(HPJ_PATHS_BEST);
    if (!compared) SKIP("built with -DHPJ_REFERENCE: the reference's thread check ran, no fast level to compare");
}

/* LayerNorm's fast sibling (row sums in 16 lanes, one copy per gamma/beta
   case, column blocks) against the reference (row sums in order): the
   forward (out, mean, rstd) and the backward (dinp, dgamma, dbeta, each
   added to a nonzero start) agree to rounding, within 1e-5 relative and
   1e-6 absolute (a row's sums run in another order; the column sums
   dgamma and dbeta 1e-6 per row), in all four gamma /
   beta cases, for widths with and without a lane tail, one row, and a
   size that runs on threads. */
static void test_ln_reference_vs_fast(void) {
    static const int shape[4][2] = {{50, 7}, {300, 128}, {1, 40}, {64, 37}};
    int si, k, i, compared = 0;
    hpj_rng r;
    hpj_rng_seed(&r, 22);
    for (si = 0; si < 4; ++si)
        for (k = 0; k < 4; ++k) {
            int N = shape[si][0], D = shape[si][1], lvl;
            size_t nd = (size_t)N * D, no = 2 * nd + 2 * (size_t)N + 2 * (size_t)D;
            float *x = (float *)malloc(sizeof(float) * nd), *dy = (float *)malloc(sizeof(float) * nd);
            float *g = (float *)malloc(sizeof(float) * D), *b = (float *)malloc(sizeof(float) * D), *o[2];
            for (i = 0; i < (int)nd; ++i)
                x[i] = 4.0f * hpj_rng_uniform(&r) - 1.0f, dy[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f;
            for (i = 0; i < D; ++i) g[i] = 0.5f + hpj_rng_uniform(&r), b[i] = hpj_rng_uniform(&r) - 0.5f;
            for (lvl = 0; lvl < 2; ++lvl) { /* reference, then the best fast level */
                const float *gk = (k & 1) ? NULL : g, *bk = (k & 2) ? NULL : b;
                float *y, *mu, *rs, *dx, *dg, *db;
                o[lvl] = y = (float *)malloc(sizeof(float) * no);
                mu = y + nd, rs = mu + N, dx = rs + N, dg = dx + nd, db = dg + D;
                for (i = 0; i < (int)nd; ++i) dx[i] = 0.25f;
                for (i = 0; i < D; ++i) dg[i] = 0.5f, db[i] = -0.5f;
                if (hpj_set_paths(lvl ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE) == HPJ_PATHS_REFERENCE && lvl) break;
                hpj_layernorm_forward(y, mu, rs, x, gk, bk, N, D, 1e-5f);
                hpj_layernorm_backward(dx, dg, db, dy, x, gk, mu, rs, N, D);
                if (lvl) {
                    size_t bad = no, t;
                    for (t = 0; t < no && bad == no; ++t) { /* dgamma, dbeta: N rows' terms, each off by rounding */
                        double atol = t < 2 * nd + 2 * (size_t)N ? 1e-6 : 1e-6 * N;
                        if (!(fabs((double)o[0][t] - o[1][t]) <= atol + 1e-5 * fabs((double)o[0][t]))) bad = t;
                    }
                    CHECK_MSG(bad == no, "layernorm %d x %d, gamma %s, beta %s: the fast sibling's value %d is %.9g, "
                              "the reference's %.9g", N, D, gk ? "set" : "NULL", bk ? "set" : "NULL", (int)bad,
                              bad < no ? o[1][bad] : 0.0, bad < no ? o[0][bad] : 0.0);
                    ++compared;
                }
            }
            hpj_set_paths(HPJ_PATHS_BEST);
            free(x); free(dy); free(g); free(b); free(o[0]); free(o[1]);
        }
    if (!compared) SKIP("built with -DHPJ_REFERENCE: no fast level to compare");
}

/* Column sums (the bias gradients): every paths level gives the bits of
   the definition, each column summed in double in row order, then rounded
   once and added to dst, for widths with and without a tail past the
   vector blocks, row strides past the width, and one row. */
static void test_colsum_paths(void) {
    static const int shape[5][3] = {{1, 7, 7}, {37, 100, 103}, {3000, 128, 128}, {500, 512, 520}, {64, 64, 64}};
    int si, lvl, i, j, runs;
    hpj_rng r;
    hpj_rng_seed(&r, 12);
    for (si = 0; si < 5; ++si) {
        int N = shape[si][0], D = shape[si][1], lds = shape[si][2];
        float *src = (float *)malloc(sizeof(float) * (size_t)N * lds), *d0 = (float *)malloc(sizeof(float) * D);
        float *ref = (float *)malloc(sizeof(float) * D), *dst = (float *)malloc(sizeof(float) * D);
        for (i = 0; i < N * lds; ++i) /* magnitudes 1e-3 .. 1e3: a float sum would round differently */
            src[i] = (2.0f * hpj_rng_uniform(&r) - 1.0f) * (float)pow(10.0, (double)(i % 7) - 3.0);
        for (j = 0; j < D; ++j) {
            double acc = 0.0;
            d0[j] = hpj_rng_uniform(&r) - 0.5f;
            for (i = 0; i < N; ++i) acc += (double)src[(size_t)i * lds + j];
            ref[j] = d0[j] + (float)acc;
        }
        runs = 0;
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            if (hpj_set_paths(lvl) != lvl) continue;
            memcpy(dst, d0, sizeof(float) * D);
            hpj__colsum_add(dst, src, N, D, lds);
            CHECK_MSG(memcmp(dst, ref, sizeof(float) * D) == 0, "column sums %d x %d (stride %d): %s differs", N, D,
                      lds, hpj_paths_name(lvl));
            ++runs;
        }
        hpj_set_paths(HPJ_PATHS_BEST);
        CHECK(runs >= 1);
        free(src); free(d0); free(ref); free(dst);
    }
}

/* hpj_layernorm_backward's dgamma / dbeta on every paths level against
   the definition: per column, in row order, the double sum
   of dy times xhat = (x - mean) rstd rounded to float, rounded once and
   added to what dgamma / dbeta held. */
static void test_ln_gb_paths(void) {
    static const int shape[6][2] = {{1, 7}, {37, 16}, {300, 128}, {29, 40}, {64, 520}, {5, 33}};
    int si, lvl, i, j, runs;
    hpj_rng r;
    hpj_rng_seed(&r, 13);
    for (si = 0; si < 6; ++si) {
        int N = shape[si][0], D = shape[si][1];
        size_t nd = (size_t)N * D;
        float *x = (float *)malloc(sizeof(float) * nd), *dy = (float *)malloc(sizeof(float) * nd);
        float *mu = (float *)malloc(sizeof(float) * N), *rs = (float *)malloc(sizeof(float) * N);
        float *g0 = (float *)malloc(sizeof(float) * D), *b0 = (float *)malloc(sizeof(float) * D);
        float *rg = (float *)malloc(sizeof(float) * D), *rb = (float *)malloc(sizeof(float) * D);
        float *dg = (float *)malloc(sizeof(float) * D), *db = (float *)malloc(sizeof(float) * D);
        for (i = 0; i < (int)nd; ++i) { /* magnitudes 1e-3 .. 1e3: a float sum would round differently */
            x[i] = (2.0f * hpj_rng_uniform(&r) - 1.0f) * (float)pow(10.0, (double)(i % 7) - 3.0);
            dy[i] = (2.0f * hpj_rng_uniform(&r) - 1.0f) * (float)pow(10.0, (double)(i % 5) - 2.0);
        }
        for (i = 0; i < N; ++i) {
            mu[i] = hpj_rng_uniform(&r) - 0.5f;
            rs[i] = 0.1f + 3.0f * hpj_rng_uniform(&r);
        }
        for (j = 0; j < D; ++j) {
            double sg = 0.0, sb = 0.0;
            g0[j] = hpj_rng_uniform(&r) - 0.5f;
            b0[j] = hpj_rng_uniform(&r) - 0.5f;
            for (i = 0; i < N; ++i) {
                float xh = (x[(size_t)i * D + j] - mu[i]) * rs[i];
                sg += (double)dy[(size_t)i * D + j] * (double)xh;
                sb += (double)dy[(size_t)i * D + j];
            }
            rg[j] = g0[j] + (float)sg;
            rb[j] = b0[j] + (float)sb;
        }
        runs = 0;
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            if (hpj_set_paths(lvl) != lvl) continue;
            memcpy(dg, g0, sizeof(float) * D);
            memcpy(db, b0, sizeof(float) * D);
            hpj_layernorm_backward(NULL, dg, db, dy, x, NULL, mu, rs, N, D);
            CHECK_MSG(memcmp(dg, rg, sizeof(float) * D) == 0 && memcmp(db, rb, sizeof(float) * D) == 0,
                      "layernorm dgamma / dbeta %d x %d: %s differs", N, D, hpj_paths_name(lvl));
            memcpy(dg, g0, sizeof(float) * D); /* dgamma alone */
            hpj_layernorm_backward(NULL, dg, NULL, dy, x, NULL, mu, rs, N, D);
            CHECK_MSG(memcmp(dg, rg, sizeof(float) * D) == 0, "layernorm dgamma alone %d x %d: %s differs", N, D,
                      hpj_paths_name(lvl));
            ++runs;
        }
        hpj_set_paths(HPJ_PATHS_BEST);
        CHECK(runs >= 1);
        free(x); free(dy); free(mu); free(rs); free(g0); free(b0); free(rg); free(rb); free(dg); free(db);
    }
}

/* The probes' row pass (hpj__probe_lin_pass) on every paths level: the
   scores are full-length dots in one order, the same bits everywhere; the
   fast part sums the gradient over rows in groups of 8 (a tree), the
   reference row by row, so the gradient agrees to rounding. Sizes: several
   row blocks, a short last group, d with a tail past the last 8. */
static void test_probe_pass_paths(void) {
    const int n = 203, d = 37, K = 3, nb = hpj__probe_nblocks(n);
    float *X = (float *)malloc(sizeof(float) * (size_t)n * d);
    double V[3 * 37], c[3], mu[37], sc[37], grad0[3 * 37], gsum0[3], grad[3 * 37], Graw[3 * 37], gsum[3];
    double *Z0 = (double *)malloc(sizeof(double) * (size_t)n * K), *Z = (double *)malloc(sizeof(double) * (size_t)n * K);
    double *G = (double *)malloc(sizeof(double) * nb * K * d), *gs = (double *)malloc(sizeof(double) * nb * K);
    double *work = (double *)malloc(sizeof(double) * nb * hpj__probe_pass_work(K));
    hpj__probe_lin A;
    hpj_rng r;
    int i, lvl, runs = 0;
    hpj_rng_seed(&r, 14);
    for (i = 0; i < n * d; ++i) X[i] = (float)hpj_rng_normal(&r);
    for (i = 0; i < K * d; ++i) V[i] = hpj_rng_normal(&r);
    for (i = 0; i < K; ++i) c[i] = hpj_rng_normal(&r);
    for (i = 0; i < d; ++i) {
        mu[i] = 0.1 * hpj_rng_normal(&r);
        sc[i] = 1.0 + hpj_rng_uniform(&r);
    }
    memset(&A, 0, sizeof(A));
    hpj__probe_lin_init(&A, X, n, d, K, mu, sc, 0.5);
    A.G = G;
    A.gs = gs;
    A.Graw = Graw;
    A.gsum = gsum;
    A.work = work;
    A.Veff = V;
    A.ceff = c;
    for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
        if (hpj_set_paths(lvl) != lvl) continue;
        hpj__probe_lin_pass(&A, NULL, NULL, Z, grad, V);
        if (runs++ == 0) { /* the reference */
            memcpy(Z0, Z, sizeof(double) * (size_t)n * K);
            memcpy(grad0, grad, sizeof grad0);
            memcpy(gsum0, gsum, sizeof gsum0);
            continue;
        }
        CHECK_MSG(memcmp(Z, Z0, sizeof(double) * (size_t)n * K) == 0, "probe scores: %s differs from the reference",
                  hpj_paths_name(lvl));
        for (i = 0; i < K * d; ++i) CHECK_NEAR(grad[i], grad0[i], 1e-12, 1e-12);
        for (i = 0; i < K; ++i) CHECK_NEAR(gsum[i], gsum0[i], 1e-12, 1e-12);
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    CHECK(runs >= 1);
    free(X); free(Z0); free(Z); free(G); free(gs); free(work);
}

/* The team-size governor (hpj__gov) on made-up timings: it tries the other
   size after the first unit, switches when that is more than 10 % faster,
   waits HPJ__GOV_RATIO times a trial's cost before the next trial (0 in
   this file: every other unit) and gives the caller its team back. */
static void test_gov_choice(void) {
#if defined(_OPENMP) && !defined(HPJ_REFERENCE) /* (the governor is in the fast part) */
    hpj__gov g;
    int i;
    memset(&g, 0, sizeof g);
    g.T = g.cur = 4;
    g.backoff = 1.0;
    CHECK_EQ_INT(hpj__gov_pick(&g), 4); /* the first unit: the team asked for */
    hpj__gov_measure(&g, 100.0, 1.0);    /* 100 a second on 4 threads */
    CHECK_EQ_INT(hpj__gov_pick(&g), 1); /* then a trial of one thread */
    hpj__gov_measure(&g, 100.0, 0.5);    /* 200 a second: one thread wins */
    CHECK_EQ_INT(g.cur, 1);
    CHECK_NEAR(g.wait, 0.0, 0.0, 1e-12); /* HPJ__GOV_RATIO 0 here: no wait */
    CHECK_EQ_INT(hpj__gov_pick(&g), 1); /* a unit on the winner first */
    hpj__gov_measure(&g, 100.0, 0.5);
    CHECK_EQ_INT(hpj__gov_pick(&g), 4); /* then the loser again */
    hpj__gov_measure(&g, 100.0, 0.48);   /* 208 a second: not 10 % better */
    CHECK_EQ_INT(g.cur, 1);
    CHECK_NEAR(g.backoff, 2.0, 0.0, 1e-12); /* the choice held: trials further apart */
    for (i = 0; i < 3; ++i) { /* the load goes: 4 threads at 400 a second */
        hpj__gov_pick(&g);
        hpj__gov_measure(&g, 100.0, g.size == 1 ? 0.5 : 0.25);
    }
    CHECK_EQ_INT(g.cur, 4);
    CHECK_NEAR(g.backoff, 1.0, 0.0, 1e-12);
    g.wait = 100.0; /* trials far apart, as after many confirmations ... */
    g.waited = 0.0;
    hpj__gov_pick(&g);
    hpj__gov_measure(&g, 100.0, 0.25);
    CHECK_EQ_INT(hpj__gov_pick(&g), 4); /* ... while 4 threads keep their speed */
    hpj__gov_measure(&g, 100.0, 5.0); /* a load arrives: 20 a second, below one thread's 200 */
    CHECK_EQ_INT(hpj__gov_pick(&g), 1); /* the trial is due at once */
    hpj__gov_measure(&g, 100.0, 0.0); /* a unit too short for the clock changes nothing */
    CHECK_EQ_INT(g.cur, 4);
#else
    SKIP("needs OpenMP and the fast part (the governor)");
#endif
}

/* Training and embedding while the governor switches between one and two
   threads every other unit give the bits of a fixed team, and the calls
   give the caller its team size back. */
static void test_gov_same_bits(void) {
#if defined(_OPENMP) && !defined(HPJ_REFERENCE) /* (the governor is in the fast part) */
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m[2];
    int32_t *gs;
    float *H[2];
    int t;
    size_t n;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    n = (size_t)ds.num_graphs * 3 * 32;
    for (t = 0; t < 2; ++t) { /* t = 0: two threads throughout; 1: switching */
        park_config(&c);
        hpj_config_set(&c, "resolutions", "2,4,8");
        hpj_config_set(&c, "targets", "1,2,3");
        hpj_config_set(&c, "batch_size", "16");
        hpj_config_set(&c, "epochs", "2");
        hpj_config_set(&c, "dropout", "0.1");
        hpj_set_adaptive_threads(t);
        memset(hpj__gov_state, 0, sizeof hpj__gov_state);
        omp_set_num_threads(2);
        H[t] = (float *)malloc(sizeof(float) * n);
        CHECK_OK(hpj_model_init(&m[t], &c, &ds));
        CHECK_OK(hpj_pretrain(&m[t], &ds, gs, ds.num_graphs, 0, NULL, NULL));
        CHECK_OK(hpj_embed(&m[t], &ds, gs, ds.num_graphs, H[t]));
        CHECK_EQ_INT(omp_get_max_threads(), 2);
        if (t) CHECK_MSG(hpj__gov_state[HPJ__GOV_TRAIN].T == 2 && hpj__gov_state[HPJ__GOV_TRAIN].rate[0] > 0.0 &&
                             hpj__gov_state[HPJ__GOV_TRAIN].rate[1] > 0.0,
                         "the governor did not time both team sizes");
    }
    hpj_set_adaptive_threads(1);
    CHECK_MSG(same_model(&m[0], &m[1]), "the model trained with switching team sizes differs");
    CHECK_MSG(memcmp(H[0], H[1], sizeof(float) * n) == 0, "the embeddings differ");
    for (t = 0; t < 2; ++t) {
        free(H[t]);
        hpj_model_free(&m[t]);
    }
    free(gs);
    hpj_dataset_free(&ds);
#else
    SKIP("needs OpenMP and the fast part (the governor)");
#endif
}

/* The patch tokens z (and structural queries p) of items it[0..S-1] from
   the frozen patch encoder with resolution l's running statistics, as the
   embedding pass computes them, into z (S, D) and p (S, D). */
static void encode_items(hpj__trainer *tr, const hpj__item *it, int32_t S, int l, float *z, float *p) {
    hpj_model *m = tr->m;
    hpj__item *its = (hpj__item *)malloc(sizeof(hpj__item) * (size_t)S);
    hpj__gnn_ws gw;
    hpj__sq_ws pw;
    hpj_arena meas;
    int64_t cnt[3];
    size_t mark;
    memcpy(its, it, sizeof(hpj__item) * (size_t)S);
    hpj__path_count(&tr->tk, its, S, &tr->ps, hpj__path_groups(m), &cnt[0], &cnt[1], &cnt[2]);
    hpj_arena_init_measure(&meas);
    hpj__gnn_bind(&meas, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL, 1);
    hpj__sq_bind(&meas, m, &pw, S);
    CHECK_OK(hpj__arena_ensure(&tr->arena, meas.used));
    mark = hpj_arena_mark(&tr->arena);
    hpj__gnn_bind(&tr->arena, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL, 1);
    hpj__sq_bind(&tr->arena, m, &pw, S);
    hpj__path_fill(tr->ds, &tr->tk, its, &gw.path, &tr->ps, 0);
    hpj__path_features(m, tr->ds, &gw);
    hpj__gnn_forward(m, &gw, &m->bn[l], hpj__norm_running, 0);
    hpj__sq_forward(m, &pw, &m->bn[l], &tr->tk, its, S, hpj__norm_running);
    memcpy(z, gw.z, sizeof(float) * (size_t)S * m->D);
    memcpy(p, pw.p, sizeof(float) * (size_t)S * m->D);
    hpj_arena_reset(&tr->arena, mark);
    free(its);
}

/* One definition of a patch token in every path: the lists of patches the
   three passes hand the patch encoder (the step's contexts, one patch per
   graph; its sampled targets; the embedding pass's every patch of every
   graph; and each patch by itself) give every patch the same token z and
   structural query p, to 1e-6 of the largest token entry (the products
   and sums of one row do not depend on the other rows, but the GEMM may
   tile a different number of rows differently), with patch_tokens =
   alone, on the reference and the fast paths, at every resolution of a
   model trained for a few steps (non-trivial running statistics; the
   encoder frozen, as the embedding pass runs it). With patch_tokens =
   present the same lists give tokens that differ by far more: the check
   can fail. With patch_tokens = graph the step's one list (every patch of
   each graph with a context, hpj__whole_graphs) gives the contexts and
   the targets, at the rows it names, the embedding pass's tokens. */
static void test_patch_token_paths(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    int32_t *gs;
    int pt, path, l;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    gs = test_all_graphs(&ds);
    for (pt = 0; pt < 3; ++pt)
        for (path = 0; path < 2; ++path) {
            static const char *const tokens[3] = {"alone", "present", "graph"};
            hpj_config c;
            hpj_model m;
            hpj__trainer tr;
            hpj_set_paths(path ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE);
            hpj_config_default(&c);
            hpj_config_set(&c, "dim", "16");
            hpj_config_set(&c, "heads", "2");
            hpj_config_set(&c, "blocks", "1");
            hpj_config_set(&c, "ffn", "16");
            hpj_config_set(&c, "rw_dim", "5");
            hpj_config_set(&c, "resolutions", "2,4,8");
            hpj_config_set(&c, "targets", "1,3,4");
            hpj_config_set(&c, "gnn_layers", "3");
            hpj_config_set(&c, "batch_size", "32");
            hpj_config_set(&c, "patch_tokens", tokens[pt]);
            CHECK_OK(hpj_model_init(&m, &c, &ds));
            CHECK_OK(hpj_pretrain(&m, &ds, gs, 64, 6, NULL, NULL));
            CHECK_OK(hpj__trainer_init(&tr, &m, &ds, 64));
            CHECK_OK(hpj__trainer_tokens(&tr, gs, 64, 1, 0));
            for (l = 0; l < 3; ++l) {
                int32_t B, T, S = 0, b, j, k, s, q;
                hpj__item *all = (hpj__item *)malloc(sizeof(hpj__item) * 64 * 64);
                float *za, *pa, *zb, *pb, zmax = 0.0f;
                double dz[3] = {0, 0, 0}, dp[3] = {0, 0, 0};
                B = hpj__sample(&tr, gs, 64, l, &T);
                CHECK(B > 0 && T >= B);
                for (b = 0; b < 64; ++b) { /* the embedding pass's list */
                    int32_t g = gs[b], kk = tr.tk.k[(size_t)g * tr.tk.L + l];
                    int64_t p0 = tr.tk.patch0[(size_t)g * tr.tk.L + l];
                    for (j = 0; j < kk; ++j) { all[S].g = g; all[S].slot = j; all[S].patch = p0 + j; ++S; }
                }
                za = (float *)malloc(sizeof(float) * (size_t)S * m.D);
                pa = (float *)malloc(sizeof(float) * (size_t)S * m.D);
                zb = (float *)malloc(sizeof(float) * (size_t)S * m.D);
                pb = (float *)malloc(sizeof(float) * (size_t)S * m.D);
                encode_items(&tr, all, S, l, za, pa);
                for (k = 0; k < S * m.D; ++k) zmax = fmaxf(zmax, fabsf(za[k]));
                CHECK(zmax > 0.0f);
                if (pt == 2) { /* graph: the step's list, its context and target rows */
                    int32_t S2 = hpj__whole_graphs(&tr, B);
                    double dzg = 0.0;
                    CHECK(S2 > B && S2 <= S);
                    encode_items(&tr, tr.whole, S2, l, zb, pb);
                    for (s = 0; s < B + T; ++s) {
                        const hpj__item *it = s < B ? &tr.ctx[s] : &tr.tgt[s - B];
                        int32_t row = s < B ? tr.crow[s] : tr.trow[s - B], r = 0;
                        CHECK_EQ_INT((int)tr.whole[row].patch, (int)it->patch);
                        while (all[r].patch != it->patch) ++r;
                        for (k = 0; k < m.D; ++k)
                            dzg = fmax(dzg, fabs((double)zb[(size_t)row * m.D + k] - za[(size_t)r * m.D + k]));
                    }
                    CHECK_MSG(dzg <= 1e-6 * zmax, "graph, %s path, resolution %d: the step's tokens differ by %.3g (largest %.3g)",
                              path ? "fast" : "reference", l + 1, dzg, zmax);
                    { /* the step's own forward takes each context's and target's token from the row of its patch */
                        hpj__step_ws w;
                        size_t mark = 0;
                        int active = 0, bad = 0;
                        tr.mode = HPJ__TRAIN_FROZEN;
                        CHECK_OK(hpj__batch_load(&tr, gs, 64, l, &w, &mark, &active));
                        CHECK(active && w.S == S2 && w.B == B && w.T == T);
                        hpj__fwd_context(&tr, &w, w.B, w.T, 1);
                        hpj__fwd_target(&tr, &w, w.B, w.T, w.Tm);
                        for (s = 0; s < B + T && active; ++s) {
                            const hpj__item *it = s < B ? &tr.ctx[s] : &tr.tgt[s - B];
                            int32_t r = 0, b2 = 0, j2;
                            const float *got;
                            while (tr.whole[r].patch != it->patch) ++r;
                            if (s < B) {
                                got = w.ec.x[0] + (size_t)s * m.D; /* z + p */
                                for (k = 0; k < m.D; ++k)
                                    bad += got[k] != w.gc.z[(size_t)r * m.D + k] + w.pc.p[(size_t)s * m.D + k];
                            } else {
                                while (tr.tptr[b2 + 1] <= s - B) ++b2;
                                j2 = s - B - tr.tptr[b2];
                                got = w.et.x[0] + ((size_t)b2 * w.Tm + j2) * m.D;
                                bad += memcmp(got, w.gc.z + (size_t)r * m.D, sizeof(float) * m.D) != 0;
                            }
                        }
                        CHECK_MSG(bad == 0, "graph, resolution %d: %d context / target tokens are not their patch's row", l + 1, bad);
                        hpj_arena_reset(&tr.arena, mark);
                        tr.mode = HPJ__TRAIN;
                    }
                    free(all); free(za); free(pa); free(zb); free(pb);
                    continue;
                }
                for (q = 0; q < 3; ++q) { /* contexts, targets, each patch by itself */
                    const hpj__item *it = q == 0 ? tr.ctx : q == 1 ? tr.tgt : all;
                    int32_t n = q == 0 ? B : q == 1 ? T : S;
                    if (q < 2) encode_items(&tr, it, n, l, zb, pb);
                    for (s = 0; s < n; s += q == 2 ? 7 : 1) { /* (every 7th patch by itself) */
                        int32_t r = 0;
                        if (q == 2) encode_items(&tr, it + s, 1, l, zb + (size_t)s * m.D, pb + (size_t)s * m.D);
                        while (all[r].patch != it[s].patch) ++r; /* its row in the embedding pass */
                        for (k = 0; k < m.D; ++k) {
                            dz[q] = fmax(dz[q], fabs((double)zb[(size_t)s * m.D + k] - za[(size_t)r * m.D + k]));
                            dp[q] = fmax(dp[q], fabs((double)pb[(size_t)s * m.D + k] - pa[(size_t)r * m.D + k]));
                        }
                    }
                }
                for (q = 0; q < 3; ++q) {
                    static const char *const what[3] = {"context", "target", "single-patch"};
                    if (pt == 0)
                        CHECK_MSG(dz[q] <= 1e-6 * zmax, "alone, %s path, resolution %d: %s tokens differ by %.3g (largest %.3g)",
                                  path ? "fast" : "reference", l + 1, what[q], dz[q], zmax);
                    CHECK_MSG(dp[q] <= 1e-6 * zmax, "%s path, resolution %d: %s structural queries differ by %.3g",
                              path ? "fast" : "reference", l + 1, what[q], dp[q]);
                }
                if (pt == 1) /* averaging over the patches present: the lists disagree */
                    CHECK_MSG(dz[0] > 1e-3 * zmax && dz[1] > 1e-3 * zmax,
                              "present, resolution %d: context %.3g, target %.3g (largest %.3g)", l + 1, dz[0], dz[1], zmax);
                free(all); free(za); free(pa); free(zb); free(pb);
            }
            hpj__trainer_free(&tr);
            hpj_model_free(&m);
        }
    hpj_set_paths(HPJ_PATHS_BEST);
    free(gs);
    hpj_dataset_free(&ds);
}

/* The optimizer's update (hpj__adam_ema) on every paths level gives the
   bits of hpj_adam_step followed by hpj_ema_update, for Adam, AdamW and
   adam_active, over whole 16-float blocks and a partial last one, with
   zero gradients of both signs (adam_active leaves their decay out) and
   an encoder range that starts at a block boundary, as the fast pass
   requires. */
static void test_adam_ema_paths(void) {
    enum { N = 16 * 6 + 7, EO = 32 };
    float p0[N], g[N], m0[N], v0[N], e0[N - EO], P[N], M[N], V[N], E[N - EO];
    float p[N], mo[N], v[N], e[N - EO];
    const float lr = 3e-3f, tau = 0.99f;
    int opt, lvl, i, runs = 0;
    hpj_rng r;
    hpj_rng_seed(&r, 55);
    for (i = 0; i < N; ++i) {
        p0[i] = (float)hpj_rng_normal(&r);
        g[i] = i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : (float)(0.1 * hpj_rng_normal(&r));
        m0[i] = (float)(0.01 * hpj_rng_normal(&r));
        v0[i] = (float)(1e-4 * hpj_rng_uniform(&r));
        if (i >= EO) e0[i - EO] = p0[i] + (float)(0.01 * hpj_rng_normal(&r));
    }
    for (opt = HPJ_OPT_ADAM; opt <= HPJ_OPT_ADAM_ACTIVE; ++opt) {
        hpj_model m;
        memset(&m, 0, sizeof m);
        m.cfg.optimizer = opt;
        m.cfg.weight_decay = 0.05f;
        m.step = 4;
        m.num_params = N;
        m.enc_offset = EO;
        m.enc_count = N - EO;
        memcpy(P, p0, sizeof P); memcpy(M, m0, sizeof M); memcpy(V, v0, sizeof V); memcpy(E, e0, sizeof E);
        hpj_adam_step(P, g, M, V, N, lr, 0.9f, 0.999f, 1e-8f, m.cfg.weight_decay, opt, m.step + 1);
        hpj_ema_update(E, P + EO, N - EO, tau);
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            if (hpj_set_paths(lvl) != lvl) continue;
            memcpy(p, p0, sizeof p); memcpy(mo, m0, sizeof mo); memcpy(v, v0, sizeof v); memcpy(e, e0, sizeof e);
            m.params = p; m.grads = g; m.adam_m = mo; m.adam_v = v; m.ema = e;
            hpj__adam_ema(&m, lr, tau);
            CHECK_MSG(memcmp(p, P, sizeof p) == 0 && memcmp(mo, M, sizeof mo) == 0 && memcmp(v, V, sizeof v) == 0 &&
                          memcmp(e, E, sizeof e) == 0,
                      "optimizer %d, %s: not the bits of hpj_adam_step and hpj_ema_update", opt, hpj_paths_name(lvl));
            ++runs;
        }
        hpj_set_paths(HPJ_PATHS_BEST);
    }
    CHECK(runs >= 3);
}

const test_case internals_tests[] = {
    {"internals.failure_threads", test_failure_threads},
    {"internals.bn_sums_paths", test_bn_sums_paths},
    {"internals.bn_sum_only", test_bn_sum_only},
    {"internals.bn_reference_vs_fast", test_bn_reference_vs_fast},
    {"internals.bn_backward_kernels", test_bn_backward_kernels},
    {"internals.ln_reference_vs_fast", test_ln_reference_vs_fast},
    {"internals.colsum_paths", test_colsum_paths},
    {"internals.probe_pass_paths", test_probe_pass_paths},
    {"internals.ln_gb_paths", test_ln_gb_paths},
    {"internals.gov_choice", test_gov_choice},
    {"internals.gov_same_bits", test_gov_same_bits},
    {"internals.patch_token_paths", test_patch_token_paths},
    {"internals.adam_ema_paths", test_adam_ema_paths},
};
const int internals_tests_count = (int)(sizeof internals_tests / sizeof internals_tests[0]);
