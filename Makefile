# hpjepa.h - build, test, demo, bench.
#   make            the command-line program ./hpjepa and every example
#   make test       the whole test suite (see tests/run_all.sh)
#   make demo       pretrain + evaluate on the bundled synthetic set
#   make bench      benchmarks against the peer programs (METIS, OpenBLAS, PyTorch, scikit-learn)
#   make fuzz       libFuzzer runs of every reader of outside input, the partitioner, the tokenizer and the model
#                   (clang; minutes each, where make test gives each harness seconds)
#   make mpi        ./hpjepa-mpi: eval's folds spread over MPI processes (needs mpicc)
CC      ?= cc
CXX     ?= g++
ARCH    ?= -march=native
OPT     ?= -O2
OMP     ?= -fopenmp
# a user's build shows warnings; the test builds (make test) make them errors.
# Without OpenMP (make OMP=) the header's parallel pragmas are unknown: quiet.
NOOMP   := $(if $(OMP),,-Wno-unknown-pragmas)
WARN    := -Wall -Wextra -Wshadow $(NOOMP)
WERROR  := -Wall -Wextra -Wshadow -Werror
CSTD    := -std=c99
CFLAGS  := $(CSTD) $(OPT) -g $(ARCH) $(WARN) $(OMP)
TFLAGS  := $(CSTD) $(OPT) -g $(ARCH) $(WERROR) $(NOOMP) $(OMP)
LDLIBS  := -lm
B       := build

HDRS     := hpjepa.h
# The compiler and flags of the last build, in build/flags: `make CC=clang`
# or `make OMP=` after a `make` rebuilds what they change (the files'
# times alone would say "Nothing to be done").
FLAGS    := $(B)/flags
FLAGS_NOW := $(CC) $(CFLAGS) $(TFLAGS) $(LDLIBS)
ifneq ($(FLAGS_NOW),$(shell cat $(FLAGS) 2>/dev/null))
$(shell mkdir -p $(B) && printf '%s\n' '$(FLAGS_NOW)' > $(FLAGS))
endif
CLI_SRC  := $(wildcard tools/cli/*.c)
TEST_SRC := tests/impl.c $(wildcard tests/test_*.c)
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))

.PHONY: all examples test test-builds fuzz-builds demo bench fuzz mpi clean
all: hpjepa examples

hpjepa: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(FLAGS)
	$(CC) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)

# ./hpjepa-mpi: the program with eval's (seed, fold) pretrainings spread over
# MPI processes (tools/mpi/hpjepa_mpi.c wraps the program's main). Not part of
# `make`, which needs no MPI; make test builds and runs it where mpicc exists.
MPICC ?= mpicc
MPI_FOUND := $(shell command -v $(MPICC) 2>/dev/null)
MPI_SRC := tools/mpi/hpjepa_mpi.c $(filter-out tools/cli/hpjepa.c,$(CLI_SRC))
MPI_NEEDS := $(CLI_SRC) tools/mpi/hpjepa_mpi.c tools/cli/cli.h $(HDRS) $(FLAGS)
MPI_MISSING := echo "make mpi: $(MPICC) not found; install MPI (Debian, Ubuntu: apt-get install openmpi-bin libopenmpi-dev; \
    Fedora: dnf install openmpi-devel) or name the compiler wrapper: make mpi MPICC=..." >&2; exit 1
mpi: hpjepa-mpi
hpjepa-mpi: $(MPI_NEEDS)
	@$(if $(MPI_FOUND),true,$(MPI_MISSING))
	$(MPICC) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -o $@ $(MPI_SRC) $(LDLIBS)

# the examples include "hpjepa.h" as a user's program does: -I. finds it
examples: $(EXAMPLES)
$(B)/examples/%: examples/%.c $(HDRS) $(FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I. -o $@ $< $(LDLIBS)

# the suite: optimised, sanitised, without OpenMP
$(B)/tests: $(TEST_SRC) tests/test.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(TFLAGS) -o $@ $(TEST_SRC) $(LDLIBS)
$(B)/tests-asan: $(TEST_SRC) tests/test.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O1 -g $(ARCH) $(WERROR) $(NOOMP) $(OMP) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -o $@ $(TEST_SRC) $(LDLIBS)
# the command-line program as the CLI checks run it (warnings are errors), and
# under ASan + UBSan (the CLI checks run with it too)
$(B)/hpjepa: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(TFLAGS) -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)
$(B)/hpjepa-asan: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O1 -g $(ARCH) $(WERROR) $(NOOMP) $(OMP) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)
$(B)/hpjepa-mpi: $(MPI_NEEDS)
	@mkdir -p $(B)
	$(MPICC) $(TFLAGS) -D_POSIX_C_SOURCE=200809L -o $@ $(MPI_SRC) $(LDLIBS)
# the reference build (-DHPJ_REFERENCE: the fast part compiled out) runs the
# whole unit suite too; its program trains bits of its own, the same for any
# thread count, and embeds within a stated tolerance of the fast build's
# (tests/cli_model.inc.sh)
$(B)/tests-ref: $(TEST_SRC) tests/test.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(TFLAGS) -DHPJ_REFERENCE -o $@ $(TEST_SRC) $(LDLIBS)
$(B)/hpjepa-ref: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(TFLAGS) -DHPJ_REFERENCE -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)
$(B)/tests-noomp: $(TEST_SRC) tests/test.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(CSTD) $(OPT) -g $(ARCH) $(WERROR) -Wno-unknown-pragmas -o $@ $(TEST_SRC) $(LDLIBS)
# the header's implementation must compile as C++ (with the SIMD kernels
# of ARCH) and as strict C99, and
# with the embedded options
$(B)/check-cxx.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CXX) -x c++ -O2 $(ARCH) $(WERROR) -c -o $@ tests/impl.c
$(B)/check-pedantic.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CC) -std=c99 -pedantic -O1 $(WERROR) -c -o $@ tests/impl.c
$(B)/check-embedded.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CC) -std=c99 -pedantic -O1 $(WERROR) -DHPJ_NO_STDIO -DHPJ_STATIC -Wno-unused-function \
	    '-DHPJ_MALLOC(c,s)=malloc(s)' '-DHPJ_FREE(c,p)=free(p)' -include stdlib.h -c -o $@ tests/impl.c

# a minimal compiler: tcc (no OpenMP, no intrinsics, no optimiser) builds the
# unit suite, the program and the examples with -Wall -Werror, and the unit
# suite runs (tests/run_all.sh); skipped when tcc is not installed (.ci/run
# installs it)
TCC ?= $(shell command -v tcc 2>/dev/null)
TCC_BUILDS := $(if $(TCC),$(B)/tests-tcc $(B)/check-tcc-cli $(B)/hpjepa-portable)
$(B)/tests-tcc: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(TCC) -Wall -Werror -o $@ $(TEST_SRC) -lm
$(B)/check-tcc-cli: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(wildcard examples/*.c)
	@mkdir -p $(B)
	$(TCC) -Wall -Werror -D_POSIX_C_SOURCE=200809L -o $(B)/hpjepa-tcc $(CLI_SRC) -lm
	for e in examples/*.c; do $(TCC) -Wall -Werror -I. -o $(B)/example-tcc $$e -lm || exit 1; done
	@touch $@

# clang, whose default fuses a * b + c unless the code says otherwise (the
# header turns that off): its unit suite with the SIMD paths for this CPU
# must pass too (every ISA against the portable loops, bit for bit);
# without OpenMP, so clang's libomp is not needed; skipped without clang.
# On an AVX-512 CPU it is built without AVX-512, so that the AVX2 paths
# (which the gcc builds then leave out where an AVX-512 one exists) are
# tested on such a machine too. The program is built with clang as well
# (macOS and FreeBSD have no other cc), with OpenMP where libomp links.
CLANG ?= $(shell command -v clang 2>/dev/null)
CLANG_BUILDS := $(if $(CLANG),$(B)/tests-clang $(B)/hpjepa-clang)
CLANG_ARCH ?= $(ARCH) $(if $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo y),-mno-avx512f)
CLANG_OMP = $(shell echo 'int main(void) { return 0; }' | $(CLANG) -fopenmp -x c -o /dev/null - 2>/dev/null && echo -fopenmp)
$(B)/tests-clang: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(CLANG) $(CSTD) -O2 $(CLANG_ARCH) $(WERROR) -Wno-unknown-pragmas -o $@ $(TEST_SRC) -lm
$(B)/hpjepa-clang: $(CLI_SRC) tools/cli/cli.h $(HDRS)
	@mkdir -p $(B)
	$(CLANG) $(CSTD) -O2 $(CLANG_ARCH) $(WERROR) $(or $(CLANG_OMP),-Wno-unknown-pragmas) -D_POSIX_C_SOURCE=200809L \
	    -o $@ $(CLI_SRC) -lm

# gcc with the portable kernels and nothing tuned to this CPU: the same bits
# as the tcc build (a command-line check compares their embeddings)
$(B)/hpjepa-portable: $(CLI_SRC) tools/cli/cli.h $(HDRS) $(FLAGS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O2 $(WERROR) -Wno-unknown-pragmas -DHPJ_NO_SIMD -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)

# libFuzzer harnesses (tests/fuzz_*.c): make test runs each for seconds on
# the committed corpus (tests/fuzz-corpus/) and fresh seeds, make fuzz for
# minutes (tests/fuzz.sh). The library is compiled once (the slow part) and
# linked into each harness, whose own copy HPJEPA_IMPLEMENTATION_DONE skips.
# Skipped when clang cannot link a libFuzzer binary (the probe runs only for
# these goals). FUZZ_INC: the folder of the hpjepa.h to fuzz.
FUZZ_CC ?= $(CLANG)
FUZZ_INC ?= .
FUZZ_FLAGS := -std=c99 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_NAMES := $(patsubst tests/fuzz_%.c,%,$(wildcard tests/fuzz_*.c))
ifneq ($(filter test-builds fuzz-builds,$(MAKECMDGOALS)),)
FUZZ_LINKS := $(if $(FUZZ_CC),$(shell printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
    $(FUZZ_CC) -fsanitize=fuzzer -x c -o /dev/null - 2>/dev/null && echo y))
endif
FUZZ_BUILDS := $(if $(FUZZ_LINKS),$(patsubst %,$(B)/fuzz/fuzz_%,$(FUZZ_NAMES)))
# the program's readers harness links the program's sources (the repository's header)
FUZZ_CLI_SRC := $(filter-out tools/cli/hpjepa.c tools/cli/impl.c,$(CLI_SRC))
FUZZ_CLI_IMPL := $(if $(filter $(abspath .),$(abspath $(FUZZ_INC))),$(B)/fuzz/impl.o,$(B)/fuzz/impl-cli.o)
$(B)/fuzz/impl.o: $(FUZZ_INC)/hpjepa.h
	@mkdir -p $(B)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -DHPJEPA_IMPLEMENTATION -x c -c -o $@ $<
$(B)/fuzz/impl-cli.o: $(HDRS)
	@mkdir -p $(B)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -DHPJEPA_IMPLEMENTATION -x c -c -o $@ hpjepa.h
$(B)/fuzz/fuzz_cli: tests/fuzz_cli.c tests/fuzz.h $(FUZZ_CLI_SRC) tools/cli/cli.h $(FUZZ_CLI_IMPL)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -D_POSIX_C_SOURCE=200809L -o $@ tests/fuzz_cli.c $(FUZZ_CLI_SRC) $(FUZZ_CLI_IMPL) -lm
$(B)/fuzz/fuzz_%: tests/fuzz_%.c tests/fuzz.h $(B)/fuzz/impl.o
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -DHPJEPA_IMPLEMENTATION_DONE -I$(FUZZ_INC) -o $@ $< $(B)/fuzz/impl.o -lm
fuzz-builds: $(FUZZ_BUILDS)

CHECKS := $(B)/check-cxx.o $(B)/check-pedantic.o $(B)/check-embedded.o
# the program the CLI checks run is $(B)/hpjepa (a user's make builds ./hpjepa)
TEST_BUILDS := examples $(B)/hpjepa $(B)/tests $(B)/tests-ref $(B)/hpjepa-ref $(B)/tests-asan $(B)/tests-noomp $(B)/hpjepa-asan $(CHECKS) $(TCC_BUILDS) \
    $(CLANG_BUILDS) $(FUZZ_BUILDS) $(if $(MPI_FOUND),$(B)/hpjepa-mpi)
# the suite's builds run one job per core unless make already has a
# jobserver (make -jN test, N > 1): side by side they take about half the time
NPROC ?= $(shell nproc 2>/dev/null || echo 1)
test:
	@$(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(NPROC)) test-builds
	@bash tests/run_all.sh $(B)
test-builds: $(TEST_BUILDS)

demo: all
	@bash tools/demo/demo.sh

bench: all
	@bash tools/bench/bench.sh

fuzz:
	@FUZZ_B=$(B) bash tests/fuzz.sh

clean:
	rm -rf $(B) hpjepa hpjepa-mpi
