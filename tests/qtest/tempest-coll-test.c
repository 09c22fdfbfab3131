/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the control network (Strata sections 4.1 to 4.4) done by the
 * node controllers on the real fabric: barriers, reductions, segmented
 * scans through a combining tree with internal nodes, vectors, all-gather,
 * broadcast, the asynchronous global OR, and the failure cases
 * (docs/node-controller.rst, "Control network").
 */

#include "qemu/osdep.h"
#include "tempest-qtest.h"

#define SRC_BUF     RAM(0x100000)
#define DST_BUF     RAM(0x200000)
#define CQ_BASE     RAM(0x300000)
#define MAX_N       16

typedef struct Cluster {
    char *dir;
    unsigned n;
    QTestState *node[MAX_N];
} Cluster;

/*
 * @shm: the shared-memory fabric backend, whose links and combining area
 * are shared memory; else the fabric of sockets.
 */
static void start_cluster_on(Cluster *c, unsigned n, unsigned fanout,
                             bool shm)
{
    c->dir = g_dir_make_tmp("tempest-coll-XXXXXX", NULL);
    c->n = n;
    for (unsigned i = 0; i < n; i++) {
        c->node[i] = shm ?
            qtest_initf("-object tempest-fabric-shm,id=fab,addr=unix:%s,"
                        "node-id=%u,num-nodes=%u,cluster-id=0x77 "
                        "-M tempest,node-id=%u,num-nodes=%u,"
                        "fabric-backend=fab "
                        "-global tempest-nc.coll-fanout=%u -m 64M",
                        c->dir, i, n, i, n, fanout) :
            qtest_initf("-M tempest,node-id=%u,num-nodes=%u,"
                        "fabric=unix:%s,cluster-id=0x77 "
                        "-global tempest-nc.coll-fanout=%u -m 64M",
                        i, n, c->dir, fanout);
    }
    for (unsigned i = 0; i < n; i++) {
        gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

        while (qtest_readl(c->node[i], NC(TEMPEST_NC_FABRIC_STATE)) !=
               TEMPEST_FABRIC_READY && g_get_monotonic_time() < end) {
            g_usleep(1000);
        }
        g_assert_cmpuint(qtest_readl(c->node[i], NC(TEMPEST_NC_FABRIC_STATE)),
                         ==, TEMPEST_FABRIC_READY);
        g_assert_cmpuint(qtest_readl(c->node[i], NC(TEMPEST_NC_COLL_FANOUT)),
                         ==, fanout);
    }
}

static void start_cluster(Cluster *c, unsigned n, unsigned fanout)
{
    start_cluster_on(c, n, fanout, false);
}

static void stop_cluster(Cluster *c)
{
    for (unsigned i = 0; i < c->n; i++) {
        if (c->node[i]) {
            qtest_quit(c->node[i]);
        }
    }
    rmdir(c->dir);
    g_free(c->dir);
}

static uint32_t coll_start(QTestState *s, unsigned kind, unsigned fn,
                           unsigned variant, uint64_t value, unsigned lanes,
                           uint64_t dest, unsigned seg)
{
    return tq_command(s, TEMPEST_CMD_COLL_START, kind, fn | variant << 8,
                      value, lanes, dest, seg);
}

/* A barrier (an OR reduction) on every node; waits until all are done. */
static void barrier_all(Cluster *c)
{
    for (unsigned i = 0; i < c->n; i++) {
        g_assert_cmpuint(coll_start(c->node[i], TEMPEST_COLL_COMBINE,
                                    TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, 0,
                                    0, 0, 0), ==, TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < c->n; i++) {
        g_assert_cmpuint(tq_coll_wait(c->node[i]), ==, TEMPEST_COLL_ST_DONE);
    }
}

/* Every node contributes value[i]; returns nothing, checks the results. */
static void scalar_round(Cluster *c, unsigned fn, unsigned variant,
                         const uint64_t *value, const uint8_t *seg,
                         const uint64_t *want)
{
    for (unsigned i = 0; i < c->n; i++) {
        g_assert_cmpuint(coll_start(c->node[i], TEMPEST_COLL_COMBINE, fn,
                                    variant, value[i], 0, 0,
                                    seg ? seg[i] : 0), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < c->n; i++) {
        g_assert_cmpuint(tq_coll_wait(c->node[i]), ==, TEMPEST_COLL_ST_DONE);
        g_assert_cmphex(qtest_readq(c->node[i], NC(TEMPEST_NC_COLL_RESULT)),
                        ==, want[i]);
    }
}

/*
 * 4.1 and 4.3: a barrier (an OR reduction of 0), then reductions and the
 * manual's 16-node segmented scans, through a tree of fan-out 3 (nodes 1
 * to 3 are internal: the contributions of 12 nodes pass through them).
 */
static void test_sixteen_nodes(void)
{
    static const uint64_t case1[16] = { 0, 1, 2, 3, 0, 2, 4, 6,
                                        0, 3, 6, 9, 0, 4, 8, 12 };
    static const uint64_t case2[16] = { 0, 1, 2, 3, 4, 2, 4, 6,
                                        8, 3, 6, 9, 12, 4, 8, 12 };
    uint64_t v[16], want[16];
    uint8_t seg[16] = { 0 };
    Cluster c;

    start_cluster(&c, 16, 3);
    memset(v, 0, sizeof(v));
    memset(want, 0, sizeof(want));
    scalar_round(&c, TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, v, NULL, want);

    for (int i = 0; i < 16; i++) {
        v[i] = i / 4 + 1;
        want[i] = 40;
    }
    scalar_round(&c, TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, v, NULL, want);
    for (int i = 0; i < 16; i += 4) {
        seg[i] = TEMPEST_SEG_ELEMENT;
    }
    scalar_round(&c, TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, v, seg, case1);
    for (int i = 0; i < 16; i += 4) {
        seg[i] = TEMPEST_SEG_ARRAY;
    }
    scalar_round(&c, TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, v, seg, case2);
    for (unsigned i = 0; i < 16; i++) {
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_COLL_SEQ)), ==,
                         4);
    }
    stop_cluster(&c);
}

/*
 * 4.3.2 on an odd size: a backward max scan, a vector combine (results
 * written to guest memory), and an all-gather, on 5 nodes, fan-out 2.
 */
static void test_five_nodes(void)
{
    uint64_t v[5] = { 7, (uint64_t)-3, 9, 2, 9 }, want[5];
    Cluster c;

    start_cluster(&c, 5, 2);
    want[4] = INT64_MIN;
    want[3] = 9;
    want[2] = 9;
    want[1] = 9;
    want[0] = 9;
    scalar_round(&c, TEMPEST_COLL_MAX, TEMPEST_COLL_BACKSCAN, v, NULL, want);

    for (unsigned i = 0; i < 5; i++) {
        uint64_t lanes[3] = { i, 100 * i, 1ULL << i };

        qtest_memwrite(c.node[i], SRC_BUF, lanes, sizeof(lanes));
        g_assert_cmpuint(coll_start(c.node[i], TEMPEST_COLL_COMBINE,
                                    TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN,
                                    SRC_BUF, 3, DST_BUF, 0), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < 5; i++) {
        uint64_t got[3];
        uint64_t before = i * (i - 1) / 2;

        g_assert_cmpuint(tq_coll_wait(c.node[i]), ==, TEMPEST_COLL_ST_DONE);
        qtest_memread(c.node[i], DST_BUF, got, sizeof(got));
        g_assert_cmpuint(got[0], ==, before);
        g_assert_cmpuint(got[1], ==, 100 * before);
        g_assert_cmpuint(got[2], ==, (1ULL << i) - 1);
    }

    for (unsigned i = 0; i < 5; i++) {
        g_assert_cmpuint(coll_start(c.node[i], TEMPEST_COLL_ALLGATHER, 0, 0,
                                    0x1000 + i * i, 0, DST_BUF, 0), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < 5; i++) {
        uint64_t got[5];

        g_assert_cmpuint(tq_coll_wait(c.node[i]), ==, TEMPEST_COLL_ST_DONE);
        qtest_memread(c.node[i], DST_BUF, got, sizeof(got));
        for (unsigned j = 0; j < 5; j++) {
            g_assert_cmphex(got[j], ==, 0x1000 + j * j);
        }
    }
    stop_cluster(&c);
}

static uint32_t bcast(QTestState *s, uint64_t value)
{
    return tq_command3(s, TEMPEST_CMD_BCAST, value, 0, 0);
}

static uint32_t irq_bcast(QTestState *s)
{
    return qtest_readl(s, NC(TEMPEST_NC_IRQ_STATUS)) & TEMPEST_NC_IRQ_BCAST;
}

static void wait_nonzero(QTestState *s, uint64_t off)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

    while (!qtest_readl(s, NC(off)) && g_get_monotonic_time() < end) {
        g_usleep(200);
    }
}

/*
 * 4.4 and 4.2: broadcasts reach every other node, in the root's order;
 * the asynchronous global OR follows the nodes' bits.
 */
static void test_broadcast_and_async_or(void)
{
    Cluster c;

    start_cluster(&c, 4, 2);
    g_assert_cmpuint(bcast(c.node[3], 0xdead0003), ==, TEMPEST_CMD_SUCCESS);
    wait_nonzero(c.node[3], TEMPEST_NC_BCAST_SENT);
    /* Delivered after its command (node 0's acknowledgement): IRQ_BCAST. */
    g_assert_cmphex(irq_bcast(c.node[3]), ==, TEMPEST_NC_IRQ_BCAST);
    g_assert_cmpuint(bcast(c.node[0], 0xbeef0000), ==, TEMPEST_CMD_SUCCESS);
    for (unsigned i = 0; i < 4; i++) {
        uint64_t want[2] = { 0xdead0003, 0xbeef0000 };
        unsigned want_src[2] = { 3, 0 };
        unsigned k = 0;

        for (unsigned j = 0; j < 2; j++) {
            if (want_src[j] == i) {
                continue;
            }
            wait_nonzero(c.node[i], TEMPEST_NC_BCAST_AVAIL);
            g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_POP)),
                             ==, 1);
            g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_SRC)),
                             ==, want_src[j]);
            g_assert_cmphex(qtest_readq(c.node[i],
                                        NC(TEMPEST_NC_BCAST_VALUE)), ==,
                            want[j]);
            k++;
        }
        g_assert_cmpuint(k, ==, i == 0 || i == 3 ? 1 : 2);
        /* Nothing more: a pop of an empty queue says so. */
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_POP)),
                         ==, 0);
    }

    qtest_writel(c.node[2], NC(TEMPEST_NC_AOR_SET), 1);
    for (unsigned i = 0; i < 4; i++) {
        wait_nonzero(c.node[i], TEMPEST_NC_AOR_GLOBAL);
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_AOR_GLOBAL)),
                         ==, 1);
    }
    /*
     * A barrier is a fence for the OR bits: each node's bit goes to the
     * root on the same link and ahead of its barrier contribution, and
     * any change of the OR comes down ahead of the barrier's result.  So
     * after it every node sees the OR of the bits set before it.
     */
    qtest_writel(c.node[1], NC(TEMPEST_NC_AOR_SET), 1);
    barrier_all(&c);
    qtest_writel(c.node[2], NC(TEMPEST_NC_AOR_SET), 0);
    barrier_all(&c);
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_AOR_GLOBAL)),
                         ==, 1);
    }
    qtest_writel(c.node[1], NC(TEMPEST_NC_AOR_SET), 0);
    for (unsigned i = 0; i < 4; i++) {
        gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

        while (qtest_readl(c.node[i], NC(TEMPEST_NC_AOR_GLOBAL)) &&
               g_get_monotonic_time() < end) {
            g_usleep(200);
        }
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_AOR_GLOBAL)),
                         ==, 0);
    }
    stop_cluster(&c);
}

/* Pops node @i's next word: from @src, @value. */
static void pop_word(Cluster *c, unsigned i, unsigned src, uint64_t value)
{
    QTestState *s = c->node[i];

    wait_nonzero(s, TEMPEST_NC_BCAST_AVAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_BCAST_POP)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_BCAST_SRC)), ==, src);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_BCAST_VALUE)), ==, value);
}

/*
 * 1.24, on shared memory: once the cluster combines in the shared area
 * (after its first collective), each node writes its own broadcast words
 * into the area's ring (BCAST_WRITTEN) and every node, node 0 too, reads
 * every word there (BCAST_SHARED), in one order.  A word that finds no
 * room (a node has not taken the word a ring before it) goes to node 0
 * as a frame; node 0 holds it, its sender's BCAST stays pending, and
 * node 0 writes it once the readers have taken words.
 */
static void test_ring_writers(void)
{
    static const unsigned order[3] = { 3, 1, 0 };
    Cluster c;

    start_cluster_on(&c, 4, 2, true);
    barrier_all(&c);
    for (unsigned k = 0; k < 3; k++) {
        QTestState *s = c.node[order[k]];

        g_assert_cmpuint(bcast(s, 0x5100 + order[k]), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_BCAST_SENT, ~0U, 1), ==,
                         1);
        if (k == 0) {
            /*
             * Sent inside its command (the ring read back), and no word
             * came: no IRQ_BCAST (2026-12-02; before, one a word).
             */
            g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_BCAST_SENT)), ==,
                             1);
            g_assert_cmphex(irq_bcast(s), ==, 0);
        }
    }
    for (unsigned i = 0; i < 4; i++) {
        for (unsigned k = 0; k < 3; k++) {
            if (order[k] != i) {
                pop_word(&c, i, order[k], 0x5100 + order[k]);
            }
        }
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_POP)),
                         ==, 0);
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_SHARED)),
                         ==, 3);
        g_assert_cmpuint(qtest_readl(c.node[i],
                                     NC(TEMPEST_NC_BCAST_WRITTEN)), ==,
                         i == 2 ? 0 : 1);
    }

    /*
     * Node 2 broadcasts a ring's worth (the others, 3 words taken each,
     * take none of them): all written by node 2, each sent inside its
     * command, so none raises IRQ_BCAST (acknowledged first: the words
     * node 2 took raised it); the next finds no room.
     */
    qtest_writel(c.node[2], NC(TEMPEST_NC_IRQ_ACK), TEMPEST_NC_IRQ_BCAST);
    g_assert_cmphex(irq_bcast(c.node[2]), ==, 0);
    for (unsigned w = 0; w < TEMPEST_NC_BCAST_FIFO; w++) {
        g_assert_cmpuint(bcast(c.node[2], w), ==, TEMPEST_CMD_SUCCESS);
    }
    g_assert_cmphex(irq_bcast(c.node[2]), ==, 0);
    g_assert_cmpuint(qtest_readl(c.node[2], NC(TEMPEST_NC_BCAST_SENT)), ==,
                     TEMPEST_NC_BCAST_FIFO);
    g_assert_cmpuint(qtest_readl(c.node[2], NC(TEMPEST_NC_BCAST_WRITTEN)),
                     ==, TEMPEST_NC_BCAST_FIFO);
    g_assert_cmpuint(bcast(c.node[2], 0xf11), ==, TEMPEST_CMD_SUCCESS);
    g_usleep(100 * 1000);
    g_assert_cmpuint(qtest_readl(c.node[2], NC(TEMPEST_NC_BCAST_SENT)), ==,
                     TEMPEST_NC_BCAST_FIFO);
    g_assert_cmpuint(bcast(c.node[2], 0xf12), ==, TEMPEST_CMD_RETRY);
    /* One word taken by each reader: room, and node 0 writes the held. */
    for (unsigned i = 0; i < 4; i++) {
        if (i != 2) {
            pop_word(&c, i, 2, 0);
        }
    }
    g_assert_cmpuint(tq_wait_reg(c.node[2], TEMPEST_NC_BCAST_SENT, ~0U,
                                 TEMPEST_NC_BCAST_FIFO + 1), ==,
                     TEMPEST_NC_BCAST_FIFO + 1);
    /* The held word went out after its command returned: IRQ_BCAST. */
    g_assert_cmphex(irq_bcast(c.node[2]), ==, TEMPEST_NC_IRQ_BCAST);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_BCAST_WRITTEN)),
                     ==, 2);
    g_assert_cmpuint(qtest_readl(c.node[2], NC(TEMPEST_NC_BCAST_WRITTEN)),
                     ==, TEMPEST_NC_BCAST_FIFO);
    for (unsigned i = 0; i < 4; i++) {
        if (i == 2) {
            continue;
        }
        for (unsigned w = 1; w < TEMPEST_NC_BCAST_FIFO; w++) {
            pop_word(&c, i, 2, w);
        }
        pop_word(&c, i, 2, 0xf11);
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_BCAST_LOST)),
                         ==, 0);
    }
    stop_cluster(&c);
}

/*
 * Misuse is reported, not hung: nodes that start different collectives
 * all see a mismatch; a second start while one is pending fails; bad
 * descriptions fail before anything happens; a node that dies fails the
 * pending collective of the others.
 */
static void test_failures(void)
{
    Cluster c;
    QTestState *s;

    start_cluster(&c, 3, 2);
    s = c.node[0];
    g_assert_cmpuint(coll_start(s, 7, 0, 0, 0, 0, 0, 0), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_COLL);
    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_COMBINE, 9, 0, 0, 0, 0, 0),
                     ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_COMBINE, 0, 0, 0x10, 4,
                                DST_BUF, 0), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_ALLGATHER, 0, 0, 1, 0,
                                RAM(64 * 1024 * 1024 - 8), 0), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);

    /* Node 0 reduces, the others scan: everyone is told. */
    g_assert_cmpuint(coll_start(c.node[0], TEMPEST_COLL_COMBINE,
                                TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, 1, 0,
                                0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(coll_start(c.node[0], TEMPEST_COLL_COMBINE,
                                TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, 1, 0,
                                0, 0), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BUSY);
    for (unsigned i = 1; i < 3; i++) {
        g_assert_cmpuint(coll_start(c.node[i], TEMPEST_COLL_COMBINE,
                                    TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, 1, 0,
                                    0, 0), ==, TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmpuint(tq_coll_wait(c.node[i]), ==, TEMPEST_COLL_ST_ERROR);
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_COLL_ERROR)),
                         ==, TEMPEST_COLL_E_MISMATCH);
    }

    /* Node 2 dies while the others wait in a barrier. */
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(coll_start(c.node[i], TEMPEST_COLL_COMBINE,
                                    TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, 0, 0,
                                    0, 0), ==, TEMPEST_CMD_SUCCESS);
    }
    qtest_quit(c.node[2]);
    c.node[2] = NULL;
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_coll_wait(c.node[i]), ==, TEMPEST_COLL_ST_ERROR);
        g_assert_cmpuint(qtest_readl(c.node[i], NC(TEMPEST_NC_COLL_ERROR)),
                         ==, TEMPEST_COLL_E_PEER_DOWN);
    }
    g_assert_cmpuint(coll_start(c.node[0], TEMPEST_COLL_COMBINE, 0, 0, 0, 0,
                                0, 0), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_NO_FABRIC);
    stop_cluster(&c);
}

/* One node: every collective completes at once, with itself. */
static void test_one_node(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");

    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD,
                                TEMPEST_COLL_SCAN, 42, 0, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_STATUS)), ==,
                     TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_COLL_RESULT)), ==, 0);
    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD,
                                TEMPEST_COLL_REDUCE, 42, 0, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_COLL_RESULT)), ==, 42);
    qtest_quit(s);
}

/*
 * COLL_WAIT and COLL_GO (1.21) and BCAST_WAIT (1.22), the wait window's
 * registers.  A qtest access is not a vCPU's, so none waits: COLL_WAIT
 * is the pending collective's status, PENDING while pending, then DONE,
 * which acknowledges IRQ_COLL; COLL_GO commits the bank and, after a
 * COLL_START that succeeded, reads as COLL_WAIT, else as
 * TEMPEST_NC_GO_CMD plus the command's status; BCAST_WAIT pops a word
 * as BCAST_POP does.  The rest of the window, writes and other sizes are
 * guest errors.
 */
static void test_wait_register(void)
{
    Cluster c;
    QTestState *s;
    uint32_t go;

    start_cluster(&c, 2, 2);
    s = c.node[0];
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_WAIT)), ==,
                     TEMPEST_COLL_ST_IDLE);
    g_assert_cmpuint(coll_start(s, TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD,
                                TEMPEST_COLL_REDUCE, 5, 0, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_WAIT)), ==,
                     TEMPEST_COLL_ST_PENDING);
    g_assert_cmpuint(coll_start(c.node[1], TEMPEST_COLL_COMBINE,
                                TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, 7, 0,
                                0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_coll_wait(c.node[1]), ==, TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(tq_coll_wait(s), ==, TEMPEST_COLL_ST_DONE);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_IRQ_STATUS)) &
                    TEMPEST_NC_IRQ_COLL, ==, TEMPEST_NC_IRQ_COLL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_WAIT)), ==,
                     TEMPEST_COLL_ST_DONE);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_IRQ_STATUS)) &
                    TEMPEST_NC_IRQ_COLL, ==, 0);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_COLL_RESULT)), ==, 12);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_WAITED)), ==, 0);

    /* COLL_GO: a COLL_START, then the status (the other node later). */
    tq_stage(s, TEMPEST_CMD_COLL_START, TEMPEST_COLL_COMBINE,
          TEMPEST_COLL_MAX | TEMPEST_COLL_REDUCE << 8, 5, 0, 0, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_GO)), ==,
                     TEMPEST_COLL_ST_PENDING);
    tq_stage(c.node[1], TEMPEST_CMD_COLL_START, TEMPEST_COLL_COMBINE,
          TEMPEST_COLL_MAX | TEMPEST_COLL_REDUCE << 8, 9, 0, 0, 0);
    go = qtest_readl(c.node[1], NC(TEMPEST_NC_COLL_GO));
    g_assert_true(go == TEMPEST_COLL_ST_PENDING ||
                  go == TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(tq_coll_wait(c.node[1]), ==, TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(tq_coll_wait(s), ==, TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_COLL_RESULT)), ==, 9);
    /*
     * The same read again commits the bank again: a second start while
     * one is pending is refused, and nothing waits.
     */
    tq_stage(s, TEMPEST_CMD_COLL_START, TEMPEST_COLL_COMBINE,
          TEMPEST_COLL_OR | TEMPEST_COLL_REDUCE << 8, 0, 0, 0, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_GO)), ==,
                     TEMPEST_COLL_ST_PENDING);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_GO)), ==,
                     TEMPEST_NC_GO_CMD + TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), !=,
                     TEMPEST_CMD_E_NONE);
    g_assert_cmpuint(coll_start(c.node[1], TEMPEST_COLL_COMBINE,
                                TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, 0, 0, 0,
                                0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_coll_wait(s), ==, TEMPEST_COLL_ST_DONE);
    /* ... another command: its status, plus TEMPEST_NC_GO_CMD. */
    tq_stage(s, TEMPEST_CMD_BCAST, 77, 0, 0, 0, 0, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_GO)), ==,
                     TEMPEST_NC_GO_CMD + TEMPEST_CMD_SUCCESS);
    tq_stage(s, 0xffff, 0, 0, 0, 0, 0, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_COLL_GO)), ==,
                     TEMPEST_NC_GO_CMD + TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_OP);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 0);

    /*
     * BCAST_WAIT (1.22) pops as BCAST_POP does, without waiting for a
     * qtest: node 0's word 77 on node 1 once it came, then none; nothing
     * on node 0 (a sender does not receive its own word).  The read that
     * pops the last word, with no broadcast of node 1's in flight,
     * acknowledges the IRQ_BCAST of its arrival, as COLL_WAIT does
     * IRQ_COLL above.
     */
    g_assert_cmpuint(tq_wait_reg(c.node[1], TEMPEST_NC_BCAST_AVAIL, ~0U, 1),
                     ==, 1);
    g_assert_cmphex(qtest_readl(c.node[1], NC(TEMPEST_NC_IRQ_STATUS)) &
                    TEMPEST_NC_IRQ_BCAST, ==, TEMPEST_NC_IRQ_BCAST);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_BCAST_WAIT)), ==, 1);
    g_assert_cmphex(qtest_readl(c.node[1], NC(TEMPEST_NC_IRQ_STATUS)) &
                    TEMPEST_NC_IRQ_BCAST, ==, 0);
    g_assert_cmpuint(qtest_readq(c.node[1], NC(TEMPEST_NC_BCAST_VALUE)), ==,
                     77);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_BCAST_SRC)), ==, 0);
    for (int n = 0; n < 2; n++) {
        g_assert_cmpuint(qtest_readl(c.node[n], NC(TEMPEST_NC_BCAST_WAIT)), ==,
                         0);
        g_assert_cmpuint(qtest_readl(c.node[n], NC(TEMPEST_NC_BCAST_WAITED)),
                         ==, 0);
    }

    qtest_writel(s, NC(TEMPEST_NC_BCAST_WAIT), 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_BCAST_WAIT);
    qtest_writel(s, NC(TEMPEST_NC_COLL_WAIT), 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_COLL_WAIT);
    qtest_writel(s, NC(TEMPEST_NC_COLL_GO), 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_COLL_GO);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_WAIT + 0x10)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_OFFSET);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_WAIT + 0x10);
    qtest_writel(s, NC(TEMPEST_NC_WAIT + TEMPEST_NC_WAIT_SIZE - 4), 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_OFFSET);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_COLL_WAIT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 6);
    /* Around the window: the command line's, and nothing. */
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_WAIT - 4)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 6);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_WAIT +
                                      TEMPEST_NC_WAIT_SIZE)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_OFFSET);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_WAIT + TEMPEST_NC_WAIT_SIZE);
    stop_cluster(&c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/coll/one-node", test_one_node);
    qtest_add_func("/tempest/coll/sixteen-nodes", test_sixteen_nodes);
    qtest_add_func("/tempest/coll/five-nodes", test_five_nodes);
    qtest_add_func("/tempest/coll/broadcast-and-async-or",
                   test_broadcast_and_async_or);
    qtest_add_func("/tempest/coll/ring-writers", test_ring_writers);
    qtest_add_func("/tempest/coll/failures", test_failures);
    qtest_add_func("/tempest/coll/wait-register", test_wait_register);

    return g_test_run();
}
