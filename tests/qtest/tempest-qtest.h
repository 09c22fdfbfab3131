/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the Tempest qtests: the node controller's command bank
 * (docs/node-controller.rst) and waits for values that the fabric changes
 * in real time, on QEMU's main loop, while the test waits.
 */
#ifndef TEMPEST_QTEST_H
#define TEMPEST_QTEST_H

#include "qemu/bswap.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "standard-headers/tempest/tempest-hw.h"

#define NC(off)         (TEMPEST_NC_BASE + (off))
#define RAM(off)        (TEMPEST_RAM_BASE + (off))
#define TQ_WAIT_US      (20 * G_USEC_PER_SEC)

/* Describe a command with six arguments and commit it: COMMIT's answer. */
/* The command bank staged with @op and its arguments, not committed. */
static inline void tq_stage(QTestState *s, uint32_t op, uint64_t a0,
                            uint64_t a1, uint64_t a2, uint64_t a3,
                            uint64_t a4, uint64_t a5)
{
    const uint64_t args[] = { a0, a1, a2, a3, a4, a5 };

    for (int i = 0; i < TEMPEST_NC_CMD_NUM_ARGS; i++) {
        qtest_writeq(s, NC(TEMPEST_NC_CMD_ARG(i)), args[i]);
    }
    qtest_writel(s, NC(TEMPEST_NC_CMD_OP), op);
}

static inline uint32_t tq_command(QTestState *s, uint32_t op, uint64_t a0,
                                  uint64_t a1, uint64_t a2, uint64_t a3,
                                  uint64_t a4, uint64_t a5)
{
    tq_stage(s, op, a0, a1, a2, a3, a4, a5);
    return qtest_readl(s, NC(TEMPEST_NC_CMD_COMMIT));
}

/* The same with three arguments (the others 0). */
static inline uint32_t tq_command3(QTestState *s, uint32_t op, uint64_t a0,
                                   uint64_t a1, uint64_t a2)
{
    return tq_command(s, op, a0, a1, a2, 0, 0, 0);
}

/*
 * Read the 32-bit word at addr until (value & mask) == want or TQ_WAIT_US
 * have passed; returns the last value read.
 */
static inline uint32_t tq_wait_mem32(QTestState *s, uint64_t addr,
                                     uint32_t mask, uint32_t want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t v;

    while (((v = qtest_readl(s, addr)) & mask) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    return v;
}

/* The same for a node controller register. */
static inline uint32_t tq_wait_reg(QTestState *s, uint64_t off, uint32_t mask,
                                   uint32_t want)
{
    return tq_wait_mem32(s, NC(off), mask, want);
}

/*
 * Wait until the collective is no longer pending (or TQ_WAIT_US have
 * passed); returns COLL_STATUS.
 */
static inline uint32_t tq_coll_wait(QTestState *s)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t st;

    while ((st = qtest_readl(s, NC(TEMPEST_NC_COLL_STATUS))) ==
           TEMPEST_COLL_ST_PENDING && g_get_monotonic_time() < end) {
        g_usleep(200);
    }
    return st;
}

/* Where the guest of tq_guest_image() stores 1. */
#define TQ_GUEST_MARK   RAM(0xf00000)

/*
 * A raw image (the board's boot stub jumps to its first word, at EL1 with
 * the MMU off): set VBAR_EL1 to a table of 'b .', load from the unchecked
 * window's first block, store 1 at TQ_GUEST_MARK, then load from the
 * checked window's first block and spin.  Returns the image's path.
 */
static inline char *tq_guest_image(void)
{
    static const uint32_t code[] = {
        0x10004003,     /* adr   x3, . + 0x800 (the vectors) */
        0xd518c003,     /* msr   vbar_el1, x3 */
        0xd5033fdf,     /* isb */
        0xd2c00405,     /* movz  x5, #0x20, lsl #32 (TEMPEST_TAGMEM_ALIAS) */
        0xf94000a4,     /* ldr   x4, [x5] */
        0xd2a81e06,     /* movz  x6, #0x40f0, lsl #16 (TQ_GUEST_MARK) */
        0xd2800027,     /* movz  x7, #1 */
        0xf90000c7,     /* str   x7, [x6] */
        0xd2c00201,     /* movz  x1, #0x10, lsl #32 (TEMPEST_TAGMEM_BASE) */
        0xf9400022,     /* ldr   x2, [x1] */
        0x14000000,     /* b     . */
    };
    uint32_t image[0x1000 / 4];
    g_autofree char *dir = g_dir_make_tmp("tempest-tags-XXXXXX", NULL);
    char *path = g_strdup_printf("%s/guest.bin", dir);

    for (int i = 0; i < ARRAY_SIZE(image); i++) {
        image[i] = cpu_to_le32(i < ARRAY_SIZE(code) ? code[i] :
                               0x14000000);     /* b . */
    }
    g_assert(g_file_set_contents(path, (char *)image, sizeof(image), NULL));
    return path;
}

/* Remove tq_guest_image()'s image and its directory. */
static inline void tq_remove_image(char *path)
{
    g_autofree char *dir = g_path_get_dirname(path);

    unlink(path);
    rmdir(dir);
}

/* The string @key of the "return" of QMP command @cmd, or "none". */
static inline char *tq_qmp_str(QTestState *s, const char *cmd,
                               const char *key)
{
    QDict *rsp = qtest_qmp(s, "{'execute': %s}", cmd);
    QDict *ret = qdict_get_qdict(rsp, "return");
    const char *v = ret ? qdict_get_try_str(ret, key) : NULL;
    char *copy = g_strdup(v ? v : "none");

    qobject_unref(rsp);
    return copy;
}

/*
 * Poll query-migrate until the migration has ended (completed, failed or
 * cancelled; or the wait ran out), and return its status.  QEMU reports
 * the end before its migration thread puts the run state back: until
 * then the VM is still "finish-migrate" and 'cont' is refused ("Migration
 * is not finalized yet"), so this also waits for that.  (QEMU's cleanup
 * of the migration is only scheduled then: a 'migrate' sent at once
 * could still find it; every caller sends other commands first.)
 */
static inline char *tq_migration_end(QTestState *s)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    char *status;

    for (;;) {
        status = tq_qmp_str(s, "query-migrate", "status");
        if (!strcmp(status, "completed") || !strcmp(status, "failed") ||
            !strcmp(status, "cancelled") || g_get_monotonic_time() > end) {
            break;
        }
        g_free(status);
        g_usleep(1000);
    }
    while (g_get_monotonic_time() < end) {
        g_autofree char *run = tq_qmp_str(s, "query-status", "status");

        if (strcmp(run, "finish-migrate")) {
            break;
        }
        g_usleep(1000);
    }
    return status;
}

/* A path for a saved VM state, in a new directory named after @prefix. */
static inline char *tq_state_file(const char *prefix)
{
    g_autofree char *tmpl = g_strdup_printf("%s-XXXXXX", prefix);
    g_autofree char *dir = g_dir_make_tmp(tmpl, NULL);

    g_assert(dir);
    return g_strdup_printf("%s/state", dir);
}

/* Remove tq_state_file()'s file and directory, and free @path. */
static inline void tq_remove_state(char *path)
{
    tq_remove_image(path);
    g_free(path);
}

#endif /* TEMPEST_QTEST_H */
