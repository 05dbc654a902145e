/* Tests of data-parallel pretraining (hpj_comm, hpj_model_set_comm): a
   communicator of one rank trains the bits of none, and R ranks simulated
   by R threads of this process, each training its own copy of the model
   through a communicator that sums their buffers in rank order, train the
   one process's run up to the order of summation, end with the same bits
   on every rank, and fail together when one rank fails. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "../hpjepa.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void dp_config(hpj_config *c) {
    test_tiny_config(c);
    /* every draw that depends on where a row sits in the batch */
    hpj_config_set(c, "dropout", "0.1");
    hpj_config_set(c, "token_dropout", "0.1");
    hpj_config_set(c, "repartition", "1");
    hpj_config_set(c, "edge_drop", "0.3");
}

/* ---- the simulated ranks: one thread each, meeting in every collective ----
   Each rank leaves its buffer's address and waits; the last to arrive sums
   the buffers elementwise in rank order (or copies rank 0's, for bcast)
   into every buffer and wakes the others. A rank that waits for more than
   a minute (another rank never came: a missed agreement) gets a failure
   instead of a hang. */
#define DP_MAXR 4
enum { DP_FLOAT, DP_DOUBLE, DP_INT64, DP_BYTES };
typedef struct dp_world {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int R, arrived, bad;
    long gen, calls, fail_at; /* fail_at > 0: that collective fails on every rank, as a broken transport */
    void *buf[DP_MAXR];
    size_t n[DP_MAXR];
    int kind[DP_MAXR];
} dp_world;
typedef struct dp_rank {
    dp_world *w;
    hpj_comm comm;
    long calls; /* this rank's collectives (the one-rank test counts them) */
} dp_rank;

static void dp_reduce(dp_world *w) {
    size_t i, n = w->n[0];
    int r;
    for (r = 1; r < w->R; ++r)
        if (w->n[r] != n || w->kind[r] != w->kind[0]) w->bad = 1; /* the ranks called different collectives */
    if (w->bad) return;
    for (i = 0; i < n; ++i) {
        if (w->kind[0] == DP_FLOAT) {
            float s = ((float *)w->buf[0])[i];
            for (r = 1; r < w->R; ++r) s += ((float *)w->buf[r])[i];
            for (r = 0; r < w->R; ++r) ((float *)w->buf[r])[i] = s;
        } else if (w->kind[0] == DP_DOUBLE) {
            double s = ((double *)w->buf[0])[i];
            for (r = 1; r < w->R; ++r) s += ((double *)w->buf[r])[i];
            for (r = 0; r < w->R; ++r) ((double *)w->buf[r])[i] = s;
        } else if (w->kind[0] == DP_INT64) {
            int64_t s = ((int64_t *)w->buf[0])[i];
            for (r = 1; r < w->R; ++r) s += ((int64_t *)w->buf[r])[i];
            for (r = 0; r < w->R; ++r) ((int64_t *)w->buf[r])[i] = s;
        }
    }
    if (w->kind[0] == DP_BYTES)
        for (r = 1; r < w->R; ++r) memcpy(w->buf[r], w->buf[0], n);
}

static int dp_collective(dp_rank *u, int kind, void *buf, size_t n) {
    dp_world *w = u->w;
    long gen;
    int rc = 0;
    u->calls++;
    pthread_mutex_lock(&w->mu);
    gen = w->gen;
    w->buf[u->comm.rank] = buf;
    w->n[u->comm.rank] = n;
    w->kind[u->comm.rank] = kind;
    if (++w->arrived == w->R) {
        if (w->calls + 1 == w->fail_at) w->bad = 1;
        dp_reduce(w);
        w->arrived = 0;
        w->gen++;
        w->calls++;
        pthread_cond_broadcast(&w->cv);
    } else {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        while (w->gen == gen && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
        if (w->gen == gen) w->bad = 1;
    }
    rc = w->bad;
    pthread_mutex_unlock(&w->mu);
    return rc;
}
static int dp_sum_f(void *u, float *b, size_t n) { return dp_collective((dp_rank *)u, DP_FLOAT, b, n); }
static int dp_sum_d(void *u, double *b, size_t n) { return dp_collective((dp_rank *)u, DP_DOUBLE, b, n); }
static int dp_sum_i(void *u, int64_t *b, size_t n) { return dp_collective((dp_rank *)u, DP_INT64, b, n); }
static int dp_bcast(void *u, void *b, size_t n) { return dp_collective((dp_rank *)u, DP_BYTES, b, n); }

static long dp_fail_at; /* dp_world_init's fail_at */
static void dp_world_init(dp_world *w, dp_rank *ranks, int R) {
    int r;
    memset(w, 0, sizeof *w);
    w->fail_at = dp_fail_at;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->R = R;
    for (r = 0; r < R; ++r) {
        memset(&ranks[r], 0, sizeof ranks[r]);
        ranks[r].w = w;
        ranks[r].comm.rank = r;
        ranks[r].comm.size = R;
        ranks[r].comm.user = &ranks[r];
        ranks[r].comm.sum_float = dp_sum_f;
        ranks[r].comm.sum_double = dp_sum_d;
        ranks[r].comm.sum_int64 = dp_sum_i;
        ranks[r].comm.bcast = dp_bcast;
    }
}
static void dp_world_free(dp_world *w) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

/* The per-resolution epoch losses a run reports (hpj_progress). */
typedef struct dp_losses {
    double loss[4][HPJ_MAX_RES];
    int epochs;
} dp_losses;
static void dp_on_progress(void *user, const hpj_progress *p) {
    dp_losses *o = (dp_losses *)user;
    int l;
    if (!p->epoch_done || p->epoch >= 4) return;
    for (l = 0; l < HPJ_MAX_RES; ++l) o->loss[p->epoch][l] = p->loss_count[l] ? p->loss[l] / p->loss_count[l] : 0.0;
    o->epochs = p->epoch + 1;
}

/* One rank's run: a model of its own (initialised with another seed on
   ranks > 0, which the broadcast from rank 0 must overwrite), trained on
   `train`, serialized with its optimizer state. */
typedef struct dp_job {
    const hpj_dataset *ds;
    hpj_config cfg;
    const int32_t *train;
    int32_t n;
    const hpj_comm *comm;
    hpj_status st;
    char why[512];
    dp_losses losses;
    unsigned char *bytes;
    size_t nbytes;
} dp_job;

static void *dp_run(void *arg) {
    dp_job *j = (dp_job *)arg;
    hpj_model m;
    hpj_config c = j->cfg;
    if (j->comm && j->comm->rank > 0) c.seed += 100; /* rank 0's parameters must win */
    j->st = hpj_model_init(&m, &c, j->ds);
    if (j->st) return NULL;
    m.cfg.seed = j->cfg.seed;
    hpj_model_set_comm(&m, j->comm);
    memset(&j->losses, 0, sizeof j->losses);
    j->st = hpj_pretrain(&m, j->ds, j->train, j->n, 0, dp_on_progress, &j->losses);
    snprintf(j->why, sizeof j->why, "%s", hpj_last_error());
    if (j->st == HPJ_OK) {
        hpj_model_set_comm(&m, NULL);
        j->st = hpj_model_serialize(&m, 1, &j->bytes, &j->nbytes);
    }
    hpj_model_free(&m);
    return NULL;
}

/* R ranks (R = 1 with comm NULL: one process) on threads; jobs[r] gets rank
   r's outcome. train_r / n_r: rank 1's graphs when they differ (NULL: the
   same). */
static int dp_train(const hpj_dataset *ds, const hpj_config *cfg, const int32_t *train, int32_t n, int R,
                    dp_job *jobs, const int32_t *train1, int32_t n1, const hpj_config *cfg1) {
    dp_world w;
    dp_rank ranks[DP_MAXR];
    pthread_t th[DP_MAXR];
    int r, started = 0;
    dp_world_init(&w, ranks, R);
    for (r = 0; r < R; ++r) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].ds = ds;
        jobs[r].cfg = r == 1 && cfg1 ? *cfg1 : *cfg;
        jobs[r].train = r == 1 && train1 ? train1 : train;
        jobs[r].n = r == 1 && train1 ? n1 : n;
        jobs[r].comm = R > 1 || cfg1 ? &ranks[r].comm : NULL;
    }
    if (R == 1) {
        dp_run(&jobs[0]);
    } else {
        for (r = 0; r < R; ++r) started += pthread_create(&th[r], NULL, dp_run, &jobs[r]) == 0;
        for (r = 0; r < started; ++r) pthread_join(th[r], NULL);
    }
    dp_world_free(&w);
    return started == R || R == 1 ? (int)w.calls : -1;
}

/* A communicator of one rank whose callbacks do the work (an MPI of one
   process): the same bits as no communicator, on every paths level. */
static void test_one_rank_bits(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    hpj_model m;
    int32_t gs[120];
    int i, level;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 120; ++i) gs[i] = i + 30;
    dp_config(&c);
    hpj_config_set(&c, "threads", "2");
    FOR_EACH_PATHS(level) {
        unsigned char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        dp_world w;
        dp_rank one;
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        CHECK_OK(hpj_pretrain(&m, &ds, gs, 120, 0, NULL, NULL));
        CHECK_OK(hpj_model_serialize(&m, 1, &a, &na));
        hpj_model_free(&m);
        dp_world_init(&w, &one, 1);
        CHECK_OK(hpj_model_init(&m, &c, &ds));
        hpj_model_set_comm(&m, &one.comm);
        CHECK_OK(hpj_pretrain(&m, &ds, gs, 120, 0, NULL, NULL));
        CHECK_OK(hpj_model_serialize(&m, 1, &b, &nb));
        hpj_model_free(&m);
        dp_world_free(&w);
        CHECK_MSG(one.calls > 100, "paths %s: the communicator was called %ld times", hpj_paths_name(level), one.calls);
        CHECK_MSG(na == nb && memcmp(a, b, na) == 0, "paths %s: a one-rank communicator changed the bits",
                  hpj_paths_name(level));
        hpj_free_buffer(a);
        hpj_free_buffer(b);
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    hpj_dataset_free(&ds);
}

/* Two and three ranks: the one process's per-resolution losses up to the
   order of summation, and the same bits on every rank. 129 graphs in
   batches of 16 leave one graph in the last batch, so a rank trains
   nothing there and still takes part; small graphs at K = 8 leave ranks
   without an eligible graph in other batches. */
static void test_ranks_train_one_run(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c;
    int32_t gs[129];
    dp_job one[1], jobs[3];
    int i, R, level, e, l;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 129; ++i) gs[i] = (i * 7) % 188;
    dp_config(&c);
    hpj_config_set(&c, "threads", "1");
    for (level = HPJ_PATHS_REFERENCE; level <= HPJ_PATHS_BEST; level += HPJ_PATHS_BEST - HPJ_PATHS_REFERENCE) {
        int got = hpj_set_paths(level); /* (BEST: the widest level this build has) */
        dp_train(&ds, &c, gs, 129, 1, one, NULL, 0, NULL);
        CHECK_OK(one[0].st);
        CHECK_EQ_INT(one[0].losses.epochs, 2);
        for (R = 2; R <= 3; ++R) {
            double worst = 0.0;
            CHECK(dp_train(&ds, &c, gs, 129, R, jobs, NULL, 0, NULL) > 0);
            for (i = 0; i < R; ++i) CHECK_MSG(jobs[i].st == HPJ_OK, "rank %d of %d: %s", i, R, jobs[i].why);
            for (i = 1; i < R; ++i)
                CHECK_MSG(jobs[i].nbytes == jobs[0].nbytes && memcmp(jobs[i].bytes, jobs[0].bytes, jobs[0].nbytes) == 0,
                          "%d ranks: rank %d's model differs from rank 0's", R, i);
            for (e = 0; e < 2; ++e)
                for (l = 0; l < c.L; ++l) {
                    double a = jobs[0].losses.loss[e][l], b = one[0].losses.loss[e][l];
                    CHECK_NEAR(a, b, 1e-4, 1e-7);
                    if (b > 0.0 && fabs(a - b) / b > worst) worst = fabs(a - b) / b;
                }
            printf("  paths %s, %d ranks: per-resolution epoch losses within %.2g relative of one process\n",
                   hpj_paths_name(got), R, worst);
            for (i = 0; i < R; ++i) hpj_free_buffer(jobs[i].bytes);
        }
        hpj_free_buffer(one[0].bytes);
    }
    hpj_set_paths(HPJ_PATHS_BEST);
    hpj_dataset_free(&ds);
}

/* A failure on one rank fails every rank with its reason, and no rank
   waits forever: a bad graph index, another config, another training set;
   a transport that fails mid-run fails every rank with HPJ_ERR_IO. */
static void test_rank_failure_agreed(void) {
    const char *dir = test_dataset("MUTAG");
    hpj_dataset ds;
    hpj_config c, other;
    int32_t gs[40], bad[40];
    dp_job jobs[2];
    int i;
    if (!dir) return;
    CHECK_OK(hpj_dataset_load_tu(dir, &ds));
    for (i = 0; i < 40; ++i) gs[i] = bad[i] = i;
    bad[7] = 5000;
    dp_config(&c);
    hpj_config_set(&c, "threads", "1");
    hpj_config_set(&c, "epochs", "1");
    CHECK(dp_train(&ds, &c, gs, 40, 2, jobs, bad, 40, NULL) > 0);
    for (i = 0; i < 2; ++i) {
        CHECK_MSG(jobs[i].st == HPJ_ERR_INPUT && strstr(jobs[i].why, "rank 1 of 2: pretrain: graph index 5000"),
                  "rank %d: status %d, '%s'", i, (int)jobs[i].st, jobs[i].why);
        hpj_free_buffer(jobs[i].bytes);
    }
    other = c;
    hpj_config_set(&other, "lr", "2e-3");
    CHECK(dp_train(&ds, &c, gs, 40, 2, jobs, NULL, 0, &other) > 0);
    for (i = 0; i < 2; ++i) {
        CHECK_MSG(jobs[i].st == HPJ_ERR_INPUT && strstr(jobs[i].why, "rank 1 of 2 trains other graphs"),
                  "rank %d: status %d, '%s'", i, (int)jobs[i].st, jobs[i].why);
        hpj_free_buffer(jobs[i].bytes);
    }
    CHECK(dp_train(&ds, &c, gs, 40, 2, jobs, gs, 39, NULL) > 0);
    for (i = 0; i < 2; ++i) {
        CHECK_MSG(jobs[i].st == HPJ_ERR_INPUT && strstr(jobs[i].why, "trains other graphs"), "rank %d: status %d, '%s'",
                  i, (int)jobs[i].st, jobs[i].why);
        hpj_free_buffer(jobs[i].bytes);
    }
    dp_fail_at = 100; /* (a run makes several hundred collectives) */
    CHECK(dp_train(&ds, &c, gs, 40, 2, jobs, NULL, 0, NULL) > 0);
    dp_fail_at = 0;
    for (i = 0; i < 2; ++i) {
        CHECK_MSG(jobs[i].st == HPJ_ERR_IO && strstr(jobs[i].why, "the communicator failed (rank"),
                  "rank %d: status %d, '%s'", i, (int)jobs[i].st, jobs[i].why);
        hpj_free_buffer(jobs[i].bytes);
    }
    hpj_dataset_free(&ds);
}

const test_case dp_tests[] = {
    {"dp.one_rank_bits", test_one_rank_bits},
    {"dp.ranks_train_one_run", test_ranks_train_one_run},
    {"dp.rank_failure_agreed", test_rank_failure_agreed},
};
const int dp_tests_count = (int)(sizeof dp_tests / sizeof dp_tests[0]);
