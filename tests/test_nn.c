/* Tests of the nn module: GEMM against a naive loop, finite-difference
   gradient checks of every layer, optimiser/schedule/EMA formulas, and
   bit-identical results for 1 and 2 threads. */
#include "test.h"
/* the references below are written as separately rounded float operations;
   clang would otherwise fuse a * b + c (as the implementation forbids) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- helpers ------------------------------------------------------------ */

static float *fbuf(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }
static void fill_uniform(float *x, size_t n, float lo, float hi, hpj_rng *r) {
    size_t i;
    for (i = 0; i < n; ++i) x[i] = lo + (hi - lo) * hpj_rng_uniform(r);
}
/* values with |x| in [lo, hi] and a random sign: away from ReLU kinks */
static void fill_away(float *x, size_t n, float lo, float hi, hpj_rng *r) {
    size_t i;
    for (i = 0; i < n; ++i) {
        float v = lo + (hi - lo) * hpj_rng_uniform(r);
        x[i] = hpj_rng_below(r, 2) ? v : -v;
    }
}
static double wsum(const float *out, const float *w, size_t n) {
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) s += (double)out[i] * w[i];
    return s;
}
static int bits_equal(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }
static float maxabs(const float *a, size_t n) {
    float m = 0.0f;
    size_t i;
    for (i = 0; i < n; ++i)
        if (fabsf(a[i]) > m) m = fabsf(a[i]);
    return m;
}

/* Finite-difference check. loss() runs the forward on the current inputs
   and returns sum(out * w) in double. For up to `probes` elements of x
   (all if n <= probes) compares the central difference (step h) with
   the analytic gradient g: |g - fd| <= tol * max(|g|, |fd|, floor) with
   floor = 0.05 * max|g| (+ a tiny absolute guard). Also fails when the
   analytic gradient is all zeros. Returns 0 on success, else prints. */
typedef double (*loss_fn)(void *ctx);
static int gradcheck(const char *what, loss_fn loss, void *ctx, float *x, const float *g, size_t n, float h,
                     double tol, int probes, hpj_rng *r) {
    double gmax = maxabs(g, n), floor_ = 0.05 * gmax + 1e-6, worst = 0.0;
    size_t p, np = n <= (size_t)probes ? n : (size_t)probes;
    if (!(gmax > 1e-6)) {
        test_report(__FILE__, __LINE__, "%s: analytic gradient is all zeros (max %g)", what, gmax);
        return 1;
    }
    for (p = 0; p < np; ++p) {
        size_t i = n <= (size_t)probes ? p : hpj_rng_below(r, (uint32_t)n);
        float keep = x[i];
        double lp, lm, fd, den, err;
        x[i] = keep + h;
        lp = loss(ctx);
        x[i] = keep - h;
        lm = loss(ctx);
        x[i] = keep;
        fd = (lp - lm) / (2.0 * (double)h);
        den = fabs(g[i]) > fabs(fd) ? fabs(g[i]) : fabs(fd);
        if (den < floor_) den = floor_;
        err = fabs(g[i] - fd) / den;
        if (err > worst) worst = err;
        if (!(err <= tol)) {
            test_report(__FILE__, __LINE__, "%s[%zu]: analytic %.7g vs numeric %.7g (rel err %.3g > %.3g)", what, i,
                        (double)g[i], fd, err, tol);
            return 1;
        }
    }
    return 0;
}

/* Runs backward() twice into zeroed buffers and checks the second call
   doubled every gradient: a backward must accumulate. */
static int doubles(const char *what, const float *once, const float *twice, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        double want = 2.0 * once[i];
        if (!(fabs(twice[i] - want) <= 1e-5 * fabs(want) + 1e-7)) {
            test_report(__FILE__, __LINE__, "%s[%zu]: second backward gave %.9g, want 2 x %.9g", what, i,
                        (double)twice[i], (double)once[i]);
            return 1;
        }
    }
    return 0;
}

#ifdef _OPENMP
static void set_threads(int t) { omp_set_num_threads(t); }
#endif

/* ---- GEMM --------------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C in double, for the check. */
static void naive_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                       int ldb, float beta, const float *C0, double *C, int ldc) {
    int i, j, k;
    for (i = 0; i < M; ++i)
        for (j = 0; j < N; ++j) {
            double s = 0.0;
            for (k = 0; k < K; ++k)
                s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
            C[i * ldc + j] = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)C0[i * ldc + j]);
        }
}

/* One GEMM call against the naive loop; NaN-filled C when beta == 0 and a
   sentinel in the padding columns of C. Returns 0 if it matches. */
static int gemm_case(int ta, int tb, int M, int N, int K, int pad, float alpha, float beta, hpj_rng *r) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    int arows = ta ? K : M, brows = tb ? N : K, i, j, bad = 0;
    float *A = fbuf((size_t)arows * lda), *B = fbuf((size_t)brows * ldb);
    float *C = fbuf((size_t)M * ldc), *C0 = fbuf((size_t)M * ldc);
    double *R = (double *)calloc((size_t)M * ldc, sizeof(double));
    fill_uniform(A, (size_t)arows * lda, -1.0f, 1.0f, r);
    fill_uniform(B, (size_t)brows * ldb, -1.0f, 1.0f, r);
    for (i = 0; i < M * ldc; ++i) C0[i] = (i % ldc) >= N ? 12345.0f : beta == 0.0f ? NAN : hpj_rng_uniform(r) - 0.5f;
    memcpy(C, C0, sizeof(float) * (size_t)M * ldc);
    naive_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C0, R, ldc);
    hpj_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    for (i = 0; i < M && !bad; ++i)
        for (j = 0; j < ldc; ++j) {
            double got = C[i * ldc + j];
            if (j >= N) {
                if (got != 12345.0) {
                    test_report(__FILE__, __LINE__, "gemm %c%c %dx%dx%d: padding C[%d][%d] overwritten", ta ? 'T' : 'N',
                                tb ? 'T' : 'N', M, N, K, i, j);
                    bad = 1;
                    break;
                }
                continue;
            }
            if (!(fabs(got - R[i * ldc + j]) <= 2e-6 * (K + 4) * (1.0 + fabs(R[i * ldc + j])))) {
                test_report(__FILE__, __LINE__, "gemm %c%c %dx%dx%d pad %d alpha %g beta %g paths %s: C[%d][%d] = %.9g, want %.9g",
                            ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, pad, alpha, beta,
                            hpj_paths_name(hpj_paths()), i, j, got, R[i * ldc + j]);
                bad = 1;
                break;
            }
        }
    free(A);
    free(B);
    free(C);
    free(C0);
    free(R);
    return bad;
}

static void test_gemm_naive(void) {
    hpj_rng r;
    int level, layout, t;
    hpj_rng_seed(&r, 11);
    FOR_EACH_PATHS(level) {
        for (layout = 0; layout < 4; ++layout) {
            int ta = layout & 1, tb = layout >> 1;
            /* every small size 1..37 in each dimension, paired at random */
            for (t = 1; t <= 37; ++t) {
                int M = t, N = 1 + (int)hpj_rng_below(&r, 37), K = 1 + (int)hpj_rng_below(&r, 37);
                float beta = t % 3 == 0 ? 0.0f : t % 3 == 1 ? 1.0f : -0.5f;
                if (gemm_case(ta, tb, M, N, K, t % 4, t % 2 ? 1.0f : 0.75f, beta, &r)) goto out;
                if (gemm_case(ta, tb, N, M, K, (t + 1) % 3, 1.0f, beta == 0.0f ? 1.0f : 0.0f, &r)) goto out;
                if (gemm_case(ta, tb, K, N, M, 0, -1.0f, beta, &r)) goto out;
            }
            /* past the blocking: K > 256 (two K blocks), M > 128, N > 512 */
            if (gemm_case(ta, tb, 133, 37, 300, 3, 1.0f, 0.0f, &r)) goto out;
            if (gemm_case(ta, tb, 41, 530, 20, 1, 1.0f, 1.0f, &r)) goto out;
            if (gemm_case(ta, tb, 9, 17, 600, 0, 0.5f, 1.0f, &r)) goto out;
            /* B too large to pack whole (threads share it block by block) */
            if (layout == 1 && gemm_case(ta, tb, 70, 530, 520, 1, 1.0f, 0.0f, &r)) goto out;
        }
    }
out:
    hpj_set_paths(HPJ_PATHS_BEST);
}

/* alpha == 0 and K == 0 scale C by beta without reading A or B. */
static void test_gemm_degenerate(void) {
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {NAN}, B[1] = {NAN};
    int i;
    hpj_gemm(0, 0, 2, 3, 0, 1.0f, A, 1, B, 3, 2.0f, C, 3);
    for (i = 0; i < 6; ++i) CHECK_NEAR(C[i], 2.0 * (i + 1), 0, 0);
    hpj_gemm(0, 0, 2, 3, 0, 1.0f, A, 1, B, 3, 0.0f, C, 3);
    for (i = 0; i < 6; ++i) CHECK(C[i] == 0.0f);
    hpj_gemm(0, 0, 0, 3, 5, 1.0f, A, 1, B, 3, 0.0f, C, 3); /* M = 0: nothing */
    CHECK(C[0] == 0.0f);
}

/* The bias gradient of hpj_linear_backward, db += the column sums of dout,
   each column summed in double in row order and added to db once: the
   same bits as that arithmetic written out here, on every paths level,
   at widths with a partial block of 64 and of 16 columns. */
static void test_linear_bias_grad(void) {
    int N = 131, Din = 5, widths[3] = {64, 150, 7}, wi, lvl, c, i;
    hpj_rng r;
    hpj_rng_seed(&r, 9);
    for (wi = 0; wi < 3; ++wi) {
        int Dout = widths[wi];
        float *dout = fbuf((size_t)N * Dout), *inp = fbuf((size_t)N * Din), *W = fbuf((size_t)Dout * Din);
        float *dinp = fbuf((size_t)N * Din), *dW = fbuf((size_t)Dout * Din), *db = fbuf((size_t)Dout);
        float *want = fbuf((size_t)Dout);
        fill_uniform(dout, (size_t)N * Dout, -1, 1, &r);
        for (i = 0; i < N * Dout; i += 17) dout[i] *= 1e6f; /* sums that float alone would round differently */
        fill_uniform(inp, (size_t)N * Din, -1, 1, &r);
        fill_uniform(W, (size_t)Dout * Din, -1, 1, &r);
        for (c = 0; c < Dout; ++c) {
            double acc = 0.0;
            for (i = 0; i < N; ++i) acc += dout[(size_t)i * Dout + c];
            want[c] = 0.5f + (float)acc;
        }
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            if (hpj_set_paths(lvl) != lvl) continue;
            for (c = 0; c < Dout; ++c) db[c] = 0.5f;
            hpj_linear_backward(dinp, dW, db, dout, inp, W, N, Din, Dout);
            CHECK_MSG(bits_equal(db, want, (size_t)Dout), "bias gradient, %d columns, %s: not the column sums in double",
                      Dout, hpj_paths_name(lvl));
        }
        hpj_set_paths(HPJ_PATHS_BEST);
        free(dout); free(inp); free(W); free(dinp); free(dW); free(db); free(want);
    }
}

/* The reference loops and every fast level give the same bits: the fast
   GEMM keeps the reference's order of operations for every element. Odd
   shapes through each way the fast GEMM has: a small product, few rows
   (B read in place), narrow products (a transposed A read in place), rows
   and columns past the blocking and the tiles, K in two and three blocks,
   a team sharing a packed B; all four layouts, beta 0 (C holds NaN, never
   read), 1 and -2, alpha 1 and 0.75, padded leading dimensions whose
   padding must stay untouched. Without a fast fma the SIMD kernels fuse
   where the reference does not: they are then held to a tolerance. */
static void test_gemm_paths_agree(void) {
    static const int shapes[9][3] = {{5, 7, 9},      {13, 40, 37},   {16, 530, 300}, {37, 100, 513}, {70, 90, 300},
                                     {61, 40, 600}, {133, 263, 257}, {32, 300, 300}, {300, 45, 70}};
    static const float betas[3] = {0.0f, 1.0f, -2.0f};
    hpj_rng r;
    int s, layout, level, compared = 0;
    size_t i;
    hpj_rng_seed(&r, 23);
    for (s = 0; s < 9; ++s) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ldc = N + 2;
        size_t na = (size_t)(M + 3) * (K + 3), nb = (size_t)(K + 5) * (N + 5), nc = (size_t)M * ldc;
        float *A = fbuf(na), *B = fbuf(nb), *C0 = fbuf(nc), *R = fbuf(nc), *F = fbuf(nc);
        fill_uniform(A, na, -1, 1, &r);
        fill_uniform(B, nb, -1, 1, &r);
        for (layout = 0; layout < 4; ++layout) {
            int ta = layout & 1, tb = layout >> 1, lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5;
            float alpha = (layout + s) % 2 ? 0.75f : 1.0f, beta = betas[(layout + s) % 3];
            for (i = 0; i < nc; ++i)
                C0[i] = (int)(i % (size_t)ldc) >= N ? 7.0f : beta == 0.0f ? NAN : hpj_rng_uniform(&r) - 0.5f;
            memcpy(R, C0, nc * sizeof(float));
            hpj_set_paths(HPJ_PATHS_REFERENCE);
            hpj_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
            for (level = HPJ_PATHS_PORTABLE; level <= HPJ_PATHS_AVX512; ++level) {
                int same;
                if (hpj_set_paths(level) != level) continue;
                memcpy(F, C0, nc * sizeof(float));
                hpj_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, F, ldc);
                same = bits_equal(R, F, nc);
#if !defined(FP_FAST_FMAF)
                if (!same && level >= HPJ_PATHS_AVX2) {
                    same = 1;
                    for (i = 0; i < nc; ++i) same &= fabsf(R[i] - F[i]) <= 1e-5f * (float)(K + 4) * (1.0f + fabsf(R[i]));
                }
#endif
                ++compared;
                if (!same) hpj_set_paths(HPJ_PATHS_BEST);
                CHECK_MSG(same, "gemm %dx%dx%d layout %d alpha %g beta %g: %s differs from the reference", M, N, K,
                          layout, alpha, beta, hpj_paths_name(level));
            }
        }
        free(A);
        free(B);
        free(C0);
        free(R);
        free(F);
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    if (!compared) SKIP("built with -DHPJ_REFERENCE: no fast level to compare");
}

/* hpj_linear_forward's bias is written by the GEMM's tile loop just before
   the first K block (hpj__gemm_bias_tile) instead of by a fill pass; the
   output must have the bits of hpj_gemm with beta = 1 on a C filled with
   the bias rows: the small path, the tiled path with two K blocks and
   partial slivers, a 48-row product, every kernel. */
static void test_linear_bias_tiles(void) {
    hpj_rng r;
    static const int shape[4][3] = {{5, 16, 24}, {301, 300, 263}, {48, 300, 263}, {130, 64, 70}};
    int sh, isa, i;
    float *inp = fbuf((size_t)301 * 300), *W = fbuf((size_t)263 * 300), *b = fbuf(263);
    float *out = fbuf((size_t)301 * 263), *ref = fbuf((size_t)301 * 263);
    hpj_rng_seed(&r, 29);
    fill_uniform(inp, (size_t)301 * 300, -1, 1, &r);
    fill_uniform(W, (size_t)263 * 300, -1, 1, &r);
    fill_uniform(b, 263, -1, 1, &r);
    FOR_EACH_PATHS(isa) {
        for (sh = 0; sh < 4; ++sh) {
            int N = shape[sh][0], Din = shape[sh][1], Dout = shape[sh][2], row;
            for (row = 0; row < N; ++row) memcpy(ref + (size_t)row * Dout, b, sizeof(float) * (size_t)Dout);
            hpj_gemm(0, 1, N, Dout, Din, 1.0f, inp, Din, W, Din, 1.0f, ref, Dout);
            for (i = 0; i < N * Dout; ++i) out[i] = 1e30f; /* must all be overwritten */
            hpj_linear_forward(out, inp, W, b, N, Din, Dout);
            if (!bits_equal(ref, out, (size_t)N * Dout)) {
                hpj_set_paths(HPJ_PATHS_BEST);
                CHECK_MSG(0, "%s, %d x %d -> %d: linear forward with bias differs from the GEMM on bias rows",
                          hpj_paths_name(isa), N, Din, Dout);
            }
        }
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    free(inp);
    free(W);
    free(b);
    free(out);
    free(ref);
}

/* Small products take a separate path (stack buffers, no tiling); its
   rows must have the bits of the same rows computed by the blocked path,
   on every paths level. */
static void test_gemm_small_path(void) {
    hpj_rng r;
    int Mb = 300, N = 40, K = 37, Ms = 13, layout, level, i;
    float *A = fbuf((size_t)Mb * K), *B = fbuf((size_t)K * N), *Cb = fbuf((size_t)Mb * N), *Cs = fbuf((size_t)Ms * N);
    hpj_rng_seed(&r, 13);
    fill_uniform(A, (size_t)Mb * K, -1, 1, &r);
    fill_uniform(B, (size_t)K * N, -1, 1, &r);
    FOR_EACH_PATHS(level) {
        for (layout = 0; layout < 4; ++layout) {
            int ta = layout & 1, tb = layout >> 1;
            for (i = 0; i < Mb * N; ++i) Cb[i] = 0.5f;
            for (i = 0; i < Ms * N; ++i) Cs[i] = 0.5f;
            /* the small call reads the first Ms rows of op(A) in place */
            hpj_gemm(ta, tb, Mb, N, K, 0.75f, A, ta ? Mb : K, B, tb ? K : N, -2.0f, Cb, N);
            hpj_gemm(ta, tb, Ms, N, K, 0.75f, A, ta ? Mb : K, B, tb ? K : N, -2.0f, Cs, N);
            if (!bits_equal(Cb, Cs, (size_t)Ms * N)) {
                hpj_set_paths(HPJ_PATHS_BEST);
                CHECK_MSG(0, "%s layout %d: small-path rows differ from the blocked path", hpj_paths_name(level), layout);
            }
        }
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    free(A);
    free(B);
    free(Cb);
    free(Cs);
}

/* Products of at most 16 rows with both operands row-major read B in place
   (the SIMD kernels); their rows must have the bits of the same rows
   computed with a packed B (40 rows), for K within one K block and across
   several, N with and without partial tiles, and every alpha / beta case. */
static void test_gemm_fewrows_path(void) {
    hpj_rng r;
    int Mb = 40, Ms[4] = {1, 7, 13, 16}, Ns[3] = {64, 100, 530}, Ks[4] = {5, 256, 300, 600}, a, b, c, i;
    float alphas[2] = {1.0f, 0.75f}, betas[3] = {0.0f, 1.0f, -2.0f};
    float *A = fbuf((size_t)Mb * 600), *B = fbuf((size_t)600 * 530), *Cb = fbuf((size_t)Mb * 530), *Cs = fbuf((size_t)16 * 530);
    hpj_rng_seed(&r, 17);
    fill_uniform(A, (size_t)Mb * 600, -1, 1, &r);
    fill_uniform(B, (size_t)600 * 530, -1, 1, &r);
    for (a = 0; a < 4; ++a)
        for (b = 0; b < 3; ++b)
            for (c = 0; c < 4; ++c) {
                int M = Ms[a], N = Ns[b], K = Ks[c];
                float alpha = alphas[(a + c) % 2], beta = betas[(a + b + c) % 3];
                for (i = 0; i < Mb * N; ++i) Cb[i] = 0.25f * (float)(i % 7) - 0.5f;
                for (i = 0; i < M * N; ++i) Cs[i] = 0.25f * (float)(i % 7) - 0.5f;
                hpj_gemm(0, 0, Mb, N, K, alpha, A, K, B, N, beta, Cb, N);
                hpj_gemm(0, 0, M, N, K, alpha, A, K, B, N, beta, Cs, N);
                CHECK_MSG(bits_equal(Cb, Cs, (size_t)M * N), "%dx%dx%d alpha %g beta %g: few-row path differs from the tiled rows",
                          M, N, K, alpha, beta);
            }
    free(A);
    free(B);
    free(Cb);
    free(Cs);
}

/* 1 vs 2 threads, and GEMMs called from inside a parallel region. */
static void test_gemm_threads(void) {
#ifdef _OPENMP
    hpj_rng r;
    /* the team's ways (hpj__gemm_team): whole B shared; column tiles; B
       shared block by block; few rows; 128 rows (column tiles that each
       pack A) and the weight-gradient shape (K = node copies). On 2 and 3
       threads, each also with alpha and beta (C accumulated into, as the
       backward passes do). */
    int shapes[7][3] = {{300, 200, 600},  {64, 512, 100},  {1000, 40, 70},  {300, 600, 600},
                        {9, 700, 300},    {128, 130, 1100}, {128, 130, 2300}};
    int s, layout, i;
    hpj_rng_seed(&r, 9);
    for (s = 0; s < 7; ++s) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = fbuf((size_t)M * K), *B = fbuf((size_t)K * N), *C1 = fbuf((size_t)M * N), *C2 = fbuf((size_t)M * N);
        fill_uniform(A, (size_t)M * K, -1, 1, &r);
        fill_uniform(B, (size_t)K * N, -1, 1, &r);
        for (layout = 0; layout < 8; ++layout) {
            int ta = layout & 1, tb = (layout >> 1) & 1, acc = layout >> 2, nt;
            float alpha = acc ? 0.75f : 1.0f, beta = acc ? 1.0f : 0.0f;
            for (nt = 2; nt <= 3; ++nt) {
                fill_uniform(C1, (size_t)M * N, -1, 1, &r);
                memcpy(C2, C1, sizeof(float) * (size_t)M * N);
                set_threads(1);
                hpj_gemm(ta, tb, M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, C1, N);
                set_threads(nt);
                hpj_gemm(ta, tb, M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, C2, N);
                CHECK_MSG(bits_equal(C1, C2, (size_t)M * N), "gemm %dx%dx%d layout %d alpha %g beta %g: 1 and %d threads differ",
                          M, N, K, layout & 3, alpha, beta, nt);
            }
        }
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
    { /* nested: 8 independent GEMMs in a parallel loop (thread-local packing) */
        int M = 150, N = 70, K = 290, nb = 8;
        float *A = fbuf((size_t)nb * M * K), *B = fbuf((size_t)K * N), *C1 = fbuf((size_t)nb * M * N),
              *C2 = fbuf((size_t)nb * M * N);
        fill_uniform(A, (size_t)nb * M * K, -1, 1, &r);
        fill_uniform(B, (size_t)K * N, -1, 1, &r);
        for (i = 0; i < nb; ++i)
            hpj_gemm(0, 1, M, N, K, 1.0f, A + (size_t)i * M * K, K, B, K, 0.0f, C1 + (size_t)i * M * N, N);
        _Pragma("omp parallel for num_threads(2)")
        for (i = 0; i < nb; ++i)
            hpj_gemm(0, 1, M, N, K, 1.0f, A + (size_t)i * M * K, K, B, K, 0.0f, C2 + (size_t)i * M * N, N);
        CHECK_MSG(bits_equal(C1, C2, (size_t)nb * M * N), "GEMMs inside a parallel region differ");
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
    set_threads(2);
#else
    SKIP("built without OpenMP");
#endif
}

/* ---- linear ------------------------------------------------------------- */

typedef struct {
    int N, Din, Dout;
    float *x, *W, *b, *out, *w;
} lin_ctx;
static double lin_loss(void *p) {
    lin_ctx *c = (lin_ctx *)p;
    hpj_linear_forward(c->out, c->x, c->W, c->b, c->N, c->Din, c->Dout);
    return wsum(c->out, c->w, (size_t)c->N * c->Dout);
}

/* Few-row products go through out^T = W inp^T inside hpj_linear_forward:
   the same bits as the bias-then-GEMM definition, with and without bias. */
static void test_linear_few_rows(void) {
    /* 32 and 64 rows (full tiles), 40 (direct), 8..16 (the half tile), 5 (direct) */
    static const int shapes[7][3] = {{32, 300, 520}, {64, 1030, 700}, {40, 300, 520}, {16, 512, 512}, {13, 300, 1030},
                                     {8, 520, 700}, {5, 512, 512}};
    hpj_rng r;
    int s, withb;
    hpj_rng_seed(&r, 29);
    for (s = 0; s < 7; ++s)
        for (withb = 0; withb < 2; ++withb) {
            int N = shapes[s][0], Din = shapes[s][1], Dout = shapes[s][2], i;
            float *x = fbuf((size_t)N * Din), *W = fbuf((size_t)Din * Dout), *b = fbuf((size_t)Dout);
            float *y = fbuf((size_t)N * Dout), *ref = fbuf((size_t)N * Dout);
            fill_uniform(x, (size_t)N * Din, -1, 1, &r);
            fill_uniform(W, (size_t)Din * Dout, -1, 1, &r);
            fill_uniform(b, (size_t)Dout, -1, 1, &r);
            for (i = 0; i < N; ++i) memcpy(ref + (size_t)i * Dout, b, sizeof(float) * (size_t)Dout);
            hpj_gemm(0, 1, N, Dout, Din, 1.0f, x, Din, W, Din, withb ? 1.0f : 0.0f, ref, Dout);
            hpj_linear_forward(y, x, W, withb ? b : NULL, N, Din, Dout);
            CHECK_MSG(bits_equal(y, ref, (size_t)N * Dout), "%d x %d -> %d, bias %d", N, Din, Dout, withb);
            free(x); free(W); free(b); free(y); free(ref);
        }
}

static void test_linear(void) {
    hpj_rng r;
    lin_ctx c;
    int N = 5, Din = 7, Dout = 3, i, j, k;
    float *dx, *dW, *db, *dx2, *dW2, *db2;
    hpj_rng_seed(&r, 21);
    c.N = N;
    c.Din = Din;
    c.Dout = Dout;
    c.x = fbuf(N * Din);
    c.W = fbuf(Dout * Din);
    c.b = fbuf(Dout);
    c.out = fbuf(N * Dout);
    c.w = fbuf(N * Dout);
    dx = fbuf(N * Din);
    dW = fbuf(Dout * Din);
    db = fbuf(Dout);
    dx2 = fbuf(N * Din);
    dW2 = fbuf(Dout * Din);
    db2 = fbuf(Dout);
    fill_uniform(c.x, N * Din, -1, 1, &r);
    fill_uniform(c.W, Dout * Din, -1, 1, &r);
    fill_uniform(c.b, Dout, -1, 1, &r);
    fill_uniform(c.w, N * Dout, -1, 1, &r);
    /* forward against the formula */
    lin_loss(&c);
    for (i = 0; i < N; ++i)
        for (j = 0; j < Dout; ++j) {
            double s = c.b[j];
            for (k = 0; k < Din; ++k) s += (double)c.x[i * Din + k] * c.W[j * Din + k];
            CHECK_NEAR(c.out[i * Dout + j], s, 1e-5, 1e-6);
        }
    hpj_linear_forward(c.out, c.x, c.W, NULL, N, Din, Dout); /* no bias */
    for (j = 0; j < Dout; ++j) {
        double s = 0;
        for (k = 0; k < Din; ++k) s += (double)c.x[k] * c.W[j * Din + k];
        CHECK_NEAR(c.out[j], s, 1e-5, 1e-6);
    }
    hpj_linear_backward(dx, dW, db, c.w, c.x, c.W, N, Din, Dout);
    hpj_linear_backward(dx2, dW2, db2, c.w, c.x, c.W, N, Din, Dout);
    hpj_linear_backward(dx2, dW2, db2, c.w, c.x, c.W, N, Din, Dout);
    CHECK(!doubles("dx", dx, dx2, N * Din) && !doubles("dW", dW, dW2, Dout * Din) && !doubles("db", db, db2, Dout));
    CHECK(!gradcheck("linear dx", lin_loss, &c, c.x, dx, N * Din, 1e-2f, 1e-2, 100, &r));
    CHECK(!gradcheck("linear dW", lin_loss, &c, c.W, dW, Dout * Din, 1e-2f, 1e-2, 100, &r));
    CHECK(!gradcheck("linear db", lin_loss, &c, c.b, db, Dout, 1e-2f, 1e-2, 100, &r));
    /* NULL gradients are skipped */
    hpj_linear_backward(NULL, NULL, db2, c.w, c.x, c.W, N, Din, Dout);
    CHECK_NEAR(db2[0], 3.0 * db[0], 1e-5, 1e-6);
    free(c.x);
    free(c.W);
    free(c.b);
    free(c.out);
    free(c.w);
    free(dx);
    free(dW);
    free(db);
    free(dx2);
    free(dW2);
    free(db2);
}

/* ---- activations and dropout ------------------------------------------- */

typedef struct {
    int kind; /* 0 relu, 1 gelu, 2 dropout */
    size_t n;
    float *x, *out, *w, p;
    uint8_t *mask;
} act_ctx;
static double act_loss(void *p) {
    act_ctx *c = (act_ctx *)p;
    if (c->kind == 0) hpj_relu_forward(c->out, c->x, c->n);
    else if (c->kind == 1) hpj_gelu_forward(c->out, c->x, c->n);
    else hpj_dropout_forward(c->out, c->mask, c->x, c->n, c->p, 7, 3, 1);
    return wsum(c->out, c->w, c->n);
}

static void test_activations(void) {
    hpj_rng r;
    act_ctx c;
    int kind;
    size_t n = 37, i;
    float *g = fbuf(n), *g2 = fbuf(n);
    hpj_rng_seed(&r, 31);
    c.n = n;
    c.x = fbuf(n);
    c.out = fbuf(n);
    c.w = fbuf(n);
    c.mask = (uint8_t *)calloc(n, 1);
    c.p = 0.3f;
    fill_uniform(c.w, n, -1, 1, &r);
    for (kind = 0; kind < 3; ++kind) {
        static const char *names[3] = {"relu", "gelu", "dropout"};
        c.kind = kind;
        fill_away(c.x, n, 0.05f, 3.0f, &r);
        act_loss(&c);
        memset(g, 0, n * sizeof(float));
        memset(g2, 0, n * sizeof(float));
        for (i = 0; i < 2; ++i) {
            float *dst = i ? g2 : g;
            if (kind == 0) hpj_relu_backward(dst, c.w, c.out, n);
            else if (kind == 1) hpj_gelu_backward(dst, c.w, c.x, n);
            else hpj_dropout_backward(dst, c.w, c.mask, n, c.p);
        }
        if (kind == 0) hpj_relu_backward(g2, c.w, c.out, n);
        else if (kind == 1) hpj_gelu_backward(g2, c.w, c.x, n);
        else hpj_dropout_backward(g2, c.w, c.mask, n, c.p);
        CHECK_MSG(!doubles(names[kind], g, g2, n), "%s backward does not accumulate", names[kind]);
        CHECK_MSG(!gradcheck(names[kind], act_loss, &c, c.x, g, n, 1e-2f, 1e-2, 100, &r), "%s gradcheck", names[kind]);
    }
    /* GELU values (torch.nn.functional.gelu, exact erf form) */
    {
        float x[5] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f}, y[5];
        double want[5] = {-0.0040496997, -0.15865526, 0.0, 0.34573123, 1.9544997};
        hpj_gelu_forward(y, x, 5);
        for (i = 0; i < 5; ++i) CHECK_NEAR(y[i], want[i], 1e-6, 1e-7);
        hpj_relu_forward(x, x, 5); /* in place */
        CHECK(x[0] == 0.0f && x[1] == 0.0f && x[3] == 0.5f && x[4] == 2.0f);
    }
    /* GELU and its derivative against double precision over [-10, 10]
       (tails included: the lower tail keeps its relative accuracy) */
    {
        int nn = 200001, k;
        float *x = fbuf(nn), *y = fbuf(nn), *d = fbuf(nn), *ones = fbuf(nn);
        for (k = 0; k < nn; ++k) {
            x[k] = -10.0f + 1e-4f * (float)k;
            ones[k] = 1.0f;
        }
        hpj_gelu_forward(y, x, nn);
        hpj_gelu_backward(d, ones, x, nn);
        for (k = 0; k < nn; ++k) {
            double X = x[k], cdf = 0.5 * erfc(-X / sqrt(2.0)), gv = X * cdf;
            double dg = cdf + X * exp(-0.5 * X * X) / sqrt(2.0 * 3.14159265358979323846);
            CHECK_MSG(fabs(y[k] - gv) <= 4e-7 + 2e-6 * fabs(gv) && (fabs(gv) < 1e-6 || fabs(y[k] - gv) <= 1e-4 * fabs(gv)),
                      "gelu(%.9g) = %.9g, want %.9g", X, y[k], gv);
            CHECK_MSG(fabs(d[k] - dg) <= 1e-6 + 2e-6 * fabs(dg), "gelu'(%.9g) = %.9g, want %.9g", X, d[k], dg);
        }
        free(x);
        free(y);
        free(d);
        free(ones);
    }
    /* every paths level (the reference loops, the AVX2 and AVX-512
       kernels) gives the same bits, forward and backward, over normal
       values, the clamps' edges, zeros, infinities and NaN, at lengths
       with partial vectors */
    {
        int nn = 4099, k, lvl, nisa = 0, isas[4];
        float *x = fbuf(nn), *y[4], *d[4], *gy = fbuf(nn);
        hpj_rng rr = hpj_rng_stream(7, 1, 2);
        for (k = 0; k < nn; ++k) {
            float u = hpj_rng_uniform(&rr);
            x[k] = k % 7 == 0 ? 200.0f * (u - 0.5f) : k % 3 == 0 ? 12.0f * (u - 0.5f) : 4.0f * (u - 0.5f);
            gy[k] = hpj_rng_uniform(&rr) - 0.5f;
        }
        x[1] = 0.0f, x[2] = -0.0f, x[4] = INFINITY, x[5] = -INFINITY, x[8] = NAN, x[10] = 1.0f, x[11] = -1.0f;
        x[13] = 3.93f * 1.41421356f, x[16] = -124.0f, x[17] = 124.0f, x[19] = 1e-30f;
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            if (hpj_set_paths(lvl) != lvl) continue;
            isas[nisa] = lvl;
            y[nisa] = fbuf(nn);
            d[nisa] = fbuf(nn);
            hpj_gelu_forward(y[nisa], x, (size_t)nn);
            for (k = 0; k < nn; ++k) d[nisa][k] = 0.25f;
            hpj_gelu_backward(d[nisa], gy, x, (size_t)nn);
            ++nisa;
        }
        hpj_set_paths(HPJ_PATHS_BEST);
        for (k = 1; k < nisa; ++k) {
            CHECK_MSG(memcmp(y[k], y[0], sizeof(float) * (size_t)nn) == 0, "gelu forward: %s and %s differ",
                      hpj_paths_name(isas[k]), hpj_paths_name(isas[0]));
            CHECK_MSG(memcmp(d[k], d[0], sizeof(float) * (size_t)nn) == 0, "gelu backward: %s and %s differ",
                      hpj_paths_name(isas[k]), hpj_paths_name(isas[0]));
        }
        CHECK(isnan(y[0][8]) && y[0][4] == INFINITY && y[0][1] == 0.0f); /* gelu(-inf) = -inf * 0: NaN, as torch */
        for (k = 0; k < nisa; ++k) {
            free(y[k]);
            free(d[k]);
        }
        free(x);
        free(gy);
    }
    {
        float x[5] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
        hpj_gelu_forward(x, x, 5); /* in place */
        CHECK_NEAR(x[4], 1.9544997, 1e-6, 0);
    }
    free(g);
    free(g2);
    free(c.x);
    free(c.out);
    free(c.w);
    free(c.mask);
}

static void test_dropout(void) {
    size_t n = 200000, i, kept = 0;
    float *x = fbuf(n), *y = fbuf(n), *y2 = fbuf(n);
    uint8_t *m = (uint8_t *)malloc(n), *m2 = (uint8_t *)malloc(n);
    float p = 0.25f;
    for (i = 0; i < n; ++i) x[i] = (float)(i % 17) - 8.0f;
    hpj_dropout_forward(y, m, x, n, p, 42, 7, 3);
    for (i = 0; i < n; ++i) {
        kept += m[i];
        CHECK(m[i] ? y[i] == x[i] * (1.0f / (1.0f - p)) : y[i] == 0.0f);
    }
    /* kept ~ Binomial(n, 0.75): sd ~ 194 */
    CHECK_NEAR((double)kept, 0.75 * n, 0, 1500);
    /* the same (seed, step, salt) gives the same mask; another step differs */
    hpj_dropout_forward(y2, m2, x, n, p, 42, 7, 3);
    CHECK(memcmp(m, m2, n) == 0 && bits_equal(y, y2, n));
    hpj_dropout_forward(y2, m2, x, n, p, 42, 8, 3);
    CHECK(memcmp(m, m2, n) != 0);
    hpj_dropout_forward(y2, m2, x, n, p, 42, 7, 4);
    CHECK(memcmp(m, m2, n) != 0);
    /* a prefix gets the same draws as the whole */
    hpj_dropout_forward(y2, m2, x, 1000, p, 42, 7, 3);
    CHECK(memcmp(m, m2, 1000) == 0);
    /* p = 0 copies, mask all ones; p = 1 drops everything */
    hpj_dropout_forward(y2, m2, x, n, 0.0f, 1, 1, 1);
    CHECK(bits_equal(x, y2, n));
    for (i = 0; i < n; ++i) CHECK(m2[i] == 1);
    hpj_dropout_forward(y2, m2, x, 100, 1.0f, 1, 1, 1);
    for (i = 0; i < 100; ++i) CHECK(y2[i] == 0.0f && m2[i] == 0);
    free(x);
    free(y);
    free(y2);
    free(m);
    free(m2);
}

/* ---- normalisation ------------------------------------------------------ */

typedef struct {
    int N, D, bn;
    float *x, *g, *b, *out, *mean, *rstd, *w;
} norm_ctx;
static double norm_loss(void *p) {
    norm_ctx *c = (norm_ctx *)p;
    if (c->bn)
        hpj_batchnorm_forward_train(c->out, c->mean, c->rstd, NULL, NULL, c->x, c->g, c->b, c->N, c->D, 0.1f, 1e-5f);
    else hpj_layernorm_forward(c->out, c->mean, c->rstd, c->x, c->g, c->b, c->N, c->D, 1e-5f);
    return wsum(c->out, c->w, (size_t)c->N * c->D);
}

static void test_norms_grad(void) {
    hpj_rng r;
    norm_ctx c;
    int bn;
    hpj_rng_seed(&r, 41);
    c.N = 7;
    c.D = 19; /* > 16: one full lane block and a tail */
    c.x = fbuf(c.N * c.D);
    c.out = fbuf(c.N * c.D);
    c.w = fbuf(c.N * c.D);
    c.g = fbuf(c.D);
    c.b = fbuf(c.D);
    c.mean = fbuf(c.D > c.N ? c.D : c.N);
    c.rstd = fbuf(c.D > c.N ? c.D : c.N);
    for (bn = 0; bn < 2; ++bn) {
        size_t nx = (size_t)c.N * c.D;
        float *dx = fbuf(nx), *dg = fbuf(c.D), *db = fbuf(c.D), *dx2 = fbuf(nx), *dg2 = fbuf(c.D), *db2 = fbuf(c.D);
        const char *nm = bn ? "batchnorm" : "layernorm";
        int k;
        c.bn = bn;
        fill_uniform(c.x, nx, -2, 2, &r);
        fill_uniform(c.g, c.D, 0.5f, 1.5f, &r);
        fill_uniform(c.b, c.D, -0.5f, 0.5f, &r);
        fill_uniform(c.w, nx, -1, 1, &r);
        norm_loss(&c);
        for (k = 0; k < 3; ++k) {
            float *a = k ? dx2 : dx, *bg = k ? dg2 : dg, *bb = k ? db2 : db;
            if (bn) hpj_batchnorm_backward(a, bg, bb, c.w, c.x, c.g, c.mean, c.rstd, c.N, c.D);
            else hpj_layernorm_backward(a, bg, bb, c.w, c.x, c.g, c.mean, c.rstd, c.N, c.D);
        }
        CHECK_MSG(!doubles(nm, dx, dx2, nx) && !doubles(nm, dg, dg2, c.D) && !doubles(nm, db, db2, c.D),
                  "%s backward does not accumulate", nm);
        CHECK_MSG(!gradcheck("dx", norm_loss, &c, c.x, dx, nx, 1e-2f, 2e-2, 200, &r), "%s dx", nm);
        CHECK_MSG(!gradcheck("dgamma", norm_loss, &c, c.g, dg, c.D, 1e-2f, 2e-2, 200, &r), "%s dgamma", nm);
        CHECK_MSG(!gradcheck("dbeta", norm_loss, &c, c.b, db, c.D, 1e-2f, 2e-2, 200, &r), "%s dbeta", nm);
        free(dx);
        free(dg);
        free(db);
        free(dx2);
        free(dg2);
        free(db2);
    }
    free(c.x);
    free(c.out);
    free(c.w);
    free(c.g);
    free(c.b);
    free(c.mean);
    free(c.rstd);
}

static void test_layernorm_values(void) {
    float x[6] = {1, 2, 3, 4, 10, -2}, y[6], mu[2], rs[2];
    double m1 = 2.0, v1 = 2.0 / 3.0, m2 = 4.0, v2 = (0.0 + 36.0 + 36.0) / 3.0;
    hpj_layernorm_forward(y, mu, rs, x, NULL, NULL, 2, 3, 1e-5f);
    CHECK_NEAR(mu[0], m1, 1e-6, 0);
    CHECK_NEAR(mu[1], m2, 1e-6, 0);
    CHECK_NEAR(rs[0], 1.0 / sqrt(v1 + 1e-5), 1e-6, 0);
    CHECK_NEAR(y[2], (3.0 - m1) / sqrt(v1 + 1e-5), 1e-6, 0);
    CHECK_NEAR(y[4], (10.0 - m2) / sqrt(v2 + 1e-5), 1e-6, 0);
}

static void test_batchnorm_modes(void) {
    int N = 6, D = 3, i, j;
    float x[18], y[18], mu[3], rs[3], rm[3] = {0.5f, -1.0f, 2.0f}, rv[3] = {1.0f, 2.0f, 0.5f};
    float rm0[3], rv0[3], g[3] = {1.5f, 0.5f, 2.0f}, b[3] = {0.1f, -0.2f, 0.3f};
    hpj_rng r;
    hpj_rng_seed(&r, 51);
    fill_uniform(x, 18, -3, 3, &r);
    memcpy(rm0, rm, sizeof rm);
    memcpy(rv0, rv, sizeof rv);
    hpj_batchnorm_forward_train(y, mu, rs, rm, rv, x, g, b, N, D, 0.1f, 1e-5f);
    for (j = 0; j < D; ++j) {
        double m = 0, v = 0, om = 0, ov = 0;
        for (i = 0; i < N; ++i) m += x[i * D + j];
        m /= N;
        for (i = 0; i < N; ++i) v += (x[i * D + j] - m) * (x[i * D + j] - m);
        CHECK_NEAR(mu[j], m, 1e-6, 1e-7);
        CHECK_NEAR(rs[j], 1.0 / sqrt(v / N + 1e-5), 1e-5, 0);
        /* running statistics: momentum 0.1, unbiased variance */
        CHECK_NEAR(rm[j], 0.9 * rm0[j] + 0.1 * m, 1e-6, 1e-7);
        CHECK_NEAR(rv[j], 0.9 * rv0[j] + 0.1 * v / (N - 1), 1e-6, 1e-7);
        /* the output has mean beta and biased variance ~ gamma^2 */
        for (i = 0; i < N; ++i) om += y[i * D + j];
        om /= N;
        for (i = 0; i < N; ++i) ov += (y[i * D + j] - om) * (y[i * D + j] - om);
        CHECK_NEAR(om, b[j], 1e-5, 1e-6);
        CHECK_NEAR(ov / N, g[j] * g[j] * (v / N) / (v / N + 1e-5), 1e-4, 0);
    }
    /* eval mode uses the running statistics */
    hpj_batchnorm_forward_eval(y, x, g, b, rm, rv, N, D, 1e-5f);
    for (i = 0; i < N; ++i)
        for (j = 0; j < D; ++j) CHECK_NEAR(y[i * D + j], (x[i * D + j] - rm[j]) / sqrt(rv[j] + 1e-5) * g[j] + b[j], 1e-5, 1e-6);
    /* N == 1: output = beta, running_var unchanged, zero input gradient */
    {
        float dx[3] = {0, 0, 0}, dg[3] = {0, 0, 0}, db[3] = {0, 0, 0}, dy[3] = {1, -2, 3};
        memcpy(rv0, rv, sizeof rv);
        memcpy(rm0, rm, sizeof rm);
        hpj_batchnorm_forward_train(y, mu, rs, rm, rv, x, g, b, 1, D, 0.1f, 1e-5f);
        for (j = 0; j < D; ++j) {
            CHECK(y[j] == b[j]);
            CHECK(rv[j] == rv0[j]);
            CHECK_NEAR(rm[j], 0.9 * rm0[j] + 0.1 * x[j], 1e-6, 1e-7);
        }
        hpj_batchnorm_backward(dx, dg, db, dy, x, g, mu, rs, 1, D);
        for (j = 0; j < D; ++j) {
            CHECK(dx[j] == 0.0f && dg[j] == 0.0f);
            CHECK(db[j] == dy[j]);
        }
    }
}

/* gamma / beta = NULL (and the public BatchNorm backward, which has no
   fused ReLU) take their own loops (hpj__ln_apply): they must give what
   ones / zeros give (== for beta: x + 0 turns -0 into +0), and BatchNorm
   evaluation, computed by channel panels (D > 256 here), the per-element
   formula. */
static void test_norm_optional_operands(void) {
    int N = 37, D = 300, i, j, bn, k;
    size_t n = (size_t)N * D;
    float *x = fbuf(n), *dy = fbuf(n), *y0 = fbuf(n), *y1 = fbuf(n), *g = fbuf(D), *b = fbuf(D), *one = fbuf(D),
          *zero = fbuf(D), *mu = fbuf(n), *rs = fbuf(n), *rm = fbuf(D), *rv = fbuf(D);
    float *dg0 = fbuf(D), *db0 = fbuf(D), *dg1 = fbuf(D), *db1 = fbuf(D);
    hpj_rng r;
    hpj_rng_seed(&r, 57);
    fill_uniform(x, n, -2, 2, &r);
    fill_uniform(dy, n, -1, 1, &r);
    fill_uniform(g, D, 0.5f, 1.5f, &r);
    fill_uniform(b, D, -0.5f, 0.5f, &r);
    fill_uniform(rm, D, -0.5f, 0.5f, &r);
    fill_uniform(rv, D, 0.2f, 2.0f, &r);
    for (j = 0; j < D; ++j) one[j] = 1.0f;
    for (bn = 0; bn < 2; ++bn)
        for (k = 0; k < 4; ++k) { /* gamma NULL?, beta NULL? */
            const float *gn = (k & 1) ? NULL : g, *bnl = (k & 2) ? NULL : b;
            const float *gr = (k & 1) ? one : g, *br = (k & 2) ? zero : b;
            if (bn) {
                hpj_batchnorm_forward_train(y0, mu, rs, NULL, NULL, x, gn, bnl, N, D, 0.1f, 1e-5f);
                hpj_batchnorm_forward_train(y1, mu, rs, NULL, NULL, x, gr, br, N, D, 0.1f, 1e-5f);
            } else {
                hpj_layernorm_forward(y0, mu, rs, x, gn, bnl, N, D, 1e-5f);
                hpj_layernorm_forward(y1, mu, rs, x, gr, br, N, D, 1e-5f);
            }
            for (i = 0; i < (int)n; ++i)
                CHECK_MSG(y0[i] == y1[i], "%s k=%d: %g vs %g at %d", bn ? "bn" : "ln", k, y0[i], y1[i], i);
            hpj_batchnorm_forward_eval(y0, x, gn, bnl, rm, rv, N, D, 1e-5f);
            for (i = 0; i < N; ++i)
                for (j = 0; j < D; ++j) {
                    float v = (x[(size_t)i * D + j] - rm[j]) / sqrtf(rv[j] + 1e-5f);
                    if (gn) v *= g[j];
                    if (bnl) v += b[j];
                    CHECK_NEAR(y0[(size_t)i * D + j], v, 1e-6, 1e-7);
                }
        }
    /* backward with gamma NULL = with ones, bit for bit */
    for (bn = 0; bn < 2; ++bn) {
        if (bn) hpj_batchnorm_forward_train(y0, mu, rs, NULL, NULL, x, NULL, NULL, N, D, 0.1f, 1e-5f);
        else hpj_layernorm_forward(y0, mu, rs, x, NULL, NULL, N, D, 1e-5f);
        memset(y0, 0, n * sizeof(float));
        memset(y1, 0, n * sizeof(float));
        memset(dg0, 0, D * sizeof(float));
        memset(db0, 0, D * sizeof(float));
        memset(dg1, 0, D * sizeof(float));
        memset(db1, 0, D * sizeof(float));
        if (bn) {
            hpj_batchnorm_backward(y0, dg0, db0, dy, x, NULL, mu, rs, N, D);
            hpj_batchnorm_backward(y1, dg1, db1, dy, x, one, mu, rs, N, D);
        } else {
            hpj_layernorm_backward(y0, dg0, db0, dy, x, NULL, mu, rs, N, D);
            hpj_layernorm_backward(y1, dg1, db1, dy, x, one, mu, rs, N, D);
        }
        CHECK_MSG(bits_equal(y0, y1, n) && bits_equal(dg0, dg1, D) && bits_equal(db0, db1, D),
                  "%s backward: gamma NULL differs from ones", bn ? "bn" : "ln");
    }
    free(x); free(dy); free(y0); free(y1); free(g); free(b); free(one); free(zero); free(mu); free(rs);
    free(rm); free(rv); free(dg0); free(db0); free(dg1); free(db1);
}

/* ---- GINE --------------------------------------------------------------- */

/* two small graphs side by side: a triangle+tail (0..4) and a path (5..7) */
static const int32_t g_rowptr[9] = {0, 2, 4, 7, 9, 10, 11, 13, 14};
static const int32_t g_col[14] = {1, 2, 0, 2, 0, 1, 3, 2, 4, 3, 6, 5, 7, 6};

typedef struct {
    int N, D;
    float *h, *e, *out, *w, eps;
} gine_ctx;
static double gine_loss(void *p) {
    gine_ctx *c = (gine_ctx *)p;
    hpj_gine_forward(c->out, c->h, c->e, g_rowptr, g_col, c->N, c->D, c->eps);
    return wsum(c->out, c->w, (size_t)c->N * c->D);
}

static void test_gine(void) {
    hpj_rng r;
    gine_ctx c;
    int32_t rev[14];
    int E = 14, k, j, pass;
    float *dh, *de, deps, *dh2, *de2, deps2 = 0;
    hpj_rng_seed(&r, 61);
    c.N = 8;
    c.D = 5;
    c.eps = 0.3f;
    c.h = fbuf(c.N * c.D);
    c.e = fbuf(E * c.D);
    c.out = fbuf(c.N * c.D);
    c.w = fbuf(c.N * c.D);
    dh = fbuf(c.N * c.D);
    de = fbuf(E * c.D);
    dh2 = fbuf(c.N * c.D);
    de2 = fbuf(E * c.D);
    CHECK_OK(hpj_csr_reverse(rev, g_rowptr, g_col, c.N));
    for (k = 0; k < E; ++k) CHECK(g_col[rev[k]] >= 0 && rev[rev[k]] == k);
    fill_uniform(c.h, c.N * c.D, -1, 1, &r);
    fill_uniform(c.e, E * c.D, -1, 1, &r);
    fill_uniform(c.w, c.N * c.D, -1, 1, &r);
    /* keep every message h[j] + e[k] at least 0.05 away from the ReLU kink */
    for (pass = 0; pass < 4; ++pass)
        for (k = 0; k < E; ++k) {
            int src = g_col[k];
            for (j = 0; j < c.D; ++j)
                if (fabsf(c.h[src * c.D + j] + c.e[k * c.D + j]) < 0.05f) c.e[k * c.D + j] += 0.2f;
        }
    gine_loss(&c);
    /* forward against the formula at one node */
    for (j = 0; j < c.D; ++j) {
        double s = (1.0 + c.eps) * c.h[2 * c.D + j];
        for (k = g_rowptr[2]; k < g_rowptr[3]; ++k) {
            double m = (double)c.h[g_col[k] * c.D + j] + c.e[k * c.D + j];
            s += m > 0 ? m : 0;
        }
        CHECK_NEAR(c.out[2 * c.D + j], s, 1e-6, 1e-6);
    }
    deps = 0;
    hpj_gine_backward(dh, de, &deps, c.w, c.h, c.e, g_rowptr, g_col, rev, c.N, c.D, c.eps);
    hpj_gine_backward(dh2, de2, &deps2, c.w, c.h, c.e, g_rowptr, g_col, rev, c.N, c.D, c.eps);
    hpj_gine_backward(dh2, de2, &deps2, c.w, c.h, c.e, g_rowptr, g_col, rev, c.N, c.D, c.eps);
    CHECK(!doubles("dh", dh, dh2, c.N * c.D) && !doubles("de", de, de2, E * c.D) && !doubles("deps", &deps, &deps2, 1));
    CHECK(!gradcheck("gine dh", gine_loss, &c, c.h, dh, c.N * c.D, 1e-2f, 1e-2, 100, &r));
    CHECK(!gradcheck("gine de", gine_loss, &c, c.e, de, E * c.D, 1e-2f, 1e-2, 100, &r));
    CHECK(!gradcheck("gine deps", gine_loss, &c, &c.eps, &deps, 1, 1e-2f, 1e-2, 1, &r));
    /* without edge features */
    memset(dh, 0, sizeof(float) * c.N * c.D);
    {
        float *ekeep = c.e;
        c.e = NULL;
        gine_loss(&c);
        hpj_gine_backward(dh, NULL, NULL, c.w, c.h, NULL, g_rowptr, g_col, NULL, c.N, c.D, c.eps);
        CHECK(!gradcheck("gine dh (no e)", gine_loss, &c, c.h, dh, c.N * c.D, 1e-3f, 2e-2, 100, &r));
        c.e = ekeep;
    }
    /* an asymmetric CSR is refused */
    {
        int32_t rp[3] = {0, 1, 1}, cl[1] = {1}, rv[1];
        CHECK(hpj_csr_reverse(rv, rp, cl, 2) == HPJ_ERR_INPUT);
        CHECK(strstr(hpj_last_error(), "not symmetric") != NULL);
    }
    free(c.h);
    free(c.e);
    free(c.out);
    free(c.w);
    free(dh);
    free(de);
    free(dh2);
    free(de2);
}

/* One edge feature shared by every edge (unlabelled edges): the same
   forward bits as hpj_gine_forward with e repeated on each edge, its dh up
   to rounding, de = the column sums of its per-edge de, finite differences. */
static double gine_shared_loss(void *p) {
    gine_ctx *c = (gine_ctx *)p;
    hpj_gine_forward_shared(c->out, c->h, c->e, g_rowptr, g_col, c->N, c->D, c->eps);
    return wsum(c->out, c->w, (size_t)c->N * c->D);
}

static void test_gine_shared(void) {
    hpj_rng r;
    gine_ctx c;
    int32_t rev[14];
    int E = 14, k, j, ok = 1;
    float *erep, *out2, *dh, *dh2, *de, *de2, deps = 0.0f, deps2 = 0.0f;
    hpj_rng_seed(&r, 62);
    c.N = 8;
    c.D = 70; /* two column passes of the backward */
    c.eps = -0.2f;
    c.h = fbuf((size_t)c.N * c.D);
    c.e = fbuf((size_t)c.D);
    c.out = fbuf((size_t)c.N * c.D);
    c.w = fbuf((size_t)c.N * c.D);
    erep = fbuf((size_t)E * c.D);
    out2 = fbuf((size_t)c.N * c.D);
    dh = fbuf((size_t)c.N * c.D);
    dh2 = fbuf((size_t)c.N * c.D);
    de = fbuf((size_t)c.D);
    de2 = fbuf((size_t)E * c.D);
    fill_uniform(c.h, (size_t)c.N * c.D, -1, 1, &r);
    fill_uniform(c.e, (size_t)c.D, -1, 1, &r);
    fill_uniform(c.w, (size_t)c.N * c.D, -1, 1, &r);
    for (k = 0; k < c.N * c.D; ++k) /* messages away from the ReLU kink */
        if (fabsf(c.h[k] + c.e[k % c.D]) < 0.05f) c.h[k] += 0.2f;
    for (k = 0; k < E; ++k) memcpy(erep + (size_t)k * c.D, c.e, sizeof(float) * (size_t)c.D);
    CHECK_OK(hpj_csr_reverse(rev, g_rowptr, g_col, c.N));
    gine_shared_loss(&c);
    hpj_gine_forward(out2, c.h, erep, g_rowptr, g_col, c.N, c.D, c.eps);
    CHECK(bits_equal(c.out, out2, (size_t)c.N * c.D));
    hpj_gine_backward_shared(dh, de, &deps, c.w, c.h, c.e, g_rowptr, g_col, c.N, c.D, c.eps);
    hpj_gine_backward(dh2, de2, &deps2, c.w, c.h, erep, g_rowptr, g_col, rev, c.N, c.D, c.eps);
    CHECK(deps == deps2);
    for (k = 0; k < c.N * c.D; ++k) ok &= fabs((double)dh[k] - dh2[k]) <= 1e-5 * (1.0 + fabs((double)dh2[k]));
    CHECK_MSG(ok, "shared dh differs from the per-edge dh");
    for (j = 0; j < c.D; ++j) {
        double t = 0.0;
        for (k = 0; k < E; ++k) t += de2[(size_t)k * c.D + j];
        ok &= fabs(t - de[j]) <= 1e-5 * (1.0 + fabs(t));
    }
    CHECK_MSG(ok, "shared de differs from the summed per-edge de");
    CHECK(!gradcheck("gine shared dh", gine_shared_loss, &c, c.h, dh, (size_t)c.N * c.D, 1e-2f, 1e-2, 100, &r));
    CHECK(!gradcheck("gine shared de", gine_shared_loss, &c, c.e, de, (size_t)c.D, 1e-2f, 1e-2, 70, &r));
    CHECK(!gradcheck("gine shared deps", gine_shared_loss, &c, &c.eps, &deps, 1, 1e-2f, 1e-2, 1, &r));
    free(c.h);
    free(c.e);
    free(c.out);
    free(c.w);
    free(erep);
    free(out2);
    free(dh);
    free(dh2);
    free(de);
    free(de2);
}

/* ---- pooling ------------------------------------------------------------ */

typedef struct {
    int kind, S, D, N;
    const int32_t *ptr, *idx;
    float *x, *out, *w;
    int32_t *am;
} pool_ctx;
static double pool_loss(void *p) {
    pool_ctx *c = (pool_ctx *)p;
    if (c->kind == 0) hpj_segment_mean_forward(c->out, c->x, c->ptr, c->S, c->D);
    else if (c->kind == 1) hpj_segment_max_forward(c->out, c->am, c->x, c->ptr, c->S, c->D);
    else hpj_gather_mean_forward(c->out, c->x, c->ptr, c->idx, c->S, c->D);
    return wsum(c->out, c->w, (size_t)c->S * c->D);
}

static void test_pooling(void) {
    /* 4 segments of 9 rows, one empty */
    static const int32_t segptr[5] = {0, 3, 3, 7, 9};
    /* index lists over 6 rows, overlapping, one repeat, one empty list */
    static const int32_t lptr[5] = {0, 3, 3, 7, 9};
    static const int32_t lidx[9] = {0, 2, 5, 1, 2, 2, 4, 3, 0};
    hpj_rng r;
    pool_ctx c;
    int kind, i, j;
    int32_t tptr[7], tidx[9], am[4 * 6];
    hpj_rng_seed(&r, 71);
    c.S = 4;
    c.D = 6;
    c.am = am;
    c.x = fbuf(9 * 6);
    c.out = fbuf(4 * 6);
    c.w = fbuf(4 * 6);
    fill_uniform(c.w, 24, -1, 1, &r);
    CHECK_OK(hpj_index_transpose(tptr, tidx, lptr, lidx, 4, 6));
    CHECK(tptr[0] == 0 && tptr[6] == 9);
    CHECK(tptr[3] - tptr[2] == 3); /* row 2: lists 0, 2, 2 */
    CHECK(tidx[tptr[2]] == 0 && tidx[tptr[2] + 1] == 2 && tidx[tptr[2] + 2] == 2);
    {
        int32_t bp[6] = {7, 7, 7, 7, 7, 7}, bi[9] = {7, 7, 7, 7, 7, 7, 7, 7, 7};
        CHECK(hpj_index_transpose(bp, bi, lptr, lidx, 4, 5) == HPJ_ERR_INPUT); /* index 5 >= R */
        CHECK(strstr(hpj_last_error(), "index 5") != NULL);
        for (i = 0; i < 6; ++i) CHECK(bp[i] == 0); /* a failed call leaves its outputs zeroed */
        for (i = 0; i < 9; ++i) CHECK(bi[i] == 0);
    }
    { /* ties: the first row wins */
        float tx[6] = {1, 5, 3, 5, 3, -1}, to[2];
        int32_t tsp[2] = {0, 3}, ta[2];
        hpj_segment_max_forward(to, ta, tx, tsp, 1, 2);
        CHECK(to[0] == 3.0f && ta[0] == 1 && to[1] == 5.0f && ta[1] == 0);
    }
    for (kind = 0; kind < 3; ++kind) {
        int nrows = kind == 2 ? 6 : 9;
        float *g = fbuf(nrows * 6), *g2 = fbuf(nrows * 6);
        c.kind = kind;
        c.N = nrows;
        c.ptr = kind == 2 ? lptr : segptr;
        c.idx = lidx;
        /* distinct values 0.1 apart: no ties within 2h for the max */
        for (i = 0; i < nrows * 6; ++i) c.x[i] = 0.1f * (float)((i * 37) % (nrows * 6)) - 2.0f;
        pool_loss(&c);
        for (j = 0; j < 6; ++j) CHECK(c.out[1 * 6 + j] == 0.0f); /* empty */
        if (kind == 1) CHECK(am[6] == -1);
        for (i = 0; i < 3; ++i) {
            float *dst = i ? g2 : g;
            if (kind == 0) hpj_segment_mean_backward(dst, c.w, segptr, 4, 6);
            else if (kind == 1) hpj_segment_max_backward(dst, c.w, am, 4, 6);
            else hpj_gather_mean_backward(dst, c.w, lptr, tptr, tidx, 6, 6);
        }
        CHECK_MSG(!doubles("pool", g, g2, nrows * 6), "pool kind %d does not accumulate", kind);
        CHECK_MSG(!gradcheck("pool", pool_loss, &c, c.x, g, nrows * 6, 1e-2f, 1e-2, 100, &r), "pool kind %d", kind);
        if (kind == 0) /* mean of rows 3..6, column 0 */
            CHECK_NEAR(c.out[2 * 6], (c.x[18] + c.x[24] + c.x[30] + c.x[36]) / 4.0, 1e-6, 1e-6);
        if (kind == 2) /* list 3 = rows {3, 0} */
            CHECK_NEAR(c.out[3 * 6 + 1], (c.x[3 * 6 + 1] + c.x[1]) / 2.0, 1e-6, 1e-6);
        free(g);
        free(g2);
    }
    free(c.x);
    free(c.out);
    free(c.w);
}

/* ---- attention ---------------------------------------------------------- */

typedef struct {
    int B, T, D, H;
    float *qkv, *out, *att, *w;
    const uint8_t *km;
    const float *adj;
} att_ctx;
static double att_loss(void *p) {
    att_ctx *c = (att_ctx *)p;
    hpj_attention_forward(c->out, c->att, c->qkv, c->km, c->adj, c->B, c->T, c->D, c->H);
    return wsum(c->out, c->w, (size_t)c->B * c->T * c->D);
}

/* out in double by the definition, for batch b, query i, column d */
static double att_ref(const att_ctx *c, int b, int i, int d) {
    int hd = c->D / c->H, h = d / hd, j, l, ld = 3 * c->D;
    double s[64], mx = -1e300, sum = 0, o = 0;
    int any = 0;
    const float *base = c->qkv + (size_t)b * c->T * ld;
    for (j = 0; j < c->T; ++j) {
        if (c->km && !c->km[b * c->T + j]) continue;
        s[j] = 0;
        for (l = 0; l < hd; ++l) s[j] += (double)base[i * ld + h * hd + l] * base[j * ld + c->D + h * hd + l];
        s[j] /= sqrt((double)hd);
        if (s[j] > mx) mx = s[j];
        any = 1;
    }
    if (!any) return 0;
    for (j = 0; j < c->T; ++j)
        if (!c->km || c->km[b * c->T + j]) sum += exp(s[j] - mx);
    for (j = 0; j < c->T; ++j) {
        double pr;
        if (c->km && !c->km[b * c->T + j]) continue;
        pr = exp(s[j] - mx) / sum;
        if (c->adj) pr *= c->adj[((size_t)b * c->T + i) * c->T + j];
        o += pr * base[j * ld + 2 * c->D + d];
    }
    return o;
}

/* The arithmetic of hpj_attention_forward's loop, written out for one
   output row and 16-float heads: its dot products (hpj__dot: 16 lanes, a
   fused first step, the tree l + 8, l + 4, (0 + 2) + (1 + 3)), expf, and
   axpys in key order, each step fused where the library's are
   (FP_FAST_FMAF or __FMA__, as HPJ__FMAF): the loop's bits are pinned to these. */
#if defined(FP_FAST_FMAF) || defined(__FMA__)
#define ATT_FMAF(a, b, c) fmaf((a), (b), (c))
#else
#define ATT_FMAF(a, b, c) ((a) * (b) + (c))
#endif
static void att_row16(const att_ctx *c, int b, int h, int i, float *o, float *p) {
    int ld = 3 * c->D, j, l;
    const float *base = c->qkv + (size_t)b * c->T * ld, *q = base + i * ld + h * 16;
    const uint8_t *km = c->km ? c->km + b * c->T : NULL;
    float mx = 0.0f, sum = 0.0f, inv, scale = 1.0f / sqrtf(16.0f);
    int any = 0;
    for (j = 0; j < c->T; ++j) {
        float acc[16];
        const float *k = base + j * ld + c->D + h * 16;
        if (km && !km[j]) {
            p[j] = 0.0f;
            continue;
        }
        for (l = 0; l < 16; ++l) acc[l] = ATT_FMAF(q[l], k[l], 0.0f);
        for (l = 0; l < 8; ++l) acc[l] += acc[l + 8];
        for (l = 0; l < 4; ++l) acc[l] += acc[l + 4];
        p[j] = ((acc[0] + acc[2]) + (acc[1] + acc[3])) * scale;
        if (!any || p[j] > mx) mx = p[j];
        any = 1;
    }
    for (l = 0; l < 16; ++l) o[l] = 0.0f;
    if (!any) return;
    for (j = 0; j < c->T; ++j) {
        if (km && !km[j]) continue;
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    inv = 1.0f / sum;
    for (j = 0; j < c->T; ++j) {
        float w;
        if (km && !km[j]) continue;
        p[j] *= inv;
        w = c->adj ? p[j] * c->adj[((size_t)b * c->T + i) * c->T + j] : p[j];
        for (l = 0; l < 16; ++l) o[l] = ATT_FMAF(w, base[j * ld + 2 * c->D + h * 16 + l], o[l]);
    }
}

static void test_attention(void) {
    hpj_rng r;
    att_ctx c;
    /* batch 0: keys 1 and 4 masked; batch 1: all keys valid; batch 2: all masked */
    uint8_t km[15] = {1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    int variant, shape, i, j, d;
    size_t nq;
    hpj_rng_seed(&r, 81);
    for (shape = 0; shape < 3; ++shape) {
        c.B = 3;
        c.T = 5;
        /* head width 20 (a full 16-lane block and a tail), then 16 with 2
           heads, then 16 with 8 heads */
        c.D = shape == 0 ? 40 : shape == 1 ? 32 : 128;
        c.H = shape == 2 ? 8 : 2;
        nq = (size_t)c.B * c.T * 3 * c.D;
        c.qkv = fbuf(nq);
        c.out = fbuf((size_t)c.B * c.T * c.D);
        c.att = fbuf((size_t)c.B * c.H * c.T * c.T);
        c.w = fbuf((size_t)c.B * c.T * c.D);
        for (variant = 0; variant < 3; ++variant) {
            float *adj = fbuf((size_t)c.B * c.T * c.T), *g = fbuf(nq), *g2 = fbuf(nq);
            fill_uniform(c.qkv, nq, -1.5f, 1.5f, &r);
            fill_uniform(c.w, (size_t)c.B * c.T * c.D, -1, 1, &r);
            fill_uniform(adj, (size_t)c.B * c.T * c.T, 0.0f, 2.0f, &r);
            c.km = variant >= 1 ? km : NULL;
            c.adj = variant == 2 ? adj : NULL;
            att_loss(&c);
            for (i = 0; i < c.B; ++i)
                for (j = 0; j < c.T; ++j)
                    for (d = 0; d < c.D; ++d)
                        CHECK_MSG(fabs(c.out[((size_t)i * c.T + j) * c.D + d] - att_ref(&c, i, j, d)) < 1e-5,
                                  "variant %d: out[%d][%d][%d] = %g, want %g", variant, i, j, d,
                                  c.out[((size_t)i * c.T + j) * c.D + d], att_ref(&c, i, j, d));
            if (c.D == 16 * c.H) /* 16-float heads: the loop's exact bits, output and weights */
                for (i = 0; i < c.B; ++i)
                    for (j = 0; j < c.T; ++j)
                        for (d = 0; d < c.H; ++d) {
                            float o[16], p[5];
                            att_row16(&c, i, d, j, o, p);
                            CHECK_MSG(bits_equal(o, c.out + ((size_t)i * c.T + j) * c.D + d * 16, 16),
                                      "variant %d: 16-float head %d of b%d t%d differs from the loop's bits", variant, d, i, j);
                            CHECK(bits_equal(p, c.att + (((size_t)i * c.H + d) * c.T + j) * c.T, 5));
                        }
            for (i = 0; i < 3; ++i)
                hpj_attention_backward(i ? g2 : g, c.w, c.qkv, c.att, c.km, c.adj, c.B, c.T, c.D, c.H);
            CHECK(!doubles("dqkv", g, g2, nq));
            CHECK_MSG(!gradcheck("attention dqkv", att_loss, &c, c.qkv, g, nq, 1e-2f, 2e-2, 400, &r), "variant %d", variant);
            if (c.km) {
                /* masked keys: exactly zero k and v gradient; and their values do
                   not change the output at all */
                float *out0 = fbuf((size_t)c.B * c.T * c.D);
                int b, t;
                for (b = 0; b < c.B; ++b)
                    for (t = 0; t < c.T; ++t) {
                        const float *gt = g + ((size_t)b * c.T + t) * 3 * c.D;
                        for (d = c.D; d < 3 * c.D; ++d)
                            if (!km[b * c.T + t]) CHECK_MSG(gt[d] == 0.0f, "masked key b%d t%d has gradient %g", b, t, gt[d]);
                        if (b == 2) /* every key masked: zero output and zero q gradient */
                            for (d = 0; d < c.D; ++d) {
                                CHECK(gt[d] == 0.0f);
                                CHECK(c.out[((size_t)b * c.T + t) * c.D + d] == 0.0f);
                            }
                    }
                att_loss(&c); /* gradcheck left c.out at a perturbed point */
                memcpy(out0, c.out, sizeof(float) * c.B * c.T * c.D);
                for (d = c.D; d < 3 * c.D; ++d) c.qkv[(0 * c.T + 1) * 3 * c.D + d] = 1e6f; /* batch 0 key 1 */
                att_loss(&c);
                CHECK(bits_equal(out0, c.out, (size_t)c.B * c.T * c.D));
                free(out0);
            }
            free(adj);
            free(g);
            free(g2);
        }
        free(c.qkv);
        free(c.out);
        free(c.att);
        free(c.w);
    }
}

/* The attention backward's fast sibling (a row of dP kept between its two
   passes) gives the reference's bits, on rows short enough to keep (5
   keys) and longer than its row buffer (300 keys: computed again, as the
   reference), with masked keys (and one graph with every key masked) and
   with attention weights a_ij. */
static void test_attention_backward_paths(void) {
    static const int shape[2][4] = {{3, 5, 40, 2}, {2, 300, 32, 2}}; /* B, T, D, H */
    int si, variant, i, compared = 0;
    hpj_rng r;
    hpj_rng_seed(&r, 83);
    for (si = 0; si < 2; ++si)
        for (variant = 0; variant < 2; ++variant) {
            int B = shape[si][0], T = shape[si][1], D = shape[si][2], H = shape[si][3];
            size_t nq = (size_t)B * T * 3 * D, nd = (size_t)B * T * D, nt = (size_t)B * T * T;
            float *qkv = fbuf(nq), *out = fbuf(nd), *att = fbuf((size_t)H * nt), *dout = fbuf(nd), *adj = fbuf(nt);
            float *g[2];
            uint8_t *km = (uint8_t *)malloc((size_t)B * T);
            fill_uniform(qkv, nq, -1.5f, 1.5f, &r);
            fill_uniform(dout, nd, -1, 1, &r);
            fill_uniform(adj, nt, 0.0f, 2.0f, &r);
            for (i = 0; i < B * T; ++i) km[i] = i >= (B - 1) * T ? 0 : i % 4 != 1; /* the last graph: all masked */
            hpj_attention_forward(out, att, qkv, km, variant ? adj : NULL, B, T, D, H);
            for (i = 0; i < 2; ++i) { /* the reference, then the best fast level */
                g[i] = fbuf(nq);
                if (hpj_set_paths(i ? HPJ_PATHS_BEST : HPJ_PATHS_REFERENCE) == HPJ_PATHS_REFERENCE && i) break;
                hpj_attention_backward(g[i], dout, qkv, att, km, variant ? adj : NULL, B, T, D, H);
                if (i) {
                    CHECK_MSG(bits_equal(g[0], g[1], nq), "attention backward, %d keys%s: the fast sibling differs", T,
                              variant ? ", weights" : "");
                    ++compared;
                }
            }
            hpj_set_paths(HPJ_PATHS_BEST);
            free(qkv); free(out); free(att); free(dout); free(adj); free(km); free(g[0]); free(g[1]);
        }
    if (!compared) SKIP("built with -DHPJ_REFERENCE: no fast level to compare");
}

/* ---- transformer block -------------------------------------------------- */

typedef struct {
    int B, T, D, H, F, act;
    hpj_block_params p;
    hpj_block_cache cache;
    float *x, *out, *w;
    const uint8_t *km;
    const float *adj;
} blk_ctx;
static double blk_loss(void *q) {
    blk_ctx *c = (blk_ctx *)q;
    hpj_block_forward(c->out, &c->cache, c->x, &c->p, c->km, c->adj, c->B, c->T, c->D, c->H, c->F, c->act);
    return wsum(c->out, c->w, (size_t)c->B * c->T * c->D);
}

static void test_block(void) {
    hpj_rng r;
    blk_ctx c;
    uint8_t km[10] = {1, 1, 0, 1, 1, 1, 1, 1, 1, 0};
    float *adj;
    int act;
    size_t np, nx;
    hpj_rng_seed(&r, 91);
    c.B = 2;
    c.T = 5;
    c.D = 6;
    c.H = 2;
    c.F = 7;
    np = hpj_block_param_count(c.D, c.F);
    nx = (size_t)c.B * c.T * c.D;
    CHECK_EQ_INT(np, 2 * 6 + 18 * 6 + 18 + 36 + 6 + 12 + 42 + 7 + 42 + 6);
    adj = fbuf((size_t)c.B * c.T * c.T);
    fill_uniform(adj, (size_t)c.B * c.T * c.T, 0.2f, 1.5f, &r);
    for (act = 0; act < 2; ++act) {
        float *flat = fbuf(np), *gflat = fbuf(np), *gflat2 = fbuf(np);
        float *cflat = fbuf(hpj_block_cache_count(c.B, c.T, c.D, c.H, c.F));
        float *scratch = fbuf(hpj_block_scratch_count(c.B, c.T, c.D, c.H, c.F));
        float *dx = fbuf(nx), *dx2 = fbuf(nx);
        hpj_block_params dp, dp2;
        float h = act == HPJ_ACT_GELU ? 1e-2f : 1e-3f;
        int k;
        c.act = act;
        c.km = km;
        c.adj = act ? adj : NULL;
        c.x = fbuf(nx);
        c.out = fbuf(nx);
        c.w = fbuf(nx);
        hpj_block_params_bind(&c.p, flat, c.D, c.F);
        hpj_block_params_bind(&dp, gflat, c.D, c.F);
        hpj_block_params_bind(&dp2, gflat2, c.D, c.F);
        CHECK(c.p.b2 + c.D == flat + np); /* bound without gaps */
        hpj_block_cache_bind(&c.cache, cflat, c.B, c.T, c.D, c.H, c.F);
        CHECK(c.cache.fch_act + (size_t)c.B * c.T * c.F <= cflat + hpj_block_cache_count(c.B, c.T, c.D, c.H, c.F));
        hpj_block_params_init(&c.p, c.D, c.F, &r);
        /* random LayerNorm affine and biases too, so every path is exercised */
        fill_uniform(c.p.ln1_g, c.D, 0.5f, 1.5f, &r);
        fill_uniform(c.p.ln2_g, c.D, 0.5f, 1.5f, &r);
        fill_uniform(c.p.ln1_b, c.D, -0.3f, 0.3f, &r);
        fill_uniform(c.p.ln2_b, c.D, -0.3f, 0.3f, &r);
        fill_uniform(c.p.bqkv, 3 * c.D, -0.3f, 0.3f, &r);
        fill_uniform(c.p.bo, c.D, -0.3f, 0.3f, &r);
        fill_uniform(c.x, nx, -1, 1, &r);
        fill_uniform(c.w, nx, -1, 1, &r);
        blk_loss(&c);
        hpj_block_backward(dx, &dp, c.w, c.x, &c.p, &c.cache, scratch, c.km, c.adj, c.B, c.T, c.D, c.H, c.F, act);
        for (k = 0; k < 2; ++k)
            hpj_block_backward(dx2, &dp2, c.w, c.x, &c.p, &c.cache, scratch, c.km, c.adj, c.B, c.T, c.D, c.H, c.F, act);
        CHECK(!doubles("block dx", dx, dx2, nx) && !doubles("block dparams", gflat, gflat2, np));
        CHECK_MSG(!gradcheck("block dx", blk_loss, &c, c.x, dx, nx, h, 3e-2, 60, &r), "act %d", act);
        {
            /* every parameter tensor, probed */
            float *pt[12] = {c.p.ln1_g, c.p.ln1_b, c.p.Wqkv, c.p.bqkv, c.p.Wo, c.p.bo,
                             c.p.ln2_g, c.p.ln2_b, c.p.W1, c.p.b1, c.p.W2, c.p.b2};
            float *gt[12] = {dp.ln1_g, dp.ln1_b, dp.Wqkv, dp.bqkv, dp.Wo, dp.bo, dp.ln2_g, dp.ln2_b, dp.W1, dp.b1, dp.W2, dp.b2};
            size_t nt[12];
            static const char *names[12] = {"ln1_g", "ln1_b", "Wqkv", "bqkv", "Wo", "bo",
                                            "ln2_g", "ln2_b", "W1", "b1", "W2", "b2"};
            int t;
            for (t = 0; t < 11; ++t) nt[t] = (size_t)(pt[t + 1] - pt[t]);
            nt[11] = (size_t)c.D;
            for (t = 0; t < 12; ++t)
                CHECK_MSG(!gradcheck(names[t], blk_loss, &c, pt[t], gt[t], nt[t], h, 3e-2, 25, &r), "block act %d: %s",
                          act, names[t]);
        }
        /* dp == NULL still gives dinp; dinp == NULL still gives dp */
        memset(dx2, 0, nx * sizeof(float));
        hpj_block_backward(dx2, NULL, c.w, c.x, &c.p, &c.cache, scratch, c.km, c.adj, c.B, c.T, c.D, c.H, c.F, act);
        CHECK(bits_equal(dx, dx2, nx));
        memset(gflat2, 0, np * sizeof(float));
        hpj_block_backward(NULL, &dp2, c.w, c.x, &c.p, &c.cache, scratch, c.km, c.adj, c.B, c.T, c.D, c.H, c.F, act);
        CHECK(bits_equal(gflat, gflat2, np));
        free(flat);
        free(gflat);
        free(gflat2);
        free(cflat);
        free(scratch);
        free(dx);
        free(dx2);
        free(c.x);
        free(c.out);
        free(c.w);
    }
    free(adj);
}

/* One-token sequences without mask or adjacency take the v-only path of
   the block: it must agree with the full attention path (forced by an
   all-ones key mask) in value, leave q and k without gradient, and pass
   the finite-difference check itself. */
static void test_block_single(void) {
    hpj_rng r;
    blk_ctx c;
    uint8_t km[3] = {1, 1, 1};
    size_t np, nx, i;
    float *flat, *g1, *g2, *cflat, *scratch, *dx1, *dx2, *out1;
    hpj_block_params dp1, dp2;
    int same = 1;
    hpj_rng_seed(&r, 93);
    c.B = 3;
    c.T = 1;
    c.D = 16;
    c.H = 4;
    c.F = 24;
    c.act = HPJ_ACT_GELU;
    c.adj = NULL;
    np = hpj_block_param_count(c.D, c.F);
    nx = (size_t)c.B * c.D;
    flat = fbuf(np);
    g1 = fbuf(np);
    g2 = fbuf(np);
    cflat = fbuf(hpj_block_cache_count(c.B, c.T, c.D, c.H, c.F));
    scratch = fbuf(hpj_block_scratch_count(c.B, c.T, c.D, c.H, c.F));
    dx1 = fbuf(nx);
    dx2 = fbuf(nx);
    out1 = fbuf(nx);
    c.x = fbuf(nx);
    c.out = fbuf(nx);
    c.w = fbuf(nx);
    hpj_block_params_bind(&c.p, flat, c.D, c.F);
    hpj_block_params_bind(&dp1, g1, c.D, c.F);
    hpj_block_params_bind(&dp2, g2, c.D, c.F);
    hpj_block_cache_bind(&c.cache, cflat, c.B, c.T, c.D, c.H, c.F);
    hpj_block_params_init(&c.p, c.D, c.F, &r);
    fill_uniform(c.p.bqkv, 3 * c.D, -0.3f, 0.3f, &r);
    fill_uniform(c.x, nx, -1, 1, &r);
    fill_uniform(c.w, nx, -1, 1, &r);
    /* v-only path */
    c.km = NULL;
    blk_loss(&c);
    memcpy(out1, c.out, nx * sizeof(float));
    for (i = 0; i < (size_t)c.B * c.H; ++i) CHECK(c.cache.att[i] == 1.0f);
    hpj_block_backward(dx1, &dp1, c.w, c.x, &c.p, &c.cache, scratch, NULL, NULL, c.B, c.T, c.D, c.H, c.F, c.act);
    for (i = 0; i < 2 * (size_t)c.D * c.D; ++i) same &= dp1.Wqkv[i] == 0.0f;
    for (i = 0; i < 2 * (size_t)c.D; ++i) same &= dp1.bqkv[i] == 0.0f;
    CHECK_MSG(same, "q and k rows of the one-token block got a gradient");
    CHECK(!gradcheck("single-token block dx", blk_loss, &c, c.x, dx1, nx, 1e-2f, 3e-2, 48, &r));
    CHECK(!gradcheck("single-token block Wqkv", blk_loss, &c, c.p.Wqkv, dp1.Wqkv, 3 * (size_t)c.D * c.D, 1e-2f, 3e-2,
                     60, &r));
    /* full attention path (a key mask of ones): the same values */
    c.km = km;
    blk_loss(&c);
    hpj_block_backward(dx2, &dp2, c.w, c.x, &c.p, &c.cache, scratch, c.km, NULL, c.B, c.T, c.D, c.H, c.F, c.act);
    same = 1;
    for (i = 0; i < nx; ++i) same &= out1[i] == c.out[i] && dx1[i] == dx2[i];
    for (i = 0; i < np; ++i) same &= g1[i] == g2[i];
    CHECK_MSG(same, "one-token block: v-only path differs from the attention path");
    free(flat);
    free(g1);
    free(g2);
    free(cflat);
    free(scratch);
    free(dx1);
    free(dx2);
    free(out1);
    free(c.x);
    free(c.out);
    free(c.w);
}

/* Within a tolerance of a (relative) or atol. */
static int near_all(const float *a, const float *b, size_t n, double rtol, double atol) {
    size_t i;
    for (i = 0; i < n; ++i)
        if (!(fabs((double)a[i] - b[i]) <= atol + rtol * fabs((double)a[i]))) return 0;
    return 1;
}

/* The GELU block's output and gradients on every fast paths level (the
   fast GELU kernels, the paired linear backward on two threads, the fast
   GEMM, the fast LayerNorm) are the same bits, and within rounding of the
   reference's (whose LayerNorm sums a row in order, the fast one in
   lanes; nn.gelu_linear_paths holds the GELU and the linear backward to
   the reference's bits), for one-token and masked sequences, with
   pre-activations spread over the erfc range and a lane tail (F = 40). */
static void test_block_paths(void) {
    hpj_rng r;
    int lvl, T, nt, t;
    const int B = 3, D = 16, H = 4, F = 40;
    uint8_t km[15] = {1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1};
    size_t np = hpj_block_param_count(D, F), cc = hpj_block_cache_count(B, 5, D, H, F);
    float *flat = fbuf(np), *cflat = fbuf(cc);
    float *scratch = fbuf(hpj_block_scratch_count(B, 5, D, H, F));
    float *x = fbuf((size_t)B * 5 * D), *w = fbuf((size_t)B * 5 * D);
    float *out[4], *dx[4], *gp[4];
    hpj_block_params p;
    hpj_rng_seed(&r, 97);
    for (lvl = 0; lvl < 4; ++lvl) {
        out[lvl] = fbuf((size_t)B * 5 * D);
        dx[lvl] = fbuf((size_t)B * 5 * D);
        gp[lvl] = fbuf(np);
    }
    hpj_block_params_bind(&p, flat, D, F);
    hpj_block_params_init(&p, D, F, &r);
    fill_uniform(p.b1, F, -3.0f, 3.0f, &r); /* fch past |x| = sqrt 2 (the erfc branch) in many lanes */
    fill_uniform(p.W1, (size_t)F * D, -1.0f, 1.0f, &r);
    fill_uniform(x, (size_t)B * 5 * D, -2.0f, 2.0f, &r);
    fill_uniform(w, (size_t)B * 5 * D, -1.0f, 1.0f, &r);
    for (nt = 1; nt <= 2; ++nt) { /* two threads: the paired linear backward */
#ifdef _OPENMP
        int saved = omp_get_max_threads();
        omp_set_num_threads(nt);
#endif
        for (T = 1; T <= 5; T += 4) {
            size_t nx = (size_t)B * T * D;
            const uint8_t *mask = T == 1 ? NULL : km;
            int far = 0, runs = 0, first = 0; /* first: the first fast level run */
            for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
                hpj_block_cache c;
                hpj_block_params g;
                size_t i;
                if (hpj_set_paths(lvl) != lvl) continue;
                hpj_block_cache_bind(&c, cflat, B, T, D, H, F);
                memset(gp[lvl], 0, np * sizeof(float));
                memset(dx[lvl], 0, nx * sizeof(float));
                hpj_block_params_bind(&g, gp[lvl], D, F);
                hpj_block_forward(out[lvl], &c, x, &p, mask, NULL, B, T, D, H, F, HPJ_ACT_GELU);
                if (lvl == 0)
                    for (i = 0; i < (size_t)B * T * F; ++i) far += fabsf(c.fch[i]) > 1.5f;
                hpj_block_backward(dx[lvl], &g, w, x, &p, &c, scratch, mask, NULL, B, T, D, H, F, HPJ_ACT_GELU);
                ++runs;
                if (lvl > 0)
                    CHECK_MSG(near_all(out[0], out[lvl], nx, 1e-4, 1e-5) && near_all(dx[0], dx[lvl], nx, 1e-4, 1e-5) &&
                                  near_all(gp[0], gp[lvl], np, 1e-4, 1e-5),
                              "%s, %d threads, T %d: the block differs from the reference's beyond rounding",
                              hpj_paths_name(lvl), nt, T);
                if (lvl > 0 && !first) first = lvl;
                if (lvl > 0 && first != lvl)
                    CHECK_MSG(bits_equal(out[first], out[lvl], nx) && bits_equal(dx[first], dx[lvl], nx) &&
                                  bits_equal(gp[first], gp[lvl], np),
                              "%s, %d threads, T %d: the block's bits differ from %s's", hpj_paths_name(lvl), nt, T,
                              hpj_paths_name(first));
            }
            hpj_set_paths(HPJ_PATHS_BEST);
            CHECK(runs >= 1);
            CHECK_MSG(far > B * T * F / 8, "T %d: only %d pre-activations in the erfc range", T, far);
        }
#ifdef _OPENMP
        omp_set_num_threads(saved);
#endif
    }
    for (t = 0; t < 4; ++t) {
        free(out[t]);
        free(dx[t]);
        free(gp[t]);
    }
    free(flat);
    free(cflat);
    free(scratch);
    free(x);
    free(w);
}

/* The GELU forward and backward (the fast kernels) and the linear
   backward (the two parts side by side on two threads, the fast GEMM) on
   every paths level give the reference's bits, with pre-activations
   spread over the erfc range and a lane tail. */
static void test_gelu_linear_paths(void) {
    const int N = 15, Din = 16, Dout = 40;
    size_t n = (size_t)N * Dout, nr = 2 * n + (size_t)N * Din + (size_t)Dout * Din + Dout, i;
    float *x = fbuf(n), *dy = fbuf(n), *W = fbuf((size_t)Dout * Din), *inp = fbuf((size_t)N * Din);
    float *ref = fbuf(nr), *got = fbuf(nr); /* GELU out, its dinp, the linear's dinp, dW, db */
    int lvl, nt, runs = 0;
    hpj_rng r;
    hpj_rng_seed(&r, 98);
    fill_uniform(x, n, -5.0f, 5.0f, &r);
    fill_uniform(dy, n, -1.0f, 1.0f, &r);
    fill_uniform(W, (size_t)Dout * Din, -1.0f, 1.0f, &r);
    fill_uniform(inp, (size_t)N * Din, -1.0f, 1.0f, &r);
    for (nt = 1; nt <= 2; ++nt) {
#ifdef _OPENMP
        int saved = omp_get_max_threads();
        omp_set_num_threads(nt);
#endif
        for (lvl = HPJ_PATHS_REFERENCE; lvl <= HPJ_PATHS_AVX512; ++lvl) {
            float *o = lvl == HPJ_PATHS_REFERENCE ? ref : got, *gy = o + n, *di = gy + n, *dW = di + (size_t)N * Din;
            if (hpj_set_paths(lvl) != lvl) continue;
            for (i = 0; i < nr; ++i) o[i] = i < 2 * n ? 0.0f : 0.25f; /* the gradients add to a start */
            hpj_gelu_forward(o, x, n);
            hpj_gelu_backward(gy, dy, x, n);
            hpj_linear_backward(di, dW, dW + (size_t)Dout * Din, dy, inp, W, N, Din, Dout);
            ++runs;
            if (lvl > HPJ_PATHS_REFERENCE)
                CHECK_MSG(bits_equal(ref, got, nr), "%s, %d threads: GELU or linear backward bits differ from the "
                          "reference", hpj_paths_name(lvl), nt);
        }
        hpj_set_paths(HPJ_PATHS_BEST);
#ifdef _OPENMP
        omp_set_num_threads(saved);
#endif
    }
    CHECK(runs >= 2);
    free(x); free(dy); free(W); free(inp); free(ref); free(got);
}

/* ---- losses ------------------------------------------------------------- */

typedef struct {
    int kind, N, C;
    float *pred, *target, beta;
    int32_t *labels;
} loss_ctx;
static double loss_loss(void *p) {
    loss_ctx *c = (loss_ctx *)p;
    if (c->kind == 0) return hpj_smooth_l1(c->pred, c->target, NULL, (size_t)c->N, c->beta, 0.5f);
    return hpj_softmax_xent(c->pred, c->labels, NULL, c->N, c->C, 0.5f);
}

static void test_losses(void) {
    hpj_rng r;
    loss_ctx c;
    float pred[4] = {0.0f, 2.0f, -1.0f, 0.25f}, target[4] = {0.5f, 0.0f, 1.0f, 0.25f}, g[4] = {0, 0, 0, 0};
    double l;
    int32_t labels[5] = {2, 0, -1, 1, 3};
    float logits[20], dl[20], dl2[20];
    int i;
    hpj_rng_seed(&r, 101);
    /* SmoothL1, beta 1: 0.5*0.25, 2-0.5, 2-0.5, 0 */
    l = hpj_smooth_l1(pred, target, g, 4, 1.0f, 1.0f);
    CHECK_NEAR(l, 0.125 + 1.5 + 1.5 + 0.0, 1e-7, 0);
    CHECK(g[0] == -0.5f && g[1] == 1.0f && g[2] == -1.0f && g[3] == 0.0f);
    memset(g, 0, sizeof g);
    l = hpj_smooth_l1(pred, target, g, 4, 0.0f, 2.0f); /* beta 0: L1, sign(0) = 0 */
    CHECK_NEAR(l, 2.0 * (0.5 + 2 + 2 + 0), 1e-7, 0);
    CHECK(g[0] == -2.0f && g[1] == 2.0f && g[2] == -2.0f && g[3] == 0.0f);
    l = hpj_smooth_l1(pred, target, NULL, 4, 4.0f, 1.0f); /* all quadratic */
    CHECK_NEAR(l, (0.25 + 4 + 4) / 8.0, 1e-7, 0);
    /* softmax cross-entropy against the definition */
    fill_uniform(logits, 20, -3, 3, &r);
    memset(dl, 0, sizeof dl);
    memset(dl2, 0, sizeof dl2);
    l = hpj_softmax_xent(logits, labels, dl, 5, 4, 0.5f);
    {
        double want = 0;
        int k;
        for (i = 0; i < 5; ++i) {
            double se = 0;
            if (labels[i] < 0) continue;
            for (k = 0; k < 4; ++k) se += exp(logits[i * 4 + k]);
            want += log(se) - logits[i * 4 + labels[i]];
        }
        CHECK_NEAR(l, 0.5 * want, 1e-6, 0);
        for (k = 0; k < 4; ++k) CHECK(dl[2 * 4 + k] == 0.0f); /* ignored row */
    }
    hpj_softmax_xent(logits, labels, dl2, 5, 4, 0.5f);
    hpj_softmax_xent(logits, labels, dl2, 5, 4, 0.5f);
    CHECK(!doubles("dlogits", dl, dl2, 20));
    c.kind = 1;
    c.N = 5;
    c.C = 4;
    c.pred = logits;
    c.labels = labels;
    CHECK(!gradcheck("xent", loss_loss, &c, logits, dl, 20, 1e-2f, 1e-2, 100, &r));
    /* SmoothL1 gradcheck away from the kinks */
    {
        float p2[9], t2[9], g2[9] = {0};
        for (i = 0; i < 9; ++i) {
            p2[i] = 0.3f * (float)i - 1.2f;
            t2[i] = 0.05f;
        }
        c.kind = 0;
        c.N = 9;
        c.pred = p2;
        c.target = t2;
        c.beta = 0.5f;
        hpj_smooth_l1(p2, t2, g2, 9, 0.5f, 0.5f);
        CHECK(!gradcheck("smooth_l1", loss_loss, &c, p2, g2, 9, 1e-2f, 1e-2, 100, &r));
    }
}

/* ---- optimiser, schedules, clipping, EMA -------------------------------- */

static void test_adam(void) {
    float p[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.1f, -0.3f, 0.0f}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    double P[3] = {1.0, -2.0, 0.5}, Mm[3] = {0, 0, 0}, V[3] = {0, 0, 0};
    /* the hyperparameters as the float arguments carry them */
    double lr = (float)1e-2, b1 = (float)0.9, b2 = (float)0.999, eps = (float)1e-8, wd = (float)0.1;
    int mode, t, i;
    for (mode = HPJ_OPT_ADAM; mode <= HPJ_OPT_ADAM_ACTIVE; ++mode) {
        for (i = 0; i < 3; ++i) {
            m[i] = v[i] = 0;
            Mm[i] = V[i] = 0;
            P[i] = p[i] = (float)(i == 0 ? 1.0 : i == 1 ? -2.0 : 0.5);
        }
        for (t = 1; t <= 3; ++t) {
            hpj_adam_step(p, g, m, v, 3, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, mode, t);
            /* the torch update, in double */
            for (i = 0; i < 3; ++i) {
                double gi = g[i], bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
                if (mode == HPJ_OPT_ADAMW) P[i] *= 1 - lr * wd;
                else if (mode == HPJ_OPT_ADAM || gi != 0.0) gi += wd * P[i]; /* adam_active: g[2] = 0 */
                Mm[i] = b1 * Mm[i] + (1 - b1) * gi;
                V[i] = b2 * V[i] + (1 - b2) * gi * gi;
                P[i] -= lr / bc1 * Mm[i] / (sqrt(V[i]) / sqrt(bc2) + eps);
            }
            for (i = 0; i < 3; ++i) {
                CHECK_NEAR(p[i], P[i], 1e-6, 1e-7);
                CHECK_NEAR(m[i], Mm[i], 1e-5, 1e-9);
                CHECK_NEAR(v[i], V[i], 1e-5, 1e-12);
            }
        }
    }
    /* hand-computed first step, no weight decay: p -= lr * g/|g| (1 - tiny) */
    {
        float q[1] = {1.0f}, gq[1] = {0.5f}, mq[1] = {0}, vq[1] = {0};
        hpj_adam_step(q, gq, mq, vq, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 1);
        CHECK_NEAR(q[0], 1.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-7, 0);
        CHECK_NEAR(mq[0], (1.0 - (double)0.9f) * 0.5, 1e-6, 0);
        CHECK_NEAR(vq[0], (1.0 - (double)0.999f) * 0.25, 1e-6, 0);
    }
}

/* hpj_adam_step over whole 16-float blocks and a partial last block (the
   fast part's fused pass is held to these bits by internals.adam_ema_paths):
   the bits of the documented float
   arithmetic, each operation rounded once in this order, for Adam, AdamW
   and Adam with decay only where the gradient is non-zero (every third
   gradient is 0), with weight decay over three steps. */
static void test_adam_blocks(void) {
    enum { N = 16 * 5 + 7 };
    float p[N], g[N], m[N], v[N], P[N], Mm[N], V[N];
    float lr = 3e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.05f;
    int mode, t, i;
    hpj_rng r;
    hpj_rng_seed(&r, 31);
    for (mode = HPJ_OPT_ADAM; mode <= HPJ_OPT_ADAM_ACTIVE; ++mode) {
        for (i = 0; i < N; ++i) {
            P[i] = p[i] = (float)hpj_rng_normal(&r);
            Mm[i] = m[i] = V[i] = v[i] = 0.0f;
        }
        for (t = 1; t <= 3; ++t) {
            double bc1 = 1.0 - pow((double)b1, (double)t), bc2 = 1.0 - pow((double)b2, (double)t);
            float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2);
            int adamw = mode == HPJ_OPT_ADAMW;
            float gwd = adamw ? 0.0f : wd, decay = adamw ? (float)(1.0 - (double)lr * wd) : 1.0f;
            float omb1 = (float)(1.0 - (double)b1), omb2 = (float)(1.0 - (double)b2);
            for (i = 0; i < N; ++i) g[i] = i % 3 == 0 ? 0.0f : (float)(0.1 * hpj_rng_normal(&r));
            hpj_adam_step(p, g, m, v, N, lr, b1, b2, eps, wd, mode, t);
            for (i = 0; i < N; ++i) {
                float gi = mode == HPJ_OPT_ADAM_ACTIVE && g[i] == 0.0f ? 0.0f : g[i] * 1.0f + gwd * P[i], s;
                P[i] *= decay;
                Mm[i] = b1 * Mm[i] + omb1 * gi;
                V[i] = b2 * V[i] + omb2 * (gi * gi);
                s = sqrtf(V[i]);
                P[i] -= step * (Mm[i] / (s / bc2s + eps));
            }
            CHECK_MSG(bits_equal(p, P, N) && bits_equal(m, Mm, N) && bits_equal(v, V, N),
                      "optimizer %d step %d: not the bits of the float arithmetic", mode, t);
        }
    }
}

static void test_schedules(void) {
    /* warmup 10 then cosine from 1e-3 to 1e-5 over steps 10..110 */
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 0, 110, 10), 1e-4, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 4, 110, 10), 5e-4, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 9, 110, 10), 1e-3, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 10, 110, 10), 1e-3, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 60, 110, 10), (1e-3 + 1e-5) / 2, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 35, 110, 10),
               1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + cos(3.14159265358979 * 0.25)), 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 110, 110, 10), 1e-5, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 1e-3f, 1e-5f, 500, 110, 10), 1e-5, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_CONSTANT, 1e-3f, 1e-5f, 2, 110, 4), 0.75e-3, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_CONSTANT, 1e-3f, 1e-5f, 80, 110, 4), 1e-3, 1e-6, 0);
    CHECK_NEAR(hpj_lr_at(HPJ_SCHED_COSINE, 2e-4f, 0.0f, 0, 100, 0), 2e-4, 1e-6, 0); /* no warmup */
    /* EMA momentum: linear 0.996 -> 1 */
    CHECK_NEAR(hpj_ema_momentum(0.996f, 1.0f, 0, 100), 0.996, 1e-7, 0);
    CHECK_NEAR(hpj_ema_momentum(0.996f, 1.0f, 25, 100), 0.997, 1e-7, 0);
    CHECK_NEAR(hpj_ema_momentum(0.996f, 1.0f, 100, 100), 1.0, 1e-7, 0);
    CHECK_NEAR(hpj_ema_momentum(0.996f, 1.0f, 150, 100), 1.0, 1e-7, 0);
    CHECK_NEAR(hpj_ema_momentum(0.99f, 1.0f, 3, 0), 0.99, 1e-7, 0);
}

static void test_ema(void) {
    float t[5] = {1, 2, 3, 4, 5}, o[5] = {0, -1, 7, 4, 1e3f};
    int i;
    hpj_ema_update(t, o, 5, 0.9f);
    for (i = 0; i < 5; ++i) CHECK_NEAR(t[i], 0.9 * (i + 1) + 0.1 * o[i], 1e-6, 1e-6);
    hpj_ema_update(t, o, 5, 0.0f);
    for (i = 0; i < 5; ++i) CHECK(t[i] == o[i]);
    hpj_ema_update(t, t, 5, 0.5f); /* aliasing is fine */
    CHECK(t[2] == 7.0f);
}

static void test_grad_clip(void) {
    float g[4] = {3, 0, 0, 4}, h[4];
    double n;
    size_t i, big = 100001;
    float *x = fbuf(big);
    n = hpj_grad_clip(g, 4, 0.0f);
    CHECK_NEAR(n, 5.0, 1e-12, 0);
    CHECK(g[0] == 3.0f); /* max_norm 0: no clipping */
    n = hpj_grad_clip(g, 4, 10.0f);
    CHECK(g[3] == 4.0f); /* below the limit */
    n = hpj_grad_clip(g, 4, 1.0f);
    CHECK_NEAR(n, 5.0, 1e-12, 0);
    CHECK_NEAR(g[0], 0.6, 1e-6, 0);
    CHECK_NEAR(g[3], 0.8, 1e-6, 0);
    memcpy(h, g, sizeof g);
    h[1] = NAN;
    n = hpj_grad_clip(h, 4, 1.0f);
    CHECK(isnan(n) && h[0] == g[0]); /* reported, left as is */
    for (i = 0; i < big; ++i) x[i] = (i % 2) ? 1.0f : -1.0f;
    n = hpj_grad_clip(x, big, 0.0f);
    CHECK_NEAR(n, sqrt((double)big), 1e-12, 0);
    { /* the documented order, bit for bit: 64 fixed blocks, each summed in
         8 double lanes (element i of a block in lane i % 8, the tail from
         lane 0) combined ((0+4)+(2+6))+((1+5)+(3+7)), then the blocks in order */
        hpj_rng r;
        double tot = 0.0;
        int b;
        hpj_rng_seed(&r, 23);
        fill_uniform(x, big, -2, 2, &r);
        for (i = 0; i < big; ++i) x[i] = ldexpf(x[i], (int)(i * 7 % 23) - 11); /* wide range: rounding shows the order */
        for (b = 0; b < 64; ++b) {
            size_t i0 = big * b / 64, i1 = big * (b + 1) / 64, k;
            double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (k = i0; k + 8 <= i1; k += 8)
                for (i = 0; i < 8; ++i) a[i] += (double)x[k + i] * x[k + i];
            for (i = 0; k + i < i1; ++i) a[i] += (double)x[k + i] * x[k + i];
            tot += ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
        }
        n = hpj_grad_clip(x, big, 0.0f);
        CHECK_MSG(n == sqrt(tot), "norm %.17g, the fixed order gives %.17g", n, sqrt(tot));
    }
    free(x);
}

static void test_init(void) {
    hpj_rng r;
    float w[3000];
    double mn = 1e9, mx = -1e9, s = 0;
    int i;
    float a = sqrtf(6.0f / (30 + 100));
    hpj_rng_seed(&r, 3);
    hpj_init_xavier_uniform(w, 30, 100, 1.0f, &r);
    for (i = 0; i < 3000; ++i) {
        if (w[i] < mn) mn = w[i];
        if (w[i] > mx) mx = w[i];
        s += w[i];
    }
    CHECK(mn >= -a && mx <= a);
    CHECK(mn < -0.95 * a && mx > 0.95 * a);
    CHECK_NEAR(s / 3000, 0.0, 0, 0.02 * a);
}

/* ---- the pieces together: a block + linear head trained with Adam -------- */

static void test_train_small(void) {
    hpj_rng r;
    int B = 4, T = 5, D = 8, H = 2, F = 16, N = B * T, step, i;
    size_t nb = hpj_block_param_count(D, F), np = nb + 2 * D + 2, nx = (size_t)N * D;
    float *p = fbuf(np), *g = fbuf(np), *m = fbuf(np), *v = fbuf(np), *ema = fbuf(np);
    float *cache = fbuf(hpj_block_cache_count(B, T, D, H, F)), *scratch = fbuf(hpj_block_scratch_count(B, T, D, H, F));
    float *x = fbuf(nx), *y = fbuf(nx), *dy = fbuf(nx), *pred = fbuf(2 * N), *dpred = fbuf(2 * N), *target = fbuf(2 * N);
    float *W = p + nb, *bias = W + 2 * D, *dW = g + nb, *dbias = dW + 2 * D;
    double first = 0, last = 0;
    hpj_block_params bp, bg;
    hpj_block_cache c;
    hpj_rng_seed(&r, 121);
    hpj_block_params_bind(&bp, p, D, F);
    hpj_block_params_bind(&bg, g, D, F);
    hpj_block_cache_bind(&c, cache, B, T, D, H, F);
    hpj_block_params_init(&bp, D, F, &r);
    hpj_init_xavier_uniform(W, 2, D, 1.0f, &r);
    fill_uniform(x, nx, -1, 1, &r);
    for (i = 0; i < N; ++i) { /* a smooth function of the tokens */
        target[2 * i] = 0.5f * x[i * D] - 0.3f * x[i * D + 3];
        target[2 * i + 1] = x[i * D + 1] * x[i * D + 2];
    }
    memcpy(ema, p, np * sizeof(float));
    for (step = 0; step < 150; ++step) {
        double loss;
        memset(g, 0, np * sizeof(float));
        memset(dpred, 0, 2 * N * sizeof(float));
        memset(dy, 0, nx * sizeof(float));
        hpj_block_forward(y, &c, x, &bp, NULL, NULL, B, T, D, H, F, HPJ_ACT_GELU);
        hpj_linear_forward(pred, y, W, bias, N, D, 2);
        loss = hpj_smooth_l1(pred, target, dpred, 2 * (size_t)N, 1.0f, 1.0f / (2 * N));
        hpj_linear_backward(dy, dW, dbias, dpred, y, W, N, D, 2);
        hpj_block_backward(NULL, &bg, dy, x, &bp, &c, scratch, NULL, NULL, B, T, D, H, F, HPJ_ACT_GELU);
        hpj_grad_clip(g, np, 1.0f);
        hpj_adam_step(p, g, m, v, np, hpj_lr_at(HPJ_SCHED_COSINE, 3e-3f, 1e-4f, step, 150, 10), 0.9f, 0.999f, 1e-8f,
                      1e-4f, 1, step + 1);
        hpj_ema_update(ema, p, np, hpj_ema_momentum(0.9f, 1.0f, step, 150));
        CHECK(isfinite(loss));
        if (step == 0) first = loss;
        last = loss;
    }
    CHECK_MSG(last < 0.3 * first, "loss went from %g to %g", first, last);
    free(p);
    free(g);
    free(m);
    free(v);
    free(ema);
    free(cache);
    free(scratch);
    free(x);
    free(y);
    free(dy);
    free(pred);
    free(dpred);
    free(target);
}

/* ---- 1 vs 2 threads, bit for bit ---------------------------------------- */

static void test_threads_layers(void) {
#ifdef _OPENMP
    hpj_rng r;
    int B = 32, T = 16, D = 128, H = 4, F = 256, N = B * T, run, i;
    size_t nx = (size_t)N * D, np = hpj_block_param_count(D, F), nc = hpj_block_cache_count(B, T, D, H, F);
    size_t ns = hpj_block_scratch_count(B, T, D, H, F);
    float *flat = fbuf(np), *x = fbuf(nx), *w = fbuf(nx), *adj = fbuf((size_t)B * T * T);
    float *out[2], *g[2], *dx[2], *cache[2], *misc[2], *scratch = fbuf(ns);
    uint8_t *km = (uint8_t *)malloc((size_t)B * T);
    int32_t *rowptr = (int32_t *)malloc(sizeof(int32_t) * (N + 1)), *col = (int32_t *)malloc(sizeof(int32_t) * 2 * N);
    int32_t *rev = (int32_t *)malloc(sizeof(int32_t) * 2 * N), segptr[33], labels[32];
    hpj_block_params p;
    hpj_rng_seed(&r, 111);
    hpj_block_params_bind(&p, flat, D, F);
    hpj_block_params_init(&p, D, F, &r);
    fill_uniform(x, nx, -1, 1, &r);
    fill_uniform(w, nx, -1, 1, &r);
    fill_uniform(adj, (size_t)B * T * T, 0, 1, &r);
    for (i = 0; i < B * T; ++i) km[i] = (uint8_t)(hpj_rng_below(&r, 5) != 0);
    /* a ring over all N rows */
    for (i = 0; i < N; ++i) {
        int a = (i + N - 1) % N, b = (i + 1) % N;
        rowptr[i] = 2 * i;
        col[2 * i] = a < b ? a : b;
        col[2 * i + 1] = a < b ? b : a;
    }
    rowptr[N] = 2 * N;
    CHECK_OK(hpj_csr_reverse(rev, rowptr, col, N));
    for (i = 0; i <= 32; ++i) segptr[i] = i * T;
    for (i = 0; i < 32; ++i) labels[i] = (i * 7) % D - (i == 5);
    for (run = 0; run < 2; ++run) {
        hpj_block_cache c;
        hpj_block_params dp;
        float *m;
        double l1, l2, nrm;
        float deps = 0;
        set_threads(run + 1);
        out[run] = fbuf(nx);
        g[run] = fbuf(np);
        dx[run] = fbuf(nx);
        cache[run] = fbuf(nc);
        misc[run] = m = fbuf(10 * nx + 4 + 2 * (size_t)D + 64);
        hpj_block_cache_bind(&c, cache[run], B, T, D, H, F);
        hpj_block_params_bind(&dp, g[run], D, F);
        hpj_block_forward(out[run], &c, x, &p, km, adj, B, T, D, H, F, HPJ_ACT_GELU);
        hpj_block_backward(dx[run], &dp, w, x, &p, &c, scratch, km, adj, B, T, D, H, F, HPJ_ACT_GELU);
        /* the other layers, results packed into misc */
        hpj_gine_forward(m, x, NULL, rowptr, col, N, D, 0.1f);
        hpj_gine_backward(m + nx, NULL, &deps, w, x, NULL, rowptr, col, rev, N, D, 0.1f);
        m[2 * nx] = deps;
        hpj_batchnorm_forward_train(m + 2 * nx + 1, m + 3 * nx + 1, m + 3 * nx + 1 + D, NULL, NULL, x, NULL, NULL, N, D,
                                    0.1f, 1e-5f);
        hpj_batchnorm_backward(m + 4 * nx, m + 5 * nx, m + 5 * nx + D, w, x, NULL, m + 3 * nx + 1,
                               m + 3 * nx + 1 + D, N, D);
        hpj_segment_mean_forward(m + 6 * nx, x, segptr, 32, D);
        hpj_dropout_forward(m + 6 * nx + 32 * D, NULL, x, nx / 2, 0.3f, 5, 6, 7);
        l1 = hpj_smooth_l1(x, w, m + 7 * nx, nx / 2, 0.7f, 0.25f);
        l2 = hpj_softmax_xent(x, labels, m + 7 * nx + nx / 2, 32, D, 1.0f);
        nrm = hpj_grad_clip(g[run], np, 0.5f);
        m[8 * nx] = (float)l1;
        m[8 * nx + 1] = (float)l2;
        m[8 * nx + 2] = (float)nrm;
        /* evaluation mode: the batch statistics above as running mean and
           1 / rstd^2 - eps as running variance, gamma / beta from x / w */
        {
            float *rv = m + 8 * nx + 3 + nx;
            for (i = 0; i < D; ++i) rv[i] = 1.0f / (m[3 * nx + 1 + D + i] * m[3 * nx + 1 + D + i]);
            hpj_batchnorm_forward_eval(m + 8 * nx + 3, x, x, w, m + 3 * nx + 1, rv, N, D, 1e-5f);
        }
        /* GINE with one shared edge vector (the first D floats of w) */
        {
            float *sh = m + 9 * nx + 3 + D;
            hpj_gine_backward_shared(sh, sh + nx, sh + nx + D, w, x, w, rowptr, col, N, D, 0.1f);
        }
    }
    CHECK_MSG(bits_equal(out[0], out[1], nx), "block forward differs between 1 and 2 threads");
    CHECK_MSG(bits_equal(dx[0], dx[1], nx), "block dinp differs between 1 and 2 threads");
    CHECK_MSG(bits_equal(g[0], g[1], np), "block parameter gradients differ between 1 and 2 threads");
    CHECK_MSG(bits_equal(cache[0], cache[1], nc), "block caches differ between 1 and 2 threads");
    CHECK_MSG(bits_equal(misc[0], misc[1], 10 * nx + 4 + 2 * (size_t)D),
              "GINE/BN/pooling/dropout/loss results differ between 1 and 2 threads");
    CHECK(maxabs(g[0], np) > 0 && maxabs(dx[0], nx) > 0);
    for (run = 0; run < 2; ++run) {
        free(out[run]);
        free(g[run]);
        free(dx[run]);
        free(cache[run]);
        free(misc[run]);
    }
    free(flat);
    free(x);
    free(w);
    free(adj);
    free(scratch);
    free(km);
    free(rowptr);
    free(col);
    free(rev);
    set_threads(2);
#else
    SKIP("built without OpenMP");
#endif
}

/* BatchNorm and the shared-edge GINE backward at D = 300: on 1 thread
   their sums run by channel panels (256 + 44 for BatchNorm, 64-channel
   ones for the GINE), on 2 threads by whole rows; the bits must agree. */
static void test_rowblock_sums_threads(void) {
#ifdef _OPENMP
    int N = 200, D = 300, run, i;
    size_t nx = (size_t)N * D;
    float *x = fbuf(nx), *w = fbuf(nx), *g = fbuf(D), *b = fbuf(D), *out[2];
    int32_t *rowptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(N + 1));
    int32_t *col = (int32_t *)malloc(sizeof(int32_t) * 2 * (size_t)N);
    hpj_rng r;
    hpj_rng_seed(&r, 77);
    fill_uniform(x, nx, -1, 1, &r);
    fill_uniform(w, nx, -1, 1, &r);
    fill_uniform(g, D, 0.5f, 1.5f, &r);
    fill_uniform(b, D, -0.5f, 0.5f, &r);
    for (i = 0; i < N; ++i) { /* a ring (symmetric) */
        rowptr[i] = 2 * i;
        col[2 * i] = (i + N - 1) % N;
        col[2 * i + 1] = (i + 1) % N;
    }
    rowptr[N] = 2 * N;
    for (run = 0; run < 2; ++run) {
        float *m;
        set_threads(run + 1);
        out[run] = m = fbuf(3 * nx + 7 * (size_t)D + 1);
        hpj_batchnorm_forward_train(m, m + nx, m + nx + D, m + nx + 2 * D, m + nx + 3 * D, x, g, b, N, D, 0.1f, 1e-5f);
        hpj_batchnorm_backward(m + nx + 4 * D, m + 2 * nx + 4 * D, m + 2 * nx + 5 * D, w, x, g, m + nx, m + nx + D, N, D);
        hpj_gine_backward_shared(m + 2 * nx + 6 * D, m + 3 * nx + 6 * D, m + 3 * nx + 7 * D, w, x, g, rowptr, col, N,
                                 D, 0.1f);
    }
    CHECK_MSG(bits_equal(out[0], out[1], 3 * nx + 7 * (size_t)D + 1),
              "BatchNorm / shared GINE at D = 300 differ between 1 and 2 threads");
    CHECK(maxabs(out[0] + nx + 4 * D, nx) > 0 && maxabs(out[0] + 3 * nx + 6 * D, D) > 0);
    for (run = 0; run < 2; ++run) free(out[run]);
    free(x); free(w); free(g); free(b); free(rowptr); free(col);
    set_threads(2);
#else
    SKIP("built without OpenMP");
#endif
}

const test_case nn_tests[] = {
    {"nn.gemm_naive", test_gemm_naive},
    {"nn.gemm_degenerate", test_gemm_degenerate},
    {"nn.linear_bias_grad", test_linear_bias_grad},
    {"nn.gemm_paths_agree", test_gemm_paths_agree},
    {"nn.gemm_small_path", test_gemm_small_path},
    {"nn.linear_bias_tiles", test_linear_bias_tiles},
    {"nn.gemm_fewrows_path", test_gemm_fewrows_path},
    {"nn.gemm_threads", test_gemm_threads},
    {"nn.linear", test_linear},
    {"nn.linear_few_rows", test_linear_few_rows},
    {"nn.activations", test_activations},
    {"nn.dropout", test_dropout},
    {"nn.norms_grad", test_norms_grad},
    {"nn.layernorm_values", test_layernorm_values},
    {"nn.batchnorm_modes", test_batchnorm_modes},
    {"nn.norm_optional_operands", test_norm_optional_operands},
    {"nn.gine", test_gine},
    {"nn.gine_shared", test_gine_shared},
    {"nn.pooling", test_pooling},
    {"nn.attention", test_attention},
    {"nn.attention_backward_paths", test_attention_backward_paths},
    {"nn.block", test_block},
    {"nn.block_single", test_block_single},
    {"nn.block_paths", test_block_paths},
    {"nn.gelu_linear_paths", test_gelu_linear_paths},
    {"nn.losses", test_losses},
    {"nn.adam", test_adam},
    {"nn.adam_blocks", test_adam_blocks},
    {"nn.schedules", test_schedules},
    {"nn.ema", test_ema},
    {"nn.grad_clip", test_grad_clip},
    {"nn.init", test_init},
    {"nn.train_small", test_train_small},
    {"nn.threads_bitwise", test_threads_layers},
    {"nn.rowblock_sums_threads", test_rowblock_sums_threads},
};
const int nn_tests_count = (int)(sizeof nn_tests / sizeof nn_tests[0]);
