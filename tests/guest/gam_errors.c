/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GAM misuse (docs/am.rst, "Errors"), on 2 nodes: every bad call returns
 * -1 with its AM_E_* code in am_errno and a "*** am: node K: <call>:"
 * line, sends nothing, and the library goes on working:
 *  - before am_enable: AM_E_DISABLED;
 *  - a node out of range, a NULL handler and one outside the code;
 *  - a reply outside a handler; in a request handler a reply to the
 *    wrong node, a second reply, a request, a store, a get and a poll;
 *    in a reply handler a reply;
 *  - blocks of -1 and am_max_size() + 1 bytes, a local block outside
 *    RAM, a remote block outside the destination's RAM (am_store fails,
 *    am_store_async's and am_get's refusals come back with no handler or
 *    end function run).
 * Node 0 makes the calls; node 1 serves.  Prints "gam_errors ok".
 */
#include <stdint.h>
#include <string.h>

#include "gam-util.h"

static volatile int phase, replies, got_calls; /* volatile: set by handlers */
static int in_handler[8];
static char buf[256];

#define expect_fail(call, code) \
    do { \
        am_errno = 0; \
        gam_check((call) == -1, "%s did not fail", #call); \
        gam_check(am_errno == (code), "%s: am_errno %d (%s), expected %d", \
                  #call, am_errno, am_error_name(am_errno), (code)); \
    } while (0)

static void rep_h(vnn_t src, int a0)
{
    (void)src;
    (void)a0;
    /* Reply handlers send nothing. */
    am_errno = 0;
    in_handler[6] = am_reply_1(src, rep_h, 0) == -1 &&
                    am_errno == AM_E_REPLY;
    replies++;
}

static void got(vnn_t src, void *lva, int nbytes, void *arg)
{
    (void)src;
    (void)lva;
    (void)nbytes;
    (void)arg;
    got_calls++;
}

static void req_h(vnn_t src, int a0)
{
    (void)a0;
    am_errno = 0;
    in_handler[0] = am_reply_1(1 - src, rep_h, 0) == -1 &&
                    am_errno == AM_E_REPLY_DEST;
    in_handler[1] = am_reply_1(src, rep_h, 1) == 0;
    am_errno = 0;
    in_handler[2] = am_reply_1(src, rep_h, 2) == -1 &&
                    am_errno == AM_E_REPLIED;
    am_errno = 0;
    in_handler[3] = am_request_1(src, rep_h, 3) == -1 &&
                    am_errno == AM_E_IN_HANDLER;
    am_errno = 0;
    in_handler[4] = am_poll() == -1 && am_errno == AM_E_IN_HANDLER;
    am_errno = 0;
    in_handler[5] = am_store(src, buf, buf, 4, NULL, NULL) == -1 &&
                    am_errno == AM_E_IN_HANDLER &&
                    am_get(src, buf, buf, 4, NULL, NULL) == -1 &&
                    am_errno == AM_E_IN_HANDLER;
}

static void done_h(vnn_t src, int a0)
{
    (void)src;
    phase = a0;
}

int main(void)
{
    int self;

    expect_fail(am_request_1(0, done_h, 0), AM_E_DISABLED);
    gam_check(am_enable() == 0, "am_enable failed");
    self = am_my_proc();
    gam_check(am_procs() == 2, "run on 2 nodes");
    if (self == 1) {
        gam_wait_for(&phase, 1);
        for (int k = 0; k < 6; k++) {
            gam_check(in_handler[k], "request handler check %d failed", k);
        }
        am_disable();
        printf("gam_errors ok\n");
        return 0;
    }

    expect_fail(am_request_1(2, done_h, 0), AM_E_NODE);
    expect_fail(am_request_2(-1, done_h, 0, 0), AM_E_NODE);
    expect_fail(am_request_1(1, NULL, 0), AM_E_HANDLER);
    expect_fail(am_request_1(1, (handler_t)(uintptr_t)0x1230, 0),
                AM_E_HANDLER);
    expect_fail(am_reply_1(1, rep_h, 0), AM_E_REPLY);
    expect_fail(am_store(1, buf, buf, -1, got, NULL), AM_E_SIZE);
    expect_fail(am_store_async(1, buf, buf, am_max_size() + 1, got, NULL,
                               NULL, NULL), AM_E_SIZE);
    expect_fail(am_get(1, buf, buf, -5, got, NULL), AM_E_SIZE);
    expect_fail(am_store(1, (void *)(uintptr_t)0x1000, buf, 64, got, NULL),
                AM_E_ADDR);
    expect_fail(am_get(1, buf, (void *)(uintptr_t)0x1000, 64, got, NULL),
                AM_E_ADDR);
    expect_fail(am_get(3, buf, buf, 64, got, NULL), AM_E_NODE);

    /* The rules inside handlers. */
    gam_check(am_request_1(1, req_h, 0) == 0, "am_request_1");
    gam_wait_for(&replies, 1);
    gam_check(in_handler[6], "a reply from a reply handler did not fail");

    /* Blocks the other node refuses. */
    expect_fail(am_store(1, buf, (void *)(uintptr_t)0x1000, 64, got, NULL),
                AM_E_REMOTE);
    gam_check(am_get(1, (void *)(uintptr_t)0x1000, buf, 64, got, NULL) == 0,
              "am_get of a bad remote block");
    while (am_errno != AM_E_REMOTE) {
        am_poll();
    }
    gam_check(got_calls == 0, "a refused get ran its handler");
    am_errno = 0;
    gam_check(am_store_async(1, buf, (void *)(uintptr_t)0x1000, 64, got,
                             NULL, got, NULL) == 0,
              "am_store_async of a bad remote block");
    while (am_errno != AM_E_REMOTE) {
        am_poll();
    }
    gam_check(got_calls == 0, "a refused store ran its end function");

    /* Still working: a good store, a good get. */
    memset(buf, 0x5a, sizeof(buf));
    gam_check(am_store(1, buf, buf + 128, 64, got, NULL) == 0, "am_store");
    gam_check(am_get(1, buf, buf + 64, 64, got, NULL) == 0, "am_get");
    gam_wait_for(&got_calls, 1);
    gam_check(am_request_1(1, done_h, 1) == 0, "am_request_1");
    am_disable();
    printf("gam_errors ok\n");
    return 0;
}
