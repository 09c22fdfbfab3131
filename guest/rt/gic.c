/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GICv3: CPU wake-ups, interrupt handlers, sleeping.
 *
 * Wake-ups: an idle CPU sleeps in WFI with interrupts masked (PSTATE.I):
 * a pending interrupt still wakes it, no exception is taken, and the
 * sleeper acknowledges and dispatches what is pending itself.  Under TCG
 * this lets idle vCPUs really sleep, where WFE would spin.  If the GIC does
 * not look like a GICv3 the runtime falls back to SEV/WFE (and has no
 * interrupt handlers).
 *
 * Interrupts: every interrupt is group 1 (the GIC has no security
 * extensions), priority IRQ_PRIORITY, and acknowledged through
 * ICC_IAR1_EL1 / ICC_EOIR1_EL1 (EOImode 0: the EOI also deactivates).
 * Handlers registered with rt_irq_register() run either from the IRQ
 * vector (when the program has unmasked IRQs on that CPU) or from a
 * masked sleep (rt_cpu_sleep(), rt_wait_event()); in both cases with IRQs
 * masked, never nested, rt_in_irq() true.
 *
 * Runtime-owned interrupts: SGI WAKE_SGI (rt_wake_cpu) and the EL1
 * physical timer's PPI (rt_cpu_sleep's time limit).
 */
#include "rt-internal.h"

#define GICD_CTLR           0x0000
#define GICD_IGROUPR(n)     (0x0080 + 4 * (n))
#define GICD_ISENABLER(n)   (0x0100 + 4 * (n))
#define GICD_ICENABLER(n)   (0x0180 + 4 * (n))
#define GICD_ISPENDR(n)     (0x0200 + 4 * (n))
#define GICD_IPRIORITYR(n)  (0x0400 + 4 * (n))
#define GICD_ICFGR(n)       (0x0C00 + 4 * (n))
#define GICD_IROUTER(n)     (0x6000 + 8 * (n))
#define GICD_PIDR2          0xffe8
#define GICD_CTLR_GRP1      (1U << 1)
#define GICD_CTLR_ARE       (1U << 4)
#define GICD_CTLR_RWP       (1U << 31)

#define GICR_STRIDE         0x20000
#define GICR_WAKER          0x0014
#define GICR_SGI_BASE       0x10000
#define GICR_IGROUPR0       (GICR_SGI_BASE + 0x0080)
#define GICR_ISENABLER0     (GICR_SGI_BASE + 0x0100)
#define GICR_IPRIORITYR(n)  (GICR_SGI_BASE + 0x0400 + 4 * (n))
#define WAKER_SLEEP         (1U << 1)
#define WAKER_ASLEEP        (1U << 2)

#define WAKE_SGI            0
#define TIMER_PPI           30          /* EL1 physical timer, non-secure */
#define IRQ_PRIORITY        0x80
#define SGI1R_INTID_SHIFT   24
#define SGI1R_IRM           (1ULL << 40)
#define INTID_SPURIOUS      1020
#define FIRST_SPI           32

#define CNTP_CTL_ENABLE     1ULL

#define DAIF_I              (1ULL << 7)

#define TIMEOUT_MS          100

struct handler {
    rt_irq_fn fn;
    void *arg;
};

static bool gic_ok;
static struct handler handlers[RT_NUM_INTIDS];
static uint32_t irq_depth[RT_MAX_CPUS];
static uint32_t dist_lock;

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

static void set_priority(uint64_t reg_base, unsigned intid)
{
    unsigned shift = (intid % 4) * 8;

    reg_update(reg_base + 4 * (intid / 4), 0xffU << shift,
               IRQ_PRIORITY << shift);
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

    if (!gic_ok) {
        return;
    }
    reg_update(rd + GICR_WAKER, WAKER_SLEEP, 0);
    wait_clear(rd + GICR_WAKER, WAKER_ASLEEP);
    reg_update(rd + GICR_IGROUPR0, 0, (1U << WAKE_SGI) | (1U << TIMER_PPI));
    set_priority(rd + GICR_IPRIORITYR(0), WAKE_SGI);
    set_priority(rd + GICR_IPRIORITYR(0), TIMER_PPI);
    RT_WRITE_SYSREG(cntp_ctl_el0, 0);
    rt_mmio_write32(rd + GICR_ISENABLER0,
                    (1U << WAKE_SGI) | (1U << TIMER_PPI));

    RT_WRITE_SYSREG(icc_sre_el1, RT_READ_SYSREG(icc_sre_el1) | 1);
    __asm__ volatile("isb");
    RT_WRITE_SYSREG(icc_pmr_el1, 0xff);
    RT_WRITE_SYSREG(icc_igrpen1_el1, 1);
    __asm__ volatile("isb");
}

/* ---- dispatch ----------------------------------------------------- */

static void unexpected(unsigned intid)
{
    static const char hex[] = "0123456789abcdef";
    char msg[] = "tempest-rt: cpu ? : unexpected interrupt 0x000, disabled\n";
    char *p = msg + sizeof("tempest-rt: cpu ? : unexpected interrupt 0x") -
              1;

    msg[16] = (char)('0' + rt_cpu_index() % 10);
    p[0] = hex[(intid >> 8) & 0xf];
    p[1] = hex[(intid >> 4) & 0xf];
    p[2] = hex[intid & 0xf];
    if (intid >= FIRST_SPI) {
        rt_mmio_write32(TEMPEST_GIC_DIST_BASE + GICD_ICENABLER(intid / 32),
                        1U << (intid % 32));
    }
    rt_puts_raw(msg);
}

/* Acknowledges and handles every pending interrupt; IRQs masked. */
static void dispatch_pending(void)
{
    unsigned cpu = rt_cpu_index();
    struct handler h;
    uint64_t iar;
    unsigned intid;

    irq_depth[cpu]++;
    for (;;) {
        /*
         * ISR_EL1 first: QEMU reads it without its big lock, where each
         * ICC_IAR1 read takes the lock and updates the GIC; most sleeps
         * end with nothing (more) pending.
         */
        if (!rt_irq_pending()) {
            break;
        }
        iar = RT_READ_SYSREG(icc_iar1_el1);
        intid = iar & 0xffffff;
        if (intid >= INTID_SPURIOUS) {
            break;
        }
        if (intid == TIMER_PPI) {
            RT_WRITE_SYSREG(cntp_ctl_el0, 0);
            __asm__ volatile("isb");
        } else if (intid != WAKE_SGI) {
            h = handlers[intid < RT_NUM_INTIDS ? intid : 0];
            if (intid < RT_NUM_INTIDS && h.fn) {
                h.fn(intid, h.arg);
            } else {
                unexpected(intid);
            }
        }
        RT_WRITE_SYSREG(icc_eoir1_el1, iar);
    }
    __asm__ volatile("isb" : : : "memory");
    irq_depth[cpu]--;
}

/* Called by the IRQ vector (vectors.S). */
void rt_irq_handle(void)
{
    dispatch_pending();
}

RT_HOT_TX bool rt_in_irq(void)
{
    return irq_depth[rt_cpu_index()] != 0;
}

unsigned rt_irq_depth_self(void)
{
    return irq_depth[rt_cpu_index()];
}

int rt_irq_register(unsigned intid, rt_irq_fn fn, void *arg)
{
    uint64_t flags;

    if (!gic_ok || intid >= RT_NUM_INTIDS || intid == WAKE_SGI ||
        intid == TIMER_PPI) {
        return -1;
    }
    flags = rt_irq_save();
    rt_spin_lock(&dist_lock);
    handlers[intid].fn = NULL;
    handlers[intid].arg = arg;
    __atomic_store_n(&handlers[intid].fn, fn, __ATOMIC_RELEASE);
    rt_spin_unlock(&dist_lock);
    rt_irq_restore(flags);
    return 0;
}

int rt_irq_enable_spi(unsigned intid, unsigned cpu, bool edge)
{
    uint64_t d = TEMPEST_GIC_DIST_BASE;
    unsigned n = intid / 32, bit = intid % 32;
    unsigned cfg_shift = (intid % 16) * 2 + 1;
    uint64_t flags;

    if (!gic_ok || intid < FIRST_SPI || intid >= RT_NUM_INTIDS ||
        cpu >= rt_info.num_cpus) {
        return -1;
    }
    flags = rt_irq_save();
    rt_spin_lock(&dist_lock);
    rt_mmio_write32(d + GICD_ICENABLER(n), 1U << bit);
    wait_clear(d + GICD_CTLR, GICD_CTLR_RWP);
    reg_update(d + GICD_IGROUPR(n), 0, 1U << bit);
    set_priority(d + GICD_IPRIORITYR(0), intid);
    reg_update(d + GICD_ICFGR(intid / 16), 1U << cfg_shift,
               edge ? 1U << cfg_shift : 0);
    /* Aff0 = cpu index, Aff1..3 = 0, Interrupt_Routing_Mode 0. */
    rt_mmio_write32(d + GICD_IROUTER(intid), cpu);
    rt_mmio_write32(d + GICD_IROUTER(intid) + 4, 0);
    rt_mmio_write32(d + GICD_ISENABLER(n), 1U << bit);
    rt_spin_unlock(&dist_lock);
    rt_irq_restore(flags);
    return 0;
}

int rt_irq_disable_spi(unsigned intid)
{
    uint64_t d = TEMPEST_GIC_DIST_BASE;

    if (!gic_ok || intid < FIRST_SPI || intid >= RT_NUM_INTIDS) {
        return -1;
    }
    rt_mmio_write32(d + GICD_ICENABLER(intid / 32), 1U << (intid % 32));
    wait_clear(d + GICD_CTLR, GICD_CTLR_RWP);
    return 0;
}

int rt_irq_raise(unsigned intid)
{
    if (!gic_ok || intid < FIRST_SPI || intid >= RT_NUM_INTIDS) {
        return -1;
    }
    /* The caller's stores are visible to the handler. */
    __asm__ volatile("dsb ish" : : : "memory");
    rt_mmio_write32(TEMPEST_GIC_DIST_BASE + GICD_ISPENDR(intid / 32),
                    1U << (intid % 32));
    return 0;
}

uint64_t rt_irq_save(void)
{
    uint64_t daif = RT_READ_SYSREG(daif);

    __asm__ volatile("msr daifset, #2" : : : "memory");
    return daif;
}

void rt_irq_restore(uint64_t flags)
{
    if (!(flags & DAIF_I)) {
        __asm__ volatile("msr daifclr, #2" : : : "memory");
    }
}

void rt_irq_unmask(void)
{
    __asm__ volatile("msr daifclr, #2" : : : "memory");
}

bool rt_irq_masked(void)
{
    return RT_READ_SYSREG(daif) & DAIF_I;
}

bool rt_irq_pending(void)
{
    return RT_READ_SYSREG(isr_el1) & (1U << 7);     /* ISR_EL1.I */
}

void rt_irq_run_pending(void)
{
    uint64_t flags;

    if (!gic_ok || irq_depth[rt_cpu_index()] || !rt_irq_pending()) {
        return;
    }
    flags = rt_irq_save();
    dispatch_pending();
    rt_irq_restore(flags);
}

/* ---- wake-ups and sleeping --------------------------------------- */

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

/*
 * A wake-up is an interrupt only for a CPU that sleeps: one that runs (a
 * protocol thread polling, a faulting CPU spinning for its resume) finds
 * it in woken[] at its next sleep, which then returns at once, and is not
 * interrupted (an IRQ costs an exception with every register saved, and
 * two accesses to the GIC).  Each side stores its flag, a full barrier
 * (DMB ISH: STLR then LDAR alone is not enough under TCG on an x86 host,
 * whose stores may pass later loads), then reads the other's: either the
 * waker sees the sleeper or the sleeper sees the wake-up.
 */
static uint8_t sleeping[RT_MAX_CPUS];
static uint8_t woken[RT_MAX_CPUS];

/* False if a wake-up came already: then do not WFI.  IRQs masked. */
static bool sleep_begin(unsigned me)
{
    __atomic_store_n(&sleeping[me], 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&woken[me], 0, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&sleeping[me], 0, __ATOMIC_RELAXED);
        return false;
    }
    return true;
}

static void sleep_end(unsigned me)
{
    __atomic_store_n(&sleeping[me], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&woken[me], 0, __ATOMIC_RELAXED);
}

void rt_cpu_wake(unsigned cpu)
{
    if (cpu < rt_info.num_cpus && cpu != rt_cpu_index()) {
        __atomic_store_n(&woken[cpu], 1, __ATOMIC_SEQ_CST);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sleeping[cpu], __ATOMIC_SEQ_CST)) {
            rt_wake_cpu(cpu);
        }
    }
}

void rt_wait_event(void)
{
    uint64_t flags;
    unsigned me = rt_cpu_index();

    if (!gic_ok) {
        __asm__ volatile("wfe" : : : "memory");
        return;
    }
    flags = rt_irq_save();
    if (sleep_begin(me)) {
        __asm__ volatile("wfi" : : : "memory");
    }
    sleep_end(me);
    dispatch_pending();
    rt_irq_restore(flags);
}

void rt_cpu_sleep(uint64_t max_us)
{
    rt_cpu_sleep_ack(max_us, NULL);
}

void rt_cpu_idle(uint64_t max_us)
{
    rt_cpu_sleep_ack(max_us, NULL);
}

unsigned rt_cpu_sleep_spin_us(void)
{
    return 0;       /* WFI: no spin before it */
}

/*
 * rt_cpu_sleep_ack() where no interrupt can wake the CPU: without a GIC,
 * WFE; inside a handler nothing of the handler's priority can be
 * signalled, so WFI would not wake: spin for the time instead.
 */
static void sleep_without_irq(uint64_t max_us)
{
    uint64_t freq, cval;

    if (!gic_ok) {
        __asm__ volatile("wfe" : : : "memory");
        return;
    }
    freq = RT_READ_SYSREG(cntfrq_el0);
    cval = rt_ticks() + ((max_us ? max_us : 10) * (freq / 1000)) / 1000;
    while (rt_ticks() < cval) {
        __asm__ volatile("yield");
    }
}

void rt_cpu_sleep_ack(uint64_t max_us, void (*ack)(void))
{
    uint64_t flags, freq, cval;

    if (!gic_ok || irq_depth[rt_cpu_index()]) {
        sleep_without_irq(max_us);
        if (ack) {
            ack();
        }
        return;
    }
    flags = rt_irq_save();
    if (max_us) {
        freq = RT_READ_SYSREG(cntfrq_el0);
        cval = rt_ticks() + (max_us * (freq / 1000)) / 1000 + 1;
        RT_WRITE_SYSREG(cntp_cval_el0, cval);
        RT_WRITE_SYSREG(cntp_ctl_el0, CNTP_CTL_ENABLE);
        __asm__ volatile("isb" : : : "memory");
    }
    if (sleep_begin(rt_cpu_index())) {
        __asm__ volatile("wfi" : : : "memory");
    }
    sleep_end(rt_cpu_index());
    if (ack) {
        ack();
    }
    dispatch_pending();
    if (max_us) {
        RT_WRITE_SYSREG(cntp_ctl_el0, 0);
        __asm__ volatile("isb" : : : "memory");
    }
    rt_irq_restore(flags);
}

uint64_t rt_time_ns(void)
{
    uint64_t t = rt_ticks();
    uint64_t freq = RT_READ_SYSREG(cntfrq_el0);

    if (freq == 0) {
        return 0;
    }
    return (t / freq) * 1000000000ULL + (t % freq) * 1000000000ULL / freq;
}
