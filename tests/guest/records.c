/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The console record protocol (docs/strata.rst, Strata sections 9.3 and
 * 10): records go to the launcher, which writes strata.log, states.svg and
 * trace.json, and keeps them out of the node's console and log.
 */
#include <stdio.h>
#include <tempest/rt.h>

int main(void)
{
    unsigned me = rt_node_id();

    printf("records from node %u\n", me);
    printf("\x1eSTATE-NAME 0 #4e79a7 compute\n");
    printf("\x1eSTATE-NAME 1 #e15759 communicate\n");
    for (unsigned i = 0; i < 4; i++) {
        printf("\x1eSTATE %u %u\n", i * 1000000 + me * 250000, i % 2);
    }
    printf("\x1eLOG node %u logged this\n", me);
    printf("done %u\n", me);
    return 0;
}
