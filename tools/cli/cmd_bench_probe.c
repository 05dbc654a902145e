/* hpjepa bench probe - fit time and accuracy of the linear probes on the
   synthetic feature sets of probe_bench.py (the scikit-learn peer of make
   bench, not part of this repository), regenerated here from the recipe in
   that script's docstring or read from the files its --save option writes. */
#include "cli.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *bench_probe_usage =
    "usage: hpjepa bench probe [--set NAME[,NAME...]|all] [--model logreg|ridge|all]\n"
    "                          [--alphas A[,A...]] [--reps R] [--threads T] [--tol X]\n"
    "                          [--max-iter N] [--standardize] [--precision mixed|double]\n"
    "                          [--data DIR] [--custom N,DIM,C,SIGNAL,SEED]\n"
    "                          [--paths reference|portable|avx2|avx512|best]\n"
    "  Fits hpjepa.h's probes (hpj_logreg_fit with C = 1/alpha semantics, hpj_ridge_fit\n"
    "  on one-hot targets, argmax prediction) on the synthetic sets of\n"
    "  probe_bench.py (make bench's peer), so the numbers compare with scikit-learn's:\n"
    "    proteins_like  1113 x 2048, 2 classes, signal 0.08, seed 1\n"
    "    large5         4999 x 3584, 5 classes, signal 0.06, seed 2\n"
    "  The data are regenerated bit-for-bit from the splitmix64 recipe of\n"
    "  probe_bench.py's docstring; with --data DIR they are read from\n"
    "  DIR/<set>.X.f32 and DIR/<set>.y.i32 (probe_bench.py --save) and checked\n"
    "  against the regeneration. --custom replaces the sets by one named\n"
    "  'custom' with those parameters (its files: DIR/custom.X.f32, .y.i32).\n"
    "  Train = first floor(0.9 n) rows, test = the rest. Defaults: --set all,\n"
    "  --model all, --alphas 0.1,1,10, --reps 3, --threads = OpenMP default,\n"
    "  probe defaults otherwise (tol 1e-6, max_iter 1000). --paths runs the\n"
    "  reference implementation or the fast part up to a level (hpj_set_paths).\n"
    "  Prints one line per fit:\n"
    "    set=<name> n=<n> dim=<d> classes=<C> model=<m> alpha=<a> threads=<T>\n"
    "    fit_ms=<best of reps> median_ms=<median> iters=<int> train_acc=<f> test_acc=<f>\n"
    "  (iters: L-BFGS iterations for logreg, refinement steps for ridge).\n";

typedef struct probe_set {
    char name[64];
    long n, dim;
    int C;
    double signal;
    uint64_t seed;
} probe_set;

/* splitmix64 of the counter seed*2^32 + stream*2^48 + i + 1 (probe_bench.py). */
static uint64_t probe_sm(uint64_t seed, uint64_t stream, uint64_t i) {
    uint64_t z = ((seed << 32) + (stream << 48) + i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double probe_u(uint64_t seed, uint64_t stream, uint64_t i) {
    return (double)(probe_sm(seed, stream, i) >> 11) * (1.0 / 9007199254740992.0);
}

static int probe_generate(const probe_set *s, float *X, int32_t *y) {
    double *mu = (double *)malloc(sizeof(double) * (size_t)s->C * (size_t)s->dim);
    const double s12 = sqrt(12.0);
    long i;
    if (!mu) return -1;
    for (i = 0; i < (long)s->C * s->dim; ++i) mu[i] = s->signal * (2.0 * probe_u(s->seed, 1, (uint64_t)i) - 1.0);
    for (i = 0; i < s->n; ++i) y[i] = (int32_t)((probe_sm(s->seed, 0, (uint64_t)i) >> 32) % (uint64_t)s->C);
    for (i = 0; i < s->n; ++i) {
        long j;
        const double *m = mu + (size_t)y[i] * s->dim;
        for (j = 0; j < s->dim; ++j) {
            double e = (probe_u(s->seed, 2, (uint64_t)(i * s->dim + j)) - 0.5) * s12;
            X[(size_t)i * s->dim + j] = (float)(m[j] + e);
        }
    }
    free(mu);
    return 0;
}

/* Reads DIR/<set>.X.f32 and .y.i32 into X, y; compares with the
   regeneration in Xg, yg. Returns 0, or 1 after printing the reason. */
static int probe_load(const char *dir, const probe_set *s, float *X, int32_t *y, const float *Xg, const int32_t *yg) {
    char path[1200];
    FILE *f;
    size_t nx = (size_t)s->n * (size_t)s->dim, i, bad = 0;
    long size;
    int k;
    for (k = 0; k < 2; ++k) {
        snprintf(path, sizeof path, "%s/%s.%s", dir, s->name, k == 0 ? "X.f32" : "y.i32");
        f = fopen(path, "rb");
        if (!f) {
            cli_error("probe", "cannot open %s (run probe_bench.py --save there)", path);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (size != (long)((k == 0 ? nx : (size_t)s->n) * 4) ||
            fread(k == 0 ? (void *)X : (void *)y, 4, k == 0 ? nx : (size_t)s->n, f) != (k == 0 ? nx : (size_t)s->n)) {
            cli_error("probe", "%s: expected %zu bytes, found %ld", path, (k == 0 ? nx : (size_t)s->n) * 4, size);
            fclose(f);
            return 1;
        }
        fclose(f);
    }
    for (i = 0; i < nx; ++i) bad += memcmp(X + i, Xg + i, 4) != 0;
    for (i = 0; i < (size_t)s->n; ++i) bad += y[i] != yg[i];
    if (bad) {
        cli_error("probe", "%s: %zu values differ from the regenerated data", s->name, bad);
        return 1;
    }
    return 0;
}

static int probe_parse_list(const char *cmd, const char *what, const char *s, double *out, int max) {
    char buf[256], *tok, *save = NULL;
    int k = 0;
    if (strlen(s) >= sizeof buf) {
        cli_error(cmd, "%s: list too long", what);
        return -1;
    }
    strcpy(buf, s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (k == max) {
            cli_error(cmd, "%s: more than %d values", what, max);
            return -1;
        }
        if (cli_parse_double(cmd, what, tok, &out[k])) return -1;
        ++k;
    }
    if (!k) cli_error(cmd, "%s: empty list", what);
    return k ? k : -1;
}

int cmd_bench_probe(int argc, char **argv) {
    const char *cmd = "bench probe", *data = NULL, *sets_arg = "all", *model = "all";
    probe_set sets[3];
    double alphas[16];
    int nalpha = 3, reps = 3, threads = 0, nsets = 0, i, a, si, rc = 0, mi;
    hpj_probe_options base;
    hpj_set_adaptive_threads(0); /* the speed of the threads asked for, like the peer's */
    hpj_probe_options_default(&base);
    alphas[0] = 0.1;
    alphas[1] = 1.0;
    alphas[2] = 10.0;
    memset(sets, 0, sizeof sets);
    for (i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        long long v;
        if (cli_is_help(arg)) {
            fputs(bench_probe_usage, stdout);
            return 0;
        }
        if (!strcmp(arg, "--standardize")) {
            base.standardize = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error(cmd, "%s: missing value (see --help)", arg);
            return 2;
        }
        if (!strcmp(arg, "--set")) sets_arg = argv[++i];
        else if (!strcmp(arg, "--model")) {
            model = argv[++i];
            if (strcmp(model, "logreg") && strcmp(model, "ridge") && strcmp(model, "all")) {
                cli_error(cmd, "--model: '%s' is not logreg, ridge or all", model);
                return 2;
            }
        } else if (!strcmp(arg, "--alphas")) {
            if ((nalpha = probe_parse_list(cmd, "--alphas", argv[++i], alphas, 16)) < 0) return 2;
            for (a = 0; a < nalpha; ++a)
                if (!(alphas[a] > 0)) {
                    cli_error(cmd, "--alphas: %g is not > 0", alphas[a]);
                    return 2;
                }
        } else if (!strcmp(arg, "--reps")) {
            if (cli_parse_int(cmd, "--reps", argv[++i], 1, 1000, &v)) return 2;
            reps = (int)v;
        } else if (!strcmp(arg, "--threads")) {
            if (cli_parse_int(cmd, "--threads", argv[++i], 1, 1024, &v)) return 2;
            threads = (int)v;
        } else if (!strcmp(arg, "--max-iter")) {
            if (cli_parse_int(cmd, "--max-iter", argv[++i], 1, 1000000, &v)) return 2;
            base.max_iter = (int)v;
        } else if (!strcmp(arg, "--tol")) {
            if (cli_parse_double(cmd, "--tol", argv[++i], &base.tol)) return 2;
            if (!(base.tol > 0)) {
                cli_error(cmd, "--tol: %g is not > 0", base.tol);
                return 2;
            }
        } else if (!strcmp(arg, "--precision")) {
            const char *p = argv[++i];
            if (!strcmp(p, "mixed")) base.precision = HPJ_PROBE_MIXED;
            else if (!strcmp(p, "double")) base.precision = HPJ_PROBE_DOUBLE;
            else {
                cli_error(cmd, "--precision: '%s' is not mixed or double", p);
                return 2;
            }
        } else if (!strcmp(arg, "--paths")) {
            static const char *names[] = {"reference", "portable", "avx2", "avx512", "best"};
            static const int levels[] = {HPJ_PATHS_REFERENCE, HPJ_PATHS_PORTABLE, HPJ_PATHS_AVX2, HPJ_PATHS_AVX512,
                                         HPJ_PATHS_BEST};
            const char *p = argv[++i];
            int q;
            for (q = 0; q < 5 && strcmp(p, names[q]); ++q) {}
            if (q == 5) {
                cli_error(cmd, "--paths: '%s' is not reference, portable, avx2, avx512 or best", p);
                return 2;
            }
            hpj_set_paths(levels[q]);
        } else if (!strcmp(arg, "--data")) data = argv[++i];
        else if (!strcmp(arg, "--custom")) {
            double f[5];
            int nf;
            if (nsets) {
                cli_error(cmd, "--custom: only one custom set");
                return 2;
            }
            nf = probe_parse_list(cmd, "--custom", argv[++i], f, 5);
            if (nf < 0) return 2;
            if (nf != 5 || f[0] < 2 || f[0] > 1e7 || f[1] < 1 ||
                f[1] > 1e6 || f[2] < 2 || f[2] > 1000 || f[4] < 0 || f[0] != floor(f[0]) || f[1] != floor(f[1]) ||
                f[2] != floor(f[2]) || f[4] != floor(f[4])) {
                cli_error(cmd, "--custom: expected N,DIM,C,SIGNAL,SEED with N >= 2, DIM >= 1, C >= 2 integers");
                return 2;
            }
            snprintf(sets[0].name, sizeof sets[0].name, "custom");
            sets[0].n = (long)f[0];
            sets[0].dim = (long)f[1];
            sets[0].C = (int)f[2];
            sets[0].signal = f[3];
            sets[0].seed = (uint64_t)f[4];
            nsets = 1;
            sets_arg = "";
        } else {
            cli_error(cmd, "unknown option '%s' (see --help)", arg);
            return 2;
        }
    }
    if (*sets_arg) {
        char buf[256], *tok, *save = NULL;
        snprintf(buf, sizeof buf, "%s", sets_arg);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int all = !strcmp(tok, "all"), ok = 0;
            if (all || !strcmp(tok, "proteins_like")) {
                snprintf(sets[nsets].name, 64, "proteins_like");
                sets[nsets].n = 1113, sets[nsets].dim = 2048, sets[nsets].C = 2, sets[nsets].signal = 0.08,
                sets[nsets].seed = 1;
                ++nsets;
                ok = 1;
            }
            if (all || !strcmp(tok, "large5")) {
                snprintf(sets[nsets].name, 64, "large5");
                sets[nsets].n = 4999, sets[nsets].dim = 3584, sets[nsets].C = 5, sets[nsets].signal = 0.06,
                sets[nsets].seed = 2;
                ++nsets;
                ok = 1;
            }
            if (!ok) {
                cli_error(cmd, "--set: '%s' is not proteins_like, large5 or all", tok);
                return 2;
            }
            if (nsets > 2) {
                cli_error(cmd, "--set: too many sets in '%s'", sets_arg);
                return 2;
            }
        }
    }
    if (!nsets) {
        cli_error(cmd, "--set: no set chosen");
        return 2;
    }
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    for (si = 0; si < nsets && !rc; ++si) {
        const probe_set *s = &sets[si];
        const int n = (int)s->n, d = (int)s->dim, C = s->C, ntr = (int)(0.9 * (double)s->n), nte = n - ntr;
        float *X = (float *)malloc(sizeof(float) * (size_t)n * d), *Yoh = (float *)calloc((size_t)ntr * C, 4);
        int32_t *y = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        double *ms = (double *)malloc(sizeof(double) * (size_t)reps);
        if (!X || !y || !Yoh || !ms || probe_generate(s, X, y)) {
            cli_error(cmd, "%s: out of memory for %d x %d features", s->name, n, d);
            rc = 1;
        } else if (data) {
            float *Xf = (float *)malloc(sizeof(float) * (size_t)n * d);
            int32_t *yf = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            if (!Xf || !yf) {
                cli_error(cmd, "out of memory");
                rc = 1;
            } else if (probe_load(data, s, Xf, yf, X, y)) {
                rc = 1;
            } else {
                free(X);
                free(y);
                X = Xf;
                y = yf;
                Xf = NULL;
                yf = NULL;
                fprintf(stderr, "%s: %s/%s.X.f32 and .y.i32 are bit-identical to the regeneration\n", s->name, data,
                        s->name);
            }
            free(Xf);
            free(yf);
        }
        for (i = 0; !rc && i < ntr; ++i) Yoh[(size_t)i * C + y[i]] = 1.0f;
        for (mi = 0; mi < 2 && !rc; ++mi) {
            const int is_ridge = mi == 1;
            if (strcmp(model, "all") && strcmp(model, is_ridge ? "ridge" : "logreg")) continue;
            for (a = 0; a < nalpha && !rc; ++a) {
                hpj_probe_options o = base;
                hpj_linear_model m;
                double tr_acc, te_acc, best, med;
                int r, iters = 0;
                o.alpha = alphas[a];
                memset(&m, 0, sizeof m);
                for (r = 0; r < reps; ++r) {
                    double t0 = cli_now();
                    hpj_status st;
                    hpj_linear_model_free(&m);
                    st = is_ridge ? hpj_ridge_fit(X, Yoh, ntr, d, C, &o, &m) : hpj_logreg_fit(X, y, ntr, d, C, &o, &m);
                    ms[r] = (cli_now() - t0) * 1e3;
                    if (st != HPJ_OK) {
                        cli_error(cmd, "%s: %s", s->name, hpj_last_error());
                        rc = 1;
                        break;
                    }
                    iters = m.iters;
                }
                if (rc) break;
                med = cli_sort_median(ms, reps);
                best = ms[0];
                tr_acc = hpj_linear_model_accuracy(&m, X, y, ntr);
                te_acc = hpj_linear_model_accuracy(&m, X + (size_t)ntr * d, y + ntr, nte);
                printf("set=%s n=%d dim=%d classes=%d model=%s alpha=%g threads=%d fit_ms=%.1f median_ms=%.1f "
                       "iters=%d train_acc=%.4f test_acc=%.4f\n",
                       s->name, n, d, C, is_ridge ? "ridge" : "logreg", alphas[a], threads, best, med, iters, tr_acc,
                       te_acc);
                fflush(stdout);
                hpj_linear_model_free(&m);
            }
        }
        free(X);
        free(y);
        free(Yoh);
        free(ms);
    }
    return rc;
}
