/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: messaging after SP Active Messages, timers and
 * the command bank.
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
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "exec/address-spaces.h"
#include "hw/core/cpu.h"
#include "hw/irq.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "hw/tempest/tempest-nc.h"
#include "trace.h"

/* Control events kept while the CQ is full, beyond the armed timers. */
#define TEMPEST_EVQ_MAX     (TEMPEST_NC_MAX_TIMERS + 4 * TEMPEST_MAX_NODES)
#define TEMPEST_RETRY_MS    1

static const uint32_t ring_slot_size[TEMPEST_NUM_RINGS] = {
    [TEMPEST_RING_SQ0] = TEMPEST_PKT_SIZE,
    [TEMPEST_RING_SQ1] = TEMPEST_PKT_SIZE,
    [TEMPEST_RING_RQ] = TEMPEST_PKT_SIZE,
    [TEMPEST_RING_CQ] = TEMPEST_EV_SIZE,
};

static uint64_t ring_slot(const TempestRing *r, unsigned ring)
{
    return r->base + (uint64_t)(r->idx & (r->slots - 1)) * ring_slot_size[ring];
}

static bool dma_read(uint64_t addr, void *buf, size_t len)
{
    return address_space_read(&address_space_memory, addr,
                              MEMTXATTRS_UNSPECIFIED, buf, len) == MEMTX_OK;
}

static bool dma_write(uint64_t addr, const void *buf, size_t len)
{
    return address_space_write(&address_space_memory, addr,
                               MEMTXATTRS_UNSPECIFIED, buf, len) == MEMTX_OK;
}

/* Publish a slot: its body first, then (ordered after it) its CTL word. */
static bool dma_publish(uint64_t addr, const uint8_t *slot, size_t len)
{
    if (!dma_write(addr + 4, slot + 4, len - 4)) {
        return false;
    }
    /*
     * The guest must not see VALID before the body: pairs with the
     * guest's load-acquire of CTL.
     */
    smp_wmb();
    return dma_write(addr, slot, 4);
}

void tempest_nc_update_irq(TempestNCState *s)
{
    qemu_set_irq(s->irq, (s->irq_status & s->irq_enable) != 0);
}

void tempest_nc_raise(TempestNCState *s, uint32_t bits)
{
    s->irq_status |= bits;
    tempest_nc_update_irq(s);
}

uint32_t tempest_nc_fabric_state(TempestNCState *s)
{
    return tempest_fabric_state(s->fabric);
}

uint32_t tempest_nc_peers_up(TempestNCState *s)
{
    return tempest_fabric_peers_up(s->fabric);
}

/* ------------------------------------------------------------------ */
/* Control events (CQ)                                                 */
/* ------------------------------------------------------------------ */

static void nc_arm_retry(TempestNCState *s)
{
    if (!timer_pending(s->retry_timer)) {
        timer_mod(s->retry_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + TEMPEST_RETRY_MS);
    }
}

/* Move waiting events into the CQ while it has room. */
static void nc_cq_deliver(TempestNCState *s)
{
    TempestRing *r = &s->ring[TEMPEST_RING_CQ];
    TempestEvent *e;
    bool moved = false;

    while (r->slots && (e = QTAILQ_FIRST(&s->evq))) {
        uint64_t addr = ring_slot(r, TEMPEST_RING_CQ);
        uint8_t slot[TEMPEST_EV_SIZE];
        uint32_t ctl;

        if (!dma_read(addr, &ctl, 4)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        if (ctl) {
            nc_arm_retry(s);
            break;
        }
        stl_le_p(slot + TEMPEST_EV_CTL, TEMPEST_EV_VALID | e->type);
        stl_le_p(slot + TEMPEST_EV_NODE, e->node);
        stq_le_p(slot + TEMPEST_EV_A, e->a);
        stq_le_p(slot + TEMPEST_EV_B, e->b);
        stq_le_p(slot + TEMPEST_EV_C, e->c);
        if (!dma_publish(addr, slot, sizeof(slot))) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        trace_tempest_nc_event(s->node_id, e->type, e->node, e->a, e->b);
        r->idx++;
        QTAILQ_REMOVE(&s->evq, e, next);
        s->evq_len--;
        g_free(e);
        moved = true;
    }
    if (moved) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_CQ);
    }
}

void tempest_nc_post_event(TempestNCState *s, uint32_t type, uint32_t node,
                           uint64_t a, uint64_t b, uint64_t c)
{
    TempestEvent *e;

    if (s->evq_len >= TEMPEST_EVQ_MAX) {
        /* Only errors can pile up this far; the counters still show them. */
        trace_tempest_nc_event_lost(s->node_id, type, node);
        return;
    }
    e = g_new0(TempestEvent, 1);
    e->type = type;
    e->node = node;
    e->a = a;
    e->b = b;
    e->c = c;
    QTAILQ_INSERT_TAIL(&s->evq, e, next);
    s->evq_len++;
    nc_cq_deliver(s);
}

/* ------------------------------------------------------------------ */
/* Arriving packets (RQ)                                               */
/* ------------------------------------------------------------------ */

/*
 * Move waiting packets into the RQ, reply network first, while it has
 * room; each one moved gives its sender back one credit.
 */
static void nc_rq_deliver(TempestNCState *s)
{
    TempestRing *r = &s->ring[TEMPEST_RING_RQ];
    bool moved = false;

    while (r->slots) {
        TempestInPacket *p = QTAILQ_FIRST(&s->inq[TEMPEST_NET_REPLY]);
        unsigned net = TEMPEST_NET_REPLY;
        uint64_t addr = ring_slot(r, TEMPEST_RING_RQ);
        uint32_t ctl;

        if (!p) {
            p = QTAILQ_FIRST(&s->inq[TEMPEST_NET_REQUEST]);
            net = TEMPEST_NET_REQUEST;
        }
        if (!p) {
            break;
        }
        if (!dma_read(addr, &ctl, 4)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        if (ctl) {
            nc_arm_retry(s);
            break;
        }
        stw_le_p(p->data + TEMPEST_PKT_NODE, p->src);
        p->data[TEMPEST_PKT_NET] = net;
        stl_le_p(p->data + TEMPEST_PKT_SEQ, p->seq);
        stl_le_p(p->data + TEMPEST_PKT_CTL,
                 TEMPEST_PKT_VALID | (p->len - TEMPEST_PKT_DATA));
        if (!dma_publish(addr, p->data, p->len)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        trace_tempest_nc_rx(s->node_id, p->src, net, p->seq,
                            p->len - TEMPEST_PKT_DATA, r->idx);
        r->idx++;
        s->rx_packets++;
        QTAILQ_REMOVE(&s->inq[net], p, next);
        tempest_fabric_return_credits(s->fabric, p->src, net, 1);
        g_free(p);
        moved = true;
    }
    if (moved) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_RQ);
    }
}

static void nc_fabric_packet(void *opaque, unsigned peer, unsigned net,
                             uint32_t seq, const uint8_t *pkt, size_t len)
{
    TempestNCState *s = opaque;
    TempestInPacket *p = g_new(TempestInPacket, 1);

    p->src = peer;
    p->net = net;
    p->seq = seq;
    p->len = len;
    memcpy(p->data, pkt, len);
    QTAILQ_INSERT_TAIL(&s->inq[net], p, next);
    if (!s->rq_hold) {
        nc_rq_deliver(s);
    }
}

void tempest_nc_rq_doorbell(TempestNCState *s)
{
    nc_rq_deliver(s);
    nc_cq_deliver(s);
}

/* The RQ or CQ was full: look again, as a doorbell would make us. */
static void nc_retry(void *opaque)
{
    tempest_nc_rq_doorbell(opaque);
}

/* ------------------------------------------------------------------ */
/* Sending (SQ0, SQ1)                                                  */
/* ------------------------------------------------------------------ */

static void nc_send_error(TempestNCState *s, unsigned ring, uint32_t slot,
                          uint32_t dest, uint32_t code)
{
    s->send_errors++;
    tempest_nc_guest_error(s, code, slot, 0);
    tempest_nc_post_event(s, TEMPEST_EV_SEND_ERROR, dest, slot, code, ring);
}

/* Send what the guest put in send ring 'ring' (= its network). */
static void nc_sq_run(TempestNCState *s, unsigned ring)
{
    TempestRing *r = &s->ring[ring];
    bool was_waiting = s->sq_wait[ring] >= 0;
    uint32_t sent = 0;

    s->sq_wait[ring] = -1;
    for (uint32_t n = 0; n < r->slots; n++) {
        uint64_t addr = ring_slot(r, ring);
        uint8_t pkt[TEMPEST_PKT_SIZE];
        uint32_t ctl, len, dest, code = 0, zero = 0;

        if (!dma_read(addr, pkt, TEMPEST_PKT_DATA)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            return;
        }
        ctl = ldl_le_p(pkt + TEMPEST_PKT_CTL);
        if (!(ctl & TEMPEST_PKT_VALID)) {
            break;
        }
        len = ctl & TEMPEST_PKT_LEN_MASK;
        dest = lduw_le_p(pkt + TEMPEST_PKT_NODE);
        if (len > TEMPEST_PKT_PAYLOAD) {
            code = TEMPEST_NC_ERR_BAD_LEN;
        } else if (dest >= s->num_nodes) {
            code = TEMPEST_NC_ERR_BAD_DEST;
        } else if (!tempest_fabric_peer_up(s->fabric, dest)) {
            code = TEMPEST_NC_ERR_PEER_DOWN;
        } else if (!tempest_fabric_can_send(s->fabric, dest, ring)) {
            s->sq_wait[ring] = dest;
            s->tx_stalls++;
            trace_tempest_nc_sq_stall(s->node_id, ring, dest, r->idx);
            break;
        }
        if (code) {
            trace_tempest_nc_send_error(s->node_id, ring, r->idx, dest, code);
            nc_send_error(s, ring, r->idx, dest, code);
        } else {
            if (len && !dma_read(addr + TEMPEST_PKT_DATA,
                                 pkt + TEMPEST_PKT_DATA, len)) {
                tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
                return;
            }
            trace_tempest_nc_tx(s->node_id, ring, r->idx, dest, len);
            s->tx_packets++;
            sent++;
            tempest_fabric_send(s->fabric, dest, ring, pkt,
                                TEMPEST_PKT_DATA + len);
        }
        /* The slot is the guest's again. */
        if (!dma_write(addr, &zero, 4)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            return;
        }
        r->idx++;
    }
    if (was_waiting && sent) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_SQ);
    }
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
    nc_sq_run(s, value);
}

static void nc_sq_bh(void *opaque)
{
    TempestNCState *s = opaque;

    for (unsigned ring = TEMPEST_RING_SQ0; ring <= TEMPEST_RING_SQ1; ring++) {
        if (s->sq_wait[ring] >= 0 && s->ring[ring].slots) {
            nc_sq_run(s, ring);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Fabric callbacks                                                    */
/* ------------------------------------------------------------------ */

static void nc_fabric_credit(void *opaque, unsigned peer, unsigned net)
{
    TempestNCState *s = opaque;

    if (s->sq_wait[net] == (int)peer) {
        qemu_bh_schedule(s->sq_bh);
    }
}

static void nc_fabric_peer_down(void *opaque, unsigned peer, bool exited,
                                uint32_t status)
{
    TempestNCState *s = opaque;

    s->peers_down++;
    tempest_nc_post_event(s, TEMPEST_EV_PEER_DOWN, peer, exited ? 0 : 1,
                          status, 0);
    tempest_nc_coll_peer_down(s);
    tempest_nc_xfer_peer_down(s, peer);
    /* A send ring waiting for this peer's credit fails those slots now. */
    if (s->sq_wait[0] == (int)peer || s->sq_wait[1] == (int)peer) {
        qemu_bh_schedule(s->sq_bh);
    }
}

static void nc_fabric_state(void *opaque, int state)
{
    TempestNCState *s = opaque;

    tempest_nc_raise(s, TEMPEST_NC_IRQ_FABRIC);
}

static void nc_fabric_coll(void *opaque, unsigned peer, const uint8_t *body,
                           size_t len)
{
    tempest_nc_coll_frame(opaque, peer, body, len);
}

static void nc_fabric_xfer(void *opaque, unsigned peer, const uint8_t *body,
                           size_t len)
{
    tempest_nc_xfer_frame(opaque, peer, body, len);
}

static void nc_fabric_tx_drained(void *opaque, unsigned peer)
{
    tempest_nc_xfer_drained(opaque, peer);
}

static void nc_fabric_dropped(void *opaque, int peer, const char *why)
{
    TempestNCState *s = opaque;

    s->dropped++;
}

static const TempestFabricOps nc_fabric_ops = {
    .packet = nc_fabric_packet,
    .credit = nc_fabric_credit,
    .peer_down = nc_fabric_peer_down,
    .state = nc_fabric_state,
    .coll = nc_fabric_coll,
    .xfer = nc_fabric_xfer,
    .tx_drained = nc_fabric_tx_drained,
    .dropped = nc_fabric_dropped,
};

/* ------------------------------------------------------------------ */
/* Timers                                                              */
/* ------------------------------------------------------------------ */

static void nc_timer_schedule(TempestNCState *s)
{
    uint64_t next = UINT64_MAX;

    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS; i++) {
        if (s->timer[i].armed && s->timer[i].deadline_ns < next) {
            next = s->timer[i].deadline_ns;
        }
    }
    if (next == UINT64_MAX) {
        timer_del(s->tick_timer);
    } else {
        timer_mod(s->tick_timer, next);
    }
}

/* Fire every timer due, earliest first, equal deadlines in arm order. */
static void nc_timer_fire(void *opaque)
{
    TempestNCState *s = opaque;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    for (;;) {
        TempestTimer *t = NULL;

        for (int i = 0; i < TEMPEST_NC_MAX_TIMERS; i++) {
            TempestTimer *c = &s->timer[i];

            if (c->armed && c->deadline_ns <= now &&
                (!t || c->deadline_ns < t->deadline_ns ||
                 (c->deadline_ns == t->deadline_ns && c->order < t->order))) {
                t = c;
            }
        }
        if (!t) {
            break;
        }
        t->armed = 0;
        trace_tempest_nc_timer_fire(s->node_id, t->id);
        tempest_nc_post_event(s, TEMPEST_EV_TIMER, s->node_id, t->a, t->b,
                              t->id);
    }
    nc_timer_schedule(s);
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

static uint32_t nc_fail(TempestCmdBank *b, uint32_t reason)
{
    b->reason = reason;
    return TEMPEST_CMD_FAIL;
}

static uint32_t nc_cmd_ring_setup(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t ring = b->arg[0], base = b->arg[1], slots = b->arg[2];
    uint64_t size;

    if (ring >= TEMPEST_NUM_RINGS) {
        return nc_fail(b, TEMPEST_CMD_E_BAD_RING);
    }
    if (slots < TEMPEST_RING_MIN_SLOTS || slots > TEMPEST_RING_MAX_SLOTS ||
        !is_power_of_2(slots)) {
        return nc_fail(b, TEMPEST_CMD_E_BAD_SIZE);
    }
    if (base & (ring_slot_size[ring] - 1)) {
        return nc_fail(b, TEMPEST_CMD_E_BAD_ALIGN);
    }
    size = slots * ring_slot_size[ring];
    if (!tempest_nc_in_ram(s, base, size)) {
        return nc_fail(b, TEMPEST_CMD_E_BAD_ADDR);
    }
    for (unsigned i = 0; i < TEMPEST_NUM_RINGS; i++) {
        TempestRing *o = &s->ring[i];
        uint64_t osize = (uint64_t)o->slots * ring_slot_size[i];

        if (i != ring && o->slots && base < o->base + osize &&
            o->base < base + size) {
            return nc_fail(b, TEMPEST_CMD_E_OVERLAP);
        }
    }
    s->ring[ring].base = base;
    s->ring[ring].slots = slots;
    s->ring[ring].idx = 0;
    if (ring <= TEMPEST_RING_SQ1) {
        s->sq_wait[ring] = -1;
    } else if (ring == TEMPEST_RING_RQ) {
        nc_rq_deliver(s);
    } else {
        nc_cq_deliver(s);
    }
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t nc_cmd_timer_arm(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t ticks = b->arg[0];
    TempestTimer *t = NULL;

    if (ticks > TEMPEST_TIMER_MAX_TICKS) {
        return nc_fail(b, TEMPEST_CMD_E_BAD_TICKS);
    }
    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS && !t; i++) {
        if (!s->timer[i].armed) {
            t = &s->timer[i];
            t->id = (++s->timer_gen << 8) | i;
        }
    }
    if (!t) {
        return TEMPEST_CMD_RETRY;
    }
    t->armed = 1;
    t->deadline_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                     ticks * TEMPEST_TICK_NS;
    t->order = s->timer_order++;
    t->a = b->arg[1];
    t->b = b->arg[2];
    b->result = t->id;
    nc_timer_schedule(s);
    return TEMPEST_CMD_SUCCESS;
}

/* FLASH's final read: validate, then act; nothing happened before. */
uint32_t tempest_nc_commit(TempestNCState *s, TempestCmdBank *b)
{
    uint32_t status;

    b->reason = TEMPEST_CMD_E_NONE;
    b->result = 0;
    switch (b->op) {
    case TEMPEST_CMD_RING_SETUP:
        status = nc_cmd_ring_setup(s, b);
        break;
    case TEMPEST_CMD_TIMER_ARM:
        status = nc_cmd_timer_arm(s, b);
        break;
    case TEMPEST_CMD_COLL_START:
        status = tempest_nc_coll_start(s, b);
        break;
    case TEMPEST_CMD_BCAST:
        status = tempest_nc_bcast(s, b);
        break;
    case TEMPEST_CMD_TAG_SET:
        status = tempest_nc_tag_set(s, b);
        break;
    case TEMPEST_CMD_TAG_GET:
        status = tempest_nc_tag_get(s, b);
        break;
    case TEMPEST_CMD_XFER:
        status = tempest_nc_xfer_start(s, b);
        break;
    case TEMPEST_CMD_BUF_POST:
        status = tempest_nc_buf_post(s, b);
        break;
    case TEMPEST_CMD_FOP:
        status = tempest_nc_fop(s, b);
        break;
    default:
        status = nc_fail(b, TEMPEST_CMD_E_BAD_OP);
        break;
    }
    trace_tempest_nc_command(s->node_id, b->op, b->arg[0], b->arg[1],
                             status, b->reason);
    if (status == TEMPEST_CMD_FAIL) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: node %u: command %u failed, "
                      "reason %u\n", TYPE_TEMPEST_NC, s->node_id, b->op,
                      b->reason);
    }
    return status;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static void nc_drop_queues(TempestNCState *s)
{
    TempestEvent *e;

    while ((e = QTAILQ_FIRST(&s->evq))) {
        QTAILQ_REMOVE(&s->evq, e, next);
        g_free(e);
    }
    s->evq_len = 0;
}

static void nc_drop_packets(TempestNCState *s)
{
    TempestInPacket *p;

    for (int net = 0; net < 2; net++) {
        while ((p = QTAILQ_FIRST(&s->inq[net]))) {
            QTAILQ_REMOVE(&s->inq[net], p, next);
            g_free(p);
        }
    }
}

/* Free what realize made; safe on a half-made state (and twice). */
static void nc_msg_free(TempestNCState *s)
{
    migrate_del_blocker(&s->migration_blocker);
    if (s->fabric && s->fabric == s->fabric_backend) {
        tempest_fabric_detach(s->fabric);   /* the user's object stays */
    } else {
        tempest_fabric_free(s->fabric);
    }
    s->fabric = NULL;
    nc_drop_queues(s);
    nc_drop_packets(s);
    g_clear_pointer(&s->tick_timer, timer_free);
    g_clear_pointer(&s->retry_timer, timer_free);
    g_clear_pointer(&s->sq_bh, qemu_bh_delete);
    tempest_nc_coll_reset(s);
    if (s->xfer_bh) {
        tempest_nc_xfer_free(s);
    }
    g_clear_pointer(&s->aor_bits, g_free);
}

bool tempest_nc_msg_realize(TempestNCState *s, Error **errp)
{
    QTAILQ_INIT(&s->inq[0]);
    QTAILQ_INIT(&s->inq[1]);
    QTAILQ_INIT(&s->evq);
    QSIMPLEQ_INIT(&s->bcastq);
    s->aor_bits = g_new0(bool, s->num_nodes);
    s->sq_wait[0] = s->sq_wait[1] = -1;
    s->tick_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, nc_timer_fire, s);
    s->retry_timer = timer_new_ms(QEMU_CLOCK_REALTIME, nc_retry, s);
    s->sq_bh = qemu_bh_new(nc_sq_bh, s);
    tempest_nc_xfer_init(s);

    if (s->fabric_backend) {
        /* A backend made with -object: its view of the cluster is ours. */
        TempestFabric *fb = s->fabric_backend;

        if (fb->node != s->node_id || fb->nodes != s->num_nodes) {
            error_setg(errp, "fabric-backend: its node-id %u of %u is not "
                       "this node's %u of %u", fb->node, fb->nodes,
                       s->node_id, s->num_nodes);
            goto fail;
        }
        if (!tempest_fabric_attach(fb, &nc_fabric_ops, s, errp)) {
            goto fail;
        }
        s->fabric = fb;
    } else {
        s->fabric = tempest_fabric_new(s->fabric_spec, s->cluster_id,
                                       s->node_id, s->num_nodes, s->credits,
                                       s->fabric_timeout_ms, &nc_fabric_ops,
                                       s, errp);
    }
    if (!s->fabric) {
        goto fail;
    }
    if (!s->fabric_backend && s->fabric_key && *s->fabric_key &&
        !tempest_fabric_set_key(s->fabric, s->fabric_key, errp)) {
        goto fail;
    }
    if (s->num_nodes > 1) {
        error_setg(&s->migration_blocker, "%s: node %u is joined to %u "
                   "other nodes by live sockets: the connections, and the "
                   "packets, transfers, fetch-and-ops and collectives under "
                   "way with those nodes, cannot migrate", TYPE_TEMPEST_NC,
                   s->node_id, s->num_nodes - 1);
        if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
            goto fail;
        }
    }
    return true;

fail:
    nc_msg_free(s);
    return false;
}

void tempest_nc_msg_unrealize(TempestNCState *s)
{
    nc_msg_free(s);
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

/*
 * Only a node alone in its cluster migrates (see the blocker above): every
 * packet waiting here came from itself, through the fabric's loopback.
 */
static const VMStateDescription vmstate_tempest_in_packet = {
    .name = TYPE_TEMPEST_NC "/in-packet",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(src, TempestInPacket),
        VMSTATE_UINT32(net, TempestInPacket),
        VMSTATE_UINT32(seq, TempestInPacket),
        VMSTATE_UINT32(len, TempestInPacket),
        VMSTATE_UINT8_ARRAY(data, TempestInPacket, TEMPEST_PKT_SIZE),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_event = {
    .name = TYPE_TEMPEST_NC "/event",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(type, TempestEvent),
        VMSTATE_UINT32(node, TempestEvent),
        VMSTATE_UINT64(a, TempestEvent),
        VMSTATE_UINT64(b, TempestEvent),
        VMSTATE_UINT64(c, TempestEvent),
        VMSTATE_END_OF_LIST()
    }
};

static bool nc_msg_needed(void *opaque)
{
    TempestNCState *s = opaque;

    return !QTAILQ_EMPTY(&s->inq[0]) || !QTAILQ_EMPTY(&s->inq[1]) ||
           !QTAILQ_EMPTY(&s->evq) || s->sq_wait[0] >= 0 || s->sq_wait[1] >= 0;
}

/*
 * Packets waiting for room in the RQ go through the loopback again, so
 * that they hold their credit in this QEMU's fabric (and take its
 * sequence numbers); they reach the RQ once the VM runs.
 */
static int nc_msg_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;
    QTAILQ_HEAD(, TempestInPacket) loaded[2];
    TempestInPacket *p;
    TempestEvent *e;
    int ret = 0;

    s->evq_len = 0;
    QTAILQ_FOREACH(e, &s->evq, next) {
        s->evq_len++;
    }
    if (s->evq_len > TEMPEST_EVQ_MAX) {
        ret = -EINVAL;
    }
    for (int i = 0; i < 2; i++) {
        if (s->sq_wait[i] < -1 || s->sq_wait[i] >= (int)s->num_nodes) {
            ret = -EINVAL;
        }
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
                         p->len > TEMPEST_PKT_SIZE ||
                         !tempest_fabric_can_send(s->fabric, p->src, net))) {
                ret = -EINVAL;      /* not from us, or more than our credit */
            }
            if (!ret) {
                tempest_fabric_send(s->fabric, p->src, net, p->data, p->len);
            }
            g_free(p);
        }
    }
    s->rq_hold = false;
    return ret;
}

const VMStateDescription vmstate_tempest_nc_msg = {
    .name = TYPE_TEMPEST_NC "/msg",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = nc_msg_needed,
    .post_load = nc_msg_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_QTAILQ_V(inq[TEMPEST_NET_REQUEST], TempestNCState, 1,
                         vmstate_tempest_in_packet, TempestInPacket, next),
        VMSTATE_QTAILQ_V(inq[TEMPEST_NET_REPLY], TempestNCState, 1,
                         vmstate_tempest_in_packet, TempestInPacket, next),
        VMSTATE_QTAILQ_V(evq, TempestNCState, 1, vmstate_tempest_event,
                         TempestEvent, next),
        VMSTATE_INT32_ARRAY(sq_wait, TempestNCState, 2),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * After the main section (and the subsections) are in: check the timers,
 * arm the next one, and look at the queues again once the VM runs.
 */
int tempest_nc_msg_post_load(TempestNCState *s)
{
    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS; i++) {
        TempestTimer *t = &s->timer[i];

        if (t->armed > 1 || (t->armed && (t->id & 0xff) != i)) {
            return -EINVAL;
        }
    }
    nc_timer_schedule(s);
    if (!QTAILQ_EMPTY(&s->evq) || !QTAILQ_EMPTY(&s->inq[0]) ||
        !QTAILQ_EMPTY(&s->inq[1])) {
        nc_arm_retry(s);
    }
    if (s->sq_wait[0] >= 0 || s->sq_wait[1] >= 0) {
        qemu_bh_schedule(s->sq_bh);
    }
    return 0;
}

/*
 * Reset forgets the rings, timers, pending events and statistics.  The
 * fabric and the packets already received stay: they still hold their
 * senders' credit and reach the guest once it sets up an RQ again.
 */
void tempest_nc_msg_reset(TempestNCState *s)
{
    memset(s->ring, 0, sizeof(s->ring));
    memset(s->bank, 0, sizeof(s->bank));
    memset(s->timer, 0, sizeof(s->timer));
    nc_drop_queues(s);
    s->sq_wait[0] = s->sq_wait[1] = -1;
    s->irq_status = s->irq_enable = 0;
    s->tx_packets = s->rx_packets = s->send_errors = s->tx_stalls = 0;
    tempest_nc_coll_reset(s);
    tempest_nc_xfer_reset(s);
    if (s->tick_timer) {
        timer_del(s->tick_timer);
    }
    tempest_nc_update_irq(s);
}
