/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Strata benchmark of 'scripts/tempest bench strata' (any number of
 * nodes): node 0 measures, on the cycle counter (1 GHz), the mean time of
 *   - Barrier(), ROUNDS times in a row on every node;
 *   - CombineInt(x, ReduceAdd), the same;
 *   - one Broadcast: node 0 and the last node broadcast in turn (every
 *     other node receives both), ROUNDS round trips, halved;
 *   - and, as the reference of the same run, the round trip of an active
 *     message between node 0 and the last node (SendLeftPollBoth there, a
 *     reply with SendBothRLPollRight from the handler), both polling,
 *     ROUNDS times, while the other nodes wait in a barrier;
 * each measured right after the same phase unmeasured (timed()), and
 * prints one line:
 *   strata_bench: nodes=N rounds=R barrier_ns=N combine_ns=N bcast_ns=N
 *   am_rtt_ns=N barrier_slept=N barrier_woken=N barrier_waited=N
 *   shared=0|1 spin_us=N polled=N spun=N yields=N
 * (barrier_slept and _woken: how many of node 0's 2 x ROUNDS + 3 barriers
 * of the Barrier phases ended with its vCPU asleep on the shared area's
 * DONE word, and by its waiter thread: COLL_SLEPT and COLL_WOKEN, node
 * controller 1.17; barrier_waited: in a register read, COLL_WAITED,
 * 1.21); shared: 1 in strata_bench_shared.elf, this program linked with
 * libtempest, whose rings libstrata then shares (its protocol thread
 * runs, idle: docs/strata.rst, "Strata with libtempest"); spin_us: the
 * node controller's SPIN_US hint; polled: shared, how many times node 0's
 * polls of the measured round trips ran libtempest's protocol work
 * themselves (tempest_client_poll; 0 in strata_bench.elf), where the
 * interrupt would have run it (docs/strata.rst, "Strata's messages,
 * shared"); spun: shared, how many of node 0's waits in the whole run
 * ended in their own spin on a node with a dedicated protocol thread
 * (tempest_client_spin_wait; docs/strata.rst, "Strata's waits, shared,
 * with --smp 2"); yields: shared, how many times in the whole run node
 * 0's protocol thread slept while the program's polls spun for it
 * (docs/tempest.rst, "A client's polls spin for the thread").
 * Usage: strata_bench [ROUNDS [SPIN_US]]   (default 500; SPIN_US: see
 * StrataSetSpin())
 */
#include <stdbool.h>
#include <stdlib.h>

#include "strata.h"
#include "tempest/nc.h"
#ifdef STRATA_BENCH_SHARED
#include "tempest.h"
#include "tempest/client.h"

/* The reference that links libtempest (libstrata's is weak). */
static int (*const link_tempest)(const struct tempest_client *)
    __attribute__((used)) = tempest_client_register;
#define SHARED 1
#else
#define SHARED 0
#endif

/*
 * libtempest's counts (0 alone): polls that ran its protocol work,
 * Strata's waits that ended in their own spin, and the protocol thread's
 * sleeps while Strata's polls spun for it.
 */
enum client_stat { POLLS, SPINS, YIELDS };

static unsigned long long client_stat(enum client_stat which)
{
#if SHARED
    struct tempest_stats st;

    tempest_get_stats(&st);
    return which == SPINS ? st.client_spins :
           which == YIELDS ? st.poll_yields : st.client_polls;
#else
    (void)which;
    return 0;
#endif
}

static volatile int pongs;      /* volatile: set by handlers */
static volatile int stop;       /* volatile: counted by handlers */

static void pong(void)
{
    pongs++;
}

static void ping(int src)
{
    SendBothRLPollRight(src, pong);
}

static void stop_h(void)
{
    stop++;
}

static DoubleWord per_round_ns(DoubleWord start, int rounds)
{
    return (CurrentCycle64() - start) * (1000000000ULL / STRATA_CYCLE_HZ) /
           (DoubleWord)rounds;
}

static int rounds;
static int last;
static int sum;

static void barriers(void)
{
    int i;

    for (i = 0; i < rounds; i++) {
        Barrier();
    }
}

static void combines(void)
{
    int i;

    for (i = 0; i < rounds; i++) {
        sum += CombineInt(i, ReduceAdd);
    }
}

static void broadcasts(void)
{
    int i;

    for (i = 0; i < rounds; i++) {
        if (Self == 0) {
            Broadcast((Word)i);
        } else {
            sum += (int)ReceiveBroadcast();
        }
        if (Self == last) {
            Broadcast((Word)i);
        } else {
            sum += (int)ReceiveBroadcast();
        }
    }
}

/*
 * Node 0 and the last node: ROUNDS round trips; the rest in a barrier.
 * Counts, not flags: a handler of the next phase may run in the barrier
 * between the phases.
 */
static void round_trips(void)
{
    static int phase;
    int i, base = pongs;

    phase++;
    if (Self == 0) {
        for (i = 0; i < rounds; i++) {
            SendLeftPollBoth(last, ping, Self);
            while (pongs - base <= i) {
                PollBothTilEmpty();
            }
        }
        SendLeftPollBoth(last, stop_h);
    } else if (Self == last) {
        while (stop < phase) {
            PollBothTilEmpty();
        }
    }
}

/*
 * The mean time of one round of @phase (ns, on node 0), measured after
 * the same phase once unmeasured: the first rounds of a path pay for
 * TCG translating its code and for first touches of the receive queue's
 * memory (2026-11-29: 300 AM round trips cold took 17-26 us each, 3000
 * after them 6.5-9.6 us), so the figures compare warm paths.
 */
static DoubleWord timed(void (*phase)(void), int halve)
{
    DoubleWord t;

    Barrier();
    phase();
    Barrier();
    t = CurrentCycle64();
    phase();
    t = per_round_ns(t, rounds) / (DoubleWord)halve;
    Barrier();
    return t;
}

int main(int argc, char **argv)
{
    uint32_t slept, woken, waited;
    DoubleWord barrier_ns, combine_ns, bcast_ns = 0, am_ns = 0;
    unsigned long long polled = 0;

    StrataInit();
    rounds = argc > 1 ? atoi(argv[1]) : 500;
    if (argc > 2) {
        StrataSetSpin((unsigned)atoi(argv[2]));
    }
    if (rounds < 1) {
        StrataFail("usage: strata_bench [ROUNDS (1 or more)]");
    }
    last = PartitionSize - 1;

    slept = nc_reg(TEMPEST_NC_COLL_SLEPT);
    woken = nc_reg(TEMPEST_NC_COLL_WOKEN);
    waited = nc_reg(TEMPEST_NC_COLL_WAITED);
    barrier_ns = timed(barriers, 1);
    slept = nc_reg(TEMPEST_NC_COLL_SLEPT) - slept;
    woken = nc_reg(TEMPEST_NC_COLL_WOKEN) - woken;
    waited = nc_reg(TEMPEST_NC_COLL_WAITED) - waited;
    combine_ns = timed(combines, 1);
    if (last > 0) {
        bcast_ns = timed(broadcasts, 2);
        polled = client_stat(POLLS);
        am_ns = timed(round_trips, 1);
        polled = client_stat(POLLS) - polled;
    }

    if (Self == 0) {
        printf("strata_bench: nodes=%d rounds=%d barrier_ns=%llu "
               "combine_ns=%llu bcast_ns=%llu am_rtt_ns=%llu "
               "barrier_slept=%u barrier_woken=%u barrier_waited=%u "
               "shared=%d spin_us=%u polled=%llu spun=%llu yields=%llu\n",
               PartitionSize, rounds, (unsigned long long)barrier_ns,
               (unsigned long long)combine_ns, (unsigned long long)bcast_ns,
               (unsigned long long)am_ns, (unsigned)slept, (unsigned)woken,
               (unsigned)waited, SHARED, nc_spin_us(0), polled,
               client_stat(SPINS), client_stat(YIELDS));
    }
    StrataExit(0);
}
