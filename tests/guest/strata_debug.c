/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 9 (debugging): Qprintf and Qfprintf queue without
 * printing (from handlers too) until EmptyPrintQ, which returns the
 * count; StrataQueue and StrataQueueLength show the queue; a full queue
 * empties itself; StrataLog lines reach the run's strata.log; assert is
 * Strata's.  Built twice: as strata_debug and, with -DSTRATA_DEBUG and
 * the debugging library, as strata_debugD, where StrataLogging is True
 * and the Log* switches log barriers, combines, broadcasts and Qprintfs.
 */
#include <string.h>

#include "strata-util.h"

static volatile int handled; /* volatile: set by handlers */

static void queue_from_handler(int from)
{
    Qprintf("queued in a handler on node %d from node %d\n", Self, from);
    handled++;
}

int main(void)
{
    int n, i;

    StrataInit();
    printf("StrataLogging=%d\n", StrataLogging);
#ifdef STRATA_DEBUG
    CHECK(StrataLogging, "StrataLogging in the debugging library");
    LogBarrier = True;
    LogCombine = True;
    LogBroadcast = True;
    LogQprintf = True;
#else
    CHECK(!StrataLogging, "StrataLogging in the normal library");
#endif
    n = Qprintf("queued line %d\n", Self);
    CHECK(n == (int)strlen("queued line 0\n") + (Self > 9),
          "Qprintf returned %d", n);
    CHECK(StrataQueueLength == 1 && strncmp(StrataQueue, "queued line", 11)
          == 0, "StrataQueue");
    printf("direct line %d\n", Self);
    CHECK(EmptyPrintQ() == 1, "EmptyPrintQ count");
    CHECK(EmptyPrintQ() == 0, "EmptyPrintQ of an empty queue");

    /* From a handler: queued, printed later (after this barrier). */
    Barrier();
    SendLeftPollBoth((Self + 1) % PartitionSize, queue_from_handler, Self);
    st_wait_count(&handled, 1);
    CHECK(StrataQueueLength == 1, "queue length %d after the handler",
          StrataQueueLength);
    Qfprintf(stderr, "queued for stderr %d\n", Self);
    Qfprintf(NULL, "queued for NULL %d\n", Self);
    CHECK(EmptyPrintQ() == 3, "three queued");

    /* Past the queue's capacity: it empties itself, nothing is lost. */
    for (i = 0; i < 3000; i++) {
        Qprintf("flood %d %d\n", Self, i);
    }
    EmptyPrintQ();

    StrataLog("hello from node %d", Self);
    StrataLog("a line\nwith a newline");
    Barrier();
    CHECK(CombineInt(1, ReduceAdd) == PartitionSize, "combine");
    if (PartitionSize > 1) {
        if (Self == 0) {
            Broadcast(7);
        } else {
            CHECK(ReceiveBroadcast() == 7, "broadcast");
        }
    }
    assert(Self >= 0);
    st_finish(StrataLogging ? "strata_debugD" : "strata_debug");
}
