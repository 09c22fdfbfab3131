/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the shared-memory byte ring of the fabric
 * (hw/tempest/fabric-ring.h, the code the device runs; docs/fabric.rst,
 * "Shared memory"): the control block and attach, the byte stream through
 * wrap-around, the doorbell protocol between two real processes, and a
 * peer that writes impossible indices.
 */
#include <glib.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric-ring.h"

/* A lost wake-up stalls the two-process stream: fail after this long. */
#define RING_ALARM_SECONDS      20

/* The byte at each position of a seeded pseudo-random stream. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void stream_fill(uint64_t seed, uint64_t pos, uint8_t *buf,
                        size_t len)
{
    while (len) {
        uint64_t w = mix64(seed ^ (pos >> 3));

        for (unsigned b = pos & 7; b < 8 && len; b++, len--, pos++) {
            *buf++ = w >> (8 * b);
        }
    }
}

/* xorshift64*: sizes and split points, the same in both processes. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

static size_t rng_below(uint64_t *s, size_t n)
{
    return rng_next(s) % n;
}

/* A length of 1 to 3 * size, mostly small, sometimes more than the ring. */
static size_t rng_len(uint64_t *s, uint32_t size)
{
    switch (rng_below(s, 4)) {
    case 0:
        return 1 + rng_below(s, 16);
    case 1:
        return 1 + rng_below(s, size / 8);
    case 2:
        return 1 + rng_below(s, size);
    default:
        return 1 + rng_below(s, 3 * (size_t)size);
    }
}

/*
 * The two-process stream goes in phases of 256 KiB, by position, so that
 * each side in turn is the slow one: a few bytes a write and big reads
 * (the consumer finds the ring empty and sleeps), big writes and small
 * reads (the producer finds it full and waits for room), or both random.
 */
#define PHASE_SHIFT     18

static size_t rng_phase_len(uint64_t *s, uint32_t size, uint64_t pos,
                            bool producer)
{
    switch ((pos >> PHASE_SHIFT) % 8) {
    case 0:
        return producer ? 1 + rng_below(s, 4)
                        : size + rng_below(s, 2 * (size_t)size);
    case 1:
    case 2:
        return producer ? size + rng_below(s, 2 * (size_t)size)
                        : 1 + rng_below(s, 64);
    default:
        return rng_len(s, size);
    }
}

/* Cut buf[0..len) into 1 to 3 iovecs, some maybe empty. */
static int split_iov(uint64_t *s, uint8_t *buf, size_t len,
                     struct iovec *iov)
{
    int cnt = 1 + rng_below(s, 3);
    size_t a = rng_below(s, len + 1), b = rng_below(s, len + 1), t;

    if (a > b) {
        t = a;
        a = b;
        b = t;
    }
    switch (cnt) {
    case 1:
        iov[0] = (struct iovec) { buf, len };
        break;
    case 2:
        iov[0] = (struct iovec) { buf, a };
        iov[1] = (struct iovec) { buf + a, len - a };
        break;
    default:
        iov[0] = (struct iovec) { buf, a };
        iov[1] = (struct iovec) { buf + a, b - a };
        iov[2] = (struct iovec) { buf + b, len - b };
        break;
    }
    return cnt;
}

/*
 * A ring whose data ends right before an inaccessible page, so an access
 * past data[size - 1] faults instead of passing unseen.
 */
typedef struct Guarded {
    void *base;
    size_t span;
    uint8_t *mem;
} Guarded;

static void guarded_map(Guarded *g, uint32_t size)
{
    /* Not qemu_real_host_page_size(): this test links no QEMU code */
    size_t page = sysconf(_SC_PAGE_SIZE), bytes = fabric_ring_bytes(size);

    g->span = (bytes + page - 1) / page * page + page;
    g->base = mmap(NULL, g->span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(g->base != MAP_FAILED);
    g_assert_cmpint(mprotect((uint8_t *)g->base + g->span - page, page,
                             PROT_NONE), ==, 0);
    g->mem = (uint8_t *)g->base + g->span - page - bytes;
    g_assert_cmpuint((uintptr_t)g->mem % 64, ==, 0);
}

static void guarded_unmap(Guarded *g)
{
    munmap(g->base, g->span);
}

/*
 * The control block (fabric-ring.h, FabricRingCtl): it fits before the
 * data, and each side's fields are on a cache line of their own, apart
 * from the maker's; the consumer's state, which the producer reads after
 * every publish, is apart from the head and counts it moves as it takes.
 */
#define CTL_LINE(field)     (offsetof(FabricRingCtl, field) / 64)

static void test_layout(void)
{
    g_assert_cmpuint(sizeof(FabricRingCtl), <=, FABRIC_RING_CTL_SIZE);
    g_assert_cmpuint(FABRIC_RING_CTL_SIZE % 64, ==, 0);
    g_assert_cmpuint(CTL_LINE(magic), ==, CTL_LINE(size));
    g_assert_cmpuint(CTL_LINE(tail), ==, CTL_LINE(tx_waiting));
    g_assert_cmpuint(CTL_LINE(tail), ==, CTL_LINE(belled));
    g_assert_cmpuint(CTL_LINE(tail), ==, CTL_LINE(credit_waiting));
    g_assert_cmpuint(CTL_LINE(head), ==, CTL_LINE(credit_back));
    g_assert_cmpuint(CTL_LINE(head), ==, CTL_LINE(parsing));
    g_assert_cmpuint(CTL_LINE(sleeping), ==, CTL_LINE(hint));
    g_assert_cmpuint(CTL_LINE(tail), !=, CTL_LINE(head));
    g_assert_cmpuint(CTL_LINE(tail), !=, CTL_LINE(magic));
    g_assert_cmpuint(CTL_LINE(head), !=, CTL_LINE(magic));
    g_assert_cmpuint(CTL_LINE(sleeping), !=, CTL_LINE(head));
    g_assert_cmpuint(CTL_LINE(sleeping), !=, CTL_LINE(tail));
    g_assert_cmpuint(CTL_LINE(sleeping), !=, CTL_LINE(magic));
    g_assert_cmpuint(fabric_ring_bytes(4096), ==, FABRIC_RING_CTL_SIZE + 4096);
}

/*
 * The producer reads the consumer's head only when the room it saw last
 * is short of what it writes (fabric_ring_room_for): a head that the test
 * makes impossible is not seen by a write that fits, and breaks the ring
 * at the first write that does not.
 */
static void test_room_cached(void)
{
    const uint32_t size = FABRIC_RING_MIN;
    g_autofree uint8_t *mem = g_malloc0(fabric_ring_bytes(size));
    uint8_t buf[256] = { 0 };
    struct iovec iov = { buf, sizeof(buf) };
    FabricRing p, c;
    bool ring_back;

    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&p, mem, size, true));
    g_assert_true(fabric_ring_attach(&c, mem, size, false));
    /* The first write reads the head: all the ring is room */
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, sizeof(buf));
    g_assert_cmpuint(p.head_seen, ==, 0);
    /* The consumer takes it: the producer still counts size - 256 */
    g_assert_cmpuint(fabric_ring_read(&c, buf, sizeof(buf), &ring_back), ==,
                     sizeof(buf));
    g_assert_cmpuint(p.ctl->head, ==, sizeof(buf));
    g_assert_cmpuint(fabric_ring_room_for(&p, 1), ==, size - sizeof(buf));
    /* A head beyond the tail, not looked at while the room known does */
    p.ctl->head = 10 * size;
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, sizeof(buf));
    g_assert_false(p.broken);
    g_assert_cmpuint(fabric_ring_room_for(&p, size - 2 * sizeof(buf)), ==,
                     size - 2 * sizeof(buf));
    /* One byte more than known: the head is read, and it is impossible */
    g_assert_cmpuint(fabric_ring_room_for(&p, size - 2 * sizeof(buf) + 1),
                     ==, 0);
    g_assert_true(p.broken);
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 0);
    g_assert_cmpuint(p.ctl->tail, ==, 2 * sizeof(buf));

    /* A head really moved on is found when the room known is short */
    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&p, mem, size, true));
    g_assert_true(fabric_ring_attach(&c, mem, size, false));
    for (unsigned i = 0; i < 3 * size / sizeof(buf); i++) {
        g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, sizeof(buf));
        g_assert_cmpuint(fabric_ring_read(&c, buf, sizeof(buf), &ring_back),
                         ==, sizeof(buf));
    }
    g_assert_false(p.broken);
    g_assert_cmpuint(fabric_ring_room(&p), ==, size);
}

/* Sizes: powers of 2 from FABRIC_RING_MIN to FABRIC_RING_MAX, no other. */
static void test_size_ok(void)
{
    g_assert_true(fabric_ring_size_ok(FABRIC_RING_MIN));
    g_assert_true(fabric_ring_size_ok(FABRIC_RING_MIN * 2));
    g_assert_true(fabric_ring_size_ok(FABRIC_RING_MAX));
    g_assert_false(fabric_ring_size_ok(0));
    g_assert_false(fabric_ring_size_ok(1));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MIN / 2));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MIN - 1));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MIN + 1));
    g_assert_false(fabric_ring_size_ok(3 * FABRIC_RING_MIN));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MAX - FABRIC_RING_MIN));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MAX + 1));
    g_assert_false(fabric_ring_size_ok(FABRIC_RING_MAX * 2));
    g_assert_false(fabric_ring_size_ok(0x80000000U));
    g_assert_false(fabric_ring_size_ok(0xffffffffU));
}

/*
 * Format and attach (fabric-ring.h; "Setting up a link" checks the ring
 * size the same way): a fresh ring is empty with 'sleeping' set (nobody
 * polls it yet); attach takes only a formatted ring of the size the
 * caller expects (the size is ours, never the other side's word) and a
 * valid size; either side starts from its own index in shared memory.
 */
static void test_attach(void)
{
    static uint8_t mem[FABRIC_RING_CTL_SIZE + 2 * FABRIC_RING_MIN]
        __attribute__((aligned(64)));
    FabricRingCtl *c = (FabricRingCtl *)mem;
    const uint32_t size = 2 * FABRIC_RING_MIN;
    FabricRing r;

    memset(mem, 0xee, sizeof(mem));
    fabric_ring_format(mem, size);
    g_assert_cmphex(c->magic, ==, FABRIC_RING_MAGIC);
    g_assert_cmpuint(c->size, ==, size);
    g_assert_cmpuint(c->tail, ==, 0);
    g_assert_cmpuint(c->head, ==, 0);
    g_assert_cmpuint(c->tx_waiting, ==, 0);
    g_assert_cmpuint(c->belled, ==, 0);
    g_assert_cmpuint(c->sleeping, ==, 1);

    for (int producer = 0; producer < 2; producer++) {
        g_assert_true(fabric_ring_attach(&r, mem, size, producer));
        g_assert_true(r.ctl == c);
        g_assert_true(r.data == mem + FABRIC_RING_CTL_SIZE);
        g_assert_cmpuint(r.size, ==, size);
        g_assert_cmpuint(r.pos, ==, 0);
        g_assert_false(r.broken);
        g_assert_cmpuint(producer ? fabric_ring_room(&r)
                                  : fabric_ring_avail(&r), ==,
                         producer ? size : 0);

        /* A size other than the one expected, either way */
        g_assert_false(fabric_ring_attach(&r, mem, size / 2, producer));
        g_assert_true(r.ctl == NULL);
        g_assert_false(fabric_ring_attach(&r, mem, size * 2, producer));
        c->size = size * 2;
        g_assert_false(fabric_ring_attach(&r, mem, size, producer));
        c->size = 0xffffffffU;
        g_assert_false(fabric_ring_attach(&r, mem, size, producer));
        c->size = size;

        /* A wrong magic, or none yet */
        c->magic = FABRIC_RING_MAGIC ^ 1;
        g_assert_false(fabric_ring_attach(&r, mem, size, producer));
        c->magic = 0;
        g_assert_false(fabric_ring_attach(&r, mem, size, producer));
        c->magic = FABRIC_RING_MAGIC;
        g_assert_true(fabric_ring_attach(&r, mem, size, producer));
    }

    /* Sizes that are not a power of 2 or out of range, even if agreed */
    static const uint32_t bad[] = {
        0, 1, FABRIC_RING_MIN / 2, FABRIC_RING_MIN + 4, 3 * FABRIC_RING_MIN,
        FABRIC_RING_MAX * 2, FABRIC_RING_MAX + FABRIC_RING_MIN, 0x80000000U,
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        fabric_ring_format(mem, bad[i]);
        g_assert_false(fabric_ring_attach(&r, mem, bad[i], true));
        g_assert_false(fabric_ring_attach(&r, mem, bad[i], false));
    }

    /* Each side takes its own index, whatever it was */
    fabric_ring_format(mem, size);
    c->tail = 3 * size + 5;
    c->head = 2 * size + 7;
    g_assert_true(fabric_ring_attach(&r, mem, size, true));
    g_assert_cmpuint(r.pos, ==, 3 * size + 5);
    g_assert_cmpuint(fabric_ring_room(&r), ==, size - (size - 2));
    g_assert_true(fabric_ring_attach(&r, mem, size, false));
    g_assert_cmpuint(r.pos, ==, 2 * size + 7);
    g_assert_cmpuint(fabric_ring_avail(&r), ==, size - 2);
    g_assert_false(r.broken);
}

/*
 * "The doorbell", in one process: the producer rings once while the
 * consumer sleeps and has not heard; never while it polls.  A producer
 * out of room sets 'tx_waiting', and the read that makes room says to
 * ring back, once.
 */
static void test_doorbell_flags(void)
{
    static uint8_t mem[FABRIC_RING_CTL_SIZE + FABRIC_RING_MIN]
        __attribute__((aligned(64)));
    static uint8_t buf[2 * FABRIC_RING_MIN];
    const uint32_t size = FABRIC_RING_MIN;
    struct iovec iov = { buf, 100 };
    FabricRing p, c;
    bool back;

    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&p, mem, size, true));
    g_assert_true(fabric_ring_attach(&c, mem, size, false));

    /* Asleep: one bell until the consumer has heard it */
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 100);
    g_assert_true(fabric_ring_need_bell(&p));
    g_assert_cmpuint(p.ctl->belled, ==, 1);
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 100);
    g_assert_false(fabric_ring_need_bell(&p));
    fabric_ring_bell_heard(&c);
    g_assert_cmpuint(p.ctl->belled, ==, 0);
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 100);
    g_assert_true(fabric_ring_need_bell(&p));
    fabric_ring_bell_heard(&c);

    /* Polling: no bell at all, and 'belled' left alone */
    fabric_ring_set_sleeping(&c, false);
    g_assert_cmpuint(c.ctl->sleeping, ==, 0);
    for (int i = 0; i < 10; i++) {
        g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 100);
        g_assert_false(fabric_ring_need_bell(&p));
    }
    g_assert_cmpuint(p.ctl->belled, ==, 0);
    fabric_ring_set_sleeping(&c, true);
    g_assert_cmpuint(c.ctl->sleeping, ==, 1);
    g_assert_true(fabric_ring_need_bell(&p));

    /* Reading does not ring back a producer that does not wait */
    g_assert_cmpuint(fabric_ring_read(&c, buf, sizeof(buf), &back), ==, 1300);
    g_assert_false(back);

    /* Room left: wait_room says write again */
    g_assert_true(fabric_ring_wait_room(&p));

    /* Full: the producer waits, the read that makes room rings back once */
    iov.iov_len = sizeof(buf);
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, size);
    g_assert_cmpuint(fabric_ring_write(&p, &iov, 1), ==, 0);
    g_assert_false(fabric_ring_wait_room(&p));
    g_assert_cmpuint(p.ctl->tx_waiting, ==, 1);
    g_assert_cmpuint(fabric_ring_read(&c, buf, 0, &back), ==, 0);
    g_assert_false(back);
    g_assert_cmpuint(fabric_ring_read(&c, buf, 1, &back), ==, 1);
    g_assert_true(back);
    g_assert_cmpuint(p.ctl->tx_waiting, ==, 0);
    g_assert_cmpuint(fabric_ring_read(&c, buf, 1, &back), ==, 1);
    g_assert_false(back);
    g_assert_true(fabric_ring_wait_room(&p));
    g_assert_false(p.broken);
    g_assert_false(c.broken);
}

/*
 * Credit (version 3): what the consumer gives back the producer takes
 * once, per network, across the 32-bit wrap; a producer that waits (as
 * a new ring's producer is taken to) is woken by the next give-back of
 * that network only; a count claiming more than the
 * producer can have used breaks the ring and gives nothing.
 */
static void test_credit(void)
{
    static uint8_t mem[FABRIC_RING_CTL_SIZE + FABRIC_RING_MIN]
        __attribute__((aligned(64)));
    const uint32_t size = FABRIC_RING_MIN;
    uint32_t given = 0xfffffffeU, seen = 0xfffffffeU, given1 = 0, seen1 = 0;
    FabricRing p, c;

    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&p, mem, size, true));
    g_assert_true(fabric_ring_attach(&c, mem, size, false));
    c.ctl->credit_back[0] = given;

    /* A new ring: the first give-back of each network wakes, once */
    g_assert_cmpuint(c.ctl->credit_waiting, ==, 3);
    g_assert_true(fabric_ring_credit_back(&c, 0, &given, 3));
    g_assert_true(fabric_ring_credit_back(&c, 1, &given1, 1));
    g_assert_cmpuint(c.ctl->credit_waiting, ==, 0);
    g_assert_false(fabric_ring_credit_back(&c, 1, &given1, 0));
    g_assert_cmpuint(fabric_ring_credit_take(&p, 0, &seen, 32), ==, 3);
    g_assert_cmpuint(fabric_ring_credit_take(&p, 0, &seen, 32), ==, 0);
    g_assert_cmpuint(fabric_ring_credit_take(&p, 1, &seen1, 32), ==, 1);

    /* Waiting on both: network 1's give-back wakes for 1 only */
    fabric_ring_credit_wait(&p, 0);
    fabric_ring_credit_wait(&p, 1);
    g_assert_cmpuint(p.ctl->credit_waiting, ==, 3);
    g_assert_true(fabric_ring_credit_back(&c, 1, &given1, 1));
    g_assert_cmpuint(p.ctl->credit_waiting, ==, 1);
    g_assert_false(fabric_ring_credit_back(&c, 1, &given1, 1));
    g_assert_cmpuint(fabric_ring_credit_take(&p, 1, &seen1, 32), ==, 2);
    g_assert_true(fabric_ring_credit_back(&c, 0, &given, 2));
    g_assert_cmpuint(p.ctl->credit_waiting, ==, 0);
    g_assert_false(fabric_ring_credit_back(&c, 0, &given, 2));
    g_assert_cmpuint(fabric_ring_credit_take(&p, 0, &seen, 32), ==, 4);
    g_assert_false(p.broken);

    /* 5 back when at most 4 can have been used */
    g_assert_false(fabric_ring_credit_back(&c, 0, &given, 5));
    g_assert_cmpuint(fabric_ring_credit_take(&p, 0, &seen, 4), ==, 0);
    g_assert_true(p.broken);
    g_assert_cmpuint(fabric_ring_credit_take(&p, 1, &seen1, 32), ==, 0);
}

/*
 * "The rings", in one process: frames of every size from 1 byte to more
 * than the ring go in whole or in part (as much as there is room for),
 * land at tail mod size with the wrap-around, and come out exactly once
 * and in order through reads of many sizes; room and avail always add up
 * to the size and follow the indices.
 */
static void test_stream(void)
{
    const uint32_t size = FABRIC_RING_MIN;
    const uint64_t seed = 0x5eed0001;
    static const size_t lens[] = {
        1, 2, 3, 5, 8, 63, 64, 65, 255, 256, 1000, FABRIC_RING_MIN - 1,
        FABRIC_RING_MIN, FABRIC_RING_MIN + 1, 2 * FABRIC_RING_MIN + 3,
        3 * FABRIC_RING_MIN / 2, 7, 4000, 97, 1,
    };
    static const size_t maxes[] = {
        1, 7, 100, FABRIC_RING_MIN / 2 + 1, FABRIC_RING_MIN,
        2 * FABRIC_RING_MIN, 3, 4095, 513,
    };
    g_autofree uint8_t *frame = g_malloc(3 * size);
    g_autofree uint8_t *want = g_malloc(3 * size);
    g_autofree uint8_t *buf = g_malloc(3 * size);
    uint64_t wr = 0, rd = 0, rng = 12345;
    unsigned partial = 0, wrapped_in = 0, wrapped_out = 0, reads = 0;
    struct iovec iov[3];
    FabricRing p, c;
    Guarded g;
    bool back;

    guarded_map(&g, size);
    fabric_ring_format(g.mem, size);
    g_assert_true(fabric_ring_attach(&p, g.mem, size, true));
    g_assert_true(fabric_ring_attach(&c, g.mem, size, false));

    for (unsigned round = 0; round < 3000; round++) {
        size_t len = lens[round % G_N_ELEMENTS(lens)], off = 0;

        stream_fill(seed, wr, frame, len);
        while (off < len) {
            size_t room = fabric_ring_room(&p), n, max;
            int cnt;

            g_assert_cmpuint(room, ==, size - (wr - rd));
            g_assert_cmpuint(fabric_ring_avail(&c), ==, wr - rd);
            cnt = split_iov(&rng, frame + off, len - off, iov);
            n = fabric_ring_write(&p, iov, cnt);
            g_assert_cmpuint(n, ==, MIN(len - off, room));
            g_assert_cmpuint(p.ctl->tail, ==, wr + n);
            g_assert_cmpuint(p.pos, ==, wr + n);
            /* Each byte lands at its index mod size */
            for (size_t i = 0; i < n; i++) {
                g_assert_cmphex(p.data[(wr + i) & (size - 1)], ==,
                                frame[off + i]);
            }
            if ((wr & (size - 1)) + n > size) {
                wrapped_in++;
            }
            wr += n;
            off += n;
            if (off < len) {
                /* Full: a partial count now, nothing more until a read */
                partial++;
                g_assert_cmpuint(fabric_ring_room(&p), ==, 0);
                g_assert_cmpuint(fabric_ring_write(&p, iov, 1), ==, 0);
                g_assert_cmpuint(p.ctl->tail, ==, wr);
            }

            /* Read some, with a max of its own */
            max = maxes[reads++ % G_N_ELEMENTS(maxes)];
            if (round % 7 == 3) {
                max = 1 + rng_below(&rng, 2 * size);
            }
            do {
                memset(buf, 0xa5, 3 * size);
                n = fabric_ring_read(&c, buf, max, &back);
                g_assert_false(back);
                g_assert_cmpuint(n, ==, MIN(max, wr - rd));
                g_assert_cmphex(buf[n], ==, 0xa5);
                stream_fill(seed, rd, want, n);
                g_assert_true(memcmp(buf, want, n) == 0);
                if ((rd & (size - 1)) + n > size) {
                    wrapped_out++;
                }
                rd += n;
                g_assert_cmpuint(c.ctl->head, ==, rd);
                g_assert_cmpuint(c.pos, ==, rd);
                g_assert_cmpuint(fabric_ring_room(&p) + fabric_ring_avail(&c),
                                 ==, size);
            } while (n && round % 5 == 0);
        }
    }
    /* Drain: everything came out once, then nothing */
    while (rd < wr) {
        size_t n = fabric_ring_read(&c, buf, 777, &back);

        g_assert_cmpuint(n, ==, MIN(777, wr - rd));
        stream_fill(seed, rd, want, n);
        g_assert_true(memcmp(buf, want, n) == 0);
        rd += n;
    }
    g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, 0);
    g_assert_cmpuint(fabric_ring_room(&p), ==, size);
    g_assert_cmpuint(fabric_ring_avail(&c), ==, 0);
    g_assert_false(p.broken);
    g_assert_false(c.broken);

    /* The run did what it is for */
    g_assert_cmpuint(wr, >, 100 * (uint64_t)size);
    g_assert_cmpuint(partial, >, 100);
    g_assert_cmpuint(wrapped_in, >, 50);
    g_assert_cmpuint(wrapped_out, >, 50);
    guarded_unmap(&g);
}

/*
 * Two processes: a producer child and a consumer parent on a MAP_SHARED
 * ring, waiting on pipes through the doorbell protocol.
 */
typedef struct ProducerStats {
    uint64_t writes;            /* fabric_ring_write calls */
    uint64_t bells;             /* bytes written to the bell pipe */
    uint64_t wait_calls;        /* fabric_ring_wait_room calls */
    uint64_t blocks;            /* bytes read from the room pipe */
    int error;                  /* where the producer gave up, or 0 */
} ProducerStats;

/* The producer, for ring_timeout(): volatile, read in a signal handler */
static volatile pid_t ring_child;

static void ring_timeout(int sig)
{
    static const char msg[] =
        "# the two-process stream stalled: a lost wake-up\n";

    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to say */
    }
    if (ring_child > 0) {
        kill(ring_child, SIGKILL);
    }
    abort();
}

static int pipe_wait(int fd)
{
    uint8_t b;
    ssize_t n;

    do {
        n = read(fd, &b, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : -1;
}

static int pipe_ring(int fd)
{
    uint8_t b = 1;
    ssize_t n;

    do {
        n = write(fd, &b, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : -1;
}

/* What is left in a pipe whose writers are all gone. */
static uint64_t pipe_drain(int fd)
{
    uint8_t b[256];
    uint64_t total = 0;
    ssize_t n;

    while ((n = read(fd, b, sizeof(b))) > 0) {
        total += n;
    }
    g_assert_cmpint(n, ==, 0);
    return total;
}

/*
 * The child: writes total bytes of the stream in random frames split in
 * random iovecs; rings the bell when fabric_ring_need_bell() says so and,
 * out of room, asks for a ring back and blocks on room_fd.
 */
static int produce(void *mem, uint32_t size, uint64_t total, uint64_t seed,
                   int bell_fd, int room_fd, ProducerStats *st)
{
    uint8_t *frame = g_malloc(3 * (size_t)size);
    uint64_t rng = seed ^ 0x70726f64ULL, sent = 0;
    struct iovec iov[3];
    FabricRing r;

    if (!fabric_ring_attach(&r, mem, size, true)) {
        return 1;
    }
    while (sent < total) {
        size_t len = rng_phase_len(&rng, size, sent, true), off = 0;

        len = MIN(len, total - sent);
        stream_fill(seed, sent, frame, len);
        while (off < len) {
            int cnt = split_iov(&rng, frame + off, len - off, iov);
            size_t n = fabric_ring_write(&r, iov, cnt);

            st->writes++;
            if (r.broken) {
                return 2;
            }
            if (n > len - off) {
                return 3;
            }
            if (n) {
                off += n;
                if (fabric_ring_need_bell(&r)) {
                    st->bells++;
                    if (pipe_ring(bell_fd)) {
                        return 4;
                    }
                }
                continue;
            }
            st->wait_calls++;
            if (fabric_ring_wait_room(&r)) {
                continue;
            }
            st->blocks++;
            if (pipe_wait(room_fd)) {
                return 5;
            }
        }
        sent += len;
    }
    g_free(frame);
    return 0;
}

/*
 * 'poll': the consumer never sleeps ('sleeping' cleared before the
 * producer starts) and spins when the ring is empty.  Otherwise it parks
 * when it finds the ring empty (mostly at once, sometimes after up to 63
 * more looks): sets 'sleeping', looks once more, blocks on the bell pipe,
 * and when woken hears the bell before draining; awake, it polls.
 */
static void two_process(uint32_t size, uint64_t total, bool poll)
{
    size_t bytes = fabric_ring_bytes(size);
    uint64_t seed = ((uint64_t)(uint32_t)g_test_rand_int() << 32 |
                     (uint32_t)g_test_rand_int()) ^ size;
    uint64_t rng = seed | 1, got = 0, ring_backs = 0, parks = 0, wakes = 0;
    uint64_t left_bells, left_room;
    g_autofree uint8_t *buf = g_malloc(3 * (size_t)size);
    g_autofree uint8_t *want = g_malloc(3 * (size_t)size);
    struct sigaction sa = { .sa_handler = ring_timeout };
    unsigned spins = 0, spin_limit = 0;
    int bell[2], room[2], status;
    ProducerStats *st;
    FabricRing r;
    void *mem;
    pid_t pid;

    g_test_message("seed 0x%016" G_GINT64_MODIFIER "x, ring %u bytes, "
                   "%" G_GUINT64_FORMAT " bytes", seed, size, total);
    mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert_true(mem != MAP_FAILED && st != MAP_FAILED);
    memset(st, 0, sizeof(*st));
    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&r, mem, size, false));
    if (poll) {
        fabric_ring_set_sleeping(&r, false);
    }
    g_assert_cmpint(pipe(bell), ==, 0);
    g_assert_cmpint(pipe(room), ==, 0);

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        close(bell[0]);
        close(room[1]);
        alarm(RING_ALARM_SECONDS + 5);
        st->error = produce(mem, size, total, seed, bell[1], room[0], st);
        _exit(st->error);
    }
    ring_child = pid;
    close(bell[1]);
    g_assert_cmpint(sigaction(SIGALRM, &sa, NULL), ==, 0);
    alarm(RING_ALARM_SECONDS);

    while (got < total) {
        size_t max = rng_phase_len(&rng, size, got, false), n;
        bool back;

        n = fabric_ring_read(&r, buf, max, &back);
        g_assert_false(r.broken);
        if (back) {
            ring_backs++;
            g_assert_cmpint(pipe_ring(room[1]), ==, 0);
        }
        if (n) {
            g_assert_cmpuint(n, <=, max);
            g_assert_cmpuint(n, <=, total - got);
            stream_fill(seed, got, want, n);
            if (memcmp(buf, want, n)) {
                for (size_t i = 0; i < n; i++) {
                    if (buf[i] != want[i]) {
                        g_test_message("byte %" G_GUINT64_FORMAT,
                                       got + i);
                        g_assert_cmphex(buf[i], ==, want[i]);
                    }
                }
            }
            got += n;
            spins = 0;
            continue;
        }
        if (poll || spins++ < spin_limit) {
            if (poll) {
                sched_yield();
            }
            continue;
        }
        /* Park: set 'sleeping', then look once more before blocking */
        parks++;
        spins = 0;
        spin_limit = rng_below(&rng, 4) ? 0 : rng_below(&rng, 64);
        fabric_ring_set_sleeping(&r, true);
        if (!fabric_ring_avail(&r)) {
            g_assert_false(r.broken);
            if (pipe_wait(bell[0])) {
                waitpid(pid, &status, 0);
                g_error("the producer died (status 0x%x, error %d)",
                        status, st->error);
            }
            wakes++;
            fabric_ring_bell_heard(&r);
        }
        fabric_ring_set_sleeping(&r, false);
    }

    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    alarm(0);
    ring_child = 0;
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_assert_cmpint(st->error, ==, 0);
    g_assert_cmpuint(fabric_ring_avail(&r), ==, 0);
    g_assert_false(r.broken);

    close(room[1]);
    left_bells = pipe_drain(bell[0]);
    left_room = pipe_drain(room[0]);
    close(bell[0]);
    close(room[0]);
    g_test_message("%" G_GUINT64_FORMAT " writes, %" G_GUINT64_FORMAT
                   " bells, %" G_GUINT64_FORMAT " parks, %" G_GUINT64_FORMAT
                   " wakes, %" G_GUINT64_FORMAT " waits for room, %"
                   G_GUINT64_FORMAT " blocked, %" G_GUINT64_FORMAT
                   " rung back", st->writes, st->bells, parks, wakes,
                   st->wait_calls, st->blocks, ring_backs);

    /* Every bell and ring back is one byte, each heard or still there */
    g_assert_cmpuint(st->bells, ==, wakes + left_bells);
    g_assert_cmpuint(ring_backs, ==, st->blocks + left_room);
    /* A bell only after the last was heard; a ring back per wait at most */
    g_assert_cmpuint(st->bells, <=, wakes + 1);
    g_assert_cmpuint(wakes, <=, parks);
    g_assert_cmpuint(ring_backs, <=, st->wait_calls);
    g_assert_cmpuint(st->writes, >=, total / (3 * size));
    if (poll) {
        /* Nobody rings a consumer that polls, however many the writes */
        g_assert_cmpuint(parks, ==, 0);
        g_assert_cmpuint(st->bells, ==, 0);
    } else {
        /* The phases did make each side find the ring empty or full */
        g_assert_cmpuint(parks, >, 0);
        g_assert_cmpuint(st->wait_calls, >, 0);
    }
    munmap(st, sizeof(*st));
    munmap(mem, bytes);
}

/*
 * "The doorbell" between two processes: 64 MiB
 * come through whole and in order, the consumer parking whenever it finds
 * the ring empty, and nobody waits forever.
 */
static void test_two_process_park(void)
{
    two_process(FABRIC_RING_MIN, 64 << 20, false);
}

/* "The doorbell": a reader that polls is never rung, however many writes. */
static void test_two_process_poll(void)
{
    two_process(4 * FABRIC_RING_MIN, 64 << 20, true);
}

/*
 * "The doorbell": one of the two always sees the other (the header's
 * Dekker claim), as a litmus test between two processes: a flag written,
 * a full barrier, the other side's state read.  Each iteration both sides
 * start together after a random short delay and do one racing step:
 *   0  consumer fabric_ring_set_sleeping(true) then avail, against
 *      producer write then fabric_ring_need_bell();
 *   1  consumer fabric_ring_bell_heard() then avail, against the same
 *      (the consumer was asleep and already rung);
 *   2  consumer fabric_ring_read() of a full ring (ring back?), against
 *      producer fabric_ring_wait_room() (room seen?).
 * A wake-up is lost when neither saw the other.  Without the fence the
 * store can pass the load (x86 does that), so a missing fence fails this
 * often but not every run, and only when the two processes run at once.
 */
#define LITMUS_ROUNDS   150000

typedef struct Litmus {
    uint64_t go;                /* the iteration, from the parent */
    uint32_t delay;             /* the child's delay before its step */
    uint8_t pad[52];            /* the child's answer on its own line */
    uint64_t done;              /* the iteration, from the child */
    uint32_t saw;               /* the child saw the other side */
} Litmus;

static void litmus_delay(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* not optimised out */
    }
}

/* Wait for *at to be i; the parent (child > 0) fails if the child died. */
static void litmus_spin_until(uint64_t *at, uint64_t i, pid_t child)
{
    for (unsigned spins = 0; __atomic_load_n(at, __ATOMIC_ACQUIRE) != i;) {
        if (++spins % 4096 == 0) {
            int status;

            sched_yield();      /* one CPU: let the other side run */
            if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
                g_error("the litmus child died at %" G_GUINT64_FORMAT
                        " (status 0x%x)", i, status);
            }
        }
    }
}

/*
 * Take a line of the other side's into our cache, exclusive, without
 * changing it: the other side's next store to it then waits in its store
 * buffer long enough for a load to pass it, if nothing orders the two.
 */
static void litmus_steal(uint32_t *field)
{
    __atomic_fetch_or(field, 0, __ATOMIC_RELAXED);
}

static void litmus_child(void *mem, uint32_t size, Litmus *l)
{
    uint8_t byte = 0x42;
    struct iovec iov = { &byte, 1 };
    FabricRing p;

    for (uint64_t i = 1; i <= LITMUS_ROUNDS; i++) {
        bool saw;

        litmus_spin_until(&l->go, i, 0);
        if (!fabric_ring_attach(&p, mem, size, true)) {
            _exit(1);
        }
        litmus_steal(&p.ctl->sleeping);
        litmus_delay(l->delay);
        if (i % 3 == 2) {
            saw = fabric_ring_wait_room(&p);
        } else {
            if (fabric_ring_write(&p, &iov, 1) != 1) {
                _exit(2);
            }
            saw = fabric_ring_need_bell(&p);
        }
        l->saw = saw;
        __atomic_store_n(&l->done, i, __ATOMIC_RELEASE);
    }
    /* Alive until the parent has seen the last round */
    litmus_spin_until(&l->go, LITMUS_ROUNDS + 1, 0);
    _exit(0);
}

static void test_dekker(void)
{
    const uint32_t size = FABRIC_RING_MIN;
    struct sigaction sa = { .sa_handler = ring_timeout };
    uint64_t lost[3] = { 0 }, both[3] = { 0 };
    uint64_t rng = 0x6c69746d7573ULL;
    uint8_t buf[4];
    int status;
    FabricRing c;
    Litmus *l;
    void *mem;
    pid_t pid;

    mem = mmap(NULL, fabric_ring_bytes(size), PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert_true(mem != MAP_FAILED && l != MAP_FAILED);
    memset(l, 0, sizeof(*l));
    fabric_ring_format(mem, size);
    g_assert_true(fabric_ring_attach(&c, mem, size, false));

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        alarm(RING_ALARM_SECONDS + 5);
        litmus_child(mem, size, l);
    }
    ring_child = pid;
    g_assert_cmpint(sigaction(SIGALRM, &sa, NULL), ==, 0);
    alarm(RING_ALARM_SECONDS);

    for (uint64_t i = 1; i <= LITMUS_ROUNDS; i++) {
        unsigned kind = i % 3;
        bool saw, back;

        /* Set up, the child waiting: the ring empty, or full for kind 2 */
        c.ctl->tx_waiting = 0;
        c.ctl->sleeping = kind == 1;
        c.ctl->belled = kind == 1;
        c.ctl->tail = kind == 2 ? c.pos + size : c.pos;
        l->delay = rng_below(&rng, 64);
        __atomic_store_n(&l->go, i, __ATOMIC_RELEASE);

        litmus_steal(&c.ctl->belled);
        litmus_delay(rng_below(&rng, 1024));
        switch (kind) {
        case 0:
            fabric_ring_set_sleeping(&c, true);
            saw = fabric_ring_avail(&c) != 0;
            break;
        case 1:
            fabric_ring_bell_heard(&c);
            saw = fabric_ring_avail(&c) != 0;
            break;
        default:
            g_assert_cmpuint(fabric_ring_read(&c, buf, 1, &back), ==, 1);
            saw = back;
            break;
        }

        litmus_spin_until(&l->done, i, pid);
        if (!saw && !l->saw) {
            lost[kind]++;
        }
        if (saw && l->saw) {
            both[kind]++;
        }
        /* Take the byte the child wrote */
        if (kind != 2) {
            g_assert_cmpuint(fabric_ring_read(&c, buf, sizeof(buf), &back),
                             ==, 1);
            g_assert_cmphex(buf[0], ==, 0x42);
        }
        g_assert_false(c.broken);
    }

    __atomic_store_n(&l->go, LITMUS_ROUNDS + 1, __ATOMIC_RELEASE);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    alarm(0);
    ring_child = 0;
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_test_message("lost %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%"
                   G_GUINT64_FORMAT ", both saw %" G_GUINT64_FORMAT "/%"
                   G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " (sleeping, "
                   "belled, tx_waiting)", lost[0], lost[1], lost[2],
                   both[0], both[1], both[2]);
    g_assert_cmpuint(lost[0], ==, 0);
    g_assert_cmpuint(lost[1], ==, 0);
    g_assert_cmpuint(lost[2], ==, 0);
    munmap(l, sizeof(*l));
    munmap(mem, fabric_ring_bytes(size));
}

/* A ring set up at pos (both indices) in guarded memory. */
static void untrusted_ring(Guarded *g, uint32_t size, uint64_t pos,
                           FabricRing *p, FabricRing *c)
{
    FabricRingCtl *ctl;

    guarded_map(g, size);
    fabric_ring_format(g->mem, size);
    ctl = (FabricRingCtl *)g->mem;
    ctl->tail = pos;
    ctl->head = pos;
    memset(g->mem + FABRIC_RING_CTL_SIZE, 0x3c, size);
    g_assert_true(fabric_ring_attach(p, g->mem, size, true));
    g_assert_true(fabric_ring_attach(c, g->mem, size, false));
}

/*
 * "The rings", an untrusted writer: "a count that goes back or claims
 * more than the ring holds breaks the link ..., never an access outside
 * the ring".  A tail more than size ahead of the consumer or behind it
 * breaks the ring for good: it reads nothing, gives no room back, and
 * never rings back.  A full ring (tail exactly size ahead) is fine and
 * reads only data[0..size).
 */
static void test_untrusted_tail(void)
{
    const uint32_t size = FABRIC_RING_MIN;
    const uint64_t pos = 5 * (uint64_t)size + 1000;
    const uint64_t bad[] = {
        pos + size + 1, pos + 2 * size, pos + (1ULL << 32) + 1, UINT64_MAX,
        pos - 1, pos - size, 0,
    };
    g_autofree uint8_t *buf = g_malloc(3 * size);
    FabricRingCtl before;
    FabricRing p, c;
    Guarded g;
    bool back;

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        untrusted_ring(&g, size, pos, &p, &c);
        c.ctl->tx_waiting = 1;
        c.ctl->tail = bad[i];
        memcpy(&before, c.ctl, sizeof(before));
        memset(buf, 0x77, 3 * size);
        g_assert_cmpuint(fabric_ring_avail(&c), ==, 0);
        g_assert_true(c.broken);
        g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, 0);
        g_assert_false(back);
        for (size_t j = 0; j < 3 * size; j++) {
            g_assert_cmphex(buf[j], ==, 0x77);
        }
        g_assert_true(memcmp(&before, c.ctl, sizeof(before)) == 0);
        g_assert_cmpuint(c.pos, ==, pos);

        /* Broken for good, even when the tail looks right again */
        c.ctl->tail = pos + 10;
        g_assert_cmpuint(fabric_ring_avail(&c), ==, 0);
        g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, 0);
        g_assert_cmpuint(c.ctl->head, ==, pos);
        guarded_unmap(&g);

        /* The same check when the read is the first look */
        untrusted_ring(&g, size, pos, &p, &c);
        c.ctl->tail = bad[i];
        g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, 0);
        g_assert_true(c.broken);
        g_assert_cmpuint(c.ctl->head, ==, pos);
        guarded_unmap(&g);
    }

    /* Full (tail exactly size ahead): all of data, once, in order */
    untrusted_ring(&g, size, pos, &p, &c);
    for (uint32_t i = 0; i < size; i++) {
        c.data[(pos + i) & (size - 1)] = i * 7 + (i >> 8);
    }
    c.ctl->tail = pos + size;
    g_assert_cmpuint(fabric_ring_avail(&c), ==, size);
    g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, size);
    g_assert_false(c.broken);
    for (uint32_t i = 0; i < size; i++) {
        g_assert_cmphex(buf[i], ==, (uint8_t)(i * 7 + (i >> 8)));
    }
    g_assert_cmpuint(c.ctl->head, ==, pos + size);
    g_assert_cmpuint(fabric_ring_read(&c, buf, 3 * size, &back), ==, 0);
    g_assert_false(c.broken);
    guarded_unmap(&g);
}

/*
 * "The rings", an untrusted reader (the same rule for the head): a head
 * beyond the producer's tail or more than size behind it breaks the ring
 * for good; nothing is written into data or published.  A head exactly
 * size behind is a full ring, and a head level with the tail lets exactly
 * size bytes into data[0..size).
 */
static void test_untrusted_head(void)
{
    const uint32_t size = FABRIC_RING_MIN;
    const uint64_t pos = 5 * (uint64_t)size + 1000;
    const uint64_t bad[] = {
        pos + 1, pos + size, UINT64_MAX, pos - size - 1, pos - 2 * size, 0,
    };
    g_autofree uint8_t *src = g_malloc(3 * size);
    g_autofree uint8_t *data = g_malloc(size);
    struct iovec iov[2] = { { src, size }, { src + size, 2 * size } };
    FabricRingCtl before;
    FabricRing p, c;
    Guarded g;

    memset(src, 0x99, 3 * size);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        untrusted_ring(&g, size, pos, &p, &c);
        p.ctl->head = bad[i];
        p.ctl->sleeping = 1;
        memcpy(&before, p.ctl, sizeof(before));
        memcpy(data, p.data, size);
        g_assert_cmpuint(fabric_ring_room(&p), ==, 0);
        g_assert_true(p.broken);
        g_assert_cmpuint(fabric_ring_write(&p, iov, 2), ==, 0);
        g_assert_true(memcmp(data, p.data, size) == 0);
        g_assert_true(memcmp(&before, p.ctl, sizeof(before)) == 0);
        g_assert_cmpuint(p.pos, ==, pos);
        /* No room will come: waiting would be forever */
        g_assert_false(fabric_ring_wait_room(&p));

        /* Broken for good */
        p.ctl->head = pos;
        g_assert_cmpuint(fabric_ring_room(&p), ==, 0);
        g_assert_cmpuint(fabric_ring_write(&p, iov, 2), ==, 0);
        g_assert_cmpuint(p.ctl->tail, ==, pos);
        guarded_unmap(&g);

        /* The same check when the write is the first look */
        untrusted_ring(&g, size, pos, &p, &c);
        p.ctl->head = bad[i];
        memcpy(data, p.data, size);
        g_assert_cmpuint(fabric_ring_write(&p, iov, 2), ==, 0);
        g_assert_true(p.broken);
        g_assert_true(memcmp(data, p.data, size) == 0);
        g_assert_cmpuint(p.ctl->tail, ==, pos);
        guarded_unmap(&g);
    }

    /* A full ring: no room, not broken */
    untrusted_ring(&g, size, pos, &p, &c);
    p.ctl->head = pos - size;
    g_assert_cmpuint(fabric_ring_room(&p), ==, 0);
    g_assert_cmpuint(fabric_ring_write(&p, iov, 2), ==, 0);
    g_assert_false(p.broken);

    /* An empty one: exactly size bytes go in, all inside data */
    p.ctl->head = pos;
    for (uint32_t i = 0; i < 3 * size; i++) {
        src[i] = i * 13 + (i >> 9);
    }
    g_assert_cmpuint(fabric_ring_write(&p, iov, 2), ==, size);
    g_assert_false(p.broken);
    g_assert_cmpuint(p.ctl->tail, ==, pos + size);
    for (uint32_t i = 0; i < size; i++) {
        g_assert_cmphex(p.data[(pos + i) & (size - 1)], ==, src[i]);
    }
    g_assert_cmphex(p.ctl->magic, ==, FABRIC_RING_MAGIC);
    g_assert_cmpuint(p.ctl->size, ==, size);
    guarded_unmap(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fabric-ring/layout", test_layout);
    g_test_add_func("/fabric-ring/size-ok", test_size_ok);
    g_test_add_func("/fabric-ring/room-cached", test_room_cached);
    g_test_add_func("/fabric-ring/attach", test_attach);
    g_test_add_func("/fabric-ring/doorbell-flags", test_doorbell_flags);
    g_test_add_func("/fabric-ring/credit", test_credit);
    g_test_add_func("/fabric-ring/stream", test_stream);
    g_test_add_func("/fabric-ring/two-process/park", test_two_process_park);
    g_test_add_func("/fabric-ring/two-process/poll", test_two_process_poll);
    g_test_add_func("/fabric-ring/two-process/dekker", test_dekker);
    g_test_add_func("/fabric-ring/untrusted/tail", test_untrusted_tail);
    g_test_add_func("/fabric-ring/untrusted/head", test_untrusted_head);
    return g_test_run();
}
