/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric: the sockets between the node controllers of one
 * cluster.  See include/hw/tempest/tempest-fabric.h for the contract and
 * fabric-proto.h for the wire format.
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "qemu/guest-random.h"
#include "crypto/secret_common.h"
#include "io/channel-socket.h"
#include "system/system.h"
#include "qom/object_interfaces.h"
#include "hw/tempest/tempest-fabric.h"
#include "tempest-fabric-internal.h"
#include "trace.h"

#define FABRIC_RETRY_MS     20
#define FABRIC_BYE_MS       200
/* How long an exiting node waits for the links its last frames need. */
#define FABRIC_BYE_LINK_MS  5000
/*
 * What a peer can make this node hold (docs/fabric.rst, "Trust"):
 * - before its HELLO and AUTH a connection has FABRIC_RX_PENDING bytes of
 *   buffer, at most FABRIC_MAX_PENDING (or two per node of the cluster,
 *   if that is more: every node below may be dialling at once) such
 *   connections exist, and each
 *   has FABRIC_HELLO_MS to prove it knows the cluster's key;
 * - a connected peer is read at most FABRIC_READ_BUDGET bytes per turn of
 *   the main loop, so a flood cannot starve the vCPUs or the other peers;
 * - while more than FABRIC_TX_PAUSE bytes wait to be written to a peer,
 *   nothing more is read from it: a peer that asks (fetch-and-op, transfer
 *   headers, ...) without reading the answers stops being read.  Nothing
 *   a node of ours sends needs that much (transfers queue at most 256 KiB
 *   per peer, DATA is under credit, the control network one frame per
 *   collective).
 */
#define FABRIC_RX_PENDING   (FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE)
#define FABRIC_MAX_PENDING  64
#define FABRIC_HELLO_MS     10000
#define FABRIC_GRACE_MS     1000
#define FABRIC_TX_PAUSE     (8 * MiB)
#define FABRIC_ACCEPT_PAUSE_MS 100
#define FABRIC_ACCEPT_BATCH 64

static void fabric_set_state(FabricSocket *f, int state)
{
    if (f->state != state) {
        f->state = state;
        trace_tempest_fabric_state(f->node, state);
        f->ops->state(f->opaque, state);
    }
}

/* Fill f->addrs from the spec, or fail with a message that says why. */
static bool fabric_parse_spec(FabricSocket *f, const char *spec,
                              Error **errp)
{
    f->addrs = g_new0(char *, f->nodes + 1);
    if (g_str_has_prefix(spec, "unix:") && spec[5]) {
        for (unsigned i = 0; i < f->nodes; i++) {
            f->addrs[i] = g_strdup_printf("unix:%s/node%u.sock", spec + 5, i);
        }
        f->unix_path = g_strdup_printf("%s/node%u.sock", spec + 5, f->node);
        return true;
    }
    if (g_str_has_prefix(spec, "tcp:") && strchr(spec, ';')) {
        g_auto(GStrv) parts = g_strsplit(spec + 4, ";", -1);

        if (g_strv_length(parts) != f->nodes) {
            error_setg(errp, "fabric '%s' names %u addresses for %u nodes",
                       spec, g_strv_length(parts), f->nodes);
            return false;
        }
        for (unsigned i = 0; i < f->nodes; i++) {
            f->addrs[i] = g_strdup(parts[i]);
        }
        return true;
    }
    if (g_str_has_prefix(spec, "tcp:")) {
        const char *colon = strrchr(spec + 4, ':');
        unsigned long port;

        if (!colon || qemu_strtoul(colon + 1, NULL, 10, &port) < 0 ||
            port == 0 || port + f->nodes > 65536) {
            error_setg(errp, "fabric '%s': expected tcp:HOST:PORT with "
                       "room for %u consecutive ports", spec, f->nodes);
            return false;
        }
        for (unsigned i = 0; i < f->nodes; i++) {
            f->addrs[i] = g_strdup_printf("%.*s:%lu",
                                          (int)(colon - (spec + 4)),
                                          spec + 4, port + i);
        }
        return true;
    }
    error_setg(errp, "fabric '%s': expected unix:DIR, tcp:HOST:PORT or "
               "tcp:HOST0:PORT0;HOST1:PORT1;...", spec);
    return false;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static void fabric_conn_writable(void *opaque);
static void fabric_conn_readable(void *opaque);
static void fabric_conn_close(FabricConn *c, const char *why);
static bool fabric_conn_parse(FabricConn *c, uint8_t *buf, size_t *len);
static void fabric_data(FabricConn *c, const FabricHeader *hdr,
                        uint32_t seq, const uint8_t *pkt);

/*
 * The sockets of the links are watched through one epoll set that the
 * main loop polls as one descriptor: glib's ppoll() looks at every
 * descriptor on every turn of the main loop, so a node with a link to
 * each of 255 peers (an all-to-all on 256 nodes) paid for 256 sockets on
 * every wake-up (docs/scale.rst).  Now a turn costs one descriptor, and
 * only the sockets with something to do are looked at.
 */
static void fabric_conn_watch(FabricConn *c, bool in, bool out)
{
    FabricSocket *f = c->fab;
    struct epoll_event ev = {
        .events = (in ? EPOLLIN : 0) | (out ? EPOLLOUT : 0),
        .data.ptr = c,
    };

    if (!c->ep_fallback) {
        if (!in && !out) {
            /* Not even EPOLLHUP, which epoll reports unasked. */
            if (c->ep_added) {
                epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
                c->ep_added = false;
            }
            return;
        }
        if (f->ep_open && epoll_ctl(f->epfd, c->ep_added ? EPOLL_CTL_MOD :
                                    EPOLL_CTL_ADD, c->fd, &ev) == 0) {
            c->ep_added = true;
            return;
        }
        /* The host refused it (max_user_watches): poll it as before. */
        if (c->ep_added) {
            epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
            c->ep_added = false;
        }
        c->ep_fallback = true;
    }
    qemu_set_fd_handler(c->fd, in ? fabric_conn_readable : NULL,
                        out ? fabric_conn_writable : NULL, c);
}

static void fabric_conn_unwatch(FabricConn *c)
{
    FabricSocket *f = c->fab;

    if (c->ep_added) {
        epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        c->ep_added = false;
    }
    if (c->ep_fallback) {
        qemu_set_fd_handler(c->fd, NULL, NULL, NULL);
    }
    /* Its events in the batch being handled are no longer anyone's. */
    for (int i = 0; i < f->ep_n; i++) {
        if (f->ep_batch[i].data.ptr == c) {
            f->ep_batch[i].data.ptr = NULL;
        }
    }
}

/*
 * The epoll set is readable: run the handlers of the sockets that are
 * ready, at most FABRIC_EP_BATCH per turn of the main loop (epoll's
 * level-triggered ready list is a queue: what is left goes first next
 * turn).  A handler may close any link: fabric_conn_unwatch() clears
 * the closed one's events from the batch.
 */
static void fabric_ep_ready(void *opaque)
{
    FabricSocket *f = opaque;
    int n = epoll_wait(f->epfd, f->ep_batch, FABRIC_EP_BATCH, 0);

    f->ep_n = MAX(n, 0);
    for (int i = 0; i < f->ep_n; i++) {
        FabricConn *c = f->ep_batch[i].data.ptr;
        uint32_t ev = f->ep_batch[i].events;

        if (c == NULL) {
            continue;
        }
        if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c->sock_reading) {
            fabric_conn_readable(c);
        }
        /* Both, as the main loop would: unless reading closed it. */
        if (f->ep_batch[i].data.ptr == c &&
            (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->writing) {
            fabric_conn_writable(c);
        }
    }
    f->ep_n = 0;
}

/*
 * Read unless too much waits for the peer (FABRIC_TX_PAUSE); write while
 * anything waits.  The handlers are changed only when that changes.
 */
static void fabric_conn_update_handlers(FabricConn *c)
{
    bool writing = sock_pending(c) != 0;
    bool reading = conn_pending(c) < FABRIC_TX_PAUSE;
    /*
     * A shared-memory link's socket carries only doorbells: it is always
     * read (the peer's ring-back is what lets our queue drain); the pause
     * is of its ring (fabric_shm_drain looks at c->reading).
     */
    bool sock_reading = reading || fabric_shm_sending(c);

    if (reading != c->reading || writing != c->writing ||
        sock_reading != c->sock_reading) {
        if (reading != c->reading) {
            trace_tempest_fabric_pause(c->fab->node, c->peer, !reading,
                                       conn_pending(c));
        }
        if (reading && !c->reading && c->shm) {
            /* Its ring was not read meanwhile either. */
            qemu_bh_schedule(c->fab->drain_bh);
        }
        c->reading = reading;
        c->writing = writing;
        c->sock_reading = sock_reading;
        fabric_conn_watch(c, sock_reading, writing);
    }
}

/* Write what is queued; returns false when the connection broke. */
static bool fabric_conn_flush(FabricConn *c)
{
    while (sock_pending(c)) {
        ssize_t n = write(c->fd, c->tx->data + c->tx_off, sock_pending(c));

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            return false;
        }
        c->tx_off += n;
    }
    /* Written bytes are dropped in bulk, not moved after every write. */
    if (!sock_pending(c)) {
        g_byte_array_set_size(c->tx, 0);
        c->tx_off = 0;
    } else if (c->tx_off >= 1 * MiB && c->tx_off >= c->tx->len / 2) {
        g_byte_array_remove_range(c->tx, 0, c->tx_off);
        c->tx_off = 0;
    }
    return true;
}

static void fabric_conn_drained(FabricConn *c)
{
    if (!conn_pending(c) && c->peer >= 0) {
        c->fab->ops->tx_drained(c->fab->opaque, c->peer);
    }
}

/*
 * Queue a frame given in up to three parts (frame header, body head, body)
 * and write as much as the socket takes.
 */
static void fabric_sock_queue3(FabricConn *c, const uint8_t *a,
                               size_t alen, const uint8_t *b, size_t blen,
                               const uint8_t *d, size_t dlen)
{
    bool was_empty = sock_pending(c) == 0;
    struct iovec iov[3] = {
        { (void *)a, alen }, { (void *)b, blen }, { (void *)d, dlen },
    };
    ssize_t done = 0;

    if (c->broken) {
        return;     /* closing: the peer will be reported down */
    }
    if (was_empty) {
        /* Nothing ahead of it: write straight from the caller's memory. */
        do {
            done = writev(c->fd, iov, 3);
        } while (done < 0 && errno == EINTR);
        if (done < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            c->broken = true;
            qemu_bh_schedule(c->fab->close_bh);
            return;
        }
        done = MAX(done, 0);
    }
    /* Queue what the socket did not take. */
    for (int i = 0; i < 3; i++) {
        size_t skip = MIN((size_t)done, iov[i].iov_len);

        done -= skip;
        if (iov[i].iov_len > skip) {
            g_byte_array_append(c->tx, (uint8_t *)iov[i].iov_base + skip,
                                iov[i].iov_len - skip);
        }
    }
    if (!fabric_conn_flush(c)) {
        /*
         * Not closed here: our caller may be sending on behalf of a
         * transfer or collective that closing (peer_down) would free.
         */
        c->broken = true;
        qemu_bh_schedule(c->fab->close_bh);
        return;
    }
    fabric_conn_update_handlers(c);
    /* Emptied here rather than in fabric_conn_writable(): say so too. */
    if (!was_empty && !sock_pending(c)) {
        fabric_conn_drained(c);
    }
}

/* A frame to the peer: into the shared-memory ring, or the socket. */
static void fabric_conn_queue3(FabricConn *c, const uint8_t *a, size_t alen,
                               const uint8_t *b, size_t blen,
                               const uint8_t *d, size_t dlen)
{
    if (c->peer >= 0) {
        fabric_ckpt_count_tx(c->fab, a, alen);
    }
    if (fabric_shm_sending(c)) {
        const struct iovec iov[3] = {
            { (void *)a, alen }, { (void *)b, blen }, { (void *)d, dlen },
        };

        fabric_shm_queue3(c, iov);
        return;
    }
    fabric_sock_queue3(c, a, alen, b, blen, d, dlen);
}

static void fabric_close_broken(void *opaque)
{
    FabricSocket *f = opaque;

    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->broken && !c->broken_why) {
            /*
             * A write fails when the peer has gone; what it said last (a
             * BYE: it exited, it was not lost) may still be unread.  Read
             * it first: the end of its stream closes c then.
             */
            fabric_conn_readable(c);
            c = f->peers[i].conn;
        }
        if (c && c->broken) {
            fabric_conn_close(c, c->broken_why ?: "write failed");
        }
    }
    for (GList *l = f->pending, *next; l; l = next) {
        FabricConn *c = l->data;

        next = l->next;
        if (c->broken) {
            fabric_conn_close(c, "write failed");
        }
    }
}

static void fabric_conn_queue(FabricConn *c, const uint8_t *data, size_t len)
{
    fabric_conn_queue3(c, data, len, NULL, 0, NULL, 0);
}

static void fabric_conn_writable(void *opaque)
{
    FabricConn *c = opaque;

    if (!fabric_conn_flush(c)) {
        fabric_conn_close(c, "write failed");
        return;
    }
    fabric_conn_update_handlers(c);
    if (!sock_pending(c)) {
        fabric_conn_drained(c);
    }
}

static void fabric_send_hello(FabricConn *c)
{
    FabricSocket *f = c->fab;
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    FabricHello h = {
        .magic = FABRIC_MAGIC, .version = FABRIC_VERSION,
        .cluster = f->cluster, .node = f->node, .nodes = f->nodes,
        .credits = f->credits, .flags = c->local ? FABRIC_HELLO_SHM : 0,
    };

    memcpy(h.nonce, c->nonce, FABRIC_NONCE_SIZE);
    fabric_put_hello(frame, &h);
    fabric_conn_queue(c, frame, sizeof(frame));
}

/* Prove to the peer whose HELLO we have that we know the key. */
static void fabric_send_auth(FabricConn *c)
{
    FabricSocket *f = c->fab;
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_AUTH_SIZE];

    fabric_put_header(frame, FABRIC_AUTH, 0, FABRIC_AUTH_SIZE);
    fabric_auth_mac(f->parent_obj.key, f->parent_obj.key_len, c->peer_nonce,
                    c->nonce, f->cluster, f->node, c->hello_node,
                    frame + FABRIC_HDR_SIZE);
    fabric_conn_queue(c, frame, sizeof(frame));
}

static void fabric_send_u32(FabricConn *c, uint16_t type, unsigned net,
                            uint32_t value)
{
    uint8_t frame[FABRIC_HDR_SIZE + 4];

    fabric_put_header(frame, type, net, 4);
    fabric_st32(frame + FABRIC_HDR_SIZE, value);
    fabric_conn_queue(c, frame, sizeof(frame));
}

/* ------------------------------------------------------------------ */
/* Peers coming and going                                              */
/* ------------------------------------------------------------------ */

static void fabric_bye_check(FabricSocket *f);

static void fabric_ready(FabricSocket *f)
{
    fabric_set_state(f, TEMPEST_FABRIC_READY);
}

static void fabric_send_pair(FabricConn *c, uint16_t type, uint32_t a,
                             uint32_t b, const uint32_t *third)
{
    uint8_t frame[FABRIC_HDR_SIZE + 12];
    size_t len = third ? 12 : 8;

    fabric_put_header(frame, type, 0, len);
    fabric_st32(frame + FABRIC_HDR_SIZE, a);
    fabric_st32(frame + FABRIC_HDR_SIZE + 4, b);
    if (third) {
        fabric_st32(frame + FABRIC_HDR_SIZE + 8, *third);
    }
    fabric_conn_queue(c, frame, FABRIC_HDR_SIZE + len);
}

/* Node 0 tells c that node went (exited with status, or lost). */
static void fabric_send_gone(FabricConn *c, unsigned node, bool exited,
                             uint32_t status)
{
    fabric_send_pair(c, FABRIC_GONE, node, exited, &status);
}

/*
 * Peer is gone: forget what waits for it and report it, once.  exited:
 * it said BYE (to us or, through GONE, to node 0) with status.
 */
static void fabric_peer_gone(FabricSocket *f, unsigned id, bool exited,
                             uint32_t status, const char *why)
{
    FabricPeer *p = &f->peers[id];

    if (p->gone) {
        return;
    }
    p->gone = true;
    p->exited = exited;
    p->exit_status = status;
    p->relayed = false;
    if (p->early) {
        g_byte_array_free(p->early, true);
        p->early = NULL;
    }
    if (!exited) {
        warn_report("tempest fabric: node %u lost node %u (%s)",
                    f->node, id, why);
    }
    if (f->node == 0) {
        /*
         * Every node hears it from here, linked to it or not; but not
         * one that said BYE itself (at the end of a run, N nodes would
         * each be told of N others for nothing).
         */
        for (unsigned i = 1; i < f->nodes; i++) {
            if (f->peers[i].conn && i != id && !f->peers[i].exited) {
                fabric_send_gone(f->peers[i].conn, id, exited, status);
            }
        }
    } else if (id == 0) {
        /* The tick gives up the links nobody can ask for now. */
        timer_mod(f->connect_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
    }
    f->ops->peer_down(f->opaque, id, exited, status);
    fabric_bye_check(f);
}

/* Could a connection still being made be node k's? */
static bool fabric_maybe_pending(FabricSocket *f, unsigned k)
{
    for (GList *l = f->pending; l; l = l->next) {
        FabricConn *c = l->data;

        if (c->called == (int)k ||
            (c->called < 0 && (c->hello_node < 0 ||
                               c->hello_node == (int)k))) {
            return true;
        }
    }
    return false;
}

/*
 * Apply node 0's word that a node went, for the nodes we have no link
 * with.  Not while a connection being made may be that node's: what it
 * sent on it before it went is read first (its own end then says it).
 */
static void fabric_apply_relayed(FabricSocket *f)
{
    for (unsigned k = 0; k < f->nodes; k++) {
        FabricPeer *p = &f->peers[k];

        if (p->relayed && !p->gone && !p->conn &&
            !fabric_maybe_pending(f, k)) {
            fabric_peer_gone(f, k, p->relay_exited, p->relay_status,
                             "node 0 says it is gone");
        }
    }
}

/* Ask node 0 to have the higher node peer dial us. */
static void fabric_ask(FabricSocket *f, unsigned peer)
{
    FabricPeer *p = &f->peers[peer];

    if (p->asked || p->conn || p->gone) {
        return;
    }
    if (f->peers[0].conn) {
        p->asked = true;
        trace_tempest_fabric_dial(f->node, f->node, peer);
        fabric_send_pair(f->peers[0].conn, FABRIC_DIAL, f->node, peer, NULL);
    }
    /*
     * Else asked when the link with node 0 is made; if node 0 is gone,
     * the tick gives the peer up (not here: our caller may be sending on
     * behalf of something peer_down would free).
     */
}

/*
 * A link with peer is wanted now (a frame waits for it, or node 0 says it
 * wants one): the higher node of the pair dials.
 */
static void fabric_want(FabricSocket *f, unsigned peer)
{
    FabricPeer *p = &f->peers[peer];
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

    if (p->conn || p->gone || p->wanted_ms) {
        return;
    }
    p->wanted_ms = now;
    trace_tempest_fabric_want(f->node, peer);
    if (peer > f->node && f->node != 0) {
        fabric_ask(f, peer);
    }
    /* The tick dials a lower node, and gives up at the timeout. */
    timer_mod(f->connect_timer, now);
}

/*
 * Queue a frame of up to three parts for peer: on its link, or until its
 * link is made (then in order, before anything sent later).
 */
static void fabric_peer_queue3(FabricSocket *f, unsigned peer,
                               const uint8_t *a, size_t alen,
                               const uint8_t *b, size_t blen,
                               const uint8_t *d, size_t dlen)
{
    FabricPeer *p = &f->peers[peer];

    if (p->conn) {
        fabric_conn_queue3(p->conn, a, alen, b, blen, d, dlen);
        return;
    }
    if (p->gone) {
        return;     /* the engines learn it through peer_down */
    }
    if (!p->early) {
        p->early = g_byte_array_new();
    }
    g_byte_array_append(p->early, a, alen);
    g_byte_array_append(p->early, b, blen);
    g_byte_array_append(p->early, d, dlen);
    fabric_want(f, peer);
}

/* Node 0: node joined; when every node has, the cluster is ready. */
static void fabric_joined(FabricSocket *f, unsigned node)
{
    FabricConn *c = f->peers[node].conn;

    /* What it must know: who went already, who asked for it. */
    for (unsigned k = 1; k < f->nodes; k++) {
        FabricPeer *p = &f->peers[k];

        if (p->gone) {
            fabric_send_gone(c, k, p->exited, p->exit_status);
        } else if (k < node && test_bit(k * f->nodes + node, f->dial_seen)) {
            trace_tempest_fabric_dial(f->node, k, node);
            fabric_send_pair(c, FABRIC_DIAL, k, node, NULL);
        }
    }
    if (f->meshed[node]) {
        return;
    }
    f->meshed[node] = true;
    if (++f->nmeshed < f->nodes || f->state != TEMPEST_FABRIC_CONNECTING) {
        return;
    }
    /*
     * Every node has started and joined: each can reach every other (the
     * links are made on first use).  A node could run its program and
     * leave before another has joined if each declared itself ready.
     */
    for (unsigned i = 1; i < f->nodes; i++) {
        if (f->peers[i].conn) {
            fabric_send_u32(f->peers[i].conn, FABRIC_MESH, 0,
                            FABRIC_MESH_ALL);
        }
    }
    fabric_ready(f);
}

static void fabric_peer_up(FabricSocket *f, FabricConn *c, unsigned id)
{
    FabricPeer *p = &f->peers[id];
    GByteArray *early = p->early;

    f->pending = g_list_remove(f->pending, c);
    f->npending--;
    c->peer = id;
    p->conn = c;
    p->relayed = false;     /* its link says when it goes */
    f->progress_ms = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    p->early = NULL;
    f->peers_up++;
    trace_tempest_fabric_peer_up(f->node, id, f->peers_up);
    if (c->called >= 0) {
        /* First, while the socket's queue is empty. */
        fabric_shm_offer(c);
    }
    if (early) {
        /* What waited for the link, in order, before anything newer. */
        fabric_conn_queue3(c, early->data, early->len, NULL, 0, NULL, 0);
        g_byte_array_free(early, true);
    }
    if (f->node == 0) {
        fabric_joined(f, id);
    } else if (id == 0) {
        for (unsigned k = f->node + 1; k < f->nodes; k++) {
            if (f->peers[k].wanted_ms) {
                fabric_ask(f, k);
            }
        }
    }
    fabric_apply_relayed(f);
    if (early && p->conn && !conn_pending(p->conn)) {
        fabric_conn_drained(p->conn);
    }
    fabric_bye_check(f);
}

static void fabric_conn_free(FabricConn *c)
{
    fabric_rq_link_gone(c);
    fabric_shm_free(c);
    fabric_conn_unwatch(c);
    object_unref(OBJECT(c->sioc));
    g_byte_array_free(c->tx, true);
    g_free(c->rx);
    g_free(c);
}

static void fabric_conn_close(FabricConn *c, const char *why)
{
    FabricSocket *f = c->fab;

    trace_tempest_fabric_close(f->node, c->peer, why);
    if (c->peer < 0) {
        if (c->local && c->called >= 0) {
            /* Its Unix socket did not give us the node: TCP, in time. */
            fabric_host_failed(f, c->called, true, why);
        }
        f->pending = g_list_remove(f->pending, c);
        f->npending--;
        fabric_conn_free(c);
        fabric_apply_relayed(f);
        return;
    }

    FabricPeer *p = &f->peers[c->peer];
    unsigned id = c->peer;

    p->conn = NULL;
    f->peers_up--;
    fabric_conn_free(c);
    fabric_peer_gone(f, id, p->exited, p->exit_status, why);
}

static bool fabric_hello_ok(FabricSocket *f, FabricConn *c,
                            const FabricHello *h, const char **why)
{
    if (h->magic != FABRIC_MAGIC || h->version != FABRIC_VERSION) {
        *why = "not a tempest fabric peer, or another version";
    } else if (h->cluster != f->cluster) {
        *why = "HELLO from another cluster";
    } else if (h->nodes != f->nodes || h->node >= f->nodes ||
               h->node == f->node) {
        *why = "HELLO with an impossible node id or cluster size";
    } else if (h->credits != f->credits) {
        *why = "HELLO with a different credit setting";
    } else if (c->called >= 0 ? (int)h->node != c->called :
               h->node < f->node) {
        *why = "HELLO from the wrong node";
    } else if (f->peers[h->node].conn || f->peers[h->node].gone) {
        *why = "second connection from one node";
    } else {
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* Input                                                               */
/* ------------------------------------------------------------------ */

static void fabric_drop(FabricSocket *f, int peer, const char *why)
{
    trace_tempest_fabric_drop(f->node, peer, why);
    f->ops->dropped(f->opaque, peer, why);
}

/*
 * DIAL {from, to} from peer.  Node 0 takes it from 'from' itself, for a
 * higher node, once per pair, and passes it to 'to' (now, or when 'to'
 * joins); 'to' takes it only from node 0, for itself, and dials 'from'.
 */
static void fabric_dial_frame(FabricSocket *f, unsigned peer, uint32_t from,
                              uint32_t to)
{
    if (f->node == 0) {
        if (from != peer || to <= from || to >= f->nodes) {
            fabric_drop(f, peer, "DIAL not for a link of its own");
            return;
        }
        if (test_and_set_bit(from * f->nodes + to, f->dial_seen)) {
            fabric_drop(f, peer, "second DIAL for one link");
            return;
        }
        trace_tempest_fabric_dial(f->node, from, to);
        if (f->peers[to].conn) {
            fabric_send_pair(f->peers[to].conn, FABRIC_DIAL, from, to, NULL);
        }
        /* Else passed on when it joins, or it is gone and 'from' told. */
        return;
    }
    if (peer != 0 || to != f->node || from == 0 || from >= to) {
        fabric_drop(f, peer, "unexpected DIAL");
        return;
    }
    fabric_want(f, from);
}

/* GONE {node, exited, status}: only from node 0, about another node. */
static void fabric_gone_frame(FabricSocket *f, unsigned peer, uint32_t node,
                              uint32_t exited, uint32_t status)
{
    FabricPeer *p;

    if (peer != 0 || node == 0 || node == f->node || node >= f->nodes) {
        fabric_drop(f, peer, "unexpected GONE");
        return;
    }
    p = &f->peers[node];
    trace_tempest_fabric_gone(f->node, node, exited, status);
    if (p->relayed) {
        fabric_drop(f, peer, "second GONE for one node");
        return;
    }
    if (p->gone || p->conn) {
        return;     /* its own link said it, or will */
    }
    p->relayed = true;
    p->relay_exited = exited;
    p->relay_status = status;
    fabric_apply_relayed(f);
}

/* Handle one valid frame; returns false when c was closed. */
static bool fabric_frame(FabricConn *c, const FabricHeader *hdr,
                         const uint8_t *body)
{
    FabricSocket *f = c->fab;
    FabricPeer *p;
    const char *why;
    FabricHello h;
    uint32_t v, had;

    if (c->peer < 0 && c->hello_node >= 0) {
        uint8_t mac[FABRIC_AUTH_SIZE];

        /* Its HELLO was good: now it must prove it knows the key. */
        if (hdr->type != FABRIC_AUTH) {
            fabric_drop(f, -1, "no AUTH after HELLO");
            fabric_conn_close(c, "no AUTH after HELLO");
            return false;
        }
        fabric_auth_mac(f->parent_obj.key, f->parent_obj.key_len, c->nonce,
                        c->peer_nonce, f->cluster, c->hello_node, f->node,
                        mac);
        why = !fabric_mac_equal(mac, body) ?
              "AUTH failed: the peer does not know the cluster's key" :
              f->peers[c->hello_node].conn || f->peers[c->hello_node].gone ?
              "second connection from one node" : NULL;
        if (why) {
            if (!f->refusal_reported) {
                f->refusal_reported = true;
                error_report("tempest fabric: node %u refused a connection: "
                             "%s (node %d)", f->node, why, c->hello_node);
            }
            fabric_drop(f, -1, why);
            fabric_conn_close(c, why);
            return false;
        }
        fabric_peer_up(f, c, c->hello_node);
        return true;
    }
    if (c->peer < 0) {
        if (hdr->type != FABRIC_HELLO) {
            fabric_drop(f, -1, "data before HELLO");
            fabric_conn_close(c, "data before HELLO");
            return false;
        }
        fabric_get_hello(body, &h);
        if (!fabric_hello_ok(f, c, &h, &why)) {
            /* Said once: the caller will keep trying until the timeout. */
            if (!f->refusal_reported) {
                f->refusal_reported = true;
                error_report("tempest fabric: node %u refused a connection: "
                             "%s (node %u, cluster 0x%" PRIx64 ")", f->node,
                             why, h.node, h.cluster);
            }
            fabric_drop(f, -1, why);
            fabric_conn_close(c, why);
            return false;
        }
        c->hello_node = h.node;
        c->hello_flags = h.flags;
        memcpy(c->peer_nonce, h.nonce, FABRIC_NONCE_SIZE);
        if (c->called < 0) {
            fabric_send_hello(c);
        }
        fabric_send_auth(c);
        return true;
    }

    p = &f->peers[c->peer];
    f->ckpt_rx += fabric_ckpt_counted(hdr->type);
    switch (hdr->type) {
    case FABRIC_HELLO:
        fabric_drop(f, c->peer, "second HELLO");
        return true;
    case FABRIC_AUTH:
        fabric_drop(f, c->peer, "second AUTH");
        return true;
    case FABRIC_DATA:
        fabric_data(c, hdr, fabric_ld32(body), body + 4);
        return true;
    case FABRIC_CREDIT:
        /*
         * On a shared-memory link the count is in memory and the frame
         * (of 0) only wakes a sender that waits for it.
         */
        had = p->credit[hdr->net];
        fabric_shm_take_credit(f, c->peer, hdr->net, false);
        if (!p->credit[hdr->net] && !fabric_ld32(body)) {
            /*
             * A wake-up with no credit to take: the receiver cleared our
             * waiting bit for credit we had taken already (our look
             * after setting the bit found it, and we waited again before
             * its clear).  We still wait: set the bit again and look
             * once more, or no later give-back wakes us (docs/fabric.rst,
             * "The radix-8 hang again").
             */
            fabric_shm_take_credit(f, c->peer, hdr->net, true);
        }
        v = fabric_ld32(body);
        if (v > f->credits - p->credit[hdr->net]) {
            fabric_drop(f, c->peer, "CREDIT beyond what was used");
            return true;
        }
        p->credit[hdr->net] += v;
        trace_tempest_fabric_credit(f->node, c->peer, hdr->net,
                                    p->credit[hdr->net]);
        if (!had && p->credit[hdr->net]) {
            f->ops->credit(f->opaque, c->peer, hdr->net);
        }
        return true;
    case FABRIC_COLL:
        f->ops->coll(f->opaque, c->peer, body, hdr->len);
        return true;
    case FABRIC_SHM:
    case FABRIC_BELL:
        if (!f->shm) {
            /* A fabric of sockets only: there is no shared memory. */
            fabric_drop(f, c->peer, "SHM or BELL on a socket-only fabric");
            return true;
        }
        return fabric_shm_frame(c, hdr, body);
    case FABRIC_XFER:
        f->ops->xfer(f->opaque, c->peer, body, hdr->len);
        return true;
    case FABRIC_CHAN:
        if (f->ops->chan) {
            f->ops->chan(f->opaque, c->peer, body, hdr->len);
        } else {
            fabric_drop(f, c->peer, "CHAN with no channel controller");
        }
        return true;
    case FABRIC_MESH:
        v = fabric_ld32(body);
        if (v == FABRIC_MESH_ALL && c->peer == 0 &&
            f->state == TEMPEST_FABRIC_CONNECTING) {
            /*
             * Node 0's word is enough: every node has joined it.  Some
             * may have run and left since (their sockets are not ordered
             * with node 0's): still ready.
             */
            fabric_ready(f);
        } else {
            fabric_drop(f, c->peer, "unexpected MESH");
        }
        return true;
    case FABRIC_DIAL:
        fabric_dial_frame(f, c->peer, fabric_ld32(body),
                          fabric_ld32(body + 4));
        return true;
    case FABRIC_GONE:
        fabric_gone_frame(f, c->peer, fabric_ld32(body),
                          fabric_ld32(body + 4), fabric_ld32(body + 8));
        return true;
    case FABRIC_BYE:
        p->exited = true;
        p->exit_status = fabric_ld32(body);
        trace_tempest_fabric_bye(f->node, c->peer, p->exit_status);
        return true;
    }
    return true;
}

/*
 * A DATA frame of a peer that proved itself, its sequence number @seq
 * taken out of it already: @pkt (hdr->len - 4 bytes) may lie in the
 * peer's shared memory, so nothing is read from it here; the packet's
 * length is the header's, checked by fabric_parse().
 */
static void fabric_data(FabricConn *c, const FabricHeader *hdr,
                        uint32_t seq, const uint8_t *pkt)
{
    FabricSocket *f = c->fab;
    FabricPeer *p = &f->peers[c->peer];

    if (!p->allowed[hdr->net]) {
        fabric_drop(f, c->peer, "DATA beyond its credit");
        return;
    }
    if (c->shm) {
        fabric_rq_absorb(c);    /* what it wrote into our RQ came first */
    }
    if (seq != p->seq_in[hdr->net]) {
        fabric_drop(f, c->peer, "DATA out of sequence");
        return;
    }
    p->allowed[hdr->net]--;
    p->seq_in[hdr->net]++;
    trace_tempest_fabric_rx(f->node, c->peer, hdr->net, seq, hdr->len);
    f->ops->packet(f->opaque, c->peer, hdr->net, seq, pkt, hdr->len - 4);
}

/* A DATA frame straight out of a shared-memory ring (counted as any). */
static void fabric_ring_data(FabricConn *c, const FabricHeader *hdr,
                             uint32_t seq, const uint8_t *pkt)
{
    c->fab->ckpt_rx += fabric_ckpt_counted(hdr->type);
    fabric_data(c, hdr, seq, pkt);
}

static bool fabric_conn_parse(FabricConn *c, uint8_t *buf, size_t *len)
{
    FabricSocket *f = c->fab;
    size_t off = 0;

    for (;;) {
        FabricHeader hdr;
        size_t flen = 0;
        FabricParse r = fabric_parse(buf + off, *len - off, &hdr, &flen);

        if (r == FABRIC_PARSE_NEED_MORE) {
            break;
        }
        if (r == FABRIC_PARSE_FATAL) {
            fabric_drop(f, c->peer, "frame length impossible: stream lost");
            fabric_conn_close(c, "malformed stream");
            return false;
        }
        if (r == FABRIC_PARSE_BAD) {
            fabric_drop(f, c->peer, "malformed frame");
        } else if (!fabric_frame(c, &hdr, buf + off + FABRIC_HDR_SIZE)) {
            return false;
        }
        off += flen;
    }
    memmove(buf, buf + off, *len - off);
    *len -= off;
    return true;
}

/* Read and handle what the socket has, until it has no more. */
static void fabric_conn_readable(void *opaque)
{
    FabricConn *c = opaque;
    FabricSocket *f = c->fab;
    size_t budget = FABRIC_READ_BUDGET;

    for (;;) {
        size_t space;
        ssize_t n;

        if (c->peer >= 0 && c->rx_size < FABRIC_RX_BUF) {
            /* Trusted now: a buffer for a stream of frames. */
            c->rx_size = FABRIC_RX_BUF;
            c->rx = g_realloc(c->rx, c->rx_size);
        } else if (c->rx_len == c->rx_size) {
            /*
             * Only a frame announced this large gets here: bounded.  A
             * connection before its HELLO never has a larger one.
             */
            if (c->peer < 0 || c->rx_size >= FABRIC_HDR_SIZE +
                                              FABRIC_MAX_BODY) {
                fabric_drop(f, c->peer, "frame larger than allowed");
                fabric_conn_close(c, "malformed stream");
                return;
            }
            c->rx_size = MIN(c->rx_size * 2,
                             FABRIC_HDR_SIZE + FABRIC_MAX_BODY);
            c->rx = g_realloc(c->rx, c->rx_size);
        }
        space = MIN(c->rx_size - c->rx_len, budget);
        n = fabric_shm_read(c, c->rx + c->rx_len, space);
        if (n == 0) {
            /*
             * What it put in its ring before it went is still to read: at
             * most a ringful (another holder of the memory could go on
             * writing).
             */
            if (c->shm && !fabric_shm_drain_last(c)) {
                return;
            }
            fabric_conn_close(c, "connection closed");
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                fabric_conn_close(c, "read failed");
            }
            return;
        }
        c->rx_len += n;
        if (!fabric_conn_parse(c, c->rx, &c->rx_len)) {
            return;
        }
        budget -= n;
        if ((size_t)n < space || !budget || !c->reading) {
            /*
             * The socket is drained, or this peer had its turn (the rest
             * is read on the next turn of the main loop, after the vCPUs
             * and the other peers), or it is paused.
             */
            return;
        }
    }
}

static FabricConn *fabric_conn_new(FabricSocket *f, QIOChannelSocket *sioc,
                                   int called)
{
    FabricConn *c = g_new0(FabricConn, 1);

    c->fab = f;
    c->sioc = sioc;
    c->fd = sioc->fd;
    c->peer = -1;
    c->called = called;
    c->hello_node = -1;
    c->local = f->shm && sioc->localAddr.ss_family == AF_UNIX;
    c->passed_fd[0] = c->passed_fd[1] = -1;
    c->born_ms = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    qemu_guest_getrandom_nofail(c->nonce, sizeof(c->nonce));
    c->rx_size = FABRIC_RX_PENDING;
    c->rx = g_malloc(c->rx_size);
    c->tx = g_byte_array_new();
    qio_channel_set_blocking(QIO_CHANNEL(sioc), false, NULL);
    qio_channel_set_delay(QIO_CHANNEL(sioc), false);
    f->pending = g_list_prepend(f->pending, c);
    f->npending++;
    timer_mod(f->pending_timer, c->born_ms + FABRIC_HELLO_MS);
    fabric_conn_update_handlers(c);
    return c;
}

/*
 * How long connection c may take to prove itself: FABRIC_HELLO_MS for a
 * good HELLO (a stranger, or a socket that accepts and never answers, is
 * dropped then), then the fabric's own timeout for the AUTH.  Once the
 * HELLOs are through, each side has sent or is sending its AUTH, and the
 * other side may already count the link as made; closing it because
 * this node or its peer did not run for a while (an overloaded host)
 * would make that side lose us for good.  Before the HELLO nothing can
 * have counted it (an AUTH only follows a good HELLO), and a link not
 * made in the fabric's timeout is given up by both sides anyway.
 */
static int64_t fabric_pending_limit(FabricSocket *f, FabricConn *c)
{
    if (c->hello_node >= 0) {
        return MAX(f->parent_obj.timeout_ms, FABRIC_HELLO_MS);
    }
    return FABRIC_HELLO_MS;
}

/* Bytes from the peer wait in c's socket, not read yet. */
static bool fabric_input_waiting(FabricConn *c)
{
    int n = 0;

    return ioctl(c->fd, FIONREAD, &n) == 0 && n > 0;
}

/*
 * Close connections that did not prove themselves in time.  A node the
 * host did not run for longer than the limit (a QEMU of 256 on 2 cores
 * was not run for 13.6 s) finds its timer due and the peers' HELLOs
 * waiting in their sockets in the same turn of its main loop: a
 * connection with input waiting gets FABRIC_GRACE_MS more, once, for the
 * main loop to read it.  Once only, so a peer cannot keep a connection
 * by trickling bytes.
 */
static void fabric_pending_expire(void *opaque)
{
    FabricSocket *f = opaque;
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME), next = 0;

    for (GList *l = f->pending, *nl; l; l = nl) {
        FabricConn *c = l->data;
        int64_t end = c->born_ms + fabric_pending_limit(f, c) + c->grace_ms;

        nl = l->next;
        if (now >= end && !c->grace_ms && fabric_input_waiting(c)) {
            c->grace_ms = now - end + FABRIC_GRACE_MS;
            end = now + FABRIC_GRACE_MS;
            trace_tempest_fabric_grace(f->node, c->called);
        }
        if (now >= end) {
            fabric_drop(f, -1, "no HELLO and AUTH in time");
            fabric_conn_close(c, "no HELLO and AUTH in time");
        } else if (!next || end < next) {
            next = end;
        }
    }
    if (next) {
        timer_mod(f->pending_timer, next);
    }
}

static void fabric_accept(void *opaque);

/* Watch our listening sockets (TCP or Unix, and this host's Unix one). */
static void fabric_accept_watch(FabricSocket *f, bool on)
{
    qemu_set_fd_handler(f->listener->fd, on ? fabric_accept : NULL, NULL, f);
    if (f->local_listener) {
        qemu_set_fd_handler(f->local_listener->fd,
                            on ? fabric_accept : NULL, NULL, f);
    }
}

static void fabric_accept_resume(void *opaque)
{
    fabric_accept_watch(opaque, true);
}

/*
 * Take the connections waiting on listener, up to FABRIC_ACCEPT_BATCH: a
 * full TCP accept queue drops the dialler's last handshake segment, and
 * the kernel's retries back off to seconds (docs/fabric.rst, "Forming
 * the cluster"), so the queue is emptied, not taken one a turn.
 */
static void fabric_accept_from(FabricSocket *f, QIOChannelSocket *listener)
{
    for (int i = 0; i < FABRIC_ACCEPT_BATCH; i++) {
        QIOChannelSocket *sioc = qio_channel_socket_accept(listener, NULL);

        if (!sioc) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                /*
                 * Out of descriptors: the listener stays readable, so stop
                 * watching it for a while instead of spinning.
                 */
                fabric_accept_watch(f, false);
                timer_mod(f->accept_timer,
                          qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                          FABRIC_ACCEPT_PAUSE_MS);
            }
            return;
        }
        trace_tempest_fabric_accept(f->node);
        if (f->npending >= MAX(FABRIC_MAX_PENDING, 2 * f->nodes)) {
            /* Too many strangers at once: refused at the door. */
            f->dropped_conns++;
            fabric_drop(f, -1, "too many connections before HELLO");
            object_unref(OBJECT(sioc));
            continue;
        }
        fabric_conn_new(f, sioc, -1);
    }
}

/* Either listener is readable (both are non-blocking): take what waits. */
static void fabric_accept(void *opaque)
{
    FabricSocket *f = opaque;

    fabric_accept_from(f, f->listener);
    if (f->local_listener) {
        fabric_accept_from(f, f->local_listener);
    }
}

static void fabric_dial_done(QIOTask *task, gpointer opaque)
{
    FabricDial *d = opaque;
    FabricSocket *f = d->fab;
    QIOChannelSocket *sioc = d->sioc;
    Error *err = NULL;
    FabricConn *c;

    d->sioc = NULL;
    if (!f) {
        object_unref(OBJECT(sioc));    /* the fabric went meanwhile */
        return;
    }
    f->dials[d->node] = NULL;
    if (qio_task_propagate_error(task, &err)) {
        trace_tempest_fabric_dial_failed(f->node, d->node,
                                         error_get_pretty(err));
        error_free(err);
        if (d->local) {
            fabric_host_failed(f, d->node, false, "connect failed");
        }
        object_unref(OBJECT(sioc));    /* tried again at the next tick */
        return;
    }
    if (f->peers[d->node].conn || f->peers[d->node].gone) {
        object_unref(OBJECT(sioc));
        return;
    }
    if (!d->local) {
        g_autofree char *local = fabric_host_addr(f, d->node);

        if (local) {
            /*
             * Its Unix socket (bound before its TCP one) appeared since we
             * looked: the link is made there, at the next tick.
             */
            object_unref(OBJECT(sioc));
            return;
        }
    }
    trace_tempest_fabric_connect(f->node, d->node);
    c = fabric_conn_new(f, sioc, d->node);
    fabric_send_hello(c);
}

/*
 * Connect to node i without blocking the main loop: a peer whose backlog
 * is full, or a TCP address that does not answer, costs a thread, never
 * the vCPUs or the monitor.
 */
static void fabric_dial(FabricSocket *f, unsigned i)
{
    /* A node of this host, in a mixed cluster: its Unix socket. */
    g_autofree char *local = fabric_host_addr(f, i);
    g_autoptr(SocketAddress) addr = socket_parse(local ?: f->addrs[i], NULL);
    FabricDial *d;

    if (!addr) {
        return;
    }
    d = g_new0(FabricDial, 1);
    d->fab = f;
    d->node = i;
    d->local = local;
    d->sioc = qio_channel_socket_new();
    f->dials[i] = d;
    trace_tempest_fabric_dial_start(f->node, i, local ?: f->addrs[i]);
    qio_channel_socket_connect_async(d->sioc, addr, fabric_dial_done, d,
                                     g_free, NULL);
}

/* Is a connection to node i (lower than us) being made? */
static bool fabric_dialling(FabricSocket *f, unsigned i)
{
    if (f->dials[i]) {
        return true;
    }
    for (GList *l = f->pending; l; l = l->next) {
        FabricConn *c = l->data;

        if (c->called == (int)i) {
            return true;
        }
    }
    return false;
}

/*
 * Dial the lower nodes we need a link with (node 0 always, the others
 * when wanted); give up on the cluster at the deadline, and on a wanted
 * link that is not made in the fabric's timeout.  That timeout counts
 * from when the link was wanted or from when a link of ours was last
 * made (its AUTH proved), whichever is later: on a host loaded far
 * beyond its cores a node makes its links slowly but makes them, and a
 * link given up to a live peer loses what either sends.  A peer that
 * dies is reported by node 0 (GONE) whatever the timeout; a link that is
 * never made waits at most one timeout per other node.
 */
static void fabric_connect_tick(void *opaque)
{
    FabricSocket *f = opaque;
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    unsigned timeout = f->parent_obj.timeout_ms;
    bool forming = f->state == TEMPEST_FABRIC_CONNECTING;
    bool waiting = false, dialling = false;

    if (f->state == TEMPEST_FABRIC_FAILED) {
        return;
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];

        if (i == f->node || p->conn || p->gone) {
            continue;
        }
        if (!p->wanted_ms && !(i == 0 || (f->node == 0 && forming))) {
            continue;
        }
        if (p->wanted_ms && !forming &&
            now - MAX(p->wanted_ms, f->progress_ms) > timeout) {
            fabric_peer_gone(f, i, false, 0, "no link made in time");
            continue;
        }
        if (p->wanted_ms && i > f->node && !p->asked && f->node != 0 &&
            f->peers[0].gone) {
            /* Nobody can pass our DIAL on: it cannot be reached. */
            fabric_peer_gone(f, i, false, 0,
                             "no link yet, and node 0 is gone");
            continue;
        }
        waiting = true;
        if (i < f->node) {
            dialling = true;
            if (!fabric_dialling(f, i)) {
                fabric_dial(f, i);
            }
        }
    }
    if (forming && now > f->deadline_ms) {
        g_autoptr(GString) missing = g_string_new("");

        for (unsigned i = 0; i < f->nodes; i++) {
            if (i != f->node && (f->node == 0 ? !f->meshed[i] :
                                 i == 0 && !f->peers[0].conn)) {
                g_string_append_printf(missing, " %u", i);
            }
        }
        error_report("tempest fabric: node %u: the cluster did not form: "
                     "no connection with node(s)%s", f->node,
                     missing->len ? missing->str : " (none: no word from "
                     "node 0)");
        fabric_set_state(f, TEMPEST_FABRIC_FAILED);
        return;
    }
    fabric_bye_check(f);
    if (dialling || f->bye_waiting) {
        timer_mod(f->connect_timer, now + FABRIC_RETRY_MS);
    } else if (waiting || forming) {
        /*
         * Only waiting (to be dialled, for node 0's word): an idle node
         * must not wake 50 times a second, hundreds of them at once.
         * What it waits for reschedules the tick when it comes.
         */
        timer_mod(f->connect_timer, MIN(now + 1000,
                  forming ? f->deadline_ms + 1 : INT64_MAX));
    }
}

/* ------------------------------------------------------------------ */
/* The interface                                                       */
/* ------------------------------------------------------------------ */

static void fabric_exit_flush(Notifier *n, void *data);

static void sock_stop(TempestFabric *obj);

static const FabricLinkUp fabric_link_up = {
    .drop = fabric_drop,
    .close = fabric_conn_close,
    .sock_queue3 = fabric_sock_queue3,
    .send_u32 = fabric_send_u32,
    .parse = fabric_conn_parse,
    .data = fabric_ring_data,
    .drained = fabric_conn_drained,
    .update = fabric_conn_update_handlers,
};

/* Attached to its node controller: listen, and start connecting. */
static bool sock_start(TempestFabric *obj, Error **errp)
{
    FabricSocket *f = SOCK(obj);
    const char *spec = f->spec;
    unsigned node = obj->node, nodes = obj->nodes, credits = obj->credits;
    g_autoptr(SocketAddress) addr = NULL;

    f->ops = obj->ops;
    f->opaque = obj->opaque;
    f->cluster = obj->cluster;
    f->node = node;
    f->nodes = nodes;
    f->credits = credits;
    f->credit_batch = MAX(1, credits / 4);
    f->peers = g_new0(FabricPeer, nodes);
    f->meshed = g_new0(bool, nodes);
    f->dials = g_new0(FabricDial *, nodes);
    /* Every link starts with its credit, made or not. */
    for (unsigned i = 0; i < nodes; i++) {
        for (int net = 0; net < 2; net++) {
            f->peers[i].credit[net] = credits;
            f->peers[i].allowed[net] = credits;
        }
    }
    if (node == 0) {
        f->meshed[0] = true;
        f->nmeshed = 1;
        f->dial_seen = bitmap_new((size_t)nodes * nodes);
    }
    f->state = TEMPEST_FABRIC_CONNECTING;

    if (nodes == 1) {
        f->state = TEMPEST_FABRIC_READY;
        return true;
    }
    if (!spec || !*spec) {
        error_setg(errp, "a cluster of %u nodes needs a fabric "
                   "(e.g. fabric=unix:DIR)", nodes);
        goto fail;
    }
    if (!fabric_parse_spec(f, spec, errp)) {
        goto fail;
    }
    if (object_dynamic_cast(OBJECT(f), TYPE_TEMPEST_FABRIC_SHM) &&
        !fabric_shm_start(f, &fabric_link_up, errp)) {
        goto fail;
    }

    if (f->shm && g_str_has_prefix(spec, "tcp:")) {
        /* A mixed cluster: this host's nodes meet on Unix sockets too. */
        fabric_host_start(f);
    }
    addr = socket_parse(f->addrs[node], errp);
    if (!addr) {
        goto fail;
    }
    if (f->unix_path) {
        unlink(f->unix_path);
    }
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (f->epfd < 0) {
        error_setg_errno(errp, errno, "fabric: epoll_create1");
        goto fail;
    }
    f->ep_open = true;
    qemu_set_fd_handler(f->epfd, fabric_ep_ready, NULL, f);
    f->listener = qio_channel_socket_new();
    if (qio_channel_socket_listen_sync(f->listener, addr,
                                       fabric_backlog(nodes), errp) < 0) {
        error_prepend(errp, "fabric: node %u cannot listen at %s: ", node,
                      f->addrs[node]);
        goto fail;
    }
    qio_channel_set_blocking(QIO_CHANNEL(f->listener), false, NULL);
    fabric_accept_watch(f, true);
    trace_tempest_fabric_listen(node, f->addrs[node]);

    f->close_bh = qemu_bh_new(fabric_close_broken, f);
    f->pending_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                    fabric_pending_expire, f);
    f->accept_timer = timer_new_ms(QEMU_CLOCK_REALTIME, fabric_accept_resume,
                                   f);
    f->exit_notifier.notify = fabric_exit_flush;
    qemu_add_exit_notifier(&f->exit_notifier);
    f->deadline_ms = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                     obj->timeout_ms;
    f->connect_timer = timer_new_ms(QEMU_CLOCK_REALTIME, fabric_connect_tick,
                                    f);
    timer_mod(f->connect_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
    return true;

fail:
    sock_stop(obj);
    return false;
}

/* Detached: close everything and forget it all (it may start again). */
static void sock_stop(TempestFabric *obj)
{
    FabricSocket *f = SOCK(obj);
    char *spec = f->spec, *host_id = f->host_id, *shm_dir = f->shm_dir;

    if (f->exit_notifier.notify) {
        qemu_remove_exit_notifier(&f->exit_notifier);
    }
    fabric_shm_stop(f);
    if (f->connect_timer) {
        timer_free(f->connect_timer);
    }
    if (f->pending_timer) {
        timer_free(f->pending_timer);
    }
    if (f->accept_timer) {
        timer_free(f->accept_timer);
    }
    if (f->close_bh) {
        qemu_bh_delete(f->close_bh);
    }
    for (unsigned i = 0; f->dials && i < f->nodes; i++) {
        if (f->dials[i]) {
            f->dials[i]->fab = NULL;    /* its callback frees the channel */
        }
    }
    for (unsigned i = 0; f->peers && i < f->nodes; i++) {
        if (f->peers[i].conn) {
            fabric_conn_free(f->peers[i].conn);
        }
        if (f->peers[i].early) {
            g_byte_array_free(f->peers[i].early, true);
        }
    }
    while (f->pending) {
        FabricConn *c = f->pending->data;

        f->pending = g_list_remove(f->pending, c);
        fabric_conn_free(c);
    }
    fabric_host_stop(f);
    if (f->ep_open) {
        qemu_set_fd_handler(f->epfd, NULL, NULL, NULL);
        close(f->epfd);
    }
    if (f->listener) {
        qemu_set_fd_handler(f->listener->fd, NULL, NULL, NULL);
        object_unref(OBJECT(f->listener));
    }
    if (f->unix_path) {
        unlink(f->unix_path);
    }
    g_strfreev(f->addrs);
    g_free(f->unix_path);
    g_free(f->peers);
    g_free(f->meshed);
    g_free(f->dial_seen);
    g_free(f->dials);
    /* Back to a freshly made object, its property kept. */
    memset((char *)f + sizeof(TempestFabric), 0,
           sizeof(*f) - sizeof(TempestFabric));
    f->spec = spec;
    f->host_id = host_id;
    f->shm_dir = shm_dir;
}

static int sock_state(TempestFabric *obj)
{
    FabricSocket *f = SOCK(obj);

    return f->state;
}

static unsigned sock_peers_up(TempestFabric *obj)
{
    FabricSocket *f = SOCK(obj);

    return f->peers_up;
}

static bool sock_peer_up(TempestFabric *obj, unsigned peer)
{
    FabricSocket *f = SOCK(obj);

    /* Linked or not: a link is made on first use. */
    return peer < f->nodes && !f->peers[peer].gone;
}

static bool sock_can_send(TempestFabric *obj, unsigned peer, unsigned net)
{
    FabricSocket *f = SOCK(obj);

    if (!sock_peer_up(obj, peer)) {
        return false;
    }
    if (!f->peers[peer].credit[net]) {
        fabric_shm_take_credit(f, peer, net, true);
    }
    return f->peers[peer].credit[net];
}

/*
 * A DATA packet of len bytes to peer on net goes: its credit taken, its
 * sequence number given (returned) and traced, and the frame's header
 * and number written into frame (FABRIC_HDR_SIZE + 4 bytes).
 */
static uint32_t sock_data_frame(FabricSocket *f, unsigned peer,
                                unsigned net, size_t len, uint8_t *frame)
{
    FabricPeer *p = &f->peers[peer];
    uint32_t seq = p->seq_out[net]++;

    assert(p->credit[net] > 0);
    p->credit[net]--;
    trace_tempest_fabric_tx(f->node, peer, net, seq, len);
    fabric_put_header(frame, FABRIC_DATA, net, 4 + len);
    fabric_st32(frame + FABRIC_HDR_SIZE, seq);
    return seq;
}

static void sock_send(TempestFabric *obj, unsigned peer, unsigned net,
                      const uint8_t *pkt, size_t len)
{
    FabricSocket *f = SOCK(obj);
    uint8_t frame[FABRIC_HDR_SIZE + 4];
    uint32_t seq;

    assert(len >= TEMPEST_PKT_DATA && len <= TEMPEST_PKT_MAX_SIZE);
    seq = sock_data_frame(f, peer, net, len, frame);
    if (peer == f->node) {
        f->ops->packet(f->opaque, peer, net, seq, pkt, len);
        return;
    }
    /* The packet as a piece of its own: no copy into the frame. */
    fabric_peer_queue3(f, peer, frame, sizeof(frame), pkt, len, NULL, 0);
}

/*
 * A DATA frame built in place (docs/fabric.rst, "Straight into the
 * ring"): its packet's bytes where sock_send() would have copied them,
 * in the ring of the peer's link, when the link is in shared memory and
 * nothing waits to go into it first.
 */
static uint8_t *sock_send_begin(TempestFabric *obj, unsigned peer,
                                size_t len)
{
    FabricSocket *f = SOCK(obj);
    FabricConn *c = peer < f->nodes && peer != f->node ?
                    f->peers[peer].conn : NULL;
    uint8_t *at;

    if (!c || len < TEMPEST_PKT_DATA || len > TEMPEST_PKT_MAX_SIZE) {
        return NULL;
    }
    at = fabric_shm_reserve(c, FABRIC_HDR_SIZE + 4 + len);
    return at ? at + FABRIC_HDR_SIZE + 4 : NULL;
}

static void sock_send_commit(TempestFabric *obj, unsigned peer,
                             unsigned net, size_t len)
{
    FabricSocket *f = SOCK(obj);
    uint8_t frame[FABRIC_HDR_SIZE + 4];

    sock_data_frame(f, peer, net, len, frame);
    fabric_ckpt_count_tx(f, frame, sizeof(frame));
    fabric_shm_commit(f->peers[peer].conn, frame, sizeof(frame), len);
}

static void sock_return_credits(TempestFabric *obj, unsigned peer,
                                unsigned net, unsigned n)
{
    FabricSocket *f = SOCK(obj);
    FabricPeer *p = &f->peers[peer];
    bool wake;

    if (peer == f->node) {
        p->credit[net] += n;
        if (p->credit[net] == n) {
            f->ops->credit(f->opaque, peer, net);
        }
        return;
    }
    p->allowed[net] += n;
    p->owed[net] += n;
    if (p->conn &&
        fabric_shm_credit_back(p->conn, net, p->owed[net], &wake)) {
        /* In the link's memory, with what was owed before it was one. */
        p->owed[net] = 0;
        if (wake) {
            trace_tempest_fabric_credit_wake(f->node, peer, net);
            fabric_send_u32(p->conn, FABRIC_CREDIT, net, 0);
        }
        return;
    }
    if (p->owed[net] >= f->credit_batch) {
        uint8_t frame[FABRIC_HDR_SIZE + 4];

        /*
         * With no link (a cluster restored from a checkpoint makes its
         * links again on first use, and the packets it holds came before)
         * the CREDIT waits for one, which it asks for.
         */
        fabric_put_header(frame, FABRIC_CREDIT, net, 4);
        fabric_st32(frame + FABRIC_HDR_SIZE, p->owed[net]);
        p->owed[net] = 0;
        fabric_peer_queue3(f, peer, frame, sizeof(frame), NULL, 0, NULL, 0);
    }
}

static void sock_send_coll(TempestFabric *obj, unsigned peer,
                           const uint8_t *body, size_t len)
{
    FabricSocket *f = SOCK(obj);
    uint8_t hdr[FABRIC_HDR_SIZE];

    assert(peer != f->node);
    if (f->peers[peer].gone) {
        return;     /* the collective fails through peer_down */
    }
    if (len > FABRIC_MAX_BODY) {
        /* The control network never builds one: say so, never abort. */
        error_report("tempest fabric: node %u: control frame of %zu bytes "
                     "to node %u not sent", f->node, len, peer);
        return;
    }
    trace_tempest_fabric_coll_tx(f->node, peer, body[4], len);
    fabric_put_header(hdr, FABRIC_COLL, 0, len);
    fabric_peer_queue3(f, peer, hdr, sizeof(hdr), body, len, NULL, 0);
}

static void sock_send_xfer(TempestFabric *obj, unsigned peer,
                           const uint8_t *head, size_t head_len,
                           const uint8_t *body, size_t body_len)
{
    FabricSocket *f = SOCK(obj);
    uint8_t hdr[FABRIC_HDR_SIZE];
    size_t len = head_len + body_len;

    assert(peer != f->node && len <= FABRIC_MAX_BODY);
    fabric_put_header(hdr, FABRIC_XFER, 0, len);
    fabric_peer_queue3(f, peer, hdr, sizeof(hdr), head, head_len, body,
                       body_len);
}

static void sock_send_chan(TempestFabric *obj, unsigned peer,
                           const uint8_t *head, size_t head_len,
                           const uint8_t *body, size_t body_len)
{
    FabricSocket *f = SOCK(obj);
    uint8_t hdr[FABRIC_HDR_SIZE];
    size_t len = head_len + body_len;

    if (peer == f->node || peer >= f->nodes || f->peers[peer].gone ||
        len > FABRIC_MAX_BODY) {
        /* The channel engine sees peer_down; never abort on it. */
        return;
    }
    fabric_put_header(hdr, FABRIC_CHAN, 0, len);
    fabric_peer_queue3(f, peer, hdr, sizeof(hdr), head, head_len, body,
                       body_len);
}

static size_t sock_tx_queued(TempestFabric *obj, unsigned peer)
{
    FabricSocket *f = SOCK(obj);
    FabricPeer *p = &f->peers[peer];

    /* Waiting for its link counts: the engines bound it the same way. */
    return p->conn ? conn_pending(p->conn) : p->early ? p->early->len : 0;
}

/* Queue a BYE for every peer linked to us. */
static void fabric_send_byes(FabricSocket *f, uint32_t status)
{
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (i != f->node && c) {
            fabric_send_u32(c, FABRIC_BYE, 0, status);
        }
    }
}

/*
 * The node exits: once no frame waits for a link being made (or at the
 * deadline), say BYE and let the node controller end the node.
 */
static void fabric_bye_check(FabricSocket *f)
{
    bool left = false;

    if (!f->bye_waiting) {
        return;
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        left |= f->peers[i].early && !f->peers[i].gone;
    }
    if (left && qemu_clock_get_ms(QEMU_CLOCK_REALTIME) < f->bye_deadline_ms) {
        return;
    }
    for (unsigned i = 0; left && i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];

        if (p->early && !p->gone) {
            /* Said, not silent: that peer may wait for what it lacks. */
            warn_report("tempest fabric: node %u exits without its last %u "
                        "bytes of frames for node %u (no link in %d ms)",
                        f->node, p->early->len, i, FABRIC_BYE_LINK_MS);
        }
    }
    f->bye_waiting = false;
    fabric_send_byes(f, f->bye_status);
    f->ops->bye_done(f->opaque, f->bye_status);
}

/*
 * Queue a BYE for every peer; never waits (the caller holds the BQL).
 * What the sockets do not take at once goes out from the main loop, and
 * at the latest from fabric_exit_flush() when QEMU exits.  Frames that
 * wait for a link still being made go first: until then no BYE goes (so
 * node 0 does not tell their peer we went before they arrive).
 */
static bool sock_bye(TempestFabric *obj, uint32_t status)
{
    FabricSocket *f = SOCK(obj);

    if (f->bye_waiting) {
        return false;   /* a second EXIT: the first one's word stands */
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        if (f->peers[i].early && !f->peers[i].gone) {
            f->bye_waiting = true;
            f->bye_status = status;
            f->bye_deadline_ms = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                                 FABRIC_BYE_LINK_MS;
            timer_mod(f->connect_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
            return false;
        }
    }
    fabric_send_byes(f, status);
    return true;
}

/*
 * QEMU is exiting (the vCPUs are stopped): write what is still queued,
 * BYEs included, waiting at most FABRIC_BYE_MS in all.
 */
static void fabric_exit_flush(Notifier *n, void *data)
{
    FabricSocket *f = container_of(n, FabricSocket, exit_notifier);
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                       FABRIC_BYE_MS;

    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (i != f->node && c && !c->broken && c->shm) {
            fabric_shm_exit_flush(c, deadline);
        }
        while (i != f->node && c && !c->broken && sock_pending(c)) {
            int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
            GPollFD pfd = { .fd = c->fd, .events = G_IO_OUT };

            if (left <= 0 || g_poll(&pfd, 1, left) <= 0 ||
                !fabric_conn_flush(c)) {
                break;
            }
        }
    }
    /* QEMU does not stop the fabric: this host's socket goes now. */
    if (f->local_path) {
        unlink(f->local_path);
    }
}

static void *sock_peer_ram(TempestFabric *obj, unsigned peer,
                           uint64_t *base, uint64_t *size)
{
    FabricSocket *f = SOCK(obj);

    if (peer >= f->nodes || !f->peers[peer].conn ||
        !f->peers[peer].conn->shm) {
        return NULL;
    }
    return fabric_shm_peer_ram(f->peers[peer].conn, base, size);
}

static bool sock_ram_given(TempestFabric *obj, unsigned peer)
{
    FabricSocket *f = SOCK(obj);

    return peer < f->nodes && f->peers[peer].conn &&
           f->peers[peer].conn->shm &&
           fabric_shm_ram_given(f->peers[peer].conn);
}

static void *sock_coll_area(TempestFabric *obj, size_t *len)
{
    FabricSocket *f = SOCK(obj);

    return f->shm ? fabric_shm_coll_area(f, len) : NULL;
}

static void sock_poll(TempestFabric *obj, bool polling)
{
    FabricSocket *f = SOCK(obj);

    if (f->shm) {
        fabric_shm_poll(f, polling);
    }
}

static void sock_poll_hint(TempestFabric *obj, uint64_t addr)
{
    FabricSocket *f = SOCK(obj);

    if (f->shm) {
        fabric_shm_poll_hint(f, addr);
    }
}

static void sock_batch(TempestFabric *obj, bool on)
{
    FabricSocket *f = SOCK(obj);

    if (f->shm) {
        fabric_shm_batch(f, on);
    }
}

/* ------------------------------------------------------------------ */
/* The QOM type                                                        */
/* ------------------------------------------------------------------ */

static char *sock_get_addr(Object *obj, Error **errp)
{
    return g_strdup(SOCK(TEMPEST_FABRIC(obj))->spec);
}

static void sock_set_addr(Object *obj, const char *value, Error **errp)
{
    FabricSocket *f = SOCK(TEMPEST_FABRIC(obj));

    if (TEMPEST_FABRIC(obj)->ops) {
        error_setg(errp, "the fabric is in use: its address is fixed");
        return;
    }
    g_free(f->spec);
    f->spec = g_strdup(value);
}

static void sock_finalize(Object *obj)
{
    FabricSocket *f = SOCK(TEMPEST_FABRIC(obj));

    tempest_fabric_detach(TEMPEST_FABRIC(obj));
    g_free(f->spec);
    g_free(f->host_id);
    g_free(f->shm_dir);
}

/*
 * A stopped node's report (tempest_fabric_dump): per peer with a link or
 * credit used, what both sides count and what waits.  Reads only.
 */
static void sock_dump(TempestFabric *obj, GString *out)
{
    FabricSocket *f = SOCK(obj);

    g_string_append_printf(out, "fabric: node %u of %u, state %d, %u peers "
                           "up, polling %d, poll hint 0x%" PRIx64 "\n",
                           f->node, f->nodes, f->state, f->peers_up,
                           f->polling, f->poll_hint);
    fabric_rq_dump(f, out);
    for (unsigned i = 0; f->peers && i < f->nodes; i++) {
        FabricPeer *p = &f->peers[i];
        FabricConn *c = p->conn;

        if (i == f->node || (!c && !p->gone &&
                             p->credit[0] == f->credits &&
                             p->credit[1] == f->credits &&
                             !p->seq_in[0] && !p->seq_in[1])) {
            continue;   /* never used */
        }
        g_string_append_printf(out, "  peer %u: gone %d credit %u/%u "
                               "allowed %u/%u owed %u/%u seq_out %u/%u "
                               "seq_in %u/%u early %u",
                               i, p->gone, p->credit[0], p->credit[1],
                               p->allowed[0], p->allowed[1], p->owed[0],
                               p->owed[1], p->seq_out[0], p->seq_out[1],
                               p->seq_in[0], p->seq_in[1],
                               p->early ? p->early->len : 0);
        if (c) {
            g_string_append_printf(out, " reading %d writing %d broken %d "
                                   "sock_tx %zu", c->reading, c->writing,
                                   c->broken, sock_pending(c));
            if (c->shm) {
                fabric_shm_dump(c, out);
            }
        }
        g_string_append_c(out, '\n');
    }
}

static void sock_class_init(ObjectClass *oc, void *data)
{
    TempestFabricClass *fc = TEMPEST_FABRIC_CLASS(oc);

    fc->start = sock_start;
    fc->stop = sock_stop;
    fc->state = sock_state;
    fc->peers_up = sock_peers_up;
    fc->peer_up = sock_peer_up;
    fc->can_send = sock_can_send;
    fc->send = sock_send;
    fc->send_begin = sock_send_begin;
    fc->send_commit = sock_send_commit;
    fc->return_credits = sock_return_credits;
    fc->send_coll = sock_send_coll;
    fc->send_xfer = sock_send_xfer;
    fc->send_chan = sock_send_chan;
    fc->tx_queued = sock_tx_queued;
    fc->bye = sock_bye;
    fc->poll = sock_poll;
    fc->peer_ram = sock_peer_ram;
    fc->ram_given = sock_ram_given;
    fc->coll_area = sock_coll_area;
    fc->poll_hint = sock_poll_hint;
    fc->batch = sock_batch;
    fc->dump = sock_dump;
    fabric_ckpt_class_init(oc);
    fabric_rq_class_init(oc);
    object_class_property_add_str(oc, "addr", sock_get_addr, sock_set_addr);
    object_class_property_set_description(oc, "addr",
        "unix:DIR, tcp:HOST:PORT or tcp:H0:P0;H1:P1;...");
}

static const TypeInfo sock_info = {
    .name = TYPE_TEMPEST_FABRIC_SOCKET,
    .parent = TYPE_TEMPEST_FABRIC,
    .instance_size = sizeof(FabricSocket),
    .instance_finalize = sock_finalize,
    .class_init = sock_class_init,
};

static void sock_register_types(void)
{
    type_register_static(&sock_info);
}

type_init(sock_register_types)
