/* hpjepa.h - v0.18.3 - HP-JEPA: hierarchical-partition joint-embedding
   predictive learning of graph representations, in one C header.
   Public domain or MIT, your choice: see the end of this file.

   Do this:
       #define HPJEPA_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it without the define.

   EXAMPLE (load a TUDataset folder and print its size)

       #define HPJEPA_IMPLEMENTATION
       #include "hpjepa.h"
       #include <stdio.h>

       int main(int argc, char **argv) {
           hpj_dataset ds;
           int g;
           long edges = 0;
           if (argc < 2) return 2;
           if (hpj_dataset_load_tu(argv[1], &ds) != HPJ_OK) {
               fprintf(stderr, "%s\n", hpj_last_error());
               return 1;
           }
           for (g = 0; g < ds.num_graphs; ++g) {
               hpj_graph gr = hpj_dataset_graph(&ds, g);
               edges += gr.nnz / 2;
           }
           printf("%d graphs, %d classes, %ld edges\n",
                  ds.num_graphs, ds.num_classes, edges);
           hpj_dataset_free(&ds);
           return 0;
       }

   HOW TO READ THIS FILE
       The API comes first: declarations with a shape comment on every
       buffer. The implementation follows in two parts. The REFERENCE part
       is the method in plain C99 loops (OpenMP pragmas over loops with
       disjoint outputs); read it top to bottom:
         foundations  status & errors, paths, rng, arena, graph readers
         partitioner  coarsening (hpj__coarsen), bisection (hpj__mlbisect),
                      k-way refinement (hpj__kw_refine); hpj_partition
         tokenizer    random-walk encoding (hpj_rwse), the patches of every
                      graph at every resolution (hpj_tokens_build)
         nn layers    forward / backward pairs over flat buffers: hpj_gemm,
                      linear, activations, norms, GINE, pooling, attention,
                      Transformer block, losses, hpj_adam_step, EMA
         config       hpj_config, `key = value` files
         model        g_eta the patch encoder (hpj__gnn_forward / _backward),
                      e_xi the structural queries (hpj__sq_forward), f_theta
                      the token encoder and its EMA copy (hpj__enc_forward),
                      q_psi the predictor (hpj__pred_forward)
         the step     one resolution of one batch: hpj__batch_load samples
                      it (hpj__sample: a context and targets per graph)
                      and builds its inputs, then hpj__step runs, in
                      sequence, forward -> loss (hpj_smooth_l1 against the
                      hyperbolic targets [cosh m(u), sinh m(u)] of the EMA
                      encoder, hpj__targets_phi) -> backward -> clip
                      (hpj__grad_norm) -> Adam -> EMA (hpj_ema_update)
         training     hpj_pretrain: epochs, batches, resolutions
         readout      hpj__embed (per-resolution embeddings h^(l) from the
                      EMA encoder), hpj_readout (concat or mean over l)
         probes       ridge, logistic regression, folds, resolution weights
         checkpoints  hpj_model_save / hpj_model_load
       THE FAST PART comes last (its frame opens with that title): faster
       siblings of a few reference functions, each under a banner
       `==== fast: <what> ====` that says why it computes the same function.
       Each plugs in at one point of the reference code, marked by
       `if (hpj__fast())`: search for hpj__fast( to find them all. The API
       and both parts keep the modules' order; each opens with a banner
       such as `==== partition: k-way refinement ====`.

   COMPILE-TIME OPTIONS (define before including; "global" = the same in
   every file that includes the header, "impl" = only in the file that
   defines HPJEPA_IMPLEMENTATION)
       HPJ_STATIC            impl   all functions static (private copy)
       HPJ_MALLOC(ctx,sz)    impl   allocator; define HPJ_FREE(ctx,p) too,
       HPJ_FREE(ctx,p)              or neither (#error otherwise); ctx is
                                    always NULL for now
       HPJ_ASSERT(x)         impl   internal invariants (default assert)
       HPJ_NO_STDIO          impl   no <stdio.h>: no file functions, error
                                    reasons formatted without vsnprintf
       HPJ_DEBUG             impl   expensive internal consistency checks
                                    (partitioner: recounted cuts and weights)
       HPJ_REFERENCE         impl   compiles the fast part out: the reference
                                    implementation only (for learners and
                                    embedded toolchains)
       HPJ_NO_SIMD           impl   the fast part without SIMD kernels (they
                                    otherwise follow the compiler's target,
                                    e.g. -march=native)

   GLOSSARY of dimension letters used in shape comments
       N nodes   E directed edges (CSR entries)   G graphs in a dataset
       P patches B graphs in a minibatch           T tokens
       D width   H heads   F hidden width   K parts   L resolutions

   LEGEND of names: hpj_ / HPJ_ public, hpj__ / HPJ__ private. Private
   families hpj__<prefix>... (their macros the same in capitals):
       graph       scan_ text scanner; tu_ TUDataset files;
                   csr_ datasets from in-memory CSR; buf_ growing text buffer
       partition   part_ shared helpers; pctrl checked options;
                   pw_ blocks of a workspace (hpj_part_work);
                   pws one call's scratch; hp_ vertex heap by gain;
                   pg one graph of the coarsening hierarchy (hier);
                   bnd_ boundary list; bis_ bisection; rb recursive
                   bisection; kw_ a partition under refinement (k-way;
                   a bisection is k = 2)
       tokenizer   tok_ regions and partitions; tokws per-thread scratch
       nn          gemm_ matrix product; lin_ linear; bn_ BatchNorm;
                   ln_ LayerNorm; att_ attention; block_ Transformer block;
                   gine_ GINE; adam_ optimiser pass;
                   rb_scratch row-block sums (not recursive bisection)
       model       gnn_ patch encoder g_eta; sq_ structural-query encoder e_xi;
                   enc_ token encoder f_theta and its EMA copy;
                   pred_ predictor q_psi; item one sampled patch;
                   path_ the node copies of a batch's patches;
                   pscr the path builders' scratch; trainer one run;
                   step_ the step's workspace; fwd_ its forward pieces;
                   gov the team size (T threads or one; fast part)
       probe       probe_ probes; lm_ linear model
       checkpoints put_ / get_ fields; ckpt_ file format
       fast part   fast_ a fast sibling of the reference function of the
                   same name; cls_ classes of equal node copies; table_ the
                   input table; two_ two pieces side by side, one a thread

   ERRORS, THREADS, DETERMINISM
       Every fallible call returns an hpj_status (HPJ_OK == 0, failures
       negative); hpj_last_error() then gives a one-line reason such as
       "PROTEINS_A.txt:1207: node id 99999 > 43471 nodes", per thread where
       the compiler has thread-local storage. A failed call leaves its
       outputs zeroed and owns no memory. The library never prints, exits
       or aborts (HPJ_ASSERT guards internal invariants only).
       OpenMP (-fopenmp) is optional. Parallel loops write disjoint outputs
       and every sum is taken by one thread in a fixed order, so results are
       bit-identical for any thread count and on every run. All randomness
       flows from explicit seeds through hpj_rng streams. In the fast part,
       training, embedding and logistic probes time T threads against one
       now and then and keep the faster (a team whose threads cannot all
       run at once waits at every barrier); hpj_set_adaptive_threads(0)
       turns this off. Neither changes a bit.
       hpj_set_paths picks the reference or the fast part at run time. The
       fast part gives the reference's bits where its paths say so (tests
       hold them to it bit for bit), elsewhere the same function with other
       rounding, within a stated tolerance.
       a * b + c must stay two roundings: the implementation sets #pragma
       STDC FP_CONTRACT OFF for clang; GCC ignores it and contracts in its
       GNU modes, so build with -std=c99 / -std=c11 or -ffp-contract=off (the
       Makefile does). Two compilers may differ in the last bits.
*/

#ifndef HPJEPA_H_INCLUDED
#define HPJEPA_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define HPJEPA_VERSION_MAJOR 0
#define HPJEPA_VERSION_MINOR 18
#define HPJEPA_VERSION_PATCH 3
/* The release whose results this one reproduces bit for bit (training,
   embedding, probes on the default build). It moves only when a change
   alters those bits, so records keyed by it (the program's eval fold logs)
   stay valid across releases that only reorganise the code. */
#define HPJEPA_BITS_VERSION "0.15.0"

#ifndef HPJDEF
#ifdef HPJ_STATIC
#define HPJDEF static
#else
#ifdef __cplusplus
#define HPJDEF extern "C"
#else
#define HPJDEF extern
#endif
#endif
#endif

/* ==== status & errors ================================================ */

typedef enum hpj_status {
    HPJ_OK = 0,
    HPJ_ERR_INPUT = -1,   /* bad argument or out-of-range value            */
    HPJ_ERR_NOMEM = -2,   /* allocation or arena capacity exhausted         */
    HPJ_ERR_NUMERIC = -3, /* inf/NaN or a failed factorisation              */
    HPJ_ERR_IO = -4,      /* a file could not be opened, read or written    */
    HPJ_ERR_FORMAT = -5   /* a file's contents are malformed                */
} hpj_status;

/* The reason for the last failure on this thread ("" if none). */
HPJDEF const char *hpj_last_error(void);
/* Short name of a status code ("ok", "input", "nomem", ...). */
HPJDEF const char *hpj_status_name(hpj_status s);
/* Clear the reason. */
HPJDEF void hpj_clear_error(void);

/* ==== paths: the reference or the fast implementation ================ */

/* The implementation has two parts. The reference part is the method in
   plain C loops, the code to read; the fast part plugs faster siblings
   (a packed GEMM with SIMD micro-kernels, two-thread schedules, ...) into
   a few named points, each computing the same function (the same bits,
   except where the fast patch encoder sums BatchNorm statistics over
   classes of equal node copies: other last bits). hpj_set_paths picks
   what runs:
       HPJ_PATHS_REFERENCE  the reference part only
       HPJ_PATHS_PORTABLE   the fast part without SIMD kernels
       HPJ_PATHS_AVX2       ... with the AVX2 kernels
       HPJ_PATHS_AVX512     ... with the AVX-512 kernels
       HPJ_PATHS_BEST       the widest the build has (the default)
   A request above what the build has is lowered to it; the call returns
   the level now in force. Built with -DHPJ_REFERENCE, the fast part is not
   compiled and the level is always HPJ_PATHS_REFERENCE. One process-wide
   setting: change it between calls, never while one runs. */
enum {
    HPJ_PATHS_REFERENCE = 0,
    HPJ_PATHS_PORTABLE = 1,
    HPJ_PATHS_AVX2 = 2,
    HPJ_PATHS_AVX512 = 3,
    HPJ_PATHS_BEST = 255
};
HPJDEF int hpj_set_paths(int level);
HPJDEF int hpj_paths(void);
/* "reference", "portable", "avx2", "avx512" */
HPJDEF const char *hpj_paths_name(int level);

/* ==== rng ============================================================ */

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64. Streams for
   independent items come from hpj_rng_stream(seed, step, index): the same
   (seed, step, index) always gives the same sequence, whichever thread
   draws it, so parallel loops stay deterministic. */
typedef struct hpj_rng {
    uint64_t s[4];
} hpj_rng;

HPJDEF uint64_t hpj_splitmix64(uint64_t *state);
HPJDEF void hpj_rng_seed(hpj_rng *r, uint64_t seed);
HPJDEF hpj_rng hpj_rng_stream(uint64_t seed, uint64_t step, uint64_t index);
HPJDEF uint64_t hpj_rng_u64(hpj_rng *r);
HPJDEF uint32_t hpj_rng_below(hpj_rng *r, uint32_t n); /* uniform 0..n-1, unbiased */
HPJDEF float hpj_rng_uniform(hpj_rng *r);              /* [0, 1), 24 bits  */
HPJDEF double hpj_rng_uniform64(hpj_rng *r);           /* [0, 1), 53 bits  */
HPJDEF float hpj_rng_normal(hpj_rng *r);               /* N(0, 1)          */
/* Fisher-Yates shuffle of a[0..n-1]. */
HPJDEF void hpj_rng_shuffle_i32(hpj_rng *r, int32_t *a, int32_t n);

/* ==== arena ========================================================== */

/* A bump allocator over one block. Every allocation is 64-byte aligned.
   Running out is an error (HPJ_ERR_NOMEM with the byte counts), never a
   silent growth: size the arena from capacities up front. */
typedef struct hpj_arena {
    unsigned char *base; /* (cap) 64-byte aligned                          */
    size_t cap;          /* usable bytes                                   */
    size_t used;         /* bytes handed out                               */
    size_t peak;         /* high-water mark of used                        */
    void *block;         /* what HPJ_MALLOC returned (NULL if user buffer) */
} hpj_arena;

#define HPJ_ARENA_ALIGN 64

HPJDEF hpj_status hpj_arena_init(hpj_arena *a, size_t bytes);
/* Use caller memory; buf need not be aligned (up to 63 bytes are lost). */
HPJDEF hpj_status hpj_arena_init_buffer(hpj_arena *a, void *buf, size_t bytes);
HPJDEF void hpj_arena_free(hpj_arena *a);
/* NULL (and hpj_last_error set) when the arena is full. */
HPJDEF void *hpj_arena_alloc(hpj_arena *a, size_t bytes);
HPJDEF float *hpj_arena_floats(hpj_arena *a, size_t count);
HPJDEF int32_t *hpj_arena_ints(hpj_arena *a, size_t count);
/* A measuring arena owns no memory: its allocations return a placeholder
   that must not be dereferenced and only add up the bytes they would take
   (read them from .used). Run a layout function once on a measuring arena,
   size the real arena from the result, then run it for real. */
HPJDEF void hpj_arena_init_measure(hpj_arena *a);
HPJDEF size_t hpj_arena_mark(const hpj_arena *a);
HPJDEF void hpj_arena_reset(hpj_arena *a, size_t mark);
/* Bytes an arena needs to hand out `count` items of `size` bytes, rounded
   to the alignment; 0 on overflow. Sum these to size an arena. */
HPJDEF size_t hpj_arena_need(size_t count, size_t size);

/* ==== graph ========================================================== */

/* An undirected graph in CSR form: the neighbours of vertex v are
   col[rowptr[v] .. rowptr[v+1]-1], sorted ascending, no duplicates and no
   self-loops; every edge {u,v} appears as u->v and v->u. */
typedef struct hpj_graph {
    int32_t n;             /* vertices                                     */
    int32_t nnz;           /* directed entries E = 2 x undirected edges    */
    const int32_t *rowptr; /* (n+1)                                        */
    const int32_t *col;    /* (E)                                          */
    const int32_t *vwgt;   /* (n) vertex weights, NULL = all 1             */
    const int32_t *ewgt;   /* (E) edge weights, symmetric, NULL = all 1    */
} hpj_graph;

/* A graph that owns its arrays (what the METIS reader returns). */
typedef struct hpj_graph_owned {
    hpj_graph g;
    void *mem; /* one block holding every array */
} hpj_graph_owned;

HPJDEF void hpj_graph_owned_free(hpj_graph_owned *g);
/* Build a CSR graph from an edge list (u[i], v[i]) with 0-based ids:
   symmetrises, drops self-loops and duplicates. w may be NULL (unit
   weights); a duplicate edge keeps the weight of its first listing. */
HPJDEF hpj_status hpj_graph_from_edges(int32_t n, int64_t m, const int32_t *u,
                                       const int32_t *v, const int32_t *w,
                                       hpj_graph_owned *out);
/* Checks the CSR invariants above; HPJ_ERR_INPUT with the first problem. */
HPJDEF hpj_status hpj_graph_check(const hpj_graph *g);

/* -- METIS graph format (as gpmetis reads it) --
   Header "n m [fmt [ncon]]": fmt is up to three digits "abc" where a = vertex
   sizes present (read and ignored), b = vertex weights, c = edge weights;
   ncon must be 1 when given. Lines starting with '%' are comments. Line i
   after the header lists vertex i's [size] [weight] then neighbour ids
   (1-based), each followed by its weight when c = 1. Every number is a
   plain integer (METIS itself would read "3.0" as 3 and silently drop the
   rest of the line: rejected here), a vertex may not list itself (METIS's
   graphchk calls a self-loop a format error) and the adjacency must be
   symmetric. */
typedef struct hpj_metis_info {
    int has_vwgt, has_ewgt; /* 1: the file had vertex / edge weights */
} hpj_metis_info;

HPJDEF hpj_status hpj_graph_parse_metis(const char *text, size_t len, const char *name,
                                        hpj_graph_owned *out, hpj_metis_info *info);
#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_graph_read_metis(const char *path, hpj_graph_owned *out,
                                       hpj_metis_info *info);
/* Writes atomically (temporary file, then rename). */
HPJDEF hpj_status hpj_graph_write_metis(const char *path, const hpj_graph *g);
#endif

/* -- datasets (TUDataset raw format) --
   All graphs of a dataset share concatenated arrays. Graph g owns nodes
   node_ptr[g] .. node_ptr[g+1]-1 and CSR entries edge_ptr[g] ..
   edge_ptr[g+1]-1; its rowptr holds local offsets and lives at
   rowptr + node_ptr[g] + g (n+1 values); col holds local node ids. Edge
   labels and attributes are aligned with the CSR entries. */
typedef enum hpj_split { HPJ_SPLIT_NONE = -1, HPJ_SPLIT_TRAIN = 0, HPJ_SPLIT_VAL = 1, HPJ_SPLIT_TEST = 2 } hpj_split;

typedef struct hpj_dataset {
    char name[64];
    int32_t num_graphs;   /* G                                             */
    int64_t num_nodes;    /* N, summed over graphs                         */
    int64_t num_edges;    /* E, directed CSR entries summed over graphs    */
    int64_t self_loops;   /* self-loop lines (or CSR entries) dropped      */
    int64_t dup_lines;    /* lines (or CSR entries) whose directed edge
                             repeats an earlier one, dropped               */
    int64_t *node_ptr;    /* (G+1)                                         */
    int64_t *edge_ptr;    /* (G+1)                                         */
    int32_t *rowptr;      /* (N+G) per-graph local CSR offsets             */
    int32_t *col;         /* (E) local neighbour ids                       */
    /* node labels (raw values as in the file), NULL if absent */
    int32_t *node_label;  /* (N)                                           */
    int32_t node_label_min, node_label_max;
    /* edge labels (raw values), NULL if absent */
    int32_t *edge_label;  /* (E)                                           */
    int32_t edge_label_min, edge_label_max;
    float *node_attr;     /* (N, node_attr_dim) or NULL                    */
    int32_t node_attr_dim;
    float *edge_attr;     /* (E, edge_attr_dim) or NULL                    */
    int32_t edge_attr_dim;
    /* classification: labels mapped to 0..C-1 in ascending raw order */
    int32_t num_classes;  /* C; 0 for a regression set                     */
    int32_t *graph_label; /* (G) or NULL                                   */
    int32_t *class_value; /* (C) the raw label of each class               */
    /* regression: graph attributes */
    float *target;        /* (G, target_dim) or NULL                       */
    int32_t target_dim;
    int8_t *split;        /* (G) hpj_split values, or NULL                 */
} hpj_dataset;

/* The text of the files of one dataset, for parsing from memory (fuzzing,
   embedded use). NULL text = file absent. A and graph_indicator are
   required, plus graph_labels or graph_attributes. */
typedef enum hpj_tu_file {
    HPJ_TU_A, HPJ_TU_GRAPH_INDICATOR, HPJ_TU_GRAPH_LABELS, HPJ_TU_GRAPH_ATTRIBUTES,
    HPJ_TU_NODE_LABELS, HPJ_TU_NODE_ATTRIBUTES, HPJ_TU_EDGE_LABELS, HPJ_TU_EDGE_ATTRIBUTES,
    HPJ_TU_SPLIT, HPJ_TU_NUM_FILES
} hpj_tu_file;

typedef struct hpj_tu_text {
    const char *text[HPJ_TU_NUM_FILES]; /* file contents or NULL  */
    size_t len[HPJ_TU_NUM_FILES];
    const char *name;                   /* dataset name, e.g. "PROTEINS"       */
    const char *path_prefix;            /* for messages: "dir/PROTEINS" or NULL */
} hpj_tu_text;

/* Suffix of each file kind: "A", "graph_indicator", ... "split". */
HPJDEF const char *hpj_tu_suffix(hpj_tu_file f);
/* The files' rules: _A.txt lines are "row, col" pairs of 1-based node ids
   (plain integers; "2.0" is rejected), each edge of an undirected graph
   listed in one or both directions; self-loops are dropped (counted in
   self_loops) and repeated lines too (dup_lines). Label files take one
   integer per line (an integral float such as "1.0" is read as 1);
   attribute files one or more reals per line, the same count on every
   line. Every failure names file:line. */
HPJDEF hpj_status hpj_dataset_parse_tu(const hpj_tu_text *files, hpj_dataset *out);
#ifndef HPJ_NO_STDIO
/* dir is the dataset folder (".../PROTEINS"); its last path component is
   the dataset name, so files are dir/NAME_A.txt etc. */
HPJDEF hpj_status hpj_dataset_load_tu(const char *dir, hpj_dataset *out);
#endif

/* -- datasets from graphs in memory --
   G graphs held as one CSR over all their N nodes: the nodes of graph g
   are numbered node_ptr[g] .. node_ptr[g+1]-1 in a global numbering, node
   v's adjacency entries are col[row_ptr[v] .. row_ptr[v+1]-1], and each
   entry is a neighbour's id LOCAL to the graph (0 .. n_g - 1, n_g =
   node_ptr[g+1] - node_ptr[g]). A batched PyTorch Geometric edge_index
   sorted by source gives it once each graph's first node id is
   subtracted from the targets. The arrays are only read;
   hpj_dataset_from_csr copies what it keeps. */
typedef struct hpj_csr_graphs {
    int32_t num_graphs;          /* G                                                        */
    const int64_t *node_ptr;     /* (G+1) graph g owns nodes node_ptr[g] .. node_ptr[g+1]-1   */
    const int64_t *row_ptr;      /* (N+1) node v's neighbours are col[row_ptr[v] .. row_ptr[v+1]-1] */
    const int32_t *col;          /* (E) neighbour ids local to the graph, 0 .. n_g-1          */
    const int32_t *node_label;   /* (N) or NULL: categorical node features                   */
    const float *node_attr;      /* (N, node_attr_dim) or NULL                               */
    int32_t node_attr_dim;
    const int32_t *graph_label;  /* (G) raw class values, or NULL for regression            */
    const float *target;         /* (G, target_dim) regression targets, or NULL              */
    int32_t target_dim;
    const int32_t *edge_label;   /* (E) or NULL: categorical edge features, per entry         */
    const float *edge_attr;      /* (E, edge_attr_dim) or NULL, per entry                    */
    int32_t edge_attr_dim;
} hpj_csr_graphs;

/* Builds a dataset from in-memory graphs, exactly as hpj_dataset_parse_tu
   would from TU files listing the same entries in the same order (row,
   then col: entry e of node v is the line "v+1, col[e]+1" in global ids):
   every entry u->v also gives v->u, so a graph may list each edge once
   or in both directions; self-loops are dropped (counted in self_loops),
   repeated entries too (dup_lines); an edge keeps the label / attributes
   of its first listing. Graph labels are mapped to classes 0..C-1 in
   ascending order of their raw values (class_value keeps the raw ones);
   split is NULL. Give exactly one of graph_label (classification) and
   target (regression). Every graph needs at least one node. name (NULL:
   "dataset") is copied into ds->name. Errors: HPJ_ERR_INPUT with the first
   problem (e.g. "dataset_from_csr: graph 3: node 2 lists neighbour 7, the
   graph has 5 nodes"), HPJ_ERR_NOMEM; *out is zeroed on failure. Free the
   result with hpj_dataset_free. */
HPJDEF hpj_status hpj_dataset_from_csr(const hpj_csr_graphs *in, const char *name, hpj_dataset *out);
HPJDEF void hpj_dataset_free(hpj_dataset *ds);
/* A view of graph g (no copy; valid while ds lives). */
HPJDEF hpj_graph hpj_dataset_graph(const hpj_dataset *ds, int32_t g);

/* ==== partition: API ==== */

/* A multilevel graph partitioner in the METIS family (Karypis & Kumar):
     1. coarsening by heavy-edge matching in a randomised order (random
        matching while all edge weights are equal; leftover vertices that
        share a neighbour are matched too), with a cap on coarse vertex
        weights, until the graph is small or stops shrinking;
     2. an initial partition of the coarsest graph: greedy graph growing
        from random seeds, several trials, each polished by FM;
     3. uncoarsening: the partition is projected level by level and
        refined at each level: Fiduccia-Mattheyses passes with rollback for
        bisections, greedy boundary moves by gain for k-way partitions,
        always under the balance bound below.
   Two methods: HPJ_PART_KWAY coarsens the whole graph once, splits
   the coarsest graph by recursive bisection and refines all k parts
   together on the way up (METIS_PartGraphKway's scheme);
   HPJ_PART_RB bisects recursively, each bisection a complete
   multilevel run (METIS_PartGraphRecursive's scheme, the one the
   Graph-JEPA reference uses).

   Balance: with W the total vertex weight and k' = min(k, n) parts, every
   part may weigh at most
       maxpart = max(floor(ufactor * W / k'), ceil(W / k')).
   The bound is met whenever the vertex weights allow it (always for unit
   weights); with vertex weights the bound can be infeasible and is then
   not guaranteed (in tests the heaviest part stayed within
   ceil(W / k) + max vertex weight - 1).

   Guarantees METIS does not give: for k <= n all k parts are non-empty;
   for k >= n vertex v is part v (n non-empty parts); graphs without
   edges, disconnected graphs and n = 1 work; self-loop entries in a
   hand-built CSR are ignored. Results depend only on (graph, k, options):
   the same seed gives the same partition on every run and thread count. */

typedef enum hpj_part_method {
    HPJ_PART_KWAY = 0, /* multilevel k-way (default)        */
    HPJ_PART_RB = 1    /* multilevel recursive bisection    */
} hpj_part_method;

/* Options; fill with hpj_part_options_default, then change fields. */
typedef struct hpj_part_options {
    int method;     /* hpj_part_method, default HPJ_PART_KWAY: refining
                       all k parts together usually cuts fewer edges than
                       refining each bisection alone, at about rb's cost;
                       rb is what the Graph-JEPA reference used
                       (METIS_PartGraphRecursive)                          */
    int ncuts;      /* 1: independent runs, the lowest cut kept           */
    float ufactor;  /* 1.03: max part weight <= ufactor x W / k, >= 1     */
    uint64_t seed;  /* 1                                                  */
    int niter;      /* 10: refinement passes per level                    */
    int ntrials;    /* 0 = automatic: initial bisection trials            */
} hpj_part_options;

/* Sets the defaults listed in hpj_part_options. */
HPJDEF void hpj_part_options_default(hpj_part_options *o);

/* Reusable scratch: partitioning thousands of small graphs through one
   workspace allocates only for the first few. One workspace per thread;
   results never depend on which workspace (or none) is used. */
typedef struct hpj_part_work hpj_part_work;
/* NULL (and hpj_last_error set) when out of memory. */
HPJDEF hpj_part_work *hpj_part_work_new(void);
/* Frees the workspace and every block it holds; NULL is a no-op. */
HPJDEF void hpj_part_work_free(hpj_part_work *w);

/* Partitions g into k parts: part[v] in 0..k-1 for every vertex. For
   k <= n every one of the k parts is non-empty and the heaviest part
   meets the balance bound above whenever the vertex weights allow it;
   for k >= n vertex v is part v. g must be symmetric (hpj_graph_check
   validates a hand-built CSR; this call only checks what it needs to stay
   memory-safe, in O(n + E)); self-loop entries are ignored. opt may be
   NULL (defaults), w may be NULL (a temporary workspace is used), edgecut
   may be NULL (else it gets the summed weight of the cut edges).
   Deterministic: the same (g, k, opt) gives the same partition on every
   run, thread count and workspace.
   Errors: HPJ_ERR_INPUT for k < 1, part NULL with n > 0, a bad option
   (method, ncuts outside 1..1000, ufactor outside 1..1000 or NaN, niter
   or ntrials outside 0..1000), a malformed CSR (rowptr not ascending, a
   neighbour out of range, a negative vertex or non-positive edge weight),
   a total vertex weight above 2^31 - 1 or total edge weight above
   2^30 - 1; HPJ_ERR_NOMEM. On failure part and edgecut are untouched. */
HPJDEF hpj_status hpj_partition(const hpj_graph *g, int32_t k, const hpj_part_options *opt, hpj_part_work *w,
                                int32_t *part, /* (N) */
                                int64_t *edgecut);

/* Summed weight of the edges of g whose ends lie in different parts
   (self-loops ignored); -1 if g or part is NULL (with n > 0). */
HPJDEF int64_t hpj_partition_cut(const hpj_graph *g, const int32_t *part /* (N) */);

/* Max part weight / (total weight / k); 1 when the total weight is 0;
   -1 if k < 1, an argument is NULL or a part id is outside 0..k-1. */
HPJDEF double hpj_partition_imbalance(const hpj_graph *g, int32_t k, const int32_t *part /* (N) */);

/* Quality of a partition (what `hpjepa partition` prints). */
typedef struct hpj_partition_stats {
    int64_t edgecut;         /* summed weight of edges between parts       */
    int64_t max_part_weight; /* heaviest part                              */
    int64_t total_weight;    /* W                                          */
    double imbalance;        /* max_part_weight / (W / k); 1 when W = 0    */
    int32_t nonempty;        /* parts holding at least one vertex          */
} hpj_partition_stats;

/* Measures a given partition of g into k parts (cut, weights, non-empty
   parts) into *stats. Errors: HPJ_ERR_INPUT if k < 1, stats is NULL or a
   part id is outside 0..k-1; HPJ_ERR_NOMEM. */
HPJDEF hpj_status hpj_partition_evaluate(const hpj_graph *g, int32_t k,
                                         const int32_t *part, /* (N) */
                                         hpj_partition_stats *stats);

/* A whole dataset at once: partitions every graph g of ds at every
   resolution l into k = min(K[l], n_g) parts (what HP-JEPA's tokenizer
   needs), graphs in parallel under OpenMP with one workspace per thread.
   Graph g at resolution l uses the seed
   hpj_rng_u64(hpj_rng_stream(opt->seed, l, g)), so results do not depend
   on the thread count. part[l * N + v] is the part of dataset node v
   (numbered within its graph); nparts[g * L + l] = min(K[l], n_g) when
   nparts is not NULL. Errors: HPJ_ERR_INPUT (L < 1, some K[l] < 1, bad
   options, or a graph rejected by hpj_partition, named in the reason),
   HPJ_ERR_NOMEM. */
HPJDEF hpj_status hpj_partition_dataset(const hpj_dataset *ds, const int32_t *K, /* (L) */
                                        int32_t L, const hpj_part_options *opt,
                                        int32_t *part,   /* (L, N) */
                                        int32_t *nparts); /* (G, L) or NULL */

#ifndef HPJ_NO_STDIO
/* Writes part[0..n-1] as one 0-based id per line (gpmetis's .part file
   layout), atomically: a temporary file renamed into place, so a failure
   never leaves a partial file. Errors: HPJ_ERR_INPUT, HPJ_ERR_IO,
   HPJ_ERR_NOMEM. */
HPJDEF hpj_status hpj_partition_write(const char *path, const int32_t *part, /* (N) */
                                      int32_t n);
#endif

/* ==== tokenizer: API ===================================================== */

#define HPJ_MAX_RES 16 /* most resolutions a model can have */

enum { HPJ_RW_MAX = 0, HPJ_RW_MEAN = 1 };

/* Node random-walk structural encoding of one graph: rw[v][k-1] = the
   diagonal entry ((D^-1 A)^k)_vv for k = 1..rw_dim (an isolated vertex
   gets zeros). scratch: hpj_rwse_scratch_bytes(g->n) bytes, any alignment.
   The result does not depend on the thread count (one thread per call). */
HPJDEF size_t hpj_rwse_scratch_bytes(int32_t n);
HPJDEF void hpj_rwse(const hpj_graph *g, int rw_dim, float *rw /* (n, rw_dim) */, void *scratch);

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
    int32_t *nedge;         /* (num_patches) edges induced on each patch
                               (directed CSR entries between its nodes)      */
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
    hpj_part_options part;  /* partitioner settings                          */
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



/* ==== nn: API ==== */

/* Conventions of every layer below (llm.c style):
   - row-major flat float buffers; a linear layer's weight W is (Dout, Din)
     as in torch, so out = inp W^T + b;
   - forward(out, caches, inp, params, dims) / backward(dinp, dparams,
     dout, inp, params, caches, dims); every backward ACCUMULATES (+=) into
     its gradient outputs (zero them once per step) and a NULL gradient
     pointer means "not needed";
   - nothing allocates: callers pass outputs, caches and scratch;
   - the functions do not validate sizes (they are called in the inner
     loop with sizes the model already checked): sizes are >= 0 and the
     buffers are as large as the shape comments say;
   - OpenMP inside each call over disjoint outputs; every sum is taken by
     one thread in a fixed order, so results are bit-identical for any
     thread count. */

/* ==== nn: GEMM ==== */

/* C (M,N) = alpha * op(A) op(B) + beta * C, row-major.
   op(A) is (M,K): A is (M,K) with leading dim lda, or if transA, A is (K,M).
   op(B) is (K,N): B is (K,N) with leading dim ldb, or if transB, B is (N,K).
   beta == 0 overwrites C without reading it (NaN in C does not propagate);
   alpha == 0 or K == 0 gives C = beta*C without reading A or B.
   Determinism: every element is a chain of multiply-adds over k in
   increasing order, restarted every 256 values of k, the blocks' sums
   combined in order; the bits of C depend neither on the thread count nor
   on the paths level (hpj_set_paths: the reference loops, or a packed,
   blocked GEMM with portable, AVX2 or AVX-512 micro-kernels).
   Threads: large products use the calling thread's OpenMP team (a call
   from inside a parallel region runs on its own thread). Nothing is
   allocated; concurrent calls from several threads are safe.
   The caller guarantees lda >= (transA ? M : K), ldb >= (transB ? K : N),
   ldc >= N, as BLAS does (nothing is checked). */
HPJDEF void hpj_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* ==== nn: linear ==== */

/* out (N,Dout) = inp (N,Din) W^T + b, with W (Dout,Din) and b (Dout) or NULL. */
HPJDEF void hpj_linear_forward(float *out, const float *inp, const float *W, const float *b, int N, int Din,
                               int Dout);
/* Differentiates out = inp W^T + b:
   dinp (N,Din) += dout (N,Dout) W ; dW (Dout,Din) += dout^T inp ;
   db (Dout) += column sums of dout. Any gradient may be NULL. */
HPJDEF void hpj_linear_backward(float *dinp, float *dW, float *db, const float *dout, const float *inp,
                                const float *W, int N, int Din, int Dout);

/* ==== nn: activations and dropout ==== */

/* out (n) = max(inp (n), 0); out may alias inp. */
HPJDEF void hpj_relu_forward(float *out, const float *inp, size_t n);
/* Differentiates out = relu(inp) from the saved output:
   dinp (n) += dout (n) * (out (n) > 0). */
HPJDEF void hpj_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
/* out (n) = inp (n) * Phi(inp) = 0.5 inp (1 + erf(inp / sqrt 2)), the exact GELU
   (torch's default, not the tanh approximation); out may alias inp.
   Phi is evaluated by the library's own polynomials (absolute error
   < 1e-7, and the lower tail keeps its relative accuracy, unlike
   1 + erff(x) in float), the same bits on every build and path. */
HPJDEF void hpj_gelu_forward(float *out, const float *inp, size_t n);
/* Differentiates out = inp Phi(inp):
   dinp (n) += dout (n) * (Phi(inp) + inp phi(inp)), inp (n). */
HPJDEF void hpj_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);
/* Inverted dropout over n floats, out (n) from inp (n), mask (n) bytes:
   element i is kept with probability 1-p; kept elements
   are scaled by 1/(1-p), dropped ones are 0; mask[i] = 1 if kept. The draw
   for element i is a hash of (seed, step, salt, i) (a counter-based stream
   built on hpj_rng_stream), so it never depends on the thread count or on
   how the buffer is split. p <= 0 copies and sets every mask byte to 1;
   p >= 1 drops everything. out may alias inp; mask may be NULL (then the
   backward cannot be called). */
HPJDEF void hpj_dropout_forward(float *out, uint8_t *mask, const float *inp, size_t n, float p, uint64_t seed,
                                uint64_t step, uint64_t salt);
/* Differentiates out = inp * mask / (1-p):
   dinp (n) += dout (n) * mask (n) / (1-p). */
HPJDEF void hpj_dropout_backward(float *dinp, const float *dout, const uint8_t *mask, size_t n, float p);

/* ==== nn: normalisation ==== */

/* LayerNorm over the last dim D of inp (N,D): out (N,D) = (x - mean) rstd gamma +
   beta with the biased variance and rstd = 1/sqrt(var + eps) (torch's eps
   is 1e-5). Saves mean (N) and rstd (N) for the backward. gamma and beta
   (D) may be NULL (ones / zeros). out may alias inp. */
HPJDEF void hpj_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gamma,
                                  const float *beta, int N, int D, float eps);
/* Differentiates the LayerNorm above (xhat = (x - mean) rstd, out = xhat gamma + beta):
   dinp (N,D) += rstd (g - mean(g) - xhat mean(g xhat)) with g = dout gamma,
   from dout (N,D), inp (N,D), gamma (D) or NULL, mean (N), rstd (N);
   dgamma (D) += sum over rows of dout xhat ; dbeta (D) += sum of dout. */
HPJDEF void hpj_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D);
/* BatchNorm1d in training mode over inp (N,D) (N samples, D channels), as
   torch: out (N,D) normalises each channel with the batch mean and the
   biased variance,
   saves mean (D) and rstd (D) for the backward, and, when running_mean /
   running_var (D) are not NULL, updates them with
   r = (1 - momentum) r + momentum * stat (torch's momentum is 0.1) using
   the UNBIASED variance var * N/(N-1) for running_var.
   N == 1 (torch refuses it): the variance is 0, so every output equals
   beta; running_mean is updated and running_var is left unchanged (the
   unbiased variance of one sample is undefined). gamma/beta may be NULL.
   The channel sums run in double in a fixed order (the same bits for any
   thread count); with several threads the fast paths of this and
   hpj_batchnorm_backward borrow 68 D doubles through HPJ_MALLOC (if that
   fails, the same sums run on one thread). */
HPJDEF void hpj_batchnorm_forward_train(float *out, float *mean, float *rstd, float *running_mean,
                                        float *running_var, const float *inp, const float *gamma,
                                        const float *beta, int N, int D, float momentum, float eps);
/* BatchNorm1d in evaluation mode: out (N,D) = (inp (N,D) - running_mean) /
   sqrt(running_var + eps) gamma + beta, per channel; all four vectors (D),
   gamma/beta may be NULL. */
HPJDEF void hpj_batchnorm_forward_eval(float *out, const float *inp, const float *gamma, const float *beta,
                                       const float *running_mean, const float *running_var, int N, int D,
                                       float eps);
/* Differentiates the training-mode forward (xhat = (x - mean) rstd per channel):
   dinp (N,D) += gamma rstd (dout - mean_rows(dout) - xhat mean_rows(dout xhat)),
   from dout (N,D), inp (N,D), gamma (D) or NULL and the saved mean, rstd (D);
   dgamma (D) += sum of dout xhat ; dbeta (D) += sum of dout. */
HPJDEF void hpj_batchnorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D);

/* ==== nn: GINE message passing ==== */

/* GINE aggregation on a CSR over N rows (many small graphs side by side,
   ids already offset): out (N,D)[i] = (1+eps) h[i] + sum over k in
   rowptr[i]..rowptr[i+1]-1 of relu(h[col[k]] + e[k]), with h (N,D),
   rowptr (N+1), col (E); e (E,D) may be NULL (zeros); e[k] is the feature
   of the message edge col[k] -> i. */
HPJDEF void hpj_gine_forward(float *out, const float *h, const float *e, const int32_t *rowptr, const int32_t *col,
                             int N, int D, float eps);
/* Differentiates the GINE forward as gathers (the CSR must be symmetric;
   rev (E) gives the reverse entry of each k, see hpj_csr_reverse; rev
   may be NULL when e is NULL):
   dh (N,D)[j] += (1+eps) dout[j] + sum over k in row j of dout[col[k]] [h[j] + e[rev[k]] > 0];
   de (E,D)[k] += dout[i] [h[col[k]] + e[k] > 0] for k in row i;
   deps (one float) += sum_i dout[i].h[i], reduced over 64 fixed blocks in
   double. Any gradient may be NULL; de is ignored when e is NULL. */
HPJDEF void hpj_gine_backward(float *dh, float *de, float *deps, const float *dout, const float *h, const float *e,
                              const int32_t *rowptr, const int32_t *col, const int32_t *rev, int N, int D,
                              float eps);
/* GINE whose edges all carry the same feature e (D), as when the data has
   no edge labels (the edge encoder then maps every edge to its bias):
   out (N,D)[i] = (1+eps) h[i] + sum over k in row i of relu(h[col[k]] + e).
   The same numbers as hpj_gine_forward with e repeated on every edge,
   without an (E, D) array. */
HPJDEF void hpj_gine_forward_shared(float *out, const float *h, const float *e, const int32_t *rowptr,
                                    const int32_t *col, int N, int D, float eps);
/* Differentiates hpj_gine_forward_shared (the CSR must be symmetric):
   dh (N,D)[j] += (1+eps) dout[j] + [h[j] + e > 0] sum over k in row j of dout[col[k]];
   de (D) += the sum over j of the masked message sums above, in double
   over 32 fixed row blocks added in block order (the same bits for any
   thread count); deps as in hpj_gine_backward. Any gradient may be NULL.
   With several threads it borrows 32 D doubles through HPJ_MALLOC (if
   that fails, the same sums run on one thread). */
HPJDEF void hpj_gine_backward_shared(float *dh, float *de, float *deps, const float *dout, const float *h,
                                     const float *e, const int32_t *rowptr, const int32_t *col, int N, int D,
                                     float eps);
/* The reverse entries of a symmetric CSR over N rows with sorted columns
   (as hpj_graph holds): rev (E)[k] = the entry k' of row col[k] whose
   column is i, for k in row i (binary search, O(E log degree)).
   HPJ_ERR_INPUT, with rev zeroed, if a column is out of range or an edge
   has no reverse. */
HPJDEF hpj_status hpj_csr_reverse(int32_t *rev, const int32_t *rowptr, const int32_t *col, int N);
/* Transposes index lists: list s is idx[ptr[s]..ptr[s+1]-1] (values in
   0..R-1, repeats allowed); writes tptr (R+1) and tidx (ptr[S]) so that
   row r's list tidx[tptr[r]..tptr[r+1]-1] holds every s whose list
   contains r (once per occurrence, ascending). HPJ_ERR_INPUT, with both
   outputs zeroed, on an index out of range. */
HPJDEF hpj_status hpj_index_transpose(int32_t *tptr, int32_t *tidx, const int32_t *ptr, const int32_t *idx, int S,
                                      int R);

/* ==== nn: pooling ==== */

/* Segment s is rows segptr[s]..segptr[s+1]-1 of inp (N,D) (segptr (S+1),
   non-decreasing); out (S,D)[s] = their mean, zeros if empty. */
HPJDEF void hpj_segment_mean_forward(float *out, const float *inp, const int32_t *segptr, int S, int D);
/* Differentiates the segment mean: dinp (N,D)[r] += dout (S,D)[s] / |s| for r in s. */
HPJDEF void hpj_segment_mean_backward(float *dinp, const float *dout, const int32_t *segptr, int S, int D);
/* out (S,D)[s][d] = max over the segment's rows of inp[r][d] and argmax
   (S,D) = that row (the first on ties); empty segment: 0 and -1. */
HPJDEF void hpj_segment_max_forward(float *out, int32_t *argmax, const float *inp, const int32_t *segptr, int S,
                                    int D);
/* Differentiates the segment max: dinp (N,D)[argmax[s][d]][d] += dout (S,D)[s][d]. The
   segments are disjoint, so this is parallel over segments. */
HPJDEF void hpj_segment_max_backward(float *dinp, const float *dout, const int32_t *argmax, int S, int D);
/* Pooling over index lists (rows may belong to several lists):
   out (S,D)[s] = mean of inp (R,D)[idx[k]] for k in ptr[s]..ptr[s+1]-1
   (ptr (S+1), idx (ptr[S]); idx NULL: rows k, the segment mean), zeros if
   empty. */
HPJDEF void hpj_gather_mean_forward(float *out, const float *inp, const int32_t *ptr, const int32_t *idx, int S,
                                    int D);
/* Differentiates the gather mean as a gather over the transposed lists
   (hpj_index_transpose; tptr (R+1), tidx (ptr[S])): for input row r < R,
   dinp (R,D)[r] += sum over s in tidx[tptr[r]..tptr[r+1]-1] of
   dout (S,D)[s] / (ptr[s+1] - ptr[s]). */
HPJDEF void hpj_gather_mean_backward(float *dinp, const float *dout, const int32_t *ptr, const int32_t *tptr,
                                     const int32_t *tidx, int R, int D);

/* ==== nn: attention ==== */

/* Multi-head self-attention core on packed qkv (B,T,3D) laid out per token
   as [q(D) | k(D) | v(D)], H heads of width D/H (H divides D).
   P = softmax(q k^T / sqrt(D/H)) over the keys whose keymask (B,T) byte is
   1 (NULL = all keys); if adj (B,T,T) is not NULL, P is multiplied
   elementwise by adj[b] AFTER the softmax with no renormalisation
   (Graph-JEPA's Hadamard target encoder); out (B,T,D) = concat_h(P_h V_h).
   att (B,H,T,T) receives the softmax probabilities (before adj), 0 at
   masked keys. A query whose keys are all masked gets a zero output. */
HPJDEF void hpj_attention_forward(float *out, float *att, const float *qkv, const uint8_t *keymask,
                                  const float *adj, int B, int T, int D, int H);
/* Differentiates the attention forward (out_i = sum_j P_ij adj_ij v_j,
   P_i = softmax(s_i), s_ij = q_i.k_j / sqrt(D/H)) from dout (B,T,D) and
   the saved att (B,H,T,T): dqkv (B,T,3D) += the gradient. Masked keys and
   fully masked queries get exactly zero gradient. */
HPJDEF void hpj_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                                   const uint8_t *keymask, const float *adj, int B, int T, int D, int H);

/* ==== nn: transformer block ==== */

/* Pre-LN Transformer block (no final LN), on B sequences of T tokens:
     qkv = LN1(x) Wqkv^T + bqkv             Wqkv (3D, D)
     x1  = x + attn(qkv) Wo^T + bo          (attention as above)
     y   = x1 + act(LN2(x1) W1^T + b1) W2^T + b2   W1 (F, D), W2 (D, F)
   with LayerNorm eps 1e-5 and act = HPJ_ACT_RELU or HPJ_ACT_GELU. */
enum { HPJ_ACT_RELU = 0, HPJ_ACT_GELU = 1 };
typedef struct hpj_block_params {
    float *ln1_g, *ln1_b; /* (D) */
    float *Wqkv, *bqkv;   /* (3D, D), (3D) */
    float *Wo, *bo;       /* (D, D), (D) */
    float *ln2_g, *ln2_b; /* (D) */
    float *W1, *b1;       /* (F, D), (F) */
    float *W2, *b2;       /* (D, F), (D) */
} hpj_block_params;
/* Floats of one block's parameters (= of its gradients). */
HPJDEF size_t hpj_block_param_count(int D, int F);
/* Points p's fields into flat (hpj_block_param_count floats), in the field
   order above, without gaps. Bind gradients, Adam moments and EMA copies
   the same way. */
HPJDEF void hpj_block_params_bind(hpj_block_params *p, float *flat, int D, int F);
/* Initialises a block as the Graph-JEPA reference does: LayerNorms 1 / 0;
   Wqkv xavier-uniform with gain 1/sqrt(2), Wo xavier-uniform, their biases
   0; W1, b1, W2, b2 torch's Linear default U(-1/sqrt(fan_in), +). */
HPJDEF void hpj_block_params_init(hpj_block_params *p, int D, int F, hpj_rng *r);

/* Activation cache of one block for B*T tokens. Each array starts on a
   64-byte boundary of the flat buffer when the buffer itself is aligned. */
typedef struct hpj_block_cache {
    float *ln1;      /* (B*T, D) */
    float *ln1_mean; /* (B*T) */
    float *ln1_rstd; /* (B*T) */
    float *qkv;      /* (B*T, 3D) */
    float *att;      /* (B, H, T, T) */
    float *atty;     /* (B*T, D) attention output before Wo */
    float *x1;       /* (B*T, D) */
    float *ln2;      /* (B*T, D) */
    float *ln2_mean; /* (B*T) */
    float *ln2_rstd; /* (B*T) */
    float *fch;      /* (B*T, F) */
    float *fch_act;  /* (B*T, F) */
} hpj_block_cache;
HPJDEF size_t hpj_block_cache_count(int B, int T, int D, int H, int F);
HPJDEF void hpj_block_cache_bind(hpj_block_cache *c, float *flat, int B, int T, int D, int H, int F);
/* Floats of scratch hpj_block_backward needs: B*T*(5D + 2F), plus padding. */
HPJDEF size_t hpj_block_scratch_count(int B, int T, int D, int H, int F);
/* out (B*T, D) = block(inp (B*T, D)); fills the cache c. keymask (B,T) and
   adj (B,T,T) are passed to the attention (either may be NULL). out must
   not alias inp. With T = 1 and neither keymask nor adj the attention is
   the identity on v: c->qkv is left unset and only v is computed. */
HPJDEF void hpj_block_forward(float *out, hpj_block_cache *c, const float *inp, const hpj_block_params *p,
                              const uint8_t *keymask, const float *adj, int B, int T, int D, int H, int F, int act);
/* Differentiates the block: dinp (B*T, D) += d(out)/d(inp)^T dout, and the
   parameter gradients dp (bound like the parameters) += theirs. dinp or dp
   may be NULL. scratch: hpj_block_scratch_count floats (overwritten). */
HPJDEF void hpj_block_backward(float *dinp, hpj_block_params *dp, const float *dout, const float *inp,
                               const hpj_block_params *p, const hpj_block_cache *c, float *scratch,
                               const uint8_t *keymask, const float *adj, int B, int T, int D, int H, int F, int act);

/* ==== nn: losses ==== */

/* SmoothL1 with threshold beta (torch's Huber-like SmoothL1Loss): per
   element of pred (n), target (n): d = pred - target, l = 0.5 d^2 / beta if |d| < beta else
   |d| - 0.5 beta (beta <= 0: l = |d|). Returns scale * sum of l, summed in
   double over 64 fixed blocks; dpred (n) += scale * dl/dpred if not NULL
   (sign(d) with sign(0) = 0 outside the quadratic zone). */
HPJDEF double hpj_smooth_l1(const float *pred, const float *target, float *dpred, size_t n, float beta,
                            float scale);
/* Softmax cross-entropy over C classes of logits (N,C) with labels (N):
   returns scale * sum over rows of
   logsumexp(logits[i]) - logits[i][labels[i]] (in double); dlogits (N,C) +=
   scale * (softmax - onehot) if not NULL. Rows whose label is outside
   0..C-1 (e.g. -1 for "no label") are ignored: no loss, no gradient. */
HPJDEF double hpj_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int N, int C, float scale);

/* ==== nn: optimiser, schedules, clipping ==== */

/* One Adam step over n flat parameters p with gradients g and moments m, v
   (n each, zero before the first step); t is the 1-based step count for
   the bias corrections. mode (the config's optimizer, HPJ_OPT_*):
   HPJ_OPT_ADAM: torch.optim.Adam (g += wd p before the moments);
   HPJ_OPT_ADAMW: torch.optim.AdamW (p -= lr wd p first);
   HPJ_OPT_ADAM_ACTIVE: Adam's g += wd p only where g != 0, so a parameter
   the loss does not reach this step is not decayed (with no gradient ever,
   its moments stay 0 and it keeps its value).
   Then m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
   p -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps), as torch computes it. */
HPJDEF void hpj_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                          float beta2, float eps, float weight_decay, int mode, int64_t t);
enum { HPJ_SCHED_CONSTANT = 0, HPJ_SCHED_COSINE = 1 };
/* Learning rate at 0-based step of total steps: for step < warmup a linear
   ramp base_lr (step+1)/warmup (so it starts from 0 and reaches base_lr at
   the end of the warmup); then base_lr (constant) or the cosine decay
   min_lr + (base_lr - min_lr)(1 + cos(pi s/(total - warmup)))/2 with
   s = step - warmup, which reaches min_lr at step total and stays there. */
HPJDEF float hpj_lr_at(int schedule, float base_lr, float min_lr, int64_t step, int64_t total, int64_t warmup);
/* Global L2 norm of g (n) (all gradients in one flat buffer), summed in
   double over 64 fixed blocks. If
   max_norm > 0 and the norm exceeds it, g is scaled by max_norm/norm.
   Returns the norm before clipping (inf/NaN if g holds them, and then g is
   left unchanged so the caller can detect and report it). */
HPJDEF double hpj_grad_clip(float *g, size_t n, float max_norm);

/* ==== nn: EMA ==== */

/* target (n) = m target + (1-m) online (n), m = momentum. */
HPJDEF void hpj_ema_update(float *target, const float *online, size_t n, float momentum);
/* EMA momentum at 0-based step of total: linear from start (step 0) to end
   (step total), constant end afterwards; start if total <= 0. */
HPJDEF float hpj_ema_momentum(float start, float end, int64_t step, int64_t total);

/* ==== nn: initialisers ==== */

/* w (n) ~ U(-bound, bound), drawn in order from r. */
HPJDEF void hpj_init_uniform(float *w, size_t n, float bound, hpj_rng *r);
/* w (fan_out, fan_in) ~ U(-a, a), a = gain sqrt(6 / (fan_in + fan_out)). */
HPJDEF void hpj_init_xavier_uniform(float *w, int fan_out, int fan_in, float gain, hpj_rng *r);

/* ==== config: API ======================================================== */

enum { HPJ_MODE_HP = 0, HPJ_MODE_GRAPH_JEPA = 1 };
enum { HPJ_OPT_ADAM = 0, HPJ_OPT_ADAMW = 1, HPJ_OPT_ADAM_ACTIVE = 2 };
enum { HPJ_READOUT_CONCAT = 0, HPJ_READOUT_UNIFORM = 1, HPJ_READOUT_TASK = 2 };
enum { HPJ_TOKENS_ALONE = 0, HPJ_TOKENS_PRESENT = 1, HPJ_TOKENS_GRAPH = 2 };

/* Every setting of a model and its training. Keys of the config files
   (`key = value` lines) are the field names, except where noted.
   Settings of the method only: whether the faster siblings of the
   reference code run is no setting of a model (hpj_set_paths chooses).
   The keys input_table, target_fold and layer_classes, speed switches of
   older versions, are still accepted (with 0 or 1) and ignored, so older
   config files and checkpoints load; nothing writes them. */
typedef struct hpj_config {
    int mode;                      /* mode: hp | graph-jepa; their one difference is
                                      the activity rule: graph-jepa keeps every
                                      resolution active on every graph (no K_l <= 2n),
                                      as the Graph-JEPA code cuts any graph into its
                                      P parts; the rest is in the config files       */
    int L;                         /* number of resolutions (from `resolutions`)      */
    int32_t K[HPJ_MAX_RES];        /* resolutions: capacities, e.g. 2,4,8,16         */
    int32_t M[HPJ_MAX_RES];        /* targets: M_l per resolution, e.g. 1,2,3,4; a
                                      graph with k parts draws min(M_l, k - 1)        */
    int dim;                       /* d, token width                                  */
    int blocks, heads;             /* Transformer blocks, attention heads             */
    int ffn;                       /* FFN hidden width F; 0 = 2 x dim, which follows
                                      a changed dim (the shipped configs use 0)      */
    int ffn_act;                   /* ffn_act: relu | gelu                            */
    int gnn_layers;                /* GINE layers of the patch encoder                */
    int rw_dim;                    /* d_RW                                            */
    int rw_reduce;                 /* rw_reduce: max | mean                           */
    int pred_layers;               /* predictor linear layers (reference: 3)          */
    int target_adj;                /* 1: target encoder weights attention by patch
                                      overlap (Graph-JEPA's Hadamard encoder)         */
    int ema_copy_init;             /* ema_init: independent (0) | copy (1)            */
    int patch_mixing;              /* 1: patch-mean mixing + copy averaging between
                                      GNN layers (the reference)                      */
    int gnn_out_linear;            /* 1: GINE block ends in Linear_out (the reference);
                                      0: out = h + branch (one d x d GEMM less)       */
    int patch_tokens;              /* patch_tokens: alone | present | graph. What
                                      a patch token is when patch mixing averages
                                      node copies. alone: z_i = g_eta(G[P~_i]),
                                      each patch encoded by itself (the paper), so
                                      a token is one function of its patch in the
                                      context path, the target path and the
                                      embedding pass. graph: copies averaged over
                                      all k patches of the graph in every path
                                      (the Graph-JEPA code's way): training runs
                                      the patch encoder once over every patch of
                                      each sampled graph and takes the context
                                      and target tokens from that pass, as the
                                      embedding pass does. present: copies
                                      averaged over the patches that share the
                                      call (one context, the sampled targets, all
                                      k when embedding: three different
                                      functions); checkpoints of format 1 load
                                      with it                                    */
    float lr, min_lr, weight_decay;
    int optimizer;                 /* optimizer: adam | adamw | adam_active (Adam's
                                      coupled decay only on parameters whose loss
                                      gradient is non-zero: see hpj_adam_step)    */
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
    int part_trials;               /* initial bisection trials of every partition,
                                      0 = automatic (rb: 6); fewer make the per-epoch
                                      re-partitioning faster for slightly more cut
                                      edges                                          */
    int node_vocab, edge_vocab;    /* minimum one-hot widths (ZINC: 28, 4)            */
    int node_attr;                 /* 1: append node attributes to the input          */
    int node_degree;               /* c > 0: append the one-hot of min(degree, c)
                                      (c + 1 columns; the HP-JEPA paper calls IMDB's
                                      inputs one-hot degrees, the Graph-JEPA
                                      reference uses a constant); 0: off             */
    int readout;                   /* readout: concat | uniform | task                */
    float lambda_unif;             /* uniform share of the task weighting             */
    float probe_alpha;             /* probe penalty, as hpj_probe_options.alpha       */
    int probe_select;              /* probe_select: fixed (0) | cv (1): `hpjepa eval`
                                      picks the probe's penalty from one absolute
                                      grid, 1e-5..1e4 by decades: classification by
                                      5-fold CV on the training folds only,
                                      regression on the validation split; fixed
                                      uses probe_alpha as it is                      */
    int train_embed;               /* train_embed: fixed (0) | repartition (1):
                                      `hpjepa eval` embeds the training graphs with
                                      their fixed evaluation partition, or with a
                                      fresh training-style one (edge drop; the
                                      Graph-JEPA reference's train loader); the
                                      held-out graphs always use the fixed one      */
    uint64_t seed;
    int threads;                   /* 0 = OpenMP default                              */
} hpj_config;

HPJDEF void hpj_config_default(hpj_config *c);
/* Sets one key from its text value; HPJ_ERR_INPUT names the key and value. */
HPJDEF hpj_status hpj_config_set(hpj_config *c, const char *key, const char *value);

/* The keys hpj_config_set accepts, one table that drives the parser, the
   defaults and the written text (so a key is in it or not accepted at
   all, the retired keys input_table, target_fold and layer_classes aside:
   accepted with 0 or 1 and ignored, they are not in it): for tools that
   list or check settings, and for the tests that hold every key to its
   range and to the round trip through a checkpoint. */
typedef enum hpj_config_kind {
    HPJ_KEY_INT = 0,  /* an integer in lo..hi                                   */
    HPJ_KEY_REAL = 1, /* a number in lo..hi, kept as a float (the range is
                         compared in float, so every float that hpj_config_format
                         writes for an accepted value reads back the same)     */
    HPJ_KEY_WORD = 2, /* one of `words`; the n-th word sets the value n         */
    HPJ_KEY_LIST = 3, /* 1..HPJ_MAX_RES comma-separated integers in lo..hi      */
    HPJ_KEY_SEED = 4  /* an unsigned 64-bit integer                             */
} hpj_config_kind;
typedef struct hpj_config_key {
    const char *name;  /* as written in config files, e.g. "dim"              */
    int kind;          /* hpj_config_kind                                     */
    double lo, hi;     /* INT, REAL, LIST: the accepted range                 */
    const char *words; /* WORD: the accepted words, space-separated           */
    size_t offset;     /* where the value lives: offsetof(hpj_config, field),
                          an int (INT, WORD), float (REAL), int32_t[HPJ_MAX_RES]
                          (LIST; `resolutions` also sets L) or uint64_t (SEED) */
    const char *def;   /* the default, as a config file writes it             */
} hpj_config_key;
/* The table of every key; *count (if not NULL) gets its length. */
HPJDEF const hpj_config_key *hpj_config_keys(int *count);
/* Parses `key = value` lines (# comments); name is used in messages. */
HPJDEF hpj_status hpj_config_parse(hpj_config *c, const char *text, size_t len, const char *name);
#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_config_load(hpj_config *c, const char *path);
#endif
/* Checks every key against its range in hpj_config_keys (a config set in
   code is held to what a file may set) and the keys' consistency
   (resolution list vs targets, heads | dim). */
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
   h' = Wout (h + ReLU(BN2(W2 ReLU(BN1(W1 agg))))) + bout (without Wout,
   bout when gnn_out_linear = 0: h' = h + ReLU(...); the last layer's
   Wout, bout apply to the patch means, the same map),
   agg = (1+eps) h_i + sum_j ReLU(h_j + e_ji); layers > 0 first mix in the
   patch mean through ReLU(BNu(Wu mean)) (and, with patch_tokens = present
   or graph, average node copies over the patches of the call). */
typedef struct hpj_gnn_params {
    float *eps;             /* (1)                                          */
    float *W1;              /* (D, D) no bias                               */
    float *bn1_g, *bn1_b;   /* (D)                                          */
    float *W2;              /* (D, D) no bias                               */
    float *bn2_g, *bn2_b;   /* (D)                                          */
    float *Wout, *bout;     /* (D, D), (D); NULL when gnn_out_linear = 0    */
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
    float *sq_W, *sq_g, *sq_b;      /* (D, R) no bias, BN (D), (D): e_xi,
                                       the structural-query encoder          */
    float *pred_W[HPJ_MAX_PRED];    /* (D, D) hidden layers, (2, D) last    */
    float *pred_b[HPJ_MAX_PRED];    /* (D) hidden, (2) last                 */
    hpj_block_params blk[HPJ_MAX_BLOCKS]; /* online token encoder f_theta   */
} hpj_params;

/* BatchNorm running statistics of the patch encoder g_eta and the
   structural-query encoder e_xi (saved in checkpoints, not trained). A
   model keeps one set per resolution: training normalises each
   resolution's step with its own batch's statistics, and patch sizes,
   in-patch degrees and the RWSE reductions all shift with the resolution,
   so resolution l's step moves set l and its embedding pass reads set l. */
typedef struct hpj_bn_stats {
    float *bn1_m[HPJ_MAX_GNN], *bn1_v[HPJ_MAX_GNN]; /* (D) each */
    float *bn2_m[HPJ_MAX_GNN], *bn2_v[HPJ_MAX_GNN];
    float *bnu_m[HPJ_MAX_GNN], *bnu_v[HPJ_MAX_GNN];
    float *sq_m, *sq_v;
} hpj_bn_stats;

/* A communicator for data-parallel pretraining: R processes (ranks) train
   one model together, each on its share of every minibatch, and meet in
   the collectives below (the library calls them from the thread that
   called hpj_pretrain, never from two threads at once). Each sum replaces
   buf[0..n) on every rank by the elementwise sum over all ranks, the same
   bits on every rank, and returns 0 (non-zero: the transport failed);
   bcast copies rank 0's bytes to every rank. See hpj_model_set_comm. */
typedef struct hpj_comm {
    int rank, size;     /* this process (0..size-1) and how many train together */
    void *user;         /* handed to the callbacks */
    int (*sum_float)(void *user, float *buf, size_t n);
    int (*sum_double)(void *user, double *buf, size_t n);
    int (*sum_int64)(void *user, int64_t *buf, size_t n);
    int (*bcast)(void *user, void *buf, size_t bytes);
} hpj_comm;

typedef struct hpj_model {
    hpj_config cfg;
    int D, F, Fe, R, Fh, H;         /* width, node/edge input, d_RW, FFN, heads */
    /* input encoding (fixed by the dataset the model was made for) */
    int node_onehot;                /* one-hot width of node labels (0: none) */
    int32_t node_label_min;
    int node_attr_dim;              /* node attributes appended (0: none)     */
    int node_deg;                   /* one-hot degree columns (0: none)       */
    int edge_onehot;                /* one-hot width of edge labels (0: none) */
    int32_t edge_label_min;
    size_t num_params, enc_offset, enc_count, num_stats;
    float *mem;                     /* params | grads | adam_m | adam_v       */
    float *params, *grads, *adam_m, *adam_v; /* (num_params) each           */
    float *ema;                     /* (enc_count) EMA target encoder         */
    float *stats;                   /* (num_stats) BN running statistics:
                                       cfg.L sets, resolution l's from
                                       l * num_stats / cfg.L on              */
    hpj_params p, g;                /* views of params and grads              */
    hpj_block_params tgt[HPJ_MAX_BLOCKS]; /* views of ema                    */
    hpj_bn_stats bn[HPJ_MAX_RES];   /* views of stats, one set per resolution */
    int64_t step;                   /* optimizer steps taken                  */
    int64_t epoch;                  /* epochs completed                       */
    int adam_state;                 /* 1: adam_m / adam_v hold the run's      */
                                    /* moments (it trained, or was loaded     */
                                    /* from a checkpoint saved with them)     */
    const hpj_comm *comm;           /* data-parallel pretraining over these    */
                                    /* ranks (hpj_model_set_comm); NULL: one  */
                                    /* process. Never saved.                  */
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

/* Team size under load. With OpenMP, hpj_pretrain and hpj_embed start
   with omp_get_max_threads() threads (cfg.threads sets it when > 0) and,
   between minibatches, time the team against one thread now and then and
   keep the faster: on a machine where another process holds a core, a
   team whose threads cannot all run at once waits at every barrier of the
   step, and one thread is then faster. The results are the same bits for
   any team size, so this changes speed only. 0 keeps the team size fixed
   (benchmarks); 1 (the default) adapts. Set it before training starts;
   it is one setting for the process. Adapting is part of the fast part: a
   -DHPJ_REFERENCE build keeps the team fixed, and this call does nothing. */
HPJDEF void hpj_set_adaptive_threads(int on);

/* Per-resolution JEPA pretraining on the graphs `train` (count n_train):
   epochs m->epoch .. cfg.epochs - 1 (all of them for a new model); for
   every minibatch and l = 1..L one optimizer step on L_l(B) when B_l is
   non-empty, then one EMA update. progress may be NULL. max_steps > 0
   stops after that many optimizer steps (benchmarks; it also shortens the
   LR and EMA schedules to them).
   HPJ_ERR_NUMERIC names the epoch, step and resolution of an inf/NaN;
   HPJ_ERR_INPUT says so when the run would take no step at all (no
   training graph splits into two regions at any resolution), rather than
   hand back the initial weights as if trained.
   Resuming: everything an epoch draws (shuffle, partition, edge drop,
   targets, dropout) is a function of the seed, the epoch and the step, so
   a model saved after an epoch with its optimizer state
   (hpj_model_save(m, path, 1)), loaded and trained on with the same
   graphs continues the run exactly: the same bits as a run never stopped,
   for any thread count. */
HPJDEF hpj_status hpj_pretrain(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                               int64_t max_steps, hpj_progress_fn progress, void *user);
/* The same, stopping once m->epoch reaches until_epoch (1..cfg.epochs; the
   schedules still span cfg.epochs): a long run in parts, checkpointed
   between them. Does nothing when m->epoch >= until_epoch. */
HPJDEF hpj_status hpj_pretrain_until(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                                     int64_t until_epoch, hpj_progress_fn progress, void *user);

/* Data-parallel pretraining: hpj_pretrain and hpj_pretrain_until then run
   on every rank of comm (set it after hpj_model_init / hpj_model_load,
   which clear it; NULL, the default, is one process). Every rank calls
   them with the same dataset, graphs and config; rank 0's parameters, EMA,
   Adam moments, BatchNorm statistics and counters are sent to the others
   first. Each minibatch is cut into R contiguous slices, rank r training
   on slice r; the ranks agree on the minibatch's context and target counts
   (the loss normaliser), sum their BatchNorm statistics and the backward's
   channel sums, and sum their gradients and losses, so a step is the one
   process's step on the whole minibatch up to the order of summation, and
   every rank applies the same update: the parameters stay the same bits
   on every rank. Dropout and sampling draw what one process draws. A
   failure on any rank (bad input, memory, a non-finite value) is agreed
   on, so every rank returns the same status, its reason naming the rank;
   a failed callback returns HPJ_ERR_IO. A size-1 communicator trains the
   bits of NULL. With MPI (the header never includes it):

       static int sum_f(void *u, float *b, size_t n) {
           (void)u; // (n above INT_MAX: loop over chunks)
           return MPI_Allreduce(MPI_IN_PLACE, b, (int)n, MPI_FLOAT, MPI_SUM,
                                MPI_COMM_WORLD) != MPI_SUCCESS;
       }
       ... sum_d (MPI_DOUBLE), sum_i (MPI_INT64_T), and
       static int bc(void *u, void *b, size_t k) {
           (void)u;
           return MPI_Bcast(b, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS;
       }
       hpj_comm comm = {0, 1, NULL, sum_f, sum_d, sum_i, bc};
       MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
       MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
       hpj_model_set_comm(&m, &comm);
       hpj_pretrain(&m, &ds, train, n, 0, NULL, NULL);  // on every rank

   MPI_Allreduce may add in an order that differs between ranks (some
   algorithms do): then reduce to rank 0 and broadcast instead, as
   tools/mpi/hpjepa_mpi.c does. The communicator must outlive the calls. */
HPJDEF void hpj_model_set_comm(hpj_model *m, const hpj_comm *comm);

/* Per-resolution embeddings h^(l) from the frozen EMA encoder: out is
   (n, L, D) (zeros where a resolution is inactive). Resolution l's
   patches are normalised with its own running statistics (m->bn[l]), and
   a graph's embedding depends on that graph only. Graphs are tokenised
   with their fixed evaluation partition (no edge drop). */
HPJDEF hpj_status hpj_embed(const hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, float *out);
/* The same with the partition training epoch `epoch` (0-based) would draw:
   re-partitioned after the config's edge drop when repartition = 1 (the
   fixed partition otherwise). The Graph-JEPA reference embeds its training
   graphs this way (its train loader applies the training transform);
   epoch = cfg.epochs gives a partition that pretraining never saw. */
HPJDEF hpj_status hpj_embed_epoch(const hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n,
                                  int64_t epoch, float *out);
/* Combines per-resolution embeddings H (n, L, D) into out: concat (n, L*D)
   or uniform mean (n, D) (inactive slots count as zeros). */
HPJDEF void hpj_readout(const float *H, int n, int L, int D, int readout, float *out);

/* One training loss evaluation + gradient for tests: runs the step of
   resolution l on the batch `graphs` with the current parameters, without
   updating parameters, EMA or BN statistics; grads are overwritten. The
   gradient treats the targets Phi(u) as constants (stop-gradient), though
   they move with the patch encoder's parameters. */
HPJDEF hpj_status hpj_model_loss(hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, int l,
                                 uint64_t sample_seed, double *loss);

/* GEMM flops of the last hpj_pretrain (forward + backward + target) run by
   the calling thread, for throughput reports. */
HPJDEF double hpj_model_last_flops(void);


/* ==== probe: linear probes, stratified folds, resolution weighting ======

   Frozen embeddings are evaluated with linear probes:
     ridge     minimises ||Y - X W^T - 1 b^T||_F^2 + alpha ||W||_F^2
               (sklearn Ridge(alpha)), targets Y (n, t);
     logreg    minimises sum_i -log softmax(W x_i + b)[y_i] + alpha/2 ||W||_F^2
               (sklearn LogisticRegression(C = 1/alpha)), labels 0..C-1.
   Intercepts are never penalised. With standardize = 1 the penalty applies
   to the weights of the z-scored features (what a StandardScaler pipeline
   fits); the returned model always acts on the ORIGINAL features.

   Numerics (details at each function):
     - features stay float; every sum that enters a result is taken in
       double (the float Gram matrix of ridge only preconditions);
     - ridge solves the normal equations with a double Gram matrix and a
       double Cholesky factor, then refines the solution by preconditioned
       conjugate gradients on the EXACT system, applied in double through
       X. The fast part (HPJ_PROBE_MIXED) forms and factors the Gram
       matrix in float instead, by hpj_gemm, the GEMM of the network
       layers, and lets the same refinement reach the same accuracy
       (mixed-precision refinement in the spirit of LAPACK's dsposv); if
       the refinement cannot converge it falls back to the double path;
     - logreg runs L-BFGS on the centred (and optionally scaled) problem;
       one pass over X computes the loss and the gradient together, and
       the line search along a direction costs no extra pass (the scores
       are linear in the step length);
     - all parallel loops write disjoint outputs; every reduction over
       samples runs over a fixed number of row blocks combined in block
       order, so results are bit-identical for any OpenMP thread count.
       Loops too small to pay for a parallel region run on one thread.

   Task-specific resolution weighting (paper section 3.3): see
   hpj_resweight_fit for every choice the paper leaves open. */

/* Precision of the ridge solve. */
typedef enum hpj_probe_precision {
    HPJ_PROBE_MIXED = 0, /* float Gram/Cholesky + double refinement (default;
                            a fast path: the reference takes the double one) */
    HPJ_PROBE_DOUBLE = 1 /* double Gram and double Cholesky (slower)          */
} hpj_probe_precision;

typedef struct hpj_probe_options {
    double alpha;    /* penalty (>= 0), as hpj_ridge_fit and hpj_logreg_fit define
                        it (logreg: sklearn's C = 1/alpha); default 1.0          */
    int standardize; /* 1: z-score features with the training mean and
                        population std (std 0 -> 1) before fitting; default 0    */
    double tol;      /* logreg: stop when ||grad||_inf <= tol * max(1, ||grad_0||_inf),
                        grad_0 = the gradient at W = 0, b = 0, both of the
                        internal centred problem (so tol is relative to the
                        scale of the problem); default 1e-6                       */
    int max_iter;    /* logreg: L-BFGS iteration cap; default 1000                */
    int precision;   /* ridge: hpj_probe_precision; default HPJ_PROBE_MIXED       */
} hpj_probe_options;

/* Fills the defaults above. */
HPJDEF void hpj_probe_options_default(hpj_probe_options *o);

/* What both probes produce: scores = W x + b. */
typedef struct hpj_linear_model {
    int d, c;         /* features, outputs (classes or targets)                 */
    float *W;         /* (c, d) in the ORIGINAL feature space                   */
    float *b;         /* (c)                                                    */
    int iters;        /* L-BFGS iterations (logreg) or refinement steps (ridge) */
    double grad_norm; /* logreg: final ||grad||_inf of the internal problem;
                         ridge: largest relative residual of the solve          */
} hpj_linear_model;

/* Frees W and b and zeroes the struct (NULL or a zeroed model is fine). */
HPJDEF void hpj_linear_model_free(hpj_linear_model *m);

/* Ridge regression of targets Y (n, t) on X (n, d): minimises
   ||Y - X W^T - 1 b^T||^2 + alpha ||W||^2 with b unpenalised (X and Y are
   centred with their training means, b = mean(Y) - W mean(X)). Uses the
   primal d x d system when d <= n and the dual n x n system (W = X_c^T A,
   (X_c X_c^T + alpha I) A = Y_c) when d > n, as sklearn does. o may be NULL
   (defaults). At most 64 targets per call.
   Precision (o->precision): HPJ_PROBE_MIXED forms the Gram matrix and its
   Cholesky factor in float, then runs preconditioned conjugate gradients
   on the exact system (applied through X in double) until the residual is
   at the rounding level of a double solve (backward error eps ||A||_F^2
   with eps = 1e-15 sqrt(n + d)); if the float factor breaks down it is
   retried with a diagonal shift, and if refinement still cannot converge
   in 30 steps (condition numbers beyond ~1e7) the double path below takes
   over. HPJ_PROBE_DOUBLE (and alpha = 0) forms the Gram matrix and its
   factor in double, then refines the same way (at most 3 steps). The
   mixed path is a fast path: the reference build and
   hpj_set_paths(HPJ_PATHS_REFERENCE) take the double one for both.
   alpha = 0 fails with HPJ_ERR_NUMERIC when the system is singular to
   double precision (a pivot below 1e-14 of its diagonal).
   out->iters = refinement steps, out->grad_norm = worst relative residual
   ||r|| / ||rhs|| of the final solution. Memory: one m x m float (mixed)
   or double Gram matrix, m = min(n, d), plus O((n + d) t) doubles.
   Errors: HPJ_ERR_INPUT (NULL pointers, n, d or t < 1, t > 64, bad
   options), HPJ_ERR_NUMERIC (NaN/inf in X or Y, singular system),
   HPJ_ERR_NOMEM. On failure *out is zeroed. */
HPJDEF hpj_status hpj_ridge_fit(const float *X /*(n, d)*/, const float *Y /*(n, t)*/, int n, int d, int t,
                                const hpj_probe_options *o, hpj_linear_model *out);

/* Multinomial L2 logistic regression with C >= 2 classes (labels y in
   0..C-1): minimises sum_i -log softmax(W x_i + b)[y_i] + alpha/2 ||W||^2.
   For C == 2 it fits the equivalent binary model (one weight vector w,
   bias b0, penalty alpha/2 ||w||^2, as sklearn does) and returns it as
   the two rows W = [-w/2; w/2], b = [-b0/2; b0/2], so softmax(W x + b)
   gives the binary probabilities. L-BFGS (10 pairs, strong Wolfe line
   search) runs on the centred features (and scaled ones with standardize),
   which changes the parametrisation, not the optimum, until the gradient
   test of o->tol or o->max_iter iterations (out->iters says which; hitting
   the cap is not an error: check out->grad_norm). With alpha > 0 the
   optimum is finite, so separable data terminates. A class absent from y
   gets an intercept that drifts to -inf until the gradient test stops it.
   Errors: HPJ_ERR_INPUT (NULL pointers, n or d < 1, C < 2, a label outside
   0..C-1, bad options), HPJ_ERR_NUMERIC (NaN/inf in X, or the objective
   became non-finite), HPJ_ERR_NOMEM. On failure *out is zeroed. */
HPJDEF hpj_status hpj_logreg_fit(const float *X /*(n, d)*/, const int32_t *y /*(n)*/, int n, int d, int C,
                                 const hpj_probe_options *o, hpj_linear_model *out);

/* scores (n, m->c) = X W^T + b, summed in double. Parallel over rows. */
HPJDEF void hpj_linear_model_predict(const hpj_linear_model *m, const float *X /*(n, m->d)*/, int n,
                                     float *scores /*(n, m->c)*/);
/* The predicted class of each row: cls[i] = the argmax of row i's scores
   (hpj_argmax_row's rule), 0..m->c - 1; map it back to a raw label with
   the dataset's class_value. Does nothing when n < 1 or a pointer is NULL. */
HPJDEF void hpj_linear_model_classify(const hpj_linear_model *m, const float *X /*(n, m->d)*/, int n,
                                      int32_t *cls /*(n)*/);
/* Fraction of rows whose argmax score equals y (0 when n < 1). */
HPJDEF double hpj_linear_model_accuracy(const hpj_linear_model *m, const float *X /*(n, m->d)*/,
                                        const int32_t *y /*(n)*/, int n);
/* Index of the largest of s[0..c-1]; the first on ties; NaNs never win
   (0 if all are NaN or c < 1). */
HPJDEF int32_t hpj_argmax_row(const float *s /*(c)*/, int c);

/* Stratified k-fold assignment: fold[i] in 0..k-1. Each class's members are
   shuffled with a stream of the seed (hpj_rng_stream(seed, 0, class)) and
   dealt round-robin, continuing where the previous class stopped, so every
   fold holds floor or ceil of n_c/k members of class c and the fold sizes
   differ by at most one. Errors: HPJ_ERR_INPUT if y or fold is NULL, C < 1,
   k < 2, k > n, or a label is outside 0..C-1 (fold untouched then). */
HPJDEF hpj_status hpj_stratified_folds(const int32_t *y /*(n)*/, int n, int C, int k, uint64_t seed,
                                       int32_t *fold /*(n)*/);

/* ---- task-specific resolution weighting (paper section 3.3) ----
   H (n, L, D) holds per-resolution embeddings h^(l) of n graphs (zeros for
   inactive resolutions). The weights are
       omega = (1 - lambda) softmax(b) + lambda / L      over all L slots
   (no renormalisation over the active ones) and h_task = sum_l omega_l h^(l).

   How b is learned (the paper leaves this open; our choices):
     - only the n rows passed in are used (pass the training split). They
       are split into an inner training part and an inner validation part:
       classification: fold 0 of hpj_stratified_folds(y, n, C,
       min(5, n), seed') is the validation part (20 %, stratified);
       regression: a seeded random 20 % (at least one row each); seed' is
       a splitmix64 hash of seed, so the split differs from the outer
       folds drawn with the same seed.
     - b is learned JOINTLY with a linear head on the UNSMOOTHED mixture
       softmax(b), minimising the probe's own objective on the inner
       training rows: sum of losses + the probe penalty on the head
       weights (binary logistic for C == 2, softmax for C > 2: alpha/2
       ||W||^2; squared error for regression: alpha ||W||^2); b and the
       head's bias are unpenalised. Features are centred per resolution
       with inner-training means (and scaled by the std of the uniform
       mixture when o->standardize), so a mixture change never moves the
       intercept's job onto b.
     - optimiser: L-BFGS (10 pairs, backtracking Armijo line search) in
       two phases. Phase 0 fits the head alone on the uniform mixture
       (b = 0 frozen) to the o->tol gradient test, so that the joint phase
       starts from the uniform readout with its own fitted probe (a
       meaningful baseline rather than an untrained head). Phase 1 then
       optimises b and the head jointly for at most HPJ_RESWEIGHT_ITERS
       iterations ("epochs" of full-batch training), stopping earlier at
       the gradient test or when the validation loss has not improved for
       HPJ_RESWEIGHT_PATIENCE iterations.
     - checkpoint: at the start of phase 1 and after each of its
       iterations the mean validation loss (cross-entropy or squared
       error) of the current (b, head) is computed; the b with the lowest
       one wins (the earliest on ties), so b = 0 (uniform) is kept unless a
       learned mixture generalises better than the uniform one.
     - then the uniform smoothing is applied to softmax(b); the final probe
       (the caller's hpj_logreg_fit / hpj_ridge_fit on hpj_resweight_apply's
       h_task of the whole training split) is fitted afterwards.
     - lambda = 1 (or L = 1) returns exactly 1/L without training.
   C >= 2 with labels y (yreg unused) is classification; C == 0 with
   targets yreg (n) (y unused) is regression.
   Errors: HPJ_ERR_INPUT (NULL pointers, n < 2, L or D < 1, lambda outside
   [0, 1], C == 1 or C < 0, labels outside 0..C-1, bad options),
   HPJ_ERR_NUMERIC (NaN/inf in H or yreg), HPJ_ERR_NOMEM. On failure omega
   is untouched. */
#ifndef HPJ_RESWEIGHT_ITERS
#define HPJ_RESWEIGHT_ITERS 100   /* L-BFGS iterations at most          */
#endif
#ifndef HPJ_RESWEIGHT_PATIENCE
#define HPJ_RESWEIGHT_PATIENCE 20 /* stop after this many without a better validation loss */
#endif
typedef struct hpj_resweight_info {
    int n_train, n_val;   /* sizes of the inner split                             */
    int iters;            /* joint (phase 1) L-BFGS iterations run                */
    int best_iter;        /* joint iteration of the chosen checkpoint (0 = uniform) */
    double val_loss_best; /* mean validation loss at the checkpoint               */
    double val_loss_last; /* mean validation loss after the last iteration        */
} hpj_resweight_info;

HPJDEF hpj_status hpj_resweight_fit(const float *H /*(n, L, D)*/, int n, int L, int D, const int32_t *y /*(n)*/,
                                    const float *yreg /*(n)*/, int C, float lambda, uint64_t seed,
                                    const hpj_probe_options *o, float *omega /*(L)*/);
/* Same, also returning the chosen logits b (L) and the run's details;
   logits and info may be NULL. */
HPJDEF hpj_status hpj_resweight_fit_ex(const float *H /*(n, L, D)*/, int n, int L, int D, const int32_t *y /*(n)*/,
                                       const float *yreg /*(n)*/, int C, float lambda, uint64_t seed,
                                       const hpj_probe_options *o, float *omega /*(L)*/, float *logits /*(L)*/,
                                       hpj_resweight_info *info);
/* out (n, D) = sum_l omega_l H[:, l, :], summed in double in slot order. */
HPJDEF void hpj_resweight_apply(float *out /*(n, D)*/, const float *H /*(n, L, D)*/, const float *omega /*(L)*/,
                                int n, int L, int D);

/* ==== checkpoints: API ===================================================== */

/* Checkpoint format (little-endian), version 2:
     "HPJEPA\r\n" magic (8 bytes) | u32 version | u32 flags (1: optimizer state)
     | u32 config text length | config text (`key = value` lines)
     | 8 x i32 input encoding (F, Fe, node_onehot, node_label_min,
       node_attr_dim, edge_onehot, edge_label_min, node_deg (0 before 0.5))
     | 5 x u64 (num_params, enc_count, num_stats, step, epoch)
     | f32 params | f32 EMA encoder | f32 BN running statistics (one set
       per resolution, in resolution order)
     | [f32 Adam m | f32 Adam v] | u32 CRC-32 of every byte before it.
   Written to a temporary file and renamed into place. Version 1
   held one set of statistics for every resolution and averaged node
   copies over the patches present: it loads with patch_tokens = present
   and its one set copied into every resolution's, which is exactly the
   model it was (its embeddings keep their bits); training it on moves
   each resolution's set on its own. */
#define HPJ_CKPT_VERSION 2
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

/* ==== end of API ======================================================== */
#endif /* HPJEPA_H_INCLUDED */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJEPA_IMPLEMENTATION_DONE
#define HPJEPA_IMPLEMENTATION_DONE

/* a * b + c stays two roundings (see DETERMINISM above); restored at the
   end of the implementation */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <string.h>
#include <stdarg.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <stdlib.h>
#ifndef HPJ_NO_STDIO
#include <stdio.h>
#include <errno.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(HPJ_MALLOC) && !defined(HPJ_FREE)
#error "define HPJ_FREE together with HPJ_MALLOC"
#endif
#if defined(HPJ_FREE) && !defined(HPJ_MALLOC)
#error "define HPJ_MALLOC together with HPJ_FREE"
#endif
#ifndef HPJ_MALLOC
#define HPJ_MALLOC(ctx, sz) ((void)(ctx), malloc(sz))
#define HPJ_FREE(ctx, p) ((void)(ctx), free(p))
#endif
#ifndef HPJ_ASSERT
#include <assert.h>
#define HPJ_ASSERT(x) assert(x)
#endif

/* One macro for every OpenMP pragma, so builds without OpenMP see nothing. */
#ifdef _OPENMP
#define HPJ__STR(x) #x
#define HPJ__OMP(x) _Pragma(HPJ__STR(omp x))
#else
#define HPJ__OMP(x)
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#define HPJ__TLS thread_local
#elif defined(__GNUC__) || defined(__clang__)
#define HPJ__TLS __thread
#elif defined(_MSC_VER)
#define HPJ__TLS __declspec(thread)
#else
#define HPJ__TLS
#define HPJ__NO_TLS /* GEMM buffers shared: no two GEMMs at once (hpj__two_ok) */
#endif

#define HPJ__MIN(a, b) ((a) < (b) ? (a) : (b))
#define HPJ__MAX(a, b) ((a) > (b) ? (a) : (b))

/* A hint to fetch the cache line at p (never faults, changes no result). */
#if defined(__GNUC__) || defined(__clang__)
#define HPJ__PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#define HPJ__PREFETCHW(p) __builtin_prefetch((const void *)(p), 1, 3) /* about to be written */
#else
#define HPJ__PREFETCH(p) ((void)0)
#define HPJ__PREFETCHW(p) ((void)0)
#endif

/* ==== status & errors ================================================ */

#define HPJ__ERRLEN 512
static HPJ__TLS char hpj__errbuf[HPJ__ERRLEN];

HPJDEF const char *hpj_last_error(void) { return hpj__errbuf; }
HPJDEF void hpj_clear_error(void) { hpj__errbuf[0] = 0; }

HPJDEF const char *hpj_status_name(hpj_status s) {
    switch (s) {
    case HPJ_OK: return "ok";
    case HPJ_ERR_INPUT: return "input";
    case HPJ_ERR_NOMEM: return "nomem";
    case HPJ_ERR_NUMERIC: return "numeric";
    case HPJ_ERR_IO: return "io";
    case HPJ_ERR_FORMAT: return "format";
    }
    return "unknown";
}

/* Records a reason and returns the status, so callers write
   `return hpj__fail(HPJ_ERR_INPUT, "x: %d", v);`. A reason often quotes
   the offending input, which may hold any bytes: control characters are
   written as \xNN, so a reason is always one printable line. */
#if defined(__GNUC__) || defined(__clang__)
static hpj_status hpj__fail(hpj_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static hpj_status hpj__fail(hpj_status s, const char *fmt, ...) {
#ifndef HPJ_NO_STDIO
    char raw[HPJ__ERRLEN];
    size_t i, o = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, HPJ__ERRLEN, fmt, ap);
    va_end(ap);
    for (i = 0; raw[i] && o + 1 < HPJ__ERRLEN; ++i) {
        unsigned char ch = (unsigned char)raw[i];
        if (ch >= 0x20 && ch != 0x7F) hpj__errbuf[o++] = (char)ch;
        else if (o + 5 < HPJ__ERRLEN) {
            static const char hex[] = "0123456789abcdef";
            hpj__errbuf[o++] = '\\'; hpj__errbuf[o++] = 'x';
            hpj__errbuf[o++] = hex[ch >> 4]; hpj__errbuf[o++] = hex[ch & 15];
        } else break;
    }
    hpj__errbuf[o] = 0;
#else
    /* Without stdio the format string itself is the reason. */
    size_t n = strlen(fmt);
    if (n >= HPJ__ERRLEN) n = HPJ__ERRLEN - 1;
    memcpy(hpj__errbuf, fmt, n);
    hpj__errbuf[n] = 0;
#endif
    return s;
}

/* Checked size arithmetic: 0 on success, 1 on overflow. */
static int hpj__mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 1;
    *out = a * b;
    return 0;
}
static int hpj__add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return 1;
    *out = a + b;
    return 0;
}

static void *hpj__alloc(size_t bytes, const char *what) {
    void *p = bytes ? HPJ_MALLOC(NULL, bytes) : NULL;
    if (bytes && !p) hpj__fail(HPJ_ERR_NOMEM, "%s: out of memory allocating %zu bytes", what, bytes);
    return p;
}
static void *hpj__calloc(size_t count, size_t size, const char *what) {
    size_t bytes;
    void *p;
    if (hpj__mul_size(count, size, &bytes)) {
        hpj__fail(HPJ_ERR_NOMEM, "%s: size overflow (%zu x %zu bytes)", what, count, size);
        return NULL;
    }
    if (bytes == 0) bytes = 1; /* distinguish "empty" from "failed" */
    p = HPJ_MALLOC(NULL, bytes);
    if (!p) {
        hpj__fail(HPJ_ERR_NOMEM, "%s: out of memory allocating %zu bytes", what, bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}
static void hpj__free(void *p) {
    if (p) HPJ_FREE(NULL, p);
}

/* A copy of count elements of size bytes (NULL when out of memory). */
static void *hpj__copy(const void *src, size_t count, size_t size, const char *what) {
    void *p = hpj__calloc(count, size, what);
    if (p) memcpy(p, src, count * size);
    return p;
}

/* ==== paths: the reference or the fast implementation ================ */

#ifdef HPJ_REFERENCE
#ifndef HPJ_NO_SIMD
#define HPJ_NO_SIMD
#endif
#endif
#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
#define HPJ__HAVE_PATHS HPJ_PATHS_AVX512
#elif !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
#define HPJ__HAVE_PATHS HPJ_PATHS_AVX2
#elif !defined(HPJ_REFERENCE)
#define HPJ__HAVE_PATHS HPJ_PATHS_PORTABLE
#else
#define HPJ__HAVE_PATHS HPJ_PATHS_REFERENCE
#endif

static int hpj__paths_level = HPJ__HAVE_PATHS;

HPJDEF int hpj_set_paths(int level) {
    if (level < HPJ_PATHS_REFERENCE) level = HPJ_PATHS_REFERENCE;
    if (level > HPJ__HAVE_PATHS) level = HPJ__HAVE_PATHS;
    hpj__paths_level = level;
    return level;
}

HPJDEF int hpj_paths(void) { return hpj__paths_level; }

HPJDEF const char *hpj_paths_name(int level) {
    switch (level) {
    case HPJ_PATHS_REFERENCE: return "reference";
    case HPJ_PATHS_PORTABLE: return "portable";
    case HPJ_PATHS_AVX2: return "avx2";
    case HPJ_PATHS_AVX512: return "avx512";
    }
    return "unknown";
}

/* 1: the fast part runs (a fast path's guard at its plug-in point).
   Marked unused: a build with no fast path plugged in never calls it. */
#if defined(__GNUC__) || defined(__clang__)
static int hpj__fast(void) __attribute__((unused));
#endif
static int hpj__fast(void) { return hpj__paths_level >= HPJ_PATHS_PORTABLE; }

/* ==== rng ============================================================ */

HPJDEF uint64_t hpj_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

HPJDEF void hpj_rng_seed(hpj_rng *r, uint64_t seed) {
    uint64_t st = seed;
    int i;
    for (i = 0; i < 4; ++i) r->s[i] = hpj_splitmix64(&st);
    /* splitmix64 never yields four zeros from one state, but be safe. */
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;
}

HPJDEF hpj_rng hpj_rng_stream(uint64_t seed, uint64_t step, uint64_t index) {
    /* Mix the three words through splitmix64 so nearby (step, index) pairs
       give unrelated states. */
    uint64_t st = seed;
    uint64_t h = hpj_splitmix64(&st);
    hpj_rng r;
    st = h ^ (step * 0xD1B54A32D192ED03ULL);
    h = hpj_splitmix64(&st);
    st = h ^ (index * 0x8CB92BA72F3D8DD7ULL);
    h = hpj_splitmix64(&st);
    hpj_rng_seed(&r, h);
    return r;
}

static uint64_t hpj__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

HPJDEF uint64_t hpj_rng_u64(hpj_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = hpj__rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = hpj__rotl(s[3], 45);
    return result;
}

HPJDEF uint32_t hpj_rng_below(hpj_rng *r, uint32_t n) {
    /* Lemire's multiply-shift with rejection: exact uniformity. */
    uint64_t m;
    uint32_t lo, threshold;
    if (n <= 1) return 0;
    m = (uint64_t)(uint32_t)(hpj_rng_u64(r) >> 32) * n;
    lo = (uint32_t)m;
    if (lo < n) {
        threshold = (uint32_t)(-n) % n;
        while (lo < threshold) {
            m = (uint64_t)(uint32_t)(hpj_rng_u64(r) >> 32) * n;
            lo = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

HPJDEF float hpj_rng_uniform(hpj_rng *r) { return (float)(hpj_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

HPJDEF double hpj_rng_uniform64(hpj_rng *r) { return (double)(hpj_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

HPJDEF float hpj_rng_normal(hpj_rng *r) {
    /* Box-Muller on two fresh uniforms (no cached spare: stateless draws
       keep streams simple to reason about). */
    double u1 = hpj_rng_uniform64(r), u2 = hpj_rng_uniform64(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

HPJDEF void hpj_rng_shuffle_i32(hpj_rng *r, int32_t *a, int32_t n) {
    int32_t i;
    for (i = n - 1; i > 0; --i) {
        int32_t j = (int32_t)hpj_rng_below(r, (uint32_t)i + 1);
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ==== arena ========================================================== */

HPJDEF size_t hpj_arena_need(size_t count, size_t size) {
    size_t b;
    if (hpj__mul_size(count, size, &b) || hpj__add_size(b, HPJ_ARENA_ALIGN - 1, &b)) return 0;
    return b & ~(size_t)(HPJ_ARENA_ALIGN - 1);
}

HPJDEF hpj_status hpj_arena_init_buffer(hpj_arena *a, void *buf, size_t bytes) {
    uintptr_t p = (uintptr_t)buf, q;
    memset(a, 0, sizeof(*a));
    if (!buf && bytes) return hpj__fail(HPJ_ERR_INPUT, "arena_init_buffer: NULL buffer of %zu bytes", bytes);
    q = (p + HPJ_ARENA_ALIGN - 1) & ~(uintptr_t)(HPJ_ARENA_ALIGN - 1);
    if (bytes < (size_t)(q - p)) bytes = (size_t)(q - p);
    a->base = (unsigned char *)buf + (q - p);
    a->cap = bytes - (size_t)(q - p);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_arena_init(hpj_arena *a, size_t bytes) {
    size_t total;
    void *blk;
    memset(a, 0, sizeof(*a));
    if (hpj__add_size(bytes, HPJ_ARENA_ALIGN, &total))
        return hpj__fail(HPJ_ERR_NOMEM, "arena_init: size overflow (%zu bytes)", bytes);
    blk = hpj__alloc(total, "arena_init");
    if (!blk) return HPJ_ERR_NOMEM;
    hpj_arena_init_buffer(a, blk, total);
    a->block = blk;
    return HPJ_OK;
}

HPJDEF void hpj_arena_init_measure(hpj_arena *a) {
    memset(a, 0, sizeof(*a));
    a->cap = SIZE_MAX;
}

HPJDEF void hpj_arena_free(hpj_arena *a) {
    hpj__free(a->block);
    memset(a, 0, sizeof(*a));
}

HPJDEF void *hpj_arena_alloc(hpj_arena *a, size_t bytes) {
    size_t need = hpj_arena_need(bytes, 1);
    void *p;
    if (bytes && need == 0) {
        hpj__fail(HPJ_ERR_NOMEM, "arena: request of %zu bytes overflows", bytes);
        return NULL;
    }
    if (need > a->cap - a->used) {
        hpj__fail(HPJ_ERR_NOMEM, "arena: out of space: need %zu bytes, %zu of %zu in use (%zu free)", need,
                  a->used, a->cap, a->cap - a->used);
        return NULL;
    }
    p = a->base ? (void *)(a->base + a->used) : (void *)(uintptr_t)HPJ_ARENA_ALIGN; /* measuring */
    a->used += need;
    if (a->used > a->peak) a->peak = a->used;
    return p;
}

/* count elements of elem bytes (the typed allocators below) */
static void *hpj__arena_array(hpj_arena *a, size_t count, size_t elem, const char *what) {
    size_t b;
    if (hpj__mul_size(count, elem, &b)) {
        hpj__fail(HPJ_ERR_NOMEM, "arena: %zu %s overflow", count, what);
        return NULL;
    }
    return hpj_arena_alloc(a, b);
}

HPJDEF float *hpj_arena_floats(hpj_arena *a, size_t count) {
    return (float *)hpj__arena_array(a, count, sizeof(float), "floats");
}

HPJDEF int32_t *hpj_arena_ints(hpj_arena *a, size_t count) {
    return (int32_t *)hpj__arena_array(a, count, sizeof(int32_t), "ints");
}

HPJDEF size_t hpj_arena_mark(const hpj_arena *a) { return a->used; }

HPJDEF void hpj_arena_reset(hpj_arena *a, size_t mark) {
    HPJ_ASSERT(mark <= a->used);
    a->used = mark;
}

/* ==== graph: CSR construction and checks ============================= */

/* The first entry of v in row u of a CSR whose rows ascend (binary
   search), or -1: the reverse of an entry u -> v is
   hpj__csr_find(rowptr, col, v, u). */
static int32_t hpj__csr_find(const int32_t *rowptr, const int32_t *col, int32_t u, int32_t v) {
    int32_t lo = rowptr[u], hi = rowptr[u + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (col[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < rowptr[u + 1] && col[lo] == v ? lo : -1;
}

HPJDEF void hpj_graph_owned_free(hpj_graph_owned *g) {
    hpj__free(g->mem);
    memset(g, 0, sizeof(*g));
}

HPJDEF hpj_status hpj_graph_check(const hpj_graph *g) {
    int32_t v, i;
    if (g->n < 0 || g->nnz < 0) return hpj__fail(HPJ_ERR_INPUT, "graph: negative size n=%d nnz=%d", g->n, g->nnz);
    if (g->n > 0 && (!g->rowptr || (g->nnz > 0 && !g->col)))
        return hpj__fail(HPJ_ERR_INPUT, "graph: missing rowptr/col arrays");
    if (g->n == 0) return HPJ_OK;
    if (g->rowptr[0] != 0 || g->rowptr[g->n] != g->nnz)
        return hpj__fail(HPJ_ERR_INPUT, "graph: rowptr[0]=%d rowptr[n]=%d, expected 0 and nnz=%d", g->rowptr[0],
                         g->rowptr[g->n], g->nnz);
    /* rowptr first: with rowptr[0] = 0 and rowptr[n] = nnz, a monotone
       rowptr keeps every access below inside col[0..nnz-1] */
    for (v = 0; v < g->n; ++v)
        if (g->rowptr[v + 1] < g->rowptr[v]) return hpj__fail(HPJ_ERR_INPUT, "graph: rowptr decreases at vertex %d", v);
    for (v = 0; v < g->n; ++v) {
        if (g->vwgt && g->vwgt[v] < 0) return hpj__fail(HPJ_ERR_INPUT, "graph: vertex %d has negative weight", v);
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
            int32_t u = g->col[i], found;
            if (u < 0 || u >= g->n) return hpj__fail(HPJ_ERR_INPUT, "graph: vertex %d has neighbour %d out of range", v, u);
            if (u == v) return hpj__fail(HPJ_ERR_INPUT, "graph: self-loop at vertex %d", v);
            if (i > g->rowptr[v] && g->col[i - 1] >= u)
                return hpj__fail(HPJ_ERR_INPUT, "graph: neighbours of vertex %d not strictly ascending", v);
            if (g->ewgt && g->ewgt[i] <= 0) return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d-%d has weight %d <= 0", v, u, g->ewgt[i]);
            found = hpj__csr_find(g->rowptr, g->col, u, v); /* the reverse entry */
            if (found < 0) return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d->%d has no reverse %d->%d", v, u, u, v);
            if (g->ewgt && g->ewgt[found] != g->ewgt[i])
                return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d-%d has weights %d and %d in its two directions", v, u,
                                 g->ewgt[i], g->ewgt[found]);
        }
    }
    return HPJ_OK;
}

/* Sorts directed entries (src[i], dst[i]), i < m < 2^31, by (src, dst)
   keeping input order among equal pairs: two stable counting sorts (dst,
   then src). perm gets the sorted order; tmp is scratch of the same length;
   cnt has n+1 slots. */
static void hpj__sort_pairs(int64_t m, int32_t n, const int32_t *src, const int32_t *dst, int32_t *perm,
                            int32_t *tmp, int64_t *cnt) {
    int64_t i;
    int32_t v;
    memset(cnt, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (i = 0; i < m; ++i) cnt[dst[i] + 1]++;
    for (v = 0; v < n; ++v) cnt[v + 1] += cnt[v];
    for (i = 0; i < m; ++i) tmp[cnt[dst[i]]++] = (int32_t)i;
    memset(cnt, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (i = 0; i < m; ++i) cnt[src[i] + 1]++;
    for (v = 0; v < n; ++v) cnt[v + 1] += cnt[v];
    for (i = 0; i < m; ++i) {
        int32_t e = tmp[i];
        perm[cnt[src[e]]++] = e;
    }
}

/* ---- edges to a CSR: hpj_graph_from_edges, the TU reader and
   hpj_dataset_from_csr all go through these, so that they treat edges
   alike ---- */

/* Directed entries on their way to a dataset's CSR: entry i runs from
   src[i] to dst[i] and comes from record rec[i] (a file line or an input
   entry); d of them. Every array has room for each record and its
   reverse; order and tmp are the sort's, cnt has a slot per node and one
   more. Zeroed, it holds nothing (hpj__entries_free may follow). */
typedef struct hpj__entries {
    int32_t *src, *dst, *rec, *order, *tmp;
    int64_t *cnt;
    int64_t d;
} hpj__entries;

/* Room for m records over N nodes. */
static hpj_status hpj__entries_alloc(hpj__entries *e, int64_t m, int64_t N, const char *name) {
    e->src = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    e->dst = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    e->rec = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    e->order = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    e->tmp = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    e->cnt = (int64_t *)hpj__calloc((size_t)N + 1, sizeof(int64_t), name);
    e->d = 0;
    return e->src && e->dst && e->rec && e->order && e->tmp && e->cnt ? HPJ_OK : HPJ_ERR_NOMEM;
}
static void hpj__entries_free(hpj__entries *e) {
    hpj__free(e->src); hpj__free(e->dst); hpj__free(e->rec); hpj__free(e->order); hpj__free(e->tmp); hpj__free(e->cnt);
}
/* Adds the entry u -> v of record r. */
static void hpj__entries_add(hpj__entries *e, int32_t u, int32_t v, int32_t r) {
    e->src[e->d] = u;
    e->dst[e->d] = v;
    e->rec[e->d] = r;
    ++e->d;
}

/* The per-graph CSR of a dataset from its explicit directed entries.
   ds->num_graphs, num_nodes and node_ptr are set on entry; the entries
   are in global node ids (self-loops already left out). Every entry gets
   its reverse, appended after all explicit ones, and a stable sort by
   (source, target) then puts the earliest explicit listing of a directed
   edge first (else the earliest reverse): that one is kept, later
   explicit repeats count in dup_lines. On return e->order[k] is the entry
   behind CSR entry k, so e->rec[e->order[k]] is the record whose label
   and attributes entry k takes. Sets num_edges, dup_lines, edge_ptr,
   rowptr and col. */
static hpj_status hpj__dataset_edges(hpj_dataset *ds, hpj__entries *e, const char *name) {
    int64_t i, k, explicit_n = e->d, N = ds->num_nodes;
    int32_t g, G = ds->num_graphs, *order = e->order;
    for (i = 0; i < explicit_n; ++i) hpj__entries_add(e, e->dst[i], e->src[i], e->rec[i]);
    hpj__sort_pairs(e->d, (int32_t)N, e->src, e->dst, order, e->tmp, e->cnt);
    for (k = 0, i = 0; i < e->d; ++i) { /* drop repeats; count repeated explicit entries */
        int32_t j = order[i];
        if (k > 0 && e->src[order[k - 1]] == e->src[j] && e->dst[order[k - 1]] == e->dst[j]) {
            if (j < explicit_n) ++ds->dup_lines;
            continue;
        }
        order[k++] = j;
    }
    ds->num_edges = k;
    ds->edge_ptr = (int64_t *)hpj__calloc((size_t)G + 1, sizeof(int64_t), name);
    ds->rowptr = (int32_t *)hpj__calloc((size_t)(N + G), sizeof(int32_t), name);
    ds->col = (int32_t *)hpj__calloc((size_t)ds->num_edges, sizeof(int32_t), name);
    if (!ds->edge_ptr || !ds->rowptr || !ds->col) return HPJ_ERR_NOMEM;
    for (k = 0, g = 0; g < G; ++g) { /* per-graph CSR with local ids */
        int64_t v0 = ds->node_ptr[g], v1 = ds->node_ptr[g + 1], v;
        int32_t *rp = ds->rowptr + v0 + g;
        ds->edge_ptr[g] = k;
        rp[0] = 0;
        for (v = v0; v < v1; ++v) {
            while (k < ds->num_edges && e->src[order[k]] == v) {
                ds->col[k] = (int32_t)(e->dst[order[k]] - v0);
                ++k;
            }
            rp[v - v0 + 1] = (int32_t)(k - ds->edge_ptr[g]);
        }
    }
    ds->edge_ptr[G] = k;
    return HPJ_OK;
}

HPJDEF hpj_status hpj_graph_from_edges(int32_t n, int64_t m, const int32_t *u, const int32_t *v, const int32_t *w,
                                       hpj_graph_owned *out) {
    static const char *fn = "graph_from_edges";
    hpj_dataset ds; /* the graph as a dataset of one graph: its CSR is ours */
    hpj__entries ent;
    int64_t node_ptr[2], i;
    int32_t *rowptr, *col, *ewgt, x, nnz;
    unsigned char *mem;
    hpj_status st;
    memset(out, 0, sizeof(*out));
    memset(&ds, 0, sizeof ds);
    memset(&ent, 0, sizeof ent);
    if (n < 0 || m < 0) return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: n=%d m=%lld", n, (long long)m);
    if (m > (INT32_MAX / 2)) return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: %lld edges exceed the 32-bit CSR", (long long)m);
    for (i = 0; i < m; ++i)
        if (u[i] < 0 || u[i] >= n || v[i] < 0 || v[i] >= n)
            return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: edge %lld = (%d,%d) out of range 0..%d", (long long)i, u[i],
                             v[i], n - 1);
    if ((st = hpj__entries_alloc(&ent, m, n, fn))) goto done;
    for (i = 0; i < m; ++i)
        if (u[i] != v[i]) hpj__entries_add(&ent, u[i], v[i], (int32_t)i);
    node_ptr[0] = 0;
    node_ptr[1] = n;
    ds.num_graphs = 1;
    ds.num_nodes = n;
    ds.node_ptr = node_ptr;
    if ((st = hpj__dataset_edges(&ds, &ent, fn))) goto done;
    nnz = (int32_t)ds.num_edges;
    mem = (unsigned char *)hpj__calloc((size_t)n + 1 + (size_t)nnz + (w ? (size_t)nnz : 0), sizeof(int32_t), fn);
    if (!mem) { st = HPJ_ERR_NOMEM; goto done; }
    rowptr = (int32_t *)mem;
    col = rowptr + n + 1;
    memcpy(rowptr, ds.rowptr, sizeof(int32_t) * ((size_t)n + 1));
    memcpy(col, ds.col, sizeof(int32_t) * (size_t)nnz);
    out->g.n = n;
    out->g.nnz = nnz;
    out->g.rowptr = rowptr;
    out->g.col = col;
    out->mem = mem;
    if (w) { /* both directions of a pair take the weight of the earliest
                input edge that joins its two nodes */
        out->g.ewgt = ewgt = col + nnz;
        for (x = 0; x < n; ++x)
            for (i = rowptr[x]; i < rowptr[x + 1]; ++i) {
                int32_t first = ent.rec[ent.order[i]], back = ent.rec[ent.order[hpj__csr_find(rowptr, col, col[i], x)]];
                ewgt[i] = w[back < first ? back : first];
            }
    }
done:
    hpj__entries_free(&ent);
    hpj__free(ds.edge_ptr); hpj__free(ds.rowptr); hpj__free(ds.col);
    return st;
}

/* ==== graph: text scanning =========================================== */

/* A cursor over one in-memory text file. The scanner never reads past
   len, counts physical lines for messages and treats ',' like a blank. */
typedef struct hpj__scan {
    const char *p, *end;
    const char *file; /* name for messages, e.g. "PROTEINS_A.txt" */
    int64_t line;     /* 1-based physical line of p                       */
    int lenient;      /* 1: an integral float such as "2.0" reads as an
                         integer (label files; ids stay strict)           */
} hpj__scan;

static void hpj__scan_init(hpj__scan *s, const char *text, size_t len, const char *file) {
    s->p = text;
    s->end = text + len;
    s->file = file;
    s->line = 1;
    s->lenient = 0;
}

static int hpj__is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == ',' || c == '\f' || c == '\v'; }

/* Skips blanks on the current line; returns the next char or 0 at end of
   line / end of text ('\n' is not consumed). */
static char hpj__scan_peek(hpj__scan *s) {
    while (s->p < s->end && hpj__is_blank(*s->p)) ++s->p;
    if (s->p >= s->end || *s->p == '\n') return 0;
    return *s->p;
}

/* Moves to the start of the next line; returns 0 at end of text. */
static int hpj__scan_next_line(hpj__scan *s) {
    while (s->p < s->end && *s->p != '\n') ++s->p;
    if (s->p >= s->end) return 0;
    ++s->p;
    ++s->line;
    return 1;
}

/* Advances to the next line that holds a non-blank character (skipping
   blank lines); returns 0 if only blank lines remain. */
static int hpj__scan_content_line(hpj__scan *s) {
    for (;;) {
        if (hpj__scan_peek(s)) return 1;
        if (!hpj__scan_next_line(s)) return 0;
    }
}

static hpj_status hpj__scan_err(const hpj__scan *s, const char *what) {
    /* Quote the offending token (up to 24 chars) for context. */
    char tok[28];
    int k = 0;
    const char *q = s->p;
    while (q < s->end && k < 24 && *q != '\n' && !hpj__is_blank(*q)) {
        unsigned char c = (unsigned char)*q++;
        tok[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    tok[k] = 0;
    if (k) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: %s (got '%s')", s->file, (long long)s->line, what, tok);
    return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: %s", s->file, (long long)s->line, what);
}

/* Copies the token at s->p (up to a blank or the line's end) into buf
   (64 chars); *after points past it. */
static hpj_status hpj__scan_token(hpj__scan *s, char buf[64], const char **after) {
    size_t n = 0;
    const char *r = s->p;
    while (r < s->end && !hpj__is_blank(*r) && *r != '\n') {
        if (n >= 63) return hpj__scan_err(s, "number token too long");
        buf[n++] = *r++;
    }
    buf[n] = 0;
    *after = r;
    return HPJ_OK;
}

/* Reads the token at s->p as a real number (strtod on a bounded copy)
   into *v, and where the token ends into *after; s->p stays on it, so
   that a reason can quote it. bad: the reason if it is no number. */
static hpj_status hpj__scan_real(hpj__scan *s, double *v, const char **after, const char *bad) {
    char buf[64], *endp;
    hpj_status st;
    if ((st = hpj__scan_token(s, buf, after))) return st;
    *v = strtod(buf, &endp);
    if (*endp != 0 || !buf[0]) return hpj__scan_err(s, bad);
    return HPJ_OK;
}

/* Reads one integer token (optional sign, decimal digits). A scanner set
   lenient also takes a float token with an integral value such as "1.0"
   or "-1e0", since some TU exports write labels that way; node ids,
   graph sizes and METIS fields must be plain integers. */
static hpj_status hpj__scan_i64(hpj__scan *s, int64_t *out, const char *what) {
    const char *q;
    int neg = 0, digits = 0;
    uint64_t v = 0;
    char c = hpj__scan_peek(s);
    if (!c) return hpj__scan_err(s, what);
    q = s->p;
    if (*q == '+' || *q == '-') { neg = (*q == '-'); ++q; }
    while (q < s->end && *q >= '0' && *q <= '9') {
        if (v > (UINT64_C(9223372036854775807) - 9) / 10) return hpj__scan_err(s, "integer overflows 64 bits");
        v = v * 10 + (uint64_t)(*q - '0');
        ++q;
        ++digits;
    }
    if (s->lenient && q < s->end && (*q == '.' || *q == 'e' || *q == 'E')) {
        /* integral-valued float such as "2.0" */
        const char *r;
        hpj_status st;
        double dv;
        if ((st = hpj__scan_real(s, &dv, &r, "expected an integer"))) return st;
        if (dv != floor(dv) || fabs(dv) > 9.0e15) return hpj__scan_err(s, "expected an integer");
        *out = (int64_t)dv;
        s->p = r;
        return HPJ_OK;
    }
    if (!digits || (q < s->end && !hpj__is_blank(*q) && *q != '\n')) return hpj__scan_err(s, "expected an integer");
    *out = neg ? -(int64_t)v : (int64_t)v;
    s->p = q;
    return HPJ_OK;
}

/* Reads an integer into int32, checking [lo, hi]. */
static hpj_status hpj__scan_i32(hpj__scan *s, int32_t *out, int64_t lo, int64_t hi, const char *what) {
    int64_t v = 0; /* (set by hpj__scan_i64 on success; GCC cannot always tell) */
    const char *start;
    hpj_status st;
    hpj__scan_peek(s);
    start = s->p;
    st = hpj__scan_i64(s, &v, what);
    if (st) return st;
    if (v < lo || v > hi) {
        s->p = start;
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: %s %lld %s %lld", s->file, (long long)s->line, what, (long long)v,
                         v < lo ? "is below the minimum" : "is above the maximum", (long long)(v < lo ? lo : hi));
    }
    *out = (int32_t)v;
    return HPJ_OK;
}

/* Reads one real number into a float. */
static hpj_status hpj__scan_f32(hpj__scan *s, float *out, const char *what) {
    const char *r;
    hpj_status st;
    double v;
    if (!hpj__scan_peek(s)) return hpj__scan_err(s, what);
    if ((st = hpj__scan_real(s, &v, &r, "expected a real number"))) return st;
    if (!(v == v) || v > FLT_MAX || v < -FLT_MAX) return hpj__scan_err(s, "number is NaN or out of float range");
    *out = (float)v;
    s->p = r;
    return HPJ_OK;
}

/* After the last field of a record: anything else on the line is an error. */
static hpj_status hpj__scan_eol(hpj__scan *s) {
    if (hpj__scan_peek(s)) return hpj__scan_err(s, "unexpected extra field");
    return HPJ_OK;
}

/* Rejects NUL bytes anywhere in a text file. */
static hpj_status hpj__check_text(const char *text, size_t len, const char *file) {
    const char *z = (const char *)memchr(text, 0, len);
    if (z) {
        int64_t line = 1;
        const char *q;
        for (q = text; q < z; ++q) line += (*q == '\n');
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: NUL byte in a text file", file, (long long)line);
    }
    return HPJ_OK;
}

/* Counts the records (non-blank lines) of a text. */
static int64_t hpj__count_records(const char *text, size_t len) {
    hpj__scan s;
    int64_t n = 0;
    hpj__scan_init(&s, text, len, "");
    while (hpj__scan_content_line(&s)) {
        ++n;
        if (!hpj__scan_next_line(&s)) break;
    }
    return n;
}

#ifndef HPJ_NO_STDIO
/* A growable byte buffer (for the file reader and the writers); what
   names it in an out-of-memory reason (NULL: "buffer"). */
typedef struct hpj__buf {
    char *p;
    size_t n, cap;
    int failed;
    const char *what;
} hpj__buf;

static void hpj__buf_put(hpj__buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        char *np;
        while (nc < b->n + n) nc *= 2;
        np = (char *)hpj__alloc(nc, b->what ? b->what : "buffer");
        if (!np) { b->failed = 1; return; }
        if (b->n) memcpy(np, b->p, b->n);
        hpj__free(b->p);
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void hpj__buf_int(hpj__buf *b, int64_t v, char sep) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    if (sep) tmp[n++] = sep;
    hpj__buf_put(b, tmp, (size_t)n);
}

/* Reads a whole file into a malloc'd buffer (NUL-terminated for safety;
   the terminator is not part of len). */
static hpj_status hpj__read_file(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    char chunk[16384];
    size_t got;
    hpj__buf b;
    *text = NULL;
    *len = 0;
    if (!f) return hpj__fail(HPJ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    memset(&b, 0, sizeof b);
    b.what = path;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) hpj__buf_put(&b, chunk, got);
    if (ferror(f)) {
        int e = errno;
        hpj__free(b.p);
        fclose(f);
        return hpj__fail(HPJ_ERR_IO, "%s: read error: %s", path, strerror(e));
    }
    fclose(f);
    hpj__buf_put(&b, "", 1);
    if (b.failed) { hpj__free(b.p); return HPJ_ERR_NOMEM; }
    *text = b.p;
    *len = b.n - 1;
    return HPJ_OK;
}

/* Writes `len` bytes to path via a temporary file and rename, so a failure
   never leaves a partial file under the final name. */
static hpj_status hpj__write_atomic(const char *path, const void *data, size_t len) {
    char tmp[4096];
    FILE *f;
    int bad;
    if (strlen(path) + 16 > sizeof tmp) return hpj__fail(HPJ_ERR_IO, "%s: path too long", path);
    snprintf(tmp, sizeof tmp, "%s.tmp~", path);
    f = fopen(tmp, "wb");
    /* the message names the caller's path, not the temporary one */
    if (!f) return hpj__fail(HPJ_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    bad = (len && fwrite(data, 1, len, f) != len);
    bad |= (fflush(f) != 0);
    bad |= (fclose(f) != 0);
    if (bad) {
        remove(tmp);
        return hpj__fail(HPJ_ERR_IO, "%s: write failed", path);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return hpj__fail(HPJ_ERR_IO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return HPJ_OK;
}
#endif

/* ==== graph: METIS format ============================================ */

/* Skips '%' comment lines and blank lines? gpmetis skips comment lines but
   treats an empty line as a vertex without neighbours, so only comments
   are skipped here. Returns 0 at end of text. */
static int hpj__metis_next_record(hpj__scan *s) {
    for (;;) {
        const char *q = s->p;
        while (q < s->end && (*q == ' ' || *q == '\t')) ++q;
        if (q < s->end && *q == '%') {
            s->p = q;
            if (!hpj__scan_next_line(s)) return 0;
            continue;
        }
        return s->p < s->end;
    }
}

/* Skips comment lines and blank lines (around the vertex lines, where a
   blank line is no vertex); returns 0 if nothing else is left. */
static int hpj__metis_content_line(hpj__scan *s) {
    while (hpj__metis_next_record(s)) {
        if (hpj__scan_peek(s)) return 1;
        if (!hpj__scan_next_line(s)) break;
    }
    return 0;
}

HPJDEF hpj_status hpj_graph_parse_metis(const char *text, size_t len, const char *name, hpj_graph_owned *out,
                                        hpj_metis_info *info) {
    hpj__scan s;
    int64_t n64, m64, fmt = 0, ncon = 1, v, total = 0, hline;
    int64_t *vline = NULL; /* (n) file line of each vertex, for messages */
    int has_size, has_vw, has_ew;
    int32_t n, *rowptr = NULL, *col = NULL, *vw = NULL, *ew = NULL;
    size_t cap;
    hpj_status st;
    unsigned char *mem = NULL;
    hpj_graph g;
    memset(out, 0, sizeof(*out));
    if (info) memset(info, 0, sizeof(*info));
    if (!name) name = "graph";
    if ((st = hpj__check_text(text, len, name))) return st;
    hpj__scan_init(&s, text, len, name);
    if (!hpj__metis_content_line(&s)) return hpj__fail(HPJ_ERR_FORMAT, "%s: empty file (no header line)", name);
    hline = s.line;
    if ((st = hpj__scan_i64(&s, &n64, "header: expected vertex count n"))) return st;
    if ((st = hpj__scan_i64(&s, &m64, "header: expected edge count m"))) return st;
    if (hpj__scan_peek(&s)) {
        const char *q = s.p;
        /* fmt is read as a digit string: "011" means edge weights + vertex weights */
        fmt = 0;
        while (q < s.end && *q >= '0' && *q <= '9') { fmt = fmt * 10 + (*q - '0'); if (fmt > 111) break; ++q; }
        if (q == s.p || (q < s.end && !hpj__is_blank(*q) && *q != '\n') || fmt > 111 || (fmt % 10) > 1 ||
            ((fmt / 10) % 10) > 1 || fmt / 100 > 1)
            return hpj__scan_err(&s, "header: fmt must be made of the digits 0/1 (e.g. 1, 10, 11, 100)");
        s.p = q;
        if (hpj__scan_peek(&s)) {
            if ((st = hpj__scan_i64(&s, &ncon, "header: expected ncon"))) return st;
            if (ncon != 1) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: ncon=%lld: only one vertex weight is supported", name, (long long)s.line, (long long)ncon);
        }
        if ((st = hpj__scan_eol(&s))) return st;
    }
    if (n64 < 0 || n64 > INT32_MAX - 1) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: vertex count %lld out of range", name, (long long)s.line, (long long)n64);
    if (m64 < 0 || m64 > INT32_MAX / 2) return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: edge count %lld out of range", name, (long long)s.line, (long long)m64);
    /* each vertex needs a line (>= 1 byte) and each adjacency entry a
       number and a separator (>= 2 bytes): reject a header the rest of the
       text cannot hold before sizing arrays from it */
    {
        uint64_t rest = (uint64_t)(s.end - s.p);
        if ((uint64_t)n64 > rest || (uint64_t)m64 > (rest + 1) / 4)
            return hpj__fail(HPJ_ERR_FORMAT,
                             "%s:%lld: header says n=%lld vertices and m=%lld edges, more than the remaining %llu bytes can hold",
                             name, (long long)hline, (long long)n64, (long long)m64, (unsigned long long)rest);
    }
    n = (int32_t)n64;
    has_size = (int)(fmt / 100);
    has_vw = (int)((fmt / 10) % 10);
    has_ew = (int)(fmt % 10);
    cap = (size_t)(2 * m64);
    /* one block: rowptr (n+1) col (2m) vw (n) ew (2m) */
    {
        size_t words = (size_t)n + 1 + cap + (has_vw ? (size_t)n : 0) + (has_ew ? cap : 0);
        mem = (unsigned char *)hpj__calloc(words, sizeof(int32_t), name);
        if (!mem) return HPJ_ERR_NOMEM;
        vline = (int64_t *)hpj__calloc((size_t)n, sizeof(int64_t), name);
        if (!vline) { hpj__free(mem); return HPJ_ERR_NOMEM; }
        rowptr = (int32_t *)mem;
        col = rowptr + n + 1;
        vw = has_vw ? col + cap : NULL;
        ew = has_ew ? (has_vw ? vw + n : col + cap) : NULL;
    }
    hpj__scan_next_line(&s);
    for (v = 0; v < n; ++v) {
        if (!hpj__metis_next_record(&s) && s.p >= s.end) {
            hpj__free(mem);
            hpj__free(vline);
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: file ends after %lld of %d vertex lines", name, (long long)s.line,
                             (long long)v, n);
        }
        vline[v] = s.line;
        if (has_size) {
            int64_t sz;
            if ((st = hpj__scan_i64(&s, &sz, "expected the vertex size"))) goto fail;
        }
        if (has_vw) {
            int32_t w;
            if ((st = hpj__scan_i32(&s, &w, 0, INT32_MAX, "vertex weight"))) goto fail;
            vw[v] = w;
        }
        while (hpj__scan_peek(&s)) {
            int32_t u, w = 1;
            if ((st = hpj__scan_i32(&s, &u, 1, n, "neighbour id"))) goto fail;
            if (has_ew) {
                if (!hpj__scan_peek(&s)) { st = hpj__scan_err(&s, "neighbour without its edge weight"); goto fail; }
                if ((st = hpj__scan_i32(&s, &w, 1, INT32_MAX, "edge weight"))) goto fail;
            }
            if (u - 1 == v) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: vertex %lld lists itself (a self-loop, not allowed in the format)",
                               name, (long long)s.line, (long long)v + 1);
                goto fail;
            }
            if (total >= (int64_t)cap) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: more adjacency entries than 2m = %lld from the header", name,
                               (long long)s.line, (long long)cap);
                goto fail;
            }
            col[total] = u - 1;
            if (ew) ew[total] = w;
            ++total;
        }
        rowptr[v + 1] = (int32_t)total;
        if (!hpj__scan_next_line(&s)) s.p = s.end;
    }
    if (hpj__metis_content_line(&s)) { /* anything left must be comments or blank lines */
        st = hpj__scan_err(&s, "more vertex lines than n from the header");
        goto fail;
    }
    if (total != 2 * m64) {
        st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: header says m=%lld edges but the lines hold %lld adjacency entries",
                       name, (long long)hline, (long long)m64, (long long)total);
        goto fail;
    }
    /* sort each adjacency list (METIS files need not be sorted), check for
       duplicates and symmetry */
    for (v = 0; v < n; ++v) {
        int32_t a = rowptr[v], b = rowptr[v + 1], i, j;
        for (i = a + 1; i < b; ++i) { /* insertion sort; lists are short */
            int32_t c = col[i], cw = ew ? ew[i] : 0;
            j = i - 1;
            while (j >= a && col[j] > c) { col[j + 1] = col[j]; if (ew) ew[j + 1] = ew[j]; --j; }
            col[j + 1] = c;
            if (ew) ew[j + 1] = cw;
        }
        for (i = a + 1; i < b; ++i)
            if (col[i] == col[i - 1]) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: vertex %lld lists neighbour %d more than once", name,
                               (long long)vline[v], (long long)v + 1, col[i] + 1);
                goto fail;
            }
    }
    /* symmetry, with the lines of both vertices in the message (lists are
       sorted, in range and loop-free by construction) */
    for (v = 0; v < n; ++v) {
        int32_t i;
        for (i = rowptr[v]; i < rowptr[v + 1]; ++i) {
            int32_t u = col[i], found = hpj__csr_find(rowptr, col, u, (int32_t)v);
            if (found < 0) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: edge %lld->%d has no reverse %d->%lld (vertex %d on line %lld does not list %lld)",
                               name, (long long)vline[v], (long long)v + 1, u + 1, u + 1, (long long)v + 1, u + 1,
                               (long long)vline[u], (long long)v + 1);
                goto fail;
            }
            if (ew && ew[found] != ew[i]) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: edge %lld-%d has weights %d and %d in its two directions (vertex %d is on line %lld)",
                               name, (long long)vline[v], (long long)v + 1, u + 1, ew[i], ew[found], u + 1, (long long)vline[u]);
                goto fail;
            }
        }
    }
    g.n = n;
    g.nnz = (int32_t)total;
    g.rowptr = rowptr;
    g.col = col;
    g.vwgt = vw;
    g.ewgt = ew;
    hpj__free(vline);
    out->g = g;
    out->mem = mem;
    if (info) {
        info->has_vwgt = has_vw;
        info->has_ewgt = has_ew;
    }
    return HPJ_OK;
fail:
    hpj__free(mem);
    hpj__free(vline);
    return st;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_graph_read_metis(const char *path, hpj_graph_owned *out, hpj_metis_info *info) {
    char *text;
    size_t len;
    hpj_status st;
    memset(out, 0, sizeof(*out));
    if ((st = hpj__read_file(path, &text, &len))) return st;
    st = hpj_graph_parse_metis(text, len, path, out, info);
    hpj__free(text);
    return st;
}

HPJDEF hpj_status hpj_graph_write_metis(const char *path, const hpj_graph *g) {
    hpj__buf b;
    int32_t v, i;
    hpj_status st;
    char hdr[96];
    int fmt = (g->vwgt ? 10 : 0) + (g->ewgt ? 1 : 0);
    if ((st = hpj_graph_check(g))) return st;
    memset(&b, 0, sizeof b);
    if (fmt)
        snprintf(hdr, sizeof hdr, "%d %d %03d\n", g->n, g->nnz / 2, fmt);
    else
        snprintf(hdr, sizeof hdr, "%d %d\n", g->n, g->nnz / 2);
    hpj__buf_put(&b, hdr, strlen(hdr));
    for (v = 0; v < g->n; ++v) {
        if (g->vwgt) hpj__buf_int(&b, g->vwgt[v], g->rowptr[v + 1] > g->rowptr[v] ? ' ' : 0);
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i) {
            int last = (i + 1 == g->rowptr[v + 1]);
            hpj__buf_int(&b, (int64_t)g->col[i] + 1, (g->ewgt || !last) ? ' ' : 0);
            if (g->ewgt) hpj__buf_int(&b, g->ewgt[i], last ? 0 : ' ');
        }
        hpj__buf_put(&b, "\n", 1);
    }
    if (b.failed) { hpj__free(b.p); return HPJ_ERR_NOMEM; }
    st = hpj__write_atomic(path, b.p, b.n);
    hpj__free(b.p);
    return st;
}
#endif

/* ==== graph: TUDataset reader ======================================== */

static const char *const hpj__tu_suffixes[HPJ_TU_NUM_FILES] = {
    "A", "graph_indicator", "graph_labels", "graph_attributes", "node_labels",
    "node_attributes", "edge_labels", "edge_attributes", "split"};

HPJDEF const char *hpj_tu_suffix(hpj_tu_file f) {
    return (f >= 0 && f < HPJ_TU_NUM_FILES) ? hpj__tu_suffixes[f] : "?";
}

HPJDEF void hpj_dataset_free(hpj_dataset *ds) {
    hpj__free(ds->node_ptr); hpj__free(ds->edge_ptr); hpj__free(ds->rowptr); hpj__free(ds->col);
    hpj__free(ds->node_label); hpj__free(ds->edge_label); hpj__free(ds->node_attr); hpj__free(ds->edge_attr);
    hpj__free(ds->graph_label); hpj__free(ds->class_value); hpj__free(ds->target); hpj__free(ds->split);
    memset(ds, 0, sizeof(*ds));
}

HPJDEF hpj_graph hpj_dataset_graph(const hpj_dataset *ds, int32_t g) {
    hpj_graph gr;
    memset(&gr, 0, sizeof gr);
    if (g < 0 || g >= ds->num_graphs) return gr;
    gr.n = (int32_t)(ds->node_ptr[g + 1] - ds->node_ptr[g]);
    gr.nnz = (int32_t)(ds->edge_ptr[g + 1] - ds->edge_ptr[g]);
    gr.rowptr = ds->rowptr + ds->node_ptr[g] + g;
    gr.col = ds->col + ds->edge_ptr[g];
    return gr;
}

/* Reads record r of a TU file at s into what ctx points to. */
typedef hpj_status (*hpj__tu_record_fn)(hpj__scan *s, int64_t r, void *ctx);

/* The names of a dataset's files in reasons, e.g. "PROTEINS_A.txt". */
#define HPJ__TU_FNAME 300
typedef char hpj__tu_fnames[HPJ_TU_NUM_FILES][HPJ__TU_FNAME];

/* Reads file f of a TU dataset, `rows` records (rows_of names them in
   reasons), one per non-blank line, each by read; nothing may follow a
   record on its line (a record function that checks more than its fields
   ends the line itself first, so that an extra field is the reason given
   before those checks). lenient: an integral float such as "2.0" reads as
   an integer. */
static hpj_status hpj__tu_records(const hpj_tu_text *files, hpj__tu_fnames fname, int f, int lenient, int64_t rows,
                                  const char *rows_of, hpj__tu_record_fn read, void *ctx) {
    const char *file = fname[f];
    hpj__scan s;
    int64_t r;
    hpj_status st;
    hpj__scan_init(&s, files->text[f], files->len[f], file);
    s.lenient = lenient;
    for (r = 0; hpj__scan_content_line(&s); ++r, hpj__scan_next_line(&s)) {
        if (r >= rows)
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: more lines than the %lld %s", file, (long long)s.line,
                             (long long)rows, rows_of);
        if ((st = read(&s, r, ctx)) || (st = hpj__scan_eol(&s))) return st;
    }
    if (r != rows)
        return hpj__fail(HPJ_ERR_FORMAT, "%s: %lld lines but there are %lld %s", file, (long long)r, (long long)rows,
                         rows_of);
    return HPJ_OK;
}

/* graph_indicator: the 1-based graph id of node r, ids contiguous and
   ascending from 1 (gind gets them 0-based). */
static hpj_status hpj__tu_graph_id(hpj__scan *s, int64_t r, void *ctx) {
    int32_t *gind = (int32_t *)ctx, gid;
    hpj_status st;
    if ((st = hpj__scan_i32(s, &gid, 1, INT32_MAX - 1, "graph id")) || (st = hpj__scan_eol(s))) return st;
    if (r == 0 && gid != 1)
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: first graph id is %d, expected 1", s->file, (long long)s->line, gid);
    if (r > 0 && gid - 1 < gind[r - 1])
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: graph id %d after %d: ids must ascend, each graph's nodes contiguous",
                         s->file, (long long)s->line, gid, gind[r - 1] + 1);
    if (r > 0 && gid - 1 > gind[r - 1] + 1)
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: graph id jumps from %d to %d: graph %d has no nodes", s->file,
                         (long long)s->line, gind[r - 1] + 1, gid, gind[r - 1] + 2);
    gind[r] = gid - 1;
    return HPJ_OK;
}

/* A: edge record r, "row, col" (1-based node ids of one graph), kept as a
   directed entry unless it is a self-loop. */
typedef struct hpj__tu_edges {
    const int32_t *gind; /* (N) graph of each node */
    hpj__entries *ent;   /* the entries so far     */
    hpj_dataset *ds;     /* counts the self-loops  */
} hpj__tu_edges;
static hpj_status hpj__tu_edge(hpj__scan *s, int64_t r, void *ctx) {
    hpj__tu_edges *e = (hpj__tu_edges *)ctx;
    int64_t N = e->ds->num_nodes;
    int32_t u, v;
    hpj_status st;
    if ((st = hpj__scan_i32(s, &u, 1, N, "node id"))) return st;
    if (!hpj__scan_peek(s)) return hpj__scan_err(s, "expected two node ids 'row, col'");
    if ((st = hpj__scan_i32(s, &v, 1, N, "node id")) || (st = hpj__scan_eol(s))) return st;
    --u;
    --v;
    if (e->gind[u] != e->gind[v])
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: edge joins node %d (graph %d) and node %d (graph %d)", s->file,
                         (long long)s->line, u + 1, e->gind[u] + 1, v + 1, e->gind[v] + 1);
    if (u == v) ++e->ds->self_loops;
    else hpj__entries_add(e->ent, u, v, (int32_t)r);
    return HPJ_OK;
}

/* A label file: one integer label per record (lenient). */
static hpj_status hpj__tu_label(hpj__scan *s, int64_t r, void *ctx) {
    return hpj__scan_i32(s, (int32_t *)ctx + r, INT32_MIN + 1, INT32_MAX, "label");
}

/* split: train, val (or valid) or test per graph. */
static hpj_status hpj__tu_split(hpj__scan *s, int64_t r, void *ctx) {
    static const char *const words[4] = {"train", "val", "valid", "test"};
    static const int8_t value[4] = {HPJ_SPLIT_TRAIN, HPJ_SPLIT_VAL, HPJ_SPLIT_VAL, HPJ_SPLIT_TEST};
    size_t n = 0;
    int i;
    while (s->p + n < s->end && !hpj__is_blank(s->p[n]) && s->p[n] != '\n') ++n;
    for (i = 0; i < 4; ++i)
        if (strlen(words[i]) == n && !memcmp(s->p, words[i], n)) {
            ((int8_t *)ctx)[r] = value[i];
            s->p += n;
            return HPJ_OK;
        }
    return hpj__scan_err(s, "expected train, val or test");
}

/* An attribute file: row r of real numbers, as wide as the first row. */
typedef struct hpj__tu_reals {
    float *a; /* (rows, w) */
    int32_t w;
} hpj__tu_reals;
static hpj_status hpj__tu_real_row(hpj__scan *s, int64_t r, void *ctx) {
    hpj__tu_reals *t = (hpj__tu_reals *)ctx;
    int32_t k;
    hpj_status st;
    for (k = 0; hpj__scan_peek(s); ++k) {
        if (r == 0 && k >= 1 << 20) return hpj__scan_err(s, "more than 2^20 attributes per row");
        if (r > 0 && k >= t->w)
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: row has more than the %d values of the first row", s->file,
                             (long long)s->line, t->w);
        if ((st = hpj__scan_f32(s, &t->a[(size_t)r * (size_t)t->w + (size_t)k], "expected a real number"))) return st;
    }
    if (r == 0) t->w = k; /* the first row fixes the width */
    else if (k != t->w)
        return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: row has %d values but the first row has %d", s->file, (long long)s->line,
                         k, t->w);
    return HPJ_OK;
}

/* Reads attribute file f of `rows` rows into out (rows, width). The
   array is sized by what the text can hold as well as by rows (a number
   and the blank after it take two bytes), so a short file cannot ask for
   more memory than its own size. */
static hpj_status hpj__tu_real_rows(const hpj_tu_text *files, hpj__tu_fnames fname, int f, int64_t rows,
                                    const char *rows_of, float **out, int32_t *width) {
    hpj__scan first;
    hpj__tu_reals t;
    uint64_t cap = ((uint64_t)files->len[f] + 1) / 2;
    int32_t w = 0;
    hpj_status st;
    hpj__scan_init(&first, files->text[f], files->len[f], fname[f]); /* the first row's width, counted to one past the limit */
    if (hpj__scan_content_line(&first))
        for (; hpj__scan_peek(&first) && w <= 1 << 20; ++w)
            while (first.p < first.end && !hpj__is_blank(*first.p) && *first.p != '\n') ++first.p;
    if ((uint64_t)rows * (uint64_t)w < cap) cap = (uint64_t)rows * (uint64_t)w;
    t.a = (float *)hpj__calloc((size_t)cap + 1, sizeof(float), fname[f]);
    t.w = 0;
    if (!t.a) return HPJ_ERR_NOMEM;
    if ((st = hpj__tu_records(files, fname, f, 0, rows, rows_of, hpj__tu_real_row, &t))) {
        hpj__free(t.a);
        return st;
    }
    *out = t.a;
    *width = t.w;
    return HPJ_OK;
}

/* The range of labels as the TU reader takes them: INT32_MIN is out (a
   one-hot width max - min + 1 must fit an int32; what names the array in
   that reason). min / max may be NULL. */
static hpj_status hpj__label_range(const int32_t *src, int64_t n, const char *what, int32_t *vmin, int32_t *vmax) {
    int64_t i;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (i = 0; i < n; ++i) {
        if (src[i] == INT32_MIN)
            return hpj__fail(HPJ_ERR_INPUT, "dataset_from_csr: %s[%lld] = %d is below the minimum %d", what, (long long)i,
                             (int)src[i], INT32_MIN + 1);
        if (src[i] < lo) lo = src[i];
        if (src[i] > hi) hi = src[i];
    }
    if (vmin) *vmin = n ? lo : 0;
    if (vmax) *vmax = n ? hi : 0;
    return HPJ_OK;
}

/* Reads label file f of `rows` records into a new array *out (name: the
   dataset, for an out-of-memory reason), and the labels' range. */
static hpj_status hpj__tu_labels(const hpj_tu_text *files, hpj__tu_fnames fname, int f, int64_t rows, const char *rows_of,
                                 const char *name, int32_t **out, int32_t *vmin, int32_t *vmax) {
    hpj_status st;
    if (!(*out = (int32_t *)hpj__calloc((size_t)rows, sizeof(int32_t), name))) return HPJ_ERR_NOMEM;
    st = hpj__tu_records(files, fname, f, 1, rows, rows_of, hpj__tu_label, *out);
    if (!st) (void)hpj__label_range(*out, rows, fname[f], vmin, vmax);
    return st;
}

static int hpj__cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Edge labels (one per record) copied to the CSR entries that
   hpj__dataset_edges made of the records. */
static hpj_status hpj__dataset_edge_labels(hpj_dataset *ds, const hpj__entries *e, const int32_t *lab, const char *name) {
    int64_t i;
    ds->edge_label = (int32_t *)hpj__calloc((size_t)ds->num_edges + 1, sizeof(int32_t), name);
    if (!ds->edge_label) return HPJ_ERR_NOMEM;
    for (i = 0; i < ds->num_edges; ++i) ds->edge_label[i] = lab[e->rec[e->order[i]]];
    return HPJ_OK;
}

/* The same for edge attributes, w per record (attr may be NULL when there
   are no records). */
static hpj_status hpj__dataset_edge_attrs(hpj_dataset *ds, const hpj__entries *e, const float *attr, int32_t w,
                                          const char *name) {
    int64_t i;
    ds->edge_attr_dim = w;
    ds->edge_attr = (float *)hpj__calloc((size_t)ds->num_edges + 1, (size_t)w * sizeof(float), name);
    if (!ds->edge_attr) return HPJ_ERR_NOMEM;
    for (i = 0; i < ds->num_edges; ++i)
        memcpy(ds->edge_attr + (size_t)i * (size_t)w, attr + (size_t)e->rec[e->order[i]] * (size_t)w, (size_t)w * sizeof(float));
    return HPJ_OK;
}

/* Names the dataset (cut to fit ds->name, which starts zeroed). */
static void hpj__dataset_name(hpj_dataset *ds, const char *name) {
    size_t nl = strlen(name);
    if (nl >= sizeof ds->name) nl = sizeof ds->name - 1;
    memcpy(ds->name, name, nl);
}

/* Replaces the raw labels in ds->graph_label by classes 0..C-1 in
   ascending order of the raw values, which class_value keeps. */
static hpj_status hpj__dataset_classes(hpj_dataset *ds, const char *name) {
    int32_t G = ds->num_graphs, c, g;
    int32_t *sorted = (int32_t *)hpj__copy(ds->graph_label, (size_t)G, sizeof(int32_t), name);
    if (!sorted) return HPJ_ERR_NOMEM;
    qsort(sorted, (size_t)G, sizeof(int32_t), hpj__cmp_i32);
    for (c = 0, g = 0; g < G; ++g)
        if (g == 0 || sorted[g] != sorted[g - 1]) sorted[c++] = sorted[g];
    ds->num_classes = c;
    ds->class_value = (int32_t *)hpj__copy(sorted, (size_t)c, sizeof(int32_t), name);
    hpj__free(sorted);
    if (!ds->class_value) return HPJ_ERR_NOMEM;
    for (g = 0; g < G; ++g) { /* binary search the class index */
        int32_t lo = 0, hi = c - 1, v = ds->graph_label[g];
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (ds->class_value[mid] < v) lo = mid + 1; else hi = mid;
        }
        ds->graph_label[g] = lo;
    }
    return HPJ_OK;
}

HPJDEF hpj_status hpj_dataset_parse_tu(const hpj_tu_text *files, hpj_dataset *out) {
    hpj__tu_fnames fname;
    const char *name = files->name ? files->name : "dataset";
    hpj_dataset ds;
    hpj__tu_edges edges;
    hpj_status st = HPJ_OK;
    hpj__entries ent;                       /* the edges of A's records          */
    int32_t *gind = NULL;                   /* (N) 0-based graph of each node    */
    int32_t *lab_line = NULL;               /* (m) edge label per A record       */
    float *eattr_line = NULL;               /* (m, w) edge attributes per record */
    int64_t N = 0, m = 0, i;
    int32_t G = 0, f, w;
    memset(&ds, 0, sizeof ds);
    memset(&ent, 0, sizeof ent);
    memset(out, 0, sizeof(*out));
    hpj__dataset_name(&ds, name);
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) {
        const char *pre = files->path_prefix ? files->path_prefix : name;
        size_t pl = strlen(pre), sl = strlen(hpj__tu_suffixes[f]);
        if (pl > 250) pre += pl - 250, pl = 250;
        memcpy(fname[f], pre, pl);
        fname[f][pl] = '_';
        memcpy(fname[f] + pl + 1, hpj__tu_suffixes[f], sl);
        memcpy(fname[f] + pl + 1 + sl, ".txt", 5);
        if (files->text[f] && (st = hpj__check_text(files->text[f], files->len[f], fname[f]))) return st;
    }
    if (!files->text[HPJ_TU_A]) return hpj__fail(HPJ_ERR_INPUT, "%s: missing (required)", fname[HPJ_TU_A]);
    if (!files->text[HPJ_TU_GRAPH_INDICATOR])
        return hpj__fail(HPJ_ERR_INPUT, "%s: missing (required)", fname[HPJ_TU_GRAPH_INDICATOR]);
    if (!files->text[HPJ_TU_GRAPH_LABELS] && !files->text[HPJ_TU_GRAPH_ATTRIBUTES])
        return hpj__fail(HPJ_ERR_INPUT, "%s: missing (a dataset needs graph labels or graph attributes)",
                         fname[HPJ_TU_GRAPH_LABELS]);

    /* -- graph indicator: contiguous, ascending graph ids 1..G -- */
    N = hpj__count_records(files->text[HPJ_TU_GRAPH_INDICATOR], files->len[HPJ_TU_GRAPH_INDICATOR]);
    if (N == 0) return hpj__fail(HPJ_ERR_FORMAT, "%s: no nodes", fname[HPJ_TU_GRAPH_INDICATOR]);
    if (N > INT32_MAX - 2) return hpj__fail(HPJ_ERR_FORMAT, "%s: %lld nodes exceed 2^31", fname[HPJ_TU_GRAPH_INDICATOR], (long long)N);
    gind = (int32_t *)hpj__calloc((size_t)N, sizeof(int32_t), name);
    if (!gind) return HPJ_ERR_NOMEM;
    /* lenient, read like a label file: "2.0" is graph 2 */
    if ((st = hpj__tu_records(files, fname, HPJ_TU_GRAPH_INDICATOR, 1, N, "nodes", hpj__tu_graph_id, gind))) goto done;
    G = gind[N - 1] + 1;
    ds.num_graphs = G;
    ds.num_nodes = N;
    ds.node_ptr = (int64_t *)hpj__calloc((size_t)G + 1, sizeof(int64_t), name);
    if (!ds.node_ptr) { st = HPJ_ERR_NOMEM; goto done; }
    for (i = 0; i < N; ++i) ds.node_ptr[gind[i] + 1]++;
    for (f = 0; f < G; ++f) ds.node_ptr[f + 1] += ds.node_ptr[f];

    /* -- A: edges, with optional aligned labels / attributes -- */
    m = hpj__count_records(files->text[HPJ_TU_A], files->len[HPJ_TU_A]);
    if (m > INT32_MAX / 2 - 1) { st = hpj__fail(HPJ_ERR_FORMAT, "%s: %lld edge lines exceed 2^30", fname[HPJ_TU_A], (long long)m); goto done; }
    if ((st = hpj__entries_alloc(&ent, m, N, name))) goto done;
    edges.gind = gind;
    edges.ent = &ent;
    edges.ds = &ds;
    if ((st = hpj__tu_records(files, fname, HPJ_TU_A, 0, m, "edge lines", hpj__tu_edge, &edges)) ||
        (st = hpj__dataset_edges(&ds, &ent, name)))
        goto done;
    /* edge labels and attributes: one per A record, then copied to the entries they name */
    if (files->text[HPJ_TU_EDGE_LABELS] &&
        ((st = hpj__tu_labels(files, fname, HPJ_TU_EDGE_LABELS, m, "edge lines in A", name, &lab_line, &ds.edge_label_min,
                              &ds.edge_label_max)) ||
         (st = hpj__dataset_edge_labels(&ds, &ent, lab_line, name))))
        goto done;
    if (files->text[HPJ_TU_EDGE_ATTRIBUTES] &&
        ((st = hpj__tu_real_rows(files, fname, HPJ_TU_EDGE_ATTRIBUTES, m, "edge lines in A", &eattr_line, &w)) ||
         (st = hpj__dataset_edge_attrs(&ds, &ent, eattr_line, w, name))))
        goto done;
    if (files->text[HPJ_TU_NODE_LABELS] &&
        (st = hpj__tu_labels(files, fname, HPJ_TU_NODE_LABELS, N, "nodes in graph_indicator", name, &ds.node_label,
                             &ds.node_label_min, &ds.node_label_max)))
        goto done;
    if (files->text[HPJ_TU_NODE_ATTRIBUTES] &&
        (st = hpj__tu_real_rows(files, fname, HPJ_TU_NODE_ATTRIBUTES, N, "nodes in graph_indicator", &ds.node_attr,
                                &ds.node_attr_dim)))
        goto done;
    if (files->text[HPJ_TU_GRAPH_LABELS] &&
        ((st = hpj__tu_labels(files, fname, HPJ_TU_GRAPH_LABELS, G, "graphs in graph_indicator", name, &ds.graph_label,
                              NULL, NULL)) ||
         (st = hpj__dataset_classes(&ds, name))))
        goto done;
    if (files->text[HPJ_TU_GRAPH_ATTRIBUTES] &&
        (st = hpj__tu_real_rows(files, fname, HPJ_TU_GRAPH_ATTRIBUTES, G, "graphs in graph_indicator", &ds.target,
                                &ds.target_dim)))
        goto done;
    if (files->text[HPJ_TU_SPLIT]) {
        ds.split = (int8_t *)hpj__calloc((size_t)G, 1, name);
        if (!ds.split) { st = HPJ_ERR_NOMEM; goto done; }
        if ((st = hpj__tu_records(files, fname, HPJ_TU_SPLIT, 0, G, "graphs", hpj__tu_split, ds.split))) goto done;
    }
done:
    hpj__entries_free(&ent);
    hpj__free(gind); hpj__free(lab_line); hpj__free(eattr_line);
    if (st) { hpj_dataset_free(&ds); return st; }
    *out = ds;
    return HPJ_OK;
}

/* rows x w floats must all be finite (what the TU reader accepts). */
static hpj_status hpj__csr_finite(const float *x, int64_t rows, int32_t w, const char *what) {
    int64_t r;
    int32_t k;
    for (r = 0; r < rows; ++r)
        for (k = 0; k < w; ++k) {
            float f = x[(size_t)r * (size_t)w + (size_t)k];
            if (!(f == f) || f > FLT_MAX || f < -FLT_MAX)
                return hpj__fail(HPJ_ERR_INPUT, "dataset_from_csr: %s[%lld][%d] is NaN or infinite", what, (long long)r, k);
        }
    return HPJ_OK;
}

/* A width that goes with its array: 1..2^20 when the array is given, 0
   when it is not. */
static hpj_status hpj__csr_width(const void *arr, int32_t w, const char *arr_name, const char *w_name) {
    if (arr && (w < 1 || w > (1 << 20)))
        return hpj__fail(HPJ_ERR_INPUT, "dataset_from_csr: %s = %d, expected 1..%d with %s", w_name, w, 1 << 20, arr_name);
    if (!arr && w != 0) return hpj__fail(HPJ_ERR_INPUT, "dataset_from_csr: %s = %d but %s is NULL", w_name, w, arr_name);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_dataset_from_csr(const hpj_csr_graphs *in, const char *name, hpj_dataset *out) {
    static const char *fn = "dataset_from_csr";
    hpj_dataset ds;
    hpj_status st = HPJ_OK;
    hpj__entries ent;
    int64_t N, E, v;
    int32_t G, g;
    memset(&ds, 0, sizeof ds);
    memset(&ent, 0, sizeof ent);
    if (!out) return hpj__fail(HPJ_ERR_INPUT, "%s: out is NULL", fn);
    memset(out, 0, sizeof(*out));
    if (!in) return hpj__fail(HPJ_ERR_INPUT, "%s: in is NULL", fn);
    if (!name) name = "dataset";
    G = in->num_graphs;
    /* -- check everything before allocating -- */
    if (G < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: num_graphs = %d, need at least one graph", fn, G);
    if (!in->node_ptr || !in->row_ptr)
        return hpj__fail(HPJ_ERR_INPUT, "%s: %s is NULL", fn, !in->node_ptr ? "node_ptr" : "row_ptr");
    if (in->node_ptr[0] != 0) return hpj__fail(HPJ_ERR_INPUT, "%s: node_ptr[0] = %lld, expected 0", fn, (long long)in->node_ptr[0]);
    for (g = 0; g < G; ++g)
        if (in->node_ptr[g + 1] <= in->node_ptr[g])
            return hpj__fail(HPJ_ERR_INPUT, "%s: node_ptr[%d] = %lld after node_ptr[%d] = %lld: graph %d needs at least one node", fn,
                             g + 1, (long long)in->node_ptr[g + 1], g, (long long)in->node_ptr[g], g);
        else if (in->node_ptr[g + 1] > INT32_MAX - 2)
            return hpj__fail(HPJ_ERR_INPUT, "%s: node_ptr[%d] = %lld: more than 2^31 - 3 nodes", fn, g + 1,
                             (long long)in->node_ptr[g + 1]);
    N = in->node_ptr[G];
    if (in->row_ptr[0] != 0) return hpj__fail(HPJ_ERR_INPUT, "%s: row_ptr[0] = %lld, expected 0", fn, (long long)in->row_ptr[0]);
    for (v = 0; v < N; ++v)
        if (in->row_ptr[v + 1] < in->row_ptr[v])
            return hpj__fail(HPJ_ERR_INPUT, "%s: row_ptr[%lld] = %lld after row_ptr[%lld] = %lld: row_ptr must not decrease",
                             fn, (long long)v + 1, (long long)in->row_ptr[v + 1], (long long)v, (long long)in->row_ptr[v]);
    E = in->row_ptr[N];
    /* the TU reader's limit: every entry and its reverse fit an int32 */
    if (E > INT32_MAX / 2 - 1) return hpj__fail(HPJ_ERR_INPUT, "%s: row_ptr[N] = %lld entries exceed 2^30 - 2", fn, (long long)E);
    if (E > 0 && !in->col) return hpj__fail(HPJ_ERR_INPUT, "%s: col is NULL with %lld entries", fn, (long long)E);
    for (g = 0; g < G; ++g) {
        int64_t v0 = in->node_ptr[g], n = in->node_ptr[g + 1] - v0, e;
        for (v = v0; v < v0 + n; ++v)
            for (e = in->row_ptr[v]; e < in->row_ptr[v + 1]; ++e)
                if (in->col[e] < 0 || in->col[e] >= n)
                    return hpj__fail(HPJ_ERR_INPUT, "%s: graph %d: node %lld lists neighbour %d, the graph has %lld nodes (col[%lld])",
                                     fn, g, (long long)(v - v0), (int)in->col[e], (long long)n, (long long)e);
    }
    if (!in->graph_label && !in->target)
        return hpj__fail(HPJ_ERR_INPUT, "%s: neither graph_label (classification) nor target (regression) is given", fn);
    if (in->graph_label && in->target)
        return hpj__fail(HPJ_ERR_INPUT, "%s: both graph_label and target are given: pass one, for classification or regression",
                         fn);
    if ((st = hpj__csr_width(in->node_attr, in->node_attr_dim, "node_attr", "node_attr_dim")) ||
        (st = hpj__csr_width(in->target, in->target_dim, "target", "target_dim")) ||
        (st = hpj__csr_width(in->edge_attr, in->edge_attr_dim, "edge_attr", "edge_attr_dim")))
        return st;
    if ((in->node_label && (st = hpj__label_range(in->node_label, N, "node_label", &ds.node_label_min, &ds.node_label_max))) ||
        (in->edge_label && (st = hpj__label_range(in->edge_label, E, "edge_label", &ds.edge_label_min, &ds.edge_label_max))) ||
        (in->graph_label && (st = hpj__label_range(in->graph_label, G, "graph_label", NULL, NULL))))
        return st;
    if ((in->node_attr && (st = hpj__csr_finite(in->node_attr, N, in->node_attr_dim, "node_attr"))) ||
        (in->edge_attr && (st = hpj__csr_finite(in->edge_attr, E, in->edge_attr_dim, "edge_attr"))) ||
        (in->target && (st = hpj__csr_finite(in->target, G, in->target_dim, "target"))))
        return st;

    /* -- build: the entries in input order, as the TU reader takes A's lines -- */
    hpj__dataset_name(&ds, name);
    ds.num_graphs = G;
    ds.num_nodes = N;
    ds.node_ptr = (int64_t *)hpj__calloc((size_t)G + 1, sizeof(int64_t), fn);
    if (!ds.node_ptr) { st = HPJ_ERR_NOMEM; goto done; }
    if ((st = hpj__entries_alloc(&ent, E, N, fn))) goto done;
    memcpy(ds.node_ptr, in->node_ptr, sizeof(int64_t) * ((size_t)G + 1));
    for (g = 0; g < G; ++g) {
        int64_t v0 = in->node_ptr[g], e;
        for (v = v0; v < in->node_ptr[g + 1]; ++v)
            for (e = in->row_ptr[v]; e < in->row_ptr[v + 1]; ++e) {
                int64_t u = v0 + in->col[e];
                if (u == v) ++ds.self_loops;
                else hpj__entries_add(&ent, (int32_t)v, (int32_t)u, (int32_t)e);
            }
    }
    if ((st = hpj__dataset_edges(&ds, &ent, fn)) ||
        (in->edge_label && (st = hpj__dataset_edge_labels(&ds, &ent, in->edge_label, fn))) ||
        (in->edge_attr && (st = hpj__dataset_edge_attrs(&ds, &ent, in->edge_attr, in->edge_attr_dim, fn))))
        goto done;
    if ((in->node_label && !(ds.node_label = (int32_t *)hpj__copy(in->node_label, (size_t)N, sizeof(int32_t), fn))) ||
        (in->node_attr &&
         !(ds.node_attr = (float *)hpj__copy(in->node_attr, (size_t)N, sizeof(float) * (size_t)in->node_attr_dim, fn))) ||
        (in->graph_label && !(ds.graph_label = (int32_t *)hpj__copy(in->graph_label, (size_t)G, sizeof(int32_t), fn))) ||
        (in->target && !(ds.target = (float *)hpj__copy(in->target, (size_t)G, sizeof(float) * (size_t)in->target_dim, fn)))) {
        st = HPJ_ERR_NOMEM;
        goto done;
    }
    ds.node_attr_dim = in->node_attr_dim; /* 0 without the array (checked above) */
    ds.target_dim = in->target_dim;
    if (in->graph_label && (st = hpj__dataset_classes(&ds, fn))) goto done;
done:
    hpj__entries_free(&ent);
    if (st) { hpj_dataset_free(&ds); return st; }
    *out = ds;
    return HPJ_OK;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_dataset_load_tu(const char *dir, hpj_dataset *out) {
    char prefix[1024], path[1100], name[256], *text;
    hpj_tu_text files;
    hpj_status st = HPJ_OK;
    size_t dl = strlen(dir), b;
    int f;
    memset(out, 0, sizeof(*out));
    memset(&files, 0, sizeof files);
    while (dl > 1 && dir[dl - 1] == '/') --dl; /* strip trailing slashes */
    for (b = dl; b > 0 && dir[b - 1] != '/'; --b) {}
    if (dl == b || dl - b >= sizeof name) return hpj__fail(HPJ_ERR_INPUT, "%s: cannot take a dataset name from this path", dir);
    if (dl + (dl - b) + 2 >= sizeof prefix) return hpj__fail(HPJ_ERR_INPUT, "%s: path too long", dir);
    /* "data/PROTEINS/" gives the name "PROTEINS" and the prefix "data/PROTEINS/PROTEINS" */
    snprintf(name, sizeof name, "%.*s", (int)(dl - b), dir + b);
    snprintf(prefix, sizeof prefix, "%.*s/%s", (int)dl, dir, name);
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) {
        FILE *fp;
        snprintf(path, sizeof path, "%s_%s.txt", prefix, hpj__tu_suffixes[f]);
        fp = fopen(path, "rb");
        if (!fp) {
            if (errno == ENOENT) continue; /* optional file absent; required ones are checked by the parser */
            if (errno == ENOTDIR) { /* "MUTAG/MUTAG_A.txt" for "MUTAG" */
                st = hpj__fail(HPJ_ERR_INPUT, "%s: not a folder (give the TU dataset's folder, the one holding "
                               "NAME_A.txt)", dir);
                goto done;
            }
            st = hpj__fail(HPJ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
            goto done;
        }
        fclose(fp);
        if ((st = hpj__read_file(path, &text, &files.len[f]))) goto done;
        files.text[f] = text;
    }
    files.name = name;
    files.path_prefix = prefix;
    if (!files.text[HPJ_TU_A] && !files.text[HPJ_TU_GRAPH_INDICATOR]) {
        st = hpj__fail(HPJ_ERR_IO, "%s_A.txt: cannot open: no such file (is %s a TUDataset folder?)", prefix, dir);
        goto done;
    }
    st = hpj_dataset_parse_tu(&files, out);
done:
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) hpj__free((void *)files.text[f]);
    return st;
}
#endif

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
#define HPJ__PART_HASH 2048          /* fast contraction: hash slots (2^k)   */

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

/* A partition of g into k parts under refinement, with what the moves
   keep up to date. A bisection is k = 2 with side bounds of its own. */
typedef struct hpj__kw {
    const hpj__pg *g;
    int32_t k;
    int32_t *part, *ed, *bnd, *bpos; /* (N) part, external degree, boundary */
    int32_t nbnd;
    int64_t *pw;      /* (K) part weights                                  */
    int32_t *cnt;     /* (K) vertices per part; NULL in a bisection        */
    int64_t cut, maxpart;
    int64_t maxw[2];  /* bisection: the bound of each side                 */
    int64_t slack;    /* ... tolerated excess while refining a coarse level */
    double tw0;       /* ... target weight of side 0 (side 1: W - tw0)     */
} hpj__kw;

/* Scratch of one partitioning call, sized for its largest graph (n0
   vertices) and k parts; every level and subgraph reuses it. */
typedef struct hpj__pws {
    int32_t *htab;   /* (n0) -1 between uses: slots while contracting  */
    int32_t *match;  /* (n0)                                           */
    int32_t *perm;   /* (n0)                                           */
    int32_t *tmp;    /* (n0)                                           */
    int32_t *ed;     /* (n0) external degree at the current level      */
    int32_t *bnd;    /* (n0) boundary vertices                         */
    int32_t *bpos;   /* (n0) index in bnd or -1                        */
    hpj__heap hp[2]; /* (n0) each, empty between uses; one pos array   */
    int32_t *mark;   /* (n0) pass stamps (locked vertices)             */
    int32_t *swaps;  /* (n0) FM move log                               */
    int32_t stamp;
    int64_t *pw;     /* (K) part weights                               */
    int32_t *cnt;    /* (K) vertices per part                          */
    int32_t *conn;   /* (K) 0 between uses: connectivity to each part  */
    int32_t *touched; /* (K)                                           */
#ifndef HPJ_REFERENCE
    int32_t *hkey;   /* (HPJ__PART_HASH) fast contraction: hashed slots */
    int32_t *edc;    /* (n0) fast projection: the coarser level's ed    */
#endif
    hpj__pctrl ctl;
    uint64_t runseed;
    int64_t maxpart;  /* balance bound of the final parts              */
    double ub;        /* per-bisection tolerance of recursive bisection */
    hpj_part_work *work; /* where every block of the call comes from    */
    int32_t bis_trials; /* initial bisection trials unless ctl.ntrials   */
    void *mem;
} hpj__pws;

/* ==== partition: workspace (reusable scratch blocks) ==== */

/* hpj_part_work: the blocks of a partitioning call come from here and go
   back here. The reference allocates each block and frees it on release;
   the fast part keeps released blocks for the next call of a similar
   size, so that a dataset of thousands of small graphs allocates only on
   its first few graphs. Which blocks a call gets never changes its
   result. */
#ifdef HPJ_REFERENCE
struct hpj_part_work {
    int unused; /* the reference keeps nothing between calls */
};
#else
#define HPJ__PW_SLOTS 48 /* cached blocks at most */
struct hpj_part_work {
    unsigned char *blk[HPJ__PW_SLOTS]; /* cached free blocks (header start) */
    size_t cap[HPJ__PW_SLOTS];         /* their payload bytes               */
    int nblk;
};
static void *hpj__fast_pw_alloc(hpj_part_work *pw, size_t bytes, const char *what);
static void hpj__fast_pw_release(hpj_part_work *pw, void *p);
static void hpj__fast_pw_drop(hpj_part_work *pw);
#endif

static void *hpj__pw_alloc(hpj_part_work *pw, size_t bytes, const char *what) {
#ifndef HPJ_REFERENCE
    if (hpj__fast()) return hpj__fast_pw_alloc(pw, bytes, what); /* fast: a cached block */
#endif
    (void)pw;
    return hpj__alloc(bytes ? bytes : 1, what);
}

static void hpj__pw_release(hpj_part_work *pw, void *p) {
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { hpj__fast_pw_release(pw, p); return; } /* fast: kept for the next call */
#endif
    (void)pw;
    hpj__free(p);
}

HPJDEF hpj_part_work *hpj_part_work_new(void) {
    return (hpj_part_work *)hpj__calloc(1, sizeof(hpj_part_work), "part_work_new");
}

HPJDEF void hpj_part_work_free(hpj_part_work *w) {
    if (!w) return;
#ifndef HPJ_REFERENCE
    hpj__fast_pw_drop(w); /* the blocks the fast part kept */
#endif
    hpj__free(w);
}

static void hpj__pg_free(hpj_part_work *pw, hpj__pg *g) {
    hpj__pw_release(pw, g->mem);
    g->mem = NULL;
}

/* Carves `count` int32 arrays of the given lengths out of one block. */
static void *hpj__part_block(hpj_part_work *pw, int32_t **arr[], const size_t *len, int count, const char *what) {
    size_t total = 0, off = 0, b;
    int i;
    unsigned char *mem;
    for (i = 0; i < count; ++i) {
        if (hpj__mul_size(len[i], sizeof(int32_t), &b) || hpj__add_size(total, b, &total)) {
            hpj__fail(HPJ_ERR_NOMEM, "%s: size overflow", what);
            return NULL;
        }
    }
    mem = (unsigned char *)hpj__pw_alloc(pw, total, what);
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

static void hpj__hp_update(hpj__heap *h, int32_t v, int32_t key) {
    int32_t i = h->pos[v], old = h->key[i];
    h->key[i] = key;
    if (key > old) hpj__hp_up(h, i);
    else if (key < old) hpj__hp_down(h, i);
}

/* Takes v out: the last entry fills its slot and moves up or down. */
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

static int32_t hpj__hp_pop(hpj__heap *h) {
    int32_t top = h->v[0];
    hpj__hp_remove(h, top);
    return top;
}

static void hpj__hp_clear(hpj__heap *h) {
    int32_t i;
    for (i = 0; i < h->n; ++i) h->pos[h->v[i]] = -1;
    h->n = 0;
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

/* Recounts the state of s from s->part: the external degree of each
   vertex, the boundary list (the vertices with ed > 0), the part weights,
   the vertex counts (when s->cnt) and the cut. */
static void hpj__kw_params(hpj__kw *s) {
    const hpj__pg *g = s->g;
    int32_t v, j;
    int64_t cut = 0;
    memset(s->pw, 0, sizeof(int64_t) * (size_t)s->k);
    if (s->cnt) memset(s->cnt, 0, sizeof(int32_t) * (size_t)s->k);
    s->nbnd = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t e = 0, p = s->part[v];
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j)
            if (s->part[g->adj[j]] != p) e += g->adjw[j];
        s->ed[v] = e;
        s->pw[p] += g->vw[v];
        if (s->cnt) s->cnt[p]++;
        cut += e;
        s->bpos[v] = -1;
        if (e > 0) hpj__bnd_set(s->bnd, s->bpos, &s->nbnd, v, 1);
    }
    s->cut = cut / 2;
}

/* A state for g's partition `part` into k parts in w's arrays, without
   vertex counts or bounds (the caller sets what it needs), not counted. */
static void hpj__kw_init(hpj__kw *s, hpj__pws *w, const hpj__pg *g, int32_t k, int32_t *part) {
    memset(s, 0, sizeof(*s));
    s->g = g;
    s->k = k;
    s->part = part;
    s->ed = w->ed;
    s->bnd = w->bnd;
    s->bpos = w->bpos;
    s->pw = w->pw;
}

/* What moving v out of its part gains: ed - id, the cut edge weight that
   becomes internal minus the internal one that becomes cut. */
static int32_t hpj__gain(const hpj__kw *s, int32_t v) { return 2 * s->ed[v] - s->g->wdeg[v]; }

#ifdef HPJ_DEBUG
/* HPJ_DEBUG: the tracked cut, part weights and counts, external degrees
   and boundary list of s equal a recount. */
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
        HPJ_ASSERT(w == s->pw[p] && (!s->cnt || c == s->cnt[p]));
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

/* ==== partition: workspace ==== */

static hpj_status hpj__pws_init(hpj__pws *w, hpj_part_work *pw, int32_t n0, int32_t k, const hpj__pctrl *ctl) {
    int32_t **arr[24];
    size_t len[24];
    int c = 0;
    size_t n = (size_t)(n0 > 0 ? n0 : 1), kk = (size_t)(k > 0 ? k : 1);
    int32_t *pw32 = NULL;
    memset(w, 0, sizeof(*w));
    w->work = pw;
    w->ctl = *ctl;
#define HPJ__PWS_ARR(field, count) (arr[c] = &w->field, len[c] = (count), ++c)
    HPJ__PWS_ARR(htab, n); HPJ__PWS_ARR(match, n); HPJ__PWS_ARR(perm, n); HPJ__PWS_ARR(tmp, n);
    HPJ__PWS_ARR(ed, n); HPJ__PWS_ARR(bnd, n); HPJ__PWS_ARR(bpos, n); HPJ__PWS_ARR(hp[0].pos, n);
    HPJ__PWS_ARR(hp[0].v, n); HPJ__PWS_ARR(hp[1].v, n); HPJ__PWS_ARR(hp[0].key, n); HPJ__PWS_ARR(hp[1].key, n);
    HPJ__PWS_ARR(mark, n); HPJ__PWS_ARR(swaps, n); HPJ__PWS_ARR(cnt, kk); HPJ__PWS_ARR(conn, kk); HPJ__PWS_ARR(touched, kk);
#ifndef HPJ_REFERENCE
    HPJ__PWS_ARR(hkey, HPJ__PART_HASH); HPJ__PWS_ARR(edc, n);
#endif
#undef HPJ__PWS_ARR
    arr[c] = &pw32; /* int64 part weights: 2 words per part, kept last */
    len[c] = 2 * kk + 2;
    ++c;
    w->mem = hpj__part_block(w->work, arr, len, c, "partition");
    if (!w->mem) return HPJ_ERR_NOMEM;
    /* align the int64 array to 8 bytes */
    w->pw = (int64_t *)(void *)(((uintptr_t)pw32 + 7) & ~(uintptr_t)7);
    w->hp[1].pos = w->hp[0].pos;
    memset(w->htab, 0xff, n * sizeof(int32_t));
    memset(w->hp[0].pos, 0xff, n * sizeof(int32_t));
    memset(w->bpos, 0xff, n * sizeof(int32_t));
    memset(w->mark, 0, n * sizeof(int32_t));
    memset(w->conn, 0, kk * sizeof(int32_t));
#ifndef HPJ_REFERENCE
    memset(w->hkey, 0xff, HPJ__PART_HASH * sizeof(int32_t));
#endif
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
   unmatched vertices that share a neighbour are matched (2-hop). */
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
        } else {
            for (j = xadj[v]; j < xadj[v + 1]; ++j) {
                int32_t u = adj[j];
                if (match[u] < 0 && u != v && adjw[j] > best && (int64_t)vw[v] + vw[u] <= maxvw) {
                    m = u;
                    best = adjw[j];
                    if (g->eqw) break; /* all weights equal: the first is a heaviest */
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

#ifndef HPJ_REFERENCE
static int32_t hpj__fast_contract_lists(const hpj__pg *g, hpj__pws *w, hpj__pg *c);
#endif

/* The coarse vertices' weights and neighbour lists, c->xadj, adj, adjw,
   vw and wdeg (see hpj__contract); returns the number of entries. The
   lists of a matched pair merge through w->htab, which maps a coarse
   neighbour to its slot in the list being built (-1 between vertices). */
static int32_t hpj__contract_lists(const hpj__pg *g, hpj__pws *w, hpj__pg *c) {
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *cmap = g->cmap, *vw = g->vw;
    int32_t *htab = w->htab, *ca = c->adj, *cw = c->adjw, v, e = 0;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) return hpj__fast_contract_lists(g, w, c); /* fast: short lists merged in a small table */
#endif
    c->xadj[0] = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t u = w->match[v], cv = cmap[v], start = e, d = 0, pass, x, j;
        if (u < v) continue; /* the pair's smaller vertex makes it */
        for (pass = 0; pass < (u == v ? 1 : 2); ++pass) {
            x = pass ? u : v;
            for (j = xadj[x]; j < xadj[x + 1]; ++j) {
                int32_t cu = cmap[adj[j]];
                if (cu == cv) continue; /* an edge inside the pair vanishes */
                d += adjw[j];
                if (htab[cu] >= 0) {
                    cw[htab[cu]] += adjw[j];
                } else {
                    htab[cu] = e;
                    ca[e] = cu;
                    cw[e++] = adjw[j];
                }
            }
        }
        for (j = start; j < e; ++j) htab[ca[j]] = -1;
        c->xadj[cv + 1] = e;
        c->vw[cv] = vw[v] + (u != v ? vw[u] : 0);
        c->wdeg[cv] = d;
    }
    return e;
}

/* Builds the coarse graph c of g from w->match and g->cmap: coarse vertex
   weights are sums, parallel edges merge (weights add), edges inside a
   pair vanish. */
static hpj_status hpj__contract(const hpj__pg *g, int32_t cn, hpj__pws *w, hpj__pg *c) {
    int32_t **arr[6];
    size_t len[6];
    memset(c, 0, sizeof(*c));
    arr[0] = &c->xadj; len[0] = (size_t)cn + 1;
    arr[1] = &c->vw; len[1] = (size_t)cn;
    arr[2] = &c->wdeg; len[2] = (size_t)cn;
    arr[3] = &c->cmap; len[3] = (size_t)cn;
    arr[4] = &c->adj; len[4] = (size_t)g->nnz;
    arr[5] = &c->adjw; len[5] = (size_t)g->nnz;
    c->mem = hpj__part_block(w->work, arr, len, 6, "partition: coarsening");
    if (!c->mem) return HPJ_ERR_NOMEM;
    c->nnz = hpj__contract_lists(g, w, c);
    c->n = cn;
    c->tvw = g->tvw;
    c->eqw = 0;
    c->coarse = 1;
    return HPJ_OK;
}

/* A hierarchy lev[0] (the caller's graph, borrowed) .. lev[nlev-1], and
   where the partition of each level lives while uncoarsening: level l's
   in part[l & 1], the caller's array (level 0) and one sized for level 1. */
typedef struct hpj__hier {
    int32_t nlev;
    hpj__pg lev[HPJ__PART_MAXLEVELS];
    int32_t *part[2];
} hpj__hier;

static void hpj__hier_free(hpj_part_work *pw, hpj__hier *h) {
    int32_t l;
    if (!h) return;
    for (l = 1; l < h->nlev; ++l) hpj__pg_free(pw, &h->lev[l]);
    hpj__pw_release(pw, h->part[1]);
    hpj__pw_release(pw, h);
}

/* A new hierarchy *hp of g (freed by hpj__hier_free, also after a
   failure), coarsened until at most `to` vertices remain or a level keeps
   more than 85 % of the vertices of the one before; out is part[0]. */
static hpj_status hpj__coarsen(hpj__hier **hp, const hpj__pg *g, int32_t to, int32_t *out, hpj__pws *w, hpj_rng *rng) {
    int64_t maxvw = (int64_t)(HPJ__PART_MAXVW * (double)g->tvw / (double)(to > 0 ? to : 1));
    hpj_status st;
    hpj__hier *h = *hp = (hpj__hier *)hpj__pw_alloc(w->work, sizeof(hpj__hier), "partition: hierarchy");
    if (!h) return HPJ_ERR_NOMEM;
    if (maxvw < 1) maxvw = 1;
    h->part[0] = out;
    h->part[1] = NULL;
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
    if (h->nlev > 1 &&
        !(h->part[1] = (int32_t *)hpj__pw_alloc(w->work, sizeof(int32_t) * (size_t)h->lev[1].n, "partition")))
        return HPJ_ERR_NOMEM;
    return HPJ_OK;
}

#ifndef HPJ_REFERENCE
static void hpj__fast_project(hpj__pws *w, hpj__kw *s, const hpj__pg *f, int32_t *part);
#endif

/* Uncoarsening: the partition of s (on the coarser level) projected onto
   f, its finer level, into part (each vertex goes where its coarse vertex
   went); then s is the state of f. Part weights and the cut stay. */
static void hpj__project(hpj__pws *w, hpj__kw *s, const hpj__pg *f, int32_t *part) {
    int32_t v;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { hpj__fast_project(w, s, f, part); return; } /* fast: only the old boundary rescanned */
#endif
    (void)w;
    for (v = 0; v < f->n; ++v) part[v] = s->part[f->cmap[v]];
    s->g = f;
    s->part = part;
    hpj__kw_params(s);
}

/* ==== partition: bisection (greedy growing, FM refinement) ==== */

/* Weight above the side bounds (each widened by the level's slack). */
static int64_t hpj__bis_infeas(const hpj__kw *b) {
    return HPJ__MAX(0, b->pw[0] - b->maxw[0] - b->slack) + HPJ__MAX(0, b->pw[1] - b->maxw[1] - b->slack);
}

/* METIS's tolerance for one level: an average vertex weight, at most 1/20
   of the total; coarse vertices are heavy and tight bounds would freeze
   them. The finest level is then balanced strictly. */
static int64_t hpj__bis_slack(const hpj__pg *g) {
    return g->n == 0 ? 0 : HPJ__MIN(g->tvw / 20, 2 * g->tvw / g->n);
}

static double hpj__bis_diff(const hpj__kw *b) { return fabs((double)b->pw[0] - b->tw0); }

/* 1 if (inf, cut, diff) is strictly better than the recorded best. */
static int hpj__bis_better(int64_t inf, int64_t cut, double diff, int64_t binf, int64_t bcut, double bdiff) {
    if (inf != binf) return inf < binf;
    if (cut != bcut) return cut < bcut;
    return diff < bdiff;
}

/* Moves v to the other side, updating weights, counts, cut, external
   degrees and the boundary; with hp, unlocked neighbours on side `only`
   (or on both sides when only < 0) are (re)keyed by their gain in
   hp[side]. */
static void hpj__bis_move(hpj__kw *b, int32_t v, hpj__heap *hp, const int32_t *mark, int32_t stamp, int only) {
    /* every array in a local: stores into ed[] could alias the struct
       fields otherwise, forcing a reload per neighbour */
    const hpj__pg *g = b->g;
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *wdeg = g->wdeg;
    int32_t *ed = b->ed, *part = b->part, *bnd = b->bnd, *bpos = b->bpos;
    int32_t from = part[v], to = 1 - from, j, je = xadj[v + 1], nbnd = b->nbnd;
    b->cut -= 2 * (int64_t)ed[v] - wdeg[v];
    b->pw[from] -= g->vw[v];
    b->pw[to] += g->vw[v];
    if (b->cnt) {
        b->cnt[from]--;
        b->cnt[to]++;
    }
    part[v] = to;
    ed[v] = wdeg[v] - ed[v];
    hpj__bnd_set(bnd, bpos, &nbnd, v, ed[v] > 0);
    for (j = xadj[v]; j < je; ++j) {
        int32_t u = adj[j], pu = part[u], e = ed[u] + (pu == to ? -adjw[j] : adjw[j]);
        ed[u] = e;
        hpj__bnd_set(bnd, bpos, &nbnd, u, e > 0);
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
static int hpj__bis_can_move(const hpj__kw *b, int32_t v, int from) {
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
static void hpj__bis_balance(hpj__kw *b, hpj__pws *w) {
    hpj__heap *hp = w->hp;
    int from, phase = 0;
    int32_t stamp, i, v;
    if (hpj__bis_infeas(b) == 0) return;
    /* the over-weight side: stop as soon as it is within bound + slack */
    from = (b->pw[0] - b->maxw[0] >= b->pw[1] - b->maxw[1]) ? 0 : 1;
    stamp = ++w->stamp;
    for (i = 0; i < b->nbnd; ++i)
        if (b->part[b->bnd[i]] == from) hpj__hp_push(&hp[from], b->bnd[i], hpj__gain(b, b->bnd[i]));
    while (b->pw[from] > b->maxw[from] + b->slack) {
        if (hp[from].n == 0) {
            if (phase++) break;
            for (v = 0; v < b->g->n; ++v)
                if (b->part[v] == from && w->mark[v] != stamp) hpj__hp_push(&hp[from], v, hpj__gain(b, v));
            if (hp[from].n == 0) break;
            continue;
        }
        v = hpj__hp_pop(&hp[from]);
        w->mark[v] = stamp;
        if (hpj__bis_can_move(b, v, from)) hpj__bis_move(b, v, hp, w->mark, stamp, from);
    }
    hpj__hp_clear(&hp[from]); /* only side `from` was queued */
}

/* Fiduccia-Mattheyses: each pass moves boundary vertices by best gain
   from the heavier side (each at most once), allowing uphill moves, and
   rolls back to the best state seen (fewest excess weight, then cut,
   then closeness to the target). Stops after niter passes or a pass that
   finds nothing better. */
static void hpj__bis_fm(hpj__kw *b, hpj__pws *w, int32_t niter, hpj_rng *rng) {
    hpj__heap *hp = w->hp;
    int32_t pass, limit = HPJ__MIN(HPJ__MAX(b->g->n / 100, HPJ__PART_FM_MIN), HPJ__PART_FM_MAX);
    double tw1 = (double)b->g->tvw - b->tw0;
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
        for (i = 0; i < nb; ++i) hpj__hp_push(&hp[b->part[w->tmp[i]]], w->tmp[i], hpj__gain(b, w->tmp[i]));
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
        HPJ__KW_CHECK(b);
        if (bestsw == 0) break;
    }
}

/* Greedy graph growing: side 1 grows from a random vertex, always taking
   the side-0 boundary vertex of best gain, until it reaches its target
   weight (a new random seed when the frontier runs dry). */
static void hpj__bis_grow(hpj__kw *b, hpj__pws *w, hpj_rng *rng) {
    const hpj__pg *g = b->g;
    hpj__heap *hp = w->hp;
    int32_t n = g->n, v, stamp = ++w->stamp, cursor, scanned = 0;
    double tw1 = (double)g->tvw - b->tw0;
    memset(b->part, 0, sizeof(int32_t) * (size_t)n); /* everything on side 0 */
    memset(b->ed, 0, sizeof(int32_t) * (size_t)n);
    memset(b->bpos, 0xff, sizeof(int32_t) * (size_t)n);
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
static hpj_status hpj__bis_initial(hpj__kw *b, hpj__pws *w, int32_t trials, hpj_rng *rng) {
    int32_t n = b->g->n, t;
    int32_t *best = (int32_t *)hpj__pw_alloc(w->work, sizeof(int32_t) * (size_t)n, "partition: bisection");
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
    hpj__pw_release(w->work, best);
    hpj__kw_params(b);
    return HPJ_OK;
}

/* Multilevel bisection of g: side 0 should weigh tw0 and sides at most
   maxw0 / maxw1. Writes 0/1 into part (N). */
static hpj_status hpj__mlbisect(hpj__pws *w, hpj__pg *g, double tw0, int64_t maxw0, int64_t maxw1, int32_t *part,
                                hpj_rng *rng) {
    hpj__hier *h = NULL;
    hpj__kw b;
    int32_t l, L;
    hpj_status st;
    /* small graphs (and small pieces of them) are bisected directly:
       trials on the real graph beat trials on a 20-vertex caricature of
       it, and cost little. Not coarse graphs (k-way's initial partition):
       their heavy vertices move in large steps, and the multilevel path's
       per-level slack lets them settle into lower cuts. */
    if ((st = hpj__coarsen(&h, g, g->n <= HPJ__PART_BIS_DIRECT && !g->coarse ? g->n : HPJ__PART_BIS_COARSEN_TO, part, w,
                           rng)) != HPJ_OK)
        goto done;
    L = h->nlev - 1;
    hpj__kw_init(&b, w, &h->lev[L], 2, h->part[L & 1]);
    b.tw0 = tw0;
    b.maxw[0] = maxw0;
    b.maxw[1] = maxw1;
    b.slack = L > 0 ? hpj__bis_slack(b.g) : 0;
    if ((st = hpj__bis_initial(&b, w, w->ctl.ntrials > 0 ? w->ctl.ntrials : w->bis_trials, rng)) != HPJ_OK) goto done;
    for (l = L - 1; l >= 0; --l) {
        hpj__project(w, &b, &h->lev[l], h->part[l & 1]);
        b.slack = l > 0 ? hpj__bis_slack(b.g) : 0;
        hpj__bis_balance(&b, w);
        hpj__bis_fm(&b, w, w->ctl.niter, rng);
    }
done:
    hpj__hier_free(w->work, h);
    return st;
}

/* ==== partition: recursive bisection ==== */

/* The subgraph c of g induced by side `side` of the bisection part2:
   edges to the other side are dropped, map (N) gets each vertex's number
   within its side and c->ids map to the caller's vertex ids. */
static hpj_status hpj__split(hpj_part_work *pw, const hpj__pg *g, const int32_t *part2, int side, int32_t *map,
                             hpj__pg *c) {
    int32_t v, j, n = 0, e = 0;
    int32_t **arr[7];
    size_t len[7];
    for (v = 0; v < g->n; ++v) {
        if (part2[v] != side) continue;
        map[v] = n++;
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) e += part2[g->adj[j]] == side;
    }
    memset(c, 0, sizeof(*c));
    arr[0] = &c->xadj; len[0] = (size_t)n + 1;
    arr[1] = &c->vw; len[1] = (size_t)n;
    arr[2] = &c->wdeg; len[2] = (size_t)n;
    arr[3] = &c->cmap; len[3] = (size_t)n;
    arr[4] = &c->ids; len[4] = (size_t)n;
    arr[5] = &c->adj; len[5] = (size_t)e;
    arr[6] = &c->adjw; len[6] = (size_t)e;
    if (!(c->mem = hpj__part_block(pw, arr, len, 7, "partition: recursive bisection"))) return HPJ_ERR_NOMEM;
    c->xadj[0] = 0;
    c->eqw = g->eqw;
    c->coarse = g->coarse;
    for (v = 0; v < g->n; ++v) {
        int32_t i = c->n, wd = 0;
        if (part2[v] != side) continue;
        for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) {
            if (part2[g->adj[j]] != side) continue;
            c->adj[c->nnz] = map[g->adj[j]];
            c->adjw[c->nnz++] = g->adjw[j];
            wd += g->adjw[j];
        }
        c->xadj[i + 1] = c->nnz;
        c->vw[i] = g->vw[v];
        c->wdeg[i] = wd;
        c->ids[i] = g->ids ? g->ids[v] : v;
        c->tvw += g->vw[v];
        c->n++;
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
    p2 = (int32_t *)hpj__pw_alloc(w->work, sizeof(int32_t) * (size_t)n, "partition: recursive bisection");
    if (!p2) return HPJ_ERR_NOMEM;
    if ((st = hpj__mlbisect(w, g, tw0, maxw0, maxw1, p2, &rng)) != HPJ_OK) { hpj__pw_release(w->work, p2); return st; }
    if (k == 2) {
        for (v = 0; v < n; ++v) out[HPJ__RB_ID(v)] = off + p2[v];
        hpj__pw_release(w->work, p2);
        return HPJ_OK;
    }
#undef HPJ__RB_ID
    if ((st = hpj__split(w->work, g, p2, 0, w->tmp, &sub[0])) == HPJ_OK &&
        (st = hpj__split(w->work, g, p2, 1, w->tmp, &sub[1])) != HPJ_OK)
        hpj__pg_free(w->work, &sub[0]);
    hpj__pw_release(w->work, p2);
    if (st != HPJ_OK) return st;
    st = hpj__rb(w, &sub[0], k0, off, out);
    hpj__pg_free(w->work, &sub[0]);
    if (st == HPJ_OK) st = hpj__rb(w, &sub[1], k1, off + k0, out);
    hpj__pg_free(w->work, &sub[1]);
    return st;
}

/* ==== partition: k-way refinement ==== */

/* Sums the edge weight from v to each part into w->conn and lists the
   parts it touches in w->touched; returns their number. The caller
   clears conn. */
static int32_t hpj__kw_scan(const hpj__kw *s, hpj__pws *w, int32_t v) {
    const hpj__pg *g = s->g;
    int32_t j, nt = 0;
    for (j = g->xadj[v]; j < g->xadj[v + 1]; ++j) {
        int32_t p = s->part[g->adj[j]];
        if (w->conn[p] == 0) w->touched[nt++] = p;
        w->conn[p] += g->adjw[j];
    }
    return nt;
}

/* Moves v to part `to` (cto = its edge weight into `to`, cfrom into its
   own part); with hp, unlocked neighbours with a gain >= 0 are (re)keyed
   by it, the others leave hp. */
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
            int keep = ed[u] > 0 && 2 * ed[u] >= g->wdeg[u]; /* gain >= 0 */
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
    int32_t nt = hpj__kw_scan(s, w, v), a = s->part[v], id = w->conn[a], t, best = -1, bg = 0;
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
    hpj__heap *hp = &w->hp[0];
    int32_t pass, i, p;
    int64_t minpw = (int64_t)floor((double)g->tvw / s->k / w->ctl.imb), mx = 0, save = s->maxpart;
    /* like METIS: never tighter than the balance we already have */
    for (p = 0; p < s->k; ++p) mx = HPJ__MAX(mx, s->pw[p]);
    s->maxpart = HPJ__MAX(s->maxpart, mx);
    for (pass = 0; pass < niter; ++pass) {
        int32_t stamp = ++w->stamp, nmoves = 0, iter = 0;
        int64_t oldcut = s->cut;
        for (i = 0; i < s->nbnd; ++i)
            if (hpj__gain(s, s->bnd[i]) >= 0) hpj__hp_push(hp, s->bnd[i], hpj__gain(s, s->bnd[i]));
        while (hp->n > 0) {
            int32_t v = hpj__hp_pop(hp), a = s->part[v], b, gain, cto, cfrom;
            w->mark[v] = stamp;
            ++iter;
            if (s->cnt[a] <= 1 || hpj__gain(s, v) < 0) continue;
            if (s->ed[v] < g->wdeg[v] && s->pw[a] - g->vw[v] < minpw) continue;
            b = hpj__kw_best(s, w, v, &gain, &cto, &cfrom);
            if (b < 0) continue;
            /* zero-gain moves: when they improve balance, and on every other
               vertex anyway so boundaries can drift across plateaus */
            if (gain > 0 || (gain == 0 && (s->pw[a] > s->maxpart || s->pw[b] + g->vw[v] < s->pw[a] || (iter & 1)))) {
                hpj__kw_move(s, v, b, cto, cfrom, hp, w->mark, stamp);
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
    hpj__heap *hp = &w->hp[0];
    int32_t p, v, i, stamp, light = -1, gain, cto, cfrom;
    int over = 0;
    for (p = 0; p < s->k; ++p) over |= s->pw[p] > s->maxpart;
    if (!over) return;
    stamp = ++w->stamp;
    for (i = 0; i < s->nbnd; ++i) {
        v = s->bnd[i];
        if (s->pw[s->part[v]] > s->maxpart && hpj__kw_best(s, w, v, &gain, &cto, &cfrom) >= 0) hpj__hp_push(hp, v, gain);
    }
    while (hp->n > 0) {
        int32_t a, b;
        v = hpj__hp_pop(hp);
        a = s->part[v];
        if (s->pw[a] <= s->maxpart || s->cnt[a] <= 1) continue;
        b = hpj__kw_best(s, w, v, &gain, &cto, &cfrom);
        if (b >= 0) hpj__kw_move(s, v, b, cto, cfrom, NULL, w->mark, stamp);
    }
    /* whatever is still over goes to the lightest parts */
    for (v = 0; v < g->n; ++v) {
        int32_t a = s->part[v], nt, t;
        if (s->pw[a] <= s->maxpart || s->cnt[a] <= 1) continue;
        if (light < 0 || light == a || s->pw[light] + g->vw[v] > s->maxpart) {
            light = -1;
            for (p = 0; p < s->k; ++p)
                if (p != a && (light < 0 || s->pw[p] < s->pw[light])) light = p;
            if (light < 0 || s->pw[light] + g->vw[v] >= s->pw[a]) continue;
        }
        nt = hpj__kw_scan(s, w, v);
        cto = w->conn[light];
        cfrom = w->conn[a];
        for (t = 0; t < nt; ++t) w->conn[w->touched[t]] = 0;
        hpj__kw_move(s, v, light, cto, cfrom, NULL, w->mark, stamp);
    }
    HPJ__KW_CHECK(s);
}

/* The weight of each part into pw (k), the cut and the heaviest part. */
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

/* 1 if a partition with cut c and heaviest part m beats the best so far
   (bcut, bmax): meeting the bound comes first, then the lower cut, then
   the lighter heaviest part. */
static int hpj__part_better(int64_t c, int64_t m, int64_t bcut, int64_t bmax, int64_t maxpart) {
    if ((m <= maxpart) != (bmax <= maxpart)) return m <= maxpart;
    return c < bcut || (c == bcut && m < bmax);
}

/* Multilevel k-way: coarsen to max(n / (20 log2 k), 30 k) vertices,
   recursive bisection of the coarsest graph, then balance + greedy
   refinement at every level on the way back. */
static hpj_status hpj__kway(hpj__pws *w, hpj__pg *g, int32_t k, int32_t *out) {
    hpj__hier *h = NULL;
    hpj__kw s;
    int32_t *cur = NULL, l, L, lg = 0, to, nip, i;
    int64_t bcut = 0, bmax = 0, c, m;
    uint64_t seed0 = w->runseed;
    hpj_rng rng = hpj_rng_stream(w->runseed, 0xC0A25E, (uint64_t)k);
    hpj_status st;
    while ((1 << (lg + 1)) <= k && lg < 30) ++lg;
    if (lg < 1) lg = 1;
    to = HPJ__MAX(g->n / (HPJ__PART_KWAY_DIV * lg), HPJ__PART_KWAY_PER_PART * k);
    if (to < HPJ__PART_BIS_DIRECT) to = HPJ__PART_BIS_DIRECT;
    if ((st = hpj__coarsen(&h, g, to, out, w, &rng)) != HPJ_OK) goto done;
    L = h->nlev - 1;
    if (!(cur = (int32_t *)hpj__pw_alloc(w->work, sizeof(int32_t) * (size_t)h->lev[L].n, "partition: k-way"))) {
        st = HPJ_ERR_NOMEM;
        goto done;
    }
    /* best of nip recursive bisections of the coarsest graph (METIS: 4
       or 5), each with its own seed and ub^(1/ln k) per bisection; a
       dataset-sized graph (<= 5000 vertices) gets 2 cheaper ones, for
       the many small graphs of a dataset */
    nip = g->n <= HPJ__PART_SMALL_GRAPH ? 2 : to == HPJ__PART_KWAY_PER_PART * k ? 4 : 5;
    w->ub = pow(w->ctl.imb, 1.0 / log((double)(k > 2 ? k : 3)));
    w->bis_trials = g->n <= HPJ__PART_SMALL_GRAPH ? HPJ__PART_KWAY_TRIALS : HPJ__PART_BIS_TRIALS;
    for (i = 0; i < nip; ++i) {
        hpj_rng r = hpj_rng_stream(seed0, 0x1417, (uint64_t)i);
        w->runseed = hpj_rng_u64(&r);
        if ((st = hpj__rb(w, &h->lev[L], k, 0, cur)) != HPJ_OK) goto done;
        hpj__part_measure(&h->lev[L], cur, k, w->pw, &c, &m);
        if (i == 0 || hpj__part_better(c, m, bcut, bmax, w->maxpart)) {
            bcut = c;
            bmax = m;
            memcpy(h->part[L & 1], cur, sizeof(int32_t) * (size_t)h->lev[L].n);
        }
        if (bcut == 0 && bmax <= w->maxpart) break;
    }
    hpj__kw_init(&s, w, &h->lev[L], k, h->part[L & 1]);
    s.cnt = w->cnt;
    s.maxpart = s.maxw[0] = s.maxw[1] = w->maxpart;
    s.tw0 = (double)g->tvw / 2;
    hpj__kw_params(&s);
    for (l = L;; --l) {
        /* two parts: FM (hill climbing with rollback) first, then the
           greedy k-way pass, whose zero-gain moves use the balance slack
           that FM (always moving from the heavier side) leaves unused */
        if (k == 2) {
            s.slack = l > 0 ? hpj__bis_slack(s.g) : 0;
            hpj__bis_balance(&s, w);
            hpj__bis_fm(&s, w, w->ctl.niter, &rng);
        } else {
            hpj__kw_balance(&s, w);
        }
        hpj__kw_refine(&s, w, w->ctl.niter);
        if (l == 0) break;
        hpj__project(w, &s, &h->lev[l - 1], h->part[(l - 1) & 1]);
    }
done:
    hpj__pw_release(w->work, cur);
    hpj__hier_free(w->work, h);
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

static hpj_status hpj__part_ctrl(const hpj_part_options *opt, hpj__pctrl *c) {
    hpj_part_options d;
    if (!opt) {
        hpj_part_options_default(&d);
        opt = &d;
    }
    if (opt->method != HPJ_PART_KWAY && opt->method != HPJ_PART_RB)
        return hpj__fail(HPJ_ERR_INPUT, "partition: unknown method %d (HPJ_PART_KWAY or HPJ_PART_RB)",
                         (int)opt->method);
    if (!(opt->ufactor >= 1.0f && opt->ufactor <= 1000.0f))
        return hpj__fail(HPJ_ERR_INPUT, "partition: ufactor %g must be in 1..1000", (double)opt->ufactor);
    if (opt->ncuts < 1 || opt->ncuts > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: ncuts %d must be in 1..1000", (int)opt->ncuts);
    if (opt->niter < 0 || opt->niter > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: niter %d must be in 0..1000", (int)opt->niter);
    if (opt->ntrials < 0 || opt->ntrials > 1000)
        return hpj__fail(HPJ_ERR_INPUT, "partition: ntrials %d must be in 0..1000 (0 = automatic)", (int)opt->ntrials);
    c->method = opt->method;
    c->imb = (double)opt->ufactor;
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

HPJDEF void hpj_part_options_default(hpj_part_options *o) {
    memset(o, 0, sizeof(*o));
    o->method = HPJ_PART_KWAY;
    o->ncuts = 1;
    o->ufactor = 1.03f;
    o->seed = 1;
    o->niter = 10;
    o->ntrials = 0;
}

/* The summed weight of g's edges between parts (self-loops ignored). */
static int64_t hpj__graph_cut(const hpj_graph *g, const int32_t *part) {
    int32_t v, i;
    int64_t cut = 0;
    for (v = 0; v < g->n; ++v)
        for (i = g->rowptr[v]; i < g->rowptr[v + 1]; ++i)
            if (g->col[i] != v && part[g->col[i]] != part[v]) cut += g->ewgt ? g->ewgt[i] : 1;
    return cut / 2;
}

HPJDEF int64_t hpj_partition_cut(const hpj_graph *g, const int32_t *part) {
    if (!g || g->n < 0 || (g->n > 0 && (!part || !g->rowptr))) return -1;
    return hpj__graph_cut(g, part);
}

HPJDEF double hpj_partition_imbalance(const hpj_graph *g, int32_t k, const int32_t *part) {
    hpj_partition_stats st;
    if (hpj_partition_evaluate(g, k, part, &st) != HPJ_OK) return -1.0;
    return st.imbalance;
}

HPJDEF hpj_status hpj_partition_evaluate(const hpj_graph *g, int32_t k, const int32_t *part, hpj_partition_stats *st) {
    int32_t v, i;
    int64_t *pw, mx = 0, tot = 0;
    if (!st) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: stats is NULL");
    memset(st, 0, sizeof(*st));
    if (!g || g->n < 0) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: no graph");
    if (k < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: k=%d must be >= 1", k);
    if (g->n > 0 && !part) return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: part is NULL");
    for (v = 0; v < g->n; ++v)
        if (part[v] < 0 || part[v] >= k)
            return hpj__fail(HPJ_ERR_INPUT, "partition_evaluate: vertex %d has part %d outside 0..%d", v, part[v], k - 1);
    /* pw[p] the weight of part p, pw[k + p] 1 if it holds a vertex (a
       non-empty part may weigh 0) */
    pw = (int64_t *)hpj__calloc(2 * (size_t)k, sizeof(int64_t), "partition_evaluate");
    if (!pw) return HPJ_ERR_NOMEM;
    for (v = 0; v < g->n; ++v) {
        int64_t w = g->vwgt ? g->vwgt[v] : 1;
        pw[part[v]] += w;
        pw[k + part[v]] = 1;
        tot += w;
    }
    for (i = 0; i < k; ++i) {
        mx = HPJ__MAX(mx, pw[i]);
        st->nonempty += (int32_t)pw[k + i];
    }
    hpj__free(pw);
    st->edgecut = hpj__graph_cut(g, part);
    st->max_part_weight = mx;
    st->total_weight = tot;
    st->imbalance = tot > 0 ? (double)mx * (double)k / (double)tot : 1.0;
    return HPJ_OK;
}

#ifndef HPJ_REFERENCE
static hpj_status hpj__fast_level0(const hpj_graph *gin, hpj_part_work *pw, hpj__pg *g0, int32_t **cur);
#endif

/* Level 0 of the hierarchy: the caller's graph without its self-loops,
   every weight present (1 where the caller gave none); cur (n) comes in
   the same block. g0->n and tvw are set. */
static hpj_status hpj__level0(const hpj_graph *gin, int64_t loops, hpj_part_work *pw, hpj__pg *g0, int32_t **cur) {
    int32_t **arr[7], n = gin->n, v, j;
    size_t len[7];
    g0->eqw = gin->ewgt == NULL;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && loops == 0) return hpj__fast_level0(gin, pw, g0, cur); /* fast: the caller's arrays borrowed */
#endif
    arr[0] = &g0->xadj; len[0] = (size_t)n + 1;
    arr[1] = &g0->adj; len[1] = (size_t)(gin->nnz - loops);
    arr[2] = &g0->adjw; len[2] = (size_t)(gin->nnz - loops);
    arr[3] = &g0->vw; len[3] = (size_t)n;
    arr[4] = &g0->wdeg; len[4] = (size_t)n;
    arr[5] = &g0->cmap; len[5] = (size_t)n;
    arr[6] = cur; len[6] = (size_t)n;
    if (!(g0->mem = hpj__part_block(pw, arr, len, 7, "partition"))) return HPJ_ERR_NOMEM;
    g0->xadj[0] = 0;
    for (v = 0; v < n; ++v) {
        g0->vw[v] = gin->vwgt ? gin->vwgt[v] : 1;
        g0->wdeg[v] = 0;
        for (j = gin->rowptr[v]; j < gin->rowptr[v + 1]; ++j) {
            if (gin->col[j] == v) continue;
            g0->adj[g0->nnz] = gin->col[j];
            g0->adjw[g0->nnz] = gin->ewgt ? gin->ewgt[j] : 1;
            g0->wdeg[v] += g0->adjw[g0->nnz++];
        }
        g0->xadj[v + 1] = g0->nnz;
    }
    return HPJ_OK;
}

/* One graph, validated options. */
static hpj_status hpj__part_graph(const hpj_graph *gin, int32_t k, const hpj__pctrl *ctl, hpj_part_work *pw,
                                  int32_t *part, int64_t *edgecut) {
    hpj__pws w;
    hpj__pg g0;
    int64_t loops, tvw, bestcut = 0, bestmax = 0;
    int32_t n = gin->n, kk, v, cut_i, *cur = NULL, *best = NULL;
    hpj_status st;
    if (k < 1) return hpj__fail(HPJ_ERR_INPUT, "partition: k=%d must be >= 1", k);
    if ((st = hpj__part_check(gin, &loops, &tvw)) != HPJ_OK) return st;
    kk = HPJ__MIN(k, n);
    if (n == 0) {
        if (edgecut) *edgecut = 0;
        return HPJ_OK;
    }
    if (kk == 1 || kk == n) {
        for (v = 0; v < n; ++v) part[v] = kk == 1 ? 0 : v;
        if (edgecut) *edgecut = kk == 1 ? 0 : hpj_partition_cut(gin, part);
        return HPJ_OK;
    }
    memset(&g0, 0, sizeof g0);
    g0.n = n;
    g0.tvw = tvw;
    if ((st = hpj__level0(gin, loops, pw, &g0, &cur)) != HPJ_OK) return st;
    if ((st = hpj__pws_init(&w, pw, n, kk, ctl)) != HPJ_OK) { hpj__pg_free(pw, &g0); return st; }
    {
        double ideal = (double)tvw / kk;
        int32_t lg = 0;
        w.maxpart = HPJ__MAX((int64_t)floor(ctl->imb * ideal), (int64_t)ceil(ideal));
        while ((1 << lg) < kk && lg < 31) ++lg;
        w.ub = pow(ctl->imb, 1.0 / (lg > 0 ? lg : 1));
        w.bis_trials = HPJ__PART_BIS_TRIALS;
    }
    if (ctl->ncuts > 1 && !(best = (int32_t *)hpj__pw_alloc(pw, sizeof(int32_t) * (size_t)n, "partition"))) {
        st = HPJ_ERR_NOMEM;
        goto done;
    }
    for (cut_i = 0; cut_i < ctl->ncuts; ++cut_i) {
        int64_t cut, mx;
        hpj_rng r = hpj_rng_stream(ctl->seed, 0x9A27, (uint64_t)cut_i);
        w.runseed = hpj_rng_u64(&r);
        st = ctl->method == HPJ_PART_RB ? hpj__rb(&w, &g0, kk, 0, cur) : hpj__kway(&w, &g0, kk, cur);
        if (st != HPJ_OK) goto done;
        hpj__fill_empty(&g0, cur, kk, w.cnt);
        hpj__part_measure(&g0, cur, kk, w.pw, &cut, &mx);
        if (cut_i == 0 || hpj__part_better(cut, mx, bestcut, bestmax, w.maxpart)) {
            bestcut = cut;
            bestmax = mx;
            if (best) memcpy(best, cur, sizeof(int32_t) * (size_t)n);
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
    if (edgecut) *edgecut = bestcut;
done:
    hpj__pw_release(pw, best);
    hpj__pw_release(pw, w.mem);
    hpj__pg_free(pw, &g0);
    return st;
}

HPJDEF hpj_status hpj_partition(const hpj_graph *g, int32_t k, const hpj_part_options *opt, hpj_part_work *w,
                                int32_t *part, int64_t *edgecut) {
    hpj__pctrl ctl;
    hpj_status st;
    hpj_part_work *tmp = NULL;
    if ((st = hpj__part_ctrl(opt, &ctl)) != HPJ_OK) return st;
    if (!g) return hpj__fail(HPJ_ERR_INPUT, "partition: graph is NULL");
    if (g->n > 0 && !part) return hpj__fail(HPJ_ERR_INPUT, "partition: part is NULL");
    if (!w) {
        tmp = hpj_part_work_new();
        if (!tmp) return HPJ_ERR_NOMEM;
        w = tmp;
    }
    st = hpj__part_graph(g, k, &ctl, w, part, edgecut);
    hpj_part_work_free(tmp);
    return st;
}


/* Graph gi of ds at every resolution l into part (L, N), each with its
   own seed; nparts (G, L) when not NULL. */
static hpj_status hpj__part_levels(const hpj_dataset *ds, int32_t gi, const int32_t *K, int32_t L, const hpj__pctrl *ctl,
                                   hpj_part_work *tw, int32_t *part, int32_t *nparts) {
    hpj_graph g = hpj_dataset_graph(ds, gi);
    hpj_status st;
    int32_t l;
    for (l = 0; l < L; ++l) {
        hpj__pctrl c = *ctl;
        hpj_rng r = hpj_rng_stream(ctl->seed, (uint64_t)l, (uint64_t)gi);
        c.seed = hpj_rng_u64(&r);
        if ((st = hpj__part_graph(&g, K[l], &c, tw, part + (int64_t)l * ds->num_nodes + ds->node_ptr[gi], NULL)) != HPJ_OK)
            return st;
        if (nparts) nparts[(int64_t)gi * L + l] = HPJ__MIN(K[l], g.n);
    }
    return HPJ_OK;
}

HPJDEF hpj_status hpj_partition_dataset(const hpj_dataset *ds, const int32_t *K, int32_t L, const hpj_part_options *opt,
                                        int32_t *part, int32_t *nparts) {
    hpj__pctrl ctl;
    hpj_status st;
    int32_t l, G, gi;
    signed char *fail;
    if ((st = hpj__part_ctrl(opt, &ctl)) != HPJ_OK) return st;
    if (!ds || !K || !part) return hpj__fail(HPJ_ERR_INPUT, "partition_dataset: NULL argument");
    if (L < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_dataset: L=%d must be >= 1", L);
    for (l = 0; l < L; ++l)
        if (K[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "partition_dataset: K[%d]=%d must be >= 1", l, K[l]);
    G = ds->num_graphs;
    fail = (signed char *)hpj__calloc((size_t)(G > 0 ? G : 1), 1, "partition_dataset");
    if (!fail) return HPJ_ERR_NOMEM;
    HPJ__OMP(parallel)
    {
        /* one workspace per thread: which graphs share one never matters */
        hpj_part_work *tw = hpj_part_work_new();
        HPJ__OMP(for schedule(dynamic, 4))
        for (gi = 0; gi < G; ++gi)
            if (!tw || hpj__part_levels(ds, gi, K, L, &ctl, tw, part, nparts) != HPJ_OK) fail[gi] = 1;
        hpj_part_work_free(tw);
    }
    for (gi = 0; gi < G; ++gi) {
        hpj_part_work *tw;
        char msg[HPJ__ERRLEN];
        if (!fail[gi]) continue;
        /* redo the first failing graph on this thread for its reason */
        hpj__free(fail);
        tw = hpj_part_work_new();
        st = tw ? hpj__part_levels(ds, gi, K, L, &ctl, tw, part, NULL) : HPJ_ERR_NOMEM;
        hpj_part_work_free(tw);
        if (st == HPJ_OK) st = HPJ_ERR_NOMEM;
        memcpy(msg, hpj__errbuf, sizeof msg);
        msg[sizeof msg - 1] = 0;
        return hpj__fail(st, "partition_dataset: graph %d: %s", gi, msg);
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

/* ==== tokenizer: random-walk structural encoding ========================== */

/* Sources walked together: one 16-float row per node holds the walk
   vectors of 16 source nodes, a short fixed-length loop compilers
   vectorise. */
#define HPJ__RW_W 16

HPJDEF size_t hpj_rwse_scratch_bytes(int32_t n) {
    size_t nn = (size_t)(n > 0 ? n : 0) + 1;
    return (2 * HPJ__RW_W + 1) * nn * sizeof(float) + 3 * nn * sizeof(int32_t) + 64;
}

HPJDEF void hpj_rwse(const hpj_graph *g, int rw_dim, float *rw, void *scratch) {
    /* diag((D^-1 A)^k) equals diag(S^k) for the symmetric S = D^-1/2 A D^-1/2
       (similar matrices). With x_j = S^j e_v: (S^2j)_vv = <x_j, x_j> and
       (S^(2j+1))_vv = <x_j, x_(j+1)>, so ceil(rw_dim/2) propagations per
       source suffice. 16 sources (consecutive node ids) walk at once: row w
       of X holds x_j(w) of each of them, so one edge moves 16 numbers, and
       the propagation scatters only from the rows in the union of their
       supports (kept in a list), so sparse neighbourhoods stay cheap. X and
       Y are zero outside their supports at all times. */
    const int W = HPJ__RW_W;
    int32_t n = g->n, v0, v, i, tick = 0;
    float *X = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *Y = X + (size_t)W * (n + 1), *sq = Y + (size_t)W * (n + 1);
    int32_t *sx = (int32_t *)(void *)(sq + n + 1), *sy = sx + n + 1, *stamp = sy + n + 1;
    int steps = (rw_dim + 1) / 2, j, s;
    for (v = 0; v < n; ++v) {
        int32_t d = g->rowptr[v + 1] - g->rowptr[v];
        sq[v] = sqrtf((float)(d > 0 ? d : 1));
        stamp[v] = -1;
        for (s = 0; s < W; ++s) X[(size_t)v * W + s] = Y[(size_t)v * W + s] = 0.0f;
    }
    for (v0 = 0; v0 < n; v0 += W) {
        int nb = n - v0 < W ? n - v0 : W; /* sources v0 .. v0+nb-1 */
        int32_t nx = nb, ny, a;
        for (s = 0; s < nb; ++s) {
            X[(size_t)(v0 + s) * W + s] = 1.0f;
            sx[s] = v0 + s;
        }
        for (j = 0; j <= steps; ++j) {
            double self[HPJ__RW_W], cross[HPJ__RW_W];
            float *tf;
            int32_t *ti;
            for (s = 0; s < W; ++s) self[s] = cross[s] = 0.0;
            for (a = 0; a < nx; ++a) {
                const float *xw = X + (size_t)sx[a] * W;
                for (s = 0; s < W; ++s) self[s] += (double)xw[s] * xw[s];
            }
            if (j > 0 && 2 * j - 1 < rw_dim) /* k = 2j */
                for (s = 0; s < nb; ++s) rw[(size_t)(v0 + s) * rw_dim + 2 * j - 1] = (float)self[s];
            if (2 * j >= rw_dim) break;
            ny = 0; /* Y = S X */
            ++tick;
            for (a = 0; a < nx; ++a) {
                int32_t w = sx[a];
                float c[HPJ__RW_W], q = sq[w];
                const float *xw = X + (size_t)w * W;
                if (g->rowptr[w + 1] == g->rowptr[w]) continue;
                for (s = 0; s < W; ++s) c[s] = xw[s] / q;
                for (i = g->rowptr[w]; i < g->rowptr[w + 1]; ++i) {
                    int32_t u = g->col[i];
                    float *yu = Y + (size_t)u * W;
                    if (stamp[u] != tick) { stamp[u] = tick; sy[ny++] = u; }
                    for (s = 0; s < W; ++s) yu[s] += c[s];
                }
            }
            for (a = 0; a < ny; ++a) {
                float *yu = Y + (size_t)sy[a] * W, q = sq[sy[a]];
                for (s = 0; s < W; ++s) yu[s] /= q;
            }
            for (a = 0; a < nx; ++a) {
                const float *xw = X + (size_t)sx[a] * W, *yw = Y + (size_t)sx[a] * W;
                for (s = 0; s < W; ++s) cross[s] += (double)xw[s] * yw[s];
            }
            for (s = 0; s < nb; ++s) rw[(size_t)(v0 + s) * rw_dim + 2 * j] = (float)cross[s]; /* k = 2j+1 */
            for (a = 0; a < nx; ++a)
                for (s = 0; s < W; ++s) X[(size_t)sx[a] * W + s] = 0.0f;
            tf = X; X = Y; Y = tf;
            ti = sx; sx = sy; sy = ti;
            nx = ny;
        }
        for (a = 0; a < nx; ++a)
            for (s = 0; s < W; ++s) X[(size_t)sx[a] * W + s] = 0.0f;
    }
}

/* The number of nodes of the dataset's largest graph (0 when empty). */
static int32_t hpj__max_nodes(const hpj_dataset *ds) {
    int32_t g, maxn = 0;
    for (g = 0; g < ds->num_graphs; ++g) maxn = HPJ__MAX(maxn, (int32_t)(ds->node_ptr[g + 1] - ds->node_ptr[g]));
    return maxn;
}

HPJDEF hpj_status hpj_dataset_rwse(const hpj_dataset *ds, int rw_dim, float *out) {
    int32_t g;
    int32_t maxn = hpj__max_nodes(ds);
    int failed = 0;
    if (rw_dim < 1 || rw_dim > 256) return hpj__fail(HPJ_ERR_INPUT, "rwse: rw_dim %d outside 1..256", rw_dim);
    HPJ__OMP(parallel)
    {
        void *scratch = hpj__alloc(hpj_rwse_scratch_bytes(maxn), "rwse");
        if (!scratch) {
            HPJ__OMP(atomic write)
            failed = 1;
        }
        HPJ__OMP(for schedule(dynamic, 4))
        for (g = 0; g < ds->num_graphs; ++g) {
            hpj_graph gr = hpj_dataset_graph(ds, g);
            if (!scratch) continue;
            hpj_rwse(&gr, rw_dim, out + (size_t)ds->node_ptr[g] * rw_dim, scratch);
        }
        hpj__free(scratch);
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
    hpj_part_options_default(&o->part);
    o->part.method = HPJ_PART_RB; /* the Graph-JEPA reference used METIS recursive bisection */
    o->seed = 1;
}

HPJDEF void hpj_tokens_free(hpj_tokens *t) {
    hpj__free(t->k); hpj__free(t->patch0); hpj__free(t->ptr); hpj__free(t->nodes); hpj__free(t->ncore); hpj__free(t->nedge); hpj__free(t->rw);
    memset(t, 0, sizeof(*t));
}

/* Number of valid regions of an n-node graph at capacity K. */
static int32_t hpj__tok_regions(int32_t n, int32_t K, int always_active) {
    if (n <= 0) return 0;
    if (!always_active && (int64_t)K > 2 * (int64_t)n) return 0;
    return K < n ? K : n;
}

/* Per-thread scratch of the tokenizer, sized for the largest graph: one
   block (stamp) carved into the int32 arrays. */
typedef struct hpj__tokws {
    int32_t *stamp, *list, *order, *cnt; /* (n), (n), (n), (n+1)     */
    int32_t *drow, *dcol;                /* edge-dropped copy of the graph: (n+1), (nnz) */
    hpj_part_work *pwork;                /* partitioner workspace, reused across graphs */
} hpj__tokws;

static void hpj__tokws_free(hpj__tokws *w) {
    hpj__free(w->stamp);
    hpj_part_work_free(w->pwork);
    memset(w, 0, sizeof(*w));
}

static hpj_status hpj__tokws_init(hpj__tokws *w, int32_t maxn, int64_t maxnnz) {
    size_t n = (size_t)maxn + 1;
    w->stamp = (int32_t *)hpj__calloc(5 * n + 2 + (size_t)maxnnz + 1, sizeof(int32_t), "tokens");
    if (!w->stamp) return HPJ_ERR_NOMEM;
    w->list = w->stamp + n;
    w->order = w->list + n;
    w->cnt = w->order + n;
    w->drow = w->cnt + n + 1;
    w->dcol = w->drow + n + 1;
    return HPJ_OK;
}

/* Core regions of graph g at capacity K into part (n): one node per region
   when K >= n, otherwise the partitioner on the (edge-dropped) graph. */
static hpj_status hpj__tok_partition(const hpj_graph *gr, int32_t k, int32_t K, const hpj_tok_options *o, int32_t g,
                                     int l, hpj__tokws *w, int32_t *part) {
    int32_t n = gr->n, v;
    hpj_part_options po = o->part;
    hpj_graph use = *gr;
    if (K >= n) {
        for (v = 0; v < n; ++v) part[v] = v;
        return HPJ_OK;
    }
    if (o->edge_drop > 0.0f) {
        /* keep an undirected edge if either of its directed entries survives
           an independent draw (the Graph-JEPA reference's rule) */
        hpj_rng r = hpj_rng_stream(o->seed ^ 0xED6EULL, o->epoch, (uint64_t)g);
        int32_t i, m = 0;
        for (i = 0; i < gr->nnz; ++i) w->dcol[i] = hpj_rng_uniform(&r) >= o->edge_drop;
        /* symmetrise the keep flags: mark entry i kept if it or its reverse is */
        for (v = 0; v < n; ++v)
            for (i = gr->rowptr[v]; i < gr->rowptr[v + 1]; ++i) {
                int32_t u = gr->col[i], back;
                if (u < v) continue;
                if ((back = hpj__csr_find(gr->rowptr, gr->col, u, v)) < 0) continue; /* checked graphs have it */
                if (w->dcol[i] | w->dcol[back]) w->dcol[i] = w->dcol[back] = 1;
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
    if (!w->pwork && !(w->pwork = hpj_part_work_new()))
        return hpj__fail(HPJ_ERR_NOMEM, "tokens: out of memory for a partitioner workspace");
    return hpj_partition(&use, k, &po, w->pwork, part, NULL);
}

HPJDEF hpj_status hpj_tokens_build(const hpj_dataset *ds, const float *node_rw, const int32_t *graphs, int32_t count,
                                   const hpj_tok_options *o, hpj_tokens *out) {
    int32_t G = ds->num_graphs, L = o->L, gi, maxn = 0;
    int64_t maxnnz = 0;
    int64_t s, total_patches = 0, nslots = (int64_t)G * L;
    int64_t *nodes_of = NULL; /* (G*L) expanded node count of each slot */
    int32_t *parts = NULL;    /* (L, N) core region of every node at every resolution */
    hpj_tokens t;
    hpj_status st = HPJ_OK;
    int nthreads = 1, pass;
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
    if (!t.k || !t.patch0 || !nodes_of) { st = HPJ_ERR_NOMEM; goto done; }
    for (gi = 0; gi < count; ++gi) { /* graphs not listed keep k = 0 */
        int32_t g = graphs ? graphs[gi] : gi, n, l;
        if (g < 0 || g >= G) { st = hpj__fail(HPJ_ERR_INPUT, "tokens: graph index %d outside 0..%d", g, G - 1); goto done; }
        n = (int32_t)(ds->node_ptr[g + 1] - ds->node_ptr[g]);
        maxn = HPJ__MAX(maxn, n);
        maxnnz = HPJ__MAX(maxnnz, ds->edge_ptr[g + 1] - ds->edge_ptr[g]);
        for (l = 0; l < L; ++l) t.k[(size_t)g * L + l] = hpj__tok_regions(n, o->K[l], o->always_active);
    }
    for (s = 0; s < nslots; ++s) t.patch0[s + 1] = t.patch0[s] + t.k[s];
    total_patches = t.patch0[nslots];
    t.num_patches = total_patches;
    /* the partitions of pass 1, kept for pass 2, laid out as
       hpj_partition_dataset's: resolution l of node v at l * N + v */
    parts = (int32_t *)hpj__calloc((size_t)L * (size_t)ds->num_nodes + 1, sizeof(int32_t), "tokens");
    t.ptr = (int64_t *)hpj__calloc((size_t)total_patches + 1, sizeof(int64_t), "tokens");
    t.ncore = (int32_t *)hpj__calloc((size_t)total_patches + 1, sizeof(int32_t), "tokens");
    t.nedge = (int32_t *)hpj__calloc((size_t)total_patches + 1, sizeof(int32_t), "tokens");
    t.rw = (float *)hpj__calloc((size_t)total_patches + 1, sizeof(float) * (size_t)o->rw_dim, "tokens");
    if (!parts || !t.ptr || !t.ncore || !t.nedge || !t.rw) { st = HPJ_ERR_NOMEM; goto done; }
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    ws = (hpj__tokws *)hpj__calloc((size_t)nthreads, sizeof(hpj__tokws), "tokens");
    if (!ws) { st = HPJ_ERR_NOMEM; goto done; }
    for (gi = 0; gi < nthreads; ++gi)
        if ((st = hpj__tokws_init(&ws[gi], maxn, maxnnz)) != HPJ_OK) goto done;
    /* Two passes over (graph, resolution) slots: partition (kept in parts)
       + count expanded sizes, then (after a prefix sum) fill node lists. */
    for (pass = 0; pass < 2 && st == HPJ_OK; ++pass) {
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
            int32_t *part = parts + (int64_t)l * ds->num_nodes + ds->node_ptr[g];
#ifdef _OPENMP
            tid = omp_get_thread_num();
#endif
            w = &ws[tid];
            if (k == 0 || st != HPJ_OK) continue;
            gr = hpj_dataset_graph(ds, g);
            n = gr.n;
            if (pass == 0 && (ls = hpj__tok_partition(&gr, k, o->K[l], o, g, l, w, part)) != HPJ_OK) {
                HPJ__OMP(critical)
                st = ls;
                continue;
            }
            /* bucket nodes by part (counting sort keeps ascending ids) */
            for (p = 0; p <= k; ++p) w->cnt[p] = 0;
            for (v = 0; v < n; ++v) w->cnt[part[v] + 1]++;
            for (p = 0; p < k; ++p) w->cnt[p + 1] += w->cnt[p];
            for (v = 0; v < n; ++v) w->order[w->cnt[part[v]]++] = v;
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
                {   /* its induced edges: entries between nodes stamped p,
                       counted once here so that a training step need not
                       walk the patch to size its buffers */
                    int32_t ne = 0;
                    for (j = 0; j < m; ++j) {
                        int32_t u = w->list[j];
                        for (i = gr.rowptr[u]; i < gr.rowptr[u + 1]; ++i) ne += w->stamp[gr.col[i]] == p;
                    }
                    t.nedge[gp] = ne;
                }
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
    if (st == HPJ_OK) t.ptr[total_patches] = nodes_of[nslots];
done:
    for (gi = 0; ws && gi < nthreads; ++gi) hpj__tokws_free(&ws[gi]);
    hpj__free(ws);
    hpj__free(nodes_of);
    hpj__free(parts);
    if (st != HPJ_OK) { hpj_tokens_free(&t); return st; }
    *out = t;
    return HPJ_OK;
}



/* ==== nn: GEMM ==== */

#if defined(_MSC_VER) && !defined(__cplusplus)
#define HPJ__INLINE __inline
#else
#define HPJ__INLINE inline
#endif
/* For the helpers whose flag arguments must fold to constants in each
   caller (see hpj__ln_apply). */
#if defined(__GNUC__) || defined(__clang__)
#define HPJ__INLINE_ALWAYS HPJ__INLINE __attribute__((always_inline))
#elif defined(_MSC_VER)
#define HPJ__INLINE_ALWAYS __forceinline
#else
#define HPJ__INLINE_ALWAYS HPJ__INLINE
#endif

/* a * b + c rounded once where the target has a fused multiply-add
   (FP_FAST_FMAF, or __FMA__: clang does not announce FP_FAST_FMAF), else
   twice. Every sum of products in the library goes through it, so the C
   loops and the SIMD kernels (which always fuse, and are compiled only for
   targets that have fma) round alike. */
#if defined(FP_FAST_FMAF) || defined(__FMA__)
#define HPJ__FMAF(a, b, c) fmaf((a), (b), (c))
#else
#define HPJ__FMAF(a, b, c) ((a) * (b) + (c))
#endif

/* The reference GEMM, in plain loops. Every element of C is a chain of
   multiply-adds over k in increasing order (HPJ__FMAF), restarted from
   zero every HPJ__GEMM_KC values of k: a "K block" of sum s. The first
   block sets C = alpha s + beta C (with beta == 0, alpha s: C is not
   read, so NaN or garbage there does not propagate); each later block
   adds alpha s. Why blocks at all: the fast GEMM packs its operands in
   blocks of HPJ__GEMM_KC rows of k (to keep them in cache) and can only
   carry a partial sum from one block to the next through C; the reference
   follows that order, so both give the same bits for every element, on
   any thread count.
   The loops: one row of C per iteration (the rows are independent, so
   OpenMP shares them out), its columns HPJ__GEMM_REF_NB at a time in a
   small row of partial sums, so that the innermost loop walks along a row
   of B (contiguous unless B is transposed) and vectorizes. */
#define HPJ__GEMM_KC 256
#define HPJ__GEMM_REF_NB 64
/* below this many multiply-adds a call runs on the calling thread */
#define HPJ__GEMM_PAR_MIN (64 * 64 * 64)

#ifndef HPJ_REFERENCE
static void hpj__gemm_fast(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias);
#endif

HPJDEF void hpj_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    int i;
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) { /* C = beta C, A and B not read */
        for (i = 0; i < M; ++i) {
            float *ci = C + (ptrdiff_t)i * ldc;
            int j;
            if (beta == 0.0f)
                for (j = 0; j < N; ++j) ci[j] = 0.0f;
            else if (beta != 1.0f)
                for (j = 0; j < N; ++j) ci[j] *= beta;
        }
        return;
    }
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { hpj__gemm_fast(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL); return; } /* fast: packed GEMM (see below) */
#endif
    HPJ__OMP(parallel for schedule(static) if ((double)M * N * K >= (double)HPJ__GEMM_PAR_MIN))
    for (i = 0; i < M; ++i) {
        float s[HPJ__GEMM_REF_NB], *ci = C + (ptrdiff_t)i * ldc;
        int j0, j, k, p0;
        for (j0 = 0; j0 < N; j0 += HPJ__GEMM_REF_NB) {
            int nb = HPJ__MIN(HPJ__GEMM_REF_NB, N - j0);
            float *c = ci + j0;
            for (p0 = 0; p0 < K; p0 += HPJ__GEMM_KC) {
                int p1 = HPJ__MIN(K, p0 + HPJ__GEMM_KC);
                for (j = 0; j < nb; ++j) s[j] = 0.0f;
                for (k = p0; k < p1; ++k) {
                    float a = transA ? A[(ptrdiff_t)k * lda + i] : A[(ptrdiff_t)i * lda + k];
                    if (transB) { /* op(B)(k, j) = B(j, k) */
                        const float *b = B + (ptrdiff_t)j0 * ldb + k;
                        for (j = 0; j < nb; ++j) s[j] = HPJ__FMAF(a, b[(ptrdiff_t)j * ldb], s[j]);
                    } else {
                        const float *b = B + (ptrdiff_t)k * ldb + j0;
                        for (j = 0; j < nb; ++j) s[j] = HPJ__FMAF(a, b[j], s[j]);
                    }
                }
                for (j = 0; j < nb; ++j) {
                    float t = alpha * s[j];
                    if (p0 > 0) c[j] = c[j] + t;
                    else c[j] = beta == 0.0f ? t : HPJ__FMAF(beta, c[j], t);
                }
            }
        }
    }
}

/* ==== nn: shared helpers ==== */

/* Loops over this many elements or more run in parallel: 2048 per thread
   of the team, so that a short loop (a LayerNorm or a residual over a few
   hundred tokens) does not wait for the team; from 16 threads on, where a
   barrier costs more, 32768. Which loops run in parallel never changes a
   result bit. */
#ifndef HPJ__PAR_ELEMS
#define HPJ__PAR_ELEMS hpj__par_elems()
static int64_t hpj__par_elems(void) {
#ifdef _OPENMP
    int t = omp_get_max_threads();
    return t >= 16 ? 32768 : 2048 * (int64_t)HPJ__MAX(t, 2);
#else
    return 32768;
#endif
}
#endif
/* Fixed number of blocks of every scalar reduction (thread-independent). */
#define HPJ__NBLK 64

/* Dot product with 16 independent lanes combined in a fixed tree: the
   compiler vectorizes it, and the bits do not depend on the ISA. */
static HPJ__INLINE float hpj__dot(const float *a, const float *b, int n) {
    float acc[16];
    int i = 0, l;
    for (l = 0; l < 16; ++l) acc[l] = 0.0f;
    for (; i + 16 <= n; i += 16)
        for (l = 0; l < 16; ++l) acc[l] = HPJ__FMAF(a[i + l], b[i + l], acc[l]);
    for (l = 0; i + l < n; ++l) acc[l] = HPJ__FMAF(a[i + l], b[i + l], acc[l]);
    for (l = 0; l < 8; ++l) acc[l] += acc[l + 8];
    for (l = 0; l < 4; ++l) acc[l] += acc[l + 4];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

/* y (n) += a x */
static HPJ__INLINE void hpj__axpy(float *y, float a, const float *x, int n) {
    int i;
    HPJ__OMP(simd)
    for (i = 0; i < n; ++i) y[i] = HPJ__FMAF(a, x[i], y[i]);
}

#ifndef HPJ_REFERENCE
static void hpj__fast_colsum_add(float *dst, const float *src, int N, int D, ptrdiff_t lds);
#endif

/* dst (D) += the column sums of src (N, D) (row stride lds): each column
   summed in double in row order and rounded once, so the bits do not
   depend on how the columns are split (threads take columns). */
static void hpj__colsum_add(float *dst, const float *src, int N, int D, ptrdiff_t lds) {
    int j;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: panels of 16 running sums (see the fast part) */
        hpj__fast_colsum_add(dst, src, N, D, lds);
        return;
    }
#endif
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (j = 0; j < D; ++j) {
        double acc = 0.0;
        int i;
        for (i = 0; i < N; ++i) acc += src[(ptrdiff_t)i * lds + j];
        dst[j] += (float)acc;
    }
}

/* ==== nn: linear ==== */

/* The multiply-adds of the linear layers (2 flops each) that the calling
   thread ran since the training run began (hpj_model_last_flops). */
static HPJ__TLS double hpj__flops;

HPJDEF void hpj_linear_forward(float *out, const float *inp, const float *W, const float *b, int N, int Din,
                               int Dout) {
    int i;
    if (N <= 0 || Dout <= 0) return;
    hpj__flops += 2.0 * N * Din * Dout;
#ifndef HPJ_REFERENCE
    if (b && Din > 0 && hpj__fast()) { /* fast: each tile of out starts as the bias inside the GEMM */
        hpj__gemm_fast(0, 1, N, Dout, Din, 1.0f, inp, Din, W, Din, 1.0f, out, Dout, b);
        return;
    }
#endif
    /* out = inp W^T + b: every row starts as the bias, and the GEMM adds
       the product to it (beta = 1: the bias is the first term of each
       element's sum, then the K blocks in order) */
    if (b) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * Dout >= HPJ__PAR_ELEMS))
        for (i = 0; i < N; ++i) memcpy(out + (ptrdiff_t)i * Dout, b, sizeof(float) * (size_t)Dout);
    }
    hpj_gemm(0, 1, N, Dout, Din, 1.0f, inp, Din, W, Din, b ? 1.0f : 0.0f, out, Dout);
}

#ifndef HPJ_REFERENCE
static int hpj__linear_back_pair(float *dinp, float beta, float *dW, float *db, const float *dout, const float *inp,
                                 const float *W, int N, int Din, int Dout);
#endif

/* The backward of out = inp W^T + b, with dinp's old contents scaled by
   beta (1: accumulate, as every layer's backward; 0: overwrite, which
   saves the caller a zeroing pass): dinp = dout W + beta dinp,
   dW += dout^T inp, db += the column sums of dout. Any of dinp, dW, db
   may be NULL. */
static void hpj__linear_back2(float *dinp, float beta, float *dW, float *db, const float *dout, const float *inp,
                              const float *W, int N, int Din, int Dout) {
    if (N <= 0) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && hpj__linear_back_pair(dinp, beta, dW, db, dout, inp, W, N, Din, Dout))
        return; /* fast: the two parts side by side (see below; each counts its flops) */
#endif
    hpj__flops += ((dinp ? 2.0 : 0.0) + (dW ? 2.0 : 0.0)) * N * Din * Dout;
    /* d(inp W^T)/d inp: dinp = dout W (+ beta dinp) */
    if (dinp) hpj_gemm(0, 0, N, Din, Dout, 1.0f, dout, Dout, W, Din, beta, dinp, Din);
    /* d(inp W^T)/dW: dW += dout^T inp */
    if (dW) hpj_gemm(1, 0, Dout, Din, N, 1.0f, dout, Dout, inp, Din, 1.0f, dW, Din);
    /* d(+ b)/db: db += the column sums of dout */
    if (db) hpj__colsum_add(db, dout, N, Dout, Dout);
}

HPJDEF void hpj_linear_backward(float *dinp, float *dW, float *db, const float *dout, const float *inp,
                                const float *W, int N, int Din, int Dout) {
    hpj__linear_back2(dinp, 1.0f, dW, db, dout, inp, W, N, Din, Dout);
}

/* ==== nn: activations and dropout ==== */

HPJDEF void hpj_relu_forward(float *out, const float *inp, size_t n) {
    int64_t i, nn = (int64_t)n;
    HPJ__OMP(parallel for simd schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

HPJDEF void hpj_relu_backward(float *dinp, const float *dout, const float *out, size_t n) {
    int64_t i, nn = (int64_t)n;
    /* out = max(inp, 0): dinp += dout [out > 0] */
    HPJ__OMP(parallel for simd schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i) dinp[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

/* -- the exact GELU: x Phi(x), with Phi the standard normal CDF --
   Phi is computed by the library's own polynomials rather than erff, so
   that every build (and the SIMD kernels of the fast part, which evaluate
   the same polynomials lane by lane) gives the same bits. Each polynomial
   runs by Horner's rule from its first coefficient, one step S(c) per
   coefficient after it, every step one fused multiply-add
   (HPJ__FMAF_POLY: fmaf wherever the target has FMA, as the SIMD kernels
   do; a * b + c without FMA, where only these loops exist). */
#if defined(FP_FAST_FMAF) || defined(__FMA__)
#define HPJ__FMAF_POLY(a, b, c) fmaf((a), (b), (c))
#else
#define HPJ__FMAF_POLY(a, b, c) ((a) * (b) + (c))
#endif
#define HPJ__EXP_C0 1.384413801e-03f
#define HPJ__EXP_STEPS(S) S(8.374155499e-03f) S(4.166799411e-02f) S(1.666643173e-01f) S(4.999999404e-01f) S(1.0f) S(1.0f)
#define HPJ__ERF_C0 (-5.626979400e-04f)
#define HPJ__ERF_STEPS(S) \
    S(4.916354548e-03f) S(-2.671015263e-02f) S(1.128013209e-01f) S(-3.761231899e-01f) S(1.128379107e+00f)
#define HPJ__ERFC_C0 2.339618987e-07f
#define HPJ__ERFC_STEPS(S)                                                                                     \
    S(-2.039391438e-05f) S(6.450944056e-05f) S(-4.285048926e-04f) S(2.166953404e-03f) S(-1.085422747e-02f) \
    S(-9.438923001e-01f) S(-5.352680683e+00f) S(-7.806815147e+00f)

/* e^y for y in [-87, 88] (clamped), relative error < 1.1e-7: y = n ln2 + r
   with n an integer and |r| <= ln2/2, then e^y = 2^n p(r) with p a
   degree-6 polynomial (2^n built in the float's exponent bits). */
static HPJ__INLINE float hpj__expf(float y) {
    float n, r, p, s;
    int32_t bits;
    y = y < -87.0f ? -87.0f : y;
    y = y > 88.0f ? 88.0f : y;
    n = (y * 1.442695041f + 12582912.0f) - 12582912.0f; /* round to nearest */
    r = y - n * 0.693145751953125f;                     /* ln 2, high part */
    r = r - n * 1.428606765330187e-06f;                 /* ln 2, low part  */
    p = HPJ__EXP_C0;
#define HPJ__S(c) p = HPJ__FMAF_POLY(p, r, (c));
    HPJ__EXP_STEPS(HPJ__S)
#undef HPJ__S
    bits = ((n == n ? (int32_t)n : 0) + 127) * 8388608; /* 2^n (NaN: p is NaN anyway; no int overflow) */
    memcpy(&s, &bits, sizeof s);
    return p * s;
}

/* Phi(x) = (1 + erf(x/sqrt 2))/2, absolute error < 1e-7: erf(z) = z P(z^2)
   for |z| < 1, erfc(|z|) = exp(Q(|z|)) for 1 <= |z| < 3.93 (so the lower
   tail keeps its relative accuracy, which 1 + erff(z) in float loses),
   and 0 / 1 beyond, as float erf. */
static HPJ__INLINE float hpj__ncdf(float x) {
    float z = x * 0.70710678118654752f, a = fabsf(z), t = z * z, e, u, q;
    e = HPJ__ERF_C0;
#define HPJ__S(c) e = HPJ__FMAF_POLY(e, t, (c));
    HPJ__ERF_STEPS(HPJ__S)
#undef HPJ__S
    e = e * z;
    u = (a < 3.93f ? a : 3.93f) - 2.5f;
    q = HPJ__ERFC_C0;
#define HPJ__S(c) q = HPJ__FMAF_POLY(q, u, (c));
    HPJ__ERFC_STEPS(HPJ__S)
#undef HPJ__S
    q = a < 3.93f ? 0.5f * hpj__expf(q) : 0.0f; /* erfc(|z|) / 2 */
    q = z > 0.0f ? 1.0f - q : q;
    return a < 1.0f ? 0.5f + 0.5f * e : q;
}

/* phi(x), the normal density (GELU' = Phi + x phi) */
static HPJ__INLINE float hpj__pdf(float x) { return 0.3989422804014327f * hpj__expf(-0.5f * x * x); }

#ifndef HPJ_REFERENCE
static int hpj__gelu_fast(float *y, const float *x, const float *dout, size_t n);
#endif

HPJDEF void hpj_gelu_forward(float *out, const float *inp, size_t n) {
    int64_t i, nn = (int64_t)n;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && hpj__gelu_fast(out, inp, NULL, n)) return; /* fast: SIMD kernels (see below) */
#endif
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS / 4))
    for (i = 0; i < nn; ++i) out[i] = inp[i] * hpj__ncdf(inp[i]);
}

HPJDEF void hpj_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    int64_t i, nn = (int64_t)n;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && hpj__gelu_fast(dinp, inp, dout, n)) return; /* fast: SIMD kernels (see below) */
#endif
    /* out = x Phi(x): dout/dx = Phi(x) + x phi(x) */
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS / 4))
    for (i = 0; i < nn; ++i) dinp[i] += dout[i] * (hpj__ncdf(inp[i]) + inp[i] * hpj__pdf(inp[i]));
}

/* The counter-based draw of dropout: 24 uniform bits of a splitmix64-style
   hash of (key, i), key = first output of hpj_rng_stream(seed, step, salt). */
static float hpj__hash_uniform(uint64_t key, uint64_t i) {
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* hpj_dropout_forward on elements off .. off + n - 1 of a longer buffer:
   element i here draws as element off + i there. A rank of data-parallel
   training holds a slice of the minibatch's rows, and so draws the masks
   one process draws on the whole minibatch. */
static void hpj__dropout_at(float *out, uint8_t *mask, const float *inp, size_t n, float p, uint64_t seed,
                            uint64_t step, uint64_t salt, uint64_t off) {
    int64_t i, nn = (int64_t)n;
    if (!(p > 0.0f)) {
        if (out != inp) memmove(out, inp, n * sizeof(float));
        if (mask) memset(mask, 1, n);
        return;
    }
    if (p >= 1.0f) {
        for (i = 0; i < nn; ++i) out[i] = 0.0f;
        if (mask) memset(mask, 0, n);
        return;
    }
    {
        hpj_rng r = hpj_rng_stream(seed, step, salt);
        uint64_t key = hpj_rng_u64(&r);
        float scale = 1.0f / (1.0f - p);
        HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS / 4))
        for (i = 0; i < nn; ++i) {
            int keep = hpj__hash_uniform(key, off + (uint64_t)i) >= p;
            out[i] = keep ? inp[i] * scale : 0.0f;
            if (mask) mask[i] = (uint8_t)keep;
        }
    }
}

HPJDEF void hpj_dropout_forward(float *out, uint8_t *mask, const float *inp, size_t n, float p, uint64_t seed,
                                uint64_t step, uint64_t salt) {
    hpj__dropout_at(out, mask, inp, n, p, seed, step, salt, 0);
}

HPJDEF void hpj_dropout_backward(float *dinp, const float *dout, const uint8_t *mask, size_t n, float p) {
    int64_t i, nn = (int64_t)n;
    float scale;
    if (p >= 1.0f) return;
    scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    /* out = inp mask / (1-p): dinp += dout mask / (1-p) */
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i)
        if (p <= 0.0f || mask[i]) dinp[i] += dout[i] * scale;
}

/* ==== nn: normalisation ==== */

/* Data-parallel training (hpj_model_set_comm) reaches the layers as an
   hpj__dp: the caller's communicator, a BatchNorm scratch of its own (so
   that no rank takes another path because an allocation failed there: the
   ranks must make the same collective calls in the same order) and a
   failure flag. Every collective goes through the helpers below; once one
   has failed they do nothing, and the step reports the failure at its next
   check (the sums are meaningless from then on, and no rank waits). NULL
   (one process) everywhere else. */
typedef struct hpj__dp {
    const hpj_comm *comm;
    int failed;     /* a callback returned non-zero */
    double *bn_ws;  /* (HPJ__BN_WS(D)) BatchNorm's scratch for the sums */
    int64_t *slots; /* (size, HPJ__DP_FIELDS) the ranks' rows of an agreement */
} hpj__dp;
#define HPJ__DP_FIELDS 8
static void hpj__dp_sum_f(hpj__dp *dp, float *buf, size_t n) {
    if (!dp->failed && dp->comm->sum_float(dp->comm->user, buf, n)) dp->failed = 1;
}
static void hpj__dp_sum_d(hpj__dp *dp, double *buf, size_t n) {
    if (!dp->failed && dp->comm->sum_double(dp->comm->user, buf, n)) dp->failed = 1;
}
static void hpj__dp_sum_i(hpj__dp *dp, int64_t *buf, size_t n) {
    if (!dp->failed && dp->comm->sum_int64(dp->comm->user, buf, n)) dp->failed = 1;
}
static void hpj__dp_bcast(hpj__dp *dp, void *buf, size_t bytes) {
    if (!dp->failed && dp->comm->bcast(dp->comm->user, buf, bytes)) dp->failed = 1;
}

#ifndef HPJ_REFERENCE
static void hpj__fast_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gamma,
                                        const float *beta, int N, int D, float eps);
static void hpj__fast_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
                                         const float *inp, const float *gamma, const float *mean, const float *rstd,
                                         int N, int D);
#endif

/* LayerNorm normalises each row on its own (rows share nothing, so
   threads take rows): the mean and the variance of its D values, summed
   in order, then out = (x - mean) rstd gamma + beta. */
HPJDEF void hpj_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gamma,
                                  const float *beta, int N, int D, float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: one copy per gamma/beta case (see the fast part) */
        hpj__fast_layernorm_forward(out, mean, rstd, inp, gamma, beta, N, D, eps);
        return;
    }
#endif
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        const float *x = inp + (ptrdiff_t)i * D;
        float *y = out + (ptrdiff_t)i * D;
        float mu = 0.0f, var = 0.0f, rs;
        int j;
        for (j = 0; j < D; ++j) mu += x[j];
        mu /= (float)D;
        for (j = 0; j < D; ++j) var = HPJ__FMAF(x[j] - mu, x[j] - mu, var);
        rs = 1.0f / sqrtf(var / (float)D + eps);
        if (mean) mean[i] = mu;
        if (rstd) rstd[i] = rs;
        for (j = 0; j < D; ++j) { /* (out may alias inp: x[j] is read before y[j] is written) */
            float v = (x[j] - mu) * rs;
            if (gamma) v *= gamma[j];
            if (beta) v += beta[j];
            y[j] = v;
        }
    }
}

/* With g = dout gamma: dx = rstd (g - mean(g) - xhat mean(g xhat)) row by
   row, the two means summed in order (threads take rows); dgamma and
   dbeta sum over the rows, per column in row order and in double (the
   product of two floats is exact in double; threads take columns). */
HPJDEF void hpj_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D) {
    int i, j;
    if (N <= 0 || D <= 0) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: one copy per gamma case, column blocks (see the fast part) */
        hpj__fast_layernorm_backward(dinp, dgamma, dbeta, dout, inp, gamma, mean, rstd, N, D);
        return;
    }
#endif
    if (dinp) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (i = 0; i < N; ++i) {
            const float *x = inp + (ptrdiff_t)i * D, *dy = dout + (ptrdiff_t)i * D;
            float *dx = dinp + (ptrdiff_t)i * D, mu = mean[i], rs = rstd[i], mg = 0.0f, mgx = 0.0f;
            for (j = 0; j < D; ++j) {
                float g = gamma ? dy[j] * gamma[j] : dy[j];
                mg += g;
                mgx = HPJ__FMAF(g, (x[j] - mu) * rs, mgx);
            }
            mg /= (float)D;
            mgx /= (float)D;
            for (j = 0; j < D; ++j) {
                float g = gamma ? dy[j] * gamma[j] : dy[j], xh = (x[j] - mu) * rs;
                dx[j] += rs * (g - mg - xh * mgx);
            }
        }
    }
    if (dgamma || dbeta) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (j = 0; j < D; ++j) {
            double sg = 0.0, sb = 0.0;
            int r;
            for (r = 0; r < N; ++r) {
                float dy = dout[(ptrdiff_t)r * D + j];
                sg += (double)dy * ((inp[(ptrdiff_t)r * D + j] - mean[r]) * rstd[r]);
                sb += dy;
            }
            if (dgamma) dgamma[j] += (float)sg;
            if (dbeta) dbeta[j] += (float)sb;
        }
    }
}

/* Fixed row blocks. A sum over many rows that threads share out (the GINE
   shared-edge backward's, BatchNorm's fast sibling's) cuts the N rows into
   HPJ__BN_RB blocks, rows N b / RB .. N (b + 1) / RB, sums each block in
   row order and adds the blocks' sums in block order: the same bits for
   any thread count. HPJ__BN_WS(D) doubles are a data-parallel run's
   BatchNorm scratch (hpj__dp.bn_ws): the reference needs 2 D + 1 of them,
   the fast sibling's blocks the rest. */
#define HPJ__BN_RB 32
static int hpj__bn_r(int N, int b) { return (int)((int64_t)N * b / HPJ__BN_RB); }
#define HPJ__BN_WS(D) ((size_t)(2 * HPJ__BN_RB + 4) * (size_t)(D) + 4)

/* A running statistic's update r <- (1 - momentum) r + momentum x. */
static float hpj__bn_run(float r, float x, float momentum) { return (1.0f - momentum) * r + momentum * x; }

/* Channel c's statistics from its mean s and its sum of squared
   deviations q; the running statistics (when given) move towards them. */
static void hpj__bn_stat(int c, double s, double q, float *mean, float *rstd, float *running_mean,
                         float *running_var, int N, float momentum, float eps) {
    mean[c] = (float)s;
    rstd[c] = (float)(1.0 / sqrt(q / N + eps));
    if (running_mean) running_mean[c] = hpj__bn_run(running_mean[c], (float)s, momentum);
    if (running_var && N > 1) running_var[c] = hpj__bn_run(running_var[c], (float)(q / (N - 1)), momentum);
}

/* BatchNorm in training mode normalises each channel c over the batch:
       mean_c = (1/n) sum_r x[r][c],   var_c = (1/n) sum_r (x[r][c] - mean_c)^2,
       out[r][c] = (x[r][c] - mean_c) rstd_c gamma_c + beta_c,  rstd_c = 1/sqrt(var_c + eps).
   The sums run in double, each channel's in row order, so the bits do not
   depend on the thread count. What the callers add:
   - fused ops: relu = 1 gives out = max(BN(x), 0); sum != NULL also gives
     sum = res + out (then out may be NULL: only the sum is kept);
   - ranks (dp != NULL): the N rows are this rank's share of the batch; the
     sums and the row count are added over the ranks before they are used,
     so every rank gets the whole batch's statistics. */

/* Channel c's sum over the N rows of x (m = NULL) or of (x - *m)^2, in
   double and in row order. */
static double hpj__bn_sum(const float *inp, int N, int D, int c, const double *m) {
    double t = 0.0;
    int r;
    for (r = 0; r < N; ++r) {
        double x = inp[(ptrdiff_t)r * D + c];
        t += m ? (x - *m) * (x - *m) : x;
    }
    return t;
}

#ifndef HPJ_REFERENCE
/* hpj__bn_train by row blocks (the same function: fused ReLU and residual
   sum, ranks), and for rows that stand for classes of equal rows (cnt,
   ntot: the fast encoder's copy classes; the reference has plain rows). */
static void hpj__fast_bn_train(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                               const float *inp, const float *gamma, const float *beta, int N, int D, float momentum,
                               float eps, int relu, const float *res, float *sum, const int32_t *cnt, int ntot,
                               hpj__dp *dp);
static void hpj__fast_bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                  const float *gamma, const float *mean, const float *rstd, int N, int D,
                                  const float *relu_out, int overwrite, const int32_t *cnt, int ntot, hpj__dp *dp);
#endif

static void hpj__bn_train(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                          const float *inp, const float *gamma, const float *beta, int N, int D, float momentum,
                          float eps, int relu, const float *res, float *sum, hpj__dp *dp) {
    int par = (int64_t)N * D >= HPJ__PAR_ELEMS, c, r;
    (void)par; /* (without OpenMP) */
    if (D <= 0 || (N <= 0 && !dp)) return; /* (a rank without rows still takes part in the sums) */
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: row blocks (see the fast part) */
        hpj__fast_bn_train(out, mean, rstd, running_mean, running_var, inp, gamma, beta, N, D, momentum, eps, relu,
                           res, sum, NULL, N, dp);
        return;
    }
#endif
    if (!dp) {
        HPJ__OMP(parallel for schedule(static) if (par))
        for (c = 0; c < D; ++c) {
            double mu = hpj__bn_sum(inp, N, D, c, NULL) / N;
            hpj__bn_stat(c, mu, hpj__bn_sum(inp, N, D, c, &mu), mean, rstd, running_mean, running_var, N, momentum,
                         eps);
        }
    } else {
        double *s = dp->bn_ws, *q = s + D + 1; /* the sums, then means (s[D]: the rows); the squared deviations */
        for (c = 0; c < D; ++c) s[c] = hpj__bn_sum(inp, N, D, c, NULL);
        s[D] = N;
        hpj__dp_sum_d(dp, s, (size_t)D + 1);
        for (c = 0; c < D; ++c) {
            s[c] /= s[D];
            q[c] = hpj__bn_sum(inp, N, D, c, &s[c]);
        }
        hpj__dp_sum_d(dp, q, (size_t)D);
        if (!(s[D] > 0)) return;
        for (c = 0; c < D; ++c)
            hpj__bn_stat(c, s[c], q[c], mean, rstd, running_mean, running_var, (int)s[D], momentum, eps);
    }
    HPJ__OMP(parallel for schedule(static) if (par))
    for (r = 0; r < N; ++r) {
        ptrdiff_t o = (ptrdiff_t)r * D;
        int j;
        for (j = 0; j < D; ++j) {
            float v = (inp[o + j] - mean[j]) * rstd[j];
            if (gamma) v *= gamma[j];
            if (beta) v += beta[j];
            if (relu && !(v > 0.0f)) v = 0.0f;
            if (out) out[o + j] = v;
            if (sum) sum[o + j] = res[o + j] + v;
        }
    }
}

HPJDEF void hpj_batchnorm_forward_train(float *out, float *mean, float *rstd, float *running_mean,
                                        float *running_var, const float *inp, const float *gamma,
                                        const float *beta, int N, int D, float momentum, float eps) {
    hpj__bn_train(out, mean, rstd, running_mean, running_var, inp, gamma, beta, N, D, momentum, eps, 0, NULL, NULL, NULL);
}

#ifndef HPJ_REFERENCE
static void hpj__fast_bn_eval(float *out, const float *inp, const float *gamma, const float *beta,
                              const float *running_mean, const float *running_var, int N, int D, float eps, int relu,
                              const float *res, float *sum);
#endif

/* Evaluation mode normalises each row alone with the running statistics,
   out = (x - running_mean) / sqrt(running_var + eps) gamma + beta, with
   the ReLU and the residual sum fused as in training (out may be NULL
   when sum is given). */
static void hpj__bn_eval(float *out, const float *inp, const float *gamma, const float *beta,
                         const float *running_mean, const float *running_var, int N, int D, float eps, int relu,
                         const float *res, float *sum) {
    int r;
    if (N <= 0 || D <= 0) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: channel panels (see the fast part) */
        hpj__fast_bn_eval(out, inp, gamma, beta, running_mean, running_var, N, D, eps, relu, res, sum);
        return;
    }
#endif
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (r = 0; r < N; ++r) {
        ptrdiff_t o = (ptrdiff_t)r * D;
        int j;
        for (j = 0; j < D; ++j) {
            float v = (inp[o + j] - running_mean[j]) / sqrtf(running_var[j] + eps);
            if (gamma) v *= gamma[j];
            if (beta) v += beta[j];
            if (relu && !(v > 0.0f)) v = 0.0f;
            if (out) out[o + j] = v;
            if (sum) sum[o + j] = res[o + j] + v;
        }
    }
}

HPJDEF void hpj_batchnorm_forward_eval(float *out, const float *inp, const float *gamma, const float *beta,
                                       const float *running_mean, const float *running_var, int N, int D,
                                       float eps) {
    hpj__bn_eval(out, inp, gamma, beta, running_mean, running_var, N, D, eps, 0, NULL, NULL);
}

/* BatchNorm backward. With xhat = (x - mean_c) rstd_c and g the gradient
   that reaches BatchNorm's output (dout, or dout [relu_out > 0] when the
   ReLU after it was fused: relu_out is its saved output), per channel
       dbeta_c += sum_r g,   dgamma_c += sum_r g xhat,
       dx = gamma_c rstd_c (g - mean_r(g) - xhat mean_r(g xhat)),
   the sums in double and in row order. overwrite = 1 writes dinp instead
   of adding to it. With dp, dgamma and dbeta get this rank's share (the
   gradient's sum over the ranks completes them), while the two means are
   the whole batch's. */

/* Channel c's sums over the rows: *sd of g, *sdx of g xhat. */
static void hpj__bn_bw_col(double *sd, double *sdx, const float *dout, const float *inp, const float *relu_out,
                           float mean, float rstd, int N, int D, int c) {
    int r;
    *sd = *sdx = 0.0;
    for (r = 0; r < N; ++r) {
        ptrdiff_t o = (ptrdiff_t)r * D + c;
        float g = relu_out && !(relu_out[o] > 0.0f) ? 0.0f : dout[o];
        *sd += g;
        *sdx += (double)g * ((inp[o] - mean) * rstd);
    }
}

/* Channel c of the input gradient from md = mean(g) and mdx = mean(g xhat). */
static void hpj__bn_dx_col(float *dinp, const float *dout, const float *inp, const float *relu_out, float k,
                           float mean, float rstd, float md, float mdx, int N, int D, int c, int overwrite) {
    int r;
    for (r = 0; r < N; ++r) {
        ptrdiff_t o = (ptrdiff_t)r * D + c;
        float xh = (inp[o] - mean) * rstd;
        float g = relu_out && !(relu_out[o] > 0.0f) ? 0.0f : dout[o];
        float v = k * (g - md - xh * mdx);
        dinp[o] = overwrite ? v : dinp[o] + v;
    }
}

static void hpj__bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                             const float *gamma, const float *mean, const float *rstd, int N, int D,
                             const float *relu_out, int overwrite, hpj__dp *dp) {
    int par = (int64_t)N * D >= HPJ__PAR_ELEMS, c;
    double *t; /* with dp: the sums of g (D), of g xhat (D), the rows */
    (void)par; /* (without OpenMP) */
    if (D <= 0 || (N <= 0 && !dp)) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: row blocks (see the fast part) */
        hpj__fast_bn_backward(dinp, dgamma, dbeta, dout, inp, gamma, mean, rstd, N, D, relu_out, overwrite, NULL, N,
                              dp);
        return;
    }
#endif
    if (!dp) {
        HPJ__OMP(parallel for schedule(static) if (par))
        for (c = 0; c < D; ++c) {
            double sd, sdx;
            hpj__bn_bw_col(&sd, &sdx, dout, inp, relu_out, mean[c], rstd[c], N, D, c);
            if (dgamma) dgamma[c] += (float)sdx;
            if (dbeta) dbeta[c] += (float)sd;
            if (dinp)
                hpj__bn_dx_col(dinp, dout, inp, relu_out, (gamma ? gamma[c] : 1.0f) * rstd[c], mean[c], rstd[c],
                               (float)(sd / N), (float)(sdx / N), N, D, c, overwrite);
        }
        return;
    }
    t = dp->bn_ws;
    for (c = 0; c < D; ++c) {
        hpj__bn_bw_col(&t[c], &t[D + c], dout, inp, relu_out, mean[c], rstd[c], N, D, c);
        if (dgamma) dgamma[c] += (float)t[D + c];
        if (dbeta) dbeta[c] += (float)t[c];
    }
    t[2 * D] = N;
    hpj__dp_sum_d(dp, t, 2 * (size_t)D + 1);
    if (!dinp || !(t[2 * D] > 0)) return;
    HPJ__OMP(parallel for schedule(static) if (par))
    for (c = 0; c < D; ++c)
        hpj__bn_dx_col(dinp, dout, inp, relu_out, (gamma ? gamma[c] : 1.0f) * rstd[c], mean[c], rstd[c],
                       (float)(t[c] / t[2 * D]), (float)(t[D + c] / t[2 * D]), N, D, c, overwrite);
}

HPJDEF void hpj_batchnorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D) {
    hpj__bn_backward(dinp, dgamma, dbeta, dout, inp, gamma, mean, rstd, N, D, NULL, 0, NULL);
}

/* ==== nn: GINE message passing ==== */

/* The GINE forward for both edge layouts: e[k] at e + k * estride, so
   estride = D gives one feature per edge and estride = 0 one shared
   feature; e = NULL means no edge feature. rows (if not NULL): output row
   i aggregates row rows[i]. */
static void hpj__gine_fwd(float *out, const float *h, const float *e, ptrdiff_t estride, const int32_t *rowptr,
                          const int32_t *col, int N, int D, float eps, const int32_t *rows) {
    int i;
    if (N <= 0 || D <= 0) return;
    /* (rows increase: rowptr[rows[N - 1] + 1] bounds the entries read) */
    HPJ__OMP(parallel for schedule(static) if (((int64_t)(rows ? rowptr[rows[N - 1] + 1] : rowptr[N]) + N) * D >=
                                               HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        int32_t r = rows ? rows[i] : i; /* output row i is row r's aggregation */
        float *o = out + (ptrdiff_t)i * D;
        const float *hi = h + (ptrdiff_t)r * D;
        float s = 1.0f + eps;
        int j, k;
        HPJ__OMP(simd)
        for (j = 0; j < D; ++j) o[j] = s * hi[j];
        for (k = rowptr[r]; k < rowptr[r + 1]; ++k) {
            const float *hj = h + (ptrdiff_t)col[k] * D;
            if (e) {
                const float *ek = e + (ptrdiff_t)k * estride;
                HPJ__OMP(simd)
                for (j = 0; j < D; ++j) {
                    float m = hj[j] + ek[j];
                    o[j] += m > 0.0f ? m : 0.0f;
                }
            } else {
                HPJ__OMP(simd)
                for (j = 0; j < D; ++j) o[j] += hj[j] > 0.0f ? hj[j] : 0.0f;
            }
        }
    }
}

HPJDEF void hpj_gine_forward(float *out, const float *h, const float *e, const int32_t *rowptr, const int32_t *col,
                             int N, int D, float eps) {
    hpj__gine_fwd(out, h, e, D, rowptr, col, N, D, eps, NULL);
}

/* deps += sum_i dout[i].h[i] over 64 fixed row blocks, in double. */
static void hpj__gine_deps(float *deps, const float *dout, const float *h, int N, int D, int par) {
    double part[HPJ__NBLK], tot = 0.0;
    int b;
    (void)par;
    HPJ__OMP(parallel for schedule(static) if (par))
    for (b = 0; b < HPJ__NBLK; ++b) {
        int64_t r0 = (int64_t)N * b / HPJ__NBLK, r1 = (int64_t)N * (b + 1) / HPJ__NBLK, r;
        double s = 0.0;
        for (r = r0; r < r1; ++r) s += hpj__dot(dout + r * D, h + r * D, D);
        part[b] = s;
    }
    for (b = 0; b < HPJ__NBLK; ++b) tot += part[b];
    *deps += (float)tot;
}

HPJDEF void hpj_gine_backward(float *dh, float *de, float *deps, const float *dout, const float *h, const float *e,
                              const int32_t *rowptr, const int32_t *col, const int32_t *rev, int N, int D,
                              float eps) {
    int i, par;
    if (N <= 0 || D <= 0) return;
    par = (int64_t)rowptr[N] * D + (int64_t)N * D >= HPJ__PAR_ELEMS;
    (void)par;
    /* out[i] = (1+eps) h[i] + sum_k relu(h[col[k]] + e[k]) */
    if (dh) {
        HPJ__OMP(parallel for schedule(static) if (par))
        for (i = 0; i < N; ++i) {
            float *g = dh + (ptrdiff_t)i * D;
            const float *hi = h + (ptrdiff_t)i * D, *di = dout + (ptrdiff_t)i * D;
            float s = 1.0f + eps;
            int j, k;
            HPJ__OMP(simd)
            for (j = 0; j < D; ++j) g[j] += s * di[j];
            /* i is the source of the messages of the entries k of its own
               row, seen from the other end through rev[k] */
            for (k = rowptr[i]; k < rowptr[i + 1]; ++k) {
                const float *dn = dout + (ptrdiff_t)col[k] * D;
                if (e) {
                    const float *ek = e + (ptrdiff_t)rev[k] * D;
                    HPJ__OMP(simd)
                    for (j = 0; j < D; ++j) g[j] += hi[j] + ek[j] > 0.0f ? dn[j] : 0.0f;
                } else {
                    HPJ__OMP(simd)
                    for (j = 0; j < D; ++j) g[j] += hi[j] > 0.0f ? dn[j] : 0.0f;
                }
            }
        }
    }
    if (de && e) {
        HPJ__OMP(parallel for schedule(static) if (par))
        for (i = 0; i < N; ++i) {
            const float *di = dout + (ptrdiff_t)i * D;
            int j, k;
            for (k = rowptr[i]; k < rowptr[i + 1]; ++k) {
                const float *hj = h + (ptrdiff_t)col[k] * D, *ek = e + (ptrdiff_t)k * D;
                float *g = de + (ptrdiff_t)k * D;
                HPJ__OMP(simd)
                for (j = 0; j < D; ++j) g[j] += hj[j] + ek[j] > 0.0f ? di[j] : 0.0f;
            }
        }
    }
    if (deps) hpj__gine_deps(deps, dout, h, N, D, par);
}

HPJDEF void hpj_gine_forward_shared(float *out, const float *h, const float *e, const int32_t *rowptr,
                                    const int32_t *col, int N, int D, float eps) {
    hpj__gine_fwd(out, h, e, 0, rowptr, col, N, D, eps, NULL);
}

#ifndef HPJ_REFERENCE
static void hpj__fast_gine_back_shared(float *dh, float *de, const float *dout, const float *h, const float *e,
                                       const int32_t *rowptr, const int32_t *col, int N, int D, float s, int par);
#endif

HPJDEF void hpj_gine_backward_shared(float *dh, float *de, float *deps, const float *dout, const float *h,
                                     const float *e, const int32_t *rowptr, const int32_t *col, int N, int D,
                                     float eps) {
    int par, c;
    float s = 1.0f + eps;
    if (N <= 0 || D <= 0) return;
    par = (int64_t)rowptr[N] * D + (int64_t)N * D >= HPJ__PAR_ELEMS;
    (void)par;
    /* The message of the entry k in row i is relu(h[j] + e), j = col[k]; by
       symmetry the messages node j sends are the entries of its own row, so
       d h[j] and de both get [h[j] + e > 0] times the sum of dout[col[k]]
       over k in row j. de's sums run over the fixed row blocks of BatchNorm
       (hpj__bn_r), each block's in double, added in block order: the same
       bits for any thread count. Threads take channels, which share
       nothing. */
    if (dh || de) {
#ifndef HPJ_REFERENCE
        if (hpj__fast()) { /* fast: panels and row blocks (see the fast part) */
            hpj__fast_gine_back_shared(dh, de, dout, h, e, rowptr, col, N, D, s, par);
            if (deps) hpj__gine_deps(deps, dout, h, N, D, par);
            return;
        }
#endif
        HPJ__OMP(parallel for schedule(static) if (par))
        for (c = 0; c < D; ++c) {
            double acc = 0.0;
            int b, r, k;
            for (b = 0; b < HPJ__BN_RB; ++b) {
                double part = 0.0; /* this block's sum of t over its rows */
                for (r = hpj__bn_r(N, b); r < hpj__bn_r(N, b + 1); ++r) {
                    ptrdiff_t o = (ptrdiff_t)r * D + c;
                    float t = 0.0f;
                    for (k = rowptr[r]; k < rowptr[r + 1]; ++k) t += dout[(ptrdiff_t)col[k] * D + c];
                    t = h[o] + e[c] > 0.0f ? t : 0.0f;
                    part += t;
                    if (dh) dh[o] += s * dout[o] + t;
                }
                acc += part;
            }
            if (de) de[c] += (float)acc;
        }
    }
    if (deps) hpj__gine_deps(deps, dout, h, N, D, par);
}

HPJDEF hpj_status hpj_csr_reverse(int32_t *rev, const int32_t *rowptr, const int32_t *col, int N) {
    int i;
    int32_t k;
    for (i = 0; i < N; ++i)
        for (k = rowptr[i]; k < rowptr[i + 1]; ++k) {
            int32_t j = col[k];
            if (j < 0 || j >= N || (rev[k] = hpj__csr_find(rowptr, col, j, i)) < 0) {
                memset(rev, 0, sizeof(int32_t) * (size_t)rowptr[N]);
                if (j < 0 || j >= N)
                    return hpj__fail(HPJ_ERR_INPUT, "csr_reverse: entry %d of row %d has column %d outside 0..%d",
                                     (int)k, i, (int)j, N - 1);
                return hpj__fail(HPJ_ERR_INPUT, "csr_reverse: edge %d -> %d has no reverse %d -> %d (not symmetric)",
                                 i, (int)j, (int)j, i);
            }
        }
    return HPJ_OK;
}

HPJDEF hpj_status hpj_index_transpose(int32_t *tptr, int32_t *tidx, const int32_t *ptr, const int32_t *idx, int S,
                                      int R) {
    int s, r;
    int32_t k;
    for (k = 0; k < ptr[S]; ++k)
        if (idx[k] < 0 || idx[k] >= R) {
            memset(tptr, 0, sizeof(int32_t) * ((size_t)R + 1));
            memset(tidx, 0, sizeof(int32_t) * (size_t)ptr[S]);
            return hpj__fail(HPJ_ERR_INPUT, "index_transpose: index %d at position %d outside 0..%d", (int)idx[k], (int)k,
                             R - 1);
        }
    for (r = 0; r <= R; ++r) tptr[r] = 0;
    for (k = 0; k < ptr[S]; ++k) ++tptr[idx[k] + 1];
    for (r = 0; r < R; ++r) tptr[r + 1] += tptr[r];
    /* fill in increasing s; tptr[r] walks forward and is restored below */
    for (s = 0; s < S; ++s)
        for (k = ptr[s]; k < ptr[s + 1]; ++k) tidx[tptr[idx[k]]++] = s;
    for (r = R; r > 0; --r) tptr[r] = tptr[r - 1];
    tptr[0] = 0;
    return HPJ_OK;
}

/* ==== nn: pooling ==== */

HPJDEF void hpj_segment_mean_forward(float *out, const float *inp, const int32_t *segptr, int S, int D) {
    hpj_gather_mean_forward(out, inp, segptr, NULL, S, D); /* the rows of a segment are its own index list */
}

HPJDEF void hpj_segment_mean_backward(float *dinp, const float *dout, const int32_t *segptr, int S, int D) {
    int s;
    if (S <= 0 || D <= 0) return;
    /* out[s] = sum_r inp[r] / |s|: dinp[r] += dout[s] / |s| */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)segptr[S] * D >= HPJ__PAR_ELEMS))
    for (s = 0; s < S; ++s) {
        const float *g = dout + (ptrdiff_t)s * D;
        int32_t r0 = segptr[s], r1 = segptr[s + 1], r;
        float inv;
        if (r1 <= r0) continue;
        inv = 1.0f / (float)(r1 - r0);
        for (r = r0; r < r1; ++r) hpj__axpy(dinp + (ptrdiff_t)r * D, inv, g, D);
    }
}

HPJDEF void hpj_segment_max_forward(float *out, int32_t *argmax, const float *inp, const int32_t *segptr, int S,
                                    int D) {
    int s;
    if (S <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)segptr[S] * D >= HPJ__PAR_ELEMS))
    for (s = 0; s < S; ++s) {
        float *o = out + (ptrdiff_t)s * D;
        int32_t *am = argmax + (ptrdiff_t)s * D;
        int32_t r0 = segptr[s], r1 = segptr[s + 1], r;
        int j;
        if (r1 <= r0) {
            for (j = 0; j < D; ++j) {
                o[j] = 0.0f;
                am[j] = -1;
            }
            continue;
        }
        for (j = 0; j < D; ++j) {
            o[j] = inp[(ptrdiff_t)r0 * D + j];
            am[j] = r0;
        }
        for (r = r0 + 1; r < r1; ++r) {
            const float *x = inp + (ptrdiff_t)r * D;
            HPJ__OMP(simd)
            for (j = 0; j < D; ++j)
                if (x[j] > o[j]) {
                    o[j] = x[j];
                    am[j] = r;
                }
        }
    }
}

HPJDEF void hpj_segment_max_backward(float *dinp, const float *dout, const int32_t *argmax, int S, int D) {
    int s;
    if (S <= 0 || D <= 0) return;
    /* out[s][j] = inp[argmax[s][j]][j]: a scatter, but segments own
       disjoint rows, so segments can run in parallel */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)S * D >= HPJ__PAR_ELEMS))
    for (s = 0; s < S; ++s) {
        int j;
        for (j = 0; j < D; ++j) {
            int32_t r = argmax[(ptrdiff_t)s * D + j];
            if (r >= 0) dinp[(ptrdiff_t)r * D + j] += dout[(ptrdiff_t)s * D + j];
        }
    }
}

HPJDEF void hpj_gather_mean_forward(float *out, const float *inp, const int32_t *ptr, const int32_t *idx, int S,
                                    int D) {
    int s;
    if (S <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)ptr[S] * D >= HPJ__PAR_ELEMS))
    for (s = 0; s < S; ++s) {
        float *o = out + (ptrdiff_t)s * D;
        int32_t k0 = ptr[s], k1 = ptr[s + 1], k;
        int j;
        for (j = 0; j < D; ++j) o[j] = 0.0f;
        for (k = k0; k < k1; ++k) {
            const float *x = inp + (ptrdiff_t)(idx ? idx[k] : k) * D;
            HPJ__OMP(simd)
            for (j = 0; j < D; ++j) o[j] += x[j];
        }
        if (k1 > k0) {
            float inv = 1.0f / (float)(k1 - k0);
            for (j = 0; j < D; ++j) o[j] *= inv;
        }
    }
}

HPJDEF void hpj_gather_mean_backward(float *dinp, const float *dout, const int32_t *ptr, const int32_t *tptr,
                                     const int32_t *tidx, int R, int D) {
    int r;
    if (R <= 0 || D <= 0) return;
    /* out[s] = sum_{k in s} inp[idx[k]] / |s|: gathered per input row */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)tptr[R] * D >= HPJ__PAR_ELEMS))
    for (r = 0; r < R; ++r) {
        float *g = dinp + (ptrdiff_t)r * D;
        int32_t k;
        for (k = tptr[r]; k < tptr[r + 1]; ++k) {
            int32_t s = tidx[k];
            hpj__axpy(g, 1.0f / (float)(ptr[s + 1] - ptr[s]), dout + (ptrdiff_t)s * D, D);
        }
    }
}

/* ==== nn: attention ==== */

/* A row's softmax weights from its scores p (T; masked keys hold 0 and
   stay so): p[j] = exp(p[j] - mx) / sum, the sum in key order. */
static void hpj__att_softmax(float *p, const uint8_t *km, int T, float mx) {
    float sum = 0.0f, inv;
    int j;
    for (j = 0; j < T; ++j) {
        if (km && !km[j]) continue;
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    inv = 1.0f / sum;
    for (j = 0; j < T; ++j)
        if (!km || km[j]) p[j] *= inv;
}

HPJDEF void hpj_attention_forward(float *out, float *att, const float *qkv, const uint8_t *keymask,
                                  const float *adj, int B, int T, int D, int H) {
    int bh, hd = H > 0 ? D / H : 0;
    float scale = 1.0f / sqrtf((float)hd);
    ptrdiff_t ld = 3 * (ptrdiff_t)D;
    if (B <= 0 || T <= 0 || hd <= 0) return;
    /* one (graph, head) per task: s_ij = q_i.k_j scale over the unmasked
       keys, P_i = softmax(s_i), out_i = sum_j P_ij adj_ij v_j */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)B * H * T * T * hd >= HPJ__PAR_ELEMS))
    for (bh = 0; bh < B * H; ++bh) {
        int b = bh / H, h = bh % H, i, j;
        const float *base = qkv + (ptrdiff_t)b * T * ld;
        const uint8_t *km = keymask ? keymask + (ptrdiff_t)b * T : NULL;
        for (i = 0; i < T; ++i) {
            const float *q = base + i * ld + h * hd;
            float *p = att + ((ptrdiff_t)bh * T + i) * T;
            float *o = out + ((ptrdiff_t)b * T + i) * D + h * hd;
            float mx = 0.0f;
            int any = 0;
            for (j = 0; j < T; ++j) {
                if (km && !km[j]) {
                    p[j] = 0.0f;
                    continue;
                }
                p[j] = hpj__dot(q, base + j * ld + D + h * hd, hd) * scale;
                if (!any || p[j] > mx) mx = p[j];
                any = 1;
            }
            for (j = 0; j < hd; ++j) o[j] = 0.0f;
            if (!any) continue;
            hpj__att_softmax(p, km, T, mx);
            for (j = 0; j < T; ++j) {
                float w;
                if (km && !km[j]) continue;
                w = adj ? p[j] * adj[((ptrdiff_t)b * T + i) * T + j] : p[j];
                hpj__axpy(o, w, base + j * ld + 2 * D + h * hd, hd);
            }
        }
    }
}

#ifndef HPJ_REFERENCE
static void hpj__fast_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                                         const uint8_t *keymask, const float *adj, int B, int T, int D, int H);
#endif

HPJDEF void hpj_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                                   const uint8_t *keymask, const float *adj, int B, int T, int D, int H) {
    int bh, hd = H > 0 ? D / H : 0;
    float scale = 1.0f / sqrtf((float)hd);
    ptrdiff_t ld = 3 * (ptrdiff_t)D;
    if (B <= 0 || T <= 0 || hd <= 0) return;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: a row of dP kept between the two passes (see the fast part) */
        hpj__fast_attention_backward(dqkv, dout, qkv, att, keymask, adj, B, T, D, H);
        return;
    }
#endif
    /* out_i = sum_j P_ij a_ij v_j, P_i = softmax(s_i), s_ij = scale q_i.k_j:
       dv_j += P_ij a_ij dout_i ; dP_ij = a_ij dout_i.v_j ;
       ds_ij = P_ij (dP_ij - sum_l P_il dP_il) ; dq_i += scale ds_ij k_j ;
       dk_j += scale ds_ij q_i. Each (b, h) is one thread's, in i order.
       A row takes two passes over its keys: the first sums P dP, the
       second computes dP again and uses it. */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)B * H * T * T * hd >= HPJ__PAR_ELEMS))
    for (bh = 0; bh < B * H; ++bh) {
        int b = bh / H, h = bh % H, i, j;
        const float *base = qkv + (ptrdiff_t)b * T * ld;
        float *dbase = dqkv + (ptrdiff_t)b * T * ld;
        const uint8_t *km = keymask ? keymask + (ptrdiff_t)b * T : NULL;
        for (i = 0; i < T; ++i) {
            const float *p = att + ((ptrdiff_t)bh * T + i) * T;
            const float *a = adj ? adj + ((ptrdiff_t)b * T + i) * T : NULL;
            const float *go = dout + ((ptrdiff_t)b * T + i) * D + h * hd;
            const float *q = base + i * ld + h * hd;
            float *dq = dbase + i * ld + h * hd;
            float dsum = 0.0f;
            for (j = 0; j < T; ++j) {
                float dp;
                if (km && !km[j]) continue;
                dp = hpj__dot(go, base + j * ld + 2 * D + h * hd, hd);
                if (a) dp *= a[j];
                dsum = HPJ__FMAF(p[j], dp, dsum);
            }
            for (j = 0; j < T; ++j) {
                float dp, ds;
                if (km && !km[j]) continue;
                dp = hpj__dot(go, base + j * ld + 2 * D + h * hd, hd);
                if (a) dp *= a[j];
                ds = scale * (p[j] * (dp - dsum));
                hpj__axpy(dq, ds, base + j * ld + D + h * hd, hd);
                hpj__axpy(dbase + j * ld + D + h * hd, ds, q, hd);
                hpj__axpy(dbase + j * ld + 2 * D + h * hd, a ? p[j] * a[j] : p[j], go, hd);
            }
        }
    }
}

/* ==== nn: transformer block ==== */

HPJDEF size_t hpj_block_param_count(int D, int F) {
    size_t d = (size_t)D, f = (size_t)F;
    return 2 * d + 3 * d * d + 3 * d + d * d + d + 2 * d + f * d + f + d * f + d;
}

HPJDEF void hpj_block_params_bind(hpj_block_params *p, float *flat, int D, int F) {
    size_t d = (size_t)D, f = (size_t)F;
    p->ln1_g = flat;
    p->ln1_b = p->ln1_g + d;
    p->Wqkv = p->ln1_b + d;
    p->bqkv = p->Wqkv + 3 * d * d;
    p->Wo = p->bqkv + 3 * d;
    p->bo = p->Wo + d * d;
    p->ln2_g = p->bo + d;
    p->ln2_b = p->ln2_g + d;
    p->W1 = p->ln2_b + d;
    p->b1 = p->W1 + f * d;
    p->W2 = p->b1 + f;
    p->b2 = p->W2 + d * f;
}

HPJDEF void hpj_block_params_init(hpj_block_params *p, int D, int F, hpj_rng *r) {
    int j;
    for (j = 0; j < D; ++j) {
        p->ln1_g[j] = p->ln2_g[j] = 1.0f;
        p->ln1_b[j] = p->ln2_b[j] = p->bo[j] = 0.0f;
    }
    hpj_init_xavier_uniform(p->Wqkv, 3 * D, D, 0.70710678f, r);
    for (j = 0; j < 3 * D; ++j) p->bqkv[j] = 0.0f;
    hpj_init_xavier_uniform(p->Wo, D, D, 1.0f, r);
    hpj_init_uniform(p->W1, (size_t)F * D, 1.0f / sqrtf((float)D), r);
    hpj_init_uniform(p->b1, (size_t)F, 1.0f / sqrtf((float)D), r);
    hpj_init_uniform(p->W2, (size_t)D * F, 1.0f / sqrtf((float)F), r);
    hpj_init_uniform(p->b2, (size_t)D, 1.0f / sqrtf((float)F), r);
}

/* floats rounded up to 16 (64 bytes) */
static size_t hpj__r16(size_t n) { return (n + 15) & ~(size_t)15; }

HPJDEF size_t hpj_block_cache_count(int B, int T, int D, int H, int F) {
    size_t bt = (size_t)B * T, d = (size_t)D;
    return 4 * hpj__r16(bt * d) + 4 * hpj__r16(bt) + hpj__r16(3 * bt * d) +
           hpj__r16((size_t)B * H * T * T) + 2 * hpj__r16(bt * (size_t)F);
}

HPJDEF void hpj_block_cache_bind(hpj_block_cache *c, float *flat, int B, int T, int D, int H, int F) {
    size_t bt = (size_t)B * T, d = (size_t)D;
    c->ln1 = flat;
    c->ln1_mean = c->ln1 + hpj__r16(bt * d);
    c->ln1_rstd = c->ln1_mean + hpj__r16(bt);
    c->qkv = c->ln1_rstd + hpj__r16(bt);
    c->att = c->qkv + hpj__r16(3 * bt * d);
    c->atty = c->att + hpj__r16((size_t)B * H * T * T);
    c->x1 = c->atty + hpj__r16(bt * d);
    c->ln2 = c->x1 + hpj__r16(bt * d);
    c->ln2_mean = c->ln2 + hpj__r16(bt * d);
    c->ln2_rstd = c->ln2_mean + hpj__r16(bt);
    c->fch = c->ln2_rstd + hpj__r16(bt);
    c->fch_act = c->fch + hpj__r16(bt * (size_t)F);
}

HPJDEF size_t hpj_block_scratch_count(int B, int T, int D, int H, int F) {
    size_t bt = (size_t)B * T;
    (void)H;
    return 2 * hpj__r16(bt * (size_t)D) + 2 * hpj__r16(bt * (size_t)F) + hpj__r16(3 * bt * (size_t)D);
}

/* y (n) += x (n) */
static void hpj__add_inplace(float *y, const float *x, size_t n) {
    int64_t i, nn = (int64_t)n;
    HPJ__OMP(parallel for simd schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i) y[i] += x[i];
}

/* Sequences of one unmasked token without adjacency weights (the
   context path of the JEPA step) skip q and k: the softmax over a single
   key is exactly 1, so the attention output is v and the gradients of q
   and k are exactly 0. The reference has the same identity ("without
   self-attention for the context"). */
static int hpj__block_single(int T, const uint8_t *keymask, const float *adj) {
    return T == 1 && !keymask && !adj;
}

HPJDEF void hpj_block_forward(float *out, hpj_block_cache *c, const float *inp, const hpj_block_params *p,
                              const uint8_t *keymask, const float *adj, int B, int T, int D, int H, int F, int act) {
    int N = B * T;
    if (N <= 0) return;
    hpj_layernorm_forward(c->ln1, c->ln1_mean, c->ln1_rstd, inp, p->ln1_g, p->ln1_b, N, D, 1e-5f);
    if (hpj__block_single(T, keymask, adj)) {
        /* one token: the softmax over one key is 1, the attention output
           is v itself; q and k are never formed (the same bits) */
        size_t i;
        hpj_linear_forward(c->atty, c->ln1, p->Wqkv + 2 * (size_t)D * D, p->bqkv + 2 * D, N, D, D);
        for (i = 0; i < (size_t)B * H; ++i) c->att[i] = 1.0f;
    } else {
        hpj_linear_forward(c->qkv, c->ln1, p->Wqkv, p->bqkv, N, D, 3 * D);
        hpj_attention_forward(c->atty, c->att, c->qkv, keymask, adj, B, T, D, H);
    }
    hpj_linear_forward(c->x1, c->atty, p->Wo, p->bo, N, D, D);
    hpj__add_inplace(c->x1, inp, (size_t)N * D);
    hpj_layernorm_forward(c->ln2, c->ln2_mean, c->ln2_rstd, c->x1, p->ln2_g, p->ln2_b, N, D, 1e-5f);
    hpj_linear_forward(c->fch, c->ln2, p->W1, p->b1, N, D, F);
    if (act == HPJ_ACT_GELU) hpj_gelu_forward(c->fch_act, c->fch, (size_t)N * F);
    else hpj_relu_forward(c->fch_act, c->fch, (size_t)N * F);
    hpj_linear_forward(out, c->fch_act, p->W2, p->b2, N, F, D);
    hpj__add_inplace(out, c->x1, (size_t)N * D);
}

HPJDEF void hpj_block_backward(float *dinp, hpj_block_params *dp, const float *dout, const float *inp,
                               const hpj_block_params *p, const hpj_block_cache *c, float *scratch,
                               const uint8_t *keymask, const float *adj, int B, int T, int D, int H, int F, int act) {
    int N = B * T;
    size_t nd = (size_t)N * D, nf = (size_t)N * F;
    float *dx1 = scratch;                   /* (N, D) */
    float *dD = dx1 + hpj__r16(nd);         /* (N, D): dln2, then datty, then dln1 */
    float *dF1 = dD + hpj__r16(nd);         /* (N, F): d fch_act */
    float *dF2 = dF1 + hpj__r16(nf);        /* (N, F): d fch */
    float *dqkv = dF2 + hpj__r16(nf);       /* (N, 3D) */
    float *dln1 = dD;                       /* d ln1 */
    if (N <= 0 || (!dinp && !dp)) return;
    /* y = x1 + fch_act W2^T + b2 */
    memcpy(dx1, dout, nd * sizeof(float));
    hpj__linear_back2(dF1, 0.0f, dp ? dp->W2 : NULL, dp ? dp->b2 : NULL, dout, c->fch_act, p->W2, N, F, D);
    /* fch_act = act(fch): dF2 = act'(fch) dF1 */
    memset(dF2, 0, nf * sizeof(float));
    if (act == HPJ_ACT_GELU) hpj_gelu_backward(dF2, dF1, c->fch, nf);
    else hpj_relu_backward(dF2, dF1, c->fch_act, nf);
    /* fch = ln2 W1^T + b1 */
    hpj__linear_back2(dD, 0.0f, dp ? dp->W1 : NULL, dp ? dp->b1 : NULL, dF2, c->ln2, p->W1, N, D, F);
    /* ln2 = LN(x1) */
    hpj_layernorm_backward(dx1, dp ? dp->ln2_g : NULL, dp ? dp->ln2_b : NULL, dD, c->x1, p->ln2_g, c->ln2_mean,
                           c->ln2_rstd, N, D);
    /* x1 = x + atty Wo^T + bo */
    hpj__linear_back2(dD, 0.0f, dp ? dp->Wo : NULL, dp ? dp->bo : NULL, dx1, c->atty, p->Wo, N, D, D);
    if (hpj__block_single(T, keymask, adj)) { /* atty = v: q and k get no gradient */
        hpj__linear_back2(dqkv, 0.0f, dp ? dp->Wqkv + 2 * (size_t)D * D : NULL, dp ? dp->bqkv + 2 * D : NULL, dD, c->ln1,
                          p->Wqkv + 2 * (size_t)D * D, N, D, D);
        dln1 = dqkv;
    } else {
        /* atty = attention(qkv) */
        memset(dqkv, 0, 3 * nd * sizeof(float));
        hpj_attention_backward(dqkv, dD, c->qkv, c->att, keymask, adj, B, T, D, H);
        /* qkv = ln1 Wqkv^T + bqkv */
        hpj__linear_back2(dD, 0.0f, dp ? dp->Wqkv : NULL, dp ? dp->bqkv : NULL, dqkv, c->ln1, p->Wqkv, N, D, 3 * D);
    }
    /* ln1 = LN(x) ; and the residual x1 = x + ... */
    hpj_layernorm_backward(dinp, dp ? dp->ln1_g : NULL, dp ? dp->ln1_b : NULL, dln1, inp, p->ln1_g, c->ln1_mean,
                           c->ln1_rstd, N, D);
    if (dinp) hpj__add_inplace(dinp, dx1, nd);
}

/* ==== nn: losses ==== */

HPJDEF double hpj_smooth_l1(const float *pred, const float *target, float *dpred, size_t n, float beta,
                            float scale) {
    double part[HPJ__NBLK], tot = 0.0;
    int64_t nn = (int64_t)n;
    int b;
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (b = 0; b < HPJ__NBLK; ++b) {
        int64_t i0 = nn * b / HPJ__NBLK, i1 = nn * (b + 1) / HPJ__NBLK, i;
        double s = 0.0;
        for (i = i0; i < i1; ++i) {
            float d = pred[i] - target[i], ad = fabsf(d), g;
            if (ad < beta) {
                s += 0.5 * (double)d * d / beta;
                g = d / beta;
            } else {
                s += (double)ad - 0.5 * (beta > 0.0f ? beta : 0.0f);
                g = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
            }
            if (dpred) dpred[i] += scale * g;
        }
        part[b] = s;
    }
    for (b = 0; b < HPJ__NBLK; ++b) tot += part[b];
    return (double)scale * tot;
}

HPJDEF double hpj_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int N, int C,
                               float scale) {
    double part[HPJ__NBLK], tot = 0.0;
    int b;
    if (N <= 0 || C <= 0) return 0.0;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * C >= HPJ__PAR_ELEMS))
    for (b = 0; b < HPJ__NBLK; ++b) {
        int i0 = (int)((int64_t)N * b / HPJ__NBLK), i1 = (int)((int64_t)N * (b + 1) / HPJ__NBLK), i, c;
        double s = 0.0;
        for (i = i0; i < i1; ++i) {
            const float *z = logits + (ptrdiff_t)i * C;
            double mx, se = 0.0, lse;
            if (labels[i] < 0 || labels[i] >= C) continue;
            mx = z[0];
            for (c = 1; c < C; ++c)
                if (z[c] > mx) mx = z[c];
            for (c = 0; c < C; ++c) se += exp(z[c] - mx);
            lse = mx + log(se);
            s += lse - z[labels[i]];
            if (dlogits) {
                float *g = dlogits + (ptrdiff_t)i * C;
                for (c = 0; c < C; ++c) g[c] += scale * (float)exp(z[c] - lse);
                g[labels[i]] -= scale;
            }
        }
        part[b] = s;
    }
    for (b = 0; b < HPJ__NBLK; ++b) tot += part[b];
    return (double)scale * tot;
}

/* ==== nn: optimiser, schedules, clipping ==== */

/* Adam, one parameter at a time: the moments are running means of g and
   g^2, and the step divides the first by the square root of the second,
   each corrected for its zero start (bc1, bc2). Every operation is one
   float operation in this order, so any caller that does the same
   arithmetic gets the same bits. */
HPJDEF void hpj_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                          float beta2, float eps, float weight_decay, int mode, int64_t t) {
    double bc1 = 1.0 - pow((double)beta1, (double)t), bc2 = 1.0 - pow((double)beta2, (double)t);
    int decoupled = mode == HPJ_OPT_ADAMW, active = mode == HPJ_OPT_ADAM_ACTIVE;
    float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2);
    float gwd = decoupled ? 0.0f : weight_decay, decay = decoupled ? (float)(1.0 - (double)lr * weight_decay) : 1.0f;
    float omb1 = (float)(1.0 - (double)beta1), omb2 = (float)(1.0 - (double)beta2);
    int64_t i, nn = (int64_t)n;
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i) {
        float gi = active && g[i] == 0.0f ? 0.0f : g[i] + gwd * p[i]; /* Adam: g += wd p */
        float pi = p[i] * decay;      /* AdamW: p *= 1 - lr wd */
        m[i] = beta1 * m[i] + omb1 * gi;
        v[i] = beta2 * v[i] + omb2 * (gi * gi);
        p[i] = pi - step * (m[i] / (sqrtf(v[i]) / bc2s + eps));
    }
}

HPJDEF float hpj_lr_at(int schedule, float base_lr, float min_lr, int64_t step, int64_t total, int64_t warmup) {
    double s, span;
    if (step < 0) step = 0;
    if (warmup > 0 && step < warmup) return (float)((double)base_lr * (double)(step + 1) / (double)warmup);
    if (schedule != HPJ_SCHED_COSINE) return base_lr;
    span = (double)(total - warmup);
    s = (double)(step - warmup);
    if (span <= 0.0 || s >= span) return min_lr;
    return (float)(min_lr + ((double)base_lr - min_lr) * 0.5 * (1.0 + cos(3.14159265358979323846 * s / span)));
}

/* The global L2 norm of g (n) and the factor that clipping scales g by (1
   when none applies). The sum of squares runs in double over HPJ__NBLK
   fixed blocks; inside a block, element i0 + 8 k + l goes to lane l of 8,
   the lanes are combined in a fixed tree, then the blocks in order: a
   fixed order of additions whatever the thread count. */
static double hpj__grad_norm(const float *g, size_t n, float max_norm, float *scale) {
    double part[HPJ__NBLK], tot = 0.0, norm;
    int64_t nn = (int64_t)n;
    int b;
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (b = 0; b < HPJ__NBLK; ++b) {
        int64_t i, i1 = nn * (b + 1) / HPJ__NBLK;
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int l;
        for (i = nn * b / HPJ__NBLK; i + 8 <= i1; i += 8)
            for (l = 0; l < 8; ++l) acc[l] += (double)g[i + l] * g[i + l];
        for (l = 0; i + l < i1; ++l) acc[l] += (double)g[i + l] * g[i + l];
        part[b] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
    for (b = 0; b < HPJ__NBLK; ++b) tot += part[b];
    norm = sqrt(tot);
    *scale = max_norm > 0.0f && norm > max_norm && isfinite(norm) ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
    return norm;
}

HPJDEF double hpj_grad_clip(float *g, size_t n, float max_norm) {
    float f;
    double norm = hpj__grad_norm(g, n, max_norm, &f);
    if (f != 1.0f) {
        int64_t i, nn = (int64_t)n;
        HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
        for (i = 0; i < nn; ++i) g[i] *= f;
    }
    return norm;
}

/* ==== nn: EMA ==== */

HPJDEF void hpj_ema_update(float *target, const float *online, size_t n, float momentum) {
    int64_t i, nn = (int64_t)n;
    float a = 1.0f - momentum;
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (i = 0; i < nn; ++i) target[i] = momentum * target[i] + a * online[i];
}

HPJDEF float hpj_ema_momentum(float start, float end, int64_t step, int64_t total) {
    if (total <= 0 || step <= 0) return start;
    if (step >= total) return end;
    return (float)((double)start + ((double)end - start) * (double)step / (double)total);
}

/* ==== nn: initialisers ==== */

HPJDEF void hpj_init_uniform(float *w, size_t n, float bound, hpj_rng *r) {
    size_t i;
    for (i = 0; i < n; ++i) w[i] = bound * (2.0f * hpj_rng_uniform(r) - 1.0f);
}

HPJDEF void hpj_init_xavier_uniform(float *w, int fan_out, int fan_in, float gain, hpj_rng *r) {
    float a = gain * sqrtf(6.0f / (float)(fan_in + fan_out));
    hpj_init_uniform(w, (size_t)fan_out * fan_in, a, r);
}

/* ==== config ============================================================== */

/* The table of keys, one line per key in the order a config file lists
   them (hpj_config_format writes them so): the field it sets, its name in
   the file, its kind and range (or words, the n-th setting the value n)
   and its default, written as a config file would hold it. */
#define HPJ__AT(field) offsetof(hpj_config, field)
static const hpj_config_key hpj__config_keys[] = {
    {"mode", HPJ_KEY_WORD, 0, 0, "hp graph-jepa", HPJ__AT(mode), "hp"},
    {"resolutions", HPJ_KEY_LIST, 1, 1 << 20, NULL, HPJ__AT(K), "2,4,8,16"},
    {"targets", HPJ_KEY_LIST, 1, 1 << 20, NULL, HPJ__AT(M), "1,2,3,4"},
    {"dim", HPJ_KEY_INT, 2, 8192, NULL, HPJ__AT(dim), "512"},
    {"blocks", HPJ_KEY_INT, 0, 64, NULL, HPJ__AT(blocks), "4"},
    {"heads", HPJ_KEY_INT, 1, 256, NULL, HPJ__AT(heads), "8"},
    {"ffn", HPJ_KEY_INT, 0, 65536, NULL, HPJ__AT(ffn), "0"},
    {"ffn_act", HPJ_KEY_WORD, 0, 0, "relu gelu", HPJ__AT(ffn_act), "relu"},
    {"gnn_layers", HPJ_KEY_INT, 1, 16, NULL, HPJ__AT(gnn_layers), "2"},
    {"rw_dim", HPJ_KEY_INT, 1, 256, NULL, HPJ__AT(rw_dim), "15"},
    {"rw_reduce", HPJ_KEY_WORD, 0, 0, "max mean", HPJ__AT(rw_reduce), "max"},
    {"pred_layers", HPJ_KEY_INT, 1, 8, NULL, HPJ__AT(pred_layers), "3"},
    {"target_adj", HPJ_KEY_INT, 0, 1, NULL, HPJ__AT(target_adj), "0"},
    {"ema_init", HPJ_KEY_WORD, 0, 0, "independent copy", HPJ__AT(ema_copy_init), "copy"},
    {"patch_mixing", HPJ_KEY_INT, 0, 1, NULL, HPJ__AT(patch_mixing), "1"},
    {"gnn_out_linear", HPJ_KEY_INT, 0, 1, NULL, HPJ__AT(gnn_out_linear), "1"},
    {"patch_tokens", HPJ_KEY_WORD, 0, 0, "alone present graph", HPJ__AT(patch_tokens), "alone"},
    {"node_degree", HPJ_KEY_INT, 0, 4095, NULL, HPJ__AT(node_degree), "0"},
    {"lr", HPJ_KEY_REAL, 0.0, 10.0, NULL, HPJ__AT(lr), "0.00025"},
    {"min_lr", HPJ_KEY_REAL, 0.0, 10.0, NULL, HPJ__AT(min_lr), "0"},
    {"weight_decay", HPJ_KEY_REAL, 0.0, 10.0, NULL, HPJ__AT(weight_decay), "0"},
    {"optimizer", HPJ_KEY_WORD, 0, 0, "adam adamw adam_active", HPJ__AT(optimizer), "adam"},
    {"batch_size", HPJ_KEY_INT, 1, 1 << 20, NULL, HPJ__AT(batch_size), "128"},
    {"epochs", HPJ_KEY_INT, 0, 1 << 20, NULL, HPJ__AT(epochs), "20"},
    {"schedule", HPJ_KEY_WORD, 0, 0, "constant cosine", HPJ__AT(schedule), "cosine"},
    {"warmup", HPJ_KEY_REAL, 0.0, 1e6, NULL, HPJ__AT(warmup), "0"},
    {"dropout", HPJ_KEY_REAL, 0.0, 0.99, NULL, HPJ__AT(dropout), "0"},
    {"token_dropout", HPJ_KEY_REAL, 0.0, 0.99, NULL, HPJ__AT(token_dropout), "0"},
    {"clip", HPJ_KEY_REAL, 0.0, 1e9, NULL, HPJ__AT(clip), "0"},
    {"beta", HPJ_KEY_REAL, 1e-12, 1e9, NULL, HPJ__AT(beta), "1"},
    {"ema_start", HPJ_KEY_REAL, 0.0, 1.0, NULL, HPJ__AT(ema_start), "0.996"},
    {"ema_end", HPJ_KEY_REAL, 0.0, 1.0, NULL, HPJ__AT(ema_end), "1"},
    {"edge_drop", HPJ_KEY_REAL, 0.0, 0.99, NULL, HPJ__AT(edge_drop), "0.3"},
    {"repartition", HPJ_KEY_INT, 0, 1, NULL, HPJ__AT(repartition), "1"},
    {"target_clamp", HPJ_KEY_REAL, 0.0, 80.0, NULL, HPJ__AT(target_clamp), "0"},
    {"partition", HPJ_KEY_WORD, 0, 0, "kway rb", HPJ__AT(part_method), "rb"},
    {"node_vocab", HPJ_KEY_INT, 0, 1 << 20, NULL, HPJ__AT(node_vocab), "0"},
    {"edge_vocab", HPJ_KEY_INT, 0, 1 << 20, NULL, HPJ__AT(edge_vocab), "0"},
    {"node_attr", HPJ_KEY_INT, 0, 1, NULL, HPJ__AT(node_attr), "0"},
    {"partition_trials", HPJ_KEY_INT, 0, 1000, NULL, HPJ__AT(part_trials), "0"},
    {"readout", HPJ_KEY_WORD, 0, 0, "concat uniform task", HPJ__AT(readout), "concat"},
    {"lambda_unif", HPJ_KEY_REAL, 0.0, 1.0, NULL, HPJ__AT(lambda_unif), "1"},
    {"probe_alpha", HPJ_KEY_REAL, 0.0, 1e12, NULL, HPJ__AT(probe_alpha), "1"},
    {"probe_select", HPJ_KEY_WORD, 0, 0, "fixed cv", HPJ__AT(probe_select), "fixed"},
    {"train_embed", HPJ_KEY_WORD, 0, 0, "fixed repartition", HPJ__AT(train_embed), "fixed"},
    {"seed", HPJ_KEY_SEED, 0, 0, NULL, HPJ__AT(seed), "42"},
    {"threads", HPJ_KEY_INT, 0, 4096, NULL, HPJ__AT(threads), "0"},
};
#undef HPJ__AT
#define HPJ__NUM_KEYS ((int)(sizeof hpj__config_keys / sizeof hpj__config_keys[0]))

HPJDEF const hpj_config_key *hpj_config_keys(int *count) {
    if (count) *count = HPJ__NUM_KEYS;
    return hpj__config_keys;
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
/* The value is kept as a float, so the range is compared in float: the
   text hpj_config_format writes for an accepted value ("%.9g", which
   reads back to the same float) then passes the check again, even where
   the float lies just outside the decimal bound (0.99 is kept as
   0.99000001, above 0.99 in double). */
static int hpj__parse_float(const char *v, double lo, double hi, float *out) {
    char *end;
    double x;
    float f;
    if (!*v) return -1;
    x = strtod(v, &end);
    while (*end == ' ' || *end == '\t') ++end;
    if (*end || !(x == x)) return -1;
    if (x > FLT_MAX || x < -FLT_MAX) return -1; /* no float holds it */
    f = (float)x;
    if (!(f >= (float)lo && f <= (float)hi)) return -1;
    *out = f;
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
/* The i-th of a key's words (the table separates them by one space), its
   length in *len; NULL past the last. */
static const char *hpj__word(const char *words, int i, size_t *len) {
    const char *p = words;
    if (i < 0) return NULL;
    for (; i > 0 && *p; --i) {
        p += strcspn(p, " ");
        if (*p) ++p;
    }
    if (!*p) return NULL;
    *len = strcspn(p, " ");
    return p;
}
/* The position of v among the words, or -1. */
static int hpj__word_index(const char *words, const char *v) {
    size_t len;
    const char *w;
    int i;
    for (i = 0; (w = hpj__word(words, i, &len)) != NULL; ++i)
        if (len == strlen(v) && !memcmp(w, v, len)) return i;
    return -1;
}

/* For a mistyped key, the key it most likely meant: the one within two
   single-character edits (insert, delete, replace: Levenshtein distance),
   the nearest first; NULL when none is that close. */
static const char *hpj__nearest_key(const char *key) {
    int i, best = 3, row[64], n = (int)strlen(key);
    const char *hit = NULL;
    if (n >= 63) return NULL;
    for (i = 0; i < HPJ__NUM_KEYS; ++i) {
        const char *k = hpj__config_keys[i].name;
        int a, b, m = (int)strlen(k);
        if (m >= 63) continue;
        for (b = 0; b <= n; ++b) row[b] = b; /* distance from "" to key[0..b) */
        for (a = 1; a <= m; ++a) {
            int diag = row[0];
            row[0] = a;
            for (b = 1; b <= n; ++b) {
                int up = row[b], d = diag + (k[a - 1] != key[b - 1]);
                d = HPJ__MIN(d, up + 1);
                d = HPJ__MIN(d, row[b - 1] + 1);
                diag = up;
                row[b] = d;
            }
        }
        if (row[n] < best) best = row[n], hit = k;
    }
    return hit;
}

HPJDEF hpj_status hpj_config_set(hpj_config *c, const char *key, const char *v) {
    const hpj_config_key *k = NULL;
    char *field;
    int i;
    if (!key || !v) return hpj__fail(HPJ_ERR_INPUT, "config: NULL key or value");
    for (i = 0; i < HPJ__NUM_KEYS; ++i)
        if (hpj__streq(key, hpj__config_keys[i].name)) { k = &hpj__config_keys[i]; break; }
    if (!k) {
        /* the retired speed switches: read (so that older files load) and
           dropped; the fast paths are chosen by hpj_set_paths */
        static const char *const retired[] = {"input_table", "target_fold", "layer_classes"};
        long x;
        for (i = 0; i < 3; ++i)
            if (hpj__streq(key, retired[i])) {
                if (hpj__parse_long(v, 0, 1, &x))
                    return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (an integer in 0..1)", v, key);
                return HPJ_OK;
            }
        {
            const char *near = hpj__nearest_key(key);
            if (near) return hpj__fail(HPJ_ERR_INPUT, "config: unknown key '%s' (did you mean '%s'?)", key, near);
        }
        return hpj__fail(HPJ_ERR_INPUT, "config: unknown key '%s'", key);
    }
    field = (char *)c + k->offset;
    switch (k->kind) {
    case HPJ_KEY_INT: {
        long x;
        if (hpj__parse_long(v, (long)k->lo, (long)k->hi, &x))
            return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (an integer in %.0f..%.0f)", v, key, k->lo,
                             k->hi);
        *(int *)field = (int)x;
        return HPJ_OK;
    }
    case HPJ_KEY_REAL:
        if (hpj__parse_float(v, k->lo, k->hi, (float *)field))
            return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (a number in %g..%g)", v, key, k->lo, k->hi);
        return HPJ_OK;
    case HPJ_KEY_WORD: {
        int w = hpj__word_index(k->words, v);
        /* older spellings of the two methods */
        if (w < 0 && field == (char *)&c->mode) w = hpj__streq(v, "hp-jepa") ? 0 : hpj__streq(v, "gj") ? 1 : -1;
        if (w < 0) { /* the words as "a or b", "a, b or c" (the table's fit the buffer) */
            char list[160];
            size_t n = 0, len, len2;
            const char *word;
            for (i = 0; (word = hpj__word(k->words, i, &len)) != NULL; ++i) {
                const char *sep = i == 0 ? "" : hpj__word(k->words, i + 1, &len2) ? ", " : " or ";
                memcpy(list + n, sep, strlen(sep));
                n += strlen(sep);
                memcpy(list + n, word, len);
                n += len;
            }
            list[n] = 0;
            return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (%s)", v, key, list);
        }
        *(int *)field = w;
        return HPJ_OK;
    }
    case HPJ_KEY_LIST: {
        int32_t list[HPJ_MAX_RES];
        int n, l;
        if (hpj__parse_list(v, list, &n, (long)k->lo, (long)k->hi))
            return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (1 to %d comma-separated integers >= 1)", v,
                             key, HPJ_MAX_RES);
        if (field == (char *)c->K) { /* resolutions: their count is L */
            c->L = n;
            memcpy(c->K, list, sizeof(int32_t) * (size_t)n);
        } else { /* targets: the last value repeats over the remaining slots */
            for (l = 0; l < HPJ_MAX_RES; ++l) c->M[l] = list[l < n ? l : n - 1];
        }
        return HPJ_OK;
    }
    default: { /* HPJ_KEY_SEED: decimal digits up to 2^64 - 1 (strtoull would
                  take "-1" and wrap, and saturate on overflow) */
        const char *d = v;
        size_t n;
        uint64_t sv = 0;
        while (*d == ' ' || *d == '\t') ++d;
        while (*d == '0' && d[1] >= '0' && d[1] <= '9') ++d; /* leading zeros */
        n = strspn(d, "0123456789");
        if (!n || d[n + strspn(d + n, " \t")] || n > 20 || (n == 20 && strncmp(d, "18446744073709551615", 20) > 0))
            return hpj__fail(HPJ_ERR_INPUT, "config: bad value '%s' for key '%s' (an integer in 0..18446744073709551615)", v,
                             key);
        for (; n; --n, ++d) sv = sv * 10 + (uint64_t)(*d - '0');
        *(uint64_t *)field = (uint64_t)sv;
        return HPJ_OK;
    }
    }
}

/* Every key at its default from the table. */
HPJDEF void hpj_config_default(hpj_config *c) {
    int i, l;
    memset(c, 0, sizeof(*c));
    for (i = 0; i < HPJ__NUM_KEYS; ++i) hpj_config_set(c, hpj__config_keys[i].name, hpj__config_keys[i].def);
    /* the capacity slots past the default list too, doubling on (the
       ranks' fingerprint hashes every slot) */
    for (l = c->L; l < HPJ_MAX_RES; ++l) c->K[l] = 2 << l;
}

HPJDEF hpj_status hpj_config_check(const hpj_config *c) {
    int i, l;
    if (c->L < 1 || c->L > HPJ_MAX_RES) return hpj__fail(HPJ_ERR_INPUT, "config: %d resolutions outside 1..%d", c->L, HPJ_MAX_RES);
    for (l = 0; l < c->L; ++l) {
        if (c->K[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "config: resolution %d has capacity %d < 1", l + 1, c->K[l]);
        if (c->M[l] < 1) return hpj__fail(HPJ_ERR_INPUT, "config: resolution %d has %d targets < 1", l + 1, c->M[l]);
    }
    for (i = 0; i < HPJ__NUM_KEYS; ++i) { /* the table's ranges, for a config set in code too */
        const hpj_config_key *k = &hpj__config_keys[i];
        const char *field = (const char *)c + k->offset;
        float f = k->kind == HPJ_KEY_REAL ? *(const float *)field : 0.0f;
        int bad = 0;
        size_t len;
        if (k->kind == HPJ_KEY_INT) bad = *(const int *)field < k->lo || *(const int *)field > k->hi;
        if (k->kind == HPJ_KEY_REAL) bad = !(f >= (float)k->lo && f <= (float)k->hi);
        if (k->kind == HPJ_KEY_WORD) bad = hpj__word(k->words, *(const int *)field, &len) == NULL;
        if (k->kind == HPJ_KEY_LIST)
            for (l = 0; l < c->L; ++l) bad |= ((const int32_t *)field)[l] > k->hi;
        if (bad) return hpj__fail(HPJ_ERR_INPUT, "config: %s holds a value that hpj_config_set refuses", k->name);
    }
    if (c->dim % c->heads) return hpj__fail(HPJ_ERR_INPUT, "config: dim %d is not a multiple of heads %d", c->dim, c->heads);
    if (c->ema_end < c->ema_start) return hpj__fail(HPJ_ERR_INPUT, "config: ema_end %g < ema_start %g", c->ema_end, c->ema_start);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_config_parse(hpj_config *c, const char *text, size_t len, const char *name) {
    size_t i = 0;
    int64_t line = 0;
    char buf[512];
    hpj_status st;
    if (!name) name = "config";
    if ((st = hpj__check_text(text, len, name))) return st; /* a NUL byte would cut a line short */
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
    st = hpj_config_parse(c, text, len, path);
    hpj__free(text);
    return st;
}

/* Appends printf-style text to buf when it fits; *n counts every byte,
   as snprintf does. */
#if defined(__GNUC__) || defined(__clang__)
static void hpj__appendf(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#endif
static void hpj__appendf(char *buf, size_t cap, size_t *n, const char *fmt, ...) {
    char tmp[256];
    int w;
    va_list ap;
    va_start(ap, fmt);
    w = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (w <= 0) return;
    if (*n + (size_t)w < cap) memcpy(buf + *n, tmp, (size_t)w);
    *n += (size_t)w;
}

HPJDEF size_t hpj_config_format(const hpj_config *c, char *buf, size_t cap) {
    size_t n = 0, len;
    int i, l;
    for (i = 0; i < HPJ__NUM_KEYS; ++i) {
        const hpj_config_key *k = &hpj__config_keys[i];
        const char *field = (const char *)c + k->offset, *word;
        /* partition_trials only when set, so that the default text (and
           what reads it: older programs, fold-log keys) stays as it was
           without the key */
        if (field == (const char *)&c->part_trials && !c->part_trials) continue;
        hpj__appendf(buf, cap, &n, "%s = ", k->name);
        switch (k->kind) {
        case HPJ_KEY_INT: hpj__appendf(buf, cap, &n, "%d\n", *(const int *)field); break;
        case HPJ_KEY_REAL: hpj__appendf(buf, cap, &n, "%.9g\n", (double)*(const float *)field); break;
        case HPJ_KEY_WORD: /* a value that names no word is written as the number, which no reader takes */
            if ((word = hpj__word(k->words, *(const int *)field, &len)) != NULL) hpj__appendf(buf, cap, &n, "%.*s\n", (int)len, word);
            else hpj__appendf(buf, cap, &n, "%d\n", *(const int *)field);
            break;
        case HPJ_KEY_LIST:
            for (l = 0; l < c->L; ++l) hpj__appendf(buf, cap, &n, "%s%d", l ? "," : "", ((const int32_t *)field)[l]);
            hpj__appendf(buf, cap, &n, "\n");
            break;
        default: hpj__appendf(buf, cap, &n, "%llu\n", (unsigned long long)*(const uint64_t *)field); break;
        }
    }
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
        if (c->gnn_out_linear) {
            HPJ__T(q->Wout, (size_t)D * D);
            HPJ__T(q->bout, D);
        }
        if (i > 0 && c->patch_mixing) {
            HPJ__T(q->Wu, (size_t)D * D);
            HPJ__T(q->bnu_g, D);
            HPJ__T(q->bnu_b, D);
        }
    }
    HPJ__T(p->sq_W, (size_t)D * m->R);
    HPJ__T(p->sq_g, D);
    HPJ__T(p->sq_b, D);
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

/* Binds the running statistics: one set per resolution (b[0 .. L-1]),
   each contiguous, in resolution order (or only counts when base is NULL);
   returns the float count. */
static size_t hpj__stats_layout(const hpj_model *m, float *base, hpj_bn_stats *b) {
    size_t off = 0;
    int i, l, D = m->D;
#define HPJ__T(ptr) do { (ptr) = base ? base + off : NULL; off += (size_t)D; } while (0)
    memset(b, 0, sizeof(*b) * HPJ_MAX_RES);
    for (l = 0; l < m->cfg.L; ++l) {
        hpj_bn_stats *s = &b[l];
        for (i = 0; i < m->cfg.gnn_layers; ++i) {
            HPJ__T(s->bn1_m[i]); HPJ__T(s->bn1_v[i]);
            HPJ__T(s->bn2_m[i]); HPJ__T(s->bn2_v[i]);
            if (i > 0 && m->cfg.patch_mixing) { HPJ__T(s->bnu_m[i]); HPJ__T(s->bnu_v[i]); }
        }
        HPJ__T(s->sq_m); HPJ__T(s->sq_v);
    }
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

/* Checks the config and sets the model's widths and tensor sizes
   (num_params, enc_count, num_stats) without allocating; the input encoding
   fields (node_onehot ... edge_label_min, F, Fe) are already set in m. */
static hpj_status hpj__model_shape(hpj_model *m, const hpj_config *cfg) {
    hpj_status st;
    size_t n;
    hpj_params dummy;
    hpj_bn_stats nostats[HPJ_MAX_RES];
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
    m->num_stats = hpj__stats_layout(m, NULL, nostats);
    return HPJ_OK;
}

/* Allocates the tensors of a model that hpj__model_shape has sized;
   parameters zeroed. */
static hpj_status hpj__model_alloc(hpj_model *m) {
    size_t n = m->num_params, total;
    int i;
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
    for (i = 0; i < m->cfg.blocks; ++i)
        hpj_block_params_bind(&m->tgt[i], m->ema + (size_t)i * hpj_block_param_count(m->D, m->Fh), m->D, m->Fh);
    hpj__stats_layout(m, m->stats, m->bn);
    return HPJ_OK;
}

/* The one-hot width of labels lo..hi with a configured vocabulary: the
   span in 64 bits, as labels may span all of int32; over 2^20 is refused. */
static hpj_status hpj__onehot_width(const char *what, int32_t lo, int32_t hi, int vocab, int *width) {
    int64_t span = (int64_t)hi - lo + 1;
    if (span > (1 << 20))
        return hpj__fail(HPJ_ERR_INPUT, "model: %s labels %d..%d span %lld values, more than a one-hot input can take (2^20)",
                         what, lo, hi, (long long)span);
    *width = (int)HPJ__MAX((int64_t)vocab, span);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_model_init(hpj_model *m, const hpj_config *cfg, const hpj_dataset *ds) {
    hpj_status st;
    hpj_rng r;
    int i, l;
    memset(m, 0, sizeof(*m));
    /* input encoding: one-hot of (label - min), as PyG's TUDataset does */
    if (ds->node_label) {
        if ((st = hpj__onehot_width("node", ds->node_label_min, ds->node_label_max, cfg->node_vocab, &m->node_onehot)))
            return st;
        m->node_label_min = ds->node_label_min;
    }
    if (cfg->node_attr && ds->node_attr) m->node_attr_dim = ds->node_attr_dim;
    m->node_deg = cfg->node_degree ? cfg->node_degree + 1 : 0;
    m->F = m->node_onehot + m->node_deg + m->node_attr_dim;
    if (m->F == 0) m->F = 1; /* no node input: the constant 0 feature of the reference */
    if (ds->edge_label) {
        if ((st = hpj__onehot_width("edge", ds->edge_label_min, ds->edge_label_max, cfg->edge_vocab, &m->edge_onehot))) {
            memset(m, 0, sizeof(*m));
            return st;
        }
        m->edge_label_min = ds->edge_label_min;
    }
    m->Fe = m->edge_onehot ? m->edge_onehot : 1;
    if ((st = hpj__model_shape(m, cfg)) || (st = hpj__model_alloc(m))) { memset(m, 0, sizeof(*m)); return st; }
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
        if (q->Wout) hpj__init_linear(q->Wout, q->bout, m->D, m->D, &r);
        if (q->Wu) {
            hpj__init_linear(q->Wu, NULL, m->D, m->D, &r);
            hpj__fill(q->bnu_g, (size_t)m->D, 1.0f);
        }
        for (l = 0; l < cfg->L; ++l) {
            hpj__fill(m->bn[l].bn1_v[i], (size_t)m->D, 1.0f);
            hpj__fill(m->bn[l].bn2_v[i], (size_t)m->D, 1.0f);
            hpj__fill(m->bn[l].bnu_v[i], (size_t)m->D, 1.0f);
        }
    }
    hpj__init_linear(m->p.sq_W, NULL, m->D, m->R, &r);
    hpj__fill(m->p.sq_g, (size_t)m->D, 1.0f);
    for (l = 0; l < cfg->L; ++l) hpj__fill(m->bn[l].sq_v, (size_t)m->D, 1.0f);
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
    int32_t *rev;     /* (E) index of the reverse entry (only if filled with rev) */
    int32_t *edge;    /* (E) dataset CSR entry (for edge features)     */
    int32_t *grp;     /* (C) group of each copy                        */
    int32_t *gptr;    /* (NG+1)                                        */
    int32_t *gidx;    /* (C) copies of each group                      */
} hpj__path;

/* Whether a forward pass needs the copy groups: copy averaging comes with
   patch mixing, between GINE layers, and only when a token is defined by
   more than its own patch (patch_tokens = present or graph); with alone,
   each patch is encoded by itself and a node's copies never meet. */
static int hpj__path_groups(const hpj_model *m) {
    return m->cfg.patch_mixing && m->cfg.gnn_layers > 1 && m->cfg.patch_tokens != HPJ_TOKENS_ALONE;
}

/* Scratch of the path builders: a stamp per thread, of the largest
   graph's size (-1 between uses), so items go in parallel. */
typedef struct hpj__pscr {
    int32_t *buf;  /* (nthr, maxn) */
    int32_t maxn;
    int nthr;      /* omp_get_max_threads() when made; regions use at most this */
} hpj__pscr;

static hpj_status hpj__pscr_init(hpj__pscr *ps, const hpj_dataset *ds) {
    size_t i, n;
    ps->maxn = HPJ__MAX(1, hpj__max_nodes(ds));
    ps->nthr = 1;
#ifdef _OPENMP
    ps->nthr = omp_get_max_threads();
#endif
    n = (size_t)ps->nthr * (size_t)ps->maxn;
    ps->buf = (int32_t *)hpj__alloc(sizeof(int32_t) * n, "pretrain");
    if (!ps->buf) return HPJ_ERR_NOMEM;
    for (i = 0; i < n; ++i) ps->buf[i] = -1;
    return HPJ_OK;
}

/* The team of the path builders' loops: no more threads than the scratch
   has stamps, nor than the current team size (the program may lower it). */
#ifdef _OPENMP
static int hpj__pscr_team(const hpj__pscr *ps) { return HPJ__MIN(ps->nthr, omp_get_max_threads()); }
#endif

/* The stamp of the calling thread of a builders' loop. */
static int32_t *hpj__pscr_mine(const hpj__pscr *ps) {
#ifdef _OPENMP
    return ps->buf + (size_t)omp_get_thread_num() * (size_t)ps->maxn;
#else
    return ps->buf;
#endif
}

/* Whether item s opens a run (the items of one graph are contiguous). */
static int hpj__run_start(const hpj__item *it, int32_t s) { return s == 0 || it[s].g != it[s - 1].g; }

/* Groups of the run of items s0.. (one graph's items): the first copy of
   a node, in item order, opens the next group, numbered from g0; grp (if
   not NULL) gets each copy's group at seg[s] + j. stamp: the thread's
   (-1, left so). Returns the count. */
static int32_t hpj__run_groups(const hpj_tokens *tk, const hpj__item *it, int32_t S, int32_t s0, int32_t *stamp,
                               const int32_t *seg, int32_t *grp, int32_t g0) {
    int32_t s, j, n = 0;
    for (s = s0; s < S && it[s].g == it[s0].g; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]);
        for (j = 0; j < m; ++j) {
            if (stamp[nodes[j]] < 0) stamp[nodes[j]] = g0 + n++;
            if (grp) grp[seg[s] + j] = stamp[nodes[j]];
        }
    }
    for (s = s0; s < S && it[s].g == it[s0].g; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t m = (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]);
        for (j = 0; j < m; ++j) stamp[nodes[j]] = -1;
    }
    return n;
}

/* Writes the induced edges of an item's patch (nodes ascending) in CSR
   order, as copies c0.. from entry e0 on: rowptr[c0 + j] copy j's first
   entry, col the other end's copy, edge the dataset CSR entry. stamp: the
   thread's; it holds each patch node's copy while the patch is marked. */
static void hpj__item_edges(const hpj_dataset *ds, const hpj_tokens *tk, const hpj__item *it, int32_t *stamp,
                            int32_t c0, int32_t e0, int32_t *rowptr, int32_t *col, int32_t *edge) {
    const int32_t *nodes = tk->nodes + tk->ptr[it->patch];
    int32_t m = (int32_t)(tk->ptr[it->patch + 1] - tk->ptr[it->patch]), j, e = e0;
    hpj_graph gr = hpj_dataset_graph(ds, it->g);
    int32_t eb = (int32_t)ds->edge_ptr[it->g];
    for (j = 0; j < m; ++j) stamp[nodes[j]] = c0 + j;
    for (j = 0; j < m; ++j) {
        int32_t u = nodes[j], i;
        rowptr[c0 + j] = e;
        for (i = gr.rowptr[u]; i < gr.rowptr[u + 1]; ++i) {
            int32_t c = stamp[gr.col[i]];
            if (c < 0) continue;
            col[e] = c;
            edge[e] = eb + i;
            ++e;
        }
    }
    for (j = 0; j < m; ++j) stamp[nodes[j]] = -1;
}

/* Counts copies, induced edges (the tokenizer counted each patch's) and
   (when groups) copy groups of the items, in parallel over the items. */
static void hpj__path_count(const hpj_tokens *tk, const hpj__item *it, int32_t S, const hpj__pscr *ps, int groups,
                            int64_t *C, int64_t *E, int64_t *NG) {
    int32_t s;
    int64_t c = 0, e = 0, ng = 0;
    HPJ__OMP(parallel for schedule(dynamic, 16) reduction(+ : c, e, ng) num_threads(hpj__pscr_team(ps)) if (S >= 64))
    for (s = 0; s < S; ++s) {
        c += tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch];
        e += tk->nedge[it[s].patch];
        if (groups && hpj__run_start(it, s)) ng += hpj__run_groups(tk, it, S, s, hpj__pscr_mine(ps), NULL, NULL, 0);
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

/* Fills a path bound with hpj__path_count's numbers (groups only when
   NG > 0), in parallel over the items: the same result as one pass in item
   order. The reverse entries only when rev is set: only the backward of a
   GINE with per-edge inputs reads them (a binary search per entry, work
   for nothing otherwise). */
static void hpj__path_fill(const hpj_dataset *ds, const hpj_tokens *tk, const hpj__item *it, hpj__path *p,
                           const hpj__pscr *ps, int rev) {
    int32_t s, c = 0, e = 0, ng = 0, S = p->S;
    for (s = 0; s < S; ++s) { /* copy offsets; each item's first entry parked in rowptr */
        p->seg[s] = c;
        p->rowptr[c] = e;
        c += (int32_t)(tk->ptr[it[s].patch + 1] - tk->ptr[it[s].patch]);
        e += tk->nedge[it[s].patch];
    }
    p->seg[S] = c;
    p->rowptr[c] = e;
    HPJ_ASSERT(c == p->C && e == p->E);
    HPJ__OMP(parallel for schedule(dynamic, 16) num_threads(hpj__pscr_team(ps)) if (S >= 64))
    for (s = 0; s < S; ++s) {
        const int32_t *nodes = tk->nodes + tk->ptr[it[s].patch];
        int32_t j, c0 = p->seg[s], nb = (int32_t)ds->node_ptr[it[s].g];
        for (j = c0; j < p->seg[s + 1]; ++j) p->node[j] = nb + nodes[j - c0];
        hpj__item_edges(ds, tk, it + s, hpj__pscr_mine(ps), c0, p->rowptr[c0], p->rowptr, p->col, p->edge);
    }
    /* reverse entries: row col[k] holds the copy of row k's owner; columns
       ascend within a row, so binary search */
    if (rev) {
        HPJ__OMP(parallel for schedule(static))
        for (c = 0; c < p->C; ++c) {
            int32_t kk;
            for (kk = p->rowptr[c]; kk < p->rowptr[c + 1]; ++kk)
                p->rev[kk] = hpj__csr_find(p->rowptr, p->col, p->col[kk], c);
        }
    }
    if (p->NG == 0) return;
    /* groups: each run's numbered on from the last run's (ps->buf: the
       first stamp, as no loop runs here), then gptr / gidx by a counting
       sort of the copies by group (ascending within a group) */
    for (s = 0; s < S; ++s)
        if (hpj__run_start(it, s)) ng += hpj__run_groups(tk, it, S, s, ps->buf, p->seg, p->grp, ng);
    HPJ_ASSERT(ng == p->NG);
    for (s = 0; s <= ng; ++s) p->gptr[s] = 0;
    for (c = 0; c < p->C; ++c) p->gptr[p->grp[c] + 1]++; /* sizes */
    for (s = 0; s < ng; ++s) p->gptr[s + 1] += p->gptr[s]; /* first positions */
    for (c = 0; c < p->C; ++c) p->gidx[p->gptr[p->grp[c]]++] = c;
    for (s = ng; s > 0; --s) p->gptr[s] = p->gptr[s - 1]; /* ends -> starts */
    p->gptr[0] = 0;
}

/* Degree of dataset node u in its graph (for node_degree). */
static int32_t hpj__node_degree(const hpj_dataset *ds, int64_t u) {
    int32_t lo = 0, hi = ds->num_graphs - 1;
    while (lo < hi) { /* the graph g with node_ptr[g] <= u < node_ptr[g + 1] */
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (ds->node_ptr[mid] <= u) lo = mid;
        else hi = mid - 1;
    }
    {
        const int32_t *rp = ds->rowptr + ds->node_ptr[lo] + lo; /* graph lo's local CSR offsets */
        int64_t i = u - ds->node_ptr[lo];
        return rp[i + 1] - rp[i];
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

/* frozen: batch stats, no running update */
enum { HPJ__EVAL = 0, HPJ__TRAIN = 1, HPJ__TRAIN_FROZEN = 2 };

/* What a patch token is. The paper defines z_i = g_eta(G[P~_i]): the patch
   encoder run on patch i's induced subgraph alone (patch_tokens = alone).
   Every forward pass here runs many patches at once, as one graph of node
   copies with no edges between patches, so with alone a patch's token
   depends on its patch only (up to the BatchNorms' batch statistics in
   training, which every row shares): the context path, the target path
   and the embedding pass compute one function. With patch_tokens =
   present or graph, the layers after the first also average each node's
   copies over the patches of its graph in the same pass (copy groups),
   which makes a token depend on which patches share the call: with graph
   every pass holds all k patches of each of its graphs (the step's context
   path does, and the target tokens come from it), so the three passes
   again compute one function; with present they do not. */
typedef struct hpj__gnn_layer {
    float *hin;                 /* (C, D) layer input (previous output)        */
    float *pm, *ul, *ua;        /* (S, D) patch mean, Wu pm, ReLU(BN(Wu pm))   */
    float *um, *ur;             /* (D) BNu batch mean / rstd                    */
    float *hm;                  /* (C, D) hin + ua broadcast                   */
    float *h;                   /* (C, D) what GINE and the residual see:
                                   copy_avg(hm) with copy groups, else hm      */
    float *agg, *t1, *r1;       /* (C, D) r1 = ReLU(BN1(t1))                    */
    float *t2, *ra2, *r2;       /* (C, D) ra2 = ReLU(BN2(t2)), r2 = dropout(ra2) */
    float *sum, *out;           /* (C, D)                                       */
    float *b1m, *b1r, *b2m, *b2r; /* (D)                                        */
    uint8_t *mask;              /* (C, D) dropout mask or NULL                  */
} hpj__gnn_layer;

#ifndef HPJ_REFERENCE
/* The fast encoder's scratch: the input table and the classes of equal
   node copies (see "fast: the input table" in the fast part). */
typedef struct hpj__enc_cls {
    int32_t ncls;               /* classes U, 0 = the layer runs per copy        */
    int32_t *cls, *crep, *ccnt; /* (C) class of each copy (classes in order of
                                   their first copy, so cls[c] <= c), a class's
                                   first copy, its number of copies; NULL where
                                   the layer never has classes                  */
} hpj__enc_cls;
typedef struct hpj__enc_fast {
    int on;        /* 1: the fast encoder runs on this path                 */
    int nt, ne;    /* node input types, edge types (hpj__table_dims)        */
    int32_t *ty;   /* (C) input type of each copy                          */
    int32_t *ky;   /* (E) table row of the message along each CSR entry    */
    float *htab;   /* (nt, D) node encoder output of each type             */
    float *etab;   /* (ne, D) edge encoder output of each edge type        */
    float *atab;   /* (nA, D) the distinct rows of agg's terms             */
    float *ttab;   /* (nA, D) atab W1^T                                     */
    int32_t *csky; /* (E) each row's keys ky, sorted within the row         */
    int32_t *lsky; /* (E) keys of the later layers' classes, sorted per row */
    int32_t *chash, chcap; /* open-addressing table of classes, chcap slots */
    hpj__enc_cls lay[HPJ_MAX_GNN]; /* each layer's classes (0: the first's)  */
    /* the backward's sums (not on a forward-only path): */
    double *tacc, *hacc, *eacc;    /* (nA, D), (nt, D), (ne, D)             */
    double *depc;                  /* (D) deps per column                   */
    float *dtab, *datab;           /* (nA, D) dT, dA                        */
} hpj__enc_fast;
#endif

typedef struct hpj__gnn_ws {
    hpj__path path;
    float *x;    /* (C, F) node inputs (NULL where the fast input table runs) */
    float *ex;   /* (E, Fe) edge inputs; unused with unlabelled edges       */
    float *h0;   /* (C, D) node encoder output */
    float *e;    /* (E, D) edge encoder output; (D) with unlabelled edges */
    hpj__gnn_layer lay[HPJ_MAX_GNN];
    float *z;    /* (S, D) patch tokens */
    int fwd_only; /* no backward follows */
    hpj__dp *dp;  /* data-parallel BatchNorm (NULL: one process) */
    int64_t row0; /* data-parallel: this rank's first copy in the whole batch (dropout draws by it) */
#ifndef HPJ_REFERENCE
    hpj__enc_fast fast; /* the fast encoder's scratch (fast.on = 0: the reference runs) */
#endif
} hpj__gnn_ws;

#ifndef HPJ_REFERENCE
static void hpj__fast_enc_features(const hpj_model *m, const hpj_dataset *ds, hpj__gnn_ws *w);
#endif
/* Input features of the copies (one-hot node labels, capped degrees,
   attributes) and of the induced edges (one-hot edge labels); constant 0
   where the data has none. */
static void hpj__path_features(const hpj_model *m, const hpj_dataset *ds, hpj__gnn_ws *w) {
    const hpj__path *p = &w->path;
    float *x = w->x, *ex = w->ex;
    int32_t c, k;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && w->fast.on) { hpj__fast_enc_features(m, ds, w); return; } /* fast: input types (the fast encoder) */
#endif
    HPJ__OMP(parallel for schedule(static))
    for (c = 0; c < p->C; ++c) {
        float *row = x + (size_t)c * m->F;
        int32_t j, u = p->node[c];
        for (j = 0; j < m->F; ++j) row[j] = 0.0f;
        if (m->node_onehot) {
            int32_t v = ds->node_label[u] - m->node_label_min;
            if (v >= 0 && v < m->node_onehot) row[v] = 1.0f;
        }
        if (m->node_deg) row[m->node_onehot + HPJ__MIN(hpj__node_degree(ds, u), m->node_deg - 1)] = 1.0f;
        for (j = 0; j < m->node_attr_dim; ++j)
            row[m->node_onehot + m->node_deg + j] = ds->node_attr[(size_t)u * ds->node_attr_dim + j];
    }
    if (!m->edge_onehot) return; /* unlabelled edges: no per-edge input */
    HPJ__OMP(parallel for schedule(static))
    for (k = 0; k < p->E; ++k) {
        float *row = ex + (size_t)k * m->Fe;
        int32_t j, v = ds->edge_label[p->edge[k]] - m->edge_label_min;
        for (j = 0; j < m->Fe; ++j) row[j] = 0.0f;
        if (v >= 0 && v < m->edge_onehot) row[v] = 1.0f;
    }
}

#ifndef HPJ_REFERENCE
static void hpj__fast_enc_bind(hpj_arena *a, const hpj_model *m, hpj__gnn_ws *w);
#endif
/* Binds the patch encoder's buffers for a path of S patches, C node copies,
   E edges and NG copy groups. mode: HPJ__TRAIN allocates the dropout
   masks. fwd_only: no backward will run (the target path, embeddings), so
   the layers share up to five rotating (C, D) buffers instead of keeping
   every intermediate: per layer, from the ones that are not its input hin,
   X = hm -> agg -> r1 -> ra2, Y = t1 -> t2 (-> r2 with dropout) -> out,
   Z = sum, H = h (patch mixing; without copy groups hm = h = H); the
   next layer's input is out (Y, or Z without the output linear). The first
   layer's input is h0, outside the pool, so one layer needs 3 buffers (4
   with mixing), more layers 4 (5). */
static void hpj__gnn_bind(hpj_arena *a, const hpj_model *m, hpj__gnn_ws *w, int32_t S, int32_t C, int32_t E,
                          int32_t NG, int mode, int fwd_only) {
    int i, k, D = m->D, npool = 3 + (m->cfg.patch_mixing && m->cfg.gnn_layers > 1) + (m->cfg.gnn_layers > 1);
    int groups = hpj__path_groups(m);
    size_t CD = (size_t)C * D, SD = (size_t)S * D;
    float *pool[5] = {NULL, NULL, NULL, NULL, NULL};
    memset(w, 0, sizeof(*w));
    w->fwd_only = fwd_only;
    hpj__path_bind(a, &w->path, S, C, E, NG);
    w->e = hpj_arena_floats(a, m->edge_onehot ? (size_t)E * D + 1 : (size_t)D);
    w->h0 = hpj_arena_floats(a, CD + 1);
    if (fwd_only)
        for (k = 0; k < npool; ++k) pool[k] = hpj_arena_floats(a, CD + 1);
    for (i = 0; i < m->cfg.gnn_layers; ++i) {
        hpj__gnn_layer *L = &w->lay[i];
        int mixing = i > 0 && m->cfg.patch_mixing;
        float *f[4] = {NULL, NULL, NULL, NULL}; /* X, Y, Z, H */
        int nf = 0;
        L->hin = i == 0 ? w->h0 : w->lay[i - 1].out;
        if (fwd_only)
            for (k = 0; k < npool && nf < 4; ++k)
                if (pool[k] != L->hin) f[nf++] = pool[k];
        if (mixing) {
            L->pm = hpj_arena_floats(a, SD + 1); L->ul = hpj_arena_floats(a, SD + 1);
            L->ua = hpj_arena_floats(a, SD + 1);
            L->um = hpj_arena_floats(a, (size_t)D); L->ur = hpj_arena_floats(a, (size_t)D);
            L->h = fwd_only ? f[3] : hpj_arena_floats(a, CD + 1);
        } else {
            L->h = L->hin;
        }
        if (fwd_only) {
            L->agg = L->r1 = L->ra2 = f[0];
            L->t1 = L->t2 = f[1];
            L->sum = f[2];
        } else {
            L->agg = hpj_arena_floats(a, CD + 1);
            L->t1 = hpj_arena_floats(a, CD + 1);
            L->r1 = hpj_arena_floats(a, CD + 1);
            L->t2 = hpj_arena_floats(a, CD + 1);
            L->ra2 = hpj_arena_floats(a, CD + 1);
            L->sum = hpj_arena_floats(a, CD + 1);
        }
        /* with copy groups hm is dead once h = copy_avg(hm) exists, before
           agg is written; without, hm is h itself */
        if (mixing) L->hm = groups ? L->agg : L->h;
        if (mode != HPJ__EVAL && m->cfg.dropout > 0.0f) {
            L->r2 = fwd_only ? f[1] : hpj_arena_floats(a, CD + 1);
            L->mask = (uint8_t *)hpj_arena_alloc(a, CD + 1);
        } else {
            L->r2 = L->ra2;
        }
        L->out = !m->cfg.gnn_out_linear      ? L->sum
                 : i + 1 == m->cfg.gnn_layers ? hpj_arena_floats(a, SD + 1) /* the patch means (hpj__gnn_means) */
                 : fwd_only                   ? f[1]
                                              : hpj_arena_floats(a, CD + 1);
        L->b1m = hpj_arena_floats(a, (size_t)D); L->b1r = hpj_arena_floats(a, (size_t)D);
        L->b2m = hpj_arena_floats(a, (size_t)D); L->b2r = hpj_arena_floats(a, (size_t)D);
    }
    w->z = hpj_arena_floats(a, SD + 1);
#ifndef HPJ_REFERENCE
    if (hpj__fast()) hpj__fast_enc_bind(a, m, w); /* fast: the input table and copy classes, where they apply */
    if (w->fast.on) return;                       /* (its input types replace x and ex) */
#endif
    w->x = hpj_arena_floats(a, (size_t)C * m->F + 1);
    w->ex = m->edge_onehot ? hpj_arena_floats(a, (size_t)E * m->Fe + 1) : NULL;
}

/* The momentum of the running statistics a training-mode BatchNorm updates. */
#define HPJ__BN_MOMENTUM 0.1f

/* The normaliser of g_eta's and e_xi's BatchNorms, each followed by a
   ReLU (fused): out = ReLU(BN(in)), and with sum != NULL also sum = res +
   out (the residual, fused; then out may be NULL). rm, rv: the running
   statistics of the path's resolution. The caller picks it: training
   normalises by the batch's statistics and moves the running ones
   towards them (hpj__norm_batch); hpj_model_loss uses the batch's and
   leaves the running ones (hpj__norm_frozen); the readout normalises by
   the running statistics (hpj__norm_running, with the readout). */
typedef void (*hpj__norm_fn)(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                             float *rm, float *rv, int N, int D, const float *res, float *sum, hpj__dp *dp);
static void hpj__norm_batch(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                            float *rm, float *rv, int N, int D, const float *res, float *sum, hpj__dp *dp) {
    hpj__bn_train(out, mean, rstd, rm, rv, in, g, b, N, D, HPJ__BN_MOMENTUM, 1e-5f, 1, res, sum, dp);
}
static void hpj__norm_frozen(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                             float *rm, float *rv, int N, int D, const float *res, float *sum, hpj__dp *dp) {
    (void)rm;
    (void)rv;
    hpj__bn_train(out, mean, rstd, NULL, NULL, in, g, b, N, D, HPJ__BN_MOMENTUM, 1e-5f, 1, res, sum, dp);
}

/* Layer i of g_eta over the node copies (reference block):
       h   = copy_avg(hin + ReLU(BNu(Wu mean_patch(hin))))  (layers > 0 with
                                                             patch mixing; else hin;
                                                             copy_avg only with
                                                             copy groups)
       agg = (1 + eps) h_i + sum over the in-patch neighbours j of ReLU(h_j + e_ji)
       sum = h + dropout(ReLU(BN2(W2 ReLU(BN1(W1 agg)))))
       out = sum Wout^T + bout  (not on the last layer: see hpj__gnn_means)
   The BatchNorms are norm's, with the running statistics bn (the
   resolution's set). */
static void hpj__gnn_layer_forward(hpj_model *m, hpj__gnn_ws *w, hpj_bn_stats *bn, int i, hpj__norm_fn norm,
                                   uint64_t drop_seed) {
    const hpj__path *p = &w->path;
    hpj__gnn_layer *L = &w->lay[i];
    const hpj_gnn_params *q = &m->p.gnn[i];
    int D = m->D, C = p->C, S = p->S;
    size_t CD = (size_t)C * D;
    if (L->hm) { /* patch mixing, then copy averaging (layers > 0; with copy groups) */
        int32_t c;
        hpj_segment_mean_forward(L->pm, L->hin, p->seg, S, D);
        hpj_linear_forward(L->ul, L->pm, q->Wu, NULL, S, D, D);
        norm(L->ua, L->um, L->ur, L->ul, q->bnu_g, q->bnu_b, bn->bnu_m[i], bn->bnu_v[i], S, D, NULL, NULL, w->dp);
        HPJ__OMP(parallel for schedule(static))
        for (c = 0; c < S; ++c) {
            int32_t j, d;
            const float *u = L->ua + (size_t)c * D;
            for (j = p->seg[c]; j < p->seg[c + 1]; ++j) {
                const float *hi = L->hin + (size_t)j * D;
                float *ho = L->hm + (size_t)j * D;
                HPJ__OMP(simd)
                for (d = 0; d < D; ++d) ho[d] = hi[d] + u[d];
            }
        }
        if (L->h != L->hm) hpj__copy_avg(L->h, L->hm, p, D);
    }
    if (m->edge_onehot) hpj_gine_forward(L->agg, L->h, w->e, p->rowptr, p->col, C, D, q->eps[0]);
    else hpj_gine_forward_shared(L->agg, L->h, w->e, p->rowptr, p->col, C, D, q->eps[0]);
    hpj_linear_forward(L->t1, L->agg, q->W1, NULL, C, D, D);
    norm(L->r1, L->b1m, L->b1r, L->t1, q->bn1_g, q->bn1_b, bn->bn1_m[i], bn->bn1_v[i], C, D, NULL, NULL, w->dp);
    hpj_linear_forward(L->t2, L->r1, q->W2, NULL, C, D, D);
    /* ra2 = ReLU(BN2(t2)); sum = h + r2 with r2 = dropout(ra2) (= ra2
       without dropout: then the BatchNorm pass also forms the sum; a
       forward-only path without dropout never reads ra2, so does not
       write it) */
    norm(w->fwd_only && !L->mask ? NULL : L->ra2, L->b2m, L->b2r, L->t2, q->bn2_g, q->bn2_b, bn->bn2_m[i],
         bn->bn2_v[i], C, D, L->h, L->mask ? NULL : L->sum, w->dp);
    if (L->mask) {
        size_t t;
        hpj__dropout_at(L->r2, L->mask, L->ra2, CD, m->cfg.dropout, drop_seed, (uint64_t)m->step, 100 + i,
                        (uint64_t)w->row0 * D);
        HPJ__OMP(parallel for simd schedule(static))
        for (t = 0; t < CD; ++t) L->sum[t] = L->h[t] + L->r2[t];
    }
    if (q->Wout && i + 1 < m->cfg.gnn_layers) hpj_linear_forward(L->out, L->sum, q->Wout, q->bout, C, D, D);
}

/* The patch tokens: z = the mean over each patch of the last layer's
   output. With the output linear, out = sum Wout^T + bout is affine, so
   its patch mean equals mean(sum) Wout^T + bout: the product runs on the
   S means instead of the C copies (the same function; the rounding of a
   mean of products and a product of means differ in the last bits, and
   the reference takes the cheaper order). */
static void hpj__gnn_means(hpj_model *m, hpj__gnn_ws *w) {
    const hpj__path *p = &w->path;
    int i = m->cfg.gnn_layers - 1;
    const hpj__gnn_layer *L = &w->lay[i];
    const hpj_gnn_params *q = &m->p.gnn[i];
    hpj_segment_mean_forward(q->Wout ? L->out : w->z, L->sum, p->seg, p->S, m->D);
    if (q->Wout) hpj_linear_forward(w->z, L->out, q->Wout, q->bout, p->S, m->D, m->D);
}

#ifndef HPJ_REFERENCE
static void hpj__fast_gnn_forward(hpj_model *m, hpj__gnn_ws *w, hpj_bn_stats *bn, hpj__norm_fn norm,
                                  uint64_t drop_seed);
#endif
/* Forward of the patch encoder over a filled path: the input encoders,
   the GINE layers, the patch means; w->z gets the tokens. bn: the running
   statistics of the path's resolution, norm the BatchNorms' normaliser. */
static void hpj__gnn_forward(hpj_model *m, hpj__gnn_ws *w, hpj_bn_stats *bn, hpj__norm_fn norm, uint64_t drop_seed) {
    const hpj__path *p = &w->path;
    int i, D = m->D;
#ifndef HPJ_REFERENCE
    if (hpj__fast() && w->fast.on) { hpj__fast_gnn_forward(m, w, bn, norm, drop_seed); return; } /* fast: input table, copy classes */
#endif
    /* h0 = x node_W^T + node_b; e = ex edge_W^T + edge_b */
    hpj_linear_forward(w->h0, w->x, m->p.node_W, m->p.node_b, p->C, m->F, D);
    if (m->edge_onehot) hpj_linear_forward(w->e, w->ex, m->p.edge_W, m->p.edge_b, p->E, m->Fe, D);
    else memcpy(w->e, m->p.edge_b, sizeof(float) * (size_t)D); /* every edge: 0 W + b */
    for (i = 0; i < m->cfg.gnn_layers; ++i) hpj__gnn_layer_forward(m, w, bn, i, norm, drop_seed);
    hpj__gnn_means(m, w);
}

/* Scratch for the patch encoder's backward: four (C, D) buffers whose
   roles rotate from layer to layer (see hpj__gnn_layer_backward), so no
   gradient is ever copied. */
typedef struct hpj__gnn_bws {
    float *buf[4];                    /* (C, D) */
    float *sA, *sB;                   /* (S, D) */
    float *de;                        /* (E, D); (D) with unlabelled edges */
} hpj__gnn_bws;

static void hpj__gnn_bind_back(hpj_arena *a, const hpj_model *m, hpj__gnn_bws *b, int32_t S, int32_t C, int32_t E) {
    size_t CD = (size_t)C * m->D + 1, SD = (size_t)S * m->D + 1, D = (size_t)m->D;
    int i;
    memset(b, 0, sizeof(*b));
    for (i = 0; i < 4; ++i) b->buf[i] = hpj_arena_floats(a, CD);
    b->sA = hpj_arena_floats(a, SD); b->sB = hpj_arena_floats(a, SD);
    b->de = hpj_arena_floats(a, m->edge_onehot ? (size_t)E * D + 1 : D);
}

static void hpj__zero(float *x, size_t n) {
    size_t i;
    HPJ__OMP(parallel for schedule(static))
    for (i = 0; i < n; ++i) x[i] = 0.0f;
}

/* A buffer of the pool that is neither x nor y. */
static float *hpj__gnn_spare(const hpj__gnn_bws *b, const float *x, const float *y) {
    int i;
    for (i = 0; i < 4; ++i)
        if (b->buf[i] != x && b->buf[i] != y) return b->buf[i];
    return NULL; /* unreachable: four buffers, two excluded */
}

/* Backward of hpj__gnn_layer_forward from dout (the gradient at the
   layer's output; a pool buffer), accumulating into m->g and b->de;
   returns the gradient at the layer's input hin. From the pool: dout, dh
   (the gradient at sum = h + r2, then also at h: the GINE backward adds
   into it), t1 and t2 (ping-pong through the BatchNorm, linear and GINE
   backward); the gradient returned is dh (or, with patch mixing and copy
   groups, t2). */
static float *hpj__gnn_layer_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, int i, float *dout) {
    const hpj__path *p = &w->path;
    const hpj__gnn_layer *L = &w->lay[i];
    const hpj_gnn_params *q = &m->p.gnn[i];
    hpj_gnn_params *gq = &m->g.gnn[i];
    int D = m->D, C = p->C, S = p->S;
    size_t CD = (size_t)C * D;
    float *dh, *t1, *t2;
    const float *dra2;
    /* out = sum Wout^T + bout (or out = sum; the last layer's Wout is done) */
    if (q->Wout && i + 1 < m->cfg.gnn_layers) {
        dh = hpj__gnn_spare(b, dout, NULL);
        hpj__linear_back2(dh, 0.0f, gq->Wout, gq->bout, dout, L->sum, q->Wout, C, D, D);
    } else {
        dh = dout;
    }
    t1 = hpj__gnn_spare(b, dh, NULL);
    t2 = hpj__gnn_spare(b, dh, t1);
    /* sum = h + r2: dh = dsum (kept: the GINE backward adds dh += ...), dr2 = dsum */
    dra2 = dh;
    if (L->mask) { /* r2 = dropout(ra2) */
        hpj__zero(t1, CD);
        hpj_dropout_backward(t1, dh, L->mask, CD, m->cfg.dropout);
        dra2 = t1;
    }
    /* ra2 = relu(BN2(t2)), fused */
    hpj__bn_backward(t2, gq->bn2_g, gq->bn2_b, dra2, L->t2, q->bn2_g, L->b2m, L->b2r, C, D, L->ra2, 1, w->dp);
    /* t2 = r1 W2^T */
    hpj__linear_back2(t1, 0.0f, gq->W2, NULL, t2, L->r1, q->W2, C, D, D);
    /* r1 = relu(BN1(t1)), fused */
    hpj__bn_backward(t2, gq->bn1_g, gq->bn1_b, t1, L->t1, q->bn1_g, L->b1m, L->b1r, C, D, L->r1, 1, w->dp);
    /* t1 = agg W1^T */
    hpj__linear_back2(t1, 0.0f, gq->W1, NULL, t2, L->agg, q->W1, C, D, D);
    /* agg = GINE(h, e) */
    if (m->edge_onehot)
        hpj_gine_backward(dh, b->de, gq->eps, t1, L->h, w->e, p->rowptr, p->col, p->rev, C, D, q->eps[0]);
    else
        hpj_gine_backward_shared(dh, b->de, gq->eps, t1, L->h, w->e, p->rowptr, p->col, C, D, q->eps[0]);
    if (L->hm) {
        int32_t s;
        float *dhm = dh; /* h = hm without copy groups */
        /* h = A hm (copy averaging, symmetric): dhm into t2 */
        if (L->h != L->hm) hpj__copy_avg(dhm = t2, dh, p, D);
        /* hm = hin + ua[seg]: dhin = dhm ; dua = segment sums of dhm */
        HPJ__OMP(parallel for schedule(static))
        for (s = 0; s < S; ++s) {
            int32_t j, d;
            float *o = b->sA + (size_t)s * D;
            for (d = 0; d < D; ++d) o[d] = 0.0f;
            for (j = p->seg[s]; j < p->seg[s + 1]; ++j) {
                const float *r = dhm + (size_t)j * D;
                for (d = 0; d < D; ++d) o[d] += r[d];
            }
        }
        /* ua = relu(BNu(ul)), fused */
        hpj__bn_backward(b->sB, gq->bnu_g, gq->bnu_b, b->sA, L->ul, q->bnu_g, L->um, L->ur, S, D, L->ua, 1, w->dp);
        /* ul = pm Wu^T */
        hpj__linear_back2(b->sA, 0.0f, gq->Wu, NULL, b->sB, L->pm, q->Wu, S, D, D);
        hpj_segment_mean_backward(dhm, b->sA, p->seg, S, D); /* pm = segment_mean(hin) */
        return dhm;
    }
    return dh;
}

/* Backward of hpj__gnn_means: dz through the last layer's Wout (on the
   means) into b->sA; returns the gradient at the means. */
static const float *hpj__gnn_means_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dz) {
    int i = m->cfg.gnn_layers - 1, D = m->D, S = w->path.S;
    if (!m->p.gnn[i].Wout) return dz;
    hpj__linear_back2(b->sA, 0.0f, m->g.gnn[i].Wout, m->g.gnn[i].bout, dz, w->lay[i].out, m->p.gnn[i].Wout, S, D, D);
    return b->sA;
}

#ifndef HPJ_REFERENCE
static void hpj__fast_gnn_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dz);
#endif
/* Backward of hpj__gnn_forward (mode TRAIN / TRAIN_FROZEN) from dz (S, D),
   the layers in reverse; accumulates into m->g. */
static void hpj__gnn_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dz) {
    const hpj__path *p = &w->path;
    int i, D = m->D, C = p->C, S = p->S;
    float *dout = b->buf[0];
#ifndef HPJ_REFERENCE
    if (hpj__fast() && w->fast.on) { hpj__fast_gnn_backward(m, w, b, dz); return; } /* fast: input table, copy classes */
#endif
    if (m->edge_onehot) hpj__zero(b->de, (size_t)p->E * D);
    else memset(b->de, 0, sizeof(float) * (size_t)D);
    /* z = segment_mean(out_last) (Wout on the means) */
    dz = hpj__gnn_means_backward(m, w, b, dz);
    hpj__zero(dout, (size_t)C * D);
    hpj_segment_mean_backward(dout, dz, p->seg, S, D);
    for (i = m->cfg.gnn_layers - 1; i >= 0; --i) dout = hpj__gnn_layer_backward(m, w, b, i, dout);
    /* h0 = x node_W^T + node_b ; e = ex edge_W^T + edge_b */
    hpj_linear_backward(NULL, m->g.node_W, m->g.node_b, dout, w->x, m->p.node_W, C, m->F, D);
    if (m->edge_onehot) {
        hpj_linear_backward(NULL, m->g.edge_W, m->g.edge_b, b->de, w->ex, m->p.edge_W, p->E, m->Fe, D);
    } else { /* the input is 0: edge_W gets nothing, edge_b the summed messages */
        int j;
        for (j = 0; j < D; ++j) m->g.edge_b[j] += b->de[j];
    }
}

/* ==== model: structural-query encoder e_xi ================================ */

typedef struct hpj__sq_ws {
    float *rw;       /* (S, R) reduced RWSE of the patches */
    float *lin;      /* (S, D) */
    float *mean, *rstd; /* (D) */
    float *p;        /* (S, D) structural queries */
    hpj__dp *dp;     /* data-parallel BatchNorm (NULL: one process) */
} hpj__sq_ws;

static void hpj__sq_bind(hpj_arena *a, const hpj_model *m, hpj__sq_ws *w, int32_t S) {
    size_t SD = (size_t)S * m->D + 1;
    w->rw = hpj_arena_floats(a, (size_t)S * m->R + 1);
    w->lin = hpj_arena_floats(a, SD);
    w->mean = hpj_arena_floats(a, (size_t)m->D);
    w->rstd = hpj_arena_floats(a, (size_t)m->D);
    w->p = hpj_arena_floats(a, SD);
    w->dp = NULL;
}

/* p = ReLU(BN(rw W^T)) over the S patches of items (reference: Linear
   without bias, BatchNorm, ReLU); bn: the resolution's running statistics,
   norm the BatchNorm's normaliser. */
static void hpj__sq_forward(hpj_model *m, hpj__sq_ws *w, hpj_bn_stats *bn, const hpj_tokens *tk, const hpj__item *it,
                            int32_t S, hpj__norm_fn norm) {
    int32_t s;
    for (s = 0; s < S; ++s) memcpy(w->rw + (size_t)s * m->R, tk->rw + (size_t)it[s].patch * m->R, sizeof(float) * (size_t)m->R);
    hpj_linear_forward(w->lin, w->rw, m->p.sq_W, NULL, S, m->R, m->D);
    norm(w->p, w->mean, w->rstd, w->lin, m->p.sq_g, m->p.sq_b, bn->sq_m, bn->sq_v, S, m->D, NULL, NULL, w->dp);
}

static void hpj__sq_backward(hpj_model *m, const hpj__sq_ws *w, int32_t S, const float *dp, float *s1) {
    hpj__bn_backward(s1, m->g.sq_g, m->g.sq_b, dp, w->lin, m->p.sq_g, w->mean, w->rstd, S, m->D, w->p, 1, w->dp);
    hpj_linear_backward(NULL, m->g.sq_W, NULL, s1, w->rw, m->p.sq_W, S, m->R, m->D);
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
    if (train) {
        for (i = 0; i <= nb; ++i) w->x[i] = hpj_arena_floats(a, BTD);
    } else { /* no backward: the input x[0], then the blocks write t1, t2,
                t1, ... in turn (the output x[nb] is one of the two) */
        float *t1 = nb > 0 ? hpj_arena_floats(a, BTD) : NULL, *t2 = nb > 1 ? hpj_arena_floats(a, BTD) : NULL;
        w->x[0] = hpj_arena_floats(a, BTD);
        for (i = 1; i <= nb; ++i) w->x[i] = (i & 1) ? t1 : t2;
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

static void hpj__enc_forward(hpj_model *m, hpj__enc_ws *w, const hpj_block_params *blk, const uint8_t *mask,
                             const float *adj) {
    int i;
    for (i = 0; i < w->nblocks; ++i)
        hpj_block_forward(w->x[i + 1], &w->cache[i], w->x[i], &blk[i], mask, adj, w->B, w->T, m->D, m->H, m->Fh,
                          m->cfg.ffn_act);
}

/* Training reads the EMA encoder's output u only through m(u), the mean
   of each token's D channels (the targets Phi): mu (B*T) gets it, summed
   in double. */
static void hpj__enc_forward_mean(hpj_model *m, hpj__enc_ws *w, const hpj_block_params *blk, const uint8_t *mask,
                                  const float *adj, double *mu) {
    int t, D = m->D, N = w->B * w->T;
    const float *u;
    hpj__enc_forward(m, w, blk, mask, adj);
    u = w->x[w->nblocks];
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (t = 0; t < N; ++t) {
        double sx = 0.0;
        int c;
        for (c = 0; c < D; ++c) sx += u[(size_t)t * D + c];
        mu[t] = sx / D;
    }
}

/* The online encoder's backward, block by block in reverse: dx (B*T, D)
   gets the gradient of its input from dy, the gradient of its output; the
   blocks' parameter gradients are accumulated. */
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
}

/* ==== model: predictor q_psi =============================================== */

typedef struct hpj__pred_ws {
    int N;
    float *a[HPJ_MAX_PRED + 1]; /* (N, D) input of each layer; a[P] = (N, 2) output */
    float *r[HPJ_MAX_PRED];     /* (N, D) ReLU outputs (before dropout)              */
    uint8_t *mask[HPJ_MAX_PRED];
    float *dA, *dB, *dC;        /* (N, D)                                          */
    int64_t row0;               /* data-parallel: this rank's first row in the whole batch */
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
        hpj_linear_forward(i == P - 1 ? w->a[P] : w->r[i], w->a[i], m->p.pred_W[i], m->p.pred_b[i], w->N, D, out);
        if (i < P - 1) {
            hpj_relu_forward(w->r[i], w->r[i], ND);
            if (w->mask[i]) hpj__dropout_at(w->a[i + 1], w->mask[i], w->r[i], ND, m->cfg.dropout, drop_seed, (uint64_t)m->step, 200 + i, (uint64_t)w->row0 * D);
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
        hpj_linear_backward(dinp, m->g.pred_W[i], m->g.pred_b[i], dlin, w->a[i], m->p.pred_W[i], w->N, D, out);
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
    hpj__pscr ps;            /* the path builders' scratch */
    hpj__item *ctx, *tgt;    /* (batch), (batch * max M)    */
    int32_t *tptr;           /* (batch + 1) targets of each context */
    hpj__item *whole;        /* patch_tokens = graph (else NULL): (batch * max K)
                                every patch of each graph with a context */
    int32_t *crow, *trow;    /* patch_tokens = graph: (batch), (batch * max M)
                                the rows of the contexts and targets in whole */
    int32_t *perm;           /* (max K) hpj__sample's regions of a graph */
    int l;                   /* the resolution of ctx and tgt (hpj__sample): its
                                BatchNorm running statistics are m->bn[l] */
    uint64_t sample_seed;
    int64_t epoch;
    int64_t total_steps, warmup_steps;
    int mode;                /* HPJ__TRAIN or HPJ__TRAIN_FROZEN */
    int apply;               /* 1: optimizer + EMA */
    hpj__dp *dp;             /* data-parallel (hpj_model_set_comm); NULL: one process */
    int64_t row0[3];         /* data-parallel: this rank's first context, target and
                                context copy in the whole batch (0 alone) */
#ifndef HPJ_REFERENCE
    double side_share[HPJ_MAX_RES]; /* fast: the EMA encoder's share on the target path's
                                       thread when the paths run side by side, by resolution
                                       (0: not yet measured) */
#endif
} hpj__trainer;

/* Samples the context and targets of the eligible graphs (k_l >= 2) of a
   batch: one context uniformly, min(M_l, k-1) targets without replacement
   from the other regions; one stream per (seed, epoch, graph, resolution).
   Returns B, the number of contexts. */
static int32_t hpj__sample(hpj__trainer *tr, const int32_t *batch, int32_t nb, int l, int32_t *ntgt) {
    const hpj_tokens *tk = &tr->tk;
    int32_t b, B = 0, T = 0, *pm = tr->perm;
    tr->l = l;
    tr->tptr[0] = 0;
    for (b = 0; b < nb; ++b) {
        int32_t g = batch[b], k = tk->k[(size_t)g * tk->L + l], Mg, c, j;
        int64_t p0 = tk->patch0[(size_t)g * tk->L + l];
        hpj_rng r;
        if (k < 2) continue;
        r = hpj_rng_stream(tr->sample_seed, (uint64_t)tr->epoch, (uint64_t)g * HPJ_MAX_RES + (uint64_t)l);
        Mg = HPJ__MIN(tr->m->cfg.M[l], k - 1);
        c = (int32_t)hpj_rng_below(&r, (uint32_t)k);
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
        tr->tptr[++B] = T;
    }
    *ntgt = T;
    return B;
}

/* patch_tokens = graph: the list of every patch of each graph that has a
   context (its k_l regions in slot order), and where the contexts and
   targets hpj__sample drew sit in it (crow, trow). Returns its length. */
static int32_t hpj__whole_graphs(hpj__trainer *tr, int32_t B) {
    const hpj_tokens *tk = &tr->tk;
    int32_t b, S = 0, l = tr->l;
    for (b = 0; b < B; ++b) {
        int32_t g = tr->ctx[b].g, k = tk->k[(size_t)g * tk->L + l], j, t;
        int64_t p0 = tk->patch0[(size_t)g * tk->L + l];
        tr->crow[b] = S + tr->ctx[b].slot;
        for (t = tr->tptr[b]; t < tr->tptr[b + 1]; ++t) tr->trow[t] = S + tr->tgt[t].slot;
        for (j = 0; j < k; ++j, ++S) {
            tr->whole[S].g = g;
            tr->whole[S].slot = j;
            tr->whole[S].patch = p0 + j;
        }
    }
    return S;
}

/* One step's batch, as hpj__sample drew it, and its buffers, bound from
   the trainer's arena (measured first) by hpj__batch_load. */
typedef struct hpj__step_ws {
    int32_t B, T, Tm;        /* contexts (one per graph), targets, most targets of a graph */
    int32_t S;               /* patches in the context path: B, or with patch_tokens =
                                graph every patch of the B graphs (the target path
                                then has none: its tokens come from this pass) */
    const int32_t *crow, *trow; /* patch_tokens = graph: the contexts' and targets'
                                   rows in the context path (else NULL)     */
    float *dz;               /* patch_tokens = graph: (S, D) the pass's token gradient */
    int64_t T_all;           /* T over the ranks of a data-parallel run (else T) */
    hpj__gnn_ws gc, gt;      /* context (with grad) and target patch encoders */
    hpj__gnn_bws gb;
    hpj__sq_ws pc, pt;
    hpj__enc_ws ec, et;      /* online (B, 1) and target (B, Tm) encoders     */
    hpj__pred_ws pr;
    uint8_t *tmask;          /* (B, Tm) valid targets                         */
    float *adj;              /* (B, Tm, Tm) or NULL                           */
    uint8_t *tokmask;        /* (B, D) token dropout mask or NULL             */
    float *yt, *dy;          /* (T, 2)                                        */
    float *dq, *ds, *dx, *dtmp, *s1;      /* (T, D), (B, D) x3, (max(B,T), D)    */
    double *mu;              /* (B, Tm) m(u) of the target encoder's tokens   */
} hpj__step_ws;

/* Binds a step's buffers: S patches in the context path (cc: its copies,
   edges and copy groups), the target path's patches (ct likewise; none
   with patch_tokens = graph), B contexts, T targets, Tm per graph at most. */
static void hpj__step_bind(hpj_arena *a, const hpj_model *m, hpj__step_ws *w, int32_t S, int32_t B, int32_t T,
                           int32_t Tm, const int64_t *cc, const int64_t *ct, int train_drop) {
    int D = m->D, whole = m->cfg.patch_tokens == HPJ_TOKENS_GRAPH;
    size_t BD = (size_t)B * D + 1, TD = (size_t)T * D + 1, MD = (size_t)HPJ__MAX(B, T) * D + 1;
    hpj__gnn_bind(a, m, &w->gc, S, (int32_t)cc[0], (int32_t)cc[1], (int32_t)cc[2], train_drop ? HPJ__TRAIN : HPJ__EVAL, 0);
    hpj__gnn_bind_back(a, m, &w->gb, S, (int32_t)cc[0], (int32_t)cc[1]);
    hpj__gnn_bind(a, m, &w->gt, whole ? 0 : T, (int32_t)ct[0], (int32_t)ct[1], (int32_t)ct[2], HPJ__EVAL /* no dropout */, 1);
    w->dz = whole ? hpj_arena_floats(a, (size_t)S * D + 1) : NULL;
    hpj__sq_bind(a, m, &w->pc, B);
    hpj__sq_bind(a, m, &w->pt, T);
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
    w->mu = (double *)hpj_arena_alloc(a, sizeof(double) * ((size_t)B * Tm + 1));
}

/* Makes sure the arena holds `need` bytes (grows between steps only). */
static hpj_status hpj__arena_ensure(hpj_arena *a, size_t need) {
    size_t peak = a->peak;
    if (a->cap >= need && a->base) return HPJ_OK;
    hpj_arena_free(a);
    if (hpj_arena_init(a, need + need / 4 + 4096) != HPJ_OK) return HPJ_ERR_NOMEM;
    a->peak = peak;
    return HPJ_OK;
}

/* A path's inputs: its node copies, their edges (CSR, with the reverse
   entries hpj_gine_backward reads for the context path, ctx = 1) and
   features. */
static void hpj__path_inputs(hpj__trainer *tr, hpj__gnn_ws *w, const hpj__item *it, int ctx) {
    const hpj_model *m = tr->m;
    hpj__path_fill(tr->ds, &tr->tk, it, &w->path, &tr->ps, ctx && m->edge_onehot);
    hpj__path_features(m, tr->ds, w);
}

/* The targets Phi(u) = [cosh m(u), sinh m(u)] of graphs b0 .. b1 - 1
   into w->yt, m(u) clamped to +-target_clamp when that is set. Returns -1,
   or the first of these targets (in graph order) whose m(u) would make
   cosh / sinh overflow float, its m(u) in *bad. */
static int32_t hpj__targets_phi(const hpj__trainer *tr, hpj__step_ws *w, int32_t b0, int32_t b1, int32_t Tm,
                                double *bad) {
    const hpj_config *cfg = &tr->m->cfg;
    int32_t b;
    for (b = b0; b < b1; ++b) {
        int32_t t0 = tr->tptr[b], nt = tr->tptr[b + 1] - t0, j;
        for (j = 0; j < nt; ++j) {
            double mu = w->mu[(size_t)b * Tm + j];
            if (cfg->target_clamp > 0.0f) mu = mu > cfg->target_clamp ? cfg->target_clamp : mu < -cfg->target_clamp ? -cfg->target_clamp : mu;
            if (!(fabs(mu) < 88.0)) {
                *bad = mu;
                return t0 + j;
            }
            w->yt[(size_t)(t0 + j) * 2] = (float)cosh(mu);
            w->yt[(size_t)(t0 + j) * 2 + 1] = (float)sinh(mu);
        }
    }
    return -1;
}

/* The predictor's input q_t = s_c + p_t for each target t of each context c. */
static void hpj__pred_input(const hpj__trainer *tr, hpj__step_ws *w, int32_t B) {
    const hpj_model *m = tr->m;
    int32_t b, D = m->D;
    for (b = 0; b < B; ++b) {
        int32_t t;
        for (t = tr->tptr[b]; t < tr->tptr[b + 1]; ++t) {
            int d;
            const float *sc = w->ec.x[m->cfg.blocks] + (size_t)b * D, *pt = w->pt.p + (size_t)t * D;
            float *q = w->pr.a[0] + (size_t)t * D;
            for (d = 0; d < D; ++d) q[d] = sc[d] + pt[d];
        }
    }
}

/* The step's normaliser: the batch's statistics, which move the running
   ones in training (hpj_model_loss leaves them as they are). */
static hpj__norm_fn hpj__step_norm(const hpj__trainer *tr) {
    return tr->mode == HPJ__TRAIN ? hpj__norm_batch : hpj__norm_frozen;
}

/* The context path: patch tokens z = g_eta(context patch) and structural
   queries p = e_xi of the contexts (and of the targets, for the
   predictor); the tokens x = z + p (token dropout on them) through the
   online encoder f_theta: s (B, D), one token per graph. */
static void hpj__fwd_context(hpj__trainer *tr, hpj__step_ws *w, int32_t B, int32_t T, uint64_t drop_seed) {
    hpj_model *m = tr->m;
    size_t n = (size_t)B * m->D;
    int32_t b, d, D = m->D;
    hpj_bn_stats *bn = &m->bn[tr->l];
    hpj__norm_fn norm = hpj__step_norm(tr);
    hpj__gnn_forward(m, &w->gc, bn, norm, drop_seed);
    hpj__sq_forward(m, &w->pc, bn, &tr->tk, tr->ctx, B, norm);
    hpj__sq_forward(m, &w->pt, bn, &tr->tk, tr->tgt, T, norm);
    for (b = 0; b < B; ++b) { /* the context's token: row b, or its row crow[b] among its graph's patches */
        const float *z = w->gc.z + (size_t)(w->crow ? w->crow[b] : b) * D, *p = w->pc.p + (size_t)b * D;
        float *x = w->ec.x[0] + (size_t)b * D;
        for (d = 0; d < D; ++d) x[d] = z[d] + p[d];
    }
    if (w->tokmask)
        hpj__dropout_at(w->ec.x[0], w->tokmask, w->ec.x[0], n, m->cfg.token_dropout, drop_seed, (uint64_t)m->step, 300,
                        (uint64_t)tr->row0[0] * m->D);
    hpj__enc_forward(m, &w->ec, m->p.blk, NULL, NULL);
}

/* The EMA encoder's input: z of the targets only (no gradient flows
   back; from the target path, or with patch_tokens = graph from the
   context path's pass over the whole graphs), Tm slots per graph (masked
   past a graph's targets), and the overlap adjacency. */
static void hpj__fwd_target_input(hpj__trainer *tr, hpj__step_ws *w, int32_t B, int32_t Tm) {
    hpj_model *m = tr->m;
    int32_t b, D = m->D;
    for (b = 0; b < B; ++b) {
        int32_t t0 = tr->tptr[b], nt = tr->tptr[b + 1] - t0, j;
        for (j = 0; j < Tm; ++j) {
            float *dst = w->et.x[0] + ((size_t)b * Tm + j) * D;
            w->tmask[(size_t)b * Tm + j] = (uint8_t)(j < nt);
            if (j < nt) /* the target's row in the target path, or in the context path's (graph) */
                memcpy(dst, w->trow ? w->gc.z + (size_t)w->trow[t0 + j] * D : w->gt.z + (size_t)(t0 + j) * D,
                       sizeof(float) * (size_t)D);
            else memset(dst, 0, sizeof(float) * (size_t)D);
        }
        if (w->adj) hpj__overlap(&tr->tk, tr->tgt + t0, nt, Tm, w->adj + (size_t)b * Tm * Tm);
    }
}

/* The target path: z = g_eta(target patch) (the same patch encoder, no
   gradient; its BatchNorms' running statistics update after the context
   path's; with patch_tokens = graph the context path already computed
   z), the EMA encoder fbar_theta over each graph's Tm target tokens, and
   m(u), the channel mean of each output token. The mask only matters
   when some graph has fewer than Tm targets; without one (always so at
   Tm = 1, as B counts only graphs with targets) attention skips the mask
   tests, and one-token blocks skip q, k and the softmax: the same bits as
   an all-ones mask. */
static void hpj__fwd_target(hpj__trainer *tr, hpj__step_ws *w, int32_t B, int32_t T, int32_t Tm) {
    hpj_model *m = tr->m;
    if (!w->trow) hpj__gnn_forward(m, &w->gt, &m->bn[tr->l], hpj__step_norm(tr), 0);
    hpj__fwd_target_input(tr, w, B, Tm);
    hpj__enc_forward_mean(m, &w->et, m->tgt, T == B * Tm ? NULL : w->tmask, w->adj, w->mu);
}

/* The optimizer's update once the gradient is clipped: Adam on every
   parameter, then the EMA of the encoder, fbar_theta <- tau fbar_theta +
   (1 - tau) f_theta (the encoder is the last parameter range). */
#ifndef HPJ_REFERENCE
static void hpj__fast_adam_ema(hpj_model *m, float lr, float tau);
#endif
static void hpj__adam_ema(hpj_model *m, float lr, float tau) {
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { /* fast: one pass (see the fast part) */
        hpj__fast_adam_ema(m, lr, tau);
        return;
    }
#endif
    hpj_adam_step(m->params, m->grads, m->adam_m, m->adam_v, m->num_params, lr, 0.9f, 0.999f, 1e-8f,
                  m->cfg.weight_decay, m->cfg.optimizer, m->step + 1);
    hpj_ema_update(m->ema, m->params + m->enc_offset, m->enc_count, tau);
}

/* ---- data parallel: how the ranks agree ----
   A rank must never wait in a collective that another rank, having failed,
   will not reach. So every failure a rank can meet on its own (memory, its
   share of the input, a target that overflows) is folded into an
   agreement before the next collective: each rank writes its status and
   up to HPJ__DP_FIELDS - 1 counts into its row of dp->slots, the rows are
   summed, and every rank then reads every rank's row. When one failed,
   its reason travels to all (one character per integer, through the same
   sum) and every rank returns its status: the same error everywhere. */
static hpj_status hpj__dp_lost(const hpj__dp *dp) {
    return hpj__fail(HPJ_ERR_IO, "pretrain: the communicator failed (rank %d of %d)", dp->comm->rank,
                     dp->comm->size);
}

static hpj_status hpj__dp_agree(hpj__dp *dp, hpj_status st, const int64_t *mine, int k) {
    const hpj_comm *c = dp->comm;
    int64_t *row = dp->slots + (size_t)c->rank * HPJ__DP_FIELDS, msg[HPJ__ERRLEN];
    char text[HPJ__ERRLEN];
    int r, i, bad = -1;
    memset(dp->slots, 0, sizeof(int64_t) * (size_t)c->size * HPJ__DP_FIELDS);
    row[0] = st;
    for (i = 0; i < k; ++i) row[1 + i] = mine[i];
    hpj__dp_sum_i(dp, dp->slots, (size_t)c->size * HPJ__DP_FIELDS);
    if (dp->failed) return hpj__dp_lost(dp);
    for (r = 0; r < c->size && bad < 0; ++r)
        if (dp->slots[(size_t)r * HPJ__DP_FIELDS] != 0) bad = r;
    if (bad < 0) return HPJ_OK;
    memset(msg, 0, sizeof msg);
    if (bad == c->rank) {
        const char *e = hpj_last_error();
        for (i = 0; e[i] && i < HPJ__ERRLEN - 1; ++i) msg[i] = (unsigned char)e[i];
    }
    hpj__dp_sum_i(dp, msg, HPJ__ERRLEN);
    if (dp->failed) return hpj__dp_lost(dp);
    for (i = 0; i < HPJ__ERRLEN - 1 && msg[i] > 0 && msg[i] < 256; ++i) text[i] = (char)msg[i];
    text[i] = 0;
    return hpj__fail((hpj_status)dp->slots[(size_t)bad * HPJ__DP_FIELDS], "rank %d of %d: %s", bad, c->size, text);
}

/* The whole batch of a step: the ranks' contexts, targets and node copies
   of both paths (mine, 4 counts) summed into all; this rank's first
   context, target and context copy in it (the sum over the ranks before
   it) into tr->row0. With st != 0 on any rank, every rank fails. */
static hpj_status hpj__dp_batch(hpj__trainer *tr, hpj_status st, const int64_t *mine, int64_t *all) {
    hpj__dp *dp = tr->dp;
    int r, j;
    if ((st = hpj__dp_agree(dp, st, mine, 4))) return st;
    for (j = 0; j < 4; ++j) all[j] = 0;
    for (r = 0; r < dp->comm->size; ++r)
        for (j = 0; j < 4; ++j) {
            if (r == dp->comm->rank && j < 3) tr->row0[j] = all[j];
            all[j] += dp->slots[(size_t)r * HPJ__DP_FIELDS + 1 + j];
        }
    if (all[2] > INT32_MAX / 2 || all[3] > INT32_MAX / 2)
        return hpj__fail(HPJ_ERR_INPUT, "step: batch too large (%lld node copies over %d ranks)",
                         (long long)(all[2] + all[3]), dp->comm->size);
    return HPJ_OK;
}

/* Steps 1 and 2, before hpj__step (below), as a data loader would: samples
   resolution l's contexts and targets of a batch of graphs (with a
   communicator: of this rank's slice of it), sizes their paths, binds w's
   buffers for them in the trainer's arena from *mark on and builds the
   paths' inputs. *active = 0 when no graph of the batch is eligible at l
   (nothing bound). With a communicator the ranks first agree on the whole
   batch (its T is the loss normaliser) and on where this rank's rows sit
   in it; a rank without an eligible graph takes part with none. */
static hpj_status hpj__batch_load(hpj__trainer *tr, const int32_t *batch, int32_t nb, int l, hpj__step_ws *w,
                                  size_t *mark, int *active) {
    hpj_model *m = tr->m;
    hpj_arena meas;
    int32_t B, T, Tm = 0, b;
    int64_t cc[3] = {0, 0, 0}, ct[3] = {0, 0, 0}, all[4];
    int train_drop = (tr->mode == HPJ__TRAIN);
    hpj_status st = HPJ_OK;
    const hpj__item *cit = tr->ctx; /* the context path's patches */
    int32_t S, Tp = 0;              /* their number; the target path's */
    *active = 0;
    /* -- 1. sample: per graph one context region c and M_l target regions t -- */
    B = hpj__sample(tr, batch, nb, l, &T);
    if (!tr->dp && B == 0) return HPJ_OK;
    for (b = 0; b < B; ++b) Tm = HPJ__MAX(Tm, tr->tptr[b + 1] - tr->tptr[b]);
    S = B;
    if (tr->whole) { /* patch_tokens = graph: one pass over every patch of these graphs */
        S = hpj__whole_graphs(tr, B);
        cit = tr->whole;
    } else {
        Tp = T;
    }
    hpj__path_count(&tr->tk, cit, S, &tr->ps, hpj__path_groups(m), &cc[0], &cc[1], &cc[2]);
    hpj__path_count(&tr->tk, tr->tgt, Tp, &tr->ps, hpj__path_groups(m), &ct[0], &ct[1], &ct[2]);
    if (cc[0] > INT32_MAX / 2 || cc[1] > INT32_MAX / 2 || ct[0] > INT32_MAX / 2 || ct[1] > INT32_MAX / 2)
        st = hpj__fail(HPJ_ERR_INPUT, "step: batch too large (%lld node copies)", (long long)(cc[0] + ct[0]));
    if (!st) {
        hpj_arena_init_measure(&meas);
        hpj__step_bind(&meas, m, w, S, B, T, Tm, cc, ct, train_drop);
        st = hpj__arena_ensure(&tr->arena, meas.used);
    }
    all[0] = B;
    all[1] = T;
    if (tr->dp) {
        int64_t mine[4] = {B, T, cc[0], ct[0]};
        st = hpj__dp_batch(tr, st, mine, all);
    }
    if (st || all[0] == 0) return st;
    *active = 1;
    *mark = hpj_arena_mark(&tr->arena);
    hpj__step_bind(&tr->arena, m, w, S, B, T, Tm, cc, ct, train_drop);
    w->S = S;
    w->crow = tr->whole ? tr->crow : NULL;
    w->trow = tr->whole ? tr->trow : NULL;
    w->B = B;
    w->T = T;
    w->Tm = Tm;
    w->T_all = all[1];
    w->gc.dp = w->gt.dp = w->pc.dp = w->pt.dp = tr->dp;
    w->gc.row0 = tr->row0[2];
    w->pr.row0 = tr->row0[1];
    /* -- 2. the paths' inputs: node copies, edges and features of the
       context patches and of the target patches -- */
    hpj__path_inputs(tr, &w->gc, cit, 1);
    if (!tr->whole) hpj__path_inputs(tr, &w->gt, tr->tgt, 0);
    return HPJ_OK;
}

#ifndef HPJ_REFERENCE
static int hpj__fast_paths_side(hpj__trainer *tr, hpj__step_ws *w, int32_t B, int32_t T, int32_t Tm, int l,
                                uint64_t drop_seed, int32_t *badt, double *badmu);
#endif
/* Runs resolution tr->l on the batch in w, which hpj__batch_load made
   (steps 1 and 2: per graph one context region c and M_l target regions
   t, and the node copies, edges and features of their patches): the step
   of the method, in order. *loss gets L_l(B). With tr->apply = 0
   (hpj_model_loss) it stops after the backward. */
static hpj_status hpj__step(hpj__trainer *tr, hpj__step_ws *w, double *loss) {
    hpj_model *m = tr->m;
    const hpj_config *cfg = &m->cfg;
    hpj__dp *dp = tr->dp;
    int32_t B = w->B, T = w->T, Tm = w->Tm, b, D = m->D;
    int l = tr->l;
    hpj_status st = HPJ_OK;
    uint64_t drop_seed = cfg->seed ^ 0xD50FULL;
    int32_t badt; /* a target whose m(u) overflows cosh / sinh (hpj__targets_phi) */
    double L_sum, badmu = 0.0;
    *loss = 0.0;

    memset(m->grads, 0, sizeof(float) * m->num_params);
#ifndef HPJ_REFERENCE
    /* fast: steps 3 and 4 with the two paths side by side, one per thread (see the fast part) */
    if (!hpj__fast() || !hpj__fast_paths_side(tr, w, B, T, Tm, l, drop_seed, &badt, &badmu))
#endif
    {
        /* -- 3. context: s_c = f_theta(g_eta(P_c) + e_xi(c)) -- */
        hpj__fwd_context(tr, w, B, T, drop_seed);

        /* -- 4. targets (no gradient): y_t = Phi(m(fbar_theta(g_eta(P_t)))),
           Phi(u) = [cosh m(u), sinh m(u)] on the hyperbola -- */
        hpj__fwd_target(tr, w, B, T, Tm);
        badt = hpj__targets_phi(tr, w, 0, B, Tm, &badmu);
    }
    if (badt >= 0)
        st = hpj__fail(HPJ_ERR_NUMERIC,
                       "epoch %lld, step %lld, resolution %d (K=%d): target mean m(u) = %g makes cosh/sinh "
                       "overflow float; set target_clamp (e.g. 20) to guard",
                       (long long)tr->epoch + 1, (long long)m->step + 1, l + 1, cfg->K[l], badmu);
    if (dp) st = hpj__dp_agree(dp, st, NULL, 0);
    if (st) return st;

    /* -- 5. predictor: yhat_t = q_psi(s_c + e_xi(t)) -- */
    hpj__pred_input(tr, w, B);
    hpj__pred_forward(m, &w->pr, drop_seed);

    /* -- 6. loss: smooth L1 per coordinate, averaged over the 2 coordinates
       and all T targets of the minibatch (the paper's Z_l normaliser; with
       a communicator every rank sums its targets' share, and the shares
       are summed) -- */
    memset(w->dy, 0, sizeof(float) * (size_t)T * 2);
    L_sum = hpj_smooth_l1(w->pr.a[cfg->pred_layers], w->yt, w->dy, (size_t)T * 2, cfg->beta,
                          1.0f / (2.0f * (float)w->T_all));
    if (dp) hpj__dp_sum_d(dp, &L_sum, 1);
    *loss = L_sum;
    if (dp && dp->failed) return hpj__dp_lost(dp);
    if (!(L_sum == L_sum) || L_sum > 1e30)
        return hpj__fail(HPJ_ERR_NUMERIC, "epoch %lld, step %lld, resolution %d (K=%d): loss is %g",
                         (long long)tr->epoch + 1, (long long)m->step + 1, l + 1, cfg->K[l], L_sum);

    /* -- 7. backward, in reverse: q_psi, then q_t = s_c + p_t splits the
       gradient (ds_c = the sum of dq over c's targets, dp_t = dq_t), f_theta,
       token dropout, x = z + p (dz = dp = dx), e_xi, g_eta -- */
    hpj__pred_backward(m, &w->pr, w->dy, w->dq);
    HPJ__OMP(parallel for schedule(static) if ((int64_t)T * D >= HPJ__PAR_ELEMS))
    for (b = 0; b < B; ++b) {
        int32_t t, d;
        float *o = w->ds + (size_t)b * D;
        for (d = 0; d < D; ++d) o[d] = 0.0f;
        for (t = tr->tptr[b]; t < tr->tptr[b + 1]; ++t)
            for (d = 0; d < D; ++d) o[d] += w->dq[(size_t)t * D + d];
    }
    hpj__enc_backward(m, &w->ec, w->ds, w->dx, NULL);
    if (w->tokmask) {
        memcpy(w->dtmp, w->dx, sizeof(float) * (size_t)B * D);
        hpj__zero(w->dx, (size_t)B * D);
        hpj_dropout_backward(w->dx, w->dtmp, w->tokmask, (size_t)B * D, cfg->token_dropout);
    }
    hpj__sq_backward(m, &w->pc, B, w->dx, w->s1);
    hpj__sq_backward(m, &w->pt, T, w->dq, w->s1);
    if (w->crow) { /* patch_tokens = graph: of the pass's S tokens only the contexts' get a gradient */
        hpj__zero(w->dz, (size_t)w->S * D);
        for (b = 0; b < B; ++b)
            memcpy(w->dz + (size_t)w->crow[b] * D, w->dx + (size_t)b * D, sizeof(float) * (size_t)D);
    }
    hpj__gnn_backward(m, &w->gc, &w->gb, w->crow ? w->dz : w->dx);
    if (dp) {
        /* the ranks' gradients summed: every rank now holds the whole
           batch's gradient, so the update below is the same on every rank */
        hpj__dp_sum_f(dp, m->grads, m->num_params);
        if (dp->failed) return hpj__dp_lost(dp);
    }

    /* -- 8. update: clip the gradient's global norm, Adam, the EMA -- */
    if (tr->apply) {
        float lr = hpj_lr_at(cfg->schedule, cfg->lr, cfg->min_lr, m->step, tr->total_steps, tr->warmup_steps);
        float tau = hpj_ema_momentum(cfg->ema_start, cfg->ema_end, m->step, tr->total_steps);
        double gn = hpj_grad_clip(m->grads, m->num_params, cfg->clip);
        if (!(gn == gn) || gn > 1e30)
            return hpj__fail(HPJ_ERR_NUMERIC, "epoch %lld, step %lld, resolution %d (K=%d): gradient norm is %g",
                             (long long)tr->epoch + 1, (long long)m->step + 1, l + 1, cfg->K[l], gn);
        hpj__adam_ema(m, lr, tau);
        m->step++;
    }
    return HPJ_OK;
}

/* One step of resolution l on a batch of graphs: the batch loaded
   (hpj__batch_load), the step (hpj__step), the buffers given back.
   *loss gets L_l(B); *active = 0 when B_l is empty (nothing done). */
static hpj_status hpj__run_step(hpj__trainer *tr, const int32_t *batch, int32_t nb, int l, double *loss,
                                int *active) {
    hpj__step_ws w;
    size_t mark = 0;
    hpj_status st = hpj__batch_load(tr, batch, nb, l, &w, &mark, active);
    *loss = 0.0;
    if (st || !*active) return st;
    st = hpj__step(tr, &w, loss);
    hpj_arena_reset(&tr->arena, mark);
    return st;
}

/* ==== threads: units of work ====
   The reference runs every parallel loop with the team OpenMP gives it
   (OMP_NUM_THREADS, or the config key threads). Results never depend on
   the team size, so a faster choice of team can only change speed. Long
   calls work in units (training: minibatches; embedding: chunks; probes: a
   pass over the data), and the calls to hpj__gov_* below mark them: a call
   enters its kind (enter ... leave) and brackets each unit (begin ... end).
   The fast part uses these marks to run a unit on one thread while another
   process takes one of the cores (see "fast: the team size follows the
   machine's load"); in the reference they do nothing. */
typedef struct hpj__gov hpj__gov;
enum { HPJ__GOV_TRAIN, HPJ__GOV_EMBED, HPJ__GOV_PROBE, HPJ__GOV_KINDS };
#ifdef HPJ_REFERENCE
HPJDEF void hpj_set_adaptive_threads(int on) { (void)on; }
#define hpj__gov_enter(kind) ((void)(kind), (hpj__gov *)NULL)
#define hpj__gov_begin(g, warm) ((void)(g), (void)(warm))
#define hpj__gov_end(g, work) ((void)(g), (void)(work))
#define hpj__gov_leave(g) ((void)(g))
#else
static hpj__gov *hpj__gov_enter(int kind);
static void hpj__gov_begin(hpj__gov *g, int warm);
static void hpj__gov_end(hpj__gov *g, double work);
static void hpj__gov_leave(hpj__gov *g);
#endif

static void hpj__set_threads(const hpj_config *c) {
#ifdef _OPENMP
    if (c->threads > 0) omp_set_num_threads(c->threads);
#else
    (void)c;
#endif
}

/* ==== model: training loop ================================================= */

static void hpj__trainer_free(hpj__trainer *tr) {
    hpj_tokens_free(&tr->tk);
    hpj__free(tr->node_rw);
    hpj_arena_free(&tr->arena);
    hpj__free(tr->ps.buf); hpj__free(tr->ctx); hpj__free(tr->tgt); hpj__free(tr->tptr); hpj__free(tr->perm);
    hpj__free(tr->whole); hpj__free(tr->crow); hpj__free(tr->trow);
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
    o->part.method = c->part_method;
    o->part.ntrials = c->part_trials;
    o->seed = c->seed;
    o->epoch = train && c->repartition ? (uint64_t)epoch + 1 : 0; /* epoch 0 = the fixed evaluation partition */
    o->edge_drop = train && c->repartition ? c->edge_drop : 0.0f;
}

static hpj_status hpj__trainer_init(hpj__trainer *tr, hpj_model *m, const hpj_dataset *ds, int32_t batch_cap) {
    int32_t maxM = 1, maxK = 1, l;
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
    for (l = 0; l < m->cfg.L; ++l) {
        maxM = HPJ__MAX(maxM, m->cfg.M[l]);
        maxK = HPJ__MAX(maxK, m->cfg.K[l]);
    }
    maxK = HPJ__MIN(maxK, HPJ__MAX(1, hpj__max_nodes(ds))); /* (k_l <= min(K_l, n) regions) */
    tr->node_rw = (float *)hpj__calloc((size_t)ds->num_nodes + 1, sizeof(float) * (size_t)m->R, "pretrain");
    tr->ctx = (hpj__item *)hpj__alloc(sizeof(hpj__item) * (size_t)batch_cap, "pretrain");
    tr->tgt = (hpj__item *)hpj__alloc(sizeof(hpj__item) * (size_t)batch_cap * (size_t)maxM, "pretrain");
    tr->tptr = (int32_t *)hpj__alloc(sizeof(int32_t) * ((size_t)batch_cap + 1), "pretrain");
    tr->perm = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)maxK, "pretrain");
    if (m->cfg.patch_tokens == HPJ_TOKENS_GRAPH) {
        tr->whole = (hpj__item *)hpj__alloc(sizeof(hpj__item) * (size_t)batch_cap * (size_t)maxK, "pretrain");
        tr->crow = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)batch_cap, "pretrain");
        tr->trow = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)batch_cap * (size_t)maxM, "pretrain");
        if (!tr->whole || !tr->crow || !tr->trow) {
            hpj__trainer_free(tr);
            return HPJ_ERR_NOMEM;
        }
    }
    if (hpj__pscr_init(&tr->ps, ds) || !tr->node_rw || !tr->ctx || !tr->tgt || !tr->tptr || !tr->perm) {
        hpj__trainer_free(tr);
        return HPJ_ERR_NOMEM;
    }
    if ((st = hpj_dataset_rwse(ds, m->R, tr->node_rw))) { hpj__trainer_free(tr); return st; }
    return HPJ_OK;
}

static hpj_status hpj__trainer_tokens(hpj__trainer *tr, const int32_t *graphs, int32_t n, int train, int64_t epoch) {
    hpj_tok_options o;
    hpj__tok_opts(tr->m, &o, train, epoch);
    hpj_tokens_free(&tr->tk);
    return hpj_tokens_build(tr->ds, tr->node_rw, graphs, n, &o, &tr->tk);
}

HPJDEF double hpj_model_last_flops(void) { return hpj__flops; }

HPJDEF void hpj_model_set_comm(hpj_model *m, const hpj_comm *comm) { m->comm = comm; }

/* FNV-1a over bytes, folded into hash h (the ranks' fingerprints). */
static uint64_t hpj__fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001B3ULL;
    return h;
}

/* A fingerprint of what the ranks must share: the training graphs, the
   model's shape and the config's training settings (threads may differ). */
static int64_t hpj__dp_print(const hpj_model *m, const int32_t *train, int32_t n, int64_t until, int64_t max_steps) {
    const hpj_config *c = &m->cfg;
    uint64_t h = 0xCBF29CE484222325ULL;
    h = hpj__fnv(h, train, sizeof(int32_t) * (size_t)n);
    h = hpj__fnv(h, &m->num_params, sizeof m->num_params);
    h = hpj__fnv(h, c->K, sizeof c->K);
    h = hpj__fnv(h, c->M, sizeof c->M);
    h = hpj__fnv(h, &c->seed, sizeof c->seed);
    h = hpj__fnv(h, &c->lr, sizeof c->lr);
    h = hpj__fnv(h, &c->dropout, sizeof c->dropout);
    h = hpj__fnv(h, &c->patch_tokens, sizeof c->patch_tokens);
    h = hpj__fnv(h, &c->token_dropout, sizeof c->token_dropout);
    h = hpj__fnv(h, &c->edge_drop, sizeof c->edge_drop);
    h = hpj__fnv(h, &c->ema_start, sizeof c->ema_start);
    h = hpj__fnv(h, &c->clip, sizeof c->clip);
    h = hpj__fnv(h, &c->batch_size, sizeof c->batch_size);
    h = hpj__fnv(h, &c->epochs, sizeof c->epochs);
    h = hpj__fnv(h, &c->repartition, sizeof c->repartition);
    h = hpj__fnv(h, &until, sizeof until);
    h = hpj__fnv(h, &max_steps, sizeof max_steps);
    return (int64_t)(h >> 2);
}

/* A hash of the trained state (parameters, Adam moments, EMA, BatchNorm
   statistics), which the ranks compare when they are done. */
static int64_t hpj__dp_state(const hpj_model *m) {
    uint64_t h = 0xCBF29CE484222325ULL;
    h = hpj__fnv(h, m->params, sizeof(float) * m->num_params);
    h = hpj__fnv(h, m->adam_m, sizeof(float) * m->num_params);
    h = hpj__fnv(h, m->adam_v, sizeof(float) * m->num_params);
    h = hpj__fnv(h, m->ema, sizeof(float) * m->enc_count);
    h = hpj__fnv(h, m->stats, sizeof(float) * m->num_stats);
    return (int64_t)(h >> 2);
}

static void hpj__dp_close(hpj__dp *dp) {
    hpj__free(dp->bn_ws);
    hpj__free(dp->slots);
    memset(dp, 0, sizeof *dp);
}

/* The start of data-parallel pretraining: the ranks agree that each is
   ready (st: its setup) and that they train the same graphs and model
   (hpj__dp_print), then take rank 0's state: parameters, Adam moments,
   EMA, BatchNorm statistics and counters. */
static hpj_status hpj__dp_open(hpj__dp *dp, hpj_model *m, hpj_status st, int64_t print) {
    const hpj_comm *c = m->comm;
    int64_t mine[2], cnt[3];
    int r;
    memset(dp, 0, sizeof *dp);
    dp->comm = c;
    if (c->size < 1 || c->rank < 0 || c->rank >= c->size || !c->sum_float || !c->sum_double || !c->sum_int64 ||
        !c->bcast)
        return hpj__fail(HPJ_ERR_INPUT, "pretrain: communicator with rank %d of %d or without a callback", c->rank, c->size);
    dp->bn_ws = (double *)hpj__alloc(sizeof(double) * HPJ__BN_WS(m->D), "pretrain");
    dp->slots = (int64_t *)hpj__calloc((size_t)c->size * HPJ__DP_FIELDS, sizeof(int64_t), "pretrain");
    if (!dp->slots) { /* (no agreement without them: the others may wait) */
        hpj__dp_close(dp);
        return HPJ_ERR_NOMEM;
    }
    if (!st && !dp->bn_ws) st = HPJ_ERR_NOMEM;
    mine[0] = 1; /* (a rank number taken twice leaves another row empty) */
    mine[1] = print;
    st = hpj__dp_agree(dp, st, mine, 2);
    for (r = 0; !st && r < c->size; ++r) {
        const int64_t *row = dp->slots + (size_t)r * HPJ__DP_FIELDS;
        if (row[1] != 1)
            st = hpj__fail(HPJ_ERR_INPUT, "pretrain: %lld processes say they are rank %d of %d", (long long)row[1], r,
                           c->size);
        else if (row[2] != dp->slots[2])
            st = hpj__fail(HPJ_ERR_INPUT, "pretrain: rank %d of %d trains other graphs, another model shape or other "
                           "settings than rank 0", r, c->size);
    }
    if (!st) {
        cnt[0] = m->step;
        cnt[1] = m->epoch;
        cnt[2] = m->adam_state;
        hpj__dp_bcast(dp, m->params, sizeof(float) * m->num_params);
        hpj__dp_bcast(dp, m->adam_m, sizeof(float) * m->num_params);
        hpj__dp_bcast(dp, m->adam_v, sizeof(float) * m->num_params);
        hpj__dp_bcast(dp, m->ema, sizeof(float) * m->enc_count);
        hpj__dp_bcast(dp, m->stats, sizeof(float) * m->num_stats);
        hpj__dp_bcast(dp, cnt, sizeof cnt);
        m->step = cnt[0];
        m->epoch = cnt[1];
        m->adam_state = (int)cnt[2];
        if (dp->failed) st = hpj__dp_lost(dp);
    }
    if (st) hpj__dp_close(dp);
    return st;
}

/* The end: the ranks must hold the same state, bit for bit (a
   communicator whose sums differ between ranks would break that). */
static hpj_status hpj__dp_end(hpj__dp *dp, const hpj_model *m, hpj_status st) {
    int64_t mine[1];
    int r;
    mine[0] = st ? 0 : hpj__dp_state(m);
    if ((st = hpj__dp_agree(dp, st, mine, 1))) return st;
    for (r = 1; r < dp->comm->size; ++r)
        if (dp->slots[(size_t)r * HPJ__DP_FIELDS + 1] != dp->slots[1])
            return hpj__fail(HPJ_ERR_NUMERIC, "pretrain: rank %d of %d holds other parameters than rank 0 after "
                             "training (the communicator's sums must be the same bits on every rank)", r,
                             dp->comm->size);
    return HPJ_OK;
}

static hpj_status hpj__pretrain(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                                int64_t max_steps, int64_t until, hpj_progress_fn progress, void *user) {
    const hpj_config *c = &m->cfg;
    hpj__trainer tr;
    hpj_status st = HPJ_OK;
    int32_t *order = NULL, *mine = NULL, nb, bs = c->batch_size, i;
    int64_t e, steps_per_epoch = 0;
    hpj_progress pg;
    uint8_t *eligible = NULL; /* (G * L): k_l(g) >= 2 (depends only on n) */
    hpj__gov *gov = NULL;
    hpj__dp dps, *dp = NULL; /* data-parallel (m->comm): rank r of R trains slice r of each batch */
    int R = 1, rank = 0;
    /* (with a communicator a failure here is agreed on below, not returned
       at once: the other ranks would wait for this one) */
    if (n_train < 1) st = hpj__fail(HPJ_ERR_INPUT, "pretrain: no training graphs");
    else if (m->epoch < 0) st = hpj__fail(HPJ_ERR_INPUT, "pretrain: the model's epoch count is negative");
    else if (m->epoch >= until && !m->comm) return HPJ_OK; /* nothing left of the run */
    for (i = 0; !st && i < n_train; ++i)
        if (train[i] < 0 || train[i] >= ds->num_graphs)
            st = hpj__fail(HPJ_ERR_INPUT, "pretrain: graph index %d outside 0..%d", train[i], ds->num_graphs - 1);
    if (st && !m->comm) return st;
    memset(&tr, 0, sizeof tr);
    if (!st) {
        hpj__set_threads(c);
        hpj__flops = 0.0;
        gov = hpj__gov_enter(HPJ__GOV_TRAIN);
        if ((st = hpj__trainer_init(&tr, m, ds, bs)) && !m->comm) {
            hpj__gov_leave(gov);
            return st;
        }
    }
    if (!st) {
        order = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n_train, "pretrain");
        mine = m->comm ? (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n_train, "pretrain") : NULL;
        eligible = (uint8_t *)hpj__calloc((size_t)ds->num_graphs * c->L + 1, 1, "pretrain");
        if (!order || !eligible || (m->comm && !mine)) st = HPJ_ERR_NOMEM;
    }
    if (m->comm) {
        if ((st = hpj__dp_open(&dps, m, st, st ? 0 : hpj__dp_print(m, train, n_train, until, max_steps))))
            goto done;
        tr.dp = dp = &dps;
        R = m->comm->size;
        rank = m->comm->rank;
        if (m->epoch >= until) goto done; /* nothing left of the run (rank 0's epoch) */
    }
    if (st) goto done;
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
    if (tr.total_steps == 0 && c->epochs > 0) {
        /* a run of no step would hand back the initial weights as if
           trained (every rank plans the same steps, so all stop here) */
        int32_t big = 0;
        for (i = 0; i < n_train; ++i) big = HPJ__MAX(big, (int32_t)(ds->node_ptr[train[i] + 1] - ds->node_ptr[train[i]]));
        st = hpj__fail(HPJ_ERR_INPUT,
                       "pretrain: nothing to train: no training graph splits into two regions at any resolution "
                       "(K needs K >= 2 and a graph of at least 2 and K / 2 nodes; the largest has %d)",
                       (int)big);
        goto done;
    }
    if (max_steps > 0 && max_steps < tr.total_steps) tr.total_steps = max_steps;
    tr.warmup_steps = (int64_t)(c->warmup * (double)steps_per_epoch);
    memset(&pg, 0, sizeof pg);
    pg.epochs = c->epochs;
    pg.total_steps = tr.total_steps;
    pg.batches = nb;
    {
        /* from the first epoch the model has not done: a resumed run
           draws what the uninterrupted one would have */
        int64_t e0 = m->epoch;
        for (e = e0; e < until; ++e) {
            hpj_rng r = hpj_rng_stream(c->seed ^ 0x0DE5ULL, (uint64_t)e, 0);
            int32_t bi;
            int64_t graphs_done = 0;
            tr.epoch = m->epoch;
            memcpy(order, train, sizeof(int32_t) * (size_t)n_train);
            hpj_rng_shuffle_i32(&r, order, n_train);
            if (dp && c->repartition) {
                /* each rank partitions only the graphs of its slices */
                int32_t nm = 0, j;
                for (bi = 0; bi < nb; ++bi) {
                    int32_t b0 = bi * bs, bn = HPJ__MIN(n_train, b0 + bs) - b0;
                    for (j = b0 + (int32_t)((int64_t)bn * rank / R); j < b0 + (int32_t)((int64_t)bn * (rank + 1) / R); ++j)
                        mine[nm++] = order[j];
                }
                st = hpj__trainer_tokens(&tr, mine, nm, 1, m->epoch);
            } else if (e == e0 || c->repartition) {
                st = hpj__trainer_tokens(&tr, train, n_train, 1, m->epoch);
            }
            if (dp) st = hpj__dp_agree(dp, st, NULL, 0);
            if (st) goto done;
            memset(pg.loss, 0, sizeof pg.loss);
            memset(pg.loss_count, 0, sizeof pg.loss_count);
            pg.epoch = (int)e;
            for (bi = 0; bi < nb; ++bi) {
                int l;
                int32_t b0 = bi * bs, bn = HPJ__MIN(n_train, b0 + bs) - b0;
                /* this rank's slice of the batch (all of it alone) */
                int32_t lo = b0 + (int32_t)((int64_t)bn * rank / R), hi = b0 + (int32_t)((int64_t)bn * (rank + 1) / R);
                hpj__gov_begin(gov, e == e0 && bi == 0);
                for (l = 0; l < c->L; ++l) {
                    double loss;
                    int active;
                    if (max_steps > 0 && m->step >= max_steps) break;
                    if ((st = hpj__run_step(&tr, order + lo, hi - lo, l, &loss, &active))) goto done;
                    if (active) { pg.loss[l] += loss; pg.loss_count[l]++; }
                }
                hpj__gov_end(gov, -1.0);
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
    if (dp) {
        /* (a failure is already the same on every rank, and a failed
           communicator cannot agree: the check is for a run that ended well) */
        if (!st && !dp->failed) st = hpj__dp_end(dp, m, st);
        hpj__dp_close(dp);
    }
    hpj__gov_leave(gov);
    if (m->step > 0) m->adam_state = 1;
    hpj__free(order);
    hpj__free(mine);
    hpj__free(eligible);
    hpj__trainer_free(&tr);
    return st;
}

HPJDEF hpj_status hpj_pretrain(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                               int64_t max_steps, hpj_progress_fn progress, void *user) {
    return hpj__pretrain(m, ds, train, n_train, max_steps, m->cfg.epochs, progress, user);
}

HPJDEF hpj_status hpj_pretrain_until(hpj_model *m, const hpj_dataset *ds, const int32_t *train, int32_t n_train,
                                     int64_t until_epoch, hpj_progress_fn progress, void *user) {
    if (until_epoch < 1 || until_epoch > m->cfg.epochs)
        return hpj__fail(HPJ_ERR_INPUT, "pretrain: stop epoch %lld outside 1..%d", (long long)until_epoch, m->cfg.epochs);
    return hpj__pretrain(m, ds, train, n_train, 0, until_epoch, progress, user);
}

HPJDEF hpj_status hpj_model_loss(hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, int l,
                                 uint64_t sample_seed, double *loss) {
    hpj__trainer tr;
    hpj_status st;
    int active;
    *loss = 0.0;
    if (l < 0 || l >= m->cfg.L) return hpj__fail(HPJ_ERR_INPUT, "model_loss: resolution %d outside 1..%d", l + 1, m->cfg.L);
    if ((st = hpj__trainer_init(&tr, m, ds, n))) return st;
    tr.mode = HPJ__TRAIN_FROZEN;
    tr.apply = 0;
    tr.sample_seed = sample_seed;
    if ((st = hpj__trainer_tokens(&tr, graphs, n, 0, 0)) == HPJ_OK) st = hpj__run_step(&tr, graphs, n, l, loss, &active);
    if (st == HPJ_OK && !active) st = hpj__fail(HPJ_ERR_INPUT, "model_loss: no graph of the batch is eligible at resolution %d", l + 1);
    hpj__trainer_free(&tr);
    return st;
}

/* ==== readout & embeddings ================================================= */

/* The readout's normaliser (hpj__norm_fn): BatchNorm in evaluation mode,
   by the running statistics, which it leaves as they are. */
static void hpj__norm_running(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                              float *rm, float *rv, int N, int D, const float *res, float *sum, hpj__dp *dp) {
    (void)mean;
    (void)rstd;
    (void)dp;
    hpj__bn_eval(out, in, g, b, rm, rv, N, D, 1e-5f, 1, res, sum);
}

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

/* Node copies per embedding chunk: every chunk's buffers are sized by it,
   so it bounds the memory an embedding takes; each graph's embedding is
   the same for any chunking (rows are independent). */
#define HPJ__EMBED_COPIES (1 << 13)

/* train = 0: the fixed evaluation partition; 1: training epoch `epoch`'s. */
static hpj_status hpj__embed(const hpj_model *cm, const hpj_dataset *ds, const int32_t *graphs, int32_t n, int train,
                             int64_t epoch, float *out) {
    hpj_model *m = (hpj_model *)cm; /* eval mode writes nothing to the model */
    const hpj_config *c = &m->cfg;
    hpj__trainer tr;
    hpj_status st;
    hpj__item *items = NULL;
    int32_t i, l, D = m->D, L = c->L, kmax = 1;
    double saved_flops = hpj__flops;
    hpj__gov *gov = NULL;
    int first_chunk = 1;
    for (i = 0; i < n; ++i)
        if (graphs[i] < 0 || graphs[i] >= ds->num_graphs)
            return hpj__fail(HPJ_ERR_INPUT, "embed: graph index %d outside 0..%d", graphs[i], ds->num_graphs - 1);
    hpj__set_threads(c);
    gov = hpj__gov_enter(HPJ__GOV_EMBED);
    if ((st = hpj__trainer_init(&tr, m, ds, 1))) {
        hpj__gov_leave(gov);
        return st;
    }
    if ((st = hpj__trainer_tokens(&tr, graphs, n, train, epoch))) goto done;
    for (i = 0; i < (int32_t)((size_t)ds->num_graphs * L); ++i) kmax = HPJ__MAX(kmax, tr.tk.k[i]);
    memset(out, 0, sizeof(float) * (size_t)n * L * D);
    for (l = 0; l < L; ++l) {
        int32_t start = 0;
        while (start < n) {
            /* a chunk of graphs: up to ~2^16 node copies, at least one graph */
            int32_t end = start, S = 0, B, Tm = 0, b, j;
            int64_t copies = 0, cnt[3];
            hpj__gnn_ws gw;
            hpj__sq_ws pw;
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
            hpj__gov_begin(gov, first_chunk);
            first_chunk = 0;
            hpj__path_count(&tr.tk, items, S, &tr.ps, hpj__path_groups(m), &cnt[0], &cnt[1], &cnt[2]);
            hpj_arena_init_measure(&meas);
            hpj__gnn_bind(&meas, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL, 1);
            hpj__sq_bind(&meas, m, &pw, S);
            hpj__enc_bind(&meas, m, &ew, B, Tm, 0);
            hpj_arena_alloc(&meas, (size_t)B * Tm + 1);
            if (c->target_adj) hpj_arena_floats(&meas, (size_t)B * Tm * Tm + 1);
            if ((st = hpj__arena_ensure(&tr.arena, meas.used))) goto done;
            mark = hpj_arena_mark(&tr.arena);
            hpj__gnn_bind(&tr.arena, m, &gw, S, (int32_t)cnt[0], (int32_t)cnt[1], (int32_t)cnt[2], HPJ__EVAL, 1);
            hpj__sq_bind(&tr.arena, m, &pw, S);
            hpj__enc_bind(&tr.arena, m, &ew, B, Tm, 0);
            mask = (uint8_t *)hpj_arena_alloc(&tr.arena, (size_t)B * Tm + 1);
            if (c->target_adj) adj = hpj_arena_floats(&tr.arena, (size_t)B * Tm * Tm + 1);
            hpj__path_fill(ds, &tr.tk, items, &gw.path, &tr.ps, 0);
            hpj__path_features(m, ds, &gw);
            hpj__gnn_forward(m, &gw, &m->bn[l], hpj__norm_running, 0);
            hpj__sq_forward(m, &pw, &m->bn[l], &tr.tk, items, S, hpj__norm_running);
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
            hpj__gov_end(gov, -1.0);
            start = end;
        }
    }
    for (i = 0; i < (int32_t)((size_t)n * L * D); ++i)
        if (!(out[i] == out[i]) || out[i] > FLT_MAX || out[i] < -FLT_MAX) {
            st = hpj__fail(HPJ_ERR_NUMERIC, "embed: embedding of graph %d is not finite", graphs[i / (L * D)]);
            break;
        }
done:
    hpj__gov_leave(gov);
    hpj__flops = saved_flops;
    hpj__free(items);
    hpj__trainer_free(&tr);
    return st;
}

HPJDEF hpj_status hpj_embed(const hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n, float *out) {
    return hpj__embed(m, ds, graphs, n, 0, 0, out);
}

HPJDEF hpj_status hpj_embed_epoch(const hpj_model *m, const hpj_dataset *ds, const int32_t *graphs, int32_t n,
                                  int64_t epoch, float *out) {
    if (epoch < 0) return hpj__fail(HPJ_ERR_INPUT, "embed: epoch %lld < 0", (long long)epoch);
    return hpj__embed(m, ds, graphs, n, 1, epoch, out);
}


/* ==== probe: implementation ==== */

/* ==== probe: options, models, shared helpers ============================ */

/* Reductions over samples run over a fixed number of row blocks that
   depends on n only (never on the thread count), combined in block order. */
#define HPJ__PROBE_MAXBLK 32  /* most row blocks                                */
#define HPJ__PROBE_MINROWS 64 /* fewest rows per block (small n: fewer blocks)  */
#define HPJ__PROBE_LBFGS_M 10 /* L-BFGS history pairs                           */
#define HPJ__PROBE_PAR 1e5    /* parallel regions only for loops of more flops  */

HPJDEF void hpj_probe_options_default(hpj_probe_options *o) {
    if (!o) return;
    o->alpha = 1.0;
    o->standardize = 0;
    o->tol = 1e-6;
    o->max_iter = 1000;
    o->precision = HPJ_PROBE_MIXED;
}

HPJDEF void hpj_linear_model_free(hpj_linear_model *m) {
    if (!m) return;
    hpj__free(m->W);
    hpj__free(m->b);
    memset(m, 0, sizeof(*m));
}

/* *o = def filled with the defaults when *o is NULL; then the checks. */
static hpj_status hpj__probe_check_options(const char *fn, const hpj_probe_options **op, hpj_probe_options *def) {
    const hpj_probe_options *o = *op;
    if (!o) {
        hpj_probe_options_default(def);
        o = *op = def;
    }
    if (!(o->alpha >= 0.0) || !isfinite(o->alpha))
        return hpj__fail(HPJ_ERR_INPUT, "%s: alpha must be finite and >= 0 (got %g)", fn, o->alpha);
    if (!(o->tol > 0.0) || !isfinite(o->tol))
        return hpj__fail(HPJ_ERR_INPUT, "%s: tol must be finite and > 0 (got %g)", fn, o->tol);
    if (o->max_iter < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: max_iter must be >= 1 (got %d)", fn, o->max_iter);
    if (o->standardize != 0 && o->standardize != 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: standardize must be 0 or 1 (got %d)", fn, o->standardize);
    if (o->precision != HPJ_PROBE_MIXED && o->precision != HPJ_PROBE_DOUBLE)
        return hpj__fail(HPJ_ERR_INPUT, "%s: precision must be HPJ_PROBE_MIXED or HPJ_PROBE_DOUBLE (got %d)", fn,
                         o->precision);
    return HPJ_OK;
}

/* out's W (c, d) and b (c); HPJ_ERR_NOMEM (out zeroed) if they do not fit. */
static hpj_status hpj__probe_model_alloc(const char *fn, hpj_linear_model *out, int c, int d) {
    out->d = d;
    out->c = c;
    out->W = (float *)hpj__alloc(sizeof(float) * (size_t)c * d, fn);
    out->b = (float *)hpj__alloc(sizeof(float) * (size_t)c, fn);
    if (out->W && out->b) return HPJ_OK;
    hpj_linear_model_free(out);
    return HPJ_ERR_NOMEM;
}

/* One allocation carved into double buffers, each 64-byte aligned: the
   table lists each buffer's pointer and its length in doubles. Returns the
   block to free, or NULL (reason recorded) on overflow or out of memory. */
typedef struct hpj__probe_buf {
    double **p;
    size_t count;
} hpj__probe_buf;

static void *hpj__probe_carve(const char *fn, const hpj__probe_buf *buf, int nbuf) {
    size_t total = 64, b;
    unsigned char *mem, *q;
    int i;
    for (i = 0; i < nbuf; ++i) {
        b = hpj_arena_need(buf[i].count, sizeof(double));
        if ((buf[i].count && !b) || hpj__add_size(total, b, &total)) {
            hpj__fail(HPJ_ERR_NOMEM, "%s: workspace size overflows", fn);
            return NULL;
        }
    }
    mem = (unsigned char *)hpj__alloc(total, fn);
    if (!mem) return NULL;
    q = (unsigned char *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    for (i = 0; i < nbuf; ++i) {
        *buf[i].p = (double *)q;
        q += hpj_arena_need(buf[i].count, sizeof(double));
    }
    return mem;
}
#define HPJ__PROBE_CARVE(fn, table) hpj__probe_carve((fn), (table), (int)(sizeof(table) / sizeof((table)[0])))

static int hpj__probe_nblocks(int n) {
    int b = n / HPJ__PROBE_MINROWS;
    return b < 1 ? 1 : (b > HPJ__PROBE_MAXBLK ? HPJ__PROBE_MAXBLK : b);
}
/* First row of block b of nb over n rows. */
static int hpj__probe_block_lo(int n, int nb, int b) { return (int)(((int64_t)n * b) / nb); }

/* Reports the first non-finite entry of A (n, d) as HPJ_ERR_NUMERIC. */
static hpj_status hpj__probe_bad_value(const char *fn, const char *what, const float *A, int n, int d) {
    size_t i, j;
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < (size_t)d; ++j) {
            float v = A[i * (size_t)d + j];
            if (!isfinite(v))
                return hpj__fail(HPJ_ERR_NUMERIC, "%s: %s[%zu,%zu] is %s", fn, what, i, j, v != v ? "nan" : "inf");
        }
    return hpj__fail(HPJ_ERR_NUMERIC, "%s: the entries of %s overflow when summed", fn, what);
}

/* ---- vector primitives ----
   Every sum over an index j runs in 8 interleaved partial sums (sum q
   takes the j = q mod 8 terms, a short tail goes to the first ones)
   combined as ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)). Eight independent
   sums keep the additions from waiting on one another, and the order is
   fixed, so a result never depends on the thread count. Products and sums
   are separate roundings (no fused multiply-add). */
static double hpj__probe_dot(const double *a, const double *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += a[j + q] * b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += a[j] * b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
/* the same with a float vector a (widened to double) */
static double hpj__probe_dot_fd(const float *a, const double *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += (double)a[j + q] * b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += (double)a[j] * b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
/* ... and with two float vectors */
static double hpj__probe_dot_ff(const float *a, const float *b, int len) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0, q;
    for (; j + 8 <= len; j += 8)
        for (q = 0; q < 8; ++q) s[q] += (double)a[j + q] * (double)b[j + q];
    for (q = 0; j < len; ++j, ++q) s[q] += (double)a[j] * (double)b[j];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
/* y[j] += alpha a[j] */
static void hpj__probe_axpy_fd(double *y, const float *a, double alpha, int len) {
    int j;
    for (j = 0; j < len; ++j) y[j] += alpha * (double)a[j];
}

/* out[idx] = sum over blocks b (in order) of part[b * len + idx]. */
static void hpj__probe_sum_blocks(const double *part, int nb, size_t len, double *out) {
    int64_t i;
    HPJ__OMP(parallel for schedule(static) if ((double)len * nb > HPJ__PROBE_PAR))
    for (i = 0; i < (int64_t)len; ++i) {
        double s = part[i];
        int b;
        for (b = 1; b < nb; ++b) s += part[(size_t)b * len + (size_t)i];
        out[i] = s;
    }
}

/* Column means mu (d) and scales s (d): with standardize the inverse
   population stds (1 for constant columns), else 1. part: (nb, d).
   Returns 1 if a sum is not finite (a NaN/inf entry or overflow). */
static int hpj__probe_column_stats(const float *X, int n, int d, int standardize, double *mu, double *s, double *part) {
    const int nb = hpj__probe_nblocks(n);
    int b, pass;
    size_t j;
    for (j = 0; j < (size_t)d; ++j) s[j] = 1.0;
    for (pass = 0; pass < (standardize ? 2 : 1); ++pass) {
        HPJ__OMP(parallel for schedule(dynamic, 1) if (nb > 1 && (double)n * d > HPJ__PROBE_PAR))
        for (b = 0; b < nb; ++b) {
            double *p = part + (size_t)b * d;
            int i, i1 = hpj__probe_block_lo(n, nb, b + 1);
            memset(p, 0, sizeof(double) * (size_t)d);
            for (i = hpj__probe_block_lo(n, nb, b); i < i1; ++i) {
                const float *x = X + (size_t)i * d;
                size_t jj;
                if (pass == 0)
                    for (jj = 0; jj < (size_t)d; ++jj) p[jj] += (double)x[jj];
                else
                    for (jj = 0; jj < (size_t)d; ++jj) p[jj] += ((double)x[jj] - mu[jj]) * ((double)x[jj] - mu[jj]);
            }
        }
        hpj__probe_sum_blocks(part, nb, (size_t)d, pass == 0 ? mu : s);
        for (j = 0; j < (size_t)d; ++j) {
            if (pass == 0) {
                if (!isfinite(mu[j])) return 1;
                mu[j] /= (double)n;
            } else {
                double sd = sqrt(s[j] / (double)n);
                if (!isfinite(sd)) return 1;
                s[j] = (sd > 1e-12 * (1.0 + fabs(mu[j]))) ? 1.0 / sd : 1.0;
            }
        }
    }
    return 0;
}

/* ---- the linear map on the centred features ----
   Both probes fit scores z_i = W a_i + c on the centred, maybe scaled
   features a_i = (x_i - mu) .* s without forming them: z_i = Veff x_i +
   ceff with Veff = W .* s and ceff = c - Veff mu, and their gradients
   sum_i r_i a_i^T = (sum_i r_i x_i^T - (sum_i r_i) mu^T) .* s.
   One pass visits the rows of X inside fixed row blocks. Per row i it
   either scores z_i and turns it into a residual r_i (by a callback; r = z
   without one) or takes r_i from given residuals R, and it can accumulate
   G_blk += r_i x_i^T and gs_blk += r_i. Float elements are widened to
   double as they are read. Every score is a full-length dot in
   hpj__probe_dot's order; the sums over rows run in row order inside a
   block, blocks in block order. */
typedef void (*hpj__probe_rowfn)(void *ctx, int blk, int i, int nr, const double *z /*(nr, K)*/,
                                 double *r /*(nr, K)*/);

typedef struct hpj__probe_lin {
    const float *X;       /* (n, d)                                     */
    int n, d, K, nb;      /* nb = hpj__probe_nblocks(n)                 */
    const double *mu, *s; /* (d), (d)                                   */
    double alpha;         /* the penalty                                */
    double *Veff, *ceff;  /* (K, d), (K)                                */
    double *G, *gs;       /* (nb, K, d), (nb, K) block partials         */
    double *Graw, *gsum;  /* (K, d), (K): sum_i r_i x_i^T, sum_i r_i    */
    double *work;         /* (nb, hpj__probe_pass_work(K))              */
    /* the current pass (set by hpj__probe_lin_pass and _tmul): */
    const double *R;      /* (n, K) given residuals, or NULL: score     */
    double *Z;            /* (n, K) scores out, or NULL                 */
    hpj__probe_rowfn fn;  /* residuals from scores; NULL: r = z         */
    void *ctx;
    int grad;             /* 1: accumulate G and gs                     */
} hpj__probe_lin;

/* Scratch per block: scores and residuals of 8 rows, the group the fast
   part works in (the reference uses the first row's worth). */
static size_t hpj__probe_pass_work(int K) { return (size_t)2 * 8 * (size_t)K; }

#ifndef HPJ_REFERENCE
static void hpj__fast_probe_pass_block(const hpj__probe_lin *A, int blk);
#endif

static void hpj__probe_pass_block(const hpj__probe_lin *A, int blk) {
    const int K = A->K, d = A->d;
    const int i0 = hpj__probe_block_lo(A->n, A->nb, blk), i1 = hpj__probe_block_lo(A->n, A->nb, blk + 1);
    double *z = A->work + (size_t)blk * hpj__probe_pass_work(K), *r = z + K; /* (K), (K) */
    double *G = A->G + (size_t)blk * K * d, *gs = A->gs + (size_t)blk * K;
    int i, k;
#ifndef HPJ_REFERENCE
    if (hpj__fast()) { hpj__fast_probe_pass_block(A, blk); return; } /* fast: rows in groups of 8 (see below) */
#endif
    if (A->grad) {
        memset(G, 0, sizeof(double) * (size_t)K * d);
        memset(gs, 0, sizeof(double) * (size_t)K);
    }
    for (i = i0; i < i1; ++i) {
        const float *x = A->X + (size_t)i * d;
        if (!A->R) {
            for (k = 0; k < K; ++k) z[k] = hpj__probe_dot_fd(x, A->Veff + (size_t)k * d, d) + A->ceff[k];
            if (A->Z) memcpy(A->Z + (size_t)i * K, z, sizeof(double) * (size_t)K);
            if (A->fn) A->fn(A->ctx, blk, i, 1, z, r);
            else memcpy(r, z, sizeof(double) * (size_t)K);
        } else {
            memcpy(r, A->R + (size_t)i * K, sizeof(double) * (size_t)K);
        }
        if (A->grad)
            for (k = 0; k < K; ++k) {
                gs[k] += r[k];
                hpj__probe_axpy_fd(G + (size_t)k * d, x, r[k], d);
            }
    }
}

static void hpj__probe_lin_init(hpj__probe_lin *A, const float *X, int n, int d, int K, const double *mu,
                                const double *s, double alpha) {
    A->X = X;
    A->n = n;
    A->d = d;
    A->K = K;
    A->nb = hpj__probe_nblocks(n);
    A->mu = mu;
    A->s = s;
    A->alpha = alpha;
}

/* Veff and ceff for the weights W (K, d) and intercepts c (K; NULL: 0). */
static void hpj__probe_lin_weights(hpj__probe_lin *A, const double *W, const double *c) {
    int k;
    size_t j;
    for (k = 0; k < A->K; ++k) {
        double *v = A->Veff + (size_t)k * A->d;
        const double *w = W + (size_t)k * A->d;
        for (j = 0; j < (size_t)A->d; ++j) v[j] = w[j] * A->s[j];
        A->ceff[k] = c ? c[k] - hpj__probe_dot(v, A->mu, A->d) : -hpj__probe_dot(v, A->mu, A->d);
    }
}

/* Runs the pass the caller set up; with grad (K, d), also grad =
   sum_i r_i a_i^T (+ alpha w when w is not NULL) and gsum = sum_i r_i. */
static void hpj__probe_lin_run(hpj__probe_lin *A, double *grad, const double *w) {
    const int K = A->K, d = A->d;
    int b, k;
    size_t j;
    A->grad = grad != NULL;
    HPJ__OMP(parallel for schedule(dynamic, 1) if (A->nb > 1 && (double)A->n * d * K > HPJ__PROBE_PAR))
    for (b = 0; b < A->nb; ++b) hpj__probe_pass_block(A, b);
    if (!grad) return;
    hpj__probe_sum_blocks(A->G, A->nb, (size_t)K * d, A->Graw);
    hpj__probe_sum_blocks(A->gs, A->nb, (size_t)K, A->gsum);
    for (k = 0; k < K; ++k)
        for (j = 0; j < (size_t)d; ++j) {
            double a = (A->Graw[(size_t)k * d + j] - A->gsum[k] * A->mu[j]) * A->s[j];
            grad[(size_t)k * d + j] = w ? a + A->alpha * w[(size_t)k * d + j] : a;
        }
}

/* One pass over X: the scores of Veff, ceff (written to Z if not NULL),
   the residuals r_i = fn(z_i) (r = z when fn is NULL) and, with grad, the
   gradient of hpj__probe_lin_run. */
static void hpj__probe_lin_pass(hpj__probe_lin *A, hpj__probe_rowfn fn, void *ctx, double *Z, double *grad,
                                const double *w) {
    A->R = NULL;
    A->Z = Z;
    A->fn = fn;
    A->ctx = ctx;
    hpj__probe_lin_run(A, grad, w);
}

/* grad (K, d) = sum_i r_i a_i^T for the given residuals R (n, K): the
   transposed map, applied. */
static void hpj__probe_lin_tmul(hpj__probe_lin *A, const double *R, double *grad) {
    A->R = R;
    hpj__probe_lin_run(A, grad, NULL);
}

static double hpj__probe_maxabs(const double *a, size_t n) {
    double m = 0.0;
    size_t j;
    for (j = 0; j < n; ++j) m = HPJ__MAX(m, fabs(a[j]));
    return m;
}

/* ---- L-BFGS two-loop recursion ---- */
typedef struct hpj__probe_lbfgs {
    int P, cnt, head; /* dimension, stored pairs, next slot */
    double *S, *Y;    /* (HPJ__PROBE_LBFGS_M, P) */
    double rho[HPJ__PROBE_LBFGS_M], al[HPJ__PROBE_LBFGS_M];
} hpj__probe_lbfgs;

static double hpj__probe_dot_long(const double *a, const double *b, size_t n) {
    /* long serial dot in the fixed 8-lane order, chunked to stay in int */
    double s = 0.0;
    size_t off = 0;
    while (off < n) {
        int len = (int)HPJ__MIN(n - off, (size_t)1 << 20);
        s += hpj__probe_dot(a + off, b + off, len);
        off += (size_t)len;
    }
    return s;
}

/* p = -H g; with no pairs stored p = -g. */
static void hpj__probe_lbfgs_two_loop(hpj__probe_lbfgs *h, const double *g, double *p) {
    size_t P = (size_t)h->P, j;
    int q, idx;
    for (j = 0; j < P; ++j) p[j] = -g[j];
    if (h->cnt == 0) return;
    for (q = 0; q < h->cnt; ++q) { /* newest to oldest */
        idx = (h->head - 1 - q + 2 * HPJ__PROBE_LBFGS_M) % HPJ__PROBE_LBFGS_M;
        h->al[idx] = h->rho[idx] * hpj__probe_dot_long(h->S + idx * P, p, P);
        for (j = 0; j < P; ++j) p[j] -= h->al[idx] * h->Y[idx * P + j];
    }
    idx = (h->head - 1 + HPJ__PROBE_LBFGS_M) % HPJ__PROBE_LBFGS_M;
    {
        double yy = hpj__probe_dot_long(h->Y + idx * P, h->Y + idx * P, P);
        double gamma = yy > 0 ? 1.0 / (h->rho[idx] * yy) : 1.0;
        for (j = 0; j < P; ++j) p[j] *= gamma;
    }
    for (q = h->cnt - 1; q >= 0; --q) { /* oldest to newest */
        double beta;
        idx = (h->head - 1 - q + 2 * HPJ__PROBE_LBFGS_M) % HPJ__PROBE_LBFGS_M;
        beta = h->rho[idx] * hpj__probe_dot_long(h->Y + idx * P, p, P);
        for (j = 0; j < P; ++j) p[j] += (h->al[idx] - beta) * h->S[idx * P + j];
    }
}

/* The search direction p = -H g and the slope g.p; when p is no descent
   direction the history is dropped and p = -g (steepest descent). */
static double hpj__probe_lbfgs_dir(hpj__probe_lbfgs *h, const double *g, double *p) {
    double d0;
    hpj__probe_lbfgs_two_loop(h, g, p);
    d0 = hpj__probe_dot_long(g, p, (size_t)h->P);
    if (!(d0 < 0)) {
        h->cnt = 0;
        hpj__probe_lbfgs_two_loop(h, g, p);
        d0 = hpj__probe_dot_long(g, p, (size_t)h->P);
    }
    return d0;
}

/* Stores the pair (s, y) = (x_new - x_old, g_new - g_old) when the
   curvature s.y is safely positive. */
static void hpj__probe_lbfgs_push(hpj__probe_lbfgs *h, const double *xn, const double *xo, const double *gn,
                              const double *go) {
    size_t P = (size_t)h->P, j;
    double *s = h->S + (size_t)h->head * P, *y = h->Y + (size_t)h->head * P, sy, ss, yy;
    for (j = 0; j < P; ++j) {
        s[j] = xn[j] - xo[j];
        y[j] = gn[j] - go[j];
    }
    sy = hpj__probe_dot_long(s, y, P);
    ss = hpj__probe_dot_long(s, s, P);
    yy = hpj__probe_dot_long(y, y, P);
    if (!(sy > 1e-12 * sqrt(ss * yy)) || !isfinite(sy)) return;
    h->rho[h->head] = 1.0 / sy;
    h->head = (h->head + 1) % HPJ__PROBE_LBFGS_M;
    if (h->cnt < HPJ__PROBE_LBFGS_M) ++h->cnt;
}

static void hpj__probe_swap(double **a, double **b) {
    double *t = *a;
    *a = *b;
    *b = t;
}

/* Moves the iterate (x, g) to the accepted trial point (x1, g1): stores
   their pair, swaps the buffers, returns the new ||g||_inf. */
static double hpj__probe_lbfgs_move(hpj__probe_lbfgs *h, double **x, double **x1, double **g, double **g1) {
    hpj__probe_lbfgs_push(h, *x1, *x, *g1, *g);
    hpj__probe_swap(x, x1);
    hpj__probe_swap(g, g1);
    return hpj__probe_maxabs(*g, (size_t)h->P);
}


/* ---- losses of one row: value, and residual r = dloss/dz ----
   binary: z (1), y in {0,1}: log(1 + e^z) - y z; r = sigmoid(z) - y
   softmax: z (K), y in 0..K-1: logsumexp(z) - z_y; r = softmax(z) - e_y
   squared: z (K), targets t (K): sum (z - t)^2; r = 2 (z - t) */
enum { HPJ__PROBE_BINARY = 0, HPJ__PROBE_SOFTMAX = 1, HPJ__PROBE_SQUARED = 2 };

static double hpj__probe_loss_row(int kind, int K, const double *z, int32_t y, const double *t, double *r) {
    int k;
    if (kind == HPJ__PROBE_BINARY) {
        double zz = z[0], e, sp, p;
        if (zz > 0) {
            e = exp(-zz);
            sp = zz + log1p(e);
            p = 1.0 / (1.0 + e);
        } else {
            e = exp(zz);
            sp = log1p(e);
            p = e / (1.0 + e);
        }
        if (r) r[0] = p - (double)y;
        return sp - (double)y * zz;
    }
    if (kind == HPJ__PROBE_SOFTMAX) {
        double m = z[0], se = 0.0;
        for (k = 1; k < K; ++k) m = HPJ__MAX(m, z[k]);
        for (k = 0; k < K; ++k) {
            double e = exp(z[k] - m);
            se += e;
            if (r) r[k] = e;
        }
        if (r) {
            for (k = 0; k < K; ++k) r[k] /= se;
            r[y] -= 1.0;
        }
        return m + log(se) - z[y];
    }
    {
        double l = 0.0;
        for (k = 0; k < K; ++k) {
            double e = z[k] - t[k];
            l += e * e;
            if (r) r[k] = 2.0 * e;
        }
        return l;
    }
}

/* ==== probe: logistic regression (L-BFGS) =============================== */

/* The problem in its internal parametrisation: z_i = W a_i + c on the
   centred features a_i (hpj__probe_lin), so theta = [W (K, d), c (K)],
   F = sum_i loss(z_i, y_i) + alpha/2 ||W||^2. */
typedef struct hpj__probe_logreg {
    hpj__probe_lin lin;
    const int32_t *y;
    int kind;
    double loss[HPJ__PROBE_MAXBLK];
} hpj__probe_logreg;

static void hpj__probe_logreg_residuals(void *ctx, int blk, int i, int nr, const double *z, double *r) {
    hpj__probe_logreg *L = (hpj__probe_logreg *)ctx;
    const int K = L->lin.K;
    int rr;
    double l = 0.0;
    for (rr = 0; rr < nr; ++rr)
        l += hpj__probe_loss_row(L->kind, K, z + (size_t)rr * K, L->y[i + rr], NULL, r + (size_t)rr * K);
    L->loss[blk] += l;
}

/* F and g at theta; Z (n, K) receives the scores. One pass over X. */
static double hpj__probe_logreg_eval(hpj__probe_logreg *L, const double *theta, double *g, double *Z) {
    const size_t KD = (size_t)L->lin.K * L->lin.d;
    hpj__gov *gov;
    double F = 0.0;
    int k, b;
    hpj__probe_lin_weights(&L->lin, theta, theta + KD);
    for (b = 0; b < L->lin.nb; ++b) L->loss[b] = 0.0;
    gov = hpj__gov_enter(HPJ__GOV_PROBE); /* an L-BFGS fit makes hundreds of these passes */
    hpj__gov_begin(gov, 0);
    hpj__probe_lin_pass(&L->lin, hpj__probe_logreg_residuals, L, Z, g, theta);
    hpj__gov_end(gov, (double)L->lin.n * L->lin.d * L->lin.K + 1.0);
    hpj__gov_leave(gov);
    for (b = 0; b < L->lin.nb; ++b) F += L->loss[b];
    for (k = 0; k < L->lin.K; ++k) g[KD + k] = L->lin.gsum[k];
    return F + 0.5 * L->lin.alpha * hpj__probe_dot_long(theta, theta, KD);
}

/* phi(t) = F(theta + t p) from the scores Z0 at theta and Z1 at theta + p
   (scores are affine in t) and the penalty's quadratic in t:
   ww = W.W, wp = W.P, pp = P.P. Also phi'(t). O(n K). */
static double hpj__probe_logreg_phi(const hpj__probe_logreg *L, const double *Z0, const double *Z1, double t, double ww,
                               double wp, double pp, double *dphi, double *zt /*(2K)*/) {
    const int K = L->lin.K;
    double f = 0.0, df = 0.0;
    int i, k;
    for (i = 0; i < L->lin.n; ++i) {
        const double *a = Z0 + (size_t)i * K, *b = Z1 + (size_t)i * K;
        double *r = zt + K;
        for (k = 0; k < K; ++k) zt[k] = a[k] + t * (b[k] - a[k]);
        f += hpj__probe_loss_row(L->kind, K, zt, L->y[i], NULL, r);
        for (k = 0; k < K; ++k) df += r[k] * (b[k] - a[k]);
    }
    *dphi = df + L->lin.alpha * (wp + t * pp);
    return f + 0.5 * L->lin.alpha * (ww + 2.0 * t * wp + t * t * pp);
}

/* Strong-Wolfe step along p for the convex phi, by bracketing and
   safeguarded secant steps on phi' (each trial costs O(n K), no pass over
   X). Returns the step, or 0 when no acceptable decrease exists (the
   iterate sits at the floor of the arithmetic). Badly scaled features
   (say 1e12) make a unit step move the scores by 1e13: phi is then linear
   over the whole bracket but for a kink near t = 1e-13, so secant steps
   shrink it by only a constant factor and 60 trials never reach the
   decrease. While no decrease has been seen and the initial slope would
   take phi (>= 0) to zero before 1 % of the bracket, the next trial is
   that zero of the linear model, f0 / -d0. A well-scaled problem never
   takes this branch. */
static double hpj__probe_logreg_search(const hpj__probe_logreg *L, const double *Z0, const double *Z1, double f0, double d0,
                                  double ww, double wp, double pp, double *zt) {
    const double c1 = 1e-4, c2 = 0.9, slack = 8.0 * DBL_EPSILON * fabs(f0);
    double lo = 0.0, dlo = d0, hi = -1.0, dhi = 0.0, t = 1.0, best_t = 0.0, best_f = f0;
    int it;
    for (it = 0; it < 60; ++it) {
        double dt, ft = hpj__probe_logreg_phi(L, Z0, Z1, t, ww, wp, pp, &dt, zt);
        if (!isfinite(ft)) { /* overflow far out: shrink */
            hi = t;
            dhi = HUGE_VAL;
            t = lo + 0.1 * (hi - lo);
            continue;
        }
        if (ft < best_f) {
            best_f = ft;
            best_t = t;
        }
        if (ft <= f0 + c1 * t * d0 + slack && fabs(dt) <= c2 * fabs(d0)) return t;
        if (dt < 0 && ft <= f0 + c1 * t * d0 + slack) {
            lo = t;
            dlo = dt;
        } else {
            hi = t;
            dhi = dt;
        }
        if (hi < 0) {
            t = 4.0 * lo; /* still descending: expand */
        } else {
            double w = hi - lo, tn;
            if (isfinite(dhi) && dhi > dlo) tn = lo - dlo * w / (dhi - dlo);
            else tn = lo + 0.5 * w;
            if (!(tn > lo + 0.05 * w)) tn = lo + 0.05 * w;
            if (!(tn < hi - 0.05 * w)) tn = hi - 0.05 * w;
            if (best_t == 0.0 && lo == 0.0 && f0 < 0.01 * -d0 * hi) tn = f0 / -d0; /* see above */
            t = tn;
            if (w <= 1e-14 * HPJ__MAX(1.0, hi)) break;
        }
    }
    return best_t;
}

HPJDEF hpj_status hpj_logreg_fit(const float *X, const int32_t *y, int n, int d, int C, const hpj_probe_options *o,
                                 hpj_linear_model *out) {
    static const char *fn = "logreg_fit";
    hpj_probe_options def;
    hpj__probe_logreg L;
    hpj__probe_lbfgs H;
    hpj_status st;
    size_t P, KD, j;
    int K, nb, i, k, it, iters = 0;
    void *mem = NULL;
    double *theta, *theta1, *g, *g1, *p, *Z0, *Z1, *mu, *s, *part, *zt;
    double F, F1, thresh, gmax;
    if (out) memset(out, 0, sizeof(*out));
    if (!X || !y || !out) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !X ? "X" : !y ? "y" : "out");
    if (n < 1 || d < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: need n >= 1 and d >= 1 (got n=%d d=%d)", fn, n, d);
    if (C < 2) return hpj__fail(HPJ_ERR_INPUT, "%s: need C >= 2 classes (got %d)", fn, C);
    if ((st = hpj__probe_check_options(fn, &o, &def)) != HPJ_OK) return st;
    for (i = 0; i < n; ++i)
        if (y[i] < 0 || y[i] >= C)
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
    K = C == 2 ? 1 : C;
    nb = hpj__probe_nblocks(n);
    KD = (size_t)K * d;
    P = KD + (size_t)K;
    if (P > (size_t)INT_MAX) return hpj__fail(HPJ_ERR_INPUT, "%s: %zu parameters are too many", fn, P);
    {
        hpj__probe_buf buf[] = {{&theta, P}, {&theta1, P}, {&g, P}, {&g1, P}, {&p, P}, {&L.lin.Veff, P},
                                {&L.lin.Graw, P}, {&L.lin.ceff, P}, {&H.S, (size_t)HPJ__PROBE_LBFGS_M * P},
                                {&H.Y, (size_t)HPJ__PROBE_LBFGS_M * P}, {&Z0, (size_t)n * K}, {&Z1, (size_t)n * K},
                                {&L.lin.G, (size_t)nb * KD}, {&L.lin.gs, (size_t)nb * K},
                                {&L.lin.work, (size_t)nb * hpj__probe_pass_work(K)}, {&mu, (size_t)d}, {&s, (size_t)d},
                                {&part, (size_t)nb * d}, {&zt, (size_t)4 * K + 4}};
        mem = HPJ__PROBE_CARVE(fn, buf);
    }
    if (!mem) return HPJ_ERR_NOMEM;
    L.lin.gsum = L.lin.ceff + K; /* ceff (K) and gsum (K) share the P-sized slot */
    if (hpj__probe_column_stats(X, n, d, o->standardize, mu, s, part)) {
        hpj__free(mem);
        return hpj__probe_bad_value(fn, "X", X, n, d);
    }
    hpj__probe_lin_init(&L.lin, X, n, d, K, mu, s, o->alpha);
    L.y = y;
    L.kind = K == 1 ? HPJ__PROBE_BINARY : HPJ__PROBE_SOFTMAX;
    H.P = (int)P;
    H.cnt = 0;
    H.head = 0;
    memset(theta, 0, sizeof(double) * P);
    F = hpj__probe_logreg_eval(&L, theta, g, Z0);
    if (!isfinite(F)) {
        hpj__free(mem);
        return hpj__fail(HPJ_ERR_NUMERIC, "%s: the loss at W = 0 is not finite", fn);
    }
    gmax = hpj__probe_maxabs(g, P);
    thresh = o->tol * HPJ__MAX(1.0, gmax);
    for (it = 0; it < o->max_iter && gmax > thresh; ++it) {
        double d0, d1, t, ww, wp, pp;
        d0 = hpj__probe_lbfgs_dir(&H, g, p);
        if (H.cnt == 0) { /* first step: unit length, the search scales it */
            double nrm = sqrt(hpj__probe_dot_long(p, p, P));
            for (j = 0; j < P; ++j) p[j] /= nrm;
            d0 /= nrm;
        }
        for (j = 0; j < P; ++j) theta1[j] = theta[j] + p[j];
        F1 = hpj__probe_logreg_eval(&L, theta1, g1, Z1);
        d1 = hpj__probe_dot_long(g1, p, P);
        ww = hpj__probe_dot_long(theta, theta, KD);
        wp = hpj__probe_dot_long(theta, p, KD);
        pp = hpj__probe_dot_long(p, p, KD);
        iters = it + 1;
        if (isfinite(F1) && F1 <= F + 1e-4 * d0 + 8.0 * DBL_EPSILON * fabs(F) && fabs(d1) <= 0.9 * fabs(d0)) {
            t = 1.0;
        } else {
            t = hpj__probe_logreg_search(&L, Z0, Z1, F, d0, ww, wp, pp, zt);
            if (t == 0.0) break; /* no decrease representable: done */
            for (j = 0; j < P; ++j) theta1[j] = theta[j] + t * p[j];
            F1 = hpj__probe_logreg_eval(&L, theta1, g1, Z1);
        }
        if (!isfinite(F1)) {
            hpj__free(mem);
            return hpj__fail(HPJ_ERR_NUMERIC, "%s: the loss became %g at iteration %d", fn, F1, it + 1);
        }
        gmax = hpj__probe_lbfgs_move(&H, &theta, &theta1, &g, &g1);
        hpj__probe_swap(&Z0, &Z1);
        F = F1;
    }
    /* back to the original features: W_orig = W .* s, b = c - W_orig mu */
    if (hpj__probe_model_alloc(fn, out, C, d)) {
        hpj__free(mem);
        return HPJ_ERR_NOMEM;
    }
    for (k = 0; k < K; ++k) {
        double *w = theta + (size_t)k * d, bb;
        for (j = 0; j < (size_t)d; ++j) w[j] *= s[j];
        bb = theta[KD + k] - hpj__probe_dot(w, mu, d);
        if (K == 1) {
            for (j = 0; j < (size_t)d; ++j) {
                out->W[j] = (float)(-0.5 * w[j]);
                out->W[(size_t)d + j] = (float)(0.5 * w[j]);
            }
            out->b[0] = (float)(-0.5 * bb);
            out->b[1] = (float)(0.5 * bb);
        } else {
            for (j = 0; j < (size_t)d; ++j) out->W[(size_t)k * d + j] = (float)w[j];
            out->b[k] = (float)bb;
        }
    }
    out->iters = iters;
    out->grad_norm = gmax;
    hpj__free(mem);
    return HPJ_OK;
}

/* ==== probe: dense linear algebra for ridge (Gram matrix, Cholesky) ===== */

/* The normal equations of ridge in double: the Gram matrix of the centred
   (and maybe scaled) features, its Cholesky factor L L^T, and a solve with
   it. (The fast part forms and factors the Gram matrix in float instead,
   with hpj_gemm, and leaves the last digits to the refinement of the
   ridge section.) */
#define HPJ__PROBE_DKC 128 /* Gram: operand columns per slab */

/* Element (i, k) of the operand A whose Gram matrix A A^T is the ridge
   system: the centred, maybe scaled features X_c = (X - mu) .* s (n, d) in
   the dual, their transpose (d, n) in the primal. */
static double hpj__probe_operand_at(const hpj__probe_lin *A, int dual, int i, int k) {
    const int row = dual ? i : k, col = dual ? k : i;
    return ((double)A->X[(size_t)row * A->d + col] - A->mu[col]) * A->s[col];
}

/* Cd (m, m) lower part = A A^T in double for that operand A (m, k): m = n
   and k = d in the dual, the other way round in the primal. slab: (m, DKC)
   doubles. */
static void hpj__probe_gram_d(const hpj__probe_lin *A, int dual, double *Cd, double *slab) {
    const int m = dual ? A->n : A->d, k = dual ? A->d : A->n;
    int k0;
    for (k0 = 0; k0 < k; k0 += HPJ__PROBE_DKC) {
        const int kc = HPJ__MIN(HPJ__PROBE_DKC, k - k0);
        int i;
        HPJ__OMP(parallel for schedule(static) if ((double)m * kc > HPJ__PROBE_PAR))
        for (i = 0; i < m; ++i) {
            double *o = slab + (size_t)i * HPJ__PROBE_DKC;
            int kk;
            for (kk = 0; kk < kc; ++kk) o[kk] = hpj__probe_operand_at(A, dual, i, k0 + kk);
        }
        HPJ__OMP(parallel for schedule(dynamic, 16) if ((double)m * m * kc > 2 * HPJ__PROBE_PAR))
        for (i = 0; i < m; ++i) {
            const double *si = slab + (size_t)i * HPJ__PROBE_DKC;
            double *ci = Cd + (size_t)i * m;
            int j;
            for (j = 0; j <= i; ++j) {
                double v = hpj__probe_dot(si, slab + (size_t)j * HPJ__PROBE_DKC, kc);
                ci[j] = k0 ? ci[j] + v : v;
            }
        }
    }
}

/* In-place lower Cholesky of Cd (m, m), left-looking by rows. Returns -1
   or the index of a pivot below 1e-14 of its diagonal entry (the matrix is
   singular to double precision). */
static int hpj__probe_cholesky_d(double *A, int m) {
    int j;
    for (j = 0; j < m; ++j) {
        const double ajj = A[(size_t)j * m + j];
        double dj = ajj - hpj__probe_dot(A + (size_t)j * m, A + (size_t)j * m, j);
        int i;
        if (!(dj > 1e-14 * ajj) || !isfinite(dj)) return j; /* (numerically) singular */
        dj = sqrt(dj);
        A[(size_t)j * m + j] = dj;
        HPJ__OMP(parallel for schedule(static) if ((double)(m - j) * j > HPJ__PROBE_PAR))
        for (i = j + 1; i < m; ++i)
            A[(size_t)i * m + j] = (A[(size_t)i * m + j] - hpj__probe_dot(A + (size_t)i * m, A + (size_t)j * m, j)) / dj;
    }
    return -1;
}

/* x (t, m) = (L L^T)^-1 x in place with the double factor L (m, m): the
   preconditioner argument of hpj__probe_pcg. */
static void hpj__probe_cholsolve_d(const void *factor, int m, int t, double *x) {
    const double *Lm = (const double *)factor;
    int c, i, j;
    for (c = 0; c < t; ++c) {
        double *y = x + (size_t)c * m;
        for (i = 0; i < m; ++i) y[i] = (y[i] - hpj__probe_dot(Lm + (size_t)i * m, y, i)) / Lm[(size_t)i * m + i];
        for (i = m - 1; i >= 0; --i) {
            const double *li = Lm + (size_t)i * m;
            y[i] /= li[i];
            for (j = 0; j < i; ++j) y[j] -= li[j] * y[i];
        }
    }
}

/* ==== probe: ridge regression ============================================ */

/* A = (X - 1 mu^T) diag(s) (the centred, maybe scaled features, as
   hpj__probe_lin applies them). The system is (A^T A + alpha I) w = A^T y_c
   in the primal (m = d) and (A A^T + alpha I) a = y_c in the dual (m = n);
   vectors are (t, m). */
typedef struct hpj__probe_ridge {
    hpj__probe_lin lin;           /* K = t targets                            */
    int dual, m;
    double *b, *x, *r, *z, *p, *q; /* (t, m): right-hand side, solution, CG  */
    double *Zb, *Rb, *u;          /* (n, t), (n, t), (t, d)                   */
} hpj__probe_ridge;

/* out (cols, rows) = a^T for a (rows, cols). */
static void hpj__probe_transpose(const double *a, int rows, int cols, double *out) {
    int i, j;
    for (i = 0; i < rows; ++i)
        for (j = 0; j < cols; ++j) out[(size_t)j * rows + i] = a[(size_t)i * cols + j];
}

/* out = (system matrix) v for v, out (t, m). */
static void hpj__probe_ridge_apply(hpj__probe_ridge *R, const double *v, double *out) {
    hpj__probe_lin *A = &R->lin;
    const int t = A->K, n = A->n;
    int c, i;
    if (!R->dual) { /* r = A v, then A^T r + alpha v, in one pass */
        hpj__probe_lin_weights(A, v, NULL);
        hpj__probe_lin_pass(A, NULL, NULL, NULL, out, v);
        return;
    }
    hpj__probe_transpose(v, t, n, R->Rb); /* u = A^T v, then A u + alpha v */
    hpj__probe_lin_tmul(A, R->Rb, R->u);
    hpj__probe_lin_weights(A, R->u, NULL);
    hpj__probe_lin_pass(A, NULL, NULL, R->Zb, NULL, NULL);
    for (c = 0; c < t; ++c)
        for (i = 0; i < n; ++i) out[(size_t)c * n + i] = R->Zb[(size_t)i * t + c] + A->alpha * v[(size_t)c * n + i];
}

/* Preconditioned conjugate gradients on the exact system, t columns at
   once, from x = M^-1 b (R's vectors), where solve(factor, m, t, v) applies M^-1 to the
   t vectors v in place (the double Cholesky factor's solve, or the fast
   part's float one). Column c stops when ||r_c|| <= eps ((||A||_F^2 + alpha)
   ||x_c|| + ||b_c||) with eps = 1e-15 sqrt(n + d): a backward error at the
   level of a double Cholesky solve. Returns the iterations, or -1 if some
   column did not get there in maxit; *relres = max_c ||r_c|| / ||b_c||. */
static int hpj__probe_pcg(hpj__probe_ridge *R, void (*solve)(const void *, int, int, double *), const void *factor,
                          double normA, int maxit, double *relres) {
    const int t = R->lin.K, m = R->m;
    const double *b = R->b;
    double *x = R->x, *r = R->r, *z = R->z, *p = R->p, *q = R->q;
    double rho[64], rho_old[64];
    int done[64], it, c, all = 0;
    size_t i, tm = (size_t)t * m;
    /* the rounding floor of the operator applied in double grows like the
       square root of the summation lengths */
    const double eps = 1e-15 * sqrt((double)R->lin.n + (double)R->lin.d);
    memcpy(x, b, sizeof(double) * tm);
    solve(factor, m, t, x);
    hpj__probe_ridge_apply(R, x, r);
    for (i = 0; i < tm; ++i) r[i] = b[i] - r[i];
    for (it = 0;; ++it) {
        all = 1;
        *relres = 0.0;
        for (c = 0; c < t; ++c) {
            const double *rc = r + (size_t)c * m, *xc = x + (size_t)c * m, *bc = b + (size_t)c * m;
            double rn = sqrt(hpj__probe_dot(rc, rc, m)), xn = sqrt(hpj__probe_dot(xc, xc, m)),
                   bn = sqrt(hpj__probe_dot(bc, bc, m));
            done[c] = rn <= eps * ((normA + R->lin.alpha) * xn + bn);
            all &= done[c];
            if (bn > 0) *relres = HPJ__MAX(*relres, rn / bn);
        }
        if (all || it >= maxit) break;
        memcpy(z, r, sizeof(double) * tm);
        solve(factor, m, t, z);
        for (c = 0; c < t; ++c) {
            double *pc = p + (size_t)c * m;
            const double *zc = z + (size_t)c * m;
            rho[c] = hpj__probe_dot(r + (size_t)c * m, zc, m);
            if (it == 0 || done[c] || !(rho_old[c] != 0.0)) {
                memcpy(pc, zc, sizeof(double) * (size_t)m);
            } else {
                double beta = rho[c] / rho_old[c];
                int j;
                for (j = 0; j < m; ++j) pc[j] = zc[j] + beta * pc[j];
            }
            rho_old[c] = rho[c];
        }
        hpj__probe_ridge_apply(R, p, q);
        for (c = 0; c < t; ++c) {
            double *xc = x + (size_t)c * m, *rc = r + (size_t)c * m;
            const double *pc = p + (size_t)c * m, *qc = q + (size_t)c * m;
            double pq = hpj__probe_dot(pc, qc, m), a;
            int j;
            if (done[c] || !(pq > 0.0)) continue;
            a = rho[c] / pq;
            for (j = 0; j < m; ++j) {
                xc[j] += a * pc[j];
                rc[j] -= a * qc[j];
            }
        }
    }
    return all ? it : -1;
}

/* The ridge system solved in double: the Gram matrix, alpha on its
   diagonal, its Cholesky factor, and up to 3 steps of refinement on the
   exact system. */
static hpj_status hpj__probe_ridge_double(hpj__probe_ridge *R, int *its, double *relres) {
    static const char *fn = "ridge_fit";
    const int m = R->m;
    size_t dsz, mm;
    double *Cd, normA = 0.0;
    int i, bad;
    if (hpj__mul_size((size_t)m, (size_t)m, &mm) || hpj__add_size(mm, (size_t)m * HPJ__PROBE_DKC + 8, &dsz) ||
        hpj__mul_size(dsz, sizeof(double), &dsz))
        return hpj__fail(HPJ_ERR_NOMEM, "%s: a %d x %d Gram matrix is too large", fn, m, m);
    Cd = (double *)hpj__alloc(dsz, fn);
    if (!Cd) return HPJ_ERR_NOMEM;
    hpj__probe_gram_d(&R->lin, R->dual, Cd, Cd + mm);
    for (i = 0; i < m; ++i) {
        normA += Cd[(size_t)i * m + i];
        Cd[(size_t)i * m + i] += R->lin.alpha;
    }
    bad = hpj__probe_cholesky_d(Cd, m);
    if (bad >= 0) {
        hpj__free(Cd);
        return hpj__fail(HPJ_ERR_NUMERIC,
                         "%s: the %s system (%d x %d) is singular at pivot %d (alpha = %g); use alpha > 0", fn,
                         R->dual ? "dual" : "primal", m, m, bad, R->lin.alpha);
    }
    *its = hpj__probe_pcg(R, hpj__probe_cholsolve_d, Cd, normA, 3, relres);
    if (*its < 0) *its = 3;
    hpj__free(Cd);
    return HPJ_OK;
}

#ifndef HPJ_REFERENCE
static hpj_status hpj__fast_ridge_mixed(hpj__probe_ridge *R, int *its, double *relres);
#endif

HPJDEF hpj_status hpj_ridge_fit(const float *X, const float *Y, int n, int d, int t, const hpj_probe_options *o,
                                hpj_linear_model *out) {
    static const char *fn = "ridge_fit";
    hpj_probe_options def;
    hpj__probe_ridge R;
    hpj_status st;
    void *mem = NULL;
    double *mu, *s, *part, *ybar, *Yc;
    double relres = 0.0;
    int nb, m, i, c, its = -1;
    size_t j;
    if (out) memset(out, 0, sizeof(*out));
    if (!X || !Y || !out) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !X ? "X" : !Y ? "Y" : "out");
    if (n < 1 || d < 1 || t < 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: need n, d, t >= 1 (got n=%d d=%d t=%d)", fn, n, d, t);
    if (t > 64) return hpj__fail(HPJ_ERR_INPUT, "%s: at most 64 targets per call (got %d)", fn, t);
    if ((st = hpj__probe_check_options(fn, &o, &def)) != HPJ_OK) return st;
    nb = hpj__probe_nblocks(n);
    R.dual = d > n;
    m = R.dual ? n : d;
    {
        hpj__probe_buf buf[] = {{&mu, (size_t)d}, {&s, (size_t)d}, {&part, (size_t)nb * HPJ__MAX(d, t)},
                                {&ybar, (size_t)t}, {&Yc, (size_t)n * t}, {&R.b, (size_t)t * m}, {&R.x, (size_t)t * m},
                                {&R.r, (size_t)t * m}, {&R.z, (size_t)t * m}, {&R.p, (size_t)t * m},
                                {&R.q, (size_t)t * m},
                                {&R.lin.Veff, (size_t)t * d}, {&R.lin.ceff, (size_t)t}, {&R.lin.G, (size_t)nb * t * d},
                                {&R.lin.gs, (size_t)nb * t}, {&R.lin.Graw, (size_t)t * d}, {&R.lin.gsum, (size_t)t},
                                {&R.lin.work, (size_t)nb * hpj__probe_pass_work(t)}, {&R.Zb, (size_t)n * t},
                                {&R.Rb, (size_t)n * t}, {&R.u, (size_t)t * d}};
        mem = HPJ__PROBE_CARVE(fn, buf);
    }
    if (!mem) return HPJ_ERR_NOMEM;
    if (hpj__probe_column_stats(X, n, d, o->standardize, mu, s, part)) {
        hpj__free(mem);
        return hpj__probe_bad_value(fn, "X", X, n, d);
    }
    for (c = 0; c < t; ++c) ybar[c] = 0.0;
    for (i = 0; i < n; ++i)
        for (c = 0; c < t; ++c) ybar[c] += (double)Y[(size_t)i * t + c];
    for (c = 0; c < t; ++c) {
        if (!isfinite(ybar[c])) {
            hpj__free(mem);
            return hpj__probe_bad_value(fn, "Y", Y, n, t);
        }
        ybar[c] /= (double)n;
    }
    for (i = 0; i < n; ++i)
        for (c = 0; c < t; ++c) Yc[(size_t)i * t + c] = (double)Y[(size_t)i * t + c] - ybar[c];
    hpj__probe_lin_init(&R.lin, X, n, d, t, mu, s, o->alpha);
    R.m = m;
    if (R.dual) hpj__probe_transpose(Yc, n, t, R.b);
    else hpj__probe_lin_tmul(&R.lin, Yc, R.b);
#ifndef HPJ_REFERENCE
    if (hpj__fast() && o->precision == HPJ_PROBE_MIXED && o->alpha > 0) /* fast: float Gram and Cholesky (see below) */
        st = hpj__fast_ridge_mixed(&R, &its, &relres);
#endif
    if (st == HPJ_OK && its < 0) /* HPJ_PROBE_DOUBLE, or the mixed path did not converge */
        st = hpj__probe_ridge_double(&R, &its, &relres);
    if (st != HPJ_OK) {
        hpj__free(mem);
        return st;
    }
    /* weights in the original feature space */
    if (hpj__probe_model_alloc(fn, out, t, d)) {
        hpj__free(mem);
        return HPJ_ERR_NOMEM;
    }
    {
        double *w = R.u; /* (t, d) */
        if (R.dual) {
            hpj__probe_transpose(R.x, t, n, R.Rb);
            hpj__probe_lin_tmul(&R.lin, R.Rb, w);
        } else {
            memcpy(w, R.x, sizeof(double) * (size_t)t * d);
        }
        for (c = 0; c < t; ++c) {
            double *wc = w + (size_t)c * d;
            for (j = 0; j < (size_t)d; ++j) {
                wc[j] *= s[j];
                out->W[(size_t)c * d + j] = (float)wc[j];
            }
            out->b[c] = (float)(ybar[c] - hpj__probe_dot(wc, mu, d));
        }
    }
    out->iters = its;
    out->grad_norm = relres;
    hpj__free(mem);
    return HPJ_OK;
}

/* ==== probe: prediction and folds ======================================== */

HPJDEF void hpj_linear_model_predict(const hpj_linear_model *m, const float *X, int n, float *scores) {
    int i;
    if (!m || !m->W || !m->b || !X || !scores || n < 1) return;
    HPJ__OMP(parallel for schedule(static) if ((double)n * m->d * m->c > HPJ__PROBE_PAR))
    for (i = 0; i < n; ++i) {
        const float *x = X + (size_t)i * m->d;
        int c;
        for (c = 0; c < m->c; ++c)
            scores[(size_t)i * m->c + c] = (float)((double)m->b[c] + hpj__probe_dot_ff(x, m->W + (size_t)c * m->d, m->d));
    }
}

HPJDEF int32_t hpj_argmax_row(const float *s, int c) {
    int32_t best = 0;
    int k, found = 0;
    if (!s) return 0;
    for (k = 0; k < c; ++k) {
        if (s[k] != s[k]) continue;
        if (!found || s[k] > s[best]) {
            best = (int32_t)k;
            found = 1;
        }
    }
    return best;
}

/* The class a linear model gives one row x (d): the argmax of its scores,
   by hpj_argmax_row's rule (the first on ties, NaNs never win). */
static int32_t hpj__lm_class(const hpj_linear_model *m, const float *x) {
    float best = 0.0f;
    int c, arg = 0, found = 0;
    for (c = 0; c < m->c; ++c) {
        float v = (float)((double)m->b[c] + hpj__probe_dot_ff(x, m->W + (size_t)c * m->d, m->d));
        if (v != v) continue;
        if (!found || v > best) {
            best = v;
            arg = c;
            found = 1;
        }
    }
    return (int32_t)arg;
}

HPJDEF void hpj_linear_model_classify(const hpj_linear_model *m, const float *X, int n, int32_t *cls) {
    int i;
    if (!m || !m->W || !m->b || !X || !cls || n < 1) return;
    HPJ__OMP(parallel for schedule(static) if ((double)n * m->d * m->c > HPJ__PROBE_PAR))
    for (i = 0; i < n; ++i) cls[i] = hpj__lm_class(m, X + (size_t)i * m->d);
}

HPJDEF double hpj_linear_model_accuracy(const hpj_linear_model *m, const float *X, const int32_t *y, int n) {
    long hits = 0;
    int i;
    if (!m || !m->W || !m->b || !X || !y || n < 1) return 0.0;
    HPJ__OMP(parallel for schedule(static) reduction(+ : hits) if ((double)n * m->d * m->c > HPJ__PROBE_PAR))
    for (i = 0; i < n; ++i) hits += (hpj__lm_class(m, X + (size_t)i * m->d) == y[i]);
    return (double)hits / (double)n;
}

HPJDEF hpj_status hpj_stratified_folds(const int32_t *y, int n, int C, int k, uint64_t seed, int32_t *fold) {
    static const char *fn = "stratified_folds";
    int32_t *cnt, *start, *idx;
    int i, c, pos = 0;
    if (!y || !fold) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !y ? "y" : "fold");
    if (C < 1) return hpj__fail(HPJ_ERR_INPUT, "%s: need C >= 1 (got %d)", fn, C);
    if (k < 2 || k > n) return hpj__fail(HPJ_ERR_INPUT, "%s: need 2 <= k <= n (got k=%d n=%d)", fn, k, n);
    for (i = 0; i < n; ++i)
        if (y[i] < 0 || y[i] >= C)
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
    cnt = (int32_t *)hpj__calloc((size_t)2 * C + (size_t)n, sizeof(int32_t), fn);
    if (!cnt) return HPJ_ERR_NOMEM;
    start = cnt + C;
    idx = start + C;
    for (i = 0; i < n; ++i) ++cnt[y[i]];
    for (c = 1; c < C; ++c) start[c] = start[c - 1] + cnt[c - 1];
    for (i = 0; i < n; ++i) idx[start[y[i]]++] = (int32_t)i; /* stable by index */
    for (c = 0; c < C; ++c) start[c] -= cnt[c];
    for (c = 0; c < C; ++c) {
        hpj_rng r = hpj_rng_stream(seed, 0, (uint64_t)c);
        int q;
        hpj_rng_shuffle_i32(&r, idx + start[c], cnt[c]);
        for (q = 0; q < cnt[c]; ++q) fold[idx[start[c] + q]] = (int32_t)((pos + q) % k);
        pos = (pos + cnt[c]) % k;
    }
    hpj__free(cnt);
    return HPJ_OK;
}

/* ==== probe: task-specific resolution weighting ========================== */

/* theta = [b (L), W (K, D), c (K)]; a row's mixture
   h_i = sum_l softmax(b)_l (H_il - m_l), features a_i = h_i .* s,
   scores z_i = W a_i + c. */
typedef struct hpj__probe_resw {
    const float *H;
    int L, D, K, kind, nb;
    const int32_t *y;       /* (n) labels, classification              */
    const double *yc;       /* (n) centred targets, regression         */
    const int32_t *rows;    /* rows evaluated                          */
    int nr;
    const double *m, *s;    /* (L, D) per-resolution means, (D) scales */
    double pen;             /* penalty: pen/2 ||W||^2 (pen = alpha or 2 alpha) */
    double *om, *mo, *Weff; /* (L) softmax(b), (D) sum_l om_l m_l, (K, D) */
    double *part;           /* (nb, K D + K + L + D) block partials    */
    double *scratch;        /* (nb, 3 D + 2 K)                         */
    double loss[HPJ__PROBE_MAXBLK];
} hpj__probe_resw;

static size_t hpj__probe_resw_partial_len(const hpj__probe_resw *R) { return (size_t)R->K * R->D + (size_t)R->K + R->L + R->D; }

static void hpj__probe_resw_block(hpj__probe_resw *R, const double *theta, int blk, int grad) {
    const int L = R->L, D = R->D, K = R->K;
    const double *cc = theta + L + (size_t)K * D;
    double *pt = R->part + (size_t)blk * hpj__probe_resw_partial_len(R);
    double *dW = pt, *dc = pt + (size_t)K * D, *dw = dc + K, *gsum = dw + L;
    double *h = R->scratch + (size_t)blk * (3 * (size_t)D + 2 * (size_t)K), *a = h + D, *gv = a + D;
    double *z = gv + D, *r = z + K, lsum = 0.0;
    const int i0 = hpj__probe_block_lo(R->nr, R->nb, blk), i1 = hpj__probe_block_lo(R->nr, R->nb, blk + 1);
    int ii, l, k, j;
    if (grad) memset(pt, 0, sizeof(double) * hpj__probe_resw_partial_len(R));
    for (ii = i0; ii < i1; ++ii) {
        const int i = R->rows[ii];
        const float *Hi = R->H + (size_t)i * L * D;
        for (j = 0; j < D; ++j) h[j] = -R->mo[j];
        for (l = 0; l < L; ++l) {
            const float *hl = Hi + (size_t)l * D;
            const double w = R->om[l];
            for (j = 0; j < D; ++j) h[j] += w * (double)hl[j];
        }
        for (j = 0; j < D; ++j) a[j] = h[j] * R->s[j];
        for (k = 0; k < K; ++k) z[k] = cc[k] + hpj__probe_dot(R->Weff + (size_t)k * D, h, D);
        if (R->kind == HPJ__PROBE_SQUARED) lsum += hpj__probe_loss_row(R->kind, K, z, 0, R->yc + i, grad ? r : NULL);
        else lsum += hpj__probe_loss_row(R->kind, K, z, R->y[i], NULL, grad ? r : NULL);
        if (!grad) continue;
        for (k = 0; k < K; ++k) {
            double *dWk = dW + (size_t)k * D;
            const double rk = r[k];
            dc[k] += rk;
            for (j = 0; j < D; ++j) dWk[j] += rk * a[j];
        }
        for (j = 0; j < D; ++j) gv[j] = 0.0;
        for (k = 0; k < K; ++k) {
            const double rk = r[k], *we = R->Weff + (size_t)k * D;
            for (j = 0; j < D; ++j) gv[j] += rk * we[j];
        }
        for (l = 0; l < L; ++l) dw[l] += hpj__probe_dot_fd(Hi + (size_t)l * D, gv, D);
        for (j = 0; j < D; ++j) gsum[j] += gv[j];
    }
    R->loss[blk] = lsum;
}

/* Sum of losses over the nr rows rows[]; with g, the gradient of that sum
   plus the penalty (the penalty's value is added by the caller). */
static double hpj__probe_resw_eval(hpj__probe_resw *R, const int32_t *rows, int nr, const double *theta, double *g) {
    const int L = R->L, D = R->D, K = R->K;
    const double *b = theta, *W = theta + L;
    double mx = b[0], se = 0.0, F = 0.0;
    int l, j, k, blk;
    for (l = 1; l < L; ++l) mx = HPJ__MAX(mx, b[l]);
    for (l = 0; l < L; ++l) se += (R->om[l] = exp(b[l] - mx));
    for (l = 0; l < L; ++l) R->om[l] /= se;
    for (j = 0; j < D; ++j) {
        double v = 0.0;
        for (l = 0; l < L; ++l) v += R->om[l] * R->m[(size_t)l * D + j];
        R->mo[j] = v;
    }
    for (k = 0; k < K; ++k)
        for (j = 0; j < D; ++j) R->Weff[(size_t)k * D + j] = W[(size_t)k * D + j] * R->s[j];
    R->rows = rows;
    R->nr = nr;
    R->nb = hpj__probe_nblocks(nr);
    HPJ__OMP(parallel for schedule(dynamic, 1) if (R->nb > 1 && (double)R->nr * R->L * R->D > HPJ__PROBE_PAR))
    for (blk = 0; blk < R->nb; ++blk) hpj__probe_resw_block(R, theta, blk, g != NULL);
    for (blk = 0; blk < R->nb; ++blk) F += R->loss[blk];
    if (g) {
        const size_t plen = hpj__probe_resw_partial_len(R);
        double *tot = R->part + (size_t)R->nb * plen; /* one spare slot after the blocks */
        double *dW, *dc, *dw, *gsum, avg = 0.0;
        hpj__probe_sum_blocks(R->part, R->nb, plen, tot);
        dW = tot;
        dc = dW + (size_t)K * D;
        dw = dc + K;
        gsum = dw + L;
        for (l = 0; l < L; ++l) {
            dw[l] -= hpj__probe_dot(R->m + (size_t)l * D, gsum, D);
            avg += R->om[l] * dw[l];
        }
        for (l = 0; l < L; ++l) g[l] = R->om[l] * (dw[l] - avg);
        for (k = 0; k < K * D; ++k) g[L + k] = dW[k] + R->pen * W[k];
        for (k = 0; k < K; ++k) g[L + (size_t)K * D + k] = dc[k];
    }
    return F;
}

HPJDEF hpj_status hpj_resweight_fit_ex(const float *H, int n, int L, int D, const int32_t *y, const float *yreg, int C,
                                       float lambda, uint64_t seed, const hpj_probe_options *o, float *omega,
                                       float *logits, hpj_resweight_info *info) {
    static const char *fn = "resweight_fit";
    hpj_probe_options def;
    hpj__probe_resw R;
    hpj__probe_lbfgs Hs;
    hpj_status st;
    void *mem = NULL;
    int32_t *rows = NULL, *fold = NULL;
    double *theta, *theta1, *g, *g1, *p, *mean, *scale, *bbest, *ycd;
    size_t P, KD, j;
    int i, l, it, phase, ntr = 0, nval = 0, iters = 0, best_it = 0, K;
    uint64_t st2;
    double F, F1, val = 0.0, best_val = 0.0, thresh = 0.0, gmax;
    if (!H || !omega) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL %s", fn, !H ? "H" : "omega");
    if (n < 2 || L < 1 || D < 1)
        return hpj__fail(HPJ_ERR_INPUT, "%s: need n >= 2, L >= 1, D >= 1 (got n=%d L=%d D=%d)", fn, n, L, D);
    if (!(lambda >= 0.0f && lambda <= 1.0f))
        return hpj__fail(HPJ_ERR_INPUT, "%s: lambda must be in [0, 1] (got %g)", fn, (double)lambda);
    if (C == 1 || C < 0)
        return hpj__fail(HPJ_ERR_INPUT, "%s: C must be 0 (regression) or >= 2 (got %d)", fn, C);
    if (C >= 2 && !y) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL y for classification (C = %d)", fn, C);
    if (C == 0 && !yreg) return hpj__fail(HPJ_ERR_INPUT, "%s: NULL yreg for regression (C = 0)", fn);
    if ((st = hpj__probe_check_options(fn, &o, &def)) != HPJ_OK) return st;
    for (i = 0; i < n; ++i) {
        if (C >= 2 && (y[i] < 0 || y[i] >= C))
            return hpj__fail(HPJ_ERR_INPUT, "%s: y[%d] = %d is outside 0..%d (C = %d)", fn, i, (int)y[i], C - 1, C);
        if (C == 0 && !isfinite(yreg[i]))
            return hpj__fail(HPJ_ERR_NUMERIC, "%s: yreg[%d] is %s", fn, i, yreg[i] != yreg[i] ? "nan" : "inf");
    }
    {
        size_t idx, tot = (size_t)n * L * D;
        for (idx = 0; idx < tot; ++idx)
            if (!isfinite(H[idx]))
                return hpj__fail(HPJ_ERR_NUMERIC, "%s: H[%zu,%zu,%zu] is %s", fn, idx / ((size_t)L * D),
                                 (idx / (size_t)D) % (size_t)L, idx % (size_t)D, H[idx] != H[idx] ? "nan" : "inf");
    }
    if (info) memset(info, 0, sizeof(*info));
    if (lambda == 1.0f || L == 1) { /* uniform: nothing to learn */
        for (l = 0; l < L; ++l) {
            omega[l] = (float)(1.0 / L);
            if (logits) logits[l] = 0.0f;
        }
        return HPJ_OK;
    }
    /* inner split */
    rows = (int32_t *)hpj__alloc(sizeof(int32_t) * (size_t)n * 2, fn);
    if (!rows) return HPJ_ERR_NOMEM;
    fold = rows + n;
    st2 = seed ^ 0x7265737765696768ULL; /* "resweigh" */
    st2 = hpj_splitmix64(&st2);
    if (C >= 2) {
        st = hpj_stratified_folds(y, n, C, HPJ__MIN(5, n), st2, fold);
        if (st != HPJ_OK) {
            hpj__free(rows);
            return st;
        }
    } else {
        hpj_rng r = hpj_rng_stream(st2, 0, 0);
        int nv = HPJ__MAX(1, (int)floor(0.2 * n + 0.5));
        for (i = 0; i < n; ++i) rows[i] = (int32_t)i;
        hpj_rng_shuffle_i32(&r, rows, (int32_t)n);
        for (i = 0; i < n; ++i) fold[rows[i]] = i < nv ? 0 : 1;
    }
    for (i = 0; i < n; ++i) /* rows: inner-train first, then validation, each by index */
        if (fold[i] != 0) rows[ntr++] = (int32_t)i;
    for (i = 0; i < n; ++i)
        if (fold[i] == 0) rows[ntr + nval++] = (int32_t)i;
    K = (C == 2 || C == 0) ? 1 : C;
    KD = (size_t)K * D;
    P = (size_t)L + KD + (size_t)K;
    memset(&R, 0, sizeof(R));
    R.H = H;
    R.L = L;
    R.D = D;
    R.K = K;
    R.kind = C == 0 ? HPJ__PROBE_SQUARED : (C == 2 ? HPJ__PROBE_BINARY : HPJ__PROBE_SOFTMAX);
    R.y = y;
    R.pen = C == 0 ? 2.0 * o->alpha : o->alpha;
    {
        const size_t nbmax = (size_t)hpj__probe_nblocks(n);
        hpj__probe_buf buf[] = {{&theta, P}, {&theta1, P}, {&g, P}, {&g1, P}, {&p, P},
                                {&Hs.S, (size_t)HPJ__PROBE_LBFGS_M * P}, {&Hs.Y, (size_t)HPJ__PROBE_LBFGS_M * P},
                                {&mean, (size_t)L * D}, {&scale, (size_t)D}, {&bbest, (size_t)L}, {&ycd, (size_t)n},
                                {&R.om, (size_t)L}, {&R.mo, (size_t)D}, {&R.Weff, KD},
                                {&R.part, (nbmax + 1) * ((size_t)K * D + K + L + D)},
                                {&R.scratch, nbmax * (3 * (size_t)D + 2 * (size_t)K)}};
        mem = HPJ__PROBE_CARVE(fn, buf);
        if (!mem) {
            hpj__free(rows);
            return HPJ_ERR_NOMEM;
        }
    }
    /* inner-train statistics: per-resolution means; scale of the uniform mixture */
    for (j = 0; j < (size_t)L * D; ++j) mean[j] = 0.0;
    for (i = 0; i < ntr; ++i) {
        const float *Hi = H + (size_t)rows[i] * L * D;
        for (j = 0; j < (size_t)L * D; ++j) mean[j] += (double)Hi[j];
    }
    for (j = 0; j < (size_t)L * D; ++j) mean[j] /= (double)ntr;
    for (j = 0; j < (size_t)D; ++j) scale[j] = 1.0;
    if (o->standardize) {
        for (j = 0; j < (size_t)D; ++j) scale[j] = 0.0;
        for (i = 0; i < ntr; ++i) {
            const float *Hi = H + (size_t)rows[i] * L * D;
            for (j = 0; j < (size_t)D; ++j) {
                double u = 0.0;
                for (l = 0; l < L; ++l) u += (double)Hi[(size_t)l * D + j] - mean[(size_t)l * D + j];
                u /= (double)L;
                scale[j] += u * u;
            }
        }
        for (j = 0; j < (size_t)D; ++j) {
            double sd = sqrt(scale[j] / (double)ntr);
            scale[j] = sd > 1e-12 ? 1.0 / sd : 1.0;
        }
    }
    if (C == 0) {
        double yb = 0.0;
        for (i = 0; i < ntr; ++i) yb += (double)yreg[rows[i]];
        yb /= (double)ntr;
        for (i = 0; i < n; ++i) ycd[i] = (double)yreg[i] - yb;
        R.yc = ycd;
    }
    R.m = mean;
    R.s = scale;
    Hs.P = (int)P;
    memset(theta, 0, sizeof(double) * P);
#define HPJ__PROBE_RESW_PEN(th) (0.5 * R.pen * hpj__probe_dot_long((th) + L, (th) + L, KD))
    /* phase 0: the head alone on the uniform mixture (b frozen at 0), to
       the gradient test; phase 1: b and the head jointly, the validation
       loss checked after every iteration. */
    for (phase = 0; phase < 2; ++phase) {
        F = hpj__probe_resw_eval(&R, rows, ntr, theta, g) + HPJ__PROBE_RESW_PEN(theta);
        if (phase == 0) memset(g, 0, sizeof(double) * (size_t)L);
        gmax = hpj__probe_maxabs(g, P);
        if (phase == 0) thresh = o->tol * HPJ__MAX(1.0, gmax);
        Hs.cnt = 0;
        Hs.head = 0;
        if (phase == 1) {
            best_val = val = hpj__probe_resw_eval(&R, rows + ntr, nval, theta, NULL) / (double)nval;
            memcpy(bbest, theta, sizeof(double) * (size_t)L);
        }
        for (it = 1; it <= HPJ_RESWEIGHT_ITERS && gmax > thresh && isfinite(F); ++it) {
            double d0, t = 1.0;
            int ls, ok = 0;
            d0 = hpj__probe_lbfgs_dir(&Hs, g, p);
            if (Hs.cnt == 0) t = 1.0 / sqrt(hpj__probe_dot_long(p, p, P));
            for (ls = 0; ls < 40; ++ls, t *= 0.5) { /* backtracking Armijo */
                for (j = 0; j < P; ++j) theta1[j] = theta[j] + t * p[j];
                F1 = hpj__probe_resw_eval(&R, rows, ntr, theta1, g1) + HPJ__PROBE_RESW_PEN(theta1);
                if (isfinite(F1) && F1 <= F + 1e-4 * t * d0 + 8.0 * DBL_EPSILON * fabs(F)) {
                    ok = 1;
                    break;
                }
            }
            if (!ok) break; /* no decrease representable: done */
            if (phase == 0) memset(g1, 0, sizeof(double) * (size_t)L);
            gmax = hpj__probe_lbfgs_move(&Hs, &theta, &theta1, &g, &g1);
            F = F1;
            if (phase == 0) continue;
            iters = it;
            val = hpj__probe_resw_eval(&R, rows + ntr, nval, theta, NULL) / (double)nval;
            if (val < best_val) {
                best_val = val;
                best_it = it;
                memcpy(bbest, theta, sizeof(double) * (size_t)L);
            }
            if (it - best_it >= HPJ_RESWEIGHT_PATIENCE) break; /* early stopping */
        }
    }
#undef HPJ__PROBE_RESW_PEN
    {
        double mx = bbest[0], se = 0.0;
        for (l = 1; l < L; ++l) mx = HPJ__MAX(mx, bbest[l]);
        for (l = 0; l < L; ++l) se += exp(bbest[l] - mx);
        for (l = 0; l < L; ++l) {
            omega[l] = (float)((1.0 - (double)lambda) * exp(bbest[l] - mx) / se + (double)lambda / L);
            if (logits) logits[l] = (float)bbest[l];
        }
    }
    if (info) {
        info->n_train = ntr;
        info->n_val = nval;
        info->iters = iters;
        info->best_iter = best_it;
        info->val_loss_best = best_val;
        info->val_loss_last = val;
    }
    hpj__free(mem);
    hpj__free(rows);
    return HPJ_OK;
}

HPJDEF hpj_status hpj_resweight_fit(const float *H, int n, int L, int D, const int32_t *y, const float *yreg, int C,
                                    float lambda, uint64_t seed, const hpj_probe_options *o, float *omega) {
    return hpj_resweight_fit_ex(H, n, L, D, y, yreg, C, lambda, seed, o, omega, NULL, NULL);
}

HPJDEF void hpj_resweight_apply(float *out, const float *H, const float *omega, int n, int L, int D) {
    int i;
    if (!out || !H || !omega || n < 1 || L < 1 || D < 1) return;
    HPJ__OMP(parallel for schedule(static) if ((double)n * L * D > HPJ__PROBE_PAR))
    for (i = 0; i < n; ++i) {
        const float *Hi = H + (size_t)i * L * D;
        float *o = out + (size_t)i * D;
        int j, l;
        for (j = 0; j < D; ++j) {
            double v = 0.0;
            for (l = 0; l < L; ++l) v += (double)omega[l] * (double)Hi[(size_t)l * D + j];
            o[j] = (float)v;
        }
    }
}

/* ==== checkpoints ========================================================== */

HPJDEF uint32_t hpj_crc32(const void *data, size_t len) {
    /* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), bytewise; the
       table is built per call (2048 shifts), so concurrent calls share
       nothing */
    uint32_t table[256], k, j;
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    for (k = 0; k < 256; ++k) {
        uint32_t v = k;
        for (j = 0; j < 8; ++j) v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
        table[k] = v;
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

/* The float arrays of a checkpoint in file order, x[i] of n[i] floats:
   parameters, EMA encoder, BatchNorm statistics (nstats of them: every
   resolution's, or version 1's one set) and, with the optimizer state,
   Adam's two moments. Returns how many the file holds. The first three
   must be finite to load; hpj__ckpt_what names their elements. */
static int hpj__ckpt_arrays(const hpj_model *m, size_t nstats, int with_optimizer, float *x[5], size_t n[5]) {
    x[0] = m->params; n[0] = m->num_params;
    x[1] = m->ema; n[1] = m->enc_count;
    x[2] = m->stats; n[2] = nstats;
    x[3] = m->adam_m; n[3] = m->num_params;
    x[4] = m->adam_v; n[4] = m->num_params;
    return with_optimizer ? 5 : 3;
}
static const char *const hpj__ckpt_what[3] = {"parameter", "target-encoder parameter", "BatchNorm statistic"};

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_model_serialize(const hpj_model *m, int with_optimizer, unsigned char **buf, size_t *len) {
    char cfgtext[4096];
    size_t clen = hpj_config_format(&m->cfg, cfgtext, sizeof cfgtext), n[5], total, off;
    float *x[5];
    int32_t enc[8];
    uint64_t sizes[5];
    int i, arrays = hpj__ckpt_arrays(m, m->num_stats, with_optimizer, x, n);
    unsigned char *b;
    *buf = NULL;
    *len = 0;
    if (clen >= sizeof cfgtext) return hpj__fail(HPJ_ERR_INPUT, "checkpoint: config text too long");
    enc[0] = m->F; enc[1] = m->Fe; enc[2] = m->node_onehot; enc[3] = m->node_label_min; enc[4] = m->node_attr_dim;
    enc[5] = m->edge_onehot; enc[6] = m->edge_label_min; enc[7] = m->node_deg;
    sizes[0] = m->num_params; sizes[1] = m->enc_count; sizes[2] = m->num_stats;
    sizes[3] = (uint64_t)m->step; sizes[4] = (uint64_t)m->epoch;
    total = 8 + 3 * 4 + clen + 8 * 4 + 5 * 8 + 4;
    for (i = 0; i < arrays; ++i) total += 4 * n[i];
    b = (unsigned char *)hpj__alloc(total, "checkpoint");
    if (!b) return HPJ_ERR_NOMEM;
    memcpy(b, hpj__ckpt_magic, 8);
    hpj__put_u32(b + 8, HPJ_CKPT_VERSION);
    hpj__put_u32(b + 12, with_optimizer ? 1u : 0u);
    hpj__put_u32(b + 16, (uint32_t)clen);
    memcpy(b + 20, cfgtext, clen);
    off = 20 + clen;
    for (i = 0; i < 8; ++i, off += 4) hpj__put_u32(b + off, (uint32_t)enc[i]);
    for (i = 0; i < 5; ++i, off += 8) hpj__put_u64(b + off, sizes[i]);
    for (i = 0; i < arrays; ++i) {
        hpj__put_f32s(b + off, x[i], n[i]);
        off += 4 * n[i];
    }
    hpj__put_u32(b + off, hpj_crc32(b, off));
    HPJ_ASSERT(off + 4 == total);
    *buf = b;
    *len = total;
    return HPJ_OK;
}
#endif

/* Every failure below leaves *m zeroed and names the buffer in the reason
   (formatted before the model is freed: it may quote the model's sizes). */
#define HPJ__CKPT_FAIL(...)                                        \
    do {                                                           \
        hpj_status ckpt_st_ = hpj__fail(HPJ_ERR_FORMAT, __VA_ARGS__); \
        hpj_model_free(m);                                         \
        return ckpt_st_;                                           \
    } while (0)
HPJDEF hpj_status hpj_model_deserialize(hpj_model *m, const unsigned char *b, size_t len, const char *name) {
    size_t off, clen, floats = 0, i, n[5];
    uint32_t version, flags;
    int32_t enc[8];
    int64_t F;
    hpj_config cfg;
    hpj_status st;
    uint64_t sizes[5]; /* num_params, enc_count, num_stats, step, epoch */
    size_t nfile; /* statistics in the file: every resolution's (version 2) or one set (1) */
    float *x[5];
    int a, arrays;
    memset(m, 0, sizeof(*m));
    if (!name) name = "checkpoint";
    if (len < 8 + 12 || memcmp(b, hpj__ckpt_magic, 8) != 0) HPJ__CKPT_FAIL("%s: not an hpjepa checkpoint (bad magic)", name);
    if (hpj__get_u32(b + len - 4) != hpj_crc32(b, len - 4))
        HPJ__CKPT_FAIL("%s: CRC mismatch (file truncated or corrupted)", name);
    version = hpj__get_u32(b + 8);
    flags = hpj__get_u32(b + 12);
    if (version != 1 && version != HPJ_CKPT_VERSION)
        HPJ__CKPT_FAIL("%s: format version %u, this build reads versions 1 and %d", name, version, HPJ_CKPT_VERSION);
    if (flags > 1) HPJ__CKPT_FAIL("%s: unknown flags 0x%x", name, flags);
    clen = hpj__get_u32(b + 16);
    off = 20;
    if (clen > len - off) HPJ__CKPT_FAIL("%s: config length %zu exceeds the file", name, clen);
    hpj_config_default(&cfg);
    /* version 1 predates the key and averaged copies over the patches present */
    if (version == 1) cfg.patch_tokens = HPJ_TOKENS_PRESENT;
    if ((st = hpj_config_parse(&cfg, (const char *)b + off, clen, name))) { hpj_model_free(m); return st; }
    off += clen;
    if (len - off < 8 * 4 + 5 * 8 + 4) HPJ__CKPT_FAIL("%s: truncated header", name);
    for (i = 0; i < 8; ++i, off += 4) enc[i] = (int32_t)hpj__get_u32(b + off);
    for (i = 0; i < 5; ++i, off += 8) sizes[i] = hpj__get_u64(b + off);
    /* input encoding: node one-hot, label min, attributes, edge one-hot,
       label min, degree one-hot (as hpj_model_init sets them) */
    F = (int64_t)enc[2] + enc[7] + enc[4];
    if (enc[2] < 0 || enc[2] > (1 << 20) || enc[4] < 0 || enc[4] > (1 << 20) || enc[5] < 0 || enc[5] > (1 << 20) ||
        enc[7] != (cfg.node_degree ? cfg.node_degree + 1 : 0) || enc[0] != (F > 1 ? F : 1) ||
        enc[1] != (enc[5] > 1 ? enc[5] : 1))
        HPJ__CKPT_FAIL("%s: inconsistent input encoding", name);
    m->F = enc[0]; m->Fe = enc[1]; m->node_onehot = enc[2]; m->node_label_min = enc[3]; m->node_attr_dim = enc[4];
    m->edge_onehot = enc[5]; m->edge_label_min = enc[6]; m->node_deg = enc[7];
    if ((st = hpj__model_shape(m, &cfg))) HPJ__CKPT_FAIL("%s: %s", name, hpj_last_error());
    nfile = version == 1 ? m->num_stats / (size_t)cfg.L : m->num_stats;
    if (sizes[0] != m->num_params || sizes[1] != m->enc_count || sizes[2] != nfile)
        HPJ__CKPT_FAIL("%s: tensor sizes (%llu, %llu, %llu) do not match the config (%zu, %zu, %zu)", name,
                       (unsigned long long)sizes[0], (unsigned long long)sizes[1], (unsigned long long)sizes[2],
                       m->num_params, m->enc_count, nfile);
    arrays = hpj__ckpt_arrays(m, nfile, flags != 0, x, n);
    for (a = 0; a < arrays; ++a) floats += n[a];
    if (len - off != 4 * floats + 4) HPJ__CKPT_FAIL("%s: %zu bytes of tensors, expected %zu", name, len - off, 4 * floats + 4);
    if (sizes[3] > INT64_MAX || sizes[4] > INT64_MAX) HPJ__CKPT_FAIL("%s: step or epoch out of range", name);
    if ((st = hpj__model_alloc(m))) { /* out of memory: keep that status */
        char why[HPJ__ERRLEN];
        memcpy(why, hpj__errbuf, sizeof why);
        hpj_model_free(m);
        return hpj__fail(st, "%s: %s", name, why);
    }
    arrays = hpj__ckpt_arrays(m, nfile, flags != 0, x, n); /* now that the arrays exist */
    for (a = 0; a < arrays; ++a) {
        hpj__get_f32s(x[a], b + off, n[a]);
        off += 4 * n[a];
    }
    for (a = 0; a < 3; ++a)
        for (i = 0; i < n[a]; ++i)
            if (!(x[a][i] == x[a][i]) || fabsf(x[a][i]) > FLT_MAX) HPJ__CKPT_FAIL("%s: %s %zu is not finite", name, hpj__ckpt_what[a], i);
    for (i = nfile; i < m->num_stats; i += nfile) /* version 1: its one set serves every resolution */
        memcpy(m->stats + i, m->stats, sizeof(float) * nfile);
    m->step = (int64_t)sizes[3];
    m->epoch = (int64_t)sizes[4];
    m->adam_state = (int)flags;
    return HPJ_OK;
}
#undef HPJ__CKPT_FAIL

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


/* ======================================================================
   THE FAST PART

   Everything above is the reference implementation: the method in plain
   loops, the code to read. What follows are faster siblings of a few of
   its functions, each under its own banner, each plugged in at one named
   point of the reference code (look for `hpj__fast()`), each computing
   the same function. -DHPJ_REFERENCE leaves this part out;
   hpj_set_paths chooses at run time.
   ====================================================================== */
#ifndef HPJ_REFERENCE
/* GCC 12's AVX-512 intrinsics header, compiled as C++, warns that its own
   _mm512_undefined_* placeholders "may be used uninitialized" wherever a
   masked or reducing intrinsic inlines them: a false alarm inside the
   compiler's header, silenced for the fast part only. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/* ---- anchor: fast gemm ----
   (the packed, blocked GEMM and its SIMD micro-kernels follow this line)
   ---- */

/* ==== fast: GEMM micro-kernels (AVX-512, AVX2, portable) ==== */

/* The fast GEMM (next section) cuts C into small tiles and hands each tile,
   one K block at a time, to a micro-kernel. The kernel keeps the whole
   tile, MR rows by NR columns, in registers: for each k it loads NR values
   of B (a few vectors) and broadcasts MR values of A, and does MR x NR
   multiply-adds for MR + NR loads, so the arithmetic units, not the loads,
   set the pace. The tile shapes are the largest that leave room in the
   register file for the B vectors and a broadcast: 8 x 32 on AVX-512
   (16 accumulators of the 32 zmm registers), 6 x 16 on AVX2 (12 of the 16
   ymm registers), 4 x 16 in portable C (four named rows of 16 that GCC
   and Clang keep in vector registers).
   Why the bits are the reference's: each accumulator starts at zero and
   takes acc = fma(a, b, acc) for k in increasing order through the K
   block, and the store does what hpj_gemm's loop does with a block's sum:
   C = alpha acc + beta C on the first block (beta == 0: C is not read),
   C = C + alpha acc on the later ones. The SIMD kernels always fuse; they
   are compiled only for targets with fma, where HPJ__FMAF fuses too. */

#if !defined(HPJ_NO_SIMD) && (defined(__AVX512F__) || defined(__AVX2__)) && \
    (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>
#endif
#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
#define HPJ__GEMM_AVX512 1
#endif
#if !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
#define HPJ__GEMM_AVX2 1
#endif
#define HPJ__R6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define HPJ__R8(X) HPJ__R6(X) X(6) X(7)

/* A kernel: the C tile (mr x nr, mr <= MR, nr <= NR) at c from a packed A
   sliver ap (kc steps of MR values) and a B sliver bp (kc rows of NR
   values, ldbk apart; values past nr are read only where B was packed
   with zeros). first: the K block is the first (C = alpha acc + beta C). */
typedef void (*hpj__gemm_kernel)(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                 ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first);
/* The same for MR full rows of op(A) read where they are, A's leading
   dimension lda (the kernel knows whether A is transposed). */
typedef void (*hpj__gemm_rows_kernel)(int kc, const float *a, ptrdiff_t lda, const float *bp, ptrdiff_t ldbk,
                                      float *c, ptrdiff_t ldc, int nr, float alpha, float beta, int first);

/* -- portable: 4 x 16 -- */
#define HPJ__GEMM_PMR 4
#define HPJ__GEMM_PNR 16
static HPJ__INLINE void hpj__gemm_store_row(float *ci, const float *acc, int nr, float alpha, float beta, int first) {
    int j;
    if (!first)
        for (j = 0; j < nr; ++j) ci[j] = ci[j] + alpha * acc[j];
    else if (beta == 0.0f)
        for (j = 0; j < nr; ++j) ci[j] = alpha * acc[j];
    else
        for (j = 0; j < nr; ++j) ci[j] = HPJ__FMAF(beta, ci[j], alpha * acc[j]);
}
static void hpj__gemm_kernel_c(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c, ptrdiff_t ldc,
                               int mr, int nr, float alpha, float beta, int first) {
    /* B comes packed, zero-padded to 16 columns: the j loop has a fixed
       length and the four rows stay in registers */
    float c0[HPJ__GEMM_PNR], c1[HPJ__GEMM_PNR], c2[HPJ__GEMM_PNR], c3[HPJ__GEMM_PNR];
    int j, k;
    for (j = 0; j < HPJ__GEMM_PNR; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (k = 0; k < kc; ++k, ap += HPJ__GEMM_PMR) {
        const float *b = bp + (ptrdiff_t)k * ldbk;
        float a0 = ap[0], a1 = ap[1], a2 = ap[2], a3 = ap[3];
        for (j = 0; j < HPJ__GEMM_PNR; ++j) {
            c0[j] = HPJ__FMAF(a0, b[j], c0[j]);
            c1[j] = HPJ__FMAF(a1, b[j], c1[j]);
            c2[j] = HPJ__FMAF(a2, b[j], c2[j]);
            c3[j] = HPJ__FMAF(a3, b[j], c3[j]);
        }
    }
    hpj__gemm_store_row(c, c0, nr, alpha, beta, first);
    if (mr > 1) hpj__gemm_store_row(c + ldc, c1, nr, alpha, beta, first);
    if (mr > 2) hpj__gemm_store_row(c + 2 * ldc, c2, nr, alpha, beta, first);
    if (mr > 3) hpj__gemm_store_row(c + 3 * ldc, c3, nr, alpha, beta, first);
}

/* The SIMD kernels come in three entry points over one inlined body, which
   takes where row i's value of step k is: ap[i * ais + k * aks]. Packed
   A: ais = 1, aks = MR. A row-major A read in place: ais = lda, aks = 1.
   A transposed A, stored (K, M), read in place: ais = 1, aks = lda. Reading
   A in place saves packing it, which matters when the product is narrow
   (N a few tiles wide): every packed value would be used only N / NR
   times. */

#if defined(HPJ__GEMM_AVX512)
/* -- AVX-512: 8 x 32, two zmm accumulators a row; partial tiles (nr < 32)
   load and store under masks, and a tile at most 16 wide uses one vector
   a row -- */
#define HPJ__GEMM_ZMR 8
#define HPJ__GEMM_ZNR 32
#define HPJ__ZDECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
/* the tile's rows of C are read only at the end: ask for them now */
#define HPJ__ZPREF(i)                                                            \
    if (mr > i) {                                                                \
        _mm_prefetch((const char *)(c + (ptrdiff_t)i * ldc), _MM_HINT_T0);       \
        _mm_prefetch((const char *)(c + (ptrdiff_t)i * ldc + 16), _MM_HINT_T0);  \
    }
#define HPJ__ZFMA(i)                                       \
    {                                                      \
        __m512 a_ = _mm512_set1_ps(ap[i * ais]);           \
        c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);        \
        c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);        \
    }
#define HPJ__ZFMA1(i) c##i##0 = _mm512_fmadd_ps(_mm512_set1_ps(ap[i * ais]), b0, c##i##0);
#define HPJ__ZSTORE(i)                                                                     \
    if (mr > i) {                                                                          \
        float *ci_ = c + (ptrdiff_t)i * ldc;                                               \
        __m512 t0_ = _mm512_mul_ps(va, c##i##0), t1_ = _mm512_mul_ps(va, c##i##1);         \
        if (!first) {                                                                      \
            t0_ = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci_), t0_);                      \
            t1_ = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci_ + 16), t1_);                 \
        } else if (beta != 0.0f) {                                                         \
            t0_ = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci_), t0_);                \
            t1_ = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci_ + 16), t1_);           \
        }                                                                                  \
        _mm512_mask_storeu_ps(ci_, m0, t0_);                                               \
        _mm512_mask_storeu_ps(ci_ + 16, m1, t1_);                                          \
    }
static HPJ__INLINE_ALWAYS void hpj__gemm_tile_avx512(int kc, const float *ap, ptrdiff_t ais, ptrdiff_t aks,
                                                     const float *bp, ptrdiff_t ldbk, float *c, ptrdiff_t ldc, int mr,
                                                     int nr, float alpha, float beta, int first) {
    __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
    __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xFFFFu : nr <= 16 ? 0u : (1u << (nr - 16)) - 1u);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    int k;
    HPJ__R8(HPJ__ZDECL)
    HPJ__R8(HPJ__ZPREF)
    if (nr == HPJ__GEMM_ZNR) {
        for (k = 0; k < kc; ++k, ap += aks, bp += ldbk) {
            __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
            HPJ__R8(HPJ__ZFMA)
        }
    } else if (nr <= 16) {
        for (k = 0; k < kc; ++k, ap += aks, bp += ldbk) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, bp);
            HPJ__R8(HPJ__ZFMA1)
        }
    } else {
        for (k = 0; k < kc; ++k, ap += aks, bp += ldbk) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
            HPJ__R8(HPJ__ZFMA)
        }
    }
    HPJ__R8(HPJ__ZSTORE)
}
static void hpj__gemm_kernel_avx512(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                    ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx512(kc, ap, 1, HPJ__GEMM_ZMR, bp, ldbk, c, ldc, mr, nr, alpha, beta, first);
}
static void hpj__gemm_kernel_avx512_rows(int kc, const float *a, ptrdiff_t lda, const float *bp, ptrdiff_t ldbk,
                                         float *c, ptrdiff_t ldc, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx512(kc, a, lda, 1, bp, ldbk, c, ldc, HPJ__GEMM_ZMR, nr, alpha, beta, first);
}
static void hpj__gemm_kernel_avx512_cols(int kc, const float *a, ptrdiff_t lda, const float *bp, ptrdiff_t ldbk,
                                         float *c, ptrdiff_t ldc, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx512(kc, a, 1, lda, bp, ldbk, c, ldc, HPJ__GEMM_ZMR, nr, alpha, beta, first);
}
#endif

#if defined(HPJ__GEMM_AVX2)
/* -- AVX2: 6 x 16, two ymm accumulators a row; full tiles load and store
   whole vectors, partial ones (nr < 16) under lane masks -- */
#define HPJ__GEMM_YMR 6
#define HPJ__GEMM_YNR 16
#define HPJ__YDECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
#define HPJ__YFMA(i)                                       \
    {                                                      \
        __m256 a_ = _mm256_broadcast_ss(ap + i * ais);     \
        c##i##0 = _mm256_fmadd_ps(a_, b0, c##i##0);        \
        c##i##1 = _mm256_fmadd_ps(a_, b1, c##i##1);        \
    }
#define HPJ__YLDU(p, k) _mm256_loadu_ps(p)
#define HPJ__YSTU(p, k, v) _mm256_storeu_ps(p, v)
#define HPJ__YLDM(p, k) _mm256_maskload_ps(p, k)
#define HPJ__YSTM(p, k, v) _mm256_maskstore_ps(p, k, v)
#define HPJ__YSTORE(i, LD, ST)                                                             \
    if (mr > i) {                                                                          \
        float *ci_ = c + (ptrdiff_t)i * ldc;                                               \
        __m256 t0_ = _mm256_mul_ps(va, c##i##0), t1_ = _mm256_mul_ps(va, c##i##1);         \
        if (!first) {                                                                      \
            t0_ = _mm256_add_ps(LD(ci_, k0), t0_);                                         \
            t1_ = _mm256_add_ps(LD(ci_ + 8, k1), t1_);                                     \
        } else if (beta != 0.0f) {                                                         \
            t0_ = _mm256_fmadd_ps(vb, LD(ci_, k0), t0_);                                   \
            t1_ = _mm256_fmadd_ps(vb, LD(ci_ + 8, k1), t1_);                               \
        }                                                                                  \
        ST(ci_, k0, t0_);                                                                  \
        ST(ci_ + 8, k1, t1_);                                                              \
    }
#define HPJ__YSTORE_FULL(i) HPJ__YSTORE(i, HPJ__YLDU, HPJ__YSTU)
#define HPJ__YSTORE_MASK(i) HPJ__YSTORE(i, HPJ__YLDM, HPJ__YSTM)
static HPJ__INLINE_ALWAYS void hpj__gemm_tile_avx2(int kc, const float *ap, ptrdiff_t ais, ptrdiff_t aks,
                                                   const float *bp, ptrdiff_t ldbk, float *c, ptrdiff_t ldc, int mr,
                                                   int nr, float alpha, float beta, int first) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
    __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    int k;
    HPJ__R6(HPJ__YDECL)
    if (nr == HPJ__GEMM_YNR) {
        for (k = 0; k < kc; ++k, ap += aks, bp += ldbk) {
            __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
            HPJ__R6(HPJ__YFMA)
        }
        HPJ__R6(HPJ__YSTORE_FULL)
    } else {
        for (k = 0; k < kc; ++k, ap += aks, bp += ldbk) {
            __m256 b0 = _mm256_maskload_ps(bp, k0), b1 = _mm256_maskload_ps(bp + 8, k1);
            HPJ__R6(HPJ__YFMA)
        }
        HPJ__R6(HPJ__YSTORE_MASK)
    }
}
static void hpj__gemm_kernel_avx2(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                  ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx2(kc, ap, 1, HPJ__GEMM_YMR, bp, ldbk, c, ldc, mr, nr, alpha, beta, first);
}
static void hpj__gemm_kernel_avx2_rows(int kc, const float *a, ptrdiff_t lda, const float *bp, ptrdiff_t ldbk,
                                       float *c, ptrdiff_t ldc, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx2(kc, a, lda, 1, bp, ldbk, c, ldc, HPJ__GEMM_YMR, nr, alpha, beta, first);
}
static void hpj__gemm_kernel_avx2_cols(int kc, const float *a, ptrdiff_t lda, const float *bp, ptrdiff_t ldbk,
                                       float *c, ptrdiff_t ldc, int nr, float alpha, float beta, int first) {
    hpj__gemm_tile_avx2(kc, a, 1, lda, bp, ldbk, c, ldc, HPJ__GEMM_YMR, nr, alpha, beta, first);
}
#endif

/* ==== fast: GEMM, packed and blocked ==== */

/* hpj_gemm's fast sibling: the same function, the same bits (see the
   micro-kernels above), organised for the memory hierarchy.
   - K is cut into the reference's blocks of HPJ__GEMM_KC; the columns of
     C into blocks of HPJ__GEMM_NC, the rows into blocks of HPJ__GEMM_MC.
   - Why pack: the kernel walks op(B) k by k, NR columns at a time, and
     op(A) k by k, MR rows at a time. Copied once into "slivers" laid out
     in exactly that order (B: kc rows of NR values; A: kc steps of MR
     values), the kernel's loads are contiguous whatever the layout of A
     and B (transposed or not), each sliver stays in cache while many
     tiles reuse it, and the edges are padded with zeros. A packed B block
     (KC x NC floats) is reused by every row sliver, a packed A block
     (MC x KC) by every column sliver.
   - When packing does not pay, operands are read in place: a
     non-transposed B used by few rows (M <= HPJ__GEMM_PACKB_M), and full
     slivers of A in the SIMD kernels (a row-major A always; a transposed
     A when the product is narrow, since its rows then stay in L1).
   - Threads: above HPJ__GEMM_PAR_MIN multiply-adds the calling thread's
     OpenMP team shares out tiles of C dynamically; a tile is computed by
     one thread in the same order whoever takes it, so the bits do not
     depend on the team.
   - Small products (attention-sized) skip all of this: one K block, the
     slivers packed on the stack, the tiles in a plain loop.
   Memory: each thread packs into its own thread-local buffers (1.1 MiB),
   so nothing is allocated and calls from several threads at once are
   safe. */
#define HPJ__GEMM_NC 512            /* columns of a packed B block */
#define HPJ__GEMM_MC 128            /* rows of a packed A block (a multiple of every MR) */
#define HPJ__GEMM_BFULL (512 * 512) /* B buffer (floats): a whole 512 x 512 op(B) */
#define HPJ__GEMM_SHARE_ROWS 32     /* rows a tile needs to share a packed B */
#define HPJ__GEMM_SMALL_MNK (64 * 32 * 32)
#define HPJ__GEMM_SMALL_B 4096      /* floats of packed B a small product may have */
#define HPJ__GEMM_PACKB_M 16        /* B is packed when M is above this */

/* One call, as the threads see it. */
typedef struct hpj__gemm_job {
    int transA, transB, M, N, K;
    float alpha, beta;
    const float *A, *B;
    int lda, ldb, ldc;
    float *C;
    int mr, nr; /* the kernel's MR, NR */
    hpj__gemm_kernel kern;
    hpj__gemm_rows_kernel krows; /* non-NULL: full slivers of op(A) are read in place */
    int packB;                   /* 1: B blocks are packed before use */
    float *bshared;              /* the B buffer a team fills together (the calling thread's) */
    const float *bias;           /* (N) or NULL: every row of C starts as it (beta = 1) */
} hpj__gemm_job;

/* hpj_linear_forward's bias: the rows of a tile of C are set to it just
   before the tile's first K block, so the kernel's beta = 1 reads it back
   from cache. That is the reference's order (the bias is the first term of
   each element's sum), without a pass that writes all of C first and a
   GEMM that then reads it back from memory. */
static HPJ__INLINE void hpj__gemm_bias_tile(const hpj__gemm_job *g, float *c, int mr, int jj, int nr) {
    int r;
    for (r = 0; r < mr; ++r) memcpy(c + (ptrdiff_t)r * g->ldc, g->bias + jj, sizeof(float) * (size_t)nr);
}

/* The packing buffers start on a cache line: a sliver row of 16 or 32
   floats then fills whole lines, and the kernels' vector loads of B never
   straddle two. */
#if defined(__GNUC__) || defined(__clang__) || defined(__TINYC__)
#define HPJ__GEMM_ALIGNED __attribute__((aligned(64)))
#else
#define HPJ__GEMM_ALIGNED
#endif
static HPJ__TLS float hpj__gemm_bbuf[HPJ__GEMM_BFULL] HPJ__GEMM_ALIGNED;
static HPJ__TLS float hpj__gemm_abuf[HPJ__GEMM_KC * HPJ__GEMM_MC] HPJ__GEMM_ALIGNED;

/* Packs op(A)(i0 .. i0+mc-1, p0 .. p0+kc-1) into slivers of MR rows:
   sliver s holds kc steps of MR values at ap + s kc MR, zeros past mc. */
static void hpj__gemm_pack_a(float *ap, const hpj__gemm_job *g, int i0, int mc, int p0, int kc) {
    int MR = g->mr, i, k, s;
    ptrdiff_t l = g->lda;
    if (g->transA) { /* A is (K, M): the values of step k are contiguous */
        const float *a = g->A + (ptrdiff_t)p0 * l + i0;
        for (k = 0; k < kc; ++k, a += l) {
            /* hint the row 8 steps on: the rows of a transposed A (a
               weight gradient's, one per node or token) are far apart
               and come from memory, a stride the prefetchers miss */
            if (k + 8 < kc)
                for (i = 0; i < mc; i += 16) HPJ__PREFETCH(a + 8 * l + i);
            for (s = 0; s * MR < mc; ++s) {
                float *o = ap + (ptrdiff_t)s * kc * MR + k * MR;
                int w = HPJ__MIN(MR, mc - s * MR);
                for (i = 0; i < w; ++i) o[i] = a[s * MR + i];
                for (; i < MR; ++i) o[i] = 0.0f;
            }
        }
        return;
    }
    for (s = 0; s * MR < mc; ++s) { /* A is (M, K): a sliver's rows, one after the other */
        const float *a = g->A + (ptrdiff_t)(i0 + s * MR) * l + p0;
        float *o = ap + (ptrdiff_t)s * kc * MR;
        int w = HPJ__MIN(MR, mc - s * MR);
        for (i = 0; i < w; ++i)
            for (k = 0; k < kc; ++k) o[k * MR + i] = a[(ptrdiff_t)i * l + k];
        for (; i < MR; ++i)
            for (k = 0; k < kc; ++k) o[k * MR + i] = 0.0f;
    }
}

#if defined(HPJ__GEMM_AVX512) || defined(HPJ__GEMM_AVX2)
/* dst[c ldd + r] = src[r lds + c] for an 8 x 8 block, in registers: eight
   row loads, three rounds of shuffles, eight row stores, where a scalar
   transpose does 64 strided loads and stores. */
static HPJ__INLINE_ALWAYS void hpj__gemm_transpose8(const float *src, ptrdiff_t lds, float *dst, ptrdiff_t ldd) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds);
    __m256 r2 = _mm256_loadu_ps(src + 2 * lds), r3 = _mm256_loadu_ps(src + 3 * lds);
    __m256 r4 = _mm256_loadu_ps(src + 4 * lds), r5 = _mm256_loadu_ps(src + 5 * lds);
    __m256 r6 = _mm256_loadu_ps(src + 6 * lds), r7 = _mm256_loadu_ps(src + 7 * lds);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

/* Packs op(B)(p0 .. p0+kc-1, j0 .. j0+nc-1) into slivers of NR columns:
   sliver s holds kc rows of NR values at bp + s kc NR, zeros past nc. */
static void hpj__gemm_pack_b(float *bp, const hpj__gemm_job *g, int j0, int nc, int p0, int kc) {
    int NR = g->nr, full = nc / NR, rest = nc - full * NR, s, j, k;
    ptrdiff_t ss = (ptrdiff_t)kc * NR, ldb = g->ldb; /* sliver stride */
    if (!g->transB) {
        /* B is (K, N): row by row, each row read once front to back and
           dealt out to the slivers. (Sliver by sliver would read one
           cache line per row, rows ldb apart: a stride the prefetchers do
           not run ahead of, and this B usually comes from memory.) */
        const float *b = g->B + (ptrdiff_t)p0 * ldb + j0;
        for (k = 0; k < kc; ++k, b += ldb) {
            float *o = bp + (ptrdiff_t)k * NR;
            /* full slivers: copies of a size fixed at compile time, which
               compilers turn into a few vector moves (a variable size
               becomes a call to memcpy) */
            if (NR == 16)
                for (s = 0; s < full; ++s) memcpy(o + s * ss, b + s * 16, 16 * sizeof(float));
            else if (NR == 32)
                for (s = 0; s < full; ++s) memcpy(o + s * ss, b + s * 32, 32 * sizeof(float));
            else
                for (s = 0; s < full; ++s) memcpy(o + s * ss, b + s * NR, (size_t)NR * sizeof(float));
            if (rest) {
                float *ol = o + full * ss;
                for (j = 0; j < rest; ++j) ol[j] = b[full * NR + j];
                for (; j < NR; ++j) ol[j] = 0.0f;
            }
        }
        return;
    }
    for (s = 0; s * NR < nc; ++s) { /* B is (N, K): each column of op(B) is a row of B, read along k */
        float *o = bp + (ptrdiff_t)s * ss;
        int w = HPJ__MIN(NR, nc - s * NR), k8 = 0;
        const float *b = g->B + (ptrdiff_t)(j0 + s * NR) * ldb + p0;
#if defined(HPJ__GEMM_AVX512) || defined(HPJ__GEMM_AVX2)
        if (w == NR && NR % 8 == 0) { /* a full sliver: 8 x 8 blocks, then the last k */
            for (k8 = 0; k8 + 8 <= kc; k8 += 8)
                for (j = 0; j < NR; j += 8) hpj__gemm_transpose8(b + (ptrdiff_t)j * ldb + k8, ldb, o + k8 * NR + j, NR);
            for (j = 0; j < NR; ++j)
                for (k = k8; k < kc; ++k) o[k * NR + j] = b[(ptrdiff_t)j * ldb + k];
            continue;
        }
#endif
        (void)k8;
        for (j = 0; j < w; ++j)
            for (k = 0; k < kc; ++k) o[k * NR + j] = b[(ptrdiff_t)j * ldb + k];
        for (; j < NR; ++j)
            for (k = 0; k < kc; ++k) o[k * NR + j] = 0.0f;
    }
}

/* One K block (p0, kc) of the C rows in row slivers [s0, s1) and column
   slivers [tc, tcn): B comes packed (ldbk = NR, slivers bstride apart) or
   in place (ldbk = ldb, bstride = NR); A is packed here MC rows at a time
   or read in place. */
static void hpj__gemm_block(const hpj__gemm_job *g, int s0, int s1, int tc, int tcn, int p0, int kc, const float *bb,
                            ptrdiff_t ldbk, ptrdiff_t bstride) {
    int MR = g->mr, NR = g->nr, mc_sl = HPJ__GEMM_MC / MR, first = p0 == 0;
    ptrdiff_t astride = (ptrdiff_t)kc * MR;
    int sb, s, t;
    if (g->krows) { /* A read in place; only a partial last sliver is packed */
        int nl = (kc + 15) / 16, per, q, e, r, qr, ql;
        for (s = s0; s < s1; ++s) {
            int i0 = s * MR, mr = HPJ__MIN(MR, g->M - i0), nx = s + 1 < s1 ? HPJ__MIN(MR, g->M - i0 - MR) : 0;
            const float *a = g->transA ? g->A + (ptrdiff_t)p0 * g->lda + i0 : g->A + (ptrdiff_t)i0 * g->lda + p0;
            if (mr < MR) hpj__gemm_pack_a(hpj__gemm_abuf, g, i0, mr, p0, kc);
            /* While this sliver runs, hint the cache lines the next one
               starts on: its rows of a row-major A (nx rows of nl lines,
               spread over the column tiles) and its rows of C. Its first
               tile would otherwise wait for them from memory. */
            per = g->transA ? 0 : (nx * nl + (tcn - tc) - 1) / HPJ__MAX(1, tcn - tc);
            q = qr = ql = 0; /* line q is line ql of row qr */
            for (t = tc; t < tcn; ++t) {
                int jj = t * NR, nr = HPJ__MIN(NR, g->N - jj);
                float *c = g->C + (ptrdiff_t)i0 * g->ldc + jj;
                for (e = HPJ__MIN(nx * nl, q + per); q < e; ++q) {
                    HPJ__PREFETCH(a + (ptrdiff_t)(MR + qr) * g->lda + ql * 16);
                    if (++ql == nl) {
                        ql = 0;
                        ++qr;
                    }
                }
                for (r = 0; r < nx; ++r) HPJ__PREFETCHW(c + (ptrdiff_t)(MR + r) * g->ldc);
                if (first && g->bias) hpj__gemm_bias_tile(g, c, mr, jj, nr);
                if (mr == MR)
                    g->krows(kc, a, g->lda, bb + (t - tc) * bstride, ldbk, c, g->ldc, nr, g->alpha, g->beta, first);
                else
                    g->kern(kc, hpj__gemm_abuf, bb + (t - tc) * bstride, ldbk, c, g->ldc, mr, nr, g->alpha, g->beta,
                            first);
            }
        }
        return;
    }
    for (sb = s0; sb < s1; sb += mc_sl) {
        int se = HPJ__MIN(s1, sb + mc_sl);
        int ib = sb * MR, mc = HPJ__MIN(g->M, se * MR) - ib;
        hpj__gemm_pack_a(hpj__gemm_abuf, g, ib, mc, p0, kc);
        for (s = sb; s < se; ++s) {
            int i0 = s * MR, mr = HPJ__MIN(MR, g->M - i0);
            const float *ap = hpj__gemm_abuf + (s - sb) * astride;
            for (t = tc; t < tcn; ++t) {
                int jj = t * NR, nr = HPJ__MIN(NR, g->N - jj);
                float *c = g->C + (ptrdiff_t)i0 * g->ldc + jj;
                if (first && g->bias) hpj__gemm_bias_tile(g, c, mr, jj, nr);
                g->kern(kc, ap, bb + (t - tc) * bstride, ldbk, c, g->ldc, mr, nr, g->alpha, g->beta, first);
            }
        }
    }
}

/* The C rectangle of row slivers [s0, s1) x column slivers [t0, t1), every
   K block in order, B packed into this thread's buffer (or read in place). */
static void hpj__gemm_rect(const hpj__gemm_job *g, int s0, int s1, int t0, int t1) {
    int NR = g->nr, nc_sl = HPJ__GEMM_NC / NR, tc, p0;
    for (tc = t0; tc < t1; tc += nc_sl) {
        int tcn = HPJ__MIN(t1, tc + nc_sl);
        int j0 = tc * NR, nc = HPJ__MIN(g->N, tcn * NR) - j0;
        for (p0 = 0; p0 < g->K; p0 += HPJ__GEMM_KC) {
            int kc = HPJ__MIN(HPJ__GEMM_KC, g->K - p0);
            if (g->packB) {
                hpj__gemm_pack_b(hpj__gemm_bbuf, g, j0, nc, p0, kc);
                hpj__gemm_block(g, s0, s1, tc, tcn, p0, kc, hpj__gemm_bbuf, NR, (ptrdiff_t)kc * NR);
            } else {
                hpj__gemm_block(g, s0, s1, tc, tcn, p0, kc, g->B + (ptrdiff_t)p0 * g->ldb + j0, g->ldb, NR);
            }
        }
    }
}

/* The share of one thread in a team of nth. With many rows and a packed
   B, the team packs B together into the calling thread's buffer (all of
   it at once when it fits, else block by block, a barrier after each
   packing) and then shares out blocks of rows, so B is packed once and
   not once per thread. Otherwise each tile is a rectangle of C that packs
   its own B: few rows split the columns, a B read in place gives about
   four tiles a thread. Tiles go out dynamically, so a thread the OS
   preempts holds up only its current tile. */
static void hpj__gemm_team(hpj__gemm_job *g, int nth) {
    int MR = g->mr, NR = g->nr, mc_sl = HPJ__GEMM_MC / MR, nc_sl = HPJ__GEMM_NC / NR;
    int ms = (g->M + MR - 1) / MR, ns = (g->N + NR - 1) / NR;
    int rblk, nrb, ncg, cgw, nit, it, rows, i;
    if (nth == 1) {
        hpj__gemm_rect(g, 0, ms, 0, ns);
        return;
    }
    rblk = HPJ__MAX(1, HPJ__MIN(mc_sl, (ms + 4 * nth - 1) / (4 * nth))); /* about 4 row blocks a thread */
    /* a packed A (transposed): row blocks of at least SHARE_ROWS rows, so
       that a mid-sized M shares one packed B below instead of taking
       column tiles that would each pack all of A again */
    if (!g->krows) rblk = HPJ__MIN(mc_sl, HPJ__MAX(rblk, (HPJ__GEMM_SHARE_ROWS + MR - 1) / MR));
    nrb = (ms + rblk - 1) / rblk;
    rows = g->packB && nrb >= 2 * nth && rblk * MR >= HPJ__GEMM_SHARE_ROWS;
    if (rows && (size_t)ns * NR * (size_t)g->K <= HPJ__GEMM_BFULL) {
        /* all of B at once: sliver t holds its K rows at t K NR, so K
           block p0 starts p0 NR further on */
        ptrdiff_t ss = (ptrdiff_t)g->K * NR;
        HPJ__OMP(for schedule(dynamic, 1))
        for (i = 0; i < ns; ++i) hpj__gemm_pack_b(g->bshared + i * ss, g, i * NR, HPJ__MIN(NR, g->N - i * NR), 0, g->K);
        HPJ__OMP(for schedule(dynamic, 1) nowait)
        for (i = 0; i < nrb; ++i) {
            int tc, p0;
            for (tc = 0; tc < ns; tc += nc_sl)
                for (p0 = 0; p0 < g->K; p0 += HPJ__GEMM_KC)
                    hpj__gemm_block(g, i * rblk, HPJ__MIN(ms, (i + 1) * rblk), tc, HPJ__MIN(ns, tc + nc_sl), p0,
                                    HPJ__MIN(HPJ__GEMM_KC, g->K - p0), g->bshared + tc * ss + (ptrdiff_t)p0 * NR, NR,
                                    ss);
        }
        return;
    }
    if (rows) { /* B block by block */
        int tc, p0;
        for (tc = 0; tc < ns; tc += nc_sl) {
            int tcn = HPJ__MIN(ns, tc + nc_sl);
            for (p0 = 0; p0 < g->K; p0 += HPJ__GEMM_KC) {
                int kc = HPJ__MIN(HPJ__GEMM_KC, g->K - p0);
                /* each worksharing loop ends with a barrier: the block is
                   complete before use, and used up before it is replaced */
                HPJ__OMP(for schedule(dynamic, 1))
                for (i = tc; i < tcn; ++i)
                    hpj__gemm_pack_b(g->bshared + (ptrdiff_t)(i - tc) * kc * NR, g, i * NR, HPJ__MIN(NR, g->N - i * NR),
                                     p0, kc);
                HPJ__OMP(for schedule(dynamic, 1))
                for (i = 0; i < nrb; ++i)
                    hpj__gemm_block(g, i * rblk, HPJ__MIN(ms, (i + 1) * rblk), tc, tcn, p0, kc, g->bshared, NR,
                                    (ptrdiff_t)kc * NR);
            }
        }
        return;
    }
    if (g->packB) { /* few rows: split the columns, 2 tiles a thread */
        rblk = ms;
        nrb = 1;
        ncg = HPJ__MIN(ns, 2 * nth);
    } else { /* B in place: about 4 tiles a thread */
        ncg = HPJ__MAX(1, HPJ__MIN(ns, (4 * nth + nrb - 1) / nrb));
    }
    cgw = (ns + ncg - 1) / ncg;
    ncg = (ns + cgw - 1) / cgw;
    nit = nrb * ncg;
    HPJ__OMP(for schedule(dynamic, 1))
    for (it = 0; it < nit; ++it) {
        int rb = it / ncg, cg = it % ncg;
        hpj__gemm_rect(g, rb * rblk, HPJ__MIN(ms, (rb + 1) * rblk), cg * cgw, HPJ__MIN(ns, (cg + 1) * cgw));
    }
}

/* hpj_gemm's fast path (M, N, K > 0 and alpha != 0: hpj_gemm has handled
   the rest); with a bias (beta = 1), every row of C starts as it. The
   kernel follows hpj_paths(). */
static void hpj__gemm_fast(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {
    hpj__gemm_job g;
    int level = hpj_paths();
    g.transA = transA != 0;
    g.transB = transB != 0;
    g.M = M;
    g.N = N;
    g.K = K;
    g.alpha = alpha;
    g.beta = beta;
    g.A = A;
    g.B = B;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.C = C;
    g.bias = bias;
    g.bshared = hpj__gemm_bbuf; /* the calling thread is thread 0 of the team */
    g.kern = hpj__gemm_kernel_c;
    g.krows = NULL;
    g.mr = HPJ__GEMM_PMR;
    g.nr = HPJ__GEMM_PNR;
    (void)level;
#if defined(HPJ__GEMM_AVX2)
    if (level == HPJ_PATHS_AVX2) {
        g.kern = hpj__gemm_kernel_avx2;
        g.krows = !g.transA ? hpj__gemm_kernel_avx2_rows : N <= 4 * HPJ__GEMM_YNR ? hpj__gemm_kernel_avx2_cols : NULL;
        g.mr = HPJ__GEMM_YMR;
        g.nr = HPJ__GEMM_YNR;
    }
#endif
#if defined(HPJ__GEMM_AVX512)
    if (level >= HPJ_PATHS_AVX512) {
        g.kern = hpj__gemm_kernel_avx512;
        g.krows = !g.transA ? hpj__gemm_kernel_avx512_rows : N <= 4 * HPJ__GEMM_ZNR ? hpj__gemm_kernel_avx512_cols : NULL;
        g.mr = HPJ__GEMM_ZMR;
        g.nr = HPJ__GEMM_ZNR;
    }
#endif
    if ((double)M * N * K <= HPJ__GEMM_SMALL_MNK && K <= HPJ__GEMM_KC &&
        (size_t)K * (size_t)((N + g.nr - 1) / g.nr * g.nr) <= HPJ__GEMM_SMALL_B) {
        /* a small product: one K block, on this thread, packed on the stack */
        float bbuf[HPJ__GEMM_SMALL_B] HPJ__GEMM_ALIGNED, abuf[HPJ__GEMM_KC * 8] HPJ__GEMM_ALIGNED; /* every MR <= 8 */
        const float *bb = bbuf;
        ptrdiff_t ldbk = g.nr, bstride = (ptrdiff_t)K * g.nr;
        int i0, t;
        if (!g.transB && g.kern != hpj__gemm_kernel_c) { /* B in place */
            bb = B;
            ldbk = ldb;
            bstride = g.nr;
        } else {
            hpj__gemm_pack_b(bbuf, &g, 0, N, 0, K);
        }
        for (i0 = 0; i0 < M; i0 += g.mr) {
            int mr = HPJ__MIN(g.mr, M - i0), inplace = g.krows && mr == g.mr;
            if (!inplace) hpj__gemm_pack_a(abuf, &g, i0, mr, 0, K);
            for (t = 0; t * g.nr < N; ++t) {
                float *c = C + (ptrdiff_t)i0 * ldc + t * g.nr;
                int nr = HPJ__MIN(g.nr, N - t * g.nr);
                if (bias) hpj__gemm_bias_tile(&g, c, mr, t * g.nr, nr);
                if (inplace)
                    g.krows(K, transA ? A + i0 : A + (ptrdiff_t)i0 * lda, lda, bb + t * bstride, ldbk, c, ldc, nr, alpha,
                            beta, 1);
                else
                    g.kern(K, abuf, bb + t * bstride, ldbk, c, ldc, mr, nr, alpha, beta, 1);
            }
        }
        return;
    }
    /* B is read in place when its rows are contiguous and few row slivers
       reuse it; otherwise (B transposed, many rows, or the portable kernel,
       which wants zero-padded slivers) it is packed */
    g.packB = g.transB || M > HPJ__GEMM_PACKB_M || g.kern == hpj__gemm_kernel_c;
    {
        double work = (double)M * N * K;
        (void)work;
        HPJ__OMP(parallel if (work >= (double)HPJ__GEMM_PAR_MIN))
        {
            int nth = 1;
#ifdef _OPENMP
            nth = omp_get_num_threads();
#endif
            hpj__gemm_team(&g, nth);
        }
    }
}


/* ---- anchor: fast nn ----
   (the nn layers' fast siblings follow this line)
   ---- */

/* 1 when two pieces of work can run side by side, one per thread: exactly
   two threads, outside any parallel region, nested regions inactive (so
   each piece's own loops run on its thread alone), no dynamic team sizes,
   and thread-local GEMM buffers. */
static int hpj__two_ok(void) {
#if defined(_OPENMP) && !defined(HPJ__NO_TLS)
    return omp_get_max_threads() == 2 && !omp_in_parallel() && omp_get_max_active_levels() == 1 &&
           omp_get_thread_limit() >= 2 && !omp_get_dynamic();
#else
    return 0;
#endif
}

/* ==== fast: column sums by panels ====
   hpj__colsum_add walks one column at a time down all the rows, a stride
   of lds floats per step. Here threads take blocks of 64 columns, and
   each block runs as panels of 16 running sums that move along the rows
   together (contiguous loads the compiler vectorizes). Every column is
   still summed in double in row order and rounded once: the reference's
   bits. */
static void hpj__fast_colsum_add(float *dst, const float *src, int N, int D, ptrdiff_t lds) {
    int nb = (D + 63) / 64, jb;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (jb = 0; jb < nb; ++jb) {
        int b1 = HPJ__MIN(D, jb * 64 + 64), j0;
        for (j0 = jb * 64; j0 < b1; j0 += 16) {
            double acc[16];
            int w = HPJ__MIN(16, b1 - j0), i, j;
            for (j = 0; j < 16; ++j) acc[j] = 0.0;
            for (i = 0; i < N; ++i) {
                const float *r = src + (ptrdiff_t)i * lds + j0;
                HPJ__OMP(simd)
                for (j = 0; j < w; ++j) acc[j] += r[j];
            }
            for (j = 0; j < w; ++j) dst[j0 + j] += (float)acc[j];
        }
    }
}

/* ==== fast: linear backward, the two parts side by side ====
   The input gradient (dinp = dout W) and the weight and bias gradients
   (dW += dout^T inp, db += column sums) read the same dout and write
   disjoint outputs. With exactly two threads (hpj__two_ok) and products
   small enough that a team gains little inside each one, one thread
   takes each part instead of the team taking each part in turn: fewer
   barriers and hand-overs. Each part is computed exactly as alone (by
   hpj__linear_back2 given only that part's outputs), so the bits are the
   reference's. */
/* Products of at most this many multiply-adds are small enough that two
   of them, one per thread, beat one team on each in turn. */
#ifndef HPJ__PAIR_MACS
#define HPJ__PAIR_MACS 4e7
#endif
static int hpj__linear_back_pair(float *dinp, float beta, float *dW, float *db, const float *dout, const float *inp,
                                 const float *W, int N, int Din, int Dout) {
    int part;
    if (!dinp || (!dW && !db) || (double)N * Din * Dout > HPJ__PAIR_MACS || !hpj__two_ok()) return 0;
    HPJ__OMP(parallel for num_threads(2) schedule(static, 1))
    for (part = 0; part < 2; ++part) /* (one part's outputs alone: back2 runs it as the reference) */
        hpj__linear_back2(part ? NULL : dinp, beta, part ? dW : NULL, part ? db : NULL, dout, inp, W, N, Din, Dout);
    return 1;
}

/* ==== fast: partitioner blocks cached across calls ====
   hpj__pw_alloc and hpj__pw_release through the workspace's cache. Every
   block starts with a 64-byte header holding its payload size. A request
   takes the smallest cached block that fits, else a new block with 1/8
   headroom (the next, slightly larger graph then fits it too); a released
   block is kept, and when the cache is full it replaces the smallest
   cached block if larger. Only where the memory comes from changes, never
   what is computed in it. */
#define HPJ__PW_HEAD 64 /* header bytes before the payload */

static void *hpj__fast_pw_alloc(hpj_part_work *pw, size_t bytes, const char *what) {
    int i, best = -1;
    size_t need, total;
    unsigned char *b;
    if (bytes == 0) bytes = 1;
    for (i = 0; i < pw->nblk; ++i) /* best fit among the cached blocks */
        if (pw->cap[i] >= bytes && (best < 0 || pw->cap[i] < pw->cap[best])) best = i;
    if (best >= 0) {
        b = pw->blk[best];
        pw->blk[best] = pw->blk[--pw->nblk];
        pw->cap[best] = pw->cap[pw->nblk];
        return b + HPJ__PW_HEAD;
    }
    need = bytes + bytes / 8;
    need = (need + 63) & ~(size_t)63;
    if (need < bytes || hpj__add_size(need, HPJ__PW_HEAD, &total)) {
        hpj__fail(HPJ_ERR_NOMEM, "%s: size overflow (%zu bytes)", what, bytes);
        return NULL;
    }
    if (!(b = (unsigned char *)hpj__alloc(total, what))) return NULL;
    memcpy(b, &need, sizeof need);
    return b + HPJ__PW_HEAD;
}

static void hpj__fast_pw_release(hpj_part_work *pw, void *p) {
    unsigned char *b;
    size_t cap;
    int i, small = 0;
    if (!p) return;
    b = (unsigned char *)p - HPJ__PW_HEAD;
    memcpy(&cap, b, sizeof cap);
    if (pw->nblk < HPJ__PW_SLOTS) {
        pw->blk[pw->nblk] = b;
        pw->cap[pw->nblk++] = cap;
        return;
    }
    for (i = 1; i < pw->nblk; ++i) /* full: keep the larger blocks */
        if (pw->cap[i] < pw->cap[small]) small = i;
    if (pw->cap[small] >= cap) {
        hpj__free(b);
        return;
    }
    hpj__free(pw->blk[small]);
    pw->blk[small] = b;
    pw->cap[small] = cap;
}

static void hpj__fast_pw_drop(hpj_part_work *pw) {
    int i;
    for (i = 0; i < pw->nblk; ++i) hpj__free(pw->blk[i]);
    pw->nblk = 0;
}

/* ==== fast: coarse neighbour lists merged in a small hash table ====
   hpj__contract_lists maps a coarse neighbour to its slot through htab,
   an array of n entries: on a large graph most lookups miss the cache. A
   pair of small total degree instead uses a 2048-slot open-addressing
   table that stays in L1 (the rest use htab as the reference does).
   Neighbours enter each list in the same order and their weights add up
   as integers: the same coarse graph. */
static int32_t hpj__fast_contract_lists(const hpj__pg *g, hpj__pws *w, hpj__pg *c) {
    const int32_t *xadj = g->xadj, *adj = g->adj, *adjw = g->adjw, *vw = g->vw, *cmap = g->cmap, *match = w->match;
    int32_t *htab = w->htab, *hk = w->hkey, *cx = c->xadj, *ca = c->adj, *cw = c->adjw, v, e = 0;
    cx[0] = 0;
    for (v = 0; v < g->n; ++v) {
        int32_t u = match[v], cv, start = e, x, j, pass, npass = (u == v ? 1 : 2);
        int32_t wd = 0, deg = xadj[v + 1] - xadj[v] + (u != v ? xadj[u + 1] - xadj[u] : 0);
        if (u < v) continue;
        cv = cmap[v];
        if (deg <= HPJ__PART_HASH / 4) {
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
            for (j = start; j < e; ++j) { /* empty the table again */
                int32_t hh = ca[j] & (HPJ__PART_HASH - 1);
                while (hk[hh] != j) hh = (hh + 1) & (HPJ__PART_HASH - 1);
                hk[hh] = -1;
            }
        } else {
            for (pass = 0; pass < npass; ++pass) {
                x = pass ? u : v;
                for (j = xadj[x]; j < xadj[x + 1]; ++j) {
                    int32_t cu = cmap[adj[j]], sl;
                    if (cu == cv) continue;
                    sl = htab[cu];
                    if (sl < 0) {
                        htab[cu] = e;
                        ca[e] = cu;
                        cw[e] = adjw[j];
                        ++e;
                    } else {
                        cw[sl] += adjw[j];
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
    return e;
}

/* ==== fast: level 0 borrows the caller's graph ====
   hpj__level0 copies the caller's CSR to drop self-loops and fill in
   unit weights. A graph without self-loops is used where it is: only the
   missing weights and the weighted degrees are written. The arrays hold
   the same numbers either way. */
static hpj_status hpj__fast_level0(const hpj_graph *gin, hpj_part_work *pw, hpj__pg *g0, int32_t **cur) {
    int32_t **arr[5], n = gin->n, v, j;
    size_t len[5];
    int c = 0;
    arr[c] = &g0->wdeg; len[c++] = (size_t)n;
    arr[c] = &g0->cmap; len[c++] = (size_t)n;
    arr[c] = cur; len[c++] = (size_t)n;
    if (!gin->vwgt) { arr[c] = &g0->vw; len[c++] = (size_t)n; }
    if (!gin->ewgt) { arr[c] = &g0->adjw; len[c++] = (size_t)gin->nnz; }
    if (!(g0->mem = hpj__part_block(pw, arr, len, c, "partition"))) return HPJ_ERR_NOMEM;
    g0->xadj = (int32_t *)(uintptr_t)gin->rowptr;
    g0->adj = (int32_t *)(uintptr_t)gin->col;
    g0->nnz = gin->nnz;
    if (gin->vwgt) g0->vw = (int32_t *)(uintptr_t)gin->vwgt;
    else for (v = 0; v < n; ++v) g0->vw[v] = 1;
    if (gin->ewgt) g0->adjw = (int32_t *)(uintptr_t)gin->ewgt;
    else for (j = 0; j < gin->nnz; ++j) g0->adjw[j] = 1;
    for (v = 0; v < n; ++v) {
        int32_t d = 0;
        for (j = g0->xadj[v]; j < g0->xadj[v + 1]; ++j) d += g0->adjw[j];
        g0->wdeg[v] = d;
    }
    return HPJ_OK;
}

/* ==== fast: projection that rescans only the old boundary ====
   hpj__project recounts the external degree of every fine vertex. A fine
   vertex whose coarse vertex had none has none either (its neighbours
   all lie in coarse vertices of its own part), so only the fine vertices
   of coarse boundary vertices are scanned. That needs the coarser
   level's degrees while the finer ones are written: w->ed and w->edc
   trade places at each level. Part weights and the cut carry over
   unchanged; the boundary list comes out in the same order. */
static void hpj__fast_project(hpj__pws *w, hpj__kw *s, const hpj__pg *f, int32_t *part) {
    const int32_t *cmap = f->cmap, *xadj = f->xadj, *adj = f->adj, *adjw = f->adjw, *ced = s->ed, *cpart = s->part;
    int32_t v, j, *t = w->ed;
    w->ed = w->edc;
    w->edc = t;
    s->g = f;
    s->part = part;
    s->ed = w->ed;
    for (v = 0; v < f->n; ++v) part[v] = cpart[cmap[v]];
    if (s->cnt) {
        memset(s->cnt, 0, sizeof(int32_t) * (size_t)s->k);
        for (v = 0; v < f->n; ++v) s->cnt[part[v]]++;
    }
    s->nbnd = 0;
    for (v = 0; v < f->n; ++v) {
        int32_t e = 0, p = part[v];
        s->bpos[v] = -1;
        if (ced[cmap[v]] > 0)
            for (j = xadj[v]; j < xadj[v + 1]; ++j)
                if (part[adj[j]] != p) e += adjw[j];
        s->ed[v] = e;
        if (e > 0) {
            s->bpos[v] = s->nbnd;
            s->bnd[s->nbnd++] = v;
        }
    }
}

/* ==== fast: LayerNorm, row sums in lanes, one copy per gamma/beta case ====
   The reference sums a row's values one after the other, a chain of
   dependent additions that the compiler must keep in order. Here the sums
   of a row (its mean and variance, and the backward's two means) run in
   16 independent lanes combined in a fixed tree (hpj__sum), which the
   compiler vectorizes, with bits that do not depend on the ISA. The
   reference also tests gamma and beta inside its loops; here they are
   tested outside: hpj__ln_apply and hpj__ln_back_row take constant flags
   and are called once per case, so each inlined copy is a plain loop (see
   the note below); and dgamma / dbeta take blocks of 32 columns, so that
   a row's 32 values are read together (the same sums in the same order
   as the reference's: the same bits). The lanes add a row's values in
   another order than the reference, so the two agree to rounding, not to
   the bit (a test holds them within a tolerance). */

/* Sum of x (n) with 16 lanes, as hpj__dot. */
static HPJ__INLINE float hpj__sum(const float *x, int n) {
    float acc[16];
    int i = 0, l;
    for (l = 0; l < 16; ++l) acc[l] = 0.0f;
    for (; i + 16 <= n; i += 16)
        for (l = 0; l < 16; ++l) acc[l] += x[i + l];
    for (l = 0; i + l < n; ++l) acc[l] += x[i + l];
    for (l = 0; l < 8; ++l) acc[l] += acc[l + 8];
    for (l = 0; l < 4; ++l) acc[l] += acc[l + 4];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

/* 1/sqrt(var + eps) of a row of D values with mean mu: the squared
   deviations summed in 16 lanes by fused multiply-adds, the lanes added
   as in hpj__sum. */
static float hpj__ln_rstd(const float *x, float mu, int D, float eps) {
    float acc[16];
    int j = 0, l;
    for (l = 0; l < 16; ++l) acc[l] = 0.0f;
    for (; j + 16 <= D; j += 16)
        for (l = 0; l < 16; ++l) {
            float d = x[j + l] - mu;
            acc[l] = HPJ__FMAF(d, d, acc[l]);
        }
    for (l = 0; j + l < D; ++l) {
        float d = x[j + l] - mu;
        acc[l] = HPJ__FMAF(d, d, acc[l]);
    }
    return 1.0f / sqrtf(hpj__sum(acc, 16) / (float)D + eps);
}

/* One row of the LayerNorm input gradient, g = dy gamma (dy with no gamma),
   the two row means summed in 16 lanes. */
static HPJ__INLINE_ALWAYS void hpj__ln_back_row(float *dx, const float *x, const float *dy, const float *gamma,
                                                float mu, float rs, int D, int has_gamma) {
    float ag[16], agx[16], mg, mgx;
    int j = 0, l;
    for (l = 0; l < 16; ++l) ag[l] = agx[l] = 0.0f;
    for (; j + 16 <= D; j += 16)
        for (l = 0; l < 16; ++l) {
            float g = has_gamma ? dy[j + l] * gamma[j + l] : dy[j + l];
            float xh = (x[j + l] - mu) * rs;
            ag[l] += g;
            agx[l] = HPJ__FMAF(g, xh, agx[l]);
        }
    for (l = 0; j + l < D; ++l) {
        float g = has_gamma ? dy[j + l] * gamma[j + l] : dy[j + l];
        float xh = (x[j + l] - mu) * rs;
        ag[l] += g;
        agx[l] = HPJ__FMAF(g, xh, agx[l]);
    }
    mg = hpj__sum(ag, 16) / (float)D;
    mgx = hpj__sum(agx, 16) / (float)D;
    HPJ__OMP(simd)
    for (j = 0; j < D; ++j) {
        float g = has_gamma ? dy[j] * gamma[j] : dy[j];
        float xh = (x[j] - mu) * rs;
        dx[j] += rs * (g - mg - xh * mgx);
    }
}

/* Optional operands (gamma, beta, a saved ReLU output) are tested outside
   the loops: the helpers take constant flags and are called once per
   combination, so each inlined copy has a plain loop. Tested inside, a
   compiler may turn `if (gamma) v *= gamma[j]` into masked loads, which
   some processors complete slowly when the pointer is NULL. */
static HPJ__INLINE_ALWAYS void hpj__ln_apply(float *y, const float *x, float mu, float rs, const float *gamma,
                                             const float *beta, int D, int has_gamma, int has_beta) {
    int j;
    HPJ__OMP(simd)
    for (j = 0; j < D; ++j) {
        float v = (x[j] - mu) * rs;
        if (has_gamma) v *= gamma[j];
        if (has_beta) v += beta[j];
        y[j] = v;
    }
}

static void hpj__fast_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gamma,
                                        const float *beta, int N, int D, float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        const float *x = inp + (ptrdiff_t)i * D;
        float *y = out + (ptrdiff_t)i * D;
        float mu = hpj__sum(x, D) / (float)D, rs = hpj__ln_rstd(x, mu, D, eps);
        if (mean) mean[i] = mu;
        if (rstd) rstd[i] = rs;
        if (gamma && beta) hpj__ln_apply(y, x, mu, rs, gamma, beta, D, 1, 1);
        else if (gamma) hpj__ln_apply(y, x, mu, rs, gamma, beta, D, 1, 0);
        else if (beta) hpj__ln_apply(y, x, mu, rs, gamma, beta, D, 0, 1);
        else hpj__ln_apply(y, x, mu, rs, gamma, beta, D, 0, 0);
    }
}

static void hpj__fast_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout,
                                         const float *inp, const float *gamma, const float *mean, const float *rstd,
                                         int N, int D) {
    int i;
    if (N <= 0 || D <= 0) return;
    /* out = xhat gamma + beta, xhat = (x - mean) rstd */
    if (dinp) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (i = 0; i < N; ++i) {
            const float *x = inp + (ptrdiff_t)i * D, *dy = dout + (ptrdiff_t)i * D;
            float *dx = dinp + (ptrdiff_t)i * D;
            if (gamma) hpj__ln_back_row(dx, x, dy, gamma, mean[i], rstd[i], D, 1);
            else hpj__ln_back_row(dx, x, dy, gamma, mean[i], rstd[i], D, 0);
        }
    }
    if (dgamma || dbeta) {
        /* dgamma += sum over rows of dout xhat, dbeta += sum of dout: per
           column in row order, in double (the product of two floats is
           exact in double); threads take blocks of 32 columns */
        int nb = (D + 31) / 32, jb;
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (jb = 0; jb < nb; ++jb) {
            double sg[32], sb[32];
            int j0 = jb * 32, w = HPJ__MIN(32, D - j0), r, j;
            for (j = 0; j < w; ++j) sg[j] = sb[j] = 0.0;
            for (r = 0; r < N; ++r) {
                const float *x = inp + (ptrdiff_t)r * D + j0, *dy = dout + (ptrdiff_t)r * D + j0;
                float mu = mean[r], rs = rstd[r];
                for (j = 0; j < w; ++j) {
                    sg[j] += (double)dy[j] * ((x[j] - mu) * rs);
                    sb[j] += dy[j];
                }
            }
            for (j = 0; j < w; ++j) {
                if (dgamma) dgamma[j0 + j] += (float)sg[j];
                if (dbeta) dbeta[j0 + j] += (float)sb[j];
            }
        }
    }
}

/* ==== fast: BatchNorm row blocks ====
   The reference sums each channel down its column, row after row: plain,
   but each step of that walk lands on another cache line. Here the rows
   are cut into the HPJ__BN_RB fixed blocks (hpj__bn_r) and each block sums
   all channels of its rows at once, reading every row straight through,
   in double and in row order; the blocks' sums are added in block order,
   so the bits do not depend on the thread count. With several threads
   every pass (statistics, output, backward) gives each thread the same
   blocks (a static schedule over the blocks), so a thread reads rows it
   has just read or written itself; the blocks' sums then live in a
   scratch of HPJ__BN_WS(D) doubles (borrowed through HPJ_MALLOC, or the
   data-parallel run's). Alone (or if that scratch cannot be had) the same
   sums run by channel panels of HPJ__BN_PANEL on the stack: the same
   arithmetic in the same order, so the same bits. The reference adds each
   channel's rows in one run instead of by blocks, so the two agree to
   rounding (a test holds them within a tolerance), not to the bit.
 */
#define HPJ__BN_PANEL 256
/* One row (w channels) of a BatchNorm output: v = (x - m) s (training: m
   the batch mean, s its rstd) or v = (x - m) / s (evaluation: m the
   running mean, s = sqrt(running_var + eps)), then gamma, beta, ReLU. */
static HPJ__INLINE_ALWAYS void hpj__bn_row(float *y, const float *x, const float *m, const float *s,
                                           const float *gamma, const float *beta, int w, int relu, int divide,
                                           int has_gamma, int has_beta) {
    int c;
    HPJ__OMP(simd)
    for (c = 0; c < w; ++c) {
        float v = divide ? (x[c] - m[c]) / s[c] : (x[c] - m[c]) * s[c];
        if (has_gamma) v *= gamma[c];
        if (has_beta) v += beta[c];
        y[c] = relu && !(v > 0.0f) ? 0.0f : v;
    }
}
static HPJ__INLINE_ALWAYS void hpj__bn_row_any(float *y, const float *x, const float *m, const float *s,
                                               const float *gamma, const float *beta, int w, int relu, int divide) {
    if (gamma && beta) hpj__bn_row(y, x, m, s, gamma, beta, w, relu, divide, 1, 1);
    else if (gamma) hpj__bn_row(y, x, m, s, gamma, beta, w, relu, divide, 1, 0);
    else if (beta) hpj__bn_row(y, x, m, s, gamma, beta, w, relu, divide, 0, 1);
    else hpj__bn_row(y, x, m, s, gamma, beta, w, relu, divide, 0, 0);
}

/* Channel c's total over the blocks' sums p (RB, D), in block order. */
static double hpj__bn_total(const double *p, int D, int c) {
    double t = 0.0;
    int b;
    for (b = 0; b < HPJ__BN_RB; ++b) t += p[(size_t)b * D + c];
    return t;
}

/* Block b's sums over channels [c0, c0 + w): p[c] = the sum over the
   block's rows of x[c] (m = NULL) or of (x[c] - m[c])^2, in row order;
   with cnt, row r counted cnt[r] times (a class of equal rows). */
static void hpj__bn_part(double *p, const float *inp, int N, int D, int b, int c0, int w, const double *m,
                         const int32_t *cnt) {
    int r, c, r1 = hpj__bn_r(N, b + 1);
    for (c = 0; c < w; ++c) p[c] = 0.0;
    for (r = hpj__bn_r(N, b); r < r1; ++r) {
        const float *x = inp + (ptrdiff_t)r * D + c0;
        if (cnt) {
            double n = cnt[r];
            if (m) {
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) {
                    double d = x[c] - m[c];
                    p[c] += n * (d * d);
                }
            } else {
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) p[c] += n * x[c];
            }
        } else if (m) {
            HPJ__OMP(simd)
            for (c = 0; c < w; ++c) {
                double d = x[c] - m[c];
                p[c] += d * d;
            }
        } else {
            HPJ__OMP(simd)
            for (c = 0; c < w; ++c) p[c] += x[c];
        }
    }
}

/* The scratch (count doubles) of a row-block path run by several threads,
   or NULL: run alone (par = 0, one thread, already inside a parallel
   region, or no memory; the caller's alone path gives the same bits). */
static double *hpj__rb_scratch(int par, size_t count) {
#ifdef _OPENMP
    if (par && omp_get_max_threads() > 1 && !omp_in_parallel())
        return (double *)HPJ_MALLOC(NULL, sizeof(double) * count);
#else
    (void)par;
    (void)count;
#endif
    return NULL;
}
/* BatchNorm's: HPJ__BN_WS(D) doubles. */
static double *hpj__bn_scratch(int N, int D) {
    return hpj__rb_scratch((int64_t)N * D >= HPJ__PAR_ELEMS, HPJ__BN_WS(D));
}

/* Rows r0..r1 of the BatchNorm output (and of sum = res + out), by
   panels of HPJ__BN_PANEL channels. out = NULL (with sum): only the sum,
   each panel's output made on the stack (a forward with no backward never
   reads it). */
static void hpj__bn_out_rows(float *out, const float *inp, const float *mean, const float *rstd, const float *gamma,
                             const float *beta, int r0, int r1, int D, int relu, const float *res, float *sum) {
    int i, c, c0, w;
    for (i = r0; i < r1; ++i)
        for (c0 = 0; c0 < D; c0 += HPJ__BN_PANEL) {
            float t[HPJ__BN_PANEL], *y = out ? out + (ptrdiff_t)i * D + c0 : t;
            w = HPJ__MIN(HPJ__BN_PANEL, D - c0);
            hpj__bn_row_any(y, inp + (ptrdiff_t)i * D + c0, mean + c0, rstd + c0, gamma ? gamma + c0 : NULL,
                            beta ? beta + c0 : NULL, w, relu, 0);
            if (sum) {
                const float *r = res + (ptrdiff_t)i * D + c0;
                float *o = sum + (ptrdiff_t)i * D + c0;
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) o[c] = r[c] + y[c];
            }
        }
}

/* BatchNorm forward (training mode), optionally fused with a ReLU on the
   output (relu = 1: out = max(BN(inp), 0), one pass less over the data)
   and with a residual add (sum != NULL: also sum = res + out, the same
   float addition as a separate pass). With cnt the N rows are classes of
   cnt[r] equal rows each, ntot rows in all (a later GINE layer's classes,
   hpj__gnn_layer_classes): the statistics are those of the ntot rows.
   With dp the N rows are this rank's share of the batch: each channel's
   sum (with ntot) and then its squared deviations are summed over the
   ranks before they are used, so the mean, the variance and the running
   statistics are the whole batch's on every rank. */
static void hpj__fast_bn_train(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                               const float *inp, const float *gamma, const float *beta, int N, int D, float momentum,
                               float eps, int relu, const float *res, float *sum, const int32_t *cnt, int ntot,
                               hpj__dp *dp) {
    double *ws;
    if (D <= 0 || (N <= 0 && !dp)) return; /* (a rank without rows still takes part in the sums) */
    if ((ws = dp ? dp->bn_ws : hpj__bn_scratch(N, D)) != NULL) {
        /* the row blocks' sums ps, pq and the channels' totals: s (slot D:
           the row count), which becomes the mean, and q */
        double *ps = ws, *pq = ws + (size_t)HPJ__BN_RB * D, *s = pq + (size_t)HPJ__BN_RB * D, *q = s + D + 1, n;
        int par = (int64_t)N * D >= HPJ__PAR_ELEMS;
        (void)par; /* (without OpenMP) */
        HPJ__OMP(parallel if (par))
        {
            int b, c;
            HPJ__OMP(for schedule(static))
            for (b = 0; b < HPJ__BN_RB; ++b) hpj__bn_part(ps + (size_t)b * D, inp, N, D, b, 0, D, NULL, cnt);
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) s[c] = hpj__bn_total(ps, D, c);
        }
        s[D] = ntot;
        if (dp) hpj__dp_sum_d(dp, s, (size_t)D + 1); /* the whole batch's sums and rows */
        n = s[D];
        HPJ__OMP(parallel if (par))
        {
            int b, c;
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) s[c] /= n;
            HPJ__OMP(for schedule(static))
            for (b = 0; b < HPJ__BN_RB; ++b) hpj__bn_part(pq + (size_t)b * D, inp, N, D, b, 0, D, s, cnt);
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) q[c] = hpj__bn_total(pq, D, c);
        }
        if (dp) hpj__dp_sum_d(dp, q, (size_t)D); /* the whole batch's squared deviations */
        if (n > 0) {
            HPJ__OMP(parallel if (par))
            {
                int b, c;
                HPJ__OMP(for schedule(static))
                for (c = 0; c < D; ++c)
                    hpj__bn_stat(c, s[c], q[c], mean, rstd, running_mean, running_var, (int)n, momentum, eps);
                HPJ__OMP(for schedule(static))
                for (b = 0; b < HPJ__BN_RB; ++b)
                    hpj__bn_out_rows(out, inp, mean, rstd, gamma, beta, hpj__bn_r(N, b), hpj__bn_r(N, b + 1), D, relu,
                                     res, sum);
            }
        }
        if (!dp) HPJ_FREE(NULL, ws);
        return;
    }
    {
        int c0, b, c;
        for (c0 = 0; c0 < D; c0 += HPJ__BN_PANEL) {
            double p[HPJ__BN_PANEL], s[HPJ__BN_PANEL], q[HPJ__BN_PANEL];
            int w = HPJ__MIN(HPJ__BN_PANEL, D - c0);
            for (c = 0; c < w; ++c) s[c] = q[c] = 0.0;
            for (b = 0; b < HPJ__BN_RB; ++b) {
                hpj__bn_part(p, inp, N, D, b, c0, w, NULL, cnt);
                for (c = 0; c < w; ++c) s[c] += p[c];
            }
            for (c = 0; c < w; ++c) s[c] /= ntot;
            for (b = 0; b < HPJ__BN_RB; ++b) {
                hpj__bn_part(p, inp, N, D, b, c0, w, s, cnt);
                for (c = 0; c < w; ++c) q[c] += p[c];
            }
            for (c = 0; c < w; ++c)
                hpj__bn_stat(c0 + c, s[c], q[c], mean, rstd, running_mean, running_var, ntot, momentum, eps);
        }
        hpj__bn_out_rows(out, inp, mean, rstd, gamma, beta, 0, N, D, relu, res, sum);
    }
}

/* Rows 0..nr-1 (ld floats apart) of BatchNorm backward's sums over w
   channels: sd += g and sdx += g xhat in double, row after row, g = dy (or
   dy [ro > 0]), xhat = (x - mean) rstd in float.
   With AVX2 the rows are taken HPJ__BN_TILE at a time (a tile stays in
   the L1 cache) and, within a tile, 8 channels at a time with their four
   vectors of double sums held in registers over the tile's rows, stored
   once per tile. Each lane does the scalar loop's operations (a multiply
   and an add, never fused; the same conversions) and each channel still
   takes its rows in order, so the bits are the scalar loop's; compilers
   left that mixed float/double loop scalar. */
#define HPJ__BN_TILE 16
static void hpj__bn_bw_sums(double *sd, double *sdx, const float *x, const float *dy, const float *ro,
                            const float *mean, const float *rstd, int nr, ptrdiff_t ld, int w) {
    int r0, r, r1, c;
    for (r0 = 0; r0 < nr; r0 = r1) {
        r1 = HPJ__MIN(nr, r0 + HPJ__BN_TILE);
        c = 0;
#ifdef HPJ__GEMM_AVX2
        for (; c + 8 <= w; c += 8) {
            __m256 m = _mm256_loadu_ps(mean + c), s = _mm256_loadu_ps(rstd + c), one = _mm256_set1_ps(1.0f);
            __m256d d0 = _mm256_loadu_pd(sd + c), d1 = _mm256_loadu_pd(sd + c + 4);
            __m256d e0 = _mm256_loadu_pd(sdx + c), e1 = _mm256_loadu_pd(sdx + c + 4);
            for (r = r0; r < r1; ++r) {
                ptrdiff_t o = (ptrdiff_t)r * ld + c;
                __m256 g = _mm256_loadu_ps(dy + o), xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + o), m), s);
                __m256d g0, g1;
                /* dy times 1 or 0, as the scalar loop */
                if (ro) g = _mm256_mul_ps(g, _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(ro + o), _mm256_setzero_ps(),
                                                                         _CMP_GT_OQ), one));
                g0 = _mm256_cvtps_pd(_mm256_castps256_ps128(g));
                g1 = _mm256_cvtps_pd(_mm256_extractf128_ps(g, 1));
                d0 = _mm256_add_pd(d0, g0);
                d1 = _mm256_add_pd(d1, g1);
                e0 = _mm256_add_pd(e0, _mm256_mul_pd(g0, _mm256_cvtps_pd(_mm256_castps256_ps128(xh))));
                e1 = _mm256_add_pd(e1, _mm256_mul_pd(g1, _mm256_cvtps_pd(_mm256_extractf128_ps(xh, 1))));
            }
            _mm256_storeu_pd(sd + c, d0);
            _mm256_storeu_pd(sd + c + 4, d1);
            _mm256_storeu_pd(sdx + c, e0);
            _mm256_storeu_pd(sdx + c + 4, e1);
        }
#endif
        for (r = r0; r < r1; ++r) {
            const float *xr = x + (ptrdiff_t)r * ld, *dr = dy + (ptrdiff_t)r * ld;
            const float *rr = ro ? ro + (ptrdiff_t)r * ld : NULL;
            int cc;
            for (cc = c; cc < w; ++cc) {
                /* dy where the ReLU passed (ro > 0), else 0: a product by 0 or 1 */
                float g = rr ? dr[cc] * (float)(rr[cc] > 0.0f) : dr[cc];
                sd[cc] += g;
                sdx[cc] += (double)g * ((xr[cc] - mean[cc]) * rstd[cc]);
            }
        }
    }
}

/* One row of BatchNorm backward's input gradient over w channels, g = dy
   (or dy [ro > 0] with the saved ReLU output ro); n > 1 for a row that
   stands for a class of n equal rows, dy then their summed gradient, dx
   the sum of theirs (n = 1: the same bits as without the factor). With
   AVX2, 8 channels at a time by the scalar loop's operations in its order
   (separate multiplies and subtractions; the mask gives dy or +0 as the
   select does): the same bits. */
static HPJ__INLINE_ALWAYS void hpj__bn_back_row(float *dx, const float *x, const float *dy, const float *ro,
                                                const float *mean, const float *rstd, const float *k, const float *md,
                                                const float *mdx, int w, int overwrite, int has_ro, float n) {
    int c = 0;
#ifdef HPJ__GEMM_AVX2
    __m256 nv = _mm256_set1_ps(n);
    for (; c + 8 <= w; c += 8) {
        __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), _mm256_loadu_ps(mean + c)),
                                  _mm256_loadu_ps(rstd + c));
        __m256 g = _mm256_loadu_ps(dy + c), v;
        if (has_ro) g = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(ro + c), _mm256_setzero_ps(), _CMP_GT_OQ), g);
        v = _mm256_mul_ps(_mm256_loadu_ps(k + c),
                          _mm256_sub_ps(_mm256_sub_ps(g, _mm256_mul_ps(nv, _mm256_loadu_ps(md + c))),
                                        _mm256_mul_ps(xh, _mm256_mul_ps(nv, _mm256_loadu_ps(mdx + c)))));
        _mm256_storeu_ps(dx + c, overwrite ? v : _mm256_add_ps(_mm256_loadu_ps(dx + c), v));
    }
#endif
    for (; c < w; ++c) {
        float xh = (x[c] - mean[c]) * rstd[c];
        float g = has_ro && !(ro[c] > 0.0f) ? 0.0f : dy[c];
        float v = k[c] * (g - n * md[c] - xh * (n * mdx[c]));
        dx[c] = overwrite ? v : dx[c] + v;
    }
}

/* Rows r0..r1 of BatchNorm backward's input gradient over channels
   [c0, c0 + w) (md, mdx: the channel means of g and g xhat; k = gamma
   rstd; all three indexed from c0). */
static void hpj__bn_back_rows(float *dinp, const float *dout, const float *inp, const float *relu_out,
                              const float *mean, const float *rstd, const float *k, const float *md, const float *mdx,
                              int r0, int r1, int D, int c0, int w, int overwrite, const int32_t *cnt) {
    int r;
    for (r = r0; r < r1; ++r) {
        ptrdiff_t o = (ptrdiff_t)r * D + c0;
        float n = cnt ? (float)cnt[r] : 1.0f;
        if (relu_out)
            hpj__bn_back_row(dinp + o, inp + o, dout + o, relu_out + o, mean + c0, rstd + c0, k, md, mdx, w, overwrite,
                             1, n);
        else
            hpj__bn_back_row(dinp + o, inp + o, dout + o, NULL, mean + c0, rstd + c0, k, md, mdx, w, overwrite, 0, n);
    }
}

/* Block b's backward sums over channels [c0, c0 + w) (hpj__bn_bw_sums). */
static void hpj__bn_bw_part(double *pd, double *pdx, const float *dout, const float *inp, const float *relu_out,
                            const float *mean, const float *rstd, int N, int D, int b, int c0, int w) {
    int c, r0 = hpj__bn_r(N, b);
    ptrdiff_t o = (ptrdiff_t)r0 * D + c0;
    for (c = 0; c < w; ++c) pd[c] = pdx[c] = 0.0;
    hpj__bn_bw_sums(pd, pdx, inp + o, dout + o, relu_out ? relu_out + o : NULL, mean + c0, rstd + c0,
                    hpj__bn_r(N, b + 1) - r0, D, w);
}

/* Channels [c0, c0 + w) of BatchNorm backward from their sums over the N
   rows, sd of g and sdx of g xhat: dgamma and dbeta, and the panel's md,
   mdx (the channel means of g and g xhat) and k = gamma rstd. */
static void hpj__bn_bw_panel(float *dgamma, float *dbeta, float *md, float *mdx, float *k, const double *sd,
                             const double *sdx, const float *gamma, const float *rstd, int N, int c0, int w) {
    int c;
    for (c = 0; c < w; ++c) {
        if (dgamma) dgamma[c0 + c] += (float)sdx[c];
        if (dbeta) dbeta[c0 + c] += (float)sd[c];
        md[c] = (float)(sd[c] / N);
        mdx[c] = (float)(sdx[c] / N);
        k[c] = (gamma ? gamma[c0 + c] : 1.0f) * rstd[c0 + c];
    }
}

/* hpj__bn_eval by channel panels (the same function, the same bits). */
static void hpj__fast_bn_eval(float *out, const float *inp, const float *gamma, const float *beta,
                              const float *running_mean, const float *running_var, int N, int D, float eps, int relu,
                              const float *res, float *sum) {
    if (N <= 0 || D <= 0) return;
    /* by channel panels, each panel's sqrt(running_var + eps) computed once
       per thread (the same correctly rounded value as per element) */
    HPJ__OMP(parallel if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    {
        float den[HPJ__BN_PANEL], t[HPJ__BN_PANEL];
        int c0, i, c;
        for (c0 = 0; c0 < D; c0 += HPJ__BN_PANEL) {
            int w = HPJ__MIN(HPJ__BN_PANEL, D - c0);
            for (c = 0; c < w; ++c) den[c] = sqrtf(running_var[c0 + c] + eps);
            HPJ__OMP(for schedule(static) nowait)
            for (i = 0; i < N; ++i) {
                const float *x = inp + (ptrdiff_t)i * D + c0;
                float *y = out ? out + (ptrdiff_t)i * D + c0 : t;
                hpj__bn_row_any(y, x, running_mean + c0, den, gamma ? gamma + c0 : NULL, beta ? beta + c0 : NULL, w,
                                relu, 1);
                if (sum) {
                    const float *r = res + (ptrdiff_t)i * D + c0;
                    float *o = sum + (ptrdiff_t)i * D + c0;
                    HPJ__OMP(simd)
                    for (c = 0; c < w; ++c) o[c] = r[c] + y[c];
                }
            }
        }
    }
}

/* hpj__bn_backward by the forward's row blocks (the same function), and
   for the forward's classes (cnt, ntot): dout then holds each class's
   summed gradient and dinp gets the sum of its rows' (xhat is the same
   over a class, so its n rows take n times the means). */
static void hpj__fast_bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                  const float *gamma, const float *mean, const float *rstd, int N, int D,
                                  const float *relu_out, int overwrite, const int32_t *cnt, int ntot, hpj__dp *dp) {
    double *ws;
    if (D <= 0 || (N <= 0 && !dp)) return;
    /* out = xhat gamma + beta, xhat = (x - mean_c) rstd_c over the batch */
    if ((ws = dp ? dp->bn_ws : hpj__bn_scratch(N, D)) != NULL) {
        /* the row blocks' sums psd, psdx; t: the channels' totals of g,
           then of g xhat, then the row count */
        double *psd = ws, *psdx = ws + (size_t)HPJ__BN_RB * D, *t = psdx + (size_t)HPJ__BN_RB * D, n;
        float *md = (float *)(t + 2 * (size_t)D + 1), *mdx = md + D, *k = mdx + D;
        int par = (int64_t)N * D >= HPJ__PAR_ELEMS;
        (void)par; /* (without OpenMP) */
        HPJ__OMP(parallel if (par))
        {
            int b, c;
            HPJ__OMP(for schedule(static))
            for (b = 0; b < HPJ__BN_RB; ++b)
                hpj__bn_bw_part(psd + (size_t)b * D, psdx + (size_t)b * D, dout, inp, relu_out, mean, rstd, N, D, b, 0,
                                D);
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) {
                t[c] = hpj__bn_total(psd, D, c);
                t[D + c] = hpj__bn_total(psdx, D, c);
                if (dgamma) dgamma[c] += (float)t[D + c];
                if (dbeta) dbeta[c] += (float)t[c];
            }
        }
        t[2 * D] = ntot;
        if (dp) hpj__dp_sum_d(dp, t, 2 * (size_t)D + 1); /* the whole batch's sums and rows */
        n = t[2 * D];
        HPJ__OMP(parallel if (par))
        {
            int b, c;
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) {
                md[c] = (float)(t[c] / n);
                mdx[c] = (float)(t[D + c] / n);
                k[c] = (gamma ? gamma[c] : 1.0f) * rstd[c];
            }
            if (dinp) {
                HPJ__OMP(for schedule(static))
                for (b = 0; b < HPJ__BN_RB; ++b)
                    hpj__bn_back_rows(dinp, dout, inp, relu_out, mean, rstd, k, md, mdx, hpj__bn_r(N, b),
                                      hpj__bn_r(N, b + 1), D, 0, D, overwrite, cnt);
            }
        }
        if (!dp) HPJ_FREE(NULL, ws);
        return;
    }
    {
        int c0, b, c;
        for (c0 = 0; c0 < D; c0 += HPJ__BN_PANEL) {
            double pd[HPJ__BN_PANEL], pdx[HPJ__BN_PANEL], sd[HPJ__BN_PANEL], sdx[HPJ__BN_PANEL];
            float md[HPJ__BN_PANEL], mdx[HPJ__BN_PANEL], k[HPJ__BN_PANEL];
            int w = HPJ__MIN(HPJ__BN_PANEL, D - c0);
            for (c = 0; c < w; ++c) sd[c] = sdx[c] = 0.0;
            for (b = 0; b < HPJ__BN_RB; ++b) {
                hpj__bn_bw_part(pd, pdx, dout, inp, relu_out, mean, rstd, N, D, b, c0, w);
                for (c = 0; c < w; ++c) {
                    sd[c] += pd[c];
                    sdx[c] += pdx[c];
                }
            }
            hpj__bn_bw_panel(dgamma, dbeta, md, mdx, k, sd, sdx, gamma, rstd, ntot, c0, w);
            if (dinp)
                hpj__bn_back_rows(dinp, dout, inp, relu_out, mean, rstd, k, md, mdx, 0, N, D, c0, w, overwrite, cnt);
        }
    }
}

/* ==== fast: GINE shared-edge backward, by panels and row blocks ====
   The reference walks one channel at a time down all the rows, a stride
   of D floats per step. Here the rows are cut into panels of HPJ__GINE_DC
   channels (256-byte row slices, read whole); alone (one thread, or no
   scratch) a thread takes whole panels. With a team each thread takes
   whole blocks of rows (the fixed blocks of hpj__bn_r) over every channel
   instead, which leaves enough tasks when D is small, and keeps each
   block's masked sums in a scratch of HPJ__BN_RB x D doubles; de then adds
   the blocks in block order. Every sum is the reference's, in its order,
   so the bits are the reference's. */
#define HPJ__GINE_DC 64
/* Rows r0..r1 of the shared-edge GINE backward over the channels
   [c0, c0 + w), w <= HPJ__GINE_DC (a panel of channels: 256-byte row
   slices): t = the sum of dout over the row's
   neighbours, masked by [h + e > 0] and added to acc (w doubles, in row
   order); dh += (1 + eps) dout + t. */
static void hpj__gine_sh_rows(double *acc, float *dh, const float *dout, const float *h, const float *e,
                              const int32_t *rowptr, const int32_t *col, int r0, int r1, int D, int c0, int w,
                              float s) {
    int r, j, k;
    for (r = r0; r < r1; ++r) {
        float t[HPJ__GINE_DC];
        const float *dr = dout + (ptrdiff_t)r * D + c0, *hr = h + (ptrdiff_t)r * D + c0;
        for (j = 0; j < w; ++j) t[j] = 0.0f;
        for (k = rowptr[r]; k < rowptr[r + 1]; ++k) {
            const float *dn = dout + (ptrdiff_t)col[k] * D + c0;
            HPJ__OMP(simd)
            for (j = 0; j < w; ++j) t[j] += dn[j];
        }
        for (j = 0; j < w; ++j) {
            t[j] = hr[j] + e[c0 + j] > 0.0f ? t[j] : 0.0f;
            acc[j] += t[j];
        }
        if (dh) {
            float *g = dh + (ptrdiff_t)r * D + c0;
            HPJ__OMP(simd)
            for (j = 0; j < w; ++j) g[j] += s * dr[j] + t[j];
        }
    }
}

static void hpj__fast_gine_back_shared(float *dh, float *de, const float *dout, const float *h, const float *e,
                                       const int32_t *rowptr, const int32_t *col, int N, int D, float s, int par) {
    double *ws = hpj__rb_scratch(par, (size_t)HPJ__BN_RB * (size_t)D);
    if (!ws) {
        int c0;
        HPJ__OMP(parallel for schedule(static) if (par))
        for (c0 = 0; c0 < D; c0 += HPJ__GINE_DC) {
            int w = HPJ__MIN(HPJ__GINE_DC, D - c0), b, j;
            double acc[HPJ__GINE_DC], p[HPJ__GINE_DC];
            for (j = 0; j < w; ++j) acc[j] = 0.0;
            for (b = 0; b < HPJ__BN_RB; ++b) {
                for (j = 0; j < w; ++j) p[j] = 0.0;
                hpj__gine_sh_rows(p, dh, dout, h, e, rowptr, col, hpj__bn_r(N, b), hpj__bn_r(N, b + 1), D, c0, w, s);
                for (j = 0; j < w; ++j) acc[j] += p[j];
            }
            if (de)
                for (j = 0; j < w; ++j) de[c0 + j] += (float)acc[j];
        }
        return;
    }
    HPJ__OMP(parallel)
    {
        int b, c;
        HPJ__OMP(for schedule(static))
        for (b = 0; b < HPJ__BN_RB; ++b) {
            double *p = ws + (size_t)b * D;
            for (c = 0; c < D; ++c) p[c] = 0.0;
            for (c = 0; c < D; c += HPJ__GINE_DC)
                hpj__gine_sh_rows(p + c, dh, dout, h, e, rowptr, col, hpj__bn_r(N, b), hpj__bn_r(N, b + 1), D, c,
                                  HPJ__MIN(HPJ__GINE_DC, D - c), s);
        }
        if (de) {
            HPJ__OMP(for schedule(static))
            for (c = 0; c < D; ++c) de[c] += (float)hpj__bn_total(ws, D, c);
        }
    }
    HPJ_FREE(NULL, ws);
}

/* ==== fast: GELU with AVX-512 and AVX2 ====
   hpj__expf and hpj__ncdf lane by lane: the same operations in the same
   order (the polynomials' fused steps; every other multiply and add
   separate, the same clamps and selects, NaN passed through as the C code
   does), so the same bits as the reference loops. Where no lane of a
   vector needs the erfc branch (|x| < sqrt 2 throughout, most of a
   trained network's pre-activations), that branch is skipped. */
#if !defined(HPJ_NO_SIMD) && (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
#include <immintrin.h>
#endif

#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
#define HPJ__C(v) _mm512_set1_ps(v)
static HPJ__INLINE __m512 hpj__expf_avx512(__m512 y) {
    __m512 n, r, p;
    __m512i bits;
    y = _mm512_max_ps(HPJ__C(-87.0f), y); /* y < -87 ? -87 : y */
    y = _mm512_min_ps(HPJ__C(88.0f), y);  /* y > 88 ? 88 : y   */
    n = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(y, HPJ__C(1.442695041f)), HPJ__C(12582912.0f)), HPJ__C(12582912.0f));
    r = _mm512_sub_ps(y, _mm512_mul_ps(n, HPJ__C(0.693145751953125f)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(n, HPJ__C(1.428606765330187e-06f)));
    p = HPJ__C(HPJ__EXP_C0);
#define HPJ__S(c) p = _mm512_fmadd_ps(p, r, HPJ__C(c));
    HPJ__EXP_STEPS(HPJ__S)
#undef HPJ__S
    bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

static HPJ__INLINE __m512 hpj__ncdf_avx512(__m512 x) {
    __m512 z = _mm512_mul_ps(x, HPJ__C(0.70710678118654752f)), t = _mm512_mul_ps(z, z), e, u, q;
    __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(0x7FFFFFFF)));
    __mmask16 mid = _mm512_cmp_ps_mask(a, HPJ__C(3.93f), _CMP_LT_OQ);
    __mmask16 small = _mm512_cmp_ps_mask(a, HPJ__C(1.0f), _CMP_LT_OQ);
    e = HPJ__C(HPJ__ERF_C0);
#define HPJ__S(c) e = _mm512_fmadd_ps(e, t, HPJ__C(c));
    HPJ__ERF_STEPS(HPJ__S)
#undef HPJ__S
    e = _mm512_mul_ps(e, z);
    if (small == 0xFFFF) return _mm512_add_ps(HPJ__C(0.5f), _mm512_mul_ps(HPJ__C(0.5f), e)); /* no lane needs q */
    u = _mm512_sub_ps(_mm512_mask_blend_ps(mid, HPJ__C(3.93f), a), HPJ__C(2.5f));
    q = HPJ__C(HPJ__ERFC_C0);
#define HPJ__S(c) q = _mm512_fmadd_ps(q, u, HPJ__C(c));
    HPJ__ERFC_STEPS(HPJ__S)
#undef HPJ__S
    q = _mm512_maskz_mul_ps(mid, HPJ__C(0.5f), hpj__expf_avx512(q)); /* erfc(|z|) / 2 */
    q = _mm512_mask_sub_ps(q, _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GT_OQ), HPJ__C(1.0f), q);
    return _mm512_mask_blend_ps(small, q, _mm512_add_ps(HPJ__C(0.5f), _mm512_mul_ps(HPJ__C(0.5f), e)));
}

/* phi(x), the normal density */
static HPJ__INLINE __m512 hpj__pdf_avx512(__m512 v) {
    return _mm512_mul_ps(HPJ__C(0.3989422804014327f),
                         hpj__expf_avx512(_mm512_mul_ps(_mm512_mul_ps(HPJ__C(-0.5f), v), v)));
}

/* Vectors [b0, b1) of 16 floats (clipped to n) of the GELU forward
   (dout = NULL: y = x Phi(x)) or backward (y += dout (Phi(x) + x phi(x))). */
static void hpj__gelu_avx512(float *y, const float *x, const float *dout, size_t n, int64_t b0, int64_t b1) {
    int64_t b;
    for (b = b0; b < b1; ++b) {
        size_t i = (size_t)b * 16, w = n - i < 16 ? n - i : 16;
        __mmask16 k = (__mmask16)(w == 16 ? 0xFFFFu : (1u << w) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        if (!dout) {
            _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(v, hpj__ncdf_avx512(v)));
        } else {
            __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i),
                                     _mm512_add_ps(hpj__ncdf_avx512(v), _mm512_mul_ps(v, hpj__pdf_avx512(v))));
            _mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i), g));
        }
    }
}
#undef HPJ__C
#endif

#if !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
/* The same on 8 lanes with AVX2. */
#define HPJ__C(v) _mm256_set1_ps(v)
static HPJ__INLINE __m256 hpj__expf_avx2(__m256 y) {
    __m256 n, r, p;
    __m256i bits;
    y = _mm256_max_ps(HPJ__C(-87.0f), y); /* y < -87 ? -87 : y (NaN passes) */
    y = _mm256_min_ps(HPJ__C(88.0f), y);
    n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(y, HPJ__C(1.442695041f)), HPJ__C(12582912.0f)), HPJ__C(12582912.0f));
    r = _mm256_sub_ps(y, _mm256_mul_ps(n, HPJ__C(0.693145751953125f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(n, HPJ__C(1.428606765330187e-06f)));
    p = HPJ__C(HPJ__EXP_C0);
#define HPJ__S(c) p = _mm256_fmadd_ps(p, r, HPJ__C(c));
    HPJ__EXP_STEPS(HPJ__S)
#undef HPJ__S
    bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

static HPJ__INLINE __m256 hpj__ncdf_avx2(__m256 x) {
    __m256 z = _mm256_mul_ps(x, HPJ__C(0.70710678118654752f)), t = _mm256_mul_ps(z, z), e, u, q;
    __m256 a = _mm256_and_ps(z, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    __m256 mid = _mm256_cmp_ps(a, HPJ__C(3.93f), _CMP_LT_OQ), small = _mm256_cmp_ps(a, HPJ__C(1.0f), _CMP_LT_OQ);
    e = HPJ__C(HPJ__ERF_C0);
#define HPJ__S(c) e = _mm256_fmadd_ps(e, t, HPJ__C(c));
    HPJ__ERF_STEPS(HPJ__S)
#undef HPJ__S
    e = _mm256_add_ps(HPJ__C(0.5f), _mm256_mul_ps(HPJ__C(0.5f), _mm256_mul_ps(e, z)));
    if (_mm256_movemask_ps(small) == 0xFF) return e; /* no lane needs q */
    u = _mm256_sub_ps(_mm256_blendv_ps(HPJ__C(3.93f), a, mid), HPJ__C(2.5f));
    q = HPJ__C(HPJ__ERFC_C0);
#define HPJ__S(c) q = _mm256_fmadd_ps(q, u, HPJ__C(c));
    HPJ__ERFC_STEPS(HPJ__S)
#undef HPJ__S
    q = _mm256_and_ps(mid, _mm256_mul_ps(HPJ__C(0.5f), hpj__expf_avx2(q))); /* erfc(|z|) / 2 */
    q = _mm256_blendv_ps(q, _mm256_sub_ps(HPJ__C(1.0f), q), _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ));
    return _mm256_blendv_ps(q, e, small);
}

static HPJ__INLINE __m256 hpj__pdf_avx2(__m256 v) {
    return _mm256_mul_ps(HPJ__C(0.3989422804014327f),
                         hpj__expf_avx2(_mm256_mul_ps(_mm256_mul_ps(HPJ__C(-0.5f), v), v)));
}

/* Vectors [b0, b1) of 8 floats (clipped to n), as hpj__gelu_avx512. */
static void hpj__gelu_avx2(float *y, const float *x, const float *dout, size_t n, int64_t b0, int64_t b1) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int64_t b;
    for (b = b0; b < b1; ++b) {
        size_t i = (size_t)b * 8;
        int w = n - i < 8 ? (int)(n - i) : 8;
        __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32(w), lane);
        __m256 v = w == 8 ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, k), r;
        if (!dout) {
            r = _mm256_mul_ps(v, hpj__ncdf_avx2(v));
        } else {
            __m256 dy = w == 8 ? _mm256_loadu_ps(dout + i) : _mm256_maskload_ps(dout + i, k);
            __m256 y0 = w == 8 ? _mm256_loadu_ps(y + i) : _mm256_maskload_ps(y + i, k);
            r = _mm256_add_ps(y0, _mm256_mul_ps(dy, _mm256_add_ps(hpj__ncdf_avx2(v), _mm256_mul_ps(v, hpj__pdf_avx2(v)))));
        }
        if (w == 8) _mm256_storeu_ps(y + i, r);
        else _mm256_maskstore_ps(y + i, k, r); /* (the tail only: masked stores are slow on some processors) */
    }
}
#undef HPJ__C
#endif

/* The GELU forward (dout = NULL) or backward on the widest kernel the
   paths level allows; 0 (nothing done): the reference loops run. Threads
   share the work in runs of 1024 elements. */
static int hpj__gelu_fast(float *y, const float *x, const float *dout, size_t n) {
    int64_t b, nb;
    (void)b, (void)nb, (void)y, (void)x, (void)dout, (void)n;
#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
    if (hpj_paths() >= HPJ_PATHS_AVX512) {
        nb = ((int64_t)n + 15) / 16;
        HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 64))
        for (b = 0; b < nb; b += 64) hpj__gelu_avx512(y, x, dout, n, b, HPJ__MIN(nb, b + 64));
        return 1;
    }
#endif
#if !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
    if (hpj_paths() >= HPJ_PATHS_AVX2) {
        nb = ((int64_t)n + 7) / 8;
        HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 32))
        for (b = 0; b < nb; b += 128) hpj__gelu_avx2(y, x, dout, n, b, HPJ__MIN(nb, b + 128));
        return 1;
    }
#endif
    return 0;
}

/* ==== fast: attention backward keeps a row of dP ====
   hpj_attention_backward computes each dP_ij = a_ij dout_i.v_j twice, in
   the pass that sums P dP and in the pass that uses it. Here a row of up
   to HPJ__ATT_ROWBUF keys keeps the first pass's values on the stack
   (longer rows compute them again, as the reference): the same products,
   the same bits. */
#define HPJ__ATT_ROWBUF 256
static void hpj__fast_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                                         const uint8_t *keymask, const float *adj, int B, int T, int D, int H) {
    int bh, hd = H > 0 ? D / H : 0;
    float scale = 1.0f / sqrtf((float)hd);
    ptrdiff_t ld = 3 * (ptrdiff_t)D;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)B * H * T * T * hd >= HPJ__PAR_ELEMS))
    for (bh = 0; bh < B * H; ++bh) {
        int b = bh / H, h = bh % H, i, j;
        const float *base = qkv + (ptrdiff_t)b * T * ld;
        float *dbase = dqkv + (ptrdiff_t)b * T * ld;
        const uint8_t *km = keymask ? keymask + (ptrdiff_t)b * T : NULL;
        float dpbuf[HPJ__ATT_ROWBUF];
        int buffered = T <= HPJ__ATT_ROWBUF;
        for (i = 0; i < T; ++i) {
            const float *p = att + ((ptrdiff_t)bh * T + i) * T;
            const float *a = adj ? adj + ((ptrdiff_t)b * T + i) * T : NULL;
            const float *go = dout + ((ptrdiff_t)b * T + i) * D + h * hd;
            const float *q = base + i * ld + h * hd;
            float *dq = dbase + i * ld + h * hd;
            float dsum = 0.0f;
            int any = 0;
            for (j = 0; j < T; ++j) {
                float dp;
                if (km && !km[j]) continue;
                any = 1;
                dp = hpj__dot(go, base + j * ld + 2 * D + h * hd, hd);
                if (a) dp *= a[j];
                if (buffered) dpbuf[j] = dp;
                dsum = HPJ__FMAF(p[j], dp, dsum);
            }
            if (!any) continue;
            for (j = 0; j < T; ++j) {
                float dp, ds;
                if (km && !km[j]) continue;
                if (buffered) dp = dpbuf[j];
                else {
                    dp = hpj__dot(go, base + j * ld + 2 * D + h * hd, hd);
                    if (a) dp *= a[j];
                }
                ds = scale * (p[j] * (dp - dsum));
                hpj__axpy(dq, ds, base + j * ld + D + h * hd, hd);
                hpj__axpy(dbase + j * ld + D + h * hd, ds, q, hd);
                hpj__axpy(dbase + j * ld + 2 * D + h * hd, a ? p[j] * a[j] : p[j], go, hd);
            }
        }
    }
}

/* ---- anchor: fast encoder ----
   (the patch encoder's fast siblings follow this line)
   ---- */

/* ==== fast: the input table (the first GINE layer on distinct inputs) ====

   When the node input is a one-hot label or nothing, and the edge input a
   one-hot label or nothing (the TU and ZINC data), every copy's h0 is one
   of nt rows H[k] = node_W[:, k] + node_b (k < node_onehot: label k;
   k = node_onehot: none, i.e. a label outside the vocabulary or no node
   input; with node_degree, k runs over (label, capped degree) pairs and
   H[k] adds the degree's column too), and every message ReLU(h0_j + e_ji)
   is one of nt * ne rows ReLU(H[k] + Ev[t]) (Ev from edge_W, edge_b the
   same way; ne = 1 for unlabelled edges). The layer's first product
   t1 = agg W1^T is linear in agg, so with
       A = [(1 + eps) H[k] ; ReLU(H[k] + Ev[t])]    (nA = nt (1 + ne) rows)
   and T = A W1^T, t1_i = T[ty_i] + the sum over the entries j of row i of
   T[ky_j]: a product over nA rows instead of one per copy. The same
   function as the reference's input encoders and first aggregation; the
   sums round differently (W1 is applied before the sum over neighbours,
   not after), so the reference and this path agree to rounding, not to
   the bit (tests model.table_matches_reference and others). Its backward
   is the transpose: scatter dt1 onto the rows, dW1 += dT^T A, dA = dT W1,
   then through (1 + eps) and the ReLU onto H and Ev, which are columns of
   the encoders' weights.

   On top of the table, the classes of equal node copies. A copy's t1 is a
   function of its type and the multiset of its entries' keys, and its
   residual input h0 = H[ty] one of its type: copies that agree on both (a
   class) are equal through the whole first layer (BatchNorm with the
   batch's statistics, W2, the residual, Wout) when the layer has no
   dropout. So the layer runs once per class, BatchNorm weighting each
   class by its number of copies; its output is then copied out to the
   copies (hpj__cls_expand), and the backward runs on the classes' summed
   gradients (hpj__cls_reduce). The same argument one level up (a
   Weisfeiler-Lehman refinement inside the batch's patches): when layer
   i - 1 ran on classes, two copies of one class whose entries carry the
   same multiset of (neighbour's class, edge type) get the same GINE
   aggregation, hence are equal through layer i when it has no patch
   mixing (which adds a per-patch term, and with copy groups averages
   over a node's copies) and no dropout. Later layers use classes in training only, so that an
   embedding does not depend on which other graphs share its batch; the
   first layer's classes keep that property by summing every copy's keys
   in sorted order (csky): a copy's first-layer output has the same bits
   alone or as its class. The same function as the per-copy layers, other
   rounding (BatchNorm's sums are weighted, the residual and products run
   on fewer rows). Classes are used only where they save work: the first
   layer's when there are at most half as many as copies, a later layer's
   when at least 1/16 of the copies are saved. */
#define HPJ__TABLE_MAX 4096 /* table rows; larger vocabularies stay on the reference path */

/* The table's node types nt and edge types ne; 1 if the input table applies
   (labels only, a table of at most HPJ__TABLE_MAX rows). */
static int hpj__table_dims(const hpj_model *m, int *nt, int *ne) {
    int t = (m->node_onehot + 1) * HPJ__MAX(1, m->node_deg), e = m->edge_onehot ? m->edge_onehot + 1 : 1;
    if (nt) *nt = t;
    if (ne) *ne = e;
    return m->node_attr_dim == 0 && (int64_t)t * (1 + e) <= HPJ__TABLE_MAX;
}

#define HPJ__CLS_DC 16      /* channels per task of the loops over classes */
#define HPJ__PAR_COPIES 256 /* the class numbering and key sorts run in parallel from this many copies */

/* The fast encoder's scratch, bound after the reference's buffers (the
   layer masks are known): the table, the types and keys, the classes of
   the layers that may have them, and the backward's sums. Leaves
   w->fast.on = 0 where the table does not apply. */
static void hpj__fast_enc_bind(hpj_arena *a, const hpj_model *m, hpj__gnn_ws *w) {
    hpj__enc_fast *f = &w->fast;
    int32_t C = w->path.C, E = w->path.E;
    int i, D = m->D;
    size_t nA;
    memset(f, 0, sizeof(*f));
    if (!hpj__table_dims(m, &f->nt, &f->ne)) return;
    f->on = 1;
    nA = (size_t)f->nt * (1 + f->ne);
    f->ty = hpj_arena_ints(a, (size_t)C + 1);
    f->ky = hpj_arena_ints(a, (size_t)E + 1);
    f->htab = hpj_arena_floats(a, (size_t)f->nt * D);
    f->etab = hpj_arena_floats(a, (size_t)f->ne * D);
    f->atab = hpj_arena_floats(a, nA * D);
    f->ttab = hpj_arena_floats(a, nA * D);
    f->csky = hpj_arena_ints(a, (size_t)E + 1);
    for (f->chcap = 16; f->chcap < 2 * C && f->chcap < (1 << 29); f->chcap *= 2) {}
    f->chash = hpj_arena_ints(a, (size_t)f->chcap);
    for (i = 0; i < m->cfg.gnn_layers; ++i) {
        /* the first layer may run on classes in any mode; a later one in
           training, without patch mixing and dropout */
        if (i > 0 && (m->cfg.patch_mixing || w->lay[i].mask)) continue;
        f->lay[i].cls = hpj_arena_ints(a, (size_t)C + 1);
        f->lay[i].crep = hpj_arena_ints(a, (size_t)C + 1);
        f->lay[i].ccnt = hpj_arena_ints(a, (size_t)C + 1);
        if (i > 0 && !f->lsky) f->lsky = hpj_arena_ints(a, (size_t)E + 1);
    }
    if (!w->fwd_only) {
        f->tacc = (double *)hpj_arena_alloc(a, sizeof(double) * nA * D);
        f->hacc = (double *)hpj_arena_alloc(a, sizeof(double) * (size_t)f->nt * D);
        f->eacc = (double *)hpj_arena_alloc(a, sizeof(double) * (size_t)f->ne * D);
        f->depc = (double *)hpj_arena_alloc(a, sizeof(double) * D);
        f->dtab = hpj_arena_floats(a, nA * D);
        f->datab = hpj_arena_floats(a, nA * D);
    }
}

/* Sorts the n keys of one row (insertion sort; qsort for long rows). */
static void hpj__keys_sort(int32_t *r, int32_t n) {
    int32_t j, k;
    if (n > 24) {
        qsort(r, (size_t)n, sizeof(int32_t), hpj__cmp_i32);
        return;
    }
    for (j = 1; j < n; ++j) {
        int32_t v = r[j];
        for (k = j; k > 0 && r[k - 1] > v; --k) r[k] = r[k - 1];
        r[k] = v;
    }
}

/* Numbers the classes of the path's copies: copies c, b are one class when
   prev[c] == prev[b] and their CSR rows hold the same sorted keys (key,
   one per entry, each row sorted). Classes in order of their first copy
   (crep), so cls[c] <= c; ccnt counts their copies; chash (chcap >= 2 C
   slots, a power of two) is scratch. Returns the number of classes U, or
   0 as soon as more than maxu would be needed. */
static int32_t hpj__classes_number(const hpj__path *p, const int32_t *prev, const int32_t *key, int32_t *cls,
                                   int32_t *crep, int32_t *ccnt, int32_t *chash, int32_t chcap, int32_t maxu) {
    int32_t C = p->C, c, U = 0;
    uint32_t mask = (uint32_t)chcap - 1;
    for (c = 0; c < chcap; ++c) chash[c] = -1;
    /* each copy's home slot, parked in cls[c] until its class replaces it */
    HPJ__OMP(parallel for schedule(static) if (C >= HPJ__PAR_COPIES))
    for (c = 0; c < C; ++c) {
        int32_t a = p->rowptr[c], n = p->rowptr[c + 1] - a, j;
        uint64_t h = ((uint64_t)(uint32_t)prev[c] << 32) ^ (uint64_t)(uint32_t)n, st;
        for (j = 0; j < n; ++j) {
            st = h ^ ((uint64_t)(uint32_t)key[a + j] << 7);
            h = hpj_splitmix64(&st);
        }
        st = h;
        cls[c] = (int32_t)((uint32_t)hpj_splitmix64(&st) & mask);
    }
    for (c = 0; c < C; ++c) {
        int32_t u, b, n = p->rowptr[c + 1] - p->rowptr[c];
        uint32_t slot = (uint32_t)cls[c];
        while ((u = chash[slot]) >= 0) {
            b = crep[u];
            if (prev[b] == prev[c] && p->rowptr[b + 1] - p->rowptr[b] == n &&
                (n == 0 || memcmp(key + p->rowptr[b], key + p->rowptr[c], sizeof(int32_t) * (size_t)n) == 0))
                break;
            slot = (slot + 1) & mask;
        }
        if (u < 0) {
            if (U + 1 > maxu) return 0; /* too few copies per class to gain: per copy */
            u = chash[slot] = U++;
            crep[u] = c;
            ccnt[u] = 0;
        }
        cls[c] = u;
        ccnt[u]++;
    }
    return U;
}

/* The first layer's classes: each row's keys sorted (t1 sums them in this
   order), then classes of (type, sorted keys) when the layer has no
   dropout and there are at most half as many classes as copies. */
static void hpj__gnn_classes(hpj__gnn_ws *w) {
    hpj__enc_fast *f = &w->fast;
    const hpj__path *p = &w->path;
    int32_t C = p->C, c;
    f->lay[0].ncls = 0;
    HPJ__OMP(parallel for schedule(static) if (C >= HPJ__PAR_COPIES))
    for (c = 0; c < C; ++c) {
        int32_t a = p->rowptr[c], n = p->rowptr[c + 1] - a;
        memcpy(f->csky + a, f->ky + a, sizeof(int32_t) * (size_t)n);
        hpj__keys_sort(f->csky + a, n);
    }
    if (C < 2 || w->lay[0].mask || (int64_t)f->chcap < 2 * (int64_t)C) return;
    f->lay[0].ncls = hpj__classes_number(p, f->ty, f->csky, f->lay[0].cls, f->lay[0].crep, f->lay[0].ccnt, f->chash,
                                         f->chcap, C / 2);
}

/* Classes of a later layer i > 0 (its previous layer ran on classes): the
   previous class of each copy and the sorted multiset of (neighbour's
   previous class, edge type) over its entries. */
static void hpj__gnn_layer_classes(hpj__gnn_ws *w, int i) {
    hpj__enc_fast *f = &w->fast;
    const hpj__path *p = &w->path;
    hpj__enc_cls *L = &f->lay[i];
    const int32_t *pc = f->lay[i - 1].cls; /* the previous layer's classes */
    int32_t C = p->C, c, nt = f->nt, ne = f->ne;
    L->ncls = 0;
    if (C < 2 || (int64_t)f->chcap < 2 * (int64_t)C || (int64_t)C * ne >= INT32_MAX) return;
    HPJ__OMP(parallel for schedule(static) if (C >= HPJ__PAR_COPIES))
    for (c = 0; c < C; ++c) { /* each row's keys (neighbour's class, edge type), sorted */
        int32_t a = p->rowptr[c], n = p->rowptr[c + 1] - a, j;
        if (ne == 1) /* one edge type (none labelled): the neighbour's class alone, no division */
            for (j = 0; j < n; ++j) f->lsky[a + j] = pc[p->col[a + j]];
        else
            for (j = 0; j < n; ++j) f->lsky[a + j] = pc[p->col[a + j]] * ne + (f->ky[a + j] - nt) % ne;
        hpj__keys_sort(f->lsky + a, n);
    }
    L->ncls = hpj__classes_number(p, pc, f->lsky, L->cls, L->crep, L->ccnt, f->chash, f->chcap, C - (C + 15) / 16);
}

/* The in-place row copies and the sums between classes and copies below
   run with each thread on a block of HPJ__ROWS_DC columns over all rows,
   so that rows are read and written in the order each needs (and sums add
   in copy order whatever the thread count). */
#define HPJ__ROWS_DC 64

/* Columns c0 .. c0 + w - 1 of rows 0 .. U - 1 of x (U, D) set to zero: a
   column block's sums start here. */
static void hpj__cols_zero(float *x, int32_t U, int D, int c0, int w) {
    int32_t r;
    int j;
    for (r = 0; r < U; ++r) {
        float *o = x + (size_t)r * D + c0;
        HPJ__OMP(simd)
        for (j = 0; j < w; ++j) o[j] = 0.0f;
    }
}

/* dst row k = src row idx[k] for k < U (dst and src apart). */
static void hpj__rows_gather(float *dst, const float *src, const int32_t *idx, int32_t U, int D) {
    int32_t k;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
    for (k = 0; k < U; ++k) memcpy(dst + (size_t)k * D, src + (size_t)idx[k] * D, sizeof(float) * (size_t)D);
}

/* Copies the U class rows (rows 0..U-1 of x) out to the C copies, in
   place: row c gets row cls[c] <= c, rows from the last back. With rep
   (the backward's way back from a later layer's classes) only a class's
   representative rep[cls[c]] gets the class's row (its summed gradient),
   every other copy zeros. That is exact for what reads it: the layer below
   sums its input gradients over its own classes, and all copies of a
   class have the same input and neighbours' classes (see
   hpj__gnn_layer_classes). */
static void hpj__cls_expand(float *x, const int32_t *cls, const int32_t *rep, int32_t C, int D) {
    int cb, nb = (D + HPJ__ROWS_DC - 1) / HPJ__ROWS_DC;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)C * D >= HPJ__PAR_ELEMS))
    for (cb = 0; cb < nb; ++cb) {
        int c0 = cb * HPJ__ROWS_DC, w = HPJ__MIN(HPJ__ROWS_DC, D - c0), j;
        int32_t r;
        for (r = C - 1; r >= 0; --r) {
            float *o = x + (size_t)r * D + c0;
            const float *g = x + (size_t)cls[r] * D + c0;
            if (rep && rep[cls[r]] != r) {
                HPJ__OMP(simd)
                for (j = 0; j < w; ++j) o[j] = 0.0f;
            } else if (o != g) {
                HPJ__OMP(simd)
                for (j = 0; j < w; ++j) o[j] = g[j];
            }
        }
    }
}

/* xs (U, D) = the sums of x (C, D) over each class's copies, in copy
   order. */
static void hpj__cls_reduce(float *xs, const float *x, const int32_t *cls, int32_t C, int32_t U, int D) {
    int cb, nb = (D + HPJ__ROWS_DC - 1) / HPJ__ROWS_DC;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)C * D >= HPJ__PAR_ELEMS))
    for (cb = 0; cb < nb; ++cb) {
        int c0 = cb * HPJ__ROWS_DC, w = HPJ__MIN(HPJ__ROWS_DC, D - c0), j;
        int32_t r;
        hpj__cols_zero(xs, U, D, c0, w);
        for (r = 0; r < C; ++r) {
            float *o = xs + (size_t)cls[r] * D + c0;
            const float *g = x + (size_t)r * D + c0;
            HPJ__OMP(simd)
            for (j = 0; j < w; ++j) o[j] += g[j];
        }
    }
}

/* The backward of z = segment_mean(out) when the last layer ran on
   classes, summed straight onto the U class rows: ds[k] = the sum over
   k's copies r of dz[s(r)] / |s(r)|, in copy order (no per-copy pass). */
static void hpj__segment_mean_back_cls(float *ds, const float *dz, const int32_t *cls, const int32_t *segptr, int S,
                                       int32_t U, int D) {
    int cb, nb = (D + HPJ__ROWS_DC - 1) / HPJ__ROWS_DC;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)segptr[S] * D >= HPJ__PAR_ELEMS))
    for (cb = 0; cb < nb; ++cb) {
        int c0 = cb * HPJ__ROWS_DC, w = HPJ__MIN(HPJ__ROWS_DC, D - c0), j, s;
        int32_t r;
        hpj__cols_zero(ds, U, D, c0, w);
        for (s = 0; s < S; ++s) {
            const float *g = dz + (size_t)s * D + c0;
            float inv;
            if (segptr[s + 1] <= segptr[s]) continue;
            inv = 1.0f / (float)(segptr[s + 1] - segptr[s]);
            for (r = segptr[s]; r < segptr[s + 1]; ++r) {
                float *o = ds + (size_t)cls[r] * D + c0;
                HPJ__OMP(simd)
                for (j = 0; j < w; ++j) o[j] += inv * g[j];
            }
        }
    }
}

/* BatchNorm over U distinct rows that stand for cnt[u] equal rows each
   (N = the sum of cnt rows in all; the first-layer classes of
   hpj__gnn_classes): the statistics of the N rows, in double, each
   channel's sums in class order (threads take channel blocks, so the bits
   do not depend on their number); then the U output rows as
   hpj__bn_out_rows. Training mode (running statistics updated with N).
   With dp (hpj__bn_train's ranks) the same sums meet over the ranks
   between the passes. */
static void hpj__bn_train_cls(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                              const float *inp, const float *gamma, const float *beta, const int32_t *cnt, int U,
                              int N, int D, float momentum, float eps, int relu, const float *res, float *sum,
                              hpj__dp *dp) {
    int cb, nb = (D + HPJ__CLS_DC - 1) / HPJ__CLS_DC, i;
    if (dp) {
        double *sm = dp->bn_ws, *q = sm + D + 1, n;
        int c;
        HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
        for (cb = 0; cb < nb; ++cb) {
            int c0 = cb * HPJ__CLS_DC, w = HPJ__MIN(HPJ__CLS_DC, D - c0), u, j;
            for (j = 0; j < w; ++j) sm[c0 + j] = 0.0;
            for (u = 0; u < U; ++u)
                for (j = 0; j < w; ++j) sm[c0 + j] += (double)cnt[u] * inp[(size_t)u * D + c0 + j];
        }
        sm[D] = N;
        hpj__dp_sum_d(dp, sm, (size_t)D + 1);
        n = sm[D];
        HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
        for (cb = 0; cb < nb; ++cb) {
            int c0 = cb * HPJ__CLS_DC, w = HPJ__MIN(HPJ__CLS_DC, D - c0), u, j;
            for (j = 0; j < w; ++j) {
                sm[c0 + j] /= n;
                q[c0 + j] = 0.0;
            }
            for (u = 0; u < U; ++u)
                for (j = 0; j < w; ++j) {
                    double d = inp[(size_t)u * D + c0 + j] - sm[c0 + j];
                    q[c0 + j] += (double)cnt[u] * d * d;
                }
        }
        hpj__dp_sum_d(dp, q, (size_t)D);
        if (!(n > 0)) return;
        for (c = 0; c < D; ++c) hpj__bn_stat(c, sm[c], q[c], mean, rstd, running_mean, running_var, (int)n, momentum, eps);
    } else {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
        for (cb = 0; cb < nb; ++cb) {
            double sm[HPJ__CLS_DC], q[HPJ__CLS_DC];
            int c0 = cb * HPJ__CLS_DC, w = HPJ__MIN(HPJ__CLS_DC, D - c0), u, c;
            for (c = 0; c < w; ++c) sm[c] = q[c] = 0.0;
            for (u = 0; u < U; ++u)
                for (c = 0; c < w; ++c) sm[c] += (double)cnt[u] * inp[(size_t)u * D + c0 + c];
            for (c = 0; c < w; ++c) sm[c] /= N;
            for (u = 0; u < U; ++u)
                for (c = 0; c < w; ++c) {
                    double d = inp[(size_t)u * D + c0 + c] - sm[c];
                    q[c] += (double)cnt[u] * d * d;
                }
            for (c = 0; c < w; ++c)
                hpj__bn_stat(c0 + c, sm[c], q[c], mean, rstd, running_mean, running_var, N, momentum, eps);
        }
    }
    HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < U; ++i) hpj__bn_out_rows(out, inp, mean, rstd, gamma, beta, i, i + 1, D, relu, res, sum);
}

/* Backward of hpj__bn_train_cls (ReLU fused with relu_out, dinp
   overwritten) from dout = each class's summed gradient: the channel sums
   of the N rows are those of the classes, and dinp gets each class's
   summed input gradient. With dp: dgamma and dbeta from this rank's sums,
   the channel means from the ranks' summed ones (hpj__bn_backward). */
static void hpj__bn_backward_cls(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                 const float *gamma, const float *mean, const float *rstd, const int32_t *cnt, int U,
                                 int N, int D, const float *relu_out, hpj__dp *dp) {
    int cb, nb = (D + HPJ__CLS_DC - 1) / HPJ__CLS_DC;
    double *t = dp ? dp->bn_ws : NULL, n = N; /* with dp: the sums of g, of g xhat, and the rows */
    if (dp) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
        for (cb = 0; cb < nb; ++cb) {
            int c0 = cb * HPJ__CLS_DC, w = HPJ__MIN(HPJ__CLS_DC, D - c0), c;
            for (c = 0; c < w; ++c) t[c0 + c] = t[D + c0 + c] = 0.0;
            hpj__bn_bw_sums(t + c0, t + D + c0, inp + c0, dout + c0, relu_out ? relu_out + c0 : NULL, mean + c0,
                            rstd + c0, U, D, w);
            for (c = 0; c < w; ++c) {
                if (dgamma) dgamma[c0 + c] += (float)t[D + c0 + c];
                if (dbeta) dbeta[c0 + c] += (float)t[c0 + c];
            }
        }
        t[2 * D] = N;
        hpj__dp_sum_d(dp, t, 2 * (size_t)D + 1);
        n = t[2 * D];
        if (!(n > 0)) return;
    }
    HPJ__OMP(parallel for schedule(static) if ((int64_t)U * D >= HPJ__PAR_ELEMS))
    for (cb = 0; cb < nb; ++cb) {
        double sd[HPJ__CLS_DC], sdx[HPJ__CLS_DC];
        float md[HPJ__CLS_DC], mdx[HPJ__CLS_DC], k[HPJ__CLS_DC];
        int c0 = cb * HPJ__CLS_DC, w = HPJ__MIN(HPJ__CLS_DC, D - c0), u, c;
        if (t) {
            hpj__bn_bw_panel(NULL, NULL, md, mdx, k, t + c0, t + D + c0, gamma, rstd, (int)n, c0, w);
        } else {
            for (c = 0; c < w; ++c) sd[c] = sdx[c] = 0.0;
            hpj__bn_bw_sums(sd, sdx, inp + c0, dout + c0, relu_out ? relu_out + c0 : NULL, mean + c0, rstd + c0, U, D,
                            w);
            hpj__bn_bw_panel(dgamma, dbeta, md, mdx, k, sd, sdx, gamma, rstd, N, c0, w);
        }
        for (u = 0; u < U; ++u) {
            size_t o = (size_t)u * D + c0;
            if (relu_out)
                hpj__bn_back_row(dinp + o, inp + o, dout + o, relu_out + o, mean + c0, rstd + c0, k, md, mdx, w, 1, 1,
                                 (float)cnt[u]);
            else
                hpj__bn_back_row(dinp + o, inp + o, dout + o, NULL, mean + c0, rstd + c0, k, md, mdx, w, 1, 0,
                                 (float)cnt[u]);
        }
    }
}

/* The mode a normaliser stands for (hpj__norm_fn), which the fast
   encoder's classes depend on. */
static int hpj__norm_mode(hpj__norm_fn norm) {
    return norm == hpj__norm_running ? HPJ__EVAL : norm == hpj__norm_frozen ? HPJ__TRAIN_FROZEN : HPJ__TRAIN;
}

/* The normaliser norm over N rows that stand for cnt[u] equal rows each,
   ntot in all (a layer on classes; cnt = NULL: plain rows). The
   statistics are those of the ntot rows: the first layer sums them in
   class order (hpj__bn_train_cls), a later one over hpj__fast_bn_train's
   row blocks. Evaluation normalises each row alone, so classes change
   nothing there. */
static void hpj__fast_bn_res(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                             float *rm, float *rv, int N, int D, hpj__norm_fn norm, const float *res,
                             float *sum, const int32_t *cnt, int ntot, int later, hpj__dp *dp) {
    int mode = hpj__norm_mode(norm);
    if (mode == HPJ__EVAL || !cnt) {
        norm(out, mean, rstd, in, g, b, rm, rv, N, D, res, sum, dp);
        return;
    }
    if (mode == HPJ__TRAIN_FROZEN) rm = rv = NULL;
    if (later)
        hpj__fast_bn_train(out, mean, rstd, rm, rv, in, g, b, N, D, HPJ__BN_MOMENTUM, 1e-5f, 1, res, sum, cnt, ntot,
                           dp);
    else
        hpj__bn_train_cls(out, mean, rstd, rm, rv, in, g, b, cnt, N, ntot, D, HPJ__BN_MOMENTUM, 1e-5f, 1, res, sum,
                          dp);
}

/* The table's inputs: ty[c] = the input type of copy c (its label,
   node_onehot for none, times node_deg plus its capped degree when
   node_degree is on), ky[j] = the table row of the message along CSR
   entry j; then the first layer's classes. In place of the reference's
   one-hot rows x and ex. */
static void hpj__fast_enc_features(const hpj_model *m, const hpj_dataset *ds, hpj__gnn_ws *w) {
    const hpj__path *p = &w->path;
    hpj__enc_fast *f = &w->fast;
    int nt = f->nt, ne = f->ne;
    int32_t c;
    HPJ__OMP(parallel for schedule(static))
    for (c = 0; c < p->C; ++c) {
        int32_t u = p->node[c], v = m->node_onehot ? ds->node_label[u] - m->node_label_min : -1;
        int32_t lab = v >= 0 && v < m->node_onehot ? v : m->node_onehot; /* node_onehot: none */
        f->ty[c] = m->node_deg ? lab * m->node_deg + HPJ__MIN(hpj__node_degree(ds, u), m->node_deg - 1) : lab;
    }
    HPJ__OMP(parallel for schedule(static))
    for (c = 0; c < p->C; ++c) {
        int32_t j;
        for (j = p->rowptr[c]; j < p->rowptr[c + 1]; ++j) {
            int32_t t = 0, v;
            if (m->edge_onehot) {
                v = ds->edge_label[p->edge[j]] - m->edge_label_min;
                t = v >= 0 && v < m->edge_onehot ? v : ne - 1;
            }
            f->ky[j] = nt + f->ty[p->col[j]] * ne + t;
        }
    }
    hpj__gnn_classes(w);
}

/* The input encoders and the first layer's t1 from the table: h0 and t1
   get one row per copy, or with first-layer classes one per class (its
   first copy's); e (for the later layers) one per entry, or the shared
   one. */
static void hpj__table_forward(hpj_model *m, hpj__gnn_ws *w) {
    const hpj__path *p = &w->path;
    const hpj__enc_fast *f = &w->fast;
    const hpj_gnn_params *q = &m->p.gnn[0];
    int D = m->D, nt = f->nt, ne = f->ne, nA, k, t, d;
    int32_t i, n, C = p->C;
    float s = 1.0f + q->eps[0], *t1 = w->lay[0].t1;
    nA = nt * (1 + ne);
    for (k = 0; k < nt; ++k) { /* type k = label * node_deg + degree (node_deg 0: label) */
        float *h = f->htab + (size_t)k * D;
        int lab = m->node_deg ? k / m->node_deg : k, dg = m->node_onehot + (m->node_deg ? k % m->node_deg : 0);
        for (d = 0; d < D; ++d)
            h[d] = (lab < m->node_onehot ? m->p.node_W[(size_t)d * m->F + lab] : 0.0f) +
                   (m->node_deg ? m->p.node_W[(size_t)d * m->F + dg] : 0.0f) + m->p.node_b[d];
    }
    for (t = 0; t < ne; ++t) {
        float *e = f->etab + (size_t)t * D;
        for (d = 0; d < D; ++d) e[d] = (t < m->edge_onehot ? m->p.edge_W[(size_t)d * m->Fe + t] : 0.0f) + m->p.edge_b[d];
    }
    for (k = 0; k < nt; ++k) {
        const float *h = f->htab + (size_t)k * D;
        float *a = f->atab + (size_t)k * D;
        for (d = 0; d < D; ++d) a[d] = s * h[d];
        for (t = 0; t < ne; ++t) {
            const float *e = f->etab + (size_t)t * D;
            a = f->atab + ((size_t)nt + (size_t)k * ne + t) * D;
            for (d = 0; d < D; ++d) {
                float v = h[d] + e[d];
                a[d] = v > 0.0f ? v : 0.0f;
            }
        }
    }
    hpj_linear_forward(f->ttab, f->atab, q->W1, NULL, nA, D, D);
    if (m->cfg.gnn_layers > 1 && !m->edge_onehot) memcpy(w->e, f->etab, sizeof(float) * (size_t)D); /* the later layers' e */
    /* row i of h0 and t1: copy i, or with classes class i (its first copy) */
    n = f->lay[0].ncls ? f->lay[0].ncls : C;
    HPJ__OMP(parallel for schedule(static) if (((int64_t)p->rowptr[C] + C) * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < n; ++i) {
        float *o = t1 + (size_t)i * D;
        int32_t j, c = f->lay[0].ncls ? f->lay[0].crep[i] : i;
        memcpy(w->h0 + (size_t)i * D, f->htab + (size_t)f->ty[c] * D, sizeof(float) * (size_t)D);
        memcpy(o, f->ttab + (size_t)f->ty[c] * D, sizeof(float) * (size_t)D);
        for (j = p->rowptr[c]; j < p->rowptr[c + 1]; ++j) {
            const float *r = f->ttab + (size_t)f->csky[j] * D;
            int dd;
            HPJ__OMP(simd)
            for (dd = 0; dd < D; ++dd) o[dd] += r[dd];
        }
    }
    if (m->cfg.gnn_layers > 1 && m->edge_onehot) { /* the later layers' e: entry j's edge type */
        HPJ__OMP(parallel for schedule(static) if ((int64_t)p->rowptr[C] * D >= HPJ__PAR_ELEMS))
        for (i = 0; i < p->rowptr[C]; ++i)
            memcpy(w->e + (size_t)i * D, f->etab + (size_t)((f->ky[i] - nt) % ne) * D, sizeof(float) * (size_t)D);
    }
}

/* Backward of hpj__table_forward: from dt1 (C, D), the gradient at the
   first layer's t1, and dh0 (C, D), the one at h0 from the residual (with
   first-layer classes: (U, D), each class's sums over its copies),
   accumulates into W1, eps and the node and edge encoders (with the later
   layers' edge gradient b->de, complete by then). The sums over
   copies run in double, each task owning a slice of columns over all rows,
   so they add in row order whatever the thread count. */
static void hpj__table_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dt1,
                                const float *dh0) {
    const hpj__path *p = &w->path;
    const hpj__enc_fast *f = &w->fast;
    const hpj_gnn_params *q = &m->p.gnn[0];
    hpj_gnn_params *gq = &m->g.gnn[0];
    int D = m->D, nt = f->nt, ne = f->ne, nA, nc = (D + HPJ__GINE_DC - 1) / HPJ__GINE_DC, cb, d;
    int32_t C = p->C, nr = f->lay[0].ncls ? f->lay[0].ncls : C;
    float s = 1.0f + q->eps[0];
    double deps = 0.0;
    nA = nt * (1 + ne);
    /* dT[r] = sum of dt1 over the copies and entries that read row r;
       dH[k] (residual part) = sum of dh0 over the copies of type k */
    HPJ__OMP(parallel for schedule(static) if (((int64_t)p->rowptr[C] + C) * D >= HPJ__PAR_ELEMS))
    for (cb = 0; cb < nc; ++cb) {
        int c0 = cb * HPJ__GINE_DC, wd = HPJ__MIN(HPJ__GINE_DC, D - c0), j;
        int32_t r, k;
        for (r = 0; r < nA; ++r)
            for (j = 0; j < wd; ++j) f->tacc[(size_t)r * D + c0 + j] = 0.0;
        for (r = 0; r < nt; ++r)
            for (j = 0; j < wd; ++j) f->hacc[(size_t)r * D + c0 + j] = 0.0;
        for (r = 0; r < ne; ++r)
            for (j = 0; j < wd; ++j) f->eacc[(size_t)r * D + c0 + j] = 0.0;
        for (r = 0; r < nr; ++r) { /* row r: copy r, or class r (its first copy c) */
            const float *g = dt1 + (size_t)r * D + c0, *gh = dh0 + (size_t)r * D + c0;
            int32_t c = f->lay[0].ncls ? f->lay[0].crep[r] : r;
            double *ta = f->tacc + (size_t)f->ty[c] * D + c0, *ha = f->hacc + (size_t)f->ty[c] * D + c0;
            HPJ__OMP(simd)
            for (j = 0; j < wd; ++j) { ta[j] += g[j]; ha[j] += gh[j]; }
            for (k = p->rowptr[c]; k < p->rowptr[c + 1]; ++k) {
                double *ea = f->tacc + (size_t)f->ky[k] * D + c0;
                HPJ__OMP(simd)
                for (j = 0; j < wd; ++j) ea[j] += g[j];
            }
        }
        if (m->cfg.gnn_layers > 1 && m->edge_onehot) /* the later layers' de, by edge type */
            for (k = 0; k < p->rowptr[C]; ++k) {
                const float *ge = b->de + (size_t)k * D + c0;
                double *ea = f->eacc + (size_t)((f->ky[k] - nt) % ne) * D + c0;
                HPJ__OMP(simd)
                for (j = 0; j < wd; ++j) ea[j] += ge[j];
            }
        for (r = 0; r < nA; ++r)
            for (j = 0; j < wd; ++j) f->dtab[(size_t)r * D + c0 + j] = (float)f->tacc[(size_t)r * D + c0 + j];
    }
    /* T = A W1^T: dW1 += dT^T A, dA = dT W1 */
    hpj__linear_back2(f->datab, 0.0f, gq->W1, NULL, f->dtab, f->atab, q->W1, nA, D, D);
    /* A = [(1 + eps) H ; ReLU(H[k] + Ev[t])], H[k] = node_W[:, label] (+
       node_W[:, degree]) + node_b, Ev[t] = edge_W[:, t] + edge_b: column d
       of every table at once */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)nA * D >= HPJ__PAR_ELEMS))
    for (d = 0; d < D; ++d) {
        double gb = 0.0, geb = 0.0, dep = 0.0;
        int k, t, lab;
        if (m->cfg.gnn_layers > 1 && !m->edge_onehot) f->eacc[d] += b->de[d]; /* the later layers' shared de */
        for (k = 0; k < nt; ++k) {
            float hk = f->htab[(size_t)k * D + d], da = f->datab[(size_t)k * D + d];
            double gh = f->hacc[(size_t)k * D + d] + (double)s * da;
            dep += (double)hk * da;
            for (t = 0; t < ne; ++t) {
                float v = hk + f->etab[(size_t)t * D + d];
                double g = v > 0.0f ? f->datab[((size_t)nt + (size_t)k * ne + t) * D + d] : 0.0f;
                gh += g;
                f->eacc[(size_t)t * D + d] += g;
            }
            lab = m->node_deg ? k / m->node_deg : k; /* type k = label * node_deg + degree */
            if (lab < m->node_onehot) m->g.node_W[(size_t)d * m->F + lab] += (float)gh;
            if (m->node_deg) m->g.node_W[(size_t)d * m->F + m->node_onehot + k % m->node_deg] += (float)gh;
            gb += gh;
        }
        m->g.node_b[d] += (float)gb;
        for (t = 0; t < ne; ++t) {
            if (t < m->edge_onehot) m->g.edge_W[(size_t)d * m->Fe + t] += (float)f->eacc[(size_t)t * D + d];
            geb += f->eacc[(size_t)t * D + d];
        }
        m->g.edge_b[d] += (float)geb;
        f->depc[d] = dep;
    }
    for (d = 0; d < D; ++d) deps += f->depc[d];
    gq->eps[0] += (float)deps;
}

/* The rows layer i ran on: its classes (cnt, cls; a later layer's also
   its representatives rep, whose aggregations it computed), or the copies
   (NULL, N = C). */
static int32_t hpj__gnn_rows(const hpj__gnn_ws *w, int i, const int32_t **cnt, const int32_t **cls,
                             const int32_t **rep) {
    const hpj__enc_cls *L = &w->fast.lay[i];
    *cnt = *cls = *rep = NULL;
    if (!L->ncls) return w->path.C;
    *cnt = L->ccnt;
    *cls = L->cls;
    if (i > 0) *rep = L->crep;
    return L->ncls;
}

/* Whether layer i's output stays in class rows: a later layer on classes
   that is the last one (the patch means, forward and backward, read its
   class rows through cls instead of C copied-out rows). */
static int hpj__gnn_top_cls(const hpj_model *m, const hpj__gnn_ws *w, int i) {
    return i > 0 && i == m->cfg.gnn_layers - 1 && w->fast.lay[i].ncls > 0;
}

/* The fast sibling of hpj__gnn_forward: the input table gives h0 and the
   first layer's t1; each layer runs on its classes where it has them, and
   as the reference layer (hpj__gnn_layer_forward) where not. */
static void hpj__fast_gnn_forward(hpj_model *m, hpj__gnn_ws *w, hpj_bn_stats *bn, hpj__norm_fn norm,
                                  uint64_t drop_seed) {
    const hpj__path *p = &w->path;
    hpj__enc_fast *f = &w->fast;
    int i, D = m->D, C = p->C, S = p->S, layers = m->cfg.gnn_layers, mode = hpj__norm_mode(norm);
    size_t CD = (size_t)C * D;
    hpj__table_forward(m, w);
    for (i = 0; i < layers; ++i) {
        hpj__gnn_layer *L = &w->lay[i];
        const hpj_gnn_params *q = &m->p.gnn[i];
        const int32_t *cnt, *cls, *rep;
        const float *res = L->h;
        int N;
        if (i > 0) { /* classes in training when the layer below had them; else the reference layer */
            f->lay[i].ncls = 0;
            if (mode != HPJ__EVAL && f->lay[i].cls && f->lay[i - 1].ncls) hpj__gnn_layer_classes(w, i);
            if (!f->lay[i].ncls) {
                hpj__gnn_layer_forward(m, w, bn, i, norm, drop_seed);
                continue;
            }
        }
        N = hpj__gnn_rows(w, i, &cnt, &cls, &rep);
        if (i > 0) { /* the representatives' aggregations (the first layer's t1 came from the table) */
            hpj__gine_fwd(L->agg, L->h, w->e, m->edge_onehot ? D : 0, p->rowptr, p->col, N, D, q->eps[0], rep);
            hpj_linear_forward(L->t1, L->agg, q->W1, NULL, N, D, D);
        }
        hpj__fast_bn_res(L->r1, L->b1m, L->b1r, L->t1, q->bn1_g, q->bn1_b, bn->bn1_m[i], bn->bn1_v[i], N, D, norm, NULL, NULL, cnt, C, i > 0, w->dp);
        hpj_linear_forward(L->t2, L->r1, q->W2, NULL, N, D, D);
        if (rep) { /* the residual's class rows, summed onto in place */
            hpj__rows_gather(L->sum, L->h, rep, N, D);
            res = L->sum;
        }
        hpj__fast_bn_res(w->fwd_only && !L->mask ? NULL : L->ra2, L->b2m, L->b2r, L->t2,
                         q->bn2_g, q->bn2_b, bn->bn2_m[i], bn->bn2_v[i], N, D, norm, res,
                         L->mask ? NULL : L->sum, cnt, C, i > 0, w->dp);
        if (L->mask) { /* (dropout keeps the layer per copy: N = C) */
            size_t t;
            hpj__dropout_at(L->r2, L->mask, L->ra2, CD, m->cfg.dropout, drop_seed, (uint64_t)m->step, 100 + i,
                            (uint64_t)w->row0 * D);
            HPJ__OMP(parallel for simd schedule(static))
            for (t = 0; t < CD; ++t) L->sum[t] = L->h[t] + L->r2[t];
        }
        if (q->Wout && i + 1 < layers) hpj_linear_forward(L->out, L->sum, q->Wout, q->bout, N, D, D);
        if (cls && !hpj__gnn_top_cls(m, w, i)) hpj__cls_expand(i + 1 < layers ? L->out : L->sum, cls, NULL, C, D);
    }
    i = layers - 1;
    if (hpj__gnn_top_cls(m, w, i)) { /* hpj__gnn_means over the class rows */
        const hpj__gnn_layer *L = &w->lay[i];
        const hpj_gnn_params *q = &m->p.gnn[i];
        hpj_gather_mean_forward(q->Wout ? L->out : w->z, L->sum, p->seg, f->lay[i].cls, S, D);
        if (q->Wout) hpj_linear_forward(w->z, L->out, q->Wout, q->bout, S, D, D);
    } else {
        hpj__gnn_means(m, w);
    }
}

/* The fast sibling of hpj__gnn_backward: layers on classes take their
   classes' summed gradients and hand their representatives' back; the
   others run the reference layer backward; the first layer ends in the
   table's backward, which also does the input encoders. */
static void hpj__fast_gnn_backward(hpj_model *m, const hpj__gnn_ws *w, hpj__gnn_bws *b, const float *dz) {
    const hpj__path *p = &w->path;
    const hpj__enc_fast *f = &w->fast;
    int i, D = m->D, C = p->C, S = p->S, layers = m->cfg.gnn_layers;
    size_t CD = (size_t)C * D;
    float *dout = b->buf[0];
    if (layers > 1) { /* only the layers after the first read e */
        if (m->edge_onehot) hpj__zero(b->de, (size_t)p->E * D);
        else memset(b->de, 0, sizeof(float) * (size_t)D);
    }
    dz = hpj__gnn_means_backward(m, w, b, dz);
    i = layers - 1;
    if (hpj__gnn_top_cls(m, w, i)) { /* straight onto the last layer's class rows */
        hpj__segment_mean_back_cls(dout, dz, f->lay[i].cls, p->seg, S, f->lay[i].ncls, D);
    } else {
        hpj__zero(dout, CD);
        hpj_segment_mean_backward(dout, dz, p->seg, S, D);
    }
    for (i = layers - 1; i >= 0; --i) {
        const hpj__gnn_layer *L = &w->lay[i];
        const hpj_gnn_params *q = &m->p.gnn[i];
        hpj_gnn_params *gq = &m->g.gnn[i];
        float *dh, *t1, *t2;
        const float *dra2;
        const int32_t *cnt, *cls, *rep;
        int N;
        if (i > 0 && !f->lay[i].ncls) {
            dout = hpj__gnn_layer_backward(m, w, b, i, dout);
            continue;
        }
        N = hpj__gnn_rows(w, i, &cnt, &cls, &rep);
        if (cls && !hpj__gnn_top_cls(m, w, i)) { /* the classes' summed gradients */
            float *ds = hpj__gnn_spare(b, dout, NULL);
            hpj__cls_reduce(ds, dout, cls, C, N, D);
            dout = ds;
        }
        /* as hpj__gnn_layer_backward, on N rows */
        if (q->Wout && i + 1 < layers) {
            dh = hpj__gnn_spare(b, dout, NULL);
            hpj__linear_back2(dh, 0.0f, gq->Wout, gq->bout, dout, L->sum, q->Wout, N, D, D);
        } else {
            dh = dout;
        }
        t1 = hpj__gnn_spare(b, dh, NULL);
        t2 = hpj__gnn_spare(b, dh, t1);
        dra2 = dh;
        if (L->mask) {
            hpj__zero(t1, CD);
            hpj_dropout_backward(t1, dh, L->mask, CD, m->cfg.dropout);
            dra2 = t1;
        }
        if (cnt && i == 0)
            hpj__bn_backward_cls(t2, gq->bn2_g, gq->bn2_b, dra2, L->t2, q->bn2_g, L->b2m, L->b2r, cnt, N, C, D, L->ra2,
                                 w->dp);
        else
            hpj__fast_bn_backward(t2, gq->bn2_g, gq->bn2_b, dra2, L->t2, q->bn2_g, L->b2m, L->b2r, N, D, L->ra2, 1,
                                  cnt, C, w->dp);
        hpj__linear_back2(t1, 0.0f, gq->W2, NULL, t2, L->r1, q->W2, N, D, D);
        if (cnt && i == 0)
            hpj__bn_backward_cls(t2, gq->bn1_g, gq->bn1_b, t1, L->t1, q->bn1_g, L->b1m, L->b1r, cnt, N, C, D, L->r1,
                                 w->dp);
        else
            hpj__fast_bn_backward(t2, gq->bn1_g, gq->bn1_b, t1, L->t1, q->bn1_g, L->b1m, L->b1r, N, D, L->r1, 1, cnt,
                                  C, w->dp);
        if (i == 0) { /* t1 from the table; h0 gets dh (the residual's) */
            hpj__table_backward(m, w, b, t2, dh);
            return;
        }
        hpj__linear_back2(t1, 0.0f, gq->W1, NULL, t2, L->agg, q->W1, N, D, D);
        /* class rows -> the representatives' rows, zeros elsewhere */
        hpj__cls_expand(t1, cls, rep, C, D);
        hpj__cls_expand(dh, cls, rep, C, D);
        if (m->edge_onehot)
            hpj_gine_backward(dh, b->de, gq->eps, t1, L->h, w->e, p->rowptr, p->col, p->rev, C, D, q->eps[0]);
        else
            hpj_gine_backward_shared(dh, b->de, gq->eps, t1, L->h, w->e, p->rowptr, p->col, C, D, q->eps[0]);
        dout = dh; /* (no patch mixing on a layer with classes) */
    }
}



/* ---- anchor: fast step ----
   (the training step's fast siblings follow this line)
   ---- */

/* ==== fast: the two paths side by side on two threads ====
   Steps 3 and 4 of hpj__step (the context path, the targets) as two
   pieces of work, one per thread, instead of one after the other with
   both threads on every loop: at small widths the loops are short and the
   threads spend much of their time meeting at the loops' barriers. Thread
   0 runs the target patches' patch encoder g_eta and lays out the EMA
   encoder's input; thread 1 runs the context path (g_eta, e_xi,
   f_theta). Then each runs the EMA encoder and the targets Phi on
   a part of the graphs: thread 0 on the first share of them, thread 1,
   once thread 0's input is laid out, on the rest; the share follows the
   last step's times at this resolution (the trainer's side_share), so
   that both threads end together.
   The same bits as the reference: each piece does the reference's
   arithmetic on the same inputs (a loop run by one thread computes what
   it computes on many; the EMA encoder works token by token and graph by
   graph, so splitting its graphs changes no bit). One care: both paths'
   patch encoders move the same BatchNorm running statistics, the context
   path's update first. The target path therefore runs on a copy of the
   model whose running statistics are a scratch of -0: there
   r <- (1 - a) r + a x leaves exactly a x (-0 adds nothing), which is
   added to the real statistics after both threads are done in
   hpj__bn_run's expression, (1 - a) r + (a x), with a x already rounded
   as there: the same bits. A
   variance over a single row is not updated (hpj__bn_stat): its slot
   stays -0, which a x never is for a variance x >= 0.
   It applies with exactly two threads (hpj__two_ok) and widths up to
   HPJ__SPLIT_MAX_D: wider
   patch encoders' products keep both threads busy on their own, and
   side by side the paths only compete for the cache. */
#ifndef HPJ__SPLIT_MAX_D
#define HPJ__SPLIT_MAX_D 256
#endif

/* Seconds on a wall clock (0 without OpenMP, where this path never runs). */
static double hpj__wtime(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return 0.0;
#endif
}

/* Waits until the other thread has set *ctr to v or more, after its
   writes (OpenMP's producer / consumer pattern: a flush on both sides);
   hpj__post sets it. */
static void hpj__wait_count(int *ctr, int v) {
    int seen;
    do {
        HPJ__OMP(atomic read)
        seen = *ctr;
    } while (seen < v);
    HPJ__OMP(flush)
}
static void hpj__post(int *ctr, int v) {
    HPJ__OMP(flush)
    HPJ__OMP(atomic write)
    *ctr = v;
    (void)v; /* (GCC 12 takes v in an atomic write as set but not used) */
}

/* The graphs b0 .. b1 - 1 of a forward-only encoder workspace: the same
   buffers from row b0 T on (every buffer is by token, attention by graph). */
static void hpj__enc_view(hpj__enc_ws *v, const hpj__enc_ws *w, int b0, int b1, int D, int H, int F) {
    size_t r = (size_t)b0 * w->T;
    int i;
    *v = *w;
    v->B = b1 - b0;
    for (i = 0; i <= w->nblocks; ++i) v->x[i] = w->x[i] + r * D;
    for (i = 0; i < w->nblocks; ++i) {
        hpj_block_cache *c = &v->cache[i];
        c->ln1 += r * D; c->ln1_mean += r; c->ln1_rstd += r; c->qkv += r * 3 * D;
        c->att += (size_t)b0 * H * w->T * w->T;
        c->atty += r * D; c->x1 += r * D; c->ln2 += r * D; c->ln2_mean += r; c->ln2_rstd += r;
        c->fch += r * F; c->fch_act += r * F;
    }
}

/* The EMA encoder's m(u) and the targets Phi of graphs b0 .. b1 - 1 (of
   B, T targets in all), as the reference's hpj__fwd_target and
   hpj__targets_phi do for all graphs. Returns the first bad target or -1. */
static int32_t hpj__side_targets(hpj__trainer *tr, hpj__step_ws *w, int32_t b0, int32_t b1, int32_t B, int32_t T,
                                 int32_t Tm, double *badmu) {
    hpj_model *m = tr->m;
    hpj__enc_ws v;
    size_t r = (size_t)b0 * Tm;
    if (b1 <= b0) return -1;
    hpj__enc_view(&v, &w->et, b0, b1, m->D, m->H, m->Fh);
    hpj__enc_forward_mean(m, &v, m->tgt, T == B * Tm ? NULL : w->tmask + r, w->adj ? w->adj + r * Tm : NULL,
                          w->mu + r);
    return hpj__targets_phi(tr, w, b0, b1, Tm, badmu);
}

/* After the paths: the target path's running-statistics terms a x (in
   sbn) added to the model's set bn, r <- (1 - a) r + a x, in the order of the
   reference's forward (the order does not matter: each statistic moves
   once). */
static void hpj__side_bn_apply(const hpj_model *m, hpj_bn_stats *bn, const hpj_bn_stats *sbn) {
    float a = HPJ__BN_MOMENTUM;
    int i, k, c, D = m->D;
    for (i = 0; i < m->cfg.gnn_layers; ++i)
        for (k = 0; k < 3; ++k) {
            float *um = k == 0 ? bn->bnu_m[i] : k == 1 ? bn->bn1_m[i] : bn->bn2_m[i];
            float *uv = k == 0 ? bn->bnu_v[i] : k == 1 ? bn->bn1_v[i] : bn->bn2_v[i];
            const float *sm = k == 0 ? sbn->bnu_m[i] : k == 1 ? sbn->bn1_m[i] : sbn->bn2_m[i];
            const float *sv = k == 0 ? sbn->bnu_v[i] : k == 1 ? sbn->bn1_v[i] : sbn->bn2_v[i];
            if (!um) continue; /* no patch mixing on this layer */
            for (c = 0; c < D; ++c) {
                uint32_t bits;
                memcpy(&bits, &sv[c], sizeof bits);
                um[c] = (1.0f - a) * um[c] + sm[c];
                if (bits != 0x80000000u) uv[c] = (1.0f - a) * uv[c] + sv[c]; /* (-0: not updated) */
            }
        }
}

/* Steps 3 and 4 side by side; 0 when this path does not apply (nothing
   done), else 1 with *badt and *badmu as the reference sets them. */
static int hpj__fast_paths_side(hpj__trainer *tr, hpj__step_ws *w, int32_t B, int32_t T, int32_t Tm, int l,
                                uint64_t drop_seed, int32_t *badt, double *badmu) {
    hpj_model *m = tr->m, mt;
    int train = tr->mode == HPJ__TRAIN, ready = 0;
    double f = tr->side_share[l] > 0.0 ? tr->side_share[l] : 0.5, fl1 = 0.0, tm[4] = {0, 0, 0, 0};
    int32_t bs, bad[2] = {-1, -1};
    double bmu[2] = {0.0, 0.0};
    float *scratch = NULL;
    size_t i;
    /* (with a communicator both threads would call the collectives of
       their BatchNorms: the paths then run one after the other) */
    if (tr->dp || w->trow || m->D > HPJ__SPLIT_MAX_D || !hpj__two_ok()) return 0; /* (graph: one path) */
    mt = *m;
    if (train) { /* the target path's BatchNorms update a scratch of -0 (see above) */
        scratch = (float *)HPJ_MALLOC(NULL, sizeof(float) * (m->num_stats + 1));
        if (!scratch) return 0;
        for (i = 0; i < m->num_stats; ++i) scratch[i] = -0.0f;
        hpj__stats_layout(m, scratch, mt.bn);
    }
    bs = HPJ__MAX(0, HPJ__MIN(B, (int32_t)(f * B + 0.5)));
    HPJ__OMP(parallel num_threads(2))
    {
        int id = 0, nth = 1;
        double f0 = hpj__flops, t0 = hpj__wtime(), t1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        nth = omp_get_num_threads();
#endif
        if (id == 0) {
            hpj__gnn_forward(&mt, &w->gt, &mt.bn[tr->l], hpj__step_norm(tr), 0);
            hpj__fwd_target_input(tr, w, B, Tm);
            hpj__post(&ready, 1);
            t1 = hpj__wtime();
            bad[0] = hpj__side_targets(tr, w, 0, bs, B, T, Tm, &bmu[0]);
            tm[0] = t1 - t0;
            tm[1] = hpj__wtime() - t1;
        }
        if (id == 1 || nth == 1) { /* (a team of one runs both pieces) */
            hpj__fwd_context(tr, w, B, T, drop_seed);
            tm[2] = hpj__wtime() - t0; /* (without the wait below: what bs can balance) */
            hpj__wait_count(&ready, 1);
            t1 = hpj__wtime();
            bad[1] = hpj__side_targets(tr, w, bs, B, B, T, Tm, &bmu[1]);
            tm[3] = hpj__wtime() - t1;
            if (id == 1) fl1 = hpj__flops - f0; /* (the flop counter is per thread) */
        }
    }
    hpj__flops += fl1;
    if (scratch) {
        hpj__side_bn_apply(m, &m->bn[tr->l], &mt.bn[tr->l]);
        HPJ_FREE(NULL, scratch);
    }
    *badt = bad[0] >= 0 ? bad[0] : bad[1]; /* the first in graph order */
    *badmu = bad[0] >= 0 ? bmu[0] : bmu[1];
    /* the next share: thread 0's patch encoder and its graphs' EMA time
       equal to thread 1's context path and the rest, at this step's EMA
       time per graph */
    if (tm[1] + tm[3] > 0.0 && B > 0) {
        double per = (tm[1] + tm[3]) / B, want = 0.5 * (B + (tm[2] - tm[0]) / per) / B;
        want = want < 0.0 ? 0.0 : want > 1.0 ? 1.0 : want;
        tr->side_share[l] = 0.5 * f + 0.5 * want;
    }
    return 1;
}

/* ==== fast: optimizer pass (Adam and the EMA in one pass) ====
   hpj__adam_ema's two loops, Adam over all parameters and then the EMA
   over the encoder's, fused into one pass over blocks of 16 parameters:
   each block's new p goes into its EMA copy while still in registers, so
   the pass reads p, g, m, v and the copy once instead of p twice, and the
   lanes run Adam's square root and divisions side by side (a scalar
   sqrtf, which may set errno, keeps compilers from vectorizing the plain
   loop). Each lane does the plain loop's float operations in its order,
   each rounded once, so the bits are the same on every level (test
   model.fast_matches_reference). optimizer = adam_active zeroes the lanes
   whose gradient is zero with a compare mask, as the plain loop's
   condition does (the unordered compare keeps a NaN gradient's lane, as
   g == 0 is false for it). */
#if !defined(HPJ_NO_SIMD) && (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
#include <immintrin.h>
/* X where G != 0, else +0 (adam_active's condition), 8 or 16 lanes. */
#define HPJ__KEEP_NONZERO256(G, X) _mm256_and_ps(_mm256_cmp_ps((G), _mm256_setzero_ps(), _CMP_NEQ_UQ), (X))
#define HPJ__KEEP_NONZERO512(G, X) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask((G), _mm512_setzero_ps(), _CMP_NEQ_UQ), (X))
/* One vector of W bits (256: 8 lanes, 512: 16) at offset o of the pass
   below, with its variables in scope. */
#define HPJ__ADAM_LANES(W, o)                                                                                     \
    {                                                                                                             \
        size_t o_ = (o);                                                                                          \
        __m##W P = _mm##W##_loadu_ps(p + o_), G = _mm##W##_loadu_ps(g + o_), M = _mm##W##_loadu_ps(mo + o_);    \
        __m##W V = _mm##W##_loadu_ps(v + o_), gi;                                                                 \
        gi = _mm##W##_add_ps(G, _mm##W##_mul_ps(_mm##W##_set1_ps(gwd), P));                                       \
        if (active) gi = HPJ__KEEP_NONZERO##W(G, gi);                                                             \
        P = _mm##W##_mul_ps(P, _mm##W##_set1_ps(decay));                                                          \
        M = _mm##W##_add_ps(_mm##W##_mul_ps(_mm##W##_set1_ps(beta1), M), _mm##W##_mul_ps(_mm##W##_set1_ps(omb1), gi)); \
        V = _mm##W##_add_ps(_mm##W##_mul_ps(_mm##W##_set1_ps(beta2), V),                                          \
                            _mm##W##_mul_ps(_mm##W##_set1_ps(omb2), _mm##W##_mul_ps(gi, gi)));                    \
        gi = _mm##W##_add_ps(_mm##W##_div_ps(_mm##W##_sqrt_ps(V), _mm##W##_set1_ps(bc2s)), _mm##W##_set1_ps(eps)); \
        P = _mm##W##_sub_ps(P, _mm##W##_mul_ps(_mm##W##_set1_ps(step), _mm##W##_div_ps(M, gi)));                  \
        _mm##W##_storeu_ps(p + o_, P);                                                                            \
        _mm##W##_storeu_ps(mo + o_, M);                                                                           \
        _mm##W##_storeu_ps(v + o_, V);                                                                            \
        if (o_ >= eo) {                                                                                           \
            float *e_ = ema + (o_ - eo);                                                                          \
            _mm##W##_storeu_ps(e_, _mm##W##_add_ps(_mm##W##_mul_ps(_mm##W##_set1_ps(tau), _mm##W##_loadu_ps(e_)), \
                                                   _mm##W##_mul_ps(_mm##W##_set1_ps(ta), P)));                    \
        }                                                                                                         \
    }
#endif
static void hpj__fast_adam_ema(hpj_model *m, float lr, float tau) {
    const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = m->cfg.weight_decay;
    int decoupled = m->cfg.optimizer == HPJ_OPT_ADAMW, active = m->cfg.optimizer == HPJ_OPT_ADAM_ACTIVE;
    double bc1 = 1.0 - pow((double)beta1, (double)(m->step + 1)), bc2 = 1.0 - pow((double)beta2, (double)(m->step + 1));
    float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2), ta = 1.0f - tau;
    float gwd = decoupled ? 0.0f : wd, decay = decoupled ? (float)(1.0 - (double)lr * wd) : 1.0f;
    float omb1 = (float)(1.0 - (double)beta1), omb2 = (float)(1.0 - (double)beta2);
    float *p = m->params, *mo = m->adam_m, *v = m->adam_v, *ema = m->ema;
    const float *g = m->grads;
    size_t n = m->num_params, eo = m->enc_offset;
    int64_t b, nb = (int64_t)((n + 15) / 16);
    int level = hpj_paths();
    HPJ_ASSERT(eo % 16 == 0 && eo + m->enc_count == n); /* whole blocks: a block is all encoder or none */
    (void)level;
    HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 16))
    for (b = 0; b < nb; ++b) {
        size_t o = 16 * (size_t)b;
        int l, w = (int)HPJ__MIN((int64_t)16, (int64_t)(n - o));
        float tp[16], tm[16], tv[16], ts[16];
#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
        if (w == 16 && level >= HPJ_PATHS_AVX512) {
            HPJ__ADAM_LANES(512, o)
            continue;
        }
#endif
#if !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
        if (w == 16 && level >= HPJ_PATHS_AVX2) {
            HPJ__ADAM_LANES(256, o)
            HPJ__ADAM_LANES(256, o + 8)
            continue;
        }
#endif
        for (l = 0; l < w; ++l) {
            float gi = active && g[o + l] == 0.0f ? 0.0f : g[o + l] + gwd * p[o + l];
            tp[l] = p[o + l] * decay;
            tm[l] = beta1 * mo[o + l] + omb1 * gi;
            tv[l] = beta2 * v[o + l] + omb2 * (gi * gi);
        }
        for (l = 0; l < w; ++l) ts[l] = sqrtf(tv[l]);
        for (l = 0; l < w; ++l) {
            tp[l] -= step * (tm[l] / (ts[l] / bc2s + eps));
            p[o + l] = tp[l];
            mo[o + l] = tm[l];
            v[o + l] = tv[l];
            if (o >= eo) ema[o - eo + l] = tau * ema[o - eo + l] + ta * tp[l];
        }
    }
}


/* ==== fast: the team size follows the machine's load ====
   A training step is a long chain of short parallel loops, and each loop
   ends at a barrier where the team waits for its slowest thread. That is
   cheap while every thread owns a core. When another process takes one of
   the cores, a thread of the team is often descheduled: the others then
   wait at each barrier for the scheduler to give it its core back, and T
   threads can run many times slower than one. No waiting policy fixes
   that (spinning burns the waiter's turn; sleeping adds a wake-up to every
   loop), so training, embedding and probes measure instead: they time
   each unit of work (a minibatch, an embedding chunk, a probe's pass over
   the data) per unit of work done, run a unit with the other team size
   (1 or T) now and then, and keep the faster one. A trial of the losing
   size costs what one of its units takes, so trials come after
   HPJ__GOV_RATIO times that much time spent on the winner, further apart
   while the choice holds, and at once when a unit of the winner runs
   slower than the loser did (the load has changed). The choice carries
   over from one call to the next (per calling thread), so the folds of a
   protocol do not each start by learning it again.
   Results never depend on the team size (see the threads contract at the
   top), so all of this changes speed only, never a bit.
   hpj_set_adaptive_threads(0) keeps the team at T (benchmarks do). */
static int hpj__adaptive = 1;
HPJDEF void hpj_set_adaptive_threads(int on) { hpj__adaptive = on != 0; }

#ifndef HPJ__GOV_RATIO
#define HPJ__GOV_RATIO 32.0   /* time on the winner per unit of trial time */
#endif
#define HPJ__GOV_BACKOFF 16.0 /* trials at most this much further apart as the choice holds */
#define HPJ__GOV_CAP 60.0     /* seconds: backing off stops here (a load may have gone) */
#define HPJ__GOV_MARGIN 1.10  /* the other size must be this much faster to win */
struct hpj__gov {
    int T;          /* the team size asked for (omp_get_max_threads() at the start); 0: unset */
    int cur;        /* the size in use between trials: 1 or T */
    int size;       /* the size of the unit in flight */
    double rate[2]; /* work per second: [0] one thread, [1] T threads (0: not measured) */
    double last[2]; /* seconds of the last unit run with each size */
    double waited;  /* seconds on `cur` since the last trial */
    double wait;    /* seconds on `cur` before the next trial */
    double backoff; /* 1, 2, 4, ... while trials confirm `cur` */
    double t0, f0;  /* when the unit in flight started, and hpj__flops then */
    int warm;       /* the unit in flight warms up a call: not measured */
};

/* Each kind of unit keeps its own rates. Training and embedding measure a
   unit's work by the GEMM flops it counted (chunks of different
   resolutions cost differently per node); probes by the size of the pass. */
#ifdef _OPENMP
static HPJ__TLS hpj__gov hpj__gov_state[HPJ__GOV_KINDS];

/* Takes the unit's size (any fixed measure) and seconds, and picks the size to keep. */
static void hpj__gov_measure(hpj__gov *g, double work, double dt) {
    int i = g->size > 1, other;
    double rate = work / dt, cost;
    if (!(dt > 0.0) || !(rate > 0.0)) return;
    g->last[i] = dt;
    if (g->size == g->cur) {
        /* the current size: a running mean that follows a change of load */
        g->rate[i] = g->rate[i] > 0.0 ? 0.75 * g->rate[i] + 0.25 * rate : rate;
        g->waited += dt;
        /* a unit slower than the other size was at its last trial: the
           load has changed, so the trial is due now */
        if (HPJ__GOV_MARGIN * rate < g->rate[!i]) g->waited = HPJ__MAX(g->waited, g->wait + dt);
        return;
    }
    g->rate[i] = rate; /* a trial: one fresh measurement of the other size */
    if (rate > HPJ__GOV_MARGIN * g->rate[g->cur > 1]) {
        g->cur = g->size; /* the other size wins */
        g->backoff = 1.0;
    } else if (g->backoff < HPJ__GOV_BACKOFF) {
        g->backoff *= 2.0;
    }
    other = g->cur > 1 ? 0 : 1;
    cost = HPJ__GOV_RATIO * g->last[other];
    g->wait = cost * g->backoff;
    if (g->wait > HPJ__GOV_CAP) g->wait = HPJ__MAX(HPJ__GOV_CAP, cost);
    g->waited = 0.0;
}

/* The size of the next unit: the other one once `wait` seconds are spent. */
static int hpj__gov_pick(hpj__gov *g) {
    g->size = g->waited > g->wait ? (g->cur == 1 ? g->T : 1) : g->cur;
    return g->size;
}

#endif

/* A call that works in units of one kind (hpj_pretrain: minibatches)
   enters the kind's state first: it carries over from the last call while
   the team size asked for (omp_get_max_threads()) stays the same, and the
   call's other parallel loops (partitioning between epochs, setup) run
   with the size it holds. hpj__gov_leave gives the caller back the team
   size it had. NULL: nothing to choose (one thread, no OpenMP, adapting
   switched off, or inside a parallel region); every call takes NULL. */
static hpj__gov *hpj__gov_enter(int kind) {
#ifdef _OPENMP
    hpj__gov *g = &hpj__gov_state[kind];
    int T = omp_get_max_threads();
    if (!hpj__adaptive || omp_in_parallel() || T <= 1) return NULL;
    if (g->T != T) {
        memset(g, 0, sizeof *g);
        g->T = g->cur = T;
        g->backoff = 1.0; /* wait = 0: the other size is tried after the first measured unit */
    }
    omp_set_num_threads(g->cur);
    return g;
#else
    (void)kind;
    return NULL;
#endif
}

/* Starts a unit: sets the team size for its parallel loops (a trial of
   the other size when due) and starts its clock. warm = 1 for the first
   unit of a call, which also grows buffers and touches fresh memory: it
   runs with the current size and is not measured. */
static void hpj__gov_begin(hpj__gov *g, int warm) {
#ifdef _OPENMP
    if (!g) return;
    g->warm = warm;
    omp_set_num_threads(warm ? (g->size = g->cur) : hpj__gov_pick(g));
    g->f0 = hpj__flops;
    g->t0 = omp_get_wtime();
#else
    (void)g;
    (void)warm;
#endif
}

/* Ends the unit: takes its rate (work: its size in the kind's measure, or
   < 0 for the flops counted since hpj__gov_begin) and goes back to the
   size kept. */
static void hpj__gov_end(hpj__gov *g, double work) {
#ifdef _OPENMP
    if (!g) return;
    if (work < 0.0) work = hpj__flops - g->f0;
    if (work > 0.0 && !g->warm) hpj__gov_measure(g, work, omp_get_wtime() - g->t0);
    omp_set_num_threads(g->cur);
#else
    (void)g;
    (void)work;
#endif
}

static void hpj__gov_leave(hpj__gov *g) {
#ifdef _OPENMP
    if (g) omp_set_num_threads(g->T);
#else
    (void)g;
#endif
}


/* ---- anchor: fast probe ----
   (the probes' fast siblings follow this line)
   ---- */

/* ==== fast: ridge in mixed precision (float Gram and Cholesky by hpj_gemm) ====
   hpj_ridge_fit's reference solves the normal equations in double. Here
   the Gram matrix and its Cholesky factor are formed in float, as products
   of panels that hpj_gemm computes (the GEMM the network layers use), and
   the float factor serves as the preconditioner of hpj__probe_pcg, which
   refines on the exact system applied in double through X (the idea of
   LAPACK's dsposv). The refinement stops at the same backward error as the
   double path, so both give the ridge solution to the same accuracy, not
   the same bits. Only the lower block triangle is formed (entries above
   the diagonal inside the diagonal panels are computed and ignored). When
   the float factor breaks down twice, or the refinement does not converge
   in HPJ__PROBE_PCG_MAXIT steps (condition numbers beyond ~1e7), the
   caller's double path takes over. */

#define HPJ__PROBE_KC 1024 /* Gram: operand columns per slab                  */
#define HPJ__PROBE_PCG_MAXIT 30 /* refinement steps before the double path    */
#define HPJ__PROBE_PANEL 256 /* Gram and Cholesky update: rows per GEMM        */
#define HPJ__PROBE_NB 128  /* block size of the float Cholesky                */
#define HPJ__PROBE_TB 256  /* block size of the triangular solves             */

/* C (m, m), lower block triangle, = A A^T in float for the operand A
   (m, k): the columns of A go in slabs of KC, each written out (centred,
   scaled, rounded to float) into slab (m, KC), and each panel of PANEL
   rows [i0, i1) of C gets C[i0:i1, 0:i1] += slab[i0:i1] slab[0:i1]^T. */
static void hpj__fast_probe_gram_f(const hpj__probe_lin *A, int dual, float *C, float *slab) {
    const int m = dual ? A->n : A->d, k = dual ? A->d : A->n;
    int k0, i0, i;
    for (k0 = 0; k0 < k; k0 += HPJ__PROBE_KC) {
        const int kc = HPJ__MIN(HPJ__PROBE_KC, k - k0);
        HPJ__OMP(parallel for schedule(static) if ((double)m * kc > HPJ__PROBE_PAR))
        for (i = 0; i < m; ++i) {
            float *o = slab + (size_t)i * kc;
            int kk;
            for (kk = 0; kk < kc; ++kk) o[kk] = (float)hpj__probe_operand_at(A, dual, i, k0 + kk);
        }
        for (i0 = 0; i0 < m; i0 += HPJ__PROBE_PANEL) {
            const int i1 = HPJ__MIN(m, i0 + HPJ__PROBE_PANEL);
            hpj_gemm(0, 1, i1 - i0, i1, kc, 1.0f, slab + (size_t)i0 * kc, kc, slab, kc, k0 ? 1.0f : 0.0f,
                     C + (size_t)i0 * m, m);
        }
    }
}

/* In-place lower Cholesky L L^T of the float matrix C (m, m) (lower part
   read and written), by blocks of NB columns:
     1. the diagonal block A11 = L11 L11^T is factored in double;
     2. the panel below, L21 = A21 L11^-T, is a product with the inverse
        of L11 (formed in double, rounded to float);
     3. the trailing matrix is updated, A22 -= L21 L21^T (lower block
        triangle, by panels of PANEL rows).
   D: 2 NB^2 doubles; Li: NB^2 floats; P: m NB floats (L21).
   Returns -1, or the index of a non-positive pivot. */
static int hpj__fast_probe_cholesky_f(float *C, size_t ldc, int m, double *D, float *Li, float *P) {
    const int NB = HPJ__PROBE_NB;
    double *E = D + (size_t)NB * NB; /* inverse of the diagonal block */
    int k0;
    for (k0 = 0; k0 < m; k0 += NB) {
        const int nb = HPJ__MIN(NB, m - k0), rest = m - k0 - nb;
        float *A21 = C + (size_t)(k0 + nb) * ldc + k0, *A22 = A21 + nb;
        int i, j, r0;
        for (i = 0; i < nb; ++i)
            for (j = 0; j <= i; ++j) D[(size_t)i * NB + j] = (double)C[(size_t)(k0 + i) * ldc + k0 + j];
        for (j = 0; j < nb; ++j) {
            double dj = D[(size_t)j * NB + j] - hpj__probe_dot(D + (size_t)j * NB, D + (size_t)j * NB, j);
            if (!(dj > 0.0) || !isfinite(dj)) return k0 + j;
            dj = sqrt(dj);
            D[(size_t)j * NB + j] = dj;
            for (i = j + 1; i < nb; ++i)
                D[(size_t)i * NB + j] =
                    (D[(size_t)i * NB + j] - hpj__probe_dot(D + (size_t)i * NB, D + (size_t)j * NB, j)) / dj;
        }
        for (i = 0; i < nb; ++i)
            for (j = 0; j <= i; ++j) C[(size_t)(k0 + i) * ldc + k0 + j] = (float)D[(size_t)i * NB + j];
        if (!rest) break;
        /* E = inverse of the diagonal block, column by column (kept as E^T
           rows so each column is contiguous): e_j solves L x = unit_j */
        for (j = 0; j < nb; ++j) {
            double *x = E + (size_t)j * NB; /* x[i] = (L^-1)[i][j] */
            for (i = 0; i < j; ++i) x[i] = 0.0;
            x[j] = 1.0 / D[(size_t)j * NB + j];
            for (i = j + 1; i < nb; ++i)
                x[i] = -hpj__probe_dot(D + (size_t)i * NB + j, x + j, i - j) / D[(size_t)i * NB + i];
        }
        for (i = 0; i < nb; ++i) /* Li[i][q] = (L^-1)[i][q] */
            for (j = 0; j < nb; ++j) Li[(size_t)i * nb + j] = (float)E[(size_t)j * NB + i];
        /* panel: P = A21 (L11^-1)^T, then copied over A21 */
        hpj_gemm(0, 1, rest, nb, nb, 1.0f, A21, (int)ldc, Li, nb, 0.0f, P, nb);
        HPJ__OMP(parallel for schedule(static) if ((double)rest * nb > HPJ__PROBE_PAR))
        for (i = 0; i < rest; ++i) memcpy(A21 + (size_t)i * ldc, P + (size_t)i * nb, sizeof(float) * (size_t)nb);
        /* trailing: A22 -= L21 L21^T, lower block triangle */
        for (r0 = 0; r0 < rest; r0 += HPJ__PROBE_PANEL) {
            const int r1 = HPJ__MIN(rest, r0 + HPJ__PROBE_PANEL);
            hpj_gemm(0, 1, r1 - r0, r1, nb, -1.0f, P + (size_t)r0 * nb, nb, P, nb, 1.0f, A22 + (size_t)r0 * ldc,
                     (int)ldc);
        }
    }
    return -1;
}

/* Solves L y = b in place for t right-hand sides y (t, m) (float L). */
static void hpj__fast_probe_solve_lower(const float *Lm, size_t ldl, int m, int t, double *y) {
    int i0;
    for (i0 = 0; i0 < m; i0 += HPJ__PROBE_TB) {
        const int i1 = HPJ__MIN(m, i0 + HPJ__PROBE_TB);
        int i, c;
        if (i0 > 0) {
            HPJ__OMP(parallel for schedule(static) if ((double)i0 * t * HPJ__PROBE_TB > HPJ__PROBE_PAR))
            for (i = i0; i < i1; ++i) {
                int cc;
                for (cc = 0; cc < t; ++cc)
                    y[(size_t)cc * m + i] -= hpj__probe_dot_fd(Lm + (size_t)i * ldl, y + (size_t)cc * m, i0);
            }
        }
        for (i = i0; i < i1; ++i)
            for (c = 0; c < t; ++c) {
                double *yc = y + (size_t)c * m;
                yc[i] = (yc[i] - hpj__probe_dot_fd(Lm + (size_t)i * ldl + i0, yc + i0, i - i0)) /
                        (double)Lm[(size_t)i * ldl + i];
            }
    }
}

/* Solves L^T x = y in place for t right-hand sides (t, m) (float L). */
static void hpj__fast_probe_solve_upper(const float *Lm, size_t ldl, int m, int t, double *y) {
    int i1;
    for (i1 = m; i1 > 0; i1 -= HPJ__PROBE_TB) {
        const int i0 = HPJ__MAX(0, i1 - HPJ__PROBE_TB);
        int i, j, c, nch;
        for (i = i1 - 1; i >= i0; --i)
            for (c = 0; c < t; ++c) {
                double *yc = y + (size_t)c * m, xi = yc[i] / (double)Lm[(size_t)i * ldl + i];
                const float *li = Lm + (size_t)i * ldl;
                yc[i] = xi;
                hpj__probe_axpy_fd(yc + i0, li + i0, -xi, i - i0);
            }
        nch = (i0 + 255) / 256;
        HPJ__OMP(parallel for schedule(static) if ((double)i0 * t * HPJ__PROBE_TB > HPJ__PROBE_PAR))
        for (j = 0; j < nch; ++j) {
            const int j0 = j * 256, j1 = HPJ__MIN(i0, j0 + 256);
            int ii, cc;
            for (ii = i0; ii < i1; ++ii) {
                const float *li = Lm + (size_t)ii * ldl;
                for (cc = 0; cc < t; ++cc) {
                    double *yc = y + (size_t)cc * m;
                    hpj__probe_axpy_fd(yc + j0, li + j0, -yc[ii], j1 - j0);
                }
            }
        }
    }
}

/* applies (L L^T)^-1 with the float factor: hpj__probe_pcg's preconditioner */
static void hpj__fast_probe_cholsolve_f(const void *factor, int m, int t, double *x) {
    hpj__fast_probe_solve_lower((const float *)factor, (size_t)m, m, t, x);
    hpj__fast_probe_solve_upper((const float *)factor, (size_t)m, m, t, x);
}

static hpj_status hpj__fast_ridge_mixed(hpj__probe_ridge *R, int *its, double *relres) {
    static const char *fn = "ridge_fit";
    const int m = R->m, k = R->dual ? R->lin.d : R->lin.n;
    size_t fsz, szS, szL, mm;
    void *fmem;
    double *Dw;
    float *Cf, *slab, *Li;
    int attempt, i;
    if (hpj__mul_size((size_t)m, (size_t)m, &mm)) mm = SIZE_MAX;
    /* one buffer: the Gram matrix's slabs, then the Cholesky panel L21 */
    szS = (size_t)m * (size_t)HPJ__MAX(HPJ__MIN(k, HPJ__PROBE_KC), HPJ__PROBE_NB);
    szL = (size_t)HPJ__PROBE_NB * HPJ__PROBE_NB;
    fsz = mm;
    if (mm == SIZE_MAX || hpj__add_size(fsz, szS + szL + 64, &fsz) || hpj__mul_size(fsz, sizeof(float), &fsz))
        return hpj__fail(HPJ_ERR_NOMEM, "%s: a %d x %d Gram matrix is too large", fn, m, m);
    fmem = hpj__alloc(fsz, fn);
    Dw = (double *)hpj__alloc(sizeof(double) * 2 * HPJ__PROBE_NB * HPJ__PROBE_NB, fn); /* the diagonal blocks */
    if (!fmem || !Dw) {
        hpj__free(fmem);
        hpj__free(Dw);
        return HPJ_ERR_NOMEM;
    }
    Cf = (float *)(((uintptr_t)fmem + 63) & ~(uintptr_t)63);
    slab = Cf + mm;
    Li = slab + szS;
    for (attempt = 0; attempt < 2; ++attempt) {
        double maxdiag = 0.0, shift, normA = 0.0;
        hpj__fast_probe_gram_f(&R->lin, R->dual, Cf, slab);
        for (i = 0; i < m; ++i) {
            normA += (double)Cf[(size_t)i * m + i];
            maxdiag = HPJ__MAX(maxdiag, (double)Cf[(size_t)i * m + i]);
        }
        /* a float factor of a nearly singular matrix may break down: the
           second attempt shifts the diagonal (the refinement corrects it) */
        shift = attempt ? 1e-5 * maxdiag + 1e-30 : 0.0;
        for (i = 0; i < m; ++i) Cf[(size_t)i * m + i] += (float)(R->lin.alpha + shift);
        if (hpj__fast_probe_cholesky_f(Cf, (size_t)m, m, Dw, Li, slab) >= 0) continue;
        *its = hpj__probe_pcg(R, hpj__fast_probe_cholsolve_f, Cf, normA, HPJ__PROBE_PCG_MAXIT, relres);
        break; /* factored: the refinement converged (*its >= 0) or the double path takes over */
    }
    hpj__free(Dw);
    hpj__free(fmem);
    return HPJ_OK;
}

/* ==== fast: probe row groups (AVX-512 where the machine has it) ====
   hpj__probe_pass_block visits rows one at a time. Here the rows go in
   groups of 8, and the two loops a pass spends its time in take the
   group at once: each x_r is read from memory once per group and each
   gradient entry is loaded and stored once per group.
     scores:   z[r K + k] = x_r . v_k (hpj__probe_dot_fd's order: the
               reference's bits)
     gradient: g_k[j] += ((w0 x_0[j] + w1 x_1[j]) + (w2 x_2[j] + w3 x_3[j]))
                       + ((w4 x_4[j] + w5 x_5[j]) + (w6 x_6[j] + w7 x_7[j]))
               with w_r = w[r K + k]: a fixed tree over the group's rows
               where the reference adds the rows one by one, so the
               gradient (and what L-BFGS does with it) rounds differently. */
#define HPJ__PROBE_RG 8 /* rows per group */

/* The two loops with eight doubles per register. The scores keep the
   eight partial sums of hpj__probe_dot_fd in the eight lanes of one
   register per row (the tail is loaded with zeros past the row's end,
   which adds +0 to the last lanes and changes nothing) and combine them in
   its order; the gradient vectorises over j with the portable loop's tree
   over rows. Products and sums are rounded separately, as in the portable
   loops: the same bits. */
#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
#define HPJ__FAST_PROBE_AVX512 1
#include <immintrin.h>
static double hpj__fast_probe_hsum(__m512d s) { /* ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) */
    const __m256d a = _mm256_add_pd(_mm512_maskz_extractf64x4_pd((__mmask8)0xF, s, 0),
                                    _mm512_maskz_extractf64x4_pd((__mmask8)0xF, s, 1));
    const __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b));
}
/* a[0..7] widened to double; entries outside the mask m read as 0 */
static __m512d hpj__fast_probe_widen(const float *a, __mmask8 m) {
    return _mm512_maskz_cvtps_pd((__mmask8)0xFF, m == 0xFF ? _mm256_loadu_ps(a) : _mm256_maskz_loadu_ps(m, a));
}

/* scores of the 8 rows against a pair of weight rows (v1 may be NULL):
   each widened chunk of a row serves both */
static void hpj__fast_probe_scores8x2(const float *const *x, const double *v0, const double *v1, int d, double *z0,
                                      double *z1) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    __m512d b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
    int j;
    for (j = 0; j < d; j += 8) {
        const __mmask8 m = d - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (d - j)) - 1u);
        const __m512d u0 = m == 0xFF ? _mm512_loadu_pd(v0 + j) : _mm512_maskz_loadu_pd(m, v0 + j);
        const __m512d u1 = !v1 ? u0 : m == 0xFF ? _mm512_loadu_pd(v1 + j) : _mm512_maskz_loadu_pd(m, v1 + j);
#define HPJ__FAST_PROBE_ROW(r)                                              \
    {                                                                       \
        const __m512d xx = hpj__fast_probe_widen(x[r] + j, m);              \
        a##r = _mm512_add_pd(a##r, _mm512_mul_pd(xx, u0));                  \
        if (v1) b##r = _mm512_add_pd(b##r, _mm512_mul_pd(xx, u1));          \
    }
        HPJ__FAST_PROBE_ROW(0) HPJ__FAST_PROBE_ROW(1) HPJ__FAST_PROBE_ROW(2) HPJ__FAST_PROBE_ROW(3)
        HPJ__FAST_PROBE_ROW(4) HPJ__FAST_PROBE_ROW(5) HPJ__FAST_PROBE_ROW(6) HPJ__FAST_PROBE_ROW(7)
#undef HPJ__FAST_PROBE_ROW
    }
    z0[0] = hpj__fast_probe_hsum(a0), z0[1] = hpj__fast_probe_hsum(a1), z0[2] = hpj__fast_probe_hsum(a2);
    z0[3] = hpj__fast_probe_hsum(a3), z0[4] = hpj__fast_probe_hsum(a4), z0[5] = hpj__fast_probe_hsum(a5);
    z0[6] = hpj__fast_probe_hsum(a6), z0[7] = hpj__fast_probe_hsum(a7);
    if (!v1) return;
    z1[0] = hpj__fast_probe_hsum(b0), z1[1] = hpj__fast_probe_hsum(b1), z1[2] = hpj__fast_probe_hsum(b2);
    z1[3] = hpj__fast_probe_hsum(b3), z1[4] = hpj__fast_probe_hsum(b4), z1[5] = hpj__fast_probe_hsum(b5);
    z1[6] = hpj__fast_probe_hsum(b6), z1[7] = hpj__fast_probe_hsum(b7);
}

static void hpj__fast_probe_scores8_avx512(const float *const *x, const double *V, int K, int d, double *z) {
    double z0[8], z1[8];
    int k, r;
    for (k = 0; k < K; k += 2) { /* weight rows in pairs */
        const int two = k + 1 < K;
        hpj__fast_probe_scores8x2(x, V + (size_t)k * d, two ? V + (size_t)(k + 1) * d : NULL, d, z0, z1);
        for (r = 0; r < 8; ++r) {
            z[r * K + k] = z0[r];
            if (two) z[r * K + k + 1] = z1[r];
        }
    }
}

static void hpj__fast_probe_gradient8_avx512(const float *const *x, const double *w, int K, double *G, int d) {
    int k, j;
    for (k = 0; k < K; k += 2) { /* weight rows in pairs */
        const int two = k + 1 < K, k1 = two ? k + 1 : k;
        double *g0 = G + (size_t)k * d, *g1 = G + (size_t)k1 * d;
#define HPJ__FAST_PROBE_W(r) const __m512d p##r = _mm512_set1_pd(w[r * K + k]), q##r = _mm512_set1_pd(w[r * K + k1]);
        HPJ__FAST_PROBE_W(0) HPJ__FAST_PROBE_W(1) HPJ__FAST_PROBE_W(2) HPJ__FAST_PROBE_W(3)
        HPJ__FAST_PROBE_W(4) HPJ__FAST_PROBE_W(5) HPJ__FAST_PROBE_W(6) HPJ__FAST_PROBE_W(7)
#undef HPJ__FAST_PROBE_W
        for (j = 0; j < d; j += 8) {
            const __mmask8 m = d - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (d - j)) - 1u);
            const __m512d x0 = hpj__fast_probe_widen(x[0] + j, m), x1 = hpj__fast_probe_widen(x[1] + j, m),
                          x2 = hpj__fast_probe_widen(x[2] + j, m), x3 = hpj__fast_probe_widen(x[3] + j, m),
                          x4 = hpj__fast_probe_widen(x[4] + j, m), x5 = hpj__fast_probe_widen(x[5] + j, m),
                          x6 = hpj__fast_probe_widen(x[6] + j, m), x7 = hpj__fast_probe_widen(x[7] + j, m);
#define HPJ__FAST_PROBE_TREE(c)                                                                          \
    _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(c##0, x0), _mm512_mul_pd(c##1, x1)),         \
                                _mm512_add_pd(_mm512_mul_pd(c##2, x2), _mm512_mul_pd(c##3, x3))),        \
                  _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(c##4, x4), _mm512_mul_pd(c##5, x5)),         \
                                _mm512_add_pd(_mm512_mul_pd(c##6, x6), _mm512_mul_pd(c##7, x7))))
            if (m == 0xFF) {
                _mm512_storeu_pd(g0 + j, _mm512_add_pd(_mm512_loadu_pd(g0 + j), HPJ__FAST_PROBE_TREE(p)));
                if (two) _mm512_storeu_pd(g1 + j, _mm512_add_pd(_mm512_loadu_pd(g1 + j), HPJ__FAST_PROBE_TREE(q)));
            } else {
                _mm512_mask_storeu_pd(g0 + j, m, _mm512_add_pd(_mm512_maskz_loadu_pd(m, g0 + j), HPJ__FAST_PROBE_TREE(p)));
                if (two)
                    _mm512_mask_storeu_pd(g1 + j, m,
                                          _mm512_add_pd(_mm512_maskz_loadu_pd(m, g1 + j), HPJ__FAST_PROBE_TREE(q)));
            }
#undef HPJ__FAST_PROBE_TREE
        }
    }
}
#endif /* HPJ__FAST_PROBE_AVX512 */

static void hpj__fast_probe_scores8(const float *const *x /*(8) rows of d*/, const double *V /*(K, d)*/, int K, int d,
                                    double *z /*(8, K)*/) {
    int r, k;
#ifdef HPJ__FAST_PROBE_AVX512
    if (hpj_paths() >= HPJ_PATHS_AVX512) { hpj__fast_probe_scores8_avx512(x, V, K, d, z); return; }
#endif
    for (r = 0; r < 8; ++r)
        for (k = 0; k < K; ++k) z[r * K + k] = hpj__probe_dot_fd(x[r], V + (size_t)k * d, d);
}
static void hpj__fast_probe_gradient8(const float *const *x /*(8) rows of d*/, const double *w /*(8, K)*/, int K,
                                      double *G /*(K, d)*/, int d) {
    int j, k;
#ifdef HPJ__FAST_PROBE_AVX512
    if (hpj_paths() >= HPJ_PATHS_AVX512) { hpj__fast_probe_gradient8_avx512(x, w, K, G, d); return; }
#endif
    for (k = 0; k < K; ++k) {
        const double w0 = w[k], w1 = w[K + k], w2 = w[2 * K + k], w3 = w[3 * K + k], w4 = w[4 * K + k],
                     w5 = w[5 * K + k], w6 = w[6 * K + k], w7 = w[7 * K + k];
        double *g = G + (size_t)k * d;
        for (j = 0; j < d; ++j)
            g[j] += ((w0 * (double)x[0][j] + w1 * (double)x[1][j]) + (w2 * (double)x[2][j] + w3 * (double)x[3][j])) +
                    ((w4 * (double)x[4][j] + w5 * (double)x[5][j]) + (w6 * (double)x[6][j] + w7 * (double)x[7][j]));
    }
}

static void hpj__fast_probe_pass_block(const hpj__probe_lin *A, int blk) {
    const int K = A->K, d = A->d;
    const int i0 = hpj__probe_block_lo(A->n, A->nb, blk), i1 = hpj__probe_block_lo(A->n, A->nb, blk + 1);
    double *z = A->work + (size_t)blk * hpj__probe_pass_work(K); /* (RG, K) */
    double *r = z + (size_t)HPJ__PROBE_RG * K;                    /* (RG, K) */
    double *G = A->G + (size_t)blk * K * d, *gs = A->gs + (size_t)blk * K;
    int i, k, rr;
    if (A->grad) {
        memset(G, 0, sizeof(double) * (size_t)K * d);
        memset(gs, 0, sizeof(double) * (size_t)K);
    }
    for (i = i0; i < i1; i += HPJ__PROBE_RG) {
        const int nr = HPJ__MIN(HPJ__PROBE_RG, i1 - i);
        const float *xr[HPJ__PROBE_RG]; /* short groups repeat their last row */
        for (rr = 0; rr < HPJ__PROBE_RG; ++rr) xr[rr] = A->X + (size_t)(i + HPJ__MIN(rr, nr - 1)) * d;
        if (!A->R) {
            hpj__fast_probe_scores8(xr, A->Veff, K, d, z);
            for (rr = 0; rr < nr; ++rr)
                for (k = 0; k < K; ++k) z[rr * K + k] += A->ceff[k];
            if (A->Z) memcpy(A->Z + (size_t)i * K, z, sizeof(double) * (size_t)nr * K);
            if (A->fn) A->fn(A->ctx, blk, i, nr, z, r);
            else memcpy(r, z, sizeof(double) * (size_t)nr * K);
        } else {
            memcpy(r, A->R + (size_t)i * K, sizeof(double) * (size_t)nr * K);
        }
        if (!A->grad) continue;
        for (rr = nr * K; rr < HPJ__PROBE_RG * K; ++rr) r[rr] = 0.0; /* repeated rows add exact zeros */
        for (rr = 0; rr < nr; ++rr)
            for (k = 0; k < K; ++k) gs[k] += r[rr * K + k];
        hpj__fast_probe_gradient8(xr, r, K, G, d);
    }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic pop
#endif
#endif /* HPJ_REFERENCE */

#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT
#endif
#endif /* HPJEPA_IMPLEMENTATION_DONE */
#endif /* HPJEPA_IMPLEMENTATION */

/*
   CHANGES (one line per version, newest first; git log has the details)
   0.18.3  optimizer = adam_active takes the fast part's one-pass Adam and EMA (it ran the reference's two loops; same bits)
   0.18.2  hpj_pretrain refuses a run of no step (HPJ_ERR_INPUT); a mistyped config key names the likely one; a file given for a TU folder is named as such (same bits)
   0.18.1  the fast part sets hpj_linear_forward's bias tile by tile inside the GEMM (same bits)
   0.18.0  patch_tokens = graph (every patch of a sampled graph in the step's one pass); the config key table a plain array; AVX2 BatchNorm backward in the fast part (default bits = 0.15.0's)
   0.17.0  optimizer = adam_active; the step takes a loaded batch (hpj__batch_load), the readout its own BatchNorm normaliser; plain reference LayerNorm (the reference build's rounding changes; the default build keeps 0.15.0's bits)
   0.16.0  plainer reference (readers, config table, checkpoints, partitioner, probes, step); load-following team size, ridge in mixed precision, partitioner caches, BatchNorm copy classes to the fast part; HPJEPA_BITS_VERSION; hpj_config_check holds every key to its range (same bits as 0.15.0)
   0.15.0  per-resolution BatchNorm statistics, patch_tokens = alone (checkpoint format 2; new bits); hpj_comm (data-parallel); plain reference BatchNorm
   0.14.0  a reference part and a fast part (HPJ_REFERENCE, hpj_set_paths); small fast paths deleted (new bits)
   0.13.0  team size chosen by timing units of work; hpj_dataset_from_csr; stricter readers (same bits)
   0.12.4  LayerNorm's dgamma / dbeta sums in registers (same bits)
   0.12.3  AVX2 column sums (bias gradients) in registers (same bits)
   0.12.2  weight gradients over many rows: each thread its own rows and packed B (same bits)
   0.12.1  B packed row by row; the encoder backward's chain takes idle parameter tasks (same bits)
   0.12.0  the last GINE layer's Linear_out runs on the patch means (new bits with gnn_out_linear = 1)
   0.11.6  encoder backward as a two-thread pipeline; GELU' kept in the block cache (same bits)
   0.11.5  side by side, each path's thread builds its own inputs and targets (same bits)
   0.11.4  later GINE layers read class rows through a class map; bias rows read in place (same bits)
   0.11.3  hpj_tokens.nedge; prefetch in transposed packing; 16-float-head attention kernel (same bits)
   0.11.2  the online encoder's optimizer pass parked beside the next step's products (same bits)
   0.11.1  Adam skips the idle q / k rows of one-token contexts (same bits)
   0.11.0  two threads run the context and target paths side by side (same bits)
   0.10.3  AVX-512 Adam pass; AVX-512 GEMM for few rows against a wide B (same bits)
   0.10.2  AVX2 GEMM prefetches transposed A rows; bias rows written by the GEMM's tiles (same bits)
   0.10.1  few-row products against a wide B run transposed; two-block gradient norm (same bits)
   0.10.0  GELU's polynomials with fused multiply-adds (new bits with ffn_act = gelu)
   0.9.1   more loops parallel at small sizes; faster B packing (same bits)
   0.9.0   later GINE layers run once per class of equal node copies (layer_classes; new bits)
   0.8.2   GEMM prefetch hints (same bits)
   0.8.1   transposed-A products on a team share one packed B (same bits)
   0.8.0   the EMA target's last FFN product folded into channel means (target_fold; new bits)
   0.7.1   AVX2 kernels for GELU, GEMM, BatchNorm and GINE (same bits)
   0.7.0   the first GINE layer runs once per class of equal node copies (new bits)
   0.6.1   resumable pretraining: hpj_pretrain_until, hpj_model.adam_state (same bits)
   0.6.0   BatchNorm sums over 32 fixed row blocks (new bits); config key partition_trials
   0.5.0   the first layer's W1 on a table of distinct inputs (input_table; new bits); hardened readers
   0.4.2   few-row products stream B by rows (same bits)
   0.4.1   each (graph, resolution) partitioned once (same bits)
   0.4.0   hpj_embed_epoch; config key train_embed
   0.3.0   hpj_rwse walks 16 sources at once, one scratch argument; shared-edge GINE
   0.2.0   partitioner, tokenizer, nn layers, model and training, embeddings, probes, checkpoints
   0.1.0   status, rng, arena, CSR graphs, TU and METIS readers
*/

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the hpjepa.h authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication in favor of the public domain. Software is
provided "as is", without any warranty of any kind, express or implied.
------------------------------------------------------------------------------
*/
