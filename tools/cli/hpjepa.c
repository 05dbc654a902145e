/* hpjepa - the command-line program of hpjepa.h: main and the dispatch to
   the subcommands (cmd_*.c; their shared helpers are in cli.c).
   Subcommands: stats, partition, pretrain, embed, eval, bench, plot. Each prints
   its result lines on stdout, progress on stderr, and on bad input a
   one-line reason on stderr with a non-zero exit. */
#include "cli.h"
#include <stdio.h>
#include <string.h>

static const char *main_usage =
    "usage: hpjepa COMMAND [ARGS]   (hpjepa COMMAND --help for details)\n"
    "  stats DATASET_DIR                         dataset statistics\n"
    "  partition GRAPH_FILE K [--seed S] [--method kway|rb] [--out FILE]\n"
    "                                            multilevel graph partitioning\n"
    "  pretrain DATASET_DIR --config FILE [--set key=value ...] --out MODEL\n"
    "  embed MODEL DATASET_DIR --out FILE.npy [--readout concat|uniform]\n"
    "  eval DATASET_DIR --config FILE [--folds N] [--seeds N] [--set key=value ...]\n"
    "  bench gemm M N K [--threads T] [--layout nn|nt|tn|tt|all] [--secs S] [--isa I]\n"
    "                                            GEMM throughput\n"
    "  bench train DATASET_DIR --config FILE [--steps N]\n"
    "  bench probe ...                           probe fitting speed\n"
    "  plot quartiles|sweep|tsne|loss ... --out F.svg\n"
    "                                            SVG figures of the analyses\n";

int main(int argc, char **argv) {
    const char *c;
    if (argc < 2) {
        fprintf(stderr, "hpjepa: missing command (stats, partition, pretrain, embed, eval, bench, plot; try hpjepa --help)\n");
        return 2;
    }
    c = argv[1];
    if (cli_is_help(c) || !strcmp(c, "help")) { fputs(main_usage, stdout); return 0; }
    if (!strcmp(c, "--version")) {
        printf("hpjepa %d.%d.%d\n", HPJEPA_VERSION_MAJOR, HPJEPA_VERSION_MINOR, HPJEPA_VERSION_PATCH);
        return 0;
    }
    /* from here on Ctrl-C or a kill removes the command's temporary files */
    cli_signals_init(c);
    if (!strcmp(c, "stats")) return cmd_stats(argc - 1, argv + 1);
    if (!strcmp(c, "partition")) return cmd_partition(argc - 1, argv + 1);
    if (!strcmp(c, "pretrain")) return cmd_pretrain(argc - 1, argv + 1);
    if (!strcmp(c, "embed")) return cmd_embed(argc - 1, argv + 1);
    if (!strcmp(c, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(c, "plot")) return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(c, "bench")) {
        if (argc < 3 || cli_is_help(argv[2])) {
            fputs("usage: hpjepa bench gemm|train|probe ... (e.g. hpjepa bench gemm --help)\n", argc < 3 ? stderr : stdout);
            return argc < 3 ? 2 : 0;
        }
        if (!strcmp(argv[2], "gemm")) return cmd_bench_gemm(argc - 2, argv + 2);
        if (!strcmp(argv[2], "train")) return cmd_bench_train(argc - 2, argv + 2);
        if (!strcmp(argv[2], "probe")) return cmd_bench_probe(argc - 2, argv + 2);
        cli_error("bench", "unknown benchmark '%s' (gemm, train, probe)", argv[2]);
        return 2;
    }
    fprintf(stderr, "hpjepa: unknown command '%s' (try hpjepa --help)\n", c);
    return 2;
}
