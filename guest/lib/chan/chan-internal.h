/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan internals, shared by table.c (the port table), proto.c (the
 * messages between channel controllers) and calls.c (the calls of
 * computation code).  Everything here runs on the protocol thread, the
 * paper's channel controller, except where a comment says otherwise:
 * the port table needs no lock.
 */
#ifndef CHAN_INTERNAL_H
#define CHAN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "chan.h"
#include "tempest.h"

#define CP_NODE_SHIFT       20
#define CP_INDEX_SHIFT      8
#define CP_MAX_NODES        4096

/* BUFFERFULL: what is stored (struct cport held). */
enum { HELD_NONE, HELD_DATA, HELD_PORT };

/* INPUTTING: which call (struct cport mode). */
enum { IN_COPY, IN_NEXT, IN_PORT };

/* OUTPUTTING: what was output (struct cport mode). */
enum { OUT_DATA, OUT_PORT };

/* A call of computation code, handed to the protocol thread. */
enum {
    OP_ALLOC, OP_ALLOC_TO, OP_ACCEPT, OP_FREE, OP_OUTPUT, OP_OUTPUT_START,
    OP_OUTPUT_WAIT, OP_INPUT, OP_SET_BUFFER, OP_INPUT_NEXT, OP_OUTPUT_PORT,
    OP_OUTPUT_PORT_START, OP_INPUT_PORT, OP_STATE, OP_COMPANION,
    OP_OUTPUT_INPUT,
};

/* The result of a call that waits for a message. */
#define CP_PENDING          0x7FFFFFFF  /* never a result */

struct chan_req {
    unsigned op;
    chan_port a, b;             /* the ports named */
    const void *src;            /* output: the data */
    void *dst;                  /* input: the buffer; input_next: next */
    size_t len;                 /* its length */
    size_t in_len;              /* output_input: the input's buffer size */
    unsigned node;              /* alloc_to, accept */
    uint32_t key;
    bool in_handler;            /* made on the protocol thread itself */
    /* results */
    int result;
    chan_port port_out, port_out2;
    void *ptr_out;
    struct chan_req *next;      /* accept: waiting list */
    int done;                   /* set (release) when result is final */
};

/*
 * A port table entry (section 4: state, companion-id, address, plus what
 * software needs to wait and to send again).
 */
struct cport {
    uint8_t state;              /* enum chan_state */
    uint8_t gen;                /* generation of its name, 1 .. 255 */
    uint8_t held;               /* BUFFERFULL: HELD_DATA or HELD_PORT */
    uint8_t mode;               /* INPUTTING: IN_*; OUTPUTTING: OUT_* */
    bool held_lib;              /* held data in a library buffer */
    uint16_t via;               /* MIGRATING: the port it is sent over */
    uint16_t cargo;             /* OUTPUTTING a port: that port */
    chan_port comp;             /* companion-id; CHAN_NO_PORT: freed */
    uint32_t tx;                /* outputs started on this port */
    uint32_t rx;                /* inputs completed on this port */
    void *buf;                  /* address: where the next data goes */
    uint32_t bufsize;
    const void *out_data;       /* OUTPUTTING data: kept to send again */
    uint32_t out_len;
    int out_err;                /* an output that ended with no waiter */
    void *held_data;            /* BUFFERFULL data */
    uint32_t held_len;
    chan_port held_origin;      /* BUFFERFULL port: the port sent */
    chan_port held_comp;        /* ... its companion */
    uint32_t held_tx, held_rx;  /* ... its counters */
    void *in_buf;               /* INPUTTING: the buffer (IN_COPY) or the */
    uint32_t in_size;           /* next address (IN_NEXT) */
    chan_port result;           /* CONFIRMING: the new port */
    struct chan_req *waiter;    /* the call waiting on this port */
};

extern struct cport cp_ports[CHAN_PORTS];
extern struct chan_stats cp_stats;

/* ---- table.c ------------------------------------------------------------ */

/* cp_id: the name of table entry @p (its current generation). */
chan_port cp_id(const struct cport *p);

/* cp_index: the index of table entry @p. */
unsigned cp_index(const struct cport *p);

/*
 * cp_find: the live (non-EMPTY) entry port @id names on this node, or
 * NULL (another node, index out of range, old generation, EMPTY).
 */
struct cport *cp_find(chan_port id);

/* cp_new: a free entry made IDLE with no companion, or NULL if full. */
struct cport *cp_new(void);

/* cp_release_held: frees what a BUFFERFULL entry stores; no state change. */
void cp_release_held(struct cport *p);

/* cp_free: makes @p EMPTY and bumps its generation (held data freed). */
void cp_free(struct cport *p);

/*
 * cp_finish: completes the call waiting on @p with @rc; with no waiter, an
 * output's result is kept for chan_output_wait().
 */
void cp_finish(struct cport *p, int rc);

/* cp_complete: stores @rc in @r and releases its caller. */
void cp_complete(struct chan_req *r, int rc);

/* cp_protocol_error: reports a message the protocol says cannot come. */
void cp_protocol_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* cp_fmt_port: writes "node:index/gen" of @p into @buf (16 bytes). */
const char *cp_fmt_port(char *buf, chan_port p);

/* ---- proto.c ------------------------------------------------------------ */

/* cp_send_output: (re)sends the data or port @p is outputting. */
void cp_send_output(struct cport *p);

/* cp_send_ack: acknowledges input number p->rx to the companion. */
void cp_send_ack(struct cport *p);

/* cp_send_freed: tells port @target that its companion @from is freed. */
void cp_send_freed(chan_port target, chan_port from);

/* cp_send_create: asks @node for the far end of a channel to @from. */
void cp_send_create(unsigned node, uint32_t key, chan_port from);

/*
 * cp_stage2: stage 2 on port @t holding a port: allocates its new port,
 * sends the wire-up request and makes @t CONFIRMING.  Returns 0 or
 * CHAN_E_NOPORTS (nothing changed).
 */
int cp_stage2(struct cport *t);

/* cp_stage1: stage 1: port @q becomes MIGRATING, sent over @t. */
void cp_stage1(struct cport *t, struct cport *q);

/* ---- dev.c: on the node controller's channel controller ----------------- */

/* True when the calls run on the device (FEATURES bit CHAN). */
extern bool cp_on_device;

/*
 * cp_dev_exec: carries out @r (any call but chan_accept) with the device's
 * instructions; returns its result or CP_PENDING (the TEMPEST_EV_CHAN
 * event completes it).
 */
int cp_dev_exec(struct chan_req *r);

/*
 * cp_dev_turn_max: the longest input chan_output_input() makes one
 * OUTPUT_INPUT instruction of (the data lands in the port's buffer, of
 * this size); a longer one is an output and an input.
 */
size_t cp_dev_turn_max(void);

/* cp_dev_stats: the device's counters into the fields they stand for. */
void cp_dev_stats(struct chan_stats *s);

/* cp_dev_dump: chan_dump() of the device's port table. */
void cp_dev_dump(void);

/* ---- calls.c ------------------------------------------------------------ */

/* cp_offer: a far end made here for (@node, @key): to an accept. */
void cp_offer(unsigned node, uint32_t key, chan_port port);

#endif /* CHAN_INTERNAL_H */
