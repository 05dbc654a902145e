/* cli.h - shared pieces of the hpjepa command-line program: the subcommands
   (cmd_*.c) and the helpers they share (cli.c). */
#ifndef HPJ_CLI_H
#define HPJ_CLI_H
#include "../../hpjepa.h"

/* Each subcommand: argv[0] is the subcommand name. Returns the exit code:
   0 ok, 1 failure (reason already printed), 2 usage error. */
int cmd_stats(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_bench_gemm(int argc, char **argv);
int cmd_pretrain(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench_train(int argc, char **argv);
int cmd_bench_probe(int argc, char **argv);
int cmd_plot(int argc, char **argv);

/* Prints "hpjepa <cmd>: <message>" on stderr (one line). */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Parses a whole decimal integer / real; 0 on success, -1 with a printed
   reason otherwise. `what` names the argument in the message. */
int cli_parse_int(const char *cmd, const char *what, const char *s, long long lo, long long hi, long long *out);
int cli_parse_double(const char *cmd, const char *what, const char *s, double *out);
/* The model commands' shared options (--config, --set, --threads, --seed).
   cli_model_configs loads every --config FILE of the line, in order, before
   the loop over the arguments; in that loop cli_model_options sets
   *consumed to the arguments used at argv[i] (0: not one of them) and
   applies --set, --threads and --seed, so they win over the files wherever
   they stand. Both return -1 with a printed reason on a bad value.
   cli_model_check holds the result to the library's rules (-1 with a
   reason naming the file it came from). */
int cli_model_configs(const char *cmd, int argc, char **argv, hpj_config *cfg);
int cli_model_options(const char *cmd, int argc, char **argv, int i, hpj_config *cfg, int *consumed);
int cli_model_check(const char *cmd, const hpj_config *cfg);
int cli_model_config_given(void); /* 1: the line had a --config */
#define CLI_NO_CONFIG_NOTE "  no --config: the library's defaults (data/configs/ holds one per dataset)\n"
/* The message for an option no model command knows (naming --set when it
   is a config key). */
void cli_model_unknown(const char *cmd, const char *arg);
/* Loads a TU dataset folder; -1 with a printed reason. */
int cli_load_dataset(const char *cmd, const char *dir, hpj_dataset *ds);
/* Atomic output files: cli_create opens PATH.tmp~ for writing (its name
   goes to tmp, cap bytes); cli_commit closes it and renames it onto path,
   or removes it when `bad` is set or the writes failed; cli_discard closes
   and removes it without a message. cli_create / cli_commit print the
   reason (naming PATH) and return NULL / -1 on failure, so a failed command
   never leaves a partial file behind; an interrupted one neither (below). */
#include <stdio.h>
FILE *cli_create(const char *cmd, const char *path, char *tmp, size_t cap);
int cli_commit(const char *cmd, FILE *f, int bad, const char *tmp, const char *path);
void cli_discard(FILE *f, const char *tmp);
/* Interruption. cli_signals_init (main, before the command runs) makes
   SIGINT and SIGTERM remove every watched temporary file, print the
   command's interruption note and exit with 130 / 143. cli_temp_watch
   watches PATH.tmp~ until cli_temp_unwatch(slot) (cli_create / cli_commit
   do it for their files; wrap library calls that write PATH atomically);
   -1 (nothing watched) when all slots are taken. cli_interrupt_note sets
   what follows "hpjepa CMD: interrupted; " (default "nothing written"): a
   resumable run says there how to continue. */
void cli_signals_init(const char *cmd);
int cli_temp_watch(const char *path);
void cli_temp_unwatch(int slot);
void cli_interrupt_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* hpj_model_save with PATH.tmp~ watched. */
hpj_status cli_model_save(const hpj_model *m, const char *path, int with_optimizer);
/* Writes rows x cols float32 values as a C-order .npy file (format 1.0),
   atomically as above; 0 or -1 with a printed reason. */
int cli_write_npy(const char *cmd, const char *path, const float *x, int64_t rows, int64_t cols);
/* Reads a float32 C-order 2-D .npy (format 1.0-3.0): magic, descr '<f4',
   fortran_order False, the shape against the file size, finite values.
   Returns malloc'd (rows, cols) data, or NULL with a printed reason. */
float *cli_read_npy(const char *cmd, const char *path, long long *rows, long long *cols);
/* 0 if PATH can be created (checked by creating and removing PATH.tmp~;
   an existing folder is refused), else -1 with a printed reason: every
   command checks its outputs so that it fails before its work. */
int cli_check_writable(const char *cmd, const char *path);
/* Wall-clock seconds (monotonic). */
double cli_now(void);
/* qsort comparator of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);
/* Sorts x (n >= 1) ascending in place; returns its median (the mean of the
   two middle values when n is even). */
double cli_sort_median(double *x, int n);
/* Pretraining in parts (pretrain and eval --checkpoint-every): the epoch at
   which the part after `done` epochs ends, parts of `every` epochs (0: one
   part) that never pass `until`. */
long long cli_part_end(long long done, long long every, long long until);
/* 1 if s is "-h" or "--help". */
int cli_is_help(const char *s);
/* Progress on stderr (cmd_model.c). cli_tty_width: 0 when stderr is not a
   terminal (write plain lines then), else the columns a redrawn line may
   use. cli_fmt_time: "1h02m", "3m04s", "12s". cli_progress_line redraws
   the terminal's progress line, "[####....] text" in width - 1 columns:
   the bar narrows or goes, then `brief` (may be NULL) replaces `full`. */
int cli_tty_width(void);
void cli_fmt_time(double seconds, char *buf, size_t cap);
void cli_progress_line(int width, double frac, const char *full, const char *brief);

/* eval across processes. hpjepa-mpi (make mpi, tools/mpi/hpjepa_mpi.c)
   hands eval's (seed, fold) pretrainings to its processes, the ranks; rank 0
   gathers the folds' results and writes the report. cmd_eval.c reaches MPI
   only through these hooks, which hpjepa-mpi sets in cli_eval_dist before
   the program's main runs; NULL (./hpjepa) or one rank is one process. Every
   rank runs the same eval command line, and the calls come in this order:
     start  rank 0 after its setup (options, output checks, dataset, fold
            log) with code -1 to go on, else the exit code of all; ranks > 0
            before their setup: they get that code (and rank 0's key, so a
            rank with another dataset or config is caught before any work)
     agree  every rank after its setup, with its exit code so far (0): the
            largest of them; non-zero ends every rank with it (the rank that
            failed said why)
     bcast  rank 0's plan of the protocol's folds, the same on every rank
     send   rank > 0: a finished fold's line (as the fold log writes it) to
            rank 0, without waiting for rank 0 to receive it
     recv   rank 0: the next line any rank sent (malloc'd; *from: its rank);
            NULL when none is waiting and wait is 0
   A rank that fails after agree returns non-zero, and hpjepa-mpi then ends
   the whole job (MPI_Abort): no rank waits for a line that never comes. */
#define CLI_DIST_GO (-1)
typedef struct cli_dist {
    int rank, size;
    int (*start)(int code, uint64_t *key);
    int (*agree)(int rc);
    void (*bcast)(void *buf, size_t bytes);
    int (*send)(const char *line);
    char *(*recv)(int wait, int *from);
} cli_dist;
extern const cli_dist *cli_eval_dist;

/* pretrain across processes. hpjepa-mpi trains one model on all its
   ranks, data-parallel (hpj_model_set_comm): every rank runs the same
   pretrain command line, rank 0 alone prints progress and writes files.
   cmd_model.c reaches MPI only through these hooks, which hpjepa-mpi sets
   in cli_pretrain_dist before the program's main runs; NULL (./hpjepa) or
   one rank is one process.
     comm   handed to hpj_model_set_comm (the collectives of training)
     agree  every rank with its exit code so far (0: ready; after each
            checkpoint rank 0 with its save's, the others 0): the code of
            the first rank that failed, which every rank then returns
            (hpjepa-mpi prints that rank's reason once); 0 goes on
     same   every rank after training with a CRC of its model: 1 if every
            rank holds the same one */
typedef struct cli_train_dist {
    int rank, size;
    const hpj_comm *comm;
    int (*agree)(int rc);
    int (*same)(uint32_t crc);
} cli_train_dist;
extern const cli_train_dist *cli_pretrain_dist;
#endif
