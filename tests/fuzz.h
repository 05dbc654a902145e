/* Shared by the libFuzzer harnesses tests/fuzz_*.c (built by tools/fuzz.sh):
   the contract check that traps, and the checks every reader's failure
   must pass. Define FUZZ_TAG (the harness name) before including this,
   after hpjepa.h. */
#ifndef HPJ_FUZZ_H
#define HPJ_FUZZ_H
#include <stdio.h>
#include <string.h>

/* Traps (a crash libFuzzer records) when a contract is broken. */
#define FUZZ_ASSERT(c)                                                                  \
    do {                                                                                \
        if (!(c)) {                                                                     \
            fprintf(stderr, "%s: broken contract: %s (reason \"%s\")\n", FUZZ_TAG, #c, \
                    hpj_last_error());                                                  \
            __builtin_trap();                                                           \
        }                                                                               \
    } while (0)

static int all_zero(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i)
        if (c[i]) return 0;
    return 1;
}

/* The reason of a failure is one printable line that starts with prefix
   (the name of the input it is about); no check when prefix is NULL. */
static void fuzz_check_reason(const char *prefix) {
    const char *e = hpj_last_error(), *c;
    FUZZ_ASSERT(e[0] != 0);
    for (c = e; *c; ++c) FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7F);
    if (prefix) FUZZ_ASSERT(strncmp(e, prefix, strlen(prefix)) == 0);
}
#endif
