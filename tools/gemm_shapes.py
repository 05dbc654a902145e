#!/usr/bin/env python3
"""Where the GEMM time of a run goes, by shape.

  python3 tools/gemm_shapes.py OUTDIR

Writes OUTDIR/hpjepa.h, a scratch copy of ./hpjepa.h in which every GEMM
called from outside a parallel region (hpj_gemm and the linear layers'
biased products, all through hpj__gemm_impl) is timed and counted by
(layout, M, N, K). Build and run it like tools/paired_step.py's copy:

  bash tools/paired_step.sh OUTDIR
  OUTDIR/hpjepa bench train ../shared/data/DD \\
      --config data/configs/bench/dd_d512.cfg --set repartition=0 \\
      --steps 40 --threads 2

When the program exits it prints on stderr the total GEMM time, the 40
costliest shapes (calls, seconds, share, GFLOP/s) and a summary by class
(layout; M, N up to 64 / 256 / above; K up to 64 / above). With
HPJ_GEMM_WARM=1 in the environment every call runs a second time on warm
operands (C saved before the first run and restored before the second, so
the results are unchanged) and the summary shows both rates: the gap is
what cold operands cost (the first use of a weight in a step finds it in
memory). The timing wraps the calls, so the step's own speed is only
indicative; compare classes within one run. Never commit the scratch copy.
Standard library only; exit 1 with a one-line reason when ./hpjepa.h no
longer has the text this script patches.
"""
import scratch_header

DEF = """static void hpj__gemm_impl(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {"""

IMPL = "#ifdef HPJEPA_IMPLEMENTATION"

WRAP = r"""#ifndef _OPENMP
#include <time.h>
#endif
static void hpj__gemm_real(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias);
typedef struct { int ta, tb, M, N, K; long n, nw; double t, tw; } hpj__gs_e;
static hpj__gs_e hpj__gs[4096];
static int hpj__ngs;
static double hpj__gs_now(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}
static double hpj__gs_rate(double flop, double t) { return t > 0.0 ? 1e-9 * flop / t : 0.0; }
static int hpj__gs_cmp(const void *x, const void *y) {
    double a = ((const hpj__gs_e *)x)->t, b = ((const hpj__gs_e *)y)->t;
    return a > b ? -1 : a < b;
}
__attribute__((destructor)) static void hpj__gs_dump(void) {
    static const char *mn[3] = {"<=64", "<=256", ">256"};
    double tot = 0.0, ct[2][2][3][3][2], cw[2][2][3][3][2], cf[2][2][3][3][2], cfw[2][2][3][3][2];
    long cn[2][2][3][3][2];
    int i, a, b, m, n, k;
    if (!hpj__ngs) return;
    memset(ct, 0, sizeof ct), memset(cw, 0, sizeof cw), memset(cf, 0, sizeof cf), memset(cfw, 0, sizeof cfw);
    memset(cn, 0, sizeof cn);
    qsort(hpj__gs, (size_t)hpj__ngs, sizeof(hpj__gs_e), hpj__gs_cmp);
    for (i = 0; i < hpj__ngs; ++i) tot += hpj__gs[i].t;
    fprintf(stderr, "GEMM total %.3f s in %d shapes (calls from outside parallel regions)\n", tot, hpj__ngs);
    for (i = 0; i < hpj__ngs && i < 40; ++i) {
        hpj__gs_e *e = &hpj__gs[i];
        double fl = 2.0 * e->M * e->N * (double)e->K * e->n;
        fprintf(stderr, "  %c%c %6d x %6d x %6d  calls %7ld  %8.3f s %5.1f %%  %6.1f GFLOP/s", e->ta ? 't' : 'n',
                e->tb ? 't' : 'n', e->M, e->N, e->K, e->n, e->t, 100.0 * e->t / tot, hpj__gs_rate(fl, e->t));
        if (e->nw) fprintf(stderr, "  warm %6.1f", hpj__gs_rate(2.0 * e->M * e->N * (double)e->K * e->nw, e->tw));
        fputc('\n', stderr);
    }
    for (i = 0; i < hpj__ngs; ++i) {
        hpj__gs_e *e = &hpj__gs[i];
        m = e->M <= 64 ? 0 : e->M <= 256 ? 1 : 2;
        n = e->N <= 64 ? 0 : e->N <= 256 ? 1 : 2;
        k = e->K > 64;
        ct[e->ta][e->tb][m][n][k] += e->t;
        cw[e->ta][e->tb][m][n][k] += e->tw;
        cf[e->ta][e->tb][m][n][k] += 2.0 * e->M * e->N * (double)e->K * e->n;
        cfw[e->ta][e->tb][m][n][k] += 2.0 * e->M * e->N * (double)e->K * e->nw;
        cn[e->ta][e->tb][m][n][k] += e->n;
    }
    fprintf(stderr, "by class (layout, M, N, K): share of GEMM time, GFLOP/s (warm: HPJ_GEMM_WARM=1)\n");
    for (a = 0; a < 2; ++a)
        for (b = 0; b < 2; ++b)
            for (m = 0; m < 3; ++m)
                for (n = 0; n < 3; ++n)
                    for (k = 0; k < 2; ++k) {
                        if (ct[a][b][m][n][k] < 0.001 * tot) continue;
                        fprintf(stderr, "  %c%c M %-5s N %-5s K %-4s calls %7ld  %5.1f %%  %6.1f GFLOP/s", a ? 't' : 'n',
                                b ? 't' : 'n', mn[m], mn[n], k ? ">64" : "<=64", cn[a][b][m][n][k],
                                100.0 * ct[a][b][m][n][k] / tot, hpj__gs_rate(cf[a][b][m][n][k], ct[a][b][m][n][k]));
                        if (cw[a][b][m][n][k] > 0.0)
                            fprintf(stderr, "  warm %6.1f", hpj__gs_rate(cfw[a][b][m][n][k], cw[a][b][m][n][k]));
                        fputc('\n', stderr);
                    }
}
static void hpj__gemm_impl(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {
    static int warm = -1;
    static float *save;
    static size_t nsave;
    double t0, t1;
    int i, r;
    hpj__gs_e *e;
#ifdef _OPENMP
    if (omp_in_parallel()) {
        hpj__gemm_real(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
        return;
    }
#endif
    if (warm < 0) warm = getenv("HPJ_GEMM_WARM") && atoi(getenv("HPJ_GEMM_WARM")) > 0;
    if (warm && M > 0 && N > 0) {
        size_t need = (size_t)M * (size_t)N;
        if (need > nsave) {
            free(save);
            save = (float *)malloc(need * sizeof(float));
            nsave = save ? need : 0;
        }
        if (save)
            for (r = 0; r < M; ++r) memcpy(save + (size_t)r * N, C + (size_t)r * ldc, sizeof(float) * (size_t)N);
    }
    t0 = hpj__gs_now();
    hpj__gemm_real(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
    t1 = hpj__gs_now();
    for (i = 0; i < hpj__ngs; ++i)
        if (hpj__gs[i].ta == !!transA && hpj__gs[i].tb == !!transB && hpj__gs[i].M == M && hpj__gs[i].N == N &&
            hpj__gs[i].K == K)
            break;
    if (i == hpj__ngs) {
        if (i == 4096) return;
        memset(&hpj__gs[i], 0, sizeof hpj__gs[i]);
        hpj__gs[i].ta = !!transA, hpj__gs[i].tb = !!transB, hpj__gs[i].M = M, hpj__gs[i].N = N, hpj__gs[i].K = K;
        ++hpj__ngs;
    }
    e = &hpj__gs[i];
    e->n++;
    e->t += t1 - t0;
    if (warm && save && M > 0 && N > 0) {
        for (r = 0; r < M; ++r) memcpy(C + (size_t)r * ldc, save + (size_t)r * N, sizeof(float) * (size_t)N);
        t0 = hpj__gs_now();
        hpj__gemm_real(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
        t1 = hpj__gs_now();
        e->nw++;
        e->tw += t1 - t0;
    }
}
static void hpj__gemm_real(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {"""


def fail(msg):
    scratch_header.fail("gemm_shapes", msg)


def main():
    out, src = scratch_header.read("gemm_shapes")
    for what, text in (("the implementation guard", IMPL), ("the definition of hpj__gemm_impl", DEF)):
        if src.count(text) != 1:
            fail("hpjepa.h: %s not found once; update this script" % what)
    src = src.replace(DEF, WRAP, 1)
    path = scratch_header.write(out, src)
    print("wrote %s; then: bash tools/paired_step.sh %s" % (path, out))


if __name__ == "__main__":
    main()
