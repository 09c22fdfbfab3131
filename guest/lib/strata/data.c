/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata: the data network (section 6), block transfers (section 7)
 * and multi-block transfers (section 8), on the device access layer's
 * rings (tempest/nc.h): SQ0 is the left network, SQ1 the right one.
 *
 * Packets (the 32-byte slot header, then the payload):
 *   active message  KIND_AM: WORD1 the handler, payload 4 x 64-bit args
 *   Xfer data       KIND_XFER: WORD0 port_and_offset, payload 1 to 56
 *                   32-bit words
 * The device has one receive ring for both networks.  Polling one
 * network moves the other network's packets it meets at the head of the
 * ring into a bounded software queue of that network (copies of the
 * slots), which that network's polls empty first; when that queue is full
 * the poll stops, and the ring (and so the senders) wait.
 *
 * strata_data_init() gives the core these polls (strata_set_poller), so
 * that every wait of the library (strata_wait) handles messages.
 *
 * Shared with libtempest (strata_shared): libtempest's protocol thread
 * takes the RQ and gives every Strata packet to sink(), which copies it
 * to the end of its network's software queue (never full: it grows as
 * libtempest's backlog does), so a poll takes only from those queues, in
 * order, and never touches the ring; the queues are locked (with IRQs
 * masked: on a one-vCPU node the protocol thread is an interrupt
 * handler).  Sends go through tempest_client_send(), under libtempest's
 * ring locks.  Nothing needs setting aside (stash) then: the protocol
 * thread keeps the ring moving whatever Strata's handlers do.
 */
#include <string.h>

#include "strata-internal.h"

#define KIND_AM             0x53    /* 'S' */
#define KIND_XFER           0x54
#define AM_BYTES            32
#define XFER_WORDS          (TEMPEST_PKT_PAYLOAD / 4)
#define SOFTQ_SLOTS         256     /* a power of 2 */
#define SOFTQ_MAX           65536   /* 1024 nodes x 64 credits */
#define MAX_ABX             4096    /* a power of 2 */
#define ABX_SLOT_MASK       (MAX_ABX - 1)
#define ABX_GEN_SHIFT       12
/*
 * Handlers deeper than this do not run from a send's polls: the send
 * sets arriving packets aside instead (stash()).
 */
#define MAX_NEST            16
/* Empty polls in a row before one short sleep, at least; and its length. */
#define IDLE_POLLS_MIN      64
#define IDLE_SLEEP_US       50

typedef void (*am_handler)(uint64_t, uint64_t, uint64_t, uint64_t);
typedef void (*port_handler)(int);

StrataPort StrataPortTable[STRATA_NUM_PORTS];
uint64_t strata_pkts_sent;
uint64_t strata_pkts_received;

struct softq {
    struct nc_pkt *pkts;
    uint32_t cap;           /* a power of 2: SOFTQ_SLOTS, doubled as needed */
    uint32_t head;
    uint32_t count;
};

static bool poll_nets(unsigned mask);
static bool msgs_waiting(unsigned mask);
static void sink(const struct nc_pkt *p);

static struct softq softq[2];
static uint32_t softq_lock;     /* strata_shared: the sink is another thread */
static uint64_t sink_dropped;   /* strata_shared: no memory for a packet */
static unsigned idle_polls;      /* empty polls in a row */
static bool polling;            /* the node controller was told (POLL) */
static unsigned poll_turn;       /* idle polls, for nc_poll_due() */

/* The networks a send tries, in order, and what it polls after each. */
struct send_mode {
    int8_t net[2];          /* -1: none */
    uint8_t poll[2];        /* POLL_* after trying net[i] */
};

static const struct send_mode mode_rl_both = {
    { NET_RIGHT, NET_LEFT }, { POLL_RIGHT, POLL_LEFT },
};
static const struct send_mode mode_lr_both = {
    { NET_LEFT, NET_RIGHT }, { POLL_LEFT, POLL_RIGHT },
};
static const struct send_mode mode_rl_right = {
    { NET_RIGHT, NET_LEFT }, { POLL_RIGHT, POLL_NONE },
};
static const struct send_mode mode_lr_right = {
    { NET_LEFT, NET_RIGHT }, { POLL_NONE, POLL_RIGHT },
};
static const struct send_mode mode_left_both = {
    { NET_LEFT, -1 }, { POLL_LEFT, POLL_RIGHT },
};

/* A pending asynchronous block transfer (section 8). */
struct abx {
    int proc;
    unsigned port;
    int offset;
    Word *buffer;
    int size;
    int sent;               /* words sent so far */
    void (*complete)(ABXid id, Word *buffer);
    uint32_t gen;
    bool used;
    bool busy;              /* being sent by an outer call */
    int next;               /* next pending slot in order, or -1 */
    int prev;
};

static struct abx *abx;
static int abx_head = -1;
static int abx_tail = -1;
static int abx_free_hint;
static int abx_pending;
static uint32_t abx_gen;
static uint32_t abx_version;    /* changes with every link and unlink */

void strata_data_init(void)
{
    unsigned i;

    for (i = 0; i < 2; i++) {
        softq[i].pkts = malloc(SOFTQ_SLOTS * sizeof(struct nc_pkt));
        softq[i].cap = SOFTQ_SLOTS;
        if (softq[i].pkts == NULL) {
            break;
        }
    }
    abx = calloc(MAX_ABX, sizeof(*abx));
    if (i < 2 || abx == NULL) {
        fprintf(stderr, "StrataFail: node %d: out of memory\n", Self);
        rt_exit(1);
    }
    strata_set_poller(poll_nets, msgs_waiting);
    strata_set_sink(sink);
}

static void check_proc(int proc, const char *call)
{
    if (proc < 0 || proc >= PartitionSize) {
        StrataFail("%s: node %d is not in the partition of %d", call, proc,
                   PartitionSize);
    }
}

/* ---- receiving ---------------------------------------------------------- */

static void report(const struct nc_pkt *p, const char *why)
{
    fprintf(stderr, "*** strata: node %d: packet from node %u (network "
            "%u, kind 0x%x, %u bytes) dropped: %s\n", Self, p->node, p->net,
            p->kind, (unsigned)(p->ctl & TEMPEST_PKT_LEN_MASK), why);
}

/* Subtracts words from a port's count; runs its handler at 0. */
static void port_arrived(unsigned port, int words)
{
    StrataPort *pt = &StrataPortTable[port];

#if STRATA_DEBUG_BUILD
    if (pt->count > 0 && pt->count < words) {
        StrataLog("port %u: %d words arrived, only %d expected", port,
                  words, pt->count);
    }
#endif
    pt->count -= words;
    if (pt->count == 0 && pt->handler) {
        ((port_handler)pt->handler)((int)port);
    }
}

/* Stores words at a port; false (and a report) if it cannot. */
static bool port_store(unsigned pao, const Word *data, int words,
                       const char *what)
{
    unsigned port = PortAndOffsetPort(pao);
    StrataPort *pt = &StrataPortTable[port];

    if (pt->base == NULL) {
        fprintf(stderr, "*** strata: node %d: %s of %d words for port %u, "
                "which has no base: dropped\n", Self, what, words, port);
        return false;
    }
    memcpy(pt->base + PortAndOffsetOffset(pao), data,
           (size_t)words * sizeof(Word));
    return true;
}

/*
 * Handles packet @p: @slot is the receive-ring slot it is in (freed here
 * before any handler runs) or NULL for a copy.
 */
static void dispatch(struct nc_pkt *p, struct nc_pkt *slot)
{
    uint32_t len = p->ctl & TEMPEST_PKT_LEN_MASK;
    uint64_t a[4];
    uintptr_t h;
    unsigned pao;
    bool ok = false;

    strata_pkts_received++;
    if (p->kind == KIND_AM && len == AM_BYTES) {
        h = (uintptr_t)p->word1;
        memcpy(a, p->data, sizeof(a));
        if (!rt_text_contains((const void *)h) || (h & 3)) {
            report(p, "its handler is outside the program's code");
            h = 0;
        }
        if (slot) {
            nc_rq_pop(slot);
        }
        if (h) {
            strata_handler_depth++;
            ((am_handler)h)(a[0], a[1], a[2], a[3]);
            strata_handler_depth--;
        }
        return;
    }
    if (p->kind == KIND_XFER && len && !(len & 3) && len <= 4 * XFER_WORDS) {
        pao = p->word0;
        ok = port_store(pao, (const Word *)p->data, (int)(len / 4),
                        "Xfer data");
        if (slot) {
            nc_rq_pop(slot);
        }
        if (ok) {
            strata_handler_depth++;
            port_arrived(PortAndOffsetPort(pao), (int)(len / 4));
            strata_handler_depth--;
        }
        return;
    }
    report(p, "not a Strata packet");
    if (slot) {
        nc_rq_pop(slot);
    }
}

/*
 * A program that idles in a polling loop would keep its vCPU's host thread
 * busy, and on a host with fewer cores than the cluster has threads that
 * delays the QEMU main loops that move its messages.  So after the spin
 * time's worth of empty polls in a row, one poll sleeps until the node
 * controller interrupts (a message, a control-network event) or
 * IDLE_SLEEP_US pass.  No handler runs meanwhile.
 */
/*
 * Counts one empty poll; true once a spin's worth have passed in a row,
 * with POLL = 0 written (about to sleep: peers ring the doorbell again).
 */
static bool idle_spin_over(void)
{
    unsigned limit = strata_spin_turns > IDLE_POLLS_MIN ? strata_spin_turns :
                     IDLE_POLLS_MIN;

    if (++idle_polls < limit) {
        return false;
    }
    idle_polls = 0;
    if (polling) {
        polling = false;
        nc_poll(false);
    }
    return true;
}

static void idle_poll(void)
{
    if (!idle_spin_over()) {
        return;
    }
    nc_irq_ack(STRATA_IRQ_BITS);
    if (nc_rq_peek() == NULL && nc_cq_peek() == NULL) {
        nc_rx_doorbell();
        rt_cpu_sleep(IDLE_SLEEP_US);
    }
}

/*
 * The other network's packets set aside fill their queue: double it.  A
 * full queue would leave this network's packets behind them in the
 * receive ring, unreachable, and a handler that waits to send a reply
 * while it polls only this network would wait for ever (15 peers may
 * each have their credit's worth in flight, more than 256).  Bounded by
 * SOFTQ_MAX: a poll holds at most every peer's credit per network; a
 * deep handler's stash() takes more only while its own send waits.
 */
static bool softq_grow(struct softq *q)
{
    uint32_t cap = q->cap * 2;
    struct nc_pkt *pkts;

    if (cap > SOFTQ_MAX && !strata_shared) {
        return false;
    }
    pkts = malloc(cap * sizeof(*pkts));
    if (pkts == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < q->count; i++) {
        pkts[i] = q->pkts[(q->head + i) & (q->cap - 1)];
    }
    free(q->pkts);
    q->pkts = pkts;
    q->cap = cap;
    q->head = 0;
    return true;
}

/*
 * Copies ring slot @p to the end of its network's software queue and
 * frees the slot; false if the queue is full and cannot grow.
 */
static bool set_aside(struct nc_pkt *p)
{
    struct softq *o = &softq[p->net & 1];
    size_t bytes = TEMPEST_PKT_DATA + (p->ctl & TEMPEST_PKT_LEN_MASK);

    if (o->count == o->cap && !softq_grow(o)) {
        return false;
    }
    memcpy(&o->pkts[(o->head + o->count) & (o->cap - 1)], p,
           bytes <= sizeof(*p) ? bytes : sizeof(*p));
    o->count++;
    nc_rq_pop(p);
    return true;
}

/* ---- shared with libtempest -------------------------------------------- */

static uint64_t softq_take_lock(void)
{
    uint64_t flags = rt_irq_save();

    while (__atomic_exchange_n(&softq_lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&softq_lock, __ATOMIC_RELAXED)) {
            __asm__ volatile("yield");
        }
    }
    return flags;
}

static void softq_drop_lock(uint64_t flags)
{
    __atomic_store_n(&softq_lock, 0, __ATOMIC_RELEASE);
    rt_irq_restore(flags);
}

/*
 * The protocol thread's hand-over (strata_set_sink): a copy of @p at the
 * end of its network's queue.  Only if the heap is exhausted is it
 * dropped, with a report.
 */
static void sink(const struct nc_pkt *p)
{
    struct softq *q = &softq[p->net & 1];
    size_t bytes = TEMPEST_PKT_DATA + (p->ctl & TEMPEST_PKT_LEN_MASK);
    uint64_t flags = softq_take_lock();
    bool ok = q->count < q->cap || softq_grow(q);

    if (ok) {
        memcpy(&q->pkts[(q->head + q->count) & (q->cap - 1)], p,
               bytes <= sizeof(*p) ? bytes : sizeof(*p));
        __atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELEASE);
    }
    softq_drop_lock(flags);
    if (!ok) {
        __atomic_fetch_add(&sink_dropped, 1, __ATOMIC_RELAXED);
        report(p, "no memory to queue it");
    }
}

/* Copies the first packet of network @net's queue out; false if none. */
static bool softq_pop_shared(unsigned net, struct nc_pkt *copy)
{
    struct softq *q = &softq[net];
    struct nc_pkt *p;
    size_t bytes;
    uint64_t flags;

    if (!__atomic_load_n(&q->count, __ATOMIC_ACQUIRE)) {
        return false;
    }
    flags = softq_take_lock();
    if (q->count == 0) {
        softq_drop_lock(flags);
        return false;
    }
    p = &q->pkts[q->head];
    bytes = TEMPEST_PKT_DATA + (p->ctl & TEMPEST_PKT_LEN_MASK);
    memcpy(copy, p, bytes <= sizeof(*copy) ? bytes : sizeof(*copy));
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
    softq_drop_lock(flags);
    return true;
}

/* A packet queued, or an interrupt taken since *@irqs (a uint32_t). */
static int softq_any(void *arg)
{
    return __atomic_load_n(&softq[NET_LEFT].count, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&softq[NET_RIGHT].count, __ATOMIC_ACQUIRE) ||
           strata_shared_irqs() != *(uint32_t *)arg;
}

/*
 * An empty poll, shared: as idle_poll(), but the protocol thread owns the
 * interrupt, so the short sleep is libtempest's wait for a packet.  The
 * poll first takes what the protocol thread would hand over, itself
 * (tempest_client_poll; docs/strata.rst, "Strata's messages, shared"):
 * on a one-vCPU node it runs the thread's work waiting in the rings, and
 * where the node spins says POLL_PEEKS, so that a peer on this host
 * writes a packet straight into the RQ and raises nothing (the interrupt
 * cost the exception and four accesses under QEMU's lock a packet); with
 * a dedicated protocol thread it takes Strata's packets at the RQ's head
 * while the thread is not in a step, and polls for the thread, which
 * sleeps while a program's polls go on (not @in_wait, a poll of
 * strata_wait(): docs/tempest.rst, "A client's polls spin for the
 * thread").  Returns true if it ran or took anything (a packet of ours
 * may be queued now).
 */
static bool idle_poll_shared(bool in_wait)
{
    uint32_t irqs;

    if (tempest_client_poll(in_wait)) {
        idle_polls = 0;
        return true;
    }
    if (strata_spin_turns && tempest_client_polled() &&
        nc_poll_idle_due(poll_turn++)) {
        polling = nc_poll_peek();
    }
    if (!idle_spin_over()) {
        return false;
    }
    /*
     * Ended, as idle_poll()'s sleep, by whatever a wait may wait for.
     * Where a sleep costs more than a spin (under Linux) and the thread
     * sleeps for these polls, it spins (tempest_client_idle_wait), as
     * idle_poll()'s rt_cpu_sleep() does there: a sleep that gave the node
     * back to the thread cost the next packet the kernel's wake-ups.
     * After StrataSetSpin(0) it sleeps.
     */
    irqs = strata_shared_irqs();
    (strata_spin_turns ? tempest_client_idle_wait : tempest_client_wait)
        (softq_any, &irqs, rt_time_ns() + IDLE_SLEEP_US * 1000ULL);
    return false;
}

/*
 * Handles one message of network @net if there is one.  @in_wait: for
 * strata_wait() (POLL_WAIT), so an empty poll does not idle.
 */
static bool poll_net_in(unsigned net, bool in_wait)
{
    struct softq *q = &softq[net];
    struct nc_pkt *p;
    struct nc_pkt copy;
    size_t bytes;

    if (strata_shared) {
        if (softq_pop_shared(net, &copy) ||
            (idle_poll_shared(in_wait) && softq_pop_shared(net, &copy))) {
            idle_polls = 0;
            dispatch(&copy, NULL);
            return true;
        }
        return false;
    }
    if (q->count) {
        p = &q->pkts[q->head];
        bytes = TEMPEST_PKT_DATA + (p->ctl & TEMPEST_PKT_LEN_MASK);
        memcpy(&copy, p, bytes <= sizeof(copy) ? bytes : sizeof(copy));
        q->head = (q->head + 1) & (q->cap - 1);
        q->count--;
        idle_polls = 0;
        dispatch(&copy, NULL);
        return true;
    }
    for (;;) {
        p = nc_rq_peek();
        if (p == NULL) {
            /*
             * The program polls: let the node controller take what peers
             * left in shared memory.  A program that stops polling
             * without sleeping here leaves it so; the node controller
             * falls back to the doorbell after 1 ms without a POLL, and
             * Strata runs no handler before the next poll anyway.
             */
            if (strata_spin_turns && nc_poll_due(poll_turn++)) {
                /* (Not when the launcher says spinning does not pay.) */
                polling = nc_poll(true);
            }
            nc_rx_doorbell();
            if (nc_cq_peek()) {
                strata_take_events();
            }
            if (__atomic_load_n(&strata_peers_lost, __ATOMIC_ACQUIRE)) {
                /*
                 * What that peer sent us may be lost with its link (one
                 * given up on a live peer): a program polling for it
                 * would wait for ever.  A collective would fail on it;
                 * a poll loop ends the node here.
                 */
                strata_node_gone("point-to-point network",
                                 "the link with a node of the partition "
                                 "is lost");
            }
            if (!in_wait) {
                idle_poll();
            }
            return false;
        }
        if ((p->net & 1) == net) {
            idle_polls = 0;
            dispatch(p, p);
            return true;
        }
        /* The other network's: set it aside, if there is room. */
        if (!set_aside(p)) {
            return false;
        }
    }
}

static bool poll_net(unsigned net)
{
    return poll_net_in(net, false);
}

/*
 * Moves the packets waiting in the receive ring into their networks'
 * software queues, running no handler, so that the ring has room and the
 * peers' credit comes back.  A handler nested MAX_NEST deep that cannot
 * send does this instead of polling: if it only waited, two nodes (or a
 * cycle of them) that each wait to send to the other would wait for
 * ever, each one's ring full of packets nobody takes.  Returns true if
 * it moved one.
 */
static bool stash(void)
{
    struct nc_pkt *p;
    bool any = false;

    if (strata_shared) {
        return false;   /* the protocol thread keeps the ring moving */
    }
    while ((p = nc_rq_peek()) != NULL && set_aside(p)) {
        any = true;
    }
    if (any) {
        nc_rx_doorbell();
    }
    return any;
}

/*
 * The core's poller (strata_set_poller): handles at most one message of
 * each network in @mask; returns true if it handled one.  (poll_net()
 * also takes control events.)  POLL_STASH: stash() instead; POLL_WAIT:
 * strata_wait()'s, with no idle sleep.
 */
static bool poll_nets(unsigned mask)
{
    bool any = false;

    if (mask & POLL_STASH) {
        return stash();
    }

    if (mask & POLL_LEFT) {
        any |= poll_net_in(NET_LEFT, mask & POLL_WAIT);
    }
    if (mask & POLL_RIGHT) {
        any |= poll_net_in(NET_RIGHT, mask & POLL_WAIT);
    }
    return any;
}

/* The core's poller: true if a message of a network in @mask waits. */
static bool msgs_waiting(unsigned mask)
{
    struct nc_pkt *p;

    if (strata_shared) {
        return (mask & POLL_LEFT &&
                __atomic_load_n(&softq[NET_LEFT].count, __ATOMIC_ACQUIRE)) ||
               (mask & POLL_RIGHT &&
                __atomic_load_n(&softq[NET_RIGHT].count, __ATOMIC_ACQUIRE));
    }
    if (mask & POLL_STASH) {
        return nc_rq_peek() != NULL;
    }
    if (((mask & POLL_LEFT) && softq[NET_LEFT].count) ||
        ((mask & POLL_RIGHT) && softq[NET_RIGHT].count)) {
        return true;
    }
    p = nc_rq_peek();
    return p && ((mask >> (p->net & 1)) & 1);
}

void PollLeft(void)
{
    poll_net(NET_LEFT);
}

void PollRight(void)
{
    poll_net(NET_RIGHT);
}

void PollBoth(void)
{
    poll_net(NET_LEFT);
    poll_net(NET_RIGHT);
}

void PollLeftTilEmpty(void)
{
    while (poll_net(NET_LEFT)) {
        /* until the left network is empty */
    }
}

void PollRightTilEmpty(void)
{
    while (poll_net(NET_RIGHT)) {
        /* until the right network is empty */
    }
}

void PollBothTilEmpty(void)
{
    bool l, r;

    do {
        l = poll_net(NET_LEFT);
        r = poll_net(NET_RIGHT);
    } while (l || r);
}

void PollLeftThenBothTilEmpty(void)
{
    if (poll_net(NET_LEFT)) {
        PollBothTilEmpty();
    }
}

void PollRightThenBothTilEmpty(void)
{
    if (poll_net(NET_RIGHT)) {
        PollBothTilEmpty();
    }
}

/* ---- sending ------------------------------------------------------------ */

static bool try_send(unsigned net, unsigned proc, uint8_t kind, uint32_t w0,
                     uint64_t w1, const void *data, uint32_t len)
{
    struct nc_pkt *p;

    if (strata_shared) {
        if (!tempest_client_send(net, proc, kind, w0, w1, data, len)) {
            return false;
        }
        strata_pkts_sent++;
        return true;
    }
    p = nc_sq_claim(net);

    if (p == NULL) {
        return false;
    }
    nc_sq_fill(p, proc, kind, w0, w1, data, len);
    nc_sq_post(net, p, len);
    nc_sq_doorbell(net);
    strata_pkts_sent++;
    return true;
}

struct room_arg {
    const struct send_mode *m;
};

static bool send_room(void *arg)
{
    const struct send_mode *m = ((struct room_arg *)arg)->m;

    return (m->net[0] >= 0 && nc_sq_claim((unsigned)m->net[0])) ||
           (m->net[1] >= 0 && nc_sq_claim((unsigned)m->net[1]));
}

/*
 * Sends one packet as mode @m says: tries each network in turn, polling
 * after each try, until it gets out; waits (still polling) when both
 * rings stay full.  Inside a handler it polls only while the packet does
 * not get out, and past MAX_NEST nested handlers it only sets arriving
 * packets aside (stash()), so handlers that send cannot recurse without
 * bound and still cannot leave a peer waiting on a full ring.
 */
static void send_pkt(const struct send_mode *m, unsigned proc, uint8_t kind,
                     uint32_t w0, uint64_t w1, const void *data, uint32_t len)
{
    struct room_arg ra = { m };
    unsigned tries = 0, i, mask;
    bool nested = strata_handler_depth > 0;
    bool deep = strata_handler_depth >= MAX_NEST;

    for (;;) {
        for (i = 0; i < 2; i++) {
            if (m->net[i] >= 0 &&
                try_send((unsigned)m->net[i], proc, kind, w0, w1, data,
                         len)) {
                if (!nested) {
                    poll_nets(m->poll[i]);
                }
                return;
            }
            poll_nets(deep ? POLL_STASH : m->poll[i]);
        }
        if (++tries >= 64) {
            tries = 0;
            mask = deep ? POLL_STASH : m->poll[0] | m->poll[1];
            strata_wait(send_room, &ra, mask, true);
        }
    }
}

static void send_am(const struct send_mode *m, int proc, void (*handler)(),
                    va_list ap, const char *call)
{
    uint64_t a[4];
    unsigned i;

    strata_require(call);
    check_proc(proc, call);
    if (handler == NULL) {
        StrataFail("%s: NULL handler", call);
    }
    for (i = 0; i < 4; i++) {
        a[i] = va_arg(ap, uint64_t);
    }
    send_pkt(m, (unsigned)proc, KIND_AM, 0, (uintptr_t)handler, a,
             sizeof(a));
}

#define DEFINE_SEND(name, mode) \
    void name(int proc, void (*handler)(), ...) \
    { \
        va_list ap; \
        \
        va_start(ap, handler); \
        send_am(&mode, proc, handler, ap, #name); \
        va_end(ap); \
    }

DEFINE_SEND(SendBothRLPollBoth, mode_rl_both)
DEFINE_SEND(SendBothLRPollBoth, mode_lr_both)
DEFINE_SEND(SendBothRLPollRight, mode_rl_right)
DEFINE_SEND(SendBothLRPollRight, mode_lr_right)
DEFINE_SEND(SendLeftPollBoth, mode_left_both)

bool strata_sends_drained(void)
{
    return nc_sq_drained(NET_LEFT) && nc_sq_drained(NET_RIGHT);
}

/* ---- 7 Block transfers -------------------------------------------------- */

static void check_xfer(int proc, unsigned port, int offset, int size,
                       const Word *buffer, const char *call)
{
    strata_require(call);
    check_proc(proc, call);
    if (port >= STRATA_NUM_PORTS) {
        StrataFail("%s: port %u is not below STRATA_NUM_PORTS (%d)", call,
                   port, STRATA_NUM_PORTS);
    }
    if (size > 0 && (offset < STRATA_MIN_XFER_OFFSET ||
                     (int64_t)offset + size > STRATA_MAX_XFER_OFFSET)) {
        StrataFail("%s: offset %d and size %d are outside the %d..%d a "
                   "port can take", call, offset, size,
                   STRATA_MIN_XFER_OFFSET, STRATA_MAX_XFER_OFFSET);
    }
    if (size > 0 && buffer == NULL) {
        StrataFail("%s: NULL buffer", call);
    }
}

/* Sends words [from, from + n) of a block as one Xfer packet. */
static void xfer_packet(const struct send_mode *m, int proc, unsigned port,
                        int offset, const Word *buffer, int from, int n)
{
    send_pkt(m, (unsigned)proc, KIND_XFER,
             PortAndOffsetCons(port, offset + from), 0, buffer + from,
             (uint32_t)n * 4);
}

static void block_xfer(int proc, unsigned port, int offset, Word *buffer,
                       int size, bool poll_both, const char *call)
{
    int from, n, k = 0;

    check_xfer(proc, port, offset, size, buffer, call);
    for (from = 0; from < size; from += n, k++) {
        n = size - from < XFER_WORDS ? size - from : XFER_WORDS;
        /* Alternate the networks, as the manual advises. */
        xfer_packet(poll_both ? (k & 1 ? &mode_lr_both : &mode_rl_both) :
                    (k & 1 ? &mode_lr_right : &mode_rl_right),
                    proc, port, offset, buffer, from, n);
    }
}

void SendBlockXferPollBoth(int proc, unsigned port_num, int offset,
                           Word *buffer, int size)
{
    block_xfer(proc, port_num, offset, buffer, size, true,
               "SendBlockXferPollBoth");
}

void SendBlockXferPollRight(int proc, unsigned port_num, int offset,
                            Word *buffer, int size)
{
    block_xfer(proc, port_num, offset, buffer, size, false,
               "SendBlockXferPollRight");
}

void StrataXferHeaderHandler(int port_num, int size, void (*handler)())
{
    StrataPort *pt;

    if (port_num < 0 || port_num >= STRATA_NUM_PORTS) {
        fprintf(stderr, "*** strata: node %d: StrataXferHeaderHandler for "
                "port %d, not below STRATA_NUM_PORTS: ignored\n", Self,
                port_num);
        return;
    }
    pt = &StrataPortTable[port_num];
    pt->count += size;
    if (pt->handler == NULL) {
        pt->handler = handler;
    }
    if (pt->count == 0 && pt->handler) {
        ((port_handler)pt->handler)(port_num);
    }
}

static void send_xfer4(const struct send_mode *m, int proc, unsigned pao,
                       Word d1, Word d2, Word d3, Word d4, const char *call)
{
    Word d[4] = { d1, d2, d3, d4 };

    strata_require(call);
    check_proc(proc, call);
    send_pkt(m, (unsigned)proc, KIND_XFER, pao, 0, d, sizeof(d));
}

void SendXferBothRLPollBoth(int proc, unsigned port_and_offset, Word data1,
                            Word data2, Word data3, Word data4)
{
    send_xfer4(&mode_rl_both, proc, port_and_offset, data1, data2, data3,
               data4, "SendXferBothRLPollBoth");
}

void SendXferBothLRPollBoth(int proc, unsigned port_and_offset, Word data1,
                            Word data2, Word data3, Word data4)
{
    send_xfer4(&mode_lr_both, proc, port_and_offset, data1, data2, data3,
               data4, "SendXferBothLRPollBoth");
}

void SendXferBothRLPollRight(int proc, unsigned port_and_offset, Word data1,
                             Word data2, Word data3, Word data4)
{
    send_xfer4(&mode_rl_right, proc, port_and_offset, data1, data2, data3,
               data4, "SendXferBothRLPollRight");
}

void SendXferBothLRPollRight(int proc, unsigned port_and_offset, Word data1,
                             Word data2, Word data3, Word data4)
{
    send_xfer4(&mode_lr_right, proc, port_and_offset, data1, data2, data3,
               data4, "SendXferBothLRPollRight");
}

static void put_words(unsigned pao, const Word *d, int n)
{
    if (port_store(pao, d, n, "StrataXferPut")) {
        port_arrived(PortAndOffsetPort(pao), n);
    }
}

void StrataXferPut3Handler(unsigned port_and_offset, Word data1, Word data2,
                           Word data3)
{
    Word d[3] = { data1, data2, data3 };

    put_words(port_and_offset, d, 3);
}

void StrataXferPut2Handler(unsigned port_and_offset, Word data1, Word data2)
{
    Word d[2] = { data1, data2 };

    put_words(port_and_offset, d, 2);
}

void StrataXferPut1Handler(unsigned port_and_offset, Word data1)
{
    put_words(port_and_offset, &data1, 1);
}

/* ---- 8 Multi-block transfer --------------------------------------------- */

static struct abx *abx_find(ABXid id)
{
    struct abx *t;

    if (id < 0 || abx == NULL) {
        return NULL;
    }
    t = &abx[id & ABX_SLOT_MASK];
    if (!t->used || t->gen != ((uint32_t)id >> ABX_GEN_SHIFT)) {
        return NULL;
    }
    return t;
}

static ABXid abx_id(const struct abx *t)
{
    return (ABXid)((t->gen << ABX_GEN_SHIFT) | (uint32_t)(t - abx));
}

static void abx_unlink(struct abx *t)
{
    if (t->prev >= 0) {
        abx[t->prev].next = t->next;
    } else {
        abx_head = t->next;
    }
    if (t->next >= 0) {
        abx[t->next].prev = t->prev;
    } else {
        abx_tail = t->prev;
    }
    abx_pending--;
    abx_version++;
}

/* The last packet of @t is out: tell its owner, free it. */
static void abx_done(struct abx *t)
{
    ABXid id = abx_id(t);

    abx_unlink(t);
    if (t->complete) {
        t->complete(id, t->buffer);
    }
    t->used = false;
}

/*
 * Sends up to @packets packets of @t, alternating the networks, and
 * finishes it after its last.  Handlers run by the sends' polls may
 * service transfers too: @t is busy meanwhile, so they leave it alone.
 */
static void abx_send(struct abx *t, int packets)
{
    int n, k;

    t->busy = true;
    for (k = 0; (packets < 0 || k < packets) && t->sent < t->size; k++) {
        n = t->size - t->sent;
        if (n > XFER_WORDS) {
            n = XFER_WORDS;
        }
        xfer_packet(k & 1 ? &mode_lr_both : &mode_rl_both, t->proc,
                    t->port, t->offset, t->buffer, t->sent, n);
        t->sent += n;
    }
    t->busy = false;
    if (t->sent >= t->size) {
        abx_done(t);
    }
}

ABXid AsyncBlockXfer(int proc, unsigned port, int offset, Word *buffer,
                     int size, void (*complete)(ABXid id, Word *buffer))
{
    struct abx *t = NULL;
    int i, s;

    check_xfer(proc, port, offset, size, buffer, "AsyncBlockXfer");
    while (abx_pending == MAX_ABX) {
        ServiceAllTransfers(1);
    }
    for (i = 0; i < MAX_ABX; i++) {
        s = (abx_free_hint + i) & ABX_SLOT_MASK;
        if (!abx[s].used) {
            t = &abx[s];
            abx_free_hint = (s + 1) & ABX_SLOT_MASK;
            break;
        }
    }
    abx_gen = (abx_gen + 1) & ((1U << (31 - ABX_GEN_SHIFT)) - 1);
    *t = (struct abx) {
        .proc = proc, .port = port, .offset = offset, .buffer = buffer,
        .size = size > 0 ? size : 0, .complete = complete, .gen = abx_gen,
        .used = true, .next = -1, .prev = abx_tail,
    };
    if (abx_tail >= 0) {
        abx[abx_tail].next = (int)(t - abx);
    } else {
        abx_head = (int)(t - abx);
    }
    abx_tail = (int)(t - abx);
    abx_pending++;
    abx_version++;
    return abx_id(t);
}

void ServiceAllTransfers(int rounds)
{
    int r, i, next;
    uint32_t v;
    struct abx *t;
    bool idle;

    for (r = 0; rounds < 0 || r < rounds; r++) {
        idle = true;
        for (i = abx_head; i >= 0; i = next) {
            t = &abx[i];
            next = t->next;
            if (t->busy) {
                continue;
            }
            idle = false;
            v = abx_version;
            abx_send(t, 2);
            if (abx_version != v + (t->used ? 0 : 1)) {
                break;      /* the list changed under us: next round */
            }
        }
        if (idle) {
            return;
        }
    }
}

void CompleteTransfer(ABXid id)
{
    struct abx *t = abx_find(id);

    if (t != NULL && !t->busy) {
        abx_send(t, -1);
    }
}

int GetABXproc(ABXid id)
{
    struct abx *t = abx_find(id);

    return t ? t->proc : -1;
}

unsigned GetABXport(ABXid id)
{
    struct abx *t = abx_find(id);

    return t ? t->port : 0;
}

int GetABXoffset(ABXid id)
{
    struct abx *t = abx_find(id);

    return t ? t->offset : 0;
}

Word *GetABXbuffer(ABXid id)
{
    struct abx *t = abx_find(id);

    return t ? t->buffer : NULL;
}

int GetABXremaining(ABXid id)
{
    struct abx *t = abx_find(id);

    return t ? t->size - t->sent : 0;
}
