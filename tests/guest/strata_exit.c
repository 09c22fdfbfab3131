/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 3.5 (StrataExit, StrataFail) and 9.2 (assert): the mode
 * in argv[1] says what to do.
 *   idle     node 0 works on after the others reached StrataExit and
 *            sends them requests, which they answer while they idle
 *   code     node 1 (0 on one node) calls StrataExit(3) while the others
 *            wait in a barrier: the cluster ends with status 3
 *   fail     the last node calls StrataFail: status 255 and the message
 *   assert   node 0 fails an assert: status 255 and the message
 *   exit     node 0 calls exit(5), which is StrataExit(5)
 *   return   main returns 0 without StrataExit (node 0 later than the
 *            others): every node exits 0
 *   return7  the same, but node 0 returns 7: the cluster ends with 7
 *   badproc  a send to a node outside the partition fails
 *   early    Barrier before StrataInit fails
 */
#include <string.h>

#include "strata-util.h"
#include "tempest/rt.h"

static volatile int replies; /* volatile: set by handlers */

static void reply_h(int from)
{
    replies++;
    printf("node %d: reply from node %d\n", Self, from);
}

static void request_h(int from)
{
    printf("node %d: request from node %d while exiting\n", Self, from);
    SendBothRLPollRight(from, reply_h, Self);
}

static void sleep_ms(unsigned ms)
{
    uint64_t t0 = rt_time_ns();

    while (rt_time_ns() - t0 < (uint64_t)ms * 1000000) {
        rt_cpu_sleep(1000);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "idle";
    int k;

    if (!strcmp(mode, "early")) {
        Barrier();
    }
    StrataInit();
    if (!strcmp(mode, "idle")) {
        if (Self == 0) {
            sleep_ms(200);
            for (k = 1; k < PartitionSize; k++) {
                SendLeftPollBoth(k, request_h, Self);
            }
            st_wait_count(&replies, PartitionSize - 1);
            printf("node 0: %d replies\n", replies);
        }
        StrataExit(0);
    } else if (!strcmp(mode, "code")) {
        if (Self == (PartitionSize > 1 ? 1 : 0)) {
            sleep_ms(100);
            StrataExit(3);
        }
        Barrier();
        printf("node %d: barrier passed without node 1\n", Self);
        StrataExit(0);
    } else if (!strcmp(mode, "fail")) {
        if (RIGHTMOST) {
            StrataFail("broken %d", 42);
        }
        Barrier();
    } else if (!strcmp(mode, "assert")) {
        if (Self == 0) {
            assert(Self == 99);
        }
        Barrier();
    } else if (!strcmp(mode, "exit")) {
        if (Self == 0) {
            exit(5);
        }
        Barrier();
    } else if (!strcmp(mode, "return") || !strcmp(mode, "return7")) {
        if (Self == 0) {
            sleep_ms(150);
        }
        printf("node %d returns\n", Self);
        return Self == 0 && mode[6] == '7' ? 7 : 0;
    } else if (!strcmp(mode, "badproc")) {
        SendLeftPollBoth(PartitionSize, reply_h, Self);
    }
    StrataExit(0);
}
