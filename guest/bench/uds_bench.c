/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host reference of 'scripts/tempest bench am': the same three
 * measurements as guest/bench/am_bench.c between two host processes over
 * a Unix-domain stream socket pair:
 *   - round trip of an empty message (a 32-byte header, as a packet's),
 *   - round trip of a 32 + 4096-byte message,
 *   - one-way stream of 36-byte messages (one write() each), the reader
 *     answering the last one.
 * Each twice: with blocking reads (the figures without a suffix), and
 * with reads that poll the socket for up to 50 us before they block
 * (the "_spin" figures).  A blocking ping-pong pays the host's wake-up of a
 * sleeping thread on every message; on a VM whose idle vCPU takes ~60 us
 * to wake that made the blocking figure bimodal within one run (3.8 or
 * 65 us).  The nodes of a cluster poll before they sleep (the 50 us
 * spin), so the polling figure is the like-for-like reference of their
 * polling round trip, and it does not depend on the host's wake-ups.
 * Prints: uds_bench: rtt_empty_ns=N rtt_full_ns=N oneway_ns=N rate=N
 *         rtt_empty_spin_ns=N rtt_full_spin_ns=N oneway_spin_ns=N
 * Usage: uds_bench [ROUNDS [STREAM]].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-util.h"

#define HDR     32
#define FULL    (HDR + 4096)
#define SMALL   (HDR + 4)

typedef void (*io_fn)(int fd, char *buf, size_t len, int out);

static void io_block(int fd, char *buf, size_t len, int out)
{
    host_io(fd, buf, len, out, "uds_bench");
}

/* As host_io(), but a read polls first (MSG_DONTWAIT in a loop) for up
 * to SPIN_NS, then blocks: what a node's wait does (tempest_wait()'s
 * spin, 50 us by default, then a sleep until the doorbell). */
#define SPIN_NS 50000

static void io_spin(int fd, char *buf, size_t len, int out)
{
    uint64_t t0 = 0;
    size_t done = 0;
    unsigned turns = 0;
    ssize_t n;

    if (out) {
        host_io(fd, buf, len, 1, "uds_bench");
        return;
    }
    while (done < len) {
        n = recv(fd, buf + done, len - done, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (t0 == 0) {
                t0 = now_ns();
            } else if ((++turns & 15) == 0 && now_ns() - t0 > SPIN_NS) {
                host_io(fd, buf + done, len - done, 0, "uds_bench");
                return;
            }
            continue;
        }
        if (n <= 0) {
            perror("uds_bench");
            exit(1);
        }
        done += (size_t)n;
    }
}

/* The echoing side of one pass: 2 * ROUNDS + 2 * (ROUNDS / 4) echoes,
 * then the stream, answering its last message. */
static void echo(int fd, unsigned rounds, unsigned stream, io_fn io)
{
    static char buf[FULL];
    unsigned i;

    for (i = 0; i < 2 * rounds; i++) {
        io(fd, buf, HDR, 0);
        io(fd, buf, HDR, 1);
    }
    for (i = 0; i < 2 * (rounds / 4); i++) {
        io(fd, buf, FULL, 0);
        io(fd, buf, FULL, 1);
    }
    for (i = 0; i < stream; i++) {
        io(fd, buf, SMALL, 0);
    }
    io(fd, buf, HDR, 1);
}

/* The measuring side of one pass: @out gets the empty and the full
 * round trip and the time per streamed message, in ns. */
static void measure(int fd, unsigned rounds, unsigned stream, io_fn io,
                    uint64_t out[3])
{
    static char buf[FULL];
    uint64_t t0;
    unsigned i;

    for (i = 0; i < rounds; i++) {          /* warm up */
        io(fd, buf, HDR, 1);
        io(fd, buf, HDR, 0);
    }
    t0 = now_ns();
    for (i = 0; i < rounds; i++) {
        io(fd, buf, HDR, 1);
        io(fd, buf, HDR, 0);
    }
    out[0] = (now_ns() - t0) / rounds;
    for (i = 0; i < rounds / 4; i++) {      /* warm up, as am_bench */
        io(fd, buf, FULL, 1);
        io(fd, buf, FULL, 0);
    }
    t0 = now_ns();
    for (i = 0; i < rounds / 4; i++) {
        io(fd, buf, FULL, 1);
        io(fd, buf, FULL, 0);
    }
    out[1] = (now_ns() - t0) / (rounds / 4);
    t0 = now_ns();
    for (i = 0; i < stream; i++) {
        io(fd, buf, SMALL, 1);
    }
    io(fd, buf, HDR, 0);
    out[2] = (now_ns() - t0) / stream;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
    unsigned stream = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
    uint64_t blk[3], pol[3];
    int sv[2], status;
    pid_t pid;

    if (rounds < 4 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("uds_bench");
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        echo(sv[1], rounds, stream, io_block);
        echo(sv[1], rounds, stream, io_spin);
        exit(0);
    }
    close(sv[1]);
    measure(sv[0], rounds, stream, io_block, blk);
    measure(sv[0], rounds, stream, io_spin, pol);
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "uds_bench: the echoing process failed\n");
        return 1;
    }
    printf("uds_bench: rtt_empty_ns=%llu rtt_full_ns=%llu oneway_ns=%llu "
           "rate=%llu rtt_empty_spin_ns=%llu rtt_full_spin_ns=%llu "
           "oneway_spin_ns=%llu\n", (unsigned long long)blk[0],
           (unsigned long long)blk[1], (unsigned long long)blk[2],
           (unsigned long long)(1000000000ULL / (blk[2] ? blk[2] : 1)),
           (unsigned long long)pol[0], (unsigned long long)pol[1],
           (unsigned long long)pol[2]);
    return 0;
}
