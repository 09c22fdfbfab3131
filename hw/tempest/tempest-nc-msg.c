/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the messaging engine, after SP Active Messages
 * (the rings, their doorbells, RING_SETUP and TIMER_ARM).
 *
 * The guest owns four rings in its RAM (two send rings, one per logical
 * network; a receive ring for messages; a control ring for timer and error
 * events), laid out as in standard-headers/tempest/tempest-hw.h.  The
 * device reads a send ring when the guest rings its doorbell and passes
 * each packet to the fabric, as far as the destination's credit allows; a
 * send ring out of credit waits (head-of-line) until credit returns.
 * Arriving packets wait in a device-side queue, bounded by the credit the
 * fabric gave their senders, until the receive ring has room; moving a
 * packet into the ring returns its credit, so a guest that stops reading
 * throttles its senders.  Every guest address is checked at RING_SETUP.
 * The control ring is filled by the core (tempest-nc-core.c), which
 * holds the event queue and the timers.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/bitmap.h"
#include "qemu/rcu.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Arriving packets (RQ)                                               */
/* ------------------------------------------------------------------ */

static void in_packet_free(TempestInPacket *p)
{
    g_free(p->data);
    g_free(p);
}

/*
 * Peers on this host may write packets into the RQ themselves
 * (tempest_fabric_rq_open; docs/fabric.rst, "Straight into the
 * receiver's RQ"): the RQ's tail is where they left it.  Each counts as
 * received, and the guest hears of them as of any other.
 */
static void msg_rq_sync_to(TempestNCState *s, uint32_t tail, bool held)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    uint32_t n = tail - r->idx, t;

    if (!n) {
        return;
    }
    if ((int32_t)n < 0) {
        /*
         * A tail behind the one the device last saw (writers only move
         * it on; more than a ring ahead is possible, the guest having
         * taken packets the device has not counted yet): a peer wrote
         * the lock word wrongly.  Not believed, and the word is put
         * right (held: at the device's give, after its write), so that
         * peers do not write behind the guest.
         */
        s->dropped++;
        s->last_drop = "an RQ tail behind ours in the lock word";
        s->last_drop_peer = -1;
        trace_tempest_nc_rq_tail_refused(s->node_id, r->idx, tail);
        if (!held && tempest_fabric_rq_take(s->fabric, &t) > 0) {
            tempest_fabric_rq_give(s->fabric, r->idx);
        }
        return;
    }
    trace_tempest_nc_rx_peers(s->node_id, n, tail);
    r->idx = tail;
    s->rx_packets += n;
    s->rx_peers += n;
    tempest_nc_raise(s, TEMPEST_NC_IRQ_RQ);
}

void tempest_nc_rq_sync(TempestNCState *s)
{
    uint32_t tail;

    if (tempest_fabric_rq_tail(s->fabric, &tail)) {
        msg_rq_sync_to(s, tail, false);
    }
}

static void msg_fabric_rq_moved(void *opaque)
{
    tempest_nc_rq_sync(opaque);
}

/*
 * Before writing into the RQ: hold it against peers' writes, if it is
 * open to them (*locked), after their tail.  False while a peer writes
 * into it (the packet waits; the retry timer looks again).
 */
static bool msg_rq_lock(TempestNCState *s, bool *locked)
{
    uint32_t tail;
    int got = tempest_fabric_rq_take(s->fabric, &tail);

    *locked = got > 0;
    if (got > 0) {
        msg_rq_sync_to(s, tail, true);
    }
    return got >= 0;
}

static void msg_rq_unlock(TempestNCState *s, bool locked)
{
    if (locked) {
        tempest_fabric_rq_give(s->fabric, s->ring[TEMPEST_RING_RQ].idx);
    }
}

/* Open the RQ to peers' writes, if it is set up (cheap when open). */
static void msg_rq_open(TempestNCState *s)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];

    if (r->slots && !s->rq_hold &&
        tempest_fabric_rq_open(s->fabric, r->base, r->slots,
                               tempest_nc_ring_slot_size(r, TEMPEST_RING_RQ),
                               r->idx)) {
        tempest_nc_idle_sleep_setup(s);     /* cheap once done */
    }
}

/*
 * A halted vCPU's sleep on the RQ's tail (CPUIdleSleep, target-patches/
 * 0013; tempest-nc-coll-shm.c asks here when no collective of this vCPU
 * is pending): a peer that writes a packet straight into the RQ wakes
 * the vCPU's thread itself, with no doorbell and no main loop on either
 * side; woken, the thread takes the packets (IRQ_RQ).  One vCPU at a
 * time; under the BQL.  (s->rq_idle_prepare and s->rq_idle_woken.)
 */
static int msg_rq_idle_prepare(TempestNCState *s, CPUState *cpu,
                               uint32_t **word, uint32_t *val)
{
    uint32_t *w, tail;

    if (s->rq_watcher || s->rq_hold) {
        return CPU_IDLE_SLEEP_NO;
    }
    w = tempest_fabric_rq_sleep(s->fabric, true, &tail);
    if (!w) {
        return CPU_IDLE_SLEEP_NO;
    }
    if (tail != s->ring[TEMPEST_RING_RQ].idx) {
        /*
         * Packets came meanwhile: take them.  Their interrupt wakes the
         * vCPU; if the guest masked it, the vCPU sleeps as usual (the
         * doorbell wakes it): a peer that moved the tail without end must
         * not keep this thread looping with the BQL held.
         */
        tempest_fabric_rq_sleep(s->fabric, false, NULL);
        msg_rq_sync_to(s, tail, false);
        return s->irq_status & s->irq_enable ? CPU_IDLE_SLEEP_AGAIN :
                                               CPU_IDLE_SLEEP_NO;
    }
    s->rq_watcher = cpu;
    *word = w;
    *val = tail;
    /*
     * At once, not after a yield: every halt of every node ends here,
     * and with many nodes a core's worth of them yielding held up the
     * main loops (a 64-node radix sort 5% slower, one run in five losing
     * peers at start-up: docs/fabric.rst, "A vCPU asleep on its RQ").
     */
    return CPU_IDLE_SLEEP_WAIT_NOW;
}

/* Awake: no longer said asleep, then the tail read again (Dekker). */
static void msg_rq_idle_woken(TempestNCState *s, CPUState *cpu)
{
    uint32_t before = s->ring[TEMPEST_RING_RQ].idx;

    if (s->rq_watcher == cpu) {
        s->rq_watcher = NULL;
        tempest_fabric_rq_sleep(s->fabric, false, NULL);
        tempest_nc_rq_sync(s);
        if (s->ring[TEMPEST_RING_RQ].idx != before) {
            s->rx_woken++;
        }
    }
}

/* Close it (peers write no more): the tail they reached is taken. */
void tempest_nc_rq_close(TempestNCState *s)
{
    uint32_t tail;

    if (s->rq_watcher) {
        qemu_cpu_kick(s->rq_watcher);   /* out of its sleep on the tail */
    }
    if (tempest_fabric_rq_close(s->fabric, &tail)) {
        msg_rq_sync_to(s, tail, true);     /* closed: nothing to put right */
    }
}

/* The RQ header's words a device writes: the source, network, number. */
static void msg_rq_head(uint8_t *h, unsigned src, unsigned net, uint32_t seq)
{
    stw_le_p(h + TEMPEST_PKT_NODE, src);
    h[TEMPEST_PKT_NET] = net;
    stl_le_p(h + TEMPEST_PKT_SEQ, seq);
}

/*
 * Publish a packet of @len bytes into the free RQ slot at @addr: the
 * header's words the device owns (NODE, NET, SEQ, CTL) from @src, @net,
 * @seq and @len, the rest from @pkt, CTL last.  @pkt may be the peer's
 * memory (a shared-memory ring it can rewrite meanwhile): only its bytes
 * are taken, never a length.  Counts it and gives its credit back.
 */
static bool msg_rq_put(TempestNCState *s, uint64_t addr, unsigned src,
                       unsigned net, uint32_t seq, const uint8_t *pkt,
                       uint32_t len)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    uint8_t h[TEMPEST_PKT_DATA];
    hwaddr plen = len;
    uint8_t *slot;
    bool ok;

    memcpy(h, pkt, sizeof(h));
    msg_rq_head(h, src, net, seq);
    /* The slot mapped once (RAM: RING_SETUP checked it), both parts in. */
    slot = address_space_map(s->dma_as, addr, &plen, true,
                             MEMTXATTRS_UNSPECIFIED);
    if (slot && plen >= len) {
        memcpy(slot + 4, h + 4, sizeof(h) - 4);
        memcpy(slot + TEMPEST_PKT_DATA, pkt + TEMPEST_PKT_DATA,
               len - TEMPEST_PKT_DATA);
        address_space_unmap(s->dma_as, slot, plen, true, len);
        ok = true;
    } else {
        if (slot) {
            address_space_unmap(s->dma_as, slot, plen, true, 0);
        }
        ok = tempest_nc_dma_write(s, addr + 4, h + 4, sizeof(h) - 4) &&
             (len == TEMPEST_PKT_DATA ||
              tempest_nc_dma_write(s, addr + TEMPEST_PKT_DATA,
                                   pkt + TEMPEST_PKT_DATA,
                                   len - TEMPEST_PKT_DATA));
    }
    if (!ok) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
        return false;
    }
    /* The guest must not see VALID before the body (as dma_publish). */
    smp_wmb();
    if (!tempest_nc_dma_store_ctl(s, addr, TEMPEST_PKT_VALID |
                                           (len - TEMPEST_PKT_DATA))) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
        return false;
    }
    trace_tempest_nc_rx(s->node_id, src, net, seq, len - TEMPEST_PKT_DATA,
                        r->idx);
    r->idx++;
    s->rx_packets++;
    tempest_fabric_return_credits(s->fabric, src, net, 1);
    return true;
}

/*
 * Move waiting packets into the RQ, reply network first, while it has
 * room; each one moved gives its sender back one credit.  A packet
 * longer than the RQ's slots (its sender's slots are larger: a guest
 * that set up rings of different sizes on its nodes) is dropped, its
 * credit returned, and reported as a guest error (BAD_LEN, ERR_INFO the
 * RQ slot it would have taken).
 */
static void msg_rq_deliver(TempestNCState *s)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    uint32_t slot_size = tempest_nc_ring_slot_size(r, TEMPEST_RING_RQ);
    bool moved = false, locked;

    if (QTAILQ_EMPTY(&s->inq[TEMPEST_NET_REPLY]) &&
        QTAILQ_EMPTY(&s->inq[TEMPEST_NET_REQUEST])) {
        tempest_nc_rq_sync(s);
        return;
    }
    if (!r->slots) {
        return;
    }
    if (!msg_rq_lock(s, &locked)) {
        tempest_nc_arm_retry(s);
        return;
    }
    while (r->slots) {
        TempestInPacket *p = QTAILQ_FIRST(&s->inq[TEMPEST_NET_REPLY]);
        unsigned net = TEMPEST_NET_REPLY;
        uint64_t addr = tempest_nc_ring_slot(r, TEMPEST_RING_RQ);
        uint32_t ctl;

        if (!p) {
            p = QTAILQ_FIRST(&s->inq[TEMPEST_NET_REQUEST]);
            net = TEMPEST_NET_REQUEST;
        }
        if (!p) {
            break;
        }
        if (p->len > slot_size) {
            trace_tempest_nc_rx_too_long(s->node_id, p->src, net, p->len,
                                         slot_size);
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_LEN, r->idx, 0);
            QTAILQ_REMOVE(&s->inq[net], p, next);
            tempest_fabric_return_credits(s->fabric, p->src, net, 1);
            in_packet_free(p);
            continue;
        }
        if (!tempest_nc_dma_read(s, addr, &ctl, 4)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        if (ctl) {
            tempest_nc_arm_retry(s);
            break;
        }
        if (!msg_rq_put(s, addr, p->src, net, p->seq, p->data, p->len)) {
            break;
        }
        QTAILQ_REMOVE(&s->inq[net], p, next);
        in_packet_free(p);
        moved = true;
    }
    msg_rq_unlock(s, locked);
    if (moved) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_RQ);
    }
}

static void msg_fabric_packet(void *opaque, unsigned peer, unsigned net,
                              uint32_t seq, const uint8_t *pkt, size_t len)
{
    TempestNCState *s = opaque;
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    TempestInPacket *p;
    uint64_t addr;
    uint32_t ctl;
    bool locked;

    /*
     * Nothing waits ahead of it (either network: the reply network goes
     * first only among packets that wait) and its RQ slot is free: into
     * the slot straight from where the fabric holds it, with no copy of
     * our own (docs/fabric.rst, "Straight from the ring").  Anything else
     * takes the queue, and msg_rq_deliver() decides as before.
     */
    if (!s->rq_hold && QTAILQ_EMPTY(&s->inq[TEMPEST_NET_REPLY]) &&
        QTAILQ_EMPTY(&s->inq[TEMPEST_NET_REQUEST]) && r->slots &&
        len <= tempest_nc_ring_slot_size(r, TEMPEST_RING_RQ) &&
        msg_rq_lock(s, &locked)) {
        addr = tempest_nc_ring_slot(r, TEMPEST_RING_RQ);
        if (tempest_nc_dma_read(s, addr, &ctl, 4) && !ctl) {
            trace_tempest_nc_rx_direct(s->node_id, peer, net, seq, len);
            if (msg_rq_put(s, addr, peer, net, seq, pkt, len)) {
                msg_rq_unlock(s, locked);
                tempest_nc_raise(s, TEMPEST_NC_IRQ_RQ);
                return;
            }
            /* Not written (reported): it waits, as one that had to. */
        }
        msg_rq_unlock(s, locked);
    }
    p = g_new(TempestInPacket, 1);
    p->src = peer;
    p->net = net;
    p->seq = seq;
    p->len = len;
    p->data = g_memdup2(pkt, len);
    QTAILQ_INSERT_TAIL(&s->inq[net], p, next);
    if (!s->rq_hold) {
        msg_rq_deliver(s);
    }
}

void tempest_nc_rq_doorbell(TempestNCState *s)
{
    msg_rq_open(s);
    msg_rq_deliver(s);
    tempest_nc_cq_deliver(s);
}

/*
 * @len bytes of RAM from @src to @dst, which do not overlap: read into
 * the destination mapped here, one host copy.
 */
static bool msg_ram_copy(TempestNCState *s, uint64_t dst, uint64_t src,
                         uint32_t len)
{
    hwaddr plen = len;
    bool ok;
    void *p;

    p = address_space_map(s->dma_as, dst, &plen, true,
                          MEMTXATTRS_UNSPECIFIED);
    if (!p || plen < len) {
        if (p) {
            address_space_unmap(s->dma_as, p, plen, true, 0);
        }
        return false;
    }
    ok = tempest_nc_dma_read(s, src, p, len);
    address_space_unmap(s->dma_as, p, plen, true, ok ? len : 0);
    return ok;
}

/*
 * RQ_COPY (1.15): a handler's read of a long message out of its RQ slot,
 * as one host copy instead of the guest's own.  The source must lie
 * inside the RQ, the destination in RAM outside the RQ; the descriptor
 * says how it went (STATUS).
 */
void tempest_nc_rq_copy(TempestNCState *s, uint64_t desc)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    uint64_t rq_size = (uint64_t)r->slots *
                       tempest_nc_ring_slot_size(r, TEMPEST_RING_RQ);
    uint8_t d[TEMPEST_COPY_SIZE];
    uint64_t src, dst;
    uint32_t len, status = 0;

    if (!QEMU_IS_ALIGNED(desc, 8) || !tempest_nc_in_ram(s, desc, sizeof(d)) ||
        !tempest_nc_dma_read(s, desc, d, sizeof(d))) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE,
                               TEMPEST_NC_RQ_COPY, 8);
        return;
    }
    src = ldq_le_p(d + TEMPEST_COPY_SRC);
    dst = ldq_le_p(d + TEMPEST_COPY_DST);
    len = ldl_le_p(d + TEMPEST_COPY_LEN);
    if (len == 0 || len > TEMPEST_PKT_MAX_PAYLOAD || !r->slots ||
        src < r->base || src - r->base > rq_size ||
        len > rq_size - (src - r->base) || !tempest_nc_in_ram(s, dst, len) ||
        (dst < r->base + rq_size && r->base < dst + len) ||
        !msg_ram_copy(s, dst, src, len)) {
        status = TEMPEST_NC_ERR_BAD_RANGE;
        tempest_nc_guest_error(s, status, TEMPEST_NC_RQ_COPY, 8);
    }
    trace_tempest_nc_rq_copy(s->node_id, src, dst, len, status);
    stl_le_p(d + TEMPEST_COPY_STATUS, status);
    tempest_nc_dma_write(s, desc + TEMPEST_COPY_STATUS,
                         d + TEMPEST_COPY_STATUS, 4);
}

/* ------------------------------------------------------------------ */
/* Sending (SQ0, SQ1)                                                  */
/* ------------------------------------------------------------------ */

static void msg_send_error(TempestNCState *s, unsigned ring, uint32_t slot,
                           uint32_t dest, uint32_t code)
{
    s->send_errors++;
    tempest_nc_guest_error(s, code, slot, 0);
    tempest_nc_post_event(s, TEMPEST_EV_SEND_ERROR, dest, slot, code, ring);
}

/*
 * (1.15) The payload of a gather slot at @addr (send slot payload
 * @room bytes): its descriptors name ranges of guest RAM, copied in order
 * to @dst until @len bytes.  Returns 0, or the error that refuses the
 * slot: BAD_LEN (descriptors that do not add up to @len, a zero length,
 * a reserved word set), BAD_RANGE (a range not in RAM).
 */
static uint32_t msg_gather(TempestNCState *s, uint64_t addr, uint32_t room,
                           uint8_t *dst, uint32_t len, uint32_t *ndesc)
{
    uint32_t max = MIN(room / TEMPEST_GATHER_DESC_SIZE,
                       TEMPEST_GATHER_MAX_DESC);
    uint32_t got = 0, i;

    for (i = 0; i < max && got < len; i++) {
        uint8_t d[TEMPEST_GATHER_DESC_SIZE];
        uint64_t a;
        uint32_t l;

        if (!tempest_nc_dma_read(s, addr + TEMPEST_PKT_DATA +
                                 i * TEMPEST_GATHER_DESC_SIZE, d, sizeof(d))) {
            return TEMPEST_NC_ERR_DMA;
        }
        a = ldq_le_p(d + TEMPEST_GATHER_ADDR);
        l = ldl_le_p(d + TEMPEST_GATHER_LEN);
        if (l == 0 || l > len - got || ldl_le_p(d + TEMPEST_GATHER_RSVD)) {
            return TEMPEST_NC_ERR_BAD_LEN;
        }
        if (!tempest_nc_in_ram(s, a, l) ||
            !tempest_nc_dma_read(s, a, dst + got, l)) {
            return TEMPEST_NC_ERR_BAD_RANGE;
        }
        got += l;
    }
    *ndesc = i;
    return got == len ? 0 : TEMPEST_NC_ERR_BAD_LEN;
}

/* Forgets send ring @ring's mapping (msg_sq_cache). */
static void msg_sq_uncache(TempestNCState *s, unsigned ring)
{
    if (s->sq_cache_len[ring]) {
        address_space_cache_destroy(&s->sq_cache[ring]);
        s->sq_cache_len[ring] = 0;
    }
}

/*
 * Send ring @ring's RAM, mapped once and kept while the ring stays where
 * it is (RING_SETUP checked that it is RAM; a reset, a new RING_SETUP or
 * a loaded state that moves it is seen here).  A slot read or freed is
 * then a memcpy() or a store, not a walk of the address space: that walk
 * was about a tenth of a sending vCPU's time in a stream of small
 * messages (docs/fabric.rst, "The send ring mapped once").  NULL if the
 * ring is not in one RAM region: the caller takes the slow way.
 */
static MemoryRegionCache *msg_sq_cache(TempestNCState *s, unsigned ring)
{
    TempestRing *r = &s->ring[ring];
    MemoryRegionCache *c = &s->sq_cache[ring];
    uint64_t len = (uint64_t)r->slots * tempest_nc_ring_slot_size(r, ring);

    if (s->sq_cache_len[ring] == len && s->sq_cache_base[ring] == r->base) {
        return c;
    }
    msg_sq_uncache(s, ring);
    if (!len) {
        return NULL;
    }
    RCU_READ_LOCK_GUARD();
    if (address_space_cache_init(c, s->dma_as, r->base, len, true) < len ||
        !c->ptr) {
        address_space_cache_destroy(c);
        return NULL;
    }
    s->sq_cache_base[ring] = r->base;
    s->sq_cache_len[ring] = len;
    return c;
}

/* @len bytes of the send ring at @addr (inside it), through @c if set. */
static bool msg_sq_read(TempestNCState *s, MemoryRegionCache *c,
                        uint64_t base, uint64_t addr, void *buf, size_t len)
{
    if (c) {
        return address_space_read_cached(c, addr - base, buf, len) ==
               MEMTX_OK;
    }
    return tempest_nc_dma_read(s, addr, buf, len);
}

/* The send slot at @addr is the guest's again: its CTL word 0. */
static bool msg_sq_free(TempestNCState *s, MemoryRegionCache *c,
                        uint64_t base, uint64_t addr)
{
    MemTxResult res = MEMTX_OK;

    if (!c) {
        return tempest_nc_dma_store_ctl(s, addr, 0);
    }
    address_space_stl_le_cached(c, addr - base, 0, MEMTXATTRS_UNSPECIFIED,
                                &res);
    address_space_cache_invalidate(c, addr - base, 4);
    return res == MEMTX_OK;
}

/*
 * Holding for room (docs/fabric.rst): the packet at the ring's head found
 * its receiver's RQ full (tempest_fabric_direct_begin's full).  Its guest
 * frees slots as it reads them, and through the link the packet would
 * cost the receiver's QEMU a copy, and both main loops wake-ups, each
 * time the receiver is the slower one: it stays in the ring, as for
 * credit, and is tried again at the guest's next SQ_DOORBELL or POLL, or
 * when the hold timer fires: after MSG_HOLD_MIN_NS, twice as long each
 * time it still finds the RQ full, up to MSG_HOLD_MAX_NS.  A hold that
 * has lasted the property hold-ms lets the packet go through the link,
 * as before there was holding, to wait in the receiver's device: a
 * reader that stopped costs our main loop no more than a wake-up a
 * millisecond while it lasts.
 */
#define MSG_HOLD_MIN_NS     (20 * SCALE_US)
#define MSG_HOLD_MAX_NS     (1 * SCALE_MS)

static bool msg_sq_hold(TempestNCState *s, unsigned ring, unsigned dest)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    /*
     * Not again for a peer a hold gave up on until a packet went into
     * its RQ: one that keeps its RQ full while it gives credit back (a
     * peer's lines are its own) would hold each packet for hold-ms.
     */
    if (!s->hold_ms || test_bit(dest, s->hold_off)) {
        return false;
    }
    if (!s->sq_hold_since[ring]) {
        s->sq_hold_since[ring] = now;
    } else if (now - s->sq_hold_since[ring] >=
               (int64_t)s->hold_ms * SCALE_MS) {
        set_bit(dest, s->hold_off);
        return false;
    }
    s->sq_wait[ring] = dest;
    s->tx_stalls++;
    if (!timer_pending(s->sq_hold_timer)) {
        s->sq_hold_ns = MIN(s->sq_hold_ns ? s->sq_hold_ns * 2 : MSG_HOLD_MIN_NS,
                            MSG_HOLD_MAX_NS);
        timer_mod(s->sq_hold_timer, now + s->sq_hold_ns);
    }
    trace_tempest_nc_sq_hold(s->node_id, ring, dest, s->ring[ring].idx,
                             s->sq_hold_ns);
    return true;
}

/*
 * A send ring out of credit for @dest: the fabric wakes it when credit
 * comes back (a CREDIT frame, or the shared-memory link's waiting bit and
 * its wake-up frame, docs/fabric.rst).  A safety net under that: while a
 * ring waits for credit, the credit timer looks every credit-look-ms (a
 * property: 10; 0, off, lets a qtest see the wake-ups alone).
 * The twelfth session's radix-8 hang (docs/fabric.rst) was a sender
 * waiting for credit its receiver had given back in the link's memory,
 * the waiting bit clear and no wake-up coming; credit_found counts the
 * credit found this way (the dump shows it).
 */
static void msg_credit_wait(TempestNCState *s, unsigned ring)
{
    s->sq_wait_credit[ring] = true;
    if (s->credit_look_ms && !timer_pending(s->sq_credit_timer)) {
        timer_mod(s->sq_credit_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->credit_look_ms);
    }
}

static void msg_sq_stall(TempestNCState *s, unsigned ring, unsigned dest)
{
    s->sq_wait[ring] = dest;
    s->tx_stalls++;
    trace_tempest_nc_sq_stall(s->node_id, ring, dest, s->ring[ring].idx);
    msg_credit_wait(s, ring);
}

/* Send what the guest put in send ring 'ring' (= its network). */
static void msg_sq_send(TempestNCState *s, unsigned ring)
{
    TempestRing *r = &s->ring[ring];
    uint32_t payload, sent = 0;
    bool was_waiting;
    MemoryRegionCache *c;

    assert(ring <= TEMPEST_RING_SQ1);   /* callers checked */
    payload = tempest_nc_ring_slot_size(r, ring) - TEMPEST_PKT_DATA;
    was_waiting = s->sq_wait[ring] >= 0;
    c = msg_sq_cache(s, ring);
    s->sq_wait[ring] = -1;
    s->sq_wait_credit[ring] = false;
    for (uint32_t n = 0; n < r->slots; n++) {
        uint64_t addr = tempest_nc_ring_slot(r, ring);
        uint8_t *pkt = s->tx_pkt, *out = NULL;
        uint32_t ctl, len, dest, code = 0, seq = 0;
        bool direct = false;

        if (!msg_sq_read(s, c, r->base, addr, pkt, TEMPEST_PKT_DATA)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            return;
        }
        ctl = ldl_le_p(pkt + TEMPEST_PKT_CTL);
        if (!(ctl & TEMPEST_PKT_VALID)) {
            break;
        }
        len = ctl & TEMPEST_PKT_LEN_MASK;
        dest = lduw_le_p(pkt + TEMPEST_PKT_NODE);
        if (len > ((ctl & TEMPEST_PKT_GATHER) ? TEMPEST_PKT_MAX_PAYLOAD
                                               : payload)) {
            code = TEMPEST_NC_ERR_BAD_LEN;
        } else if (dest >= s->num_nodes) {
            code = TEMPEST_NC_ERR_BAD_DEST;
        } else if (!tempest_fabric_peer_up(s->fabric, dest)) {
            code = TEMPEST_NC_ERR_PEER_DOWN;
        } else if (!tempest_fabric_can_send(s->fabric, dest, ring)) {
            msg_sq_stall(s, ring, dest);
            break;
        }
        /*
         * Built where it travels if the fabric can: straight in the
         * receiver's RQ slot (a peer on this host: docs/fabric.rst,
         * "Straight into the receiver's RQ"), the header's words as its
         * device would write them and CTL last; or in a shared-memory
         * ring ("Straight into the ring"); else in tx_pkt.
         */
        if (!code) {
            bool full;

            out = tempest_fabric_direct_begin(s->fabric, dest, ring,
                                              TEMPEST_PKT_DATA + len, &seq,
                                              &full);
            direct = out != NULL;
            if (full && msg_sq_hold(s, ring, dest)) {
                break;
            }
        }
        if (!code && !direct) {
            out = tempest_fabric_send_begin(s->fabric, dest,
                                            TEMPEST_PKT_DATA + len);
        }
        if (direct) {
            memcpy(out + 4, pkt + 4, TEMPEST_PKT_DATA - 4);
            msg_rq_head(out, s->node_id, ring, seq);
        } else if (out) {
            memcpy(out, pkt, TEMPEST_PKT_DATA);
        } else {
            out = pkt;
        }
        if (!code && (ctl & TEMPEST_PKT_GATHER)) {
            uint32_t ndesc = 0;

            code = msg_gather(s, addr, payload, out + TEMPEST_PKT_DATA, len,
                              &ndesc);
            trace_tempest_nc_tx_gather(s->node_id, ring, r->idx, ndesc, len);
        } else if (!code && len &&
                   !msg_sq_read(s, c, r->base, addr + TEMPEST_PKT_DATA,
                                out + TEMPEST_PKT_DATA, len)) {
            if (direct) {
                tempest_fabric_direct_end(s->fabric, dest, ring, 0);
            }
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            return;     /* (built in place: not committed, never sent) */
        }
        if (code && direct) {
            tempest_fabric_direct_end(s->fabric, dest, ring, 0);
        }
        if (code) {
            trace_tempest_nc_send_error(s->node_id, ring, r->idx, dest, code);
            msg_send_error(s, ring, r->idx, dest, code);
        } else {
            trace_tempest_nc_tx(s->node_id, ring, r->idx, dest, len);
            s->tx_packets++;
            sent++;
            if (direct) {
                s->tx_direct++;
                clear_bit(dest, s->hold_off);
                tempest_fabric_direct_end(s->fabric, dest, ring,
                                          TEMPEST_PKT_VALID | len);
            } else if (out != pkt) {
                tempest_fabric_send_commit(s->fabric, dest, ring,
                                           TEMPEST_PKT_DATA + len);
            } else {
                tempest_fabric_send(s->fabric, dest, ring, pkt,
                                    TEMPEST_PKT_DATA + len);
            }
        }
        if (!msg_sq_free(s, c, r->base, addr)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            return;
        }
        r->idx++;
    }
    if (sent || s->sq_wait[ring] < 0) {
        /* It moved, or holds no more: a hold begins again from now. */
        s->sq_hold_since[ring] = 0;
        s->sq_hold_ns = 0;
    }
    if (was_waiting && sent) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_SQ);
    }
}

/*
 * One batch for the fabric: a reader on this host that polls is told
 * once that the ring's packets are there, after the last of them (a
 * message of many packets then takes one POLL to read, not one each).
 */
static void msg_sq_run(TempestNCState *s, unsigned ring)
{
    tempest_fabric_batch(s->fabric, true);
    msg_sq_send(s, ring);
    tempest_fabric_batch(s->fabric, false);
}

void tempest_nc_sq_doorbell(TempestNCState *s, uint32_t value)
{
    if (value > TEMPEST_RING_SQ1) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE,
                               TEMPEST_NC_SQ_DOORBELL, 4);
        return;
    }
    if (!s->ring[value].slots) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_NO_RING,
                               TEMPEST_NC_SQ_DOORBELL, 4);
        return;
    }
    msg_sq_run(s, value);
}

/*
 * Run the send rings that wait for a peer and may move now: its credit
 * came back, or it is gone (those slots fail).
 */
static void msg_sq_resume(TempestNCState *s)
{
    for (unsigned ring = TEMPEST_RING_SQ0; ring <= TEMPEST_RING_SQ1; ring++) {
        int dest = s->sq_wait[ring];

        if (dest < 0 || !s->ring[ring].slots) {
            continue;
        }
        if (!tempest_fabric_peer_up(s->fabric, dest) ||
            tempest_fabric_can_send(s->fabric, dest, ring)) {
            msg_sq_run(s, ring);
        } else {
            msg_credit_wait(s, ring);   /* (a state loaded: not said yet) */
        }
    }
}

/*
 * Nothing is sent while the VM is stopped (credit that comes back, a
 * peer gone, a hold's timer, a state just loaded): msg_vm_state looks
 * again at cont.  A checkpoint's cut is checked and saved while the
 * cluster is stopped (docs/checkpoint.rst), and a packet written then
 * into a peer's RQ, uncounted, would be in the sender's saved state and
 * not the receiver's, or sent by a node that is loading its state to one
 * that has not loaded its own: the receiver then drops every later
 * packet of that sender as out of sequence.
 */
static void msg_sq_bh(void *opaque)
{
    if (runstate_is_running()) {
        msg_sq_resume(opaque);
    }
}

/*
 * The credit timer (msg_sq_stall): a ring that waits for credit looks at
 * it again, and counts what it finds there before a wake-up (one that is
 * late, a CREDIT frame not read yet, or lost).
 * Not while stopped: msg_vm_state runs the rings at cont.
 */
static void msg_sq_credit_look(void *opaque)
{
    TempestNCState *s = opaque;

    if (!runstate_is_running()) {
        return;
    }
    for (unsigned ring = TEMPEST_RING_SQ0; ring <= TEMPEST_RING_SQ1; ring++) {
        int dest = s->sq_wait[ring];

        if (dest >= 0 && s->sq_wait_credit[ring] && s->ring[ring].slots &&
            tempest_fabric_peer_up(s->fabric, dest) &&
            tempest_fabric_can_send(s->fabric, dest, ring)) {
            s->credit_found++;
            trace_tempest_nc_sq_credit_found(s->node_id, ring, dest);
        }
    }
    msg_sq_resume(s);   /* (a ring still out of credit: the timer again) */
}

/*
 * Running again: a send ring that waits looks again (a skipped send); a
 * hold begins afresh (the time stopped is not the reader's).  (Packets
 * and events that wait for room: the core's retry, nc_vm_state.)
 */
static void msg_vm_state(void *opaque, bool running, RunState state)
{
    TempestNCState *s = opaque;

    if (!running) {
        return;
    }
    s->sq_hold_since[0] = s->sq_hold_since[1] = 0;
    if (s->sq_wait[0] >= 0 || s->sq_wait[1] >= 0) {
        qemu_bh_schedule(s->sq_bh);
    }
}

static void msg_fabric_credit(void *opaque, unsigned peer, unsigned net)
{
    TempestNCState *s = opaque;

    if (s->sq_wait[net] == (int)peer) {
        qemu_bh_schedule(s->sq_bh);
    }
}

/*
 * POLL: a CPU of the guest polls its rings (1) or stops polling (0).  The
 * fabric takes what peers left in shared memory, which arrives here
 * through the packet callback, so a polling node sees a message without
 * its QEMU's main loop waking.
 */
void tempest_nc_poll(TempestNCState *s, bool polling, bool peeks)
{
    trace_tempest_nc_poll(s->node_id, polling, peeks);
    /*
     * Said before the tail is read below (rq-lock.h: rq_peeks_set): a
     * peer that saw "peeks" wrote before that look.
     */
    tempest_fabric_rq_peeks(s->fabric, polling && peeks);
    /* The credits the packets taken give back: one hint for them all. */
    tempest_fabric_batch(s->fabric, true);
    tempest_fabric_poll(s->fabric, polling);
    /* After the fabric's flags: opens the RQ, takes the tail peers left. */
    tempest_nc_rq_doorbell(s);
    /*
     * Credit that came in the poll lets a waiting send ring go on now,
     * from this vCPU, rather than after a turn of the main loop (sq_bh).
     */
    msg_sq_resume(s);
    tempest_fabric_batch(s->fabric, false);
}

/*
 * POLL_HINT: the guest names a word of its RAM that peers on this host
 * set when they leave it something while it polls (the fabric does the
 * rest: tempest_fabric_poll_hint).  Reads give the word taken, 0 if the
 * address was refused.
 */
void tempest_nc_poll_hint(TempestNCState *s, uint64_t addr)
{
    bool ok = addr == 0 || (QEMU_IS_ALIGNED(addr, 4) &&
                            tempest_nc_in_ram(s, addr, 4));

    if (!ok) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE,
                               TEMPEST_NC_POLL_HINT, 8);
        addr = 0;
    }
    s->poll_hint = addr;
    tempest_fabric_poll_hint(s->fabric, addr);
    trace_tempest_nc_poll_hint(s->node_id, addr, ok);
}

/* A send ring waiting for this peer's credit fails those slots now. */
static void msg_peer_down(TempestNCState *s, unsigned peer)
{
    tempest_nc_rq_sync(s);      /* what it finished before it went */
    if (s->sq_wait[0] == (int)peer || s->sq_wait[1] == (int)peer) {
        qemu_bh_schedule(s->sq_bh);
    }
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

/* A slot shift RING_SETUP takes: 0 (the default), or a packet ring's. */
static bool msg_shift_ok(unsigned ring, uint32_t shift)
{
    return shift == 0 || (ring != TEMPEST_RING_CQ &&
                          shift >= TEMPEST_PKT_MIN_SHIFT &&
                          shift <= TEMPEST_PKT_MAX_SHIFT);
}

static uint32_t msg_cmd_ring_setup(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t ring = TEMPEST_RING_SETUP_RING(b->arg[0]);
    uint32_t shift = TEMPEST_RING_SETUP_SHIFT(b->arg[0]);
    uint64_t base = b->arg[1], slots = b->arg[2];
    TempestRing want = { .shift = shift };
    uint64_t size;

    if (ring >= TEMPEST_NUM_RINGS || b->arg[0] >> 16) {
        return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_RING);
    }
    if (slots < TEMPEST_RING_MIN_SLOTS || slots > TEMPEST_RING_MAX_SLOTS ||
        !is_power_of_2(slots) || !msg_shift_ok(ring, shift)) {
        return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_SIZE);
    }
    if (base & (tempest_nc_ring_slot_size(&want, ring) - 1)) {
        return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_ALIGN);
    }
    size = slots * tempest_nc_ring_slot_size(&want, ring);
    if (!tempest_nc_in_ram(s, base, size)) {
        return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_ADDR);
    }
    for (unsigned i = 0; i < TEMPEST_NUM_RINGS; i++) {
        TempestRing *o = &s->ring[i];
        uint64_t osize = (uint64_t)o->slots *
                         tempest_nc_ring_slot_size(o, i);

        if (i != ring && o->slots && base < o->base + osize &&
            o->base < base + size) {
            return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_OVERLAP);
        }
    }
    if (ring == TEMPEST_RING_RQ) {
        tempest_nc_rq_close(s);     /* peers stop writing into the old one */
    }
    s->ring[ring].base = base;
    s->ring[ring].slots = slots;
    s->ring[ring].idx = 0;
    s->ring[ring].shift = shift;
    if (ring <= TEMPEST_RING_SQ1) {
        s->sq_wait[ring] = -1;
        s->sq_hold_since[ring] = 0;
    } else if (ring == TEMPEST_RING_RQ) {
        msg_rq_open(s);
        msg_rq_deliver(s);
    } else {
        tempest_nc_cq_deliver(s);
    }
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t msg_cmd_timer_arm(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t ticks = b->arg[0];
    uint32_t id;

    if (ticks > TEMPEST_TIMER_MAX_TICKS) {
        return tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_TICKS);
    }
    if (!tempest_nc_timer_arm(s, ticks, b->arg[1], b->arg[2], &id)) {
        return TEMPEST_CMD_RETRY;
    }
    b->result = id;
    return TEMPEST_CMD_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static const TempestNCCommand msg_commands[] = {
    { TEMPEST_CMD_RING_SETUP, msg_cmd_ring_setup },
    { TEMPEST_CMD_TIMER_ARM, msg_cmd_timer_arm },
    { 0, NULL }
};

static const TempestNCHooks msg_hooks = {
    .name = "msg",
    .commands = msg_commands,
    .packet = msg_fabric_packet,
    .credit = msg_fabric_credit,
    .peer_down = msg_peer_down,
    .retry = msg_rq_deliver,
    .rq_moved = msg_fabric_rq_moved,
};

static void msg_drop_packets(TempestNCState *s)
{
    TempestInPacket *p;

    for (int net = 0; net < 2; net++) {
        while ((p = QTAILQ_FIRST(&s->inq[net]))) {
            QTAILQ_REMOVE(&s->inq[net], p, next);
            in_packet_free(p);
        }
    }
}

static bool msg_realize(TempestNCState *s, Error **errp)
{
    QTAILQ_INIT(&s->inq[0]);
    QTAILQ_INIT(&s->inq[1]);
    s->sq_wait[0] = s->sq_wait[1] = -1;
    s->sq_bh = qemu_bh_new(msg_sq_bh, s);
    s->sq_hold_timer = timer_new_ns(QEMU_CLOCK_REALTIME, msg_sq_bh, s);
    s->sq_credit_timer = timer_new_ms(QEMU_CLOCK_REALTIME, msg_sq_credit_look,
                                      s);
    s->msg_vmse = qemu_add_vm_change_state_handler(msg_vm_state, s);
    s->hold_off = bitmap_new(s->num_nodes);
    s->tx_pkt = g_malloc(TEMPEST_PKT_MAX_SIZE);
    tempest_nc_register(s, &msg_hooks);
    s->rq_idle_prepare = msg_rq_idle_prepare;
    s->rq_idle_woken = msg_rq_idle_woken;
    return true;
}

static void msg_unrealize(TempestNCState *s)
{
    tempest_nc_rq_close(s);
    msg_drop_packets(s);
    g_clear_pointer(&s->sq_bh, qemu_bh_delete);
    g_clear_pointer(&s->sq_hold_timer, timer_free);
    g_clear_pointer(&s->sq_credit_timer, timer_free);
    g_clear_pointer(&s->msg_vmse, qemu_del_vm_change_state_handler);
    g_clear_pointer(&s->hold_off, g_free);
    g_clear_pointer(&s->tx_pkt, g_free);
    msg_sq_uncache(s, TEMPEST_RING_SQ0);
    msg_sq_uncache(s, TEMPEST_RING_SQ1);
}

/*
 * Reset forgets the rings and the statistics.  The packets already
 * received stay: they still hold their senders' credit and reach the
 * guest once it sets up an RQ again.
 */
static void msg_reset(TempestNCState *s)
{
    tempest_nc_rq_close(s);
    memset(s->ring, 0, sizeof(s->ring));
    s->sq_wait[0] = s->sq_wait[1] = -1;
    timer_del(s->sq_hold_timer);
    timer_del(s->sq_credit_timer);
    s->sq_wait_credit[0] = s->sq_wait_credit[1] = false;
    s->credit_found = 0;
    s->sq_hold_ns = s->sq_hold_since[0] = s->sq_hold_since[1] = 0;
    bitmap_zero(s->hold_off, s->num_nodes);
    s->tx_packets = s->rx_packets = s->send_errors = s->tx_stalls = 0;
    s->rx_peers = 0;
    s->rx_woken = 0;
    if (s->poll_hint) {
        tempest_nc_poll_hint(s, 0);
    }
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

/*
 * A node alone in its cluster migrates (see the blocker in
 * tempest-nc-ckpt.c): every packet waiting here came from itself, through
 * the fabric's loopback.  At a cluster's checkpoint they come from any
 * node and stay as they are (the fabric's credit counts are saved too).
 */
static int in_packet_pre_load(void *opaque)
{
    ((TempestInPacket *)opaque)->data = NULL;
    return 0;
}

/* A length checked before its bytes are taken (and the buffer made). */
static bool in_packet_len_ok(void *opaque, int version_id)
{
    TempestInPacket *p = opaque;

    return p->len >= TEMPEST_PKT_DATA && p->len <= TEMPEST_PKT_MAX_SIZE;
}

/*
 * Version 2 (node controller 1.11): a packet is as long as its slot was,
 * up to TEMPEST_PKT_MAX_SIZE bytes, and carries only those.
 */
static const VMStateDescription vmstate_tempest_in_packet = {
    .name = TYPE_TEMPEST_NC "/in-packet",
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_load = in_packet_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(src, TempestInPacket),
        VMSTATE_UINT32(net, TempestInPacket),
        VMSTATE_UINT32(seq, TempestInPacket),
        VMSTATE_UINT32(len, TempestInPacket),
        VMSTATE_VALIDATE("in-packet length", in_packet_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(data, TempestInPacket, 0, NULL, len),
        VMSTATE_END_OF_LIST()
    }
};

static bool msg_vmstate_needed(void *opaque)
{
    TempestNCState *s = opaque;

    return !QTAILQ_EMPTY(&s->inq[0]) || !QTAILQ_EMPTY(&s->inq[1]) ||
           !QTAILQ_EMPTY(&s->evq) || s->sq_wait[0] >= 0 || s->sq_wait[1] >= 0;
}

/*
 * Packets waiting for room in the RQ go through the loopback again, so
 * that they hold their credit in this QEMU's fabric (and take its
 * sequence numbers); they reach the RQ once the VM runs.  The events
 * (the core's queue, in this subsection since version 1) are checked by
 * the core.
 */
static int msg_vmstate_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;
    QTAILQ_HEAD(, TempestInPacket) loaded[2];
    TempestInPacket *p;
    int ret = 0;

    for (int i = 0; i < 2; i++) {
        if (s->sq_wait[i] < -1 || s->sq_wait[i] >= (int)s->num_nodes) {
            ret = -EINVAL;
        }
    }
    if (s->ckpt_loaded) {
        /*
         * A cluster's checkpoint: the packets stay where they were, from
         * any node; the fabric's counts were loaded with their credit.
         */
        for (int net = 0; net < 2; net++) {
            QTAILQ_FOREACH(p, &s->inq[net], next) {
                if (p->src >= s->num_nodes || p->net != net ||
                    p->len < TEMPEST_PKT_DATA ||
                    p->len > TEMPEST_PKT_MAX_SIZE) {
                    ret = -EINVAL;
                }
            }
        }
        return ret;
    }
    for (int net = 0; net < 2; net++) {
        QTAILQ_INIT(&loaded[net]);
        while ((p = QTAILQ_FIRST(&s->inq[net]))) {
            QTAILQ_REMOVE(&s->inq[net], p, next);
            QTAILQ_INSERT_TAIL(&loaded[net], p, next);
        }
    }
    s->rq_hold = true;
    for (int net = 0; net < 2; net++) {
        while ((p = QTAILQ_FIRST(&loaded[net]))) {
            QTAILQ_REMOVE(&loaded[net], p, next);
            if (!ret && (p->src != s->node_id || p->net != net ||
                         p->len < TEMPEST_PKT_DATA ||
                         p->len > TEMPEST_PKT_MAX_SIZE ||
                         !tempest_fabric_can_send(s->fabric, p->src, net))) {
                ret = -EINVAL;      /* not from us, or more than our credit */
            }
            if (!ret) {
                tempest_fabric_send(s->fabric, p->src, net, p->data, p->len);
            }
            in_packet_free(p);
        }
    }
    s->rq_hold = false;
    return ret;
}

const VMStateDescription vmstate_tempest_nc_msg = {
    .name = TYPE_TEMPEST_NC "/msg",
    .version_id = 2,
    .minimum_version_id = 2,
    .needed = msg_vmstate_needed,
    .post_load = msg_vmstate_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_QTAILQ_V(inq[TEMPEST_NET_REQUEST], TempestNCState, 2,
                         vmstate_tempest_in_packet, TempestInPacket, next),
        VMSTATE_QTAILQ_V(inq[TEMPEST_NET_REPLY], TempestNCState, 2,
                         vmstate_tempest_in_packet, TempestInPacket, next),
        VMSTATE_QTAILQ_V(evq, TempestNCState, 1, vmstate_tempest_nc_event,
                         TempestEvent, next),
        VMSTATE_INT32_ARRAY(sq_wait, TempestNCState, 2),
        VMSTATE_END_OF_LIST()
    }
};

static bool poll_hint_needed(void *opaque)
{
    return ((TempestNCState *)opaque)->poll_hint != 0;
}

/* The word is named again to the fabric, checked as a guest write is. */
static int poll_hint_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;

    tempest_nc_poll_hint(s, s->poll_hint);
    return 0;
}

const VMStateDescription vmstate_tempest_nc_poll_hint = {
    .name = TYPE_TEMPEST_NC "/poll-hint",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = poll_hint_needed,
    .post_load = poll_hint_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(poll_hint, TempestNCState),
        VMSTATE_END_OF_LIST()
    }
};

static bool slots_needed(void *opaque)
{
    TempestNCState *s = opaque;

    for (int i = 0; i < TEMPEST_NUM_RINGS; i++) {
        if (s->ring[i].shift) {
            return true;
        }
    }
    return false;
}

/* (1.11) The rings' slot sizes, when one is not the default. */
const VMStateDescription vmstate_tempest_nc_slots = {
    .name = TYPE_TEMPEST_NC "/slots",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = slots_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(ring[TEMPEST_RING_SQ0].shift, TempestNCState),
        VMSTATE_UINT32(ring[TEMPEST_RING_SQ1].shift, TempestNCState),
        VMSTATE_UINT32(ring[TEMPEST_RING_RQ].shift, TempestNCState),
        VMSTATE_UINT32(ring[TEMPEST_RING_CQ].shift, TempestNCState),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * After the whole device state is in: the rings must be ones RING_SETUP
 * would take (the load never widens what DMA sees); look at the queues
 * again once the VM runs.
 */
static int msg_post_load(TempestNCState *s)
{
    for (int i = 0; i < TEMPEST_NUM_RINGS; i++) {
        TempestRing *r = &s->ring[i];

        if (!msg_shift_ok(i, r->shift)) {
            return -EINVAL;
        }
        if (r->slots && (!is_power_of_2(r->slots) ||
                         r->slots < TEMPEST_RING_MIN_SLOTS ||
                         r->slots > TEMPEST_RING_MAX_SLOTS ||
                         !tempest_nc_in_ram(s, r->base, (uint64_t)r->slots *
                                            tempest_nc_ring_slot_size(r, i)))) {
            return -EINVAL;
        }
    }
    if (!QTAILQ_EMPTY(&s->inq[0]) || !QTAILQ_EMPTY(&s->inq[1])) {
        tempest_nc_arm_retry(s);
    }
    if (s->sq_wait[0] >= 0 || s->sq_wait[1] >= 0) {
        qemu_bh_schedule(s->sq_bh);
    }
    return 0;
}

const TempestNCEngine tempest_nc_msg_engine = {
    .name = "msg",
    .realize = msg_realize,
    .unrealize = msg_unrealize,
    .reset = msg_reset,
    .post_load = msg_post_load,
};
