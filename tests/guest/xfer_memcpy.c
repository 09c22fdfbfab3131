/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH 3.5 (memory copy) through <magic.h>: magic_fastmemcpy() with the
 * destination address named by the sender, from every node to every
 * node (itself included), sizes 1 byte .. 1 MiB + 5 at odd, different
 * alignments of source and destination; magic_senddone() /
 * magic_sendwait(), the receiver's magic_copies_received() count and its
 * magic_on_copy() callback; data checked byte for byte and the bytes
 * around every destination checked untouched.
 * Prints "xfer_memcpy ok" on every node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "tempest/nc.h"
#include "magic.h"
#include "xfer-util.h"

#define SLOT        ((2 << 20) + 256)   /* per sender in the area */
#define MAX_NODES   8

static const size_t sizes[] = {
    1, 7, 8, 64, 100, 4095, 65536 + 17, (1 << 20) + 5,
};

static uint64_t area_of[MAX_NODES];     /* each node's receive area */
static volatile unsigned areas_known;   /* volatile: set by handlers */
static uint64_t cb_count, cb_bytes;

static void area_h(TPPI_NodeId src, int size)
{
    uint32_t lo = (uint32_t)TPPI_recv_W();
    uint32_t hi = (uint32_t)TPPI_recv_W();

    (void)size;
    area_of[src] = (uint64_t)hi << 32 | lo;
    __atomic_fetch_add(&areas_known, 1, __ATOMIC_RELEASE);
}

static int all_areas(void *arg)
{
    (void)arg;
    return areas_known >= TPPI_num_nodes;
}

static void on_copy(unsigned src, void *dst, size_t len)
{
    (void)src;
    (void)dst;
    __atomic_fetch_add(&cb_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cb_bytes, len, __ATOMIC_RELAXED);
}

static int send_over(void *arg)
{
    return magic_senddone(*(magic_mid *)arg) != 0;
}

/* magic_sendwait(), but a send that never ends fails the test. */
static int sendwait(magic_mid mid)
{
    xu_need(send_over, &mid, "a send to complete");
    return magic_sendwait(mid);
}

static uint64_t seed_of(unsigned src, unsigned dst, unsigned k)
{
    return (uint64_t)src << 40 | (uint64_t)dst << 20 | k;
}

int main(void)
{
    unsigned n = TPPI_num_nodes, me = TPPI_self_address, p, k;
    uint8_t *area = aligned_alloc(64, (size_t)MAX_NODES * SLOT);
    uint8_t *src = aligned_alloc(64, SLOT);
    uint64_t copies = 0, bytes = 0, t0 = am_ticks();
    magic_mid mids[MAX_NODES];

    if (n > MAX_NODES || area == NULL || src == NULL) {
        am_fail("at most %d nodes; or no memory", MAX_NODES);
        return am_finish("xfer_memcpy");
    }
    magic_on_copy(on_copy);
    memset(area, 0xEE, (size_t)n * SLOT);
    for (p = 0; p < n; p++) {
        TPPI_send_WW(p, area_h, (int)(uint32_t)(uintptr_t)area,
                     (int)(uint32_t)((uint64_t)(uintptr_t)area >> 32));
    }
    xu_need(all_areas, NULL, "the other nodes' areas");
    am_barrier();

    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t len = sizes[k];
        unsigned soff = (unsigned)(len * 5 + me) % 64;

        for (p = 0; p < n; p++) {
            unsigned doff = (unsigned)(len * 3 + me * 7 + 1) % 64 + 64;

            xu_fill(src, soff + len, seed_of(me, p, k));
            mids[p] = magic_fastmemcpy(src + soff, len, p,
                                       (void *)(uintptr_t)(area_of[p] +
                                       (uint64_t)me * SLOT + doff));
            if (mids[p] == MAGIC_NO_MID) {
                am_fail("copy of %zu bytes to node %u refused", len, p);
            } else if (sendwait(mids[p]) != 1) {
                am_fail("copy of %zu bytes to node %u failed", len, p);
            }
        }
        am_barrier();
        /* Everybody's copies are in: check what came from each node. */
        for (p = 0; p < n; p++) {
            unsigned doff = (unsigned)(len * 3 + p * 7 + 1) % 64 + 64;
            uint8_t *d = area + (size_t)p * SLOT + doff;
            unsigned psoff = (unsigned)(len * 5 + p) % 64;
            uint64_t bad = xu_check(d, len, psoff, seed_of(p, me, k));

            if (bad) {
                am_fail("%zu bytes from node %u: byte %llu differs", len, p,
                        (unsigned long long)bad - 1);
            }
            if (d[-1] != 0xEE || d[len] != 0xEE) {
                am_fail("%zu bytes from node %u: a byte around the copy "
                        "changed", len, p);
            }
            memset(d, 0xEE, len);
            copies++;
            bytes += len;
        }
        am_barrier();
    }
    for (p = 0; p < n; p++) {
        uint64_t want = sizeof(sizes) / sizeof(sizes[0]);

        if (magic_copies_received(p) != want) {
            am_fail("magic_copies_received(%u) = %llu, not %llu", p,
                    (unsigned long long)magic_copies_received(p),
                    (unsigned long long)want);
        }
    }
    if (cb_count != copies || cb_bytes != bytes) {
        am_fail("the copy callback saw %llu copies (%llu bytes), not %llu "
                "(%llu)", (unsigned long long)cb_count,
                (unsigned long long)cb_bytes, (unsigned long long)copies,
                (unsigned long long)bytes);
    }
    printf("node %u: %llu copies received (%llu bytes) in %llu ms; %llu "
           "bytes sent straight into a peer's RAM\n", me,
           (unsigned long long)copies, (unsigned long long)bytes,
           (unsigned long long)(am_ticks() - t0) / 1000,
           (unsigned long long)nc_reg(TEMPEST_NC_XFER_PUT_LO) |
           (unsigned long long)nc_reg(TEMPEST_NC_XFER_PUT_HI) << 32);
    return am_finish("xfer_memcpy");
}
