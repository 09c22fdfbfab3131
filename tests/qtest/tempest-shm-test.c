/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the fabric's shared-memory links facing a hostile or broken
 * peer (docs/fabric.rst, "Shared memory" and "Trust"): a fake node that
 * joins a real node correctly (HELLO with the SHM flag, AUTH) and then
 * sets up a link the way tempest-fabric-shm.c does, or not: an OFFER
 * with no memfd or a bad one, rings whose counts are impossible, a ring
 * written without a doorbell while the node polls.  The node under test
 * uses -object tempest-fabric-shm, so its "shm-links" can be read.
 *
 * Each case names the check it covers; removing that check from
 * hw/tempest/tempest-fabric-shm.c makes the case fail (an ACK where a
 * NACK is expected, a packet that never arrives, a link that is not
 * closed, or QEMU dying on a SIGBUS).
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/units.h"
#include "tempest-qtest.h"
#include "tempest-peer.h"
#include "hw/tempest/coll-area.h"
#include "hw/tempest/rq-lock.h"

#define CLUSTER     0x5a3d0001ULL
#define SQ0_BASE    RAM(0x100000)
#define RQ_BASE     RAM(0x200000)
#define CQ_BASE     RAM(0x300000)
#define FAB         "/objects/fab"
#define FAKE_LINK   "tempest-fake-link"     /* our memfd's name */

/* A real node and a fake one on a link between them. */
typedef struct ShmPeer {
    char *dir;
    QTestState *s;          /* the real node */
    int fd;                 /* the fake node's socket */
    int lfd;                /* the fake node 0's listening socket, or -1 */
    PeerShm m;              /* the link's memory, as the fake node sees it */
    uint32_t seq;           /* the fake node's next DATA on network 0 */
} ShmPeer;

/* Node id of a two-node cluster in dir, with QEMU options extra. */
static QTestState *start_node_extra(const char *dir, unsigned id,
                                    const char *extra)
{
    return qtest_initf("-object tempest-fabric-shm,id=fab,addr=unix:%s,"
                       "node-id=%u,num-nodes=2,cluster-id=%llu "
                       "-M tempest,node-id=%u,num-nodes=2,fabric-backend=fab "
                       "-m 64M %s", dir, id, (unsigned long long)CLUSTER, id,
                       extra);
}

static QTestState *start_node(const char *dir, unsigned id)
{
    return start_node_extra(dir, id, "");
}

static void setup_rings(QTestState *s)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_SQ0,
                                 SQ0_BASE, 16), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_RQ,
                                 RQ_BASE, 16), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_CQ,
                                 CQ_BASE, 16), ==, TEMPEST_CMD_SUCCESS);
}

/*
 * Node 0 is real; the fake node 1 dials it (so it is the one that offers
 * the link), saying in its HELLO that it takes shared memory.  traced:
 * the node traces the in-place paths into dir/trace.log.
 */
static void shm_start_node(ShmPeer *t, bool traced, const char *more)
{
    g_autofree char *extra = NULL;
    uint8_t buf[64];
    uint32_t flags = 0;

    memset(t, 0, sizeof(*t));
    t->m.fd = -1;
    t->lfd = -1;
    t->dir = g_dir_make_tmp("tempest-shm-XXXXXX", NULL);
    extra = traced ? g_strdup_printf("-trace enable=tempest_fabric_shm_in_"
                                     "place* -trace enable=tempest_nc_rx_"
                                     "direct -D %s/trace.log", t->dir)
                   : g_strdup(more ? more : "");
    t->s = start_node_extra(t->dir, 0, extra);
    setup_rings(t->s);
    t->fd = peer_join_flags(t->dir, 0, 1, 2, CLUSTER, NULL, 0,
                            FABRIC_HELLO_SHM, &flags);
    peer_set_timeout(t->fd, 20);
    /* The node says it takes shared-memory links too. */
    g_assert_cmphex(flags & FABRIC_HELLO_SHM, ==, FABRIC_HELLO_SHM);
    g_assert_cmpuint(tq_wait_reg(t->s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    peer_read_until(t->fd, FABRIC_MESH, buf, sizeof(buf));  /* MESH_ALL */
}

static void shm_start(ShmPeer *t)
{
    shm_start_node(t, false, NULL);
}

static void shm_stop(ShmPeer *t)
{
    g_autofree char *p = g_strdup_printf("%s/node0.sock", t->dir);

    if (t->fd >= 0) {
        close(t->fd);
    }
    if (t->lfd >= 0) {
        close(t->lfd);
        unlink(p);
    }
    peer_shm_free(&t->m);
    qtest_quit(t->s);
    rmdir(t->dir);
    g_free(t->dir);
}

/* The next FABRIC_SHM frame on the socket must be step 'want'. */
static void expect_step(ShmPeer *t, uint32_t want)
{
    uint8_t buf[64];

    g_assert_cmpuint(peer_read_until(t->fd, FABRIC_SHM, buf, sizeof(buf)),
                     ==, 4);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, want);
}

/* A DATA frame's body: the fake node's next packet, 8 bytes, tag in W1. */
static size_t data_body(ShmPeer *t, uint8_t *body, uint64_t tag)
{
    memset(body, 0, 4 + TEMPEST_PKT_DATA + 8);
    stl_le_p(body, t->seq++);
    stl_le_p(body + 4 + TEMPEST_PKT_CTL, TEMPEST_PKT_VALID | 8);
    stq_le_p(body + 4 + TEMPEST_PKT_WORD1, tag);
    return 4 + TEMPEST_PKT_DATA + 8;
}

/* Send a packet over the socket. */
static void sock_data(ShmPeer *t, uint64_t tag)
{
    uint8_t body[FABRIC_DATA_MAX];
    size_t len = data_body(t, body, tag);

    peer_send(t->fd, FABRIC_DATA, 0, body, len);
}

/*
 * Write a packet into ring 0; with bell, ring the doorbell if the node
 * sleeps (returns whether it was rung).
 */
static bool ring_data(ShmPeer *t, uint64_t tag, bool bell)
{
    uint8_t body[FABRIC_DATA_MAX];
    size_t len = data_body(t, body, tag);

    peer_ring_send(&t->m.tx, FABRIC_DATA, 0, body, len);
    if (bell && fabric_ring_need_bell(&t->m.tx)) {
        peer_send(t->fd, FABRIC_BELL, 0, NULL, 0);
        return true;
    }
    return false;
}

/* Receive-ring slot 'slot' must hold the fake node's packet 'tag'. */
static void expect_rq(ShmPeer *t, unsigned slot, uint64_t tag)
{
    uint64_t addr = RQ_BASE + slot * TEMPEST_PKT_SIZE;

    g_assert_cmphex(tq_wait_mem32(t->s, addr, ~0, TEMPEST_PKT_VALID | 8), ==,
                    TEMPEST_PKT_VALID | 8);
    g_assert_cmpuint(qtest_readw(t->s, addr + TEMPEST_PKT_NODE), ==, 1);
    g_assert_cmphex(qtest_readq(t->s, addr + TEMPEST_PKT_WORD1), ==, tag);
}

/* The node sends a packet to node 1, tag in WORD1, from SQ0 slot 'slot'. */
static void node_send(QTestState *s, unsigned slot, uint16_t dest,
                      uint64_t tag)
{
    uint64_t addr = SQ0_BASE + slot * TEMPEST_PKT_SIZE;
    uint8_t pkt[TEMPEST_PKT_SIZE] = { 0 };

    stw_le_p(pkt + TEMPEST_PKT_NODE, dest);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, tag);
    qtest_memwrite(s, addr + 4, pkt + 4, TEMPEST_PKT_SIZE - 4);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | 8);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
}

/* A DATA frame in buf (len bytes of body) must be packet 'tag', seq. */
static void expect_data(const uint8_t *buf, uint32_t len, uint32_t seq,
                        uint64_t tag)
{
    const uint8_t *pkt = buf + FABRIC_HDR_SIZE + 4;

    g_assert_cmpuint(fabric_ld16(buf), ==, FABRIC_DATA);
    g_assert_cmpuint(len, ==, 4 + TEMPEST_PKT_DATA + 8);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, seq);
    g_assert_cmphex(ldq_le_p(pkt + TEMPEST_PKT_WORD1), ==, tag);
}

/*
 * Make the link as tempest-fabric-shm.c does: a good OFFER, the node's
 * ACK, our SWITCH.  Between ACK and SWITCH the node writes its ring but
 * does not read ours yet: it counts the link only once both are on.
 */
static void shm_link_up(ShmPeer *t)
{
    peer_shm_make_good(&t->m, CLUSTER, 1, 0);
    /*
     * We never run out of credit before the link: the node need not wake
     * us (its CREDIT of 0 would come between the DATA the cases expect).
     */
    peer_shm_ctl(&t->m, 0)->credit_waiting = 0;
    peer_shm_step(t->fd, FABRIC_SHM_OFFER, t->m.fd);
    expect_step(t, FABRIC_SHM_ACK);
    g_assert_cmpuint(peer_shm_links(t->s, FAB), ==, 0);
    peer_shm_step(t->fd, FABRIC_SHM_SWITCH, -1);
    g_assert_cmpuint(peer_wait_shm_links(t->s, FAB, 1), ==, 1);
}

/*
 * "Setting up a link": the acceptor checks that the OFFER's memfd is a
 * sealed file of exactly the link's size whose header names this cluster
 * and these two nodes, or answers NACK and the link stays on its socket.
 * Each bad OFFER differs from a good one in one thing only, so each
 * check of shm_take() is needed for its NACK (without it: an ACK).  A
 * NACK is not a bad frame (shm_take's failures are reported once on
 * stderr, not dropped): DROPPED stays 0.  What the node refused it does
 * not keep: neither a mapping nor a descriptor of our memfd.
 */
static void test_offer_refused(void)
{
    static const struct {
        const char *what;
        size_t len;
        unsigned seals;
        uint64_t cluster;
        uint32_t dialler, acceptor;
    } bad[] = {
        { "unsealed", FABRIC_LINK_BYTES, 0, CLUSTER, 1, 0 },
        { "a page too large", FABRIC_LINK_BYTES + 4096, PEER_SHM_SEALS,
          CLUSTER, 1, 0 },
        { "of another cluster", FABRIC_LINK_BYTES, PEER_SHM_SEALS, CLUSTER + 1,
          1, 0 },
        { "from another dialler", FABRIC_LINK_BYTES, PEER_SHM_SEALS, CLUSTER, 0,
          0 },
        { "for another acceptor", FABRIC_LINK_BYTES, PEER_SHM_SEALS, CLUSTER, 1,
          1 },
    };
    ShmPeer t;
    unsigned slot = 0;

    shm_start(&t);
    /* No memfd came with the OFFER. */
    peer_shm_step(t.fd, FABRIC_SHM_OFFER, -1);
    expect_step(&t, FABRIC_SHM_NACK);
    sock_data(&t, 0x100);
    expect_rq(&t, slot++, 0x100);

    for (int i = 0; i < ARRAY_SIZE(bad); i++) {
        PeerShm m;

        g_test_message("an OFFER whose memfd is %s", bad[i].what);
        peer_shm_make(&m, bad[i].len, bad[i].seals, bad[i].cluster,
                      bad[i].dialler, bad[i].acceptor);
        peer_shm_step(t.fd, FABRIC_SHM_OFFER, m.fd);
        expect_step(&t, FABRIC_SHM_NACK);
        peer_shm_free(&m);
        /* The link goes on over the socket. */
        sock_data(&t, 0x101 + i);
        expect_rq(&t, slot++, 0x101 + i);
    }
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)), ==, 1);
    g_assert_cmpuint(peer_shm_links(t.s, FAB), ==, 0);
    g_assert_cmpuint(peer_memfd_count(qtest_pid(t.s), FAKE_LINK, false), ==,
                     0);
    g_assert_cmpuint(peer_memfd_count(qtest_pid(t.s), FAKE_LINK, true), ==,
                     0);

    /*
     * Steps that make no sense here (fabric_shm_frame): a BELL with no
     * link, SWITCH with no OFFER, the acceptor's own answers, a step
     * that does not exist: each dropped and counted; the link goes on.
     */
    peer_send(t.fd, FABRIC_BELL, 0, NULL, 0);
    peer_shm_step(t.fd, FABRIC_SHM_SWITCH, -1);
    peer_shm_step(t.fd, FABRIC_SHM_ACK, -1);
    peer_shm_step(t.fd, FABRIC_SHM_NACK, -1);
    peer_shm_step(t.fd, 99, -1);
    sock_data(&t, 0x1ff);
    expect_rq(&t, slot++, 0x1ff);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 5);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)), ==, 1);
    shm_stop(&t);
}

/*
 * "Setting up a link" and "The doorbell": after OFFER, ACK and SWITCH
 * the node takes our frames from ring 0 when we ring (it does not poll:
 * its ring is marked sleeping) and writes its own into ring 1, ringing us
 * on the socket, which carries nothing else now.  The node maps our
 * memfd and keeps no descriptor of it.  A second OFFER on a link that has
 * one is dropped and counted, unanswered, and changes nothing.
 */
static void test_link(void)
{
    ShmPeer t;
    PeerShm again;
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    uint32_t len;

    shm_start(&t);
    shm_link_up(&t);
    g_assert_cmpuint(peer_memfd_count(qtest_pid(t.s), FAKE_LINK, false), ==,
                     1);
    g_assert_cmpuint(peer_memfd_count(qtest_pid(t.s), FAKE_LINK, true), ==,
                     0);

    /* Ours: into ring 0, and the node sleeps, so it must be rung. */
    g_assert_true(ring_data(&t, 0x200, true));
    expect_rq(&t, 0, 0x200);

    /* Its: into ring 1, with a BELL (we never said we poll). */
    node_send(t.s, 0, 1, 0x300);
    g_assert_cmpuint(peer_read_frame(t.fd, buf, sizeof(buf), &len), ==,
                     FABRIC_BELL);
    g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, sizeof(buf), &len),
                     ==, FABRIC_DATA);
    expect_data(buf, len, 0, 0x300);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==, 1);

    /* A second OFFER: dropped, no answer, the link stays. */
    peer_shm_make_good(&again, CLUSTER, 1, 0);
    peer_shm_step(t.fd, FABRIC_SHM_OFFER, again.fd);
    peer_shm_free(&again);
    g_assert_cmpuint(tq_wait_reg(t.s, TEMPEST_NC_DROPPED, ~0, 1), ==, 1);
    g_assert_cmpuint(peer_shm_links(t.s, FAB), ==, 1);
    ring_data(&t, 0x201, true);
    expect_rq(&t, 1, 0x201);
    node_send(t.s, 1, 1, 0x301);
    g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, sizeof(buf), &len),
                     ==, FABRIC_DATA);
    expect_data(buf, len, 1, 0x301);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 0);
    shm_stop(&t);
}

/*
 * "The rings": a count that goes back or claims more than the ring
 * holds breaks the link (dropped, counted, closed; the peer is reported
 * lost), never an access outside the ring, and QEMU goes on.  Three
 * breakers: ring 0's tail beyond what the ring holds, ring 0's tail going
 * back (both seen by the node as reader, rung by a BELL), ring 1's head
 * beyond what the node published (seen as writer, when it sends).
 */
static void test_broken_ring(void)
{
    static const char *const what[] = {
        "ring 0's tail beyond its size", "ring 0's tail going back",
        "ring 1's head beyond its tail",
    };

    for (int v = 0; v < ARRAY_SIZE(what); v++) {
        ShmPeer t;
        FabricRingCtl *c0, *c1;
        uint8_t buf[64];
        ssize_t n;

        g_test_message("%s", what[v]);
        shm_start(&t);
        shm_link_up(&t);
        ring_data(&t, 0x400, true);
        expect_rq(&t, 0, 0x400);
        c0 = peer_shm_ctl(&t.m, 0);
        c1 = peer_shm_ctl(&t.m, 1);
        switch (v) {
        case 0:
            __atomic_store_n(&c0->tail, t.m.tx.pos + FABRIC_LINK_RING + 1,
                             __ATOMIC_RELEASE);
            peer_send(t.fd, FABRIC_BELL, 0, NULL, 0);
            break;
        case 1:
            __atomic_store_n(&c0->tail, t.m.tx.pos - 1, __ATOMIC_RELEASE);
            peer_send(t.fd, FABRIC_BELL, 0, NULL, 0);
            break;
        case 2:
            __atomic_store_n(&c1->head, __atomic_load_n(&c1->tail,
                                                        __ATOMIC_ACQUIRE) + 1,
                             __ATOMIC_RELEASE);
            node_send(t.s, 0, 1, 0x500);
            break;
        }
        g_assert_cmphex(tq_wait_mem32(t.s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                                      TEMPEST_EV_PEER_DOWN), ==,
                        TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
        g_assert_cmpuint(qtest_readl(t.s, CQ_BASE + TEMPEST_EV_NODE), ==, 1);
        g_assert_cmpuint(qtest_readq(t.s, CQ_BASE + TEMPEST_EV_A), ==, 1);
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 1);
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)), ==, 0);
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 1);
        g_assert_cmpuint(peer_shm_links(t.s, FAB), ==, 0);
        /* Closed: the socket ends, the node no longer maps the link. */
        while ((n = read(t.fd, buf, sizeof(buf))) > 0) {
            /* a BELL it sent before */
        }
        g_assert_cmpint(n, ==, 0);
        g_assert_cmpuint(peer_memfd_count(qtest_pid(t.s), FAKE_LINK, false),
                         ==, 0);
        /* And it goes on serving its guest. */
        qtest_writel(t.s, NC(TEMPEST_NC_SCRATCH), 0x5a5a);
        g_assert_cmphex(qtest_readl(t.s, NC(TEMPEST_NC_SCRATCH)), ==, 0x5a5a);
        shm_stop(&t);
    }
}

/* Wait (bounded) until the node maps the memfd name want times. */
static unsigned wait_memfd_count(QTestState *s, const char *name,
                                 unsigned want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    unsigned n;

    while ((n = peer_memfd_count(qtest_pid(s), name, false)) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    return n;
}

static uint32_t ring_sleeping(ShmPeer *t, unsigned ring)
{
    return __atomic_load_n(&peer_shm_ctl(&t->m, ring)->sleeping,
                           __ATOMIC_SEQ_CST);
}

/*
 * POLL 1 until ring 0 is seen awake (the node stops polling by itself
 * after 1 ms without POLL, so a slow test process may miss it once).
 */
static bool poll_until_awake(ShmPeer *t)
{
    for (int i = 0; i < 1000; i++) {
        qtest_writel(t->s, NC(TEMPEST_NC_POLL), 1);
        if (!ring_sleeping(t, 0)) {
            return true;
        }
    }
    return false;
}

/*
 * "The doorbell": while the guest polls (POLL 1) the node's rings are not
 * marked sleeping, so a peer publishes without ringing, and the next
 * POLL 1 takes what was published into the receive ring by itself (no
 * main-loop wake-up: asserted at once, no wait).  POLL 0 marks them
 * sleeping again, as does a guest that stops writing POLL (1 ms later).
 */
static void test_poll(void)
{
    ShmPeer t;
    gint64 end;

    shm_start(&t);
    shm_link_up(&t);
    g_assert_cmpuint(ring_sleeping(&t, 0), ==, 1);

    g_assert_true(poll_until_awake(&t));
    ring_data(&t, 0x600, false);
    /* Had it gone to sleep meanwhile, it looked once more: no bell. */
    qtest_writel(t.s, NC(TEMPEST_NC_POLL), 1);
    g_assert_cmphex(qtest_readl(t.s, RQ_BASE), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readq(t.s, RQ_BASE + TEMPEST_PKT_WORD1), ==, 0x600);

    /* POLL 0: asleep at once (20 times, not to be fooled by the timer). */
    for (int i = 0; i < 20; i++) {
        g_assert_true(poll_until_awake(&t));
        qtest_writel(t.s, NC(TEMPEST_NC_POLL), 0);
        g_assert_cmpuint(ring_sleeping(&t, 0), ==, 1);
    }

    /* A guest that stops polling without a word: asleep soon after. */
    g_assert_true(poll_until_awake(&t));
    end = g_get_monotonic_time() + TQ_WAIT_US;
    while (!ring_sleeping(&t, 0) && g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    g_assert_cmpuint(ring_sleeping(&t, 0), ==, 1);
    /* Asleep, it is rung again, and hears it. */
    g_assert_true(ring_data(&t, 0x601, true));
    expect_rq(&t, 1, 0x601);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    shm_stop(&t);
}

/*
 * "Setting up a link", the dialler's side: a real node 1 dials the fake
 * node 0 and offers a memfd that is what the spec says (sealed against
 * shrinking, growing and more seals; 4 KiB + 2 x (256 B + 256 KiB) on
 * pages; its header naming the cluster and both nodes; two formatted
 * rings).  Answered NACK, the node unmaps it and stays on the socket
 * (and an OFFER from us, the acceptor, is dropped and not answered);
 * answered ACK, it says SWITCH and its frames then go into ring 0, and it
 * reads ours from ring 1 when rung.
 */
static void test_offer_made(void)
{
    for (int ack = 0; ack < 2; ack++) {
        ShmPeer t;
        uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
        uint32_t flags = 0, len;
        struct stat st;
        int passed = -1;
        uint8_t *map;

        memset(&t, 0, sizeof(t));
        t.m.fd = -1;
        t.dir = g_dir_make_tmp("tempest-shm-XXXXXX", NULL);
        t.lfd = peer_listen(t.dir, 0, 4);
        t.s = start_node(t.dir, 1);
        setup_rings(t.s);
        t.fd = peer_accept_flags(t.lfd, 0, 1, 2, CLUSTER, FABRIC_HELLO_SHM,
                                 &flags);
        peer_set_timeout(t.fd, 20);
        g_assert_cmphex(flags & FABRIC_HELLO_SHM, ==, FABRIC_HELLO_SHM);
        peer_mesh_all(t.fd);
        while (peer_recv_frame(t.fd, buf, sizeof(buf), &len, &passed) !=
               FABRIC_SHM) {
            /* its MESH */
        }
        g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==,
                         FABRIC_SHM_OFFER);
        g_assert_cmpint(passed, >=, 0);
        g_assert_cmpint(fstat(passed, &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        g_assert_cmpint(st.st_size, ==, FABRIC_LINK_BYTES);
        g_assert_cmphex(fcntl(passed, F_GET_SEALS) & PEER_SHM_SEALS, ==,
                        PEER_SHM_SEALS);
        map = mmap(NULL, FABRIC_LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                   passed, 0);
        g_assert(map != MAP_FAILED);
        close(passed);
        g_assert_cmphex(fabric_ld32(map), ==, FABRIC_LINK_MAGIC);
        g_assert_cmpuint(fabric_ld32(map + 4), ==, FABRIC_LINK_VERSION);
        g_assert_cmphex(fabric_ld64(map + 8), ==, CLUSTER);
        g_assert_cmpuint(fabric_ld32(map + 16), ==, 1);
        g_assert_cmpuint(fabric_ld32(map + 20), ==, 0);
        g_assert_cmpuint(fabric_ld32(map + 24), ==, FABRIC_LINK_RING);
        t.m.map = map;
        t.m.len = FABRIC_LINK_BYTES;
        /* We are the acceptor: ring 1 is ours to write, ring 0 to read. */
        g_assert_true(fabric_ring_attach(&t.m.tx, map + FABRIC_LINK_HDR +
                                         FABRIC_LINK_SPAN, FABRIC_LINK_RING, true));
        g_assert_true(fabric_ring_attach(&t.m.rx, map + FABRIC_LINK_HDR,
                                         FABRIC_LINK_RING, false));
        g_assert_cmpuint(t.m.tx.pos, ==, 0);
        g_assert_cmpuint(t.m.rx.pos, ==, 0);
        g_assert_cmpuint(ring_sleeping(&t, 0), ==, 1);
        g_assert_cmpuint(ring_sleeping(&t, 1), ==, 1);
        /*
         * Credit in memory: either side may have run out before the link
         * was made, with no bit to set: the maker sets both networks'.
         */
        g_assert_cmpuint(peer_shm_ctl(&t.m, 0)->credit_waiting, ==, 3);
        g_assert_cmpuint(peer_shm_ctl(&t.m, 1)->credit_waiting, ==, 3);

        if (!ack) {
            peer_shm_step(t.fd, FABRIC_SHM_NACK, -1);
            g_assert_cmpuint(peer_wait_shm_links(t.s, FAB, 0), ==, 0);
            /* An OFFER is the dialler's to make: dropped, unanswered. */
            peer_shm_step(t.fd, FABRIC_SHM_OFFER, -1);
            g_assert_cmpuint(tq_wait_reg(t.s, TEMPEST_NC_DROPPED, ~0, 1), ==,
                             1);
            node_send(t.s, 0, 0, 0x700);
            g_assert_cmpuint(peer_read_frame(t.fd, buf, sizeof(buf), &len),
                             ==, FABRIC_DATA);
            expect_data(buf, len, 0, 0x700);
            g_assert_cmpuint(fabric_ring_avail(&t.m.rx), ==, 0);
            g_assert_cmpuint(wait_memfd_count(t.s, "tempest-link", 0), ==,
                             0);
        } else {
            peer_shm_step(t.fd, FABRIC_SHM_ACK, -1);
            expect_step(&t, FABRIC_SHM_SWITCH);
            g_assert_cmpuint(peer_wait_shm_links(t.s, FAB, 1), ==, 1);
            node_send(t.s, 0, 0, 0x701);
            g_assert_cmpuint(peer_read_frame(t.fd, buf, sizeof(buf), &len),
                             ==, FABRIC_BELL);
            g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, sizeof(buf),
                                                  &len), ==, FABRIC_DATA);
            expect_data(buf, len, 0, 0x701);
            /* Ours, from node 0 this time. */
            {
                uint8_t body[FABRIC_DATA_MAX] = { 0 };
                uint64_t addr = RQ_BASE;

                stl_le_p(body + 4 + TEMPEST_PKT_CTL, TEMPEST_PKT_VALID | 8);
                stq_le_p(body + 4 + TEMPEST_PKT_WORD1, 0x702);
                peer_ring_send(&t.m.tx, FABRIC_DATA, 0, body,
                               4 + TEMPEST_PKT_DATA + 8);
                g_assert_true(fabric_ring_need_bell(&t.m.tx));
                peer_send(t.fd, FABRIC_BELL, 0, NULL, 0);
                g_assert_cmphex(tq_wait_mem32(t.s, addr, ~0,
                                              TEMPEST_PKT_VALID | 8), ==,
                                TEMPEST_PKT_VALID | 8);
                g_assert_cmpuint(qtest_readw(t.s, addr + TEMPEST_PKT_NODE),
                                 ==, 0);
                g_assert_cmphex(qtest_readq(t.s, addr + TEMPEST_PKT_WORD1),
                                ==, 0x702);
            }
        }
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, !ack);
        shm_stop(&t);
    }
}

/*
 * Writers that keep ring 0 full for as long as they run: the ring's data
 * is filled once with frames whose sizes add up to the ring's, then each
 * time the reader takes some the tail moves on by as much, with no copy:
 * when any of these threads has a CPU, the reader finds the ring full.
 * (Two of them, so that one often has the CPU the node does not.)
 */
#define WRITERS     2

typedef struct Writer {
    FabricRingCtl *c;
    uint32_t size;
    uint64_t limit;         /* bytes to publish, at most */
    bool stop;              /* qatomic: set by the test */
    GThread *th[WRITERS];
} Writer;

/* Fill r's data with the frames of unit (ulen bytes) again and again. */
static void writer_fill(FabricRing *r, const uint8_t *unit, size_t ulen)
{
    g_assert_cmpuint(r->size % ulen, ==, 0);
    for (size_t off = 0; off < r->size; off += ulen) {
        memcpy(r->data + off, unit, ulen);
    }
}

static gpointer writer_thread(gpointer opaque)
{
    Writer *w = opaque;
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    while (!qatomic_read(&w->stop) && g_get_monotonic_time() < end) {
        uint64_t head = __atomic_load_n(&w->c->head, __ATOMIC_ACQUIRE);
        uint64_t tail = __atomic_load_n(&w->c->tail, __ATOMIC_ACQUIRE);
        uint64_t want = MIN(head + w->size, w->limit);

        if (tail >= w->limit) {
            break;
        }
        /* Only ever forward, whichever writer gets there first. */
        if (want > tail) {
            __atomic_compare_exchange_n(&w->c->tail, &tail, want, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

/* Start the writers on ring 0 of t's link, filled with unit. */
static void writers_start(Writer *w, ShmPeer *t, const uint8_t *unit,
                          size_t ulen, uint64_t limit)
{
    writer_fill(&t->m.tx, unit, ulen);
    w->c = t->m.tx.ctl;
    w->size = t->m.tx.size;
    w->limit = limit;
    for (int i = 0; i < WRITERS; i++) {
        w->th[i] = g_thread_new("writer", writer_thread, w);
    }
}

static void writers_stop(Writer *w)
{
    qatomic_set(&w->stop, true);
    for (int i = 0; i < WRITERS; i++) {
        g_thread_join(w->th[i]);
    }
}

/* Bytes the writers published so far. */
static uint64_t writers_published(Writer *w)
{
    return __atomic_load_n(&w->c->tail, __ATOMIC_ACQUIRE);
}

/*
 * "Exit and death" and "Trust" (time): a peer whose socket closes while
 * it, or whoever else maps the memfd, goes on writing its ring.  The node
 * reads what the ring holds (at most a ringful) and reports the peer
 * lost; it must not read on for as long as the writer goes on (a writer
 * that never stops would hold the node's main loop, its monitor and its
 * vCPUs for ever).  The writers here stop by themselves after 64
 * ringfuls.  A node that reads on takes more than a ringful whenever a
 * writer got a CPU while the node was parsing, which a loaded host may not
 * give it: five tries.
 */
static void test_gone_but_writing(void)
{
    /* A failure here must not keep bell-in-ring from running. */
    g_test_set_nonfatal_assertions();
    for (int i = 0; i < 5 && !g_test_failed(); i++) {
        ShmPeer t;
        Writer w = { 0 };
        uint8_t frame[FABRIC_HDR_SIZE];
        uint64_t taken;

        shm_start(&t);
        shm_link_up(&t);
        /* A frame the node drops and counts: an unknown type. */
        fabric_put_header(frame, 99, 0, 0);
        writers_start(&w, &t, frame, sizeof(frame), 64ULL * FABRIC_LINK_RING);
        /* A full ring (the node sleeps and is never rung): close. */
        while (writers_published(&w) < FABRIC_LINK_RING) {
            g_usleep(100);
        }
        close(t.fd);
        t.fd = -1;
        g_assert_cmphex(tq_wait_mem32(t.s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                                      TEMPEST_EV_PEER_DOWN), ==,
                        TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
        writers_stop(&w);
        taken = __atomic_load_n(&peer_shm_ctl(&t.m, 0)->head,
                                __ATOMIC_ACQUIRE);
        g_test_message("the node took %" PRIu64 " bytes of the %" PRIu64
                       " published after its peer's socket closed", taken,
                       writers_published(&w));
        g_assert_cmpuint(qtest_readq(t.s, CQ_BASE + TEMPEST_EV_A), ==, 1);
        g_assert_cmpuint(taken, <=, FABRIC_LINK_RING);
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)), ==, 0);
        shm_stop(&t);
    }
}

/*
 * "The doorbell" belongs on the socket: here BELL frames come inside the
 * ring, after BYE frames (which are never dropped), and writers keep
 * the ring full while the node, polled, reads it.  The node handled a
 * BELL by reading the ring at once, from inside the parse of the frames
 * it had read from that ring (fabric_shm_frame -> fabric_shm_drain ->
 * the parse of the same buffer), so it parsed them again and then walked
 * past the end of its data, and of its buffer, taking what it found for
 * frames (malformed ones, until one whose length ends the link).
 * However the node treats such a BELL (as a doorbell, or as a bad frame
 * dropped), it must handle each frame we wrote once and nothing else: at
 * most one dropped frame per BELL, and QEMU stays up.
 */
static void test_bell_in_ring(void)
{
    /* A ringful: 21844 BYE (which no node drops), then two BELL. */
    const size_t bye = FABRIC_HDR_SIZE + 4, nbye = 21844;
    g_autofree uint8_t *unit = g_malloc(FABRIC_LINK_RING);

    g_test_set_nonfatal_assertions();
    g_assert_cmpuint(nbye * bye + 2 * FABRIC_HDR_SIZE, ==, FABRIC_LINK_RING);
    for (size_t i = 0; i < nbye; i++) {
        uint8_t *f = unit + i * bye;

        fabric_put_header(f, FABRIC_BYE, 0, 4);
        fabric_st32(f + FABRIC_HDR_SIZE, 7);
    }
    fabric_put_header(unit + nbye * bye, FABRIC_BELL, 0, 0);
    fabric_put_header(unit + nbye * bye + FABRIC_HDR_SIZE, FABRIC_BELL, 0, 0);

    /* The node misreads only if a writer got a CPU meanwhile: 3 tries. */
    for (int i = 0; i < 3 && !g_test_failed(); i++) {
        ShmPeer t;
        Writer w = { 0 };
        uint64_t bells;
        uint32_t dropped;

        shm_start(&t);
        shm_link_up(&t);
        writers_start(&w, &t, unit, FABRIC_LINK_RING, 128ULL * FABRIC_LINK_RING);
        /*
         * The node reads its rings when the guest polls; between two
         * polls the CPUs are left to the node and the writers.
         */
        while (writers_published(&w) < w.limit &&
               qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)) == 1) {
            qtest_writel(t.s, NC(TEMPEST_NC_POLL), 1);
            g_usleep(500);
        }
        writers_stop(&w);
        qtest_writel(t.s, NC(TEMPEST_NC_POLL), 1);
        qtest_writel(t.s, NC(TEMPEST_NC_POLL), 0);
        dropped = qtest_readl(t.s, NC(TEMPEST_NC_DROPPED));
        bells = DIV_ROUND_UP(writers_published(&w), FABRIC_LINK_RING) * 2;
        g_test_message("%" PRIu64 " bytes written into the ring, %" PRIu64
                       " BELL frames; %u frames dropped; the node %s the "
                       "link", writers_published(&w), bells, dropped,
                       qtest_readl(t.s, NC(TEMPEST_NC_PEERS_UP)) ? "kept" :
                       "closed");
        g_assert_cmpuint(dropped, <=, bells);
        qtest_writel(t.s, NC(TEMPEST_NC_SCRATCH), 0x5a5a);
        g_assert_cmphex(qtest_readl(t.s, NC(TEMPEST_NC_SCRATCH)), ==,
                        0x5a5a);
        shm_stop(&t);
    }
}

/*
 * "The poll hint", the register: an 8-byte write of a 4-aligned word in
 * RAM is taken and reads back; one outside RAM or not aligned sets
 * ERR_STATUS (BAD_VALUE) and turns the hint off; a 4-byte write is a bad
 * size and changes nothing; 0 turns it off.  Without the machine's
 * poll-hint the feature bit is clear and the register takes nothing.
 */
static void test_hint_register(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    uint64_t word = RAM(0x400000);

    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_FEATURES)) &
                    TEMPEST_NC_FEAT_POLL_HINT, ==, TEMPEST_NC_FEAT_POLL_HINT);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, 0);
    qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), word);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, word);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==, 0);

    qtest_writel(s, NC(TEMPEST_NC_POLL_HINT), RAM(0x500000));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, word);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);

    for (int i = 0; i < 3; i++) {
        static const uint64_t bad[] = {
            RAM(0x400002), RAM(64 * MiB - 2), 0x1000,
        };

        qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), word);
        qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), bad[i]);
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                         TEMPEST_NC_ERR_BAD_VALUE);
        g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, 0);
        qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    }
    qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), RAM(64 * MiB - 4));
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==,
                    RAM(64 * MiB - 4));
    qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), 0);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==, 0);
    qtest_quit(s);

    s = qtest_init("-M tempest,poll-hint=off -m 64M");
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_FEATURES)) &
                    TEMPEST_NC_FEAT_POLL_HINT, ==, 0);
    qtest_writeq(s, NC(TEMPEST_NC_POLL_HINT), word);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_POLL_HINT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), !=, 0);
    qtest_quit(s);
}

/*
 * "The poll hint", the fall-back: a reader that polls and names a hint
 * word the node cannot reach (we never passed it our RAM) gets the
 * doorbell instead, though it is not sleeping: without it nothing would
 * tell the reader to look.  A reader that names none gets neither.
 */
static void test_hint_unreachable(void)
{
    ShmPeer t;
    FabricRingCtl *ctl;
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    uint32_t len;

    shm_start(&t);
    shm_link_up(&t);
    ctl = peer_shm_ctl(&t.m, 1);            /* the node writes, we read */
    __atomic_store_n(&ctl->hint, 0x40001000ULL, __ATOMIC_SEQ_CST);
    __atomic_store_n(&ctl->sleeping, 0, __ATOMIC_SEQ_CST);
    node_send(t.s, 0, 1, 0x700);
    g_assert_cmpuint(peer_read_frame(t.fd, buf, sizeof(buf), &len), ==,
                     FABRIC_BELL);
    g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, sizeof(buf), &len),
                     ==, FABRIC_DATA);
    expect_data(buf, len, 0, 0x700);
    /* Rung once until we say we heard it, as any doorbell. */
    g_assert_cmpuint(__atomic_load_n(&ctl->belled, __ATOMIC_SEQ_CST), ==, 1);
    fabric_ring_bell_heard(&t.m.rx);

    /*
     * No hint, awake: no doorbell (the send, the publish and the choice
     * of a doorbell are all done when the SQ_DOORBELL write returns).
     */
    __atomic_store_n(&ctl->hint, 0, __ATOMIC_SEQ_CST);
    node_send(t.s, 1, 1, 0x701);
    g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, sizeof(buf), &len),
                     ==, FABRIC_DATA);
    expect_data(buf, len, 1, 0x701);
    g_assert_cmpuint(__atomic_load_n(&ctl->belled, __ATOMIC_SEQ_CST), ==, 0);
    shm_stop(&t);
}

/*
 * Node id of two real ones, RAM in a shared memfd, polling kept 60 s, its
 * fabric's timeout timeout_ms (0: the default) and more of its options
 * (fab: "" or ",name=value..."), its node controller's hold-ms hold_ms
 * (0: the default).
 */
static QTestState *start_shared_opts(const char *dir, unsigned id,
                                     unsigned timeout_ms, unsigned hold_ms,
                                     const char *fab)
{
    g_autofree char *timeout = timeout_ms ?
        g_strdup_printf(",timeout=%u", timeout_ms) : g_strdup("");
    g_autofree char *hold = hold_ms ?
        g_strdup_printf(" -global tempest-nc.hold-ms=%u", hold_ms) :
        g_strdup("");

    return qtest_initf("-object memory-backend-memfd,id=mem,size=64M,"
                       "share=on "
                       "-object tempest-fabric-shm,id=fab,addr=unix:%s,"
                       "node-id=%u,num-nodes=2,cluster-id=%llu,"
                       "poll-idle-ms=60000%s%s "
                       "-M tempest,node-id=%u,num-nodes=2,fabric-backend=fab,"
                       "memory-backend=mem -m 64M%s", dir, id,
                       (unsigned long long)CLUSTER, timeout, fab, id, hold);
}

/* Two real nodes' clusters formed, and their rings set up. */
static void pair_ready(QTestState *n0, QTestState *n1)
{
    for (int i = 0; i < 2; i++) {
        QTestState *s = i ? n1 : n0;

        g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        setup_rings(s);
    }
}

static QTestState *start_shared_timeout(const char *dir, unsigned id,
                                        unsigned timeout_ms)
{
    return start_shared_opts(dir, id, timeout_ms, 0, "");
}

static QTestState *start_shared(const char *dir, unsigned id)
{
    return start_shared_opts(dir, id, 0, 0, "");
}

/*
 * Field k (0: credit on network 0 ... 8: seq_in on network 0) of peer's
 * entry in the node's "ckpt-links" (what a checkpoint's cut is checked
 * on).
 */
static uint32_t ckpt_link_field(QTestState *s, unsigned peer, unsigned k)
{
    QDict *r = qtest_qmp(s, "{ 'execute': 'qom-get', 'arguments': "
                         "{ 'path': '/machine/node-controller', "
                         "'property': 'ckpt-links' } }");
    g_auto(GStrv) peers = NULL, f = NULL;
    g_autofree char *want = g_strdup_printf("%u:", peer);
    uint32_t v = UINT32_MAX;

    g_assert(qdict_haskey(r, "return"));
    peers = g_strsplit(qdict_get_str(r, "return"), " ", -1);
    for (int i = 0; peers[i]; i++) {
        if (g_str_has_prefix(peers[i], want)) {
            unsigned long n;

            f = g_strsplit(peers[i] + strlen(want), ",", -1);
            g_assert_cmpuint(g_strv_length(f), ==, 10);
            g_assert_cmpint(qemu_strtoul(f[k], NULL, 10, &n), ==, 0);
            v = n;
        }
    }
    qobject_unref(r);
    return v;
}

/*
 * "The poll hint", the real path between two real nodes: node 0 names a
 * word and polls; node 1's device writes its packet straight into node
 * 0's RQ slot ("Straight into the receiver's RQ": node 0's RQ is open to
 * it once node 0 polled) and sets the word in node 0's RAM (which it
 * mapped), with no doorbell; node 0's next POLL clears the word and
 * counts the packet (RX_DIRECT, RX_PACKETS, RQ_TAIL).  Without the hint,
 * the same send leaves the word 0.
 */
static void test_hint_poke(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-hint-XXXXXX", NULL);
    const uint64_t word = RAM(0x400000);
    QTestState *n0 = start_shared(dir, 0), *n1 = start_shared(dir, 1);
    g_autofree char *p0 = g_strdup_printf("%s/node0.sock", dir);
    g_autofree char *p1 = g_strdup_printf("%s/node1.sock", dir);
    ShmPeer t = { .s = n0 };
    uint32_t direct;

    pair_ready(n0, n1);
    /* The first packet makes the link (links are made on first use). */
    node_send(n1, 0, 0, 0x800);
    t.seq = 0;
    g_assert_cmpuint(peer_wait_shm_links(n0, FAB, 1), ==, 1);
    g_assert_cmpuint(peer_wait_shm_links(n1, FAB, 1), ==, 1);
    expect_rq(&t, 0, 0x800);

    qtest_writeq(n0, NC(TEMPEST_NC_POLL_HINT), word);
    g_assert_cmphex(qtest_readq(n0, NC(TEMPEST_NC_POLL_HINT)), ==, word);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    /* (The first packet may have gone straight in too, once the link was.) */
    direct = qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT));
    g_assert_cmpuint(direct, <=, 1);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RX_DIRECT)), ==, direct);
    node_send(n1, 1, 0, 0x801);
    g_assert_cmphex(tq_wait_mem32(n0, word, ~0, 1), ==, 1);
    /* In the slot already, the header's words as node 0 would write them */
    expect_rq(&t, 1, 0x801);
    g_assert_cmpuint(qtest_readl(n0, RQ_BASE + TEMPEST_PKT_SIZE +
                                 TEMPEST_PKT_SEQ), ==, 1);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), ==,
                     direct + 1);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 2);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    g_assert_cmphex(qtest_readl(n0, word), ==, 0);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RX_DIRECT)), ==,
                     direct + 1);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RX_PACKETS)), ==, 2);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RQ_TAIL)), ==, 2);

    /*
     * Polling and reading its slots itself (POLL_PEEKS, 1.23): the packet
     * goes straight into the slot and the word stays 0 (no POLL asked
     * for); the counts follow at the next POLL.  A POLL without it: the
     * next packet sets the word again.
     */
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1 | TEMPEST_NC_POLL_PEEKS);
    node_send(n1, 2, 0, 0x802);
    g_assert_cmpuint(tq_wait_reg(n1, TEMPEST_NC_TX_PACKETS, ~0, 3), ==, 3);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), ==,
                     direct + 2);
    expect_rq(&t, 2, 0x802);
    g_assert_cmphex(qtest_readl(n0, word), ==, 0);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RX_DIRECT)), ==,
                     direct + 2);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_RQ_TAIL)), ==, 3);
    node_send(n1, 3, 0, 0x803);
    g_assert_cmphex(tq_wait_mem32(n0, word, ~0, 1), ==, 1);
    expect_rq(&t, 3, 0x803);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    g_assert_cmphex(qtest_readl(n0, word), ==, 0);

    /* Hint off: the word stays 0. */
    qtest_writeq(n0, NC(TEMPEST_NC_POLL_HINT), 0);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    node_send(n1, 4, 0, 0x804);
    g_assert_cmpuint(tq_wait_reg(n1, TEMPEST_NC_TX_PACKETS, ~0, 5), ==, 5);
    g_assert_cmphex(qtest_readl(n0, word), ==, 0);
    qtest_writel(n0, NC(TEMPEST_NC_POLL), 1);
    expect_rq(&t, 4, 0x804);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_DROPPED)), ==, 0);
    /*
     * A checkpoint's counts: the packets written straight in are in node
     * 0's sequence numbers as in node 1's (its seq_in, their seq_out).
     */
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), >=, 4);
    g_assert_cmpuint(ckpt_link_field(n1, 0, 6), ==, 5);
    g_assert_cmpuint(ckpt_link_field(n0, 1, 8), ==, 5);
    qtest_quit(n1);
    qtest_quit(n0);
    unlink(p0);
    unlink(p1);
    rmdir(dir);
}

/*
 * Two real nodes with hold-ms hold_ms (node 1 the sender); node 1 fills
 * node 0's RQ (16 slots, none freed), tags tag + 0..15, the first packet
 * making the link, and sends a 17th, tag + 0x10, from its SQ slot 0,
 * which finds the RQ full (TX_STALLS counts each look: the hold timer's
 * too, from 20 us on).  Returns node 1's TX_DIRECT before the 17th.
 */
static uint32_t hold_start(const char *dir, unsigned hold_ms,
                           QTestState **n0, QTestState **n1, uint64_t tag)
{
    ShmPeer t;
    uint32_t direct;

    *n0 = start_shared_opts(dir, 0, 0, hold_ms, "");
    *n1 = start_shared_opts(dir, 1, 0, hold_ms, "");
    t.s = *n0;
    pair_ready(*n0, *n1);
    node_send(*n1, 0, 0, tag);
    g_assert_cmpuint(peer_wait_shm_links(*n0, FAB, 1), ==, 1);
    g_assert_cmpuint(peer_wait_shm_links(*n1, FAB, 1), ==, 1);
    expect_rq(&t, 0, tag);
    for (unsigned i = 1; i < 16; i++) {
        node_send(*n1, i, 0, tag + i);
        expect_rq(&t, i, tag + i);
    }
    direct = qtest_readl(*n1, NC(TEMPEST_NC_TX_DIRECT));
    g_assert_cmpuint(direct, >=, 15);
    g_assert_cmpuint(qtest_readl(*n1, NC(TEMPEST_NC_TX_STALLS)), ==, 0);
    node_send(*n1, 0, 0, tag + 0x10);
    g_assert_cmpuint(qtest_readl(*n1, NC(TEMPEST_NC_TX_STALLS)), >=, 1);
    return direct;
}

static void hold_stop(const char *dir, QTestState *n0, QTestState *n1)
{
    g_autofree char *p0 = g_strdup_printf("%s/node0.sock", dir);
    g_autofree char *p1 = g_strdup_printf("%s/node1.sock", dir);

    qtest_quit(n1);
    qtest_quit(n0);
    unlink(p0);
    unlink(p1);
    rmdir(dir);
}

/*
 * Holding for room (docs/fabric.rst): a packet that finds its receiver's
 * RQ full stays in the sender's SQ slot (TX_STALLS counts each look)
 * rather than go through the link, and goes straight into the first slot
 * the receiver's guest frees (a store of 0, no device access), with no
 * doorbell of either guest: at the sender's hold timer, or, the sender
 * stopped meanwhile, when it runs again.  hold-ms is long here, so the
 * hold does not end by itself.
 */
static void test_rq_full_holds(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-hold-XXXXXX", NULL);
    QTestState *n0, *n1;
    ShmPeer t;
    uint32_t direct = hold_start(dir, 600000, &n0, &n1, 0xa00);

    t.s = n0;
    g_assert_cmphex(qtest_readl(n1, SQ0_BASE), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 16);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), ==, direct);
    qtest_writel(n1, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_STALLS)), >=, 2);
    g_assert_cmphex(qtest_readl(n1, SQ0_BASE), ==, TEMPEST_PKT_VALID | 8);
    /* Nothing of it at node 0: its slot 0 still holds the first packet. */
    g_assert_cmphex(qtest_readq(n0, RQ_BASE + TEMPEST_PKT_WORD1), ==, 0xa00);

    /*
     * Node 1 stopped: no DMA, its hold timer does nothing (50 ms is some
     * 1,000 of its periods); once it runs again the ring looks again,
     * with no doorbell.
     */
    qtest_qmp_assert_success(n1, "{ 'execute': 'stop' }");
    qtest_writel(n0, RQ_BASE, 0);
    g_usleep(50 * 1000);
    g_assert_cmphex(qtest_readl(n1, SQ0_BASE), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readl(n0, RQ_BASE), ==, 0);
    qtest_qmp_assert_success(n1, "{ 'execute': 'cont' }");
    g_assert_cmphex(tq_wait_mem32(n1, SQ0_BASE, ~0, 0), ==, 0);
    expect_rq(&t, 0, 0xa10);
    g_assert_cmpuint(qtest_readl(n0, RQ_BASE + TEMPEST_PKT_SEQ), ==, 16);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), ==,
                     direct + 1);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 17);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_DROPPED)), ==, 0);
    hold_stop(dir, n0, n1);
}

/*
 * A hold ends by itself once it has lasted hold-ms (1 ms here) with no
 * room: the packet goes through the link, as without holding, and waits
 * in the receiver's device until its guest frees a slot and says so
 * (RQ_DOORBELL).  Order is kept: it is packet 16 of node 1.
 */
static void test_rq_full_gives_up(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-hold-XXXXXX", NULL);
    QTestState *n0, *n1;
    ShmPeer t;
    uint32_t direct = hold_start(dir, 1, &n0, &n1, 0xb00);

    t.s = n0;
    g_assert_cmphex(tq_wait_mem32(n1, SQ0_BASE, ~0, 0), ==, 0);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 17);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_DIRECT)), ==, direct);
    g_assert_cmphex(qtest_readq(n0, RQ_BASE + TEMPEST_PKT_WORD1), ==, 0xb00);

    qtest_writel(n0, RQ_BASE, 0);
    qtest_writel(n0, NC(TEMPEST_NC_RQ_DOORBELL), 1);
    expect_rq(&t, 0, 0xb10);
    g_assert_cmpuint(qtest_readl(n0, RQ_BASE + TEMPEST_PKT_SEQ), ==, 16);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_DROPPED)), ==, 0);
    hold_stop(dir, n0, n1);
}

/*
 * A packet waiting in the receiver's device for room is not moved into
 * its RQ while the receiver is stopped (docs/fabric.rst, "Nothing is
 * sent while stopped": moving it gives its sender a credit back, which at
 * a restore could reach a peer still loading), even with the slot freed
 * meanwhile; at cont it lands, with no doorbell.
 */
static void test_queue_waits_while_stopped(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-hold-XXXXXX", NULL);
    QTestState *n0, *n1;
    ShmPeer t;

    hold_start(dir, 1, &n0, &n1, 0xe00);
    t.s = n0;
    g_assert_cmphex(tq_wait_mem32(n1, SQ0_BASE, ~0, 0), ==, 0);
    qtest_qmp_assert_success(n0, "{ 'execute': 'stop' }");
    qtest_writel(n0, RQ_BASE, 0);
    g_usleep(50 * 1000);
    g_assert_cmphex(qtest_readl(n0, RQ_BASE), ==, 0);
    qtest_qmp_assert_success(n0, "{ 'execute': 'cont' }");
    expect_rq(&t, 0, 0xe10);
    g_assert_cmpuint(qtest_readl(n0, RQ_BASE + TEMPEST_PKT_SEQ), ==, 16);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_DROPPED)), ==, 0);
    hold_stop(dir, n0, n1);
}

/* Node 0's guest frees its 16 RQ slots and says so (RQ_DOORBELL). */
static void rq_free_all(QTestState *s)
{
    for (unsigned i = 0; i < 16; i++) {
        qtest_writel(s, RQ_BASE + i * TEMPEST_PKT_SIZE, 0);
    }
    qtest_writel(s, NC(TEMPEST_NC_RQ_DOORBELL), 1);
}

/*
 * A stopped node sends nothing (docs/checkpoint.rst).  Node 1 (16
 * credits, hold-ms 1) fills node 0's RQ (16 slots) straight, then 16
 * packets go through the link (the first after its hold gave up) and
 * wait in node 0's device, and the 33rd waits for credit.  Node 1
 * stopped, node 0's guest frees its slots twice: all the credit comes
 * back, and the packet stays in its SQ slot until cont.  A packet sent
 * while the cluster is stopped for a checkpoint, or by a node that has
 * loaded its state to one that has not, would be in one side's saved
 * state and not in the other's, and the receiver would drop every later
 * packet of that sender as out of sequence.
 */
static void test_stopped_sends_nothing(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-hold-XXXXXX", NULL);
    QTestState *n0 = start_shared_opts(dir, 0, 0, 1, ",credits=16");
    QTestState *n1 = start_shared_opts(dir, 1, 0, 1, ",credits=16");
    ShmPeer t = { .s = n0 };
    uint32_t stalls;

    pair_ready(n0, n1);
    for (unsigned i = 0; i < 16; i++) {
        node_send(n1, i, 0, 0xc00 + i);
        expect_rq(&t, i, 0xc00 + i);
    }
    for (unsigned i = 16; i < 32; i++) {
        node_send(n1, i % 16, 0, 0xc00 + i);
        g_assert_cmphex(tq_wait_mem32(n1, SQ0_BASE + (i % 16) *
                                      TEMPEST_PKT_SIZE, ~0, 0), ==, 0);
    }
    stalls = qtest_readl(n1, NC(TEMPEST_NC_TX_STALLS));
    node_send(n1, 0, 0, 0xc20);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_STALLS)), ==,
                     stalls + 1);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 32);

    qtest_qmp_assert_success(n1, "{ 'execute': 'stop' }");
    rq_free_all(n0);
    expect_rq(&t, 15, 0xc1f);
    rq_free_all(n0);
    g_usleep(50 * 1000);
    g_assert_cmphex(qtest_readl(n1, SQ0_BASE), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 32);
    g_assert_cmphex(qtest_readl(n0, RQ_BASE), ==, 0);

    qtest_qmp_assert_success(n1, "{ 'execute': 'cont' }");
    expect_rq(&t, 0, 0xc20);
    g_assert_cmpuint(qtest_readl(n0, RQ_BASE + TEMPEST_PKT_SEQ), ==, 32);
    g_assert_cmpuint(qtest_readl(n1, NC(TEMPEST_NC_TX_PACKETS)), ==, 33);
    g_assert_cmpuint(qtest_readl(n0, NC(TEMPEST_NC_DROPPED)), ==, 0);
    hold_stop(dir, n0, n1);
}

/* A frame into ring 0, with the doorbell if the node sleeps. */
static void ring_frame(ShmPeer *t, uint16_t type, const void *body,
                       uint32_t len)
{
    peer_ring_send(&t->m.tx, type, 0, body, len);
    if (fabric_ring_need_bell(&t->m.tx)) {
        peer_send(t->fd, FABRIC_BELL, 0, NULL, 0);
    }
}

/* The node's next frame of this type in ring 1 (others skipped). */
static uint32_t ring_until(ShmPeer *t, uint16_t type, uint8_t *buf,
                           size_t cap)
{
    uint32_t len;

    while (peer_ring_read_frame(&t->m.rx, buf, cap, &len) != type) {
        /* BELLs, ACKs: not what is waited for */
    }
    return len;
}

/* A transfer-engine frame into ring 0: kind, message id, body. */
static void ring_xfer(ShmPeer *t, uint8_t kind, uint32_t mid,
                      const void *body, size_t len)
{
    g_autofree uint8_t *f = g_malloc0(FABRIC_XFER_HDR + len);

    f[0] = kind;
    fabric_st32(f + 4, mid);
    if (len) {
        memcpy(f + FABRIC_XFER_HDR, body, len);
    }
    ring_frame(t, FABRIC_XFER, f, FABRIC_XFER_HDR + len);
}

#define CREDITS     32      /* the fabric's default, which the HELLO says */

/* Wait (bounded) until the shared word *w is want; returns it. */
static uint32_t wait_shared(uint32_t *w, uint32_t want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t v;

    while ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    return v;
}

/* The node sends n packets to us from SQ0 (16 slots), tags from tag. */
static void node_send_n(ShmPeer *t, unsigned n, uint64_t tag)
{
    uint32_t sent = qtest_readl(t->s, NC(TEMPEST_NC_TX_PACKETS));

    for (unsigned i = 0; i < n; i++) {
        node_send(t->s, (sent + i) % 16, 1, tag + i);
    }
}

/* The node's next n frames in ring 1 are DATA (no CREDIT among them). */
static void expect_n_data(ShmPeer *t, unsigned n, uint64_t tag)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    uint32_t len;

    for (unsigned i = 0; i < n; i++) {
        g_assert_cmpuint(peer_ring_read_frame(&t->m.rx, buf, sizeof(buf),
                                              &len), ==, FABRIC_DATA);
        g_assert_cmphex(ldq_le_p(buf + FABRIC_HDR_SIZE + 4 +
                                 TEMPEST_PKT_WORD1), ==, tag + i);
    }
}

/*
 * "Shared memory", credit: on a shared-memory link the credit a receiver
 * gives back is a count in its ring's control block (credit_back), which
 * the sender takes at its next send with no CREDIT frame to read; a
 * sender out of credit sets credit_waiting and is woken by a CREDIT frame
 * of 0.  Both directions: the node gives back the credit of our packets
 * it moved to its RQ as a count (and sends no CREDIT frame), and takes
 * ours from memory: its 33rd packet goes out at once once we count 32
 * back, though it never read a frame from us (without the count it waits
 * for credit: TX_STALLS 1).  The credit timer is off (credit-look-ms 0):
 * the wake-up alone must move the last packet.
 */
static void test_credit_in_memory(void)
{
    ShmPeer t;
    FabricRingCtl *c0, *c1;
    uint8_t zero[4] = { 0 };
    uint8_t buf[64];

    shm_start_node(&t, false, "-global tempest-nc.credit-look-ms=0");
    shm_link_up(&t);
    c0 = peer_shm_ctl(&t.m, 0);
    c1 = peer_shm_ctl(&t.m, 1);
    /* A new link: each side may have run out before it was made. */
    g_assert_cmpuint(c1->credit_waiting, ==, 3);
    __atomic_store_n(&c1->credit_waiting, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c0->credit_waiting, 3, __ATOMIC_RELEASE);

    /*
     * Ours, taken into its RQ: the credit comes back in ring 0's block,
     * and the first of network 0 wakes us (a CREDIT of 0), once.
     */
    for (unsigned i = 0; i < 3; i++) {
        ring_data(&t, 0x600 + i, true);
        expect_rq(&t, i, 0x600 + i);
    }
    g_assert_cmpuint(wait_shared(&c0->credit_back[0], 3), ==, 3);
    g_assert_cmpuint(ring_until(&t, FABRIC_CREDIT, buf, sizeof(buf)), ==, 4);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, 0);
    g_assert_cmpuint(buf[2], ==, 0);             /* network 0 */
    g_assert_cmpuint(c0->credit_waiting, ==, 2);
    g_assert_cmpuint(__atomic_load_n(&c0->credit_back[1], __ATOMIC_ACQUIRE),
                     ==, 0);

    /* Its: all its credit, then one more once we count it back. */
    node_send_n(&t, CREDITS, 0x700);
    expect_n_data(&t, CREDITS, 0x700);
    __atomic_store_n(&c1->credit_back[0], CREDITS, __ATOMIC_RELEASE);
    node_send_n(&t, 1, 0x800);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_STALLS)), ==, 0);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==,
                     CREDITS + 1);
    expect_n_data(&t, 1, 0x800);
    g_assert_cmpuint(__atomic_load_n(&c1->credit_waiting, __ATOMIC_ACQUIRE),
                     ==, 0);

    /* Out of credit: it says it waits; our count and a CREDIT of 0 wake it. */
    node_send_n(&t, CREDITS, 0x900);
    expect_n_data(&t, CREDITS - 1, 0x900);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_STALLS)), ==, 1);
    g_assert_cmpuint(__atomic_load_n(&c1->credit_waiting, __ATOMIC_ACQUIRE),
                     ==, 1);
    __atomic_store_n(&c1->credit_back[0], 2 * CREDITS, __ATOMIC_RELEASE);
    __atomic_store_n(&c1->credit_waiting, 0, __ATOMIC_RELEASE);
    ring_frame(&t, FABRIC_CREDIT, zero, 4);
    expect_n_data(&t, 1, 0x900 + CREDITS - 1);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==,
                     2 * CREDITS + 1);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    shm_stop(&t);
}

/*
 * A sender out of credit whose wake-up never comes: the peer counts the
 * credit back in memory and clears the waiting bit, but sends no CREDIT
 * frame (a lost wake-up; the twelfth session's radix-8 hang had this
 * signature, docs/fabric.rst).  The node's credit timer looks again on
 * its own (credit-look-ms, 10): the waiting packet goes out.  Without
 * the timer it waits for ever.
 */
/*
 * A node (@extra: its options) on a link whose waiting bits we cleared
 * sends CREDITS + 1 packets from @tag: we read CREDITS, the last waits for
 * credit (TX_STALLS 1) with its network 0 bit set.  Returns our ring 1's
 * control block (the node's, where we count credit back).
 */
static FabricRingCtl *credit_stalled(ShmPeer *t, const char *extra,
                                     uint64_t tag)
{
    FabricRingCtl *c1;

    shm_start_node(t, false, extra);
    shm_link_up(t);
    c1 = peer_shm_ctl(&t->m, 1);
    __atomic_store_n(&c1->credit_waiting, 0, __ATOMIC_RELEASE);
    node_send_n(t, CREDITS + 1, tag);
    expect_n_data(t, CREDITS, tag);
    g_assert_cmpuint(qtest_readl(t->s, NC(TEMPEST_NC_TX_STALLS)), ==, 1);
    g_assert_cmpuint(__atomic_load_n(&c1->credit_waiting, __ATOMIC_ACQUIRE),
                     ==, 1);
    return c1;
}

static void test_credit_without_wake(void)
{
    ShmPeer t;
    FabricRingCtl *c1 = credit_stalled(&t, NULL, 0xb00);

    __atomic_store_n(&c1->credit_back[0], CREDITS, __ATOMIC_RELEASE);
    __atomic_store_n(&c1->credit_waiting, 0, __ATOMIC_RELEASE);
    /* No frame: its own look finds the credit. */
    expect_n_data(&t, 1, 0xb00 + CREDITS);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==,
                     CREDITS + 1);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    shm_stop(&t);
}

/*
 * A wake-up with nothing to take (docs/fabric.rst, "The radix-8 hang
 * again"): the node, out of credit, set its waiting bit; we count all the
 * credit back but are slow to clear the bit, and meanwhile a doorbell of
 * its guest takes that credit, sends 32 and waits again (the bit still
 * set).  Our late clear and CREDIT frame of 0 then find nothing new: the
 * node must set its bit again, or it waits for a wake-up no receiver
 * sends.  The credit timer is off (credit-look-ms 0), so only the
 * wake-ups move it; without the mend the bit stays clear.
 */
static void test_credit_wake_rearms(void)
{
    ShmPeer t;
    FabricRingCtl *c1 = credit_stalled(&t, "-global tempest-nc.credit-look-"
                                       "ms=0", 0xc00);
    uint8_t zero[4] = { 0 };

    /* Counted back; the bit left set (we are slow to clear it). */
    __atomic_store_n(&c1->credit_back[0], CREDITS, __ATOMIC_RELEASE);
    /*
     * Its guest's doorbells take it: the waiting one and 31 more go, and
     * the 32nd new one waits (slots after the waiting one's, slot 0).
     */
    for (unsigned i = 0; i < CREDITS; i++) {
        node_send(t.s, (CREDITS + 1 + i) % 16, 1, 0xc00 + CREDITS + 1 + i);
    }
    expect_n_data(&t, CREDITS, 0xc00 + CREDITS);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_STALLS)), ==, 2);
    /* Now our clear, and its wake-up, with nothing new to take. */
    __atomic_fetch_and(&c1->credit_waiting, ~1U, __ATOMIC_SEQ_CST);
    ring_frame(&t, FABRIC_CREDIT, zero, 4);
    g_assert_cmpuint(wait_shared(&c1->credit_waiting, 1), ==, 1);
    /* So our next count back wakes it, as a receiver does. */
    __atomic_store_n(&c1->credit_back[0], 2 * CREDITS, __ATOMIC_RELEASE);
    g_assert_cmpuint(__atomic_fetch_and(&c1->credit_waiting, ~1U,
                                        __ATOMIC_SEQ_CST) & 1, ==, 1);
    ring_frame(&t, FABRIC_CREDIT, zero, 4);
    expect_n_data(&t, 1, 0xc00 + 2 * CREDITS);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    shm_stop(&t);
}

/*
 * "Shared memory", credit: the count is the peer's word, untrusted.  A
 * count claiming more credit back than the node can have used breaks
 * the link (dropped, counted, the peer reported lost), and QEMU goes on.
 */
static void test_credit_beyond(void)
{
    ShmPeer t;

    shm_start(&t);
    shm_link_up(&t);
    node_send_n(&t, CREDITS, 0xa00);
    expect_n_data(&t, CREDITS, 0xa00);
    __atomic_store_n(&peer_shm_ctl(&t.m, 1)->credit_back[0], CREDITS + 1,
                     __ATOMIC_RELEASE);
    node_send_n(&t, 1, 0xb00);
    g_assert_cmphex(tq_wait_mem32(t.s, CQ_BASE, ~0, TEMPEST_EV_VALID |
                                  TEMPEST_EV_PEER_DOWN), ==,
                    TEMPEST_EV_VALID | TEMPEST_EV_PEER_DOWN);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==,
                     CREDITS);
    g_assert_cmpuint(peer_shm_links(t.s, FAB), ==, 0);
    qtest_writel(t.s, NC(TEMPEST_NC_SCRATCH), 0x5a5a);
    g_assert_cmphex(qtest_readl(t.s, NC(TEMPEST_NC_SCRATCH)), ==, 0x5a5a);
    shm_stop(&t);
}

#define SPLIT_RAM       (1 * MiB)               /* the fake node's RAM */
#define SPLIT_BUF       RAM(0x400000)           /* the port's buffer */
#define SPLIT_LEN       (160 * KiB)             /* a DATA split in halves */

/*
 * docs/chan.rst, "The copy in halves", from a hostile sender whose RAM
 * is mapped here (its OFFER passes a sealed memfd of 1 MiB at RAM(0)):
 * a long DATA (BIG, the node's GO, the transfer's header) whose SPLIT
 * names a source running past the sender's RAM is answered UNSPLIT and
 * nothing is copied; a SPLIT inside it is copied by the node itself
 * (XFER_PULL), the sender's DATA frames bring the first half, and the
 * port holds both halves, each from where it should come.
 */
static void test_split_bounds(void)
{
    ShmPeer t;
    uint8_t buf[FABRIC_HDR_SIZE + 64], f[FABRIC_CHAN_HDR + 8];
    uint8_t x[32], *ram, *half, *got;
    const uint64_t at = SPLIT_LEN / 2, cookie = 0 | 2 << 16 | 1ULL << 32;
    int rfd;

    memset(&t, 0, sizeof(t));
    t.m.fd = -1;
    t.lfd = -1;
    t.dir = g_dir_make_tmp("tempest-shm-XXXXXX", NULL);
    t.s = start_node(t.dir, 0);
    setup_rings(t.s);
    t.fd = peer_join_flags(t.dir, 0, 1, 2, CLUSTER, NULL, 0,
                           FABRIC_HELLO_SHM, &(uint32_t){ 0 });
    peer_set_timeout(t.fd, 20);
    g_assert_cmpuint(tq_wait_reg(t.s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    peer_read_until(t.fd, FABRIC_MESH, buf, sizeof(buf));

    /* Our RAM: a sealed memfd, every byte its offset's low byte. */
    rfd = memfd_create("tempest-fake-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(rfd, >=, 0);
    g_assert_cmpint(ftruncate(rfd, SPLIT_RAM), ==, 0);
    g_assert_cmpint(fcntl(rfd, F_ADD_SEALS, PEER_SHM_SEALS), ==, 0);
    ram = mmap(NULL, SPLIT_RAM, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
    g_assert(ram != MAP_FAILED);
    for (size_t i = 0; i < SPLIT_RAM; i++) {
        ram[i] = i * 7 + 3;
    }
    peer_shm_make_good(&t.m, CLUSTER, 1, 0);
    fabric_st64(t.m.map + FABRIC_LINK_H_RAM, RAM(0));
    fabric_st64(t.m.map + FABRIC_LINK_H_RAM + 8, SPLIT_RAM);
    peer_shm_step_fds(t.fd, FABRIC_SHM_OFFER, (int[]){ t.m.fd, rfd }, 2);
    expect_step(&t, FABRIC_SHM_ACK);
    peer_shm_step(t.fd, FABRIC_SHM_SWITCH, -1);
    g_assert_cmpuint(peer_wait_shm_links(t.s, FAB, 1), ==, 1);

    /* Port 0 of the node, its companion our port 2; BIG, its GO. */
    g_assert_cmpuint(tq_command(t.s, TEMPEST_CMD_CHAN, TEMPEST_CHAN_OP_ALLOC,
                                SPLIT_BUF, 256 * KiB, 0, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command(t.s, TEMPEST_CMD_CHAN,
                                TEMPEST_CHAN_OP_CONNECT, 0,
                                TEMPEST_CHAN_ID(1, 2), 0, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    memset(f, 0, sizeof(f));
    f[0] = 5;                                       /* BIG */
    fabric_st32(f + 4, 0);
    fabric_st32(f + 8, TEMPEST_CHAN_ID(1, 2));
    fabric_st32(f + 12, 1);
    fabric_st64(f + FABRIC_CHAN_HDR, SPLIT_LEN);
    ring_frame(&t, FABRIC_CHAN, f, sizeof(f));
    ring_until(&t, FABRIC_CHAN, buf, sizeof(buf));
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE], ==, 6); /* GO */
    g_assert_cmphex(fabric_ld64(buf + FABRIC_HDR_SIZE + FABRIC_CHAN_HDR),
                    ==, SPLIT_BUF);

    /* The transfer (the channel's), and a SPLIT past our RAM. */
    memset(x, 0, sizeof(x));
    fabric_st64(x, SPLIT_LEN);
    fabric_st64(x + 8, SPLIT_BUF);
    fabric_st32(x + 16, 1U << 31);                  /* XFER_F_CHAN */
    fabric_st64(x + 24, cookie);
    ring_xfer(&t, 1, 5, x, 32);                     /* XFER_HDR */
    fabric_st64(x, at);
    fabric_st64(x + 8, RAM(SPLIT_RAM - at));        /* len runs past */
    ring_xfer(&t, 9, 5, x, 16);                     /* XFER_SPLIT */
    ring_until(&t, FABRIC_XFER, buf, sizeof(buf));
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE], ==, 10); /* XFER_UNSPLIT */
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_XFER_PULL_LO)), ==, 0);

    /* Inside it: the node copies [at, len) from RAM(0x1000) + at. */
    fabric_st64(x + 8, RAM(0x1000));
    ring_xfer(&t, 9, 5, x, 16);
    g_assert_cmpuint(tq_wait_reg(t.s, TEMPEST_NC_XFER_PULL_LO, ~0,
                                 SPLIT_LEN - at), ==, SPLIT_LEN - at);
    half = g_malloc(8 + at / 2);
    for (unsigned i = 0; i < 2; i++) {
        fabric_st64(half, i * at / 2);
        memset(half + 8, 0xab, at / 2);
        ring_xfer(&t, 2, 5, half, 8 + at / 2);     /* XFER_DATA */
    }
    ring_until(&t, FABRIC_XFER, buf, sizeof(buf));
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE], ==, 4); /* XFER_ACK */
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 8), ==, 0);
    g_assert_cmpuint(tq_command(t.s, TEMPEST_CMD_CHAN, TEMPEST_CHAN_OP_STATE,
                                0, 0, 0, 0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(t.s, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    got = g_malloc(SPLIT_LEN);
    qtest_memread(t.s, SPLIT_BUF, got, SPLIT_LEN);
    for (size_t i = 0; i < at; i++) {
        g_assert_cmpuint(got[i], ==, 0xab);
    }
    g_assert_cmpmem(got + at, SPLIT_LEN - at, ram + 0x1000 + at,
                    SPLIT_LEN - at);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    g_free(got);
    g_free(half);
    munmap(ram, SPLIT_RAM);
    close(rfd);
    shm_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Straight from the ring, straight into it                            */
/* ------------------------------------------------------------------ */

/* As shm_start, the node tracing the in-place paths into dir/trace.log. */
static void shm_start_traced(ShmPeer *t)
{
    shm_start_node(t, true, NULL);
}

/* How many lines of the node's trace log are event 'name' ("name node"). */
static unsigned trace_count(ShmPeer *t, const char *name)
{
    g_autofree char *path = g_strdup_printf("%s/trace.log", t->dir);
    g_autofree char *text = NULL;
    g_autofree char *what = g_strdup_printf("%s node ", name);
    unsigned n = 0;

    /* A qtest read is answered after the events before it were logged. */
    qtest_readl(t->s, NC(TEMPEST_NC_DROPPED));
    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return 0;
    }
    for (const char *at = text; (at = strstr(at, what)); at++) {
        n++;
    }
    return n;
}

static void shm_stop_traced(ShmPeer *t)
{
    g_autofree char *path = g_strdup_printf("%s/trace.log", t->dir);

    qtest_quit(t->s);
    t->s = NULL;
    unlink(path);
    if (t->fd >= 0) {
        close(t->fd);
    }
    peer_shm_free(&t->m);
    rmdir(t->dir);
    g_free(t->dir);
}

/* Ring 0's next frame: the fake node's packet 'tag', seq as given. */
static void ring_data_seq(ShmPeer *t, uint64_t tag, uint32_t seq,
                          uint32_t pkt_len)
{
    uint8_t body[FABRIC_DATA_MAX];
    uint32_t saved = t->seq;
    size_t len;

    t->seq = seq;
    len = data_body(t, body, tag);
    t->seq = saved;
    stl_le_p(body + 4 + TEMPEST_PKT_CTL, TEMPEST_PKT_VALID | pkt_len);
    peer_ring_send(&t->m.tx, FABRIC_DATA, 0, body, len);
}

/*
 * "Straight from the ring": a DATA frame whole in the ring is checked on
 * a private copy of its header and its packet goes from the ring into
 * the free RQ slot; one that wraps around the ring's end goes through
 * the private buffer as before; either way the same checks.  Ring 0
 * starts 60 bytes before its end, so of five frames of 52 bytes the
 * second wraps: A (good), B (good, wraps), C (its packet's length not
 * the frame's: fabric_parse() refuses it), D (out of sequence), E
 * (good).  A, B and E land in RQ slots 0 to 2 in order, C and D are
 * dropped and counted, and A, D and E were handled in the ring (D
 * dropped there by its sequence number), A, B and E published with no
 * copy of the device's own.  Without the check of the copy C would be
 * published; with the header read from the ring instead of the copy
 * nothing here differs, but a peer could change it after the check.
 */
static void test_in_place_rx(void)
{
    ShmPeer t;
    FabricRingCtl *c0;

    shm_start_traced(&t);
    peer_shm_make_good(&t.m, CLUSTER, 1, 0);
    peer_shm_ctl(&t.m, 0)->credit_waiting = 0;
    c0 = peer_shm_ctl(&t.m, 0);
    c0->head = c0->tail = FABRIC_LINK_RING - 60;
    g_assert_true(fabric_ring_attach(&t.m.tx, c0, FABRIC_LINK_RING, true));
    peer_shm_step(t.fd, FABRIC_SHM_OFFER, t.m.fd);
    expect_step(&t, FABRIC_SHM_ACK);
    peer_shm_step(t.fd, FABRIC_SHM_SWITCH, -1);
    g_assert_cmpuint(peer_wait_shm_links(t.s, FAB, 1), ==, 1);

    ring_data_seq(&t, 0x500, 0, 8);         /* A */
    ring_data_seq(&t, 0x501, 1, 8);         /* B: wraps */
    ring_data_seq(&t, 0x5c, 2, 9);          /* C: malformed */
    ring_data_seq(&t, 0x5d, 9, 8);          /* D: out of sequence */
    ring_data_seq(&t, 0x502, 2, 8);         /* E */
    if (fabric_ring_need_bell(&t.m.tx)) {
        peer_send(t.fd, FABRIC_BELL, 0, NULL, 0);
    }
    expect_rq(&t, 0, 0x500);
    expect_rq(&t, 1, 0x501);
    expect_rq(&t, 2, 0x502);
    g_assert_cmpuint(qtest_readl(t.s, RQ_BASE + 3 * TEMPEST_PKT_SIZE), ==,
                     0);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 2);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_RX_PACKETS)), ==, 3);
    g_assert_cmpuint(trace_count(&t, "tempest_fabric_shm_in_place"), ==, 3);
    g_assert_cmpuint(trace_count(&t, "tempest_nc_rx_direct"), ==, 3);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_PEERS_DOWN)), ==, 0);
    shm_stop_traced(&t);
}

/*
 * "Straight from the ring", order: a packet goes straight into the RQ
 * only when nothing waits ahead of it.  17 packets for an RQ of 16 slots:
 * the 17th waits in the device.  The guest frees slot 0 (no doorbell) and
 * an 18th arrives: the 17th goes into slot 0, the 18th waits (slot 1 is
 * full), and comes into slot 1 once that is freed.  Without the check
 * the 18th would take the free slot 0, ahead of the 17th.  (The device's
 * 1 ms retry may move the 17th first: the same order.)
 */
static void test_in_place_order(void)
{
    ShmPeer t;

    shm_start(&t);
    shm_link_up(&t);
    for (unsigned i = 0; i < 17; i++) {
        ring_data(&t, 0x600 + i, true);
    }
    expect_rq(&t, 15, 0x60f);
    /* The 17th is out of the ring, waiting in the device. */
    g_assert_cmpuint(wait_shared((uint32_t *)&peer_shm_ctl(&t.m, 0)->head,
                                 (uint32_t)t.m.tx.pos), ==,
                     (uint32_t)t.m.tx.pos);
    qtest_writel(t.s, RQ_BASE, 0);
    ring_data(&t, 0x611, true);
    g_assert_cmphex(tq_wait_mem32(t.s, RQ_BASE, ~0, TEMPEST_PKT_VALID | 8),
                    ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readq(t.s, RQ_BASE + TEMPEST_PKT_WORD1), ==,
                    0x610);
    g_assert_cmpuint(wait_shared((uint32_t *)&peer_shm_ctl(&t.m, 0)->head,
                                 (uint32_t)t.m.tx.pos), ==,
                     (uint32_t)t.m.tx.pos);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_RX_PACKETS)), ==, 17);
    qtest_writel(t.s, RQ_BASE + TEMPEST_PKT_SIZE, 0);
    qtest_writel(t.s, NC(TEMPEST_NC_RQ_DOORBELL), 1);
    expect_rq(&t, 1, 0x611);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_DROPPED)), ==, 0);
    shm_stop(&t);
}

#define BIG_SLOT    8192
#define BIG_PAYLOAD (BIG_SLOT - TEMPEST_PKT_DATA)
#define BIG_FRAME   (FABRIC_HDR_SIZE + 4 + BIG_SLOT)

/* The node sends one packet of BIG_PAYLOAD bytes, tag in WORD1. */
static void node_send_big(QTestState *s, unsigned slot, uint64_t tag)
{
    uint64_t addr = SQ0_BASE + slot * BIG_SLOT;
    uint8_t pkt[TEMPEST_PKT_DATA] = { 0 };

    stw_le_p(pkt + TEMPEST_PKT_NODE, 1);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, tag);
    qtest_memwrite(s, addr + 4, pkt + 4, sizeof(pkt) - 4);
    qtest_memset(s, addr + TEMPEST_PKT_DATA, (uint8_t)tag, BIG_PAYLOAD);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | BIG_PAYLOAD);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
}

/* Read one frame from ring 1, ringing the node when it waits for room. */
static uint16_t ring_read_rung(ShmPeer *t, uint8_t *buf, uint32_t *len)
{
    gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    size_t got = 0, want = FABRIC_HDR_SIZE;
    bool ring_back;

    while (got < want) {
        size_t n = fabric_ring_read(&t->m.rx, buf + got, want - got,
                                    &ring_back);

        g_assert_false(t->m.rx.broken);
        if (ring_back) {
            peer_send(t->fd, FABRIC_BELL, 0, NULL, 0);
        }
        got += n;
        if (got == FABRIC_HDR_SIZE && want == FABRIC_HDR_SIZE) {
            *len = peer_frame_len(buf, BIG_FRAME);
            want += *len;
        }
        if (!n) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(200);
        }
    }
    return peer_frame_type(buf, *len);
}

/*
 * "Straight into the ring": the node builds a DATA frame in the ring
 * itself when nothing waits to go in first and it fits without wrapping;
 * otherwise it queues it behind.  32 frames of 8204 bytes for a ring of
 * 256 KiB: 31 are built in place, the 32nd goes in part (the rest waits
 * in the node).  We take the first frame (room for a whole one now) and
 * do not ring; we give one credit back in memory and the node sends a
 * 33rd: it must wait behind the rest of the 32nd, not be built in the
 * room (the stream would be corrupt).  Then every frame, in order, whole.
 */
static void test_in_place_tx(void)
{
    g_autofree uint8_t *buf = g_malloc(BIG_FRAME);
    ShmPeer t;
    uint32_t len;

    shm_start_traced(&t);
    g_assert_cmpuint(tq_command3(t.s, TEMPEST_CMD_RING_SETUP,
                                 TEMPEST_RING_SQ0 | 13 << 8, SQ0_BASE, 16),
                     ==, TEMPEST_CMD_SUCCESS);
    shm_link_up(&t);
    for (unsigned i = 0; i < 32; i++) {
        node_send_big(t.s, i % 16, 0x700 + i);
    }
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==, 32);
    g_assert_cmpuint(trace_count(&t, "tempest_fabric_shm_in_place_tx"), ==,
                     31);
    g_assert_cmpuint(peer_ring_read_frame(&t.m.rx, buf, BIG_FRAME, &len),
                     ==, FABRIC_DATA);
    g_assert_cmphex(ldq_le_p(buf + FABRIC_HDR_SIZE + 4 + TEMPEST_PKT_WORD1),
                    ==, 0x700);
    __atomic_store_n(&peer_shm_ctl(&t.m, 1)->credit_back[0], 1,
                     __ATOMIC_RELEASE);
    node_send_big(t.s, 0, 0x720);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_TX_PACKETS)), ==, 33);
    for (unsigned i = 1; i < 33; i++) {
        g_assert_cmpuint(ring_read_rung(&t, buf, &len), ==, FABRIC_DATA);
        g_assert_cmpuint(len, ==, 4 + BIG_SLOT);
        g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, i);
        g_assert_cmphex(ldq_le_p(buf + FABRIC_HDR_SIZE + 4 +
                                 TEMPEST_PKT_WORD1), ==, 0x700 + i);
        g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4 + BIG_SLOT - 1], ==,
                         (uint8_t)(0x700 + i));
    }
    g_assert_cmpuint(trace_count(&t, "tempest_fabric_shm_in_place_tx"), ==,
                     31);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_SEND_ERRORS)), ==, 0);
    shm_stop_traced(&t);
}

/*
 * "Straight into the receiver's RQ": a real node 0 (its RAM shared, its
 * RQ open to peers from its RING_SETUP) and a fake node 1 whose link is
 * in shared memory, with node 0's combining area mapped (the last
 * descriptor of node 0's ACK): the fake node can hold node 0's RQ lock
 * as a writer would.
 */
typedef struct RqPeer {
    ShmPeer t;
    uint8_t *area;
    size_t area_len;
    RqLine *line;           /* node 0's, in the area */
    RqRecord *rec;          /* ours, in the link's header (we dialled) */
} RqPeer;

static void rq_peer_start(RqPeer *r, unsigned timeout_ms)
{
    ShmPeer *t = &r->t;
    uint8_t buf[FABRIC_HDR_SIZE + 64];
    uint32_t flags = 0, len;
    int passed = -1;

    memset(r, 0, sizeof(*r));
    t->m.fd = -1;
    t->lfd = -1;
    t->dir = g_dir_make_tmp("tempest-rq-XXXXXX", NULL);
    t->s = start_shared_timeout(t->dir, 0, timeout_ms);
    setup_rings(t->s);
    t->fd = peer_join_flags(t->dir, 0, 1, 2, CLUSTER, NULL, 0,
                            FABRIC_HELLO_SHM, &flags);
    peer_set_timeout(t->fd, 20);
    g_assert_cmpuint(tq_wait_reg(t->s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    peer_read_until(t->fd, FABRIC_MESH, buf, sizeof(buf));
    peer_shm_make_good(&t->m, CLUSTER, 1, 0);
    peer_shm_ctl(&t->m, 0)->credit_waiting = 0;
    peer_shm_step(t->fd, FABRIC_SHM_OFFER, t->m.fd);
    while (peer_recv_frame(t->fd, buf, sizeof(buf), &len, &passed) !=
           FABRIC_SHM) {
        /* (none expected) */
    }
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==, FABRIC_SHM_ACK);
    g_assert_cmpint(passed, >=, 0);
    r->area_len = coll_area_bytes(2);
    r->area = mmap(NULL, r->area_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                   passed, 0);
    g_assert_true(r->area != MAP_FAILED);
    close(passed);
    g_assert_cmphex(fabric_ld32(r->area + COLL_AREA_H_MAGIC), ==,
                    COLL_AREA_MAGIC);
    peer_shm_step(t->fd, FABRIC_SHM_SWITCH, -1);
    g_assert_cmpuint(peer_wait_shm_links(t->s, FAB, 1), ==, 1);
    r->line = (RqLine *)(r->area + coll_area_node(2, 0) + COLL_AREA_N_RQ);
    r->rec = (RqRecord *)(t->m.map + FABRIC_LINK_H_RQ);
    /* Open since RING_SETUP, where the RQ is */
    g_assert_cmphex(__atomic_load_n(&r->line->lock, __ATOMIC_SEQ_CST), ==,
                    rq_word(0, 0));
    g_assert_cmphex(r->line->base, ==, RQ_BASE);
    g_assert_cmpuint(r->line->slots, ==, 16);
    g_assert_cmpuint(r->line->slot_size, ==, TEMPEST_PKT_SIZE);
}

/* Node 0's lock word once it is want (or after TQ_WAIT_US). */
static uint64_t rq_wait_lock(RqPeer *r, uint64_t want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint64_t w;

    while ((w = __atomic_load_n(&r->line->lock, __ATOMIC_SEQ_CST)) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    return w;
}

static void rq_peer_stop(RqPeer *r)
{
    munmap(r->area, r->area_len);
    shm_stop(&r->t);
}

/* Our packet 'tag' written into node 0's RQ slot 0, CTL as it is. */
static void rq_peer_body(RqPeer *r, uint64_t tag)
{
    uint8_t pkt[TEMPEST_PKT_SIZE] = { 0 };

    stw_le_p(pkt + TEMPEST_PKT_NODE, 1);
    stl_le_p(pkt + TEMPEST_PKT_SEQ, 0);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, tag);
    qtest_memwrite(r->t.s, RQ_BASE + 4, pkt + 4, TEMPEST_PKT_SIZE - 4);
}

/*
 * A writer that dies holding node 0's RQ lock (its link closes), at each
 * step of a write into slot 0: node 0 finishes the slot from it and our
 * record (rq_resolve), lets the lock go at the tail that leaves (RQ_TAIL,
 * RX_DIRECT), and its own next packet goes to the slot after.  No state
 * leaves a slot the guest would wait at.
 */
static void test_rq_writer_dies(void)
{
    const uint32_t v = TEMPEST_PKT_VALID | 8;
    static const struct {
        const char *when;
        bool claimed, written, recorded, valid;
        uint32_t tail;          /* where node 0 goes on */
    } cases[] = {
        { "after taking the lock", false, false, false, false, 0 },
        { "after claiming slot 0", true, false, false, false, 0 },
        { "after writing the body", true, true, false, false, 0 },
        { "after recording it complete", true, true, true, false, 1 },
        { "after making it VALID", true, true, true, true, 1 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        RqPeer r;
        QTestState *s;

        g_test_message("a writer dead %s", cases[i].when);
        rq_peer_start(&r, 0);
        s = r.t.s;
        __atomic_store_n(&r.line->lock, rq_word(2, 0), __ATOMIC_SEQ_CST);
        if (cases[i].claimed) {
            qtest_writel(s, RQ_BASE, RQ_BUSY);
        }
        if (cases[i].written) {
            rq_peer_body(&r, 0x900 + i);
        }
        if (cases[i].recorded) {
            r.rec->direct[0] = 1;
            r.rec->ctl = v;
            __atomic_store_n(&r.rec->slot, 1, __ATOMIC_SEQ_CST);
        }
        if (cases[i].valid) {
            qtest_writel(s, RQ_BASE, v);
        }
        close(r.t.fd);      /* dead: its link closes */
        r.t.fd = -1;
        g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_PEERS_DOWN, ~0, 1), ==, 1);
        g_assert_cmphex(rq_wait_lock(&r, rq_word(0, cases[i].tail)), ==,
                        rq_word(0, cases[i].tail));
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RQ_TAIL)), ==,
                         cases[i].tail);
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RX_DIRECT)), ==,
                         cases[i].tail);
        if (cases[i].tail) {
            g_assert_cmphex(qtest_readl(s, RQ_BASE), ==, v);
            g_assert_cmphex(qtest_readq(s, RQ_BASE + TEMPEST_PKT_WORD1), ==,
                            0x900 + i);
        } else {
            g_assert_cmphex(qtest_readl(s, RQ_BASE), ==, 0);
        }
        /* Its own packet (to itself) goes to the next slot, as always. */
        node_send(s, 0, 0, 0xa00 + i);
        g_assert_cmphex(tq_wait_mem32(s, RQ_BASE + cases[i].tail *
                                      TEMPEST_PKT_SIZE, ~0, v), ==, v);
        g_assert_cmphex(qtest_readq(s, RQ_BASE + cases[i].tail *
                                    TEMPEST_PKT_SIZE + TEMPEST_PKT_WORD1),
                        ==, 0xa00 + i);
        g_assert_cmphex(__atomic_load_n(&r.line->lock, __ATOMIC_SEQ_CST), ==,
                        rq_word(0, cases[i].tail + 1));
        rq_peer_stop(&r);
    }
}

/*
 * A peer that holds node 0's RQ lock and never lets go, its link alive:
 * node 0's own packet waits (it never waits for the lock itself), and
 * after the fabric's timeout (here 4 s; never less: a writer the host
 * does not run for a while is alive) at the same tail node 0 drops that
 * link (a bad peer: DROPPED, the peer down), finishes the slot and
 * delivers.
 */
static void test_rq_lock_held(void)
{
    const uint32_t v = TEMPEST_PKT_VALID | 8;
    const unsigned timeout_ms = 4000;
    RqPeer r;
    QTestState *s;
    uint8_t buf[FABRIC_HDR_SIZE + 64];
    ssize_t n;
    gint64 held;

    rq_peer_start(&r, timeout_ms);
    s = r.t.s;
    held = g_get_monotonic_time();
    __atomic_store_n(&r.line->lock, rq_word(2, 0), __ATOMIC_SEQ_CST);
    qtest_writel(s, RQ_BASE, RQ_BUSY);
    node_send(s, 0, 0, 0xb00);
    g_assert_cmphex(tq_wait_mem32(s, RQ_BASE, ~0, v), ==, v);
    /* Not before the timeout (its clock counts ms; later is the host). */
    g_assert_cmpint(g_get_monotonic_time() - held, >=,
                    (gint64)(timeout_ms - 1) * 1000);
    g_assert_cmphex(qtest_readq(s, RQ_BASE + TEMPEST_PKT_WORD1), ==, 0xb00);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_PEERS_DOWN, ~0, 1), ==, 1);
    g_assert_cmphex(__atomic_load_n(&r.line->lock, __ATOMIC_SEQ_CST), ==,
                    rq_word(0, 1));
    /* Our end of the link is closed. */
    while ((n = read(r.t.fd, buf, sizeof(buf))) > 0) {
        /* what it sent before */
    }
    g_assert_cmpint(n, ==, 0);
    rq_peer_stop(&r);
}

/*
 * A tail no writer can have left, in the lock word a peer can write: 16
 * behind node 0's 0 (writers only move it on).  The device does not
 * believe it (counted once in DROPPED, the guest's RQ_TAIL stays) and
 * puts the word right at once (so that other peers do not write behind
 * the guest); its next packet goes where it was going to.  Before, the
 * guest's RQ_TAIL went back and RX_PACKETS grew by about 2^32.
 */
static void test_rq_tail_refused(void)
{
    const uint32_t v = TEMPEST_PKT_VALID | 8;
    RqPeer r;
    QTestState *s;

    rq_peer_start(&r, 0);
    s = r.t.s;
    __atomic_store_n(&r.line->lock, rq_word(0, -16), __ATOMIC_SEQ_CST);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RQ_TAIL)), ==, 0);
    g_assert_cmphex(__atomic_load_n(&r.line->lock, __ATOMIC_SEQ_CST), ==,
                    rq_word(0, 0));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RQ_TAIL)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    node_send(s, 0, 0, 0xb01);
    g_assert_cmphex(tq_wait_mem32(s, RQ_BASE, ~0, v), ==, v);
    g_assert_cmphex(qtest_readq(s, RQ_BASE + TEMPEST_PKT_WORD1), ==, 0xb01);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RQ_TAIL)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RX_DIRECT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RX_PACKETS)), ==, 1);
    g_assert_cmphex(rq_wait_lock(&r, rq_word(0, 1)), ==, rq_word(0, 1));
    rq_peer_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a closed socket is an answer, not death */
    qtest_add_func("/tempest/peer-shm/offer-refused", test_offer_refused);
    qtest_add_func("/tempest/peer-shm/link", test_link);
    qtest_add_func("/tempest/peer-shm/broken-ring", test_broken_ring);
    qtest_add_func("/tempest/peer-shm/poll", test_poll);
    qtest_add_func("/tempest/peer-shm/offer-made", test_offer_made);
    qtest_add_func("/tempest/peer-shm/hint-register", test_hint_register);
    qtest_add_func("/tempest/peer-shm/hint-unreachable",
                   test_hint_unreachable);
    qtest_add_func("/tempest/peer-shm/hint-poke", test_hint_poke);
    qtest_add_func("/tempest/peer-shm/rq-full-holds", test_rq_full_holds);
    qtest_add_func("/tempest/peer-shm/rq-full-gives-up",
                   test_rq_full_gives_up);
    qtest_add_func("/tempest/peer-shm/stopped-sends-nothing",
                   test_stopped_sends_nothing);
    qtest_add_func("/tempest/peer-shm/queue-waits-while-stopped",
                   test_queue_waits_while_stopped);
    /*
     * Last: the device fails these two today (see their comments), and
     * they make assertions non-fatal for what follows them.
     */
    qtest_add_func("/tempest/peer-shm/gone-but-writing",
                   test_gone_but_writing);
    qtest_add_func("/tempest/peer-shm/bell-in-ring", test_bell_in_ring);
    qtest_add_func("/tempest/peer-shm/split-bounds", test_split_bounds);
    qtest_add_func("/tempest/peer-shm/credit-in-memory",
                   test_credit_in_memory);
    qtest_add_func("/tempest/peer-shm/credit-without-wake",
                   test_credit_without_wake);
    qtest_add_func("/tempest/peer-shm/credit-wake-rearms",
                   test_credit_wake_rearms);
    qtest_add_func("/tempest/peer-shm/credit-beyond", test_credit_beyond);
    qtest_add_func("/tempest/peer-shm/in-place-rx", test_in_place_rx);
    qtest_add_func("/tempest/peer-shm/in-place-order", test_in_place_order);
    qtest_add_func("/tempest/peer-shm/in-place-tx", test_in_place_tx);
    qtest_add_func("/tempest/peer-shm/rq-writer-dies", test_rq_writer_dies);
    qtest_add_func("/tempest/peer-shm/rq-lock-held", test_rq_lock_held);
    qtest_add_func("/tempest/peer-shm/rq-tail-refused",
                   test_rq_tail_refused);
    return g_test_run();
}
