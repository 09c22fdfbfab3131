/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the node controller's tagged memory (Tempest 3.2): the tag
 * commands, their validation, the unchecked window, and the machine's
 * tagmem property.  Two cases run TCG with a six-instruction guest, so
 * that TCG's tag check is there to see: device access ignores it while
 * the CPU's is refused, and it survives unrealize and realize.  The full
 * CPU fault behaviour is covered by tests/guest.
 */

#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "tempest-qtest.h"

#define BLK         (1 << TEMPEST_TAG_BLK_SHIFT)
#define NC_PATH     "/machine/node-controller"

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
        g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base + 3 * BLK,
                                     BLK, t), ==, TEMPEST_CMD_SUCCESS);
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
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_GET, base + (1 << 20),
                                 0, 0), ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    qtest_quit(s);
}

/*
 * TAG_UPGRADE (1.7): one 8-byte write adds access to a run of blocks;
 * one that would take access from any block of the run, a run outside
 * tagged memory, a bad tag, a 4-byte write and a read change nothing and
 * say why in ERR_STATUS.
 */
static void test_upgrade_register(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=1M -m 64M");
    uint64_t base = TEMPEST_TAGMEM_BASE, blocks = (1 << 20) / BLK;

    g_assert_true(qtest_readl(s, NC(TEMPEST_NC_FEATURES)) &
                  TEMPEST_NC_FEAT_TAG_UPGRADE);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, base, 8 * BLK,
                                 TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_SUCCESS);
    /* Invalid to ReadOnly on blocks 2..4, then ReadOnly to Writable. */
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(2, 3, TEMPEST_TAG_READONLY));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NONE);
    g_assert_cmpuint(tag_of(s, base + BLK), ==, TEMPEST_TAG_INVALID);
    g_assert_cmpuint(tag_of(s, base + 2 * BLK), ==, TEMPEST_TAG_READONLY);
    g_assert_cmpuint(tag_of(s, base + 4 * BLK), ==, TEMPEST_TAG_READONLY);
    g_assert_cmpuint(tag_of(s, base + 5 * BLK), ==, TEMPEST_TAG_INVALID);
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(3, 1, TEMPEST_TAG_WRITABLE));
    g_assert_cmpuint(tag_of(s, base + 3 * BLK), ==, TEMPEST_TAG_WRITABLE);
    /* Blocks 3..4 to ReadOnly would take writes from block 3: refused. */
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(3, 2, TEMPEST_TAG_READONLY));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_TAG_REFUSED);
    g_assert_cmpuint(tag_of(s, base + 3 * BLK), ==, TEMPEST_TAG_WRITABLE);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    /* Invalid to Busy takes nothing away but gives nothing: allowed. */
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(6, 1, TEMPEST_TAG_BUSY));
    g_assert_cmpuint(tag_of(s, base + 6 * BLK), ==, TEMPEST_TAG_BUSY);
    /* Past the end, no blocks, a bad tag: refused, nothing changed. */
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(blocks - 1, 2, TEMPEST_TAG_WRITABLE));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_TAG_REFUSED);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(0, 0, TEMPEST_TAG_WRITABLE));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_TAG_REFUSED);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writeq(s, NC(TEMPEST_NC_TAG_UPGRADE),
                 TEMPEST_TAG_UPGRADE(0, 1, 4));
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_TAG_REFUSED);
    g_assert_cmpuint(tag_of(s, base), ==, TEMPEST_TAG_INVALID);
    /* Only an 8-byte write: a 4-byte one is refused, a read too. */
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writel(s, NC(TEMPEST_NC_TAG_UPGRADE), 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmpuint(tag_of(s, base), ==, TEMPEST_TAG_INVALID);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_TAG_UPGRADE)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_WRITE_ONLY);
    qtest_quit(s);
}

/* Both windows show the same frames (no TCG here: nothing is checked). */
static void test_alias(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=1M -m 64M");

    qtest_writeq(s, TEMPEST_TAGMEM_BASE + 8, 0x1234567890abcdefULL);
    g_assert_cmphex(qtest_readq(s, TEMPEST_TAGMEM_ALIAS + 8), ==,
                    0x1234567890abcdefULL);
    qtest_writel(s, TEMPEST_TAGMEM_ALIAS + 4096, 0xfeed);
    g_assert_cmphex(qtest_readl(s, TEMPEST_TAGMEM_BASE + 4096), ==, 0xfeed);
    qtest_quit(s);
}

static QTestState *start_tcg(const char *image)
{
    return qtest_initf("-accel tcg -S -M tempest,tagmem=1M -m 64M "
                       "-kernel %s", image);
}

/*
 * Run the guest: its load through the unchecked window passes (it stores
 * TQ_GUEST_MARK), its load of the same frame through the checked window is
 * refused by the tag (TAG_FAULTS).
 */
static void run_guest(QTestState *s)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_TAGMEM_BASE,
                                 BLK, TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_SUCCESS);
    qtest_qmp_assert_success(s, "{'execute': 'cont'}");
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_TAG_FAULTS, ~0, 1), ==, 1);
    g_assert_cmphex(qtest_readq(s, TQ_GUEST_MARK), ==, 1);
}

/*
 * Tempest 3.2 (docs/node-controller.rst, 1.3): tags check CPU accesses
 * only; a device (DMA, here qtest) reads and writes a block whose tag is
 * Invalid through either window.  With TCG the check is in place (the
 * guest's own load of the block is refused), so a check that caught
 * device accesses too would make these differ.
 */
static void test_device_access(void)
{
    g_autofree char *image = tq_guest_image();
    QTestState *s = start_tcg(image);

    run_guest(s);
    qtest_writeq(s, TEMPEST_TAGMEM_BASE + 8, 0x1234567890abcdefULL);
    g_assert_cmphex(qtest_readq(s, TEMPEST_TAGMEM_BASE + 8), ==,
                    0x1234567890abcdefULL);
    g_assert_cmphex(qtest_readq(s, TEMPEST_TAGMEM_ALIAS + 8), ==,
                    0x1234567890abcdefULL);
    qtest_writel(s, TEMPEST_TAGMEM_ALIAS + 16, 0xfeed);
    g_assert_cmphex(qtest_readl(s, TEMPEST_TAGMEM_BASE + 16), ==, 0xfeed);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_TAG_FAULTS)), ==, 1);
    qtest_quit(s);
    tq_remove_image(image);
}

static void qom_set_str(QTestState *s, const char *prop, const char *value)
{
    qtest_qmp_assert_success(s, "{'execute': 'qom-set', 'arguments': "
                             "{'path': '" NC_PATH "', 'property': %s, "
                             "'value': %s}}", prop, value);
}

static void qom_set_u32(QTestState *s, const char *prop, unsigned value)
{
    qtest_qmp_assert_success(s, "{'execute': 'qom-set', 'arguments': "
                             "{'path': '" NC_PATH "', 'property': %s, "
                             "'value': %u}}", prop, value);
}

/*
 * QEMU's device life cycle: unrealize undoes realize (the TCG hook, the
 * tag tables, the fabric, the timers), a realize that fails (a fabric
 * that cannot listen) undoes what it did, and a realize after both has
 * a working device whose tags TCG checks again.
 */
static void test_unrealize_realize(void)
{
    g_autofree char *image = tq_guest_image();
    QTestState *s = start_tcg(image);
    QDict *rsp;

    qtest_qom_set_bool(s, NC_PATH, "realized", false);
    qom_set_u32(s, "num-nodes", 2);
    qom_set_str(s, "fabric", "unix:/nonexistent/tempest");
    rsp = qtest_qmp_assert_failure_ref(s, "{'execute': 'qom-set', "
                                       "'arguments': {'path': '" NC_PATH
                                       "', 'property': 'realized', "
                                       "'value': true}}");
    g_assert(strstr(qdict_get_str(rsp, "desc"), "cannot listen"));
    qobject_unref(rsp);
    qom_set_u32(s, "num-nodes", 1);
    qom_set_str(s, "fabric", "");
    qtest_qom_set_bool(s, NC_PATH, "realized", true);

    g_assert_cmphex(qtest_readl(s, NC(TEMPEST_NC_MAGIC)), ==,
                    TEMPEST_NC_MAGIC_VALUE);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_GET,
                                 TEMPEST_TAGMEM_BASE + BLK, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT)), ==,
                     TEMPEST_TAG_WRITABLE);
    run_guest(s);
    qtest_quit(s);
    tq_remove_image(image);
}

/* Without tagged memory the commands say the address is not there. */
static void test_no_tagmem(void)
{
    QTestState *s = qtest_init("-M tempest,tagmem=0 -m 64M");

    g_assert_cmphex(qtest_readq(s, NC(TEMPEST_NC_TAGMEM_SIZE_LO)), ==, 0);
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_TAG_SET, TEMPEST_TAGMEM_BASE,
                                 BLK, TEMPEST_TAG_INVALID), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CMD_REASON)), ==,
                     TEMPEST_CMD_E_BAD_ADDR);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/tags/set-and-get", test_set_and_get);
    qtest_add_func("/tempest/tags/bad-commands", test_bad_commands);
    qtest_add_func("/tempest/tags/upgrade-register", test_upgrade_register);
    qtest_add_func("/tempest/tags/alias", test_alias);
    qtest_add_func("/tempest/tags/device-access", test_device_access);
    qtest_add_func("/tempest/tags/unrealize-realize", test_unrealize_realize);
    qtest_add_func("/tempest/tags/no-tagmem", test_no_tagmem);

    return g_test_run();
}
