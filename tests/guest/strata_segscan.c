/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 4.3.1: the manual's two 16-node segmented ScanAdd
 * examples, exactly (ElementBoundary, then ArrayBoundary, every fourth
 * node), as a vector and as scalars.  Needs 16 nodes.
 */
#include "strata-util.h"

static const int value[16] = {
    1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
};
static const int case1[16] = {
    0, 1, 2, 3, 0, 2, 4, 6, 0, 3, 6, 9, 0, 4, 8, 12,
};
static const int case2[16] = {
    0, 1, 2, 3, 4, 2, 4, 6, 8, 3, 6, 9, 12, 4, 8, 12,
};

static void run_case(SegmentType boundary, const int *want, const char *name)
{
    int v[3] = { value[Self], value[Self], value[Self] }, got;

    SetSegment(Self % 4 == 0 ? boundary : NoBoundary);
    got = CombineInt(value[Self], ScanAdd);
    CHECK(got == want[Self], "%s: node %d got %d, expected %d", name, Self,
          got, want[Self]);
    CombineVector(v, v, ScanAdd, 3);
    CHECK(v[0] == want[Self] && v[2] == want[Self],
          "%s vector: node %d got %d, expected %d", name, Self, v[0],
          want[Self]);
    if (Self == 0) {
        printf("%s: done\n", name);
    }
}

int main(void)
{
    StrataInit();
    if (PartitionSize != 16) {
        StrataFail("strata_segscan needs 16 nodes, not %d", PartitionSize);
    }
    run_case(ElementBoundary, case1, "case 1 (E N N N)");
    run_case(ArrayBoundary, case2, "case 2 (A N N N)");
    /* Reductions ignore the segments. */
    CHECK(CombineInt(value[Self], ReduceAdd) == 40, "ReduceAdd with segments");
    printf("node %d: case1 %d case2 %d\n", Self, case1[Self], case2[Self]);
    st_finish("strata_segscan");
}
