/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Radix sort with Strata (the example program of the Strata manual,
 * section 1): every node holds KEYS random 32-bit keys; the sort makes
 * 32 / BITS passes, one digit of BITS bits each, least significant first.
 * In each pass a node
 *   1. counts its keys per digit value (a bucket),
 *   2. learns where its keys of each bucket go in the global order with
 *      two vector combines: an exclusive ScanAdd of the counts (the keys
 *      of that bucket on the nodes before it) and a ReduceAdd (each
 *      bucket's total, summed locally into bucket bases),
 *   3. sends each run of keys to the node and offset it belongs at with
 *      asynchronous block transfers into a port (section 8), and
 *   4. waits until its port has received its KEYS keys.
 * Then it checks that the keys are sorted (locally, and across node
 * boundaries with a ScanMax) and a permutation of the input (global
 * checksums before and after: count, sum, xor and a hash sum), prints
 * one summary line on node 0 and records its states (section 10): the
 * launcher draws states.svg and trace.json in the run directory.
 *
 * Usage: radix [KEYS [BITS]]   (defaults 4096 and 8; BITS 1..16
 * dividing 32)
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

enum {
    ST_COUNT = 8,
    ST_SCAN,
    ST_SEND,
    ST_WAIT,
    ST_CHECK,
};

static Word *keys, *staged, *recv_buf;
static int nkeys = 4096;
static int bits = 8;
static volatile int received_all;   /* volatile: set by a port handler */

static void port_full(int port)
{
    (void)port;
    received_all = 1;
}

/* The port of a pass: its base, the KEYS words to expect, its handler. */
static void open_port(unsigned port, Word *base)
{
    StrataPortTable[port].base = base;
    StrataPortTable[port].count = nkeys;
    StrataPortTable[port].handler = port_full;
    received_all = nkeys == 0;
}

static unsigned hash(Word k)
{
    k ^= k >> 16;
    k *= 0x7feb352dU;
    k ^= k >> 15;
    k *= 0x846ca68bU;
    return k ^ (k >> 16);
}

struct sums {
    int count;
    int sum;
    int xor;
    int hash;
};

static void checksums(struct sums *s)
{
    int v[3] = { 0, 0, 0 };
    int x = 0, i;

    for (i = 0; i < nkeys; i++) {
        v[0] += (int)keys[i];
        v[1] += (int)hash(keys[i]);
        x ^= (int)keys[i];
    }
    s->count = CombineInt(nkeys, ReduceAdd);
    s->sum = CombineInt(v[0], ReduceUadd);
    s->hash = CombineInt(v[1], ReduceUadd);
    s->xor = CombineInt(x, ReduceXor);
}

static void pass(int digit, unsigned port, int *count, int *before,
                 int *total, int *next)
{
    int buckets = 1 << bits, shift = digit * bits, i, b, pos, left, n;
    int mask = buckets - 1, dest, off, start;
    Word *t;

    open_port(port, recv_buf);

    SetState(ST_COUNT);
    memset(count, 0, (size_t)buckets * sizeof(int));
    for (i = 0; i < nkeys; i++) {
        count[(keys[i] >> shift) & mask]++;
    }

    SetState(ST_SCAN);
    CombineVector(before, count, ScanAdd, buckets);
    CombineVector(total, count, ReduceAdd, buckets);

    SetState(ST_SEND);
    /* Stage the keys by bucket, stably; next[b]: where bucket b goes. */
    for (b = 0, pos = 0; b < buckets; b++) {
        next[b] = pos;
        pos += count[b];
    }
    for (i = 0; i < nkeys; i++) {
        b = (keys[i] >> shift) & mask;
        staged[next[b]++] = keys[i];
    }
    /* Each bucket's run goes to global position base + before[b]. */
    for (b = 0, pos = 0, start = 0; b < buckets; b++) {
        int global = pos + before[b];

        for (left = count[b], i = start; left > 0;
             left -= n, i += n, global += n) {
            dest = global / nkeys;
            off = global % nkeys;
            n = nkeys - off < left ? nkeys - off : left;
            if (dest == Self) {
                memcpy(recv_buf + off, staged + i, (size_t)n * sizeof(Word));
                StrataPortTable[port].count -= n;
                if (StrataPortTable[port].count == 0) {
                    port_full((int)port);
                }
            } else {
                AsyncBlockXfer(dest, port, off, staged + i, n, NULL);
            }
        }
        start += count[b];
        pos += total[b];
    }
    ServiceAllTransfers(-1);

    SetState(ST_WAIT);
    while (!received_all) {
        PollBothTilEmpty();
    }
    t = keys;
    keys = recv_buf;
    recv_buf = t;
}

int main(int argc, char **argv)
{
    int *count, *before, *total, *next;
    struct sums in, out;
    DoubleWord t0;
    double elapsed;
    int digit, i, ok, prev;

    if (argc > 1) {
        nkeys = atoi(argv[1]);
    }
    if (argc > 2) {
        bits = atoi(argv[2]);
    }
    InitTrace("radix.sim", "radix sort");
    StrataInit();
    /* A node's keys arrive at offsets 0..KEYS-1 of one port, which
     * reaches STRATA_MAX_XFER_OFFSET words. */
    if (nkeys < 0 || nkeys > STRATA_MAX_XFER_OFFSET || bits < 1 ||
        bits > 16 || 32 % bits) {
        StrataFail("usage: radix [KEYS (0..%d) [BITS (1..16, dividing "
                   "32)]]", STRATA_MAX_XFER_OFFSET);
    }
    SetStateName(ST_COUNT, "count", "#17becf");
    SetStateName(ST_SCAN, "scan", "#3366cc");
    SetStateName(ST_SEND, "send", "#f28e2b");
    SetStateName(ST_WAIT, "wait", "#d62728");
    SetStateName(ST_CHECK, "check", "#9467bd");
    keys = malloc((size_t)nkeys * sizeof(Word) + 1);
    staged = malloc((size_t)nkeys * sizeof(Word) + 1);
    recv_buf = malloc((size_t)nkeys * sizeof(Word) + 1);
    count = malloc(sizeof(int) << bits);
    before = malloc(sizeof(int) << bits);
    total = malloc(sizeof(int) << bits);
    next = malloc(sizeof(int) << bits);
    if (!keys || !staged || !recv_buf || !count || !before || !total ||
        !next) {
        StrataFail("out of memory for %d keys", nkeys);
    }
    for (i = 0; i < nkeys; i++) {
        keys[i] = (Word)(Random() ^ (Random() << 13));
    }
    checksums(&in);

    SetState(STATE_BUSY);
    Barrier();
    t0 = CurrentCycle64();   /* CurrentCycle wraps after 4.3 s */
    for (digit = 0; digit < 32 / bits; digit++) {
        pass(digit, (unsigned)digit & 1, count, before, total, next);
    }
    SetState(STATE_IDLE);
    Barrier();
    elapsed = (double)(CurrentCycle64() - t0) / STRATA_CYCLE_HZ;

    SetState(ST_CHECK);
    ok = 1;
    for (i = 1; i < nkeys; i++) {
        if (keys[i - 1] > keys[i]) {
            ok = 0;
        }
    }
    /* Across nodes: my first key is not below any earlier node's last. */
    prev = CombineInt(nkeys ? (int)(keys[nkeys - 1] ^ 0x80000000U) : INT_MIN,
                      ScanMax);
    if (nkeys && !LEFTMOST && (int)(keys[0] ^ 0x80000000U) < prev) {
        ok = 0;
    }
    ok = !GlobalOR(!ok);
    checksums(&out);
    if (memcmp(&in, &out, sizeof(in)) != 0) {
        ok = 0;
    }
    SetState(STATE_IDLE);
    if (LEFTMOST) {
        printf("radix-sort: %d nodes x %d keys, %d-bit digits, %d passes: "
               "%s in %.2f ms (%.0f keys/s); checksums count %d sum %08x "
               "xor %08x hash %08x %s\n", PartitionSize, nkeys, bits,
               32 / bits, ok ? "sorted" : "NOT SORTED",
               elapsed * 1e3,
               elapsed > 0 ? (double)nkeys * PartitionSize / elapsed : 0.0,
               out.count, (unsigned)out.sum, (unsigned)out.xor,
               (unsigned)out.hash, in.count == out.count &&
               in.sum == out.sum && in.xor == out.xor &&
               in.hash == out.hash ? "match" : "DIFFER");
    }
    StrataExit(ok ? 0 : 1);
}
