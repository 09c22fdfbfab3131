/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH 3.3.2 (the transfer is scheduled in pieces, interleaved with
 * other requests) / issue 6 part 1: an active message sent while a large
 * transfer runs is not held behind it.  Node 0 measures the round trip
 * of an empty active message to node 1 with nothing else going on, then
 * again and again while a transfer of SIZE bytes (default 64 MiB) from
 * node 0 to node 1 is under way, and prints both.  What is checked is
 * behaviour: round trips complete while the transfer is under way (an
 * active message held behind the whole transfer would make none
 * complete before its XFER_SENT).  A transfer that ends before one round
 * trip could (64 MiB take 13 ms on shared RAM, less than one time slice
 * of the host's scheduler, which may run node 1 only after it) is
 * followed by another, for ATTEMPTS transfers and at least TRY_NS of
 * transfers back to back.  How long the round
 * trips take, against the idle ones and the transfer's time, is the
 * host's doing: printed here, measured by 'scripts/tempest bench bulk'.
 *   xfer_latency [SIZE_MB]
 * Prints "xfer_latency ok" on both nodes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "am-util.h"
#include "tempest.h"
#include "tempest/rt.h"
#include "xfer-util.h"

#define USER_COOKIE ((uint64_t)TEMPEST_XFER_CLIENT_USER << \
                     TEMPEST_XFER_CLIENT_SHIFT)
#define IDLE_RTTS   200
#define MAX_RTTS    100000
#define ATTEMPTS    3
#define TRY_NS      2000000000ULL   /* of transfers without a round trip */

static volatile uint64_t xfer_done_ns;  /* volatile: set by the hook */
static volatile uint64_t peer_buf;      /* volatile: set by a handler */
static uint64_t rtts[MAX_RTTS];

static void buf_h(TPPI_NodeId src, int size)
{
    uint32_t lo = (uint32_t)TPPI_recv_W(), hi = (uint32_t)TPPI_recv_W();

    (void)src;
    (void)size;
    peer_buf = (uint64_t)hi << 32 | lo;
}

static void hook(const struct tempest_xfer_event *ev)
{
    if (ev->kind == TEMPEST_EV_XFER_SENT) {
        if (ev->error) {
            am_fail("the transfer failed: %s",
                    tempest_cmd_reason_name(ev->error));
        }
        xfer_done_ns = rt_time_ns();
    }
}

static int buf_cond(void *arg)
{
    (void)arg;
    return peer_buf != 0;
}

/* One round trip, in ns. */
static uint64_t rtt(void)
{
    unsigned want = am_pongs + 1;
    uint64_t t0 = rt_time_ns();

    TPPI_send(1, am_ping_h);
    xu_need(am_pongs_reach, &want, "a pong");
    return rt_time_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    uint64_t size = (uint64_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
    uint8_t *buf = aligned_alloc(64, size);
    uint64_t idle_med, busy_med, busy_max, t0, t_first, xfer_ns = 0;
    unsigned i, attempt, nbusy = 0;
    int r;

    if (TPPI_num_nodes != 2 || buf == NULL) {
        am_fail("needs 2 nodes and %llu bytes", (unsigned long long)size);
        return am_finish("xfer_latency");
    }
    tempest_on_xfer(TEMPEST_XFER_CLIENT_USER, hook);
    if (TPPI_self_address == 1) {
        TPPI_send_WW(0, buf_h, (int)(uint32_t)(uintptr_t)buf,
                     (int)(uint32_t)((uint64_t)(uintptr_t)buf >> 32));
        return am_finish("xfer_latency");
    }
    xu_fill(buf, size, 1);
    xu_need(buf_cond, NULL, "node 1's buffer");
    (void)rtt();                            /* warm up */
    for (i = 0; i < IDLE_RTTS; i++) {
        rtts[i] = rtt();
    }
    qsort(rtts, IDLE_RTTS, sizeof(rtts[0]), cmp_u64);
    idle_med = rtts[IDLE_RTTS / 2];

    t_first = rt_time_ns();
    for (attempt = 1; nbusy == 0 && (attempt <= ATTEMPTS ||
                                     rt_time_ns() - t_first < TRY_NS);
         attempt++) {
        xfer_done_ns = 0;
        t0 = rt_time_ns();
        r = tempest_xfer(1, buf, size, peer_buf, 0, USER_COOKIE, NULL);
        if (r != 0) {
            am_fail("the transfer was refused: %s",
                    tempest_cmd_reason_name((uint32_t)r));
            return am_finish("xfer_latency");
        }
        while (!xfer_done_ns && nbusy < MAX_RTTS) {
            uint64_t d = rtt();

            if (!xfer_done_ns) {
                rtts[nbusy++] = d;
            }
            if (rt_time_ns() - t0 > (uint64_t)XU_LIMIT_S * 1000000000ULL) {
                am_fail("the transfer did not end in %d s", XU_LIMIT_S);
                return am_finish("xfer_latency");
            }
        }
        while (!xfer_done_ns) {
            rt_cpu_sleep(100);
        }
        xfer_ns = xfer_done_ns - t0;
    }
    if (nbusy == 0) {
        am_fail("no round trip completed during any of %u transfers in "
                "%llu ms (the last took %llu ms): messages wait behind the "
                "transfer", attempt - 1,
                (unsigned long long)(rt_time_ns() - t_first) / 1000000,
                (unsigned long long)xfer_ns / 1000000);
        return am_finish("xfer_latency");
    }
    qsort(rtts, nbusy, sizeof(rtts[0]), cmp_u64);
    busy_med = rtts[nbusy / 2];
    busy_max = rtts[nbusy - 1];
    printf("idle: active-message round trip %llu us (median of %u)\n",
           (unsigned long long)idle_med / 1000, IDLE_RTTS);
    printf("busy: %llu MiB transfer in %llu ms (%llu MB/s); %u round trips "
           "during it: median %llu us, max %llu us (%llu.%llux idle)\n",
           (unsigned long long)size >> 20,
           (unsigned long long)xfer_ns / 1000000,
           (unsigned long long)(size * 1000 / (xfer_ns ? xfer_ns : 1)),
           nbusy, (unsigned long long)busy_med / 1000,
           (unsigned long long)busy_max / 1000,
           (unsigned long long)(busy_med / (idle_med ? idle_med : 1)),
           (unsigned long long)(busy_med * 10 / (idle_med ? idle_med : 1) %
                                10));
    return am_finish("xfer_latency");
}
