# hpjepa.h - build, test, demo, bench.
#   make            the command-line program ./hpjepa and every example
#   make test       the whole test suite (see tests/run_all.sh)
#   make demo       pretrain + evaluate on the bundled synthetic set
#   make bench      benchmarks against the peers in ../shared/peers
#   make fuzz       libFuzzer runs of every reader of outside input, the partitioner, the tokenizer and the model (clang)
CC      ?= cc
CXX     ?= g++
ARCH    ?= -march=native
OPT     ?= -O2
WARN    := -Wall -Wextra -Wshadow -Werror
OMP     ?= -fopenmp
CSTD    := -std=c99
CFLAGS  := $(CSTD) $(OPT) -g $(ARCH) $(WARN) $(OMP)
LDLIBS  := -lm
B       := build

HDRS     := hpjepa.h
CLI_SRC  := $(wildcard tools/cli/*.c)
TEST_SRC := tests/impl.c $(wildcard tests/test_*.c)
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))

.PHONY: all examples test test-builds demo bench fuzz clean
all: hpjepa examples

hpjepa: $(CLI_SRC) tools/cli/cli.h $(HDRS)
	$(CC) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)

examples: $(EXAMPLES)
$(B)/examples/%: examples/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

# the suite: optimised, sanitised, without OpenMP
$(B)/tests: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(CC) $(CFLAGS) -o $@ $(TEST_SRC) $(LDLIBS)
$(B)/tests-asan: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O1 -g $(ARCH) $(WARN) $(OMP) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -o $@ $(TEST_SRC) $(LDLIBS)
# the command-line program under ASan + UBSan (the CLI checks run with it too)
$(B)/hpjepa-asan: $(CLI_SRC) tools/cli/cli.h $(HDRS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O1 -g $(ARCH) $(WARN) $(OMP) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)
$(B)/tests-noomp: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(CC) $(CSTD) $(OPT) -g $(ARCH) $(WARN) -Wno-unknown-pragmas -o $@ $(TEST_SRC) $(LDLIBS)
# the header's implementation must compile as C++ and as strict C99, and
# with the embedded options
$(B)/check-cxx.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CXX) -x c++ -O1 $(WARN) -c -o $@ tests/impl.c
$(B)/check-pedantic.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CC) -std=c99 -pedantic -O1 $(WARN) -c -o $@ tests/impl.c
$(B)/check-embedded.o: tests/impl.c $(HDRS)
	@mkdir -p $(B)
	$(CC) -std=c99 -pedantic -O1 $(WARN) -DHPJ_NO_STDIO -DHPJ_STATIC -Wno-unused-function \
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
# tested on such a machine too.
CLANG ?= $(shell command -v clang 2>/dev/null)
CLANG_BUILDS := $(if $(CLANG),$(B)/tests-clang)
CLANG_ARCH ?= $(ARCH) $(if $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo y),-mno-avx512f)
$(B)/tests-clang: $(TEST_SRC) tests/test.h $(HDRS)
	@mkdir -p $(B)
	$(CLANG) $(CSTD) -O2 $(CLANG_ARCH) $(WARN) -Wno-unknown-pragmas -o $@ $(TEST_SRC) -lm

# gcc with the portable kernels and nothing tuned to this CPU: the same bits
# as the tcc build (a command-line check compares their embeddings)
$(B)/hpjepa-portable: $(CLI_SRC) tools/cli/cli.h $(HDRS)
	@mkdir -p $(B)
	$(CC) $(CSTD) -O2 $(WARN) -Wno-unknown-pragmas -DHPJ_NO_SIMD -D_POSIX_C_SOURCE=200809L -o $@ $(CLI_SRC) $(LDLIBS)

CHECKS := $(B)/check-cxx.o $(B)/check-pedantic.o $(B)/check-embedded.o
TEST_BUILDS := all $(B)/tests $(B)/tests-asan $(B)/tests-noomp $(B)/hpjepa-asan $(CHECKS) $(TCC_BUILDS) $(CLANG_BUILDS)
# the suite's builds run one job per core unless make already has a
# jobserver (make -jN test, N > 1)
# (from nothing on 2 cores: 6.2 min one after another, 3.4 min side by side)
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
	@bash tests/fuzz.sh

clean:
	rm -rf $(B) hpjepa
