/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata sections 4.1 (barriers: Barrier, split-phase StartBarrier,
 * QueryBarrier, CompleteBarrier) and 4.2 (global OR: GlobalOR, its
 * split-phase form, the asynchronous SetAsyncGlobalOR/GetAsyncGlobalOR),
 * and one control operation at a time: a Start while another is pending.
 */
#include "strata-util.h"

static volatile int queried;    /* volatile: set by handlers */

static void queried_h(void)
{
    queried++;
}

/*
 * A split-phase barrier cannot complete before the last node starts it:
 * every node but 0 starts one, queries it (False) and tells node 0, which
 * starts its own only then.
 */
static void split_barrier(void)
{
    if (Self != 0) {
        StartBarrier();
        CHECK(!QueryBarrier(), "barrier done before node 0 started it");
        SendLeftPollBoth(0, queried_h);
        CompleteBarrier();
        CHECK(QueryBarrier(), "QueryBarrier after CompleteBarrier");
    } else {
        st_wait_count(&queried, PartitionSize - 1);
        StartBarrier();
        while (!QueryBarrier()) {
            PollBothTilEmpty();
        }
        CompleteBarrier();
    }
    CHECK(QueryBarrier(), "QueryBarrier with no barrier pending");
}

static void global_or(void)
{
    int k;

    CHECK(!GlobalOR(False), "GlobalOR(False) everywhere is True");
    CHECK(GlobalOR(True), "GlobalOR(True) everywhere is False");
    for (k = 0; k < PartitionSize; k++) {
        CHECK(GlobalOR(Self == k) == True, "only node %d True", k);
    }
    /* Any non-zero value counts as True. */
    CHECK(GlobalOR(Self == PartitionSize - 1 ? 42 : 0) == True, "42");
    /* Split phase, with polling meanwhile. */
    StartGlobalOR(Self == PartitionSize / 2);
    while (!QueryGlobalOR()) {
        PollBothTilEmpty();
    }
    CHECK(CompleteGlobalOR() == True, "split-phase global OR");
    CHECK(CompleteGlobalOR() == True, "result kept");
    StartGlobalOR(False);
    CHECK(CompleteGlobalOR() == False, "split-phase global OR False");
}

/* Waits until the asynchronous OR reads want (polling meanwhile). */
static void wait_async(Bool want)
{
    while (GetAsyncGlobalOR() != want) {
        PollBothTilEmpty();
    }
}

static void async_or(void)
{
    int k;

    /* StrataInit set every node's bit (eventually visible). */
    wait_async(True);
    SetAsyncGlobalOR(False);
    wait_async(False);
    Barrier();
    for (k = 0; k < PartitionSize; k += PartitionSize > 4 ? 3 : 1) {
        if (Self == k) {
            SetAsyncGlobalOR(True);
        }
        wait_async(True);
        Barrier();
        if (Self == k) {
            SetAsyncGlobalOR(False);
        }
        wait_async(False);
        Barrier();
    }
}

/* Starting another operation completes the pending one first. */
static void pending(void)
{
    int v;

    StartBarrier();
    v = CombineInt(1, ReduceAdd);
    CHECK(v == PartitionSize, "CombineInt after StartBarrier: %d", v);
    CHECK(QueryBarrier(), "the barrier finished first");
    StartGlobalOR(Self == 0);
    StartCombineInt(Self, ScanAdd);
    CHECK(CompleteGlobalOR() == True, "global OR kept across a combine");
    v = CompleteCombineInt();
    CHECK(v == Self * (Self - 1) / 2, "scan %d", v);
}

int main(void)
{
    int i;

    StrataInit();
    for (i = 0; i < 50; i++) {
        Barrier();
    }
    split_barrier();
    global_or();
    async_or();
    pending();
    st_finish("strata_control");
}
