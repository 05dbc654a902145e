/* libFuzzer harness of the config parser (hpj_config_parse, `key = value`
   lines). Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Besides "no crash, no undefined behaviour, no hang", it checks the
   parser's contract on every input and traps when it is broken:
   - failure: HPJ_ERR_FORMAT and a one-line reason that starts with the
     input's name and line ("fuzz.cfg:3: ...");
   - success: hpj_config_check returns a status (never crashes); the
     formatted config parses back to the same values, floats bit for bit
     (a checkpoint stores its config as this text: a value that loaded
     must load again, as edge_drop = 0.99 once did not), passes the check
     if the original did, and formats to the same text again. */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <string.h>

#define FUZZ_NAME "fuzz.cfg"
#define FUZZ_TAG "fuzz_config"
#include "fuzz.h"

/* The same settings: every field alike (floats bit for bit), capacities
   and targets past the L resolutions aside (the text holds only L). Both
   started from hpj_config_default, which zeroes the struct, padding too. */
static int same_config(const hpj_config *a, const hpj_config *b) {
    hpj_config x = *a, y = *b;
    int l;
    for (l = x.L > 0 ? x.L : 0; l < HPJ_MAX_RES; ++l) x.K[l] = x.M[l] = y.K[l] = y.M[l] = 0;
    return memcmp(&x, &y, sizeof x) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char t1[8192], t2[8192];
    hpj_config c, back;
    hpj_status st, checked;
    size_t n1, n2;
    hpj_clear_error();
    hpj_config_default(&c);
    st = hpj_config_parse(&c, (const char *)data, size, FUZZ_NAME);
    if (st != HPJ_OK) {
        FUZZ_ASSERT(st == HPJ_ERR_FORMAT);
        fuzz_check_reason(FUZZ_NAME ":");
        return 0;
    }
    checked = hpj_config_check(&c);
    FUZZ_ASSERT(checked == HPJ_OK || checked == HPJ_ERR_INPUT);
    n1 = hpj_config_format(&c, t1, sizeof t1);
    FUZZ_ASSERT(n1 < sizeof t1);
    hpj_config_default(&back);
    st = hpj_config_parse(&back, t1, n1, "formatted");
    FUZZ_ASSERT(st == HPJ_OK);
    FUZZ_ASSERT(same_config(&c, &back));
    if (checked == HPJ_OK) FUZZ_ASSERT(hpj_config_check(&back) == HPJ_OK);
    n2 = hpj_config_format(&back, t2, sizeof t2);
    FUZZ_ASSERT(n1 == n2 && memcmp(t1, t2, n1) == 0);
    return 0;
}
