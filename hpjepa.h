/* hpjepa.h - v0.1.0 - HP-JEPA: hierarchical-partition joint-embedding
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

   CONTENTS (the API and the implementation follow this order)
       1. status & errors     hpj_status, hpj_last_error
       2. rng                 hpj_rng: xoshiro256** seeded by splitmix64
       3. arena               64-byte aligned bump allocator, mark/reset
       4. graph               CSR graph, TU dataset reader, METIS-format I/O

   COMPILE-TIME OPTIONS (define before including; "global" = must be the
   same in every file that includes the header, "impl" = only matters in
   the file that defines HPJEPA_IMPLEMENTATION)
       HPJ_STATIC            impl   all functions static (private copy)
       HPJ_MALLOC(ctx,sz)    impl   allocator; define HPJ_FREE(ctx,p) too,
       HPJ_FREE(ctx,p)              or neither (#error otherwise); ctx is
                                    always NULL for now
       HPJ_ASSERT(x)         impl   internal invariants (default assert)
       HPJ_NO_STDIO          impl   no <stdio.h>: drops every function that
                                    touches files (the *_load/_read/_write
                                    calls) and formats error reasons
                                    without vsnprintf
       HPJ_DEBUG             impl   expensive internal consistency checks

   GLOSSARY of dimension letters used in shape comments
       N nodes   E directed edges (CSR entries)   G graphs in a dataset
       P patches B graphs in a minibatch           T tokens
       D width   H heads   F hidden width   K parts   L resolutions

   ERRORS, THREADS, DETERMINISM
       Every fallible call returns an hpj_status (HPJ_OK == 0, failures
       are negative). hpj_last_error() then gives a one-line reason such
       as "PROTEINS_A.txt:1207: node id 99999 > 43471 nodes". The reason
       is per thread where the compiler supports thread-local storage.
       A failed call leaves its outputs zeroed and owns no memory. The
       library never prints, exits or aborts (HPJ_ASSERT only guards
       internal invariants and compiles away under NDEBUG).
       OpenMP (-fopenmp) is optional. Parallel loops write disjoint
       outputs and every sum is taken by one thread in a fixed order, so
       results are bit-identical for any thread count and repeated runs.
       All randomness flows from explicit seeds through hpj_rng.

   RECENT CHANGES
       0.1.0  status, rng, arena, CSR graphs, TU and METIS readers
*/

#ifndef HPJEPA_H_INCLUDED
#define HPJEPA_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define HPJEPA_VERSION_MAJOR 0
#define HPJEPA_VERSION_MINOR 1
#define HPJEPA_VERSION_PATCH 0

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

/* ==== 1. status & errors ================================================ */

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

/* ==== 2. rng ============================================================ */

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

/* ==== 3. arena ========================================================== */

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

/* ==== 4. graph ========================================================== */

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
   (1-based), each followed by its weight when c = 1. Self-loops are dropped
   (and counted in self_loops); the adjacency must be symmetric. */
typedef struct hpj_metis_info {
    int64_t self_loops; /* dropped self-loop entries */
    int has_vwgt, has_ewgt;
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
    int64_t self_loops;   /* self-loop lines seen in _A.txt and dropped    */
    int64_t dup_lines;    /* _A.txt lines whose directed edge repeats      */
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
HPJDEF hpj_status hpj_dataset_parse_tu(const hpj_tu_text *files, hpj_dataset *out);
#ifndef HPJ_NO_STDIO
/* dir is the dataset folder (".../PROTEINS"); its last path component is
   the dataset name, so files are dir/NAME_A.txt etc. */
HPJDEF hpj_status hpj_dataset_load_tu(const char *dir, hpj_dataset *out);
#endif
HPJDEF void hpj_dataset_free(hpj_dataset *ds);
/* A view of graph g (no copy; valid while ds lives). */
HPJDEF hpj_graph hpj_dataset_graph(const hpj_dataset *ds, int32_t g);

/* ==== end of API ======================================================== */
#endif /* HPJEPA_H_INCLUDED */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJEPA_IMPLEMENTATION_DONE
#define HPJEPA_IMPLEMENTATION_DONE

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
#endif

#define HPJ__MIN(a, b) ((a) < (b) ? (a) : (b))
#define HPJ__MAX(a, b) ((a) > (b) ? (a) : (b))

/* ==== 1. status & errors ================================================ */

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
   `return hpj__fail(HPJ_ERR_INPUT, "x: %d", v);`. */
#if defined(__GNUC__) || defined(__clang__)
static hpj_status hpj__fail(hpj_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static hpj_status hpj__fail(hpj_status s, const char *fmt, ...) {
#ifndef HPJ_NO_STDIO
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hpj__errbuf, HPJ__ERRLEN, fmt, ap);
    va_end(ap);
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

/* ==== 2. rng ============================================================ */

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

/* ==== 3. arena ========================================================== */

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

HPJDEF float *hpj_arena_floats(hpj_arena *a, size_t count) {
    size_t b;
    if (hpj__mul_size(count, sizeof(float), &b)) {
        hpj__fail(HPJ_ERR_NOMEM, "arena: %zu floats overflow", count);
        return NULL;
    }
    return (float *)hpj_arena_alloc(a, b);
}

HPJDEF int32_t *hpj_arena_ints(hpj_arena *a, size_t count) {
    size_t b;
    if (hpj__mul_size(count, sizeof(int32_t), &b)) {
        hpj__fail(HPJ_ERR_NOMEM, "arena: %zu ints overflow", count);
        return NULL;
    }
    return (int32_t *)hpj_arena_alloc(a, b);
}

HPJDEF size_t hpj_arena_mark(const hpj_arena *a) { return a->used; }

HPJDEF void hpj_arena_reset(hpj_arena *a, size_t mark) {
    HPJ_ASSERT(mark <= a->used);
    a->used = mark;
}

/* ==== 4. graph: CSR construction and checks ============================= */

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
            int32_t u = g->col[i], lo, hi, found = -1;
            if (u < 0 || u >= g->n) return hpj__fail(HPJ_ERR_INPUT, "graph: vertex %d has neighbour %d out of range", v, u);
            if (u == v) return hpj__fail(HPJ_ERR_INPUT, "graph: self-loop at vertex %d", v);
            if (i > g->rowptr[v] && g->col[i - 1] >= u)
                return hpj__fail(HPJ_ERR_INPUT, "graph: neighbours of vertex %d not strictly ascending", v);
            if (g->ewgt && g->ewgt[i] <= 0) return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d-%d has weight %d <= 0", v, u, g->ewgt[i]);
            lo = g->rowptr[u];
            hi = g->rowptr[u + 1] - 1;
            while (lo <= hi) { /* the reverse entry, by binary search */
                int32_t mid = lo + (hi - lo) / 2;
                if (g->col[mid] == v) { found = mid; break; }
                if (g->col[mid] < v) lo = mid + 1; else hi = mid - 1;
            }
            if (found < 0) return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d->%d has no reverse %d->%d", v, u, u, v);
            if (g->ewgt && g->ewgt[found] != g->ewgt[i])
                return hpj__fail(HPJ_ERR_INPUT, "graph: edge %d-%d has weights %d and %d in its two directions", v, u,
                                 g->ewgt[i], g->ewgt[found]);
        }
    }
    return HPJ_OK;
}

/* Sorts directed entries (src[i], dst[i]) by (src, dst) keeping input order
   among equal pairs: two stable counting sorts (dst, then src). perm gets
   the sorted order; tmp is scratch of the same length; cnt has n+1 slots. */
static void hpj__sort_pairs(int64_t m, int32_t n, const int32_t *src, const int32_t *dst, int64_t *perm,
                            int64_t *tmp, int64_t *cnt) {
    int64_t i;
    int32_t v;
    memset(cnt, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (i = 0; i < m; ++i) cnt[dst[i] + 1]++;
    for (v = 0; v < n; ++v) cnt[v + 1] += cnt[v];
    for (i = 0; i < m; ++i) tmp[cnt[dst[i]]++] = i;
    memset(cnt, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (i = 0; i < m; ++i) cnt[src[i] + 1]++;
    for (v = 0; v < n; ++v) cnt[v + 1] += cnt[v];
    for (i = 0; i < m; ++i) {
        int64_t e = tmp[i];
        perm[cnt[src[e]]++] = e;
    }
}

HPJDEF hpj_status hpj_graph_from_edges(int32_t n, int64_t m, const int32_t *u, const int32_t *v, const int32_t *w,
                                       hpj_graph_owned *out) {
    int32_t *src = NULL, *dst = NULL, *rowptr, *col, *ewgt = NULL;
    int64_t *perm = NULL, *tmp = NULL, *cnt = NULL, i, d = 0, k;
    size_t bytes;
    unsigned char *mem;
    memset(out, 0, sizeof(*out));
    if (n < 0 || m < 0) return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: n=%d m=%lld", n, (long long)m);
    if (m > (INT32_MAX / 2)) return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: %lld edges exceed the 32-bit CSR", (long long)m);
    for (i = 0; i < m; ++i)
        if (u[i] < 0 || u[i] >= n || v[i] < 0 || v[i] >= n)
            return hpj__fail(HPJ_ERR_INPUT, "graph_from_edges: edge %lld = (%d,%d) out of range 0..%d", (long long)i, u[i],
                             v[i], n - 1);
    src = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), "graph_from_edges");
    dst = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), "graph_from_edges");
    perm = (int64_t *)hpj__calloc((size_t)(2 * m), sizeof(int64_t), "graph_from_edges");
    tmp = (int64_t *)hpj__calloc((size_t)(2 * m), sizeof(int64_t), "graph_from_edges");
    cnt = (int64_t *)hpj__calloc((size_t)n + 1, sizeof(int64_t), "graph_from_edges");
    if (!src || !dst || !perm || !tmp || !cnt) goto nomem;
    for (i = 0; i < m; ++i) {
        if (u[i] == v[i]) continue;
        src[d] = u[i]; dst[d] = v[i]; tmp[d] = i; ++d;
    }
    k = d;
    for (i = 0; i < k; ++i) { /* reverse directions after all forward ones */
        src[d] = dst[i]; dst[d] = src[i]; tmp[d] = tmp[i]; ++d;
    }
    /* keep the original edge index of each entry in cnt-sized scratch: reuse
       `tmp` contents by copying into perm first */
    memcpy(perm, tmp, sizeof(int64_t) * (size_t)d);
    {
        int64_t *orig = perm; /* orig[e] = input edge of directed entry e */
        int64_t *order = (int64_t *)hpj__calloc((size_t)d + 1, sizeof(int64_t), "graph_from_edges");
        int32_t nnz = 0;
        int64_t first = 0; /* earliest input edge of the current pair */
        if (!order) goto nomem;
        hpj__sort_pairs(d, n, src, dst, order, tmp, cnt);
        /* count unique entries */
        for (i = 0; i < d; ++i) {
            int64_t e = order[i];
            if (i > 0 && src[order[i - 1]] == src[e] && dst[order[i - 1]] == dst[e]) continue;
            ++nnz;
        }
        bytes = sizeof(int32_t) * ((size_t)n + 1 + (size_t)nnz + (w ? (size_t)nnz : 0));
        mem = (unsigned char *)hpj__alloc(bytes ? bytes : 1, "graph_from_edges");
        if (!mem) { hpj__free(order); goto nomem; }
        rowptr = (int32_t *)mem;
        col = rowptr + n + 1;
        if (w) ewgt = col + nnz;
        memset(rowptr, 0, sizeof(int32_t) * ((size_t)n + 1));
        nnz = 0;
        for (i = 0; i < d; ++i) {
            int64_t e = order[i];
            if (i > 0 && src[order[i - 1]] == src[e] && dst[order[i - 1]] == dst[e]) {
                /* both directions of a pair hold the same input edges, so
                   the earliest of them gives one weight to both */
                if (ewgt && orig[e] < first) { first = orig[e]; ewgt[nnz - 1] = w[first]; }
                continue;
            }
            rowptr[src[e] + 1]++;
            col[nnz] = dst[e];
            first = orig[e];
            if (ewgt) ewgt[nnz] = w[first];
            ++nnz;
        }
        for (k = 0; k < n; ++k) rowptr[k + 1] += rowptr[k];
        hpj__free(order);
        out->g.n = n;
        out->g.nnz = nnz;
        out->g.rowptr = rowptr;
        out->g.col = col;
        out->g.ewgt = ewgt;
        out->mem = mem;
    }
    hpj__free(src); hpj__free(dst); hpj__free(perm); hpj__free(tmp); hpj__free(cnt);
    return HPJ_OK;
nomem:
    hpj__free(src); hpj__free(dst); hpj__free(perm); hpj__free(tmp); hpj__free(cnt);
    return HPJ_ERR_NOMEM;
}

/* ==== 4. graph: text scanning =========================================== */

/* A cursor over one in-memory text file. The scanner never reads past
   len, counts physical lines for messages and treats ',' like a blank. */
typedef struct hpj__scan {
    const char *p, *end;
    const char *file; /* name for messages, e.g. "PROTEINS_A.txt" */
    int64_t line;     /* 1-based physical line of p                       */
} hpj__scan;

static void hpj__scan_init(hpj__scan *s, const char *text, size_t len, const char *file) {
    s->p = text;
    s->end = text + len;
    s->file = file;
    s->line = 1;
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

/* Reads one integer token (optional sign, decimal digits; a float token
   with an integral value such as "1.0" or "-1e0" is accepted too, since
   some TU exports write labels that way). */
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
    if (q < s->end && (*q == '.' || *q == 'e' || *q == 'E')) {
        /* integral-valued float such as "2.0" */
        char buf[64];
        size_t n = 0;
        const char *r = s->p;
        char *endp;
        double dv;
        while (r < s->end && !hpj__is_blank(*r) && *r != '\n') {
            if (n >= sizeof(buf) - 1) return hpj__scan_err(s, "number token too long");
            buf[n++] = *r++;
        }
        buf[n] = 0;
        dv = strtod(buf, &endp);
        if (*endp != 0 || dv != floor(dv) || fabs(dv) > 9.0e15) return hpj__scan_err(s, "expected an integer");
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
    int64_t v;
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

/* Reads one real number (strtod on a bounded copy of the token). */
static hpj_status hpj__scan_f32(hpj__scan *s, float *out, const char *what) {
    char buf[64];
    size_t n = 0;
    const char *r;
    char *endp;
    double v;
    if (!hpj__scan_peek(s)) return hpj__scan_err(s, what);
    r = s->p;
    while (r < s->end && !hpj__is_blank(*r) && *r != '\n') {
        if (n >= sizeof(buf) - 1) return hpj__scan_err(s, "number token too long");
        buf[n++] = *r++;
    }
    buf[n] = 0;
    v = strtod(buf, &endp);
    if (*endp != 0 || n == 0) return hpj__scan_err(s, "expected a real number");
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
/* Reads a whole file into a malloc'd buffer (NUL-terminated for safety;
   the terminator is not part of len). */
static hpj_status hpj__read_file(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    *text = NULL;
    *len = 0;
    if (!f) return hpj__fail(HPJ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        /* a directory can report LONG_MAX here: size only from sane values
           and let fread report the error */
        if (sz > 0 && (unsigned long)sz < (unsigned long)(SIZE_MAX / 2)) cap = (size_t)sz + 1;
        fseek(f, 0, SEEK_SET);
    }
    if (cap == 0) cap = 1 << 16;
    buf = (char *)hpj__alloc(cap, path);
    if (!buf) { fclose(f); return HPJ_ERR_NOMEM; }
    for (;;) {
        size_t got;
        if (n + 1 >= cap) { /* the file grew or is not seekable */
            char *nb;
            size_t ncap = cap * 2;
            nb = (char *)hpj__alloc(ncap, path);
            if (!nb) { hpj__free(buf); fclose(f); return HPJ_ERR_NOMEM; }
            memcpy(nb, buf, n);
            hpj__free(buf);
            buf = nb;
            cap = ncap;
        }
        got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        hpj__free(buf);
        fclose(f);
        return hpj__fail(HPJ_ERR_IO, "%s: read error: %s", path, strerror(e));
    }
    fclose(f);
    buf[n] = 0;
    *text = buf;
    *len = n;
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
    if (!f) return hpj__fail(HPJ_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
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

/* A growable byte buffer for writers. */
typedef struct hpj__buf {
    char *p;
    size_t n, cap;
    int failed;
} hpj__buf;

static void hpj__buf_put(hpj__buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        char *np;
        while (nc < b->n + n) nc *= 2;
        np = (char *)hpj__alloc(nc, "buffer");
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
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    char out[26];
    int n = 0;
    do { tmp[k++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) out[n++] = '-';
    while (k) out[n++] = tmp[--k];
    if (sep) out[n++] = sep;
    hpj__buf_put(b, out, (size_t)n);
}

/* ==== 4. graph: METIS format ============================================ */

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

HPJDEF hpj_status hpj_graph_parse_metis(const char *text, size_t len, const char *name, hpj_graph_owned *out,
                                        hpj_metis_info *info) {
    hpj__scan s;
    int64_t n64, m64, fmt = 0, ncon = 1, v, total = 0, loops = 0, hline;
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
    /* header: skip comments and blank lines before it */
    for (;;) {
        if (!hpj__metis_next_record(&s)) return hpj__fail(HPJ_ERR_FORMAT, "%s: empty file (no header line)", name);
        if (hpj__scan_peek(&s)) break;
        if (!hpj__scan_next_line(&s)) return hpj__fail(HPJ_ERR_FORMAT, "%s: empty file (no header line)", name);
    }
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
            if (u - 1 == v) { ++loops; continue; }
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
    /* Anything left must be comments or blank lines. */
    while (hpj__metis_next_record(&s)) {
        if (hpj__scan_peek(&s)) {
            st = hpj__scan_err(&s, "more vertex lines than n from the header");
            goto fail;
        }
        if (!hpj__scan_next_line(&s)) break;
    }
    if (total + loops != 2 * m64 && total != 2 * m64) {
        st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: header says m=%lld edges but the lines hold %lld adjacency entries",
                       name, (long long)hline, (long long)m64, (long long)(total + loops));
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
            int32_t u = col[i], lo = rowptr[u], hi = rowptr[u + 1] - 1, found = -1;
            while (lo <= hi) {
                int32_t mid = lo + (hi - lo) / 2;
                if (col[mid] == (int32_t)v) { found = mid; break; }
                if (col[mid] < (int32_t)v) lo = mid + 1; else hi = mid - 1;
            }
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
        info->self_loops = loops;
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

/* ==== 4. graph: TUDataset reader ======================================== */

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

/* Parses a file of `rows` records of real numbers with one common width
   (the width of the first row). out gets (rows, width). */
static hpj_status hpj__tu_real_rows(const char *text, size_t len, const char *file, int64_t rows, const char *rows_of,
                                    float **out, int32_t *width) {
    hpj__scan s;
    int64_t r = 0;
    int32_t w = 0;
    float *a = NULL;
    size_t cap = 0;
    hpj_status st;
    *out = NULL;
    *width = 0;
    hpj__scan_init(&s, text, len, file);
    while (hpj__scan_content_line(&s)) {
        int32_t k = 0;
        if (r >= rows) {
            hpj__free(a);
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: more lines than the %lld %s", file, (long long)s.line,
                             (long long)rows, rows_of);
        }
        while (hpj__scan_peek(&s)) {
            float v = 0;
            if (r == 0) {
                if (k >= 1 << 20) { hpj__free(a); return hpj__scan_err(&s, "more than 2^20 attributes per row"); }
                if ((size_t)k >= cap) { /* grow the first row's buffer */
                    size_t nc = cap ? cap * 2 : 16;
                    float *na = (float *)hpj__alloc(nc * sizeof(float), file);
                    if (!na) { hpj__free(a); return HPJ_ERR_NOMEM; }
                    if (k) memcpy(na, a, (size_t)k * sizeof(float));
                    hpj__free(a);
                    a = na;
                    cap = nc;
                }
            } else if (k >= w) {
                hpj__free(a);
                return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: row has more than the %d values of the first row", file,
                                 (long long)s.line, w);
            } else if ((size_t)r * (size_t)w + (size_t)k >= cap) { /* grow with the text actually read */
                size_t nc = cap * 2;
                float *na;
                if (nc > (size_t)rows * (size_t)w) nc = (size_t)rows * (size_t)w;
                na = (float *)hpj__alloc(nc * sizeof(float), file);
                if (!na) { hpj__free(a); return HPJ_ERR_NOMEM; }
                memcpy(na, a, ((size_t)r * (size_t)w + (size_t)k) * sizeof(float));
                hpj__free(a);
                a = na;
                cap = nc;
            }
            if ((st = hpj__scan_f32(&s, &v, "expected a real number"))) { hpj__free(a); return st; }
            a[(size_t)r * (size_t)w + (size_t)k] = v;
            ++k;
        }
        if (r == 0) w = k; /* the first row fixes the width */
        else if (k != w) {
            hpj__free(a);
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: row has %d values but the first row has %d", file,
                             (long long)s.line, k, w);
        }
        ++r;
        if (!hpj__scan_next_line(&s)) break;
    }
    if (r != rows) {
        hpj__free(a);
        return hpj__fail(HPJ_ERR_FORMAT, "%s: %lld lines but there are %lld %s", file, (long long)r, (long long)rows,
                         rows_of);
    }
    *out = a;
    *width = w;
    return HPJ_OK;
}

/* Parses `rows` records of one integer each into out (rows). */
static hpj_status hpj__tu_int_rows(const char *text, size_t len, const char *file, int64_t rows, const char *rows_of,
                                   int32_t *out, int32_t *vmin, int32_t *vmax) {
    hpj__scan s;
    int64_t r = 0;
    hpj_status st;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    hpj__scan_init(&s, text, len, file);
    while (hpj__scan_content_line(&s)) {
        int32_t v;
        if (r >= rows)
            return hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: more lines than the %lld %s", file, (long long)s.line,
                             (long long)rows, rows_of);
        if ((st = hpj__scan_i32(&s, &v, INT32_MIN + 1, INT32_MAX, "label"))) return st;
        if ((st = hpj__scan_eol(&s))) return st;
        out[r++] = v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        if (!hpj__scan_next_line(&s)) break;
    }
    if (r != rows)
        return hpj__fail(HPJ_ERR_FORMAT, "%s: %lld lines but there are %lld %s", file, (long long)r, (long long)rows,
                         rows_of);
    if (vmin) *vmin = rows ? lo : 0;
    if (vmax) *vmax = rows ? hi : 0;
    return HPJ_OK;
}

static int hpj__cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

HPJDEF hpj_status hpj_dataset_parse_tu(const hpj_tu_text *files, hpj_dataset *out) {
    char fname[HPJ_TU_NUM_FILES][300];
    const char *name = files->name ? files->name : "dataset";
    hpj_dataset ds;
    hpj__scan s;
    hpj_status st = HPJ_OK;
    int32_t *gind = NULL;                   /* (N) 0-based graph of each node    */
    int32_t *esrc = NULL, *edst = NULL;     /* (2m) directed entries             */
    int32_t *eline = NULL;                  /* (2m) record index of each entry   */
    int32_t *order = NULL, *tmp = NULL;     /* (2m) sort permutation and scratch */
    int64_t *cnt = NULL;
    int32_t *lab_line = NULL;               /* (m) edge label per A record       */
    float *eattr_line = NULL;               /* (m, w) edge attributes per record */
    int64_t N = 0, m = 0, d = 0, i;
    int32_t G = 0, f;
    memset(&ds, 0, sizeof ds);
    memset(out, 0, sizeof(*out));
    {
        size_t nl = strlen(name);
        if (nl >= sizeof ds.name) nl = sizeof ds.name - 1;
        memcpy(ds.name, name, nl);
    }
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
    hpj__scan_init(&s, files->text[HPJ_TU_GRAPH_INDICATOR], files->len[HPJ_TU_GRAPH_INDICATOR], fname[HPJ_TU_GRAPH_INDICATOR]);
    for (i = 0; i < N; ++i) {
        int32_t gid;
        hpj__scan_content_line(&s);
        if ((st = hpj__scan_i32(&s, &gid, 1, INT32_MAX - 1, "graph id"))) goto done;
        if ((st = hpj__scan_eol(&s))) goto done;
        if (i == 0 && gid != 1) {
            st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: first graph id is %d, expected 1", s.file, (long long)s.line, gid);
            goto done;
        }
        gind[i] = gid - 1;
        if (i > 0 && gind[i] < gind[i - 1]) {
            st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: graph id %d after %d: ids must ascend, each graph's nodes contiguous",
                           s.file, (long long)s.line, gid, gind[i - 1] + 1);
            goto done;
        }
        if (i > 0 && gind[i] > gind[i - 1] + 1) {
            st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: graph id jumps from %d to %d: graph %d has no nodes", s.file,
                           (long long)s.line, gind[i - 1] + 1, gid, gind[i - 1] + 2);
            goto done;
        }
        hpj__scan_next_line(&s);
    }
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
    esrc = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    edst = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    eline = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    order = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    tmp = (int32_t *)hpj__calloc((size_t)(2 * m), sizeof(int32_t), name);
    cnt = (int64_t *)hpj__calloc((size_t)N + 1, sizeof(int64_t), name);
    if (!esrc || !edst || !eline || !order || !tmp || !cnt) { st = HPJ_ERR_NOMEM; goto done; }
    hpj__scan_init(&s, files->text[HPJ_TU_A], files->len[HPJ_TU_A], fname[HPJ_TU_A]);
    for (i = 0; i < m; ++i) {
        int32_t u, v;
        hpj__scan_content_line(&s);
        if ((st = hpj__scan_i32(&s, &u, 1, N, "node id"))) goto done;
        if (!hpj__scan_peek(&s)) { st = hpj__scan_err(&s, "expected two node ids 'row, col'"); goto done; }
        if ((st = hpj__scan_i32(&s, &v, 1, N, "node id"))) goto done;
        if ((st = hpj__scan_eol(&s))) goto done;
        --u; --v;
        if (gind[u] != gind[v]) {
            st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: edge joins node %d (graph %d) and node %d (graph %d)", s.file,
                           (long long)s.line, u + 1, gind[u] + 1, v + 1, gind[v] + 1);
            goto done;
        }
        if (u == v) ++ds.self_loops;
        else { esrc[d] = u; edst[d] = v; eline[d] = (int32_t)i; ++d; }
        hpj__scan_next_line(&s);
    }
    {   /* implied reverse directions come after every explicit entry, so a
           stable sort puts an explicit listing first */
        int64_t k = d;
        for (i = 0; i < k; ++i) { esrc[d] = edst[i]; edst[d] = esrc[i]; eline[d] = eline[i]; ++d; }
    }
    {   /* stable counting sorts: by dst, then by src */
        int64_t v;
        memset(cnt, 0, sizeof(int64_t) * ((size_t)N + 1));
        for (i = 0; i < d; ++i) cnt[edst[i] + 1]++;
        for (v = 0; v < N; ++v) cnt[v + 1] += cnt[v];
        for (i = 0; i < d; ++i) tmp[cnt[edst[i]]++] = (int32_t)i;
        memset(cnt, 0, sizeof(int64_t) * ((size_t)N + 1));
        for (i = 0; i < d; ++i) cnt[esrc[i] + 1]++;
        for (v = 0; v < N; ++v) cnt[v + 1] += cnt[v];
        for (i = 0; i < d; ++i) { int32_t e = tmp[i]; order[cnt[esrc[e]]++] = e; }
    }
    {   /* drop repeats; count duplicate explicit lines */
        int64_t k = 0, explicit_n = d / 2;
        for (i = 0; i < d; ++i) {
            int32_t e = order[i];
            if (k > 0 && esrc[order[k - 1]] == esrc[e] && edst[order[k - 1]] == edst[e]) {
                if (e < explicit_n) ++ds.dup_lines;
                continue;
            }
            order[k++] = e;
        }
        ds.num_edges = k;
    }
    ds.edge_ptr = (int64_t *)hpj__calloc((size_t)G + 1, sizeof(int64_t), name);
    ds.rowptr = (int32_t *)hpj__calloc((size_t)(N + G), sizeof(int32_t), name);
    ds.col = (int32_t *)hpj__calloc((size_t)ds.num_edges, sizeof(int32_t), name);
    if (!ds.edge_ptr || !ds.rowptr || !ds.col) { st = HPJ_ERR_NOMEM; goto done; }
    {   /* per-graph CSR with local ids */
        int64_t k = 0;
        int32_t g;
        for (g = 0; g < G; ++g) {
            int64_t v0 = ds.node_ptr[g], v1 = ds.node_ptr[g + 1], v;
            int32_t *rp = ds.rowptr + v0 + g;
            ds.edge_ptr[g] = k;
            rp[0] = 0;
            for (v = v0; v < v1; ++v) {
                while (k < ds.num_edges && esrc[order[k]] == v) {
                    ds.col[k] = (int32_t)(edst[order[k]] - v0);
                    ++k;
                }
                rp[v - v0 + 1] = (int32_t)(k - ds.edge_ptr[g]);
            }
        }
        ds.edge_ptr[G] = k;
    }
    /* edge labels: one per A record, then copied to the entries they name */
    if (files->text[HPJ_TU_EDGE_LABELS]) {
        const char *fn = fname[HPJ_TU_EDGE_LABELS];
        lab_line = (int32_t *)hpj__calloc((size_t)m + 1, sizeof(int32_t), name);
        ds.edge_label = (int32_t *)hpj__calloc((size_t)ds.num_edges + 1, sizeof(int32_t), name);
        if (!lab_line || !ds.edge_label) { st = HPJ_ERR_NOMEM; goto done; }
        if ((st = hpj__tu_int_rows(files->text[HPJ_TU_EDGE_LABELS], files->len[HPJ_TU_EDGE_LABELS], fn, m, "edge lines in A",
                                   lab_line, &ds.edge_label_min, &ds.edge_label_max)))
            goto done;
        for (i = 0; i < ds.num_edges; ++i) ds.edge_label[i] = lab_line[eline[order[i]]];
    }
    if (files->text[HPJ_TU_EDGE_ATTRIBUTES]) {
        int32_t w;
        if ((st = hpj__tu_real_rows(files->text[HPJ_TU_EDGE_ATTRIBUTES], files->len[HPJ_TU_EDGE_ATTRIBUTES],
                                    fname[HPJ_TU_EDGE_ATTRIBUTES], m, "edge lines in A", &eattr_line, &w)))
            goto done;
        ds.edge_attr_dim = w;
        ds.edge_attr = (float *)hpj__calloc((size_t)ds.num_edges + 1, (size_t)w * sizeof(float), name);
        if (!ds.edge_attr) { st = HPJ_ERR_NOMEM; goto done; }
        for (i = 0; i < ds.num_edges; ++i)
            memcpy(ds.edge_attr + (size_t)i * (size_t)w, eattr_line + (size_t)eline[order[i]] * (size_t)w,
                   (size_t)w * sizeof(float));
    }
    if (files->text[HPJ_TU_NODE_LABELS]) {
        ds.node_label = (int32_t *)hpj__calloc((size_t)N, sizeof(int32_t), name);
        if (!ds.node_label) { st = HPJ_ERR_NOMEM; goto done; }
        if ((st = hpj__tu_int_rows(files->text[HPJ_TU_NODE_LABELS], files->len[HPJ_TU_NODE_LABELS],
                                   fname[HPJ_TU_NODE_LABELS], N, "nodes in graph_indicator", ds.node_label,
                                   &ds.node_label_min, &ds.node_label_max)))
            goto done;
    }
    if (files->text[HPJ_TU_NODE_ATTRIBUTES]) {
        if ((st = hpj__tu_real_rows(files->text[HPJ_TU_NODE_ATTRIBUTES], files->len[HPJ_TU_NODE_ATTRIBUTES],
                                    fname[HPJ_TU_NODE_ATTRIBUTES], N, "nodes in graph_indicator", &ds.node_attr,
                                    &ds.node_attr_dim)))
            goto done;
    }
    if (files->text[HPJ_TU_GRAPH_LABELS]) {
        int32_t *sorted, c, g;
        ds.graph_label = (int32_t *)hpj__calloc((size_t)G, sizeof(int32_t), name);
        sorted = (int32_t *)hpj__calloc((size_t)G, sizeof(int32_t), name);
        if (!ds.graph_label || !sorted) { hpj__free(sorted); st = HPJ_ERR_NOMEM; goto done; }
        if ((st = hpj__tu_int_rows(files->text[HPJ_TU_GRAPH_LABELS], files->len[HPJ_TU_GRAPH_LABELS],
                                   fname[HPJ_TU_GRAPH_LABELS], G, "graphs in graph_indicator", ds.graph_label, NULL,
                                   NULL))) {
            hpj__free(sorted);
            goto done;
        }
        memcpy(sorted, ds.graph_label, (size_t)G * sizeof(int32_t));
        qsort(sorted, (size_t)G, sizeof(int32_t), hpj__cmp_i32);
        for (c = 0, g = 0; g < G; ++g)
            if (g == 0 || sorted[g] != sorted[g - 1]) sorted[c++] = sorted[g];
        ds.num_classes = c;
        ds.class_value = (int32_t *)hpj__calloc((size_t)c, sizeof(int32_t), name);
        if (!ds.class_value) { hpj__free(sorted); st = HPJ_ERR_NOMEM; goto done; }
        memcpy(ds.class_value, sorted, (size_t)c * sizeof(int32_t));
        hpj__free(sorted);
        for (g = 0; g < G; ++g) { /* binary search the class index */
            int32_t lo = 0, hi = c - 1, v = ds.graph_label[g];
            while (lo < hi) {
                int32_t mid = (lo + hi) / 2;
                if (ds.class_value[mid] < v) lo = mid + 1; else hi = mid;
            }
            ds.graph_label[g] = lo;
        }
    }
    if (files->text[HPJ_TU_GRAPH_ATTRIBUTES]) {
        if ((st = hpj__tu_real_rows(files->text[HPJ_TU_GRAPH_ATTRIBUTES], files->len[HPJ_TU_GRAPH_ATTRIBUTES],
                                    fname[HPJ_TU_GRAPH_ATTRIBUTES], G, "graphs in graph_indicator", &ds.target,
                                    &ds.target_dim)))
            goto done;
    }
    if (files->text[HPJ_TU_SPLIT]) {
        const char *fn = fname[HPJ_TU_SPLIT];
        int64_t r = 0;
        ds.split = (int8_t *)hpj__calloc((size_t)G, 1, name);
        if (!ds.split) { st = HPJ_ERR_NOMEM; goto done; }
        hpj__scan_init(&s, files->text[HPJ_TU_SPLIT], files->len[HPJ_TU_SPLIT], fn);
        while (hpj__scan_content_line(&s)) {
            const char *q = s.p;
            size_t n = 0;
            int8_t v;
            if (r >= G) {
                st = hpj__fail(HPJ_ERR_FORMAT, "%s:%lld: more lines than the %d graphs", fn, (long long)s.line, G);
                goto done;
            }
            while (q + n < s.end && !hpj__is_blank(q[n]) && q[n] != '\n') ++n;
            if (n == 5 && !memcmp(q, "train", 5)) v = HPJ_SPLIT_TRAIN;
            else if (n == 3 && !memcmp(q, "val", 3)) v = HPJ_SPLIT_VAL;
            else if (n == 5 && !memcmp(q, "valid", 5)) v = HPJ_SPLIT_VAL;
            else if (n == 4 && !memcmp(q, "test", 4)) v = HPJ_SPLIT_TEST;
            else { st = hpj__scan_err(&s, "expected train, val or test"); goto done; }
            s.p = q + n;
            if ((st = hpj__scan_eol(&s))) goto done;
            ds.split[r++] = v;
            if (!hpj__scan_next_line(&s)) break;
        }
        if (r != G) {
            st = hpj__fail(HPJ_ERR_FORMAT, "%s: %lld lines but there are %d graphs", fn, (long long)r, G);
            goto done;
        }
    }
done:
    hpj__free(gind); hpj__free(esrc); hpj__free(edst); hpj__free(eline); hpj__free(order); hpj__free(tmp);
    hpj__free(cnt); hpj__free(lab_line); hpj__free(eattr_line);
    if (st) { hpj_dataset_free(&ds); return st; }
    *out = ds;
    return HPJ_OK;
}

#ifndef HPJ_NO_STDIO
HPJDEF hpj_status hpj_dataset_load_tu(const char *dir, hpj_dataset *out) {
    char prefix[1024], path[1100], name[256];
    hpj_tu_text files;
    char *buf[HPJ_TU_NUM_FILES];
    hpj_status st = HPJ_OK;
    size_t dl = strlen(dir), b, e;
    int f;
    memset(out, 0, sizeof(*out));
    memset(&files, 0, sizeof files);
    memset(buf, 0, sizeof buf);
    while (dl > 1 && dir[dl - 1] == '/') --dl; /* strip trailing slashes */
    e = dl;
    b = e;
    while (b > 0 && dir[b - 1] != '/') --b;
    if (e == b || e - b >= sizeof name) return hpj__fail(HPJ_ERR_INPUT, "%s: cannot take a dataset name from this path", dir);
    if (dl + (e - b) + 2 >= sizeof prefix) return hpj__fail(HPJ_ERR_INPUT, "%s: path too long", dir);
    memcpy(name, dir + b, e - b);
    name[e - b] = 0;
    memcpy(prefix, dir, dl);
    prefix[dl] = '/';
    memcpy(prefix + dl + 1, name, e - b + 1);
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) {
        FILE *fp;
        snprintf(path, sizeof path, "%s_%s.txt", prefix, hpj__tu_suffixes[f]);
        fp = fopen(path, "rb");
        if (!fp) {
            if (errno == ENOENT) continue; /* optional file absent; required ones are checked by the parser */
            st = hpj__fail(HPJ_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
            goto done;
        }
        fclose(fp);
        if ((st = hpj__read_file(path, &buf[f], &files.len[f]))) goto done;
        files.text[f] = buf[f];
    }
    files.name = name;
    files.path_prefix = prefix;
    if (!files.text[HPJ_TU_A] && !files.text[HPJ_TU_GRAPH_INDICATOR]) {
        st = hpj__fail(HPJ_ERR_IO, "%s_A.txt: cannot open: no such file (is %s a TUDataset folder?)", prefix, dir);
        goto done;
    }
    st = hpj_dataset_parse_tu(&files, out);
done:
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) hpj__free(buf[f]);
    return st;
}
#endif

#endif /* HPJEPA_IMPLEMENTATION_DONE */
#endif /* HPJEPA_IMPLEMENTATION */

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
