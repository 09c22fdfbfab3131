/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bulk transfer benchmark of 'scripts/tempest bench bulk' (2 nodes,
 * --mem 256M or more): node 0 measures, on the generic timer,
 *   - the bandwidth of memory-to-memory transfers (TEMPEST_CMD_XFER,
 *     direct into node 1's memory) of 4 KiB .. 64 MiB: for each size,
 *     REPS transfers started back to back (tempest_xfer() waits while the
 *     controller has 64 under way), timed from the first command to the
 *     last XFER_SENT (the data is stored at node 1 by then);
 *   - the initiation latency: one XFER command of 64 bytes to this node
 *     itself, from its first argument write to the committing read's
 *     answer (bursts of 32, well under the controller's 64);
 *   - the fetch-and-op round trip to node 1 and to this node
 *     (magic_fetch_add from main, which waits for the reply), beside the
 *     active-message round trip to node 1 seen the same way (main sends,
 *     node 1's handler answers, main wakes: am_ns) and between handlers
 *     (each handler sends the next message, as in 'bench am': am_hh_ns);
 *   - the active-message round trip (as am_ns) while one MAX_MB transfer
 *     to node 1 is under way: the median of those that completed before
 *     its XFER_SENT (busy_rtt_ns, 0 if none did), how many (busy_rtts)
 *     and the transfer's time (busy_xfer_ns).  tests/guest/xfer_latency.c
 *     checks only that such round trips complete; how long they take is
 *     measured here.
 * and prints
 *   bulk_bench: size=N reps=R ns=T          (one line per size)
 *   bulk_bench: init_ns=N fop_ns=N fop_self_ns=N am_ns=N am_hh_ns=N
 *   bulk_bench: busy_rtt_ns=N busy_rtts=N busy_xfer_ns=N
 * Usage: bulk_bench [MAX_MB [ROUNDS]] (defaults 64, 1000).
 */
#include <stdio.h>
#include <stdlib.h>

#include "magic.h"
#include "tempest/rt.h"

#define USER_COOKIE ((uint64_t)TEMPEST_XFER_CLIENT_USER << \
                     TEMPEST_XFER_CLIENT_SHIFT)
#define BURST       32
#define BUSY_MAX    100000

static volatile uint64_t sent, refused; /* volatile: set by the hook */
static volatile uint64_t sent_ns;       /* volatile: set by the hook */
static volatile uint64_t peer_buf;      /* volatile: set by a handler */
static volatile unsigned pongs;         /* volatile: set by handlers */
static volatile int done;               /* volatile: set by a handler */
static uint64_t word;
static uint64_t busy[BUSY_MAX];

static void hook(const struct tempest_xfer_event *ev)
{
    if (ev->kind == TEMPEST_EV_XFER_SENT) {
        if (ev->error) {
            refused++;
        }
        sent_ns = rt_time_ns();
        sent++;
    }
}

static void buf_h(TPPI_NodeId src, int size)
{
    uint32_t lo = (uint32_t)TPPI_recv_W(), hi = (uint32_t)TPPI_recv_W();

    (void)src;
    (void)size;
    peer_buf = (uint64_t)hi << 32 | lo;
}

/*
 * Also in tests/guest/am-util.c (am_ping_h): the benchmark is built apart
 * from the tests and links none of their helpers.
 */
static void pong_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    pongs++;
}

static void ping_h(TPPI_NodeId src, int size)
{
    (void)size;
    TPPI_send(src, pong_h);
}

static volatile unsigned hh_left;       /* volatile: set by handlers */
static volatile uint64_t hh_end;        /* volatile: set by a handler */

static void pong2_h(TPPI_NodeId src, int size);

static void ping2_h(TPPI_NodeId src, int size)
{
    (void)size;
    TPPI_send(src, pong2_h);
}

static void pong2_h(TPPI_NodeId src, int size)
{
    (void)size;
    if (--hh_left) {
        TPPI_send(src, ping2_h);
    } else {
        hh_end = rt_time_ns();
    }
}

static int hh_done(void *arg)
{
    (void)arg;
    return hh_end != 0;
}

static void done_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    done = 1;
}

static int sent_at_least(void *arg)
{
    return sent >= *(uint64_t *)arg;
}

static int have_buf(void *arg)
{
    (void)arg;
    return peer_buf != 0;
}

static int pong_cond(void *arg)
{
    return pongs >= *(unsigned *)arg;
}

static int done_cond(void *arg)
{
    (void)arg;
    return done;
}

static void wait_sent(uint64_t want)
{
    tempest_wait(sent_at_least, &want);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * Round trips to node 1 (main sends, waits for the pong) while one
 * transfer of @size bytes to node 1 is under way; prints the busy_ line.
 */
static void busy_rtts(const uint8_t *src, uint64_t size)
{
    uint64_t base = sent, t0 = rt_time_ns(), t1;
    unsigned n = 0, want;

    if (tempest_xfer(1, src, size, peer_buf, 0, USER_COOKIE, NULL)) {
        printf("bulk_bench: transfer refused\n");
        exit(1);
    }
    while (sent == base && n < BUSY_MAX) {
        want = pongs + 1;
        t1 = rt_time_ns();
        TPPI_send(1, ping_h);
        tempest_wait(pong_cond, &want);
        if (sent == base) {
            busy[n++] = rt_time_ns() - t1;
        }
    }
    wait_sent(base + 1);
    qsort(busy, n, sizeof(busy[0]), cmp_u64);
    printf("bulk_bench: busy_rtt_ns=%llu busy_rtts=%u busy_xfer_ns=%llu\n",
           (unsigned long long)(n ? busy[n / 2] : 0), n,
           (unsigned long long)(sent_ns - t0));
}

/* REPS transfers of SIZE bytes to node 1; returns the ns they took. */
static uint64_t bandwidth(const uint8_t *src, uint64_t size, unsigned reps)
{
    uint64_t base = sent, t0 = rt_time_ns();
    unsigned i;

    for (i = 0; i < reps; i++) {
        if (tempest_xfer(1, src, size, peer_buf, 0, USER_COOKIE, NULL)) {
            printf("bulk_bench: transfer refused\n");
            exit(1);
        }
    }
    wait_sent(base + reps);
    return rt_time_ns() - t0;
}

int main(int argc, char **argv)
{
    uint64_t max = (uint64_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
    unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
    uint64_t size, t, t0, init_ns = 0, fop_ns, fop_self_ns, am_ns, am_hh_ns;
    uint8_t *buf = aligned_alloc(64, max);
    static uint8_t small[64] __attribute__((aligned(64)));
    static uint8_t sink[64 * BURST] __attribute__((aligned(64)));
    unsigned i, j, reps, want;

    if (TPPI_num_nodes != 2 || buf == NULL || rounds < 10) {
        printf("bulk_bench: needs 2 nodes, %llu bytes, ROUNDS >= 10\n",
               (unsigned long long)max);
        return 2;
    }
    tempest_on_xfer(TEMPEST_XFER_CLIENT_USER, hook);
    if (TPPI_self_address == 1) {
        TPPI_send_WW(0, buf_h, (int)(uint32_t)(uintptr_t)buf,
                     (int)(uint32_t)((uint64_t)(uintptr_t)buf >> 32));
        tempest_wait(done_cond, NULL);
        return 0;
    }
    for (i = 0; i < max / 8; i++) {
        ((uint64_t *)buf)[i] = i;
    }
    tempest_wait(have_buf, NULL);

    (void)bandwidth(buf, 1 << 20, 4);            /* warm up */
    for (size = 4096; size <= max; size *= 4) {
        reps = (unsigned)((256ULL << 20) / size);
        reps = reps < 4 ? 4 : reps > 2048 ? 2048 : reps;
        t = bandwidth(buf, size, reps);
        printf("bulk_bench: size=%llu reps=%u ns=%llu\n",
               (unsigned long long)size, reps, (unsigned long long)t);
    }

    /* Initiation: the command alone, to this node. */
    for (j = 0; j < rounds / BURST + 1; j++) {
        uint64_t base = sent;

        for (i = 0; i < BURST; i++) {
            t0 = rt_time_ns();
            if (tempest_xfer(0, small, sizeof(small),
                             (uintptr_t)(sink + 64 * i), 0, USER_COOKIE,
                             NULL)) {
                printf("bulk_bench: transfer to itself refused\n");
                return 1;
            }
            init_ns += rt_time_ns() - t0;
        }
        wait_sent(base + BURST);
    }
    init_ns /= (uint64_t)(rounds / BURST + 1) * BURST;

    t0 = rt_time_ns();
    for (i = 0; i < rounds; i++) {
        magic_fetch_add(1, &word, 1);
    }
    fop_ns = (rt_time_ns() - t0) / rounds;
    t0 = rt_time_ns();
    for (i = 0; i < rounds; i++) {
        magic_fetch_add(0, &word, 1);
    }
    fop_self_ns = (rt_time_ns() - t0) / rounds;
    t0 = rt_time_ns();
    for (i = 0; i < rounds; i++) {
        want = pongs + 1;
        TPPI_send(1, ping_h);
        tempest_wait(pong_cond, &want);
    }
    am_ns = (rt_time_ns() - t0) / rounds;
    hh_left = rounds;
    t0 = rt_time_ns();
    TPPI_send(1, ping2_h);
    tempest_wait(hh_done, NULL);
    am_hh_ns = (hh_end - t0) / rounds;
    printf("bulk_bench: init_ns=%llu fop_ns=%llu fop_self_ns=%llu "
           "am_ns=%llu am_hh_ns=%llu\n", (unsigned long long)init_ns,
           (unsigned long long)fop_ns, (unsigned long long)fop_self_ns,
           (unsigned long long)am_ns, (unsigned long long)am_hh_ns);
    busy_rtts(buf, max);
    if (refused) {
        printf("bulk_bench: %llu transfers refused\n",
               (unsigned long long)refused);
        return 1;
    }
    TPPI_send(1, done_h);
    tempest_flush(1000);
    return 0;
}
