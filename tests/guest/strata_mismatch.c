/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata 4.3 misused: the nodes call CombineVector with different lengths
 * (3 elements on even nodes, 5 on odd ones).  The control network cannot
 * combine them: every node must end through StrataFail with a message
 * naming the mismatch, never crash its QEMU or wait for ever (issue 9,
 * section 3: the root over-read its heap with 2 nodes, and with 18 or
 * more nodes an inner node's forward was dropped and every node hung).
 */
#include "strata-util.h"

int main(void)
{
    int from[5] = { 1, 2, 3, 4, 5 }, to[5];
    int n;

    StrataInit();
    n = (Self % 2) ? 5 : 3;
    Barrier();      /* the same operation everywhere: fine */
    printf("node %d: CombineVector of %d elements\n", Self, n);
    CombineVector(to, from, ReduceAdd, n);
    printf("node %d: CombineVector returned: the mismatch went unseen\n",
           Self);
    StrataExit(1);
    return 1;
}
