/* placeholder until the model module is folded in (wip/cmd_model.c holds the real commands) */
#include "cli.h"
int cmd_pretrain(int argc, char **argv) { (void)argc; cli_error(argv[0], "not implemented yet"); return 1; }
int cmd_embed(int argc, char **argv) { (void)argc; cli_error(argv[0], "not implemented yet"); return 1; }
int cmd_eval(int argc, char **argv) { (void)argc; cli_error(argv[0], "not implemented yet"); return 1; }
int cmd_bench_train(int argc, char **argv) { (void)argc; cli_error(argv[0], "not implemented yet"); return 1; }
