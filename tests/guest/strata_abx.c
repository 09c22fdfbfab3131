/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 8 (multi-block transfer): AsyncBlockXfer to every node,
 * the GetABX* accessors, ServiceAllTransfers(1) sending two packets of
 * every pending transfer in turn (interleaving them), CompleteTransfer of
 * one, ServiceAllTransfers(-1) for the rest, completion callbacks once
 * each, ids that are no longer pending, and a hundred small transfers.
 */
#include <string.h>

#include "strata-util.h"

#define PORT0       500
#define SMALL_PORT  1500
#define MAXN        16

static Word out[MAXN][2000];
static Word in[MAXN][2000];
static Word small_in[100 * 7];
static Word small_out[100 * 7];
static volatile int port_full[STRATA_NUM_PORTS]; /* volatile: set by handlers */
static int completed[MAXN];
static Word *completed_buf[MAXN];
static ABXid ids[MAXN];
static int small_done;

static int size_from(int node)
{
    return 300 + 50 * node;
}

static Word pattern(int from, int to, int i)
{
    return (Word)(from * 0x10001 + to * 0x101) ^ (Word)(i * 2654435761U);
}

static void full(int port)
{
    port_full[port]++;
}

static void complete(ABXid id, Word *buffer)
{
    int to;

    for (to = 0; to < PartitionSize; to++) {
        if (ids[to] == id) {
            completed[to]++;
            completed_buf[to] = buffer;
        }
    }
}

static void small_complete(ABXid id, Word *buffer)
{
    (void)id;
    (void)buffer;
    small_done++;
}

int main(void)
{
    int to, from, i, n, bad;
    ABXid stale, zero;

    StrataInit();
    if (PartitionSize > MAXN) {
        StrataFail("strata_abx runs on at most %d nodes", MAXN);
    }
    n = PartitionSize;
    for (from = 0; from < n; from++) {
        StrataPortTable[PORT0 + from].base = in[from];
        StrataPortTable[PORT0 + from].count = size_from(from);
        StrataPortTable[PORT0 + from].handler = full;
    }
    StrataPortTable[SMALL_PORT].base = small_in;
    StrataPortTable[SMALL_PORT].count = 100 * 7;
    StrataPortTable[SMALL_PORT].handler = full;
    Barrier();

    for (to = 0; to < n; to++) {
        for (i = 0; i < size_from(Self); i++) {
            out[to][i] = pattern(Self, to, i);
        }
        ids[to] = AsyncBlockXfer(to, PORT0 + Self, 0, out[to],
                                 size_from(Self), complete);
        CHECK(ids[to] != -1, "AsyncBlockXfer returned -1");
        CHECK(GetABXproc(ids[to]) == to && GetABXport(ids[to]) ==
              (unsigned)(PORT0 + Self) && GetABXoffset(ids[to]) == 0 &&
              GetABXbuffer(ids[to]) == out[to] &&
              GetABXremaining(ids[to]) == size_from(Self),
              "accessors of the transfer to node %d", to);
    }
    zero = AsyncBlockXfer(0, PORT0 + Self, 0, out[0], 0, NULL);

    /* One round: two packets (2 x 56 words) of every transfer. */
    ServiceAllTransfers(1);
    for (to = 0; to < n; to++) {
        CHECK(GetABXremaining(ids[to]) == size_from(Self) - 112,
              "after one round the transfer to node %d has %d words left",
              to, GetABXremaining(ids[to]));
        CHECK(completed[to] == 0, "completed early");
    }
    CHECK(GetABXremaining(zero) == 0 && GetABXproc(zero) == -1,
          "an empty transfer is done after one round");

    /* The last one, completed alone. */
    CompleteTransfer(ids[n - 1]);
    CHECK(completed[n - 1] == 1 && completed_buf[n - 1] == out[n - 1],
          "CompleteTransfer ran the callback %d times", completed[n - 1]);
    CHECK(GetABXproc(ids[n - 1]) == -1 && GetABXport(ids[n - 1]) == 0 &&
          GetABXoffset(ids[n - 1]) == 0 && GetABXbuffer(ids[n - 1]) == NULL &&
          GetABXremaining(ids[n - 1]) == 0, "accessors of a finished id");
    stale = ids[n - 1];
    CompleteTransfer(stale);
    CompleteTransfer(-1);
    CHECK(completed[n - 1] == 1, "a finished id completed again");

    ServiceAllTransfers(-1);
    for (to = 0; to < n; to++) {
        CHECK(completed[to] == 1, "transfer to node %d completed %d times",
              to, completed[to]);
    }
    /* A hundred small ones into one port, interleaved. */
    for (i = 0; i < 100 * 7; i++) {
        small_out[i] = pattern(Self, 99, i);
    }
    for (i = 0; i < 100; i++) {
        AsyncBlockXfer((Self + 1) % n, SMALL_PORT, i * 7, small_out + i * 7,
                       7, small_complete);
    }
    ServiceAllTransfers(-1);
    CHECK(small_done == 100, "%d small transfers completed", small_done);
    ServiceAllTransfers(-1);
    ServiceAllTransfers(0);

    for (from = 0; from < n; from++) {
        st_wait_count(&port_full[PORT0 + from], 1);
    }
    st_wait_count(&port_full[SMALL_PORT], 1);
    for (from = 0; from < n; from++) {
        bad = 0;
        for (i = 0; i < size_from(from); i++) {
            bad += in[from][i] != pattern(from, Self, i);
        }
        CHECK(!bad, "%d words from node %d wrong", bad, from);
    }
    bad = 0;
    for (i = 0; i < 100 * 7; i++) {
        bad += small_in[i] != pattern((Self + n - 1) % n, 99, i);
    }
    CHECK(!bad, "%d words of the small transfers wrong", bad);
    Barrier();
    CHECK(port_full[PORT0] == 1, "port handler ran %d times",
          port_full[PORT0]);
    st_finish("strata_abx");
}
