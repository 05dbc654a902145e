/* wip/nn.h - the nn module of hpjepa.h while it is developed in parallel.
   It is folded into hpjepa.h (API part into the API block, implementation
   part into the implementation block) when done. Include it right after
   hpjepa.h; with HPJEPA_IMPLEMENTATION defined it also compiles the code. */
#ifndef HPJ_WIP_NN_API
#define HPJ_WIP_NN_API
/* ==== nn: API ==== */

#endif /* HPJ_WIP_NN_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_NN_IMPL
#define HPJ_WIP_NN_IMPL
/* ==== nn: implementation ==== */

#endif /* HPJ_WIP_NN_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
