/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GAM ping-pong (docs/am.rst, "Requests and replies"): every node sends
 * ROUNDS requests to the next node ((self + 1) % N, itself on one node),
 * cycling through am_request_1..4 with arguments that change every
 * round; each request handler checks its arguments, its source and
 * that it runs as a request handler, and replies with am_reply_1..4
 * (the same count) carrying a function of them; each reply handler
 * checks every value and the order.  At the end: ROUNDS replies, each
 * once, and ROUNDS requests handled.  Prints "gam_pingpong ok: N round
 * trips, T us each".
 */
#include <stdint.h>
#include <string.h>

#include <tempest/rt.h>

#include "gam-util.h"

#define ROUNDS      4000

static int self, nodes, peer, from;
static volatile int replies, requests; /* volatile: set by handlers */
static int next_reply;

static int val(int round, int k)
{
    return (int)((uint32_t)round * 2654435761U + (uint32_t)k * 40503U +
                 (uint32_t)self);
}

static void check_reply(vnn_t src, int n, const int *a)
{
    int r = next_reply;

    gam_check(src == peer, "reply from node %d, expected %d", src, peer);
    gam_check(r % 4 + 1 == n, "reply %d carries %d args, expected %d", r,
              n, r % 4 + 1);
    gam_check(a[0] == r, "reply %d out of order: %d", r, a[0]);
    for (int k = 1; k < n; k++) {
        gam_check(a[k] == ~val(r, k), "reply %d arg %d: 0x%x, expected 0x%x",
                  r, k, a[k], ~val(r, k));
    }
    next_reply++;
    replies++;
}

static void rep1(vnn_t src, int a0)
{
    int a[1] = { a0 };

    check_reply(src, 1, a);
}

static void rep2(vnn_t src, int a0, int a1)
{
    int a[2] = { a0, a1 };

    check_reply(src, 2, a);
}

static void rep3(vnn_t src, int a0, int a1, int a2)
{
    int a[3] = { a0, a1, a2 };

    check_reply(src, 3, a);
}

static void rep4(vnn_t src, int a0, int a1, int a2, int a3)
{
    int a[4] = { a0, a1, a2, a3 };

    check_reply(src, 4, a);
}

/* The values the requester (node src) computed: val() with its self. */
static int their_val(vnn_t src, int round, int k)
{
    return (int)((uint32_t)round * 2654435761U + (uint32_t)k * 40503U +
                 (uint32_t)src);
}

static void check_request(vnn_t src, int n, const int *a)
{
    int r = a[0];

    gam_check(src == from, "request from node %d, expected %d", src, from);
    gam_check(r == requests, "request %d out of order (expected %d)", r,
              requests);
    gam_check(r % 4 + 1 == n, "request %d has %d args", r, n);
    for (int k = 1; k < n; k++) {
        gam_check(a[k] == their_val(src, r, k), "request %d arg %d wrong",
                  r, k);
    }
    requests++;
}

static void req1(vnn_t src, int a0)
{
    int a[1] = { a0 };

    check_request(src, 1, a);
    gam_check(am_reply_1(src, rep1, a0) == 0, "am_reply_1 failed");
}

static void req2(vnn_t src, int a0, int a1)
{
    int a[2] = { a0, a1 };

    check_request(src, 2, a);
    gam_check(am_reply_2(src, rep2, a0, ~a1) == 0, "am_reply_2 failed");
}

static void req3(vnn_t src, int a0, int a1, int a2)
{
    int a[3] = { a0, a1, a2 };

    check_request(src, 3, a);
    gam_check(am_reply_3(src, rep3, a0, ~a1, ~a2) == 0, "am_reply_3 failed");
}

static void req4(vnn_t src, int a0, int a1, int a2, int a3)
{
    int a[4] = { a0, a1, a2, a3 };

    check_request(src, 4, a);
    gam_check(am_reply_4(src, rep4, a0, ~a1, ~a2, ~a3) == 0,
              "am_reply_4 failed");
}

static void send_round(int r)
{
    int rc = -1;

    switch (r % 4) {
    case 0:
        rc = am_request_1(peer, req1, r);
        break;
    case 1:
        rc = am_request_2(peer, req2, r, val(r, 1));
        break;
    case 2:
        rc = am_request_3(peer, req3, r, val(r, 1), val(r, 2));
        break;
    default:
        rc = am_request_4(peer, req4, r, val(r, 1), val(r, 2), val(r, 3));
        break;
    }
    gam_check(rc == 0, "request %d failed: %s", r, am_error_name(am_errno));
}

int main(void)
{
    uint64_t t0, t1;

    /* Set up before am_enable: its barrier may run others' requests. */
    self = am_my_proc();
    nodes = am_procs();
    gam_check(self == (int)rt_node_id() && nodes == (int)rt_num_nodes(),
              "am_my_proc %d / am_procs %d", self, nodes);
    gam_check(am_max_size() == 1 << 30, "am_max_size %d", am_max_size());
    peer = (self + 1) % nodes;
    from = (self + nodes - 1) % nodes;
    gam_check(am_enable() == 0, "am_enable failed");

    /* Round trips one at a time (the latency), then all in flight. */
    t0 = rt_time_ns();
    for (int r = 0; r < ROUNDS / 2; r++) {
        send_round(r);
        gam_wait_for(&replies, r + 1);
    }
    t1 = rt_time_ns();
    for (int r = ROUNDS / 2; r < ROUNDS; r++) {
        send_round(r);
    }
    gam_wait_for(&replies, ROUNDS);
    gam_wait_for(&requests, ROUNDS);
    am_disable();
    gam_check(replies == ROUNDS && requests == ROUNDS,
              "%d replies and %d requests after am_disable", replies,
              requests);
    printf("gam_pingpong ok: %d round trips, %llu us each\n", ROUNDS,
           (unsigned long long)((t1 - t0) / 1000 / (ROUNDS / 2)));
    return 0;
}
