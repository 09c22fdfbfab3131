/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Errors ("Hardware Migratable Channels", section 3: the invariants of
 * the port states; chan.h: every refusal), on 2 nodes: a port that is
 * not one of this node's (never made, freed, moved away, the other
 * node's), bad arguments, a port in the wrong state (busy, holding data,
 * MIGRATING: "no input or output can be performed on this port"), data
 * and ports mixed up, data longer than the buffer, no buffer named, a
 * full port table, a waiting call from a handler, a freed companion
 * (inputs and outputs return CHAN_E_CLOSED; a port sent over a channel
 * whose far end is freed stays usable where it was, with the data
 * pre-sent to it, also when the move had begun: the abandoned move).
 * Every refused call changes nothing: the ports work afterwards.
 * Prints "chan_errors ok".
 */
#include <stdio.h>
#include <string.h>

#include "chan-util.h"

enum { K_P = 1, K_T };

static chan_port p, t;          /* 0 <-> 1, 0 -> 1 */
static uint8_t buf[256];
/* volatile: set by a handler */
static volatile int handler_rc, handler_state, handler_ran;
static volatile int go;                 /* volatile: set by a handler */

static unsigned me(void)
{
    return TPPI_self_address;
}

/* Section 3 / chan.h: names that are no port of this node. */
static void bad_ports(void)
{
    chan_port x, y, far;

    CU_EQ(chan_output(CHAN_NO_PORT, "x", 1), CHAN_E_BADPORT);
    CU_EQ(chan_companion(p, &far), 0);
    CU_EQ(chan_input(far, buf, sizeof(buf)), CHAN_E_BADPORT);
    CU_EQ(chan_alloc(&x, &y), 0);
    CU_EQ(chan_free(x), 0);
    CU_EQ(chan_state(x), CHAN_E_BADPORT);          /* freed */
    CU_EQ(chan_output(x, "x", 1), CHAN_E_BADPORT);
    /* y's companion is gone: closed, not reported. */
    CU_EQ(chan_output(y, "x", 1), CHAN_E_CLOSED);
    CU_EQ(chan_input(y, buf, sizeof(buf)), CHAN_E_CLOSED);
    CU_EQ(chan_companion(y, &far), 0);
    CU_EQ(far, CHAN_NO_PORT);
    CU_EQ(chan_free(y), 0);
}

static void bad_args(void)
{
    chan_port x, y;
    void *where;

    CU_EQ(chan_output(p, NULL, 4), CHAN_E_ARG);
    CU_EQ(chan_output(p, buf, chan_max_data() + 1), CHAN_E_ARG);
    CU_EQ(chan_alloc(NULL, &y), CHAN_E_ARG);
    CU_EQ(chan_alloc_to(5, 1, &x), CHAN_E_ARG);
    CU_EQ(chan_input(p, NULL, 4), CHAN_E_ARG);
    CU_EQ(chan_input_port(p, NULL), CHAN_E_ARG);
    CU_EQ(chan_set_buffer(p, buf, 0), CHAN_E_ARG);
    CU_EQ(chan_input_next(p, NULL, 4, &where), CHAN_E_ARG);
    CU_EQ(chan_output_port(t, t), CHAN_E_ARG);
    CU_EQ(chan_alloc(&x, &y), 0);
    CU_EQ(chan_output_port(x, y), CHAN_E_ARG);     /* over itself */
    CU_EQ(chan_free(x), 0);
    CU_EQ(chan_free(y), 0);
    CU_EQ(chan_state(p), CHAN_IDLE);
}

/* Section 3: one process per port; OUTPUTTING and BUFFERFULL ports. */
static void wrong_states(void)
{
    chan_port x, y;
    void *where;

    CU_EQ(chan_alloc(&x, &y), 0);
    CU_EQ(chan_output_start(x, "abc", 4), 0);
    CU_EQ(chan_input(x, buf, sizeof(buf)), CHAN_E_STATE);
    CU_EQ(chan_output(x, "d", 1), CHAN_E_STATE);
    CU_EQ(chan_free(x), CHAN_E_STATE);
    CU_EQ(chan_output_port(t, x), CHAN_E_STATE);
    cu_wait_state(y, CHAN_BUFFERFULL);
    CU_EQ(chan_output(y, "e", 1), CHAN_E_STATE);  /* both would output */
    CU_EQ(chan_input_next(y, buf, 4, &where), CHAN_E_NOBUF);
    CU_EQ(chan_input(y, buf, 2), CHAN_E_TOOBIG);
    CU_EQ(chan_state(y), CHAN_BUFFERFULL);        /* still there */
    CU_EQ(chan_input(y, buf, 4), 4);
    CU_CHECK(strcmp((char *)buf, "abc") == 0);
    CU_EQ(chan_output_wait(x), 0);
    CU_EQ(chan_free(x), 0);
    CU_EQ(chan_free(y), 0);
}

/* Section 4: the port table is fixed in size. */
static void full_table(void)
{
    static chan_port a[CHAN_PORTS / 2], b[CHAN_PORTS / 2];
    unsigned n, i;
    int rc;

    for (n = 0; n < CHAN_PORTS / 2; n++) {
        rc = chan_alloc(&a[n], &b[n]);
        if (rc != 0) {
            CU_EQ(rc, CHAN_E_NOPORTS);
            break;
        }
    }
    printf("full table: %u channels made\n", n);
    CU_CHECK(n >= CHAN_PORTS / 2 - 4);
    for (i = 0; i < n; i++) {
        CU_EQ(chan_free(a[i]), 0);
        CU_EQ(chan_free(b[i]), 0);
    }
}

static void in_handler_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    handler_rc = chan_input(p, buf, sizeof(buf));   /* would wait */
    handler_state = chan_state(p);                  /* does not wait */
    handler_ran = 1;
}

static int flag_set(void *arg)
{
    return *(volatile int *)arg;        /* volatile: set by a handler */
}

/* The protocol thread must never wait for itself. */
static void from_handler(void)
{
    TPPI_send(me(), in_handler_h);
    tempest_wait(flag_set, (void *)&handler_ran);
    CU_EQ(handler_rc, CHAN_E_CONTEXT);
    CU_EQ(handler_state, CHAN_IDLE);
}

/*
 * Section 3.2.1: a MIGRATING port refuses everything; its name is gone
 * once it has moved.  Data and ports mixed up are refused and stay.
 */
static void migrating(void)
{
    chan_port x, y, z, w, q, far;

    if (me() == 0) {
        CU_EQ(chan_alloc(&x, &y), 0);
        CU_EQ(chan_alloc(&z, &w), 0);
        CU_EQ(chan_output_port_start(t, x), 0);
        CU_EQ(chan_state(x), CHAN_MIGRATING);
        CU_EQ(chan_output(x, "x", 1), CHAN_E_MIGRATING);
        CU_EQ(chan_input(x, buf, sizeof(buf)), CHAN_E_MIGRATING);
        CU_EQ(chan_free(x), CHAN_E_MIGRATING);
        CU_EQ(chan_set_buffer(x, buf, 8), CHAN_E_MIGRATING);
        CU_EQ(chan_output_port(z, x), CHAN_E_MIGRATING);
        CU_EQ(chan_output(t, "x", 1), CHAN_E_STATE);   /* t outputs x */
    }
    am_barrier();
    if (me() == 1) {
        cu_wait_state(t, CHAN_BUFFERFULL);
        CU_EQ(chan_free(t), CHAN_E_STATE);     /* holds a port */
        CU_EQ(chan_input(t, buf, sizeof(buf)), CHAN_E_TYPE);
        CU_EQ(chan_input_port(t, &q), 0);
        CU_EQ(chan_companion(q, &far), 0);
        CU_EQ(CHAN_PORT_NODE(far), 0);
        CU_EQ(chan_output(q, "moved", 6), 0);
        /* data where a port is expected */
        CU_EQ(chan_input_port(t, &w), CHAN_E_TYPE);
        CU_EQ(chan_input(t, buf, sizeof(buf)), 5);
        CU_EQ(chan_free(q), 0);
    } else {
        CU_EQ(chan_output_wait(t), 0);
        CU_EQ(chan_state(x), CHAN_E_BADPORT);   /* moved away */
        CU_EQ(chan_input(y, buf, sizeof(buf)), 6);
        CU_CHECK(strcmp((char *)buf, "moved") == 0);
        CU_EQ(chan_output_start(t, "data", 5), 0);
        CU_EQ(chan_output_wait(t), 0);
        /* q was freed over there: y is closed. */
        while (chan_companion(y, &far) == 0 && far != CHAN_NO_PORT) {
            cu_sleep_ms(1);
        }
        CU_EQ(chan_output(y, "x", 1), CHAN_E_CLOSED);
        CU_EQ(chan_free(y), 0);
        CU_EQ(chan_free(z), 0);
        CU_EQ(chan_free(w), 0);
    }
    am_barrier();
}

/* A freed companion ends the calls waiting on its port. */
static void closed_while_waiting(void)
{
    chan_port far;

    if (me() == 1) {
        CU_EQ(chan_input(p, buf, sizeof(buf)), CHAN_E_CLOSED);
        CU_EQ(chan_state(p), CHAN_IDLE);
        CU_EQ(chan_free(p), 0);
    } else {
        CU_EQ(chan_companion(p, &far), 0);
        cu_wait_remote_state(1, far, CHAN_INPUTTING);
        CU_EQ(chan_free(p), 0);
    }
    am_barrier();
}

static void go_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    go = 1;
}

/*
 * A port sent over a channel whose far end is freed: chan_output_port
 * returns CHAN_E_CLOSED and the port stays here, usable, with the data
 * its companion had pre-sent to it.  The far end is freed before it
 * says go (its FREED comes first on the link): freed after, the port
 * data could reach it before its FREE whenever the host stops its vCPU
 * in between, and the FREE is then refused (it holds a port), as it
 * should be (seen on tcp under load).  The free while the port data is
 * on its way is abandoned_move's (a handler).
 */
static void closed_channel(void)
{
    chan_port z, w;

    if (me() == 1) {
        CU_EQ(chan_free(t), 0);
        TPPI_send(0, go_h);
    } else {
        CU_EQ(chan_alloc(&z, &w), 0);
        CU_EQ(chan_output_start(w, "kept", 5), 0);
        cu_wait_state(z, CHAN_BUFFERFULL);
        tempest_wait(flag_set, (void *)&go);
        CU_EQ(chan_output_port(t, z), CHAN_E_CLOSED);
        CU_EQ(chan_output_port(t, z), CHAN_E_CLOSED);
        CU_EQ(chan_input(z, buf, sizeof(buf)), 5);
        CU_CHECK(strcmp((char *)buf, "kept") == 0);
        CU_EQ(chan_output_wait(w), 0);
        CU_EQ(chan_free(z), 0);
        CU_EQ(chan_free(w), 0);
        CU_EQ(chan_free(t), 0);
    }
    am_barrier();
}

static chan_port ab_a, ab_b, ab_z;
static volatile int ab_rc = 1;          /* volatile: set by a handler */

/* On the protocol thread: the far end freed, then the move started. */
static void abandon_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    CU_EQ(chan_free(ab_b), 0);
    ab_rc = chan_output_port_start(ab_a, ab_z);
}

static int ab_done(void *arg)
{
    (void)arg;
    return ab_rc != 1;
}

/*
 * The same, deterministically on the abandoned path: from a handler
 * (calls that never wait may be made there), the far end of channel a-b
 * is freed and port z, holding pre-sent data, is sent over it before
 * the "freed" message is handled: the port data goes to a freed port,
 * then "freed" finds a OUTPUTTING the port: z is IDLE here again and
 * its companion w sends again what z dropped.
 */
static void abandoned_move(void)
{
    uint64_t resends = cu_stat(CU_STAT(resends));
    chan_port w;

    CU_EQ(chan_alloc(&ab_a, &ab_b), 0);
    CU_EQ(chan_alloc(&ab_z, &w), 0);
    CU_EQ(chan_output_start(w, "kept", 5), 0);
    cu_wait_state(ab_z, CHAN_BUFFERFULL);
    TPPI_send(me(), abandon_h);
    tempest_wait(ab_done, NULL);
    CU_EQ(ab_rc, 0);
    CU_EQ(chan_output_wait(ab_a), CHAN_E_CLOSED);
    CU_EQ(chan_input(ab_z, buf, sizeof(buf)), 5);
    CU_CHECK(strcmp((char *)buf, "kept") == 0);
    CU_EQ(chan_output_wait(w), 0);
    CU_EQ(cu_stat(CU_STAT(resends)), resends + 1);
    CU_EQ(chan_free(ab_a), 0);
    CU_EQ(chan_free(ab_z), 0);
    CU_EQ(chan_free(w), 0);
}

int main(void)
{
    cu_watchdog(20);
    am_barrier();
    if (me() == 0) {
        CU_EQ(chan_alloc_to(1, K_P, &p), 0);
        CU_EQ(chan_alloc_to(1, K_T, &t), 0);
    } else {
        CU_EQ(chan_accept(0, K_P, &p), 0);
        CU_EQ(chan_accept(0, K_T, &t), 0);
    }
    am_barrier();
    if (me() == 0) {
        bad_ports();
        bad_args();
        wrong_states();
        full_table();
        from_handler();
        abandoned_move();
    }
    am_barrier();
    migrating();
    closed_while_waiting();
    closed_channel();
    return cu_finish("chan_errors", 0);
}
