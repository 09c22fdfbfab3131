/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest spec 3.4.2 ("the number of bytes specified in the send must
 * exactly match"; "the destination must reset before the source sends")
 * and 3.4.1/3.4.3: misuse of a channel is refused, reported on the
 * console and never corrupts data:
 *   - a send on a channel that does not exist, or before the
 *     destination established it;
 *   - a send whose size differs from the destination's;
 *   - a second send before the destination's reset (the destination's
 *     buffer keeps the first send's data);
 *   - a reset before the data arrived; a second destination for one
 *     channel; bad set_channel_dst arguments; destroying unknown
 *     channels;
 *   - a destination buffer outside the receiver's RAM: its controller
 *     refuses the data (TEMPEST_CHAN_E_REMOTE at the source, which may
 *     then send again).
 * Two nodes: node 0 the source, node 1 the destination.
 * Prints "xfer_chanerr ok" on both.
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tempest.h"
#include "tempest/rt.h"
#include "xfer-util.h"

#define SIZE    1000

static uint8_t sbuf[SIZE + 8] __attribute__((aligned(64)));
static uint8_t dbuf[SIZE + 8] __attribute__((aligned(64)));
static volatile int chan_id = -1;       /* volatile: set by handlers */
static volatile int chan2_id = -1;      /* volatile: set by handlers */
static volatile int step;               /* volatile: set by handlers */
static uint64_t sent_cb;

static void chan_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    chan_id = TPPI_recv_W();
    chan2_id = TPPI_recv_W();
}

static void step_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    step = TPPI_recv_W();
}

static int step_is(void *arg)
{
    return step >= *(int *)arg;
}

static int have_chan(void *arg)
{
    (void)arg;
    return chan_id >= 0;
}

static void sent(TPPI_NodeId node, int ch)
{
    (void)node;
    (void)ch;
    __atomic_fetch_add(&sent_cb, 1, __ATOMIC_RELAXED);
}

struct key {
    TPPI_NodeId node;
    int ch;
};

static int ready(void *arg)
{
    struct key *k = arg;

    return TPPI_is_channel_ready(k->node, k->ch);
}

static int established(void *arg)
{
    struct key *k = arg;

    return TPPI_is_channel_established(k->node, k->ch);
}

static void check(const char *what, int got, int want)
{
    printf("%-52s %s\n", what, tempest_channel_strerror(got));
    if (got != want) {
        am_fail("%s: got %d (%s), expected %d (%s)", what, got,
                tempest_channel_strerror(got), want,
                tempest_channel_strerror(want));
    }
}

static void tell(unsigned node, int s)
{
    TPPI_send_W(node, step_h, s);
}

static void wait_step(int s)
{
    xu_need(step_is, &s, "the other node");
}

static void source(void)
{
    struct key k;
    int ch, ch2, rc;

    check("send on a channel that does not exist",
          tempest_channel_send(1, 12345, sbuf, SIZE),
          TEMPEST_CHAN_E_NO_CHANNEL);
    ch = TPPI_set_channel_src(1, sent);
    ch2 = TPPI_set_channel_src(1, sent);
    check("send before the destination established it",
          tempest_channel_send(1, ch, sbuf, SIZE),
          TEMPEST_CHAN_E_NOT_ESTABLISHED);
    check("  ... tempest_channel_error()", tempest_channel_error(1, ch),
          TEMPEST_CHAN_E_NOT_ESTABLISHED);
    TPPI_send_WW(1, chan_h, ch, ch2);
    k.node = 1;
    k.ch = ch;
    xu_need(established, &k, "establishment");
    check("send of a different size", tempest_channel_send(1, ch, sbuf,
                                                           SIZE + 1),
          TEMPEST_CHAN_E_SIZE);
    check("send with a NULL buffer", tempest_channel_send(1, ch, NULL, SIZE),
          TEMPEST_CHAN_E_BAD_ARG);
    wait_step(1);           /* the destination's early reset is done */
    xu_fill(sbuf, SIZE, 1);
    check("first send", tempest_channel_send(1, ch, sbuf, SIZE),
          TEMPEST_CHAN_OK);
    xu_need_count(&sent_cb, 1, "the send callback");
    xu_fill(sbuf, SIZE, 2);
    check("second send before the reset",
          tempest_channel_send(1, ch, sbuf, SIZE), TEMPEST_CHAN_E_NOT_RESET);
    tell(1, 1);
    wait_step(2);           /* the destination checked and reset */
    check("second send after the reset",
          tempest_channel_send(1, ch, sbuf, SIZE), TEMPEST_CHAN_OK);
    xu_need_count(&sent_cb, 2, "the send callback");

    /* ch2's destination buffer is outside node 1's RAM. */
    k.ch = ch2;
    xu_need(established, &k, "establishment of the second channel");
    check("send into a buffer outside the receiver's RAM",
          tempest_channel_send(1, ch2, sbuf, 64), TEMPEST_CHAN_OK);
    xu_need_count(&sent_cb, 3, "the send callback");
    check("  ... refused there: tempest_channel_error()",
          tempest_channel_error(1, ch2), TEMPEST_CHAN_E_REMOTE);
    rc = TPPI_is_channel_reset(1, ch2);
    check("  ... and the channel may send again",
          rc ? TEMPEST_CHAN_OK : TEMPEST_CHAN_E_NOT_RESET, TEMPEST_CHAN_OK);
    tell(1, 3);
    wait_step(4);
    TPPI_destroy_channel_src(1, ch);
    TPPI_destroy_channel_src(1, ch2);
    TPPI_destroy_channel_src(1, ch);        /* reported */
}

static void destination(void)
{
    struct key k;

    xu_need(have_chan, NULL, "the channel IDs");
    k.node = 0;
    k.ch = chan_id;
    if (TPPI_set_channel_dst(0, chan_id, NULL, SIZE, NULL) != 0 ||
        TPPI_set_channel_dst(0, chan_id, dbuf, 0, NULL) != 0 ||
        TPPI_set_channel_dst(0, chan_id, dbuf, TPPI_MAX_CHANNEL_BYTES + 1,
                             NULL) != 0 ||
        TPPI_set_channel_dst(7, chan_id, dbuf, SIZE, NULL) != 0) {
        am_fail("set_channel_dst accepted bad arguments");
    }
    if (TPPI_set_channel_dst(0, chan_id, dbuf, SIZE, NULL) != 1) {
        am_fail("set_channel_dst failed");
    }
    if (TPPI_set_channel_dst(0, chan_id, dbuf, SIZE, NULL) != 0) {
        am_fail("a second destination for one channel was accepted");
    }
    TPPI_reset_channel(0, chan_id);         /* before any data: reported */
    tell(0, 1);     /* only now may the first send come (else it is real) */
    /* An address no RAM is at, for the refused send. */
    if (TPPI_set_channel_dst(0, chan2_id,
                             (void *)(uintptr_t)(TEMPEST_RAM_BASE +
                                                 rt_ram_size()),
                             64, NULL) != 1) {
        am_fail("set_channel_dst of the second channel failed");
    }
    xu_need(ready, &k, "the first send");
    wait_step(1);           /* the source tried its early second send */
    if (xu_check(dbuf, SIZE, 0, 1)) {
        am_fail("the destination buffer changed before the reset");
    }
    if (dbuf[SIZE] != 0) {
        am_fail("the byte after the destination buffer changed");
    }
    TPPI_reset_channel(0, chan_id);
    tell(0, 2);
    xu_need(ready, &k, "the second send");
    if (xu_check(dbuf, SIZE, 0, 2)) {
        am_fail("the second send's data is wrong");
    }
    TPPI_reset_channel(0, chan_id);
    wait_step(3);
    TPPI_destroy_channel_dst(0, chan_id);
    TPPI_destroy_channel_dst(0, chan2_id);
    TPPI_destroy_channel_dst(0, 999);       /* reported */
    tell(0, 4);
}

int main(void)
{
    struct tempest_channel_stats cs;

    if (TPPI_num_nodes != 2) {
        am_fail("needs 2 nodes");
        return am_finish("xfer_chanerr");
    }
    if (TPPI_self_address == 0) {
        source();
    } else {
        destination();
    }
    tempest_get_channel_stats(&cs);
    printf("node %u: %llu errors reported\n", TPPI_self_address,
           (unsigned long long)cs.errors);
    return am_finish("xfer_chanerr");
}
