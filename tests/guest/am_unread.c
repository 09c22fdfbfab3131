/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Misuse is reported, not misparsed (Tempest spec 3.3.3: "the receive
 * handler must consume the entire message body"), and never crashes:
 *  - a handler that leaves 12 of 16 bytes unread: "left 12 of the 16
 *    bytes ... unread"; the next message is still parsed right;
 *  - a handler reading past the end of its body: "past its end", 0;
 *  - a packet naming a handler outside the program's code (forged
 *    through the device layer): "outside the program's code: dropped";
 *  - sends refused at the sender: R not word-aligned, F outside a
 *    handler, a body over TPPI_MAX_AM_BYTES, a node not in the cluster;
 *    TPPI_recv_W outside a handler; a negative timer.
 * Every node sends to the next ((self + 1) % N) and checks the counters
 * of tempest_get_stats().  Prints "am_unread ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tempest/nc.h"

static uint64_t handled;
static int past_end_value = -1;

static void partial_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    handled++;
}

static void whole_h(TPPI_NodeId src, int size)
{
    int a = TPPI_recv_W(), b = TPPI_recv_W();

    (void)src;
    if (size != 8 || a != 7 || b != 8) {
        am_fail("message after a partial read misparsed: %d, %d, %d",
                size, a, b);
    }
    handled++;
}

static void overrun_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    past_end_value = TPPI_recv_W();
    handled++;
}

/* Sends a packet straight through the device layer, handler @pc. */
static void forge(TPPI_NodeId dest, uint64_t pc)
{
    struct nc_pkt *p;

    while ((p = nc_sq_claim(TEMPEST_NET_REQUEST)) == NULL) {
        nc_sq_doorbell(TEMPEST_NET_REQUEST);
    }
    p->node = (uint16_t)dest;
    p->kind = 0x03;     /* an active message: first and last packet */
    p->word0 = 4;
    p->word1 = pc;
    p->word2 = 0;
    memset(p->data, 0, 4);
    nc_sq_post(TEMPEST_NET_REQUEST, p, 4);
    nc_sq_doorbell(TEMPEST_NET_REQUEST);
}

int main(void)
{
    static uint8_t big[TPPI_MAX_AM_BYTES + 8] __attribute__((aligned(8)));
    TPPI_NodeId next = (TPPI_self_address + 1) % TPPI_num_nodes;
    struct tempest_stats st;

    am_barrier();
    TPPI_send_WWWW(next, partial_h, 1, 2, 3, 4);
    TPPI_send_WW(next, whole_h, 7, 8);
    TPPI_send_W(next, overrun_h, 5);
    forge(next, 0x10);
    forge(next, (uint64_t)(uintptr_t)big);
    am_wait_count(&handled, 3);

    TPPI_send_R(next, whole_h, big + 2, 8);
    TPPI_send_F(next, whole_h, 4);
    TPPI_send_R(next, whole_h, big, TPPI_MAX_AM_BYTES + 4);
    TPPI_send_W(TPPI_num_nodes + 3, whole_h, 1);
    (void)TPPI_recv_W();
    TPPI_schedule_timer(-5, NULL, NULL);

    am_barrier();
    tempest_get_stats(&st);
    printf("unread %llu, overruns %llu, bad handlers %llu, bad sends %llu\n",
           (unsigned long long)st.unread, (unsigned long long)st.overruns,
           (unsigned long long)st.bad_handlers,
           (unsigned long long)st.bad_sends);
    if (st.unread != 1 || st.overruns != 2 || st.bad_handlers != 2 ||
        st.bad_sends != 5 || past_end_value != 0) {
        am_fail("counters differ from the misuse done");
    }
    return am_finish("am_unread");
}
