/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the control network's arithmetic (hw/tempest/coll-math.h,
 * the code the node controller runs at the root of its combining tree):
 * Strata section 4.3, with the manual's two 16-node segmented-scan
 * examples of section 4.3.1 as test vectors.
 */
#include <glib.h>

#include "coll-math.h"

#define N 16

static const uint64_t values[N] = { 1, 1, 1, 1, 2, 2, 2, 2,
                                    3, 3, 3, 3, 4, 4, 4, 4 };

static void scan16(unsigned seg_type, const uint64_t *want)
{
    uint8_t seg[N] = { 0 };
    uint64_t out[N];

    for (int i = 0; i < N; i += 4) {
        seg[i] = seg_type;
    }
    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, N, 1, seg, values, out);
    for (int i = 0; i < N; i++) {
        g_assert_cmpuint(out[i], ==, want[i]);
    }
}

/* Section 4.3.1, case 1: ElementBoundary every 4 nodes. */
static void test_manual_case1(void)
{
    static const uint64_t want[N] = { 0, 1, 2, 3, 0, 2, 4, 6,
                                      0, 3, 6, 9, 0, 4, 8, 12 };
    scan16(TEMPEST_SEG_ELEMENT, want);
}

/* Section 4.3.1, case 2: ArrayBoundary every 4 nodes. */
static void test_manual_case2(void)
{
    static const uint64_t want[N] = { 0, 1, 2, 3, 4, 2, 4, 6,
                                      8, 3, 6, 9, 12, 4, 8, 12 };
    scan16(TEMPEST_SEG_ARRAY, want);
}

/* No boundaries: an exclusive prefix sum; node 0 gets the identity. */
static void test_plain_scans(void)
{
    uint8_t seg[5] = { 0 };
    uint64_t in[5] = { 5, 1, 4, 2, 3 }, out[5];
    static const uint64_t fwd[5] = { 0, 5, 6, 10, 12 };
    static const uint64_t back[5] = { 10, 9, 5, 3, 0 };

    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, 5, 1, seg, in, out);
    for (int i = 0; i < 5; i++) {
        g_assert_cmpuint(out[i], ==, fwd[i]);
    }
    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_BACKSCAN, 5, 1, seg, in, out);
    for (int i = 0; i < 5; i++) {
        g_assert_cmpuint(out[i], ==, back[i]);
    }
}

/* A backward scan restarts at the top of each segment. */
static void test_backscan_segments(void)
{
    uint8_t seg[6] = { TEMPEST_SEG_ELEMENT, 0, 0, TEMPEST_SEG_ELEMENT, 0, 0 };
    uint64_t in[6] = { 1, 2, 3, 4, 5, 6 }, out[6];
    static const uint64_t want[6] = { 5, 3, 0, 11, 6, 0 };

    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_BACKSCAN, 6, 1, seg, in, out);
    for (int i = 0; i < 6; i++) {
        g_assert_cmpuint(out[i], ==, want[i]);
    }
}

/* Reductions ignore segments; every function, with its identity. */
static void test_reduce_all_fns(void)
{
    uint8_t seg[4] = { TEMPEST_SEG_ELEMENT, TEMPEST_SEG_ARRAY, 0, 0 };
    uint64_t in[4] = { 3, (uint64_t)-7, 12, 5 }, out[4];

    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, 4, 1, seg, in, out);
    g_assert_cmpint((int64_t)out[3], ==, 13);
    coll_combine(TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, 4, 1, seg, in, out);
    g_assert_cmphex(out[0], ==, 3 | (uint64_t)-7 | 12 | 5);
    coll_combine(TEMPEST_COLL_XOR, TEMPEST_COLL_REDUCE, 4, 1, seg, in, out);
    g_assert_cmphex(out[1], ==, 3 ^ (uint64_t)-7 ^ 12 ^ 5);
    coll_combine(TEMPEST_COLL_MAX, TEMPEST_COLL_REDUCE, 4, 1, seg, in, out);
    g_assert_cmpint((int64_t)out[2], ==, 12);
    /* Max of negatives: the identity is the smallest value, not 0. */
    in[0] = in[2] = in[3] = (uint64_t)-9;
    coll_combine(TEMPEST_COLL_MAX, TEMPEST_COLL_REDUCE, 4, 1, seg, in, out);
    g_assert_cmpint((int64_t)out[0], ==, -7);
    /* A max scan gives node 0 the identity. */
    coll_combine(TEMPEST_COLL_MAX, TEMPEST_COLL_SCAN, 4, 1, (uint8_t[4]){ 0 },
                 in, out);
    g_assert_cmpint((int64_t)out[0], ==, INT64_MIN);
    g_assert_cmpint((int64_t)out[3], ==, -7);
}

/*
 * 32-bit semantics through 64-bit lanes: unsigned add wraps at 2^32 once
 * truncated, signed add of sign-extended values is exact.
 */
static void test_32bit_lanes(void)
{
    uint8_t seg[2] = { 0 };
    uint64_t in[2] = { 0xffffffffULL, 2 }, out[2];

    coll_combine(TEMPEST_COLL_UADD, TEMPEST_COLL_REDUCE, 2, 1, seg, in, out);
    g_assert_cmphex((uint32_t)out[0], ==, 1);
    in[0] = (uint64_t)(int64_t)INT32_MIN;
    in[1] = (uint64_t)-1;
    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_REDUCE, 2, 1, seg, in, out);
    g_assert_cmphex((uint32_t)out[0], ==, 0x7fffffffU);
}

/* Lanes are independent. */
static void test_lanes(void)
{
    uint8_t seg[3] = { 0 };
    uint64_t in[6] = { 1, 10, 2, 20, 3, 30 }, out[6];

    coll_combine(TEMPEST_COLL_ADD, TEMPEST_COLL_SCAN, 3, 2, seg, in, out);
    g_assert_cmpuint(out[4], ==, 3);
    g_assert_cmpuint(out[5], ==, 30);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/coll/manual-case1", test_manual_case1);
    g_test_add_func("/coll/manual-case2", test_manual_case2);
    g_test_add_func("/coll/plain-scans", test_plain_scans);
    g_test_add_func("/coll/backscan-segments", test_backscan_segments);
    g_test_add_func("/coll/reduce-all-fns", test_reduce_all_fns);
    g_test_add_func("/coll/32bit-lanes", test_32bit_lanes);
    g_test_add_func("/coll/lanes", test_lanes);
    return g_test_run();
}
