/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan on the node controller's channel controller (docs/chan.rst,
 * "<chan.h> on the device").
 *
 * When the node controller offers its channel controller (FEATURES bit
 * CHAN) the port table is the device's: each call of chan.h is handed to
 * the protocol thread as on the software path (calls.c) and carried out
 * there with the device's instructions (TEMPEST_CMD_CHAN): chan_output =
 * OUTPUT, chan_input = INPUT, chan_output_port = OUTPUT_PORT,
 * chan_input_port = INPUT_PORT, chan_free = FREE, chan_alloc = two ALLOC
 * and a CONNECT.  A call that waits keeps its request on the port here
 * (struct dport) and sleeps in tempest_wait(); the device's completion,
 * a TEMPEST_EV_CHAN event, reaches dev_event() on the protocol thread,
 * which completes it.  The device moves the data and runs the paper's
 * protocol, including the five stages of a port move; this file sends
 * only the active messages that make a channel between two nodes
 * (chan_alloc_to / chan_accept: the device has no CREATE).
 *
 * What the library adds to the device's port (struct dport): two buffers
 * of CHAN_MAX_DATA bytes, one named to the device as the port's address
 * (pre-sent data arrives there), the other the next input's.  chan_input
 * on an IDLE port names the caller's buffer as this input's (INPUT_HERE,
 * input_here()): the data lands there, uncopied, of any length up to its
 * size, and the port's buffer stays the library's; data already there
 * (BUFFERFULL) is copied to it by the device within the instruction, and
 * data landing there by the device before its ACK.
 * chan_input_next copies into the buffer chan_set_buffer() named, or, one
 * longer than CHAN_MAX_DATA, names it to the device first
 * (direct_buffer()).  Data
 * pre-sent into the library's buffer and too long for the caller's has
 * been acknowledged by the device's INPUT: it stays in the library's
 * buffer (the port reads BUFFERFULL) for the next input.  Data too long
 * for the buffer the device stores into waits at the sender,
 * unacknowledged: an input waiting ends CHAN_E_TOOBIG
 * (TEMPEST_CHAN_EV_TOO_BIG) and the port reads BUFFERFULL (the device's
 * WAITING) until an input with a buffer it fits, as in software.
 *
 * Names: a chan_port on the device is node << 20 | device index << 8 | 1:
 * the device's ids have no generation (docs/chan.rst says what that
 * changes).  Everything here runs on the protocol thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-internal.h"
#include "tempest/client.h"
#include "tempest/nc.h"

#define DEV_GEN             1       /* the one generation of a name */
#define DEV_BUF             CHAN_MAX_DATA

_Static_assert(TEMPEST_CHAN_PORTS <= CHAN_PORTS, "device ports fit names");

bool cp_on_device;

/* What a call waits for on a port (struct dport mode). */
enum { W_NONE, W_COPY, W_NEXT, W_PORT, W_OUT, W_ALLOC_TO, W_TURN };

/* The library's side of a device port. */
struct dport {
    uint8_t *buf;               /* the port's address at the device */
    uint8_t *spare;             /* the next input's; held data is here */
    bool held;                  /* data input, refused as too long */
    uint32_t held_len;
    bool carrying;              /* OUTPUT_PORT under way: cargo is moving */
    uint16_t cargo;
    uint8_t mode;               /* W_*: what the waiter waits for */
    void *ubuf;                 /* chan_set_buffer(): the next data's */
    uint32_t ubufsize;
    uint8_t *newbuf;            /* INPUT_PORT: the new port's buffer */
    int out_err;                /* an output that ended with no waiter */
    bool dying;                 /* freed by a handler: FREE after it */
    bool held_port;             /* STATE's: it holds a port sent to it */
    bool waiting;               /* STATE's: data too long for buf waits */
    uint8_t *direct;            /* the input's own buffer, named to the */
    size_t direct_size;         /* device (BUFFER, INPUT_HERE) */
    bool here;                  /* INPUT_HERE: the port's buffer stays */
    bool stray;                 /* the device's buffer is a caller's, */
                                /* too short for the data waiting */
    uint32_t key;               /* chan_alloc_to: the key, the node */
    unsigned node;
    struct chan_req *waiter;
};

static struct dport dports[TEMPEST_CHAN_PORTS];

static void dcreate_h(TPPI_NodeId src, int size);
static void dcreated_h(TPPI_NodeId src, int size);
static void dconnected_h(TPPI_NodeId src, int size);
static void dfree_h(TPPI_NodeId src, int size);
static int dev_input(struct chan_req *r);

/* ---- names and instructions ---------------------------------------- */

/* Consumes the @size bytes of a malformed message. */
static void skip_words(int size)
{
    while (size >= 4) {
        (void)TPPI_recv_W();
        size -= 4;
    }
}

static chan_port dev_name(uint32_t id)
{
    if (id == TEMPEST_CHAN_NONE) {
        return CHAN_NO_PORT;
    }
    return (chan_port)TEMPEST_CHAN_ID_NODE(id) << CP_NODE_SHIFT |
           (chan_port)TEMPEST_CHAN_ID_INDEX(id) << CP_INDEX_SHIFT | DEV_GEN;
}

static uint32_t dev_id(unsigned idx)
{
    return TEMPEST_CHAN_ID(TPPI_self_address, idx);
}

/*
 * One instruction; returns 0 and the RESULT in *@res, or the reason it
 * failed (TEMPEST_CMD_E_*).
 */
static uint32_t dcmd6(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                      uint64_t a4, uint64_t a5, uint64_t *res)
{
    uint64_t result = 0;
    uint32_t reason, st;

    st = nc_chan6(op, port, a2, a3, a4, a5, &result, &reason);
    if (res) {
        *res = result;
    }
    if (st == TEMPEST_CMD_SUCCESS) {
        return 0;
    }
    return reason ? reason : TEMPEST_CMD_E_BAD_OP;
}

static uint32_t dcmd(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                     uint64_t *res)
{
    return dcmd6(op, port, a2, a3, 0, 0, res);
}

/* A device reason as a CHAN_E_* code (@state: the port's, for STATE). */
static int dev_err(uint32_t reason, int state)
{
    switch (reason) {
    case 0:
        return 0;
    case TEMPEST_CMD_E_BAD_PORT:
        return CHAN_E_BADPORT;
    case TEMPEST_CMD_E_PORT_STATE:
        return state == CHAN_MIGRATING ? CHAN_E_MIGRATING : CHAN_E_STATE;
    case TEMPEST_CMD_E_NO_PORTS:
        return CHAN_E_NOPORTS;
    case TEMPEST_CMD_E_CLOSED:
    case TEMPEST_CMD_E_PEER_DOWN:
        return CHAN_E_CLOSED;
    case TEMPEST_CMD_E_TOO_BIG:
        return CHAN_E_TOOBIG;
    case TEMPEST_CMD_E_CHAN_TYPE:
        return CHAN_E_TYPE;
    default:
        return CHAN_E_ARG;
    }
}

/*
 * The port @p names, if it is a live port of this node: its entry, its
 * state in *@state and its companion's device id in *@comp; else NULL.
 */
static struct dport *dfind(chan_port p, int *state, uint32_t *comp)
{
    unsigned idx = CHAN_PORT_INDEX(p);
    uint64_t res;

    if (CHAN_PORT_NODE(p) != TPPI_self_address ||
        idx >= TEMPEST_CHAN_PORTS || (p & 0xFFU) != DEV_GEN ||
        dports[idx].dying ||
        dcmd(TEMPEST_CHAN_OP_STATE, dev_id(idx), 0, 0, &res)) {
        return NULL;
    }
    *state = (int)(res & 0xFFU);
    dports[idx].held_port = (res & TEMPEST_CHAN_ST_HELD_PORT) != 0;
    dports[idx].waiting = (res & TEMPEST_CHAN_ST_WAITING) != 0;
    if (comp) {
        *comp = (uint32_t)(res >> 32);
    }
    return &dports[idx];
}

static unsigned dindex(const struct dport *d)
{
    return (unsigned)(d - dports);
}

/* Sets up the library's side of the new device port @idx, buffer @buf. */
static void dport_init(unsigned idx, uint8_t *buf, uint8_t *spare)
{
    struct dport *d = &dports[idx];

    memset(d, 0, sizeof(*d));
    d->buf = buf;
    d->spare = spare;
}

/* The device port behind @d is EMPTY: its buffers go back. */
static void dport_release(struct dport *d)
{
    free(d->buf);
    free(d->spare);
    free(d->newbuf);
    memset(d, 0, sizeof(*d));
}

/* The call @r waits on @d for @mode (a W_*); returns CP_PENDING. */
static int wait_on(struct dport *d, struct chan_req *r, uint8_t mode)
{
    d->waiter = r;
    d->mode = mode;
    return CP_PENDING;
}

/* A new IDLE port with no companion; its index in *@idx, or an error. */
static int dalloc(unsigned *idx)
{
    uint8_t *buf = malloc(DEV_BUF);
    uint8_t *spare = malloc(DEV_BUF);
    uint64_t res;
    uint32_t reason;

    if (!buf || !spare) {
        free(buf);
        free(spare);
        return CHAN_E_NOPORTS;
    }
    reason = dcmd(TEMPEST_CHAN_OP_ALLOC, (uintptr_t)buf, DEV_BUF, 0, &res);
    if (reason) {
        free(buf);
        free(spare);
        return dev_err(reason, 0);
    }
    *idx = TEMPEST_CHAN_ID_INDEX(res);
    dport_init(*idx, buf, spare);
    return 0;
}

/*
 * After the handler that freed the port @idx (dev_free): the device's
 * FREE, also if a port has been sent to it meanwhile (its sender then
 * abandons that move, as on the software protocol where the port data
 * reaches a freed port).
 */
static void dfree_h(TPPI_NodeId src, int size)
{
    unsigned idx;

    if (size != 4 || src != TPPI_self_address) {
        cp_protocol_error("a %d-byte free message from node %u", size, src);
        skip_words(size);
        return;
    }
    idx = (unsigned)TPPI_recv_W();
    if (idx >= TEMPEST_CHAN_PORTS || !dports[idx].dying) {
        cp_protocol_error("free of port index %u: not freed", idx);
        return;
    }
    if (dcmd(TEMPEST_CHAN_OP_FREE, dev_id(idx), TEMPEST_CHAN_FREE_HELD, 0,
             NULL)) {
        /* Its buffers stay the device's: kept, the name stays dead. */
        cp_protocol_error("free of port index %u refused by the device",
                          idx);
        return;
    }
    dport_release(&dports[idx]);
}

static void dfree(unsigned idx)
{
    (void)dcmd(TEMPEST_CHAN_OP_FREE, dev_id(idx), 0, 0, NULL);
    dport_release(&dports[idx]);
}

/* ---- making channels ------------------------------------------------ */

static int dev_alloc(struct chan_req *r)
{
    unsigned a, b;
    int rc = dalloc(&a);

    if (rc) {
        return rc;
    }
    rc = dalloc(&b);
    if (rc) {
        dfree(a);
        return rc;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_CONNECT, dev_id(a), dev_id(b), 0,
                      NULL), 0);
    if (rc) {
        dfree(a);
        dfree(b);
        return rc;
    }
    r->port_out = dev_name(dev_id(a));
    r->port_out2 = dev_name(dev_id(b));
    return 0;
}

/*
 * chan_alloc_to: this end is made now (no companion); @node makes its
 * end, connects it to this one and answers (dcreated_h); this end is
 * connected and the far end offered to its accept only then
 * (dconnected_h), so that no data can reach a port not yet connected.
 */
static int dev_alloc_to(struct chan_req *r)
{
    unsigned idx;
    int rc = dalloc(&idx);

    if (rc) {
        return rc;
    }
    dports[idx].key = r->key;
    dports[idx].node = r->node;
    cp_stats.msgs_sent++;
    TPPI_send_WW(r->node, dcreate_h, (int)r->key, (int)dev_id(idx));
    return wait_on(&dports[idx], r, W_ALLOC_TO);
}

static void dcreate_h(TPPI_NodeId src, int size)
{
    uint32_t key, from;
    unsigned idx;

    if (size != 8) {
        cp_protocol_error("a %d-byte create message from node %u", size,
                          src);
        skip_words(size);
        return;
    }
    key = (uint32_t)TPPI_recv_W();
    from = (uint32_t)TPPI_recv_W();
    cp_stats.msgs_sent++;
    if (TEMPEST_CHAN_ID_NODE(from) != src || dalloc(&idx)) {
        TPPI_send_WWW(src, dcreated_h, (int)from, (int)TEMPEST_CHAN_NONE,
                      (int)key);
        return;
    }
    if (dcmd(TEMPEST_CHAN_OP_CONNECT, dev_id(idx), from, 0, NULL)) {
        dfree(idx);
        TPPI_send_WWW(src, dcreated_h, (int)from, (int)TEMPEST_CHAN_NONE,
                      (int)key);
        return;
    }
    TPPI_send_WWW(src, dcreated_h, (int)from, (int)dev_id(idx), (int)key);
}

static void dcreated_h(TPPI_NodeId src, int size)
{
    uint32_t from, far, key;
    struct dport *d;
    struct chan_req *r;
    unsigned idx;

    if (size != 12) {
        cp_protocol_error("a %d-byte created message from node %u", size,
                          src);
        skip_words(size);
        return;
    }
    from = (uint32_t)TPPI_recv_W();
    far = (uint32_t)TPPI_recv_W();
    key = (uint32_t)TPPI_recv_W();
    idx = TEMPEST_CHAN_ID_INDEX(from);
    if (TEMPEST_CHAN_ID_NODE(from) != TPPI_self_address ||
        idx >= TEMPEST_CHAN_PORTS || dports[idx].mode != W_ALLOC_TO ||
        dports[idx].node != src || dports[idx].key != key) {
        cp_protocol_error("created for port 0x%x from node %u: not made",
                          (unsigned)from, src);
        return;
    }
    d = &dports[idx];
    r = d->waiter;
    d->waiter = NULL;
    d->mode = W_NONE;
    if (far == TEMPEST_CHAN_NONE || TEMPEST_CHAN_ID_NODE(far) != src) {
        dfree(idx);
        cp_complete(r, CHAN_E_NOPORTS);
        return;
    }
    /* A far end on this node connected both already (CONNECT). */
    if (src != TPPI_self_address &&
        dcmd(TEMPEST_CHAN_OP_CONNECT, from, far, 0, NULL)) {
        cp_protocol_error("created: port 0x%x cannot be connected to 0x%x",
                          (unsigned)from, (unsigned)far);
    }
    r->port_out = dev_name(from);
    cp_complete(r, 0);
    cp_stats.msgs_sent++;
    TPPI_send_WW(src, dconnected_h, (int)key, (int)far);
}

static void dconnected_h(TPPI_NodeId src, int size)
{
    uint32_t key, port;

    if (size != 8) {
        cp_protocol_error("a %d-byte connected message from node %u", size,
                          src);
        skip_words(size);
        return;
    }
    key = (uint32_t)TPPI_recv_W();
    port = (uint32_t)TPPI_recv_W();
    cp_offer(src, key, dev_name(port));
}

static int dev_free(struct chan_req *r)
{
    int state;
    struct dport *d = dfind(r->a, &state, NULL);
    int rc;

    if (!d) {
        return CHAN_E_BADPORT;
    }
    if (state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (state != CHAN_IDLE && state != CHAN_BUFFERFULL) {
        return CHAN_E_STATE;
    }
    if (r->in_handler) {
        /*
         * As on the software protocol, where the companion learns of it
         * by a message handled after this handler: the name is dead now,
         * the device's port after the handler (dfree_h), so that a call
         * of this handler still finds a companion on this node open.
         */
        if (d->held_port) {
            return CHAN_E_STATE;        /* as FREE would say */
        }
        d->dying = true;
        cp_stats.msgs_sent++;
        TPPI_send_W(TPPI_self_address, dfree_h, (int)dindex(d));
        return 0;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_FREE, dev_id(dindex(d)), 0, 0, NULL),
                 state);
    if (rc == 0) {
        dport_release(d);
    }
    return rc;
}

/* ---- data ------------------------------------------------------------ */

/*
 * The port of an output (@r->a): IDLE and holding nothing; else NULL and
 * the refusal in *@rc.
 */
static struct dport *output_port(struct chan_req *r, int *state, int *rc)
{
    struct dport *d = dfind(r->a, state, NULL);

    *rc = !d ? CHAN_E_BADPORT :
          *state == CHAN_MIGRATING ? CHAN_E_MIGRATING :
          *state != CHAN_IDLE || d->held ? CHAN_E_STATE : 0;
    return *rc ? NULL : d;
}

/* After an INPUT_HERE too short (dev_event): the port's buffer ours again. */
static void unstray(struct dport *d)
{
    d->stray = false;
    dcmd(TEMPEST_CHAN_OP_BUFFER, dev_id(dindex(d)), (uintptr_t)d->buf,
         DEV_BUF, NULL);
}

static int dev_output(struct chan_req *r, bool wait)
{
    int state, rc;
    struct dport *d = output_port(r, &state, &rc);
    uint64_t res;

    if (!d) {
        return rc;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_OUTPUT, dev_id(dindex(d)),
                      (uintptr_t)r->src, r->len, &res), state);
    if (rc) {
        return rc;
    }
    cp_stats.data_sent++;
    d->out_err = 0;
    if (res == 1) {
        return 0;               /* input already (a companion here) */
    }
    return wait ? wait_on(d, r, W_OUT) : 0;
}

/*
 * chan_output_input: a ping-pong's turn in one OUTPUT_INPUT instruction
 * (node controller 1.16): the output, and once the companion has input
 * it the input, into the port's buffer (the spare one named next, as
 * dev_input()'s INPUT), with one wait for the INPUT event and no OUTPUT
 * event between.  The input's buffer is at most DEV_BUF long
 * (cp_dev_turn_max(): chan_output_input() makes two calls of a longer
 * one).
 */
static int dev_output_input(struct chan_req *r)
{
    int state, rc;
    struct dport *d = output_port(r, &state, &rc);
    uint64_t res;

    if (!d) {
        return rc;
    }
    if (d->stray) {
        unstray(d);
    }
    d->direct = NULL;
    rc = dev_err(dcmd6(TEMPEST_CHAN_OP_OUTPUT_INPUT, dev_id(dindex(d)),
                       (uintptr_t)r->src, r->len, (uintptr_t)d->spare,
                       DEV_BUF, &res), state);
    if (rc) {
        return rc;
    }
    cp_stats.data_sent++;
    cp_stats.turns++;
    d->out_err = 0;
    /* From here on the call is the input (deliver() reads r->len). */
    r->op = OP_INPUT;
    r->len = r->in_len;
    if (res == 1) {
        /* Input already (a companion here): no input started. */
        return dev_input(r);
    }
    return wait_on(d, r, W_TURN);
}

size_t cp_dev_turn_max(void)
{
    return DEV_BUF;
}

static int dev_output_wait(struct chan_req *r)
{
    int state, rc;
    struct dport *d = dfind(r->a, &state, NULL);

    if (!d) {
        return CHAN_E_BADPORT;
    }
    if (state == CHAN_OUTPUTTING) {
        return d->waiter ? CHAN_E_STATE : wait_on(d, r, W_OUT);
    }
    rc = d->out_err;
    d->out_err = 0;
    return rc;
}

/*
 * The data of an input (@len bytes, in d->spare once the buffers are
 * swapped) to the call @r: copied to its buffer, or kept (too long).
 * Returns the call's result.
 */
static int deliver(struct dport *d, struct chan_req *r, uint32_t len)
{
    uint8_t *data = d->spare;

    if (d->direct) {
        /* The device stored it in the input's own buffer. */
        d->direct = NULL;
        if (r->op == OP_INPUT_NEXT) {
            r->ptr_out = d->ubuf;
            d->ubuf = r->dst;
            d->ubufsize = (uint32_t)r->len;
        }
        return (int)len;
    }
    if (r->op == OP_INPUT_NEXT) {
        if (!d->ubuf || len > d->ubufsize) {
            d->held = true;
            d->held_len = len;
            return d->ubuf ? CHAN_E_TOOBIG : CHAN_E_NOBUF;
        }
        memcpy(d->ubuf, data, len);
        r->ptr_out = d->ubuf;
        d->ubuf = r->dst;
        d->ubufsize = (uint32_t)r->len;
        return (int)len;
    }
    if (len > r->len) {
        d->held = true;
        d->held_len = len;
        return CHAN_E_TOOBIG;
    }
    if (len) {
        memcpy(r->dst, data, len);
    }
    return (int)len;
}

/*
 * chan_input on an IDLE port: INPUT_HERE names the caller's buffer as
 * this input's (the data lands there, nothing copied, of any length up
 * to its size) and the port's buffer stays the library's for what comes
 * before the next input.  Data already there (it came just now), or
 * landing there (a long DATA under way), is copied by the device into the
 * caller's buffer before it acknowledges it; data there, landing or
 * waiting at the sender longer than the caller's buffer: CHAN_E_TOOBIG,
 * it waits on.
 */
static int input_here(struct dport *d, struct chan_req *r)
{
    uint64_t res;
    int rc;

    rc = dev_err(dcmd(TEMPEST_CHAN_OP_INPUT_HERE, dev_id(dindex(d)),
                      (uintptr_t)r->dst, r->len, &res), CHAN_IDLE);
    if (rc) {
        return rc;
    }
    if (res & TEMPEST_CHAN_PRESENT) {
        /*
         * It came just now: the device copied it from the port's buffer
         * (which stays the port's, the next DATA may be landing there).
         */
        cp_stats.buffered++;
        return (int)(uint32_t)res;
    }
    d->here = true;
    d->direct = r->len ? r->dst : NULL;     /* the device's address */
    d->direct_size = r->len;
    return wait_on(d, r, W_COPY);
}

/* The device has input into d->buf: the buffers change places. */
static void swap_bufs(struct dport *d)
{
    uint8_t *b = d->buf;

    d->buf = d->spare;
    d->spare = b;
}

/*
 * An input into a buffer longer than the library's (@r's, or for
 * chan_input_next the one chan_set_buffer() named), with nothing held
 * here: that buffer becomes the port's at the device (BUFFER), so data
 * of any length up to its size lands there, and what waited at the
 * sender for a buffer it fits comes now.  Returns 0 or the refusal.
 */
static int direct_buffer(struct dport *d, struct chan_req *r, int state)
{
    uint8_t *to = r->op == OP_INPUT_NEXT ? d->ubuf : r->dst;
    size_t size = r->op == OP_INPUT_NEXT ? d->ubufsize : r->len;
    int rc;

    d->direct = NULL;
    if (state != CHAN_IDLE || size <= DEV_BUF) {
        return 0;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_BUFFER, dev_id(dindex(d)),
                      (uintptr_t)to, size, NULL), state);
    if (rc == 0) {
        d->direct = to;
        d->direct_size = size;
    }
    /* PORT_STATE: data is landing in ours (it fits): input it there. */
    return rc == CHAN_E_STATE ? 0 : rc;
}

static int dev_input(struct chan_req *r)
{
    int state, rc;
    struct dport *d = dfind(r->a, &state, NULL);
    uint64_t res;

    if (!d) {
        return CHAN_E_BADPORT;
    }
    if (d->held) {
        /* Refused before as too long: it is here, not at the device. */
        d->held = false;
        rc = deliver(d, r, d->held_len);
        return rc;
    }
    if (d->stray && state == CHAN_IDLE) {
        unstray(d);
        d = dfind(r->a, &state, NULL);
        if (!d) {
            return CHAN_E_BADPORT;
        }
    }
    if (state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (state != CHAN_IDLE && state != CHAN_BUFFERFULL) {
        return CHAN_E_STATE;
    }
    if (r->op == OP_INPUT_NEXT && !d->ubuf) {
        return CHAN_E_NOBUF;
    }
    if (r->op == OP_INPUT && state == CHAN_IDLE) {
        return input_here(d, r);
    }
    rc = direct_buffer(d, r, state);
    if (rc) {
        return rc;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_INPUT, dev_id(dindex(d)),
                      (uintptr_t)d->spare, DEV_BUF, &res), state);
    if (rc) {
        if (d->direct) {
            /* Refused (too long for it too: it waits on): ours again. */
            d->direct = NULL;
            dcmd(TEMPEST_CHAN_OP_BUFFER, dev_id(dindex(d)),
                 (uintptr_t)d->buf, DEV_BUF, NULL);
        }
        return rc;
    }
    if (res & TEMPEST_CHAN_PRESENT) {
        cp_stats.buffered++;
        swap_bufs(d);
        return deliver(d, r, (uint32_t)res);
    }
    return wait_on(d, r, r->op == OP_INPUT_NEXT ? W_NEXT : W_COPY);
}

static int dev_set_buffer(struct chan_req *r)
{
    int state;
    struct dport *d = dfind(r->a, &state, NULL);

    if (!d) {
        return CHAN_E_BADPORT;
    }
    if (state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (state == CHAN_INPUTTING) {
        return CHAN_E_STATE;
    }
    d->ubuf = r->dst;
    d->ubufsize = r->dst ? (uint32_t)r->len : 0;
    return 0;
}

/* ---- ports over ports ------------------------------------------------ */

static int dev_output_port(struct chan_req *r, bool wait)
{
    int ts, qs, rc;
    uint32_t tcomp;
    struct dport *t = dfind(r->a, &ts, &tcomp);
    struct dport *q = dfind(r->b, &qs, NULL);

    if (!t || !q) {
        return CHAN_E_BADPORT;
    }
    if (t == q || dev_name(tcomp) == r->b) {
        return CHAN_E_ARG;      /* it would never arrive */
    }
    if (ts == CHAN_MIGRATING || qs == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (ts != CHAN_IDLE || (qs != CHAN_IDLE && qs != CHAN_BUFFERFULL) ||
        q->held || q->waiter) {
        return CHAN_E_STATE;
    }
    if (tcomp == TEMPEST_CHAN_NONE) {
        return CHAN_E_CLOSED;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_OUTPUT_PORT, dev_id(dindex(t)),
                      dev_id(dindex(q)), 0, NULL), ts);
    if (rc) {
        return rc;
    }
    t->carrying = true;
    t->cargo = (uint16_t)dindex(q);
    t->out_err = 0;
    return wait ? wait_on(t, r, W_OUT) : 0;
}

static int dev_input_port(struct chan_req *r)
{
    int state, rc;
    struct dport *t = dfind(r->a, &state, NULL);
    uint8_t *nb;

    if (!t) {
        return CHAN_E_BADPORT;
    }
    if (t->held) {
        return CHAN_E_TYPE;
    }
    if (state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (state != CHAN_IDLE && state != CHAN_BUFFERFULL) {
        return CHAN_E_STATE;
    }
    nb = malloc(DEV_BUF);
    if (!nb) {
        return CHAN_E_NOPORTS;
    }
    rc = dev_err(dcmd(TEMPEST_CHAN_OP_INPUT_PORT, dev_id(dindex(t)),
                      (uintptr_t)nb, DEV_BUF, NULL), state);
    if (rc) {
        free(nb);
        return rc;
    }
    t->newbuf = nb;
    return wait_on(t, r, W_PORT);
}

/* ---- events ---------------------------------------------------------- */

/* INPUT_PORT on @t ended with @status, the new port @port. */
static int port_input_done(struct dport *t, struct chan_req *r,
                           uint64_t status, uint64_t port)
{
    unsigned idx = TEMPEST_CHAN_ID_INDEX(port);
    uint8_t *nb = t->newbuf;
    uint8_t *spare;

    t->newbuf = NULL;
    if (status != 0 && status != TEMPEST_CMD_E_PEER_DOWN) {
        free(nb);
        return dev_err((uint32_t)status, 0);
    }
    spare = malloc(DEV_BUF);
    if (port > UINT32_MAX || TEMPEST_CHAN_ID_NODE(port) !=
        TPPI_self_address || idx >= TEMPEST_CHAN_PORTS || !spare) {
        cp_protocol_error("input of a port: new port 0x%llx",
                          (unsigned long long)port);
        free(nb);
        free(spare);
        return CHAN_E_NOPORTS;
    }
    dport_init(idx, nb, spare);
    r->port_out = dev_name((uint32_t)port);
    return 0;
}

/* A TEMPEST_EV_CHAN event, on the protocol thread. */
static void dev_event(const struct nc_event *ev)
{
    uint32_t id = (uint32_t)ev->a;
    unsigned kind = (unsigned)(ev->a >> 32);
    unsigned idx = TEMPEST_CHAN_ID_INDEX(id);
    struct dport *d;
    struct chan_req *r;
    int rc;

    if (!cp_on_device || TEMPEST_CHAN_ID_NODE(id) != TPPI_self_address ||
        idx >= TEMPEST_CHAN_PORTS) {
        cp_protocol_error("channel event %u for port 0x%x", kind,
                          (unsigned)id);
        return;
    }
    d = &dports[idx];
    r = d->waiter;
    switch (kind) {
    case TEMPEST_CHAN_EV_INPUT:
        if (d->here) {
            /*
             * INPUT_HERE: in the caller's buffer (where the device put
             * it, or copied it before the ACK when it kept the port's).
             */
            bool mine = ev->c == (uintptr_t)d->direct;

            d->here = false;
            d->direct = NULL;
            if (!r || d->mode != W_COPY || !mine || ev->b > d->direct_size) {
                cp_protocol_error("input of %llu bytes on port 0x%x: no "
                                  "input waits", (unsigned long long)ev->b,
                                  (unsigned)id);
                return;
            }
            rc = (int)ev->b;
            break;
        }
        swap_bufs(d);
        if (!r || (d->mode != W_COPY && d->mode != W_NEXT &&
                   d->mode != W_TURN) ||
            ev->b > (d->direct ? d->direct_size : DEV_BUF) ||
            (d->direct && ev->c != (uintptr_t)d->direct)) {
            cp_protocol_error("input of %llu bytes on port 0x%x: no input "
                              "waits", (unsigned long long)ev->b,
                              (unsigned)id);
            return;
        }
        rc = deliver(d, r, (uint32_t)ev->b);
        break;
    case TEMPEST_CHAN_EV_OUTPUT:
        if (r && d->mode == W_TURN) {
            /*
             * An OUTPUT_INPUT's output failed (B), or its input was
             * refused (B 0, C why): no input started either way.
             */
            rc = dev_err(ev->b ? (uint32_t)ev->b : (uint32_t)ev->c, 0);
            rc = rc ? rc : CHAN_E_ARG;
            break;
        }
        rc = dev_err((uint32_t)ev->b, 0);
        if (d->carrying && ev->b == 0) {
            /* Stage 4: the port sent is EMPTY here now. */
            dport_release(&dports[d->cargo]);
        }
        d->carrying = false;
        if (!r || d->mode != W_OUT) {
            d->out_err = rc;    /* started without waiting */
            return;
        }
        break;
    case TEMPEST_CHAN_EV_CLOSED:
        if (!r || d->mode == W_OUT) {
            return;             /* the OUTPUT event ends an output */
        }
        rc = CHAN_E_CLOSED;
        if (d->direct || d->here) {
            /* The caller's buffer is the port's no more. */
            d->direct = NULL;
            d->here = false;
            dcmd(TEMPEST_CHAN_OP_BUFFER, dev_id(idx), (uintptr_t)d->buf,
                 DEV_BUF, NULL);
        }
        if (d->mode == W_PORT) {
            free(d->newbuf);
            d->newbuf = NULL;
        }
        break;
    case TEMPEST_CHAN_EV_PORT:
        if (!r || d->mode != W_PORT) {
            cp_protocol_error("port input on port 0x%x: none waits",
                              (unsigned)id);
            return;
        }
        rc = port_input_done(d, r, ev->b, ev->c);
        break;
    case TEMPEST_CHAN_EV_TYPE:
        if (!r) {
            return;
        }
        free(d->newbuf);
        d->newbuf = NULL;
        rc = CHAN_E_TYPE;
        break;
    case TEMPEST_CHAN_EV_TOO_BIG:
        /*
         * Longer than the buffer the input named: the data waits at
         * the sender (STATE reads WAITING: BUFFERFULL here) for an
         * input with a buffer it fits; the buffers did not change
         * places.  A buffer of the caller's named (direct_buffer())
         * goes back to being ours.
         */
        if (!r || (d->mode != W_COPY && d->mode != W_NEXT &&
                   d->mode != W_TURN)) {
            cp_protocol_error("too long data on port 0x%x: no input waits",
                              (unsigned)id);
            return;
        }
        if (d->here) {
            /*
             * The device's buffer is the caller's still: nothing can
             * land there (the data waiting is longer, and no other
             * comes before it is input); the next input names ours
             * again (BUFFER), not now, where data up to DEV_BUF would
             * come at once and the port read IDLE meanwhile.
             */
            d->here = false;
            d->direct = NULL;
            d->stray = true;
        } else if (d->direct) {
            d->direct = NULL;
            dcmd(TEMPEST_CHAN_OP_BUFFER, dev_id(idx), (uintptr_t)d->buf,
                 DEV_BUF, NULL);
        }
        rc = CHAN_E_TOOBIG;
        break;
    default:
        cp_protocol_error("channel event %u for port 0x%x", kind,
                          (unsigned)id);
        return;
    }
    d->waiter = NULL;
    d->mode = W_NONE;
    cp_complete(r, rc);
}

/* ---- the calls -------------------------------------------------------- */

int cp_dev_exec(struct chan_req *r)
{
    int state;
    uint32_t comp;
    struct dport *d;

    switch (r->op) {
    case OP_ALLOC:
        return dev_alloc(r);
    case OP_ALLOC_TO:
        return dev_alloc_to(r);
    case OP_FREE:
        return dev_free(r);
    case OP_OUTPUT:
    case OP_OUTPUT_START:
        return dev_output(r, r->op == OP_OUTPUT);
    case OP_OUTPUT_WAIT:
        return dev_output_wait(r);
    case OP_OUTPUT_INPUT:
        return dev_output_input(r);
    case OP_INPUT:
    case OP_INPUT_NEXT:
        return dev_input(r);
    case OP_SET_BUFFER:
        return dev_set_buffer(r);
    case OP_OUTPUT_PORT:
    case OP_OUTPUT_PORT_START:
        return dev_output_port(r, r->op == OP_OUTPUT_PORT);
    case OP_INPUT_PORT:
        return dev_input_port(r);
    case OP_STATE:
    case OP_COMPANION:
        d = dfind(r->a, &state, &comp);
        if (!d) {
            return CHAN_E_BADPORT;
        }
        r->port_out = dev_name(comp);
        if ((d->held || d->waiting) && state == CHAN_IDLE) {
            /* kept here (deliver()), or waiting at the sender */
            state = CHAN_BUFFERFULL;
        }
        return r->op == OP_STATE ? state : 0;
    default:
        return CHAN_E_ARG;
    }
}

void cp_dev_stats(struct chan_stats *s)
{
    s->resends = nc_reg(TEMPEST_NC_CHAN_RESENT);
    s->migrations = nc_reg(TEMPEST_NC_CHAN_MOVES);
    s->forwards = nc_reg(TEMPEST_NC_CHAN_FWDS);
    s->dropped = nc_reg(TEMPEST_NC_CHAN_MIGDROPS);
    s->stale = nc_reg(TEMPEST_NC_CHAN_DROPPED);
    s->ports_in_use = nc_reg(TEMPEST_NC_CHAN_USED);
}

void cp_dev_dump(void)
{
    uint64_t res;
    unsigned i;
    char b1[16], b2[16];

    for (i = 0; i < TEMPEST_CHAN_PORTS; i++) {
        if (dcmd(TEMPEST_CHAN_OP_STATE, dev_id(i), 0, 0, &res)) {
            continue;
        }
        printf("chan: node %u: port %s %s comp %s (device)%s%s\n",
               TPPI_self_address, cp_fmt_port(b1, dev_name(dev_id(i))),
               chan_state_name((int)(res & 0xFFU)),
               cp_fmt_port(b2, dev_name((uint32_t)(res >> 32))),
               dports[i].held ? " holds data" : "",
               dports[i].waiter ? " (a call waits)" : "");
    }
}

/*
 * Before libtempest starts its protocol thread: the device's channel
 * controller, if the node controller offers it, is libchan's (bare-metal
 * nodes; a Linux process keeps the software protocol).
 */
static void __attribute__((constructor(190))) dev_init(void)
{
#ifdef __PICOLIBC__
    /* Bare metal: guest physical addresses are the program's. */
    cp_on_device = (nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CHAN) != 0;
    tempest_on_event(TEMPEST_EV_CHAN, dev_event);
#else
    (void)dev_event;
#endif
}
