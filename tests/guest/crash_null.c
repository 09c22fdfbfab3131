/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks that address 0 is unmapped: a store through a NULL pointer gives
 * a "*** CRASH" data abort report and ends the node with status
 * TEMPEST_EXIT_CRASH (134).
 */
#include <stdio.h>

int main(void)
{
    /* volatile, so that the compiler cannot see the NULL and trap */
    volatile int *volatile p = NULL;

    printf("storing through a NULL pointer\n");
    *p = 42;
    printf("the store did not fault\n");
    return 1;
}
