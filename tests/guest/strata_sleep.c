/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata 4.1 and 4.3 on nodes that sleep (docs/strata.rst, "A vCPU that
 * sleeps on DONE"): with StrataSetSpin(0) a node waiting for a collective
 * halts at once; on shared memory its vCPU then sleeps on the round's
 * DONE word itself.  In every round one node in turn does not halt in
 * the barrier: it starts it split-phase, tells every other node (which
 * arrive only then, so it is never the last) and reads IRQ_STATUS until
 * IRQ_COLL is set (never COLL_STATUS or POLL, which would look at the
 * area themselves), so the interrupt must come from its waiter thread,
 * woken through its WAKE word by the last to arrive.  Every result is
 * checked; COLL_SLEPT and COLL_WOKEN (1.17) and COLL_WAITED (1.21) say
 * how the collectives ended: by default the others wait in a read of
 * COLL_WAIT, yielding the host CPU, before they halt (docs/strata.rst,
 * "Waiting in a register read").  Argument: the rounds (default 200).
 */
#include <stdlib.h>

#include "strata-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

static volatile int started = -1;     /* volatile: set by a handler */

static void started_h(int round)
{
    started = round;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    int n, r, v;

    StrataInit();
    StrataSetSpin(0);
    n = PartitionSize;
    for (r = 0; r < rounds; r++) {
        v = CombineInt(Self + r, ReduceAdd);
        CHECK(v == n * (n - 1) / 2 + n * r, "round %d: ReduceAdd %d", r, v);
        if (n > 1 && Self == r % n) {
            uint64_t end = rt_time_ns() + 10000000000ULL;

            nc_irq_ack(TEMPEST_NC_IRQ_COLL);
            StartBarrier();
            for (int p = 0; p < n; p++) {
                if (p != Self) {
                    SendLeftPollBoth(p, started_h, r);
                }
            }
            while (!(nc_reg(TEMPEST_NC_IRQ_STATUS) & TEMPEST_NC_IRQ_COLL)) {
                CHECK(rt_time_ns() < end, "round %d: no IRQ_COLL in 10 s",
                      r);
            }
            CompleteBarrier();
        } else {
            while (n > 1 && started != r) {
                PollBoth();
            }
            Barrier();
        }
    }
    printf("node %d: %d rounds; %u collectives combined in the shared "
           "area, %u ended with a vCPU asleep on DONE, %u by the waiter, "
           "%u in a COLL_WAIT read\n",
           Self, rounds, (unsigned)nc_reg(TEMPEST_NC_COLL_SHARED),
           (unsigned)nc_reg(TEMPEST_NC_COLL_SLEPT),
           (unsigned)nc_reg(TEMPEST_NC_COLL_WOKEN),
           (unsigned)nc_reg(TEMPEST_NC_COLL_WAITED));
    st_finish("strata_sleep");
}
