/* pretrain_probe.c - the whole method in a page: pretrain a small HP-JEPA
   model on a dataset (no labels), embed every graph with the frozen EMA
   encoder, and fit a logistic-regression probe on 80% of the graphs.
   usage: pretrain_probe DATASET_DIR   (e.g. data/DEMO) */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    hpj_dataset ds;
    hpj_config cfg;
    hpj_model m;
    hpj_probe_options po;
    hpj_linear_model probe;
    int32_t *all, *fold, *tr, *te, ntr = 0, nte = 0, g;
    float *H, *Xtr, *Xte;
    int width;
    static const char setup[] = "dim = 64\nheads = 4\nblocks = 2\nepochs = 5\nbatch_size = 32\nlr = 1e-3\n";
    if (argc < 2) { fprintf(stderr, "usage: %s DATASET_DIR\n", argv[0]); return 2; }
    if (hpj_dataset_load_tu(argv[1], &ds) != HPJ_OK) { fprintf(stderr, "%s\n", hpj_last_error()); return 1; }
    hpj_config_default(&cfg); /* the paper's architecture at toy width, 5 epochs */
    if (hpj_config_parse(&cfg, setup, strlen(setup), "setup") != HPJ_OK) { fprintf(stderr, "%s\n", hpj_last_error()); return 1; }
    all = (int32_t *)malloc(sizeof(int32_t) * ds.num_graphs * 4);
    if (!all) { fprintf(stderr, "out of memory\n"); return 1; }
    fold = all + ds.num_graphs; tr = fold + ds.num_graphs; te = tr + ds.num_graphs;
    for (g = 0; g < ds.num_graphs; ++g) all[g] = g;
    if (hpj_model_init(&m, &cfg, &ds) != HPJ_OK ||
        hpj_pretrain(&m, &ds, all, ds.num_graphs, 0, NULL, NULL) != HPJ_OK) { /* self-supervised */
        fprintf(stderr, "%s\n", hpj_last_error());
        return 1;
    }
    width = cfg.L * cfg.dim; /* concat readout: one d-vector per resolution */
    H = (float *)malloc(sizeof(float) * (size_t)ds.num_graphs * width * 3);
    if (!H) { fprintf(stderr, "out of memory\n"); return 1; }
    Xtr = H + (size_t)ds.num_graphs * width; Xte = Xtr + (size_t)ds.num_graphs * width;
    if (hpj_embed(&m, &ds, all, ds.num_graphs, H) != HPJ_OK) { fprintf(stderr, "%s\n", hpj_last_error()); return 1; }
    if (hpj_stratified_folds(ds.graph_label, ds.num_graphs, ds.num_classes, 5, 1, fold) != HPJ_OK) { /* fold 0 = test */
        fprintf(stderr, "%s\n", hpj_last_error());
        return 1;
    }
    for (g = 0; g < ds.num_graphs; ++g) {
        if (fold[g] == 0) { memcpy(Xte + (size_t)nte * width, H + (size_t)g * width, sizeof(float) * width); te[nte++] = g; }
        else { memcpy(Xtr + (size_t)ntr * width, H + (size_t)g * width, sizeof(float) * width); tr[ntr++] = ds.graph_label[g]; }
    }
    hpj_probe_options_default(&po);
    if (hpj_logreg_fit(Xtr, tr, ntr, width, ds.num_classes, &po, &probe) != HPJ_OK) { fprintf(stderr, "%s\n", hpj_last_error()); return 1; }
    for (g = 0; g < nte; ++g) te[g] = ds.graph_label[te[g]];
    printf("%s: %lld optimizer steps, test accuracy %.3f on %d graphs\n", ds.name, (long long)m.step,
           hpj_linear_model_accuracy(&probe, Xte, te, nte), nte);
    hpj_linear_model_free(&probe);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
    free(all); free(H);
    return 0;
}
