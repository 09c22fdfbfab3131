/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fabric's socket and shared-memory backends: what their two files
 * share, and nobody else.  tempest-fabric.c holds the sockets (the links,
 * forming the cluster, the frame protocol); tempest-fabric-shm.c turns a
 * link between two nodes of one host into shared memory, the socket
 * staying for the doorbell and to learn that the peer is gone.
 */
#ifndef HW_TEMPEST_TEMPEST_FABRIC_INTERNAL_H
#define HW_TEMPEST_TEMPEST_FABRIC_INTERNAL_H

#include <sys/epoll.h>
#include "qemu/timer.h"
#include "io/channel-socket.h"
#include "hw/tempest/tempest-fabric.h"
#include "fabric-proto.h"
#include "rq-lock.h"
#include "coll-area.h"

#define FABRIC_RX_BUF       (1 * MiB)   /* grows for larger frames */
#define FABRIC_READ_BUDGET  (256 * KiB)
#define FABRIC_EP_BATCH     64          /* ready sockets per main-loop turn */

/*
 * The listen backlog of a node of nodes: every other node may dial it at
 * once, and a dialler that gave up may have a second try queued (the
 * kernel caps it at net.core.somaxconn).
 */
static inline int fabric_backlog(unsigned nodes)
{
    return MAX(2 * nodes, 128);
}

typedef struct FabricShm FabricShm;
typedef struct FabricLinkUp FabricLinkUp;
typedef struct FabricConn FabricConn;
typedef struct FabricSocket FabricSocket;
#define SOCK(obj) container_of(obj, FabricSocket, parent_obj)

typedef struct FabricPeer {
    FabricConn *conn;           /* NULL until its link is made, and once gone */
    bool gone;                  /* known to be gone (its link, or node 0) */
    bool exited;                /* said BYE before going */
    uint32_t exit_status;
    /* Lazy links (docs/fabric.rst, "Forming the cluster"): */
    GByteArray *early;          /* frames waiting for its link, or NULL */
    int64_t wanted_ms;          /* when its link was first wanted, or 0 */
    bool asked;                 /* our DIAL for it went to node 0 */
    bool relayed;               /* node 0 said it went: not applied yet */
    bool relay_exited;
    uint32_t relay_status;
    uint32_t credit[2];         /* DATA frames we may still send */
    uint32_t allowed[2];        /* DATA frames it may still send us */
    uint32_t owed[2];           /* credit taken by the guest, not yet sent */
    uint32_t seq_out[2];
    uint32_t seq_in[2];
} FabricPeer;

struct FabricConn {
    FabricSocket *fab;
    QIOChannelSocket *sioc;
    int fd;
    int peer;                   /* -1 until its HELLO and AUTH */
    int called;                 /* outgoing: the node we called, else -1 */
    int hello_node;             /* the node its HELLO named, else -1 */
    bool broken;                /* a write failed: closed from close_bh */
    const char *broken_why;     /* what broke it, if not a socket write */
    bool reading, writing;      /* reading the peer (not paused); writing */
    bool sock_reading;          /* the socket's read handler is set */
    bool ep_added;              /* its socket is in the fabric's epoll set */
    bool ep_fallback;           /* epoll refused it: the main loop polls it */
    int64_t born_ms;            /* when it was made (pending ones expire) */
    int64_t grace_ms;           /* added to its limit once (see expire) */
    uint8_t nonce[FABRIC_NONCE_SIZE];       /* ours, for this connection */
    uint8_t peer_nonce[FABRIC_NONCE_SIZE];  /* its, from its HELLO */
    uint8_t *rx;
    size_t rx_len;
    size_t rx_size;
    GByteArray *tx;             /* bytes waiting for the socket, from tx_off */
    size_t tx_off;
    uint32_t hello_flags;       /* the peer's HELLO flags */
    FabricShm *shm;             /* its shared-memory link, or NULL */
    int passed_fd[2];           /* descriptors the peer sent, or -1 */
    bool local;                 /* a Unix socket of a shm fabric: it may */
                                /* become a shared-memory link */
    uint32_t direct_seen[2];    /* its packets written straight into our */
                                /* RQ, counted into seq_in (rq-lock.h) */
};

/* Bytes queued for the socket and not yet written. */
static inline size_t sock_pending(FabricConn *c)
{
    return c->tx->len - c->tx_off;
}

/* An asynchronous connect under way to a lower node. */
typedef struct FabricDial {
    FabricSocket *fab;         /* NULL once the fabric is gone */
    unsigned node;
    bool local;                 /* to its Unix socket on this host */
    QIOChannelSocket *sioc;
} FabricDial;

/* The socket backend: one stream socket per pair of nodes. */
struct FabricSocket {
    TempestFabric parent_obj;
    char *spec;                 /* property "addr" */
    const TempestFabricOps *ops;
    void *opaque;
    uint64_t cluster;
    unsigned node;
    unsigned nodes;
    unsigned credits;
    unsigned credit_batch;
    int state;
    unsigned peers_up;          /* links made and not gone */
    bool refusal_reported;      /* a refused connection was logged */
    bool *meshed;               /* node 0: which nodes have joined it */
    unsigned nmeshed;
    unsigned long *dial_seen;   /* node 0: DIAL {from, to} had, nodes^2 */
    char **addrs;               /* listening address of every node */
    char *unix_path;            /* our socket file, removed at the end */
    QIOChannelSocket *listener;
    int epfd;                   /* the links' sockets (valid if ep_open) */
    bool ep_open;
    struct epoll_event ep_batch[FABRIC_EP_BATCH];   /* being handled */
    int ep_n;
    GList *pending;             /* connections before their HELLO */
    FabricPeer *peers;
    QEMUTimer *connect_timer;
    int64_t deadline_ms;
    int64_t progress_ms;        /* when a link of ours was last made */
    QEMUBH *close_bh;           /* closes broken links from the main loop */
    FabricDial **dials;         /* per lower node: a connect under way */
    unsigned npending;          /* entries of 'pending' */
    QEMUTimer *pending_timer;   /* expires connections that never HELLO */
    QEMUTimer *accept_timer;    /* resumes accepting after EMFILE */
    Notifier exit_notifier;     /* flushes the BYEs when QEMU exits */
    uint64_t dropped_conns;     /* refused before HELLO (limits) */
    bool bye_waiting;           /* BYEs held back for frames to new links */
    uint32_t bye_status;
    int64_t bye_deadline_ms;
    /* Shared-memory links (tempest-fabric-shm): */
    bool shm;                   /* links become shared memory */
    const FabricLinkUp *up;     /* for the links: see FabricLinkUp */
    bool polling;               /* the guest polls (tempest_fabric_poll) */
    uint64_t poll_hint;         /* the guest's hint word, or 0 */
    unsigned batching;          /* hints wait for the last batch(false) */
    bool pokes_held;            /* a link has one waiting */
    bool polled;                /* a POLL since the idle timer looked */
    uint32_t poll_idle_ms;      /* "poll-idle-ms" (tempest-fabric-shm) */
    QEMUTimer *poll_timer;      /* a guest that stopped polling silently */
    QEMUBH *drain_bh;           /* reads the rings again (after a pause) */
    bool shm_reported;          /* a failed link was logged */
    /* The control network's shared combining area (coll-area.h): */
    void *coll_map;             /* mapped, or NULL */
    size_t coll_len;
    int coll_fd;                /* node 0: the memfd it passes, else -1 */
    bool coll_fd_open;          /* coll_fd is ours to close */
    /* Mixed clusters (tempest-fabric-host.c): shm over tcp: addresses */
    char *host_id;              /* property "host-id" ("" or NULL: ours) */
    char *shm_dir;              /* property "shm-dir" ("" or NULL: default) */
    char *host_key;             /* hash of the host identity, 16 hex */
    char *local_dir;            /* where this host's nodes listen, or NULL */
    char *local_path;           /* our own Unix socket there, or NULL */
    QIOChannelSocket *local_listener;
    uint8_t *local_fails;       /* per node: its Unix socket failed us */
    /* The RQ peers write straight into (tempest-fabric-rq.c): */
    bool rq_open;               /* open to peers (our line says where) */
    bool rq_held;               /* we hold its lock */
    uint64_t rq_base;           /* what we published (ours: trusted) */
    uint32_t rq_slots, rq_slot_size;
    uint64_t rq_stuck_word;     /* a lock word found held, and since when */
    int64_t rq_stuck_ms;
    uint64_t rq_broken;         /* peers' locks we broke (stuck or dead) */
    uint64_t rq_wakes;          /* peers' vCPUs woken on their RQ's tail */
    uint64_t rq_unpoked;        /* packets to peers that read the RQ */
    uint64_t rq_full;           /* packets that found a peer's RQ full */
    /* A straight write of ours under way (direct_begin to direct_end): */
    unsigned rq_w_peer;
    uint32_t rq_w_tail;
    uint32_t *rq_w_ctl;
    /* Checkpoint (tempest-fabric-ckpt.c): frames to and from peers */
    uint64_t ckpt_tx;
    uint64_t ckpt_rx;
};

/*
 * What a shared-memory link calls back in the socket backend.  The
 * socket backend is above the links (it calls tempest-fabric-shm.c by
 * name); the links reach it only through this table, which
 * fabric_shm_start() is given, so the two files never call each other in
 * circles (tests/unit/test_nc_layering.py).
 */
struct FabricLinkUp {
    void (*drop)(FabricSocket *f, int peer, const char *why);
    void (*close)(FabricConn *c, const char *why);
    /* Write a frame of up to three parts to the socket itself. */
    void (*sock_queue3)(FabricConn *c, const uint8_t *a, size_t alen,
                        const uint8_t *b, size_t blen,
                        const uint8_t *d, size_t dlen);
    void (*send_u32)(FabricConn *c, uint16_t type, unsigned net,
                     uint32_t value);
    /*
     * Handle the whole frames at the start of buf (*len bytes), keep the
     * rest there; false when c was closed meanwhile.
     */
    bool (*parse)(FabricConn *c, uint8_t *buf, size_t *len);
    /*
     * A DATA frame checked by fabric_parse() on a private copy of its
     * header, handled where it lies in the ring: @pkt is the peer's
     * memory, of hdr->len - 4 bytes; only its bytes are taken.
     */
    void (*data)(FabricConn *c, const FabricHeader *hdr, uint32_t seq,
                 const uint8_t *pkt);
    /* Every queue of c is empty: tell the engines, if c is a peer's. */
    void (*drained)(FabricConn *c);
    /* What c has queued changed: pause or resume reading it. */
    void (*update)(FabricConn *c);
};

/* tempest-fabric-shm.c */
/* Both ends proved themselves: the dialler offers a shared-memory link. */
void fabric_shm_offer(FabricConn *c);
/* read() from c's socket, keeping a descriptor the peer passes. */
ssize_t fabric_shm_read(FabricConn *c, void *buf, size_t len);
/* A FABRIC_SHM or FABRIC_BELL frame; false when c was closed. */
bool fabric_shm_frame(FabricConn *c, const FabricHeader *hdr,
                      const uint8_t *body);
/* Frames go into the ring (c->shm set and switched)? */
bool fabric_shm_sending(FabricConn *c);
void fabric_shm_queue3(FabricConn *c, const struct iovec *iov);
size_t fabric_shm_pending(FabricConn *c);
/* A frame built in the ring itself (NULL: queue it), then published. */
uint8_t *fabric_shm_reserve(FabricConn *c, size_t len);
void fabric_shm_commit(FabricConn *c, const uint8_t *hdr, size_t hlen,
                       size_t blen);
/* Credit given back, and taken back, through the link's memory. */
bool fabric_shm_credit_back(FabricConn *c, unsigned net, uint32_t n,
                            bool *wake);
void fabric_shm_take_credit(FabricSocket *f, unsigned peer, unsigned net,
                            bool wait);
/* Every peer's, both networks (a checkpoint's counts must be whole). */
void fabric_shm_take_credit_all(FabricSocket *f);
/* Read the ring's frames (at most budget bytes); false when c closed. */
bool fabric_shm_drain(FabricConn *c, size_t budget);
/* The peer's socket closed: read what its ring holds now, no more. */
bool fabric_shm_drain_last(FabricConn *c);
void fabric_shm_poll(FabricSocket *f, bool polling);
/* The guest's poll hint word (tempest_fabric_poll_hint), or 0. */
void fabric_shm_poll_hint(FabricSocket *f, uint64_t addr);
void fabric_shm_batch(FabricSocket *f, bool on);
void *fabric_shm_peer_ram(FabricConn *c, uint64_t *base, uint64_t *size);
/* The link is on and our RAM went with it: the peer may store into it. */
bool fabric_shm_ram_given(FabricConn *c);
/* The control network's shared combining area, or NULL (coll-area.h). */
void *fabric_shm_coll_area(FabricSocket *f, size_t *len);
/* QEMU exits: put what is queued into the rings, waiting until deadline. */
void fabric_shm_exit_flush(FabricConn *c, int64_t deadline_ms);
void fabric_shm_free(FabricConn *c);
/* The link's rings and flags, appended to out (sock_dump). */
void fabric_shm_dump(FabricConn *c, GString *out);
bool fabric_shm_start(FabricSocket *f, const FabricLinkUp *up,
                      Error **errp);
void fabric_shm_stop(FabricSocket *f);

/* The peer's RqRecord in the link's header (ours: ours), or NULL. */
RqRecord *fabric_shm_rq_record(FabricConn *c, bool ours);
/* Nothing of ours waits for c's peer or lies unread in its ring. */
bool fabric_shm_tx_idle(FabricConn *c);
/* We wrote into the peer's RQ straight: its doorbell or its poll hint. */
void fabric_shm_direct_published(FabricConn *c);

/* tempest-fabric-rq.c: the RQ that peers on this host write straight into */
void fabric_rq_class_init(ObjectClass *oc);
/* c's peer's packets written straight in, counted into its seq_in. */
void fabric_rq_absorb(FabricConn *c);
void fabric_rq_absorb_all(FabricSocket *f);
/* Node's RQ line in the combining area, or NULL without one. */
static inline RqLine *fabric_rq_line(FabricSocket *f, unsigned node)
{
    if (!f->shm || !f->coll_map || node >= f->nodes) {
        return NULL;
    }
    /* The area is this cluster's size (checked when it was taken). */
    return (RqLine *)((uint8_t *)f->coll_map +
                      coll_area_node(f->nodes, node) + COLL_AREA_N_RQ);
}

/*
 * Our guest reads its RQ's slots itself while it polls (rq_peeks), or
 * not (the caller reads the tail after).  Inline: the shared-memory
 * links clear it when the guest stops polling.
 */
static inline void fabric_rq_peeks(FabricSocket *f, bool on)
{
    RqLine *l = fabric_rq_line(f, f->node);

    if (l) {
        rq_peeks_set(l, on);
    }
}
/* c's link closes: finish what its writer left under our RQ's lock. */
void fabric_rq_link_gone(FabricConn *c);
/* Our RQ's lock and state, a line appended to out (sock_dump). */
void fabric_rq_dump(FabricSocket *f, GString *out);

/* Peers may have written into our open RQ: the device looks at it. */
static inline void fabric_rq_moved(FabricSocket *f)
{
    if (f->rq_open && f->ops->rq_moved) {
        f->ops->rq_moved(f->opaque);
    }
}

/* tempest-fabric-host.c: nodes of this host among TCP-addressed ones */
/* Listen on this host's Unix socket too (no error: TCP only then). */
void fabric_host_start(FabricSocket *f);
void fabric_host_stop(FabricSocket *f);
/* "unix:PATH" of node i's socket on this host if worth a try, or NULL. */
char *fabric_host_addr(FabricSocket *f, unsigned i);
/*
 * A dial to node i's Unix socket failed (tried again a few times: the
 * node may be starting), or what answered did not prove itself to be
 * node i (refused: TCP from now on).
 */
void fabric_host_failed(FabricSocket *f, unsigned i, bool refused,
                        const char *why);
/* The properties "host-id" and "shm-dir" (of tempest-fabric-shm). */
void fabric_host_class_init(ObjectClass *oc);

/* tempest-fabric-ckpt.c: whole-cluster checkpoint */
/* Count the frames of a peer at the start of a (alen bytes) we send. */
void fabric_ckpt_count_tx(FabricSocket *f, const uint8_t *a, size_t alen);
/* A frame of this type from a peer: counted? */
static inline bool fabric_ckpt_counted(uint16_t type)
{
    return type != FABRIC_HELLO && type != FABRIC_AUTH &&
           type != FABRIC_SHM && type != FABRIC_BELL;
}
void fabric_ckpt_class_init(ObjectClass *oc);

/* Bytes queued for the peer and not yet written (socket and ring). */
static inline size_t conn_pending(FabricConn *c)
{
    return sock_pending(c) + (c->shm ? fabric_shm_pending(c) : 0);
}

#endif /* HW_TEMPEST_TEMPEST_FABRIC_INTERNAL_H */
