/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the transfer engine and fetch-and-op, after
 * Stanford FLASH's MAGIC (Heinlein et al. 1994, sections 3 and 3.6).
 *
 * A transfer is described through the command bank and validated before
 * anything moves.  The sending controller sends a header, then the data
 * as components of TEMPEST_XFER_COMPONENT bytes, each frame carrying the
 * message id and the offset of its first component (3.3.1).  Like MAGIC's
 * software queue (3.3.2) a scheduler takes one frame of each active
 * transfer in turn, and stops while XFER_TX_HIGH bytes already wait for a
 * peer's socket: an active message queued meanwhile waits behind at most
 * that much, whatever the size of the transfers.  The receiving controller
 * checks the destination, stores every frame straight into it (no staging
 * copy) and acknowledges the whole transfer; typed transfers land in
 * space the receiver posted in advance (FLASH's bufalloc, 3.4.1) or,
 * while it has none, in the node's bounded system space (footnote 3),
 * and only when that is full wait, holding their sender, for a buffer
 * (tempest-nc-xfer-buf.c).  On shared memory the sender copies straight
 * into the receiver's RAM (XFER_PUT); a channel's transfer of up to
 * XFER_CHAN_NOW is copied in halves, the receiver copying the second
 * from the sender's RAM (XFER_SPLIT, docs/chan.rst "The copy in halves").
 *
 * Fetch-and-op is done by the home node's controller with host atomics on
 * the guest's RAM, so it is atomic against the guest's own atomics; the
 * result comes back to the requester's waiting COMMIT read.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "tempest-nc-xfer.h"
#include "fabric-proto.h"
#include "trace.h"

#define XFER_FRAME_DATA     (64 * KiB)      /* 1024 components */
#define XFER_PUT_DATA       (256 * KiB)     /* a direct copy's step */
#define XFER_CHAN_NOW       (4 * MiB)       /* a channel's, sent at start */
#define XFER_TX_HIGH        (256 * KiB)     /* queued per peer, at most */
#define XFER_SPLIT_MIN      (128 * KiB)     /* a channel's, copied in halves */

enum {
    XFER_HDR = 1,       /* u64 len, u64 where, u32 flags, 0, u64 cookie */
    XFER_DATA,          /* u64 offset, then the data */
    XFER_GO,            /* typed: a buffer is ready, send the data */
    XFER_ACK,           /* u32 status: all stored (0), or refused */
    XFER_ABORT,         /* the sender stops: forget the message */
    XFER_FOP_REQ,       /* u32 op, u32 0, u64 addr, u64 operand, u64 cmp */
    XFER_FOP_REP,       /* u32 status, u32 0, u64 old value */
    XFER_PUT,           /* u64 offset, u64 n: stored in your RAM directly */
    XFER_SPLIT,         /* u64 offset, u64 src: copy from there on yourself */
    XFER_UNSPLIT,       /* no split: the sender stores it all */
};

#define HDR_BODY    (8 + 8 + 4 + 4 + 8)

/* HDR flags beside TEMPEST_XFER_TYPED: the channel controller's own. */
#define XFER_F_CHAN (1U << 31)
#define FOP_BODY    (4 + 4 + 8 + 8 + 8)
#define REP_BODY    (4 + 4 + 8)

static void xfer_frame(TempestNCState *s, unsigned peer, uint8_t kind,
                       uint32_t mid, const uint8_t *extra, size_t extra_len,
                       const uint8_t *data, size_t data_len)
{
    uint8_t head[FABRIC_XFER_HDR + HDR_BODY] = { kind };

    assert(extra_len <= HDR_BODY);
    fabric_st32(head + 4, mid);
    if (extra_len) {
        memcpy(head + FABRIC_XFER_HDR, extra, extra_len);
    }
    tempest_fabric_send_xfer(s->fabric, peer, head,
                             FABRIC_XFER_HDR + extra_len, data, data_len);
}

static void xfer_send_u32(TempestNCState *s, unsigned peer, uint8_t kind,
                          uint32_t mid, uint32_t value)
{
    uint8_t v[4];

    fabric_st32(v, value);
    xfer_frame(s, peer, kind, mid, v, sizeof(v), NULL, 0);
}

static void xfer_event_sent(TempestNCState *s, TempestXferOut *o,
                            uint32_t status)
{
    trace_tempest_nc_xfer_done(s->node_id, o->mid, o->dest, o->len, status);
    QTAILQ_REMOVE(&s->xfer_out, o, next);
    s->xfer_active--;
    if (o->flags & XFER_F_CHAN) {
        /* The channel controller's own: no event, its callback. */
        s->xfer_chan_active--;
        if (s->xfer_chan_sent) {
            s->xfer_chan_sent(s, o->cookie, status);
        }
    } else {
        tempest_nc_post_event(s, TEMPEST_EV_XFER_SENT, o->dest, o->mid,
                              o->cookie, status);
    }
    g_free(o);
}

static TempestXferOut *xfer_find_out(TempestNCState *s, uint32_t dest,
                                     uint32_t mid)
{
    TempestXferOut *o;

    QTAILQ_FOREACH(o, &s->xfer_out, next) {
        if (o->mid == mid && o->dest == dest) {
            return o;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */
/* ------------------------------------------------------------------ */

/* Forget a message being received: its counters go down, in is freed. */
static void xfer_in_forget(TempestNCState *s, TempestXferIn *in)
{
    xfer_sys_release(s, in);
    s->xfer_waiting -= in->waiting;
    *xfer_in_counter(s, in) -= 1;
    g_hash_table_remove(s->xfer_in, &(uint64_t){ in_key(in->src, in->mid) });
}

static void xfer_wake_waiting(TempestNCState *s);

/*
 * The whole message is stored: tell the sender; tell the guest, or, for
 * a message in system space, keep it there until the guest posts a
 * buffer it fits (FLASH's footnote 3).
 */
static void xfer_in_done(TempestNCState *s, TempestXferIn *in)
{
    if (in->chan) {
        /* The channel controller checks it is one it asked for. */
        if (s->xfer_chan_recv) {
            s->xfer_chan_recv(s, in->src, in->addr, in->len, in->cookie);
        }
    } else if (!in->sys) {
        xfer_buf_stored(s, in);
        xfer_buf_recv_event(s, in);
    }
    if (in->src == s->node_id) {
        TempestXferOut *o = xfer_find_out(s, in->src, in->mid);

        if (o) {
            xfer_event_sent(s, o, 0);
        }
    } else {
        xfer_send_u32(s, in->src, XFER_ACK, in->mid, 0);
    }
    if (in->sys) {
        xfer_sys_park(s, in);
        xfer_wake_waiting(s);   /* system space may have room again */
    } else {
        xfer_in_forget(s, in);
    }
}

static void xfer_in_refuse(TempestNCState *s, TempestXferIn *in)
{
    in->refused = true;
    if (in->src == s->node_id) {
        TempestXferOut *o = xfer_find_out(s, in->src, in->mid);

        if (o) {
            xfer_event_sent(s, o, TEMPEST_CMD_E_REMOTE);
        }
        xfer_in_forget(s, in);
    } else {
        xfer_send_u32(s, in->src, XFER_ACK, in->mid, TEMPEST_CMD_E_REMOTE);
    }
}

/* A typed message may go ahead: its buffer (or system space) is chosen. */
static void xfer_in_go(TempestNCState *s, TempestXferIn *in)
{
    in->waiting = false;
    if (in->src == s->node_id) {
        TempestXferOut *o = xfer_find_out(s, in->src, in->mid);

        if (o) {
            o->state = OUT_SENDING;
            qemu_bh_schedule(s->xfer_bh);
        }
    } else if (in->sys) {
        /* System space is not guest RAM: the data comes in frames. */
        xfer_frame(s, in->src, XFER_GO, in->mid, NULL, 0, NULL, 0);
    } else {
        uint8_t addr[8];

        /* Where: a sender that maps our RAM copies straight there. */
        fabric_st64(addr, in->addr);
        xfer_frame(s, in->src, XFER_GO, in->mid, addr, sizeof(addr), NULL, 0);
    }
}

/*
 * Buffers or system space came free: the messages waiting for a buffer
 * take what fits now.
 */
static void xfer_wake_waiting(TempestNCState *s)
{
    GHashTableIter it;
    gpointer value;

    if (!s->xfer_waiting) {
        return;
    }
    g_hash_table_iter_init(&it, s->xfer_in);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        TempestXferIn *w = value;
        bool refuse;

        if (w->waiting && (xfer_buf_take(s, w, &refuse) ||
                           (!refuse && xfer_sys_take(s, w)))) {
            s->xfer_waiting--;
            xfer_in_go(s, w);
        }
    }
}

/* BUF_POST: the buffer takes what system space holds, then what waits. */
static uint32_t xfer_cmd_buf_post(TempestNCState *s, TempestCmdBank *b)
{
    uint32_t st = xfer_buf_post(s, b);

    if (st == TEMPEST_CMD_SUCCESS) {
        xfer_wake_waiting(s);
    }
    return st;
}

static void xfer_in_header(TempestNCState *s, unsigned src, uint32_t mid,
                           uint64_t len, uint64_t where, uint32_t flags,
                           uint64_t cookie)
{
    TempestXferIn *in = g_new0(TempestXferIn, 1);
    uint64_t *key = g_new(uint64_t, 1);
    bool refuse = false;

    *key = in_key(src, mid);
    in->src = src;
    in->mid = mid;
    in->len = len;
    in->cookie = cookie;
    in->typed = flags & TEMPEST_XFER_TYPED;
    in->chan = (flags & XFER_F_CHAN) && !in->typed;
    g_hash_table_replace(s->xfer_in, key, in);
    *xfer_in_counter(s, in) += 1;
    if (!in->typed) {
        in->addr = where;
        if (!tempest_nc_in_ram(s, where, len)) {
            xfer_in_refuse(s, in);
        }
        return;
    }
    in->type = where;
    if (xfer_buf_take(s, in, &refuse) || (!refuse && xfer_sys_take(s, in))) {
        xfer_in_go(s, in);
    } else if (refuse) {
        xfer_in_refuse(s, in);
    } else {
        in->waiting = true;
        s->xfer_waiting++;
    }
}

/* n bytes at offset were stored in our RAM by the sender itself. */
static void xfer_in_put(TempestNCState *s, TempestXferIn *in, uint64_t n)
{
    if (in->refused) {
        return;
    }
    in->got += n;
    s->xfer_recv_bytes += n;
    if (in->got == xfer_in_end(in)) {
        xfer_in_done(s, in);
    }
}

static void xfer_in_data(TempestNCState *s, TempestXferIn *in,
                         uint64_t offset, const uint8_t *data, size_t n)
{
    if (in->refused) {
        return;     /* its sender is told; drop what was already sent */
    }
    if (in->sys) {
        /* The frame parser checked offset == got, n <= len - got. */
        memcpy(in->sys + offset, data, n);
    } else if (!tempest_nc_dma_write(s, in->addr + offset, data, n)) {
        /* Tells the sender, which may be this node (then frees in). */
        xfer_in_refuse(s, in);
        return;
    }
    in->got += n;
    s->xfer_recv_bytes += n;
    if (in->got == xfer_in_end(in)) {
        xfer_in_done(s, in);
    }
}

/* [addr, addr + len) of @peer's RAM, mapped here, or NULL. */
static uint8_t *xfer_peer_span(TempestNCState *s, unsigned peer,
                               uint64_t addr, uint64_t len)
{
    uint64_t base, size;
    uint8_t *ram = tempest_fabric_peer_ram(s->fabric, peer, &base, &size);

    if (!ram || addr < base || addr - base > size ||
        len > size - (addr - base)) {
        return NULL;
    }
    return ram + (addr - base);
}

/* A channel's transfer of @len bytes is one a sender copies in halves. */
static bool xfer_split_len(uint64_t len)
{
    return len >= XFER_SPLIT_MIN && len <= XFER_CHAN_NOW;
}

/*
 * The sender stores [0, at) of a channel's transfer and asks us to copy
 * [at, len) ourselves, from its RAM (mapped here) at src + at: each
 * node's thread copies half, at the same time (docs/chan.rst, "The copy
 * in halves").  Only into a buffer a port of ours waits for, from inside
 * the sender's RAM; else the sender is told to store it all.  The copy
 * is done here and now, so nothing of it is left for a save.
 */
static void xfer_in_split(TempestNCState *s, unsigned peer,
                          TempestXferIn *in, uint64_t at, uint64_t src)
{
    uint8_t *from = xfer_peer_span(s, peer, src, in->len);

    if (!from || !s->xfer_chan_awaited ||
        !s->xfer_chan_awaited(s, peer, in->addr, in->len, in->cookie)) {
        trace_tempest_nc_xfer_split(s->node_id, peer, in->mid, 0, at);
        xfer_frame(s, peer, XFER_UNSPLIT, in->mid, NULL, 0, NULL, 0);
        return;
    }
    if (!tempest_nc_dma_write(s, in->addr + at, from + at, in->len - at)) {
        xfer_in_refuse(s, in);  /* checked at the header: cannot be */
        return;
    }
    trace_tempest_nc_xfer_split(s->node_id, peer, in->mid, in->len - at,
                                at);
    in->split = at;
    s->xfer_recv_bytes += in->len - at;
    s->xfer_pull_bytes += in->len - at;
}

/* ------------------------------------------------------------------ */
/* Sending: MAGIC's software queue                                     */
/* ------------------------------------------------------------------ */

typedef enum {
    STEP_BLOCKED,       /* its peer's queue is full */
    STEP_MORE,          /* a frame went, more to come */
    STEP_LAST,          /* the last frame went (o may be gone) */
} StepResult;

/*
 * Where o's destination is in the peer's RAM, mapped here (checked
 * against that RAM as the peer checks it), or NULL: not mapped, or the
 * destination not known yet.
 */
static uint8_t *xfer_out_ram(TempestNCState *s, TempestXferOut *o)
{
    return o->direct ? xfer_peer_span(s, o->dest, o->dst, o->len) : NULL;
}

/*
 * The peer's RAM is mapped here and o's destination is known: copy one
 * step RAM to RAM and say so with a PUT.  False if o cannot go this way.
 * The caller checked the peer's queue.
 */
static bool xfer_out_put(TempestNCState *s, TempestXferOut *o,
                         StepResult *res)
{
    uint64_t end = xfer_out_end(o), n = MIN(end - o->sent, XFER_PUT_DATA);
    uint8_t *dst = xfer_out_ram(s, o);
    uint8_t put[16];

    if (!dst) {
        return false;
    }
    if (!tempest_nc_dma_read(s, o->src + o->sent, dst + o->sent, n)) {
        return false;   /* checked at the command: cannot be */
    }
    fabric_st64(put, o->sent);
    fabric_st64(put + 8, n);
    o->sent += n;
    s->xfer_sent_bytes += n;
    s->xfer_put_bytes += n;
    if (o->sent == end) {
        o->state = OUT_WAIT_ACK;
    }
    xfer_frame(s, o->dest, XFER_PUT, o->mid, put, sizeof(put), NULL, 0);
    *res = o->sent == end ? STEP_LAST : STEP_MORE;
    return true;
}

/* Send one frame of o. */
static StepResult xfer_out_step(TempestNCState *s, TempestXferOut *o)
{
    uint64_t n = MIN(xfer_out_end(o) - o->sent, XFER_FRAME_DATA);
    uint64_t at = o->sent;
    uint32_t dest = o->dest, mid = o->mid;
    g_autofree uint8_t *copy = NULL;
    hwaddr plen = n;
    uint8_t *data;
    uint8_t off[8];
    bool last;
    StepResult res;

    if (dest != s->node_id &&
        tempest_fabric_tx_queued(s->fabric, dest) >= XFER_TX_HIGH) {
        return STEP_BLOCKED;
    }
    if (dest != s->node_id && xfer_out_put(s, o, &res)) {
        return res;
    }
    /*
     * Guest RAM is mapped, not copied: the fabric writes it to the socket
     * directly (and copies only what the socket does not take at once).
     */
    data = address_space_map(s->dma_as, o->src + at, &plen, false,
                             MEMTXATTRS_UNSPECIFIED);
    if (!data || plen < n) {
        if (data) {
            address_space_unmap(s->dma_as, data, plen, false, 0);
        }
        plen = 0;
        data = copy = g_malloc(n);
        if (!tempest_nc_dma_read(s, o->src + at, copy, n)) {
            memset(copy, 0, n);     /* checked at the command: cannot be */
        }
    }
    o->sent += n;
    s->xfer_sent_bytes += n;
    last = o->sent == xfer_out_end(o);
    if (last) {
        o->state = OUT_WAIT_ACK;
    }
    if (dest == s->node_id) {
        TempestXferIn *in = g_hash_table_lookup(s->xfer_in,
                              &(uint64_t){ in_key(dest, mid) });

        if (in) {
            xfer_in_data(s, in, at, data, n);   /* the last one frees o */
        }
    } else {
        fabric_st64(off, at);
        xfer_frame(s, dest, XFER_DATA, mid, off, sizeof(off), data, n);
    }
    if (plen) {
        address_space_unmap(s->dma_as, data, plen, false, plen);
    }
    return last ? STEP_LAST : STEP_MORE;
}

/* One round: a frame of every transfer that may send, in turn. */
static void xfer_pump(void *opaque)
{
    TempestNCState *s = opaque;
    TempestXferOut *o, *next;
    bool more = false;

    if (!runstate_is_running()) {
        return;     /* no DMA while the VM is stopped: see xfer_vm_state */
    }
    QTAILQ_FOREACH_SAFE(o, &s->xfer_out, next, next) {
        if (o->state == OUT_SENDING) {
            more |= xfer_out_step(s, o) == STEP_MORE;
        }
    }
    /* Round-robin: the first transfer goes to the end of the queue. */
    o = QTAILQ_FIRST(&s->xfer_out);
    if (o && QTAILQ_NEXT(o, next)) {
        QTAILQ_REMOVE(&s->xfer_out, o, next);
        QTAILQ_INSERT_TAIL(&s->xfer_out, o, next);
    }
    /*
     * Yield to the main loop between rounds; full queues wait for
     * xfer_fabric_drained().
     */
    if (more) {
        qemu_bh_schedule(s->xfer_bh);
    }
}

static void xfer_fabric_drained(void *opaque, unsigned peer)
{
    TempestNCState *s = opaque;

    if (!QTAILQ_EMPTY(&s->xfer_out)) {
        qemu_bh_schedule(s->xfer_bh);
    }
}

static uint32_t xfer_start(TempestNCState *s, uint32_t dest, uint64_t src,
                           uint64_t len, uint64_t where, uint32_t flags,
                           uint64_t cookie);

static uint32_t xfer_cmd_start(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t dest = b->arg[0], src = b->arg[1], len = b->arg[2];
    uint64_t where = b->arg[3], cookie = b->arg[4], flags = b->arg[5];

    if (dest >= s->num_nodes) {
        b->reason = TEMPEST_CMD_E_BAD_NODE;
        return TEMPEST_CMD_FAIL;
    }
    if (!len || len > TEMPEST_XFER_MAX || flags & ~TEMPEST_XFER_TYPED) {
        b->reason = TEMPEST_CMD_E_BAD_LEN;
        return TEMPEST_CMD_FAIL;
    }
    if (!tempest_nc_in_ram(s, src, len) || (dest == s->node_id &&
        !(flags & TEMPEST_XFER_TYPED) && !tempest_nc_in_ram(s, where, len))) {
        b->reason = TEMPEST_CMD_E_BAD_ADDR;
        return TEMPEST_CMD_FAIL;
    }
    if (!tempest_fabric_peer_up(s->fabric, dest)) {
        b->reason = TEMPEST_CMD_E_PEER_DOWN;
        return TEMPEST_CMD_FAIL;
    }
    if (s->xfer_active - s->xfer_chan_active >= TEMPEST_XFER_MAX_OUT) {
        return TEMPEST_CMD_RETRY;
    }
    b->result = xfer_start(s, dest, src, len, where, flags, cookie);
    return TEMPEST_CMD_SUCCESS;
}

/*
 * A transfer for the channel controller (docs/chan.rst): untyped, into
 * where on dest, its completions through s->xfer_chan_sent and, there,
 * s->xfer_chan_recv instead of events.  Not under the guest's limit of
 * TEMPEST_XFER_MAX_OUT: the channel controller has one per port at most.
 */
bool tempest_nc_xfer_chan(TempestNCState *s, uint32_t dest, uint64_t src,
                          uint64_t len, uint64_t where, uint64_t cookie)
{
    if (dest >= s->num_nodes || !len || len > TEMPEST_XFER_MAX ||
        !tempest_nc_in_ram(s, src, len) ||
        (dest == s->node_id && !tempest_nc_in_ram(s, where, len)) ||
        !tempest_fabric_peer_up(s->fabric, dest) ||
        s->xfer_chan_active >= TEMPEST_CHAN_PORTS) {
        return false;
    }
    s->xfer_chan_active++;
    xfer_start(s, dest, src, len, where, XFER_F_CHAN, cookie);
    return true;
}

/*
 * A channel's transfer into a peer whose RAM is mapped here, all of it
 * sent now: ask the peer to copy the second half itself (XFER_SPLIT)
 * while we copy the first, each on its own node's thread.  The halves
 * meet at a cache line.
 */
static void xfer_out_split(TempestNCState *s, TempestXferOut *o)
{
    uint8_t body[16];

    if (!xfer_split_len(o->len) || o->sent || !xfer_out_ram(s, o)) {
        return;
    }
    o->split = (o->len / 2) & ~(uint64_t)(TEMPEST_XFER_COMPONENT - 1);
    trace_tempest_nc_xfer_split_ask(s->node_id, o->mid, o->dest, o->split,
                                    o->len);
    fabric_st64(body, o->split);
    fabric_st64(body + 8, o->src);
    xfer_frame(s, o->dest, XFER_SPLIT, o->mid, body, sizeof(body), NULL, 0);
}

static uint32_t xfer_start(TempestNCState *s, uint32_t dest, uint64_t src,
                           uint64_t len, uint64_t where, uint32_t flags,
                           uint64_t cookie)
{
    uint8_t hdr[HDR_BODY];
    TempestXferOut *o;
    uint32_t mid;

    o = g_new0(TempestXferOut, 1);
    mid = o->mid = s->xfer_next_mid++;
    o->dest = dest;
    o->src = src;
    o->len = len;
    o->where = where;
    o->flags = flags;
    /* Untyped: the sender names the place; typed: the receiver's GO. */
    o->dst = where;
    o->direct = !(flags & TEMPEST_XFER_TYPED);
    o->cookie = cookie;
    o->state = flags & TEMPEST_XFER_TYPED ? OUT_WAIT_GO : OUT_SENDING;
    QTAILQ_INSERT_TAIL(&s->xfer_out, o, next);
    s->xfer_active++;
    trace_tempest_nc_xfer_start(s->node_id, o->mid, dest, src, len, where,
                                flags);

    if (dest == s->node_id) {
        /* May refuse a typed message at once, which frees o. */
        xfer_in_header(s, dest, mid, len, where, flags, cookie);
        o = xfer_find_out(s, dest, mid);
    } else {
        fabric_st64(hdr, len);
        fabric_st64(hdr + 8, where);
        fabric_st32(hdr + 16, flags);
        fabric_st32(hdr + 20, 0);
        fabric_st64(hdr + 24, cookie);
        xfer_frame(s, dest, XFER_HDR, mid, hdr, sizeof(hdr), NULL, 0);
    }
    if (o && o->state == OUT_SENDING && (flags & XFER_F_CHAN) &&
        dest != s->node_id) {
        /*
         * The channel controller's transfer goes now, up to
         * XFER_CHAN_NOW bytes of it (the rest by the pump): waiting for
         * the pump's bottom half cost ~25 us a step (docs/chan.rst, "A
         * long DATA").
         */
        StepResult r;

        xfer_out_split(s, o);
        do {
            r = xfer_out_step(s, o);
        } while (r == STEP_MORE && o->sent < XFER_CHAN_NOW);
        if (r != STEP_LAST) {
            qemu_bh_schedule(s->xfer_bh);
        }
    } else if (o && o->state == OUT_SENDING) {
        qemu_bh_schedule(s->xfer_bh);
    }
    return mid;
}

/* ------------------------------------------------------------------ */
/* Fetch-and-op                                                        */
/* ------------------------------------------------------------------ */

/* At the home node: do it on the guest's word, atomically. */
/* The operation itself, on the 8 bytes at p: a host atomic. */
static uint64_t xfer_fop_apply(uint64_t *p, uint32_t op, uint64_t operand,
                               uint64_t cmp)
{
    /* The guest is little-endian, like the hosts this runs on. */
    switch (op) {
    case TEMPEST_FOP_ADD:
        return qatomic_fetch_add(p, operand);
    case TEMPEST_FOP_SWAP:
        return qatomic_xchg(p, operand);
    default:
        return qatomic_cmpxchg(p, cmp, operand);
    }
}

static bool xfer_fop_local(TempestNCState *s, uint32_t op, uint64_t addr,
                           uint64_t operand, uint64_t cmp, uint64_t *old)
{
    hwaddr plen = 8;
    uint64_t *p;

    if ((addr & 7) || !tempest_nc_in_ram(s, addr, 8) || op > TEMPEST_FOP_CAS) {
        return false;
    }
    p = address_space_map(s->dma_as, addr, &plen, true,
                          MEMTXATTRS_UNSPECIFIED);
    if (!p || plen < 8) {
        if (p) {
            address_space_unmap(s->dma_as, p, plen, true, 0);
        }
        return false;
    }
    *old = xfer_fop_apply(p, op, operand, cmp);
    address_space_unmap(s->dma_as, p, plen, true, 8);
    return true;
}

/*
 * The home node's RAM is mapped here (a shared-memory link): the
 * operation is the same host atomic its own controller would do, on the
 * same memory, checked against the home's RAM as the home checks it.
 * Returns false (and does nothing) when the RAM is not mapped here.
 */
static bool xfer_fop_shared(TempestNCState *s, unsigned home,
                            TempestCmdBank *b, uint32_t *status)
{
    uint64_t base, size, addr = b->arg[1];
    uint8_t *ram = tempest_fabric_peer_ram(s->fabric, home, &base, &size);

    if (!ram) {
        return false;
    }
    if (addr < base || addr - base > size - 8 || size < 8) {
        /* What the home would answer: it refuses the word. */
        b->reason = TEMPEST_CMD_E_REMOTE;
        *status = TEMPEST_CMD_FAIL;
        return true;
    }
    b->result = xfer_fop_apply((uint64_t *)(ram + (addr - base)), b->arg[2],
                               b->arg[3], b->arg[4]);
    s->xfer_fop_shared++;
    *status = TEMPEST_CMD_SUCCESS;
    return true;
}

static uint32_t xfer_cmd_fop(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t home = b->arg[0], addr = b->arg[1], op = b->arg[2];
    uint8_t req[FOP_BODY];
    uint32_t status;

    switch (b->fop_state) {
    case FOP_PENDING:
        return TEMPEST_CMD_RETRY;
    case FOP_DONE:
        b->fop_state = FOP_IDLE;
        b->result = b->fop_value;
        return TEMPEST_CMD_SUCCESS;
    case FOP_FAILED:
        b->fop_state = FOP_IDLE;
        b->reason = b->fop_reason;
        return TEMPEST_CMD_FAIL;
    }
    if (home >= s->num_nodes) {
        b->reason = TEMPEST_CMD_E_BAD_NODE;
        return TEMPEST_CMD_FAIL;
    }
    if (op > TEMPEST_FOP_CAS) {
        b->reason = TEMPEST_CMD_E_BAD_FOP;
        return TEMPEST_CMD_FAIL;
    }
    if (addr & 7) {
        b->reason = TEMPEST_CMD_E_BAD_ADDR;
        return TEMPEST_CMD_FAIL;
    }
    if (home == s->node_id) {
        if (!xfer_fop_local(s, op, addr, b->arg[3], b->arg[4], &b->result)) {
            b->reason = TEMPEST_CMD_E_BAD_ADDR;
            return TEMPEST_CMD_FAIL;
        }
        return TEMPEST_CMD_SUCCESS;
    }
    if (!tempest_fabric_peer_up(s->fabric, home)) {
        b->reason = TEMPEST_CMD_E_PEER_DOWN;
        return TEMPEST_CMD_FAIL;
    }
    if (xfer_fop_shared(s, home, b, &status)) {
        return status;
    }
    b->fop_state = FOP_PENDING;
    b->fop_id = s->xfer_next_fop++;
    b->fop_home = home;
    fabric_st32(req, op);
    fabric_st32(req + 4, 0);
    fabric_st64(req + 8, addr);
    fabric_st64(req + 16, b->arg[3]);
    fabric_st64(req + 24, b->arg[4]);
    xfer_frame(s, home, XFER_FOP_REQ, b->fop_id, req, sizeof(req), NULL, 0);
    return TEMPEST_CMD_RETRY;
}

/* ------------------------------------------------------------------ */
/* Frames from the fabric                                              */
/* ------------------------------------------------------------------ */

static void xfer_drop(TempestNCState *s, unsigned peer, const char *why)
{
    s->dropped++;
    s->last_drop = why;
    s->last_drop_peer = peer;
    trace_tempest_nc_xfer_drop(s->node_id, peer, why);
}

static void xfer_fabric_frame(void *opaque, unsigned peer,
                              const uint8_t *body, size_t len)
{
    TempestNCState *s = opaque;
    uint8_t kind = body[0];
    uint32_t mid = fabric_ld32(body + 4);
    const uint8_t *p = body + FABRIC_XFER_HDR;
    size_t n = len - FABRIC_XFER_HDR;
    TempestXferIn *in;
    TempestXferOut *o;
    uint64_t old = 0;
    uint8_t rep[REP_BODY];

    in = g_hash_table_lookup(s->xfer_in, &(uint64_t){ in_key(peer, mid) });
    o = xfer_find_out(s, peer, mid);
    switch (kind) {
    case XFER_HDR:
        if (n != HDR_BODY || in || !fabric_ld64(p) ||
            fabric_ld64(p) > TEMPEST_XFER_MAX) {
            xfer_drop(s, peer, "bad transfer header");
            return;
        }
        if ((fabric_ld32(p + 16) & (XFER_F_CHAN | TEMPEST_XFER_TYPED)) ==
            XFER_F_CHAN ?
            s->xfer_in_chan_count[peer] >= TEMPEST_CHAN_PORTS :
            s->xfer_in_count[peer] >= TEMPEST_XFER_MAX_OUT) {
            /* No node has more under way: the peer is not one of ours. */
            xfer_drop(s, peer, "more transfers than a node may start");
            return;
        }
        xfer_in_header(s, peer, mid, fabric_ld64(p), fabric_ld64(p + 8),
                       fabric_ld32(p + 16), fabric_ld64(p + 24));
        return;
    case XFER_DATA:
        if (n < 8 || !in || in->waiting ||
            fabric_ld64(p) != in->got || n - 8 > xfer_in_end(in) - in->got) {
            xfer_drop(s, peer, "data for no transfer, or out of place");
            return;
        }
        xfer_in_data(s, in, fabric_ld64(p), p + 8, n - 8);
        return;
    case XFER_PUT:
        /*
         * The data is in our RAM already: only the count moves on.  Only
         * a peer that has our RAM mapped can have stored it: one on a
         * socket, or that was not given our RAM, is lying.
         */
        if (!tempest_fabric_ram_given(s->fabric, peer)) {
            xfer_drop(s, peer, "PUT from a peer without our RAM");
            return;
        }
        if (n != 16 || !in || in->waiting || in->sys ||
            fabric_ld64(p) != in->got ||
            fabric_ld64(p + 8) > xfer_in_end(in) - in->got) {
            xfer_drop(s, peer, "PUT for no transfer, or out of place");
            return;
        }
        xfer_in_put(s, in, fabric_ld64(p + 8));
        return;
    case XFER_SPLIT:
        /*
         * Before any data, so the halves cannot overlap; only of a
         * length a sender splits (xfer_out_split), so that the copy we
         * make here and now, in one turn of the main loop, is bounded.
         */
        if (n != 16 || !in || !in->chan || in->refused || in->split ||
            in->got || !xfer_split_len(in->len) || !fabric_ld64(p) ||
            fabric_ld64(p) >= in->len) {
            xfer_drop(s, peer, "SPLIT for no transfer, or out of place");
            return;
        }
        xfer_in_split(s, peer, in, fabric_ld64(p), fabric_ld64(p + 8));
        return;
    case XFER_UNSPLIT:
        if (!o || !o->split || n != 0) {
            xfer_drop(s, peer, "UNSPLIT for no split transfer");
            return;
        }
        o->split = 0;
        o->state = OUT_SENDING;
        qemu_bh_schedule(s->xfer_bh);
        return;
    case XFER_ABORT:
        if (in) {
            xfer_in_forget(s, in);
        }
        return;
    case XFER_GO:
        if (!o || o->state != OUT_WAIT_GO || (n != 0 && n != 8)) {
            xfer_drop(s, peer, "GO for no waiting transfer");
            return;
        }
        if (n == 8) {
            o->dst = fabric_ld64(p);
            o->direct = true;
        }
        o->state = OUT_SENDING;
        qemu_bh_schedule(s->xfer_bh);
        return;
    case XFER_ACK:
        if (!o || n != 4) {
            xfer_drop(s, peer, "ACK for no transfer");
            return;
        }
        if (fabric_ld32(p)) {
            xfer_frame(s, peer, XFER_ABORT, mid, NULL, 0, NULL, 0);
        } else if (o->sent != xfer_out_end(o)) {
            xfer_drop(s, peer, "ACK before all data was sent");
            return;
        }
        xfer_event_sent(s, o, fabric_ld32(p));
        return;
    case XFER_FOP_REQ:
        if (n != FOP_BODY) {
            xfer_drop(s, peer, "bad fetch-and-op request");
            return;
        }
        fabric_st32(rep, xfer_fop_local(s, fabric_ld32(p), fabric_ld64(p + 8),
                                        fabric_ld64(p + 16),
                                        fabric_ld64(p + 24), &old) ?
                         0 : TEMPEST_CMD_E_REMOTE);
        fabric_st32(rep + 4, 0);
        fabric_st64(rep + 8, old);
        xfer_frame(s, peer, XFER_FOP_REP, mid, rep, sizeof(rep), NULL, 0);
        return;
    case XFER_FOP_REP:
        for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
            TempestCmdBank *b = &s->bank[i];

            if (n == REP_BODY && b->fop_state == FOP_PENDING &&
                b->fop_id == mid && b->fop_home == peer) {
                b->fop_reason = fabric_ld32(p);
                b->fop_value = fabric_ld64(p + 8);
                b->fop_state = b->fop_reason ? FOP_FAILED : FOP_DONE;
                return;
            }
        }
        xfer_drop(s, peer, "fetch-and-op reply for no request");
        return;
    }
    xfer_drop(s, peer, "unknown transfer frame");
}

/* A node is gone: its transfers and requests fail, its messages go. */
static void xfer_peer_down(TempestNCState *s, unsigned peer)
{
    TempestXferOut *o, *next;
    GHashTableIter it;
    gpointer key, value;

    QTAILQ_FOREACH_SAFE(o, &s->xfer_out, next, next) {
        if (o->dest == peer) {
            xfer_event_sent(s, o, TEMPEST_CMD_E_PEER_DOWN);
        }
    }
    g_hash_table_iter_init(&it, s->xfer_in);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        TempestXferIn *in = value;

        if (in->src == peer) {
            xfer_sys_release(s, in);
            s->xfer_waiting -= in->waiting;
            *xfer_in_counter(s, in) -= 1;
            g_hash_table_iter_remove(&it);
        }
    }
    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        if (s->bank[i].fop_state == FOP_PENDING &&
            s->bank[i].fop_home == peer) {
            s->bank[i].fop_state = FOP_FAILED;
            s->bank[i].fop_reason = TEMPEST_CMD_E_PEER_DOWN;
        }
    }
}


/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static const TempestNCCommand xfer_commands[] = {
    { TEMPEST_CMD_XFER, xfer_cmd_start },
    { TEMPEST_CMD_BUF_POST, xfer_cmd_buf_post },
    { TEMPEST_CMD_FOP, xfer_cmd_fop },
    { 0, NULL }
};

static const TempestNCHooks xfer_hooks = {
    .name = "xfer",
    .commands = xfer_commands,
    .xfer = xfer_fabric_frame,
    .tx_drained = xfer_fabric_drained,
    .peer_down = xfer_peer_down,
};

/* Forget every transfer, message being received and posted buffer. */
static void xfer_drop_queues(TempestNCState *s)
{
    TempestXferOut *o;
    TempestXferBuf *b;

    while ((o = QTAILQ_FIRST(&s->xfer_out))) {
        QTAILQ_REMOVE(&s->xfer_out, o, next);
        g_free(o);
    }
    while ((b = QTAILQ_FIRST(&s->xfer_bufs))) {
        QTAILQ_REMOVE(&s->xfer_bufs, b, next);
        g_free(b);
    }
    QTAILQ_INIT(&s->xfer_in_mig);   /* only borrowed xfer_in's entries */
    xfer_sys_reset(s);
    if (s->xfer_in) {
        g_hash_table_remove_all(s->xfer_in);
        memset(s->xfer_in_count, 0, s->num_nodes * sizeof(uint32_t));
        memset(s->xfer_in_chan_count, 0, s->num_nodes * sizeof(uint32_t));
    }
    s->xfer_active = 0;
    s->xfer_chan_active = 0;
    s->xfer_nbufs = 0;
    s->xfer_waiting = 0;
}

/*
 * A stopped VM's memory does not change under it (a snapshot, a save, a
 * debugger sees it still): the engine sends no frame while the VM is
 * stopped, and goes on when it runs again.  Frames from other nodes are
 * still taken (a stopped node of a cluster cannot be saved).
 */
static void xfer_vm_state(void *opaque, bool running, RunState state)
{
    TempestNCState *s = opaque;

    if (running && !QTAILQ_EMPTY(&s->xfer_out)) {
        qemu_bh_schedule(s->xfer_bh);
    }
}

static bool xfer_realize(TempestNCState *s, Error **errp)
{
    QTAILQ_INIT(&s->xfer_out);
    QTAILQ_INIT(&s->xfer_bufs);
    QTAILQ_INIT(&s->xfer_in_mig);
    QTAILQ_INIT(&s->xfer_parked);
    s->xfer_in = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                       g_free);
    s->xfer_in_count = g_new0(uint32_t, s->num_nodes);
    s->xfer_in_chan_count = g_new0(uint32_t, s->num_nodes);
    s->xfer_bh = qemu_bh_new(xfer_pump, s);
    s->xfer_vmse = qemu_add_vm_change_state_handler(xfer_vm_state, s);
    tempest_nc_register(s, &xfer_hooks);
    return true;
}

static void xfer_reset(TempestNCState *s)
{
    xfer_drop_queues(s);
    s->xfer_sent_bytes = 0;
    s->xfer_recv_bytes = 0;
    s->xfer_fop_shared = 0;
    s->xfer_put_bytes = 0;
    s->xfer_pull_bytes = 0;
}

static void xfer_unrealize(TempestNCState *s)
{
    if (!s->xfer_in) {
        return;
    }
    xfer_reset(s);
    g_clear_pointer(&s->xfer_in, g_hash_table_destroy);
    g_clear_pointer(&s->xfer_in_count, g_free);
    g_clear_pointer(&s->xfer_in_chan_count, g_free);
    g_clear_pointer(&s->xfer_vmse, qemu_del_vm_change_state_handler);
    g_clear_pointer(&s->xfer_bh, qemu_bh_delete);
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

/*
 * Only a node alone in its cluster migrates (a node joined to others has
 * a blocker), so every transfer here is one to the node itself: its
 * outgoing half (xfer_out), its incoming half (xfer_in, which travels as
 * the list xfer_in_mig) and the posted buffers all move, and the loaded
 * transfers carry on where they were.
 */
static const VMStateDescription vmstate_tempest_xfer_out = {
    .name = TYPE_TEMPEST_NC "/xfer-out",
    .version_id = 2,        /* a QTAILQ loads its entries at its version */
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mid, TempestXferOut),
        VMSTATE_UINT32(dest, TempestXferOut),
        VMSTATE_UINT64(src, TempestXferOut),
        VMSTATE_UINT64(len, TempestXferOut),
        VMSTATE_UINT64(sent, TempestXferOut),
        VMSTATE_UINT64(where, TempestXferOut),
        VMSTATE_UINT32(flags, TempestXferOut),
        VMSTATE_UINT64(cookie, TempestXferOut),
        VMSTATE_UINT32(state, TempestXferOut),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_xfer_in = {
    .name = TYPE_TEMPEST_NC "/xfer-in",
    .version_id = 2,        /* a QTAILQ loads its entries at its version */
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(src, TempestXferIn),
        VMSTATE_UINT32(mid, TempestXferIn),
        VMSTATE_UINT64(len, TempestXferIn),
        VMSTATE_UINT64(got, TempestXferIn),
        VMSTATE_UINT64(addr, TempestXferIn),
        VMSTATE_UINT32(type, TempestXferIn),
        VMSTATE_BOOL(typed, TempestXferIn),
        VMSTATE_BOOL(waiting, TempestXferIn),
        VMSTATE_BOOL(refused, TempestXferIn),
        VMSTATE_UINT64(cookie, TempestXferIn),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_xfer_buf = {
    .name = TYPE_TEMPEST_NC "/xfer-buf",
    .version_id = 2,        /* a QTAILQ loads its entries at its version */
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(type, TempestXferBuf),
        VMSTATE_UINT64(addr, TempestXferBuf),
        VMSTATE_UINT64(len, TempestXferBuf),
        VMSTATE_UINT64(used, TempestXferBuf),
        VMSTATE_UINT32(placed, TempestXferBuf),
        VMSTATE_UINT32(stored, TempestXferBuf),
        VMSTATE_BOOL(full, TempestXferBuf),
        VMSTATE_UINT64(cookie, TempestXferBuf),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_bank_fop = {
    .name = TYPE_TEMPEST_NC "/bank-fop",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(fop_state, TempestCmdBank),
        VMSTATE_UINT32(fop_id, TempestCmdBank),
        VMSTATE_UINT32(fop_home, TempestCmdBank),
        VMSTATE_UINT32(fop_reason, TempestCmdBank),
        VMSTATE_UINT64(fop_value, TempestCmdBank),
        VMSTATE_END_OF_LIST()
    }
};

static bool xfer_vmstate_needed(void *opaque)
{
    TempestNCState *s = opaque;

    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        if (s->bank[i].fop_state != FOP_IDLE) {
            return true;
        }
    }
    return s->xfer_sent_bytes || s->xfer_recv_bytes || s->xfer_next_mid ||
           s->xfer_pull_bytes ||
           s->xfer_next_fop || !QTAILQ_EMPTY(&s->xfer_out) ||
           !QTAILQ_EMPTY(&s->xfer_bufs) || g_hash_table_size(s->xfer_in);
}

/* The messages being received go into the stream as a list. */
static int xfer_vmstate_pre_save(void *opaque)
{
    TempestNCState *s = opaque;
    GHashTableIter it;
    gpointer value;

    if (s->xfer_sys_used) {
        /* Host memory, not the guest's: not in the stream (yet). */
        error_report("tempest-nc: node %u: %" PRIu64 " bytes of messages "
                     "wait in system space for a buffer; post buffers "
                     "for them, then save", s->node_id, s->xfer_sys_used);
        return -EBUSY;
    }
    QTAILQ_INIT(&s->xfer_in_mig);
    g_hash_table_iter_init(&it, s->xfer_in);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        QTAILQ_INSERT_TAIL(&s->xfer_in_mig, (TempestXferIn *)value, mig_next);
    }
    return 0;
}

static int xfer_vmstate_post_save(void *opaque)
{
    TempestNCState *s = opaque;

    QTAILQ_INIT(&s->xfer_in_mig);
    return 0;
}

static int xfer_vmstate_pre_load(void *opaque)
{
    xfer_drop_queues(opaque);
    return 0;
}

/* A loaded transfer: one to this node that the engine could be holding. */
static bool xfer_out_loaded_ok(TempestNCState *s, TempestXferOut *o)
{
    bool typed = o->flags & TEMPEST_XFER_TYPED;

    if (s->ckpt_loaded && o->dest != s->node_id) {
        /*
         * A cluster's checkpoint: one to a peer, where it had got to; the
         * peer checks its half (the destination is its RAM).  It goes on
         * in frames (the peer's RAM is mapped again only once its link
         * is made).
         */
        o->direct = false;
        return o->dest < s->num_nodes && o->len &&
               o->len <= TEMPEST_XFER_MAX && o->sent <= o->len &&
               !(o->flags & ~TEMPEST_XFER_TYPED) &&
               tempest_nc_in_ram(s, o->src, o->len) &&
               (o->state == OUT_SENDING ||
                (o->state == OUT_WAIT_GO && typed && !o->sent) ||
                (o->state == OUT_WAIT_ACK && o->sent == o->len)) &&
               (!typed || o->where <= UINT32_MAX);
    }
    if (o->dest != s->node_id || !o->len || o->len > TEMPEST_XFER_MAX ||
        o->sent > o->len || o->flags & ~TEMPEST_XFER_TYPED ||
        !tempest_nc_in_ram(s, o->src, o->len)) {
        return false;
    }
    if (!typed) {
        return o->state == OUT_SENDING &&
               tempest_nc_in_ram(s, o->where, o->len);
    }
    return o->where <= UINT32_MAX && (o->state == OUT_SENDING ||
                                      (o->state == OUT_WAIT_GO && !o->sent));
}

/*
 * A loaded message being received: the other half of a loaded transfer
 * to this node, stored as far as that one has sent.
 */
static bool xfer_in_loaded_ok(TempestNCState *s, TempestXferIn *in)
{
    TempestXferOut *o = xfer_find_out(s, in->src, in->mid);

    if (s->ckpt_loaded && in->src != s->node_id) {
        /* A cluster's checkpoint: from a peer, stored as far as it got. */
        return in->src < s->num_nodes && in->len &&
               in->len <= TEMPEST_XFER_MAX && in->got <= in->len &&
               !in->refused &&
               (in->typed ? in->type <= UINT32_MAX &&
                            (in->waiting ? !in->got :
                             tempest_nc_in_ram(s, in->addr, in->len)) :
                            !in->waiting &&
                            tempest_nc_in_ram(s, in->addr, in->len));
    }
    if (in->src != s->node_id || !o || in->len != o->len ||
        in->got != o->sent || in->refused ||
        in->typed != !!(o->flags & TEMPEST_XFER_TYPED) ||
        in->waiting != (o->state == OUT_WAIT_GO)) {
        return false;
    }
    if (!in->typed) {
        return in->addr == o->where;
    }
    return in->type == o->where &&
           (in->waiting || tempest_nc_in_ram(s, in->addr, in->len));
}

/* The buffer a loaded typed message was given space in, or NULL. */
static TempestXferBuf *xfer_buf_of(TempestNCState *s, TempestXferIn *in)
{
    TempestXferBuf *b;

    QTAILQ_FOREACH(b, &s->xfer_bufs, next) {
        if (b->type == in->type && in->addr >= b->addr &&
            in->addr + in->len <= b->addr + b->used) {
            return b;
        }
    }
    return NULL;
}

/* A loaded transfer state refused: say why (once per load), -EINVAL. */
static int xfer_load_refused(TempestNCState *s, int ret, const char *why,
                             uint64_t a, uint64_t b)
{
    if (!ret) {
        error_report("tempest-nc: node %u: transfer state refused: %s "
                     "(0x%" PRIx64 ", 0x%" PRIx64 ")", s->node_id, why, a, b);
    }
    return -EINVAL;
}

static int xfer_vmstate_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;
    TempestXferOut *o, *o2;
    TempestXferBuf *b;
    TempestXferIn *in;
    uint32_t nin = 0, nself = 0;
    int ret = 0;

    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        /* A request waits for another node: never saved (the blocker). */
        if (s->bank[i].fop_state > FOP_FAILED ||
            s->bank[i].fop_state == FOP_PENDING) {
            ret = xfer_load_refused(s, ret, "a fetch-and-op under way", i,
                                    s->bank[i].fop_state);
        }
    }
    QTAILQ_FOREACH(o, &s->xfer_out, next) {
        o->split = 0;       /* not in the stream: only the channel's */
        if (!xfer_out_loaded_ok(s, o)) {
            ret = xfer_load_refused(s, ret, "an outgoing transfer (its "
                                    "destination and state)", o->dest,
                                    o->state);
        }
        for (o2 = QTAILQ_NEXT(o, next); o2; o2 = QTAILQ_NEXT(o2, next)) {
            if (o2->mid == o->mid) {
                ret = xfer_load_refused(s, ret, "two outgoing transfers "
                                        "of one number", o->mid, 0);
            }
        }
        s->xfer_active++;
        nself += o->dest == s->node_id;
    }
    QTAILQ_FOREACH(b, &s->xfer_bufs, next) {
        if (!tempest_nc_in_ram(s, b->addr, b->len) ||
            b->len > TEMPEST_XFER_MAX || b->used > b->len ||
            b->stored >= b->placed + !b->full ||
            (b->len - b->used < 64 && !b->full)) {
            ret = xfer_load_refused(s, ret, "a receive buffer (its length "
                                    "and use)", b->len, b->used);
        }
        s->xfer_nbufs++;
    }
    if (s->xfer_active > TEMPEST_XFER_MAX_OUT ||
        s->xfer_nbufs > TEMPEST_XFER_MAX_BUFS) {
        ret = xfer_load_refused(s, ret, "too many transfers or buffers",
                                s->xfer_active, s->xfer_nbufs);
    }
    while ((in = QTAILQ_FIRST(&s->xfer_in_mig))) {
        uint64_t *key;

        QTAILQ_REMOVE(&s->xfer_in_mig, in, mig_next);
        /* Never in the stream: system space refuses a save. */
        in->sys = NULL;
        in->sys_cost = 0;
        in->split = 0;      /* done when taken: never under way */
        in->buf_done = false;
        in->chan = false;   /* not in the stream (g_malloc'd: set it) */
        in->buf = in->typed && !in->waiting ? xfer_buf_of(s, in) : NULL;
        if (ret || !xfer_in_loaded_ok(s, in) ||
            s->xfer_in_count[in->src] >= TEMPEST_XFER_MAX_OUT ||
            (in->typed && !in->waiting && !in->buf) ||
            g_hash_table_contains(s->xfer_in,
                                  &(uint64_t){ in_key(in->src, in->mid) })) {
            ret = xfer_load_refused(s, ret, "an incoming transfer (source "
                                    "and number)", in->src, in->mid);
            g_free(in);
            continue;
        }
        key = g_new(uint64_t, 1);
        *key = in_key(in->src, in->mid);
        g_hash_table_insert(s->xfer_in, key, in);
        s->xfer_in_count[in->src]++;
        s->xfer_waiting += in->waiting;
        nin += in->src == s->node_id;
    }
    /* Every transfer to this node has its incoming half. */
    if (nin != nself) {
        ret = xfer_load_refused(s, ret, "transfers to this node without "
                                "their incoming half", nself, nin);
    }
    /* Every buffer's messages under way are those placed in it. */
    QTAILQ_FOREACH(b, &s->xfer_bufs, next) {
        GHashTableIter it;
        gpointer value;
        uint32_t n = 0;

        g_hash_table_iter_init(&it, s->xfer_in);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
            n += ((TempestXferIn *)value)->buf == b;
        }
        if (n != b->placed - b->stored) {
            ret = xfer_load_refused(s, ret, "a receive buffer's messages "
                                    "under way", n, b->placed - b->stored);
        }
    }
    return ret;
}

/*
 * Transfer engine and fetch-and-op: the counters, each bank's request
 * and (version 2) the transfers, messages and posted buffers; (3) the
 * bytes copied as the receiver's half of a split.
 */
const VMStateDescription vmstate_tempest_nc_xfer = {
    .name = TYPE_TEMPEST_NC "/xfer",
    .version_id = 3,
    .minimum_version_id = 1,
    .needed = xfer_vmstate_needed,
    .pre_save = xfer_vmstate_pre_save,
    .post_save = xfer_vmstate_post_save,
    .pre_load = xfer_vmstate_pre_load,
    .post_load = xfer_vmstate_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(xfer_sent_bytes, TempestNCState),
        VMSTATE_UINT64(xfer_recv_bytes, TempestNCState),
        VMSTATE_UINT32(xfer_next_mid, TempestNCState),
        VMSTATE_UINT32(xfer_next_fop, TempestNCState),
        VMSTATE_STRUCT_ARRAY(bank, TempestNCState, TEMPEST_MAX_CPUS, 1,
                             vmstate_tempest_bank_fop, TempestCmdBank),
        VMSTATE_QTAILQ_V(xfer_out, TempestNCState, 2,
                         vmstate_tempest_xfer_out, TempestXferOut, next),
        VMSTATE_QTAILQ_V(xfer_in_mig, TempestNCState, 2,
                         vmstate_tempest_xfer_in, TempestXferIn, mig_next),
        VMSTATE_QTAILQ_V(xfer_bufs, TempestNCState, 2,
                         vmstate_tempest_xfer_buf, TempestXferBuf, next),
        VMSTATE_UINT64_V(xfer_pull_bytes, TempestNCState, 3),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * A channel's long DATA under way by the engine (a checkpoint's cut
 * waits for it: the channel's part of a transfer is not saved, and a
 * load refuses one; ckpt chan_split failed so in CI, 2026-11-30).
 */
bool tempest_nc_xfer_chan_busy(TempestNCState *s)
{
    TempestXferOut *o;

    QTAILQ_FOREACH(o, &s->xfer_out, next) {
        if (o->flags & XFER_F_CHAN) {
            return true;
        }
    }
    return false;
}

const TempestNCEngine tempest_nc_xfer_engine = {
    .name = "xfer",
    .realize = xfer_realize,
    .unrealize = xfer_unrealize,
    .reset = xfer_reset,
};
