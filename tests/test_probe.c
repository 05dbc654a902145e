/* Tests of the probe module (filled in by the module's author). */
#include "test.h"
#include "../hpjepa.h"

const test_case probe_tests[] = {{0, 0}};
const int probe_tests_count = 0;
