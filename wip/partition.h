/* wip/partition.h - the partition module of hpjepa.h while it is developed in parallel.
   It is folded into hpjepa.h (API part into the API block, implementation
   part into the implementation block) when done. Include it right after
   hpjepa.h; with HPJEPA_IMPLEMENTATION defined it also compiles the code. */
#ifndef HPJ_WIP_PARTITION_API
#define HPJ_WIP_PARTITION_API
/* ==== partition: API ==== */

#endif /* HPJ_WIP_PARTITION_API */

#ifdef HPJEPA_IMPLEMENTATION
#ifndef HPJ_WIP_PARTITION_IMPL
#define HPJ_WIP_PARTITION_IMPL
/* ==== partition: implementation ==== */

#endif /* HPJ_WIP_PARTITION_IMPL */
#endif /* HPJEPA_IMPLEMENTATION */
