/* Tests of the nn module (filled in by the module's author). */
#include "test.h"
#include "../hpjepa.h"

const test_case nn_tests[] = {{0, 0}};
const int nn_tests_count = 0;
