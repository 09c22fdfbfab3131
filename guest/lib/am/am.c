/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libam: set-up and the end, polling, the backlog, requests and replies
 * (GAM 1.1 as SP AM did it; docs/am.rst).
 *
 * The rings (tempest/nc.h): requests go out on SQ0, replies on SQ1; both
 * arrive in the one RQ, whose slots are freed lazily (the device's view
 * of the head moves every NC_FREE_BATCH slots, or before a sleep), as SP
 * AM popped the adapter's receive FIFO.
 *
 * Deadlock avoidance (GAM's request/reply rule, as SP AM kept it):
 *  - requests are sent from the program's code only; a request that
 *    finds SQ0 full polls (runs handlers) until there is room;
 *  - a request handler may send one reply, and nothing else; reply
 *    handlers send nothing, so handlers never nest;
 *  - a reply that finds SQ1 full runs no handler: it takes the packets
 *    waiting in the RQ into a software backlog (copies), so the RQ has
 *    room, the peers' credit comes back and the peer this reply waits for
 *    can go on too; the polls empty the backlog first;
 *  - every request is answered by exactly one packet on the reply network
 *    (its handler's reply, or the library's KIND_ACK when the handler
 *    sent none), and at most AM_WINDOW requests from one node to another
 *    are unanswered (SP AM's flow control, a window per pair of nodes).
 *    So a node's backlog holds at most AM_WINDOW requests from each node
 *    and AM_WINDOW replies from each node: BACKLOG_MAX, never more, and
 *    a reply never waits with the RQ full.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-internal.h"

#define BACKLOG_MIN         256         /* a power of 2 */
#define AM_WINDOW           32          /* unanswered requests a pair */
#define MAX_NODES           1024
/* Requests and replies, AM_WINDOW of each from every node. */
#define BACKLOG_MAX         (2 * AM_WINDOW * MAX_NODES)
#define POLL_MAX            NC_RQ_SLOTS /* messages one am_poll runs */
#define SEND_POLLS          4           /* messages a request runs */
#define IDLE_POLLS          64          /* empty am_polls before a sleep */
#define IDLE_SLEEP_US       50
#define WAIT_SLEEP_US       1000        /* a wait's sleep: an IRQ ends it */
#define REPLY_SLEEP_US      20
#define AM_IRQ_BITS         (TEMPEST_NC_IRQ_RQ | TEMPEST_NC_IRQ_CQ | \
                             TEMPEST_NC_IRQ_SQ | TEMPEST_NC_IRQ_COLL)

typedef void (*short_fn)(vnn_t, int, int, int, int);
typedef void (*mem_fn)(vnn_t, void *, int, void *);

int am_errno;
bool libam_on;
int libam_nodes = 1;
uint64_t libam_sent;
uint64_t libam_received;

static bool enabled_once;
static uint8_t *window;         /* unanswered requests to each node */

static void no_bulk_msg(const struct am_msg *m)
{
    libam_report("packet from node %u (network %u, kind 0x%x) dropped: this "
                 "program does no bulk transfers", m->src, m->net, m->kind);
}

static void no_bulk_event(const struct nc_event *e)
{
    (void)e;
}

static bool no_bulk(void)
{
    return false;
}

static bool bulk_idle(void)
{
    return true;
}

static struct libam_bulk_ops bulk = {
    no_bulk_msg, no_bulk_event, no_bulk, bulk_idle,
};

void libam_set_bulk(const struct libam_bulk_ops *ops)
{
    bulk = *ops;
}
static unsigned spin_turns;
/* Spin turns a microsecond when most turns write no POLL (a guess). */
#define AM_HINT_TURNS_PER_US    16
static unsigned idle_polls;
/* A link lost: its node + 1 (end_link_lost), or 0. */
static uint32_t lost_node;

static struct {
    enum am_ctx kind;
    vnn_t src;
    bool replied;
} ctx;

static struct {
    struct am_msg *m;
    uint32_t cap;           /* a power of 2 */
    uint32_t head;
    uint32_t count;
} backlog;

static const char *const error_names[] = {
    [AM_E_NONE] = "no error",
    [AM_E_DISABLED] = "the library is not enabled (am_enable)",
    [AM_E_NODE] = "no such node",
    [AM_E_SIZE] = "size out of range",
    [AM_E_HANDLER] = "the handler is not in the program's code",
    [AM_E_REPLY] = "a reply outside a request handler",
    [AM_E_REPLY_DEST] = "a reply must go to the requesting node",
    [AM_E_REPLIED] = "this request handler has replied already",
    [AM_E_IN_HANDLER] = "not allowed in a handler",
    [AM_E_ADDR] = "the local block is not in this node's RAM",
    [AM_E_REMOTE] = "the other node refused the block",
    [AM_E_NO_DEVICE] = "the node controller lacks messaging, transfers or "
                       "the control network",
};

const char *am_error_name(int err)
{
    if (err < 0 || err >= (int)(sizeof(error_names) /
                                sizeof(error_names[0]))) {
        return "unknown";
    }
    return error_names[err];
}

/* ---- errors and checks -------------------------------------------------- */

int libam_fail(const char *call, int err, const char *fmt, ...)
{
    char what[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    am_errno = err;
    fflush(stdout);
    fprintf(stderr, "*** am: node %u: %s: %s\n", rt_node_id(), call, what);
    return -1;
}

void libam_report(const char *fmt, ...)
{
    char what[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "*** am: node %u: %s\n", rt_node_id(), what);
}

int libam_check_top(const char *call)
{
    if (!libam_on) {
        return libam_fail(call, AM_E_DISABLED, "%s",
                          am_error_name(AM_E_DISABLED));
    }
    if (ctx.kind != CTX_NONE) {
        return libam_fail(call, AM_E_IN_HANDLER, "called from a %s handler",
                          ctx.kind == CTX_REQUEST ? "request" : "reply");
    }
    return 0;
}

int libam_check_node(const char *call, vnn_t node)
{
    if (node < 0 || node >= libam_nodes) {
        return libam_fail(call, AM_E_NODE, "node %d is not one of the %d nodes",
                          node, libam_nodes);
    }
    return 0;
}

int libam_check_handler(const char *call, uintptr_t h, bool may_be_null)
{
    if (h == 0 && may_be_null) {
        return 0;
    }
    if (!rt_text_contains((const void *)h) || (h & 3)) {
        return libam_fail(call, AM_E_HANDLER, "handler %p is not in the "
                          "program's code", (void *)h);
    }
    return 0;
}

bool libam_ram_contains(uint64_t p, uint64_t len)
{
    uint64_t end = rt_ram_base() + rt_ram_size();

    return p >= rt_ram_base() && p <= end && len <= end - p;
}

/* ---- running handlers --------------------------------------------------- */

static void run_short(const struct am_msg *m)
{
    int a[4];
    enum am_ctx kind = m->net == TEMPEST_NET_REQUEST ? CTX_REQUEST :
                       CTX_REPLY;

    if (!rt_text_contains((const void *)(uintptr_t)m->w1) || (m->w1 & 3)) {
        libam_report("%s from node %u dropped: its handler 0x%llx is not in "
                     "the program's code", kind == CTX_REQUEST ? "request" :
                     "reply", m->src, (unsigned long long)m->w1);
        return;
    }
    memcpy(a, m->d, sizeof(a));
    ctx.kind = kind;
    ctx.src = m->src;
    ctx.replied = false;
    ((short_fn)(uintptr_t)m->w1)(m->src, a[0], a[1], a[2], a[3]);
    ctx.kind = CTX_NONE;
}

void libam_run_mem(enum am_ctx kind, uintptr_t h, vnn_t node, uint64_t addr,
                   int nbytes, uint64_t arg)
{
    if (h == 0) {
        return;
    }
    if (!rt_text_contains((const void *)h) || (h & 3)) {
        libam_report("handler 0x%llx for %d bytes at 0x%llx (node %d) is not "
                     "in the program's code: not run", (unsigned long long)h,
                     nbytes, (unsigned long long)addr, node);
        return;
    }
    ctx.kind = kind;
    ctx.src = node;
    ctx.replied = false;
    ((mem_fn)h)(node, (void *)(uintptr_t)addr, nbytes,
                (void *)(uintptr_t)arg);
    ctx.kind = CTX_NONE;
}

/*
 * Runs message @m.  A request is answered once: by its handler's reply,
 * or by a KIND_ACK after it; a reply closes one place of the window of
 * requests to its sender.
 */
static void dispatch(const struct am_msg *m)
{
    static const uint64_t none[2];

    if (m->net == TEMPEST_NET_REPLY) {
        if (window[m->src]) {
            window[m->src]--;
        }
        if (m->kind == KIND_ACK) {
            return;
        }
    }
    ctx.replied = false;
    if (m->kind == KIND_SHORT) {
        run_short(m);
    } else if (m->kind != KIND_ACK) {
        bulk.msg(m);
    }
    if (m->net == TEMPEST_NET_REQUEST && !ctx.replied) {
        libam_send_reply(m->src, KIND_ACK, 0, 0, 0, none);
    }
}

/* ---- the receive ring and the backlog ----------------------------------- */

/*
 * Copies the RQ's head @p into @m and frees its slot; false (slot freed
 * too) if it is not one of ours.
 */
static bool take(struct nc_pkt *p, struct am_msg *m)
{
    uint32_t len = p->ctl & TEMPEST_PKT_LEN_MASK;
    bool ours = p->kind >= KIND_SHORT && p->kind <= KIND_ACK &&
                len <= sizeof(m->d);

    if (ours) {
        m->src = p->node;
        m->net = p->net & 1;
        m->kind = p->kind;
        m->w0 = p->word0;
        m->w1 = p->word1;
        m->w2 = p->word2;
        memset(m->d, 0, sizeof(m->d));
        memcpy(m->d, p->data, len);
    } else {
        libam_report("packet from node %u (network %u, kind 0x%x, %u bytes) "
                     "dropped: not a GAM packet", p->node, p->net, p->kind,
                     (unsigned)len);
    }
    nc_rq_pop(p);
    libam_received++;
    return ours;
}

static bool backlog_grow(void)
{
    uint32_t cap = backlog.cap ? backlog.cap * 2 : BACKLOG_MIN;
    struct am_msg *m;

    if (cap > BACKLOG_MAX) {
        return false;
    }
    m = malloc(cap * sizeof(*m));
    if (m == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < backlog.count; i++) {
        m[i] = backlog.m[(backlog.head + i) & (backlog.cap - 1)];
    }
    free(backlog.m);
    backlog.m = m;
    backlog.cap = cap;
    backlog.head = 0;
    return true;
}

/*
 * Moves the packets waiting in the RQ into the backlog, running nothing;
 * true if it moved one.  (A reply waiting for room does this.)
 */
static bool stash(void)
{
    struct nc_pkt *p;
    bool any = false;

    while ((p = nc_rq_peek()) != NULL) {
        if (backlog.count == backlog.cap && !backlog_grow()) {
            break;
        }
        if (take(p, &backlog.m[(backlog.head + backlog.count) &
                               (backlog.cap - 1)])) {
            backlog.count++;
        }
        any = true;
    }
    if (any) {
        nc_rx_doorbell();
    }
    return any;
}

/*
 * A link lost (its peer killed, or a link the fabric gave up on a live
 * peer): what the peer sent may be lost with it, so a program polling for
 * it would poll for ever.  The node ends at the first poll that finds
 * nothing else to run, as Strata's poll loops do.  A peer that exited,
 * with any status, ends nothing.
 */
static void __attribute__((noreturn)) end_link_lost(uint32_t node)
{
    libam_report("the link with node %u is lost: ending this node "
                 "(status 1)", (unsigned)node);
    fflush(stderr);
    nc_failure_pause();
    rt_exit(1);
}

static void take_event(void)
{
    struct nc_event *e = nc_cq_peek();
    struct nc_event ev = *e;

    nc_cq_pop(e);
    switch (ev.ctl & TEMPEST_EV_TYPE_MASK) {
    case TEMPEST_EV_XFER_SENT:
    case TEMPEST_EV_XFER_RECV:
        bulk.event(&ev);
        break;
    case TEMPEST_EV_PEER_DOWN:
        if (ev.a != 0 || ev.b != 0) {
            libam_report("node %u is gone (%s %llu)", (unsigned)ev.node,
                         ev.a ? "connection lost" : "exit status",
                         (unsigned long long)(ev.a ? 1 : ev.b));
        }
        if (ev.a != 0) {
            lost_node = ev.node + 1;
        }
        break;
    case TEMPEST_EV_SEND_ERROR:
        libam_report("send to node %u failed: %s", (unsigned)ev.node,
                     nc_err_name((uint32_t)ev.b));
        break;
    default:
        break;
    }
}

/*
 * One step of a poll from the program's code: sends the notices of
 * finished stores, or runs one message (the backlog's first), or takes
 * one control event.  True if it did something.
 */
static bool poll_once(void)
{
    struct am_msg m;
    struct nc_pkt *p;

    if (bulk.flush()) {
        return true;
    }
    if (backlog.count) {
        m = backlog.m[backlog.head];
        backlog.head = (backlog.head + 1) & (backlog.cap - 1);
        backlog.count--;
        dispatch(&m);
        return true;
    }
    p = nc_rq_peek();
    if (p != NULL) {
        if (take(p, &m)) {
            dispatch(&m);
        }
        return true;
    }
    if (nc_cq_peek() != NULL) {
        take_event();
        return true;
    }
    /* Nothing here: the device may use the slots freed so far. */
    nc_rx_doorbell();
    if (lost_node) {
        end_link_lost(lost_node - 1);
    }
    return false;
}

static void nc_irq(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    nc_irq_ack(AM_IRQ_BITS);
}

static inline bool irq_pending(void)
{
    return rt_irq_pending();
}

void libam_wait(bool (*done)(void *), void *arg)
{
    unsigned spins = 0;

    while (!done(arg)) {
        if (poll_once()) {
            spins = 0;
            continue;
        }
        if (++spins < spin_turns) {
            /* Spinning: the device hands over what peers left. */
            if (nc_poll_due(spins)) {
                nc_poll(true);
            }
            continue;
        }
        spins = 0;
        /* Sleep: stop polling and acknowledge first, then look again. */
        nc_poll(false);
        nc_irq_ack(AM_IRQ_BITS);
        if (done(arg) || nc_rq_peek() || nc_cq_peek() || backlog.count) {
            continue;
        }
        if (!irq_pending()) {
            rt_cpu_sleep(WAIT_SLEEP_US);
        }
    }
    nc_poll(false);
}

int am_poll(void)
{
    int n = 0;

    if (libam_check_top("am_poll") < 0) {
        return -1;
    }
    while (n < POLL_MAX && poll_once()) {
        n++;
    }
    if (n) {
        idle_polls = 0;
        return n;
    }
    if (spin_turns && nc_poll_due(idle_polls)) {
        nc_poll(true);
    }
    if (++idle_polls >= IDLE_POLLS + spin_turns) {
        /* A program idling in am_poll: sleep a little, woken by a message. */
        idle_polls = 0;
        nc_poll(false);
        nc_irq_ack(AM_IRQ_BITS);
        if (!nc_rq_peek() && !nc_cq_peek() && !irq_pending()) {
            rt_cpu_sleep(IDLE_SLEEP_US);
        }
    }
    return 0;
}

/* ---- sending ------------------------------------------------------------ */

static bool try_send(unsigned net, unsigned dest, uint8_t kind, uint32_t w0,
                     uint64_t w1, uint64_t w2, const uint64_t d[2])
{
    struct nc_pkt *p = nc_sq_claim(net);

    if (p == NULL) {
        return false;
    }
    p->node = (uint16_t)dest;
    p->kind = kind;
    p->word0 = w0;
    p->word1 = w1;
    p->word2 = w2;
    memcpy(p->data, d, 2 * sizeof(uint64_t));
    nc_sq_post(net, p, 2 * sizeof(uint64_t));
    nc_sq_doorbell(net);
    libam_sent++;
    return true;
}

static bool request_room(void *arg)
{
    unsigned dest = *(unsigned *)arg;

    return window[dest] < AM_WINDOW &&
           nc_sq_claim(TEMPEST_NET_REQUEST) != NULL;
}

void libam_send_request(unsigned dest, uint8_t kind, uint32_t w0, uint64_t w1,
                        uint64_t w2, const uint64_t d[2])
{
    /* Nothing polls between the window's check and the send. */
    while (window[dest] >= AM_WINDOW ||
           !try_send(TEMPEST_NET_REQUEST, dest, kind, w0, w1, w2, d)) {
        libam_wait(request_room, &dest);
    }
    window[dest]++;
    /*
     * Every request polls a little too (as SP AM's did): a node that only
     * sends would leave its replies in the RQ, its peers' reply rings
     * would fill, and their replies would go to the backlog.
     */
    for (unsigned i = 0; i < SEND_POLLS && poll_once(); i++) {
        /* handled one */
    }
}

void libam_send_reply(unsigned dest, uint8_t kind, uint32_t w0, uint64_t w1,
                      uint64_t w2, const uint64_t d[2])
{
    unsigned spins = 0;

    ctx.replied = true;

    while (!try_send(TEMPEST_NET_REPLY, dest, kind, w0, w1, w2, d)) {
        if (stash()) {
            spins = 0;
            continue;
        }
        if (++spins < spin_turns) {
            if (nc_poll_due(spins)) {
                nc_poll(true);
            }
            continue;
        }
        spins = 0;
        nc_poll(false);
        nc_irq_ack(AM_IRQ_BITS);
        if (!nc_sq_claim(TEMPEST_NET_REPLY) && !nc_rq_peek() &&
            !irq_pending()) {
            rt_cpu_sleep(REPLY_SLEEP_US);
        }
    }
}

static int request(const char *call, vnn_t dest, handler_t handler,
                   unsigned n, int a0, int a1, int a2, int a3)
{
    int a[4] = { a0, a1, a2, a3 };
    uint64_t d[2];

    if (libam_check_top(call) < 0 || libam_check_node(call, dest) < 0 ||
        libam_check_handler(call, (uintptr_t)handler, false) < 0) {
        return -1;
    }
    memcpy(d, a, sizeof(d));
    libam_send_request((unsigned)dest, KIND_SHORT, n, (uintptr_t)handler, 0, d);
    return 0;
}

static int reply(const char *call, vnn_t dest, handler_t handler, unsigned n,
                 int a0, int a1, int a2, int a3)
{
    int a[4] = { a0, a1, a2, a3 };
    uint64_t d[2];

    if (!libam_on) {
        return libam_fail(call, AM_E_DISABLED, "%s",
                          am_error_name(AM_E_DISABLED));
    }
    if (ctx.kind != CTX_REQUEST) {
        return libam_fail(call, AM_E_REPLY, "not inside a request handler "
                          "(in %s)", ctx.kind == CTX_NONE ?
                          "the program's code" : "a reply handler");
    }
    if (dest != ctx.src) {
        return libam_fail(call, AM_E_REPLY_DEST, "a reply to node %d from the "
                          "handler of a request from node %d", dest, ctx.src);
    }
    if (ctx.replied) {
        return libam_fail(call, AM_E_REPLIED, "%s",
                          am_error_name(AM_E_REPLIED));
    }
    if (libam_check_handler(call, (uintptr_t)handler, false) < 0) {
        return -1;
    }
    memcpy(d, a, sizeof(d));
    ctx.replied = true;
    libam_send_reply((unsigned)dest, KIND_SHORT, n, (uintptr_t)handler, 0, d);
    return 0;
}

int am_request_1(vnn_t dest, handler_t handler, int a0)
{
    return request("am_request_1", dest, handler, 1, a0, 0, 0, 0);
}

int am_request_2(vnn_t dest, handler_t handler, int a0, int a1)
{
    return request("am_request_2", dest, handler, 2, a0, a1, 0, 0);
}

int am_request_3(vnn_t dest, handler_t handler, int a0, int a1, int a2)
{
    return request("am_request_3", dest, handler, 3, a0, a1, a2, 0);
}

int am_request_4(vnn_t dest, handler_t handler, int a0, int a1, int a2,
                 int a3)
{
    return request("am_request_4", dest, handler, 4, a0, a1, a2, a3);
}

int am_reply_1(vnn_t dest, handler_t handler, int a0)
{
    return reply("am_reply_1", dest, handler, 1, a0, 0, 0, 0);
}

int am_reply_2(vnn_t dest, handler_t handler, int a0, int a1)
{
    return reply("am_reply_2", dest, handler, 2, a0, a1, 0, 0);
}

int am_reply_3(vnn_t dest, handler_t handler, int a0, int a1, int a2)
{
    return reply("am_reply_3", dest, handler, 3, a0, a1, a2, 0);
}

int am_reply_4(vnn_t dest, handler_t handler, int a0, int a1, int a2,
               int a3)
{
    return reply("am_reply_4", dest, handler, 4, a0, a1, a2, a3);
}

/* ---- set-up and the end ------------------------------------------------- */

static bool coll_over(void *arg)
{
    (void)arg;
    return nc_reg(TEMPEST_NC_COLL_STATUS) != TEMPEST_COLL_ST_PENDING;
}

/*
 * A combine of @lanes unsigned sums (or, with @lanes 0, a barrier) on the
 * control network, polling meanwhile; false (reported) if it failed.
 */
static bool combine(const char *call, const uint64_t *in, uint64_t *out,
                    unsigned lanes)
{
    static uint64_t lanes_in[2], lanes_out[2];
    uint64_t args[6] = {
        TEMPEST_COLL_COMBINE,
        (lanes ? TEMPEST_COLL_UADD : TEMPEST_COLL_OR) |
        TEMPEST_COLL_REDUCE << 8,
        lanes ? (uintptr_t)lanes_in : 0, lanes,
        lanes ? (uintptr_t)lanes_out : 0, TEMPEST_SEG_NONE,
    };
    uint32_t st, reason = 0;

    if (lanes) {
        memcpy(lanes_in, in, lanes * sizeof(uint64_t));
    }
    st = nc_cmd(TEMPEST_CMD_COLL_START, args, 6, 0, NULL, &reason);
    if (st != TEMPEST_CMD_SUCCESS) {
        libam_fail(call, AM_E_NO_DEVICE, "the control network refused: %s",
                   nc_cmd_reason_name(reason));
        return false;
    }
    libam_wait(coll_over, NULL);
    if (nc_reg(TEMPEST_NC_COLL_STATUS) == TEMPEST_COLL_ST_ERROR) {
        libam_fail(call, AM_E_NO_DEVICE, "the control network failed "
                   "(error %u): a node is gone or did not call %s",
                   (unsigned)nc_reg(TEMPEST_NC_COLL_ERROR), call);
        return false;
    }
    if (lanes) {
        memcpy(out, lanes_out, lanes * sizeof(uint64_t));
    }
    return true;
}

int am_enable(void)
{
    uint32_t need = TEMPEST_NC_FEAT_MSG | TEMPEST_NC_FEAT_CMD |
                    TEMPEST_NC_FEAT_COLL | TEMPEST_NC_FEAT_XFER;

    libam_nodes = (int)rt_num_nodes();
    if (libam_on) {
        return 0;
    }
    if (enabled_once) {
        return libam_fail("am_enable", AM_E_DISABLED, "called again after "
                          "am_disable");
    }
    if ((nc_reg(TEMPEST_NC_FEATURES) & need) != need) {
        return libam_fail("am_enable", AM_E_NO_DEVICE, "%s (features 0x%08lx)",
                          am_error_name(AM_E_NO_DEVICE),
                          (unsigned long)nc_reg(TEMPEST_NC_FEATURES));
    }
    window = calloc((size_t)libam_nodes, sizeof(*window));
    if (window == NULL || nc_init() != 0 || !backlog_grow()) {
        return libam_fail("am_enable", AM_E_NO_DEVICE, "the rings cannot be "
                          "set up");
    }
    if (rt_irq_register(NC_INTID, nc_irq, NULL) != 0 ||
        rt_irq_enable_spi(NC_INTID, rt_cpu_id(), false) != 0) {
        return libam_fail("am_enable", AM_E_NO_DEVICE, "cannot take the node "
                          "controller's interrupt");
    }
    nc_irq_enable(AM_IRQ_BITS);
    /*
     * Spin (about 1 us a turn when each writes POLL, much less with a
     * poll hint: nc_poll_due) only when it pays.
     */
    spin_turns = nc_spin_us(0) * (nc_poll_hint ? AM_HINT_TURNS_PER_US : 1);
    libam_on = true;
    enabled_once = true;
    if (!combine("am_enable", NULL, NULL, 0)) {
        libam_on = false;
        return -1;
    }
    return 0;
}

static bool sends_done(void *arg)
{
    (void)arg;
    return bulk.idle() && nc_sq_drained(TEMPEST_NET_REQUEST) &&
           nc_sq_drained(TEMPEST_NET_REPLY) &&
           nc_reg(TEMPEST_NC_XFER_ACTIVE) == 0;
}

void am_disable(void)
{
    uint64_t in[2], out[2], prev[2] = { ~0ULL, ~0ULL };

    if (libam_check_top("am_disable") < 0) {
        return;
    }
    libam_wait(sends_done, NULL);
    /*
     * Every node here and no message in flight: two rounds agree on the
     * sums of messages sent and received, and they are equal.
     */
    for (;;) {
        while (poll_once()) {
            /* until nothing waits */
        }
        in[0] = libam_sent;
        in[1] = libam_received;
        if (!combine("am_disable", in, out, 2)) {
            break;
        }
        if (out[0] == out[1] && out[0] == prev[0] && out[1] == prev[1]) {
            break;
        }
        prev[0] = out[0];
        prev[1] = out[1];
    }
    nc_poll(false);
    nc_rx_doorbell();
    libam_on = false;
}

int am_procs(void)
{
    return (int)rt_num_nodes();
}

int am_my_proc(void)
{
    return (int)rt_node_id();
}

int am_max_size(void)
{
    return (int)TEMPEST_XFER_MAX;
}
