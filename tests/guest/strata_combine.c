/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 4.3 (combine operations): all fifteen CombineOp variants
 * of CombineInt and CombineVector (1 to 200 elements, in place too) and
 * their split-phase forms, 32-bit wrap-around and the Max identity, and
 * segmented scans (4.3.1: SetSegment, CurrentSegment, ElementBoundary and
 * ArrayBoundary, forward and backward) on random segment patterns,
 * checked against a reference computed from the manual on every node.
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "strata-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define MAXV        200

static const char *const names[] = {
    "ScanAdd", "BackScanAdd", "ReduceAdd", "ScanOr", "BackScanOr",
    "ReduceOr", "ScanXor", "BackScanXor", "ReduceXor", "ScanUadd",
    "BackScanUadd", "ReduceUadd", "ScanMax", "BackScanMax", "ReduceMax",
};

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

/* Node i's value for element e in round r: wide-ranging, some negative. */
static int value(int i, int e, int r)
{
    uint32_t h = mix((uint32_t)(i * 1000003 + e * 7919 + r * 104729));

    switch (r % 4) {
    case 0:
        return (int)(h % 100) - 50;
    case 1:
        return (int)h;
    case 2:
        return (int)(h >> 8);
    default:
        return i * 3 + e;
    }
}

static uint32_t identity(int fn)
{
    return fn == 4 ? (uint32_t)INT_MIN : 0;
}

static uint32_t apply(int fn, uint32_t a, uint32_t b)
{
    switch (fn) {
    case 0:
    case 3:
        return a + b;
    case 1:
        return a | b;
    case 2:
        return a ^ b;
    default:
        return (int32_t)a > (int32_t)b ? a : b;
    }
}

/*
 * The reference result of node @me for one element: fn over the values
 * v[0..n) with segments seg[0..n), as section 4.3.1 describes it (scans
 * exclusive; an ElementBoundary starts a segment whose first node gets
 * the identity; an ArrayBoundary gives its node the value accumulated so
 * far but restarts the accumulation).  Backward scans mirror it: the
 * boundary between nodes i and i + 1 is i + 1's.
 */
static int reference(CombineOp op, const int *v, const SegmentType *seg,
                     int n, int me)
{
    int fn = op / 3, variant = op % 3, k, i;
    uint32_t acc = identity(fn), out = 0;
    SegmentType b;

    if (variant == 2) {
        for (i = 0; i < n; i++) {
            acc = apply(fn, acc, (uint32_t)v[i]);
        }
        return (int)acc;
    }
    for (k = 0; k < n; k++) {
        i = variant == 0 ? k : n - 1 - k;
        if (variant == 0) {
            b = seg[i];
        } else {
            b = k == 0 ? NoBoundary : seg[i + 1];
        }
        if (b == ElementBoundary) {
            acc = identity(fn);
        }
        if (i == me) {
            out = acc;
        }
        if (b == ArrayBoundary) {
            acc = identity(fn);
        }
        acc = apply(fn, acc, (uint32_t)v[i]);
    }
    return (int)out;
}

static int vals[TEMPEST_MAX_NODES];
static SegmentType segs[TEMPEST_MAX_NODES];

static void check_int(CombineOp op, int r, bool split)
{
    int i, got, want;

    for (i = 0; i < PartitionSize; i++) {
        vals[i] = value(i, 0, r);
    }
    if (split) {
        StartCombineInt(vals[Self], op);
        while (!QueryCombineInt()) {
            PollBothTilEmpty();
        }
        got = CompleteCombineInt();
    } else {
        got = CombineInt(vals[Self], op);
    }
    want = reference(op, vals, segs, PartitionSize, Self);
    CHECK(got == want, "%s round %d%s: got %d, expected %d", names[op], r,
          split ? " (split)" : "", got, want);
}

static void check_vector(CombineOp op, int n, int r, bool in_place,
                         bool split)
{
    static int from[MAXV + 1], to[MAXV + 1];
    int e, i, want, bad = 0;

    for (e = 0; e < n; e++) {
        from[e] = value(Self, e, r);
    }
    from[n] = 0x12345678;
    to[n] = 0x12345678;
    if (split) {
        StartCombineVector(in_place ? from : to, from, op, n);
        CompleteCombineVector();
    } else {
        CombineVector(in_place ? from : to, from, op, n);
    }
    for (e = 0; e < n; e++) {
        for (i = 0; i < PartitionSize; i++) {
            vals[i] = value(i, e, r);
        }
        want = reference(op, vals, segs, PartitionSize, Self);
        if ((in_place ? from[e] : to[e]) != want && bad++ < 3) {
            CHECK(0, "%s[%d] of %d round %d: got %d, expected %d",
                  names[op], e, n, r, in_place ? from[e] : to[e], want);
        }
    }
    CHECK(from[n] == 0x12345678 && to[n] == 0x12345678,
          "%s of %d elements wrote past the end", names[op], n);
}

static void set_segments(uint32_t pattern)
{
    int i;

    for (i = 0; i < PartitionSize; i++) {
        segs[i] = pattern ? (SegmentType)(mix(pattern + (uint32_t)i) % 3) :
                  NoBoundary;
    }
    SetSegment(segs[Self]);
    CHECK(CurrentSegment() == segs[Self], "CurrentSegment");
}

int main(void)
{
    static const int lengths[] = { 1, 2, 63, 64, 65, 130, MAXV };
    int op, r, l;
    uint32_t p;

    StrataInit();
    CHECK(CurrentSegment() == NoBoundary, "initial segment");
    set_segments(0);

    /* Every variant, scalars and vectors, one segment. */
    for (op = ScanAdd; op <= ReduceMax; op++) {
        for (r = 0; r < 4; r++) {
            check_int((CombineOp)op, r, r == 3);
        }
        for (l = 0; l < (int)(sizeof(lengths) / sizeof(lengths[0])); l++) {
            check_vector((CombineOp)op, lengths[l], l, l % 2, l == 4);
        }
    }

    /* Wrap-around and identities. */
    CHECK(CombineInt(INT_MAX, ReduceAdd) ==
          (int)((uint32_t)INT_MAX * (uint32_t)PartitionSize),
          "ReduceAdd wraps");
    CHECK((unsigned)CombineInt((int)0xffffffffU, ReduceUadd) ==
          0xffffffffU * (unsigned)PartitionSize, "ReduceUadd wraps");
    CHECK(CombineInt(-5, ScanMax) == (Self ? -5 : INT_MIN),
          "ScanMax identity");
    CHECK(CombineInt(INT_MIN, ReduceMax) == INT_MIN, "ReduceMax of INT_MIN");

    /* Segmented scans: random patterns, every scan variant. */
    for (p = 1; p <= 12; p++) {
        set_segments(p * 2654435761U);
        for (op = ScanAdd; op <= ReduceMax; op++) {
            check_int((CombineOp)op, (int)p, false);
        }
        check_vector(ScanAdd, 70, (int)p, false, false);
        check_vector(BackScanMax, 3, (int)p, true, true);
    }
    /* Segments are taken when the scan starts. */
    set_segments(77);
    StartCombineInt(value(Self, 0, 5), ScanXor);
    SetSegment(NoBoundary);
    for (l = 0; l < PartitionSize; l++) {
        vals[l] = value(l, 0, 5);
    }
    r = CompleteCombineInt();
    CHECK(r == reference(ScanXor, vals, segs, PartitionSize, Self),
          "segments changed after the start");
    /*
     * On the shared-memory fabric every collective after the first
     * combines in the shared area (COLL_SHARED); on sockets none does.
     */
    printf("node %d: %u collectives combined in the shared area\n", Self,
           (unsigned)nc_reg(TEMPEST_NC_COLL_SHARED));
    st_finish("strata_combine");
}
