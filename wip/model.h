/* wip/model.h - tokenizer, config, HP-JEPA model, training loop, embeddings
   and checkpoints of hpjepa.h while the modules are developed in parallel.
   Folded into hpjepa.h when the nn and partition modules land. Include after
   hpjepa.h, wip/partition.h and wip/nn.h. */
#ifndef HPJ_WIP_MODEL_API
#define HPJ_WIP_MODEL_API

/* ==== tokenizer: API ===================================================== */

#define HPJ_MAX_RES 16 /* most resolutions a model can have */

enum { HPJ_RW_MAX = 0, HPJ_RW_MEAN = 1 };

/* Node random-walk structural encoding of one graph: rw[v][k-1] = the
   diagonal entry ((D^-1 A)^k)_vv for k = 1..rw_dim (degree clamped to 1,
   so an isolated vertex gets zeros). */
HPJDEF void hpj_rwse(const hpj_graph *g, int rw_dim, float *rw /* (n, rw_dim) */, float *scratch /* (2n) */,
                     int32_t *iscratch /* (3n) */);

/* The patches of every graph of a dataset at every resolution.
   For graph g and resolution l (slot s = g*L + l):
     k[s]          valid regions (0 = inactive: K_l > 2n, or an empty graph)
     patch0[s]     index of the first patch of the slot in the patch arrays
   For patch p: its expanded node list (local ids, ascending) is
     nodes[ptr[p] .. ptr[p+1]-1], and rw[p] (rw_dim) its reduced RWSE. */
typedef struct hpj_tokens {
    int32_t num_graphs, L, rw_dim;
    int32_t K[HPJ_MAX_RES]; /* configured capacities K_l                     */
    int32_t *k;             /* (G*L)                                         */
    int64_t *patch0;        /* (G*L+1)                                       */
    int64_t num_patches;
    int64_t *ptr;           /* (num_patches+1)                               */
    int32_t *nodes;         /* (ptr[num_patches]) local node ids             */
    int32_t *ncore;         /* (num_patches) core-region size of each patch  */
    float *rw;              /* (num_patches, rw_dim)                         */
} hpj_tokens;

typedef struct hpj_tok_options {
    int L;                  /* resolutions                                   */
    int32_t K[HPJ_MAX_RES]; /* capacities                                    */
    int rw_dim;             /* d_RW                                          */
    int rw_reduce;          /* HPJ_RW_MAX (paper eq.) or HPJ_RW_MEAN          */
    int always_active;      /* 1: ignore the K_l <= 2n rule (graph-jepa mode) */
    float edge_drop;        /* probability of dropping each directed entry
                               before partitioning (training re-partitions)  */
    hpj_partition_options part; /* partitioner settings                     */
    uint64_t seed;          /* partition / edge-drop seed                     */
    uint64_t epoch;         /* mixed into the seed (re-partitioning)          */
} hpj_tok_options;

HPJDEF void hpj_tok_options_default(hpj_tok_options *o);
/* Node RWSE for every node of the dataset: out (N, rw_dim). */
HPJDEF hpj_status hpj_dataset_rwse(const hpj_dataset *ds, int rw_dim, float *out);
/* Tokenizes the graphs listed in `graphs` (all if NULL, then count = G);
   graphs not listed get k = 0. node_rw is the dataset RWSE (N, rw_dim). */
HPJDEF hpj_status hpj_tokens_build(const hpj_dataset *ds, const float *node_rw, const int32_t *graphs, int32_t count,
                                   const hpj_tok_options *o, hpj_tokens *out);
HPJDEF void hpj_tokens_free(hpj_tokens *t);


/* ==== config: API ======================================================== */

enum { HPJ_MODE_HP = 0, HPJ_MODE_GRAPH_JEPA = 1 };
enum { HPJ_OPT_ADAM = 0, HPJ_OPT_ADAMW = 1 };
enum { HPJ_READOUT_CONCAT = 0, HPJ_READOUT_UNIFORM = 1, HPJ_READOUT_TASK = 2 };

/* Every setting of a model and its training. Keys of the config files
   (`key = value` lines) are the field names, except where noted. */
typedef struct hpj_config {
    int mode;                      /* mode: hp | graph-jepa                          */
    int L;                         /* number of resolutions (from `resolutions`)      */
    int32_t K[HPJ_MAX_RES];        /* resolutions: capacities, e.g. 2,4,8,16         */
    int32_t M[HPJ_MAX_RES];        /* targets: M_l per resolution, e.g. 1,2,3,4      */
    int dim;                       /* d, token width                                  */
    int blocks, heads, ffn;        /* Transformer blocks, heads, FFN width (0 = 2d)   */
    int ffn_act;                   /* ffn_act: relu | gelu                            */
    int gnn_layers;                /* GINE layers of the patch encoder                */
    int rw_dim;                    /* d_RW                                            */
    int rw_reduce;                 /* rw_reduce: max | mean                           */
    int pred_layers;               /* predictor linear layers (reference: 3)          */
    int target_adj;                /* 1: target encoder weights attention by patch
                                      overlap (Graph-JEPA's Hadamard encoder)         */
    int ema_copy_init;             /* ema_init: copy (1) | independent (0)            */
    int patch_mixing;              /* 1: patch-mean mixing + copy averaging between
                                      GNN layers (the reference)                      */
    float lr, min_lr, weight_decay;
    int optimizer;                 /* optimizer: adam | adamw                         */
    int batch_size, epochs;
    int schedule;                  /* schedule: constant | cosine                     */
    float warmup;                  /* warmup, in epochs                               */
    float dropout;                 /* module dropout (GINE branch, predictor hidden)  */
    float token_dropout;           /* dropout on the context token inputs z + p      */
    float clip;                    /* max global gradient norm, 0 = off              */
    float beta;                    /* SmoothL1 beta                                   */
    float ema_start, ema_end;      /* EMA momentum ramp over all optimizer steps      */
    float edge_drop;               /* re-partitioning edge-drop rate (training)       */
    int repartition;               /* re-partition training graphs every epoch        */
    float target_clamp;            /* guard: clamp m(u) to [-c, c]; 0 = stop on
                                      overflow with an error                          */
    int part_method;               /* partition: kway | rb                            */
    int node_vocab, edge_vocab;    /* minimum one-hot widths (ZINC: 28, 4)            */
    int node_attr;                 /* 1: append node attributes to the input          */
    int readout;                   /* readout: concat | uniform | task                */
    float lambda_unif;             /* uniform share of the task weighting             */
    float probe_alpha;             /* probe penalty (DESIGN.md definition)            */
    uint64_t seed;
    int threads;                   /* 0 = OpenMP default                              */
} hpj_config;

HPJDEF void hpj_config_default(hpj_config *c);
/* Sets one key from its text value; HPJ_ERR_INPUT names the key and value. */
HPJDEF hpj_status hpj_config_set(hpj_config *c, const char *key, const char *value);
/* Parses `key = value` lines (# comments); name is used in messages. */
HPJDEF hpj_status hpj_config_parse(hpj_config *c, const char *text, size_t len, const char *name);
#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_config_load(hpj_config *c, const char *path);
#endif
/* Checks ranges and consistency (resolution list vs targets, heads | dim). */
HPJDEF hpj_status hpj_config_check(const hpj_config *c);
#ifndef HPJ_NO_STDIO
/* Writes the config as `key = value` lines; returns the length (as snprintf).
   Not in HPJ_NO_STDIO builds (it formats floats with snprintf). */
HPJDEF size_t hpj_config_format(const hpj_config *c, char *buf, size_t cap);
#endif

/* ==== model: API ========================================================== */

#define HPJ_MAX_GNN 16
#define HPJ_MAX_BLOCKS 64
#define HPJ_MAX_PRED 8

/* Parameters of one GINE layer of the patch encoder (reference block):
   h' = Wout (h + ReLU(BN2(W2 ReLU(BN1(W1 agg))))) + bout,
   agg = (1+eps) h_i + sum_j ReLU(h_j + e_ji); layers > 0 first mix in the
   patch mean through ReLU(BNu(Wu mean)) and average node copies. */
typedef struct hpj_gnn_params {
    float *eps;             /* (1)                                          */
    float *W1;              /* (D, D) no bias                               */
    float *bn1_g, *bn1_b;   /* (D)                                          */
    float *W2;              /* (D, D) no bias                               */
    float *bn2_g, *bn2_b;   /* (D)                                          */
    float *Wout, *bout;     /* (D, D), (D)                                  */
    float *Wu;              /* (D, D) no bias; NULL for layer 0 / no mixing */
    float *bnu_g, *bnu_b;   /* (D)                                          */
} hpj_gnn_params;

/* Views of every trainable tensor into one flat buffer (params, grads and
   the Adam moments share this layout). The online encoder's blocks come
   last so the EMA copy is one contiguous range. */
typedef struct hpj_params {
    float *node_W, *node_b;         /* (D, F), (D) node input encoder       */
    float *edge_W, *edge_b;         /* (D, Fe), (D) edge input encoder      */
    hpj_gnn_params gnn[HPJ_MAX_GNN];
    float *pe_W, *pe_g, *pe_b;      /* (D, R) no bias, BN (D), (D)          */
    float *pred_W[HPJ_MAX_PRED];    /* (D, D) hidden layers, (2, D) last    */
    float *pred_b[HPJ_MAX_PRED];    /* (D) hidden, (2) last                 */
    hpj_block_params blk[HPJ_MAX_BLOCKS]; /* online token encoder f_theta   */
} hpj_params;

/* BatchNorm running statistics (saved in checkpoints, not trained). */
typedef struct hpj_bn_stats {
    float *bn1_m[HPJ_MAX_GNN], *bn1_v[HPJ_MAX_GNN]; /* (D) each */
    float *bn2_m[HPJ_MAX_GNN], *bn2_v[HPJ_MAX_GNN];
    float *bnu_m[HPJ_MAX_GNN], *bnu_v[HPJ_MAX_GNN];
    float *pe_m, *pe_v;
} hpj_bn_stats;

typedef struct hpj_model {
    hpj_config cfg;
    int D, F, Fe, R, Fh, H;         /* width, node/edge input, d_RW, FFN, heads */
    /* input encoding (fixed by the dataset the model was made for) */
    int node_onehot;                /* one-hot width of node labels (0: none) */
    int32_t node_label_min;
    int node_attr_dim;              /* node attributes appended (0: none)     */
    int edge_onehot;                /* one-hot width of edge labels (0: none) */
    int32_t edge_label_min;
    size_t num_params, enc_offset, enc_count, num_stats;
    float *mem;                     /* params | grads | adam_m | adam_v       */
    float *params, *grads, *adam_m, *adam_v; /* (num_params) each           */
    float *ema;                     /* (enc_count) EMA target encoder         */
    float *stats;                   /* (num_stats) BN running statistics      */
    hpj_params p, g;                /* views of params and grads              */
    hpj_block_params tgt[HPJ_MAX_BLOCKS]; /* views of ema                    */
    hpj_bn_stats bn;
    int64_t step;                   /* optimizer steps taken                  */
    int64_t epoch;                  /* epochs completed                       */
} hpj_model;

/* Creates a model for a dataset's input encoding (node/edge label ranges,
   attributes) with freshly initialised parameters (seed from cfg). */
HPJDEF hpj_status hpj_model_init(hpj_model *m, const hpj_config *cfg, const hpj_dataset *ds);
HPJDEF void hpj_model_free(hpj_model *m);

/* Progress report handed to a callback during pretraining. */
typedef struct hpj_progress {
    int epoch, epochs;             /* 0-based epoch, total                    */
    int64_t step, total_steps;     /* optimizer steps done / planned          */
    int batch, batches;            /* batch within the epoch                  */
    double loss[HPJ_MAX_RES];      /* running mean loss per resolution (epoch) */
    int64_t loss_count[HPJ_MAX_RES];
    int64_t graphs_done;           /* graphs processed in this epoch          */
    int epoch_done;                /* 1 on the last call of an epoch          */
    /* (the library keeps no clock: the callback times what it needs)    */
} hpj_progress;
typedef void (*hpj_progress_fn)(void *user, const hpj_progress *p);

/* Per-resolution JEPA pretraining on the graphs `train` (count n_train):
   cfg.epochs epochs; for every minibatch and l = 1..L one optimizer step on
   L_l(B) when B_l is non-empty, then one EMA update. progress may be NULL.
   max_steps > 0 stops after that many optimizer steps (benchmarks).
   HPJ_ERR_NUMERIC names the epoch, step and resolution of an inf/NaN. */
HPJDEF hpj_status hpj_pretrain(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                               int64_t max_steps, hpj_progress_fn progress, void *user);

/* Per-resolution embeddings h^(l) from the frozen EMA encoder: out is
   (n, L, D) (zeros where a resolution is inactive). */
HPJDEF hpj_status hpj_embed(const hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, float *out);
/* Combines per-resolution embeddings H (n, L, D) into out: concat (n, L*D)
   or uniform mean (n, D) (inactive slots count as zeros). */
HPJDEF void hpj_readout(const float *H, int n, int L, int D, int readout, float *out);

/* One training loss evaluation + gradient for tests: runs the step of
   resolution l on the batch `graphs` with the current parameters, without
   updating parameters, EMA or BN statistics; grads are overwritten.
   targets (n * max M * 2 floats, may be NULL) receives the targets
   Phi(u); with reuse_targets = 1 they are read from it instead, which makes
   the stop-gradient explicit for finite-difference checks. */
HPJDEF hpj_status hpj_model_loss(hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, int l,
                                 uint64_t sample_seed, float *targets, int reuse_targets, double *loss);

/* GEMM flops of the last hpj_pretrain (forward + backward + target), for
   throughput reports. */
HPJDEF double hpj_model_last_flops(void);

/* ==== checkpoints: API ===================================================== */

/* Checkpoint format (little-endian), version 1:
     "HPJEPA\r\n" magic (8 bytes) | u32 version | u32 flags (1: optimizer state)
     | u32 config text length | config text (`key = value` lines)
     | 8 x i32 input encoding (F, Fe, node_onehot, node_label_min,
       node_attr_dim, edge_onehot, edge_label_min, reserved 0)
     | 5 x u64 (num_params, enc_count, num_stats, step, epoch)
     | f32 params | f32 EMA encoder | f32 BN running statistics
     | [f32 Adam m | f32 Adam v] | u32 CRC-32 of every byte before it.
   Written to a temporary file and renamed into place. */
#define HPJ_CKPT_VERSION 1
HPJDEF uint32_t hpj_crc32(const void *data, size_t len);
#ifndef HPJ_NO_STDIO
/* Serialises into a malloc'd buffer (free with hpj_free_buffer); needs the
   config formatter, so it is not in HPJ_NO_STDIO builds (deserialising is). */
HPJDEF hpj_status hpj_model_serialize(const hpj_model *m, int with_optimizer, unsigned char **buf, size_t *len);
#endif
/* Rebuilds a model from a buffer; every field is validated (magic, version,
   sizes, CRC, config) and a bad buffer is rejected with the reason. */
HPJDEF hpj_status hpj_model_deserialize(hpj_model *m, const unsigned char *buf, size_t len, const char *name);
HPJDEF void hpj_free_buffer(void *p);
#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_model_save(const hpj_model *m, const char *path, int with_optimizer);
HPJDEF hpj_status hpj_model_load(hpj_model *m, const char *path);
#endif

#endif /* HPJ_WIP_MODEL_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_MODEL_IMPL
#define HPJ_WIP_MODEL_IMPL

/* ==== tokenizer: random-walk structural encoding ========================== */

HPJDEF void hpj_rwse(const hpj_graph *g, int rw_dim, float *rw, float *scratch, int32_t *iscratch) {
    /* diag((D^-1 A)^k) equals diag(S^k) for the symmetric S = D^-1/2 A D^-1/2
       (similar matrices). With x_j = S^j e_v: (S^2j)_vv = <x_j, x_j> and
       (S^(2j+1))_vv = <x_j, x_(j+1)>, so ceil(rw_dim/2) propagations per node
       suffice. Each propagation scatters from the support of x_j only (kept
       in a list), so sparse neighbourhoods stay cheap. x and y are zero
       outside their supports at all times. */
    int32_t n = g->n, v, i, tick = 0;
    float *x = scratch, *y = scratch + n;
    int32_t *sx = iscratch, *sy = iscratch + n, *stamp = iscratch + 2 * (size_t)n;
    int steps = (rw_dim + 1) / 2, j;
    for (v = 0; v < n; ++v) { x[v] = y[v] = 0.0f; stamp[v] = -1; }
    for (v = 0; v < n; ++v) {
        float *rv = rw + (size_t)v * rw_dim;
        int32_t nx = 1, ny, a;
        x[v] = 1.0f;
        sx[0] = v;
        for (j = 0; j <= steps; ++j) {
            double self = 0.0, cross = 0.0;
            float *tf;
            int32_t *ti;
            for (a = 0; a < nx; ++a) self += (double)x[sx[a]] * x[sx[a]];
            if (j > 0 && 2 * j - 1 < rw_dim) rv[2 * j - 1] = (float)self; /* k = 2j */
            if (2 * j >= rw_dim) break;
            ny = 0; /* y = S x */
            ++tick;
            for (a = 0; a < nx; ++a) {
                int32_t w = sx[a], dw = g->rowptr[w + 1] - g->rowptr[w];
                float c;
                if (dw == 0) continue;
                c = x[w] / sqrtf((float)dw);
                for (i = g->rowptr[w]; i < g->rowptr[w + 1]; ++i) {
                    int32_t u = g->col[i];
                    if (stamp[u] != tick) { stamp[u] = tick; sy[ny++] = u; }
                    y[u] += c;
                }
            }
            for (a = 0; a < ny; ++a) y[sy[a]] /= sqrtf((float)(g->rowptr[sy[a] + 1] - g->rowptr[sy[a]]));
            for (a = 0; a < nx; ++a) cross += (double)x[sx[a]] * y[sx[a]];
            rv[2 * j] = (float)cross; /* k = 2j+1 */
            for (a = 0; a < nx; ++a) x[sx[a]] = 0.0f;
            tf = x; x = y; y = tf;
            ti = sx; sx = sy; sy = ti;
            nx = ny;
        }
        for (a = 0; a < nx; ++a) x[sx[a]] = 0.0f;
    }
}

HPJDEF hpj_status hpj_dataset_rwse(const hpj_dataset *ds, int rw_dim, float *out) {
    int32_t g;
    int32_t maxn = 0;
    int failed = 0;
    if (rw_dim < 1 || rw_dim > 256) return hpj__fail(HPJ_ERR_INPUT, "rwse: rw_dim %d outside 1..256", rw_dim);
    for (g = 0; g < ds->num_graphs; ++g) {
        int32_t n = (int32_t)(ds->node_ptr[g + 1] - ds->node_ptr[g]);
        if (n > maxn) maxn = n;
    }
    HPJ__OMP(parallel)
    {
        float *scratch = (float *)hpj__alloc(sizeof(float) * 2 * ((size_t)maxn + 1), "rwse");
        int32_t *iscratch = (int32_t *)hpj__alloc(sizeof(int32_t) * 3 * ((size_t)maxn + 1), "rwse");
        if (!scratch || !iscratch) {
            HPJ__OMP(atomic write)
            failed = 1;
        }
        HPJ__OMP(for schedule(dynamic, 4))
        for (g = 0; g < ds->num_graphs; ++g) {
            hpj_graph gr = hpj_dataset_graph(ds, g);
            if (!scratch || !iscratch) continue;
            hpj_rwse(&gr, rw_dim, out + (size_t)ds->node_ptr[g] * rw_dim, scratch, iscratch);
        }
        hpj__free(scratch);
        hpj__free(iscratch);
    }
    if (failed) return hpj__fail(HPJ_ERR_NOMEM, "rwse: out of memory for the scratch of a %d-node graph", maxn);
    return HPJ_OK;
}

/* ==== tokenizer: partitions and 1-hop patches ============================ */

HPJDEF void hpj_tok_options_default(hpj_tok_options *o) {
    int l;
    memset(o, 0, sizeof(*o));
    o->L = 4;
    for (l = 0; l < HPJ_MAX_RES; ++l) o->K[l] = 2 << l;
    o->rw_dim = 15;
    o->rw_reduce = HPJ_RW_MAX;
    hpj_partition_options_default(&o->part);
    o->part.method = HPJ_PARTITION_RB; /* the Graph-JEPA reference used METIS recursive bisection */
    o->seed = 1;
}

HPJDEF void hpj_tokens_free(hpj_tokens *t) {
    hpj__free(t->k); hpj__free(t->patch0); hpj__free(t->ptr); hpj__free(t->nodes); hpj__free(t->ncore); hpj__free(t->rw);
    memset(t, 0, sizeof(*t));
}

/* Number of valid regions of an n-node graph at capacity K. */
static int32_t hpj__tok_regions(int32_t n, int32_t K, int always_active) {
    if (n <= 0) return 0;
    if (!always_active && (int64_t)K > 2 * (int64_t)n) return 0;
    return K < n ? K : n;
}

/* Per-thread scratch of the tokenizer. */
typedef struct hpj__tokws {
    int32_t cap;
    int32_t *part, *stamp, *list, *order, *cnt;
    int32_t *drow, *dcol; /* edge-dropped copy of the graph */
} hpj__tokws;

static void hpj__tokws_free(hpj__tokws *w) {
    hpj__free(w->part); hpj__free(w->stamp); hpj__free(w->list); hpj__free(w->order); hpj__free(w->cnt);
    hpj__free(w->drow); hpj__free(w->dcol);
    memset(w, 0, sizeof(*w));
}

static hpj_status hpj__tokws_reserve(hpj__tokws *w, int32_t n, int32_t nnz) {
    if (n + 1 > w->cap || !w->dcol) {
        int32_t c = HPJ__MAX(n + 1, 64);
        hpj__free(w->part); hpj__free(w->stamp); hpj__free(w->list); hpj__free(w->order); hpj__free(w->cnt);
        hpj__free(w->drow);
        w->part = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)c, "tokens");
        w->stamp = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)c, "tokens");
        w->list = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)c, "tokens");
        w->order = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)c, "tokens");
        w->cnt = (int32_t *)hpj__alloc(sizeof(int32_t) * ((size_t)c + 1), "tokens");
        w->drow = (int32_t *)hpj__alloc(sizeof(int32_t) * ((size_t)c + 1), "tokens");
        w->cap = c;
        if (!w->part || !w->stamp || !w->list || !w->order || !w->cnt || !w->drow) return HPJ_ERR_NOMEM;
        hpj__free(w->dcol);
        w->dcol = NULL;
    }
    hpj__free(w->dcol);
    w->dcol = (int32_t *)hpj__alloc(sizeof(int32_t) * ((size_t)nnz + 1), "tokens");
    if (!w->dcol) return HPJ_ERR_NOMEM;
    return HPJ_OK;
}

/* Core regions of graph g at capacity K into w->part (n): one node per region
   when K >= n, otherwise the partitioner on the (edge-dropped) graph. */
static hpj_status hpj__tok_partition(const hpj_graph *gr, int32_t k, int32_t K, const hpj_tok_options *o, int32_t g,
                                     int l, hpj__tokws *w) {
    int32_t n = gr->n, v;
    hpj_partition_options po = o->part;
    hpj_graph use = *gr;
    if (K >= n) {
        for (v = 0; v < n; ++v) w->part[v] = v;
        return HPJ_OK;
    }
    if (o->edge_drop > 0.0f) {
        /* keep an undirected edge if either of its directed entries survives
           an independent draw (the Graph-JEPA reference's rule) */
        hpj_rng r = hpj_rng_stream(o->seed ^ 0xED6EULL, o->epoch, (uint64_t)g);
        int32_t i, m = 0;
        for (i = 0; i < gr->nnz; ++i) w->dcol[i] = 0;
        for (v = 0; v < n; ++v)
            for (i = gr->rowptr[v]; i < gr->rowptr[v + 1]; ++i)
                if (hpj_rng_uniform(&r) >= o->edge_drop) w->dcol[i] = 1;
        /* symmetrise the keep flags: mark entry i kept if it or its reverse is */
        for (v = 0; v < n; ++v)
            for (i = gr->rowptr[v]; i < gr->rowptr[v + 1]; ++i) {
                int32_t u = gr->col[i], lo = gr->rowptr[u], hi = gr->rowptr[u + 1] - 1;
                if (u < v) continue;
                while (lo <= hi) {
                    int32_t mid = lo + (hi - lo) / 2;
                    if (gr->col[mid] == v) { lo = mid; break; }
                    if (gr->col[mid] < v) lo = mid + 1; else hi = mid - 1;
                }
                if (w->dcol[i] | w->dcol[lo]) w->dcol[i] = w->dcol[lo] = 1;
            }
        w->drow[0] = 0;
        for (v = 0; v < n; ++v) {
            for (i = gr->rowptr[v]; i < gr->rowptr[v + 1]; ++i)
                if (w->dcol[i]) w->dcol[m++] = gr->col[i]; /* compact in place: m <= i */
            w->drow[v + 1] = m;
        }
        use.rowptr = w->drow;
        use.col = w->dcol;
        use.nnz = m;
        use.ewgt = NULL;
    }
    {   /* one partition seed per (seed, epoch, graph, resolution) */
        hpj_rng r = hpj_rng_stream(o->seed, o->epoch, (uint64_t)g * HPJ_MAX_RES + (uint64_t)l);
        po.seed = hpj_rng_u64(&r);
    }
    return hpj_partition_run(&use, k, &po, w->part, NULL);
}

HPJDEF hpj_status hpj_tokens_build(const hpj_dataset *ds, const float *node_rw, const int32_t *graphs, int32_t count,
                                   const hpj_tok_options *o, hpj_tokens *out) {
    int32_t G = ds->num_graphs, L = o->L, gi, maxn = 0;
    int64_t s, total_patches = 0;
    int64_t *nodes_of = NULL; /* (G*L) expanded node count of each slot */
    uint8_t *listed = NULL;
    hpj_tokens t;
    hpj_status st = HPJ_OK;
    int nthreads = 1;
    hpj__tokws *ws = NULL;
    memset(out, 0, sizeof(*out));
    memset(&t, 0, sizeof t);
    if (L < 1 || L > HPJ_MAX_RES) return hpj__fail(HPJ_ERR_INPUT, "tokens: %d resolutions outside 1..%d", L, HPJ_MAX_RES);
    for (gi = 0; gi < L; ++gi)
        if (o->K[gi] < 1) return hpj__fail(HPJ_ERR_INPUT, "tokens: capacity K_%d = %d < 1", gi + 1, o->K[gi]);
    if (o->rw_dim < 1) return hpj__fail(HPJ_ERR_INPUT, "tokens: rw_dim %d < 1", o->rw_dim);
    if (!(o->edge_drop >= 0.0f && o->edge_drop < 1.0f)) return hpj__fail(HPJ_ERR_INPUT, "tokens: edge_drop %g outside [0,1)", o->edge_drop);
    if (!graphs) count = G;
    t.num_graphs = G;
    t.L = L;
    t.rw_dim = o->rw_dim;
    memcpy(t.K, o->K, sizeof t.K);
    t.k = (int32_t *)hpj__calloc((size_t)G * L, sizeof(int32_t), "tokens");
    t.patch0 = (int64_t *)hpj__calloc((size_t)G * L + 1, sizeof(int64_t), "tokens");
    nodes_of = (int64_t *)hpj__calloc((size_t)G * L + 1, sizeof(int64_t), "tokens");
    listed = (uint8_t *)hpj__calloc((size_t)G + 1, 1, "tokens");
    if (!t.k || !t.patch0 || !nodes_of || !listed) { st = HPJ_ERR_NOMEM; goto done; }
    for (gi = 0; gi < count; ++gi) {
        int32_t g = graphs ? graphs[gi] : gi;
        if (g < 0 || g >= G) { st = hpj__fail(HPJ_ERR_INPUT, "tokens: graph index %d outside 0..%d", g, G - 1); goto done; }
        listed[g] = 1;
    }
    for (gi = 0; gi < G; ++gi) {
        int32_t n = (int32_t)(ds->node_ptr[gi + 1] - ds->node_ptr[gi]);
        int l;
        if (n > maxn) maxn = n;
        for (l = 0; l < L; ++l) t.k[(size_t)gi * L + l] = listed[gi] ? hpj__tok_regions(n, o->K[l], o->always_active) : 0;
    }
    for (s = 0; s < (int64_t)G * L; ++s) t.patch0[s + 1] = t.patch0[s] + t.k[s];
    total_patches = t.patch0[(int64_t)G * L];
    t.num_patches = total_patches;
    t.ptr = (int64_t *)hpj__calloc((size_t)total_patches + 1, sizeof(int64_t), "tokens");
    t.ncore = (int32_t *)hpj__calloc((size_t)total_patches + 1, sizeof(int32_t), "tokens");
    t.rw = (float *)hpj__calloc((size_t)total_patches + 1, sizeof(float) * (size_t)o->rw_dim, "tokens");
    if (!t.ptr || !t.ncore || !t.rw) { st = HPJ_ERR_NOMEM; goto done; }
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    ws = (hpj__tokws *)hpj__calloc((size_t)nthreads, sizeof(hpj__tokws), "tokens");
    if (!ws) { st = HPJ_ERR_NOMEM; goto done; }
    /* Two passes over (graph, resolution) slots: partition + count expanded
       sizes, then (after a prefix sum) fill node lists. The partition is
       recomputed in pass 2 (it is deterministic), which avoids storing it. */
    {
        int pass;
        for (pass = 0; pass < 2 && st == HPJ_OK; ++pass) {
            int64_t nslots = (int64_t)G * L;
            if (pass == 1) {
                for (s = 0; s < nslots; ++s) nodes_of[s + 1] += nodes_of[s];
                t.nodes = (int32_t *)hpj__calloc((size_t)nodes_of[nslots] + 1, sizeof(int32_t), "tokens");
                if (!t.nodes) { st = HPJ_ERR_NOMEM; break; }
            }
            HPJ__OMP(parallel for schedule(dynamic, 1))
            for (s = 0; s < nslots; ++s) {
                int tid = 0;
                int32_t g = (int32_t)(s / L), l = (int32_t)(s % L), k = t.k[s], n, p, v, i;
                hpj_graph gr;
                hpj__tokws *w;
                hpj_status ls;
                int64_t pos;
#ifdef _OPENMP
                tid = omp_get_thread_num();
#endif
                w = &ws[tid];
                if (k == 0 || st != HPJ_OK) continue;
                gr = hpj_dataset_graph(ds, g);
                n = gr.n;
                ls = hpj__tokws_reserve(w, n, gr.nnz);
                if (ls == HPJ_OK) ls = hpj__tok_partition(&gr, k, o->K[l], o, g, l, w);
                if (ls != HPJ_OK) {
                    HPJ__OMP(critical)
                    st = ls;
                    continue;
                }
                /* bucket nodes by part (counting sort keeps ascending ids) */
                for (p = 0; p <= k; ++p) w->cnt[p] = 0;
                for (v = 0; v < n; ++v) w->cnt[w->part[v] + 1]++;
                for (p = 0; p < k; ++p) w->cnt[p + 1] += w->cnt[p];
                for (v = 0; v < n; ++v) w->order[w->cnt[w->part[v]]++] = v;
                for (p = k; p > 0; --p) w->cnt[p] = w->cnt[p - 1];
                w->cnt[0] = 0;
                for (v = 0; v < n; ++v) w->stamp[v] = -1;
                pos = pass ? nodes_of[s] : 0;
                for (p = 0; p < k; ++p) {
                    /* expand core region p by one hop: mark core + neighbours */
                    int32_t a = w->cnt[p], b = w->cnt[p + 1], m = 0, j;
                    int64_t gp = t.patch0[s] + p;
                    for (j = a; j < b; ++j) {
                        int32_t u = w->order[j];
                        if (w->stamp[u] != p) { w->stamp[u] = p; w->list[m++] = u; }
                        for (i = gr.rowptr[u]; i < gr.rowptr[u + 1]; ++i) {
                            int32_t x = gr.col[i];
                            if (w->stamp[x] != p) { w->stamp[x] = p; w->list[m++] = x; }
                        }
                    }
                    if (pass == 0) {
                        nodes_of[s + 1] += m;
                        t.ncore[gp] = b - a;
                        continue;
                    }
                    /* ascending node order: insertion sort for short lists */
                    for (j = 1; j < m; ++j) {
                        int32_t x = w->list[j], q = j - 1;
                        while (q >= 0 && w->list[q] > x) { w->list[q + 1] = w->list[q]; --q; }
                        w->list[q + 1] = x;
                    }
                    t.ptr[gp] = pos;
                    memcpy(t.nodes + pos, w->list, sizeof(int32_t) * (size_t)m);
                    pos += m;
                    {   /* reduce the node RWSE over the patch */
                        float *dst = t.rw + (size_t)gp * o->rw_dim;
                        const float *src = node_rw + (size_t)ds->node_ptr[g] * o->rw_dim;
                        int c;
                        for (c = 0; c < o->rw_dim; ++c) dst[c] = o->rw_reduce == HPJ_RW_MAX ? -FLT_MAX : 0.0f;
                        for (j = 0; j < m; ++j) {
                            const float *r = src + (size_t)w->list[j] * o->rw_dim;
                            for (c = 0; c < o->rw_dim; ++c) {
                                if (o->rw_reduce == HPJ_RW_MAX) dst[c] = r[c] > dst[c] ? r[c] : dst[c];
                                else dst[c] += r[c];
                            }
                        }
                        if (o->rw_reduce == HPJ_RW_MEAN)
                            for (c = 0; c < o->rw_dim; ++c) dst[c] /= (float)m;
                    }
                }
            }
        }
        if (st == HPJ_OK) t.ptr[total_patches] = nodes_of[(int64_t)G * L];
    }
done:
    if (ws) {
        int i;
        for (i = 0; i < nthreads; ++i) hpj__tokws_free(&ws[i]);
        hpj__free(ws);
    }
    hpj__free(nodes_of);
    hpj__free(listed);
    if (st != HPJ_OK) { hpj_tokens_free(&t); return st; }
    *out = t;
    return HPJ_OK;
}


/* ==== config ============================================================== */

HPJDEF void hpj_config_default(hpj_config *c) {
    int l;
    memset(c, 0, sizeof(*c));
    c->mode = HPJ_MODE_HP;
    c->L = 4;
    for (l = 0; l < HPJ_MAX_RES; ++l) { c->K[l] = 2 << l; c->M[l] = l < 3 ? l + 1 : 4; }
    c->dim = 512; c->blocks = 4; c->heads = 8; c->ffn = 0; c->ffn_act = HPJ_ACT_RELU;
    c->gnn_layers = 2; c->rw_dim = 15; c->rw_reduce = HPJ_RW_MAX; c->pred_layers = 3;
    c->target_adj = 0; c->ema_copy_init = 1; c->patch_mixing = 1;
    c->lr = 2.5e-4f; c->min_lr = 0.0f; c->weight_decay = 0.0f; c->optimizer = HPJ_OPT_ADAM;
    c->batch_size = 128; c->epochs = 20; c->schedule = HPJ_SCHED_COSINE; c->warmup = 0.0f;
    c->dropout = 0.0f; c->token_dropout = 0.0f; c->clip = 0.0f; c->beta = 1.0f;
    c->ema_start = 0.996f; c->ema_end = 1.0f; c->edge_drop = 0.3f; c->repartition = 1; c->target_clamp = 0.0f;
    c->part_method = HPJ_PARTITION_RB; c->node_vocab = 0; c->edge_vocab = 0; c->node_attr = 0;
    c->readout = HPJ_READOUT_CONCAT; c->lambda_unif = 1.0f; c->probe_alpha = 1.0f; c->seed = 42; c->threads = 0;
}

static int hpj__streq(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* Parses a whole integer / real / comma list; 0 on success. */
static int hpj__parse_long(const char *v, long lo, long hi, long *out) {
    char *end;
    long x;
    if (!*v) return -1;
    x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t') ++end;
    if (*end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}
static int hpj__parse_float(const char *v, double lo, double hi, float *out) {
    char *end;
    double x;
    if (!*v) return -1;
    x = strtod(v, &end);
    while (*end == ' ' || *end == '\t') ++end;
    if (*end || !(x >= lo && x <= hi)) return -1;
    *out = (float)x;
    return 0;
}
static int hpj__parse_list(const char *v, int32_t *out, int *count, long lo, long hi) {
    int n = 0;
    const char *p = v;
    while (*p) {
        char *end;
        long x;
        while (*p == ' ' || *p == '\t') ++p;
        x = strtol(p, &end, 10);
        if (end == p || x < lo || x > hi || n >= HPJ_MAX_RES) return -1;
        out[n++] = (int32_t)x;
        p = end;
        while (*p == ' ' || *p == '\t') ++p;
        if (*p == ',') { ++p; if (!*p) return -1; } else if (*p) return -1;
    }
    if (n == 0) return -1;
    *count = n;
    return 0;
}

HPJDEF hpj_status hpj_config_set(hpj_config *c, const char *key, const char *v) {
    long x;
    int n, bad = 0;
    int32_t list[HPJ_MAX_RES];
#define HPJ__INT(name, field, lo, hi) \
    else if (hpj__streq(key, name)) { if (hpj__parse_long(v, lo, hi, &x)) bad = 1; else c->field = (int)x; }
#define HPJ__FLT(name, field, lo, hi) \
    else if (hpj__streq(key, name)) { if (hpj__parse_float(v, lo, hi, &c->field)) bad = 1; }
#define HPJ__ENUM2(name, field, s0, v0, s1, v1) \
    else if (hpj__streq(key, name)) { if (hpj__streq(v, s0)) c->field = v0; else if (hpj__streq(v, s1)) c->field = v1; else bad = 1; }
    if (!key || !v) return hpj__fail(HPJ_ERR_INPUT, "config: NULL key or value");
    if (0) {}
    else if (hpj__streq(key, "mode")) {
        if (hpj__streq(v, "hp") || hpj__streq(v, "hp-jepa")) c->mode = HPJ_MODE_HP;
        else if (hpj__streq(v, "graph-jepa") || hpj__streq(v, "gj")) c->mode = HPJ_MODE_GRAPH_JEPA;
        else bad = 1;
    } else if (hpj__streq(key, "resolutions")) {
        if (hpj__parse_list(v, list, &n, 1, 1 << 20)) bad = 1;
        else { c->L = n; memcpy(c->K, list, sizeof(int32_t) * (size_t)n); }
    } else if (hpj__streq(key, "targets")) {
        if (hpj__parse_list(v, list, &n, 1, 1 << 20)) bad = 1;
        else {
            int l;
            for (l = 0; l < HPJ_MAX_RES; ++l) c->M[l] = list[l < n ? l : n - 1]; /* last value repeats */
        }
    }
    HPJ__INT("dim", dim, 2, 8192)
    HPJ__INT("blocks", blocks, 0, 64)
    HPJ__INT("heads", heads, 1, 256)
    HPJ__INT("ffn", ffn, 0, 65536)
    HPJ__ENUM2("ffn_act", ffn_act, "relu", HPJ_ACT_RELU, "gelu", HPJ_ACT_GELU)
    HPJ__INT("gnn_layers", gnn_layers, 1, 16)
    HPJ__INT("rw_dim", rw_dim, 1, 256)
    HPJ__ENUM2("rw_reduce", rw_reduce, "max", HPJ_RW_MAX, "mean", HPJ_RW_MEAN)
    HPJ__INT("pred_layers", pred_layers, 1, 8)
    HPJ__INT("target_adj", target_adj, 0, 1)
    HPJ__ENUM2("ema_init", ema_copy_init, "copy", 1, "independent", 0)
    HPJ__INT("patch_mixing", patch_mixing, 0, 1)
    HPJ__FLT("lr", lr, 0.0, 10.0)
    HPJ__FLT("min_lr", min_lr, 0.0, 10.0)
    HPJ__FLT("weight_decay", weight_decay, 0.0, 10.0)
    HPJ__ENUM2("optimizer", optimizer, "adam", HPJ_OPT_ADAM, "adamw", HPJ_OPT_ADAMW)
    HPJ__INT("batch_size", batch_size, 1, 1 << 20)
    HPJ__INT("epochs", epochs, 0, 1 << 20)
    HPJ__ENUM2("schedule", schedule, "constant", HPJ_SCHED_CONSTANT, "cosine", HPJ_SCHED_COSINE)
    HPJ__FLT("warmup", warmup, 0.0, 1e6)
    HPJ__FLT("dropout", dropout, 0.0, 0.99)
    HPJ__FLT("token_dropout", token_dropout, 0.0, 0.99)
    HPJ__FLT("clip", clip, 0.0, 1e9)
    HPJ__FLT("beta", beta, 1e-12, 1e9)
    HPJ__FLT("ema_start", ema_start, 0.0, 1.0)
    HPJ__FLT("ema_end", ema_end, 0.0, 1.0)
    HPJ__FLT("edge_drop", edge_drop, 0.0, 0.99)
    HPJ__INT("repartition", repartition, 0, 1)
    HPJ__FLT("target_clamp", target_clamp, 0.0, 80.0)
    HPJ__ENUM2("partition", part_method, "kway", HPJ_PARTITION_KWAY, "rb", HPJ_PARTITION_RB)
    HPJ__INT("node_vocab", node_vocab, 0, 1 << 20)
    HPJ__INT("edge_vocab", edge_vocab, 0, 1 << 20)
    HPJ__INT("node_attr", node_attr, 0, 1)
    else if (hpj__streq(key, "readout")) {
        if (hpj__streq(v, "concat")) c->readout = HPJ_READOUT_CONCAT;
        else if (hpj__streq(v, "uniform")) c->readout = HPJ_READOUT_UNIFORM;
        else if (hpj__streq(v, "task")) c->readout = HPJ_READOUT_TASK;
        else bad = 1;
    }
    HPJ__FLT("lambda_unif", lambda_unif, 0.0, 1.0)
    HPJ__FLT("probe_alpha", probe_alpha, 0.0, 1e12)
    else if (hpj__streq(key, "seed")) {
        char *end;
        unsigned long long sv = strtoull(v, &end, 10);
        if (!*v || *end || *v == '-') bad = 1; else c->seed = (uint64_t)sv;
    }
    HPJ__INT("threads", threads, 0, 4096)
    else return hpj__fail(HPJ_ERR_INPUT, "config: unknown key '%s'", key);
#undef HPJ__INT
#undef HPJ__FLT
#undef HPJ__ENUM2
    if (bad) return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s'", v, key);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_config_check(const hpj_config *c) {
    int l;
    if (c->L < 1 || c->L > HPJ_MAX_RES) return hpj__fail(HPJ_ERR_INPUT, "config: %d resolutions outside 1..%d", c->L, HPJ_MAX_RES);
    for (l = 0; l < c->L; ++l) {
        if (c->K[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "config: resolution %d has capacity %d < 1", l + 1, c->K[l]);
        if (c->M[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "config: resolution %d has %d targets < 1", l + 1, c->M[l]);
    }
    if (c->dim % c->heads) return hpj__fail(HPJ_ERR_INPUT, "config: dim %d is not a multiple of heads %d", c->dim, c->heads);
    if (c->ema_end < c->ema_start) return hpj__fail(HPJ_ERR_INPUT, "config: ema_end %g < ema_start %g", c->ema_end, c->ema_start);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_config_parse(hpj_config *c, const char *text, size_t len, const char *name) {
    size_t i = 0;
    int64_t line = 0;
    char buf[512];
    if (!name) name = "config";
    while (i < len) {
        size_t j = i, n;
        char *key, *val, *eq, *e;
        ++line;
        while (j < len && text[j] != '\n') ++j;
        n = j - i;
        if (n >= sizeof buf) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: line too long", name, (long long)line);
        memcpy(buf, text + i, n);
        buf[n] = 0;
        i = j + 1;
        if ((e = strchr(buf, '#')) != NULL) *e = 0;
        key = buf;
        while (*key == ' ' || *key == '\t' || *key == '\r') ++key;
        e = key + strlen(key);
        while (e > key && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
        if (!*key) continue;
        eq = strchr(key, '=');
        if (!eq) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: expected 'key = value'", name, (long long)line);
        val = eq + 1;
        e = eq;
        while (e > key && (e[-1] == ' ' || e[-1] == '\t')) --e;
        *e = 0;
        while (*val == ' ' || *val == '\t') ++val;
        if (hpj_config_set(c, key, val) != HPJ_OK) {
            char msg[HPJ__ERRLEN];
            memcpy(msg, hpj__errbuf, sizeof msg);
            msg[sizeof msg - 1] = 0;
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: %s", name, (long long)line, msg + (strncmp(msg, "config: ", 8) ? 0 : 8));
        }
    }
    return HPJ_OK;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_config_load(hpj_config *c, const char *path) {
    char *text;
    size_t len;
    hpj_status st = hpj__read_file(path, &text, &len);
    if (st) return st;
    if ((st = hpj__check_text(text, len, path)) == HPJ_OK) st = hpj_config_parse(c, text, len, path);
    hpj__free(text);
    return st;
}
#endif

#ifndef HPJ_NO_STDIO
HPJDEF size_t hpj_config_format(const hpj_config *c, char *buf, size_t cap) {
    size_t n = 0;
    int l;
    char tmp[256];
#define HPJ__PUT(...)                                                  \
    do {                                                               \
        int w_ = snprintf(tmp, sizeof tmp, __VA_ARGS__);               \
        if (w_ > 0) {                                                  \
            if (n + (size_t)w_ < cap) memcpy(buf + n, tmp, (size_t)w_); \
            n += (size_t)w_;                                           \
        }                                                              \
    } while (0)
    HPJ__PUT("mode = %s\nresolutions = ", c->mode == HPJ_MODE_HP ? "hp" : "graph-jepa");
    for (l = 0; l < c->L; ++l) HPJ__PUT("%s%d", l ? "," : "", c->K[l]);
    HPJ__PUT("\ntargets = ");
    for (l = 0; l < c->L; ++l) HPJ__PUT("%s%d", l ? "," : "", c->M[l]);
    HPJ__PUT("\ndim = %d\nblocks = %d\nheads = %d\nffn = %d\nffn_act = %s\ngnn_layers = %d\nrw_dim = %d\n", c->dim, c->blocks,
             c->heads, c->ffn, c->ffn_act == HPJ_ACT_GELU ? "gelu" : "relu", c->gnn_layers, c->rw_dim);
    HPJ__PUT("rw_reduce = %s\npred_layers = %d\ntarget_adj = %d\nema_init = %s\npatch_mixing = %d\n",
             c->rw_reduce == HPJ_RW_MEAN ? "mean" : "max", c->pred_layers, c->target_adj,
             c->ema_copy_init ? "copy" : "independent", c->patch_mixing);
    HPJ__PUT("lr = %.9g\nmin_lr = %.9g\nweight_decay = %.9g\noptimizer = %s\nbatch_size = %d\nepochs = %d\n", c->lr,
             c->min_lr, c->weight_decay, c->optimizer == HPJ_OPT_ADAMW ? "adamw" : "adam", c->batch_size, c->epochs);
    HPJ__PUT("schedule = %s\nwarmup = %.9g\ndropout = %.9g\ntoken_dropout = %.9g\nclip = %.9g\nbeta = %.9g\n",
             c->schedule == HPJ_SCHED_COSINE ? "cosine" : "constant", c->warmup, c->dropout, c->token_dropout, c->clip,
             c->beta);
    HPJ__PUT("ema_start = %.9g\nema_end = %.9g\nedge_drop = %.9g\nrepartition = %d\ntarget_clamp = %.9g\n", c->ema_start,
             c->ema_end, c->edge_drop, c->repartition, c->target_clamp);
    HPJ__PUT("partition = %s\nnode_vocab = %d\nedge_vocab = %d\nnode_attr = %d\n",
             c->part_method == HPJ_PARTITION_RB ? "rb" : "kway", c->node_vocab, c->edge_vocab, c->node_attr);
    HPJ__PUT("readout = %s\nlambda_unif = %.9g\nprobe_alpha = %.9g\nseed = %llu\nthreads = %d\n",
             c->readout == HPJ_READOUT_TASK ? "task" : c->readout == HPJ_READOUT_UNIFORM ? "uniform" : "concat",
             c->lambda_unif, c->probe_alpha, (unsigned long long)c->seed, c->threads);
#undef HPJ__PUT
    if (cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}
#endif

/* ==== model: parameter layout and initialisation ========================== */

/* Binds every tensor of the layout to consecutive ranges of base (or only
   counts when base is NULL); returns the float count. Also reports where
   the online encoder starts. */
static size_t hpj__model_layout(const hpj_model *m, float *base, hpj_params *p, size_t *enc_offset) {
    size_t off = 0;
    int i, D = m->D;
    const hpj_config *c = &m->cfg;
#define HPJ__T(ptr, count) do { (ptr) = base ? base + off : NULL; off += (size_t)(count); } while (0)
    memset(p, 0, sizeof(*p));
    HPJ__T(p->node_W, (size_t)D * m->F);
    HPJ__T(p->node_b, D);
    HPJ__T(p->edge_W, (size_t)D * m->Fe);
    HPJ__T(p->edge_b, D);
    for (i = 0; i < c->gnn_layers; ++i) {
        hpj_gnn_params *q = &p->gnn[i];
        HPJ__T(q->eps, 1);
        HPJ__T(q->W1, (size_t)D * D);
        HPJ__T(q->bn1_g, D);
        HPJ__T(q->bn1_b, D);
        HPJ__T(q->W2, (size_t)D * D);
        HPJ__T(q->bn2_g, D);
        HPJ__T(q->bn2_b, D);
        HPJ__T(q->Wout, (size_t)D * D);
        HPJ__T(q->bout, D);
        if (i > 0 && c->patch_mixing) {
            HPJ__T(q->Wu, (size_t)D * D);
            HPJ__T(q->bnu_g, D);
            HPJ__T(q->bnu_b, D);
        }
    }
    HPJ__T(p->pe_W, (size_t)D * m->R);
    HPJ__T(p->pe_g, D);
    HPJ__T(p->pe_b, D);
    for (i = 0; i < c->pred_layers; ++i) {
        int out = (i == c->pred_layers - 1) ? 2 : D;
        HPJ__T(p->pred_W[i], (size_t)out * D);
        HPJ__T(p->pred_b[i], out);
    }
    /* 64-float alignment of the encoder range keeps EMA loops aligned */
    off = (off + 15) & ~(size_t)15;
    if (enc_offset) *enc_offset = off;
    for (i = 0; i < c->blocks; ++i) {
        if (base) hpj_block_params_bind(&p->blk[i], base + off, D, m->Fh);
        off += hpj_block_param_count(D, m->Fh);
    }
#undef HPJ__T
    return off;
}

static size_t hpj__stats_layout(const hpj_model *m, float *base, hpj_bn_stats *b) {
    size_t off = 0;
    int i, D = m->D;
#define HPJ__T(ptr) do { (ptr) = base ? base + off : NULL; off += (size_t)D; } while (0)
    memset(b, 0, sizeof(*b));
    for (i = 0; i < m->cfg.gnn_layers; ++i) {
        HPJ__T(b->bn1_m[i]); HPJ__T(b->bn1_v[i]);
        HPJ__T(b->bn2_m[i]); HPJ__T(b->bn2_v[i]);
        if (i > 0 && m->cfg.patch_mixing) { HPJ__T(b->bnu_m[i]); HPJ__T(b->bnu_v[i]); }
    }
    HPJ__T(b->pe_m); HPJ__T(b->pe_v);
#undef HPJ__T
    return off;
}

HPJDEF void hpj_model_free(hpj_model *m) {
    hpj__free(m->mem);
    memset(m, 0, sizeof(*m));
}

/* torch.nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for W and b */
static void hpj__init_linear(float *W, float *b, int out, int in, hpj_rng *r) {
    float bound = 1.0f / sqrtf((float)(in > 0 ? in : 1));
    if (W) hpj_init_uniform(W, (size_t)out * in, bound, r);
    if (b) hpj_init_uniform(b, (size_t)out, bound, r);
}
static void hpj__fill(float *x, size_t n, float v) {
    size_t i;
    if (x) for (i = 0; i < n; ++i) x[i] = v;
}

static void hpj__init_blocks(hpj_block_params *blk, int nblocks, int D, int Fh, hpj_rng *r) {
    int i;
    for (i = 0; i < nblocks; ++i) {
        hpj_block_params *b = &blk[i];
        hpj__fill(b->ln1_g, (size_t)D, 1.0f); hpj__fill(b->ln1_b, (size_t)D, 0.0f);
        hpj__fill(b->ln2_g, (size_t)D, 1.0f); hpj__fill(b->ln2_b, (size_t)D, 0.0f);
        /* the reference's attention: q, k, v xavier_uniform with gain
           1/sqrt(2), out projection xavier_uniform with zero bias */
        hpj_init_xavier_uniform(b->Wqkv, D, D, 0.70710678f, r);
        hpj_init_xavier_uniform(b->Wqkv + (size_t)D * D, D, D, 0.70710678f, r);
        hpj_init_xavier_uniform(b->Wqkv + (size_t)2 * D * D, D, D, 0.70710678f, r);
        hpj__fill(b->bqkv, (size_t)3 * D, 0.0f);
        hpj_init_xavier_uniform(b->Wo, D, D, 1.0f, r);
        hpj__fill(b->bo, (size_t)D, 0.0f);
        hpj__init_linear(b->W1, b->b1, Fh, D, r);
        hpj__init_linear(b->W2, b->b2, D, Fh, r);
    }
}

/* Allocates a model whose input encoding fields (node_onehot ... edge_label_min,
   F, Fe) are already set in m; parameters zeroed. */
static hpj_status hpj__model_alloc(hpj_model *m, const hpj_config *cfg) {
    hpj_status st;
    size_t n, total;
    int i;
    hpj_params dummy;
    if ((st = hpj_config_check(cfg))) return st;
    if (cfg->gnn_layers > HPJ_MAX_GNN || cfg->blocks > HPJ_MAX_BLOCKS || cfg->pred_layers > HPJ_MAX_PRED)
        return hpj__fail(HPJ_ERR_INPUT, "model: too many layers (gnn %d/%d, blocks %d/%d, predictor %d/%d)",
                         cfg->gnn_layers, HPJ_MAX_GNN, cfg->blocks, HPJ_MAX_BLOCKS, cfg->pred_layers, HPJ_MAX_PRED);
    if (m->F < 1 || m->Fe < 1 || m->F > (1 << 20) || m->Fe > (1 << 20))
        return hpj__fail(HPJ_ERR_INPUT, "model: input widths out of range (node %d, edge %d)", m->F, m->Fe);
    m->cfg = *cfg;
    m->D = cfg->dim;
    m->H = cfg->heads;
    m->Fh = cfg->ffn > 0 ? cfg->ffn : 2 * cfg->dim;
    m->R = cfg->rw_dim;
    n = hpj__model_layout(m, NULL, &dummy, &m->enc_offset);
    m->num_params = n;
    m->enc_count = n - m->enc_offset;
    m->num_stats = hpj__stats_layout(m, NULL, &m->bn);
    total = 4 * n + m->enc_count + m->num_stats;
    m->mem = (float *)hpj__calloc(total, sizeof(float), "model");
    if (!m->mem) return HPJ_ERR_NOMEM;
    m->params = m->mem;
    m->grads = m->params + n;
    m->adam_m = m->grads + n;
    m->adam_v = m->adam_m + n;
    m->ema = m->adam_v + n;
    m->stats = m->ema + m->enc_count;
    hpj__model_layout(m, m->params, &m->p, NULL);
    hpj__model_layout(m, m->grads, &m->g, NULL);
    for (i = 0; i < cfg->blocks; ++i)
        hpj_block_params_bind(&m->tgt[i], m->ema + (size_t)i * hpj_block_param_count(m->D, m->Fh), m->D, m->Fh);
    hpj__stats_layout(m, m->stats, &m->bn);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_model_init(hpj_model *m, const hpj_config *cfg, const hpj_dataset *ds) {
    hpj_status st;
    hpj_rng r;
    int i;
    memset(m, 0, sizeof(*m));
    /* input encoding: one-hot of (label - min), as PyG's TUDataset does */
    if (ds->node_label) {
        m->node_onehot = HPJ__MAX(cfg->node_vocab, ds->node_label_max - ds->node_label_min + 1);
        m->node_label_min = ds->node_label_min;
    }
    if (cfg->node_attr && ds->node_attr) m->node_attr_dim = ds->node_attr_dim;
    m->F = m->node_onehot + m->node_attr_dim;
    if (m->F == 0) m->F = 1; /* no node input: the constant 0 feature of the reference */
    if (ds->edge_label) {
        m->edge_onehot = HPJ__MAX(cfg->edge_vocab, ds->edge_label_max - ds->edge_label_min + 1);
        m->edge_label_min = ds->edge_label_min;
    }
    m->Fe = m->edge_onehot ? m->edge_onehot : 1;
    if ((st = hpj__model_alloc(m, cfg))) { memset(m, 0, sizeof(*m)); return st; }
    /* initialisation, in layout order from one stream */
    hpj_rng_seed(&r, cfg->seed ^ 0x1A17ULL);
    hpj__init_linear(m->p.node_W, m->p.node_b, m->D, m->F, &r);
    hpj__init_linear(m->p.edge_W, m->p.edge_b, m->D, m->Fe, &r);
    for (i = 0; i < cfg->gnn_layers; ++i) {
        hpj_gnn_params *q = &m->p.gnn[i];
        q->eps[0] = 0.0f;
        hpj__init_linear(q->W1, NULL, m->D, m->D, &r);
        hpj__fill(q->bn1_g, (size_t)m->D, 1.0f);
        hpj__init_linear(q->W2, NULL, m->D, m->D, &r);
        hpj__fill(q->bn2_g, (size_t)m->D, 1.0f);
        hpj__init_linear(q->Wout, q->bout, m->D, m->D, &r);
        if (q->Wu) {
            hpj__init_linear(q->Wu, NULL, m->D, m->D, &r);
            hpj__fill(q->bnu_g, (size_t)m->D, 1.0f);
        }
        hpj__fill(m->bn.bn1_v[i], (size_t)m->D, 1.0f);
        hpj__fill(m->bn.bn2_v[i], (size_t)m->D, 1.0f);
        hpj__fill(m->bn.bnu_v[i], (size_t)m->D, 1.0f);
    }
    hpj__init_linear(m->p.pe_W, NULL, m->D, m->R, &r);
    hpj__fill(m->p.pe_g, (size_t)m->D, 1.0f);
    hpj__fill(m->bn.pe_v, (size_t)m->D, 1.0f);
    for (i = 0; i < cfg->pred_layers; ++i)
        hpj__init_linear(m->p.pred_W[i], m->p.pred_b[i], i == cfg->pred_layers - 1 ? 2 : m->D, m->D, &r);
    hpj__init_blocks(m->p.blk, cfg->blocks, m->D, m->Fh, &r);
    if (cfg->ema_copy_init) {
        memcpy(m->ema, m->params + m->enc_offset, sizeof(float) * m->enc_count);
    } else {
        /* the reference initialises its target encoder independently */
        hpj__init_blocks(m->tgt, cfg->blocks, m->D, m->Fh, &r);
    }
    return HPJ_OK;
}

/* ==== model: batch paths (the patch copies of a minibatch) ================ */

/* One patch of one graph taking part in a forward pass. */
typedef struct hpj__item {
    int32_t g;     /* graph                                     */
    int32_t slot;  /* index of the patch within its graph's slot */
    int64_t patch; /* global patch index in the tokens          */
} hpj__item;

/* The node copies of a list of patches, as one big graph: item s owns
   copies seg[s]..seg[s+1]-1 (its patch's nodes, ascending), and the CSR
   holds the patch's induced edges. Items of one graph are contiguous;
   copies of the same node among them form a group (copy averaging). */
typedef struct hpj__path {
    int32_t S, C, E, NG;
    int32_t *seg;     /* (S+1)                                        */
    int32_t *node;    /* (C) dataset node index                        */
    int32_t *rowptr;  /* (C+1)                                         */
    int32_t *col;     /* (E) copy ids                                  */
    int32_t *rev;     /* (E) index of the reverse entry                */
    int32_t *edge;    /* (E) dataset CSR entry (for edge features)     */
    int32_t *grp;     /* (C) group of each copy                        */
    int32_t *gptr;    /* (NG+1)                                        */
    int32_t *gidx;    /* (C) copies of each group                      */
} hpj__path;

/* Counts copies, induced edges and groups of the items. stamp/loc are
   scratch of the largest graph's size, stamp initialised to -1. */
static void hpj__path_count(const hpj_dataset *ds, const hpj_tokens *tk, const hpj__item *it, int32_t S,
                            int32_t *stamp, int64_t *C, int64_t *E, int64_t *NG) {
    int32_t s;
    int64_t c = 0, e = 0, ng = 0;
    int32_t tag = 0, prev_g = -1, gtag = 0;
    for (s = 0; s < S; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]), j;
        hpj_graph gr = hpj_dataset_graph(ds, it[s].g);
        (void)gtag;
        ++tag;
        for (j = 0; j < m; ++j) stamp[nodes[j]] = tag;
        for (j = 0; j < m; ++j) {
            int32_t u = nodes[j], i;
            for (i = gr.rowptr[u]; i < gr.rowptr[u + 1]; ++i) e += (stamp[gr.col[i]] == tag);
        }
        c += m;
        if (it[s].g != prev_g) prev_g = it[s].g;
    }
    /* groups: distinct (graph, node) pairs, counted with a second stamp pass */
    prev_g = -1;
    for (s = 0; s < S; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]), j;
        if (it[s].g != prev_g) { ++tag; prev_g = it[s].g; }
        for (j = 0; j < m; ++j)
            if (stamp[nodes[j]] != tag) { stamp[nodes[j]] = tag; ++ng; }
    }
    for (s = 0; s < S; ++s) { /* restore the stamps */
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]), j;
        for (j = 0; j < m; ++j) stamp[nodes[j]] = -1;
    }
    *C = c;
    *E = e;
    *NG = ng;
}

static void hpj__path_bind(hpj_arena *a, hpj__path *p, int32_t S, int32_t C, int32_t E, int32_t NG) {
    p->S = S; p->C = C; p->E = E; p->NG = NG;
    p->seg = hpj_arena_ints(a, (size_t)S + 1);
    p->node = hpj_arena_ints(a, (size_t)C + 1);
    p->rowptr = hpj_arena_ints(a, (size_t)C + 1);
    p->col = hpj_arena_ints(a, (size_t)E + 1);
    p->rev = hpj_arena_ints(a, (size_t)E + 1);
    p->edge = hpj_arena_ints(a, (size_t)E + 1);
    p->grp = hpj_arena_ints(a, (size_t)C + 1);
    p->gptr = hpj_arena_ints(a, (size_t)NG + 1);
    p->gidx = hpj_arena_ints(a, (size_t)C + 1);
}

/* Fills a bound path. stamp (-1) and loc: scratch of the largest graph. */
static void hpj__path_fill(const hpj_dataset *ds, const hpj_tokens *tk, const hpj__item *it, hpj__path *p,
                           int32_t *stamp, int32_t *loc) {
    int32_t s, c = 0, e = 0, ng = 0, tag = -1, prev_g = -1, i, k;
    /* copies and edges, item by item; stamp holds the item index */
    for (s = 0; s < p->S; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]), j;
        hpj_graph gr = hpj_dataset_graph(ds, it[s].g);
        int64_t nb = ds->node_ptr[it[s].g], eb = ds->edge_ptr[it[s].g];
        p->seg[s] = c;
        for (j = 0; j < m; ++j) { stamp[nodes[j]] = s; loc[nodes[j]] = c + j; }
        for (j = 0; j < m; ++j) {
            int32_t u = nodes[j];
            p->node[c] = (int32_t)(nb + u);
            p->rowptr[c] = e;
            for (i = gr.rowptr[u]; i < gr.rowptr[u + 1]; ++i) {
                int32_t w = gr.col[i];
                if (stamp[w] != s) continue;
                p->col[e] = loc[w];
                p->edge[e] = (int32_t)(eb + i);
                ++e;
            }
            ++c;
        }
        for (j = 0; j < m; ++j) stamp[nodes[j]] = -1;
    }
    p->seg[p->S] = c;
    p->rowptr[c] = e;
    /* reverse entries: row col[k] holds the copy of row k's owner; columns
       ascend within a row, so binary search */
    HPJ__OMP(parallel for schedule(static))
    for (c = 0; c < p->C; ++c) {
        int32_t kk;
        for (kk = p->rowptr[c]; kk < p->rowptr[c + 1]; ++kk) {
            int32_t b = p->col[kk], lo = p->rowptr[b], hi = p->rowptr[b + 1] - 1, r = -1;
            while (lo <= hi) {
                int32_t mid = lo + (hi - lo) / 2;
                if (p->col[mid] == c) { r = mid; break; }
                if (p->col[mid] < c) lo = mid + 1; else hi = mid - 1;
            }
            p->rev[kk] = r;
        }
    }
    /* groups: the first copy of a node (within its graph's items) opens one */
    for (s = 0; s < p->S; ++s) {
        int32_t j;
        if (it[s].g != prev_g) { prev_g = it[s].g; tag = s; }
        for (j = p->seg[s]; j < p->seg[s + 1]; ++j) {
            int32_t u = (int32_t)(p->node[j] - ds->node_ptr[it[s].g]);
            if (stamp[u] != tag) { stamp[u] = tag; loc[u] = ng++; }
            p->grp[j] = loc[u];
        }
    }
    for (s = 0; s < p->S; ++s) {
        int32_t j;
        for (j = p->seg[s]; j < p->seg[s + 1]; ++j) stamp[p->node[j] - ds->node_ptr[it[s].g]] = -1;
    }
    HPJ_ASSERT(ng == p->NG);
    for (k = 0; k <= p->NG; ++k) p->gptr[k] = 0;
    for (c = 0; c < p->C; ++c) p->gptr[p->grp[c] + 1]++;
    for (k = 0; k < p->NG; ++k) p->gptr[k + 1] += p->gptr[k];
    for (c = 0; c < p->C; ++c) p->gidx[p->gptr[p->grp[c]]++] = c;
    for (k = p->NG; k > 0; --k) p->gptr[k] = p->gptr[k - 1];
    p->gptr[0] = 0;
}

/* Input features of the copies (one-hot node labels, attributes) and of the
   induced edges (one-hot edge labels); constant 0 where the data has none. */
static void hpj__path_features(const hpj_model *m, const hpj_dataset *ds, const hpj__path *p, float *x, float *ex) {
    int32_t c, k;
    HPJ__OMP(parallel for schedule(static))
    for (c = 0; c < p->C; ++c) {
        float *row = x + (size_t)c * m->F;
        int32_t j, u = p->node[c];
        for (j = 0; j < m->F; ++j) row[j] = 0.0f;
        if (m->node_onehot) {
            int32_t v = ds->node_label[u] - m->node_label_min;
            if (v >= 0 && v < m->node_onehot) row[v] = 1.0f;
        }
        for (j = 0; j < m->node_attr_dim; ++j) row[m->node_onehot + j] = ds->node_attr[(size_t)u * ds->node_attr_dim + j];
    }
    HPJ__OMP(parallel for schedule(static))
    for (k = 0; k < p->E; ++k) {
        float *row = ex + (size_t)k * m->Fe;
        int32_t j;
        for (j = 0; j < m->Fe; ++j) row[j] = 0.0f;
        if (m->edge_onehot) {
            int32_t v = ds->edge_label[p->edge[k]] - m->edge_label_min;
            if (v >= 0 && v < m->edge_onehot) row[v] = 1.0f;
        }
    }
}

/* out[c] = mean of in over the copies of c's group (copies of one node).
   The averaging matrix is symmetric, so this is its own backward. */
static void hpj__copy_avg(float *out, const float *in, const hpj__path *p, int D) {
    int32_t g;
    HPJ__OMP(parallel for schedule(static))
    for (g = 0; g < p->NG; ++g) {
        int32_t a = p->gptr[g], b = p->gptr[g + 1], j, d;
        float *acc = out + (size_t)p->gidx[a] * D;
        if (b - a == 1) {
            if (acc != in + (size_t)p->gidx[a] * D) memcpy(acc, in + (size_t)p->gidx[a] * D, sizeof(float) * (size_t)D);
            continue;
        }
        for (d = 0; d < D; ++d) {
            float sum = 0.0f;
            for (j = a; j < b; ++j) sum += in[(size_t)p->gidx[j] * D + d];
            acc[d] = sum / (float)(b - a);
        }
        for (j = a + 1; j < b; ++j) memcpy(out + (size_t)p->gidx[j] * D, acc, sizeof(float) * (size_t)D);
    }
}

/* ==== model: patch encoder g_eta (GINE stack) ============================= */

enum { HPJ__EVAL = 0, HPJ__TRAIN = 1, HPJ__TRAIN_FROZEN = 2 }; /* frozen: batch stats, no running update */

typedef struct hpj__gnn_layer {
    float *hin;                 /* (C, D) layer input (previous output)        */
    float *pm, *ul, *ub, *ua;   /* (S, D) patch mean, Wu pm, BN, ReLU          */
    float *um, *ur;             /* (D) BNu batch mean / rstd                    */
    float *hm;                  /* (C, D) hin + ua broadcast                   */
    float *h;                   /* (C, D) what GINE and the residual see       */
    float *agg, *t1, *b1, *r1;  /* (C, D)                                       */
    float *t2, *b2, *ra2, *r2;  /* (C, D) r2 = dropout(ra2)                     */
    float *sum, *out;           /* (C, D)                                       */
    float *b1m, *b1r, *b2m, *b2r; /* (D)                                        */
    uint8_t *mask;              /* (C, D) dropout mask or NULL                  */
} hpj__gnn_layer;

typedef struct hpj__gnn_ws {
    hpj__path path;
    float *x;    /* (C, F)  */
    float *ex;   /* (E, Fe) */
    float *h0;   /* (C, D) node encoder output */
    float *e;    /* (E, D) edge encoder output */
    hpj__gnn_layer lay[HPJ_MAX_GNN];
    float *z;    /* (S, D) patch tokens */
    float *bntmp;/* (2D) running-stat copies for HPJ__TRAIN_FROZEN */
} hpj__gnn_ws;

static void hpj__gnn_bind(hpj_arena *a, const hpj_model *m, hpj__gnn_ws *w, int32_t S, int32_t C, int32_t E,
                          int32_t NG, int mode) {
    int i, D = m->D;
    size_t CD = (size_t)C * D, SD = (size_t)S * D;
    memset(w, 0, sizeof(*w));
    hpj__path_bind(a, &w->path, S, C, E, NG);
    w->x = hpj_arena_floats(a, (size_t)C * m->F + 1);
    w->ex = hpj_arena_floats(a, (size_t)E * m->Fe + 1);
    w->h0 = hpj_arena_floats(a, CD + 1);
    w->e = hpj_arena_floats(a, (size_t)E * D + 1);
    w->bntmp = hpj_arena_floats(a, 2 * (size_t)D);
    for (i = 0; i < m->cfg.gnn_layers; ++i) {
        hpj__gnn_layer *L = &w->lay[i];
        L->hin = i == 0 ? w->h0 : w->lay[i - 1].out;
        if (i > 0 && m->cfg.patch_mixing) {
            L->pm = hpj_arena_floats(a, SD + 1); L->ul = hpj_arena_floats(a, SD + 1);
            L->ub = hpj_arena_floats(a, SD + 1); L->ua = hpj_arena_floats(a, SD + 1);
            L->um = hpj_arena_floats(a, (size_t)D); L->ur = hpj_arena_floats(a, (size_t)D);
            L->hm = hpj_arena_floats(a, CD + 1); L->h = hpj_arena_floats(a, CD + 1);
        } else {
            L->h = L->hin;
        }
        L->agg = hpj_arena_floats(a, CD + 1); L->t1 = hpj_arena_floats(a, CD + 1);
        L->b1 = hpj_arena_floats(a, CD + 1); L->r1 = hpj_arena_floats(a, CD + 1);
        L->t2 = hpj_arena_floats(a, CD + 1); L->b2 = hpj_arena_floats(a, CD + 1);
        L->ra2 = hpj_arena_floats(a, CD + 1);
        if (mode != HPJ__EVAL && m->cfg.dropout > 0.0f) {
            L->r2 = hpj_arena_floats(a, CD + 1);
            L->mask = (uint8_t *)hpj_arena_alloc(a, CD + 1);
        } else {
            L->r2 = L->ra2;
        }
        L->sum = hpj_arena_floats(a, CD + 1); L->out = hpj_arena_floats(a, CD + 1);
        L->b1m = hpj_arena_floats(a, (size_t)D); L->b1r = hpj_arena_floats(a, (size_t)D);
        L->b2m = hpj_arena_floats(a, (size_t)D); L->b2r = hpj_arena_floats(a, (size_t)D);
    }
    w->z = hpj_arena_floats(a, SD + 1);
}

static double hpj__flops; /* GEMM flops of the current run (main thread only) */

static void hpj__lin(float *out, const float *in, const float *W, const float *b, int N, int Din, int Dout) {
    hpj_linear_forward(out, in, W, b, N, Din, Dout);
    hpj__flops += 2.0 * N * Din * Dout;
}
static void hpj__lin_back(float *dinp, float *dW, float *db, const float *dout, const float *inp, const float *W, int N,
                          int Din, int Dout) {
    hpj_linear_backward(dinp, dW, db, dout, inp, W, N, Din, Dout);
    hpj__flops += (dinp ? 2.0 : 0.0) * N * Din * Dout + (dW ? 2.0 : 0.0) * N * Din * Dout;
}

/* BatchNorm in one of the three modes. */
static void hpj__bn(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b, float *rm,
                    float *rv, int N, int D, int mode, float *tmp) {
    if (mode == HPJ__EVAL) {
        hpj_batchnorm_forward_eval(out, in, g, b, rm, rv, N, D, 1e-5f);
    } else if (mode == HPJ__TRAIN) {
        hpj_batchnorm_forward_train(out, mean, rstd, rm, rv, in, g, b, N, D, 0.1f, 1e-5f);
    } else {
        memcpy(tmp, rm, sizeof(float) * (size_t)D);
        memcpy(tmp + D, rv, sizeof(float) * (size_t)D);
        hpj_batchnorm_forward_train(out, mean, rstd, tmp, tmp + D, in, g, b, N, D, 0.1f, 1e-5f);
    }
}

/* Forward of the patch encoder over a filled path: w->z gets the tokens. */
static void hpj__gnn_forward(hpj_model *m, hpj__gnn_ws *w, int mode, uint64_t drop_seed) {
    const hpj__path *p = &w->path;
    int i, D = m->D, C = p->C, S = p->S;
    size_t CD = (size_t)C * D;
    hpj_bn_stats *bn = &m->bn;
    hpj__lin(w->h0, w->x, m->p.node_W, m->p.node_b, C, m->F, D);
    hpj__lin(w->e, w->ex, m->p.edge_W, m->p.edge_b, p->E, m->Fe, D);
    for (i = 0; i < m->cfg.gnn_layers; ++i) {
        hpj__gnn_layer *L = &w->lay[i];
        const hpj_gnn_params *q = &m->p.gnn[i];
        if (L->hm) { /* patch mixing, then copy averaging (layers > 0) */
            int32_t c;
            hpj_segment_mean_forward(L->pm, L->hin, p->seg, S, D);
            hpj__lin(L->ul, L->pm, q->Wu, NULL, S, D, D);
            hpj__bn(L->ub, L->um, L->ur, L->ul, q->bnu_g, q->bnu_b, bn->bnu_m[i], bn->bnu_v[i], S, D, mode, w->bntmp);
            hpj_relu_forward(L->ua, L->ub, (size_t)S * D);
            HPJ__OMP(parallel for schedule(static))
            for (c = 0; c < S; ++c) {
                int32_t j, d;
                const float *u = L->ua + (size_t)c * D;
                for (j = p->seg[c]; j < p->seg[c + 1]; ++j) {
                    const float *hi = L->hin + (size_t)j * D;
                    float *ho = L->hm + (size_t)j * D;
                    for (d = 0; d < D; ++d) ho[d] = hi[d] + u[d];
                }
            }
            hpj__copy_avg(L->h, L->hm, p, D);
        }
        hpj_gine_forward(L->agg, L->h, w->e, p->rowptr, p->col, C, D, q->eps[0]);
        hpj__lin(L->t1, L->agg, q->W1, NULL, C, D, D);
        hpj__bn(L->b1, L->b1m, L->b1r, L->t1, q->bn1_g, q->bn1_b, bn->bn1_m[i], bn->bn1_v[i], C, D, mode, w->bntmp);
        hpj_relu_forward(L->r1, L->b1, CD);
        hpj__lin(L->t2, L->r1, q->W2, NULL, C, D, D);
        hpj__bn(L->b2, L->b2m, L->b2r, L->t2, q->bn2_g, q->bn2_b, bn->bn2_m[i], bn->bn2_v[i], C, D, mode, w->bntmp);
        hpj_relu_forward(L->ra2, L->b2, CD);
        if (L->mask) hpj_dropout_forward(L->r2, L->mask, L->ra2, CD, m->cfg.dropout, drop_seed, (uint64_t)m->step, 100 + i);
        {
            size_t t;
            HPJ__OMP(parallel for schedule(static))
            for (t = 0; t < CD; ++t) L->sum[t] = L->h[t] + L->r2[t];
        }
        hpj__lin(L->out, L->sum, q->Wout, q->bout, C, D, D);
    }
    hpj_segment_mean_forward(w->z, w->lay[m->cfg.gnn_layers - 1].out, p->seg, S, D);
}

/* Scratch for the patch encoder's backward. */
typedef struct hpj__gnn_bws {
    float *A, *B, *Cb, *dh, *dX, *dY; /* (C, D) */
    float *sA, *sB;                   /* (S, D) */
    float *de;                        /* (E, D) */
} hpj__gnn_bws;

static void hpj__gnn_bind_back(hpj_arena *a, const hpj_model *m, hpj__gnn_bws *b, int32_t S, int32_t C, int32_t E) {
    size_t CD = (size_t)C * m->D + 1, SD = (size_t)S * m->D + 1;
    b->A = hpj_arena_floats(a, CD); b->B = hpj_arena_floats(a, CD); b->Cb = hpj_arena_floats(a, CD);
    b->dh = hpj_arena_floats(a, CD); b->dX = hpj_arena_floats(a, CD); b->dY = hpj_arena_floats(a, CD);
    b->sA = hpj_arena_floats(a, SD); b->sB = hpj_arena_floats(a, SD);
    b->de = hpj_arena_floats(a, (size_t)E * m->D + 1);
}

static void hpj__zero(float *x, size_t n) {
    size_t i;
    HPJ__OMP(parallel for schedule(static))
    for (i = 0; i < n; ++i) x[i] = 0.0f;
}

/* Backward of hpj__gnn_forward (mode TRAIN / TRAIN_FROZEN) from dz (S, D);
   accumulates into m->g. */
static void hpj__gnn_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dz) {
    const hpj__path *p = &w->path;
    int i, D = m->D, C = p->C, S = p->S;
    size_t CD = (size_t)C * D, SD = (size_t)S * D, t;
    float *dout = b->dX, *din = b->dY;
    hpj__zero(b->de, (size_t)p->E * D);
    hpj__zero(dout, CD);
    /* z = segment_mean(out_last) */
    hpj_segment_mean_backward(dout, dz, p->seg, S, D);
    for (i = m->cfg.gnn_layers - 1; i >= 0; --i) {
        const hpj__gnn_layer *L = &w->lay[i];
        const hpj_gnn_params *q = &m->p.gnn[i];
        hpj_gnn_params *gq = &m->g.gnn[i];
        float *dra2;
        /* out = sum Wout^T + bout */
        hpj__zero(b->A, CD);
        hpj__lin_back(b->A, gq->Wout, gq->bout, dout, L->sum, q->Wout, C, D, D);
        /* sum = h + r2: dh = dsum, dr2 = dsum */
        memcpy(b->dh, b->A, sizeof(float) * CD);
        dra2 = b->A;
        if (L->mask) { /* r2 = dropout(ra2) */
            hpj__zero(b->B, CD);
            hpj_dropout_backward(b->B, b->A, L->mask, CD, m->cfg.dropout);
            dra2 = b->B;
        }
        hpj__zero(b->Cb, CD); /* ra2 = relu(b2) */
        hpj_relu_backward(b->Cb, dra2, L->ra2, CD);
        hpj__zero(b->A, CD); /* b2 = BN2(t2) */
        hpj_batchnorm_backward(b->A, gq->bn2_g, gq->bn2_b, b->Cb, L->t2, q->bn2_g, L->b2m, L->b2r, C, D);
        hpj__zero(b->B, CD); /* t2 = r1 W2^T */
        hpj__lin_back(b->B, gq->W2, NULL, b->A, L->r1, q->W2, C, D, D);
        hpj__zero(b->Cb, CD); /* r1 = relu(b1) */
        hpj_relu_backward(b->Cb, b->B, L->r1, CD);
        hpj__zero(b->A, CD); /* b1 = BN1(t1) */
        hpj_batchnorm_backward(b->A, gq->bn1_g, gq->bn1_b, b->Cb, L->t1, q->bn1_g, L->b1m, L->b1r, C, D);
        hpj__zero(b->B, CD); /* t1 = agg W1^T */
        hpj__lin_back(b->B, gq->W1, NULL, b->A, L->agg, q->W1, C, D, D);
        /* agg = GINE(h, e) */
        hpj_gine_backward(b->dh, b->de, gq->eps, b->B, L->h, w->e, p->rowptr, p->col, p->rev, C, D, q->eps[0]);
        if (L->hm) {
            int32_t s;
            /* h = A hm (copy averaging, symmetric) */
            hpj__copy_avg(b->A, b->dh, p, D);
            /* hm = hin + ua[seg]: dhin = dhm ; dua = segment sums of dhm */
            memcpy(din, b->A, sizeof(float) * CD);
            HPJ__OMP(parallel for schedule(static))
            for (s = 0; s < S; ++s) {
                int32_t j, d;
                float *o = b->sA + (size_t)s * D;
                for (d = 0; d < D; ++d) o[d] = 0.0f;
                for (j = p->seg[s]; j < p->seg[s + 1]; ++j) {
                    const float *r = b->A + (size_t)j * D;
                    for (d = 0; d < D; ++d) o[d] += r[d];
                }
            }
            hpj__zero(b->sB, SD); /* ua = relu(ub) */
            hpj_relu_backward(b->sB, b->sA, L->ua, SD);
            hpj__zero(b->sA, SD); /* ub = BNu(ul) */
            hpj_batchnorm_backward(b->sA, gq->bnu_g, gq->bnu_b, b->sB, L->ul, q->bnu_g, L->um, L->ur, S, D);
            hpj__zero(b->sB, SD); /* ul = pm Wu^T */
            hpj__lin_back(b->sB, gq->Wu, NULL, b->sA, L->pm, q->Wu, S, D, D);
            hpj_segment_mean_backward(din, b->sB, p->seg, S, D); /* pm = segment_mean(hin) */
        } else {
            memcpy(din, b->dh, sizeof(float) * CD);
        }
        { float *tmp = dout; dout = din; din = tmp; }
    }
    /* h0 = x node_W^T + node_b ; e = ex edge_W^T + edge_b */
    hpj__lin_back(NULL, m->g.node_W, m->g.node_b, dout, w->x, m->p.node_W, C, m->F, D);
    hpj__lin_back(NULL, m->g.edge_W, m->g.edge_b, b->de, w->ex, m->p.edge_W, p->E, m->Fe, D);
    (void)t;
}

/* ==== model: structural-query encoder e_xi ================================ */

typedef struct hpj__pe_ws {
    float *rw;       /* (S, R) reduced RWSE of the patches */
    float *lin, *bn; /* (S, D) */
    float *mean, *rstd; /* (D) */
    float *p;        /* (S, D) structural queries */
    float *bntmp;    /* (2D) */
} hpj__pe_ws;

static void hpj__pe_bind(hpj_arena *a, const hpj_model *m, hpj__pe_ws *w, int32_t S) {
    size_t SD = (size_t)S * m->D + 1;
    w->rw = hpj_arena_floats(a, (size_t)S * m->R + 1);
    w->lin = hpj_arena_floats(a, SD);
    w->bn = hpj_arena_floats(a, SD);
    w->mean = hpj_arena_floats(a, (size_t)m->D);
    w->rstd = hpj_arena_floats(a, (size_t)m->D);
    w->p = hpj_arena_floats(a, SD);
    w->bntmp = hpj_arena_floats(a, 2 * (size_t)m->D);
}

/* p = ReLU(BN(rw W^T)) over the S patches of items (reference: Linear
   without bias, BatchNorm, ReLU). */
static void hpj__pe_forward(hpj_model *m, hpj__pe_ws *w, const hpj_tokens *tk, const hpj__item *it, int32_t S, int mode) {
    int32_t s;
    for (s = 0; s < S; ++s) memcpy(w->rw + (size_t)s * m->R, tk->rw + (size_t)it[s].patch * m->R, sizeof(float) * (size_t)m->R);
    hpj__lin(w->lin, w->rw, m->p.pe_W, NULL, S, m->R, m->D);
    hpj__bn(w->bn, w->mean, w->rstd, w->lin, m->p.pe_g, m->p.pe_b, m->bn.pe_m, m->bn.pe_v, S, m->D, mode, w->bntmp);
    hpj_relu_forward(w->p, w->bn, (size_t)S * m->D);
}

static void hpj__pe_backward(hpj_model *m, const hpj__pe_ws *w, int32_t S, const float *dp, float *s1, float *s2) {
    size_t SD = (size_t)S * m->D;
    hpj__zero(s1, SD);
    hpj_relu_backward(s1, dp, w->p, SD);
    hpj__zero(s2, SD);
    hpj_batchnorm_backward(s2, m->g.pe_g, m->g.pe_b, s1, w->lin, m->p.pe_g, w->mean, w->rstd, S, m->D);
    hpj__lin_back(NULL, m->g.pe_W, NULL, s2, w->rw, m->p.pe_W, S, m->R, m->D);
}

/* ==== model: token encoders (online f_theta and EMA target) =============== */

typedef struct hpj__enc_ws {
    int B, T, nblocks, train;
    float *x[HPJ_MAX_BLOCKS + 1];          /* (B*T, D) block inputs; x[nblocks] = output */
    hpj_block_cache cache[HPJ_MAX_BLOCKS]; /* one per block when training, else shared */
    float *scratch;                        /* backward scratch                         */
    float *dA, *dB;                        /* (B*T, D)                                 */
} hpj__enc_ws;

static void hpj__enc_bind(hpj_arena *a, const hpj_model *m, hpj__enc_ws *w, int B, int T, int train) {
    int i, D = m->D, F = m->Fh, H = m->H, nb = m->cfg.blocks;
    size_t BTD = (size_t)B * T * D + 1, cc = hpj_block_cache_count(B, T, D, H, F);
    memset(w, 0, sizeof(*w));
    w->B = B; w->T = T; w->nblocks = nb; w->train = train;
    for (i = 0; i <= nb; ++i) w->x[i] = (train || i == 0 || i == nb) ? hpj_arena_floats(a, BTD) : NULL;
    if (!train && nb > 1) { /* no backward: ping-pong two buffers */
        float *t1 = hpj_arena_floats(a, BTD), *t2 = hpj_arena_floats(a, BTD);
        for (i = 1; i < nb; ++i) w->x[i] = (i & 1) ? t1 : t2;
    }
    for (i = 0; i < nb; ++i) {
        if (train || i == 0) {
            float *flat = hpj_arena_floats(a, cc + 1);
            hpj_block_cache_bind(&w->cache[i], flat, B, T, D, H, F);
        } else {
            w->cache[i] = w->cache[0];
        }
    }
    if (train) {
        w->scratch = hpj_arena_floats(a, hpj_block_scratch_count(B, T, D, H, F) + 1);
        w->dA = hpj_arena_floats(a, BTD);
        w->dB = hpj_arena_floats(a, BTD);
    }
}

static void hpj__enc_flops(const hpj_model *m, int B, int T, double mult) {
    double BT = (double)B * T, D = m->D;
    hpj__flops += mult * (2.0 * BT * D * 3 * D + 2.0 * BT * D * D + 4.0 * BT * D * m->Fh + 4.0 * B * (double)T * T * D) *
                  m->cfg.blocks;
}

static void hpj__enc_forward(hpj_model *m, hpj__enc_ws *w, const hpj_block_params *blk, const uint8_t *mask,
                             const float *adj) {
    int i;
    for (i = 0; i < w->nblocks; ++i)
        hpj_block_forward(w->x[i + 1], &w->cache[i], w->x[i], &blk[i], mask, adj, w->B, w->T, m->D, m->H, m->Fh,
                          m->cfg.ffn_act);
    hpj__enc_flops(m, w->B, w->T, 1.0);
}

/* dx (B*T, D) = d(output)/d(input)^T dy, accumulating parameter grads. */
static void hpj__enc_backward(hpj_model *m, hpj__enc_ws *w, const float *dy, float *dx, const uint8_t *mask) {
    int i;
    size_t n = (size_t)w->B * w->T * m->D;
    const float *dcur = dy;
    float *bufs[2];
    bufs[0] = w->dA;
    bufs[1] = w->dB;
    if (w->nblocks == 0) { memcpy(dx, dy, sizeof(float) * n); return; }
    for (i = w->nblocks - 1; i >= 0; --i) {
        float *dnext = (i == 0) ? dx : bufs[i & 1];
        hpj__zero(dnext, n);
        hpj_block_backward(dnext, &m->g.blk[i], dcur, w->x[i], &m->p.blk[i], &w->cache[i], w->scratch, mask, NULL, w->B,
                           w->T, m->D, m->H, m->Fh, m->cfg.ffn_act);
        dcur = dnext;
    }
    hpj__enc_flops(m, w->B, w->T, 2.0);
}

/* ==== model: predictor q_psi =============================================== */

typedef struct hpj__pred_ws {
    int N;
    float *a[HPJ_MAX_PRED + 1]; /* (N, D) input of each layer; a[P] = (N, 2) output */
    float *r[HPJ_MAX_PRED];     /* (N, D) ReLU outputs (before dropout)              */
    uint8_t *mask[HPJ_MAX_PRED];
    float *dA, *dB, *dC;        /* (N, D)                                          */
} hpj__pred_ws;

static void hpj__pred_bind(hpj_arena *a, const hpj_model *m, hpj__pred_ws *w, int N, int train) {
    int i, P = m->cfg.pred_layers;
    size_t ND = (size_t)N * m->D + 1;
    memset(w, 0, sizeof(*w));
    w->N = N;
    for (i = 0; i < P; ++i) {
        w->a[i] = hpj_arena_floats(a, ND);
        if (i > 0) {
            if (train && m->cfg.dropout > 0.0f) {
                w->r[i - 1] = hpj_arena_floats(a, ND);
                w->mask[i - 1] = (uint8_t *)hpj_arena_alloc(a, ND);
            } else {
                w->r[i - 1] = w->a[i];
            }
        }
    }
    w->a[P] = hpj_arena_floats(a, (size_t)N * 2 + 1);
    w->dA = hpj_arena_floats(a, ND);
    w->dB = hpj_arena_floats(a, ND);
    w->dC = hpj_arena_floats(a, ND);
}

/* a[0] must hold the input; hidden layers Linear-ReLU(-dropout), last Linear(D, 2). */
static void hpj__pred_forward(hpj_model *m, hpj__pred_ws *w, uint64_t drop_seed) {
    int i, P = m->cfg.pred_layers, D = m->D;
    size_t ND = (size_t)w->N * D;
    for (i = 0; i < P; ++i) {
        int out = (i == P - 1) ? 2 : D;
        hpj__lin(i == P - 1 ? w->a[P] : w->r[i], w->a[i], m->p.pred_W[i], m->p.pred_b[i], w->N, D, out);
        if (i < P - 1) {
            hpj_relu_forward(w->r[i], w->r[i], ND);
            if (w->mask[i]) hpj_dropout_forward(w->a[i + 1], w->mask[i], w->r[i], ND, m->cfg.dropout, drop_seed, (uint64_t)m->step, 200 + i);
        }
    }
}

/* dq (N, D) = gradient of the input, from dy (N, 2). */
static void hpj__pred_backward(hpj_model *m, hpj__pred_ws *w, const float *dy, float *dq) {
    int i, P = m->cfg.pred_layers, D = m->D;
    size_t ND = (size_t)w->N * D;
    const float *dlin = dy; /* gradient of the current layer's linear output */
    for (i = P - 1; i >= 0; --i) {
        int out = (i == P - 1) ? 2 : D;
        float *dinp = (i == 0) ? dq : w->dB; /* gradient of a[i] */
        const float *dr;
        hpj__zero(dinp, ND);
        hpj__lin_back(dinp, m->g.pred_W[i], m->g.pred_b[i], dlin, w->a[i], m->p.pred_W[i], w->N, D, out);
        if (i == 0) break;
        /* a[i] = dropout(r[i-1]), r[i-1] = relu(linear output of layer i-1) */
        dr = dinp;
        if (w->mask[i - 1]) {
            hpj__zero(w->dC, ND);
            hpj_dropout_backward(w->dC, dinp, w->mask[i - 1], ND, m->cfg.dropout);
            dr = w->dC;
        }
        hpj__zero(w->dA, ND);
        hpj_relu_backward(w->dA, dr, w->r[i - 1], ND);
        dlin = w->dA;
    }
}

/* Overlap counts |P_i cap P_j| of the patches of items it[0..T-1] into
   adj (Tm, Tm) (ascending node lists, merge-count). */
static void hpj__overlap(const hpj_tokens *tk, const hpj__item *it, int T, int Tm, float *adj) {
    int i, j;
    for (i = 0; i < Tm * Tm; ++i) adj[i] = 0.0f;
    for (i = 0; i < T; ++i)
        for (j = i; j < T; ++j) {
            const int32_t *a = tk->nodes + tk->ptr[it[i].patch], *b = tk->nodes + tk->ptr[it[j].patch];
            int64_t na = tk->ptr[it[i].patch + 1] - tk->ptr[it[i].patch];
            int64_t nb = tk->ptr[it[j].patch + 1] - tk->ptr[it[j].patch], x = 0, y = 0, c = 0;
            while (x < na && y < nb) {
                if (a[x] == b[y]) { ++c; ++x; ++y; }
                else if (a[x] < b[y]) ++x;
                else ++y;
            }
            adj[i * Tm + j] = adj[j * Tm + i] = (float)c;
        }
}

/* ==== model: one per-resolution step ======================================= */

/* State of a pretraining run shared by its steps. */
typedef struct hpj__trainer {
    hpj_model *m;
    const hpj_dataset *ds;
    hpj_tokens tk;
    float *node_rw;          /* (N, R) */
    hpj_arena arena;
    int32_t *stamp, *loc;    /* (max n) scratch, stamp = -1 */
    hpj__item *ctx, *tgt;    /* (batch), (batch * max M)    */
    int32_t *tptr;           /* (batch + 1) targets of each context */
    uint64_t sample_seed;
    int64_t epoch;
    int64_t total_steps, warmup_steps;
    int mode;                /* HPJ__TRAIN or HPJ__TRAIN_FROZEN */
    int apply;               /* 1: optimizer + EMA */
    float *targets;          /* tests: targets out / in (reuse_targets) */
    int reuse_targets;
} hpj__trainer;

/* Samples the context and targets of the eligible graphs (k_l >= 2) of a
   batch: one context uniformly, min(M_l, k-1) targets without replacement
   from the other regions; one stream per (seed, epoch, graph, resolution). */
static int32_t hpj__sample(hpj__trainer *tr, const int32_t *batch, int32_t nb, int l, int32_t *ntgt) {
    const hpj_tokens *tk = &tr->tk;
    int32_t b, B = 0, T = 0;
    int32_t perm[1024];
    int32_t *big = NULL;
    tr->tptr[0] = 0;
    for (b = 0; b < nb; ++b) {
        int32_t g = batch[b], k = tk->k[(size_t)g * tk->L + l], Mg, c, j;
        int64_t p0 = tk->patch0[(size_t)g * tk->L + l];
        hpj_rng r;
        int32_t *pm;
        if (k < 2) continue;
        r = hpj_rng_stream(tr->sample_seed, (uint64_t)tr->epoch, (uint64_t)g * HPJ_MAX_RES + (uint64_t)l);
        Mg = HPJ__MIN(tr->m->cfg.M[l], k - 1);
        c = (int32_t)hpj_rng_below(&r, (uint32_t)k);
        pm = k <= 1024 ? perm : (big = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)k, "sample"));
        if (!pm) return -1;
        for (j = 0; j < k - 1; ++j) pm[j] = j < c ? j : j + 1; /* the regions other than c */
        for (j = 0; j < Mg; ++j) { /* partial Fisher-Yates */
            int32_t q = j + (int32_t)hpj_rng_below(&r, (uint32_t)(k - 1 - j)), t = pm[j];
            pm[j] = pm[q];
            pm[q] = t;
        }
        tr->ctx[B].g = g; tr->ctx[B].slot = c; tr->ctx[B].patch = p0 + c;
        for (j = 0; j < Mg; ++j) {
            tr->tgt[T].g = g; tr->tgt[T].slot = pm[j]; tr->tgt[T].patch = p0 + pm[j];
            ++T;
        }
        hpj__free(big);
        big = NULL;
        tr->tptr[++B] = T;
    }
    *ntgt = T;
    return B;
}

/* Buffers of one step, bound from an arena (measured first). */
typedef struct hpj__step_ws {
    hpj__gnn_ws gc, gt;      /* context (with grad) and target patch encoders */
    hpj__gnn_bws gb;
    hpj__pe_ws pc, pt;
    hpj__enc_ws ec, et;      /* online (B, 1) and target (B, Tm) encoders     */
    hpj__pred_ws pr;
    uint8_t *tmask;          /* (B, Tm) valid targets                         */
    float *adj;              /* (B, Tm, Tm) or NULL                           */
    uint8_t *tokmask;        /* (B, D) token dropout mask or NULL             */
    float *yt, *dy;          /* (T, 2)                                        */
    float *dq, *ds, *dx, *dtmp, *s1, *s2; /* (T, D), (B, D) x3, (max(B,T), D) x2 */
} hpj__step_ws;

static void hpj__step_bind(hpj_arena *a, const hpj_model *m, hpj__step_ws *w, int32_t B, int32_t T, int32_t Tm,
                           const int64_t *cc, const int64_t *ct, int train_drop) {
    int D = m->D;
    size_t BD = (size_t)B * D + 1, TD = (size_t)T * D + 1, MD = (size_t)HPJ__MAX(B, T) * D + 1;
    hpj__gnn_bind(a, m, &w->gc, B, (int32_t)cc[0], (int32_t)cc[1], (int32_t)cc[2], train_drop ? HPJ__TRAIN : HPJ__EVAL);
    hpj__gnn_bind_back(a, m, &w->gb, B, (int32_t)cc[0], (int32_t)cc[1]);
    hpj__gnn_bind(a, m, &w->gt, T, (int32_t)ct[0], (int32_t)ct[1], (int32_t)ct[2], HPJ__EVAL /* no dropout */);
    hpj__pe_bind(a, m, &w->pc, B);
    hpj__pe_bind(a, m, &w->pt, T);
    hpj__enc_bind(a, m, &w->ec, B, 1, 1);
    hpj__enc_bind(a, m, &w->et, B, Tm, 0);
    hpj__pred_bind(a, m, &w->pr, T, 1);
    w->tmask = (uint8_t *)hpj_arena_alloc(a, (size_t)B * Tm + 1);
    w->adj = m->cfg.target_adj ? hpj_arena_floats(a, (size_t)B * Tm * Tm + 1) : NULL;
    w->tokmask = (train_drop && m->cfg.token_dropout > 0.0f) ? (uint8_t *)hpj_arena_alloc(a, BD) : NULL;
    w->yt = hpj_arena_floats(a, (size_t)T * 2 + 1);
    w->dy = hpj_arena_floats(a, (size_t)T * 2 + 1);
    w->dq = hpj_arena_floats(a, TD);
    w->ds = hpj_arena_floats(a, BD);
    w->dx = hpj_arena_floats(a, BD);
    w->dtmp = hpj_arena_floats(a, BD);
    w->s1 = hpj_arena_floats(a, MD);
    w->s2 = hpj_arena_floats(a, MD);
}

/* Makes sure the arena holds `need` bytes (grows between steps only). */
static hpj_status hpj__arena_ensure(hpj_arena *a, size_t need) {
    if (a->cap >= need && a->base) return HPJ_OK;
    {
        size_t peak = a->peak;
        hpj_arena_free(a);
        if (hpj_arena_init(a, need + need / 4 + 4096) != HPJ_OK) return HPJ_ERR_NOMEM;
        a->peak = peak;
    }
    return HPJ_OK;
}

static float hpj__step_lr(const hpj__trainer *tr) {
    const hpj_config *c = &tr->m->cfg;
    return hpj_lr_at(c->schedule, c->lr, c->min_lr, tr->m->step, tr->total_steps, tr->warmup_steps);
}

/* Runs resolution l on a batch: forward, loss, backward and (if tr->apply)
   the optimizer step and EMA update. *loss gets L_l(B); *active = 0 when
   B_l is empty (nothing done). */
static hpj_status hpj__step(hpj__trainer *tr, const int32_t *batch, int32_t nb, int l, double *loss, int *active) {
    hpj_model *m = tr->m;
    const hpj_config *cfg = &m->cfg;
    const hpj_dataset *ds = tr->ds;
    hpj__step_ws w;
    hpj_arena meas;
    int32_t B, T, Tm = 0, b, D = m->D;
    int64_t cc[3], ct[3];
    size_t mark;
    hpj_status st;
    uint64_t drop_seed = cfg->seed ^ 0xD50FULL;
    int train_drop = (tr->mode == HPJ__TRAIN);
    double L_sum;
    *loss = 0.0;
    *active = 0;
    B = hpj__sample(tr, batch, nb, l, &T);
    if (B < 0) return HPJ_ERR_NOMEM;
    if (B == 0) return HPJ_OK;
    *active = 1;
    for (b = 0; b < B; ++b) Tm = HPJ__MAX(Tm, tr->tptr[b + 1] - tr->tptr[b]);
    hpj__path_count(ds, &tr->tk, tr->ctx, B, tr->stamp, &cc[0], &cc[1], &cc[2]);
    hpj__path_count(ds, &tr->tk, tr->tgt, T, tr->stamp, &ct[0], &ct[1], &ct[2]);
    if (cc[0] > INT32_MAX / 2 || cc[1] > INT32_MAX / 2 || ct[0] > INT32_MAX / 2 || ct[1] > INT32_MAX / 2)
        return hpj__fail(HPJ_ERR_INPUT, "step: batch too large (%lld node copies)", (long long)(cc[0] + ct[0]));
    hpj_arena_init_measure(&meas);
    hpj__step_bind(&meas, m, &w, B, T, Tm, cc, ct, train_drop);
    if ((st = hpj__arena_ensure(&tr->arena, meas.used))) return st;
    mark = hpj_arena_mark(&tr->arena);
    hpj__step_bind(&tr->arena, m, &w, B, T, Tm, cc, ct, train_drop);

    /* -- inputs -- */
    hpj__path_fill(ds, &tr->tk, tr->ctx, &w.gc.path, tr->stamp, tr->loc);
    hpj__path_fill(ds, &tr->tk, tr->tgt, &w.gt.path, tr->stamp, tr->loc);
    hpj__path_features(m, ds, &w.gc.path, w.gc.x, w.gc.ex);
    hpj__path_features(m, ds, &w.gt.path, w.gt.x, w.gt.ex);
    memset(m->grads, 0, sizeof(float) * m->num_params);

    /* -- forward: patch tokens z and structural queries p of both paths -- */
    hpj__gnn_forward(m, &w.gc, tr->mode, drop_seed);
    hpj__gnn_forward(m, &w.gt, tr->mode == HPJ__TRAIN ? HPJ__TRAIN : HPJ__TRAIN_FROZEN, 0);
    hpj__pe_forward(m, &w.pc, &tr->tk, tr->ctx, B, tr->mode);
    hpj__pe_forward(m, &w.pt, &tr->tk, tr->tgt, T, tr->mode);
    /* context input x = z + p (token dropout on it), online encoder: s */
    {
        size_t i, n = (size_t)B * D;
        for (i = 0; i < n; ++i) w.ec.x[0][i] = w.gc.z[i] + w.pc.p[i];
        if (w.tokmask) hpj_dropout_forward(w.ec.x[0], w.tokmask, w.ec.x[0], n, cfg->token_dropout, drop_seed, (uint64_t)m->step, 300);
    }
    hpj__enc_forward(m, &w.ec, m->p.blk, NULL, NULL);
    /* target input: z of the targets only (stop-gradient), EMA encoder */
    for (b = 0; b < B; ++b) {
        int32_t t0 = tr->tptr[b], nt = tr->tptr[b + 1] - t0, j;
        for (j = 0; j < Tm; ++j) {
            float *dst = w.et.x[0] + ((size_t)b * Tm + j) * D;
            w.tmask[(size_t)b * Tm + j] = (uint8_t)(j < nt);
            if (j < nt) memcpy(dst, w.gt.z + (size_t)(t0 + j) * D, sizeof(float) * (size_t)D);
            else memset(dst, 0, sizeof(float) * (size_t)D);
        }
        if (w.adj) hpj__overlap(&tr->tk, tr->tgt + t0, nt, Tm, w.adj + (size_t)b * Tm * Tm);
    }
    hpj__enc_forward(m, &w.et, m->tgt, w.tmask, w.adj);
    /* targets Phi(u) = [cosh m(u), sinh m(u)] */
    for (b = 0; b < B; ++b) {
        int32_t t0 = tr->tptr[b], nt = tr->tptr[b + 1] - t0, j, d;
        for (j = 0; j < nt; ++j) {
            const float *u = w.et.x[cfg->blocks] + ((size_t)b * Tm + j) * D;
            double mu = 0.0;
            for (d = 0; d < D; ++d) mu += u[d];
            mu /= D;
            if (cfg->target_clamp > 0.0f) mu = mu > cfg->target_clamp ? cfg->target_clamp : mu < -cfg->target_clamp ? -cfg->target_clamp : mu;
            if (!(fabs(mu) < 88.0)) {
                hpj_arena_reset(&tr->arena, mark);
                return hpj__fail(HPJ_ERR_NUMERIC,
                                 "epoch %lld, step %lld, resolution %d (K=%d): target mean m(u) = %g makes cosh/sinh "
                                 "overflow float; set target_clamp (e.g. 20) to guard",
                                 (long long)tr->epoch + 1, (long long)m->step + 1, l + 1, cfg->K[l], mu);
            }
            w.yt[(size_t)(t0 + j) * 2] = (float)cosh(mu);
            w.yt[(size_t)(t0 + j) * 2 + 1] = (float)sinh(mu);
        }
    }
    if (tr->targets) {
        if (tr->reuse_targets) memcpy(w.yt, tr->targets, sizeof(float) * 2 * (size_t)T);
        else memcpy(tr->targets, w.yt, sizeof(float) * 2 * (size_t)T);
    }
    /* predictor on s_c + p_t */
    for (b = 0; b < B; ++b) {
        int32_t t;
        for (t = tr->tptr[b]; t < tr->tptr[b + 1]; ++t) {
            int d;
            const float *sc = w.ec.x[cfg->blocks] + (size_t)b * D, *pt = w.pt.p + (size_t)t * D;
            float *q = w.pr.a[0] + (size_t)t * D;
            for (d = 0; d < D; ++d) q[d] = sc[d] + pt[d];
        }
    }
    hpj__pred_forward(m, &w.pr, drop_seed);
    /* loss: SmoothL1 per coordinate, averaged over 2 coordinates and all T
       selected targets of the minibatch (the paper's Z_l normaliser) */
    memset(w.dy, 0, sizeof(float) * (size_t)T * 2);
    L_sum = hpj_smooth_l1(w.pr.a[cfg->pred_layers], w.yt, w.dy, (size_t)T * 2, cfg->beta, 1.0f / (2.0f * (float)T));
    *loss = L_sum;
    if (!(L_sum == L_sum) || L_sum > 1e30) {
        hpj_arena_reset(&tr->arena, mark);
        return hpj__fail(HPJ_ERR_NUMERIC, "epoch %lld, step %lld, resolution %d (K=%d): loss is %g", (long long)tr->epoch + 1,
                         (long long)m->step + 1, l + 1, cfg->K[l], L_sum);
    }

    /* -- backward -- */
    hpj__pred_backward(m, &w.pr, w.dy, w.dq);
    /* q_t = s_c + p_t: ds_c = sum of dq over c's targets, dp_t = dq_t */
    for (b = 0; b < B; ++b) {
        int32_t t, d;
        float *o = w.ds + (size_t)b * D;
        for (d = 0; d < D; ++d) o[d] = 0.0f;
        for (t = tr->tptr[b]; t < tr->tptr[b + 1]; ++t)
            for (d = 0; d < D; ++d) o[d] += w.dq[(size_t)t * D + d];
    }
    hpj__enc_backward(m, &w.ec, w.ds, w.dx, NULL);
    if (w.tokmask) {
        memcpy(w.dtmp, w.dx, sizeof(float) * (size_t)B * D);
        hpj__zero(w.dx, (size_t)B * D);
        hpj_dropout_backward(w.dx, w.dtmp, w.tokmask, (size_t)B * D, cfg->token_dropout);
    }
    /* x = z + p: dz = dp = dx */
    hpj__pe_backward(m, &w.pc, B, w.dx, w.s1, w.s2);
    hpj__pe_backward(m, &w.pt, T, w.dq, w.s1, w.s2);
    hpj__gnn_backward(m, &w.gc, &w.gb, w.dx);

    /* -- update -- */
    if (tr->apply) {
        double gn;
        float lr = hpj__step_lr(tr), mom;
        gn = hpj_grad_clip(m->grads, m->num_params, cfg->clip);
        if (!(gn == gn) || gn > 1e30) {
            hpj_arena_reset(&tr->arena, mark);
            return hpj__fail(HPJ_ERR_NUMERIC, "epoch %lld, step %lld, resolution %d (K=%d): gradient norm is %g",
                             (long long)tr->epoch + 1, (long long)m->step + 1, l + 1, cfg->K[l], gn);
        }
        hpj_adam_step(m->params, m->grads, m->adam_m, m->adam_v, m->num_params, lr, 0.9f, 0.999f, 1e-8f,
                      cfg->weight_decay, cfg->optimizer == HPJ_OPT_ADAMW, m->step + 1);
        mom = hpj_ema_momentum(cfg->ema_start, cfg->ema_end, m->step, tr->total_steps);
        hpj_ema_update(m->ema, m->params + m->enc_offset, m->enc_count, mom);
        m->step++;
    }
    hpj_arena_reset(&tr->arena, mark);
    return HPJ_OK;
}

/* ==== model: training loop ================================================= */

static void hpj__trainer_free(hpj__trainer *tr) {
    hpj_tokens_free(&tr->tk);
    hpj__free(tr->node_rw);
    hpj_arena_free(&tr->arena);
    hpj__free(tr->stamp); hpj__free(tr->loc); hpj__free(tr->ctx); hpj__free(tr->tgt); hpj__free(tr->tptr);
    memset(tr, 0, sizeof(*tr));
}

static void hpj__tok_opts(const hpj_model *m, hpj_tok_options *o, int train, int64_t epoch) {
    const hpj_config *c = &m->cfg;
    hpj_tok_options_default(o);
    o->L = c->L;
    memcpy(o->K, c->K, sizeof o->K);
    o->rw_dim = c->rw_dim;
    o->rw_reduce = c->rw_reduce;
    o->always_active = (c->mode == HPJ_MODE_GRAPH_JEPA);
    o->part.method = (hpj_partition_method)c->part_method;
    o->seed = c->seed;
    o->epoch = train && c->repartition ? (uint64_t)epoch + 1 : 0; /* epoch 0 = the fixed evaluation partition */
    o->edge_drop = train && c->repartition ? c->edge_drop : 0.0f;
}

static hpj_status hpj__trainer_init(hpj__trainer *tr, hpj_model *m, const hpj_dataset *ds, int32_t batch_cap) {
    int32_t g, maxn = 1, maxM = 1, l;
    hpj_status st;
    memset(tr, 0, sizeof(*tr));
    tr->m = m;
    tr->ds = ds;
    tr->mode = HPJ__TRAIN;
    tr->apply = 1;
    tr->sample_seed = m->cfg.seed ^ 0x5A3DULL;
    if (m->node_onehot && !ds->node_label)
        return hpj__fail(HPJ_ERR_INPUT, "model expects node labels but dataset %s has none", ds->name);
    if (m->edge_onehot && !ds->edge_label)
        return hpj__fail(HPJ_ERR_INPUT, "model expects edge labels but dataset %s has none", ds->name);
    if (m->node_attr_dim && (!ds->node_attr || ds->node_attr_dim != m->node_attr_dim))
        return hpj__fail(HPJ_ERR_INPUT, "model expects %d node attributes, dataset %s has %d", m->node_attr_dim, ds->name,
                         ds->node_attr ? ds->node_attr_dim : 0);
    for (g = 0; g < ds->num_graphs; ++g) maxn = HPJ__MAX(maxn, (int32_t)(ds->node_ptr[g + 1] - ds->node_ptr[g]));
    for (l = 0; l < m->cfg.L; ++l) maxM = HPJ__MAX(maxM, m->cfg.M[l]);
    tr->node_rw = (float *)hpj__calloc((size_t)ds->num_nodes + 1, sizeof(float) * (size_t)m->R, "pretrain");
    tr->stamp = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)maxn, "pretrain");
    tr->loc = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)maxn, "pretrain");
    tr->ctx = (hpj__item *)hpj__alloc(sizeof(hpj__item) * (size_t)batch_cap, "pretrain");
    tr->tgt = (hpj__item *)hpj__alloc(sizeof(hpj__item) * (size_t)batch_cap * (size_t)maxM, "pretrain");
    tr->tptr = (int32_t *)hpj__alloc(sizeof(int32_t) * ((size_t)batch_cap + 1), "pretrain");
    if (!tr->node_rw || !tr->stamp || !tr->loc || !tr->ctx || !tr->tgt || !tr->tptr) {
        hpj__trainer_free(tr);
        return HPJ_ERR_NOMEM;
    }
    for (g = 0; g < maxn; ++g) tr->stamp[g] = -1;
    if ((st = hpj_dataset_rwse(ds, m->R, tr->node_rw))) { hpj__trainer_free(tr); return st; }
    return HPJ_OK;
}

static hpj_status hpj__trainer_tokens(hpj__trainer *tr, const int32_t *graphs, int32_t n, int train, int64_t epoch) {
    hpj_tok_options o;
    hpj__tok_opts(tr->m, &o, train, epoch);
    hpj_tokens_free(&tr->tk);
    return hpj_tokens_build(tr->ds, tr->node_rw, graphs, n, &o, &tr->tk);
}

static void hpj__set_threads(const hpj_config *c) {
#ifdef _OPENMP
    if (c->threads > 0) omp_set_num_threads(c->threads);
#else
    (void)c;
#endif
}

HPJDEF double hpj_model_last_flops(void) { return hpj__flops; }

HPJDEF hpj_status hpj_pretrain(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                               int64_t max_steps, hpj_progress_fn progress, void *user) {
    const hpj_config *c = &m->cfg;
    hpj__trainer tr;
    hpj_status st;
    int32_t *order = NULL, nb, bs = c->batch_size, i;
    int64_t e, steps_per_epoch = 0;
    hpj_progress pg;
    uint8_t *eligible = NULL; /* (G * L): k_l(g) >= 2 (depends only on n) */
    if (n_train < 1) return hpj__fail(HPJ_ERR_INPUT, "pretrain: no training graphs");
    for (i = 0; i < n_train; ++i)
        if (train[i] < 0 || train[i] >= ds->num_graphs)
            return hpj__fail(HPJ_ERR_INPUT, "pretrain: graph index %d outside 0..%d", train[i], ds->num_graphs - 1);
    hpj__set_threads(c);
    hpj__flops = 0.0;
    if ((st = hpj__trainer_init(&tr, m, ds, bs))) return st;
    order = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n_train, "pretrain");
    eligible = (uint8_t *)hpj__calloc((size_t)ds->num_graphs * c->L + 1, 1, "pretrain");
    if (!order || !eligible) { st = HPJ_ERR_NOMEM; goto done; }
    for (i = 0; i < n_train; ++i) {
        int l;
        int32_t n = (int32_t)(ds->node_ptr[train[i] + 1] - ds->node_ptr[train[i]]);
        for (l = 0; l < c->L; ++l)
            eligible[(size_t)train[i] * c->L + l] = hpj__tok_regions(n, c->K[l], c->mode == HPJ_MODE_GRAPH_JEPA) >= 2;
    }
    nb = (n_train + bs - 1) / bs;
    /* plan: the exact number of optimizer steps, for the schedules */
    tr.total_steps = 0;
    for (e = 0; e < c->epochs; ++e) {
        hpj_rng r = hpj_rng_stream(c->seed ^ 0x0DE5ULL, (uint64_t)e, 0);
        int32_t bi;
        memcpy(order, train, sizeof(int32_t) * (size_t)n_train);
        hpj_rng_shuffle_i32(&r, order, n_train);
        for (bi = 0; bi < nb; ++bi) {
            int l;
            for (l = 0; l < c->L; ++l) {
                int32_t j, any = 0;
                for (j = bi * bs; j < HPJ__MIN(n_train, (bi + 1) * bs) && !any; ++j) any = eligible[(size_t)order[j] * c->L + l];
                tr.total_steps += any;
            }
        }
        if (e == 0) steps_per_epoch = tr.total_steps;
    }
    if (max_steps > 0 && max_steps < tr.total_steps) tr.total_steps = max_steps;
    tr.warmup_steps = (int64_t)(c->warmup * (double)steps_per_epoch);
    memset(&pg, 0, sizeof pg);
    pg.epochs = c->epochs;
    pg.total_steps = tr.total_steps;
    pg.batches = nb;
    {
        for (e = 0; e < c->epochs; ++e) {
            hpj_rng r = hpj_rng_stream(c->seed ^ 0x0DE5ULL, (uint64_t)e, 0);
            int32_t bi;
            int64_t graphs_done = 0;
            tr.epoch = m->epoch;
            if (e == 0 || c->repartition)
                if ((st = hpj__trainer_tokens(&tr, train, n_train, 1, m->epoch))) goto done;
            memcpy(order, train, sizeof(int32_t) * (size_t)n_train);
            hpj_rng_shuffle_i32(&r, order, n_train);
            memset(pg.loss, 0, sizeof pg.loss);
            memset(pg.loss_count, 0, sizeof pg.loss_count);
            pg.epoch = (int)e;
            for (bi = 0; bi < nb; ++bi) {
                int l;
                int32_t b0 = bi * bs, bn = HPJ__MIN(n_train, b0 + bs) - b0;
                for (l = 0; l < c->L; ++l) {
                    double loss;
                    int active;
                    if (max_steps > 0 && m->step >= max_steps) break;
                    if ((st = hpj__step(&tr, order + b0, bn, l, &loss, &active))) goto done;
                    if (active) { pg.loss[l] += loss; pg.loss_count[l]++; }
                }
                graphs_done += bn;
                if (progress) {
                    pg.batch = bi + 1;
                    pg.step = m->step;
                    pg.graphs_done = graphs_done;
                    pg.epoch_done = (bi == nb - 1) || (max_steps > 0 && m->step >= max_steps);
                    progress(user, &pg);
                }
                if (max_steps > 0 && m->step >= max_steps) break;
            }
            m->epoch++;
            if (max_steps > 0 && m->step >= max_steps) break;
        }
    }
done:
    hpj__free(order);
    hpj__free(eligible);
    hpj__trainer_free(&tr);
    return st;
}

HPJDEF hpj_status hpj_model_loss(hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, int l,
                                 uint64_t sample_seed, float *targets, int reuse_targets, double *loss) {
    hpj__trainer tr;
    hpj_status st;
    int active;
    *loss = 0.0;
    if (l < 0 || l >= m->cfg.L) return hpj__fail(HPJ_ERR_INPUT, "model_loss: resolution %d outside 1..%d", l + 1, m->cfg.L);
    if ((st = hpj__trainer_init(&tr, m, ds, n))) return st;
    tr.mode = HPJ__TRAIN_FROZEN;
    tr.apply = 0;
    tr.sample_seed = sample_seed;
    tr.targets = targets;
    tr.reuse_targets = reuse_targets && targets;
    if ((st = hpj__trainer_tokens(&tr, graphs, n, 0, 0)) == HPJ_OK) st = hpj__step(&tr, graphs, n, l, loss, &active);
    if (st == HPJ_OK && !active) st = hpj__fail(HPJ_ERR_INPUT, "model_loss: no graph of the batch is eligible at resolution %d", l + 1);
    hpj__trainer_free(&tr);
    return st;
}

/* ==== readout & embeddings ================================================= */

HPJDEF void hpj_readout(const float *H, int n, int L, int D, int readout, float *out) {
    int i, l, d;
    if (readout == HPJ_READOUT_CONCAT) {
        memcpy(out, H, sizeof(float) * (size_t)n * L * D);
        return;
    }
    for (i = 0; i < n; ++i)
        for (d = 0; d < D; ++d) {
            float s = 0.0f;
            for (l = 0; l < L; ++l) s += H[((size_t)i * L + l) * D + d];
            out[(size_t)i * D + d] = s / (float)L;
        }
}

#define HPJ__EMBED_COPIES (1 << 16) /* node copies per embedding chunk */

HPJDEF hpj_status hpj_embed(const hpj_model *cm, const hpj_dataset *ds, const int32_t *graphs, int32_t n, float *out) {
    hpj_model *m = (hpj_model *)cm; /* eval mode writes nothing to the model */
    const hpj_config *c = &m->cfg;
    hpj__trainer tr;
    hpj_status st;
    hpj__item *items = NULL;
    int32_t i, l, D = m->D, L = c->L, kmax = 1;
    double saved_flops = hpj__flops;
    for (i = 0; i < n; ++i)
        if (graphs[i] < 0 || graphs[i] >= ds->num_graphs)
            return hpj__fail(HPJ_ERR_INPUT, "embed: graph index %d outside 0..%d", graphs[i], ds->num_graphs - 1);
    hpj__set_threads(c);
    if ((st = hpj__trainer_init(&tr, m, ds, 1))) return st;
    if ((st = hpj__trainer_tokens(&tr, graphs, n, 0, 0))) goto done;
    for (i = 0; i < (int32_t)((size_t)ds->num_graphs * L); ++i) kmax = HPJ__MAX(kmax, tr.tk.k[i]);
    memset(out, 0, sizeof(float) * (size_t)n * L * D);
    for (l = 0; l < L; ++l) {
        int32_t start = 0;
        while (start < n) {
            /* a chunk of graphs: up to ~2^16 node copies, at least one graph */
            int32_t end = start, S = 0, B, Tm = 0, b, j;
            int64_t copies = 0, cnt[3];
            hpj__gnn_ws gw;
            hpj__pe_ws pw;
            hpj__enc_ws ew;
            uint8_t *mask;
            float *adj = NULL;
            hpj_arena meas;
            size_t mark;
            while (end < n) {
                int32_t g = graphs[end], k = tr.tk.k[(size_t)g * L + l];
                int64_t p0 = tr.tk.patch0[(size_t)g * L + l];
                int64_t cg = k ? tr.tk.ptr[p0 + k] - tr.tk.ptr[p0] : 0;
                if (end > start && copies + cg > HPJ__EMBED_COPIES) break;
                copies += cg;
                ++end;
            }
            B = end - start;
            /* items: every valid patch of every graph of the chunk */
            hpj__free(items);
            items = (hpj__item *)hpj__alloc(sizeof(hpj__item) * ((size_t)B * kmax + 1), "embed");
            if (!items) { st = HPJ_ERR_NOMEM; goto done; }
            for (b = 0; b < B; ++b) {
                int32_t g = graphs[start + b], k = tr.tk.k[(size_t)g * L + l];
                int64_t p0 = tr.tk.patch0[(size_t)g * L + l];
                Tm = HPJ__MAX(Tm, k);
                for (j = 0; j < k; ++j) { items[S].g = g; items[S].slot = j; items[S].patch = p0 + j; ++S; }
            }
            if (S == 0) { start = end; continue; }
            hpj__path_count(ds, &tr.tk, items, S, tr.stamp, &cnt[0], &cnt[1], &cnt[2]);
            hpj_arena_init_measure(&meas);
            hpj__gnn_bind(&meas, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL);
            hpj__pe_bind(&meas, m, &pw, S);
            hpj__enc_bind(&meas, m, &ew, B, Tm, 0);
            hpj_arena_alloc(&meas, (size_t)B * Tm + 1);
            if (c->target_adj) hpj_arena_floats(&meas, (size_t)B * Tm * Tm + 1);
            if ((st = hpj__arena_ensure(&tr.arena, meas.used))) goto done;
            mark = hpj_arena_mark(&tr.arena);
            hpj__gnn_bind(&tr.arena, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL);
            hpj__pe_bind(&tr.arena, m, &pw, S);
            hpj__enc_bind(&tr.arena, m, &ew, B, Tm, 0);
            mask = (uint8_t *)hpj_arena_alloc(&tr.arena, (size_t)B * Tm + 1);
            if (c->target_adj) adj = hpj_arena_floats(&tr.arena, (size_t)B * Tm * Tm + 1);
            hpj__path_fill(ds, &tr.tk, items, &gw.path, tr.stamp, tr.loc);
            hpj__path_features(m, ds, &gw.path, gw.x, gw.ex);
            hpj__gnn_forward(m, &gw, HPJ__EVAL, 0);
            hpj__pe_forward(m, &pw, &tr.tk, items, S, HPJ__EVAL);
            /* full tokens x = z + p of each graph, padded to Tm */
            S = 0;
            for (b = 0; b < B; ++b) {
                int32_t g = graphs[start + b], k = tr.tk.k[(size_t)g * L + l], d;
                for (j = 0; j < Tm; ++j) {
                    float *dst = ew.x[0] + ((size_t)b * Tm + j) * D;
                    mask[(size_t)b * Tm + j] = (uint8_t)(j < k);
                    if (j < k)
                        for (d = 0; d < D; ++d) dst[d] = gw.z[(size_t)(S + j) * D + d] + pw.p[(size_t)(S + j) * D + d];
                    else
                        memset(dst, 0, sizeof(float) * (size_t)D);
                }
                if (adj) hpj__overlap(&tr.tk, items + S, k, Tm, adj + (size_t)b * Tm * Tm);
                S += k;
            }
            hpj__enc_forward(m, &ew, m->tgt, mask, adj);
            /* h^(l) = mean of the valid output tokens */
            for (b = 0; b < B; ++b) {
                int32_t g = graphs[start + b], k = tr.tk.k[(size_t)g * L + l], d;
                float *h = out + ((size_t)(start + b) * L + l) * D;
                if (k == 0) continue;
                for (j = 0; j < k; ++j) {
                    const float *r = ew.x[c->blocks] + ((size_t)b * Tm + j) * D;
                    for (d = 0; d < D; ++d) h[d] += r[d];
                }
                for (d = 0; d < D; ++d) h[d] /= (float)k;
            }
            hpj_arena_reset(&tr.arena, mark);
            start = end;
        }
    }
    for (i = 0; i < (int32_t)((size_t)n * L * D); ++i)
        if (!(out[i] == out[i]) || out[i] > FLT_MAX || out[i] < -FLT_MAX) {
            st = hpj__fail(HPJ_ERR_NUMERIC, "embed: embedding of graph %d is not finite", graphs[i / (L * D)]);
            break;
        }
done:
    hpj__flops = saved_flops;
    hpj__free(items);
    hpj__trainer_free(&tr);
    return st;
}

/* ==== checkpoints ========================================================== */

HPJDEF uint32_t hpj_crc32(const void *data, size_t len) {
    /* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), bytewise */
    static uint32_t table[256];
    static int ready = 0;
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    if (!ready) {
        uint32_t k, j;
        for (k = 0; k < 256; ++k) {
            uint32_t v = k;
            for (j = 0; j < 8; ++j) v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
            table[k] = v;
        }
        ready = 1;
    }
    for (i = 0; i < len; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

HPJDEF void hpj_free_buffer(void *p) { hpj__free(p); }

static const unsigned char hpj__ckpt_magic[8] = {'H', 'P', 'J', 'E', 'P', 'A', '\r', '\n'};

static void hpj__put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static uint32_t hpj__get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void hpj__put_u64(unsigned char *p, uint64_t v) { hpj__put_u32(p, (uint32_t)v); hpj__put_u32(p + 4, (uint32_t)(v >> 32)); }
static uint64_t hpj__get_u64(const unsigned char *p) { return (uint64_t)hpj__get_u32(p) | ((uint64_t)hpj__get_u32(p + 4) << 32); }
static void hpj__put_f32s(unsigned char *p, const float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        hpj__put_u32(p + 4 * i, u);
    }
}
static void hpj__get_f32s(float *x, const unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        uint32_t u = hpj__get_u32(p + 4 * i);
        memcpy(&x[i], &u, 4);
    }
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_model_serialize(const hpj_model *m, int with_optimizer, unsigned char **buf, size_t *len) {
    char cfgtext[4096];
    size_t clen = hpj_config_format(&m->cfg, cfgtext, sizeof cfgtext), floats, total, off = 0;
    unsigned char *b;
    int32_t enc[8];
    int i;
    *buf = NULL;
    *len = 0;
    if (clen >= sizeof cfgtext) return hpj__fail(HPJ_ERR_INPUT, "checkpoint: config text too long");
    floats = m->num_params + m->enc_count + m->num_stats + (with_optimizer ? 2 * m->num_params : 0);
    total = 8 + 4 + 4 + 4 + clen + 8 * 4 + 5 * 8 + 4 * floats + 4;
    b = (unsigned char *)hpj__alloc(total, "checkpoint");
    if (!b) return HPJ_ERR_NOMEM;
    memcpy(b, hpj__ckpt_magic, 8); off = 8;
    hpj__put_u32(b + off, HPJ_CKPT_VERSION); off += 4;
    hpj__put_u32(b + off, with_optimizer ? 1u : 0u); off += 4;
    hpj__put_u32(b + off, (uint32_t)clen); off += 4;
    memcpy(b + off, cfgtext, clen); off += clen;
    enc[0] = m->F; enc[1] = m->Fe; enc[2] = m->node_onehot; enc[3] = m->node_label_min; enc[4] = m->node_attr_dim;
    enc[5] = m->edge_onehot; enc[6] = m->edge_label_min; enc[7] = 0;
    for (i = 0; i < 8; ++i) { hpj__put_u32(b + off, (uint32_t)enc[i]); off += 4; }
    hpj__put_u64(b + off, m->num_params); off += 8;
    hpj__put_u64(b + off, m->enc_count); off += 8;
    hpj__put_u64(b + off, m->num_stats); off += 8;
    hpj__put_u64(b + off, (uint64_t)m->step); off += 8;
    hpj__put_u64(b + off, (uint64_t)m->epoch); off += 8;
    hpj__put_f32s(b + off, m->params, m->num_params); off += 4 * m->num_params;
    hpj__put_f32s(b + off, m->ema, m->enc_count); off += 4 * m->enc_count;
    hpj__put_f32s(b + off, m->stats, m->num_stats); off += 4 * m->num_stats;
    if (with_optimizer) {
        hpj__put_f32s(b + off, m->adam_m, m->num_params); off += 4 * m->num_params;
        hpj__put_f32s(b + off, m->adam_v, m->num_params); off += 4 * m->num_params;
    }
    hpj__put_u32(b + off, hpj_crc32(b, off)); off += 4;
    HPJ_ASSERT(off == total);
    *buf = b;
    *len = total;
    return HPJ_OK;
}
#endif

HPJDEF hpj_status hpj_model_deserialize(hpj_model *m, const unsigned char *b, size_t len, const char *name) {
    size_t off = 0, clen, floats, i;
    uint32_t version, flags;
    hpj_config cfg;
    hpj_status st;
    uint64_t np, ne, ns, step, epoch;
    memset(m, 0, sizeof(*m));
    if (!name) name = "checkpoint";
    if (len < 8 + 12 || memcmp(b, hpj__ckpt_magic, 8) != 0)
        return hpj__fail(HPJ_ERR_FORMAT, "%s: not an hpjepa checkpoint (bad magic)", name);
    if (hpj__get_u32(b + len - 4) != hpj_crc32(b, len - 4))
        return hpj__fail(HPJ_ERR_FORMAT, "%s: CRC mismatch (file truncated or corrupted)", name);
    off = 8;
    version = hpj__get_u32(b + off); off += 4;
    flags = hpj__get_u32(b + off); off += 4;
    if (version != HPJ_CKPT_VERSION)
        return hpj__fail(HPJ_ERR_FORMAT, "%s: format version %u, this build reads version %d", name, version, HPJ_CKPT_VERSION);
    if (flags > 1) return hpj__fail(HPJ_ERR_FORMAT, "%s: unknown flags 0x%x", name, flags);
    clen = hpj__get_u32(b + off); off += 4;
    if (clen > len - off) return hpj__fail(HPJ_ERR_FORMAT, "%s: config length %zu exceeds the file", name, clen);
    hpj_config_default(&cfg);
    if ((st = hpj_config_parse(&cfg, (const char *)b + off, clen, name))) return st;
    off += clen;
    if (len - off < 8 * 4 + 5 * 8 + 4) return hpj__fail(HPJ_ERR_FORMAT, "%s: truncated header", name);
    m->F = (int)hpj__get_u32(b + off); m->Fe = (int)hpj__get_u32(b + off + 4);
    m->node_onehot = (int)hpj__get_u32(b + off + 8); m->node_label_min = (int32_t)hpj__get_u32(b + off + 12);
    m->node_attr_dim = (int)hpj__get_u32(b + off + 16); m->edge_onehot = (int)hpj__get_u32(b + off + 20);
    m->edge_label_min = (int32_t)hpj__get_u32(b + off + 24);
    off += 32;
    np = hpj__get_u64(b + off); ne = hpj__get_u64(b + off + 8); ns = hpj__get_u64(b + off + 16);
    step = hpj__get_u64(b + off + 24); epoch = hpj__get_u64(b + off + 32);
    off += 40;
    if (m->node_onehot < 0 || m->node_attr_dim < 0 || m->edge_onehot < 0 || m->F != HPJ__MAX(1, m->node_onehot + m->node_attr_dim) ||
        m->Fe != HPJ__MAX(1, m->edge_onehot))
        return hpj__fail(HPJ_ERR_FORMAT, "%s: inconsistent input encoding", name);
    if ((st = hpj__model_alloc(m, &cfg))) { hpj_model_free(m); return st; }
    if (np != m->num_params || ne != m->enc_count || ns != m->num_stats) {
        hpj_model_free(m);
        return hpj__fail(HPJ_ERR_FORMAT, "%s: tensor sizes (%llu, %llu, %llu) do not match the config (%zu, %zu, %zu)", name,
                         (unsigned long long)np, (unsigned long long)ne, (unsigned long long)ns, m->num_params, m->enc_count,
                         m->num_stats);
    }
    floats = m->num_params + m->enc_count + m->num_stats + (flags ? 2 * m->num_params : 0);
    if (len - off != 4 * floats + 4) {
        size_t have = len - off;
        hpj_model_free(m);
        return hpj__fail(HPJ_ERR_FORMAT, "%s: %zu bytes of tensors, expected %zu", name, have, 4 * floats + 4);
    }
    hpj__get_f32s(m->params, b + off, m->num_params); off += 4 * m->num_params;
    hpj__get_f32s(m->ema, b + off, m->enc_count); off += 4 * m->enc_count;
    hpj__get_f32s(m->stats, b + off, m->num_stats); off += 4 * m->num_stats;
    if (flags) {
        hpj__get_f32s(m->adam_m, b + off, m->num_params); off += 4 * m->num_params;
        hpj__get_f32s(m->adam_v, b + off, m->num_params); off += 4 * m->num_params;
    }
    for (i = 0; i < m->num_params; ++i)
        if (!(m->params[i] == m->params[i]) || fabsf(m->params[i]) > FLT_MAX) {
            hpj_model_free(m);
            return hpj__fail(HPJ_ERR_FORMAT, "%s: parameter %zu is not finite", name, i);
        }
    m->step = (int64_t)step;
    m->epoch = (int64_t)epoch;
    return HPJ_OK;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_model_save(const hpj_model *m, const char *path, int with_optimizer) {
    unsigned char *buf;
    size_t len;
    hpj_status st = hpj_model_serialize(m, with_optimizer, &buf, &len);
    if (st) return st;
    st = hpj__write_atomic(path, buf, len);
    hpj__free(buf);
    return st;
}

HPJDEF hpj_status hpj_model_load(hpj_model *m, const char *path) {
    char *text;
    size_t len;
    hpj_status st;
    memset(m, 0, sizeof(*m));
    if ((st = hpj__read_file(path, &text, &len))) return st;
    st = hpj_model_deserialize(m, (const unsigned char *)text, len, path);
    hpj__free(text);
    return st;
}
#endif

#endif /* HPJ_WIP_MODEL_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
