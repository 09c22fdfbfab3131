/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CPUs, interrupts and sleeping for a Linux process.
 *
 * An rt "CPU" is a thread pinned to that vCPU: main() is CPU 0, and
 * rt_cpu_call(k) starts (once) a thread pinned to vCPU k.  The pinning is
 * what the node controller needs: its command bank is per vCPU.
 *
 * Interrupts are emulated per thread.  "Masked" is a thread-local flag
 * (rt_irq_save/restore cost no system call).  The node controller's
 * interrupt reaches the process through /dev/tempest0: a dispatcher thread
 * blocks in read(); when it returns, the interrupt is marked pending and
 * the CPU it is routed to is told: woken if it sleeps (a futex), sent
 * SIG_IRQ if it runs unmasked.  The handler then runs on that CPU, in
 * rt_cpu_sleep()/rt_cpu_wait() or in the signal handler (or, if masked, at
 * rt_irq_restore()), and afterwards the driver's interrupt is enabled
 * again with write(fd, 1): it stays disabled from its arrival until the
 * library's handler has cleared the cause (a level interrupt).
 *
 * That path costs a few hundred microseconds under TCG (a system call of
 * the guest kernel costs about 18 us, a signal 90 us), against a few for
 * a bare-metal interrupt, so a CPU that polls does not wait for it: every
 * 16th rt_irq_pending() reads the node controller's IRQ_STATUS and
 * IRQ_ENABLE itself (when its interrupt is routed to the calling CPU),
 * and rt_cpu_sleep() spins up to SLEEP_SPIN_US looking before it sleeps
 * in the kernel.  An interrupt found that way runs its handler at once;
 * the kernel's copy of it, if it came too, finds nothing to do.  A CPU
 * the interrupt does not go to waits only for another thread's
 * rt_cpu_wake(): it hardly spins (a spinning vCPU takes a host core from
 * the node's polling one), and rt_cpu_wake() makes the futex call only
 * when its CPU sleeps in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt-linux.h"

#define NC_INTID        (32 + TEMPEST_NC_SPI)
#define SIG_IRQ         (SIGRTMIN + 4)
#define SLEEP_SPIN_US   1000    /* a few times a sleep and wake-up */
#define DEVICE_EVERY    16      /* rt_irq_pending() calls per device look */
#define LINE_CHECK_US   1000    /* the dispatcher's first look, line off */
#define LINE_CHECK_MAX_US 16000 /* and its longest, while CPUs stay busy */

struct cpu {
    _Atomic uint64_t pend;      /* SPIs (bit = intid - 32) to run here */
    _Atomic unsigned seq;       /* futex: bumped by every notification */
    _Atomic bool sleeping;
    _Atomic bool masked;        /* as seen by other threads */
    _Atomic bool wake;          /* rt_cpu_wake() since the last sleep */
    _Atomic bool started;
    _Atomic bool busy;          /* running an rt_cpu_call() */
    _Atomic pid_t tid;
    void (*fn)(void *);
    void *arg;
    pthread_t thread;
};

struct intr {
    rt_irq_fn fn;
    void *arg;
    _Atomic bool pending;
    _Atomic bool enabled;
    _Atomic unsigned route;
};

static struct cpu cpus[TEMPEST_MAX_CPUS];

/* What the emulation did (TEMPEST_RT_STATS=1 prints it at exit). */
static struct {
    _Atomic unsigned long irqs, wakes, signals, in_signal, in_sleep,
                          in_restore, sleeps, late, cpu_wakes, looks;
} st;
static struct intr intrs[RT_NUM_INTIDS];
static atomic_uint online = 1;
/* The driver disabled the line when it counted the interrupt: enable it
 * again once the handler has run. */
static _Atomic bool nc_line_off;
/* Handlers run, for the dispatcher to tell a busy CPU from an idle one. */
static _Atomic unsigned long dispatched;

static __thread unsigned my_cpu;
static __thread volatile sig_atomic_t t_masked = 1;
static __thread volatile sig_atomic_t t_in_irq;

static long futex(_Atomic unsigned *addr, int op, unsigned val,
                  const struct timespec *ts)
{
    return syscall(SYS_futex, (unsigned *)addr, op, val, ts, NULL, 0);
}

static void notify(unsigned cpu)
{
    struct cpu *c = &cpus[cpu];

    atomic_fetch_add(&c->seq, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&c->sleeping)) {
        st.wakes++;
        futex(&c->seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    } else if (!atomic_load(&c->masked) && atomic_load(&c->started)) {
        st.signals++;
        syscall(SYS_tgkill, getpid(), atomic_load(&c->tid), SIG_IRQ);
    }
}

/* Marks @intid pending on the CPU it is routed to; false if disabled. */
static bool mark(unsigned intid, unsigned *cpu)
{
    struct intr *in = &intrs[intid];

    atomic_store(&in->pending, true);
    if (!atomic_load(&in->enabled)) {
        return false;
    }
    *cpu = atomic_load(&in->route);
    atomic_fetch_or(&cpus[*cpu].pend, 1ULL << (intid - 32));
    return true;
}

/* Marks @intid pending and tells the CPU it is routed to. */
static void deliver(unsigned intid)
{
    unsigned cpu;

    if (mark(intid, &cpu)) {
        notify(cpu);
    }
}

/* The node controller asserts its interrupt, which is this CPU's. */
static bool device_asserts(void)
{
    struct intr *in = &intrs[NC_INTID];

    return atomic_load_explicit(&in->enabled, memory_order_relaxed) &&
           atomic_load_explicit(&in->route, memory_order_relaxed) ==
           my_cpu &&
           (rt_nc_read(TEMPEST_NC_IRQ_STATUS) &
            rt_nc_read(TEMPEST_NC_IRQ_ENABLE)) != 0;
}

bool rt_irq_pending(void)
{
    static __thread unsigned calls;
    unsigned cpu;

    if (atomic_load_explicit(&cpus[my_cpu].pend, memory_order_relaxed)) {
        return true;
    }
    if (++calls % DEVICE_EVERY == 0 && device_asserts()) {
        return mark(NC_INTID, &cpu);
    }
    return false;
}

/* Runs the handlers of the interrupts pending for this CPU, masked. */
void rtl_dispatch(void)
{
    int saved = errno;
    sig_atomic_t was = t_masked;
    uint64_t bits;

    if (t_in_irq) {
        return;
    }
    t_masked = 1;
    atomic_store(&cpus[my_cpu].masked, true);
    t_in_irq = 1;
    while ((bits = atomic_exchange(&cpus[my_cpu].pend, 0)) != 0) {
        for (unsigned b = 0; b < 64; b++) {
            unsigned intid = 32 + b;
            struct intr *in = &intrs[intid];

            if (!(bits & (1ULL << b)) ||
                !atomic_exchange(&in->pending, false)) {
                continue;
            }
            if (!atomic_load(&in->enabled) ||
                atomic_load(&in->route) != my_cpu) {
                deliver(intid);         /* re-routed or disabled since */
                continue;
            }
            if (!in->fn) {
                char line[96];

                snprintf(line, sizeof(line), "tempest-rt: interrupt %u has "
                         "no handler: disabled\n", intid);
                rt_puts_raw(line);
                atomic_store(&in->enabled, false);
                continue;
            }
            in->fn(intid, in->arg);
            atomic_fetch_add_explicit(&dispatched, 1, memory_order_relaxed);
        }
    }
    t_in_irq = 0;
    t_masked = was;
    atomic_store(&cpus[my_cpu].masked, was);
    errno = saved;
}

void rt_irq_run_pending(void)
{
    if (!t_in_irq && rt_irq_pending()) {
        rtl_dispatch();
    }
}

static void on_sig_irq(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    if (!t_masked) {
        st.in_signal++;
        rtl_dispatch();
    }
}

/* Enables the driver's line again if it is off. */
static void line_on(void)
{
    uint32_t on = 1;

    if (atomic_exchange(&nc_line_off, false) &&
        write(rtl.fd, &on, sizeof(on)) != sizeof(on)) {
        rt_puts_raw("tempest-rt: cannot enable the node controller's "
                    "interrupt again\n");
    }
}

/*
 * The next look after one that found the CPUs busy (they ran the
 * handlers, or packets moved) and nothing for it to deliver: twice as
 * late, up to LINE_CHECK_MAX_US.  Under TCG a look costs the vCPU it runs
 * on some 100-300 us (the timer's interrupt out of the idle loop, the
 * scheduler, poll(), four device reads), and that vCPU's thread takes a
 * host core from the CPU that polls: with a look every millisecond an
 * --smp 2 ping-pong's vCPU 0 used a third of a host core (docs/linux.rst,
 * "The dispatcher's looks").  A late delivery, or the next interrupt
 * through the kernel (the only way the line goes off again once on),
 * starts over at LINE_CHECK_US.
 */
static unsigned busy_look(unsigned us)
{
    return us * 2 > LINE_CHECK_MAX_US ? LINE_CHECK_MAX_US : us * 2;
}

/*
 * The dispatcher: turns the device's interrupts into pending ones.  Once
 * the driver has disabled the line (it does at every interrupt), it stays
 * off while the CPUs are busy: a CPU that polls finds the device's
 * interrupts itself (rt_irq_pending), and one that sleeps turns the line
 * on first (rt_cpu_sleep).  Meanwhile this thread looks at the device,
 * LINE_CHECK_US after the line went off and later while the CPUs stay
 * busy (busy_look): an interrupt nobody took is delivered (a thread that
 * computes with interrupts unmasked gets its signal), and after two
 * quiet looks the line goes on again.
 */
static void *irq_thread(void *arg)
{
    sigset_t all;

    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    /*
     * Real-time: the interrupt must reach a CPU that spins now, not when
     * the scheduler's wake-up granularity (a millisecond) has passed.
     * Refused to an unprivileged process: then it stays a normal thread.
     */
    {
        struct sched_param sp = { .sched_priority = 1 };

        pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    unsigned long seen_dispatched = 0;
    uint32_t seen_traffic = 0;
    unsigned check_us = LINE_CHECK_US;

    for (unsigned quiet = 0;;) {
        uint32_t count;
        ssize_t n;

        if (atomic_load(&nc_line_off)) {
            struct pollfd pfd = { .fd = rtl.fd, .events = POLLIN };
            struct intr *in = &intrs[NC_INTID];

            /* A CPU may turn the line on meanwhile: its interrupt ends
             * the poll. */
            if (poll(&pfd, 1, check_us / 1000) > 0) {
                atomic_store(&nc_line_off, false);
                continue;
            }
            if (!atomic_load(&nc_line_off)) {
                continue;
            }
            st.looks++;
            if (atomic_load(&in->enabled) &&
                (rt_nc_read(TEMPEST_NC_IRQ_STATUS) &
                 rt_nc_read(TEMPEST_NC_IRQ_ENABLE))) {
                unsigned long d = atomic_load(&dispatched);

                quiet = 0;
                if (d == seen_dispatched) {
                    /* Nobody ran a handler for a whole look: deliver. */
                    st.late++;
                    deliver(NC_INTID);
                    check_us = LINE_CHECK_US;
                } else {
                    check_us = busy_look(check_us);
                }
                seen_dispatched = d;
            } else {
                /* Packets moved: the CPUs are busy polling, not idle. */
                uint32_t traffic = rt_nc_read(TEMPEST_NC_RX_PACKETS) +
                                   rt_nc_read(TEMPEST_NC_TX_PACKETS);

                if (traffic != seen_traffic) {
                    seen_traffic = traffic;
                    quiet = 0;
                    check_us = busy_look(check_us);
                } else if (++quiet >= 2) {
                    quiet = 0;
                    line_on();
                }
            }
            continue;
        }
        n = read(rtl.fd, &count, sizeof(count));
        if (n == sizeof(count)) {
            st.irqs++;
            check_us = LINE_CHECK_US;
            atomic_store(&nc_line_off, true);
            deliver(NC_INTID);
        } else if (n < 0 && errno != EINTR) {
            rt_puts_raw("tempest-rt: waiting for the node controller's "
                        "interrupt failed\n");
            return NULL;
        }
    }
}

void rtl_cpu_main_init(void)
{
    my_cpu = 0;
    atomic_store(&cpus[0].tid, (pid_t)syscall(SYS_gettid));
    atomic_store(&cpus[0].masked, true);
    atomic_store(&cpus[0].started, true);
}

static void print_stats(void)
{
    char line[320];

    snprintf(line, sizeof(line), "tempest-rt: node %u: %lu interrupts, "
             "%lu wake-ups, %lu signals (%lu handled in them), %lu sleeps, "
             "%lu handled at restore, %lu late, %lu futex wakes of a CPU, "
             "%lu looks with the line off\n",
             rtl.node,
             (unsigned long)st.irqs,
             (unsigned long)st.wakes, (unsigned long)st.signals,
             (unsigned long)st.in_signal, (unsigned long)st.sleeps,
             (unsigned long)st.in_restore, (unsigned long)st.late,
             (unsigned long)st.cpu_wakes, (unsigned long)st.looks);
    rt_puts_raw(line);
}

void rtl_irq_init(void)
{
    struct sigaction sa;
    pthread_t t;
    unsigned i;

    for (i = 0; i < RT_NUM_INTIDS; i++) {
        atomic_store(&intrs[i].route, 0);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sig_irq;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIG_IRQ, &sa, NULL);
    if (pthread_create(&t, NULL, irq_thread, NULL) != 0) {
        rtl_fatal("cannot start the interrupt thread", errno);
    }
    pthread_detach(t);
    if (getenv("TEMPEST_RT_STATS")) {
        atexit(print_stats);
    }
}

/* ---- the interrupt API ------------------------------------------------ */

int rt_irq_register(unsigned intid, rt_irq_fn fn, void *arg)
{
    if (intid >= RT_NUM_INTIDS || intid == 0 || intid == 30) {
        return -1;
    }
    intrs[intid].arg = arg;
    intrs[intid].fn = fn;
    return 0;
}

int rt_irq_enable_spi(unsigned intid, unsigned cpu, bool edge)
{
    (void)edge;
    if (intid < 32 || intid >= RT_NUM_INTIDS || cpu >= rtl.cpus) {
        return -1;
    }
    atomic_store(&intrs[intid].route, cpu);
    atomic_store(&intrs[intid].enabled, true);
    if (atomic_load(&intrs[intid].pending)) {
        deliver(intid);
    }
    return 0;
}

int rt_irq_disable_spi(unsigned intid)
{
    if (intid < 32 || intid >= RT_NUM_INTIDS) {
        return -1;
    }
    atomic_store(&intrs[intid].enabled, false);
    return 0;
}

int rt_irq_raise(unsigned intid)
{
    if (intid < 32 || intid >= RT_NUM_INTIDS) {
        return -1;
    }
    deliver(intid);
    return 0;
}

uint64_t rt_irq_save(void)
{
    uint64_t was = t_masked;

    t_masked = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (!was) {
        atomic_store_explicit(&cpus[my_cpu].masked, true,
                              memory_order_relaxed);
    }
    return was;
}

void rt_irq_restore(uint64_t flags)
{
    if (flags) {
        return;
    }
    atomic_signal_fence(memory_order_seq_cst);
    t_masked = 0;
    /* Ordered before the look at pending below: deliver() sets pending
     * before it reads masked, so one of the two sides sees the other. */
    atomic_store(&cpus[my_cpu].masked, false);
    if (rt_irq_pending()) {
        st.in_restore++;
        rtl_dispatch();
    }
}

void rt_irq_unmask(void)
{
    rt_irq_restore(0);
}

bool rt_irq_masked(void)
{
    return t_masked != 0;
}

bool rt_in_irq(void)
{
    return t_in_irq != 0;
}

/* ---- sleeping --------------------------------------------------------- */

/* The node controller has the POLL register (read once). */
static bool device_has_poll(void)
{
    static int has = -1;

    if (has < 0) {
        has = (rt_nc_read(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_POLL) != 0;
    }
    return has;
}

static void spin_us(uint64_t us)
{
    uint64_t end = rt_time_ns() + us * 1000;

    while (rt_time_ns() < end) {
        __asm__ volatile("yield");
    }
}

/*
 * Here the interrupt's handler may already have run (from the spin, or
 * the signal): @ack comes after it, which keeps the promise callers rely
 * on, a device acknowledged after the wake-up and before the return.
 */
void rt_cpu_sleep_ack(uint64_t max_us, void (*ack)(void))
{
    rt_cpu_sleep(max_us);
    if (ack) {
        ack();
    }
}

/* rt_cpu_sleep(), and rt_cpu_idle() (@spin false: no spin first). */
static void cpu_sleep(uint64_t max_us, bool spin)
{
    struct cpu *c = &cpus[my_cpu];
    unsigned seen = atomic_load(&c->seq);
    struct timespec ts, *tsp = NULL;

    if (t_in_irq) {
        spin_us(max_us ? max_us : 10);
        return;
    }
    if (max_us) {
        ts.tv_sec = (time_t)(max_us / 1000000);
        ts.tv_nsec = (long)(max_us % 1000000) * 1000;
        tsp = &ts;
    }
    /* A wake-up through the kernel costs more than this spin. */
    if (spin) {
        uint64_t t0 = rt_time_ns(), limit = SLEEP_SPIN_US * 1000ULL;
        /* The CPU the device interrupts polls it meanwhile (POLL = 1:
         * a peer's packet is taken at once, not by the main loop). */
        bool poll = atomic_load(&intrs[NC_INTID].route) == my_cpu &&
                    device_has_poll();
        /*
         * POLL = 0 at the end only if this spin wrote 1: a caller that
         * polls itself (and finds an interrupt pending) keeps its POLL.
         */
        bool polled = false;

        if (atomic_load(&intrs[NC_INTID].route) != my_cpu) {
            /*
             * Only another thread's rt_cpu_wake ends this sleep, a futex
             * wake of a few microseconds, not the driver's interrupt: the
             * first DEVICE_EVERY turns only, as bare metal's waiting CPU
             * goes to WFI at once.  A longer spin took a host core from
             * the CPU that polls (--smp 2, the protocol thread on CPU 1
             * waking main after every message: main spun all the time;
             * the empty round trip 35-50 us with 1 ms, 6-8 us without).
             */
            limit = 0;
        }
        if (max_us && max_us * 1000 < limit) {
            limit = max_us * 1000;
        }
        for (unsigned turn = 1;; turn++) {
            if (atomic_load_explicit(&c->wake, memory_order_relaxed) ||
                rt_irq_pending()) {
                if (polled) {
                    rt_nc_write(TEMPEST_NC_POLL, 0);
                }
                atomic_store(&c->wake, false);
                rtl_dispatch();
                return;
            }
            if (poll && turn % DEVICE_EVERY == 1) {
                rt_nc_write(TEMPEST_NC_POLL, 1);
                polled = true;
            }
            if (turn % DEVICE_EVERY == 0) {
                uint64_t spent = rt_time_ns() - t0;

                if (spent >= limit) {
                    if (polled) {
                        rt_nc_write(TEMPEST_NC_POLL, 0);
                    }
                    if (max_us && spent >= max_us * 1000) {
                        rtl_dispatch();
                        return;
                    }
                    if (tsp) {
                        uint64_t left = max_us * 1000 - spent;

                        ts.tv_sec = (time_t)(left / 1000000000ULL);
                        ts.tv_nsec = (long)(left % 1000000000ULL);
                    }
                    break;
                }
            }
            __asm__ volatile("yield");
        }
    }
    /* Only the CPU the device's interrupt goes to needs it to wake. */
    if (atomic_load(&intrs[NC_INTID].route) == my_cpu) {
        line_on();
    }
    atomic_store(&c->sleeping, true);
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_exchange(&c->wake, false) && !rt_irq_pending()) {
        st.sleeps++;
        futex(&c->seq, FUTEX_WAIT_PRIVATE, seen, tsp);
    }
    atomic_store(&c->sleeping, false);
    atomic_store(&c->wake, false);
    rtl_dispatch();
}

void rt_cpu_sleep(uint64_t max_us)
{
    cpu_sleep(max_us, true);
}

void rt_cpu_idle(uint64_t max_us)
{
    cpu_sleep(max_us, false);
}

unsigned rt_cpu_sleep_spin_us(void)
{
    return SLEEP_SPIN_US;
}

void rt_cpu_wake(unsigned cpu)
{
    if (cpu >= TEMPEST_MAX_CPUS || cpu == my_cpu ||
        !atomic_load(&cpus[cpu].started)) {
        return;
    }
    atomic_store(&cpus[cpu].wake, true);
    atomic_fetch_add(&cpus[cpu].seq, 1);
    /*
     * A CPU that spins sees wake: the system call only for a sleeper
     * (it sets sleeping, then looks at wake: one side sees the other).
     */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&cpus[cpu].sleeping)) {
        st.cpu_wakes++;
        futex(&cpus[cpu].seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    }
}

/* ---- CPUs ------------------------------------------------------------- */

unsigned rt_cpu_id(void)
{
    return my_cpu;
}

unsigned rt_cpus_online(void)
{
    return rtl.cpus;
}

static void *cpu_thread(void *arg)
{
    unsigned cpu = (unsigned)(uintptr_t)arg;
    struct cpu *c = &cpus[cpu];

    my_cpu = cpu;
    t_masked = 1;
    atomic_store(&c->masked, true);
    atomic_store(&c->tid, (pid_t)syscall(SYS_gettid));
    atomic_store(&c->started, true);
    for (;;) {
        while (!atomic_load(&c->busy)) {
            rt_cpu_sleep(0);
        }
        c->fn(c->arg);
        t_masked = 1;
        atomic_store(&c->masked, true);
        atomic_store(&c->busy, false);
        /* Whoever waits in rt_cpu_wait() sleeps on its own CPU. */
        for (unsigned i = 0; i < rtl.cpus; i++) {
            if (i != cpu) {
                rt_cpu_wake(i);
            }
        }
    }
    return NULL;
}

static int start_cpu(unsigned cpu)
{
    pthread_attr_t attr;
    cpu_set_t one;
    void *stack = aligned_alloc(4096, RTL_CPU_STACK);
    int err;

    if (!stack) {
        return -1;
    }
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, RTL_CPU_STACK);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
    err = pthread_create(&cpus[cpu].thread, &attr, cpu_thread,
                         (void *)(uintptr_t)cpu);
    pthread_attr_destroy(&attr);
    if (err) {
        free(stack);
        return -1;
    }
    while (!atomic_load(&cpus[cpu].started)) {
        sched_yield();
    }
    atomic_fetch_add(&online, 1);
    return 0;
}

int rt_cpu_call(unsigned cpu, void (*fn)(void *), void *arg)
{
    struct cpu *c;

    if (!fn || cpu == 0 || cpu == my_cpu || cpu >= rtl.cpus) {
        return -1;
    }
    c = &cpus[cpu];
    if (!atomic_load(&c->started) && start_cpu(cpu) < 0) {
        return -1;
    }
    if (atomic_load(&c->busy)) {
        return -1;
    }
    c->fn = fn;
    c->arg = arg;
    atomic_store(&c->busy, true);
    rt_cpu_wake(cpu);
    return 0;
}

void rt_cpu_wait(unsigned cpu)
{
    if (cpu >= TEMPEST_MAX_CPUS || cpu == my_cpu ||
        !atomic_load(&cpus[cpu].started)) {
        return;
    }
    while (atomic_load(&cpus[cpu].busy)) {
        rt_cpu_sleep(1000);
    }
}
