/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libmagic: FLASH-style message passing, memory copy and fetch-and-op
 * over libtempest's transfer engine calls (see magic.h).
 *
 * Send side.  Each send or copy gets a message id from a per-node
 * counter and a send record (slot mid % MAGIC_RECORDS) that
 * magic_senddone() reads; the protocol thread marks it done or failed
 * when the XFER_SENT event comes.  The transfer's cookie:
 *   63..56  TEMPEST_XFER_CLIENT_MAGIC
 *   55..52  KIND_TYPED (magic_send) or KIND_COPY (magic_fastmemcpy)
 *   51..32  typed: the send's sequence number per (destination, type),
 *           modulo 2^20
 *   31..0   the low 32 bits of the message id
 * The sequence number is taken and the command committed under the
 * library lock, so numbers reach the controller in order and a send the
 * controller fails consumes none.
 *
 * Receive side (the protocol thread, XFER_RECV events): a typed message
 * becomes an entry of its type's receive table, a FIFO in this node's
 * memory that magic_receive() pops under the lock; with the completion
 * order rule (FLASH 3.4.2) an entry whose sequence number is not the
 * next expected from its sender waits in the type's held list until the
 * earlier ones are in.  A typed message its destination refused (no
 * posted buffer large enough) is never stored there, so the sender's
 * protocol thread tells the destination with an active message
 * (skip_h), which lets the order move past it.
 *
 * Buffers posted for a type are kept in a list per type, in posting
 * order.  A buffer is space (FLASH's bufalloc "preallocates buffer
 * space"): the node controller puts messages of its type one after
 * another into it until under 64 bytes are left, then says so in the
 * XFER_RECV event of the last of them (buf_done), and the buffer leaves
 * the posted list.  The one a message landed in is found by address; a
 * received message is kept in a table by its address (the mentry itself)
 * for magic_bufreturn() and magic_buffree(), and its buffer counts it in
 * use.  Once a full buffer has none in use, bufreturn posts all of its
 * space again (or buffree frees it).  Messages with no buffer wait in the
 * controller's system space meanwhile; their senders are done.
 *
 * One spinlock, taken with IRQs masked (the platform's rt_irq_save()),
 * guards the tables: on a one-vCPU node the protocol thread is an
 * interrupt handler.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic.h"
#include "tempest/rt.h"

#define KIND_TYPED          1
#define KIND_COPY           2
#define KIND_SHIFT          52
#define SEQ_SHIFT           32
#define SEQ_MASK            0xFFFFFU
#define TYPE_BUCKETS        256     /* powers of 2 */
#define DELIV_BUCKETS       256
#define BUF_ALIGN           64

enum { REC_FREE, REC_PENDING, REC_DONE, REC_FAILED };

/* A send record. */
struct rec {
    uint64_t mid;
    uint64_t len;
    uint32_t state;
    unsigned kind;
    unsigned dest;
    unsigned type;
    uint32_t seq;
};

/* A buffer posted for a type, until full and no message in it is in use. */
struct mbuf {
    struct mbuf *next;      /* posted list */
    uint8_t *base;
    size_t size;
    unsigned type;
    unsigned inuse;         /* messages in it received, not returned/freed */
    bool full;              /* the controller filled it: not posted */
    bool owned;             /* allocated by magic_bufalloc() */
    bool freeing;           /* magic_buffree() said: free, not repost */
};

/* An entry of a receive table (or a held message, or a skip). */
struct mentry {
    struct mentry *next;
    uint64_t addr;
    size_t len;
    struct mbuf *buf;
    unsigned src;
    uint32_t seq;
    bool skip;              /* a refused message: only its place in order */
};

/* Everything about one message type on this node. */
struct mtype {
    struct mtype *next;
    unsigned type;
    struct mentry *head, *tail;     /* the receive table, oldest first */
    struct mentry *held;            /* stored before an earlier one */
    struct mbuf *posted, *posted_tail;
    uint32_t *next_seq;             /* sender: per destination */
    uint32_t *expect;               /* receiver: per source */
};

static struct rec recs[MAGIC_RECORDS];
static uint64_t mid_counter;
static struct mtype *types[TYPE_BUCKETS];
static struct mentry *delivered[DELIV_BUCKETS];     /* by address */
static uint64_t *copies;            /* per source node */
static magic_copy_fn copy_fn;
static uint32_t lock_word;
static int ordered = 1;
static int last_error;
static struct magic_stats stats;

/* ---- locking, reports ---------------------------------------------------- */

static uint64_t lock(void)
{
    uint64_t flags = rt_irq_save();

    while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) {
            __asm__ volatile("yield");
        }
    }
    return flags;
}

static void unlock(uint64_t flags)
{
    __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
    rt_irq_restore(flags);
}

static void count(uint64_t *c, uint64_t n)
{
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Reports a failed call: "*** magic: node K: <what>: <why> (error E)". */
static void fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(int err, const char *fmt, ...)
{
    char line[200];
    va_list ap;

    __atomic_store_n(&last_error, err, __ATOMIC_RELAXED);
    count(&stats.errors, 1);
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("*** magic: node %u: %s: %s (error %d)\n", TPPI_self_address,
           line, magic_strerror(err), err);
}

int magic_last_error(void)
{
    return __atomic_exchange_n(&last_error, 0, __ATOMIC_RELAXED);
}

const char *magic_strerror(int err)
{
    switch (err) {
    case 0:
        return "no error";
    case MAGIC_E_NOMEM:
        return "out of memory";
    case MAGIC_E_NOT_BUFFER:
        return "not the buffer of a received message";
    case MAGIC_E_FULL:
        return "the node controller holds all the buffers it can";
    case MAGIC_E_BAD_MID:
        return "no such message id";
    case MAGIC_E_REFUSED:
        return "refused at the destination";
    case MAGIC_E_BAD_ARG:
        return "bad argument";
    default:
        return err > 0 && err < MAGIC_E_NOMEM ?
               tempest_cmd_reason_name((uint32_t)err) : "unknown";
    }
}

void magic_get_stats(struct magic_stats *s)
{
    if (s) {
        *s = stats;
    }
}

/*
 * Waits until cond(arg): sleeping in computation code.  On the protocol
 * thread (where tempest_wait() returns at once) it polls if the condition
 * does not need the protocol thread (@local: the controller alone makes
 * it come true), else it returns after one look.  Returns cond(arg).
 */
static int wait_for(int (*cond)(void *), void *arg, bool local)
{
    bool on_pt = tempest_on_protocol_thread();

    while (!cond(arg)) {
        if (on_pt && !local) {
            return 0;
        }
        tempest_wait(cond, arg);
    }
    return 1;
}

/* ---- tables (under the lock) --------------------------------------------- */

static bool nodes_ready(void)
{
    if (copies == NULL) {
        copies = calloc(TPPI_num_nodes, sizeof(*copies));
    }
    return copies != NULL;
}

static struct mtype *type_get(unsigned type, bool create)
{
    struct mtype **pp = &types[(type * 2654435761U) & (TYPE_BUCKETS - 1)];
    struct mtype *mt;

    for (mt = *pp; mt; mt = mt->next) {
        if (mt->type == type) {
            return mt;
        }
    }
    if (!create) {
        return NULL;
    }
    mt = calloc(1, sizeof(*mt));
    if (mt == NULL) {
        return NULL;
    }
    mt->next_seq = calloc(TPPI_num_nodes, sizeof(uint32_t));
    mt->expect = calloc(TPPI_num_nodes, sizeof(uint32_t));
    if (mt->next_seq == NULL || mt->expect == NULL) {
        free(mt->next_seq);
        free(mt->expect);
        free(mt);
        return NULL;
    }
    mt->type = type;
    mt->next = *pp;
    *pp = mt;
    return mt;
}

static unsigned deliv_bucket(uint64_t msg)
{
    return (unsigned)(msg >> 6) & (DELIV_BUCKETS - 1);
}

static struct mentry *deliv_take(uint64_t msg)
{
    struct mentry **pp = &delivered[deliv_bucket(msg)];
    struct mentry *e;

    for (; (e = *pp) != NULL; pp = &e->next) {
        if (e->addr == msg) {
            *pp = e->next;
            e->next = NULL;
            return e;
        }
    }
    return NULL;
}

static void posted_add(struct mtype *mt, struct mbuf *b)
{
    b->next = NULL;
    if (mt->posted_tail) {
        mt->posted_tail->next = b;
    } else {
        mt->posted = b;
    }
    mt->posted_tail = b;
}

/* The posted buffer of @mt holding @addr, left where it is, or NULL. */
static struct mbuf *posted_find(struct mtype *mt, uint64_t addr)
{
    struct mbuf *b;

    for (b = mt->posted; b; b = b->next) {
        if (addr >= (uintptr_t)b->base &&
            addr - (uintptr_t)b->base < (b->size ? b->size : 1)) {
            return b;
        }
    }
    return NULL;
}

/* Takes the posted buffer of @mt holding @addr (or @b itself) out. */
static struct mbuf *posted_take(struct mtype *mt, uint64_t addr,
                                struct mbuf *want)
{
    struct mbuf **pp = &mt->posted, *b, *prev = NULL;

    for (; (b = *pp) != NULL; prev = b, pp = &b->next) {
        if (want ? b == want : (addr >= (uintptr_t)b->base &&
                                addr - (uintptr_t)b->base <
                                (b->size ? b->size : 1))) {
            *pp = b->next;
            if (mt->posted_tail == b) {
                mt->posted_tail = prev;
            }
            b->next = NULL;
            return b;
        }
    }
    return NULL;
}

static void table_push(struct mtype *mt, struct mentry *e)
{
    if (e->skip) {
        free(e);
        return;
    }
    e->next = NULL;
    if (mt->tail) {
        mt->tail->next = e;
    } else {
        mt->head = e;
    }
    mt->tail = e;
}

static struct mentry *held_take(struct mtype *mt, unsigned src, uint32_t seq)
{
    struct mentry **pp = &mt->held, *e;

    for (; (e = *pp) != NULL; pp = &e->next) {
        if (e->src == src && e->seq == seq) {
            *pp = e->next;
            return e;
        }
    }
    return NULL;
}

/* A message (or a skip) from e->src is in: into the table, in order. */
static void deliver(struct mtype *mt, struct mentry *e)
{
    unsigned src = e->src;

    if (!ordered) {
        table_push(mt, e);
        return;
    }
    if (e->seq != mt->expect[src]) {
        if (!e->skip) {
            count(&stats.held_back, 1);
        }
        e->next = mt->held;
        mt->held = e;
        return;
    }
    while (e) {
        table_push(mt, e);
        mt->expect[src] = (mt->expect[src] + 1) & SEQ_MASK;
        e = held_take(mt, src, mt->expect[src]);
    }
}

/* ---- sending ------------------------------------------------------------- */

static uint64_t cookie(unsigned kind, uint32_t seq, uint64_t mid)
{
    return (uint64_t)TEMPEST_XFER_CLIENT_MAGIC << TEMPEST_XFER_CLIENT_SHIFT |
           (uint64_t)kind << KIND_SHIFT | (uint64_t)(seq & SEQ_MASK) <<
           SEQ_SHIFT | (uint32_t)mid;
}

struct start_try {
    struct rec *rec;
    const void *buf;
    uint64_t len;
    uint64_t where;
    uint64_t mid;
    unsigned kind;
    unsigned dest;
    unsigned type;
    int result;
    bool done;
};

static int rec_free(void *arg)
{
    struct rec *r = arg;

    return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != REC_PENDING;
}

/* One commit of the transfer; true once it is not RETRY. */
static int start_commit(void *arg)
{
    struct start_try *t = arg;
    struct mtype *mt = NULL;
    uint32_t seq = 0;
    uint64_t flags;
    int r;

    if (t->done) {
        return 1;
    }
    flags = lock();
    if (t->kind == KIND_TYPED && t->dest < TPPI_num_nodes) {
        mt = type_get(t->type, true);
        if (mt == NULL) {
            unlock(flags);
            t->result = MAGIC_E_NOMEM;
            t->done = true;
            return 1;
        }
        seq = mt->next_seq[t->dest];
    }
    t->rec->seq = seq;
    r = tempest_xfer_try(t->dest, t->buf, t->len, t->where,
                         t->kind == KIND_TYPED ? TEMPEST_XFER_TYPED : 0,
                         cookie(t->kind, seq, t->mid), NULL);
    if (r == 0 && mt) {
        mt->next_seq[t->dest] = (seq + 1) & SEQ_MASK;
    }
    unlock(flags);
    if (r == -1) {
        return 0;
    }
    t->result = r;
    t->done = true;
    return 1;
}

static magic_mid start(unsigned kind, unsigned dest, const void *buf,
                       uint64_t len, uint64_t where, unsigned type)
{
    struct start_try t = {
        .buf = buf, .len = len, .where = where, .kind = kind,
        .dest = dest, .type = type,
    };
    struct rec *r;

    t.mid = __atomic_add_fetch(&mid_counter, 1, __ATOMIC_RELAXED);
    r = &recs[t.mid % MAGIC_RECORDS];
    /* (In a handler a record still in use is taken over: see magic.h.) */
    wait_for(rec_free, r, false);
    r->mid = t.mid;
    r->len = len;
    r->kind = kind;
    r->dest = dest;
    r->type = type;
    __atomic_store_n(&r->state, REC_PENDING, __ATOMIC_RELEASE);
    t.rec = r;
    wait_for(start_commit, &t, true);
    if (t.result != 0) {
        __atomic_store_n(&r->state, REC_FREE, __ATOMIC_RELEASE);
        if (kind == KIND_TYPED) {
            fail(t.result, "magic_send(type %u, node %u, %p, %llu bytes)",
                 type, dest, buf, (unsigned long long)len);
        } else {
            fail(t.result, "magic_fastmemcpy(%p, %llu bytes, node %u, "
                 "0x%llx)", buf, (unsigned long long)len, dest,
                 (unsigned long long)where);
        }
        return MAGIC_NO_MID;
    }
    count(kind == KIND_TYPED ? &stats.sends : &stats.copies, 1);
    return t.mid;
}

magic_mid magic_send(unsigned type, unsigned dest, const void *buf,
                     size_t len)
{
    return start(KIND_TYPED, dest, buf, len, type, type);
}

magic_mid magic_fastmemcpy(const void *src, size_t len, unsigned dest,
                           void *dst)
{
    return start(KIND_COPY, dest, src, len, (uintptr_t)dst, 0);
}

int magic_senddone(magic_mid mid)
{
    struct rec *r;
    uint32_t state;

    if (mid == MAGIC_NO_MID ||
        mid > __atomic_load_n(&mid_counter, __ATOMIC_RELAXED)) {
        __atomic_store_n(&last_error, MAGIC_E_BAD_MID, __ATOMIC_RELAXED);
        return -1;
    }
    r = &recs[mid % MAGIC_RECORDS];
    state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&r->mid, __ATOMIC_RELAXED) != mid) {
        return 1;           /* its record was reused: long complete */
    }
    switch (state) {
    case REC_PENDING:
        return 0;
    case REC_DONE:
        return 1;
    case REC_FAILED:
        return -1;
    default:
        __atomic_store_n(&last_error, MAGIC_E_BAD_MID, __ATOMIC_RELAXED);
        return -1;          /* its initiation failed */
    }
}

static int senddone_cond(void *arg)
{
    return magic_senddone(*(magic_mid *)arg) != 0;
}

int magic_sendwait(magic_mid mid)
{
    wait_for(senddone_cond, &mid, false);
    return magic_senddone(mid);
}

/* ---- receive buffers and the receive table ------------------------------- */

/* Registers @b for its type and posts it; 0 or an error (b not freed). */
static int post(struct mbuf *b)
{
    struct mtype *mt;
    uint64_t flags;
    int r;

    flags = lock();
    mt = type_get(b->type, true);
    if (mt) {
        posted_add(mt, b);
    }
    unlock(flags);
    if (mt == NULL) {
        return MAGIC_E_NOMEM;
    }
    r = tempest_buf_post(b->type, b->base, b->size);
    if (r != 0) {
        flags = lock();
        posted_take(mt, 0, b);
        unlock(flags);
        return r < 0 ? MAGIC_E_FULL : r;
    }
    return 0;
}

static struct mbuf *new_buf(void *base, size_t size, unsigned type,
                            bool owned)
{
    struct mbuf *b = calloc(1, sizeof(*b));

    if (b) {
        b->base = base;
        b->size = size;
        b->type = type;
        b->owned = owned;
    }
    return b;
}

void *magic_bufalloc(size_t size, unsigned type)
{
    struct mbuf *b;
    void *base;
    int r;

    if (size == 0) {
        fail(MAGIC_E_BAD_ARG, "magic_bufalloc(0 bytes, type %u)", type);
        return NULL;
    }
    base = aligned_alloc(BUF_ALIGN, (size + BUF_ALIGN - 1) &
                         ~(size_t)(BUF_ALIGN - 1));
    b = base ? new_buf(base, size, type, true) : NULL;
    if (b == NULL) {
        free(base);
        fail(MAGIC_E_NOMEM, "magic_bufalloc(%zu bytes, type %u)", size,
             type);
        return NULL;
    }
    r = post(b);
    if (r != 0) {
        free(b);
        free(base);
        fail(r, "magic_bufalloc(%zu bytes, type %u)", size, type);
        return NULL;
    }
    return base;
}

int magic_bufpost(void *buf, size_t size, unsigned type)
{
    struct mbuf *b;
    int r;

    if (buf == NULL || size == 0) {
        fail(MAGIC_E_BAD_ARG, "magic_bufpost(%p, %zu bytes, type %u)", buf,
             size, type);
        return MAGIC_E_BAD_ARG;
    }
    b = new_buf(buf, size, type, false);
    r = b ? post(b) : MAGIC_E_NOMEM;
    if (r != 0) {
        free(b);
        fail(r, "magic_bufpost(%p, %zu bytes, type %u)", buf, size, type);
    }
    return r;
}

void *magic_receive(unsigned type, int *src, size_t *len)
{
    struct mentry *e = NULL;
    struct mtype *mt;
    uint64_t flags, addr;
    unsigned b;

    flags = lock();
    mt = type_get(type, false);
    if (mt && mt->head) {
        e = mt->head;
        mt->head = e->next;
        if (mt->head == NULL) {
            mt->tail = NULL;
        }
    }
    unlock(flags);
    if (e == NULL) {
        if (src) {
            *src = -1;
        }
        if (len) {
            *len = 0;
        }
        return NULL;
    }
    if (src) {
        *src = (int)e->src;
    }
    if (len) {
        *len = e->len;
    }
    addr = e->addr;
    if (e->buf) {
        /* Kept, by address, for magic_bufreturn() and magic_buffree(). */
        flags = lock();
        b = deliv_bucket(addr);
        e->next = delivered[b];
        delivered[b] = e;
        unlock(flags);
    } else {
        free(e);
    }
    return (void *)(uintptr_t)addr;
}

static int has_message(void *arg)
{
    unsigned type = *(unsigned *)arg;
    struct mtype *mt;
    uint64_t flags;
    int r;

    flags = lock();
    mt = type_get(type, false);
    r = mt && mt->head;
    unlock(flags);
    return r;
}

void *magic_receive_wait(unsigned type, int *src, size_t *len)
{
    tempest_wait(has_message, &type);
    return magic_receive(type, src, len);
}

/*
 * Message @e of a buffer is no longer in use; returns the buffer if that
 * was the last one in use of a full buffer (which the caller posts again
 * or frees), else NULL.
 */
static struct mbuf *msg_done(struct mentry *e, bool freeing)
{
    struct mbuf *b = e->buf;
    uint64_t flags;

    free(e);
    flags = lock();
    b->freeing |= freeing;
    b->inuse--;
    if (!b->full || b->inuse) {
        b = NULL;
    }
    unlock(flags);
    return b;
}

static void buf_release(struct mbuf *b)
{
    if (b->owned) {
        free(b->base);
    }
    free(b);
}

/*
 * Full buffer @b has no message in use: posts all its space again, or
 * frees it if magic_buffree() said so.  Returns 0, or why posting failed
 * (reported, for @who; the buffer is then freed).
 */
static int buf_give_back(struct mbuf *b, const char *who)
{
    int r;

    if (b->freeing) {
        buf_release(b);
        return 0;
    }
    b->full = false;
    r = post(b);
    if (r != 0) {
        fail(r, "%s: posting a filled buffer again (%zu bytes, type %u)",
             who, b->size, b->type);
        buf_release(b);
    }
    return r;
}

int magic_bufreturn(void *msg)
{
    struct mentry *e;
    struct mbuf *b;
    uint64_t flags;

    flags = lock();
    e = deliv_take((uintptr_t)msg);
    unlock(flags);
    if (e == NULL) {
        fail(MAGIC_E_NOT_BUFFER, "magic_bufreturn(%p)", msg);
        return MAGIC_E_NOT_BUFFER;
    }
    b = msg_done(e, false);
    /* NULL: its space is still posted, or still in use. */
    return b ? buf_give_back(b, "magic_bufreturn") : 0;
}

int magic_buffree(void *msg)
{
    struct mentry *e;
    struct mbuf *b;
    uint64_t flags;

    flags = lock();
    e = deliv_take((uintptr_t)msg);
    unlock(flags);
    if (e == NULL) {
        fail(MAGIC_E_NOT_BUFFER, "magic_buffree(%p)", msg);
        return MAGIC_E_NOT_BUFFER;
    }
    b = msg_done(e, true);
    if (b) {
        buf_give_back(b, "magic_buffree");  /* freeing: only frees it */
    }
    return 0;
}

int magic_set_ordered(int on)
{
    return __atomic_exchange_n(&ordered, on != 0, __ATOMIC_RELAXED);
}

/* ---- memory copies received ---------------------------------------------- */

uint64_t magic_copies_received(unsigned src)
{
    if (src >= TPPI_num_nodes || copies == NULL) {
        return 0;
    }
    return __atomic_load_n(&copies[src], __ATOMIC_ACQUIRE);
}

magic_copy_fn magic_on_copy(magic_copy_fn fn)
{
    return __atomic_exchange_n(&copy_fn, fn, __ATOMIC_ACQ_REL);
}

/* ---- fetch-and-op -------------------------------------------------------- */

static const char *fop_name(unsigned op)
{
    switch (op) {
    case TEMPEST_FOP_ADD:
        return "add";
    case TEMPEST_FOP_SWAP:
        return "swap";
    case TEMPEST_FOP_CAS:
        return "compare-and-swap";
    default:
        return "op";
    }
}

int magic_fetch_op(unsigned home, uint64_t *addr, unsigned op,
                   uint64_t operand, uint64_t compare, uint64_t *old)
{
    int r = tempest_fetch_op(home, addr, op, operand, compare, old);

    if (r != 0) {
        fail(r, "fetch-and-op %s (op %u) on node %u at %p", fop_name(op),
             op, home, (void *)addr);
    }
    return r;
}

uint64_t magic_fetch_add(unsigned home, uint64_t *addr, uint64_t v)
{
    uint64_t old = 0;

    return magic_fetch_op(home, addr, TEMPEST_FOP_ADD, v, 0, &old) ? 0 : old;
}

uint64_t magic_swap(unsigned home, uint64_t *addr, uint64_t v)
{
    uint64_t old = 0;

    return magic_fetch_op(home, addr, TEMPEST_FOP_SWAP, v, 0, &old) ? 0 :
           old;
}

uint64_t magic_cas(unsigned home, uint64_t *addr, uint64_t expect,
                   uint64_t v)
{
    uint64_t old = 0;

    return magic_fetch_op(home, addr, TEMPEST_FOP_CAS, v, expect, &old) ?
           0 : old;
}

/* ---- the protocol thread's part ------------------------------------------ */

/*
 * An active message: a typed message of ours was refused at its
 * destination (here): W type, W sequence number, W length.
 */
static void skip_h(TPPI_NodeId src, int size)
{
    unsigned type = (unsigned)TPPI_recv_W();
    uint32_t seq = (uint32_t)TPPI_recv_W();
    uint32_t len = (uint32_t)TPPI_recv_W();
    struct mentry *e = calloc(1, sizeof(*e));
    struct mtype *mt = NULL;
    uint64_t flags;

    (void)size;
    printf("*** magic: node %u: a %u-byte message of type %u from node %u "
           "was refused here (no posted buffer large enough): skipped\n",
           TPPI_self_address, (unsigned)len, type, src);
    count(&stats.skipped, 1);
    if (e == NULL) {
        return;
    }
    e->skip = true;
    e->src = src;
    e->seq = seq & SEQ_MASK;
    flags = lock();
    mt = type_get(type, true);
    if (mt) {
        deliver(mt, e);
    }
    unlock(flags);
    if (mt == NULL) {
        free(e);
    }
}

static void sent_event(const struct tempest_xfer_event *ev, unsigned kind)
{
    struct rec *r = &recs[(uint32_t)ev->cookie % MAGIC_RECORDS];
    uint64_t mid = __atomic_load_n(&r->mid, __ATOMIC_RELAXED);

    if ((uint32_t)mid != (uint32_t)ev->cookie ||
        __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != REC_PENDING) {
        printf("*** magic: node %u: completion of an unknown transfer "
               "(cookie 0x%llx) from node %u: ignored\n", TPPI_self_address,
               (unsigned long long)ev->cookie, ev->node);
        count(&stats.errors, 1);
        return;
    }
    if (ev->error == 0) {
        count(&stats.completed, 1);
        __atomic_store_n(&r->state, REC_DONE, __ATOMIC_RELEASE);
        return;
    }
    count(&stats.failed, 1);
    if (kind == KIND_TYPED) {
        printf("*** magic: node %u: message %llu (type %u, %llu bytes) to "
               "node %u was refused there: %s (reason %u)\n",
               TPPI_self_address, (unsigned long long)mid, r->type,
               (unsigned long long)r->len, r->dest,
               tempest_cmd_reason_name(ev->error), (unsigned)ev->error);
        if (r->dest < TPPI_num_nodes) {
            TPPI_send_WWW(r->dest, skip_h, (int)r->type, (int)r->seq,
                          (int)(uint32_t)r->len);
        }
    } else {
        printf("*** magic: node %u: copy %llu (%llu bytes) to node %u was "
               "refused there: %s (reason %u)\n", TPPI_self_address,
               (unsigned long long)mid, (unsigned long long)r->len, r->dest,
               tempest_cmd_reason_name(ev->error), (unsigned)ev->error);
    }
    __atomic_store_n(&r->state, REC_FAILED, __ATOMIC_RELEASE);
}

/*
 * The controller closed the buffer at ev->addr (no room for the next
 * message) after every message in it was reported: once none is in use
 * it goes back to the program (posted again, or freed).
 */
static void buf_closed(const struct tempest_xfer_event *ev)
{
    struct mtype *mt;
    struct mbuf *b = NULL;
    uint64_t flags;

    flags = lock();
    mt = type_get(ev->type, false);
    if (mt) {
        b = posted_take(mt, ev->addr, NULL);
    }
    if (b) {
        b->full = true;
        if (b->inuse) {
            b = NULL;   /* the last magic_bufreturn()/buffree() does it */
        }
    }
    unlock(flags);
    if (b) {
        buf_give_back(b, "magic: a buffer the controller filled");
    }
}

static void recv_event(const struct tempest_xfer_event *ev, unsigned kind)
{
    struct mentry *e;
    struct mtype *mt = NULL;
    magic_copy_fn fn;
    uint64_t flags;
    bool ok;

    if (ev->node >= TPPI_num_nodes) {
        return;
    }
    if (kind == KIND_COPY) {
        flags = lock();
        ok = nodes_ready();
        if (ok) {
            copies[ev->node]++;
        }
        unlock(flags);
        count(&stats.copies_received, 1);
        fn = __atomic_load_n(&copy_fn, __ATOMIC_ACQUIRE);
        if (fn) {
            fn(ev->node, (void *)(uintptr_t)ev->addr, ev->len);
        }
        return;
    }
    if (ev->len == 0 && ev->buf_done) {
        buf_closed(ev);
        return;
    }
    e = calloc(1, sizeof(*e));
    if (e) {
        e->src = ev->node;
        e->seq = (uint32_t)(ev->cookie >> SEQ_SHIFT) & SEQ_MASK;
        e->addr = ev->addr;
        e->len = ev->len;
        flags = lock();
        mt = type_get(ev->type, true);
        if (mt) {
            e->buf = posted_find(mt, ev->addr);
            if (e->buf) {
                e->buf->inuse++;
                if (ev->buf_done) {
                    posted_take(mt, 0, e->buf);
                    e->buf->full = true;
                }
            }
            deliver(mt, e);
        }
        unlock(flags);
    }
    if (mt == NULL) {
        free(e);
        printf("*** magic: node %u: out of memory: a %u-byte message of "
               "type %u from node %u is lost\n", TPPI_self_address,
               (unsigned)ev->len, ev->type, ev->node);
        count(&stats.errors, 1);
        return;
    }
    count(&stats.received, 1);
}

static void magic_xfer_event(const struct tempest_xfer_event *ev)
{
    unsigned kind = (unsigned)(ev->cookie >> KIND_SHIFT) & 0xF;

    if (ev->kind == TEMPEST_EV_XFER_SENT) {
        sent_event(ev, kind);
    } else {
        recv_event(ev, kind);
    }
}

/* Before libtempest's own constructor starts the protocol thread. */
__attribute__((constructor(200)))
static void magic_init(void)
{
    tempest_on_xfer(TEMPEST_XFER_CLIENT_MAGIC, magic_xfer_event);
}
