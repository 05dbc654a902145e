/* hpjepa-mpi - the hpjepa program across MPI processes (make mpi).

   mpirun -np R ./hpjepa-mpi eval DATASET_DIR --config FILE [eval options]
   hands the protocol's (seed, fold) pretrainings round robin to the R
   processes (ranks), each with its own OpenMP threads. Each rank sends every
   fold it finishes to rank 0 as the line --fold-log writes; rank 0 keeps the
   lines (in the fold log too, if one is given) and writes the report and the
   result lines from them: the same bits as ./hpjepa eval, since each fold
   depends only on its seed and fold. Every other command runs on rank 0
   only while the other ranks wait: pretraining is not split across ranks.

   This file is the only one that calls MPI. It implements the hooks of
   cli.h (cli_dist) with MPI and wraps the program's main; the header
   hpjepa.h knows nothing of MPI. */
#define main hpjepa_main /* the program's main (tools/cli/hpjepa.c), renamed */
#include "../cli/hpjepa.c"
#undef main
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE_TAG 56 /* the MPI tag of a fold's line */

static int mpi_rank, mpi_size;

/* How far eval got in cli.h's order of calls: what a rank that returns
   early still owes the others, so that none waits for it forever. */
enum { BEFORE_START, STARTED, AGREED, ENDED };
static int stage = BEFORE_START;

/* A wait that does not spin: MPI's blocking calls poll at full speed, which
   would take a core from a rank still pretraining on the same node. */
static void nap(void) {
    struct timespec ts = {0, 5000000}; /* 5 ms */
    nanosleep(&ts, NULL);
}

static void wait_for(MPI_Request *req) {
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        nap();
    }
}

static int dist_start(int code, uint64_t *key) {
    int64_t msg[2];
    MPI_Request req;
    msg[0] = code;
    msg[1] = (int64_t)*key;
    MPI_Ibcast(msg, 2, MPI_INT64_T, 0, MPI_COMM_WORLD, &req);
    wait_for(&req);
    *key = (uint64_t)msg[1];
    stage = msg[0] == CLI_DIST_GO ? STARTED : ENDED;
    return (int)msg[0];
}

static int dist_agree(int rc) {
    int all = 0;
    MPI_Request req;
    MPI_Iallreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    wait_for(&req);
    stage = all ? ENDED : AGREED;
    return all;
}

static void dist_bcast(void *buf, size_t bytes) {
    char *p = (char *)buf;
    while (bytes > 0) { /* MPI counts are ints */
        int n = bytes > (size_t)1 << 30 ? 1 << 30 : (int)bytes;
        MPI_Request req;
        MPI_Ibcast(p, n, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        wait_for(&req);
        p += n;
        bytes -= (size_t)n;
    }
}

/* The lines sent, kept until MPI is done with them (at the end). */
static MPI_Request *sent_req;
static char **sent_buf;
static int nsent, capsent;

static int dist_send(const char *line) {
    size_t n = strlen(line) + 1; /* with its NUL */
    char *copy = (char *)malloc(n);
    if (nsent == capsent) {
        int cap = capsent ? 2 * capsent : 16;
        MPI_Request *r = (MPI_Request *)realloc(sent_req, sizeof(MPI_Request) * (size_t)cap);
        char **b = r ? (char **)realloc(sent_buf, sizeof(char *) * (size_t)cap) : NULL;
        if (r) sent_req = r;
        if (b) sent_buf = b;
        if (b) capsent = cap;
    }
    if (!copy || nsent == capsent || n > INT_MAX) {
        free(copy);
        cli_error("eval", "rank %d: out of memory for a fold's line", mpi_rank);
        return -1;
    }
    memcpy(copy, line, n);
    MPI_Isend(copy, (int)n, MPI_CHAR, 0, LINE_TAG, MPI_COMM_WORLD, &sent_req[nsent]);
    sent_buf[nsent++] = copy;
    return 0;
}

static char *dist_recv(int wait, int *from) {
    for (;;) {
        MPI_Status st;
        int flag = 0, n = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, LINE_TAG, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            char *line;
            MPI_Get_count(&st, MPI_CHAR, &n);
            if (!(line = (char *)malloc((size_t)n + 1))) {
                cli_error("eval", "out of memory for rank %d's line", st.MPI_SOURCE);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Recv(line, n, MPI_CHAR, st.MPI_SOURCE, LINE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            line[n] = 0;
            *from = st.MPI_SOURCE;
            return line;
        }
        if (!wait) return NULL;
        nap();
    }
}

static int has_help(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; ++i)
        if (cli_is_help(argv[i]) || !strcmp(argv[i], "help")) return 1;
    return 0;
}

int main(int argc, char **argv) {
    int provided, rc, i;
    const char *cmd;
    /* OpenMP threads never call MPI: only the main thread does */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    cmd = argc >= 2 ? argv[1] : "";
    if (mpi_size > 1 && !strcmp(cmd, "eval")) {
        static cli_dist dist;
        dist.rank = mpi_rank;
        dist.size = mpi_size;
        dist.start = dist_start;
        dist.agree = dist_agree;
        dist.bcast = dist_bcast;
        dist.send = dist_send;
        dist.recv = dist_recv;
        cli_eval_dist = &dist;
        rc = hpjepa_main(argc, argv);
        fflush(stdout);
        if (stage == BEFORE_START) { /* rank 0 stopped before its setup was done: all end with its code */
            uint64_t key = 0;
            dist_start(rc, &key);
        } else if (stage == STARTED) /* a rank failed to set up: all end with its code */
            dist_agree(rc ? rc : 1);
        else if (stage == AGREED && rc != 0) /* a rank failed at work: end the job at once (it said why) */
            MPI_Abort(MPI_COMM_WORLD, rc);
    } else if (mpi_size > 1 && mpi_rank > 0) {
        rc = 0; /* the command runs on rank 0 */
    } else {
        int help = has_help(argc, argv) || !strcmp(cmd, "--version") || argc < 2;
        if (mpi_size > 1 && !help)
            fprintf(stderr, "hpjepa-mpi %s: runs on rank 0 only while the other ranks wait (only eval spreads its work "
                            "over the ranks)\n", cmd);
        rc = hpjepa_main(argc, argv);
        if (help && rc == 0 && (!strcmp(cmd, "pretrain") || !strcmp(cmd, "embed") || argc < 2 || cli_is_help(cmd) ||
                                !strcmp(cmd, "help")))
            fputs("hpjepa-mpi (MPI): eval hands its (seed, fold) pretrainings to the ranks and rank 0 writes the report\n"
                  "and the results, the same as ./hpjepa eval; every other command, pretrain and embed included,\n"
                  "runs on rank 0 only while the other ranks wait: data-parallel pretraining is not there yet.\n",
                  stdout);
    }
    /* the command is over, its files complete: when a rank ends with an
       error, mpirun stops the others with SIGTERM, which is then no
       interruption to report */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < nsent; ++i) { /* rank 0 takes every line before it reports */
        wait_for(&sent_req[i]);
        free(sent_buf[i]);
    }
    free(sent_req);
    free(sent_buf);
    { /* the ranks end together, idle until then */
        MPI_Request req;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        wait_for(&req);
    }
    MPI_Finalize();
    return rc;
}
