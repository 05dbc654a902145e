/* cli.c - the helpers every hpjepa subcommand shares: one-line errors,
   argument parsing, atomic output files and the temporary files an
   interruption must not leave behind, .npy reading and writing, timing. */
#include "cli.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* The cleanup on SIGINT / SIGTERM needs POSIX (sigaction, unlink, write,
   _exit); the Makefile asks for it with _POSIX_C_SOURCE. Without it the
   program still builds and an interruption keeps the default behaviour. */
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
#define CLI_POSIX 1
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

/* ---- messages ------------------------------------------------------------ */

/* "hpjepa <cmd>: <message>\n" into buf: control characters of quoted input
   (a file name or value holding a newline, say) come out as \xNN, as in the
   library, so the message stays one line. */
static void cli_format_line(char *buf, size_t cap, const char *cmd, const char *fmt, va_list ap) {
    char msg[2048];
    const unsigned char *c;
    size_t n;
    vsnprintf(msg, sizeof msg, fmt, ap);
    n = (size_t)snprintf(buf, cap, "hpjepa %s: ", cmd);
    for (c = (const unsigned char *)msg; *c && n + 6 < cap; ++c)
        if (*c >= 0x20 && *c != 0x7F) buf[n++] = (char)*c;
        else n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", *c);
    buf[n++] = '\n';
    buf[n] = 0;
}

void cli_error(const char *cmd, const char *fmt, ...) {
    char line[2600];
    va_list ap;
    va_start(ap, fmt);
    cli_format_line(line, sizeof line, cmd, fmt, ap);
    va_end(ap);
    fputs(line, stderr);
}

/* ---- interruption: temporary files and the last word ---------------------- */

/* Every output is written to PATH.tmp~ and renamed into place when
   complete, so a failure leaves no partial file. A signal must not leave
   the temporary file either: the files open at any moment are listed here,
   and the handler removes them, says one line and exits. A handler may only
   call async-signal-safe functions (unlink, write, _exit), so everything it
   needs is prepared beforehand in fixed buffers. The buffers are volatile:
   a path is complete before its slot is marked live, in the order the
   handler reads them. Slots are taken under a critical section because
   eval's lanes save fold models from several threads at once (up to 64
   lanes, hence the slots: one each, and room for the command's own files). */
enum { CLI_TEMPS = 80, CLI_TEMP_CAP = 4200, CLI_NOTE_CAP = 2600 };
static volatile char cli_temp_path[CLI_TEMPS][CLI_TEMP_CAP];
static volatile sig_atomic_t cli_temp_live[CLI_TEMPS];
/* the line to print on interruption; two buffers so that a new one is
   complete before it becomes current */
static volatile char cli_note[2][CLI_NOTE_CAP];
static volatile sig_atomic_t cli_note_cur;
static const char *cli_cmd_name = "";
#ifdef CLI_POSIX
static int cli_note_newline; /* stderr is a terminal: end the progress line first */
#endif

int cli_temp_watch(const char *path) {
    size_t n = strlen(path), k;
    int slot = -1, i;
    if (n + 6 > CLI_TEMP_CAP) return -1; /* too long to hold: the file is still written, not cleaned */
#ifdef _OPENMP
#pragma omp critical(cli_temps)
#endif
    {
        for (i = 0; i < CLI_TEMPS && slot < 0; ++i)
            if (!cli_temp_live[i]) slot = i;
        if (slot >= 0) {
            for (k = 0; k < n; ++k) cli_temp_path[slot][k] = path[k];
            for (k = 0; k < 6; ++k) cli_temp_path[slot][n + k] = ".tmp~"[k];
            cli_temp_live[slot] = 1;
        }
    }
    return slot;
}

void cli_temp_unwatch(int slot) {
    if (slot >= 0 && slot < CLI_TEMPS) cli_temp_live[slot] = 0;
}

/* The slot watching tmp (a PATH.tmp~ name), or -1. */
static int cli_temp_find(const char *tmp) {
    int i, slot = -1;
#ifdef _OPENMP
#pragma omp critical(cli_temps)
#endif
    for (i = 0; i < CLI_TEMPS && slot < 0; ++i)
        if (cli_temp_live[i]) {
            size_t k = 0;
            while (tmp[k] && cli_temp_path[i][k] == tmp[k]) ++k;
            if (!tmp[k] && !cli_temp_path[i][k]) slot = i;
        }
    return slot;
}

void cli_interrupt_note(const char *fmt, ...) {
    char line[CLI_NOTE_CAP], full[CLI_NOTE_CAP + 32];
    int next = !cli_note_cur;
    size_t k;
    va_list ap;
    snprintf(full, sizeof full, "interrupted; %s", fmt);
    va_start(ap, fmt);
    cli_format_line(line, sizeof line, cli_cmd_name, full, ap);
    va_end(ap);
    for (k = 0; line[k]; ++k) cli_note[next][k] = line[k];
    cli_note[next][k] = 0;
    cli_note_cur = next;
}

#ifdef CLI_POSIX
static void cli_on_signal(int sig) {
    char buf[CLI_TEMP_CAP > CLI_NOTE_CAP ? CLI_TEMP_CAP : CLI_NOTE_CAP];
    int i, cur = cli_note_cur;
    size_t k;
    ssize_t w;
    for (i = 0; i < CLI_TEMPS; ++i)
        if (cli_temp_live[i]) {
            for (k = 0; k + 1 < sizeof buf && cli_temp_path[i][k]; ++k) buf[k] = cli_temp_path[i][k];
            buf[k] = 0;
            unlink(buf);
        }
    if (cli_note_newline) w = write(2, "\n", 1);
    for (k = 0; k + 1 < sizeof buf && cli_note[cur][k]; ++k) buf[k] = cli_note[cur][k];
    w = write(2, buf, k);
    (void)w; /* nothing to do if stderr is gone */
    _exit(sig == SIGINT ? 130 : 143);
}
#endif

void cli_signals_init(const char *cmd) {
    cli_cmd_name = cmd;
    cli_interrupt_note("nothing written");
#ifdef CLI_POSIX
    {
        static const int sigs[2] = {SIGINT, SIGTERM};
        struct sigaction sa, old;
        int i;
        cli_note_newline = isatty(2);
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = cli_on_signal;
        sigemptyset(&sa.sa_mask);
        for (i = 0; i < 2; ++i) sigaddset(&sa.sa_mask, sigs[i]); /* one handler at a time */
        for (i = 0; i < 2; ++i)
            /* a signal the parent ignores stays ignored (a job started with
               `&` from a script is not meant to die of the script's Ctrl-C) */
            if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    }
#endif
}

/* ---- argument parsing ------------------------------------------------------ */

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

int cli_is_help(const char *s) { return s && (!strcmp(s, "-h") || !strcmp(s, "--help")); }

/* The options of every model command: --config and --set go through the
   library's parser (the one text path of a config value), --threads and
   --seed are plain numbers. The files come first, in their order, and the
   single values on top of them wherever they stand on the line: with
   `--set epochs=1 --config F` the file would otherwise undo the --set.
   What the config came from, for cli_model_check's message: */
static const char *cli_cfg_file; /* the last --config, or NULL */
static int cli_cfg_sets;         /* --set given */

int cli_model_configs(const char *cmd, int argc, char **argv, hpj_config *cfg) {
    int i;
    cli_cfg_file = NULL;
    cli_cfg_sets = 0;
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--set")) cli_cfg_sets = 1;
        if (strcmp(argv[i], "--config")) continue;
        if (i + 1 >= argc) { cli_error(cmd, "--config needs a FILE"); return -1; }
        if (hpj_config_load(cfg, argv[i + 1]) != HPJ_OK) { cli_error(cmd, "%s", hpj_last_error()); return -1; }
        cli_cfg_file = argv[++i];
    }
    return 0;
}

int cli_model_config_given(void) { return cli_cfg_file != NULL; }

int cli_model_check(const char *cmd, const hpj_config *cfg) {
    const char *msg;
    if (hpj_config_check(cfg) == HPJ_OK) return 0;
    msg = hpj_last_error();
    if (!strncmp(msg, "config: ", 8)) msg += 8;
    cli_error(cmd, "%s%s: %s", cli_cfg_file ? cli_cfg_file : cli_cfg_sets ? "--set" : "the default config",
              cli_cfg_file && cli_cfg_sets ? " with --set" : "", msg);
    return -1;
}

void cli_model_unknown(const char *cmd, const char *arg) {
    int i, n;
    const hpj_config_key *keys = hpj_config_keys(&n);
    for (i = 0; i < n; ++i) /* "--epochs 5": a config key given as an option */
        if (!strncmp(arg, "--", 2) && !strcmp(arg + 2, keys[i].name)) {
            cli_error(cmd, "unknown option '%s' (config keys go through --set: --set %s=VALUE)", arg, keys[i].name);
            return;
        }
    cli_error(cmd, "unknown option '%s' (see --help)", arg);
}

int cli_model_options(const char *cmd, int argc, char **argv, int i, hpj_config *cfg, int *consumed) {
    const char *a = argv[i];
    *consumed = 0;
    if (!strcmp(a, "--config")) { /* loaded (and its FILE checked) by cli_model_configs */
        *consumed = 2;
    } else if (!strcmp(a, "--set")) {
        char key[128], *eq;
        if (i + 1 >= argc) { cli_error(cmd, "--set needs key=value"); return -1; }
        eq = strchr(argv[i + 1], '=');
        if (!eq || eq == argv[i + 1] || (size_t)(eq - argv[i + 1]) >= sizeof key) {
            cli_error(cmd, "--set expects key=value, got '%s'", argv[i + 1]);
            return -1;
        }
        memcpy(key, argv[i + 1], (size_t)(eq - argv[i + 1]));
        key[eq - argv[i + 1]] = 0;
        if (hpj_config_set(cfg, key, eq + 1) != HPJ_OK) { cli_error(cmd, "--set %s", hpj_last_error()); return -1; }
        *consumed = 2;
    } else if (!strcmp(a, "--threads")) {
        long long t;
        if (i + 1 >= argc || cli_parse_int(cmd, "--threads", argv[i + 1], 1, 4096, &t)) return -1;
        cfg->threads = (int)t;
        *consumed = 2;
    } else if (!strcmp(a, "--seed")) {
        long long t;
        if (i + 1 >= argc || cli_parse_int(cmd, "--seed", argv[i + 1], 0, (long long)1 << 62, &t)) return -1;
        cfg->seed = (uint64_t)t;
        *consumed = 2;
    }
    return 0;
}

int cli_load_dataset(const char *cmd, const char *dir, hpj_dataset *ds) {
#ifdef CLI_POSIX
    char other[256] = "";
    DIR *d;
#endif
    if (hpj_dataset_load_tu(dir, ds) == HPJ_OK) return 0;
#ifdef CLI_POSIX
    /* The files are found by the folder's name (PROTEINS/PROTEINS_A.txt): a
       renamed folder (proteins/ holding PROTEINS_A.txt) reads as empty. */
    if (strstr(hpj_last_error(), "_A.txt: cannot open") && (d = opendir(dir)) != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t n = strlen(e->d_name);
            if (n > 6 && n < sizeof other && !strcmp(e->d_name + n - 6, "_A.txt")) {
                memcpy(other, e->d_name, n + 1);
                break;
            }
        }
        closedir(d);
    }
    if (other[0]) {
        cli_error(cmd, "%s: holds %s, but a TU dataset's files must be named after their folder (rename the folder "
                  "to %.*s)", dir, other, (int)(strlen(other) - 6), other);
        return -1;
    }
#endif
    cli_error(cmd, "%s", hpj_last_error());
    return -1;
}

/* ---- atomic output files ----------------------------------------------------- */

FILE *cli_create(const char *cmd, const char *path, char *tmp, size_t cap) {
    FILE *f;
    int slot;
    if (snprintf(tmp, cap, "%s.tmp~", path) >= (int)cap) { cli_error(cmd, "%s: path too long", path); return NULL; }
    slot = cli_temp_watch(path); /* before it exists: a signal between the two finds nothing to remove */
    f = fopen(tmp, "wb");
    if (!f) {
        cli_error(cmd, "%s: cannot create (%s)", path, strerror(errno));
        cli_temp_unwatch(slot);
    }
    return f;
}

int cli_commit(const char *cmd, FILE *f, int bad, const char *tmp, const char *path) {
    int slot = cli_temp_find(tmp), rc = 0;
    bad |= ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        remove(tmp);
        cli_error(cmd, "%s: write failed", path);
        rc = -1;
    } else if (rename(tmp, path) != 0) {
        cli_error(cmd, "%s: cannot rename into place (%s)", path, strerror(errno));
        remove(tmp);
        rc = -1;
    }
    cli_temp_unwatch(slot); /* after: until the rename, a signal removes it */
    return rc;
}

void cli_discard(FILE *f, const char *tmp) {
    int slot = cli_temp_find(tmp);
    fclose(f);
    remove(tmp);
    cli_temp_unwatch(slot);
}

int cli_check_writable(const char *cmd, const char *path) {
    char tmp[4200];
    FILE *f;
#ifdef CLI_POSIX
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* the rename at the end would fail */
        cli_error(cmd, "%s: is a folder, not a file name", path);
        return -1;
    }
#endif
    if (!(f = cli_create(cmd, path, tmp, sizeof tmp))) return -1;
    cli_discard(f, tmp);
    return 0;
}

hpj_status cli_model_save(const hpj_model *m, const char *path, int with_optimizer) {
    int slot = cli_temp_watch(path); /* the library writes PATH.tmp~ too */
    hpj_status st = hpj_model_save(m, path, with_optimizer);
    cli_temp_unwatch(slot);
    return st;
}

/* ---- .npy ------------------------------------------------------------------------ */

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

/* ---- time and numbers ------------------------------------------------------------- */

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

long long cli_part_end(long long done, long long every, long long until) {
    long long next = every > 0 ? (done / every + 1) * every : until;
    return next < until ? next : until;
}
