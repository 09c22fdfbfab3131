/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the node controller's part of a whole-cluster checkpoint
 * (docs/checkpoint.rst, "The node controller"): the properties
 * "checkpoint", "ckpt-status" and "ckpt-id"; checkpoint mode refused
 * while the node runs, while its cluster is not formed and while a
 * message waits in system space (each with its reason); a node in
 * checkpoint mode saved and loaded with its ckpt-id, leaving the mode
 * when it runs again; a loaded checkpoint of another node refused; a
 * collective saved from the shared combining area goes up only once its
 * restored node runs, and completes; a packet saved waiting in its send
 * slot is sent only once its restored node runs, and lands in order.
 */

#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "tempest-qtest.h"

#define NCPATH      "/machine/node-controller"
#define CQ_BASE     RAM(0x120000)
#define SQ0_BASE    RAM(0x100000)
#define RQ_BASE     RAM(0x200000)
/* One node, without a fabric. */
#define ONE_NODE    "-M tempest,tagmem=0 -m 64M"

/* qom-set checkpoint; NULL on success, else the error's text. */
static char *set_mode(QTestState *s, bool on)
{
    QDict *rsp = qtest_qmp(s, "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': 'checkpoint', "
                           "'value': %i}}", NCPATH, on);
    char *err = NULL;

    if (qdict_haskey(rsp, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "error"),
                                     "desc"));
    }
    qobject_unref(rsp);
    return err;
}

static char *get_str(QTestState *s, const char *prop)
{
    QDict *rsp = qtest_qmp(s, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': %s}}", NCPATH, prop);
    char *v = g_strdup(qdict_get_str(rsp, "return"));

    qobject_unref(rsp);
    return v;
}

static bool get_bool(QTestState *s, const char *prop)
{
    QDict *rsp = qtest_qmp(s, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': %s}}", NCPATH, prop);
    bool v = qdict_get_bool(rsp, "return");

    qobject_unref(rsp);
    return v;
}

static uint64_t get_id(QTestState *s)
{
    QDict *rsp = qtest_qmp(s, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'ckpt-id'}}", NCPATH);
    uint64_t v = qdict_get_int(rsp, "return");

    qobject_unref(rsp);
    return v;
}

/*
 * Checkpoint mode needs a stopped VM and a formed cluster: a node of two
 * whose peer never came says so, in ckpt-status and in the refusal.
 */
static void test_not_at_rest(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-ckpt-XXXXXX", NULL);
    QTestState *s = qtest_initf("-M tempest,num-nodes=2,fabric=unix:%s "
                                "-m 64M", dir);
    g_autofree char *running = set_mode(s, true);
    g_autofree char *status = get_str(s, "ckpt-status");
    g_autofree char *forming = NULL;

    g_assert(running && strstr(running, "stop the VM"));
    g_assert(strstr(status, "not formed"));
    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    forming = set_mode(s, true);
    g_assert(forming && strstr(forming, "not at rest") &&
             strstr(forming, "not formed"));
    g_assert(!get_bool(s, "checkpoint"));
    qtest_quit(s);
    rmdir(dir);
}

/*
 * A message in system space (host memory) is not at rest: refused, with
 * the reason; once a buffer takes it the node enters checkpoint mode,
 * saves with its ckpt-id, and the loaded node has that id; running again
 * leaves the mode.
 */
static void test_save_load(void)
{
    const uint64_t src = RAM(0x200000), buf = RAM(0x300000);
    char *path = tq_state_file("tempest-ckpt");
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *refused = NULL;
    g_autofree char *status = NULL;
    g_autofree char *loaded = NULL;
    g_autofree char *quiet = NULL;
    QTestState *s = qtest_init(ONE_NODE), *d;

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_CQ,
                                 CQ_BASE, 8), ==, TEMPEST_CMD_SUCCESS);
    qtest_memset(s, src, 0x5a, 3000);
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_XFER, 0, src, 3000, 7, 1,
                                TEMPEST_XFER_TYPED), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_XFER_PARKED, ~0, 1), ==, 1);
    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    refused = set_mode(s, true);
    g_assert(refused && strstr(refused, "system space"));
    qtest_qmp_assert_success(s, "{'execute': 'cont'}");
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_BUF_POST, 7, buf, 4096, 0, 0,
                                0), ==, TEMPEST_CMD_SUCCESS);
    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    quiet = get_str(s, "ckpt-status");
    g_assert_cmpstr(quiet, ==, "0 0");
    qtest_qmp_assert_success(s, "{'execute': 'qom-set', 'arguments': "
                             "{'path': %s, 'property': 'ckpt-id', "
                             "'value': 12345}}", NCPATH);
    g_assert_null(set_mode(s, true));
    g_assert(get_bool(s, "checkpoint"));
    qtest_qmp_assert_success(s, "{'execute': 'migrate', 'arguments': "
                             "{'uri': %s}}", uri);
    status = tq_migration_end(s);
    g_assert_cmpstr(status, ==, "completed");
    qtest_qmp_assert_success(s, "{'execute': 'cont'}");
    g_assert(!get_bool(s, "checkpoint"));
    qtest_quit(s);

    d = qtest_initf("%s -incoming defer", ONE_NODE);
    qtest_qmp_assert_success(d, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    loaded = tq_migration_end(d);
    g_assert_cmpstr(loaded, ==, "completed");
    g_assert_cmpuint(get_id(d), ==, 12345);
    qtest_qmp_assert_success(d, "{'execute': 'cont'}");
    g_assert_cmphex(qtest_readb(d, buf + 2999), ==, 0x5a);
    qtest_quit(d);
    tq_remove_state(path);
}

/* Saves stopped node s in checkpoint mode to uri, and ends it. */
static void save_quit(QTestState *s, const char *uri)
{
    g_autofree char *status = NULL;

    qtest_qmp_assert_success(s, "{'execute': 'stop'}");
    g_assert_null(set_mode(s, true));
    qtest_qmp_assert_success(s, "{'execute': 'migrate', 'arguments': "
                             "{'uri': %s}}", uri);
    status = tq_migration_end(s);
    g_assert_cmpstr(status, ==, "completed");
    qtest_quit(s);
}

/* A node started with args loads uri: the load fails and QEMU ends. */
static void load_refused(const char *args, const char *uri)
{
    QTestState *d = qtest_initf("%s -incoming defer", args);

    qtest_set_expected_status(d, EXIT_FAILURE);
    qtest_qmp_assert_success(d, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    qtest_wait_qemu(d);
    qtest_quit(d);
}

/*
 * The checkpoint state names its node: loaded into another node (here:
 * the saved node id changed in the file) the load fails and QEMU ends.
 */
static void test_other_node_refused(void)
{
    char *path = tq_state_file("tempest-ckpt");
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *data = NULL;
    gsize len;
    char *at;

    save_quit(qtest_init(ONE_NODE), uri);
    /* magic "NCCK", version, node id: make it node 7's. */
    g_assert(g_file_get_contents(path, &data, &len, NULL));
    at = memmem(data, len, "NCCK", 4);
    g_assert(at && at + 12 <= data + len);
    at[8] = 7;
    g_assert(g_file_set_contents(path, data, len, NULL));
    load_refused(ONE_NODE, uri);
    tq_remove_state(path);
}

/*
 * A checkpoint is input like any other: one whose collective result
 * address (where the collective's completion writes) lies outside RAM is
 * refused at its load, and QEMU ends, instead of the device later writing
 * there (a register of another device, say).  Here: a vector sum run on
 * one node, saved, and the saved address changed in the file to the first
 * byte past RAM.
 */
static void test_bad_coll_dest_refused(void)
{
    const uint64_t src = RAM(0x200000), dest = RAM(0x1234560);
    char *path = tq_state_file("tempest-ckpt");
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *data = NULL;
    QTestState *s = qtest_init(ONE_NODE);
    uint8_t want[11], *at;
    gsize len;

    qtest_writeq(s, src, 41);
    g_assert_cmpuint(tq_command(s, TEMPEST_CMD_COLL_START,
                                TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD, src,
                                1, dest, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(tq_coll_wait(s), ==, TEMPEST_COLL_ST_DONE);
    g_assert_cmpuint(qtest_readq(s, dest), ==, 41);
    save_quit(s, uri);
    /* The blob's coll_vector, coll_dest (little-endian), kind, fn. */
    want[0] = 1;
    for (int i = 0; i < 8; i++) {
        want[1 + i] = dest >> (8 * i);
    }
    want[9] = TEMPEST_COLL_COMBINE;
    want[10] = TEMPEST_COLL_ADD;
    g_assert(g_file_get_contents(path, &data, &len, NULL));
    at = memmem(data, len, want, sizeof(want));
    g_assert(at);
    g_assert_null(memmem(at + 1, len - (at + 1 - (uint8_t *)data), want,
                         sizeof(want)));
    stq_le_p(at + 1, RAM(64 << 20));
    g_assert(g_file_set_contents(path, data, len, NULL));
    load_refused(ONE_NODE, uri);
    tq_remove_state(path);
}

static QTestState *start_pair_node(const char *dir, unsigned id,
                                   const char *extra)
{
    return qtest_initf("-M tempest,node-id=%u,num-nodes=2,fabric=shm:%s,"
                       "cluster-id=0x77,tagmem=0 -m 64M%s", id, dir, extra);
}

/* ckpt-status's two counts: frames sent to and taken from peers. */
static void get_counts(QTestState *s, uint64_t *tx, uint64_t *rx)
{
    g_autofree char *st = get_str(s, "ckpt-status");

    g_assert_cmpint(sscanf(st, "%" SCNu64 " %" SCNu64, tx, rx), ==, 2);
}

static void migrate_to(QTestState *s, const char *uri, bool in)
{
    g_autofree char *status = NULL;

    if (in) {
        qtest_qmp_assert_success(s, "{'execute': 'migrate-incoming', "
                                 "'arguments': {'uri': %s}}", uri);
    } else {
        qtest_qmp_assert_success(s, "{'execute': 'migrate', "
                                 "'arguments': {'uri': %s}}", uri);
    }
    status = tq_migration_end(s);
    g_assert_cmpstr(status, ==, "completed");
}

/*
 * The pair s stopped, given ckpt-id @id, put in checkpoint mode and saved
 * to uri, then quit; d started on dir2 (with @extra) to load them, node
 * 1 loaded first.  A restored node sends its peers nothing before its
 * cont: for a second, nothing reaches node 0, which has not loaded, and
 * node 1 sent no frame.
 */
static void save_restart_first(QTestState **s, QTestState **d, char **uri,
                               const char *dir2, int id, const char *extra)
{
    g_autofree char *in = g_strdup_printf("%s -incoming defer", extra);
    uint64_t tx, rx;
    gint64 end;

    for (int i = 0; i < 2; i++) {
        qtest_qmp_assert_success(s[i], "{'execute': 'stop'}");
    }
    for (int i = 0; i < 2; i++) {
        qtest_qmp_assert_success(s[i], "{'execute': 'qom-set', "
                                 "'arguments': {'path': %s, 'property': "
                                 "'ckpt-id', 'value': %d}}", NCPATH, id);
        g_assert_null(set_mode(s[i], true));
    }
    for (int i = 0; i < 2; i++) {
        migrate_to(s[i], uri[i], false);
    }
    for (int i = 0; i < 2; i++) {
        qtest_quit(s[i]);
        d[i] = start_pair_node(dir2, i, in);
    }

    migrate_to(d[1], uri[1], true);
    /* Give a node that sent at its load the time to reach node 0. */
    end = g_get_monotonic_time() + G_USEC_PER_SEC;
    do {
        g_usleep(10000);
        get_counts(d[0], &tx, &rx);
    } while (!rx && g_get_monotonic_time() < end);
    g_assert_cmpuint(rx, ==, 0);
    get_counts(d[1], &tx, &rx);
    g_assert_cmpuint(tx, ==, 0);
}

/*
 * docs/checkpoint.rst, "Restoring" (a restored node sends its peers
 * nothing before its cont), for the control network's round saved from
 * the shared combining area (docs/strata.rst, "Combining on shared
 * counters", Checkpoints): two nodes on shared memory combine barriers
 * until they combine in the area; node 1 alone arrives at a sum, and
 * both are saved.  Restored with node 1 loaded first, node 1 sends node
 * 0 nothing while node 0 loads (sent then, node 0's load lost its round
 * and the sum waited for ever: ckpt late_8's hang); once both run and
 * node 0 arrives, the sum completes on the tree, right on both.
 */
static void test_shared_round_restored(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-ckpt-XXXXXX", NULL);
    g_autofree char *dir2 = g_dir_make_tmp("tempest-ckpt-XXXXXX", NULL);
    char *path[2];
    char *uri[2];
    QTestState *s[2], *d[2];
    int n;

    for (int i = 0; i < 2; i++) {
        path[i] = tq_state_file("tempest-ckpt");
        uri[i] = g_strdup_printf("file:%s", path[i]);
        s[i] = start_pair_node(dir, i, "");
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(s[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
    }
    /* Barriers on the tree until one switches the pair to the area. */
    for (n = 0; n < 20 && !qtest_readl(s[1], NC(TEMPEST_NC_COLL_SHARED));
         n++) {
        for (int i = 0; i < 2; i++) {
            g_assert_cmpuint(tq_command(s[i], TEMPEST_CMD_COLL_START,
                                        TEMPEST_COLL_COMBINE,
                                        TEMPEST_COLL_OR, 0, 0, 0, 0), ==,
                             TEMPEST_CMD_SUCCESS);
        }
        for (int i = 0; i < 2; i++) {
            g_assert_cmpuint(tq_coll_wait(s[i]), ==, TEMPEST_COLL_ST_DONE);
        }
    }
    g_assert_cmpuint(qtest_readl(s[1], NC(TEMPEST_NC_COLL_SHARED)), ==, 1);
    g_assert_cmpuint(tq_command(s[1], TEMPEST_CMD_COLL_START,
                                TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD, 5, 0,
                                0, 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readl(s[1], NC(TEMPEST_NC_COLL_STATUS)), ==,
                     TEMPEST_COLL_ST_PENDING);
    save_restart_first(s, d, uri, dir2, 99, "");

    migrate_to(d[0], uri[0], true);
    for (int i = 1; i >= 0; i--) {
        g_assert_cmpuint(get_id(d[i]), ==, 99);
        qtest_qmp_assert_success(d[i], "{'execute': 'cont'}");
    }
    g_assert_cmpuint(tq_command(d[0], TEMPEST_CMD_COLL_START,
                                TEMPEST_COLL_COMBINE, TEMPEST_COLL_ADD, 7, 0,
                                0, 0), ==, TEMPEST_CMD_SUCCESS);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_coll_wait(d[i]), ==, TEMPEST_COLL_ST_DONE);
        g_assert_cmpuint(qtest_readq(d[i], NC(TEMPEST_NC_COLL_RESULT)), ==,
                         12);
        g_assert_cmpuint(qtest_readl(d[i], NC(TEMPEST_NC_COLL_SEQ)), ==,
                         n + 1);
        qtest_quit(d[i]);
        tq_remove_state(path[i]);
        g_free(uri[i]);
    }
    rmdir(dir);
    rmdir(dir2);
}

/* Node 1's packet of tag @tag to node 0, from SQ0 slot @slot. */
static void pair_send(QTestState *s, unsigned slot, uint64_t tag)
{
    uint64_t addr = SQ0_BASE + slot * TEMPEST_PKT_SIZE;

    qtest_writew(s, addr + TEMPEST_PKT_NODE, 0);
    qtest_writeq(s, addr + TEMPEST_PKT_WORD1, tag);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | 8);
    qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
}

/* Node 0's RQ slot @slot, once a packet is there (its CTL word). */
static uint32_t pair_landed(QTestState *s, unsigned slot)
{
    return tq_wait_mem32(s, RQ_BASE + slot * TEMPEST_PKT_SIZE, ~0,
                         TEMPEST_PKT_VALID | 8);
}

/*
 * docs/checkpoint.rst, "Restoring", for a send ring (docs/fabric.rst,
 * "Nothing is sent while stopped"): node 1 fills node 0's RQ (16 slots)
 * straight, and its 17th packet waits in its send slot for room (holding
 * for room; RAM shared, as the launcher makes it).  Both are saved.
 * Restored with node 1 loaded first, node 1 sends node 0 nothing while
 * node 0 loads (sent then, at node 1's load, it reached a node whose
 * load then reset what it had taken: every later packet of node 1 was
 * dropped as out of sequence, ckpt/moved's hang).  Once both run and
 * node 0's guest frees the first slot, the packet lands there, in order.
 */
static void test_held_send_restored(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-ckpt-XXXXXX", NULL);
    g_autofree char *dir2 = g_dir_make_tmp("tempest-ckpt-XXXXXX", NULL);
    const char *opts = " -object memory-backend-memfd,id=mem,size=64M,"
                       "share=on -machine memory-backend=mem"
                       " -global tempest-nc.hold-ms=600000";
    char *path[2];
    char *uri[2];
    QTestState *s[2], *d[2];
    uint64_t at;
    unsigned w = 0;
    gint64 end;

    for (int i = 0; i < 2; i++) {
        path[i] = tq_state_file("tempest-ckpt");
        uri[i] = g_strdup_printf("file:%s", path[i]);
        s[i] = start_pair_node(dir, i, opts);
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(s[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        g_assert_cmpuint(tq_command3(s[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_SQ0, SQ0_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_command3(s[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_RQ, RQ_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_command3(s[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_CQ, CQ_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
    }
    /*
     * Links are made on first use, and a hold needs the shared-memory
     * one and all the credit back: packets, each read and freed, until
     * one goes straight in (w of them; the RQ is empty after).
     */
    end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    do {
        pair_send(s[1], w % 16, 0xc00 + w);
        g_assert_cmphex(pair_landed(s[0], w % 16), ==, TEMPEST_PKT_VALID | 8);
        qtest_writel(s[0], RQ_BASE + (w % 16) * TEMPEST_PKT_SIZE, 0);
        qtest_writel(s[0], NC(TEMPEST_NC_RQ_DOORBELL), 1);
        w++;
    } while (!qtest_readl(s[1], NC(TEMPEST_NC_TX_DIRECT)) &&
             g_get_monotonic_time() < end);
    g_assert_cmpuint(qtest_readl(s[1], NC(TEMPEST_NC_TX_DIRECT)), >=, 1);
    for (unsigned i = 0; i < 16; i++) {
        pair_send(s[1], (w + i) % 16, 0xd00 + i);
        g_assert_cmphex(pair_landed(s[0], (w + i) % 16), ==,
                        TEMPEST_PKT_VALID | 8);
    }
    pair_send(s[1], w % 16, 0xd10);
    g_assert_cmpuint(qtest_readl(s[1], NC(TEMPEST_NC_TX_STALLS)), >=, 1);
    g_assert_cmphex(qtest_readl(s[1], SQ0_BASE + (w % 16) * TEMPEST_PKT_SIZE),
                    ==, TEMPEST_PKT_VALID | 8);

    save_restart_first(s, d, uri, dir2, 98, opts);
    g_assert_cmphex(qtest_readl(d[1], SQ0_BASE + (w % 16) * TEMPEST_PKT_SIZE),
                    ==, TEMPEST_PKT_VALID | 8);

    migrate_to(d[0], uri[0], true);
    for (int i = 1; i >= 0; i--) {
        g_assert_cmpuint(get_id(d[i]), ==, 98);
        qtest_qmp_assert_success(d[i], "{'execute': 'cont'}");
    }
    at = RQ_BASE + (w % 16) * TEMPEST_PKT_SIZE;
    qtest_writel(d[0], at, 0);
    g_assert_cmphex(pair_landed(d[0], w % 16), ==, TEMPEST_PKT_VALID | 8);
    g_assert_cmphex(qtest_readq(d[0], at + TEMPEST_PKT_WORD1), ==, 0xd10);
    g_assert_cmpuint(qtest_readl(d[0], at + TEMPEST_PKT_SEQ), ==, w + 16);
    g_assert_cmphex(qtest_readl(d[1], SQ0_BASE + (w % 16) * TEMPEST_PKT_SIZE),
                    ==, 0);
    g_assert_cmpuint(qtest_readl(d[0], NC(TEMPEST_NC_DROPPED)), ==, 0);
    for (int i = 0; i < 2; i++) {
        qtest_quit(d[i]);
        tq_remove_state(path[i]);
        g_free(uri[i]);
    }
    rmdir(dir);
    rmdir(dir2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/tempest/ckpt/not-at-rest", test_not_at_rest);
    qtest_add_func("/tempest/ckpt/save-load", test_save_load);
    qtest_add_func("/tempest/ckpt/bad-coll-dest-refused",
                   test_bad_coll_dest_refused);
    qtest_add_func("/tempest/ckpt/other-node-refused",
                   test_other_node_refused);
    qtest_add_func("/tempest/ckpt/shared-round-restored",
                   test_shared_round_restored);
    qtest_add_func("/tempest/ckpt/held-send-restored",
                   test_held_send_restored);
    return g_test_run();
}
