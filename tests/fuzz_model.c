/* libFuzzer harness of the whole model: random small datasets and random
   tiny configs through hpj_model_init, hpj_pretrain (one epoch) and
   hpj_embed. Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Input layout (every byte string is some valid call):
     byte 0   mode (bit 0: graph-jepa), L = 1 + (b >> 1) % 3 resolutions
     bytes    K_l = 1 + b % 40 (L of them), then M = 1 + b % 4
     byte     dim 4 or 8 (bit 0), heads 1 or 2 (bit 1), blocks (b >> 2) % 3,
              gnn_layers 1 + (b >> 4) % 2, pred_layers 1 + (b >> 5) % 2,
              node labels (bit 6), ffn gelu (bit 7)
     byte     batch 1 + b % 6, dropout 0.2 (bit 3), token dropout 0.2 (bit 4),
              patch mixing (bit 5), gnn_out_linear (bit 6), the reference path
              (bit 7: hpj_set_paths(HPJ_PATHS_REFERENCE), else the fast one)
     byte     repartition + edge drop 0.3 (bit 0), rb partitions (bit 1),
              rw_dim 1 + (b >> 2) % 4, adamw (bit 4), clip 0.5 (bit 5),
              EMA copy init (bit 6), mean RWSE reduction (bit 7)
     byte     seed (bit 7 also patch tokens present, bit 6 adam_active
              with weight decay 0.01 where not adamw)
     then     graphs as in tests/fuzz.h (up to 5 graphs of up to 24 nodes)
   Contract: init succeeds; pretraining succeeds or stops with
   HPJ_ERR_NUMERIC and a reason (the documented overflow guard); the
   embeddings are finite, zero exactly on inactive resolutions, and the same
   bits when the same model is trained again. */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TAG "fuzz_model"
#include "fuzz.h"

static hpj_status train_embed(const hpj_config *c, const hpj_dataset *ds, const int32_t *ids, float *H) {
    hpj_model m;
    hpj_status st;
    st = hpj_model_init(&m, c, ds);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    if (st) return st;
    st = hpj_pretrain(&m, ds, ids, ds->num_graphs, 0, NULL, NULL);
    /* HPJ_ERR_INPUT: no graph is large enough for any resolution (K = 1, or
       K beyond twice every graph's size) */
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NUMERIC || st == HPJ_ERR_NOMEM || st == HPJ_ERR_INPUT);
    FUZZ_ASSERT(st != HPJ_ERR_INPUT || m.step == 0);
    if (st == HPJ_ERR_NUMERIC || st == HPJ_ERR_INPUT) fuzz_check_reason(NULL);
    if (st == HPJ_OK) {
        st = hpj_embed(&m, ds, ids, ds->num_graphs, H);
        FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    }
    hpj_model_free(&m);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_config c;
    hpj_dataset ds;
    char v[160];
    size_t at = 0, cells;
    int L, l, b1, b2, b3, D, g;
    int32_t *ids;
    float *H, *H2;
    if (size < 12) return 0;
    hpj_config_default(&c);
    hpj_config_set(&c, "mode", (data[0] & 1) ? "graph-jepa" : "hp");
    L = 1 + (data[0] >> 1) % 3;
    at = 1;
    {
        int n = 0;
        for (l = 0; l < L; ++l) n += snprintf(v + n, sizeof v - (size_t)n, "%s%d", l ? "," : "", 1 + data[at++] % 40);
        FUZZ_ASSERT(hpj_config_set(&c, "resolutions", v) == HPJ_OK);
    }
    snprintf(v, sizeof v, "%d", 1 + data[at++] % 4);
    FUZZ_ASSERT(hpj_config_set(&c, "targets", v) == HPJ_OK);
    b1 = data[at++]; b2 = data[at++]; b3 = data[at++];
    D = (b1 & 1) ? 8 : 4;
    snprintf(v, sizeof v, "%d", D); hpj_config_set(&c, "dim", v);
    hpj_config_set(&c, "heads", (b1 & 2) ? "2" : "1");
    snprintf(v, sizeof v, "%d", (b1 >> 2) % 3); hpj_config_set(&c, "blocks", v);
    snprintf(v, sizeof v, "%d", 1 + (b1 >> 4) % 2); hpj_config_set(&c, "gnn_layers", v);
    snprintf(v, sizeof v, "%d", 1 + (b1 >> 5) % 2); hpj_config_set(&c, "pred_layers", v);
    hpj_config_set(&c, "ffn", "8");
    hpj_config_set(&c, "ffn_act", (b1 & 128) ? "gelu" : "relu");
    snprintf(v, sizeof v, "%d", 1 + b2 % 6); hpj_config_set(&c, "batch_size", v);
    hpj_config_set(&c, "dropout", (b2 & 8) ? "0.2" : "0");
    hpj_config_set(&c, "token_dropout", (b2 & 16) ? "0.2" : "0");
    hpj_config_set(&c, "patch_mixing", (b2 & 32) ? "1" : "0");
    hpj_config_set(&c, "gnn_out_linear", (b2 & 64) ? "1" : "0");
    hpj_set_paths((b2 & 128) ? HPJ_PATHS_REFERENCE : HPJ_PATHS_BEST);
    hpj_config_set(&c, "repartition", (b3 & 1) ? "1" : "0");
    hpj_config_set(&c, "edge_drop", (b3 & 1) ? "0.3" : "0");
    hpj_config_set(&c, "partition", (b3 & 2) ? "rb" : "kway");
    hpj_config_set(&c, "partition_trials", (data[0] >> 6) & 1 ? "1" : "0");
    snprintf(v, sizeof v, "%d", 1 + (b3 >> 2) % 4); hpj_config_set(&c, "rw_dim", v);
    hpj_config_set(&c, "optimizer", (b3 & 16) ? "adamw" : "adam");
    hpj_config_set(&c, "clip", (b3 & 32) ? "0.5" : "0");
    hpj_config_set(&c, "ema_init", (b3 & 64) ? "copy" : "independent");
    hpj_config_set(&c, "rw_reduce", (b3 & 128) ? "mean" : "max");
    snprintf(v, sizeof v, "%d", data[at++]); hpj_config_set(&c, "seed", v);
    hpj_config_set(&c, "patch_tokens", (data[at - 1] & 128) ? "present" : (data[at - 1] & 32) ? "graph" : "alone"); /* (the seed byte's bits 7, 5) */
    if (!(b3 & 16) && (data[at - 1] & 64)) { /* (the seed byte's bit 6) */
        hpj_config_set(&c, "optimizer", "adam_active");
        hpj_config_set(&c, "weight_decay", "0.01");
    }
    hpj_config_set(&c, "epochs", "1");
    hpj_config_set(&c, "lr", "1e-3");
    hpj_config_set(&c, "threads", "1");
    FUZZ_ASSERT(hpj_config_check(&c) == HPJ_OK);
    if (fuzz_dataset(data, size, &at, 5, 24, (b1 & 64) != 0, &ds)) return 0;
    ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)ds.num_graphs);
    cells = (size_t)ds.num_graphs * (size_t)L * (size_t)D;
    H = (float *)malloc(sizeof(float) * cells);
    H2 = (float *)malloc(sizeof(float) * cells);
    for (g = 0; g < ds.num_graphs; ++g) ids[g] = g;
    if (train_embed(&c, &ds, ids, H) == HPJ_OK) {
        size_t i;
        for (i = 0; i < cells; ++i) FUZZ_ASSERT(isfinite(H[i]));
        for (g = 0; g < ds.num_graphs; ++g) {
            hpj_graph gr = hpj_dataset_graph(&ds, g);
            for (l = 0; l < L; ++l) {
                int active = c.mode != HPJ_MODE_HP || (int64_t)c.K[l] <= 2 * (int64_t)gr.n, d, nz = 0;
                const float *h = H + ((size_t)g * L + l) * D;
                for (d = 0; d < D; ++d) nz |= h[d] != 0.0f;
                if (!active) FUZZ_ASSERT(!nz); /* an inactive resolution reads out zeros */
            }
        }
        if (train_embed(&c, &ds, ids, H2) == HPJ_OK) FUZZ_ASSERT(memcmp(H, H2, sizeof(float) * cells) == 0);
    }
    free(ids); free(H); free(H2);
    hpj_dataset_free(&ds);
    return 0;
}
