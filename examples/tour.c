/* tour.c - the whole path in one program: load a TUDataset folder (or
   build graphs in memory: graphs_in_memory.c), pretrain HP-JEPA on the
   training graphs (no labels), embed every graph with the frozen encoder,
   fit a linear probe on the training split and classify the test split.
   usage: tour [DATASET_DIR]   (default data/DEMO) */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <stdlib.h>

/* Every call that can fail returns a status; the reason is one line. */
#define TRY(call) do { if ((call) != HPJ_OK) { fprintf(stderr, "tour: %s\n", hpj_last_error()); return 1; } } while (0)

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "data/DEMO";
    hpj_dataset ds;
    hpj_config cfg;
    hpj_model m;
    hpj_linear_model probe;
    int32_t *fold, *train, *test, *ytr, *pred, ntr = 0, nte = 0, g, hits = 0, L, D;
    float *H, *Xtr, *Xte;

    TRY(hpj_dataset_load_tu(dir, &ds)); /* dir/NAME_A.txt, NAME_graph_indicator.txt, ... */
    if (ds.num_classes < 2) { fprintf(stderr, "tour: %s has no class labels\n", ds.name); return 1; }

    /* 1. the defaults are the paper's architecture; a small, quick model here */
    hpj_config_default(&cfg);
    TRY(hpj_config_set(&cfg, "dim", "32")); /* ffn = 0: the FFN width is 2 x dim */
    TRY(hpj_config_set(&cfg, "heads", "4"));
    TRY(hpj_config_set(&cfg, "blocks", "2"));
    TRY(hpj_config_set(&cfg, "epochs", "3"));
    TRY(hpj_config_set(&cfg, "batch_size", "32"));
    TRY(hpj_config_set(&cfg, "lr", "1e-3"));
    L = cfg.L; D = cfg.dim; /* resolutions (default 4) and token width */

    /* 2. split: 5 stratified folds, fold 0 is the test split */
    fold = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs * 5);
    H = (float *)malloc(sizeof(float) * (size_t)ds.num_graphs * L * D * 2);
    if (!fold || !H) { fprintf(stderr, "tour: out of memory\n"); return 1; }
    train = fold + ds.num_graphs; test = train + ds.num_graphs; ytr = test + ds.num_graphs; pred = ytr + ds.num_graphs;
    TRY(hpj_stratified_folds(ds.graph_label, ds.num_graphs, ds.num_classes, 5, 1, fold));
    for (g = 0; g < ds.num_graphs; ++g)
        if (fold[g] == 0) test[nte++] = g;
        else { train[ntr] = g; ytr[ntr++] = ds.graph_label[g]; } /* graph_label: class 0..C-1 */

    /* 3. self-supervised pretraining on the training graphs (0: no step cap,
       NULL: no progress callback) */
    TRY(hpj_model_init(&m, &cfg, &ds));
    TRY(hpj_pretrain(&m, &ds, train, ntr, 0, NULL, NULL));

    /* 4. embeddings (n, L, D) from the frozen EMA encoder; the concat readout
       makes one (L*D) vector per graph */
    Xtr = H + (size_t)ds.num_graphs * L * D; Xte = Xtr + (size_t)ntr * L * D;
    TRY(hpj_embed(&m, &ds, train, ntr, H));
    hpj_readout(H, ntr, L, D, HPJ_READOUT_CONCAT, Xtr);
    TRY(hpj_embed(&m, &ds, test, nte, H));
    hpj_readout(H, nte, L, D, HPJ_READOUT_CONCAT, Xte);

    /* 5. a logistic-regression probe on the training split */
    TRY(hpj_logreg_fit(Xtr, ytr, ntr, L * D, ds.num_classes, NULL, &probe));

    /* 6. classify the test split */
    hpj_linear_model_classify(&probe, Xte, nte, pred);
    for (g = 0; g < nte; ++g) hits += pred[g] == ds.graph_label[test[g]];
    printf("%s: %d graphs, %d classes, %lld pretraining steps\n", ds.name, ds.num_graphs, ds.num_classes,
           (long long)m.step);
    printf("test accuracy %.3f (%d of %d graphs)\n", (double)hits / nte, hits, nte);
    printf("graph %d: predicted label %d, true label %d\n", test[0] + 1, ds.class_value[pred[0]],
           ds.class_value[ds.graph_label[test[0]]]); /* class_value: the file's own label values */

    hpj_linear_model_free(&probe);
    hpj_model_free(&m);
    hpj_dataset_free(&ds);
    free(fold);
    free(H);
    return 0;
}
