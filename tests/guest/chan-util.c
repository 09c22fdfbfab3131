/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers of the migratable channel tests: see chan-util.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-util.h"
#include "tempest/rt.h"

static void dump_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    chan_dump();
}

static void bite(void *arg)
{
    (void)arg;
    printf("FAIL: stuck: watchdog\n");
    rt_exit(3);
}

static void watchdog(void *arg)
{
    TPPI_NodeId n;

    (void)arg;
    for (n = 0; n < TPPI_num_nodes; n++) {
        TPPI_send(n, dump_h);
    }
    TPPI_schedule_timer(TPPI_TICKS_PER_SEC / 2, bite, NULL);
}

void cu_watchdog(unsigned seconds)
{
    TPPI_schedule_timer((int)(seconds * TPPI_TICKS_PER_SEC), watchdog, NULL);
}

static int never(void *arg)
{
    (void)arg;
    return 0;
}

void cu_sleep_ms(unsigned ms)
{
    tempest_wait_until(never, NULL, rt_time_ns() + (uint64_t)ms * 1000000);
}

static void stuck(const char *what)
{
    printf("FAIL: stuck %s\n", what);
    exit(3);
}

void cu_wait_state(chan_port p, int state)
{
    uint64_t limit = am_ticks() + CU_LIMIT_S * 1000000ULL;

    while (chan_state(p) != state) {
        if (am_ticks() > limit) {
            printf("port state %s, expected %s\n",
                   chan_state_name(chan_state(p)), chan_state_name(state));
            stuck("waiting for a port state");
        }
        cu_sleep_ms(1);
    }
}

static volatile int answer;             /* volatile: set by a handler */
static volatile unsigned answers;       /* volatile: set by a handler */

static void state_reply_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    answer = TPPI_recv_W();
    answers++;
}

/* Runs on the protocol thread of the port's node: chan_state() works. */
static void state_ask_h(TPPI_NodeId src, int size)
{
    chan_port p = (chan_port)TPPI_recv_W();

    (void)size;
    TPPI_send_W(src, state_reply_h, chan_state(p));
}

static int answered(void *arg)
{
    return answers != *(unsigned *)arg;
}

int cu_remote_state(unsigned node, chan_port p)
{
    unsigned before = answers;

    TPPI_send_W(node, state_ask_h, (int)p);
    tempest_wait(answered, &before);
    return answer;
}

void cu_wait_remote_state(unsigned node, chan_port p, int state)
{
    uint64_t limit = am_ticks() + CU_LIMIT_S * 1000000ULL;

    while (cu_remote_state(node, p) != state) {
        if (am_ticks() > limit) {
            stuck("waiting for a port state on another node");
        }
        cu_sleep_ms(1);
    }
}

uint64_t cu_stat(size_t off)
{
    struct chan_stats s;

    chan_get_stats(&s);
    if (off == CU_STAT(ports_in_use)) {
        return s.ports_in_use;
    }
    return *(uint64_t *)((char *)&s + off);
}

void cu_wait_stat(size_t off, uint64_t want, const char *what)
{
    uint64_t limit = am_ticks() + CU_LIMIT_S * 1000000ULL;

    while (cu_stat(off) < want) {
        if (am_ticks() > limit) {
            stuck(what);
        }
        cu_sleep_ms(1);
    }
}

void cu_fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; i++) {
        b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
    }
}

int cu_match(const void *buf, size_t len, unsigned seed)
{
    const uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; i++) {
        if (b[i] != (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1)) {
            return 0;
        }
    }
    return 1;
}

int cu_finish(const char *name, unsigned ports)
{
    struct chan_stats s;

    am_barrier();       /* every node is done with its ports */
    chan_get_stats(&s);
    if (s.ports_in_use != ports) {
        am_fail("%u ports in use at the end, expected %u", s.ports_in_use,
                ports);
    }
    if (s.protocol_errors) {
        am_fail("%llu protocol errors",
                (unsigned long long)s.protocol_errors);
    }
    printf("stats: %llu calls, %llu messages sent, %llu data, %llu resent, "
           "%llu buffered, %llu dropped, %llu stale, %llu migrations, "
           "%llu forwards\n", (unsigned long long)s.calls,
           (unsigned long long)s.msgs_sent, (unsigned long long)s.data_sent,
           (unsigned long long)s.resends, (unsigned long long)s.buffered,
           (unsigned long long)s.dropped, (unsigned long long)s.stale,
           (unsigned long long)s.migrations,
           (unsigned long long)s.forwards);
    return am_finish(name);
}

void cu_expect_text(chan_port port, void *buf, size_t size, const char *s)
{
    int n;

    memset(buf, 0, size);
    n = chan_input(port, buf, size);
    CU_EQ(n, (int)strlen(s) + 1);
    if (n > 0 && strcmp((char *)buf, s) != 0) {
        am_fail("got \"%.*s\", expected \"%s\"", n, (char *)buf, s);
    }
}
