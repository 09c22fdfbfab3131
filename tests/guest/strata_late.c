/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata 4.1 and 4.3 with a late node: rounds of Barrier, a reduction and
 * a scan in which one node in turn arrives about 50 ms late, so that the
 * others wait in a collective most of the time.  The checkpoint suite
 * (tests/ckpt, docs/checkpoint.rst) cuts such a cluster: on shared
 * memory, collectives pending in the shared combining area (docs/
 * strata.rst, "Combining on shared counters") go on after the restore.
 * Argument: the rounds (default 40).  Node 0 prints "strata_late: round R
 * of ROUNDS" after each, so that the suite can cut the run where it wants.
 */
#include <stdlib.h>

#include "strata-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    int n, r, v;

    StrataInit();
    n = PartitionSize;
    for (r = 0; r < rounds; r++) {
        if (Self == r % n) {
            uint64_t end = rt_time_ns() + 50000000ULL;

            while (rt_time_ns() < end) {
                rt_cpu_sleep(10000);
            }
        }
        Barrier();
        v = CombineInt(Self + r, ReduceAdd);
        CHECK(v == n * (n - 1) / 2 + n * r, "round %d: ReduceAdd %d", r, v);
        v = CombineInt(1, ScanAdd);
        CHECK(v == Self, "round %d: ScanAdd %d", r, v);
        if (Self == 0) {
            printf("strata_late: round %d of %d\n", r + 1, rounds);
        }
    }
    printf("node %d: %d rounds; %u collectives combined in the shared "
           "area\n", Self, rounds, (unsigned)nc_reg(TEMPEST_NC_COLL_SHARED));
    st_finish("strata_late");
}
