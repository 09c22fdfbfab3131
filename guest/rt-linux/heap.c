/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * malloc() and friends from user memory, replacing glibc's (whose heap
 * grows with brk() or mmap() in pages the node controller cannot reach).
 * Until init maps user memory, a pool inside the program's bss serves
 * (libc allocates before main); init moves that pool into user memory
 * with the rest of the image, then adds the memory after the image.
 *
 * First fit on an address-ordered free list, neighbours merged on free;
 * every block 16-byte aligned with a 16-byte header.  One lock, taken
 * with the runtime's interrupts masked, so an interrupt handler (a signal
 * on this thread) may allocate too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rt-linux.h"

#define HDR             16UL
#define MIN_CHUNK       32UL
#define ALIGN           16UL
#define BOOT_POOL       (512UL << 10)
#define USED            1UL

struct chunk {
    size_t size;                /* with the header; bit 0: in use */
    size_t pad;
    struct chunk *next;         /* on the free list only */
};

static _Alignas(16) unsigned char boot_pool[BOOT_POOL];
static struct chunk *free_list;
static bool booted;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static uint64_t heap_lock(void)
{
    uint64_t flags = rt_irq_save();

    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
        __asm__ volatile("yield");
    }
    return flags;
}

static void heap_unlock(uint64_t flags)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
    rt_irq_restore(flags);
}

/* Puts @c on the free list in address order, merged with neighbours. */
static void insert_free(struct chunk *c)
{
    struct chunk **pp = &free_list, *prev = NULL;

    while (*pp && *pp < c) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    c->next = *pp;
    *pp = c;
    if (c->next && (char *)c + c->size == (char *)c->next) {
        c->size += c->next->size;
        c->next = c->next->next;
    }
    if (prev && (char *)prev + prev->size == (char *)c) {
        prev->size += c->size;
        prev->next = c->next;
    }
}

static void add_pool(void *start, size_t len)
{
    uintptr_t a = ((uintptr_t)start + ALIGN - 1) & ~(ALIGN - 1);
    struct chunk *c = (struct chunk *)a;

    len -= a - (uintptr_t)start;
    len &= ~(ALIGN - 1);
    if (len < MIN_CHUNK) {
        return;
    }
    c->size = len;
    insert_free(c);
}

void rtl_heap_add(void *start, size_t len)
{
    uint64_t f = heap_lock();

    add_pool(start, len);
    heap_unlock(f);
}

/* A block of @size bytes whose payload is aligned to @align (a power of
 * two, at least ALIGN), or NULL. */
static void *alloc(size_t size, size_t align)
{
    struct chunk **pp, *c;
    size_t need;
    void *p = NULL;
    uint64_t f;

    if (size > ((size_t)1 << 40) || align > ((size_t)1 << 30)) {
        errno = ENOMEM;
        return NULL;
    }
    need = (size + HDR + ALIGN - 1) & ~(ALIGN - 1);
    if (need < MIN_CHUNK) {
        need = MIN_CHUNK;
    }
    f = heap_lock();
    if (!booted) {
        booted = true;
        add_pool(boot_pool, sizeof(boot_pool));
    }
    for (pp = &free_list; (c = *pp) != NULL; pp = &c->next) {
        uintptr_t start = (uintptr_t)c, pay = start + HDR;
        size_t lead;

        pay = (pay + align - 1) & ~(uintptr_t)(align - 1);
        lead = pay - HDR - start;
        if (lead && lead < MIN_CHUNK) {
            pay += (MIN_CHUNK - lead + align - 1) & ~(uintptr_t)(align - 1);
            lead = pay - HDR - start;
        }
        if (lead + need > c->size) {
            continue;
        }
        *pp = c->next;
        {
            size_t total = c->size;
            struct chunk *b = (struct chunk *)(pay - HDR);
            size_t rest = total - lead - need;

            if (lead) {
                c->size = lead;
                insert_free(c);
            }
            if (rest >= MIN_CHUNK) {
                struct chunk *t = (struct chunk *)((char *)b + need);

                t->size = rest;
                insert_free(t);
            } else {
                need += rest;
            }
            b->size = need | USED;
            p = (void *)pay;
        }
        break;
    }
    heap_unlock(f);
    if (!p) {
        errno = ENOMEM;
    }
    return p;
}

static struct chunk *chunk_of(void *p)
{
    return (struct chunk *)((char *)p - HDR);
}

void *malloc(size_t size)
{
    return alloc(size, ALIGN);
}

void free(void *p)
{
    struct chunk *c;
    uint64_t f;

    if (!p) {
        return;
    }
    c = chunk_of(p);
    if (!(c->size & USED)) {
        static const char msg[] = "tempest-rt: free() of a block that is "
                                  "not allocated\n";

        rt_puts_raw(msg);
        abort();
    }
    f = heap_lock();
    c->size &= ~USED;
    insert_free(c);
    heap_unlock(f);
}

size_t malloc_usable_size(void *p)
{
    return p ? (chunk_of(p)->size & ~USED) - HDR : 0;
}

void *calloc(size_t n, size_t size)
{
    void *p;

    if (size && n > (size_t)-1 / size) {
        errno = ENOMEM;
        return NULL;
    }
    p = malloc(n * size);
    if (p) {
        memset(p, 0, n * size);
    }
    return p;
}

void *realloc(void *old, size_t size)
{
    void *p;
    size_t have;

    if (!old) {
        return malloc(size);
    }
    if (size == 0) {
        free(old);
        return NULL;
    }
    have = malloc_usable_size(old);
    if (size <= have) {
        return old;
    }
    p = malloc(size);
    if (p) {
        memcpy(p, old, have);
        free(old);
    }
    return p;
}

void *aligned_alloc(size_t align, size_t size)
{
    if (align == 0 || (align & (align - 1))) {
        errno = EINVAL;
        return NULL;
    }
    return alloc(size, align < ALIGN ? ALIGN : align);
}

void *memalign(size_t align, size_t size)
{
    return aligned_alloc(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p;

    if (align < sizeof(void *) || (align & (align - 1))) {
        return EINVAL;
    }
    p = aligned_alloc(align, size);
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return aligned_alloc(4096, size);
}

void *pvalloc(size_t size)
{
    return aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
}
