/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Forwarding (Tempest spec 3.3.2, F items): every node sends messages of
 * 8 to TPPI_MAX_AM_BYTES bytes that travel HOPS hops through the nodes
 * ((self + hop) % N), each hop reading two words and forwarding the rest
 * of the body with an F item (TPPI_send_WWF; on every third hop
 * TPPI_send_WFW, the next hop taking the body with TPPI_recv_R and sending
 * it on with TPPI_send_WWR), then back to their origin, which checks every
 * byte.
 * Prints "am_forward ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"

#define HOPS        6

static uint8_t body[TPPI_MAX_AM_BYTES] __attribute__((aligned(8)));
static uint8_t got[TPPI_MAX_AM_BYTES] __attribute__((aligned(8)));
static uint64_t back;
static int want_size;

static void back_h(TPPI_NodeId src, int size)
{
    (void)src;
    TPPI_recv_R(got, size);
    if (size != want_size || memcmp(got, body, (size_t)size) != 0) {
        am_fail("message of %d bytes came back as %d bytes, or changed",
                want_size, size);
    }
    back++;
}

static void hop_h(TPPI_NodeId src, int size);

/* Variant: the hop count travels in the LAST word (after an F). */
static void hop_last_h(TPPI_NodeId src, int size)
{
    TPPI_NodeId n = TPPI_num_nodes;
    unsigned origin = (unsigned)TPPI_recv_W();
    uint32_t rest[TPPI_MAX_AM_BYTES / 4];
    unsigned hop;

    (void)src;
    TPPI_recv_R(rest, size - 8);
    hop = (unsigned)TPPI_recv_W();
    if ((origin + hop) % n != TPPI_self_address) {
        am_fail("hop %u of node %u's message at node %u", hop, origin,
                TPPI_self_address);
    }
    TPPI_send_WWR((TPPI_self_address + 1) % n, hop_h, (int)origin,
                  (int)(hop + 1), rest, size - 8);
}

static void hop_h(TPPI_NodeId src, int size)
{
    TPPI_NodeId n = TPPI_num_nodes;
    unsigned origin = (unsigned)TPPI_recv_W();
    unsigned hop = (unsigned)TPPI_recv_W();

    (void)src;
    if ((origin + hop) % n != TPPI_self_address) {
        am_fail("hop %u of node %u's message at node %u", hop, origin,
                TPPI_self_address);
    }
    if (hop == HOPS) {
        /* Home: the origin's two words, then the rest. */
        TPPI_send_WWF(origin, back_h, (int)origin, 0, size - 8);
        return;
    }
    if (hop % 3 == 1) {
        TPPI_send_WFW((TPPI_self_address + 1) % n, hop_last_h, (int)origin,
                      size - 8, (int)(hop + 1));
        return;
    }
    TPPI_send_WWF((TPPI_self_address + 1) % n, hop_h, (int)origin,
                  (int)(hop + 1), size - 8);
}

int main(void)
{
    static const int sizes[] = { 8, 12, 100, 224, 228, 452, 1000, 2052,
                                 4092, TPPI_MAX_AM_BYTES };
    unsigned i, k = 0;
    int s, j;

    am_barrier();
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        s = sizes[i];
        for (j = 0; j < s; j++) {
            body[j] = (uint8_t)(j * 13 + s + TPPI_self_address);
        }
        memcpy(body, &(uint32_t){ TPPI_self_address }, 4);
        memset(body + 4, 0, 4);
        want_size = s;
        TPPI_send_WWR((TPPI_self_address + 1) % TPPI_num_nodes, hop_h,
                      (int)TPPI_self_address, 1, body + 8, s - 8);
        am_wait_count(&back, ++k);
    }
    printf("%u messages forwarded %d hops each\n", k, HOPS);
    return am_finish("am_forward");
}
