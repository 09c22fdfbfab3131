/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the Tempest qtests: the node controller's command bank
 * (docs/node-controller.rst) and waits for values that the fabric changes
 * in real time, on QEMU's main loop, while the test waits.
 */
#ifndef TEMPEST_QTEST_H
#define TEMPEST_QTEST_H

#include "libqtest.h"
#include "standard-headers/tempest/tempest-hw.h"

#define NC(off)         (TEMPEST_NC_BASE + (off))
#define RAM(off)        (TEMPEST_RAM_BASE + (off))
#define TQ_WAIT_US      (20 * G_USEC_PER_SEC)

/* Describe a command with six arguments and commit it: COMMIT's answer. */
static inline uint32_t tq_command(QTestState *s, uint32_t op, uint64_t a0,
                                  uint64_t a1, uint64_t a2, uint64_t a3,
                                  uint64_t a4, uint64_t a5)
{
    const uint64_t args[] = { a0, a1, a2, a3, a4, a5 };

    for (int i = 0; i < TEMPEST_NC_CMD_NUM_ARGS; i++) {
        qtest_writeq(s, NC(TEMPEST_NC_CMD_ARG(i)), args[i]);
    }
    qtest_writel(s, NC(TEMPEST_NC_CMD_OP), op);
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

#endif /* TEMPEST_QTEST_H */
