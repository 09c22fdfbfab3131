/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the messaging tests (am_*.c): a barrier over active
 * messages, waiting for counters, and the common way to end a test.
 */
#ifndef AM_UTIL_H
#define AM_UTIL_H

#include <stdint.h>

#include "tempest.h"

/* Every node waits until every node has called it (node 0 gathers). */
void am_barrier(void);

/* Waits (sleeping) until *@counter >= @want. */
void am_wait_count(const volatile uint64_t *counter, uint64_t want);

/*
 * A ping-pong: TPPI_send(node, am_ping_h) makes the node answer with a
 * message whose handler counts into am_pongs; am_pongs_reach(&want) is a
 * tempest_wait condition: am_pongs >= want.
 */
extern volatile unsigned am_pongs;
void am_ping_h(TPPI_NodeId src, int size);
int am_pongs_reach(void *want);

/* Microseconds of the node controller's clock. */
uint64_t am_ticks(void);

/* Counts and prints one failure: "FAIL: ..." */
void am_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Failures so far. */
unsigned am_failures(void);

/*
 * Ends the test: a last barrier, then prints "<name> ok" (or
 * "<name> FAILED: N failures") and returns the exit status for main.
 */
int am_finish(const char *name);

#endif /* AM_UTIL_H */
