/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks malloc on the runtime's sbrk heap: blocks from 16 bytes to 4 MiB
 * keep their contents, free/realloc/calloc work, and requests larger than
 * RAM return NULL with errno ENOMEM.  Prints "malloc ok" and exits 0.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest/rt.h"

#define NBLOCKS 12

static int check(const uint8_t *p, size_t n, uint8_t seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (p[i] != (uint8_t)(seed + i * 7)) {
            printf("malloc: block %p differs at %zu\n", (const void *)p, i);
            return 0;
        }
    }
    return 1;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed + i * 7);
    }
}

int main(void)
{
    uint8_t *blk[NBLOCKS];
    size_t size[NBLOCKS];
    uint8_t *p, *z;
    volatile size_t absurd = SIZE_MAX;  /* hidden from -Walloc-size */
    size_t i;
    int round;

    for (round = 0; round < 3; round++) {
        for (i = 0; i < NBLOCKS; i++) {
            size[i] = (size_t)16 << (2 * (i % 10));     /* 16 B .. 4 MiB */
            if (size[i] > (4u << 20)) {
                size[i] = 4u << 20;
            }
            blk[i] = malloc(size[i]);
            if (blk[i] == NULL) {
                printf("malloc: %zu bytes failed\n", size[i]);
                return 1;
            }
            fill(blk[i], size[i], (uint8_t)(i + round));
        }
        for (i = 0; i < NBLOCKS; i++) {
            if (!check(blk[i], size[i], (uint8_t)(i + round))) {
                return 1;
            }
            free(blk[i]);
        }
    }

    p = malloc(1000);
    if (p == NULL) {
        return 1;
    }
    fill(p, 1000, 3);
    p = realloc(p, 3u << 20);
    if (p == NULL || !check(p, 1000, 3)) {
        printf("malloc: realloc lost the contents\n");
        return 1;
    }
    free(p);

    z = calloc(1024, 1024);
    if (z == NULL) {
        return 1;
    }
    for (i = 0; i < 1024 * 1024; i++) {
        if (z[i]) {
            printf("malloc: calloc memory not zero at %zu\n", i);
            return 1;
        }
    }
    free(z);

    errno = 0;
    if (malloc(rt_ram_size()) != NULL || errno != ENOMEM) {
        printf("malloc: a block as large as RAM did not fail with ENOMEM\n");
        return 1;
    }
    if (malloc(absurd / 2) != NULL || malloc(absurd) != NULL) {
        printf("malloc: an absurd size did not fail\n");
        return 1;
    }
    printf("malloc ok\n");
    return 0;
}
