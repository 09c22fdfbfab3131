/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * 'scripts/tempest bench chan': round trips over one channel of the
 * node controller's channel controller (docs/chan.rst, 1.8), through the
 * device access layer alone, on two nodes.  Node 0 outputs N bytes and
 * inputs N bytes back; node 1 inputs, then outputs; ROUNDS times per
 * size, the data never touched by a CPU.  Waits poll the CQ, telling
 * the node controller so (POLL), as libtempest's waits do.
 *
 *   chan_bench ROUNDS
 * prints on node 0, per size:
 *   chan_bench: size=N rounds=R ns=T
 */
#include <stdio.h>
#include <stdlib.h>

#include "round-trips.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define MAXLEN  (1u << 20)

static uint32_t chan(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                     uint64_t *result)
{
    uint32_t reason, st = nc_chan(op, port, a2, a3, result, &reason);

    if (st != TEMPEST_CMD_SUCCESS) {
        printf("chan_bench: instruction %u: %s\n", (unsigned)op,
               nc_cmd_reason_name(reason));
        exit(1);
    }
    return st;
}

/* Wait for the next CHAN event (none other comes here). */
static void wait_chan(void)
{
    struct nc_event *e;

    while ((e = nc_cq_peek()) == NULL) {
        nc_poll(true);      /* take what the peer left in shared memory */
    }
    nc_cq_pop(e);
    nc_rx_doorbell();
}

static void output(uint32_t port, const void *src, uint32_t len)
{
    uint64_t res;

    chan(TEMPEST_CHAN_OP_OUTPUT, port, (uintptr_t)src, len, &res);
    if (res != 1) {
        wait_chan();
    }
}

static void input(uint32_t port, void *next)
{
    uint64_t res;

    chan(TEMPEST_CHAN_OP_INPUT, port, (uintptr_t)next, MAXLEN, &res);
    if (!(res & TEMPEST_CHAN_PRESENT)) {
        wait_chan();
    }
}

struct trip {
    unsigned me;
    uint32_t port;
    uint8_t *buf, *src;
};

/* One round trip of @n bytes: node 0 outputs first, node 1 answers. */
static int one_trip(uint32_t n, void *arg)
{
    struct trip *t = arg;

    if (t->me == 0) {
        output(t->port, t->src, n);
        input(t->port, t->buf);
    } else {
        input(t->port, t->buf);
        output(t->port, t->src, n);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 4, 1u << 20 };
    unsigned me = rt_node_id(), rounds = argc > 1 ? atoi(argv[1]) : 1000;
    uint32_t port = TEMPEST_CHAN_ID(me, 0);
    uint8_t *buf = malloc(MAXLEN), *src = calloc(1, MAXLEN);
    struct nc_pkt *p;
    uint64_t res;

    if (nc_init() || rt_num_nodes() != 2 || !buf || !src || rounds < 1) {
        printf("chan_bench: needs 2 nodes and ROUNDS >= 1\n");
        return 2;
    }
    chan(TEMPEST_CHAN_OP_ALLOC, (uintptr_t)buf, MAXLEN, 0, &res);
    chan(TEMPEST_CHAN_OP_CONNECT, port, TEMPEST_CHAN_ID(!me, 0), 0, NULL);
    /* Both ports are made: one packet each way. */
    while ((p = nc_sq_claim(0)) == NULL) {
    }
    p->node = (uint16_t)!me;
    nc_sq_post(0, p, 0);
    nc_sq_doorbell(0);
    while ((p = nc_rq_peek()) == NULL) {
    }
    nc_rq_pop(p);
    nc_rx_doorbell();

    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct trip t = { me, port, buf, src };

        round_trips("chan_bench", me, sizes[k], rounds, one_trip, &t);
    }
    printf("chan_bench ok\n");
    return 0;
}
