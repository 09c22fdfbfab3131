/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libam: bulk data (GAM 1.1's am_store, am_store_async, am_get) on the
 * node controller's transfer engine (docs/node-controller.rst 1.4): one
 * XFER command moves the whole block memory to memory, cut by the device
 * into cache-line components that interleave with active messages; no
 * copy on either side, no handler per packet.
 *
 *  - a store: XFER from here to dest; when XFER_SENT comes back (the
 *    data is stored there) the end function runs here and a KIND_STORE
 *    request tells dest to run its handler.  The request is sent from
 *    the program's code (the next poll or wait), never from inside the
 *    poll that took the event, so that sends do not nest;
 *  - a get: a KIND_GET request; dest's library (no user handler) issues
 *    the XFER back to us with our cookie, and our XFER_RECV runs the get
 *    handler.  A block dest refuses comes back as a KIND_GET_END reply
 *    (which a zero-length get uses too).
 *
 * Each store or get under way holds one of MAX_BULK records here; the
 * cookie of its transfer names it (tag, generation, index).
 */
#include <string.h>

#include "am-internal.h"

#define MAX_BULK            256
#define TAG_STORE           0xA5ULL
#define TAG_GET             0xA6ULL
#define COOKIE_TAG(c)       ((c) >> 56)
#define COOKIE_GEN(c)       ((uint32_t)((c) >> 16))
#define COOKIE_IDX(c)       ((unsigned)((c) & 0xFFFF))

enum bulk_state {
    B_FREE,
    B_XFER,         /* the transfer (or the get's request) is under way */
    B_NOTIFY,       /* a store's data is there: its notice is to be sent */
    B_DONE,         /* a blocking store is over: its caller collects it */
};

struct bulk {
    enum bulk_state state;
    bool get;
    bool blocking;
    int err;                /* AM_E_* once over */
    uint32_t reason;        /* TEMPEST_CMD_E_* of a refusal */
    vnn_t dest;
    int nbytes;
    uint32_t gen;
    uint64_t lva;
    uint64_t rva;
    uintptr_t handler;
    uint64_t arg;
    uintptr_t endfunc;
    uint64_t endarg;
};

static struct bulk bulk[MAX_BULK];
static unsigned in_use;
static unsigned to_notify;
static unsigned free_hint;
static uint32_t gen;
static bool flushing;

static bool bulk_idle(void)
{
    return in_use == 0;
}

static uint64_t cookie_of(const struct bulk *b)
{
    return ((b->get ? TAG_GET : TAG_STORE) << 56) |
           ((uint64_t)b->gen << 16) | (uint64_t)(b - bulk);
}

/* The record a cookie of ours names, or NULL. */
static struct bulk *find(uint64_t cookie, bool get)
{
    struct bulk *b;

    if (COOKIE_TAG(cookie) != (get ? TAG_GET : TAG_STORE) ||
        COOKIE_IDX(cookie) >= MAX_BULK) {
        return NULL;
    }
    b = &bulk[COOKIE_IDX(cookie)];
    if (b->state == B_FREE || b->gen != COOKIE_GEN(cookie) || b->get != get) {
        return NULL;
    }
    return b;
}

static void release(struct bulk *b)
{
    b->state = B_FREE;
    in_use--;
}

static bool a_record_free(void *arg)
{
    (void)arg;
    return in_use < MAX_BULK;
}

static struct bulk *alloc(void)
{
    struct bulk *b;

    libam_wait(a_record_free, NULL);
    for (unsigned i = 0; i < MAX_BULK; i++) {
        b = &bulk[(free_hint + i) % MAX_BULK];
        if (b->state == B_FREE) {
            free_hint = (unsigned)(b - bulk + 1) % MAX_BULK;
            memset(b, 0, sizeof(*b));
            b->gen = ++gen;
            b->state = B_XFER;
            in_use++;
            return b;
        }
    }
    return NULL;    /* not reached: a_record_free() said there was one */
}

/* A record for a store or a get of @nbytes between @lva here and @rva. */
static struct bulk *alloc_for(vnn_t dest, void *lva, void *rva, int nbytes,
                              handler_t handler, void *arg)
{
    struct bulk *b = alloc();

    b->dest = dest;
    b->nbytes = nbytes;
    b->lva = (uintptr_t)lva;
    b->rva = (uintptr_t)rva;
    b->handler = (uintptr_t)handler;
    b->arg = (uintptr_t)arg;
    return b;
}

static int check_block(const char *call, vnn_t dest, uint64_t lva,
                       int nbytes, uintptr_t handler)
{
    if (libam_check_top(call) < 0 || libam_check_node(call, dest) < 0) {
        return -1;
    }
    if (nbytes < 0 || (uint64_t)nbytes > TEMPEST_XFER_MAX) {
        return libam_fail(call, AM_E_SIZE, "%d bytes: a block is 0 to %d "
                          "bytes (am_max_size)", nbytes, am_max_size());
    }
    if (nbytes > 0 && !libam_ram_contains(lva, (uint64_t)nbytes)) {
        return libam_fail(call, AM_E_ADDR, "%d bytes at %p are not all in this "
                          "node's RAM", nbytes, (void *)(uintptr_t)lva);
    }
    return libam_check_handler(call, handler, true);
}

/* ---- stores ------------------------------------------------------------- */

struct xfer_try {
    uint64_t args[6];
    uint32_t status;
    uint32_t reason;
};

static bool xfer_commit(void *arg)
{
    struct xfer_try *t = arg;

    t->status = nc_cmd(TEMPEST_CMD_XFER, t->args, 6, 1, NULL, &t->reason);
    return t->status != TEMPEST_CMD_RETRY;
}

static bool store_over(void *arg)
{
    return ((struct bulk *)arg)->state == B_DONE;
}

static int store(const char *call, vnn_t dest, void *lva, void *rva,
                 int nbytes, handler_t handler, void *arg, handler_t endfunc,
                 void *endarg, bool blocking)
{
    struct xfer_try t;
    struct bulk *b;
    int err;

    if (check_block(call, dest, (uintptr_t)lva, nbytes,
                    (uintptr_t)handler) < 0 ||
        libam_check_handler(call, (uintptr_t)endfunc, true) < 0) {
        return -1;
    }
    b = alloc_for(dest, lva, rva, nbytes, handler, arg);
    b->endfunc = (uintptr_t)endfunc;
    b->endarg = (uintptr_t)endarg;
    b->blocking = blocking;
    if (nbytes == 0) {
        /* Nothing to move: straight to the notice. */
        b->state = B_NOTIFY;
        to_notify++;
    } else {
        t = (struct xfer_try) {
            .args = { (uint64_t)dest, (uintptr_t)lva, (uint64_t)nbytes,
                      (uintptr_t)rva, cookie_of(b), 0 },
        };
        libam_wait(xfer_commit, &t);
        if (t.status != TEMPEST_CMD_SUCCESS) {
            release(b);
            return libam_fail(call, t.reason == TEMPEST_CMD_E_BAD_NODE ||
                              t.reason == TEMPEST_CMD_E_PEER_DOWN ? AM_E_NODE :
                              AM_E_ADDR, "the node controller refused the "
                              "transfer: %s", nc_cmd_reason_name(t.reason));
        }
    }
    if (!blocking) {
        return 0;
    }
    libam_wait(store_over, b);
    err = b->err;
    release(b);
    if (err) {
        return libam_fail(call, err, "node %d refused %d bytes at %p: %s",
                          dest, nbytes, rva, nc_cmd_reason_name(b->reason));
    }
    return 0;
}

int am_store(vnn_t dest, void *lva, void *rva, int nbytes, handler_t handler,
             void *arg)
{
    return store("am_store", dest, lva, rva, nbytes, handler, arg, NULL,
                 NULL, true);
}

int am_store_async(vnn_t dest, void *lva, void *rva, int nbytes,
                   handler_t handler, void *arg, handler_t endfunc,
                   void *endarg)
{
    return store("am_store_async", dest, lva, rva, nbytes, handler, arg,
                 endfunc, endarg, false);
}

/* A store's notice is sent (or was not needed): the store is over. */
static void store_done(struct bulk *b)
{
    if (b->blocking) {
        b->state = B_DONE;
    } else {
        release(b);
    }
}

static bool bulk_flush(void)
{
    struct bulk *b;
    uint64_t d[2];
    bool any = false;

    if (to_notify == 0 || flushing) {
        return false;
    }
    flushing = true;
    for (unsigned i = 0; i < MAX_BULK && to_notify; i++) {
        b = &bulk[i];
        if (b->state != B_NOTIFY) {
            continue;
        }
        to_notify--;
        if (!b->blocking && b->endfunc) {
            libam_run_mem(CTX_REPLY, b->endfunc, b->dest, b->lva, b->nbytes,
                          b->endarg);
        }
        if (b->handler) {
            d[0] = b->rva;
            d[1] = (uint64_t)b->nbytes;
            libam_send_request((unsigned)b->dest, KIND_STORE, 0, b->handler,
                               b->arg, d);
        }
        store_done(b);
        any = true;
    }
    flushing = false;
    return any;
}

/* XFER_SENT of a store of ours: the data is stored at dest, or refused. */
static void store_sent(struct bulk *b, uint32_t reason)
{
    if (b->state != B_XFER) {
        return;
    }
    if (reason) {
        b->err = AM_E_REMOTE;
        b->reason = reason;
        if (!b->blocking) {
            am_errno = AM_E_REMOTE;
            libam_report("am_store_async: node %d refused %d bytes at %p: %s",
                         b->dest, b->nbytes, (void *)(uintptr_t)b->rva,
                         nc_cmd_reason_name(reason));
        }
        store_done(b);
        return;
    }
    b->state = B_NOTIFY;
    to_notify++;
}

/* ---- gets --------------------------------------------------------------- */

int am_get(vnn_t dest, void *rva, void *lva, int nbytes, handler_t handler,
           void *arg)
{
    struct bulk *b;
    uint64_t d[2];

    if (check_block("am_get", dest, (uintptr_t)lva, nbytes,
                    (uintptr_t)handler) < 0) {
        return -1;
    }
    b = alloc_for(dest, lva, rva, nbytes, handler, arg);
    b->get = true;
    d[0] = b->rva;
    d[1] = (uint64_t)nbytes;
    libam_send_request((unsigned)dest, KIND_GET, 0, b->lva, cookie_of(b), d);
    return 0;
}

/* A get of ours is over: run its handler (none if refused). */
static void get_done(struct bulk *b, uint32_t reason)
{
    vnn_t dest = b->dest;
    uint64_t lva = b->lva;
    uint64_t rva = b->rva;
    int nbytes = b->nbytes;
    uintptr_t h = b->handler;
    uint64_t arg = b->arg;

    release(b);
    if (reason) {
        am_errno = AM_E_REMOTE;
        libam_report("am_get: node %d refused %d bytes at %p: %s", dest,
                     nbytes, (void *)(uintptr_t)rva,
                     nc_cmd_reason_name(reason));
        return;
    }
    libam_run_mem(CTX_REPLY, h, dest, lva, nbytes, arg);
}

/* A KIND_GET request: send the block back with the transfer engine. */
static void serve_get(const struct am_msg *m)
{
    uint64_t args[6] = {
        m->src, m->d[0], m->d[1], m->w1, m->w2, 0,
    };
    uint64_t d[2] = { 0, 0 };
    uint32_t st, reason = TEMPEST_CMD_E_NONE;

    if (m->d[1] != 0) {
        /*
         * RETRY (64 transfers of ours under way) ends without any guest:
         * the destinations' controllers acknowledge on their own.
         */
        st = nc_cmd(TEMPEST_CMD_XFER, args, 6, 0, NULL, &reason);
        if (st == TEMPEST_CMD_SUCCESS) {
            return;
        }
        reason = reason ? reason : TEMPEST_CMD_E_BAD_OP;
    }
    libam_send_reply(m->src, KIND_GET_END, reason, 0, m->w2, d);
}

/* ---- packets and events ------------------------------------------------- */

static void bulk_msg(const struct am_msg *m)
{
    struct bulk *b;

    switch (m->kind) {
    case KIND_STORE:
        if (m->net == TEMPEST_NET_REQUEST) {
            libam_run_mem(CTX_REQUEST, (uintptr_t)m->w1, m->src, m->d[0],
                          (int)m->d[1], m->w2);
            return;
        }
        break;
    case KIND_GET:
        if (m->net == TEMPEST_NET_REQUEST) {
            serve_get(m);
            return;
        }
        break;
    case KIND_GET_END:
        b = find(m->w2, true);
        if (b != NULL && m->net == TEMPEST_NET_REPLY && b->dest == m->src) {
            get_done(b, m->w0);
            return;
        }
        break;
    default:
        break;
    }
    libam_report("packet from node %u (network %u, kind 0x%x) dropped: it "
                 "names nothing under way", m->src, m->net, m->kind);
}

static void bulk_event(const struct nc_event *e)
{
    unsigned kind = e->ctl & TEMPEST_EV_TYPE_MASK;
    uint64_t cookie = kind == TEMPEST_EV_XFER_SENT ? e->b : e->c;
    struct bulk *b;

    if (kind == TEMPEST_EV_XFER_SENT && COOKIE_TAG(cookie) == TAG_STORE) {
        b = find(cookie, false);
        if (b != NULL) {
            store_sent(b, (uint32_t)e->c);
        }
    } else if (kind == TEMPEST_EV_XFER_SENT) {
        /* A get we served for node NODE (maybe ourselves). */
        if (e->c) {
            libam_report("a get by node %u failed: %s", (unsigned)e->node,
                         nc_cmd_reason_name((uint32_t)e->c));
        }
    } else if (COOKIE_TAG(cookie) == TAG_GET) {
        /* XFER_RECV: a get of ours is in. */
        b = find(cookie, true);
        if (b != NULL && b->state == B_XFER) {
            get_done(b, 0);
        }
    }
    /* XFER_RECV of a store: its notice (KIND_STORE) runs the handler. */
}

/* Linked in (a store or get in the program): am.c hands us our part. */
__attribute__((constructor))
static void bulk_register(void)
{
    static const struct libam_bulk_ops ops = {
        bulk_msg, bulk_event, bulk_flush, bulk_idle,
    };

    libam_set_bulk(&ops);
}
