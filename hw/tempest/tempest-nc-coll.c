/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the control network (Strata's CM-5 control
 * network, built by the node controllers on the fabric).
 *
 * Collectives climb a k-ary combining tree (node i's parent is
 * (i - 1) / k): each node waits for its own contribution and its children's,
 * sends the gathered contributions of its subtree to its parent in one
 * frame, and the root computes every node's result (coll-math.h) and sends
 * each subtree its results back down.  A barrier on 16 nodes with k = 16
 * costs two network hops, whatever the guest does meanwhile.
 *
 * Broadcasts go to the root, which orders them and sends them down the
 * tree; the asynchronous global OR keeps every node's bit at the root,
 * which tells everyone when the OR changes.  All of this runs in QEMU's
 * main loop; frames are checked against the tree before they are used.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "fabric-proto.h"
#include "coll-math.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* The tree                                                            */
/* ------------------------------------------------------------------ */

static unsigned coll_parent(TempestNCState *s, unsigned i)
{
    return (i - 1) / s->coll_fanout;
}

static unsigned coll_first_child(TempestNCState *s, unsigned i)
{
    return i * s->coll_fanout + 1;
}

static unsigned coll_nchildren(TempestNCState *s, unsigned i)
{
    unsigned first = coll_first_child(s, i);

    return first >= s->num_nodes ? 0 :
           MIN(s->coll_fanout, s->num_nodes - first);
}

static bool coll_in_subtree(TempestNCState *s, unsigned top, unsigned node)
{
    while (node > top) {
        node = coll_parent(s, node);
    }
    return node == top;
}

static bool coll_is_child(TempestNCState *s, unsigned peer)
{
    return peer > 0 && coll_parent(s, peer) == s->node_id;
}

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

typedef struct CollHeader {
    uint32_t seq;
    uint8_t dir, kind, fn, variant;
    uint16_t lanes, error;
    uint32_t count;
} CollHeader;

static GByteArray *coll_frame(const CollHeader *h)
{
    GByteArray *b = g_byte_array_sized_new(FABRIC_COLL_HDR + 64);
    uint8_t hdr[FABRIC_COLL_HDR];

    fabric_st32(hdr, h->seq);
    hdr[4] = h->dir;
    hdr[5] = h->kind;
    hdr[6] = h->fn;
    hdr[7] = h->variant;
    fabric_st16(hdr + 8, h->lanes);
    fabric_st16(hdr + 10, h->error);
    fabric_st32(hdr + 12, h->count);
    g_byte_array_append(b, hdr, sizeof(hdr));
    return b;
}

static void coll_put_entry(GByteArray *b, uint32_t node, uint32_t seg,
                           const uint64_t *lanes, unsigned n)
{
    uint8_t e[FABRIC_COLL_ENTRY(TEMPEST_COLL_MAX_LANES)];

    fabric_st32(e, node);
    fabric_st32(e + 4, seg);
    for (unsigned l = 0; l < n; l++) {
        fabric_st64(e + 8 + 8 * l, lanes[l]);
    }
    g_byte_array_append(b, e, FABRIC_COLL_ENTRY(n));
}

/* Send b to peer, fixing its entry count; frees b. */
static void coll_send(TempestNCState *s, unsigned peer, GByteArray *b,
                      uint32_t count)
{
    fabric_st32(b->data + 12, count);
    tempest_fabric_send_coll(s->fabric, peer, b->data, b->len);
    g_byte_array_free(b, true);
}

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

static TempestCollRound *coll_round(TempestNCState *s, uint32_t seq)
{
    TempestCollRound *r = &s->coll_round[seq % TEMPEST_COLL_ROUNDS];

    if (!r->used) {
        memset(r, 0, sizeof(*r));
        r->used = true;
        r->seq = seq;
        r->entries = g_byte_array_new();
        r->nodes_in = bitmap_new(s->num_nodes);
        r->children = bitmap_new(s->num_nodes);
    }
    return r->seq == seq ? r : NULL;
}

static void coll_round_free(TempestCollRound *r)
{
    if (r->entries) {
        g_byte_array_free(r->entries, true);
    }
    g_free(r->nodes_in);
    g_free(r->children);
    memset(r, 0, sizeof(*r));
}

static void coll_rounds_free(TempestNCState *s)
{
    for (int i = 0; i < TEMPEST_COLL_ROUNDS; i++) {
        coll_round_free(&s->coll_round[i]);
    }
}

/*
 * Take a contribution's header: the first one sets it, others must match.
 * Returns whether its entries may join the round's: only entries of the
 * round's lane count do, so every entry of a frame has one size (nodes
 * that started with different lane counts get a mismatch, never a frame
 * whose entries are of two sizes).
 */
static bool coll_take_header(TempestCollRound *r, const CollHeader *h)
{
    if (!r->have_header) {
        r->have_header = true;
        r->kind = h->kind;
        r->fn = h->fn;
        r->variant = h->variant;
        r->lanes = h->lanes;
    } else if (r->kind != h->kind || r->fn != h->fn ||
               r->variant != h->variant || r->lanes != h->lanes) {
        r->error = TEMPEST_COLL_E_MISMATCH;
    }
    if (h->error && !r->error) {
        r->error = h->error;
    }
    return r->lanes == h->lanes;
}

static void coll_finish(TempestNCState *s, uint32_t error)
{
    trace_tempest_nc_coll_done(s->node_id, s->coll_seq_done, error);
    s->coll_status = error ? TEMPEST_COLL_ST_ERROR : TEMPEST_COLL_ST_DONE;
    s->coll_error = error;
    s->coll_seq_done++;
    if (!s->coll_wait_quiet) {
        /* (A COLL_WAIT read that sees it end returns it instead.) */
        tempest_nc_raise(s, TEMPEST_NC_IRQ_COLL);
    }
}

/*
 * Results have come down for our pending collective: keep ours, pass each
 * child the entries of its subtree.  entries: count entries of h->lanes.
 */
/*
 * Do the results in entries (count entries of h->lanes lanes) answer our
 * pending collective?  Fills out[] (every slot written) and *nout.  A
 * frame that does not is a mismatch, whoever sent it: the collective
 * ends with an error on this node and in its subtree, never reads past
 * the frame and never passes on bytes nobody sent.
 */
static bool coll_results(TempestNCState *s, const CollHeader *h,
                         const uint8_t *entries, uint64_t *out,
                         unsigned *nout)
{
    size_t esz = FABRIC_COLL_ENTRY(h->lanes);
    bool shared = h->variant == TEMPEST_COLL_REDUCE;

    if (h->kind != s->coll_kind || h->fn != s->coll_fn ||
        h->variant != s->coll_variant || h->lanes != s->coll_lanes) {
        return false;
    }
    if (h->kind == TEMPEST_COLL_ALLGATHER) {
        g_autofree unsigned long *seen = bitmap_new(s->num_nodes);

        if (h->count != s->num_nodes || h->lanes != 1) {
            return false;
        }
        for (uint32_t i = 0; i < h->count; i++) {
            const uint8_t *e = entries + i * esz;
            uint32_t node = fabric_ld32(e);

            if (node >= s->num_nodes || test_and_set_bit(node, seen)) {
                return false;
            }
            out[node] = fabric_ld64(e + 8);
        }
        *nout = s->num_nodes;
        return true;
    }
    for (uint32_t i = 0; i < h->count; i++) {
        const uint8_t *e = entries + i * esz;

        if (shared || fabric_ld32(e) == s->node_id) {
            for (unsigned l = 0; l < h->lanes; l++) {
                out[l] = fabric_ld64(e + 8 + 8 * l);
            }
            *nout = h->lanes;
            return true;
        }
    }
    return false;
}

/*
 * A vector collective's @nout results into the guest's coll_dest, checked
 * against RAM here as at COLL_START: coll_dest may come from a restore.
 */
static bool coll_dest_write(TempestNCState *s, const uint64_t *out,
                            unsigned nout)
{
    return tempest_nc_in_ram(s, s->coll_dest, nout * 8) &&
           tempest_nc_dma_write(s, s->coll_dest, out, nout * 8);
}

static void coll_down(TempestNCState *s, const CollHeader *h,
                      const uint8_t *entries)
{
    size_t esz = FABRIC_COLL_ENTRY(h->lanes);
    bool shared = h->variant == TEMPEST_COLL_REDUCE ||
                  h->kind == TEMPEST_COLL_ALLGATHER;
    uint64_t out[TEMPEST_MAX_NODES];
    unsigned nout = 0;
    uint32_t error = h->error;
    unsigned first = coll_first_child(s, s->node_id);
    unsigned n = coll_nchildren(s, s->node_id);
    bool shm = h->dir == FABRIC_COLL_DOWN_SHM;

    if (!error && !coll_results(s, h, entries, out, &nout)) {
        error = TEMPEST_COLL_E_MISMATCH;
    }
    for (unsigned c = first; c < first + n; c++) {
        CollHeader ch = *h;
        GByteArray *b;
        uint32_t count = 0;

        ch.error = error;
        b = coll_frame(&ch);
        for (uint32_t i = 0; i < h->count && !error; i++) {
            const uint8_t *e = entries + i * esz;

            if (shared || coll_in_subtree(s, c, fabric_ld32(e))) {
                g_byte_array_append(b, e, esz);
                count++;
            }
        }
        coll_send(s, c, b, count);
    }

    if (!error) {
        if (s->coll_vector) {
            if (!coll_dest_write(s, out, nout)) {
                error = TEMPEST_COLL_E_DMA;
            }
        } else {
            s->coll_result = out[0];
        }
    }
    coll_round_free(&s->coll_round[h->seq % TEMPEST_COLL_ROUNDS]);
    coll_finish(s, error);
    if (shm && !s->coll_shm && tempest_nc_coll_shm_able(s)) {
        /*
         * Every node has the shared area: the next ones combine there,
         * and broadcasts come by its ring (every tree word came before
         * this frame, on the same links).
         */
        s->coll_shm = true;
        s->coll_shm_base = s->coll_seq_done;
        tempest_nc_bring_start(s);
    }
}

/* The root has everyone's contribution: compute, and send results down. */
static void coll_root(TempestNCState *s, TempestCollRound *r)
{
    unsigned nodes = s->num_nodes, lanes = r->lanes;
    size_t esz = FABRIC_COLL_ENTRY(lanes);
    CollHeader h = {
        .seq = r->seq, .dir = FABRIC_COLL_DOWN, .kind = r->kind,
        .fn = r->fn, .variant = r->variant, .lanes = lanes,
        .error = r->error,
    };
    bool shm = !r->error && r->children_shm == coll_nchildren(s, 0) &&
               tempest_nc_coll_shm_able(s);
    g_autofree uint64_t *in = g_new0(uint64_t, nodes * lanes);
    g_autofree uint64_t *out = g_new0(uint64_t, nodes * lanes);
    g_autofree uint8_t *seg = g_new0(uint8_t, nodes);
    g_autofree bool *seen = g_new0(bool, nodes);
    GByteArray *b;

    for (uint32_t i = 0; i < r->count; i++) {
        const uint8_t *e = r->entries->data + i * esz;
        uint32_t node = fabric_ld32(e);

        if (node >= nodes || seen[node]) {
            h.error = TEMPEST_COLL_E_MISMATCH;
            break;
        }
        seen[node] = true;
        seg[node] = fabric_ld32(e + 4);
        for (unsigned l = 0; l < lanes; l++) {
            in[node * lanes + l] = fabric_ld64(e + 8 + 8 * l);
        }
    }
    if (r->count != nodes && !h.error) {
        h.error = TEMPEST_COLL_E_MISMATCH;
    }

    b = coll_frame(&h);
    h.count = 0;
    if (!h.error && h.kind == TEMPEST_COLL_ALLGATHER) {
        for (unsigned i = 0; i < nodes; i++) {
            coll_put_entry(b, i, 0, &in[i * lanes], lanes);
        }
        h.count = nodes;
    } else if (!h.error) {
        coll_combine(h.fn, h.variant, nodes, lanes, seg, in, out);
        if (h.variant == TEMPEST_COLL_REDUCE) {
            coll_put_entry(b, 0, 0, out, lanes);
            h.count = 1;
        } else {
            for (unsigned i = 0; i < nodes; i++) {
                coll_put_entry(b, i, seg[i], &out[i * lanes], lanes);
            }
            h.count = nodes;
        }
    }
    fabric_st32(b->data + 12, h.count);
    if (shm && !h.error) {
        h.dir = FABRIC_COLL_DOWN_SHM;
        if (!s->coll_shm) {
            tempest_nc_bring_open(s);
        }
    }
    coll_down(s, &h, b->data + FABRIC_COLL_HDR);
    g_byte_array_free(b, true);
}

/* Our subtree is complete when we and all our children have reported. */
static void coll_try_complete(TempestNCState *s, TempestCollRound *r)
{
    CollHeader h;
    GByteArray *b;

    if (!r->started || r->sent ||
        r->children_in < coll_nchildren(s, s->node_id)) {
        return;
    }
    if (s->node_id == 0) {
        coll_root(s, r);
        return;
    }
    r->sent = true;
    h = (CollHeader) {
        .seq = r->seq,
        .dir = r->children_shm == coll_nchildren(s, s->node_id) &&
               tempest_nc_coll_shm_able(s) ? FABRIC_COLL_UP_SHM :
                                             FABRIC_COLL_UP,
        .kind = r->kind, .fn = r->fn,
        .variant = r->variant, .lanes = r->lanes, .error = r->error,
    };
    b = coll_frame(&h);
    g_byte_array_append(b, r->entries->data, r->entries->len);
    coll_send(s, coll_parent(s, s->node_id), b, r->count);
}

static uint32_t coll_cmd_start(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t kind = b->arg[0], fn = b->arg[1] & 0xff;
    uint64_t variant = (b->arg[1] >> 8) & 0xff, lanes = b->arg[3];
    uint64_t seg = b->arg[5], dest = b->arg[4];
    uint64_t vals[TEMPEST_COLL_MAX_LANES];
    unsigned n = lanes ? lanes : 1, out_bytes;
    TempestCollRound *r;
    CollHeader h;

    if (s->coll_status == TEMPEST_COLL_ST_PENDING) {
        b->reason = TEMPEST_CMD_E_BUSY;
        return TEMPEST_CMD_FAIL;
    }
    if ((kind != TEMPEST_COLL_COMBINE && kind != TEMPEST_COLL_ALLGATHER) ||
        fn >= TEMPEST_COLL_NUM_FNS || variant > TEMPEST_COLL_BACKSCAN ||
        lanes > TEMPEST_COLL_MAX_LANES || seg > TEMPEST_SEG_ARRAY ||
        (kind == TEMPEST_COLL_ALLGATHER && lanes)) {
        b->reason = TEMPEST_CMD_E_BAD_COLL;
        return TEMPEST_CMD_FAIL;
    }
    if (tempest_fabric_state(s->fabric) != TEMPEST_FABRIC_READY ||
        s->peers_down) {
        b->reason = TEMPEST_CMD_E_NO_FABRIC;
        return TEMPEST_CMD_FAIL;
    }
    /* Check every address before anything happens. */
    out_bytes = kind == TEMPEST_COLL_ALLGATHER ? s->num_nodes * 8 :
                lanes * 8;
    if (out_bytes && !tempest_nc_in_ram(s, dest, out_bytes)) {
        b->reason = TEMPEST_CMD_E_BAD_ADDR;
        return TEMPEST_CMD_FAIL;
    }
    if (lanes) {
        uint64_t src = b->arg[2];

        if (!tempest_nc_in_ram(s, src, lanes * 8) ||
            !tempest_nc_dma_read(s, src, vals, lanes * 8)) {
            b->reason = TEMPEST_CMD_E_BAD_ADDR;
            return TEMPEST_CMD_FAIL;
        }
    } else {
        vals[0] = b->arg[2];
    }

    trace_tempest_nc_coll_start(s->node_id, s->coll_seq_done, kind, fn,
                                variant, lanes);
    s->coll_status = TEMPEST_COLL_ST_PENDING;
    s->coll_error = TEMPEST_COLL_E_NONE;
    s->coll_vector = out_bytes != 0;
    s->coll_dest = dest;
    s->coll_kind = kind;
    s->coll_fn = fn;
    s->coll_variant = variant;
    s->coll_lanes = n;
    b->result = s->coll_seq_done;
    if (s->coll_shm) {
        s->coll_shm_seg = seg;
        memcpy(s->coll_shm_vals, vals, n * 8);
        tempest_nc_coll_shm_arrive(s);
        return TEMPEST_CMD_SUCCESS;
    }
    r = coll_round(s, s->coll_seq_done);
    if (!r || r->started) {
        /* Frames from a tree we no longer trust: start over clean. */
        coll_round_free(&s->coll_round[s->coll_seq_done % TEMPEST_COLL_ROUNDS]);
        r = coll_round(s, s->coll_seq_done);
    }
    h = (CollHeader) { .kind = kind, .fn = fn, .variant = variant,
                       .lanes = n };
    r->started = true;
    if (coll_take_header(r, &h)) {
        coll_put_entry(r->entries, s->node_id, seg, vals, n);
        set_bit(s->node_id, r->nodes_in);
        r->count++;
    }
    coll_try_complete(s, r);
    return TEMPEST_CMD_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Broadcast and the asynchronous global OR                            */
/* ------------------------------------------------------------------ */

/*
 * Flow control, as the CM-5's control network held a broadcaster back:
 * the root sends a word down only while every node has room for it, so a
 * receive FIFO (TEMPEST_NC_BCAST_FIFO words) never overflows, however
 * slowly a node takes its words.  Every node counts the words that
 * passed it (bcast_seen) and those it has taken (bcast_taken: popped by
 * the guest, or its own, which it does not queue); the least taken in a
 * subtree goes up the tree (FABRIC_BCAST_CREDIT) each time it grew by
 * BCAST_CREDIT_BATCH, so the root's view lags by less than a batch per
 * level, well inside the FIFO; the root holds a broadcast (and so its
 * sender, whose BCAST stays pending) while bcast_issued minus the least
 * taken anywhere is a FIFO's worth.
 */
#define BCAST_CREDIT_BATCH  256

/* The least number of words any node of our subtree has taken. */
static uint64_t bcast_subtree_taken(TempestNCState *s)
{
    unsigned first = coll_first_child(s, s->node_id);
    unsigned n = coll_nchildren(s, s->node_id);
    uint64_t m = s->bcast_taken;

    for (unsigned c = first; c < first + n; c++) {
        m = MIN(m, s->bcast_child[c]);
    }
    return m;
}

static void bcast_issue(TempestNCState *s, unsigned src, uint64_t value);

/*
 * Node 0, the ring: the words it holds for room go into it, first come
 * first; while one stays held, B_HELD says so, and readers that take
 * words wake us to try again (Dekker: said, then one more try).
 */
static void bcast_ring_release(TempestNCState *s)
{
    TempestBcast *w;
    bool said = false;

    while ((w = QSIMPLEQ_FIRST(&s->bcast_held))) {
        if (tempest_nc_bring_push(s, w->src, w->value, true)) {
            QSIMPLEQ_REMOVE_HEAD(&s->bcast_held, next);
            s->bcast_holding[w->src] = false;
            g_free(w);
            continue;
        }
        if (said) {
            trace_tempest_nc_bring_hold(s->node_id, s->bcast_ring_next,
                                        s->bcast_taken);
            return;
        }
        tempest_nc_bring_hold(s, true);
        said = true;
    }
    tempest_nc_bring_hold(s, false);
}

/* What we (and our subtree) have taken moved: tell the parent, or send. */
static void bcast_credit(TempestNCState *s)
{
    uint64_t m = bcast_subtree_taken(s);
    TempestBcast *w;

    if (s->coll_shm) {
        tempest_nc_bring_taken(s);      /* for every writer's room */
    }
    if (s->node_id != 0) {
        if (m - s->bcast_reported >= BCAST_CREDIT_BATCH) {
            CollHeader h = { .dir = FABRIC_BCAST_CREDIT, .lanes = 1 };
            GByteArray *b = coll_frame(&h);

            coll_put_entry(b, s->node_id, 0, &m, 1);
            coll_send(s, coll_parent(s, s->node_id), b, 1);
            s->bcast_reported = m;
        }
        return;
    }
    /*
     * Not while the VM is stopped: a word that readers' counts let go
     * then, written into the shared ring with no frame, could miss the
     * saved state of a reader that had looked for the last time before
     * a checkpoint (docs/fabric.rst, "Nothing is sent while stopped").
     * coll_vm_state looks again at cont.
     */
    if (s->coll_shm) {
        /* B_HELD is set only while words are held: nothing to clear. */
        if (runstate_is_running() && !QSIMPLEQ_EMPTY(&s->bcast_held)) {
            bcast_ring_release(s);
        }
        return;
    }
    while ((w = QSIMPLEQ_FIRST(&s->bcast_held)) &&
           s->bcast_issued - m < TEMPEST_NC_BCAST_FIFO) {
        QSIMPLEQ_REMOVE_HEAD(&s->bcast_held, next);
        s->bcast_holding[w->src] = false;
        bcast_issue(s, w->src, w->value);
        g_free(w);
        m = bcast_subtree_taken(s);
    }
}

static void bcast_enqueue(TempestNCState *s, unsigned src, uint64_t value)
{
    TempestBcast *w;

    trace_tempest_nc_bcast(s->node_id, src, value);
    if (s->bcast_len >= TEMPEST_NC_BCAST_FIFO) {
        /* Cannot be, with flow control: a peer that is not one of ours. */
        s->bcast_lost++;
        return;
    }
    w = g_new(TempestBcast, 1);
    w->src = src;
    w->value = value;
    QSIMPLEQ_INSERT_TAIL(&s->bcastq, w, next);
    s->bcast_len++;
    tempest_nc_raise(s, TEMPEST_NC_IRQ_BCAST);
}

/*
 * Ours was delivered: IRQ_BCAST, for a guest waiting to send the next,
 * unless it went out inside the BCAST command that issued it (into the
 * ring and read back, or at the root): nobody can wait for a word whose
 * command has not returned, and the guest that takes interrupts paid one
 * for nothing after every such command (libstrata sharing libtempest's
 * handler: about 10 us a word on a two-node ping-pong of broadcasts).
 */
static void bcast_sent(TempestNCState *s)
{
    s->bcast_pending = false;
    s->bcast_sent++;
    if (!s->bcast_cmd_quiet) {
        tempest_nc_raise(s, TEMPEST_NC_IRQ_BCAST);
    }
}

/* A word passes this node (by the tree or the ring). */
static void bcast_arrive(TempestNCState *s, unsigned src, uint64_t value)
{
    s->bcast_seen++;
    if (src != s->node_id) {
        bcast_enqueue(s, src, value);
    } else {
        s->bcast_taken++;       /* our own: taken as it passes */
        bcast_credit(s);
    }
}

static void bcast_down(TempestNCState *s, unsigned src, uint64_t value)
{
    unsigned first = coll_first_child(s, s->node_id);
    unsigned n = coll_nchildren(s, s->node_id);
    CollHeader h = { .dir = FABRIC_BCAST_DOWN, .lanes = 1 };

    for (unsigned c = first; c < first + n; c++) {
        GByteArray *b = coll_frame(&h);

        coll_put_entry(b, src, 0, &value, 1);
        coll_send(s, c, b, 1);
    }
    bcast_arrive(s, src, value);
}

/*
 * A node reads the ring up to the last word written: each as if it came
 * down the tree; its own tells it that its broadcast went out (whoever
 * wrote it: no ACK comes for a word in the ring).  Node 0 reads it too,
 * since other nodes write their own words (layout version 6), and counts
 * them as issued: the tree's flow control after a restore starts from
 * its count.  A word the ring lost (its
 * slot holds a later one) is counted in BCAST_LOST and passed over.  At
 * most a ring's worth a look: node 0 never writes more ahead of what we
 * took, so a B_COUNT beyond that (any node can write the area) costs a
 * bounded time under the BQL per look, not up to 2^31 words.
 */
static void bcast_ring_read(TempestNCState *s)
{
    unsigned src;
    uint64_t value;
    int r;

    for (unsigned n = 0; n < TEMPEST_NC_BCAST_FIFO; n++) {
        r = tempest_nc_bring_get(s, s->bcast_ring_next, &src, &value);
        if (r == 0 || r == -2) {
            return;
        }
        s->bcast_ring_next++;
        if (s->node_id == 0) {
            s->bcast_issued = s->bcast_ring_next;
        }
        if (r < 0 || src >= s->num_nodes) {
            /* Counted as taken too, or node 0 would wait for it. */
            s->bcast_seen++;
            s->bcast_lost++;
            s->bcast_taken++;
            bcast_credit(s);
            continue;
        }
        s->bcast_shared++;
        trace_tempest_nc_bring_read(s->node_id, s->bcast_ring_next - 1, src);
        bcast_arrive(s, src, value);
        if (src == s->node_id && s->bcast_pending) {
            bcast_sent(s);
        }
    }
}

void tempest_nc_bcast_look(TempestNCState *s)
{
    if (!s->coll_shm) {
        return;
    }
    if (s->node_id == 0 && !QSIMPLEQ_EMPTY(&s->bcast_held)) {
        bcast_credit(s);
    }
    bcast_ring_read(s);
}

/* At the root, on the tree: one broadcast goes out, in the root's order. */
static void bcast_issue(TempestNCState *s, unsigned src, uint64_t value)
{
    s->bcast_issued++;
    bcast_down(s, src, value);
    if (src == s->node_id) {
        bcast_sent(s);
    } else {
        CollHeader h = { .dir = FABRIC_BCAST_ACK };

        coll_send(s, src, coll_frame(&h), 0);
    }
}

/*
 * At the root: a broadcast from @src, sent now (on the tree, or into the
 * ring, where it is read like any other word) or held until room.
 */
static void bcast_root(TempestNCState *s, unsigned src, uint64_t value)
{
    TempestBcast *w;

    if (QSIMPLEQ_EMPTY(&s->bcast_held)) {
        if (s->coll_shm) {
            if (tempest_nc_bring_push(s, src, value, true)) {
                bcast_ring_read(s);
                return;
            }
        } else if (s->bcast_issued - bcast_subtree_taken(s) <
                   TEMPEST_NC_BCAST_FIFO) {
            bcast_issue(s, src, value);
            return;
        }
    }
    w = g_new(TempestBcast, 1);
    w->src = src;
    w->value = value;
    s->bcast_holding[src] = true;
    QSIMPLEQ_INSERT_TAIL(&s->bcast_held, w, next);
    bcast_credit(s);            /* the ring: B_HELD, and a look again */
}

static uint32_t coll_cmd_bcast(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t value = b->arg[0];

    if (tempest_fabric_state(s->fabric) != TEMPEST_FABRIC_READY ||
        s->peers_down) {
        b->reason = TEMPEST_CMD_E_NO_FABRIC;
        return TEMPEST_CMD_FAIL;
    }
    tempest_nc_bcast_look(s);
    if (s->bcast_pending) {
        return TEMPEST_CMD_RETRY;
    }
    s->bcast_pending = true;
    s->bcast_cmd_quiet = true;      /* bcast_sent(): sent at once, no IRQ */
    if (s->node_id == 0) {
        bcast_root(s, 0, value);
    } else if (s->coll_shm &&
               tempest_nc_bring_push(s, s->node_id, value, false)) {
        /* Into the ring ourselves: read, it says it went out. */
        bcast_ring_read(s);
    } else {
        CollHeader h = { .dir = FABRIC_BCAST_UP, .lanes = 1 };
        GByteArray *f = coll_frame(&h);

        coll_put_entry(f, s->node_id, 0, &value, 1);
        coll_send(s, 0, f, 1);
    }
    s->bcast_cmd_quiet = false;
    return TEMPEST_CMD_SUCCESS;
}

bool tempest_nc_bcast_pop(TempestNCState *s)
{
    TempestBcast *w;

    tempest_nc_bcast_look(s);
    w = QSIMPLEQ_FIRST(&s->bcastq);
    if (!w) {
        return false;
    }
    QSIMPLEQ_REMOVE_HEAD(&s->bcastq, next);
    s->bcast_len--;
    s->bcast_src = w->src;
    s->bcast_value = w->value;
    g_free(w);
    s->bcast_taken++;
    bcast_credit(s);
    return true;
}

/*
 * A BCAST_WAIT read's wait ended by the ring moving, with no word to pop:
 * only words this node may not take moved it (its own, which node 0
 * orders in the ring too and which says ours was delivered, or lost
 * ones).  It waits again, at most this many times, unless something
 * else wants the guest.  Before, the read returned 0 there, and a node
 * that broadcast and then waited for the next word (a non-root node's
 * turn in a ping-pong of broadcasts) fell back to the guest's slower
 * wait on nearly every word.
 */
#define BCAST_WAIT_AGAIN 2

/*
 * BCAST_WAIT (1.22; tempest-hw.h): BCAST_POP, after waiting for a word
 * where there is none and the device may wait (tempest_nc_bring_wait:
 * on shared memory, not node 0; docs/strata.rst, "Broadcasts received
 * in a register read").  1: popped; 0: none.  A read that pops the last
 * word with no broadcast of ours in flight acknowledges IRQ_BCAST, as a
 * COLL_WAIT read that returns DONE acknowledges IRQ_COLL: on a node whose
 * CPU takes its interrupts while it reads (libstrata sharing libtempest's
 * handler), the word's arrival, raised inside the read, then costs no
 * interrupt.
 */
uint32_t tempest_nc_bcast_wait(TempestNCState *s, bool cpu_access)
{
    bool popped = tempest_nc_bcast_pop(s);
    unsigned again = 0;

    while (!popped) {
        uint64_t next = s->bcast_ring_next;

        if (!tempest_nc_bring_wait(s, cpu_access)) {
            break;
        }
        popped = tempest_nc_bcast_pop(s);
        s->bcast_waited += popped;
        trace_tempest_nc_bcast_wait(s->node_id, s->bcast_ring_next, popped);
        if (popped || s->bcast_ring_next == next ||
            ++again > BCAST_WAIT_AGAIN ||
            (s->irq_status & s->irq_enable & ~TEMPEST_NC_IRQ_BCAST) ||
            qatomic_read(&current_cpu->exit_request)) {
            break;
        }
    }
    if (popped && s->bcast_len == 0 && !s->bcast_pending &&
        (s->irq_status & TEMPEST_NC_IRQ_BCAST)) {
        tempest_nc_lower(s, TEMPEST_NC_IRQ_BCAST);
    }
    return popped;
}

/*
 * The global OR changed: take it and pass it down the tree, so that no
 * node sends more than its fan-out of frames for one change (the root
 * does not write to every node), and nothing is sent when it did not
 * change.
 */
static void aor_set_global(TempestNCState *s, bool global)
{
    unsigned first = coll_first_child(s, s->node_id);
    unsigned n = coll_nchildren(s, s->node_id);

    if (s->aor_global == global) {
        return;
    }
    s->aor_global = global;
    tempest_nc_raise(s, TEMPEST_NC_IRQ_AOR);
    for (unsigned c = first; c < first + n; c++) {
        CollHeader h = { .dir = FABRIC_AOR_DOWN };
        GByteArray *f = coll_frame(&h);

        coll_put_entry(f, 0, global, NULL, 0);
        coll_send(s, c, f, 1);
    }
}

/* At the root: node's bit is now bit. */
static void aor_root(TempestNCState *s, unsigned node, bool bit)
{
    if (s->aor_bits[node] != bit) {
        s->aor_bits[node] = bit;
        s->aor_count += bit ? 1 : -1;
    }
    aor_set_global(s, s->aor_count > 0);
}

void tempest_nc_aor_write(TempestNCState *s, uint32_t bit)
{
    if (s->aor_set == (bit & 1)) {
        return;     /* no change: nothing to tell the root */
    }
    s->aor_set = bit & 1;
    if (s->node_id == 0) {
        aor_root(s, 0, s->aor_set);
    } else if (tempest_fabric_peer_up(s->fabric, 0)) {
        CollHeader h = { .dir = FABRIC_AOR_UP };
        GByteArray *f = coll_frame(&h);

        coll_put_entry(f, s->node_id, s->aor_set, NULL, 0);
        coll_send(s, 0, f, 1);
    }
}

/* ------------------------------------------------------------------ */
/* Frames from the fabric                                              */
/* ------------------------------------------------------------------ */

static void coll_drop(TempestNCState *s, unsigned peer, const char *why)
{
    s->dropped++;
    s->last_drop = why;
    s->last_drop_peer = peer;
    trace_tempest_nc_coll_drop(s->node_id, peer, why);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: node %u: control frame from node %u "
                  "dropped: %s\n", TYPE_TEMPEST_NC, s->node_id, peer, why);
}

/*
 * May a child's entries join the round?  Each must be of a node of the
 * child's subtree that has no entry in yet (marked in r->nodes_in as it
 * is checked): so a round holds at most one entry per node, and what goes
 * up never exceeds the largest frame.  Marks left by a refused frame are
 * harmless: they are all in this child's subtree, which no other child
 * reports, and the child has reported.
 */
static bool coll_up_entries_ok(TempestNCState *s, TempestCollRound *r,
                               unsigned peer, const CollHeader *h,
                               const uint8_t *entries)
{
    size_t esz = FABRIC_COLL_ENTRY(h->lanes);

    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t node = fabric_ld32(entries + i * esz);

        if (node >= s->num_nodes || !coll_in_subtree(s, peer, node) ||
            test_and_set_bit(node, r->nodes_in)) {
            return false;
        }
    }
    return true;
}

static void coll_fabric_frame(void *opaque, unsigned peer,
                              const uint8_t *body, size_t len)
{
    TempestNCState *s = opaque;
    CollHeader h = {
        .seq = fabric_ld32(body), .dir = body[4], .kind = body[5],
        .fn = body[6], .variant = body[7], .lanes = fabric_ld16(body + 8),
        .error = fabric_ld16(body + 10), .count = fabric_ld32(body + 12),
    };
    const uint8_t *entries = body + FABRIC_COLL_HDR;
    size_t esz = FABRIC_COLL_ENTRY(h.lanes);
    TempestCollRound *r;

    trace_tempest_nc_coll_rx(s->node_id, peer, h.dir, h.seq, h.count);
    switch (h.dir) {
    case FABRIC_COLL_UP_SHM:
    case FABRIC_COLL_UP:
        if (!coll_is_child(s, peer)) {
            coll_drop(s, peer, "UP from a node that is not a child");
            return;
        }
        /* A child is at most one collective ahead of us. */
        r = h.seq - s->coll_seq_done > 1 ? NULL : coll_round(s, h.seq);
        if (!r) {
            coll_drop(s, peer, "UP for a collective out of range");
            return;
        }
        if (test_bit(peer, r->children)) {
            coll_drop(s, peer, "second UP from one child");
            return;
        }
        set_bit(peer, r->children);
        r->children_in++;
        r->children_shm += h.dir == FABRIC_COLL_UP_SHM;
        if (coll_take_header(r, &h) && !coll_up_entries_ok(s, r, peer, &h,
                                                           entries)) {
            /*
             * Its report counts, as a failed one: the collective ends
             * with an error everywhere instead of waiting for ever.
             */
            coll_drop(s, peer, "UP with entries not of its subtree");
            r->error = TEMPEST_COLL_E_MISMATCH;
        } else if (r->lanes == h.lanes) {
            g_byte_array_append(r->entries, entries, h.count * esz);
            r->count += h.count;
        }
        coll_try_complete(s, r);
        return;
    case FABRIC_COLL_DOWN_SHM:
    case FABRIC_COLL_DOWN:
        if (s->node_id == 0 || peer != coll_parent(s, s->node_id) ||
            s->coll_status != TEMPEST_COLL_ST_PENDING ||
            h.seq != s->coll_seq_done) {
            coll_drop(s, peer, "DOWN not for our pending collective");
            return;
        }
        coll_down(s, &h, entries);
        return;
    case FABRIC_BCAST_UP:
        if (s->node_id != 0 || h.count != 1 || h.lanes != 1 ||
            fabric_ld32(entries) != peer || s->bcast_holding[peer]) {
            coll_drop(s, peer, "bad broadcast");
            return;
        }
        bcast_root(s, peer, fabric_ld64(entries + 8));
        return;
    case FABRIC_BCAST_DOWN:
        /* None after the switch: node 0 writes them in the ring. */
        if (s->node_id == 0 || peer != coll_parent(s, s->node_id) ||
            s->coll_shm ||
            h.count != 1 || h.lanes != 1 ||
            fabric_ld32(entries) >= s->num_nodes) {
            coll_drop(s, peer, "bad broadcast");
            return;
        }
        bcast_down(s, fabric_ld32(entries), fabric_ld64(entries + 8));
        return;
    case FABRIC_BCAST_CREDIT:
        /*
         * A child's subtree took words: never more than passed here
         * (from the ring too: what the child read there, we read now).
         */
        tempest_nc_bcast_look(s);
        if (!coll_is_child(s, peer) || h.count != 1 || h.lanes != 1 ||
            fabric_ld32(entries) != peer ||
            fabric_ld64(entries + 8) < s->bcast_child[peer] ||
            fabric_ld64(entries + 8) > s->bcast_seen) {
            coll_drop(s, peer, "bad broadcast credit");
            return;
        }
        s->bcast_child[peer] = fabric_ld64(entries + 8);
        bcast_credit(s);
        return;
    case FABRIC_BCAST_ACK:
        if (peer != 0 || !s->bcast_pending) {
            coll_drop(s, peer, "unexpected broadcast acknowledgement");
            return;
        }
        bcast_sent(s);
        return;
    case FABRIC_AOR_UP:
        if (s->node_id != 0 || h.count != 1 || h.lanes ||
            fabric_ld32(entries) != peer) {
            coll_drop(s, peer, "bad async OR");
            return;
        }
        aor_root(s, peer, fabric_ld32(entries + 4) & 1);
        return;
    case FABRIC_AOR_DOWN:
        if (s->node_id == 0 || peer != coll_parent(s, s->node_id) ||
            h.count != 1 || h.lanes) {
            coll_drop(s, peer, "bad async OR");
            return;
        }
        aor_set_global(s, fabric_ld32(entries + 4) & 1);
        return;
    }
}

static void bcast_flow_reset(TempestNCState *s);

/* A node is gone: the tree is broken; a pending collective fails. */
static void coll_peer_down(TempestNCState *s, unsigned peer)
{
    /*
     * A round the shared area already holds ends with its own outcome
     * first: the nodes that saw it (a mismatch) may be the ones now gone,
     * and this node must report what they reported, not their exit.
     */
    tempest_nc_coll_shm_check(s);
    coll_rounds_free(s);
    s->coll_shm_pending = false;
    if (s->coll_status == TEMPEST_COLL_ST_PENDING) {
        coll_finish(s, TEMPEST_COLL_E_PEER_DOWN);
    }
    if (s->bcast_pending) {
        s->bcast_pending = false;
        tempest_nc_raise(s, TEMPEST_NC_IRQ_BCAST);
    }
    bcast_flow_reset(s);
}

/* Flow control starts again: nothing in flight, nothing held. */
static void bcast_flow_reset(TempestNCState *s)
{
    TempestBcast *w;

    while ((w = QSIMPLEQ_FIRST(&s->bcast_held))) {
        QSIMPLEQ_REMOVE_HEAD(&s->bcast_held, next);
        g_free(w);
    }
    if (s->bcast_holding) {
        memset(s->bcast_holding, 0, s->num_nodes * sizeof(bool));
    }
    if (s->bcast_child) {
        memset(s->bcast_child, 0, s->num_nodes * sizeof(uint64_t));
    }
    s->bcast_seen = 0;
    s->bcast_taken = 0;
    s->bcast_reported = 0;
    s->bcast_issued = 0;
}

static void coll_reset(TempestNCState *s)
{
    TempestBcast *w;

    coll_rounds_free(s);
    while ((w = QSIMPLEQ_FIRST(&s->bcastq))) {
        QSIMPLEQ_REMOVE_HEAD(&s->bcastq, next);
        g_free(w);
    }
    s->bcast_len = 0;
    bcast_flow_reset(s);
    s->coll_status = TEMPEST_COLL_ST_IDLE;
    s->coll_error = 0;
    s->coll_seq_done = 0;
    s->coll_shm = false;
    s->coll_shm_pending = false;
    s->coll_shm_count = 0;
    s->coll_shm_slept = 0;
    s->coll_shm_woken = 0;
    s->coll_shm_waited = 0;
    s->bcast_waited = 0;
    s->coll_restored = false;
    s->coll_result = 0;
    s->bcast_pending = false;
    s->bcast_sent = 0;
    s->bcast_lost = 0;
    s->bcast_shared = 0;
    s->bcast_written = 0;
    s->bcast_room_valid = false;
    s->bcast_ring_next = 0;
    s->bcast_src = 0;
    s->bcast_value = 0;
    s->aor_set = 0;
    s->aor_global = 0;
    s->aor_count = 0;
    if (s->aor_bits) {
        memset(s->aor_bits, 0, s->num_nodes * sizeof(bool));
    }
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static const TempestNCCommand coll_commands[] = {
    { TEMPEST_CMD_COLL_START, coll_cmd_start },
    { TEMPEST_CMD_BCAST, coll_cmd_bcast },
    { 0, NULL }
};

static const TempestNCHooks coll_hooks = {
    .name = "coll",
    .commands = coll_commands,
    .coll = coll_fabric_frame,
    .peer_down = coll_peer_down,
};

/* The pending collective completed in the shared area. */
static void coll_shm_done(TempestNCState *s, uint32_t error,
                          const uint64_t *out, unsigned nout)
{
    if (!error && s->coll_vector) {
        if (!coll_dest_write(s, out, nout)) {
            error = TEMPEST_COLL_E_DMA;
        }
    } else if (!error) {
        s->coll_result = nout ? out[0] : 0;
    }
    coll_finish(s, error);
}

/*
 * Running again: the broadcast words node 0 held while stopped go out
 * (bcast_credit).  A checkpoint's restored cluster runs: a round whose
 * own contribution is in and whose subtree has reported goes up now (a
 * collective that was pending in the shared combining area was saved as
 * such a round: the restored cluster combines on the tree until the next
 * collective says otherwise).  Not at the load: the launcher lets the
 * nodes run only once every node has loaded its state, and a round sent
 * before could reach a node still loading, whose load then lost it (its
 * parent waited for it for ever).
 */
static void coll_vm_state(void *opaque, bool running, RunState state)
{
    TempestNCState *s = opaque;

    if (!running) {
        return;
    }
    if (s->node_id == 0 && !QSIMPLEQ_EMPTY(&s->bcast_held)) {
        bcast_credit(s);        /* words held while stopped */
    }
    if (!s->coll_restored) {
        return;
    }
    s->coll_restored = false;
    for (int i = 0; i < TEMPEST_COLL_ROUNDS; i++) {
        TempestCollRound *r = &s->coll_round[i];

        if (r->used && r->started && !r->sent &&
            s->coll_status == TEMPEST_COLL_ST_PENDING &&
            r->seq == s->coll_seq_done) {
            trace_tempest_nc_coll_restored(s->node_id, r->seq, r->count,
                                           r->children_in);
            coll_try_complete(s, r);
        }
    }
}

static bool coll_realize(TempestNCState *s, Error **errp)
{
    QSIMPLEQ_INIT(&s->bcastq);
    QSIMPLEQ_INIT(&s->bcast_held);
    s->aor_bits = g_new0(bool, s->num_nodes);
    s->bcast_child = g_new0(uint64_t, s->num_nodes);
    s->bcast_holding = g_new0(bool, s->num_nodes);
    s->coll_shm_done = coll_shm_done;
    s->bcast_look = tempest_nc_bcast_look;
    s->coll_vmse = qemu_add_vm_change_state_handler(coll_vm_state, s);
    tempest_nc_register(s, &coll_hooks);
    return true;
}

static void coll_unrealize(TempestNCState *s)
{
    g_clear_pointer(&s->coll_vmse, qemu_del_vm_change_state_handler);
    tempest_nc_coll_shm_stop(s);
    coll_reset(s);
    g_clear_pointer(&s->aor_bits, g_free);
    g_clear_pointer(&s->bcast_child, g_free);
    g_clear_pointer(&s->bcast_holding, g_free);
}

/* Control network: the latched broadcast word and the lost count. */
static bool coll_vmstate_needed(void *opaque)
{
    TempestNCState *s = opaque;

    return s->bcast_lost || s->bcast_src || s->bcast_value;
}

const VMStateDescription vmstate_tempest_nc_coll = {
    .name = TYPE_TEMPEST_NC "/coll",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = coll_vmstate_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(bcast_lost, TempestNCState),
        VMSTATE_UINT32(bcast_src, TempestNCState),
        VMSTATE_UINT64(bcast_value, TempestNCState),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The global OR's bits (in the main section): alone in its cluster, this
 * node is the root, and its own bit is the whole OR.
 */
static int coll_post_load(TempestNCState *s)
{
    /* The shared area is not saved: the tree first, as at boot. */
    s->coll_shm = false;
    s->coll_shm_pending = false;
    s->coll_restored = s->ckpt_loaded;
    if (s->ckpt_loaded) {
        /* A checkpoint's: tempest-nc-ckpt.c loaded the whole state. */
        return s->aor_set > 1 || s->aor_global > 1 ? -EINVAL : 0;
    }
    /* Alone in its cluster: its own words only, none in flight. */
    bcast_flow_reset(s);
    if (s->aor_set > 1 || s->aor_global > 1 ||
        (s->num_nodes == 1 && s->aor_global != s->aor_set)) {
        return -EINVAL;
    }
    if (s->num_nodes == 1) {
        s->aor_bits[0] = s->aor_set;
        s->aor_count = s->aor_set;
    }
    return 0;
}

const TempestNCEngine tempest_nc_coll_engine = {
    .name = "coll",
    .realize = coll_realize,
    .unrealize = coll_unrealize,
    .reset = coll_reset,
    .post_load = coll_post_load,
};
