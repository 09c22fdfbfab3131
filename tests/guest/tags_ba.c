/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.3.2-3.3.3, Ba items: node 0 sends blocks of 64 to 4096 bytes
 * (superblocks included, blk_va anywhere inside the block) to node 1 and
 * to itself, with the Ba item first, in the middle and last among W items
 * (TPPI_send_Ba, _WBa, _BaW, _WWBaWWW, _WWWWWWWWBa); the sender's tag
 * changes as asked (Invalidate, Downgrade_RO, Mark_Busy, No_Tag_Change,
 * Validate_RW) and the receiver's TPPI_recv_Ba writes the data and leaves
 * the tag asked (Validate_RO, Validate_RW, Invalidate, Busy_To_Invalid,
 * No_Tag_Change), in both tags and device; the body is a plain word
 * stream (a Ba item read with TPPI_recv_R, an R item with TPPI_recv_Ba);
 * a bad Ba item is refused, reported, and changes no tag.  Prints
 * "tags_ba ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        1
#define PAGES       8

static volatile uint64_t acks, bad_acks;

/*
 * The tag change @chg leaves on a block whose tag was @old (Table 2).
 * This repeats chg_target() of guest/lib/tempest/vm.c on purpose: the
 * test takes its expected tags from the spec, not from the library it
 * checks, so a mistake there cannot hide itself.
 */
static int target(TPPI_BlkTagChange chg, int old)
{
    switch (chg) {
    case TPPI_Blk_Validate_RW:
    case TPPI_Blk_Upgrade_RW:
        return TPPI_Blk_Writable;
    case TPPI_Blk_Validate_RO:
    case TPPI_Blk_Downgrade_RO:
        return TPPI_Blk_ReadOnly;
    case TPPI_Blk_Invalidate:
    case TPPI_Blk_Busy_To_Invalid:
        return TPPI_Blk_Invalid;
    case TPPI_Blk_Mark_Busy:
    case TPPI_Blk_Invalid_To_Busy:
        return TPPI_Blk_Busy;
    default:
        return old;
    }
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

/* Checks the block just received and acknowledges case @id. */
static void received(TPPI_NodeId src, unsigned id, char *blk, int len,
                     unsigned seed, int tag)
{
    bool ok = tt_holds(blk, len, seed) && tt_tagged(blk, len, tag);

    if (!ok) {
        printf("case %u: block %p (%d bytes) holds the data %d, tag %s "
               "(want %s)\n", id, (void *)blk, len, tt_holds(blk, len, seed),
               tt_tag_name(TPPI_get_blk_acc(blk)), tt_tag_name(tag));
    }
    TPPI_send_WW(src, ack_h, (int)id, ok);
}

/* Header words: id, block offset in the segment, seed, chg, old tag. */
static char *seg(unsigned off)
{
    return (char *)(uintptr_t)(TPPI_SEGMENT_BASE + off);
}

/* W..W (5) then Ba. */
static void last_h(TPPI_NodeId src, int size)
{
    unsigned id = TPPI_recv_W(), off = TPPI_recv_W(), seed = TPPI_recv_W();
    TPPI_BlkTagChange chg = TPPI_recv_W();
    int old = TPPI_recv_W(), len = size - 20;

    /* blk_va anywhere inside the block (3.2.3). */
    TPPI_recv_Ba(seg(off) + len / 2 + 3, len, chg);
    received(src, id, seg(off), len, seed, target(chg, old));
}

/* Ba then W..W (5). */
static void first_h(TPPI_NodeId src, int size)
{
    static uint8_t body[TPPI_MAX_AM_BYTES];
    int len = size - 20;
    unsigned id, off, seed;
    TPPI_BlkTagChange chg;
    int old;

    /* The block's address comes after it: read it as plain words. */
    TPPI_recv_R(body, len);
    id = TPPI_recv_W();
    off = TPPI_recv_W();
    seed = TPPI_recv_W();
    chg = TPPI_recv_W();
    old = TPPI_recv_W();
    TPPI_change_blk_acc_and_copy(seg(off), len, chg, body);
    received(src, id, seg(off), len, seed, target(chg, old));
}

/* W W Ba W W W. */
static void middle_h(TPPI_NodeId src, int size)
{
    unsigned id = TPPI_recv_W(), off = TPPI_recv_W();
    int len = size - 20, old;
    unsigned seed;
    TPPI_BlkTagChange chg;
    char *blk = seg(off);
    static uint8_t keep[TPPI_MAX_AM_BYTES];

    /* The change is not known yet: receive, then apply it. */
    memcpy(keep, tt_alias(blk), (size_t)len);
    TPPI_recv_Ba(blk, len, TPPI_Blk_No_Tag_Change);
    seed = TPPI_recv_W();
    chg = TPPI_recv_W();
    old = TPPI_recv_W();
    TPPI_change_blk_acc(blk, len, chg);
    received(src, id, blk, len, seed, target(chg, old));
}

/* An R item received with TPPI_recv_Ba: W id, W off, R. */
static void r_as_ba_h(TPPI_NodeId src, int size)
{
    unsigned id = TPPI_recv_W(), off = TPPI_recv_W();
    int len = size - 8;

    TPPI_recv_Ba(seg(off), len, TPPI_Blk_Validate_RO);
    received(src, id, seg(off), len, id, TPPI_Blk_ReadOnly);
}

struct ba_case {
    int len;
    TPPI_BlkTagChange send_chg;     /* the sender's block */
    TPPI_BlkTagChange recv_chg;     /* the receiver's */
    int recv_old;                   /* the receiver's tag before */
    int where;                      /* 0 last, 1 first, 2 middle, 3 more */
};

static const struct ba_case cases[] = {
    { 64, TPPI_Blk_Invalidate, TPPI_Blk_Validate_RO, TPPI_Blk_Invalid, 0 },
    { 64, TPPI_Blk_Downgrade_RO, TPPI_Blk_Validate_RW, TPPI_Blk_Busy, 0 },
    { 128, TPPI_Blk_Mark_Busy, TPPI_Blk_Invalidate, TPPI_Blk_Writable, 0 },
    { 256, TPPI_Blk_No_Tag_Change, TPPI_Blk_No_Tag_Change,
      TPPI_Blk_ReadOnly, 0 },
    { 1024, TPPI_Blk_Validate_RW, TPPI_Blk_Busy_To_Invalid, TPPI_Blk_Busy,
      0 },
    { 2048, TPPI_Blk_Invalidate, TPPI_Blk_Validate_RO, TPPI_Blk_Invalid, 1 },
    { 64, TPPI_Blk_Downgrade_RO, TPPI_Blk_Upgrade_RW, TPPI_Blk_ReadOnly, 1 },
    { 512, TPPI_Blk_Invalidate, TPPI_Blk_Validate_RW, TPPI_Blk_Invalid, 2 },
    { 64, TPPI_Blk_Mark_Busy, TPPI_Blk_Downgrade_RO, TPPI_Blk_Writable, 2 },
};

/* Sends case @id from our block at @src_off to @dest's at @off. */
static void send_case(TPPI_NodeId dest, unsigned id, const struct ba_case *c,
                      unsigned src_off, unsigned off)
{
    char *blk = seg(src_off);
    unsigned seed = id * 7 + dest;
    int before = c->send_chg == TPPI_Blk_Validate_RW ? TPPI_Blk_Invalid :
                                                      TPPI_Blk_Writable;

    tt_fill(blk, c->len, seed);
    TPPI_change_blk_acc(blk, c->len, TPPI_Blk_Validate_RW);
    if (c->send_chg == TPPI_Blk_Validate_RW) {
        TPPI_change_blk_acc(blk, c->len, TPPI_Blk_Invalidate);
    }
    switch (c->where) {
    case 0:
        TPPI_send_WWWWWBa(dest, last_h, (int)id, (int)off, (int)seed,
                          c->recv_chg, c->recv_old, blk + 1, c->len,
                          c->send_chg);
        break;
    case 1:
        TPPI_send_BaWWWWW(dest, first_h, blk + c->len - 1, c->len,
                          c->send_chg, (int)id, (int)off, (int)seed,
                          c->recv_chg, c->recv_old);
        break;
    default:
        TPPI_send_WWBaWWW(dest, middle_h, (int)id, (int)off, blk, c->len,
                          c->send_chg, (int)seed, c->recv_chg, c->recv_old);
        break;
    }
    if (!tt_tagged(blk, c->len, target(c->send_chg, before))) {
        am_fail("case %u: the sender's block is %s, not %s", id,
                tt_tag_name(TPPI_get_blk_acc(blk)),
                tt_tag_name(target(c->send_chg, before)));
    }
}

/* The receiver's blocks start with the tag each case says. */
static void prepare(unsigned base)
{
    unsigned i, off = base;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        off = (off + cases[i].len - 1) & ~(unsigned)(cases[i].len - 1);
        tt_set(seg(off), TPPI_Blk_Writable);
        TPPI_change_blk_acc(seg(off), cases[i].len, TPPI_Blk_Validate_RW);
        memset(tt_alias(seg(off)), 0, (size_t)cases[i].len);
        switch (cases[i].recv_old) {
        case TPPI_Blk_Invalid:
            TPPI_change_blk_acc(seg(off), cases[i].len, TPPI_Blk_Invalidate);
            break;
        case TPPI_Blk_Busy:
            TPPI_change_blk_acc(seg(off), cases[i].len, TPPI_Blk_Mark_Busy);
            break;
        case TPPI_Blk_ReadOnly:
            TPPI_change_blk_acc(seg(off), cases[i].len,
                                TPPI_Blk_Downgrade_RO);
            break;
        }
        off += cases[i].len;
    }
}

/* Our blocks are in pages 0-3; @dest's receiving ones from @base. */
static void run_cases(TPPI_NodeId dest, unsigned base, unsigned id0)
{
    unsigned i, off = 0;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        off = (off + cases[i].len - 1) & ~(unsigned)(cases[i].len - 1);
        send_case(dest, id0 + i, &cases[i], off, base + off);
        off += cases[i].len;
    }
}

static void misuse(void)
{
    char *blk = seg(7 * TPPI_PAGE_SIZE);
    struct tempest_stats s0, s1;

    tempest_get_stats(&s0);
    TPPI_send_Ba(1, last_h, blk, 96, TPPI_Blk_Invalidate);
    TPPI_send_WBa(1, last_h, 1, blk, 32, TPPI_Blk_Invalidate);
    TPPI_send_Ba(1, last_h, seg(100 * TPPI_PAGE_SIZE), 64,
                 TPPI_Blk_Invalidate);
    TPPI_send_Ba(1, last_h, blk, 64, (TPPI_BlkTagChange)12);
    TPPI_send_WWWWWWWWBa(1, last_h, 1, 2, 3, 4, 5, 6, 7, 8, blk,
                         TPPI_MAX_AM_BYTES, TPPI_Blk_Invalidate);
    tempest_get_stats(&s1);
    if (s1.bad_sends - s0.bad_sends != 5) {
        am_fail("bad Ba items: %llu refused, not 5",
                (unsigned long long)(s1.bad_sends - s0.bad_sends));
    }
    if (!tt_tagged(blk, 64, TPPI_Blk_Writable)) {
        am_fail("a refused Ba item changed the tag");
    }
}

int main(void)
{
    unsigned i, n = sizeof(cases) / sizeof(cases[0]);
    uint64_t want = 0;

    for (i = 0; i < PAGES; i++) {
        TPPI_alloc_and_map(tt_page(i), MODE, TPPI_Blk_Writable, 0, NULL);
    }
    /* Node 1's receive blocks in pages 0-3, node 0's own in pages 4-6. */
    if (TPPI_self_address == 1) {
        prepare(0);
    } else {
        prepare(4 * TPPI_PAGE_SIZE);
    }
    am_barrier();
    if (TPPI_self_address == 0) {
        run_cases(1, 0, 100);
        run_cases(0, 4 * TPPI_PAGE_SIZE, 200);     /* to itself */
        want = 2 * n;
        /* An R item, received as a Ba item. */
        tt_fill(seg(3 * TPPI_PAGE_SIZE + 2048), 256, 300);
        TPPI_send_WWR(1, r_as_ba_h, 300, 3 * TPPI_PAGE_SIZE + 2048,
                      tt_alias(seg(3 * TPPI_PAGE_SIZE + 2048)), 256);
        want++;
        misuse();
        am_wait_count(&acks, want);
        printf("%llu cases acknowledged, %llu bad\n",
               (unsigned long long)acks, (unsigned long long)bad_acks);
    }
    return am_finish("tags_ba");
}
