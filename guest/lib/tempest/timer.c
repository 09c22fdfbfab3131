/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest timers (Tempest spec 3.5), on the node controller's virtual
 * clock (a tick is TEMPEST_TICK_NS = 1 us).
 *
 * Pending timers live in a binary heap ordered by (deadline, order of
 * scheduling), so timers run in deadline order and equal deadlines in
 * the order they were scheduled, any number of them.  The device only
 * serves as the alarm clock: a device timer (TEMPEST_CMD_TIMER_ARM, A =
 * the deadline, B = TIMER_TAG) is armed whenever the earliest pending
 * deadline is not already covered by one armed for it or earlier.  Its
 * TEMPEST_EV_TIMER event marks timers due; the protocol thread then runs
 * them one per step, before any message, and re-arms for the next.  The
 * event's handler and that work are registered with the core at start-up
 * (timer_register).
 *
 * The heap is shared by computation code and the protocol thread: a
 * spinlock taken with IRQs masked (the protocol thread may be an
 * interrupt handler on the same CPU).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tempest-internal.h"

#define TIMER_TAG       0x54494d52ULL      /* "TIMR" */
#define MAX_ARMED       64

struct tm {
    uint64_t deadline;
    uint64_t order;
    TPPI_TimerHandlerPtr fn;
    void *ptr;
};

static struct tm *heap;
static uint32_t heap_len, heap_cap;
static uint64_t next_order;
static uint64_t armed[MAX_ARMED];   /* deadlines of device timers armed */
static unsigned narmed;
static uint32_t due;
static uint32_t tlock;

static uint64_t tlock_take(void)
{
    uint64_t flags;

    for (;;) {
        flags = rt_irq_save();
        if (!__atomic_exchange_n(&tlock, 1, __ATOMIC_ACQUIRE)) {
            return flags;
        }
        rt_irq_restore(flags);
        while (__atomic_load_n(&tlock, __ATOMIC_RELAXED)) {
            __asm__ volatile("yield");
        }
    }
}

static void tlock_drop(uint64_t flags)
{
    __atomic_store_n(&tlock, 0, __ATOMIC_RELEASE);
    rt_irq_restore(flags);
}

static bool before(const struct tm *a, const struct tm *b)
{
    return a->deadline < b->deadline ||
           (a->deadline == b->deadline && a->order < b->order);
}

static bool heap_push(const struct tm *t)
{
    struct tm *n, tmp;
    uint32_t i, parent;

    if (heap_len == heap_cap) {
        uint32_t cap = heap_cap ? heap_cap * 2 : 64;

        n = realloc(heap, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return false;
        }
        heap = n;
        heap_cap = cap;
    }
    i = heap_len++;
    heap[i] = *t;
    while (i > 0) {
        parent = (i - 1) / 2;
        if (!before(&heap[i], &heap[parent])) {
            break;
        }
        tmp = heap[i];
        heap[i] = heap[parent];
        heap[parent] = tmp;
        i = parent;
    }
    return true;
}

static void heap_pop(struct tm *out)
{
    struct tm tmp;
    uint32_t i = 0, l, r, m;

    *out = heap[0];
    heap[0] = heap[--heap_len];
    for (;;) {
        l = 2 * i + 1;
        r = l + 1;
        m = i;
        if (l < heap_len && before(&heap[l], &heap[m])) {
            m = l;
        }
        if (r < heap_len && before(&heap[r], &heap[m])) {
            m = r;
        }
        if (m == i) {
            break;
        }
        tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

/*
 * Under the lock: returns true if a device timer must be armed for
 * @deadline (none armed fires at or before it), and records it as armed.
 */
static bool need_arm(uint64_t deadline)
{
    unsigned i;

    for (i = 0; i < narmed; i++) {
        if (armed[i] <= deadline) {
            return false;
        }
    }
    if (narmed == MAX_ARMED) {
        /* Forget the latest: it will fire and find nothing due. */
        unsigned last = 0;

        for (i = 1; i < narmed; i++) {
            if (armed[i] > armed[last]) {
                last = i;
            }
        }
        armed[last] = armed[--narmed];
    }
    armed[narmed++] = deadline;
    return true;
}

static void arm(uint64_t deadline, uint64_t now)
{
    uint64_t ticks = deadline > now ? deadline - now : 0;
    uint32_t st;

    while ((st = nc_timer_arm(ticks, deadline, TIMER_TAG)) ==
           TEMPEST_CMD_RETRY) {
        __asm__ volatile("yield");
    }
    if (st != TEMPEST_CMD_SUCCESS) {
        tppi_report(&tppi_stats.bad_sends, "the node controller refused a "
                    "timer of %llu ticks", (unsigned long long)ticks);
    }
}

void TPPI_schedule_timer(int ticks, TPPI_TimerHandlerPtr fn, void *user_ptr)
{
    struct tm t;
    uint64_t flags, now;
    bool ok, arm_it = false;

    if (fn == NULL || ticks < 0) {
        tppi_report(&tppi_stats.bad_sends, "TPPI_schedule_timer(%d, %p): "
                    "%s: not scheduled", ticks, (void *)fn,
                    fn == NULL ? "no handler" : "negative ticks");
        return;
    }
    now = nc_ticks();
    t.deadline = now + (uint64_t)ticks;
    t.fn = fn;
    t.ptr = user_ptr;
    flags = tlock_take();
    t.order = next_order++;
    ok = heap_push(&t);
    if (ok) {
        arm_it = need_arm(t.deadline);
    }
    tlock_drop(flags);
    if (!ok) {
        tppi_report(&tppi_stats.bad_sends, "TPPI_schedule_timer: out of "
                    "memory: not scheduled");
        return;
    }
    if (arm_it) {
        arm(t.deadline, now);
    }
}

/* A TEMPEST_EV_TIMER event arrived: timers may be due. */
static void timer_event(const struct nc_event *ev)
{
    uint64_t a = ev->a, b = ev->b;
    uint64_t flags;
    unsigned i;

    if (b != TIMER_TAG) {
        tppi_report(&tppi_stats.bad_packets, "timer event with tag 0x%llx, "
                    "not libtempest's: ignored", (unsigned long long)b);
        return;
    }
    flags = tlock_take();
    for (i = 0; i < narmed; i++) {
        if (armed[i] == a) {
            armed[i] = armed[--narmed];
            break;
        }
    }
    due = 1;
    tlock_drop(flags);
}

/* True while a timer event has not been fully dealt with. */
static bool timer_pending(void)
{
    return __atomic_load_n(&due, __ATOMIC_RELAXED) != 0;
}

/*
 * Runs the earliest due timer's handler, if one is due; returns true if
 * it ran one.  When none is due, arms the device for the next.
 */
static bool timer_run_one(void)
{
    uint64_t flags, now = nc_ticks();
    bool arm_it = false;
    struct tm t;

    flags = tlock_take();
    if (heap_len && heap[0].deadline <= now) {
        heap_pop(&t);
        tlock_drop(flags);
        t.fn(t.ptr);
        __atomic_fetch_add(&tppi_stats.timers_run, 1, __ATOMIC_RELAXED);
        return true;
    }
    due = 0;
    if (heap_len) {
        t = heap[0];
        arm_it = need_arm(t.deadline);
    }
    tlock_drop(flags);
    if (arm_it) {
        arm(t.deadline, now);
    }
    return false;
}

/* The protocol thread's timer step: a due timer, if a timer event came. */
static bool timer_step(void)
{
    return timer_pending() && timer_run_one();
}

TPPI_REGISTER
static void timer_register(void)
{
    static const struct tppi_work w = { timer_pending, timer_step, &due };

    tppi_on_event(TEMPEST_EV_TIMER, timer_event);
    tppi_on_work(TPPI_WORK_TIMERS, &w);
}
