/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Message storms (Tempest spec 2 and 3.3: every message handled exactly
 * once, in order per sender; flow control between nodes):
 *   am_storm many [COUNT]   every node sends COUNT messages to node 0
 *   am_storm all [COUNT]    every node sends COUNT messages round-robin
 *                           to every node (itself included)
 *   am_storm reply [COUNT]  as "all", and every handler answers each
 *                           message from the handler (reply network)
 * Messages are TPPI_send_WW(seq, check); every 97th is TPPI_send_WWR with
 * a 300-byte region (two packets).  Each receiver checks, per source, that
 * sequence numbers arrive in order without gaps or repeats and that the
 * contents are right, and at the end that it got exactly what was sent.
 * COUNT defaults to 100000.  Prints "am_storm ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "tempest/rt.h"

#define BIG_EVERY   97
#define BIG_BYTES   300

static uint32_t *next_seq;      /* per source */
static uint64_t received;
static uint64_t acks;
static int mode_reply;

static uint32_t check_of(TPPI_NodeId src, uint32_t seq)
{
    return seq * 2654435761u ^ (src * 40503u + 17);
}

static void ack_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    acks++;
}

static void msg_h(TPPI_NodeId src, int size)
{
    uint32_t seq = (uint32_t)TPPI_recv_W();
    uint32_t check = (uint32_t)TPPI_recv_W();
    uint32_t big[BIG_BYTES / 4];
    unsigned i;

    if (seq != next_seq[src]) {
        am_fail("from node %u: message %u, expected %u", src,
                (unsigned)seq, (unsigned)next_seq[src]);
    }
    next_seq[src] = seq + 1;
    if (check != check_of(src, seq)) {
        am_fail("from node %u: message %u damaged", src, (unsigned)seq);
    }
    if (size == 8 + BIG_BYTES) {
        TPPI_recv_R(big, BIG_BYTES);
        for (i = 0; i < BIG_BYTES / 4; i++) {
            if (big[i] != check + i) {
                am_fail("from node %u: region of message %u damaged", src,
                        (unsigned)seq);
                break;
            }
        }
    } else if (size != 8) {
        am_fail("from node %u: message of %d bytes", src, size);
    }
    received++;
    if (mode_reply) {
        TPPI_send_W(src, ack_h, (int)seq);
    }
}

/* Messages source @s sends to @d when it sends @count round-robin. */
static uint64_t share(TPPI_NodeId s, TPPI_NodeId d, uint64_t count)
{
    TPPI_NodeId n = TPPI_num_nodes;

    return count / n + (((d + n - s) % n) < count % n ? 1 : 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    uint64_t count = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    TPPI_NodeId n = TPPI_num_nodes, me = TPPI_self_address, d, s;
    uint32_t *seq_to = calloc(n, sizeof(*seq_to));
    uint32_t big[BIG_BYTES / 4];
    uint64_t i, expect = 0, t0, t1;
    struct tempest_stats st;
    int many = strcmp(mode, "many") == 0;
    unsigned k;

    next_seq = calloc(n, sizeof(*next_seq));
    mode_reply = strcmp(mode, "reply") == 0;
    if (!many && !mode_reply && strcmp(mode, "all") != 0) {
        printf("usage: am_storm many|all|reply [COUNT]\n");
        return 2;
    }
    for (s = 0; s < n; s++) {
        expect += many ? (me == 0 ? count : 0) : share(s, me, count);
    }
    am_barrier();
    t0 = rt_time_ns();
    for (i = 0; i < count; i++) {
        uint32_t seq, check;

        d = many ? 0 : (TPPI_NodeId)((me + i) % n);
        seq = seq_to[d]++;
        check = check_of(me, seq);
        if (i % BIG_EVERY == BIG_EVERY - 1) {
            for (k = 0; k < BIG_BYTES / 4; k++) {
                big[k] = check + k;
            }
            TPPI_send_WWR(d, msg_h, (int)seq, (int)check, big, BIG_BYTES);
        } else {
            TPPI_send_WW(d, msg_h, (int)seq, (int)check);
        }
    }
    t1 = rt_time_ns();
    am_wait_count(&received, expect);
    if (mode_reply) {
        am_wait_count(&acks, count);
    }
    for (s = 0; s < n; s++) {
        uint64_t want = many ? (me == 0 ? count : 0) : share(s, me, count);

        if (next_seq[s] != want) {
            am_fail("got %u messages from node %u, expected %llu",
                    (unsigned)next_seq[s], s, (unsigned long long)want);
        }
    }
    tempest_get_stats(&st);
    printf("%s: sent %llu in %llu ms (%llu msg/s), received %llu; "
           "ring full %llu, backlog max %llu, protocol sleeps %llu\n",
           mode, (unsigned long long)count,
           (unsigned long long)((t1 - t0) / 1000000),
           (unsigned long long)(count * 1000000000ULL / (t1 - t0 + 1)),
           (unsigned long long)received, (unsigned long long)st.sq_full,
           (unsigned long long)st.backlog_max,
           (unsigned long long)st.sleeps);
    return am_finish("am_storm");
}
