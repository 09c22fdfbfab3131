/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A receive queue that the node controllers of one host write straight
 * into (docs/fabric.rst, "Straight into the receiver's RQ"): the sender's
 * device puts the packet into the receiver's RQ slot in the receiver's
 * guest RAM, which it has mapped, with no frame in a ring and no POLL of
 * the receiver's on the way.
 *
 * The receiver's line of the cluster's combining area (coll-area.h)
 * holds an RqLine: the lock and the RQ's place.  The lock is one 64-bit
 * word: the RQ's tail (the next slot to fill, counted since RING_SETUP)
 * in its low half, its holder in its high half (0: free; node + 1).
 * Whoever fills a slot holds it, the receiver's own device included; a
 * writer takes it only from free, with one compare-and-swap, and never
 * waits for it (it sends through its ring instead).  The receiver holds
 * it while its RQ is closed (none set up, being changed, being saved)
 * and writes the RQ's place only then.
 *
 * A writer holding the lock claims slot t by a compare-and-swap of its
 * CTL from 0 to RQ_BUSY (a slot the guest has not freed fails it), writes
 * the packet, records "slot t complete, CTL v" in its own RqRecord (its
 * side of the link's header), stores CTL = v (VALID | length) and lets
 * go with the tail at t + 1.  RQ_BUSY has no VALID bit, so the guest never
 * stops at a slot being written.  A writer that dies holding the lock
 * leaves a state the receiver can always finish from the slot and the
 * record (rq_resolve()), so no slot is left that the guest would wait
 * at forever.
 *
 * Both sides are untrusted: every value read from the other is checked
 * by the caller before it is used as an address or a length.
 *
 * Pure C (no QEMU headers): tests/unit/test-rq-lock.c runs it on the
 * host, in several processes.
 */
#ifndef HW_TEMPEST_RQ_LOCK_H
#define HW_TEMPEST_RQ_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#define RQ_VALID        (1U << 31)      /* TEMPEST_PKT_VALID */
#define RQ_BUSY         (1U << 29)      /* claimed by a writer, not VALID */

/* In the receiver's line of the combining area (8-aligned). */
typedef struct RqLine {
    uint64_t lock;              /* tail | (holder + 1) << 32 */
    uint64_t base;              /* guest address of slot 0 */
    uint32_t slots;             /* a power of 2; 0: closed */
    uint32_t slot_size;         /* bytes, header included */
    uint32_t sleeper;           /* 1: a vCPU of the receiver sleeps on the
                                   tail (lock's low half): a writer wakes
                                   it with a FUTEX_WAKE after letting go */
    uint32_t peeks;             /* 1: the receiver's guest polls and reads
                                   its RQ's slots on every turn (POLL with
                                   POLL_PEEKS): a writer that finds no
                                   sleeper pokes neither hint nor bell */
} RqLine;

/* A writer's, in its side of the link's header page. */
typedef struct RqRecord {
    uint32_t direct[2];         /* packets written straight in, per network */
    uint32_t slot;              /* t + 1 of the last slot completed */
    uint32_t ctl;               /* the CTL it was given */
} RqRecord;

static inline uint64_t rq_word(uint32_t holder1, uint32_t tail)
{
    return (uint64_t)holder1 << 32 | tail;
}

/* The holder + 1 (0: free) and the tail of a lock word. */
static inline uint32_t rq_holder1(uint64_t w)
{
    return (uint32_t)(w >> 32);
}

static inline uint32_t rq_tail(uint64_t w)
{
    return (uint32_t)w;
}

static inline uint64_t rq_load(RqLine *l)
{
    return __atomic_load_n(&l->lock, __ATOMIC_ACQUIRE);
}

/*
 * Take the lock for node me if it is free: true, and the tail in *tail.
 * *seen (may be NULL): the word found.
 */
static inline bool rq_take(RqLine *l, unsigned me, uint32_t *tail,
                           uint64_t *seen)
{
    uint64_t w = rq_load(l);
    bool ok = false;

    if (!rq_holder1(w)) {
        ok = __atomic_compare_exchange_n(&l->lock, &w,
                                         rq_word(me + 1, rq_tail(w)), false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (seen) {
        *seen = w;
    }
    if (ok) {
        *tail = rq_tail(w);
    }
    return ok;
}

/*
 * Change the lock from what was held (the holder + 1 and tail of when it
 * was taken) to new: only if it is still so (a receiver that found the
 * holder dead may have moved it).  Release ordering: everything written
 * under the lock is seen by whoever sees the new word.
 */
static inline bool rq_swap(RqLine *l, uint64_t held, uint64_t new_word)
{
    return __atomic_compare_exchange_n(&l->lock, &held, new_word, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Writer, holding the lock: claim the slot whose CTL is at ctl. */
static inline bool rq_claim(uint32_t *ctl)
{
    uint32_t free_ctl = 0;

    return __atomic_compare_exchange_n(ctl, &free_ctl, RQ_BUSY, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Writer: a claimed slot it will not fill after all. */
static inline void rq_unclaim(uint32_t *ctl)
{
    __atomic_store_n(ctl, 0, __ATOMIC_RELEASE);
}

/*
 * Writer: slot t's body is written; count it on network net, record it
 * complete, then make it VALID with CTL v.  Then let go with the tail at
 * t + 1 (rq_swap).
 */
static inline void rq_complete(RqRecord *rec, uint32_t *ctl, uint32_t t,
                               uint32_t v, unsigned net)
{
    uint32_t *d = &rec->direct[net & 1];

    __atomic_store_n(d, __atomic_load_n(d, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&rec->ctl, v, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->slot, t + 1, __ATOMIC_RELEASE);
    __atomic_store_n(ctl, v, __ATOMIC_RELEASE);
}

/*
 * Receiver: the writer holding the lock at tail t is dead (its link
 * closed: it writes nothing more), or we broke its hold.  ctl: slot t's
 * CTL; rec: the writer's record; max_len: the largest payload a slot
 * holds.  Returns the tail to go on from, with the slot made right:
 *   VALID                      -> t + 1 (it died letting go)
 *   0, recorded complete       -> t + 1 (the guest took it already)
 *   RQ_BUSY, recorded complete -> made VALID from the record, t + 1
 *   RQ_BUSY otherwise          -> freed (0), t (it died writing)
 *   0 otherwise                -> t
 * RQ_BUSY changes only by a compare-and-swap, so a writer that was not
 * dead after all and made the slot VALID meanwhile keeps it (t + 1).
 */
static inline uint32_t rq_resolve(uint32_t *ctl, RqRecord *rec, uint32_t t,
                                  uint32_t max_len)
{
    uint32_t c = __atomic_load_n(ctl, __ATOMIC_ACQUIRE);
    bool done = __atomic_load_n(&rec->slot, __ATOMIC_ACQUIRE) == t + 1;
    uint32_t v = __atomic_load_n(&rec->ctl, __ATOMIC_RELAXED), want;

    if (c & RQ_VALID) {
        return t + 1;
    }
    if (c != RQ_BUSY) {
        return done && c == 0 ? t + 1 : t;
    }
    want = done && (v & RQ_VALID) && (v & ~RQ_VALID) <= max_len ? v : 0;
    if (!__atomic_compare_exchange_n(ctl, &c, want, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return c & RQ_VALID ? t + 1 : t;
    }
    return want ? t + 1 : t;
}

/*
 * A receiver's vCPU that sleeps on the tail (CPUIdleSleep, docs/fabric.rst
 * "A vCPU asleep on its RQ"): the futex word is the lock's low half.
 * Dekker between rq_sleep_begin(), which says "asleep" and then reads the
 * tail, and rq_sleeper(), which a writer calls after letting go with the
 * tail moved: either the writer sees the sleeper (and wakes the word), or
 * the sleeper sees the new tail (and does not sleep past the packet).
 */
static inline uint32_t *rq_tail_word(RqLine *l)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)&l->lock + 1;
#else
    return (uint32_t *)&l->lock;
#endif
}

/* Receiver: about to sleep; the tail to sleep on (while the word holds it). */
static inline uint32_t rq_sleep_begin(RqLine *l)
{
    __atomic_store_n(&l->sleeper, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return rq_tail(rq_load(l));
}

/* Receiver, awake: no longer asleep (then it reads the tail again). */
static inline void rq_sleep_end(RqLine *l)
{
    __atomic_store_n(&l->sleeper, 0, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Writer, after rq_swap() moved the tail: must it wake the receiver? */
static inline bool rq_sleeper(RqLine *l)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_load_n(&l->sleeper, __ATOMIC_RELAXED) != 0;
}

/*
 * Receiver: its guest reads the slots itself while it polls (@on), or not
 * (then it reads the tail after: the same Dekker as the sleeper's, so a
 * writer that saw "peeks" wrote before that look).
 */
static inline void rq_peeks_set(RqLine *l, bool on)
{
    if (__atomic_load_n(&l->peeks, __ATOMIC_RELAXED) != on) {
        __atomic_store_n(&l->peeks, on, __ATOMIC_SEQ_CST);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Writer, after rq_sleeper() (its fence): does the receiver look itself? */
static inline bool rq_peeks(RqLine *l)
{
    return __atomic_load_n(&l->peeks, __ATOMIC_RELAXED) != 0;
}

#endif /* HW_TEMPEST_RQ_LOCK_H */
