/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A chain of migrations ("Hardware Migratable Channels", section 3.2,
 * stages 1-4 again and again): channel c-p is made on node 0 (both ends
 * there); end p then hops around the ring of nodes 0 -> 1 -> ... -> N-1
 * -> 0, over a channel from each node to the next, for several rounds,
 * while c stays on node 0.  Before every hop node 0 pre-sends data on c:
 * on even rounds the hop waits until it is BUFFERFULL at p (dropped when
 * p leaves, sent again by c to p's next place), on odd rounds p leaves
 * at once, with the data in flight (dropped at the MIGRATING port, or
 * buffered first).  The node p arrives at inputs the port, then the
 * data, and answers on p; c's companion is then on that node.  Usage:
 * chan_chain [ROUNDS] (default 10).  Prints "chan_chain ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-util.h"

#define K_RING      1

static chan_port c, p;          /* node 0: c; p: whoever holds it */
static chan_port r_out, r_in;   /* to the next node, from the previous */
static uint8_t buf[64];

static unsigned me(void)
{
    return TPPI_self_address;
}

static void expect(chan_port port, const char *s)
{
    cu_expect_text(port, buf, sizeof(buf), s);
}

static void send_text(chan_port port, const char *s)
{
    CU_EQ(chan_output(port, s, strlen(s) + 1), 0);
}

/* Node @k sends p on; it waits for the data first on even rounds. */
static void send_on(unsigned round)
{
    if (round % 2 == 0) {
        cu_wait_state(p, CHAN_BUFFERFULL);
    }
    CU_EQ(chan_output_port(r_out, p), 0);
    p = CHAN_NO_PORT;
}

/* One hop of p from node @k to the next, data and answer. */
static void hop(unsigned k, unsigned round)
{
    unsigned j = (k + 1) % TPPI_num_nodes;
    char data[48], reply[48];
    chan_port far;

    snprintf(data, sizeof(data), "round %u hop %u", round, k);
    snprintf(reply, sizeof(reply), "answer %u from %u", round, j);
    if (me() == 0) {
        CU_EQ(chan_output_start(c, data, strlen(data) + 1), 0);
        if (k == 0) {
            send_on(round);
        }
        if (j == 0) {
            /* p comes home: both ends on node 0 again. */
            CU_EQ(chan_input_port(r_in, &p), 0);
            expect(p, data);
            CU_EQ(chan_output_wait(c), 0);
            CU_EQ(chan_output_start(p, reply, strlen(reply) + 1), 0);
            expect(c, reply);
            CU_EQ(chan_output_wait(p), 0);
        } else {
            CU_EQ(chan_output_wait(c), 0);
            expect(c, reply);
        }
        CU_EQ(chan_companion(c, &far), 0);
        CU_EQ(CHAN_PORT_NODE(far), j);
    } else if (me() == k) {
        send_on(round);
    } else if (me() == j) {
        CU_EQ(chan_input_port(r_in, &p), 0);
        CU_EQ(CHAN_PORT_NODE(p), j);
        expect(p, data);
        send_text(p, reply);
    }
    am_barrier();
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 10;
    unsigned n = TPPI_num_nodes;
    unsigned r, k;
    uint64_t t0;

    cu_watchdog(20);
    am_barrier();
    CU_EQ(chan_alloc_to((me() + 1) % n, K_RING, &r_out), 0);
    CU_EQ(chan_accept((me() + n - 1) % n, K_RING, &r_in), 0);
    if (me() == 0) {
        CU_EQ(chan_alloc(&c, &p), 0);
    }
    am_barrier();
    t0 = am_ticks();
    for (r = 0; r < rounds; r++) {
        for (k = 0; k < n; k++) {
            hop(k, r);
        }
    }
    if (me() == 0) {
        printf("%u hops in %llu ms; %llu resends\n", rounds * n,
               (unsigned long long)((am_ticks() - t0) / 1000),
               (unsigned long long)cu_stat(CU_STAT(resends)));
        /* Every hop of an even round resends the data it dropped. */
        CU_CHECK(cu_stat(CU_STAT(resends)) >= (rounds + 1) / 2 * n);
        CU_EQ(chan_free(c), 0);
        CU_EQ(chan_free(p), 0);
    }
    am_barrier();
    CU_EQ(chan_free(r_out), 0);
    am_barrier();
    CU_EQ(chan_free(r_in), 0);
    return cu_finish("chan_chain", 0);
}
