/* hpjepa-mpi - the hpjepa program across MPI processes (make mpi).

   mpirun -np R ./hpjepa-mpi eval DATASET_DIR --config FILE [eval options]
   hands the protocol's (seed, fold) pretrainings round robin to the R
   processes (ranks), each with its own OpenMP threads. Each rank sends every
   fold it finishes to rank 0 as the line --fold-log writes; rank 0 keeps the
   lines (in the fold log too, if one is given) and writes the report and the
   result lines from them: the same bits as ./hpjepa eval, since each fold
   depends only on its seed and fold.

   mpirun -np R ./hpjepa-mpi pretrain DATASET_DIR --config FILE --out MODEL
   trains one model on the R ranks, data-parallel: each minibatch is split
   between them, and the library (hpj_model_set_comm) sums their BatchNorm
   statistics, losses and gradients through the communicator below, so
   every rank applies the same update. Rank 0 prints and writes the files.
   Every other command (embed among them) runs on rank 0 only while the
   other ranks wait.

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
#include <unistd.h>

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

/* ---- pretrain: the communicator of data-parallel training ----
   Each sum is MPI_Reduce to rank 0 followed by MPI_Bcast of rank 0's
   result, rather than MPI_Allreduce: MPI does not promise that an
   allreduce gives every rank the same bits (an algorithm may add in a
   different order on different ranks), and the ranks' parameters must stay
   identical. Counts above INT_MAX go in chunks. These calls block (and
   poll): a step's collectives are short, and every rank is busy with the
   same step. */
static int comm_sum(void *buf, size_t n, MPI_Datatype type, size_t size) {
    char *p = (char *)buf;
    while (n > 0) {
        int k = n > (size_t)1 << 28 ? 1 << 28 : (int)n;
        if (MPI_Reduce(mpi_rank == 0 ? MPI_IN_PLACE : p, p, k, type, MPI_SUM, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
            MPI_Bcast(p, k, type, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            return 1;
        p += (size_t)k * size;
        n -= (size_t)k;
    }
    return 0;
}
static int comm_sum_float(void *u, float *b, size_t n) { (void)u; return comm_sum(b, n, MPI_FLOAT, sizeof *b); }
static int comm_sum_double(void *u, double *b, size_t n) { (void)u; return comm_sum(b, n, MPI_DOUBLE, sizeof *b); }
static int comm_sum_int64(void *u, int64_t *b, size_t n) { (void)u; return comm_sum(b, n, MPI_INT64_T, sizeof *b); }
static int comm_bcast(void *u, void *b, size_t bytes) {
    char *p = (char *)b;
    (void)u;
    while (bytes > 0) {
        int k = bytes > (size_t)1 << 30 ? 1 << 30 : (int)bytes;
        if (MPI_Bcast(p, k, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
        p += k;
        bytes -= (size_t)k;
    }
    return 0;
}

/* A rank > 0's stderr goes to a file of its own while pretrain runs, so
   that a failure every rank meets is said once (by rank 0), and a failure
   of one rank is said by rank 0 with that rank's words (train_agree). */
static FILE *err_file;
static long err_seen; /* what train_agree has already taken of it */
static int train_agreed;

static void capture_stderr(void) {
    fflush(stderr);
    if ((err_file = tmpfile()) != NULL && dup2(fileno(err_file), 2) < 0) {
        fclose(err_file);
        err_file = NULL;
    }
}

/* What this rank wrote to stderr since the last call (at most cap - 1 bytes, its end). */
static void captured(char *buf, size_t cap) {
    long end, from;
    size_t n = 0;
    buf[0] = 0;
    if (!err_file) return;
    fflush(stderr);
    end = lseek(2, 0, SEEK_END);
    from = end - err_seen > (long)cap - 1 ? end - (long)cap + 1 : err_seen;
    if (end > from && lseek(2, from, SEEK_SET) == from) {
        ssize_t r = read(2, buf, (size_t)(end - from));
        n = r > 0 ? (size_t)r : 0;
    }
    buf[n] = 0;
    lseek(2, 0, SEEK_END);
    err_seen = end;
}

static int train_agree(int rc) {
    int mine = rc ? mpi_rank : mpi_size, first = mpi_size;
    struct {
        int code;
        char text[2048];
    } msg;
    train_agreed = 1;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == mpi_size) return 0;
    memset(&msg, 0, sizeof msg);
    if (mpi_rank == first) {
        msg.code = rc;
        captured(msg.text, sizeof msg.text);
    }
    MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, first, MPI_COMM_WORLD);
    if (mpi_rank == 0 && first > 0) { /* rank 0 says it, line by line, naming the rank */
        char *line = msg.text, *nl;
        for (; *line; line = nl ? nl + 1 : line + strlen(line)) {
            nl = strchr(line, '\n');
            if (nl) *nl = 0;
            if (*line) fprintf(stderr, "[rank %d] %s\n", first, line);
            if (!nl) break;
        }
        fflush(stderr);
    }
    return msg.code;
}

static int train_same(uint32_t crc) {
    unsigned lo = crc, hi = crc, a = crc;
    MPI_Allreduce(&a, &lo, 1, MPI_UNSIGNED, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&a, &hi, 1, MPI_UNSIGNED, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
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
    } else if (mpi_size > 1 && !strcmp(cmd, "pretrain") && !has_help(argc, argv)) {
        static hpj_comm comm;
        static cli_train_dist dist;
        comm.rank = mpi_rank;
        comm.size = mpi_size;
        comm.sum_float = comm_sum_float;
        comm.sum_double = comm_sum_double;
        comm.sum_int64 = comm_sum_int64;
        comm.bcast = comm_bcast;
        dist.rank = mpi_rank;
        dist.size = mpi_size;
        dist.comm = &comm;
        dist.agree = train_agree;
        dist.same = train_same;
        cli_pretrain_dist = &dist;
        if (mpi_rank > 0) capture_stderr();
        rc = hpjepa_main(argc, argv);
        fflush(stdout);
        if (!train_agreed) /* it stopped before its setup was done (a usage error): the others wait for its word */
            rc = train_agree(rc ? rc : 1);
    } else if (mpi_size > 1 && mpi_rank > 0) {
        rc = 0; /* the command runs on rank 0 */
    } else {
        int help = has_help(argc, argv) || !strcmp(cmd, "--version") || argc < 2;
        if (mpi_size > 1 && !help)
            fprintf(stderr, "hpjepa-mpi %s: runs on rank 0 only while the other ranks wait (eval and pretrain spread their work "
                            "over the ranks)\n", cmd);
        rc = hpjepa_main(argc, argv);
        if (help && rc == 0 && (!strcmp(cmd, "pretrain") || !strcmp(cmd, "embed") || argc < 2 || cli_is_help(cmd) ||
                                !strcmp(cmd, "help")))
            fputs("hpjepa-mpi (MPI): eval hands its (seed, fold) pretrainings to the ranks and rank 0 writes the report\n"
                  "and the results, the same as ./hpjepa eval; pretrain trains one model on all the ranks, each\n"
                  "minibatch split between them (the one-process run up to the order of summation), and rank 0\n"
                  "prints and writes the files; every other command, embed included, runs on rank 0 only while\n"
                  "the other ranks wait.\n",
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
