/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan: the messages between channel controllers (the paper's
 * "hardware" messages, section 3), each an active message handled on the
 * destination's protocol thread.  Every one is sent from a protocol
 * thread (the reply network), so the messages of one node to another
 * arrive in the order they were sent, which the protocol relies on.
 *
 * Messages (32-bit words; a port is its chan_port name):
 *   DATA      dst, from, seq, len, <len bytes, padded to 4>
 *   ACK       dst, from, seq                 input number seq is done
 *   PORTDATA  dst, from, seq, origin, comp, tx, rx
 *             the port origin (companion comp, counters tx, rx) is sent
 *   WIRE      target, new, old, rx           stage 2 -> 3: target's
 *             companion old has moved to new, which has input rx
 *   FWD       target, new, old, rx           stage 5: WIRE passed on to
 *             the port target, which carries (or received) the
 *             migrating companion of old
 *   DELETE    target                         stage 3 -> 4
 *   CONFIRM   target                         stage 4 -> final
 *   FREED     target, from                   from (target's companion)
 *             was freed
 *   CREATE    key, from      CREATED  local, port (0: no free port)
 *
 * Sequence numbers: tx counts the outputs started on a port, rx the
 * inputs completed; a moved port takes its counters along.  They let a
 * receiver drop a duplicate and let stage 3 tell whether the output under
 * way was input before the port moved (its acknowledgement may still be
 * on the way) or must be sent again.
 *
 * tests/model/chan.pml mirrors these handlers for the SPIN model checker
 * (docs/chan.rst, "The protocol, model-checked"), and
 * tests/model/transitions.txt lists their transitions: a change to one is
 * a change to the others (the test suite 'model' compares them).
 */
#include <stdlib.h>
#include <string.h>

#include "chan-internal.h"

static uint8_t txbuf[TPPI_MAX_AM_BYTES] __attribute__((aligned(8)));
static uint8_t rxbuf[TPPI_MAX_AM_BYTES] __attribute__((aligned(8)));

static void data_h(TPPI_NodeId src, int size);
static void ack_h(TPPI_NodeId src, int size);
static void portdata_h(TPPI_NodeId src, int size);
static void wire_h(TPPI_NodeId src, int size);
static void fwd_h(TPPI_NodeId src, int size);
static void delete_h(TPPI_NodeId src, int size);
static void confirm_h(TPPI_NodeId src, int size);
static void freed_h(TPPI_NodeId src, int size);
static void create_h(TPPI_NodeId src, int size);
static void created_h(TPPI_NodeId src, int size);

static uint32_t pad4(uint32_t n)
{
    return (n + 3) & ~3U;
}

static TPPI_NodeId node_of(chan_port p)
{
    return CHAN_PORT_NODE(p);
}

/* ---- sending ------------------------------------------------------------ */

void cp_send_output(struct cport *p)
{
    struct cport *q;
    uint32_t padded;

    cp_stats.msgs_sent++;
    if (p->mode == OUT_DATA) {
        padded = pad4(p->out_len);
        if (p->out_len) {
            memcpy(txbuf, p->out_data, p->out_len);
            memset(txbuf + p->out_len, 0, padded - p->out_len);
        }
        cp_stats.data_sent++;
        TPPI_send_WWWWR(node_of(p->comp), data_h, (int)p->comp,
                        (int)cp_id(p), (int)p->tx, (int)p->out_len, txbuf,
                        (int)padded);
        return;
    }
    /* The companion's name is read now: stage 5 may have changed it. */
    q = &cp_ports[p->cargo];
    TPPI_send_WWWWWWW(node_of(p->comp), portdata_h, (int)p->comp,
                      (int)cp_id(p), (int)p->tx, (int)cp_id(q), (int)q->comp,
                      (int)q->tx, (int)q->rx);
}

void cp_send_ack(struct cport *p)
{
    cp_stats.msgs_sent++;
    TPPI_send_WWW(node_of(p->comp), ack_h, (int)p->comp, (int)cp_id(p),
                  (int)p->rx);
}

static void send_wire(chan_port target, chan_port new, chan_port old,
                      uint32_t rx)
{
    cp_stats.msgs_sent++;
    TPPI_send_WWWW(node_of(target), wire_h, (int)target, (int)new, (int)old,
                   (int)rx);
}

static void send_fwd(chan_port target, chan_port new, chan_port old,
                     uint32_t rx)
{
    cp_stats.msgs_sent++;
    TPPI_send_WWWW(node_of(target), fwd_h, (int)target, (int)new, (int)old,
                   (int)rx);
}

static void send_delete(chan_port target)
{
    cp_stats.msgs_sent++;
    TPPI_send_W(node_of(target), delete_h, (int)target);
}

static void send_confirm(chan_port target)
{
    cp_stats.msgs_sent++;
    TPPI_send_W(node_of(target), confirm_h, (int)target);
}

void cp_send_freed(chan_port target, chan_port from)
{
    cp_stats.msgs_sent++;
    TPPI_send_WW(node_of(target), freed_h, (int)target, (int)from);
}

void cp_send_create(unsigned node, uint32_t key, chan_port from)
{
    cp_stats.msgs_sent++;
    TPPI_send_WW(node, create_h, (int)key, (int)from);
}

/* ---- receiving ---------------------------------------------------------- */

/* Consumes @n bytes (a multiple of 4) of the message being handled. */
static void skip(uint32_t n)
{
    if (n) {
        TPPI_recv_R(rxbuf, (int)n);
    }
}

/*
 * Checks that a fixed-size message has @words words; if not, reports it,
 * consumes it and returns false.
 */
static bool sized(const char *what, TPPI_NodeId src, int size,
                  unsigned words)
{
    if (size == (int)(4 * words)) {
        return true;
    }
    cp_protocol_error("a %s message of %d bytes from node %u (%u expected)",
                      what, size, src, 4 * words);
    skip((uint32_t)size & ~3U);
    return false;
}

/* Receives @len bytes into @dst, which has room for @room. */
static void recv_into(void *dst, uint32_t room, uint32_t len)
{
    uint32_t padded = pad4(len);

    if (len == 0) {
        return;
    }
    if (((uintptr_t)dst & 3) == 0 && room >= padded) {
        TPPI_recv_R(dst, (int)padded);
        return;
    }
    TPPI_recv_R(rxbuf, (int)padded);
    memcpy(dst, rxbuf, len);
}

/*
 * Stores the arriving @len bytes on @p, which becomes BUFFERFULL: at the
 * port's address if they fit, else in a library buffer.
 */
static void hold_data(struct cport *p, uint32_t len)
{
    char b[16];
    void *m;

    if (p->buf && len <= p->bufsize) {
        recv_into(p->buf, p->bufsize, len);
        p->held_data = p->buf;
        p->held_lib = false;
    } else {
        m = malloc(pad4(len) ? pad4(len) : 4);
        if (!m) {
            skip(pad4(len));
            cp_protocol_error("out of memory: %u bytes for port %s lost", len,
                              cp_fmt_port(b, cp_id(p)));
            return;
        }
        recv_into(m, pad4(len), len);
        p->held_data = m;
        p->held_lib = true;
    }
    p->held = HELD_DATA;
    p->held_len = len;
    p->state = CHAN_BUFFERFULL;
    cp_stats.buffered++;
}

/* The input on @p is done with @len bytes: acknowledge, release. */
static void delivered(struct cport *p, int len)
{
    p->rx++;
    p->state = CHAN_IDLE;
    if (p->comp) {
        cp_send_ack(p);
    }
    cp_finish(p, len);
}

/* Data for a port that is INPUTTING. */
static void input_arrived(struct cport *p, uint32_t len)
{
    if (p->mode == IN_COPY && len <= p->in_size) {
        recv_into(p->in_buf, p->in_size, len);
        delivered(p, (int)len);
    } else if (p->mode == IN_NEXT && len <= p->bufsize) {
        /* Section 2.1: stored where the port said, next goes elsewhere. */
        recv_into(p->buf, p->bufsize, len);
        p->waiter->ptr_out = p->buf;
        p->buf = p->in_buf;
        p->bufsize = p->in_size;
        delivered(p, (int)len);
    } else {
        hold_data(p, len);
        cp_finish(p, p->mode == IN_PORT ? CHAN_E_TYPE : CHAN_E_TOOBIG);
    }
}

/*
 * Checks the sequence number of a DATA or PORTDATA message for @p:
 * true if it is the next input; false for a duplicate (counted) or a
 * gap (reported).
 */
static bool in_sequence(struct cport *p, uint32_t seq)
{
    char b[16];

    if (seq == p->rx + 1) {
        return true;
    }
    if (seq <= p->rx) {
        cp_stats.stale++;
    } else {
        cp_protocol_error("message %u for port %s, which has input %u",
                          seq, cp_fmt_port(b, cp_id(p)), p->rx);
    }
    return false;
}

static void data_h(TPPI_NodeId src, int size)
{
    chan_port dst, from;
    uint32_t seq, len;
    struct cport *p;
    char b[16];

    if (size < 16) {
        sized("data", src, size, 4);
        return;
    }
    dst = (chan_port)TPPI_recv_W();
    from = (chan_port)TPPI_recv_W();
    seq = (uint32_t)TPPI_recv_W();
    len = (uint32_t)TPPI_recv_W();
    if (len > CHAN_MAX_DATA || (uint32_t)size != 16 + pad4(len)) {
        cp_protocol_error("a %d-byte data message from node %u says %u "
                          "bytes", size, src, len);
        skip((uint32_t)size - 16);
        return;
    }
    p = cp_find(dst);
    if (!p || p->comp != from) {
        cp_stats.stale++;
        skip(pad4(len));
        return;
    }
    if (!in_sequence(p, seq)) {
        skip(pad4(len));
        return;
    }
    switch (p->state) {
    case CHAN_IDLE:
        hold_data(p, len);
        return;
    case CHAN_INPUTTING:
        input_arrived(p, len);
        return;
    case CHAN_MIGRATING:
        /* Stage 1: ignored; the companion sends it again (stage 3). */
        cp_stats.dropped++;
        break;
    case CHAN_OUTPUTTING:
        cp_protocol_error("port %s: data arrived while it outputs: both "
                          "ends of the channel output at once (dropped)",
                          cp_fmt_port(b, dst));
        break;
    default:
        cp_protocol_error("data for port %s, which is %s", cp_fmt_port(b, dst),
                          chan_state_name(p->state));
        break;
    }
    skip(pad4(len));
}

static void ack_h(TPPI_NodeId src, int size)
{
    chan_port dst, from;
    uint32_t seq;
    struct cport *p;

    if (!sized("ack", src, size, 3)) {
        return;
    }
    dst = (chan_port)TPPI_recv_W();
    from = (chan_port)TPPI_recv_W();
    seq = (uint32_t)TPPI_recv_W();
    p = cp_find(dst);
    /*
     * A late acknowledgement (the output was found input at stage 3, or
     * the port's companion has moved since) is ignored.
     */
    if (!p || p->comp != from || p->state != CHAN_OUTPUTTING ||
        p->mode != OUT_DATA || seq != p->tx) {
        cp_stats.stale++;
        return;
    }
    p->state = CHAN_IDLE;
    cp_finish(p, 0);
}

static void hold_port(struct cport *p, chan_port origin, chan_port comp,
                      uint32_t tx, uint32_t rx)
{
    p->held = HELD_PORT;
    p->held_origin = origin;
    p->held_comp = comp;
    p->held_tx = tx;
    p->held_rx = rx;
    p->state = CHAN_BUFFERFULL;
    cp_stats.buffered++;
}

/* Stage 1 arriving at the destination: a port sent over t. */
static void portdata_h(TPPI_NodeId src, int size)
{
    chan_port dst, from, origin, comp;
    uint32_t seq, tx, rx;
    struct cport *p;
    char b[16];
    int rc;

    if (!sized("port", src, size, 7)) {
        return;
    }
    dst = (chan_port)TPPI_recv_W();
    from = (chan_port)TPPI_recv_W();
    seq = (uint32_t)TPPI_recv_W();
    origin = (chan_port)TPPI_recv_W();
    comp = (chan_port)TPPI_recv_W();
    tx = (uint32_t)TPPI_recv_W();
    rx = (uint32_t)TPPI_recv_W();
    p = cp_find(dst);
    if (!p || p->comp != from) {
        cp_stats.stale++;
        return;
    }
    if (!in_sequence(p, seq)) {
        return;
    }
    switch (p->state) {
    case CHAN_IDLE:
        hold_port(p, origin, comp, tx, rx);
        break;
    case CHAN_INPUTTING:
        hold_port(p, origin, comp, tx, rx);
        if (p->mode != IN_PORT) {
            cp_finish(p, CHAN_E_TYPE);
            break;
        }
        rc = cp_stage2(p);
        if (rc) {
            cp_finish(p, rc);   /* stays BUFFERFULL */
        }
        break;
    case CHAN_MIGRATING:
        cp_stats.dropped++;
        break;
    default:
        cp_protocol_error("a port for port %s, which is %s",
                          cp_fmt_port(b, dst), chan_state_name(p->state));
        break;
    }
}

void cp_stage1(struct cport *t, struct cport *q)
{
    /* 1.1: data pre-sent to q is ignored: its companion will resend. */
    if (q->state == CHAN_BUFFERFULL) {
        cp_release_held(q);
        cp_stats.dropped++;
    }
    q->state = CHAN_MIGRATING;
    /* 1.2: the route for the confirmation. */
    q->via = (uint16_t)cp_index(t);
    /* 1.3: the companion's name goes over t. */
    t->tx++;
    t->state = CHAN_OUTPUTTING;
    t->mode = OUT_PORT;
    t->cargo = (uint16_t)cp_index(q);
    t->out_err = 0;
    cp_send_output(t);
}

int cp_stage2(struct cport *t)
{
    struct cport *n = cp_new();
    chan_port origin = t->held_origin;

    if (!n) {
        return CHAN_E_NOPORTS;
    }
    /* 2.1: the new port, wired to the sent port's companion. */
    n->comp = t->held_comp;
    n->tx = t->held_tx;
    n->rx = t->held_rx;
    /* 2.3: t waits for the final confirmation. */
    t->held = HELD_NONE;
    t->rx++;
    t->state = CHAN_CONFIRMING;
    t->result = cp_id(n);
    /* 2.2: ask the companion to wire up (a freed one: straight to 4). */
    if (n->comp) {
        send_wire(n->comp, cp_id(n), origin, n->rx);
    } else {
        send_delete(origin);
    }
    return 0;
}

/* Stage 3 (or 5) at the companion's node. */
static void wire_h(TPPI_NodeId src, int size)
{
    chan_port target, new, old;
    uint32_t rx;
    struct cport *p, *t;
    bool done = false;
    char b1[16], b2[16], b3[16], b4[16];

    if (!sized("wire", src, size, 4)) {
        return;
    }
    target = (chan_port)TPPI_recv_W();
    new = (chan_port)TPPI_recv_W();
    old = (chan_port)TPPI_recv_W();
    rx = (uint32_t)TPPI_recv_W();
    p = cp_find(target);
    if (!p) {
        /* The companion was freed: finish the move; new is alone. */
        cp_stats.stale++;
        if (old != new) {
            send_delete(old);
        }
        cp_send_freed(new, target);
        return;
    }
    if (p->comp != old) {
        cp_protocol_error("wire-up of port %s to %s: its companion is %s, "
                          "not %s", cp_fmt_port(b1, target),
                          cp_fmt_port(b2, new), cp_fmt_port(b3, p->comp),
                          cp_fmt_port(b4, old));
    }
    /* 3.1: the channel now runs between p and new. */
    p->comp = new;
    if (p->state == CHAN_MIGRATING) {
        /* 5: both ends move: pass it on to where p is going. */
        t = &cp_ports[p->via];
        cp_stats.forwards++;
        if (t->comp) {
            send_fwd(t->comp, new, old, rx);
        } else {
            cp_protocol_error("port %s migrates over a closed channel",
                              cp_fmt_port(b1, target));
        }
        return;
    }
    if (p->state == CHAN_OUTPUTTING) {
        if (p->tx > rx) {
            /* 3.2: what the old port dropped goes to the new one. */
            cp_stats.resends++;
            cp_send_output(p);
        } else if (p->mode == OUT_DATA) {
            /* Input before the move; its acknowledgement is late. */
            p->state = CHAN_IDLE;
            done = true;
        } else {
            cp_protocol_error("port %s: its port was input, yet its "
                              "companion moved", cp_fmt_port(b1, target));
        }
    }
    /* 3.2: the old port may go (an abandoned move wires to itself). */
    if (old != new) {
        send_delete(old);
    }
    if (done) {
        cp_finish(p, 0);
    }
}

/* Stage 5 at the node a migrating port was sent to. */
static void fwd_h(TPPI_NodeId src, int size)
{
    chan_port target, new, old;
    struct cport *p, *n;
    char b1[16], b2[16], b3[16];

    if (!sized("forward", src, size, 4)) {
        return;
    }
    target = (chan_port)TPPI_recv_W();
    new = (chan_port)TPPI_recv_W();
    old = (chan_port)TPPI_recv_W();
    (void)TPPI_recv_W();
    p = cp_find(target);
    if (!p) {
        cp_stats.stale++;
    } else if (p->state == CHAN_BUFFERFULL && p->held == HELD_PORT) {
        /* 5.1: not input yet: overwrite the data waiting on the port. */
        if (p->held_comp != old) {
            cp_protocol_error("forward to port %s: it holds %s, not %s",
                              cp_fmt_port(b1, target),
                              cp_fmt_port(b2, p->held_comp),
                              cp_fmt_port(b3, old));
        }
        p->held_comp = new;
    } else if (p->state == CHAN_CONFIRMING) {
        /* 5.2: input already: update the port allocated for it. */
        n = cp_find(p->result);
        if (!n || n->comp != old) {
            cp_protocol_error("forward to port %s: its new port is not "
                              "wired to %s", cp_fmt_port(b1, target),
                              cp_fmt_port(b2, old));
        } else {
            n->comp = new;
        }
    } else if (p->state != CHAN_MIGRATING) {
        /* MIGRATING: the port data was dropped and will be resent. */
        cp_protocol_error("forward to port %s, which is %s",
                          cp_fmt_port(b1, target), chan_state_name(p->state));
    }
    /* In either case the origin of old is told (then 4). */
    if (old != new) {
        send_delete(old);
    }
}

/* Stage 4 at the origin. */
static void delete_h(TPPI_NodeId src, int size)
{
    chan_port target;
    struct cport *p, *t;
    char b[16];

    if (!sized("delete", src, size, 1)) {
        return;
    }
    target = (chan_port)TPPI_recv_W();
    p = cp_find(target);
    if (!p || p->state != CHAN_MIGRATING) {
        cp_protocol_error("delete of port %s, which is %s",
                          cp_fmt_port(b, target),
                          p ? chan_state_name(p->state) : "gone");
        return;
    }
    t = &cp_ports[p->via];
    cp_stats.migrations++;
    cp_free(p);
    if (t->state == CHAN_OUTPUTTING && t->mode == OUT_PORT &&
        t->cargo == cp_index(p)) {
        t->state = CHAN_IDLE;
        if (t->comp) {
            send_confirm(t->comp);
        }
        cp_finish(t, 0);        /* last: the caller may look at once */
    } else {
        cp_protocol_error("delete of port %s: the port it was sent over is "
                          "%s", cp_fmt_port(b, target),
                          chan_state_name(t->state));
    }
}

/* The final confirmation at the destination. */
static void confirm_h(TPPI_NodeId src, int size)
{
    chan_port target;
    struct cport *p;
    char b[16];

    if (!sized("confirm", src, size, 1)) {
        return;
    }
    target = (chan_port)TPPI_recv_W();
    p = cp_find(target);
    if (!p || p->state != CHAN_CONFIRMING || !p->waiter) {
        cp_protocol_error("confirmation for port %s, which is %s",
                          cp_fmt_port(b, target),
                          p ? chan_state_name(p->state) : "gone");
        return;
    }
    p->state = CHAN_IDLE;
    p->waiter->port_out = p->result;
    cp_finish(p, 0);
}

static void freed_h(TPPI_NodeId src, int size)
{
    chan_port target, from;
    struct cport *p, *q;

    if (!sized("freed", src, size, 2)) {
        return;
    }
    target = (chan_port)TPPI_recv_W();
    from = (chan_port)TPPI_recv_W();
    p = cp_find(target);
    if (!p || p->comp != from) {
        cp_stats.stale++;
        return;
    }
    p->comp = CHAN_NO_PORT;
    if (p->state == CHAN_INPUTTING) {
        p->state = CHAN_IDLE;
        cp_finish(p, CHAN_E_CLOSED);
    } else if (p->state == CHAN_OUTPUTTING) {
        if (p->mode == OUT_PORT) {
            /*
             * Nobody will input the port sent: it stays here, and its
             * companion is asked to send again what it dropped (a
             * wire-up to itself).
             */
            q = &cp_ports[p->cargo];
            q->state = CHAN_IDLE;
            if (q->comp) {
                send_wire(q->comp, cp_id(q), cp_id(q), q->rx);
            }
        }
        p->state = CHAN_IDLE;
        cp_finish(p, CHAN_E_CLOSED);
    }
}

static void create_h(TPPI_NodeId src, int size)
{
    uint32_t key;
    chan_port from;
    struct cport *n;

    if (!sized("create", src, size, 2)) {
        return;
    }
    key = (uint32_t)TPPI_recv_W();
    from = (chan_port)TPPI_recv_W();
    n = cp_new();
    cp_stats.msgs_sent++;
    if (!n) {
        TPPI_send_WW(src, created_h, (int)from, 0);
        return;
    }
    n->comp = from;
    TPPI_send_WW(src, created_h, (int)from, (int)cp_id(n));
    cp_offer(src, key, cp_id(n));
}

static void created_h(TPPI_NodeId src, int size)
{
    chan_port local, port;
    struct cport *p;
    struct chan_req *r;
    char b[16];

    if (!sized("created", src, size, 2)) {
        return;
    }
    local = (chan_port)TPPI_recv_W();
    port = (chan_port)TPPI_recv_W();
    p = cp_find(local);
    if (!p || !p->waiter || p->waiter->op != OP_ALLOC_TO) {
        cp_protocol_error("created answer for port %s, which is not being "
                          "made", cp_fmt_port(b, local));
        return;
    }
    r = p->waiter;
    if (!port) {
        p->waiter = NULL;
        cp_free(p);
        cp_complete(r, CHAN_E_NOPORTS);
        return;
    }
    p->comp = port;
    r->port_out = local;
    cp_finish(p, 0);
}
