/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata core (sections 3 and 9.4): the globals, StrataInit's and
 * StrataExit's steps on this node, StrataFail, ClearMemory, the
 * random-number generator, the timing functions, the device's control
 * events, and the one way the library waits (strata_wait).
 *
 * The core is libstrata's bottom layer: it calls no other file of the
 * library.  While it waits it runs the message polls data.c sets
 * (strata_set_poller); a node that fails flushes the print queue and
 * writes the log through what debug.c sets (strata_set_output).
 * StrataInit and StrataExit themselves, which involve every layer, are
 * in init.c.
 *
 * Waiting: interrupts stay masked on the CPU (Strata's model), but the
 * node controller's interrupt is enabled at the device and the GIC, so a
 * pending event shows in ISR_EL1 without any device access and wakes WFI.
 * A waiter spins on ISR_EL1 and the receive ring (RAM) for the spin time
 * (the node controller's SPIN_US hint; StrataSetSpin), writing the node
 * controller's POLL register on every turn (nc_poll: a fabric with shared
 * memory hands over what peers left there) and POLL = 0 when it stops,
 * then sleeps in rt_cpu_sleep_ack() with no time limit (everything a
 * wait waits for raises one of STRATA_IRQ_BITS), acknowledging right
 * after the WFI, so that neither the GIC nor our interrupt handler (which
 * only acknowledges, for the other sleeps) is touched.  Device registers
 * are read only after an interrupt.  Nor
 * does the spin read a clock: under TCG every counter register (CNTPCT,
 * PMCCNTR) takes QEMU's big lock, and a vCPU doing so in a loop starves
 * the main loop that runs the node controller; the spin counts turns
 * instead, calibrated by StrataInit.
 *
 * Shared with libtempest (strata_shared: the program links it): the
 * protocol thread of libtempest owns the RQ, the CQ and the interrupt.
 * libstrata is its client (tempest/client.h): the protocol thread hands
 * over Strata's packets (data.c's sink queues them per network, and its
 * polls run their handlers), passes every control event on (the peers
 * gone are counted here), and notes the interrupts libstrata waits for
 * (COLL, BCAST, and SQ) in shared_irqs, waking the waiters.  A wait then
 * polls as before and sleeps in tempest_client_wait(), re-reading device
 * registers only after shared_irqs moved; libstrata touches neither the
 * rings it does not send on nor the interrupt registers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata-internal.h"

/*
 * Measured on the 2-core development host (scripts/tempest bench strata):
 * on the socket fabric, spinning 20 us made a 2-node barrier twice as slow
 * as sleeping at once (the spinning vCPU takes the host time the QEMU
 * threads that move the messages need), and did not help on 4 or 16
 * nodes.  On the shared-memory fabric the node controller's SPIN_US hint
 * replaces this default (strata_core_start).
 */
#define DEFAULT_SPIN_US     0
#define CALIBRATE_SAMPLES   2048
#define CALIBRATE_POLLS     64
#define PARK_MILLER_M       2147483647U     /* 2^31 - 1 */
#define PARK_MILLER_A       16807U
/*
 * Shared with libtempest: a wait for room in a send ring, or for it to
 * drain (RAM only, no interrupt of its own), sleeps at most this long at
 * a time, as libtempest's computation code does.
 */
#define SHARED_RAM_WAIT_NS  1000000ULL

int Self;
int PartitionSize = 1;
int logPartitionSize;
int PartitionMask;
char *StrataVersion = "Strata 2.0 beta (tempest) " __DATE__;
float StrataVersionNumber = 2.0f;
unsigned StrataTimingOverhead;

bool strata_ready;
bool strata_shared;
bool strata_exiting;
unsigned strata_spin_turns = 64;
unsigned strata_handler_depth;
bool strata_device_spins;
uint64_t strata_origin_ticks;
unsigned strata_peers_exited;
unsigned strata_peers_failed;
unsigned strata_peers_lost;

static unsigned random_seed = 1;
static unsigned spin_us = DEFAULT_SPIN_US;
static unsigned spins_per_us = 1;
static uint64_t timer_hz;
static uint64_t cycle_base;         /* cycles at the time origin */
static uint64_t cycle_reset;        /* CurrentCycle's origin */

static bool no_msgs(unsigned mask)
{
    (void)mask;
    return false;
}

static int no_flush(void)
{
    return 0;
}

/* Set by the layers above (strata_set_poller, strata_set_output). */
static bool (*poll_fn)(unsigned mask) = no_msgs;
static bool (*waiting_fn)(unsigned mask) = no_msgs;
static int (*flush_fn)(void) = no_flush;
static void (*log_fn)(const char *fmt, ...);

/* Shared with libtempest: the client, and its interrupts seen so far. */
static void shared_event(const struct nc_event *ev);
static void shared_irq(uint32_t bits);
static struct tempest_client shared_client = {
    .proto = STRATA_PROTO,
    .irq_bits = TEMPEST_NC_IRQ_COLL | TEMPEST_NC_IRQ_BCAST,
    .event = shared_event,
    .irq = shared_irq,
};
static uint32_t shared_irqs;

void strata_set_sink(void (*sink)(const struct nc_pkt *p))
{
    shared_client.packet = sink;
}

void strata_set_poller(bool (*poll)(unsigned mask),
                       bool (*waiting)(unsigned mask))
{
    poll_fn = poll ? poll : no_msgs;
    waiting_fn = waiting ? waiting : no_msgs;
}

void strata_set_output(int (*flush)(void), void (*log)(const char *fmt, ...))
{
    flush_fn = flush ? flush : no_flush;
    log_fn = log;
}

/* ---- time ------------------------------------------------------------- */

uint64_t strata_ticks_to_ns(uint64_t t)
{
    if (timer_hz == 0) {
        __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(timer_hz));
        if (timer_hz == 0) {
            return 0;
        }
    }
    return (t / timer_hz) * 1000000000ULL +
           (t % timer_hz) * 1000000000ULL / timer_hz;
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

/*
 * The overhead of an adjacent pair: the 99.5th percentile of many (after
 * a warm-up), and at least twice their median, so that nearly every
 * adjacent pair gives 0.  QEMU reads the counter through a helper that
 * takes its big lock, so the cost varies with what the node controller is
 * doing; this keeps adjacent pairs at 0 when it doubles.
 */
static void calibrate(void)
{
    static unsigned d[CALIBRATE_SAMPLES];
    unsigned i, start;

    StrataTimingOverhead = 0;
    for (i = 0; i < 64; i++) {
        start = CycleCount();
        d[0] = ElapsedCycles(start);
    }
    for (i = 0; i < CALIBRATE_SAMPLES; i++) {
        start = CycleCount();
        d[i] = ElapsedCycles(start);
    }
    qsort(d, CALIBRATE_SAMPLES, sizeof(d[0]), cmp_unsigned);
    StrataTimingOverhead = d[CALIBRATE_SAMPLES * 995 / 1000];
    if (StrataTimingOverhead < 2 * d[CALIBRATE_SAMPLES / 2]) {
        StrataTimingOverhead = 2 * d[CALIBRATE_SAMPLES / 2];
    }
}

DoubleWord CurrentCycle64(void)
{
    return strata_cycles64() - cycle_base;
}

unsigned CurrentCycle(void)
{
    return (unsigned)(strata_cycles64() - cycle_reset);
}

void strata_set_origin(bool base)
{
    cycle_reset = strata_cycles64();
    if (base) {
        cycle_base = cycle_reset;
    }
    strata_origin_ticks = strata_ticks();
    calibrate();
}

/* ---- waiting ------------------------------------------------------------ */

unsigned StrataSetSpin(unsigned us)
{
    unsigned old = spin_us;

    spin_us = us;
    strata_spin_turns = spin_us * spins_per_us;
    return old;
}

static inline bool irq_pending(void)
{
    return rt_irq_pending();
}

/*
 * Turns of an idle strata_wait() loop per microsecond, roughly: 4096
 * turns' looks at RAM, plus one POLL write per turn, timed on
 * CALIBRATE_POLLS writes (each takes QEMU's global lock: a few will do).
 */
static void calibrate_spin(void)
{
    uint64_t t0, t1, t2;
    unsigned i, hits = 0;

    strata_ticks_to_ns(0);
    t0 = strata_ticks();
    for (i = 0; i < 4096; i++) {
        hits += waiting_fn(POLL_BOTH) + irq_pending();
        __asm__ volatile("" : : : "memory");
    }
    t1 = strata_ticks();
    for (i = 0; i < CALIBRATE_POLLS; i++) {
        hits += nc_poll(true);
    }
    t2 = strata_ticks();
    nc_poll(false);
    /* A spin writes POLL on every turn, or with a hint now and then. */
    t1 = strata_ticks_to_ns(t1 - t0) +
         (nc_poll_present ? strata_ticks_to_ns(t2 - t1) *
                            (4096 / CALIBRATE_POLLS) /
                            (nc_poll_hint ? NC_POLL_EVERY : 1) : 0);
    spins_per_us = t1 ? (unsigned)(4096ULL * 1000 / t1) : 1;
    spins_per_us = spins_per_us ? spins_per_us : 1;
    strata_spin_turns = spin_us * spins_per_us;
    (void)hits;
}

/* Strata's interrupt bits acknowledged (what its handler and wait do). */
static void strata_irq_ack(void)
{
    nc_irq_ack(STRATA_IRQ_BITS);
}

static void nc_irq(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    strata_irq_ack();
}

/* Shared with libtempest: the protocol thread noted an interrupt. */
static void shared_irq(uint32_t bits)
{
    (void)bits;
    __atomic_fetch_add(&shared_irqs, 1, __ATOMIC_RELEASE);
}

uint32_t strata_shared_irqs(void)
{
    return __atomic_load_n(&shared_irqs, __ATOMIC_ACQUIRE);
}

struct shared_cond {
    bool (*done)(void *);
    void *arg;
    unsigned poll;
    bool cheap;
    uint32_t irqs;          /* shared_irqs when done() was last false */
};

/*
 * The condition of a shared wait: a message to poll, or done() true.
 * done() reads device registers (unless cheap): only after an interrupt.
 */
static int shared_ready(void *arg)
{
    struct shared_cond *c = arg;
    uint32_t irqs;

    if (c->poll && waiting_fn(c->poll)) {
        return 1;
    }
    irqs = __atomic_load_n(&shared_irqs, __ATOMIC_ACQUIRE);
    if (c->cheap || irqs != c->irqs) {
        c->irqs = irqs;
        return c->done(c->arg);
    }
    return 0;
}

static void shared_wait(bool (*done)(void *), void *arg, unsigned poll,
                        bool cheap)
{
    struct shared_cond c = { done, arg, poll, cheap, 0 };

    if (tempest_client_on_protocol_thread()) {
        /* Nothing would run while it waits: not even what it waits for. */
        StrataFail("node %d: a Strata call that waits, in a handler (or "
                   "timer or callback) of libtempest: it would never return; "
                   "call Strata from computation code", Self);
    }
    for (;;) {
        if (poll && poll_fn(poll | POLL_WAIT)) {
            if (done(arg)) {
                return;
            }
            continue;
        }
        c.irqs = __atomic_load_n(&shared_irqs, __ATOMIC_ACQUIRE);
        if (done(arg)) {
            return;
        }
        /* RAM conditions have no interrupt: sleep with a time limit. */
        (strata_spin_turns ? tempest_client_spin_wait : tempest_client_wait)
            (shared_ready, &c, cheap ? rt_time_ns() + SHARED_RAM_WAIT_NS : 0);
    }
}

/*
 * Each device access below takes QEMU's big lock; a 16-node barrier on 2
 * host cores is a string of wake-ups of the nodes' QEMUs, each such
 * access on its way (docs/strata.rst, "Fewer device accesses a wait").
 * An acknowledgement is needed only to let WFI sleep again, and must be
 * followed by a look at done() before the sleep (it may have cleared the
 * interrupt of the very event waited for); an event after that look
 * raises its interrupt, which wakes the WFI whether or not the line was
 * already up.  So the first sleep needs no acknowledgement, and the one
 * after a wake-up is made before the GIC is read (rt_cpu_sleep_ack: the
 * line is down, so neither our handler nor the GIC's acknowledge and
 * end-of-interrupt run).  @fresh: done() was false since the last
 * acknowledgement (or with none made), and nothing ran since.
 */
void strata_wait(bool (*done)(void *), void *arg, unsigned poll, bool cheap)
{
    unsigned spins = 0, max_spins = strata_spin_turns;
    bool polling = false, fresh;

    if (strata_shared) {
        shared_wait(done, arg, poll, cheap);
        return;
    }
    if (done(arg)) {
        return;
    }
    fresh = true;
    for (;;) {
        if (poll && poll_fn(poll | POLL_WAIT)) {
            spins = 0;
            fresh = false;
            if (done(arg)) {
                break;
            }
            continue;
        }
        if (irq_pending()) {
            nc_irq_ack(STRATA_IRQ_BITS);
            if (done(arg)) {
                break;
            }
            fresh = true;
        } else if (cheap && done(arg)) {
            break;
        }
        if (++spins < max_spins) {
            /* Spinning: the device hands over what peers left. */
            if (nc_poll_due(spins)) {
                polling = nc_poll(true);
            }
            fresh = false;
            continue;
        }
        spins = 0;
        /*
         * Sleep: stop polling (whoever said POLL 1: this spin, or the
         * program's polls), so peers ring the doorbell again.
         */
        polling = false;
        nc_poll(false);
        if (!fresh) {
            nc_irq_ack(STRATA_IRQ_BITS);
            if (done(arg)) {
                return;
            }
        }
        if (poll && waiting_fn(poll)) {
            fresh = false;
            continue;
        }
        nc_rx_doorbell();
        rt_cpu_sleep_ack(0, strata_irq_ack);
        if (done(arg)) {
            return;
        }
        fresh = true;
    }
    if (polling) {
        nc_poll(false);
    }
}

bool strata_msgs_waiting(unsigned poll)
{
    return waiting_fn(poll);
}

void strata_require(const char *call)
{
    if (!strata_ready) {
        fprintf(stderr, "StrataFail: %s called before StrataInit\n", call);
        fflush(stderr);
        rt_exit(255);
    }
}

/* ---- control events ----------------------------------------------------- */

/*
 * A peer-down event counted: exited with status 0, or failed; and of
 * those, lost with its link (word a).  Atomic: shared with libtempest,
 * the protocol thread counts.
 */
static void count_peer_down(const struct nc_event *ev)
{
    __atomic_fetch_add(ev->a == 0 && ev->b == 0 ? &strata_peers_exited :
                       &strata_peers_failed, 1, __ATOMIC_RELEASE);
    if (ev->a != 0) {
        __atomic_fetch_add(&strata_peers_lost, 1, __ATOMIC_RELEASE);
    }
}

/*
 * Shared with libtempest: every control event, from the protocol thread
 * after libtempest's own handling (which reports peers lost and send
 * errors on the console, so here they are only counted).
 */
static void shared_event(const struct nc_event *ev)
{
    if ((ev->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_PEER_DOWN) {
        count_peer_down(ev);
    }
}

static int peer_event_seen(void *arg)
{
    (void)arg;
    return __atomic_load_n(&strata_peers_exited, __ATOMIC_ACQUIRE) +
           __atomic_load_n(&strata_peers_failed, __ATOMIC_ACQUIRE) != 0;
}

void strata_await_peer_events(unsigned ms)
{
    if (strata_shared) {
        tempest_client_wait(peer_event_seen, NULL,
                            rt_time_ns() + (uint64_t)ms * 1000000);
    }
}

void strata_take_events(void)
{
    struct nc_event *e;
    struct nc_event ev;

    if (strata_shared) {
        return;     /* the protocol thread passes them on (shared_event) */
    }
    while ((e = nc_cq_peek()) != NULL) {
        ev = *e;
        nc_cq_pop(e);
        switch (ev.ctl & TEMPEST_EV_TYPE_MASK) {
        case TEMPEST_EV_PEER_DOWN:
            count_peer_down(&ev);
            if (!strata_exiting || ev.a != 0 || ev.b != 0) {
                fprintf(stderr, "*** strata: node %d: node %u is gone (%s "
                        "%llu)\n", Self, (unsigned)ev.node,
                        ev.a ? "connection lost" : "exit status",
                        (unsigned long long)(ev.a ? 1 : ev.b));
            }
            break;
        case TEMPEST_EV_SEND_ERROR:
            fprintf(stderr, "*** strata: node %d: send to node %u failed: "
                    "%s\n", Self, (unsigned)ev.node,
                    nc_err_name((uint32_t)ev.b));
            break;
        default:
            break;
        }
    }
}

/* ---- 3.5 Procedures: this node's part ----------------------------------- */

void strata_core_init(void)
{
    uint32_t need = TEMPEST_NC_FEAT_MSG | TEMPEST_NC_FEAT_CMD |
                    TEMPEST_NC_FEAT_COLL;
    unsigned n;

    Self = (int)rt_node_id();
    PartitionSize = (int)rt_num_nodes();
    for (n = 0; (1U << n) < (unsigned)PartitionSize; n++) {
        /* ceil(log2(PartitionSize)) */
    }
    logPartitionSize = (int)n;
    PartitionMask = (int)((1U << n) - 1);
    if ((nc_reg(TEMPEST_NC_FEATURES) & need) != need ||
        nc_reg(TEMPEST_NC_VERSION) < ((1U << 16) | 2U)) {
        fprintf(stderr, "StrataFail: node %d: the node controller (version "
                "0x%08lx, features 0x%08lx) has no control network: version "
                "1.2 with features MSG, CMD and COLL is needed\n", Self,
                (unsigned long)nc_reg(TEMPEST_NC_VERSION),
                (unsigned long)nc_reg(TEMPEST_NC_FEATURES));
        rt_exit(1);
    }
    if (nc_init() != 0) {
        fprintf(stderr, "StrataFail: node %d: no messaging\n", Self);
        rt_exit(1);
    }
    /* libtempest linked (and so started before main): share its rings. */
    strata_shared = tempest_client_register != NULL;
    if (strata_shared && (tempest_client_send == NULL ||
                          tempest_client_wait == NULL ||
                          tempest_client_spin_wait == NULL ||
                          tempest_client_idle_wait == NULL ||
                          tempest_client_polled == NULL ||
                          tempest_client_poll == NULL ||
                          tempest_client_on_protocol_thread == NULL)) {
        fprintf(stderr, "StrataFail: node %d: libtempest is linked without "
                "all of its client interface (tempest/client.h)\n", Self);
        rt_exit(1);
    }
    random_seed = (unsigned)Self + 1;
}

void strata_core_start(void)
{
    if (strata_shared) {
        if (shared_client.packet == NULL ||
            tempest_client_register(&shared_client) != 0) {
            fprintf(stderr, "StrataFail: node %d: cannot share libtempest's "
                    "rings\n", Self);
            rt_exit(1);
        }
    } else {
        if (rt_irq_register(NC_INTID, nc_irq, NULL) != 0 ||
            rt_irq_enable_spi(NC_INTID, rt_cpu_id(), false) != 0) {
            fprintf(stderr, "StrataFail: node %d: cannot take the node "
                    "controller's interrupt\n", Self);
            rt_exit(1);
        }
        nc_irq_enable(STRATA_IRQ_BITS);
    }
    /*
     * With shared memory a polling node takes messages without any
     * thread waking, which pays while every node has a host core.
     */
    spin_us = nc_spin_us(spin_us);
    strata_device_spins = spin_us != 0;
    calibrate_spin();
    strata_ready = true;
}

NORETURN strata_exit_now(int code)
{
    if (!strata_exiting && strata_ready) {
        strata_exiting = true;
        flush_fn();
    }
    fflush(stdout);
    rt_exit(code);
}

NORETURN StrataFail(const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    flush_fn();
    fflush(stdout);
    fprintf(stderr, "StrataFail: %s\n", msg);
    fflush(stderr);
    if (log_fn) {
        log_fn("StrataFail: %s", msg);
    }
    strata_exit_now(-1);
}

void ClearMemory(void *region, unsigned length_in_bytes)
{
    uint8_t *p = region;
    uint8_t *end = p + length_in_bytes;
    uint64_t *q;

#if STRATA_DEBUG_BUILD
    if (region == NULL && length_in_bytes) {
        StrataFail("ClearMemory(NULL, %u)", length_in_bytes);
    }
#endif
    while (p < end && ((uintptr_t)p & 7)) {
        *p++ = 0;
    }
    q = (uint64_t *)p;
    while ((uint8_t *)(q + 4) <= end) {
        q[0] = 0;
        q[1] = 0;
        q[2] = 0;
        q[3] = 0;
        q += 4;
    }
    while ((uint8_t *)(q + 1) <= end) {
        *q++ = 0;
    }
    p = (uint8_t *)q;
    while (p < end) {
        *p++ = 0;
    }
}

/* ---- 3.6 Random-number generator ---------------------------------------- */

unsigned Random(void)
{
    /* Park and Miller's minimal standard, in 64-bit arithmetic. */
    random_seed = (unsigned)(((uint64_t)random_seed * PARK_MILLER_A) %
                             PARK_MILLER_M);
    return random_seed;
}

unsigned SetRandomSeed(unsigned seed)
{
    if (seed == TIME_BASED_SEED) {
        seed = (unsigned)(strata_ticks() ^ strata_cycles64() ^
                          ((uint64_t)Self * 2654435761U));
    }
    seed %= PARK_MILLER_M;
    if (seed == 0) {
        seed = 1;
    }
    random_seed = seed;
    return seed;
}
