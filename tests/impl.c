/* The one translation unit of the test suite that holds the library. */
#define HPJEPA_IMPLEMENTATION
#include "../hpjepa.h"
