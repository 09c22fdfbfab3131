/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest Table 1 and sections 2 and 3.2.7: a load or store faults exactly
 * when Table 1 says, for every tag, on pages of two page modes; the fault
 * runs the handler registered for (page mode, tag, access) with an
 * address inside the faulting block and the page's usr_ptr and home; a
 * refused store has not happened when the handler runs; after the
 * handler validates the block and resumes, the access completes.  Then
 * every kind of access the node controller checks: byte, word, pair,
 * FP/SIMD, atomics (a write fault on a ReadOnly block; on a Busy or
 * Invalid one single-threaded TCG may check the load first), exclusives,
 * DC ZVA, and accesses spanning two blocks or two pages (the fault names
 * the first block that refuses).  Prints "tags_table1 ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE_A      0
#define MODE_B      5
#define HOME_A      7
#define HOME_B      9

struct hit {
    int mode, tag, acc;
    uintptr_t va;
    void *usr;
    TPPI_NodeId home;
    uint64_t data_at_fault;     /* the 8 bytes at probe, via the alias */
};

static volatile unsigned hits;
static struct hit last;
static uintptr_t hit_va[8];     /* the last handlers' va, by hits % 8 */
static char *probe;             /* where the access goes, for data_at_fault */
static char usr_a, usr_b;

static void record(int mode, int tag, int acc, void *va, void *usr,
                   TPPI_NodeId home)
{
    last.mode = mode;
    last.tag = tag;
    last.acc = acc;
    last.va = (uintptr_t)va;
    last.usr = usr;
    last.home = home;
    last.data_at_fault = probe ? *(uint64_t *)tt_alias(probe) : 0;
    hit_va[hits % 8] = (uintptr_t)va;
    hits++;
    /* Make the access legal, then let the thread retry it. */
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

#define HANDLER(M, T, A)                                                  \
    static void h_##M##_##T##_##A(void *va, void *usr, TPPI_NodeId home) \
    {                                                                     \
        record(M, TPPI_Blk_##T, A, va, usr, home);                        \
    }
HANDLER(MODE_A, Busy, 0)
HANDLER(MODE_A, Busy, 1)
HANDLER(MODE_A, Invalid, 0)
HANDLER(MODE_A, Invalid, 1)
HANDLER(MODE_A, ReadOnly, 1)
HANDLER(MODE_B, Busy, 0)
HANDLER(MODE_B, Busy, 1)
HANDLER(MODE_B, Invalid, 0)
HANDLER(MODE_B, Invalid, 1)
HANDLER(MODE_B, ReadOnly, 1)

static void register_mode(TPPI_PageMode m)
{
    bool a = m == MODE_A;

    TPPI_register_blk_acc_fault_handler(m, TPPI_Blk_Busy, TPPI_ReadAccess,
        a ? h_MODE_A_Busy_0 : h_MODE_B_Busy_0);
    TPPI_register_blk_acc_fault_handler(m, TPPI_Blk_Busy, TPPI_WriteAccess,
        a ? h_MODE_A_Busy_1 : h_MODE_B_Busy_1);
    TPPI_register_blk_acc_fault_handler(m, TPPI_Blk_Invalid, TPPI_ReadAccess,
        a ? h_MODE_A_Invalid_0 : h_MODE_B_Invalid_0);
    TPPI_register_blk_acc_fault_handler(m, TPPI_Blk_Invalid,
        TPPI_WriteAccess, a ? h_MODE_A_Invalid_1 : h_MODE_B_Invalid_1);
    TPPI_register_blk_acc_fault_handler(m, TPPI_Blk_ReadOnly,
        TPPI_WriteAccess, a ? h_MODE_A_ReadOnly_1 : h_MODE_B_ReadOnly_1);
}

/* Table 1: does (tag, access) fault? */
static bool faults(int tag, int acc)
{
    return tag == TPPI_Blk_Busy || tag == TPPI_Blk_Invalid ||
           (tag == TPPI_Blk_ReadOnly && acc == TPPI_WriteAccess);
}

/*
 * Checks the fault (or its absence) of the access just made.  @acc -1:
 * either handler (an atomic read-modify-write on a block that refuses
 * loads too: single-threaded TCG checks its load first).
 */
static void check(const char *what, unsigned before, bool want_fault,
                  int mode, int tag, int acc, char *blk, void *usr,
                  TPPI_NodeId home)
{
    uintptr_t b = (uintptr_t)blk;

    if ((hits != before) != want_fault) {
        am_fail("%s on a %s block (mode %d): %s", what, tt_tag_name(tag),
                mode, want_fault ? "did not fault" : "faulted");
        return;
    }
    if (!want_fault) {
        return;
    }
    if (hits != before + 1) {
        am_fail("%s on a %s block: %u handler calls, not 1", what,
                tt_tag_name(tag), hits - before);
    }
    if (last.mode != mode || last.tag != tag ||
        (acc >= 0 && last.acc != acc)) {
        am_fail("%s on a %s block (mode %d, %s): handler of mode %d, %s, "
                "%s called", what, tt_tag_name(tag), mode,
                acc ? "write" : "read", last.mode, tt_tag_name(last.tag),
                last.acc ? "write" : "read");
    }
    if (last.va - b >= TPPI_TAG_BLK_SIZE) {
        am_fail("%s: handler va 0x%lx is not in block 0x%lx", what,
                (unsigned long)last.va, (unsigned long)b);
    }
    if (last.usr != usr || last.home != home) {
        am_fail("%s: handler got usr_ptr %p home %u, not %p %u", what,
                last.usr, last.home, usr, home);
    }
}

/* Every row of Table 1 with 8-byte LDR and STR, on pages of two modes. */
static void table1(char *page, TPPI_PageMode mode, void *usr,
                   TPPI_NodeId home)
{
    int tag, acc, k = 0;
    char *blk;
    unsigned before;
    uint64_t v;

    for (tag = 0; tag < TPPI_NUM_BLK_ACC_TAGS; tag++) {
        for (acc = 0; acc < 2; acc++, k++) {
            blk = page + k * TPPI_TAG_BLK_SIZE;
            probe = blk + 8;
            *(uint64_t *)tt_alias(probe) = 0x1111 * (k + 1);
            tt_set(blk, tag);
            if ((int)TPPI_get_blk_acc(blk) != tag || tt_dev_tag(blk) != tag) {
                am_fail("block %d: tag %d (device %d), not %d", k,
                        TPPI_get_blk_acc(blk), tt_dev_tag(blk), tag);
            }
            before = hits;
            if (acc == TPPI_ReadAccess) {
                v = tt_ldr(blk + 8);
                if (v != 0x1111ULL * (k + 1)) {
                    am_fail("load from a %s block read 0x%llx",
                            tt_tag_name(tag), (unsigned long long)v);
                }
            } else {
                tt_str(blk + 8, 0xabcd0000ULL + k);
                v = *(uint64_t *)tt_alias(probe);
                if (v != 0xabcd0000ULL + k) {
                    am_fail("store to a %s block left 0x%llx",
                            tt_tag_name(tag), (unsigned long long)v);
                }
                if (hits != before &&
                    last.data_at_fault != 0x1111ULL * (k + 1)) {
                    am_fail("refused store to a %s block had happened "
                            "when its handler ran", tt_tag_name(tag));
                }
            }
            check(acc ? "STR" : "LDR", before, faults(tag, acc), mode, tag,
                  acc, blk, usr, home);
        }
    }
    probe = NULL;
}

/* One access of a given kind against a block tagged @tag. */
static void kind(const char *what, char *page, int *k, int tag, int acc,
                 int span)
{
    char *blk = page + (*k)++ * 2 * TPPI_TAG_BLK_SIZE;
    char *bad = blk, *addr = blk + 16;
    unsigned before;
    uint64_t v = 0;
    bool rmw = !strcmp(what, "LDADD") || !strcmp(what, "SWP");

    tt_set(blk, TPPI_Blk_Writable);
    tt_set(blk + TPPI_TAG_BLK_SIZE, TPPI_Blk_Writable);
    if (span) {
        /* Across two blocks: 4 bytes in the first, the rest after. */
        addr = blk + TPPI_TAG_BLK_SIZE - 4;
    }
    if (span == 1) {
        /* The first block is Writable, the second refuses. */
        bad = blk + TPPI_TAG_BLK_SIZE;
    } else if (span == 2) {
        /* Both refuse: the first one is named, then the second. */
        tt_set(blk + TPPI_TAG_BLK_SIZE, tag);
    }
    tt_set(bad, tag);
    before = hits;
    if (!strcmp(what, "LDRB")) {
        v = tt_ldrb(addr);
    } else if (!strcmp(what, "STRB")) {
        tt_strb(addr, 1);
    } else if (!strcmp(what, "LDR")) {
        v = tt_ldr(addr);
    } else if (!strcmp(what, "STR")) {
        tt_str(addr, 1);
    } else if (!strcmp(what, "LDP")) {
        v = tt_ldp(addr);
    } else if (!strcmp(what, "STP")) {
        tt_stp(addr, 1, 2);
    } else if (!strcmp(what, "LDR q")) {
        v = tt_ld_q(addr);
    } else if (!strcmp(what, "STR q")) {
        tt_st_q(addr, 3);
    } else if (!strcmp(what, "LDADD")) {
        v = tt_ldadd(addr, 1);
    } else if (!strcmp(what, "SWP")) {
        v = tt_swp(addr, 5);
    } else if (!strcmp(what, "LDXR")) {
        v = tt_ldxr(addr);
    } else if (!strcmp(what, "DC ZVA")) {
        tt_dc_zva(bad);
    }
    (void)v;
    if (span == 2 && faults(tag, acc)) {
        /* Its retry meets the second block, also refusing. */
        if (hits != before + 2 ||
            hit_va[before % 8] - (uintptr_t)blk >= TPPI_TAG_BLK_SIZE ||
            hit_va[(before + 1) % 8] - (uintptr_t)blk -
            TPPI_TAG_BLK_SIZE >= TPPI_TAG_BLK_SIZE) {
            am_fail("%s across two refusing %s blocks: %u faults, at 0x%lx "
                    "then 0x%lx (blocks 0x%lx, +64)", what, tt_tag_name(tag),
                    hits - before, (unsigned long)hit_va[before % 8],
                    (unsigned long)hit_va[(before + 1) % 8],
                    (unsigned long)blk);
        }
        return;
    }
    check(what, before, faults(tag, acc), MODE_A, tag,
          rmw && tag != TPPI_Blk_ReadOnly ? -1 : acc, bad, &usr_a, HOME_A);
}

static void kinds(char *page)
{
    static const struct {
        const char *what;
        int acc;
        int span;       /* 0: one block, 1: W then refusing, 2: both */
    } k[] = {
        { "LDRB", 0, 0 }, { "STRB", 1, 0 }, { "LDR", 0, 0 },
        { "STR", 1, 0 }, { "LDR", 0, 1 }, { "STR", 1, 1 },
        { "LDR", 0, 2 }, { "LDP", 0, 1 }, { "STP", 1, 1 },
        { "LDR q", 0, 0 }, { "STR q", 1, 0 }, { "LDR q", 0, 1 },
        { "STR q", 1, 1 }, { "LDADD", 1, 0 }, { "SWP", 1, 0 },
        { "LDXR", 0, 0 }, { "DC ZVA", 1, 0 },
    };
    int tags[] = { TPPI_Blk_Invalid, TPPI_Blk_ReadOnly, TPPI_Blk_Busy };
    int n = 0;
    unsigned i, t;

    for (t = 0; t < 3; t++) {
        for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
            kind(k[i].what, page + (n / 32) * TPPI_PAGE_SIZE, &n, tags[t],
                 k[i].acc, k[i].span);
            n %= 32;
            if (n == 0) {
                page += TPPI_PAGE_SIZE;
            }
        }
    }
}

/* An access that crosses from a Writable page into a refusing one. */
static void page_span(char *p0, char *p1)
{
    unsigned before = hits;

    tt_set(p0 + TPPI_PAGE_SIZE - TPPI_TAG_BLK_SIZE, TPPI_Blk_Writable);
    tt_set(p1, TPPI_Blk_Invalid);
    tt_ldr(p1 - 4);
    check("LDR across pages", before, true, MODE_A, TPPI_Blk_Invalid,
          TPPI_ReadAccess, p1, &usr_a, HOME_A);
    tt_set(p1, TPPI_Blk_ReadOnly);
    before = hits;
    tt_str(p1 - 4, 7);
    check("STR across pages", before, true, MODE_A, TPPI_Blk_ReadOnly,
          TPPI_WriteAccess, p1, &usr_a, HOME_A);
}

int main(void)
{
    char *pa = tt_page(0), *pb = tt_page(1);
    unsigned i;

    register_mode(MODE_A);
    register_mode(MODE_B);
    if (!TPPI_alloc_and_map(pa, MODE_A, TPPI_Blk_Writable, HOME_A, &usr_a) ||
        !TPPI_alloc_and_map(pb, MODE_B, TPPI_Blk_Writable, HOME_B, &usr_b)) {
        am_fail("TPPI_alloc_and_map failed");
        return am_finish("tags_table1");
    }
    for (i = 2; i < 8; i++) {
        if (!TPPI_alloc_and_map(tt_page(i), MODE_A, TPPI_Blk_Writable,
                                HOME_A, &usr_a)) {
            am_fail("TPPI_alloc_and_map of page %u failed", i);
        }
    }
    table1(pa, MODE_A, &usr_a, HOME_A);
    table1(pb, MODE_B, &usr_b, HOME_B);
    kinds(tt_page(2));
    page_span(tt_page(6), tt_page(7));
    printf("%u faults handled on cpu %u (protocol thread on cpu %u)\n", hits,
           rt_cpu_id(), tempest_protocol_cpu());
    return am_finish("tags_table1");
}
