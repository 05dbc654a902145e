/* hpjepa bench cores: the round trip of a cache line between two threads.

   Why it is here: on a shared 2-vCPU host the hypervisor may place the two
   vCPUs on cores that share a cache (a round trip of ~75 ns on the AMD
   Zen 5 host of 2026-11-27) or on far-apart cores (~360-400 ns within the
   same hour). Every parallel region, barrier and hand-over of data between
   the threads pays that latency, so two-thread speeds move with it: the
   PROTEINS d = 128 training step ran 1.21x faster on two threads than on
   one in the far placement and 1.77x in the near one. tools/bench_train.sh
   prints this figure with each table so that runs can be told apart. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *bench_cores_usage =
    "usage: hpjepa bench cores [--rounds N] [--trials T]\n"
    "  Two threads pass a flag back and forth through one cache line, N\n"
    "  round trips per trial (default 100000), T trials (default 5).\n"
    "  prints: round_trip_ns=<float> min_ns=<float> max_ns=<float>\n"
    "  (median, fastest and slowest trial; a round trip is two hand-overs).\n"
    "  Needs an OpenMP build and two CPUs; exits 1 otherwise.\n";

#ifdef _OPENMP
/* the flag, alone on its cache line */
static struct {
    char pad0[64];
    int v;
    char pad1[64];
} bench_cores_flag;

/* One trial: seconds per round trip, or -1 when the team is not two threads. */
static double bench_cores_trial(long long rounds) {
    double secs = -1.0;
    bench_cores_flag.v = 0;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num(), two = omp_get_num_threads() == 2, seen;
        long long i;
        double t0;
        if (two) {
#pragma omp barrier
            t0 = omp_get_wtime();
            for (i = 0; i < rounds; ++i) {
                /* thread 0 waits for 0 and writes 1; thread 1 waits for 1 and writes 0 */
                do {
#pragma omp atomic read
                    seen = bench_cores_flag.v;
                } while (seen != me);
#pragma omp atomic write
                bench_cores_flag.v = 1 - me;
            }
            if (me == 0) secs = (omp_get_wtime() - t0) / (double)rounds;
        }
    }
    return secs;
}
#endif

int cmd_bench_cores(int argc, char **argv) {
    const char *cmd = "bench cores";
    long long rounds = 100000, trials = 5;
    int i;
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(bench_cores_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--rounds") || !strcmp(a, "--trials")) {
            if (i + 1 >= argc) {
                cli_error(cmd, "%s needs a value (see hpjepa bench cores --help)", a);
                return 2;
            }
            ++i;
            if (!strcmp(a, "--rounds")) {
                if (cli_parse_int(cmd, "--rounds", argv[i], 1, 100000000, &rounds)) return 2;
            } else if (cli_parse_int(cmd, "--trials", argv[i], 1, 1000, &trials)) {
                return 2;
            }
            continue;
        }
        if (a[0] == '-' && a[1] != 0) cli_error(cmd, "unknown option '%s' (see hpjepa bench cores --help)", a);
        else cli_error(cmd, "unexpected argument '%s' (usage: hpjepa bench cores [--rounds N] [--trials T])", a);
        return 2;
    }
#ifdef _OPENMP
    {
        double *ns = (double *)malloc(sizeof(double) * (size_t)trials), med;
        long long t;
        if (!ns) {
            cli_error(cmd, "out of memory");
            return 1;
        }
        if (omp_get_num_procs() < 2) { /* two spinning threads on one CPU would hand over once per time slice */
            cli_error(cmd, "needs two CPUs, this process may use %d", omp_get_num_procs());
            free(ns);
            return 1;
        }
        /* an untimed trial first: the team's threads start and spin up */
        (void)bench_cores_trial(rounds < 10000 ? rounds : 10000);
        for (t = 0; t < trials; ++t) {
            double s = bench_cores_trial(rounds);
            if (s < 0.0) {
                cli_error(cmd, "needs two threads, got one (one CPU, or OMP_NUM_THREADS / OMP_THREAD_LIMIT = 1?)");
                free(ns);
                return 1;
            }
            ns[t] = s * 1e9;
        }
        med = cli_sort_median(ns, (int)trials);
        printf("round_trip_ns=%.1f min_ns=%.1f max_ns=%.1f\n", med, ns[0], ns[trials - 1]);
        free(ns);
        return 0;
    }
#else
    (void)rounds, (void)trials;
    cli_error(cmd, "built without OpenMP: needs two threads");
    return 1;
#endif
}
