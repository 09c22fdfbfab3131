/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GAM bulk data (docs/am.rst, "Bulk data"): every node moves blocks of 1
 * byte to 1 MiB at odd alignments to and from the next node ((self + 1)
 * % N, itself on one node) with am_store, am_store_async and am_get.
 *  - am_store: the store handler at the destination checks its source,
 *    address, length and argument and every byte of the block, and the
 *    bytes on either side are untouched;
 *  - am_store_async: the end function here runs once per store with
 *    this node's address, length and argument, before the destination's
 *    handler has been told; then the handler checks as above;
 *  - am_get: the get handler here checks node, address, length and
 *    argument and every byte read from the next node's pattern;
 *  - 0-byte blocks run their handlers too;
 *  - MANY asynchronous stores and MANY gets of CHUNK bytes at once (more
 *    than the library's 256 records and the node controller's 64
 *    transfers), every handler run once, every chunk checked.
 * Prints "gam_bulk ok: N stores, N gets, B bytes".
 */
#include <stdint.h>
#include <string.h>

#include "gam-util.h"

#define MAXB        (1 << 20)
#define PAD         64
#define GUARD       0xEE

static uint8_t src_buf[MAXB + PAD];     /* what this node stores */
static uint8_t pattern[MAXB + PAD];     /* what others get from here */
static uint8_t dst_buf[MAXB + 2 * PAD]; /* where others store here */
static uint8_t get_buf[MAXB + 2 * PAD]; /* where gets land here */

static const int sizes[] = { 0, 1, 3, 7, 64, 65, 4099, 65536 + 5, MAXB };
#define NSIZES      ((int)(sizeof(sizes) / sizeof(sizes[0])))

static int self, nodes, peer, from;
static volatile int stores_in, ends, gets_done; /* volatile: set by handlers */
static int expect_size, expect_off;
static uint64_t bytes;

static uint8_t byte_of(int node, int size, int i)
{
    return (uint8_t)(node * 37 + size * 13 + i * 7 + (i >> 8));
}

static void check_block(const uint8_t *buf, int node, int size, int off,
                        const char *what)
{
    for (int i = 0; i < PAD; i++) {
        gam_check(buf[i] == GUARD, "%s of %d bytes: guard before changed",
                  what, size);
    }
    for (int i = 0; i < size; i++) {
        if (buf[PAD + i] != byte_of(node, size, i + off)) {
            gam_fail("%s of %d bytes: byte %d is 0x%02x, expected 0x%02x",
                     what, size, i, buf[PAD + i],
                     byte_of(node, size, i + off));
        }
    }
    for (int i = 0; i < PAD; i++) {
        gam_check(buf[PAD + size + i] == GUARD, "%s of %d bytes: guard "
                  "after changed", what, size);
    }
}

/* A store handler (a request handler): the block is in dst_buf. */
static void stored(vnn_t src, void *addr, int nbytes, void *arg)
{
    gam_check(src == from, "store from node %d, expected %d", src, from);
    gam_check(addr == dst_buf + PAD, "store at %p, expected %p", addr,
              (void *)(dst_buf + PAD));
    gam_check(nbytes == expect_size, "store of %d bytes, expected %d",
              nbytes, expect_size);
    gam_check((uintptr_t)arg == 0xA000u + (unsigned)nbytes % 4096,
              "store handler arg %p", arg);
    check_block(dst_buf, src, nbytes, expect_off, "store");
    stores_in++;
}

static void store_end(vnn_t dest, void *lva, int nbytes, void *arg)
{
    gam_check(dest == peer, "end function for node %d", dest);
    gam_check(lva == src_buf + expect_off, "end function for %p", lva);
    gam_check(nbytes == expect_size, "end function for %d bytes", nbytes);
    gam_check(arg == &ends, "end function arg %p", arg);
    ends++;
}

static void got(vnn_t dest, void *lva, int nbytes, void *arg)
{
    gam_check(dest == peer, "get handler: node %d, expected %d", dest, peer);
    gam_check(lva == get_buf + PAD, "get handler: %p", lva);
    gam_check(nbytes == expect_size, "get handler: %d bytes", nbytes);
    gam_check(arg == (void *)get_buf, "get handler arg %p", arg);
    check_block(get_buf, peer, nbytes, expect_off, "get");
    gets_done++;
}

#define MANY        300
#define CHUNK       3000

static volatile int many_in, many_ends, many_got; /* volatile: handlers */
static uint8_t many_seen[MANY];

static void many_stored(vnn_t src, void *addr, int nbytes, void *arg)
{
    int k = (int)(uintptr_t)arg;

    gam_check(src == from && k >= 0 && k < MANY && nbytes == CHUNK &&
              addr == dst_buf + PAD + (size_t)k * CHUNK,
              "many: store handler (%d, %p, %d, %d)", src, addr, nbytes, k);
    gam_check(!(many_seen[k] & 1), "many: store %d handled twice", k);
    many_seen[k] |= 1;
    many_in++;
}

static void many_end(vnn_t dest, void *lva, int nbytes, void *arg)
{
    (void)dest;
    (void)lva;
    (void)nbytes;
    (void)arg;
    many_ends++;
}

static void many_get(vnn_t dest, void *lva, int nbytes, void *arg)
{
    int k = (int)(uintptr_t)arg;

    gam_check(dest == peer && k >= 0 && k < MANY && nbytes == CHUNK &&
              lva == get_buf + PAD + (size_t)k * CHUNK,
              "many: get handler (%d, %p, %d, %d)", dest, lva, nbytes, k);
    gam_check(!(many_seen[k] & 2), "many: get %d handled twice", k);
    many_seen[k] |= 2;
    many_got++;
}

/* The MANY chunks in @buf, each CHUNK bytes of @node's pattern. */
static void check_many(const uint8_t *buf, int node, const char *what)
{
    for (int i = 0; i < PAD; i++) {
        gam_check(buf[i] == GUARD && buf[PAD + MANY * CHUNK + i] == GUARD,
                  "many: %s: a guard changed", what);
    }
    for (int i = 0; i < MANY * CHUNK; i++) {
        gam_check(buf[PAD + i] == byte_of(node, CHUNK, i),
                  "many: %s: byte %d is 0x%02x", what, i, buf[PAD + i]);
    }
}

/* A barrier made of requests: each node counts round r's arrivals. */
/* volatile: set by handlers */
static volatile int barrier_in[2 * 3 * NSIZES + 2];

static void barrier_h(vnn_t src, int r)
{
    (void)src;
    barrier_in[r]++;
}

static void barrier(int *round)
{
    for (int n = 0; n < nodes; n++) {
        gam_check(am_request_1(n, barrier_h, *round) == 0, "barrier");
    }
    gam_wait_for(&barrier_in[*round], nodes);
    ++*round;
}

int main(void)
{
    int round = 0, stores = 0, gets = 0;

    self = am_my_proc();
    nodes = am_procs();
    peer = (self + 1) % nodes;
    from = (self + nodes - 1) % nodes;
    gam_check(am_enable() == 0, "am_enable failed");

    for (int k = 0; k < NSIZES; k++) {
        int size = sizes[k];

        for (int mode = 0; mode < 3; mode++) {
            int off = (k * 5 + mode) % 8;

            /* Every node is between rounds: set the next one up. */
            expect_size = size;
            expect_off = off;
            for (int i = 0; i < size + PAD && off + i < MAXB + PAD; i++) {
                src_buf[off + i] = byte_of(self, size, off + i);
                pattern[off + i] = byte_of(self, size, off + i);
            }
            memset(dst_buf, GUARD, sizeof(dst_buf));
            memset(get_buf, GUARD, sizeof(get_buf));
            barrier(&round);
            if (mode == 0) {
                gam_check(am_store(peer, src_buf + off, dst_buf + PAD, size,
                                   stored,
                                   (void *)(uintptr_t)(0xA000u + size % 4096))
                          == 0, "am_store of %d bytes: %s", size,
                          am_error_name(am_errno));
                stores++;
            } else if (mode == 1) {
                int e = ends;

                gam_check(am_store_async(peer, src_buf + off, dst_buf + PAD,
                                         size, stored,
                                         (void *)(uintptr_t)(0xA000u +
                                                             size % 4096),
                                         store_end, (void *)&ends) == 0,
                          "am_store_async of %d bytes: %s", size,
                          am_error_name(am_errno));
                stores++;
                gam_wait_for(&ends, e + 1);
            } else {
                gam_check(am_get(peer, pattern + off, get_buf + PAD, size,
                                 got, get_buf) == 0, "am_get of %d bytes: %s",
                          size, am_error_name(am_errno));
                gets++;
                gam_wait_for(&gets_done, gets);
            }
            gam_wait_for(&stores_in, stores);
            bytes += (uint64_t)size;
            barrier(&round);
        }
    }

    /* MANY stores and MANY gets in flight at once. */
    for (int i = 0; i < MANY * CHUNK; i++) {
        src_buf[i] = byte_of(self, CHUNK, i);
        pattern[i] = byte_of(self, CHUNK, i);
    }
    memset(dst_buf, GUARD, sizeof(dst_buf));
    memset(get_buf, GUARD, sizeof(get_buf));
    barrier(&round);
    for (int k = 0; k < MANY; k++) {
        gam_check(am_store_async(peer, src_buf + (size_t)k * CHUNK,
                                 dst_buf + PAD + (size_t)k * CHUNK, CHUNK,
                                 many_stored, (void *)(uintptr_t)k,
                                 many_end, NULL) == 0, "many: store %d", k);
        gam_check(am_get(peer, pattern + (size_t)k * CHUNK,
                         get_buf + PAD + (size_t)k * CHUNK, CHUNK, many_get,
                         (void *)(uintptr_t)k) == 0, "many: get %d", k);
    }
    gam_wait_for(&many_ends, MANY);
    gam_wait_for(&many_got, MANY);
    gam_wait_for(&many_in, MANY);
    check_many(dst_buf, from, "stores");
    check_many(get_buf, peer, "gets");
    stores += MANY;
    gets += MANY;
    bytes += 2 * MANY * CHUNK;
    barrier(&round);
    am_disable();
    printf("gam_bulk ok: %d stores, %d gets, %llu bytes\n", stores, gets,
           (unsigned long long)bytes);
    return 0;
}
