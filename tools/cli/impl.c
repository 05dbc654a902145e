/* The one translation unit of the command-line program that holds the library. */
#define HPJEPA_IMPLEMENTATION
#include "../../hpjepa.h"
