/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the host-side reference benchmarks (uds_bench.c,
 * bulk_host.c): a monotonic clock and a whole read or write on a socket.
 */
#ifndef BENCH_HOST_UTIL_H
#define BENCH_HOST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Write (out) or read all len bytes; on failure report who and exit. */
static inline void host_io(int fd, char *buf, size_t len, int out,
                           const char *who)
{
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = out ? write(fd, buf + done, len - done)
                : read(fd, buf + done, len - done);
        if (n <= 0) {
            perror(who);
            exit(1);
        }
        done += (size_t)n;
    }
}

#endif /* BENCH_HOST_UTIL_H */
