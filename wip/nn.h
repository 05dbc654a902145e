/* wip/nn.h - the nn module of hpjepa.h while it is developed in parallel.
   It is folded into hpjepa.h (API part into the API block, implementation
   part into the implementation block) when done. Include it right after
   hpjepa.h; with HPJEPA_IMPLEMENTATION defined it also compiles the code. */
#ifndef HPJ_WIP_NN_API
#define HPJ_WIP_NN_API
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
   alpha == 0 or K == 0 gives C = beta*C. All four layouts are fast: A and
   B are packed into cache blocks (B is read in place when it is (K,N) and
   M <= 128), so TT costs what NT costs.
   Kernels: 8x32 AVX-512 (16 zmm accumulators) or 6x16 AVX2 micro-kernels
   when the compiler targets them, else a portable 4x16 C kernel that
   GCC/Clang vectorize (see hpj_gemm_set_isa).
   Threads: when M*N*K >= 64^3, the calling thread's OpenMP team shares
   out tiles of C dynamically (a call from inside a parallel region runs
   on its own thread). Determinism: every element is summed over K in
   blocks of 256, in increasing k with one fma per step, so the bits of C
   depend neither on the thread count nor on which kernel ran.
   Memory: nothing is allocated; each thread packs into 1.1 MiB of
   thread-local buffers, so concurrent calls from several threads are safe.
   The caller guarantees lda >= (transA ? M : K), ldb >= (transB ? K : N),
   ldc >= N, as BLAS does (nothing is checked). */
HPJDEF void hpj_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* The micro-kernel hpj_gemm uses. The default is the widest one compiled
   in (AVX-512 > AVX2 > portable C); hpj_gemm_set_isa forces one (for
   tests and benchmarks; -1 restores the default; returns -1 if that
   kernel is not compiled in). Not to be changed while a GEMM runs. */
enum { HPJ_GEMM_PORTABLE = 0, HPJ_GEMM_AVX2 = 1, HPJ_GEMM_AVX512 = 2 };
HPJDEF int hpj_gemm_isa(void);
HPJDEF int hpj_gemm_set_isa(int isa);
HPJDEF const char *hpj_gemm_isa_name(int isa);

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
   Phi is evaluated by the library's own vectorizable polynomials (absolute
   error < 1e-7, and the lower tail keeps its relative accuracy, unlike
   1 + erff(x) in float), about 10x faster than calling erff. */
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
   unbiased variance of one sample is undefined). gamma/beta may be NULL. */
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
   (ptr (S+1), idx (ptr[S])), zeros if empty. */
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
   not alias inp. */
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
   the bias corrections. decoupled == 0: torch.optim.Adam (g += wd p before
   the moments); decoupled == 1: torch.optim.AdamW (p -= lr wd p first).
   Then m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
   p -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps), as torch computes it. */
HPJDEF void hpj_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                          float beta2, float eps, float weight_decay, int decoupled, int64_t t);
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

#endif /* HPJ_WIP_NN_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_NN_IMPL
#define HPJ_WIP_NN_IMPL
/* ==== nn: GEMM ==== */

/* Blocking. Every C element is computed as: acc = 0; for k in the block:
   acc = fma(a, b, acc) in increasing k; the first K block then sets
   C = alpha*acc (+ beta*C), later blocks add alpha*acc. The blocks are
   HPJ__GEMM_KC long and depend on K only, so the result of an element
   never depends on the thread count, on how C is split into tiles, or on
   which micro-kernel computed it (the portable kernel uses fmaf when the
   target has a fast fma, so every kernel gives the same bits there). */
#define HPJ__GEMM_KC 256
#define HPJ__GEMM_NC 512   /* columns of a packed B block                 */
#define HPJ__GEMM_BFULL (512 * 512) /* B buffer (floats): a whole 512 x 512 B */
#define HPJ__GEMM_MC 128   /* rows of A packed at a time (multiple of 8)  */
/* below this many multiply-adds a call runs on the calling thread */
#define HPJ__GEMM_PAR_MIN (64 * 64 * 64)
/* "small" products (one K block, packed B at most 4096 floats) skip the
   tiling and thread machinery and pack into stack buffers */
#define HPJ__GEMM_SMALL_MNK (64 * 32 * 32)
#define HPJ__GEMM_SMALL_B 4096
#define HPJ__GEMM_PACKB_M 16 /* B is packed when M is above this */

#if defined(_MSC_VER) && !defined(__cplusplus)
#define HPJ__INLINE __inline
#else
#define HPJ__INLINE inline
#endif

#if defined(FP_FAST_FMAF)
#define HPJ__FMAF(a, b, c) fmaf((a), (b), (c))
#else
#define HPJ__FMAF(a, b, c) ((a) * (b) + (c))
#endif

/* A micro-kernel: C tile (mr x nr, mr <= MR, nr <= NR) from a packed A
   sliver ap (kc, MR) and a B sliver bp (kc rows of NR floats, row stride
   ldbk; entries past nr are never read when they are outside B). */
typedef void (*hpj__gemm_kernel)(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                 ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first);

/* Stores one finished accumulator value (the rule in the banner above). */
static HPJ__INLINE float hpj__gemm_out(float acc, float cold, float alpha, float beta, int first) {
    float t = alpha * acc;
    if (!first) return cold + t;
    return beta == 0.0f ? t : HPJ__FMAF(beta, cold, t);
}

/* -- portable kernel: 4 x 16, four named accumulator rows so that GCC and
   Clang keep them in vector registers and vectorize the 16-wide rows -- */
#define HPJ__PMR 4
#define HPJ__PNR 16
static HPJ__INLINE void hpj__gemm_store_row(float *ci, const float *acc, int nr, float alpha, float beta, int first) {
    int j;
    if (first && beta == 0.0f)
        for (j = 0; j < nr; ++j) ci[j] = alpha * acc[j];
    else
        for (j = 0; j < nr; ++j) ci[j] = hpj__gemm_out(acc[j], ci[j], alpha, beta, first);
}
static void hpj__gemm_kernel_c(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c, ptrdiff_t ldc,
                               int mr, int nr, float alpha, float beta, int first) {
    /* B always comes packed here (zero-padded to 16 columns): a copy of
       partial rows inside the k loop would keep the accumulators out of
       registers */
    float c0[HPJ__PNR], c1[HPJ__PNR], c2[HPJ__PNR], c3[HPJ__PNR];
    int j, k;
    for (j = 0; j < HPJ__PNR; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (k = 0; k < kc; ++k, ap += HPJ__PMR) {
        const float *b = bp + (ptrdiff_t)k * ldbk;
        float a0 = ap[0], a1 = ap[1], a2 = ap[2], a3 = ap[3];
        for (j = 0; j < HPJ__PNR; ++j) {
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

#if !defined(HPJ_NO_SIMD) && (defined(__AVX512F__) || defined(__AVX2__)) && \
    (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>
#endif

#define HPJ__R6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define HPJ__R8(X) HPJ__R6(X) X(6) X(7)
#define HPJ__R12(X) HPJ__R8(X) X(8) X(9) X(10) X(11)

#if !defined(HPJ_NO_SIMD) && defined(__AVX512F__)
#define HPJ__GEMM_AVX512 1
/* -- AVX-512 kernel: 8 x 32 (16 zmm accumulators); N edges use masks -- */
#define HPJ__ZMR 8
#define HPJ__ZNR 32
#define HPJ__ZDECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define HPJ__ZPREF(i)                                                            \
    if (mr > i) {                                                                \
        _mm_prefetch((const char *)(c + (ptrdiff_t)i * ldc), _MM_HINT_T0);       \
        _mm_prefetch((const char *)(c + (ptrdiff_t)i * ldc + 16), _MM_HINT_T0);  \
    }
#define HPJ__ZFMA(i)                                       \
    {                                                      \
        __m512 a_ = _mm512_set1_ps(ap[i]);                 \
        c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);        \
        c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);        \
    }
#define HPJ__ZFMA1(i) c##i##0 = _mm512_fmadd_ps(_mm512_set1_ps(ap[i]), b0, c##i##0);
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
static void hpj__gemm_kernel_avx512(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                    ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first) {
    __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
    __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xFFFFu : nr <= 16 ? 0u : (1u << (nr - 16)) - 1u);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    int k;
    HPJ__R8(HPJ__ZDECL)
    HPJ__R8(HPJ__ZPREF)
    if (nr == HPJ__ZNR) {
        for (k = 0; k < kc; ++k) {
            __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
            HPJ__R8(HPJ__ZFMA)
            ap += HPJ__ZMR;
            bp += ldbk;
        }
    } else if (nr <= 16) { /* half a tile: one vector per row */
        for (k = 0; k < kc; ++k) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, bp);
            HPJ__R8(HPJ__ZFMA1)
            ap += HPJ__ZMR;
            bp += ldbk;
        }
    } else {
        for (k = 0; k < kc; ++k) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
            HPJ__R8(HPJ__ZFMA)
            ap += HPJ__ZMR;
            bp += ldbk;
        }
    }
    HPJ__R8(HPJ__ZSTORE)
}
#endif

#if !defined(HPJ_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
#define HPJ__GEMM_AVX2 1
/* -- AVX2 kernel: 6 x 16 (12 ymm accumulators); N edges go through a
   zero-padded copy of the B rows -- */
#define HPJ__YMR 6
#define HPJ__YNR 16
#define HPJ__YDECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
#define HPJ__YFMA(i)                                       \
    {                                                      \
        __m256 a_ = _mm256_broadcast_ss(ap + i);           \
        c##i##0 = _mm256_fmadd_ps(a_, b0, c##i##0);        \
        c##i##1 = _mm256_fmadd_ps(a_, b1, c##i##1);        \
    }
#define HPJ__YSAVE(i)                              \
    _mm256_storeu_ps(acc + i * 16, c##i##0);       \
    _mm256_storeu_ps(acc + i * 16 + 8, c##i##1);
static void hpj__gemm_kernel_avx2(int kc, const float *ap, const float *bp, ptrdiff_t ldbk, float *c,
                                  ptrdiff_t ldc, int mr, int nr, float alpha, float beta, int first) {
    float acc[HPJ__YMR * HPJ__YNR];
    int i, j, k;
    HPJ__R6(HPJ__YDECL)
    if (nr == HPJ__YNR) {
        for (k = 0; k < kc; ++k) {
            __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
            HPJ__R6(HPJ__YFMA)
            ap += HPJ__YMR;
            bp += ldbk;
        }
    } else {
        float bl[HPJ__YNR];
        for (k = 0; k < kc; ++k) {
            __m256 b0, b1;
            for (j = 0; j < HPJ__YNR; ++j) bl[j] = j < nr ? bp[j] : 0.0f;
            b0 = _mm256_loadu_ps(bl);
            b1 = _mm256_loadu_ps(bl + 8);
            HPJ__R6(HPJ__YFMA)
            ap += HPJ__YMR;
            bp += ldbk;
        }
    }
    HPJ__R6(HPJ__YSAVE)
    for (i = 0; i < mr; ++i) {
        float *ci = c + (ptrdiff_t)i * ldc;
        for (j = 0; j < nr; ++j) ci[j] = hpj__gemm_out(acc[i * 16 + j], first && beta == 0.0f ? 0.0f : ci[j], alpha,
                                                       beta, first);
    }
}
#endif

/* Which kernel hpj_gemm uses (see hpj_gemm_set_isa). */
static int hpj__gemm_isa = -1;

HPJDEF int hpj_gemm_isa(void) {
    if (hpj__gemm_isa >= 0) return hpj__gemm_isa;
#if defined(HPJ__GEMM_AVX512)
    return HPJ_GEMM_AVX512;
#elif defined(HPJ__GEMM_AVX2)
    return HPJ_GEMM_AVX2;
#else
    return HPJ_GEMM_PORTABLE;
#endif
}

HPJDEF int hpj_gemm_set_isa(int isa) {
    switch (isa) {
    case HPJ_GEMM_PORTABLE: hpj__gemm_isa = isa; return 0;
#if defined(HPJ__GEMM_AVX2)
    case HPJ_GEMM_AVX2: hpj__gemm_isa = isa; return 0;
#endif
#if defined(HPJ__GEMM_AVX512)
    case HPJ_GEMM_AVX512: hpj__gemm_isa = isa; return 0;
#endif
    case -1: hpj__gemm_isa = -1; return 0;
    default: return -1;
    }
}

HPJDEF const char *hpj_gemm_isa_name(int isa) {
    switch (isa) {
    case HPJ_GEMM_PORTABLE: return "portable";
    case HPJ_GEMM_AVX2: return "avx2";
    case HPJ_GEMM_AVX512: return "avx512";
    }
    return "unknown";
}

/* One call's description, shared by the threads. */
typedef struct hpj__gemm_job {
    int transA, transB, M, N, K;
    float alpha, beta;
    const float *A, *B;
    int lda, ldb, ldc;
    float *C;
    int mr, nr; /* MR, NR of the kernel */
    hpj__gemm_kernel kern;
    int packB;  /* 1: copy B blocks into the thread's buffer first */
    float *bshared; /* B buffer the threads fill together (thread 0's) */
} hpj__gemm_job;

#if defined(HPJ__GEMM_AVX512) || defined(HPJ__GEMM_AVX2)
/* dst[c*ldd + r] = src[r*lds + c] for an 8 x 8 block. */
static void hpj__tr8x8(const float *src, ptrdiff_t lds, float *dst, ptrdiff_t ldd) {
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

/* Packs op(A)(i0..i0+mc-1, p0..p0+kc-1) into slivers of MR rows: sliver s
   holds (kc, MR) at ap + s*kc*MR, zero rows past mc. */
static void hpj__gemm_pack_a(float *ap, const hpj__gemm_job *g, int i0, int mc, int p0, int kc) {
    int MR = g->mr, i, k, s;
    ptrdiff_t l = g->lda;
    if (g->transA) { /* A is (K, M): row k holds the block's values */
        const float *a = g->A + (ptrdiff_t)p0 * l + i0;
        if (MR == 8 && mc % 8 == 0) { /* the common case, with fixed-size copies */
            for (k = 0; k < kc; ++k, a += l)
                for (s = 0; s * 8 < mc; ++s) memcpy(ap + (ptrdiff_t)s * kc * 8 + k * 8, a + s * 8, 8 * sizeof(float));
            return;
        }
        for (k = 0; k < kc; ++k, a += l)
            for (s = 0; s * MR < mc; ++s) {
                float *o = ap + (ptrdiff_t)s * kc * MR + k * MR;
                int w = HPJ__MIN(MR, mc - s * MR);
                for (i = 0; i < w; ++i) o[i] = a[s * MR + i];
                for (; i < MR; ++i) o[i] = 0.0f;
            }
        return;
    }
    for (s = 0; s * MR < mc; ++s) {
        const float *a = g->A + (ptrdiff_t)(i0 + s * MR) * l + p0;
        float *o = ap + (ptrdiff_t)s * kc * MR;
        int w = HPJ__MIN(MR, mc - s * MR);
#if defined(HPJ__GEMM_AVX512) || defined(HPJ__GEMM_AVX2)
        if (w == MR && MR % 8 == 0) { /* 8 x 8 register transposes */
            int i8;
            for (k = 0; k + 8 <= kc; k += 8)
                for (i8 = 0; i8 < MR; i8 += 8) hpj__tr8x8(a + (ptrdiff_t)i8 * l + k, l, o + k * MR + i8, MR);
            for (; k < kc; ++k)
                for (i = 0; i < MR; ++i) o[k * MR + i] = a[(ptrdiff_t)i * l + k];
            continue;
        }
#endif
        for (i = 0; i < w; ++i) {
            const float *ai = a + (ptrdiff_t)i * l;
            for (k = 0; k < kc; ++k) o[k * MR + i] = ai[k];
        }
        for (; i < MR; ++i)
            for (k = 0; k < kc; ++k) o[k * MR + i] = 0.0f;
    }
}

/* Packs op(B)(p0..p0+kc-1, j0..j0+nc-1) into slivers of NR columns:
   sliver s holds (kc, NR) at bp + s*kc*NR, zero columns past nc. */
static void hpj__gemm_pack_b(float *bp, const hpj__gemm_job *g, int j0, int nc, int p0, int kc) {
    int NR = g->nr, s, j, k;
    for (s = 0; s * NR < nc; ++s) {
        float *o = bp + (ptrdiff_t)s * kc * NR;
        int w = HPJ__MIN(NR, nc - s * NR), jj = j0 + s * NR;
        if (!g->transB) { /* B is (K, N): rows are contiguous */
            const float *b = g->B + (ptrdiff_t)p0 * g->ldb + jj;
            if (NR == 32 && w == 32) {
                for (k = 0; k < kc; ++k, b += g->ldb, o += 32) memcpy(o, b, 32 * sizeof(float));
                continue;
            }
            for (k = 0; k < kc; ++k, b += g->ldb, o += NR) {
                for (j = 0; j < w; ++j) o[j] = b[j];
                for (; j < NR; ++j) o[j] = 0.0f;
            }
        } else { /* B is (N, K): transpose 8 x 8 blocks, then the rest */
            const float *b = g->B + (ptrdiff_t)jj * g->ldb + p0;
            int j8 = 0, k0 = 0;
#if defined(HPJ__GEMM_AVX512) || defined(HPJ__GEMM_AVX2)
            for (k0 = 0; k0 + 8 <= kc; k0 += 8)
                for (j8 = 0; j8 + 8 <= w; j8 += 8) hpj__tr8x8(b + (ptrdiff_t)j8 * g->ldb + k0, g->ldb, o + k0 * NR + j8, NR);
            j8 = w & ~7; /* columns done for k < k0 */
#endif
            for (k = 0; k < kc; ++k) {
                for (j = k < k0 ? j8 : 0; j < w; ++j) o[k * NR + j] = b[(ptrdiff_t)j * g->ldb + k];
                for (; j < NR; ++j) o[k * NR + j] = 0.0f;
            }
        }
    }
}

/* Thread-private buffers for packed B (blocks of KC x NC floats, or a
   whole B up to 512 x 512: 1 MiB) and A blocks (MC x KC: 128 KiB). They
   live in thread-local storage, so hpj_gemm allocates nothing and may run
   in several threads at once (without TLS, HPJ__TLS is empty and calls
   must not overlap). */
static HPJ__TLS float hpj__gemm_bbuf[HPJ__GEMM_BFULL];
static HPJ__TLS float hpj__gemm_abuf[HPJ__GEMM_KC * HPJ__GEMM_MC];

/* One K block (p0, kc) of C rows [s0,s1) x column slivers [tc,tcn): A is
   packed here MC rows at a time, B comes packed (ldbk = NR, slivers
   bstride apart) or in place (ldbk = ldb). */
static void hpj__gemm_block(const hpj__gemm_job *g, int s0, int s1, int tc, int tcn, int p0, int kc, const float *bb,
                            ptrdiff_t ldbk, ptrdiff_t bstride) {
    int MR = g->mr, NR = g->nr, mc_sl = HPJ__GEMM_MC / MR, first = p0 == 0;
    ptrdiff_t astride = (ptrdiff_t)kc * MR;
    int sb, s, t;
    for (sb = s0; sb < s1; sb += mc_sl) {
        int se = HPJ__MIN(s1, sb + mc_sl);
        int ib = sb * MR, mc = HPJ__MIN(g->M, se * MR) - ib;
        hpj__gemm_pack_a(hpj__gemm_abuf, g, ib, mc, p0, kc);
        for (s = sb; s < se; ++s) {
            int i0 = s * MR, mr = HPJ__MIN(MR, g->M - i0);
            const float *ap = hpj__gemm_abuf + (s - sb) * astride;
            for (t = tc; t < tcn; ++t) {
                int jj = t * NR, nr = HPJ__MIN(NR, g->N - jj);
                g->kern(kc, ap, bb + (t - tc) * bstride, ldbk, g->C + (ptrdiff_t)i0 * g->ldc + jj, g->ldc, mr, nr,
                        g->alpha, g->beta, first);
            }
        }
    }
}

/* The C rectangle of row slivers [s0,s1) x column slivers [t0,t1), every
   K block, with B packed into this thread's buffer (or read in place). */
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

/* The work of one thread of a team of nth. Tiles are handed out
   dynamically (a thread the OS preempts holds up only its current tile);
   which thread computes a tile never changes its bits. With many row
   blocks and a packed B, the team packs B together into thread 0's
   buffer (all of it at once when it fits, else block by block) and then
   shares out the row blocks; otherwise each tile is a rectangle that
   packs its own B. */
static void hpj__gemm_team(hpj__gemm_job *g, int nth) {
    int MR = g->mr, NR = g->nr, mc_sl = HPJ__GEMM_MC / MR, nc_sl = HPJ__GEMM_NC / NR;
    int ms = (g->M + MR - 1) / MR, ns = (g->N + NR - 1) / NR;
    int rblk, nrb, ncg, cgw, nit, it;
    if (nth == 1) {
        hpj__gemm_rect(g, 0, ms, 0, ns);
        return;
    }
    /* row blocks of up to MC rows, about 4 per thread */
    rblk = HPJ__MAX(1, HPJ__MIN(mc_sl, (ms + 4 * nth - 1) / (4 * nth)));
    nrb = (ms + rblk - 1) / rblk;
    if (g->packB && nrb >= 2 * nth && (size_t)ns * NR * (size_t)g->K <= HPJ__GEMM_BFULL) {
        /* all of B fits the shared buffer: pack it once (sliver t holds
           its K rows at t*K*NR, so K block p0 starts p0*NR further), then
           one barrier, then the row blocks */
        ptrdiff_t ss = (ptrdiff_t)g->K * NR;
        int i;
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
    if (g->packB && nrb >= 2 * nth) { /* B block by B block */
        int tc, p0, i;
        for (tc = 0; tc < ns; tc += nc_sl) {
            int tcn = HPJ__MIN(ns, tc + nc_sl);
            for (p0 = 0; p0 < g->K; p0 += HPJ__GEMM_KC) {
                int kc = HPJ__MIN(HPJ__GEMM_KC, g->K - p0);
                /* (each worksharing loop ends with a barrier: the block is
                   complete before use, and used up before it is replaced) */
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
    if (g->packB) { /* few rows: split the columns, one row block */
        rblk = ms;
        nrb = 1;
    }
    /* column groups so that there are about 4 tiles per thread */
    ncg = HPJ__MAX(1, HPJ__MIN(ns, (4 * nth + nrb - 1) / nrb));
    cgw = (ns + ncg - 1) / ncg;
    ncg = (ns + cgw - 1) / cgw;
    nit = nrb * ncg;
    HPJ__OMP(for schedule(dynamic, 1))
    for (it = 0; it < nit; ++it) {
        int rb = it / ncg, cg = it % ncg;
        hpj__gemm_rect(g, rb * rblk, HPJ__MIN(ms, (rb + 1) * rblk), cg * cgw, HPJ__MIN(ns, (cg + 1) * cgw));
    }
}

HPJDEF void hpj_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    hpj__gemm_job g;
    int isa;
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) { /* C = beta*C */
        int i, j;
        for (i = 0; i < M; ++i) {
            float *ci = C + (ptrdiff_t)i * ldc;
            if (beta == 0.0f)
                for (j = 0; j < N; ++j) ci[j] = 0.0f;
            else if (beta != 1.0f)
                for (j = 0; j < N; ++j) ci[j] *= beta;
        }
        return;
    }
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
    g.bshared = hpj__gemm_bbuf; /* the calling thread is thread 0 of the team */
    isa = hpj_gemm_isa();
    g.kern = hpj__gemm_kernel_c;
    g.mr = HPJ__PMR;
    g.nr = HPJ__PNR;
    (void)isa;
#if defined(HPJ__GEMM_AVX2)
    if (isa == HPJ_GEMM_AVX2) {
        g.kern = hpj__gemm_kernel_avx2;
        g.mr = HPJ__YMR;
        g.nr = HPJ__YNR;
    }
#endif
#if defined(HPJ__GEMM_AVX512)
    if (isa == HPJ_GEMM_AVX512) {
        g.kern = hpj__gemm_kernel_avx512;
        g.mr = HPJ__ZMR;
        g.nr = HPJ__ZNR;
    }
#endif
    /* small products (attention-sized): one K block, packed into stack
       buffers, on this thread, with none of the tiling machinery */
    if ((double)M * N * K <= HPJ__GEMM_SMALL_MNK && K <= HPJ__GEMM_KC &&
        (size_t)K * (size_t)((N + g.nr - 1) / g.nr * g.nr) <= HPJ__GEMM_SMALL_B) {
        float bbuf[HPJ__GEMM_SMALL_B], abuf[HPJ__GEMM_KC * 8]; /* every MR <= 8 */
        const float *bb = bbuf;
        ptrdiff_t ldbk = g.nr, bstride = (ptrdiff_t)K * g.nr;
        int i0, t;
        if (!g.transB && g.kern != hpj__gemm_kernel_c) { /* B in place */
            bb = B;
            ldbk = ldb;
            bstride = g.nr;
        } else {
            g.packB = 1;
            hpj__gemm_pack_b(bbuf, &g, 0, N, 0, K);
        }
        for (i0 = 0; i0 < M; i0 += g.mr) {
            int mr = HPJ__MIN(g.mr, M - i0);
            hpj__gemm_pack_a(abuf, &g, i0, mr, 0, K);
            for (t = 0; t * g.nr < N; ++t)
                g.kern(K, abuf, bb + t * bstride, ldbk, C + (ptrdiff_t)i0 * ldc + t * g.nr, ldc, mr,
                       HPJ__MIN(g.nr, N - t * g.nr), alpha, beta, 1);
        }
        return;
    }
    /* B is read in place when its rows are contiguous and it is reused by
       few row slivers; otherwise (B transposed, M large, or the portable
       kernel, which wants zero-padded slivers) it is packed. */
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

/* ==== nn: shared helpers ==== */

/* Loops over this many elements or more run in parallel. */
#define HPJ__PAR_ELEMS 32768
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

/* y (n) += a x */
static HPJ__INLINE void hpj__axpy(float *y, float a, const float *x, int n) {
    int i;
    HPJ__OMP(simd)
    for (i = 0; i < n; ++i) y[i] = HPJ__FMAF(a, x[i], y[i]);
}

/* dst (D) += column sums of src (N, D) (row stride lds), each column summed
   in double in row order; parallel over column blocks of 16. */
static void hpj__colsum_add(float *dst, const float *src, int N, int D, ptrdiff_t lds) {
    int nb = (D + 15) / 16;
    int jb;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (jb = 0; jb < nb; ++jb) {
        double acc[16];
        int j0 = jb * 16, w = HPJ__MIN(16, D - j0), i, j;
        for (j = 0; j < 16; ++j) acc[j] = 0.0;
        for (i = 0; i < N; ++i) {
            const float *r = src + (ptrdiff_t)i * lds + j0;
            HPJ__OMP(simd)
            for (j = 0; j < w; ++j) acc[j] += r[j];
        }
        for (j = 0; j < w; ++j) dst[j0 + j] += (float)acc[j];
    }
}

/* ==== nn: linear ==== */

HPJDEF void hpj_linear_forward(float *out, const float *inp, const float *W, const float *b, int N, int Din,
                               int Dout) {
    int i;
    if (N <= 0 || Dout <= 0) return;
    if (b) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * Dout >= HPJ__PAR_ELEMS))
        for (i = 0; i < N; ++i) memcpy(out + (ptrdiff_t)i * Dout, b, (size_t)Dout * sizeof(float));
    }
    /* out = inp W^T (+ out, which holds the bias) */
    hpj_gemm(0, 1, N, Dout, Din, 1.0f, inp, Din, W, Din, b ? 1.0f : 0.0f, out, Dout);
}

HPJDEF void hpj_linear_backward(float *dinp, float *dW, float *db, const float *dout, const float *inp,
                                const float *W, int N, int Din, int Dout) {
    if (N <= 0) return;
    /* out = inp W^T: dinp += dout W, dW += dout^T inp */
    if (dinp) hpj_gemm(0, 0, N, Din, Dout, 1.0f, dout, Dout, W, Din, 1.0f, dinp, Din);
    if (dW) hpj_gemm(1, 0, Dout, Din, N, 1.0f, dout, Dout, inp, Din, 1.0f, dW, Din);
    /* out += b: db += column sums of dout */
    if (db) hpj__colsum_add(db, dout, N, Dout, Dout);
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

/* -- vectorizable exp and normal CDF (own minimax fits; GCC's -O2 only
   vectorizes fixed-trip loops, so the elementwise kernels below work on
   blocks of 16 copied to the stack) -- */

/* e^y for y in [-87, 88] (clamped), relative error < 1.1e-7: 2^n times a
   degree-6 polynomial on |r| <= ln2/2. */
static HPJ__INLINE float hpj__expf(float y) {
    float n, r, p, s;
    int32_t bits;
    y = y < -87.0f ? -87.0f : y;
    y = y > 88.0f ? 88.0f : y;
    n = (y * 1.442695041f + 12582912.0f) - 12582912.0f; /* round to nearest */
    r = y - n * 0.693145751953125f;                     /* ln 2, high part */
    r = r - n * 1.428606765330187e-06f;                 /* ln 2, low part  */
    p = 1.384413801e-03f;
    p = p * r + 8.374155499e-03f;
    p = p * r + 4.166799411e-02f;
    p = p * r + 1.666643173e-01f;
    p = p * r + 4.999999404e-01f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    bits = ((int32_t)n + 127) * 8388608; /* 2^n */
    memcpy(&s, &bits, sizeof s);
    return p * s;
}

/* Phi(x) = (1 + erf(x/sqrt 2))/2, absolute error < 1e-7: erf(z) = z P(z^2)
   for |z| < 1, erfc(|z|) = exp(Q(|z|)) for 1 <= |z| < 3.93 (so the lower
   tail keeps its relative accuracy), and 0 / 1 beyond, as float erf. */
static HPJ__INLINE float hpj__ncdf(float x) {
    float z = x * 0.70710678118654752f, a = fabsf(z), t = z * z, e, u, q;
    e = -5.626979400e-04f;
    e = e * t + 4.916354548e-03f;
    e = e * t - 2.671015263e-02f;
    e = e * t + 1.128013209e-01f;
    e = e * t - 3.761231899e-01f;
    e = e * t + 1.128379107e+00f;
    e = e * z;
    u = (a < 3.93f ? a : 3.93f) - 2.5f;
    q = 2.339618987e-07f;
    q = q * u - 2.039391438e-05f;
    q = q * u + 6.450944056e-05f;
    q = q * u - 4.285048926e-04f;
    q = q * u + 2.166953404e-03f;
    q = q * u - 1.085422747e-02f;
    q = q * u - 9.438923001e-01f;
    q = q * u - 5.352680683e+00f;
    q = q * u - 7.806815147e+00f;
    q = a < 3.93f ? 0.5f * hpj__expf(q) : 0.0f; /* erfc(|z|) / 2 */
    q = z > 0.0f ? 1.0f - q : q;
    return a < 1.0f ? 0.5f + 0.5f * e : q;
}

/* Copies w <= 16 floats to a 16-float block, zero-padded. */
static HPJ__INLINE void hpj__ld16(float *t, const float *x, int w) {
    int l;
    if (w == 16)
        for (l = 0; l < 16; ++l) t[l] = x[l];
    else
        for (l = 0; l < 16; ++l) t[l] = l < w ? x[l] : 0.0f;
}
static HPJ__INLINE void hpj__st16(float *y, const float *t, int w) {
    int l;
    if (w == 16)
        for (l = 0; l < 16; ++l) y[l] = t[l];
    else
        for (l = 0; l < 16; ++l)
            if (l < w) y[l] = t[l];
}
/* t[l] = sqrt(t[l]) for 16 floats (correctly rounded, so the same bits on
   every path; the intrinsics only exist because sqrtf's errno keeps GCC
   from vectorizing it). */
static HPJ__INLINE void hpj__sqrt16(float *t) {
#if defined(HPJ__GEMM_AVX512)
    _mm512_storeu_ps(t, _mm512_maskz_sqrt_ps((__mmask16)0xFFFF, _mm512_loadu_ps(t)));
#elif defined(HPJ__GEMM_AVX2)
    _mm256_storeu_ps(t, _mm256_sqrt_ps(_mm256_loadu_ps(t)));
    _mm256_storeu_ps(t + 8, _mm256_sqrt_ps(_mm256_loadu_ps(t + 8)));
#else
    int l;
    for (l = 0; l < 16; ++l) t[l] = sqrtf(t[l]);
#endif
}

HPJDEF void hpj_gelu_forward(float *out, const float *inp, size_t n) {
    int64_t b, nb = ((int64_t)n + 15) / 16;
    HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 64))
    for (b = 0; b < nb; ++b) {
        float t[16];
        int l, w = (int)HPJ__MIN((int64_t)16, (int64_t)n - 16 * b);
        hpj__ld16(t, inp + 16 * b, w);
        for (l = 0; l < 16; ++l) t[l] = t[l] * hpj__ncdf(t[l]);
        hpj__st16(out + 16 * b, t, w);
    }
}

HPJDEF void hpj_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    int64_t b, nb = ((int64_t)n + 15) / 16;
    /* out = x Phi(x): dout/dx = Phi(x) + x phi(x) */
    HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 64))
    for (b = 0; b < nb; ++b) {
        float x[16], g[16], d[16];
        int l, w = (int)HPJ__MIN((int64_t)16, (int64_t)n - 16 * b);
        hpj__ld16(x, inp + 16 * b, w);
        hpj__ld16(g, dout + 16 * b, w);
        hpj__ld16(d, dinp + 16 * b, w);
        for (l = 0; l < 16; ++l) {
            float pdf = 0.3989422804014327f * hpj__expf(-0.5f * x[l] * x[l]);
            d[l] += g[l] * (hpj__ncdf(x[l]) + x[l] * pdf);
        }
        hpj__st16(dinp + 16 * b, d, w);
    }
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

HPJDEF void hpj_dropout_forward(float *out, uint8_t *mask, const float *inp, size_t n, float p, uint64_t seed,
                                uint64_t step, uint64_t salt) {
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
            int keep = hpj__hash_uniform(key, (uint64_t)i) >= p;
            out[i] = keep ? inp[i] * scale : 0.0f;
            if (mask) mask[i] = (uint8_t)keep;
        }
    }
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

HPJDEF void hpj_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gamma,
                                  const float *beta, int N, int D, float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        const float *x = inp + (ptrdiff_t)i * D;
        float *y = out + (ptrdiff_t)i * D;
        float mu = hpj__sum(x, D) / (float)D, var, rs, acc[16];
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
        var = hpj__sum(acc, 16) / (float)D;
        rs = 1.0f / sqrtf(var + eps);
        if (mean) mean[i] = mu;
        if (rstd) rstd[i] = rs;
        HPJ__OMP(simd)
        for (j = 0; j < D; ++j) {
            float v = (x[j] - mu) * rs;
            if (gamma) v *= gamma[j];
            if (beta) v += beta[j];
            y[j] = v;
        }
    }
}

HPJDEF void hpj_layernorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D) {
    int i;
    if (N <= 0 || D <= 0) return;
    /* out = xhat gamma + beta, xhat = (x - mean) rstd */
    if (dinp) {
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (i = 0; i < N; ++i) {
            const float *x = inp + (ptrdiff_t)i * D, *dy = dout + (ptrdiff_t)i * D;
            float *dx = dinp + (ptrdiff_t)i * D;
            float mu = mean[i], rs = rstd[i], ag[16], agx[16], mg, mgx;
            int j = 0, l;
            for (l = 0; l < 16; ++l) ag[l] = agx[l] = 0.0f;
            for (; j + 16 <= D; j += 16)
                for (l = 0; l < 16; ++l) {
                    float g = gamma ? dy[j + l] * gamma[j + l] : dy[j + l];
                    float xh = (x[j + l] - mu) * rs;
                    ag[l] += g;
                    agx[l] = HPJ__FMAF(g, xh, agx[l]);
                }
            for (l = 0; j + l < D; ++l) {
                float g = gamma ? dy[j + l] * gamma[j + l] : dy[j + l];
                float xh = (x[j + l] - mu) * rs;
                ag[l] += g;
                agx[l] = HPJ__FMAF(g, xh, agx[l]);
            }
            mg = hpj__sum(ag, 16) / (float)D;
            mgx = hpj__sum(agx, 16) / (float)D;
            HPJ__OMP(simd)
            for (j = 0; j < D; ++j) {
                float g = gamma ? dy[j] * gamma[j] : dy[j];
                float xh = (x[j] - mu) * rs;
                dx[j] += rs * (g - mg - xh * mgx);
            }
        }
    }
    if (dgamma || dbeta) {
        int nb = (D + 15) / 16, jb;
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (jb = 0; jb < nb; ++jb) {
            double sg[16], sb[16];
            int j0 = jb * 16, w = HPJ__MIN(16, D - j0), r, j;
            for (j = 0; j < 16; ++j) sg[j] = sb[j] = 0.0;
            for (r = 0; r < N; ++r) {
                const float *x = inp + (ptrdiff_t)r * D + j0, *dy = dout + (ptrdiff_t)r * D + j0;
                float mu = mean[r], rs = rstd[r];
                HPJ__OMP(simd)
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

HPJDEF void hpj_batchnorm_forward_train(float *out, float *mean, float *rstd, float *running_mean,
                                        float *running_var, const float *inp, const float *gamma,
                                        const float *beta, int N, int D, float momentum, float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
    /* per-channel statistics in double, in row order */
    {
        int nb = (D + 15) / 16, jb;
        HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
        for (jb = 0; jb < nb; ++jb) {
            double s[16], q[16];
            int j0 = jb * 16, w = HPJ__MIN(16, D - j0), r, c;
            for (c = 0; c < 16; ++c) s[c] = q[c] = 0.0;
            for (r = 0; r < N; ++r) {
                const float *x = inp + (ptrdiff_t)r * D + j0;
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) s[c] += x[c];
            }
            for (c = 0; c < w; ++c) s[c] /= N;
            for (r = 0; r < N; ++r) {
                const float *x = inp + (ptrdiff_t)r * D + j0;
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) {
                    double d = x[c] - s[c];
                    q[c] += d * d;
                }
            }
            for (c = 0; c < w; ++c) {
                double var = q[c] / N;
                mean[j0 + c] = (float)s[c];
                rstd[j0 + c] = (float)(1.0 / sqrt(var + eps));
                if (running_mean) running_mean[j0 + c] = (1.0f - momentum) * running_mean[j0 + c] + momentum * (float)s[c];
                if (running_var && N > 1)
                    running_var[j0 + c] = (1.0f - momentum) * running_var[j0 + c] + momentum * (float)(q[c] / (N - 1));
            }
        }
    }
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        const float *x = inp + (ptrdiff_t)i * D;
        float *y = out + (ptrdiff_t)i * D;
        int c;
        HPJ__OMP(simd)
        for (c = 0; c < D; ++c) {
            float v = (x[c] - mean[c]) * rstd[c];
            if (gamma) v *= gamma[c];
            if (beta) v += beta[c];
            y[c] = v;
        }
    }
}

HPJDEF void hpj_batchnorm_forward_eval(float *out, const float *inp, const float *gamma, const float *beta,
                                       const float *running_mean, const float *running_var, int N, int D,
                                       float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        const float *x = inp + (ptrdiff_t)i * D;
        float *y = out + (ptrdiff_t)i * D;
        int c;
        for (c = 0; c < D; ++c) {
            float v = (x[c] - running_mean[c]) / sqrtf(running_var[c] + eps);
            if (gamma) v *= gamma[c];
            if (beta) v += beta[c];
            y[c] = v;
        }
    }
}

HPJDEF void hpj_batchnorm_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                                   const float *gamma, const float *mean, const float *rstd, int N, int D) {
    int nb = (D + 15) / 16, jb;
    if (N <= 0 || D <= 0) return;
    /* out = xhat gamma + beta, xhat = (x - mean_c) rstd_c over the batch */
    HPJ__OMP(parallel for schedule(static) if ((int64_t)N * D >= HPJ__PAR_ELEMS))
    for (jb = 0; jb < nb; ++jb) {
        double sd[16], sdx[16];
        int j0 = jb * 16, w = HPJ__MIN(16, D - j0), r, c;
        for (c = 0; c < 16; ++c) sd[c] = sdx[c] = 0.0;
        for (r = 0; r < N; ++r) {
            const float *x = inp + (ptrdiff_t)r * D + j0, *dy = dout + (ptrdiff_t)r * D + j0;
            HPJ__OMP(simd)
            for (c = 0; c < w; ++c) {
                sd[c] += dy[c];
                sdx[c] += (double)dy[c] * ((x[c] - mean[j0 + c]) * rstd[j0 + c]);
            }
        }
        for (c = 0; c < w; ++c) {
            if (dgamma) dgamma[j0 + c] += (float)sdx[c];
            if (dbeta) dbeta[j0 + c] += (float)sd[c];
        }
        if (dinp) {
            float md[16], mdx[16], k[16];
            for (c = 0; c < w; ++c) {
                md[c] = (float)(sd[c] / N);
                mdx[c] = (float)(sdx[c] / N);
                k[c] = (gamma ? gamma[j0 + c] : 1.0f) * rstd[j0 + c];
            }
            for (r = 0; r < N; ++r) {
                const float *x = inp + (ptrdiff_t)r * D + j0, *dy = dout + (ptrdiff_t)r * D + j0;
                float *dx = dinp + (ptrdiff_t)r * D + j0;
                HPJ__OMP(simd)
                for (c = 0; c < w; ++c) {
                    float xh = (x[c] - mean[j0 + c]) * rstd[j0 + c];
                    dx[c] += k[c] * (dy[c] - md[c] - xh * mdx[c]);
                }
            }
        }
    }
}

/* ==== nn: GINE message passing ==== */

HPJDEF void hpj_gine_forward(float *out, const float *h, const float *e, const int32_t *rowptr, const int32_t *col,
                             int N, int D, float eps) {
    int i;
    if (N <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)rowptr[N] * D + (int64_t)N * D >= HPJ__PAR_ELEMS))
    for (i = 0; i < N; ++i) {
        float *o = out + (ptrdiff_t)i * D;
        const float *hi = h + (ptrdiff_t)i * D;
        float s = 1.0f + eps;
        int j, k;
        HPJ__OMP(simd)
        for (j = 0; j < D; ++j) o[j] = s * hi[j];
        for (k = rowptr[i]; k < rowptr[i + 1]; ++k) {
            const float *hj = h + (ptrdiff_t)col[k] * D;
            if (e) {
                const float *ek = e + (ptrdiff_t)k * D;
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
    if (deps) {
        double part[HPJ__NBLK], tot = 0.0;
        int b;
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
}

HPJDEF hpj_status hpj_csr_reverse(int32_t *rev, const int32_t *rowptr, const int32_t *col, int N) {
    int i;
    for (i = 0; i < N; ++i) {
        int32_t k;
        for (k = rowptr[i]; k < rowptr[i + 1]; ++k) {
            int32_t j = col[k], lo, hi;
            if (j < 0 || j >= N) {
                memset(rev, 0, sizeof(int32_t) * (size_t)rowptr[N]);
                return hpj__fail(HPJ_ERR_INPUT, "csr_reverse: entry %d of row %d has column %d outside 0..%d", (int)k, i,
                                 (int)j, N - 1);
            }
            lo = rowptr[j];
            hi = rowptr[j + 1];
            while (lo < hi) { /* binary search for i in row j */
                int32_t mid = lo + (hi - lo) / 2;
                if (col[mid] < i) lo = mid + 1;
                else hi = mid;
            }
            if (lo >= rowptr[j + 1] || col[lo] != i) {
                memset(rev, 0, sizeof(int32_t) * (size_t)rowptr[N]);
                return hpj__fail(HPJ_ERR_INPUT, "csr_reverse: edge %d -> %d has no reverse %d -> %d (not symmetric)", i,
                                 (int)j, (int)j, i);
            }
            rev[k] = lo;
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
    int s;
    if (S <= 0 || D <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)segptr[S] * D >= HPJ__PAR_ELEMS))
    for (s = 0; s < S; ++s) {
        float *o = out + (ptrdiff_t)s * D;
        int32_t r0 = segptr[s], r1 = segptr[s + 1], r;
        int j;
        for (j = 0; j < D; ++j) o[j] = 0.0f;
        for (r = r0; r < r1; ++r) {
            const float *x = inp + (ptrdiff_t)r * D;
            HPJ__OMP(simd)
            for (j = 0; j < D; ++j) o[j] += x[j];
        }
        if (r1 > r0) {
            float inv = 1.0f / (float)(r1 - r0);
            for (j = 0; j < D; ++j) o[j] *= inv;
        }
    }
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
            const float *x = inp + (ptrdiff_t)idx[k] * D;
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

/* Row buffer of the backward; longer rows recompute the dot products. */
#define HPJ__ATT_ROWBUF 256

HPJDEF void hpj_attention_forward(float *out, float *att, const float *qkv, const uint8_t *keymask,
                                  const float *adj, int B, int T, int D, int H) {
    int bh, hd = H > 0 ? D / H : 0;
    float scale = 1.0f / sqrtf((float)hd);
    ptrdiff_t ld = 3 * (ptrdiff_t)D;
    if (B <= 0 || T <= 0 || hd <= 0) return;
    HPJ__OMP(parallel for schedule(static) if ((int64_t)B * H * T * T * hd >= HPJ__PAR_ELEMS))
    for (bh = 0; bh < B * H; ++bh) {
        int b = bh / H, h = bh % H, i, j;
        const float *base = qkv + (ptrdiff_t)b * T * ld;
        const uint8_t *km = keymask ? keymask + (ptrdiff_t)b * T : NULL;
        for (i = 0; i < T; ++i) {
            const float *q = base + i * ld + h * hd;
            float *p = att + ((ptrdiff_t)bh * T + i) * T;
            float *o = out + ((ptrdiff_t)b * T + i) * D + h * hd;
            float mx = 0.0f, sum = 0.0f, inv;
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
            for (j = 0; j < T; ++j) {
                if (km && !km[j]) continue;
                p[j] = expf(p[j] - mx);
                sum += p[j];
            }
            inv = 1.0f / sum;
            for (j = 0; j < T; ++j) {
                float w;
                if (km && !km[j]) continue;
                p[j] *= inv;
                w = adj ? p[j] * adj[((ptrdiff_t)b * T + i) * T + j] : p[j];
                hpj__axpy(o, w, base + j * ld + 2 * D + h * hd, hd);
            }
        }
    }
}

HPJDEF void hpj_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                                   const uint8_t *keymask, const float *adj, int B, int T, int D, int H) {
    int bh, hd = H > 0 ? D / H : 0;
    float scale = 1.0f / sqrtf((float)hd);
    ptrdiff_t ld = 3 * (ptrdiff_t)D;
    if (B <= 0 || T <= 0 || hd <= 0) return;
    /* out_i = sum_j P_ij a_ij v_j, P_i = softmax(s_i), s_ij = scale q_i.k_j:
       dv_j += P_ij a_ij dout_i ; dP_ij = a_ij dout_i.v_j ;
       ds_ij = P_ij (dP_ij - sum_l P_il dP_il) ; dq_i += scale ds_ij k_j ;
       dk_j += scale ds_ij q_i. Each (b, h) is one thread's, in i order. */
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

HPJDEF void hpj_block_forward(float *out, hpj_block_cache *c, const float *inp, const hpj_block_params *p,
                              const uint8_t *keymask, const float *adj, int B, int T, int D, int H, int F, int act) {
    int N = B * T;
    size_t nd = (size_t)N * D;
    if (N <= 0) return;
    hpj_layernorm_forward(c->ln1, c->ln1_mean, c->ln1_rstd, inp, p->ln1_g, p->ln1_b, N, D, 1e-5f);
    hpj_linear_forward(c->qkv, c->ln1, p->Wqkv, p->bqkv, N, D, 3 * D);
    hpj_attention_forward(c->atty, c->att, c->qkv, keymask, adj, B, T, D, H);
    hpj_linear_forward(c->x1, c->atty, p->Wo, p->bo, N, D, D);
    hpj__add_inplace(c->x1, inp, nd);
    hpj_layernorm_forward(c->ln2, c->ln2_mean, c->ln2_rstd, c->x1, p->ln2_g, p->ln2_b, N, D, 1e-5f);
    hpj_linear_forward(c->fch, c->ln2, p->W1, p->b1, N, D, F);
    if (act == HPJ_ACT_GELU) hpj_gelu_forward(c->fch_act, c->fch, (size_t)N * F);
    else hpj_relu_forward(c->fch_act, c->fch, (size_t)N * F);
    hpj_linear_forward(out, c->fch_act, p->W2, p->b2, N, F, D);
    hpj__add_inplace(out, c->x1, nd);
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
    if (N <= 0 || (!dinp && !dp)) return;
    /* y = x1 + fch_act W2^T + b2 */
    memcpy(dx1, dout, nd * sizeof(float));
    hpj_gemm(0, 0, N, F, D, 1.0f, dout, D, p->W2, F, 0.0f, dF1, F);
    if (dp) hpj_linear_backward(NULL, dp->W2, dp->b2, dout, c->fch_act, p->W2, N, F, D);
    /* fch_act = act(fch) */
    memset(dF2, 0, nf * sizeof(float));
    if (act == HPJ_ACT_GELU) hpj_gelu_backward(dF2, dF1, c->fch, nf);
    else hpj_relu_backward(dF2, dF1, c->fch_act, nf);
    /* fch = ln2 W1^T + b1 */
    hpj_gemm(0, 0, N, D, F, 1.0f, dF2, F, p->W1, D, 0.0f, dD, D);
    if (dp) hpj_linear_backward(NULL, dp->W1, dp->b1, dF2, c->ln2, p->W1, N, D, F);
    /* ln2 = LN(x1) */
    hpj_layernorm_backward(dx1, dp ? dp->ln2_g : NULL, dp ? dp->ln2_b : NULL, dD, c->x1, p->ln2_g, c->ln2_mean,
                           c->ln2_rstd, N, D);
    /* x1 = x + atty Wo^T + bo */
    hpj_gemm(0, 0, N, D, D, 1.0f, dx1, D, p->Wo, D, 0.0f, dD, D);
    if (dp) hpj_linear_backward(NULL, dp->Wo, dp->bo, dx1, c->atty, p->Wo, N, D, D);
    /* atty = attention(qkv) */
    memset(dqkv, 0, 3 * nd * sizeof(float));
    hpj_attention_backward(dqkv, dD, c->qkv, c->att, keymask, adj, B, T, D, H);
    /* qkv = ln1 Wqkv^T + bqkv */
    if (dp) hpj_linear_backward(NULL, dp->Wqkv, dp->bqkv, dqkv, c->ln1, p->Wqkv, N, D, 3 * D);
    {
        hpj_gemm(0, 0, N, D, 3 * D, 1.0f, dqkv, 3 * D, p->Wqkv, D, 0.0f, dD, D);
        /* ln1 = LN(x) ; and the residual x1 = x + ... */
        hpj_layernorm_backward(dinp, dp ? dp->ln1_g : NULL, dp ? dp->ln1_b : NULL, dD, inp, p->ln1_g, c->ln1_mean,
                               c->ln1_rstd, N, D);
        if (dinp) hpj__add_inplace(dinp, dx1, nd);
    }
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

HPJDEF void hpj_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                          float beta2, float eps, float weight_decay, int decoupled, int64_t t) {
    int64_t b, nb = ((int64_t)n + 15) / 16;
    double bc1 = 1.0 - pow((double)beta1, (double)t), bc2 = 1.0 - pow((double)beta2, (double)t);
    float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2);
    float gwd = decoupled ? 0.0f : weight_decay, decay = decoupled ? (float)(1.0 - (double)lr * weight_decay) : 1.0f;
    float omb1 = (float)(1.0 - (double)beta1), omb2 = (float)(1.0 - (double)beta2);
    HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 16))
    for (b = 0; b < nb; ++b) {
        float tp[16], tg[16], tm[16], tv[16], ts[16];
        int l, w = (int)HPJ__MIN((int64_t)16, (int64_t)n - 16 * b);
        hpj__ld16(tp, p + 16 * b, w);
        hpj__ld16(tg, g + 16 * b, w);
        hpj__ld16(tm, m + 16 * b, w);
        hpj__ld16(tv, v + 16 * b, w);
        for (l = 0; l < 16; ++l) {
            float gi = tg[l] + gwd * tp[l]; /* Adam: g += wd p */
            tp[l] *= decay;                 /* AdamW: p *= 1 - lr wd */
            tm[l] = beta1 * tm[l] + omb1 * gi;
            tv[l] = beta2 * tv[l] + omb2 * (gi * gi);
            ts[l] = tv[l];
        }
        hpj__sqrt16(ts);
        for (l = 0; l < 16; ++l) tp[l] -= step * (tm[l] / (ts[l] / bc2s + eps));
        hpj__st16(p + 16 * b, tp, w);
        hpj__st16(m + 16 * b, tm, w);
        hpj__st16(v + 16 * b, tv, w);
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

HPJDEF double hpj_grad_clip(float *g, size_t n, float max_norm) {
    double part[HPJ__NBLK], tot = 0.0, norm;
    int64_t nn = (int64_t)n;
    int b;
    HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
    for (b = 0; b < HPJ__NBLK; ++b) {
        int64_t i0 = nn * b / HPJ__NBLK, i1 = nn * (b + 1) / HPJ__NBLK, i;
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int l;
        for (i = i0; i + 8 <= i1; i += 8)
            for (l = 0; l < 8; ++l) acc[l] += (double)g[i + l] * g[i + l];
        for (l = 0; i + l < i1; ++l) acc[l] += (double)g[i + l] * g[i + l];
        part[b] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
    for (b = 0; b < HPJ__NBLK; ++b) tot += part[b];
    norm = sqrt(tot);
    if (max_norm > 0.0f && norm > max_norm && isfinite(norm)) {
        float f = (float)(max_norm / (norm + 1e-6));
        int64_t i;
        HPJ__OMP(parallel for schedule(static) if (nn >= HPJ__PAR_ELEMS))
        for (i = 0; i < nn; ++i) g[i] *= f;
    }
    return norm;
}

/* ==== nn: EMA ==== */

HPJDEF void hpj_ema_update(float *target, const float *online, size_t n, float momentum) {
    int64_t b, nb = ((int64_t)n + 15) / 16;
    float a = 1.0f - momentum;
    HPJ__OMP(parallel for schedule(static) if (nb >= HPJ__PAR_ELEMS / 16))
    for (b = 0; b < nb; ++b) {
        float t[16], o[16];
        int l, w = (int)HPJ__MIN((int64_t)16, (int64_t)n - 16 * b);
        hpj__ld16(t, target + 16 * b, w);
        hpj__ld16(o, online + 16 * b, w);
        for (l = 0; l < 16; ++l) t[l] = momentum * t[l] + a * o[l];
        hpj__st16(target + 16 * b, t, w);
    }
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

#endif /* HPJ_WIP_NN_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
