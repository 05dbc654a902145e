/* cmd_model.c - the model subcommands of hpjepa: pretrain, embed, bench train. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

/* ---- progress ------------------------------------------------------------- */

/* Progress lines that a terminal redraws in place must stay on one row: a
   line that wraps leaves its first part behind at every redraw. So the
   width is asked each time (the window may be resized): COLUMNS when the
   user sets it, else the terminal's own, else the 80 of a classic one. */
int cli_tty_width(void) {
    const char *e;
    if (!isatty(2)) return 0;
    e = getenv("COLUMNS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (!*end && v > 0 && v < 10000) return (int)v;
    }
#ifdef TIOCGWINSZ
    {
        struct winsize ws;
        if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return (int)ws.ws_col;
    }
#endif
    return 80;
}

void cli_fmt_time(double s, char *buf, size_t n) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

/* The candidates, best first: the full text behind a bar, the brief one
   behind a bar, each alone, then the brief one cut. A bar narrower than 10
   cells says too little to be worth the room. The last column stays empty:
   a terminal that has written there wraps on the next character. Each
   text is measured at the longest it has been plus a few cells, so that
   the bar keeps its width while the numbers after it change length. */
void cli_progress_line(int width, double frac, const char *full, const char *brief) {
    enum { MIN_BAR = 10, MAX_BAR = 30, SLACK = 4 };
    static int longest_full, longest_brief;
    char line[600];
    int room = width - 1, n = 0, i, bar = 0, len, filled, lf, lb;
    const char *t = full;
    if (!brief) brief = full;
    if (room > 512) room = 512;
    if (room < 1) room = 1;
    if ((lf = (int)strlen(full)) + SLACK > longest_full) longest_full = lf + SLACK;
    if ((lb = (int)strlen(brief)) + SLACK > longest_brief) longest_brief = lb + SLACK;
    if (longest_full + 3 + MIN_BAR <= room) t = full, len = longest_full;
    else if (longest_brief + 3 + MIN_BAR <= room) t = brief, len = longest_brief;
    else if (lf <= room) t = full, len = lf;
    else t = brief, len = lb;
    if (len + 3 + MIN_BAR <= room) bar = room - len - 3 < MAX_BAR ? room - len - 3 : MAX_BAR;
    len = (int)strlen(t);
    if (len > room - (bar ? bar + 3 : 0)) len = room - (bar ? bar + 3 : 0);
    frac = frac < 0.0 ? 0.0 : frac > 1.0 ? 1.0 : frac;
    filled = (int)(frac * bar + 0.5);
    line[n++] = '\r';
    if (bar) {
        line[n++] = '[';
        for (i = 0; i < bar; ++i) line[n++] = i < filled ? '#' : '.';
        line[n++] = ']';
        line[n++] = ' ';
    }
    memcpy(line + n, t, (size_t)len);
    n += len;
    memcpy(line + n, "\033[K", 3); /* clear what a longer line left */
    n += 3;
    fwrite(line, 1, (size_t)n, stderr);
    fflush(stderr);
}

typedef struct cli_progress {
    int tty, quiet, L;
    double t_start, t_epoch, last_draw;
    const hpj_config *cfg;
    FILE *loss_log; /* --loss-log: epoch,step,resolution,K (or P),loss rows */
    /* benchmark timing: time of each completed batch */
    double *batch_t;
    int nbatch, cap;
    int64_t step0;                     /* optimizer steps before this process */
    double last_loss[HPJ_MAX_RES];     /* the last finished epoch's mean loss  */
    int64_t last_count[HPJ_MAX_RES];
} cli_progress;

/* A redrawn bar on a terminal (fitted to its width, a line kept per
   epoch), a line per epoch in a log. */
static void on_progress(void *user, const hpj_progress *p) {
    cli_progress *cp = (cli_progress *)user;
    double now = cli_now();
    char full[512], brief[256], losses[256], short_losses[160], eta[32], el[32];
    int n = 0, nb = 0, l;
    double frac = p->total_steps ? (double)p->step / (double)p->total_steps : 0.0;
    double eps_s = now - cp->t_epoch;
    if (cp->batch_t && cp->nbatch < cp->cap) cp->batch_t[cp->nbatch++] = now;
    if (p->epoch_done)
        for (l = 0; l < cp->L; ++l) {
            cp->last_loss[l] = p->loss_count[l] ? p->loss[l] / (double)p->loss_count[l] : 0.0;
            cp->last_count[l] = p->loss_count[l];
        }
    if (cp->loss_log && p->epoch_done)
        for (l = 0; l < cp->L; ++l)
            if (p->loss_count[l])
                fprintf(cp->loss_log, "%d,%lld,%d,%d,%.6g\n", p->epoch + 1, (long long)p->step, l + 1, (int)cp->cfg->K[l],
                        p->loss[l] / (double)p->loss_count[l]);
    if (cp->quiet) return;
    if (!cp->tty && !p->epoch_done) return;
    if (cp->tty && !p->epoch_done && now - cp->last_draw < 0.2) return;
    cp->last_draw = now;
    cli_fmt_time(now - cp->t_start, el, sizeof el);
    cli_fmt_time(p->step > cp->step0 ? (now - cp->t_start) * (double)(p->total_steps - p->step) / (double)(p->step - cp->step0) : 0.0,
                 eta, sizeof eta);
    losses[0] = short_losses[0] = 0;
    for (l = 0; l < cp->L; ++l) {
        double v = p->loss_count[l] ? p->loss[l] / (double)p->loss_count[l] : 0.0;
        n += snprintf(losses + n, sizeof losses - (size_t)n, " %.4g", v);
        nb += snprintf(short_losses + nb, sizeof short_losses - (size_t)nb, " %-7.3g", v); /* a column per resolution */
    }
    snprintf(full, sizeof full, "epoch %d/%d batch %d/%d loss%s | %.1f graphs/s | %s elapsed, ETA %s", p->epoch + 1,
             p->epochs, p->batch, p->batches, losses, eps_s > 0 ? (double)p->graphs_done / eps_s : 0.0, el, eta);
    if (cp->tty) {
        int width = cli_tty_width();
        snprintf(brief, sizeof brief, "epoch %d/%d loss%s | ETA %s", p->epoch + 1, p->epochs, short_losses, eta);
        cli_progress_line(width ? width : 80, frac, full, brief);
        if (p->epoch_done) fputc('\n', stderr);
    } else {
        fputs(full, stderr);
        fputc('\n', stderr);
    }
    fflush(stderr);
    if (p->epoch_done) cp->t_epoch = now;
}

static void progress_init(cli_progress *cp, const hpj_config *cfg, int quiet) {
    memset(cp, 0, sizeof(*cp));
    cp->tty = isatty(2);
    cp->quiet = quiet;
    cp->L = cfg->L;
    cp->cfg = cfg;
    cp->t_start = cp->t_epoch = cli_now();
}

/* ---- pretrain ------------------------------------------------------------- */

static const char *pretrain_usage =
    "usage: hpjepa pretrain DATASET_DIR [--config FILE ...] [--set key=value ...] --out MODEL\n"
    "                       [--threads T] [--seed S] [--split train|all] [--save-optimizer] [--quiet]\n"
    "                       [--loss-log FILE.csv] [--checkpoint-every N] [--until-epoch E]\n"
    "       hpjepa pretrain DATASET_DIR --resume MODEL0 --out MODEL [--threads T] [--split train|all] ...\n"
    "  Self-supervised HP-JEPA pretraining on every graph of the dataset (or only\n"
    "  the 'train' graphs of a split file with --split train, the default when\n"
    "  the dataset has one). The config: the library's defaults, then each\n"
    "  --config FILE in order, then --set, --seed and --threads wherever they\n"
    "  stand. Writes a checkpoint (atomically) and prints\n"
    "  model=<path> params=<int> steps=<int> epoch=<done>/<epochs> seconds=<float>\n"
    "  loss=<the last epoch's mean loss per resolution, comma-separated; nan where\n"
    "  a resolution took no step>.\n"
    "  Progress goes to stderr (a bar on a terminal, one line per epoch otherwise).\n"
    "  --loss-log writes epoch,step,resolution,K,loss (the epoch's mean loss per\n"
    "  resolution; P for K in Graph-JEPA mode, its patches) for `hpjepa plot loss`.\n"
    "  --save-optimizer keeps the Adam moments in MODEL, so it can be resumed.\n"
    "  --checkpoint-every N writes MODEL (with the optimizer state) after every\n"
    "  N-th epoch as well, so an interrupted run loses at most N epochs.\n"
    "  --until-epoch E stops after epoch E of the configured run (the LR and EMA\n"
    "  schedules still span all epochs) and writes a resumable MODEL.\n"
    "  --resume MODEL0 continues a run saved with its optimizer state (by any of\n"
    "  the three above) to its configured epochs, with the config stored in\n"
    "  MODEL0 (--config, --set and --seed are refused; --threads is free): with\n"
    "  the same dataset and --split, the same bits as a run never stopped. A\n"
    "  fresh run refuses an --out that holds such an unfinished run.\n"
    "  Interrupted (Ctrl-C, kill), it removes its partial files and says how to\n"
    "  continue: with --resume MODEL after a --checkpoint-every checkpoint.\n"
    "  Config keys: see data/configs/*.cfg and the README.\n";

const cli_train_dist *cli_pretrain_dist = NULL; /* hpjepa-mpi sets it (cli.h) */

/* A CRC of a model's trained state (parameters, Adam moments, EMA,
   BatchNorm statistics): the ranks of a data-parallel run compare theirs. */
static uint32_t model_crc(const hpj_model *m) {
    uint32_t c = hpj_crc32(m->params, sizeof(float) * m->num_params);
    c = c * 31u + hpj_crc32(m->adam_m, sizeof(float) * m->num_params);
    c = c * 31u + hpj_crc32(m->adam_v, sizeof(float) * m->num_params);
    c = c * 31u + hpj_crc32(m->ema, sizeof(float) * m->enc_count);
    return c * 31u + hpj_crc32(m->stats, sizeof(float) * m->num_stats);
}

/* 1 (with the reason printed) when PATH holds a checkpoint of a run cut
   short (--checkpoint-every, --until-epoch, an interruption): its epochs
   may be hours of work, which a fresh run to the same --out would
   overwrite at its first save. Any other file there is the caller's to
   replace. */
static int unfinished_run(const char *path) {
    hpj_model old;
    int cut;
    if (hpj_model_load(&old, path) != HPJ_OK) return 0; /* no file, or not a model */
    cut = old.adam_state && old.epoch < old.cfg.epochs;
    if (cut)
        cli_error("pretrain", "%s holds a run stopped at epoch %lld of %d: --resume %s continues it; remove the file to "
                  "start over", path, (long long)old.epoch, old.cfg.epochs, path);
    hpj_model_free(&old);
    return cut;
}

int cmd_pretrain(int argc, char **argv) {
    /* data-parallel over the ranks of hpjepa-mpi (cli.h); `lead` prints and writes */
    const cli_train_dist *dist = cli_pretrain_dist && cli_pretrain_dist->size > 1 ? cli_pretrain_dist : NULL;
    int lead = !dist || dist->rank == 0, agreed = 0;
    hpj_config cfg;
    hpj_dataset ds;
    hpj_model m;
    const char *dir = NULL, *out = NULL, *split = NULL, *loss_log = NULL, *resume = NULL;
    char log_tmp[4200], again[3200];
    int i, save_opt = 0, quiet = 0, rc = 1, cfg_given = 0, l;
    long long every = 0, until = 0;
    int32_t *train = NULL, n = 0, g;
    cli_progress cp;
    double t0;
    hpj_config_default(&cfg);
    /* zeroed, so every failure below can take the one cleanup path */
    memset(&m, 0, sizeof m);
    memset(&ds, 0, sizeof ds);
    memset(&cp, 0, sizeof cp);
    for (i = 1; i < argc; ++i)
        if (cli_is_help(argv[i])) { fputs(pretrain_usage, stdout); return 0; }
    if (cli_model_configs("pretrain", argc, argv, &cfg)) return 2;
    for (i = 1; i < argc; ++i) {
        int used;
        if (cli_model_options("pretrain", argc, argv, i, &cfg, &used)) return 2;
        if (used) {
            cfg_given |= strcmp(argv[i], "--threads") != 0;
            i += used - 1;
            continue;
        }
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--split") && i + 1 < argc) split = argv[++i];
        else if (!strcmp(argv[i], "--loss-log") && i + 1 < argc) loss_log = argv[++i];
        else if (!strcmp(argv[i], "--resume") && i + 1 < argc) resume = argv[++i];
        else if (!strcmp(argv[i], "--checkpoint-every") && i + 1 < argc) {
            if (cli_parse_int("pretrain", "--checkpoint-every", argv[++i], 1, 1000000, &every)) return 2;
        } else if (!strcmp(argv[i], "--until-epoch") && i + 1 < argc) {
            if (cli_parse_int("pretrain", "--until-epoch", argv[++i], 1, 1000000, &until)) return 2;
        } else if (!strcmp(argv[i], "--save-optimizer")) save_opt = 1;
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else if (argv[i][0] == '-') { cli_model_unknown("pretrain", argv[i]); return 2; }
        else if (!dir) dir = argv[i];
        else { cli_error("pretrain", "unexpected argument '%s'", argv[i]); return 2; }
    }
    if (!dir) { cli_error("pretrain", "missing DATASET_DIR (see --help)"); return 2; }
    if (!out) { cli_error("pretrain", "missing --out MODEL"); return 2; }
    if (split && strcmp(split, "train") && strcmp(split, "all")) {
        cli_error("pretrain", "--split must be train or all, got '%s'", split);
        return 2;
    }
    if (resume && cfg_given) {
        cli_error("pretrain", "--resume takes the config stored in %s: --config, --set and --seed would change the run", resume);
        return 2;
    }
    if (!resume && cli_model_check("pretrain", &cfg)) return 2;
    /* the outputs are checked before the work: a run of hours must not fail
       at its end on a mistyped folder */
    if (lead && (cli_check_writable("pretrain", out) || (loss_log && cli_check_writable("pretrain", loss_log)) ||
                 (!resume && unfinished_run(out)))) {
        rc = 2;
        goto done; /* (the other ranks wait for this one's word) */
    }
    /* how an interrupted run continues: the same command on its checkpoint */
    snprintf(again, sizeof again, "hpjepa pretrain %.1000s --resume %.1000s --out %.1000s%s%s", dir, out, out,
             split ? " --split " : "", split ? split : "");
    if (until) snprintf(again + strlen(again), sizeof again - strlen(again), " --until-epoch %lld", until);
    if (every) snprintf(again + strlen(again), sizeof again - strlen(again), " --checkpoint-every %lld", every);
    if (resume) {
        int threads = cfg.threads;
        cli_interrupt_note("nothing written; %s is unchanged: run the same command to continue", resume);
        if (hpj_model_load(&m, resume) != HPJ_OK) { cli_error("pretrain", "%s", hpj_last_error()); goto done; }
        if (!m.adam_state) {
            cli_error("pretrain", "%s: saved without the optimizer state (write it with --save-optimizer, "
                      "--checkpoint-every or --until-epoch), so the run cannot continue exactly", resume);
            goto done;
        }
        if (threads) m.cfg.threads = threads;
        cfg = m.cfg;
    }
    if (until > cfg.epochs) {
        cli_error("pretrain", "--until-epoch %lld: the run has %d epochs", until, cfg.epochs);
        rc = 2;
        goto done;
    }
    if (cli_load_dataset("pretrain", dir, &ds)) goto done;
    train = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs);
    if (!train) { cli_error("pretrain", "out of memory"); goto done; }
    for (g = 0; g < ds.num_graphs; ++g)
        if (!ds.split || (split && !strcmp(split, "all")) || ds.split[g] == HPJ_SPLIT_TRAIN) train[n++] = g;
    if (!resume && hpj_model_init(&m, &cfg, &ds) != HPJ_OK) { cli_error("pretrain", "%s", hpj_last_error()); goto done; }
    if (!until) until = cfg.epochs;
    if (!lead) quiet = 1, loss_log = NULL;
    if (!quiet) {
        fprintf(stderr, "hpjepa pretrain: %s, %d graphs, %s mode, %zu parameters (+%zu EMA), %d resolutions\n", ds.name, n,
                cfg.mode == HPJ_MODE_HP ? "HP-JEPA" : "Graph-JEPA", m.num_params, m.enc_count, cfg.L);
        if (resume) fprintf(stderr, "resuming %s after epoch %lld of %d (step %lld)\n", resume, (long long)m.epoch,
                            cfg.epochs, (long long)m.step);
        else if (!cli_model_config_given()) fputs(CLI_NO_CONFIG_NOTE, stderr);
    }
    progress_init(&cp, &cfg, quiet);
    cp.step0 = m.step;
    if (loss_log) { /* written next to its final name, renamed when training succeeded */
        if (!(cp.loss_log = cli_create("pretrain", loss_log, log_tmp, sizeof log_tmp))) goto done;
        /* the level's size: K parts (HP-JEPA) or P patches (Graph-JEPA mode) */
        fputs(cfg.mode == HPJ_MODE_HP ? "epoch,step,resolution,K,loss\n" : "epoch,step,resolution,P,loss\n", cp.loss_log);
    }
    if (dist) { /* every rank is ready, or all stop */
        agreed = 1;
        if ((rc = dist->agree(0)) != 0) goto done;
        rc = 1;
        hpj_model_set_comm(&m, dist->comm);
        if (!quiet)
            fprintf(stderr, "hpjepa pretrain: data-parallel over %d ranks (each minibatch split between them)\n",
                    dist->size);
    }
    t0 = cli_now();
    /* in parts of `every` epochs, each part's model written with its
       optimizer state (the parts give the bits of one uninterrupted run) */
    while (m.epoch < until) {
        int64_t next = cli_part_end(m.epoch, every, until);
        if (hpj_pretrain_until(&m, &ds, train, n, next, on_progress, &cp) != HPJ_OK) {
            if (cp.tty && !quiet) fputc('\n', stderr);
            cli_error("pretrain", "%s", hpj_last_error());
            goto done;
        }
        if (next < until) {
            int bad = lead && cli_model_save(&m, out, 1) != HPJ_OK;
            if (bad) cli_error("pretrain", "%s", hpj_last_error());
            if (dist && (bad = dist->agree(bad)) != 0) rc = bad;
            if (bad) goto done;
            cli_interrupt_note("%s holds epoch %lld of %d: continue with %s", out, (long long)next, cfg.epochs, again);
        }
    }
    if (dist && !dist->same(model_crc(&m))) {
        cli_error("pretrain", "the %d ranks hold different models after training (the MPI sums differ between ranks)",
                  dist->size);
        goto done;
    }
    if (dist && lead && !quiet)
        fprintf(stderr, "hpjepa pretrain: the %d ranks hold the same model (crc32 %08x)\n", dist->size,
                (unsigned)model_crc(&m));
    if (!lead) { /* rank 0 writes the files */
        rc = 0;
        goto done;
    }
    if (cli_model_save(&m, out, save_opt || every || until < cfg.epochs) != HPJ_OK) {
        cli_error("pretrain", "%s", hpj_last_error());
        goto done;
    }
    cli_interrupt_note("%s written%s", out, loss_log ? "; not the loss log" : "");
    if (cp.loss_log) {
        FILE *f = cp.loss_log;
        cp.loss_log = NULL;
        if (cli_commit("pretrain", f, 0, log_tmp, loss_log)) goto done;
    }
    printf("model=%s params=%zu steps=%lld epoch=%lld/%d seconds=%.2f loss=", out, m.num_params, (long long)m.step,
           (long long)m.epoch, cfg.epochs, cli_now() - t0);
    for (l = 0; l < cfg.L; ++l) {
        if (cp.last_count[l]) printf("%s%.6g", l ? "," : "", cp.last_loss[l]);
        else printf("%snan", l ? "," : "");
    }
    putchar('\n');
    rc = 0;
done:
    /* a rank that failed before training tells the others, which wait for it */
    if (dist && !agreed) rc = dist->agree(rc ? rc : 1);
    if (cp.loss_log) cli_discard(cp.loss_log, log_tmp); /* a failed run leaves no partial log */
    hpj_model_free(&m);
    free(train);
    hpj_dataset_free(&ds);
    return rc;
}

/* ---- embed ---------------------------------------------------------------- */

static const char *embed_usage =
    "usage: hpjepa embed MODEL DATASET_DIR --out FILE.npy [--readout concat|uniform] [--threads T]\n"
    "  Graph embeddings from the frozen EMA encoder: per active resolution the\n"
    "  mean of the output tokens, zeros for inactive ones; concat gives (graphs,\n"
    "  L*d), uniform the mean over the L slots (graphs, d). Writes float32 .npy\n"
    "  and prints graphs=<int> width=<int>.\n";

/* Labels beyond the model's one-hot vocabulary (lo .. lo + width - 1) are
   read as "none" (a test graph may carry a label its training graphs never
   had); many of them usually mean a model made for another dataset. */
static void vocab_note(const char *ds, const char *kind, int32_t dmin, int32_t dmax, int32_t lo, int width) {
    if (dmin < lo || dmax >= lo + width)
        fprintf(stderr, "hpjepa embed: note: %s's %s labels span %d..%d, the model knows %d..%d; the others read as "
                "none (a model of another dataset?)\n", ds, kind, (int)dmin, (int)dmax, (int)lo, (int)(lo + width - 1));
}

int cmd_embed(int argc, char **argv) {
    const char *mpath = NULL, *dir = NULL, *out = NULL;
    int readout = -1, i, rc = 1, threads = 0;
    hpj_model m;
    hpj_dataset ds;
    float *H = NULL, *E = NULL;
    int32_t *idx = NULL, g;
    int width;
    for (i = 1; i < argc; ++i) {
        if (cli_is_help(argv[i])) { fputs(embed_usage, stdout); return 0; }
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--readout") && i + 1 < argc) {
            const char *r = argv[++i];
            if (!strcmp(r, "concat")) readout = HPJ_READOUT_CONCAT;
            else if (!strcmp(r, "uniform")) readout = HPJ_READOUT_UNIFORM;
            else { cli_error("embed", "--readout must be concat or uniform, got '%s'", r); return 2; }
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            long long t;
            if (cli_parse_int("embed", "--threads", argv[++i], 1, 4096, &t)) return 2;
            threads = (int)t;
        } else if (argv[i][0] == '-') { cli_error("embed", "unknown option '%s' (see --help)", argv[i]); return 2; }
        else if (!mpath) mpath = argv[i];
        else if (!dir) dir = argv[i];
        else { cli_error("embed", "unexpected argument '%s'", argv[i]); return 2; }
    }
    if (!mpath || !dir) { cli_error("embed", "expected MODEL and DATASET_DIR (see --help)"); return 2; }
    if (!out) { cli_error("embed", "missing --out FILE.npy"); return 2; }
    if (cli_check_writable("embed", out)) return 2;
    if (hpj_model_load(&m, mpath) != HPJ_OK) { cli_error("embed", "%s", hpj_last_error()); return 1; }
    if (threads) m.cfg.threads = threads;
    if (readout < 0) readout = m.cfg.readout == HPJ_READOUT_UNIFORM ? HPJ_READOUT_UNIFORM : HPJ_READOUT_CONCAT;
    if (cli_load_dataset("embed", dir, &ds)) { hpj_model_free(&m); return 1; }
    if (m.node_onehot && ds.node_label)
        vocab_note(ds.name, "node", ds.node_label_min, ds.node_label_max, m.node_label_min, m.node_onehot);
    if (m.edge_onehot && ds.edge_label)
        vocab_note(ds.name, "edge", ds.edge_label_min, ds.edge_label_max, m.edge_label_min, m.edge_onehot);
    H = (float *)malloc(sizeof(float) * (size_t)ds.num_graphs * m.cfg.L * m.D + 1);
    E = (float *)malloc(sizeof(float) * (size_t)ds.num_graphs * m.cfg.L * m.D + 1);
    idx = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs + 1);
    if (!H || !E || !idx) { cli_error("embed", "out of memory"); goto done; }
    for (g = 0; g < ds.num_graphs; ++g) idx[g] = g;
    if (hpj_embed(&m, &ds, idx, ds.num_graphs, H) != HPJ_OK) { cli_error("embed", "%s", hpj_last_error()); goto done; }
    hpj_readout(H, ds.num_graphs, m.cfg.L, m.D, readout, E);
    width = readout == HPJ_READOUT_CONCAT ? m.cfg.L * m.D : m.D;
    if (cli_write_npy("embed", out, E, ds.num_graphs, width)) goto done;
    printf("graphs=%d width=%d\n", ds.num_graphs, width);
    rc = 0;
done:
    free(H);
    free(E);
    free(idx);
    hpj_dataset_free(&ds);
    hpj_model_free(&m);
    return rc;
}

/* ---- bench train ---------------------------------------------------------- */

static const char *bench_train_usage =
    "usage: hpjepa bench train DATASET_DIR [--config FILE ...] [--steps N] [--warmup N] [--set key=value ...]\n"
    "                          [--threads T]\n"
    "  Times pretraining minibatches (all resolutions: forward, backward, Adam,\n"
    "  EMA) after --warmup batches (default 2); N timed batches (default 8).\n"
    "  The batches are the run's first ones (the seed fixes them): where graph\n"
    "  sizes vary (DD: 30 to 5748 nodes), time an epoch (make bench: 35 + 2 on DD).\n"
    "  Prints graphs_per_s=<float> (batch size / median batch time) gflops=<float>\n"
    "  (GEMM flops / time) gflop_per_batch=<float> peak_mb=<float> (peak resident memory).\n";

int cmd_bench_train(int argc, char **argv) {
    hpj_config cfg;
    hpj_dataset ds;
    hpj_model m;
    const char *dir = NULL;
    long long steps = 8, warm = 2;
    int i, rc = 1;
    int32_t *train = NULL, g;
    cli_progress cp;
    double *dts = NULL, t0;
    struct rusage ru;
    hpj_set_adaptive_threads(0); /* the speed of the team asked for, like the peer's */
    hpj_config_default(&cfg);
    for (i = 1; i < argc; ++i)
        if (cli_is_help(argv[i])) { fputs(bench_train_usage, stdout); return 0; }
    if (cli_model_configs("bench train", argc, argv, &cfg)) return 2;
    for (i = 1; i < argc; ++i) {
        int used;
        if (cli_model_options("bench train", argc, argv, i, &cfg, &used)) return 2;
        if (used) { i += used - 1; continue; }
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            if (cli_parse_int("bench train", "--steps", argv[++i], 1, 1000000, &steps)) return 2;
        } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
            if (cli_parse_int("bench train", "--warmup", argv[++i], 0, 1000000, &warm)) return 2;
        } else if (argv[i][0] == '-') { cli_model_unknown("bench train", argv[i]); return 2; }
        else if (!dir) dir = argv[i];
        else { cli_error("bench train", "unexpected argument '%s'", argv[i]); return 2; }
    }
    if (!dir) { cli_error("bench train", "missing DATASET_DIR (see --help)"); return 2; }
    if (cli_model_check("bench train", &cfg)) return 2;
    if (cli_load_dataset("bench train", dir, &ds)) return 1;
    train = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs);
    dts = (double *)malloc(sizeof(double) * (size_t)(steps + warm + 1));
    if (!train || !dts) { cli_error("bench train", "out of memory"); goto done_ds; }
    for (g = 0; g < ds.num_graphs; ++g) train[g] = g;
    /* enough epochs for the requested batches */
    {
        int64_t nb = (ds.num_graphs + cfg.batch_size - 1) / cfg.batch_size;
        cfg.epochs = (int)((steps + warm + nb - 1) / nb);
    }
    if (hpj_model_init(&m, &cfg, &ds) != HPJ_OK) { cli_error("bench train", "%s", hpj_last_error()); goto done_ds; }
    progress_init(&cp, &cfg, 1);
    cp.cap = (int)(steps + warm);
    cp.batch_t = (double *)malloc(sizeof(double) * (size_t)(steps + warm + 1));
    if (!cp.batch_t) { cli_error("bench train", "out of memory"); goto done_m; }
    fprintf(stderr, "hpjepa bench train: %s, d=%d, batch %d, %lld warm-up + %lld timed batches\n", ds.name, cfg.dim,
            cfg.batch_size, warm, steps);
    t0 = cli_now();
    cp.t_start = t0;
    /* stop after the batches: the callback records times; max_steps bounds
       the optimizer steps at (batches x resolutions) */
    if (hpj_pretrain(&m, &ds, train, ds.num_graphs, (steps + warm) * cfg.L, on_progress, &cp) != HPJ_OK) {
        cli_error("bench train", "%s", hpj_last_error());
        goto done_m;
    }
    if (cp.nbatch < steps + warm) {
        cli_error("bench train", "only %d batches ran", cp.nbatch);
        goto done_m;
    }
    {
        int k, nt = 0;
        double med, gf;
        for (k = (int)warm; k < (int)(steps + warm); ++k) {
            double prev = k == 0 ? t0 : cp.batch_t[k - 1];
            dts[nt++] = cp.batch_t[k] - prev;
        }
        med = cli_sort_median(dts, nt);
        getrusage(RUSAGE_SELF, &ru);
        /* GEMM flops: the mean over all batches run (warm-up included), per
           median batch time */
        gf = hpj_model_last_flops() / (double)cp.nbatch / 1e9;
        printf("graphs_per_s=%.1f gflops=%.1f gflop_per_batch=%.1f peak_mb=%.0f\n",
               (cfg.batch_size < ds.num_graphs ? cfg.batch_size : ds.num_graphs) / med, gf / med, gf, ru.ru_maxrss / 1024.0);
    }
    rc = 0;
done_m:
    free(cp.batch_t);
    hpj_model_free(&m);
done_ds:
    free(train);
    free(dts);
    hpj_dataset_free(&ds);
    return rc;
}
