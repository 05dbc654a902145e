/* hpjepa - the command-line program of hpjepa.h.
   Subcommands: stats, partition, pretrain, embed, eval, bench, plot. Each prints
   its result lines on stdout, progress on stderr, and on bad input a
   one-line reason on stderr with a non-zero exit. */
#include "cli.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>

void cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "hpjepa %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_parse_int(const char *cmd, const char *what, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v;
    errno = 0;
    if (!s || !*s) { cli_error(cmd, "%s: missing value", what); return -1; }
    v = strtoll(s, &end, 10);
    if (*end != 0 || end == s) { cli_error(cmd, "%s: '%s' is not an integer", what, s); return -1; }
    if (errno == ERANGE || v < lo || v > hi) {
        cli_error(cmd, "%s: %s is out of range %lld..%lld", what, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *what, const char *s, double *out) {
    char *end;
    double v;
    errno = 0;
    if (!s || !*s) { cli_error(cmd, "%s: missing value", what); return -1; }
    v = strtod(s, &end);
    if (*end != 0 || end == s || errno == ERANGE || v != v) {
        cli_error(cmd, "%s: '%s' is not a finite number", what, s);
        return -1;
    }
    *out = v;
    return 0;
}

FILE *cli_create(const char *cmd, const char *path, char *tmp, size_t cap) {
    FILE *f;
    if (snprintf(tmp, cap, "%s.tmp~", path) >= (int)cap) { cli_error(cmd, "%s: path too long", path); return NULL; }
    f = fopen(tmp, "wb");
    if (!f) cli_error(cmd, "%s: cannot create (%s)", tmp, strerror(errno));
    return f;
}

int cli_commit(const char *cmd, FILE *f, int bad, const char *tmp, const char *path) {
    bad |= ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad) { remove(tmp); cli_error(cmd, "%s: write failed", path); return -1; }
    if (rename(tmp, path) != 0) {
        cli_error(cmd, "%s: cannot rename into place (%s)", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

void cli_discard(FILE *f, const char *tmp) {
    fclose(f);
    remove(tmp);
}

int cli_write_npy(const char *cmd, const char *path, const float *x, int64_t rows, int64_t cols) {
    char hdr[128], tmp[4200];
    int hl, pad, total;
    FILE *f;
    size_t n = (size_t)rows * (size_t)cols;
    hl = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }", (long long)rows,
                  (long long)cols);
    total = 10 + hl + 1;
    pad = (64 - total % 64) % 64;
    if (!(f = cli_create(cmd, path, tmp, sizeof tmp))) return -1;
    {
        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        int hlen = hl + pad + 1, k, bad;
        pre[8] = (unsigned char)(hlen & 0xFF);
        pre[9] = (unsigned char)(hlen >> 8);
        bad = fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, (size_t)hl, f) != (size_t)hl;
        for (k = 0; k < pad; ++k) bad |= fputc(' ', f) == EOF;
        bad |= fputc('\n', f) == EOF;
        bad |= n && fwrite(x, sizeof(float), n, f) != n; /* little-endian hosts */
        return cli_commit(cmd, f, bad, tmp, path);
    }
}

int cli_check_writable(const char *cmd, const char *path) {
    char tmp[4200];
    FILE *f = cli_create(cmd, path, tmp, sizeof tmp);
    if (!f) return -1;
    cli_discard(f, tmp);
    return 0;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_is_help(const char *s) { return s && (!strcmp(s, "-h") || !strcmp(s, "--help")); }

/* ---- stats --------------------------------------------------------------- */

static const char *stats_usage =
    "usage: hpjepa stats DATASET_DIR\n"
    "  Loads a TUDataset folder (e.g. data/PROTEINS holding PROTEINS_A.txt ...)\n"
    "  and prints: graphs=<int> classes=<int> avg_nodes=<float> avg_edges=<float>\n"
    "  avg_edges counts distinct undirected non-loop node pairs per graph;\n"
    "  classes is 0 for a regression dataset. Load details go to stderr.\n";

int cmd_stats(int argc, char **argv) {
    hpj_dataset ds;
    double t0, t1;
    if (argc >= 2 && cli_is_help(argv[1])) { fputs(stats_usage, stdout); return 0; }
    if (argc != 2) {
        cli_error("stats", "expected one DATASET_DIR argument, got %d (usage: hpjepa stats DATASET_DIR)", argc - 1);
        return 2;
    }
    t0 = cli_now();
    if (hpj_dataset_load_tu(argv[1], &ds) != HPJ_OK) {
        cli_error("stats", "%s", hpj_last_error());
        return 1;
    }
    t1 = cli_now();
    printf("graphs=%d classes=%d avg_nodes=%.2f avg_edges=%.2f\n", ds.num_graphs, ds.num_classes,
           ds.num_graphs ? (double)ds.num_nodes / ds.num_graphs : 0.0,
           ds.num_graphs ? (double)ds.num_edges / 2.0 / ds.num_graphs : 0.0);
    fprintf(stderr, "%s: loaded in %.3f s; %lld nodes, %lld undirected edges", ds.name, t1 - t0,
            (long long)ds.num_nodes, (long long)(ds.num_edges / 2));
    if (ds.dup_lines) fprintf(stderr, ", %lld duplicate edge lines dropped", (long long)ds.dup_lines);
    if (ds.self_loops) fprintf(stderr, ", %lld self-loops dropped", (long long)ds.self_loops);
    if (ds.node_label) fprintf(stderr, ", node labels %d..%d", ds.node_label_min, ds.node_label_max);
    if (ds.edge_label) fprintf(stderr, ", edge labels %d..%d", ds.edge_label_min, ds.edge_label_max);
    if (ds.node_attr) fprintf(stderr, ", %d node attributes", ds.node_attr_dim);
    if (ds.edge_attr) fprintf(stderr, ", %d edge attributes", ds.edge_attr_dim);
    if (ds.target) fprintf(stderr, ", %d regression targets", ds.target_dim);
    if (ds.split) fprintf(stderr, ", split file");
    fputc('\n', stderr);
    hpj_dataset_free(&ds);
    return 0;
}

/* ---- dispatch ------------------------------------------------------------ */

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
