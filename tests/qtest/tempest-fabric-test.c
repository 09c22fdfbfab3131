/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the Tempest fabric and the node controller's messaging: two
 * QEMUs joined by the real fabric, driven through their registers and
 * rings with no guest CPU; and a fake peer speaking the wire format to
 * check that bad frames are dropped and counted (docs/node-controller.rst,
 * docs/fabric.rst; issue 3 parts 1 and 2).  The cases that join QEMUs run
 * twice: under /tempest/fabric/ over Unix sockets (fabric=unix:DIR), under
 * /tempest/fabric-shm/ with every link in shared memory (fabric=shm:DIR;
 * docs/fabric.rst, "Shared memory": both backends behave alike).
 */

#include "qemu/osdep.h"
#include "tempest-qtest.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "tempest-peer.h"

#define SQ0_BASE    RAM(0x100000)
#define SQ1_BASE    RAM(0x110000)
#define RQ_BASE     RAM(0x200000)
#define CQ_BASE     RAM(0x300000)
#define CLUSTER     0x5eed5eedULL

typedef struct Cluster {
    char *dir;
    QTestState *node[2];
} Cluster;

/* The transport of the case running: "unix" or "shm" (see on_shm()). */
static const char *fabric_kind = "unix";

static QTestState *start_node(const char *dir, unsigned id, unsigned nodes,
                              uint64_t cluster, const char *extra)
{
    return qtest_initf("-M tempest,node-id=%u,num-nodes=%u,"
                       "fabric=%s:%s,cluster-id=0x%" PRIx64 "%s -m 128M",
                       id, nodes, fabric_kind, dir, cluster, extra);
}

/* The end of a case that used dir with node 0's socket in it. */
static void remove_node0_dir(const char *dir)
{
    g_autofree char *p = g_strdup_printf("%s/node0.sock", dir);

    unlink(p);
    rmdir(dir);
}

/*
 * Over shared memory: wait until both nodes have mapped their link (the
 * memfd node 1 made, which node 0 maps only when it accepts the OFFER and
 * answers ACK), so that what the case sends goes through the rings.
 */
static void wait_shm_mapped(Cluster *c)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;

    for (int i = 0; i < 2; i++) {
        pid_t pid = qtest_pid(c->node[i]);

        while (peer_memfd_count(pid, "tempest-link", false) != 1 &&
               g_get_monotonic_time() < end) {
            g_usleep(1000);
        }
        g_assert_cmpuint(peer_memfd_count(pid, "tempest-link", false), ==,
                         1);
    }
}

static void setup_rings(QTestState *s, unsigned rq_slots)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             SQ0_BASE, 64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ1,
                             SQ1_BASE, 64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_RQ,
                             RQ_BASE, rq_slots), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_CQ,
                             CQ_BASE, 16), ==, TEMPEST_CMD_SUCCESS);
}

/* Fill send-ring slot 'slot' with a packet of len payload bytes. */
static void put_packet(QTestState *s, uint64_t ring, unsigned slot,
                       uint16_t dest, uint8_t kind, uint64_t word1,
                       unsigned len, uint8_t fill)
{
    uint8_t pkt[TEMPEST_PKT_SIZE] = { 0 };
    uint64_t addr = ring + slot * TEMPEST_PKT_SIZE;

    stw_le_p(pkt + TEMPEST_PKT_NODE, dest);
    pkt[TEMPEST_PKT_KIND] = kind;
    stl_le_p(pkt + TEMPEST_PKT_WORD0, 0xabc0 + slot);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, word1);
    for (unsigned i = 0; i < len && i < TEMPEST_PKT_PAYLOAD; i++) {
        pkt[TEMPEST_PKT_DATA + i] = fill + i;
    }
    qtest_memwrite(s, addr + 4, pkt + 4, TEMPEST_PKT_SIZE - 4);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | len);
}

static void start_cluster(Cluster *c, const char *extra)
{
    c->dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    g_assert(c->dir);
    c->node[0] = start_node(c->dir, 0, 2, CLUSTER, extra);
    c->node[1] = start_node(c->dir, 1, 2, CLUSTER, extra);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(c->node[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                  TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        g_assert_cmpuint(qtest_readl(c->node[i], NC(TEMPEST_NC_PEERS_UP)),
                         ==, 1);
    }
    if (!strcmp(fabric_kind, "shm")) {
        wait_shm_mapped(c);
    }
}

static void stop_cluster(Cluster *c)
{
    for (int i = 0; i < 2; i++) {
        if (c->node[i]) {
            qtest_quit(c->node[i]);
        }
    }
    rmdir(c->dir);
    g_free(c->dir);
}

/*
 * Part 2: a packet written into node 0's send ring appears in node 1's
 * receive ring, with the source, network and sequence filled in.
 */
static void test_packet_crosses(void)
{
    Cluster c;
    uint8_t got[TEMPEST_PKT_SIZE];
    uint32_t ctl;

    start_cluster(&c, "");
    setup_rings(c.node[0], 16);
    setup_rings(c.node[1], 16);

    put_packet(c.node[0], SQ1_BASE, 0, 1, 7, 0x1122334455667788ULL, 40, 3);
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ1);

    ctl = tq_wait_mem32(c.node[1], RQ_BASE, TEMPEST_PKT_VALID,
                     TEMPEST_PKT_VALID);
    g_assert_cmphex(ctl, ==, TEMPEST_PKT_VALID | 40);
    qtest_memread(c.node[1], RQ_BASE, got, sizeof(got));
    g_assert_cmpuint(lduw_le_p(got + TEMPEST_PKT_NODE), ==, 0);
    g_assert_cmpuint(got[TEMPEST_PKT_NET], ==, TEMPEST_NET_REPLY);
    g_assert_cmpuint(got[TEMPEST_PKT_KIND], ==, 7);
    g_assert_cmpuint(ldl_le_p(got + TEMPEST_PKT_SEQ), ==, 0);
    g_assert_cmphex(ldl_le_p(got + TEMPEST_PKT_WORD0), ==, 0xabc0);
    g_assert_cmphex(ldq_le_p(got + TEMPEST_PKT_WORD1), ==,
                    0x1122334455667788ULL);
    for (int i = 0; i < 40; i++) {
        g_assert_cmpuint(got[TEMPEST_PKT_DATA + i], ==, (uint8_t)(3 + i));
    }
    /* The sender's slot is free again; both sides counted it. */
    g_assert_cmphex(qtest_readl(c.node[0], SQ1_BASE), ==, 0);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SQ1_HEAD)), ==, 1);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_TX_PACKETS)),
                     ==, 1);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_RX_PACKETS)),
                     ==, 1);
    g_assert_cmphex(qtest_readl(c.node[1], NC(TEMPEST_NC_IRQ_STATUS)) &
                    TEMPEST_NC_IRQ_RQ, ==, TEMPEST_NC_IRQ_RQ);
    stop_cluster(&c);
}

#define BIG_SHIFT   12
#define BIG_SLOT    (1U << BIG_SHIFT)
#define BIG_LEN     (BIG_SLOT - TEMPEST_PKT_DATA)

/* Sets up a packet ring of 16 slots of BIG_SLOT bytes (shift 0: 256). */
static uint32_t setup_big(QTestState *s, unsigned ring, uint64_t base,
                          unsigned shift)
{
    return tq_command3(s, TEMPEST_CMD_RING_SETUP, ring | shift << 8, base,
                       16);
}

/* A packet of len payload bytes (byte i is fill + i) in a BIG_SLOT slot. */
static void put_big(QTestState *s, uint64_t ring, unsigned slot,
                    uint16_t dest, uint64_t word1, unsigned len,
                    uint8_t fill)
{
    g_autofree uint8_t *pkt = g_malloc0(BIG_SLOT);
    uint64_t addr = ring + slot * BIG_SLOT;

    stw_le_p(pkt + TEMPEST_PKT_NODE, dest);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, word1);
    for (unsigned i = 0; i < len && i < BIG_LEN; i++) {
        pkt[TEMPEST_PKT_DATA + i] = fill + i;
    }
    qtest_memwrite(s, addr + 4, pkt + 4, BIG_SLOT - 4);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | len);
}

/*
 * Node controller 1.11 (docs/node-controller.rst, "Rings in guest RAM",
 * RING_SETUP's slot shift): a packet ring of 4 KiB slots sends and takes
 * a packet of up to 4064 bytes whole, in one slot, across the fabric;
 * a longer one is the sender's SEND_ERROR (BAD_LEN); one longer than
 * the receiver's RQ slots is dropped there (BAD_LEN, its credit given
 * back: the next packet still arrives); RING_SETUP refuses a shift out
 * of range, one for the CQ, and bits above it in ARG0.
 */
static void test_big_slots(void)
{
    Cluster c;
    g_autofree uint8_t *got = g_malloc(BIG_SLOT);

    start_cluster(&c, "");
    g_assert_cmphex(qtest_readl(c.node[0], NC(TEMPEST_NC_FEATURES)) &
                    TEMPEST_NC_FEAT_BIG_SLOTS, ==, TEMPEST_NC_FEAT_BIG_SLOTS);
    g_assert_cmpuint(setup_big(c.node[0], TEMPEST_RING_SQ0, SQ0_BASE, 7), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_SIZE);
    g_assert_cmpuint(setup_big(c.node[0], TEMPEST_RING_SQ0, SQ0_BASE,
                               TEMPEST_PKT_MAX_SHIFT + 1), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(setup_big(c.node[0], TEMPEST_RING_CQ, CQ_BASE,
                               BIG_SHIFT), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(tq_command3(c.node[0], TEMPEST_CMD_RING_SETUP,
                                 TEMPEST_RING_SQ0 | 1 << 16, SQ0_BASE, 16),
                     ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_RING);
    for (int i = 0; i < 2; i++) {
        setup_rings(c.node[i], 16);
        g_assert_cmpuint(setup_big(c.node[i], TEMPEST_RING_SQ0, SQ0_BASE,
                                   BIG_SHIFT), ==, TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(setup_big(c.node[i], TEMPEST_RING_RQ, RQ_BASE,
                                   BIG_SHIFT), ==, TEMPEST_CMD_SUCCESS);
    }

    /* 4064 bytes in one slot each way; 4065 refused by the sender. */
    put_big(c.node[0], SQ0_BASE, 0, 1, 0x5101, BIG_LEN, 9);
    put_big(c.node[0], SQ0_BASE, 1, 1, 0x5102, BIG_LEN + 1, 0);
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmphex(tq_wait_mem32(c.node[1], RQ_BASE, TEMPEST_PKT_VALID,
                                  TEMPEST_PKT_VALID), ==,
                    TEMPEST_PKT_VALID | BIG_LEN);
    qtest_memread(c.node[1], RQ_BASE, got, BIG_SLOT);
    g_assert_cmpuint(lduw_le_p(got + TEMPEST_PKT_NODE), ==, 0);
    g_assert_cmphex(ldq_le_p(got + TEMPEST_PKT_WORD1), ==, 0x5101);
    for (unsigned i = 0; i < BIG_LEN; i++) {
        g_assert_cmpuint(got[TEMPEST_PKT_DATA + i], ==, (uint8_t)(9 + i));
    }
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SEND_ERRORS)), ==,
                     1);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_LEN);
    g_assert_cmphex(qtest_readl(c.node[0], SQ0_BASE + BIG_SLOT), ==, 0);

    /* An RQ of 256-byte slots: the long packet is dropped, not cut. */
    g_assert_cmpuint(setup_big(c.node[1], TEMPEST_RING_RQ, RQ_BASE, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_writel(c.node[1], RQ_BASE, 0);
    qtest_writel(c.node[1], RQ_BASE + TEMPEST_PKT_SIZE, 0);
    put_big(c.node[0], SQ0_BASE, 2, 1, 0x5103, 300, 1);
    put_big(c.node[0], SQ0_BASE, 3, 1, 0x5104, 16, 2);
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmphex(tq_wait_mem32(c.node[1], RQ_BASE, TEMPEST_PKT_VALID,
                                  TEMPEST_PKT_VALID), ==,
                    TEMPEST_PKT_VALID | 16);
    g_assert_cmphex(qtest_readq(c.node[1], RQ_BASE + TEMPEST_PKT_WORD1), ==,
                    0x5104);
    g_assert_cmpuint(qtest_readl(c.node[1], RQ_BASE + TEMPEST_PKT_SEQ), ==,
                     2);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_LEN);
    g_assert_cmphex(qtest_readl(c.node[1], RQ_BASE + TEMPEST_PKT_SIZE), ==,
                    0);
    stop_cluster(&c);
}

#define GATHER_SRC  RAM(0x400000)
#define GATHER_RQ   8192

/* A gather slot: @n descriptors (address, length) of @len bytes. */
static void put_gather(QTestState *s, unsigned slot, uint16_t dest,
                       uint32_t len, const uint64_t *addr,
                       const uint32_t *dlen, unsigned n)
{
    g_autofree uint8_t *pkt = g_malloc0(BIG_SLOT);
    uint64_t at = SQ0_BASE + slot * BIG_SLOT;

    stw_le_p(pkt + TEMPEST_PKT_NODE, dest);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, 0x6a70 + slot);
    for (unsigned k = 0; k < n; k++) {
        uint8_t *d = pkt + TEMPEST_PKT_DATA + k * TEMPEST_GATHER_DESC_SIZE;

        stq_le_p(d + TEMPEST_GATHER_ADDR, addr[k]);
        stl_le_p(d + TEMPEST_GATHER_LEN, dlen[k]);
    }
    qtest_memwrite(s, at + 4, pkt + 4, BIG_SLOT - 4);
    qtest_writel(s, at, TEMPEST_PKT_VALID | TEMPEST_PKT_GATHER | len);
}

/*
 * Node controller 1.15 (docs/node-controller.rst, "Gather slots"): a
 * gather slot's packet is the bytes its descriptors name, in order,
 * copied from the sender's RAM into one frame of up to 8160 bytes
 * whatever the send slot's size (4 KiB here), and arrives whole in an RQ
 * of 8 KiB slots; a range outside RAM is refused (SEND_ERROR,
 * ERR_STATUS BAD_RANGE), and so are descriptors that do not add up to
 * the length (BAD_LEN); nothing of a refused slot is sent.
 */
static void test_gather(void)
{
    static const uint32_t lens[] = { 4064, 4096, TEMPEST_PKT_MAX_PAYLOAD };
    g_autofree uint8_t *src = g_malloc(2 * GATHER_RQ);
    g_autofree uint8_t *got = g_malloc(GATHER_RQ);
    uint64_t ram_end = RAM(128 * 1024 * 1024);
    uint64_t addr[3];
    uint32_t dlen[3];
    Cluster c;

    start_cluster(&c, "");
    g_assert_cmphex(qtest_readl(c.node[0], NC(TEMPEST_NC_FEATURES)) &
                    TEMPEST_NC_FEAT_GATHER, ==, TEMPEST_NC_FEAT_GATHER);
    for (int i = 0; i < 2; i++) {
        setup_rings(c.node[i], 16);
        g_assert_cmpuint(setup_big(c.node[i], TEMPEST_RING_SQ0, SQ0_BASE,
                                   BIG_SHIFT), ==, TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(setup_big(c.node[i], TEMPEST_RING_RQ, RQ_BASE,
                                   TEMPEST_PKT_MAX_SHIFT), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    for (unsigned i = 0; i < 2 * GATHER_RQ; i++) {
        src[i] = (uint8_t)(i * 7 + 3);
    }
    qtest_memwrite(c.node[0], GATHER_SRC, src, 2 * GATHER_RQ);

    /* Two descriptors each: the tail first, then the head. */
    for (unsigned i = 0; i < ARRAY_SIZE(lens); i++) {
        addr[0] = GATHER_SRC + 32;
        dlen[0] = lens[i] - 32;
        addr[1] = GATHER_SRC;
        dlen[1] = 32;
        put_gather(c.node[0], i, 1, lens[i], addr, dlen, 2);
    }
    /* Refused: outside RAM, past its end, short, too long. */
    addr[0] = 0x1000;
    dlen[0] = 64;
    put_gather(c.node[0], 3, 1, 64, addr, dlen, 1);
    addr[0] = ram_end - 32;
    put_gather(c.node[0], 4, 1, 64, addr, dlen, 1);
    addr[0] = GATHER_SRC;
    put_gather(c.node[0], 5, 1, 128, addr, dlen, 1);
    put_gather(c.node[0], 6, 1, TEMPEST_PKT_MAX_PAYLOAD + 1, addr, dlen, 1);
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);

    for (unsigned i = 0; i < ARRAY_SIZE(lens); i++) {
        uint64_t slot = RQ_BASE + i * GATHER_RQ;

        g_assert_cmphex(tq_wait_mem32(c.node[1], slot, TEMPEST_PKT_VALID,
                                      TEMPEST_PKT_VALID), ==,
                        TEMPEST_PKT_VALID | lens[i]);
        qtest_memread(c.node[1], slot, got, TEMPEST_PKT_DATA + lens[i]);
        g_assert_cmphex(ldq_le_p(got + TEMPEST_PKT_WORD1), ==, 0x6a70 + i);
        for (unsigned j = 0; j < lens[i]; j++) {
            unsigned from = j < lens[i] - 32 ? j + 32 : j - (lens[i] - 32);

            g_assert_cmpuint(got[TEMPEST_PKT_DATA + j], ==, src[from]);
        }
    }
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SEND_ERRORS)), ==,
                     4);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_TX_PACKETS)), ==,
                     3);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SQ0_HEAD)), ==, 7);
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmphex(qtest_readl(c.node[0], CQ_BASE + i * 32), ==,
                        TEMPEST_EV_VALID | TEMPEST_EV_SEND_ERROR);
        g_assert_cmpuint(qtest_readq(c.node[0], CQ_BASE + i * 32 +
                                     TEMPEST_EV_B), ==,
                         i < 2 ? TEMPEST_NC_ERR_BAD_RANGE :
                         TEMPEST_NC_ERR_BAD_LEN);
    }
    g_assert_cmphex(qtest_readl(c.node[1], RQ_BASE + 3 * GATHER_RQ), ==, 0);
    stop_cluster(&c);
}

/* Part 2: every guest-supplied ring address and size is validated. */
static void test_bad_rings(void)
{
    QTestState *s = qtest_init("-M tempest -m 128M");

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             0x1000, 16), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    /* Starts inside RAM, ends past it. */
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             RAM(128 * 1024 * 1024 - 8 * 256), 16), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             SQ0_BASE + 8, 16), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ALIGN);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             SQ0_BASE, 24), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_SIZE);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, 9, SQ0_BASE, 16),
                     ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_RING);
    g_assert_cmpuint(tq_command3(s, 99, 0, 0, 0), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_OP);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                             SQ0_BASE, 16), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_RQ,
                             SQ0_BASE + 256, 4), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_OVERLAP);
    /* A doorbell for a ring never set up is an error the guest can read. */
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NO_RING);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), 5);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    qtest_quit(s);
}

/*
 * Part 2: a bad send slot is rejected, freed, counted, and reported by a
 * SEND_ERROR event; the good slot behind it still goes (to itself).
 */
static void test_bad_sends(void)
{
    QTestState *s = qtest_init("-M tempest -m 128M");
    uint32_t ev;

    setup_rings(s, 16);
    put_packet(s, SQ0_BASE, 0, 5, 0, 0, 8, 0);          /* no node 5 */
    put_packet(s, SQ0_BASE, 1, 0, 0, 0, 8, 0);
    qtest_writel(s, SQ0_BASE + 256, TEMPEST_PKT_VALID | 300);  /* too long */
    put_packet(s, SQ0_BASE, 2, 0, 9, 42, 16, 1);        /* to itself */
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);

    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SEND_ERRORS)), ==, 2);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_LEN);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SQ0_HEAD)), ==, 3);
    g_assert_cmphex(qtest_readl(s, SQ0_BASE), ==, 0);
    g_assert_cmphex(qtest_readl(s, SQ0_BASE + 256), ==, 0);

    ev = qtest_readl(s, CQ_BASE + TEMPEST_EV_CTL);
    g_assert_cmphex(ev, ==, TEMPEST_EV_VALID | TEMPEST_EV_SEND_ERROR);
    g_assert_cmpuint(qtest_readl(s, CQ_BASE + TEMPEST_EV_NODE), ==, 5);
    g_assert_cmpuint(qtest_readq(s, CQ_BASE + TEMPEST_EV_B), ==,
                     TEMPEST_NC_ERR_BAD_DEST);
    g_assert_cmpuint(qtest_readq(s, CQ_BASE + 32 + TEMPEST_EV_B), ==,
                     TEMPEST_NC_ERR_BAD_LEN);
    /* The packet to itself arrived. */
    g_assert_cmphex(qtest_readl(s, RQ_BASE), ==, TEMPEST_PKT_VALID | 16);
    g_assert_cmpuint(qtest_readb(s, RQ_BASE + TEMPEST_PKT_KIND), ==, 9);
    qtest_quit(s);
}

/*
 * Part 1: credit-based flow control.  Node 1's receive ring has 4 slots
 * and is not read: once it is full, node 0 may have 'credits' (8) more
 * packets waiting in node 1's device, then its send ring stops.  As
 * node 1 frees slots, the rest arrives, in order, none lost or repeated.
 */
static void test_flow_control(void)
{
    Cluster c;
    const unsigned total = 40;
    unsigned got = 0;

    start_cluster(&c, ",credits=8");
    setup_rings(c.node[0], 16);
    setup_rings(c.node[1], 4);
    for (unsigned i = 0; i < total; i++) {
        put_packet(c.node[0], SQ0_BASE, i, 1, 0, i, 4, i);
    }
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    tq_wait_mem32(c.node[1], RQ_BASE + 3 * 256, TEMPEST_PKT_VALID,
               TEMPEST_PKT_VALID);
    /*
     * 4 in the ring, 8 more waiting in node 1's device: the sender's 8
     * credits are spent and it stalls; nothing moves until node 1 reads.
     */
    g_assert_cmpuint(tq_wait_reg(c.node[0], TEMPEST_NC_SQ0_HEAD, ~0, 12), ==,
                     12);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_TX_STALLS)), >=, 1);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SQ0_HEAD)), ==, 12);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_RX_PACKETS)),
                     ==, 4);

    while (got < total) {
        uint64_t slot = RQ_BASE + (got % 4) * 256;

        g_assert_cmphex(tq_wait_mem32(c.node[1], slot, TEMPEST_PKT_VALID,
                                   TEMPEST_PKT_VALID) & TEMPEST_PKT_VALID,
                        ==, TEMPEST_PKT_VALID);
        g_assert_cmpuint(qtest_readl(c.node[1], slot + TEMPEST_PKT_SEQ), ==,
                         got);
        g_assert_cmpuint(qtest_readq(c.node[1], slot + TEMPEST_PKT_WORD1),
                         ==, got);
        qtest_writel(c.node[1], slot, 0);
        got++;
        qtest_writel(c.node[1], NC(TEMPEST_NC_RQ_DOORBELL), 1);
    }
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SQ0_HEAD)), ==,
                     total);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_RX_PACKETS)), ==,
                     total);
    g_assert_cmpuint(qtest_readl(c.node[1], NC(TEMPEST_NC_DROPPED)), ==, 0);
    stop_cluster(&c);
}

/* Part 1: a peer that dies is reported (lost); one that exits says so. */
static void test_peer_down(void)
{
    Cluster c;

    start_cluster(&c, "");
    setup_rings(c.node[0], 16);
    setup_rings(c.node[1], 16);

    /* Node 1 ends through its EXIT register: node 0 learns it exited 3. */
    qtest_set_expected_status(c.node[1], 3);
    qtest_writel(c.node[1], NC(TEMPEST_NC_EXIT), 3);
    qtest_wait_qemu(c.node[1]);
    qtest_quit(c.node[1]);
    c.node[1] = NULL;

    g_assert_cmphex(tq_wait_mem32(c.node[0], CQ_BASE, ~0, TEMPEST_EV_VALID |
                               TEMPEST_EV_PEER_DOWN), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(c.node[0], CQ_BASE + TEMPEST_EV_NODE), ==,
                     1);
    g_assert_cmpuint(qtest_readq(c.node[0], CQ_BASE + TEMPEST_EV_A), ==, 0);
    g_assert_cmpuint(qtest_readq(c.node[0], CQ_BASE + TEMPEST_EV_B), ==, 3);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_PEERS_DOWN)), ==,
                     1);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_PEERS_UP)), ==, 0);

    /* Sending to it now fails, and says why. */
    put_packet(c.node[0], SQ0_BASE, 0, 1, 0, 0, 4, 0);
    qtest_writel(c.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_SEND_ERRORS)), ==,
                     1);
    stop_cluster(&c);

    /* Killed with no BYE: lost. */
    start_cluster(&c, "");
    setup_rings(c.node[0], 16);
    qtest_quit(c.node[1]);
    c.node[1] = NULL;
    tq_wait_mem32(c.node[0], CQ_BASE, ~0,
               TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    g_assert_cmpuint(qtest_readq(c.node[0], CQ_BASE + TEMPEST_EV_A), ==, 1);
    stop_cluster(&c);
}

/*
 * docs/fabric.rst, "Forming the cluster": node 0 is the rendezvous.  It
 * is READY once every node has joined it; it passes a node's DIAL on to
 * the higher node it names, once per pair, even to a node that joins
 * later; and it tells every node that a node went (GONE).  "Trust": it
 * takes a DIAL only from the node it names first, for a higher node of
 * the cluster, and no GONE from anyone.
 */
static void test_rendezvous(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 3, CLUSTER, "");
    uint8_t buf[256];
    int fd1, fd2;

    setup_rings(s, 16);
    fd1 = peer_join(dir, 0, 1, 3, CLUSTER, NULL, 0);
    /* Node 1 wants node 2, which has not joined yet: held for it. */
    peer_send_words(fd1, FABRIC_DIAL, 1, 2, -1);
    g_usleep(50 * 1000);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)), ==,
                     TEMPEST_FABRIC_CONNECTING);
    fd2 = peer_join(dir, 0, 2, 3, CLUSTER, NULL, 0);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    peer_read_until(fd2, FABRIC_DIAL, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 1);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 4), ==, 2);

    peer_send_words(fd1, FABRIC_DIAL, 1, 2, -1);    /* a second one */
    peer_send_words(fd1, FABRIC_DIAL, 2, 1, -1);    /* not its own */
    peer_send_words(fd1, FABRIC_DIAL, 1, 1, -1);    /* itself */
    peer_send_words(fd1, FABRIC_DIAL, 1, 3, -1);    /* no node 3 */
    peer_send_words(fd2, FABRIC_DIAL, 2, 1, -1);    /* a lower node */
    peer_send_words(fd1, FABRIC_GONE, 2, 0, 0);     /* only node 0 says */
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_DROPPED, ~0, 6), ==, 6);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 0);

    /* Node 2 exits: node 1, which has no link with it, hears it. */
    fabric_st32(buf, 7);
    peer_send(fd2, FABRIC_BYE, 0, buf, 4);
    close(fd2);
    peer_read_until(fd1, FABRIC_GONE, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 2);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 4), ==, 1);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 8), ==, 7);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 1);
    close(fd1);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * Node id of nodes (extra: more machine options), its cluster formed by a
 * fake node 0 listening in dir (*fd0: node 0's end, *lfd0 its listener),
 * its rings set up.
 */
static QTestState *start_linked(const char *dir, unsigned id, unsigned nodes,
                                const char *extra, int *lfd0, int *fd0)
{
    QTestState *s;

    *lfd0 = peer_listen(dir, 0, 4);
    s = start_node(dir, id, nodes, CLUSTER, extra);
    *fd0 = peer_accept(*lfd0, 0, id, nodes, CLUSTER);
    peer_mesh_all(*fd0);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    setup_rings(s, 16);
    return s;
}

/*
 * docs/fabric.rst, "Forming the cluster": node 2 of 5 links only with
 * node 0 at start.  Packets for a higher node wait while node 0 passes
 * its DIAL on and that node dials, then arrive in order; node 0's DIAL
 * for a lower node has it dial that one.  "Failures": node 0's GONE
 * reports a node it has no link with, once, and sends to it fail.
 * "Trust": DIAL and GONE from another node than 0 are dropped.
 */
static void test_lazy_links(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    int lfd1 = peer_listen(dir, 1, 4), lfd0, fd0, fd1, fd3;
    QTestState *s = start_linked(dir, 2, 5, "", &lfd0, &fd0);
    uint8_t buf[512];

    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 1);

    /* Two packets for node 3: node 0 is asked to have it dial us. */
    put_packet(s, SQ0_BASE, 0, 3, 1, 0, 8, 0);
    put_packet(s, SQ0_BASE, 1, 3, 2, 0, 8, 0);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SQ0_HEAD)), ==, 2);
    peer_read_until(fd0, FABRIC_DIAL, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 2);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 4), ==, 3);
    fd3 = peer_join(dir, 2, 3, 5, CLUSTER, NULL, 0);
    for (uint32_t seq = 0; seq < 2; seq++) {
        peer_read_until(fd3, FABRIC_DATA, buf, sizeof(buf));
        g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, seq);
        g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4 + TEMPEST_PKT_KIND], ==,
                         seq + 1);
    }

    /* Node 0 says node 1 wants us: we dial node 1. */
    peer_send_words(fd0, FABRIC_DIAL, 1, 2, -1);
    fd1 = peer_accept(lfd1, 1, 2, 5, CLUSTER);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_PEERS_UP, ~0, 3), ==, 3);

    /* What only node 0 may say, from node 3; DIALs no node 0 sends. */
    peer_send_words(fd3, FABRIC_GONE, 4, 1, 5);
    peer_send_words(fd3, FABRIC_DIAL, 1, 2, -1);
    peer_send_words(fd0, FABRIC_DIAL, 0, 2, -1);
    peer_send_words(fd0, FABRIC_DIAL, 3, 2, -1);
    peer_send_words(fd0, FABRIC_DIAL, 1, 4, -1);
    peer_send_words(fd0, FABRIC_GONE, 2, 1, 5);     /* about ourselves */
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_DROPPED, ~0, 6), ==, 6);
    /* About a node we have a link with: its own link will say. */
    peer_send_words(fd0, FABRIC_GONE, 3, 1, 5);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 0);

    /* Node 4, never linked, exited 5: reported once; sends to it fail. */
    peer_send_words(fd0, FABRIC_GONE, 4, 1, 5);
    g_assert_cmphex(tq_wait_mem32(s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                                  TEMPEST_EV_PEER_DOWN), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(s, CQ_BASE + TEMPEST_EV_NODE), ==, 4);
    g_assert_cmpuint(qtest_readq(s, CQ_BASE + TEMPEST_EV_A), ==, 0);
    g_assert_cmpuint(qtest_readq(s, CQ_BASE + TEMPEST_EV_B), ==, 5);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 1);
    put_packet(s, SQ0_BASE, 2, 4, 0, 0, 4, 0);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 6);

    close(fd0);
    close(fd1);
    close(fd3);
    close(lfd0);
    close(lfd1);
    qtest_quit(s);
    for (int i = 0; i < 2; i++) {
        g_autofree char *p = g_strdup_printf("%s/node%d.sock", dir, i);

        unlink(p);
    }
    rmdir(dir);
}

/*
 * docs/fabric.rst, "Forming the cluster": a wanted link not made in the
 * fabric's timeout loses its peer, but that timeout counts from the last
 * link made, not only from when the link was wanted.  Node 2 of 5 wants
 * nodes 3 and 4 at once; node 3 dials it 2 s later (of a 3 s timeout),
 * node 4 never does: node 4 is lost no sooner than 3 s after node 3's
 * link, and then it is (a dead peer is still reported).
 */
static void test_link_deadline(void)
{
    const unsigned timeout_ms = 3000;
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    g_autofree char *extra = g_strdup_printf(",fabric-timeout=%u",
                                             timeout_ms);
    int lfd0, fd0, fd3;
    QTestState *s = start_linked(dir, 2, 5, extra, &lfd0, &fd0);
    uint8_t buf[512];
    gint64 linked;

    put_packet(s, SQ0_BASE, 0, 3, 1, 0, 8, 0);
    put_packet(s, SQ0_BASE, 1, 4, 2, 0, 8, 0);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SQ0_HEAD)), ==, 2);
    for (int i = 0; i < 2; i++) {
        peer_read_until(fd0, FABRIC_DIAL, buf, sizeof(buf));
        g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 4), ==, 3 + i);
    }
    g_usleep(timeout_ms * 2 / 3 * 1000);
    linked = g_get_monotonic_time();
    fd3 = peer_join(dir, 2, 3, 5, CLUSTER, NULL, 0);
    peer_read_until(fd3, FABRIC_DATA, buf, sizeof(buf));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 0);

    g_assert_cmphex(tq_wait_mem32(s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                                  TEMPEST_EV_PEER_DOWN), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    /* Never sooner (its clock counts ms); later is the host's doing. */
    g_assert_cmpint(g_get_monotonic_time() - linked, >=,
                    (gint64)(timeout_ms - 1) * 1000);
    g_assert_cmpuint(qtest_readl(s, CQ_BASE + TEMPEST_EV_NODE), ==, 4);
    g_assert_cmpuint(qtest_readq(s, CQ_BASE + TEMPEST_EV_A), !=, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 2);

    close(fd0);
    close(fd3);
    close(lfd0);
    qtest_quit(s);
    remove_node0_dir(dir);
}

/*
 * docs/fabric.rst, "Trust": a connection has FABRIC_HELLO_MS (10 s) to
 * send its HELLO.  A node the host does not run for longer than that
 * (a QEMU of 256 on 2 cores: 13.6 s) finds, in one turn of its main
 * loop, the HELLOs in their sockets and its timer due; it reads at most
 * 64 sockets a turn, and the timers run after.  The connections whose
 * HELLO waits are read first: node 0 of 80, stopped 10.5 s with 79
 * connections accepted and their HELLOs sent meanwhile, answers all 79.
 */
static void test_hello_after_stall(void)
{
    enum { NODES = 80 };
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, NODES, CLUSTER,
                               ",fabric-timeout=60000");
    pid_t pid = qtest_pid(s);
    FabricHello h[NODES];
    int fd[NODES];
    unsigned base;
    gint64 end;

    /* The first waits for its listener, which is up before it counts. */
    fd[1] = peer_connect(dir, 0);
    base = peer_fd_count(pid, "socket:");
    for (int i = 2; i < NODES; i++) {
        fd[i] = peer_connect(dir, 0);
    }
    /* Every one accepted (its born time set) before the stop. */
    end = g_get_monotonic_time() + TQ_WAIT_US;
    while (peer_fd_count(pid, "socket:") < base + NODES - 2 &&
           g_get_monotonic_time() < end) {
        g_usleep(10000);
    }
    g_assert_cmpuint(peer_fd_count(pid, "socket:"), >=, base + NODES - 2);

    g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
    for (int i = 1; i < NODES; i++) {
        uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];

        peer_hello(&h[i], CLUSTER, i, NODES);
        fabric_put_hello(frame, &h[i]);
        g_assert_cmpint(write(fd[i], frame, sizeof(frame)), ==,
                        sizeof(frame));
    }
    g_usleep(10500 * 1000);
    g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
    for (int i = 1; i < NODES; i++) {
        peer_set_timeout(fd[i], 20);
        peer_handshake_finish(fd[i], &h[i], 0, NULL, 0, NULL);
    }
    /* All 79 joined: the cluster is ready. */
    for (int i = 1; i < NODES; i++) {
        uint8_t buf[64];

        peer_read_until(fd[i], FABRIC_MESH, buf, sizeof(buf));
        close(fd[i]);
    }
    qtest_quit(s);
    remove_node0_dir(dir);
}

/*
 * docs/fabric.rst, "Forming the cluster": a node that exits while a
 * packet still waits for its link holds its BYEs until the link is made
 * and the packet has gone, so its last message is not lost and node 0
 * does not hear it went before.
 */
static void test_exit_waits_for_link(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    int lfd0, fd0, fd2;
    QTestState *s = start_linked(dir, 1, 3, "", &lfd0, &fd0);
    uint8_t buf[512];

    put_packet(s, SQ0_BASE, 0, 2, 9, 0, 8, 0);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    peer_read_until(fd0, FABRIC_DIAL, buf, sizeof(buf));
    qtest_set_expected_status(s, 4);
    qtest_writel(s, NC(TEMPEST_NC_EXIT), 4);
    /* Still here, and no BYE yet: the packet waits for node 2. */
    g_usleep(100 * 1000);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    fd2 = peer_join(dir, 1, 2, 3, CLUSTER, NULL, 0);
    g_assert_cmpuint(peer_read_until(fd2, FABRIC_DATA, buf, sizeof(buf)),
                     ==, 4 + TEMPEST_PKT_DATA + 8);
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4 + TEMPEST_PKT_KIND], ==, 9);
    peer_read_until(fd2, FABRIC_BYE, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 4);
    peer_read_until(fd0, FABRIC_BYE, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 4);
    qtest_wait_qemu(s);
    qtest_quit(s);
    close(fd0);
    close(fd2);
    close(lfd0);
    remove_node0_dir(dir);
}

/*
 * The same with a peer that never joins: after FABRIC_BYE_LINK_MS (5 s)
 * the node gives up on the link, says on stderr which frames it exits
 * without ("exits without its last N bytes of frames for node 2"), says
 * BYE to node 0 and ends with its status: not a wait for ever.
 */
static void test_exit_gives_up_link(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    int lfd0, fd0;
    QTestState *s = start_linked(dir, 1, 3, "", &lfd0, &fd0);
    uint8_t buf[512];
    gint64 t0;

    put_packet(s, SQ0_BASE, 0, 2, 9, 0, 8, 0);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    peer_read_until(fd0, FABRIC_DIAL, buf, sizeof(buf));
    qtest_set_expected_status(s, 4);
    t0 = g_get_monotonic_time();
    qtest_writel(s, NC(TEMPEST_NC_EXIT), 4);
    peer_set_timeout(fd0, 15);
    peer_read_until(fd0, FABRIC_BYE, buf, sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 4);
    /* Not before the link's time was up (a wait of the node's own). */
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 4500 * 1000);
    qtest_wait_qemu(s);
    qtest_quit(s);
    close(fd0);
    close(lfd0);
    remove_node0_dir(dir);
}

/*
 * Part 1: a node of another cluster cannot join; the cluster reports that
 * it could not form, instead of waiting forever.
 */
static void test_wrong_cluster(void)
{
    Cluster c;

    c.dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    c.node[0] = start_node(c.dir, 0, 2, CLUSTER, ",fabric-timeout=500");
    c.node[1] = start_node(c.dir, 1, 2, CLUSTER + 1, ",fabric-timeout=500");
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(c.node[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                  TEMPEST_FABRIC_FAILED), ==,
                         TEMPEST_FABRIC_FAILED);
    }
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_DROPPED)), >=, 1);
    g_assert_cmpuint(qtest_readl(c.node[0], NC(TEMPEST_NC_PEERS_UP)), ==, 0);
    stop_cluster(&c);
}

static void fake_send(int fd, uint16_t type, uint8_t net, const void *body,
                      uint32_t len)
{
    uint8_t hdr[FABRIC_HDR_SIZE];

    fabric_put_header(hdr, type, net, len);
    g_assert_cmpint(write(fd, hdr, sizeof(hdr)), ==, sizeof(hdr));
    if (body) {
        g_assert_cmpint(write(fd, body, len), ==, len);
    }
}

static void fake_data(int fd, uint32_t seq, uint16_t claimed_node,
                      uint32_t len, uint32_t ctl_len)
{
    uint8_t body[FABRIC_DATA_MAX] = { 0 };

    stl_le_p(body, seq);
    stl_le_p(body + 4 + TEMPEST_PKT_CTL, TEMPEST_PKT_VALID | ctl_len);
    stw_le_p(body + 4 + TEMPEST_PKT_NODE, claimed_node);
    fake_send(fd, FABRIC_DATA, 0, body, 4 + TEMPEST_PKT_DATA + len);
}

/*
 * Part 1 and protection: a peer sending malformed frames has them dropped
 * and counted, and the node goes on; a packet claiming another source is
 * delivered with the source its link proves; a frame whose length cannot
 * be trusted ends that link, reported as a lost peer, not a crash.
 */
static void test_malformed_frames(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 2, CLUSTER, "");
    uint8_t hello[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    FabricHello h;
    uint8_t junk[4] = { 1, 2, 3, 4 };
    int fd;

    setup_rings(s, 16);
    fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    peer_hello(&h, CLUSTER, 1, 2);
    fabric_put_hello(hello, &h);
    stl_le_p(junk, 0x04030201);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                              TEMPEST_FABRIC_READY), ==, TEMPEST_FABRIC_READY);

    fake_send(fd, 99, 0, junk, sizeof(junk));           /* unknown type */
    fake_send(fd, FABRIC_HELLO, 0, hello + FABRIC_HDR_SIZE,
              FABRIC_HELLO_SIZE);                       /* second HELLO */
    fake_data(fd, 0, 1, 16, 200);                       /* length lies */
    fake_send(fd, FABRIC_CREDIT, 7, junk, sizeof(junk)); /* no network 7 */
    fake_data(fd, 5, 1, 8, 8);                          /* out of sequence */
    fake_data(fd, 0, 0, 8, 8);                          /* claims node 0 */
    g_assert_cmphex(tq_wait_mem32(s, RQ_BASE, ~0, TEMPEST_PKT_VALID | 8), ==,
                    TEMPEST_PKT_VALID | 8);
    g_assert_cmpuint(qtest_readw(s, RQ_BASE + TEMPEST_PKT_NODE), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 5);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 1);

    /* A length no frame has: the stream is lost, the link is closed. */
    fake_send(fd, FABRIC_DATA, 0, NULL, 0x7fffffff);
    g_assert_cmphex(tq_wait_mem32(s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                               TEMPEST_EV_PEER_DOWN), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 6);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 0);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * Tempest 3.5: timers fire in deadline order, equal deadlines in the order
 * they were armed, as CQ events carrying the arm's arguments.
 */
static void test_timers(void)
{
    QTestState *s = qtest_init("-M tempest -m 128M");
    const uint64_t ticks[] = { 300, 100, 100, 5 };
    const unsigned want[] = { 3, 1, 2, 0 };
    uint32_t st;

    setup_rings(s, 16);
    for (int i = 0; i < 4; i++) {
        g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM, ticks[i],
                                 0x1000 + i, 0x2000 + i), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    qtest_clock_step(s, 50 * TEMPEST_TICK_NS);
    g_assert_cmphex(qtest_readl(s, CQ_BASE), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_TIMER);
    g_assert_cmphex(qtest_readl(s, CQ_BASE + 32), ==, 0);
    qtest_clock_step(s, 1000 * TEMPEST_TICK_NS);
    for (int i = 0; i < 4; i++) {
        uint64_t ev = CQ_BASE + i * TEMPEST_EV_SIZE;

        g_assert_cmphex(qtest_readl(s, ev), ==,
                        TEMPEST_EV_VALID | TEMPEST_EV_TIMER);
        g_assert_cmphex(qtest_readq(s, ev + TEMPEST_EV_A), ==,
                        0x1000 + want[i]);
        g_assert_cmphex(qtest_readq(s, ev + TEMPEST_EV_B), ==,
                        0x2000 + want[i]);
    }
    /* A table of armed timers is a transient limit: RETRY. */
    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS; i++) {
        g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM, 1000000, 0, 0),
                         ==, TEMPEST_CMD_SUCCESS);
    }
    st = tq_command3(s, TEMPEST_CMD_TIMER_ARM, 10, 0, 0);
    g_assert_cmpuint(st, ==, TEMPEST_CMD_RETRY);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM,
                             TEMPEST_TIMER_MAX_TICKS + 1, 0, 0), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_TICKS);
    qtest_quit(s);
}

/*
 * The fabric as a backend object: -object tempest-fabric-socket (data is
 * the type; or tempest-fabric-shm) with its own key, linked by the
 * machine's fabric-backend; the nodes form the cluster and exchange a
 * packet as with fabric=.  The shared-memory backend's "shm-links" says
 * that the link of each node went over to shared memory (docs/fabric.rst,
 * "Shared memory"); the socket backend has no such property.
 */
static void test_backend_object(gconstpointer data)
{
    const char *type = data;
    bool shm = !strcmp(type, "tempest-fabric-shm");
    g_autofree char *dir = g_dir_make_tmp("tempest-fabric-XXXXXX", NULL);
    g_autofree char *key = g_strdup_printf("%s/key", dir);
    QTestState *n[2];

    g_assert_true(g_file_set_contents(key, "a key of twenty bytes", -1,
                                      NULL));
    for (unsigned i = 0; i < 2; i++) {
        n[i] = qtest_initf("-object secret,id=k,file=%s "
                           "-object %s,id=fab,"
                           "addr=unix:%s,node-id=%u,num-nodes=2,"
                           "cluster-id=9,key=k "
                           "-M tempest,node-id=%u,num-nodes=2,"
                           "fabric-backend=fab -m 128M", key, type, dir, i,
                           i);
    }
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(n[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        setup_rings(n[i], 16);
    }
    if (shm) {
        /* Both ends switched (node 1 on the ACK, node 0 on the SWITCH). */
        for (unsigned i = 0; i < 2; i++) {
            g_assert_cmpuint(peer_wait_shm_links(n[i], "/objects/fab", 1),
                             ==, 1);
        }
    }
    put_packet(n[0], SQ0_BASE, 0, 1, 0, 42, 8, 0x10);
    qtest_writel(n[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmphex(tq_wait_mem32(n[1], RQ_BASE, ~0, TEMPEST_PKT_VALID | 8),
                    ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readq(n[1], RQ_BASE + TEMPEST_PKT_WORD1), ==, 42);
    if (shm) {
        for (unsigned i = 0; i < 2; i++) {
            g_assert_cmpuint(peer_shm_links(n[i], "/objects/fab"), ==, 1);
            g_assert_cmpuint(peer_memfd_count(qtest_pid(n[i]),
                                              "tempest-link", false), ==, 1);
        }
    }
    for (unsigned i = 0; i < 2; i++) {
        qtest_quit(n[i]);
    }
    unlink(key);
    rmdir(dir);
}

/* Run the case *data (a GTestFunc) with fabric=shm:DIR. */
static void on_shm(gconstpointer data)
{
    const GTestFunc *fn = data;

    fabric_kind = "shm";
    (*fn)();
    fabric_kind = "unix";
}

/*
 * The cases that join nodes, run on both transports (bad-rings, bad-sends
 * and timers run one node, which has no fabric).  Over shared memory,
 * malformed-frames is a node whose peer takes no shm link (no SHM flag in
 * its HELLO): its frames come on the socket, read with recvmsg().
 */
static const struct {
    const char *name;
    GTestFunc fn;
} both[] = {
    { "packet-crosses", test_packet_crosses },
    { "big-slots", test_big_slots },
    { "gather", test_gather },
    { "flow-control", test_flow_control },
    { "peer-down", test_peer_down },
    { "wrong-cluster", test_wrong_cluster },
    { "malformed-frames", test_malformed_frames },
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/fabric/packet-crosses", test_packet_crosses);
    qtest_add_func("/tempest/fabric/big-slots", test_big_slots);
    qtest_add_func("/tempest/fabric/gather", test_gather);
    qtest_add_func("/tempest/fabric/bad-rings", test_bad_rings);
    qtest_add_func("/tempest/fabric/bad-sends", test_bad_sends);
    qtest_add_func("/tempest/fabric/flow-control", test_flow_control);
    qtest_add_func("/tempest/fabric/peer-down", test_peer_down);
    qtest_add_func("/tempest/fabric/wrong-cluster", test_wrong_cluster);
    qtest_add_func("/tempest/fabric/rendezvous", test_rendezvous);
    qtest_add_func("/tempest/fabric/lazy-links", test_lazy_links);
    qtest_add_func("/tempest/fabric/link-deadline", test_link_deadline);
    qtest_add_func("/tempest/fabric/hello-after-stall",
                   test_hello_after_stall);
    qtest_add_func("/tempest/fabric/exit-waits-for-link",
                   test_exit_waits_for_link);
    qtest_add_func("/tempest/fabric/exit-gives-up-link",
                   test_exit_gives_up_link);
    qtest_add_func("/tempest/fabric/malformed-frames", test_malformed_frames);
    qtest_add_func("/tempest/fabric/timers", test_timers);

    qtest_add_data_func("/tempest/fabric/backend-object",
                        "tempest-fabric-socket", test_backend_object);

    for (int i = 0; i < ARRAY_SIZE(both); i++) {
        g_autofree char *path = g_strdup_printf("/tempest/fabric-shm/%s",
                                                both[i].name);

        qtest_add_data_func(path, &both[i].fn, on_shm);
    }
    qtest_add_data_func("/tempest/fabric-shm/backend-object",
                        "tempest-fabric-shm", test_backend_object);
    return g_test_run();
}
