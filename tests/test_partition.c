/* Tests of the partition module (filled in by the module's author). */
#include "test.h"
#include "../hpjepa.h"

const test_case partition_tests[] = {{0, 0}};
const int partition_tests_count = 0;
