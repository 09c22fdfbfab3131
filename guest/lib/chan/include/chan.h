/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan: migratable channels on the tempest machine, after "Hardware
 * Migratable Channels" (May, Muller, Sen; shared/seeds/001_*): on a
 * bare-metal node whose node controller has the channel controller
 * (FEATURES bit CHAN), the calls run on the device's instructions; else a
 * software implementation of the paper's channel hardware over
 * libtempest's active messages.  The calls and their results are the same
 * on both but for what docs/chan.rst ("<chan.h> on the device") lists:
 * on the device a name's generation is always 1 and data too long for
 * the input's buffer has already been acknowledged.
 *
 * A channel is two companion ports.  Each node has a port table of
 * CHAN_PORTS entries; a port is in one of the paper's seven states
 * (enum chan_state, section 3).  Data over ports (section 3.1) is
 * pre-sent: chan_output() sends the data at once and the receiving node
 * stores it (in the buffer the port names, or its own) when no process
 * is inputting yet; the output completes when the receiver has input
 * it.  Ports over ports (section 3.2): chan_output_port() sends one end
 * of a channel over another channel; chan_input_port() at the other end
 * receives it as a new port of that node, wired straight to its
 * companion by the paper's five-stage protocol (prepare, input of the
 * port, wiring up and cleaning up, final confirmation, both ends
 * migrating).  Data that had been pre-sent to a port when it moved is
 * sent again by its companion to the port's new place.
 *
 * Where things run (libtempest's model, docs/tempest.rst): the paper's
 * channel controller is the node's protocol thread.  Every call below
 * hands its operation to it (an active message to this node itself) and
 * waits, sleeping, for the result; every message between nodes is sent
 * from it, so the messages of one node to another travel in order, as
 * the protocol requires.  The calls may be made from main() and from
 * other computation CPUs.  In Tempest message and timer handlers (on the
 * protocol thread itself) a call that may wait would never end: those
 * return CHAN_E_CONTEXT there; the calls that never wait (chan_alloc,
 * chan_free, chan_output_start, chan_output_port_start, chan_set_buffer,
 * chan_state, chan_companion, chan_get_stats, chan_dump) work there
 * too.  One process per port (the paper's invariant):
 * a second input or output on a port that is in use is refused
 * (CHAN_E_STATE), not queued.
 *
 * Errors are returned as negative CHAN_E_* codes and, except for
 * CHAN_E_CLOSED, reported on the console as
 *   *** chan: node K: <call>(<port>): <reason>
 * and counted (chan_get_stats()).  A refused call changes nothing.
 * Messages of the protocol that arrive where the protocol says they
 * cannot are reported as "*** chan: node K: protocol: ..." and counted
 * (protocol_errors): they are bugs, never silent corruption.
 */
#ifndef CHAN_H
#define CHAN_H

#include <stddef.h>
#include <stdint.h>

/*
 * A port: the paper's 32-bit companion-id, naming the node and the port
 * table entry, with a generation so that a freed or migrated port's old
 * name is not taken for a newer port (entries are reused round robin;
 * an old name comes back after 255 reuses of its entry; on the device
 * the generation is always 1 and a name comes back after 255 others):
 *   bits 31..20  node (0 .. 4095)
 *   bits 19..8   index in the node's port table (0 .. CHAN_PORTS - 1)
 *   bits  7..0   generation (1 .. 255; never 0)
 * CHAN_NO_PORT (0) is never a port.  The calls take ports of the calling
 * node only; any other value is CHAN_E_BADPORT.
 */
typedef uint32_t chan_port;
#define CHAN_NO_PORT            0
#define CHAN_PORTS              256
#define CHAN_PORT_NODE(p)       ((unsigned)((p) >> 20))
#define CHAN_PORT_INDEX(p)      ((unsigned)(((p) >> 8) & 0xFFFU))

/*
 * The most bytes one output carries on every path (one active message of
 * 4096 bytes in software); chan_max_data() says what this node takes.
 */
#define CHAN_MAX_DATA           4080

/*
 * The port states of section 3, with the paper's invariants:
 *   EMPTY       not part of a channel (free table entry)
 *   IDLE        part of a channel; no input or output under way
 *   INPUTTING   a process is inputting on it, no data has come yet
 *   OUTPUTTING  a process is outputting on it: the data (or port) has
 *               been pre-sent to the companion, no acknowledgement yet
 *   BUFFERFULL  the companion's pre-sent data (or port) is stored here,
 *               no process is inputting yet
 *   MIGRATING   being sent to another node over a channel: no input or
 *               output; data arriving for it is dropped (the companion
 *               sends it again once the port is wired up at its new
 *               place)
 *   CONFIRMING  a port has been input on it and is being wired up: the
 *               inputting process waits for the final confirmation
 */
enum chan_state {
    CHAN_EMPTY,
    CHAN_IDLE,
    CHAN_INPUTTING,
    CHAN_OUTPUTTING,
    CHAN_BUFFERFULL,
    CHAN_MIGRATING,
    CHAN_CONFIRMING,
};

/*
 * Errors (negative returns):
 *   CHAN_E_BADPORT     not a live port of this node
 *   CHAN_E_STATE       the port is busy or in the wrong state for the call
 *   CHAN_E_MIGRATING   the port is migrating
 *   CHAN_E_ARG         NULL pointer, bad length or node, a port sent over
 *                      its own channel
 *   CHAN_E_NOPORTS     the port table is full
 *   CHAN_E_CLOSED      the companion was freed
 *   CHAN_E_TYPE        data where a port is input, or a port where data is
 *   CHAN_E_TOOBIG      the data is longer than the buffer: it stays
 *                      buffered
 *   CHAN_E_NOBUF       chan_input_next() on a port that names no buffer
 *   CHAN_E_CONTEXT     a call that may wait, made from a handler
 */
#define CHAN_E_BADPORT          (-1)
#define CHAN_E_STATE            (-2)
#define CHAN_E_MIGRATING        (-3)
#define CHAN_E_ARG              (-4)
#define CHAN_E_NOPORTS          (-5)
#define CHAN_E_CLOSED           (-6)
#define CHAN_E_TYPE             (-7)
#define CHAN_E_TOOBIG           (-8)
#define CHAN_E_NOBUF            (-9)
#define CHAN_E_CONTEXT          (-10)

/* ---- channels ---------------------------------------------------------- */

/*
 * chan_alloc: makes a channel whose two companion ports are both on this
 * node, IDLE, and stores them in *@a and *@b.  Either end may then be
 * sent to another node with chan_output_port().  Returns 0;
 * CHAN_E_ARG if @a or @b is NULL; CHAN_E_NOPORTS if fewer than two
 * ports are free (nothing allocated).
 */
int chan_alloc(chan_port *a, chan_port *b);

/*
 * chan_alloc_to: makes a channel with one end on this node, stored in
 * *@local, and the other on node @node, which that node's program takes
 * with chan_accept(<this node>, @key).  Waits until @node has allocated
 * its end (data may be output on *@local at once: it is buffered there
 * until that end is accepted and input).  @node may be this node.
 * Returns 0; CHAN_E_ARG if @local is NULL or @node is not in the
 * cluster; CHAN_E_NOPORTS if this node or @node has no free port.
 */
int chan_alloc_to(unsigned node, uint32_t key, chan_port *local);

/*
 * chan_accept: waits until node @node has made a channel to this node
 * with chan_alloc_to(<this node>, @key) and stores this node's end in
 * *@port.  Ends offered with the same @node and @key are accepted in
 * the order they were made.  Returns 0, or CHAN_E_ARG if @port is NULL
 * or @node is not in the cluster.
 */
int chan_accept(unsigned node, uint32_t key, chan_port *port);

/*
 * chan_free: frees the port @p (EMPTY; its name is never valid again).
 * Data buffered there is discarded.  The companion is told: it becomes
 * closed, and an input or output waiting on it, or started on it later,
 * returns CHAN_E_CLOSED (data already buffered there can still be
 * input); a port migrating towards it is wired up all the same.
 * Returns 0; CHAN_E_BADPORT; CHAN_E_MIGRATING if @p is migrating;
 * CHAN_E_STATE if it is inputting, outputting or confirming, or holds a
 * port that was sent to it (input it first: a port in flight must not
 * be lost).
 */
int chan_free(chan_port p);

/* ---- data over ports (section 3.1) ------------------------------------- */

/*
 * chan_max_data: the longest output here: CHAN_MAX_DATA in software, the
 * channel controller's limit (1 GiB) on the device, where data past
 * CHAN_MAX_DATA reaches an input whose buffer is that long straight into
 * that buffer, and waits at the sender until such an input comes
 * (docs/chan.rst, "Long data through <chan.h>").
 */
size_t chan_max_data(void);

/*
 * chan_output: outputs @len bytes at @data (any alignment, 0 ..
 * chan_max_data()) on @p: pre-sends them to the companion at once and
 * waits until the companion's process has input them.  Returns 0;
 * CHAN_E_BADPORT; CHAN_E_ARG (@data NULL with @len > 0, @len over
 * chan_max_data()); CHAN_E_MIGRATING; CHAN_E_STATE if @p is already in
 * an input or output, confirming, or holds data from its companion
 * (both ends would output at once); CHAN_E_CLOSED if the companion has
 * been freed (before or while waiting).
 */
int chan_output(chan_port p, const void *data, size_t len);

/*
 * chan_output_start: the pre-send of section 2.2 alone: sends the data
 * as chan_output() does and returns without waiting (the port stays
 * OUTPUTTING until the companion inputs it).  @data must not change
 * until chan_output_wait(@p) has returned: it is sent again from there
 * if the companion moves before it has input it.  Returns as
 * chan_output() does, without waiting.
 */
int chan_output_start(chan_port p, const void *data, size_t len);

/*
 * chan_output_wait: the synchronisation of section 2.2: waits until the
 * output (of data or of a port) under way on @p has completed.  Returns
 * 0 (also when none is under way), CHAN_E_CLOSED if the companion was
 * freed before it input what was output, CHAN_E_BADPORT, or
 * CHAN_E_STATE if another call is already waiting on @p.
 */
int chan_output_wait(chan_port p);

/*
 * chan_input: inputs the next data on @p into @buf (at most @maxlen
 * bytes): takes the data buffered there, or waits for it, and
 * acknowledges it to the companion.  Returns its length (0 ..
 * chan_max_data()); CHAN_E_BADPORT; CHAN_E_ARG if @buf is NULL with
 * @maxlen > 0; CHAN_E_MIGRATING; CHAN_E_STATE if @p is in another
 * input or an output; CHAN_E_TOOBIG if the data is longer than @maxlen
 * (it stays buffered, not acknowledged: input it with a larger buffer);
 * CHAN_E_TYPE if a port was sent instead (it stays buffered: use
 * chan_input_port()); CHAN_E_CLOSED if the companion is freed and
 * nothing is buffered.
 */
int chan_input(chan_port p, void *buf, size_t maxlen);

/*
 * chan_output_input: a ping-pong's turn: chan_output(@p, @data, @len),
 * then chan_input(@p, @buf, @maxlen), with the same results (the
 * output's error, if it fails, and no input; else the input's).  On the
 * device, with @maxlen up to CHAN_MAX_DATA, it is one instruction
 * (OUTPUT_INPUT) and one wait: the input starts when the companion has
 * input the data, with no event between; the answer is copied from the
 * port's buffer into @buf.  In software, or with a longer @maxlen, it is
 * the two calls.
 */
int chan_output_input(chan_port p, const void *data, size_t len,
                      void *buf, size_t maxlen);

/*
 * chan_set_buffer: names the buffer [@buf, @buf + @size) as the port's
 * address (section 4): where the next data arriving on @p is stored.
 * NULL (with any @size) makes the library store it (copied out by the
 * input).  A new port names none.  Data already buffered stays where it
 * is.  Returns 0; CHAN_E_BADPORT; CHAN_E_ARG if @buf is not NULL and
 * @size is 0; CHAN_E_MIGRATING; CHAN_E_STATE while an input waits on @p.
 */
int chan_set_buffer(chan_port p, void *buf, size_t size);

/*
 * chan_input_next: the paper's input instruction (section 2.1): waits for
 * the data on @p, which is stored in the buffer the port names (set by
 * chan_set_buffer() or the previous chan_input_next()), stores that
 * buffer's address in *@data, makes [@next, @next + @next_size) the
 * port's buffer for the next data, and acknowledges.  The data of THIS
 * input is where the PREVIOUS call said.  Data that arrived before the
 * port named a buffer (or that did not fit it) is copied into the named
 * buffer first.  Returns the length; CHAN_E_BADPORT; CHAN_E_ARG (@data
 * NULL, @next NULL or @next_size 0); CHAN_E_NOBUF if the port names no
 * buffer; CHAN_E_TOOBIG if the data does not fit the named buffer (it
 * stays buffered); and as chan_input() otherwise.
 */
int chan_input_next(chan_port p, void *next, size_t next_size,
                    void **data);

/* ---- ports over ports (section 3.2) ------------------------------------ */

/*
 * chan_output_port: sends the port @p of this node over the channel of
 * port @t and waits until the protocol has moved it (stage 4: the
 * origin deletes @p when its companion is wired to the new port).  @p's
 * name is then no longer valid here; the companion talks to the new
 * port directly.  Data pre-sent to @p and not yet input is discarded
 * here and sent again by the companion to the new port.  Returns 0;
 * CHAN_E_BADPORT (either port); CHAN_E_ARG if @p is @t or @t's
 * companion; CHAN_E_MIGRATING if either is migrating; CHAN_E_STATE if
 * @t is not IDLE or @p is inputting, outputting or confirming;
 * CHAN_E_CLOSED if @t's companion is freed (before: nothing sent; or
 * before it input the port: @p is then IDLE again, still usable here).
 */
int chan_output_port(chan_port t, chan_port p);

/*
 * chan_output_port_start: stage 1 alone: @p becomes MIGRATING and its
 * companion's name is pre-sent over @t; returns at once.  Finish with
 * chan_output_wait(@t).  Meanwhile @p refuses every call with
 * CHAN_E_MIGRATING.  Returns as chan_output_port() does, without
 * waiting.
 */
int chan_output_port_start(chan_port t, chan_port p);

/*
 * chan_input_port: inputs a port on @t (stage 2): waits for one, makes a
 * new port of this node wired to the sent port's companion, and waits
 * for the final confirmation (stages 3-4, or 5 when the companion is
 * migrating too) before storing it in *@p.  Returns 0; CHAN_E_BADPORT;
 * CHAN_E_ARG if @p is NULL; CHAN_E_MIGRATING; CHAN_E_STATE if @t is in
 * another input or an output; CHAN_E_TYPE if data was sent instead (it
 * stays buffered); CHAN_E_NOPORTS if the table is full (the port stays
 * buffered on @t: free a port and call again); CHAN_E_CLOSED if @t's
 * companion is freed and nothing is buffered.
 */
int chan_input_port(chan_port t, chan_port *p);

/* ---- inspection -------------------------------------------------------- */

/*
 * chan_state: returns the state of port @p (enum chan_state; never
 * CHAN_EMPTY), or CHAN_E_BADPORT.
 */
int chan_state(chan_port p);

/*
 * chan_companion: stores the companion of @p in *@c: CHAN_NO_PORT once
 * the companion has been freed.  Returns 0, CHAN_E_BADPORT, or
 * CHAN_E_ARG if @c is NULL.
 */
int chan_companion(chan_port p, chan_port *c);

/* chan_state_name: "EMPTY", "IDLE", ...; "?" for a bad value. */
const char *chan_state_name(int state);

/* chan_strerror: a short text for 0 or a CHAN_E_* code. */
const char *chan_strerror(int err);

/* Counters since start-up (this node). */
struct chan_stats {
    uint64_t calls;             /* calls handed to the protocol thread */
    uint64_t errors;            /* calls refused (reported) */
    uint64_t msgs_sent;         /* protocol messages sent */
    uint64_t data_sent;         /* data messages sent (resends included) */
    uint64_t resends;           /* data or ports sent again (stage 3) */
    uint64_t buffered;          /* data or ports stored BUFFERFULL */
    uint64_t dropped;           /* data or ports dropped: port MIGRATING */
    uint64_t stale;             /* old or duplicate messages, ignored */
    uint64_t migrations;        /* ports moved away (stage 4 here) */
    uint64_t forwards;          /* wire-ups forwarded (stage 5) */
    uint64_t protocol_errors;   /* impossible messages (reported) */
    uint64_t turns;             /* chan_output_input: one instruction */
    uint32_t ports_in_use;      /* non-EMPTY ports now */
};

/* chan_get_stats: copies the counters to *@s (nothing if NULL). */
void chan_get_stats(struct chan_stats *s);

/*
 * chan_dump: prints every port of this node that is not EMPTY, one line
 * each ("chan: node K: port N:I/G STATE comp ... tx T rx R ..."), for
 * debugging a program that hangs.  It reads the table without waiting:
 * call it from a handler (a timer) to see the protocol thread's view.
 */
void chan_dump(void);

#endif /* CHAN_H */
