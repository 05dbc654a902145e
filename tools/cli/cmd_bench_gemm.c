/* hpjepa bench gemm: throughput of hpj_gemm on one shape. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *bench_gemm_usage =
    "usage: hpjepa bench gemm M N K [--threads T] [--layout nn|nt|tn|tt|all] [--secs S]\n"
    "                         [--isa auto|reference|portable|avx2|avx512]\n"
    "  Times C (M,N) = op(A) op(B) with hpj_gemm (beta = 0), row-major:\n"
    "    nn: A (M,K), B (K,N)   nt: B stored (N,K) (a linear layer's forward)\n"
    "    tn: A stored (K,M) (a weight gradient)   tt: both transposed\n"
    "  Calls are grouped in batches of ~10 ms for S seconds (default 0.4);\n"
    "  GFLOP/s = 2MNK / time, the median over the batches.\n"
    "  --threads T  OpenMP threads (default 2)\n"
    "  --layout L   default nn; 'all' runs nn, nt and tn\n"
    "  --isa I      the paths level (hpj_set_paths): the reference loops or the\n"
    "               fast GEMM with a given micro-kernel (default: the widest compiled in)\n"
    "  prints: gflops=<float>                  (one layout)\n"
    "          layout=<nn|nt|tn> gflops=<float> (one line each, --layout all)\n"
    "  and on stderr the kernel, thread count, best batch and batch count.\n";

/* Runs one layout; returns 0 and the median / best GFLOP/s. */
static int bench_gemm_run(int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C, double secs,
                          double *med, double *best, int *nbatch) {
    enum { MAXB = 100000 };
    double flops = 2.0 * M * N * K, t0, t1, tend, *rate;
    int lda = ta ? M : K, ldb = tb ? K : N, calls = 1, nb = 0, i;
    rate = (double *)malloc(sizeof(double) * MAXB);
    if (!rate) return -1;
    /* warm up, then size a batch to ~10 ms */
    hpj_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
    for (;;) {
        t0 = cli_now();
        for (i = 0; i < calls; ++i) hpj_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
        t1 = cli_now();
        if (t1 - t0 > 0.01 || calls >= (1 << 24)) break;
        calls *= 2;
    }
    tend = cli_now() + secs;
    while ((cli_now() < tend || nb < 5) && nb < MAXB) {
        t0 = cli_now();
        for (i = 0; i < calls; ++i) hpj_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
        t1 = cli_now();
        rate[nb++] = flops * calls / (t1 - t0) * 1e-9;
    }
    *med = cli_sort_median(rate, nb);
    *best = rate[nb - 1];
    *nbatch = nb;
    free(rate);
    return 0;
}

int cmd_bench_gemm(int argc, char **argv) {
    const char *cmd = "bench gemm", *layout = "nn", *isa_name = "auto";
    long long dims[3], threads = 2, v;
    double secs = 0.4;
    int npos = 0, i, rc = 0, isa = HPJ_PATHS_BEST;
    float *A = NULL, *B = NULL, *C = NULL;
    size_t na, nbb, nc;
    (void)argv[0];
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(bench_gemm_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--threads") || !strcmp(a, "--layout") || !strcmp(a, "--secs") || !strcmp(a, "--isa")) {
            if (i + 1 >= argc) {
                cli_error(cmd, "%s needs a value (see hpjepa bench gemm --help)", a);
                return 2;
            }
            ++i;
            if (!strcmp(a, "--threads")) {
                if (cli_parse_int(cmd, "--threads", argv[i], 1, 1024, &threads)) return 2;
            } else if (!strcmp(a, "--secs")) {
                if (cli_parse_double(cmd, "--secs", argv[i], &secs)) return 2;
                if (!(secs > 0.0 && secs <= 3600.0)) {
                    cli_error(cmd, "--secs: %s is outside (0, 3600]", argv[i]);
                    return 2;
                }
            } else if (!strcmp(a, "--layout")) {
                layout = argv[i];
                if (strcmp(layout, "nn") && strcmp(layout, "nt") && strcmp(layout, "tn") && strcmp(layout, "tt") &&
                    strcmp(layout, "all")) {
                    cli_error(cmd, "--layout: '%s' is not nn, nt, tn, tt or all", layout);
                    return 2;
                }
            } else {
                isa_name = argv[i];
                if (!strcmp(isa_name, "auto")) isa = HPJ_PATHS_BEST;
                else if (!strcmp(isa_name, "reference")) isa = HPJ_PATHS_REFERENCE;
                else if (!strcmp(isa_name, "portable")) isa = HPJ_PATHS_PORTABLE;
                else if (!strcmp(isa_name, "avx2")) isa = HPJ_PATHS_AVX2;
                else if (!strcmp(isa_name, "avx512")) isa = HPJ_PATHS_AVX512;
                else {
                    cli_error(cmd, "--isa: '%s' is not auto, reference, portable, avx2 or avx512", isa_name);
                    return 2;
                }
            }
            continue;
        }
        if (a[0] == '-' && a[1] != 0) {
            cli_error(cmd, "unknown option '%s' (see hpjepa bench gemm --help)", a);
            return 2;
        }
        if (npos >= 3) {
            cli_error(cmd, "too many arguments: '%s' (usage: hpjepa bench gemm M N K [options])", a);
            return 2;
        }
        if (cli_parse_int(cmd, npos == 0 ? "M" : npos == 1 ? "N" : "K", a, 1, 1 << 20, &v)) return 2;
        dims[npos++] = v;
    }
    if (npos != 3) {
        cli_error(cmd, "expected M N K, got %d number%s (usage: hpjepa bench gemm M N K [options])", npos,
                  npos == 1 ? "" : "s");
        return 2;
    }
    if (hpj_set_paths(isa) != isa && isa != HPJ_PATHS_BEST) {
        cli_error(cmd, "--isa: %s is not compiled into this build (it has %s)", isa_name, hpj_paths_name(hpj_paths()));
        hpj_set_paths(HPJ_PATHS_BEST);
        return 1;
    }
    na = (size_t)dims[0] * (size_t)dims[2];
    nbb = (size_t)dims[2] * (size_t)dims[1];
    nc = (size_t)dims[0] * (size_t)dims[1];
    if ((double)(na + nbb + nc) * sizeof(float) > 16e9) {
        cli_error(cmd, "%lldx%lldx%lld needs %.1f GB for A, B and C (limit 16 GB)", dims[0], dims[1], dims[2],
                  (double)(na + nbb + nc) * sizeof(float) / 1e9);
        return 1;
    }
    A = (float *)malloc(na * sizeof(float));
    B = (float *)malloc(nbb * sizeof(float));
    C = (float *)malloc(nc * sizeof(float));
    if (!A || !B || !C) {
        cli_error(cmd, "out of memory allocating %.1f MB", (double)(na + nbb + nc) * sizeof(float) / 1e6);
        rc = 1;
        goto done;
    }
    {
        hpj_rng r;
        hpj_rng_seed(&r, 1);
        hpj_init_uniform(A, na, 1.0f, &r);
        hpj_init_uniform(B, nbb, 1.0f, &r);
    }
#ifdef _OPENMP
    omp_set_num_threads((int)threads);
#else
    if (threads != 1) fprintf(stderr, "hpjepa %s: built without OpenMP, running on 1 thread\n", cmd);
    threads = 1;
#endif
    {
        static const char *names[4] = {"nn", "nt", "tn", "tt"};
        int l;
        for (l = 0; l < 4; ++l) {
            double med, best;
            int nb;
            if (strcmp(layout, "all") ? strcmp(layout, names[l]) != 0 : l == 3) continue;
            if (bench_gemm_run(l == 2 || l == 3, l == 1 || l == 3, (int)dims[0], (int)dims[1], (int)dims[2], A, B, C,
                               secs, &med, &best, &nb)) {
                cli_error(cmd, "out of memory");
                rc = 1;
                goto done;
            }
            if (!strcmp(layout, "all")) printf("layout=%s gflops=%.1f\n", names[l], med);
            else printf("gflops=%.1f\n", med);
            fflush(stdout);
            fprintf(stderr, "hpjepa %s: %lldx%lldx%lld %s kernel=%s threads=%lld median=%.1f best=%.1f batches=%d\n",
                    cmd, dims[0], dims[1], dims[2], names[l], hpj_paths_name(hpj_paths()), threads, med, best,
                    nb);
        }
    }
done:
    free(A);
    free(B);
    free(C);
    hpj_set_paths(HPJ_PATHS_BEST);
    return rc;
}
