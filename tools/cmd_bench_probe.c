/* placeholder until this subcommand lands; owned by its module's author */
#include "cli.h"
int cmd_bench_probe(int argc, char **argv) { (void)argc; cli_error(argv[0], "not implemented yet"); return 1; }
