/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the <am.h> tests (gam_*.c): a failure that ends the node
 * with a message, and a wait that polls until a counter reaches a value.
 */
#ifndef GAM_UTIL_H
#define GAM_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <am.h>

#define gam_fail(...) \
    do { \
        printf("FAIL node %d: ", am_my_proc()); \
        printf(__VA_ARGS__); \
        printf("\n"); \
        fflush(stdout); \
        exit(1); \
    } while (0)

#define gam_check(cond, ...) \
    do { \
        if (!(cond)) { \
            gam_fail(__VA_ARGS__); \
        } \
    } while (0)

/* Polls until *@counter reaches @target. */
static inline void gam_wait_for(volatile int *counter, int target)
{
    while (*counter < target) {
        if (am_poll() < 0) {
            gam_fail("am_poll failed: %s", am_error_name(am_errno));
        }
    }
}

#endif /* GAM_UTIL_H */
