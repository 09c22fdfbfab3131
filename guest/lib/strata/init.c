/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata: the calls that involve every layer of the library, its top
 * (see strata-internal.h): StrataInit and StrataExit (section 3.5) with
 * the exit protocol, ResetCurrentCycle (9.4) and OutputStateLog (10).
 * Each calls down: the core for this node's part, then the data network,
 * the control network and the debugging layer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "strata-internal.h"

static bool exit_drained(void *arg)
{
    (void)arg;
    return strata_sends_drained();
}

/*
 * The end of StrataExit(0): write out what is queued, then idle, handling
 * messages, until every node is here and no message is in flight: rounds
 * of (sent, received) sums until two rounds agree and the sums are equal.
 */
static void exit_protocol(void)
{
    uint64_t in[2], out[2], prev[2] = { ~0ULL, ~0ULL };

    strata_exiting = true;
    EmptyPrintQ();
    strata_trace_flush();
    strata_coll_finish_pending();
    strata_wait(exit_drained, NULL, POLL_BOTH, true);
    for (;;) {
        PollBothTilEmpty();
        in[0] = strata_pkts_sent;
        in[1] = strata_pkts_received;
        strata_coll_u64(TEMPEST_COLL_UADD, TEMPEST_COLL_REDUCE, in, out, 2);
        if (out[0] == out[1] && out[0] == prev[0] && out[1] == prev[1]) {
            break;
        }
        prev[0] = out[0];
        prev[1] = out[1];
    }
    fflush(stdout);
}

static void at_exit(void)
{
    /*
     * main() returned, or exit() was called outside strata.h's macro:
     * StrataExit(0)'s protocol, keeping the status exit() was given.
     */
    if (!strata_exiting && strata_ready) {
        exit_protocol();
    }
}

void StrataInit(void)
{
    if (strata_ready) {
        return;
    }
    strata_core_init();
    strata_data_init();
    strata_control_init();
    strata_core_start();
    SetAsyncGlobalOR(True);
    atexit(at_exit);
    Barrier();
    /* With every node running: the conditions timings will see. */
    strata_set_origin(true);
    strata_trace_origin();
}

NORETURN StrataExit(int code)
{
    if (code != 0 || strata_exiting || !strata_ready) {
        strata_exit_now(code);
    }
    exit_protocol();
    exit(0);
}

void ResetCurrentCycle(void)
{
    strata_require("ResetCurrentCycle");
    Barrier();
    strata_set_origin(false);
    strata_trace_origin();
}

void OutputStateLog(void)
{
    strata_require("OutputStateLog");
    strata_trace_flush();
    Barrier();
}
