/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A program that never ends, in the middle of its communication: every
 * node sends an active message to the next node and joins a barrier, for
 * ever.  Guest case timeout-report-3 (docs/fabric.rst, "A stopped node's
 * report") stops it with the launcher's timeout, so that what a stopped
 * node reports does not depend on how fast the host is: the radix sort
 * the case ran first finished in 2.8 s on a quiet host, before its 8 s
 * timeout.
 *
 * With "poll": after a barrier, every node polls for a message no node
 * sends (guest case strata-link-lost kills one node under a stopped
 * launcher: the others must end by themselves, StrataFail).
 */
#include <stdio.h>
#include <string.h>

#include "strata-util.h"

static volatile int got; /* volatile: set by the handler */

static void ping_h(int from)
{
    (void)from;
    got++;
}

int main(int argc, char **argv)
{
    StrataInit();
    if (argc > 1 && !strcmp(argv[1], "poll")) {
        /* Polls for a message no node sends (case strata-link-lost). */
        Barrier();
        printf("node %d: waiting\n", Self);
        fflush(stdout);
        while (!got) {
            PollBothTilEmpty();
        }
        printf("node %d: a message no node sent\n", Self);
        return 1;
    }
    for (;;) {
        SendBothRLPollRight((Self + 1) % PartitionSize, ping_h, Self);
        Barrier();
    }
    return 0;
}
