/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Secondary CPUs: started with PSCI CPU_ON before main(), then each one
 * runs the calls rt_cpu_call() posts in its mailbox.
 */
#include <picolibc.h>
#include <picotls.h>

#include "rt-internal.h"

#define PSCI_CPU_ON             0xC4000003U
#define ONLINE_TIMEOUT_MS       10000

struct mailbox {
    void (*fn)(void *);
    void *arg;
    uint32_t busy;      /* claimed by a caller until fn has returned */
    uint32_t go;        /* fn/arg posted, not yet picked up */
    uint32_t online;    /* the CPU runs its wait loop */
} __attribute__((aligned(64)));

static struct mailbox mailbox[RT_MAX_CPUS];
static uint32_t cpus_online = 1;

static int64_t psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t ctx)
{
    register uint64_t x0 __asm__("x0") = PSCI_CPU_ON;
    register uint64_t x1 __asm__("x1") = mpidr;
    register uint64_t x2 __asm__("x2") = entry;
    register uint64_t x3 __asm__("x3") = ctx;

    __asm__ volatile("hvc #0"
                     : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
                     :
                     : "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
                       "x12", "x13", "x14", "x15", "x16", "x17", "memory");
    return (int64_t)x0;
}

static const char *psci_error(int64_t ret)
{
    switch (ret) {
    case -1:
        return "not supported";
    case -2:
        return "invalid parameters";
    case -3:
        return "denied";
    case -4:
        return "already on";
    case -5:
        return "on pending";
    case -6:
        return "internal failure";
    case -9:
        return "invalid address";
    default:
        return "unknown error";
    }
}

static void say(const char *a, unsigned cpu, const char *b)
{
    char num[4] = { ' ', (char)('0' + cpu % 10), ' ', 0 };

    rt_puts_raw("tempest-rt: cpu");
    rt_puts_raw(num);
    rt_puts_raw(a);
    rt_puts_raw(b);
    rt_puts_raw("\n");
}

void rt_smp_start(void)
{
    unsigned n = rt_info.num_cpus;
    bool started[RT_MAX_CPUS] = { false };
    uint64_t deadline;
    unsigned cpu;
    int64_t ret;

    for (cpu = 1; cpu < n; cpu++) {
        ret = psci_cpu_on(cpu, (uintptr_t)rt_secondary_entry, cpu);
        if (ret != 0) {
            say("failed to start: PSCI CPU_ON: ", cpu, psci_error(ret));
            continue;
        }
        started[cpu] = true;
    }

    deadline = rt_ticks() + ONLINE_TIMEOUT_MS * rt_ticks_per_ms();
    for (cpu = 1; cpu < n; cpu++) {
        while (started[cpu] &&
               !__atomic_load_n(&mailbox[cpu].online, __ATOMIC_ACQUIRE)) {
            if (rt_ticks() > deadline) {
                say("started but did not come online", cpu, "");
                break;
            }
            __asm__ volatile("yield");
        }
    }
}

void rt_secondary_main(unsigned cpu)
{
    struct mailbox *mb = &mailbox[cpu];
    void *tls = __tls_blocks_start +
                (uintptr_t)__rt_tls_block_size * (cpu - 1);
    void (*fn)(void *);

    _init_tls(tls);
    _set_tls(tls);
    rt_gic_cpu_init(cpu);
    __atomic_fetch_add(&cpus_online, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&mb->online, 1, __ATOMIC_RELEASE);

    for (;;) {
        while (!__atomic_load_n(&mb->go, __ATOMIC_ACQUIRE)) {
            rt_wait_event();
        }
        mb->go = 0;
        fn = mb->fn;
        fn(mb->arg);
        __atomic_store_n(&mb->busy, 0, __ATOMIC_RELEASE);
        rt_wake_others();
    }
}

unsigned rt_cpus_online(void)
{
    return __atomic_load_n(&cpus_online, __ATOMIC_RELAXED);
}

static bool is_secondary(unsigned cpu)
{
    return cpu > 0 && cpu < RT_MAX_CPUS && cpu != rt_cpu_index() &&
           __atomic_load_n(&mailbox[cpu].online, __ATOMIC_ACQUIRE);
}

int rt_cpu_call(unsigned cpu, void (*fn)(void *), void *arg)
{
    struct mailbox *mb;
    uint32_t expected = 0;

    if (fn == NULL || !is_secondary(cpu)) {
        return -1;
    }
    mb = &mailbox[cpu];
    if (!__atomic_compare_exchange_n(&mb->busy, &expected, 1, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return -1;
    }
    mb->fn = fn;
    mb->arg = arg;
    __atomic_store_n(&mb->go, 1, __ATOMIC_RELEASE);
    rt_wake_cpu(cpu);
    return 0;
}

void rt_cpu_wait(unsigned cpu)
{
    if (!is_secondary(cpu)) {
        return;
    }
    while (__atomic_load_n(&mailbox[cpu].busy, __ATOMIC_ACQUIRE)) {
        rt_wait_event();
    }
}
