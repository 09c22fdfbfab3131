/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata: debugging (section 9: the print queue, the log, the Log*
 * switches) and state graphs (section 10), through the launcher's console
 * records: a line starting with the byte 0x1e is for the launcher
 * (scripts/lib/tempestlib/stategraph.py), not shown:
 *   RS "LOG " text                    a line of the run's strata.log
 *   RS "STATE-NAME " i " #rrggbb " name   names state i
 *   RS "STATE " time_ns " " i         this node entered state i (-1:
 *                                     recording stopped: a gap)
 * Times are nanoseconds of the generic timer since the time origin (the
 * end of StrataInit's barrier, or the last ResetCurrentCycle), which every
 * node passes within a few network hops of the others.  The runtime
 * writes each line whole under the console lock.
 *
 * Above the core only (strata-internal.h): the core flushes the print
 * queue and writes StrataFail's log line through what debug_register()
 * gives it; OutputStateLog, which takes a barrier, is in init.c.
 */
#include <string.h>

#include "strata-internal.h"

#define RS                  "\x1e"
#define QUEUE_BYTES         65536
#define QUEUE_MSGS          1024
#define LOG_TEXT            200

Bool StrataLogging = STRATA_DEBUG_BUILD;
Bool LogBarrier;
Bool LogBroadcast;
Bool LogCombine;
Bool LogQprintf;

static char queue_buf[QUEUE_BYTES];
static FILE *queue_out[QUEUE_MSGS];
static size_t queue_used;
char *StrataQueue = queue_buf;
int StrataQueueLength;

struct state_rec {
    uint64_t ticks;
    int8_t state;           /* -1: recording stopped here */
};

static struct state_rec state_log[STRATA_STATE_LOG];
static unsigned state_count;
static int cur_state;
static bool tracing;
static bool recording = true;
static uint32_t states_used;    /* states recorded here */
static uint32_t names_sent;     /* states whose names went out */

static struct {
    const char *name;
    char colour[8];
} state_names[STRATA_MAX_STATES] = {
    [STATE_IDLE] = { "idle", "#bab0ac" },
    [STATE_BUSY] = { "busy", "#59a14f" },
    [STATE_LOGGING] = { "logging", "#9c755f" },
    [STATE_QPRINTF] = { "Qprintf", "#b07aa1" },
    [STATE_EMPTYPRINTQ] = { "EmptyPrintQ", "#ff9da7" },
    [STATE_BROADCAST] = { "broadcasting", "#edc948" },
    [STATE_COMBINE] = { "combine", "#4e79a7" },
    [STATE_BARRIER] = { "barrier", "#e15759" },
};

static const char *const default_colours[] = {
    "#76b7b2", "#f28e2b", "#8cd17d", "#499894", "#d37295", "#fabfd2",
    "#79706e", "#d4a6c8",
};

/* ---- 9.1 Printing in handlers ------------------------------------------- */

static int queue_vprintf(FILE *out, const char *format, va_list ap)
{
    va_list aq;
    size_t room;
    int n;

    va_copy(aq, ap);
    room = QUEUE_BYTES - queue_used;
    n = vsnprintf(queue_buf + queue_used, room, format, ap);
    if (n < 0) {
        va_end(aq);
        return n;
    }
    if ((size_t)n >= room || StrataQueueLength == QUEUE_MSGS) {
        queue_buf[queue_used] = '\0';
        EmptyPrintQ();
        room = QUEUE_BYTES;
        n = vsnprintf(queue_buf, room, format, aq);
        if ((size_t)n >= room) {
            /* Longer than the whole queue: out at once. */
            fputs(queue_buf, out ? out : stdout);
            queue_buf[0] = '\0';
            va_end(aq);
            return n;
        }
    }
    va_end(aq);
    queue_out[StrataQueueLength++] = out;
    queue_used += (size_t)n + 1;
    STRATA_DBG_LOG(LogQprintf, "Qprintf: %s",
                   queue_buf + queue_used - n - 1);
    return n;
}

int Qprintf(const char *format, ...)
{
    va_list ap;
    int n;

    STRATA_DBG_ENTER(STATE_QPRINTF);
    va_start(ap, format);
    n = queue_vprintf(stdout, format, ap);
    va_end(ap);
    STRATA_DBG_LEAVE();
    return n;
}

int Qfprintf(FILE *out, const char *format, ...)
{
    va_list ap;
    int n;

    STRATA_DBG_ENTER(STATE_QPRINTF);
    va_start(ap, format);
    n = queue_vprintf(out ? out : stdout, format, ap);
    va_end(ap);
    STRATA_DBG_LEAVE();
    return n;
}

int EmptyPrintQ(void)
{
    int i, n = StrataQueueLength;
    const char *s = queue_buf;

    STRATA_DBG_ENTER(STATE_EMPTYPRINTQ);
    /* Reset first: a message printed below cannot queue behind itself. */
    StrataQueueLength = 0;
    queue_used = 0;
    for (i = 0; i < n; i++) {
        fputs(s, queue_out[i]);
        s += strlen(s) + 1;
    }
    if (n) {
        fflush(stdout);
    }
    STRATA_DBG_LEAVE();
    return n;
}

/* ---- 9.3 Logging -------------------------------------------------------- */

static void strata_vlog(const char *fmt, va_list ap)
{
    char text[LOG_TEXT + 1];
    int i;

    vsnprintf(text, sizeof(text), fmt, ap);
    for (i = 0; text[i]; i++) {
        if (text[i] == '\n' || text[i] == '\r' || text[i] == '\x1e') {
            text[i] = ' ';
        }
    }
    printf(RS "LOG %s\n", text);
}

void StrataLog(const char *fmt, ...)
{
    va_list ap;

    STRATA_DBG_ENTER(STATE_LOGGING);
    va_start(ap, fmt);
    strata_vlog(fmt, ap);
    va_end(ap);
    STRATA_DBG_LEAVE();
}

/* ---- 10 Graphics -------------------------------------------------------- */

static bool colour_ok(const char *c)
{
    int i;

    if (c == NULL || c[0] != '#' || strlen(c) != 7) {
        return false;
    }
    for (i = 1; i < 7; i++) {
        if (!((c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'f') ||
              (c[i] >= 'A' && c[i] <= 'F'))) {
            return false;
        }
    }
    return true;
}

int SetStateName(int state, const char *name, const char *colour)
{
    if (state < 0 || state >= STRATA_MAX_STATES || name == NULL ||
        !name[0] || (colour && !colour_ok(colour))) {
        return -1;
    }
    state_names[state].name = name;
    strcpy(state_names[state].colour,
           colour ? colour : default_colours[state % 8]);
    names_sent &= ~(1U << state);
    return 0;
}

/* The names of the states this node used, once each. */
static void send_names(void)
{
    int i;

    for (i = 0; i < STRATA_MAX_STATES; i++) {
        if ((states_used & ~names_sent & (1U << i)) && state_names[i].name) {
            printf(RS "STATE-NAME %d %s %s\n", i, state_names[i].colour,
                   state_names[i].name);
            names_sent |= 1U << i;
        }
    }
}

static uint64_t rec_ns(uint64_t ticks)
{
    return ticks > strata_origin_ticks ?
           strata_ticks_to_ns(ticks - strata_origin_ticks) : 0;
}

void strata_trace_flush(void)
{
    unsigned i;

    if (!tracing) {
        return;
    }
    send_names();
    for (i = 0; i < state_count; i++) {
        printf(RS "STATE %llu %d\n",
               (unsigned long long)rec_ns(state_log[i].ticks),
               state_log[i].state);
    }
    state_count = 0;
    /* The current state goes on from here: it has a length. */
    if (recording && strata_ready) {
        printf(RS "STATE %llu %d\n",
               (unsigned long long)rec_ns(strata_ticks()), cur_state);
    }
}

static void record(int state)
{
    if (!tracing || !recording) {
        return;
    }
    if (state_count == STRATA_STATE_LOG) {
        strata_trace_flush();
    }
    state_log[state_count].ticks = strata_ticks();
    state_log[state_count].state = (int8_t)state;
    state_count++;
    if (state >= 0) {
        states_used |= 1U << state;
    }
}

void strata_trace_origin(void)
{
    /* States of the interval before are dropped; the current one goes on. */
    state_count = 0;
    record(cur_state);
}

void InitTrace(const char *file, const char *title)
{
    if (tracing) {
        return;
    }
    tracing = true;
    if (rt_node_id() == 0 && (file || title)) {
        printf(RS "LOG InitTrace: file %s, title %s\n", file ? file : "-",
               title ? title : "-");
    }
    if (strata_ready) {
        record(cur_state);
    }
}

int SetState(int state)
{
    int old = cur_state;

    if (state < 0 || state >= STRATA_MAX_STATES) {
#if STRATA_DEBUG_BUILD
        StrataLog("SetState(%d): not a state (0..%d)", state,
                  STRATA_MAX_STATES - 1);
#endif
        return old;
    }
    cur_state = state;
    if (strata_ready) {
        record(state);
    }
    return old;
}

Bool RecordStates(Bool on)
{
    Bool old = recording;

    if (on && !recording) {
        recording = true;
        record(cur_state);
    } else if (!on && recording) {
        record(-1);
        recording = false;
    }
    return old;
}

/* A failing node's print queue and log line (see strata_set_output). */
__attribute__((constructor))
static void debug_register(void)
{
    strata_set_output(EmptyPrintQ, StrataLog);
}
