/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the control network's combining on shared
 * counters, for the nodes of a cluster on shared memory (docs/strata.rst,
 * "Combining on shared counters").
 *
 * Node 0's fabric makes one combining area (coll-area.h) and passes it
 * to every node with its link.  Once every node has it (the tree says
 * so: tempest-nc-coll.c), a collective is an arrival: the node writes its
 * contribution into its slot of the round, then adds one to the round's
 * arrival counter.  The node that brings the counter to the cluster's
 * size is the last: it combines every slot (coll-math.h), writes the
 * results, publishes the round's DONE word and wakes, with one futex
 * call, the nodes sleeping on it; all of this from its vCPU's COLL_START,
 * with no frame and no main loop.  A node's vCPU that halts while its
 * collective is pending sleeps on DONE itself (target-patches/0013,
 * CPUIdleSleep), saying so in the node's line (WATCH); the last to arrive
 * wakes those with one futex call on DONE and, for every other node, its
 * waiter thread (the node's WAKE futex), which completes the collective
 * under the BQL.  A POLL write or a COLL_STATUS read looks too.
 *
 * Every node of the cluster can write the area: what is read from it is
 * checked (tags, headers, lanes, segments, the counter, the error) and
 * a bad value ends the collective with MISMATCH, never an access outside
 * the area.  A node that dies mid-collective is reported by the fabric as
 * before (the pending collective fails with PEER_DOWN); nothing here
 * waits for it.
 */

#include "qemu/osdep.h"
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sched.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/core/cpu.h"
#include "qemu/thread.h"
#include "tempest-nc-internal.h"
#include "fabric-proto.h"
#include "coll-area.h"
#include "coll-math.h"
#include "trace.h"

/*
 * A waiter sleeps at most this long before it looks again: while its
 * collective is pending, and while it waits for the next one to start.
 */
#define COLL_WAIT_NS        (50 * 1000 * 1000)
#define COLL_IDLE_WAIT_S    1

typedef struct TempestCollWaiter {
    QemuThread thread;
    QemuCond cond;          /* signalled when a collective is pending */
    TempestNCState *s;      /* NULL once stopped: the thread frees us */
    bool sleeping;          /* in the futex, outside the BQL */
    bool idle;              /* in the condition: not combining here */
    uint32_t *word;         /* ... on this WAKE word */
} TempestCollWaiter;

static uint8_t *shm_area(TempestNCState *s)
{
    size_t len;
    uint8_t *a = tempest_fabric_coll_area(s->fabric, &len);

    return a && len >= coll_area_bytes(s->num_nodes) ? a : NULL;
}

static uint32_t *shm_word(uint8_t *a, size_t off)
{
    return (uint32_t *)(a + off);
}

static uint32_t shm_ld32(uint8_t *a, size_t off)
{
    return __atomic_load_n(shm_word(a, off), __ATOMIC_RELAXED);
}

static void shm_st32(uint8_t *a, size_t off, uint32_t v)
{
    __atomic_store_n(shm_word(a, off), v, __ATOMIC_RELAXED);
}

static uint64_t shm_ld64(uint8_t *a, size_t off)
{
    return __atomic_load_n((uint64_t *)(a + off), __ATOMIC_RELAXED);
}

static void shm_st64(uint8_t *a, size_t off, uint64_t v)
{
    __atomic_store_n((uint64_t *)(a + off), v, __ATOMIC_RELAXED);
}

static long shm_futex(uint32_t *word, int op, uint32_t val,
                      const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* Our pending collective's round, relative to the first one shared. */
static unsigned shm_round(TempestNCState *s)
{
    return (s->coll_seq_done - s->coll_shm_base) % COLL_AREA_ROUNDS;
}

static uint32_t shm_use(TempestNCState *s)
{
    return (s->coll_seq_done - s->coll_shm_base) / COLL_AREA_ROUNDS;
}

static uint32_t shm_header(unsigned kind, unsigned fn, unsigned variant)
{
    return kind | fn << 8 | variant << 16;
}

/* Node @i's waiter thread: WAKE + 1, woken. */
static void shm_wake_waiter(uint8_t *a, unsigned nodes, unsigned i)
{
    uint32_t *wake = shm_word(a, coll_area_node(nodes, i) + COLL_AREA_N_WAKE);

    __atomic_fetch_add(wake, 1, __ATOMIC_SEQ_CST);
    shm_futex(wake, FUTEX_WAKE, 1, NULL);
}

/*
 * Every other node whose vCPU does not wait on the word just moved (its
 * line's @flag, WATCH or BWATCH, 0): its waiter thread is woken.  After
 * the word's store (Dekker: a waiter sets @flag, then reads the word).
 * The flags read, or-ed together (ours too, which wakes nothing here).
 */
static uint32_t shm_wake_waiters(TempestNCState *s, uint8_t *a, size_t flag)
{
    uint32_t flags = 0;

    for (unsigned i = 0; i < s->num_nodes; i++) {
        uint32_t f = __atomic_load_n(shm_word(a, coll_area_node(s->num_nodes,
                                                                i) + flag),
                                     __ATOMIC_SEQ_CST);

        if (!f && i != s->node_id) {
            shm_wake_waiter(a, s->num_nodes, i);
        }
        flags |= f;
    }
    return flags;
}

/* ------------------------------------------------------------------ */
/* Combining                                                           */
/* ------------------------------------------------------------------ */

/*
 * The last to arrive: combine every slot of the round and publish.  The
 * counter's acquire saw every slot written before its arrival; a slot
 * that is not this collective's or not the same operation is a mismatch.
 */
static void shm_combine(TempestNCState *s, uint8_t *a, unsigned round)
{
    unsigned nodes = s->num_nodes, lanes = s->coll_lanes;
    uint32_t tag = s->coll_seq_done + 1, error = TEMPEST_COLL_E_NONE;
    uint32_t hdr = shm_header(s->coll_kind, s->coll_fn, s->coll_variant);
    size_t ctl = coll_area_round(nodes, round);
    g_autofree uint64_t *in = g_new0(uint64_t, nodes * lanes);
    g_autofree uint64_t *out = g_new0(uint64_t, nodes * lanes);
    g_autofree uint8_t *seg = g_new0(uint8_t, nodes);
    uint32_t *done = shm_word(a, ctl + COLL_AREA_R_DONE);

    for (unsigned i = 0; i < nodes && !error; i++) {
        size_t sl = coll_area_slot(nodes, round, i);
        uint32_t sseg;

        if (__atomic_load_n(shm_word(a, sl + COLL_AREA_S_TAG),
                            __ATOMIC_ACQUIRE) != tag ||
            shm_ld32(a, sl + COLL_AREA_S_HDR) != hdr ||
            shm_ld32(a, sl + COLL_AREA_S_LANES) != lanes) {
            error = TEMPEST_COLL_E_MISMATCH;
            break;
        }
        sseg = shm_ld32(a, sl + COLL_AREA_S_SEG);
        if (sseg > TEMPEST_SEG_ARRAY) {
            error = TEMPEST_COLL_E_MISMATCH;
            break;
        }
        seg[i] = sseg;
        for (unsigned l = 0; l < lanes; l++) {
            in[i * lanes + l] = shm_ld64(a, sl + COLL_AREA_S_VALS + 8 * l);
        }
    }
    if (!error && s->coll_kind == TEMPEST_COLL_ALLGATHER) {
        for (unsigned i = 0; i < nodes; i++) {
            shm_st64(a, coll_area_out(nodes, round, i), in[i]);
        }
    } else if (!error) {
        coll_combine(s->coll_fn, s->coll_variant, nodes, lanes, seg, in,
                     out);
        for (unsigned i = 0; i < nodes; i++) {
            for (unsigned l = 0; l < lanes; l++) {
                shm_st64(a, coll_area_out(nodes, round, i) + 8 * l,
                         out[i * lanes + l]);
            }
            if (s->coll_variant == TEMPEST_COLL_REDUCE) {
                break;      /* one result for all, in node 0's line */
            }
        }
    }
    shm_st32(a, ctl + COLL_AREA_R_ERROR, error);
    /*
     * Results, then DONE; then who sleeps on it (Dekker: a sleeper says
     * so, then reads DONE).  The vCPUs that sleep on DONE wake with one
     * call; every other node's waiter thread on its own WAKE word.
     */
    __atomic_store_n(done, tag, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(shm_word(a, ctl + COLL_AREA_R_SLEEPERS),
                        __ATOMIC_SEQ_CST)) {
        shm_futex(done, FUTEX_WAKE, INT_MAX, NULL);
    }
    shm_wake_waiters(s, a, COLL_AREA_N_WATCH);
    trace_tempest_nc_coll_shm(s->node_id, s->coll_seq_done, round, error);
}

/*
 * The round the combiner finished (R_DONE read): its results to the
 * guest.  A function of its own, so that the check, run at every POLL,
 * does not pay for clearing @out (the build's -ftrivial-auto-var-init=
 * zero) when nothing is done.  @out holds a reduction's lanes; an
 * all-gather's word per node (up to 8 KiB, which every barrier paid to
 * clear while it was the one array) goes on the heap.
 */
static void __attribute__((noinline))
coll_shm_finish(TempestNCState *s, uint8_t *a, unsigned round, size_t ctl)
{
    uint64_t out[TEMPEST_COLL_MAX_LANES];
    g_autofree uint64_t *all = NULL;
    unsigned nodes = s->num_nodes, nout = 0;
    uint32_t error;

    error = shm_ld32(a, ctl + COLL_AREA_R_ERROR);
    if (error != TEMPEST_COLL_E_NONE && error != TEMPEST_COLL_E_MISMATCH) {
        error = TEMPEST_COLL_E_MISMATCH;    /* none the combiner sets */
    }
    if (!error && s->coll_kind == TEMPEST_COLL_ALLGATHER) {
        all = g_new(uint64_t, nodes);
        for (unsigned i = 0; i < nodes; i++) {
            all[i] = shm_ld64(a, coll_area_out(nodes, round, i));
        }
        s->coll_shm_pending = false;
        s->coll_shm_done(s, error, all, nodes);
        return;
    }
    if (!error) {
        unsigned from = s->coll_variant == TEMPEST_COLL_REDUCE ? 0 :
                        s->node_id;

        for (unsigned l = 0; l < s->coll_lanes; l++) {
            out[l] = shm_ld64(a, coll_area_out(nodes, round, from) + 8 * l);
        }
        nout = s->coll_lanes;
    }
    s->coll_shm_pending = false;
    s->coll_shm_done(s, error, out, nout);
}

void tempest_nc_coll_shm_check(TempestNCState *s)
{
    uint8_t *a = s->coll_shm_pending ? shm_area(s) : NULL;
    unsigned round;
    size_t ctl;

    s->bcast_look(s);
    if (!a) {
        return;
    }
    round = shm_round(s);
    ctl = coll_area_round(s->num_nodes, round);
    if (__atomic_load_n(shm_word(a, ctl + COLL_AREA_R_DONE),
                        __ATOMIC_ACQUIRE) != s->coll_seq_done + 1) {
        return;
    }
    coll_shm_finish(s, a, round, ctl);
}

void tempest_nc_coll_shm_arrive(TempestNCState *s)
{
    unsigned nodes = s->num_nodes, round = shm_round(s);
    uint8_t *a = shm_area(s);
    size_t sl, ctl;
    uint32_t pos;

    s->coll_shm_pending = true;
    s->coll_shm_count++;
    s->coll_cpu = current_cpu;
    if (!a) {
        /* The fabric is going: as when a peer is lost. */
        s->coll_shm_pending = false;
        s->coll_shm_done(s, TEMPEST_COLL_E_PEER_DOWN, NULL, 0);
        return;
    }
    sl = coll_area_slot(nodes, round, s->node_id);
    ctl = coll_area_round(nodes, round);
    shm_st32(a, sl + COLL_AREA_S_HDR,
             shm_header(s->coll_kind, s->coll_fn, s->coll_variant));
    shm_st32(a, sl + COLL_AREA_S_LANES, s->coll_lanes);
    shm_st32(a, sl + COLL_AREA_S_SEG, s->coll_shm_seg);
    for (unsigned l = 0; l < s->coll_lanes; l++) {
        shm_st64(a, sl + COLL_AREA_S_VALS + 8 * l, s->coll_shm_vals[l]);
    }
    __atomic_store_n(shm_word(a, sl + COLL_AREA_S_TAG), s->coll_seq_done + 1,
                     __ATOMIC_RELEASE);
    /* Where we came in this use of the round: 1 .. nodes. */
    pos = __atomic_add_fetch(shm_word(a, ctl + COLL_AREA_R_ARRIVED), 1,
                             __ATOMIC_ACQ_REL) - nodes * shm_use(s);
    trace_tempest_nc_coll_shm_arrive(s->node_id, s->coll_seq_done, round,
                                     pos);
    if (pos == nodes) {
        shm_combine(s, a, round);
    } else if (pos == 0 || pos > nodes) {
        /* Someone moved the counter: nobody can tell who is last. */
        s->coll_shm_pending = false;
        s->coll_shm_done(s, TEMPEST_COLL_E_MISMATCH, NULL, 0);
        return;
    } else if (s->coll_waiter && s->coll_waiter->idle) {
        qemu_cond_signal(&s->coll_waiter->cond);
    }
    tempest_nc_coll_shm_check(s);
}

/* ------------------------------------------------------------------ */
/* The broadcast ring (docs/strata.rst, "Broadcasts on shared memory") */
/* ------------------------------------------------------------------ */

static size_t bring_ctl(TempestNCState *s, size_t field)
{
    return coll_area_bring(s->num_nodes) + field;
}

/*
 * Node 0, before it sends the frames of the switch: the ring starts at
 * the words issued so far (B_COUNT, and B_NEXT, the next word's number),
 * so that a node that has the frame finds both right.  Every slot's tag
 * is cleared first: B_COUNT moves past a slot whose tag says it is
 * written (bring_advance), and a slot of an earlier life of the area
 * (a reset cluster counts from 0 again) must not say so.
 */
void tempest_nc_bring_open(TempestNCState *s)
{
    uint8_t *a = shm_area(s);

    if (a) {
        for (uint32_t i = 0; i < COLL_AREA_BSLOTS; i++) {
            __atomic_store_n(shm_word(a, coll_area_bslot(s->num_nodes, i) +
                                         COLL_AREA_BS_TAG), 0,
                             __ATOMIC_RELAXED);
        }
        __atomic_store_n(shm_word(a, bring_ctl(s, COLL_AREA_B_NEXT)),
                         (uint32_t)s->bcast_issued, __ATOMIC_SEQ_CST);
        __atomic_store_n(shm_word(a, bring_ctl(s, COLL_AREA_B_COUNT)),
                         (uint32_t)s->bcast_issued, __ATOMIC_SEQ_CST);
        tempest_nc_bring_hold(s, false);
    }
}

/*
 * Every node at the switch (tempest-nc-coll.c): the tree's last word has
 * passed here, the next ones are read from the ring.
 */
void tempest_nc_bring_start(TempestNCState *s)
{
    s->bcast_ring_next = s->bcast_seen;
    s->bcast_room_valid = false;
    tempest_nc_bring_taken(s);
    /* The waiter reads the ring from now on, collective or not. */
    if (s->coll_waiter && s->coll_waiter->idle) {
        qemu_cond_signal(&s->coll_waiter->cond);
    }
}

/* Node @node's count of broadcast words taken, in its line. */
static uint64_t *btaken_word(TempestNCState *s, uint8_t *a, unsigned node)
{
    return (uint64_t *)(a + coll_area_node(s->num_nodes, node) +
                        COLL_AREA_N_BTAKEN);
}

/*
 * Is there room for word @n: has every node taken word n - BSLOTS (its
 * line's BTAKEN; ours is s->bcast_taken)?  The counts only grow, so the
 * least seen last time is looked at first, and every node's line (a
 * cache line another core writes: one transfer each) only when that
 * leaves no room: once a ring's worth of words, not once a word.  A
 * count ahead of @n (a line can say anything) leaves room: it costs that
 * node its own words only.
 */
static bool bring_room(TempestNCState *s, uint8_t *a, uint32_t n)
{
    int32_t behind = 0;

    if (s->bcast_room_valid &&
        (int32_t)(n - s->bcast_room_least) < COLL_AREA_BSLOTS) {
        return true;
    }
    for (unsigned i = 0; i < s->num_nodes; i++) {
        uint64_t t = i == s->node_id ? s->bcast_taken :
                     __atomic_load_n(btaken_word(s, a, i), __ATOMIC_SEQ_CST);

        behind = MAX(behind, (int32_t)(n - (uint32_t)t));
    }
    s->bcast_room_least = n - (uint32_t)behind;
    s->bcast_room_valid = true;
    return behind < COLL_AREA_BSLOTS;
}

/*
 * B_COUNT past every word written in a row from it (their tags; below
 * B_NEXT), whoever wrote them: a writer whose word follows one not yet
 * written leaves B_COUNT to that one's writer, which moves it past
 * both (the tags and B_COUNT are sequentially consistent: of two
 * writers, one sees the other's tag).  At most a ring's worth.  True if
 * this call moved it.
 */
static bool bring_advance(TempestNCState *s, uint8_t *a)
{
    uint32_t *count = shm_word(a, bring_ctl(s, COLL_AREA_B_COUNT));
    uint32_t *next = shm_word(a, bring_ctl(s, COLL_AREA_B_NEXT));
    uint32_t c = __atomic_load_n(count, __ATOMIC_SEQ_CST);
    bool moved = false;

    for (unsigned k = 0; k < COLL_AREA_BSLOTS; k++) {
        if ((int32_t)(c - __atomic_load_n(next, __ATOMIC_SEQ_CST)) >= 0 ||
            __atomic_load_n(shm_word(a, coll_area_bslot(s->num_nodes, c) +
                                        COLL_AREA_BS_TAG),
                            __ATOMIC_SEQ_CST) != c + 1) {
            break;
        }
        if (__atomic_compare_exchange_n(count, &c, c + 1, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            c++;
            moved = true;
        }
        /* else c is B_COUNT as another writer left it: look from there */
    }
    return moved;
}

/* BWATCH: a wait on B_COUNT is under way; one of them sleeps in a futex. */
#define BWATCH_ON       1
#define BWATCH_SLEEPS   2

static uint32_t *bwatch_word(TempestNCState *s, uint8_t *a, unsigned node)
{
    return shm_word(a, coll_area_node(s->num_nodes, node) +
                       COLL_AREA_N_BWATCH);
}

/*
 * After B_COUNT moved: the waiter thread of every other node that does
 * not wait on B_COUNT itself.  True if a vCPU sleeps in B_COUNT's futex
 * (ours too: another vCPU of this node).
 */
static bool bring_wake(TempestNCState *s, uint8_t *a)
{
    return shm_wake_waiters(s, a, COLL_AREA_N_BWATCH) & BWATCH_SLEEPS;
}

/* Tries at B_NEXT before a writer gives up (other writers moved it). */
#define BRING_CLAIM_TRIES   64

/*
 * Any node (layout version 6): word @value of node @src into the ring,
 * in the cluster's one order (the number claimed at B_NEXT), if there is
 * room (bring_room) and, unless @root (node 0 writing a word it holds),
 * node 0 holds no word for room (B_HELD: the held go first, so a node
 * that broadcasts fast cannot keep a held word waiting).  Then B_COUNT
 * (bring_advance) and the readers: those whose vCPU sleeps on B_COUNT
 * with one call, the others' waiter threads.  Before, only node 0 wrote
 * the ring, and another node's word went to it first as a frame
 * (FABRIC_BCAST_UP), which its main loop or waiter had to wake for; that
 * is now only the way of a word that finds no room.  False if not
 * written (no area, no room, held words, B_NEXT moving under us).
 */
bool tempest_nc_bring_push(TempestNCState *s, unsigned src, uint64_t value,
                           bool root)
{
    uint8_t *a = shm_area(s);
    uint32_t *next, n;
    unsigned tries = 0;
    size_t sl;
    bool watched = false;

    if (!a || (!root && __atomic_load_n(shm_word(a, bring_ctl(s,
                                                  COLL_AREA_B_HELD)),
                                        __ATOMIC_SEQ_CST))) {
        return false;
    }
    next = shm_word(a, bring_ctl(s, COLL_AREA_B_NEXT));
    n = __atomic_load_n(next, __ATOMIC_SEQ_CST);
    do {
        if (!bring_room(s, a, n) || ++tries > BRING_CLAIM_TRIES) {
            return false;
        }
    } while (!__atomic_compare_exchange_n(next, &n, n + 1, false,
                                          __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    sl = coll_area_bslot(s->num_nodes, n);
    shm_st32(a, sl + COLL_AREA_BS_SRC, src);
    shm_st64(a, sl + COLL_AREA_BS_VALUE, value);
    __atomic_store_n(shm_word(a, sl + COLL_AREA_BS_TAG), n + 1,
                     __ATOMIC_SEQ_CST);
    if (bring_advance(s, a) && bring_wake(s, a)) {
        watched = true;
        shm_futex(shm_word(a, bring_ctl(s, COLL_AREA_B_COUNT)), FUTEX_WAKE,
                  INT_MAX, NULL);
    }
    s->bcast_written++;
    trace_tempest_nc_bring_put(s->node_id, n, src, watched);
    return true;
}

/*
 * A reader: word @i.  1: there (*src, *value); 0: not written yet (i is
 * not below B_COUNT, which moves past a slot only after it is written
 * (bring_advance), and which node 0 stores before it sends the switch's
 * frame: a slot of an earlier life of the area is
 * never read); -1: its slot holds another word (only if a node's count of
 * words taken was moved behind our back: it is lost); -2: no area.
 */
int tempest_nc_bring_get(TempestNCState *s, uint64_t i, unsigned *src,
                         uint64_t *value)
{
    uint8_t *a = shm_area(s);
    size_t sl;

    if (!a) {
        return -2;
    }
    if ((int32_t)(__atomic_load_n(shm_word(a, bring_ctl(s,
                                                        COLL_AREA_B_COUNT)),
                                  __ATOMIC_ACQUIRE) - (uint32_t)i) <= 0) {
        return 0;
    }
    sl = coll_area_bslot(s->num_nodes, i);
    if (__atomic_load_n(shm_word(a, sl + COLL_AREA_BS_TAG),
                        __ATOMIC_ACQUIRE) != (uint32_t)(i + 1)) {
        return -1;
    }
    *src = shm_ld32(a, sl + COLL_AREA_BS_SRC);
    *value = shm_ld64(a, sl + COLL_AREA_BS_VALUE);
    /* Still word i after the copy: not rewritten meanwhile. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return shm_ld32(a, sl + COLL_AREA_BS_TAG) == (uint32_t)(i + 1) ? 1 : -1;
}

/* Node 0 holds words until there is room (B_HELD), or holds none. */
void tempest_nc_bring_hold(TempestNCState *s, bool held)
{
    uint8_t *a = shm_area(s);

    if (a) {
        __atomic_store_n(shm_word(a, bring_ctl(s, COLL_AREA_B_HELD)), held,
                         __ATOMIC_SEQ_CST);
    }
}

/*
 * Our count of words taken, for every writer's room (bring_room); if
 * node 0 holds a word for room, its waiter is woken to look (Dekker with
 * its B_HELD).
 */
void tempest_nc_bring_taken(TempestNCState *s)
{
    uint8_t *a = shm_area(s);

    if (!a) {
        return;
    }
    __atomic_store_n(btaken_word(s, a, s->node_id), s->bcast_taken,
                     __ATOMIC_SEQ_CST);
    if (s->node_id != 0 &&
        __atomic_load_n(shm_word(a, bring_ctl(s, COLL_AREA_B_HELD)),
                        __ATOMIC_SEQ_CST)) {
        shm_wake_waiter(a, s->num_nodes, 0);
    }
}

static void bring_watch(TempestNCState *s, uint8_t *a)
{
    __atomic_store_n(bwatch_word(s, a, s->node_id),
                     (s->bcast_watch ? BWATCH_ON : 0) |
                     (s->bcast_watch_sleeps ? BWATCH_SLEEPS : 0),
                     __ATOMIC_SEQ_CST);
}

/*
 * A wait on B_COUNT begins (a halted vCPU's sleep, which @sleeps in its
 * futex; a BCAST_WAIT read, which looks at it): said in BWATCH while any
 * is under way, so that the next word's writer wakes no waiter thread of
 * ours, and makes a futex call only for a sleep (a read's spin or yield
 * sees the word move; the writer's call cost the ping-pong of broadcasts
 * between two nodes that spin a system call a word each way).  B_COUNT's
 * word, or NULL where this node does not read the ring (sockets, TCP,
 * before the switch).  bring_idle_woken() ends it.  Under the BQL.
 */
static uint32_t *bring_watch_begin(TempestNCState *s, bool sleeps)
{
    uint8_t *a = s->coll_shm ? shm_area(s) : NULL;

    if (!a || (s->bcast_watch && a != s->bcast_watch_area)) {
        return NULL;
    }
    if (s->bcast_watch++ == 0) {
        s->bcast_watch_area = a;
    }
    s->bcast_watch_sleeps += sleeps;
    bring_watch(s, a);
    return shm_word(a, bring_ctl(s, COLL_AREA_B_COUNT));
}

/*
 * A halted vCPU's sleep (CPUIdleSleep.also): on B_COUNT as well, so that
 * the next word's writer wakes it with no thread in between.  Said in
 * BWATCH first (Dekker with the writer's move of B_COUNT); the sleep
 * holds while B_COUNT is the next word we would read, so a word written
 * since our last look ends it at once and woken() reads it.  (Not read
 * here: its IRQ_BCAST, raised on the vCPU's own thread, would not kick
 * the sleep.)
 * Under the BQL.
 */
static uint32_t *bring_idle_also(CPUState *cpu, void *opaque, uint32_t *val)
{
    TempestNCState *s = opaque;
    uint32_t *count = bring_watch_begin(s, true);

    if (!count) {
        return NULL;
    }
    s->bcast_watch_cpus |= 1ULL << (cpu->cpu_index % 64);
    *val = (uint32_t)s->bcast_ring_next;
    trace_tempest_nc_bring_sleep(s->node_id, *val);
    return count;
}

/*
 * Awake (CPUIdleSleep.woken, @slept; the end of a BCAST_WAIT read's
 * wait): no longer on B_COUNT; then the ring read.
 */
static void bring_idle_woken(TempestNCState *s, bool slept)
{
    if (!s->bcast_watch) {
        return;
    }
    s->bcast_watch--;
    if (slept && s->bcast_watch_sleeps) {
        s->bcast_watch_sleeps--;
    }
    if (s->bcast_watch_area == shm_area(s)) {
        bring_watch(s, s->bcast_watch_area);
    }
    if (!s->bcast_watch) {
        s->bcast_watch_area = NULL;
    }
    s->bcast_look(s);
}

/* ------------------------------------------------------------------ */
/* The waiter                                                          */
/* ------------------------------------------------------------------ */

/* tempest_nc_coll_shm_check(); true if it completed the collective. */
static bool shm_check_ended(TempestNCState *s)
{
    bool was = s->coll_shm_pending;

    tempest_nc_coll_shm_check(s);
    return was && !s->coll_shm_pending;
}

/*
 * Sleeps on the node's WAKE word, which the last to arrive moves when no
 * vCPU of ours sleeps on DONE itself (WATCH), and completes the
 * collective under the BQL; already there when the node arrives, it
 * needs no wake-up but that one.  Holds the BQL except in the futex.
 */
static void *coll_waiter_run(void *opaque)
{
    TempestCollWaiter *w = opaque;
    struct timespec pending_ts = { 0, COLL_WAIT_NS };
    struct timespec idle_ts = { COLL_IDLE_WAIT_S, 0 };

    bql_lock();
    while (w->s) {
        TempestNCState *s = w->s;
        uint8_t *a = s->coll_shm ? shm_area(s) : NULL;
        uint32_t v;

        if (!a) {
            w->idle = true;
            qemu_cond_wait_bql(&w->cond);
            w->idle = false;
            continue;
        }
        /* The word first: a move after this read ends the sleep. */
        w->word = shm_word(a, coll_area_node(s->num_nodes, s->node_id) +
                              COLL_AREA_N_WAKE);
        v = __atomic_load_n(w->word, __ATOMIC_SEQ_CST);
        if (shm_check_ended(s)) {
            s->coll_shm_woken++;
        }
        w->sleeping = true;
        bql_unlock();
        shm_futex(w->word, FUTEX_WAIT, v,
                  s->coll_shm_pending ? &pending_ts : &idle_ts);
        bql_lock();
        w->sleeping = false;
        if (w->s) {
            if (__atomic_load_n(w->word, __ATOMIC_RELAXED) != v) {
                trace_tempest_nc_coll_shm_waiter(w->s->node_id,
                                                 w->s->coll_seq_done);
            }
            if (shm_check_ended(w->s)) {
                w->s->coll_shm_woken++;
            }
        }
    }
    qemu_cond_destroy(&w->cond);
    g_free(w);
    bql_unlock();
    return NULL;
}

/*
 * A halted vCPU's sleep (CPUIdleSleep, target-patches/0013): the vCPU
 * that started the pending collective sleeps on its DONE word, counted
 * in the round's SLEEPERS and said in the node's WATCH, so that the last
 * to arrive wakes this thread and no other.  Under the BQL.
 */
static uint32_t *watch_word(TempestNCState *s, uint8_t *a)
{
    return shm_word(a, coll_area_node(s->num_nodes, s->node_id) +
                       COLL_AREA_N_WATCH);
}

static uint32_t *sleepers_word(TempestNCState *s, uint8_t *a, unsigned round)
{
    return shm_word(a, coll_area_round(s->num_nodes, round) +
                       COLL_AREA_R_SLEEPERS);
}

/*
 * @cpu watches DONE of the pending collective's round in @a (said in
 * WATCH; counted in SLEEPERS too if it @sleeps on the futex): DONE's
 * word.  Then DONE is read (Dekker with the last to arrive).
 */
static uint32_t *coll_watch_begin(TempestNCState *s, CPUState *cpu,
                                  uint8_t *a, bool sleeps)
{
    unsigned round = shm_round(s);

    s->coll_watcher = cpu;
    s->coll_watch_area = a;
    s->coll_watch_round = round;
    s->coll_watch_sleeps = sleeps;
    __atomic_store_n(watch_word(s, a), 1, __ATOMIC_SEQ_CST);
    if (sleeps) {
        __atomic_fetch_add(sleepers_word(s, a, round), 1, __ATOMIC_SEQ_CST);
    }
    return shm_word(a, coll_area_round(s->num_nodes, round) +
                       COLL_AREA_R_DONE);
}

static void coll_watch_end(TempestNCState *s)
{
    uint8_t *a = s->coll_watch_area;

    s->coll_watcher = NULL;
    s->coll_watch_area = NULL;
    if (a && a == shm_area(s)) {
        __atomic_store_n(watch_word(s, a), 0, __ATOMIC_SEQ_CST);
        if (s->coll_watch_sleeps) {
            __atomic_fetch_sub(sleepers_word(s, a, s->coll_watch_round), 1,
                               __ATOMIC_SEQ_CST);
        }
    }
}

static int coll_idle_prepare(CPUState *cpu, void *opaque, uint32_t **word,
                             uint32_t *val)
{
    TempestNCState *s = opaque;
    uint8_t *a = s->coll_shm_pending ? shm_area(s) : NULL;
    uint32_t *done, v;

    if (!a || s->coll_watcher || cpu != s->coll_cpu) {
        /* No collective of its own to sleep on: the RQ's tail, then. */
        return s->rq_idle_prepare ? s->rq_idle_prepare(s, cpu, word, val) :
                                    CPU_IDLE_SLEEP_NO;
    }
    done = coll_watch_begin(s, cpu, a, true);
    v = __atomic_load_n(done, __ATOMIC_SEQ_CST);
    if (v == s->coll_seq_done + 1) {
        coll_watch_end(s);
        tempest_nc_coll_shm_check(s);
        return CPU_IDLE_SLEEP_AGAIN;
    }
    trace_tempest_nc_coll_shm_watch(s->node_id, s->coll_seq_done,
                                    s->coll_watch_round);
    *word = done;
    *val = v;
    return CPU_IDLE_SLEEP_WAIT;
}

/* Awake: no longer watching, then DONE read again (Dekker, as above). */
static void coll_idle_woken(CPUState *cpu, void *opaque)
{
    TempestNCState *s = opaque;

    if (s->coll_watcher == cpu) {
        coll_watch_end(s);
        if (shm_check_ended(s)) {
            s->coll_shm_slept++;
        }
    }
    if (s->bcast_watch_cpus & 1ULL << (cpu->cpu_index % 64)) {
        /* Only a sleep that began a watch ends one (not another's). */
        s->bcast_watch_cpus &= ~(1ULL << (cpu->cpu_index % 64));
        bring_idle_woken(s, true);
    }
    if (s->rq_idle_woken) {
        s->rq_idle_woken(s, cpu);
    }
}

/* ------------------------------------------------------------------ */
/* Waiting in a register read (COLL_WAIT, 1.21)                        */
/* ------------------------------------------------------------------ */

/*
 * The wait of a read of the wait window, without the BQL: until DONE
 * (@done, if watched: not by BCAST_WAIT) holds @dv, the RQ's tail (@rq,
 * if watched) or B_COUNT (@bc) moves, another thread kicks the vCPU (an
 * interrupt it raised, a pause: exit_request) or @us pass.  It yields
 * the host CPU between looks (@spin false: more vCPUs than cores) or
 * spins (@spin: the launcher gave every node a core, and the guest would
 * spin as long).  The clock is read every few turns: a read cost more
 * than a yield's look (2026-11-29: 4% of a 16-node barrier's host CPU).
 * True if it stopped at that time limit.
 */
static bool coll_wait_loop(CPUState *cpu, unsigned us, bool spin,
                           uint32_t *done, uint32_t dv, uint32_t *rq,
                           uint32_t rqv, uint32_t *bc, uint32_t bcv)
{
    int64_t end = get_clock() + (int64_t)us * SCALE_US;
    unsigned turns = 0, every = spin ? 256 : 4;
    bool timed_out = false;

    bql_unlock();
    while (!(done && __atomic_load_n(done, __ATOMIC_ACQUIRE) == dv) &&
           !(rq && __atomic_load_n(rq, __ATOMIC_RELAXED) != rqv) &&
           !(bc && __atomic_load_n(bc, __ATOMIC_RELAXED) != bcv) &&
           !qatomic_read(&cpu->exit_request)) {
        if (++turns % every == 0 && get_clock() >= end) {
            timed_out = true;
            break;
        }
        if (spin) {
            cpu_relax();
        } else {
            sched_yield();
        }
    }
    bql_lock();
    return timed_out;
}

/*
 * May a read of the wait window wait?  A vCPU's (@cpu_access; not a
 * transfer's), on MTTCG, where the nodes spin or else yield before they
 * sleep (the vCPUs' sleep is set up: see tempest_nc_idle_sleep_setup).
 */
static bool read_may_wait(TempestNCState *s, CPUState *cpu, bool cpu_access)
{
    return cpu_access && cpu &&
           (s->spin_us ? qemu_tcg_mttcg_enabled() :
                         s->sleep_yield_us && s->coll_idle.prepare);
}

/*
 * The wait of a read of the wait window, with the BQL held: on @done
 * (DONE's word, or NULL) holding @dv, B_COUNT (@bc, or NULL) moving from
 * what we would read next, and the RQ's tail, said asleep on so that a
 * writer rings no doorbell.  False if it did not wait.
 */
static bool wait_read_wait(TempestNCState *s, CPUState *cpu, uint32_t *done,
                           uint32_t dv, uint32_t *bc)
{
    uint32_t *rq = NULL, rqv = 0;
    int r = CPU_IDLE_SLEEP_NO;
    bool out;

    if (s->rq_idle_prepare) {
        r = s->rq_idle_prepare(s, cpu, &rq, &rqv);
    }
    if (r == CPU_IDLE_SLEEP_AGAIN) {
        return false;       /* packets came: their interrupt is raised */
    }
    out = coll_wait_loop(cpu, s->spin_us ? s->spin_us : s->sleep_yield_us,
                         s->spin_us != 0, done, dv,
                         r == CPU_IDLE_SLEEP_NO ? NULL : rq, rqv, bc,
                         (uint32_t)s->bcast_ring_next);
    /*
     * After a yield that ran out, the halt that follows sleeps at once
     * (as after a sleep that timed out): one yield a wait, not two.
     */
    cpu->idle_timed_out = out && !s->spin_us;
    if (r != CPU_IDLE_SLEEP_NO && s->rq_idle_woken) {
        s->rq_idle_woken(s, cpu);
    }
    return true;
}

/*
 * COLL_WAIT (tempest-hw.h; COLL_GO after its commit): the vCPU that
 * started the pending collective waits for it inside the read.  It
 * watches the words a halted vCPU sleeps on (DONE, said in WATCH but not
 * counted in SLEEPERS: nobody need wake a thread that yields; the RQ's
 * tail, said asleep on so that a writer rings no doorbell; B_COUNT, read
 * only: the check after the yield reads the ring) and yields its host
 * CPU until one moves.  This is the halted vCPU's yield
 * (target-patches/0013) without the halt around it: no WFI, no wake-up
 * of the vCPU, no IRQ_COLL raised and acknowledged, no COLL_STATUS read
 * after it (docs/strata.rst, "Waiting in a register read").  Where the
 * nodes spin (SPIN_US not 0: every node has a host core) it spins for
 * SPIN_US instead, on the same words: the last to arrive then wakes no
 * waiter thread, and no interrupt is raised (docs/strata.rst, "Spinning
 * in a register read").  Under the BQL, which the wait lets go:
 * everything is read again after it.  @cpu_access: a vCPU's read (not a
 * transfer's).
 */
uint32_t tempest_nc_coll_wait(TempestNCState *s, bool cpu_access)
{
    CPUState *cpu = current_cpu;
    uint8_t *a = s->coll_shm_pending ? shm_area(s) : NULL;
    uint32_t *done, *bc;
    bool waited = false;

    if (a && read_may_wait(s, cpu, cpu_access) && cpu == s->coll_cpu &&
        !s->coll_watcher) {
        done = coll_watch_begin(s, cpu, a, false);
        /* B_COUNT: read, not watched (BWATCH: writers wake sleepers). */
        bc = s->coll_shm ? shm_word(a, bring_ctl(s, COLL_AREA_B_COUNT))
                         : NULL;
        waited = wait_read_wait(s, cpu, done, s->coll_seq_done + 1, bc);
        coll_watch_end(s);
    }
    s->coll_wait_quiet = true;
    if (shm_check_ended(s) && waited) {
        s->coll_shm_waited++;
    }
    s->coll_wait_quiet = false;
    if (s->coll_status != TEMPEST_COLL_ST_PENDING &&
        (s->irq_status & TEMPEST_NC_IRQ_COLL)) {
        tempest_nc_lower(s, TEMPEST_NC_IRQ_COLL);
    }
    trace_tempest_nc_coll_wait(s->node_id, s->coll_seq_done, waited,
                               s->coll_status);
    return s->coll_status;
}

/*
 * The wait of a BCAST_WAIT read (tempest_nc_bcast_wait) that found no
 * word to pop, on a node that reads the broadcast words in the combining
 * area's ring: as COLL_WAIT's (yields or spins without the BQL), on
 * B_COUNT, said in BWATCH as a halted vCPU's sleep on it is
 * (bring_idle_also), so that the next word wakes no waiter thread of
 * ours; on the RQ's tail; on the vCPU's exit_request.  Then the ring is
 * read.  True if it waited.
 */
bool tempest_nc_bring_wait(TempestNCState *s, bool cpu_access)
{
    CPUState *cpu = current_cpu;
    uint32_t *count;
    bool waited;

    if (!read_may_wait(s, cpu, cpu_access)) {
        return false;
    }
    count = bring_watch_begin(s, false);
    if (!count) {
        return false;
    }
    waited = wait_read_wait(s, cpu, NULL, 0, count);
    bring_idle_woken(s, false); /* out of BWATCH, and the ring read */
    return waited;
}

bool tempest_nc_coll_shm_able(TempestNCState *s)
{
    TempestCollWaiter *w;

    if (s->num_nodes < 2 || !shm_area(s)) {
        return false;
    }
    if (!s->coll_waiter) {
        w = g_new0(TempestCollWaiter, 1);
        w->s = s;
        qemu_cond_init(&w->cond);
        qemu_thread_create(&w->thread, "tempest-coll", coll_waiter_run, w,
                           QEMU_THREAD_DETACHED);
        s->coll_waiter = w;
        tempest_nc_idle_sleep_setup(s);
    }
    return true;
}

/*
 * The vCPUs' sleep on a shared word (DONE, or the RQ's tail), set up once
 * the node has the combining area (its first collective there, or its RQ
 * opened to peers).  Only where the launcher says the guest should not
 * spin (more vCPUs than host cores, SPIN_US 0): a vCPU that spins is
 * woken slower than the waiter thread (docs/strata.rst, "A vCPU that
 * sleeps on DONE").
 */
void tempest_nc_idle_sleep_setup(TempestNCState *s)
{
    CPUState *cpu;

    /* (Cheapest first: msg_rq_open() calls it at every RQ doorbell.) */
    if (s->coll_idle.prepare || s->spin_us != 0 || s->num_nodes < 2 ||
        !cpu_idle_sleep_supported() || !qemu_tcg_mttcg_enabled() ||
        !shm_area(s)) {
        return;
    }
    s->coll_idle = (CPUIdleSleep) {
        .prepare = coll_idle_prepare,
        .also = bring_idle_also,
        .woken = coll_idle_woken,
        .yield_us = s->sleep_yield_us,
        .max_ms = TEMPEST_NC_SLEEP_MAX_MS,
    };
    CPU_FOREACH(cpu) {
        cpu->idle_sleep_opaque = s;
        cpu->idle_sleep = &s->coll_idle;
    }
}

/* The device goes: no vCPU sleeps on a shared word from now on. */
static void idle_sleep_stop(TempestNCState *s)
{
    CPUState *cpu;

    if (!s->coll_idle.prepare) {
        return;
    }
    CPU_FOREACH(cpu) {
        if (cpu->idle_sleep == &s->coll_idle) {
            qemu_cpu_kick(cpu);         /* out of its sleep */
            cpu->idle_sleep = NULL;
        }
    }
    if (s->rq_watcher && s->rq_idle_woken) {
        /* Its woken() is not called now: end its sleep on the tail here. */
        s->rq_idle_woken(s, s->rq_watcher);
    }
    s->coll_idle.prepare = NULL;
}

/*
 * The device goes (under the BQL): the thread lets go of it at its next
 * look, and frees itself.  One in the futex is woken at once.
 */
void tempest_nc_coll_shm_stop(TempestNCState *s)
{
    TempestCollWaiter *w = s->coll_waiter;

    if (s->coll_watcher) {
        coll_watch_end(s);
    }
    s->bcast_watch = 0;
    s->bcast_watch_sleeps = 0;
    s->bcast_watch_area = NULL;
    s->bcast_watch_cpus = 0;
    idle_sleep_stop(s);
    if (!w) {
        return;
    }
    s->coll_waiter = NULL;
    w->s = NULL;
    if (w->sleeping) {
        shm_futex(w->word, FUTEX_WAKE, INT_MAX, NULL);
    }
    qemu_cond_signal(&w->cond);
}
