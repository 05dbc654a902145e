/* libFuzzer harness of the config parser (hpj_config_parse, `key = value`
   lines). Built and run by tests/fuzz.sh (`make fuzz`) with clang
   -fsanitize=fuzzer,address,undefined; not part of `make test`.

   Besides "no crash, no undefined behaviour, no hang", it checks the
   parser's contract on every input and traps when it is broken:
   - failure: HPJ_ERR_FORMAT and a one-line reason that starts with the
     input's name and line ("fuzz.cfg:3: ...");
   - success: hpj_config_check returns a status (never crashes), and the
     formatted config parses back to the same formatted text (the parser
     is a fixed point of the formatter's output). */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <string.h>

#define FUZZ_NAME "fuzz.cfg"
#define FUZZ_TAG "fuzz_config"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char t1[8192], t2[8192];
    hpj_config c, back;
    hpj_status st;
    size_t n1, n2;
    hpj_clear_error();
    hpj_config_default(&c);
    st = hpj_config_parse(&c, (const char *)data, size, FUZZ_NAME);
    if (st != HPJ_OK) {
        FUZZ_ASSERT(st == HPJ_ERR_FORMAT);
        fuzz_check_reason(FUZZ_NAME ":");
        return 0;
    }
    st = hpj_config_check(&c);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_INPUT);
    n1 = hpj_config_format(&c, t1, sizeof t1);
    FUZZ_ASSERT(n1 < sizeof t1);
    hpj_config_default(&back);
    st = hpj_config_parse(&back, t1, n1, "formatted");
    FUZZ_ASSERT(st == HPJ_OK);
    n2 = hpj_config_format(&back, t2, sizeof t2);
    FUZZ_ASSERT(n1 == n2 && memcmp(t1, t2, n1) == 0);
    return 0;
}
