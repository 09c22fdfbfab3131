/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libam: Generic Active Messages (GAM 1.1, Culler et al., Berkeley 1995)
 * as SP Active Messages implemented it on the SP-2's TB2 adapter, on the
 * tempest node controller's rings (SQ0 the request network, SQ1 the reply
 * network, one RQ, the CQ) and its transfer engine.  docs/am.rst says
 * more: which names are GAM's and which are ours, the deadlock-avoidance
 * rule, what is not done.
 *
 * Where things run: every handler runs on the calling CPU, inside a call
 * of this library that polls: am_poll(), and the waits of am_request_*,
 * am_store and am_get (a send that finds no room polls).  Nothing runs
 * from an interrupt.  The library is single-threaded: call it from one
 * CPU (main's).
 *
 * Handlers (GAM 1.1):
 *  - a request handler, void h(vnn_t src, int a0, ...), runs for
 *    am_request_N; it may send at most one reply, to src, with
 *    am_reply_N, and may not request, store, get or poll;
 *  - a reply handler runs for am_reply_N and may send nothing;
 *  - a store handler, void h(vnn_t src, void *addr, int nbytes, void *arg),
 *    runs at the destination of am_store / am_store_async once the data
 *    is there; it is a request handler (it may reply to src);
 *  - a get handler, same type, runs at the caller of am_get once the
 *    data is in; it is a reply handler;
 *  - an end function, void end(vnn_t dest, void *lva, int nbytes,
 *    void *arg), runs at the caller of am_store_async once lva may be
 *    reused; it may send nothing.
 *
 * Owner: <am.h> owns the node controller's rings in a program, as
 * libtempest does: a program uses one of the two (libstrata shares
 * libtempest's rings in a program that links both, not libam's).
 *
 * Errors: every call that can fail returns -1, sets am_errno to an
 * AM_E_* code and prints one line on the console,
 * "*** am: node K: <call>: <what>".  Nothing is sent then.
 */
#ifndef AM_H
#define AM_H

/* GAM 1.1: a virtual node number, 0 .. am_procs() - 1. */
typedef int vnn_t;

/* GAM 1.1: a handler (its arguments depend on what it handles, above). */
typedef void (*handler_t)();

/* Ours: the types of the handlers above, for programs that want them. */
typedef void (*am_handler_1_t)(vnn_t src, int a0);
typedef void (*am_handler_2_t)(vnn_t src, int a0, int a1);
typedef void (*am_handler_3_t)(vnn_t src, int a0, int a1, int a2);
typedef void (*am_handler_4_t)(vnn_t src, int a0, int a1, int a2, int a3);
typedef void (*am_handler_mem_t)(vnn_t node, void *addr, int nbytes,
                                 void *arg);

/* Ours: what went wrong in the last call that returned -1. */
#define AM_E_NONE           0
#define AM_E_DISABLED       1   /* before am_enable() or after am_disable() */
#define AM_E_NODE           2   /* no such node */
#define AM_E_SIZE           3   /* nbytes < 0 or above am_max_size() */
#define AM_E_HANDLER        4   /* handler NULL or not in the program's code */
#define AM_E_REPLY          5   /* a reply outside a request handler */
#define AM_E_REPLY_DEST     6   /* a reply to a node other than the sender */
#define AM_E_REPLIED        7   /* a second reply from one request handler */
#define AM_E_IN_HANDLER     8   /* request, store, get or poll in a handler */
#define AM_E_ADDR           9   /* local block not wholly in this node's RAM */
#define AM_E_REMOTE         10  /* the other node refused the block */
#define AM_E_NO_DEVICE      11  /* the node controller lacks what is needed */

extern int am_errno;

/*
 * am_error_name (ours): a short description of an AM_E_* code ("unknown"
 * for any other value); never NULL.
 */
const char *am_error_name(int err);

/*
 * am_enable: sets the library up on this node (the rings, the interrupt)
 * and waits until every node has called it (a barrier on the control
 * network).  Every node calls it once before any other call but
 * am_procs/am_my_proc.  The barrier polls: requests of nodes that are
 * through it already may run their handlers here, so set up what the
 * handlers use before calling it.  Returns 0, or -1 (AM_E_NO_DEVICE)
 * when the node controller lacks messaging, transfers or the control
 * network.  A second call returns 0 and does nothing.
 */
int am_enable(void);

/*
 * am_disable: the graceful end: waits until this node's stores and gets
 * are complete, then, with every node, until no message is in flight
 * anywhere (rounds of sums of messages sent and received on the control
 * network), handling messages meanwhile.  Every node calls it; after it
 * the calls of the library fail with AM_E_DISABLED.  Call it outside
 * handlers.
 */
void am_disable(void);

/* am_procs: the number of nodes.  am_my_proc: this node's number. */
int am_procs(void);
int am_my_proc(void);

/*
 * am_max_size: the largest nbytes am_store, am_store_async and am_get
 * take: 1 GiB, the most one transfer of the node controller moves.
 */
int am_max_size(void);

/*
 * am_poll: runs the handlers of every message that has arrived (and the
 * completions of stores and gets).  Returns how many it ran (GAM's
 * am_poll returns nothing), or -1: AM_E_IN_HANDLER inside a handler,
 * AM_E_DISABLED.  A program that calls it in a loop and finds nothing
 * for a while sleeps in it for up to 50 us, woken early by the node
 * controller when a message comes.
 */
int am_poll(void);

/*
 * am_request_N: sends a request for handler(am_my_proc(), a0, ...) at
 * node dest (may be this node) on the request network.  A full send ring,
 * or 32 requests to dest not answered yet (by a reply, or by the library
 * when the handler sent none), make it poll (running handlers) until
 * there is room; once sent it runs up to 4 waiting messages.  Returns 0, or
 * -1: AM_E_NODE, AM_E_HANDLER, AM_E_IN_HANDLER (no request from a
 * handler), AM_E_DISABLED.
 */
int am_request_1(vnn_t dest, handler_t handler, int a0);
int am_request_2(vnn_t dest, handler_t handler, int a0, int a1);
int am_request_3(vnn_t dest, handler_t handler, int a0, int a1, int a2);
int am_request_4(vnn_t dest, handler_t handler, int a0, int a1, int a2,
                 int a3);

/*
 * am_reply_N: from a request handler, sends a reply for
 * handler(am_my_proc(), a0, ...) to the node that sent the request, on
 * the reply network.  A full send ring makes it take the arriving
 * messages off the receive ring into a bounded backlog (running no
 * handler) until there is room.  Returns 0, or -1: AM_E_REPLY (not in a
 * request handler), AM_E_REPLY_DEST (dest is not the requester),
 * AM_E_REPLIED (this handler replied already), AM_E_HANDLER.
 */
int am_reply_1(vnn_t dest, handler_t handler, int a0);
int am_reply_2(vnn_t dest, handler_t handler, int a0, int a1);
int am_reply_3(vnn_t dest, handler_t handler, int a0, int a1, int a2);
int am_reply_4(vnn_t dest, handler_t handler, int a0, int a1, int a2,
               int a3);

/*
 * am_store: copies nbytes (0 .. am_max_size()) from lva here to rva at
 * node dest with the transfer engine, then runs handler(am_my_proc(),
 * rva, nbytes, arg) there (none if handler is NULL).  Returns once lva
 * may be reused and the data is at dest (the handler may not have run
 * yet), polling meanwhile: 0, or -1: AM_E_NODE, AM_E_SIZE, AM_E_ADDR
 * (lva .. lva + nbytes not in this node's RAM), AM_E_HANDLER (not in the
 * program's code), AM_E_REMOTE (dest refused rva: no handler runs),
 * AM_E_IN_HANDLER, AM_E_DISABLED.
 */
int am_store(vnn_t dest, void *lva, void *rva, int nbytes, handler_t handler,
             void *arg);

/*
 * am_store_async: as am_store, but returns at once (0 or -1 for the same
 * bad arguments); endfunc(dest, lva, nbytes, endarg) runs here once lva
 * may be reused (none if endfunc is NULL).  A block dest refuses is
 * reported on the console when the refusal comes back (am_errno
 * AM_E_REMOTE); neither handler nor endfunc runs then.
 */
int am_store_async(vnn_t dest, void *lva, void *rva, int nbytes,
                   handler_t handler, void *arg, handler_t endfunc,
                   void *endarg);

/*
 * am_get: copies nbytes (0 .. am_max_size()) from rva at node dest to lva
 * here, then runs handler(dest, lva, nbytes, arg) here (none if NULL).
 * Returns at once: 0, or -1 for AM_E_NODE, AM_E_SIZE, AM_E_ADDR,
 * AM_E_HANDLER, AM_E_IN_HANDLER, AM_E_DISABLED.  A block dest refuses is
 * reported when the refusal comes back (AM_E_REMOTE; no handler runs).
 */
int am_get(vnn_t dest, void *rva, void *lva, int nbytes, handler_t handler,
           void *arg);

#endif /* AM_H */
