/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers of the bulk transfer tests: see xfer-util.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest.h"

#include "tempest/rt.h"
#include "xfer-util.h"

uint64_t xu_word(uint64_t seed, uint64_t k)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL + k * 0xBF58476D1CE4E5B9ULL +
                 0x94D049BB133111EBULL;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void xu_fill(void *base, uint64_t bytes, uint64_t seed)
{
    uint64_t *w = base;
    uint64_t k, n = (bytes + 7) / 8;

    for (k = 0; k < n; k++) {
        w[k] = xu_word(seed, k);
    }
}

static uint8_t pattern_byte(uint64_t seed, uint64_t p)
{
    return (uint8_t)(xu_word(seed, p >> 3) >> (8 * (p & 7)));
}

uint64_t xu_check(const void *dst, uint64_t len, uint64_t off,
                  uint64_t seed)
{
    const uint8_t *d = dst;
    uint64_t j = 0, k = off >> 3, got, want, lo, hi;
    unsigned sh = 8 * (off & 7);

    lo = xu_word(seed, k);
    for (; j + 8 <= len; j += 8) {
        hi = xu_word(seed, ++k);
        want = sh ? (lo >> sh) | (hi << (64 - sh)) : lo;
        memcpy(&got, d + j, 8);
        if (got != want) {
            break;
        }
        lo = hi;
    }
    for (; j < len; j++) {
        if (d[j] != pattern_byte(seed, off + j)) {
            return j + 1;
        }
    }
    return 0;
}

uint64_t xu_reg64(unsigned off)
{
    return (uint64_t)rt_nc_read(off) | (uint64_t)rt_nc_read(off + 4) << 32;
}

int xu_wait(int (*cond)(void *), void *arg, unsigned limit_s,
            const char *what)
{
    tempest_wait_until(cond, arg,
                       rt_time_ns() + (uint64_t)limit_s * 1000000000ULL);
    if (cond(arg)) {
        return 0;
    }
    printf("STUCK: %s after %u s (XFER_ACTIVE %lu, XFER_WAITING %lu, "
           "DROPPED %lu, sent %llu, received %llu bytes)\n", what, limit_s,
           (unsigned long)rt_nc_read(TEMPEST_NC_XFER_ACTIVE),
           (unsigned long)rt_nc_read(TEMPEST_NC_XFER_WAITING),
           (unsigned long)rt_nc_read(TEMPEST_NC_DROPPED),
           (unsigned long long)xu_reg64(TEMPEST_NC_XFER_SENT_LO),
           (unsigned long long)xu_reg64(TEMPEST_NC_XFER_RECV_LO));
    return -1;
}

void xu_need(int (*cond)(void *), void *arg, const char *what)
{
    if (xu_wait(cond, arg, XU_LIMIT_S, what) != 0) {
        printf("FAIL: stuck waiting for %s\n", what);
        exit(3);
    }
}

struct xu_count {
    const volatile uint64_t *counter;   /* volatile: set by handlers */
    uint64_t want;
};

static int xu_count_cond(void *arg)
{
    struct xu_count *c = arg;

    return __atomic_load_n(c->counter, __ATOMIC_ACQUIRE) >= c->want;
}

/* volatile: the counter is set by handlers */
void xu_need_count(const volatile uint64_t *counter, uint64_t want,
                   const char *what)
{
    struct xu_count c = { counter, want };

    xu_need(xu_count_cond, &c, what);
}
