/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A node killed under the cluster's feet (issue 3, dead peers): every node
 * prints "waiting" and waits; the test harness kills one node's QEMU with
 * SIGKILL; the others print libtempest's "*** node K: lost node J
 * (connection lost)" and leave with status 0 once they have seen it.
 */
#include <stdio.h>

#include "am-util.h"

static uint64_t lost;

static void on_down(TPPI_NodeId node)
{
    printf("node %u saw node %u go\n", TPPI_self_address, node);
    lost++;
}

int main(void)
{
    tempest_on_peer_down(on_down);
    am_barrier();
    printf("waiting\n");
    fflush(stdout);
    am_wait_count(&lost, 1);
    return 0;
}
