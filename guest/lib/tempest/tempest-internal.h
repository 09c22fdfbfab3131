/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internals shared by the files of libtempest.  Private: programs use
 * tempest.h.
 *
 * Wire format of an active message (one or more packets on one network,
 * contiguous in that network's stream from the sender to the receiver):
 *   KIND   TPPI_KIND_AM | TPPI_KIND_FIRST on the first packet,
 *          | TPPI_KIND_LAST on the last (both on a one-packet message)
 *   WORD0  the total body size in bytes (every packet)
 *   WORD1  the handler's address (every packet)
 *   WORD2  0
 *   DATA   the next at most TEMPEST_PKT_PAYLOAD bytes of the body
 * The high nibble of KIND names the protocol (0: Tempest active
 * messages), leaving room for other libraries on the same rings.
 */
#ifndef TEMPEST_INTERNAL_H
#define TEMPEST_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tempest.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

#define TPPI_KIND_FIRST         0x01
#define TPPI_KIND_LAST          0x02
#define TPPI_KIND_PROTO_MASK    0xF0
#define TPPI_KIND_AM            0x00

/* Items as the send path sees them (generated functions included). */
enum {
    TPPI_SEG_WORDS,         /* ptr: words of the caller's, len bytes */
    TPPI_SEG_REGION,        /* an R item */
    TPPI_SEG_FORWARD,       /* an F item: ptr unused */
    TPPI_SEG_BLOCK,         /* a Ba item: ptr the block's va, chg */
};

struct tppi_seg {
    int kind;
    const void *ptr;
    int len;
    int chg;                /* TPPI_SEG_BLOCK: the TPPI_BlkTagChange */
};

/*
 * tppi_send_segs: sends the message made of @nsegs items @segs to @dest
 * for handler @pc.  Returns 0, or -1 if it was refused (reported and
 * counted).  Used by every TPPI_send_ function and the builder.
 */
int tppi_send_segs(TPPI_NodeId dest, TPPI_MessageHandlerPtr pc,
                   const struct tppi_seg *segs, unsigned nsegs);

/* ---- the protocol thread (core.c) ---------------------------------- */

/* True if the caller is running on the protocol thread. */
bool tppi_on_protocol_thread(void);

/* True once the protocol thread has been started (before main). */
bool tppi_started(void);

/* True if the protocol thread has a CPU of its own (two or more vCPUs). */
bool tppi_protocol_dedicated(void);

/*
 * Makes the protocol thread look for work: wakes its CPU, or on a
 * one-vCPU node makes the node controller's interrupt (whose handler runs
 * it) pending.
 */
void tppi_wake_protocol_thread(void);

/*
 * Consumes @len bytes of the message being handled into @dst, reporting
 * a read past its end as TPPI_recv_R does; returns the bytes copied.
 */
int tppi_recv_into(void *dst, int len);

/* True if a message handler is running (F items and receives allowed). */
bool tppi_in_message_handler(void);

/* Bytes of the message being handled not yet consumed (0 outside). */
int tppi_recv_left(void);

/*
 * Consumes @len bytes of the message being handled into @dst (NULL:
 * discard).  Returns the bytes actually there (less at the end).
 */
int tppi_take(void *dst, int len);

/*
 * Called by a send on the protocol thread that finds its ring full:
 * moves the current message out of the RQ and every arriving packet to
 * the backlog, so the device can go on receiving.
 */
void tppi_drain_to_backlog(void);

/* Reports a misuse: "*** tempest: node K: <text>", counted in *@counter. */
void tppi_report(uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

extern struct tempest_stats tppi_stats;

/*
 * CPUs (bit per CPU) whose computation code waits for room in SQ0: the
 * protocol thread wakes them (rt_cpu_wake) when it sees room, after a
 * handler, when idle, and on the node controller's IRQ_SQ.
 */
extern uint32_t tppi_sq_waiters;

/* ---- memory and faults (vm.c) --------------------------------------- */

/* Registers the runtime's fault hook (at start-up). */
void tppi_vm_init(void);

/* True if a fault waits for the protocol thread. */
bool tppi_fault_pending(void);

/*
 * Runs the handler of the earliest fault waiting, if there is one; returns
 * true if there was one.  First thing in every step of the protocol
 * thread (faults come before timers and messages).
 */
bool tppi_fault_step(void);

/*
 * A Ba item of a send: tppi_ba_check() checks the block specifier, the
 * change and that the block's page is mapped (false: reported).
 * tppi_ba_send_data() then changes the block's tag and returns its data,
 * in 3.2.6's order: for a change that takes access away, the tag first
 * and then a pointer to the block's frame (read when the message is
 * built, after the change); otherwise the data is copied to @buf
 * (blk_len bytes) first and then the tag changed.  NULL if the page went
 * away meanwhile.
 */
bool tppi_ba_check(void *blk_va, int blk_len, TPPI_BlkTagChange chg);
const void *tppi_ba_send_data(void *blk_va, int blk_len,
                              TPPI_BlkTagChange chg, void *buf);

/* ---- timers (timer.c) ---------------------------------------------- */

/* A TEMPEST_EV_TIMER event arrived: timers may be due. */
void tppi_timer_event(uint64_t a, uint64_t b);

/*
 * Runs the earliest due timer's handler, if one is due; returns true if
 * it ran one.  When none is due, arms the device for the next.
 */
bool tppi_timer_run_one(void);

/* True while a timer event has not been fully dealt with. */
bool tppi_timer_pending(void);

/* ---- bulk transfer (xfer.c, channel.c) ----------------------------- */

/* A TEMPEST_EV_XFER_SENT or _XFER_RECV event: to its cookie's owner. */
void tppi_xfer_event(const struct nc_event *e);

/* The channels' share of those events (cookie client 0). */
void tppi_chan_xfer_event(const struct tempest_xfer_event *ev);

#endif /* TEMPEST_INTERNAL_H */
