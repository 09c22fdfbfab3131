/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The DSM demo's update protocol (docs/dsm.rst, "The update protocol"),
 * on 3 nodes: one 256-byte block in page 1 of the segment (its home node
 * 1), written by node 0, read by nodes 1 and 2.
 *
 *   dsm_update ok         a reader's first load waits for push 1; after
 *                         the writer's store and before its push the
 *                         readers still see the last push; after
 *                         dsm_update_wait(n) they see push n; after
 *                         dsm_update_end() a load anywhere sees the
 *                         writer's last store, which was never pushed
 *                         (sequential consistency again); then every node
 *                         stores to the block in turn through the
 *                         invalidation protocol.  "dsm_update ok" on each
 *                         node.
 *   dsm_update bad-store  node 1, a reader, stores to the block: it stops
 *                         with status 1 and says why.
 *   dsm_update wait-shared  (no update protocol) nodes 1 and 2 wait in
 *                         tempest_wait() for a condition that loads the
 *                         shared block, which node 0 stores to later: the
 *                         condition's misses are taken inside the wait's
 *                         spin (on a one-vCPU node the device's interrupt
 *                         is off there).  "dsm_update wait-shared ok".
 */
#include <stdio.h>
#include <string.h>

#include "dsm.h"
#include "tempest/rt.h"

#define ROUNDS  20
#define BLOCK   256

static int failed;

static void check(bool ok, const char *what, uint64_t got, uint64_t want)
{
    if (!ok) {
        printf("dsm_update: node %u: %s: %llu, expected %llu\n",
               TPPI_self_address, what, (unsigned long long)got,
               (unsigned long long)want);
        failed = 1;
    }
}

/* wait-shared: the flag, in the shared block, is set. */
static int flag_set(void *arg)
{
    return ((volatile uint64_t *)arg)[2] == 7;
}

static int wait_shared(volatile uint64_t *b)
{
    uint64_t t;

    dsm_barrier();
    if (TPPI_self_address == 0) {
        t = rt_time_ns();
        while (rt_time_ns() - t < 5000000) {
            /* 5 ms: the others are waiting by then */
        }
        b[2] = 7;               /* invalidates their copies */
    } else {
        tempest_wait(flag_set, (void *)b);
    }
    dsm_barrier();
    printf("dsm_update wait-shared ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    /* Shared: every access a real one (another node changes it). */
    volatile uint64_t *b = (uint64_t *)(TPPI_SEGMENT_BASE +
                                        TPPI_PAGE_SIZE);
    struct dsm_update_blk u = { (void *)b, 0, (1 << 1) | (1 << 2) };
    TPPI_NodeId me = TPPI_self_address, n;
    bool bad = argc > 1 && !strcmp(argv[1], "bad-store");
    unsigned r;
    uint64_t v;

    if (TPPI_num_nodes != 3 || dsm_init(BLOCK, NULL, NULL) != 0) {
        printf("dsm_update: 3 nodes with tagged memory\n");
        return 2;
    }
    if (me == 0) {
        b[0] = 100;             /* the invalidation protocol's */
    }
    dsm_barrier();
    if (argc > 1 && !strcmp(argv[1], "wait-shared")) {
        return wait_shared(b);
    }
    if (dsm_update_begin(&u, 1) != 0) {
        return 1;
    }
    if (bad) {
        if (me == 1) {
            b[1] = 1;           /* stops this node */
            printf("dsm_update: node 1 stored to node 0's block\n");
        }
        return 0;
    }
    if (me != 0) {
        v = b[0];               /* no copy yet, or push 1 */
        check(v == 100, "first load", v, 100);
    }
    for (r = 2; r <= ROUNDS; r++) {
        if (me == 0) {
            b[0] = r;
        }
        dsm_barrier();
        if (me != 0) {
            uint64_t last = r == 2 ? 100 : r - 1;   /* push r - 1 */

            v = b[0];
            check(v == last, "before the push", v, last);
        }
        dsm_barrier();
        if (me == 0) {
            check(dsm_push((void *)b) == r, "push number", r, r);
        } else {
            dsm_update_wait((void *)b, r);
            v = b[0];
            check(v == r, "after the push", v, r);
        }
        dsm_barrier();
    }
    if (me == 0) {
        b[0] = 999;             /* never pushed */
    }
    dsm_update_end();
    v = b[0];
    check(v == 999, "after dsm_update_end", v, 999);
    dsm_barrier();
    for (n = 0; n < TPPI_num_nodes; n++) {
        if (n == me) {
            b[0] += 1;
        }
        dsm_barrier();
    }
    v = b[0];
    check(v == 1002, "stores after the end", v, 1002);
    dsm_barrier();
    if (!failed) {
        printf("dsm_update ok\n");
    }
    return failed;
}
