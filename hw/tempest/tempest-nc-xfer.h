/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the transfer engine's private declarations,
 * shared by tempest-nc-xfer.c (sending, receiving, fetch-and-op,
 * migration) and tempest-nc-xfer-buf.c (where typed messages land: the
 * receiver's posted buffer space, and system space while it has none).
 */
#ifndef TEMPEST_NC_XFER_H
#define TEMPEST_NC_XFER_H

#include "hw/tempest/tempest-nc.h"

enum {
    OUT_SENDING,
    OUT_WAIT_GO,
    OUT_WAIT_ACK,
};

struct TempestXferOut {
    QTAILQ_ENTRY(TempestXferOut) next;
    uint32_t mid;
    uint32_t dest;
    uint64_t src, len, sent;
    uint64_t where;         /* destination address, or type */
    uint32_t flags;
    uint64_t cookie;
    uint32_t state;         /* OUT_* */
    uint64_t dst;           /* where the data goes in the peer's RAM */
    bool direct;            /* dst is known: copy RAM to RAM (not saved) */
    uint64_t split;         /* the receiver copies from here on (0: all
                               ours; the channel's alone, never saved) */
};

struct TempestXferIn {
    QTAILQ_ENTRY(TempestXferIn) mig_next;  /* on xfer_in_mig while saved */
    QTAILQ_ENTRY(TempestXferIn) park_next; /* on xfer_parked once stored */
    uint32_t src, mid;
    uint64_t len, got;
    uint64_t split;         /* we copied from here on (0: the sender all) */
    uint64_t addr;          /* where the data goes; valid unless waiting */
    uint32_t type;
    bool typed, waiting, refused;
    bool chan;              /* the channel controller's (XFER_F_CHAN) */
    bool buf_done;          /* its buffer had no room left after it */
    TempestXferBuf *buf;    /* the buffer it was placed in, until stored */
    uint64_t cookie;
    uint8_t *sys;           /* in system space: the data, len bytes */
    uint64_t sys_cost;      /* what it takes of system space */
};

struct TempestXferBuf {
    QTAILQ_ENTRY(TempestXferBuf) next;
    uint32_t type;
    uint64_t addr, len;
    uint64_t used;          /* bytes given to messages, from the start */
    uint32_t placed;        /* messages given space in it */
    uint32_t stored;        /* of those, stored (or gone) */
    bool full;              /* no room for a message: no longer posted */
    uint64_t cookie;        /* of the last message placed in it */
};

/* The count of messages being received from in's source it is one of. */
static inline uint32_t *xfer_in_counter(TempestNCState *s, TempestXferIn *in)
{
    return in->chan ? &s->xfer_in_chan_count[in->src] :
                      &s->xfer_in_count[in->src];
}

/* Where the bytes the sender stores itself end: its share of a split. */
static inline uint64_t xfer_out_end(const TempestXferOut *o)
{
    return o->split ? o->split : o->len;
}

static inline uint64_t xfer_in_end(const TempestXferIn *in)
{
    return in->split ? in->split : in->len;
}

static inline uint64_t in_key(uint32_t src, uint32_t mid)
{
    return (uint64_t)src << 32 | mid;
}

/* tempest-nc-xfer-buf.c: below tempest-nc-xfer.c, calls nothing of it */
bool xfer_buf_take(TempestNCState *s, TempestXferIn *in, bool *refuse);
void xfer_buf_stored(TempestNCState *s, TempestXferIn *in);
bool xfer_sys_take(TempestNCState *s, TempestXferIn *in);
void xfer_sys_park(TempestNCState *s, TempestXferIn *in);
void xfer_sys_release(TempestNCState *s, TempestXferIn *in);
void xfer_sys_reset(TempestNCState *s);
uint32_t xfer_buf_post(TempestNCState *s, TempestCmdBank *b);
void xfer_buf_recv_event(TempestNCState *s, TempestXferIn *in);

#endif /* TEMPEST_NC_XFER_H */
