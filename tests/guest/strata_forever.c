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
 *
 * With "nested" (2 nodes): node 0 waits in a Barrier that node 1 never
 * joins; node 1 sends it a message whose handler calls Barrier() too.
 * Node 0 must fail at once (StrataFail: a message handler called a
 * control-network operation while this node waited for another one)
 * instead of waiting for ever (guest case strata-nested-coll).
 *
 * With "nested-split" (2 nodes): node 0 starts a CombineInt it does not
 * wait for (StartCombineInt) and polls; node 1 sends it a message whose
 * handler calls CombineInt.  Node 0 must fail (StrataFail: an operation
 * started in a message handler while one started by the program was
 * pending) instead of the handler's taking the program's place
 * (strata-nested-split).
 *
 * With "nested-bcast" (2 nodes): node 0 waits in a ReceiveBroadcastVector
 * for words no node broadcasts; node 1 sends it a message whose handler
 * calls ReceiveBroadcast.  Node 0 must fail (StrataFail: a message
 * handler called ReceiveBroadcast while this node waited for a broadcast
 * word) instead of the handler's taking the program's word, here waiting
 * for ever (strata-nested-bcast).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "strata-util.h"

static volatile int got; /* volatile: set by the handler */

static void ping_h(int from)
{
    (void)from;
    got++;
}

static void nested_split_h(int from)
{
    (void)from;
    printf("node %d: the handler's sum %d\n", Self,
           CombineInt(1, ReduceAdd));
}

static void nested_bcast_h(int from)
{
    (void)from;
    printf("node %d: the handler's word %u\n", Self, ReceiveBroadcast());
}

static void nested_h(int from)
{
    (void)from;
    Barrier();      /* inside node 0's wait for its own Barrier */
    printf("node %d: a nested barrier returned\n", Self);
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
    if (argc > 1 && !strncmp(argv[1], "nested", 6)) {
        bool split = !strcmp(argv[1], "nested-split");
        bool bcast = !strcmp(argv[1], "nested-bcast");

        printf("node %d: waiting\n", Self);
        fflush(stdout);
        if (Self != 0) {
            SendBothRLPollBoth(0, split ? nested_split_h :
                               bcast ? nested_bcast_h : nested_h, Self);
        } else if (split) {
            StartCombineInt(5, ReduceAdd);
        } else if (bcast) {
            Word v[4];

            ReceiveBroadcastVector(v, 4);
            printf("node %d: a vector no node broadcast\n", Self);
            return 1;
        } else {
            Barrier();
            printf("node %d: a barrier node 1 never joined\n", Self);
            return 1;
        }
        for (;;) {
            PollBothTilEmpty();
        }
    }
    for (;;) {
        SendBothRLPollRight((Self + 1) % PartitionSize, ping_h, Self);
        Barrier();
    }
    return 0;
}
