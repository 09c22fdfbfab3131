/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH 3.6 (fetch-and-op at the home node, no handler there, the
 * result returned to the waiting read) through <magic.h>:
 *   - every node adds to one counter on node 0 ROUNDS times: the final
 *     value is exact and the old values each node sees strictly rise;
 *   - every node increments a counter on the last node with
 *     compare-and-swap loops: exact, and failed CASes are counted;
 *   - every node swaps its own values into a word on node 1: what the
 *     swaps returned plus the final value equal what was written (the
 *     sums gathered with fetch-and-add on node 0);
 *   - each node on a word of its own (home = itself).
 * Prints the round trip of one fetch-and-op and "xfer_fop ok".
 *   xfer_fop [ROUNDS]   (default 2000)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "am-util.h"
#include "tempest/nc.h"
#include "magic.h"

static uint64_t counter;            /* node 0 */
static uint64_t cas_counter;        /* node N-1 */
static uint64_t swap_word;          /* node 1 % N */
static uint64_t sum_written;        /* node 0 */
static uint64_t sum_returned;       /* node 0 */
static uint64_t own_word;           /* every node, home = itself */

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
    unsigned n = TPPI_num_nodes, me = TPPI_self_address, i;
    unsigned last = n - 1, swap_home = 1 % n;
    uint64_t old, prev = 0, expect, cas_fails = 0, t0, rtt;
    uint64_t written = 0, returned = 0, total = 0;
    bool first = true;

    am_barrier();
    /* Fetch-and-add from every node on one counter. */
    t0 = am_ticks();
    for (i = 0; i < rounds; i++) {
        old = magic_fetch_add(0, &counter, me + 1);
        if (!first && old <= prev) {
            am_fail("fetch-and-add %u: old value %llu after %llu", i,
                    (unsigned long long)old, (unsigned long long)prev);
        }
        first = false;
        prev = old;
    }
    rtt = (am_ticks() - t0) * 1000 / rounds;
    /* Compare-and-swap increments of a counter on the last node. */
    for (i = 0; i < rounds / 4; i++) {
        expect = magic_fetch_add(last, &cas_counter, 0);
        for (;;) {
            old = magic_cas(last, &cas_counter, expect, expect + 1);
            if (old == expect) {
                break;
            }
            cas_fails++;
            expect = old;
        }
    }
    /* Swaps into one word on node 1: conservation of what was written. */
    for (i = 0; i < rounds / 4; i++) {
        uint64_t v = (uint64_t)(me + 1) * 1000003 + i;

        written += v;
        returned += magic_swap(swap_home, &swap_word, v);
    }
    magic_fetch_add(0, &sum_written, written);
    magic_fetch_add(0, &sum_returned, returned);
    /* A word of this node's own, through its own controller. */
    for (i = 0; i < 100; i++) {
        if (magic_fetch_add(me, &own_word, 2) != 2 * (uint64_t)i) {
            am_fail("own word: wrong old value at %u", i);
        }
    }
    if (own_word != 200) {
        am_fail("own word is %llu, not 200", (unsigned long long)own_word);
    }
    am_barrier();

    for (i = 0; i < n; i++) {
        total += (uint64_t)(i + 1) * rounds;
    }
    if (me == 0 && counter != total) {
        am_fail("counter is %llu, not %llu", (unsigned long long)counter,
                (unsigned long long)total);
    }
    if (me == last && cas_counter != (uint64_t)n * (rounds / 4)) {
        am_fail("CAS counter is %llu, not %llu",
                (unsigned long long)cas_counter,
                (unsigned long long)n * (rounds / 4));
    }
    am_barrier();
    /* Node 0 gathered the sums; node 1 holds the last swapped value. */
    old = magic_fetch_add(swap_home, &swap_word, 0);
    if (me == 0 && sum_returned + old != sum_written) {
        am_fail("swaps: returned %llu + final %llu != written %llu",
                (unsigned long long)sum_returned, (unsigned long long)old,
                (unsigned long long)sum_written);
    }
    /* On the shared-memory fabric the others' words are mapped here. */
    printf("node %u: %u fetch-and-adds, %llu ns each; %llu CAS retries; "
           "%u done on a peer's mapped RAM\n", me, rounds,
           (unsigned long long)rtt, (unsigned long long)cas_fails,
           (unsigned)nc_reg(TEMPEST_NC_FOP_SHARED));
    return am_finish("xfer_fop");
}
