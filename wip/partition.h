/* wip/partition.h - the partition module of hpjepa.h while it is developed in parallel.
   It is folded into hpjepa.h (API part into the API block, implementation
   part into the implementation block) when done. Include it right after
   hpjepa.h; with HPJEPA_IMPLEMENTATION defined it also compiles the code. */
#ifndef HPJ_WIP_PARTITION_API
#define HPJ_WIP_PARTITION_API
/* ==== partition: API ==== */

/* A multilevel graph partitioner in the METIS family (Karypis & Kumar):
     1. coarsening by heavy-edge matching in a randomised order (random
        matching while all edge weights are equal; leftover vertices that
        share a neighbour are paired too), with a cap on coarse vertex
        weights, until the graph is small or stops shrinking;
     2. an initial partition of the coarsest graph: greedy graph growing
        from random seeds, several trials, each polished by FM;
     3. uncoarsening: the partition is projected level by level and
        refined at each level: Fiduccia-Mattheyses passes with rollback for
        bisections, greedy boundary moves by gain for k-way partitions,
        always under the balance bound below.
   Two methods: HPJ_PARTITION_KWAY coarsens the whole graph once, splits
   the coarsest graph by recursive bisection and refines all k parts
   together on the way up (METIS_PartGraphKway's scheme);
   HPJ_PARTITION_RB bisects recursively, each bisection a complete
   multilevel run (METIS_PartGraphRecursive's scheme, the one the
   Graph-JEPA reference uses).

   Balance: with W the total vertex weight and k' = min(k, n) parts, every
   part may weigh at most
       maxpart = max(floor(imbalance * W / k'), ceil(W / k')).
   The bound is met whenever the vertex weights allow it (always for unit
   weights); otherwise the lightest reachable maximum is returned.

   Guarantees METIS does not give: for k <= n all k parts are non-empty;
   for k >= n vertex v is part v (n non-empty parts); graphs without
   edges, disconnected graphs and n = 1 work; self-loop entries in a
   hand-built CSR are ignored. Results depend only on (graph, k, options):
   the same seed gives the same partition on every run and thread count. */

typedef enum hpj_partition_method {
    HPJ_PARTITION_KWAY = 0, /* multilevel k-way (default)        */
    HPJ_PARTITION_RB = 1    /* multilevel recursive bisection    */
} hpj_partition_method;

/* Options; fill with hpj_partition_options_default, then change fields. */
typedef struct hpj_partition_options {
    hpj_partition_method method; /* HPJ_PARTITION_KWAY                       */
    double imbalance;            /* 1.03: max part weight / (W / k), >= 1     */
    int32_t ncuts;               /* 1: independent runs, the best cut kept    */
    int32_t niter;               /* 10: refinement passes per level           */
    int32_t ntrials;             /* 0 = automatic: initial bisection trials   */
    uint64_t seed;               /* 1                                         */
} hpj_partition_options;

/* Quality of a partition (what `hpjepa partition` prints). */
typedef struct hpj_partition_stats {
    int64_t edgecut;         /* summed weight of edges between parts       */
    int64_t max_part_weight; /* heaviest part                              */
    int64_t total_weight;    /* W                                          */
    double imbalance;        /* max_part_weight / (W / k); 1 when W = 0    */
    int32_t nonempty;        /* parts holding at least one vertex          */
} hpj_partition_stats;

/* Sets the defaults listed in hpj_partition_options. */
HPJDEF void hpj_partition_options_default(hpj_partition_options *opt);

/* Partitions g into k parts: part[v] in 0..min(k, n)-1 for every vertex.
   g must be symmetric (hpj_graph_check validates a hand-built CSR; this
   call only checks what it needs to stay memory-safe, in O(n + E)).
   opt may be NULL (defaults); stats may be NULL.
   Errors: HPJ_ERR_INPUT for k < 1, a bad option, a malformed CSR (rowptr
   not ascending, a neighbour out of range, a negative vertex or non-
   positive edge weight), or a total vertex weight above 2^31 - 1 or
   total edge weight above 2^30 - 1; HPJ_ERR_NOMEM. On failure part is
   left untouched. */
HPJDEF hpj_status hpj_partition_run(const hpj_graph *g, int32_t k, const hpj_partition_options *opt,
                                    int32_t *part, /* (N) */
                                    hpj_partition_stats *stats);

/* Measures a given partition of g into k parts (cut, weights, non-empty
   parts) into *stats. Errors: HPJ_ERR_INPUT if k < 1, stats is NULL or a
   part id is outside 0..k-1. */
HPJDEF hpj_status hpj_partition_evaluate(const hpj_graph *g, int32_t k,
                                         const int32_t *part, /* (N) */
                                         hpj_partition_stats *stats);

/* The fast path for a dataset: partitions every graph g of ds at every
   resolution l into k = min(K[l], n_g) parts, graphs in parallel under
   OpenMP. Graph g at resolution l uses the seed
   hpj_rng_u64(hpj_rng_stream(opt->seed, l, g)), so results do not depend
   on the thread count. part[l * N + v] is the part of dataset node v
   (numbered within its graph); nparts[g * L + l] = min(K[l], n_g) when
   nparts is not NULL. Errors: HPJ_ERR_INPUT (L < 1, some K[l] < 1, bad
   options, or a graph rejected by hpj_partition_run, named in the
   reason), HPJ_ERR_NOMEM. */
HPJDEF hpj_status hpj_partition_run_dataset(const hpj_dataset *ds, const int32_t *K, /* (L) */
                                            int32_t L, const hpj_partition_options *opt,
                                            int32_t *part,   /* (L, N) */
                                            int32_t *nparts); /* (G, L) or NULL */

#ifndef HPJ_NO_STDIO
/* Writes part[0..n-1] as one 0-based id per line (gpmetis's .part file
   layout), atomically: a temporary file renamed into place, so a failure
   never leaves a partial file. Errors: HPJ_ERR_IO, HPJ_ERR_NOMEM. */
HPJDEF hpj_status hpj_partition_write(const char *path, const int32_t *part, /* (N) */
                                      int32_t n);
#endif

#endif /* HPJ_WIP_PARTITION_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_PARTITION_IMPL
#define HPJ_WIP_PARTITION_IMPL
/* ==== partition: implementation ==== */

/* Tuning constants (METIS 5 uses the same values where it has one). */
#define HPJ__PART_MAXLEVELS 128      /* coarsening levels at most            */
#define HPJ__PART_SHRINK 0.85        /* stop when a level keeps > 85 % of n  */
#define HPJ__PART_BIS_COARSEN_TO 20  /* bisection: coarsen to ~20 vertices   */
#define HPJ__PART_BIS_DIRECT 100     /* ... or not at all up to 100 vertices */
#define HPJ__PART_BIS_TRIALS 6       /* initial bisection trials (rb method) */
#define HPJ__PART_KWAY_TRIALS 3      /* ... k-way's on dataset-sized graphs  */
#define HPJ__PART_SMALL_GRAPH 5000   /* "dataset-sized": the fast path        */
#define HPJ__PART_KWAY_PER_PART 30   /* k-way: coarsen to max(30 k, ...)     */
#define HPJ__PART_KWAY_DIV 20        /* ... n / (20 log2 k))                 */
#define HPJ__PART_MAXVW 1.5          /* coarse vertex weight cap x W / target */
#define HPJ__PART_2HOP 0.10          /* 2-hop pairing when > 10 % unmatched  */
#define HPJ__PART_2HOP_MAXDEG 64     /* ... of vertices with degree <= 64    */
#define HPJ__PART_FM_MIN 15          /* FM stops after max(15, n / 100) ...  */
#define HPJ__PART_FM_MAX 100         /* ... (at most 100) moves without gain */
#define HPJ__PART_MAX_EWGT 1073741823 /* total edge weight limit (2^30 - 1)  */
#define HPJ__PART_HASH 2048          /* contraction hash slots (power of 2)  */

/* ==== partition: graph levels ==== */

/* One graph of the hierarchy. Unlike hpj_graph every weight array is
   present, adjacency lists need not be sorted, and wdeg caches the
   weighted degree. Arrays live in `mem` (NULL when borrowed). */
typedef struct hpj__pg {
    int32_t n, nnz;
    int32_t *xadj; /* (n+1)                                        */
    int32_t *adj;  /* (E)                                          */
    int32_t *adjw; /* (E)                                          */
    int32_t *vw;   /* (n)                                          */
    int32_t *wdeg; /* (n) summed adjw of each vertex               */
    int32_t *cmap; /* (n) coarse vertex of each vertex (scratch)   */
    int32_t *ids;  /* (n) vertex of the caller's graph, NULL = id  */
    int64_t tvw;   /* total vertex weight                          */
    int eqw;       /* all edge weights equal: random matching      */
    int coarse;    /* made by contraction (or split from such)     */
    void *mem;
} hpj__pg;

/* Validated options. */
typedef struct hpj__pctrl {
    int method;
    double imb;
    int32_t ncuts, niter, ntrials;
    uint64_t seed;
} hpj__pctrl;

/* An indexed binary max-heap of vertices keyed by an int32 gain. pos is
   shared by the two heaps of a bisection (a vertex sits in at most one). */
typedef struct hpj__heap {
    int32_t n;
    int32_t *v;   /* (N) */
    int32_t *key; /* (N) */
    int32_t *pos; /* (N) slot of each vertex or -1 */
} hpj__heap;

/* Scratch of one partitioning call, sized for its largest graph (n0
   vertices) and k parts; every level and subgraph reuses it. */
typedef struct hpj__pws {
    int32_t n0, k;
    int32_t *htab;   /* (n0) -1 between uses: slots while contracting  */
    int32_t *hkey;   /* (HPJ__PART_HASH) -1 between uses: hashed slots */
    int32_t *match;  /* (n0)                                           */
    int32_t *perm;   /* (n0)                                           */
    int32_t *tmp;    /* (n0)                                           */
    int32_t *ed;     /* (n0) external degree at the current level      */
    int32_t *edc;    /* (n0) external degree of the coarser level      */
    int32_t *bnd;    /* (n0) boundary vertices                         */
    int32_t *bpos;   /* (n0) index in bnd or -1                        */
    int32_t *hpos;   /* (n0) heap slot or -1 between uses              */
    int32_t *hv[2];  /* (n0) heap vertices                             */
    int32_t *hk[2];  /* (n0) heap keys                                 */
    int32_t *mark;   /* (n0) pass stamps (locked vertices)             */
    int32_t *swaps;  /* (n0) FM move log                               */
    int32_t stamp;
    int64_t *pw;     /* (K) part weights                               */
    int32_t *cnt;    /* (K) vertices per part                          */
    int32_t *conn;   /* (K) 0 between uses: connectivity to each part  */
    int32_t *touched; /* (K)                                           */
    hpj__pctrl ctl;
    uint64_t runseed;
    int64_t maxpart;  /* balance bound of the final parts              */
    double ub;        /* per-bisection tolerance of recursive bisection */
    int32_t bis_trials; /* initial bisection trials unless ctl.ntrials   */
    void *mem;
} hpj__pws;

static void hpj__pg_free(hpj__pg *g) {
    hpj__free(g->mem);
    g->mem = NULL;
}

/* Carves `count` int32 arrays of the given lengths out of one block. */
static void *hpj__part_block(int32_t **arr[], const size_t *len, int count, const char *what) {
    size_t total = 0, off = 0, b;
    int i;
    unsigned char *mem;
    for (i = 0; i < count; ++i) {
        if (hpj__mul_size(len[i], sizeof(int32_t), &b) || hpj__add_size(total, b, &total)) {
            hpj__fail(HPJ_ERR_NOMEM, "%s: size overflow", what);
            return NULL;
        }
    }
    mem = (unsigned char *)hpj__alloc(total ? total : 1, what);
    if (!mem) return NULL;
    for (i = 0; i < count; ++i) {
        *arr[i] = (int32_t *)(mem + off);
        off += len[i] * sizeof(int32_t);
    }
    return mem;
}

/* ---- indexed max-heap ---- */

static void hpj__hp_up(hpj__heap *h, int32_t i) {
    int32_t v = h->v[i], key = h->key[i];
    while (i > 0) {
        int32_t p = (i - 1) >> 1;
        if (h->key[p] >= key) break;
        h->v[i] = h->v[p];
        h->key[i] = h->key[p];
        h->pos[h->v[i]] = i;
        i = p;
    }
    h->v[i] = v;
    h->key[i] = key;
    h->pos[v] = i;
}

static void hpj__hp_down(hpj__heap *h, int32_t i) {
    int32_t v = h->v[i], key = h->key[i], n = h->n;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->key[c + 1] > h->key[c]) ++c;
        if (h->key[c] <= key) break;
        h->v[i] = h->v[c];
        h->key[i] = h->key[c];
        h->pos[h->v[i]] = i;
        i = c;
    }
    h->v[i] = v;
    h->key[i] = key;
    h->pos[v] = i;
}

static void hpj__hp_push(hpj__heap *h, int32_t v, int32_t key) {
    int32_t i = h->n++;
    h->v[i] = v;
    h->key[i] = key;
    hpj__hp_up(h, i);
}

static int32_t hpj__hp_pop(hpj__heap *h) {
    int32_t top = h->v[0];
    h->pos[top] = -1;
    if (--h->n > 0) {
        h->v[0] = h->v[h->n];
        h->key[0] = h->key[h->n];
        hpj__hp_down(h, 0);
    }
    return top;
}

static void hpj__hp_update(hpj__heap *h, int32_t v, int32_t key) {
    int32_t i = h->pos[v], old = h->key[i];
    h->key[i] = key;
    if (key > old) hpj__hp_up(h, i);
    else if (key < old) hpj__hp_down(h, i);
}

static void hpj__hp_remove(hpj__heap *h, int32_t v) {
    int32_t i = h->pos[v];
    h->pos[v] = -1;
    if (i != --h->n) {
        h->v[i] = h->v[h->n];
        h->key[i] = h->key[h->n];
        h->pos[h->v[i]] = i;
        if (i > 0 && h->key[(i - 1) >> 1] < h->key[i]) hpj__hp_up(h, i);
        else hpj__hp_down(h, i);
    }
}

static void hpj__hp_clear(hpj__heap *h) {
    int32_t i;
    for (i = 0; i < h->n; ++i) h->pos[h->v[i]] = -1;
    h->n = 0;
}

static hpj__heap hpj__hp_make(hpj__pws *w, int side) {
    hpj__heap h;
    h.n = 0;
    h.v = w->hv[side];
    h.key = w->hk[side];
    h.pos = w->hpos;
    return h;
}

/* ---- boundary list ---- */

static void hpj__bnd_set(int32_t *bnd, int32_t *bpos, int32_t *nbnd, int32_t v, int on) {
    if (on) {
        if (bpos[v] < 0) {
            bpos[v] = *nbnd;
            bnd[(*nbnd)++] = v;
        }
    } else if (bpos[v] >= 0) {
        int32_t i = bpos[v], last = bnd[--(*nbnd)];
        bnd[i] = last;
        bpos[last] = i;
        bpos[v] = -1;
    }
}

/* ==== partition: workspace ==== */

static hpj_status hpj__pws_init(hpj__pws *w, int32_t n0, int32_t k, const hpj__pctrl *ctl) {
    int32_t **arr[24];
    size_t len[24];
    int c = 0;
    size_t n = (size_t)(n0 > 0 ? n0 : 1), kk = (size_t)(k > 0 ? k : 1);
    int32_t *pw32 = NULL;
    memset(w, 0, sizeof(*w));
    w->n0 = n0;
    w->k = k;
    w->ctl = *ctl;
#define HPJ__PWS_ARR(field, count) (arr[c] = &w->field, len[c] = (count), ++c)
    HPJ__PWS_ARR(htab, n); HPJ__PWS_ARR(hkey, HPJ__PART_HASH); HPJ__PWS_ARR(match, n); HPJ__PWS_ARR(perm, n); HPJ__PWS_ARR(tmp, n);
    HPJ__PWS_ARR(ed, n); HPJ__PWS_ARR(edc, n); HPJ__PWS_ARR(bnd, n); HPJ__PWS_ARR(bpos, n);
    HPJ__PWS_ARR(hpos, n); HPJ__PWS_ARR(hv[0], n); HPJ__PWS_ARR(hv[1], n); HPJ__PWS_ARR(hk[0], n);
    HPJ__PWS_ARR(hk[1], n); HPJ__PWS_ARR(mark, n); HPJ__PWS_ARR(swaps, n);
    HPJ__PWS_ARR(cnt, kk); HPJ__PWS_ARR(conn, kk); HPJ__PWS_ARR(touched, kk);
#undef HPJ__PWS_ARR
    arr[c] = &pw32; /* int64 part weights: 2 words per part, kept last */
    len[c] = 2 * kk + 2;
    ++c;
    w->mem = hpj__part_block(arr, len, c, "partition");
    if (!w->mem) return HPJ_ERR_NOMEM;
    /* align the int64 array to 8 bytes */
    w->pw = (int64_t *)(void *)(((uintptr_t)pw32 + 7) & ~(uintptr_t)7);
    memset(w->htab, 0xff, n * sizeof(int32_t));
    memset(w->hkey, 0xff, HPJ__PART_HASH * sizeof(int32_t));
    memset(w->hpos, 0xff, n * sizeof(int32_t));
    memset(w->bpos, 0xff, n * sizeof(int32_t));
    memset(w->mark, 0, n * sizeof(int32_t));
    memset(w->conn, 0, kk * sizeof(int32_t));
    return HPJ_OK;
}

/* ==== partition: coarsening (heavy-edge matching) ==== */

/* Matches the vertices of g (pairs of total weight <= maxvw) and numbers
   the coarse vertices in g->cmap; returns the coarse vertex count.
   Visit order: mostly natural order (cache friendly) with n/8 random
   swaps, then stably sorted by sqrt(degree) so low-degree vertices pick
   first (METIS's SHEM order). Heaviest edge wins (first unmatched
   neighbour when all edge weights are equal); isolated vertices pair up
   with later unmatched vertices; if more than 10 % stay unmatched,
   unmatched vertices that share a neighbour are paired (2-hop). */
static int32_t hpj__match(hpj__pg *g, int64_t maxvw, hpj__pws *w, hpj_rng *rng) {
    int32_t n = g->n, *match = w->match, *perm = w->perm, *tmp = w->tmp, *cmap = g->cmap;
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *vw = g->vw;
    int32_t i, v, cn, nun = 0, last = 0, avgcap;
    int32_t count[65];
    for (v = 0; v < n; ++v) tmp[v] = v;
    if (n < 16) {
        hpj_rng_shuffle_i32(rng, tmp, n);
    } else {
        for (i = 0; i < n / 8; ++i) {
            int32_t a = (int32_t)hpj_rng_below(rng, (uint32_t)n), b = (int32_t)hpj_rng_below(rng, (uint32_t)n), t;
            t = tmp[a]; tmp[a] = tmp[b]; tmp[b] = t;
        }
    }
    /* stable counting sort by min(sqrt(1 + degree), 4 x average degree, 64) */
    avgcap = n > 0 ? (int32_t)HPJ__MIN(64, 4 * (g->nnz / n)) : 0;
    if (avgcap < 1) avgcap = 1;
    memset(count, 0, sizeof count);
    for (v = 0; v < n; ++v) {
        int32_t d = xadj[v + 1] - xadj[v], key = 1;
        while (key < avgcap && (key + 1) * (key + 1) <= 1 + d) ++key; /* floor(sqrt(1 + d)) */
        match[v] = key; /* match[] holds keys until reset */
        count[match[v]]++;
    }
    for (i = 1; i <= 64; ++i) count[i] += count[i - 1];
    for (i = n - 1; i >= 0; --i) perm[--count[match[tmp[i]]]] = tmp[i];
    for (v = 0; v < n; ++v) match[v] = -1;

    for (i = 0; i < n; ++i) {
        int32_t m = -1, j, best = -1;
        v = perm[i];
        if (match[v] >= 0) continue;
        if (xadj[v] == xadj[v + 1]) {
            /* an isolated vertex: pair it with a later unmatched vertex */
            if (last <= i) last = i + 1;
            while (last < n && match[perm[last]] >= 0) ++last;
            if (last < n && (int64_t)vw[v] + vw[perm[last]] <= maxvw) m = perm[last];
        } else if (g->eqw) {
            for (j = xadj[v]; j < xadj[v + 1]; ++j) {
                int32_t u = adj[j];
                if (match[u] < 0 && u != v && (int64_t)vw[v] + vw[u] <= maxvw) { m = u; break; }
            }
        } else {
            for (j = xadj[v]; j < xadj[v + 1]; ++j) {
                int32_t u = adj[j];
                if (match[u] < 0 && u != v && adjw[j] > best && (int64_t)vw[v] + vw[u] <= maxvw) {
                    m = u;
                    best = adjw[j];
                }
            }
        }
        if (m >= 0) {
            match[v] = m;
            match[m] = v;
        } else {
            ++nun;
        }
    }
    if (nun > HPJ__PART_2HOP * n) {
        /* 2-hop: unmatched low-degree vertices hanging off one vertex pair up
           (leaves of a hub, the case that stalls coarsening of star-like and
           power-law graphs). */
        int32_t h;
        for (h = 0; h < n; ++h) {
            int32_t prev = -1, j;
            for (j = xadj[h]; j < xadj[h + 1]; ++j) {
                int32_t u = adj[j];
                if (match[u] >= 0 || u == h || xadj[u + 1] - xadj[u] > HPJ__PART_2HOP_MAXDEG) continue;
                if (prev < 0) {
                    prev = u;
                } else if ((int64_t)vw[prev] + vw[u] <= maxvw) {
                    match[prev] = u;
                    match[u] = prev;
                    prev = -1;
                }
            }
        }
    }
    cn = 0;
    for (v = 0; v < n; ++v) {
        if (match[v] < 0) match[v] = v;
        if (match[v] >= v) {
            cmap[v] = cn;
            cmap[match[v]] = cn;
            ++cn;
        }
    }
    return cn;
}

/* Builds the coarse graph c of g from w->match and g->cmap: coarse vertex
   weights are sums, parallel edges merge (weights add), edges inside a
   pair vanish. */
static hpj_status hpj__contract(const hpj__pg *g, int32_t cn, hpj__pws *w, hpj__pg *c) {
    int32_t **arr[6];
    size_t len[6];
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *vw = g->vw, *cmap = g->cmap, *match = w->match;
    int32_t *htab = w->htab, v, e = 0;
    int32_t *cx, *ca, *cw;
    memset(c, 0, sizeof(*c));
    arr[0] = &c->xadj; len[0] = (size_t)cn + 1;
    arr[1] = &c->vw; len[1] = (size_t)cn;
    arr[2] = &c->wdeg; len[2] = (size_t)cn;
    arr[3] = &c->cmap; len[3] = (size_t)cn;
    arr[4] = &c->adj; len[4] = (size_t)g->nnz;
    arr[5] = &c->adjw; len[5] = (size_t)g->nnz;
    c->mem = hpj__part_block(arr, len, 6, "partition: coarsening");
    if (!c->mem) return HPJ_ERR_NOMEM;
    cx = c->xadj;
    ca = c->adj;
    cw = c->adjw;
    cx[0] = 0;
    /* Merging neighbour lists needs a map coarse id -> slot. A small
       open-addressing table (stays in L1) serves vertex pairs of small
       total degree; the dense htab (n entries) serves the rest. */
    for (v = 0; v < g->n; ++v) {
        int32_t u = match[v], cv, start = e, x, j, pass, npass = (u == v ? 1 : 2);
        int32_t wd = 0, deg = xadj[v + 1] - xadj[v] + (u != v ? xadj[u + 1] - xadj[u] : 0);
        if (u < v) continue;
        cv = cmap[v];
        if (deg <= HPJ__PART_HASH / 4) {
            int32_t *hk = w->hkey;
            for (pass = 0; pass < npass; ++pass) {
                x = pass ? u : v;
                for (j = xadj[x]; j < xadj[x + 1]; ++j) {
                    int32_t cu = cmap[adj[j]], hh;
                    if (cu == cv) continue;
                    wd += adjw[j];
                    for (hh = cu & (HPJ__PART_HASH - 1); hk[hh] >= 0 && ca[hk[hh]] != cu; hh = (hh + 1) & (HPJ__PART_HASH - 1)) {
                    }
                    if (hk[hh] < 0) {
                        hk[hh] = e;
                        ca[e] = cu;
                        cw[e] = adjw[j];
                        ++e;
                    } else {
                        cw[hk[hh]] += adjw[j];
                    }
                }
            }
            for (j = start; j < e; ++j) {
                int32_t hh = ca[j] & (HPJ__PART_HASH - 1);
                while (hk[hh] != j) hh = (hh + 1) & (HPJ__PART_HASH - 1);
                hk[hh] = -1;
            }
        } else {
            for (pass = 0; pass < npass; ++pass) {
                x = pass ? u : v;
                for (j = xadj[x]; j < xadj[x + 1]; ++j) {
                    int32_t cu = cmap[adj[j]], s;
                    if (cu == cv) continue;
                    s = htab[cu];
                    if (s < 0) {
                        htab[cu] = e;
                        ca[e] = cu;
                        cw[e] = adjw[j];
                        ++e;
                    } else {
                        cw[s] += adjw[j];
                    }
                    wd += adjw[j];
                }
            }
            for (j = start; j < e; ++j) htab[ca[j]] = -1;
        }
        cx[cv + 1] = e;
        c->vw[cv] = vw[v] + (u != v ? vw[u] : 0);
        c->wdeg[cv] = wd;
    }
    c->n = cn;
    c->nnz = e;
    c->tvw = g->tvw;
    c->eqw = 0;
    c->coarse = 1;
    return HPJ_OK;
}

/* A hierarchy lev[0] (the caller's graph, borrowed) .. lev[nlev-1]. */
typedef struct hpj__hier {
    int32_t nlev;
    hpj__pg lev[HPJ__PART_MAXLEVELS];
} hpj__hier;

static void hpj__hier_free(hpj__hier *h) {
    int32_t l;
    for (l = 1; l < h->nlev; ++l) hpj__pg_free(&h->lev[l]);
    h->nlev = 0;
}

/* Coarsens until at most `to` vertices remain or a level keeps more than
   85 % of the vertices of the one before. */
static hpj_status hpj__coarsen(hpj__hier *h, const hpj__pg *g, int32_t to, hpj__pws *w, hpj_rng *rng) {
    int64_t maxvw = (int64_t)(HPJ__PART_MAXVW * (double)g->tvw / (double)(to > 0 ? to : 1));
    hpj_status st;
    if (maxvw < 1) maxvw = 1;
    h->nlev = 1;
    h->lev[0] = *g;
    h->lev[0].mem = NULL;
    while (h->nlev < HPJ__PART_MAXLEVELS) {
        hpj__pg *f = &h->lev[h->nlev - 1];
        int32_t cn;
        if (f->n <= to) break;
        cn = hpj__match(f, maxvw, w, rng);
        if (cn >= f->n) break;
        if ((st = hpj__contract(f, cn, w, &h->lev[h->nlev])) != HPJ_OK) return st;
        h->nlev++;
        if ((double)cn > HPJ__PART_SHRINK * (double)f->n) break;
    }
    return HPJ_OK;
}

/* Fine partition and external degrees from the coarser level's: a fine
   vertex can only touch another part if its coarse vertex did. Rebuilds
   the boundary list; cnt (vertices per part) is recounted when given. */
static void hpj__project(const hpj__pg *f, const int32_t *cpart, const int32_t *ced, int32_t *part, int32_t *ed,
                         int32_t *bnd, int32_t *bpos, int32_t *nbnd, int32_t *cnt, int32_t k) {
    int32_t v, n = f->n;
    const int32_t *cmap = f->cmap, *xadj = f->xadj, *adj = f->adj, *adjw = f->adjw;
    for (v = 0; v < n; ++v) part[v] = cpart[cmap[v]];
    if (cnt) {
        memset(cnt, 0, sizeof(int32_t) * (size_t)k);
        for (v = 0; v < n; ++v) cnt[part[v]]++;
    }
    *nbnd = 0;
    for (v = 0; v < n; ++v) {
        int32_t e = 0, j, p = part[v];
        bpos[v] = -1;
        if (ced[cmap[v]] > 0) {
            for (j = xadj[v]; j < xadj[v + 1]; ++j)
                if (part[adj[j]] != p) e += adjw[j];
        }
        ed[v] = e;
        if (e > 0) {
            bpos[v] = *nbnd;
            bnd[(*nbnd)++] = v;
        }
    }
}

/* ==== partition: bisection (greedy growing, FM refinement) ==== */

typedef struct hpj__bis {
    const hpj__pg *g;
    int32_t *part, *ed, *bnd, *bpos; /* (N) */
    int32_t nbnd;
    int64_t pw[2], cut, maxw[2];
    int64_t slack; /* tolerated excess while refining a coarse level       */
    double tw0;    /* target weight of side 0 (side 1: W - tw0)            */
} hpj__bis;

/* Weight above the side bounds (each widened by the level's slack). */
static int64_t hpj__bis_infeas(const hpj__bis *b) {
    return HPJ__MAX(0, b->pw[0] - b->maxw[0] - b->slack) + HPJ__MAX(0, b->pw[1] - b->maxw[1] - b->slack);
}

/* METIS's tolerance for one level: an average vertex weight, at most 1/20
   of the total; coarse vertices are heavy and tight bounds would freeze
   them. The finest level is then balanced strictly. */
static int64_t hpj__bis_slack(const hpj__pg *g) {
    int64_t s;
    if (g->n == 0) return 0;
    s = HPJ__MIN(g->tvw / 20, 2 * g->tvw / g->n);
    return s;
}

static double hpj__bis_diff(const hpj__bis *b) { return fabs((double)b->pw[0] - b->tw0); }

/* 1 if (inf, cut, diff) is strictly better than the recorded best. */
static int hpj__bis_better(int64_t inf, int64_t cut, double diff, int64_t binf, int64_t bcut, double bdiff) {
    if (inf != binf) return inf < binf;
    if (cut != bcut) return cut < bcut;
    return diff < bdiff;
}

static void hpj__bis_params(hpj__bis *b) {
    const hpj__pg *g = b->g;
    int32_t v, j;
    b->pw[0] = b->pw[1] = 0;
    b->cut = 0;
    b->nbnd = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t e = 0, p = b->part[v];
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (b->part[g->adj[j]] != p) e += g->adjw[j];
        b->ed[v] = e;
        b->pw[p] += g->vw[v];
        b->cut += e;
        b->bpos[v] = -1;
        if (e > 0) hpj__bnd_set(b->bnd, b->bpos, &b->nbnd, v, 1);
    }
    b->cut /= 2;
}

#ifdef HPJ_DEBUG
/* HPJ_DEBUG: the tracked cut, side weights, external degrees and boundary
   list of a bisection equal a recount. */
static void hpj__bis_check(const hpj__bis *b) {
    const hpj__pg *g = b->g;
    int32_t v, j, nb = 0;
    int64_t cut = 0, pw[2] = {0, 0};
    for (v = 0; v < g->n; ++v) {
        int32_t e = 0;
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (b->part[g->adj[j]] != b->part[v]) e += g->adjw[j];
        HPJ_ASSERT(b->ed[v] == e);
        HPJ_ASSERT((b->bpos[v] >= 0) == (e > 0));
        nb += e > 0;
        cut += e;
        pw[b->part[v]] += g->vw[v];
    }
    HPJ_ASSERT(nb == b->nbnd);
    HPJ_ASSERT(cut / 2 == b->cut);
    HPJ_ASSERT(pw[0] == b->pw[0] && pw[1] == b->pw[1]);
}
#define HPJ__BIS_CHECK(b) hpj__bis_check(b)
#else
#define HPJ__BIS_CHECK(b) ((void)0)
#endif

/* Moves v to the other side, updating weights, cut, external degrees and
   the boundary; with hp, unlocked neighbours on side `only` (or on both
   sides when only < 0) are (re)keyed by gain = ed - id in hp[side]. */
static void hpj__bis_move(hpj__bis *b, int32_t v, hpj__heap *hp, const int32_t *mark, int32_t stamp, int only) {
    /* every array in a local: stores into ed[] could alias the struct
       fields otherwise, forcing a reload per neighbour */
    const hpj__pg *g = b->g;
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *wdeg = g->wdeg;
    int32_t *ed = b->ed, *part = b->part, *bnd = b->bnd, *bpos = b->bpos;
    int32_t from = part[v], to = 1 - from, j, je = xadj[v + 1], nbnd = b->nbnd;
    b->cut -= 2 * (int64_t)ed[v] - wdeg[v];
    b->pw[from] -= g->vw[v];
    b->pw[to] += g->vw[v];
    part[v] = to;
    ed[v] = wdeg[v] - ed[v];
    hpj__bnd_set(bnd, bpos, &nbnd, v, ed[v] > 0);
    for (j = xadj[v]; j < je; ++j) {
        int32_t u = adj[j], pu = part[u], e = ed[u] + (pu == to ? -adjw[j] : adjw[j]);
        ed[u] = e;
        if (e > 0) {
            if (bpos[u] < 0) {
                bpos[u] = nbnd;
                bnd[nbnd++] = u;
            }
        } else if (bpos[u] >= 0) {
            int32_t i = bpos[u], last = bnd[--nbnd];
            bnd[i] = last;
            bpos[last] = i;
            bpos[u] = -1;
        }
        if (hp && mark[u] != stamp && (only < 0 || pu == only)) {
            hpj__heap *h = &hp[pu];
            if (h->pos[u] >= 0) {
                if (e > 0) hpj__hp_update(h, u, 2 * e - wdeg[u]);
                else hpj__hp_remove(h, u);
            } else if (e > 0) {
                hpj__hp_push(h, u, 2 * e - wdeg[u]);
            }
        }
    }
    b->nbnd = nbnd;
}

/* May v leave side `from`? Only if the receiving side stays within its
   bound, or the move lowers the total excess weight. */
static int hpj__bis_can_move(const hpj__bis *b, int32_t v, int from) {
    int to = 1 - from;
    int64_t w = b->g->vw[v], inf, ninf;
    if (b->pw[to] + w <= b->maxw[to] + b->slack) return 1;
    inf = hpj__bis_infeas(b);
    if (inf == 0) return 0;
    ninf = HPJ__MAX(0, b->pw[from] - w - b->maxw[from] - b->slack) +
           HPJ__MAX(0, b->pw[to] + w - b->maxw[to] - b->slack);
    return ninf < inf;
}

/* Brings an over-weight side within its bound: moves its vertices by best
   gain, boundary vertices first, then any. */
static void hpj__bis_balance(hpj__bis *b, hpj__pws *w) {
    const hpj__pg *g = b->g;
    hpj__heap hp[2];
    int from, phase = 0;
    int32_t stamp, i;
    if (hpj__bis_infeas(b) == 0) return;
    from = (b->pw[0] - b->maxw[0] >= b->pw[1] - b->maxw[1]) ? 0 : 1;
    /* the over-weight side: stop as soon as it is within bound + slack */
    hp[0] = hpj__hp_make(w, 0);
    hp[1] = hpj__hp_make(w, 1);
    stamp = ++w->stamp;
    for (i = 0; i < b->nbnd; ++i) {
        int32_t v = b->bnd[i];
        if (b->part[v] == from) hpj__hp_push(&hp[from], v, 2 * b->ed[v] - g->wdeg[v]);
    }
    while (b->pw[from] > b->maxw[from] + b->slack) {
        int32_t v;
        if (hp[from].n == 0) {
            if (phase++) break;
            for (v = 0; v < g->n; ++v)
                if (b->part[v] == from && w->mark[v] != stamp && hp[from].pos[v] < 0)
                    hpj__hp_push(&hp[from], v, 2 * b->ed[v] - g->wdeg[v]);
            if (hp[from].n == 0) break;
            continue;
        }
        v = hpj__hp_pop(&hp[from]);
        w->mark[v] = stamp;
        if (!hpj__bis_can_move(b, v, from)) continue;
        hpj__bis_move(b, v, hp, w->mark, stamp, from);
    }
    hpj__hp_clear(&hp[0]);
    hpj__hp_clear(&hp[1]);
}

/* Fiduccia-Mattheyses: each pass moves boundary vertices by best gain
   from the heavier side (each at most once), allowing uphill moves, and
   rolls back to the best state seen (fewest excess weight, then cut,
   then closeness to the target). Stops after niter passes or a pass that
   finds nothing better. */
static void hpj__bis_fm(hpj__bis *b, hpj__pws *w, int32_t niter, hpj_rng *rng) {
    const hpj__pg *g = b->g;
    hpj__heap hp[2];
    int32_t pass, limit, n = g->n;
    double tw1 = (double)g->tvw - b->tw0;
    limit = HPJ__MIN(HPJ__MAX(n / 100, HPJ__PART_FM_MIN), HPJ__PART_FM_MAX);
    hp[0] = hpj__hp_make(w, 0);
    hp[1] = hpj__hp_make(w, 1);
    for (pass = 0; pass < niter; ++pass) {
        int32_t stamp = ++w->stamp, nsw = 0, bestsw = 0, i, nb = b->nbnd;
        int64_t binf = hpj__bis_infeas(b), bcut = b->cut;
        double bdiff = hpj__bis_diff(b);
        if (nb == 0 && binf == 0) break;
        /* boundary vertices, lightly shuffled, into the two queues */
        memcpy(w->tmp, b->bnd, sizeof(int32_t) * (size_t)nb);
        for (i = 0; i < nb / 4 + (nb > 1); ++i) {
            int32_t x = (int32_t)hpj_rng_below(rng, (uint32_t)nb), y = (int32_t)hpj_rng_below(rng, (uint32_t)nb), t;
            t = w->tmp[x]; w->tmp[x] = w->tmp[y]; w->tmp[y] = t;
        }
        for (i = 0; i < nb; ++i) {
            int32_t v = w->tmp[i];
            hpj__hp_push(&hp[b->part[v]], v, 2 * b->ed[v] - g->wdeg[v]);
        }
        for (;;) {
            int from = ((double)b->pw[0] - b->tw0 >= (double)b->pw[1] - tw1) ? 0 : 1;
            int32_t v;
            int64_t inf;
            double diff;
            if (hp[from].n == 0) {
                from = 1 - from;
                if (hp[from].n == 0) break;
            }
            v = hpj__hp_pop(&hp[from]);
            w->mark[v] = stamp;
            if (!hpj__bis_can_move(b, v, from)) continue;
            hpj__bis_move(b, v, hp, w->mark, stamp, -1);
            w->swaps[nsw++] = v;
            inf = hpj__bis_infeas(b);
            diff = hpj__bis_diff(b);
            if (hpj__bis_better(inf, b->cut, diff, binf, bcut, bdiff)) {
                binf = inf;
                bcut = b->cut;
                bdiff = diff;
                bestsw = nsw;
            } else if (nsw - bestsw > limit && inf == 0) {
                break;
            }
        }
        hpj__hp_clear(&hp[0]);
        hpj__hp_clear(&hp[1]);
        for (i = nsw - 1; i >= bestsw; --i) hpj__bis_move(b, w->swaps[i], NULL, NULL, 0, -1);
        HPJ__BIS_CHECK(b);
        if (bestsw == 0) break;
    }
}

/* Greedy graph growing: side 1 grows from a random vertex, always taking
   the side-0 boundary vertex of best gain, until it reaches its target
   weight (a new random seed when the frontier runs dry). */
static void hpj__bis_grow(hpj__bis *b, hpj__pws *w, hpj_rng *rng) {
    const hpj__pg *g = b->g;
    hpj__heap hp[2];
    int32_t n = g->n, v, stamp = ++w->stamp, cursor, scanned = 0;
    double tw1 = (double)g->tvw - b->tw0;
    hp[0] = hpj__hp_make(w, 0);
    hp[1] = hpj__hp_make(w, 1);
    for (v = 0; v < n; ++v) {
        b->part[v] = 0;
        b->ed[v] = 0;
        b->bpos[v] = -1;
    }
    b->nbnd = 0;
    b->pw[0] = g->tvw;
    b->pw[1] = 0;
    b->cut = 0;
    cursor = (int32_t)hpj_rng_below(rng, (uint32_t)n);
    while ((double)b->pw[1] < tw1) {
        if (hp[0].n > 0) {
            v = hpj__hp_pop(&hp[0]);
        } else {
            v = -1;
            while (scanned < n) {
                int32_t u = cursor + scanned < n ? cursor + scanned : cursor + scanned - n;
                ++scanned;
                if (b->part[u] == 0 && w->mark[u] != stamp) { v = u; break; }
            }
            if (v < 0) break;
        }
        w->mark[v] = stamp;
        if (b->pw[1] + g->vw[v] > b->maxw[1] + b->slack) continue;
        hpj__bis_move(b, v, hp, w->mark, stamp, 0);
    }
    hpj__hp_clear(&hp[0]);
}

/* Best of `trials` grown + balanced + FM-refined bisections of b->g. */
static hpj_status hpj__bis_initial(hpj__bis *b, hpj__pws *w, int32_t trials, hpj_rng *rng) {
    int32_t n = b->g->n, t;
    int32_t *best = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1), "partition: bisection");
    int64_t binf = 0, bcut = 0;
    double bdiff = 0;
    if (!best) return HPJ_ERR_NOMEM;
    for (t = 0; t < trials; ++t) {
        int64_t inf;
        double diff;
        hpj__bis_grow(b, w, rng);
        hpj__bis_balance(b, w);
        hpj__bis_fm(b, w, w->ctl.niter, rng);
        inf = hpj__bis_infeas(b);
        diff = hpj__bis_diff(b);
        if (t == 0 || hpj__bis_better(inf, b->cut, diff, binf, bcut, bdiff)) {
            binf = inf;
            bcut = b->cut;
            bdiff = diff;
            memcpy(best, b->part, sizeof(int32_t) * (size_t)n);
            if (bcut == 0 && inf == 0) break;
        }
    }
    memcpy(b->part, best, sizeof(int32_t) * (size_t)n);
    hpj__free(best);
    hpj__bis_params(b);
    return HPJ_OK;
}

/* Multilevel bisection of g: side 0 should weigh tw0 and sides at most
   maxw0 / maxw1. Writes 0/1 into part (N). */
static hpj_status hpj__mlbisect(hpj__pws *w, hpj__pg *g, double tw0, int64_t maxw0, int64_t maxw1, int32_t *part,
                                hpj_rng *rng) {
    hpj__hier *h;
    hpj__bis b;
    int32_t *buf[2], l, L, trials;
    hpj_status st = HPJ_OK;
    h = (hpj__hier *)hpj__alloc(sizeof(hpj__hier), "partition: hierarchy");
    if (!h) return HPJ_ERR_NOMEM;
    buf[0] = part;
    buf[1] = NULL;
    /* small graphs (and small pieces of them) are bisected directly:
       trials on the real graph beat trials on a 20-vertex caricature of
       it, and cost little. Not coarse graphs (k-way's initial partition):
       their heavy vertices need the multilevel path with slack (9 % lower
       cuts at K = 128 on rgg200k, 4 % on DD at K = 4). */
    if ((st = hpj__coarsen(h, g, g->n <= HPJ__PART_BIS_DIRECT && !g->coarse ? g->n : HPJ__PART_BIS_COARSEN_TO, w, rng)) !=
        HPJ_OK)
        goto done;
    L = h->nlev - 1;
    if (L > 0) {
        buf[1] = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)h->lev[1].n, "partition: bisection");
        if (!buf[1]) { st = HPJ_ERR_NOMEM; goto done; }
    }
    memset(&b, 0, sizeof b);
    b.g = &h->lev[L];
    b.part = buf[L & 1];
    b.ed = w->ed;
    b.bnd = w->bnd;
    b.bpos = w->bpos;
    b.tw0 = tw0;
    b.maxw[0] = maxw0;
    b.maxw[1] = maxw1;
    trials = w->ctl.ntrials > 0 ? w->ctl.ntrials : w->bis_trials;
    b.slack = L > 0 ? hpj__bis_slack(b.g) : 0;
    if ((st = hpj__bis_initial(&b, w, trials, rng)) != HPJ_OK) goto done;
    for (l = L - 1; l >= 0; --l) {
        int32_t *t = w->ed;
        w->ed = w->edc;
        w->edc = t;
        hpj__project(&h->lev[l], buf[(l + 1) & 1], w->edc, buf[l & 1], w->ed, w->bnd, w->bpos, &b.nbnd, NULL, 0);
        b.g = &h->lev[l];
        b.part = buf[l & 1];
        b.ed = w->ed;
        b.slack = l > 0 ? hpj__bis_slack(b.g) : 0;
        hpj__bis_balance(&b, w);
        hpj__bis_fm(&b, w, w->ctl.niter, rng);
    }
done:
    hpj__free(buf[1]);
    hpj__hier_free(h);
    hpj__free(h);
    return st;
}

/* ==== partition: recursive bisection ==== */

/* The two induced subgraphs of g (sides of part2); edges between the
   sides are dropped. sub[s].ids map to the caller's vertex ids. */
static hpj_status hpj__split(const hpj__pg *g, const int32_t *part2, int32_t *map, hpj__pg sub[2]) {
    int32_t n = g->n, v, j, s, ns[2] = {0, 0}, es[2] = {0, 0};
    int32_t **arr[7];
    size_t len[7];
    for (v = 0; v < n; ++v) {
        s = part2[v];
        map[v] = ns[s]++;
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) es[s] += (part2[g->adj[j]] == s);
    }
    for (s = 0; s < 2; ++s) {
        hpj__pg *c = &sub[s];
        memset(c, 0, sizeof(*c));
        arr[0] = &c->xadj; len[0] = (size_t)ns[s] + 1;
        arr[1] = &c->vw; len[1] = (size_t)ns[s];
        arr[2] = &c->wdeg; len[2] = (size_t)ns[s];
        arr[3] = &c->cmap; len[3] = (size_t)ns[s];
        arr[4] = &c->ids; len[4] = (size_t)ns[s];
        arr[5] = &c->adj; len[5] = (size_t)es[s];
        arr[6] = &c->adjw; len[6] = (size_t)es[s];
        c->mem = hpj__part_block(arr, len, 7, "partition: recursive bisection");
        if (!c->mem) {
            if (s) hpj__pg_free(&sub[0]);
            return HPJ_ERR_NOMEM;
        }
        c->n = 0;
        c->nnz = 0;
        c->xadj[0] = 0;
        c->tvw = 0;
        c->eqw = g->eqw;
        c->coarse = g->coarse;
    }
    for (v = 0; v < n; ++v) {
        hpj__pg *c = &sub[part2[v]];
        int32_t i = c->n++, wd = 0;
        s = part2[v];
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) {
            int32_t u = g->adj[j];
            if (part2[u] != s) continue;
            c->adj[c->nnz] = map[u];
            c->adjw[c->nnz] = g->adjw[j];
            c->nnz++;
            wd += g->adjw[j];
        }
        c->xadj[i + 1] = c->nnz;
        c->vw[i] = g->vw[v];
        c->wdeg[i] = wd;
        c->ids[i] = g->ids ? g->ids[v] : v;
        c->tvw += g->vw[v];
    }
    return HPJ_OK;
}

/* Recursive bisection of g into k parts numbered off..off+k-1; out is
   indexed by the caller's vertex ids (g->ids). Side bounds: each side s
   of k_s parts may weigh max(floor(ub x target), ceil(target)) but never
   more than k_s x maxpart, so the final parts can meet maxpart. */
static hpj_status hpj__rb(hpj__pws *w, hpj__pg *g, int32_t k, int32_t off, int32_t *out) {
    int32_t n = g->n, v, k0, k1;
    int32_t *p2;
    double tw0, tw1;
    int64_t maxw0, maxw1;
    hpj_rng rng;
    hpj__pg sub[2];
    hpj_status st;
#define HPJ__RB_ID(v) (g->ids ? g->ids[v] : (v))
    if (n == 0) return HPJ_OK;
    if (k == 1 || n <= k) {
        for (v = 0; v < n; ++v) out[HPJ__RB_ID(v)] = off + (k == 1 ? 0 : v);
        return HPJ_OK;
    }
    k0 = k / 2;
    k1 = k - k0;
    tw0 = (double)g->tvw * k0 / k;
    tw1 = (double)g->tvw - tw0;
    maxw0 = HPJ__MIN((int64_t)k0 * w->maxpart, HPJ__MAX((int64_t)floor(w->ub * tw0), (int64_t)ceil(tw0)));
    maxw1 = HPJ__MIN((int64_t)k1 * w->maxpart, HPJ__MAX((int64_t)floor(w->ub * tw1), (int64_t)ceil(tw1)));
    rng = hpj_rng_stream(w->runseed, (uint64_t)off, (uint64_t)k);
    p2 = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n, "partition: recursive bisection");
    if (!p2) return HPJ_ERR_NOMEM;
    if ((st = hpj__mlbisect(w, g, tw0, maxw0, maxw1, p2, &rng)) != HPJ_OK) { hpj__free(p2); return st; }
    if (k == 2) {
        for (v = 0; v < n; ++v) out[HPJ__RB_ID(v)] = off + p2[v];
        hpj__free(p2);
        return HPJ_OK;
    }
#undef HPJ__RB_ID
    st = hpj__split(g, p2, w->tmp, sub);
    hpj__free(p2);
    if (st != HPJ_OK) return st;
    st = hpj__rb(w, &sub[0], k0, off, out);
    hpj__pg_free(&sub[0]);
    if (st == HPJ_OK) st = hpj__rb(w, &sub[1], k1, off + k0, out);
    hpj__pg_free(&sub[1]);
    return st;
}

/* ==== partition: k-way refinement ==== */

static void hpj__part_measure(const hpj__pg *g, const int32_t *part, int32_t k, int64_t *pw, int64_t *cut,
                              int64_t *maxpw);

typedef struct hpj__kw {
    const hpj__pg *g;
    int32_t k;
    int32_t *part, *ed, *bnd, *bpos; /* (N) */
    int32_t nbnd;
    int64_t *pw;  /* (K) */
    int32_t *cnt; /* (K) */
    int64_t cut, maxpart;
} hpj__kw;

static void hpj__kw_params(hpj__kw *s) {
    const hpj__pg *g = s->g;
    int32_t v, j;
    memset(s->pw, 0, sizeof(int64_t) * (size_t)s->k);
    memset(s->cnt, 0, sizeof(int32_t) * (size_t)s->k);
    s->cut = 0;
    s->nbnd = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t e = 0, p = s->part[v];
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (s->part[g->adj[j]] != p) e += g->adjw[j];
        s->ed[v] = e;
        s->pw[p] += g->vw[v];
        s->cnt[p]++;
        s->cut += e;
        s->bpos[v] = -1;
        if (e > 0) hpj__bnd_set(s->bnd, s->bpos, &s->nbnd, v, 1);
    }
    s->cut /= 2;
}

#ifdef HPJ_DEBUG
/* HPJ_DEBUG: tracked cut, part weights and counts, external degrees and
   boundary of a k-way state equal a recount. */
static void hpj__kw_check(const hpj__kw *s) {
    const hpj__pg *g = s->g;
    int32_t v, j, p, nb = 0;
    int64_t cut = 0, tw = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t e = 0;
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (s->part[g->adj[j]] != s->part[v]) e += g->adjw[j];
        HPJ_ASSERT(s->ed[v] == e);
        HPJ_ASSERT((s->bpos[v] >= 0) == (e > 0));
        nb += e > 0;
        cut += e;
    }
    for (p = 0; p < s->k; ++p) {
        int64_t w = 0;
        int32_t c = 0;
        for (v = 0; v < g->n; ++v)
            if (s->part[v] == p) { w += g->vw[v]; ++c; }
        HPJ_ASSERT(w == s->pw[p] && c == s->cnt[p]);
        tw += w;
    }
    HPJ_ASSERT(tw == g->tvw);
    HPJ_ASSERT(nb == s->nbnd);
    HPJ_ASSERT(cut / 2 == s->cut);
}
#define HPJ__KW_CHECK(s) hpj__kw_check(s)
#else
#define HPJ__KW_CHECK(s) ((void)0)
#endif

/* Sums the edge weight from v to each part into conn; returns how many
   parts were touched (listed in touched). The caller clears conn. */
static int32_t hpj__kw_scan(const hpj__kw *s, int32_t v, int32_t *conn, int32_t *touched) {
    const hpj__pg *g = s->g;
    int32_t j, nt = 0;
    for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) {
        int32_t p = s->part[g->adj[j]];
        if (conn[p] == 0) touched[nt++] = p;
        conn[p] += g->adjw[j];
    }
    return nt;
}

/* Moves v to part `to` (cto = its edge weight into `to`, cfrom into its
   own part); with hp, unlocked neighbours are (re)keyed by ed - id. */
static void hpj__kw_move(hpj__kw *s, int32_t v, int32_t to, int32_t cto, int32_t cfrom, hpj__heap *hp,
                         const int32_t *mark, int32_t stamp) {
    const hpj__pg *g = s->g;
    int32_t a = s->part[v], j, *ed = s->ed, *part = s->part;
    s->cut -= (int64_t)cto - cfrom;
    s->pw[a] -= g->vw[v];
    s->pw[to] += g->vw[v];
    s->cnt[a]--;
    s->cnt[to]++;
    part[v] = to;
    ed[v] = g->wdeg[v] - cto;
    hpj__bnd_set(s->bnd, s->bpos, &s->nbnd, v, ed[v] > 0);
    for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) {
        int32_t u = g->adj[j], pu = part[u];
        if (pu == a) ed[u] += g->adjw[j];
        else if (pu == to) ed[u] -= g->adjw[j];
        else continue;
        hpj__bnd_set(s->bnd, s->bpos, &s->nbnd, u, ed[u] > 0);
        if (hp && mark[u] != stamp) {
            int keep = ed[u] > 0 && 2 * ed[u] >= g->wdeg[u];
            if (hp->pos[u] >= 0) {
                if (keep) hpj__hp_update(hp, u, 2 * ed[u] - g->wdeg[u]);
                else hpj__hp_remove(hp, u);
            } else if (keep) {
                hpj__hp_push(hp, u, 2 * ed[u] - g->wdeg[u]);
            }
        }
    }
}

/* Best target part for v among the parts it touches that have room
   (largest gain, then lightest); -1 if none. Leaves conn cleared. */
static int32_t hpj__kw_best(const hpj__kw *s, hpj__pws *w, int32_t v, int32_t *gain, int32_t *cto, int32_t *cfrom) {
    int32_t nt = hpj__kw_scan(s, v, w->conn, w->touched), a = s->part[v], id = w->conn[a], t, best = -1, bg = 0;
    int64_t vwv = s->g->vw[v];
    for (t = 0; t < nt; ++t) {
        int32_t p = w->touched[t], gp;
        if (p == a || s->pw[p] + vwv > s->maxpart) continue;
        gp = w->conn[p] - id;
        if (best < 0 || gp > bg || (gp == bg && s->pw[p] < s->pw[best])) {
            best = p;
            bg = gp;
        }
    }
    *gain = bg;
    *cto = best >= 0 ? w->conn[best] : 0;
    *cfrom = id;
    for (t = 0; t < nt; ++t) w->conn[w->touched[t]] = 0;
    return best;
}

/* Greedy k-way refinement: boundary vertices in order of ed - id; each
   moves to its best part if the cut drops, or if the cut stays and the
   balance improves. Parts never empty. */
static void hpj__kw_refine(hpj__kw *s, hpj__pws *w, int32_t niter) {
    const hpj__pg *g = s->g;
    hpj__heap hp = hpj__hp_make(w, 0);
    int32_t pass, i, p;
    int64_t minpw = (int64_t)floor((double)g->tvw / s->k / w->ctl.imb), mx = 0, save = s->maxpart;
    /* like METIS: never tighter than the balance we already have */
    for (p = 0; p < s->k; ++p) mx = HPJ__MAX(mx, s->pw[p]);
    s->maxpart = HPJ__MAX(s->maxpart, mx);
    for (pass = 0; pass < niter; ++pass) {
        int32_t stamp = ++w->stamp, nmoves = 0, iter = 0;
        int64_t oldcut = s->cut;
        for (i = 0; i < s->nbnd; ++i) {
            int32_t v = s->bnd[i];
            if (2 * s->ed[v] >= g->wdeg[v]) hpj__hp_push(&hp, v, 2 * s->ed[v] - g->wdeg[v]);
        }
        while (hp.n > 0) {
            int32_t v = hpj__hp_pop(&hp), a = s->part[v], b, gain, cto, cfrom;
            w->mark[v] = stamp;
            ++iter;
            if (s->cnt[a] <= 1 || 2 * s->ed[v] < g->wdeg[v]) continue;
            if (s->ed[v] < g->wdeg[v] && s->pw[a] - g->vw[v] < minpw) continue;
            b = hpj__kw_best(s, w, v, &gain, &cto, &cfrom);
            if (b < 0) continue;
            /* zero-gain moves: when they improve balance, and on every other
               vertex anyway so boundaries can drift across plateaus */
            if (gain > 0 || (gain == 0 && (s->pw[a] > s->maxpart || s->pw[b] + g->vw[v] < s->pw[a] || (iter & 1)))) {
                hpj__kw_move(s, v, b, cto, cfrom, &hp, w->mark, stamp);
                ++nmoves;
            }
        }
        HPJ__KW_CHECK(s);
        if (nmoves == 0 || s->cut == oldcut) break;
    }
    s->maxpart = save;
}

/* Moves vertices out of parts heavier than maxpart: boundary vertices to
   a touching part with room (best gain first), then any vertex to the
   lightest part. */
static void hpj__kw_balance(hpj__kw *s, hpj__pws *w) {
    const hpj__pg *g = s->g;
    hpj__heap hp = hpj__hp_make(w, 0);
    int32_t p, v, i, stamp, light = -1;
    int over = 0;
    for (p = 0; p < s->k; ++p) over |= s->pw[p] > s->maxpart;
    if (!over) return;
    stamp = ++w->stamp;
    for (i = 0; i < s->nbnd; ++i) {
        int32_t gain, cto, cfrom;
        v = s->bnd[i];
        if (s->pw[s->part[v]] <= s->maxpart) continue;
        if (hpj__kw_best(s, w, v, &gain, &cto, &cfrom) >= 0) hpj__hp_push(&hp, v, gain);
    }
    while (hp.n > 0) {
        int32_t a, b, gain, cto, cfrom;
        v = hpj__hp_pop(&hp);
        a = s->part[v];
        if (s->pw[a] <= s->maxpart || s->cnt[a] <= 1) continue;
        b = hpj__kw_best(s, w, v, &gain, &cto, &cfrom);
        if (b >= 0) hpj__kw_move(s, v, b, cto, cfrom, NULL, w->mark, stamp);
    }
    /* whatever is still over goes to the lightest parts */
    for (v = 0; v < g->n; ++v) {
        int32_t a = s->part[v], nt, t, cto, cfrom;
        if (s->pw[a] <= s->maxpart || s->cnt[a] <= 1) continue;
        if (light < 0 || light == a || s->pw[light] + g->vw[v] > s->maxpart) {
            light = -1;
            for (p = 0; p < s->k; ++p)
                if (p != a && (light < 0 || s->pw[p] < s->pw[light])) light = p;
            if (light < 0 || s->pw[light] + g->vw[v] >= s->pw[a]) continue;
        }
        nt = hpj__kw_scan(s, v, w->conn, w->touched);
        cto = w->conn[light];
        cfrom = w->conn[a];
        for (t = 0; t < nt; ++t) w->conn[w->touched[t]] = 0;
        hpj__kw_move(s, v, light, cto, cfrom, NULL, w->mark, stamp);
    }
    HPJ__KW_CHECK(s);
}

/* Multilevel k-way: coarsen to max(n / (20 log2 k), 30 k) vertices,
   recursive bisection of the coarsest graph, then balance + greedy
   refinement at every level on the way back. */
static hpj_status hpj__kway(hpj__pws *w, hpj__pg *g, int32_t k, int32_t *out) {
    hpj__hier *h;
    hpj__kw s;
    int32_t *buf[2], l, L, lg = 0, to;
    hpj_rng rng = hpj_rng_stream(w->runseed, 0xC0A25E, (uint64_t)k);
    hpj_status st = HPJ_OK;
    while ((1 << (lg + 1)) <= k && lg < 30) ++lg;
    if (lg < 1) lg = 1;
    to = HPJ__MAX(g->n / (HPJ__PART_KWAY_DIV * lg), HPJ__PART_KWAY_PER_PART * k);
    if (to < HPJ__PART_BIS_DIRECT) to = HPJ__PART_BIS_DIRECT;
    h = (hpj__hier *)hpj__alloc(sizeof(hpj__hier), "partition: hierarchy");
    if (!h) return HPJ_ERR_NOMEM;
    buf[0] = out;
    buf[1] = NULL;
    if ((st = hpj__coarsen(h, g, to, w, &rng)) != HPJ_OK) goto done;
    L = h->nlev - 1;
    if (L > 0) {
        buf[1] = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)h->lev[1].n, "partition: k-way");
        if (!buf[1]) { st = HPJ_ERR_NOMEM; goto done; }
    }
    {
        /* best of nip recursive bisections of the coarsest graph (METIS: 4
           or 5), each with its own seed and ub^(1/ln k) per bisection; a
           dataset-sized graph (<= 5000 vertices) gets 2 cheaper ones: the
           fast path for the many small graphs of a dataset */
        int32_t nip = to == HPJ__PART_KWAY_PER_PART * k ? 4 : 5, i, nc = h->lev[L].n;
        int32_t *cur = NULL;
        int64_t bcut = 0, bmax = 0;
        uint64_t seed0 = w->runseed;
        double ub0 = w->ub;
        w->ub = pow(w->ctl.imb, 1.0 / log((double)(k > 2 ? k : 3)));
        if (g->n <= HPJ__PART_SMALL_GRAPH) nip = 2;
        w->bis_trials = g->n <= HPJ__PART_SMALL_GRAPH ? HPJ__PART_KWAY_TRIALS : HPJ__PART_BIS_TRIALS;
        if (nip > 1) {
            cur = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)nc, "partition: k-way");
            if (!cur) { st = HPJ_ERR_NOMEM; goto done; }
        }
        for (i = 0; i < nip && st == HPJ_OK; ++i) {
            int32_t *dst = i == 0 ? buf[L & 1] : cur;
            int64_t c, m;
            hpj_rng r = hpj_rng_stream(seed0, 0x1417, (uint64_t)i);
            w->runseed = hpj_rng_u64(&r);
            if ((st = hpj__rb(w, &h->lev[L], k, 0, dst)) != HPJ_OK) break;
            hpj__part_measure(&h->lev[L], dst, k, w->pw, &c, &m);
            if (i == 0 || ((m <= w->maxpart) > (bmax <= w->maxpart)) ||
                ((m <= w->maxpart) == (bmax <= w->maxpart) && (c < bcut || (c == bcut && m < bmax)))) {
                bcut = c;
                bmax = m;
                if (i > 0) memcpy(buf[L & 1], cur, sizeof(int32_t) * (size_t)nc);
            }
            if (bcut == 0 && bmax <= w->maxpart) break;
        }
        hpj__free(cur);
        w->runseed = seed0;
        w->ub = ub0;
        if (st != HPJ_OK) goto done;
    }
    memset(&s, 0, sizeof s);
    s.g = &h->lev[L];
    s.k = k;
    s.part = buf[L & 1];
    s.ed = w->ed;
    s.bnd = w->bnd;
    s.bpos = w->bpos;
    s.pw = w->pw;
    s.cnt = w->cnt;
    s.maxpart = w->maxpart;
    if (k == 2) {
        /* two parts: FM (hill climbing with rollback) first, then the greedy
           k-way pass, whose zero-gain moves use the balance slack that FM
           (always moving from the heavier side) leaves unused; the two
           share part/ed/boundary arrays */
        hpj__bis b;
        memset(&b, 0, sizeof b);
        b.g = &h->lev[L];
        b.part = buf[L & 1];
        b.ed = w->ed;
        b.bnd = w->bnd;
        b.bpos = w->bpos;
        b.tw0 = (double)g->tvw / 2;
        b.maxw[0] = b.maxw[1] = w->maxpart;
        hpj__bis_params(&b);
        for (l = L;; --l) {
            int32_t v;
            b.slack = l > 0 ? hpj__bis_slack(b.g) : 0;
            hpj__bis_balance(&b, w);
            hpj__bis_fm(&b, w, w->ctl.niter, &rng);
            s.g = b.g;
            s.part = b.part;
            s.ed = b.ed;
            s.nbnd = b.nbnd;
            s.pw[0] = b.pw[0];
            s.pw[1] = b.pw[1];
            s.cut = b.cut;
            s.cnt[0] = s.cnt[1] = 0;
            for (v = 0; v < s.g->n; ++v) s.cnt[s.part[v]]++;
            hpj__kw_refine(&s, w, w->ctl.niter);
            b.nbnd = s.nbnd;
            b.pw[0] = s.pw[0];
            b.pw[1] = s.pw[1];
            b.cut = s.cut;
            if (l == 0) break;
            {
                int32_t *t = w->ed;
                w->ed = w->edc;
                w->edc = t;
            }
            hpj__project(&h->lev[l - 1], buf[l & 1], w->edc, buf[(l - 1) & 1], w->ed, w->bnd, w->bpos, &b.nbnd,
                         NULL, 0);
            b.g = &h->lev[l - 1];
            b.part = buf[(l - 1) & 1];
            b.ed = w->ed;
        }
        goto done;
    }
    hpj__kw_params(&s);
    hpj__kw_balance(&s, w);
    hpj__kw_refine(&s, w, w->ctl.niter);
    for (l = L - 1; l >= 0; --l) {
        int32_t *t = w->ed;
        w->ed = w->edc;
        w->edc = t;
        hpj__project(&h->lev[l], buf[(l + 1) & 1], w->edc, buf[l & 1], w->ed, w->bnd, w->bpos, &s.nbnd, w->cnt, k);
        s.g = &h->lev[l];
        s.part = buf[l & 1];
        s.ed = w->ed;
        hpj__kw_balance(&s, w);
        hpj__kw_refine(&s, w, w->ctl.niter);
    }
done:
    hpj__free(buf[1]);
    hpj__hier_free(h);
    hpj__free(h);
    return st;
}

/* ==== partition: driver ==== */

/* Gives every empty part one vertex: taken from the part with the most
   vertices, the one with the least edge weight into its own part. */
static void hpj__fill_empty(const hpj__pg *g, int32_t *part, int32_t k, int32_t *cnt) {
    int32_t p, v, j;
    memset(cnt, 0, sizeof(int32_t) * (size_t)k);
    for (v = 0; v < g->n; ++v) cnt[part[v]]++;
    for (p = 0; p < k; ++p) {
        int32_t q = 0, best = -1;
        int64_t bestin = 0;
        if (cnt[p] > 0) continue;
        for (j = 1; j < k; ++j)
            if (cnt[j] > cnt[q]) q = j;
        if (cnt[q] < 2) return; /* k > n: cannot happen here */
        for (v = 0; v < g->n; ++v) {
            int64_t in = 0;
            if (part[v] != q) continue;
            for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
                if (part[g->adj[j]] == q) in += g->adjw[j];
            if (best < 0 || in < bestin) { best = v; bestin = in; }
        }
        part[best] = p;
        cnt[q]--;
        cnt[p]++;
    }
}

static void hpj__part_measure(const hpj__pg *g, const int32_t *part, int32_t k, int64_t *pw, int64_t *cut,
                              int64_t *maxpw) {
    int32_t v, j;
    int64_t c = 0, m = 0;
    memset(pw, 0, sizeof(int64_t) * (size_t)k);
    for (v = 0; v < g->n; ++v) {
        pw[part[v]] += g->vw[v];
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (part[g->adj[j]] != part[v]) c += g->adjw[j];
    }
    for (v = 0; v < k; ++v) m = HPJ__MAX(m, pw[v]);
    *cut = c / 2;
    *maxpw = m;
}

static hpj_status hpj__part_ctrl(const hpj_partition_options *opt, hpj__pctrl *c) {
    hpj_partition_options d;
    if (!opt) {
        hpj_partition_options_default(&d);
        opt = &d;
    }
    if (opt->method != HPJ_PARTITION_KWAY && opt->method != HPJ_PARTITION_RB)
        return hpj__fail(HPJ_ERR_INPUT, "partition: unknown method %d (HPJ_PARTITION_KWAY or HPJ_PARTITION_RB)",
                         (int)opt->method);
    if (!(opt->imbalance >= 1.0 && opt->imbalance <= 1000.0))
        return hpj__fail(HPJ_ERR_INPUT, "partition: imbalance %g must be in 1..1000", opt->imbalance);
    if (opt->ncuts < 1 || opt->ncuts > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: ncuts %d must be in 1..1000", (int)opt->ncuts);
    if (opt->niter < 0 || opt->niter > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: niter %d must be in 0..1000", (int)opt->niter);
    if (opt->ntrials < 0 || opt->ntrials > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: ntrials %d must be in 0..1000 (0 = automatic)", (int)opt->ntrials);
    c->method = (int)opt->method;
    c->imb = opt->imbalance;
    c->ncuts = opt->ncuts;
    c->niter = opt->niter;
    c->ntrials = opt->ntrials;
    c->seed = opt->seed;
    return HPJ_OK;
}

/* Checks what the partitioner relies on, in O(n + E); sets *loops to the
   number of self-loop entries and the weight totals. */
static hpj_status hpj__part_check(const hpj_graph *g, int64_t *loops, int64_t *tvw) {
    int32_t v, i;
    int64_t ew = 0;
    *loops = 0;
    *tvw = 0;
    if (!g) return hpj__fail(HPJ_ERR_INPUT, "partition: graph is NULL");
    if (g->n < 0 || g->nnz < 0) return hpj__fail(HPJ_ERR_INPUT, "partition: negative size n=%d nnz=%d", g->n, g->nnz);
    if (g->n == 0) return HPJ_OK;
    if (!g->rowptr || (g->nnz > 0 && !g->col)) return hpj__fail(HPJ_ERR_INPUT, "partition: missing rowptr/col arrays");
    if (g->rowptr[0] != 0 || g->rowptr[g->n] != g->nnz)
        return hpj__fail(HPJ_ERR_INPUT, "partition: rowptr[0]=%d rowptr[n]=%d, expected 0 and nnz=%d", g->rowptr[0],
                         g->rowptr[g->n], g->nnz);
    for (v = 0; v < g->n; ++v) {
        if (g->rowptr[v + 1] < g->rowptr[v]) return hpj__fail(HPJ_ERR_INPUT, "partition: rowptr decreases at vertex %d", v);
        if (g->vwgt) {
            if (g->vwgt[v] < 0) return hpj__fail(HPJ_ERR_INPUT, "partition: vertex %d has negative weight %d", v, g->vwgt[v]);
            *tvw += g->vwgt[v];
        }
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
            int32_t u = g->col[i];
            if (u < 0 || u >= g->n)
                return hpj__fail(HPJ_ERR_INPUT, "partition: vertex %d has neighbour %d out of range 0..%d", v, u, g->n - 1);
            if (u == v) { ++*loops; continue; }
            if (g->ewgt) {
                if (g->ewgt[i] <= 0)
                    return hpj__fail(HPJ_ERR_INPUT, "partition: edge %d-%d has weight %d <= 0", v, u, g->ewgt[i]);
                ew += g->ewgt[i];
            } else {
                ++ew;
            }
        }
    }
    if (!g->vwgt) *tvw = g->n;
    if (*tvw > INT32_MAX)
        return hpj__fail(HPJ_ERR_INPUT, "partition: total vertex weight %lld exceeds 2^31-1", (long long)*tvw);
    if (ew / 2 > HPJ__PART_MAX_EWGT)
        return hpj__fail(HPJ_ERR_INPUT, "partition: total edge weight %lld exceeds 2^30-1", (long long)(ew / 2));
    return HPJ_OK;
}

HPJDEF void hpj_partition_options_default(hpj_partition_options *opt) {
    opt->method = HPJ_PARTITION_KWAY;
    opt->imbalance = 1.03;
    opt->ncuts = 1;
    opt->niter = 10;
    opt->ntrials = 0;
    opt->seed = 1;
}

HPJDEF hpj_status hpj_partition_evaluate(const hpj_graph *g, int32_t k, const int32_t *part, hpj_partition_stats *st) {
    int32_t v, i, kk;
    int64_t *pw, cut = 0, mx = 0, tot = 0;
    if (!st) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: stats is NULL");
    memset(st, 0, sizeof(*st));
    if (!g || g->n < 0) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: no graph");
    if (k < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: k=%d must be >= 1", k);
    if (g->n > 0 && !part) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: part is NULL");
    for (v = 0; v < g->n; ++v)
        if (part[v] < 0 || part[v] >= k)
            return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: vertex %d has part %d outside 0..%d", v, part[v], k - 1);
    kk = k;
    pw = (int64_t *)hpj__calloc((size_t)kk, sizeof(int64_t), "partition_evaluate");
    if (!pw) return HPJ_ERR_NOMEM;
    for (v = 0; v < g->n; ++v) {
        int64_t w = g->vwgt ? g->vwgt[v] : 1;
        pw[part[v]] += w;
        tot += w;
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
            int32_t u = g->col[i];
            if (u != v && part[u] != part[v]) cut += g->ewgt ? g->ewgt[i] : 1;
        }
    }
    for (i = 0; i < kk; ++i) mx = HPJ__MAX(mx, pw[i]);
    /* non-empty counts vertices, not weight: reuse pw as k flags */
    memset(pw, 0, sizeof(int64_t) * (size_t)kk);
    for (v = 0; v < g->n; ++v) pw[part[v]] = 1;
    for (i = 0; i < kk; ++i) st->nonempty += (int32_t)pw[i];
    hpj__free(pw);
    st->edgecut = cut / 2;
    st->max_part_weight = mx;
    st->total_weight = tot;
    st->imbalance = tot > 0 ? (double)mx * (double)k / (double)tot : 1.0;
    return HPJ_OK;
}

/* One graph, validated options. */
static hpj_status hpj__part_graph(const hpj_graph *gin, int32_t k, const hpj__pctrl *ctl, int32_t *part,
                                  hpj_partition_stats *stats) {
    hpj__pws w;
    hpj__pg g0;
    int64_t loops, tvw, bestcut = 0, bestmax = 0;
    int32_t n = gin->n, kk, v, j, cut_i, *cur = NULL, *best = NULL;
    int32_t **arr[8];
    size_t len[8];
    int c = 0;
    hpj_status st;
    if (k < 1) return hpj__fail(HPJ_ERR_INPUT, "partition: k=%d must be >= 1", k);
    if ((st = hpj__part_check(gin, &loops, &tvw)) != HPJ_OK) return st;
    kk = HPJ__MIN(k, n);
    if (n == 0) {
        return stats ? hpj_partition_evaluate(gin, k, part, stats) : HPJ_OK;
    }
    if (kk == 1 || kk == n) {
        for (v = 0; v < n; ++v) part[v] = kk == 1 ? 0 : v;
        return stats ? hpj_partition_evaluate(gin, k, part, stats) : HPJ_OK;
    }
    /* level 0: borrow the CSR when it has no self-loops, add weights */
    memset(&g0, 0, sizeof g0);
    g0.n = n;
    g0.tvw = tvw;
    g0.eqw = gin->ewgt == NULL;
    arr[c] = &g0.wdeg; len[c++] = (size_t)n;
    arr[c] = &g0.cmap; len[c++] = (size_t)n;
    arr[c] = &cur; len[c++] = (size_t)n;
    if (!gin->vwgt) { arr[c] = &g0.vw; len[c++] = (size_t)n; }
    if (loops || !gin->ewgt) { arr[c] = &g0.adjw; len[c++] = (size_t)(gin->nnz - loops); }
    if (loops) {
        arr[c] = &g0.xadj; len[c++] = (size_t)n + 1;
        arr[c] = &g0.adj; len[c++] = (size_t)(gin->nnz - loops);
    }
    g0.mem = hpj__part_block(arr, len, c, "partition");
    if (!g0.mem) return HPJ_ERR_NOMEM;
    if (gin->vwgt) g0.vw = (int32_t *)(uintptr_t)gin->vwgt;
    else for (v = 0; v < n; ++v) g0.vw[v] = 1;
    if (loops) {
        int32_t e = 0;
        g0.xadj[0] = 0;
        for (v = 0; v < n; ++v) {
            for (j = gin->rowptr[v]; j < gin->rowptr[v + 1]; ++j) {
                if (gin->col[j] == v) continue;
                g0.adj[e] = gin->col[j];
                g0.adjw[e] = gin->ewgt ? gin->ewgt[j] : 1;
                ++e;
            }
            g0.xadj[v + 1] = e;
        }
    } else {
        g0.xadj = (int32_t *)(uintptr_t)gin->rowptr;
        g0.adj = (int32_t *)(uintptr_t)gin->col;
        if (gin->ewgt) g0.adjw = (int32_t *)(uintptr_t)gin->ewgt;
        else for (j = 0; j < gin->nnz; ++j) g0.adjw[j] = 1;
    }
    g0.nnz = g0.xadj[n];
    for (v = 0; v < n; ++v) {
        int32_t d = 0;
        for (j = g0.xadj[v]; j < g0.xadj[v + 1]; ++j) d += g0.adjw[j];
        g0.wdeg[v] = d;
    }
    if ((st = hpj__pws_init(&w, n, kk, ctl)) != HPJ_OK) { hpj__pg_free(&g0); return st; }
    {
        double ideal = (double)tvw / kk;
        int32_t lg = 0;
        w.maxpart = HPJ__MAX((int64_t)floor(ctl->imb * ideal), (int64_t)ceil(ideal));
        while ((1 << lg) < kk && lg < 31) ++lg;
        w.ub = pow(ctl->imb, 1.0 / (lg > 0 ? lg : 1));
        w.bis_trials = HPJ__PART_BIS_TRIALS;
    }
    if (ctl->ncuts > 1) {
        best = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n, "partition");
        if (!best) { st = HPJ_ERR_NOMEM; goto done; }
    }
    for (cut_i = 0; cut_i < ctl->ncuts; ++cut_i) {
        int64_t cut, mx;
        hpj_rng r = hpj_rng_stream(ctl->seed, 0x9A27, (uint64_t)cut_i);
        w.runseed = hpj_rng_u64(&r);
        if (ctl->method == HPJ_PARTITION_RB) st = hpj__rb(&w, &g0, kk, 0, cur);
        else st = hpj__kway(&w, &g0, kk, cur);
        if (st != HPJ_OK) goto done;
        hpj__fill_empty(&g0, cur, kk, w.cnt);
        if (!best) break;
        hpj__part_measure(&g0, cur, kk, w.pw, &cut, &mx);
        if (cut_i == 0 || ((mx <= w.maxpart) > (bestmax <= w.maxpart)) ||
            ((mx <= w.maxpart) == (bestmax <= w.maxpart) && (cut < bestcut || (cut == bestcut && mx < bestmax)))) {
            bestcut = cut;
            bestmax = mx;
            memcpy(best, cur, sizeof(int32_t) * (size_t)n);
        }
    }
    memcpy(part, best ? best : cur, sizeof(int32_t) * (size_t)n);
#ifdef HPJ_DEBUG
    {
        /* every part id in range and every part non-empty */
        int32_t p;
        memset(w.cnt, 0, sizeof(int32_t) * (size_t)kk);
        for (v = 0; v < n; ++v) {
            HPJ_ASSERT(part[v] >= 0 && part[v] < kk);
            w.cnt[part[v]]++;
        }
        for (p = 0; p < kk; ++p) HPJ_ASSERT(w.cnt[p] > 0);
    }
#endif
    if (stats) st = hpj_partition_evaluate(gin, k, part, stats);
done:
    hpj__free(best);
    hpj__free(w.mem);
    hpj__pg_free(&g0);
    return st;
}

HPJDEF hpj_status hpj_partition_run(const hpj_graph *g, int32_t k, const hpj_partition_options *opt, int32_t *part,
                                    hpj_partition_stats *stats) {
    hpj__pctrl ctl;
    hpj_status st;
    if (stats) memset(stats, 0, sizeof(*stats));
    if ((st = hpj__part_ctrl(opt, &ctl)) != HPJ_OK) return st;
    if (!g) return hpj__fail(HPJ_ERR_INPUT, "partition: graph is NULL");
    if (g->n > 0 && !part) return hpj__fail(HPJ_ERR_INPUT, "partition: part is NULL");
    return hpj__part_graph(g, k, &ctl, part, stats);
}

HPJDEF hpj_status hpj_partition_run_dataset(const hpj_dataset *ds, const int32_t *K, int32_t L,
                                            const hpj_partition_options *opt, int32_t *part, int32_t *nparts) {
    hpj__pctrl ctl;
    hpj_status st;
    int32_t l, G, gi;
    int64_t N;
    signed char *fail;
    if ((st = hpj__part_ctrl(opt, &ctl)) != HPJ_OK) return st;
    if (!ds || !K || !part) return hpj__fail(HPJ_ERR_INPUT, "partition_run_dataset: NULL argument");
    if (L < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_run_dataset: L=%d must be >= 1", L);
    for (l = 0; l < L; ++l)
        if (K[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_run_dataset: K[%d]=%d must be >= 1", l, K[l]);
    G = ds->num_graphs;
    N = ds->num_nodes;
    fail = (signed char *)hpj__calloc((size_t)(G > 0 ? G : 1), 1, "partition_run_dataset");
    if (!fail) return HPJ_ERR_NOMEM;
    HPJ__OMP(parallel for schedule(dynamic, 4))
    for (gi = 0; gi < G; ++gi) {
        hpj_graph g = hpj_dataset_graph(ds, gi);
        int32_t ll;
        for (ll = 0; ll < L; ++ll) {
            hpj__pctrl c = ctl;
            hpj_rng r = hpj_rng_stream(ctl.seed, (uint64_t)ll, (uint64_t)gi);
            c.seed = hpj_rng_u64(&r);
            if (hpj__part_graph(&g, K[ll], &c, part + (int64_t)ll * N + ds->node_ptr[gi], NULL) != HPJ_OK) {
                fail[gi] = 1;
                break;
            }
            if (nparts) nparts[(int64_t)gi * L + ll] = HPJ__MIN(K[ll], g.n);
        }
    }
    for (gi = 0; gi < G; ++gi) {
        if (!fail[gi]) continue;
        /* redo the failing graph on this thread for its reason */
        hpj__free(fail);
        {
            hpj_graph g = hpj_dataset_graph(ds, gi);
            char msg[HPJ__ERRLEN];
            for (l = 0; l < L; ++l) {
                hpj__pctrl c = ctl;
                hpj_rng r = hpj_rng_stream(ctl.seed, (uint64_t)l, (uint64_t)gi);
                c.seed = hpj_rng_u64(&r);
                st = hpj__part_graph(&g, K[l], &c, part + (int64_t)l * N + ds->node_ptr[gi], NULL);
                if (st != HPJ_OK) break;
            }
            if (st == HPJ_OK) st = HPJ_ERR_NOMEM;
            memcpy(msg, hpj__errbuf, sizeof msg);
            msg[sizeof msg - 1] = 0;
            return hpj__fail(st, "partition_run_dataset: graph %d: %s", gi, msg);
        }
    }
    hpj__free(fail);
    return HPJ_OK;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_partition_write(const char *path, const int32_t *part, int32_t n) {
    hpj__buf b;
    int32_t v;
    hpj_status st;
    if (!path || n < 0 || (n > 0 && !part)) return hpj__fail(HPJ_ERR_INPUT, "partition_write: bad arguments");
    memset(&b, 0, sizeof b);
    for (v = 0; v < n; ++v) hpj__buf_int(&b, part[v], '\n');
    if (b.failed) { hpj__free(b.p); return HPJ_ERR_NOMEM; }
    st = hpj__write_atomic(path, b.p, b.n);
    hpj__free(b.p);
    return st;
}
#endif

#endif /* HPJ_WIP_PARTITION_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
