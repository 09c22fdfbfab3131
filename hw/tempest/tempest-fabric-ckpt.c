/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fabric's part of a whole-cluster checkpoint (docs/checkpoint.rst):
 * counting the frames this node sends to and takes from its peers, so
 * that the launcher can tell when nothing is in flight anywhere, and
 * saving what the links' flow control holds at such a quiet cut (each
 * peer's credits and sequence numbers).  The links themselves are not
 * saved: at a quiet cut none holds anything, and a restored cluster
 * makes them again as at boot, both ends starting from the saved
 * counts.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/tempest/tempest-fabric.h"
#include "tempest-fabric-internal.h"
#include "trace.h"

/* Per peer and network: credit, allowed, owed, seq_out, seq_in. */
#define CKPT_PEER_WORDS     10
#define CKPT_MAGIC          0x4b434654U     /* "TFCK" */

void fabric_ckpt_count_tx(FabricSocket *f, const uint8_t *a, size_t alen)
{
    size_t pos = 0;

    /* One frame, or (the frames that waited for a link) several whole. */
    while (pos + FABRIC_HDR_SIZE <= alen) {
        uint16_t type = a[pos] | (a[pos + 1] << 8);

        f->ckpt_tx += fabric_ckpt_counted(type);
        pos += FABRIC_HDR_SIZE + fabric_ld32(a + pos + 4);
    }
}

static bool ckpt_quiet(TempestFabric *obj, uint64_t *tx, uint64_t *rx,
                       Error **errp)
{
    FabricSocket *f = SOCK(obj);

    *tx = f->ckpt_tx;
    *rx = f->ckpt_rx;
    if (f->nodes == 1) {
        return true;
    }
    if (f->state != TEMPEST_FABRIC_READY) {
        error_setg(errp, "the cluster is not formed (fabric state %d)",
                   f->state);
        return false;
    }
    if (f->bye_waiting) {
        error_setg(errp, "the node is exiting");
        return false;
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];

        if (i == f->node) {
            continue;
        }
        if (p->gone || p->exited || p->relayed) {
            error_setg(errp, "node %u is gone", i);
            return false;
        }
        if (p->early && p->early->len) {
            error_setg(errp, "%u bytes wait for a link to node %u",
                       p->early->len, i);
            return false;
        }
        if (p->conn && (conn_pending(p->conn) || p->conn->rx_len)) {
            error_setg(errp, "frames to or from node %u are in a queue", i);
            return false;
        }
    }
    return true;
}

static void ckpt_save(TempestFabric *obj, GByteArray *out)
{
    FabricSocket *f = SOCK(obj);
    uint8_t w[4];

    fabric_shm_take_credit_all(f);
    fabric_rq_absorb_all(f);

    fabric_st32(w, CKPT_MAGIC);
    g_byte_array_append(out, w, 4);
    fabric_st32(w, f->nodes);
    g_byte_array_append(out, w, 4);
    fabric_st32(w, f->credits);
    g_byte_array_append(out, w, 4);
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];
        uint32_t v[CKPT_PEER_WORDS] = {
            p->credit[0], p->credit[1], p->allowed[0], p->allowed[1],
            p->owed[0], p->owed[1], p->seq_out[0], p->seq_out[1],
            p->seq_in[0], p->seq_in[1],
        };

        for (int k = 0; k < CKPT_PEER_WORDS; k++) {
            fabric_st32(w, v[k]);
            g_byte_array_append(out, w, 4);
        }
    }
    trace_tempest_fabric_ckpt_save(f->node, f->ckpt_tx, f->ckpt_rx);
}

static char *ckpt_links(TempestFabric *obj)
{
    FabricSocket *f = SOCK(obj);
    GString *s = g_string_new("");

    /*
     * At a quiet cut, what peers gave back through memory is final, and
     * so is what they wrote into our RQ straight.
     */
    fabric_shm_take_credit_all(f);
    fabric_rq_absorb_all(f);

    for (unsigned i = 0; i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];

        g_string_append_printf(s, "%s%u:%u,%u,%u,%u,%u,%u,%u,%u,%u,%u",
                               i ? " " : "", i, p->credit[0], p->credit[1],
                               p->allowed[0], p->allowed[1], p->owed[0],
                               p->owed[1], p->seq_out[0], p->seq_out[1],
                               p->seq_in[0], p->seq_in[1]);
    }
    return g_string_free(s, false);
}

static bool ckpt_load(TempestFabric *obj, const uint8_t *buf, size_t len,
                      size_t *used, Error **errp)
{
    FabricSocket *f = SOCK(obj);
    size_t need = 12 + (size_t)f->nodes * CKPT_PEER_WORDS * 4;
    const uint8_t *q = buf + 12;

    if (len < 12 || fabric_ld32(buf) != CKPT_MAGIC) {
        error_setg(errp, "fabric checkpoint: no fabric state");
        return false;
    }
    if (fabric_ld32(buf + 4) != f->nodes ||
        fabric_ld32(buf + 8) != f->credits) {
        error_setg(errp, "fabric checkpoint: saved for %u nodes and %u "
                   "credits, this cluster has %u and %u",
                   fabric_ld32(buf + 4), fabric_ld32(buf + 8), f->nodes,
                   f->credits);
        return false;
    }
    if (len < need) {
        error_setg(errp, "fabric checkpoint: %zu bytes, %zu needed", len,
                   need);
        return false;
    }
    /* Check everything before changing anything. */
    for (unsigned i = 0; i < f->nodes; i++) {
        const uint8_t *v = q + (size_t)i * CKPT_PEER_WORDS * 4;

        for (int net = 0; net < 2; net++) {
            uint32_t credit = fabric_ld32(v + 4 * net);
            uint32_t allowed = fabric_ld32(v + 8 + 4 * net);
            uint32_t owed = fabric_ld32(v + 16 + 4 * net);

            if (credit > f->credits || allowed > f->credits ||
                owed > allowed || (i == f->node && owed)) {
                error_setg(errp, "fabric checkpoint: impossible credit "
                           "for node %u (credit %u, allowed %u, owed %u of "
                           "%u)", i, credit, allowed, owed, f->credits);
                return false;
            }
        }
        if (i != f->node && f->peers[i].gone) {
            error_setg(errp, "fabric checkpoint: node %u is gone already",
                       i);
            return false;
        }
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        const uint8_t *v = q + (size_t)i * CKPT_PEER_WORDS * 4;
        FabricPeer *p = &f->peers[i];

        for (int net = 0; net < 2; net++) {
            p->credit[net] = fabric_ld32(v + 4 * net);
            p->allowed[net] = fabric_ld32(v + 8 + 4 * net);
            p->owed[net] = fabric_ld32(v + 16 + 4 * net);
            p->seq_out[net] = fabric_ld32(v + 24 + 4 * net);
            p->seq_in[net] = fabric_ld32(v + 32 + 4 * net);
        }
    }
    *used = need;
    trace_tempest_fabric_ckpt_load(f->node, f->nodes);
    return true;
}

void fabric_ckpt_class_init(ObjectClass *oc)
{
    TempestFabricClass *fc = TEMPEST_FABRIC_CLASS(oc);

    fc->ckpt_quiet = ckpt_quiet;
    fc->ckpt_save = ckpt_save;
    fc->ckpt_links = ckpt_links;
    fc->ckpt_load = ckpt_load;
}
