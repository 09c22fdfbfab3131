/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libmagic: FLASH-style message passing on the tempest machine, after
 * "Integrating Multiple Communication Paradigms in High Performance
 * Multiprocessors" (Heinlein et al., FLASH/MAGIC), section 3: base
 * message passing (send, senddone, bufalloc, receive: 3.1-3.4), memory
 * copy (fastmemcpy: 3.5) and fetch-and-op at the home node (3.6), on the
 * node controller's transfer engine through libtempest.
 *
 * Names: the paper's calls with a magic_ prefix (magic_send, ...), since
 * bare send() and receive() would clash with the C library's and with
 * programs'.  docs/bulk.rst says more.
 *
 * Where things run:
 *  - magic_send() and magic_fastmemcpy() run the initiation protocol on
 *    the calling CPU's command bank and return at once: the node
 *    controller moves the data, cut into cache-line components that
 *    interleave with every other transfer and with active messages, and
 *    stores it straight into the destination's memory (no copy on either
 *    side).  RETRY (64 transfers of this node under way) is retried
 *    here, sleeping.
 *  - Completions come back to libtempest's protocol thread as events;
 *    libmagic's part of it updates the send records (read by
 *    magic_senddone()) and the receive table (read by magic_receive()),
 *    both in this node's memory: polling them is a plain load, with no
 *    call into the device (FLASH's "no system call").
 *  - Fetch-and-op is done by the home node's controller, no handler
 *    runs there; the caller waits on its command bank (FLASH's waiting
 *    read).
 *
 * Every call may be made from main(), from other computation CPUs and
 * from Tempest handlers (a handler must not wait for a message: see
 * magic_receive_wait()).  Bad arguments never crash the node: each
 * failure is reported on the console ("*** magic: node K: ..."), counted,
 * and kept for magic_last_error().
 */
#ifndef MAGIC_H
#define MAGIC_H

#include <stddef.h>
#include <stdint.h>

#include "tempest.h"

/*
 * A message id (FLASH's MID): names one send or fastmemcpy for
 * magic_senddone().  0 (MAGIC_NO_MID) is never a valid one.
 */
typedef uint64_t magic_mid;
#define MAGIC_NO_MID            0

/*
 * Send records kept: a mid this many sends old reads as complete.  A send
 * whose record is still in use waits for it; a handler (which cannot
 * wait for completions) takes it over, and the older send then reads as
 * complete.
 */
#define MAGIC_RECORDS           4096

/*
 * Errors of libmagic itself (magic_last_error()); the node controller's
 * reasons TEMPEST_CMD_E_* (1 .. 99) are passed on as they are.
 */
#define MAGIC_E_NOMEM           100     /* out of memory */
#define MAGIC_E_NOT_BUFFER      101     /* not a received message's buffer */
#define MAGIC_E_FULL            102     /* the controller's buffers: full */
#define MAGIC_E_BAD_MID         103     /* no such message id */
#define MAGIC_E_REFUSED         104     /* refused at the destination */
#define MAGIC_E_BAD_ARG         105     /* NULL pointer and the like */

/* ---- base message passing (FLASH 3.1-3.4) ---------------------------- */

/*
 * magic_send: sends @len bytes at @buf (any alignment, 1 ..
 * TEMPEST_XFER_MAX) to node @dest as a message of type @type, and returns
 * at once with its id; @buf must not change until magic_senddone() says
 * the send is complete.  At @dest the message goes into the space of a
 * buffer posted for @type (magic_bufalloc(), magic_bufpost()) with room
 * for it; if there is none yet it is stored in the destination's system
 * space (FLASH's footnote 3: the send completes) and moves to a buffer
 * when one is posted; only when system space is full does it wait there,
 * holding the send, until a buffer comes.  Returns the
 * id, or MAGIC_NO_MID when the node controller failed the command (bad
 * node, @buf outside this node's RAM, bad length: reported, reason in
 * magic_last_error()).
 */
magic_mid magic_send(unsigned type, unsigned dest, const void *buf,
                     size_t len);

/*
 * magic_senddone: returns 1 when the send or copy @mid is complete (its
 * source buffer may be changed, and the data is stored at the
 * destination, in a buffer or in its system space), 0 while it is under
 * way, -1 if it failed (the destination refused it: its range is not the
 * receiver's RAM, or it is longer than the destination's system space and
 * only shorter buffers of its type are posted; reported when it
 * happened) or @mid names no send (MAGIC_E_BAD_MID).  A mid older than the last
 * MAGIC_RECORDS sends of this node reads as complete.
 */
int magic_senddone(magic_mid mid);

/*
 * magic_sendwait: waits, sleeping, until magic_senddone(@mid) is not 0,
 * and returns it.  In a handler (on the protocol thread, which is what
 * completes sends) it returns magic_senddone(@mid) at once.
 */
int magic_sendwait(magic_mid mid);

/*
 * magic_bufalloc: allocates a receive buffer of @size bytes (64-byte
 * aligned) and posts it to the node controller for messages of @type
 * (FLASH's bufalloc "preallocates buffer space": reception goes straight
 * into it).  Messages of @type land in it one after another, each
 * 64-byte aligned, until one does not fit; the buffer is then full, and
 * once every message in it has been given back (magic_bufreturn) its
 * whole space is posted again.  Returns the buffer, or NULL (reported) if
 * @size is 0, memory ran out, or the controller already holds
 * TEMPEST_XFER_MAX_BUFS buffers (MAGIC_E_FULL).
 */
void *magic_bufalloc(size_t size, unsigned type);

/*
 * magic_bufpost: posts the program's own memory [@buf, @buf + @size) as
 * a receive buffer for @type.  Returns 0, or an error code (reported):
 * MAGIC_E_BAD_ARG, MAGIC_E_NOMEM, MAGIC_E_FULL or the controller's
 * reason (e.g. TEMPEST_CMD_E_BAD_ADDR: not inside this node's RAM).
 */
int magic_bufpost(void *buf, size_t size, unsigned type);

/*
 * magic_receive: the non-blocking receive.  Takes the oldest message of
 * @type from the receive table and returns its address (inside the
 * posted buffer it was stored in), with the sender in *@src and its
 * length in *@len (either may be NULL).  Returns NULL with *@src = -1
 * and *@len = 0 if no message of @type is there.  The buffer is then the
 * program's: give it back with magic_bufreturn() or magic_buffree().
 *
 * Completion order (FLASH 3.4.2): messages of one type from one sender
 * are received in the order they were sent, even when a later, shorter
 * one is stored first (it is held back until the earlier ones are in);
 * a message its destination refused is skipped.  Messages of different
 * types, or from different senders, are independent.
 */
void *magic_receive(unsigned type, int *src, size_t *len);

/*
 * magic_receive_wait: magic_receive(), sleeping until a message of @type
 * is there.  In a handler it returns what magic_receive() does (a
 * handler must not wait).
 */
void *magic_receive_wait(unsigned type, int *src, size_t *len);

/*
 * magic_bufreturn: gives back the space of the received message @msg:
 * when its buffer is full and none of its messages is still in use, the
 * buffer is posted again, whole, for the same type.  Returns 0, or an
 * error code (reported): MAGIC_E_NOT_BUFFER if @msg is not a received
 * message not yet returned or freed, MAGIC_E_FULL, or the controller's
 * reason.
 */
int magic_bufreturn(void *msg);

/*
 * magic_buffree: gives back the received message @msg, and with it the
 * buffer holding it: once that buffer is full and none of its messages
 * is in use it is forgotten (not posted again) and freed if
 * magic_bufalloc() allocated it.  Returns 0, or MAGIC_E_NOT_BUFFER
 * (reported).
 */
int magic_buffree(void *msg);

/*
 * magic_set_ordered: @on non-zero (the default) keeps the completion
 * order of magic_receive() described above; 0 makes each message
 * receivable as soon as it is stored.  Returns the previous setting.
 */
int magic_set_ordered(int on);

/* ---- memory copy (FLASH 3.5) ------------------------------------------ */

/*
 * magic_fastmemcpy: copies @len bytes at @src (here, any alignment) to
 * @dst at node @dest (the sender names the destination address; any
 * alignment) and returns at once with the copy's id for
 * magic_senddone().  No buffer is posted and no receive is needed; at
 * @dest, magic_copies_received() counts it once stored.  Returns
 * MAGIC_NO_MID (reported, reason in magic_last_error()) if the controller
 * failed the command; a @dst range outside @dest's RAM is refused there
 * (magic_senddone() then returns -1).
 */
magic_mid magic_fastmemcpy(const void *src, size_t len, unsigned dest,
                           void *dst);

/*
 * magic_copies_received: returns the number of memory copies from node
 * @src stored at this node so far (0 for a bad @src).
 */
uint64_t magic_copies_received(unsigned src);

/*
 * magic_on_copy: makes the protocol thread call fn(src, dst, len) each
 * time a memory copy from node @src (this one included) is stored here
 * (NULL: none).
 * Returns the previous function.
 */
typedef void (*magic_copy_fn)(unsigned src, void *dst, size_t len);
magic_copy_fn magic_on_copy(magic_copy_fn fn);

/* ---- fetch-and-op (FLASH 3.6) ----------------------------------------- */

/*
 * magic_fetch_op: applies @op (TEMPEST_FOP_ADD, TEMPEST_FOP_SWAP or
 * TEMPEST_FOP_CAS) to the 64-bit word at @addr on its home node @home
 * (the same address names the same global on every node), atomically,
 * done by @home's node controller with no handler, and waits for the
 * reply: ADD adds @operand, SWAP stores it, CAS stores it only if the
 * word equals @compare.  Returns 0 and the word's old value in *@old (if
 * not NULL), or the controller's reason (reported): bad node, @addr not
 * 8-byte aligned (TEMPEST_CMD_E_BAD_ALIGN) or outside the home node's RAM,
 * bad @op (TEMPEST_CMD_E_BAD_FOP).
 */
int magic_fetch_op(unsigned home, uint64_t *addr, unsigned op,
                   uint64_t operand, uint64_t compare, uint64_t *old);

/*
 * magic_fetch_add, magic_swap, magic_cas: the three operations; each
 * returns the word's old value (magic_cas succeeded if it equals
 * @expect), or 0 on failure (reported; magic_last_error() says why).
 */
uint64_t magic_fetch_add(unsigned home, uint64_t *addr, uint64_t v);
uint64_t magic_swap(unsigned home, uint64_t *addr, uint64_t v);
uint64_t magic_cas(unsigned home, uint64_t *addr, uint64_t expect,
                   uint64_t v);

/* ---- errors and counters ------------------------------------------------ */

/*
 * magic_last_error: returns the error of this node's last failed libmagic
 * call (a MAGIC_E_* code or a TEMPEST_CMD_E_* reason; 0: none yet) and
 * clears it.
 */
int magic_last_error(void);

/* magic_strerror: a short text for a magic_last_error() code. */
const char *magic_strerror(int err);

/* Counters since start-up. */
struct magic_stats {
    uint64_t sends;             /* magic_send() accepted */
    uint64_t copies;            /* magic_fastmemcpy() accepted */
    uint64_t completed;         /* sends and copies completed */
    uint64_t failed;            /* refused at their destination */
    uint64_t received;          /* typed messages stored here */
    uint64_t held_back;         /* of those, stored before an earlier one */
    uint64_t skipped;           /* refused messages skipped in order */
    uint64_t copies_received;   /* memory copies stored here */
    uint64_t errors;            /* failed calls (reported) */
};

/* magic_get_stats: copies the counters to *@s (nothing if NULL). */
void magic_get_stats(struct magic_stats *s);

#endif /* MAGIC_H */
