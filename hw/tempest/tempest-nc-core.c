/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the services every engine uses, and nothing
 * that calls an engine by name (tempest-nc-internal.h).
 *
 * The interrupt line and IRQ_STATUS; guest errors (ERR_STATUS, the log,
 * the trace); the node's RAM range; DMA through the device's own
 * AddressSpace over the MemoryRegion the board links in ("memory"); the
 * control-event queue and its delivery into the guest's CQ; the guest's
 * timers; the table of commands and fabric callbacks the engines
 * register; and the fabric attachment, whose ops table is composed from
 * those callbacks.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/irq.h"
#include "exec/cpu-common.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "trace.h"

/* Control events kept while the CQ is full, beyond the armed timers. */
#define TEMPEST_EVQ_MAX     (TEMPEST_NC_MAX_TIMERS + 4 * TEMPEST_MAX_NODES)
#define TEMPEST_RETRY_MS    1

static const char *const tempest_nc_err_names[] = {
    [TEMPEST_NC_ERR_NONE] = "none",
    [TEMPEST_NC_ERR_BAD_OFFSET] = "no register at this offset",
    [TEMPEST_NC_ERR_BAD_SIZE] = "bad access size or alignment",
    [TEMPEST_NC_ERR_READ_ONLY] = "write to a read-only register",
    [TEMPEST_NC_ERR_WRITE_ONLY] = "read of a write-only register",
    [TEMPEST_NC_ERR_BAD_DEST] = "send to a node not in the cluster",
    [TEMPEST_NC_ERR_BAD_LEN] = "send slot longer than a packet",
    [TEMPEST_NC_ERR_PEER_DOWN] = "send to a node that is gone",
    [TEMPEST_NC_ERR_NO_RING] = "doorbell for a ring not set up",
    [TEMPEST_NC_ERR_BAD_VALUE] = "value out of range",
    [TEMPEST_NC_ERR_DMA] = "ring memory could not be accessed",
    [TEMPEST_NC_ERR_TAG_REFUSED] = "tag upgrade refused",
    [TEMPEST_NC_ERR_BAD_RANGE] = "gather or RQ_COPY range refused",
};

/* ------------------------------------------------------------------ */
/* Interrupt, guest errors, RAM, DMA                                   */
/* ------------------------------------------------------------------ */

void tempest_nc_update_irq(TempestNCState *s)
{
    qemu_set_irq(s->irq, (s->irq_status & s->irq_enable) != 0);
}

void tempest_nc_raise(TempestNCState *s, uint32_t bits)
{
    s->irq_status |= bits;
    tempest_nc_update_irq(s);
}

void tempest_nc_lower(TempestNCState *s, uint32_t bits)
{
    s->irq_status &= ~bits;
    tempest_nc_update_irq(s);
}

/*
 * The guest reads it back from ERR_STATUS/ERR_INFO, a person sees it with
 * -d guest_errors or the trace event.
 */
void tempest_nc_guest_error(TempestNCState *s, uint32_t code, uint64_t info,
                            unsigned size)
{
    s->err_status = code;
    s->err_info = info;
    s->err_count++;
    trace_tempest_nc_error(s->node_id, code, info, size);
    qemu_log_mask(LOG_GUEST_ERROR,
                  "%s: node %u: %s (0x%" PRIx64 ", size %u)\n",
                  TYPE_TEMPEST_NC, s->node_id, tempest_nc_err_names[code],
                  info, size);
}

bool tempest_nc_in_ram(TempestNCState *s, uint64_t addr, uint64_t len)
{
    uint64_t end = s->ram_base + s->ram_size;

    return len && addr >= s->ram_base && addr < end && len <= end - addr;
}

bool tempest_nc_dma_read(TempestNCState *s, uint64_t addr, void *buf,
                         size_t len)
{
    return address_space_read(s->dma_as, addr, MEMTXATTRS_UNSPECIFIED, buf,
                              len) == MEMTX_OK;
}

bool tempest_nc_dma_write(TempestNCState *s, uint64_t addr, const void *buf,
                          size_t len)
{
    return address_space_write(s->dma_as, addr, MEMTXATTRS_UNSPECIFIED, buf,
                               len) == MEMTX_OK;
}

/*
 * A ring slot's CTL word, in one 32-bit store.  Not by
 * tempest_nc_dma_write(): address_space_write() copies with memmove(),
 * which writes a 4-byte word twice (glibc: its last four bytes, then its
 * first four), and a guest that saw the first store could take the slot
 * before the second: in the CQ, the guest's pop (CTL 0) was undone and
 * the slot read again a lap later, its event then missing (the
 * chan-hw-both-4 stall, docs/chan.rst); in an SQ, a claim undone.
 */
bool tempest_nc_dma_store_ctl(TempestNCState *s, uint64_t addr,
                              uint32_t value)
{
    MemTxResult res;

    address_space_stl_le(s->dma_as, addr, value, MEMTXATTRS_UNSPECIFIED,
                         &res);
    return res == MEMTX_OK;
}

bool tempest_nc_dma_publish(TempestNCState *s, uint64_t addr,
                            const uint8_t *slot, size_t len)
{
    if (!tempest_nc_dma_write(s, addr + 4, slot + 4, len - 4)) {
        return false;
    }
    /*
     * The guest must not see VALID before the body: pairs with the
     * guest's load-acquire of CTL.
     */
    smp_wmb();
    return tempest_nc_dma_store_ctl(s, addr, ldl_le_p(slot));
}

/* ------------------------------------------------------------------ */
/* Control events (CQ)                                                 */
/* ------------------------------------------------------------------ */

void tempest_nc_arm_retry(TempestNCState *s)
{
    if (!timer_pending(s->retry_timer)) {
        timer_mod(s->retry_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + TEMPEST_RETRY_MS);
    }
}

void tempest_nc_cq_deliver(TempestNCState *s)
{
    TempestRing *r = &s->ring[TEMPEST_RING_CQ];
    TempestEvent *e;
    bool moved = false;

    while (r->slots && (e = QTAILQ_FIRST(&s->evq))) {
        uint64_t addr = tempest_nc_ring_slot(r, TEMPEST_RING_CQ);
        uint8_t slot[TEMPEST_EV_SIZE];
        uint32_t ctl;

        if (!tempest_nc_dma_read(s, addr, &ctl, 4)) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_DMA, addr, 4);
            break;
        }
        if (ctl) {
            tempest_nc_arm_retry(s);
            break;
        }
        stl_le_p(slot + TEMPEST_EV_CTL, TEMPEST_EV_VALID | e->type);
        stl_le_p(slot + TEMPEST_EV_NODE, e->node);
        stq_le_p(slot + TEMPEST_EV_A, e->a);
        stq_le_p(slot + TEMPEST_EV_B, e->b);
        stq_le_p(slot + TEMPEST_EV_C, e->c);
        if (!tempest_nc_dma_publish(s, addr, slot, sizeof(slot))) {
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
    tempest_nc_cq_deliver(s);
}

static void nc_drop_events(TempestNCState *s)
{
    TempestEvent *e;

    while ((e = QTAILQ_FIRST(&s->evq))) {
        QTAILQ_REMOVE(&s->evq, e, next);
        g_free(e);
    }
    s->evq_len = 0;
}

/*
 * The RQ or CQ was full: every engine looks again, then the CQ.  Not
 * while the VM is stopped (the retry is due, and nc_vm_state arms it
 * again at cont): a packet moved from the queue into the RQ gives its
 * sender a credit back, and at a restore's load that credit (a CREDIT
 * frame once 8 are owed) could reach a peer still loading, whose load
 * then lost it.
 */
static void nc_retry(void *opaque)
{
    TempestNCState *s = opaque;

    if (!runstate_is_running()) {
        s->retry_due = true;
        return;
    }
    s->retry_due = false;
    for (unsigned i = 0; i < s->nhooks; i++) {
        if (s->hooks[i]->retry) {
            s->hooks[i]->retry(s);
        }
    }
    tempest_nc_cq_deliver(s);
}

/* Running again: a retry that fell while stopped is armed again. */
static void nc_vm_state(void *opaque, bool running, RunState state)
{
    TempestNCState *s = opaque;

    if (running && s->retry_due) {
        tempest_nc_arm_retry(s);
    }
}

const VMStateDescription vmstate_tempest_nc_event = {
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

bool tempest_nc_timer_arm(TempestNCState *s, uint64_t ticks, uint64_t a,
                          uint64_t b, uint32_t *id)
{
    TempestTimer *t = NULL;

    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS && !t; i++) {
        if (!s->timer[i].armed) {
            t = &s->timer[i];
            t->id = (++s->timer_gen << 8) | i;
        }
    }
    if (!t) {
        return false;
    }
    t->armed = 1;
    t->deadline_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                     ticks * TEMPEST_TICK_NS;
    t->order = s->timer_order++;
    t->a = a;
    t->b = b;
    *id = t->id;
    nc_timer_schedule(s);
    return true;
}

/* ------------------------------------------------------------------ */
/* What the engines register                                           */
/* ------------------------------------------------------------------ */

#define NC_TAKE_OP(field)                                                   \
    do {                                                                    \
        if (h->field) {                                                     \
            assert(!s->fabric_ops.field);                                   \
            s->fabric_ops.field = h->field;                                 \
        }                                                                   \
    } while (0)

void tempest_nc_register(TempestNCState *s, const TempestNCHooks *h)
{
    assert(s->nhooks < TEMPEST_NC_MAX_ENGINES && !s->fabric);
    s->hooks[s->nhooks++] = h;
    for (const TempestNCCommand *c = h->commands; c && c->fn; c++) {
        assert(c->op < TEMPEST_NC_NUM_OPS && !s->cmd[c->op]);
        s->cmd[c->op] = c->fn;
    }
    NC_TAKE_OP(packet);
    NC_TAKE_OP(credit);
    NC_TAKE_OP(coll);
    NC_TAKE_OP(xfer);
    NC_TAKE_OP(chan);
    NC_TAKE_OP(tx_drained);
    NC_TAKE_OP(rq_moved);
}

/* ------------------------------------------------------------------ */
/* The fabric                                                          */
/* ------------------------------------------------------------------ */

static void nc_fabric_peer_down(void *opaque, unsigned peer, bool exited,
                                uint32_t status)
{
    TempestNCState *s = opaque;

    s->peers_down++;
    tempest_nc_post_event(s, TEMPEST_EV_PEER_DOWN, peer, exited ? 0 : 1,
                          status, 0);
    for (unsigned i = 0; i < s->nhooks; i++) {
        if (s->hooks[i]->peer_down) {
            s->hooks[i]->peer_down(s, peer);
        }
    }
}

static void nc_fabric_state(void *opaque, int state)
{
    TempestNCState *s = opaque;

    tempest_nc_raise(s, TEMPEST_NC_IRQ_FABRIC);
}

static void nc_fabric_dropped(void *opaque, int peer, const char *why)
{
    TempestNCState *s = opaque;

    s->dropped++;
    /* For a stopped node's report (tempest-nc-dump.c): a static string. */
    s->last_drop = why;
    s->last_drop_peer = peer;
}

/*
 * The guest's RAM is a shared memfd (memory-backend-memfd,share=on, as
 * scripts/tempest run makes it): peers on this host may map it.
 */
static void nc_share_ram(TempestNCState *s)
{
    int fd = s->ram_mr ? memory_region_get_fd(s->ram_mr) : -1;

    if (fd >= 0 && s->ram_mr->ram_block &&
        qemu_ram_is_shared(s->ram_mr->ram_block)) {
        tempest_fabric_share_ram(s->fabric, fd,
                                 memory_region_get_ram_ptr(s->ram_mr),
                                 s->ram_base, memory_region_size(s->ram_mr));
    }
}

/* The guest's EXIT waited for frames to new links: end the node now. */
static void nc_fabric_bye_done(void *opaque, uint32_t status)
{
    qemu_system_shutdown_request_with_code(SHUTDOWN_CAUSE_GUEST_SHUTDOWN,
                                           status);
}

bool tempest_nc_fabric_attach(TempestNCState *s, Error **errp)
{
    TempestFabricLocal local;
    TempestFabric *f;

    s->fabric_ops.bye_done = nc_fabric_bye_done;
    s->fabric_ops.peer_down = nc_fabric_peer_down;
    s->fabric_ops.state = nc_fabric_state;
    s->fabric_ops.dropped = nc_fabric_dropped;
    /* Every engine is in: each kind of frame has its taker. */
    assert(s->fabric_ops.packet && s->fabric_ops.credit &&
           s->fabric_ops.coll && s->fabric_ops.xfer &&
           s->fabric_ops.tx_drained);

    if (s->fabric_backend) {
        /* A backend made with -object: its view of the cluster is ours. */
        f = s->fabric_backend;
        if (f->node != s->node_id || f->nodes != s->num_nodes) {
            error_setg(errp, "fabric-backend: its node-id %u of %u is not "
                       "this node's %u of %u", f->node, f->nodes,
                       s->node_id, s->num_nodes);
            return false;
        }
        if (!tempest_fabric_attach(f, &s->fabric_ops, s, errp)) {
            return false;
        }
        s->fabric = f;
        nc_share_ram(s);
        return true;
    }
    local = (TempestFabricLocal) {
        .host_id = s->fabric_host_id, .shm_dir = s->fabric_shm_dir,
    };
    if (s->fabric_shm && *s->fabric_shm) {
        if (!strcmp(s->fabric_shm, "off")) {
            local.tcp_only = true;
        } else if (strcmp(s->fabric_shm, "auto")) {
            error_setg(errp, "fabric-shm must be auto or off, not '%s'",
                       s->fabric_shm);
            return false;
        }
    }
    f = tempest_fabric_new(s->fabric_spec, &local, s->cluster_id,
                           s->fabric_key,
                           s->node_id, s->num_nodes, s->credits,
                           s->fabric_timeout_ms, &s->fabric_ops, s, errp);
    if (!f) {
        return false;
    }
    s->fabric = f;
    nc_share_ram(s);
    return true;
}

void tempest_nc_fabric_detach(TempestNCState *s)
{
    if (s->fabric && s->fabric == s->fabric_backend) {
        tempest_fabric_detach(s->fabric);   /* the user's object stays */
    } else {
        tempest_fabric_free(s->fabric);
    }
    s->fabric = NULL;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

bool tempest_nc_core_realize(TempestNCState *s, Error **errp)
{
    if (!s->dma_mr) {
        error_setg(errp, "%s: the 'memory' link is not set", TYPE_TEMPEST_NC);
        return false;
    }
    /*
     * On the heap: its destruction runs after an RCU grace period, which
     * must not find a realize of this same device using it again.
     */
    s->dma_as = g_new0(AddressSpace, 1);
    address_space_init(s->dma_as, s->dma_mr, TYPE_TEMPEST_NC "-dma");
    QTAILQ_INIT(&s->evq);
    s->evq_len = 0;
    s->tick_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, nc_timer_fire, s);
    s->retry_timer = timer_new_ms(QEMU_CLOCK_REALTIME, nc_retry, s);
    s->retry_due = false;
    s->core_vmse = qemu_add_vm_change_state_handler(nc_vm_state, s);
    return true;
}

/* Undo tempest_nc_core_realize (after the fabric and the engines). */
void tempest_nc_core_unrealize(TempestNCState *s)
{
    nc_drop_events(s);
    g_clear_pointer(&s->core_vmse, qemu_del_vm_change_state_handler);
    g_clear_pointer(&s->tick_timer, timer_free);
    g_clear_pointer(&s->retry_timer, timer_free);
    memset(s->cmd, 0, sizeof(s->cmd));
    memset(s->hooks, 0, sizeof(s->hooks));
    s->nhooks = 0;
    memset(&s->fabric_ops, 0, sizeof(s->fabric_ops));
    if (s->dma_as) {
        address_space_destroy_free(s->dma_as);
        s->dma_as = NULL;
    }
}

/* Errors, the interrupt, the timers and the pending events. */
void tempest_nc_core_reset(TempestNCState *s)
{
    s->err_status = TEMPEST_NC_ERR_NONE;
    s->err_info = 0;
    s->err_count = 0;
    s->peers_down = 0;
    s->dropped = 0;
    s->retry_due = false;
    s->last_drop = NULL;
    s->irq_status = s->irq_enable = 0;
    memset(s->timer, 0, sizeof(s->timer));
    if (s->tick_timer) {
        timer_del(s->tick_timer);
    }
    nc_drop_events(s);
}

int tempest_nc_core_post_load(TempestNCState *s)
{
    TempestEvent *e;

    if (s->err_status >= ARRAY_SIZE(tempest_nc_err_names)) {
        return -EINVAL;
    }
    s->evq_len = 0;
    QTAILQ_FOREACH(e, &s->evq, next) {
        s->evq_len++;
    }
    if (s->evq_len > TEMPEST_EVQ_MAX) {
        return -EINVAL;
    }
    for (int i = 0; i < TEMPEST_NC_MAX_TIMERS; i++) {
        TempestTimer *t = &s->timer[i];

        if (t->armed > 1 || (t->armed && (t->id & 0xff) != i)) {
            return -EINVAL;
        }
    }
    nc_timer_schedule(s);
    if (!QTAILQ_EMPTY(&s->evq)) {
        tempest_nc_arm_retry(s);
    }
    return 0;
}
