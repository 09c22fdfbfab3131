/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * picolibc's retargetable locks (sys/lock.h), made real so that malloc,
 * atexit and friends work from several CPUs at once.  These definitions
 * replace the empty ones of libc.a (libc_misc_lock.c.o): all of that
 * object's symbols are defined here, so it is never pulled in.
 *
 * A lock is owned by a CPU (owner = index + 1); the recursive variants
 * count nested acquisitions by the owner.  IRQs are masked on the owning
 * CPU while it holds a lock, so an interrupt handler can call malloc() or
 * printf() without finding the lock taken by the code it interrupted
 * (which, the lock being recursive, would corrupt what it protects).
 */
#include <stdlib.h>
#include <sys/lock.h>

#include "rt-internal.h"

struct __lock {
    uint32_t owner;
    uint32_t depth;
    uint64_t irq_flags;     /* the owner's IRQ mask before it took it */
};

struct __lock __lock___libc_recursive_mutex;

static bool try_take(struct __lock *l, bool recursive)
{
    uint32_t me = rt_cpu_index() + 1;
    uint32_t expected = 0;
    uint64_t flags = rt_irq_save();

    if (recursive && __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
        l->depth++;
        return true;
    }
    if (__atomic_compare_exchange_n(&l->owner, &expected, me, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        l->depth = 1;
        l->irq_flags = flags;
        return true;
    }
    rt_irq_restore(flags);
    return false;
}

static void take(struct __lock *l, bool recursive)
{
    if (l == NULL) {
        return;
    }
    while (!try_take(l, recursive)) {
        __asm__ volatile("yield");
    }
}

static void drop(struct __lock *l)
{
    uint64_t flags;

    if (l == NULL || l->depth == 0) {
        return;
    }
    if (--l->depth == 0) {
        flags = l->irq_flags;
        __atomic_store_n(&l->owner, 0, __ATOMIC_RELEASE);
        rt_irq_restore(flags);
    }
}

void __retarget_lock_init(_LOCK_T *lock)
{
    *lock = calloc(1, sizeof(struct __lock));
}

void __retarget_lock_init_recursive(_LOCK_T *lock)
{
    *lock = calloc(1, sizeof(struct __lock));
}

void __retarget_lock_close(_LOCK_T lock)
{
    free(lock);
}

void __retarget_lock_close_recursive(_LOCK_T lock)
{
    free(lock);
}

void __retarget_lock_acquire(_LOCK_T lock)
{
    take(lock, false);
}

void __retarget_lock_acquire_recursive(_LOCK_T lock)
{
    take(lock, true);
}

/* Returns non-zero when the lock was taken, as picolibc's stub does. */
int __retarget_lock_try_acquire(_LOCK_T lock)
{
    return lock == NULL || try_take(lock, false);
}

int __retarget_lock_try_acquire_recursive(_LOCK_T lock)
{
    return lock == NULL || try_take(lock, true);
}

void __retarget_lock_release(_LOCK_T lock)
{
    drop(lock);
}

void __retarget_lock_release_recursive(_LOCK_T lock)
{
    drop(lock);
}
