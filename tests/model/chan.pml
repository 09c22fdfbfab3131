/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migratable-channel protocol of libchan (guest/lib/chan/proto.c,
 * after "Hardware Migratable Channels", May, Muller, Sen, section 3) as
 * a Promela model for SPIN (docs/chan.rst, "The protocol, model-checked").
 *
 * Every inline below is named after the libchan function it mirrors and
 * does what that function does to the port table, with the same states,
 * messages and tests; tests/model/check_drift.py compares the two (and
 * tests/model/transitions.txt) so that they cannot drift apart.
 *
 * The scenario, on NNODES = 3 nodes joined by one FIFO queue per ordered
 * pair of nodes (the in-order delivery per pair the paper assumes):
 *   - one channel p; its writer end (port W0) on node 0, its reader end
 *     (port R0) on node 1;
 *   - the writer outputs ND values 1, 2, ... (pre-sent: DATA leaves at
 *     once, the output completes on the ACK); the reader inputs them and
 *     asserts that each is the next one (no loss, no duplicate, in order);
 *   - the reader end moves RHOPS times (node 1 -> 2 -> 1), the writer end
 *     WHOPS times (node 0 -> 1 -> 0), each move a port output over a
 *     channel of its own (a "carrier") and input at the far end, at any
 *     point between the data, so both ends move at once (stage 5) in
 *     every interleaving.
 * Each logical process (holder of an end) is one Promela process per
 * node it runs on; each node's channel controller (libchan's protocol
 * thread) is one process that takes messages from any queue to it, one
 * handler at a time, atomically.
 *
 * Compile-time variants:
 *   -DOPT1  paper 3.2.7, first incorrect optimisation: no CONFIRM message;
 *           chan_input_port returns as soon as stage 2 has sent its WIRE.
 *   -DOPT2  paper 3.2.7, second: the CONFIRM is sent by whoever wires up
 *           (the companion, or in stage 5 the node its port went to), not
 *           by the origin after its DELETE.
 *   -DMUTANT_NO_RESEND  stage 3 without the resend: a mutant that must
 *           fail, to show that the checks can.
 *   -DRHOPS=n -DWHOPS=n -DND=n  the bounds (defaults 1, 1, 2; WHOPS to 2,
 *           the second move back to node 0).
 *   -DFOUR  NNODES = 4, the layout of guest case chan-hw-both-4: the writer
 *           end moves 0 -> 2 (-> 0), the reader end 1 -> 3 (-> 1), so that
 *           no two of the nodes a double move involves share a queue (on
 *           three nodes the writer's destination is the reader's origin).
 */

#ifndef ND
#define ND 2                    /* values the writer outputs */
#endif
#ifndef RHOPS
#define RHOPS 1                 /* moves of the reader end, 0 to 2 */
#endif
#ifndef WHOPS
#define WHOPS 1                 /* moves of the writer end, 0 to 2 */
#endif

#ifdef FOUR
#define NNODES 4               /* writer 0 -> 2, reader 1 -> 3 (-> 1) */
#else
#define NNODES 3
#endif
#define QSZ 4                   /* per ordered pair; a full queue asserts */
#define NHOLDERS (RHOPS + 1 + WHOPS + 1)

/* enum chan_state (chan.h), same values */
#define EMPTY 0
#define IDLE 1
#define INPUTTING 2
#define OUTPUTTING 3
#define BUFFERFULL 4
#define MIGRATING 5
#define CONFIRMING 6

#define NO_PORT 0               /* CHAN_NO_PORT */

/* chan-internal.h */
#define HELD_NONE 0
#define HELD_DATA 1
#define HELD_PORT 2
#define IN_COPY 0
#define IN_PORT 2
#define OUT_DATA 0
#define OUT_PORT 1

/*
 * Port names.  libchan's names carry a generation so that a freed entry's
 * old name is never taken for a new port; here every port has a name of
 * its own, never reused, and a fixed home node (home[]).
 */
#define W0 1                    /* p's writer end, node 0 */
#define R0 2                    /* p's reader end, node 1 */
#define RT0O 3                  /* carrier of the reader's 1st move, 1 -> 2 */
#define RT0I 4
#define RT1O 5                  /* ... its 2nd move, 2 -> 1 */
#define RT1I 6
#define WT0O 7                  /* carrier of the writer's move, 0 -> 1 */
#define WT0I 8
#define NEW_RT0I 9              /* the port stage 2 allocates on RT0I */
#define NEW_RT1I 10
#define NEW_WT0I 11
#define WT1O 12                 /* carrier of the writer's 2nd move, back */
#define WT1I 13
#define NEW_WT1I 14
#define NPORTS 15

/* The carriers of move k of each end; the node each hop runs on. */
#define R_OUT(k) ((k) == 0 -> RT0O : RT1O)
#define R_IN(k) ((k) == 0 -> RT0I : RT1I)
#ifdef FOUR
#define R_NODE(k) ((k) == 0 -> 1 : ((k) == 1 -> 3 : 1))
#define W_NODE(k) ((k) == 0 -> 0 : ((k) == 1 -> 2 : 0))
#else
#define R_NODE(k) ((k) == 0 -> 1 : ((k) == 1 -> 2 : 1))
#define W_NODE(k) ((k) == 0 -> 0 : ((k) == 1 -> 1 : 0))
#endif
#define W_OUT(k) ((k) == 0 -> WT0O : WT1O)
#define W_IN(k) ((k) == 0 -> WT0I : WT1I)
#define NEW_OF(t) ((t) == RT0I -> NEW_RT0I : ((t) == RT1I -> NEW_RT1I : \
                   ((t) == WT0I -> NEW_WT0I : NEW_WT1I)))

mtype = { DATA, ACK, PORTDATA, WIRE, FWD, DELETE, CONFIRM };

/* struct cport, the fields the protocol uses */
typedef cport {
    byte state;
    byte held;                  /* BUFFERFULL: HELD_DATA or HELD_PORT */
    byte mode;                  /* INPUTTING: IN_*; OUTPUTTING: OUT_* */
    byte via;                   /* MIGRATING: the port it is sent over */
    byte cargo;                 /* OUTPUTTING a port: that port */
    byte comp;                  /* companion-id */
    byte tx;                    /* outputs started */
    byte rx;                    /* inputs completed */
    byte out_data;              /* OUTPUTTING data: the value, to resend */
    byte held_data;             /* BUFFERFULL data: the value */
    byte held_origin;           /* BUFFERFULL port: the port sent */
    byte held_comp;             /* ... its companion */
    byte held_tx;
    byte held_rx;
    byte result;                /* CONFIRMING: the new port */
    bit waiter;                 /* a call waits on this port */
    bit done;                   /* ... and has been completed */
    byte out;                   /* what it returns: a value, a port */
};

cport P[NPORTS];
byte home[NPORTS];              /* the node in a port's name */

/* net[s * NNODES + d]: node s to node d, in order (the reply network) */
chan net[NNODES * NNODES] = [QSZ] of { mtype, byte, byte, byte, byte, byte,
                                     byte, byte };

byte wnext;                     /* values output so far (writer's state) */
byte rnext;                     /* values input so far (reader's state) */
byte finished;                  /* holders that have run to their end */

/* A message from node me to port dst's node; a full queue is a bound hit. */
#define SEND(me, dst, m, a, b, c, d, e, f, g) \
    assert(len(net[(me) * NNODES + home[dst]]) < QSZ); \
    net[(me) * NNODES + home[dst]]!m, a, b, c, d, e, f, g

/* table.c cp_find: the live port @id names on node @me, or NO_PORT */
#define FIND(me, id) ((home[id] == (me) && P[id].state != EMPTY) -> (id) : \
                      NO_PORT)

/* A message the protocol says cannot come (cp_protocol_error). */
#define PROTOCOL_ERROR assert(false)

/* ---- table.c ----------------------------------------------------------- */

/* table.c cp_finish: completes the call waiting on @p */
inline cp_finish(p) {
    if
    :: P[p].waiter -> P[p].waiter = 0; P[p].done = 1
    :: else -> skip             /* out_err: an output started, no waiter */
    fi
}

/* table.c cp_free: EMPTY; the name is never used again */
inline cp_free(p) {
    P[p].state = EMPTY;
    P[p].held = HELD_NONE; P[p].mode = 0; P[p].via = 0; P[p].cargo = 0;
    P[p].comp = NO_PORT; P[p].tx = 0; P[p].rx = 0; P[p].out_data = 0;
    P[p].held_data = 0; P[p].held_origin = 0; P[p].held_comp = 0;
    P[p].held_tx = 0; P[p].held_rx = 0; P[p].result = 0; P[p].waiter = 0;
    P[p].done = 0; P[p].out = 0
}

/* table.c cp_release_held */
inline cp_release_held(p) {
    P[p].held = HELD_NONE; P[p].held_data = 0
}

/* ---- proto.c: sending --------------------------------------------------- */

/* proto.c cp_send_output: (re)sends the data or port @p is outputting */
inline cp_send_output(me, p) {
    if
    :: P[p].mode == OUT_DATA ->
        SEND(me, P[p].comp, DATA, P[p].comp, p, P[p].tx, P[p].out_data,
             0, 0, 0)
    :: else ->
        /* The companion's name is read now: stage 5 may have changed it. */
        SEND(me, P[p].comp, PORTDATA, P[p].comp, p, P[p].tx, P[p].cargo,
             P[P[p].cargo].comp, P[P[p].cargo].tx, P[P[p].cargo].rx)
    fi
}

/* proto.c cp_send_ack: acknowledges input number rx */
inline cp_send_ack(me, p) {
    SEND(me, P[p].comp, ACK, P[p].comp, p, P[p].rx, 0, 0, 0, 0)
}

/* proto.c send_wire (OPT2: also names the port to confirm, ti) */
inline send_wire(me, target, new, old, wrx, ti) {
    SEND(me, target, WIRE, target, new, old, wrx, ti, 0, 0)
}

/* proto.c send_fwd */
inline send_fwd(me, target, new, old, wrx, ti) {
    SEND(me, target, FWD, target, new, old, wrx, ti, 0, 0)
}

/* proto.c send_delete */
inline send_delete(me, target) {
    SEND(me, target, DELETE, target, 0, 0, 0, 0, 0, 0)
}

/* proto.c send_confirm */
inline send_confirm(me, target) {
    SEND(me, target, CONFIRM, target, 0, 0, 0, 0, 0, 0)
}

/* ---- proto.c: receiving ------------------------------------------------- */

/* proto.c hold_data: the value is stored, the port BUFFERFULL */
inline hold_data(p, val) {
    P[p].held_data = val;
    P[p].held = HELD_DATA;
    P[p].state = BUFFERFULL
}

/* proto.c delivered: the input on @p is done: acknowledge, release */
inline delivered(me, p) {
    P[p].rx++;
    P[p].state = IDLE;
    if
    :: P[p].comp != NO_PORT -> cp_send_ack(me, p)
    :: else -> skip
    fi;
    cp_finish(p)
}

/* proto.c input_arrived: data for a port that is INPUTTING */
inline input_arrived(me, p, val) {
    if
    :: P[p].mode == IN_COPY -> P[p].out = val; delivered(me, p)
    :: else -> PROTOCOL_ERROR   /* data for a port input (CHAN_E_TYPE) */
    fi
}

/* proto.c in_sequence: ok = seq is the next input; a gap is an error */
inline in_sequence(p, seq, ok) {
    if
    :: seq == P[p].rx + 1 -> ok = 1
    :: seq <= P[p].rx -> ok = 0         /* a duplicate: stale */
    :: else -> PROTOCOL_ERROR
    fi
}

/* proto.c data_h */
inline data_h(me, dst, from, seq, val) {
    p = FIND(me, dst);
    if
    :: p == NO_PORT || P[p].comp != from -> skip        /* stale */
    :: else ->
        in_sequence(p, seq, ok);
        if
        :: !ok -> skip
        :: ok && P[p].state == IDLE -> hold_data(p, val)
        :: ok && P[p].state == INPUTTING -> input_arrived(me, p, val)
        :: ok && P[p].state == MIGRATING -> skip        /* resent at 3 */
        :: ok && P[p].state == OUTPUTTING -> PROTOCOL_ERROR
        :: else -> PROTOCOL_ERROR
        fi
    fi
}

/* proto.c ack_h; a late acknowledgement is ignored */
inline ack_h(me, dst, from, seq) {
    p = FIND(me, dst);
    if
    :: p == NO_PORT || P[p].comp != from || P[p].state != OUTPUTTING ||
       P[p].mode != OUT_DATA || seq != P[p].tx -> skip   /* stale */
    :: else -> P[p].state = IDLE; cp_finish(p)
    fi
}

/* proto.c hold_port */
inline hold_port(p, h_origin, h_comp, h_tx, h_rx) {
    P[p].held = HELD_PORT;
    P[p].held_origin = h_origin;
    P[p].held_comp = h_comp;
    P[p].held_tx = h_tx;
    P[p].held_rx = h_rx;
    P[p].state = BUFFERFULL
}

/* proto.c cp_stage1: port @q becomes MIGRATING, sent over @t */
inline cp_stage1(me, t, q) {
    /* 1.1: data pre-sent to q is ignored: its companion will resend. */
    if
    :: P[q].state == BUFFERFULL -> cp_release_held(q)
    :: else -> skip
    fi;
    P[q].state = MIGRATING;
    /* 1.2: the route for the confirmation. */
    P[q].via = t;
    /* 1.3: the companion's name goes over t. */
    P[t].tx++;
    P[t].state = OUTPUTTING;
    P[t].mode = OUT_PORT;
    P[t].cargo = q;
    cp_send_output(me, t)
}

/* proto.c cp_stage2: stage 2 on @t holding a port */
inline cp_stage2(me, t) {
    n = NEW_OF(t);              /* cp_new(): a name never used */
    assert(home[n] == me && P[n].state == EMPTY && P[n].tx == 0);
    P[n].state = IDLE;
    /* 2.1: the new port, wired to the sent port's companion. */
    P[n].comp = P[t].held_comp;
    P[n].tx = P[t].held_tx;
    P[n].rx = P[t].held_rx;
    /* 2.3: t waits for the final confirmation. */
    P[t].held = HELD_NONE;
    P[t].rx++;
    P[t].result = n;
#ifdef OPT1
    /* WRONG (3.2.7): no confirmation; the input of the port is done. */
    P[t].state = IDLE;
    P[t].out = n;
    cp_finish(t);
#else
    P[t].state = CONFIRMING;
#endif
    /* 2.2: ask the companion to wire up (a freed one: straight to 4). */
    if
    :: P[n].comp != NO_PORT ->
        send_wire(me, P[n].comp, n, P[t].held_origin, P[n].rx, t)
    :: else -> send_delete(me, P[t].held_origin)
    fi
}

/* proto.c portdata_h: stage 1 arriving at the destination */
inline portdata_h(me, dst, from, seq, origin, pcomp, ptx, prx) {
    p = FIND(me, dst);
    if
    :: p == NO_PORT || P[p].comp != from -> skip        /* stale */
    :: else ->
        in_sequence(p, seq, ok);
        if
        :: !ok -> skip
        :: ok && P[p].state == IDLE -> hold_port(p, origin, pcomp, ptx, prx)
        :: ok && P[p].state == INPUTTING ->
            hold_port(p, origin, pcomp, ptx, prx);
            assert(P[p].mode == IN_PORT);       /* else CHAN_E_TYPE */
            cp_stage2(me, p)
        :: ok && P[p].state == MIGRATING -> skip        /* dropped */
        :: else -> PROTOCOL_ERROR
        fi
    fi
}

/* proto.c wire_h: stage 3 (or 5) at the companion's node */
inline wire_h(me, target, new, old, wrx, ti) {
    p = FIND(me, target);
    /* libchan: a freed companion; the model frees no port */
    assert(p != NO_PORT);
    if
    :: P[p].comp != old -> PROTOCOL_ERROR
    :: else -> skip
    fi;
    /* 3.1: the channel now runs between p and new. */
    P[p].comp = new;
    if
    :: P[p].state == MIGRATING ->
        /* 5: both ends move: pass it on to where p is going. */
        t = P[p].via;
        if
        :: P[t].comp != NO_PORT -> send_fwd(me, P[t].comp, new, old, wrx, ti)
        :: else -> PROTOCOL_ERROR
        fi
    :: else ->
        ok = 0;
        if
        :: P[p].state == OUTPUTTING ->
            if
            :: P[p].tx > wrx ->
                /* 3.2: what the old port dropped goes to the new one. */
#ifdef MUTANT_NO_RESEND
                skip            /* a mutant: the checks must fail */
#else
                cp_send_output(me, p)
#endif
            :: P[p].tx <= wrx && P[p].mode == OUT_DATA ->
                /* Input before the move; its acknowledgement is late. */
                P[p].state = IDLE;
                ok = 1
            :: else -> PROTOCOL_ERROR
            fi
        :: else -> skip
        fi;
        /* 3.2: the old port may go (an abandoned move wires to itself). */
        if
        :: old != new -> send_delete(me, old)
#ifdef OPT2
            /* WRONG (3.2.7): confirm from here, not via the origin. */
            ; send_confirm(me, ti)
#endif
        :: else -> skip
        fi;
        if
        :: ok -> cp_finish(p)
        :: else -> skip
        fi
    fi
}

/* proto.c fwd_h: stage 5 at the node a migrating port was sent to */
inline fwd_h(me, target, new, old, ti) {
    p = FIND(me, target);
    if
    :: p == NO_PORT -> skip                              /* stale */
    :: p != NO_PORT && P[p].state == BUFFERFULL && P[p].held == HELD_PORT ->
        /* 5.1: not input yet: overwrite the data waiting on the port. */
        if
        :: P[p].held_comp != old -> PROTOCOL_ERROR
        :: else -> P[p].held_comp = new
        fi
    :: p != NO_PORT && P[p].state == CONFIRMING ->
        /* 5.2: input already: update the port allocated for it. */
        n = FIND(me, P[p].result);
        if
        :: n == NO_PORT || P[n].comp != old -> PROTOCOL_ERROR
        :: else -> P[n].comp = new
        fi
    :: p != NO_PORT && P[p].state == MIGRATING -> skip   /* resent later */
    :: else -> PROTOCOL_ERROR
    fi;
    /* In either case the origin of old is told (then 4). */
    if
    :: old != new -> send_delete(me, old)
#ifdef OPT2
        ; send_confirm(me, ti)
#endif
    :: else -> skip
    fi
}

/* proto.c delete_h: stage 4 at the origin */
inline delete_h(me, target) {
    p = FIND(me, target);
    if
    :: p == NO_PORT || P[p].state != MIGRATING -> PROTOCOL_ERROR
    :: else -> skip
    fi;
    t = P[p].via;
    cp_free(p);
    if
    :: P[t].state == OUTPUTTING && P[t].mode == OUT_PORT && P[t].cargo == p ->
        P[t].state = IDLE;
#if !defined(OPT1) && !defined(OPT2)
        if
        :: P[t].comp != NO_PORT -> send_confirm(me, P[t].comp)
        :: else -> skip
        fi;
#endif
        cp_finish(t)
    :: else -> PROTOCOL_ERROR
    fi
}

/* proto.c confirm_h: the final confirmation at the destination */
inline confirm_h(me, target) {
    p = FIND(me, target);
    if
    :: p == NO_PORT || P[p].state != CONFIRMING || !P[p].waiter ->
        PROTOCOL_ERROR
    :: else -> skip
    fi;
    P[p].state = IDLE;
    P[p].out = P[p].result;
    cp_finish(p)
}

/* ---- calls.c: the calls of computation code ----------------------------- */

/* calls.c take: the data buffered on @p is input: acknowledge */
inline take(me, p) {
    cp_release_held(p);
    P[p].rx++;
    P[p].state = IDLE;
    if
    :: P[p].comp != NO_PORT -> cp_send_ack(me, p)
    :: else -> skip
    fi
}

/* calls.c start_input: wait on the IDLE port @p for an input of @mode */
inline start_input(p, imode) {
    assert(P[p].comp != NO_PORT);       /* else CHAN_E_CLOSED */
    P[p].state = INPUTTING;
    P[p].mode = imode;
    P[p].waiter = 1
}

/* calls.c exec_output (chan_output): pre-send, wait for the ACK */
inline exec_output(me, p, val) {
    assert(FIND(me, p) != NO_PORT && P[p].state == IDLE &&
           P[p].comp != NO_PORT);       /* else refused */
    P[p].tx++;
    P[p].state = OUTPUTTING;
    P[p].mode = OUT_DATA;
    P[p].out_data = val;
    cp_send_output(me, p);
    P[p].waiter = 1
}

/* calls.c exec_input (chan_input); wait = the call waits */
inline exec_input(me, p, wait) {
    assert(FIND(me, p) != NO_PORT);
    if
    :: P[p].state == BUFFERFULL ->
        assert(P[p].held == HELD_DATA);         /* else CHAN_E_TYPE */
        P[p].out = P[p].held_data;
        take(me, p);
        wait = 0
    :: P[p].state == IDLE -> start_input(p, IN_COPY); wait = 1
    :: else -> assert(false)            /* refused: the program's bug */
    fi
}

/* calls.c exec_output_port (chan_output_port): stage 1 */
inline exec_output_port(me, t, q) {
    assert(FIND(me, t) != NO_PORT && FIND(me, q) != NO_PORT);
    assert(t != q && P[t].comp != q);   /* else CHAN_E_ARG */
    assert(P[t].state == IDLE &&
           (P[q].state == IDLE || P[q].state == BUFFERFULL));
    assert(P[t].comp != NO_PORT);
    cp_stage1(me, t, q);
    P[t].waiter = 1
}

/* calls.c exec_input_port (chan_input_port); wait = the call waits */
inline exec_input_port(me, p, wait) {
    assert(FIND(me, p) != NO_PORT);
    if
    :: P[p].state == BUFFERFULL ->
        assert(P[p].held == HELD_PORT);
        cp_stage2(me, p);
#ifdef OPT1
        wait = 0                /* WRONG: done at once (P[p].out) */
#else
        P[p].waiter = 1;
        wait = 1
#endif
    :: P[p].state == IDLE -> start_input(p, IN_PORT); wait = 1
    :: else -> assert(false)
    fi
}

/* Waits for the call on @p to complete (tempest_wait in calls.c call()). */
#define AWAIT(p) (P[p].done == 1) -> P[p].done = 0

/* ---- the channel controllers -------------------------------------------- */

/*
 * One message from any queue to @me, handled atomically: the protocol
 * thread runs one handler at a time, and a handler never waits.
 */
proctype controller(byte me) {
    mtype m;
    byte a, b, c, d, e, f, g, p, t, n;
    bit ok;
end:
    do
    :: atomic {
        if
        :: net[0 * NNODES + me]?m, a, b, c, d, e, f, g
        :: net[1 * NNODES + me]?m, a, b, c, d, e, f, g
        :: net[2 * NNODES + me]?m, a, b, c, d, e, f, g
#ifdef FOUR
        :: net[3 * NNODES + me]?m, a, b, c, d, e, f, g
#endif
        fi;
        if
        :: m == DATA -> data_h(me, a, b, c, d)
        :: m == ACK -> ack_h(me, a, b, c)
        :: m == PORTDATA -> portdata_h(me, a, b, c, d, e, f, g)
        :: m == WIRE -> wire_h(me, a, b, c, d, e)
        :: m == FWD -> fwd_h(me, a, b, c, e)
        :: m == DELETE -> delete_h(me, a)
        :: m == CONFIRM -> confirm_h(me, a)
        fi;
        m = 0; a = 0; b = 0; c = 0; d = 0; e = 0; f = 0; g = 0;
        p = 0; t = 0; n = 0; ok = 0
    }
    od
}

/* ---- the program: the holders of the two ends --------------------------- */

/*
 * The reader end at its hop @hop (on node R_NODE(hop)): takes the port
 * from the carrier (hop > 0), inputs values, and (hop < RHOPS) sends the
 * port on at some point.  Local variables are reset so that equal states
 * compare equal.
 */
proctype reader(byte hop) {
    byte me = R_NODE(hop);
    byte p, t, n, pt;
    bit ok, wait;

    if
    :: hop == 0 -> pt = R0
    :: else ->
        atomic { t = R_IN(hop - 1); exec_input_port(me, t, wait); n = 0 };
        atomic {
            if
            :: wait -> AWAIT(t)
            :: else -> skip
            fi;
            pt = P[t].out; P[t].out = 0; t = 0; wait = 0
        }
    fi;
    do
    :: rnext < ND ->
        atomic { exec_input(me, pt, wait) };
        atomic {
            if
            :: wait -> AWAIT(pt)
            :: else -> skip
            fi;
            /* no value lost, none twice, in order */
            assert(P[pt].out == rnext + 1);
            rnext++;
            P[pt].out = 0;
            wait = 0
        }
    :: hop < RHOPS ->
        atomic { t = R_OUT(hop); exec_output_port(me, t, pt) };
        atomic { AWAIT(t); t = 0; pt = 0 };
        break
    :: hop == RHOPS && rnext == ND -> break
    od;
    finished++
}

/* The writer end at its hop, likewise; outputs wnext + 1. */
proctype writer(byte hop) {
    byte me = W_NODE(hop);
    byte p, t, n, pt;
    bit ok, wait;

    if
    :: hop == 0 -> pt = W0
    :: else ->
        atomic { t = W_IN(hop - 1); exec_input_port(me, t, wait); n = 0 };
        atomic {
            if
            :: wait -> AWAIT(t)
            :: else -> skip
            fi;
            pt = P[t].out; P[t].out = 0; t = 0; wait = 0
        }
    fi;
    do
    :: wnext < ND ->
        atomic { exec_output(me, pt, wnext + 1) };
        atomic { AWAIT(pt); wnext++ }
    :: hop < WHOPS ->
        atomic { t = W_OUT(hop); exec_output_port(me, t, pt) };
        atomic { AWAIT(t); t = 0; pt = 0 };
        break
    :: hop == WHOPS && wnext == ND -> break
    od;
    finished++
}

/* A channel between ports @x and @y (chan_alloc_to / chan_accept). */
inline connect(x, y) {
    P[x].state = IDLE; P[x].comp = y;
    P[y].state = IDLE; P[y].comp = x
}

init {
    byte i, rp, wp;

    atomic {
        home[W0] = 0; home[R0] = 1;
        home[RT0O] = R_NODE(0); home[RT0I] = R_NODE(1);
        home[NEW_RT0I] = R_NODE(1);
        home[RT1O] = R_NODE(1); home[RT1I] = R_NODE(2);
        home[NEW_RT1I] = R_NODE(2);
        home[WT0O] = W_NODE(0); home[WT0I] = W_NODE(1);
        home[NEW_WT0I] = W_NODE(1);
        home[WT1O] = W_NODE(1); home[WT1I] = W_NODE(2);
        home[NEW_WT1I] = W_NODE(2);
        connect(W0, R0);
        if
        :: RHOPS >= 1 -> connect(RT0O, RT0I)
        :: else -> skip
        fi;
        if
        :: RHOPS >= 2 -> connect(RT1O, RT1I)
        :: else -> skip
        fi;
        if
        :: WHOPS >= 1 -> connect(WT0O, WT0I)
        :: else -> skip
        fi;
        if
        :: WHOPS >= 2 -> connect(WT1O, WT1I)
        :: else -> skip
        fi;
        run controller(0); run controller(1); run controller(2);
#ifdef FOUR
        run controller(3);
#endif
        i = 0;
        do
        :: i <= RHOPS -> run reader(i); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i <= WHOPS -> run writer(i); i++
        :: else -> break
        od
    };
    /* Everything done; no deadlock is an invalid end state (not here). */
    finished == NHOLDERS;
    /* Quiescent: no message in flight (no controller can move). */
    timeout;
    atomic {
        assert(rnext == ND && wnext == ND);
        /* where the ends are now: the last port of each chain */
        rp = (RHOPS == 0 -> R0 : (RHOPS == 1 -> NEW_RT0I : NEW_RT1I));
        wp = (WHOPS == 0 -> W0 : (WHOPS == 1 -> NEW_WT0I : NEW_WT1I));
        /* the two current ends name each other, and nothing else is left */
        assert(P[rp].state == IDLE && P[wp].state == IDLE);
        assert(P[rp].comp == wp && P[wp].comp == rp);
        assert(home[rp] == R_NODE(RHOPS) && home[wp] == W_NODE(WHOPS));
        assert(RHOPS == 0 || P[R0].state == EMPTY);
        assert(RHOPS < 2 || P[NEW_RT0I].state == EMPTY);
        assert(WHOPS == 0 || P[W0].state == EMPTY);
        assert(WHOPS < 2 || P[NEW_WT0I].state == EMPTY);
        i = 1;
        do
        :: i < NPORTS ->
            assert(P[i].waiter == 0 && P[i].done == 0);
            assert(P[i].state == EMPTY || P[i].state == IDLE);
            i++
        :: else -> break
        od
    }
}
