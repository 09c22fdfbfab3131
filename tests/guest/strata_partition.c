/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata on a partition whose size is not a power of two (the CM-5's
 * always were): logPartitionSize is rounded up and PartitionMask covers
 * it, so a hypercube exchange with Self ^ (1 << k) names nodes beyond the
 * partition on some rounds.  A program that skips those partners (the
 * usual way: Strata's own collectives do) exchanges with every other
 * node; a send to a node beyond the partition is never delivered: it
 * stops the program with StrataFail naming the node.  With argument
 * "stray", the highest node's first partner that is out of the partition
 * gets such a send.  Prints "strata_partition ok".
 */
#include <stdbool.h>
#include <string.h>

#include "strata-util.h"

static volatile int got;
static volatile int from_mask;

static void hello_h(int src, int round)
{
    CHECK(src == (Self ^ (1 << round)), "round %d: message from node %d",
          round, src);
    from_mask |= 1 << round;
    got++;
}

int main(int argc, char **argv)
{
    int k, partner, want = 0, expect_mask = 0;
    bool stray = argc > 1 && strcmp(argv[1], "stray") == 0;

    StrataInit();
    CHECK(PartitionSize <= (1 << logPartitionSize) &&
          (PartitionSize > (1 << (logPartitionSize - 1)) ||
           PartitionSize == 1), "logPartitionSize %d for %d nodes",
          logPartitionSize, PartitionSize);
    for (k = 0; k < logPartitionSize; k++) {
        partner = Self ^ (1 << k);
        if (partner >= PartitionSize) {
            if (stray && Self == PartitionSize - 1) {
                /* Not delivered: StrataFail names the node. */
                SendLeftPollBoth(partner, hello_h, Self, k);
            }
            continue;
        }
        want++;
        expect_mask |= 1 << k;
        SendLeftPollBoth(partner, hello_h, Self, k);
    }
    st_wait_count(&got, want);
    CHECK(from_mask == expect_mask, "heard from rounds 0x%x, expected 0x%x",
          from_mask, expect_mask);
    Barrier();
    st_finish("strata_partition");
}
