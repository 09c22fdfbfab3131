/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.6 (TPPI_resume_va) and section 2 (fault priority): a thread
 * stays suspended until TPPI_resume_va() names its block, whoever calls
 * it: a later timer handler, another computation thread (--smp 3), or
 * the fault handler itself; resuming another block does not release it;
 * a thread resumed while the tag still forbids its access faults again;
 * one TPPI_resume_va() releases every thread waiting on the block
 * (--smp 3: two threads); a fault is handled before the messages queued
 * ahead of it (--smp 2 and up: a message holds the protocol thread until
 * the fault is queued, then its handler must be the next to run).  Prints
 * "tags_resume ok".
 */
#include <stdio.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE_TIMER      1   /* Invalid/read: a timer resumes 2 ms later */
#define MODE_WRONG      2   /* Busy/read: resume another block first */
#define MODE_AGAIN      3   /* Invalid/read: resume without a fix, once */
#define MODE_OTHER      4   /* Invalid/read: main resumes it */
#define MODE_TWO        5   /* Invalid/read: resume when both wait */
#define MODE_PRIO       6   /* Invalid/read: count messages handled */
#define DELAY_TICKS     2000

static volatile unsigned calls[8];
static volatile bool released;
static volatile uint64_t msgs_at_fault;
static volatile uint64_t slow_done;
static volatile uint64_t msgs_before_fault;
static volatile bool holding;

static void fix_and_resume(void *blk)
{
    TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RO);
    TPPI_resume_va(blk, TPPI_TAG_BLK_SIZE);
}

static void timer_h(void *blk)
{
    released = true;
    fix_and_resume(blk);
}

static void h_timer(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    calls[MODE_TIMER]++;
    TPPI_schedule_timer(DELAY_TICKS, timer_h, va);
}

static void h_wrong(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    calls[MODE_WRONG]++;
    /* The next block, and a superblock beside the faulting block. */
    TPPI_resume_va((char *)va + TPPI_TAG_BLK_SIZE, TPPI_TAG_BLK_SIZE);
    TPPI_resume_va((char *)va + 4 * TPPI_TAG_BLK_SIZE,
                   4 * TPPI_TAG_BLK_SIZE);
    TPPI_schedule_timer(DELAY_TICKS, timer_h, va);
}

static void h_again(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    if (calls[MODE_AGAIN]++ == 0) {
        TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);    /* still Invalid */
        return;
    }
    fix_and_resume(va);
}

static void h_other(void *va, void *usr, TPPI_NodeId home)
{
    (void)va;
    (void)usr;
    (void)home;
    calls[MODE_OTHER]++;        /* main() resumes it */
}

static void h_two(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    if (++calls[MODE_TWO] == 2) {
        fix_and_resume(va);     /* both threads wait on this block */
    }
}

static void h_prio(void *va, void *usr, TPPI_NodeId home)
{
    struct tempest_stats s;

    (void)usr;
    (void)home;
    tempest_get_stats(&s);
    msgs_at_fault = s.msgs_handled;
    calls[MODE_PRIO]++;
    fix_and_resume(va);
}

/* Messages queued behind the first: each counts a while. */
static void slow_h(TPPI_NodeId src, int size)
{
    volatile unsigned i;

    (void)src;
    (void)size;
    for (i = 0; i < 20000; i++) {
        /* about 50 us */
    }
    slow_done++;
}

/* The first message: holds the protocol thread until main() faults. */
static void hold_h(TPPI_NodeId src, int size)
{
    struct tempest_stats s;
    uint64_t faults = (uint64_t)TPPI_recv_W();

    (void)src;
    (void)size;
    holding = true;
    do {
        tempest_get_stats(&s);
    } while (s.faults <= faults);
    msgs_before_fault = s.msgs_handled + 1;     /* this one included */
}

static char *block(TPPI_PageMode mode)
{
    char *pg = tt_page(mode);

    TPPI_alloc_and_map(pg, mode, TPPI_Blk_Invalid, 0, NULL);
    return pg;
}

static void other_cpu_load(void *blk)
{
    tt_ldr(blk);
}

static int called(void *arg)
{
    return calls[(uintptr_t)arg] != 0;
}

int main(void)
{
    uint64_t t0;
    char *b;
    unsigned cpus = rt_cpus_online(), i;

    TPPI_register_blk_acc_fault_handler(MODE_TIMER, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, h_timer);
    TPPI_register_blk_acc_fault_handler(MODE_WRONG, TPPI_Blk_Busy,
                                        TPPI_ReadAccess, h_wrong);
    TPPI_register_blk_acc_fault_handler(MODE_AGAIN, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, h_again);
    TPPI_register_blk_acc_fault_handler(MODE_OTHER, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, h_other);
    TPPI_register_blk_acc_fault_handler(MODE_TWO, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, h_two);
    TPPI_register_blk_acc_fault_handler(MODE_PRIO, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, h_prio);

    /* A later handler (a timer) resumes the thread. */
    b = block(MODE_TIMER);
    t0 = am_ticks();
    tt_ldr(b + 8);
    if (!released || am_ticks() - t0 < DELAY_TICKS) {
        am_fail("resumed by a timer: back after %llu ticks, released %d",
                (unsigned long long)(am_ticks() - t0), released);
    }

    /* Resuming other blocks does not release it. */
    b = block(MODE_WRONG);
    TPPI_change_blk_acc(b + 2 * TPPI_TAG_BLK_SIZE, TPPI_TAG_BLK_SIZE,
                        TPPI_Blk_Invalid_To_Busy);
    released = false;
    tt_ldr(b + 2 * TPPI_TAG_BLK_SIZE + 8);
    if (!released || calls[MODE_WRONG] != 1) {
        am_fail("resuming other blocks released the thread");
    }

    /* Resumed with the tag unchanged: it faults again. */
    b = block(MODE_AGAIN);
    tt_ldr(b);
    if (calls[MODE_AGAIN] != 2) {
        am_fail("resumed without a fix: %u faults, not 2",
                calls[MODE_AGAIN]);
    }

    if (cpus >= 3) {
        /* Another computation thread resumes it. */
        b = block(MODE_OTHER);
        rt_cpu_call(2, other_cpu_load, b);
        tempest_wait(called, (void *)(uintptr_t)MODE_OTHER);
        t0 = am_ticks();
        while (am_ticks() - t0 < 2000) {
            /* cpu 2 must still be waiting */
        }
        rt_cpu_call(2, other_cpu_load, b);      /* refused: busy */
        if (rt_cpu_call(2, other_cpu_load, b) == 0) {
            am_fail("cpu 2 went on without a resume");
        }
        fix_and_resume(b);
        rt_cpu_wait(2);

        /* Two threads on one block: one resume releases both. */
        b = block(MODE_TWO);
        rt_cpu_call(2, other_cpu_load, b + 16);
        tempest_wait(called, (void *)(uintptr_t)MODE_TWO);
        tt_ldr(b + 32);
        rt_cpu_wait(2);
        if (calls[MODE_TWO] != 2) {
            am_fail("two threads on a block: %u handler calls, not 2",
                    calls[MODE_TWO]);
        }
    }

    if (cpus >= 2) {
        /*
         * Faults first: the protocol thread is held by a message until
         * the fault is queued, 100 more wait behind it; the fault's
         * handler runs next.
         */
        struct tempest_stats s;

        b = block(MODE_PRIO);
        tempest_get_stats(&s);
        TPPI_send_W(TPPI_self_address, hold_h, (int)s.faults);
        for (i = 0; i < 100; i++) {
            TPPI_send(TPPI_self_address, slow_h);
        }
        while (!holding) {
            /* the protocol thread takes the first message */
        }
        tt_ldr(b);
        if (msgs_at_fault != msgs_before_fault) {
            am_fail("the fault waited for %llu queued messages",
                    (unsigned long long)(msgs_at_fault - msgs_before_fault));
        }
        am_wait_count(&slow_done, 100);
    }
    printf("resume checks done on %u cpus\n", cpus);
    return am_finish("tags_resume");
}
