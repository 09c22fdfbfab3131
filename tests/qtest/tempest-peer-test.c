/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of a node controller facing a hostile peer (issue 9, section 2):
 * a fake node that joins the cluster correctly (HELLO, AUTH) and then
 * sends what no node of ours sends, aimed at the control network, the
 * transfer engine and the fabric's own limits.  Each case failed (abort,
 * out-of-bounds read, unbounded memory, a frozen main loop, a counter
 * that never went down) before the fix it guards.
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "tempest-qtest.h"
#include "tempest-peer.h"
#include <poll.h>

#define CLUSTER     0xbadc0ffeULL
#define DST_BUF     RAM(0x200000)
#define CQ_BASE     RAM(0x300000)

static QTestState *start_node(const char *dir, unsigned id, unsigned nodes,
                              const char *extra)
{
    return qtest_initf("-M tempest,node-id=%u,num-nodes=%u,fabric=unix:%s,"
                       "cluster-id=0x%llx%s -m 64M", id, nodes, dir,
                       (unsigned long long)CLUSTER, extra);
}

static void wait_ready(QTestState *s)
{
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
}

/* Wait until a register reaches at least want; returns the last value. */
static uint32_t wait_at_least(QTestState *s, uint32_t reg, uint32_t want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t v;

    while ((v = qtest_readl(s, NC(reg))) < want &&
           g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    return v;
}

/*
 * A node of 4 with fan-out 2 (node 1 has child 3, parent 0) under test;
 * nodes 0, 2 and 3 are fake.  Node 1 dials 0; 2 and 3 dial node 1.
 */
typedef struct Inner {
    char *dir;
    QTestState *s;
    int fd0, fd2, fd3;
} Inner;

static void inner_start(Inner *t)
{
    int lfd;

    t->dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    lfd = peer_listen(t->dir, 0, 4);
    t->s = start_node(t->dir, 1, 4, " -global tempest-nc.coll-fanout=2");
    t->fd0 = peer_accept(lfd, 0, 1, 4, CLUSTER);
    close(lfd);
    t->fd2 = peer_join(t->dir, 1, 2, 4, CLUSTER, NULL, 0);
    t->fd3 = peer_join(t->dir, 1, 3, 4, CLUSTER, NULL, 0);
    /* As node 0: every node is connected, the cluster is ready. */
    peer_mesh_all(t->fd0);
    wait_ready(t->s);
}

static void inner_stop(Inner *t)
{
    close(t->fd0);
    close(t->fd2);
    close(t->fd3);
    qtest_quit(t->s);
    g_autofree char *p = g_strdup_printf("%s/node0.sock", t->dir);
    unlink(p);
    rmdir(t->dir);
    g_free(t->dir);
}

/*
 * A child's maximal, well-formed UP (every entry claiming the child)
 * made the node forward more than the largest frame when it started its
 * own collective: an assert killed QEMU.  Now such an UP counts as a
 * failed report: the node forwards an error, within the frame limit.
 */
static void test_coll_up_maximal(void)
{
    Inner t;
    g_autoptr(GByteArray) up = peer_coll(0, FABRIC_COLL_UP,
                                         TEMPEST_COLL_COMBINE,
                                         TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE,
                                         TEMPEST_COLL_MAX_LANES, 0);
    g_autofree uint8_t *buf = g_malloc(FABRIC_HDR_SIZE + FABRIC_MAX_BODY);
    uint32_t dropped, len;

    inner_start(&t);
    for (unsigned i = 0; i < TEMPEST_MAX_NODES; i++) {
        peer_coll_entry(up, 3, 0, TEMPEST_COLL_MAX_LANES, i);
    }
    g_assert_cmpuint(up->len, ==, FABRIC_MAX_BODY);
    dropped = qtest_readl(t.s, NC(TEMPEST_NC_DROPPED));
    peer_send(t.fd3, FABRIC_COLL, 0, up->data, up->len);
    g_assert_cmpuint(wait_at_least(t.s, TEMPEST_NC_DROPPED, dropped + 1), ==,
                     dropped + 1);
    /* Our own contribution: 64 lanes from RAM. */
    g_assert_cmpuint(tq_command(t.s, TEMPEST_CMD_COLL_START,
                                TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD,
                                DST_BUF, TEMPEST_COLL_MAX_LANES, DST_BUF, 0),
                     ==, TEMPEST_CMD_SUCCESS);
    len = peer_read_until(t.fd0, FABRIC_COLL, buf,
                          FABRIC_HDR_SIZE + FABRIC_MAX_BODY);
    g_assert_cmpuint(len, <=, FABRIC_COLL_HDR +
                     2 * FABRIC_COLL_ENTRY(TEMPEST_COLL_MAX_LANES));
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4], ==, FABRIC_COLL_UP);
    g_assert_cmpuint(fabric_ld16(buf + FABRIC_HDR_SIZE + 10), ==,
                     TEMPEST_COLL_E_MISMATCH);
    /* The root's answer: the error, which the node reports. */
    g_autoptr(GByteArray) down = peer_coll(0, FABRIC_COLL_DOWN,
                                           TEMPEST_COLL_COMBINE,
                                           TEMPEST_COLL_ADD,
                                           TEMPEST_COLL_REDUCE,
                                           TEMPEST_COLL_MAX_LANES,
                                           TEMPEST_COLL_E_MISMATCH);
    peer_send(t.fd0, FABRIC_COLL, 0, down->data, down->len);
    g_assert_cmpuint(tq_coll_wait(t.s), ==, TEMPEST_COLL_ST_ERROR);
    g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_COLL_ERROR)), ==,
                     TEMPEST_COLL_E_MISMATCH);
    /* ... and passes down to its child. */
    peer_read_until(t.fd3, FABRIC_COLL, buf,
                    FABRIC_HDR_SIZE + FABRIC_MAX_BODY);
    g_assert_cmpuint(fabric_ld16(buf + FABRIC_HDR_SIZE + 10), ==,
                     TEMPEST_COLL_E_MISMATCH);
    inner_stop(&t);
}

/*
 * A DOWN with fewer results than the collective has slots (an all-gather
 * answered with one entry, or with entries of no lanes) made the node read
 * past the frame and write uninitialised stack bytes into guest memory.
 * Now it is a mismatch and the result memory is left alone.
 */
static void test_coll_down_short(void)
{
    for (int variant = 0; variant < 2; variant++) {
        Inner t;
        g_autoptr(GByteArray) up = peer_coll(0, FABRIC_COLL_UP,
                                             TEMPEST_COLL_ALLGATHER, 0, 0,
                                             1, 0);
        g_autoptr(GByteArray) down = peer_coll(0, FABRIC_COLL_DOWN,
                                               TEMPEST_COLL_ALLGATHER, 0, 0,
                                               variant ? 0 : 1, 0);
        uint8_t pattern[32], after[32];
        uint8_t buf[1024];

        inner_start(&t);
        memset(pattern, 0xa5, sizeof(pattern));
        qtest_memwrite(t.s, DST_BUF, pattern, sizeof(pattern));
        peer_coll_entry(up, 3, 0, 1, 33);
        peer_send(t.fd3, FABRIC_COLL, 0, up->data, up->len);
        g_assert_cmpuint(tq_command(t.s, TEMPEST_CMD_COLL_START,
                                    TEMPEST_COLL_ALLGATHER, 0, 11, 0,
                                    DST_BUF, 0), ==, TEMPEST_CMD_SUCCESS);
        peer_read_until(t.fd0, FABRIC_COLL, buf, sizeof(buf));
        if (variant) {
            /* Four entries of no lanes: 8 bytes each, no value. */
            for (unsigned i = 0; i < 4; i++) {
                peer_coll_entry(down, i, 0, 0, 0);
            }
        } else {
            peer_coll_entry(down, 0, 0, 1, 77);     /* one of four */
        }
        peer_send(t.fd0, FABRIC_COLL, 0, down->data, down->len);
        g_assert_cmpuint(tq_coll_wait(t.s), ==, TEMPEST_COLL_ST_ERROR);
        g_assert_cmpuint(qtest_readl(t.s, NC(TEMPEST_NC_COLL_ERROR)), ==,
                         TEMPEST_COLL_E_MISMATCH);
        qtest_memread(t.s, DST_BUF, after, sizeof(after));
        g_assert(memcmp(pattern, after, sizeof(after)) == 0);
        inner_stop(&t);
    }
}

/*
 * UP frames from one child for one collective piled up without bound
 * (each kept, +25 MiB per 50 maximal frames).  Now a second UP from a
 * child is dropped and counted.
 */
static void test_coll_up_flood(void)
{
    Inner t;
    g_autoptr(GByteArray) up = peer_coll(0, FABRIC_COLL_UP,
                                         TEMPEST_COLL_COMBINE,
                                         TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE,
                                         TEMPEST_COLL_MAX_LANES, 0);
    uint32_t dropped;
    long rss0, rss1;

    inner_start(&t);
    for (unsigned i = 0; i < TEMPEST_MAX_NODES; i++) {
        peer_coll_entry(up, 3, 0, TEMPEST_COLL_MAX_LANES, i);
    }
    dropped = qtest_readl(t.s, NC(TEMPEST_NC_DROPPED));
    rss0 = peer_rss_kib(qtest_pid(t.s));
    for (int i = 0; i < 50; i++) {
        peer_send(t.fd3, FABRIC_COLL, 0, up->data, up->len);
    }
    g_assert_cmpuint(wait_at_least(t.s, TEMPEST_NC_DROPPED, dropped + 50),
                     ==, dropped + 50);
    rss1 = peer_rss_kib(qtest_pid(t.s));
    g_test_message("RSS %ld KiB -> %ld KiB after 50 frames of %u bytes",
                   rss0, rss1, (unsigned)up->len);
    g_assert_cmpint(rss1 - rss0, <, 8 * 1024);
    inner_stop(&t);
}

/*
 * The asynchronous global OR: the root told every node of every change
 * (N - 1 frames); now each node tells only its children.  Node 0 of 4 with
 * fan-out 2: nodes 1 and 2 hear of it, node 3 (node 1's child) does not
 * hear it from node 0.  Frames on one socket are in order, so node 3 sees
 * the acknowledgement of its own broadcast with no AOR frame before it.
 */
static void test_aor_tree(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 4, " -global tempest-nc.coll-fanout=2");
    int fd[4];
    uint8_t buf[256];
    uint32_t len;

    for (unsigned i = 1; i < 4; i++) {
        fd[i] = peer_join(dir, 0, i, 4, CLUSTER, NULL, 0);
    }
    wait_ready(s);
    for (unsigned i = 1; i < 4; i++) {
        /* MESH_ALL */
        peer_read_until(fd[i], FABRIC_MESH, buf, sizeof(buf));
    }
    for (int round = 0; round < 3; round++) {
        g_autoptr(GByteArray) aor = peer_coll(0, FABRIC_AOR_UP, 0, 0, 0, 0, 0);
        g_autoptr(GByteArray) bc = peer_coll(0, FABRIC_BCAST_UP, 0, 0, 0, 1, 0);
        uint16_t type;

        peer_coll_entry(aor, 1, !(round & 1), 0, 0);
        peer_send(fd[1], FABRIC_COLL, 0, aor->data, aor->len);
        for (unsigned i = 1; i <= 2; i++) {
            peer_read_until(fd[i], FABRIC_COLL, buf, sizeof(buf));
            g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4], ==, FABRIC_AOR_DOWN);
            g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 20) & 1, ==,
                             !(round & 1));
        }
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_AOR_GLOBAL)), ==,
                         !(round & 1));
        peer_coll_entry(bc, 3, 0, 1, 1234);
        peer_send(fd[3], FABRIC_COLL, 0, bc->data, bc->len);
        type = peer_read_frame(fd[3], buf, sizeof(buf), &len);
        g_assert_cmpuint(type, ==, FABRIC_COLL);
        g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4], ==, FABRIC_BCAST_ACK);
        /* The broadcast itself went down to 1 and 2 (not back to 3). */
        for (unsigned i = 1; i <= 2; i++) {
            peer_read_until(fd[i], FABRIC_COLL, buf, sizeof(buf));
            g_assert_cmpuint(buf[FABRIC_HDR_SIZE + 4], ==, FABRIC_BCAST_DOWN);
        }
    }
    for (unsigned i = 1; i < 4; i++) {
        close(fd[i]);
    }
    qtest_quit(s);
    rmdir(dir);
}

/* Send a transfer-engine frame: kind, message id, then the body. */
static void xfer_send(int fd, uint8_t kind, uint32_t mid, const void *body,
                      size_t len)
{
    uint8_t f[FABRIC_XFER_HDR + 64] = { kind };

    g_assert_cmpuint(len, <=, 64);
    fabric_st32(f + 4, mid);
    memcpy(f + FABRIC_XFER_HDR, body, len);
    peer_send(fd, FABRIC_XFER, 0, f, FABRIC_XFER_HDR + len);
}

static void xfer_header(int fd, uint32_t mid, uint64_t len, uint64_t where,
                        uint32_t flags)
{
    uint8_t h[32] = { 0 };

    fabric_st64(h, len);
    fabric_st64(h + 8, where);
    fabric_st32(h + 16, flags);
    xfer_send(fd, 1 /* XFER_HDR */, mid, h, sizeof(h));
}

/*
 * Transfer headers were kept without bound (+12 MiB per 100k, none
 * dropped); a peer may have no more under way than a node may start.  An
 * aborted typed transfer that was waiting for a buffer left XFER_WAITING
 * up for ever.
 */
static void test_xfer_headers(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 2, "");
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    const unsigned n = 20000;
    long rss0, rss1;

    wait_ready(s);
    /* Longer than system space (1 MiB): it waits for a buffer. */
    xfer_header(fd, 1000000, 2 << 20, 7, TEMPEST_XFER_TYPED);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_WAITING, ~0, 1), ==, 1);
    xfer_send(fd, 5 /* XFER_ABORT */, 1000000, NULL, 0);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_WAITING, ~0, 0), ==, 0);
    /* A short one takes system space, given back when it is aborted. */
    xfer_header(fd, 1000001, 100, 7, TEMPEST_XFER_TYPED);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_SYS_USED, ~0, 256), ==,
                     256);
    xfer_send(fd, 5 /* XFER_ABORT */, 1000001, NULL, 0);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_SYS_USED, ~0, 0), ==, 0);

    rss0 = peer_rss_kib(qtest_pid(s));
    for (unsigned i = 0; i < n; i++) {
        xfer_header(fd, i, 4096, RAM(0x100000), 0);
    }
    g_assert_cmpuint(wait_at_least(s, TEMPEST_NC_DROPPED,
                                   n - TEMPEST_XFER_MAX_OUT), ==,
                     n - TEMPEST_XFER_MAX_OUT);
    rss1 = peer_rss_kib(qtest_pid(s));
    g_test_message("RSS %ld KiB -> %ld KiB after %u transfer headers",
                   rss0, rss1, n);
    g_assert_cmpint(rss1 - rss0, <, 4 * 1024);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/* Node 0 real, node 1 the fake peer on fd; the cluster is ready. */
static QTestState *pair_start(const char *dir, int *fd)
{
    QTestState *s = start_node(dir, 0, 2, "");

    *fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    peer_set_timeout(*fd, 20);
    wait_ready(s);
    return s;
}

static void pair_stop(QTestState *s, int fd, const char *dir)
{
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/* The next transfer frame the node sends: kind, for mid, len bytes. */
static void expect_xfer(int fd, uint8_t kind, uint32_t mid, uint32_t len,
                        uint8_t *buf, size_t cap)
{
    g_assert_cmpuint(peer_read_until(fd, FABRIC_XFER, buf, cap), ==, len);
    g_assert_cmpuint(buf[FABRIC_HDR_SIZE], ==, kind);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 4), ==, mid);
}

/*
 * XFER_PUT says "the data is in your RAM, stored by me": on a socket link
 * the peer has no way to have stored it, yet the node counted it as
 * received, finished the transfer (ACK 0, XFER_RECV) and gave the guest
 * whatever its buffer held.  Now a PUT from a peer that was not given our
 * RAM is dropped and counted, and the transfer still takes its DATA.
 */
static void test_xfer_put_socket(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    int fd;
    QTestState *s = pair_start(dir, &fd);
    uint8_t put[16], data[8 + 48], got[48];
    uint8_t buf[FABRIC_HDR_SIZE + 64];

    qtest_memset(s, DST_BUF, 0xee, sizeof(got));
    xfer_header(fd, 7, sizeof(got), DST_BUF, 0);
    fabric_st64(put, 0);
    fabric_st64(put + 8, sizeof(got));
    xfer_send(fd, 8 /* XFER_PUT */, 7, put, sizeof(put));
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_DROPPED, ~0, 1), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_RECV_LO)), ==, 0);

    /* The transfer goes on: its DATA lands, then the ACK. */
    fabric_st64(data, 0);
    memset(data + 8, 0x3c, sizeof(got));
    xfer_send(fd, 2 /* XFER_DATA */, 7, data, sizeof(data));
    expect_xfer(fd, 4 /* XFER_ACK */, 7, FABRIC_XFER_HDR + 4, buf,
                sizeof(buf));
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE + 8), ==, 0);
    qtest_memread(s, DST_BUF, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data + 8, sizeof(got));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_RECV_LO)), ==,
                     sizeof(got));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 1);
    pair_stop(s, fd, dir);
}

/*
 * XFER_SPLIT asks the receiver to copy the second half of a channel's
 * transfer from the sender's RAM itself, here and now, in one turn of the
 * main loop.  A sender splits only transfers of 128 KiB to 4 MiB
 * (xfer_out_split), but any length up to the port's buffer was taken: a
 * peer on a shared-memory link could make the node copy up to 4 GiB in
 * one go.  Now a SPLIT of a length no sender splits is dropped and
 * counted (here on a socket, where a good one is answered UNSPLIT).
 */
static void test_xfer_split_length(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    int fd;
    QTestState *s = pair_start(dir, &fd);
    const uint32_t chan = 1U << 31;     /* XFER_F_CHAN */
    uint8_t split[16], buf[FABRIC_HDR_SIZE + 64];

    /* 8 MiB and 4 KiB: never split. */
    xfer_header(fd, 9, 8 * MiB, RAM(0x800000), chan);
    xfer_header(fd, 11, 4096, DST_BUF, chan);
    fabric_st64(split, 2048);
    fabric_st64(split + 8, RAM(0));
    xfer_send(fd, 9 /* XFER_SPLIT */, 11, split, sizeof(split));
    fabric_st64(split, 4 * MiB);
    xfer_send(fd, 9 /* XFER_SPLIT */, 9, split, sizeof(split));
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_DROPPED, ~0, 2), ==, 2);

    /* 1 MiB may be: no RAM mapped here, so the node answers UNSPLIT. */
    xfer_header(fd, 10, 1 * MiB, DST_BUF, chan);
    fabric_st64(split, 512 * KiB);
    xfer_send(fd, 9 /* XFER_SPLIT */, 10, split, sizeof(split));
    expect_xfer(fd, 10 /* XFER_UNSPLIT */, 10, FABRIC_XFER_HDR, buf,
                sizeof(buf));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==, 2);
    pair_stop(s, fd, dir);
}

/*
 * A node whose fabric has no shared memory (fabric=unix:, sockets only)
 * sent a BELL or an SHM step: each is dropped and counted, and the node
 * goes on.  Before, the frame reached the shared-memory code, which has
 * no link table on such a fabric, and QEMU died (found by the fabric
 * fuzzer in a clean-clone CI run).
 */
static void test_shm_frames_socket_only(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 2, "");
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint8_t step[4];

    wait_ready(s);
    peer_send(fd, FABRIC_BELL, 0, NULL, 0);
    fabric_st32(step, FABRIC_SHM_OFFER);
    peer_send(fd, FABRIC_SHM, 0, step, sizeof(step));
    g_assert_cmpuint(wait_at_least(s, TEMPEST_NC_DROPPED, 2), ==, 2);
    qtest_writel(s, NC(TEMPEST_NC_SCRATCH), 0x5a5a);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0x5a5a);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * A peer that asks (fetch-and-op) and never reads the answers: the node
 * stops reading it once 8 MiB of answers wait, so its memory stays
 * bounded and it goes on serving its guest.  Before, every request was
 * read and every answer queued.
 */
static void test_fop_unread(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0, 2, "");
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint8_t req[FABRIC_HDR_SIZE + FABRIC_XFER_HDR + 32] = { 0 };
    g_autofree uint8_t *batch = NULL;
    const unsigned per = 1024, max = 2000000;
    unsigned sent = 0, stalls = 0;
    long rss0, rss1;

    wait_ready(s);
    fabric_put_header(req, FABRIC_XFER, 0, FABRIC_XFER_HDR + 32);
    req[FABRIC_HDR_SIZE] = 6;   /* XFER_FOP_REQ */
    fabric_st64(req + FABRIC_HDR_SIZE + FABRIC_XFER_HDR + 8, RAM(0x1000));
    batch = g_malloc(sizeof(req) * per);
    for (unsigned i = 0; i < per; i++) {
        memcpy(batch + i * sizeof(req), req, sizeof(req));
    }
    rss0 = peer_rss_kib(qtest_pid(s));
    qemu_socket_set_nonblock(fd);
    /* Write until the node stops reading (or far past any bound). */
    while (sent < max && stalls < 200) {
        size_t off = 0;

        while (off < sizeof(req) * per) {
            ssize_t w = write(fd, batch + off, sizeof(req) * per - off);

            if (w > 0) {
                off += w;
                stalls = 0;
            } else if (++stalls >= 200) {
                break;
            } else {
                g_usleep(10000);
            }
        }
        sent += off / sizeof(req);
    }
    rss1 = peer_rss_kib(qtest_pid(s));
    g_test_message("%u requests written before the node stopped reading; "
                   "RSS %ld KiB -> %ld KiB", sent, rss0, rss1);
    g_assert_cmpuint(sent, <, max);
    g_assert_cmpint(rss1 - rss0, <, 24 * 1024);
    /* The node still serves its guest. */
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * Connections that never say HELLO: each held a 1 MiB buffer, without
 * limit (400 of them: 220 MiB).  Now at most 64 wait at once, each with a
 * buffer of one HELLO; the others are closed at the door.
 */
static void test_silent_connections(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/node0.sock", dir);
    QTestState *s = start_node(dir, 0, 2, "");
    const int n = 300;
    int fds[300], closed = 0;
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    long rss0, rss1;

    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)), ==,
                     TEMPEST_FABRIC_CONNECTING);
    rss0 = peer_rss_kib(qtest_pid(s));
    for (int i = 0; i < n; i++) {
        fds[i] = unix_connect(path, &error_abort);
        /* One byte: not a HELLO yet (a refused one may be closed). */
        g_assert(write(fds[i], "T", 1) == 1 || errno == EPIPE ||
                 errno == ECONNRESET);
    }
    for (int i = 64; i < n; i++) {
        struct pollfd p = { .fd = fds[i], .events = POLLIN };
        int left = MAX(0, (end - g_get_monotonic_time()) / 1000);
        char c;

        /* The node answers the refused ones by closing them. */
        /* Closed with our byte unread: end of file or a reset. */
        if (poll(&p, 1, left) == 1 &&
            (read(fds[i], &c, 1) == 0 || errno == ECONNRESET)) {
            closed++;
        }
    }
    rss1 = peer_rss_kib(qtest_pid(s));
    g_test_message("%d of %d silent connections closed; RSS %ld -> %ld KiB",
                   closed, n, rss0, rss1);
    g_assert_cmpint(closed, >=, n - 64 - 8);
    /*
     * Closed at the door, not at the 10 s deadline: the first 64 still
     * wait for their HELLO (a node that kept them all would close all
     * 300 together when they expire).
     */
    for (int i = 0; i < 64 - 8; i++) {
        struct pollfd p = { .fd = fds[i], .events = POLLIN };

        g_assert_cmpint(poll(&p, 1, 0), ==, 0);
    }
    g_assert_cmpint(rss1 - rss0, <, 8 * 1024);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    for (int i = 0; i < n; i++) {
        close(fds[i]);
    }
    qtest_quit(s);
    rmdir(dir);
}

/*
 * connect() was called blocking from the main loop: a peer whose listen
 * backlog is full froze the node (monitor and vCPUs) for as long as the
 * connect blocked.  Node 1 dials node 0, whose backlog we keep full: the
 * node must still answer its registers meanwhile, then join once node 0
 * accepts.
 */
static void test_connect_async(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/node0.sock", dir);
    int lfd = peer_listen(dir, 0, 0);
    int filler[8], nfill = 0;
    QTestState *s;
    int fd;

    /* Fill the backlog: further connects block. */
    for (nfill = 0; nfill < 8; nfill++) {
        filler[nfill] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
        if (connect(filler[nfill], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            close(filler[nfill]);
            break;
        }
    }
    s = start_node(dir, 1, 2, "");
    /* Its main loop runs: the monitor and the registers answer. */
    for (int i = 0; i < 100; i++) {
        qtest_writel(s, NC(TEMPEST_NC_SCRATCH), i);
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, i);
    }
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)), ==,
                     TEMPEST_FABRIC_CONNECTING);
    /* Now node 0 answers: drain the fillers, then take the node. */
    for (int i = 0; i < nfill; i++) {
        close(accept(lfd, NULL, NULL));
        close(filler[i]);
    }
    fd = peer_accept(lfd, 0, 1, 2, CLUSTER);
    peer_mesh_all(fd);
    wait_ready(s);
    close(fd);
    close(lfd);
    qtest_quit(s);
    unlink(path);
    rmdir(dir);
}

/* A peer that does not know the key is refused, whatever it claims. */
static void test_auth_refused(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/node0.sock", dir);
    QTestState *s = start_node(dir, 0, 2, "");
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE] = { 0 };
    FabricHello h;
    uint32_t len;
    int fd = unix_connect(path, &error_abort);
    char c;

    peer_hello(&h, CLUSTER, 1, 2);
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));    /* a wrong proof */
    g_assert_cmpint(read(fd, &c, 1), ==, 0);            /* closed */
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 0);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * The cluster id is on every QEMU's command line, readable in /proc: with
 * a key from a secret object (-object secret,file=...), a peer that knows
 * only the cluster id is refused, one that knows the key joins.
 */
static void test_auth_secret(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *keyfile = g_strdup_printf("%s/key", dir);
    g_autofree char *path = g_strdup_printf("%s/node0.sock", dir);
    g_autofree char *extra = NULL;
    const char key[] = "0123456789abcdef0123456789abcdef";
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE], cid[8];
    FabricHello h, theirs;
    QTestState *s;
    uint32_t len;
    int fd;
    char c;

    g_assert_true(g_file_set_contents(keyfile, key, strlen(key), NULL));
    extra = g_strdup_printf(",fabric-key=k -object secret,id=k,file=%s",
                            keyfile);
    s = start_node(dir, 0, 2, extra);

    /* Knows the cluster id only: its proof is refused. */
    fd = unix_connect(path, &error_abort);
    peer_hello(&h, CLUSTER, 1, 2);
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    fabric_get_hello(frame + FABRIC_HDR_SIZE, &theirs);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    fabric_st64(cid, CLUSTER);
    fabric_auth_mac(cid, sizeof(cid), theirs.nonce, h.nonce, CLUSTER, 1, 0,
                    mac);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
    g_assert_cmpint(read(fd, &c, 1), ==, 0);
    close(fd);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 0);

    /* Knows the key: joins, and the cluster forms. */
    fd = peer_join(dir, 0, 1, 2, CLUSTER, (const uint8_t *)key, strlen(key));
    wait_ready(s);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PEERS_UP)), ==, 1);
    close(fd);
    qtest_quit(s);
    unlink(keyfile);
    rmdir(dir);
}

typedef struct Flood {
    int fd;
    volatile bool stop;     /* set by the test, read by the thread */
    uint64_t frames;
} Flood;

/* Write dropped-but-valid frames (unexpected MESH) as fast as it can. */
static gpointer flood_thread(gpointer opaque)
{
    Flood *fl = opaque;
    uint8_t batch[4096];
    uint8_t kind[4];

    fabric_st32(kind, FABRIC_MESH_MINE);
    for (size_t off = 0; off + 12 <= sizeof(batch); off += 12) {
        fabric_put_header(batch + off, FABRIC_MESH, 0, 4);
        memcpy(batch + off + 8, kind, 4);
    }
    while (!fl->stop) {
        ssize_t n = write(fl->fd, batch, sizeof(batch) / 12 * 12);

        if (n <= 0) {
            break;
        }
        fl->frames += n / 12;
    }
    return NULL;
}

/*
 * A flooding peer is read at most 256 KiB per turn of the main loop:
 * the node's registers keep answering while it floods (a TCP flood once
 * raised MMIO latency to 0.58 s).  The latencies are printed, not
 * asserted: the host's scheduler decides them.
 */
static void test_flood(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    QTestState *s;
    int lfd;
    Flood fl = { 0 };
    GThread *th;
    g_autofree gint64 *lat = g_new(gint64, 2000);
    gint64 sum = 0;

    lfd = peer_listen(dir, 0, 4);
    s = start_node(dir, 1, 2, "");
    fl.fd = peer_accept(lfd, 0, 1, 2, CLUSTER);
    peer_mesh_all(fl.fd);
    wait_ready(s);
    th = g_thread_new("flood", flood_thread, &fl);
    for (int i = 0; i < 2000; i++) {
        gint64 t0 = g_get_monotonic_time();

        qtest_writel(s, NC(TEMPEST_NC_SCRATCH), i);
        g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, i);
        lat[i] = g_get_monotonic_time() - t0;
        sum += lat[i];
    }
    fl.stop = true;
    g_assert_cmpuint(wait_at_least(s, TEMPEST_NC_DROPPED, 1000), >=, 1000);
    shutdown(fl.fd, SHUT_RDWR);
    g_thread_join(th);
    {
        gint64 mx = 0;

        for (int i = 0; i < 2000; i++) {
            mx = MAX(mx, lat[i]);
        }
        g_test_message("during a flood of %" PRIu64 " frames: register "
                       "write+read mean %" PRId64 " us, max %" PRId64 " us",
                       fl.frames, sum / 2000, mx);
    }
    close(fl.fd);
    close(lfd);
    qtest_quit(s);
    g_autofree char *p = g_strdup_printf("%s/node0.sock", dir);
    unlink(p);
    rmdir(dir);
}

/* CPU time (user + system) a process has used, in seconds. */
static double cpu_seconds(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *text = NULL;
    g_auto(GStrv) f = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    p = strrchr(text, ')');
    g_assert(p);
    f = g_strsplit(p + 2, " ", -1);
    /* state is field 3 of stat, so utime (14) and stime (15) are 11, 12 */
    return (g_ascii_strtod(f[11], NULL) + g_ascii_strtod(f[12], NULL)) /
           sysconf(_SC_CLK_TCK);
}

/*
 * Out of file descriptors, the listening socket stays readable: the main
 * loop spun at 100% CPU on it.  Now it stops watching it for a while.
 * The node's CPU time over 3 s while connections wait at its door stays
 * well under what a spinning loop burns (3 s of a core).
 */
static void test_fd_limit(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/node0.sock", dir);
    g_autofree char *bin = g_strdup_printf("prlimit --nofile=48:48 %s",
                                           getenv("QTEST_QEMU_BINARY"));
    g_autofree char *args = NULL;
    int fds[400], n = 0;
    QTestState *s;
    double t0, t1;

    /* QEMU raises its soft limit to the hard one: prlimit sets both. */
    g_setenv("TEMPEST_QEMU_LOWFD", bin, true);
    args = g_strdup_printf("-M tempest,node-id=0,num-nodes=2,fabric=unix:%s,"
                           "cluster-id=0x%llx -m 64M", dir,
                           (unsigned long long)CLUSTER);
    s = qtest_init_with_env("TEMPEST_QEMU_LOWFD", args, true);
    /*
     * Connect until the node has run out of descriptors and its backlog
     * (at least 128, tempest-fabric-internal.h) is full (a connect that
     * waits 2 s in vain).
     */
    for (int tries = 0; n < 400 && tries < 200; ) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
        if (connect(fds[n], (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            n++;
            tries = 0;
        } else {
            close(fds[n]);
            tries++;
            g_usleep(10 * 1000);
        }
    }
    g_assert_cmpint(n, >, 10);
    g_assert_cmpint(n, <, 400);
    g_usleep(200 * 1000);   /* not a timing assertion: let it hit EMFILE */
    t0 = cpu_seconds(qtest_pid(s));
    g_usleep(3 * G_USEC_PER_SEC);
    t1 = cpu_seconds(qtest_pid(s));
    g_test_message("%d connections at the door of a node with 48 "
                   "descriptors: %.2f s of CPU in 3 s", n, t1 - t0);
    g_assert_cmpfloat(t1 - t0, <, 1.0);
    /* It still serves its guest. */
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    for (int i = 0; i < n; i++) {
        close(fds[i]);
    }
    qtest_quit(s);
    rmdir(dir);
}

/*
 * A peer that does not run for a while (an overloaded host: seen under
 * Slurm, 17-37 s) in the middle of a handshake.  Each side used to close
 * a connection that had not finished its handshake in 10 s, though the
 * other side might already count the link as made: that side then lost
 * the node for good, and every later connection from it was refused as
 * "second connection from one node".  Now a connection gets 10 s for a
 * good HELLO (a stranger, or a socket that does not answer, is dropped
 * then), and the fabric's timeout for the rest (AUTH is sent only after
 * a good HELLO, and only a checked AUTH makes a link).  Node 1 of 3 under
 * test: it dials fake node 0, which sends its AUTH 11 s after its HELLO;
 * fake node 2 dials it and sends its AUTH 11 s after its HELLO.
 */
static void test_slow_handshake(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-peer-XXXXXX", NULL);
    g_autofree char *path0 = g_strdup_printf("%s/node0.sock", dir);
    g_autofree char *path1 = g_strdup_printf("%s/node1.sock", dir);
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    int lfd = peer_listen(dir, 0, 4);
    QTestState *s = start_node(dir, 1, 3, ",fabric-timeout=60000");
    FabricHello h2;
    int fd0, fd2 = -1;

    fd0 = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd0, >=, 0);
    for (int i = 0; i < 2000 && fd2 < 0; i++) {
        fd2 = unix_connect(path1, NULL);
        if (fd2 < 0) {
            g_usleep(5000);
        }
    }
    g_assert_cmpint(fd2, >=, 0);
    peer_hello(&h2, CLUSTER, 2, 3);
    fabric_put_hello(frame, &h2);
    g_assert_cmpint(write(fd2, frame, sizeof(frame)), ==, sizeof(frame));
    /* Not a timing assertion: longer than the 10 s a HELLO may take. */
    peer_answer(fd0, 0, 1, 3, CLUSTER, 0, NULL, 11 * G_USEC_PER_SEC);
    peer_handshake_finish(fd2, &h2, 1, NULL, 0, NULL);
    peer_mesh_all(fd0);
    wait_ready(s);
    g_assert_cmpuint(wait_at_least(s, TEMPEST_NC_PEERS_UP, 2), ==, 2);
    close(fd0);
    close(fd2);
    close(lfd);
    qtest_quit(s);
    unlink(path0);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a closed socket is an answer, not death */
    qtest_add_func("/tempest/peer/coll-up-maximal", test_coll_up_maximal);
    qtest_add_func("/tempest/peer/coll-down-short", test_coll_down_short);
    qtest_add_func("/tempest/peer/coll-up-flood", test_coll_up_flood);
    qtest_add_func("/tempest/peer/aor-tree", test_aor_tree);
    qtest_add_func("/tempest/peer/xfer-headers", test_xfer_headers);
    qtest_add_func("/tempest/peer/xfer-put-socket", test_xfer_put_socket);
    qtest_add_func("/tempest/peer/xfer-split-length",
                   test_xfer_split_length);
    qtest_add_func("/tempest/peer/fop-unread", test_fop_unread);
    qtest_add_func("/tempest/peer/silent-connections",
                   test_silent_connections);
    qtest_add_func("/tempest/peer/connect-async", test_connect_async);
    qtest_add_func("/tempest/peer/auth-refused", test_auth_refused);
    qtest_add_func("/tempest/peer/auth-secret", test_auth_secret);
    qtest_add_func("/tempest/peer/flood", test_flood);
    qtest_add_func("/tempest/peer/fd-limit", test_fd_limit);
    qtest_add_func("/tempest/peer/slow-handshake", test_slow_handshake);
    qtest_add_func("/tempest/peer/shm-frames-socket-only",
                   test_shm_frames_socket_only);
    return g_test_run();
}
