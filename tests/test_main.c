/* The test runner: an explicit table of every module's tests.
   usage: tests [--filter SUBSTRING] [--list] */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "../hpjepa.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

int test_failed;
int test_skipped;

void test_report(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    test_failed = 1;
    fprintf(stdout, "%s:%d: Failure\n  ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

const char *test_data_dir(void) {
    static char buf[1024];
    struct stat st;
    const char *env = getenv("HPJ_DATA");
    const char *cand[3];
    int i;
    cand[0] = env;
    cand[1] = "../shared/data";
    cand[2] = "../../shared/data";
    for (i = 0; i < 3; ++i) {
        if (!cand[i]) continue;
        if (stat(cand[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(buf, sizeof buf, "%s", cand[i]);
            return buf;
        }
    }
    return NULL;
}

const char *test_dataset(const char *name) {
    static char buf[1200];
    struct stat st;
    const char *d = test_data_dir();
    if (!d) { test_skipped = 1; printf("  skipped: no ../shared/data (set HPJ_DATA)\n"); return NULL; }
    snprintf(buf, sizeof buf, "%s/%s", d, name);
    if (stat(buf, &st) != 0) { test_skipped = 1; printf("  skipped: %s missing\n", buf); return NULL; }
    return buf;
}

const char *test_tmpfile(const char *tag) {
    static char buf[8][512];
    static int k;
    const char *t = getenv("TMPDIR");
    char *b = buf[k++ & 7];
    snprintf(b, 512, "%s/hpj_test_%ld_%s", t ? t : "/tmp", (long)getpid(), tag);
    return b;
}

void test_tiny_config(hpj_config *c) {
    hpj_config_default(c);
    hpj_config_set(c, "dim", "8");
    hpj_config_set(c, "heads", "2");
    hpj_config_set(c, "blocks", "2");
    hpj_config_set(c, "ffn", "12");
    hpj_config_set(c, "rw_dim", "5");
    hpj_config_set(c, "resolutions", "2,4,8");
    hpj_config_set(c, "targets", "1,2,3");
    hpj_config_set(c, "batch_size", "16");
    hpj_config_set(c, "epochs", "2");
    hpj_config_set(c, "lr", "1e-3");
    hpj_config_set(c, "seed", "5");
}

int32_t *test_all_graphs(const hpj_dataset *ds) {
    int32_t *g = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds->num_graphs + 1), i;
    for (i = 0; g && i < ds->num_graphs; ++i) g[i] = i;
    return g;
}

/* Module tables, each defined in its tests/test_<module>.c. */
#ifndef TEST_MODULES
#define TEST_MODULES(X) X(core) X(partition) X(nn) X(model) X(probe) X(internals) X(dp) X(reading)
#endif
#define X(m) extern const test_case m##_tests[]; extern const int m##_tests_count;
TEST_MODULES(X)
#undef X

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    const char *filter = NULL;
    int i, list = 0, passed = 0, failed = 0, skipped = 0, total = 0;
    char failed_names[64][96];
    int nfailed_names = 0;
    struct { const test_case *t; int n; } mods[] = {
#define X(m) {m##_tests, 0},
        TEST_MODULES(X)
#undef X
    };
    int counts[] = {
#define X(m) m##_tests_count,
        TEST_MODULES(X)
#undef X
    };
    int nmods = (int)(sizeof mods / sizeof mods[0]);
    double t_all = now_ms();
    for (i = 0; i < nmods; ++i) mods[i].n = counts[i];
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strncmp(argv[i], "--filter=", 9)) filter = argv[i] + 9;
        else if (!strcmp(argv[i], "--list")) list = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: %s [--filter SUBSTRING] [--list]\n", argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
            return 2;
        }
    }
    for (i = 0; i < nmods; ++i) {
        int j;
        for (j = 0; j < mods[i].n; ++j)
            if (!filter || strstr(mods[i].t[j].name, filter)) ++total;
    }
    if (list) {
        for (i = 0; i < nmods; ++i) {
            int j;
            for (j = 0; j < mods[i].n; ++j)
                if (!filter || strstr(mods[i].t[j].name, filter)) printf("%s\n", mods[i].t[j].name);
        }
        return 0;
    }
    printf("[==========] Running %d tests.\n", total);
    fflush(stdout);
    for (i = 0; i < nmods; ++i) {
        int j;
        for (j = 0; j < mods[i].n; ++j) {
            const test_case *tc = &mods[i].t[j];
            double t0;
            if (filter && !strstr(tc->name, filter)) continue;
            printf("[ RUN      ] %s\n", tc->name);
            fflush(stdout);
            test_failed = 0;
            test_skipped = 0;
            hpj_clear_error();
            t0 = now_ms();
            tc->fn();
            hpj_set_paths(HPJ_PATHS_BEST); /* a CHECK that failed inside FOR_EACH_PATHS left its level set */
            if (test_failed) {
                printf("[  FAILED  ] %s (%.0f ms)\n", tc->name, now_ms() - t0);
                ++failed;
                if (nfailed_names < 64) snprintf(failed_names[nfailed_names++], 96, "%s", tc->name);
            } else if (test_skipped) {
                printf("[  SKIPPED ] %s\n", tc->name);
                ++skipped;
            } else {
                printf("[       OK ] %s (%.0f ms)\n", tc->name, now_ms() - t0);
                ++passed;
            }
            fflush(stdout);
        }
    }
    printf("[==========] %d tests ran. (%.0f ms total)\n", passed + failed + skipped, now_ms() - t_all);
    for (i = 0; i < nfailed_names; ++i) printf("[  FAILED  ] %s\n", failed_names[i]);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
