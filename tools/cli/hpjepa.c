/* hpjepa - the command-line program of hpjepa.h.
   Subcommands: stats, partition, pretrain, embed, eval, bench, plot. Each prints
   its result lines on stdout, progress on stderr, and on bad input a
   one-line reason on stderr with a non-zero exit. */
#include "cli.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>

/* One line on stderr: control characters of quoted input (a file name or
   value holding a newline, say) come out as \xNN, as in the library. */
void cli_error(const char *cmd, const char *fmt, ...) {
    char msg[2048];
    const unsigned char *c;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hpjepa %s: ", cmd);
    for (c = (const unsigned char *)msg; *c; ++c)
        if (*c >= 0x20 && *c != 0x7F) fputc(*c, stderr);
        else fprintf(stderr, "\\x%02x", *c);
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

long long cli_part_end(long long done, long long every, long long until) {
    long long next = every > 0 ? (done / every + 1) * every : until;
    return next < until ? next : until;
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

/* The value of KEY in a .npy header dict: past the key, its closing quote,
   blanks and the colon; NULL when the key is missing. Never reads past the
   header's NUL (a header may end right after the key). */
static char *npy_value(char *hdr, const char *key) {
    char *p = strstr(hdr, key);
    if (!p) return NULL;
    p += strlen(key);
    if (*p == '\'' || *p == '"') ++p;
    while (*p == ' ' || *p == ':') ++p;
    return p;
}

/* float32 C-order 2-D .npy (format 1.0; 2.0/3.0 differ only in the header
   length field). Checks magic, descr '<f4', fortran_order False, the shape
   and the file size. Returns the data (rows, cols) or NULL with a reason. */
float *cli_read_npy(const char *cmd, const char *path, long long *rows, long long *cols) {
    FILE *f = fopen(path, "rb");
    unsigned char pre[12];
    char *hdr = NULL, *p, *q;
    float *x = NULL;
    long size;
    size_t hlen, start, n;
    long long shape[2];
    int dims = 0;
    if (!f) { cli_error(cmd, "%s: cannot open (%s)", path, strerror(errno)); return NULL; }
    if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) { cli_error(cmd, "%s: cannot read", path); goto fail; }
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) { cli_error(cmd, "%s: not a .npy file (bad magic)", path); goto fail; }
    if (pre[6] == 1) {
        hlen = pre[8] | (size_t)pre[9] << 8;
        start = 10;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) { cli_error(cmd, "%s: truncated .npy header", path); goto fail; }
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        start = 12;
    } else {
        cli_error(cmd, "%s: unsupported .npy format version %d.%d", path, pre[6], pre[7]);
        goto fail;
    }
    if (hlen > 65536 || (long)(start + hlen) > size) { cli_error(cmd, "%s: truncated .npy header", path); goto fail; }
    hdr = (char *)malloc(hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) { cli_error(cmd, "%s: cannot read the .npy header", path); goto fail; }
    hdr[hlen] = 0;
    if (strlen(hdr) != hlen) { cli_error(cmd, "%s: NUL byte in the .npy header", path); goto fail; }
    /* descr */
    p = npy_value(hdr, "descr");
    if (!p || (*p != '\'' && *p != '"') || !(q = strchr(p + 1, *p))) { cli_error(cmd, "%s: .npy header has no descr", path); goto fail; }
    if (q - p - 1 != 3 || strncmp(p + 1, "<f4", 3)) {
        cli_error(cmd, "%s: descr is '%.*s', expected '<f4' (little-endian float32)", path, (int)(q - p - 1 < 16 ? q - p - 1 : 16),
                  p + 1);
        goto fail;
    }
    /* fortran_order */
    p = npy_value(hdr, "fortran_order");
    if (!p || strncmp(p, "False", 5)) { cli_error(cmd, "%s: fortran_order must be False (C order)", path); goto fail; }
    /* shape */
    p = npy_value(hdr, "shape");
    if (!p || *p != '(') { cli_error(cmd, "%s: .npy header has no shape", path); goto fail; }
    for (++p;;) {
        char *end;
        long long v;
        while (*p == ' ') ++p;
        if (*p == ')') break;
        errno = 0;
        v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1000000000LL || dims == 2) {
            dims = 3; /* not a 2-D shape of sane sizes */
            break;
        }
        shape[dims++] = v;
        p = end;
        while (*p == ' ') ++p;
        if (*p == ',') ++p;
        else if (*p != ')') { dims = 3; break; }
    }
    if (dims != 2) { cli_error(cmd, "%s: shape must be 2-D (graphs, width)", path); goto fail; }
    n = (size_t)shape[0] * (size_t)shape[1];
    if (shape[1] && n / (size_t)shape[1] != (size_t)shape[0]) { cli_error(cmd, "%s: shape too large", path); goto fail; }
    if ((unsigned long long)size != start + hlen + n * 4ULL) {
        cli_error(cmd, "%s: file has %ld bytes but shape (%lld, %lld) needs %llu", path, size, shape[0], shape[1],
                  (unsigned long long)(start + hlen + n * 4));
        goto fail;
    }
    x = (float *)malloc(sizeof(float) * (n ? n : 1));
    if (!x) { cli_error(cmd, "out of memory"); goto fail; }
    if (n && fread(x, sizeof(float), n, f) != n) { cli_error(cmd, "%s: read failed", path); goto fail; }
    {
        const unsigned one = 1;
        size_t i;
        if (!*(const unsigned char *)&one) /* big-endian host: the file is little-endian */
            for (i = 0; i < n; ++i) {
                unsigned char *c = (unsigned char *)&x[i], t;
                t = c[0]; c[0] = c[3]; c[3] = t;
                t = c[1]; c[1] = c[2]; c[2] = t;
            }
        for (i = 0; i < n; ++i)
            if (!isfinite(x[i])) {
                cli_error(cmd, "%s: value at row %zu, column %zu is not finite", path, i / (size_t)shape[1], i % (size_t)shape[1]);
                goto fail;
            }
    }
    fclose(f);
    free(hdr);
    *rows = shape[0];
    *cols = shape[1];
    return x;
fail:
    fclose(f);
    free(hdr);
    free(x);
    return NULL;
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

int cli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_sort_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), cli_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
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
