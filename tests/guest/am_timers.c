/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Timers (Tempest spec 3.5 and section 2's priorities):
 *  1. 300 timers (more than the device's TEMPEST_NC_MAX_TIMERS), in ten
 *     groups 5 ms apart whose members have equal delays, scheduled
 *     interleaved: they run in deadline order, equal delays in the order
 *     they were scheduled, none early (node clock, TPPI_TICKS_PER_SEC).
 *     Each deadline is known to lie between the clock read before and
 *     after its TPPI_schedule_timer() plus the delay; a timer running
 *     after one whose deadline is surely later is out of order, whatever
 *     the host's scheduling did to the calls.
 *  2. a chain of timers each scheduled by the previous timer's handler.
 *  3. during a message storm (every node floods the next one with
 *     messages whose handlers each take about 50 us, for as long as it
 *     takes), a timer scheduled for 10 ms by the 500th handler runs, not
 *     early, although messages keep waiting (timers come before them: with
 *     messages first it would never run); its handler then stops the
 *     flood.  How late it is and how many messages ran between its
 *     deadline and it is host scheduling: printed here, measured by
 *     'scripts/tempest bench am', not checked.
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
#define STORM_AT    500         /* the handler that schedules the timer */
#define STORM_LIMIT 30          /* s: liveness bound, under the case's */
#define SLOW_NS     50000

struct rec {
    unsigned index;
    uint64_t deadline_min;  /* clock before scheduling + ticks */
    uint64_t deadline_max;  /* clock after scheduling + ticks */
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
static uint64_t late_handled;   /* messages run after the deadline */
static volatile int stop_flood; /* volatile: set by a handler */
static uint64_t flood_sent;     /* by the previous node, from end_h */
static uint64_t flood_ended;

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

static void stop_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    stop_flood = 1;
}

static void end_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    flood_sent = (uint32_t)TPPI_recv_W();
    flood_ended = 1;
}

static void storm_timer_h(void *p)
{
    (void)p;
    storm_fired = am_ticks();
    storm_seen_at_fire = slow_handled;
    storm_timer = 1;
    /* The flood has served: the previous node may stop sending. */
    TPPI_send((TPPI_self_address + TPPI_num_nodes - 1) % TPPI_num_nodes,
              stop_h);
}

static void slow_h(TPPI_NodeId src, int size)
{
    uint64_t t0 = rt_time_ns();

    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    if (storm_deadline && !storm_timer && am_ticks() >= storm_deadline) {
        late_handled++;
    }
    while (rt_time_ns() - t0 < SLOW_NS) {
        /* a handler doing real work */
    }
    slow_handled++;
    if (slow_handled == STORM_AT) {
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
        recs[i].deadline_max = am_ticks() + 1000 + g * GAP;
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
        /* A surely earlier deadline never runs later. */
        if (b->deadline_max < a->deadline_min) {
            am_fail("timer %u ran before timer %u, due at least %llu us "
                    "earlier", a->index, b->index,
                    (unsigned long long)(a->deadline_min -
                                         b->deadline_max));
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
    uint64_t late, t0, sent = 0;

    if (TPPI_TICKS_PER_SEC != 1000000) {
        am_fail("TPPI_TICKS_PER_SEC is %d", TPPI_TICKS_PER_SEC);
    }
    am_barrier();
    ordered_timers();

    chain_due = am_ticks() + 500;
    TPPI_schedule_timer(500, chain_h, &chain_due);
    am_wait_count(&chain_done, 1);

    am_barrier();
    /* Flood the next node until its storm timer has run. */
    t0 = rt_time_ns();
    while (!stop_flood) {
        TPPI_send_W(next, slow_h, (int)sent);
        sent++;
        if (rt_time_ns() - t0 > STORM_LIMIT * 1000000000ULL) {
            am_fail("node %u's timer did not run in %d s of messages: "
                    "messages before timers?", next, STORM_LIMIT);
            break;
        }
    }
    TPPI_send_W(next, end_h, (int)sent);
    am_wait_count(&storm_timer, 1);
    am_wait_count(&flood_ended, 1);
    am_wait_count(&slow_handled, flood_sent);
    late = storm_fired - storm_deadline;
    printf("timer in a storm: %llu us late, %llu messages handled before "
           "it (%llu after its deadline), %llu in the storm\n",
           (unsigned long long)late, (unsigned long long)storm_seen_at_fire,
           (unsigned long long)late_handled, (unsigned long long)flood_sent);
    /*
     * How late it is depends on the host's load: printed, not checked.
     * What is checked: not early, and that it ran while messages kept
     * coming (above: the flood stops only once it has run).
     */
    if (storm_fired < storm_deadline) {
        am_fail("the timer in the storm ran %lld us before its deadline",
                (long long)(storm_deadline - storm_fired));
    }
    return am_finish("am_timers");
}
