/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Timers (Tempest spec 3.5 and section 2's priorities):
 *  1. 300 timers (more than the device's TEMPEST_NC_MAX_TIMERS), in ten
 *     groups 5 ms apart whose members have equal delays, scheduled
 *     interleaved: they run in deadline order, equal delays in the order
 *     they were scheduled, none early (node clock, TPPI_TICKS_PER_SEC).
 *  2. a chain of timers each scheduled by the previous timer's handler.
 *  3. during a message storm (every node floods the next one with 4000
 *     messages whose handlers each take about 50 us), a timer scheduled
 *     for 10 ms by the 500th handler runs, not early, before the messages
 *     still waiting; how late it is (host scheduling of the device's
 *     clock; typically well under 1 ms) is printed, not checked.
 * Prints "am_timers ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "tempest/rt.h"

#define NTIMERS     300
#define GROUPS      10
#define GAP         5000
#define CHAIN       20
#define FLOOD       4000
#define SLOW_NS     50000

struct rec {
    unsigned index;
    uint64_t deadline_min;  /* scheduled-at (lower bound) + ticks */
    uint64_t fired;
};

static struct rec recs[NTIMERS];
static unsigned order[NTIMERS];
static uint64_t fired_count;
static uint64_t chain_left = CHAIN;
static uint64_t chain_done;
static uint64_t slow_handled;
static uint64_t storm_timer;
static uint64_t storm_deadline, storm_fired, storm_seen_at_fire;

static void timer_h(void *p)
{
    struct rec *r = p;

    r->fired = am_ticks();
    order[fired_count] = r->index;
    fired_count++;
}

static void chain_h(void *p)
{
    uint64_t *due = p;
    uint64_t now = am_ticks();

    if (now < *due) {
        am_fail("chained timer ran %llu ticks early",
                (unsigned long long)(*due - now));
    }
    if (--chain_left) {
        *due = am_ticks() + 500;
        TPPI_schedule_timer(500, chain_h, due);
    } else {
        chain_done = 1;
    }
}

static void storm_timer_h(void *p)
{
    (void)p;
    storm_fired = am_ticks();
    storm_seen_at_fire = slow_handled;
    storm_timer = 1;
}

static void slow_h(TPPI_NodeId src, int size)
{
    uint64_t t0 = rt_time_ns();

    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    while (rt_time_ns() - t0 < SLOW_NS) {
        /* a handler doing real work */
    }
    slow_handled++;
    if (slow_handled == FLOOD / 8) {
        /* The storm is on: a timer from a handler, 10 ms out. */
        storm_deadline = am_ticks() + 10000;
        TPPI_schedule_timer(10000, storm_timer_h, NULL);
    }
}


static void ordered_timers(void)
{
    unsigned i, g, k;
    uint64_t now;

    /* Later groups first, so the heap really has to sort. */
    for (k = 0; k < NTIMERS; k++) {
        g = GROUPS - 1 - k % GROUPS;
        i = g * (NTIMERS / GROUPS) + k / GROUPS;
        recs[i].index = i;
        now = am_ticks();
        recs[i].deadline_min = now + 1000 + g * GAP;
        TPPI_schedule_timer((int)(1000 + g * GAP), timer_h, &recs[i]);
    }
    am_wait_count(&fired_count, NTIMERS);
    for (k = 1; k < NTIMERS; k++) {
        struct rec *a = &recs[order[k - 1]], *b = &recs[order[k]];

        /* Same group (equal delays): in the order scheduled. */
        if (a->index / (NTIMERS / GROUPS) == b->index / (NTIMERS / GROUPS) &&
            a->index > b->index) {
            am_fail("equal-delay timers %u and %u ran out of order",
                    a->index, b->index);
            break;
        }
        /* A clearly earlier deadline never runs later. */
        if (b->deadline_min + 1000 < a->deadline_min) {
            am_fail("timer %u ran before timer %u, due %llu us earlier",
                    a->index, b->index,
                    (unsigned long long)(a->deadline_min -
                                         b->deadline_min));
            break;
        }
    }
    for (i = 0; i < NTIMERS; i++) {
        if (recs[i].fired < recs[i].deadline_min) {
            am_fail("timer %u ran %llu ticks early", i,
                    (unsigned long long)(recs[i].deadline_min -
                                         recs[i].fired));
            break;
        }
    }
}

int main(void)
{
    static uint64_t chain_due;
    TPPI_NodeId next = (TPPI_self_address + 1) % TPPI_num_nodes;
    unsigned i;
    uint64_t late;

    if (TPPI_TICKS_PER_SEC != 1000000) {
        am_fail("TPPI_TICKS_PER_SEC is %d", TPPI_TICKS_PER_SEC);
    }
    am_barrier();
    ordered_timers();

    chain_due = am_ticks() + 500;
    TPPI_schedule_timer(500, chain_h, &chain_due);
    am_wait_count(&chain_done, 1);

    am_barrier();
    for (i = 0; i < FLOOD; i++) {
        TPPI_send_W(next, slow_h, (int)i);
    }
    am_wait_count(&storm_timer, 1);
    am_wait_count(&slow_handled, FLOOD);
    late = storm_fired - storm_deadline;
    printf("timer in a storm: %llu us late, %llu of %u messages handled "
           "before it\n", (unsigned long long)late,
           (unsigned long long)storm_seen_at_fire, FLOOD);
    /*
     * How late it is depends on the host's load: printed, not checked.
     * What is checked: not early, and before the messages queued ahead of
     * it (timers come before messages).
     */
    if (storm_fired < storm_deadline) {
        am_fail("the timer in the storm ran %lld us before its deadline",
                (long long)(storm_deadline - storm_fired));
    }
    if (storm_seen_at_fire >= FLOOD) {
        am_fail("the storm was over before the timer ran");
    }
    return am_finish("am_timers");
}
