/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * <chan.h> round trips (scripts/tempest bench chan; docs/chan.rst): node
 * 0 outputs 4 bytes, then CHAN_MAX_DATA bytes, on a channel made with
 * chan_alloc_to and inputs node 1's answer of the same size, ROUNDS times
 * each after a tenth as many unmeasured.  Every call sleeps in
 * tempest_wait() until it completes, on whichever path libchan took (the
 * device's channel controller, or its software protocol with
 * TEMPEST_CHAN=soft).  With "turn", node 0 makes each of its turns one
 * chan_output_input() call (on the device one OUTPUT_INPUT instruction
 * and one wait).  Node 0 prints
 *   libchan_bench: device=D turn=U
 *   libchan_bench: size=N rounds=R ns=T
 * and every node "libchan_bench ok".
 * Usage: libchan_bench [ROUNDS [turn]]
 */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "chan.h"
#include "round-trips.h"
#include "tempest.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

static uint8_t buf[CHAN_MAX_DATA], src[CHAN_MAX_DATA];
static bool turn;           /* node 0: chan_output_input */

/* One round trip of @n bytes on *@arg: node 0 outputs first. */
static int one_trip(uint32_t n, void *arg)
{
    chan_port p = *(chan_port *)arg;
    int rc;

    if (TPPI_self_address == 0 && turn) {
        rc = chan_output_input(p, src, n, buf, sizeof(buf));
    } else if (TPPI_self_address == 0) {
        rc = chan_output(p, src, n);
        rc = rc ? rc : chan_input(p, buf, sizeof(buf));
    } else {
        rc = chan_input(p, buf, sizeof(buf));
        rc = rc < 0 ? rc : chan_output(p, src, n);
    }
    return rc < 0 ? rc : 0;
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 4, CHAN_MAX_DATA };
    unsigned me = TPPI_self_address;
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    chan_port p;
    int rc;

    turn = argc > 2 && strcmp(argv[2], "turn") == 0;
    if (TPPI_num_nodes != 2 || rounds < 1) {
        printf("libchan_bench: needs 2 nodes and ROUNDS >= 1\n");
        return 2;
    }
    rc = me == 0 ? chan_alloc_to(1, 1, &p) : chan_accept(0, 1, &p);
    if (rc) {
        return 1;
    }
    if (me == 0) {
        printf("libchan_bench: device=%d turn=%d\n",
               (nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CHAN) != 0,
               turn);
    }
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        if (round_trips("libchan_bench", me, sizes[k], rounds, one_trip,
                        &p)) {
            return 1;
        }
    }
    printf("libchan_bench ok\n");
    return 0;
}
