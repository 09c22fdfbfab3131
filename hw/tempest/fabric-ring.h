/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A byte ring in memory shared by two processes: one direction of a
 * shared-memory link of the fabric (docs/fabric.rst, "Shared memory").
 *
 * One producer and one consumer, each in its own QEMU.  The producer
 * copies frames in and publishes them by moving 'tail'; the consumer
 * copies them out and gives the room back by moving 'head'.  Both are
 * counts of bytes since the ring was made (they never wrap; a 64-bit count
 * outlives any run).  Each side keeps its own index privately and only
 * reads the other's from shared memory, and the other side is untrusted:
 * an index that is impossible (more bytes than the ring, or going back)
 * makes the ring broken, never an out-of-bounds access.
 *
 * Doorbells: the consumer sets 'sleeping' while nobody on its side polls
 * the ring; a producer that publishes while it is set rings the doorbell
 * once ('belled', cleared by the consumer when it drains).  A producer
 * that finds no room sets 'tx_waiting'; the consumer that makes room rings
 * back.  Each flag is written, then a full barrier, then the other side's
 * state is read, so of two racing sides at least one sees the other
 * (Dekker): no wake-up is lost.
 *
 * The poll hint: a consumer that polls may name a word of its own RAM
 * ('hint', an address in its guest's RAM; 0 for none) that a producer
 * sets after publishing while 'sleeping' is clear, so the consumer's guest
 * learns from one plain load that a look at the rings would find
 * something.  It is only a hint, and the other side's word: the producer
 * checks it against the RAM it mapped before every use.
 *
 * Credit (version 3): the consumer counts in 'credit_back' the DATA
 * packets of each logical network it has given back the credit of (32-bit
 * counts since the ring was made, wrapping), so the producer takes its
 * credit from memory, with no CREDIT frame to read first.  A producer out
 * of credit on a network sets that network's bit of 'credit_waiting' and
 * looks once more; a consumer that gives that network's credit back while
 * the bit is set clears it and wakes the producer (a frame in the other
 * ring).  The producer bounds what it takes: more than it can have sent
 * breaks the ring.
 *
 * Pure C (no QEMU headers): tests/unit/test-fabric-ring.c runs it on the
 * host, in two processes.
 */
#ifndef HW_TEMPEST_FABRIC_RING_H
#define HW_TEMPEST_FABRIC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define FABRIC_RING_MAGIC       0x47525054U     /* "TPRG" */
#define FABRIC_RING_CTL_SIZE    256             /* control before the data */
#define FABRIC_RING_MIN         4096
#define FABRIC_RING_MAX         (16U << 20)

/* The control block, at the start of the ring's shared memory. */
typedef struct FabricRingCtl {
    /* Set by the ring's maker before the other side maps it */
    uint32_t magic;
    uint32_t size;              /* data bytes: a power of 2 */
    uint8_t pad0[56];
    /* The producer's cache line */
    uint64_t tail;              /* bytes published */
    uint32_t tx_waiting;        /* the producer waits for room */
    uint32_t belled;            /* rang since the consumer last looked */
    uint32_t credit_waiting;    /* bit net: the producer waits for credit */
    uint8_t pad1[44];
    /* The consumer's cache line of progress, written as it takes */
    uint64_t head;              /* bytes taken */
    uint32_t parsing;           /* frames taken out are being handled */
    uint32_t credit_back[2];    /* DATA credit given back, per network */
    uint8_t pad2[44];
    /*
     * The consumer's state, written only when it changes, on a line of
     * its own: a producer reads it after every publish, and a line the
     * consumer also wrote as it took would cost that read a transfer
     * between the cores each time (docs/fabric.rst, "Lines between the
     * cores").
     */
    uint32_t sleeping;          /* ring the doorbell for new bytes */
    uint32_t pad3;
    uint64_t hint;              /* the consumer's poll hint, or 0 */
    uint8_t pad4[48];
} FabricRingCtl;

/* One side's view of a ring: its own index, the size it trusts. */
typedef struct FabricRing {
    FabricRingCtl *ctl;
    uint8_t *data;
    uint32_t size;
    uint64_t pos;               /* tail (producer) or head (consumer) */
    uint64_t head_seen;         /* producer: the head it read last */
    bool broken;                /* the other side broke the ring */
} FabricRing;

static inline size_t fabric_ring_bytes(uint32_t size)
{
    return FABRIC_RING_CTL_SIZE + size;
}

static inline bool fabric_ring_size_ok(uint32_t size)
{
    return size >= FABRIC_RING_MIN && size <= FABRIC_RING_MAX &&
           !(size & (size - 1));
}

/* Make a ring in mem (fabric_ring_bytes(size) bytes, zeroed). */
static inline void fabric_ring_format(void *mem, uint32_t size)
{
    FabricRingCtl *c = (FabricRingCtl *)mem;

    memset(c, 0, sizeof(*c));
    c->size = size;
    c->sleeping = 1;            /* nobody polls it yet */
    /*
     * The producer may have run out of credit before the link was made,
     * when there was no bit to set: the consumer's first give-back of
     * each network wakes it.
     */
    c->credit_waiting = 3;
    __atomic_store_n(&c->magic, FABRIC_RING_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Take the ring at mem, which must be a ring of the size expected: the
 * size is ours, never the other side's word.  producer: which side we are.
 */
static inline bool fabric_ring_attach(FabricRing *r, void *mem,
                                      uint32_t size, bool producer)
{
    FabricRingCtl *c = (FabricRingCtl *)mem;

    memset(r, 0, sizeof(*r));
    if (!fabric_ring_size_ok(size) ||
        __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != FABRIC_RING_MAGIC ||
        c->size != size) {
        return false;
    }
    r->ctl = c;
    r->data = (uint8_t *)mem + FABRIC_RING_CTL_SIZE;
    r->size = size;
    r->pos = __atomic_load_n(producer ? &c->tail : &c->head,
                             __ATOMIC_ACQUIRE);
    /* Room not known yet: the first write reads the head. */
    r->head_seen = r->pos - size;
    return true;
}

/* Producer: bytes of room now (0 and broken if the head is impossible). */
static inline size_t fabric_ring_room(FabricRing *r)
{
    uint64_t head = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);

    if (head > r->pos || r->pos - head > r->size) {
        r->broken = true;
    }
    if (r->broken) {
        return 0;
    }
    r->head_seen = head;
    return r->size - (size_t)(r->pos - head);
}

/*
 * Producer: at least want bytes of room?  The head read last says so
 * without a look at the consumer's line while it does (the head only
 * moves on: the room it gave is still there); else the head is read
 * again.  Returns the room known, which may be less than want.
 */
static inline size_t fabric_ring_room_for(FabricRing *r, size_t want)
{
    size_t known = r->broken ? 0 : r->size - (size_t)(r->pos - r->head_seen);

    return known >= want || r->broken ? known : fabric_ring_room(r);
}

static inline void fabric_ring_copy_in(FabricRing *r, uint64_t at,
                                       const uint8_t *src, size_t len)
{
    size_t off = at & (r->size - 1), first = r->size - off;

    if (first > len) {
        first = len;
    }
    memcpy(r->data + off, src, first);
    memcpy(r->data, src + first, len - first);
}

/*
 * Producer: copy in as much of iov as there is room for, publish it, and
 * return how many bytes went in.  A byte stream: a frame may go in part.
 */
static inline size_t fabric_ring_write(FabricRing *r,
                                       const struct iovec *iov, int iovcnt)
{
    size_t room, done = 0, want = 0;

    for (int i = 0; i < iovcnt; i++) {
        want += iov[i].iov_len;
    }
    room = fabric_ring_room_for(r, want);
    for (int i = 0; i < iovcnt && room; i++) {
        size_t n = iov[i].iov_len < room ? iov[i].iov_len : room;

        if (!n) {
            continue;   /* an empty part may have no address at all */
        }
        fabric_ring_copy_in(r, r->pos + done,
                            (const uint8_t *)iov[i].iov_base, n);
        done += n;
        room -= n;
    }
    if (done) {
        r->pos += done;
        __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
    }
    return done;
}

/*
 * Producer, after publishing: should the doorbell ring?  Yes when the
 * consumer sleeps and nobody rang since it last looked.
 */
static inline bool fabric_ring_need_bell(FabricRing *r)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_load_n(&r->ctl->sleeping, __ATOMIC_RELAXED) &&
           !__atomic_exchange_n(&r->ctl->belled, 1, __ATOMIC_SEQ_CST);
}

/*
 * Producer, out of room: ask to be rung when there is some.  Returns true
 * if room appeared meanwhile (write again instead of waiting).
 */
static inline bool fabric_ring_wait_room(FabricRing *r)
{
    __atomic_store_n(&r->ctl->tx_waiting, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return fabric_ring_room(r) != 0;
}

/* Consumer: bytes published and not taken (0 and broken if impossible). */
static inline size_t fabric_ring_avail(FabricRing *r)
{
    uint64_t tail = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);

    if (tail < r->pos || tail - r->pos > r->size) {
        r->broken = true;
    }
    return r->broken ? 0 : (size_t)(tail - r->pos);
}

/*
 * Consumer: copy out up to max bytes and give their room back.  Returns
 * the bytes copied; *ring_back says the producer waits for room and must
 * be rung.
 */
static inline size_t fabric_ring_read(FabricRing *r, uint8_t *buf,
                                      size_t max, bool *ring_back)
{
    size_t n = fabric_ring_avail(r), off, first;

    *ring_back = false;
    if (n > max) {
        n = max;
    }
    if (!n) {
        return 0;
    }
    off = r->pos & (r->size - 1);
    first = r->size - off < n ? r->size - off : n;
    memcpy(buf, r->data + off, first);
    memcpy(buf + first, r->data, n - first);
    r->pos += n;
    __atomic_store_n(&r->ctl->head, r->pos, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&r->ctl->tx_waiting, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&r->ctl->tx_waiting, 0, __ATOMIC_SEQ_CST)) {
        *ring_back = true;
    }
    return n;
}

/*
 * Consumer, reading in place: where the bytes not taken yet start, and
 * how many of them follow there without wrapping (0 and broken if the
 * tail is impossible).  The bytes are the producer's memory until
 * fabric_ring_consume() gives them back, and the producer may still
 * rewrite them: copy what must not change before checking it.
 */
static inline size_t fabric_ring_peek(FabricRing *r, const uint8_t **at)
{
    size_t n = fabric_ring_avail(r), off = r->pos & (r->size - 1);

    *at = r->data + off;
    return n < r->size - off ? n : r->size - off;
}

/*
 * Consumer: a copy of the first n bytes not taken yet, wrapping or not,
 * taking nothing (false if fewer are there).
 */
static inline bool fabric_ring_peek_copy(FabricRing *r, uint8_t *buf,
                                         size_t n)
{
    size_t off = r->pos & (r->size - 1), first = r->size - off;

    if (fabric_ring_avail(r) < n) {
        return false;
    }
    first = first < n ? first : n;
    memcpy(buf, r->data + off, first);
    memcpy(buf + first, r->data, n - first);
    return true;
}

/*
 * Consumer: give back the room of n bytes read in place (at most what
 * fabric_ring_peek() said).  *ring_back as for fabric_ring_read().
 */
static inline void fabric_ring_consume(FabricRing *r, size_t n,
                                       bool *ring_back)
{
    r->pos += n;
    __atomic_store_n(&r->ctl->head, r->pos, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *ring_back = __atomic_load_n(&r->ctl->tx_waiting, __ATOMIC_RELAXED) &&
                 __atomic_exchange_n(&r->ctl->tx_waiting, 0,
                                     __ATOMIC_SEQ_CST);
}

/*
 * Producer, writing in place: the next len bytes of the ring if they
 * are free and do not wrap, else NULL (write them with
 * fabric_ring_write()).  Nothing is published until
 * fabric_ring_commit(); the consumer cannot see them before.
 */
static inline uint8_t *fabric_ring_reserve(FabricRing *r, size_t len)
{
    size_t off = r->pos & (r->size - 1);

    if (!len || len > r->size - off || fabric_ring_room_for(r, len) < len) {
        return NULL;
    }
    return r->data + off;
}

/* Producer: publish the len bytes written where fabric_ring_reserve() said. */
static inline void fabric_ring_commit(FabricRing *r, size_t len)
{
    r->pos += len;
    __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
}

/*
 * Consumer: frames read out of the ring (head moved on) are being handled
 * (true) or are handled (false).  Set before the read, so a producer that
 * sees the room given back sees it (the read's release orders it).
 */
static inline void fabric_ring_set_parsing(FabricRing *r, bool on)
{
    __atomic_store_n(&r->ctl->parsing, on, __ATOMIC_RELEASE);
}

/*
 * Producer: everything published was taken and handled (the ring empty,
 * nothing of it being handled): a packet sent around the ring now comes
 * after all of it.
 */
static inline bool fabric_ring_idle(FabricRing *r)
{
    return fabric_ring_room(r) == r->size &&
           !__atomic_load_n(&r->ctl->parsing, __ATOMIC_ACQUIRE);
}

/*
 * Consumer: someone polls (sleeping false) or nobody does (true).  After
 * going to sleep the caller must look at the ring once more: bytes
 * published before the producer could see the flag are not rung for.
 */
static inline void fabric_ring_set_sleeping(FabricRing *r, bool sleeping)
{
    __atomic_store_n(&r->ctl->sleeping, sleeping, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Consumer: where producers set the poll hint (0: nowhere). */
static inline void fabric_ring_set_hint(FabricRing *r, uint64_t addr)
{
    __atomic_store_n(&r->ctl->hint, addr, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * Producer, after fabric_ring_need_bell() (its fence orders the publish
 * before this): the consumer's poll hint address, untrusted, or 0.
 */
static inline uint64_t fabric_ring_hint(FabricRing *r)
{
    return __atomic_load_n(&r->ctl->hint, __ATOMIC_RELAXED);
}

/* Consumer, woken by the doorbell: the next publish may ring again. */
static inline void fabric_ring_bell_heard(FabricRing *r)
{
    __atomic_store_n(&r->ctl->belled, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * Consumer: the credit of n more DATA packets of network net is given
 * back (*total, the consumer's own count, is what it published so far).
 * Returns true if the producer waits for credit and must be woken.
 */
static inline bool fabric_ring_credit_back(FabricRing *r, unsigned net,
                                           uint32_t *total, uint32_t n)
{
    uint32_t bit = 1U << (net & 1);

    *total += n;
    __atomic_store_n(&r->ctl->credit_back[net & 1], *total, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return (__atomic_load_n(&r->ctl->credit_waiting, __ATOMIC_RELAXED) & bit) &&
           (__atomic_fetch_and(&r->ctl->credit_waiting, ~bit,
                               __ATOMIC_SEQ_CST) & bit);
}

/*
 * Producer: credit of network net given back since it last looked (*seen,
 * its own count of what it took).  More than max (the credit it can have
 * used) is impossible: the ring is broken and 0 is returned.
 */
static inline uint32_t fabric_ring_credit_take(FabricRing *r, unsigned net,
                                               uint32_t *seen, uint32_t max)
{
    uint32_t now = __atomic_load_n(&r->ctl->credit_back[net & 1],
                                   __ATOMIC_ACQUIRE);
    uint32_t n = now - *seen;

    if (n > max) {
        r->broken = true;
    }
    if (r->broken) {
        return 0;
    }
    *seen = now;
    return n;
}

/*
 * Producer, out of credit on network net: ask to be woken when some of
 * it comes back (one bit per network: a wake-up for the other network
 * must not use up this one); the caller then takes once more (credit
 * given back before the consumer could see the bit is not woken for).
 */
static inline void fabric_ring_credit_wait(FabricRing *r, unsigned net)
{
    __atomic_fetch_or(&r->ctl->credit_waiting, 1U << (net & 1),
                      __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * A shared-memory link of the fabric (tempest-fabric-shm.c, docs/fabric.rst
 * "Shared memory"): a sealed memfd of a header page, then ring 0 (the
 * dialler's frames) and ring 1 (the acceptor's), each on a page boundary.
 */
#define FABRIC_LINK_MAGIC       0x4d485354U     /* "TSHM" */
#define FABRIC_LINK_VERSION     5       /* 2: poll hint, 3: credit_back, */
                                        /* 4: RQ records, 5: the */
                                        /* consumer's state line */
#define FABRIC_LINK_HDR         4096
#define FABRIC_LINK_RING        (256 * 1024)    /* data bytes per direction */

/* The header page's fields (little-endian) */
enum {
    FABRIC_LINK_H_MAGIC = 0,        /* u32 */
    FABRIC_LINK_H_VERSION = 4,      /* u32 */
    FABRIC_LINK_H_CLUSTER = 8,      /* u64 */
    FABRIC_LINK_H_DIALLER = 16,     /* u32 */
    FABRIC_LINK_H_ACCEPTOR = 20,    /* u32 */
    FABRIC_LINK_H_RING = 24,        /* u32: FABRIC_LINK_RING */
    FABRIC_LINK_H_RAM = 32,         /* [2] x (u64 base, u64 size) */
    FABRIC_LINK_H_RQ = 64,          /* [2] x RqRecord (rq-lock.h), per side */
};

/* One ring's pages, and the whole link */
#define FABRIC_LINK_SPAN \
    ((FABRIC_RING_CTL_SIZE + FABRIC_LINK_RING + 4095) & ~(size_t)4095)
#define FABRIC_LINK_BYTES       (FABRIC_LINK_HDR + 2 * FABRIC_LINK_SPAN)

#endif /* HW_TEMPEST_FABRIC_RING_H */
