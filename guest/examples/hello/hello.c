/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hello: the smallest tempest program.  Prints one line for its node and
 * has every secondary CPU run a function, to show that they run.
 */
#include <stdio.h>

#include "tempest/rt.h"

static unsigned ran[TEMPEST_MAX_CPUS];

static void mark(void *arg)
{
    (void)arg;
    __atomic_store_n(&ran[rt_cpu_id()], 1, __ATOMIC_RELEASE);
}

int main(void)
{
    unsigned cpu, ok = 1;

    printf("hello from node %u of %u: %u CPUs online\n",
           rt_node_id(), rt_num_nodes(), rt_cpus_online());

    for (cpu = 1; cpu < rt_num_cpus(); cpu++) {
        if (rt_cpu_call(cpu, mark, NULL) == 0) {
            rt_cpu_wait(cpu);
            ok += __atomic_load_n(&ran[cpu], __ATOMIC_ACQUIRE);
        }
    }
    if (ok != rt_cpus_online()) {
        printf("only %u of %u CPUs ran a call\n", ok, rt_cpus_online());
        return 1;
    }
    return 0;
}
