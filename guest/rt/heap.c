/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sbrk() for picolibc's malloc: the heap is the RAM from the end of the
 * image (__heap_start: after BSS, stacks, TLS blocks and table pool) to
 * the end of RAM as the node controller reported it at boot.  It replaces
 * libc.a's sbrk, which would stop at the linker script's __heap_end.
 */
#include <errno.h>
#include <unistd.h>

#include "rt-internal.h"

static uintptr_t heap_top;
static uintptr_t heap_limit;

void rt_heap_init(void)
{
    heap_top = ((uintptr_t)__heap_start + 15) & ~(uintptr_t)15;
    heap_limit = TEMPEST_RAM_BASE + rt_info.ram_size;
    if (heap_limit < heap_top) {
        heap_limit = heap_top;
    }
}

/*
 * Moves the heap top by @incr bytes and returns the old top; on failure
 * (beyond the end of RAM or below the heap start) returns (void *)-1 with
 * errno ENOMEM and changes nothing.
 */
void *sbrk(ptrdiff_t incr)
{
    uintptr_t old = __atomic_load_n(&heap_top, __ATOMIC_RELAXED);
    uintptr_t start = ((uintptr_t)__heap_start + 15) & ~(uintptr_t)15;
    uintptr_t new;

    do {
        if (incr >= 0) {
            if ((uintptr_t)incr > heap_limit - old) {
                errno = ENOMEM;
                return (void *)-1;
            }
        } else if ((uintptr_t)0 - (uintptr_t)incr > old - start) {
            errno = ENOMEM;
            return (void *)-1;
        }
        new = old + incr;
    } while (!__atomic_compare_exchange_n(&heap_top, &old, new, true,
                                          __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return (void *)old;
}
