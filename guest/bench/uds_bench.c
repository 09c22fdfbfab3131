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

#include "host-util.h"

#define HDR     32
#define FULL    (HDR + 4096)
#define SMALL   (HDR + 4)

/* The echoing side: ROUNDS + ROUNDS/4 echoes, then the stream. */
static void child(int fd, unsigned rounds, unsigned stream)
{
    static char buf[FULL];
    unsigned i;

    for (i = 0; i < 2 * rounds; i++) {
        host_io(fd, buf, HDR, 0, "uds_bench");
        host_io(fd, buf, HDR, 1, "uds_bench");
    }
    for (i = 0; i < rounds / 4; i++) {
        host_io(fd, buf, FULL, 0, "uds_bench");
        host_io(fd, buf, FULL, 1, "uds_bench");
    }
    for (i = 0; i < stream; i++) {
        host_io(fd, buf, SMALL, 0, "uds_bench");
    }
    host_io(fd, buf, HDR, 1, "uds_bench");
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
        host_io(sv[0], buf, HDR, 1, "uds_bench");
        host_io(sv[0], buf, HDR, 0, "uds_bench");
    }
    t0 = now_ns();
    for (i = 0; i < rounds; i++) {
        host_io(sv[0], buf, HDR, 1, "uds_bench");
        host_io(sv[0], buf, HDR, 0, "uds_bench");
    }
    empty = (now_ns() - t0) / rounds;
    t0 = now_ns();
    for (i = 0; i < rounds / 4; i++) {
        host_io(sv[0], buf, FULL, 1, "uds_bench");
        host_io(sv[0], buf, FULL, 0, "uds_bench");
    }
    full = (now_ns() - t0) / (rounds / 4);
    t0 = now_ns();
    for (i = 0; i < stream; i++) {
        host_io(sv[0], buf, SMALL, 1, "uds_bench");
    }
    host_io(sv[0], buf, HDR, 0, "uds_bench");
    one = (now_ns() - t0) / stream;
    waitpid(pid, &status, 0);
    printf("uds_bench: rtt_empty_ns=%llu rtt_full_ns=%llu oneway_ns=%llu "
           "rate=%llu\n", (unsigned long long)empty,
           (unsigned long long)full, (unsigned long long)one,
           (unsigned long long)(1000000000ULL / (one ? one : 1)));
    return 0;
}
