/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 10 (graphics): InitTrace before StrataInit, SetState
 * returning the old state, RecordStates off and on, OutputStateLog, more
 * than STRATA_STATE_LOG changes (the buffer empties itself), and the
 * SetStateName extension; the launcher draws states.svg and trace.json.
 * State 9 is entered only while recording is off, so it never appears.
 */
#include "strata-util.h"
#include "tempest/rt.h"

static void busy_us(unsigned us)
{
    uint64_t t0 = rt_time_ns();

    while (rt_time_ns() - t0 < (uint64_t)us * 1000) {
        /* work */
    }
}

int main(void)
{
    int i;

    InitTrace("states.sim", "state test");
    StrataInit();
    CHECK(SetStateName(8, "compute", "#123456") == 0, "SetStateName");
    CHECK(SetStateName(10, "exchange", NULL) == 0, "default colour");
    CHECK(SetStateName(16, "x", NULL) == -1 && SetStateName(-1, "x", NULL)
          == -1 && SetStateName(3, "", NULL) == -1 &&
          SetStateName(3, NULL, NULL) == -1 &&
          SetStateName(3, "x", "red") == -1 &&
          SetStateName(3, "x", "#12345g") == -1, "bad SetStateName");
    CHECK(SetState(STATE_BUSY) == STATE_IDLE, "first SetState");
    busy_us(2000 + 500 * (unsigned)Self);
    CHECK(SetState(8) == STATE_BUSY, "SetState returns the old state");
    busy_us(3000);
    CHECK(SetState(99) == 8 && SetState(-1) == 8, "bad states ignored");
    CHECK(RecordStates(False) == True, "RecordStates(False)");
    SetState(9);
    busy_us(1000);
    SetState(8);
    CHECK(RecordStates(True) == False, "RecordStates(True)");
    SetState(10);
    busy_us(2000);
    Barrier();
    OutputStateLog();
    for (i = 0; i < 3000; i++) {
        SetState(i % 2 ? 8 : 10);
    }
    SetState(STATE_IDLE);
    busy_us(1000);
    st_finish("strata_states");
}
