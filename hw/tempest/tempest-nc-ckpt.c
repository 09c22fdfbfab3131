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
    /* A collective combined in the shared area meanwhile: take it. */
    tempest_nc_coll_shm_check(s);
    if (!tempest_fabric_ckpt_quiet(s->fabric, tx, rx, errp)) {
        return false;
    }
    if (s->xfer_sys_used) {
        error_setg(errp, "%" PRIu64 " bytes of messages wait in system "
                   "space for a buffer", s->xfer_sys_used);
        return false;
    }
    if (tempest_nc_xfer_chan_busy(s)) {
        error_setg(errp, "a channel's long data is under way");
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
    uint8_t head[16];

    fabric_st32(head, CKPT_MAGIC);
    fabric_st32(head + 4, CKPT_VERSION);
    fabric_st32(head + 8, s->node_id);
    fabric_st32(head + 12, s->num_nodes);
    g_byte_array_append(b, head, sizeof(head));
    tempest_fabric_ckpt_save(s->fabric, b);
    tempest_nc_ckpt_save_coll(s, b);
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
    const uint8_t *p = s->ckpt_blob;
    size_t len = s->ckpt_len, pos = 16, used;
    Error *err = NULL;
    int ret = -EINVAL;

    if (len < 16 || fabric_ld32(p) != CKPT_MAGIC ||
        fabric_ld32(p + 4) != CKPT_VERSION ||
        fabric_ld32(p + 8) != s->node_id ||
        fabric_ld32(p + 12) != s->num_nodes) {
        error_setg(&err, "the checkpoint is not one of node %u of a "
                   "%u-node cluster", s->node_id, s->num_nodes);
    } else if (tempest_fabric_ckpt_load(s->fabric, p + pos, len - pos,
                                        &used, &err)) {
        pos += used;
        if (tempest_nc_ckpt_load_coll(s, p + pos, len - pos, &used, &err)) {
            pos += used;
            if (pos == len) {
                ret = 0;
            } else {
                error_setg(&err, "%zu bytes of checkpoint state left over",
                           len - pos);
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
