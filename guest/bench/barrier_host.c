/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host reference of 'scripts/tempest bench strata': NODES host
 * processes (one per node of the cluster, as its QEMUs are) meet in a
 * barrier on a shared counter, ROUNDS times, each way a waiting node can
 * wait once it has arrived:
 *   - futex: it sleeps at once (FUTEX_WAIT on the round's word; the last
 *     to arrive wakes them all with one FUTEX_WAKE): what every node of
 *     a cluster with more nodes than host cores pays when its vCPU
 *     sleeps on the shared area's DONE word (by default);
 *   - yield: it gives its host CPU away (sched_yield) while the word is
 *     unchanged, for up to 500 us, then sleeps as above: the policy of a
 *     node's halted vCPU with -machine sleep-yield-us=500.
 * No guest code, no device, no emulation: the host's own cost of having
 * every one of NODES processes run once per barrier, which a cluster's
 * barrier cannot go below on the same host.
 * Prints: barrier_host: nodes=N rounds=R futex_ns=N yield_ns=N
 * Usage: barrier_host NODES [ROUNDS]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-util.h"

#define YIELD_NS 500000
#define WARMUP 20

struct shared {
    uint32_t count;             /* arrived in this round */
    uint32_t round;             /* rounds completed: the futex word */
    uint64_t ns;                /* node 0's mean, per mode */
};

static void futex(uint32_t *word, int op, uint32_t val)
{
    syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

static void barrier(struct shared *s, unsigned nodes, int yield)
{
    uint32_t r = __atomic_load_n(&s->round, __ATOMIC_ACQUIRE);
    uint64_t end;

    if (__atomic_add_fetch(&s->count, 1, __ATOMIC_ACQ_REL) == nodes) {
        __atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->round, r + 1, __ATOMIC_RELEASE);
        futex(&s->round, FUTEX_WAKE, nodes);
        return;
    }
    if (yield) {
        end = now_ns() + YIELD_NS;
        while (__atomic_load_n(&s->round, __ATOMIC_ACQUIRE) == r &&
               now_ns() < end) {
            sched_yield();
        }
    }
    while (__atomic_load_n(&s->round, __ATOMIC_ACQUIRE) == r) {
        futex(&s->round, FUTEX_WAIT, r);
    }
}

/* Every process runs WARMUP + rounds barriers; node 0 times the last. */
static uint64_t run(struct shared *s, unsigned nodes, unsigned rounds,
                    int yield)
{
    unsigned i, n;
    pid_t pid;
    int st, failed = 0;
    uint64_t t0;

    for (n = 0; n < nodes; n++) {
        pid = fork();
        if (pid < 0) {
            perror("barrier_host: fork");
            exit(1);
        }
        if (pid == 0) {
            t0 = 0;
            for (i = 0; i < WARMUP + rounds; i++) {
                if (i == WARMUP) {
                    t0 = now_ns();
                }
                barrier(s, nodes, yield);
            }
            if (n == 0) {
                s->ns = (now_ns() - t0) / rounds;
            }
            _exit(0);
        }
    }
    for (n = 0; n < nodes; n++) {
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed = 1;
        }
    }
    if (failed) {
        fprintf(stderr, "barrier_host: a process failed\n");
        exit(1);
    }
    return s->ns;
}

int main(int argc, char **argv)
{
    unsigned nodes = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
    struct shared *s;
    uint64_t futex_ns, yield_ns;

    if (nodes < 2 || nodes > 4096 || rounds < 1) {
        fprintf(stderr, "usage: barrier_host NODES (2-4096) [ROUNDS]\n");
        return 2;
    }
    s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("barrier_host: mmap");
        return 1;
    }
    futex_ns = run(s, nodes, rounds, 0);
    yield_ns = run(s, nodes, rounds, 1);
    printf("barrier_host: nodes=%u rounds=%u futex_ns=%llu yield_ns=%llu\n",
           nodes, rounds, (unsigned long long)futex_ns,
           (unsigned long long)yield_ns);
    return 0;
}
