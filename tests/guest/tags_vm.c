/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.1 (virtual memory management) and the misuse reports of 3.2:
 * TPPI_alloc_and_map returns 0 for every failure the spec lists (no
 * memory, not page-aligned, already mapped, outside the segment) and for
 * a bad mode or tag, and a fresh page is zero with every block tagged as
 * asked; TPPI_get_page_info returns -1, 0 and 1 as 3.1.5 says;
 * TPPI_unmap_and_free and TPPI_remap refuse what they must, and remap
 * keeps the frame's data, tags, mode, home and usr_ptr; the page fault
 * handler gets the address, the pc of the faulting instruction and the
 * access type, and a thread resumed before its page is mapped faults
 * again; with a small tagged memory (--tagmem 1M: 256 frames) allocation
 * fails exactly when every frame is used, and a freed frame can be
 * mapped again.  A page remapped after a load through its old address
 * and one through its new address still faults at the new address once
 * a block is invalidated (3.2.6: the node controller drops the TLB
 * entries of a page it restricts, whatever address they were filled
 * for).  Bad block specifiers, bad changes and handlers for the
 * three combinations that never fault are reported.  Prints
 * "tags_vm ok".
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        3

static volatile unsigned pf_count;
static volatile uintptr_t pf_va;
static volatile int pf_pc, pf_write;
static volatile bool map_in_handler = true;

static void page_fault(void *va, int pc, int is_write)
{
    pf_count++;
    pf_va = (uintptr_t)va;
    pf_pc = pc;
    pf_write = is_write;
    if (!map_in_handler) {
        /* Resumed unmapped: the access faults again. */
        map_in_handler = true;
        TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
        return;
    }
    if (!TPPI_alloc_and_map((void *)((uintptr_t)va &
                                     ~(uintptr_t)(TPPI_PAGE_SIZE - 1)),
                            MODE, TPPI_Blk_Writable, 4, NULL)) {
        am_fail("page fault handler: TPPI_alloc_and_map failed");
    }
    /* Any block of the page resumes a page fault (3.6). */
    TPPI_resume_va((void *)(((uintptr_t)va ^ 0x800)), TPPI_TAG_BLK_SIZE);
}

static void never(void *va, void *usr, TPPI_NodeId home)
{
    (void)va;
    (void)usr;
    (void)home;
    am_fail("a handler of a combination that never faults was called");
}

#define CHECK(cond, ...) do { if (!(cond)) { am_fail(__VA_ARGS__); } } while (0)

#define REMAP_MODE  5

static volatile unsigned inv_faults;
static volatile uintptr_t inv_va;

static void validate(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    inv_faults++;
    inv_va = (uintptr_t)va;
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

static void downgrade_after_remap(void)
{
    char *a = tt_page(44), *b = tt_page(45);

    TPPI_register_blk_acc_fault_handler(REMAP_MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, validate);
    CHECK(TPPI_alloc_and_map(a, REMAP_MODE, TPPI_Blk_Writable, 0, NULL) == 1,
          "TPPI_alloc_and_map failed");
    /* The frame is in the TLB through a, then through b. */
    CHECK(tt_ldr(a) == 0, "a fresh page is not zero");
    CHECK(TPPI_remap(a, b) == 1, "remap failed");
    CHECK(tt_ldr(b) == 0, "remap: wrong data through the new address");
    TPPI_change_blk_acc(b, TPPI_TAG_BLK_SIZE, TPPI_Blk_Invalidate);
    tt_ldr(b);
    CHECK(inv_faults == 1 && inv_va == (uintptr_t)b,
          "load of an invalidated block after remap: %u faults (va 0x%lx), "
          "not 1 at 0x%lx", inv_faults, (unsigned long)inv_va,
          (unsigned long)(uintptr_t)b);
    CHECK(TPPI_unmap_and_free(b) == 1, "unmap failed");
}

static void alloc_failures(void)
{
    char *base = (char *)(uintptr_t)TPPI_SEGMENT_BASE;
    char *pg = tt_page(10);

    CHECK(TPPI_alloc_and_map(pg + 8, MODE, TPPI_Blk_Writable, 0, NULL) == 0,
          "unaligned page mapped");
    CHECK(TPPI_alloc_and_map(base - TPPI_PAGE_SIZE, MODE, TPPI_Blk_Writable,
                             0, NULL) == 0, "page below the segment mapped");
    CHECK(TPPI_alloc_and_map(base + TPPI_SEGMENT_SIZE, MODE,
                             TPPI_Blk_Writable, 0, NULL) == 0,
          "page after the segment mapped");
    CHECK(TPPI_alloc_and_map(NULL, MODE, TPPI_Blk_Writable, 0, NULL) == 0,
          "NULL mapped");
    CHECK(TPPI_alloc_and_map(pg, TPPI_NUM_PAGE_MODES, TPPI_Blk_Writable, 0,
                             NULL) == 0, "page mode out of range accepted");
    CHECK(TPPI_alloc_and_map(pg, MODE, (TPPI_BlkAccTag)4, 0, NULL) == 0,
          "tag out of range accepted");
    CHECK(TPPI_get_page_info(pg, NULL) == 0, "a refused page is mapped");
    CHECK(TPPI_alloc_and_map(pg, MODE, TPPI_Blk_Writable, 0, NULL) == 1,
          "first mapping failed");
    CHECK(TPPI_alloc_and_map(pg, MODE, TPPI_Blk_Writable, 0, NULL) == 0,
          "a page mapped twice");
    /* The last page of the segment is in it. */
    CHECK(TPPI_alloc_and_map(base + TPPI_SEGMENT_SIZE - TPPI_PAGE_SIZE, MODE,
                             TPPI_Blk_ReadOnly, 0, NULL) == 1,
          "the segment's last page could not be mapped");
    CHECK(TPPI_unmap_and_free(base + TPPI_SEGMENT_SIZE - TPPI_PAGE_SIZE) == 1,
          "the segment's last page could not be unmapped");
}

static void fresh_pages(void)
{
    int acc, b;
    char *pg;

    for (acc = 0; acc < TPPI_NUM_BLK_ACC_TAGS; acc++) {
        pg = tt_page(20 + acc);
        /* A frame used before: its old data and tags must not show. */
        if (!TPPI_alloc_and_map(pg, MODE, TPPI_Blk_Writable, 0, NULL)) {
            am_fail("TPPI_alloc_and_map failed");
            return;
        }
        memset(pg, 0xa5, TPPI_PAGE_SIZE);
        TPPI_change_blk_acc(pg + 64, 64, TPPI_Blk_Downgrade_RO);
        TPPI_unmap_and_free(pg);
        if (!TPPI_alloc_and_map(pg, MODE, (TPPI_BlkAccTag)acc, 0, NULL)) {
            am_fail("TPPI_alloc_and_map failed");
            return;
        }
        for (b = 0; b < TPPI_PAGE_SIZE; b += TPPI_TAG_BLK_SIZE) {
            if ((int)TPPI_get_blk_acc(pg + b) != acc ||
                tt_dev_tag(pg + b) != acc) {
                am_fail("fresh page tagged %s: block %d is %s (device %s)",
                        tt_tag_name(acc), b / TPPI_TAG_BLK_SIZE,
                        tt_tag_name(TPPI_get_blk_acc(pg + b)),
                        tt_tag_name(tt_dev_tag(pg + b)));
                break;
            }
        }
        for (b = 0; b < TPPI_PAGE_SIZE; b++) {
            if (tt_alias(pg)[b] != 0) {
                am_fail("fresh page: byte %d is 0x%x, not 0", b,
                        tt_alias(pg)[b]);
                break;
            }
        }
    }
}

static void page_info(void)
{
    char *pg = tt_page(30);
    union {
        TPPI_PageInfo info;
        char bytes[sizeof(TPPI_PageInfo) + 8];
    } u;
    static int usr;

    CHECK(TPPI_get_page_info((char *)(uintptr_t)TPPI_SEGMENT_BASE - 1,
                             &u.info) == -1, "get_page_info below: not -1");
    CHECK(TPPI_get_page_info((char *)(uintptr_t)(TPPI_SEGMENT_BASE +
                                                 TPPI_SEGMENT_SIZE),
                             &u.info) == -1, "get_page_info after: not -1");
    CHECK(TPPI_get_page_info(pg, (TPPI_PageInfo *)(u.bytes + 1)) == -1,
          "get_page_info with a misaligned info pointer: not -1");
    CHECK(TPPI_get_page_info(pg + 5, &u.info) == 0,
          "get_page_info of an unmapped page: not 0");
    CHECK(TPPI_alloc_and_map(pg, 7, TPPI_Blk_Invalid, 5, &usr) == 1,
          "TPPI_alloc_and_map failed");
    memset(&u, 0, sizeof(u));
    CHECK(TPPI_get_page_info(pg + 4095, &u.info) == 1 && u.info.mode == 7 &&
          u.info.home == 5 && u.info.usr_ptr == &usr,
          "get_page_info: wrong information");
    CHECK(TPPI_get_page_info(pg + 17, NULL) == 1,
          "get_page_info with NULL: not 1");
    CHECK(TPPI_get_page_user_ptr(pg + 100) == &usr &&
          TPPI_get_page_mode(pg + 200) == 7 &&
          TPPI_get_page_home(pg + 300) == 5,
          "get_page_user_ptr/mode/home: wrong values");
}

static void unmap_and_remap(void)
{
    char *a = tt_page(40), *b = tt_page(41), *c = tt_page(42);
    static int usr;
    TPPI_PageInfo info;
    int i;

    CHECK(TPPI_unmap_and_free(a) == 0, "unmap of an unmapped page: not 0");
    CHECK(TPPI_alloc_and_map(a, 9, TPPI_Blk_Writable, 3, &usr) == 1,
          "TPPI_alloc_and_map failed");
    CHECK(TPPI_unmap_and_free(a + 64) == 0, "unaligned unmap: not 0");
    CHECK(TPPI_unmap_and_free((char *)(uintptr_t)TPPI_SEGMENT_BASE -
                              TPPI_PAGE_SIZE) == 0,
          "unmap outside the segment: not 0");
    for (i = 0; i < TPPI_PAGE_SIZE; i++) {
        a[i] = (char)(i * 13 + 5);
    }
    /* Every tag appears on the page. */
    TPPI_change_blk_acc(a + 1 * 64, 64, TPPI_Blk_Downgrade_RO);
    TPPI_change_blk_acc(a + 2 * 64, 64, TPPI_Blk_Invalidate);
    TPPI_change_blk_acc(a + 3 * 64, 64, TPPI_Blk_Mark_Busy);
    TPPI_change_blk_acc(a + 8 * 64, 512, TPPI_Blk_Downgrade_RO);

    CHECK(TPPI_alloc_and_map(c, MODE, TPPI_Blk_Writable, 0, NULL) == 1,
          "TPPI_alloc_and_map failed");
    CHECK(TPPI_remap(a, c) == 0, "remap onto a mapped page: not 0");
    CHECK(TPPI_remap(b, c + TPPI_PAGE_SIZE) == 0,
          "remap of an unmapped page: not 0");
    CHECK(TPPI_remap(a + 8, b) == 0 && TPPI_remap(a, b + 8) == 0,
          "unaligned remap: not 0");
    CHECK(TPPI_remap(a, (char *)(uintptr_t)(TPPI_SEGMENT_BASE +
                                            TPPI_SEGMENT_SIZE)) == 0,
          "remap outside the segment: not 0");
    CHECK(TPPI_remap(a, a) == 1, "remap onto itself: not 1");
    CHECK(TPPI_remap(a, b) == 1, "remap failed");
    CHECK(TPPI_get_page_info(a, NULL) == 0, "remap left the old page mapped");
    CHECK(TPPI_get_page_info(b, &info) == 1 && info.mode == 9 &&
          info.home == 3 && info.usr_ptr == &usr,
          "remap lost the mode, home or usr_ptr");
    for (i = 0; i < TPPI_PAGE_SIZE; i++) {
        if (tt_alias(b)[i] != (uint8_t)(i * 13 + 5)) {
            am_fail("remap lost the data at byte %d", i);
            break;
        }
    }
    for (i = 0; i < 64; i++) {
        int want = i == 1 || (i >= 8 && i < 16) ? TPPI_Blk_ReadOnly :
                   i == 2 ? TPPI_Blk_Invalid : i == 3 ? TPPI_Blk_Busy :
                   TPPI_Blk_Writable;

        if ((int)TPPI_get_blk_acc(b + i * 64) != want ||
            tt_dev_tag(b + i * 64) != want) {
            am_fail("remap: block %d is %s (device %s), not %s", i,
                    tt_tag_name(TPPI_get_blk_acc(b + i * 64)),
                    tt_tag_name(tt_dev_tag(b + i * 64)), tt_tag_name(want));
        }
    }
    /* Loads of the moved ReadOnly and Writable blocks, through b. */
    CHECK(b[64] == (char)(64 * 13 + 5) && b[1000] == (char)(1000 * 13 + 5),
          "remap: wrong data through the new address");
    CHECK(TPPI_unmap_and_free(b) == 1 && TPPI_get_page_info(b, NULL) == 0,
          "unmap failed");
}

static void page_faults(void)
{
    char *pg = tt_page(50);
    unsigned before = pf_count;
    uint64_t v;

    v = tt_ldr(pg + 72);
    CHECK(pf_count == before + 1 && pf_va == (uintptr_t)(pg + 72) &&
          !pf_write && tt_pc_in(pf_pc, (void *)tt_ldr) && v == 0,
          "load page fault: %u faults, va 0x%lx, pc 0x%x (tt_ldr at %p), "
          "write %d", pf_count - before, (unsigned long)pf_va, pf_pc,
          (void *)tt_ldr, pf_write);
    before = pf_count;
    tt_str(pg + TPPI_PAGE_SIZE + 8, 42);
    CHECK(pf_count == before + 1 &&
          pf_va == (uintptr_t)(pg + TPPI_PAGE_SIZE + 8) && pf_write &&
          tt_pc_in(pf_pc, (void *)tt_str) &&
          pg[TPPI_PAGE_SIZE + 8] == 42, "store page fault: wrong report");
    TPPI_get_page_info(pg, NULL);
    /* Resumed before the page is mapped: the access faults again. */
    map_in_handler = false;
    before = pf_count;
    tt_strb(pg + 3 * TPPI_PAGE_SIZE, 7);
    CHECK(pf_count == before + 2 && pg[3 * TPPI_PAGE_SIZE] == 7,
          "page fault resumed unmapped: %u faults, not 2", pf_count - before);
    CHECK(TPPI_get_page_home(pg) == 4, "page fault handler's page: home %u",
          TPPI_get_page_home(pg));
}

static void exhaustion(void)
{
    uint64_t frames = rt_tagmem_size() / TPPI_PAGE_SIZE;
    unsigned i, mapped = 0;
    char *first = tt_page(1000);

    for (i = 0; i < frames + 1; i++) {
        if (!TPPI_alloc_and_map(first + (uint64_t)i * TPPI_PAGE_SIZE, MODE,
                                TPPI_Blk_Writable, 0, NULL)) {
            break;
        }
        mapped++;
    }
    /* Pages mapped by the earlier checks still hold frames. */
    printf("tagged memory: %llu frames, %u more mapped before running "
           "out\n", (unsigned long long)frames, mapped);
    CHECK(mapped < frames && mapped + 16 >= frames,
          "%u pages mapped with %llu frames", mapped,
          (unsigned long long)frames);
    CHECK(TPPI_alloc_and_map(tt_page(2000), MODE, TPPI_Blk_Writable, 0,
                             NULL) == 0, "a page mapped with no frame free");
    CHECK(TPPI_unmap_and_free(first) == 1, "unmap failed");
    CHECK(TPPI_alloc_and_map(tt_page(2000), MODE, TPPI_Blk_Writable, 0,
                             NULL) == 1, "a freed frame was not reused");
    for (i = 1; i < mapped; i++) {
        TPPI_unmap_and_free(first + (uint64_t)i * TPPI_PAGE_SIZE);
    }
}

static void misuse(void)
{
    char *pg = tt_page(60);
    struct tempest_stats s0, s1;

    TPPI_alloc_and_map(pg, MODE, TPPI_Blk_Writable, 0, NULL);
    tempest_get_stats(&s0);
    TPPI_change_blk_acc(pg, 32, TPPI_Blk_Invalidate);
    TPPI_change_blk_acc(pg, 96, TPPI_Blk_Invalidate);
    TPPI_change_blk_acc((char *)(uintptr_t)TPPI_SEGMENT_BASE - 64, 64,
                        TPPI_Blk_Invalidate);
    TPPI_change_blk_acc(tt_page(61), 64, TPPI_Blk_Invalidate);
    TPPI_change_blk_acc(pg, 64, (TPPI_BlkTagChange)9);
    TPPI_change_blk_acc_and_copy(pg, 64, TPPI_Blk_Validate_RW, NULL);
    TPPI_resume_va(pg, 48);
    TPPI_register_blk_acc_fault_handler(TPPI_NUM_PAGE_MODES,
                                        TPPI_Blk_Invalid, TPPI_ReadAccess,
                                        never);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid, 2, never);
    tempest_get_stats(&s1);
    CHECK(s1.bad_blocks == s0.bad_blocks + 9,
          "%llu misuses counted, not 9",
          (unsigned long long)(s1.bad_blocks - s0.bad_blocks));
    CHECK(TPPI_get_blk_acc(pg) == TPPI_Blk_Writable,
          "a refused change changed the tag");
    /* Registered with a warning, never called. */
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_ReadOnly,
                                        TPPI_ReadAccess, never);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Writable,
                                        TPPI_ReadAccess, never);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Writable,
                                        TPPI_WriteAccess, never);
    TPPI_change_blk_acc(pg, 64, TPPI_Blk_Downgrade_RO);
    CHECK(tt_ldr(pg) == 0, "load of a ReadOnly block");
    TPPI_change_blk_acc(pg, 64, TPPI_Blk_Upgrade_RW);
    tt_str(pg, 1);
    CHECK(tt_ldr(pg) == 1, "store to a Writable block");
}

int main(void)
{
    TPPI_register_page_fault_handler(page_fault);
    alloc_failures();
    fresh_pages();
    page_info();
    unmap_and_remap();
    downgrade_after_remap();
    page_faults();
    misuse();
    exhaustion();
    return am_finish("tags_vm");
}
