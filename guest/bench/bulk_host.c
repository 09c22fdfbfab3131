/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host references of 'scripts/tempest bench bulk', for the same sizes
 * and repetitions as guest/bench/bulk_bench.c (4 KiB .. MAX_MB, times 4):
 *   - memcpy() of SIZE bytes between two buffers of MAX_MB, REPS times;
 *   - a Unix-domain stream socket pair between two processes: the writer
 *     writes SIZE bytes REPS times, the reader reads them all (into a
 *     1 MiB buffer) and answers one byte; timed from the first write to
 *     the answer.
 * Prints one line per size:
 *   bulk_host: size=N reps=R memcpy_ns=T uds_ns=T
 * Usage: bulk_host [MAX_MB] (default 64).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-util.h"

#define CHUNK   (1 << 20)

static unsigned reps_for(uint64_t size)
{
    uint64_t reps = (256ULL << 20) / size;

    return reps < 4 ? 4 : reps > 2048 ? 2048 : (unsigned)reps;
}

static uint64_t uds(char *src, uint64_t size, unsigned reps)
{
    static char rbuf[CHUNK];
    uint64_t total = size * reps, got = 0, t0;
    int sv[2], status;
    unsigned i;
    pid_t pid;
    char ack = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("bulk_host");
        exit(1);
    }
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        while (got < total) {
            ssize_t n = read(sv[1], rbuf, sizeof(rbuf));

            if (n <= 0) {
                _exit(1);
            }
            got += (uint64_t)n;
        }
        host_io(sv[1], &ack, 1, 1, "bulk_host");
        _exit(0);
    }
    close(sv[1]);
    t0 = now_ns();
    for (i = 0; i < reps; i++) {
        host_io(sv[0], src, size, 1, "bulk_host");
    }
    host_io(sv[0], &ack, 1, 0, "bulk_host");
    t0 = now_ns() - t0;
    close(sv[0]);
    waitpid(pid, &status, 0);
    return t0;
}

int main(int argc, char **argv)
{
    uint64_t max = (uint64_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
    char *src = malloc(max), *dst = malloc(max);
    uint64_t size, t0, mc;
    unsigned i, reps;

    if (src == NULL || dst == NULL) {
        perror("bulk_host");
        return 1;
    }
    memset(src, 1, max);
    memset(dst, 2, max);
    for (size = 4096; size <= max; size *= 4) {
        reps = reps_for(size);
        t0 = now_ns();
        for (i = 0; i < reps; i++) {
            memcpy(dst + (max % size ? 0 : (i * size) % max), src, size);
        }
        mc = now_ns() - t0;
        if (dst[size / 2] != 1) {
            return 1;       /* keeps the copies from being optimized out */
        }
        printf("bulk_host: size=%llu reps=%u memcpy_ns=%llu uds_ns=%llu\n",
               (unsigned long long)size, reps, (unsigned long long)mc,
               (unsigned long long)uds(src, size, reps));
        fflush(stdout);
    }
    return 0;
}
