/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ping-pong with every item type (Tempest spec 3.3.2-3.3.4): every node
 * sends to the next node ((self + 1) % N, itself on one node) messages
 * built from W, R and F items and through the builder, with bodies of
 * every size from 0 to TPPI_MAX_AM_BYTES (every word up to 256 bytes,
 * both sides of each packet boundary, the maximum); the receiver echoes
 * each body back with F items (alone or mixed with W and R items) and
 * the sender checks every byte.  Prints "am_pingpong ok: N round trips".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"

#define MAXB        TPPI_MAX_AM_BYTES
#define FW_WORD     0x5a5a5a5a

static uint8_t sendbuf[MAXB] __attribute__((aligned(8)));
static uint8_t expect[MAXB] __attribute__((aligned(8)));
static uint8_t got[MAXB] __attribute__((aligned(8)));
static int expect_size;
static uint64_t pongs;
static unsigned trips;

static void pong_h(TPPI_NodeId src, int size)
{
    (void)src;
    TPPI_recv_R(got, size);
    if (size != expect_size) {
        am_fail("pong of %d bytes, expected %d", size, expect_size);
    } else if (memcmp(got, expect, (size_t)size) != 0) {
        am_fail("pong of %d bytes differs from what was sent", size);
    }
    __atomic_fetch_add(&pongs, 1, __ATOMIC_RELEASE);
}

/* Echoes: each forwards the whole body back, differently. */
static void ping_f(TPPI_NodeId src, int size)
{
    TPPI_send_F(src, pong_h, size);
}

static void ping_wf(TPPI_NodeId src, int size)
{
    int a = TPPI_recv_W();

    TPPI_send_WF(src, pong_h, a, size - 4);
}

static void ping_wwf(TPPI_NodeId src, int size)
{
    int a = TPPI_recv_W();
    int b = TPPI_recv_W();

    TPPI_send_WWF(src, pong_h, a, b, size - 8);
}

/* R then F: not a TPPI_send_ function (one R or F only): the builder. */
static void ping_rf(TPPI_NodeId src, int size)
{
    uint32_t head[2];
    tempest_msg m;

    TPPI_recv_R(head, 8);
    tempest_msg_begin(&m, src, pong_h);
    tempest_msg_R(&m, head, 8);
    tempest_msg_F(&m, size - 8);
    tempest_msg_send(&m);
}

/* Forwards all but the last word, then a constant (FW_WORD). */
static void ping_fw(TPPI_NodeId src, int size)
{
    TPPI_send_FW(src, pong_h, size - 4, FW_WORD);
    (void)TPPI_recv_W();
}

/* Reads the body word by word and sends it back with the builder. */
static void ping_w_builder(TPPI_NodeId src, int size)
{
    tempest_msg m;
    int i;

    tempest_msg_begin(&m, src, pong_h);
    for (i = 0; i < size / 4; i++) {
        tempest_msg_W(&m, TPPI_recv_W());
    }
    tempest_msg_send(&m);
}

static TPPI_NodeId peer(void)
{
    return (TPPI_self_address + 1) % TPPI_num_nodes;
}

static void pattern(uint8_t *b, int len, unsigned seed)
{
    int i;

    for (i = 0; i < len; i++) {
        b[i] = (uint8_t)(seed * 131 + (unsigned)i * 7 + (i >> 8));
    }
}

/* Waits for the pong of the message just sent. */
static void await_pong(void)
{
    trips++;
    am_wait_count(&pongs, trips);
}

static int word(unsigned i)
{
    return (int)(0x10203040u * (i + 1) + trips);
}

/* Pure W messages, 0 to 8 words, echoed by ping_f and the builder. */
static void w_only(TPPI_MessageHandlerPtr echo)
{
    uint32_t w[8];
    unsigned k, i;

    for (k = 0; k <= 8; k++) {
        for (i = 0; i < 8; i++) {
            w[i] = (uint32_t)word(i);
        }
        memcpy(expect, w, 4 * k);
        expect_size = (int)(4 * k);
        switch (k) {
        case 0:
            TPPI_send(peer(), echo);
            break;
        case 1:
            TPPI_send_W(peer(), echo, w[0]);
            break;
        case 2:
            TPPI_send_WW(peer(), echo, w[0], w[1]);
            break;
        case 3:
            TPPI_send_WWW(peer(), echo, w[0], w[1], w[2]);
            break;
        case 4:
            TPPI_send_WWWW(peer(), echo, w[0], w[1], w[2], w[3]);
            break;
        case 5:
            TPPI_send_WWWWW(peer(), echo, w[0], w[1], w[2], w[3], w[4]);
            break;
        case 6:
            TPPI_send_WWWWWW(peer(), echo, w[0], w[1], w[2], w[3], w[4],
                             w[5]);
            break;
        case 7:
            TPPI_send_WWWWWWW(peer(), echo, w[0], w[1], w[2], w[3], w[4],
                              w[5], w[6]);
            break;
        default:
            TPPI_send_WWWWWWWW(peer(), echo, w[0], w[1], w[2], w[3], w[4],
                               w[5], w[6], w[7]);
            break;
        }
        await_pong();
    }
}

/* An R message of @len bytes, echoed by @echo. */
static void r_only(int len, TPPI_MessageHandlerPtr echo)
{
    pattern(sendbuf, len, trips);
    memcpy(expect, sendbuf, (size_t)len);
    if (echo == ping_fw && len >= 4) {
        memcpy(expect + len - 4, &(uint32_t){ FW_WORD }, 4);
    }
    expect_size = len;
    TPPI_send_R(peer(), echo, sendbuf, len);
    await_pong();
}

/* W and R mixed, the R item at several positions. */
static void w_and_r(int len)
{
    uint32_t w[8];
    unsigned i, pos;

    for (pos = 0; pos < 4; pos++) {
        for (i = 0; i < 8; i++) {
            w[i] = (uint32_t)word(i);
        }
        pattern(sendbuf, len, trips + 7);
        switch (pos) {
        case 0:     /* WR */
            memcpy(expect, w, 4);
            memcpy(expect + 4, sendbuf, (size_t)len);
            expect_size = 4 + len;
            TPPI_send_WR(peer(), ping_f, w[0], sendbuf, len);
            break;
        case 1:     /* WRW */
            memcpy(expect, w, 4);
            memcpy(expect + 4, sendbuf, (size_t)len);
            memcpy(expect + 4 + len, w + 1, 4);
            expect_size = 8 + len;
            TPPI_send_WRW(peer(), ping_wf, w[0], sendbuf, len, w[1]);
            break;
        case 2:     /* RWWWWWWWW */
            memcpy(expect, sendbuf, (size_t)len);
            memcpy(expect + len, w, 32);
            expect_size = len + 32;
            TPPI_send_RWWWWWWWW(peer(), ping_f, sendbuf, len, w[0], w[1],
                                w[2], w[3], w[4], w[5], w[6], w[7]);
            break;
        default:    /* WWWWWWWWR */
            memcpy(expect, w, 32);
            memcpy(expect + 32, sendbuf, (size_t)len);
            expect_size = 32 + len;
            TPPI_send_WWWWWWWWR(peer(), ping_wwf, w[0], w[1], w[2], w[3],
                                w[4], w[5], w[6], w[7], sendbuf, len);
            break;
        }
        await_pong();
    }
}

/* The builder: many words and several regions. */
static void builder(void)
{
    tempest_msg m;
    int i, off = 0;

    pattern(sendbuf, 3000, trips);
    tempest_msg_begin(&m, peer(), ping_f);
    for (i = 0; i < 20; i++) {
        tempest_msg_W(&m, word((unsigned)i));
        memcpy(expect + off, &(uint32_t){ (uint32_t)word((unsigned)i) }, 4);
        off += 4;
        if (i % 5 == 4) {
            tempest_msg_R(&m, sendbuf + 100 * i, 400);
            memcpy(expect + off, sendbuf + 100 * i, 400);
            off += 400;
        }
    }
    expect_size = off;
    if (tempest_msg_send(&m) != 0) {
        am_fail("the builder did not send");
        return;
    }
    await_pong();
}

int main(void)
{
    static const TPPI_MessageHandlerPtr echoes[] = {
        ping_f, ping_wf, ping_wwf, ping_rf, ping_fw,
    };
    int len;
    unsigned e = 0;

    am_barrier();
    w_only(ping_f);
    w_only(ping_w_builder);
    for (len = 0; len <= 256; len += 4) {
        r_only(len, ping_f);
    }
    for (len = 8; len <= MAXB; len += len < 1024 ? 212 : 500) {
        r_only(len, echoes[e++ % 5]);
    }
    for (len = 212; len <= 236; len += 4) {
        r_only(len, echoes[e++ % 5]);
    }
    for (len = 436; len <= 460; len += 4) {
        r_only(len, echoes[e++ % 5]);
    }
    r_only(MAXB - 4, ping_wf);
    r_only(MAXB, ping_f);
    r_only(MAXB, ping_rf);
    r_only(MAXB, ping_fw);
    w_and_r(0);
    w_and_r(4);
    w_and_r(200);
    w_and_r(1000);
    w_and_r(MAXB - 36);
    builder();
    printf("round trips: %u\n", trips);
    return am_finish("am_pingpong");
}
