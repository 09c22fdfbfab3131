/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the lock of a receive queue that peers write straight
 * into (hw/tempest/rq-lock.h, the code the device runs; docs/fabric.rst,
 * "Straight into the receiver's RQ"): the lock word, each state a writer
 * can die in and what the receiver makes of it, and several writer
 * processes and a receiver that also writes, on one RQ in shared memory,
 * with and without a writer killed in the middle.
 */
#include <glib.h>

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rq-lock.h"

#define SLOTS           16
#define SLOT_SIZE       64
#define MAX_LEN         (SLOT_SIZE - 8)
#define WRITERS         3
#define RECEIVER        7               /* the receiver's node number */
#define ALARM_SECONDS   30

/* What the processes share: the receiver's line, its RQ, the records. */
typedef struct Shared {
    RqLine line;
    RqRecord rec[WRITERS];
    uint32_t go;
    uint32_t wake;              /* the sleep test: writers wake and wait */
    uint32_t taken[WRITERS];    /* ... for what the receiver took */
    uint8_t rq[SLOTS][SLOT_SIZE];
} Shared;

/* A slot: CTL, then writer, its number k, and a check word. */
enum { S_CTL = 0, S_WRITER = 4, S_K = 8, S_CHECK = 12 };

static uint32_t *slot_ctl(Shared *sh, uint32_t t)
{
    return (uint32_t *)sh->rq[t & (SLOTS - 1)];
}

static uint32_t check_of(uint32_t w, uint32_t k)
{
    return (w * 0x9e3779b9U) ^ (k * 0x85ebca6bU) ^ 0x5bd1e995U;
}

static Shared *shared_new(void)
{
    Shared *sh = mmap(NULL, sizeof(Shared), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    g_assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    sh->line.slots = SLOTS;
    sh->line.slot_size = SLOT_SIZE;
    return sh;
}

/* Where writer 0 kills itself in write_one(), for the death tests. */
enum {
    DIE_NEVER, DIE_TAKEN, DIE_CLAIMED, DIE_WRITTEN, DIE_RECORDED, DIE_VALID,
};
static unsigned die_step;
static uint32_t die_k;

static void maybe_die(unsigned w, uint32_t k, unsigned step)
{
    if (w == 0 && k == die_k && step == die_step) {
        raise(SIGKILL);
    }
}

/*
 * Put packet k of writer w into the RQ under the lock: one attempt, as
 * the device makes (false: the lock was held or the slot not free).
 */
static bool write_one(Shared *sh, unsigned w, uint32_t k)
{
    uint32_t t, *ctl, v = RQ_VALID | 12;
    uint8_t *s;

    if (!rq_take(&sh->line, w, &t, NULL)) {
        return false;
    }
    maybe_die(w, k, DIE_TAKEN);
    ctl = slot_ctl(sh, t);
    if (!rq_claim(ctl)) {
        g_assert_true(rq_swap(&sh->line, rq_word(w + 1, t), rq_word(0, t)));
        return false;
    }
    maybe_die(w, k, DIE_CLAIMED);
    s = (uint8_t *)ctl;
    memcpy(s + S_WRITER, &w, 4);
    memcpy(s + S_K, &k, 4);
    *(uint32_t *)(s + S_CHECK) = check_of(w, k);
    maybe_die(w, k, DIE_WRITTEN);
    if (w == RECEIVER) {
        /* The receiver's own writes: no record (nobody finishes them). */
        __atomic_store_n(ctl, v, __ATOMIC_RELEASE);
    } else if (w == 0 && k == die_k && die_step == DIE_RECORDED) {
        /* rq_complete() up to its last store */
        sh->rec[w].direct[k & 1]++;
        sh->rec[w].ctl = v;
        __atomic_store_n(&sh->rec[w].slot, t + 1, __ATOMIC_RELEASE);
        raise(SIGKILL);
    } else {
        rq_complete(&sh->rec[w], ctl, t, v, k & 1);
    }
    maybe_die(w, k, DIE_VALID);
    return rq_swap(&sh->line, rq_word(w + 1, t), rq_word(0, t + 1));
}

/* ---- single process ------------------------------------------------- */

static void test_layout(void)
{
    g_assert_cmpuint(sizeof(RqLine), ==, 32);
    g_assert_cmpuint(offsetof(RqLine, lock), ==, 0);
    g_assert_cmpuint(offsetof(RqLine, sleeper), ==, 24);
    g_assert_cmpuint(sizeof(RqRecord), ==, 16);
    g_assert_cmphex(rq_word(3, 0xfffffffeU), ==, 0x3fffffffeULL);
    g_assert_cmpuint(rq_holder1(rq_word(3, 9)), ==, 3);
    g_assert_cmpuint(rq_tail(rq_word(3, 9)), ==, 9);
    g_assert_cmphex(RQ_BUSY & RQ_VALID, ==, 0);
}

static void test_take(void)
{
    Shared *sh = shared_new();
    uint32_t t = 99;
    uint64_t seen;

    sh->line.lock = rq_word(0, 5);
    g_assert_true(rq_take(&sh->line, 2, &t, &seen));
    g_assert_cmpuint(t, ==, 5);
    g_assert_cmphex(sh->line.lock, ==, rq_word(3, 5));
    /* Held: nobody else takes it, and says who holds it */
    t = 99;
    g_assert_false(rq_take(&sh->line, 1, &t, &seen));
    g_assert_cmpuint(t, ==, 99);
    g_assert_cmphex(seen, ==, rq_word(3, 5));
    /* Only the holder's word moves it */
    g_assert_false(rq_swap(&sh->line, rq_word(2, 5), rq_word(0, 6)));
    g_assert_true(rq_swap(&sh->line, rq_word(3, 5), rq_word(0, 6)));
    g_assert_cmphex(sh->line.lock, ==, rq_word(0, 6));
    /* The tail wraps at 32 bits */
    sh->line.lock = rq_word(0, 0xffffffffU);
    g_assert_true(write_one(sh, 0, 0));
    g_assert_cmphex(sh->line.lock, ==, rq_word(0, 0));
    g_assert_cmpuint(sh->rec[0].slot, ==, 0);     /* t + 1 wrapped */
    munmap(sh, sizeof(*sh));
}

static void test_claim(void)
{
    Shared *sh = shared_new();
    uint32_t *ctl = slot_ctl(sh, 0);

    g_assert_true(rq_claim(ctl));
    g_assert_cmphex(*ctl, ==, RQ_BUSY);
    g_assert_false(rq_claim(ctl));
    rq_unclaim(ctl);
    g_assert_cmphex(*ctl, ==, 0);
    /* A slot the guest has not freed */
    *ctl = RQ_VALID | 3;
    g_assert_false(rq_claim(ctl));
    g_assert_cmphex(*ctl, ==, RQ_VALID | 3);
    /* A full RQ: the writer lets go with the tail unchanged */
    sh->line.lock = rq_word(0, SLOTS);
    g_assert_false(write_one(sh, 1, 0));
    g_assert_cmphex(sh->line.lock, ==, rq_word(0, SLOTS));
    g_assert_cmpuint(sh->rec[1].direct[0], ==, 0);
    munmap(sh, sizeof(*sh));
}

/*
 * A writer dies holding the lock at tail t, at each step of a write:
 * what the receiver finishes, and that the guest then finds either a
 * whole packet at t or a free slot (never one it would wait at).
 */
static void test_resolve(void)
{
    const uint32_t t = 41, v = RQ_VALID | 12;
    struct {
        const char *when;
        uint32_t ctl;           /* slot t's CTL as it died */
        uint32_t rec_slot;      /* its record */
        uint32_t rec_ctl;
        uint32_t want_tail;
        uint32_t want_ctl;
    } cases[] = {
        { "after taking the lock", 0, 0, 0, t, 0 },
        { "after claiming the slot", RQ_BUSY, 0, 0, t, 0 },
        { "with an old record", RQ_BUSY, t, v, t, 0 },
        { "after recording it complete", RQ_BUSY, t + 1, v, t + 1, v },
        { "after making it VALID", v, t + 1, v, t + 1, v },
        { "after the guest took it", 0, t + 1, v, t + 1, 0 },
        { "recording a CTL too long", RQ_BUSY, t + 1, RQ_VALID | 999, t, 0 },
        { "recording a CTL without VALID", RQ_BUSY, t + 1, 12, t, 0 },
        /* (not a writer's: the guest's own word, left as it is) */
        { "leaving a CTL no writer writes", 0x1234, t + 1, v, t, 0x1234 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint32_t ctl = cases[i].ctl;
        RqRecord rec = { .slot = cases[i].rec_slot, .ctl = cases[i].rec_ctl };

        g_test_message("a writer dead %s", cases[i].when);
        g_assert_cmpuint(rq_resolve(&ctl, &rec, t, MAX_LEN), ==,
                         cases[i].want_tail);
        g_assert_cmphex(ctl, ==, cases[i].want_ctl);
        g_assert_true(!(ctl & RQ_BUSY));
    }
}

/* ---- several processes ---------------------------------------------- */

/*
 * Writer w: packets 0 .. n-1 (or until killed), one at a time.  With
 * sh->wake (the sleep test), after each it wakes the receiver if
 * rq_sleeper() says it sleeps, and waits until the packet is taken.
 */
static G_NORETURN void writer(Shared *sh, unsigned w, uint32_t n)
{
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {
        sched_yield();
    }
    for (uint32_t k = 0; k < n; k++) {
        while (!write_one(sh, w, k)) {
            sched_yield();
        }
        if (!sh->wake) {
            continue;
        }
        if (rq_sleeper(&sh->line)) {
            syscall(SYS_futex, rq_tail_word(&sh->line), FUTEX_WAKE, 1,
                    NULL, NULL, 0);
        }
        while (__atomic_load_n(&sh->taken[w], __ATOMIC_ACQUIRE) <= k) {
            sched_yield();
        }
    }
    _exit(0);
}

static void on_alarm(int sig)
{
    (void)sig;
    g_error("no progress for %d s: a slot the receiver waits at", 
            ALARM_SECONDS);
}

/*
 * If writer 0 (pid) is dead, finish what it left under the lock, as the
 * device does when its link closes: true once it is.
 */
static bool finish_dead(Shared *sh, pid_t pid)
{
    uint64_t word;
    uint32_t t;
    int st;

    if (waitpid(pid, &st, WNOHANG) != pid) {
        return false;
    }
    /* (Killed from outside, it may have finished first.) */
    g_assert_true((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
                  (!die_step && WIFEXITED(st) && WEXITSTATUS(st) == 0));
    word = rq_load(&sh->line);
    if (rq_holder1(word) == 1) {
        t = rq_resolve(slot_ctl(sh, rq_tail(word)), &sh->rec[0],
                       rq_tail(word), MAX_LEN);
        g_test_message("writer 0 died holding the lock at tail %u: tail %u",
                       rq_tail(word), t);
        g_assert_true(rq_swap(&sh->line, word, rq_word(0, t)));
    } else {
        g_test_message("writer 0 died not holding the lock");
    }
    return true;
}

/*
 * Fork the WRITERS writer processes (each runs writer(sh, w, n)), arm
 * the alarm that fails a test that stops making progress, and let them
 * go.
 */
static void start_writers(Shared *sh, pid_t *pid, uint32_t n)
{
    struct sigaction sa = { .sa_handler = on_alarm };

    g_assert_cmpint(sigaction(SIGALRM, &sa, NULL), ==, 0);
    fflush(stdout);
    fflush(stderr);
    for (unsigned w = 0; w < WRITERS; w++) {
        pid[w] = fork();
        g_assert_cmpint(pid[w], >=, 0);
        if (pid[w] == 0) {
            alarm(ALARM_SECONDS + 5);
            writer(sh, w, n);
        }
    }
    alarm(ALARM_SECONDS);
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
}

/*
 * WRITERS processes write n packets each while the receiver takes them
 * in order (as the guest: wait for VALID at its head, read, free) and
 * writes packets of its own under the lock.  kill_at: after taking that
 * many packets, kill writer 0 (SIGKILL, wherever it is) and finish what
 * it held, as the device does when its link closes; die_step: writer 0
 * kills itself there, and the receiver finishes what it held once it
 * sees it dead.  Every writer's packets arrive whole, once each, in
 * order; a dead one's are a prefix.  Returns how many of writer 0's
 * arrived.
 */
static uint32_t run_writers(uint32_t n, uint32_t kill_at)
{
    Shared *sh = shared_new();
    pid_t pid[WRITERS];
    uint32_t next[WRITERS + 1] = { 0 }, head = 0, own = 0, got = 0;
    uint32_t own_n = n / 4;
    bool killed = false;

    start_writers(sh, pid, n);
    for (;;) {
        uint32_t *ctl = slot_ctl(sh, head);
        uint32_t c = __atomic_load_n(ctl, __ATOMIC_ACQUIRE), w, k;
        uint8_t *s = (uint8_t *)ctl;
        bool writers = killed || next[0] == n;

        for (unsigned i = 1; i < WRITERS; i++) {
            writers = writers && next[i] == n;
        }
        if (writers && own == own_n && next[WRITERS] == own_n &&
            !(c & RQ_VALID)) {
            break;      /* (a killed writer sends no more) */
        }
        /* Ours now and then, and all that are left once theirs are in */
        if (own < own_n && ((head & 7) == 0 || writers) &&
            write_one(sh, RECEIVER, own)) {
            own++;
        }
        if (!(c & RQ_VALID)) {
            if (die_step && !killed) {
                killed = finish_dead(sh, pid[0]);
            }
            sched_yield();
            continue;
        }
        g_assert_cmphex(c, ==, RQ_VALID | 12);
        memcpy(&w, s + S_WRITER, 4);
        memcpy(&k, s + S_K, 4);
        g_assert_cmphex(*(uint32_t *)(s + S_CHECK), ==, check_of(w, k));
        if (w == RECEIVER) {
            g_assert_cmpuint(k, ==, next[WRITERS]);
            next[WRITERS]++;
        } else {
            g_assert_cmpuint(w, <, WRITERS);
            g_assert_cmpuint(k, ==, next[w]);
            next[w]++;
        }
        memset(s + 4, 0, SLOT_SIZE - 4);
        __atomic_store_n(ctl, 0, __ATOMIC_RELEASE);   /* the guest frees it */
        head++;
        got++;
        if (got == kill_at && !killed) {
            kill(pid[0], SIGKILL);
            while (!(killed = finish_dead(sh, pid[0]))) {
                sched_yield();
            }
        }
    }
    alarm(0);
    for (unsigned w = killed ? 1 : 0; w < WRITERS; w++) {
        int st;

        g_assert_cmpint(waitpid(pid[w], &st, 0), ==, pid[w]);
        g_assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        g_assert_cmpuint(next[w], ==, n);
    }
    g_assert_cmpuint(next[WRITERS], ==, own_n);
    if (killed) {
        /* What it wrote before it died, whole and once: a prefix. */
        g_assert_cmpuint(next[0], <=, n);
        g_test_message("writer 0 got %u of %u packets in", next[0], n);
    }
    /* Nothing left behind, and the lock free at the receiver's head */
    for (uint32_t i = 0; i < SLOTS; i++) {
        g_assert_cmphex(*slot_ctl(sh, i), ==, 0);
    }
    g_assert_cmphex(rq_load(&sh->line), ==, rq_word(0, head));
    munmap(sh, sizeof(*sh));
    return next[0];
}

/*
 * The receiver sleeps on the tail (a futex, with no time limit) whenever
 * its RQ is empty, saying so first (rq_sleep_begin); each writer, having
 * let go with the tail moved, wakes it if rq_sleeper() says it sleeps,
 * and then waits until the receiver has taken that packet before it
 * writes the next, so nothing else would wake the receiver: a wake-up
 * lost between the two sides hangs the test (the alarm fails it).
 */
static void test_sleep(void)
{
    const uint32_t n = 3000;
    Shared *sh = shared_new();
    pid_t pid[WRITERS];
    uint32_t next[WRITERS] = { 0 }, head = 0, sleeps = 0;

    sh->wake = 1;
    start_writers(sh, pid, n);
    while (head < WRITERS * n) {
        uint32_t *ctl = slot_ctl(sh, head), w, k, t;
        uint8_t *s = (uint8_t *)ctl;

        if (rq_tail(rq_load(&sh->line)) == head) {
            t = rq_sleep_begin(&sh->line);
            if (t == head) {
                syscall(SYS_futex, rq_tail_word(&sh->line), FUTEX_WAIT, t,
                        NULL, NULL, 0);
                sleeps++;
            }
            rq_sleep_end(&sh->line);
            continue;
        }
        /* The tail moves only once the slot is VALID. */
        g_assert_cmphex(__atomic_load_n(ctl, __ATOMIC_ACQUIRE), ==,
                        RQ_VALID | 12);
        memcpy(&w, s + S_WRITER, 4);
        memcpy(&k, s + S_K, 4);
        g_assert_cmpuint(w, <, WRITERS);
        g_assert_cmphex(*(uint32_t *)(s + S_CHECK), ==, check_of(w, k));
        g_assert_cmpuint(k, ==, next[w]);
        next[w]++;
        memset(s + 4, 0, SLOT_SIZE - 4);
        __atomic_store_n(ctl, 0, __ATOMIC_RELEASE);
        head++;
        __atomic_store_n(&sh->taken[w], next[w], __ATOMIC_RELEASE);
    }
    alarm(0);
    for (unsigned w = 0; w < WRITERS; w++) {
        int st;

        g_assert_cmpint(waitpid(pid[w], &st, 0), ==, pid[w]);
        g_assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        g_assert_cmpuint(next[w], ==, n);
    }
    g_test_message("%u packets, the receiver slept %u times", head, sleeps);
    munmap(sh, sizeof(*sh));
}

static void test_writers(void)
{
    run_writers(20000, UINT32_MAX);
}

static void test_writer_killed(void)
{
    /* Killed from outside, at a different point of its loop each time. */
    for (uint32_t at = 1000; at < 1000 + 5 * 777; at += 777) {
        run_writers(4000, at);
    }
}

/* Writer 0 dies at each step of its packet 1000: what gets in. */
static void test_writer_dies(void)
{
    static const struct {
        unsigned step;
        uint32_t got;       /* its packets the receiver takes */
    } cases[] = {
        { DIE_TAKEN, 1000 },
        { DIE_CLAIMED, 1000 },
        { DIE_WRITTEN, 1000 },
        { DIE_RECORDED, 1001 },
        { DIE_VALID, 1001 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        die_step = cases[i].step;
        die_k = 1000;
        g_assert_cmpuint(run_writers(4000, UINT32_MAX), ==, cases[i].got);
    }
    die_step = DIE_NEVER;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rq-lock/layout", test_layout);
    g_test_add_func("/rq-lock/take", test_take);
    g_test_add_func("/rq-lock/claim", test_claim);
    g_test_add_func("/rq-lock/resolve", test_resolve);
    g_test_add_func("/rq-lock/writers", test_writers);
    g_test_add_func("/rq-lock/writer-killed", test_writer_killed);
    g_test_add_func("/rq-lock/writer-dies", test_writer_dies);
    g_test_add_func("/rq-lock/sleep", test_sleep);
    return g_test_run();
}
