/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest: bulk data transfer channels (Tempest spec 3.4).
 *
 * A source endpoint lives on the sending node, keyed by (destination,
 * channel ID); a destination endpoint on the receiving node, keyed by
 * (source, channel ID).  IDs come from one counter per node and are never
 * reused, so a stale ID never names a newer channel.
 *
 * Wire protocol:
 *   destination -> source, active message chan_established_h:
 *       W channel, W buffer address bits 31:0, W bits 63:32, W bytes
 *   destination -> source, active message chan_reset_h: W channel
 *   source -> destination, the data: one direct TEMPEST_CMD_XFER of
 *       exactly the destination's size into its buffer, with the cookie
 *       TEMPEST_XFER_CLIENT_CHANNEL << 56 | destination << 32 | channel;
 *       XFER_SENT at the source runs the send callback, XFER_RECV at the
 *       destination marks it ready and runs the receive callback (xfer.c
 *       hands this client's events to chan_xfer_event).
 *
 * The source sends only after it has the destination's latest
 * notification (may_send), and the destination notifies a reset only
 * when the data of the previous send is in (ready): so at most one send
 * is ever stored into a destination buffer between two resets, and a
 * misuse is refused before anything moves.
 *
 * The tables are shared by computation code and the protocol thread:
 * one spinlock, taken with IRQs masked (on a one-vCPU node the protocol
 * thread is an interrupt handler).  Callbacks run without it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tempest-internal.h"

#define CHAN_BUCKETS        256     /* a power of 2 */
#define NODE_MASK           0xFFFFFFU

struct chan_src {
    struct chan_src *next;
    TPPI_NodeId dest;
    int id;
    TPPI_ChannelHandlerPtr fn;
    void *user_ptr;
    uint64_t dst_addr;      /* the destination's buffer, once established */
    uint32_t dst_bytes;
    uint32_t in_flight;     /* sends whose XFER_SENT has not come */
    bool established;
    bool may_send;          /* a notification came since the last send */
    bool dying;             /* destroyed while a send was under way */
    int error;              /* last TEMPEST_CHAN_E_*, for the program */
};

struct chan_dst {
    struct chan_dst *next;
    TPPI_NodeId src;
    int id;
    void *buf;
    uint32_t bytes;
    TPPI_ChannelHandlerPtr fn;
    void *user_ptr;
    bool ready;             /* data in, not reset yet */
};

static struct chan_src *src_tab[CHAN_BUCKETS];
static struct chan_dst *dst_tab[CHAN_BUCKETS];
static uint32_t chan_lock_word;
static int next_id;
static struct tempest_channel_stats cstats;

/* ---- locking and tables ------------------------------------------------ */

static uint64_t chan_lock(void)
{
    uint64_t flags = rt_irq_save();

    tppi_lock(&chan_lock_word);
    return flags;
}

static void chan_unlock(uint64_t flags)
{
    tppi_unlock(&chan_lock_word);
    rt_irq_restore(flags);
}

static unsigned bucket(TPPI_NodeId node, int id)
{
    return ((uint32_t)id * 2654435761U ^ node * 40503U) & (CHAN_BUCKETS - 1);
}

/* The source endpoint (@dying ones too if @any); under the lock. */
static struct chan_src *src_find(TPPI_NodeId dest, int id, bool any)
{
    struct chan_src *s;

    for (s = src_tab[bucket(dest, id)]; s; s = s->next) {
        if (s->dest == dest && s->id == id && (any || !s->dying)) {
            return s;
        }
    }
    return NULL;
}

static void src_remove(struct chan_src *s)
{
    struct chan_src **pp = &src_tab[bucket(s->dest, s->id)];

    while (*pp != s) {
        pp = &(*pp)->next;
    }
    *pp = s->next;
    free(s);
}

static struct chan_dst *dst_find(TPPI_NodeId src, int id)
{
    struct chan_dst *d;

    for (d = dst_tab[bucket(src, id)]; d; d = d->next) {
        if (d->src == src && d->id == id) {
            return d;
        }
    }
    return NULL;
}

static void dst_remove(struct chan_dst *d)
{
    struct chan_dst **pp = &dst_tab[bucket(d->src, d->id)];

    while (*pp != d) {
        pp = &(*pp)->next;
    }
    *pp = d->next;
    free(d);
}

static uint64_t chan_cookie(TPPI_NodeId dest, int id)
{
    return (uint64_t)TEMPEST_XFER_CLIENT_CHANNEL << TEMPEST_XFER_CLIENT_SHIFT |
           (uint64_t)(dest & NODE_MASK) << 32 | (uint32_t)id;
}

const char *tempest_channel_strerror(int code)
{
    switch (code) {
    case TEMPEST_CHAN_OK:
        return "no error";
    case TEMPEST_CHAN_E_NO_CHANNEL:
        return "no such channel";
    case TEMPEST_CHAN_E_BAD_ARG:
        return "bad buffer or size";
    case TEMPEST_CHAN_E_NOT_ESTABLISHED:
        return "the destination has not established the channel";
    case TEMPEST_CHAN_E_SIZE:
        return "size differs from the destination's";
    case TEMPEST_CHAN_E_NOT_RESET:
        return "the destination has not reset the channel since the "
               "previous send";
    case TEMPEST_CHAN_E_REFUSED:
        return "the node controller failed the transfer";
    case TEMPEST_CHAN_E_REMOTE:
        return "the destination's node controller refused the data";
    case TEMPEST_CHAN_E_NOT_READY:
        return "reset before the data arrived";
    default:
        return "unknown";
    }
}

void tempest_get_channel_stats(struct tempest_channel_stats *s)
{
    if (s) {
        *s = cstats;
    }
}

/* ---- notifications (active messages, on the source) -------------------- */

static void chan_established_h(TPPI_NodeId src, int size)
{
    int id = TPPI_recv_W();
    uint32_t lo = (uint32_t)TPPI_recv_W();
    uint32_t hi = (uint32_t)TPPI_recv_W();
    uint32_t bytes = (uint32_t)TPPI_recv_W();
    struct chan_src *s;
    uint64_t flags;

    (void)size;
    flags = chan_lock();
    s = src_find(src, id, false);
    if (s) {
        s->dst_addr = (uint64_t)hi << 32 | lo;
        s->dst_bytes = bytes;
        s->established = true;
        s->may_send = true;
    }
    chan_unlock(flags);
    if (!s) {
        tppi_report(&cstats.errors, "channel %d: node %u established its "
                    "destination, but this node has no such source "
                    "endpoint to it: ignored", id, src);
    }
}

static void chan_reset_h(TPPI_NodeId src, int size)
{
    int id = TPPI_recv_W();
    struct chan_src *s;
    uint64_t flags;

    (void)size;
    flags = chan_lock();
    s = src_find(src, id, false);
    if (s) {
        s->may_send = true;
    }
    chan_unlock(flags);
    if (!s) {
        tppi_report(&cstats.errors, "channel %d: node %u reset its "
                    "destination, but this node has no such source "
                    "endpoint to it: ignored", id, src);
    }
}

/* ---- source ----------------------------------------------------------- */

int TPPI_set_channel_src(TPPI_NodeId dest, TPPI_ChannelHandlerPtr fn)
{
    struct chan_src *s;
    uint64_t flags;
    unsigned b;

    if (dest >= TPPI_num_nodes) {
        tppi_report(&cstats.errors, "TPPI_set_channel_src: node %u is not "
                    "in the %u-node cluster", dest, TPPI_num_nodes);
        return -1;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        tppi_report(&cstats.errors, "TPPI_set_channel_src: out of memory");
        return -1;
    }
    s->dest = dest;
    s->fn = fn;
    s->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    b = bucket(dest, s->id);
    flags = chan_lock();
    s->next = src_tab[b];
    src_tab[b] = s;
    chan_unlock(flags);
    return s->id;
}

int TPPI_is_channel_established(TPPI_NodeId dest, int channel)
{
    struct chan_src *s;
    uint64_t flags;
    int r;

    flags = chan_lock();
    s = src_find(dest, channel, false);
    r = s && s->established;
    chan_unlock(flags);
    return r;
}

int TPPI_is_channel_reset(TPPI_NodeId dest, int channel)
{
    struct chan_src *s;
    uint64_t flags;
    int r;

    flags = chan_lock();
    s = src_find(dest, channel, false);
    r = s && s->established && s->may_send;
    chan_unlock(flags);
    return r;
}

struct grace {
    TPPI_NodeId dest;
    int id;
    uint64_t deadline;
};

/* True once the endpoint may send, is gone, or the grace time is over. */
static int grace_over(void *arg)
{
    struct grace *g = arg;
    struct chan_src *s;
    uint64_t flags;
    int r;

    flags = chan_lock();
    s = src_find(g->dest, g->id, false);
    r = !s || (s->established && s->may_send);
    chan_unlock(flags);
    return r || rt_time_ns() >= g->deadline;
}

int tempest_channel_send(TPPI_NodeId dest, int channel, const void *buffer,
                         int bytes)
{
    struct chan_src *s;
    struct grace g;
    uint64_t flags, where = 0;
    uint32_t dst_bytes = 0;
    int err = TEMPEST_CHAN_OK, reason;

    flags = chan_lock();
    s = src_find(dest, channel, false);
    if (s && !(s->established && s->may_send) &&
        !tppi_on_protocol_thread()) {
        /* The notification may be on its way: give it a moment. */
        chan_unlock(flags);
        g.dest = dest;
        g.id = channel;
        g.deadline = rt_time_ns() + TEMPEST_CHAN_GRACE_MS * 1000000ULL;
        tempest_wait_until(grace_over, &g, g.deadline);
        flags = chan_lock();
        s = src_find(dest, channel, false);
    }
    if (s == NULL) {
        err = TEMPEST_CHAN_E_NO_CHANNEL;
    } else if (buffer == NULL || bytes <= 0 ||
               bytes > TPPI_MAX_CHANNEL_BYTES) {
        err = TEMPEST_CHAN_E_BAD_ARG;
    } else if (!s->established) {
        err = TEMPEST_CHAN_E_NOT_ESTABLISHED;
    } else if ((uint32_t)bytes != s->dst_bytes) {
        err = TEMPEST_CHAN_E_SIZE;
        dst_bytes = s->dst_bytes;
    } else if (!s->may_send) {
        err = TEMPEST_CHAN_E_NOT_RESET;
    } else {
        s->may_send = false;
        s->in_flight++;
        where = s->dst_addr;
    }
    if (s && err != TEMPEST_CHAN_OK) {
        s->error = err;
    }
    chan_unlock(flags);
    if (err == TEMPEST_CHAN_E_SIZE) {
        tppi_report(&cstats.errors, "channel %d to node %u: send of %d "
                    "bytes refused: the destination's buffer is %u bytes",
                    channel, dest, bytes, (unsigned)dst_bytes);
        return err;
    }
    if (err != TEMPEST_CHAN_OK) {
        tppi_report(&cstats.errors, "channel %d to node %u: send of %d "
                    "bytes at %p refused: %s", channel, dest, bytes, buffer,
                    tempest_channel_strerror(err));
        return err;
    }

    reason = tempest_xfer(dest, buffer, (uint64_t)bytes, where, 0,
                          chan_cookie(dest, channel), NULL);
    if (reason != 0) {
        flags = chan_lock();
        s = src_find(dest, channel, true);
        if (s) {
            s->in_flight--;
            s->may_send = true;
            s->error = TEMPEST_CHAN_E_REFUSED;
        }
        chan_unlock(flags);
        tppi_report(&cstats.errors, "channel %d to node %u: send of %d "
                    "bytes at %p refused: the node controller failed the "
                    "transfer: %s (reason %d)", channel, dest, bytes,
                    buffer, tempest_cmd_reason_name((uint32_t)reason),
                    reason);
        return TEMPEST_CHAN_E_REFUSED;
    }
    __atomic_fetch_add(&cstats.sends, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cstats.bytes_sent, (uint64_t)bytes,
                       __ATOMIC_RELAXED);
    return TEMPEST_CHAN_OK;
}

void TPPI_channel_send(TPPI_NodeId dest, int channel, void *buffer,
                       int bytes)
{
    (void)tempest_channel_send(dest, channel, buffer, bytes);
}

int tempest_channel_error(TPPI_NodeId dest, int channel)
{
    struct chan_src *s;
    uint64_t flags;
    int err = TEMPEST_CHAN_E_NO_CHANNEL;

    flags = chan_lock();
    s = src_find(dest, channel, false);
    if (s) {
        err = s->error;
        s->error = TEMPEST_CHAN_OK;
    }
    chan_unlock(flags);
    return err;
}

void TPPI_destroy_channel_src(TPPI_NodeId dest, int channel)
{
    struct chan_src *s;
    uint64_t flags;
    bool busy = false;

    flags = chan_lock();
    s = src_find(dest, channel, false);
    if (s && s->in_flight) {
        s->dying = true;        /* freed by its last completion */
        busy = true;
    } else if (s) {
        src_remove(s);
    }
    chan_unlock(flags);
    if (s == NULL) {
        tppi_report(&cstats.errors, "TPPI_destroy_channel_src: no channel "
                    "%d to node %u", channel, dest);
    } else if (busy) {
        tppi_report(&cstats.errors, "channel %d to node %u destroyed while "
                    "a send is under way: it completes without its "
                    "callback", channel, dest);
    }
}

/*
 * Where the user pointer of a channel end is kept: the source end of
 * channel @channel to node @node if @src_end, else the destination end of
 * that channel from @node; NULL if there is no such end.  Call with the
 * lock held.
 */
static void **user_ptr_slot(bool src_end, TPPI_NodeId node, int channel)
{
    if (src_end) {
        struct chan_src *s = src_find(node, channel, false);

        return s ? &s->user_ptr : NULL;
    } else {
        struct chan_dst *d = dst_find(node, channel);

        return d ? &d->user_ptr : NULL;
    }
}

/*
 * Sets the user pointer of a channel end (see user_ptr_slot()); reports a
 * missing end in the name of the call @fn.
 */
static void set_user_ptr(const char *fn, bool src_end, TPPI_NodeId node,
                         int channel, void *user_ptr)
{
    void **slot;
    uint64_t flags;

    flags = chan_lock();
    slot = user_ptr_slot(src_end, node, channel);
    if (slot) {
        *slot = user_ptr;
    }
    chan_unlock(flags);
    if (slot == NULL) {
        tppi_report(&cstats.errors, "%s: no channel %d %s node %u", fn,
                    channel, src_end ? "to" : "from", node);
    }
}

/* The user pointer of a channel end (see user_ptr_slot()); NULL if none. */
static void *get_user_ptr(bool src_end, TPPI_NodeId node, int channel)
{
    void **slot;
    uint64_t flags;
    void *p;

    flags = chan_lock();
    slot = user_ptr_slot(src_end, node, channel);
    p = slot ? *slot : NULL;
    chan_unlock(flags);
    return p;
}

void TPPI_set_channel_src_user_ptr(TPPI_NodeId dest, int channel,
                                   void *user_ptr)
{
    set_user_ptr(__func__, true, dest, channel, user_ptr);
}

void *TPPI_get_channel_src_user_ptr(TPPI_NodeId dest, int channel)
{
    return get_user_ptr(true, dest, channel);
}

/* ---- destination ------------------------------------------------------ */

int TPPI_set_channel_dst(TPPI_NodeId src, int channel, void *buffer,
                         int bytes, TPPI_ChannelHandlerPtr fn)
{
    struct chan_dst *d;
    uint64_t flags;
    unsigned b;
    bool dup;

    if (src >= TPPI_num_nodes || buffer == NULL || bytes <= 0 ||
        bytes > TPPI_MAX_CHANNEL_BYTES) {
        tppi_report(&cstats.errors, "TPPI_set_channel_dst(node %u, channel "
                    "%d, %p, %d bytes): bad node, buffer or size (1 to %d "
                    "bytes): not set", src, channel, buffer, bytes,
                    TPPI_MAX_CHANNEL_BYTES);
        return 0;
    }
    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        tppi_report(&cstats.errors, "TPPI_set_channel_dst: out of memory");
        return 0;
    }
    d->src = src;
    d->id = channel;
    d->buf = buffer;
    d->bytes = (uint32_t)bytes;
    d->fn = fn;
    b = bucket(src, channel);
    flags = chan_lock();
    dup = dst_find(src, channel) != NULL;
    if (!dup) {
        d->next = dst_tab[b];
        dst_tab[b] = d;
    }
    chan_unlock(flags);
    if (dup) {
        free(d);
        tppi_report(&cstats.errors, "TPPI_set_channel_dst: channel %d from "
                    "node %u already has a destination here: not set",
                    channel, src);
        return 0;
    }
    TPPI_send_WWWW(src, chan_established_h, channel,
                   (int)(uint32_t)(uintptr_t)buffer,
                   (int)(uint32_t)((uint64_t)(uintptr_t)buffer >> 32),
                   bytes);
    return 1;
}

int TPPI_is_channel_ready(TPPI_NodeId src, int channel)
{
    struct chan_dst *d;
    uint64_t flags;
    int r;

    flags = chan_lock();
    d = dst_find(src, channel);
    r = d && d->ready;
    chan_unlock(flags);
    return r;
}

void TPPI_reset_channel(TPPI_NodeId src, int channel)
{
    struct chan_dst *d;
    uint64_t flags;
    bool was_ready = false;

    flags = chan_lock();
    d = dst_find(src, channel);
    if (d) {
        was_ready = d->ready;
        d->ready = false;
    }
    chan_unlock(flags);
    if (d == NULL) {
        tppi_report(&cstats.errors, "TPPI_reset_channel: no channel %d from "
                    "node %u", channel, src);
        return;
    }
    if (!was_ready) {
        tppi_report(&cstats.errors, "TPPI_reset_channel: channel %d from "
                    "node %u: %s: ignored", channel, src,
                    tempest_channel_strerror(TEMPEST_CHAN_E_NOT_READY));
        return;
    }
    TPPI_send_W(src, chan_reset_h, channel);
}

void TPPI_destroy_channel_dst(TPPI_NodeId src, int channel)
{
    struct chan_dst *d;
    uint64_t flags;

    flags = chan_lock();
    d = dst_find(src, channel);
    if (d) {
        dst_remove(d);
    }
    chan_unlock(flags);
    if (d == NULL) {
        tppi_report(&cstats.errors, "TPPI_destroy_channel_dst: no channel "
                    "%d from node %u", channel, src);
    }
}

void TPPI_set_channel_dst_user_ptr(TPPI_NodeId src, int channel,
                                   void *user_ptr)
{
    set_user_ptr(__func__, false, src, channel, user_ptr);
}

void *TPPI_get_channel_dst_user_ptr(TPPI_NodeId src, int channel)
{
    return get_user_ptr(false, src, channel);
}

/* ---- completions (the protocol thread) ---------------------------------- */

static void chan_sent(const struct tempest_xfer_event *ev)
{
    TPPI_NodeId dest = (TPPI_NodeId)((ev->cookie >> 32) & NODE_MASK);
    int id = (int)(uint32_t)ev->cookie;
    TPPI_ChannelHandlerPtr fn = NULL;
    struct chan_src *s;
    uint64_t flags;

    flags = chan_lock();
    s = src_find(dest, id, true);
    if (s) {
        if (s->in_flight) {
            s->in_flight--;
        }
        if (ev->error) {
            /* Nothing was stored there: the channel may send again. */
            s->error = TEMPEST_CHAN_E_REMOTE;
            s->may_send = true;
        }
        if (s->dying) {
            if (!s->in_flight) {
                src_remove(s);
            }
        } else {
            fn = s->fn;
        }
    }
    chan_unlock(flags);
    if (s == NULL) {
        tppi_report(&cstats.errors, "a send on channel %d to node %u "
                    "completed, but there is no such channel", id, dest);
        return;
    }
    if (ev->error) {
        tppi_report(&cstats.errors, "channel %d to node %u: node %u refused "
                    "the data: %s (reason %u)", id, dest, dest,
                    tempest_cmd_reason_name(ev->error),
                    (unsigned)ev->error);
    }
    __atomic_fetch_add(&cstats.send_done, 1, __ATOMIC_RELAXED);
    if (fn) {
        fn(dest, id);
    }
}

static void chan_recv(const struct tempest_xfer_event *ev)
{
    TPPI_NodeId src = ev->node;
    TPPI_NodeId to = (TPPI_NodeId)((ev->cookie >> 32) & NODE_MASK);
    int id = (int)(uint32_t)ev->cookie;
    TPPI_ChannelHandlerPtr fn = NULL;
    struct chan_dst *d;
    uint64_t flags, buf = 0;
    uint32_t bytes = 0;
    bool was_ready = false;

    flags = chan_lock();
    d = to == TPPI_self_address ? dst_find(src, id) : NULL;
    if (d) {
        buf = (uintptr_t)d->buf;
        bytes = d->bytes;
        was_ready = d->ready;
        d->ready = true;
        fn = d->fn;
    }
    chan_unlock(flags);
    if (d == NULL) {
        tppi_report(&cstats.errors, "%u bytes at 0x%llx from node %u on "
                    "channel %d (to node %u) arrived, but there is no such "
                    "destination endpoint here", (unsigned)ev->len,
                    (unsigned long long)ev->addr, src, id, to);
        return;
    }
    if (ev->addr != buf || ev->len != bytes) {
        tppi_report(&cstats.errors, "channel %d from node %u: %u bytes "
                    "arrived at 0x%llx, the endpoint has %u at 0x%llx", id,
                    src, (unsigned)ev->len, (unsigned long long)ev->addr,
                    (unsigned)bytes, (unsigned long long)buf);
    }
    if (was_ready) {
        tppi_report(&cstats.errors, "channel %d from node %u: data arrived "
                    "before the previous data was reset", id, src);
    }
    __atomic_fetch_add(&cstats.recvs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cstats.bytes_received, ev->len, __ATOMIC_RELAXED);
    if (fn) {
        fn(src, id);
    }
}

/* The transfer events of cookie client TEMPEST_XFER_CLIENT_CHANNEL. */
static void chan_xfer_event(const struct tempest_xfer_event *ev)
{
    if (ev->kind == TEMPEST_EV_XFER_SENT) {
        chan_sent(ev);
    } else {
        chan_recv(ev);
    }
}

TPPI_REGISTER
static void chan_register(void)
{
    tppi_xfer_set_client(TEMPEST_XFER_CLIENT_CHANNEL, chan_xfer_event);
}
