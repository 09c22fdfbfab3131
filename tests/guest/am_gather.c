/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Gather sends (docs/node-controller.rst, "Gather slots", 1.15; libtempest
 * send.c): a message of W and R items in RAM goes as ONE packet of up to
 * TPPI_MAX_AM_BYTES that the sender's node controller copies from the
 * items, with no copy into the send slot.  Node 0 sends node 1, for
 * lengths on both sides of the old packet boundary (4064) and of the
 * gather threshold (256), up to 4096:
 *  - one R item from a static buffer, one from the stack, and W + R + R;
 *  - the buffer is overwritten as soon as the send returns: the receiver
 *    must see the bytes of the send (the device took them by then);
 *  - node 1's handler checks every byte and sends the body back from
 *    its own buffer (the protocol thread's ring), node 0 checks again;
 *  - a 4096-byte message is one packet (tempest_get_stats: pkts_sent),
 *    on both nodes.
 * Prints "am_gather ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"

#define MAXB        TPPI_MAX_AM_BYTES

static uint32_t sendbuf[MAXB / 4];
static uint32_t echo[MAXB / 4];
static uint32_t got[MAXB / 4];
static uint32_t expect[MAXB / 4];
static int expect_size;
static volatile uint64_t pongs;       /* echoes and notes handled */
static volatile uint64_t node1_pkts;  /* node 1's packets per 4096 echo */

static const int lengths[] = {
    4, 252, 256, 260, 1024, 4060, 4064, 4068, 4092, 4096,
};

/* Word i of the body of test @t, length @len. */
static uint32_t pattern(unsigned t, int len, unsigned i)
{
    return (uint32_t)(t * 0x01000193u) ^ (uint32_t)len * 0x9e3779b9u ^
           (i * 0x85ebca6bu + 1);
}

static void pong_h(TPPI_NodeId src, int size)
{
    (void)src;
    TPPI_recv_R(got, size);
    if (size != expect_size) {
        am_fail("echo of %d bytes, expected %d", size, expect_size);
    } else if (memcmp(got, expect, (size_t)size) != 0) {
        am_fail("echo of %d bytes differs from what was sent", size);
    }
    __atomic_fetch_add(&pongs, 1, __ATOMIC_RELEASE);
}

static void note_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    node1_pkts = (uint64_t)TPPI_recv_W();
    __atomic_fetch_add(&pongs, 1, __ATOMIC_RELEASE);
}

/* Node 1: checks the body against the pattern (first word: the test). */
static void ping_h(TPPI_NodeId src, int size)
{
    struct tempest_stats a, b;
    unsigned t, i;

    TPPI_recv_R(echo, size);
    t = echo[0] >> 16;
    for (i = 1; i < (unsigned)size / 4; i++) {
        if (echo[i] != pattern(t, size, i)) {
            am_fail("node 1: test %u, %d bytes: word %u is 0x%08x, not "
                    "0x%08x", t, size, i, (unsigned)echo[i],
                    (unsigned)pattern(t, size, i));
            break;
        }
    }
    tempest_get_stats(&a);
    TPPI_send_R(src, pong_h, echo, size);
    tempest_get_stats(&b);
    memset(echo, 0xee, sizeof(echo));
    if (size == MAXB) {
        TPPI_send_W(src, note_h, (int)(b.pkts_sent - a.pkts_sent));
    }
}

static void fill(unsigned t, int len, uint32_t *dst)
{
    unsigned i;

    dst[0] = t << 16;
    for (i = 1; i < (unsigned)len / 4; i++) {
        dst[i] = pattern(t, len, i);
    }
    memcpy(expect, dst, (size_t)len);
    expect_size = len;
}

/* Sends test @t of @len bytes (kind: 0 static R, 1 stack R, 2 W+R+R). */
static void one(unsigned t, int len, unsigned kind)
{
    uint32_t stack[MAXB / 4];
    uint64_t want = pongs + (len == MAXB ? 2 : 1);  /* and note_h */
    tempest_msg m;
    int rc = 0, half;

    if (kind == 1) {
        fill(t, len, stack);
        TPPI_send_R(1, ping_h, stack, len);
        memset(stack, 0x55, sizeof(stack));
    } else if (kind == 0 || len < 8) {
        fill(t, len, sendbuf);
        TPPI_send_R(1, ping_h, sendbuf, len);
        memset(sendbuf, 0xaa, sizeof(sendbuf));
    } else {
        fill(t, len, sendbuf);
        half = (len - 4) / 8 * 4;
        tempest_msg_begin(&m, 1, ping_h);
        tempest_msg_W(&m, (int)sendbuf[0]);
        tempest_msg_R(&m, &sendbuf[1], half);
        tempest_msg_R(&m, &sendbuf[1 + half / 4], len - 4 - half);
        rc = tempest_msg_send(&m);
        memset(sendbuf, 0xaa, sizeof(sendbuf));
    }
    if (rc != 0) {
        am_fail("send of test %u (%d bytes, kind %u) returned %d", t, len,
                kind, rc);
        return;
    }
    am_wait_count(&pongs, want);
}

int main(void)
{
    struct tempest_stats a, b;
    unsigned t = 1, i, kind;

    if (TPPI_self_address == 0) {
        for (kind = 0; kind < 3; kind++) {
            for (i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
                one(t++, lengths[i], kind);
            }
        }
        tempest_get_stats(&a);
        one(t++, MAXB, 0);
        tempest_get_stats(&b);
        if (b.pkts_sent - a.pkts_sent != 1) {
            am_fail("a %d-byte message took %llu packets, not 1", MAXB,
                    (unsigned long long)(b.pkts_sent - a.pkts_sent));
        }
        if (node1_pkts != 1) {
            am_fail("node 1's %d-byte echo took %llu packets, not 1", MAXB,
                    (unsigned long long)node1_pkts);
        }
        printf("%u messages echoed, 4096 bytes in %llu + %llu packets\n",
               t - 1, (unsigned long long)(b.pkts_sent - a.pkts_sent),
               (unsigned long long)node1_pkts);
    }
    return am_finish("am_gather");
}
