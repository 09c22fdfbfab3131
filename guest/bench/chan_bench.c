/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * 'scripts/tempest bench chan': round trips over one channel of the
 * node controller's channel controller (docs/chan.rst, 1.8), through the
 * device access layer alone, on two nodes.  Node 0 outputs N bytes and
 * inputs N bytes back; node 1 inputs, then outputs; ROUNDS times per
 * size, the data never touched by a CPU.  Waits spin on the CQ and the
 * poll hint, telling the node controller (POLL) when the hint is set, for
 * the launcher's SPIN_US, then sleep until the CQ interrupt, as
 * libtempest's waits do.
 *
 *   chan_bench ROUNDS [MAXSIZE [separate]]
 * (MAXSIZE: only the sizes up to it; 4 leaves the 1 MiB round trips out.
 * A turn, output then input, is one OUTPUT_INPUT instruction on a node
 * controller 1.16 or later, an OUTPUT and an INPUT with "separate".)
 * prints on node 0 whether turns are OUTPUT_INPUT, then per size:
 *   chan_bench: output_input=0|1
 *   chan_bench: size=N rounds=R ns=T
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "round-trips.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define MAXLEN  (1u << 20)

/* OUTPUT_INPUT (node controller 1.16): a turn in one instruction. */
static bool combined;
/* Node 1: an input started by OUTPUT_INPUT waits for its event. */
static bool armed;

static uint32_t chan6(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                      uint64_t a4, uint64_t a5, uint64_t *result)
{
    uint32_t reason;
    uint32_t st = nc_chan6(op, port, a2, a3, a4, a5, result, &reason);

    if (st != TEMPEST_CMD_SUCCESS) {
        printf("chan_bench: instruction %u: %s\n", (unsigned)op,
               nc_cmd_reason_name(reason));
        exit(1);
    }
    return st;
}

static uint32_t chan(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                     uint64_t *result)
{
    return chan6(op, port, a2, a3, 0, 0, result);
}

/* The clock is read every CLOCK_EVERY turns of a spin (as libtempest). */
#define CLOCK_EVERY 16
static uint64_t spin_ns;

static void cq_irq(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    nc_irq_ack(TEMPEST_NC_IRQ_CQ);
}

/*
 * Wait for the next CHAN event (none other comes here) as libtempest's
 * tempest_wait() does: a spin of the launcher's SPIN_US (nc_spin_us),
 * then a sleep until the CQ interrupt (a spin that never ends holds the
 * host core the other node needs when the host is busy).  The spin
 * polls as libtempest's does after an event: the CQ slot and the poll
 * hint are plain loads, POLL is written when the hint says a peer left
 * something in shared memory (and every NC_POLL_EVERY turns, or on every
 * turn without a hint).  The CQ slot goes back to the device with the
 * batch (nc_cq_pop), not by an RQ_DOORBELL each wait.  An event other
 * than the TEMPEST_CHAN_EV_* @want fails the run.
 */
static void wait_chan(uint32_t want)
{
    struct nc_event *e;
    unsigned turn = 0;
    uint64_t t0 = 0, flags;
    uint32_t kind;

    while ((e = nc_cq_peek()) == NULL) {
        if (nc_poll_idle_due(turn)) {
            nc_poll(true);  /* take what the peer left in shared memory */
        }
        if (++turn % CLOCK_EVERY) {
            continue;
        }
        if (!t0) {
            t0 = rt_time_ns();
        } else if (rt_time_ns() - t0 >= spin_ns) {
            /* Spun long enough: sleep until the CQ interrupt. */
            nc_poll(false);
            flags = rt_irq_save();
            nc_irq_enable(TEMPEST_NC_IRQ_CQ);   /* the spin has it off */
            while ((e = nc_cq_peek()) == NULL) {
                rt_cpu_sleep(1000000000ULL);
            }
            nc_irq_enable(0);
            nc_irq_ack(TEMPEST_NC_IRQ_CQ);
            rt_irq_restore(flags);
            t0 = 0;
        }
    }
    kind = (uint32_t)(e->a >> 32);
    if ((e->ctl & TEMPEST_EV_TYPE_MASK) != TEMPEST_EV_CHAN || kind != want) {
        printf("chan_bench: event type %u kind %u (B 0x%llx C 0x%llx), not "
               "%u\n", (unsigned)(e->ctl & TEMPEST_EV_TYPE_MASK),
               (unsigned)kind, (unsigned long long)e->b,
               (unsigned long long)e->c, (unsigned)want);
        exit(1);
    }
    nc_cq_pop(e);
}

static void output(uint32_t port, const void *src, uint32_t len)
{
    uint64_t res;

    chan(TEMPEST_CHAN_OP_OUTPUT, port, (uintptr_t)src, len, &res);
    if (res != 1) {
        wait_chan(TEMPEST_CHAN_EV_OUTPUT);
    }
}

static void input(uint32_t port, void *next)
{
    uint64_t res;

    chan(TEMPEST_CHAN_OP_INPUT, port, (uintptr_t)next, MAXLEN, &res);
    if (!(res & TEMPEST_CHAN_PRESENT)) {
        wait_chan(TEMPEST_CHAN_EV_INPUT);
    }
}

/*
 * Output, then input: one OUTPUT_INPUT when the device has it.  @wait:
 * wait for the input here (else it is left armed for the next turn).
 */
static void output_input(uint32_t port, const void *src, uint32_t len,
                         void *next, bool wait)
{
    uint64_t res;

    if (!combined) {
        output(port, src, len);
        if (wait) {
            input(port, next);
        }
        return;
    }
    chan6(TEMPEST_CHAN_OP_OUTPUT_INPUT, port, (uintptr_t)src, len,
          (uintptr_t)next, MAXLEN, &res);
    if (res == 1) {
        /* Input already (a companion on this node): no input started. */
        if (wait) {
            input(port, next);
        }
        return;
    }
    if (wait) {
        wait_chan(TEMPEST_CHAN_EV_INPUT);
    } else {
        armed = true;
    }
}

/*
 * Node 1 at the end: its last OUTPUT_INPUT's output must be done (the
 * port no longer OUTPUTTING) before it exits, or node 0 could wait for
 * data that never left.
 */
static void output_done(uint32_t port)
{
    uint64_t st;

    do {
        nc_poll(true);
        chan(TEMPEST_CHAN_OP_STATE, port, 0, 0, &st);
    } while ((st & 0xff) == TEMPEST_CHAN_ST_OUTPUTTING);
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
        output_input(t->port, t->src, n, t->buf, true);
    } else {
        if (armed) {
            armed = false;
            wait_chan(TEMPEST_CHAN_EV_INPUT);
        } else {
            input(t->port, t->buf);
        }
        output_input(t->port, t->src, n, t->buf, false);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 4, 1u << 20 };
    unsigned me = rt_node_id(), rounds = argc > 1 ? atoi(argv[1]) : 1000;
    uint32_t max = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : MAXLEN;
    uint32_t port = TEMPEST_CHAN_ID(me, 0);
    uint8_t *buf = malloc(MAXLEN), *src = calloc(1, MAXLEN);
    struct nc_pkt *p;
    uint64_t res;

    if (nc_init() || rt_num_nodes() != 2 || !buf || !src || rounds < 1) {
        printf("chan_bench: needs 2 nodes and ROUNDS >= 1\n");
        return 2;
    }
    combined = nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 16U) &&
               !(argc > 3 && !strcmp(argv[3], "separate"));
    if (me == 0) {
        printf("chan_bench: output_input=%d\n", combined);
    }
    spin_ns = (uint64_t)nc_spin_us(50) * 1000;
    if (rt_irq_register(32 + TEMPEST_NC_SPI, cq_irq, NULL) ||
        rt_irq_enable_spi(32 + TEMPEST_NC_SPI, 0, false)) {
        printf("chan_bench: no CQ interrupt\n");
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

    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]) &&
                         sizes[k] <= max; k++) {
        struct trip t = { me, port, buf, src };

        round_trips("chan_bench", me, sizes[k], rounds, one_trip, &t);
    }
    if (armed) {
        output_done(port);
    }
    printf("chan_bench ok\n");
    return 0;
}
