/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the control network's part of a whole-cluster
 * checkpoint (docs/checkpoint.rst, "What is saved"), for
 * tempest-nc-ckpt.c: the collective rounds partly combined, this node's
 * pending collective, the broadcast words queued and held and the
 * broadcast flow control, the global OR's bits, as bytes in the
 * checkpoint's subsection; and back, each value checked against its
 * limits.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "tempest-nc-internal.h"
#include "fabric-proto.h"

static void put8(GByteArray *b, uint8_t v)
{
    g_byte_array_append(b, &v, 1);
}

static void put32(GByteArray *b, uint32_t v)
{
    uint8_t w[4];

    fabric_st32(w, v);
    g_byte_array_append(b, w, 4);
}

static void put64(GByteArray *b, uint64_t v)
{
    uint8_t w[8];

    fabric_st64(w, v);
    g_byte_array_append(b, w, 8);
}

static void put_bits(GByteArray *b, const unsigned long *map, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        put8(b, map && test_bit(i, map));
    }
}

/* The layout of s->bcastq and s->bcast_held, whose type has no name. */
typedef QSIMPLEQ_HEAD(CkptBcastQ, TempestBcast) CkptBcastQ;

/* A broadcast queue: its length, then each word (ckpt_load_bcasts). */
static void ckpt_put_bcasts(GByteArray *b, void *head)
{
    CkptBcastQ *q = head;
    TempestBcast *w;
    uint32_t n = 0;

    QSIMPLEQ_FOREACH(w, q, next) {
        n++;
    }
    put32(b, n);
    QSIMPLEQ_FOREACH(w, q, next) {
        put32(b, w->src);
        put64(b, w->value);
    }
}

/* A bounded reader: every get fails once past the end. */
typedef struct CkptReader {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} CkptReader;

static const uint8_t *get(CkptReader *r, size_t n)
{
    const uint8_t *q = r->p + r->pos;

    if (r->bad || n > r->len - r->pos) {
        r->bad = true;
        return NULL;
    }
    r->pos += n;
    return q;
}

static uint8_t get8(CkptReader *r)
{
    const uint8_t *q = get(r, 1);

    return q ? *q : 0;
}

static uint32_t get32(CkptReader *r)
{
    const uint8_t *q = get(r, 4);

    return q ? fabric_ld32(q) : 0;
}

static uint64_t get64(CkptReader *r)
{
    const uint8_t *q = get(r, 8);

    return q ? fabric_ld64(q) : 0;
}

/* A flag: 0 or 1, anything else makes the reader bad. */
static bool get_bool(CkptReader *r)
{
    uint8_t v = get8(r);

    if (v > 1) {
        r->bad = true;
    }
    return v == 1;
}

static void get_bits(CkptReader *r, unsigned long *map, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint8_t v = get8(r);

        if (v > 1) {
            r->bad = true;
        } else if (v) {
            set_bit(i, map);
        }
    }
}

/*
 * Our collective pending in the shared combining area, as a round of the
 * tree with our own contribution in and nothing sent: the area is not
 * saved, and a restored cluster combines on the tree (its first
 * collective decides again), where this round goes up when the node
 * runs again (tempest-nc-coll.c).  Nodes that had not arrived will start
 * the same collective on the tree.
 */
static void ckpt_put_shm_round(TempestNCState *s, GByteArray *b)
{
    unsigned lanes = s->coll_lanes;

    put8(b, 1);                 /* used */
    put8(b, 1);                 /* started */
    put8(b, 0);                 /* sent */
    put8(b, 1);                 /* have_header */
    put32(b, s->coll_seq_done);
    put8(b, s->coll_kind);
    put8(b, s->coll_fn);
    put8(b, s->coll_variant);
    put32(b, lanes);
    put32(b, 0);                /* error */
    put32(b, 1);                /* count */
    put32(b, 0);                /* children_in */
    put32(b, FABRIC_COLL_ENTRY(lanes));
    put32(b, s->node_id);
    put32(b, s->coll_shm_seg);
    for (unsigned l = 0; l < lanes; l++) {
        put64(b, s->coll_shm_vals[l]);
    }
    for (unsigned i = 0; i < s->num_nodes; i++) {
        put8(b, i == s->node_id);       /* nodes_in */
    }
    for (unsigned i = 0; i < s->num_nodes; i++) {
        put8(b, 0);                     /* children */
    }
}

void tempest_nc_ckpt_save_coll(TempestNCState *s, GByteArray *b)
{
    put8(b, s->coll_vector);
    put64(b, s->coll_dest);
    put8(b, s->coll_kind);
    put8(b, s->coll_fn);
    put8(b, s->coll_variant);
    put32(b, s->coll_lanes);
    for (int i = 0; i < TEMPEST_COLL_ROUNDS; i++) {
        TempestCollRound *r = &s->coll_round[i];

        if (s->coll_shm_pending &&
            s->coll_seq_done % TEMPEST_COLL_ROUNDS == i) {
            ckpt_put_shm_round(s, b);
            continue;
        }
        put8(b, r->used);
        if (!r->used) {
            continue;
        }
        put8(b, r->started);
        put8(b, r->sent);
        put8(b, r->have_header);
        put32(b, r->seq);
        put8(b, r->kind);
        put8(b, r->fn);
        put8(b, r->variant);
        put32(b, r->lanes);
        put32(b, r->error);
        put32(b, r->count);
        put32(b, r->children_in);
        put32(b, r->entries->len);
        g_byte_array_append(b, r->entries->data, r->entries->len);
        put_bits(b, r->nodes_in, s->num_nodes);
        put_bits(b, r->children, s->num_nodes);
    }
    put8(b, s->bcast_pending);
    ckpt_put_bcasts(b, &s->bcastq);
    ckpt_put_bcasts(b, &s->bcast_held);
    put64(b, s->bcast_seen);
    put64(b, s->bcast_taken);
    put64(b, s->bcast_reported);
    put64(b, s->bcast_issued);
    for (unsigned i = 0; i < s->num_nodes; i++) {
        put64(b, s->bcast_child[i]);
        put8(b, s->bcast_holding[i]);
        put8(b, s->aor_bits[i]);
    }
    put32(b, s->aor_count);
}

static void ckpt_free_bcasts(void *head)
{
    CkptBcastQ *q = head;
    TempestBcast *w;

    while ((w = QSIMPLEQ_FIRST(q))) {
        QSIMPLEQ_REMOVE_HEAD(q, next);
        g_free(w);
    }
}

static void ckpt_free_rounds(TempestNCState *s)
{
    for (int i = 0; i < TEMPEST_COLL_ROUNDS; i++) {
        TempestCollRound *r = &s->coll_round[i];

        if (r->entries) {
            g_byte_array_free(r->entries, true);
        }
        g_free(r->nodes_in);
        g_free(r->children);
        memset(r, 0, sizeof(*r));
    }
}

static bool ckpt_load_bcasts(TempestNCState *s, CkptReader *r, void *head,
                             uint32_t max)
{
    CkptBcastQ *q = head;
    uint32_t n = get32(r);

    if (n > max) {
        return false;
    }
    for (uint32_t i = 0; i < n && !r->bad; i++) {
        TempestBcast *w = g_new0(TempestBcast, 1);

        w->src = get32(r);
        w->value = get64(r);
        QSIMPLEQ_INSERT_TAIL(q, w, next);
        if (w->src >= s->num_nodes) {
            return false;
        }
    }
    return !r->bad;
}

/* Load what tempest_nc_ckpt_save_coll wrote, checking each value against limits. */
static bool ckpt_load_coll(TempestNCState *s, CkptReader *r, Error **errp)
{
    ckpt_free_rounds(s);
    ckpt_free_bcasts(&s->bcastq);
    ckpt_free_bcasts(&s->bcast_held);
    s->bcast_len = 0;
    s->coll_vector = get_bool(r);
    s->coll_dest = get64(r);
    s->coll_kind = get8(r);
    s->coll_fn = get8(r);
    s->coll_variant = get8(r);
    s->coll_lanes = get32(r);
    if (s->coll_lanes > TEMPEST_COLL_MAX_LANES ||
        (s->coll_vector &&
         !tempest_nc_in_ram(s, s->coll_dest,
                            (uint64_t)(s->coll_kind == TEMPEST_COLL_ALLGATHER ?
                                       s->num_nodes : s->coll_lanes) * 8))) {
        /* (The completion writes there: RAM only, as COLL_START checks.) */
        goto bad;
    }
    for (int i = 0; i < TEMPEST_COLL_ROUNDS && !r->bad; i++) {
        TempestCollRound *c = &s->coll_round[i];
        uint32_t len;
        const uint8_t *e;

        c->used = get_bool(r);
        if (!c->used) {
            continue;
        }
        c->started = get_bool(r);
        c->sent = get_bool(r);
        c->have_header = get_bool(r);
        c->seq = get32(r);
        c->kind = get8(r);
        c->fn = get8(r);
        c->variant = get8(r);
        c->lanes = get32(r);
        c->error = get32(r);
        c->count = get32(r);
        c->children_in = get32(r);
        len = get32(r);
        c->entries = g_byte_array_new();
        c->nodes_in = bitmap_new(s->num_nodes);
        c->children = bitmap_new(s->num_nodes);
        if (c->seq % TEMPEST_COLL_ROUNDS != i ||
            c->lanes > TEMPEST_COLL_MAX_LANES || c->count > s->num_nodes ||
            c->children_in > s->num_nodes ||
            len != (c->have_header ? c->count * FABRIC_COLL_ENTRY(c->lanes)
                                   : 0)) {
            goto bad;
        }
        e = get(r, len);
        if (e) {
            g_byte_array_append(c->entries, e, len);
        }
        get_bits(r, c->nodes_in, s->num_nodes);
        get_bits(r, c->children, s->num_nodes);
        if (!r->bad && (bitmap_count_one(c->nodes_in, s->num_nodes) !=
                        c->count ||
                        bitmap_count_one(c->children, s->num_nodes) !=
                        c->children_in)) {
            goto bad;
        }
    }
    s->bcast_pending = get_bool(r);
    if (!ckpt_load_bcasts(s, r, &s->bcastq, TEMPEST_NC_BCAST_FIFO) ||
        !ckpt_load_bcasts(s, r, &s->bcast_held, s->num_nodes)) {
        goto bad;
    }
    {
        TempestBcast *w;

        QSIMPLEQ_FOREACH(w, &s->bcastq, next) {
            s->bcast_len++;
        }
    }
    s->bcast_seen = get64(r);
    s->bcast_taken = get64(r);
    s->bcast_reported = get64(r);
    s->bcast_issued = get64(r);
    s->aor_count = 0;
    for (unsigned i = 0; i < s->num_nodes && !r->bad; i++) {
        bool hold, bit;

        s->bcast_child[i] = get64(r);
        hold = get_bool(r);
        bit = get_bool(r);
        if (r->bad || s->bcast_child[i] > s->bcast_seen) {
            goto bad;
        }
        s->bcast_holding[i] = hold;
        s->aor_bits[i] = bit;
        s->aor_count += bit;
    }
    if (get32(r) != s->aor_count || s->bcast_taken > s->bcast_seen ||
        s->bcast_reported > s->bcast_seen || r->bad) {
        goto bad;
    }
    return true;

bad:
    error_setg(errp, "node %u: the control network's checkpoint state is "
               "out of range", s->node_id);
    return false;
}

bool tempest_nc_ckpt_load_coll(TempestNCState *s, const uint8_t *buf,
                               size_t len, size_t *used, Error **errp)
{
    CkptReader r = { .p = buf, .len = len };
    bool ok = ckpt_load_coll(s, &r, errp);

    *used = r.pos;
    return ok;
}
