/* wip/probe.h - the probe module of hpjepa.h while it is developed in parallel.
   It is folded into hpjepa.h (API part into the API block, implementation
   part into the implementation block) when done. Include it right after
   hpjepa.h; with HPJEPA_IMPLEMENTATION defined it also compiles the code. */
#ifndef HPJ_WIP_PROBE_API
#define HPJ_WIP_PROBE_API
/* ==== probe: linear probes, stratified folds, resolution weighting ======

   Frozen embeddings are evaluated with linear probes:
     ridge     minimises ||Y - X W^T - 1 b^T||_F^2 + alpha ||W||_F^2
               (sklearn Ridge(alpha)), targets Y (n, t);
     logreg    minimises sum_i -log softmax(W x_i + b)[y_i] + alpha/2 ||W||_F^2
               (sklearn LogisticRegression(C = 1/alpha)), labels 0..C-1.
   Intercepts are never penalised. With standardize = 1 the penalty applies
   to the weights of the z-scored features (what a StandardScaler pipeline
   fits); the returned model always acts on the ORIGINAL features.

   Numerics (details at each function):
     - features stay float; every sum that enters a result is taken in
       double (the float Gram matrix of ridge only preconditions);
     - ridge forms the Gram matrix in float with a symmetric (SYRK) kernel
       (AVX-512, else AVX2 + FMA, else portable C: chosen at compile time
       from the target flags), factors it in float and then refines the solution
       by preconditioned conjugate gradients on the EXACT system, applied in
       double through X (mixed-precision refinement in the spirit of
       LAPACK's dsposv), so the answer is as accurate as a double Cholesky
       solve; if refinement cannot converge it falls back to a double Gram
       + double Cholesky;
     - logreg runs L-BFGS on the centred (and optionally scaled) problem;
       one pass over X computes the loss and the gradient together, and
       the line search along a direction costs no extra pass (the scores
       are linear in the step length);
     - all parallel loops write disjoint outputs; every reduction over
       samples runs over a fixed number of row blocks combined in block
       order, so results are bit-identical for any OpenMP thread count
       (builds for different instruction sets may differ in the last bits:
       the vector kernels use fused multiply-adds). Loops too small to pay
       for a parallel region (HPJ__PB_PAR flops) run on one thread.

   Task-specific resolution weighting (paper section 3.3): see
   hpj_resweight_fit for every choice the paper leaves open. */

/* Precision of the ridge solve. */
typedef enum hpj_probe_precision {
    HPJ_PROBE_MIXED = 0, /* float Gram/Cholesky + double refinement (default) */
    HPJ_PROBE_DOUBLE = 1 /* double Gram and double Cholesky (slower)          */
} hpj_probe_precision;

typedef struct hpj_probe_options {
    double alpha;    /* penalty as in ../DESIGN.md (>= 0); default 1.0           */
    int standardize; /* 1: z-score features with the training mean and
                        population std (std 0 -> 1) before fitting; default 0    */
    double tol;      /* logreg: stop when ||grad||_inf <= tol * max(1, ||grad_0||_inf),
                        grad_0 = the gradient at W = 0, b = 0, both of the
                        internal centred problem (so tol is relative to the
                        scale of the problem); default 1e-6                       */
    int max_iter;    /* logreg: L-BFGS iteration cap; default 1000                */
    int precision;   /* ridge: hpj_probe_precision; default HPJ_PROBE_MIXED       */
} hpj_probe_options;

/* Fills the defaults above. */
HPJDEF void hpj_probe_options_default(hpj_probe_options *o);

/* What both probes produce: scores = W x + b. */
typedef struct hpj_linear_model {
    int d, c;         /* features, outputs (classes or targets)                 */
    float *W;         /* (c, d) in the ORIGINAL feature space                   */
    float *b;         /* (c)                                                    */
    int iters;        /* L-BFGS iterations (logreg) or refinement steps (ridge) */
    double grad_norm; /* logreg: final ||grad||_inf of the internal problem;
                         ridge: largest relative residual of the solve          */
} hpj_linear_model;

/* Frees W and b and zeroes the struct (NULL or a zeroed model is fine). */
HPJDEF void hpj_linear_model_free(hpj_linear_model *m);

/* Ridge regression of targets Y (n, t) on X (n, d): minimises
   ||Y - X W^T - 1 b^T||^2 + alpha ||W||^2 with b unpenalised (X and Y are
   centred with their training means, b = mean(Y) - W mean(X)). Uses the
   primal d x d system when d <= n and the dual n x n system (W = X_c^T A,
   (X_c X_c^T + alpha I) A = Y_c) when d > n, as sklearn does. o may be NULL
   (defaults). At most 64 targets per call.
   Precision (o->precision): HPJ_PROBE_MIXED forms the Gram matrix and its
   Cholesky factor in float, then runs preconditioned conjugate gradients
   on the exact system (applied through X in double) until the residual is
   at the rounding level of a double solve (backward error eps ||A||_F^2
   with eps = 1e-15 sqrt(n + d)); if the float factor breaks down it is
   retried with a diagonal shift, and if refinement still cannot converge
   in 30 steps (condition numbers beyond ~1e7) the double path below takes
   over. HPJ_PROBE_DOUBLE (and alpha = 0) forms the Gram matrix and its
   factor in double. alpha = 0 fails with HPJ_ERR_NUMERIC when the system is
   singular to double precision (a pivot below 1e-14 of its diagonal).
   out->iters = refinement steps, out->grad_norm = worst relative residual
   ||r|| / ||rhs|| of the final solution. Memory: one m x m float (mixed)
   or double Gram matrix, m = min(n, d), plus O((n + d) t) doubles.
   Errors: HPJ_ERR_INPUT (NULL pointers, n, d or t < 1, t > 64, bad
   options), HPJ_ERR_NUMERIC (NaN/inf in X or Y, singular system),
   HPJ_ERR_NOMEM. On failure *out is zeroed. */
HPJDEF hpj_status hpj_ridge_fit(const float *X /*(n, d)*/, const float *Y /*(n, t)*/, int n, int d, int t,
                                const hpj_probe_options *o, hpj_linear_model *out);

/* Multinomial L2 logistic regression with C >= 2 classes (labels y in
   0..C-1): minimises sum_i -log softmax(W x_i + b)[y_i] + alpha/2 ||W||^2.
   For C == 2 it fits the equivalent binary model (one weight vector w,
   bias b0, penalty alpha/2 ||w||^2, as sklearn does) and returns it as
   the two rows W = [-w/2; w/2], b = [-b0/2; b0/2], so softmax(W x + b)
   gives the binary probabilities. L-BFGS (10 pairs, strong Wolfe line
   search) runs on the centred features (and scaled ones with standardize),
   which changes the parametrisation, not the optimum, until the gradient
   test of o->tol or o->max_iter iterations (out->iters says which; hitting
   the cap is not an error: check out->grad_norm). With alpha > 0 the
   optimum is finite, so separable data terminates. A class absent from y
   gets an intercept that drifts to -inf until the gradient test stops it.
   Errors: HPJ_ERR_INPUT (NULL pointers, n or d < 1, C < 2, a label outside
   0..C-1, bad options), HPJ_ERR_NUMERIC (NaN/inf in X, or the objective
   became non-finite), HPJ_ERR_NOMEM. On failure *out is zeroed. */
HPJDEF hpj_status hpj_logreg_fit(const float *X /*(n, d)*/, const int32_t *y /*(n)*/, int n, int d, int C,
                                 const hpj_probe_options *o, hpj_linear_model *out);

/* scores (n, m->c) = X W^T + b, summed in double. Parallel over rows. */
HPJDEF void hpj_linear_model_predict(const hpj_linear_model *m, const float *X /*(n, m->d)*/, int n,
                                     float *scores /*(n, m->c)*/);
/* Fraction of rows whose argmax score equals y (0 when n < 1). */
HPJDEF double hpj_linear_model_accuracy(const hpj_linear_model *m, const float *X /*(n, m->d)*/,
                                        const int32_t *y /*(n)*/, int n);
/* Index of the largest of s[0..c-1]; the first on ties; NaNs never win
   (0 if all are NaN or c < 1). */
HPJDEF int32_t hpj_argmax_row(const float *s /*(c)*/, int c);

/* Stratified k-fold assignment: fold[i] in 0..k-1. Each class's members are
   shuffled with a stream of the seed (hpj_rng_stream(seed, 0, class)) and
   dealt round-robin, continuing where the previous class stopped, so every
   fold holds floor or ceil of n_c/k members of class c and the fold sizes
   differ by at most one. Errors: HPJ_ERR_INPUT if y or fold is NULL, C < 1,
   k < 2, k > n, or a label is outside 0..C-1 (fold untouched then). */
HPJDEF hpj_status hpj_stratified_folds(const int32_t *y /*(n)*/, int n, int C, int k, uint64_t seed,
                                       int32_t *fold /*(n)*/);

/* ---- task-specific resolution weighting (paper section 3.3) ----
   H (n, L, D) holds per-resolution embeddings h^(l) of n graphs (zeros for
   inactive resolutions). The weights are
       omega = (1 - lambda) softmax(b) + lambda / L      over all L slots
   (no renormalisation over the active ones) and h_task = sum_l omega_l h^(l).

   How b is learned (the paper leaves this open; our choices):
     - only the n rows passed in are used (pass the training split). They
       are split into an inner training part and an inner validation part:
       classification: fold 0 of hpj_stratified_folds(y, n, C,
       min(5, n), seed') is the validation part (20 %, stratified);
       regression: a seeded random 20 % (at least one row each); seed' is
       a splitmix64 hash of seed, so the split differs from the outer
       folds drawn with the same seed.
     - b is learned JOINTLY with a linear head on the UNSMOOTHED mixture
       softmax(b), minimising the probe's own objective on the inner
       training rows: sum of losses + the probe penalty on the head
       weights (binary logistic for C == 2, softmax for C > 2: alpha/2
       ||W||^2; squared error for regression: alpha ||W||^2); b and the
       head's bias are unpenalised. Features are centred per resolution
       with inner-training means (and scaled by the std of the uniform
       mixture when o->standardize), so a mixture change never moves the
       intercept's job onto b.
     - optimiser: L-BFGS (10 pairs, backtracking Armijo line search) in
       two phases. Phase 0 fits the head alone on the uniform mixture
       (b = 0 frozen) to the o->tol gradient test, so that the joint phase
       starts from the uniform readout with its own fitted probe (a
       meaningful baseline rather than an untrained head). Phase 1 then
       optimises b and the head jointly for at most HPJ_RESWEIGHT_ITERS
       iterations ("epochs" of full-batch training), stopping earlier at
       the gradient test or when the validation loss has not improved for
       HPJ_RESWEIGHT_PATIENCE iterations.
     - checkpoint: at the start of phase 1 and after each of its
       iterations the mean validation loss (cross-entropy or squared
       error) of the current (b, head) is computed; the b with the lowest
       one wins (the earliest on ties), so b = 0 (uniform) is kept unless a
       learned mixture generalises better than the uniform one.
     - then the uniform smoothing is applied to softmax(b); the final probe
       (the caller's hpj_logreg_fit / hpj_ridge_fit on hpj_resweight_apply's
       h_task of the whole training split) is fitted afterwards.
     - lambda = 1 (or L = 1) returns exactly 1/L without training.
   C >= 2 with labels y (yreg unused) is classification; C == 0 with
   targets yreg (n) (y unused) is regression.
   Errors: HPJ_ERR_INPUT (NULL pointers, n < 2, L or D < 1, lambda outside
   [0, 1], C == 1 or C < 0, labels outside 0..C-1, bad options),
   HPJ_ERR_NUMERIC (NaN/inf in H or yreg), HPJ_ERR_NOMEM. On failure omega
   is untouched. */
#ifndef HPJ_RESWEIGHT_ITERS
#define HPJ_RESWEIGHT_ITERS 100   /* L-BFGS iterations at most          */
#endif
#ifndef HPJ_RESWEIGHT_PATIENCE
#define HPJ_RESWEIGHT_PATIENCE 20 /* stop after this many without a better validation loss */
#endif
typedef struct hpj_resweight_info {
    int n_train, n_val;   /* sizes of the inner split                             */
    int iters;            /* joint (phase 1) L-BFGS iterations run                */
    int best_iter;        /* joint iteration of the chosen checkpoint (0 = uniform) */
    double val_loss_best; /* mean validation loss at the checkpoint               */
    double val_loss_last; /* mean validation loss after the last iteration        */
} hpj_resweight_info;

HPJDEF hpj_status hpj_resweight_fit(const float *H /*(n, L, D)*/, int n, int L, int D, const int32_t *y /*(n)*/,
                                    const float *yreg /*(n)*/, int C, float lambda, uint64_t seed,
                                    const hpj_probe_options *o, float *omega /*(L)*/);
/* Same, also returning the chosen logits b (L) and the run's details;
   logits and info may be NULL. */
HPJDEF hpj_status hpj_resweight_fit_ex(const float *H /*(n, L, D)*/, int n, int L, int D, const int32_t *y /*(n)*/,
                                       const float *yreg /*(n)*/, int C, float lambda, uint64_t seed,
                                       const hpj_probe_options *o, float *omega /*(L)*/, float *logits /*(L)*/,
                                       hpj_resweight_info *info);
/* out (n, D) = sum_l omega_l H[:, l, :], summed in double in slot order. */
HPJDEF void hpj_resweight_apply(float *out /*(n, D)*/, const float *H /*(n, L, D)*/, const float *omega /*(L)*/,
                                int n, int L, int D);

#endif /* HPJ_WIP_PROBE_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_PROBE_IMPL
#define HPJ_WIP_PROBE_IMPL
/* ==== probe: implementation ==== */
/* Kernels: AVX-512 when the compiler targets it, else AVX2 + FMA, else
   portable C (correct everywhere, several times slower). */
#if defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HPJ__PB_AVX2 1
#endif

/* ==== probe: options, models, shared helpers ============================ */

/* Reductions over samples run over a fixed number of row blocks that
   depends on n only (never on the thread count), combined in block order. */
#define HPJ__PB_MAXBLK 32  /* most row blocks                                */
#define HPJ__PB_MINROWS 64 /* fewest rows per block (small n: fewer blocks)  */
#define HPJ__PB_RG 8       /* rows per group in the row passes                */
#define HPJ__PB_LBFGS_M 10 /* L-BFGS history pairs                            */
#define HPJ__PB_PAR 1e5    /* parallel regions only for loops of more flops   */

HPJDEF void hpj_probe_options_default(hpj_probe_options *o) {
    if (!o) return;
    o->alpha = 1.0;
    o->standardize = 0;
    o->tol = 1e-6;
    o->max_iter = 1000;
    o->precision = HPJ_PROBE_MIXED;
}

HPJDEF void hpj_linear_model_free(hpj_linear_model *m) {
    if (!m) return;
    hpj__free(m->W);
    hpj__free(m->b);
    memset(m, 0, sizeof(*m));
}

static hpj_status hpj__pb_check_options(const char *fn, const hpj_probe_options *o) {
    if (!(o->alpha >= 0.0) || !isfinite(o->alpha))
        return hpj__fail(HPJ_ERR_INPUT, "%s: alpha must be finite and >= 0 (got %g)", fn, o->alpha);
    if (!(o->tol > 0.0) || !isfinite(o->tol))
        return hpj__fail(HPJ_ERR_INPUT, "%s: tol must be finite and > 0 (got %g)", fn, o->tol);
    if (o->max_iter < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: max_iter must be >= 1 (got %d)", fn, o->max_iter);
    if (o->standardize != 0 && o->standardize != 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: standardize must be 0 or 1 (got %d)", fn, o->standardize);
    if (o->precision != HPJ_PROBE_MIXED && o->precision != HPJ_PROBE_DOUBLE)
        return hpj__fail(HPJ_ERR_INPUT, "%s: precision must be HPJ_PROBE_MIXED or HPJ_PROBE_DOUBLE (got %d)", fn,
                         o->precision);
    return HPJ_OK;
}

/* One allocation carved into `count` double buffers of sizes[i] doubles,
   each 64-byte aligned; *ptrs[i] receives buffer i. Returns the block to
   free, or NULL (reason recorded) on overflow or out of memory. */
static void *hpj__pb_carve(const char *fn, int count, const size_t *sizes, double ***ptrs) {
    size_t total = 64, b;
    unsigned char *mem, *q;
    int i;
    for (i = 0; i < count; ++i) {
        b = hpj_arena_need(sizes[i], sizeof(double));
        if ((sizes[i] && !b) || hpj__add_size(total, b, &total)) {
            hpj__fail(HPJ_ERR_NOMEM, "%s: workspace size overflows", fn);
            return NULL;
        }
    }
    mem = (unsigned char *)hpj__alloc(total, fn);
    if (!mem) return NULL;
    q = (unsigned char *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    for (i = 0; i < count; ++i) {
        *ptrs[i] = (double *)q;
        q += hpj_arena_need(sizes[i], sizeof(double));
    }
    return mem;
}

static int hpj__pb_nblk(int n) {
    int b = n / HPJ__PB_MINROWS;
    return b < 1 ? 1 : (b > HPJ__PB_MAXBLK ? HPJ__PB_MAXBLK : b);
}
/* First row of block b of nb over n rows. */
static int hpj__pb_lo(int n, int nb, int b) { return (int)(((int64_t)n * b) / nb); }

/* Reports the first non-finite entry of A (n, d) as HPJ_ERR_NUMERIC. */
static hpj_status hpj__pb_bad_value(const char *fn, const char *what, const float *A, int n, int d) {
    size_t i, j;
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < (size_t)d; ++j) {
            float v = A[i * (size_t)d + j];
            if (!isfinite(v))
                return hpj__fail(HPJ_ERR_NUMERIC, "%s: %s[%zu,%zu] is %s", fn, what, i, j, v != v ? "nan" : "inf");
        }
    return hpj__fail(HPJ_ERR_NUMERIC, "%s: the entries of %s overflow when summed", fn, what);
}

/* ---- vector kernels ----
   Every sum over an index j runs in 8 interleaved lanes (lane q takes the
   j = q mod 8 terms, a short tail goes to the first lanes) combined as
   ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)): one fixed order for any thread
   count. The AVX-512 versions keep exactly that lane structure (they use
   fused multiply-adds, so their last bits may differ from the portable
   ones, which compilers may or may not contract). */
#if defined(__AVX512F__)
static double hpj__pb_hsum(__m512d s) {
    /* masked extracts: the unmasked ones trip GCC 12's -Wuninitialized */
    __m256d a = _mm256_add_pd(_mm512_maskz_extractf64x4_pd((__mmask8)0xF, s, 0),
                              _mm512_maskz_extractf64x4_pd((__mmask8)0xF, s, 1));
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b));
}
static __mmask8 hpj__pb_tail(int r) { return (__mmask8)((1u << r) - 1u); }

static double hpj__pb_dot(const double *a, const double *b, int len) {
    __m512d s = _mm512_setzero_pd();
    int j = 0;
    for (; j + 8 <= len; j += 8) s = _mm512_fmadd_pd(_mm512_loadu_pd(a + j), _mm512_loadu_pd(b + j), s);
    if (j < len) {
        __mmask8 m = hpj__pb_tail(len - j);
        s = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(m, a + j), _mm512_maskz_loadu_pd(m, b + j), s);
    }
    return hpj__pb_hsum(s);
}
static __m512d hpj__pb_ldf(const float *a) { return _mm512_maskz_cvtps_pd((__mmask8)0xFF, _mm256_loadu_ps(a)); }
static __m512d hpj__pb_ldf_tail(const float *a, int r) { /* a[0..r-1], zeros after */
    float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(t, a, sizeof(float) * (size_t)r);
    return hpj__pb_ldf(t);
}

static double hpj__pb_dotf(const float *a, const double *b, int len) {
    __m512d s = _mm512_setzero_pd();
    int j = 0;
    for (; j + 8 <= len; j += 8) s = _mm512_fmadd_pd(hpj__pb_ldf(a + j), _mm512_loadu_pd(b + j), s);
    if (j < len) {
        __mmask8 m = hpj__pb_tail(len - j);
        s = _mm512_fmadd_pd(hpj__pb_ldf_tail(a + j, len - j), _mm512_maskz_loadu_pd(m, b + j), s);
    }
    return hpj__pb_hsum(s);
}
static double hpj__pb_dotff(const float *a, const float *b, int len) {
    __m512d s = _mm512_setzero_pd();
    int j = 0;
    for (; j + 8 <= len; j += 8) s = _mm512_fmadd_pd(hpj__pb_ldf(a + j), hpj__pb_ldf(b + j), s);
    if (j < len) {
        s = _mm512_fmadd_pd(hpj__pb_ldf_tail(a + j, len - j), hpj__pb_ldf_tail(b + j, len - j), s);
    }
    return hpj__pb_hsum(s);
}
/* z0[r] (and z1[r]) = x_r . v0 (v1) over the whole row length d, for the 8
   float rows x_r, in hpj__pb_dot's lane order; v1 == NULL: one vector. */
static void hpj__pb_dot8x2(const float *const *x, const double *v0, const double *v1, int d, double *z0, double *z1) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    __m512d b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
    int j = 0;
#define HPJ__PB_D2(r)                                         \
    {                                                         \
        const __m512d xx = hpj__pb_ldf(x[r] + j);             \
        a##r = _mm512_fmadd_pd(xx, w0, a##r);                 \
        if (v1) b##r = _mm512_fmadd_pd(xx, w1, b##r);         \
    }
#define HPJ__PB_D2T(r)                                        \
    {                                                         \
        const __m512d xx = hpj__pb_ldf_tail(x[r] + j, d - j); \
        a##r = _mm512_fmadd_pd(xx, w0, a##r);                 \
        if (v1) b##r = _mm512_fmadd_pd(xx, w1, b##r);         \
    }
    for (; j + 8 <= d; j += 8) {
        const __m512d w0 = _mm512_loadu_pd(v0 + j), w1 = v1 ? _mm512_loadu_pd(v1 + j) : w0;
        HPJ__PB_D2(0) HPJ__PB_D2(1) HPJ__PB_D2(2) HPJ__PB_D2(3) HPJ__PB_D2(4) HPJ__PB_D2(5) HPJ__PB_D2(6) HPJ__PB_D2(7)
    }
    if (j < d) {
        const __mmask8 m = hpj__pb_tail(d - j);
        const __m512d w0 = _mm512_maskz_loadu_pd(m, v0 + j), w1 = v1 ? _mm512_maskz_loadu_pd(m, v1 + j) : w0;
        HPJ__PB_D2T(0) HPJ__PB_D2T(1) HPJ__PB_D2T(2) HPJ__PB_D2T(3)
        HPJ__PB_D2T(4) HPJ__PB_D2T(5) HPJ__PB_D2T(6) HPJ__PB_D2T(7)
    }
#undef HPJ__PB_D2
#undef HPJ__PB_D2T
    z0[0] = hpj__pb_hsum(a0), z0[1] = hpj__pb_hsum(a1), z0[2] = hpj__pb_hsum(a2), z0[3] = hpj__pb_hsum(a3);
    z0[4] = hpj__pb_hsum(a4), z0[5] = hpj__pb_hsum(a5), z0[6] = hpj__pb_hsum(a6), z0[7] = hpj__pb_hsum(a7);
    if (v1) {
        z1[0] = hpj__pb_hsum(b0), z1[1] = hpj__pb_hsum(b1), z1[2] = hpj__pb_hsum(b2), z1[3] = hpj__pb_hsum(b3);
        z1[4] = hpj__pb_hsum(b4), z1[5] = hpj__pb_hsum(b5), z1[6] = hpj__pb_hsum(b6), z1[7] = hpj__pb_hsum(b7);
    }
}
/* g0[j] += ((r0[0] x_0[j] + r0[1] x_1[j]) + (r0[2] x_2[j] + r0[3] x_3[j]))
          + ((r0[4] x_4[j] + r0[5] x_5[j]) + (r0[6] x_6[j] + r0[7] x_7[j])),
   and the same for g1 with r1 unless g1 == NULL. */
static void hpj__pb_axpy8x2(const float *const *x, const double *r0, const double *r1, double *g0, double *g1, int d) {
    const __m512d p0 = _mm512_set1_pd(r0[0]), p1 = _mm512_set1_pd(r0[1]), p2 = _mm512_set1_pd(r0[2]),
                  p3 = _mm512_set1_pd(r0[3]), p4 = _mm512_set1_pd(r0[4]), p5 = _mm512_set1_pd(r0[5]),
                  p6 = _mm512_set1_pd(r0[6]), p7 = _mm512_set1_pd(r0[7]);
    const double *rq = g1 ? r1 : r0;
    const __m512d q0 = _mm512_set1_pd(rq[0]), q1 = _mm512_set1_pd(rq[1]), q2 = _mm512_set1_pd(rq[2]),
                  q3 = _mm512_set1_pd(rq[3]), q4 = _mm512_set1_pd(rq[4]), q5 = _mm512_set1_pd(rq[5]),
                  q6 = _mm512_set1_pd(rq[6]), q7 = _mm512_set1_pd(rq[7]);
    int j = 0, r;
    for (; j + 8 <= d; j += 8) {
        const __m512d x0 = hpj__pb_ldf(x[0] + j), x1 = hpj__pb_ldf(x[1] + j), x2 = hpj__pb_ldf(x[2] + j),
                      x3 = hpj__pb_ldf(x[3] + j), x4 = hpj__pb_ldf(x[4] + j), x5 = hpj__pb_ldf(x[5] + j),
                      x6 = hpj__pb_ldf(x[6] + j), x7 = hpj__pb_ldf(x[7] + j);
        __m512d u = _mm512_add_pd(_mm512_add_pd(_mm512_fmadd_pd(p1, x1, _mm512_mul_pd(p0, x0)),
                                                _mm512_fmadd_pd(p3, x3, _mm512_mul_pd(p2, x2))),
                                  _mm512_add_pd(_mm512_fmadd_pd(p5, x5, _mm512_mul_pd(p4, x4)),
                                                _mm512_fmadd_pd(p7, x7, _mm512_mul_pd(p6, x6))));
        _mm512_storeu_pd(g0 + j, _mm512_add_pd(_mm512_loadu_pd(g0 + j), u));
        if (g1) {
            u = _mm512_add_pd(_mm512_add_pd(_mm512_fmadd_pd(q1, x1, _mm512_mul_pd(q0, x0)),
                                            _mm512_fmadd_pd(q3, x3, _mm512_mul_pd(q2, x2))),
                              _mm512_add_pd(_mm512_fmadd_pd(q5, x5, _mm512_mul_pd(q4, x4)),
                                            _mm512_fmadd_pd(q7, x7, _mm512_mul_pd(q6, x6))));
            _mm512_storeu_pd(g1 + j, _mm512_add_pd(_mm512_loadu_pd(g1 + j), u));
        }
    }
    for (; j < d; ++j) {
        double v[8];
        for (r = 0; r < 8; ++r) v[r] = (double)x[r][j];
        g0[j] += ((r0[0] * v[0] + r0[1] * v[1]) + (r0[2] * v[2] + r0[3] * v[3])) +
                 ((r0[4] * v[4] + r0[5] * v[5]) + (r0[6] * v[6] + r0[7] * v[7]));
        if (g1)
            g1[j] += ((r1[0] * v[0] + r1[1] * v[1]) + (r1[2] * v[2] + r1[3] * v[3])) +
                     ((r1[4] * v[4] + r1[5] * v[5]) + (r1[6] * v[6] + r1[7] * v[7]));
    }
}
/* y[j] += alpha a[j] */
static void hpj__pb_axpyf(double *y, const float *a, double alpha, int len) {
    const __m512d al = _mm512_set1_pd(alpha);
    int j = 0;
    for (; j + 8 <= len; j += 8)
        _mm512_storeu_pd(y + j, _mm512_fmadd_pd(al, hpj__pb_ldf(a + j), _mm512_loadu_pd(y + j)));
    for (; j < len; ++j) y[j] += alpha * (double)a[j];
}
/* p[j] += x[j] (mu == NULL) or p[j] += (x[j] - mu[j])^2 */
static void hpj__pb_accf(double *p, const float *x, const double *mu, int len) {
    int j = 0;
    if (!mu) {
        for (; j + 8 <= len; j += 8) _mm512_storeu_pd(p + j, _mm512_add_pd(_mm512_loadu_pd(p + j), hpj__pb_ldf(x + j)));
        for (; j < len; ++j) p[j] += (double)x[j];
    } else {
        for (; j + 8 <= len; j += 8) {
            __m512d e = _mm512_sub_pd(hpj__pb_ldf(x + j), _mm512_loadu_pd(mu + j));
            _mm512_storeu_pd(p + j, _mm512_fmadd_pd(e, e, _mm512_loadu_pd(p + j)));
        }
        for (; j < len; ++j) {
            double e = (double)x[j] - mu[j];
            p[j] += e * e;
        }
    }
}
#elif defined(HPJ__PB_AVX2)
/* AVX2 + FMA: the 8 lanes live in two 4-double registers (lo = lanes 0-3,
   hi = lanes 4-7); same lane order and final combination as above. */
static double hpj__pb_hsum2(__m256d lo, __m256d hi) {
    __m256d a = _mm256_add_pd(lo, hi); /* (l0+l4, l1+l5, l2+l6, l3+l7) */
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b));
}
static __m256d hpj__pb_ldf4(const float *a) { return _mm256_cvtps_pd(_mm_loadu_ps(a)); }
/* the tail a[0..r-1] of a row in 8 zero-padded doubles, or floats */
static void hpj__pb_tail8(const double *a, int r, double *t) {
    int q;
    for (q = 0; q < 8; ++q) t[q] = q < r ? a[q] : 0.0;
}
static void hpj__pb_tail8f(const float *a, int r, float *t) {
    int q;
    for (q = 0; q < 8; ++q) t[q] = q < r ? a[q] : 0.0f;
}

static double hpj__pb_dot(const double *a, const double *b, int len) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    int j = 0;
    for (; j + 8 <= len; j += 8) {
        lo = _mm256_fmadd_pd(_mm256_loadu_pd(a + j), _mm256_loadu_pd(b + j), lo);
        hi = _mm256_fmadd_pd(_mm256_loadu_pd(a + j + 4), _mm256_loadu_pd(b + j + 4), hi);
    }
    if (j < len) {
        double ta[8], tb[8];
        hpj__pb_tail8(a + j, len - j, ta);
        hpj__pb_tail8(b + j, len - j, tb);
        lo = _mm256_fmadd_pd(_mm256_loadu_pd(ta), _mm256_loadu_pd(tb), lo);
        hi = _mm256_fmadd_pd(_mm256_loadu_pd(ta + 4), _mm256_loadu_pd(tb + 4), hi);
    }
    return hpj__pb_hsum2(lo, hi);
}
static double hpj__pb_dotf(const float *a, const double *b, int len) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    int j = 0;
    for (; j + 8 <= len; j += 8) {
        lo = _mm256_fmadd_pd(hpj__pb_ldf4(a + j), _mm256_loadu_pd(b + j), lo);
        hi = _mm256_fmadd_pd(hpj__pb_ldf4(a + j + 4), _mm256_loadu_pd(b + j + 4), hi);
    }
    if (j < len) {
        float ta[8];
        double tb[8];
        hpj__pb_tail8f(a + j, len - j, ta);
        hpj__pb_tail8(b + j, len - j, tb);
        lo = _mm256_fmadd_pd(hpj__pb_ldf4(ta), _mm256_loadu_pd(tb), lo);
        hi = _mm256_fmadd_pd(hpj__pb_ldf4(ta + 4), _mm256_loadu_pd(tb + 4), hi);
    }
    return hpj__pb_hsum2(lo, hi);
}
static double hpj__pb_dotff(const float *a, const float *b, int len) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    int j = 0;
    for (; j + 8 <= len; j += 8) {
        lo = _mm256_fmadd_pd(hpj__pb_ldf4(a + j), hpj__pb_ldf4(b + j), lo);
        hi = _mm256_fmadd_pd(hpj__pb_ldf4(a + j + 4), hpj__pb_ldf4(b + j + 4), hi);
    }
    if (j < len) {
        float ta[8], tb[8];
        hpj__pb_tail8f(a + j, len - j, ta);
        hpj__pb_tail8f(b + j, len - j, tb);
        lo = _mm256_fmadd_pd(hpj__pb_ldf4(ta), hpj__pb_ldf4(tb), lo);
        hi = _mm256_fmadd_pd(hpj__pb_ldf4(ta + 4), hpj__pb_ldf4(tb + 4), hi);
    }
    return hpj__pb_hsum2(lo, hi);
}
/* As the AVX-512 version, four rows at a time (16 registers). */
static void hpj__pb_dot8x2(const float *const *x, const double *v0, const double *v1, int d, double *z0, double *z1) {
    int half, k;
    for (k = 0; k < (v1 ? 2 : 1); ++k) {
        const double *v = k ? v1 : v0;
        double *z = k ? z1 : z0;
        for (half = 0; half < 2; ++half) {
            const float *const *xr = x + 4 * half;
            __m256d l0 = _mm256_setzero_pd(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
            int j = 0;
            for (; j + 8 <= d; j += 8) {
                const __m256d wl = _mm256_loadu_pd(v + j), wh = _mm256_loadu_pd(v + j + 4);
                l0 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[0] + j), wl, l0);
                h0 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[0] + j + 4), wh, h0);
                l1 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[1] + j), wl, l1);
                h1 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[1] + j + 4), wh, h1);
                l2 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[2] + j), wl, l2);
                h2 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[2] + j + 4), wh, h2);
                l3 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[3] + j), wl, l3);
                h3 = _mm256_fmadd_pd(hpj__pb_ldf4(xr[3] + j + 4), wh, h3);
            }
            if (j < d) { /* the tail goes to the first lanes, zero padded */
                double tv[8];
                float t0[8], t1[8], t2[8], t3[8];
                __m256d wl, wh;
                hpj__pb_tail8(v + j, d - j, tv);
                hpj__pb_tail8f(xr[0] + j, d - j, t0);
                hpj__pb_tail8f(xr[1] + j, d - j, t1);
                hpj__pb_tail8f(xr[2] + j, d - j, t2);
                hpj__pb_tail8f(xr[3] + j, d - j, t3);
                wl = _mm256_loadu_pd(tv);
                wh = _mm256_loadu_pd(tv + 4);
                l0 = _mm256_fmadd_pd(hpj__pb_ldf4(t0), wl, l0);
                h0 = _mm256_fmadd_pd(hpj__pb_ldf4(t0 + 4), wh, h0);
                l1 = _mm256_fmadd_pd(hpj__pb_ldf4(t1), wl, l1);
                h1 = _mm256_fmadd_pd(hpj__pb_ldf4(t1 + 4), wh, h1);
                l2 = _mm256_fmadd_pd(hpj__pb_ldf4(t2), wl, l2);
                h2 = _mm256_fmadd_pd(hpj__pb_ldf4(t2 + 4), wh, h2);
                l3 = _mm256_fmadd_pd(hpj__pb_ldf4(t3), wl, l3);
                h3 = _mm256_fmadd_pd(hpj__pb_ldf4(t3 + 4), wh, h3);
            }
            z[4 * half] = hpj__pb_hsum2(l0, h0);
            z[4 * half + 1] = hpj__pb_hsum2(l1, h1);
            z[4 * half + 2] = hpj__pb_hsum2(l2, h2);
            z[4 * half + 3] = hpj__pb_hsum2(l3, h3);
        }
    }
}
static void hpj__pb_axpy8x2(const float *const *x, const double *r0, const double *r1, double *g0, double *g1, int d) {
    int j = 0, r, k;
    for (k = 0; k < (g1 ? 2 : 1); ++k) {
        const double *rr = k ? r1 : r0;
        double *g = k ? g1 : g0;
        const __m256d p0 = _mm256_set1_pd(rr[0]), p1 = _mm256_set1_pd(rr[1]), p2 = _mm256_set1_pd(rr[2]),
                      p3 = _mm256_set1_pd(rr[3]), p4 = _mm256_set1_pd(rr[4]), p5 = _mm256_set1_pd(rr[5]),
                      p6 = _mm256_set1_pd(rr[6]), p7 = _mm256_set1_pd(rr[7]);
        for (j = 0; j + 4 <= d; j += 4) {
            __m256d u = _mm256_add_pd(
                _mm256_add_pd(_mm256_fmadd_pd(p1, hpj__pb_ldf4(x[1] + j), _mm256_mul_pd(p0, hpj__pb_ldf4(x[0] + j))),
                              _mm256_fmadd_pd(p3, hpj__pb_ldf4(x[3] + j), _mm256_mul_pd(p2, hpj__pb_ldf4(x[2] + j)))),
                _mm256_add_pd(_mm256_fmadd_pd(p5, hpj__pb_ldf4(x[5] + j), _mm256_mul_pd(p4, hpj__pb_ldf4(x[4] + j))),
                              _mm256_fmadd_pd(p7, hpj__pb_ldf4(x[7] + j), _mm256_mul_pd(p6, hpj__pb_ldf4(x[6] + j)))));
            _mm256_storeu_pd(g + j, _mm256_add_pd(_mm256_loadu_pd(g + j), u));
        }
        for (; j < d; ++j) {
            double v[8];
            for (r = 0; r < 8; ++r) v[r] = (double)x[r][j];
            g[j] += ((rr[0] * v[0] + rr[1] * v[1]) + (rr[2] * v[2] + rr[3] * v[3])) +
                    ((rr[4] * v[4] + rr[5] * v[5]) + (rr[6] * v[6] + rr[7] * v[7]));
        }
    }
}
static void hpj__pb_axpyf(double *y, const float *a, double alpha, int len) {
    const __m256d al = _mm256_set1_pd(alpha);
    int j = 0;
    for (; j + 4 <= len; j += 4)
        _mm256_storeu_pd(y + j, _mm256_fmadd_pd(al, hpj__pb_ldf4(a + j), _mm256_loadu_pd(y + j)));
    for (; j < len; ++j) y[j] += alpha * (double)a[j];
}
static void hpj__pb_accf(double *p, const float *x, const double *mu, int len) {
    int j = 0;
    if (!mu) {
        for (; j + 4 <= len; j += 4) _mm256_storeu_pd(p + j, _mm256_add_pd(_mm256_loadu_pd(p + j), hpj__pb_ldf4(x + j)));
        for (; j < len; ++j) p[j] += (double)x[j];
    } else {
        for (; j + 4 <= len; j += 4) {
            __m256d e = _mm256_sub_pd(hpj__pb_ldf4(x + j), _mm256_loadu_pd(mu + j));
            _mm256_storeu_pd(p + j, _mm256_fmadd_pd(e, e, _mm256_loadu_pd(p + j)));
        }
        for (; j < len; ++j) {
            double e = (double)x[j] - mu[j];
            p[j] += e * e;
        }
    }
}
#else
static double hpj__pb_dot(const double *a, const double *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += a[j + q] * b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += a[j] * b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
static double hpj__pb_dotf(const float *a, const double *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += (double)a[j + q] * b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += (double)a[j] * b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
static double hpj__pb_dotff(const float *a, const float *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += (double)a[j + q] * (double)b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += (double)a[j] * (double)b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
static void hpj__pb_dot8x2(const float *const *x, const double *v0, const double *v1, int d, double *z0, double *z1) {
    double a[8][8], b[8][8];
    int j, q, r;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (j = 0; j < d; j += 8)
        for (r = 0; r < 8; ++r)
            for (q = 0; q < 8 && j + q < d; ++q) {
                const double xx = (double)x[r][j + q];
                a[r][q] += xx * v0[j + q];
                if (v1) b[r][q] += xx * v1[j + q];
            }
    for (r = 0; r < 8; ++r) {
        z0[r] = ((a[r][0] + a[r][4]) + (a[r][2] + a[r][6])) + ((a[r][1] + a[r][5]) + (a[r][3] + a[r][7]));
        if (v1) z1[r] = ((b[r][0] + b[r][4]) + (b[r][2] + b[r][6])) + ((b[r][1] + b[r][5]) + (b[r][3] + b[r][7]));
    }
}
static void hpj__pb_axpy8x2(const float *const *x, const double *r0, const double *r1, double *g0, double *g1, int d) {
    int j, r;
    for (j = 0; j < d; ++j) {
        double v[8];
        for (r = 0; r < 8; ++r) v[r] = (double)x[r][j];
        g0[j] += ((r0[0] * v[0] + r0[1] * v[1]) + (r0[2] * v[2] + r0[3] * v[3])) +
                 ((r0[4] * v[4] + r0[5] * v[5]) + (r0[6] * v[6] + r0[7] * v[7]));
        if (g1)
            g1[j] += ((r1[0] * v[0] + r1[1] * v[1]) + (r1[2] * v[2] + r1[3] * v[3])) +
                     ((r1[4] * v[4] + r1[5] * v[5]) + (r1[6] * v[6] + r1[7] * v[7]));
    }
}
static void hpj__pb_axpyf(double *y, const float *a, double alpha, int len) {
    int j;
    for (j = 0; j < len; ++j) y[j] += alpha * (double)a[j];
}
static void hpj__pb_accf(double *p, const float *x, const double *mu, int len) {
    int j;
    if (!mu)
        for (j = 0; j < len; ++j) p[j] += (double)x[j];
    else
        for (j = 0; j < len; ++j) {
            double e = (double)x[j] - mu[j];
            p[j] += e * e;
        }
}
#endif

/* ---- row passes over float features ----
   One pass visits the rows of X in HPJ__PB_RG-row groups inside fixed row
   blocks. Per row i it can (1) score: z_i = V x_i + c (K values, double);
   (2) turn scores into residuals r_i (a callback, or r = z, or given R);
   (3) accumulate G_blk += r_i x_i^T and gs_blk += r_i. Float elements are
   widened to double in registers; classes go in pairs so that each loaded
   element serves two weight rows. Every score is a full-length 8-lane dot
   (hpj__pb_dot's order); each gradient entry sums its rows in a fixed
   tree per group, groups in row order, blocks in block order. */
typedef void (*hpj__pb_rowfn)(void *ctx, int blk, int i, int nr, const double *z /*(nr, K)*/,
                              double *r /*(nr, K)*/);

typedef struct hpj__pb_pass {
    const float *X;   /* (n, d)                                                  */
    int n, d, K, nb;  /* nb = hpj__pb_nblk(n)                                     */
    const double *V;  /* (K, d) or NULL: no scoring                               */
    const double *c;  /* (K) or NULL                                              */
    double *Z;        /* (n, K) scores out, or NULL                               */
    const double *R;  /* (n, K) residuals when V == NULL                          */
    hpj__pb_rowfn fn; /* NULL: r = z                                              */
    void *ctx;
    double *G;        /* (nb, K, d) block sums of r_i x_i^T, or NULL              */
    double *gs;       /* (nb, K) block sums of r_i (with G)                       */
    double *work;     /* (nb, hpj__pb_pass_work(K))                               */
} hpj__pb_pass;

static size_t hpj__pb_pass_work(int K) { return (size_t)2 * HPJ__PB_RG * (size_t)K + 2 * HPJ__PB_RG; }

static void hpj__pb_pass_block(const hpj__pb_pass *P, int blk) {
    const int K = P->K, d = P->d;
    const int i0 = hpj__pb_lo(P->n, P->nb, blk), i1 = hpj__pb_lo(P->n, P->nb, blk + 1);
    double *z = P->work + (size_t)blk * hpj__pb_pass_work(K); /* (RG, K) */
    double *r = z + (size_t)HPJ__PB_RG * K;                    /* (RG, K) */
    double *t0 = r + (size_t)HPJ__PB_RG * K, *t1 = t0 + HPJ__PB_RG; /* (RG) each */
    double *G = P->G ? P->G + (size_t)blk * K * d : NULL;
    double *gs = P->G ? P->gs + (size_t)blk * K : NULL;
    int i, k, rr;
    if (G) {
        memset(G, 0, sizeof(double) * (size_t)K * d);
        memset(gs, 0, sizeof(double) * (size_t)K);
    }
    for (i = i0; i < i1; i += HPJ__PB_RG) {
        const int nr = HPJ__MIN(HPJ__PB_RG, i1 - i);
        const float *xr[HPJ__PB_RG]; /* short groups repeat their last row */
        for (rr = 0; rr < HPJ__PB_RG; ++rr) xr[rr] = P->X + (size_t)(i + HPJ__MIN(rr, nr - 1)) * d;
        if (P->V) {
            for (k = 0; k < K; k += 2) { /* classes in pairs: each row chunk is converted once per pair */
                const int two = k + 1 < K;
                hpj__pb_dot8x2(xr, P->V + (size_t)k * d, two ? P->V + (size_t)(k + 1) * d : NULL, d, t0, t1);
                for (rr = 0; rr < nr; ++rr) {
                    z[rr * K + k] = t0[rr] + (P->c ? P->c[k] : 0.0);
                    if (two) z[rr * K + k + 1] = t1[rr] + (P->c ? P->c[k + 1] : 0.0);
                }
            }
            if (P->Z) memcpy(P->Z + (size_t)i * K, z, sizeof(double) * (size_t)nr * K);
            if (P->fn) P->fn(P->ctx, blk, i, nr, z, r);
            else memcpy(r, z, sizeof(double) * (size_t)nr * K);
        } else {
            memcpy(r, P->R + (size_t)i * K, sizeof(double) * (size_t)nr * K);
        }
        if (!G) continue;
        for (rr = nr * K; rr < HPJ__PB_RG * K; ++rr) r[rr] = 0.0; /* repeated rows add exact zeros */
        for (rr = 0; rr < nr; ++rr)
            for (k = 0; k < K; ++k) gs[k] += r[rr * K + k];
        for (k = 0; k < K; k += 2) {
            const int two = k + 1 < K;
            for (rr = 0; rr < HPJ__PB_RG; ++rr) {
                t0[rr] = r[rr * K + k];
                t1[rr] = two ? r[rr * K + k + 1] : 0.0;
            }
            hpj__pb_axpy8x2(xr, t0, t1, G + (size_t)k * d, two ? G + (size_t)(k + 1) * d : NULL, d);
        }
    }
}

static void hpj__pb_run(const hpj__pb_pass *P) {
    int b;
    HPJ__OMP(parallel for schedule(dynamic, 1) if (P->nb > 1 && (double)P->n * P->d * P->K > HPJ__PB_PAR))
    for (b = 0; b < P->nb; ++b) hpj__pb_pass_block(P, b);
}

/* out[idx] = sum over blocks b (in order) of part[b * len + idx]. */
static void hpj__pb_reduce(const double *part, int nb, size_t len, double *out) {
    int64_t c, nch = (int64_t)((len + 1023) / 1024);
    HPJ__OMP(parallel for schedule(static) if ((double)len * nb > HPJ__PB_PAR))
    for (c = 0; c < nch; ++c) {
        size_t i, lo = (size_t)c * 1024, hi = HPJ__MIN(len, lo + 1024);
        int b;
        for (i = lo; i < hi; ++i) {
            double s = part[i];
            for (b = 1; b < nb; ++b) s += part[(size_t)b * len + i];
            out[i] = s;
        }
    }
}

/* Column means mu (d) and, when s != NULL, inverse population stds s (d)
   (1 for constant columns). part: (nb, d). Returns 1 if a sum is not
   finite (a NaN/inf entry or overflow). */
static int hpj__pb_colstats(const float *X, int n, int d, double *mu, double *s, double *part) {
    const int nb = hpj__pb_nblk(n);
    int b, pass;
    size_t j;
    for (pass = 0; pass < (s ? 2 : 1); ++pass) {
        HPJ__OMP(parallel for schedule(dynamic, 1) if (nb > 1 && (double)n * d > HPJ__PB_PAR))
        for (b = 0; b < nb; ++b) {
            double *p = part + (size_t)b * d;
            int i, i1 = hpj__pb_lo(n, nb, b + 1);
            memset(p, 0, sizeof(double) * (size_t)d);
            for (i = hpj__pb_lo(n, nb, b); i < i1; ++i) {
                const float *x = X + (size_t)i * d;
                hpj__pb_accf(p, x, pass == 0 ? NULL : mu, d);
            }
        }
        hpj__pb_reduce(part, nb, (size_t)d, pass == 0 ? mu : s);
        for (j = 0; j < (size_t)d; ++j) {
            if (pass == 0) {
                if (!isfinite(mu[j])) return 1;
                mu[j] /= (double)n;
            } else {
                double sd = sqrt(s[j] / (double)n);
                if (!isfinite(sd)) return 1;
                s[j] = (sd > 1e-12 * (1.0 + fabs(mu[j]))) ? 1.0 / sd : 1.0;
            }
        }
    }
    return 0;
}

/* ---- L-BFGS two-loop recursion ---- */
typedef struct hpj__pb_lbfgs {
    int P, m, cnt, head; /* dimension, capacity, stored pairs, next slot */
    double *S, *Y;       /* (m, P) */
    double rho[HPJ__PB_LBFGS_M], al[HPJ__PB_LBFGS_M];
} hpj__pb_lbfgs;

static double hpj__pb_dotn(const double *a, const double *b, size_t n) {
    /* long serial dot in the fixed 8-lane order, chunked to stay in int */
    double s = 0.0;
    size_t off = 0;
    while (off < n) {
        int len = (int)HPJ__MIN(n - off, (size_t)1 << 20);
        s += hpj__pb_dot(a + off, b + off, len);
        off += (size_t)len;
    }
    return s;
}

/* p = -H g; with no pairs stored p = -g. */
static void hpj__pb_lbfgs_dir(hpj__pb_lbfgs *h, const double *g, double *p) {
    size_t P = (size_t)h->P, j;
    int q, idx;
    for (j = 0; j < P; ++j) p[j] = -g[j];
    if (h->cnt == 0) return;
    for (q = 0; q < h->cnt; ++q) { /* newest to oldest */
        idx = (h->head - 1 - q + 2 * h->m) % h->m;
        h->al[idx] = h->rho[idx] * hpj__pb_dotn(h->S + idx * P, p, P);
        for (j = 0; j < P; ++j) p[j] -= h->al[idx] * h->Y[idx * P + j];
    }
    idx = (h->head - 1 + h->m) % h->m;
    {
        double yy = hpj__pb_dotn(h->Y + idx * P, h->Y + idx * P, P);
        double gamma = yy > 0 ? 1.0 / (h->rho[idx] * yy) : 1.0;
        for (j = 0; j < P; ++j) p[j] *= gamma;
    }
    for (q = h->cnt - 1; q >= 0; --q) { /* oldest to newest */
        double beta;
        idx = (h->head - 1 - q + 2 * h->m) % h->m;
        beta = h->rho[idx] * hpj__pb_dotn(h->Y + idx * P, p, P);
        for (j = 0; j < P; ++j) p[j] += (h->al[idx] - beta) * h->S[idx * P + j];
    }
}

/* Stores the pair (s, y) = (x_new - x_old, g_new - g_old) when the
   curvature s.y is safely positive; returns 0 if the pair was skipped. */
static int hpj__pb_lbfgs_push(hpj__pb_lbfgs *h, const double *xn, const double *xo, const double *gn,
                              const double *go) {
    size_t P = (size_t)h->P, j;
    double *s = h->S + (size_t)h->head * P, *y = h->Y + (size_t)h->head * P, sy, ss, yy;
    for (j = 0; j < P; ++j) {
        s[j] = xn[j] - xo[j];
        y[j] = gn[j] - go[j];
    }
    sy = hpj__pb_dotn(s, y, P);
    ss = hpj__pb_dotn(s, s, P);
    yy = hpj__pb_dotn(y, y, P);
    if (!(sy > 1e-12 * sqrt(ss * yy)) || !isfinite(sy)) return 0;
    h->rho[h->head] = 1.0 / sy;
    h->head = (h->head + 1) % h->m;
    if (h->cnt < h->m) ++h->cnt;
    return 1;
}

static double hpj__pb_maxabs(const double *a, size_t n) {
    double m = 0.0;
    size_t j;
    for (j = 0; j < n; ++j) m = HPJ__MAX(m, fabs(a[j]));
    return m;
}

/* ---- losses of one row: value, and residual r = dloss/dz ----
   binary: z (1), y in {0,1}: log(1 + e^z) - y z; r = sigmoid(z) - y
   softmax: z (K), y in 0..K-1: logsumexp(z) - z_y; r = softmax(z) - e_y
   squared: z (K), targets t (K): sum (z - t)^2; r = 2 (z - t) */
enum { HPJ__PB_BINARY = 0, HPJ__PB_SOFTMAX = 1, HPJ__PB_SQUARED = 2 };

static double hpj__pb_loss_row(int kind, int K, const double *z, int32_t y, const double *t, double *r) {
    int k;
    if (kind == HPJ__PB_BINARY) {
        double zz = z[0], e, sp, p;
        if (zz > 0) {
            e = exp(-zz);
            sp = zz + log1p(e);
            p = 1.0 / (1.0 + e);
        } else {
            e = exp(zz);
            sp = log1p(e);
            p = e / (1.0 + e);
        }
        if (r) r[0] = p - (double)y;
        return sp - (double)y * zz;
    }
    if (kind == HPJ__PB_SOFTMAX) {
        double m = z[0], se = 0.0;
        for (k = 1; k < K; ++k) m = HPJ__MAX(m, z[k]);
        for (k = 0; k < K; ++k) {
            double e = exp(z[k] - m);
            se += e;
            if (r) r[k] = e;
        }
        if (r) {
            for (k = 0; k < K; ++k) r[k] /= se;
            r[y] -= 1.0;
        }
        return m + log(se) - z[y];
    }
    {
        double l = 0.0;
        for (k = 0; k < K; ++k) {
            double e = z[k] - t[k];
            l += e * e;
            if (r) r[k] = 2.0 * e;
        }
        return l;
    }
}

/* ==== probe: logistic regression (L-BFGS) =============================== */

/* The problem in its internal parametrisation: z_i = W a_i + c with
   a_i = (x_i - mu) .* s (mu = column means; s = inverse stds or 1), so
   theta = [W (K, d), c (K)], F = sum_i loss(z_i, y_i) + alpha/2 ||W||^2. */
typedef struct hpj__pb_logi {
    const float *X;
    const int32_t *y;
    int n, d, K, kind, nb;
    double alpha;
    const double *mu, *s; /* (d), (d)                                   */
    double *Veff, *ceff;  /* (K, d), (K): W .* s and c - (W .* s) mu     */
    double *G, *gs;       /* (nb, K, d), (nb, K) block partials          */
    double *Graw, *gsum;  /* (K, d), (K)                                 */
    double *work;         /* pass work                                   */
    double loss[HPJ__PB_MAXBLK];
} hpj__pb_logi;

static void hpj__pb_logi_row(void *ctx, int blk, int i, int nr, const double *z, double *r) {
    hpj__pb_logi *L = (hpj__pb_logi *)ctx;
    int rr;
    double l = 0.0;
    for (rr = 0; rr < nr; ++rr)
        l += hpj__pb_loss_row(L->kind, L->K, z + (size_t)rr * L->K, L->y[i + rr], NULL, r + (size_t)rr * L->K);
    L->loss[blk] += l;
}

/* F and g at theta; Z (n, K) receives the scores. One pass over X. */
static double hpj__pb_logi_eval(hpj__pb_logi *L, const double *theta, double *g, double *Z) {
    const int K = L->K, d = L->d;
    const double *W = theta, *c = theta + (size_t)K * d;
    hpj__pb_pass P;
    double F = 0.0, ww = 0.0;
    int k, b;
    size_t j;
    for (k = 0; k < K; ++k) {
        double *v = L->Veff + (size_t)k * d;
        const double *w = W + (size_t)k * d;
        for (j = 0; j < (size_t)d; ++j) v[j] = w[j] * L->s[j];
        L->ceff[k] = c[k] - hpj__pb_dot(v, L->mu, d);
    }
    memset(&P, 0, sizeof(P));
    P.X = L->X;
    P.n = L->n;
    P.d = d;
    P.K = K;
    P.nb = L->nb;
    P.V = L->Veff;
    P.c = L->ceff;
    P.Z = Z;
    P.fn = hpj__pb_logi_row;
    P.ctx = L;
    P.G = L->G;
    P.gs = L->gs;
    P.work = L->work;
    for (b = 0; b < L->nb; ++b) L->loss[b] = 0.0;
    hpj__pb_run(&P);
    hpj__pb_reduce(L->G, L->nb, (size_t)K * d, L->Graw);
    hpj__pb_reduce(L->gs, L->nb, (size_t)K, L->gsum);
    for (b = 0; b < L->nb; ++b) F += L->loss[b];
    for (k = 0; k < K; ++k) {
        const double *gr = L->Graw + (size_t)k * d, *w = W + (size_t)k * d;
        double *gw = g + (size_t)k * d, gk = L->gsum[k];
        for (j = 0; j < (size_t)d; ++j) gw[j] = (gr[j] - gk * L->mu[j]) * L->s[j] + L->alpha * w[j];
        g[(size_t)K * d + k] = gk;
    }
    ww = hpj__pb_dotn(W, W, (size_t)K * d);
    return F + 0.5 * L->alpha * ww;
}

/* phi(t) = F(theta + t p) from the scores Z0 at theta and Z1 at theta + p
   (scores are affine in t) and the penalty's quadratic in t:
   ww = W.W, wp = W.P, pp = P.P. Also phi'(t). O(n K). */
static double hpj__pb_logi_phi(const hpj__pb_logi *L, const double *Z0, const double *Z1, double t, double ww,
                               double wp, double pp, double *dphi, double *zt /*(2K)*/) {
    const int K = L->K;
    double f = 0.0, df = 0.0;
    int i, k;
    for (i = 0; i < L->n; ++i) {
        const double *a = Z0 + (size_t)i * K, *b = Z1 + (size_t)i * K;
        double *r = zt + K;
        for (k = 0; k < K; ++k) zt[k] = a[k] + t * (b[k] - a[k]);
        f += hpj__pb_loss_row(L->kind, K, zt, L->y[i], NULL, r);
        for (k = 0; k < K; ++k) df += r[k] * (b[k] - a[k]);
    }
    *dphi = df + L->alpha * (wp + t * pp);
    return f + 0.5 * L->alpha * (ww + 2.0 * t * wp + t * t * pp);
}

/* Strong-Wolfe step along p for the convex phi, by bracketing and
   safeguarded secant steps on phi' (each trial costs O(n K), no pass over
   X). Returns the step, or 0 when no acceptable decrease exists (the
   iterate sits at the floor of the arithmetic). */
static double hpj__pb_logi_search(const hpj__pb_logi *L, const double *Z0, const double *Z1, double f0, double d0,
                                  double ww, double wp, double pp, double *zt) {
    const double c1 = 1e-4, c2 = 0.9, slack = 8.0 * DBL_EPSILON * fabs(f0);
    double lo = 0.0, dlo = d0, hi = -1.0, dhi = 0.0, t = 1.0, best_t = 0.0, best_f = f0;
    int it;
    for (it = 0; it < 60; ++it) {
        double dt, ft = hpj__pb_logi_phi(L, Z0, Z1, t, ww, wp, pp, &dt, zt);
        if (!isfinite(ft)) { /* overflow far out: shrink */
            hi = t;
            dhi = HUGE_VAL;
            t = lo + 0.1 * (hi - lo);
            continue;
        }
        if (ft < best_f) {
            best_f = ft;
            best_t = t;
        }
        if (ft <= f0 + c1 * t * d0 + slack && fabs(dt) <= c2 * fabs(d0)) return t;
        if (dt < 0 && ft <= f0 + c1 * t * d0 + slack) {
            lo = t;
            dlo = dt;
        } else {
            hi = t;
            dhi = dt;
        }
        if (hi < 0) {
            t = 4.0 * lo; /* still descending: expand */
        } else {
            double w = hi - lo, tn;
            if (isfinite(dhi) && dhi > dlo) tn = lo - dlo * w / (dhi - dlo);
            else tn = lo + 0.5 * w;
            if (!(tn > lo + 0.05 * w)) tn = lo + 0.05 * w;
            if (!(tn < hi - 0.05 * w)) tn = hi - 0.05 * w;
            t = tn;
            if (w <= 1e-14 * HPJ__MAX(1.0, hi)) break;
        }
    }
    return best_t;
}

HPJDEF hpj_status hpj_logreg_fit(const float *X, const int32_t *y, int n, int d, int C, const hpj_probe_options *o,
                                 hpj_linear_model *out) {
    static const char *fn = "logreg_fit";
    hpj_probe_options def;
    hpj__pb_logi L;
    hpj__pb_lbfgs H;
    hpj_status st;
    size_t P, KD, j;
    int K, nb, i, k, it, iters = 0;
    void *mem = NULL;
    double *theta, *theta1, *g, *g1, *p, *Z0, *Z1, *mu, *s, *part, *zt;
    double F, F1, g0max, thresh, gmax;
    if (out) memset(out, 0, sizeof(*out));
    if (!o) {
        hpj_probe_options_default(&def);
        o = &def;
    }
    if (!X || !y || !out) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !X ? "X" : !y ? "y" : "out");
    if (n < 1 || d < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: need n >= 1 and d >= 1 (got n=%d d=%d)", fn, n, d);
    if (C < 2) return hpj__fail(HPJ_ERR_INPUT, "%s: need C >= 2 classes (got %d)", fn, C);
    if ((st = hpj__pb_check_options(fn, o)) != HPJ_OK) return st;
    for (i = 0; i < n; ++i)
        if (y[i] < 0 || y[i] >= C)
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
    K = C == 2 ? 1 : C;
    nb = hpj__pb_nblk(n);
    KD = (size_t)K * d;
    P = KD + (size_t)K;
    {
        size_t sz[19];
        double **pv[19];
        sz[0] = sz[1] = sz[2] = sz[3] = sz[4] = sz[5] = sz[6] = sz[7] = P;
        sz[8] = sz[9] = (size_t)HPJ__PB_LBFGS_M * P;
        sz[10] = sz[11] = (size_t)n * K;
        sz[12] = (size_t)nb * KD;
        sz[13] = (size_t)nb * K;
        sz[14] = (size_t)nb * hpj__pb_pass_work(K);
        sz[15] = sz[16] = (size_t)d;
        sz[17] = (size_t)nb * d;
        sz[18] = (size_t)4 * K + 4;
        pv[0] = &theta;
        pv[1] = &theta1;
        pv[2] = &g;
        pv[3] = &g1;
        pv[4] = &p;
        pv[5] = &L.Veff;
        pv[6] = &L.Graw;
        pv[7] = &L.ceff;
        pv[8] = &H.S;
        pv[9] = &H.Y;
        pv[10] = &Z0;
        pv[11] = &Z1;
        pv[12] = &L.G;
        pv[13] = &L.gs;
        pv[14] = &L.work;
        pv[15] = &mu;
        pv[16] = &s;
        pv[17] = &part;
        pv[18] = &zt;
        mem = hpj__pb_carve(fn, 19, sz, pv);
        if (!mem) return HPJ_ERR_NOMEM;
    }
    L.gsum = L.ceff + K; /* ceff (K) and gsum (K) share the P-sized slot */
    if (hpj__pb_colstats(X, n, d, mu, o->standardize ? s : NULL, part)) {
        hpj__free(mem);
        return hpj__pb_bad_value(fn, "X", X, n, d);
    }
    if (!o->standardize)
        for (j = 0; j < (size_t)d; ++j) s[j] = 1.0;
    L.X = X;
    L.y = y;
    L.n = n;
    L.d = d;
    L.K = K;
    L.kind = K == 1 ? HPJ__PB_BINARY : HPJ__PB_SOFTMAX;
    L.nb = nb;
    L.alpha = o->alpha;
    L.mu = mu;
    L.s = s;
    H.P = (int)P;
    H.m = HPJ__PB_LBFGS_M;
    H.cnt = 0;
    H.head = 0;
    if (P > (size_t)INT_MAX) {
        hpj__free(mem);
        return hpj__fail(HPJ_ERR_INPUT, "%s: %zu parameters are too many", fn, P);
    }
    memset(theta, 0, sizeof(double) * P);
    F = hpj__pb_logi_eval(&L, theta, g, Z0);
    if (!isfinite(F)) {
        hpj__free(mem);
        return hpj__fail(HPJ_ERR_NUMERIC, "%s: the loss at W = 0 is not finite", fn);
    }
    g0max = hpj__pb_maxabs(g, P);
    thresh = o->tol * HPJ__MAX(1.0, g0max);
    gmax = g0max;
    for (it = 0; it < o->max_iter && gmax > thresh; ++it) {
        double d0, d1, t, ww, wp, pp;
        hpj__pb_lbfgs_dir(&H, g, p);
        d0 = hpj__pb_dotn(g, p, P);
        if (!(d0 < 0)) { /* not a descent direction: restart from steepest descent */
            H.cnt = 0;
            hpj__pb_lbfgs_dir(&H, g, p);
            d0 = hpj__pb_dotn(g, p, P);
        }
        if (H.cnt == 0) { /* first step: unit length, the search scales it */
            double nrm = sqrt(hpj__pb_dotn(p, p, P));
            for (j = 0; j < P; ++j) p[j] /= nrm;
            d0 /= nrm;
        }
        for (j = 0; j < P; ++j) theta1[j] = theta[j] + p[j];
        F1 = hpj__pb_logi_eval(&L, theta1, g1, Z1);
        d1 = hpj__pb_dotn(g1, p, P);
        ww = hpj__pb_dotn(theta, theta, KD);
        wp = hpj__pb_dotn(theta, p, KD);
        pp = hpj__pb_dotn(p, p, KD);
        iters = it + 1;
        if (isfinite(F1) && F1 <= F + 1e-4 * d0 + 8.0 * DBL_EPSILON * fabs(F) && fabs(d1) <= 0.9 * fabs(d0)) {
            t = 1.0;
        } else {
            t = hpj__pb_logi_search(&L, Z0, Z1, F, d0, ww, wp, pp, zt);
            if (t == 0.0) break; /* no decrease representable: done */
            for (j = 0; j < P; ++j) theta1[j] = theta[j] + t * p[j];
            F1 = hpj__pb_logi_eval(&L, theta1, g1, Z1);
        }
        if (!isfinite(F1)) {
            hpj__free(mem);
            return hpj__fail(HPJ_ERR_NUMERIC, "%s: the loss became %g at iteration %d", fn, F1, it + 1);
        }
        hpj__pb_lbfgs_push(&H, theta1, theta, g1, g);
        {
            double *tmp = theta;
            theta = theta1;
            theta1 = tmp;
            tmp = g;
            g = g1;
            g1 = tmp;
            tmp = Z0;
            Z0 = Z1;
            Z1 = tmp;
        }
        F = F1;
        gmax = hpj__pb_maxabs(g, P);
    }
    /* back to the original features: W_orig = W .* s, b = c - W_orig mu */
    out->W = (float *)hpj__alloc(sizeof(float) * (size_t)C * d, fn);
    out->b = (float *)hpj__alloc(sizeof(float) * (size_t)C, fn);
    if (!out->W || !out->b) {
        hpj__free(mem);
        hpj_linear_model_free(out);
        return HPJ_ERR_NOMEM;
    }
    for (k = 0; k < K; ++k) {
        double *w = theta + (size_t)k * d, bb;
        for (j = 0; j < (size_t)d; ++j) w[j] *= s[j];
        bb = theta[KD + k] - hpj__pb_dot(w, mu, d);
        if (K == 1) {
            for (j = 0; j < (size_t)d; ++j) {
                out->W[j] = (float)(-0.5 * w[j]);
                out->W[(size_t)d + j] = (float)(0.5 * w[j]);
            }
            out->b[0] = (float)(-0.5 * bb);
            out->b[1] = (float)(0.5 * bb);
        } else {
            for (j = 0; j < (size_t)d; ++j) out->W[(size_t)k * d + j] = (float)w[j];
            out->b[k] = (float)bb;
        }
    }
    out->d = d;
    out->c = C;
    out->iters = iters;
    out->grad_norm = gmax;
    hpj__free(mem);
    return HPJ_OK;
}

/* ==== probe: dense kernels for ridge (float GEMM/SYRK, Cholesky) ========= */

/* A GotoBLAS-style kernel: operands are packed into panels of MR (A) and
   NR (B) rows by KC deep, a micro-kernel forms the MR x NR tile
   T = A_panel B_panel^T in registers, and the tile is stored into, added to
   or subtracted from C. Each tile of C is owned by one task and summed over
   the KC slabs in order, so results are thread-count independent. */
#if defined(HPJ__PB_AVX2)
#define HPJ__PB_MR 4   /* micro-tile rows (divides NR)                     */
#define HPJ__PB_NR 24  /* micro-tile columns (three 8-float vectors)        */
#else
#define HPJ__PB_MR 8   /* micro-tile rows (divides NR)                     */
#define HPJ__PB_NR 32  /* micro-tile columns (two 16-float vectors)         */
#endif
#define HPJ__PB_KC 512 /* depth of a packed slab                            */
#define HPJ__PB_MC 64  /* rows per parallel task (8 micro-panels)           */
#define HPJ__PB_NB 64  /* block size of the float Cholesky                  */
#define HPJ__PB_TB 256 /* block size of the triangular solves               */

/* Element (i, k) of an operand A: trans ? p[k ld + i] : p[i ld + k], mapped
   through (v - mu[c]) * s[c] with c the X column (k, or i when trans). */
typedef struct hpj__pb_src {
    const float *p;
    size_t ld;
    int trans;
    const double *mu, *s; /* (X columns) or both NULL */
} hpj__pb_src;

/* out[q] = (src[q] - mu[q]) * s[q] (or src[q]), q < 8, rounded to float. */
#if defined(__AVX512F__)
static __m256 hpj__pb_xf8(const float *src, const double *mu, const double *sc) {
    __m256 x = _mm256_loadu_ps(src);
    __m512d v;
    if (!mu) return x;
    v = _mm512_maskz_cvtps_pd((__mmask8)0xFF, x);
    v = _mm512_mul_pd(_mm512_sub_pd(v, _mm512_loadu_pd(mu)), _mm512_loadu_pd(sc));
    return _mm512_maskz_cvtpd_ps((__mmask8)0xFF, v);
}
#elif defined(HPJ__PB_AVX2)
static __m256 hpj__pb_xf8(const float *src, const double *mu, const double *sc) {
    __m256d lo, hi;
    if (!mu) return _mm256_loadu_ps(src);
    lo = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(src)), _mm256_loadu_pd(mu)), _mm256_loadu_pd(sc));
    hi = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(src + 4)), _mm256_loadu_pd(mu + 4)),
                       _mm256_loadu_pd(sc + 4));
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}
#endif

/* dst (kc, w): dst[kk w + r] = A(i0 + r, k0 + kk); rows past m are zero. */
static void hpj__pb_pack(const hpj__pb_src *S, int m, int i0, int w, int k0, int kc, float *dst) {
    const int nr = HPJ__MIN(w, m - i0);
    int r = 0, kk;
    if (!S->trans) {
#if defined(__AVX512F__) || defined(HPJ__PB_AVX2)
        /* 8 x 8 blocks: 8 transformed rows, transposed in registers */
        for (; r + 8 <= nr; r += 8) {
            const float *src = S->p + (size_t)(i0 + r) * S->ld + k0;
            const double *mu = S->mu ? S->mu + k0 : NULL, *sc = S->mu ? S->s + k0 : NULL;
            const size_t ld = S->ld;
            for (kk = 0; kk + 8 <= kc; kk += 8) {
                __m256 r0 = hpj__pb_xf8(src + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r1 = hpj__pb_xf8(src + ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r2 = hpj__pb_xf8(src + 2 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r3 = hpj__pb_xf8(src + 3 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r4 = hpj__pb_xf8(src + 4 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r5 = hpj__pb_xf8(src + 5 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r6 = hpj__pb_xf8(src + 6 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 r7 = hpj__pb_xf8(src + 7 * ld + kk, mu ? mu + kk : NULL, sc ? sc + kk : NULL);
                __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
                __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
                __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
                __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
                __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
                __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
                float *o = dst + (size_t)kk * w + r;
                _mm256_storeu_ps(o, _mm256_permute2f128_ps(u0, u4, 0x20));
                _mm256_storeu_ps(o + w, _mm256_permute2f128_ps(u1, u5, 0x20));
                _mm256_storeu_ps(o + 2 * w, _mm256_permute2f128_ps(u2, u6, 0x20));
                _mm256_storeu_ps(o + 3 * w, _mm256_permute2f128_ps(u3, u7, 0x20));
                _mm256_storeu_ps(o + 4 * w, _mm256_permute2f128_ps(u0, u4, 0x31));
                _mm256_storeu_ps(o + 5 * w, _mm256_permute2f128_ps(u1, u5, 0x31));
                _mm256_storeu_ps(o + 6 * w, _mm256_permute2f128_ps(u2, u6, 0x31));
                _mm256_storeu_ps(o + 7 * w, _mm256_permute2f128_ps(u3, u7, 0x31));
            }
            for (; kk < kc; ++kk) {
                int q;
                for (q = 0; q < 8; ++q) {
                    double v = (double)src[(size_t)q * ld + kk];
                    dst[(size_t)kk * w + r + q] = mu ? (float)((v - mu[kk]) * sc[kk]) : (float)v;
                }
            }
        }
#endif
        for (; r < nr; ++r) {
            const float *src = S->p + (size_t)(i0 + r) * S->ld + k0;
            if (S->mu) {
                const double *mu = S->mu + k0, *sc = S->s + k0;
                for (kk = 0; kk < kc; ++kk) dst[kk * w + r] = (float)(((double)src[kk] - mu[kk]) * sc[kk]);
            } else {
                for (kk = 0; kk < kc; ++kk) dst[kk * w + r] = src[kk];
            }
        }
    } else {
        for (kk = 0; kk < kc; ++kk) {
            const float *src = S->p + (size_t)(k0 + kk) * S->ld + i0;
            float *o = dst + (size_t)kk * w;
            r = 0;
            if (S->mu) {
                const double *mu = S->mu + i0, *sc = S->s + i0;
#if defined(__AVX512F__) || defined(HPJ__PB_AVX2)
                for (; r + 8 <= nr; r += 8) _mm256_storeu_ps(o + r, hpj__pb_xf8(src + r, mu + r, sc + r));
#endif
                for (; r < nr; ++r) o[r] = (float)(((double)src[r] - mu[r]) * sc[r]);
            } else {
                memcpy(o, src, sizeof(float) * (size_t)nr);
            }
        }
    }
    for (r = nr; r < w; ++r)
        for (kk = 0; kk < kc; ++kk) dst[kk * w + r] = 0.0f;
}

/* T (MR, NR, row stride ldt) op= sum_k A[k as][r] B[k][q] with op 0 store,
   1 add, -1 subtract: A advances by `as` floats per k (MR for its own
   packing, NR for a sub-panel of a B packing). */
#if defined(__AVX512F__)
static void hpj__pb_kern(int kc, const float *A, int as, const float *B, float *T, size_t ldt, int op) {
#define HPJ__PB_KROW(r) __m512 c##r##a = _mm512_setzero_ps(), c##r##b = _mm512_setzero_ps();
#define HPJ__PB_KFMA(r)                                      \
    {                                                        \
        __m512 a = _mm512_set1_ps(A[r]);                     \
        c##r##a = _mm512_fmadd_ps(a, b0, c##r##a);           \
        c##r##b = _mm512_fmadd_ps(a, b1, c##r##b);           \
    }
#define HPJ__PB_KST(r)                                                                     \
    if (op == 0) {                                                                         \
        _mm512_storeu_ps(T + r * ldt, c##r##a);                                            \
        _mm512_storeu_ps(T + r * ldt + 16, c##r##b);                                       \
    } else if (op > 0) {                                                                   \
        _mm512_storeu_ps(T + r * ldt, _mm512_add_ps(_mm512_loadu_ps(T + r * ldt), c##r##a)); \
        _mm512_storeu_ps(T + r * ldt + 16, _mm512_add_ps(_mm512_loadu_ps(T + r * ldt + 16), c##r##b)); \
    } else {                                                                               \
        _mm512_storeu_ps(T + r * ldt, _mm512_sub_ps(_mm512_loadu_ps(T + r * ldt), c##r##a)); \
        _mm512_storeu_ps(T + r * ldt + 16, _mm512_sub_ps(_mm512_loadu_ps(T + r * ldt + 16), c##r##b)); \
    }
    int k;
    HPJ__PB_KROW(0) HPJ__PB_KROW(1) HPJ__PB_KROW(2) HPJ__PB_KROW(3)
    HPJ__PB_KROW(4) HPJ__PB_KROW(5) HPJ__PB_KROW(6) HPJ__PB_KROW(7)
    for (k = 0; k < kc; ++k, A += as, B += HPJ__PB_NR) {
        __m512 b0 = _mm512_loadu_ps(B), b1 = _mm512_loadu_ps(B + 16);
        HPJ__PB_KFMA(0) HPJ__PB_KFMA(1) HPJ__PB_KFMA(2) HPJ__PB_KFMA(3)
        HPJ__PB_KFMA(4) HPJ__PB_KFMA(5) HPJ__PB_KFMA(6) HPJ__PB_KFMA(7)
    }
    HPJ__PB_KST(0) HPJ__PB_KST(1) HPJ__PB_KST(2) HPJ__PB_KST(3)
    HPJ__PB_KST(4) HPJ__PB_KST(5) HPJ__PB_KST(6) HPJ__PB_KST(7)
#undef HPJ__PB_KROW
#undef HPJ__PB_KFMA
#undef HPJ__PB_KST
}
#elif defined(HPJ__PB_AVX2)
static void hpj__pb_kern(int kc, const float *A, int as, const float *B, float *T, size_t ldt, int op) {
#define HPJ__PB_KROW(r) __m256 c##r##a = _mm256_setzero_ps(), c##r##b = c##r##a, c##r##c = c##r##a;
#define HPJ__PB_KFMA(r)                                      \
    {                                                        \
        __m256 a = _mm256_broadcast_ss(A + r);               \
        c##r##a = _mm256_fmadd_ps(a, b0, c##r##a);           \
        c##r##b = _mm256_fmadd_ps(a, b1, c##r##b);           \
        c##r##c = _mm256_fmadd_ps(a, b2, c##r##c);           \
    }
#define HPJ__PB_KST1(r, x, off)                                                                \
    if (op == 0) _mm256_storeu_ps(T + r * ldt + off, c##r##x);                                 \
    else if (op > 0) _mm256_storeu_ps(T + r * ldt + off, _mm256_add_ps(_mm256_loadu_ps(T + r * ldt + off), c##r##x)); \
    else _mm256_storeu_ps(T + r * ldt + off, _mm256_sub_ps(_mm256_loadu_ps(T + r * ldt + off), c##r##x));
#define HPJ__PB_KST(r) HPJ__PB_KST1(r, a, 0) HPJ__PB_KST1(r, b, 8) HPJ__PB_KST1(r, c, 16)
    int k;
    HPJ__PB_KROW(0) HPJ__PB_KROW(1) HPJ__PB_KROW(2) HPJ__PB_KROW(3)
    for (k = 0; k < kc; ++k, A += as, B += HPJ__PB_NR) {
        __m256 b0 = _mm256_loadu_ps(B), b1 = _mm256_loadu_ps(B + 8), b2 = _mm256_loadu_ps(B + 16);
        HPJ__PB_KFMA(0) HPJ__PB_KFMA(1) HPJ__PB_KFMA(2) HPJ__PB_KFMA(3)
    }
    HPJ__PB_KST(0) HPJ__PB_KST(1) HPJ__PB_KST(2) HPJ__PB_KST(3)
#undef HPJ__PB_KROW
#undef HPJ__PB_KFMA
#undef HPJ__PB_KST1
#undef HPJ__PB_KST
}
#else
/* Portable: a row of the tile at a time, NR-wide inner loops that
   compilers vectorise. */
static void hpj__pb_kern(int kc, const float *A, int as, const float *B, float *T, size_t ldt, int op) {
    int k, r, q;
    for (r = 0; r < HPJ__PB_MR; ++r) {
        float acc[HPJ__PB_NR], *t = T + r * ldt;
        for (q = 0; q < HPJ__PB_NR; ++q) acc[q] = 0.0f;
        for (k = 0; k < kc; ++k) {
            const float a = A[(size_t)k * as + r], *b = B + (size_t)k * HPJ__PB_NR;
            for (q = 0; q < HPJ__PB_NR; ++q) acc[q] += a * b[q];
        }
        if (op == 0)
            for (q = 0; q < HPJ__PB_NR; ++q) t[q] = acc[q];
        else if (op > 0)
            for (q = 0; q < HPJ__PB_NR; ++q) t[q] += acc[q];
        else
            for (q = 0; q < HPJ__PB_NR; ++q) t[q] -= acc[q];
    }
}
#endif

/* Floats of packing buffer needed for an operand with m rows. */
static size_t hpj__pb_packsize(int m, int w) { return ((size_t)m + (size_t)w) * HPJ__PB_KC; }

/* C (m, nn) op= A B^T with A (m, k), B (nn, k); op: mode 0 store, 1
   subtract. lower = 1 means A == B (a SYRK): only entries j <= i are
   touched and A's panels are read out of B's packing (pa unused).
   pa, pb: packing buffers of hpj__pb_packsize(m, MR), (nn, NR) floats. */
static void hpj__pb_gemm(const hpj__pb_src *A, int m, const hpj__pb_src *B, int nn, int k, float *C, size_t ldc,
                         int mode, int lower, float *pa, float *pb) {
    const int npa = (m + HPJ__PB_MR - 1) / HPJ__PB_MR, npb = (nn + HPJ__PB_NR - 1) / HPJ__PB_NR;
    const int per = HPJ__PB_MC / HPJ__PB_MR, ntask = (npa + per - 1) / per;
    const int npack = npb + (lower ? 0 : npa);
    int k0;
    for (k0 = 0; k0 < k; k0 += HPJ__PB_KC) {
        const int kc = HPJ__MIN(HPJ__PB_KC, k - k0);
        const int op = mode == 1 ? -1 : (k0 > 0 ? 1 : 0); /* -1 subtract, 0 store, 1 add */
        int x;
        HPJ__OMP(parallel for schedule(static) if ((double)(m + nn) * kc > HPJ__PB_PAR))
        for (x = 0; x < npack; ++x) {
            if (x < npb)
                hpj__pb_pack(B, nn, x * HPJ__PB_NR, HPJ__PB_NR, k0, kc, pb + (size_t)x * HPJ__PB_NR * kc);
            else
                hpj__pb_pack(A, m, (x - npb) * HPJ__PB_MR, HPJ__PB_MR, k0, kc,
                             pa + (size_t)(x - npb) * HPJ__PB_MR * kc);
        }
        HPJ__OMP(parallel for schedule(dynamic, 1) if ((double)m * nn * kc > 2 * HPJ__PB_PAR))
        for (x = 0; x < ntask; ++x) {
            const int task = lower ? ntask - 1 - x : x; /* the triangle's long rows first */
            const int a0 = task * per, a1 = HPJ__MIN(npa, a0 + per);
            const int rowmax = HPJ__MIN(m, a1 * HPJ__PB_MR) - 1;
            float T[HPJ__PB_MR * HPJ__PB_NR];
            int jb, ia, r, q;
            for (jb = 0; jb < npb && (!lower || jb * HPJ__PB_NR <= rowmax); ++jb)
                for (ia = a0; ia < a1; ++ia) {
                    const int r0 = ia * HPJ__PB_MR, c0 = jb * HPJ__PB_NR;
                    if (lower && c0 > r0 + HPJ__PB_MR - 1) continue;
                    const int full = r0 + HPJ__PB_MR <= m && c0 + HPJ__PB_NR <= nn &&
                                     (!lower || c0 + HPJ__PB_NR <= r0 + 1);
                    /* full tiles go straight into C, edge tiles through T */
                    float *dst = full ? C + (size_t)r0 * ldc + c0 : T;
                    const size_t ldd = full ? ldc : (size_t)HPJ__PB_NR;
                    const int opd = full ? op : 0;
                    if (lower)
                        hpj__pb_kern(kc, pb + (size_t)(r0 / HPJ__PB_NR) * HPJ__PB_NR * kc + r0 % HPJ__PB_NR,
                                     HPJ__PB_NR, pb + (size_t)jb * HPJ__PB_NR * kc, dst, ldd, opd);
                    else
                        hpj__pb_kern(kc, pa + (size_t)ia * HPJ__PB_MR * kc, HPJ__PB_MR,
                                     pb + (size_t)jb * HPJ__PB_NR * kc, dst, ldd, opd);
                    if (full) continue;
                    for (r = 0; r < HPJ__PB_MR && r0 + r < m; ++r) {
                        float *cr = C + (size_t)(r0 + r) * ldc + c0;
                        const float *tr = T + r * HPJ__PB_NR;
                        int qn = HPJ__MIN(HPJ__PB_NR, nn - c0);
                        if (lower) qn = HPJ__MIN(qn, r0 + r - c0 + 1);
                        if (op == 0)
                            for (q = 0; q < qn; ++q) cr[q] = tr[q];
                        else if (op > 0)
                            for (q = 0; q < qn; ++q) cr[q] += tr[q];
                        else
                            for (q = 0; q < qn; ++q) cr[q] -= tr[q];
                    }
                }
        }
    }
}

/* In-place lower Cholesky L L^T of the float matrix C (m, m) (lower part
   read and written). Per block of NB columns: the diagonal block is factored
   in double, its inverse formed in double, the panel below is multiplied by
   that inverse (a GEMM) and the trailing matrix is updated by a SYRK.
   D: 2 NB^2 doubles; Li: NB^2 floats; pa, pb: packing buffers for m rows.
   Returns -1, or the index of a non-positive pivot. */
static int hpj__pb_potrf(float *C, size_t ldc, int m, double *D, float *Li, float *pa, float *pb) {
    const int NB = HPJ__PB_NB;
    double *E = D + (size_t)NB * NB; /* inverse of the diagonal block */
    int k0;
    for (k0 = 0; k0 < m; k0 += NB) {
        const int nb = HPJ__MIN(NB, m - k0), rest = m - k0 - nb;
        int i, j;
        for (i = 0; i < nb; ++i)
            for (j = 0; j <= i; ++j) D[(size_t)i * NB + j] = (double)C[(size_t)(k0 + i) * ldc + k0 + j];
        for (j = 0; j < nb; ++j) {
            double dj = D[(size_t)j * NB + j] - hpj__pb_dot(D + (size_t)j * NB, D + (size_t)j * NB, j);
            if (!(dj > 0.0) || !isfinite(dj)) return k0 + j;
            dj = sqrt(dj);
            D[(size_t)j * NB + j] = dj;
            for (i = j + 1; i < nb; ++i)
                D[(size_t)i * NB + j] =
                    (D[(size_t)i * NB + j] - hpj__pb_dot(D + (size_t)i * NB, D + (size_t)j * NB, j)) / dj;
        }
        for (i = 0; i < nb; ++i)
            for (j = 0; j <= i; ++j) C[(size_t)(k0 + i) * ldc + k0 + j] = (float)D[(size_t)i * NB + j];
        if (!rest) break;
        /* E = inverse of the diagonal block, column by column (kept as E^T
           rows so each column is contiguous): e_j solves L x = unit_j */
        for (j = 0; j < nb; ++j) {
            double *x = E + (size_t)j * NB; /* x[i] = (L^-1)[i][j] */
            for (i = 0; i < j; ++i) x[i] = 0.0;
            x[j] = 1.0 / D[(size_t)j * NB + j];
            for (i = j + 1; i < nb; ++i)
                x[i] = -hpj__pb_dot(D + (size_t)i * NB + j, x + j, i - j) / D[(size_t)i * NB + i];
        }
        for (i = 0; i < nb; ++i) /* Li[i][q] = (L^-1)[i][q] */
            for (j = 0; j < nb; ++j) Li[(size_t)i * nb + j] = (float)E[(size_t)j * NB + i];
        {
            /* panel: L21 = A21 L11^-T = A21 (L11^-1)^T, in place: k = nb <= KC
               is one slab, packed whole before any tile is written */
            hpj__pb_src sa, sb;
            sa.p = C + (size_t)(k0 + nb) * ldc + k0;
            sa.ld = ldc;
            sa.trans = 0;
            sa.mu = sa.s = NULL;
            sb.p = Li;
            sb.ld = (size_t)nb;
            sb.trans = 0;
            sb.mu = sb.s = NULL;
            hpj__pb_gemm(&sa, rest, &sb, nb, nb, C + (size_t)(k0 + nb) * ldc + k0, ldc, 0, 0, pa, pb);
            /* trailing: A22 -= L21 L21^T (lower part) */
            hpj__pb_gemm(&sa, rest, &sa, rest, nb, C + (size_t)(k0 + nb) * ldc + k0 + nb, ldc, 1, 1, pa, pb);
        }
    }
    return -1;
}

/* Solves L y = b in place for t right-hand sides y (t, m) (float L). */
static void hpj__pb_trsv_lower(const float *Lm, size_t ldl, int m, int t, double *y) {
    int i0;
    for (i0 = 0; i0 < m; i0 += HPJ__PB_TB) {
        const int i1 = HPJ__MIN(m, i0 + HPJ__PB_TB);
        int i, c;
        if (i0 > 0) {
            HPJ__OMP(parallel for schedule(static) if ((double)i0 * t * HPJ__PB_TB > HPJ__PB_PAR))
            for (i = i0; i < i1; ++i) {
                int cc;
                for (cc = 0; cc < t; ++cc)
                    y[(size_t)cc * m + i] -= hpj__pb_dotf(Lm + (size_t)i * ldl, y + (size_t)cc * m, i0);
            }
        }
        for (i = i0; i < i1; ++i)
            for (c = 0; c < t; ++c) {
                double *yc = y + (size_t)c * m;
                yc[i] = (yc[i] - hpj__pb_dotf(Lm + (size_t)i * ldl + i0, yc + i0, i - i0)) /
                        (double)Lm[(size_t)i * ldl + i];
            }
    }
}

/* Solves L^T x = y in place for t right-hand sides (t, m) (float L). */
static void hpj__pb_trsv_upper(const float *Lm, size_t ldl, int m, int t, double *y) {
    int i1;
    for (i1 = m; i1 > 0; i1 -= HPJ__PB_TB) {
        const int i0 = HPJ__MAX(0, i1 - HPJ__PB_TB);
        int i, j, c, nch;
        for (i = i1 - 1; i >= i0; --i)
            for (c = 0; c < t; ++c) {
                double *yc = y + (size_t)c * m, xi = yc[i] / (double)Lm[(size_t)i * ldl + i];
                const float *li = Lm + (size_t)i * ldl;
                yc[i] = xi;
                hpj__pb_axpyf(yc + i0, li + i0, -xi, i - i0);
            }
        nch = (i0 + 255) / 256;
        HPJ__OMP(parallel for schedule(static) if ((double)i0 * t * HPJ__PB_TB > HPJ__PB_PAR))
        for (j = 0; j < nch; ++j) {
            const int j0 = j * 256, j1 = HPJ__MIN(i0, j0 + 256);
            int ii, cc;
            for (ii = i0; ii < i1; ++ii) {
                const float *li = Lm + (size_t)ii * ldl;
                for (cc = 0; cc < t; ++cc) {
                    double *yc = y + (size_t)cc * m;
                    hpj__pb_axpyf(yc + j0, li + j0, -yc[ii], j1 - j0);
                }
            }
        }
    }
}

/* ---- the double-precision path ---- */

/* Cd (m, m) lower part = A A^T in double. slab: (m, KC) doubles. */
static void hpj__pb_gram_d(const hpj__pb_src *S, int m, int k, double *Cd, double *slab) {
    int k0;
    for (k0 = 0; k0 < k; k0 += HPJ__PB_KC) {
        const int kc = HPJ__MIN(HPJ__PB_KC, k - k0);
        int i;
        HPJ__OMP(parallel for schedule(static) if ((double)m * kc > HPJ__PB_PAR))
        for (i = 0; i < m; ++i) {
            double *o = slab + (size_t)i * HPJ__PB_KC;
            int kk;
            for (kk = 0; kk < kc; ++kk) {
                const int kx = k0 + kk;
                double v = S->trans ? (double)S->p[(size_t)kx * S->ld + i] : (double)S->p[(size_t)i * S->ld + kx];
                const int col = S->trans ? i : kx;
                o[kk] = S->mu ? (v - S->mu[col]) * S->s[col] : v;
            }
        }
        HPJ__OMP(parallel for schedule(dynamic, 16) if ((double)m * m * kc > 2 * HPJ__PB_PAR))
        for (i = 0; i < m; ++i) {
            const double *si = slab + (size_t)i * HPJ__PB_KC;
            double *ci = Cd + (size_t)i * m;
            int j;
            for (j = 0; j <= i; ++j) {
                double v = hpj__pb_dot(si, slab + (size_t)j * HPJ__PB_KC, kc);
                ci[j] = k0 ? ci[j] + v : v;
            }
        }
    }
}

/* In-place lower Cholesky of Cd (m, m), left-looking by rows. Returns -1
   or the index of a pivot below 1e-14 of its diagonal entry (the matrix is
   singular to double precision). */
static int hpj__pb_potrf_d(double *A, int m) {
    int j;
    for (j = 0; j < m; ++j) {
        const double ajj = A[(size_t)j * m + j];
        double dj = ajj - hpj__pb_dot(A + (size_t)j * m, A + (size_t)j * m, j);
        int i;
        if (!(dj > 1e-14 * ajj) || !isfinite(dj)) return j; /* (numerically) singular */
        dj = sqrt(dj);
        A[(size_t)j * m + j] = dj;
        HPJ__OMP(parallel for schedule(static) if ((double)(m - j) * j > HPJ__PB_PAR))
        for (i = j + 1; i < m; ++i)
            A[(size_t)i * m + j] = (A[(size_t)i * m + j] - hpj__pb_dot(A + (size_t)i * m, A + (size_t)j * m, j)) / dj;
    }
    return -1;
}

/* x (t, m) = (L L^T)^-1 x in place with the double factor L (m, m). */
static void hpj__pb_cholsolve_d(const double *Lm, int m, int t, double *x) {
    int c, i, j;
    for (c = 0; c < t; ++c) {
        double *y = x + (size_t)c * m;
        for (i = 0; i < m; ++i) y[i] = (y[i] - hpj__pb_dot(Lm + (size_t)i * m, y, i)) / Lm[(size_t)i * m + i];
        for (i = m - 1; i >= 0; --i) {
            const double *li = Lm + (size_t)i * m;
            y[i] /= li[i];
            for (j = 0; j < i; ++j) y[j] -= li[j] * y[i];
        }
    }
}

/* ==== probe: ridge regression ============================================ */

/* A = (X - 1 mu^T) diag(s) (the centred, maybe scaled features). The
   system is (A^T A + alpha I) w = A^T y_c in the primal (m = d) and
   (A A^T + alpha I) a = y_c in the dual (m = n); vectors are (t, m). */
typedef struct hpj__pb_ridge {
    const float *X;
    int n, d, t, nb, dual, m;
    const double *mu, *s;
    double alpha;
    double *Veff, *ceff, *G, *gs, *Graw, *gsum, *work, *Zb, *Rb, *u;
    /* (t,d) (t) (nb,t,d) (nb,t) (t,d) (t) pass (n,t) (n,t) (t,d) */
} hpj__pb_ridge;

/* out (t, d) = A^T R for R (n, t) given row-major (a pass over X). */
static void hpj__pb_ridge_atr(hpj__pb_ridge *R, const double *Rn, double *out) {
    hpj__pb_pass P;
    int c;
    size_t j;
    memset(&P, 0, sizeof(P));
    P.X = R->X;
    P.n = R->n;
    P.d = R->d;
    P.K = R->t;
    P.nb = R->nb;
    P.R = Rn;
    P.G = R->G;
    P.gs = R->gs;
    P.work = R->work;
    hpj__pb_run(&P);
    hpj__pb_reduce(R->G, R->nb, (size_t)R->t * R->d, R->Graw);
    hpj__pb_reduce(R->gs, R->nb, (size_t)R->t, R->gsum);
    for (c = 0; c < R->t; ++c)
        for (j = 0; j < (size_t)R->d; ++j)
            out[(size_t)c * R->d + j] = (R->Graw[(size_t)c * R->d + j] - R->gsum[c] * R->mu[j]) * R->s[j];
}

/* out = (system matrix) v for v, out (t, m). */
static void hpj__pb_ridge_op(hpj__pb_ridge *R, const double *v, double *out) {
    const int t = R->t, d = R->d, n = R->n;
    hpj__pb_pass P;
    const double *w = v; /* weights in the feature space (t, d) */
    int c, i;
    size_t j;
    if (R->dual) { /* u = A^T v */
        for (i = 0; i < n; ++i)
            for (c = 0; c < t; ++c) R->Rb[(size_t)i * t + c] = v[(size_t)c * n + i];
        hpj__pb_ridge_atr(R, R->Rb, R->u);
        w = R->u;
    }
    for (c = 0; c < t; ++c) { /* scores A w = X (w .* s) - mu . (w .* s) */
        double *ve = R->Veff + (size_t)c * d;
        for (j = 0; j < (size_t)d; ++j) ve[j] = w[(size_t)c * d + j] * R->s[j];
        R->ceff[c] = -hpj__pb_dot(ve, R->mu, d);
    }
    memset(&P, 0, sizeof(P));
    P.X = R->X;
    P.n = n;
    P.d = d;
    P.K = t;
    P.nb = R->nb;
    P.V = R->Veff;
    P.c = R->ceff;
    P.work = R->work;
    if (R->dual) {
        P.Z = R->Zb;
        hpj__pb_run(&P);
        for (c = 0; c < t; ++c)
            for (i = 0; i < n; ++i) out[(size_t)c * n + i] = R->Zb[(size_t)i * t + c] + R->alpha * v[(size_t)c * n + i];
    } else { /* fused: r = A w, then A^T r */
        P.G = R->G;
        P.gs = R->gs;
        hpj__pb_run(&P);
        hpj__pb_reduce(R->G, R->nb, (size_t)t * d, R->Graw);
        hpj__pb_reduce(R->gs, R->nb, (size_t)t, R->gsum);
        for (c = 0; c < t; ++c)
            for (j = 0; j < (size_t)d; ++j)
                out[(size_t)c * d + j] = (R->Graw[(size_t)c * d + j] - R->gsum[c] * R->mu[j]) * R->s[j] +
                                         R->alpha * v[(size_t)c * d + j];
    }
}

/* Preconditioned conjugate gradients on the exact system, t columns at
   once, from x = M^-1 b with M = Lf Lf^T (float factor) or Ld Ld^T
   (double). Column c stops when ||r_c|| <= eps ((||A||_F^2 + alpha)
   ||x_c|| + ||b_c||) with eps = 1e-15 sqrt(n + d): a backward error at the
   level of a double Cholesky solve. Returns the iterations, or -1 if some
   column did not get there in maxit; *relres = max_c ||r_c|| / ||b_c||. */
static int hpj__pb_pcg(hpj__pb_ridge *R, const float *Lf, const double *Ld, const double *b, double *x, double *r,
                       double *z, double *p, double *q, double normA, int maxit, double *relres) {
    const int t = R->t, m = R->m;
    double rho[64], rho_old[64];
    int done[64], it, c, all = 0;
    size_t i, tm = (size_t)t * m;
    /* the rounding floor of the operator applied in double grows like the
       square root of the summation lengths */
    const double eps = 1e-15 * sqrt((double)R->n + (double)R->d);
    memcpy(x, b, sizeof(double) * tm);
    if (Lf) {
        hpj__pb_trsv_lower(Lf, (size_t)m, m, t, x);
        hpj__pb_trsv_upper(Lf, (size_t)m, m, t, x);
    } else {
        hpj__pb_cholsolve_d(Ld, m, t, x);
    }
    hpj__pb_ridge_op(R, x, r);
    for (i = 0; i < tm; ++i) r[i] = b[i] - r[i];
    for (it = 0;; ++it) {
        all = 1;
        *relres = 0.0;
        for (c = 0; c < t; ++c) {
            const double *rc = r + (size_t)c * m, *xc = x + (size_t)c * m, *bc = b + (size_t)c * m;
            double rn = sqrt(hpj__pb_dot(rc, rc, m)), xn = sqrt(hpj__pb_dot(xc, xc, m)),
                   bn = sqrt(hpj__pb_dot(bc, bc, m));
            done[c] = rn <= eps * ((normA + R->alpha) * xn + bn);
            all &= done[c];
            if (bn > 0) *relres = HPJ__MAX(*relres, rn / bn);
        }
        if (all || it >= maxit) break;
        memcpy(z, r, sizeof(double) * tm);
        if (Lf) {
            hpj__pb_trsv_lower(Lf, (size_t)m, m, t, z);
            hpj__pb_trsv_upper(Lf, (size_t)m, m, t, z);
        } else {
            hpj__pb_cholsolve_d(Ld, m, t, z);
        }
        for (c = 0; c < t; ++c) {
            double *pc = p + (size_t)c * m;
            const double *zc = z + (size_t)c * m;
            rho[c] = hpj__pb_dot(r + (size_t)c * m, zc, m);
            if (it == 0 || done[c] || !(rho_old[c] != 0.0)) {
                memcpy(pc, zc, sizeof(double) * (size_t)m);
            } else {
                double beta = rho[c] / rho_old[c];
                int j;
                for (j = 0; j < m; ++j) pc[j] = zc[j] + beta * pc[j];
            }
            rho_old[c] = rho[c];
        }
        hpj__pb_ridge_op(R, p, q);
        for (c = 0; c < t; ++c) {
            double *xc = x + (size_t)c * m, *rc = r + (size_t)c * m;
            const double *pc = p + (size_t)c * m, *qc = q + (size_t)c * m;
            double pq = hpj__pb_dot(pc, qc, m), a;
            int j;
            if (done[c] || !(pq > 0.0)) continue;
            a = rho[c] / pq;
            for (j = 0; j < m; ++j) {
                xc[j] += a * pc[j];
                rc[j] -= a * qc[j];
            }
        }
    }
    return all ? it : -1;
}

#define HPJ__PB_PCG_MAXIT 30 /* refinement steps before the double fallback */

HPJDEF hpj_status hpj_ridge_fit(const float *X, const float *Y, int n, int d, int t, const hpj_probe_options *o,
                                hpj_linear_model *out) {
    static const char *fn = "ridge_fit";
    hpj_probe_options def;
    hpj__pb_ridge R;
    hpj__pb_src S;
    hpj_status st;
    void *mem = NULL, *fmem = NULL;
    double *mu, *s, *part, *ybar, *Yc, *B, *x, *r, *z, *p, *q, *Dw;
    float *Cf = NULL, *pa = NULL, *pb = NULL, *Li = NULL;
    double normA = 0.0, relres = 0.0;
    int nb, m, k, i, c, its = -1;
    size_t j;
    if (out) memset(out, 0, sizeof(*out));
    if (!o) {
        hpj_probe_options_default(&def);
        o = &def;
    }
    if (!X || !Y || !out) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !X ? "X" : !Y ? "Y" : "out");
    if (n < 1 || d < 1 || t < 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: need n, d, t >= 1 (got n=%d d=%d t=%d)", fn, n, d, t);
    if (t > 64) return hpj__fail(HPJ_ERR_INPUT, "%s: at most 64 targets per call (got %d)", fn, t);
    if ((st = hpj__pb_check_options(fn, o)) != HPJ_OK) return st;
    nb = hpj__pb_nblk(n);
    R.dual = d > n;
    m = R.dual ? n : d;
    k = R.dual ? d : n;
    {
        size_t sz[22];
        double **pv[22];
        sz[0] = sz[1] = (size_t)d;                     /* mu s */
        sz[2] = (size_t)nb * HPJ__MAX(d, t);           /* part */
        sz[3] = (size_t)t;                             /* ybar */
        sz[4] = (size_t)n * t;                         /* Yc */
        sz[5] = sz[6] = sz[7] = sz[8] = sz[9] = sz[10] = (size_t)t * m; /* B x r z p q */
        sz[11] = (size_t)t * d;                        /* Veff */
        sz[12] = (size_t)t;                            /* ceff */
        sz[13] = (size_t)nb * t * d;                   /* G */
        sz[14] = (size_t)nb * t;                       /* gs */
        sz[15] = (size_t)t * d;                        /* Graw */
        sz[16] = (size_t)t;                            /* gsum */
        sz[17] = (size_t)nb * hpj__pb_pass_work(t);    /* work */
        sz[18] = sz[19] = (size_t)n * t;               /* Zb Rb */
        sz[20] = (size_t)t * d;                        /* u */
        sz[21] = (size_t)2 * HPJ__PB_NB * HPJ__PB_NB;  /* D (Cholesky blocks) */
        pv[0] = &mu;
        pv[1] = &s;
        pv[2] = &part;
        pv[3] = &ybar;
        pv[4] = &Yc;
        pv[5] = &B;
        pv[6] = &x;
        pv[7] = &r;
        pv[8] = &z;
        pv[9] = &p;
        pv[10] = &q;
        pv[11] = &R.Veff;
        pv[12] = &R.ceff;
        pv[13] = &R.G;
        pv[14] = &R.gs;
        pv[15] = &R.Graw;
        pv[16] = &R.gsum;
        pv[17] = &R.work;
        pv[18] = &R.Zb;
        pv[19] = &R.Rb;
        pv[20] = &R.u;
        pv[21] = &Dw;
        mem = hpj__pb_carve(fn, 22, sz, pv);
        if (!mem) return HPJ_ERR_NOMEM;
    }
    if (hpj__pb_colstats(X, n, d, mu, o->standardize ? s : NULL, part)) {
        hpj__free(mem);
        return hpj__pb_bad_value(fn, "X", X, n, d);
    }
    if (!o->standardize)
        for (j = 0; j < (size_t)d; ++j) s[j] = 1.0;
    for (c = 0; c < t; ++c) ybar[c] = 0.0;
    for (i = 0; i < n; ++i)
        for (c = 0; c < t; ++c) ybar[c] += (double)Y[(size_t)i * t + c];
    for (c = 0; c < t; ++c) {
        if (!isfinite(ybar[c])) {
            hpj__free(mem);
            return hpj__pb_bad_value(fn, "Y", Y, n, t);
        }
        ybar[c] /= (double)n;
    }
    for (i = 0; i < n; ++i)
        for (c = 0; c < t; ++c) Yc[(size_t)i * t + c] = (double)Y[(size_t)i * t + c] - ybar[c];
    R.X = X;
    R.n = n;
    R.d = d;
    R.t = t;
    R.nb = nb;
    R.m = m;
    R.mu = mu;
    R.s = s;
    R.alpha = o->alpha;
    if (R.dual) {
        for (c = 0; c < t; ++c)
            for (i = 0; i < n; ++i) B[(size_t)c * n + i] = Yc[(size_t)i * t + c];
    } else {
        hpj__pb_ridge_atr(&R, Yc, B);
    }
    S.p = X;
    S.ld = (size_t)d;
    S.trans = !R.dual; /* primal Gram A^T A: rows of the operand are X's columns */
    S.mu = mu;
    S.s = s;
    if (o->precision == HPJ_PROBE_MIXED && o->alpha > 0) { /* alpha = 0: straight to double */
        size_t fsz, szA, szB, szL, mm;
        int attempt;
        if (hpj__mul_size((size_t)m, (size_t)m, &mm)) mm = SIZE_MAX;
        szA = hpj__pb_packsize(m, HPJ__PB_MR);
        szB = hpj__pb_packsize(HPJ__MAX(m, HPJ__PB_NB), HPJ__PB_NR);
        szL = (size_t)HPJ__PB_NB * HPJ__PB_NB;
        fsz = mm;
        if (mm == SIZE_MAX || hpj__add_size(fsz, szA + szB + szL + 64, &fsz) ||
            hpj__mul_size(fsz, sizeof(float), &fsz)) {
            hpj__free(mem);
            return hpj__fail(HPJ_ERR_NOMEM, "%s: a %d x %d Gram matrix is too large", fn, m, m);
        }
        fmem = hpj__alloc(fsz, fn);
        if (!fmem) {
            hpj__free(mem);
            return HPJ_ERR_NOMEM;
        }
        Cf = (float *)(((uintptr_t)fmem + 63) & ~(uintptr_t)63);
        pa = Cf + mm;
        pb = pa + szA;
        Li = pb + szB;
        for (attempt = 0; attempt < 2; ++attempt) {
            double maxdiag = 0.0, shift;
            hpj__pb_gemm(&S, m, &S, m, k, Cf, (size_t)m, 0, 1, pa, pb);
            normA = 0.0;
            for (i = 0; i < m; ++i) {
                normA += (double)Cf[(size_t)i * m + i];
                maxdiag = HPJ__MAX(maxdiag, (double)Cf[(size_t)i * m + i]);
            }
            /* a float factor of a nearly singular matrix may break down:
               the second attempt shifts the diagonal (PCG corrects it) */
            shift = attempt ? 1e-5 * maxdiag + 1e-30 : 0.0;
            for (i = 0; i < m; ++i) Cf[(size_t)i * m + i] += (float)(o->alpha + shift);
            if (hpj__pb_potrf(Cf, (size_t)m, m, Dw, Li, pa, pb) >= 0) continue;
            its = hpj__pb_pcg(&R, Cf, NULL, B, x, r, z, p, q, normA, HPJ__PB_PCG_MAXIT, &relres);
            break; /* factored: PCG converged or the double path takes over */
        }
        hpj__free(fmem);
    }
    if (its < 0) { /* HPJ_PROBE_DOUBLE, or the mixed path could not converge */
        size_t dsz, mm;
        double *Cd, *slab;
        int bad;
        if (hpj__mul_size((size_t)m, (size_t)m, &mm) || hpj__add_size(mm, (size_t)m * HPJ__PB_KC + 8, &dsz) ||
            hpj__mul_size(dsz, sizeof(double), &dsz)) {
            hpj__free(mem);
            return hpj__fail(HPJ_ERR_NOMEM, "%s: a %d x %d Gram matrix is too large", fn, m, m);
        }
        fmem = hpj__alloc(dsz, fn);
        if (!fmem) {
            hpj__free(mem);
            return HPJ_ERR_NOMEM;
        }
        Cd = (double *)fmem;
        slab = Cd + mm;
        hpj__pb_gram_d(&S, m, k, Cd, slab);
        normA = 0.0;
        for (i = 0; i < m; ++i) {
            normA += Cd[(size_t)i * m + i];
            Cd[(size_t)i * m + i] += o->alpha;
        }
        bad = hpj__pb_potrf_d(Cd, m);
        if (bad >= 0) {
            hpj__free(fmem);
            hpj__free(mem);
            return hpj__fail(HPJ_ERR_NUMERIC,
                             "%s: the %s system (%d x %d) is singular at pivot %d (alpha = %g); use alpha > 0", fn,
                             R.dual ? "dual" : "primal", m, m, bad, o->alpha);
        }
        its = hpj__pb_pcg(&R, NULL, Cd, B, x, r, z, p, q, normA, 3, &relres);
        if (its < 0) its = 3;
        hpj__free(fmem);
    }
    /* weights in the original feature space */
    out->W = (float *)hpj__alloc(sizeof(float) * (size_t)t * d, fn);
    out->b = (float *)hpj__alloc(sizeof(float) * (size_t)t, fn);
    if (!out->W || !out->b) {
        hpj__free(mem);
        hpj_linear_model_free(out);
        return HPJ_ERR_NOMEM;
    }
    {
        double *w = R.u; /* (t, d) */
        if (R.dual) {
            for (i = 0; i < n; ++i)
                for (c = 0; c < t; ++c) R.Rb[(size_t)i * t + c] = x[(size_t)c * n + i];
            hpj__pb_ridge_atr(&R, R.Rb, w);
        } else {
            memcpy(w, x, sizeof(double) * (size_t)t * d);
        }
        for (c = 0; c < t; ++c) {
            double *wc = w + (size_t)c * d;
            for (j = 0; j < (size_t)d; ++j) {
                wc[j] *= s[j];
                out->W[(size_t)c * d + j] = (float)wc[j];
            }
            out->b[c] = (float)(ybar[c] - hpj__pb_dot(wc, mu, d));
        }
    }
    out->d = d;
    out->c = t;
    out->iters = its;
    out->grad_norm = relres;
    hpj__free(mem);
    return HPJ_OK;
}

/* ==== probe: prediction and folds ======================================== */

HPJDEF void hpj_linear_model_predict(const hpj_linear_model *m, const float *X, int n, float *scores) {
    int i;
    if (!m || !m->W || !m->b || !X || !scores || n < 1) return;
    HPJ__OMP(parallel for schedule(static) if ((double)n * m->d * m->c > HPJ__PB_PAR))
    for (i = 0; i < n; ++i) {
        const float *x = X + (size_t)i * m->d;
        int c;
        for (c = 0; c < m->c; ++c)
            scores[(size_t)i * m->c + c] = (float)((double)m->b[c] + hpj__pb_dotff(x, m->W + (size_t)c * m->d, m->d));
    }
}

HPJDEF int32_t hpj_argmax_row(const float *s, int c) {
    int32_t best = 0;
    int k, found = 0;
    if (!s) return 0;
    for (k = 0; k < c; ++k) {
        if (s[k] != s[k]) continue;
        if (!found || s[k] > s[best]) {
            best = (int32_t)k;
            found = 1;
        }
    }
    return best;
}

HPJDEF double hpj_linear_model_accuracy(const hpj_linear_model *m, const float *X, const int32_t *y, int n) {
    long hits = 0;
    int i;
    if (!m || !m->W || !m->b || !X || !y || n < 1) return 0.0;
    HPJ__OMP(parallel for schedule(static) reduction(+ : hits) if ((double)n * m->d * m->c > HPJ__PB_PAR))
    for (i = 0; i < n; ++i) {
        const float *x = X + (size_t)i * m->d;
        float best = 0.0f;
        int c, arg = 0, found = 0;
        for (c = 0; c < m->c; ++c) {
            float v = (float)((double)m->b[c] + hpj__pb_dotff(x, m->W + (size_t)c * m->d, m->d));
            if (v != v) continue;
            if (!found || v > best) {
                best = v;
                arg = c;
                found = 1;
            }
        }
        hits += (arg == y[i]);
    }
    return (double)hits / (double)n;
}

HPJDEF hpj_status hpj_stratified_folds(const int32_t *y, int n, int C, int k, uint64_t seed, int32_t *fold) {
    static const char *fn = "stratified_folds";
    int32_t *cnt, *start, *idx;
    int i, c, pos = 0;
    if (!y || !fold) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !y ? "y" : "fold");
    if (C < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: need C >= 1 (got %d)", fn, C);
    if (k < 2 || k > n) return hpj__fail(HPJ_ERR_INPUT, "%s: need 2 <= k <= n (got k=%d n=%d)", fn, k, n);
    for (i = 0; i < n; ++i)
        if (y[i] < 0 || y[i] >= C)
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
    cnt = (int32_t *)hpj__calloc((size_t)2 * C + (size_t)n, sizeof(int32_t), fn);
    if (!cnt) return HPJ_ERR_NOMEM;
    start = cnt + C;
    idx = start + C;
    for (i = 0; i < n; ++i) ++cnt[y[i]];
    for (c = 1; c < C; ++c) start[c] = start[c - 1] + cnt[c - 1];
    for (i = 0; i < n; ++i) idx[start[y[i]]++] = (int32_t)i; /* stable by index */
    for (c = 0; c < C; ++c) start[c] -= cnt[c];
    for (c = 0; c < C; ++c) {
        hpj_rng r = hpj_rng_stream(seed, 0, (uint64_t)c);
        int q;
        hpj_rng_shuffle_i32(&r, idx + start[c], cnt[c]);
        for (q = 0; q < cnt[c]; ++q) fold[idx[start[c] + q]] = (int32_t)((pos + q) % k);
        pos = (pos + cnt[c]) % k;
    }
    hpj__free(cnt);
    return HPJ_OK;
}

/* ==== probe: task-specific resolution weighting ========================== */

/* theta = [b (L), W (K, D), c (K)]; a row's mixture
   h_i = sum_l softmax(b)_l (H_il - m_l), features a_i = h_i .* s,
   scores z_i = W a_i + c. */
typedef struct hpj__pb_rw {
    const float *H;
    int L, D, K, kind, nb;
    const int32_t *y;       /* (n) labels, classification              */
    const double *yc;       /* (n) centred targets, regression         */
    const int32_t *rows;    /* rows evaluated                          */
    int nr;
    const double *m, *s;    /* (L, D) per-resolution means, (D) scales */
    double alpha, pen;      /* penalty: pen/2 ||W||^2 (pen = alpha or 2 alpha) */
    double *om, *mo, *Weff; /* (L) softmax(b), (D) sum_l om_l m_l, (K, D) */
    double *part;           /* (nb, K D + K + L + D) block partials    */
    double *scratch;        /* (nb, 3 D + 2 K)                         */
    double loss[HPJ__PB_MAXBLK];
} hpj__pb_rw;

static size_t hpj__pb_rw_plen(const hpj__pb_rw *R) { return (size_t)R->K * R->D + (size_t)R->K + R->L + R->D; }

static void hpj__pb_rw_block(hpj__pb_rw *R, const double *theta, int blk, int grad) {
    const int L = R->L, D = R->D, K = R->K;
    const double *cc = theta + L + (size_t)K * D;
    double *pt = R->part + (size_t)blk * hpj__pb_rw_plen(R);
    double *dW = pt, *dc = pt + (size_t)K * D, *dw = dc + K, *gsum = dw + L;
    double *h = R->scratch + (size_t)blk * (3 * (size_t)D + 2 * (size_t)K), *a = h + D, *gv = a + D;
    double *z = gv + D, *r = z + K, lsum = 0.0;
    const int i0 = hpj__pb_lo(R->nr, R->nb, blk), i1 = hpj__pb_lo(R->nr, R->nb, blk + 1);
    int ii, l, k, j;
    if (grad) memset(pt, 0, sizeof(double) * hpj__pb_rw_plen(R));
    for (ii = i0; ii < i1; ++ii) {
        const int i = R->rows[ii];
        const float *Hi = R->H + (size_t)i * L * D;
        for (j = 0; j < D; ++j) h[j] = -R->mo[j];
        for (l = 0; l < L; ++l) {
            const float *hl = Hi + (size_t)l * D;
            const double w = R->om[l];
            for (j = 0; j < D; ++j) h[j] += w * (double)hl[j];
        }
        for (j = 0; j < D; ++j) a[j] = h[j] * R->s[j];
        for (k = 0; k < K; ++k) z[k] = cc[k] + hpj__pb_dot(R->Weff + (size_t)k * D, h, D);
        if (R->kind == HPJ__PB_SQUARED) lsum += hpj__pb_loss_row(R->kind, K, z, 0, R->yc + i, grad ? r : NULL);
        else lsum += hpj__pb_loss_row(R->kind, K, z, R->y[i], NULL, grad ? r : NULL);
        if (!grad) continue;
        for (k = 0; k < K; ++k) {
            double *dWk = dW + (size_t)k * D;
            const double rk = r[k];
            dc[k] += rk;
            for (j = 0; j < D; ++j) dWk[j] += rk * a[j];
        }
        for (j = 0; j < D; ++j) gv[j] = 0.0;
        for (k = 0; k < K; ++k) {
            const double rk = r[k], *we = R->Weff + (size_t)k * D;
            for (j = 0; j < D; ++j) gv[j] += rk * we[j];
        }
        for (l = 0; l < L; ++l) dw[l] += hpj__pb_dotf(Hi + (size_t)l * D, gv, D);
        for (j = 0; j < D; ++j) gsum[j] += gv[j];
    }
    R->loss[blk] = lsum;
}

/* Sum of losses over R->rows; with g, the gradient of that sum plus the
   penalty (the penalty's value is added by the caller). */
static double hpj__pb_rw_eval(hpj__pb_rw *R, const double *theta, double *g) {
    const int L = R->L, D = R->D, K = R->K;
    const double *b = theta, *W = theta + L;
    double mx = b[0], se = 0.0, F = 0.0;
    int l, j, k, blk;
    for (l = 1; l < L; ++l) mx = HPJ__MAX(mx, b[l]);
    for (l = 0; l < L; ++l) se += (R->om[l] = exp(b[l] - mx));
    for (l = 0; l < L; ++l) R->om[l] /= se;
    for (j = 0; j < D; ++j) {
        double v = 0.0;
        for (l = 0; l < L; ++l) v += R->om[l] * R->m[(size_t)l * D + j];
        R->mo[j] = v;
    }
    for (k = 0; k < K; ++k)
        for (j = 0; j < D; ++j) R->Weff[(size_t)k * D + j] = W[(size_t)k * D + j] * R->s[j];
    R->nb = hpj__pb_nblk(R->nr);
    HPJ__OMP(parallel for schedule(dynamic, 1) if (R->nb > 1 && (double)R->nr * R->L * R->D > HPJ__PB_PAR))
    for (blk = 0; blk < R->nb; ++blk) hpj__pb_rw_block(R, theta, blk, g != NULL);
    for (blk = 0; blk < R->nb; ++blk) F += R->loss[blk];
    if (g) {
        const size_t plen = hpj__pb_rw_plen(R);
        double *tot = R->part + (size_t)R->nb * plen; /* one spare slot after the blocks */
        double *dW, *dc, *dw, *gsum, avg = 0.0;
        hpj__pb_reduce(R->part, R->nb, plen, tot);
        dW = tot;
        dc = dW + (size_t)K * D;
        dw = dc + K;
        gsum = dw + L;
        for (l = 0; l < L; ++l) {
            dw[l] -= hpj__pb_dot(R->m + (size_t)l * D, gsum, D);
            avg += R->om[l] * dw[l];
        }
        for (l = 0; l < L; ++l) g[l] = R->om[l] * (dw[l] - avg);
        for (k = 0; k < K * D; ++k) g[L + k] = dW[k] + R->pen * W[k];
        for (k = 0; k < K; ++k) g[L + (size_t)K * D + k] = dc[k];
    }
    return F;
}

HPJDEF hpj_status hpj_resweight_fit_ex(const float *H, int n, int L, int D, const int32_t *y, const float *yreg, int C,
                                       float lambda, uint64_t seed, const hpj_probe_options *o, float *omega,
                                       float *logits, hpj_resweight_info *info) {
    static const char *fn = "resweight_fit";
    hpj_probe_options def;
    hpj__pb_rw R;
    hpj__pb_lbfgs Hs;
    hpj_status st;
    void *mem = NULL;
    int32_t *rows = NULL, *fold = NULL;
    double *theta, *theta1, *g, *g1, *p, *mean, *scale, *bbest, *ycd;
    size_t P, KD, j;
    int i, l, it, phase, ntr = 0, nval = 0, iters = 0, best_it = 0, K;
    uint64_t st2;
    double F, F1, val = 0.0, best_val = 0.0, thresh = 0.0, gmax;
    if (!o) {
        hpj_probe_options_default(&def);
        o = &def;
    }
    if (!H || !omega) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !H ? "H" : "omega");
    if (n < 2 || L < 1 || D < 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: need n >= 2, L >= 1, D >= 1 (got n=%d L=%d D=%d)", fn, n, L, D);
    if (!(lambda >= 0.0f && lambda <= 1.0f))
        return hpj__fail(HPJ_ERR_INPUT, "%s: lambda must be in [0, 1] (got %g)", fn, (double)lambda);
    if (C == 1 || C < 0)
        return hpj__fail(HPJ_ERR_INPUT, "%s: C must be 0 (regression) or >= 2 (got %d)", fn, C);
    if (C >= 2 && !y) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL y for classification (C = %d)", fn, C);
    if (C == 0 && !yreg) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL yreg for regression (C = 0)", fn);
    if ((st = hpj__pb_check_options(fn, o)) != HPJ_OK) return st;
    for (i = 0; i < n; ++i) {
        if (C >= 2 && (y[i] < 0 || y[i] >= C))
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
        if (C == 0 && !isfinite(yreg[i]))
            return hpj__fail(HPJ_ERR_NUMERIC, "%s: yreg[%d] is %s", fn, i, yreg[i] != yreg[i] ? "nan" : "inf");
    }
    {
        size_t idx, tot = (size_t)n * L * D;
        for (idx = 0; idx < tot; ++idx)
            if (!isfinite(H[idx]))
                return hpj__fail(HPJ_ERR_NUMERIC, "%s: H[%zu,%zu,%zu] is %s", fn, idx / ((size_t)L * D),
                                 (idx / (size_t)D) % (size_t)L, idx % (size_t)D, H[idx] != H[idx] ? "nan" : "inf");
    }
    if (info) memset(info, 0, sizeof(*info));
    if (lambda == 1.0f || L == 1) { /* uniform: nothing to learn */
        for (l = 0; l < L; ++l) {
            omega[l] = (float)(1.0 / L);
            if (logits) logits[l] = 0.0f;
        }
        return HPJ_OK;
    }
    /* inner split */
    rows = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n * 2, fn);
    if (!rows) return HPJ_ERR_NOMEM;
    fold = rows + n;
    st2 = seed ^ 0x7265737765696768ULL; /* "resweigh" */
    st2 = hpj_splitmix64(&st2);
    if (C >= 2) {
        st = hpj_stratified_folds(y, n, C, HPJ__MIN(5, n), st2, fold);
        if (st != HPJ_OK) {
            hpj__free(rows);
            return st;
        }
    } else {
        hpj_rng r = hpj_rng_stream(st2, 0, 0);
        int nv = HPJ__MAX(1, (int)floor(0.2 * n + 0.5));
        for (i = 0; i < n; ++i) rows[i] = (int32_t)i;
        hpj_rng_shuffle_i32(&r, rows, (int32_t)n);
        for (i = 0; i < n; ++i) fold[rows[i]] = i < nv ? 0 : 1;
    }
    for (i = 0; i < n; ++i) /* rows: inner-train first, then validation, each by index */
        if (fold[i] != 0) rows[ntr++] = (int32_t)i;
    for (i = 0; i < n; ++i)
        if (fold[i] == 0) rows[ntr + nval++] = (int32_t)i;
    K = (C == 2 || C == 0) ? 1 : C;
    KD = (size_t)K * D;
    P = (size_t)L + KD + (size_t)K;
    memset(&R, 0, sizeof(R));
    R.H = H;
    R.L = L;
    R.D = D;
    R.K = K;
    R.kind = C == 0 ? HPJ__PB_SQUARED : (C == 2 ? HPJ__PB_BINARY : HPJ__PB_SOFTMAX);
    R.y = y;
    R.alpha = o->alpha;
    R.pen = C == 0 ? 2.0 * o->alpha : o->alpha;
    {
        size_t sz[16];
        double **pv[16];
        const int nbmax = hpj__pb_nblk(n);
        sz[0] = sz[1] = sz[2] = sz[3] = sz[4] = P;
        sz[5] = sz[6] = (size_t)HPJ__PB_LBFGS_M * P;
        sz[7] = (size_t)L * D;  /* mean */
        sz[8] = (size_t)D;      /* scale */
        sz[9] = (size_t)L;      /* bbest */
        sz[10] = (size_t)n;     /* ycd */
        sz[11] = (size_t)L;     /* om */
        sz[12] = (size_t)D;     /* mo */
        sz[13] = KD;            /* Weff */
        sz[14] = ((size_t)nbmax + 1) * ((size_t)K * D + K + L + D); /* part (+ total) */
        sz[15] = (size_t)nbmax * (3 * (size_t)D + 2 * (size_t)K);  /* scratch */
        pv[0] = &theta;
        pv[1] = &theta1;
        pv[2] = &g;
        pv[3] = &g1;
        pv[4] = &p;
        pv[5] = &Hs.S;
        pv[6] = &Hs.Y;
        pv[7] = &mean;
        pv[8] = &scale;
        pv[9] = &bbest;
        pv[10] = &ycd;
        pv[11] = &R.om;
        pv[12] = &R.mo;
        pv[13] = &R.Weff;
        pv[14] = &R.part;
        pv[15] = &R.scratch;
        mem = hpj__pb_carve(fn, 16, sz, pv);
        if (!mem) {
            hpj__free(rows);
            return HPJ_ERR_NOMEM;
        }
    }
    /* inner-train statistics: per-resolution means; scale of the uniform mixture */
    for (j = 0; j < (size_t)L * D; ++j) mean[j] = 0.0;
    for (i = 0; i < ntr; ++i) {
        const float *Hi = H + (size_t)rows[i] * L * D;
        for (j = 0; j < (size_t)L * D; ++j) mean[j] += (double)Hi[j];
    }
    for (j = 0; j < (size_t)L * D; ++j) mean[j] /= (double)ntr;
    for (j = 0; j < (size_t)D; ++j) scale[j] = 1.0;
    if (o->standardize) {
        for (j = 0; j < (size_t)D; ++j) scale[j] = 0.0;
        for (i = 0; i < ntr; ++i) {
            const float *Hi = H + (size_t)rows[i] * L * D;
            for (j = 0; j < (size_t)D; ++j) {
                double u = 0.0;
                for (l = 0; l < L; ++l) u += (double)Hi[(size_t)l * D + j] - mean[(size_t)l * D + j];
                u /= (double)L;
                scale[j] += u * u;
            }
        }
        for (j = 0; j < (size_t)D; ++j) {
            double sd = sqrt(scale[j] / (double)ntr);
            scale[j] = sd > 1e-12 ? 1.0 / sd : 1.0;
        }
    }
    if (C == 0) {
        double yb = 0.0;
        for (i = 0; i < ntr; ++i) yb += (double)yreg[rows[i]];
        yb /= (double)ntr;
        for (i = 0; i < n; ++i) ycd[i] = (double)yreg[i] - yb;
        R.yc = ycd;
    }
    R.m = mean;
    R.s = scale;
    Hs.P = (int)P;
    Hs.m = HPJ__PB_LBFGS_M;
    Hs.cnt = 0;
    Hs.head = 0;
    memset(theta, 0, sizeof(double) * P);
#define HPJ__PB_RW_PEN(th) (0.5 * R.pen * hpj__pb_dotn((th) + L, (th) + L, KD))
    /* phase 0: the head alone on the uniform mixture (b frozen at 0), to
       the gradient test; phase 1: b and the head jointly, the validation
       loss checked after every iteration. */
    for (phase = 0; phase < 2; ++phase) {
        R.rows = rows;
        R.nr = ntr;
        F = hpj__pb_rw_eval(&R, theta, g) + HPJ__PB_RW_PEN(theta);
        if (phase == 0) memset(g, 0, sizeof(double) * (size_t)L);
        gmax = hpj__pb_maxabs(g, P);
        if (phase == 0) thresh = o->tol * HPJ__MAX(1.0, gmax);
        Hs.cnt = 0;
        Hs.head = 0;
        if (phase == 1) {
            R.rows = rows + ntr;
            R.nr = nval;
            best_val = val = hpj__pb_rw_eval(&R, theta, NULL) / (double)nval;
            memcpy(bbest, theta, sizeof(double) * (size_t)L);
        }
        for (it = 1; it <= HPJ_RESWEIGHT_ITERS && gmax > thresh && isfinite(F); ++it) {
            double d0, t = 1.0;
            int ls, ok = 0;
            hpj__pb_lbfgs_dir(&Hs, g, p);
            d0 = hpj__pb_dotn(g, p, P);
            if (!(d0 < 0)) {
                Hs.cnt = 0;
                hpj__pb_lbfgs_dir(&Hs, g, p);
                d0 = hpj__pb_dotn(g, p, P);
            }
            if (Hs.cnt == 0) t = 1.0 / sqrt(hpj__pb_dotn(p, p, P));
            R.rows = rows;
            R.nr = ntr;
            for (ls = 0; ls < 40; ++ls, t *= 0.5) { /* backtracking Armijo */
                for (j = 0; j < P; ++j) theta1[j] = theta[j] + t * p[j];
                F1 = hpj__pb_rw_eval(&R, theta1, g1) + HPJ__PB_RW_PEN(theta1);
                if (isfinite(F1) && F1 <= F + 1e-4 * t * d0 + 8.0 * DBL_EPSILON * fabs(F)) {
                    ok = 1;
                    break;
                }
            }
            if (!ok) break; /* no decrease representable: done */
            if (phase == 0) memset(g1, 0, sizeof(double) * (size_t)L);
            hpj__pb_lbfgs_push(&Hs, theta1, theta, g1, g);
            {
                double *tmp = theta;
                theta = theta1;
                theta1 = tmp;
                tmp = g;
                g = g1;
                g1 = tmp;
            }
            F = F1;
            gmax = hpj__pb_maxabs(g, P);
            if (phase == 0) continue;
            iters = it;
            R.rows = rows + ntr;
            R.nr = nval;
            val = hpj__pb_rw_eval(&R, theta, NULL) / (double)nval;
            if (val < best_val) {
                best_val = val;
                best_it = it;
                memcpy(bbest, theta, sizeof(double) * (size_t)L);
            }
            if (it - best_it >= HPJ_RESWEIGHT_PATIENCE) break; /* early stopping */
        }
    }
#undef HPJ__PB_RW_PEN
    {
        double mx = bbest[0], se = 0.0;
        for (l = 1; l < L; ++l) mx = HPJ__MAX(mx, bbest[l]);
        for (l = 0; l < L; ++l) se += exp(bbest[l] - mx);
        for (l = 0; l < L; ++l) {
            omega[l] = (float)((1.0 - (double)lambda) * exp(bbest[l] - mx) / se + (double)lambda / L);
            if (logits) logits[l] = (float)bbest[l];
        }
    }
    if (info) {
        info->n_train = ntr;
        info->n_val = nval;
        info->iters = iters;
        info->best_iter = best_it;
        info->val_loss_best = best_val;
        info->val_loss_last = val;
    }
    hpj__free(mem);
    hpj__free(rows);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_resweight_fit(const float *H, int n, int L, int D, const int32_t *y, const float *yreg, int C,
                                    float lambda, uint64_t seed, const hpj_probe_options *o, float *omega) {
    return hpj_resweight_fit_ex(H, n, L, D, y, yreg, C, lambda, seed, o, omega, NULL, NULL);
}

HPJDEF void hpj_resweight_apply(float *out, const float *H, const float *omega, int n, int L, int D) {
    int i;
    if (!out || !H || !omega || n < 1 || L < 1 || D < 1) return;
    HPJ__OMP(parallel for schedule(static) if ((double)n * L * D > HPJ__PB_PAR))
    for (i = 0; i < n; ++i) {
        const float *Hi = H + (size_t)i * L * D;
        float *o = out + (size_t)i * D;
        int j, l;
        for (j = 0; j < D; ++j) {
            double v = 0.0;
            for (l = 0; l < L; ++l) v += (double)omega[l] * (double)Hi[(size_t)l * D + j];
            o[j] = (float)v;
        }
    }
}
#endif /* HPJ_WIP_PROBE_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
