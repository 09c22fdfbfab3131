/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The active-message benchmark of 'scripts/tempest bench am' (2 nodes):
 * node 0 measures, on the generic timer,
 *   - the round trip of an empty message: handlers ping-pong between the
 *     nodes (each handler sends the next message), ROUNDS times;
 *   - the same with TPPI_MAX_AM_BYTES bodies (received with TPPI_recv_R
 *     and sent back with TPPI_send_R), ROUNDS / 4 times;
 *   - the one-way rate: main() sends STREAM one-word messages, node 1's
 *     handler counts them and answers the last one;
 *   - a timer in a message storm: main() sends STORM messages whose
 *     handlers on node 1 each take SLOW_NS; the STORM_AT-th schedules a
 *     timer TIMER_NS out, which runs before the messages still waiting
 *     (Tempest section 2's priorities) but later than its deadline by
 *     however long the host takes to deliver the device's timer event
 *     (timer_late_ns), with timer_late_msgs handlers started between
 *     the deadline and it.  tests/guest/am_timers.c checks the order;
 *     these figures are measured here.
 * With the stream its packets sent, how many of them the device wrote
 * straight into the receiver's RQ slot and how many times a send waited
 * for credit (TX_PACKETS, TX_DIRECT, TX_STALLS: stream_tx, stream_direct,
 * stream_stalls; on 2026-11-29 98-99% went straight in, in fast and
 * slow runs alike).
 * Each round trip figure is taken after a phase just like it, unmeasured:
 * the first round trips of a path pay for TCG translating its guest code
 * and for first touches of the receive queue's memory (on 2026-11-28 the
 * first 500 4096-byte round trips took 10-29 us each, the next 500 7-10
 * us: docs/fabric.rst, "Warm and cold").  The first 4096-byte phase is
 * reported too, as rtt_full_cold_ns.  Prints one line:
 *   am_bench: rtt_empty_ns=N rtt_full_ns=N oneway_ns=N rate=N
 *             timer_late_ns=N timer_late_msgs=N rtt_full_cold_ns=N
 *             stream_tx=N stream_direct=N stream_stalls=N
 * Usage: am_bench [ROUNDS [STREAM [SPIN_US [full]]]] (SPIN_US: see
 * tempest_set_spin_us()).  With "full", only the 4096-byte round trips
 * run (ROUNDS of them; one line "am_bench: rtt_full_ns=N"), to profile
 * them alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

static uint32_t buf[TPPI_MAX_AM_BYTES / 4];
static unsigned rounds = 2000;
static unsigned stream = 100000;
static volatile unsigned left; /* volatile: set by handlers */
static volatile uint64_t t_end; /* volatile: set by handlers */
static volatile unsigned counted; /* volatile: set by handlers */

#define STORM       4000
#define STORM_AT    500
#define SLOW_NS     50000
#define TIMER_NS    10000000ULL
static volatile unsigned slow_count;    /* volatile: set by handlers */
static volatile unsigned late_msgs;     /* volatile: set by handlers */
static volatile uint64_t timer_due;     /* volatile: set by handlers */
static volatile int timer_ran;          /* volatile: set by the timer */
static volatile uint64_t late_ns;       /* volatile: set by a handler */
static uint64_t timer_late;

static void pong_empty(TPPI_NodeId src, int size);

static void ping_empty(TPPI_NodeId src, int size)
{
    (void)size;
    TPPI_send(src, pong_empty);
}

static void pong_empty(TPPI_NodeId src, int size)
{
    (void)size;
    if (--left) {
        TPPI_send(src, ping_empty);
    } else {
        t_end = rt_time_ns();
    }
}

static void pong_full(TPPI_NodeId src, int size);

static void ping_full(TPPI_NodeId src, int size)
{
    TPPI_recv_R(buf, size);
    TPPI_send_R(src, pong_full, buf, size);
}

static void pong_full(TPPI_NodeId src, int size)
{
    TPPI_recv_R(buf, size);
    if (--left) {
        TPPI_send_R(src, ping_full, buf, size);
    } else {
        t_end = rt_time_ns();
    }
}

static void stream_done(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    t_end = rt_time_ns();
}

static void stream_h(TPPI_NodeId src, int size)
{
    (void)size;
    (void)TPPI_recv_W();
    if (++counted == stream) {
        TPPI_send(src, stream_done);
    }
}

static void late_h(TPPI_NodeId src, int size)
{
    uint32_t lo = (uint32_t)TPPI_recv_W(), hi = (uint32_t)TPPI_recv_W();

    (void)src;
    (void)size;
    late_msgs = (unsigned)TPPI_recv_W();
    late_ns = (uint64_t)hi << 32 | lo;
    t_end = rt_time_ns();
}

/* Node 1, once the storm is handled and its timer ran: the figures. */
static void storm_report(void)
{
    TPPI_send_WWW(0, late_h, (int)(uint32_t)timer_late,
                  (int)(uint32_t)(timer_late >> 32), (int)late_msgs);
}

static void storm_timer(void *arg)
{
    (void)arg;
    timer_late = rt_time_ns() - timer_due;
    timer_ran = 1;
    if (slow_count >= STORM) {
        storm_report();
    }
}

static void slow_h(TPPI_NodeId src, int size)
{
    uint64_t t0 = rt_time_ns();

    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    if (timer_due && !timer_ran && t0 >= timer_due) {
        late_msgs++;
    }
    while (rt_time_ns() - t0 < SLOW_NS) {
        /* a handler doing real work */
    }
    if (++slow_count == STORM_AT) {
        timer_due = rt_time_ns() + TIMER_NS;
        TPPI_schedule_timer((int)(TIMER_NS / 1000), storm_timer, NULL);
    }
    if (slow_count == STORM && timer_ran) {
        storm_report();
    }
}

static int ended(void *arg)
{
    (void)arg;
    return t_end != 0;
}

/* Runs one timed phase started by @start; returns its length in ns. */
static uint64_t timed(void (*start)(void))
{
    uint64_t t0;

    t_end = 0;
    t0 = rt_time_ns();
    start();
    tempest_wait(ended, NULL);
    return t_end - t0;
}

static void start_empty(void)
{
    left = rounds;
    TPPI_send(1, ping_empty);
}

static void start_full(void)
{
    left = rounds / 4;
    TPPI_send_R(1, ping_full, buf, TPPI_MAX_AM_BYTES);
}

static void start_stream(void)
{
    unsigned i;

    for (i = 0; i < stream; i++) {
        TPPI_send_W(1, stream_h, (int)i);
    }
}

static void start_storm(void)
{
    unsigned i;

    for (i = 0; i < STORM; i++) {
        TPPI_send_W(1, slow_h, (int)i);
    }
}

static volatile int quit;   /* volatile: set by a handler */

static void quit_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    quit = 1;
}

static int always(void *arg)
{
    (void)arg;
    return quit || (counted >= stream && slow_count >= STORM && timer_ran);
}

int main(int argc, char **argv)
{
    uint64_t empty, full, cold, one;
    uint32_t tx, direct, stalls;

    if (argc > 1) {
        rounds = (unsigned)atoi(argv[1]);
    }
    if (argc > 2) {
        stream = (unsigned)atoi(argv[2]);
    }
    if (argc > 3) {
        tempest_set_spin_us((unsigned)atoi(argv[3]));
    }
    if (argc > 4 && !strcmp(argv[4], "full") && TPPI_self_address == 0) {
        rounds *= 4;
        full = timed(start_full) / (rounds / 4);
        TPPI_send(1, quit_h);
        tempest_flush(1000);
        printf("am_bench: rtt_full_ns=%llu\n", (unsigned long long)full);
        return 0;
    }
    if (TPPI_num_nodes != 2 || rounds < 4 || stream < 1) {
        printf("am_bench: needs 2 nodes, ROUNDS >= 4, STREAM >= 1\n");
        return 2;
    }
    if (TPPI_self_address == 1) {
        tempest_wait(always, NULL);     /* serve until the stream is in */
        tempest_flush(1000);
        return 0;
    }
    (void)timed(start_empty);           /* warm up */
    empty = timed(start_empty) / rounds;
    cold = timed(start_full) / (rounds / 4);    /* warms up the next */
    full = timed(start_full) / (rounds / 4);
    tx = nc_reg(TEMPEST_NC_TX_PACKETS);
    direct = nc_reg(TEMPEST_NC_TX_DIRECT);
    stalls = nc_reg(TEMPEST_NC_TX_STALLS);
    one = timed(start_stream) / stream;
    tx = nc_reg(TEMPEST_NC_TX_PACKETS) - tx;
    direct = nc_reg(TEMPEST_NC_TX_DIRECT) - direct;
    stalls = nc_reg(TEMPEST_NC_TX_STALLS) - stalls;
    (void)timed(start_storm);
    printf("am_bench: rtt_empty_ns=%llu rtt_full_ns=%llu oneway_ns=%llu "
           "rate=%llu timer_late_ns=%llu timer_late_msgs=%u "
           "rtt_full_cold_ns=%llu stream_tx=%u stream_direct=%u "
           "stream_stalls=%u\n",
           (unsigned long long)empty, (unsigned long long)full,
           (unsigned long long)one,
           (unsigned long long)(1000000000ULL / (one ? one : 1)),
           (unsigned long long)late_ns, late_msgs,
           (unsigned long long)cold, tx, direct, stalls);
    return 0;
}
