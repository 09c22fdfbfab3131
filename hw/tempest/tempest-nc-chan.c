/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the channel controller, after "Hardware
 * Migratable Channels" (May, Muller, Sen; docs/chan.rst, "The channel
 * controller in the node controller").
 *
 * The port table (section 4: state, companion-id, address) lives here;
 * the paper's instructions (input, outputdata, output) and the making of
 * channels are sub-operations of TEMPEST_CMD_CHAN, executed at the
 * COMMIT read; the controllers exchange the paper's data messages (DATA,
 * ACK, and NACK and FREED of ours) as FABRIC_CHAN frames, in order per
 * pair of nodes, and the receiving controller stores data straight into
 * the buffer the port names.  Data longer than TEMPEST_CHAN_INLINE goes
 * by the transfer engine: DATA announces its length (BIG), the receiver
 * answers with the buffer's address (GO) and the sender's controller
 * starts a transfer from the output's memory straight into it; the
 * receiver takes it as the DATA once the transfer engine has stored it
 * all.  A port offers its buffer to its companion for the next DATA
 * (READY) when it inputs and, after a long DATA, with the ACK; an output
 * that finds the offer for its DATA starts the transfer straight into it,
 * without BIG and GO.  An offered buffer stays the port's until the data
 * comes or the offer is withdrawn (WITHDRAW, WITHDRAWN): BUFFER, FREE and
 * a move answer RETRY meanwhile, and INPUT_HERE keeps the port's buffer
 * and copies the data on before the ACK.  Completions that do not happen
 * at the COMMIT reach the guest as TEMPEST_EV_CHAN events.
 *
 * Peers are not trusted: a frame is taken only if it names a live port
 * of this node whose companion is the frame's sender, the sender's node
 * is the link it came on, and the port's state and counters say it can
 * come; anything else is dropped, traced and counted (CHAN_DROPPED).
 *
 * Ports over ports (the paper's 3.2, the five stages of migration):
 * OUTPUT_PORT and INPUT_PORT, the states MIGRATING and CONFIRMING and the
 * messages PORTDATA, WIRE, FWD, DELETE and CONFIRM, each handler making
 * the transition of libchan's handler of the same name (guest/lib/chan/
 * proto.c), which the SPIN model tests/model/chan.pml checks; the rows
 * marked 'd' in tests/model/transitions.txt are this file's, and
 * check_drift.py compares them with the code below.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "fabric-proto.h"
#include "trace.h"

enum {
    CHAN_MSG_DATA = 1,      /* number: the sender's tx; then the data */
    CHAN_MSG_ACK,           /* number: the DATA input */
    CHAN_MSG_NACK,          /* number: the DATA refused (too big) */
    CHAN_MSG_FREED,         /* the companion was freed */
    CHAN_MSG_BIG,           /* number: tx; u64 length: DATA to come */
    CHAN_MSG_GO,            /* number: the BIG's; u64 where it goes */
    CHAN_MSG_PORTDATA,      /* number: tx; u32 origin, comp, tx, rx */
    CHAN_MSG_WIRE,          /* from: the new port; number: its rx; u32 old */
    CHAN_MSG_FWD,           /* number: rx; u32 new, old */
    CHAN_MSG_DELETE,        /* to: the moved port */
    CHAN_MSG_CONFIRM,       /* the final confirmation */
    CHAN_MSG_READY,         /* number: DATA rx+1; u64 buffer, u64 size */
    CHAN_MSG_WITHDRAW,      /* number: the READY's: give the offer back */
    CHAN_MSG_WITHDRAWN,     /* number: the READY's: it will not be used */
    CHAN_MSG_MAX = CHAN_MSG_WITHDRAWN,
};

/* The length of each kind's data after the header (DATA: any). */
static const uint8_t chan_msg_extra[CHAN_MSG_MAX + 1] = {
    [CHAN_MSG_BIG] = 8, [CHAN_MSG_GO] = 8, [CHAN_MSG_PORTDATA] = 16,
    [CHAN_MSG_WIRE] = 4, [CHAN_MSG_FWD] = 8, [CHAN_MSG_READY] = 16,
};

/* p->go: the transfer of our long pre-send started, after GO or READY. */
#define CHAN_GO_ASKED   1
#define CHAN_GO_OFFER   2

/*
 * The cookie of a channel's transfer: the receiver's port index, the
 * sender's, the DATA number.
 */
#define CHAN_COOKIE(to, from, number) \
    (TEMPEST_CHAN_ID_INDEX(to) | (uint64_t)TEMPEST_CHAN_ID_INDEX(from) << 16 | \
     (uint64_t)(number) << 32)

static TempestChanPort *chan_port_of(TempestNCState *s, uint64_t id)
{
    TempestChanPort *p;

    if (id > UINT32_MAX || TEMPEST_CHAN_ID_NODE(id) != s->node_id ||
        TEMPEST_CHAN_ID_INDEX(id) >= TEMPEST_CHAN_PORTS) {
        return NULL;
    }
    p = &s->chan_port[TEMPEST_CHAN_ID_INDEX(id)];
    return p->state == TEMPEST_CHAN_ST_EMPTY ? NULL : p;
}

static uint32_t chan_id(TempestNCState *s, TempestChanPort *p)
{
    return TEMPEST_CHAN_ID(s->node_id, p - s->chan_port);
}

/*
 * The flight recorder (docs/chan.rst, "When a node fails"): the last
 * TEMPEST_CHAN_REC happenings, kept whether or not tracing is on (a
 * trace changes the timing a rare race needs) and printed when the node
 * fails.  Stamped with the host CPU's tick counter, not the clock (eight
 * entries a node and round trip of a ping-pong: the clock's reads were
 * a few per cent of it); chan_rec_ns() turns ticks into the clock's
 * nanoseconds when the recorder is printed.
 */
static void chan_rec(TempestNCState *s, const char *what, uint32_t a,
                     uint32_t b, uint32_t c, uint32_t d, uint64_t e)
{
    TempestChanRec *r = &s->chan_rec[s->chan_rec_next++ % TEMPEST_CHAN_REC];

    *r = (TempestChanRec) {
        .ticks = cpu_get_host_ticks(), .what = what,
        .a = a, .b = b, .c = c, .d = d, .e = e,
    };
}

/*
 * The clock's time of an entry's @ticks, from two readings of both: at
 * realize and @end_ns/@end_ticks now (the ticks' rate over the node's
 * life; the clock itself where the counter does not advance).
 */
static int64_t chan_rec_ns(TempestNCState *s, int64_t ticks, int64_t end_ns,
                           int64_t end_ticks)
{
    double rate = 1.0;

    if (end_ticks > s->chan_rec_ticks0 && end_ns > s->chan_rec_ns0) {
        rate = (double)(end_ns - s->chan_rec_ns0) /
               (double)(end_ticks - s->chan_rec_ticks0);
    }
    return end_ns - (int64_t)((double)(end_ticks - ticks) * rate);
}

/* A step of a buffer offer (READY, WITHDRAW, WITHDRAWN) of port @p. */
static void chan_offer_note(TempestNCState *s, TempestChanPort *p,
                            uint32_t number, const char *what)
{
    trace_tempest_nc_chan_offer(s->node_id, chan_id(s, p), number, what);
    chan_rec(s, what, chan_id(s, p), number, 0, 0, 0);
}

/*
 * Post a CHAN event; the recorder notes where it went: the CQ's tail
 * after it (the event is in slot tail - 1 unless some wait for room) and
 * how many events wait for room, so that a guest that never saw it can
 * be told from a device that never wrote it.
 */
static void chan_event(TempestNCState *s, TempestChanPort *p, uint32_t kind,
                       uint64_t b, uint64_t c)
{
    tempest_nc_post_event(s, TEMPEST_EV_CHAN, s->node_id,
                          chan_id(s, p) | (uint64_t)kind << 32, b, c);
    chan_rec(s, "event", chan_id(s, p), kind,
             s->ring[TEMPEST_RING_CQ].idx, s->evq_len, b);
}

static void chan_receive(TempestNCState *s, unsigned peer,
                         const uint8_t *body, size_t len);

/*
 * Send one message of port @from to its companion @to: through the
 * fabric, or, for a port of this node, straight to our own receiver.
 */
static void chan_send(TempestNCState *s, uint8_t kind, uint32_t to,
                      uint32_t from, uint32_t number, const uint8_t *data,
                      size_t len)
{
    uint8_t head[FABRIC_CHAN_HDR] = { kind };
    unsigned node = TEMPEST_CHAN_ID_NODE(to);

    fabric_st32(head + 4, to);
    fabric_st32(head + 8, from);
    fabric_st32(head + 12, number);
    trace_tempest_nc_chan_tx(s->node_id, kind, to, from, number, len);
    chan_rec(s, "tx", kind, to, from, number, len);
    if (node == s->node_id) {
        g_autofree uint8_t *frame = g_malloc(sizeof(head) + len);

        memcpy(frame, head, sizeof(head));
        if (len) {
            memcpy(frame + sizeof(head), data, len);
        }
        chan_receive(s, node, frame, sizeof(head) + len);
    } else if (s->fabric && node < s->num_nodes) {
        tempest_fabric_send_chan(s->fabric, node, head, sizeof(head), data,
                                 len);
    }
}

static bool chan_then_input(TempestNCState *s, TempestChanPort *p);

/*
 * The pre-send of @p ended: an output waiting completes (and the input of
 * an OUTPUT_INPUT starts, chan_then_input).
 */
static void chan_presend_end(TempestNCState *s, TempestChanPort *p,
                             uint32_t status)
{
    if (p->state == TEMPEST_CHAN_ST_OUTPUTTING) {
        bool then_in = p->then_in;

        p->state = TEMPEST_CHAN_ST_IDLE;
        p->presend = 0;
        p->presend_done = 0;
        p->out_port = 0;
        p->then_in = 0;
        if (then_in && !status && chan_then_input(s, p)) {
            return;     /* the input's event ends the instruction */
        }
        chan_event(s, p, TEMPEST_CHAN_EV_OUTPUT, status,
                   then_in && !status ? p->then_reason : 0);
    } else {
        /* outputdata with no output yet: OUTPUT will complete at once. */
        p->presend_done = 1;
        p->out_status = status;
    }
}

/*
 * The offer of p's buffer (chan_offer) is over: the DATA came, by any
 * path, or the companion gave it back, moved or went.  A withdrawal under
 * way ends with it.
 */
static void chan_offer_over(TempestChanPort *p)
{
    p->granted = 0;
    p->withdrawing = 0;
}

/*
 * Offer p's buffer to its companion for DATA rx+1 (READY), so that a long
 * output goes straight into it: when p inputs, and with the ACK of a long
 * DATA, the port IDLE then.  The buffer stays the port's until that DATA
 * comes (by the offer or otherwise) or the companion answers WITHDRAWN
 * (chan_withdraw): no FREE, BUFFER or move until then.  Only a buffer
 * long data would fit, with nothing on its way or waiting already, and
 * only if the port's first DATA or the last one it took was long (short
 * messages pay no READY).
 */
static void chan_offer(TempestNCState *s, TempestChanPort *p)
{
    uint8_t x[16];

    if (p->granted || p->incoming || p->waiting || p->closed ||
        p->comp == TEMPEST_CHAN_NONE || p->bufsize <= TEMPEST_CHAN_INLINE ||
        (p->rx && !p->last_long)) {
        return;
    }
    p->granted = 1;
    p->withdrawing = 0;
    fabric_st64(x, p->buf);
    fabric_st64(x + 8, p->bufsize);
    chan_send(s, CHAN_MSG_READY, p->comp, chan_id(s, p), p->rx + 1, x, 16);
}

/*
 * Input done: the data at p->buf; swap in the next buffer, ACK, and after
 * a long DATA the next buffer offered at once (the companion's next
 * output would come before our INPUT's READY).
 */
static void chan_input_done(TempestNCState *s, TempestChanPort *p)
{
    p->buf = p->next;
    p->bufsize = p->nextsize;
    p->next = 0;
    p->nextsize = 0;
    p->held_len = 0;
    chan_offer_over(p);
    p->here = 0;
    p->rx++;
    p->state = TEMPEST_CHAN_ST_IDLE;
    if (p->comp != TEMPEST_CHAN_NONE) {
        chan_send(s, CHAN_MSG_ACK, p->comp, chan_id(s, p), p->rx, NULL, 0);
        chan_offer(s, p);
    }
}

/* Copy @len bytes of guest memory from @from to @to; false if it fails. */
static bool chan_copy(TempestNCState *s, uint64_t from, uint64_t to,
                      uint64_t len)
{
    g_autofree uint8_t *bounce = g_malloc(MIN(MAX(len, 1),
                                              TEMPEST_CHAN_INLINE));
    uint64_t done, n;

    for (done = 0; done < len; done += n) {
        n = MIN(len - done, TEMPEST_CHAN_INLINE);
        if (!tempest_nc_dma_read(s, from + done, bounce, n) ||
            !tempest_nc_dma_write(s, to + done, bounce, n)) {
            return false;
        }
    }
    return true;
}

/*
 * The data of an INPUT_HERE that kept the port's buffer (p->here: long
 * data was, or by an offer could be, landing in it) is at p->buf: copied
 * to the input's buffer before the ACK lets the next DATA land in the
 * port's (a copy by the guest after the ACK raced with that DATA).
 * Longer than the input's buffer: held (BUFFERFULL), the input ends
 * TEMPEST_CHAN_EV_TOO_BIG with the length.
 */
static void chan_input_copied(TempestNCState *s, TempestChanPort *p,
                              uint64_t len)
{
    uint64_t to = p->here_addr;
    bool fits = len <= p->here_size;

    p->here = 0;
    p->here_addr = 0;
    p->here_size = 0;
    if (!fits || !chan_copy(s, p->buf, to, len)) {
        p->held_len = len;
        p->state = TEMPEST_CHAN_ST_BUFFERFULL;
        p->next = 0;
        p->nextsize = 0;
        chan_event(s, p, TEMPEST_CHAN_EV_TOO_BIG,
                   fits ? TEMPEST_CMD_E_BAD_ADDR : TEMPEST_CMD_E_TOO_BIG, len);
        return;
    }
    chan_event(s, p, TEMPEST_CHAN_EV_INPUT, len, to);
    chan_input_done(s, p);
}

/* A frame from @peer left untaken (traced and recorded, not counted). */
static void chan_drop_note(TempestNCState *s, unsigned peer, const char *why,
                           uint32_t b, uint32_t c, uint32_t d)
{
    trace_tempest_nc_chan_drop(s->node_id, peer, why);
    chan_rec(s, why, peer, b, c, d, 0);
}

static void chan_drop(TempestNCState *s, unsigned peer, const char *why)
{
    s->chan_dropped++;
    chan_drop_note(s, peer, why, 0, 0, 0);
}

/* The DATA of @p is stored at p->buf: input, or held (BUFFERFULL). */
static void chan_data_stored(TempestNCState *s, TempestChanPort *p,
                             uint64_t len)
{
    p->last_long = len > TEMPEST_CHAN_INLINE;
    if (p->state == TEMPEST_CHAN_ST_INPUTTING && p->in_port) {
        /* A port was to be input: the data is held; the input ends. */
        p->held_len = len;
        p->state = TEMPEST_CHAN_ST_BUFFERFULL;
        p->in_port = 0;
        chan_event(s, p, TEMPEST_CHAN_EV_TYPE, TEMPEST_CMD_E_CHAN_TYPE, 0);
    } else if (p->state == TEMPEST_CHAN_ST_INPUTTING && p->here) {
        chan_input_copied(s, p, len);
    } else if (p->state == TEMPEST_CHAN_ST_INPUTTING) {
        chan_event(s, p, TEMPEST_CHAN_EV_INPUT, len, p->buf);
        chan_input_done(s, p);
    } else {
        p->held_len = len;
        p->state = TEMPEST_CHAN_ST_BUFFERFULL;
    }
}

/* Can DATA (or BIG) number @number come to @p now? */
static bool chan_data_ok(TempestNCState *s, unsigned peer,
                         TempestChanPort *p, uint32_t number)
{
    if (p->state == TEMPEST_CHAN_ST_MIGRATING) {
        /* Stage 1: ignored; the companion sends it again (stage 3). */
        s->chan_migdrops++;
        chan_drop_note(s, peer, "for a migrating port", chan_id(s, p), number,
                       0);
        return false;
    }
    if ((p->state != TEMPEST_CHAN_ST_IDLE &&
         p->state != TEMPEST_CHAN_ST_INPUTTING) || p->incoming ||
        p->waiting) {
        chan_drop(s, peer, "DATA for a port that holds data or outputs");
        return false;
    }
    if (number != p->rx + 1) {
        chan_drop(s, peer, "DATA out of sequence");
        return false;
    }
    /* The companion did not use our offer for it: it is over. */
    chan_offer_over(p);
    return true;
}

/* Refuse DATA number p->rx + 1: the output fails, the input waits on. */
static void chan_refuse(TempestNCState *s, TempestChanPort *p)
{
    p->rx++;
    chan_offer_over(p);
    chan_send(s, CHAN_MSG_NACK, p->comp, chan_id(s, p), p->rx, NULL, 0);
}

/*
 * DATA number p->rx + 1 of @len bytes does not fit p's buffer: it waits
 * at the sender (WAITING) until BUFFER or INPUT names a buffer it fits,
 * which asks for it with GO (chan_send_go); the sender's output goes on
 * until then.  An input under way ends (its buffer is the one named):
 * TEMPEST_CHAN_EV_TOO_BIG with the length, as libchan's input that finds
 * data too long for its buffer ends CHAN_E_TOOBIG with the data kept;
 * a port input ends TEMPEST_CHAN_EV_TYPE (data, not a port, came).
 */
static void chan_too_long(TempestNCState *s, TempestChanPort *p,
                          uint64_t len)
{
    p->waiting = 1;
    p->in_len = len;
    chan_offer_over(p);
    if (p->state != TEMPEST_CHAN_ST_INPUTTING) {
        return;
    }
    p->state = TEMPEST_CHAN_ST_IDLE;
    p->next = 0;
    p->nextsize = 0;
    p->here = 0;
    if (p->in_port) {
        p->in_port = 0;
        chan_event(s, p, TEMPEST_CHAN_EV_TYPE, TEMPEST_CMD_E_CHAN_TYPE, 0);
    } else {
        chan_event(s, p, TEMPEST_CHAN_EV_TOO_BIG, TEMPEST_CMD_E_TOO_BIG, len);
    }
}

/*
 * GO for DATA p->rx + 1 (p->in_len bytes): the sender starts the
 * transfer into p's buffer (BIG's answer; or a DATA that waited, whose
 * frame was dropped: it comes again by the transfer engine).
 */
static void chan_send_go(TempestNCState *s, TempestChanPort *p)
{
    uint8_t where[8];

    p->waiting = 0;
    p->incoming = 1;
    fabric_st64(where, p->buf);
    chan_send(s, CHAN_MSG_GO, p->comp, chan_id(s, p), p->rx + 1, where, 8);
}

static void chan_rx_data(TempestNCState *s, unsigned peer,
                         TempestChanPort *p, uint32_t number,
                         const uint8_t *data, size_t len)
{
    if (!chan_data_ok(s, peer, p, number)) {
        return;
    }
    if (len > p->bufsize) {
        chan_too_long(s, p, len);
        return;
    }
    if (len && !tempest_nc_dma_write(s, p->buf, data, len)) {
        chan_refuse(s, p);
        return;
    }
    chan_data_stored(s, p, len);
}

/* ACK (status 0) or NACK: the pre-send's DATA was taken. */
static void chan_rx_ack(TempestNCState *s, unsigned peer, TempestChanPort *p,
                        uint32_t number, uint32_t status)
{
    if (!p->presend || p->presend_done || p->out_port || number != p->tx) {
        chan_drop(s, peer, "ACK for no pre-send");
        return;
    }
    chan_presend_end(s, p, status);
}

/* BIG: DATA of @len bytes to come by the transfer engine. */
static void chan_rx_big(TempestNCState *s, unsigned peer,
                        TempestChanPort *p, uint32_t number, uint64_t len)
{
    if (len <= TEMPEST_CHAN_INLINE || len > TEMPEST_CHAN_MAX_DATA) {
        chan_drop(s, peer, "BIG of a bad length");
        return;
    }
    if (!chan_data_ok(s, peer, p, number)) {
        return;
    }
    if (len > p->bufsize) {
        chan_too_long(s, p, len);
        return;
    }
    p->in_len = len;
    chan_send_go(s, p);
}

/*
 * GO: start the transfer of our pre-send into @where there: a long one
 * (BIG's answer), or one whose DATA frame waited for a buffer.
 */
static void chan_rx_go(TempestNCState *s, unsigned peer, TempestChanPort *p,
                       uint32_t number, uint64_t where)
{
    if (!p->presend || p->presend_done || p->go || number != p->tx ||
        p->out_port || !p->out_len) {
        chan_drop(s, peer, "GO for no pre-send of data");
        return;
    }
    p->go = CHAN_GO_ASKED;
    if (!tempest_nc_xfer_chan(s, TEMPEST_CHAN_ID_NODE(p->comp), p->out_addr,
                              p->out_len, where,
                              CHAN_COOKIE(p->comp, chan_id(s, p), number))) {
        chan_presend_end(s, p, TEMPEST_CMD_E_REMOTE);
    }
}

/*
 * READY: the companion inputs, its buffer @where (@size bytes) waiting
 * for our DATA @number; kept for the next output (chan_send_output).
 */
static void chan_rx_ready(TempestNCState *s, unsigned peer,
                          TempestChanPort *p, uint32_t number,
                          uint64_t where, uint64_t size)
{
    if (size <= TEMPEST_CHAN_INLINE || size > UINT32_MAX ||
        where + size < where) {
        chan_drop(s, peer, "READY of a bad buffer");
        return;
    }
    if (number != p->tx + 1 || p->state == TEMPEST_CHAN_ST_MIGRATING) {
        /*
         * That DATA went already (BIG or inline): the offer is stale.  A
         * port moving forgets offers (stage 1): its companion forgets
         * them when the new port wires up, and if the move is abandoned
         * the companion's offer is withdrawn before its buffer goes.
         */
        chan_drop_note(s, peer, "late READY", 0, 0, 0);
        return;
    }
    p->ready = 1;
    p->ready_comp = p->comp;
    p->ready_num = number;
    p->ready_addr = where;
    p->ready_size = size;
}

/*
 * WITHDRAW: the companion wants back the buffer it offered for our DATA
 * @number.  Not sent yet: forgotten, WITHDRAWN.  Sent (by the offer, BIG
 * or inline): it lands, and that ends the offer there.
 */
static void chan_rx_withdraw(TempestNCState *s, unsigned peer,
                             TempestChanPort *p, uint32_t number)
{
    if (number == p->tx + 1) {
        p->ready = 0;
        chan_offer_note(s, p, number, "offer given back");
        chan_send(s, CHAN_MSG_WITHDRAWN, p->comp, chan_id(s, p), number,
                  NULL, 0);
    } else if (number && number <= p->tx) {
        chan_offer_note(s, p, number, "WITHDRAW: that DATA went already");
    } else {
        chan_drop(s, peer, "WITHDRAW of an offer not made");
    }
}

/* WITHDRAWN: the companion will not use our offer for DATA @number. */
static void chan_rx_withdrawn(TempestNCState *s, unsigned peer,
                              TempestChanPort *p, uint32_t number)
{
    if (!p->granted || number != p->rx + 1) {
        chan_drop(s, peer, "WITHDRAWN for no offer");
        return;
    }
    chan_offer_note(s, p, number, "offer withdrawn");
    chan_offer_over(p);
}

/*
 * The port that waits for a channel's transfer from @src into @addr (a
 * long DATA after GO, or into the buffer a READY offered), or NULL.
 */
static TempestChanPort *chan_xfer_port(TempestNCState *s, uint32_t src,
                                       uint64_t addr, uint64_t len,
                                       uint64_t cookie)
{
    unsigned idx = cookie & 0xFFFF;
    TempestChanPort *p = chan_port_of(s, TEMPEST_CHAN_ID(s->node_id, idx));

    if (!p || (!p->incoming && !p->granted) || p->comp == TEMPEST_CHAN_NONE ||
        TEMPEST_CHAN_ID_NODE(p->comp) != src ||
        TEMPEST_CHAN_ID_INDEX(p->comp) != ((cookie >> 16) & 0xFFFF) ||
        cookie >> 32 != p->rx + 1 || addr != p->buf ||
        (p->incoming ? len != p->in_len :
         /* Into the buffer a READY offered: IDLE or inputting still. */
         (p->state != TEMPEST_CHAN_ST_IDLE &&
          p->state != TEMPEST_CHAN_ST_INPUTTING) ||
         len <= TEMPEST_CHAN_INLINE || len > p->bufsize)) {
        return NULL;
    }
    return p;
}

/* May the engine copy half of that transfer here itself (a split)? */
static bool chan_xfer_awaited(TempestNCState *s, uint32_t src, uint64_t addr,
                              uint64_t len, uint64_t cookie)
{
    return chan_xfer_port(s, src, addr, len, cookie) != NULL;
}

/* The transfer engine stored a channel's transfer here. */
static void chan_xfer_recv(TempestNCState *s, uint32_t src, uint64_t addr,
                           uint64_t len, uint64_t cookie)
{
    TempestChanPort *p = chan_xfer_port(s, src, addr, len, cookie);

    if (!p) {
        chan_drop(s, src, "transfer for no long DATA");
        return;
    }
    p->incoming = 0;
    p->in_len = 0;
    chan_offer_over(p);
    chan_data_stored(s, p, len);
}

/* Our channel's transfer ended: only a failure matters (ACK comes). */
static void chan_xfer_sent(TempestNCState *s, uint64_t cookie,
                           uint32_t status)
{
    unsigned idx = (cookie >> 16) & 0xFFFF;
    TempestChanPort *p = chan_port_of(s, TEMPEST_CHAN_ID(s->node_id, idx));

    if (status && p && p->presend && !p->presend_done && p->go &&
        !p->out_port && cookie >> 32 == p->tx &&
        (cookie & 0xFFFF) == TEMPEST_CHAN_ID_INDEX(p->comp)) {
        if (p->go == CHAN_GO_OFFER) {
            /* Nothing more comes into the buffer offered: it is free. */
            chan_send(s, CHAN_MSG_WITHDRAWN, p->comp, chan_id(s, p), p->tx,
                      NULL, 0);
        }
        chan_presend_end(s, p, status);
    }
}

static void chan_rx_freed(TempestNCState *s, TempestChanPort *p)
{
    p->comp = TEMPEST_CHAN_NONE;
    p->closed = 1;
    p->incoming = 0;
    p->waiting = 0;
    chan_offer_over(p);
    p->here = 0;
    p->ready = 0;
    if (p->state == TEMPEST_CHAN_ST_INPUTTING) {
        p->state = TEMPEST_CHAN_ST_IDLE;
        p->next = 0;
        p->nextsize = 0;
        chan_event(s, p, p->in_port ? TEMPEST_CHAN_EV_PORT :
                   TEMPEST_CHAN_EV_CLOSED, TEMPEST_CMD_E_CLOSED, 0);
        p->in_port = 0;
    }
    if (p->presend && !p->presend_done) {
        if (p->out_port) {
            /*
             * Nobody will input the port sent: the move is abandoned, the
             * port is IDLE here again, and its companion is asked to send
             * again what it dropped (a wire-up to itself).
             */
            TempestChanPort *q = &s->chan_port[p->cargo];
            uint8_t x[4];

            q->state = TEMPEST_CHAN_ST_IDLE;
            if (q->comp != TEMPEST_CHAN_NONE) {
                fabric_st32(x, chan_id(s, q));
                chan_send(s, CHAN_MSG_WIRE, q->comp, chan_id(s, q), q->rx,
                          x, 4);
            }
        }
        chan_presend_end(s, p, TEMPEST_CMD_E_CLOSED);
    }
}

/* ------------------------------------------------------------------ */
/* Ports over ports (3.2): the five stages                             */
/* ------------------------------------------------------------------ */

/*
 * Send the pre-send of @p (again) to its companion: the data (in the
 * DATA frame, or BIG for the transfer engine) or the port at p->cargo
 * (PORTDATA, with the port's companion as it is now: stage 5 may have
 * changed it).  False if the data cannot be read.
 */
static bool chan_send_output(TempestNCState *s, TempestChanPort *p)
{
    g_autofree uint8_t *data = NULL;
    uint8_t x[16];

    p->go = 0;
    if (p->out_port) {
        TempestChanPort *q = &s->chan_port[p->cargo];

        fabric_st32(x, chan_id(s, q));
        fabric_st32(x + 4, q->comp);
        fabric_st32(x + 8, q->tx);
        fabric_st32(x + 12, q->rx);
        chan_send(s, CHAN_MSG_PORTDATA, p->comp, chan_id(s, p), p->tx, x,
                  16);
    } else if (p->out_len > TEMPEST_CHAN_INLINE && p->ready &&
               p->ready_comp == p->comp && p->ready_num == p->tx &&
               p->out_len <= p->ready_size &&
               tempest_nc_xfer_chan(s, TEMPEST_CHAN_ID_NODE(p->comp),
                                    p->out_addr, p->out_len, p->ready_addr,
                                    CHAN_COOKIE(p->comp, chan_id(s, p),
                                                p->tx))) {
        /* The companion's buffer waits (READY): straight into it. */
        p->ready = 0;
        p->go = CHAN_GO_OFFER;
    } else if (p->out_len > TEMPEST_CHAN_INLINE) {
        p->ready = 0;
        fabric_st64(x, p->out_len);
        chan_send(s, CHAN_MSG_BIG, p->comp, chan_id(s, p), p->tx, x, 8);
    } else {
        data = g_malloc(p->out_len ? p->out_len : 1);
        if (p->out_len &&
            !tempest_nc_dma_read(s, p->out_addr, data, p->out_len)) {
            return false;
        }
        chan_send(s, CHAN_MSG_DATA, p->comp, chan_id(s, p), p->tx, data,
                  p->out_len);
    }
    return true;
}

static void chan_send_wire(TempestNCState *s, uint32_t target, uint32_t new,
                           uint32_t old, uint32_t rx)
{
    uint8_t x[4];

    fabric_st32(x, old);
    chan_send(s, CHAN_MSG_WIRE, target, new, rx, x, 4);
}

static void chan_send_delete(TempestNCState *s, uint32_t target,
                             uint32_t from)
{
    chan_send(s, CHAN_MSG_DELETE, target, from, 0, NULL, 0);
}

/* A free entry of the table, IDLE with the buffer given, or NULL. */
static TempestChanPort *chan_new(TempestNCState *s, uint64_t buf,
                                 uint64_t size)
{
    for (unsigned n = 0; n < TEMPEST_CHAN_PORTS; n++) {
        unsigned i = (s->chan_next + n) % TEMPEST_CHAN_PORTS;
        TempestChanPort *p = &s->chan_port[i];

        if (p->state == TEMPEST_CHAN_ST_EMPTY) {
            memset(p, 0, sizeof(*p));
            p->state = TEMPEST_CHAN_ST_IDLE;
            p->comp = TEMPEST_CHAN_NONE;
            p->buf = size ? buf : 0;
            p->bufsize = size;
            s->chan_next = (i + 1) % TEMPEST_CHAN_PORTS;
            s->chan_used++;
            return p;
        }
    }
    return NULL;
}

static void chan_release(TempestNCState *s, TempestChanPort *p)
{
    memset(p, 0, sizeof(*p));
    p->state = TEMPEST_CHAN_ST_EMPTY;
    s->chan_used--;
}

/* Stage 1 on t_o (port @t) sending port @q. */
static void chan_stage1(TempestNCState *s, TempestChanPort *t,
                        TempestChanPort *q)
{
    /* 1.1: data pre-sent to q is ignored: its companion sends it again. */
    q->held_len = 0;
    q->held_port = 0;
    q->waiting = 0;
    /* An offer from its companion is not for where q goes. */
    q->ready = 0;
    q->state = TEMPEST_CHAN_ST_MIGRATING;
    /* 1.2: the route for the confirmation. */
    q->via = t - s->chan_port;
    /* 1.3: q's name and companion go over t. */
    t->tx++;
    t->state = TEMPEST_CHAN_ST_OUTPUTTING;
    t->presend = 1;
    t->presend_done = 0;
    t->out_port = 1;
    t->out_status = 0;
    t->out_len = 0;
    t->cargo = q - s->chan_port;
    chan_send_output(s, t);
}

/*
 * Stage 2 at D on port @t, which holds a port: the new port (with the
 * initial buffer @buf/@size), wired to the sent port's companion.  0, or
 * NO_PORTS (the port stays held).
 */
static uint32_t chan_stage2(TempestNCState *s, TempestChanPort *t,
                            uint64_t buf, uint64_t size)
{
    TempestChanPort *n = chan_new(s, buf, size);
    uint32_t origin = t->held_origin;

    if (!n) {
        return TEMPEST_CMD_E_NO_PORTS;
    }
    /* 2.1: the new port, with the sent port's companion and counters. */
    n->comp = t->held_comp;
    n->tx = t->held_tx;
    n->rx = t->held_rx;
    /* 2.3: t waits for the final confirmation. */
    t->held_port = 0;
    t->in_port = 0;
    t->next = 0;
    t->nextsize = 0;
    t->rx++;
    t->state = TEMPEST_CHAN_ST_CONFIRMING;
    t->result = chan_id(s, n);
    /* 2.2: the companion wires up (a freed one: straight to stage 4). */
    if (n->comp != TEMPEST_CHAN_NONE) {
        chan_send_wire(s, n->comp, chan_id(s, n), origin, n->rx);
    } else {
        chan_send_delete(s, origin, chan_id(s, n));
    }
    return 0;
}

static void chan_hold_port(TempestChanPort *p, const uint8_t *x)
{
    p->held_port = 1;
    p->held_origin = fabric_ld32(x);
    p->held_comp = fabric_ld32(x + 4);
    p->held_tx = fabric_ld32(x + 8);
    p->held_rx = fabric_ld32(x + 12);
    p->state = TEMPEST_CHAN_ST_BUFFERFULL;
}

/* PORTDATA: stage 1 arriving at the destination. */
static void chan_rx_portdata(TempestNCState *s, unsigned peer,
                             TempestChanPort *p, uint32_t number,
                             const uint8_t *x)
{
    uint32_t origin = fabric_ld32(x), comp = fabric_ld32(x + 4);
    uint32_t st;

    if (TEMPEST_CHAN_ID_NODE(origin) != peer ||
        (comp != TEMPEST_CHAN_NONE &&
         (TEMPEST_CHAN_ID_NODE(comp) >= s->num_nodes ||
          TEMPEST_CHAN_ID_INDEX(comp) >= TEMPEST_CHAN_PORTS))) {
        chan_drop(s, peer, "PORTDATA naming no port");
        return;
    }
    if (!chan_data_ok(s, peer, p, number)) {
        return;
    }
    if (p->state == TEMPEST_CHAN_ST_IDLE) {
        chan_hold_port(p, x);
        return;
    }
    /* INPUTTING */
    chan_hold_port(p, x);
    if (!p->in_port) {
        p->next = 0;
        p->nextsize = 0;
        p->here = 0;
        chan_event(s, p, TEMPEST_CHAN_EV_TYPE, TEMPEST_CMD_E_CHAN_TYPE, 0);
        return;
    }
    st = chan_stage2(s, p, p->next, p->nextsize);
    if (st) {
        p->in_port = 0;
        p->next = 0;
        p->nextsize = 0;
        chan_event(s, p, TEMPEST_CHAN_EV_PORT, st, 0);   /* BUFFERFULL */
    }
}

/* WIRE: stage 3 (or 5) at the companion's node. */
static void chan_rx_wire(TempestNCState *s, unsigned peer, uint32_t target,
                         uint32_t new, uint32_t rx, uint32_t old)
{
    TempestChanPort *p = chan_port_of(s, target), *t;
    bool done = false;

    if (!p) {
        /* The companion was freed: finish the move; new is alone. */
        if (old != new) {
            chan_send_delete(s, old, target);
        }
        chan_send(s, CHAN_MSG_FREED, new, target, 0, NULL, 0);
        return;
    }
    if (p->comp != old) {
        chan_drop(s, peer, "WIRE for a port whose companion is not old");
        return;
    }
    /* 3.1: the channel now runs between p and new. */
    p->comp = new;
    if (old != new && p->granted) {
        /*
         * Our offer to old is void: a port with a pre-send out does not
         * move, so old sent nothing into it, and new never saw it (an
         * abandoned move, old == new, keeps it: p's buffer is given up
         * only once the port answers WITHDRAWN).
         */
        chan_offer_over(p);
    }
    if (p->state == TEMPEST_CHAN_ST_MIGRATING) {
        /* 5: both ends move: pass it on to where p is going. */
        t = &s->chan_port[p->via];
        if (t->comp != TEMPEST_CHAN_NONE) {
            uint8_t x[8];

            s->chan_forwards++;
            fabric_st32(x, new);
            fabric_st32(x + 4, old);
            chan_send(s, CHAN_MSG_FWD, t->comp, chan_id(s, t), rx, x, 8);
        }
        return;
    }
    if (p->presend && !p->presend_done) {
        if (p->tx > rx) {
            /* 3.2: what the old port dropped goes to the new one. */
            s->chan_resent++;
            if (!chan_send_output(s, p)) {
                chan_presend_end(s, p, TEMPEST_CMD_E_BAD_ADDR);
            }
        } else if (!p->out_port) {
            /* Input before the move; its acknowledgement is late. */
            done = true;
        } else {
            chan_drop(s, peer, "WIRE: a port input, yet its taker moved");
        }
    }
    /* 3.2: the old port may go (an abandoned move wires to itself). */
    if (old != new) {
        chan_send_delete(s, old, target);
    }
    if (done) {
        chan_presend_end(s, p, 0);
    }
}

/* FWD: stage 5 at the node a migrating port was sent to. */
static void chan_rx_fwd(TempestNCState *s, unsigned peer, TempestChanPort *p,
                        uint32_t new, uint32_t old)
{
    TempestChanPort *n;

    if (p->state == TEMPEST_CHAN_ST_BUFFERFULL && p->held_port) {
        /* 5.1: not input yet: overwrite the port data waiting here. */
        if (p->held_comp == old) {
            p->held_comp = new;
        } else {
            chan_drop(s, peer, "FWD: the port held is not old's");
        }
    } else if (p->state == TEMPEST_CHAN_ST_CONFIRMING) {
        /* 5.2: input already: the port allocated for it. */
        n = chan_port_of(s, p->result);
        if (n && n->comp == old) {
            n->comp = new;
        } else {
            chan_drop(s, peer, "FWD: the new port is not wired to old");
        }
    } else if (p->state != TEMPEST_CHAN_ST_MIGRATING) {
        /* MIGRATING: the port data was dropped and is sent again. */
        chan_drop(s, peer, "FWD for a port in no state to take it");
    }
    /* In every case the origin of old is told (then stage 4). */
    if (old != new) {
        chan_send_delete(s, old, chan_id(s, p));
    }
}

/* DELETE: stage 4 at the origin. */
static void chan_rx_delete(TempestNCState *s, unsigned peer,
                           TempestChanPort *p)
{
    TempestChanPort *t;

    if (p->state != TEMPEST_CHAN_ST_MIGRATING) {
        chan_drop(s, peer, "DELETE of a port that is not migrating");
        return;
    }
    t = &s->chan_port[p->via];
    if (t->state != TEMPEST_CHAN_ST_OUTPUTTING || !t->out_port ||
        t->cargo != p - s->chan_port) {
        chan_drop(s, peer, "DELETE: the port it went over is not sending it");
        return;
    }
    chan_release(s, p);
    s->chan_moves++;
    if (t->comp != TEMPEST_CHAN_NONE) {
        chan_send(s, CHAN_MSG_CONFIRM, t->comp, chan_id(s, t), 0, NULL, 0);
    }
    chan_presend_end(s, t, 0);          /* IDLE, the OUTPUT event */
}

/* CONFIRM: the final confirmation at the destination. */
static void chan_rx_confirm(TempestNCState *s, unsigned peer,
                            TempestChanPort *p)
{
    if (p->state != TEMPEST_CHAN_ST_CONFIRMING) {
        chan_drop(s, peer, "CONFIRM for a port not confirming");
        return;
    }
    p->state = TEMPEST_CHAN_ST_IDLE;
    chan_event(s, p, TEMPEST_CHAN_EV_PORT, 0, p->result);
    p->result = 0;
}

/* A FABRIC_CHAN frame from @peer (or from this node itself). */
static void chan_receive(TempestNCState *s, unsigned peer,
                         const uint8_t *body, size_t len)
{
    uint8_t kind;
    uint32_t to, from, number;
    TempestChanPort *p;

    if (len < FABRIC_CHAN_HDR) {
        chan_drop(s, peer, "short frame");
        return;
    }
    kind = body[0];
    to = fabric_ld32(body + 4);
    from = fabric_ld32(body + 8);
    number = fabric_ld32(body + 12);
    trace_tempest_nc_chan_rx(s->node_id, peer, kind, to, from, number,
                             len - FABRIC_CHAN_HDR);
    chan_rec(s, "rx", kind, to, from, number,
             (uint64_t)peer << 32 | (uint32_t)(len - FABRIC_CHAN_HDR));
    if (!kind || kind > CHAN_MSG_MAX || body[1] || body[2] || body[3]) {
        chan_drop(s, peer, "unknown kind");
        return;
    }
    if (kind != CHAN_MSG_DATA &&
        len != FABRIC_CHAN_HDR + chan_msg_extra[kind]) {
        chan_drop(s, peer, "bad length");
        return;
    }
    if (len - FABRIC_CHAN_HDR > TEMPEST_CHAN_INLINE) {
        chan_drop(s, peer, "DATA too long");
        return;
    }
    if (TEMPEST_CHAN_ID_NODE(from) != peer) {
        chan_drop(s, peer, "sender is not the link's node");
        return;
    }
    if (kind == CHAN_MSG_WIRE) {
        /* From the new port, a third party: checked against old. */
        if (TEMPEST_CHAN_ID_NODE(to) != s->node_id ||
            TEMPEST_CHAN_ID_INDEX(to) >= TEMPEST_CHAN_PORTS) {
            chan_drop(s, peer, "WIRE for no port of this node");
            return;
        }
        chan_rx_wire(s, peer, to, from, number,
                     fabric_ld32(body + FABRIC_CHAN_HDR));
        return;
    }
    p = chan_port_of(s, to);
    if (kind == CHAN_MSG_DELETE) {
        /* From whoever replaced the reference to the moved port. */
        if (!p) {
            chan_drop(s, peer, "DELETE of no live port");
            return;
        }
        chan_rx_delete(s, peer, p);
        return;
    }
    if (kind == CHAN_MSG_FWD && !p) {
        /* Stale: the origin is told all the same (then stage 4). */
        uint32_t new = fabric_ld32(body + FABRIC_CHAN_HDR);
        uint32_t old = fabric_ld32(body + FABRIC_CHAN_HDR + 4);

        if (old != new) {
            chan_send_delete(s, old, to);
        }
        return;
    }
    if (p && p->comp != from &&
        (kind == CHAN_MSG_ACK || kind == CHAN_MSG_NACK)) {
        /*
         * A late acknowledgement from a companion that has moved since
         * (the output was found input at stage 3): stale, ignored.
         */
        chan_drop_note(s, peer, "late ACK", to, from, number);
        return;
    }
    if ((!p || p->comp != from) &&
        (kind == CHAN_MSG_WITHDRAW || kind == CHAN_MSG_WITHDRAWN)) {
        /*
         * An offer's late word: WITHDRAW to a writer that moved away or
         * was freed since, WITHDRAWN to a reader whose offer a WIRE from
         * the writer's new port voided and which then moved (the two come
         * from different nodes, so the WIRE can come first).  Harmless
         * either way: the offer is over at both ends; not counted.
         */
        chan_drop_note(s, peer, "late offer frame", to, from, number);
        return;
    }
    if (!p || p->comp != from) {
        chan_drop(s, peer, "not a live port whose companion sent it");
        return;
    }
    switch (kind) {
    case CHAN_MSG_DATA:
        chan_rx_data(s, peer, p, number, body + FABRIC_CHAN_HDR,
                     len - FABRIC_CHAN_HDR);
        break;
    case CHAN_MSG_ACK:
    case CHAN_MSG_NACK:
        chan_rx_ack(s, peer, p, number, kind == CHAN_MSG_ACK ? 0 :
                    TEMPEST_CMD_E_TOO_BIG);
        break;
    case CHAN_MSG_FREED:
        chan_rx_freed(s, p);
        break;
    case CHAN_MSG_BIG:
        chan_rx_big(s, peer, p, number, fabric_ld64(body + FABRIC_CHAN_HDR));
        break;
    case CHAN_MSG_GO:
        chan_rx_go(s, peer, p, number, fabric_ld64(body + FABRIC_CHAN_HDR));
        break;
    case CHAN_MSG_PORTDATA:
        chan_rx_portdata(s, peer, p, number, body + FABRIC_CHAN_HDR);
        break;
    case CHAN_MSG_FWD:
        chan_rx_fwd(s, peer, p, fabric_ld32(body + FABRIC_CHAN_HDR),
                    fabric_ld32(body + FABRIC_CHAN_HDR + 4));
        break;
    case CHAN_MSG_CONFIRM:
        chan_rx_confirm(s, peer, p);
        break;
    case CHAN_MSG_READY:
        chan_rx_ready(s, peer, p, number, fabric_ld64(body + FABRIC_CHAN_HDR),
                      fabric_ld64(body + FABRIC_CHAN_HDR + 8));
        break;
    case CHAN_MSG_WITHDRAW:
        chan_rx_withdraw(s, peer, p, number);
        break;
    case CHAN_MSG_WITHDRAWN:
        chan_rx_withdrawn(s, peer, p, number);
        break;
    }
}

static void chan_fabric_frame(void *opaque, unsigned peer,
                              const uint8_t *body, size_t len)
{
    TempestNCState *s = opaque;

    if (peer >= s->num_nodes || peer == s->node_id) {
        chan_drop(s, peer, "frame from no peer");
        return;
    }
    chan_receive(s, peer, body, len);
}

/* Every port whose companion is on @peer is closed: the peer is gone. */
static void chan_peer_down(TempestNCState *s, unsigned peer)
{
    for (unsigned i = 0; i < TEMPEST_CHAN_PORTS; i++) {
        TempestChanPort *p = &s->chan_port[i];

        if (p->state != TEMPEST_CHAN_ST_EMPTY &&
            p->comp != TEMPEST_CHAN_NONE &&
            TEMPEST_CHAN_ID_NODE(p->comp) == peer) {
            if (p->state == TEMPEST_CHAN_ST_CONFIRMING) {
                /*
                 * The confirmation will never come; the new port was
                 * made and wired up: the port input ends with it.
                 */
                p->state = TEMPEST_CHAN_ST_IDLE;
                chan_event(s, p, TEMPEST_CHAN_EV_PORT,
                           TEMPEST_CMD_E_PEER_DOWN, p->result);
                p->result = 0;
            }
            chan_rx_freed(s, p);
        }
    }
}

/* ------------------------------------------------------------------ */
/* The instructions (TEMPEST_CMD_CHAN)                                 */
/* ------------------------------------------------------------------ */

/* A buffer: [addr, addr + size) wholly in RAM, or size 0. */
static bool chan_buffer_ok(TempestNCState *s, uint64_t addr, uint64_t size)
{
    return !size || (size <= UINT32_MAX && tempest_nc_in_ram(s, addr, size));
}

static uint32_t chan_fail(TempestNCState *s, TempestCmdBank *b,
                          uint32_t reason)
{
    trace_tempest_nc_chan_cmd(s->node_id, b->arg[0], b->arg[1], reason);
    chan_rec(s, "refused", b->arg[0], reason, 0, 0, b->arg[1]);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: node %u: channel instruction %"
                  PRIu64 " on port 0x%" PRIx64 " refused, reason %u\n",
                  TYPE_TEMPEST_NC, s->node_id, b->arg[0], b->arg[1], reason);
    return tempest_nc_cmd_fail(b, reason);
}

/*
 * Before p's buffer is given up (BUFFER, FREE, a move), the offer of it
 * to the companion (granted) is withdrawn: WITHDRAW, once.  The
 * companion's controller answers WITHDRAWN if it has not sent that DATA;
 * if it has, the data lands and ends the offer; a freed, moved or lost
 * companion ends it too (chan_rx_freed, chan_rx_wire).  True once no
 * offer is out (a companion on this node answers at once); until then
 * the instruction answers RETRY.
 */
static bool chan_withdraw(TempestNCState *s, TempestChanPort *p)
{
    if (p->granted && !p->withdrawing) {
        p->withdrawing = 1;
        chan_offer_note(s, p, p->rx + 1, "WITHDRAW");
        chan_send(s, CHAN_MSG_WITHDRAW, p->comp, chan_id(s, p), p->rx + 1,
                  NULL, 0);
    }
    return !p->granted;
}

static uint32_t chan_op_alloc(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t addr = b->arg[1], size = b->arg[2];

    TempestChanPort *p;

    if (!chan_buffer_ok(s, addr, size)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    p = chan_new(s, addr, size);
    if (!p) {
        return chan_fail(s, b, TEMPEST_CMD_E_NO_PORTS);
    }
    b->result = chan_id(s, p);
    return TEMPEST_CMD_SUCCESS;
}

static bool chan_unconnected(TempestChanPort *p)
{
    return p->state == TEMPEST_CHAN_ST_IDLE &&
           p->comp == TEMPEST_CHAN_NONE && !p->closed;
}

static uint32_t chan_op_connect(TempestNCState *s, TempestCmdBank *b,
                                TempestChanPort *p)
{
    uint64_t comp = b->arg[2];
    TempestChanPort *q = NULL;

    if (comp > UINT32_MAX || TEMPEST_CHAN_ID_NODE(comp) >= s->num_nodes ||
        TEMPEST_CHAN_ID_INDEX(comp) >= TEMPEST_CHAN_PORTS) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_PORT);
    }
    if (TEMPEST_CHAN_ID_NODE(comp) == s->node_id) {
        q = chan_port_of(s, comp);
        if (!q || q == p) {
            return chan_fail(s, b, TEMPEST_CMD_E_BAD_PORT);
        }
        if (!chan_unconnected(q)) {
            return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
        }
    }
    if (!chan_unconnected(p)) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    p->comp = comp;
    if (q) {
        q->comp = chan_id(s, p);
    }
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t chan_op_free(TempestNCState *s, TempestCmdBank *b,
                             TempestChanPort *p)
{
    if ((p->state != TEMPEST_CHAN_ST_IDLE &&
         p->state != TEMPEST_CHAN_ST_BUFFERFULL) ||
        (p->presend && !p->presend_done) || p->incoming ||
        (p->held_port && !(b->arg[2] & TEMPEST_CHAN_FREE_HELD))) {
        /*
         * A port held here would be lost with it, unless the guest says
         * so: then the FREED makes its sender abandon the move (the port
         * stays where it was), as if the port data had come too late.
         */
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!chan_withdraw(s, p)) {
        return TEMPEST_CMD_RETRY;
    }
    if (p->comp != TEMPEST_CHAN_NONE) {
        chan_send(s, CHAN_MSG_FREED, p->comp, chan_id(s, p), 0, NULL, 0);
    }
    chan_release(s, p);
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t chan_op_buffer(TempestNCState *s, TempestCmdBank *b,
                               TempestChanPort *p)
{
    uint64_t addr = b->arg[2], size = b->arg[3];

    if (p->state != TEMPEST_CHAN_ST_IDLE || p->incoming) {
        /* The data is (or is going) in the current buffer; keep it. */
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!chan_buffer_ok(s, addr, size)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    if ((addr != p->buf || size != p->bufsize) && !chan_withdraw(s, p)) {
        /* The buffer offered may be being written: not yet. */
        return TEMPEST_CMD_RETRY;
    }
    p->buf = size ? addr : 0;
    p->bufsize = size;
    if (p->waiting && p->in_len <= size) {
        chan_send_go(s, p);
    }
    return TEMPEST_CMD_SUCCESS;
}

/* outputdata (2.2, 3.1): the data goes now; the state does not change. */
static uint32_t chan_op_outputdata(TempestNCState *s, TempestCmdBank *b,
                                   TempestChanPort *p)
{
    uint64_t addr = b->arg[2], len = b->arg[3];

    if (p->state != TEMPEST_CHAN_ST_IDLE || p->presend || p->waiting) {
        /* (Data waiting here is data held: BUFFERFULL's rule.) */
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (p->closed) {
        return chan_fail(s, b, TEMPEST_CMD_E_CLOSED);
    }
    if (p->comp == TEMPEST_CHAN_NONE) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (len > TEMPEST_CHAN_MAX_DATA) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_LEN);
    }
    if (len && !tempest_nc_in_ram(s, addr, len)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    if (TEMPEST_CHAN_ID_NODE(p->comp) != s->node_id &&
        !tempest_fabric_peer_up(s->fabric, TEMPEST_CHAN_ID_NODE(p->comp))) {
        return chan_fail(s, b, TEMPEST_CMD_E_PEER_DOWN);
    }
    p->presend = 1;
    p->presend_done = 0;
    p->out_port = 0;
    p->out_status = 0;
    p->out_addr = addr;
    p->out_len = len;
    p->tx++;
    if (!chan_send_output(s, p)) {
        /* Nothing was sent. */
        p->presend = 0;
        p->tx--;
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t chan_op_output(TempestNCState *s, TempestCmdBank *b,
                               TempestChanPort *p)
{
    uint32_t st;

    if (p->state != TEMPEST_CHAN_ST_IDLE) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!p->presend) {
        st = chan_op_outputdata(s, b, p);
        if (st != TEMPEST_CMD_SUCCESS) {
            return st;
        }
    }
    if (p->presend_done) {
        /* Input already (possibly by a loopback companion just now). */
        uint32_t status = p->out_status;

        p->presend = 0;
        p->presend_done = 0;
        if (status) {
            return chan_fail(s, b, status);
        }
        b->result = 1;
        return TEMPEST_CMD_SUCCESS;
    }
    p->state = TEMPEST_CHAN_ST_OUTPUTTING;
    b->result = 0;
    return TEMPEST_CMD_SUCCESS;
}

/*
 * INPUT_HERE finds the data in the port's buffer (BUFFERFULL): the
 * buffer stays the port's, and the ACK lets the next DATA land in it at
 * once, so the data is copied to this input's buffer here, before the
 * ACK (a copy by the guest after it raced with the next DATA: guest-
 * socket/chan-stream-2 read message 1162's number in message 1161).
 * Too long for this buffer: TOO_BIG with the length; it stays held.
 */
static uint32_t chan_input_held_here(TempestNCState *s, TempestCmdBank *b,
                                     TempestChanPort *p, uint64_t to,
                                     uint64_t size)
{
    uint64_t len = p->held_len;

    if (len > size) {
        chan_fail(s, b, TEMPEST_CMD_E_TOO_BIG);
        b->result = len;
        return TEMPEST_CMD_FAIL;
    }
    if (!chan_copy(s, p->buf, to, len)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    p->next = p->buf;
    p->nextsize = p->bufsize;
    b->result = TEMPEST_CHAN_PRESENT | len;
    chan_input_done(s, p);
    return TEMPEST_CMD_SUCCESS;
}

/*
 * input (2.1): this data goes to the port's buffer; ARG2/3 the next one.
 * @here (INPUT_HERE): ARG2/3 is this input's buffer instead, if nothing
 * is on its way to the port's: the port's buffer is the next one.  Long
 * data landing in the port's buffer, or offered it (granted): the port's
 * buffer stays, and the data is copied to ARG2 when it has come, before
 * the ACK (chan_input_copied); long data landing that ARG3 is too short
 * for: TOO_BIG at once.  Data waiting that ARG3 is too short for: the
 * port's buffer stays, TOO_BIG.  Data held already (BUFFERFULL):
 * chan_input_held_here().
 */
static uint32_t chan_op_input(TempestNCState *s, TempestCmdBank *b,
                              TempestChanPort *p, bool here)
{
    uint64_t next = b->arg[2], size = b->arg[3];
    bool keep = here && (p->incoming || p->granted);

    if ((p->state != TEMPEST_CHAN_ST_IDLE &&
         p->state != TEMPEST_CHAN_ST_BUFFERFULL) ||
        (p->presend && !p->presend_done)) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!chan_buffer_ok(s, next, size)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    if (p->held_port) {
        return chan_fail(s, b, TEMPEST_CMD_E_CHAN_TYPE);
    }
    if (here && p->state == TEMPEST_CHAN_ST_BUFFERFULL) {
        return chan_input_held_here(s, b, p, next, size);
    }
    if (keep && p->incoming && p->in_len > size) {
        /* It will be held when it has landed. */
        chan_fail(s, b, TEMPEST_CMD_E_TOO_BIG);
        b->result = p->in_len;
        return TEMPEST_CMD_FAIL;
    }
    if (!here) {
        p->next = size ? next : 0;
        p->nextsize = size;
    } else {
        p->next = p->buf;
        p->nextsize = p->bufsize;
        /* IDLE here: BUFFERFULL went to chan_input_held_here(). */
        if (!keep && !(p->waiting && p->in_len > size) &&
            !p->closed && p->comp != TEMPEST_CHAN_NONE) {
            p->buf = size ? next : 0;
            p->bufsize = size;
        }
    }
    if (p->state == TEMPEST_CHAN_ST_BUFFERFULL) {
        b->result = TEMPEST_CHAN_PRESENT | p->held_len;
        chan_input_done(s, p);
        return TEMPEST_CMD_SUCCESS;
    }
    if (p->waiting && p->in_len > p->bufsize) {
        /* The data waiting is longer than this buffer: it waits on. */
        p->next = 0;
        p->nextsize = 0;
        chan_fail(s, b, TEMPEST_CMD_E_TOO_BIG);
        b->result = p->in_len;
        return TEMPEST_CMD_FAIL;
    }
    if (p->closed || p->comp == TEMPEST_CHAN_NONE) {
        p->next = 0;
        p->nextsize = 0;
        return chan_fail(s, b, p->closed ? TEMPEST_CMD_E_CLOSED :
                         TEMPEST_CMD_E_PORT_STATE);
    }
    p->state = TEMPEST_CHAN_ST_INPUTTING;
    if (keep) {
        p->here = 1;
        p->here_addr = size ? next : 0;
        p->here_size = size;
    }
    if (p->waiting) {
        chan_send_go(s, p);
    } else {
        chan_offer(s, p);
    }
    b->result = 0;
    return TEMPEST_CMD_SUCCESS;
}

/*
 * OUTPUT_INPUT (1.16): OUTPUT ARG2/ARG3, and the INPUT of ARG4/ARG5 (the
 * next buffer) kept on the port (then_in) until the output is done: a
 * turn of a ping-pong in one instruction and one wait.  RESULT 1: the
 * output is done already (a companion on this node) and no input was
 * started; 0: TEMPEST_CHAN_EV_INPUT (or what ends that INPUT) ends it,
 * or TEMPEST_CHAN_EV_OUTPUT when the output fails (B why) or the input
 * could not start (B 0, C why: chan_then_input).
 */
static uint32_t chan_op_output_input(TempestNCState *s, TempestCmdBank *b,
                                     TempestChanPort *p)
{
    uint32_t st;

    if (p->state != TEMPEST_CHAN_ST_IDLE || p->presend) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!chan_buffer_ok(s, b->arg[4], b->arg[5])) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    st = chan_op_output(s, b, p);
    if (st != TEMPEST_CMD_SUCCESS || b->result == 1) {
        return st;
    }
    p->then_in = 1;
    p->then_addr = b->arg[5] ? b->arg[4] : 0;
    p->then_size = b->arg[5];
    p->then_reason = 0;
    return TEMPEST_CMD_SUCCESS;
}

/*
 * The output of an OUTPUT_INPUT is done (p IDLE again): its INPUT now,
 * as the instruction would do it.  True if it started (or found the data
 * there: the INPUT event then, as if it had come); false, the reason in
 * p->then_reason, if it was refused.
 */
static bool chan_then_input(TempestNCState *s, TempestChanPort *p)
{
    TempestCmdBank in = {
        .arg = { TEMPEST_CHAN_OP_INPUT, chan_id(s, p), p->then_addr,
                 p->then_size },
    };
    uint64_t was = p->buf;
    bool ok = chan_op_input(s, &in, p, false) == TEMPEST_CMD_SUCCESS;

    trace_tempest_nc_chan_then_input(s->node_id, chan_id(s, p), p->then_addr,
                                     p->then_size, ok ? 0 : in.reason);
    chan_rec(s, "then input", chan_id(s, p), ok ? 0 : in.reason, 0, 0, 0);
    p->then_reason = ok ? 0 : in.reason;
    if (ok && (in.result & TEMPEST_CHAN_PRESENT)) {
        chan_event(s, p, TEMPEST_CHAN_EV_INPUT, (uint32_t)in.result, was);
    }
    return ok;
}

/* The paper's port output (3.2, stage 1): port ARG2 over port p. */
static uint32_t chan_op_output_port(TempestNCState *s, TempestCmdBank *b,
                                    TempestChanPort *t)
{
    TempestChanPort *q = chan_port_of(s, b->arg[2]);

    if (!q || q == t) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_PORT);
    }
    if (t->state != TEMPEST_CHAN_ST_IDLE || t->presend || t->waiting ||
        t->comp == chan_id(s, q)) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (t->closed) {
        return chan_fail(s, b, TEMPEST_CMD_E_CLOSED);
    }
    if (t->comp == TEMPEST_CHAN_NONE) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if ((q->state != TEMPEST_CHAN_ST_IDLE &&
         q->state != TEMPEST_CHAN_ST_BUFFERFULL) || q->presend) {
        /* Moving with a pre-send out would lose it (docs/chan.rst). */
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (q->incoming || !chan_withdraw(s, q)) {
        /* Its long DATA lands soon, or its offer goes: then it can go. */
        return TEMPEST_CMD_RETRY;
    }
    if (TEMPEST_CHAN_ID_NODE(t->comp) != s->node_id &&
        !tempest_fabric_peer_up(s->fabric, TEMPEST_CHAN_ID_NODE(t->comp))) {
        return chan_fail(s, b, TEMPEST_CMD_E_PEER_DOWN);
    }
    chan_stage1(s, t, q);
    b->result = 0;
    return TEMPEST_CMD_SUCCESS;
}

/* The paper's port input (3.2, stage 2): ARG2/ARG3 the new port's buffer. */
static uint32_t chan_op_input_port(TempestNCState *s, TempestCmdBank *b,
                                   TempestChanPort *t)
{
    uint64_t buf = b->arg[2], size = b->arg[3];
    uint32_t st;

    if ((t->state != TEMPEST_CHAN_ST_IDLE &&
         t->state != TEMPEST_CHAN_ST_BUFFERFULL) ||
        (t->presend && !t->presend_done)) {
        return chan_fail(s, b, TEMPEST_CMD_E_PORT_STATE);
    }
    if (!chan_buffer_ok(s, buf, size)) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_ADDR);
    }
    if (t->waiting) {
        return chan_fail(s, b, TEMPEST_CMD_E_CHAN_TYPE);
    }
    if (t->state == TEMPEST_CHAN_ST_BUFFERFULL) {
        if (!t->held_port) {
            return chan_fail(s, b, TEMPEST_CMD_E_CHAN_TYPE);
        }
        st = chan_stage2(s, t, buf, size);
        if (st) {
            return chan_fail(s, b, st);
        }
        b->result = 0;
        return TEMPEST_CMD_SUCCESS;
    }
    if (t->closed || t->comp == TEMPEST_CHAN_NONE) {
        return chan_fail(s, b, t->closed ? TEMPEST_CMD_E_CLOSED :
                         TEMPEST_CMD_E_PORT_STATE);
    }
    t->next = size ? buf : 0;
    t->nextsize = size;
    t->in_port = 1;
    t->state = TEMPEST_CHAN_ST_INPUTTING;
    b->result = 0;
    return TEMPEST_CMD_SUCCESS;
}

static uint32_t chan_cmd(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t op = b->arg[0];
    TempestChanPort *p;
    uint32_t st;

    if (op == TEMPEST_CHAN_OP_ALLOC) {
        st = chan_op_alloc(s, b);
        goto out;
    }
    if (op < TEMPEST_CHAN_OP_CONNECT || op > TEMPEST_CHAN_OP_OUTPUT_INPUT) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_CHAN_OP);
    }
    p = chan_port_of(s, b->arg[1]);
    if (!p) {
        return chan_fail(s, b, TEMPEST_CMD_E_BAD_PORT);
    }
    switch (op) {
    case TEMPEST_CHAN_OP_CONNECT:
        st = chan_op_connect(s, b, p);
        break;
    case TEMPEST_CHAN_OP_FREE:
        st = chan_op_free(s, b, p);
        break;
    case TEMPEST_CHAN_OP_BUFFER:
        st = chan_op_buffer(s, b, p);
        break;
    case TEMPEST_CHAN_OP_OUTPUTDATA:
        st = chan_op_outputdata(s, b, p);
        break;
    case TEMPEST_CHAN_OP_OUTPUT:
        st = chan_op_output(s, b, p);
        break;
    case TEMPEST_CHAN_OP_INPUT:
    case TEMPEST_CHAN_OP_INPUT_HERE:
        st = chan_op_input(s, b, p, op == TEMPEST_CHAN_OP_INPUT_HERE);
        break;
    case TEMPEST_CHAN_OP_OUTPUT_INPUT:
        st = chan_op_output_input(s, b, p);
        break;
    case TEMPEST_CHAN_OP_OUTPUT_PORT:
        st = chan_op_output_port(s, b, p);
        break;
    case TEMPEST_CHAN_OP_INPUT_PORT:
        st = chan_op_input_port(s, b, p);
        break;
    default: /* TEMPEST_CHAN_OP_STATE */
        b->result = p->state |
                    (p->presend && !p->presend_done ?
                     TEMPEST_CHAN_ST_PRESENT : 0) |
                    (p->held_port ? TEMPEST_CHAN_ST_HELD_PORT : 0) |
                    (p->waiting ? TEMPEST_CHAN_ST_WAITING : 0) |
                    (uint64_t)p->comp << 32;
        st = TEMPEST_CMD_SUCCESS;
        break;
    }
out:
    if (st == TEMPEST_CMD_SUCCESS) {
        trace_tempest_nc_chan_cmd(s->node_id, op, b->arg[1], 0);
        if (op != TEMPEST_CHAN_OP_STATE) {      /* polled: would flood it */
            chan_rec(s, "cmd", op, 0, 0, 0, b->arg[1]);
        }
    }
    return st;
}

static const TempestNCCommand chan_commands[] = {
    { TEMPEST_CMD_CHAN, chan_cmd },
    { 0, NULL }
};

static const TempestNCHooks chan_hooks = {
    .name = "chan",
    .commands = chan_commands,
    .chan = chan_fabric_frame,
    .peer_down = chan_peer_down,
};

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static void chan_reset(TempestNCState *s)
{
    memset(s->chan_port, 0, sizeof(s->chan_port));
    s->chan_used = 0;
    s->chan_next = 0;
    s->chan_dropped = 0;
    s->chan_moves = 0;
    s->chan_forwards = 0;
    s->chan_resent = 0;
    s->chan_migdrops = 0;
}

/* ------------------------------------------------------------------ */
/* When a node fails: the flight recorder and the port table, printed  */
/* ------------------------------------------------------------------ */

static void chan_rec_print(const TempestChanRec *r, int64_t ns, int64_t end)
{
    double us = (ns - end) / 1e3;

    if (!strcmp(r->what, "tx")) {
        fprintf(stderr, "  %10.1f tx kind %u to 0x%x from 0x%x number %u "
                "len %" PRIu64 "\n", us, r->a, r->b, r->c, r->d, r->e);
    } else if (!strcmp(r->what, "rx")) {
        fprintf(stderr, "  %10.1f rx from node %u kind %u to 0x%x from 0x%x "
                "number %u len %u\n", us, (uint32_t)(r->e >> 32), r->a, r->b,
                r->c, r->d, (uint32_t)r->e);
    } else if (!strcmp(r->what, "cmd") || !strcmp(r->what, "refused")) {
        fprintf(stderr, "  %10.1f %s instruction %u port 0x%" PRIx64
                " reason %u\n", us, r->what, r->a, r->e, r->b);
    } else if (!strcmp(r->what, "event")) {
        fprintf(stderr, "  %10.1f event %u port 0x%x value 0x%" PRIx64
                ", CQ tail %u, %u queued\n", us, r->b, r->a, r->e, r->c,
                r->d);
    } else {
        /* A drop (a: the peer) or an offer's step (a: the port). */
        fprintf(stderr, "  %10.1f %s: 0x%x 0x%x 0x%x %u\n", us, r->what,
                r->a, r->b, r->c, r->d);
    }
}

static void chan_port_print(TempestNCState *s, TempestChanPort *p)
{
    fprintf(stderr, "  port 0x%x state %u comp 0x%x tx %u rx %u presend %u "
            "done %u status %u len %u go %u incoming %u in_len %u "
            "waiting %u held %u granted %u withdrawing %u ready %u "
            "(0x%x number %u) here %u out_port %u cargo %u via %u "
            "in_port %u held_port %u closed %u\n", chan_id(s, p), p->state,
            p->comp, p->tx, p->rx, p->presend, p->presend_done,
            p->out_status, p->out_len, p->go, p->incoming, p->in_len,
            p->waiting, p->held_len, p->granted, p->withdrawing, p->ready,
            p->ready_comp, p->ready_num, p->here, p->out_port, p->cargo,
            p->via, p->in_port, p->held_port, p->closed);
}

/*
 * QEMU shuts down: if the node failed (its guest exited with a status
 * other than 0, or a signal ended it: the launcher stopping a cluster
 * one of whose nodes failed or timed out) after using channels, print
 * the recorder and every port in use to the node's log.
 */
static void chan_at_shutdown(Notifier *n, void *data)
{
    TempestNCState *s = container_of(n, TempestNCState, chan_shutdown);
    ShutdownCause cause = *(ShutdownCause *)data;
    uint32_t first, count = MIN(s->chan_rec_next, TEMPEST_CHAN_REC);
    int64_t end = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    int64_t end_ticks = cpu_get_host_ticks();

    if (!s->chan_rec_next ||
        (cause == SHUTDOWN_CAUSE_GUEST_SHUTDOWN ? s->exit_status == 0 :
         cause != SHUTDOWN_CAUSE_HOST_SIGNAL)) {
        return;
    }
    fprintf(stderr, "tempest-nc: node %u: the channel controller's last %u "
            "of %u happenings (oldest first, us before the end, which was "
            "at %.6f s of the host's monotonic clock):\n", s->node_id, count,
            s->chan_rec_next, end / 1e9);
    first = s->chan_rec_next - count;
    for (uint32_t i = 0; i < count; i++) {
        const TempestChanRec *r = &s->chan_rec[(first + i) %
                                               TEMPEST_CHAN_REC];

        chan_rec_print(r, chan_rec_ns(s, r->ticks, end, end_ticks), end);
    }
    fprintf(stderr, "tempest-nc: node %u: %u ports in use, %u frames "
            "dropped:\n", s->node_id, s->chan_used, s->chan_dropped);
    for (unsigned i = 0; i < TEMPEST_CHAN_PORTS; i++) {
        if (s->chan_port[i].state != TEMPEST_CHAN_ST_EMPTY) {
            chan_port_print(s, &s->chan_port[i]);
        }
    }
}

static bool chan_realize(TempestNCState *s, Error **errp)
{
    chan_reset(s);
    s->chan_rec_ns0 = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    s->chan_rec_ticks0 = cpu_get_host_ticks();
    tempest_nc_register(s, &chan_hooks);
    s->chan_shutdown.notify = chan_at_shutdown;
    qemu_register_shutdown_notifier(&s->chan_shutdown);
    s->xfer_chan_sent = chan_xfer_sent;
    s->xfer_chan_recv = chan_xfer_recv;
    s->xfer_chan_awaited = chan_xfer_awaited;
    return true;
}

static void chan_unrealize(TempestNCState *s)
{
    notifier_remove(&s->chan_shutdown);
    s->xfer_chan_sent = NULL;
    s->xfer_chan_recv = NULL;
    s->xfer_chan_awaited = NULL;
}

static bool chan_vmstate_needed(void *opaque)
{
    TempestNCState *s = opaque;

    return s->chan_used || s->chan_dropped || s->chan_moves ||
           s->chan_forwards || s->chan_resent || s->chan_migdrops;
}

/*
 * What is wrong with port @p of a loaded state, or NULL: every entry must
 * be one the device can make, with buffers in RAM; any other (a damaged
 * or forged file) is refused, naming the port and the rule, so that a
 * refused restore says why.
 */
static const char *chan_port_load_error(TempestNCState *s,
                                        TempestChanPort *p)
{
    if (p->state > TEMPEST_CHAN_ST_CONFIRMING ||
        p->via >= TEMPEST_CHAN_PORTS || p->cargo >= TEMPEST_CHAN_PORTS) {
        return "state or port index out of range";
    }
    if (p->state == TEMPEST_CHAN_ST_MIGRATING &&
        s->chan_port[p->via].state != TEMPEST_CHAN_ST_OUTPUTTING) {
        return "migrating, but the port it goes over is not outputting";
    }
    if (p->out_port &&
        s->chan_port[p->cargo].state != TEMPEST_CHAN_ST_MIGRATING) {
        return "outputs a port that is not migrating";
    }
    if (p->comp != TEMPEST_CHAN_NONE &&
        (TEMPEST_CHAN_ID_NODE(p->comp) >= s->num_nodes ||
         TEMPEST_CHAN_ID_INDEX(p->comp) >= TEMPEST_CHAN_PORTS)) {
        return "companion outside the cluster";
    }
    if (!chan_buffer_ok(s, p->buf, p->bufsize) ||
        !chan_buffer_ok(s, p->next, p->nextsize) ||
        p->held_len > p->bufsize ||
        (p->waiting ? p->in_len > TEMPEST_CHAN_MAX_DATA :
         p->in_len > p->bufsize)) {
        return "buffer outside RAM, or data longer than it";
    }
    /*
     * An offer is out in IDLE and INPUTTING, and in OUTPUTTING (an IDLE
     * port with its buffer offered outputs: a ping-pong on one port); any
     * DATA that comes ends it, a move first withdraws it.
     */
    if (p->granted && ((p->state != TEMPEST_CHAN_ST_IDLE &&
                        p->state != TEMPEST_CHAN_ST_INPUTTING &&
                        p->state != TEMPEST_CHAN_ST_OUTPUTTING) ||
                       p->incoming || p->waiting)) {
        return "buffer offered in a state that cannot offer it";
    }
    if (p->withdrawing && !p->granted) {
        return "withdrawing an offer not made";
    }
    if (p->here && (p->state != TEMPEST_CHAN_ST_INPUTTING || p->in_port ||
                    !chan_buffer_ok(s, p->here_addr, p->here_size))) {
        return "INPUT_HERE outside an input";
    }
    if (p->waiting && (p->state != TEMPEST_CHAN_ST_IDLE || p->incoming)) {
        return "long data waiting at the sender in a state that cannot "
               "ask for it";
    }
    if (p->out_len > TEMPEST_CHAN_MAX_DATA ||
        /* A pre-send's data is read again at a resend (WIRE). */
        (p->presend && !p->out_port &&
         !chan_buffer_ok(s, p->out_addr, p->out_len))) {
        return "pre-send outside RAM";
    }
    if (p->then_in && (p->state != TEMPEST_CHAN_ST_OUTPUTTING ||
                       p->out_port ||
                       !chan_buffer_ok(s, p->then_addr, p->then_size))) {
        return "OUTPUT_INPUT's input outside an output";
    }
    return NULL;
}

static int chan_vmstate_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;
    uint32_t used = 0;
    const char *why;

    if (s->chan_next >= TEMPEST_CHAN_PORTS) {
        error_report("tempest-nc: node %u: channel state: next port %u "
                     "out of range", s->node_id, (unsigned)s->chan_next);
        return -EINVAL;
    }
    for (unsigned i = 0; i < TEMPEST_CHAN_PORTS; i++) {
        TempestChanPort *p = &s->chan_port[i];

        if (p->state == TEMPEST_CHAN_ST_EMPTY) {
            continue;
        }
        used++;
        why = chan_port_load_error(s, p);
        if (why) {
            error_report("tempest-nc: node %u: channel port %u (state %u, "
                         "granted %u incoming %u waiting %u here %u "
                         "presend %u then_in %u): %s", s->node_id, i,
                         (unsigned)p->state, (unsigned)p->granted,
                         (unsigned)p->incoming, (unsigned)p->waiting,
                         (unsigned)p->here, (unsigned)p->presend,
                         (unsigned)p->then_in, why);
            return -EINVAL;
        }
    }
    if (used != s->chan_used) {
        error_report("tempest-nc: node %u: channel state: %u ports in use, "
                     "%u counted", s->node_id, used,
                     (unsigned)s->chan_used);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_tempest_chan_port = {
    .name = TYPE_TEMPEST_NC "/chan-port",
    .version_id = 6,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(state, TempestChanPort),
        VMSTATE_UINT32(comp, TempestChanPort),
        VMSTATE_UINT32(closed, TempestChanPort),
        VMSTATE_UINT32(presend, TempestChanPort),
        VMSTATE_UINT32(presend_done, TempestChanPort),
        VMSTATE_UINT32(out_status, TempestChanPort),
        VMSTATE_UINT32(out_len, TempestChanPort),
        VMSTATE_UINT32(held_len, TempestChanPort),
        VMSTATE_UINT32(incoming, TempestChanPort),
        VMSTATE_UINT32(in_len, TempestChanPort),
        VMSTATE_UINT32(go, TempestChanPort),
        VMSTATE_UINT32(tx, TempestChanPort),
        VMSTATE_UINT32(rx, TempestChanPort),
        VMSTATE_UINT64(out_addr, TempestChanPort),
        VMSTATE_UINT64(buf, TempestChanPort),
        VMSTATE_UINT64(bufsize, TempestChanPort),
        VMSTATE_UINT64(next, TempestChanPort),
        VMSTATE_UINT64(nextsize, TempestChanPort),
        VMSTATE_UINT32_V(out_port, TempestChanPort, 2),
        VMSTATE_UINT32_V(cargo, TempestChanPort, 2),
        VMSTATE_UINT32_V(via, TempestChanPort, 2),
        VMSTATE_UINT32_V(in_port, TempestChanPort, 2),
        VMSTATE_UINT32_V(held_port, TempestChanPort, 2),
        VMSTATE_UINT32_V(held_origin, TempestChanPort, 2),
        VMSTATE_UINT32_V(held_comp, TempestChanPort, 2),
        VMSTATE_UINT32_V(held_tx, TempestChanPort, 2),
        VMSTATE_UINT32_V(held_rx, TempestChanPort, 2),
        VMSTATE_UINT32_V(result, TempestChanPort, 2),
        VMSTATE_UINT32_V(granted, TempestChanPort, 3),
        VMSTATE_UINT32_V(ready, TempestChanPort, 3),
        VMSTATE_UINT32_V(ready_comp, TempestChanPort, 3),
        VMSTATE_UINT32_V(ready_num, TempestChanPort, 3),
        VMSTATE_UINT64_V(ready_addr, TempestChanPort, 3),
        VMSTATE_UINT64_V(ready_size, TempestChanPort, 3),
        VMSTATE_UINT32_V(last_long, TempestChanPort, 3),
        VMSTATE_UINT32_V(waiting, TempestChanPort, 4),
        VMSTATE_UINT32_V(withdrawing, TempestChanPort, 5),
        VMSTATE_UINT32_V(here, TempestChanPort, 5),
        VMSTATE_UINT64_V(here_addr, TempestChanPort, 5),
        VMSTATE_UINT64_V(here_size, TempestChanPort, 5),
        VMSTATE_UINT32_V(then_in, TempestChanPort, 6),
        VMSTATE_UINT32_V(then_reason, TempestChanPort, 6),
        VMSTATE_UINT64_V(then_addr, TempestChanPort, 6),
        VMSTATE_UINT64_V(then_size, TempestChanPort, 6),
        VMSTATE_END_OF_LIST()
    }
};

/* The channel controller: its port table and counters. */
const VMStateDescription vmstate_tempest_nc_chan = {
    .name = TYPE_TEMPEST_NC "/chan",
    .version_id = 6,
    .minimum_version_id = 1,
    .needed = chan_vmstate_needed,
    .post_load = chan_vmstate_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(chan_port, TempestNCState, TEMPEST_CHAN_PORTS,
                             1, vmstate_tempest_chan_port, TempestChanPort),
        VMSTATE_UINT32(chan_used, TempestNCState),
        VMSTATE_UINT32(chan_next, TempestNCState),
        VMSTATE_UINT32(chan_dropped, TempestNCState),
        VMSTATE_UINT32_V(chan_moves, TempestNCState, 2),
        VMSTATE_UINT32_V(chan_forwards, TempestNCState, 2),
        VMSTATE_UINT32_V(chan_resent, TempestNCState, 2),
        VMSTATE_UINT32_V(chan_migdrops, TempestNCState, 3),
        VMSTATE_END_OF_LIST()
    }
};

const TempestNCEngine tempest_nc_chan_engine = {
    .name = "chan",
    .realize = chan_realize,
    .unrealize = chan_unrealize,
    .reset = chan_reset,
};
