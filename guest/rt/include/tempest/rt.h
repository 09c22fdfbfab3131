/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tempest bare-metal runtime (libtempest-rt): the platform layer a
 * guest program of the tempest machine runs on.
 *
 * What the runtime does before main():
 *  - runs every CPU at EL1 with the MMU and caches on: devices (GIC, UART,
 *    node controller), RAM and the unchecked alias of tagged memory are
 *    identity-mapped, nothing else is (a NULL dereference faults, and so
 *    does any access to the Tempest user-managed segment until something
 *    maps it: see rt_segment_map());
 *  - gives each CPU a 64 KiB stack with an unmapped guard page below it,
 *    a separate exception stack, and its own thread-local storage (errno);
 *  - starts every configured secondary CPU with PSCI; each waits for work
 *    given to it with rt_cpu_call();
 *  - connects stdin/stdout/stderr to the UART and malloc() to the RAM left
 *    after the program image;
 *  - builds argc/argv from the node controller's command line (QEMU
 *    -append): words separated by whitespace, "..." keeps whitespace, a
 *    backslash escapes the next character.
 * exit(main(argc, argv)) follows.  Any exception on any CPU prints a crash
 * report starting with "*** CRASH" on the UART and ends the node with
 * status TEMPEST_EXIT_CRASH.
 *
 * stdout and stderr are line-buffered per CPU: a line printed by one CPU
 * is never mixed with another CPU's output.  A line without '\n' is
 * written by fflush(), when the buffer is full, at exit, and in a crash
 * report.  stdin returns the characters the UART has already received and
 * reports end-of-file when there are none.
 *
 * All calls may be made from any CPU once main() has started.  This header
 * includes tempest/tempest-hw.h (machine constants, NC register offsets).
 */
#ifndef TEMPEST_RT_H
#define TEMPEST_RT_H

#include <stdbool.h>
#include <stdint.h>

#include "tempest/tempest-hw.h"

/*
 * rt_node_id: returns this node's number in the cluster, 0..N-1 (the node
 * controller's NODE_ID register, read at boot).
 */
unsigned rt_node_id(void);

/*
 * rt_num_nodes: returns the number of nodes in the cluster, at least 1
 * (NUM_NODES register, read at boot).
 */
unsigned rt_num_nodes(void);

/*
 * rt_num_cpus: returns the number of vCPUs configured for this node
 * (NUM_CPUS register), 1..TEMPEST_MAX_CPUS.  Some of them may have failed
 * to start: see rt_cpus_online().
 */
unsigned rt_num_cpus(void);

/*
 * rt_cpus_online: returns the number of CPUs running the runtime, counted
 * by the CPUs themselves as they come up (the boot CPU included).  By the
 * time main() runs every secondary CPU that could be started is counted.
 */
unsigned rt_cpus_online(void);

/*
 * rt_cpu_id: returns the index of the calling CPU, 0..rt_num_cpus()-1
 * (0 is the boot CPU, which runs main()).
 */
unsigned rt_cpu_id(void);

/*
 * rt_cpu_call: makes the secondary CPU @cpu run fn(arg) and returns 0 at
 * once, without waiting for fn to start or finish.  Returns -1 and does
 * nothing if @fn is NULL, if @cpu is 0, the calling CPU, out of range or a
 * CPU that did not start, or if @cpu is still running an earlier call.
 * Wait for the call with rt_cpu_wait().  fn runs with its own stack and
 * TLS; when it returns the CPU waits for the next call.
 */
int rt_cpu_call(unsigned cpu, void (*fn)(void *), void *arg);

/*
 * rt_cpu_wait: waits until the call last given to @cpu with rt_cpu_call()
 * has returned.  Returns at once if @cpu is idle, out of range, not
 * started, or the calling CPU itself.
 */
void rt_cpu_wait(unsigned cpu);

/*
 * rt_nc_read: returns the 32-bit node controller register at byte offset
 * @off from TEMPEST_NC_BASE (TEMPEST_NC_* in tempest/tempest-hw.h).
 * Returns 0 without touching the device if @off is not 4-byte aligned or
 * not below TEMPEST_NC_SIZE.  Offsets inside the window that name no
 * register are passed to the device, which records the error.
 */
uint32_t rt_nc_read(unsigned off);

/*
 * rt_nc_write: writes @v to the 32-bit node controller register at @off.
 * Does nothing if @off is not 4-byte aligned or not below TEMPEST_NC_SIZE.
 * Writing TEMPEST_NC_EXIT ends the node at once: use rt_exit() for that.
 */
void rt_nc_write(unsigned off, uint32_t v);

/*
 * rt_exit: ends the node with exit status @status & 0xff, from any CPU,
 * without running atexit handlers (exit() runs them and then comes here).
 * The calling CPU's pending stdout line is written first.  Never returns.
 */
void rt_exit(int status) __attribute__((noreturn));

/*
 * rt_ram_base: returns the address of the memory the node controller
 * reaches (its RAM_BASE registers): TEMPEST_RAM_BASE on a bare-metal node,
 * TEMPEST_USERMEM_BASE for a Linux process.  Every buffer given to the
 * node controller lies in [rt_ram_base(), rt_ram_base() + rt_ram_size()).
 */
uint64_t rt_ram_base(void);

/*
 * rt_ram_size: returns the size in bytes of that memory (RAM_SIZE
 * registers, read at boot): this node's RAM on a bare-metal node.
 */
uint64_t rt_ram_size(void);

/*
 * rt_puts_raw: writes the string @s to the UART as it is (no newline is
 * added), bypassing stdio and its buffers.  It waits at most about a
 * second for another CPU's output to finish and then writes anyway, so it
 * is usable where stdio is not (before main, in a broken program).  Does
 * nothing if @s is NULL.
 */
void rt_puts_raw(const char *s);

/*
 * rt_time_ns: returns the time in nanoseconds since the node started,
 * from the generic timer (CNTPCT_EL0 / CNTFRQ_EL0); monotonic, the same
 * clock on every CPU of the node.
 */
uint64_t rt_time_ns(void);

/*
 * rt_text_contains: returns true if @pc is inside the program's code (the
 * text section of the ELF, which is at the same address on every node),
 * false otherwise (NULL included).
 */
bool rt_text_contains(const void *pc);

/* ---- the Tempest user-managed segment -------------------------------- */
/*
 * The user-managed segment (TEMPEST_SEGMENT_BASE, TEMPEST_SEGMENT_SIZE) is
 * not mapped at boot: a library maps its 4 KiB pages one at a time to page
 * frames of the node's tagged memory (TEMPEST_TAGMEM_BASE), whose 64-byte
 * blocks carry access tags the node controller checks on every load and
 * store.  The runtime identity-maps the same frames a second time at
 * TEMPEST_TAGMEM_ALIAS, where nothing is checked (normal memory, not
 * executable), for the library to move data regardless of tags.
 *
 * An access to the segment that is refused (a block access fault: the
 * data abort's status is a synchronous external abort) or finds no
 * mapping (a page fault: a translation fault) is passed to the hook
 * registered with rt_fault_register() instead of ending the node.
 */

/* Error returns of rt_segment_map() and rt_segment_unmap(). */
#define RT_SEG_ERR_ARG          (-1)    /* bad address, or not mapped */
#define RT_SEG_ERR_NOMEM        (-2)    /* no memory for a table */
#define RT_SEG_ERR_BUSY         (-3)    /* already mapped */

/*
 * rt_tagmem_size: returns the size in bytes of this node's tagged memory
 * (the node controller's TAGMEM_SIZE, read at boot), 0 if it has none
 * (no TEMPEST_NC_FEAT_TAGS).
 */
uint64_t rt_tagmem_size(void);

/*
 * rt_segment_map: maps the page at virtual address @va of the user-managed
 * segment to the tagged-memory page frame at physical address @pa
 * (normal write-back memory, read/write, not executable), visible to
 * every CPU of the node when it returns (TLB maintenance included).
 * Returns 0; RT_SEG_ERR_ARG if @va is not a page-aligned address of the
 * segment or @pa not a page-aligned frame inside tagged memory;
 * RT_SEG_ERR_BUSY if @va is already mapped; RT_SEG_ERR_NOMEM if no memory
 * is left for a translation table.  Safe from any CPU, in interrupt
 * handlers too.
 */
int rt_segment_map(uint64_t va, uint64_t pa);

/*
 * rt_segment_unmap: removes the mapping of the segment page at @va and
 * invalidates it in every CPU's TLB (TLBI VALE1IS, DSB ISH, ISB) before it
 * returns.  Returns 0, or RT_SEG_ERR_ARG if @va is not a page-aligned
 * address of the segment or is not mapped.
 */
int rt_segment_unmap(uint64_t va);

/* What faulted (struct rt_fault kind). */
#define RT_FAULT_BLOCK          1       /* refused by a block's access tag */
#define RT_FAULT_PAGE           2       /* no page mapped there */

/* A fault in the user-managed segment, as the runtime saw it. */
struct rt_fault {
    uint64_t va;            /* the faulting address (FAR) */
    uint64_t pc;            /* the faulting instruction (ELR) */
    unsigned cpu;           /* the CPU it happened on */
    int kind;               /* RT_FAULT_BLOCK or RT_FAULT_PAGE */
    bool is_write;          /* a store (or read-modify-write), not a load */
};

/*
 * A fault hook: called on the faulting CPU, with IRQs masked, on the
 * faulting code's own stack below its stack pointer.  It returns true when
 * the instruction may be retried (every register, FP/SIMD included, is
 * then restored as it was: the access is simply re-executed), false to
 * let the runtime print its crash report and end the node.  It may sleep
 * (rt_cpu_sleep, which dispatches interrupts that arrive meanwhile) and
 * run interrupt handlers, but a fault inside it is a crash.
 */
typedef bool (*rt_fault_fn)(const struct rt_fault *f);

/*
 * rt_fault_register: makes @fn the hook for faults in the user-managed
 * segment on every CPU (NULL: none, every such fault is a crash report)
 * and returns the previous hook.  Only data aborts at EL1 of the
 * program's code (SP_EL0) with a valid FAR in the segment reach it.
 */
rt_fault_fn rt_fault_register(rt_fault_fn fn);

/* ---- interrupts ------------------------------------------------------ */
/*
 * The runtime drives the GICv3: every interrupt is group 1, one priority,
 * acknowledged through ICC_IAR1_EL1 and ended through ICC_EOIR1_EL1 by the
 * runtime around the handler.  IRQs are masked on every CPU at boot; a
 * handler runs
 *   - from the IRQ exception when the program has unmasked IRQs on that
 *     CPU (rt_irq_unmask), on the interrupted code's stack, with all of
 *     its registers saved (FP/SIMD included), or
 *   - from rt_cpu_sleep() or rt_cpu_wait() on that CPU, with IRQs masked,
 * never nested, with rt_in_irq() true.  A handler of a level-triggered
 * interrupt must clear the cause at the device, or it runs again at once.
 * An interrupt that arrives with no handler is disabled and reported on
 * the console.  SGI 0 and PPI 30 (the EL1 physical timer) belong to the
 * runtime.
 */

/* INTIDs the runtime has room for: 16 SGIs, 16 PPIs and the 64 SPIs. */
#define RT_NUM_INTIDS           96

/* An interrupt handler: @intid is the interrupt, @arg as registered. */
typedef void (*rt_irq_fn)(unsigned intid, void *arg);

/*
 * rt_irq_register: makes fn(intid, arg) the handler of interrupt @intid
 * (any CPU it is delivered to); @fn NULL removes the handler.  Returns 0,
 * or -1 and changes nothing if @intid is not below RT_NUM_INTIDS, is one
 * of the runtime's own (SGI 0, PPI 30), or the GIC is not a GICv3.  It
 * does not enable the interrupt: see rt_irq_enable_spi().
 */
int rt_irq_register(unsigned intid, rt_irq_fn fn, void *arg);

/*
 * rt_irq_enable_spi: configures the shared peripheral interrupt @intid
 * (GIC INTID 32 + SPI number) as group 1, the runtime's priority,
 * level-sensitive (or rising-edge if @edge), routes it to CPU @cpu
 * (GICD_IROUTER affinity = cpu index) and enables it.  Calling it again
 * re-routes the interrupt.  Returns 0, or -1 and changes nothing if
 * @intid is not an SPI below RT_NUM_INTIDS, @cpu is not one of this
 * node's CPUs, or the GIC is not a GICv3.
 */
int rt_irq_enable_spi(unsigned intid, unsigned cpu, bool edge);

/*
 * rt_irq_disable_spi: disables the SPI @intid (it is no longer delivered;
 * its handler stays registered).  Returns 0, or -1 if @intid is not an
 * SPI below RT_NUM_INTIDS.
 */
int rt_irq_disable_spi(unsigned intid);

/*
 * rt_irq_save: masks IRQs on the calling CPU and returns the previous
 * mask state, for rt_irq_restore().  Use the pair around a critical
 * section that an interrupt handler on the same CPU must not enter.
 */
uint64_t rt_irq_save(void);

/*
 * rt_irq_restore: unmasks IRQs on the calling CPU if they were unmasked
 * when rt_irq_save() returned @flags; otherwise does nothing.
 */
void rt_irq_restore(uint64_t flags);

/*
 * rt_irq_unmask: lets interrupts be taken on the calling CPU from now on
 * (they are masked at boot); pending ones are taken at once.
 */
void rt_irq_unmask(void);

/*
 * rt_irq_raise: makes the shared peripheral interrupt @intid pending (GICD
 * ISPENDR) as if its device had signalled it: its handler runs once on the
 * CPU it is routed to, even if the device is quiet.  Returns 0, or -1 if
 * @intid is not an SPI below RT_NUM_INTIDS or the GIC is not a GICv3.
 */
int rt_irq_raise(unsigned intid);

/*
 * rt_irq_run_pending: runs the handlers of the interrupts pending at the
 * calling CPU now, with IRQs masked, and returns; nothing if none is (or
 * in a handler).  Unlike rt_cpu_sleep(0) it never sleeps: an interrupt
 * that went away meanwhile (its device lowered the line: another CPU's
 * register read that acknowledged it) leaves nothing to wait for.
 */
void rt_irq_run_pending(void);

/* rt_irq_masked: returns true if IRQs are masked on the calling CPU. */
bool rt_irq_masked(void);

/*
 * rt_irq_pending: returns true if an interrupt waits to be taken on the
 * calling CPU (masked or not), without touching any device: for a spin
 * with IRQs masked that must stop when one arrives.
 */
bool rt_irq_pending(void);

/*
 * rt_in_irq: returns true if the calling CPU is running an interrupt
 * handler.
 */
bool rt_in_irq(void);

/* ---- sleeping -------------------------------------------------------- */

/*
 * rt_cpu_sleep: sleeps the calling CPU (WFI: the host thread really
 * sleeps) until an interrupt arrives for it, rt_cpu_wake() is called for
 * it, or @max_us microseconds have passed (0: no time limit).  Interrupts
 * that arrive are handled (their handlers run) before it returns.  It may
 * return early, so call it in a loop that re-checks its condition.
 * Inside an interrupt handler, where nothing could wake it, it spins for
 * @max_us (10 us if 0) instead.
 */
void rt_cpu_sleep(uint64_t max_us);

/*
 * rt_cpu_idle: rt_cpu_sleep(@max_us) with nothing before the sleep: under
 * Linux (rt-linux) rt_cpu_sleep() first spins up to 1 ms looking at the
 * device (and writing its POLL register) on the CPU its interrupt goes
 * to; this does not.  For a CPU that leaves the polling to another one
 * meanwhile (libtempest's protocol thread while a client's wait spins or
 * its polls go on).  On bare metal the same as rt_cpu_sleep(@max_us).
 */
void rt_cpu_idle(uint64_t max_us);

/*
 * rt_cpu_sleep_spin_us: how long rt_cpu_sleep() spins on the CPU the node
 * controller's interrupt goes to before it sleeps: the runtime's reckoning
 * of what a sleep and its wake-up cost, below which a spin is the cheaper
 * wait.  Under Linux (rt-linux) 1000: a guest system call costs about
 * 18 us under TCG, and a wake-up through the driver's interrupt and the
 * futex calls behind it some hundreds.  On bare metal 0 (WFI, and the
 * GIC's interrupt).  For a CPU that polls the node in another's stead
 * (libtempest: a client whose spin or polls the protocol thread sleeps
 * for).
 */
unsigned rt_cpu_sleep_spin_us(void);

/*
 * rt_cpu_sleep_ack: rt_cpu_sleep(), and once the CPU wakes @ack runs
 * before it returns.  On bare metal it runs first (IRQs masked), before
 * the pending interrupts are dispatched: a caller that acknowledges its
 * device there lowers the device's line, so that its handler does not
 * run and the GIC is not touched for it.  Under Linux (rt-linux) it runs
 * after the handlers.
 */
void rt_cpu_sleep_ack(uint64_t max_us, void (*ack)(void));

/*
 * rt_cpu_wake: makes CPU @cpu return from rt_cpu_sleep() (or from the
 * wait of a secondary CPU for work).  If @cpu is not sleeping it is not
 * interrupted: the wake-up is remembered and its next sleep returns at
 * once.  A sleeper still publishes that it sleeps before re-checking its
 * condition, as the wake-up may have come before.  Does nothing if @cpu
 * is the caller or not one of this node's CPUs.
 */
void rt_cpu_wake(unsigned cpu);

/*
 * RT_HOT_TX, RT_HOT_RX: puts a function in the message path's send or
 * receive group of code, each in a 4 KiB page of its own on bare metal
 * (tempest.ld.S): under TCG a call or a jump into another page costs a
 * lookup of the next translated block, and so does a function that
 * crosses a page (docs/fabric.rst, "Fewer device accesses and lookups,
 * twenty-fourth session").  For the runtime's and libraries' own hot
 * paths; each group must fit in its page (tempest.ld.S asserts it).
 */
#define RT_HOT_TX   __attribute__((section(".text.hot.tempest_tx")))
#define RT_HOT_RX   __attribute__((section(".text.hot.tempest_rx")))

#endif /* TEMPEST_RT_H */
