/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks that the Tempest user-managed segment is left unmapped: a load
 * from TEMPEST_SEGMENT_BASE gives a "*** CRASH" data abort report
 * (translation fault, FAR = the segment base) and ends the node with
 * status TEMPEST_EXIT_CRASH (134).
 *
 * Usage: crash_unmapped [NODE]: only node NODE crashes (every node without
 * an argument); the others print "waiting" and sleep until stopped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tempest/rt.h"

int main(int argc, char **argv)
{
    /* volatile: the load must happen */
    volatile uint64_t *p = (volatile uint64_t *)TEMPEST_SEGMENT_BASE;
    long target = argc > 1 ? strtol(argv[1], NULL, 0) : (long)rt_node_id();

    if (target != (long)rt_node_id()) {
        printf("node %u waiting: node %ld crashes\n", rt_node_id(), target);
        fflush(stdout);
        for (;;) {
            __asm__ volatile("wfi");
        }
    }
    printf("node %u loading from the user-managed segment at %p\n",
           rt_node_id(), (void *)p);
    printf("read 0x%llx: the segment should not be mapped\n",
           (unsigned long long)*p);
    return 1;
}
