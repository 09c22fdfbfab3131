/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks the secondary CPUs: every online CPU (the boot CPU through a
 * direct call, the others through rt_cpu_call) adds 1 to a shared counter
 * 100000 times with atomics; the total must be CPUs x 100000, each call
 * must run on the CPU it was given to, with its own TLS.  Prints
 * "smp ok: N cpus" and exits 0, or exits 1 on a mismatch.
 */
#include <errno.h>
#include <stdio.h>

#include "tempest/rt.h"

#define ITERATIONS 100000

static uint64_t counter;
static unsigned ran_on[TEMPEST_MAX_CPUS];
static _Thread_local unsigned tls_iterations;

static void count(void *arg)
{
    unsigned *where = arg;
    unsigned i;

    for (i = 0; i < ITERATIONS; i++) {
        __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        tls_iterations++;
    }
    /* TLS is per CPU: nobody else added to this CPU's copy. */
    *where = tls_iterations == ITERATIONS ? rt_cpu_id() : 1000;
    tls_iterations = 0;
}

int main(void)
{
    unsigned cpus = 1, cpu;
    unsigned started[TEMPEST_MAX_CPUS] = { 0 };
    uint64_t want;
    int bad = 0;

    errno = 0;
    for (cpu = 1; cpu < rt_num_cpus(); cpu++) {
        if (rt_cpu_call(cpu, count, &ran_on[cpu]) == 0) {
            started[cpu] = 1;
            cpus++;
        }
    }
    count(&ran_on[0]);
    for (cpu = 1; cpu < rt_num_cpus(); cpu++) {
        rt_cpu_wait(cpu);
        if (started[cpu] && ran_on[cpu] != cpu) {
            printf("smp: call for cpu %u ran as %u\n", cpu, ran_on[cpu]);
            bad = 1;
        }
    }
    if (rt_cpu_call(0, count, NULL) != -1 || rt_cpu_call(1, NULL, NULL) != -1) {
        printf("smp: rt_cpu_call accepted a bad argument\n");
        bad = 1;
    }

    want = (uint64_t)cpus * ITERATIONS;
    if (counter != want || cpus != rt_cpus_online() || ran_on[0] != 0) {
        printf("smp: counter %llu, expected %llu (%u cpus called, %u online)\n",
               (unsigned long long)counter, (unsigned long long)want, cpus,
               rt_cpus_online());
        bad = 1;
    }
    if (bad) {
        return 1;
    }
    printf("smp ok: %u cpus\n", cpus);
    return 0;
}
