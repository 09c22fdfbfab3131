/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The measured loop of the channel benchmarks (chan_bench, libchan_bench):
 * ROUNDS round trips of N bytes after a tenth as many unmeasured, node 0
 * printing "PREFIX: size=N rounds=R ns=T".
 */
#ifndef ROUND_TRIPS_H
#define ROUND_TRIPS_H

#include <stdint.h>
#include <stdio.h>

#include "tempest/rt.h"

/*
 * round_trips: calls one(@n, @arg) @rounds + @rounds / 10 + 1 times (one
 * round trip each), timing the last @rounds; node 0 (@me) prints the
 * line.  Returns 0, or one()'s first nonzero result (nothing printed).
 */
static inline int round_trips(const char *prefix, unsigned me, uint32_t n,
                              unsigned rounds,
                              int (*one)(uint32_t n, void *arg), void *arg)
{
    unsigned warm = rounds / 10 + 1;
    uint64_t t0 = 0;
    int rc;

    for (unsigned i = 0; i < rounds + warm; i++) {
        if (i == warm) {
            t0 = rt_time_ns();
        }
        rc = one(n, arg);
        if (rc) {
            return rc;
        }
    }
    if (me == 0) {
        printf("%s: size=%u rounds=%u ns=%llu\n", prefix, (unsigned)n,
               rounds, (unsigned long long)(rt_time_ns() - t0));
    }
    return 0;
}

#endif /* ROUND_TRIPS_H */
