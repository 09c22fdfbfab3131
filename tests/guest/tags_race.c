/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest 3.2.6 under a real race (--smp 3: the protocol thread on CPU 1,
 * main() on CPU 0, a computation thread on CPU 2):
 *  1. CPU 2 stores without pause to one block, with every kind of store
 *     the node controller checks (STR, STRB, STP, STR q, LDADD, SWP,
 *     LDXR/STXR, DC ZVA), each store a new value, while main() takes its
 *     write access away (Downgrade_RO, Invalidate, Mark_Busy in turn):
 *     from the moment TPPI_change_blk_acc() returns until main() gives
 *     access back, the block's memory must not change (no store lands
 *     after the downgrade), and CPU 2 is suspended; after the upgrade and
 *     TPPI_resume_va() from main() its stores land again.
 *  2. CPU 2 loads the whole block (one LD1 of four registers) without
 *     pause, its fault handler resuming it at once, while main()
 *     invalidates the block and moves the next round's data in with
 *     TPPI_change_blk_acc_and_copy(..., Validate_RO): every load that
 *     does not fault sees one whole round's data, never an older or torn
 *     one, nor one older than the round main() has finished moving in.
 * Only these properties are checked.  How often the race was exercised
 * (rounds in which CPU 2 met the new tag while main() watched, rounds in
 * which the loader was faulting when the data came) depends on how the
 * host schedules the vCPUs: it is printed, never a reason to fail.
 * Prints "tags_race ok" with the counts.
 */
#include <stdio.h>
#include <string.h>

#include "am-util.h"
#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        2
#define ROUNDS      300
#define WATCH       200         /* checks of the block per round */

static char *blk;
static volatile bool stop;
static volatile uint64_t issued;        /* CPU 2: stores started */
static volatile unsigned faulted;       /* write faults taken */
static volatile unsigned load_rounds;   /* part 2: newest round seen */
static volatile unsigned load_bad;
static volatile uint64_t loads;
static volatile unsigned published;     /* rounds main() has moved in */

/* The fault handler leaves the thread suspended: main() resumes it. */
static void hold(void *va, void *usr, TPPI_NodeId home)
{
    (void)va;
    (void)usr;
    (void)home;
    faulted++;
}

__attribute__((noinline)) static void stxr_loop(void *p, uint64_t v)
{
    uint64_t old;
    uint32_t fail;

    __asm__ volatile("1: ldxr %0, [%2]\n\t"
                     "stxr %w1, %3, [%2]\n\t"
                     "cbnz %w1, 1b"
                     : "=&r"(old), "=&r"(fail) : "r"(p), "r"(v) : "memory");
}

static void storer(void *arg)
{
    uint64_t k = 0;
    char *p = blk + 16;

    (void)arg;
    while (!stop) {
        k++;
        issued = k;
        switch (k % 8) {
        case 0:
            tt_str(p, k);
            break;
        case 1:
            tt_strb(p, (uint8_t)k);
            break;
        case 2:
            tt_stp(p, k, k);
            break;
        case 3:
            tt_st_q(p, k);
            break;
        case 4:
            tt_ldadd(p, 1);
            break;
        case 5:
            tt_swp(p, k);
            break;
        case 6:
            stxr_loop(p, k);
            break;
        case 7:
            tt_dc_zva(blk);
            break;
        }
    }
}

/* The block's bytes as memory holds them (through the alias). */
static void snapshot(uint8_t *out)
{
    memcpy(out, tt_alias(blk), TPPI_TAG_BLK_SIZE);
}

static uint64_t faults_now(void)
{
    struct tempest_stats s;

    tempest_get_stats(&s);
    return s.faults;
}

static void downgrades(void)
{
    static const TPPI_BlkTagChange down[] = {
        TPPI_Blk_Downgrade_RO, TPPI_Blk_Invalidate, TPPI_Blk_Mark_Busy,
    };
    uint8_t before[TPPI_TAG_BLK_SIZE], now[TPPI_TAG_BLK_SIZE];
    unsigned r, w, landed = 0, moved = 0, stalled = 0, raced = 0;
    uint64_t at, f0;

    for (r = 0; r < ROUNDS; r++) {
        at = issued;
        while (issued < at + 20) {
            /* let CPU 2 store for a while */
        }
        f0 = faults_now();
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, down[r % 3]);
        snapshot(before);
        /* Watch the block until CPU 2 has met the new tag, and then some. */
        for (w = 0; w < WATCH || (faults_now() == f0 && w < 100 * WATCH);
             w++) {
            snapshot(now);
            if (memcmp(before, now, sizeof(now)) != 0) {
                landed++;
                memcpy(before, now, sizeof(now));
            }
        }
        if (faults_now() != f0) {
            raced++;
        }
        at = issued;
        for (w = 0; w < WATCH; w++) {
            (void)tt_alias(blk)[0];
        }
        if (issued > at + 1) {
            stalled++;      /* CPU 2 went on storing: not suspended */
        }
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
        TPPI_resume_va(blk, TPPI_TAG_BLK_SIZE);
        at = issued;
        while (issued < at + 2) {
            /* its stores go on */
        }
        snapshot(now);
        if (memcmp(before, now, sizeof(now)) != 0) {
            moved++;
        }
    }
    /*
     * A fault resumed before its handler ran is not a handler call.  The
     * race was exercised in the rounds CPU 2 faulted while main() watched
     * (printed: the host's scheduling decides it).
     */
    printf("downgrades: %u rounds, race exercised (CPU 2 faulted while "
           "watched) in %u (%u handler calls), %u stores landed after a "
           "downgrade, %u rounds CPU 2 was not suspended, memory changed "
           "again after %u resumes\n",
           ROUNDS, raced, faulted, landed, stalled, moved);
    if (landed || stalled) {
        am_fail("%u stores landed after a downgrade had returned, CPU 2 "
                "kept storing in %u rounds", landed, stalled);
    }
}

/* Part 2: CPU 2 loads; each round's data arrives with Validate_RO. */
static void loader(void *arg)
{
    uint64_t v[TPPI_TAG_BLK_SIZE / 8];
    unsigned i, p;

    (void)arg;
    while (!stop) {
        p = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
        /* The whole block in one instruction (an LD1 of 4 registers). */
        __asm__ volatile("ld1 {v16.2d, v17.2d, v18.2d, v19.2d}, [%0]\n\t"
                         "st1 {v16.2d, v17.2d, v18.2d, v19.2d}, [%1]"
                         : : "r"(blk), "r"(v)
                         : "v16", "v17", "v18", "v19", "memory");
        loads++;
        for (i = 1; i < TPPI_TAG_BLK_SIZE / 8; i++) {
            if (v[i] != v[0]) {
                load_bad++;     /* torn: parts of two rounds */
            }
        }
        if (v[0] < load_rounds || v[0] < p) {
            load_bad++;         /* older than a round seen or published */
        }
        load_rounds = (unsigned)v[0];
    }
}

/* Retry at once: the loader keeps trying across the upgrade. */
static void release(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    faulted++;
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

static void upgrades(void)
{
    uint64_t data[TPPI_TAG_BLK_SIZE / 8];
    unsigned r, i, raced = 0;
    uint64_t at, f0;

    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, release);
    TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Invalidate);
    faulted = 0;
    stop = false;
    rt_cpu_call(2, loader, NULL);
    for (r = 1; r <= ROUNDS; r++) {
        for (i = 0; i < TPPI_TAG_BLK_SIZE / 8; i++) {
            data[i] = r;
        }
        /* The loader is faulting and retrying when the data comes. */
        f0 = faults_now();
        for (i = 0; i < 100000 && faults_now() < f0 + 2; i++) {
            /* wait */
        }
        if (faults_now() >= f0 + 2) {
            raced++;
        }
        TPPI_change_blk_acc_and_copy(blk, TPPI_TAG_BLK_SIZE,
                                     TPPI_Blk_Validate_RO, data);
        __atomic_store_n(&published, r, __ATOMIC_RELEASE);
        at = loads;
        while (loads < at + 3) {
            /* the loader sees it */
        }
        TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Invalidate);
    }
    TPPI_change_blk_acc(blk, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RO);
    stop = true;
    TPPI_resume_va(blk, TPPI_TAG_BLK_SIZE);
    rt_cpu_wait(2);
    printf("upgrades: %u rounds, race exercised (the loader faulting "
           "when the data came) in %u, %u read faults, %llu loads, newest "
           "round seen %u, %u bad loads\n", ROUNDS, raced, faulted,
           (unsigned long long)loads, load_rounds, load_bad);
    if (load_bad || load_rounds != ROUNDS) {
        am_fail("%u loads saw torn or old data (newest round %u)", load_bad,
                load_rounds);
    }
}

int main(void)
{
    if (rt_cpus_online() < 3) {
        am_fail("needs --smp 3");
        return am_finish("tags_race");
    }
    blk = tt_page(0) + 5 * TPPI_TAG_BLK_SIZE;
    TPPI_alloc_and_map(tt_page(0), MODE, TPPI_Blk_Writable, 0, NULL);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_ReadOnly,
                                        TPPI_WriteAccess, hold);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_WriteAccess, hold);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Busy,
                                        TPPI_WriteAccess, hold);
    /* LDXR and LDADD read before they write: loads must not stop them. */
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Busy,
                                        TPPI_ReadAccess, hold);
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, hold);
    rt_cpu_call(2, storer, NULL);
    downgrades();
    stop = true;
    rt_cpu_wait(2);
    upgrades();
    return am_finish("tags_race");
}
