/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ports over ports ("Hardware Migratable Channels", section 3.2, stages
 * 1-4), on 3 nodes: the companion C (node 0, port p0), the origin O
 * (node 1, port p1) and the destination D (node 2).
 *  1. data on p before anything moves;
 *  2. p1 is BUFFERFULL (C pre-sent data) when O sends it to D over t:
 *     the data is dropped at O (stage 1.1) and sent again by C to the
 *     new port at stage 3.2; D inputs it there; C's output completes;
 *     C's companion is now on node 2 (it talks to D directly);
 *  3. the port moves back D -> O and C outputs while it is MIGRATING:
 *     the data is dropped at D and sent again to O's new port;
 *  4. both directions on the moved channel, node 2 idle meanwhile;
 *  5. the OUTPUT end moves (C -> D) while O is INPUTTING on its
 *     companion: O's input is wired to the new end and completes with
 *     the data the new end outputs;
 *  6. D's end goes to O and back 20 times: data between the two ends
 *     on one node, then data pre-sent to it just before it leaves.
 * Prints "chan_migrate ok".
 */
#include <stdio.h>
#include <string.h>

#include "chan-util.h"

#define C       0
#define O       1
#define D       2

enum { K_P = 1, K_T, K_T2, K_T3 };

static uint8_t buf[256];
static chan_port p;             /* this node's end of channel p */
static chan_port t_out, t_in;   /* O -> D */
static chan_port t2_out, t2_in; /* D -> O */
static chan_port t3_out, t3_in; /* C -> D */

static unsigned me(void)
{
    return TPPI_self_address;
}

static void out_text(chan_port port, const char *s)
{
    CU_EQ(chan_output(port, s, strlen(s) + 1), 0);
}

static void expect_text(chan_port port, const char *s)
{
    cu_expect_text(port, buf, sizeof(buf), s);
}

static void check_companion_node(chan_port port, unsigned node)
{
    chan_port c = CHAN_NO_PORT;

    CU_EQ(chan_companion(port, &c), 0);
    CU_EQ(CHAN_PORT_NODE(c), node);
}

static void setup(void)
{
    switch (me()) {
    case C:
        CU_EQ(chan_alloc_to(O, K_P, &p), 0);
        CU_EQ(chan_alloc_to(D, K_T3, &t3_out), 0);
        break;
    case O:
        CU_EQ(chan_accept(C, K_P, &p), 0);
        CU_EQ(chan_alloc_to(D, K_T, &t_out), 0);
        CU_EQ(chan_accept(D, K_T2, &t2_in), 0);
        break;
    case D:
        CU_EQ(chan_accept(O, K_T, &t_in), 0);
        CU_EQ(chan_alloc_to(O, K_T2, &t2_out), 0);
        CU_EQ(chan_accept(C, K_T3, &t3_in), 0);
        break;
    }
    am_barrier();
}

/* 1. */
static void plain(void)
{
    if (me() == C) {
        out_text(p, "before");
    } else if (me() == O) {
        expect_text(p, "before");
    }
    am_barrier();
}

/* 2. Stage 1.1 and 3.2: BUFFERFULL data is sent again. */
static void bufferfull_moves(void)
{
    uint64_t resends = cu_stat(CU_STAT(resends));

    if (me() == C) {
        CU_EQ(chan_output_start(p, "pre-sent", 9), 0);
    }
    am_barrier();
    if (me() == O) {
        cu_wait_state(p, CHAN_BUFFERFULL);
        CU_EQ(chan_output_port_start(t_out, p), 0);
        CU_EQ(chan_state(t_out), CHAN_OUTPUTTING);
    }
    am_barrier();
    if (me() == O) {
        /* Stage 1: it stays MIGRATING until D inputs it. */
        cu_sleep_ms(20);
        CU_EQ(chan_state(p), CHAN_MIGRATING);
    }
    am_barrier();
    switch (me()) {
    case D:
        CU_EQ(chan_input_port(t_in, &p), 0);
        CU_EQ(CHAN_PORT_NODE(p), D);
        check_companion_node(p, C);
        expect_text(p, "pre-sent");
        break;
    case O:
        CU_EQ(chan_output_wait(t_out), 0);
        CU_EQ(cu_stat(CU_STAT(migrations)), 1);
        break;
    case C:
        CU_EQ(chan_output_wait(p), 0);
        CU_EQ(cu_stat(CU_STAT(resends)), resends + 1);
        check_companion_node(p, D);
        break;
    }
    am_barrier();
}

/* 3. Stage 1: data arriving at a MIGRATING port is sent again. */
static void data_while_migrating(void)
{
    uint64_t dropped = cu_stat(CU_STAT(dropped));

    if (me() == D) {
        CU_EQ(chan_output_port_start(t2_out, p), 0);
    }
    am_barrier();
    if (me() == C) {
        CU_EQ(chan_output_start(p, "while migrating", 16), 0);
    }
    if (me() == D) {
        cu_wait_stat(CU_STAT(dropped), dropped + 1, "for the drop");
    }
    am_barrier();
    switch (me()) {
    case O:
        CU_EQ(chan_input_port(t2_in, &p), 0);
        expect_text(p, "while migrating");
        break;
    case D:
        CU_EQ(chan_output_wait(t2_out), 0);
        break;
    case C:
        CU_EQ(chan_output_wait(p), 0);
        check_companion_node(p, O);
        break;
    }
    am_barrier();
}

/* 4. The companion talks to the new port directly. */
static void direct(void)
{
    uint64_t sent = cu_stat(CU_STAT(msgs_sent));
    unsigned i;

    for (i = 0; i < 10; i++) {
        if (me() == C) {
            out_text(p, "ping");
            expect_text(p, "pong");
        } else if (me() == O) {
            expect_text(p, "ping");
            out_text(p, "pong");
        }
    }
    am_barrier();
    if (me() == D) {
        /* Only the barrier's messages (not channel ones) left node 2. */
        CU_EQ(cu_stat(CU_STAT(msgs_sent)), sent);
    }
    am_barrier();
}

/* 5. Stage 3 at an INPUTTING port: the input follows the move. */
static void move_output_end(void)
{
    chan_port far;

    switch (me()) {
    case O:
        expect_text(p, "from the moved end");
        break;
    case C:
        CU_EQ(chan_companion(p, &far), 0);
        cu_wait_remote_state(O, far, CHAN_INPUTTING);
        CU_EQ(chan_output_port(t3_out, p), 0);
        p = CHAN_NO_PORT;
        break;
    case D:
        CU_EQ(chan_input_port(t3_in, &p), 0);
        check_companion_node(p, O);
        out_text(p, "from the moved end");
        break;
    }
    am_barrier();
}

/*
 * 6. D's end goes to O (both ends there, data between them), then back
 * to D with data pre-sent to it before it leaves, @n times.
 */
static void round_trips(unsigned n)
{
    chan_port q;
    char text[32];
    unsigned i;

    for (i = 0; i < n; i++) {
        snprintf(text, sizeof(text), "trip %u", i);
        switch (me()) {
        case D:
            CU_EQ(chan_output_port(t2_out, p), 0);
            CU_EQ(chan_input_port(t_in, &p), 0);
            expect_text(p, text);
            break;
        case O:
            CU_EQ(chan_input_port(t2_in, &q), 0);
            check_companion_node(q, O);
            CU_EQ(chan_output_start(p, "local", 6), 0);
            expect_text(q, "local");
            CU_EQ(chan_output_wait(p), 0);
            CU_EQ(chan_output_start(p, text, strlen(text) + 1), 0);
            cu_wait_state(q, CHAN_BUFFERFULL);
            CU_EQ(chan_output_port(t_out, q), 0);
            CU_EQ(chan_output_wait(p), 0);
            check_companion_node(p, D);
            break;
        }
    }
    am_barrier();
}

int main(void)
{
    cu_watchdog(20);
    am_barrier();
    setup();
    plain();
    bufferfull_moves();
    data_while_migrating();
    direct();
    move_output_end();
    round_trips(20);
    am_barrier();
    if (me() == O || me() == D) {
        CU_EQ(chan_free(p), 0);
    }
    am_barrier();
    switch (me()) {
    case C:
        CU_EQ(chan_free(t3_out), 0);
        break;
    case O:
        CU_EQ(chan_free(t_out), 0);
        CU_EQ(chan_free(t2_in), 0);
        break;
    case D:
        CU_EQ(chan_free(t_in), 0);
        CU_EQ(chan_free(t2_out), 0);
        CU_EQ(chan_free(t3_in), 0);
        break;
    }
    return cu_finish("chan_migrate", 0);
}
