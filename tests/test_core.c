/* Tests of the core: status, rng, arena, graphs, METIS and TU readers. */
#include "test.h"
#include "../hpjepa.h"
#include <stdlib.h>
#include <string.h>

static void test_rng_streams(void) {
    hpj_rng a = hpj_rng_stream(1, 2, 3), b = hpj_rng_stream(1, 2, 3), c = hpj_rng_stream(1, 2, 4);
    int i, same = 0;
    for (i = 0; i < 100; ++i) {
        uint64_t x = hpj_rng_u64(&a), y = hpj_rng_u64(&b), z = hpj_rng_u64(&c);
        CHECK(x == y);
        same += (x == z);
    }
    CHECK(same == 0);
}

const test_case core_tests[] = {
    {"core.rng_streams", test_rng_streams},
};
const int core_tests_count = (int)(sizeof core_tests / sizeof core_tests[0]);
