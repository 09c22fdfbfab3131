/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: where typed messages land (FLASH 3.4.1 and
 * footnote 3), for the transfer engine (tempest-nc-xfer.c).
 *
 * Buffer space: bufalloc "preallocates buffer space", so a posted buffer
 * takes messages of its type one after another, each at the start of its
 * free space, 64-byte aligned, oldest buffer first, until less than 64
 * bytes are left.  It then leaves the posted list, and the XFER_RECV
 * event of the last of its messages to be stored carries
 * TEMPEST_EV_XFER_BUF_DONE: from then on the guest may post that space
 * again.
 *
 * System space: "if an incoming message does not find a preallocated
 * buffer, it is placed in system space and will later get transferred to
 * user space".  A typed message that finds no room is stored in host
 * memory of the node controller's own, at most sys-space bytes (each
 * message counts at least SYS_MIN_COST, which bounds how many there can
 * be), its sender told it is done; when a buffer of its type is posted,
 * the messages held there move into it, oldest first, and only then does
 * the guest hear of them (XFER_RECV).  With system space full a message
 * waits for a buffer, holding its sender (whose command said success: it
 * sees the send under way, never a loss).  A message longer than system
 * space, for which only shorter buffers are posted, is refused.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "tempest-nc-internal.h"
#include "tempest-nc-xfer.h"
#include "trace.h"

#define BUF_ALIGN       64
#define SYS_MIN_COST    256

/* Frees full buffer @b, once every message placed in it is stored. */
static void buf_free_if_done(TempestNCState *s, TempestXferBuf *b)
{
    if (b->full && b->stored == b->placed) {
        QTAILQ_REMOVE(&s->xfer_bufs, b, next);
        s->xfer_nbufs--;
        g_free(b);
    }
}

/*
 * Gives @in the start of @b's free space if it fits there.  A buffer that
 * has taken messages and has no room for this one is full: its space
 * goes back to the guest once its messages are stored (if they all are,
 * an XFER_RECV of length 0 at its address says so now).
 */
static bool buf_place(TempestNCState *s, TempestXferBuf *b,
                      TempestXferIn *in)
{
    if (b->full || b->type != in->type) {
        return false;
    }
    if (b->len - b->used < in->len) {
        if (b->used) {
            b->full = true;
            if (b->stored == b->placed) {
                tempest_nc_post_event(s, TEMPEST_EV_XFER_RECV, s->node_id,
                                      b->addr, TEMPEST_EV_XFER_BUF_DONE |
                                      (uint64_t)b->type << 32, b->cookie);
                buf_free_if_done(s, b);
            }
        }
        return false;
    }
    in->addr = b->addr + b->used;
    in->buf = b;
    b->placed++;
    b->cookie = in->cookie;     /* its owner's, for that XFER_RECV of 0 */
    b->used = MIN(b->len, ROUND_UP(b->used + in->len, BUF_ALIGN));
    if (b->len - b->used < BUF_ALIGN) {
        b->full = true;
    }
    return true;
}

/* @in is stored (or gone): the last of a full buffer frees it. */
void xfer_buf_stored(TempestNCState *s, TempestXferIn *in)
{
    TempestXferBuf *b = in->buf;

    if (!b) {
        return;
    }
    in->buf = NULL;
    b->stored++;
    in->buf_done = b->full && b->stored == b->placed;
    buf_free_if_done(s, b);
}

bool xfer_buf_take(TempestNCState *s, TempestXferIn *in, bool *refuse)
{
    TempestXferBuf *b, *next;
    bool any = false, big = false;

    QTAILQ_FOREACH_SAFE(b, &s->xfer_bufs, next, next) {
        if (b->type == in->type && !b->full) {
            any = true;
            big |= b->len >= in->len;
        }
        /* May close and free b: b is not looked at after it. */
        if (buf_place(s, b, in)) {
            *refuse = false;
            return true;
        }
    }
    *refuse = any && !big && in->len > s->xfer_sys_max;
    return false;
}

bool xfer_sys_take(TempestNCState *s, TempestXferIn *in)
{
    uint64_t cost = MAX(in->len, SYS_MIN_COST);

    if (cost > s->xfer_sys_max - s->xfer_sys_used) {
        return false;
    }
    in->sys = g_try_malloc(in->len);
    if (!in->sys) {
        return false;       /* the host is short: the sender waits */
    }
    in->sys_cost = cost;
    s->xfer_sys_used += cost;
    trace_tempest_nc_xfer_sys(s->node_id, in->src, in->mid, in->len,
                              s->xfer_sys_used);
    return true;
}

/* Frees what @in holds: system space, its place in a buffer. */
void xfer_sys_release(TempestNCState *s, TempestXferIn *in)
{
    g_clear_pointer(&in->sys, g_free);
    s->xfer_sys_used -= in->sys_cost;     /* 0 unless in system space */
    in->sys_cost = 0;
    xfer_buf_stored(s, in);
}

/* A stored message now in its buffer: the guest hears of it. */
static void sys_deliver(TempestNCState *s, TempestXferIn *in)
{
    /* The buffer was checked against RAM when posted: cannot fail. */
    tempest_nc_dma_write(s, in->addr, in->sys, in->len);
    QTAILQ_REMOVE(&s->xfer_parked, in, park_next);
    s->xfer_nparked--;
    g_free(in->sys);
    in->sys = NULL;
    s->xfer_sys_used -= in->sys_cost;
    xfer_buf_stored(s, in);
    xfer_buf_recv_event(s, in);
    g_free(in);
}

/* Moves the messages in system space that fit into buffers, oldest first. */
static void sys_move(TempestNCState *s)
{
    TempestXferIn *in, *next;
    TempestXferBuf *b, *bnext;

    QTAILQ_FOREACH_SAFE(in, &s->xfer_parked, park_next, next) {
        QTAILQ_FOREACH_SAFE(b, &s->xfer_bufs, next, bnext) {
            if (buf_place(s, b, in)) {
                sys_deliver(s, in);
                break;
            }
        }
    }
}

/*
 * A stored message (the transfer is acknowledged): out of xfer_in, into
 * the list of system space, then into a buffer if one is there already.
 */
void xfer_sys_park(TempestNCState *s, TempestXferIn *in)
{
    gpointer key = NULL;

    *xfer_in_counter(s, in) -= 1;
    /* Out of the table, whose destroy functions would free it: the key. */
    g_hash_table_steal_extended(s->xfer_in,
                                &(uint64_t){ in_key(in->src, in->mid) },
                                &key, NULL);
    g_free(key);
    QTAILQ_INSERT_TAIL(&s->xfer_parked, in, park_next);
    s->xfer_nparked++;
    sys_move(s);
}

void xfer_sys_reset(TempestNCState *s)
{
    TempestXferIn *in;

    while ((in = QTAILQ_FIRST(&s->xfer_parked))) {
        QTAILQ_REMOVE(&s->xfer_parked, in, park_next);
        g_free(in->sys);
        g_free(in);
    }
    s->xfer_nparked = 0;
    s->xfer_sys_used = 0;
}

/* Tells the guest that message @in is in its buffer at in->addr. */
void xfer_buf_recv_event(TempestNCState *s, TempestXferIn *in)
{
    tempest_nc_post_event(s, TEMPEST_EV_XFER_RECV, in->src, in->addr,
                          in->len | (in->buf_done ? TEMPEST_EV_XFER_BUF_DONE :
                                     0) | (uint64_t)in->type << 32,
                          in->cookie);
}

/*
 * BUF_POST (for the engine's command): posts the buffer and moves into
 * it what system space holds for it.  The engine then lets the messages
 * waiting for a buffer try.
 */
uint32_t xfer_buf_post(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t type = b->arg[0], addr = b->arg[1], len = b->arg[2];
    TempestXferBuf *buf;

    if (type > UINT32_MAX || !tempest_nc_in_ram(s, addr, len) ||
        len > TEMPEST_XFER_MAX) {
        b->reason = !tempest_nc_in_ram(s, addr, len) ? TEMPEST_CMD_E_BAD_ADDR :
                    TEMPEST_CMD_E_BAD_LEN;
        return TEMPEST_CMD_FAIL;
    }
    if (s->xfer_nbufs >= TEMPEST_XFER_MAX_BUFS) {
        return TEMPEST_CMD_RETRY;
    }
    buf = g_new0(TempestXferBuf, 1);
    buf->type = type;
    buf->addr = addr;
    buf->len = len;
    QTAILQ_INSERT_TAIL(&s->xfer_bufs, buf, next);
    s->xfer_nbufs++;

    /* Messages in system space first: they came before any waiting. */
    sys_move(s);
    return TEMPEST_CMD_SUCCESS;
}
