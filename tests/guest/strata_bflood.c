/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata 4.4 under pressure: broadcasts never drop.  The control network
 * holds a broadcaster while any node's broadcast queue is full, as the
 * CM-5's did:
 *   1  node 0 broadcasts WORDS words back to back (waiting for
 *      QueryBroadcast before each, as a careful program would) while
 *      every other node is slow: it works a while before each receive;
 *   2  a BroadcastVector of VEC words (past any queue, no barriers in
 *      it) from node 0.
 * Every word arrives, in order, and BCAST_LOST stays 0 everywhere.
 * Prints "strata_bflood ok".
 * Usage: strata_bflood [ROUNDS]   (of 1, the flood; default 1: a
 * checkpoint test makes it long enough to be cut in the middle).  With
 * more than one round node 0 prints "strata_bflood: round R of ROUNDS"
 * after each, so that such a test can cut it where it wants.
 */
#include <stdlib.h>

#include "strata-util.h"
#include "tempest/nc.h"

#define WORDS   100000
#define VEC     1000000

static Word word(int i)
{
    return (Word)i * 0x9e3779b9U + 12345U;
}

static void slow(int i)
{
    volatile unsigned spin = 0;

    if (i % 512 == 0) {
        while (spin < 200000) {     /* busy: the queue fills behind us */
            spin++;
        }
    }
}

static void flood(void)
{
    int i, bad = 0;

    if (Self == 0) {
        for (i = 0; i < WORDS; i++) {
            while (!QueryBroadcast()) {
                /* the previous word is not out yet */
            }
            Broadcast(word(i));
        }
    } else {
        for (i = 0; i < WORDS; i++) {
            slow(i);
            if (ReceiveBroadcast() != word(i) && bad++ == 0) {
                CHECK(0, "word %d of the flood is wrong", i);
            }
        }
    }
    Barrier();
}

static void vector(void)
{
    Word *v = malloc(VEC * sizeof(Word)), *out = malloc(VEC * sizeof(Word));
    int i, from = 0, bad = 0;

    CHECK(v && out, "out of memory");
    if (!v || !out) {
        return;
    }
    for (i = 0; i < VEC; i++) {
        v[i] = word(i) ^ 0x5a5a5a5aU;
        out[i] = 0;
    }
    if (Self == from) {
        BroadcastVector(out, v, VEC);
        ReceiveBroadcastVector(out, VEC);
    } else {
        ReceiveBroadcastVector(out, VEC);
    }
    for (i = 0; i < VEC; i++) {
        if (out[i] != v[i] && bad++ == 0) {
            CHECK(0, "vector word %d is 0x%x", i, (unsigned)out[i]);
        }
    }
    free(v);
    free(out);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1, r;

    StrataInit();
    for (r = 0; r < rounds; r++) {
        flood();
        if (rounds > 1 && Self == 0) {
            printf("strata_bflood: round %d of %d\n", r + 1, rounds);
        }
    }
    vector();
    CHECK(nc_reg(TEMPEST_NC_BCAST_LOST) == 0, "%u broadcast words lost",
          nc_reg(TEMPEST_NC_BCAST_LOST));
    st_finish("strata_bflood");
}
