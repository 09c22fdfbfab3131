/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CPU wake-ups through GICv3 software-generated interrupts.
 *
 * An idle CPU sleeps in WFI with interrupts masked (PSTATE.I): a pending
 * interrupt still wakes it, no exception is taken, and the sleeper
 * acknowledges the SGI itself.  Under TCG this lets idle vCPUs really
 * sleep, where WFE would spin.  If the GIC does not look like a GICv3 the
 * runtime falls back to SEV/WFE.
 */
#include "rt-internal.h"

#define GICD_CTLR           0x0000
#define GICD_PIDR2          0xffe8
#define GICD_CTLR_GRP1      (1U << 1)
#define GICD_CTLR_ARE       (1U << 4)
#define GICD_CTLR_RWP       (1U << 31)

#define GICR_STRIDE         0x20000
#define GICR_WAKER          0x0014
#define GICR_SGI_BASE       0x10000
#define GICR_IGROUPR0       (GICR_SGI_BASE + 0x0080)
#define GICR_ISENABLER0     (GICR_SGI_BASE + 0x0100)
#define GICR_IPRIORITYR0    (GICR_SGI_BASE + 0x0400)
#define WAKER_SLEEP         (1U << 1)
#define WAKER_ASLEEP        (1U << 2)

#define WAKE_SGI            0
#define WAKE_PRIORITY       0x80
#define SGI1R_INTID_SHIFT   24
#define SGI1R_IRM           (1ULL << 40)
#define INTID_SPURIOUS      1020

#define TIMEOUT_MS          100

static bool gic_ok;

static void reg_update(uint64_t addr, uint32_t clear, uint32_t set)
{
    rt_mmio_write32(addr, (rt_mmio_read32(addr) & ~clear) | set);
}

static void wait_clear(uint64_t addr, uint32_t bits)
{
    uint64_t deadline = rt_ticks() + TIMEOUT_MS * rt_ticks_per_ms();

    while ((rt_mmio_read32(addr) & bits) && rt_ticks() < deadline) {
        /* wait */
    }
}

void rt_gic_init(void)
{
    uint64_t ctlr = TEMPEST_GIC_DIST_BASE + GICD_CTLR;
    uint32_t arch;

    arch = (rt_mmio_read32(TEMPEST_GIC_DIST_BASE + GICD_PIDR2) >> 4) & 0xf;
    if (arch != 3 && arch != 4) {
        return;
    }
    reg_update(ctlr, 0, GICD_CTLR_ARE);
    wait_clear(ctlr, GICD_CTLR_RWP);
    reg_update(ctlr, 0, GICD_CTLR_GRP1);
    wait_clear(ctlr, GICD_CTLR_RWP);
    gic_ok = true;
}

void rt_gic_cpu_init(unsigned cpu)
{
    uint64_t rd = TEMPEST_GIC_REDIST_BASE + (uint64_t)cpu * GICR_STRIDE;
    unsigned shift = (WAKE_SGI % 4) * 8;

    if (!gic_ok) {
        return;
    }
    reg_update(rd + GICR_WAKER, WAKER_SLEEP, 0);
    wait_clear(rd + GICR_WAKER, WAKER_ASLEEP);
    reg_update(rd + GICR_IGROUPR0, 0, 1U << WAKE_SGI);
    reg_update(rd + GICR_IPRIORITYR0 + WAKE_SGI / 4, 0xffU << shift,
               WAKE_PRIORITY << shift);
    rt_mmio_write32(rd + GICR_ISENABLER0, 1U << WAKE_SGI);

    RT_WRITE_SYSREG(icc_sre_el1, RT_READ_SYSREG(icc_sre_el1) | 1);
    __asm__ volatile("isb");
    RT_WRITE_SYSREG(icc_pmr_el1, 0xff);
    RT_WRITE_SYSREG(icc_igrpen1_el1, 1);
    __asm__ volatile("isb");
}

static void send_sgi(uint64_t targets)
{
    /* Make the caller's stores visible before the interrupt. */
    __asm__ volatile("dsb ish" : : : "memory");
    RT_WRITE_SYSREG(icc_sgi1r_el1,
                    ((uint64_t)WAKE_SGI << SGI1R_INTID_SHIFT) | targets);
    __asm__ volatile("isb");
}

void rt_wake_cpu(unsigned cpu)
{
    if (!gic_ok) {
        __asm__ volatile("dsb ish\n\tsev" : : : "memory");
        return;
    }
    /* Aff0 = cpu index (< 16), Aff1..3 = 0. */
    send_sgi(1ULL << cpu);
}

void rt_wake_others(void)
{
    if (!gic_ok) {
        __asm__ volatile("dsb ish\n\tsev" : : : "memory");
        return;
    }
    send_sgi(SGI1R_IRM);
}

void rt_wait_event(void)
{
    uint64_t intid;

    if (!gic_ok) {
        __asm__ volatile("wfe" : : : "memory");
        return;
    }
    __asm__ volatile("wfi" : : : "memory");
    intid = RT_READ_SYSREG(icc_iar1_el1) & 0xffffff;
    if (intid < INTID_SPURIOUS) {
        RT_WRITE_SYSREG(icc_eoir1_el1, intid);
    }
    __asm__ volatile("isb" : : : "memory");
}
