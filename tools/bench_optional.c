/* bench_optional.c - LayerNorm / BatchNorm with and without their optional
   operands (gamma, beta), one thread, N = 3000 rows of D = 128 channels.

   Where the loops tested `if (gamma)` inside, compilers emitted masked
   loads, and an AMD EPYC (family 26) completed a masked load of the
   unmapped NULL page through a microcode assist: the NULL forms ran 6-48x
   slower than with the operands. The library now tests outside the loops
   (hpj__ln_apply); this program prints both forms side by side so a
   regression shows as a ratio well above 1. Run by tools/bench_optional.sh
   (`make bench`). */
#define HPJEPA_IMPLEMENTATION
#include "../hpjepa.h"
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define N 3000
#define D 128
static float x[N * D], dy[N * D], y[N * D], dx[N * D], mu[N], rs[N], g[D], b[D], rm[D], rv[D], dg[D], db[D];

/* the best of 200 runs of fn(with) in microseconds */
static double best_us(void (*fn)(int), int with) {
    double best = 1e30;
    int r;
    for (r = 0; r < 200; ++r) {
        double t0 = now(), dt;
        fn(with);
        dt = now() - t0;
        if (dt < best) best = dt;
    }
    return best * 1e6;
}

static void ln_fwd(int w) { hpj_layernorm_forward(y, mu, rs, x, w ? g : NULL, w ? b : NULL, N, D, 1e-5f); }
static void ln_bwd(int w) { hpj_layernorm_backward(dx, dg, db, dy, x, w ? g : NULL, mu, rs, N, D); }
static void bn_train(int w) {
    hpj_batchnorm_forward_train(y, mu, rs, NULL, NULL, x, w ? g : NULL, w ? b : NULL, N, D, 0.1f, 1e-5f);
}
static void bn_eval(int w) { hpj_batchnorm_forward_eval(y, x, w ? g : NULL, w ? b : NULL, rm, rv, N, D, 1e-5f); }
static void bn_bwd(int w) { hpj_batchnorm_backward(dx, dg, db, dy, x, w ? g : NULL, mu, rs, N, D); }

int main(void) {
    static const struct {
        const char *name;
        void (*fn)(int);
    } ops[] = {{"layernorm forward (gamma, beta)", ln_fwd},
               {"layernorm backward (gamma)", ln_bwd},
               {"batchnorm forward, training (gamma, beta)", bn_train},
               {"batchnorm forward, evaluation (gamma, beta)", bn_eval},
               {"batchnorm backward (gamma)", bn_bwd}};
    hpj_rng r;
    size_t i;
    int k;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    hpj_rng_seed(&r, 7);
    for (i = 0; i < (size_t)N * D; ++i) {
        x[i] = 4.0f * hpj_rng_uniform(&r) - 2.0f;
        dy[i] = 2.0f * hpj_rng_uniform(&r) - 1.0f;
    }
    for (k = 0; k < D; ++k) {
        g[k] = 0.5f + hpj_rng_uniform(&r);
        b[k] = hpj_rng_uniform(&r) - 0.5f;
        rm[k] = hpj_rng_uniform(&r) - 0.5f;
        rv[k] = 0.2f + hpj_rng_uniform(&r);
    }
    printf("| operation, %d x %d, 1 thread | with operands (us) | operands NULL (us) | NULL / with |\n", N, D);
    printf("|---|---:|---:|---:|\n");
    for (k = 0; k < (int)(sizeof ops / sizeof ops[0]); ++k) {
        double with, without;
        if (ops[k].fn == ln_bwd) ln_fwd(1); /* the saved statistics the backward reads */
        if (ops[k].fn == bn_bwd) bn_train(1);
        with = best_us(ops[k].fn, 1);
        without = best_us(ops[k].fn, 0);
        printf("| %s | %.1f | %.1f | %.2f |\n", ops[k].name, with, without, without / with);
    }
    return 0;
}
