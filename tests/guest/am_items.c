/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.3.2: any item list.  The library has 0 to 8 W items with at
 * most one R, F or Ba item; every other list this program names
 * (TPPI_send_RR, TPPI_send_BaBa, TPPI_send_WBaRWF from a handler, twelve
 * W items) is generated for it when it is compiled (gen-send.py extra),
 * and the builder takes several Ba items.  Node 0 sends each to node 1
 * (WBaRWF comes back from node 1's handler, forwarding the rest of node
 * 0's message), every byte and every tag is checked on both sides; a
 * BaBa whose second block is bad is refused and changes no tag.  Prints
 * "am_items ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        1
#define PAGES       2

static volatile uint64_t acks, bad_acks, backs;

/* Block @i (of 256 bytes) of page @page. */
static char *blk(unsigned page, unsigned i)
{
    return tt_page(page) + 256 * i;
}

/* A block that is Writable, holding pattern @seed, ready to send. */
static char *ready(unsigned page, unsigned i, int len, unsigned seed)
{
    char *b = blk(page, i);

    tt_fill(b, len, seed);
    TPPI_change_blk_acc(b, len, TPPI_Blk_Validate_RW);
    return b;
}

static void ack_h(TPPI_NodeId src, int size)
{
    unsigned id = (unsigned)TPPI_recv_W();
    int ok = TPPI_recv_W();

    (void)src;
    (void)size;
    if (!ok) {
        am_fail("case %u failed at the receiver", id);
        bad_acks++;
    }
    acks++;
}

static void ack(TPPI_NodeId src, unsigned id, bool ok)
{
    if (!ok) {
        printf("case %u: wrong at node %u\n", id, TPPI_self_address);
    }
    TPPI_send_WW(src, ack_h, (int)id, ok);
}

/* Case 1: R R (8 and 12 bytes). */
static void rr_h(TPPI_NodeId src, int size)
{
    uint32_t got[5];
    bool ok = size == 20;
    unsigned i;

    TPPI_recv_R(got, 20);
    for (i = 0; i < 5; i++) {
        ok = ok && got[i] == tt_pattern(1, i);
    }
    ack(src, 1, ok);
}

/* Case 2: twelve W items. */
static void w12_h(TPPI_NodeId src, int size)
{
    bool ok = size == 48;
    unsigned i;

    for (i = 0; i < 12; i++) {
        ok = (unsigned)TPPI_recv_W() == 100 + i && ok;
    }
    ack(src, 2, ok);
}

/* Case 3: Ba Ba (64 bytes, then 128), each into a block of page 1. */
static void baba_h(TPPI_NodeId src, int size)
{
    bool ok = size == 64 + 128;

    TPPI_recv_Ba(blk(1, 0) + 5, 64, TPPI_Blk_Validate_RO);
    TPPI_recv_Ba(blk(1, 2), 128, TPPI_Blk_Validate_RW);
    ok = ok && tt_holds(blk(1, 0), 64, 30) && tt_holds(blk(1, 2), 128, 31) &&
         tt_tagged(blk(1, 0), 64, TPPI_Blk_ReadOnly) &&
         tt_tagged(blk(1, 2), 128, TPPI_Blk_Writable);
    ack(src, 3, ok);
}

/* Case 4, at node 0: what node 1's WBaRWF brought back. */
static void back_h(TPPI_NodeId src, int size)
{
    uint32_t r[4];
    bool ok = size == 4 + 64 + 16 + 4 + 12;
    unsigned i;

    ok = TPPI_recv_W() == 77 && ok;
    TPPI_recv_Ba(blk(1, 4), 64, TPPI_Blk_Validate_RW);
    ok = ok && tt_holds(blk(1, 4), 64, 40) &&
         tt_tagged(blk(1, 4), 64, TPPI_Blk_Writable);
    TPPI_recv_R(r, 16);
    for (i = 0; i < 4; i++) {
        ok = ok && r[i] == tt_pattern(41, i);
    }
    ok = TPPI_recv_W() == 88 && ok;
    for (i = 0; i < 3; i++) {
        ok = (unsigned)TPPI_recv_W() == 500 + i && ok;
    }
    if (src != 1 || !ok) {
        am_fail("case 4: node 0 got the wrong WBaRWF message");
    }
    backs++;
}

/* Case 4, at node 1: W (the id), then 3 words it forwards with F. */
static void forward_h(TPPI_NodeId src, int size)
{
    static uint32_t r[4];
    char *b = ready(0, 4, 64, 40);
    unsigned i;

    if (TPPI_recv_W() != 4 || size != 16) {
        am_fail("case 4: node 1 got the wrong request");
    }
    for (i = 0; i < 4; i++) {
        r[i] = tt_pattern(41, i);
    }
    TPPI_send_WBaRWF(src, back_h, 77, b, 64, TPPI_Blk_Downgrade_RO, r, 16,
                     88, 12);
    ack(src, 4, tt_tagged(b, 64, TPPI_Blk_ReadOnly));
}

/* Case 5, the builder: W Ba R Ba W. */
static void built_h(TPPI_NodeId src, int size)
{
    uint32_t r[2];
    bool ok = size == 4 + 64 + 8 + 64 + 4;

    ok = TPPI_recv_W() == 5 && ok;
    TPPI_recv_Ba(blk(1, 6), 64, TPPI_Blk_Validate_RO);
    TPPI_recv_R(r, 8);
    TPPI_recv_Ba(blk(1, 7), 64, TPPI_Blk_Validate_RO);
    ok = ok && TPPI_recv_W() == 55;
    ok = ok && r[0] == 1 && r[1] == 2 && tt_holds(blk(1, 6), 64, 50) &&
         tt_holds(blk(1, 7), 64, 51) &&
         tt_tagged(blk(1, 6), 64, TPPI_Blk_ReadOnly);
    ack(src, 5, ok);
}

static void sender(void)
{
    static uint32_t a[2], b[3];
    struct tempest_stats s0, s1;
    tempest_msg m;
    char *x, *y;
    unsigned i;

    for (i = 0; i < 2; i++) {
        a[i] = tt_pattern(1, i);
    }
    for (i = 0; i < 3; i++) {
        b[i] = tt_pattern(1, 2 + i);
    }
    TPPI_send_RR(1, rr_h, a, 8, b, 12);
    TPPI_send_WWWWWWWWWWWW(1, w12_h, 100, 101, 102, 103, 104, 105, 106, 107,
                           108, 109, 110, 111);

    x = ready(0, 0, 64, 30);
    y = ready(0, 2, 128, 31);
    TPPI_send_BaBa(1, baba_h, x, 64, TPPI_Blk_Invalidate, y + 100, 128,
                   TPPI_Blk_Downgrade_RO);
    if (!tt_tagged(x, 64, TPPI_Blk_Invalid) ||
        !tt_tagged(y, 128, TPPI_Blk_ReadOnly)) {
        am_fail("case 3: the sender's tags did not change as asked");
    }

    TPPI_send_WWWW(1, forward_h, 4, 500, 501, 502);

    x = ready(0, 6, 64, 50);
    y = ready(0, 7, 64, 51);
    tempest_msg_begin(&m, 1, built_h);
    tempest_msg_W(&m, 5);
    tempest_msg_Ba(&m, x, 64, TPPI_Blk_Downgrade_RO);
    tempest_msg_R(&m, (uint32_t[2]){ 1, 2 }, 8);
    tempest_msg_Ba(&m, y, 64, TPPI_Blk_No_Tag_Change);
    tempest_msg_W(&m, 55);
    if (tempest_msg_send(&m) != 0 || !tt_tagged(x, 64, TPPI_Blk_ReadOnly) ||
        !tt_tagged(y, 64, TPPI_Blk_Writable)) {
        am_fail("case 5: the builder's message or its tags are wrong");
    }

    /* A bad second Ba item: nothing sent, the first block's tag kept. */
    x = ready(0, 8, 64, 60);
    tempest_get_stats(&s0);
    TPPI_send_BaBa(1, baba_h, x, 64, TPPI_Blk_Invalidate,
                   tt_page(100), 64, TPPI_Blk_Invalidate);
    TPPI_send_BaBa(1, baba_h, x, 64, TPPI_Blk_Invalidate, x, 96,
                   TPPI_Blk_Invalidate);
    tempest_get_stats(&s1);
    if (s1.bad_sends - s0.bad_sends != 2 ||
        !tt_tagged(x, 64, TPPI_Blk_Writable)) {
        am_fail("bad BaBa: %llu refused (want 2), tag kept %d",
                (unsigned long long)(s1.bad_sends - s0.bad_sends),
                tt_tagged(x, 64, TPPI_Blk_Writable));
    }
}

static int backs_reach(void *want)
{
    return backs >= *(uint64_t *)want;
}

int main(void)
{
    uint64_t one = 1;
    unsigned i;

    for (i = 0; i < PAGES; i++) {
        TPPI_alloc_and_map(tt_page(i), MODE, TPPI_Blk_Writable, 0, NULL);
    }
    am_barrier();
    if (TPPI_self_address == 0) {
        sender();
        am_wait_count(&acks, 5);
        tempest_wait(backs_reach, &one);
        printf("%llu cases acknowledged, %llu bad, %llu WBaRWF back\n",
               (unsigned long long)acks, (unsigned long long)bad_acks,
               (unsigned long long)backs);
    }
    return am_finish("am_items");
}
