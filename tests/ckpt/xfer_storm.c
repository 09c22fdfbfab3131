/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checkpoint during bulk data and an active-message storm
 * (docs/checkpoint.rst, "Tests"): ROUNDS rounds (argv[1], default 8), in
 * each of which every node stores a block of BYTES (argv[2], default 64
 * MiB) into the next node ((self + 1) % N) with am_store_async while it
 * sends a storm of REQS requests (argv[3], default 4000) round-robin to
 * the other nodes.  Every request carries its number per source and is
 * checked to arrive exactly once and in order, and is answered; every
 * reply is checked and counted once.  Every word of every block that
 * arrives is checked against the pattern of its source and round, and
 * the next round's block comes only once the receiver said it checked
 * this one (a request 'checked'), so nothing is overwritten unread.  A
 * lost, duplicated, reordered or corrupted message or block ends the
 * node with a message.  Prints "xfer_storm ok: ..." with a checksum of
 * everything received, the same in every run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../guest/gam-util.h"

#define MAX_NODES   16

static int self, nodes, rounds, reqs;
static size_t bytes;
static uint64_t *src_buf, *dst_buf;
static volatile int replies, requests_in, arrived, checked_by_next;
static int next_from[MAX_NODES];
static uint8_t *answered;
static uint64_t sum;

static uint64_t word_of(int node, int round, size_t i)
{
    return (uint64_t)i * 0x9e3779b97f4a7c15ULL ^
           ((uint64_t)node << 56) ^ ((uint64_t)round << 40);
}

static int value_of(int src, int r, int i)
{
    return (int)((uint32_t)i * 2246822519U ^ (uint32_t)src * 3266489917U ^
                 (uint32_t)r * 668265263U);
}

static void reply_h(vnn_t src, int r, int i, int v)
{
    gam_check(i >= 0 && i < reqs, "reply for request %d", i);
    gam_check(v == ~value_of(self, r, i), "reply for request %d of round "
              "%d: wrong value", i, r);
    gam_check(!answered[i], "request %d of round %d answered twice", i, r);
    answered[i] = 1;
    replies++;
}

static void request_h(vnn_t src, int n, int r, int i, int v)
{
    gam_check(src >= 0 && src < nodes && src != self, "request from %d",
              src);
    gam_check(n == next_from[src], "request %d from node %d arrived as "
              "number %d", n, src, next_from[src]);
    gam_check(v == value_of(src, r, i), "request %d of node %d: wrong "
              "value", i, src);
    next_from[src]++;
    requests_in++;
    sum += (uint32_t)v;     /* any order of sources: the same sum */
    gam_check(am_reply_3(src, reply_h, r, i, ~v) == 0, "am_reply_3: %s",
              am_error_name(am_errno));
}

/* The next node checked our block of round r. */
static void checked_h(vnn_t src, int r)
{
    gam_check(src == (self + 1) % nodes && r == checked_by_next,
              "'checked' %d from node %d", r, src);
    checked_by_next = r + 1;
}

/* A block from the previous node arrived. */
static void stored_h(vnn_t src, void *buf, int n, void *arg)
{
    gam_check(src == (self + nodes - 1) % nodes && buf == dst_buf &&
              (size_t)n == bytes && (intptr_t)arg == arrived,
              "block %d from node %d (round %ld)", n, src, (long)arg);
    arrived++;
}

int main(int argc, char **argv)
{
    int sent_to[MAX_NODES] = { 0 };
    int prev;

    rounds = argc > 1 ? atoi(argv[1]) : 8;
    bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 64 << 20) & ~(size_t)7;
    reqs = argc > 3 ? atoi(argv[3]) : 4000;
    self = am_my_proc();
    nodes = am_procs();
    prev = (self + nodes - 1) % nodes;
    gam_check(nodes >= 2 && nodes <= MAX_NODES, "2 to %d nodes", MAX_NODES);
    src_buf = malloc(bytes);
    dst_buf = malloc(bytes);
    answered = malloc((size_t)reqs);
    gam_check(src_buf && dst_buf && answered, "out of memory for %zu bytes",
              bytes);
    gam_check(am_enable() == 0, "am_enable failed");
    for (int r = 0; r < rounds; r++) {
        int expect_in = 0;

        memset(answered, 0, (size_t)reqs);
        replies = 0;
        /*
         * The next node has checked the block of the round before: only
         * then is src_buf ours again (am_store_async has no end function
         * here).  Filling it before this wait overwrote the end of the
         * last round's block while a transfer restored from a checkpoint
         * still went on in frames: the next node found this round's
         * words at the end of the last round's block.
         */
        gam_wait_for(&checked_by_next, r);
        for (size_t i = 0; i < bytes / 8; i++) {
            src_buf[i] = word_of(self, r, i);
        }
        gam_check(am_store_async((self + 1) % nodes, src_buf, dst_buf,
                                 (int)bytes, stored_h, (void *)(intptr_t)r,
                                 NULL, NULL) == 0,
                  "am_store_async: %s", am_error_name(am_errno));
        for (int i = 0; i < reqs; i++) {
            int d = (self + 1 + i % (nodes - 1)) % nodes;

            gam_check(am_request_4(d, request_h, sent_to[d]++, r, i,
                                   value_of(self, r, i)) == 0,
                      "am_request_4: %s", am_error_name(am_errno));
        }
        for (int s = 0; s < nodes; s++) {
            for (int i = 0; s != self && i < reqs; i++) {
                expect_in += (s + 1 + i % (nodes - 1)) % nodes == self;
            }
        }
        gam_wait_for(&replies, reqs);
        gam_wait_for(&arrived, r + 1);
        for (size_t i = 0; i < bytes / 8; i++) {
            if (dst_buf[i] != word_of(prev, r, i)) {
                gam_fail("round %d: word %zu of node %d's block is %016llx,"
                         " expected %016llx", r, i, prev,
                         (unsigned long long)dst_buf[i],
                         (unsigned long long)word_of(prev, r, i));
            }
            sum += dst_buf[i] >> 32;
        }
        gam_check(am_request_1(prev, checked_h, r) == 0, "am_request_1: %s",
                  am_error_name(am_errno));
        (void)expect_in;
    }
    /* The last 'checked' and every request to us. */
    gam_wait_for(&checked_by_next, rounds);
    am_disable();
    for (int s = 0; s < nodes; s++) {
        int n = 0;

        for (int r = 0; r < rounds; r++) {
            for (int i = 0; s != self && i < reqs; i++) {
                n += (s + 1 + i % (nodes - 1)) % nodes == self;
            }
        }
        gam_check(s == self || next_from[s] == n, "%d requests from node "
                  "%d, expected %d", next_from[s], s, n);
    }
    printf("xfer_storm ok: node %d, %d rounds of %zu bytes and %d requests,"
           " %d in, checksum %016llx\n", self, rounds, bytes, reqs,
           requests_in, (unsigned long long)sum);
    return 0;
}
