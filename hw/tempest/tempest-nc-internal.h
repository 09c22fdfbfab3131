/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: what its files share, and nobody else.
 *
 * The files call each other in one direction (docs/design.rst):
 *
 *   tempest-nc.c        the device: MMIO decode, the command table's
 *                       dispatch, realize/unrealize, reset, VMState
 *     |
 *   tempest-nc-chan.c   the channel controller, on the transfer engine
 *     |
 *   tempest-nc-msg.c, tempest-nc-coll.c, tempest-nc-xfer.c,
 *   tempest-nc-tags.c   the engines, side by side; none calls another
 *     |
 *   tempest-nc-core.c   IRQ, guest errors, RAM checks, DMA, the event
 *                       queue (CQ), timers, the engines' registrations
 *                       and the fabric attachment
 *
 * An engine registers its commands and the fabric callbacks it takes
 * (TempestNCHooks) with the core at realize; the core composes them into
 * the ops table the fabric calls, so nothing below calls an engine by
 * name.  tests/unit/test_nc_layering.py checks this on the built objects.
 */
#ifndef HW_TEMPEST_TEMPEST_NC_INTERNAL_H
#define HW_TEMPEST_TEMPEST_NC_INTERNAL_H

#include "hw/tempest/tempest-nc.h"
#include "migration/vmstate.h"

/* ------------------------------------------------------------------ */
/* tempest-nc-core.c: the bottom layer                                 */
/* ------------------------------------------------------------------ */

/* One command an engine takes. */
typedef struct TempestNCCommand {
    uint32_t op;                /* TEMPEST_CMD_*, below TEMPEST_NC_NUM_OPS */
    TempestNCCommandFn *fn;
} TempestNCCommand;

/*
 * What an engine registers with the core.  The fabric callbacks have the
 * fabric's own signatures (opaque: the device) and go into the ops table
 * unchanged, so a packet or frame costs no more than one indirect call;
 * each is taken by at most one engine.  peer_down and retry are called
 * for every engine that has them, in the order they registered.
 */
struct TempestNCHooks {
    const char *name;
    const TempestNCCommand *commands;   /* ends with { 0, NULL } */
    void (*packet)(void *opaque, unsigned peer, unsigned net, uint32_t seq,
                   const uint8_t *pkt, size_t len);
    void (*credit)(void *opaque, unsigned peer, unsigned net);
    void (*coll)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    void (*xfer)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    void (*chan)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    void (*tx_drained)(void *opaque, unsigned peer);
    /* peer is gone; its PEER_DOWN event is posted already. */
    void (*peer_down)(TempestNCState *s, unsigned peer);
    /* The RQ or CQ was full a moment ago: look again. */
    void (*retry)(TempestNCState *s);
    /* Peers may have written into the RQ straight (the fabric's op). */
    void (*rq_moved)(void *opaque);
};

/* Take h's commands and callbacks (at realize, before the fabric). */
void tempest_nc_register(TempestNCState *s, const TempestNCHooks *h);

/* Interrupt: raise bits in IRQ_STATUS; the line follows STATUS & ENABLE. */
void tempest_nc_update_irq(TempestNCState *s);
void tempest_nc_raise(TempestNCState *s, uint32_t bits);
/* Clears IRQ_STATUS bits @bits (IRQ_ACK, or a read that acknowledges). */
void tempest_nc_lower(TempestNCState *s, uint32_t bits);

/*
 * Record a guest error: ERR_STATUS/ERR_INFO/ERR_COUNT, -d guest_errors,
 * the trace event.  code is a TEMPEST_NC_ERR_*.
 */
void tempest_nc_guest_error(TempestNCState *s, uint32_t code, uint64_t info,
                            unsigned size);

/* Is [addr, addr + len) inside the node's RAM (len > 0)? */
bool tempest_nc_in_ram(TempestNCState *s, uint64_t addr, uint64_t len);

/* DMA through the device's address space (the "memory" link). */
bool tempest_nc_dma_read(TempestNCState *s, uint64_t addr, void *buf,
                         size_t len);
bool tempest_nc_dma_write(TempestNCState *s, uint64_t addr, const void *buf,
                          size_t len);
/* A ring slot's CTL word in one 32-bit store (never torn or repeated). */
bool tempest_nc_dma_store_ctl(TempestNCState *s, uint64_t addr,
                              uint32_t value);
/* Write a ring slot: its body first, then (ordered after it) its CTL. */
bool tempest_nc_dma_publish(TempestNCState *s, uint64_t addr,
                            const uint8_t *slot, size_t len);

/* A ring's slot size (its own, or the default), and its slot at idx. */
static inline uint32_t tempest_nc_ring_slot_size(const TempestRing *r,
                                                 unsigned ring)
{
    if (r->shift) {
        return 1U << r->shift;
    }
    return ring == TEMPEST_RING_CQ ? TEMPEST_EV_SIZE : TEMPEST_PKT_SIZE;
}

static inline uint64_t tempest_nc_ring_slot(const TempestRing *r,
                                            unsigned ring)
{
    return r->base + (uint64_t)(r->idx & (r->slots - 1)) *
                     tempest_nc_ring_slot_size(r, ring);
}

/* Post a control event: into the CQ now, or queued (bounded) until room. */
void tempest_nc_post_event(TempestNCState *s, uint32_t type, uint32_t node,
                           uint64_t a, uint64_t b, uint64_t c);
/* Move queued events into the CQ while it has room. */
void tempest_nc_cq_deliver(TempestNCState *s);
/* Look at the RQ and CQ again in a moment (they were full). */
void tempest_nc_arm_retry(TempestNCState *s);
extern const VMStateDescription vmstate_tempest_nc_event;

/*
 * Arm a timer that posts TEMPEST_EV_TIMER (a, b, its id) after ticks;
 * false when every timer is armed.
 */
bool tempest_nc_timer_arm(TempestNCState *s, uint64_t ticks, uint64_t a,
                          uint64_t b, uint32_t *id);

/* Attach the fabric (the linked backend, or one made from properties). */
bool tempest_nc_fabric_attach(TempestNCState *s, Error **errp);
void tempest_nc_fabric_detach(TempestNCState *s);

bool tempest_nc_core_realize(TempestNCState *s, Error **errp);
void tempest_nc_core_unrealize(TempestNCState *s);
void tempest_nc_core_reset(TempestNCState *s);
/* After a load: check what the core holds, re-arm its timers. */
int tempest_nc_core_post_load(TempestNCState *s);

/* A failed command: CMD_REASON says why. */
static inline uint32_t tempest_nc_cmd_fail(TempestCmdBank *b,
                                           uint32_t reason)
{
    b->reason = reason;
    return TEMPEST_CMD_FAIL;
}

/* ------------------------------------------------------------------ */
/* The engines, as the device sees them                                */
/* ------------------------------------------------------------------ */

/*
 * One engine's life cycle.  realize registers its hooks with the core
 * and fails with nothing left behind; unrealize undoes it (and is safe
 * after a failed realize); reset forgets what the guest did; post_load
 * runs after the whole device state (its subsection too) is in.
 */
typedef struct TempestNCEngine {
    const char *name;
    bool (*realize)(TempestNCState *s, Error **errp);
    void (*unrealize)(TempestNCState *s);
    void (*reset)(TempestNCState *s);
    int (*post_load)(TempestNCState *s);
} TempestNCEngine;

/* tempest-nc-msg.c: rings after SP Active Messages, doorbells, TIMER_ARM */
extern const TempestNCEngine tempest_nc_msg_engine;
extern const VMStateDescription vmstate_tempest_nc_msg;
extern const VMStateDescription vmstate_tempest_nc_poll_hint;
extern const VMStateDescription vmstate_tempest_nc_slots;
void tempest_nc_sq_doorbell(TempestNCState *s, uint32_t value);
void tempest_nc_rq_doorbell(TempestNCState *s);
/*
 * The RQ that peers on this host write into straight: take the tail they
 * reached (counted, IRQ_RQ raised); close it to them (a save, a reset).
 */
void tempest_nc_rq_sync(TempestNCState *s);
void tempest_nc_rq_close(TempestNCState *s);
void tempest_nc_poll(TempestNCState *s, bool polling, bool peeks);
/* The POLL_HINT register's 8-byte write (docs/fabric.rst "The poll hint"). */
void tempest_nc_poll_hint(TempestNCState *s, uint64_t addr);
/* The RQ_COPY register's 8-byte write: the descriptor's address (1.15). */
void tempest_nc_rq_copy(TempestNCState *s, uint64_t desc);

/*
 * tempest-nc-coll-shm.c: the control network's combining on the shared
 * area of a cluster on shared memory (docs/strata.rst, "Combining on
 * shared counters"), for tempest-nc-coll.c.
 */
/* Can this node combine there (the area mapped, its waiter running)? */
bool tempest_nc_coll_shm_able(TempestNCState *s);
/*
 * Arrive with our contribution to the pending collective (s->coll_*,
 * s->coll_shm_vals and _seg set): the last to arrive combines, publishes
 * and wakes the others; s->coll_shm_done runs when it is over here.
 */
void tempest_nc_coll_shm_arrive(TempestNCState *s);
/* Has the pending one completed?  Then s->coll_shm_done runs now. */
void tempest_nc_coll_shm_check(TempestNCState *s);
/* The COLL_WAIT register's read (1.21); @cpu_access: a vCPU's. */
uint32_t tempest_nc_coll_wait(TempestNCState *s, bool cpu_access);
void tempest_nc_coll_shm_stop(TempestNCState *s);
void tempest_nc_idle_sleep_setup(TempestNCState *s);
/*
 * The broadcast ring (docs/strata.rst, "Broadcasts on shared memory"):
 * node 0 opens it before it sends the switch's frames; every node starts
 * reading it at the switch; any node writes a word of its own, node 0 one
 * of another's it held (@root), false if not written (no room, words
 * held); a reader reads word @i (1 there, 0 not yet, -1 lost, -2 no
 * area); node 0 holds words for room; our count of words taken,
 * published.
 */
void tempest_nc_bring_open(TempestNCState *s);
void tempest_nc_bring_start(TempestNCState *s);
bool tempest_nc_bring_push(TempestNCState *s, unsigned src, uint64_t value,
                           bool root);
int tempest_nc_bring_get(TempestNCState *s, uint64_t i, unsigned *src,
                         uint64_t *value);
void tempest_nc_bring_hold(TempestNCState *s, bool held);
void tempest_nc_bring_taken(TempestNCState *s);
/* A BCAST_WAIT read's wait for the next word (1.22): true if it did. */
bool tempest_nc_bring_wait(TempestNCState *s, bool cpu_access);

/* tempest-nc-coll.c: the control network */
extern const TempestNCEngine tempest_nc_coll_engine;
extern const VMStateDescription vmstate_tempest_nc_coll;
bool tempest_nc_bcast_pop(TempestNCState *s);
/* The BCAST_WAIT register's read (1.22); @cpu_access: a vCPU's. */
uint32_t tempest_nc_bcast_wait(TempestNCState *s, bool cpu_access);
/* While broadcasts come by the ring: read what it holds (node 0: issue
 * the words it held for room). */
void tempest_nc_bcast_look(TempestNCState *s);
void tempest_nc_aor_write(TempestNCState *s, uint32_t bit);

/* tempest-nc-xfer.c: the transfer engine and fetch-and-op */
extern const TempestNCEngine tempest_nc_xfer_engine;
extern const VMStateDescription vmstate_tempest_nc_xfer;
/*
 * A transfer for the channel controller, which sits above the engine
 * (docs/chan.rst): @len bytes at @src into @where on node @dest.  Its
 * ends call s->xfer_chan_sent here and s->xfer_chan_recv there with
 * @cookie.  False (nothing started) for a bad node, range or length, a
 * node gone, or TEMPEST_CHAN_PORTS of them under way.
 */
bool tempest_nc_xfer_chan_busy(TempestNCState *s);
bool tempest_nc_xfer_chan(TempestNCState *s, uint32_t dest, uint64_t src,
                          uint64_t len, uint64_t where, uint64_t cookie);

/* tempest-nc-chan.c: the channel controller (docs/chan.rst) */
extern const TempestNCEngine tempest_nc_chan_engine;
extern const VMStateDescription vmstate_tempest_nc_chan;

/* tempest-nc-tags.c: tagged memory */
/*
 * tempest_nc_tag_upgrade: the TAG_UPGRADE register's 8-byte write @value
 * (TEMPEST_TAG_UPGRADE: first block, count, tag), applied if it adds
 * access to every block; else nothing changes and ERR_STATUS says so.
 */
void tempest_nc_tag_upgrade(TempestNCState *s, uint64_t value);

extern const TempestNCEngine tempest_nc_tags_engine;
extern const VMStateDescription vmstate_tempest_nc_tags;

/* ------------------------------------------------------------------ */
/* tempest-nc-ckpt.c: whole-cluster checkpoint (docs/checkpoint.rst)   */
/* ------------------------------------------------------------------ */

/* A node of a cluster can't migrate alone: add the blocker that says so. */
bool tempest_nc_ckpt_block(TempestNCState *s, Error **errp);
/* Properties "checkpoint", "ckpt-status" and "ckpt-id". */
void tempest_nc_ckpt_class_init(ObjectClass *oc);
void tempest_nc_ckpt_realize(TempestNCState *s);
void tempest_nc_ckpt_unrealize(TempestNCState *s);
/*
 * tempest-nc-ckpt-coll.c: the control network's state as bytes (appended
 * to b), and back from buf (len bytes; *used: how many it took), false
 * with errp set on anything out of range.
 */
void tempest_nc_ckpt_save_coll(TempestNCState *s, GByteArray *b);
bool tempest_nc_ckpt_load_coll(TempestNCState *s, const uint8_t *buf,
                               size_t len, size_t *used, Error **errp);
/* Loaded first of the subsections: it sets ckpt_loaded for the others. */
extern const VMStateDescription vmstate_tempest_nc_ckpt;

/* tempest-nc-dump.c: a node stopped by a signal prints its state */
void tempest_nc_dump_realize(TempestNCState *s);
void tempest_nc_dump_unrealize(TempestNCState *s);

#endif /* HW_TEMPEST_TEMPEST_NC_INTERNAL_H */
