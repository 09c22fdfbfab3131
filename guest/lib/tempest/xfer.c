/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest: the node controller's transfer engine (version 1.4):
 * TEMPEST_CMD_XFER, TEMPEST_CMD_BUF_POST and TEMPEST_CMD_FOP through the
 * command bank (FLASH's initiation protocol: arguments, operation, then
 * the committing read), and the dispatch of the XFER_SENT / XFER_RECV
 * control events (registered with the core) to the owner of each
 * transfer's cookie (the channels through tppi_xfer_set_client(), libmagic
 * and programs through tempest_on_xfer()).
 *
 * RETRY (all TEMPEST_XFER_MAX_OUT transfers of this node under way) is
 * retried: a few times at once, then computation code sleeps in
 * tempest_wait() (woken when the protocol thread has handled events,
 * completions among them) and the protocol thread itself polls, sleeping
 * XFER_PT_WAIT_US between commits: the controller frees a transfer's
 * place when the destination acknowledges it, not when its event is
 * read.
 */
#include <stdio.h>

#include "tempest-internal.h"

#define XFER_SPINS          4
#define XFER_PT_WAIT_US     20
#define FOP_SPINS           4       /* polls of COMMIT before sleeping */
#define FOP_SLEEP_US        2
#define FOP_PAUSE           64      /* yields between polls when spinning */

static tempest_xfer_fn hooks[TEMPEST_XFER_CLIENTS];

int tempest_xfer_present(void)
{
    return (nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_XFER) != 0;
}

int tempest_on_protocol_thread(void)
{
    return tppi_on_protocol_thread();
}

const char *tempest_cmd_reason_name(uint32_t reason)
{
    return nc_cmd_reason_name(reason);
}

struct xfer_try {
    uint64_t args[6];
    uint64_t mid;
    uint32_t reason;
    uint32_t status;
};

/* One commit of the XFER command; true once it is not RETRY. */
static int xfer_commit(void *arg)
{
    struct xfer_try *t = arg;

    t->status = nc_cmd(TEMPEST_CMD_XFER, t->args, 6, 1, &t->mid,
                       &t->reason);
    return t->status != TEMPEST_CMD_RETRY;
}

static void xfer_args(struct xfer_try *t, TPPI_NodeId dest, const void *src,
                      uint64_t len, uint64_t where, unsigned flags,
                      uint64_t cookie)
{
    t->args[0] = dest;
    t->args[1] = (uintptr_t)src;
    t->args[2] = len;
    t->args[3] = where;
    t->args[4] = cookie;
    t->args[5] = flags;
    t->mid = 0;
    t->reason = TEMPEST_CMD_E_NONE;
}

static int xfer_result(struct xfer_try *t, uint64_t *mid)
{
    if (t->status == TEMPEST_CMD_SUCCESS) {
        if (mid) {
            *mid = t->mid;
        }
        return 0;
    }
    if (t->status == TEMPEST_CMD_RETRY) {
        return -1;
    }
    return t->reason ? (int)t->reason : TEMPEST_CMD_E_BAD_OP;
}

int tempest_xfer_try(TPPI_NodeId dest, const void *src, uint64_t len,
                     uint64_t where, unsigned flags, uint64_t cookie,
                     uint64_t *mid)
{
    struct xfer_try t;

    xfer_args(&t, dest, src, len, where, flags, cookie);
    xfer_commit(&t);
    return xfer_result(&t, mid);
}

int tempest_xfer(TPPI_NodeId dest, const void *src, uint64_t len,
                 uint64_t where, unsigned flags, uint64_t cookie,
                 uint64_t *mid)
{
    struct xfer_try t;
    unsigned i;

    xfer_args(&t, dest, src, len, where, flags, cookie);
    for (i = 0; i < XFER_SPINS; i++) {
        if (xfer_commit(&t)) {
            return xfer_result(&t, mid);
        }
        __asm__ volatile("yield");
    }
    if (tppi_on_protocol_thread()) {
        while (!xfer_commit(&t)) {
            tppi_pt_pause(XFER_PT_WAIT_US);
        }
    } else {
        tempest_wait(xfer_commit, &t);
    }
    return xfer_result(&t, mid);
}

int tempest_buf_post(uint32_t type, void *buf, uint64_t len)
{
    uint64_t args[3] = { type, (uintptr_t)buf, len };
    uint32_t reason = TEMPEST_CMD_E_NONE, status;

    status = nc_cmd(TEMPEST_CMD_BUF_POST, args, 3, 4, NULL, &reason);
    if (status == TEMPEST_CMD_SUCCESS) {
        return 0;
    }
    if (status == TEMPEST_CMD_RETRY) {
        return -1;
    }
    return reason ? (int)reason : TEMPEST_CMD_E_BAD_OP;
}

int tempest_fetch_op(TPPI_NodeId home, uint64_t *addr, unsigned op,
                     uint64_t operand, uint64_t compare, uint64_t *old)
{
    uint64_t args[5] = { home, (uintptr_t)addr, op, operand, compare };
    uint32_t status, reason = TEMPEST_CMD_E_NONE;
    bool may_sleep = rt_cpu_id() != tempest_protocol_cpu();
    uint64_t flags;
    unsigned i, polls = 0;

    /*
     * Not nc_cmd(): its retry writes the command again.  The first
     * COMMIT sends the request (nc_cmd_once: with CMD_BLOCK, one access;
     * on shared memory the home node's word is changed there and then,
     * a host atomic, and that is all); the next reads only wait for the
     * reply, so the bank must stay ours (IRQs masked) until SUCCESS or
     * FAIL.  While the reply travels the CPU sleeps a few microseconds
     * between reads (each read takes QEMU's global lock, which the node
     * controller needs to take the reply in), unless it is the protocol
     * thread's CPU: sleeping there would run its interrupt handler,
     * which may use this command bank.  Other CPUs get no interrupt
     * that uses it.
     */
    flags = rt_irq_save();
    status = nc_cmd_once(TEMPEST_CMD_FOP, args, 5, old, &reason);
    while (status == TEMPEST_CMD_RETRY) {
        if (may_sleep && ++polls > FOP_SPINS) {
            rt_cpu_sleep(FOP_SLEEP_US);
        } else {
            for (i = 0; i < FOP_PAUSE; i++) {
                __asm__ volatile("yield");
            }
        }
        status = nc_reg(TEMPEST_NC_CMD_COMMIT);
        if (status == TEMPEST_CMD_SUCCESS && old) {
            *old = nc_reg64(TEMPEST_NC_CMD_RESULT);
        } else if (status == TEMPEST_CMD_FAIL) {
            reason = nc_reg(TEMPEST_NC_CMD_REASON);
        }
    }
    rt_irq_restore(flags);
    if (status == TEMPEST_CMD_SUCCESS) {
        return 0;
    }
    return reason ? (int)reason : TEMPEST_CMD_E_BAD_OP;
}

tempest_xfer_fn tempest_on_xfer(unsigned client, tempest_xfer_fn fn)
{
    if (client == TEMPEST_XFER_CLIENT_CHANNEL ||
        client >= TEMPEST_XFER_CLIENTS) {
        return NULL;
    }
    return __atomic_exchange_n(&hooks[client], fn, __ATOMIC_ACQ_REL);
}

void tppi_xfer_set_client(unsigned client, tempest_xfer_fn fn)
{
    if (client < TEMPEST_XFER_CLIENTS) {
        __atomic_store_n(&hooks[client], fn, __ATOMIC_RELEASE);
    }
}

/* A TEMPEST_EV_XFER_SENT or _XFER_RECV event: to its cookie's owner. */
static void xfer_event(const struct nc_event *e)
{
    struct tempest_xfer_event ev = {
        .kind = e->ctl & TEMPEST_EV_TYPE_MASK,
        .node = e->node,
    };
    unsigned client;
    tempest_xfer_fn fn;

    if (ev.kind == TEMPEST_EV_XFER_SENT) {
        ev.mid = e->a;
        ev.cookie = e->b;
        ev.error = (uint32_t)e->c;
    } else {
        ev.addr = e->a;
        ev.len = (uint32_t)e->b & ~TEMPEST_EV_XFER_BUF_DONE;
        ev.buf_done = (e->b & TEMPEST_EV_XFER_BUF_DONE) != 0;
        ev.type = (uint32_t)(e->b >> 32);
        ev.cookie = e->c;
    }
    client = (unsigned)(ev.cookie >> TEMPEST_XFER_CLIENT_SHIFT);
    fn = client < TEMPEST_XFER_CLIENTS ?
         __atomic_load_n(&hooks[client], __ATOMIC_ACQUIRE) : NULL;
    if (fn) {
        fn(&ev);
        return;
    }
    if (ev.kind == TEMPEST_EV_XFER_SENT && ev.error) {
        tppi_report(NULL, "transfer 0x%llx to node %u (cookie 0x%llx) "
                    "failed: %s (reason %u)", (unsigned long long)ev.mid,
                    ev.node, (unsigned long long)ev.cookie,
                    tempest_cmd_reason_name(ev.error), (unsigned)ev.error);
    }
}

TPPI_REGISTER
static void xfer_register(void)
{
    tppi_on_event(TEMPEST_EV_XFER_SENT, xfer_event);
    tppi_on_event(TEMPEST_EV_XFER_RECV, xfer_event);
}
