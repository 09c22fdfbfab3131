/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host reference of 'scripts/tempest bench am': the same three
 * measurements as guest/bench/am_bench.c between two host processes over
 * a Unix-domain stream socket pair:
 *   - round trip of an empty message (a 32-byte header, as a packet's),
 *   - round trip of a 32 + 4096-byte message,
 *   - one-way stream of 36-byte messages (one write() each), the reader
 *     answering the last one.
 * Prints: uds_bench: rtt_empty_ns=N rtt_full_ns=N oneway_ns=N rate=N
 * Usage: uds_bench [ROUNDS [STREAM]].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR     32
#define FULL    (HDR + 4096)
#define SMALL   (HDR + 4)

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void xfer(int fd, char *buf, size_t len, int out)
{
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = out ? write(fd, buf + done, len - done)
                : read(fd, buf + done, len - done);
        if (n <= 0) {
            perror("uds_bench");
            exit(1);
        }
        done += (size_t)n;
    }
}

/* The echoing side: ROUNDS + ROUNDS/4 echoes, then the stream. */
static void child(int fd, unsigned rounds, unsigned stream)
{
    static char buf[FULL];
    unsigned i;

    for (i = 0; i < 2 * rounds; i++) {
        xfer(fd, buf, HDR, 0);
        xfer(fd, buf, HDR, 1);
    }
    for (i = 0; i < rounds / 4; i++) {
        xfer(fd, buf, FULL, 0);
        xfer(fd, buf, FULL, 1);
    }
    for (i = 0; i < stream; i++) {
        xfer(fd, buf, SMALL, 0);
    }
    xfer(fd, buf, HDR, 1);
    exit(0);
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
    unsigned stream = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
    static char buf[FULL];
    uint64_t t0, empty, full, one;
    int sv[2], status;
    unsigned i;
    pid_t pid;

    if (rounds < 4 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("uds_bench");
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        child(sv[1], rounds, stream);
    }
    close(sv[1]);
    for (i = 0; i < rounds; i++) {          /* warm up */
        xfer(sv[0], buf, HDR, 1);
        xfer(sv[0], buf, HDR, 0);
    }
    t0 = now_ns();
    for (i = 0; i < rounds; i++) {
        xfer(sv[0], buf, HDR, 1);
        xfer(sv[0], buf, HDR, 0);
    }
    empty = (now_ns() - t0) / rounds;
    t0 = now_ns();
    for (i = 0; i < rounds / 4; i++) {
        xfer(sv[0], buf, FULL, 1);
        xfer(sv[0], buf, FULL, 0);
    }
    full = (now_ns() - t0) / (rounds / 4);
    t0 = now_ns();
    for (i = 0; i < stream; i++) {
        xfer(sv[0], buf, SMALL, 1);
    }
    xfer(sv[0], buf, HDR, 0);
    one = (now_ns() - t0) / stream;
    waitpid(pid, &status, 0);
    printf("uds_bench: rtt_empty_ns=%llu rtt_full_ns=%llu oneway_ns=%llu "
           "rate=%llu\n", (unsigned long long)empty,
           (unsigned long long)full, (unsigned long long)one,
           (unsigned long long)(1000000000ULL / (one ? one : 1)));
    return 0;
}
