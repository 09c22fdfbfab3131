/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GAM request storm (docs/am.rst, "Deadlock avoidance"): every node
 * sends R requests (argv[1], 20000 by default) without waiting for their
 * replies: the first half round-robin to every other node, the second
 * half all to node 0 (node 0 goes on round-robin), so node 0's reply
 * ring fills and its replies wait while requests keep arriving (the
 * backlog).  Every request handler checks that requests from each
 * source arrive in order and replies with a value computed from the
 * request; every reply handler checks it and marks the request answered,
 * failing on a duplicate.  At the end every request was answered once
 * and every node handled exactly the requests sent to it.  Prints
 * "gam_storm ok: R requests, I in".
 */
#include <stdint.h>
#include <stdlib.h>

#include "gam-util.h"

#define MAX_NODES   64

static int self, nodes, reqs;
static volatile int replies, requests_in; /* volatile: set by handlers */
static int next_from[MAX_NODES];
static uint8_t *answered;

static int dest_of(int src, int i)
{
    if (i >= reqs / 2 && src != 0) {
        return 0;
    }
    return (src + 1 + i % (nodes - 1)) % nodes;
}

static int value_of(int src, int i)
{
    return (int)((uint32_t)i * 2246822519U ^ (uint32_t)src * 3266489917U);
}

static void reply_h(vnn_t src, int i, int v)
{
    gam_check(i >= 0 && i < reqs, "reply for request %d", i);
    gam_check(src == dest_of(self, i), "reply for request %d from node %d",
              i, src);
    gam_check(v == ~value_of(self, i), "reply for request %d: wrong value",
              i);
    gam_check(!answered[i], "request %d answered twice", i);
    answered[i] = 1;
    replies++;
}

static void request_h(vnn_t src, int n, int i, int v)
{
    gam_check(src >= 0 && src < nodes && src != self, "request from %d",
              src);
    gam_check(n == next_from[src], "request %d from node %d arrived as "
              "number %d", n, src, next_from[src]);
    gam_check(dest_of(src, i) == self, "request %d of node %d is not ours",
              i, src);
    gam_check(v == value_of(src, i), "request %d of node %d: wrong value",
              i, src);
    next_from[src]++;
    requests_in++;
    gam_check(am_reply_2(src, reply_h, i, ~v) == 0, "am_reply_2: %s",
              am_error_name(am_errno));
}

int main(int argc, char **argv)
{
    int sent_to[MAX_NODES] = { 0 };
    int expect_in = 0;

    /* Set up before am_enable: its barrier may run others' requests. */
    reqs = argc > 1 ? atoi(argv[1]) : 20000;
    self = am_my_proc();
    nodes = am_procs();
    gam_check(nodes >= 2 && nodes <= MAX_NODES, "2 to %d nodes", MAX_NODES);
    answered = calloc((size_t)reqs, 1);
    gam_check(answered != NULL, "out of memory");
    gam_check(am_enable() == 0, "am_enable failed");
    for (int s = 0; s < nodes; s++) {
        for (int i = 0; s != self && i < reqs; i++) {
            expect_in += dest_of(s, i) == self;
        }
    }

    for (int i = 0; i < reqs; i++) {
        int d = dest_of(self, i);

        gam_check(am_request_3(d, request_h, sent_to[d]++, i,
                               value_of(self, i)) == 0,
                  "am_request_3: %s", am_error_name(am_errno));
    }
    gam_wait_for(&replies, reqs);
    gam_wait_for(&requests_in, expect_in);
    am_disable();
    gam_check(replies == reqs && requests_in == expect_in,
              "%d replies, %d requests in (expected %d)", replies,
              requests_in, expect_in);
    for (int i = 0; i < reqs; i++) {
        gam_check(answered[i], "request %d not answered", i);
    }
    printf("gam_storm ok: %d requests, %d in\n", reqs, requests_in);
    return 0;
}
