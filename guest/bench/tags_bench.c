/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * 'scripts/tempest bench tags', the guest side (one node):
 *
 *   tags_bench.elf mem [PASSES]
 *       the same memory-bound loop (a read-modify-write of every 8-byte
 *       word of the first 63 blocks of each of 64 pages: 252 KiB) over
 *       untagged RAM, over tagged pages whose blocks are all Writable, and
 *       over tagged pages that each have one ReadOnly block the loop does
 *       not touch (block 63): the fastest of PASSES passes of each, in
 *       turn.  Prints "tags_bench: untagged_ns=... writable_ns=...
 *       restricted_ns=...".
 *   tags_bench.elf fault [N]
 *       N loads from distinct Invalid blocks, each handled on this node by
 *       a handler that validates the block and resumes the thread: the
 *       mean time of one fault-handler-resume round trip (an upgrade
 *       included), and the median of 1025 more timed one by one;
 *       and, alone, an upgrade and a downgrade (TPPI_change_blk_acc of a
 *       block), a tag change that changes nothing, and an empty device
 *       read (the SCRATCH register: the reference).  The upgrade and the
 *       downgrade are timed one by one, less the least cost of an empty
 *       timed interval (clock_ns: one clock read).  Prints "tags_bench:
 *       fault_ns=... fault_med_ns=... upgrade_ns=... downgrade_ns=...
 *       noop_ns=... mmio_ns=... clock_ns=...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define PAGES       64
#define BLKS        (TPPI_PAGE_SIZE / TPPI_TAG_BLK_SIZE)
#define MODE        1
#define MED_FAULTS  1025        /* faults timed one by one */

static uint32_t one_fault[MED_FAULTS];

static char *seg_page(unsigned i)
{
    return (char *)(uintptr_t)(TPPI_SEGMENT_BASE +
                               (uint64_t)i * TPPI_PAGE_SIZE);
}

/* One pass: every word of blocks 0..62 of each page, read and written. */
static void pass(char *base)
{
    unsigned p, i;

    for (p = 0; p < PAGES; p++) {
        uint64_t *w = (uint64_t *)(base + (size_t)p * TPPI_PAGE_SIZE);

        for (i = 0; i < (BLKS - 1) * TPPI_TAG_BLK_SIZE / 8; i++) {
            w[i] += i;
        }
    }
}

static uint64_t best_of(char *base, unsigned passes)
{
    uint64_t best = UINT64_MAX, t;
    unsigned k;

    pass(base);                         /* TLB and caches warm */
    for (k = 0; k < passes; k++) {
        t = rt_time_ns();
        pass(base);
        t = rt_time_ns() - t;
        if (t < best) {
            best = t;
        }
    }
    return best;
}

static int bench_mem(unsigned passes)
{
    char *ram = aligned_alloc(TPPI_PAGE_SIZE, PAGES * TPPI_PAGE_SIZE);
    char *seg = seg_page(0);
    uint64_t untagged, writable, restricted;
    unsigned p;

    if (ram == NULL) {
        printf("tags_bench: no memory\n");
        return 1;
    }
    memset(ram, 0, PAGES * TPPI_PAGE_SIZE);
    for (p = 0; p < PAGES; p++) {
        if (!TPPI_alloc_and_map(seg_page(p), MODE, TPPI_Blk_Writable, 0,
                                NULL)) {
            printf("tags_bench: TPPI_alloc_and_map failed\n");
            return 1;
        }
    }
    untagged = best_of(ram, passes);
    writable = best_of(seg, passes);
    for (p = 0; p < PAGES; p++) {
        TPPI_change_blk_acc(seg_page(p) + (BLKS - 1) * TPPI_TAG_BLK_SIZE,
                            TPPI_TAG_BLK_SIZE, TPPI_Blk_Downgrade_RO);
    }
    restricted = best_of(seg, passes);
    printf("tags_bench: untagged_ns=%llu writable_ns=%llu "
           "restricted_ns=%llu\n", (unsigned long long)untagged,
           (unsigned long long)writable, (unsigned long long)restricted);
    return 0;
}

static void validate(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RO);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * The median of MED_FAULTS faults on the Invalid blocks from @blk on,
 * each timed alone, less @empty (the cost of an empty timed interval):
 * the round trip when the host runs both vCPUs, where the mean also holds
 * the faults that waited for a host core.
 */
static uint64_t fault_median(char *blk, uint64_t empty)
{
    volatile uint64_t sink = 0;
    uint64_t t;
    unsigned i;

    for (i = 0; i < MED_FAULTS; i++) {
        t = rt_time_ns();
        sink += *(volatile uint64_t *)(blk + (size_t)i * TPPI_TAG_BLK_SIZE);
        t = rt_time_ns() - t;
        one_fault[i] = (uint32_t)(t > empty ? t - empty : 0);
    }
    (void)sink;
    qsort(one_fault, MED_FAULTS, sizeof(one_fault[0]), cmp_u32);
    return one_fault[MED_FAULTS / 2];
}

static int bench_fault(unsigned n)
{
    unsigned pages = (n + BLKS - 1) / BLKS, p, i;
    unsigned med_pages = (MED_FAULTS + BLKS - 1) / BLKS;
    uint64_t t, fault, med, up = 0, down = 0, empty = UINT64_MAX, noop;
    uint64_t mmio;
    volatile uint64_t sink = 0;
    char *blk = seg_page(0);

    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, validate);
    for (p = 0; p < pages + med_pages; p++) {
        if (!TPPI_alloc_and_map(seg_page(p), MODE, TPPI_Blk_Invalid, 0,
                                NULL)) {
            printf("tags_bench: TPPI_alloc_and_map failed\n");
            return 1;
        }
    }
    t = rt_time_ns();
    for (i = 0; i < n; i++) {
        sink += *(volatile uint64_t *)(blk + (size_t)i * TPPI_TAG_BLK_SIZE);
    }
    fault = (rt_time_ns() - t) / n;

    blk = seg_page(pages + med_pages);
    TPPI_alloc_and_map(blk, MODE, TPPI_Blk_Writable, 0, NULL);
    /*
     * An upgrade and a downgrade are timed one at a time (they alternate):
     * each interval also holds one read of the clock, whose cost (the
     * least of 1000 empty intervals: a preempted one says nothing) is
     * taken off.
     */
    for (i = 0; i < 1000; i++) {
        t = rt_time_ns();
        t = rt_time_ns() - t;
        empty = t < empty ? t : empty;
    }
    for (i = 0; i < 1000; i++) {
        t = rt_time_ns();
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Downgrade_RO);
        down += rt_time_ns() - t;
        t = rt_time_ns();
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Upgrade_RW);
        up += rt_time_ns() - t;
    }
    t = rt_time_ns();
    for (i = 0; i < 1000; i++) {
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
    }
    noop = (rt_time_ns() - t) / 1000;
    t = rt_time_ns();
    for (i = 0; i < 1000; i++) {
        sink += nc_reg(TEMPEST_NC_SCRATCH);
    }
    mmio = (rt_time_ns() - t) / 1000;
    (void)sink;
    med = fault_median(seg_page(pages), empty);
    up = up > 1000 * empty ? up - 1000 * empty : 0;
    down = down > 1000 * empty ? down - 1000 * empty : 0;
    printf("tags_bench: fault_ns=%llu fault_med_ns=%llu upgrade_ns=%llu "
           "downgrade_ns=%llu noop_ns=%llu mmio_ns=%llu clock_ns=%llu\n",
           (unsigned long long)fault, (unsigned long long)med,
           (unsigned long long)(up / 1000),
           (unsigned long long)(down / 1000), (unsigned long long)noop,
           (unsigned long long)mmio, (unsigned long long)empty);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "mem";
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 0;

    if (!strcmp(what, "mem")) {
        return bench_mem(n ? n : 20);
    }
    if (!strcmp(what, "fault")) {
        return bench_fault(n ? n : 2000);
    }
    printf("usage: tags_bench.elf mem [PASSES] | fault [N]\n");
    return 2;
}
