/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the Tempest node controller: its identity and capability
 * registers, its error status, and its exit register (docs/node-
 * controller.rst; the register map is standard-headers/tempest/tempest-hw.h).
 */

#include "qemu/osdep.h"
#include "tempest-qtest.h"

static QTestState *start_node(unsigned node, unsigned nodes, unsigned cpus,
                              unsigned ram_mib)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-nc-XXXXXX", NULL);
    QTestState *s;

    /* Alone in its cluster: its fabric never forms, which is fine here. */
    s = qtest_initf("-M tempest,node-id=%u,num-nodes=%u,fabric=unix:%s "
                    "-smp %u -m %uM", node, nodes, dir, cpus, ram_mib);
    rmdir(dir);
    return s;
}

/* Identity and capability registers read back what the machine was given. */
static void test_identity(void)
{
    QTestState *s = start_node(2, 4, 3, 256);

    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_MAGIC)), ==,
                    TEMPEST_NC_MAGIC_VALUE);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_VERSION)), ==,
                    TEMPEST_NC_VERSION_VALUE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_NODE_ID)), ==, 2);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_NUM_NODES)), ==, 4);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_PAGE_SIZE)), ==,
                     1U << TEMPEST_PAGE_SHIFT);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_TAG_BLK_SIZE)), ==,
                     1U << TEMPEST_TAG_BLK_SHIFT);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_FEATURES)), ==,
                    TEMPEST_NC_FEAT_EXIT | TEMPEST_NC_FEAT_CMDLINE |
                    TEMPEST_NC_FEAT_FABRIC | TEMPEST_NC_FEAT_MSG |
                    TEMPEST_NC_FEAT_TIMER | TEMPEST_NC_FEAT_CMD |
                    TEMPEST_NC_FEAT_COLL | TEMPEST_NC_FEAT_TAGS |
                    TEMPEST_NC_FEAT_XFER | TEMPEST_NC_FEAT_POLL |
                    TEMPEST_NC_FEAT_SYSSPACE | TEMPEST_NC_FEAT_TAG_UPGRADE |
                    TEMPEST_NC_FEAT_CHAN | TEMPEST_NC_FEAT_POLL_HINT |
                    TEMPEST_NC_FEAT_BIG_SLOTS |
                    TEMPEST_NC_FEAT_CMD_BLOCK | TEMPEST_NC_FEAT_GATHER |
                    TEMPEST_NC_FEAT_COLL_WAIT |
                    TEMPEST_NC_FEAT_BCAST_WAIT |
                    TEMPEST_NC_FEAT_POLL_PEEKS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)), ==,
                     TEMPEST_FABRIC_CONNECTING);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_NUM_CPUS)), ==, 3);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_RAM_BASE_LO)), ==,
                    (uint32_t)TEMPEST_RAM_BASE);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_RAM_SIZE_LO)), ==,
                    256U << 20);
    /* An aligned 8-byte access reads the LO/HI pair as one value. */
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_RAM_BASE_LO)), ==,
                    TEMPEST_RAM_BASE);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_RAM_SIZE_LO)), ==,
                    256ULL << 20);
    /* Without -append the command line is empty. */
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMDLINE_LEN)), ==, 0);
    /* The spin hint: the machine's spin-us, 50 unless said. */
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SPIN_US)), ==, 50);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 0);
    qtest_quit(s);
    s = qtest_init("-M tempest,spin-us=7 -m 128M");
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SPIN_US)), ==, 7);
    qtest_writel(s, NC(TEMPEST_NC_SPIN_US), 9);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_SPIN_US)), ==, 7);
    qtest_quit(s);
}

/* An offset with no register is a guest error: reads 0, is recorded. */
static void test_bad_offset(void)
{
    QTestState *s = start_node(0, 1, 1, 128);

    g_assert_cmphex(qtest_readl(s, NC(0x300)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_OFFSET);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==, 0x300);
    qtest_writel(s, NC(0xff0), 0x1234);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==, 0xff0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 2);
    g_assert_cmphex(qtest_readl(s, NC(0xff0)), ==, 0);

    /* Writing ERR_STATUS clears it; the count goes on. */
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NONE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 3);
    qtest_quit(s);
}

/* Byte, halfword and unaligned accesses read as 0 and are recorded. */
static void test_bad_size(void)
{
    QTestState *s = start_node(0, 1, 1, 128);

    g_assert_cmphex(qtest_readb(s, NC(TEMPEST_NC_MAGIC)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmphex(qtest_readw(s, NC(TEMPEST_NC_VERSION)), ==, 0);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_ERR_INFO)), ==,
                    TEMPEST_NC_VERSION);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_MAGIC + 2)), ==, 0);
    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_VERSION)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 4);

    /* A bad-size write changes nothing. */
    qtest_writeb(s, NC(TEMPEST_NC_SCRATCH), 0x55);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    qtest_quit(s);
}

/* Read-only registers ignore writes; EXIT cannot be read. */
static void test_access_rights(void)
{
    QTestState *s = start_node(1, 2, 1, 128);

    qtest_writel(s, NC(TEMPEST_NC_NODE_ID), 7);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_NODE_ID)), ==, 1);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_EXIT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_WRITE_ONLY);
    qtest_writel(s, NC(TEMPEST_NC_CMDLINE), 0x41414141);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_READ_ONLY);
    /*
     * POLL takes 1 (polling), 1 | POLL_PEEKS (1.23) or 0 (not), and cannot
     * be read; POLL_PEEKS without polling is a bad value, as any other.
     */
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writel(s, NC(TEMPEST_NC_POLL), 1);
    qtest_writel(s, NC(TEMPEST_NC_POLL), 1 | TEMPEST_NC_POLL_PEEKS);
    qtest_writel(s, NC(TEMPEST_NC_POLL), 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NONE);
    qtest_writel(s, NC(TEMPEST_NC_POLL), TEMPEST_NC_POLL_PEEKS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writel(s, NC(TEMPEST_NC_POLL), 4);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_POLL)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_WRITE_ONLY);
    qtest_quit(s);
}

/* SCRATCH holds what is written (8-byte writes split) and reset clears it. */
static void test_scratch_and_reset(void)
{
    QTestState *s = start_node(0, 1, 1, 128);

    qtest_writel(s, NC(TEMPEST_NC_SCRATCH), 0xdeadbeef);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0xdeadbeef);
    qtest_readl(s, NC(0x400));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 1);

    qtest_system_reset(s);
    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_SCRATCH)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NONE);
    qtest_quit(s);
}

/* A write to EXIT ends QEMU with that status (low 8 bits). */
static void test_exit(void)
{
    QTestState *s = start_node(0, 1, 1, 128);

    qtest_set_expected_status(s, 42);
    qtest_writel(s, NC(TEMPEST_NC_EXIT), 0x100 + 42);
    qtest_wait_qemu(s);
    qtest_quit(s);
}

/*
 * A fabric that cannot start (a spec that names no transport, a directory
 * where no socket can be made) and a migration blocker that cannot be
 * added (-only-migratable) fail realize (docs/node-controller.rst,
 * "Properties"): QEMU exits at start-up with status 1 and says why.
 */
static void test_fabric_fails(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-nc-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("unix:%s", dir);
    const char *const specs[][3] = {
        { "bogus:1", "expected unix:DIR", "-S" },
        { "unix:/nonexistent/tempest", "cannot listen", "-S" },
        { good, "live sockets", "-only-migratable" },
    };
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");

    g_assert(qemu);
    for (int i = 0; i < ARRAY_SIZE(specs); i++) {
        g_autofree char *machine =
            g_strdup_printf("tempest,num-nodes=2,fabric=%s", specs[i][0]);
        const char *argv[] = {
            "timeout", "30", qemu, "-M", machine, "-m", "64M", "-S",
            specs[i][2], "-display", "none", "-nodefaults", NULL
        };
        g_autofree char *out = NULL, *err = NULL;
        int status;

        g_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH,
                              NULL, NULL, &out, &err, &status, NULL));
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 1);
        g_assert_nonnull(strstr(err, specs[i][1]));
        g_assert_null(strstr(err, "Aborted"));
    }
    /* The socket of the node that failed is gone with it. */
    g_assert_cmpint(rmdir(dir), ==, 0);
}

#define COPY_RQ     RAM(0x200000)
#define COPY_DESC   RAM(0x300000)
#define COPY_DST    RAM(0x310000)

/* An RQ_COPY of @len bytes from @src to @dst; returns its STATUS. */
static uint32_t rq_copy(QTestState *s, uint64_t desc, uint64_t src,
                        uint64_t dst, uint32_t len)
{
    qtest_writeq(s, desc + TEMPEST_COPY_SRC, src);
    qtest_writeq(s, desc + TEMPEST_COPY_DST, dst);
    qtest_writel(s, desc + TEMPEST_COPY_LEN, len);
    qtest_writel(s, desc + TEMPEST_COPY_STATUS, 0xdead);
    qtest_writeq(s, NC(TEMPEST_NC_RQ_COPY), desc);
    return qtest_readl(s, desc + TEMPEST_COPY_STATUS);
}

/*
 * RQ_COPY (1.15; docs/node-controller.rst "RQ_COPY"): one 8-byte write
 * copies a range inside the RQ (8 KiB slots here) to RAM, byte for byte,
 * and writes STATUS 0; a source outside the RQ or running past its end,
 * a destination outside RAM or overlapping the RQ, a length of 0 or over
 * a packet's payload
 * are refused (STATUS and ERR_STATUS BAD_RANGE, nothing copied); a
 * descriptor outside RAM is BAD_VALUE; a 4-byte access BAD_SIZE, a read
 * WRITE_ONLY.
 */
static void test_rq_copy(void)
{
    QTestState *s = start_node(0, 1, 1, 128);
    uint64_t rq_end = COPY_RQ + 4 * 8192;
    g_autofree uint8_t *pat = g_malloc(8192);
    g_autofree uint8_t *got = g_malloc(8192);

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP,
                                 TEMPEST_RING_RQ | 13 << 8, COPY_RQ, 4), ==,
                     TEMPEST_CMD_SUCCESS);
    for (int i = 0; i < 8192; i++) {
        pat[i] = (uint8_t)(i * 5 + 1);
    }
    qtest_memwrite(s, COPY_RQ + 8192 + 32, pat, 8160);

    /* 4096 bytes from slot 1's payload, then the whole last payload. */
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ + 8192 + 32, COPY_DST,
                             4096), ==, 0);
    qtest_memread(s, COPY_DST, got, 4096);
    g_assert_cmpmem(got, 4096, pat, 4096);
    qtest_memwrite(s, COPY_RQ + 3 * 8192 + 32, pat, 8160);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ + 3 * 8192 + 32,
                             COPY_DST + 4, TEMPEST_PKT_MAX_PAYLOAD), ==, 0);
    qtest_memread(s, COPY_DST + 4, got, TEMPEST_PKT_MAX_PAYLOAD);
    g_assert_cmpmem(got, TEMPEST_PKT_MAX_PAYLOAD, pat,
                    TEMPEST_PKT_MAX_PAYLOAD);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 0);

    /* Refused, nothing copied: the destination keeps its zeros. */
    qtest_memset(s, COPY_DST, 0, 16384);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ - 64, COPY_DST, 128),
                     ==, TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, rq_end - 64, COPY_DST, 128), ==,
                     TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_DST, COPY_DST + 4096, 64),
                     ==, TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ, 0x1000, 64), ==,
                     TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ, RAM(128 << 20) - 32,
                             64), ==, TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ, COPY_DST, 0), ==,
                     TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ + 8192, COPY_RQ - 64,
                             128), ==, TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(rq_copy(s, COPY_DESC, COPY_RQ, COPY_DST,
                             TEMPEST_PKT_MAX_PAYLOAD + 1), ==,
                     TEMPEST_NC_ERR_BAD_RANGE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_RANGE);
    qtest_memread(s, COPY_DST, got, 8192);
    for (int i = 0; i < 8192; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }
    qtest_writeq(s, NC(TEMPEST_NC_RQ_COPY), 0x1000);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    qtest_writel(s, NC(TEMPEST_NC_RQ_COPY), (uint32_t)COPY_DESC);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_RQ_COPY)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_WRITE_ONLY);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/nc/identity", test_identity);
    qtest_add_func("/tempest/nc/bad-offset", test_bad_offset);
    qtest_add_func("/tempest/nc/bad-size", test_bad_size);
    qtest_add_func("/tempest/nc/access-rights", test_access_rights);
    qtest_add_func("/tempest/nc/scratch-and-reset", test_scratch_and_reset);
    qtest_add_func("/tempest/nc/exit", test_exit);
    qtest_add_func("/tempest/nc/fabric-fails", test_fabric_fails);
    qtest_add_func("/tempest/nc/rq-copy", test_rq_copy);

    return g_test_run();
}
