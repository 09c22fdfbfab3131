/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A blocked chan_input sleeps (issue 14; docs/chan.rst, "<chan.h> on the
 * device"), on 2 nodes: node 1 inputs on a channel from node 0, which
 * outputs only after about 2 s of its own clock.  Meanwhile node 1's
 * calling CPU sleeps in tempest_wait() and its protocol thread in WFI:
 * over the whole wait, each is woken a handful of times, not once per
 * poll (counted by libtempest: tempest_stats waits and sleeps; no host
 * timing is asserted).  On the node controller's channel controller the
 * port is the device's (its CHAN_USED counts it) and the data comes as
 * the device's TEMPEST_EV_CHAN event.
 * Prints "blocked input: ..., on the device" (or "in software") and
 * "chan_sleep ok".
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "chan-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define KEY         1
#define WAIT_MS     2000
#define MAX_WAKES   10      /* WFI wake-ups allowed over the whole wait */

int main(void)
{
    struct tempest_stats a, b;
    chan_port p;
    char buf[64];
    bool device = (nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CHAN) != 0;
    uint64_t t0, ms;
    int n;

    cu_watchdog(20);
    am_barrier();
    if (TPPI_self_address == 0) {
        CU_EQ(chan_alloc_to(1, KEY, &p), 0);
        am_barrier();
        cu_sleep_ms(WAIT_MS);
        CU_EQ(chan_output(p, "late", 5), 0);
    } else {
        CU_EQ(chan_accept(0, KEY, &p), 0);
        am_barrier();
        /* Every node is past the barrier: nothing else comes now. */
        tempest_get_stats(&a);
        t0 = rt_time_ns();
        n = chan_input(p, buf, sizeof(buf));
        ms = (rt_time_ns() - t0) / 1000000;
        tempest_get_stats(&b);
        CU_EQ(n, 5);
        CU_CHECK(strcmp(buf, "late") == 0);
        printf("blocked input: %llu ms, %llu waits, %llu protocol thread "
               "sleeps, %llu messages handled, %s\n",
               (unsigned long long)ms,
               (unsigned long long)(b.waits - a.waits),
               (unsigned long long)(b.sleeps - a.sleeps),
               (unsigned long long)(b.msgs_handled - a.msgs_handled),
               device ? "on the device" : "in software");
        /* It went to sleep, and was not woken poll by poll. */
        CU_CHECK(b.waits - a.waits >= 1);
        CU_CHECK(b.waits - a.waits <= MAX_WAKES);
        CU_CHECK(b.sleeps - a.sleeps <= MAX_WAKES);
        if (device) {
            /* libchan's port is the device's (its table's one port). */
            CU_EQ(nc_reg(TEMPEST_NC_CHAN_USED), 1);
        }
    }
    am_barrier();
    CU_EQ(chan_free(p), 0);
    return cu_finish("chan_sleep", 0);
}
