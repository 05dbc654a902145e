/* libFuzzer harness of the checkpoint reader (hpj_model_deserialize).
   Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   A random change to a checkpoint almost always breaks its CRC, which the
   reader checks first; so the harness writes the right CRC into the last
   four bytes of each input before reading it, and the fuzzer reaches the
   header, the config text and the tensor sizes behind it. (A second read
   of the input as given, CRC and all, must fail or agree with the first.)
   tests/fuzz.sh writes seeds: small checkpoints from `hpjepa pretrain`.

   Besides "no crash, no leak, no undefined behaviour, no hang", it checks
   the reader's contract and traps when it is broken:
   - failure: a failure status, a zeroed model, and a one-line reason that
     starts with the input's name ("fuzz.ckpt: ...");
   - success: the parameters are finite, and writing the model back and
     reading that gives the same bytes when written again (the reader is
     a fixed point of its own writer's output). */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz.ckpt"
#define FUZZ_TAG "fuzz_ckpt"
#include "fuzz.h"

/* Reads buf; on failure checks the contract and returns 0. */
static int read_ckpt(hpj_model *m, const unsigned char *buf, size_t len) {
    hpj_status st;
    hpj_clear_error();
    st = hpj_model_deserialize(m, buf, len, FUZZ_NAME);
    if (st != HPJ_OK) {
        FUZZ_ASSERT(st == HPJ_ERR_FORMAT || st == HPJ_ERR_NOMEM);
        fuzz_check_reason(FUZZ_NAME ":");
        FUZZ_ASSERT(all_zero(m, sizeof *m));
        return 0;
    }
    return 1;
}

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_model m, again;
    unsigned char *buf, *w1 = NULL, *w2 = NULL;
    size_t n1 = 0, n2 = 0, i;
    int as_given;
    /* as given: a bad CRC must be rejected like any other fault */
    as_given = read_ckpt(&m, data, size);
    if (as_given) hpj_model_free(&m);
    if (size < 4) return 0;
    buf = (unsigned char *)malloc(size);
    if (!buf) return 0;
    memcpy(buf, data, size);
    put_u32(buf + size - 4, hpj_crc32(buf, size - 4));
    if (!read_ckpt(&m, buf, size)) {
        FUZZ_ASSERT(!as_given); /* the same bytes cannot both load and fail */
        free(buf);
        return 0;
    }
    for (i = 0; i < m.num_params; ++i) FUZZ_ASSERT(isfinite(m.params[i]));
    {
        int with_opt = buf[12] != 0; /* the flags word: optimizer state present */
        FUZZ_ASSERT(hpj_model_serialize(&m, with_opt, &w1, &n1) == HPJ_OK);
        FUZZ_ASSERT(read_ckpt(&again, w1, n1));
        FUZZ_ASSERT(hpj_model_serialize(&again, with_opt, &w2, &n2) == HPJ_OK);
        FUZZ_ASSERT(n1 == n2 && memcmp(w1, w2, n1) == 0);
        hpj_model_free(&again);
    }
    hpj_free_buffer(w1);
    hpj_free_buffer(w2);
    hpj_model_free(&m);
    free(buf);
    return 0;
}
