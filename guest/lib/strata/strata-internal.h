/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata internals shared by its files.  Every name here is renamed in
 * the debugging library as the public ones are (STRATA_ISYM), so a
 * program linked with libstrataD.a never pulls an object of libstrata.a.
 *
 * Layers: a file calls functions of the layers below it only (the unit
 * test tests/unit/test_guest_layers.py checks it on the built objects):
 *   init.c      StrataInit, StrataExit and its exit protocol,
 *               ResetCurrentCycle, OutputStateLog: the calls that involve
 *               every layer
 *   control.c   the control network (4) and composite reductions (5)
 *   data.c      the data network (6), block transfers (7, 8)
 *   debug.c     the print queue, the log, state graphs (9, 10)
 *   core.c      the globals, time, waiting, control events, StrataFail
 * (control.c and data.c use debug.c only in the debugging library.)  The
 * core calls nothing above it: data.c registers the message polls its
 * waits run (strata_set_poller), debug.c the print queue and the log
 * that a failing node flushes and writes (strata_set_output).
 */
#ifndef STRATA_INTERNAL_H
#define STRATA_INTERNAL_H

#define STRATA_NO_EXIT_MACRO
#define STRATA_NO_SEND_MACROS

#include <stdarg.h>
#include <stdbool.h>

#include "strata.h"
#include "tempest/client.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

/*
 * libtempest's client interface (tempest/client.h), referenced weakly: in
 * a program that links libtempest (it uses any TPPI_ or tempest_ call)
 * they are there and libstrata shares libtempest's rings (strata_shared);
 * in a program of Strata alone they are NULL and libstrata owns the
 * rings, as it always did.
 */
extern __typeof__(tempest_client_register) tempest_client_register
    __attribute__((weak));
extern __typeof__(tempest_client_send) tempest_client_send
    __attribute__((weak));
extern __typeof__(tempest_client_wait) tempest_client_wait
    __attribute__((weak));
extern __typeof__(tempest_client_spin_wait) tempest_client_spin_wait
    __attribute__((weak));
extern __typeof__(tempest_client_idle_wait) tempest_client_idle_wait
    __attribute__((weak));
extern __typeof__(tempest_client_polled) tempest_client_polled
    __attribute__((weak));
extern __typeof__(tempest_client_poll) tempest_client_poll
    __attribute__((weak));
extern __typeof__(tempest_client_on_protocol_thread)
    tempest_client_on_protocol_thread __attribute__((weak));

/* The high nibble of KIND of every Strata packet (0x53, 0x54). */
#define STRATA_PROTO        5

#define STRATA_ISYM(name)   STRATA_SYM(i_##name)

#ifdef STRATA_DEBUG
#define STRATA_DEBUG_BUILD  1
#else
#define STRATA_DEBUG_BUILD  0
#endif

/* The node controller interrupts libstrata keeps enabled. */
#define STRATA_IRQ_BITS     (TEMPEST_NC_IRQ_RQ | TEMPEST_NC_IRQ_CQ | \
                             TEMPEST_NC_IRQ_SQ | TEMPEST_NC_IRQ_COLL | \
                             TEMPEST_NC_IRQ_BCAST | TEMPEST_NC_IRQ_AOR)

/* Networks (section 6): left is the request network, right the reply. */
#define NET_LEFT            TEMPEST_NET_REQUEST
#define NET_RIGHT           TEMPEST_NET_REPLY

/* What strata_wait() may poll while it waits. */
#define POLL_NONE           0
#define POLL_LEFT           (1U << NET_LEFT)
#define POLL_RIGHT          (1U << NET_RIGHT)
#define POLL_BOTH           (POLL_LEFT | POLL_RIGHT)
/* Set every waiting packet aside, running no handler (data.c). */
#define POLL_STASH          (1U << 2)
/*
 * From strata_wait(), which sleeps itself: an empty poll neither
 * acknowledges the node controller's interrupts nor takes idle_poll()'s
 * sleep (core.c's wait counts on it to see every acknowledgement).
 */
#define POLL_WAIT           (1U << 3)

/* ---- core.c: calls nothing else of libstrata ---------------------------- */

/*
 * True once StrataInit() has found libtempest in the program: its
 * protocol thread takes the RQ, the CQ and the interrupt, hands Strata's
 * packets to data.c's sink (strata_set_sink) and the control events to
 * the core; libstrata's sends go through tempest_client_send() and its
 * waits through tempest_client_wait().
 */
extern bool strata_shared STRATA_ISYM(strata_shared);

/* True once StrataInit() has run. */
extern bool strata_ready STRATA_ISYM(strata_ready);
/* True once StrataExit() (or the exit of main) has begun. */
extern bool strata_exiting STRATA_ISYM(strata_exiting);
/* Turns of an idle wait loop in the spin time (StrataSetSpin). */
extern unsigned strata_spin_turns STRATA_ISYM(strata_spin_turns);
/* Message handlers running, nested (data.c counts them). */
extern unsigned strata_handler_depth STRATA_ISYM(strata_handler_depth);
/*
 * True if the launcher told the node to spin (SPIN_US not 0): the node
 * controller's wait reads then spin too, which a program that said
 * StrataSetSpin(0) does not want.
 */
extern bool strata_device_spins STRATA_ISYM(strata_device_spins);
/* The generic timer at the time origin (end of StrataInit's barrier). */
extern uint64_t strata_origin_ticks STRATA_ISYM(strata_origin_ticks);

/*
 * strata_set_poller: the message polls strata_wait() runs.  poll(mask)
 * handles at most one message of each network in @mask and returns true
 * if it handled one; waiting(mask) is true if a message of a network in
 * @mask waits.  Without one (before StrataInit), no network is polled.
 */
void strata_set_poller(bool (*poll)(unsigned mask),
                       bool (*waiting)(unsigned mask))
    STRATA_ISYM(strata_set_poller);

/*
 * strata_set_sink: when strata_shared, libtempest's protocol thread calls
 * sink(p) with every Strata packet, at its turn in the RQ; the sink
 * copies it (it must not block).  Set before strata_core_start().
 */
void strata_set_sink(void (*sink)(const struct nc_pkt *p))
    STRATA_ISYM(strata_set_sink);

/*
 * strata_shared_irqs: when strata_shared, a count of the interrupts
 * libstrata waits for (COLL, BCAST, SQ) that the protocol thread took:
 * a wait whose count moved has something to look at again.
 */
uint32_t strata_shared_irqs(void) STRATA_ISYM(strata_shared_irqs);

/*
 * strata_await_peer_events: when strata_shared, waits up to @ms
 * milliseconds until the protocol thread has passed on at least one
 * peer-gone event (the control network may report a node gone before
 * that event is taken).  Returns at once otherwise.
 */
void strata_await_peer_events(unsigned ms)
    STRATA_ISYM(strata_await_peer_events);

/*
 * strata_set_output: what a node that fails or exits does with its
 * output: flush() writes the print queue out; log() writes a line of
 * the run's log (StrataFail's message).  Without them, nothing.
 */
void strata_set_output(int (*flush)(void), void (*log)(const char *fmt, ...))
    STRATA_ISYM(strata_set_output);

/*
 * StrataInit's steps in the core: strata_core_init() finds who this node
 * is and checks and starts the device and the cycle counter (ending the
 * node, with a message, if it cannot); strata_core_start(), once the
 * modules are initialised, takes the node controller's interrupt,
 * calibrates the spin time (with the poller set) and sets strata_ready.
 */
void strata_core_init(void) STRATA_ISYM(strata_core_init);
void strata_core_start(void) STRATA_ISYM(strata_core_start);

/*
 * strata_set_origin: the time origin is now (CurrentCycle() counts from
 * here, and CurrentCycle64() too if @base); recalibrates the timing
 * overhead.
 */
void strata_set_origin(bool base) STRATA_ISYM(strata_set_origin);

/*
 * strata_exit_now: StrataExit(@code) without the exit protocol, for a
 * nonzero @code or a node exiting already or not initialised: flushes
 * the print queue (if it is the first exit after StrataInit) and stdout,
 * and ends the node.
 */
NORETURN strata_exit_now(int code) STRATA_ISYM(strata_exit_now);

/*
 * strata_wait: returns once done(arg) is true.  Meanwhile handles the
 * messages of the networks in @poll, spins for the spin time and then
 * sleeps until the node controller interrupts: done() must be something
 * the device signals with one of STRATA_IRQ_BITS.
 * done() is re-evaluated after every interrupt and after handled
 * messages; if @cheap (done() reads only RAM), on every turn.
 */
void strata_wait(bool (*done)(void *), void *arg, unsigned poll,
                 bool cheap) STRATA_ISYM(strata_wait);
/* Are there messages of the networks in @poll to handle (RAM only)? */
bool strata_msgs_waiting(unsigned poll) STRATA_ISYM(strata_msgs_waiting);

/* strata_ticks: the generic timer's count; strata_ticks_to_ns: in ns. */
static inline uint64_t strata_ticks(void)
{
    uint64_t v;

    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

uint64_t strata_ticks_to_ns(uint64_t ticks) STRATA_ISYM(strata_ticks_to_ns);

/* strata_require: fails (StrataFail) if StrataInit() has not run. */
void strata_require(const char *call) STRATA_ISYM(strata_require);

/*
 * strata_take_events: takes the device's control events (peers gone,
 * send errors) and counts the peers that exited with status 0 and those
 * that failed; of those, the ones whose link was lost (strata_peers_lost:
 * what they sent us, or we them, may be lost with it).
 */
void strata_take_events(void) STRATA_ISYM(strata_take_events);
extern unsigned strata_peers_exited STRATA_ISYM(strata_peers_exited);
extern unsigned strata_peers_failed STRATA_ISYM(strata_peers_failed);
extern unsigned strata_peers_lost STRATA_ISYM(strata_peers_lost);

/*
 * strata_node_gone (control.c): a node of the partition is gone; ends
 * this node (StrataFail "<what>: <why>", status 1), or with 0 when it is
 * in StrataExit and the others exited with 0.
 */
NORETURN strata_node_gone(const char *what, const char *why)
    STRATA_ISYM(strata_node_gone);

/* ---- debug.c ------------------------------------------------------------ */

/* strata_trace_origin: the time origin moved (init, ResetCurrentCycle). */
void strata_trace_origin(void) STRATA_ISYM(strata_trace_origin);

/* strata_trace_flush: writes the recorded states out (no barrier). */
void strata_trace_flush(void) STRATA_ISYM(strata_trace_flush);

/* ---- data.c ------------------------------------------------------------ */

/* Allocates the network queues and sets the core's poller. */
void strata_data_init(void) STRATA_ISYM(strata_data_init);

/* Packets this node posted, and packets it took off its receive ring. */
extern uint64_t strata_pkts_sent STRATA_ISYM(strata_pkts_sent);
extern uint64_t strata_pkts_received STRATA_ISYM(strata_pkts_received);

/* strata_sends_drained: true if the device has taken every posted packet. */
bool strata_sends_drained(void) STRATA_ISYM(strata_sends_drained);

/* ---- control.c --------------------------------------------------------- */

void strata_control_init(void) STRATA_ISYM(strata_control_init);

/*
 * strata_coll_u64: a blocking combine of @lanes (1..64) 64-bit lanes
 * with device function @fn and variant @variant, no segments, polling
 * both networks while it waits.  For the library's own use (StrataExit).
 */
void strata_coll_u64(unsigned fn, unsigned variant, const uint64_t *in,
                     uint64_t *out, unsigned lanes)
    STRATA_ISYM(strata_coll_u64);

/* strata_coll_finish_pending: completes a pending split-phase operation. */
void strata_coll_finish_pending(void) STRATA_ISYM(strata_coll_finish_pending);

/*
 * In the debugging library: enter one of the library's states (section
 * 10) and log if @on; returns the state to go back to.
 */
#if STRATA_DEBUG_BUILD
#define STRATA_DBG_ENTER(state) int strata_dbg_old_ = SetState(state)
#define STRATA_DBG_LEAVE()      SetState(strata_dbg_old_)
#define STRATA_DBG_LOG(on, ...) \
    do { \
        if (on) { \
            StrataLog(__VA_ARGS__); \
        } \
    } while (0)
#else
#define STRATA_DBG_ENTER(state) do { } while (0)
#define STRATA_DBG_LEAVE()      do { } while (0)
#define STRATA_DBG_LOG(on, ...) do { } while (0)
#endif

#endif /* STRATA_INTERNAL_H */
