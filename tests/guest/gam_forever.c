/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GAM program that polls for a request no node sends (guest case
 * am-gam-link-lost): every node enables, prints "waiting" and polls.  The
 * test harness kills one node's QEMU under a stopped launcher; libam must
 * end the others by itself once their links to it are lost ("the link
 * with node J is lost: ending this node", status 1), not poll for ever.
 */
#include <stdio.h>

#include "gam-util.h"

static volatile int got;    /* volatile: set by a handler no node calls */

int main(void)
{
    gam_check(am_enable() == 0, "am_enable: %s", am_error_name(am_errno));
    printf("waiting\n");
    fflush(stdout);
    gam_wait_for(&got, 1);
    printf("node %d: a request no node sent\n", am_my_proc());
    return 2;
}
