/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the node controller's transfer engine and fetch-and-op (after
 * FLASH's MAGIC, sections 3 and 3.6) between two QEMUs on the real
 * fabric: memory copy with odd alignments, typed transfers into posted
 * buffers (waiting for one, refusing when none fits), fetch-and-op at the
 * home node, and every fail case of the initiation protocol.
 */

#include "qemu/osdep.h"
#include "tempest-qtest.h"

#define CQ_BASE     RAM(0x300000)
#define RQ_BASE     RAM(0x200000)

typedef struct Pair {
    char *dir;
    QTestState *n[2];
    unsigned cq[2];     /* next CQ slot to read */
} Pair;

/* Two nodes; @extra: more options for both. */
static void start_pair_with(Pair *p, const char *extra)
{
    p->dir = g_dir_make_tmp("tempest-xfer-XXXXXX", NULL);
    for (int i = 0; i < 2; i++) {
        p->n[i] = qtest_initf("-M tempest,node-id=%d,num-nodes=2,"
                              "fabric=unix:%s,cluster-id=0x99 -m 64M %s",
                              i, p->dir, extra);
        p->cq[i] = 0;
    }
    for (int i = 0; i < 2; i++) {
        gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

        while (qtest_readl(p->n[i], NC(TEMPEST_NC_FABRIC_STATE)) !=
               TEMPEST_FABRIC_READY && g_get_monotonic_time() < end) {
            g_usleep(1000);
        }
        g_assert_cmpuint(tq_command(p->n[i], TEMPEST_CMD_RING_SETUP,
                                 TEMPEST_RING_CQ, CQ_BASE, 64, 0, 0, 0), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_command(p->n[i], TEMPEST_CMD_RING_SETUP,
                                 TEMPEST_RING_RQ, RQ_BASE, 16, 0, 0, 0), ==,
                         TEMPEST_CMD_SUCCESS);
    }
}

static void start_pair(Pair *p)
{
    start_pair_with(p, "");
}

static void stop_pair(Pair *p)
{
    for (int i = 0; i < 2; i++) {
        qtest_quit(p->n[i]);
    }
    rmdir(p->dir);
    g_free(p->dir);
}

/* Wait for the next control event of node i; returns its type. */
static uint32_t next_event(Pair *p, int i, uint64_t ev[3], uint32_t *node)
{
    uint64_t slot = CQ_BASE + (p->cq[i] % 64) * TEMPEST_EV_SIZE;
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t ctl;

    while (!((ctl = qtest_readl(p->n[i], slot)) & TEMPEST_EV_VALID) &&
           g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    g_assert_cmphex(ctl & TEMPEST_EV_VALID, ==, TEMPEST_EV_VALID);
    *node = qtest_readl(p->n[i], slot + TEMPEST_EV_NODE);
    for (int k = 0; k < 3; k++) {
        ev[k] = qtest_readq(p->n[i], slot + TEMPEST_EV_A + 8 * k);
    }
    qtest_writel(p->n[i], slot, 0);
    qtest_writel(p->n[i], NC(TEMPEST_NC_RQ_DOORBELL), 1);
    p->cq[i]++;
    return ctl & TEMPEST_EV_TYPE_MASK;
}

/*
 * FLASH 3.3-3.5: memory copy of 200 KB from an odd source offset to an
 * odd destination offset, stored straight into the destination.
 */
static void test_memory_copy(void)
{
    const size_t len = 200 * 1024 + 13;
    uint64_t src = RAM(0x400000 + 3), dst = RAM(0x800000 + 7), ev[3];
    g_autofree uint8_t *data = g_malloc(len), *got = g_malloc(len);
    uint32_t node, mid;
    Pair p;

    for (size_t i = 0; i < len; i++) {
        data[i] = i * 7 + (i >> 8);
    }
    start_pair(&p);
    qtest_memwrite(p.n[0], src, data, len);
    g_assert_cmpuint(tq_command(p.n[0], TEMPEST_CMD_XFER, 1, src, len, dst,
                             0xc00c1e, 0), ==, TEMPEST_CMD_SUCCESS);
    mid = qtest_readq(p.n[0], NC(TEMPEST_NC_CMD_RESULT));
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmpuint(node, ==, 0);
    g_assert_cmphex(ev[0], ==, dst);
    g_assert_cmpuint(ev[1], ==, len);
    g_assert_cmphex(ev[2], ==, 0xc00c1e);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[0], ==, mid);
    g_assert_cmphex(ev[1], ==, 0xc00c1e);
    g_assert_cmpuint(ev[2], ==, 0);
    qtest_memread(p.n[1], dst, got, len);
    g_assert(memcmp(data, got, len) == 0);
    g_assert_cmpuint(qtest_readq(p.n[1], NC(TEMPEST_NC_XFER_RECV_LO)), ==,
                     len);
    g_assert_cmpuint(qtest_readl(p.n[0], NC(TEMPEST_NC_XFER_ACTIVE)), ==, 0);
    stop_pair(&p);
}

/* Sends a typed message of @len bytes of 0x5a from node 0 to node 1. */
static void send_typed(Pair *p, uint64_t len, uint64_t type, uint64_t cookie)
{
    uint64_t src = RAM(0x400000);

    qtest_memset(p->n[0], src, 0x5a, len);
    g_assert_cmpuint(tq_command(p->n[0], TEMPEST_CMD_XFER, 1, src, len, type,
                                cookie, TEMPEST_XFER_TYPED), ==,
                     TEMPEST_CMD_SUCCESS);
}

/*
 * FLASH 3.4.1 and footnote 3: typed messages land one after another in
 * the space of a buffer posted in advance; one that finds none is stored
 * in system space and completes at its sender, and moves into the next
 * buffer posted; a buffer with no room for the next message is done
 * (TEMPEST_EV_XFER_BUF_DONE, on the last message in it or on an event of
 * length 0 at its address).
 */
static void test_typed(void)
{
    uint64_t buf = RAM(0x900000), ev[3];
    uint32_t node;
    Pair p;

    start_pair(&p);
    send_typed(&p, 3000, 7, 1);
    /* Done at the sender before any buffer: it is in system space. */
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[2], ==, 0);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_PARKED)), ==, 1);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_SYS_USED)), ==,
                     3000);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_WAITING)), ==, 0);
    g_assert_cmpuint(tq_command(p.n[1], TEMPEST_CMD_BUF_POST, 7, buf, 4096, 0,
                                0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, buf);
    g_assert_cmphex(ev[1], ==, 3000 | 7ULL << 32);
    g_assert_cmphex(ev[2], ==, 1);
    g_assert_cmphex(qtest_readb(p.n[1], buf + 2999), ==, 0x5a);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_PARKED)), ==, 0);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_SYS_USED)), ==, 0);

    /* The next one lands after it, 64-byte aligned, in the same buffer. */
    send_typed(&p, 1000, 7, 2);
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, buf + 3008);
    g_assert_cmphex(ev[1], ==, 1000 | 7ULL << 32);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);

    /* 88 bytes left, 100 wanted: the buffer is done, the message stored. */
    send_typed(&p, 100, 7, 3);
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, buf);
    g_assert_cmphex(ev[1], ==, TEMPEST_EV_XFER_BUF_DONE | 7ULL << 32);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_PARKED)), ==, 1);
    g_assert_cmpuint(qtest_readl(p.n[1], NC(TEMPEST_NC_XFER_SYS_USED)), ==,
                     256);      /* a short message counts 256 bytes */

    /* A buffer it fills exactly: its event says the buffer is done. */
    g_assert_cmpuint(tq_command(p.n[1], TEMPEST_CMD_BUF_POST, 7, buf + 8192,
                                100, 0, 0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, buf + 8192);
    g_assert_cmphex(ev[1], ==, 100 | TEMPEST_EV_XFER_BUF_DONE | 7ULL << 32);
    stop_pair(&p);
}

/*
 * With system space full (here: none) a typed message waits at its
 * receiver for a buffer, holding its sender; one longer than system space
 * that only shorter buffers of its type could take is refused.
 */
static void test_typed_no_system_space(void)
{
    uint64_t ev[3];
    uint32_t node;
    Pair p;

    start_pair_with(&p, "-global tempest-nc.sys-space=0");
    send_typed(&p, 3000, 7, 1);
    g_assert_cmpuint(tq_wait_reg(p.n[1], TEMPEST_NC_XFER_WAITING, ~0, 1), ==,
                     1);
    g_assert_cmpuint(qtest_readl(p.n[0], NC(TEMPEST_NC_XFER_ACTIVE)), ==, 1);
    g_assert_cmpuint(tq_command(p.n[1], TEMPEST_CMD_BUF_POST, 7, RAM(0x900000),
                                4096, 0, 0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(&p, 1, ev, &node), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, RAM(0x900000));
    g_assert_cmphex(ev[1], ==, 3000 | 7ULL << 32);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[2], ==, 0);

    /* Buffers of type 8 exist but are too small: refused, reported. */
    tq_command(p.n[1], TEMPEST_CMD_BUF_POST, 8, RAM(0xa00000), 100, 0, 0, 0);
    send_typed(&p, 3000, 8, 2);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[2], ==, TEMPEST_CMD_E_REMOTE);
    stop_pair(&p);
}

static uint64_t fop(QTestState *s, uint64_t home, uint64_t addr, uint64_t op,
                    uint64_t operand, uint64_t cmp)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t st = tq_command(s, TEMPEST_CMD_FOP, home, addr, op, operand, cmp,
                          0);

    while (st == TEMPEST_CMD_RETRY && g_get_monotonic_time() < end) {
        st = qtest_readl(s, NC(TEMPEST_NC_CMD_COMMIT));
    }
    g_assert_cmpuint(st, ==, TEMPEST_CMD_SUCCESS);
    return qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
}

/* FLASH 3.6: fetch-and-op at the home node, by its controller. */
static void test_fetch_and_op(void)
{
    uint64_t w = RAM(0x600000);
    Pair p;

    start_pair(&p);
    qtest_writeq(p.n[0], w, 100);
    g_assert_cmpuint(fop(p.n[1], 0, w, TEMPEST_FOP_ADD, 5, 0), ==, 100);
    g_assert_cmpuint(fop(p.n[0], 0, w, TEMPEST_FOP_ADD, 7, 0), ==, 105);
    g_assert_cmpuint(fop(p.n[1], 0, w, TEMPEST_FOP_SWAP, 1, 0), ==, 112);
    g_assert_cmpuint(fop(p.n[1], 0, w, TEMPEST_FOP_CAS, 9, 2), ==, 1);
    g_assert_cmpuint(qtest_readq(p.n[0], w), ==, 1);
    g_assert_cmpuint(fop(p.n[1], 0, w, TEMPEST_FOP_CAS, 9, 1), ==, 1);
    g_assert_cmpuint(qtest_readq(p.n[0], w), ==, 9);
    stop_pair(&p);
}

static void expect_fail(QTestState *s, uint32_t op, uint64_t a0, uint64_t a1,
                        uint64_t a2, uint64_t a3, uint64_t a5,
                        uint32_t reason)
{
    uint32_t st = tq_command(s, op, a0, a1, a2, a3, 0, a5);
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

    while (st == TEMPEST_CMD_RETRY && g_get_monotonic_time() < end) {
        st = qtest_readl(s, NC(TEMPEST_NC_CMD_COMMIT));
    }
    g_assert_cmpuint(st, ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==, reason);
}

/*
 * FLASH 3.2 and 4.3: every invalid description fails before anything
 * moves, with its reason; a destination outside the receiver's RAM is
 * refused by the receiver.
 */
static void test_fail_cases(void)
{
    uint64_t src = RAM(0x400000), ev[3];
    uint32_t node;
    Pair p;

    start_pair(&p);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 2, src, 64, RAM(0), 0,
                TEMPEST_CMD_E_BAD_NODE);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 1, src, 0, RAM(0), 0,
                TEMPEST_CMD_E_BAD_LEN);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 1, src, TEMPEST_XFER_MAX + 1,
                RAM(0), 0, TEMPEST_CMD_E_BAD_LEN);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 1, 0x1000, 64, RAM(0), 0,
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 1, RAM(64 * 1024 * 1024 - 8), 64,
                RAM(0), 0, TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(p.n[0], TEMPEST_CMD_XFER, 0, src, 64, 0x1000, 0,
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(p.n[0], TEMPEST_CMD_FOP, 1, RAM(0x600004), TEMPEST_FOP_ADD,
                1, 0, TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(p.n[0], TEMPEST_CMD_FOP, 1, RAM(0x600000), 7, 1, 0,
                TEMPEST_CMD_E_BAD_FOP);
    expect_fail(p.n[0], TEMPEST_CMD_FOP, 1, 0x1000, TEMPEST_FOP_ADD, 1, 0,
                TEMPEST_CMD_E_REMOTE);
    expect_fail(p.n[0], TEMPEST_CMD_BUF_POST, 1, 0x1000, 64, 0, 0,
                TEMPEST_CMD_E_BAD_ADDR);

    g_assert_cmpuint(tq_command(p.n[0], TEMPEST_CMD_XFER, 1, src, 4096, 0x1000,
                             5, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(&p, 0, ev, &node), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[2], ==, TEMPEST_CMD_E_REMOTE);
    g_assert_cmpuint(qtest_readl(p.n[0], NC(TEMPEST_NC_XFER_ACTIVE)), ==, 0);
    g_assert_cmpuint(qtest_readq(p.n[1], NC(TEMPEST_NC_XFER_RECV_LO)), ==, 0);
    stop_pair(&p);
}

/* A transfer to oneself goes through the same engine. */
static void test_self(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");

    tq_command(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_CQ, CQ_BASE, 64, 0, 0, 0);
    qtest_memset(s, RAM(0x400000), 0x3c, 100000);
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_XFER, 0, RAM(0x400000), 100000,
                             RAM(0x500001), 0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(tq_wait_mem32(s, CQ_BASE + 32, TEMPEST_EV_VALID,
                                  TEMPEST_EV_VALID) & TEMPEST_EV_VALID, ==,
                    TEMPEST_EV_VALID);
    g_assert_cmphex(qtest_readb(s, RAM(0x500001) + 99999), ==, 0x3c);
    g_assert_cmphex(qtest_readl(s, CQ_BASE) & TEMPEST_EV_TYPE_MASK, ==,
                    TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(qtest_readl(s, CQ_BASE + 32) & TEMPEST_EV_TYPE_MASK, ==,
                    TEMPEST_EV_XFER_SENT);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/xfer/memory-copy", test_memory_copy);
    qtest_add_func("/tempest/xfer/typed", test_typed);
    qtest_add_func("/tempest/xfer/typed-no-system-space",
                   test_typed_no_system_space);
    qtest_add_func("/tempest/xfer/fetch-and-op", test_fetch_and_op);
    qtest_add_func("/tempest/xfer/fail-cases", test_fail_cases);
    qtest_add_func("/tempest/xfer/self", test_self);

    return g_test_run();
}
