/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Idle waits sleep (docs/tempest.rst, "Where handlers run" and
 * tempest_wait in tempest.h): a wait is ended by an interrupt, never by a
 * periodic time limit.
 *  1. Waiting IDLE_MS for one timer, tempest_wait() goes to sleep at most
 *     MAX_WAITS times (tempest_stats.waits; each sleep ends only on an
 *     interrupt: the timer's event, or a peer's message), and on a node
 *     with a dedicated protocol thread that thread sleeps at most
 *     MAX_WAITS times too (tempest_stats.sleeps).  A wait with a 1 ms time
 *     limit would sleep about IDLE_MS times.
 *  2. tempest_wait_until() with a condition that never comes true
 *     returns 0 at its deadline (node clock), not before, after at most
 *     MAX_WAITS sleeps; with one that is true, 1 at once.
 *  3. A message answered while the peer waits: the round trip completes
 *     (the handler runs in the spin or wakes the sleep).
 *  4. The node controller recorded no guest error (the POLL writes of the
 *     spins are valid).
 * Prints "am_idle ok".
 */
#include <stdio.h>

#include "am-util.h"
#include "tempest/rt.h"

#define IDLE_MS     300
#define UNTIL_MS    50
#define ROUNDS      200
#define MAX_WAITS   8

static volatile int woken;      /* volatile: set by the timer handler */

static void wake_h(void *arg)
{
    (void)arg;
    woken = 1;
}

static int is_woken(void *arg)
{
    (void)arg;
    return woken;
}

static int never(void *arg)
{
    (void)arg;
    return 0;
}

static int always(void *arg)
{
    (void)arg;
    return 1;
}

int main(void)
{
    struct tempest_stats s0, s1;
    uint64_t t0, deadline, now;
    unsigned i, want;

    am_barrier();

    /* 1: one timer, nothing else to do. */
    tempest_get_stats(&s0);
    TPPI_schedule_timer(IDLE_MS * (TPPI_TICKS_PER_SEC / 1000), wake_h, NULL);
    tempest_wait(is_woken, NULL);
    tempest_get_stats(&s1);
    if (s1.waits - s0.waits > MAX_WAITS) {
        am_fail("waiting %u ms for a timer, tempest_wait slept %llu times",
                IDLE_MS, (unsigned long long)(s1.waits - s0.waits));
    }
    if (tempest_protocol_cpu() != 0 && s1.sleeps - s0.sleeps > MAX_WAITS) {
        am_fail("waiting %u ms for a timer, the protocol thread slept %llu "
                "times", IDLE_MS, (unsigned long long)(s1.sleeps - s0.sleeps));
    }
    printf("idle %u ms: %llu waits, %llu protocol-thread sleeps\n", IDLE_MS,
           (unsigned long long)(s1.waits - s0.waits),
           (unsigned long long)(s1.sleeps - s0.sleeps));

    am_barrier();

    /* 2: a deadline. */
    tempest_get_stats(&s0);
    t0 = rt_time_ns();
    deadline = t0 + UNTIL_MS * 1000000ULL;
    if (tempest_wait_until(never, NULL, deadline) != 0) {
        am_fail("tempest_wait_until(never) returned non-zero");
    }
    now = rt_time_ns();
    tempest_get_stats(&s1);
    if (now < deadline) {
        am_fail("tempest_wait_until returned %llu ns before its deadline",
                (unsigned long long)(deadline - now));
    }
    if (s1.waits - s0.waits > MAX_WAITS) {
        am_fail("tempest_wait_until of %u ms slept %llu times", UNTIL_MS,
                (unsigned long long)(s1.waits - s0.waits));
    }
    if (tempest_wait_until(always, NULL, t0) != 1 ||
        tempest_wait_until(NULL, NULL, 0) != 0) {
        am_fail("tempest_wait_until: wrong result for a true or NULL cond");
    }

    am_barrier();

    /* 3: round trips to the next node while it waits in am_barrier. */
    if (TPPI_self_address == 0 && TPPI_num_nodes > 1) {
        for (i = 0; i < ROUNDS; i++) {
            want = am_pongs + 1;
            TPPI_send(1, am_ping_h);
            tempest_wait(am_pongs_reach, &want);
        }
    }
    am_barrier();

    /* 4. */
    if (rt_nc_read(TEMPEST_NC_ERR_COUNT) != 0) {
        am_fail("the node controller recorded %lu guest errors (last %lu)",
                (unsigned long)rt_nc_read(TEMPEST_NC_ERR_COUNT),
                (unsigned long)rt_nc_read(TEMPEST_NC_ERR_STATUS));
    }
    return am_finish("am_idle");
}
