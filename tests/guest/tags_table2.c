/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest Table 2 and sections 3.2.3-3.2.5: every entry of Table 2 (all
 * nine TPPI_BlkTagChange values, from every tag they apply to) leaves the
 * tag the table names, in TPPI_get_blk_acc() and in the node controller
 * (TEMPEST_CMD_TAG_GET), and the block then behaves as Table 1 says;
 * block specifiers with an address anywhere inside the block; superblocks
 * (Invalidate over mixed ReadOnly and Writable blocks, a change across two
 * pages) change every minimal block and nothing around them;
 * TPPI_change_blk_acc_and_copy() copies (from private memory and from
 * another block of the segment) and changes the tag.  Prints
 * "tags_table2 ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        2

static volatile unsigned faults;

/* Counts the fault, validates the block and resumes. */
static void fixup(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    faults++;
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

static const struct {
    int from;
    TPPI_BlkTagChange chg;
    int to;
    const char *name;
} table2[] = {
#define E(F, C, T) { TPPI_Blk_##F, TPPI_Blk_##C, TPPI_Blk_##T, #F " " #C }
    E(Invalid, No_Tag_Change, Invalid), E(Invalid, Invalidate, Invalid),
    E(Invalid, Invalid_To_Busy, Busy), E(Invalid, Mark_Busy, Busy),
    E(Invalid, Validate_RO, ReadOnly), E(Invalid, Validate_RW, Writable),
    E(Busy, Busy_To_Invalid, Invalid), E(Busy, Invalidate, Invalid),
    E(Busy, No_Tag_Change, Busy), E(Busy, Mark_Busy, Busy),
    E(Busy, Validate_RO, ReadOnly), E(Busy, Validate_RW, Writable),
    E(ReadOnly, Invalidate, Invalid), E(ReadOnly, Mark_Busy, Busy),
    E(ReadOnly, No_Tag_Change, ReadOnly),
    E(ReadOnly, Upgrade_RW, Writable), E(ReadOnly, Validate_RW, Writable),
    E(Writable, Invalidate, Invalid), E(Writable, Mark_Busy, Busy),
    E(Writable, Downgrade_RO, ReadOnly),
    E(Writable, No_Tag_Change, Writable),
    E(Writable, Validate_RW, Writable),
#undef E
};

/* Table 1 for the block: a load, then a store, fault as the tag says. */
static void behaves(const char *what, char *blk, int tag)
{
    unsigned before = faults;
    bool load_faults = tag == TPPI_Blk_Busy || tag == TPPI_Blk_Invalid;

    tt_ldr(blk + 24);
    if ((faults != before) != load_faults) {
        am_fail("%s: a load %s", what, load_faults ? "did not fault" :
                "faulted");
    }
    before = faults;
    tt_str(blk + 24, 5);
    /* After a load fault the handler made it Writable. */
    if ((faults != before) != (tag == TPPI_Blk_ReadOnly)) {
        am_fail("%s: a store %s", what, tag == TPPI_Blk_ReadOnly ?
                "did not fault" : "faulted");
    }
}

static void expect(const char *what, char *blk, int tag)
{
    int t = (int)TPPI_get_blk_acc(blk), d = tt_dev_tag(blk);

    if (t != tag || d != tag) {
        am_fail("%s: tag %s (device %s), not %s", what, tt_tag_name(t),
                tt_tag_name(d), tt_tag_name(tag));
    }
}

static void entries(char *page)
{
    unsigned i, nine = 0;
    char *blk;

    for (i = 0; i < sizeof(table2) / sizeof(table2[0]); i++) {
        blk = page + (i % 64) * TPPI_TAG_BLK_SIZE;
        tt_set(blk, table2[i].from);
        expect("set-up", blk, table2[i].from);
        /* Any address inside the block names it (3.2.3). */
        TPPI_change_blk_acc(blk + 37, TPPI_TAG_BLK_SIZE, table2[i].chg);
        expect(table2[i].name, blk, table2[i].to);
        behaves(table2[i].name, blk, table2[i].to);
        nine |= 1U << table2[i].chg;
    }
    if (nine != 0x1ff) {
        am_fail("not every TPPI_BlkTagChange was tried: 0x%x", nine);
    }
}

/* Superblocks (3.2.3): each minimal block changes, nothing around. */
static void superblocks(char *p0, char *p1)
{
    char *sb = p0 + 4 * TPPI_TAG_BLK_SIZE;      /* a 256-byte superblock */
    unsigned i;

    for (i = 0; i < 8; i++) {
        tt_set(p0 + i * TPPI_TAG_BLK_SIZE, TPPI_Blk_Writable);
    }
    tt_set(sb, TPPI_Blk_ReadOnly);
    tt_set(sb + 2 * TPPI_TAG_BLK_SIZE, TPPI_Blk_ReadOnly);
    TPPI_change_blk_acc(sb + 200, 4 * TPPI_TAG_BLK_SIZE,
                        TPPI_Blk_Invalidate);
    for (i = 0; i < 8; i++) {
        expect(i >= 4 ? "superblock Invalidate" : "block before it",
               p0 + i * TPPI_TAG_BLK_SIZE,
               i >= 4 ? TPPI_Blk_Invalid : TPPI_Blk_Writable);
    }
    /* An 8 KiB superblock: two whole pages (p0 is 8 KiB aligned). */
    TPPI_change_blk_acc(p0 + 100, 2 * TPPI_PAGE_SIZE, TPPI_Blk_Mark_Busy);
    for (i = 0; i < 2 * TPPI_PAGE_SIZE / TPPI_TAG_BLK_SIZE; i++) {
        expect("two-page superblock", p0 + i * TPPI_TAG_BLK_SIZE,
               TPPI_Blk_Busy);
    }
    TPPI_change_blk_acc(p1, 2 * TPPI_PAGE_SIZE, TPPI_Blk_Validate_RW);
    expect("two-page superblock, again", p1 + TPPI_PAGE_SIZE - 1,
           TPPI_Blk_Writable);
    expect("two-page superblock, again", p0, TPPI_Blk_Writable);
}

/* 3.2.5: TPPI_change_blk_acc_and_copy. */
static void and_copy(char *page, char *other)
{
    uint8_t src[256];
    unsigned i;
    char *blk = page + 8 * TPPI_TAG_BLK_SIZE;

    for (i = 0; i < sizeof(src); i++) {
        src[i] = (uint8_t)(i * 7 + 1);
    }
    tt_set(blk, TPPI_Blk_Invalid);
    TPPI_change_blk_acc_and_copy(blk + 3, TPPI_TAG_BLK_SIZE,
                                 TPPI_Blk_Validate_RO, src);
    expect("and_copy Validate_RO", blk, TPPI_Blk_ReadOnly);
    if (memcmp(blk, src, TPPI_TAG_BLK_SIZE) != 0) {
        am_fail("and_copy: the block does not hold the data");
    }
    /* A 256-byte superblock, from an Invalid block of the segment. */
    memcpy(tt_alias(other), src, sizeof(src));
    TPPI_change_blk_acc(other, 256, TPPI_Blk_Invalidate);
    tt_set(blk, TPPI_Blk_Writable);
    TPPI_change_blk_acc_and_copy(blk, 256, TPPI_Blk_Downgrade_RO, other);
    for (i = 0; i < 4; i++) {
        expect("and_copy superblock", blk + i * TPPI_TAG_BLK_SIZE,
               TPPI_Blk_ReadOnly);
    }
    if (memcmp(blk, src, sizeof(src)) != 0) {
        am_fail("and_copy from the segment: the data differs");
    }
}

int main(void)
{
    unsigned before, i;

    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Busy,
                                        TPPI_ReadAccess, fixup);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Busy,
                                        TPPI_WriteAccess, fixup);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, fixup);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_WriteAccess, fixup);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_ReadOnly,
                                        TPPI_WriteAccess, fixup);
    for (i = 0; i < 4; i++) {
        if (!TPPI_alloc_and_map(tt_page(i), MODE, TPPI_Blk_Writable, 0,
                                NULL)) {
            am_fail("TPPI_alloc_and_map of page %u failed", i);
            return am_finish("tags_table2");
        }
    }
    entries(tt_page(0));
    superblocks(tt_page(2), tt_page(3));
    before = faults;
    and_copy(tt_page(1), tt_page(1) + 2048);
    if (faults != before) {
        am_fail("and_copy or reading its ReadOnly result faulted");
    }
    printf("%u faults\n", faults);
    return am_finish("tags_table2");
}
