/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The receive queue that peers on this host write straight into
 * (rq-lock.h; docs/fabric.rst, "Straight into the receiver's RQ").
 *
 * Receiver: the node controller opens its RQ (its place goes into this
 * node's line of the combining area, the lock is let go) and from then
 * on takes the lock for each write of its own; peers holding it make
 * those wait (the device retries them), never the other way round.  The
 * tail peers reached is read at every POLL, doorbell and BELL
 * (ops->rq_moved).  A writer's packets on each network are counted in its
 * side of the link, and added to its expected sequence number before a
 * frame of it is checked.
 *
 * Writer: a packet goes straight in only when nothing of ours for that
 * peer is on its way (the ring empty, nothing queued, all credit back),
 * so order per (source, network) holds; else it goes through the ring as
 * always.
 *
 * Dead and stuck writers: a link that closes with its peer holding our
 * lock is finished from the slot and the peer's record (rq_resolve()); a
 * peer found holding it at the same tail for the fabric's timeout (at
 * least RQ_STUCK_MS) loses its link (it is then a dead writer), and so
 * does one that holds it longer than RQ_CLOSE_WAIT_MS when the RQ must
 * close.  Not less than the fabric's timeout: a writer's QEMU thread
 * that the host does not run for seconds (hundreds of nodes on two
 * cores) is alive and lets go when it runs; dropping it loses the
 * packets it and this node send each other.  A writer that dies closes
 * its link, which resolves the lock at once.
 */

#include "qemu/osdep.h"
#ifdef CONFIG_LINUX
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/tempest/tempest-fabric.h"
#include "tempest-fabric-internal.h"
#include "coll-area.h"
#include "fabric-ring.h"
#include "rq-lock.h"
#include "standard-headers/tempest/tempest-hw.h"
#include "trace.h"

#define RQ_CLOSE_WAIT_MS    20
#define RQ_STUCK_MS         2000

QEMU_BUILD_BUG_ON(COLL_AREA_N_RQ + sizeof(RqLine) > COLL_AREA_NODE);
QEMU_BUILD_BUG_ON(COLL_AREA_N_RQ % 8);
QEMU_BUILD_BUG_ON(FABRIC_LINK_H_RQ + 2 * sizeof(RqRecord) > FABRIC_LINK_HDR);
QEMU_BUILD_BUG_ON(RQ_VALID != TEMPEST_PKT_VALID);
QEMU_BUILD_BUG_ON(RQ_BUSY & (TEMPEST_PKT_VALID | TEMPEST_PKT_LEN_MASK));


static void rq_futex_wake(RqLine *l)
{
#ifdef CONFIG_LINUX
    /* Shared (no FUTEX_PRIVATE_FLAG): the sleeper is another process. */
    syscall(SYS_futex, rq_tail_word(l), FUTEX_WAKE, 1, NULL, NULL, 0);
#endif
}

/* Our own RQ slot t's CTL, in our RAM, by what we published. */
static uint32_t *rq_own_ctl(FabricSocket *f, uint32_t t)
{
    TempestFabric *tf = &f->parent_obj;
    uint64_t addr = f->rq_base +
                    (uint64_t)(t & (f->rq_slots - 1)) * f->rq_slot_size;

    if (!tf->ram_host || !f->rq_slots || addr < tf->ram_base ||
        addr - tf->ram_base > tf->ram_size - 4) {
        return NULL;
    }
    return (uint32_t *)((uint8_t *)tf->ram_host + (addr - tf->ram_base));
}

/*
 * The lock as found in seen is held by a peer that writes no more (its
 * link closed, or we closed it): finish its slot and put the word at
 * new_holder1 (0: free, or us + 1) with the tail it reached.  False if
 * the word changed meanwhile.
 */
static bool rq_finish(FabricSocket *f, RqLine *l, uint64_t seen,
                      RqRecord *rec, uint32_t new_holder1, uint32_t *tail)
{
    RqRecord none = { 0 };
    uint32_t t = rq_tail(seen), *ctl = rq_own_ctl(f, t);

    if (ctl) {
        t = rq_resolve(ctl, rec ? rec : &none, t,
                       f->rq_slot_size - TEMPEST_PKT_DATA);
    }
    if (!rq_swap(l, seen, rq_word(new_holder1, t))) {
        return false;
    }
    f->rq_broken++;
    trace_tempest_fabric_rq_finish(f->node, rq_holder1(seen) - 1,
                                   rq_tail(seen), t);
    *tail = t;
    return true;
}

/*
 * The peer that holds the lock (seen) holds on too long: its link closes
 * (it is reported gone) and the lock is ours, its slot finished.
 */
static bool rq_break(FabricSocket *f, RqLine *l, uint64_t seen,
                     const char *why, uint32_t *tail)
{
    unsigned h = rq_holder1(seen) - 1;
    FabricConn *c = h < f->nodes && h != f->node ? f->peers[h].conn : NULL;

    if (c && !c->broken) {
        f->up->drop(f, h, why);
        c->broken = true;
        c->broken_why = why;
        qemu_bh_schedule(f->close_bh);
    }
    return rq_finish(f, l, seen, c ? fabric_shm_rq_record(c, false) : NULL,
                     f->node + 1, tail);
}

/* ------------------------------------------------------------------ */
/* The receiver                                                        */
/* ------------------------------------------------------------------ */

static bool rq_open(TempestFabric *obj, uint64_t base, uint32_t slots,
                    uint32_t slot_size, uint32_t tail)
{
    FabricSocket *f = SOCK(obj);
    RqLine *l = fabric_rq_line(f, f->node);
    uint32_t t;

    if (f->rq_open) {
        return true;
    }
    if (!l || !obj->ram_host || !slots || (slots & (slots - 1)) ||
        slot_size < TEMPEST_PKT_DATA) {
        return false;
    }
    /*
     * Never opened (the area's first state, free with no slots: a peer
     * that takes it lets go at once), or closed by us.
     */
    if (!f->rq_held && !rq_take(l, f->node, &t, NULL)) {
        return false;
    }
    f->rq_held = false;
    f->rq_base = base;
    f->rq_slots = slots;
    f->rq_slot_size = slot_size;
    __atomic_store_n(&l->base, base, __ATOMIC_RELAXED);
    __atomic_store_n(&l->slot_size, slot_size, __ATOMIC_RELAXED);
    __atomic_store_n(&l->slots, slots, __ATOMIC_RELAXED);
    f->rq_open = true;
    __atomic_store_n(&l->lock, rq_word(0, tail), __ATOMIC_RELEASE);
    trace_tempest_fabric_rq_open(f->node, base, slots, slot_size, tail);
    return true;
}

static bool rq_close(TempestFabric *obj, uint32_t *tail)
{
    FabricSocket *f = SOCK(obj);
    RqLine *l = fabric_rq_line(f, f->node);
    int64_t until;
    uint64_t seen;

    if (!f->rq_open) {
        return false;
    }
    until = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + RQ_CLOSE_WAIT_MS;
    while (!f->rq_held && !rq_take(l, f->node, tail, &seen)) {
        if (qemu_clock_get_ms(QEMU_CLOCK_REALTIME) >= until) {
            if (rq_break(f, l, seen, "held our RQ's lock while it closed",
                         tail)) {
                break;
            }
            continue;       /* it moved meanwhile: look again */
        }
        sched_yield();
    }
    if (f->rq_held) {
        *tail = rq_tail(rq_load(l));
    }
    f->rq_held = true;
    f->rq_open = false;
    f->rq_stuck_ms = 0;
    __atomic_store_n(&l->slots, 0, __ATOMIC_RELAXED);
    trace_tempest_fabric_rq_close(f->node, *tail);
    return true;
}

static int rq_take_own(TempestFabric *obj, uint32_t *tail)
{
    FabricSocket *f = SOCK(obj);
    RqLine *l = fabric_rq_line(f, f->node);
    int64_t now;
    uint64_t seen;

    if (!f->rq_open) {
        return 0;
    }
    if (rq_take(l, f->node, tail, &seen)) {
        f->rq_held = true;
        f->rq_stuck_ms = 0;
        return 1;
    }
    /* A writer in the middle of a write; one that never ends loses it. */
    now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    if (!f->rq_stuck_ms || seen != f->rq_stuck_word) {
        f->rq_stuck_word = seen;
        f->rq_stuck_ms = now;
    } else if (now - f->rq_stuck_ms >=
               MAX(RQ_STUCK_MS, f->parent_obj.timeout_ms) &&
               rq_break(f, l, seen, "held our RQ's lock for seconds",
                        tail)) {
        f->rq_held = true;
        f->rq_stuck_ms = 0;
        return 1;
    }
    return -1;
}

static void rq_give_own(TempestFabric *obj, uint32_t tail)
{
    FabricSocket *f = SOCK(obj);

    if (f->rq_open && f->rq_held) {
        f->rq_held = false;
        __atomic_store_n(&fabric_rq_line(f, f->node)->lock, rq_word(0, tail),
                         __ATOMIC_RELEASE);
    }
}

static bool rq_tail_now(TempestFabric *obj, uint32_t *tail)
{
    FabricSocket *f = SOCK(obj);

    if (!f->rq_open) {
        return false;
    }
    *tail = rq_tail(rq_load(fabric_rq_line(f, f->node)));
    return true;
}

/* Our vCPU's sleep on the tail (rq-lock.h: rq_sleep_begin, rq_sleeper). */
static uint32_t *rq_sleep(TempestFabric *obj, bool on, uint32_t *tail)
{
    FabricSocket *f = SOCK(obj);
    RqLine *l = fabric_rq_line(f, f->node);

    if (!l || (on && !f->rq_open)) {
        return NULL;
    }
    if (!on) {
        rq_sleep_end(l);
        return NULL;
    }
    *tail = rq_sleep_begin(l);
    return rq_tail_word(l);
}

/* Our guest reads its RQ's slots itself while it polls (rq-lock.h). */
static void rq_peeks_own(TempestFabric *obj, bool on)
{
    fabric_rq_peeks(SOCK(obj), on);
}

void fabric_rq_link_gone(FabricConn *c)
{
    FabricSocket *f = c->fab;
    RqLine *l = fabric_rq_line(f, f->node);
    uint64_t w;
    uint32_t t;

    if (!f->rq_open || !c->shm || c->peer < 0) {
        return;
    }
    w = rq_load(l);
    if (rq_holder1(w) == (uint32_t)c->peer + 1) {
        rq_finish(f, l, w, fabric_shm_rq_record(c, false), 0, &t);
    }
}

void fabric_rq_absorb(FabricConn *c)
{
    RqRecord *rec = fabric_shm_rq_record(c, false);
    FabricPeer *p;

    if (!rec || c->peer < 0) {
        return;
    }
    p = &c->fab->peers[c->peer];
    for (unsigned net = 0; net < 2; net++) {
        uint32_t d = __atomic_load_n(&rec->direct[net], __ATOMIC_ACQUIRE);

        if (d != c->direct_seen[net]) {
            p->seq_in[net] += d - c->direct_seen[net];
            c->direct_seen[net] = d;
        }
    }
}

void fabric_rq_absorb_all(FabricSocket *f)
{
    for (unsigned i = 0; f->peers && i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->shm) {
            fabric_rq_absorb(c);
        }
    }
}

/* ------------------------------------------------------------------ */
/* The writer                                                          */
/* ------------------------------------------------------------------ */

static uint8_t *rq_direct_begin(TempestFabric *obj, unsigned peer,
                                unsigned net, size_t len, uint32_t *seq,
                                bool *full)
{
    FabricSocket *f = SOCK(obj);
    FabricPeer *p;
    FabricConn *c;
    RqLine *l = fabric_rq_line(f, peer);
    uint64_t rbase, rsize, base, addr;
    uint32_t t, slots, size;
    uint8_t *ram;

    if (!l || peer == f->node || net > 1) {
        return NULL;
    }
    p = &f->peers[peer];
    c = p->conn;
    if (!c || !fabric_shm_tx_idle(c)) {
        return NULL;
    }
    ram = fabric_shm_peer_ram(c, &rbase, &rsize);
    if (!ram) {
        return NULL;
    }
    /* Nothing of ours on this network still waits in its device. */
    if (p->credit[net] != f->credits) {
        fabric_shm_take_credit(f, peer, net, false);
        if (p->credit[net] != f->credits) {
            return NULL;
        }
    }
    if (!rq_take(l, f->node, &t, NULL)) {
        return NULL;
    }
    /* Its place, written before it let go: untrusted all the same. */
    base = __atomic_load_n(&l->base, __ATOMIC_RELAXED);
    slots = __atomic_load_n(&l->slots, __ATOMIC_RELAXED);
    size = __atomic_load_n(&l->slot_size, __ATOMIC_RELAXED);
    addr = base + (uint64_t)(t & (slots - 1)) * size;
    if (!slots || (slots & (slots - 1)) || size < len || addr < base ||
        addr & 3 || addr < rbase || addr - rbase > rsize ||
        rsize - (addr - rbase) < len) {
        /* Closed or too small. */
        rq_swap(l, rq_word(f->node + 1, t), rq_word(0, t));
        return NULL;
    }
    if (!rq_claim((uint32_t *)(ram + (addr - rbase)))) {
        /* Full: its slot t not freed yet. */
        *full = true;
        f->rq_full++;
        rq_swap(l, rq_word(f->node + 1, t), rq_word(0, t));
        return NULL;
    }
    f->rq_w_peer = peer;
    f->rq_w_tail = t;
    f->rq_w_ctl = (uint32_t *)(ram + (addr - rbase));
    *seq = p->seq_out[net];
    return ram + (addr - rbase);
}

static void rq_direct_end(TempestFabric *obj, unsigned peer, unsigned net,
                          uint32_t ctl)
{
    FabricSocket *f = SOCK(obj);
    FabricConn *c = f->peers[peer].conn;
    RqLine *l = fabric_rq_line(f, peer);
    uint32_t t = f->rq_w_tail;

    assert(peer == f->rq_w_peer && f->rq_w_ctl);
    if (!ctl) {
        rq_unclaim(f->rq_w_ctl);
        rq_swap(l, rq_word(f->node + 1, t), rq_word(0, t));
    } else {
        rq_complete(fabric_shm_rq_record(c, true), f->rq_w_ctl, t, ctl, net);
        /* (Fails only if the receiver broke our hold: it finished it.) */
        rq_swap(l, rq_word(f->node + 1, t), rq_word(0, t + 1));
        trace_tempest_fabric_rq_direct(f->node, peer, net,
                                       f->peers[peer].seq_out[net], t);
        f->peers[peer].seq_out[net]++;
        /*
         * Its vCPU sleeps on the tail: woken, it takes the packet.  Its
         * guest polls and reads the slots itself: it sees the packet with
         * no hint (a POLL's device access and the hint's cache line).
         */
        if (rq_sleeper(l)) {
            rq_futex_wake(l);
            f->rq_wakes++;
        } else if (rq_peeks(l)) {
            f->rq_unpoked++;
        } else {
            fabric_shm_direct_published(c);
        }
    }
    f->rq_w_ctl = NULL;
}

void fabric_rq_dump(FabricSocket *f, GString *out)
{
    RqLine *l = fabric_rq_line(f, f->node);

    if (!l) {
        return;
    }
    g_string_append_printf(out, "  RQ to peers: open %d held %d lock "
                           "0x%016" PRIx64 " slots %u sleeper %u peeks %u, "
                           "locks broken %" PRIu64 ", peers woken %" PRIu64
                           ", packets to peers that looked %" PRIu64
                           ", found full %" PRIu64 "\n",
                           f->rq_open, f->rq_held, rq_load(l),
                           __atomic_load_n(&l->slots, __ATOMIC_RELAXED),
                           __atomic_load_n(&l->sleeper, __ATOMIC_RELAXED),
                           __atomic_load_n(&l->peeks, __ATOMIC_RELAXED),
                           f->rq_broken, f->rq_wakes, f->rq_unpoked,
                           f->rq_full);
}

void fabric_rq_class_init(ObjectClass *oc)
{
    TempestFabricClass *fc = TEMPEST_FABRIC_CLASS(oc);

    fc->rq_open = rq_open;
    fc->rq_close = rq_close;
    fc->rq_take = rq_take_own;
    fc->rq_give = rq_give_own;
    fc->rq_tail = rq_tail_now;
    fc->rq_sleep = rq_sleep;
    fc->rq_peeks = rq_peeks_own;
    fc->direct_begin = rq_direct_begin;
    fc->direct_end = rq_direct_end;
}
