/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internals shared by the files of the tempest bare-metal runtime.
 * Private to guest/rt: programs use tempest/rt.h.
 */
#ifndef TEMPEST_RT_INTERNAL_H
#define TEMPEST_RT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tempest/tempest-hw.h"
#include "tempest/rt.h"
#include "rt-layout.h"

_Static_assert(RT_LOAD_ADDR == TEMPEST_LOAD_ADDR,
               "rt-layout.h and tempest-hw.h disagree on the load address");
_Static_assert(RT_RAM_BASE == TEMPEST_RAM_BASE && RT_RAM_MAX == TEMPEST_RAM_MAX,
               "rt-layout.h and tempest-hw.h disagree on RAM");
_Static_assert(RT_MAX_CPUS == TEMPEST_MAX_CPUS,
               "rt-layout.h and tempest-hw.h disagree on the CPU count");

#define RT_READ_SYSREG(name) ({                                     \
    uint64_t rt_v_;                                                 \
    __asm__ volatile("mrs %0, " #name : "=r"(rt_v_));               \
    rt_v_;                                                          \
})

#define RT_WRITE_SYSREG(name, v) do {                               \
    uint64_t rt_v_ = (v);                                           \
    __asm__ volatile("msr " #name ", %0" : : "r"(rt_v_) : "memory"); \
} while (0)

/* What the boot CPU learns from the node controller before main(). */
struct rt_boot_info {
    unsigned node_id;
    unsigned num_nodes;
    unsigned num_cpus;
    uint64_t ram_size;
    uint64_t tagmem_size;   /* 0: no tagged memory */
};
extern struct rt_boot_info rt_info;

/* Linker script symbols (tempest.ld.S). */
extern char __exc_stacks_start[];
extern char __stacks_start[];
extern char __stacks_end[];
extern char __tls_blocks_start[];
extern char __rt_tls_block_size[];
extern char __pt_pool_start[];
extern char __pt_pool_end[];
extern char __heap_start[];
extern char __image_start[];
extern char __text_end[];

/* ---- device registers -------------------------------------------- */
static inline uint32_t rt_mmio_read32(uint64_t addr)
{
    return *(volatile uint32_t *)(uintptr_t)addr; /* volatile: MMIO */
}

static inline void rt_mmio_write32(uint64_t addr, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)addr = v; /* volatile: MMIO */
}

/* Node controller, raw: no offset checks. */
static inline uint32_t rt_nc_reg(unsigned off)
{
    return rt_mmio_read32(TEMPEST_NC_BASE + off);
}

static inline void rt_nc_reg_write(unsigned off, uint32_t v)
{
    rt_mmio_write32(TEMPEST_NC_BASE + off, v);
}

/* Writes NC EXIT and stops this CPU, doing nothing else. */
void rt_hard_exit(int status) __attribute__((noreturn));

/* ---- time (generic timer, any CPU) ------------------------------- */
static inline uint64_t rt_ticks(void)
{
    __asm__ volatile("isb" : : : "memory");
    return RT_READ_SYSREG(cntpct_el0);
}

static inline uint64_t rt_ticks_per_ms(void)
{
    uint64_t f = RT_READ_SYSREG(cntfrq_el0);

    return f >= 1000 ? f / 1000 : 1;
}

/* ---- console (console.c) ----------------------------------------- */
void rt_console_init(void);
/* Interrupt nesting depth of the calling CPU (0 or 1), for the console. */
unsigned rt_irq_depth_self(void);
/* Writes @len bytes to the UART, no lock taken. */
void rt_uart_write_raw(const char *s, size_t len);
/*
 * Takes the UART output lock; recursive for the CPU holding it.  With
 * @timeout_ms 0 waits forever, otherwise gives up after about that long
 * and returns false (the caller may then write anyway).
 */
bool rt_console_lock(unsigned timeout_ms);
void rt_console_unlock(void);
/*
 * Writes the calling CPU's pending stdout line.  @locked: take the UART
 * lock (normal use); false in the crash path, which holds it already or
 * has given up on it.
 */
void rt_console_flush_self(bool locked);

/* ---- heap (heap.c) ----------------------------------------------- */
void rt_heap_init(void);

/* ---- GIC wake-ups (gic.c) ---------------------------------------- */
void rt_gic_init(void);
void rt_gic_cpu_init(unsigned cpu);
/* Wakes @cpu from rt_wait_event(). */
void rt_wake_cpu(unsigned cpu);
/* Wakes every other CPU from rt_wait_event(). */
void rt_wake_others(void);
/*
 * Sleeps until another CPU calls rt_wake_cpu()/rt_wake_others() (or
 * returns early, spuriously): re-check the condition after it.
 */
void rt_wait_event(void);

/* Called by the IRQ vector (vectors.S): dispatches what is pending. */
void rt_irq_handle(void);

/* ---- CPUs (smp.c) ------------------------------------------------ */
void rt_smp_start(void);
void rt_secondary_main(unsigned cpu) __attribute__((noreturn));

/* ---- crash reporter (crash.c), called by vectors.S --------------- */
struct rt_frame {
    uint64_t x[31];
    uint64_t sp;
    uint64_t elr;
    uint64_t spsr;
    uint64_t esr;
    uint64_t far;
};
_Static_assert(sizeof(struct rt_frame) == RT_FRAME_SIZE,
               "struct rt_frame does not match RT_FRAME_SIZE");
void rt_crash(unsigned vector, struct rt_frame *f) __attribute__((noreturn));

/* ---- Tempest faults (fault.c), called by vectors.S --------------- */
struct rt_sync_frame {
    struct rt_frame base;
    uint64_t fpsr;
    uint64_t fpcr;
    uint64_t q[32][2];
};
_Static_assert(sizeof(struct rt_sync_frame) == RT_SYNC_FRAME_SIZE,
               "struct rt_sync_frame does not match RT_SYNC_FRAME_SIZE");
/*
 * A synchronous exception from the program: returns if it was a Tempest
 * fault that has been dealt with (the instruction is retried), otherwise
 * reports the crash and ends the node.
 */
void rt_sync_exception(struct rt_sync_frame *f);
/* Calls fn(arg) on the stack @sp (vectors.S). */
uint64_t rt_call_on_stack(uint64_t (*fn)(void *), void *arg, uintptr_t sp);

/* ---- fabric (fabric.c) -------------------------------------------- */
/* Waits until the fabric is READY; ends the node if it cannot be. */
void rt_fabric_wait(void);

/* ---- boot (init.c), called by start.S ---------------------------- */
void rt_boot_main(void) __attribute__((noreturn));
/* The secondary CPUs' entry point in start.S. */
void rt_secondary_entry(void);

/* The program's, and picolibc's constructor runner. */
int main(int argc, char **argv);
void __libc_init_array(void);

/* ---- cpu id ------------------------------------------------------ */
/*
 * TPIDR_EL1 holds the top of this CPU's exception stack (start.S sets it,
 * vectors.S uses it), which also gives the CPU index.
 */
static inline unsigned rt_cpu_index(void)
{
    uint64_t top = RT_READ_SYSREG(tpidr_el1);

    return (unsigned)((top - (uintptr_t)__exc_stacks_start) /
                      RT_EXC_STACK_SIZE) - 1;
}

/* ---- simple spinlock (no recursion, MMU must be on) -------------- */
static inline void rt_spin_lock(uint32_t *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            __asm__ volatile("yield");
        }
    }
}

static inline void rt_spin_unlock(uint32_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif /* TEMPEST_RT_INTERNAL_H */
