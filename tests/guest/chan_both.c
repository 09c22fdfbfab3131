/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Both ends migrating ("Hardware Migratable Channels", section 3.2.5,
 * stage 5), on 4 nodes.  Channel p runs between node 0 and node 1; node
 * 1 sends its end to node 2 over t while node 0 sends its end to node 3
 * over u, both started (stage 1) before either is input, so each
 * wire-up request finds its target MIGRATING and is forwarded to where
 * that target went.  Then the ends come back the same way (2 -> 1,
 * 3 -> 0).  Each move is done in three orders:
 *   - one destination inputs, gets its port confirmed and pre-sends
 *     data on it before the other has input anything (5.1: the
 *     forwarded wire-up overwrites the port data waiting there; the
 *     early data, dropped at the old MIGRATING end, is sent again when
 *     the other end is wired up);
 *   - the same, the other way round;
 *   - both destinations input at once (5.1 or 5.2: the port allocated
 *     already is updated).
 * After each move the two new ends name each other and carry data both
 * ways; the wire-ups forwarded are counted on every node.  Usage:
 * chan_both [ROUNDS] (default 12).  Prints "chan_both ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-util.h"

enum { K_P = 1, K_T, K_U, K_T2, K_U2 };

static chan_port p;             /* this node's end of p, if it has it */
static chan_port t_out, t_in;   /* 1 -> 2 */
static chan_port u_out, u_in;   /* 0 -> 3 */
static chan_port t2_out, t2_in; /* 2 -> 1 */
static chan_port u2_out, u2_in; /* 3 -> 0 */
static uint8_t buf[64];
static uint64_t forwards_total;  /* node 0: forwards of every node */
static volatile uint64_t reports;       /* volatile: set by a handler */

static unsigned me(void)
{
    return TPPI_self_address;
}

static void setup(void)
{
    switch (me()) {
    case 0:
        CU_EQ(chan_alloc_to(1, K_P, &p), 0);
        CU_EQ(chan_alloc_to(3, K_U, &u_out), 0);
        CU_EQ(chan_accept(3, K_U2, &u2_in), 0);
        break;
    case 1:
        CU_EQ(chan_accept(0, K_P, &p), 0);
        CU_EQ(chan_alloc_to(2, K_T, &t_out), 0);
        CU_EQ(chan_accept(2, K_T2, &t2_in), 0);
        break;
    case 2:
        CU_EQ(chan_accept(1, K_T, &t_in), 0);
        CU_EQ(chan_alloc_to(1, K_T2, &t2_out), 0);
        break;
    case 3:
        CU_EQ(chan_accept(0, K_U, &u_in), 0);
        CU_EQ(chan_alloc_to(0, K_U2, &u2_out), 0);
        break;
    }
    am_barrier();
}

static void expect(chan_port port, const char *s)
{
    cu_expect_text(port, buf, sizeof(buf), s);
}

/*
 * Moves the ends of p from nodes @a (over @a_t) and @b (over @b_t) to
 * nodes @da (input on @da_t) and @db (on @db_t); @order 0: @da first,
 * 1: @db first, 2: both at once.
 */
static void move_both(unsigned a, chan_port a_t, unsigned b, chan_port b_t,
                      unsigned da, chan_port da_t, unsigned db,
                      chan_port db_t, unsigned order, unsigned round)
{
    unsigned first = order == 1 ? db : da, second = order == 1 ? da : db;
    chan_port first_t = order == 1 ? db_t : da_t;
    chan_port second_t = order == 1 ? da_t : db_t;
    chan_port c = CHAN_NO_PORT;
    char early[32], text[32];

    snprintf(early, sizeof(early), "early %u", round);
    /* Stage 1 at both origins before anything is input. */
    if (me() == a) {
        CU_EQ(chan_output_port_start(a_t, p), 0);
    } else if (me() == b) {
        CU_EQ(chan_output_port_start(b_t, p), 0);
    }
    am_barrier();
    if (order < 2) {
        if (me() == first) {
            CU_EQ(chan_input_port(first_t, &p), 0);
            /* The companion it names is still the old, migrating one. */
            CU_EQ(chan_output_start(p, early, strlen(early) + 1), 0);
        }
        am_barrier();
        if (me() == second) {
            CU_EQ(chan_input_port(second_t, &p), 0);
            expect(p, early);
        } else if (me() == first) {
            CU_EQ(chan_output_wait(p), 0);
        }
    } else {
        if (me() == da) {
            CU_EQ(chan_input_port(da_t, &p), 0);
        } else if (me() == db) {
            CU_EQ(chan_input_port(db_t, &p), 0);
        }
    }
    if (me() == a) {
        CU_EQ(chan_output_wait(a_t), 0);
        p = CHAN_NO_PORT;
    } else if (me() == b) {
        CU_EQ(chan_output_wait(b_t), 0);
        p = CHAN_NO_PORT;
    }
    am_barrier();
    /* The new ends name each other and carry data both ways. */
    if (me() == da || me() == db) {
        CU_EQ(chan_companion(p, &c), 0);
        CU_EQ(CHAN_PORT_NODE(c), me() == da ? db : da);
        snprintf(text, sizeof(text), "round %u from %u", round, da);
        if (me() == da) {
            CU_EQ(chan_output(p, text, strlen(text) + 1), 0);
        } else {
            expect(p, text);
        }
        snprintf(text, sizeof(text), "round %u from %u", round, db);
        if (me() == db) {
            CU_EQ(chan_output(p, text, strlen(text) + 1), 0);
        } else {
            expect(p, text);
        }
    }
    am_barrier();
}

static void report_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    forwards_total += (uint32_t)TPPI_recv_W();
    reports++;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 12;
    unsigned r;

    cu_watchdog(20);
    am_barrier();
    setup();
    for (r = 0; r < rounds; r++) {
        /* there: 1 -> 2 over t, 0 -> 3 over u */
        move_both(1, t_out, 0, u_out, 2, t_in, 3, u_in, r % 3, 2 * r);
        /* and back: 2 -> 1 over t2, 3 -> 0 over u2 */
        move_both(2, t2_out, 3, u2_out, 1, t2_in, 0, u2_in, (r + 1) % 3,
                  2 * r + 1);
    }
    TPPI_send_W(0, report_h, (int)cu_stat(CU_STAT(forwards)));
    if (me() == 0) {
        am_wait_count(&reports, TPPI_num_nodes);
        printf("%u moves of both ends, %llu wire-ups forwarded\n",
               2 * rounds, (unsigned long long)forwards_total);
        /* Every move forwards at least one wire-up. */
        CU_CHECK(forwards_total >= 2 * rounds);
    }
    am_barrier();
    switch (me()) {
    case 0:
        CU_EQ(chan_free(p), 0);
        CU_EQ(chan_free(u_out), 0);
        CU_EQ(chan_free(u2_in), 0);
        break;
    case 1:
        CU_EQ(chan_free(p), 0);
        CU_EQ(chan_free(t_out), 0);
        CU_EQ(chan_free(t2_in), 0);
        break;
    case 2:
        CU_EQ(chan_free(t_in), 0);
        CU_EQ(chan_free(t2_out), 0);
        break;
    case 3:
        CU_EQ(chan_free(u_in), 0);
        CU_EQ(chan_free(u2_out), 0);
        break;
    }
    return cu_finish("chan_both", 0);
}
