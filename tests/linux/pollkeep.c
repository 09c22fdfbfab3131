/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A Linux process's rt_cpu_sleep() leaves the node controller's POLL as
 * its caller set it when all it does is run an interrupt that is already
 * pending (docs/linux.rst, "The libraries on Linux": libtempest's spin
 * calls it that way while it polls; a POLL = 0 written behind its back
 * made peers ring the doorbell instead of setting the poll hint).
 *
 * Writes POLL = 1 as a polling library does, raises a software SPI,
 * lets rt_cpu_sleep(0) run its handler, then writes IRQ_ACK = 0 (acks
 * nothing) as a marker and POLL = 0.  The case reads the node
 * controller's register writes from QEMU's trace: between POLL = 1 and
 * the marker there must be no POLL write.  Exits 0 if the handler ran.
 */
#include <stdio.h>

#include "tempest/rt.h"
#include "tempest/tempest-hw.h"

#define SOFT_INTID  (32 + TEMPEST_NC_SPI + 1)   /* not the device's */

static volatile int ran;        /* volatile: set by the handler */

static void on_soft(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    ran++;
}

int main(void)
{
    uint64_t flags;

    if (!(rt_nc_read(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_POLL)) {
        printf("pollkeep: the node controller has no POLL register\n");
        return 1;
    }
    if (rt_irq_register(SOFT_INTID, on_soft, NULL) != 0 ||
        rt_irq_enable_spi(SOFT_INTID, 0, false) != 0) {
        printf("pollkeep: cannot take interrupt %u\n", SOFT_INTID);
        return 1;
    }
    flags = rt_irq_save();
    rt_nc_write(TEMPEST_NC_POLL, 1);
    rt_irq_raise(SOFT_INTID);
    rt_cpu_sleep(0);            /* pending: runs the handler, returns */
    rt_nc_write(TEMPEST_NC_IRQ_ACK, 0);
    rt_nc_write(TEMPEST_NC_POLL, 0);
    rt_irq_restore(flags);
    printf("pollkeep: handler ran %d time(s)\n", ran);
    return ran == 1 ? 0 : 1;
}
