/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata sections 3 (basics: globals, macros, StrataInit, ClearMemory,
 * the Park-Miller Random and SetRandomSeed) and 9.4 (timing: CycleCount,
 * ElapsedCycles, CyclesToSeconds, CurrentCycle64, CurrentCycle,
 * ResetCurrentCycle; the StrataSetSpin extension), on any number of
 * nodes.
 */
#include <string.h>

#include "strata-util.h"
#include "tempest/rt.h"

/* Park and Miller's published check: from seed 1, the 10,000th value. */
#define PM_10000TH      1043618065U

static void globals(void)
{
    int log2 = 0;

    CHECK(Self == (int)rt_node_id(), "Self %d", Self);
    CHECK(PartitionSize == (int)rt_num_nodes(), "PartitionSize %d",
          PartitionSize);
    while ((1 << log2) < PartitionSize) {
        log2++;
    }
    CHECK(logPartitionSize == log2, "logPartitionSize %d for %d nodes",
          logPartitionSize, PartitionSize);
    CHECK(PartitionMask == (1 << log2) - 1, "PartitionMask %d",
          PartitionMask);
    CHECK((Self & ~PartitionMask) == 0, "Self outside the mask");
    CHECK(LEFTMOST == (Self == 0), "LEFTMOST");
    CHECK(RIGHTMOST == (Self == PartitionSize - 1), "RIGHTMOST");
    CHECK(StrataVersion && strstr(StrataVersion, "2.0"), "version '%s'",
          StrataVersion ? StrataVersion : "(null)");
    CHECK(StrataVersionNumber > 1.99f && StrataVersionNumber < 2.01f,
          "version number");
    CHECK(True == 1 && False == 0 && sizeof(Word) == 4 &&
          sizeof(DoubleWord) == 8, "types");
}

static void random_numbers(void)
{
    unsigned first, v = 0, s, seeds_min, seeds_max;
    int i;

    /* The default seed is Self + 1. */
    first = Random();
    CHECK(first == (unsigned)(((uint64_t)(Self + 1) * 16807) % 2147483647U),
          "first value %u with the default seed", first);
    CHECK(SetRandomSeed(1) == 1, "SetRandomSeed(1)");
    CHECK(Random() == 16807 && Random() == 282475249 &&
          Random() == 1622650073, "the minimal standard sequence");
    SetRandomSeed(1);
    for (i = 0; i < 10000; i++) {
        v = Random();
        CHECK(v >= 1 && v <= 2147483646U, "value %u out of range", v);
        if (v < 1 || v > 2147483646U) {
            break;
        }
    }
    CHECK(v == PM_10000TH, "10,000th value %u, expected %u", v, PM_10000TH);
    /* Repeatable; 0 (and multiples of 2^31 - 1) become 1. */
    CHECK(SetRandomSeed(12345) == 12345, "seed 12345");
    v = Random();
    SetRandomSeed(12345);
    CHECK(Random() == v, "the sequence repeats");
    CHECK(SetRandomSeed(0) == 1, "seed 0");
    CHECK(SetRandomSeed(2147483647U) == 1, "seed 2^31 - 1");
    CHECK(SetRandomSeed(2147483648U) == 1, "seed 2^31");
    /* Time-based seeds: in range, repeatable, different per node. */
    s = SetRandomSeed(TIME_BASED_SEED);
    CHECK(s >= 1 && s <= 2147483646U, "time-based seed %u", s);
    v = Random();
    CHECK(SetRandomSeed(s) == s && Random() == v, "time-based repeat");
    seeds_min = CompositeUint(s, Min);
    seeds_max = CompositeUint(s, Max);
    CHECK(PartitionSize == 1 || seeds_min != seeds_max,
          "every node got the same time-based seed %u", s);
}

static void clear_memory(void)
{
    static uint8_t buf[600];
    unsigned off, len, i;
    int bad;

    for (off = 0; off < 9; off++) {
        for (len = 0; len < 300; len += 1 + len / 8) {
            memset(buf, 0xa5, sizeof(buf));
            ClearMemory(buf + 64 + off, len);
            bad = 0;
            for (i = 0; i < sizeof(buf); i++) {
                uint8_t want = i >= 64 + off && i < 64 + off + len ? 0 : 0xa5;

                bad += buf[i] != want;
            }
            CHECK(!bad, "ClearMemory(+%u, %u): %d bytes wrong", off, len,
                  bad);
        }
    }
    ClearMemory(NULL, 0);
}

static void timing(void)
{
    unsigned start, e, zeros = 0, i;
    DoubleWord a, b;
    uint64_t t0, t1, o0, o1;
    double s;

    /*
     * Two adjacent calls give 0: the median of 1000 pairs is 0.  (A
     * counter read costs QEMU a helper and its big lock, and a busy host
     * preempts vCPUs between the two reads, so not every pair is 0; a
     * wrong calibration makes almost none 0.)
     */
    for (i = 0; i < 1000; i++) {
        start = CycleCount();
        e = ElapsedCycles(start);
        zeros += e == 0;
    }
    CHECK(zeros >= 500U, "adjacent "
          "CycleCount/ElapsedCycles gave 0 only %u times in 1000 "
          "(overhead %u)", zeros, StrataTimingOverhead);
    /*
     * A millisecond or more of busy time, in cycles, lies between the
     * generic timer's measures of the inner and the outer interval (the
     * vCPU may be descheduled anywhere).
     */
    o0 = rt_time_ns();
    start = CycleCount();
    t0 = rt_time_ns();
    while ((t1 = rt_time_ns()) - t0 < 1000000) {
        /* 1 ms */
    }
    e = ElapsedCycles(start);
    o1 = rt_time_ns();
    s = CyclesToSeconds(e);
    CHECK(s > 0.0009 && s >= (t1 - t0) * 0.99e-9 &&
          s <= (o1 - o0) * 1.01e-9 + 0.00001, "%g s of cycles, timer: "
          "%llu ns inside, %llu ns outside", s,
          (unsigned long long)(t1 - t0), (unsigned long long)(o1 - o0));
    CHECK(CyclesToSeconds(STRATA_CYCLE_HZ) == 1.0, "CyclesToSeconds");
    a = CurrentCycle64();
    b = CurrentCycle64();
    CHECK(b >= a && a > 0, "CurrentCycle64 %llu then %llu",
          (unsigned long long)a, (unsigned long long)b);
    CHECK(CurrentCycle() <= (unsigned)CurrentCycle64() + 1000000,
          "CurrentCycle beyond CurrentCycle64 before any reset");
    /* Let 60 ms pass, then restart CurrentCycle everywhere. */
    t0 = rt_time_ns();
    while (rt_time_ns() - t0 < 60000000) {
        rt_cpu_sleep(1000);
    }
    CHECK(CurrentCycle() >= 60000000, "CurrentCycle %u after 60 ms",
          CurrentCycle());
    ResetCurrentCycle();
    e = CurrentCycle();
    a = CurrentCycle64();
    /* Counted from the reset, after the 60 ms: less than since b less
     * those 60 ms, however long the host kept this vCPU off a core. */
    CHECK(a >= b + 60000000, "CurrentCycle64 was reset");
    CHECK((DoubleWord)e <= a - b - 60000000, "CurrentCycle %u just after "
          "ResetCurrentCycle, %llu cycles since before the 60 ms", e,
          (unsigned long long)(a - b));
}

int main(void)
{
    unsigned was;

    StrataInit();
    StrataInit();       /* a second call does nothing */
    was = StrataSetSpin(7);     /* the node controller's SPIN_US hint */
    CHECK(StrataSetSpin(was) == 7 && StrataSetSpin(was) == was,
          "StrataSetSpin");
    globals();
    random_numbers();
    clear_memory();
    timing();
    st_finish("strata_basics");
}
