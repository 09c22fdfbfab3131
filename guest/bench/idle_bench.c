/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The idle node of 'scripts/tempest bench scale': after the cluster has
 * formed, each node sleeps MS milliseconds (a Tempest timer wakes it;
 * meanwhile it waits in tempest_wait, which spins briefly and then sleeps
 * in WFI), then exits.  Run with MS = 0 and MS > 0, the difference in the
 * nodes' CPU time is what an idle cluster costs the host.
 * Usage: idle_bench [MS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "tempest.h"

static volatile int woken; /* volatile: set by the timer handler */

static void wake(void *arg)
{
    (void)arg;
    woken = 1;
}

static int is_woken(void *arg)
{
    (void)arg;
    return woken;
}

int main(int argc, char **argv)
{
    long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 0;

    if (ms > 0) {
        TPPI_schedule_timer((int)(ms * (TPPI_TICKS_PER_SEC / 1000)), wake,
                            NULL);
        tempest_wait(is_woken, NULL);
    }
    if (TPPI_self_address == 0) {
        printf("idle_bench: slept_ms=%ld\n", ms);
    }
    return 0;
}
