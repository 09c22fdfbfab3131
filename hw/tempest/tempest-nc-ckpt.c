/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: whole-cluster checkpoint (docs/checkpoint.rst).
 *
 * A node joined to others has a migration blocker: its live links, and
 * what is under way with its peers, cannot move alone.  A checkpoint of
 * the whole cluster lifts it at one consistent cut: every node stopped,
 * nothing in flight anywhere (the launcher reads each node's frame
 * counters, "ckpt-status", until the cluster's sums agree and stay put),
 * then "checkpoint" set on every node.  What is left between the nodes
 * at such a cut is state at rest on both sides, and it is saved on both:
 * the links' credits and sequence numbers (the fabric's), the collectives
 * partly combined and the broadcast flow control (the control
 * network's), packets from peers waiting for room in the RQ (msg),
 * transfers between nodes where they have got to (xfer).  On load the
 * links are made again as at boot and start from the saved counts.
 *
 * The subsection "tempest-nc/ckpt" carries it, sent only in checkpoint
 * mode, and loaded before the engines' subsections (they read
 * ckpt_loaded to take state that involves other nodes).
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/error-report.h"
#include "qemu/bitmap.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "tempest-nc-internal.h"
#include "fabric-proto.h"
#include "trace.h"

#define CKPT_MAGIC      0x4b43434eU     /* "NCCK" */
#define CKPT_VERSION    1
#define CKPT_MAX_BLOB   (64 * 1024 * 1024)

/* ------------------------------------------------------------------ */
/* The migration blocker, and checkpoint mode                          */
/* ------------------------------------------------------------------ */

bool tempest_nc_ckpt_block(TempestNCState *s, Error **errp)
{
    if (s->num_nodes == 1 || s->migration_blocker) {
        return true;
    }
    error_setg(&s->migration_blocker, "%s: node %u is joined to %u other "
               "nodes by live sockets: the connections, and the packets, "
               "transfers, fetch-and-ops and collectives under way with "
               "those nodes, cannot migrate alone (a whole-cluster "
               "checkpoint can: scripts/tempest checkpoint, "
               "docs/checkpoint.rst)", TYPE_TEMPEST_NC, s->node_id,
               s->num_nodes - 1);
    return migrate_add_blocker(&s->migration_blocker, errp) >= 0;
}

/*
 * Is this node at rest for a checkpoint?  tx, rx: its fabric's frame
 * counts.  False, with the reason, while something is under way that a
 * quiet cut cannot hold.
 */
static bool ckpt_at_rest(TempestNCState *s, uint64_t *tx, uint64_t *rx,
                         Error **errp)
{
    if (!tempest_fabric_ckpt_quiet(s->fabric, tx, rx, errp)) {
        return false;
    }
    if (s->xfer_sys_used) {
        error_setg(errp, "%" PRIu64 " bytes of messages wait in system "
                   "space for a buffer", s->xfer_sys_used);
        return false;
    }
    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        if (s->bank[i].fop_state == FOP_PENDING) {
            error_setg(errp, "a fetch-and-op of CPU %d waits for its reply",
                       i);
            return false;
        }
        if (s->bank[i].tag_busy) {
            error_setg(errp, "a tag change of CPU %d waits for the other "
                       "CPUs", i);
            return false;
        }
    }
    return true;
}

static void ckpt_leave(TempestNCState *s)
{
    Error *err = NULL;

    if (!s->ckpt_mode) {
        return;
    }
    s->ckpt_mode = false;
    trace_tempest_nc_ckpt_mode(s->node_id, 0);
    if (!tempest_nc_ckpt_block(s, &err)) {
        warn_report_err(err);
    }
}

static bool ckpt_enter(TempestNCState *s, Error **errp)
{
    ERRP_GUARD();
    uint64_t tx, rx;

    if (runstate_is_running()) {
        error_setg(errp, "node %u: stop the VM before a checkpoint",
                   s->node_id);
        return false;
    }
    if (!ckpt_at_rest(s, &tx, &rx, errp)) {
        error_prepend(errp, "node %u is not at rest: ", s->node_id);
        return false;
    }
    migrate_del_blocker(&s->migration_blocker);
    s->ckpt_mode = true;
    trace_tempest_nc_ckpt_mode(s->node_id, 1);
    return true;
}

/* Running again: a checkpoint cut is over, the blocker is back. */
static void ckpt_vm_state(void *opaque, bool running, RunState state)
{
    if (running) {
        ckpt_leave(opaque);
    }
}

/* ------------------------------------------------------------------ */
/* QOM properties the launcher uses (over QMP: qom-get, qom-set)       */
/* ------------------------------------------------------------------ */

/* "TX RX" when at rest, "TX RX reason" when not. */
static char *ckpt_get_status(Object *obj, Error **errp)
{
    TempestNCState *s = TEMPEST_NC(obj);
    Error *why = NULL;
    uint64_t tx = 0, rx = 0;
    char *ret;

    if (!s->fabric) {
        return g_strdup("0 0 not realized");
    }
    if (ckpt_at_rest(s, &tx, &rx, &why)) {
        ret = g_strdup_printf("%" PRIu64 " %" PRIu64, tx, rx);
    } else {
        ret = g_strdup_printf("%" PRIu64 " %" PRIu64 " %s", tx, rx,
                              error_get_pretty(why));
        error_free(why);
    }
    trace_tempest_nc_ckpt_status(s->node_id, ret);
    return ret;
}

static char *ckpt_get_links(Object *obj, Error **errp)
{
    TempestNCState *s = TEMPEST_NC(obj);

    return s->fabric ? tempest_fabric_ckpt_links(s->fabric) : g_strdup("");
}

static bool ckpt_get_mode(Object *obj, Error **errp)
{
    return TEMPEST_NC(obj)->ckpt_mode;
}

static void ckpt_set_mode(Object *obj, bool value, Error **errp)
{
    TempestNCState *s = TEMPEST_NC(obj);

    if (!s->fabric) {
        error_setg(errp, "the node controller is not realized");
    } else if (value && !s->ckpt_mode) {
        ckpt_enter(s, errp);
    } else if (!value) {
        ckpt_leave(s);
    }
}

static void ckpt_get_id(Object *obj, Visitor *v, const char *name,
                        void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &TEMPEST_NC(obj)->ckpt_id, errp);
}

static void ckpt_set_id(Object *obj, Visitor *v, const char *name,
                        void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &TEMPEST_NC(obj)->ckpt_id, errp);
}

void tempest_nc_ckpt_class_init(ObjectClass *oc)
{
    object_class_property_add_str(oc, "ckpt-status", ckpt_get_status,
                                  NULL);
    object_class_property_set_description(oc, "ckpt-status",
        "frames sent to and taken from peers, and why the node is not at "
        "rest for a checkpoint (nothing when it is)");
    object_class_property_add_str(oc, "ckpt-links", ckpt_get_links, NULL);
    object_class_property_set_description(oc, "ckpt-links",
        "per peer: credits, allowed, owed, sequence numbers out and in");
    object_class_property_add_bool(oc, "checkpoint", ckpt_get_mode,
                                   ckpt_set_mode);
    object_class_property_set_description(oc, "checkpoint",
        "allow saving this stopped node of a cluster at a quiet cut");
    object_class_property_add(oc, "ckpt-id", "uint64", ckpt_get_id,
                              ckpt_set_id, NULL, NULL);
    object_class_property_set_description(oc, "ckpt-id",
        "the checkpoint the state belongs to (saved with it)");
}

void tempest_nc_ckpt_realize(TempestNCState *s)
{
    s->ckpt_vmse = qemu_add_vm_change_state_handler(ckpt_vm_state, s);
}

void tempest_nc_ckpt_unrealize(TempestNCState *s)
{
    g_clear_pointer(&s->ckpt_vmse, qemu_del_vm_change_state_handler);
    g_clear_pointer(&s->ckpt_blob, g_free);
    s->ckpt_mode = false;
}

/* ------------------------------------------------------------------ */
/* The blob: the fabric's counts and the control network's state       */
/* ------------------------------------------------------------------ */

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

static void ckpt_save_coll(TempestNCState *s, GByteArray *b)
{
    TempestBcast *w;
    uint32_t n;

    put8(b, s->coll_vector);
    put64(b, s->coll_dest);
    put8(b, s->coll_kind);
    put8(b, s->coll_fn);
    put8(b, s->coll_variant);
    put32(b, s->coll_lanes);
    for (int i = 0; i < TEMPEST_COLL_ROUNDS; i++) {
        TempestCollRound *r = &s->coll_round[i];

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
    n = 0;
    QSIMPLEQ_FOREACH(w, &s->bcastq, next) {
        n++;
    }
    put32(b, n);
    QSIMPLEQ_FOREACH(w, &s->bcastq, next) {
        put32(b, w->src);
        put64(b, w->value);
    }
    n = 0;
    QSIMPLEQ_FOREACH(w, &s->bcast_held, next) {
        n++;
    }
    put32(b, n);
    QSIMPLEQ_FOREACH(w, &s->bcast_held, next) {
        put32(b, w->src);
        put64(b, w->value);
    }
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

/* The layout of s->bcastq and s->bcast_held, whose type has no name. */
typedef QSIMPLEQ_HEAD(CkptBcastQ, TempestBcast) CkptBcastQ;

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

/* Load what ckpt_save_coll wrote, checking each value against limits. */
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
    if (s->coll_lanes > TEMPEST_COLL_MAX_LANES) {
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

/* ------------------------------------------------------------------ */
/* Migration: the subsection                                           */
/* ------------------------------------------------------------------ */

static bool ckpt_vmstate_needed(void *opaque)
{
    return ((TempestNCState *)opaque)->ckpt_mode;
}

static int ckpt_vmstate_pre_save(void *opaque)
{
    TempestNCState *s = opaque;
    g_autoptr(GByteArray) b = g_byte_array_new();
    Error *err = NULL;
    uint64_t tx, rx;

    if (!ckpt_at_rest(s, &tx, &rx, &err)) {
        error_report("tempest-nc: node %u: checkpoint refused: %s",
                     s->node_id, error_get_pretty(err));
        error_free(err);
        return -EBUSY;
    }
    put32(b, CKPT_MAGIC);
    put32(b, CKPT_VERSION);
    put32(b, s->node_id);
    put32(b, s->num_nodes);
    tempest_fabric_ckpt_save(s->fabric, b);
    ckpt_save_coll(s, b);
    g_free(s->ckpt_blob);
    s->ckpt_len = b->len;
    s->ckpt_blob = g_byte_array_free(g_steal_pointer(&b), false);
    {
        TempestInPacket *p;
        uint32_t inq = 0;

        for (int net = 0; net < 2; net++) {
            QTAILQ_FOREACH(p, &s->inq[net], next) {
                inq++;
            }
        }
        trace_tempest_nc_ckpt_save(s->node_id, s->ckpt_id, s->ckpt_len,
                                   s->xfer_active, inq);
    }
    return 0;
}

static int ckpt_vmstate_post_save(void *opaque)
{
    TempestNCState *s = opaque;

    g_clear_pointer(&s->ckpt_blob, g_free);
    s->ckpt_len = 0;
    return 0;
}

static int ckpt_vmstate_pre_load(void *opaque)
{
    TempestNCState *s = opaque;

    g_clear_pointer(&s->ckpt_blob, g_free);
    s->ckpt_len = 0;
    return 0;
}

static bool ckpt_len_ok(void *opaque, int version_id)
{
    return ((TempestNCState *)opaque)->ckpt_len <= CKPT_MAX_BLOB;
}

static int ckpt_vmstate_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;
    CkptReader r = { .p = s->ckpt_blob, .len = s->ckpt_len };
    Error *err = NULL;
    size_t used;
    int ret = -EINVAL;

    if (get32(&r) != CKPT_MAGIC || get32(&r) != CKPT_VERSION ||
        get32(&r) != s->node_id || get32(&r) != s->num_nodes || r.bad) {
        error_setg(&err, "the checkpoint is not one of node %u of a "
                   "%u-node cluster", s->node_id, s->num_nodes);
    } else if (tempest_fabric_ckpt_load(s->fabric, r.p + r.pos,
                                        r.len - r.pos, &used, &err)) {
        r.pos += used;
        if (ckpt_load_coll(s, &r, &err)) {
            if (r.pos == r.len) {
                ret = 0;
            } else {
                error_setg(&err, "%zu bytes of checkpoint state left over",
                           r.len - r.pos);
            }
        }
    }
    if (ret) {
        error_report("tempest-nc: node %u: cannot restore: %s", s->node_id,
                     error_get_pretty(err));
        error_free(err);
    } else {
        s->ckpt_loaded = true;
    }
    trace_tempest_nc_ckpt_load(s->node_id, s->ckpt_id, s->ckpt_len, ret);
    g_clear_pointer(&s->ckpt_blob, g_free);
    s->ckpt_len = 0;
    return ret;
}

const VMStateDescription vmstate_tempest_nc_ckpt = {
    .name = TYPE_TEMPEST_NC "/ckpt",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ckpt_vmstate_needed,
    .pre_save = ckpt_vmstate_pre_save,
    .post_save = ckpt_vmstate_post_save,
    .pre_load = ckpt_vmstate_pre_load,
    .post_load = ckpt_vmstate_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(ckpt_id, TempestNCState),
        VMSTATE_UINT32(ckpt_len, TempestNCState),
        VMSTATE_VALIDATE("checkpoint state size", ckpt_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(ckpt_blob, TempestNCState, 0, NULL,
                                     ckpt_len),
        VMSTATE_END_OF_LIST()
    }
};
