/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GAM benchmark of 'scripts/tempest bench am' (2 nodes, <am.h>):
 * node 0 measures, on the generic timer,
 *   - the round trip of am_request_1 and the am_reply_1 of its handler,
 *     node 0 polling in am_poll() for the reply, node 1 in am_poll() for
 *     the request, ROUNDS times after as many to warm up;
 *   - an am_store of 1 MiB whose handler replies (the time until the
 *     reply is in), STORES times;
 * and prints one line:
 *   gam_bench: rtt_ns=N store_1m_ns=N
 * Usage: gam_bench [ROUNDS [STORES]].
 */
#include <stdio.h>
#include <stdlib.h>

#include <am.h>
#include <tempest/rt.h>

#define BLOCK       (1 << 20)

static uint8_t block[BLOCK];
static uint8_t landing[BLOCK];
static volatile int replies, stopped; /* volatile: set by handlers */

static void pong(vnn_t src, int a0)
{
    (void)src;
    (void)a0;
    replies++;
}

static void ping(vnn_t src, int a0)
{
    am_reply_1(src, pong, a0);
}

static void stored(vnn_t src, void *addr, int nbytes, void *arg)
{
    (void)addr;
    (void)arg;
    am_reply_1(src, pong, nbytes);
}

static void stop(vnn_t src, int a0)
{
    (void)src;
    (void)a0;
    stopped = 1;
}

static void wait_replies(int n)
{
    while (replies < n) {
        am_poll();
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    int stores = argc > 2 ? atoi(argv[2]) : 20;
    uint64_t t0, rtt, store;

    if (am_enable() != 0 || am_procs() != 2 || rounds < 1 || stores < 1) {
        printf("gam_bench: needs 2 nodes, ROUNDS >= 1, STORES >= 1\n");
        return 1;
    }
    if (am_my_proc() == 1) {
        while (!stopped) {
            am_poll();
        }
        am_disable();
        return 0;
    }
    for (int i = 0; i < rounds; i++) {
        am_request_1(1, ping, i);
        wait_replies(i + 1);
    }
    t0 = rt_time_ns();
    for (int i = 0; i < rounds; i++) {
        am_request_1(1, ping, i);
        wait_replies(rounds + i + 1);
    }
    rtt = (rt_time_ns() - t0) / (uint64_t)rounds;
    t0 = rt_time_ns();
    for (int i = 0; i < stores; i++) {
        am_store(1, block, landing, BLOCK, stored, NULL);
        wait_replies(2 * rounds + i + 1);
    }
    store = (rt_time_ns() - t0) / (uint64_t)stores;
    am_request_1(1, stop, 0);
    am_disable();
    printf("gam_bench: rtt_ns=%llu store_1m_ns=%llu\n",
           (unsigned long long)rtt, (unsigned long long)store);
    return 0;
}
