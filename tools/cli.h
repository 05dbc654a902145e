/* cli.h - shared pieces of the hpjepa command-line program. */
#ifndef HPJ_CLI_H
#define HPJ_CLI_H
#include "../hpjepa.h"

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
/* Wall-clock seconds (monotonic). */
double cli_now(void);
/* 1 if s is "-h" or "--help". */
int cli_is_help(const char *s);
#endif
