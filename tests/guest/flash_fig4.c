/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH (Heinlein et al. 1994), written from the paper's Figures 4 and 9
 * with <flash.h>: the paper's names and types (MID *, short SenderPID,
 * unsigned long Length), spinning on senddone and polling receive.
 *   1  all-to-all: every process sends every other one messages of mixed
 *      lengths (1 to 20000 bytes) into buffer space it preallocated;
 *      every byte and every sender is checked;
 *   2  footnote 3: process 0 spins on senddone of a message to process 1
 *      before process 1 has called bufalloc (the message waits in system
 *      space), then process 1 allocates and receives it;
 *   3  16 messages outstanding at once into one 64 KiB bufalloc;
 *   4  fastmemcpy to another process's address named by FLASH_GLOBAL.
 * Prints "flash_fig4 ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "flash.h"
#include "xfer-util.h"

#define T_ALL       10
#define T_EARLY     11
#define T_MANY      12
#define ROUNDS      3
#define MANY        16
#define MANY_LEN    4000
#define OUT_MAX     20008

static unsigned length_of(int from, int to, int round)
{
    return 1 + (unsigned)(from * 7919 + to * 104729 + round * 1299709) %
                20000;
}

static uint64_t seed_of(int from, int to, int round)
{
    return (uint64_t)from << 32 | (uint64_t)to << 16 | (uint64_t)round;
}

/* Receives @n messages of @Type (spinning, as Figure 4 polls). */
static void receive_all(int Type, int n, int (*check)(char *, short,
                                                      unsigned long, int))
{
    short SenderPID;
    unsigned long Length;
    char *msg;
    int got = 0;

    while (got < n) {
        msg = receive(Type, &SenderPID, &Length);
        if (SenderPID != -1) {          /* Received a message: handle it */
            if (!check(msg, SenderPID, Length, got)) {
                am_fail("type %d: message %d from %d (%lu bytes) is wrong",
                        Type, got, SenderPID, Length);
            }
            bufreturn(msg);
            got++;
        }
    }
}

static int rounds_seen[1024];

static int check_all(char *msg, short from, unsigned long len, int i)
{
    int me = flash_self(), r;

    (void)i;
    if (from < 0 || from >= flash_nprocs()) {
        return 0;
    }
    r = rounds_seen[from]++;    /* one sender's messages come in order */
    return len == length_of(from, me, r) &&
           xu_check(msg, len, 0, seed_of(from, me, r)) == 0;
}

static void all_to_all(void)
{
    int me = flash_self(), p = flash_nprocs(), to, r;
    uint8_t *out = malloc((size_t)p * ROUNDS * OUT_MAX);
    MID **mids = calloc((size_t)p * ROUNDS, sizeof(*mids));
    int n = 0, i;

    if (out == NULL || mids == NULL) {
        am_fail("out of memory");
        return;
    }
    /* Space for all we will get, in a few buffers. */
    for (i = 0; i < p; i++) {
        if (bufalloc(ROUNDS * 20032, T_ALL) == NULL) {
            am_fail("bufalloc");
        }
    }
    am_barrier();
    for (r = 0; r < ROUNDS; r++) {
        for (to = 0; to < p; to++) {
            if (to == me) {
                continue;
            }
            uint8_t *o = out + ((size_t)to * ROUNDS + r) * OUT_MAX;

            xu_fill(o, length_of(me, to, r), seed_of(me, to, r));
            mids[n] = send(T_ALL, to, o, length_of(me, to, r));
            if (mids[n++] == NULL) {
                am_fail("send to %d failed", to);
            }
        }
    }
    receive_all(T_ALL, ROUNDS * (p - 1), check_all);
    for (i = 0; i < n; i++) {
        while (mids[i] && !senddone(mids[i])) {
            /* Spin until send completes */
        }
    }
    printf("all-to-all: %d messages sent and received\n", n);
    free(out);
    free(mids);
}

static int check_early(char *msg, short from, unsigned long len, int i)
{
    (void)i;
    return from == 0 && len == 3000 && xu_check(msg, len, 0, 77) == 0;
}

/* The send completes before its receiver has called bufalloc. */
static void early(void)
{
    static uint8_t buf[3000];
    MID *mid;

    am_barrier();
    if (flash_self() == 0) {
        xu_fill(buf, sizeof(buf), 77);
        mid = send(T_EARLY, 1, buf, sizeof(buf));
        while (!senddone(mid)) {
            /* Spin until send completes: no bufalloc at 1 yet */
        }
        printf("early: the send completed before any bufalloc\n");
    }
    am_barrier();
    if (flash_self() == 1) {
        bufalloc(4096, T_EARLY);
        receive_all(T_EARLY, 1, check_early);
    }
}

static char *many_buf;

static int check_many(char *msg, short from, unsigned long len, int i)
{
    return from == 0 && len == MANY_LEN &&
           msg >= many_buf && msg + len <= many_buf + 65536 &&
           xu_check(msg, len, 0, 500 + (uint64_t)i) == 0;
}

/* 16 messages outstanding into one 64 KiB buffer. */
static void many(void)
{
    static uint8_t out[MANY][MANY_LEN];
    MID *mids[MANY];
    int i;

    if (flash_self() == 1) {
        many_buf = bufalloc(65536, T_MANY);
    }
    am_barrier();
    if (flash_self() == 0) {
        for (i = 0; i < MANY; i++) {
            xu_fill(out[i], MANY_LEN, 500 + (uint64_t)i);
            mids[i] = send(T_MANY, 1, out[i], MANY_LEN);
        }
        for (i = 0; i < MANY; i++) {
            while (!senddone(mids[i])) {
                /* Spin */
            }
        }
    } else if (flash_self() == 1) {
        receive_all(T_MANY, MANY, check_many);
        printf("many: %d messages in one 64 KiB buffer\n", MANY);
    }
}

/* Figure 9: the sender names the destination by one address. */
static void memcpy_global(void)
{
    static uint64_t target[512], src[512];
    int me = flash_self(), p = flash_nprocs();
    MID *mid;
    int i;

    for (i = 0; i < 512; i++) {
        src[i] = (uint64_t)me << 32 | (uint64_t)i;
    }
    am_barrier();
    mid = fastmemcpy(src, sizeof(src), FLASH_GLOBAL((me + 1) % p, target));
    while (!senddone(mid)) {
        /* Spin */
    }
    am_barrier();
    for (i = 0; i < 512; i++) {
        if (target[i] != ((uint64_t)((me + p - 1) % p) << 32 | (uint64_t)i)) {
            am_fail("fastmemcpy: word %d is 0x%llx", i,
                    (unsigned long long)target[i]);
            break;
        }
    }
}

int main(void)
{
    all_to_all();
    if (flash_nprocs() > 1) {
        early();
        many();
    }
    memcpy_global();
    return am_finish("flash_fig4");
}
