/* hpjepa partition - multilevel graph partitioning of METIS-format graphs. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

static const char *partition_usage =
    "usage: hpjepa partition GRAPH_FILE K [--seed S] [--method kway|rb] [--out FILE]\n"
    "                        [--ufactor F] [--ncuts N] [--niter N] [--ntrials N]\n"
    "                        [--many] [--reps R]\n"
    "  Partitions the graph in GRAPH_FILE (METIS format, as gpmetis reads it) into\n"
    "  K parts (K >= 1; min(K, n) non-empty parts) and prints\n"
    "    edgecut=<int> imbalance=<float> parts=<non-empty parts> seconds=<float>\n"
    "  imbalance = max part weight / (total weight / K); seconds = partitioning\n"
    "  only (best of R runs with --reps), not file reading.\n"
    "  --method kway|rb   multilevel k-way (default) or recursive bisection\n"
    "  --seed S           random seed (default 1); same seed, same partition\n"
    "  --ufactor F        allowed max part weight / (W / K) (default 1.03;\n"
    "                     --imbalance is a synonym)\n"
    "  --ncuts N          N independent runs, keep the best cut (default 1)\n"
    "  --niter N          refinement passes per level (default 10)\n"
    "  --ntrials N        initial partitioning trials (default 0 = automatic)\n"
    "  --out FILE         write one 0-based part id per line\n"
    "  --many             GRAPH_FILE holds many graphs, each with its own header\n"
    "                     line (as make bench's METIS driver reads); prints\n"
    "                     graphs=<int> edgecut=<mean> imbalance=<mean> parts=<mean>\n"
    "                     seconds=<total>; --out gets all graphs' ids in order\n";

/* Splits a many-graph METIS text into graphs: returns the byte length of
   the graph starting at text (its header, then n vertex lines; '%'
   comment lines are skipped), 0 at the end of the text, or -1 if the
   header has no vertex count (then the parser gives the reason). */
static long long next_graph(const char *text, size_t len) {
    size_t p = 0;
    long long n = 0, lines = 0;
    /* skip comments and blank lines before the header */
    for (;;) {
        size_t q = p;
        while (q < len && (text[q] == ' ' || text[q] == '\t' || text[q] == '\r')) ++q;
        if (q >= len) return 0;
        if (text[q] == '%' || text[q] == '\n') {
            while (q < len && text[q] != '\n') ++q;
            p = q + 1;
            continue;
        }
        if (text[q] < '0' || text[q] > '9') return -1;
        while (q < len && text[q] >= '0' && text[q] <= '9') {
            n = n * 10 + (text[q] - '0');
            if (n > INT_MAX) return -1;
            ++q;
        }
        while (q < len && text[q] != '\n') ++q;
        p = q < len ? q + 1 : q;
        break;
    }
    while (lines < n && p < len) {
        size_t q = p;
        while (q < len && (text[q] == ' ' || text[q] == '\t')) ++q;
        if (q < len && text[q] == '%') { /* comment: not a vertex line */
            while (q < len && text[q] != '\n') ++q;
            p = q < len ? q + 1 : q;
            continue;
        }
        while (q < len && text[q] != '\n') ++q;
        p = q < len ? q + 1 : q;
        ++lines;
    }
    return (long long)p;
}

/* hpj_partition_write (atomic through OUT.tmp~) with that file watched, so
   an interruption removes it. */
static hpj_status write_parts(const char *out, const int32_t *part, int32_t n) {
    int slot = cli_temp_watch(out);
    hpj_status st = hpj_partition_write(out, part, n);
    cli_temp_unwatch(slot);
    return st;
}

static int run_many(const char *cmd, const char *path, int32_t K, const hpj_part_options *opt, int reps,
                    const char *out) {
    FILE *f;
    char *text = NULL;
    size_t len = 0, cap = 0, off = 0;
    hpj_graph_owned *gs = NULL;
    int32_t **parts = NULL;
    long long ngraphs = 0, capg = 0, i, total_n = 0;
    double best = -1, sum_cut = 0, sum_imb = 0, sum_parts = 0;
    int rc = 1, r;
    hpj_part_work *work = hpj_part_work_new(); /* one workspace for every graph */
    if (!work) { cli_error(cmd, "out of memory"); return 1; }
    f = fopen(path, "rb");
    if (!f) { cli_error(cmd, "%s: cannot open", path); hpj_part_work_free(work); return 1; }
    for (;;) {
        size_t got;
        if (len + 1 >= cap) {
            size_t nc = cap ? cap * 2 : (1u << 20);
            char *nt = (char *)realloc(text, nc);
            if (!nt) { cli_error(cmd, "%s: out of memory", path); fclose(f); free(text); hpj_part_work_free(work); return 1; }
            text = nt;
            cap = nc;
        }
        got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    text[len] = 0;
    for (;;) {
        long long glen = next_graph(text + off, len - off);
        char name[1100];
        hpj_status st;
        if (glen == 0) break;
        if (ngraphs == capg) {
            long long nc = capg ? capg * 2 : 256;
            hpj_graph_owned *ng = (hpj_graph_owned *)realloc(gs, sizeof(hpj_graph_owned) * (size_t)nc);
            if (!ng) { cli_error(cmd, "%s: out of memory", path); goto done; }
            gs = ng;
            capg = nc;
        }
        snprintf(name, sizeof name, "%s (graph %lld)", path, ngraphs + 1);
        st = hpj_graph_parse_metis(text + off, glen < 0 ? len - off : (size_t)glen, name, &gs[ngraphs], NULL);
        if (st != HPJ_OK) { cli_error(cmd, "%s", hpj_last_error()); goto done; }
        total_n += gs[ngraphs].g.n;
        ++ngraphs;
        if (glen < 0) break;
        off += (size_t)glen;
    }
    if (ngraphs == 0) { cli_error(cmd, "%s: no graph in the file", path); goto done; }
    parts = (int32_t **)calloc((size_t)ngraphs, sizeof(int32_t *));
    if (!parts) { cli_error(cmd, "out of memory"); goto done; }
    for (i = 0; i < ngraphs; ++i) {
        parts[i] = (int32_t *)malloc(sizeof(int32_t) * (size_t)(gs[i].g.n > 0 ? gs[i].g.n : 1));
        if (!parts[i]) { cli_error(cmd, "out of memory"); goto done; }
    }
    for (r = 0; r < reps; ++r) {
        double t0 = cli_now(), t;
        for (i = 0; i < ngraphs; ++i) {
            if (hpj_partition(&gs[i].g, K, opt, work, parts[i], NULL) != HPJ_OK) {
                cli_error(cmd, "%s: graph %lld: %s", path, i + 1, hpj_last_error());
                goto done;
            }
        }
        t = cli_now() - t0;
        if (best < 0 || t < best) best = t;
    }
    for (i = 0; i < ngraphs; ++i) {
        hpj_partition_stats s;
        if (hpj_partition_evaluate(&gs[i].g, K, parts[i], &s) != HPJ_OK) {
            cli_error(cmd, "%s", hpj_last_error());
            goto done;
        }
        sum_cut += (double)s.edgecut;
        sum_imb += s.imbalance;
        sum_parts += s.nonempty;
    }
    if (out) {
        int32_t *all = (int32_t *)malloc(sizeof(int32_t) * (size_t)(total_n > 0 ? total_n : 1));
        long long at = 0;
        hpj_status st;
        if (!all) { cli_error(cmd, "out of memory"); goto done; }
        for (i = 0; i < ngraphs; ++i) {
            memcpy(all + at, parts[i], sizeof(int32_t) * (size_t)gs[i].g.n);
            at += gs[i].g.n;
        }
        st = total_n > INT32_MAX ? HPJ_ERR_INPUT : write_parts(out, all, (int32_t)total_n);
        free(all);
        if (st != HPJ_OK) { cli_error(cmd, "%s", total_n > INT32_MAX ? "too many vertices for --out" : hpj_last_error()); goto done; }
    }
    printf("graphs=%lld edgecut=%.4f imbalance=%.4f parts=%.4f seconds=%.6f\n", ngraphs, sum_cut / ngraphs,
           sum_imb / ngraphs, sum_parts / ngraphs, best);
    rc = 0;
done:
    if (parts)
        for (i = 0; i < ngraphs; ++i) free(parts[i]);
    free(parts);
    for (i = 0; i < ngraphs; ++i) hpj_graph_owned_free(&gs[i]);
    free(gs);
    free(text);
    hpj_part_work_free(work);
    return rc;
}

int cmd_partition(int argc, char **argv) {
    const char *cmd = "partition", *path = NULL, *kstr = NULL, *out = NULL;
    hpj_part_options opt;
    hpj_graph_owned g;
    hpj_partition_stats s;
    hpj_part_work *work;
    int32_t *part;
    long long v;
    int i, reps = 1, many = 0;
    double best = -1;
    hpj_part_options_default(&opt);
    if (argc >= 2 && cli_is_help(argv[1])) { fputs(partition_usage, stdout); return 0; }
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (cli_is_help(a)) { fputs(partition_usage, stdout); return 0; }
        if (!strcmp(a, "--many")) { many = 1; continue; }
        if (a[0] == '-' && a[1] == '-') {
            const char *val = i + 1 < argc ? argv[i + 1] : NULL;
            if (!val) { cli_error(cmd, "%s needs a value (see hpjepa partition --help)", a); return 2; }
            ++i;
            if (!strcmp(a, "--seed")) {
                if (cli_parse_int(cmd, "--seed", val, 0, LLONG_MAX, &v)) return 2;
                opt.seed = (uint64_t)v;
            } else if (!strcmp(a, "--method")) {
                if (!strcmp(val, "kway")) opt.method = HPJ_PART_KWAY;
                else if (!strcmp(val, "rb")) opt.method = HPJ_PART_RB;
                else { cli_error(cmd, "--method: '%s' is not kway or rb", val); return 2; }
            } else if (!strcmp(a, "--out")) {
                out = val;
            } else if (!strcmp(a, "--ufactor") || !strcmp(a, "--imbalance")) {
                double u;
                if (cli_parse_double(cmd, a, val, &u)) return 2;
                if (!(u >= 1.0 && u <= 1000.0)) { cli_error(cmd, "%s: %s is out of range 1..1000", a, val); return 2; }
                opt.ufactor = (float)u;
            } else if (!strcmp(a, "--ncuts")) {
                if (cli_parse_int(cmd, "--ncuts", val, 1, 1000, &v)) return 2;
                opt.ncuts = (int32_t)v;
            } else if (!strcmp(a, "--niter")) {
                if (cli_parse_int(cmd, "--niter", val, 0, 1000, &v)) return 2;
                opt.niter = (int32_t)v;
            } else if (!strcmp(a, "--ntrials")) {
                if (cli_parse_int(cmd, "--ntrials", val, 0, 1000, &v)) return 2;
                opt.ntrials = (int32_t)v;
            } else if (!strcmp(a, "--reps")) {
                if (cli_parse_int(cmd, "--reps", val, 1, 1000, &v)) return 2;
                reps = (int)v;
            } else {
                cli_error(cmd, "unknown option '%s' (see hpjepa partition --help)", a);
                return 2;
            }
            continue;
        }
        if (!path) path = a;
        else if (!kstr) kstr = a;
        else { cli_error(cmd, "unexpected argument '%s' (usage: hpjepa partition GRAPH_FILE K [options])", a); return 2; }
    }
    if (!path || !kstr) {
        cli_error(cmd, "expected GRAPH_FILE and K (usage: hpjepa partition GRAPH_FILE K [options])");
        return 2;
    }
    if (cli_parse_int(cmd, "K", kstr, 1, INT32_MAX, &v)) return 2;
    if (out && cli_check_writable(cmd, out)) return 2; /* before the work */
    if (many) return run_many(cmd, path, (int32_t)v, &opt, reps, out);
    if (hpj_graph_read_metis(path, &g, NULL) != HPJ_OK) {
        cli_error(cmd, "%s", hpj_last_error());
        return 1;
    }
    part = (int32_t *)malloc(sizeof(int32_t) * (size_t)(g.g.n > 0 ? g.g.n : 1));
    work = hpj_part_work_new();
    if (!part || !work) {
        cli_error(cmd, "out of memory");
        free(part);
        hpj_part_work_free(work);
        hpj_graph_owned_free(&g);
        return 1;
    }
    for (i = 0; i < reps; ++i) {
        double t0 = cli_now(), t;
        if (hpj_partition(&g.g, (int32_t)v, &opt, work, part, NULL) != HPJ_OK) {
            cli_error(cmd, "%s", hpj_last_error());
            free(part);
            hpj_part_work_free(work);
            hpj_graph_owned_free(&g);
            return 1;
        }
        t = cli_now() - t0;
        if (best < 0 || t < best) best = t;
    }
    hpj_part_work_free(work);
    if (hpj_partition_evaluate(&g.g, (int32_t)v, part, &s) != HPJ_OK ||
        (out && write_parts(out, part, g.g.n) != HPJ_OK)) {
        cli_error(cmd, "%s", hpj_last_error());
        free(part);
        hpj_graph_owned_free(&g);
        return 1;
    }
    printf("edgecut=%lld imbalance=%.4f parts=%d seconds=%.6f\n", (long long)s.edgecut, s.imbalance, s.nonempty, best);
    free(part);
    hpj_graph_owned_free(&g);
    return 0;
}
