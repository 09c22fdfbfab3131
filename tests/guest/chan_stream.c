/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Many messages in order ("Hardware Migratable Channels", sections 2.2
 * and 3.1): every node of the cluster has a channel to the next node
 * and one from the previous; each node pre-sends message i on the first
 * (chan_output_start), inputs message i from the second, then waits for
 * its own output (chan_output_wait), N times, so that both directions
 * overlap.  Every message carries its number and a pattern of a length
 * that varies with it; each is checked, in order, none lost or
 * duplicated.  Usage: chan_stream [N] (default 2000).  Prints
 * "N messages each way in T ms" and "chan_stream ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-util.h"

#define KEY         7

static uint8_t out[CHAN_MAX_DATA] __attribute__((aligned(8)));
static uint8_t in[CHAN_MAX_DATA] __attribute__((aligned(8)));

/* The length of message @i (4 .. 1027 bytes, some long ones). */
static unsigned msg_len(unsigned i)
{
    return i % 97 == 0 ? 3000 + i % 1000 : 4 + (i * 37) % 1024;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 2000;
    unsigned next = (TPPI_self_address + 1) % TPPI_num_nodes;
    unsigned prev = (TPPI_self_address + TPPI_num_nodes - 1) %
                    TPPI_num_nodes;
    chan_port to, from;
    uint64_t t0;
    unsigned i, len, bad = 0;
    uint32_t seq;
    int got;

    cu_watchdog(20);
    am_barrier();
    CU_EQ(chan_alloc_to(next, KEY, &to), 0);
    CU_EQ(chan_accept(prev, KEY, &from), 0);
    am_barrier();
    t0 = am_ticks();
    for (i = 0; i < n; i++) {
        len = msg_len(i);
        cu_fill(out + 4, len - 4, i);
        seq = i;
        memcpy(out, &seq, 4);
        if (chan_output_start(to, out, len) != 0) {
            am_fail("output %u refused", i);
            break;
        }
        got = chan_input(from, in, sizeof(in));
        memcpy(&seq, in, 4);
        if (got != (int)msg_len(i) || seq != i ||
            !cu_match(in + 4, (size_t)got - 4, i)) {
            if (bad++ < 5) {
                am_fail("message %u: %d bytes, number %u", i, got,
                        (unsigned)seq);
            }
        }
        if (chan_output_wait(to) != 0) {
            am_fail("output %u failed", i);
            break;
        }
    }
    printf("%u messages each way in %llu ms\n", n,
           (unsigned long long)((am_ticks() - t0) / 1000));
    am_barrier();
    CU_EQ(chan_free(to), 0);
    am_barrier();
    /* The companion freed first: ours is closed, then freed here. */
    CU_EQ(chan_free(from), 0);
    return cu_finish("chan_stream", 0);
}
