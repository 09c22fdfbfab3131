/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest: the C binding of the Tempest interface (Tempest Interface
 * Specification rev 1.2.1, Reinhardt 1995) on the tempest machine.
 *
 * This version provides sections 3.3 (fine-grain messaging: active
 * messages with W, R and F items) and 3.5 (timers), and declares the
 * types of 3.2 that the block items (Ba) and 3.6 (TPPI_resume_va) need.
 * Names starting with TPPI_ are the specification's; names starting with
 * tempest_ are this implementation's extensions (documented below).
 *
 * Execution model (spec section 2; docs/tempest.rst says more):
 *  - Linking any TPPI_ call into a program starts the node's ONE protocol
 *    thread before main().  It runs message and timer handlers to
 *    completion, one at a time:
 *      * on CPU 1, dedicated to it, when the node has two or more vCPUs
 *        (CPU 1 is then not available to rt_cpu_call());
 *      * on CPU 0 from the node controller's interrupt when the node has
 *        one vCPU: handlers then interrupt main() wherever it is.
 *    Computation code (main() and whatever it runs on other CPUs) never
 *    has to poll for handlers to run.
 *  - Pending events are taken in the specification's priority order,
 *    re-checked after every handler: (faults: a later version), control
 *    events (timers; peer-down and send-error reports), then messages.
 *    Messages from one node on one network are handled in the order they
 *    were sent.
 *  - Two networks, after SP Active Messages and FLASH: sends from
 *    computation code travel on the request network, sends from handlers
 *    on the reply network.  A handler whose send finds the reply ring
 *    full keeps taking arriving packets off the receive ring into a
 *    software backlog (handled, in order, after it), so the device keeps
 *    returning credits and two nodes replying to each other cannot
 *    deadlock.  A handler must not wait for another message to arrive
 *    (it would wait forever: handlers run one at a time).
 *  - Handlers may call any TPPI_ function, printf() and malloc().  On a
 *    one-vCPU node they run in interrupt context: they must not wait for
 *    anything main() does, and main() sees them as asynchronous.
 *  - A message body is a stream of 32-bit words; a handler reads it with
 *    TPPI_recv_W() and TPPI_recv_R() (or forwards it with F items) and
 *    must consume all of it.  Leaving part unread, reading past the end
 *    and naming a handler outside the program's code are reported on the
 *    console ("*** tempest: ...") and counted (tempest_get_stats()).
 *
 * Bad arguments never crash the node: a send with a bad item (an R
 * region not word-aligned or not a multiple of 4 bytes, an F outside a
 * handler or longer than what is left, a body over TPPI_MAX_AM_BYTES),
 * a destination not in the cluster or a handler outside the program's
 * code is not sent, is reported on the console and counted.
 */
#ifndef TEMPEST_H
#define TEMPEST_H

#include <stdint.h>

#include "tempest/tempest-hw.h"

/* ---- 3.1.1, 3.2.2: page and tag block sizes ------------------------ */
#define TPPI_PAGE_SHIFT         TEMPEST_PAGE_SHIFT
#define TPPI_PAGE_SIZE          (1 << TPPI_PAGE_SHIFT)
#define TPPI_TAG_BLK_SHIFT      TEMPEST_TAG_BLK_SHIFT
#define TPPI_TAG_BLK_SIZE       (1 << TPPI_TAG_BLK_SHIFT)

/* ---- 3.2.1, 3.2.5: access tags and tag changes (for Ba items) ------- */
/*
 * The block access tags and tag changes of section 3.2.  Nothing uses
 * them yet: block access control, Ba send items (TPPI_send_..Ba..) and
 * TPPI_recv_Ba() come with the fine-grain access control version of
 * libtempest.  A Ba item will take (void *blk_va, int blk_len,
 * TPPI_BlkTagChange chg), blk_len a power of 2 of at least
 * TPPI_TAG_BLK_SIZE, and will carry blk_len bytes of the body.
 */
typedef enum {
    TPPI_Blk_Busy,
    TPPI_Blk_Invalid,
    TPPI_Blk_ReadOnly,
    TPPI_Blk_Writable
} TPPI_BlkAccTag;
#define TPPI_NUM_BLK_ACC_TAGS   4
#define TPPI_MAX_BLK_ACC_TAG    (TPPI_NUM_BLK_ACC_TAGS - 1)

typedef enum {
    TPPI_Blk_Validate_RW,
    TPPI_Blk_Upgrade_RW,
    TPPI_Blk_Validate_RO,
    TPPI_Blk_Downgrade_RO,
    TPPI_Blk_Invalidate,
    TPPI_Blk_Mark_Busy,
    TPPI_Blk_No_Tag_Change,
    TPPI_Blk_Invalid_To_Busy,
    TPPI_Blk_Busy_To_Invalid
} TPPI_BlkTagChange;

/* ---- 3.3.1: node identifiers --------------------------------------- */
/* A node number, 0 .. TPPI_num_nodes - 1. */
typedef unsigned int TPPI_NodeId;

/* The number of nodes in the cluster; valid from main() on. */
extern unsigned TPPI_num_nodes;

/* This node's number; valid from main() on. */
extern TPPI_NodeId TPPI_self_address;

/* ---- 3.3.2: sending ------------------------------------------------ */
/*
 * A message handler: runs on the protocol thread of the destination node
 * with the sending node @src and the size of the message body in bytes
 * @size (a multiple of 4, at most TPPI_MAX_AM_BYTES).
 */
typedef void (*TPPI_MessageHandlerPtr)(TPPI_NodeId src, int size);

/*
 * The TPPI_send family: TPPI_send_<items>(dest, pc, <item arguments>)
 * sends to node @dest a message whose body is the items, in order, as a
 * stream of 32-bit words, to be handled there by pc(src, size).  Items:
 *   W  int w               one word
 *   R  void *va, int len   @len bytes (a multiple of 4) at @va (4-byte
 *                          aligned)
 *   F  int len             the next @len bytes (a multiple of 4) of the
 *                          message being handled: only in a handler
 * TPPI_send(dest, pc) sends an empty body.  Every combination of 0 to 8
 * W items with at most one R or F item anywhere among them is provided
 * (TPPI_send_W, TPPI_send_WW, TPPI_send_R, TPPI_send_WR, TPPI_send_RW,
 * TPPI_send_WWF, ... : tempest-send.h, generated); for any other item
 * list use the builder (tempest_msg_begin() below).
 *
 * A send returns once the message is in the node controller's send ring
 * (R and F data copied: the region may be reused at once); it waits,
 * sleeping, while the ring is full.  A message to this node itself is
 * looped back by the node controller and handled like any other.  Bad
 * arguments: see the top of this file (not sent, reported, counted).
 */
#include "tempest-send.h"

/* ---- 3.3.3: receiving ---------------------------------------------- */

/*
 * TPPI_recv_W: returns the next word of the message being handled.
 * Past the end of the body, or outside a handler, it returns 0 and
 * reports the overrun (console and counter).
 */
int TPPI_recv_W(void);

/*
 * TPPI_recv_R: copies the next @len bytes of the message being handled to
 * @va (@va 4-byte aligned, @len a multiple of 4).  What lies past the end
 * of the body is zero-filled and the overrun reported; outside a handler,
 * or with @va NULL, misaligned or a bad @len, nothing is copied and the
 * misuse is reported.
 */
void TPPI_recv_R(void *va, int len);

/* ---- 3.3.4: message size limit ------------------------------------- */
/*
 * The largest message body in bytes (at least TPPI_TAG_BLK_SIZE + 16, as
 * the specification asks).  A body up to TEMPEST_PKT_PAYLOAD (224) bytes
 * travels in one packet; a longer one is split into packets and
 * reassembled before its handler runs.
 */
#define TPPI_MAX_AM_BYTES       4096

_Static_assert(TPPI_MAX_AM_BYTES >= TPPI_TAG_BLK_SIZE + 16,
               "TPPI_MAX_AM_BYTES below the specification's minimum");

/* ---- 3.5: timers --------------------------------------------------- */

/* Timer ticks per second: a tick is 1 us of the node's virtual time. */
#define TPPI_TICKS_PER_SEC      (1000000000 / TEMPEST_TICK_NS)

typedef void (*TPPI_TimerHandlerPtr)(void *user_ptr);

/*
 * TPPI_schedule_timer: makes the protocol thread call fn(user_ptr) once,
 * @ticks ticks from now (ticks >= 0; 0: as soon as possible).  Timers
 * run in deadline order, timers with equal deadlines in the order they
 * were scheduled, before any message waiting at the same time.  Any
 * number may be pending.  May be called from computation code and from
 * handlers.  @fn NULL or @ticks negative: nothing is scheduled, the
 * misuse is reported and counted.
 */
void TPPI_schedule_timer(int ticks, TPPI_TimerHandlerPtr fn, void *user_ptr);

/* ---- 3.6: thread management ---------------------------------------- */
/*
 * TPPI_resume_va: NOT YET AVAILABLE (it comes with block access faults).
 * Today it does nothing but report that it was called.
 */
void TPPI_resume_va(void *blk_va, int blk_len);

/* ================================================================== */
/* Extensions of this implementation                                   */
/* ================================================================== */

/*
 * The message builder, for item lists the TPPI_send_ family does not
 * have (more than 8 words, several regions, ...):
 *
 *     tempest_msg m;
 *     tempest_msg_begin(&m, dest, handler);
 *     tempest_msg_W(&m, 1);
 *     tempest_msg_R(&m, buf, 64);
 *     tempest_msg_R(&m, buf2, 128);
 *     tempest_msg_send(&m);
 *
 * sends exactly what TPPI_send_WRR(dest, handler, 1, buf, 64, buf2, 128)
 * would.  R data is read and F data consumed when the message is sent,
 * not when the item is added.  A builder holds up to TEMPEST_MSG_ITEMS
 * items, consecutive W items counting as one, and TEMPEST_MSG_WORDS words
 * in all; adding beyond that, or a bad item, makes the whole message
 * invalid: tempest_msg_send() then reports and sends nothing.  A builder
 * lives on the caller's stack; do not copy one.
 */
#define TEMPEST_MSG_ITEMS       16
#define TEMPEST_MSG_WORDS       64

typedef struct tempest_msg {
    TPPI_NodeId dest;
    TPPI_MessageHandlerPtr pc;
    int error;
    unsigned nitems;
    unsigned nwords;
    struct {
        int kind;
        const void *ptr;
        int len;
    } item[TEMPEST_MSG_ITEMS];
    uint32_t words[TEMPEST_MSG_WORDS];
} tempest_msg;

/* tempest_msg_begin: starts an empty message to @dest for handler @pc. */
void tempest_msg_begin(tempest_msg *m, TPPI_NodeId dest,
                       TPPI_MessageHandlerPtr pc);

/*
 * tempest_msg_W, tempest_msg_R, tempest_msg_F: append a W, R or F item.
 * Each returns 0, or -1 (and marks the message invalid) if the builder is
 * full or the item is bad (R: @va NULL or not 4-byte aligned, @len
 * negative or not a multiple of 4; F: @len negative or not a multiple of
 * 4, or not called in a handler).
 */
int tempest_msg_W(tempest_msg *m, int w);
int tempest_msg_R(tempest_msg *m, const void *va, int len);
int tempest_msg_F(tempest_msg *m, int len);

/*
 * tempest_msg_send: sends the message, as a TPPI_send_ call would.
 * Returns 0 if it was sent, -1 if it was not (invalid message, body over
 * TPPI_MAX_AM_BYTES, bad destination or handler: reported and counted).
 */
int tempest_msg_send(tempest_msg *m);

/*
 * tempest_wait: waits until cond(arg) returns non-zero, sleeping in
 * between (the CPU is woken when the protocol thread has run handlers, or
 * after at most 1 ms), and returns.  For computation code waiting for
 * what handlers do; cond() is called with IRQs masked, so it must be
 * short and must not block.  In a handler it returns at once (a handler
 * must not wait).  @cond NULL: returns at once.
 */
void tempest_wait(int (*cond)(void *arg), void *arg);

/*
 * tempest_flush: waits, sleeping, until the node controller has taken
 * every packet this node has put in its send rings (so that they leave
 * the node even if it exits right after), or about @max_ms milliseconds
 * have passed (0: no limit).  Returns 0, or -1 on the time limit.  At
 * exit() libtempest does this with a limit of 1000 ms.  Messages a
 * handler sends while it runs may follow later.
 */
int tempest_flush(unsigned max_ms);

/*
 * tempest_on_peer_down: makes the protocol thread call fn(node) when the
 * node controller reports that @node is gone (TEMPEST_EV_PEER_DOWN), after
 * the report "*** node K: lost node J" on the console.  @fn NULL: only
 * the report.  Returns the previous callback.
 */
typedef void (*tempest_peer_down_fn)(TPPI_NodeId node);
tempest_peer_down_fn tempest_on_peer_down(tempest_peer_down_fn fn);

/* Counters since start-up, for tests and tuning. */
struct tempest_stats {
    uint64_t msgs_sent;         /* messages handed to the device */
    uint64_t pkts_sent;         /* packets (a message is 1 or more) */
    uint64_t msgs_handled;      /* message handlers run */
    uint64_t timers_run;        /* timer handlers run */
    uint64_t unread;            /* handlers that left bytes unread */
    uint64_t overruns;          /* reads past the end of a message */
    uint64_t bad_handlers;      /* messages dropped: bad handler */
    uint64_t bad_sends;         /* sends refused: bad arguments */
    uint64_t bad_packets;       /* packets dropped: bad fragments */
    uint64_t peers_lost;        /* TEMPEST_EV_PEER_DOWN events */
    uint64_t send_errors;       /* TEMPEST_EV_SEND_ERROR events */
    uint64_t sq_full;           /* times a send found its ring full */
    uint64_t backlog_pkts;      /* packets moved to the backlog */
    uint64_t backlog_max;       /* largest backlog, in packets */
    uint64_t sleeps;            /* times the protocol thread slept */
};

/* tempest_get_stats: copies the counters to *@s (nothing if NULL). */
void tempest_get_stats(struct tempest_stats *s);

/*
 * tempest_protocol_cpu: returns the CPU the protocol thread runs on (1
 * with a dedicated CPU, 0 when it is interrupt-driven on the only one).
 */
unsigned tempest_protocol_cpu(void);

/*
 * tempest_set_spin_us: sets how long the dedicated protocol thread polls
 * an empty node before it sleeps in WFI (default TEMPEST_SPIN_US_DEFAULT;
 * 0: sleep at once).  Longer: lower latency, more host CPU used.
 */
#define TEMPEST_SPIN_US_DEFAULT 20
void tempest_set_spin_us(unsigned us);

#endif /* TEMPEST_H */
