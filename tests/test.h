/* test.h - the tiny test runner of hpjepa.h's suite.
   Each test is a void function in an explicit table; CHECK* macros report
   file:line and both values, then return from the test. */
#ifndef HPJ_TEST_H
#define HPJ_TEST_H
#include <stdio.h>
#include <math.h>
#include <stdint.h>

typedef struct test_case {
    const char *name; /* "module.what" */
    void (*fn)(void);
} test_case;

/* Set by the CHECK macros; read by the runner. */
extern int test_failed;
extern int test_skipped;
void test_report(const char *file, int line, const char *fmt, ...);
/* Path of the shared datasets (../shared/data or $HPJ_DATA), NULL if absent. */
const char *test_data_dir(void);
/* Path of one dataset folder in a static buffer; NULL (and the test marked
   skipped) if the data is not there. */
const char *test_dataset(const char *name);
/* A scratch file path unique to this run: "<tmpdir>/hpj_test_<pid>_<tag>". */
const char *test_tmpfile(const char *tag);
/* The ids 0 .. num_graphs - 1 of a dataset, malloc'd (the caller frees). */
struct hpj_dataset;
struct hpj_config;
int32_t *test_all_graphs(const struct hpj_dataset *ds);
/* A tiny model config: the full architecture at toy width (dim 8, three
   resolutions, two epochs of batch 16). */
void test_tiny_config(struct hpj_config *c);

/* The statement (or block) after it, once for each paths level that this
   build has (reference, portable, AVX2, AVX-512: hpj_set_paths), with that
   level set; level is the caller's int. The runner restores
   HPJ_PATHS_BEST after every test, so a CHECK that returns from inside the
   loop leaves no level behind; a test that goes on after the loop calls
   hpj_set_paths(HPJ_PATHS_BEST) itself. */
#define FOR_EACH_PATHS(level)                                                    \
    for ((level) = HPJ_PATHS_REFERENCE; (level) <= HPJ_PATHS_AVX512; ++(level)) \
        if (hpj_set_paths(level) != (level)) {                                   \
        } else

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) {                                                    \
            test_report(__FILE__, __LINE__, "CHECK(%s) failed", #cond);   \
            return;                                                       \
        }                                                                 \
    } while (0)

#define CHECK_MSG(cond, ...)                                              \
    do {                                                                  \
        if (!(cond)) {                                                    \
            test_report(__FILE__, __LINE__, __VA_ARGS__);                 \
            return;                                                       \
        }                                                                 \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                              \
    do {                                                                                \
        long long a_ = (long long)(a), b_ = (long long)(b);                             \
        if (a_ != b_) {                                                                 \
            test_report(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld != %lld", #a, #b, \
                        a_, b_);                                                        \
            return;                                                                     \
        }                                                                               \
    } while (0)

/* |a-b| <= atol + rtol*|b|; NaN or inf in either fails. */
#define CHECK_NEAR(a, b, rtol, atol)                                                         \
    do {                                                                                     \
        double a_ = (double)(a), b_ = (double)(b);                                           \
        if (!(isfinite(a_) && isfinite(b_) && fabs(a_ - b_) <= (atol) + (rtol)*fabs(b_))) {  \
            test_report(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.9g vs %.9g (diff %.3g)", \
                        #a, #b, a_, b_, fabs(a_ - b_));                                      \
            return;                                                                          \
        }                                                                                    \
    } while (0)

#define CHECK_OK(call)                                                                   \
    do {                                                                                 \
        int st_ = (int)(call);                                                           \
        if (st_ != 0) {                                                                  \
            test_report(__FILE__, __LINE__, "%s returned %d: %s", #call, st_, hpj_last_error()); \
            return;                                                                      \
        }                                                                                \
    } while (0)

#define SKIP(why)                                   \
    do {                                            \
        test_skipped = 1;                           \
        fprintf(stdout, "  skipped: %s\n", why);    \
        return;                                     \
    } while (0)

#endif
