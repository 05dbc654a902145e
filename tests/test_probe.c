/* Tests of the probe module: ridge, logistic regression, stratified folds,
   task-specific resolution weighting. References are computed here in
   double from first principles (normal equations, Newton's method). */
#include "test.h"
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- helpers ---- */

static float *rand_matrix(int n, int d, uint64_t seed, double scale) {
    hpj_rng r = hpj_rng_stream(seed, 1, 2);
    float *X = (float *)malloc(sizeof(float) * (size_t)n * d);
    int i;
    for (i = 0; i < n * d; ++i) X[i] = (float)(scale * hpj_rng_normal(&r));
    return X;
}

/* Solves A x = b in place (A (m, m) symmetric positive definite, lower
   Cholesky). Returns 0, or -1 if not positive definite. */
static int chol_solve(double *A, int m, double *b) {
    int i, j, k;
    for (j = 0; j < m; ++j) {
        double s = A[j * m + j];
        for (k = 0; k < j; ++k) s -= A[j * m + k] * A[j * m + k];
        if (!(s > 0)) return -1;
        A[j * m + j] = sqrt(s);
        for (i = j + 1; i < m; ++i) {
            double t = A[i * m + j];
            for (k = 0; k < j; ++k) t -= A[i * m + k] * A[j * m + k];
            A[i * m + j] = t / A[j * m + j];
        }
    }
    for (i = 0; i < m; ++i) {
        double s = b[i];
        for (k = 0; k < i; ++k) s -= A[i * m + k] * b[k];
        b[i] = s / A[i * m + i];
    }
    for (i = m - 1; i >= 0; --i) {
        double s = b[i];
        for (k = i + 1; k < m; ++k) s -= A[k * m + i] * b[k];
        b[i] = s / A[i * m + i];
    }
    return 0;
}

/* Column means and inverse population stds (1 for constant columns). */
static void col_stats(const float *X, int n, int d, int standardize, double *mu, double *s) {
    int i, j;
    for (j = 0; j < d; ++j) {
        double m = 0, v = 0;
        for (i = 0; i < n; ++i) m += X[i * d + j];
        m /= n;
        for (i = 0; i < n; ++i) v += (X[i * d + j] - m) * (X[i * d + j] - m);
        v = sqrt(v / n);
        mu[j] = m;
        s[j] = (standardize && v > 1e-12 * (1 + fabs(m))) ? 1.0 / v : 1.0;
    }
}

/* Ridge by the primal normal equations in double: W (t, d), b (t). */
static int ridge_ref(const float *X, const float *Y, int n, int d, int t, double alpha, int standardize, double *W,
                     double *b) {
    double *mu = (double *)malloc(sizeof(double) * d), *s = (double *)malloc(sizeof(double) * d);
    double *A = (double *)malloc(sizeof(double) * d * d), *r = (double *)malloc(sizeof(double) * d);
    int i, j, k, c, rc = 0;
    col_stats(X, n, d, standardize, mu, s);
    for (c = 0; c < t && !rc; ++c) {
        double yb = 0;
        for (i = 0; i < n; ++i) yb += Y[i * t + c];
        yb /= n;
        for (j = 0; j < d; ++j) {
            r[j] = 0;
            for (i = 0; i < n; ++i) r[j] += (X[i * d + j] - mu[j]) * s[j] * (Y[i * t + c] - yb);
            for (k = 0; k <= j; ++k) {
                double g = 0;
                for (i = 0; i < n; ++i) g += (X[i * d + j] - mu[j]) * s[j] * (X[i * d + k] - mu[k]) * s[k];
                A[j * d + k] = A[k * d + j] = g;
            }
            A[j * d + j] += alpha;
        }
        rc = chol_solve(A, d, r);
        b[c] = yb;
        for (j = 0; j < d; ++j) {
            W[c * d + j] = r[j] * s[j];
            b[c] -= W[c * d + j] * mu[j];
        }
    }
    free(mu);
    free(s);
    free(A);
    free(r);
    return rc;
}

/* Largest |a - b| relative to max(1, max|b|). */
static double rel_diff(const float *a, const double *b, int len) {
    double m = 1, e = 0;
    int i;
    for (i = 0; i < len; ++i) m = fmax(m, fabs(b[i]));
    for (i = 0; i < len; ++i) e = fmax(e, fabs(a[i] - b[i]));
    return e / m;
}

/* Gradient of sum_i CE(softmax(W x_i + b), y_i) + alpha/2 ||W||^2 at a
   model (the multinomial form, C rows), in double. g: (C, d + 1). */
static void softmax_grad(const hpj_linear_model *m, const float *X, const int32_t *y, int n, double alpha, double *g) {
    const int C = m->c, d = m->d;
    int i, c, j;
    double z[16];
    memset(g, 0, sizeof(double) * C * (d + 1));
    for (i = 0; i < n; ++i) {
        double mx = -1e300, se = 0;
        for (c = 0; c < C; ++c) {
            z[c] = m->b[c];
            for (j = 0; j < d; ++j) z[c] += (double)m->W[c * d + j] * X[i * d + j];
            mx = fmax(mx, z[c]);
        }
        for (c = 0; c < C; ++c) se += exp(z[c] - mx);
        for (c = 0; c < C; ++c) {
            double r = exp(z[c] - mx) / se - (c == y[i]);
            for (j = 0; j < d; ++j) g[c * (d + 1) + j] += r * X[i * d + j];
            g[c * (d + 1) + d] += r;
        }
    }
    for (c = 0; c < C; ++c)
        for (j = 0; j < d; ++j) g[c * (d + 1) + j] += alpha * m->W[c * d + j];
}

/* Multinomial logistic regression by damped Newton in double, with the
   last intercept pinned to 0 (softmax is invariant to a common shift).
   Features are optionally z-scored; W (C, d), b (C) in original space. */
static int newton_softmax(const float *X, const int32_t *y, int n, int d, int C, double alpha, int standardize,
                          double *W, double *b) {
    const int P = C * d + (C - 1);
    double *th = (double *)calloc(P, sizeof(double)), *g = (double *)malloc(sizeof(double) * P);
    double *H = (double *)malloc(sizeof(double) * P * P), *mu = (double *)malloc(sizeof(double) * d);
    double *s = (double *)malloc(sizeof(double) * d), *a = (double *)malloc(sizeof(double) * (d + 1));
    double z[16], p[16];
    int it, i, c, c2, j, k, rc = -1;
    col_stats(X, n, d, standardize, mu, s);
    if (!standardize)
        for (j = 0; j < d; ++j) mu[j] = 0;
    for (it = 0; it < 100; ++it) {
        double gn = 0, f0 = 0, t;
        memset(g, 0, sizeof(double) * P);
        memset(H, 0, sizeof(double) * P * P);
        for (i = 0; i < n; ++i) {
            double mx = -1e300, se = 0;
            for (j = 0; j < d; ++j) a[j] = (X[i * d + j] - mu[j]) * s[j];
            for (c = 0; c < C; ++c) {
                z[c] = c < C - 1 ? th[C * d + c] : 0;
                for (j = 0; j < d; ++j) z[c] += th[c * d + j] * a[j];
                mx = fmax(mx, z[c]);
            }
            for (c = 0; c < C; ++c) se += exp(z[c] - mx);
            for (c = 0; c < C; ++c) p[c] = exp(z[c] - mx) / se;
            f0 += mx + log(se) - z[y[i]];
            /* parameter index of (class c, feature j) with j == d the bias */
            for (c = 0; c < C; ++c) {
                double r = p[c] - (c == y[i]);
                for (j = 0; j <= d; ++j) {
                    int pj = j < d ? c * d + j : (c < C - 1 ? C * d + c : -1);
                    double aj = j < d ? a[j] : 1.0;
                    if (pj < 0) continue;
                    g[pj] += r * aj;
                    for (c2 = 0; c2 < C; ++c2) {
                        double h = (c == c2) * p[c] - p[c] * p[c2];
                        for (k = 0; k <= d; ++k) {
                            int pk = k < d ? c2 * d + k : (c2 < C - 1 ? C * d + c2 : -1);
                            if (pk < 0) continue;
                            H[pj * P + pk] += h * aj * (k < d ? a[k] : 1.0);
                        }
                    }
                }
            }
        }
        for (j = 0; j < C * d; ++j) {
            g[j] += alpha * th[j];
            H[j * P + j] += alpha;
            f0 += 0.5 * alpha * th[j] * th[j];
        }
        for (j = 0; j < P; ++j) gn = fmax(gn, fabs(g[j]));
        if (gn < 1e-11 * n) {
            rc = 0;
            break;
        }
        if (chol_solve(H, P, g)) break;
        /* damped step: halve until the objective decreases */
        for (t = 1.0; t > 1e-8; t *= 0.5) {
            double f1 = 0;
            for (i = 0; i < n; ++i) {
                double mx = -1e300, se = 0;
                for (c = 0; c < C; ++c) {
                    z[c] = c < C - 1 ? th[C * d + c] - t * g[C * d + c] : 0;
                    for (j = 0; j < d; ++j) z[c] += (th[c * d + j] - t * g[c * d + j]) * (X[i * d + j] - mu[j]) * s[j];
                    mx = fmax(mx, z[c]);
                }
                for (c = 0; c < C; ++c) se += exp(z[c] - mx);
                f1 += mx + log(se) - z[y[i]];
            }
            for (j = 0; j < C * d; ++j) f1 += 0.5 * alpha * (th[j] - t * g[j]) * (th[j] - t * g[j]);
            if (f1 <= f0 + 1e-12 * fabs(f0)) break; /* rounding-level slack */
        }
        for (j = 0; j < P; ++j) th[j] -= t * g[j];
    }
    for (c = 0; c < C; ++c) {
        b[c] = c < C - 1 ? th[C * d + c] : 0;
        for (j = 0; j < d; ++j) {
            W[c * d + j] = th[c * d + j] * s[j];
            b[c] -= W[c * d + j] * mu[j];
        }
    }
    free(th);
    free(g);
    free(H);
    free(mu);
    free(s);
    free(a);
    return rc;
}

/* Gaussian classes: class c has mean shift `sep` along feature c % d. */
static void make_classes(int n, int d, int C, double sep, uint64_t seed, float **Xo, int32_t **yo) {
    hpj_rng r = hpj_rng_stream(seed, 7, 0);
    float *X = (float *)malloc(sizeof(float) * n * d);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * n);
    int i, j;
    for (i = 0; i < n; ++i) {
        y[i] = (int32_t)hpj_rng_below(&r, (uint32_t)C);
        for (j = 0; j < d; ++j) X[i * d + j] = hpj_rng_normal(&r) + (j == y[i] % d ? (float)sep : 0.0f);
    }
    *Xo = X;
    *yo = y;
}

/* ---- ridge ---- */

static void test_options_default(void) {
    hpj_probe_options o;
    memset(&o, 0xff, sizeof o);
    hpj_probe_options_default(&o);
    CHECK_NEAR(o.alpha, 1.0, 0, 0);
    CHECK_EQ_INT(o.standardize, 0);
    CHECK(o.tol > 0 && o.tol <= 1e-5);
    CHECK_EQ_INT(o.max_iter, 1000);
    CHECK_EQ_INT(o.precision, HPJ_PROBE_MIXED);
}

/* ridge_fit against the normal equations, for both precisions */
static void check_ridge(int n, int d, int t, double alpha, int standardize, double shift, double tol) {
    float *X = rand_matrix(n, d, 11 + n + d, 1.0), *Y = rand_matrix(n, t, 12 + n, 1.0);
    double *W = (double *)malloc(sizeof(double) * t * d), b[8];
    hpj_probe_options o;
    hpj_linear_model m;
    int i, j, prec;
    for (i = 0; i < n; ++i)
        for (j = 0; j < d; ++j) X[i * d + j] = (float)(X[i * d + j] * (1.0 + j % 3) + shift + (j == 1 ? 5.0 : 0.0));
    for (i = 0; i < n; ++i) Y[i * t] += 0.5f * X[i * d] - 0.25f * X[i * d + d - 1];
    CHECK_OK(ridge_ref(X, Y, n, d, t, alpha, standardize, W, b));
    for (prec = 0; prec < 2; ++prec) {
        hpj_probe_options_default(&o);
        o.alpha = alpha;
        o.standardize = standardize;
        o.precision = prec;
        CHECK_OK(hpj_ridge_fit(X, Y, n, d, t, &o, &m));
        CHECK_EQ_INT(m.d, d);
        CHECK_EQ_INT(m.c, t);
        CHECK_MSG(rel_diff(m.W, W, t * d) < tol, "n=%d d=%d prec=%d: W differs by %.3g", n, d, prec,
                  rel_diff(m.W, W, t * d));
        CHECK_MSG(rel_diff(m.b, b, t) < tol, "n=%d d=%d prec=%d: b differs by %.3g", n, d, prec, rel_diff(m.b, b, t));
        CHECK(m.grad_norm < 1e-8);
        hpj_linear_model_free(&m);
        CHECK(m.W == NULL && m.b == NULL);
    }
    free(X);
    free(Y);
    free(W);
}

static void test_ridge_primal(void) {
    check_ridge(50, 7, 3, 0.5, 0, 0.0, 2e-6);
    check_ridge(3, 2, 1, 2.0, 0, 0.0, 2e-6);
    check_ridge(1, 1, 1, 1.0, 0, 0.0, 2e-6);
}
static void test_ridge_dual(void) {
    /* d > n: the dual system, compared with the primal normal equations */
    check_ridge(20, 45, 2, 0.3, 0, 0.0, 2e-6);
    check_ridge(9, 300, 3, 1.0, 0, 0.0, 2e-6);
}
static void test_ridge_standardize(void) {
    check_ridge(40, 6, 2, 0.7, 1, 0.0, 2e-6);
    check_ridge(15, 33, 2, 0.7, 1, 0.0, 2e-6);
}
static void test_ridge_offset(void) {
    /* a large common offset must not cost accuracy (features are centred) */
    check_ridge(60, 5, 1, 0.1, 0, 1000.0, 1e-5);
}
static void test_ridge_blocked(void) {
    /* several packed slabs, several Cholesky blocks, several row blocks */
    check_ridge(700, 230, 2, 5.0, 0, 0.0, 1e-5);
    check_ridge(230, 600, 2, 5.0, 1, 0.0, 1e-5);
}

static void test_ridge_ill_conditioned(void) {
    /* nearly collinear columns and a tiny alpha: the float factor alone is
       not accurate, the refinement (or the double fallback) must be */
    const int n = 80, d = 12;
    float *X = rand_matrix(n, d, 5, 1.0), *Y = rand_matrix(n, 1, 6, 1.0);
    double W[12], b[1];
    hpj_probe_options o;
    hpj_linear_model m;
    int i, j;
    for (i = 0; i < n; ++i)
        for (j = 6; j < d; ++j) X[i * d + j] = X[i * d + j - 6] * 100.0f + 1e-3f * X[i * d + j];
    CHECK_OK(ridge_ref(X, Y, n, d, 1, 1e-4, 0, W, b));
    hpj_probe_options_default(&o);
    o.alpha = 1e-4;
    CHECK_OK(hpj_ridge_fit(X, Y, n, d, 1, &o, &m));
    CHECK_MSG(rel_diff(m.W, W, d) < 1e-4, "W differs by %.3g", rel_diff(m.W, W, d));
    CHECK_MSG(rel_diff(m.b, b, 1) < 1e-4, "b differs by %.3g", rel_diff(m.b, b, 1));
    hpj_linear_model_free(&m);
    free(X);
    free(Y);
}

static void test_ridge_singular(void) {
    /* alpha = 0 with duplicated columns: a singular system, reported */
    const int n = 30, d = 4;
    float *X = rand_matrix(n, d, 8, 1.0), *Y = rand_matrix(n, 1, 9, 1.0);
    hpj_probe_options o;
    hpj_linear_model m;
    int i;
    for (i = 0; i < n; ++i) X[i * d + 3] = X[i * d + 1];
    hpj_probe_options_default(&o);
    o.alpha = 0.0;
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, n, d, 1, &o, &m), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "singular") != NULL);
    CHECK(m.W == NULL && m.b == NULL && m.d == 0);
    free(X);
    free(Y);
}

/* ---- logistic regression ---- */

static void check_logreg_newton(int n, int d, int C, double alpha, int standardize, double sep) {
    float *X;
    int32_t *y;
    double W[64], b[8], g[8 * 9], g0[8 * 9], gmax = 0, g0max = 0, wscale = 1;
    hpj_probe_options o;
    hpj_linear_model m, zero;
    int j, c;
    make_classes(n, d, C, sep, 100 + n + C, &X, &y);
    CHECK_OK(newton_softmax(X, y, n, d, C, alpha, standardize, W, b));
    hpj_probe_options_default(&o);
    o.alpha = alpha;
    o.standardize = standardize;
    o.tol = 1e-9;
    CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &m));
    CHECK_EQ_INT(m.c, C);
    CHECK(m.iters > 0 && m.iters < o.max_iter);
    if (C == 2) {
        /* the binary model comes back as two opposite rows */
        for (j = 0; j < d; ++j) CHECK_NEAR(m.W[j], -m.W[d + j], 0, 1e-7);
        CHECK_NEAR(m.b[0], -m.b[1], 0, 1e-7);
        /* binary logistic == softmax with W1 - W0 = w; Newton's softmax form
           with alpha/2 on each row is the binary model with alpha/2 on w/2
           each, i.e. a penalty alpha/4 ||w||^2: compare through the binary
           reference instead */
        CHECK_OK(newton_softmax(X, y, n, d, C, 2.0 * alpha, standardize, W, b));
        for (j = 0; j < d; ++j) {
            double w = W[d + j] - W[j];
            wscale = fmax(wscale, fabs(w));
            CHECK_NEAR(m.W[d + j] - m.W[j], w, 1e-4, 1e-5 * wscale);
        }
        CHECK_NEAR(m.b[1] - m.b[0], b[1] - b[0], 1e-4, 1e-5 * wscale);
    } else {
        for (c = 0; c < C * d; ++c) wscale = fmax(wscale, fabs(W[c]));
        for (c = 0; c < C; ++c) {
            for (j = 0; j < d; ++j) CHECK_NEAR(m.W[c * d + j], W[c * d + j], 1e-4, 1e-5 * wscale);
            CHECK_NEAR(m.b[c] - m.b[C - 1], b[c] - b[C - 1], 1e-4, 1e-5 * wscale);
        }
        /* the gradient at the returned optimum, recomputed here */
        if (!standardize) {
            memset(&zero, 0, sizeof zero);
            softmax_grad(&m, X, y, n, alpha, g);
            {
                float Wz[64] = {0}, bz[8] = {0};
                zero.d = d;
                zero.c = C;
                zero.W = Wz;
                zero.b = bz;
                softmax_grad(&zero, X, y, n, alpha, g0);
            }
            for (j = 0; j < C * (d + 1); ++j) {
                gmax = fmax(gmax, fabs(g[j]));
                g0max = fmax(g0max, fabs(g0[j]));
            }
            /* float rounding of W limits what can be seen from outside */
            CHECK_MSG(gmax <= 1e-5 * g0max, "grad %.3g vs grad0 %.3g", gmax, g0max);
        }
    }
    hpj_linear_model_free(&m);
    free(X);
    free(y);
}

static void test_logreg_newton_multi(void) {
    check_logreg_newton(90, 4, 3, 0.5, 0, 1.5);
    check_logreg_newton(60, 3, 4, 0.1, 0, 2.0);
}
static void test_logreg_newton_binary(void) { check_logreg_newton(80, 5, 2, 0.3, 0, 1.0); }
static void test_logreg_standardize(void) {
    check_logreg_newton(70, 4, 3, 1.0, 1, 1.5);
    check_logreg_newton(70, 4, 2, 1.0, 1, 1.5);
}

static void test_logreg_gradient_tolerance(void) {
    /* a wider problem at the default tolerance: the reported gradient meets it */
    float *X;
    int32_t *y;
    hpj_probe_options o;
    hpj_linear_model m;
    make_classes(200, 40, 5, 0.8, 3, &X, &y);
    hpj_probe_options_default(&o);
    CHECK_OK(hpj_logreg_fit(X, y, 200, 40, 5, &o, &m));
    CHECK(m.iters > 1 && m.iters < o.max_iter);
    CHECK(m.grad_norm > 0 && isfinite(m.grad_norm));
    CHECK(hpj_linear_model_accuracy(&m, X, y, 200) > 0.6);
    hpj_linear_model_free(&m);
    free(X);
    free(y);
}

/* Badly scaled features (1e12, 1e30): a unit first step moves the scores
   by ~1e13 and the line search once gave up at W = 0 with status OK (one
   iteration, the gradient of W = 0, chance accuracy). Now the fit goes on
   and meets its documented test, the gradient of the internal (centred)
   problem against the one at W = 0, recomputed here in double. That test
   is joint over weights and intercepts, so at this scale the intercepts
   may stop short of their optimum (here 2 of 120 predictions differ from
   the unscaled fit): standardize = 1 is the remedy for such features. */
static void test_logreg_badly_scaled(void) {
    const int n = 120, d = 6, C = 3;
    const double scales[2] = {1e12, 1e30};
    float *X, *Xs;
    int32_t *y;
    hpj_probe_options o;
    hpj_linear_model ref, m;
    double mu[6], g0[3 * 7];
    int i, k, c, j;
    make_classes(n, d, C, 1.5, 11, &X, &y);
    Xs = (float *)malloc(sizeof(float) * n * d);
    hpj_probe_options_default(&o);
    o.alpha = 0.5;
    CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &ref));
    for (k = 0; k < 2; ++k) {
        const double s = scales[k];
        double g0max = 1.0;
        for (i = 0; i < n * d; ++i) Xs[i] = (float)(X[i] * s);
        /* gradient at W = 0, b = 0 of the centred problem: residual 1/C - [y = c] */
        for (j = 0; j < d; ++j) {
            mu[j] = 0;
            for (i = 0; i < n; ++i) mu[j] += Xs[i * d + j];
            mu[j] /= n;
        }
        memset(g0, 0, sizeof g0);
        for (i = 0; i < n; ++i)
            for (c = 0; c < C; ++c) {
                double r = 1.0 / C - (c == y[i]);
                for (j = 0; j < d; ++j) g0[c * (d + 1) + j] += r * ((double)Xs[i * d + j] - mu[j]);
                g0[c * (d + 1) + d] += r;
            }
        for (j = 0; j < C * (d + 1); ++j) g0max = fmax(g0max, fabs(g0[j]));
        o.alpha = 0.5 * s * s;
        CHECK_OK(hpj_logreg_fit(Xs, y, n, d, C, &o, &m));
        CHECK_MSG(m.iters > 1 && m.iters < o.max_iter, "scale %g: %d iterations", s, m.iters);
        CHECK_MSG(m.grad_norm <= 1.0001 * o.tol * g0max, "scale %g: gradient %.3g, test %.3g", s, m.grad_norm,
                  o.tol * g0max);
        CHECK_MSG(hpj_linear_model_accuracy(&m, Xs, y, n) >= hpj_linear_model_accuracy(&ref, X, y, n) - 0.05,
                  "scale %g: accuracy %.3f against %.3f unscaled", s, hpj_linear_model_accuracy(&m, Xs, y, n),
                  hpj_linear_model_accuracy(&ref, X, y, n));
        hpj_linear_model_free(&m);
    }
    hpj_linear_model_free(&ref);
    free(X); free(Xs); free(y);
}

static void test_logreg_separable(void) {
    /* perfectly separable classes: the penalty keeps the optimum finite */
    const int n = 60, d = 3;
    float X[60 * 3];
    int32_t y[60];
    hpj_probe_options o;
    hpj_linear_model m;
    int i, j, C;
    for (C = 2; C <= 3; ++C) {
        for (i = 0; i < n; ++i) {
            y[i] = i % C;
            for (j = 0; j < d; ++j) X[i * d + j] = (j == y[i] ? 10.0f : 0.0f) + 0.01f * (float)((i * 7 + j) % 5);
        }
        hpj_probe_options_default(&o);
        o.alpha = 1e-3;
        CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &m));
        CHECK_MSG(m.iters < o.max_iter, "C=%d: %d iterations", C, m.iters);
        for (j = 0; j < C * d; ++j) CHECK(isfinite(m.W[j]));
        CHECK_NEAR(hpj_linear_model_accuracy(&m, X, y, n), 1.0, 0, 0);
        hpj_linear_model_free(&m);
        /* no penalty: no optimum; the iteration cap stops it, finite */
        o.alpha = 0.0;
        o.max_iter = 40;
        CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &m));
        CHECK(m.iters <= 40);
        for (j = 0; j < C * d; ++j) CHECK(isfinite(m.W[j]));
        hpj_linear_model_free(&m);
    }
}

static void test_logreg_absent_class(void) {
    /* C = 4 but class 3 never occurs: terminates, never predicts it */
    float *X;
    int32_t *y;
    hpj_linear_model m;
    float s[4];
    int i;
    make_classes(80, 4, 3, 2.0, 9, &X, &y);
    CHECK_OK(hpj_logreg_fit(X, y, 80, 4, 4, NULL, &m));
    CHECK(m.iters < 1000);
    for (i = 0; i < 80; ++i) {
        hpj_linear_model_predict(&m, X + i * 4, 1, s);
        CHECK(hpj_argmax_row(s, 4) != 3);
    }
    hpj_linear_model_free(&m);
    free(X);
    free(y);
}

/* ---- prediction ---- */

static void test_predict_argmax(void) {
    float W[6] = {1, 2, 3, -1, 0, 0.5f}, b[2] = {0.5f, -1}, X[6] = {1, 1, 1, 2, 0, -2}, s[4];
    int32_t y[2] = {0, 1};
    hpj_linear_model m;
    float t1[3] = {1, 3, 3}, t2[3] = {NAN, -1, -2}, t3[2] = {NAN, NAN};
    memset(&m, 0, sizeof m);
    m.d = 3;
    m.c = 2;
    m.W = W;
    m.b = b;
    hpj_linear_model_predict(&m, X, 2, s);
    CHECK_NEAR(s[0], 6.5, 0, 1e-6);
    CHECK_NEAR(s[1], -1.5, 0, 1e-6);
    CHECK_NEAR(s[2], -3.5, 0, 1e-6);
    CHECK_NEAR(s[3], -4.0, 0, 1e-6);
    CHECK_NEAR(hpj_linear_model_accuracy(&m, X, y, 2), 0.5, 0, 0);
    CHECK_EQ_INT(hpj_argmax_row(t1, 3), 1); /* first of the ties */
    CHECK_EQ_INT(hpj_argmax_row(t2, 3), 1); /* NaN never wins */
    CHECK_EQ_INT(hpj_argmax_row(t3, 2), 0);
    CHECK_EQ_INT(hpj_argmax_row(t1, 0), 0);
}

/* hpj_linear_model_classify gives each row the argmax of its scores, by
   hpj_argmax_row's rule, and agrees with the accuracy; rows large enough
   for the parallel loop, ties and NaN rows included. */
static void test_linear_classify(void) {
    enum { N = 3000, D = 16, C = 5 };
    float *X = rand_matrix(N, D, 77, 1.0), *W = rand_matrix(C, D, 78, 1.0), *s;
    float b[C] = {0.1f, -0.2f, 0.0f, 0.3f, 0.1f};
    int32_t *cls, *y, keep[2] = {-7, -7};
    hpj_linear_model m;
    int i, hits = 0;
    s = (float *)malloc(sizeof(float) * N * C);
    cls = (int32_t *)malloc(sizeof(int32_t) * N);
    y = (int32_t *)malloc(sizeof(int32_t) * N);
    CHECK(X && W && s && cls && y);
    memcpy(W + 4 * D, W + 0 * D, sizeof(float) * D); /* class 4 = class 0 but for the bias: ties where b ties */
    X[5 * D + 3] = NAN;                               /* a row of NaN scores: class 0 */
    memset(&m, 0, sizeof m);
    m.d = D;
    m.c = C;
    m.W = W;
    m.b = b;
    for (i = 0; i < N; ++i) y[i] = (int32_t)(i % C);
    hpj_linear_model_classify(&m, X, N, cls);
    hpj_linear_model_predict(&m, X, N, s);
    for (i = 0; i < N; ++i) {
        CHECK_MSG(cls[i] == hpj_argmax_row(s + (size_t)i * C, C), "row %d: class %d, argmax %d", i, cls[i],
                  hpj_argmax_row(s + (size_t)i * C, C));
        CHECK(cls[i] != 4); /* class 0 wins every tie with it */
        hits += (cls[i] == y[i]);
    }
    CHECK_EQ_INT(cls[5], 0);
    CHECK_NEAR(hpj_linear_model_accuracy(&m, X, y, N), (double)hits / N, 0, 0);
    /* n < 1 or a NULL pointer: nothing is written */
    hpj_linear_model_classify(&m, X, 0, keep);
    hpj_linear_model_classify(NULL, X, 2, keep);
    hpj_linear_model_classify(&m, NULL, 2, keep);
    CHECK(keep[0] == -7 && keep[1] == -7);
    free(X); free(W); free(s); free(cls); free(y);
}

/* ---- folds ---- */

static void test_folds_stratified(void) {
    const int n = 103, C = 3, k = 5;
    int32_t y[103], f[103], f2[103], f3[103], cnt[3][5], size[5], nc[3];
    int i, c, q, same = 1;
    for (i = 0; i < n; ++i) y[i] = i < 61 ? 0 : (i < 90 ? 1 : 2); /* 61, 29, 13 */
    for (i = 0; i < n; ++i) f[i] = -1;
    CHECK_OK(hpj_stratified_folds(y, n, C, k, 42, f));
    memset(cnt, 0, sizeof cnt);
    memset(size, 0, sizeof size);
    memset(nc, 0, sizeof nc);
    for (i = 0; i < n; ++i) {
        CHECK(f[i] >= 0 && f[i] < k); /* every graph in exactly one fold */
        ++cnt[y[i]][f[i]];
        ++size[f[i]];
        ++nc[y[i]];
    }
    for (c = 0; c < C; ++c)
        for (q = 0; q < k; ++q)
            CHECK_MSG(abs(cnt[c][q] * k - nc[c]) < k, "class %d fold %d: %d of %d", c, q, cnt[c][q], nc[c]);
    for (q = 0; q < k; ++q) CHECK(size[q] == n / k || size[q] == n / k + 1);
    CHECK_OK(hpj_stratified_folds(y, n, C, k, 42, f2));
    CHECK(memcmp(f, f2, sizeof f) == 0);
    CHECK_OK(hpj_stratified_folds(y, n, C, k, 43, f3));
    for (i = 0; i < n; ++i) same &= f[i] == f3[i];
    CHECK(!same);
    /* k == n: leave-one-out */
    CHECK_OK(hpj_stratified_folds(y, 10, C, 10, 1, f));
    memset(size, 0, sizeof size);
    for (i = 0; i < 10; ++i) CHECK(f[i] >= 0 && f[i] < 10);
    for (i = 0; i < 10; ++i)
        for (q = i + 1; q < 10; ++q) CHECK(f[i] != f[q]);
}

static void test_folds_bad_input(void) {
    int32_t y[4] = {0, 1, 0, 1}, f[4] = {7, 7, 7, 7};
    CHECK_EQ_INT(hpj_stratified_folds(y, 4, 2, 1, 0, f), HPJ_ERR_INPUT);
    CHECK_EQ_INT(hpj_stratified_folds(y, 4, 2, 5, 0, f), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "k") != NULL);
    CHECK_EQ_INT(hpj_stratified_folds(y, 4, 1, 2, 0, f), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "y[1] = 1") != NULL);
    CHECK_EQ_INT(hpj_stratified_folds(NULL, 4, 2, 2, 0, f), HPJ_ERR_INPUT);
    CHECK(f[0] == 7 && f[3] == 7); /* untouched */
}

/* ---- resolution weighting ---- */

/* n graphs, L slots of D dims; slot `sig` carries the label (classification)
   or the target (regression); slot L-1 is inactive (zeros) for odd graphs. */
static float *make_res(int n, int L, int D, int sig, uint64_t seed, int32_t *y, float *yreg) {
    hpj_rng r = hpj_rng_stream(seed, 3, 4);
    float *H = (float *)malloc(sizeof(float) * n * L * D);
    int i, l, j;
    for (i = 0; i < n; ++i) {
        y[i] = (int32_t)(i % 2);
        yreg[i] = 0;
        for (l = 0; l < L; ++l)
            for (j = 0; j < D; ++j) {
                float v = hpj_rng_normal(&r);
                if (l == sig && j < 2) v += y[i] ? 1.5f : -1.5f;
                if (l == L - 1 && i % 2) v = 0.0f;
                H[(i * L + l) * D + j] = v;
            }
        for (j = 0; j < D; ++j) yreg[i] += (float)(j + 1) * H[(i * L + sig) * D + j];
        yreg[i] += 0.1f * hpj_rng_normal(&r);
    }
    return H;
}

static void test_resweight_uniform(void) {
    int32_t y[40];
    float yr[40], om[5], lg[5], out[40 * 3];
    float *H = make_res(40, 5, 3, 1, 1, y, yr);
    int l, i, j;
    CHECK_OK(hpj_resweight_fit_ex(H, 40, 5, 3, y, NULL, 2, 1.0f, 7, NULL, om, lg, NULL));
    for (l = 0; l < 5; ++l) {
        CHECK(om[l] == 0.2f);
        CHECK(lg[l] == 0.0f);
    }
    /* with lambda = 1, apply is the uniform mean over all slots */
    hpj_resweight_apply(out, H, om, 40, 5, 3);
    for (i = 0; i < 40; ++i)
        for (j = 0; j < 3; ++j) {
            double u = 0;
            for (l = 0; l < 5; ++l) u += H[(i * 5 + l) * 3 + j];
            CHECK_NEAR(out[i * 3 + j], u / 5, 1e-6, 1e-7);
        }
    free(H);
}

static void test_resweight_learns(void) {
    const int n = 240, L = 4, D = 6;
    int32_t y[240];
    float yr[240], om[4], om2[4], lg[4];
    hpj_resweight_info info;
    float *H = make_res(n, L, D, 2, 5, y, yr);
    double sum;
    int l;
    /* classification, unsmoothed: the informative slot dominates */
    CHECK_OK(hpj_resweight_fit_ex(H, n, L, D, y, NULL, 2, 0.0f, 3, NULL, om, lg, &info));
    for (sum = 0, l = 0; l < L; ++l) sum += om[l];
    CHECK_NEAR(sum, 1.0, 0, 1e-6);
    CHECK_MSG(om[2] > 0.5f, "omega = %g %g %g %g", om[0], om[1], om[2], om[3]);
    CHECK_EQ_INT(info.n_train + info.n_val, n);
    CHECK(info.n_val >= n / 5 - 1 && info.n_val <= n / 5 + 1);
    CHECK(info.iters >= 1 && info.best_iter >= 1 && info.best_iter <= info.iters);
    CHECK(info.val_loss_best <= info.val_loss_last);
    CHECK(info.val_loss_best < log(2.0));
    /* smoothed: every weight at least lambda / L, sum one, same ranking */
    CHECK_OK(hpj_resweight_fit(H, n, L, D, y, NULL, 2, 0.75f, 3, NULL, om2));
    for (sum = 0, l = 0; l < L; ++l) {
        sum += om2[l];
        CHECK(om2[l] >= 0.75f / L - 1e-7f);
        CHECK_NEAR(om2[l], 0.75 / L + 0.25 * (om[l]), 1e-5, 1e-6);
    }
    CHECK_NEAR(sum, 1.0, 0, 1e-6);
    /* deterministic for a seed */
    CHECK_OK(hpj_resweight_fit(H, n, L, D, y, NULL, 2, 0.0f, 3, NULL, om2));
    CHECK(memcmp(om, om2, sizeof om) == 0);
    /* multiclass path (3 classes, the third is a copy of class 1 by parity) */
    {
        int32_t y3[240];
        int i;
        for (i = 0; i < n; ++i) y3[i] = y[i] ? (int32_t)(1 + (i / 2) % 2) : 0;
        CHECK_OK(hpj_resweight_fit(H, n, L, D, y3, NULL, 3, 0.0f, 3, NULL, om2));
        CHECK_MSG(om2[2] > 0.4f, "omega = %g %g %g %g", om2[0], om2[1], om2[2], om2[3]);
    }
    free(H);
}

static void test_resweight_regression(void) {
    const int n = 200, L = 3, D = 4;
    int32_t y[200];
    float yr[200], om[3];
    float *H = make_res(n, L, D, 0, 8, y, yr);
    hpj_probe_options o;
    hpj_probe_options_default(&o);
    o.alpha = 0.1;
    CHECK_OK(hpj_resweight_fit(H, n, L, D, NULL, yr, 0, 0.0f, 1, &o, om));
    CHECK_MSG(om[0] > 0.6f, "omega = %g %g %g", om[0], om[1], om[2]);
    CHECK_NEAR(om[0] + om[1] + om[2], 1.0, 0, 1e-6);
    o.standardize = 1;
    CHECK_OK(hpj_resweight_fit(H, n, L, D, NULL, yr, 0, 0.5f, 1, &o, om));
    CHECK(om[0] > om[1] && om[0] > om[2]);
    free(H);
}

static void test_resweight_bad_input(void) {
    int32_t y[10] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    float yr[10] = {0}, om[2] = {9, 9};
    float *H = (float *)calloc(10 * 2 * 3, sizeof(float));
    CHECK_EQ_INT(hpj_resweight_fit(H, 1, 2, 3, y, NULL, 2, 0.5f, 0, NULL, om), HPJ_ERR_INPUT);
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, y, NULL, 2, 1.5f, 0, NULL, om), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "lambda") != NULL);
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, y, NULL, 1, 0.5f, 0, NULL, om), HPJ_ERR_INPUT);
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, NULL, yr, 2, 0.5f, 0, NULL, om), HPJ_ERR_INPUT);
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, NULL, NULL, 0, 0.5f, 0, NULL, om), HPJ_ERR_INPUT);
    y[4] = 2;
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, y, NULL, 2, 0.5f, 0, NULL, om), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "y[4] = 2") != NULL);
    y[4] = 0;
    H[7] = NAN;
    CHECK_EQ_INT(hpj_resweight_fit(H, 10, 2, 3, y, NULL, 2, 0.5f, 0, NULL, om), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "H[1,0,1] is nan") != NULL);
    CHECK(om[0] == 9 && om[1] == 9);
    free(H);
}

/* ---- bad inputs of the probes ---- */

static void test_probe_bad_inputs(void) {
    float X[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Y[4] = {1, 0, 1, 0};
    int32_t y[4] = {0, 1, 0, 1};
    hpj_linear_model m;
    hpj_probe_options o;
    memset(&m, 0x5a, sizeof m);
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, 0, 3, 1, NULL, &m), HPJ_ERR_INPUT);
    CHECK(m.W == NULL && m.b == NULL && m.d == 0); /* zeroed */
    CHECK(strstr(hpj_last_error(), "n=0") != NULL);
    CHECK_EQ_INT(hpj_logreg_fit(X, y, 0, 3, 2, NULL, &m), HPJ_ERR_INPUT);
    CHECK_EQ_INT(hpj_logreg_fit(X, y, 4, 3, 1, NULL, &m), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "C >= 2") != NULL);
    y[2] = 5; /* a label beyond C */
    CHECK_EQ_INT(hpj_logreg_fit(X, y, 4, 3, 2, NULL, &m), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "y[2] = 5") != NULL);
    y[2] = 0;
    CHECK_EQ_INT(hpj_logreg_fit(NULL, y, 4, 3, 2, NULL, &m), HPJ_ERR_INPUT);
    hpj_probe_options_default(&o);
    o.alpha = -1;
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, 4, 3, 1, &o, &m), HPJ_ERR_INPUT);
    CHECK(strstr(hpj_last_error(), "alpha") != NULL);
    hpj_probe_options_default(&o);
    o.max_iter = 0;
    CHECK_EQ_INT(hpj_logreg_fit(X, y, 4, 3, 2, &o, &m), HPJ_ERR_INPUT);
    X[7] = NAN;
    CHECK_EQ_INT(hpj_logreg_fit(X, y, 4, 3, 2, NULL, &m), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "X[2,1] is nan") != NULL);
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, 4, 3, 1, NULL, &m), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "X[2,1] is nan") != NULL);
    X[7] = INFINITY;
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, 4, 3, 1, NULL, &m), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "inf") != NULL);
    X[7] = 8;
    Y[3] = NAN;
    CHECK_EQ_INT(hpj_ridge_fit(X, Y, 4, 3, 1, NULL, &m), HPJ_ERR_NUMERIC);
    CHECK(strstr(hpj_last_error(), "Y[3,0] is nan") != NULL);
    CHECK(m.W == NULL);
}

/* ---- determinism ---- */

static void test_probe_threads_bitwise(void) {
#ifdef _OPENMP
    /* sizes above the parallel thresholds of every kernel involved */
    const int n = 600, d = 200, C = 3;
    float *X, *Y = (float *)calloc(n * C, sizeof(float)), *H;
    int32_t *y, yy[600];
    float yr[600], om1[4], om2[4];
    hpj_linear_model a, b;
    hpj_probe_options o;
    int i, t, saved = omp_get_max_threads();
    make_classes(n, d, C, 0.7, 21, &X, &y);
    for (i = 0; i < n; ++i) Y[i * C + y[i]] = 1;
    H = make_res(n, 4, 64, 1, 2, yy, yr);
    hpj_probe_options_default(&o);
    o.standardize = 1;
    for (t = 0; t < 3; ++t) {
        omp_set_num_threads(1);
        if (t == 0) CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &a));
        if (t == 1) CHECK_OK(hpj_ridge_fit(X, Y, n, d, C, &o, &a));
        if (t == 2) CHECK_OK(hpj_ridge_fit(X, Y, 100, d, C, &o, &a)); /* dual */
        omp_set_num_threads(2);
        if (t == 0) CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &b));
        if (t == 1) CHECK_OK(hpj_ridge_fit(X, Y, n, d, C, &o, &b));
        if (t == 2) CHECK_OK(hpj_ridge_fit(X, Y, 100, d, C, &o, &b));
        omp_set_num_threads(saved);
        CHECK_MSG(memcmp(a.W, b.W, sizeof(float) * C * d) == 0, "case %d: W differs across thread counts", t);
        CHECK(memcmp(a.b, b.b, sizeof(float) * C) == 0);
        CHECK_EQ_INT(a.iters, b.iters);
        hpj_linear_model_free(&a);
        hpj_linear_model_free(&b);
    }
    omp_set_num_threads(1);
    CHECK_OK(hpj_resweight_fit(H, n, 4, 64, yy, NULL, 2, 0.25f, 9, NULL, om1));
    omp_set_num_threads(2);
    CHECK_OK(hpj_resweight_fit(H, n, 4, 64, yy, NULL, 2, 0.25f, 9, NULL, om2));
    omp_set_num_threads(saved);
    CHECK(memcmp(om1, om2, sizeof om1) == 0);
    free(X);
    free(Y);
    free(y);
    free(H);
#else
    SKIP("built without OpenMP");
#endif
}

/* The reference part against the fast part (hpj_set_paths). The fast
   part's row groups sum the logreg gradient over 8 rows in a tree where the
   reference adds rows one by one, so L-BFGS takes other steps to the same
   optimum: W and b within 1e-4 relative (the fits stop at a gradient 1e-6
   of the first one). Ridge's fast path solves with a float factor where the
   reference uses a double one; the refinement in double takes both to the
   same solution: W within 1e-5 relative. */
static void test_probe_paths_agree(void) {
    const int n = 300, d = 203, C = 3; /* d: a tail past the last 8 */
    float *X, *Y = (float *)calloc(n * C, sizeof(float));
    int32_t *y;
    hpj_linear_model a, b;
    hpj_probe_options o;
    int i, t, saved = hpj_paths();
    make_classes(n, d, C, 0.7, 23, &X, &y);
    for (i = 0; i < n; ++i) Y[i * C + y[i]] = 1;
    hpj_probe_options_default(&o);
    o.standardize = 1;
    for (t = 0; t < 4; ++t) {
        int k, nn = t == 3 ? 150 : n, dd = t == 3 ? d : (t == 2 ? 150 : d), ok = 1;
        hpj_set_paths(HPJ_PATHS_REFERENCE);
        if (t == 0) CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &a));
        if (t == 1) CHECK_OK(hpj_logreg_fit(X, y, n, d, 2, &o, &a)); /* binary (labels made 0/1 below) */
        if (t >= 2) CHECK_OK(hpj_ridge_fit(X, Y, nn, dd, C, &o, &a));
        hpj_set_paths(HPJ_PATHS_BEST);
        if (t == 0) CHECK_OK(hpj_logreg_fit(X, y, n, d, C, &o, &b));
        if (t == 1) CHECK_OK(hpj_logreg_fit(X, y, n, d, 2, &o, &b));
        if (t >= 2) CHECK_OK(hpj_ridge_fit(X, Y, nn, dd, C, &o, &b));
        {
            const float tol = t < 2 ? 1e-4f : 1e-5f;
            for (k = 0; k < a.c * a.d && ok; ++k) ok = fabsf(a.W[k] - b.W[k]) <= tol * fabsf(a.W[k]) + 1e-7f;
            CHECK_MSG(ok, "case %d: W[%d] %g (reference) vs %g (fast)", t, k - 1, (double)a.W[k - 1],
                      (double)b.W[k - 1]);
            for (k = 0; k < a.c; ++k) CHECK_NEAR(a.b[k], b.b[k], tol, 1e-7);
        }
        hpj_linear_model_free(&a);
        hpj_linear_model_free(&b);
        if (t == 0) /* the binary case: labels 0/1 */
            for (i = 0; i < n; ++i) y[i] = y[i] > 0;
    }
    hpj_set_paths(saved);
    free(X);
    free(Y);
    free(y);
}

const test_case probe_tests[] = {
    {"probe.options_default", test_options_default},
    {"probe.ridge_primal", test_ridge_primal},
    {"probe.ridge_dual", test_ridge_dual},
    {"probe.ridge_standardize", test_ridge_standardize},
    {"probe.ridge_offset", test_ridge_offset},
    {"probe.ridge_blocked", test_ridge_blocked},
    {"probe.ridge_ill_conditioned", test_ridge_ill_conditioned},
    {"probe.ridge_singular", test_ridge_singular},
    {"probe.logreg_newton_multi", test_logreg_newton_multi},
    {"probe.logreg_newton_binary", test_logreg_newton_binary},
    {"probe.logreg_standardize", test_logreg_standardize},
    {"probe.logreg_gradient_tolerance", test_logreg_gradient_tolerance},
    {"probe.logreg_badly_scaled", test_logreg_badly_scaled},
    {"probe.logreg_separable", test_logreg_separable},
    {"probe.logreg_absent_class", test_logreg_absent_class},
    {"probe.predict_argmax", test_predict_argmax},
    {"probe.linear_classify", test_linear_classify},
    {"probe.folds_stratified", test_folds_stratified},
    {"probe.folds_bad_input", test_folds_bad_input},
    {"probe.resweight_uniform", test_resweight_uniform},
    {"probe.resweight_learns", test_resweight_learns},
    {"probe.resweight_regression", test_resweight_regression},
    {"probe.resweight_bad_input", test_resweight_bad_input},
    {"probe.bad_inputs", test_probe_bad_inputs},
    {"probe.threads_bitwise", test_probe_threads_bitwise},
    {"probe.paths_agree", test_probe_paths_agree},
};
const int probe_tests_count = (int)(sizeof probe_tests / sizeof probe_tests[0]);
