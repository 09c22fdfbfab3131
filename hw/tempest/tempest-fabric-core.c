/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric's base type: the properties every backend shares,
 * the cluster's key, attaching to a node controller, and the calls the
 * node controller makes, dispatched to the backend's class (see
 * include/hw/tempest/tempest-fabric.h).
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "crypto/secret_common.h"
#include "hw/tempest/tempest-fabric.h"
#include "fabric-proto.h"

#define FABRIC_MIN_KEY      16

/* The cluster's key: the secret named by "key", else the cluster id. */
static bool fabric_load_key(TempestFabric *f, const char *secret_id,
                            Error **errp)
{
    uint8_t *key;
    size_t len;

    if (!secret_id || !*secret_id) {
        /* Without a key of its own, the cluster id is the key. */
        key = g_malloc(8);
        fabric_st64(key, f->cluster);
        len = 8;
    } else if (qcrypto_secret_lookup(secret_id, &key, &len, errp) < 0) {
        error_prepend(errp, "fabric key: ");
        return false;
    } else if (len < FABRIC_MIN_KEY) {
        error_setg(errp, "fabric key: the secret '%s' has %zu bytes; a "
                   "cluster's key needs at least %d", secret_id, len,
                   FABRIC_MIN_KEY);
        g_free(key);
        return false;
    }
    g_free(f->key);
    f->key = key;
    f->key_len = len;
    return true;
}

bool tempest_fabric_attach(TempestFabric *f, const TempestFabricOps *ops,
                           void *opaque, Error **errp)
{
    if (f->ops) {
        error_setg(errp, "fabric '%s' is attached to a node already",
                   object_get_canonical_path_component(OBJECT(f)) ?: "");
        return false;
    }
    if (!f->nodes || f->nodes > TEMPEST_MAX_NODES || f->node >= f->nodes) {
        error_setg(errp, "fabric: node-id %u of num-nodes %u is impossible",
                   f->node, f->nodes);
        return false;
    }
    if (!f->credits || f->credits > 4096) {
        error_setg(errp, "fabric: credits must be 1 to 4096 (got %u)",
                   f->credits);
        return false;
    }
    if (!fabric_load_key(f, f->key_secret, errp)) {
        return false;
    }
    f->ops = ops;
    f->opaque = opaque;
    if (!f->fc->start(f, errp)) {
        f->ops = NULL;
        f->opaque = NULL;
        return false;
    }
    return true;
}

void tempest_fabric_detach(TempestFabric *f)
{
    if (f && f->ops) {
        f->fc->stop(f);
        f->ops = NULL;
        f->opaque = NULL;
    }
}

TempestFabric *tempest_fabric_new(const char *spec,
                                  const TempestFabricLocal *local,
                                  uint64_t cluster,
                                  const char *key_secret,
                                  unsigned node, unsigned nodes,
                                  unsigned credits, unsigned timeout_ms,
                                  const TempestFabricOps *ops, void *opaque,
                                  Error **errp)
{
    bool shm = spec && g_str_has_prefix(spec, "shm:");
    /* Nodes addressed by TCP: those of this host share memory. */
    bool mixed = spec && g_str_has_prefix(spec, "tcp:") &&
                 !(local && local->tcp_only) && nodes > 1;
    Object *o = object_new(shm || mixed ? TYPE_TEMPEST_FABRIC_SHM :
                           TYPE_TEMPEST_FABRIC_SOCKET);
    TempestFabric *f = TEMPEST_FABRIC(o);
    g_autofree char *addr = shm ? g_strdup_printf("unix:%s", spec + 4) :
                            g_strdup(spec ? spec : "");

    object_property_set_str(o, "addr", addr, &error_abort);
    if (mixed) {
        object_property_set_str(o, "host-id",
                                local && local->host_id ? local->host_id : "",
                                &error_abort);
        object_property_set_str(o, "shm-dir",
                                local && local->shm_dir ? local->shm_dir : "",
                                &error_abort);
    }
    f->key_secret = g_strdup(key_secret);
    f->cluster = cluster;
    f->node = node;
    f->nodes = nodes;
    f->credits = credits;
    f->timeout_ms = timeout_ms;
    if (!tempest_fabric_attach(f, ops, opaque, errp)) {
        object_unref(o);
        return NULL;
    }
    return f;
}

void tempest_fabric_free(TempestFabric *f)
{
    if (f) {
        tempest_fabric_detach(f);
        object_unref(OBJECT(f));
    }
}

/* The calls of the node controller, to the backend. */

int tempest_fabric_state(TempestFabric *f)
{
    return f->fc->state(f);
}

unsigned tempest_fabric_peers_up(TempestFabric *f)
{
    return f->fc->peers_up(f);
}

bool tempest_fabric_peer_up(TempestFabric *f, unsigned peer)
{
    return f->fc->peer_up(f, peer);
}

bool tempest_fabric_can_send(TempestFabric *f, unsigned peer, unsigned net)
{
    return f->fc->can_send(f, peer, net);
}

void tempest_fabric_send(TempestFabric *f, unsigned peer, unsigned net,
                         const uint8_t *pkt, size_t len)
{
    f->fc->send(f, peer, net, pkt, len);
}

uint8_t *tempest_fabric_send_begin(TempestFabric *f, unsigned peer,
                                   size_t len)
{
    return f->fc->send_begin ? f->fc->send_begin(f, peer, len) : NULL;
}

void tempest_fabric_send_commit(TempestFabric *f, unsigned peer,
                                unsigned net, size_t len)
{
    f->fc->send_commit(f, peer, net, len);
}

bool tempest_fabric_rq_open(TempestFabric *f, uint64_t base, uint32_t slots,
                            uint32_t slot_size, uint32_t tail)
{
    return f && f->fc->rq_open &&
           f->fc->rq_open(f, base, slots, slot_size, tail);
}

bool tempest_fabric_rq_close(TempestFabric *f, uint32_t *tail)
{
    return f && f->fc->rq_close && f->fc->rq_close(f, tail);
}

uint32_t *tempest_fabric_rq_sleep(TempestFabric *f, bool on, uint32_t *tail)
{
    return f && f->fc->rq_sleep ? f->fc->rq_sleep(f, on, tail) : NULL;
}

void tempest_fabric_rq_peeks(TempestFabric *f, bool on)
{
    if (f && f->fc->rq_peeks) {
        f->fc->rq_peeks(f, on);
    }
}

int tempest_fabric_rq_take(TempestFabric *f, uint32_t *tail)
{
    return f && f->fc->rq_take ? f->fc->rq_take(f, tail) : 0;
}

void tempest_fabric_rq_give(TempestFabric *f, uint32_t tail)
{
    if (f && f->fc->rq_give) {
        f->fc->rq_give(f, tail);
    }
}

bool tempest_fabric_rq_tail(TempestFabric *f, uint32_t *tail)
{
    return f && f->fc->rq_tail && f->fc->rq_tail(f, tail);
}

uint8_t *tempest_fabric_direct_begin(TempestFabric *f, unsigned peer,
                                     unsigned net, size_t len, uint32_t *seq,
                                     bool *full)
{
    *full = false;
    return f && f->fc->direct_begin ?
           f->fc->direct_begin(f, peer, net, len, seq, full) : NULL;
}

void tempest_fabric_direct_end(TempestFabric *f, unsigned peer, unsigned net,
                               uint32_t ctl)
{
    f->fc->direct_end(f, peer, net, ctl);
}

void tempest_fabric_return_credits(TempestFabric *f, unsigned peer,
                                   unsigned net, unsigned n)
{
    f->fc->return_credits(f, peer, net, n);
}

void tempest_fabric_send_coll(TempestFabric *f, unsigned peer,
                              const uint8_t *body, size_t len)
{
    f->fc->send_coll(f, peer, body, len);
}

void tempest_fabric_send_xfer(TempestFabric *f, unsigned peer,
                              const uint8_t *head, size_t head_len,
                              const uint8_t *body, size_t body_len)
{
    f->fc->send_xfer(f, peer, head, head_len, body, body_len);
}

void tempest_fabric_send_chan(TempestFabric *f, unsigned peer,
                              const uint8_t *head, size_t head_len,
                              const uint8_t *body, size_t body_len)
{
    f->fc->send_chan(f, peer, head, head_len, body, body_len);
}

size_t tempest_fabric_tx_queued(TempestFabric *f, unsigned peer)
{
    return f->fc->tx_queued(f, peer);
}

bool tempest_fabric_bye(TempestFabric *f, uint32_t status)
{
    return !f || f->fc->bye(f, status);
}

void tempest_fabric_share_ram(TempestFabric *f, int fd, void *host,
                              uint64_t base, uint64_t size)
{
    f->ram_fd = fd;
    f->ram_host = host;
    f->ram_base = base;
    f->ram_size = size;
}

void *tempest_fabric_peer_ram(TempestFabric *f, unsigned peer,
                              uint64_t *base, uint64_t *size)
{
    return f && f->fc->peer_ram ? f->fc->peer_ram(f, peer, base, size) :
           NULL;
}

bool tempest_fabric_ram_given(TempestFabric *f, unsigned peer)
{
    return f && f->fc->ram_given && f->fc->ram_given(f, peer);
}

void *tempest_fabric_coll_area(TempestFabric *f, size_t *len)
{
    return f && f->fc->coll_area ? f->fc->coll_area(f, len) : NULL;
}

void tempest_fabric_poll(TempestFabric *f, bool polling)
{
    if (f && f->fc->poll) {
        f->fc->poll(f, polling);
    }
}

void tempest_fabric_poll_hint(TempestFabric *f, uint64_t addr)
{
    if (f && f->fc->poll_hint) {
        f->fc->poll_hint(f, addr);
    }
}

void tempest_fabric_batch(TempestFabric *f, bool on)
{
    if (f && f->fc->batch) {
        f->fc->batch(f, on);
    }
}

/* ------------------------------------------------------------------ */
/* The QOM type                                                        */
/* ------------------------------------------------------------------ */

bool tempest_fabric_ckpt_quiet(TempestFabric *f, uint64_t *tx, uint64_t *rx,
                               Error **errp)
{
    *tx = *rx = 0;
    return f->fc->ckpt_quiet ? f->fc->ckpt_quiet(f, tx, rx, errp) : true;
}

char *tempest_fabric_ckpt_links(TempestFabric *f)
{
    return f->fc->ckpt_links ? f->fc->ckpt_links(f) : g_strdup("");
}

void tempest_fabric_dump(TempestFabric *f, GString *out)
{
    if (f && f->fc->dump) {
        f->fc->dump(f, out);
    }
}

void tempest_fabric_ckpt_save(TempestFabric *f, GByteArray *out)
{
    if (f->fc->ckpt_save) {
        f->fc->ckpt_save(f, out);
    }
}

bool tempest_fabric_ckpt_load(TempestFabric *f, const uint8_t *buf,
                              size_t len, size_t *used, Error **errp)
{
    *used = 0;
    return f->fc->ckpt_load ? f->fc->ckpt_load(f, buf, len, used, errp) :
           true;
}

static char *fabric_get_key(Object *obj, Error **errp)
{
    return g_strdup(TEMPEST_FABRIC(obj)->key_secret);
}

static void fabric_set_key(Object *obj, const char *value, Error **errp)
{
    TempestFabric *f = TEMPEST_FABRIC(obj);

    g_free(f->key_secret);
    f->key_secret = g_strdup(value);
}

static bool fabric_can_be_deleted(UserCreatable *uc)
{
    return !TEMPEST_FABRIC(uc)->ops;     /* not while a node uses it */
}

static void fabric_instance_init(Object *obj)
{
    TempestFabric *f = TEMPEST_FABRIC(obj);

    f->fc = TEMPEST_FABRIC_GET_CLASS(obj);
    f->ram_fd = -1;
    f->nodes = 1;
    f->credits = 32;
    f->timeout_ms = 30000;
    object_property_add_uint32_ptr(obj, "node-id", &f->node,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "num-nodes", &f->nodes,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint64_ptr(obj, "cluster-id", &f->cluster,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "credits", &f->credits,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "timeout", &f->timeout_ms,
                                   OBJ_PROP_FLAG_READWRITE);
}

static void fabric_instance_finalize(Object *obj)
{
    TempestFabric *f = TEMPEST_FABRIC(obj);

    g_free(f->key);
    g_free(f->key_secret);
}

static void fabric_class_init(ObjectClass *oc, void *data)
{
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(oc);

    ucc->can_be_deleted = fabric_can_be_deleted;
    object_class_property_add_str(oc, "key", fabric_get_key, fabric_set_key);
    object_class_property_set_description(oc, "key", "Id of a secret "
                                          "object: the cluster's key");
}

static const TypeInfo fabric_info = {
    .name = TYPE_TEMPEST_FABRIC,
    .parent = TYPE_OBJECT,
    .abstract = true,
    .instance_size = sizeof(TempestFabric),
    .instance_init = fabric_instance_init,
    .instance_finalize = fabric_instance_finalize,
    .class_size = sizeof(TempestFabricClass),
    .class_init = fabric_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_USER_CREATABLE },
        { }
    },
};

static void fabric_register_types(void)
{
    type_register_static(&fabric_info);
}

type_init(fabric_register_types)
