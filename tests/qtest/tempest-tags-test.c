/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the node controller's tagged memory (Tempest 3.2): the tag
 * commands, their validation, the unchecked alias, and the machine's
 * tagmem property.  CPU faults need a guest: tests/guest covers them.
 */

#include "qemu/osdep.h"
#include "tempest-qtest.h"

#define BLK         (1 << TEMPEST_TAG_BLK_SHIFT)

static uint64_t tag_of(QTestState *s, uint64_t addr)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_GET, addr, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    return qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
}

/*
 * Every block starts Writable; TAG_SET changes exactly the blocks named,
 * whatever the address's offset inside its first block.
 */
static void test_set_and_get(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=1M -m 64M");
    uint64_t base = TEMPEST_TAGMEM_BASE;

    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_TAGMEM_SIZE_LO)), ==,
                    1 << 20);
    g_assert_cmpuint(tag_of(s, base), ==, TEMPEST_TAG_WRITABLE);
    g_assert_cmpuint(tag_of(s, base + (1 << 20) - 1), ==,
                     TEMPEST_TAG_WRITABLE);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base + 2 * BLK + 17,
                             4 * BLK, TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)), ==, 4);
    g_assert_cmpuint(tag_of(s, base + BLK), ==, TEMPEST_TAG_WRITABLE);
    g_assert_cmpuint(tag_of(s, base + 2 * BLK), ==, TEMPEST_TAG_INVALID);
    g_assert_cmpuint(tag_of(s, base + 5 * BLK + BLK - 1), ==,
                     TEMPEST_TAG_INVALID);
    g_assert_cmpuint(tag_of(s, base + 6 * BLK), ==, TEMPEST_TAG_WRITABLE);
    for (uint64_t t = TEMPEST_TAG_BUSY; t <= TEMPEST_TAG_WRITABLE; t++) {
        g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base + 3 * BLK, BLK,
                                 t), ==, TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tag_of(s, base + 3 * BLK), ==, t);
    }
    /* Reset makes every block Writable again. */
    qtest_system_reset(s);
    g_assert_cmpuint(tag_of(s, base + 2 * BLK), ==, TEMPEST_TAG_WRITABLE);
    qtest_quit(s);
}

/* Bad descriptions fail with their reason and change nothing. */
static void test_bad_commands(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=1M -m 64M");
    uint64_t base = TEMPEST_TAGMEM_BASE;

    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base, BLK, 4), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_TAG);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base, 0,
                             TEMPEST_TAG_INVALID), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_LEN);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base, BLK + 1,
                             TEMPEST_TAG_INVALID), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_LEN);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_RAM_BASE, BLK,
                             TEMPEST_TAG_INVALID), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    /* Starts inside, runs past the end. */
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET,
                             base + (1 << 20) - BLK, 2 * BLK,
                             TEMPEST_TAG_INVALID), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmpuint(tag_of(s, base + (1 << 20) - BLK), ==,
                     TEMPEST_TAG_WRITABLE);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_GET, base + (1 << 20), 0, 0),
                     ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    qtest_quit(s);
}

/* The alias shows the same frames, and device access ignores tags. */
static void test_alias(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=1M -m 64M");

    tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_TAGMEM_BASE, 4096,
            TEMPEST_TAG_INVALID);
    qtest_writeq(s, TEMPEST_TAGMEM_BASE + 8, 0x1234567890abcdefULL);
    g_assert_cmphex(qtest_readq(s, TEMPEST_TAGMEM_ALIAS + 8), ==,
                    0x1234567890abcdefULL);
    qtest_writel(s, TEMPEST_TAGMEM_ALIAS + 4096, 0xfeed);
    g_assert_cmphex(qtest_readl(s, TEMPEST_TAGMEM_BASE + 4096), ==, 0xfeed);
    qtest_quit(s);
}

/* Without tagged memory the commands say the address is not there. */
static void test_no_tagmem(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=0 -m 64M");

    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_TAGMEM_SIZE_LO)), ==, 0);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_TAGMEM_BASE, BLK,
                             TEMPEST_TAG_INVALID), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/tags/set-and-get", test_set_and_get);
    qtest_add_func("/tempest/tags/bad-commands", test_bad_commands);
    qtest_add_func("/tempest/tags/alias", test_alias);
    qtest_add_func("/tempest/tags/no-tagmem", test_no_tagmem);

    return g_test_run();
}
