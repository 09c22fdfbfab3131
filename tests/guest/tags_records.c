/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.1: a page's record (mode, usr_ptr, home) read while another
 * CPU maps, remaps and frees pages (--smp 3: the protocol thread on
 * CPU 1, main() on CPU 0, the mapper on CPU 2).  libtempest reads records
 * without its lock (docs/tempest.rst, "Tags"); a reader must never see a
 * record half written.  CPU 2 maps page A with mode m, home m and usr_ptr
 * &cookie[m] (m = round % 16), remaps it to page B and frees it, round
 * after round; main() reads both pages with TPPI_get_page_info and
 * TPPI_get_blk_acc meanwhile: every record it sees mapped must be one
 * CPU 2 wrote whole (home == mode, usr_ptr == &cookie[mode]), and the
 * block of a mapped page Writable.  How often main() found a page mapped
 * is printed, never a reason to fail.  Prints "tags_records ok".
 */
#include <stdio.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define ROUNDS      3000

static char cookie[TPPI_NUM_PAGE_MODES];
static volatile bool done;
static volatile unsigned mapper_failed;

static void mapper(void *arg)
{
    unsigned r;

    (void)arg;
    for (r = 0; r < ROUNDS; r++) {
        TPPI_PageMode m = r % TPPI_NUM_PAGE_MODES;

        if (!TPPI_alloc_and_map(tt_page(0), m, TPPI_Blk_Writable,
                                (TPPI_NodeId)m, &cookie[m]) ||
            !TPPI_remap(tt_page(0), tt_page(1)) ||
            !TPPI_unmap_and_free(tt_page(1))) {
            mapper_failed++;
        }
    }
    done = true;
}

int main(void)
{
    unsigned long reads = 0, mapped = 0, torn = 0, bad_tag = 0;
    TPPI_PageInfo info;
    unsigned i;

    if (rt_cpus_online() < 3) {
        am_fail("needs --smp 3");
        return am_finish("tags_records");
    }
    rt_cpu_call(2, mapper, NULL);
    while (!done) {
        for (i = 0; i < 2; i++) {
            int got = TPPI_get_page_info(tt_page(i), &info);
            TPPI_BlkAccTag tag = TPPI_get_blk_acc(tt_page(i));

            reads++;
            if (got != 1) {
                continue;
            }
            mapped++;
            if (info.mode >= TPPI_NUM_PAGE_MODES ||
                info.home != (TPPI_NodeId)info.mode ||
                info.usr_ptr != &cookie[info.mode]) {
                torn++;
            }
            /* Unmapped meanwhile reads Invalid; never Busy or ReadOnly. */
            if (tag != TPPI_Blk_Writable && tag != TPPI_Blk_Invalid) {
                bad_tag++;
            }
        }
    }
    rt_cpu_wait(2);
    printf("records: %u rounds, %lu reads, %lu found mapped, %lu torn, "
           "%lu bad tags\n", ROUNDS, reads, mapped, torn, bad_tag);
    if (mapper_failed) {
        am_fail("%u rounds of map, remap and free failed", mapper_failed);
    }
    if (torn || bad_tag) {
        am_fail("%lu records read half written, %lu bad tags", torn,
                bad_tag);
    }
    return am_finish("tags_records");
}
