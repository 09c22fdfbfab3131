/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control network's shared combining area (docs/strata.rst,
 * "Combining on shared counters"): one sealed memfd that node 0 of a
 * shared-memory cluster makes and passes to every node with its link's
 * ACK (tempest-fabric-shm.c), and that the node controllers combine in
 * (tempest-nc-coll-shm.c).
 *
 * After the header come COLL_AREA_ROUNDS rounds; collective k (counted
 * from the first one combined here) uses round k % COLL_AREA_ROUNDS.  A
 * round is a control line (arrivals, the completed collective, its
 * error, sleepers), then one slot per node (its contribution, tagged
 * with the collective's number + 1), then one result line per node.
 * After the rounds, one line per node: how the last to arrive wakes it
 * (version 2), and the lock and place of its RQ, which peers on this host
 * write straight into (version 3, rq-lock.h), and how many broadcast
 * words it has taken (version 5).  Then the broadcast ring (version 5):
 * each word is written there for every node to read, instead of going
 * down the tree; since version 6 by the node that broadcasts it, in the
 * order of the numbers the writers claim (B_NEXT), where it was node 0
 * alone, which every other node's word reached as a frame first.
 * Every node of the cluster can write all of it: whatever is read from
 * it is checked before use, and nothing depends on it being right but
 * the collective's outcome (a wrong one is a MISMATCH error).
 */
#ifndef HW_TEMPEST_COLL_AREA_H
#define HW_TEMPEST_COLL_AREA_H

#include "standard-headers/tempest/tempest-hw.h"

#define COLL_AREA_MAGIC     0x41534354U     /* "TCSA" */
#define COLL_AREA_VERSION   6
#define COLL_AREA_ROUNDS    4
#define COLL_AREA_HDR       64

/* The header: who made it, for whom. */
enum {
    COLL_AREA_H_MAGIC = 0,          /* u32 */
    COLL_AREA_H_VERSION = 4,        /* u32 */
    COLL_AREA_H_CLUSTER = 8,        /* u64 */
    COLL_AREA_H_NODES = 16,         /* u32 */
};

/* A round's control line. */
enum {
    COLL_AREA_R_ARRIVED = 0,        /* u32: arrivals, every use of it */
    COLL_AREA_R_DONE = 4,           /* u32: collective + 1 completed (futex) */
    COLL_AREA_R_ERROR = 8,          /* u32: its error */
    COLL_AREA_R_SLEEPERS = 12,      /* u32: nodes waiting on DONE's futex */
    COLL_AREA_R_CTL = 64,
};

/* A node's slot: its contribution. */
enum {
    COLL_AREA_S_TAG = 0,            /* u32: collective + 1, written last */
    COLL_AREA_S_HDR = 4,            /* u32: kind | fn << 8 | variant << 16 */
    COLL_AREA_S_LANES = 8,          /* u32 */
    COLL_AREA_S_SEG = 12,           /* u32 */
    COLL_AREA_S_VALS = 64,          /* u64 [lanes] */
    COLL_AREA_SLOT = 64 + 8 * TEMPEST_COLL_MAX_LANES,
};

#define COLL_AREA_OUT       (8 * TEMPEST_COLL_MAX_LANES)

/*
 * A node's line (version 2): WATCH is set while one of its vCPUs sleeps
 * on the pending round's DONE itself (the last to arrive wakes it with
 * DONE's futex); otherwise the last to arrive adds one to WAKE, the
 * futex the node's waiter thread sleeps on.
 */
enum {
    COLL_AREA_N_WAKE = 0,           /* u32: futex of the node's waiter */
    COLL_AREA_N_WATCH = 4,          /* u32: a vCPU sleeps on DONE */
    COLL_AREA_N_RQ = 8,             /* RqLine (rq-lock.h), 8-aligned */
    /*
     * A line of their own since version 6: the node stores BTAKEN for
     * every word it takes, which moved the line its RQ's lock is in away
     * from the peers that write straight into that RQ.
     */
    COLL_AREA_N_BTAKEN = 64,        /* u64: broadcast words taken */
    COLL_AREA_N_BWATCH = 72,        /* u32: a vCPU waits on B_COUNT (1),
                                       in its futex (2, version 6) */
    COLL_AREA_NODE = 128,
};

/*
 * The broadcast ring (version 5): a control line, then COLL_AREA_BSLOTS
 * slots.  Broadcast word i (counted over the cluster's life, tree words
 * included) goes to slot i % COLL_AREA_BSLOTS, its TAG (i + 1) written
 * last.  Version 6: its writer (the node that broadcasts it, or node 0
 * for a word it held) claims i at B_NEXT, only when every node has taken
 * word i - COLL_AREA_BSLOTS (N_BTAKEN) and node 0 holds no word for room
 * (B_HELD), and after the tag moves B_COUNT past every word written in a
 * row (any writer may move it past another's).  Readers read below
 * B_COUNT.
 */
#define COLL_AREA_BSLOTS    TEMPEST_NC_BCAST_FIFO
/*
 * Each on a cache line of its own (version 6): readers spin on B_COUNT,
 * writers claim at B_NEXT, and B_HELD is read by both and seldom written.
 */
enum {
    COLL_AREA_B_COUNT = 0,          /* u32: words written (futex) */
    COLL_AREA_B_NEXT = 64,          /* u32: the next word's number (6) */
    COLL_AREA_B_HELD = 128,         /* u32: node 0 holds a word for room */
    COLL_AREA_B_CTL = 192,
    COLL_AREA_BS_TAG = 0,           /* u32: word + 1, written last */
    COLL_AREA_BS_SRC = 4,           /* u32 */
    COLL_AREA_BS_VALUE = 8,         /* u64 */
    COLL_AREA_BSLOT = 16,
};

static inline size_t coll_area_round_bytes(unsigned nodes)
{
    return COLL_AREA_R_CTL + (size_t)nodes * (COLL_AREA_SLOT + COLL_AREA_OUT);
}

/* A node's line, after the rounds (node = nodes: the end of the lines). */
static inline size_t coll_area_node(unsigned nodes, unsigned node)
{
    return COLL_AREA_HDR + COLL_AREA_ROUNDS * coll_area_round_bytes(nodes) +
           (size_t)node * COLL_AREA_NODE;
}

/* The broadcast ring's control line; its slot @i is after it. */
static inline size_t coll_area_bring(unsigned nodes)
{
    return coll_area_node(nodes, nodes);
}

static inline size_t coll_area_bslot(unsigned nodes, uint64_t word)
{
    return coll_area_bring(nodes) + COLL_AREA_B_CTL +
           (size_t)(word % COLL_AREA_BSLOTS) * COLL_AREA_BSLOT;
}

/* The area's size for a cluster of nodes, whole pages of 64 KiB. */
static inline size_t coll_area_bytes(unsigned nodes)
{
    return (coll_area_bring(nodes) + COLL_AREA_B_CTL +
            COLL_AREA_BSLOTS * COLL_AREA_BSLOT + 0xffff) & ~(size_t)0xffff;
}

static inline size_t coll_area_round(unsigned nodes, unsigned round)
{
    return COLL_AREA_HDR + round * coll_area_round_bytes(nodes);
}

static inline size_t coll_area_slot(unsigned nodes, unsigned round,
                                    unsigned node)
{
    return coll_area_round(nodes, round) + COLL_AREA_R_CTL +
           (size_t)node * COLL_AREA_SLOT;
}

static inline size_t coll_area_out(unsigned nodes, unsigned round,
                                   unsigned node)
{
    return coll_area_round(nodes, round) + COLL_AREA_R_CTL +
           (size_t)nodes * COLL_AREA_SLOT + (size_t)node * COLL_AREA_OUT;
}

#endif /* HW_TEMPEST_COLL_AREA_H */
