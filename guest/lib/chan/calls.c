/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan: the calls of computation code (chan.h).
 *
 * A call fills a request on its caller's stack and hands it to the
 * node's protocol thread, the paper's channel controller, with an active
 * message to this node itself; the protocol thread carries it out on the
 * port table (exec()) and either completes it at once or keeps it on the
 * port (waiter) until a message from another node completes it.  The
 * caller sleeps in tempest_wait() meanwhile.  A call made on the
 * protocol thread itself (from a handler) is carried out directly if it
 * never waits, refused with CHAN_E_CONTEXT if it might.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-internal.h"
#include "tempest/rt.h"

/* An end made here by chan_alloc_to() of another node, not accepted. */
struct offer {
    struct offer *next;
    unsigned node;
    uint32_t key;
    chan_port port;
};

static struct offer *offers;        /* oldest first */
static struct chan_req *accepts;    /* waiting chan_accept() calls */

static const char *const op_names[] = {
    [OP_ALLOC] = "chan_alloc",
    [OP_ALLOC_TO] = "chan_alloc_to",
    [OP_ACCEPT] = "chan_accept",
    [OP_FREE] = "chan_free",
    [OP_OUTPUT] = "chan_output",
    [OP_OUTPUT_START] = "chan_output_start",
    [OP_OUTPUT_WAIT] = "chan_output_wait",
    [OP_INPUT] = "chan_input",
    [OP_SET_BUFFER] = "chan_set_buffer",
    [OP_INPUT_NEXT] = "chan_input_next",
    [OP_OUTPUT_PORT] = "chan_output_port",
    [OP_OUTPUT_PORT_START] = "chan_output_port_start",
    [OP_INPUT_PORT] = "chan_input_port",
    [OP_STATE] = "chan_state",
    [OP_COMPANION] = "chan_companion",
    [OP_OUTPUT_INPUT] = "chan_output_input",
};

/* ---- accepting ---------------------------------------------------------- */

void cp_offer(unsigned node, uint32_t key, chan_port port)
{
    struct chan_req **rp, *r;
    struct offer *o, **op;
    char b[16];

    for (rp = &accepts; *rp; rp = &(*rp)->next) {
        r = *rp;
        if (r->node == node && r->key == key) {
            *rp = r->next;
            r->port_out = port;
            cp_complete(r, 0);
            return;
        }
    }
    o = malloc(sizeof(*o));
    if (!o) {
        cp_protocol_error("out of memory: port %s from node %u (key %u) "
                          "cannot be offered", cp_fmt_port(b, port), node,
                          (unsigned)key);
        return;
    }
    o->next = NULL;
    o->node = node;
    o->key = key;
    o->port = port;
    for (op = &offers; *op; op = &(*op)->next) {
        /* to the end: accepted in the order made */
    }
    *op = o;
}

static int exec_accept(struct chan_req *r)
{
    struct offer **op, *o;
    struct chan_req **rp;

    for (op = &offers; *op; op = &(*op)->next) {
        o = *op;
        if (o->node == r->node && o->key == r->key) {
            *op = o->next;
            r->port_out = o->port;
            free(o);
            return 0;
        }
    }
    r->next = NULL;
    for (rp = &accepts; *rp; rp = &(*rp)->next) {
        /* to the end */
    }
    *rp = r;
    return CP_PENDING;
}

/* ---- the operations, on the protocol thread ----------------------------- */

static int exec_alloc(struct chan_req *r)
{
    struct cport *a = cp_new();
    struct cport *b;

    if (!a) {
        return CHAN_E_NOPORTS;
    }
    b = cp_new();
    if (!b) {
        cp_free(a);
        return CHAN_E_NOPORTS;
    }
    a->comp = cp_id(b);
    b->comp = cp_id(a);
    r->port_out = cp_id(a);
    r->port_out2 = cp_id(b);
    return 0;
}

static int exec_alloc_to(struct chan_req *r)
{
    struct cport *p = cp_new();

    if (!p) {
        return CHAN_E_NOPORTS;
    }
    /* No companion until the other node answers (created_h). */
    p->waiter = r;
    cp_send_create(r->node, r->key, cp_id(p));
    return CP_PENDING;
}

static int exec_free(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);

    if (!p) {
        return CHAN_E_BADPORT;
    }
    if (p->state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (p->state != CHAN_IDLE && p->state != CHAN_BUFFERFULL) {
        return CHAN_E_STATE;
    }
    if (p->held == HELD_PORT) {
        return CHAN_E_STATE;    /* a port in flight must not be lost */
    }
    if (p->comp) {
        cp_send_freed(p->comp, r->a);
    }
    cp_free(p);
    return 0;
}

static int exec_output(struct chan_req *r, bool wait)
{
    struct cport *p = cp_find(r->a);

    if (!p) {
        return CHAN_E_BADPORT;
    }
    if (p->state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (p->state != CHAN_IDLE) {
        return CHAN_E_STATE;
    }
    if (!p->comp) {
        return CHAN_E_CLOSED;
    }
    /* Pre-send (section 2.2): the data leaves now. */
    p->tx++;
    p->state = CHAN_OUTPUTTING;
    p->mode = OUT_DATA;
    p->out_data = r->src;
    p->out_len = (uint32_t)r->len;
    p->out_err = 0;
    cp_send_output(p);
    if (!wait) {
        return 0;
    }
    p->waiter = r;
    return CP_PENDING;
}

static int exec_output_wait(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);
    int rc;

    if (!p) {
        return CHAN_E_BADPORT;
    }
    if (p->state == CHAN_OUTPUTTING) {
        if (p->waiter) {
            return CHAN_E_STATE;
        }
        p->waiter = r;
        return CP_PENDING;
    }
    rc = p->out_err;
    p->out_err = 0;
    return rc;
}

/* Takes the data buffered on @p: acknowledges it; returns its length. */
static int take(struct cport *p)
{
    int len = (int)p->held_len;

    cp_release_held(p);
    p->rx++;
    p->state = CHAN_IDLE;
    if (p->comp) {
        cp_send_ack(p);
    }
    return len;
}

/* Starts waiting on the IDLE port @p for an input of @mode. */
static int start_input(struct cport *p, struct chan_req *r, int mode)
{
    if (!p->comp) {
        return CHAN_E_CLOSED;
    }
    p->state = CHAN_INPUTTING;
    p->mode = (uint8_t)mode;
    p->in_buf = r->dst;
    p->in_size = r->len > UINT32_MAX ? UINT32_MAX : (uint32_t)r->len;
    p->waiter = r;
    return CP_PENDING;
}

static int exec_input(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);

    if (!p) {
        return CHAN_E_BADPORT;
    }
    switch (p->state) {
    case CHAN_BUFFERFULL:
        if (p->held == HELD_PORT) {
            return CHAN_E_TYPE;
        }
        if (p->held_len > r->len) {
            return CHAN_E_TOOBIG;
        }
        if (p->held_len) {
            memcpy(r->dst, p->held_data, p->held_len);
        }
        return take(p);
    case CHAN_IDLE:
        return start_input(p, r, IN_COPY);
    case CHAN_MIGRATING:
        return CHAN_E_MIGRATING;
    default:
        return CHAN_E_STATE;
    }
}

static int exec_input_next(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);

    if (!p) {
        return CHAN_E_BADPORT;
    }
    switch (p->state) {
    case CHAN_BUFFERFULL:
        if (p->held == HELD_PORT) {
            return CHAN_E_TYPE;
        }
        if (p->held_lib) {
            /* It came before the port named a buffer that holds it. */
            if (!p->buf) {
                return CHAN_E_NOBUF;
            }
            if (p->held_len > p->bufsize) {
                return CHAN_E_TOOBIG;
            }
            memcpy(p->buf, p->held_data, p->held_len);
            r->ptr_out = p->buf;
        } else {
            r->ptr_out = p->held_data;
        }
        p->buf = r->dst;
        p->bufsize = (uint32_t)r->len;
        return take(p);
    case CHAN_IDLE:
        if (!p->buf) {
            return CHAN_E_NOBUF;
        }
        return start_input(p, r, IN_NEXT);
    case CHAN_MIGRATING:
        return CHAN_E_MIGRATING;
    default:
        return CHAN_E_STATE;
    }
}

static int exec_set_buffer(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);

    if (!p) {
        return CHAN_E_BADPORT;
    }
    if (p->state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (p->state == CHAN_INPUTTING) {
        return CHAN_E_STATE;
    }
    p->buf = r->dst;
    p->bufsize = r->dst ? (uint32_t)r->len : 0;
    return 0;
}

static int exec_output_port(struct chan_req *r, bool wait)
{
    struct cport *t = cp_find(r->a);
    struct cport *q = cp_find(r->b);

    if (!t || !q) {
        return CHAN_E_BADPORT;
    }
    if (t == q || t->comp == r->b) {
        return CHAN_E_ARG;      /* it would never arrive */
    }
    if (t->state == CHAN_MIGRATING || q->state == CHAN_MIGRATING) {
        return CHAN_E_MIGRATING;
    }
    if (t->state != CHAN_IDLE ||
        (q->state != CHAN_IDLE && q->state != CHAN_BUFFERFULL)) {
        return CHAN_E_STATE;
    }
    if (!t->comp) {
        return CHAN_E_CLOSED;
    }
    cp_stage1(t, q);
    if (!wait) {
        return 0;
    }
    t->waiter = r;
    return CP_PENDING;
}

static int exec_input_port(struct chan_req *r)
{
    struct cport *p = cp_find(r->a);
    int rc;

    if (!p) {
        return CHAN_E_BADPORT;
    }
    switch (p->state) {
    case CHAN_BUFFERFULL:
        if (p->held != HELD_PORT) {
            return CHAN_E_TYPE;
        }
        rc = cp_stage2(p);
        if (rc) {
            return rc;
        }
        p->waiter = r;
        return CP_PENDING;
    case CHAN_IDLE:
        return start_input(p, r, IN_PORT);
    case CHAN_MIGRATING:
        return CHAN_E_MIGRATING;
    default:
        return CHAN_E_STATE;
    }
}

static int exec(struct chan_req *r)
{
    struct cport *p;

    if (cp_on_device && r->op != OP_ACCEPT) {
        return cp_dev_exec(r);
    }
    switch (r->op) {
    case OP_ALLOC:
        return exec_alloc(r);
    case OP_ALLOC_TO:
        return exec_alloc_to(r);
    case OP_ACCEPT:
        return exec_accept(r);
    case OP_FREE:
        return exec_free(r);
    case OP_OUTPUT:
    case OP_OUTPUT_START:
        return exec_output(r, r->op == OP_OUTPUT);
    case OP_OUTPUT_WAIT:
        return exec_output_wait(r);
    case OP_INPUT:
        return exec_input(r);
    case OP_SET_BUFFER:
        return exec_set_buffer(r);
    case OP_INPUT_NEXT:
        return exec_input_next(r);
    case OP_OUTPUT_PORT:
    case OP_OUTPUT_PORT_START:
        return exec_output_port(r, r->op == OP_OUTPUT_PORT);
    case OP_INPUT_PORT:
        return exec_input_port(r);
    case OP_STATE:
    case OP_COMPANION:
        p = cp_find(r->a);
        if (!p) {
            return CHAN_E_BADPORT;
        }
        r->port_out = p->comp;
        return r->op == OP_STATE ? p->state : 0;
    default:
        return CHAN_E_ARG;
    }
}

/* The request from computation code on this node. */
static void cmd_h(TPPI_NodeId src, int size)
{
    struct chan_req *r;
    uint32_t lo, hi;
    int rc;

    if (size != 8 || src != TPPI_self_address) {
        cp_protocol_error("a %d-byte call message from node %u", size, src);
        while (size >= 4) {
            (void)TPPI_recv_W();
            size -= 4;
        }
        return;
    }
    lo = (uint32_t)TPPI_recv_W();
    hi = (uint32_t)TPPI_recv_W();
    r = (struct chan_req *)(uintptr_t)((uint64_t)hi << 32 | lo);
    rc = exec(r);
    if (rc != CP_PENDING) {
        cp_complete(r, rc);
    }
}

/* ---- the calls ---------------------------------------------------------- */

/*
 * True on the protocol thread (in a message or timer handler): libtempest
 * says, since on a one-vCPU node its handlers run not only from the
 * interrupt but also inline, IRQs masked, from a fault or a wait's spin
 * (tempest_wait() there returns at once: a call sent to itself would come
 * back unanswered).
 */
static bool on_protocol_thread(void)
{
    return tempest_on_protocol_thread() != 0;
}

/* True for the operations that may wait for another node. */
static bool may_wait(unsigned op)
{
    switch (op) {
    case OP_ALLOC:
    case OP_FREE:
    case OP_OUTPUT_START:
    case OP_SET_BUFFER:
    case OP_OUTPUT_PORT_START:
    case OP_STATE:
    case OP_COMPANION:
        return false;
    default:
        return true;
    }
}

static int req_done(void *arg)
{
    struct chan_req *r = arg;

    return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
}

/* Reports the refused call @r (console, counter); returns @rc. */
static int refuse(const struct chan_req *r, int rc)
{
    char b1[16], b2[16];
    const char *name = op_names[r->op];

    __atomic_fetch_add(&cp_stats.errors, 1, __ATOMIC_RELAXED);
    switch (r->op) {
    case OP_ALLOC:
        printf("*** chan: node %u: %s: %s (error %d)\n", TPPI_self_address,
               name, chan_strerror(rc), rc);
        break;
    case OP_ALLOC_TO:
    case OP_ACCEPT:
        printf("*** chan: node %u: %s(node %u, key %u): %s (error %d)\n",
               TPPI_self_address, name, r->node, (unsigned)r->key,
               chan_strerror(rc), rc);
        break;
    case OP_OUTPUT_PORT:
    case OP_OUTPUT_PORT_START:
        printf("*** chan: node %u: %s(port %s, port %s): %s (error %d)\n",
               TPPI_self_address, name, cp_fmt_port(b1, r->a),
               cp_fmt_port(b2, r->b), chan_strerror(rc), rc);
        break;
    default:
        printf("*** chan: node %u: %s(port %s): %s (error %d)\n",
               TPPI_self_address, name, cp_fmt_port(b1, r->a),
               chan_strerror(rc), rc);
        break;
    }
    return rc;
}

/*
 * Carries out @r on the protocol thread and returns its result
 * (reporting a refusal).
 */
static int call(struct chan_req *r)
{
    uintptr_t a = (uintptr_t)r;
    int rc;

    __atomic_fetch_add(&cp_stats.calls, 1, __ATOMIC_RELAXED);
    if (on_protocol_thread()) {
        r->in_handler = true;
        rc = may_wait(r->op) ? CHAN_E_CONTEXT : exec(r);
    } else if (rt_in_irq()) {
        rc = CHAN_E_CONTEXT;
    } else {
        r->done = 0;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        TPPI_send_WW(TPPI_self_address, cmd_h, (int)(uint32_t)a,
                     (int)(uint32_t)((uint64_t)a >> 32));
        tempest_wait(req_done, r);
        rc = r->result;
    }
    if (rc < 0 && rc != CHAN_E_CLOSED) {
        refuse(r, rc);
    }
    return rc;
}

/*
 * Refuses @r with CHAN_E_ARG if @bad_args, else carries it out; returns
 * the result.
 */
static int call_checked(struct chan_req *r, bool bad_args)
{
    if (bad_args) {
        return refuse(r, CHAN_E_ARG);
    }
    return call(r);
}

/*
 * call_checked() for a call that returns a port: on success stores it in
 * *@port.  Returns the result.
 */
static int call_port(struct chan_req *r, bool bad_args, chan_port *port)
{
    int rc = call_checked(r, bad_args);

    if (rc == 0) {
        *port = r->port_out;
    }
    return rc;
}

int chan_alloc(chan_port *a, chan_port *b)
{
    struct chan_req r = { .op = OP_ALLOC };
    int rc;

    rc = call_checked(&r, !a || !b);
    if (rc == 0) {
        *a = r.port_out;
        *b = r.port_out2;
    }
    return rc;
}

int chan_alloc_to(unsigned node, uint32_t key, chan_port *local)
{
    struct chan_req r = { .op = OP_ALLOC_TO, .node = node, .key = key };

    return call_port(&r, !local || node >= TPPI_num_nodes ||
                     node >= CP_MAX_NODES, local);
}

int chan_accept(unsigned node, uint32_t key, chan_port *port)
{
    struct chan_req r = { .op = OP_ACCEPT, .node = node, .key = key };

    return call_port(&r, !port || node >= TPPI_num_nodes, port);
}

int chan_free(chan_port p)
{
    struct chan_req r = { .op = OP_FREE, .a = p };

    return call(&r);
}

size_t chan_max_data(void)
{
    return cp_on_device ? TEMPEST_CHAN_MAX_DATA : CHAN_MAX_DATA;
}

static int output(unsigned op, chan_port p, const void *data, size_t len)
{
    struct chan_req r = { .op = op, .a = p, .src = data, .len = len };

    return call_checked(&r, len > chan_max_data() || (len && !data));
}

int chan_output(chan_port p, const void *data, size_t len)
{
    return output(OP_OUTPUT, p, data, len);
}

int chan_output_start(chan_port p, const void *data, size_t len)
{
    return output(OP_OUTPUT_START, p, data, len);
}

int chan_output_wait(chan_port p)
{
    struct chan_req r = { .op = OP_OUTPUT_WAIT, .a = p };

    return call(&r);
}

int chan_input(chan_port p, void *buf, size_t maxlen)
{
    struct chan_req r = { .op = OP_INPUT, .a = p, .dst = buf,
                          .len = maxlen };

    return call_checked(&r, maxlen && !buf);
}

int chan_output_input(chan_port p, const void *data, size_t len,
                      void *buf, size_t maxlen)
{
    struct chan_req r = { .op = OP_OUTPUT_INPUT, .a = p, .src = data,
                          .len = len, .dst = buf, .in_len = maxlen };
    int rc;

    if (!cp_on_device || maxlen > cp_dev_turn_max()) {
        /* In software, or an input longer than the port's buffer. */
        rc = chan_output(p, data, len);
        return rc ? rc : chan_input(p, buf, maxlen);
    }
    return call_checked(&r, len > chan_max_data() || (len && !data) ||
                            (maxlen && !buf));
}

int chan_set_buffer(chan_port p, void *buf, size_t size)
{
    struct chan_req r = { .op = OP_SET_BUFFER, .a = p, .dst = buf,
                          .len = size };

    return call_checked(&r, (buf && size == 0) || size > UINT32_MAX);
}

int chan_input_next(chan_port p, void *next, size_t next_size, void **data)
{
    struct chan_req r = { .op = OP_INPUT_NEXT, .a = p, .dst = next,
                          .len = next_size };
    int rc;

    rc = call_checked(&r, !data || !next || next_size == 0 ||
                      next_size > UINT32_MAX);
    if (rc >= 0) {
        *data = r.ptr_out;
    }
    return rc;
}

int chan_output_port(chan_port t, chan_port p)
{
    struct chan_req r = { .op = OP_OUTPUT_PORT, .a = t, .b = p };

    return call(&r);
}

int chan_output_port_start(chan_port t, chan_port p)
{
    struct chan_req r = { .op = OP_OUTPUT_PORT_START, .a = t, .b = p };

    return call(&r);
}

int chan_input_port(chan_port t, chan_port *p)
{
    struct chan_req r = { .op = OP_INPUT_PORT, .a = t };

    return call_port(&r, !p, p);
}

int chan_state(chan_port p)
{
    struct chan_req r = { .op = OP_STATE, .a = p };

    return call(&r);
}

int chan_companion(chan_port p, chan_port *c)
{
    struct chan_req r = { .op = OP_COMPANION, .a = p };

    return call_port(&r, !c, c);
}
