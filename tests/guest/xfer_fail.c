/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH 3.2 (the initiation protocol) and 4.3 (protection) on the
 * transfer engine: every description the node controller must fail
 * comes back as FAIL with its reason, before anything moves, and the
 * libraries name the reason on the console; RETRY (more than 64
 * transfers under way) is retried by the library until every transfer
 * went.  Cases (node 0; node 1 only serves):
 *   XFER: node not in the cluster, source outside this node's RAM (below
 *   it, and running past its end), a memory copy to itself outside its
 *   RAM, length 0, length above TEMPEST_XFER_MAX, unknown flags; a copy
 *   whose destination is outside the receiver's RAM (accepted here,
 *   refused by the receiver: XFER_SENT with TEMPEST_CMD_E_REMOTE);
 *   FOP: node not in the cluster, unknown op, word not 8-byte aligned,
 *   word outside this node's RAM, word outside the home node's RAM
 *   (refused there); BUF_POST: buffer outside RAM, length 0; the same
 *   through libmagic (MAGIC_NO_MID and a report naming the reason).
 * Prints one line per case and "xfer_fail ok".
 */
#include <stdio.h>
#include <stdlib.h>

#include "am-util.h"
#include "magic.h"
#include "tempest/rt.h"
#include "xfer-util.h"

#define USER_COOKIE ((uint64_t)TEMPEST_XFER_CLIENT_USER << \
                     TEMPEST_XFER_CLIENT_SHIFT)
#define BURST       200

static uint8_t buf[4096] __attribute__((aligned(64)));
static uint8_t sink[64 << 10] __attribute__((aligned(64))); /* any node */
static uint64_t word __attribute__((aligned(8)));
static uint64_t sent_ok, sent_err, last_err;

static void hook(const struct tempest_xfer_event *ev)
{
    if (ev->kind != TEMPEST_EV_XFER_SENT) {
        return;
    }
    if (ev->error) {
        last_err = ev->error;
        __atomic_fetch_add(&sent_err, 1, __ATOMIC_RELEASE);
    } else {
        __atomic_fetch_add(&sent_ok, 1, __ATOMIC_RELEASE);
    }
}

static void expect(const char *what, int got, int want)
{
    printf("%-48s %s (reason %d)\n", what,
           got == 0 ? "accepted" : tempest_cmd_reason_name((uint32_t)got),
           got);
    if (got != want) {
        am_fail("%s: reason %d (%s), expected %d (%s)", what, got,
                tempest_cmd_reason_name((uint32_t)got), want,
                tempest_cmd_reason_name((uint32_t)want));
    }
}

static int xfer(unsigned dest, uint64_t src, uint64_t len, uint64_t where,
                unsigned flags)
{
    return tempest_xfer(dest, (const void *)(uintptr_t)src, len, where,
                        flags, USER_COOKIE, NULL);
}

int main(void)
{
    uint64_t ram_end = TEMPEST_RAM_BASE + rt_ram_size();
    uint64_t src = (uintptr_t)buf, dst = (uintptr_t)sink;
    unsigned n = TPPI_num_nodes, i;
    magic_mid mid;

    if (n < 2) {
        am_fail("needs 2 nodes");
        return am_finish("xfer_fail");
    }
    tempest_on_xfer(TEMPEST_XFER_CLIENT_USER, hook);
    am_barrier();
    if (TPPI_self_address != 0) {
        return am_finish("xfer_fail");
    }

    /* TEMPEST_CMD_XFER */
    expect("xfer: node not in the cluster", xfer(n, src, 64, dst, 0),
           TEMPEST_CMD_E_BAD_NODE);
    expect("xfer: node 1000", xfer(1000, src, 64, dst, 0),
           TEMPEST_CMD_E_BAD_NODE);
    expect("xfer: source below RAM", xfer(1, 0x1000, 64, dst, 0),
           TEMPEST_CMD_E_BAD_ADDR);
    expect("xfer: source running past the end of RAM",
           xfer(1, ram_end - 32, 64, dst, 0), TEMPEST_CMD_E_BAD_ADDR);
    expect("xfer: to itself, destination outside RAM",
           xfer(0, src, 64, ram_end, 0), TEMPEST_CMD_E_BAD_ADDR);
    expect("xfer: length 0", xfer(1, src, 0, dst, 0), TEMPEST_CMD_E_BAD_LEN);
    expect("xfer: length above TEMPEST_XFER_MAX",
           xfer(1, src, TEMPEST_XFER_MAX + 1, dst, 0),
           TEMPEST_CMD_E_BAD_LEN);
    expect("xfer: unknown flags", xfer(1, src, 64, dst, 0x80),
           TEMPEST_CMD_E_BAD_LEN);
    expect("xfer: destination outside node 1's RAM (accepted)",
           xfer(1, src, 64, ram_end + 4096, 0), 0);
    xu_need_count(&sent_err, 1, "the refusal of the other node");
    expect("xfer: ... then XFER_SENT from node 1", (int)last_err,
           TEMPEST_CMD_E_REMOTE);
    expect("xfer: destination below node 1's RAM (accepted)",
           xfer(1, src, 64, 0x2000, 0), 0);
    xu_need_count(&sent_err, 2, "the refusal of the other node");
    expect("xfer: ... then XFER_SENT from node 1", (int)last_err,
           TEMPEST_CMD_E_REMOTE);

    /* TEMPEST_CMD_FOP */
    expect("fop: node not in the cluster",
           tempest_fetch_op(n, &word, TEMPEST_FOP_ADD, 1, 0, NULL),
           TEMPEST_CMD_E_BAD_NODE);
    expect("fop: unknown op 7",
           tempest_fetch_op(1, &word, 7, 1, 0, NULL), TEMPEST_CMD_E_BAD_FOP);
    expect("fop: word not 8-byte aligned",
           tempest_fetch_op(1, (uint64_t *)((uintptr_t)&word + 4),
                            TEMPEST_FOP_ADD, 1, 0, NULL),
           TEMPEST_CMD_E_BAD_ADDR);
    expect("fop: word outside this node's RAM (home here)",
           tempest_fetch_op(0, (uint64_t *)(uintptr_t)ram_end,
                            TEMPEST_FOP_ADD, 1, 0, NULL),
           TEMPEST_CMD_E_BAD_ADDR);
    expect("fop: word outside node 1's RAM",
           tempest_fetch_op(1, (uint64_t *)(uintptr_t)ram_end,
                            TEMPEST_FOP_SWAP, 1, 0, NULL),
           TEMPEST_CMD_E_REMOTE);

    /* TEMPEST_CMD_BUF_POST */
    expect("buf_post: buffer outside RAM",
           tempest_buf_post(9, (void *)(uintptr_t)ram_end, 64),
           TEMPEST_CMD_E_BAD_ADDR);
    expect("buf_post: length 0", tempest_buf_post(9, buf, 0),
           TEMPEST_CMD_E_BAD_ADDR);

    /* Through libmagic: refused, reported with the reason's name. */
    mid = magic_send(1, n, buf, 64);
    expect("magic_send: node not in the cluster",
           mid == MAGIC_NO_MID ? magic_last_error() : 0,
           TEMPEST_CMD_E_BAD_NODE);
    mid = magic_fastmemcpy(buf, 0, 1, buf);
    expect("magic_fastmemcpy: length 0",
           mid == MAGIC_NO_MID ? magic_last_error() : 0,
           TEMPEST_CMD_E_BAD_LEN);
    mid = magic_fastmemcpy(buf, 64, 1, (void *)(uintptr_t)0x2000);
    expect("magic_fastmemcpy: outside node 1's RAM (senddone -1)",
           mid != MAGIC_NO_MID && magic_sendwait(mid) == -1 ?
           TEMPEST_CMD_E_REMOTE : 0, TEMPEST_CMD_E_REMOTE);
    expect("magic_fetch_op: unknown op 9",
           magic_fetch_op(1, &word, 9, 1, 0, NULL), TEMPEST_CMD_E_BAD_FOP);
    expect("magic_bufpost: outside RAM",
           magic_bufpost((void *)(uintptr_t)ram_end, 64, 3),
           TEMPEST_CMD_E_BAD_ADDR);

    /* RETRY: more transfers than the controller keeps under way. */
    for (i = 0; i < BURST; i++) {
        if (xfer(1, (uintptr_t)sink, sizeof(sink), (uintptr_t)sink, 0)) {
            am_fail("burst transfer %u failed", i);
        }
    }
    xu_need_count(&sent_ok, BURST, "the burst's completions");
    printf("retry: %u transfers of 64 KiB started back to back, all sent\n",
           BURST);
    return am_finish("xfer_fail");
}
