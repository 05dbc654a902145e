/* cli.h - shared pieces of the hpjepa command-line program. */
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
/* Atomic output files: cli_create opens PATH.tmp~ for writing (its name
   goes to tmp, cap bytes); cli_commit closes it and renames it onto path,
   or removes it when `bad` is set or the writes failed; cli_discard closes
   and removes it without a message. cli_create / cli_commit print the
   reason and return NULL / -1 on failure, so a failed command never leaves
   a partial file behind. */
#include <stdio.h>
FILE *cli_create(const char *cmd, const char *path, char *tmp, size_t cap);
int cli_commit(const char *cmd, FILE *f, int bad, const char *tmp, const char *path);
void cli_discard(FILE *f, const char *tmp);
/* Writes rows x cols float32 values as a C-order .npy file (format 1.0),
   atomically as above; 0 or -1 with a printed reason. */
int cli_write_npy(const char *cmd, const char *path, const float *x, int64_t rows, int64_t cols);
/* Reads a float32 C-order 2-D .npy (format 1.0-3.0): magic, descr '<f4',
   fortran_order False, the shape against the file size, finite values.
   Returns malloc'd (rows, cols) data, or NULL with a printed reason. */
float *cli_read_npy(const char *cmd, const char *path, long long *rows, long long *cols);
/* 0 if PATH can be created (checked by creating and removing PATH.tmp~),
   else -1 with a printed reason: lets a long command fail before its work. */
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
#endif
