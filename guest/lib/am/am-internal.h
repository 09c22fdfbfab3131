/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libam internals shared by its two files, in layers (a file calls
 * only the one below; tests/unit/test_guest_layers.py checks it):
 *   bulk.c  am_store, am_store_async, am_get on the transfer engine
 *   am.c    set-up, the end, polling, the backlog, small messages, errors
 * bulk.c calls am.c's sends, waits and handler runner; am.c calls bulk.c
 * only through the functions bulk.c gives it (libam_set_bulk).
 */
#ifndef AM_INTERNAL_H
#define AM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "am.h"
#include "tempest/nc.h"
#include "tempest/rt.h"

/* Packet kinds (the slot's KIND byte); WORD0, WORD1, WORD2, payload. */
#define KIND_SHORT      0x61    /* nargs, handler, -, int a[4] */
#define KIND_STORE      0x62    /* -, handler, arg, u64 rva, u64 nbytes */
#define KIND_GET        0x63    /* -, lva, cookie, u64 rva, u64 nbytes */
#define KIND_GET_END    0x64    /* reason, -, cookie: a get with no data */
#define KIND_ACK        0x65    /* the reply to a request that sent none */

/* A message off the receive ring (a copy: the ring slot is freed). */
struct am_msg {
    uint16_t src;
    uint8_t net;
    uint8_t kind;
    uint32_t w0;
    uint64_t w1;
    uint64_t w2;
    uint64_t d[2];
};

/* What kind of handler is running (the rule of GAM's request/reply). */
enum am_ctx {
    CTX_NONE,       /* the program's own code */
    CTX_REQUEST,    /* a request (or store) handler: may reply once */
    CTX_REPLY,      /* a reply, get or end handler: may send nothing */
};

extern bool libam_on;
extern int libam_nodes;
extern uint64_t libam_sent;
extern uint64_t libam_received;

/*
 * libam_fail: sets am_errno to @err, prints "*** am: node K: <call>: <what>"
 * and returns -1.  libam_report prints such a line for what is not a call's
 * failure (a refusal coming back, a dropped packet).
 */
int libam_fail(const char *call, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void libam_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * libam_check_top: the checks of a call made from the program's code (not
 * a handler) after am_enable: returns 0 or libam_fail()'s -1.
 */
int libam_check_top(const char *call);
/* libam_check_node, libam_check_handler: 0 or libam_fail()'s -1. */
int libam_check_node(const char *call, vnn_t node);
int libam_check_handler(const char *call, uintptr_t h, bool may_be_null);
/* True if [p, p + len) is inside this node's RAM. */
bool libam_ram_contains(uint64_t p, uint64_t len);

/*
 * libam_wait: polls (running handlers and completions) until done(arg);
 * spins for the node controller's spin hint, then sleeps until it
 * interrupts.  From the program's code only.
 */
void libam_wait(bool (*done)(void *), void *arg);

/*
 * libam_send_request: sends one packet on the request network, waiting
 * (polling) while AM_WINDOW requests to @dest are unanswered or the ring
 * is full.  From the program's code only.
 */
void libam_send_request(unsigned dest, uint8_t kind, uint32_t w0, uint64_t w1,
                        uint64_t w2, const uint64_t d[2]);
/*
 * libam_send_reply: sends one packet on the reply network; while the ring
 * is full, moves arriving packets into the backlog (no handler runs).
 * It is the reply of the request being handled (no KIND_ACK follows).
 */
void libam_send_reply(unsigned dest, uint8_t kind, uint32_t w0, uint64_t w1,
                      uint64_t w2, const uint64_t d[2]);

/* libam_run_mem: runs a store, get or end handler as @ctx. */
void libam_run_mem(enum am_ctx ctx, uintptr_t h, vnn_t node, uint64_t addr,
                   int nbytes, uint64_t arg);

/*
 * What bulk.c adds, set by its constructor (libam_set_bulk) when a program
 * links it (it calls am_store, am_store_async or am_get): am.c hands it
 * the packets of kinds other than KIND_SHORT and the transfer events;
 * flush() sends the notices of finished stores from the program's code
 * (true if it sent one); idle() is true when none of this node's stores
 * and gets is under way.  Without it, such packets are reported and
 * dropped.
 */
struct libam_bulk_ops {
    void (*msg)(const struct am_msg *m);
    void (*event)(const struct nc_event *e);
    bool (*flush)(void);
    bool (*idle)(void);
};

void libam_set_bulk(const struct libam_bulk_ops *ops);

#endif /* AM_INTERNAL_H */
