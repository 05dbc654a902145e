/* libFuzzer harness of the command-line program's own readers: the .npy
   reader (cli_read_npy) and the inputs of `hpjepa plot` (an eval report's
   graphs.csv, a pretrain loss log, an eval report's JSON). Built by
   the Makefile with the program's sources (all but main, tools/cli/hpjepa.c)
   and clang -fsanitize=fuzzer,address,undefined; make test runs it for
   seconds on tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Input: byte 0 picks the reader (b % 4: npy, quartiles, loss, sweep), the
   rest is the file's content, written to a temporary file that the
   command then reads as a user's file. Contract (traps when broken): the
   command returns 0 or 1 (never crashes, leaks or hangs), and a failed
   plot leaves no SVG behind. The reasons it prints are not checked here
   (the CLI tests check them). */
#define _POSIX_C_SOURCE 200809L
#include "../tools/cli/cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_TAG "fuzz_cli"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char in[64], svg[64];
    static const char *const ext[4] = {".npy", ".graphs.csv", ".csv", ".json"};
    FILE *f;
    int kind, rc;
    if (size < 1) return 0;
    kind = data[0] % 4;
    snprintf(in, sizeof in, "/tmp/fuzz_cli.%d%s", (int)getpid(), ext[kind]);
    snprintf(svg, sizeof svg, "/tmp/fuzz_cli.%d.svg", (int)getpid());
    if (!(f = fopen(in, "wb"))) return 0;
    if (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) { fclose(f); return 0; }
    fclose(f);
    remove(svg);
    if (kind == 0) {
        long long rows = -1, cols = -1;
        float *x = cli_read_npy("fuzz", in, &rows, &cols);
        if (x) FUZZ_ASSERT(rows >= 0 && cols >= 0);
        free(x);
    } else {
        char arg[80];
        char *argv[6];
        argv[0] = (char *)"plot";
        argv[1] = (char *)(kind == 1 ? "quartiles" : kind == 2 ? "loss" : "sweep");
        argv[2] = (char *)"--out";
        argv[3] = svg;
        snprintf(arg, sizeof arg, "%s%s", kind == 2 ? "" : "A=", in);
        argv[4] = arg;
        argv[5] = NULL;
        rc = cmd_plot(5, argv);
        FUZZ_ASSERT(rc == 0 || rc == 1);
        if (rc != 0) FUZZ_ASSERT(access(svg, F_OK) != 0);
    }
    remove(in);
    remove(svg);
    return 0;
}
