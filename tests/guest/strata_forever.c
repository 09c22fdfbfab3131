/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A program that never ends, in the middle of its communication: every
 * node sends an active message to the next node and joins a barrier, for
 * ever.  Guest case timeout-report-3 (docs/fabric.rst, "A stopped node's
 * report") stops it with the launcher's timeout, so that what a stopped
 * node reports does not depend on how fast the host is: the radix sort
 * the case ran first finished in 2.8 s on a quiet host, before its 8 s
 * timeout.
 */
#include "strata-util.h"

static volatile int got; /* volatile: set by the handler */

static void ping_h(int from)
{
    (void)from;
    got++;
}

int main(void)
{
    StrataInit();
    for (;;) {
        SendBothRLPollRight((Self + 1) % PartitionSize, ping_h, Self);
        Barrier();
    }
    return 0;
}
