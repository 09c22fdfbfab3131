/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 4.4 (broadcast): every node in turn broadcasts words,
 * doubles and vectors (1 to 10,000 words, past the device's 4096-word
 * queue) that every other node receives in order; QueryBroadcast; the
 * broadcaster's own ReceiveBroadcastVector returns at once; words that
 * come while the others wait for them.
 */
#include <string.h>

#include "strata-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define BIG     10000
#define LATE    10

static Word vin[BIG], vout[BIG];

static Word word(int from, int i)
{
    return (Word)(from * 0x01000193U) ^ (Word)(i * 0x9e3779b9U);
}

static void vector_round(int from, int n)
{
    int i, bad = 0;

    for (i = 0; i < n; i++) {
        vin[i] = word(from, i);
    }
    memset(vout, 0, sizeof(vout));
    if (Self == from) {
        BroadcastVector(vout, vin, n);
        ReceiveBroadcastVector(vout, n);
    } else {
        ReceiveBroadcastVector(vout, n);
    }
    for (i = 0; i < n; i++) {
        bad += vout[i] != vin[i];
    }
    CHECK(!bad && (n == BIG || vout[n] == 0),
          "vector of %d from node %d: %d words wrong", n, from, bad);
}

static void poll_for_ms(unsigned ms)
{
    uint64_t t = rt_time_ns() + ms * 1000000ULL;

    while (rt_time_ns() < t) {
        PollBothTilEmpty();
    }
}

int main(void)
{
    static const int lengths[] = { 1, 2, 7, 64, 4097, BIG, 3 };
    int from, i, l;
    Word w;
    double d;

    StrataInit();
    for (from = 0; from < PartitionSize; from++) {
        /* Words, in order. */
        for (i = 0; i < 20; i++) {
            if (Self == from) {
                Broadcast(word(from, i));
            } else {
                w = ReceiveBroadcast();
                CHECK(w == word(from, i), "word %d from node %d: %08x", i,
                      from, (unsigned)w);
            }
        }
        if (Self == from) {
            while (!QueryBroadcast()) {
                PollBothTilEmpty();
            }
            CHECK(QueryBroadcast(), "QueryBroadcast");
        }
        /* Doubles. */
        if (Self == from) {
            BroadcastDouble(-1.25e-300 * (from + 1));
            BroadcastDouble(3.5);
        } else {
            d = ReceiveBroadcastDouble();
            CHECK(d == -1.25e-300 * (from + 1), "double from node %d: %g",
                  from, d);
            d = ReceiveBroadcastDouble();
            CHECK(d == 3.5, "second double from node %d: %g", from, d);
        }
        Barrier();
    }
    /* Vectors, from the first and the last node in turn. */
    for (l = 0; l < (int)(sizeof(lengths) / sizeof(lengths[0])); l++) {
        vector_round(l % 2 ? 0 : PartitionSize - 1, lengths[l]);
    }
    /* Words broadcast before a barrier wait, in order, until received. */
    if (PartitionSize > 1) {
        if (Self == 1) {
            for (i = 0; i < 5; i++) {
                Broadcast((Word)i);
            }
        }
        Barrier();
        if (Self != 1) {
            for (i = 0; i < 5; i++) {
                CHECK(ReceiveBroadcast() == (Word)i, "queued word %d", i);
            }
        }
    }
    /*
     * Late words and late arrivals: node 0 broadcasts 20 ms after a
     * barrier, and arrives at the next one 20 ms late, so that the others
     * are already waiting (where the nodes spin, inside reads of
     * BCAST_WAIT and COLL_GO: their 100 ms spin in strata-bcast-2-spin).
     */
    for (i = 0; i < LATE; i++) {
        Barrier();
        if (Self == 0) {
            poll_for_ms(20);
            Broadcast((Word)(0x1a7e0000U + i));
        } else {
            w = ReceiveBroadcast();
            CHECK(w == (Word)(0x1a7e0000U + i), "late word %d: %08x", i,
                  (unsigned)w);
        }
        Barrier();
        if (Self == 0) {
            poll_for_ms(20);
        }
        Barrier();
    }
    /*
     * Late words after one's own: node 1 broadcasts a word and at once
     * waits for node 0's next, which node 0 sends 20 ms after it received
     * node 1's.  Node 0 orders every word in the combining area's ring,
     * node 1's own too, which comes while node 1 waits in a BCAST_WAIT
     * read (where the nodes spin: strata-bcast-2-spin): the read waits on
     * past a word of its own, which it does not receive, and pops node
     * 0's there (docs/strata.rst, "Broadcasts received in a register
     * read").  Before, the read ended at node 1's own word with none to
     * pop, and node 1 waited for node 0's in the library's slower wait.
     */
    if (PartitionSize > 1) {
        unsigned before = (unsigned)nc_reg(TEMPEST_NC_BCAST_WAITED);

        for (i = 0; i < LATE; i++) {
            Barrier();
            if (Self == 1) {
                Broadcast((Word)(0x0be00000U + i));
            } else {
                w = ReceiveBroadcast();
                CHECK(w == (Word)(0x0be00000U + i), "own word %d: %08x", i,
                      (unsigned)w);
            }
            if (Self == 0) {
                poll_for_ms(20);
                Broadcast((Word)(0x1a7f0000U + i));
            } else {
                w = ReceiveBroadcast();
                CHECK(w == (Word)(0x1a7f0000U + i), "word after own %d: "
                      "%08x", i, (unsigned)w);
            }
        }
        Barrier();
        printf("node %d: %u of %d words after its own popped in a "
               "BCAST_WAIT read\n", Self,
               (unsigned)nc_reg(TEMPEST_NC_BCAST_WAITED) - before, LATE);
    }
    QueryBroadcast();
    /*
     * On the shared-memory fabric every word after the first collective
     * goes into the combining area's ring, written by the node that
     * broadcasts it (BCAST_WRITTEN, 1.24; node 0 also writes those it
     * held for room), and every node reads it there (BCAST_SHARED), some
     * of them popped by a read of BCAST_WAIT that waited for them
     * (BCAST_WAITED, 1.22), as collectives end in reads of COLL_WAIT
     * (COLL_WAITED, 1.21); on sockets none does.
     */
    printf("node %d: %u broadcast words read from the shared ring, %u "
           "written there, %u popped in a BCAST_WAIT read, %u collectives "
           "ended in a COLL_WAIT read\n", Self,
           (unsigned)nc_reg(TEMPEST_NC_BCAST_SHARED),
           (unsigned)nc_reg(TEMPEST_NC_BCAST_WRITTEN),
           (unsigned)nc_reg(TEMPEST_NC_BCAST_WAITED),
           (unsigned)nc_reg(TEMPEST_NC_COLL_WAITED));
    st_finish("strata_bcast");
}
