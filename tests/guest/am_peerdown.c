/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A node that is gone is reported (issue 3, the fabric's peer-down
 * events): the last node exits (status 0) after a barrier; every other
 * node prints "*** node K: lost node J" from libtempest, gets its
 * tempest_on_peer_down() callback, then sends to the gone node and sees
 * the node controller's send error reported ("*** node K: send error").
 * Prints "am_peerdown ok" on the nodes that stay.
 */
#include <stdio.h>
#include <stdlib.h>

#include "am-util.h"

static uint64_t lost;
static TPPI_NodeId lost_node = ~0u;

/* Other stayers may finish and leave too: keep the first node lost. */
static void on_down(TPPI_NodeId node)
{
    if (lost++ == 0) {
        lost_node = node;
    }
}

static void never_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
}

static int send_error_seen(void *arg)
{
    struct tempest_stats st;

    (void)arg;
    tempest_get_stats(&st);
    return st.send_errors > 0;
}

int main(void)
{
    TPPI_NodeId last = TPPI_num_nodes - 1;

    tempest_on_peer_down(on_down);
    am_barrier();
    if (TPPI_self_address == last) {
        printf("am_peerdown ok: node %u leaving\n", last);
        exit(0);
    }
    am_wait_count(&lost, 1);
    printf("peer-down callback: node %u\n", lost_node);
    TPPI_send_W(last, never_h, 1);
    tempest_wait(send_error_seen, NULL);
    if (lost_node != last) {
        am_fail("lost node %u, expected %u", lost_node, last);
    }
    printf("am_peerdown %s\n", am_failures() ? "FAILED" : "ok");
    return am_failures() ? 1 : 0;
}
