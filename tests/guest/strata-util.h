/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the Strata tests (strata_*.c): a check that counts and
 * prints failures, and the common way to end a test.
 */
#ifndef STRATA_UTIL_H
#define STRATA_UTIL_H

#include "strata.h"

static int st_failures;

/* Counts and prints one failure: "FAIL node K line L: ..." */
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            st_failures++; \
            printf("FAIL node %d line %d: ", Self, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

/*
 * Ends the test: the failures of all nodes are summed; every node prints
 * "<name> ok" (or "<name> FAILED: N failures") and exits through
 * StrataExit with 0 or 1.
 */
static inline void st_finish(const char *name)
{
    int total = CombineInt(st_failures, ReduceAdd);

    if (total == 0) {
        printf("%s ok\n", name);
    } else {
        printf("%s FAILED: %d failures\n", name, total);
    }
    StrataExit(total ? 1 : 0);
}

/* Spins (polling both networks) until *flag reaches want. */
static inline void st_wait_count(volatile int *flag, int want)
{
    while (*flag < want) {
        PollBothTilEmpty();
    }
}

#endif /* STRATA_UTIL_H */
