/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the migratable channel tests (chan_*.c), over am-util.h:
 * checks that name their line, waiting for a port's state here or on
 * another node, patterns, and the port table's balance at the end.
 */
#ifndef CHAN_UTIL_H
#define CHAN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "am-util.h"
#include "chan.h"

/* Counts a failure "FAIL: file:line: <expression>" unless @cond. */
#define CU_CHECK(cond)                                                    \
    do {                                                                  \
        if (!(cond)) {                                                    \
            am_fail("%s:%d: %s", __FILE__, __LINE__, #cond);              \
        }                                                                 \
    } while (0)

/* Counts a failure naming both values unless (long)@a == (long)@b. */
#define CU_EQ(a, b)                                                       \
    do {                                                                  \
        long cu_a_ = (long)(a), cu_b_ = (long)(b);                        \
        if (cu_a_ != cu_b_) {                                             \
            am_fail("%s:%d: %s is %ld, expected %s = %ld", __FILE__,      \
                    __LINE__, #a, cu_a_, #b, cu_b_);                      \
        }                                                                 \
    } while (0)

/* How long the waits below wait before they fail the test. */
#define CU_LIMIT_S      15

/*
 * Arms a watchdog: if the node is still running @seconds from now, every
 * node prints its port table (chan_dump()) and this one ends with
 * "FAIL: stuck: watchdog" (status 3).
 */
void cu_watchdog(unsigned seconds);

/* Sleeps about @ms milliseconds (tempest_wait on the node's clock). */
void cu_sleep_ms(unsigned ms);

/*
 * Waits until chan_state(@p) is @state (polling every millisecond);
 * after CU_LIMIT_S prints "FAIL: stuck ..." and ends the node (status 3).
 */
void cu_wait_state(chan_port p, int state);

/*
 * Returns the state of port @p of node @node, asked with an active
 * message whose handler calls chan_state() there.
 */
int cu_remote_state(unsigned node, chan_port p);

/* cu_wait_state() for a port of another node (cu_remote_state()). */
void cu_wait_remote_state(unsigned node, chan_port p, int state);

/* Waits as cu_wait_state() until chan_get_stats() field @off >= @want. */
void cu_wait_stat(size_t off, uint64_t want, const char *what);
#define CU_STAT(field)  offsetof(struct chan_stats, field)

/* One chan_stats field by offset. */
uint64_t cu_stat(size_t off);

/*
 * Inputs a message from @port into @buf (@size bytes, cleared first) and
 * checks that it is the string @s with its terminating NUL.
 */
void cu_expect_text(chan_port port, void *buf, size_t size, const char *s);

/* Fills @buf with @len bytes of the pattern of @seed. */
void cu_fill(void *buf, size_t len, unsigned seed);

/* Returns 1 if the @len bytes at @buf are the pattern of @seed. */
int cu_match(const void *buf, size_t len, unsigned seed);

/*
 * Ends a channel test: checks that the node uses @ports ports (what it
 * did not free), that no protocol error happened here, and then
 * am_finish(@name).
 */
int cu_finish(const char *name, unsigned ports);

#endif /* CHAN_UTIL_H */
