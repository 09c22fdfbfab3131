/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers of the messaging tests: see am-util.h. */
#include <stdarg.h>
#include <stdio.h>

#include "am-util.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

static uint64_t arrived;        /* node 0: arrivals, all epochs */
static volatile unsigned released; /* volatile: set by handlers */
static unsigned epoch;
static unsigned failures;

static void arrive_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    __atomic_fetch_add(&arrived, 1, __ATOMIC_RELAXED);
}

static void release_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    released = (unsigned)TPPI_recv_W();
}

static int released_cond(void *arg)
{
    return released >= *(unsigned *)arg;
}

struct count_cond {
    const volatile uint64_t *counter; /* volatile: set by handlers */
    uint64_t want;
};

static int count_cond(void *arg)
{
    struct count_cond *c = arg;

    return __atomic_load_n(c->counter, __ATOMIC_RELAXED) >= c->want;
}

void am_wait_count(const volatile uint64_t *counter, uint64_t want)
{
    struct count_cond c = { counter, want };

    tempest_wait(count_cond, &c);
}

void am_barrier(void)
{
    TPPI_NodeId n;

    epoch++;
    if (TPPI_self_address != 0) {
        TPPI_send_W(0, arrive_h, (int)epoch);
        tempest_wait(released_cond, &epoch);
        return;
    }
    am_wait_count(&arrived, (uint64_t)epoch * (TPPI_num_nodes - 1));
    released = epoch;
    for (n = 1; n < TPPI_num_nodes; n++) {
        TPPI_send_W(n, release_h, (int)epoch);
    }
}

volatile unsigned am_pongs;

static void pong_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    am_pongs++;
}

void am_ping_h(TPPI_NodeId src, int size)
{
    (void)size;
    TPPI_send(src, pong_h);
}

int am_pongs_reach(void *want)
{
    return am_pongs >= *(unsigned *)want;
}

uint64_t am_ticks(void)
{
    return nc_ticks();
}

void am_fail(const char *fmt, ...)
{
    va_list ap;

    if (++failures > 20) {
        return;
    }
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

unsigned am_failures(void)
{
    return failures;
}

int am_finish(const char *name)
{
    am_barrier();
    /* (1.18) docs/fabric.rst, "Straight into the receiver's RQ" */
    printf("node %u: %u packets from peers straight into its RQ, %u of its "
           "own into theirs\n", (unsigned)TPPI_self_address,
           (unsigned)nc_reg(TEMPEST_NC_RX_DIRECT),
           (unsigned)nc_reg(TEMPEST_NC_TX_DIRECT));
    /* (1.19) docs/fabric.rst, "A vCPU asleep on its RQ" */
    printf("node %u: woken %u times on its RQ's tail by a peer's packet\n",
           (unsigned)TPPI_self_address,
           (unsigned)nc_reg(TEMPEST_NC_RX_WOKEN));
    if (failures) {
        printf("%s FAILED: %u failures\n", name, failures);
        return 1;
    }
    printf("%s ok\n", name);
    return 0;
}
