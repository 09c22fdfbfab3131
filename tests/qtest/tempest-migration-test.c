/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of saving and restoring a Tempest node mid-run (docs/node-
 * controller.rst, "Reset and migration"): a node alone in its cluster is
 * stopped, saved to a file with QMP's migrate, and a second QEMU started
 * with -incoming from that file carries on: its armed timers fire, the
 * events and packets that waited for room in its rings arrive, its tags
 * are the same, its transfers to itself and its posted receive buffers
 * carry on.  A node joined to others by live sockets refuses.
 */

#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "tempest-qtest.h"

#define SQ_BASE     RAM(0x100000)
#define RQ_BASE     RAM(0x110000)
#define CQ_BASE     RAM(0x120000)
#define BLK         (1 << TEMPEST_TAG_BLK_SHIFT)
#define TICKS(n)    ((int64_t)(n) * TEMPEST_TICK_NS)

/* Stop the node and save it to path; returns how the migration ended. */
static char *save_node(QTestState *s, const char *path)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QDict *rsp;

    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    rsp = qtest_qmp(s, "{'execute': 'migrate', 'arguments': "
                    "{'uri': %s}}", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    return tq_migration_end(s);
}

/* A second QEMU with the same machine, loaded from path, then running. */
static QTestState *restore_node(const char *args, const char *path)
{
    QTestState *d = qtest_initf("%s -incoming defer", args);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *status = NULL;

    qtest_qmp_assert_success(d, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    status = tq_migration_end(d);
    g_assert_cmpstr(status, ==, "completed");
    qtest_qmp_assert_success(d, "{'execute': 'cont'}");
    return d;
}

static void ring_setup(QTestState *s, unsigned ring, uint64_t base,
                       unsigned slots)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, ring, base, slots),
                     ==, TEMPEST_CMD_SUCCESS);
}

/* Put a packet to this node itself in SQ0 slot 'slot'. */
static void put_packet(QTestState *s, unsigned slot, uint64_t word)
{
    uint64_t at = SQ_BASE + slot * TEMPEST_PKT_SIZE;

    qtest_writew(s, at + TEMPEST_PKT_NODE, 0);
    qtest_writeq(s, at + TEMPEST_PKT_DATA, word);
    qtest_writel(s, at + TEMPEST_PKT_CTL, TEMPEST_PKT_VALID | 8);
}

/* A macro, so that a failure names the caller's line. */
#define assert_timer_event(s, slot, a) do {                                 \
        uint64_t ev_ = CQ_BASE + (slot) * TEMPEST_EV_SIZE;                  \
                                                                            \
        g_assert_cmphex(qtest_readl(s, ev_), ==,                            \
                        TEMPEST_EV_VALID | TEMPEST_EV_TIMER);               \
        g_assert_cmphex(qtest_readq(s, ev_ + TEMPEST_EV_A), ==, (a));       \
    } while (0)

/*
 * Timers (1.1) armed before the save fire after the restore, at their
 * deadline and not before; the registers read the same.
 */
static void test_timer(void)
{
    const char *args = "-M tempest,tagmem=0 -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 4);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM, 10, 1, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM, 5000, 2, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_clock_step(s, TICKS(100));
    assert_timer_event(s, 0, 1);
    qtest_writel(s, NC(TEMPEST_NC_SCRATCH), 0x5ca1ab1e);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmphex(qtest_readl(d, NC(TEMPEST_NC_SCRATCH)), ==, 0x5ca1ab1e);
    assert_timer_event(d, 0, 1);
    qtest_clock_step(d, TICKS(1000));
    g_assert_cmphex(qtest_readl(d, CQ_BASE + TEMPEST_EV_SIZE), ==, 0);
    qtest_clock_step(d, TICKS(10000));
    assert_timer_event(d, 1, 2);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_CQ_TAIL)), ==, 2);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * What waits inside the device for room in the guest's rings (1.1)
 * survives: a timer event that found the CQ full and a packet (to this
 * node itself) that found the RQ full arrive once the guest frees a slot.
 */
static void test_queues(void)
{
    const char *args = "-M tempest,tagmem=0 -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;

    ring_setup(s, TEMPEST_RING_SQ0, SQ_BASE, 4);
    ring_setup(s, TEMPEST_RING_RQ, RQ_BASE, 2);
    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 2);
    for (unsigned i = 1; i <= 3; i++) {
        g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TIMER_ARM, 10 * i, i, 0),
                         ==, TEMPEST_CMD_SUCCESS);
    }
    qtest_clock_step(s, TICKS(100));
    /* Timers 1 and 2 filled the CQ; timer 3's event waits. */
    assert_timer_event(s, 0, 1);
    assert_timer_event(s, 1, 2);
    for (unsigned i = 0; i < 3; i++) {
        put_packet(s, i, 0xab00 + i);
    }
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), 0);
    /* Two packets filled the RQ; the third waits. */
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RX_PACKETS)), ==, 2);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_TX_PACKETS)), ==, 3);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_CQ_TAIL)), ==, 2);

    /* The guest frees the CQ: timer 3's event comes in. */
    qtest_writel(d, CQ_BASE, 0);
    qtest_writel(d, CQ_BASE + TEMPEST_EV_SIZE, 0);
    qtest_writel(d, NC(TEMPEST_NC_RQ_DOORBELL), 1);
    assert_timer_event(d, 0, 3);
    g_assert_cmphex(qtest_readl(d, CQ_BASE + TEMPEST_EV_SIZE), ==, 0);

    /* The guest frees an RQ slot: the third packet comes in. */
    qtest_writel(d, RQ_BASE, 0);
    qtest_writel(d, NC(TEMPEST_NC_RQ_DOORBELL), 1);
    g_assert_cmphex(qtest_readl(d, RQ_BASE), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readq(d, RQ_BASE + TEMPEST_PKT_DATA), ==, 0xab02);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_RX_PACKETS)), ==, 3);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * Tagged memory (1.3) migrates: the tags, the frames (through both
 * windows) and the counters come back the same.
 */
static void test_tags(void)
{
    const char *args = "-M tempest,tagmem=1M -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint64_t base = TEMPEST_TAGMEM_BASE;

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base + 4 * BLK,
                                 2 * BLK, TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base + 4096,
                                 BLK, TEMPEST_TAG_READONLY), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_writeq(s, TEMPEST_TAGMEM_ALIAS + 4 * BLK, 0x7a65a0u);
    qtest_writeq(s, base + (1 << 20) - 8, 0xe0d);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    for (uint64_t b = 0; b < 80; b++) {
        uint64_t want = b == 4 || b == 5 ? TEMPEST_TAG_INVALID :
                        b == 64 ? TEMPEST_TAG_READONLY : TEMPEST_TAG_WRITABLE;

        g_assert_cmpuint(tq_command3(d, TEMPEST_CMD_TAG_GET, base + b * BLK,
                                     0, 0), ==, TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==, want);
    }
    g_assert_cmphex(qtest_readq(d, base + 4 * BLK), ==, 0x7a65a0u);
    g_assert_cmphex(qtest_readq(d, TEMPEST_TAGMEM_ALIAS + (1 << 20) - 8), ==,
                    0xe0d);
    /* The restored tags are the device's own: changing them works. */
    g_assert_cmpuint(tq_command3(d, TEMPEST_CMD_TAG_SET, base + 4 * BLK,
                                 2 * BLK, TEMPEST_TAG_WRITABLE), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * The same with TCG running a guest: the tag that refused its load, the
 * count of refusals and its data come back, and the vCPUs' TLBs are
 * refilled from the loaded tags (the restored node runs on).
 */
static void test_tags_tcg(void)
{
    g_autofree char *image = tq_guest_image();
    g_autofree char *args = g_strdup_printf("-accel tcg -S -M tempest,"
                                            "tagmem=1M -m 64M -kernel %s",
                                            image);
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_TAGMEM_BASE,
                                 BLK, TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_qmp_assert_success(s, "{'execute': 'cont'}");
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_TAG_FAULTS, ~0, 1), ==, 1);
    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_TAG_FAULTS)), ==, 1);
    g_assert_cmphex(qtest_readq(d, TQ_GUEST_MARK), ==, 1);
    g_assert_cmpuint(tq_command3(d, TEMPEST_CMD_TAG_GET, TEMPEST_TAGMEM_BASE,
                                 0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                     TEMPEST_TAG_INVALID);
    qtest_quit(d);
    tq_remove_state(path);
    tq_remove_image(image);
}

/*
 * A node alone in its cluster, with the default 64 MiB of tagged memory,
 * has no migration blocker: it starts under -only-migratable.
 */
static void test_only_migratable(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M -only-migratable");

    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_TAGMEM_SIZE_LO)), ==,
                    64 << 20);
    qtest_quit(s);
}

/* A node of a cluster of several has a blocker naming its sockets. */
static void test_cluster_blocked(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-mig-XXXXXX", NULL);
    char *path = tq_state_file("tempest-mig");
    QTestState *s = qtest_initf("-M tempest,num-nodes=2,fabric=unix:%s "
                                "-m 64M", dir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QDict *rsp;
    const char *desc;

    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    rsp = qtest_qmp(s, "{'execute': 'migrate', 'arguments': "
                    "{'uri': %s}}", uri);
    g_assert(qdict_haskey(rsp, "error"));
    desc = qdict_get_str(qdict_get_qdict(rsp, "error"), "desc");
    g_assert(strstr(desc, "live sockets"));
    qobject_unref(rsp);
    qtest_quit(s);
    rmdir(dir);
    tq_remove_state(path);
}

/* Wait for the CQ event in slot; returns its type, A, B and C in ev. */
static uint32_t wait_event(QTestState *s, unsigned slot, uint64_t ev[3])
{
    uint64_t at = CQ_BASE + slot * TEMPEST_EV_SIZE;
    uint32_t ctl = tq_wait_mem32(s, at, TEMPEST_EV_VALID, TEMPEST_EV_VALID);

    g_assert_cmphex(ctl & TEMPEST_EV_VALID, ==, TEMPEST_EV_VALID);
    for (int k = 0; k < 3; k++) {
        ev[k] = qtest_readq(s, at + TEMPEST_EV_A + 8 * k);
    }
    return ctl & TEMPEST_EV_TYPE_MASK;
}

/* The two events of a finished transfer to this node (1.4), in order. */
static void assert_xfer_done(QTestState *s, unsigned slot, uint32_t mid,
                             uint64_t addr, uint64_t len_type,
                             uint64_t cookie)
{
    uint64_t ev[3];

    g_assert_cmpuint(wait_event(s, slot, ev), ==, TEMPEST_EV_XFER_RECV);
    g_assert_cmphex(ev[0], ==, addr);
    g_assert_cmphex(ev[1], ==, len_type);
    g_assert_cmphex(ev[2], ==, cookie);
    g_assert_cmpuint(wait_event(s, slot + 1, ev), ==, TEMPEST_EV_XFER_SENT);
    g_assert_cmpuint(ev[0], ==, mid);
    g_assert_cmphex(ev[1], ==, cookie);
    g_assert_cmpuint(ev[2], ==, 0);
}

/* A channel instruction (TEMPEST_CMD_CHAN): COMMIT's answer. */
static uint32_t chan_cmd(QTestState *s, uint64_t op, uint64_t port,
                         uint64_t a2, uint64_t a3)
{
    return tq_command(s, TEMPEST_CMD_CHAN, op, port, a2, a3, 0, 0);
}

/* ALLOC a port with its initial buffer; its id. */
static uint32_t chan_alloc(QTestState *s, uint64_t buf, uint64_t size)
{
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_ALLOC, buf, size, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    return qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
}

/*
 * The channel controller's port table (docs/chan.rst, subsection
 * tempest-nc/chan) moves with the node: a port holding pre-sent data
 * (BUFFERFULL in its initial buffer), its companion with the pre-send
 * out (IDLE), a port waiting in an input; after the load the input
 * takes the data, the output completes at once, and the waiting input
 * gets its data and event.
 */
static void test_chan(void)
{
    const char *args = "-M tempest -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint64_t ev[3];
    uint32_t a, b, c, e;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 16);
    a = chan_alloc(s, RAM(0x200000), 64);
    b = chan_alloc(s, RAM(0x210000), 64);
    c = chan_alloc(s, RAM(0x220000), 64);
    e = chan_alloc(s, RAM(0x230000), 64);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, c, e, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_writeq(s, RAM(0x300000), 0x6368616e6e656cULL);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_OUTPUTDATA, a,
                              RAM(0x300000), 8), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_INPUT, e, RAM(0x240000),
                              64), ==, TEMPEST_CMD_SUCCESS);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_CHAN_USED)), ==, 4);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, b, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                    TEMPEST_CHAN_ST_BUFFERFULL | (uint64_t)a << 32);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_INPUT, b, RAM(0x250000),
                              64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                    TEMPEST_CHAN_PRESENT | 8);
    g_assert_cmphex(qtest_readq(d, RAM(0x210000)), ==, 0x6368616e6e656cULL);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_OUTPUT, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==, 1);
    /* The input that waited across the save. */
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_OUTPUT, c, RAM(0x300000),
                              8), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(wait_event(d, 0, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, e | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, 8);
    g_assert_cmphex(ev[2], ==, RAM(0x230000));
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * An OUTPUT_INPUT (1.16) saved while its output waits (the companion
 * holds the data, BUFFERFULL): the input it will start moves with the
 * node (then_in, its next buffer); after the load the companion's INPUT
 * ends the output, the device starts the input with no OUTPUT event,
 * and the companion's answer ends it with the INPUT event.
 */
static void test_chan_then_input(void)
{
    const char *args = "-M tempest -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint64_t ev[3];
    uint32_t a, b;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 16);
    a = chan_alloc(s, RAM(0x200000), 64);
    b = chan_alloc(s, RAM(0x210000), 64);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_writeq(s, RAM(0x300000), 0x6f75747075740aULL);
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_CHAN,
                                TEMPEST_CHAN_OP_OUTPUT_INPUT, a,
                                RAM(0x300000), 8, RAM(0x220000), 64), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)), ==, 0);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_OUTPUTTING);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_INPUT, b, RAM(0x230000),
                              64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                    TEMPEST_CHAN_PRESENT | 8);
    /* The output is done: a inputs now, started by the device. */
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_INPUTTING);
    qtest_writeq(d, RAM(0x310000), 0x616e737765720aULL);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_OUTPUT, b, RAM(0x310000),
                              8), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(wait_event(d, 0, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, a | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, 8);
    g_assert_cmphex(ev[2], ==, RAM(0x200000));
    g_assert_cmphex(qtest_readq(d, RAM(0x200000)), ==, 0x616e737765720aULL);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * A port move saved half way (docs/chan.rst, ports over ports in the
 * device): after stage 1 the moved port is MIGRATING, its carrier
 * OUTPUTTING it and the carrier's other end holding the port data; all
 * of it moves with the node, and after the load the port input finishes
 * the move: the new port gets the data pre-sent before the move (sent
 * again), the PORT and OUTPUT events come, the old port is gone.
 */
static void test_chan_move(void)
{
    const char *args = "-M tempest -m 64M";
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint32_t port[4], n;
    uint64_t ev[3];

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 16);
    for (int i = 0; i < 4; i++) {
        port[i] = chan_alloc(s, RAM(0x200000 + 0x10000 * i), 64);
    }
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, port[0], port[1],
                              0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, port[2], port[3],
                              0), ==, TEMPEST_CMD_SUCCESS);
    qtest_writeq(s, RAM(0x300000), 0x6d6967726174650aULL);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_OUTPUTDATA, port[0],
                              RAM(0x300000), 8), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_OUTPUT_PORT, port[2],
                              port[1], 0), ==, TEMPEST_CMD_SUCCESS);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, port[1], 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_MIGRATING);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, port[3], 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_INPUT_PORT, port[3],
                              RAM(0x260000), 64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(wait_event(d, 0, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    port[3] | (uint64_t)TEMPEST_CHAN_EV_PORT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    n = ev[2];
    g_assert_cmpuint(wait_event(d, 1, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    port[2] | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, n, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                    TEMPEST_CHAN_ST_BUFFERFULL | (uint64_t)port[0] << 32);
    g_assert_cmphex(qtest_readq(d, RAM(0x260000)), ==, 0x6d6967726174650aULL);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_STATE, port[1], 0, 0), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_CHAN_MOVES)), ==, 1);
    qtest_quit(d);
    tq_remove_state(path);
}

/* LEN bytes at @at, byte k = k * 7 + seed; then whether they read back. */
static void fill_bytes(QTestState *s, uint64_t at, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (size_t k = 0; k < len; k++) {
        b[k] = k * 7 + seed;
    }
    qtest_memwrite(s, at, b, len);
}

static bool bytes_are(QTestState *s, uint64_t at, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_memread(s, at, b, len);
    for (size_t k = 0; k < len; k++) {
        if (b[k] != (uint8_t)(k * 7 + seed)) {
            return false;
        }
    }
    return true;
}

/*
 * A port whose next buffer is offered to its companion (READY; docs/
 * chan.rst, "A long DATA": after a long DATA the port's next buffer is
 * offered at once) may output while the offer is out, as a ping-pong on
 * one port does: OUTPUTTING with the offer out is a state of the live
 * device, so it is saved and loaded (post_load refused it: a checkpoint
 * of the ckpt suite's chan_split taken at that moment could not be
 * restored).  After the load the output completes when the companion
 * inputs, and the companion's next long output lands in the offered
 * buffer.
 */
static void test_chan_offer_outputting(void)
{
    const char *args = "-M tempest -m 64M";
    const size_t big = TEMPEST_CHAN_INLINE + 64, bufsize = 2 * big;
    const uint64_t abuf = RAM(0x200000), bbuf = RAM(0x240000);
    const uint64_t bnext = RAM(0x280000), src = RAM(0x300000) + 1;
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    unsigned slot = 0;
    uint64_t ev[3];
    uint32_t a, b;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 16);
    a = chan_alloc(s, abuf, bufsize);
    b = chan_alloc(s, bbuf, bufsize);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    /* b inputs; a long output from a lands in b's buffer. */
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_INPUT, b, bnext, bufsize),
                     ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)), ==, 0);
    fill_bytes(s, src, big, 3);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_OUTPUT, a, src, big), ==,
                     TEMPEST_CMD_SUCCESS);
    if (qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)) == 0) {
        g_assert_cmpuint(wait_event(s, slot++, ev), ==, TEMPEST_EV_CHAN);
    }
    g_assert_cmpuint(wait_event(s, slot++, ev), ==, TEMPEST_EV_CHAN);
    g_assert_true(bytes_are(s, bbuf, big, 3));
    /* b answers, a has not input yet: b OUTPUTTING, its offer out. */
    qtest_writeq(s, RAM(0x3f0000), 0x7265706c79ULL);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_OUTPUT, b, RAM(0x3f0000),
                              8), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)), ==, 0);
    g_assert_cmpuint(chan_cmd(s, TEMPEST_CHAN_OP_STATE, b, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)) & 0xff, ==,
                    TEMPEST_CHAN_ST_OUTPUTTING);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    /* a inputs b's answer; b's output completes. */
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_INPUT, a, RAM(0x1c0000),
                              bufsize), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)), ==,
                    TEMPEST_CHAN_PRESENT | 8);
    g_assert_cmphex(qtest_readq(d, abuf), ==, 0x7265706c79ULL);
    g_assert_cmpuint(wait_event(d, slot++, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    /* The offer survived: a's next long output lands in b's next buffer. */
    fill_bytes(d, src, big, 5);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_OUTPUT, a, src, big), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_cmd(d, TEMPEST_CHAN_OP_INPUT, b, bbuf, bufsize),
                     ==, TEMPEST_CMD_SUCCESS);
    if (!(qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT)) & TEMPEST_CHAN_PRESENT)) {
        g_assert_cmpuint(wait_event(d, slot++, ev), ==, TEMPEST_EV_CHAN);
        g_assert_cmphex(ev[0], ==,
                        b | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
        g_assert_cmpuint(ev[1], ==, big);
    }
    g_assert_true(bytes_are(d, bnext, big, 5));
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * The transfer engine (1.4) migrates: a typed transfer to the node itself
 * that waits for a buffer (its header in, its sender holding) is saved,
 * waits on after the restore, and completes once a buffer is posted.
 */
static void test_xfer_waiting(void)
{
    /* No system space: the message waits for a buffer, holding us. */
    const char *args = "-M tempest,tagmem=0 -m 64M "
                       "-global tempest-nc.sys-space=0";
    const uint64_t src = RAM(0x200000), buf = RAM(0x300000);
    uint8_t data[3000], got[3000];
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint32_t mid;

    for (int i = 0; i < sizeof(data); i++) {
        data[i] = i * 13 + 1;
    }
    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 8);
    qtest_memwrite(s, src, data, sizeof(data));
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_XFER, 0, src, sizeof(data), 7,
                                0xc0ffee, TEMPEST_XFER_TYPED), ==,
                     TEMPEST_CMD_SUCCESS);
    mid = qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_WAITING)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_ACTIVE)), ==, 1);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_WAITING)), ==, 1);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_ACTIVE)), ==, 1);
    g_assert_cmphex(qtest_readl(d, CQ_BASE), ==, 0);
    g_assert_cmpuint(tq_command3(d, TEMPEST_CMD_BUF_POST, 7, buf, 4096), ==,
                     TEMPEST_CMD_SUCCESS);
    assert_xfer_done(d, 0, mid, buf, sizeof(data) | 7ULL << 32, 0xc0ffee);
    qtest_memread(d, buf, got, sizeof(got));
    g_assert(memcmp(data, got, sizeof(data)) == 0);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_WAITING)), ==, 0);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_ACTIVE)), ==, 0);
    g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_XFER_RECV_LO)), ==,
                     sizeof(data));
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * A typed message in system space is host memory, not the guest's: a save
 * while one is there fails (and says why); once a buffer takes it, the
 * save completes and the message is in the buffer after the restore.
 */
static void test_xfer_system_space(void)
{
    const char *args = "-M tempest,tagmem=0 -m 64M";
    const uint64_t src = RAM(0x200000), buf = RAM(0x300000);
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    g_autofree char *status2 = NULL;
    QTestState *s = qtest_init(args), *d;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 8);
    qtest_memset(s, src, 0x77, 3000);
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_XFER, 0, src, 3000, 7,
                                0xc0ffee, TEMPEST_XFER_TYPED), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_PARKED, ~0, 1), ==, 1);
    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "failed");
    qtest_qmp_assert_success(s, "{'execute': 'cont'}");
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_BUF_POST, 7, buf, 4096, 0, 0,
                                0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_PARKED)), ==, 0);
    status2 = save_node(s, path);
    g_assert_cmpstr(status2, ==, "completed");
    qtest_quit(s);
    d = restore_node(args, path);
    g_assert_cmphex(qtest_readb(d, buf + 2999), ==, 0x77);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_SYS_USED)), ==, 0);
    qtest_quit(d);
    unlink(path);
    g_free(path);
}

/*
 * Posted receive buffers (1.4, BUF_POST) migrate, in the order they were
 * posted: after the restore a typed transfer takes the first one of its
 * type that is large enough, the next one the other.
 */
static void test_xfer_posted(void)
{
    const char *args = "-M tempest,tagmem=0 -m 64M";
    const uint64_t src = RAM(0x200000);
    const uint64_t small = RAM(0x300000), large = RAM(0x310000);
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = NULL;
    QTestState *s = qtest_init(args), *d;
    uint32_t mid;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 8);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_BUF_POST, 9, small, 1024),
                     ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_BUF_POST, 9, large, 4096),
                     ==, TEMPEST_CMD_SUCCESS);

    status = save_node(s, path);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);

    d = restore_node(args, path);
    qtest_memset(d, src, 0xa5, 4096);
    g_assert_cmpuint(tq_command(d, TEMPEST_CMD_XFER, 0, src, 2000, 9, 1,
                                TEMPEST_XFER_TYPED), ==, TEMPEST_CMD_SUCCESS);
    mid = qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT));
    assert_xfer_done(d, 0, mid, large, 2000 | 9ULL << 32, 1);
    g_assert_cmphex(qtest_readb(d, large + 1999), ==, 0xa5);
    g_assert_cmpuint(tq_command(d, TEMPEST_CMD_XFER, 0, src, 500, 9, 2,
                                TEMPEST_XFER_TYPED), ==, TEMPEST_CMD_SUCCESS);
    mid = qtest_readq(d, NC(TEMPEST_NC_CMD_RESULT));
    assert_xfer_done(d, 2, mid, small, 500 | 9ULL << 32, 2);
    g_assert_cmphex(qtest_readb(d, small + 499), ==, 0xa5);
    qtest_quit(d);
    tq_remove_state(path);
}

#define FLIGHT_ARGS     "-M tempest,tagmem=0 -m 128M"
#define FLIGHT_LEN      (32 << 20)
#define FLIGHT_SRC      RAM(0x1000000)
#define FLIGHT_DST      RAM(0x3000000)
#define FLIGHT_STEP     (64 << 10)      /* a frame's data */

/* 32 MiB of 0x11 with a mark in every frame, at an odd offset. */
static void flight_fill(QTestState *s)
{
    qtest_memset(s, FLIGHT_SRC, 0x11, FLIGHT_LEN);
    for (uint64_t off = 0; off < FLIGHT_LEN; off += FLIGHT_STEP) {
        qtest_writeq(s, FLIGHT_SRC + off + 13, 0x5eed0000 + off / FLIGHT_STEP);
    }
}

/* Start the copy; returns its message id. */
static uint32_t flight_start(QTestState *s)
{
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_XFER, 0, FLIGHT_SRC,
                                FLIGHT_LEN, FLIGHT_DST, 0xf1, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    return qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
}

/* Save s (stopped) to a file, restore it, let the copy finish, check it. */
static void flight_finish(QTestState *s, uint32_t mid)
{
    char *path = tq_state_file("tempest-mig");
    g_autofree char *status = save_node(s, path);
    QTestState *d;

    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);
    d = restore_node(FLIGHT_ARGS, path);
    assert_xfer_done(d, 0, mid, FLIGHT_DST, FLIGHT_LEN, 0xf1);
    for (uint64_t off = 0; off < FLIGHT_LEN; off += FLIGHT_STEP) {
        g_assert_cmphex(qtest_readq(d, FLIGHT_DST + off + 13), ==,
                        0x5eed0000 + off / FLIGHT_STEP);
        g_assert_cmphex(qtest_readb(d, FLIGHT_DST + off + FLIGHT_STEP - 1),
                        ==, 0x11);
    }
    g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_XFER_RECV_LO)), ==,
                     FLIGHT_LEN);
    g_assert_cmpuint(qtest_readq(d, NC(TEMPEST_NC_XFER_SENT_LO)), ==,
                     FLIGHT_LEN);
    g_assert_cmpuint(qtest_readl(d, NC(TEMPEST_NC_XFER_ACTIVE)), ==, 0);
    qtest_quit(d);
    tq_remove_state(path);
}

/*
 * A memory copy to the node itself (1.4) started while the VM is stopped
 * sends nothing until it runs: it is saved with no byte stored, and
 * finishes after the restore, every frame in its place.
 */
static void test_xfer_stopped(void)
{
    QTestState *s = qtest_init(FLIGHT_ARGS);
    uint32_t mid;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 8);
    flight_fill(s);
    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    mid = flight_start(s);
    /* Many main-loop turns: the engine waits for the VM. */
    for (int i = 0; i < 100; i++) {
        g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_XFER_RECV_LO)), ==, 0);
    }
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_ACTIVE)), ==, 1);
    flight_finish(s, mid);
}

/*
 * The same copy started while the VM runs and saved wherever the stop
 * caught it (the host's timing decides: the test reports where, and
 * asserts only the outcome).
 */
static void test_xfer_in_flight(void)
{
    QTestState *s = qtest_init(FLIGHT_ARGS);
    uint32_t mid;

    ring_setup(s, TEMPEST_RING_CQ, CQ_BASE, 8);
    flight_fill(s);
    mid = flight_start(s);
    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    g_test_message("stopped with %" PRIu64 " of %u bytes stored",
                   qtest_readq(s, NC(TEMPEST_NC_XFER_RECV_LO)), FLIGHT_LEN);
    flight_finish(s, mid);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/migration/timer", test_timer);
    qtest_add_func("/tempest/migration/queues", test_queues);
    qtest_add_func("/tempest/migration/tags", test_tags);
    qtest_add_func("/tempest/migration/chan", test_chan);
    qtest_add_func("/tempest/migration/chan-move", test_chan_move);
    qtest_add_func("/tempest/migration/chan-offer-outputting",
                   test_chan_offer_outputting);
    qtest_add_func("/tempest/migration/chan-then-input",
                   test_chan_then_input);
    qtest_add_func("/tempest/migration/tags-tcg", test_tags_tcg);
    qtest_add_func("/tempest/migration/only-migratable",
                   test_only_migratable);
    qtest_add_func("/tempest/migration/cluster-blocked",
                   test_cluster_blocked);
    qtest_add_func("/tempest/migration/xfer-waiting", test_xfer_waiting);
    qtest_add_func("/tempest/migration/xfer-posted", test_xfer_posted);
    qtest_add_func("/tempest/migration/xfer-system-space",
                   test_xfer_system_space);
    qtest_add_func("/tempest/migration/xfer-stopped", test_xfer_stopped);
    qtest_add_func("/tempest/migration/xfer-in-flight", test_xfer_in_flight);

    return g_test_run();
}
