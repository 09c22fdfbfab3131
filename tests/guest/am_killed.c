/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A node killed under the cluster's feet (issue 3, dead peers): every node
 * prints "waiting" and waits; the test harness kills one node's QEMU with
 * SIGKILL; the others print libtempest's "*** node K: lost node J
 * (connection lost)" and leave with status 0 once they have seen it.
 *
 * With "nocb": no tempest_on_peer_down() callback, and every node waits
 * (tempest_wait) for a count no handler ever raises.  libtempest must end
 * the others by itself once the link is lost (guest cases
 * am-link-lost-smp{1,2}, under a stopped launcher): "the link with node J
 * is lost", status 1.  With "nocb-spin" the wait is a plain loop on the
 * count, which libtempest cannot see: the others end when the second of
 * grace after the report is over (am-link-lost-spin-smp{1,2}).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "am-util.h"

static uint64_t lost;

static void on_down(TPPI_NodeId node)
{
    printf("node %u saw node %u go\n", TPPI_self_address, node);
    lost++;
}

int main(int argc, char **argv)
{
    bool spin = argc > 1 && !strcmp(argv[1], "nocb-spin");
    bool nocb = spin || (argc > 1 && !strcmp(argv[1], "nocb"));

    if (!nocb) {
        tempest_on_peer_down(on_down);
    }
    am_barrier();
    printf("waiting\n");
    fflush(stdout);
    if (spin) {
        while (__atomic_load_n(&lost, __ATOMIC_ACQUIRE) == 0) {
            __asm__ volatile("yield");
        }
    } else {
        am_wait_count(&lost, 1);
    }
    if (nocb) {
        printf("node %u: a count no handler raises\n", TPPI_self_address);
        return 2;
    }
    return 0;
}
