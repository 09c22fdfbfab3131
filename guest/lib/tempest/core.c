/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest core: start-up, the protocol thread, event priorities,
 * message reassembly, the receive side (TPPI_recv_*), control events.
 *
 * The protocol thread is one loop, pt_step(), run
 *   - by pt_main() on CPU 1 when the node has two or more vCPUs: it polls
 *     for spin_us after the last event, then sleeps in WFI with the node
 *     controller's RQ and CQ interrupts routed to CPU 1;
 *   - by nc_irq() on CPU 0, from the node controller's interrupt, when
 *     the node has one vCPU.
 *
 * Waiting.  Every sleep here is a WFI without a time limit, entered with
 * IRQs masked after the condition was checked (a pending interrupt still
 * ends the WFI): what can end it is always an interrupt, the node
 * controller's, the wake SGI of wake_waiters(), or the CPU's timer of a
 * wait with a deadline (tempest_wait_until).  A spin (spin_us, on the
 * CPU that polls: pt_main(), or tempest_wait() on a one-vCPU node, with
 * IRQs unmasked so that handlers run in it) writes the node controller's
 * POLL register on every turn (nc_poll: a fabric with shared memory then
 * hands over what peers left without waking the node's main loop) and
 * POLL = 0 when it ends, before the CPU sleeps or goes back to the
 * program.  tempest_wait()'s spin on a one-vCPU node turns the node
 * controller's interrupt off meanwhile and runs the rings itself
 * (wait_spin).
 * Each pt_step() runs at most one handler, choosing by priority: block
 * access and page faults, control events (CQ) and due timers, then the
 * backlog, then the RQ.
 *
 * The core is libtempest's bottom layer: it calls no other file of the
 * library.  The modules above register with it from their constructors
 * (TPPI_REGISTER, before tempest_init() below): vm.c the faults' work,
 * timer.c the timers' work and the TIMER event, xfer.c the XFER events;
 * the core dispatches control events through a table indexed by type.
 *
 * A message that fits one packet is handled straight from its RQ slot
 * (freed after the handler; TPPI_recv_R of 256 bytes or more from there
 * is the device's copy, RQ_COPY, where it has one); a longer one is
 * reassembled per (source,
 * network) in a buffer of TPPI_MAX_AM_BYTES first.  When a handler's send
 * finds the reply ring full, tppi_drain_to_backlog() copies the current
 * message out of its slot and moves every arriving packet to the
 * backlog, a FIFO in the heap that pt_step() empties before it looks at
 * the RQ again.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest-internal.h"
#include "tempest/client.h"

#define NC_IRQ_BITS         (TEMPEST_NC_IRQ_RQ | TEMPEST_NC_IRQ_CQ | \
                             TEMPEST_NC_IRQ_SQ)
#define WAKE_EVERY          64      /* handlers between looks at waiters */
#define WAKE_IDLE_NS        10000   /* shortest deferral: wake_after_work */
#define WAKE_LATE_MAX_NS    1000000 /* longest deferral */
#define WAKE_LATE_SHARE     4       /* a wait of T may end T / 4 late */
#define CLOCK_EVERY         16      /* spin turns between clock reads */
#define CLIENT_TAKE_MAX     16      /* a client's packets one poll takes */
#define POLL_LEAD_MIN       64      /* a client's polls that lead (below) */
#define POLL_SLICE_US       250     /* the thread's first sleep for them */
#define POLL_YIELD_US       2000    /* and its longest */
#define POLL_YIELD_LONG_US  16000   /* that, where a wake-up is costly */

TPPI_NodeId TPPI_self_address;
unsigned TPPI_num_nodes;

struct tempest_stats tppi_stats;
struct tppi_sent tppi_sent[2];
__thread bool tppi_pt_self;

/* The message being handled: TPPI_recv_* and F items read from it. */
struct cur_msg {
    const uint8_t *data;
    struct nc_pkt *slot;    /* the RQ slot data points into, or NULL */
    uint32_t size;
    uint32_t pos;
    TPPI_NodeId src;
    uintptr_t handler;
    bool active;
};

/* A message being reassembled from several packets. */
struct reasm {
    uint8_t *buf;
    uintptr_t handler;
    uint32_t total;
    uint32_t len;
    bool active;
};

/*
 * The backlog: copies of packets taken off the RQ early, in order.  An
 * entry holds a packet of up to a 256-byte slot; a longer one (larger
 * slots) is in the heap, so that a storm of small packets costs what it
 * did with 256-byte slots (tens of thousands of entries: 4 KiB each
 * exhausted a 128 MiB node).
 */
struct bl_entry {
    struct nc_pkt pkt;
    struct nc_pkt *big;     /* the packet, when longer than pkt */
};

struct backlog {
    struct bl_entry *e;
    uint32_t cap;           /* a power of 2, or 0 */
    uint32_t head;
    uint32_t count;
};

static struct cur_msg cur;
static uint8_t cur_copy[TEMPEST_PKT_MAX_PAYLOAD];
static struct reasm *reasm;     /* [node * 2 + net] */
static struct backlog backlog;
static unsigned pt_cpu;
uint8_t tppi_pt_mode;           /* TPPI_PT_*: tppi_on_protocol_thread() */

/* The protocol thread has a CPU of its own (pt_main() on CPU 1). */
static inline bool dedicated(void)
{
    return tppi_pt_mode == TPPI_PT_DEDICATED;
}

static unsigned spin_us = TEMPEST_SPIN_US_DEFAULT;
static unsigned handlers_since_wake;
static uint32_t waiters;        /* CPUs sleeping in tempest_wait() */
/* Of those, the ones the last wake-up found still waiting. */
static uint32_t waiters_futile;
/* When each CPU's wait in tempest_wait() began (rt_time_ns()). */
static uint64_t wait_since[TEMPEST_MAX_CPUS];
uint32_t tppi_sq_waiters;       /* CPUs waiting for room in SQ0 */
static tempest_peer_down_fn peer_down_fn;
/* A link lost with no peer-down callback: its node + 1 (end_link_lost). */
static uint32_t lost_unhandled;
static bool ending;                 /* end_link_lost() has begun */
static bool at_exit;                /* the program's exit() has begun */
/* Another library on the same rings (tempest/client.h), or NULL. */
static const struct tempest_client *client;
static uint32_t client_irq_bits;    /* its bits, once registered */
static uint64_t client_pkts;        /* its packets handed over */
static bool pt_running;             /* pt_main() has set IRQ_ENABLE */

static void peer_down_event(const struct nc_event *ev);
static void send_error_event(const struct nc_event *ev);
static void lost_grace_over(void);
/*
 * How long a lost link leaves a program that waits some other way: 1 s,
 * on a device timer of its own (its event's B word the tag).
 */
#define LOST_GRACE_TICKS    1000000
#define LOST_GRACE_TAG      0x4c4f5354ULL   /* "LOST" */

/* Handlers of control events, by type (tppi_on_event). */
static tppi_event_fn event_fns[TPPI_EV_TYPES] = {
    [TEMPEST_EV_PEER_DOWN] = peer_down_event,
    [TEMPEST_EV_SEND_ERROR] = send_error_event,
};

static bool no_work(void)
{
    return false;
}

/* A class's busy word when it names none: always worth a look. */
static const uint32_t always_busy = 1;

/* The protocol thread's other work, by class (tppi_on_work). */
static struct tppi_work work[TPPI_WORK_CLASSES] = {
    [TPPI_WORK_FAULTS] = { no_work, no_work, &always_busy },
    [TPPI_WORK_TIMERS] = { no_work, no_work, &always_busy },
};

/* Class @cls may have work: its busy word, read without a call. */
static inline bool work_busy(unsigned cls)
{
    return __atomic_load_n(work[cls].busy, __ATOMIC_ACQUIRE) != 0;
}

/* ---- registration ---------------------------------------------------- */

void tppi_on_event(unsigned type, tppi_event_fn fn)
{
    if (type < TPPI_EV_TYPES) {
        event_fns[type] = fn;
    }
}

void tempest_on_event(unsigned type, void (*fn)(const struct nc_event *ev))
{
    if (type == TEMPEST_EV_CHAN) {
        tppi_on_event(type, fn);
    }
}

void tppi_on_work(unsigned cls, const struct tppi_work *w)
{
    if (cls < TPPI_WORK_CLASSES) {
        work[cls].pending = w && w->pending ? w->pending : no_work;
        work[cls].step = w && w->step ? w->step : no_work;
        work[cls].busy = w && w->busy ? w->busy : &always_busy;
    }
}

/* ---- reports -------------------------------------------------------- */

void tppi_report(uint64_t *counter, const char *fmt, ...)
{
    char line[200];
    va_list ap;

    if (counter) {
        __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("*** tempest: node %u: %s\n", TPPI_self_address, line);
}

void tempest_get_stats(struct tempest_stats *s)
{
    if (s) {
        *s = tppi_stats;
        for (unsigned net = 0; net < 2; net++) {
            s->msgs_sent += __atomic_load_n(&tppi_sent[net].msgs,
                                            __ATOMIC_RELAXED);
            s->pkts_sent += __atomic_load_n(&tppi_sent[net].pkts,
                                            __ATOMIC_RELAXED);
        }
    }
}

unsigned tempest_protocol_cpu(void)
{
    return pt_cpu;
}

void tempest_set_spin_us(unsigned us)
{
    spin_us = us;
}

unsigned tppi_spin_us(void)
{
    return spin_us;
}

tempest_peer_down_fn tempest_on_peer_down(tempest_peer_down_fn fn)
{
    return __atomic_exchange_n(&peer_down_fn, fn, __ATOMIC_ACQ_REL);
}

/* ---- where are we ---------------------------------------------------- */

/* A one-vCPU node's fault hook runs the protocol thread's work itself. */
volatile bool tppi_pt_inline;

/*
 * With a CPU of its own the protocol thread sleeps (IRQ_SQ, or the time,
 * wakes it; its interrupt handler runs no handlers).  In the interrupt
 * rt_cpu_sleep() spins.  Run inline (a fault's hook or a wait's spin on a
 * one-vCPU node: IRQs masked, not in an interrupt) a WFI would take the
 * node controller's pending interrupt and run the protocol thread inside
 * the handler that waits: other handlers in the middle of it, the
 * current message overwritten, the receive ring popped out of order.  It
 * spins there too.
 */
void tppi_pt_pause(unsigned us)
{
    uint64_t end;

    if (dedicated() || rt_in_irq()) {
        rt_cpu_sleep(us);
        return;
    }
    end = rt_time_ns() + (uint64_t)us * 1000;
    while (rt_time_ns() < end) {
        __asm__ volatile("yield");
    }
}

RT_HOT_RX bool tppi_in_message_handler(void)
{
    return cur.active && tppi_on_protocol_thread();
}

bool tppi_started(void)
{
    return tppi_pt_mode != TPPI_PT_NONE;
}

bool tppi_protocol_dedicated(void)
{
    return dedicated();
}

void tppi_wake_protocol_thread(void)
{
    if (dedicated()) {
        rt_cpu_wake(pt_cpu);
    } else {
        rt_irq_raise(NC_INTID);
    }
}

/* ---- receiving --------------------------------------------------------- */

int tppi_take(void *dst, int len)
{
    uint32_t left = cur.size - cur.pos;
    uint32_t n = (uint32_t)len <= left ? (uint32_t)len : left;

    if (dst && n) {
        memcpy(dst, cur.data + cur.pos, n);
    }
    cur.pos += n;
    return (int)n;
}

int tppi_recv_left(void)
{
    return cur.active ? (int)(cur.size - cur.pos) : 0;
}

static void report_overrun(int want)
{
    tppi_report(&tppi_stats.overruns, "handler 0x%lx read %d bytes at offset "
                "%u of the %u-byte message from node %u: past its end",
                (unsigned long)cur.handler, want, (unsigned)cur.pos,
                (unsigned)cur.size, cur.src);
}

RT_HOT_RX int TPPI_recv_W(void)
{
    uint32_t w = 0;

    if (!tppi_in_message_handler()) {
        tppi_report(&tppi_stats.overruns, "TPPI_recv_W called outside a "
                    "message handler");
        return 0;
    }
    if (cur.size - cur.pos < 4) {
        report_overrun(4);
        cur.pos = cur.size;
        return 0;
    }
    memcpy(&w, cur.data + cur.pos, 4);
    cur.pos += 4;
    return (int)w;
}

int tppi_recv_into(void *dst, int len)
{
    if ((uint32_t)len > cur.size - cur.pos) {
        report_overrun(len);
    }
    return tppi_take(dst, len);
}

/*
 * A long read of a message in its RQ slot (node controller 1.15): the
 * device copies it (RQ_COPY), one host copy where the guest's memcpy
 * costs far more under TCG.  Returns the bytes consumed, or -1 when the
 * guest must copy (short, not in the RQ, a buffer the device cannot
 * reach, or refused).
 */
#define RECV_COPY_MIN   256

static struct nc_copy recv_desc;    /* handlers run one at a time */

static int recv_copy(void *va, int len)
{
    uint32_t n = (uint32_t)len <= cur.size - cur.pos ? (uint32_t)len
                                                     : cur.size - cur.pos;

    if (!nc_gather_present || cur.slot == NULL || n < RECV_COPY_MIN ||
        !nc_dma_reachable(va, n) ||
        !nc_dma_reachable(&recv_desc, sizeof(recv_desc)) ||
        nc_rq_copy(&recv_desc, va, cur.data + cur.pos, n) != 0) {
        return -1;
    }
    cur.pos += n;
    return (int)n;
}

void TPPI_recv_R(void *va, int len)
{
    int got;

    if (!tppi_in_message_handler()) {
        tppi_report(&tppi_stats.overruns, "TPPI_recv_R called outside a "
                    "message handler");
        return;
    }
    if (va == NULL || ((uintptr_t)va & 3) || len < 0 || (len & 3)) {
        tppi_report(&tppi_stats.overruns, "TPPI_recv_R(%p, %d) in handler "
                    "0x%lx: region not word-aligned or length not a "
                    "multiple of 4; nothing read", va, len,
                    (unsigned long)cur.handler);
        return;
    }
    if ((uint32_t)len > cur.size - cur.pos) {
        report_overrun(len);
    }
    got = recv_copy(va, len);
    if (got < 0) {
        got = tppi_take(va, len);
    }
    if (got < len) {
        memset((uint8_t *)va + got, 0, (size_t)(len - got));
    }
}

/* ---- the backlog ------------------------------------------------------- */

/* Bytes of a packet slot worth copying: header and payload. */
static size_t pkt_bytes(const struct nc_pkt *p)
{
    uint32_t len = p->ctl & TEMPEST_PKT_LEN_MASK;

    return TEMPEST_PKT_DATA + (len < nc_rq_payload ? len : nc_rq_payload);
}

static bool backlog_push(const struct nc_pkt *p)
{
    struct bl_entry *n, *to;
    struct nc_pkt *big = NULL;
    size_t bytes = pkt_bytes(p);
    uint32_t i, cap;

    if (bytes > sizeof(n->pkt)) {
        big = malloc(bytes);
        if (big == NULL) {
            return false;
        }
    }
    if (backlog.count == backlog.cap) {
        cap = backlog.cap ? backlog.cap * 2 : 64;
        n = malloc((size_t)cap * sizeof(*n));
        if (n == NULL) {
            free(big);
            return false;
        }
        for (i = 0; i < backlog.count; i++) {
            n[i] = backlog.e[(backlog.head + i) & (backlog.cap - 1)];
        }
        free(backlog.e);
        backlog.e = n;
        backlog.cap = cap;
        backlog.head = 0;
    }
    to = &backlog.e[(backlog.head + backlog.count) & (backlog.cap - 1)];
    to->big = big;
    memcpy(big ? big : &to->pkt, p, bytes);
    backlog.count++;
    tppi_stats.backlog_pkts++;
    if (backlog.count > tppi_stats.backlog_max) {
        tppi_stats.backlog_max = backlog.count;
    }
    return true;
}

void tppi_drain_to_backlog(void)
{
    struct nc_pkt *p;

    /*
     * While the RQ has room the device can still take packets in (and
     * return their credit): only a nearly full RQ needs emptying.
     */
    if (!nc_rq_fill_at_least(nc_rq_slots() - nc_rq_slots() / 8)) {
        return;
    }

    if (cur.active && cur.slot) {
        /* The message being handled leaves its RQ slot first. */
        memcpy(cur_copy, cur.data, cur.size);
        cur.data = cur_copy;
        nc_rq_pop(cur.slot);
        cur.slot = NULL;
    }
    while ((p = nc_rq_peek()) != NULL) {
        if (!backlog_push(p)) {
            break;      /* no memory: leave the rest in the RQ */
        }
        nc_rq_pop(p);
    }
    nc_rx_doorbell();
}

/* ---- handling a message ----------------------------------------------- */

/* wake_after_work: when a deferred wake-up is due (0: none). */
static uint64_t wake_due;

RT_HOT_RX static void wake_waiters(void)
{
    uint32_t w;
    unsigned cpu;

    handlers_since_wake = 0;
    wake_due = 0;
    if (!__atomic_load_n(&waiters, __ATOMIC_RELAXED)) {
        return;
    }
    w = __atomic_exchange_n(&waiters, 0, __ATOMIC_ACQ_REL);
    for (cpu = 0; w; cpu++, w >>= 1) {
        if (w & 1) {
            rt_cpu_wake(cpu);
        }
    }
}

/*
 * The dedicated protocol thread has run handlers and found nothing more:
 * the CPUs waiting in tempest_wait() must look at their conditions.  A
 * wake-up costs the waiting vCPU's thread a host core (with more vCPUs
 * than cores, taken from a polling one) and the GIC's and the device's
 * accesses under QEMU's global lock; a wait across a stream of messages
 * (a ping-pong of handlers while main() waits for the last) was woken
 * after every message for nothing.  So once a wake-up found every
 * waiter still waiting, the next one is deferred (wake_due), from the
 * first work since, by a share of how long the youngest wait has lasted
 * (wake_gap: a quarter, between WAKE_IDLE_NS and WAKE_LATE_MAX_NS): a
 * wait that ends in the middle of a stream ends late by at most a
 * quarter of what it waited, and a long wait across a stream is woken
 * rarely (a fixed 10 us and every 64 handlers woke the main() of an
 * --smp 2 stream 10,000 times a second: docs/fabric.rst, "Page-table
 * walks and exits").  The deferral is checked while the thread is idle
 * (wake_idle_check) and every WAKE_EVERY handlers when it never is
 * (wake_busy_check); the end of the spin wakes them anyway.  A waiter
 * whose wait ended clears its mark, so the first wake-up of each wait
 * comes at once (a request's reply).
 */
static uint64_t wake_gap(uint64_t now)
{
    uint32_t w = __atomic_load_n(&waiters, __ATOMIC_RELAXED);
    uint64_t youngest = 0, gap;
    unsigned cpu;

    for (cpu = 0; w; cpu++, w >>= 1) {
        if (w & 1) {
            uint64_t t = __atomic_load_n(&wait_since[cpu], __ATOMIC_RELAXED);

            youngest = t > youngest ? t : youngest;
        }
    }
    gap = youngest && now > youngest ? (now - youngest) / WAKE_LATE_SHARE : 0;
    return gap < WAKE_IDLE_NS ? WAKE_IDLE_NS :
           gap > WAKE_LATE_MAX_NS ? WAKE_LATE_MAX_NS : gap;
}

static void wake_after_work(void)
{
    uint32_t w = __atomic_load_n(&waiters, __ATOMIC_RELAXED);

    if (!w) {
        return;
    }
    if (w & ~__atomic_load_n(&waiters_futile, __ATOMIC_RELAXED)) {
        wake_waiters();
        return;
    }
    if (!wake_due) {
        /* From the first work it waits for: late by at most the gap. */
        uint64_t now = rt_time_ns();

        wake_due = now + wake_gap(now);
    }
}

/*
 * WAKE_EVERY handlers since the last look, with no idle turn to check
 * the deferral in: the waiters if it is due, else as after work (a
 * waiter not yet woken for nothing at once, the deferral begun).
 */
static void wake_busy_check(void)
{
    handlers_since_wake = 0;
    if (wake_due && __atomic_load_n(&waiters, __ATOMIC_RELAXED) &&
        rt_time_ns() >= wake_due) {
        wake_waiters();
        return;
    }
    wake_after_work();
}

/* A spin turn of the idle protocol thread: a deferred wake-up now due? */
static void wake_idle_check(unsigned turn)
{
    if (wake_due && turn % CLOCK_EVERY == 0 && rt_time_ns() >= wake_due) {
        wake_waiters();
    }
}

/* Wakes the computation CPUs waiting for SQ0 once it has room. */
RT_HOT_RX static void wake_sq_waiters(void)
{
    uint32_t w;
    unsigned cpu;

    if (!__atomic_load_n(&tppi_sq_waiters, __ATOMIC_RELAXED) ||
        !nc_sq_claim(TEMPEST_NET_REQUEST)) {
        return;
    }
    w = __atomic_exchange_n(&tppi_sq_waiters, 0, __ATOMIC_ACQ_REL);
    for (cpu = 0; w; cpu++, w >>= 1) {
        if (w & 1) {
            rt_cpu_wake(cpu);
        }
    }
}

RT_HOT_RX static void run_handler(TPPI_NodeId src, uintptr_t pc,
                                  const uint8_t *data, uint32_t size,
                                  struct nc_pkt *slot)
{
    static uintptr_t text_seen = 1;

    if (!tppi_text_ok(pc, &text_seen) || (pc & 3)) {
        tppi_report(&tppi_stats.bad_handlers, "the %u-byte message from "
                    "node %u names handler 0x%lx, outside the program's "
                    "code: dropped", (unsigned)size, src, (unsigned long)pc);
        if (slot) {
            nc_rq_pop(slot);
        }
        return;
    }
    cur.data = data;
    cur.slot = slot;
    cur.size = size;
    cur.pos = 0;
    cur.src = src;
    cur.handler = pc;
    cur.active = true;
    ((TPPI_MessageHandlerPtr)pc)(src, (int)size);
    cur.active = false;
    if (cur.pos < cur.size) {
        tppi_report(&tppi_stats.unread, "handler 0x%lx left %u of the %u "
                    "bytes of the message from node %u unread",
                    (unsigned long)pc, (unsigned)(cur.size - cur.pos),
                    (unsigned)cur.size, src);
    }
    if (cur.slot) {
        nc_rq_pop(cur.slot);
        cur.slot = NULL;
    }
    tppi_stats.msgs_handled++;
    if (++handlers_since_wake >= WAKE_EVERY) {
        wake_busy_check();
    }
    wake_sq_waiters();
}

static void bad_packet(const struct nc_pkt *p, const char *why)
{
    tppi_report(&tppi_stats.bad_packets, "packet from node %u (network %u, "
                "kind 0x%x, %u bytes, seq %u) dropped: %s", p->node, p->net,
                p->kind, (unsigned)(p->ctl & TEMPEST_PKT_LEN_MASK),
                (unsigned)p->seq, why);
}

/* A packet of the client's protocol, whole and from a node we know. */
static inline bool client_packet(const struct nc_pkt *p)
{
    return client && (p->kind >> 4) == client->proto &&
           (p->ctl & TEMPEST_PKT_LEN_MASK) <= TEMPEST_PKT_PAYLOAD &&
           p->node < TPPI_num_nodes && p->net <= 1;
}

/*
 * Handles one packet.  @slot: the RQ slot @p is (freed here, or after
 * the handler), or NULL when @p is a copy from the backlog.
 */
RT_HOT_RX static void handle_packet(struct nc_pkt *p, struct nc_pkt *slot)
{
    uint32_t len = p->ctl & TEMPEST_PKT_LEN_MASK;
    uint8_t kind = p->kind;
    TPPI_NodeId src = p->node;
    struct reasm *r;

    if (client_packet(p)) {
        /* The client's: it takes a copy, its handlers run when it polls. */
        client->packet(p);
        __atomic_fetch_add(&client_pkts, 1, __ATOMIC_RELAXED);
        if (slot) {
            nc_rq_pop(slot);
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        wake_waiters();
        return;
    }
    if ((kind & TPPI_KIND_PROTO_MASK) != TPPI_KIND_AM ||
        len > nc_rq_payload || src >= TPPI_num_nodes || p->net > 1) {
        bad_packet(p, "not an active-message packet");
        goto done;
    }
    if ((kind & (TPPI_KIND_FIRST | TPPI_KIND_LAST)) ==
        (TPPI_KIND_FIRST | TPPI_KIND_LAST)) {
        if (len != p->word0) {
            bad_packet(p, "length differs from the message size");
            goto done;
        }
        run_handler(src, (uintptr_t)p->word1, p->data, len, slot);
        return;
    }

    r = &reasm[src * 2 + p->net];
    if (kind & TPPI_KIND_FIRST) {
        if (r->active) {
            tppi_report(&tppi_stats.bad_packets, "message from node %u "
                        "ended after %u of its %u bytes: dropped", src,
                        (unsigned)r->len, (unsigned)r->total);
        }
        if (p->word0 > TPPI_MAX_AM_BYTES) {
            r->active = false;
            bad_packet(p, "message larger than TPPI_MAX_AM_BYTES");
            goto done;
        }
        if (r->buf == NULL) {
            r->buf = malloc(TPPI_MAX_AM_BYTES);
            if (r->buf == NULL) {
                bad_packet(p, "no memory to reassemble the message");
                goto done;
            }
        }
        r->active = true;
        r->handler = (uintptr_t)p->word1;
        r->total = p->word0;
        r->len = 0;
    } else if (!r->active) {
        bad_packet(p, "continues no message");
        goto done;
    }
    if (p->word0 != r->total || r->len + len > r->total) {
        r->active = false;
        bad_packet(p, "does not fit the message it continues");
        goto done;
    }
    memcpy(r->buf + r->len, p->data, len);
    r->len += len;
    if (slot) {
        nc_rq_pop(slot);
    }
    if (kind & TPPI_KIND_LAST) {
        r->active = false;
        if (r->len != r->total) {
            tppi_report(&tppi_stats.bad_packets, "message from node %u "
                        "ended after %u of its %u bytes: dropped", src,
                        (unsigned)r->len, (unsigned)r->total);
            return;
        }
        run_handler(src, r->handler, r->buf, r->total, NULL);
    }
    return;

done:
    if (slot) {
        nc_rq_pop(slot);
    }
}

/* ---- control events --------------------------------------------------- */

static void peer_down_event(const struct nc_event *ev)
{
    tempest_peer_down_fn fn;

    __atomic_fetch_add(&tppi_stats.peers_lost, 1, __ATOMIC_RELAXED);
    if (ev->a == 0 && ev->b != 0) {
        printf("*** node %u: lost node %u (it exited with status "
               "%llu)\n", TPPI_self_address, (unsigned)ev->node,
               (unsigned long long)ev->b);
    } else if (ev->a != 0) {
        printf("*** node %u: lost node %u (connection lost)\n",
               TPPI_self_address, (unsigned)ev->node);
    }
    /* A peer that finished with status 0 is counted, not reported. */
    fn = __atomic_load_n(&peer_down_fn, __ATOMIC_ACQUIRE);
    if (fn) {
        fn(ev->node);
    } else if (ev->a != 0 &&
               !__atomic_load_n(&lost_unhandled, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&lost_unhandled, ev->node + 1, __ATOMIC_RELEASE);
        /* (Refused only when every device timer is armed: no grace.) */
        (void)nc_timer_arm(LOST_GRACE_TICKS, 0, LOST_GRACE_TAG);
        /* Waiters look again: one whose condition fails ends the node. */
        wake_waiters();
    }
}

/*
 * A link lost (its peer killed, or a link the fabric gave up on a live
 * peer) and no tempest_on_peer_down() callback: what the peer sent may be
 * lost with the link, so a program waiting for it would wait for ever.
 * The node ends when a wait of the program (tempest_wait and its kin)
 * finds its condition false and nothing left to handle, as Strata's poll
 * loops do, or, for a program that waits some other way, LOST_GRACE_TICKS
 * after the report unless it has ended by itself.  (A peer that exited,
 * with any status, ends nothing: what it sent normally came first.)
 */
static void __attribute__((noreturn)) end_link_lost(uint32_t node)
{
    if (__atomic_exchange_n(&ending, true, __ATOMIC_ACQ_REL)) {
        for (;;) {
            rt_cpu_sleep(100000);   /* another CPU ends the node */
        }
    }
    printf("*** tempest: node %u: the link with node %u is lost: ending this "
           "node (status 1; a program that can go on without it says so "
           "with tempest_on_peer_down)\n", TPPI_self_address,
           (unsigned)node);
    fflush(stdout);
    nc_failure_pause();
    rt_exit(1);
}

/* The grace after the report is over: the program has not ended. */
static void lost_grace_over(void)
{
    if (!__atomic_load_n(&at_exit, __ATOMIC_ACQUIRE) && !ending) {
        end_link_lost(lost_unhandled - 1);
    }
}

static void send_error_event(const struct nc_event *ev)
{
    __atomic_fetch_add(&tppi_stats.send_errors, 1, __ATOMIC_RELAXED);
    printf("*** node %u: send error: to node %u, ring %llu slot %llu: "
           "%s (error %llu)\n", TPPI_self_address, (unsigned)ev->node,
           (unsigned long long)ev->c, (unsigned long long)ev->a,
           nc_err_name((uint32_t)ev->b), (unsigned long long)ev->b);
}

static void handle_event(struct nc_event *e)
{
    uint32_t type = e->ctl & TEMPEST_EV_TYPE_MASK;
    struct nc_event ev = *e;
    tppi_event_fn fn;

    nc_cq_pop(e);
    if (type == TEMPEST_EV_TIMER && ev.b == LOST_GRACE_TAG) {
        lost_grace_over();
        return;
    }
    fn = type < TPPI_EV_TYPES ? event_fns[type] : NULL;
    if (fn) {
        fn(&ev);
    } else {
        tppi_report(&tppi_stats.bad_packets, "unknown control event type "
                    "%u (node %u): ignored", (unsigned)type,
                    (unsigned)ev.node);
    }
    if (client && client->event) {
        /* Every event reaches the client too (peers gone above all). */
        client->event(&ev);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        wake_waiters();
    }
}

/* ---- spinning ---------------------------------------------------------- */

/* A spin of the polling CPU: spin_begin(), then spin_turn() while true. */
struct spin {
    uint64_t start;         /* rt_time_ns() at spin_begin(), or last work */
    uint64_t ns;            /* how long: spin_us then */
    uint64_t handled;       /* handlers run, when start was taken */
    unsigned turns;
    bool quiet;             /* no POLL writes (not the polling CPU) */
    bool peeks;             /* the loop reads the RQ's slots every turn */
};

/* True while the node controller has been told the CPU polls. */
static bool polling;
/*
 * The protocol thread's last work was a packet (more of a message may be
 * arriving: its spin writes POLL on every turn for a while, nc_poll_due),
 * not a fault or an event.
 */
static bool pkt_last;

static uint64_t spin_work(void)
{
    return __atomic_load_n(&tppi_stats.msgs_handled, __ATOMIC_RELAXED) +
           __atomic_load_n(&tppi_stats.timers_run, __ATOMIC_RELAXED) +
           __atomic_load_n(&client_pkts, __ATOMIC_RELAXED);
}

static void spin_begin(struct spin *sp)
{
    sp->ns = (uint64_t)spin_us * 1000;
    sp->start = sp->ns ? rt_time_ns() : 0;
    sp->handled = spin_work();
    sp->turns = 0;
    sp->quiet = false;
    sp->peeks = false;
}

/*
 * One turn of a spin: returns false once it has lasted sp->ns, else tells
 * the node controller this CPU polls (which may raise its interrupt) and
 * returns true.  The clock only every CLOCK_EVERY turns: under TCG
 * reading it takes QEMU's global lock, which the other vCPUs' device
 * accesses (sends, tag changes) and the main loop wait for; each POLL
 * write takes it too, once.
 */
static inline __attribute__((always_inline)) bool spin_turn(struct spin *sp)
{
    uint64_t now;

    if (sp->ns == 0) {
        return false;
    }
    if (++sp->turns % CLOCK_EVERY == 0) {
        now = rt_time_ns();
        if (spin_work() != sp->handled) {
            /* Handlers ran in the spin (its interrupt): from the last. */
            sp->handled = spin_work();
            sp->start = now;
        } else if (now - sp->start >= sp->ns) {
            return false;
        }
    }
    /*
     * A loop that does not read the RQ itself (tppi_spin_masked, which
     * waits for the interrupt) nested in one that said POLL_PEEKS says
     * POLL 1 at once: peers then poke again, and their packets raise
     * IRQ_RQ at the next POLL, not up to NC_POLL_EVERY turns later.
     * One that reads it (sp->peeks) sees the rest of a message in its
     * slots, or the poll hint set by a packet that is not there yet (a
     * peer's device holds it): no POLL on every turn after a packet,
     * which in a stream cost the reader a device access in every gap
     * and the writer its RQ line's cache line (docs/fabric.rst, "A
     * reader that is never idle").
     */
    if (!sp->quiet && ((pkt_last && !sp->peeks ? nc_poll_due(sp->turns) :
                        nc_poll_idle_due(sp->turns)) ||
                       (!sp->peeks && nc_poll_peeking))) {
        polling = sp->peeks ? nc_poll_peek() : nc_poll(true);
    }
    __asm__ volatile("yield");
    return true;
}

/* The spin is over: peers must ring the doorbell again (POLL = 0). */
static void spin_end(void)
{
    if (polling) {
        polling = false;
        nc_poll(false);
    }
}

/* ---- the protocol thread ---------------------------------------------- */

/* An interrupt is pending at this CPU (masked or not). */
static inline bool irq_pending(void)
{
    return rt_irq_pending();
}

/* True if pt_step() has work before any message: faults, events, timers. */
static inline __attribute__((always_inline)) bool pt_prior_pending(void)
{
    return (work_busy(TPPI_WORK_FAULTS) && work[TPPI_WORK_FAULTS].pending()) ||
           nc_cq_peek() ||
           (work_busy(TPPI_WORK_TIMERS) && work[TPPI_WORK_TIMERS].pending());
}

/* True if pt_step() has something to do. */
static inline __attribute__((always_inline)) bool pt_pending(void)
{
    return pt_prior_pending() || backlog.count || nc_rq_peek();
}

/* Runs at most one event's handler; returns false if there was nothing. */
RT_HOT_RX static bool pt_step(void)
{
    struct nc_event *e;
    struct nc_pkt *p, *big;
    struct nc_pkt copy;

    /* Block access and page faults first (spec section 2). */
    if (work_busy(TPPI_WORK_FAULTS) && work[TPPI_WORK_FAULTS].step()) {
        pkt_last = false;
        return true;
    }
    e = nc_cq_peek();
    if (e) {
        pkt_last = false;
        handle_event(e);
        return true;
    }
    if (work_busy(TPPI_WORK_TIMERS) && work[TPPI_WORK_TIMERS].step()) {
        pkt_last = false;
        return true;
    }
    if (backlog.count) {
        /*
         * Taken out of the entry: the handler may push more and move the
         * backlog.  A long one is already in the heap: it is ours now.
         */
        big = backlog.e[backlog.head].big;
        if (!big) {
            p = &backlog.e[backlog.head].pkt;
            memcpy(&copy, p, pkt_bytes(p));
        }
        backlog.head = (backlog.head + 1) & (backlog.cap - 1);
        backlog.count--;
        pkt_last = true;
        handle_packet(big ? big : &copy, NULL);
        free(big);
        return true;
    }
    p = nc_rq_peek();
    if (p) {
        pkt_last = true;
        handle_packet(p, p);
        return true;
    }
    return false;
}

/*
 * A client's interrupt bits (and IRQ_SQ, which its sends wait for): which
 * of them are pending (one read of IRQ_STATUS, only with a client).  The
 * caller acknowledges them with libtempest's own, before client_tell():
 * a bit set again after that is a new interrupt.
 */
static uint32_t client_pending(void)
{
    uint32_t bits = client_irq_bits;

    return bits ? nc_reg(TEMPEST_NC_IRQ_STATUS) &
                  (bits | TEMPEST_NC_IRQ_SQ) : 0;
}

/* Tells the client, and wakes its waiters, that @st were pending. */
static void client_tell(uint32_t st)
{
    if (st) {
        if (client->irq) {
            client->irq(st);
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        wake_waiters();
    }
}

/* The node controller's interrupt. */
RT_HOT_RX static void nc_irq(unsigned intid, void *arg)
{
    uint32_t st = client_pending();

    (void)intid;
    (void)arg;
    nc_irq_ack(NC_IRQ_BITS | (st & client_irq_bits));
    client_tell(st);
    wake_sq_waiters();
    if (dedicated()) {
        return;         /* pt_main() does the work after its sleep */
    }
    while (pt_step()) {
        /* one handler at a time, priorities re-checked after each */
    }
    nc_rx_doorbell();
    wake_waiters();
}

/*
 * nc_irq() without the acknowledgement, on a one-vCPU node: no interrupt
 * was taken.  @doorbell: give the freed slots back now (RQ_DOORBELL), as
 * the interrupt does.  wait_spin() does not after each burst: its spin
 * writes POLL, which gives them back too, at least every NC_POLL_EVERY
 * turns, and it rings the doorbell once when it ends; in a stream that
 * saved a device access every other message (docs/fabric.rst, "Fewer
 * device accesses and lookups, twenty-fourth session").
 */
static void pt_run_inline(bool doorbell)
{
    tppi_pt_inline = true;
    while (pt_step()) {
        /* the fault first: its work is the first of every step */
    }
    if (doorbell) {
        nc_rx_doorbell();
    }
    wake_waiters();
    tppi_pt_inline = false;
}

/* RQ_DOORBELL, if slots were freed, with the interrupt's work kept out. */
static void rx_doorbell_masked(void)
{
    uint64_t flags = rt_irq_save();

    nc_rx_doorbell();
    rt_irq_restore(flags);
}

void tppi_run_protocol_thread(void)
{
    if (dedicated()) {
        rt_cpu_wake(pt_cpu);
        return;
    }
    pt_run_inline(true);
}

/*
 * A dedicated protocol thread takes everything from the RQ, but a client's
 * poll on another CPU (tempest_client_poll) may take the client's own
 * packets at its head while the thread is not in a step: the RQ's taker.
 * The thread holds it for each step; the client's poll only tries it.
 */
static uint32_t rq_taker;

/*
 * Clients' spins (client_spin) on a node with a dedicated protocol
 * thread: how many CPUs spin, under client_spin_lock, and the thread
 * sleeps meanwhile (one spinner a node: docs/tempest.rst, "A client's
 * wait spins").
 */
static uint32_t client_spinning;
static uint32_t client_spin_lock;
/*
 * The thread sleeps because a client spins: the last spin's end wakes
 * it, or, where a wake-up costs more than a spin, makes the sleep its
 * own (client_spin_leave).
 */
static uint32_t pt_yielded;
/*
 * Clients' polls (tempest_client_poll) outside a client's wait, where
 * they may stand in for the thread's spin (client_polls_lead), are
 * counted in client_lead_polls.  The thread, finding POLL_LEAD_MIN more
 * since it last looked (a count, not a time: with more vCPUs than host
 * cores the client's vCPU may not run while the thread's does), sleeps
 * instead of spinning (pt_poll_yielded), first for POLL_SLICE_US, then
 * for twice as long each time the polls went on meanwhile, up to
 * POLL_YIELD_US (POLL_YIELD_LONG_US where a sleep costs more than a
 * spin: poll_yield_max_us()); the polls do its spin's part meanwhile:
 * POLL, and a wake-up for work that is the thread's (docs/tempest.rst,
 * "A client's polls spin for the thread").  A fault on a client's CPU,
 * or a send's sleep there (tppi_client_poll_stop), bumps
 * client_lead_gen: the polls before it count no more.  A wait's sleep
 * need not: no CPU may sleep in a wait while the thread sleeps for the
 * polls (the waiters check).
 */
static uint32_t client_lead_polls;
static uint32_t client_lead_gen;
static uint32_t client_poll_turns;  /* all of them: when POLL is due */
static uint32_t pt_poll_yielded;
/* Bumped before each sleep of the thread for a client (its spin or polls). */
static uint32_t pt_sleep_seq;

/*
 * True if the client's polls lead: POLL_LEAD_MIN of them since @seen
 * (taken again after a fault or send's sleep of the client's, @gen), and
 * then @seen is the count now, for the next look.
 */
static bool polls_lead(uint32_t *seen, uint32_t *gen)
{
    uint32_t g = __atomic_load_n(&client_lead_gen, __ATOMIC_ACQUIRE);
    uint32_t n = __atomic_load_n(&client_lead_polls, __ATOMIC_RELAXED);

    if (g != *gen) {
        *gen = g;
        *seen = n;
        return false;
    }
    if (n - *seen < POLL_LEAD_MIN) {
        return false;
    }
    *seen = n;
    return true;
}

/*
 * The thread's longest sleep for a client's polls.  Under Linux each of
 * its timed wake-ups costs its vCPU some hundreds of microseconds (the
 * guest kernel's timer, scheduler and futex call under TCG), taken from
 * the host cores the polling CPUs need: there it is as long as the
 * Linux runtime already lets a device's interrupt wait while the CPUs
 * are busy (LINE_CHECK_MAX_US in rt-linux/irq.c), 16 ms.  Measured
 * (strata_bench, 2 nodes, --smp 2, two sets of 10 pairs, 20 and 16 ms):
 * the AM round trip 0.58 and 0.51, the Broadcast 0.62 and 0.92 of what
 * they were with 2 ms.
 */
static inline unsigned poll_yield_max_us(void)
{
    return rt_cpu_sleep_spin_us() ? POLL_YIELD_LONG_US : POLL_YIELD_US;
}

static inline bool client_polls_lead(void)
{
    return client && spin_us && nc_poll_present;
}

static void client_poll_handback(void);
static void rq_irq(bool on);

static void pt_main(void *arg)
{
    struct spin sp = { 0 };
    bool spinning = false;
    bool worked = false;
    bool stepped, more, yielded, for_polls = false, poll_slept = false;
    uint32_t lead_seen = 0, lead_gen = 0;
    unsigned slice_us = POLL_SLICE_US;

    (void)arg;
    tppi_pt_self = true;
    nc_irq_enable(NC_IRQ_BITS);
    __atomic_store_n(&pt_running, true, __ATOMIC_RELEASE);
    for (;;) {
        if (__atomic_load_n(&client_irq_bits, __ATOMIC_RELAXED) &&
            irq_pending()) {
            /*
             * A client waits for a collective or a broadcast: take the
             * interrupt now (nc_irq wakes the client), not after the spin.
             * Not a sleep: the client's register read may acknowledge
             * the interrupt (COLL_WAIT, BCAST_WAIT) before a WFI here,
             * which would then wait for the next one with work left.
             */
            rt_irq_run_pending();
        }
        tppi_lock(&rq_taker);
        stepped = pt_step();
        tppi_unlock(&rq_taker);
        if (stepped) {
            /* Still polling: the thread comes straight back to it. */
            spinning = false;
            worked = true;
            poll_slept = false;
            continue;
        }
        if (worked) {
            /* Idle after work: computation code may be waiting for it. */
            wake_after_work();
            worked = false;
        }
        wake_sq_waiters();
        if (!spinning) {
            spin_begin(&sp);
            sp.peeks = true;        /* pt_step() reads the RQ every turn */
            spinning = true;
        }
        /*
         * A client's polls lead, and no CPU's wait sleeps for the
         * thread: they poll for the thread (below), for a slice twice
         * as long as the last if it too was theirs.
         */
        for_polls = !__atomic_load_n(&client_spinning, __ATOMIC_RELAXED) &&
                    sp.turns % CLOCK_EVERY == 0 && client_polls_lead() &&
                    !__atomic_load_n(&waiters, __ATOMIC_RELAXED) &&
                    polls_lead(&lead_seen, &lead_gen);
        if (for_polls) {
            unsigned max_us = poll_yield_max_us();

            slice_us = !poll_slept ? POLL_SLICE_US :
                       slice_us * 2 > max_us ? max_us : slice_us * 2;
        }
        poll_slept = false;
        if (!for_polls &&
            !__atomic_load_n(&client_spinning, __ATOMIC_RELAXED) &&
            spin_turn(&sp)) {
            wake_idle_check(sp.turns);
            continue;
        }
        spinning = false;
        if (wake_due) {
            wake_waiters();
        }
        polling = false;
        yielded = __atomic_load_n(&client_spinning, __ATOMIC_RELAXED);
        if (yielded) {
            /*
             * A client spins and owns POLL (client_spin): no POLL 0, and
             * its end wakes the thread or makes the sleep the thread's
             * own (client_spin_leave).  Marked first, then the
             * spin looked at again: either the client's end sees the mark
             * or this sees the end.
             */
            for_polls = false;
            __atomic_add_fetch(&pt_sleep_seq, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&pt_yielded, 1, __ATOMIC_SEQ_CST);
            /* (STLR then LDAR orders nothing under TCG on x86: rt/gic.c) */
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (!__atomic_load_n(&client_spinning, __ATOMIC_SEQ_CST)) {
                __atomic_store_n(&pt_yielded, 0, __ATOMIC_RELAXED);
                continue;
            }
        } else if (for_polls) {
            /*
             * The client's polls write POLL now, and wake the thread for
             * its work (marked first, then the last look below: a packet
             * either is seen there or by a poll after the mark).  No end
             * wakes it: the sleep is a slice long, and then the thread
             * looks again at the polls.  IRQ_RQ off first: a CPU that
             * goes to sleep in a wait makes the sleep the thread's own
             * (client_poll_handback: it marks itself a waiter, then
             * looks at the mark, and turns IRQ_RQ on; this marks, then
             * looks at the waiters).
             */
            rq_irq(false);
            __atomic_add_fetch(&pt_sleep_seq, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&pt_poll_yielded, 1, __ATOMIC_SEQ_CST);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (__atomic_load_n(&waiters, __ATOMIC_SEQ_CST)) {
                __atomic_store_n(&pt_poll_yielded, 0, __ATOMIC_RELAXED);
                rq_irq(true);
                continue;
            }
            yielded = true;
        } else {
            /* POLL = 0 first: what comes after it raises the interrupt. */
            nc_poll(false);     /* whoever said POLL 1: a client too */
        }
        nc_rx_doorbell();
        nc_irq_ack(NC_IRQ_BITS);
        /*
         * The last look under rq_taker: a client's poll that took the
         * packet at the head meanwhile would leave this look a freed
         * slot, and a packet behind it whose interrupt was acknowledged
         * above to wait for the next interrupt.
         */
        tppi_lock(&rq_taker);
        more = pt_pending();
        tppi_unlock(&rq_taker);
        if (!more) {
            tppi_stats.sleeps++;
            if (for_polls) {
                tppi_stats.poll_yields++;
            }
            if (yielded) {
                /* (under Linux: no spin of its own) */
                rt_cpu_idle(for_polls ? slice_us : 0);
            } else {
                rt_cpu_sleep(0);
            }
        }
        if (yielded) {
            __atomic_store_n(&pt_yielded, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&pt_poll_yielded, 0, __ATOMIC_RELAXED);
        }
        if (for_polls) {
            rq_irq(true);
            poll_slept = true;
        }
    }
}

/*
 * wait_spin() turned the node controller's interrupt off for its spin
 * (one CPU: no lock needed).  A wait nested in its condition that sleeps
 * (a block access fault's, tppi_spin_masked) turns it on again first:
 * the reply it sleeps for has nothing else to announce it.
 */
static bool spin_irq_off;

/*
 * The end of wait_spin()'s quiet spin: the interrupt on again, what it
 * said meanwhile acknowledged (the spin ran it), and what came since
 * the spin's last look run now: a packet the device wrote before the
 * acknowledgement has no interrupt left to announce it.
 */
static void irq_back_on(void)
{
    uint64_t flags = rt_irq_save();

    spin_irq_off = false;
    nc_irq_ack(NC_IRQ_BITS);
    nc_irq_enable(NC_IRQ_BITS | client_irq_bits);
    if (pt_pending()) {
        tppi_run_protocol_thread();
    }
    rt_irq_restore(flags);
}

/*
 * On a one-vCPU node, computation code's wait spins first, with IRQs
 * unmasked: the node controller's interrupt runs handlers in the middle
 * of the spin, so a reply is handled without a WFI round trip.  Returns
 * true if cond(arg) came true meanwhile.
 */
static bool wait_spin(int (*cond)(void *arg), void *arg, uint64_t deadline)
{
    struct spin sp;
    bool met = false;
    bool irq_off;

    spin_begin(&sp);
    sp.peeks = true;        /* pt_pending() reads the RQ every turn */
    /*
     * The spin looks at the rings itself (pt_pending), so the node
     * controller's interrupt is off while it lasts: a message taken
     * through the interrupt costs the exception and four accesses of
     * the GIC and the device (IAR twice, IRQ_ACK, EOIR), each under
     * QEMU's global lock; run from the spin it costs none of them.  Not
     * with a client, whose own bits need the interrupt.
     */
    irq_off = sp.ns && nc_poll_present && !client_irq_bits;
    if (irq_off) {
        spin_irq_off = true;
        nc_irq_enable(0);
    }
    while (!(met = cond(arg) != 0) &&
           (deadline == 0 || sp.turns % CLOCK_EVERY ||
            rt_time_ns() < deadline) &&
           spin_turn(&sp)) {
        /*
         * Handlers run from the interrupt.  On bare metal it is taken
         * before this looks; a Linux process's runtime finds it here
         * (rt_irq_pending reads the device now and then) and runs it.
         * Masked, and looked at again: an interrupt taken in between
         * would leave the sleep nothing to end it.
         */
        if (irq_pending()) {
            uint64_t flags = rt_irq_save();

            if (irq_pending()) {
                rt_cpu_sleep(0);    /* pending: runs the handler, returns */
            }
            rt_irq_restore(flags);
        } else if (pt_pending()) {
            /*
             * Work in the rings (memory) that no interrupt has run yet:
             * a Linux process's runtime reads the device only every
             * few turns, so the message the last POLL took is run now,
             * as the fault hook runs it.  On bare metal the interrupt
             * has nearly always run it first; its late turn finds
             * nothing.
             */
            uint64_t flags = rt_irq_save();

            pt_run_inline(false);
            rt_irq_restore(flags);
        }
    }
    spin_end();
    rx_doorbell_masked();   /* what the spin's handlers freed */
    if (irq_off) {
        irq_back_on();
    }
    return met;
}

bool tppi_spin_masked(int (*cond)(void *arg), void *arg)
{
    struct spin sp;
    bool met = false;

    if (spin_irq_off) {
        irq_back_on();      /* a fault in wait_spin()'s condition */
    }
    spin_begin(&sp);
    /*
     * With a CPU of its own the protocol thread polls the rings itself:
     * a POLL write here would only take QEMU's lock from it.
     */
    sp.quiet = dedicated();
    while (!(met = cond(arg) != 0) && spin_turn(&sp)) {
        /*
         * On a CPU the protocol thread shares, its interrupt (a device
         * event, or the one a fault raised in software) shows in ISR_EL1:
         * let it run now rather than after the spin.
         */
        if (!dedicated() && irq_pending()) {
            rt_cpu_sleep(0);    /* pending: runs the handler, returns */
        }
    }
    spin_end();
    return met;
}

/*
 * A wait of the program whose condition is false: if a link was lost
 * (and no callback set), nothing is left to handle and the program is
 * not exiting, the node ends here.  Not for a client's waits (Strata
 * sharing the rings fails its own way, StrataFail).
 */
static void lost_wait_check(void)
{
    if (__atomic_load_n(&lost_unhandled, __ATOMIC_ACQUIRE) && !ending &&
        !client && !__atomic_load_n(&at_exit, __ATOMIC_ACQUIRE) &&
        !pt_pending()) {
        end_link_lost(lost_unhandled - 1);
    }
}

static int wait_until(int (*cond)(void *arg), void *arg, uint64_t deadline);

int tempest_wait_until(int (*cond)(void *arg), void *arg, uint64_t deadline)
{
    bool paused = tppi_client_spin_pause();
    int met = wait_until(cond, arg, deadline);

    tppi_client_spin_resume(paused);
    return met;
}

static int wait_until(int (*cond)(void *arg), void *arg, uint64_t deadline)
{
    unsigned cpu = rt_cpu_id();
    uint64_t flags, now;
    bool woken = false;
    int met;

    if (cond == NULL) {
        return 0;
    }
    if (tppi_on_protocol_thread()) {
        return cond(arg);
    }
    for (;; woken = true) {
        /*
         * Spin again after every wake-up: the node is busy then, and the
         * next message (a reply, the next ping) is likely near.
         */
        if (!dedicated() && cpu == pt_cpu && !rt_irq_masked() &&
            wait_spin(cond, arg, deadline)) {
            return 1;
        }
        flags = rt_irq_save();
        if (!woken) {
            __atomic_store_n(&wait_since[cpu], rt_time_ns(), __ATOMIC_RELAXED);
        }
        __atomic_fetch_or(&waiters, 1U << cpu, __ATOMIC_SEQ_CST);
        met = cond(arg);
        now = deadline ? rt_time_ns() : 0;
        if (met || (deadline && now >= deadline)) {
            __atomic_fetch_and(&waiters, ~(1U << cpu), __ATOMIC_RELAXED);
            if (woken) {
                __atomic_fetch_and(&waiters_futile, ~(1U << cpu),
                                   __ATOMIC_RELAXED);
            }
            rt_irq_restore(flags);
            return met ? 1 : 0;
        }
        lost_wait_check();
        if (!(__atomic_load_n(&waiters, __ATOMIC_SEQ_CST) & (1U << cpu))) {
            /*
             * A wake-up took our mark while cond() ran: one in its block
             * access fault (the protocol thread's wake_after_work() after
             * the fault's handler), whose flag the fault's own sleep then
             * used up.  Sleeping now, unmarked, nothing would wake us:
             * mark again and look again.
             */
            rt_irq_restore(flags);
            continue;
        }
        if (woken) {
            /* Woken for nothing: see wake_after_work(). */
            __atomic_fetch_or(&waiters_futile, 1U << cpu, __ATOMIC_RELAXED);
        }
        /* No time limit: the protocol thread's wake-up ends the WFI. */
        __atomic_fetch_add(&tppi_stats.waits, 1, __ATOMIC_RELAXED);
        client_poll_handback();
        rt_cpu_sleep(deadline ? (deadline - now + 999) / 1000 : 0);
        rt_irq_restore(flags);
    }
}

void tempest_wait(int (*cond)(void *arg), void *arg)
{
    tempest_wait_until(cond, arg, 0);
}

/* ---- clients (tempest/client.h) -------------------------------------- */

/*
 * A client's packet (tempest/client.h): under the ring's lock, so it never
 * lands between the packets of a message, with IRQs masked, so that on a
 * one-vCPU node the protocol thread (an interrupt handler) never finds the
 * lock held by the code it interrupted.  Never waits.  Here, with the
 * rest of the client interface and the send rings' locks (send.c takes
 * them too), so that a program that links libtempest at all has all of
 * it: a client refers to it weakly, and libstrata in a program that used
 * nothing of libtempest's sending found this NULL while it lived in
 * send.c, and its own sends never left (strata_bench_shared, 2026-11-30).
 */
uint32_t tppi_sq_lock[2];

bool tempest_client_send(unsigned net, unsigned dest, uint8_t kind,
                         uint32_t w0, uint64_t w1, const void *data,
                         uint32_t len)
{
    struct nc_pkt *p = NULL;
    uint64_t flags;

    if (net > TEMPEST_NET_REPLY || len > TEMPEST_PKT_PAYLOAD) {
        return false;
    }
    flags = rt_irq_save();
    if (tppi_trylock(&tppi_sq_lock[net])) {
        p = nc_sq_claim(net);
        if (p) {
            nc_sq_fill(p, dest, kind, w0, w1, data, len);
            nc_sq_post(net, p, len);
        }
        nc_sq_doorbell(net);
        tppi_unlock(&tppi_sq_lock[net]);
    }
    rt_irq_restore(flags);
    return p != NULL;
}

int tempest_client_register(const struct tempest_client *c)
{
    if (c == NULL || c->packet == NULL || c->proto == 0 || c->proto > 15 ||
        tppi_pt_mode == TPPI_PT_NONE || client != NULL) {
        return -1;
    }
    /*
     * A dedicated protocol thread sets IRQ_ENABLE when it starts, which
     * may be after main() began: the client's bits go in after that.
     */
    while (dedicated() && !__atomic_load_n(&pt_running, __ATOMIC_ACQUIRE)) {
        rt_cpu_sleep(10);
    }
    __atomic_store_n(&client, c, __ATOMIC_RELEASE);
    __atomic_store_n(&client_irq_bits, c->irq_bits & ~NC_IRQ_BITS,
                     __ATOMIC_RELEASE);
    nc_irq_enable(NC_IRQ_BITS | client_irq_bits);
    return 0;
}

bool tempest_client_polled(void)
{
    return !dedicated() && rt_cpu_id() == pt_cpu;
}

bool tempest_client_on_protocol_thread(void)
{
    return tppi_on_protocol_thread();
}

/*
 * tempest_client_poll() on a node with a dedicated protocol thread: the
 * client's own packets at the RQ's head, taken on the calling CPU while
 * the thread is not in a step (rq_taker), so that a reply to the program
 * waits neither for the thread's vCPU to wake and run nor for the
 * thread to wake the program's.  Nothing else is taken here: a Tempest
 * packet, a backlog or the work of section 2 that comes before messages
 * (a fault, an event, a timer due) ends it, for the thread.
 */
static bool client_take(void)
{
    struct nc_pkt *p;
    uint64_t flags;
    unsigned n = 0;

    if (!client || __atomic_load_n(&rq_taker, __ATOMIC_RELAXED)) {
        return false;
    }
    flags = rt_irq_save();
    if (tppi_trylock(&rq_taker)) {
        while (!pt_prior_pending() && backlog.count == 0 &&
               n < CLIENT_TAKE_MAX &&
               (p = nc_rq_peek()) != NULL && client_packet(p)) {
            client->packet(p);
            __atomic_fetch_add(&client_pkts, 1, __ATOMIC_RELAXED);
            nc_rq_pop_quiet(p);
            n++;
        }
        if (n && __atomic_load_n(&waiters, __ATOMIC_RELAXED)) {
            wake_waiters();     /* another CPU's wait may be for them */
        }
        if (nc_rings[TEMPEST_RING_RQ].freed >= NC_FREE_BATCH) {
            nc_rx_doorbell();   /* a doorbell, not the thread's POLL word */
        }
        tppi_unlock(&rq_taker);
    }
    rt_irq_restore(flags);
    if (n) {
        __atomic_fetch_add(&tppi_stats.client_polls, 1, __ATOMIC_RELAXED);
    }
    return n != 0;
}

/*
 * pt_pending() but for the client's packets at the RQ's head: the work
 * that only the thread takes.  A client's spin or poll that took what it
 * could (client_take) wakes the thread for this, not for a packet of its
 * own that came since (in a ping-pong a third to two thirds of the
 * replies came just after the take and woke the thread's vCPU for
 * nothing).
 */
static bool thread_pending(void)
{
    struct nc_pkt *p;

    return pt_prior_pending() || backlog.count ||
           ((p = nc_rq_peek()) != NULL && !client_packet(p));
}

/*
 * A client's spin or poll while the thread sleeps for it: wakes the
 * thread for work of its own, once a sleep (@woke_seq: the pt_sleep_seq
 * of the last wake-up; the seq is taken first, so work seen after the
 * thread's last look before a sleep always gets a wake-up).
 */
static void thread_wake(uint32_t *woke_seq)
{
    uint32_t seq = __atomic_load_n(&pt_sleep_seq, __ATOMIC_ACQUIRE);

    if (seq != *woke_seq && thread_pending()) {
        rt_cpu_wake(pt_cpu);
        *woke_seq = seq;
    }
}

/*
 * The client's interrupt bits in IRQ_ENABLE, on a node with a dedicated
 * protocol thread (under client_spin_lock): off while a client spins and
 * no client's wait sleeps (the spin reads them in IRQ_STATUS itself, and
 * a collective's end or a broadcast word then does not wake the thread's
 * vCPU for nothing), on before a client's wait sleeps.  IRQ_STATUS keeps
 * them meanwhile: one that came raises the interrupt as they go on.
 */
static bool client_bits_on = true;
static uint32_t client_sleepers;    /* clients' waits that may sleep */
static uint32_t client_spin_cpus;   /* the CPUs whose spin is open */
/* IRQ_RQ is off while the thread sleeps for a client's polls. */
static bool rq_irq_off;

/* IRQ_ENABLE as the two say (under client_spin_lock). */
static void irq_enable_now(void)
{
    nc_irq_enable((NC_IRQ_BITS & ~(rq_irq_off ? TEMPEST_NC_IRQ_RQ : 0)) |
                  (client_bits_on ? client_irq_bits : 0));
}

static void client_bits(bool on)
{
    if (client_bits_on != on) {
        client_bits_on = on;
        irq_enable_now();
    }
}

/*
 * IRQ_RQ off while the protocol thread sleeps for a client's polls: the
 * polls read the RQ's slots and wake the thread for a packet of its own,
 * and a POLL of theirs that finds a packet a peer wrote straight in
 * would otherwise raise it and wake the thread's vCPU for nothing (about
 * one round trip in four).  IRQ_STATUS keeps it: on again, it is raised
 * at once if it came.
 */
static void rq_irq(bool on)
{
    tppi_lock(&client_spin_lock);
    rq_irq_off = !on;
    irq_enable_now();
    tppi_unlock(&client_spin_lock);
}

static void client_spin_enter(void)
{
    tppi_lock(&client_spin_lock);
    if (__atomic_add_fetch(&client_spinning, 1, __ATOMIC_SEQ_CST) == 1 &&
        client_sleepers == 0) {
        client_bits(false);
    }
    client_spin_cpus |= 1U << rt_cpu_id();
    tppi_unlock(&client_spin_lock);
}

/*
 * The end of a spin.  The last one gives the node back to the thread:
 * if it sleeps for the client, it is woken, polls again and owns POLL
 * (except where a wake-up costs more than a spin: then as below);
 * else POLL 0 (peers ring the doorbell again, the thread's interrupt),
 * and a wake-up only for work that came before it.
 */
static void client_spin_leave(void)
{
    tppi_lock(&client_spin_lock);
    client_spin_cpus &= ~(1U << rt_cpu_id());
    if (__atomic_sub_fetch(&client_spinning, 1, __ATOMIC_SEQ_CST) == 0) {
        /*
         * A thread asleep for the client's polls is left so: the polls
         * own POLL and go on (or a wait's sleep hands the node back), or
         * its sleep ends with its slice.  A POLL 0 here would leave a
         * packet to the doorbell and an IRQ_RQ that is off.  One asleep
         * for the spin is woken to poll again, except where a wake-up
         * costs more than a spin (rt_cpu_sleep_spin_us: under Linux it
         * is a system call here, and then the thread's vCPU takes a host
         * core from the client's): there its sleep becomes its own, as
         * below, and the device's interrupt ends it.
         */
        if (__atomic_load_n(&pt_yielded, __ATOMIC_SEQ_CST) &&
            !rt_cpu_sleep_spin_us()) {
            rt_cpu_wake(pt_cpu);
        } else if (!__atomic_load_n(&pt_poll_yielded, __ATOMIC_SEQ_CST)) {
            nc_poll_other(false);
            if (pt_pending()) {
                rt_cpu_wake(pt_cpu);
            }
        }
    }
    tppi_unlock(&client_spin_lock);
}

/*
 * A wait that may sleep, or a fault's, on a CPU whose client spin is
 * open (a wait in the spin's condition: Strata's report of a peer gone
 * waits for the peers' events): the spin is ended first, so that the
 * thread polls again meanwhile, and opened again after it
 * (tppi_client_spin_resume).  Returns true if there was one.
 */
bool tppi_client_spin_pause(void)
{
    if (!dedicated() || !(__atomic_load_n(&client_spin_cpus,
                                          __ATOMIC_RELAXED) &
                          (1U << rt_cpu_id()))) {
        return false;
    }
    client_spin_leave();
    return true;
}

void tppi_client_spin_resume(bool paused)
{
    if (paused) {
        client_spin_enter();
    }
}

/*
 * A client's wait on a node with a dedicated protocol thread, where the
 * node spins: the calling CPU spins for the spin time before it sleeps,
 * and takes what it waits for itself: the client's packets at the RQ's
 * head (client_take), and its interrupt bits, read from IRQ_STATUS after
 * each POLL write (which moves what peers left in shared memory into the
 * device, raising them).  The protocol thread sleeps while the spin lasts
 * (its vCPU would only take the host core the spin needs) and is woken
 * for the work that is its own: anything else at the RQ's head (once
 * until nothing is pending), and the device's interrupt for what comes
 * through its rings, an event or a timer.  Before, the client slept at
 * once, and every collective and broadcast word woke first the thread's
 * vCPU, then the client's (60-100 us each, four vCPUs on two host
 * cores).  Every turn does all of it, a turn that took packets too: a
 * stream of them does not keep the spin from its time limit or from the
 * interrupt bits.  Returns true if cond(arg) came true (counted in
 * client_spins, whichever wait spun).
 */
static bool client_spin(int (*cond)(void *arg), void *arg, uint64_t deadline)
{
    struct spin sp;
    bool met = false;
    uint32_t st, woke_seq = ~0U;

    client_spin_enter();
    spin_begin(&sp);
    /*
     * The thread sleeps meanwhile, so this CPU is the node's poller: it
     * spins as long as the runtime's sleep would on the CPU the device's
     * interrupt goes to (rt_cpu_sleep_spin_us; Strata alone does so).
     * Under Linux, a spin of SPIN_US only left a collective 40-90 us
     * (medians) where Strata alone takes 3-4.
     */
    sp.ns += (uint64_t)rt_cpu_sleep_spin_us() * 1000;
    sp.quiet = true;        /* its POLL writes are nc_poll_other's */
    while (!(met = cond(arg) != 0) &&
           (deadline == 0 || sp.turns % CLOCK_EVERY ||
            rt_time_ns() < deadline) &&
           spin_turn(&sp)) {
        client_take();
        thread_wake(&woke_seq);
        if (nc_poll_idle_due(sp.turns)) {
            nc_poll_other(true);
            st = client_pending() & client_irq_bits;
            if (st) {
                nc_irq_ack(st);
                client_tell(st);
            }
        }
    }
    client_spin_leave();
    if (met) {
        __atomic_fetch_add(&tppi_stats.client_spins, 1, __ATOMIC_RELAXED);
    }
    return met;
}

int tempest_client_wait(int (*cond)(void *arg), void *arg, uint64_t deadline)
{
    int met;

    if (!dedicated() || tppi_on_protocol_thread()) {
        return tempest_wait_until(cond, arg, deadline);
    }
    tppi_lock(&client_spin_lock);
    client_sleepers++;
    client_bits(true);
    tppi_unlock(&client_spin_lock);
    met = tempest_wait_until(cond, arg, deadline);
    tppi_lock(&client_spin_lock);
    client_sleepers--;
    tppi_unlock(&client_spin_lock);
    return met;
}

/* A client's wait on this CPU may spin (client_spin) before it sleeps. */
static bool client_wait_spins(void)
{
    return dedicated() && !tppi_on_protocol_thread() && spin_us &&
           nc_poll_present;
}

int tempest_client_spin_wait(int (*cond)(void *arg), void *arg,
                             uint64_t deadline)
{
    if (client_wait_spins() && client_spin(cond, arg, deadline)) {
        return 1;
    }
    return tempest_client_wait(cond, arg, deadline);
}

int tempest_client_idle_wait(int (*cond)(void *arg), void *arg,
                             uint64_t deadline)
{
    /*
     * The sleep would hand the node back (client_poll_handback), and the
     * next packet would come through the doorbell, the device's
     * interrupt and the thread's wake-up, then the client's: under Linux
     * the driver's interrupt and two futex wake-ups.
     */
    if (client_wait_spins() && rt_cpu_sleep_spin_us() &&
        __atomic_load_n(&pt_poll_yielded, __ATOMIC_RELAXED)) {
        if (client_spin(cond, arg, deadline)) {
            return 1;
        }
        if (deadline && rt_time_ns() >= deadline) {
            /* Spun to it: no wait (its IRQ_ENABLE writes) after. */
            return cond(arg) != 0;
        }
    }
    return tempest_client_wait(cond, arg, deadline);
}

/*
 * A client's poll on a node with a dedicated protocol thread, where the
 * node spins: counted (@lead: outside a wait of the client's), and while
 * the thread sleeps for the polls (pt_poll_yielded) it does the thread's
 * spin's part: POLL when due (with POLL_PEEKS: nc_poll_other leaves the
 * consumer's counts alone), and a wake-up for work that is the thread's.
 * Two vCPUs spinning for one node took the host cores from the peers'
 * (docs/tempest.rst, "A client's polls spin for the thread").
 */
static uint32_t poll_woke_seq = ~0U;

static void client_poll_turn(bool lead)
{
    uint32_t n = __atomic_add_fetch(&client_poll_turns, 1, __ATOMIC_RELAXED);

    if (lead) {
        __atomic_fetch_add(&client_lead_polls, 1, __ATOMIC_RELAXED);
    }
    if (!__atomic_load_n(&pt_poll_yielded, __ATOMIC_SEQ_CST)) {
        return;
    }
    thread_wake(&poll_woke_seq);
    if (nc_poll_idle_due(n)) {
        nc_poll_other(true);
    }
}

/*
 * A client's CPU about to sleep in a wait (wait_until), or that takes a
 * fault or sleeps for a send ring (tppi_client_poll_stop, which also
 * makes the polls' count start again): if the thread sleeps for the
 * polls, the sleep becomes the thread's own, as if it had gone to sleep
 * itself: IRQ_RQ on, POLL 0 (peers ring the doorbell, whose packet
 * raises the interrupt), and a wake-up only for work already there.
 * Waking it to poll (a first version) cost a wake-up of its vCPU at
 * every sleep of a client that polls and sleeps by turns (a
 * broadcast's receiver).
 */
static void client_poll_handback(void)
{
    if (!dedicated() || tppi_on_protocol_thread()) {
        return;
    }
    if (__atomic_load_n(&pt_poll_yielded, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&pt_poll_yielded, 0, __ATOMIC_SEQ_CST)) {
        rq_irq(true);
        nc_poll_other(false);
        if (pt_pending()) {
            rt_cpu_wake(pt_cpu);
        }
    }
}

void tppi_client_poll_stop(void)
{
    if (dedicated() && !tppi_on_protocol_thread()) {
        __atomic_fetch_add(&client_lead_gen, 1, __ATOMIC_RELEASE);
        client_poll_handback();
    }
}

/*
 * On a one-vCPU node, the protocol thread's work found in memory (the
 * RQ's and CQ's slots, a fault, a timer, the backlog) run here with the
 * CPU's interrupts masked, as wait_spin() runs it: a packet a peer wrote
 * straight into the RQ while the node said POLL_PEEKS has raised
 * nothing, and run from here it costs no exception and none of the
 * interrupt's accesses (the GIC's two, IRQ_STATUS, IRQ_ACK).  What the
 * device raised meanwhile is left pending, and taken when the
 * interrupts open.
 */
bool tempest_client_poll(bool in_wait)
{
    uint64_t flags;
    bool ran = false;

    if (tppi_pt_mode == TPPI_PT_NONE || tppi_on_protocol_thread()) {
        return false;
    }
    if (dedicated()) {
        ran = client_take();
        if (client_polls_lead()) {
            client_poll_turn(!in_wait);
        }
        return ran;
    }
    if (rt_cpu_id() != pt_cpu || rt_irq_masked() || !pt_pending()) {
        return false;   /* (masked: the caller keeps handlers out) */
    }
    flags = rt_irq_save();
    if (pt_pending()) {
        pt_run_inline(false);
        __atomic_fetch_add(&tppi_stats.client_polls, 1, __ATOMIC_RELAXED);
        ran = true;
    }
    rt_irq_restore(flags);
    return ran;
}

int tempest_flush(unsigned max_ms)
{
    uint64_t t0 = rt_time_ns();

    while (!nc_sq_drained(TEMPEST_NET_REQUEST) ||
           !nc_sq_drained(TEMPEST_NET_REPLY)) {
        if (max_ms && rt_time_ns() - t0 > (uint64_t)max_ms * 1000000) {
            return -1;
        }
        nc_sq_doorbell(TEMPEST_NET_REQUEST);
        nc_sq_doorbell(TEMPEST_NET_REPLY);
        rt_cpu_sleep(50);
    }
    return 0;
}

static void flush_at_exit(void)
{
    __atomic_store_n(&at_exit, true, __ATOMIC_RELEASE);
    tempest_flush(1000);
}

/* ---- start-up ---------------------------------------------------------- */

/* After every module's TPPI_REGISTER constructor (default priority). */
__attribute__((constructor))
static void tempest_init(void)
{
    TPPI_self_address = rt_node_id();
    TPPI_num_nodes = rt_num_nodes();
    if (nc_init() != 0) {
        printf("*** tempest: node %u: no messaging: stopping\n",
               TPPI_self_address);
        rt_exit(1);
    }
    reasm = calloc((size_t)TPPI_num_nodes * 2, sizeof(*reasm));
    if (reasm == NULL) {
        printf("*** tempest: node %u: out of memory at start-up\n",
               TPPI_self_address);
        rt_exit(1);
    }
    rt_irq_register(NC_INTID, nc_irq, NULL);
    tppi_pt_mode = rt_cpus_online() >= 2 ? TPPI_PT_DEDICATED : TPPI_PT_ONE_CPU;
    pt_cpu = dedicated() ? PT_CPU_DEDICATED : 0;
    if (rt_irq_enable_spi(NC_INTID, pt_cpu, false) != 0) {
        printf("*** tempest: node %u: cannot route the node controller's "
               "interrupt to CPU %u: stopping\n", TPPI_self_address, pt_cpu);
        rt_exit(1);
    }
    spin_us = nc_spin_us(spin_us);
    atexit(flush_at_exit);
    if (dedicated()) {
        if (rt_cpu_call(PT_CPU_DEDICATED, pt_main, NULL) != 0) {
            printf("*** tempest: node %u: CPU 1 cannot run the protocol "
                   "thread: stopping\n", TPPI_self_address);
            rt_exit(1);
        }
    } else {
        nc_irq_enable(NC_IRQ_BITS);
        rt_irq_unmask();
    }
}
