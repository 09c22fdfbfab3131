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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
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

struct cpu {
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
static struct intr intrs[RT_NUM_INTIDS];
static atomic_uint online = 1;

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
    if (atomic_load(&c->sleeping)) {
        futex(&c->seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    } else if (!atomic_load(&c->masked) && atomic_load(&c->started)) {
        syscall(SYS_tgkill, getpid(), atomic_load(&c->tid), SIG_IRQ);
    }
}

/* Marks @intid pending and tells the CPU it is routed to. */
static void deliver(unsigned intid)
{
    struct intr *in = &intrs[intid];

    atomic_store(&in->pending, true);
    if (atomic_load(&in->enabled)) {
        notify(atomic_load(&in->route));
    }
}

bool rt_irq_pending(void)
{
    unsigned i;

    for (i = 32; i < RT_NUM_INTIDS; i++) {
        if (atomic_load_explicit(&intrs[i].pending, memory_order_relaxed) &&
            atomic_load_explicit(&intrs[i].enabled, memory_order_relaxed) &&
            atomic_load_explicit(&intrs[i].route, memory_order_relaxed) ==
            my_cpu) {
            return true;
        }
    }
    return false;
}

/* Runs the handlers of the interrupts pending for this CPU, masked. */
void rtl_dispatch(void)
{
    unsigned i;
    int saved = errno;
    sig_atomic_t was = t_masked;

    if (t_in_irq) {
        return;
    }
    t_masked = 1;
    atomic_store(&cpus[my_cpu].masked, true);
    t_in_irq = 1;
    for (i = 32; i < RT_NUM_INTIDS; i++) {
        struct intr *in = &intrs[i];

        if (!atomic_load(&in->pending) || !atomic_load(&in->enabled) ||
            atomic_load(&in->route) != my_cpu ||
            !atomic_exchange(&in->pending, false)) {
            continue;
        }
        if (in->fn) {
            in->fn(i, in->arg);
        } else {
            char line[96];

            snprintf(line, sizeof(line), "tempest-rt: interrupt %u has no "
                     "handler: disabled\n", i);
            rt_puts_raw(line);
            atomic_store(&in->enabled, false);
            continue;
        }
        if (i == NC_INTID) {
            uint32_t on = 1;

            if (write(rtl.fd, &on, sizeof(on)) != sizeof(on)) {
                rt_puts_raw("tempest-rt: cannot enable the node "
                            "controller's interrupt again\n");
            }
        }
    }
    t_in_irq = 0;
    t_masked = was;
    atomic_store(&cpus[my_cpu].masked, was);
    errno = saved;
}

static void on_sig_irq(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    if (!t_masked) {
        rtl_dispatch();
    }
}

/* The dispatcher: turns the device's interrupts into pending ones. */
static void *irq_thread(void *arg)
{
    sigset_t all;

    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        uint32_t count;
        ssize_t n = read(rtl.fd, &count, sizeof(count));

        if (n == sizeof(count)) {
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
        notify(cpu);
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

static void spin_us(uint64_t us)
{
    uint64_t end = rt_time_ns() + us * 1000;

    while (rt_time_ns() < end) {
        __asm__ volatile("yield");
    }
}

void rt_cpu_sleep(uint64_t max_us)
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
    atomic_store(&c->sleeping, true);
    if (!atomic_exchange(&c->wake, false) && !rt_irq_pending()) {
        futex(&c->seq, FUTEX_WAIT_PRIVATE, seen, tsp);
    }
    atomic_store(&c->sleeping, false);
    atomic_store(&c->wake, false);
    rtl_dispatch();
}

void rt_cpu_wake(unsigned cpu)
{
    if (cpu >= TEMPEST_MAX_CPUS || cpu == my_cpu ||
        !atomic_load(&cpus[cpu].started)) {
        return;
    }
    atomic_store(&cpus[cpu].wake, true);
    atomic_fetch_add(&cpus[cpu].seq, 1);
    futex(&cpus[cpu].seq, FUTEX_WAKE_PRIVATE, 1, NULL);
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
