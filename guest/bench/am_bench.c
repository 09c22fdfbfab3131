/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The active-message benchmark of 'scripts/tempest bench am' (2 nodes):
 * node 0 measures, on the generic timer,
 *   - the round trip of an empty message: handlers ping-pong between the
 *     nodes (each handler sends the next message), ROUNDS times;
 *   - the same with TPPI_MAX_AM_BYTES bodies (received with TPPI_recv_R
 *     and sent back with TPPI_send_R, several packets each way);
 *   - the one-way rate: main() sends STREAM one-word messages, node 1's
 *     handler counts them and answers the last one.
 * and prints one line:
 *   am_bench: rtt_empty_ns=N rtt_full_ns=N oneway_ns=N rate=N
 * Usage: am_bench [ROUNDS [STREAM [SPIN_US]]] (SPIN_US: see
 * tempest_set_spin_us()).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tempest.h"
#include "tempest/rt.h"

static uint32_t buf[TPPI_MAX_AM_BYTES / 4];
static unsigned rounds = 2000;
static unsigned stream = 100000;
static volatile unsigned left; /* volatile: set by handlers */
static volatile uint64_t t_end; /* volatile: set by handlers */
static volatile unsigned counted; /* volatile: set by handlers */

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

static int always(void *arg)
{
    (void)arg;
    return counted >= stream;
}

int main(int argc, char **argv)
{
    uint64_t empty, full, one;

    if (argc > 1) {
        rounds = (unsigned)atoi(argv[1]);
    }
    if (argc > 2) {
        stream = (unsigned)atoi(argv[2]);
    }
    if (argc > 3) {
        tempest_set_spin_us((unsigned)atoi(argv[3]));
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
    full = timed(start_full) / (rounds / 4);
    one = timed(start_stream) / stream;
    printf("am_bench: rtt_empty_ns=%llu rtt_full_ns=%llu oneway_ns=%llu "
           "rate=%llu\n", (unsigned long long)empty,
           (unsigned long long)full, (unsigned long long)one,
           (unsigned long long)(1000000000ULL / (one ? one : 1)));
    return 0;
}
