/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Strata benchmark of 'scripts/tempest bench strata' (any number of
 * nodes): node 0 measures, on the cycle counter (1 GHz), the mean time of
 *   - Barrier(), ROUNDS times in a row on every node;
 *   - CombineInt(x, ReduceAdd), the same;
 *   - one Broadcast: node 0 and the last node broadcast in turn (every
 *     other node receives both), ROUNDS round trips, halved;
 *   - and, as the reference of the same run, the round trip of an active
 *     message between node 0 and the last node (SendLeftPollBoth there, a
 *     reply with SendBothRLPollRight from the handler), both polling,
 *     ROUNDS times, while the other nodes wait in a barrier;
 * and prints one line:
 *   strata_bench: nodes=N rounds=R barrier_ns=N combine_ns=N bcast_ns=N
 *   am_rtt_ns=N barrier_slept=N barrier_woken=N
 * (the last two: how many of node 0's barriers ended with its vCPU asleep
 * on the shared area's DONE word, and by its waiter thread: COLL_SLEPT
 * and COLL_WOKEN, node controller 1.17);
 * Usage: strata_bench [ROUNDS [SPIN_US]]   (default 500; SPIN_US: see
 * StrataSetSpin())
 */
#include <stdlib.h>

#include "strata.h"
#include "tempest/nc.h"

static volatile int pongs;      /* volatile: set by handlers */
static volatile int stop;       /* volatile: set by handlers */

static void pong(void)
{
    pongs++;
}

static void ping(int src)
{
    SendBothRLPollRight(src, pong);
}

static void stop_h(void)
{
    stop = 1;
}

static DoubleWord per_round_ns(DoubleWord start, int rounds)
{
    return (CurrentCycle64() - start) * (1000000000ULL / STRATA_CYCLE_HZ) /
           (DoubleWord)rounds;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 500;
    int last, i, sum = 0;
    uint32_t slept, woken;
    DoubleWord t, barrier_ns, combine_ns, bcast_ns = 0, am_ns = 0;

    StrataInit();
    if (argc > 2) {
        StrataSetSpin((unsigned)atoi(argv[2]));
    }
    if (rounds < 1) {
        StrataFail("usage: strata_bench [ROUNDS (1 or more)]");
    }
    last = PartitionSize - 1;

    Barrier();
    slept = nc_reg(TEMPEST_NC_COLL_SLEPT);
    woken = nc_reg(TEMPEST_NC_COLL_WOKEN);
    t = CurrentCycle64();
    for (i = 0; i < rounds; i++) {
        Barrier();
    }
    barrier_ns = per_round_ns(t, rounds);
    slept = nc_reg(TEMPEST_NC_COLL_SLEPT) - slept;
    woken = nc_reg(TEMPEST_NC_COLL_WOKEN) - woken;

    Barrier();
    t = CurrentCycle64();
    for (i = 0; i < rounds; i++) {
        sum += CombineInt(i, ReduceAdd);
    }
    combine_ns = per_round_ns(t, rounds);

    if (last > 0) {
        Barrier();
        t = CurrentCycle64();
        for (i = 0; i < rounds; i++) {
            if (Self == 0) {
                Broadcast((Word)i);
            } else {
                sum += (int)ReceiveBroadcast();
            }
            if (Self == last) {
                Broadcast((Word)i);
            } else {
                sum += (int)ReceiveBroadcast();
            }
        }
        bcast_ns = per_round_ns(t, rounds) / 2;

        Barrier();
        if (Self == 0) {
            t = CurrentCycle64();
            for (i = 0; i < rounds; i++) {
                SendLeftPollBoth(last, ping, Self);
                while (pongs <= i) {
                    PollBothTilEmpty();
                }
            }
            am_ns = per_round_ns(t, rounds);
            SendLeftPollBoth(last, stop_h);
        } else if (Self == last) {
            while (!stop) {
                PollBothTilEmpty();
            }
        }
        Barrier();
    }

    if (Self == 0) {
        printf("strata_bench: nodes=%d rounds=%d barrier_ns=%llu "
               "combine_ns=%llu bcast_ns=%llu am_rtt_ns=%llu "
               "barrier_slept=%u barrier_woken=%u\n",
               PartitionSize, rounds, (unsigned long long)barrier_ns,
               (unsigned long long)combine_ns, (unsigned long long)bcast_ns,
               (unsigned long long)am_ns, (unsigned)slept, (unsigned)woken);
    }
    (void)sum;
    StrataExit(0);
}
